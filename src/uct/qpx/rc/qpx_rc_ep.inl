/*
 * qpx_rc fast path: resource checks and posting. Included by the files that
 * implement endpoint operations; no allocation, lock or system call here
 * beyond the verbs post itself.
 */
#ifndef QPX_RC_EP_INL_
#define QPX_RC_EP_INL_

#include "qpx_rc_iface.h"

#include <uct/qpx/base/qpx_mlx5.inl>


static UCS_F_ALWAYS_INLINE qpx_rc_iface_t *qpx_rc_ep_iface(qpx_rc_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, qpx_rc_iface_t);
}


/* Room for one more user operation: a send slot beyond the reserve and a
 * send CQ entry */
static UCS_F_ALWAYS_INLINE int
qpx_rc_ep_has_tx_resources(qpx_rc_iface_t *iface, qpx_rc_ep_t *ep)
{
    return (ep->tx.sq_available > QPX_RC_SQ_RESERVE) &&
           (iface->super.super.tx.cq_available > 0);
}


/* A user operation may go now: resources, and no request of ep queued
 * before it (a completion callback that sends while ep's pending request
 * is still in progress must not overtake it: UCX's gtest
 * test_uct_pending.send_ooo_with_comp) */
static UCS_F_ALWAYS_INLINE int
qpx_rc_ep_can_send(qpx_rc_iface_t *iface, qpx_rc_ep_t *ep)
{
    return qpx_rc_ep_has_tx_resources(iface, ep) &&
           qpx_ep_pending_is_clear(&iface->super.super, &ep->super);
}


/* Credits for one more active message */
static UCS_F_ALWAYS_INLINE int qpx_rc_ep_has_fc_credits(qpx_rc_iface_t *iface,
                                                       qpx_rc_ep_t *ep)
{
    /* consumed_by_peer is written by the device (the peer's RDMA write) and
     * only grows; a stale read only delays sending, so no barrier */
    return !ep->fc.enabled ||
           ((ep->fc.sent - ep->fc.ctl->consumed_by_peer) < iface->config.fc_wnd);
}


/* One WR on ep's QP, on the path direct names (QPX_RDMA_PATH_VERBS, or
 * _ANY for a caller that does not know it; a constant of the caller): a WQE
 * in its mlx5 send queue through qpx_mlx5_post (a control post: out of
 * line), or ibv_post_send. The direct data operations write their WQEs in
 * qpx_rc_ep_post_path. 0 or an errno */
static UCS_F_ALWAYS_INLINE int qpx_rc_ep_post_wr_path(qpx_rc_ep_t *ep,
                                                     struct ibv_send_wr *wr,
                                                     int direct)
{
    struct ibv_send_wr *bad_wr;

    ucs_assert(direct != QPX_RDMA_PATH_DIRECT);
    if ((direct == QPX_RDMA_PATH_ANY) &&
        ucs_unlikely(ep->txwq.qstart != NULL)) {
        return qpx_mlx5_post(&ep->txwq, wr);
    }
    ucs_assert(ep->txwq.qstart == NULL);
    return ibv_post_send(ep->qp, wr, &bad_wr);
}

/* qpx_rc_ep_post_wr_path for a caller that does not know ep's path */
static UCS_F_ALWAYS_INLINE int qpx_rc_ep_post_wr(qpx_rc_ep_t *ep,
                                                struct ibv_send_wr *wr)
{
    return qpx_rc_ep_post_wr_path(ep, wr, QPX_RDMA_PATH_ANY);
}


static UCS_F_ALWAYS_INLINE uint64_t qpx_rc_ep_wr_id(qpx_rc_ep_t *ep,
                                                   uint64_t sn)
{
    return ((uint64_t)ep->id << QPX_RC_EP_ID_SHIFT) | (sn & QPX_RC_SN_MASK);
}


