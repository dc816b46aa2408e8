/* placeholder: component registration (filled in by the foundation work) */
int qpx_init_placeholder;
