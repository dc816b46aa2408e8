/*
 * The qpx UCT component and the registration of its transports.
 */
#ifndef QPX_COMPONENT_H_
#define QPX_COMPONENT_H_

#include <ucs/ucx_compat.h>


/*
 * Register the component and every transport with UCX, once, if the UCX
 * loaded in this process is the one qpx was built for. Returns UCS_OK when
 * registered (now or before), UCS_ERR_UNSUPPORTED on a version mismatch.
 */
ucs_status_t qpx_component_register(void);

/* Transports the component offers (NULL-terminated) */
extern uct_tl_t *const qpx_transports[];

#endif