/*
 * Post one work request. signal: the caller needs a completion for it. The
 * request is signalled anyway when tx_moderation unsignalled ones precede it,
 * so the send queue always holds a signalled request to free its slots.
 * direct: QPX_RDMA_PATH_*, a constant of the caller
 * (qpx_rc_ep_post_wr_path). On the direct path the WQE's body is written
 * first and its flags and id after: the endpoint's state they come from is
 * then read after the data's copy, not kept across it.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_ep_post_path(qpx_rc_iface_t *iface, qpx_rc_ep_t *ep,
                    struct ibv_send_wr *wr, int send_flags, int signal,
                    int direct)
{
    qpx_mlx5_wqe_stage_t stage;
    qpx_mlx5_wqe_t wqe;
    uint64_t sn;
    int ret;

    if (direct == QPX_RDMA_PATH_DIRECT) {
        /* the inline bytes are the operations' own, held to max_inline */
        wr->send_flags = send_flags;
        ret = qpx_mlx5_wqe_build(&ep->txwq, wr, NULL, 0, 0, 1, stage, &wqe);
        if (ucs_unlikely(ret != 0)) {
            goto err;
        }
    }

    /* The caller checked the room (qpx_rc_ep_has_tx_resources), or posts
     * from the reserve (a grant, a flush): a slot is left, and a CQ entry
     * if it is signalled */
    ucs_assertv(ep->tx.sq_available > 0, "qp 0x%x sq_available %d",
                ep->qp->qp_num, (int)ep->tx.sq_available);
    ucs_assert(ep->tx.unsignaled < iface->super.super.config.tx_moderation);
    sn      = ep->tx.sn + 1;
    signal |= (ep->tx.unsignaled + 1 >=
               iface->super.super.config.tx_moderation);
    ucs_assert(!signal || (iface->super.super.tx.cq_available > 0));
    wr->wr_id      = qpx_rc_ep_wr_id(ep, sn);
    wr->next       = NULL;
    /* An interface fence since our last post fences this one too */
    wr->send_flags = send_flags | ep->tx.fence |
                     ((ep->tx.fence_beat != iface->super.fence_beat) ?
                      IBV_SEND_FENCE : 0) |
                     (signal ? IBV_SEND_SIGNALED : 0);

    if (direct == QPX_RDMA_PATH_DIRECT) {
        qpx_mlx5_wqe_post(&ep->txwq, &wqe, wr->send_flags, qpx_mlx5_wr_imm(wr),
                          wr->wr_id);
    } else {
        ret = qpx_rc_ep_post_wr_path(ep, wr, direct);
        if (ucs_unlikely(ret != 0)) {
            goto err;
        }
    }

    ep->tx.sn         = sn;
    ep->tx.fence      = 0;
    ep->tx.fence_beat = iface->super.fence_beat;
    --ep->tx.sq_available;
    ++iface->super.tx_unacked;
    if (signal) {
        ep->tx.unsignaled  = 0;
        ep->tx.signaled_sn = sn;
        --iface->super.super.tx.cq_available;
    } else {
        ++ep->tx.unsignaled;
    }
    return UCS_OK;

err:
    ucs_error("post on qp 0x%x (opcode %d) failed: %s", ep->qp->qp_num,
              wr->opcode, strerror(ret));
    return UCS_ERR_IO_ERROR;
}

/* qpx_rc_ep_post_path for a caller that does not know ep's path (the
 * control posts: a flush's no-op, a credit grant) */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_ep_post(qpx_rc_iface_t *iface, qpx_rc_ep_t *ep, struct ibv_send_wr *wr,
               int send_flags, int signal)
{
    return qpx_rc_ep_post_path(iface, ep, wr, send_flags, signal,
                               QPX_RDMA_PATH_ANY);
}


/* Queue op, to run cb when the request just posted on ep completes */
static UCS_F_ALWAYS_INLINE void qpx_rc_ep_add_op(qpx_rc_ep_t *ep, qpx_op_t *op,
                                                 qpx_op_cb_t cb,
                                                 uct_completion_t *comp)
{
    qpx_op_add(&ep->tx.ops, op, ep->tx.sn, cb, comp, 0);
}


static UCS_F_ALWAYS_INLINE void qpx_rc_wr_rdma(struct ibv_send_wr *wr,
                                               enum ibv_wr_opcode opcode,
                                               struct ibv_sge *sge, int num_sge,
                                               uint64_t remote_addr,
                                               uct_rkey_t rkey)
{
    wr->opcode              = opcode;
    wr->sg_list             = sge;
    wr->num_sge             = num_sge;
    wr->wr.rdma.remote_addr = remote_addr;
    wr->wr.rdma.rkey        = (uint32_t)rkey;
}


#endif
