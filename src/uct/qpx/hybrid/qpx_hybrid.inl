/*
 * qpx hybrid: the data path. An operation costs the sub-endpoint's plus a
 * load and a test (held or not), and two counters (the LRU clock and the
 * promotion count, which also weighs the bytes moved).
 */
#ifndef QPX_HYBRID_INL_
#define QPX_HYBRID_INL_

#include "qpx_hybrid.h"

#include <uct/qpx/base/qpx_ep.h>


/* The sub-endpoint an operation goes to, or NULL: held (UCS_ERR_NO_RESOURCE,
 * the request goes pending and runs when the switch is done) */
static UCS_F_ALWAYS_INLINE uct_ep_h qpx_hybrid_ep_tx(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep, qpx_hybrid_ep_t)->tx_ep;
}

/* The sub-endpoint a one-sided operation (put, get, atomic) goes to, or
 * NULL: held (qpx_hybrid_ep_update_tx says when it differs from tx_ep) */
static UCS_F_ALWAYS_INLINE uct_ep_h qpx_hybrid_ep_rma(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep, qpx_hybrid_ep_t)->rma_ep;
}

/* An operation that moved bytes was accepted by the sub-endpoint: the
 * endpoint is the most recently used, and may have become hot (it counts
 * 1, plus 1 for every 1 << bytes_shift bytes) */
static UCS_F_ALWAYS_INLINE void qpx_hybrid_ep_count(uct_ep_h tl_ep,
                                                    size_t bytes)
{
    qpx_hybrid_ep_t *ep       = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    ep->last_used = ++iface->tick;
    ep->tx_count += 1 + (bytes >> iface->config.bytes_shift);
    if (ucs_unlikely(ep->tx_count >= ep->promote_at)) {
        qpx_hybrid_ep_heat(ep);
    }
}

/* For operations that return a status: count what was accepted */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_hybrid_ep_done(uct_ep_h tl_ep, ucs_status_t status, size_t bytes)
{
    if (ucs_likely((status == UCS_OK) || (status == UCS_INPROGRESS))) {
        qpx_hybrid_ep_count(tl_ep, bytes);
    }
    return status;
}

#endif
