/*
 * qpx_dc fast path: the DCI an operation goes on, its resources, and the
 * post through the ibv_wr_* API with the target set by
 * mlx5dv_wr_set_dc_addr. No allocation, lock or system call here beyond
 * the verbs post itself.
 */
#ifndef QPX_DC_INL_
#define QPX_DC_INL_

#include "qpx_dc_iface.h"

#include <string.h>


static UCS_F_ALWAYS_INLINE qpx_dc_iface_t *qpx_dc_ep_iface(qpx_dc_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, qpx_dc_iface_t);
}


static UCS_F_ALWAYS_INLINE uint64_t qpx_dc_dci_wr_id(qpx_dc_dci_t *dci,
                                                    uint64_t sn)
{
    return ((uint64_t)dci->index << QPX_DC_DCI_SHIFT) |
           ((uint64_t)dci->gen << QPX_DC_GEN_SHIFT) | (sn & QPX_DC_SN_MASK);
}


/* Room on dci for one more user request: a send slot beyond the reserve, a
 * send CQ entry, and (dcs_quota) the quota while others wait for a DCI */
static UCS_F_ALWAYS_INLINE int
qpx_dc_dci_has_tx_resources(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci)
{
    return (dci->sq_available > QPX_DC_SQ_RESERVE) &&
           (iface->super.super.tx.cq_available > 0) && !dci->flags &&
           ((iface->config.policy != QPX_DC_POLICY_DCS_QUOTA) ||
            (dci->quota_used < iface->config.quota) ||
            ucs_list_is_empty(&iface->tx_wait));
}


/*
 * The DCI for a new request of ep, taken under the policy if ep holds none.
 * A failed endpoint answers with its error; no DCI or no room on it:
 * UCS_ERR_NO_RESOURCE (the caller's pending request waits in tx_wait, see
 * qpx_dc_ep_tx_state).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_ep_tx_begin(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                   qpx_dc_dci_t **dci_p)
{
    qpx_dc_dci_t *dci;

    if (ucs_unlikely(ep->flags & QPX_DC_EP_FLAG_ERROR)) {
        return ep->status;
    }
    /* Nothing of ep's queued before it (as qpx_rc_ep_can_send) */
    if (ucs_unlikely(!qpx_ep_pending_is_clear(&iface->super.super,
                                              &ep->super))) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_unlikely(ep->dci == QPX_DC_DCI_NONE) &&
        (qpx_dc_iface_dci_get(iface, ep) != UCS_OK)) {
        return UCS_ERR_NO_RESOURCE;
    }

    ucs_assertv(ep->dci < iface->num_dci, "ep %p dci %u of %u", ep,
                (unsigned)ep->dci, iface->num_dci);
    dci = &iface->dcis[ep->dci];
    if (ucs_unlikely(!qpx_dc_dci_has_tx_resources(iface, dci))) {
        return UCS_ERR_NO_RESOURCE;
    }
    *dci_p = dci;
    return UCS_OK;
}


/*
 * Start one work request of ep on dci: ibv_wr_start, its wr_id and flags.
 * signal: the caller needs a completion; it is signalled anyway when
 * tx_moderation unsignalled ones precede it. Returns whether it is
 * signalled. The caller then builds it (ibv_wr_<opcode>, the SGEs) and ends
 * with qpx_dc_dci_wr_complete().
 */
static UCS_F_ALWAYS_INLINE int
qpx_dc_dci_wr_start(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep, qpx_dc_dci_t *dci,
                    unsigned send_flags, int signal)
{
    /* Signalled too while endpoints wait for a DCI: a DCI is known idle,
     * and given back, only once its last request's completion is polled.
     * Unsignalled, an owner that keeps posting (UCP's replies to a peer's
     * software atomics, each before the last one is known done) kept its
     * DCI for good: 4 ranks of MPI_Accumulate on one DCI took 5 to over
     * 100 s, spinning in the waiters' solicitations (0.04 s on spread) */
    ucs_assertv(dci->sq_available > 0, "dci 0x%x sq_available %d",
                dci->qp->qp_num, (int)dci->sq_available);
    /* A DCI serves one endpoint at a time under dcs/dcs_quota/sticky, and
     * only an endpoint that holds it posts on it */
    ucs_assert(&iface->dcis[ep->dci] == dci);
    signal |= (dci->unsignaled + 1 >= iface->super.super.config.tx_moderation) |
              (iface->num_dci_waiters > 0);
    ucs_assert(!signal || (iface->super.super.tx.cq_available > 0));
    ibv_wr_start(dci->qpx);
    dci->qpx->wr_id    = qpx_dc_dci_wr_id(dci, dci->sn + 1);
    /* An interface fence since ep's last post fences this one too */
    dci->qpx->wr_flags = send_flags | ep->fence |
                         ((ep->fence_beat != iface->super.fence_beat) ?
                          IBV_SEND_FENCE : 0) |
                         (signal ? IBV_SEND_SIGNALED : 0);
    return signal;
}


/* Address the request started on dci to ep's target, post it, count it */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_dci_wr_complete(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                       qpx_dc_dci_t *dci, int signal)
{
    int ret;

    mlx5dv_wr_set_dc_addr(dci->mqp, ep->ah, ep->dct_num,
                          iface->config.dc_key);
    ret = ibv_wr_complete(dci->qpx);
    if (ucs_unlikely(ret != 0)) {
        ucs_error("ibv_wr_complete(dci 0x%x) failed: %s", dci->qp->qp_num,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    ++dci->sn;
    ++ep->posts;
    ep->last_sn    = dci->sn;
    ep->fence      = 0;
    ep->fence_beat = iface->super.fence_beat;
    --dci->sq_available;
    ++dci->quota_used;
    ++iface->super.tx_unacked;
    dci->last_used = ++iface->tick;
    if (dci->target_id != ep->id) {
        iface->target_switches += (dci->target_id != QPX_EP_ID_NULL);
        dci->target_id          = ep->id;
        dci->target_ah          = ep->ah;
        dci->target_dct         = ep->dct_num;
    }
    if (signal) {
        dci->unsignaled  = 0;
        dci->signaled_sn = dci->sn;
        --iface->super.super.tx.cq_available;
    } else {
        ++dci->unsignaled;
    }
    return UCS_OK;
}


/* Queue op (of ep), to run cb when the request just posted on dci
 * completes */
static UCS_F_ALWAYS_INLINE void qpx_dc_dci_add_op(qpx_dc_dci_t *dci,
                                                  qpx_dc_ep_t *ep,
                                                  qpx_op_t *op, qpx_op_cb_t cb,
                                                  uct_completion_t *comp)
{
    qpx_op_add(&dci->ops, op, dci->sn, cb, comp, ep->id);
}

#endif
