/*
 * The transports qpx registers. Each one is listed here once it works.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_component.h"


uct_tl_t *const qpx_transports[] = {
    NULL
};
