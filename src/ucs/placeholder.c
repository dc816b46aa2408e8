int qpx_core_placeholder;
