/*
 * The transports and the connection manager qpx registers, above base/ and
 * every transport (base's component registers them and includes none of
 * them). Each one is listed here once it works.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/qpx/base/qpx_component.h>
#include <uct/qpx/base/qpx_iface.h>
#ifdef HAVE_RDMACM
#  include <uct/qpx/cm/qpx_cm.h>
#endif

extern uct_tl_t qpx_rc_tl;
extern uct_tl_t qpx_ud_tl;
extern uct_tl_t qpx_hybrid_tl;
ucs_status_t qpx_rc_iface_open(uct_md_h, uct_worker_h,
                               const uct_iface_params_t*,
                               const uct_iface_config_t*,
                               const qpx_iface_hints_t*, uct_iface_h*);
ucs_status_t qpx_ud_iface_open(uct_md_h, uct_worker_h,
                               const uct_iface_params_t*,
                               const uct_iface_config_t*,
                               const qpx_iface_hints_t*, uct_iface_h*);
#ifdef HAVE_MLX5DV
extern uct_tl_t qpx_dc_tl;
ucs_status_t qpx_dc_iface_open(uct_md_h, uct_worker_h,
                               const uct_iface_params_t*,
                               const uct_iface_config_t*,
                               const qpx_iface_hints_t*, uct_iface_h*);
#endif


uct_tl_t *const qpx_transports[] = {
    &qpx_rc_tl,
    &qpx_ud_tl,
#ifdef HAVE_MLX5DV
    &qpx_dc_tl,
#endif
    &qpx_hybrid_tl,
    NULL
};


/* The hybrid's sub-interfaces (qpx_iface_open_hinted) */
const qpx_transport_open_t qpx_transport_opens[] = {
    {"qpx_rc", qpx_rc_iface_open},
    {"qpx_ud", qpx_ud_iface_open},
#ifdef HAVE_MLX5DV
    {"qpx_dc", qpx_dc_iface_open},
#endif
    {NULL, NULL}
};


#ifdef HAVE_RDMACM
const qpx_component_cm_t qpx_component_cm = {
    .open         = qpx_cm_open,
    .config_table = qpx_cm_config_table,
    .config_size  = sizeof(qpx_cm_config_t)
};
#else
const qpx_component_cm_t qpx_component_cm = {
    .open         = NULL
};
#endif
