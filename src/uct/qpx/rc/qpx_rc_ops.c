/*
 * qpx_rc data path: put, get, active messages and atomics are the RC
 * family's (qpx_rdma_ops.inl) over qpx_rc's post operations here; and
 * qpx_rc's own posts: the no-op of a flush, the close notice and the
 * flow-control update.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rc_ep.inl"

#include <uct/qpx/rdma/qpx_rdma_ops.inl>

#include <string.h>


/*
 * The post operations of qpx_rc (qpx_rdma_ops.inl): a request goes on the
 * endpoint's own QP, through ibv_post_send; an active message also takes a
 * flow-control credit. Send buffers are base's qpx_iface_tx_desc_get,
 * which solicits the endpoints' completions when it refuses one
 * (qpx_rc_iface_tx_solicit).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_post_tx_begin(uct_ep_h tl_ep, int is_am, void **tx_p)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);

    if (ucs_unlikely(!qpx_rc_ep_can_send(iface, ep) ||
                     (is_am && !qpx_rc_ep_has_fc_credits(iface, ep)))) {
        return UCS_ERR_NO_RESOURCE;
    }
    *tx_p = ep;
    return UCS_OK;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_post_wr_path(uct_ep_h tl_ep, const qpx_rdma_wr_t *rwr, int direct)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    struct ibv_send_wr wr;
    ucs_status_t status;

    qpx_rdma_wr_to_send_wr(rwr, &wr, direct);
    status = qpx_rc_ep_post_path(qpx_rc_ep_iface(ep), ep, &wr,
                                 rwr->send_flags, rwr->signal, direct);
    /* Every send is an active message: it takes a credit */
    ep->fc.sent += (rwr->opcode == IBV_WR_SEND) && (status == UCS_OK);
    return status;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_post_wr(uct_ep_h tl_ep, void *tx, const qpx_rdma_wr_t *rwr)
{
    return qpx_rc_post_wr_path(tl_ep, rwr, 0);
}


/* The direct path's post operations: the same but the WR's (a WQE) */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_direct_post_wr(uct_ep_h tl_ep, void *tx, const qpx_rdma_wr_t *rwr)
{
    return qpx_rc_post_wr_path(tl_ep, rwr, 1);
}

#define qpx_rc_direct_post_tx_begin qpx_rc_post_tx_begin
#define qpx_rc_direct_post_add_op   qpx_rc_post_add_op
#define qpx_rc_direct_post_nop      qpx_rc_post_nop


static UCS_F_ALWAYS_INLINE void
qpx_rc_post_add_op(uct_ep_h tl_ep, void *tx, qpx_op_t *op, qpx_op_cb_t cb,
                   uct_completion_t *comp)
{
    qpx_rc_ep_add_op(ucs_derived_of(tl_ep, qpx_rc_ep_t), op, cb, comp);
}


static ucs_status_t qpx_rc_post_nop(uct_ep_h tl_ep, void **tx_p)
{
    *tx_p = tl_ep; /* the endpoint's own QP */
    return qpx_rc_ep_post_nop(ucs_derived_of(tl_ep, qpx_rc_ep_t));
}


QPX_RDMA_EP_OPS_DEFINE(qpx_rc)
QPX_RDMA_EP_OPS_DEFINE(qpx_rc_direct)


ucs_status_t qpx_rc_ep_post_nop(qpx_rc_ep_t *ep)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    struct ibv_send_wr wr;

    if ((ep->tx.sq_available <= 0) ||
        (iface->super.super.tx.cq_available <= 0)) {
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, NULL, 0, 0, 0);
    return qpx_rc_ep_post(iface, ep, &wr, 0, 1);
}


void qpx_rc_ep_post_close_notice(qpx_rc_ep_t *ep)
{
    static const uint64_t closed = 1;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    int ret;

    if ((ep->flags & (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_ERROR |
                      QPX_RC_EP_FLAG_PEER_CTL)) !=
        (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_PEER_CTL) ||
        (ep->tx.sq_available <= 0) || ep->fc.ctl->peer_closed) {
        return;
    }

    /* Outside the endpoint's accounting, unsignalled: the endpoint is going
     * away, and a completion of it (an error) finds no endpoint. Inline, so
     * nothing of ours must outlive the post. */
    sge.addr   = (uintptr_t)&closed;
    sge.length = sizeof(closed);
    sge.lkey   = 0;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1,
                   ep->fc.remote_addr + sizeof(uint64_t), ep->fc.remote_rkey);
    wr.wr_id      = qpx_rc_ep_wr_id(ep, ep->tx.sn + 1);
    wr.next       = NULL;
    wr.send_flags = IBV_SEND_INLINE;
    ret = qpx_rc_ep_post_wr(ep, &wr);
    if (ret != 0) {
        ucs_debug("qp 0x%x: close notice not posted: %s", ep->qp->qp_num,
                  strerror(ret));
    }
}


void qpx_rc_ep_fc_update(qpx_rc_ep_t *ep)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    uint64_t consumed     = ep->fc.consumed;
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    if ((ep->tx.sq_available <= 0) ||
        (iface->super.super.tx.cq_available <= 0) ||
        !(ep->flags & QPX_RC_EP_FLAG_CONNECTED) ||
        (ep->flags & QPX_RC_EP_FLAG_ERROR)) {
        ep->flags |= QPX_RC_EP_FLAG_FC_UPDATE;
        return;
    }

    /* Inline: the value is copied at post time, no registered source */
    sge.addr   = (uintptr_t)&consumed;
    sge.length = sizeof(consumed);
    sge.lkey   = 0;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1, ep->fc.remote_addr,
                   ep->fc.remote_rkey);
    if (qpx_rc_ep_post(iface, ep, &wr, IBV_SEND_INLINE, 0) == UCS_OK) {
        ep->fc.reported = consumed;
        ep->flags      &= ~QPX_RC_EP_FLAG_FC_UPDATE;
    } else {
        ep->flags      |= QPX_RC_EP_FLAG_FC_UPDATE;
    }
}
