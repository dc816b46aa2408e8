/*
 * The transports qpx registers. Each one is listed here once it works.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_component.h"
#include <uct/qpx/rc/qpx_rc_iface.h>

extern uct_tl_t qpx_ud_tl;


uct_tl_t *const qpx_transports[] = {
    &qpx_rc_tl,
    &qpx_ud_tl,
    NULL
};
