/*
 * The transports qpx registers, above base/ and every transport (base's
 * component registers this list and includes no transport). Each one is
 * listed here once it works.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/qpx/base/qpx_component.h>

extern uct_tl_t qpx_rc_tl;
extern uct_tl_t qpx_ud_tl;
extern uct_tl_t qpx_hybrid_tl;
#ifdef HAVE_MLX5DV
extern uct_tl_t qpx_dc_tl;
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
