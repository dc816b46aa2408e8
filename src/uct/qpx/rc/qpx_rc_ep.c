/*
 * qpx_rc endpoint control path: creation, connection, flush, fence,
 * keepalive and failure handling (its pending queue is base's, qpx_ep.c).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rc_ep.inl"

#include <string.h>


static void qpx_rc_pack24(uint8_t *dst, uint32_t value)
{
    dst[0] = value & 0xff;
    dst[1] = (value >> 8) & 0xff;
    dst[2] = (value >> 16) & 0xff;
}


static uint32_t qpx_rc_unpack24(const uint8_t *src)
{
    return src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16);
}


/* The first PSN of QP qpn, on both sides of a connection: a spread of the
 * numbers, so that QPs of one device start far apart */
static uint32_t qpx_rc_qp_initial_psn(uint32_t qpn)
{
    return (qpn * 2654435761u) & 0xffffff;
}


UCS_CLASS_INIT_FUNC(qpx_rc_ep_t, const uct_ep_params_t *params)
{
    qpx_rc_iface_t *iface;
    ucs_status_t status;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE)) {
        ucs_error("qpx_rc: ep_create needs an interface");
        return UCS_ERR_INVALID_PARAM;
    }
    if (params->field_mask & (UCT_EP_PARAM_FIELD_DEV_ADDR |
                              UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("qpx_rc connects only to endpoints (CONNECT_TO_EP)");
        return UCS_ERR_UNSUPPORTED;
    }

    iface = ucs_derived_of(params->iface, qpx_rc_iface_t);
    UCS_CLASS_CALL_SUPER_INIT(qpx_ep_t, &iface->super.super);

    /* Before the first failure can come: err_put_qp cleans it up */
    memset(&self->txwq, 0, sizeof(self->txwq));
    status = qpx_iface_qp_get(&iface->super.super, &self->qp);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_qp_to_init(self->qp, iface->super.super.port_num,
                            iface->super.super.config.access_flags, 0);
    if (status != UCS_OK) {
        goto err_put_qp;
    }

    if (iface->super.super.direct.enabled) {
        status = qpx_mlx5_txwq_init(&iface->super.super, self->qp,
                                    &self->txwq);
        if (status != UCS_OK) {
            goto err_put_qp;
        }
    }

    /* The words the peer writes: its credit count (flow control) and its
     * close notice (keepalive), in a registered slot of the interface */
    self->fc.enabled = (iface->config.fc_wnd > 0);
    self->fc.ctl     = ucs_mpool_get(&iface->ctl_mp);
    if (self->fc.ctl == NULL) {
        qpx_iface_exhausted_set(&iface->super.super, "memory registration");
        ucs_log(iface->super.super.exhausted_level, "qp 0x%x: no endpoint "
                "control words (registration failed)", self->qp->qp_num);
        status = UCS_ERR_NO_MEMORY;
        goto err_put_qp;
    }

    status = qpx_iface_qp_map_add(&iface->super.super, self->qp->qp_num, self);
    if (status != UCS_OK) {
        goto err_put_ctl;
    }

    self->id              = iface->next_ep_id++;
    self->flags           = 0;
    self->tx.sn           = 0;
    self->tx.acked_sn     = 0;
    self->tx.signaled_sn  = 0;
    self->tx.sq_available = iface->super.super.config.tx_queue_len;
    self->tx.unsignaled   = 0;
    self->tx.fence        = 0;
    /* nothing before it to fence */
    self->tx.fence_beat   = iface->super.fence_beat;
    self->tx.keepalive_sn = 0;
    self->fc.ctl->consumed_by_peer = 0;
    self->fc.ctl->peer_closed      = 0;
    self->fc.sent         = 0;
    self->fc.consumed     = 0;
    self->fc.reported     = 0;
    self->fc.remote_addr  = 0;
    self->fc.remote_rkey  = 0;
    ucs_list_head_init(&self->tx.ops);
    ucs_list_add_tail(&iface->super.eps, &self->list);
    ucs_debug("qpx_rc ep %p qp 0x%x created", self, self->qp->qp_num);
    return UCS_OK;

err_put_ctl:
    ucs_mpool_put(self->fc.ctl);
err_put_qp:
    qpx_iface_qp_put(&iface->super.super, self->qp);
    qpx_mlx5_txwq_cleanup(&iface->super.super, &self->txwq);
    return status;
}


UCS_CLASS_CLEANUP_FUNC(qpx_rc_ep_t)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(self);
    ucs_list_link_t ops;
    qpx_op_t *op;

    qpx_iface_qp_map_del(&iface->super.super, self->qp->qp_num);
    if (iface->super.super.rx.src == &self->super) {
        iface->super.super.rx.src = NULL;
    }

    /* What is outstanding completes as canceled, once the QP is reset
     * below (the device reads none of its buffers after that) */
    qpx_ops_take(&ops, &self->tx.ops);

    /* Requests that will never be polled are no longer outstanding */
    iface->super.tx_unacked -= self->tx.sn - self->tx.acked_sn;

    /* Signalled requests that will never be polled give their CQ entries
     * back */
    if (!(self->flags & QPX_RC_EP_FLAG_ERROR) &&
        (self->tx.signaled_sn > self->tx.acked_sn)) {
        ++iface->super.super.tx.cq_available;
    }

    ucs_list_del(&self->list);
    /* Before the QP goes back to RESET, which discards what it holds */
    qpx_rc_ep_post_close_notice(self);
    qpx_iface_qp_put(&iface->super.super, self->qp);
    /* after the reset: a completion still found for the QP is dropped */
    qpx_mlx5_txwq_cleanup(&iface->super.super, &self->txwq);
    /* A late write of the old peer cannot reach the slot once it serves a
     * new endpoint: it comes through our QP, now reset (or reconnected to
     * another peer, whose packets only it accepts) */
    ucs_mpool_put(self->fc.ctl);

    /* UCT: uct_ep_destroy completes the endpoint's outstanding operations
     * (UCX's gtest test_uct_ep.destroy_entity_after_send); they were
     * dropped without their completions */
    while (!ucs_list_is_empty(&ops)) {
        op = ucs_list_extract_head(&ops, qpx_op_t, list);
        op->cb(op, UCS_ERR_CANCELED);
    }
    ucs_debug("qpx_rc ep %p destroyed", self);
}


UCS_CLASS_DEFINE(qpx_rc_ep_t, qpx_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(qpx_rc_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(qpx_rc_ep_t, uct_ep_t);


ucs_status_t qpx_rc_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    qpx_rc_ep_t *ep            = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_ep_addr_t *rc_addr  = (qpx_rc_ep_addr_t*)addr;

    memset(rc_addr, 0, sizeof(*rc_addr));
    qpx_rc_pack24(rc_addr->qp_num, ep->qp->qp_num);
    rc_addr->flags   = QPX_RC_EP_ADDR_FLAG_CTL |
                       (ep->fc.enabled ? QPX_RC_EP_ADDR_FLAG_FC : 0);
    rc_addr->fc_rkey = ep->fc.ctl->keys.rkey;
    rc_addr->fc_addr = (uintptr_t)&ep->fc.ctl->consumed_by_peer;
    return UCS_OK;
}


ucs_status_t qpx_rc_ep_connect_to_ep(uct_ep_h tl_ep,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_ep_addr_t *ep_addr)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    const qpx_rc_ep_addr_t *rc_addr = (const qpx_rc_ep_addr_t*)ep_addr;
    qpx_qp_connect_attr_t conn;
    qpx_device_addr_t addr;
    ucs_status_t status;

    if ((dev_addr == NULL) || (ep_addr == NULL)) {
        ucs_error("qp 0x%x: no peer address", ep->qp->qp_num);
        return UCS_ERR_INVALID_PARAM;
    }
    qpx_device_addr_unpack(dev_addr, &addr);
    if (!qpx_device_addr_is_reachable(iface->super.super.port, &addr)) {
        ucs_error("qp 0x%x: peer address is not reachable", ep->qp->qp_num);
        return UCS_ERR_UNREACHABLE;
    }
    if (ep->flags & QPX_RC_EP_FLAG_CONNECTED) {
        ucs_error("qp 0x%x is already connected", ep->qp->qp_num);
        return UCS_ERR_ALREADY_EXISTS;
    }

    conn          = iface->super.conn;
    conn.dest_qpn = qpx_rc_unpack24(rc_addr->qp_num);
    conn.rq_psn   = qpx_rc_qp_initial_psn(conn.dest_qpn);
    conn.sq_psn   = qpx_rc_qp_initial_psn(ep->qp->qp_num);
    qpx_device_ah_attr(&addr, iface->super.super.port_num,
                       iface->super.super.port->gid_index, &conn.ah_attr);

    status = qpx_qp_to_rtr(ep->qp, &conn);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_qp_to_rts(ep->qp, &conn);
    if (status != UCS_OK) {
        return status;
    }

    if (rc_addr->flags & QPX_RC_EP_ADDR_FLAG_CTL) {
        ep->fc.remote_addr = rc_addr->fc_addr;
        ep->fc.remote_rkey = rc_addr->fc_rkey;
        ep->flags         |= QPX_RC_EP_FLAG_PEER_CTL;
    }
    /* Flow control needs both sides: without the peer's counter, rely on
     * RNR retries only */
    if (!(rc_addr->flags & QPX_RC_EP_ADDR_FLAG_FC) ||
        !(rc_addr->flags & QPX_RC_EP_ADDR_FLAG_CTL)) {
        ep->fc.enabled = 0;
    }

    ep->flags |= QPX_RC_EP_FLAG_CONNECTED;
    ucs_debug("qp 0x%x connected to qp 0x%x lid %d", ep->qp->qp_num,
              conn.dest_qpn, conn.ah_attr.dlid);
    return UCS_OK;
}


/* Move the QP to ERR and take every outstanding operation off the endpoint
 * into ops (the caller finishes them) */
static void qpx_rc_ep_set_error(qpx_rc_ep_t *ep, ucs_list_link_t *ops)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);

    if (!(ep->flags & QPX_RC_EP_FLAG_ERROR)) {
        (void)qpx_qp_to_err(ep->qp);
    }

    ep->flags           |= QPX_RC_EP_FLAG_ERROR;
    ep->tx.sq_available  = QPX_RC_SQ_FAILED;
    iface->super.tx_unacked   -= ep->tx.sn - ep->tx.acked_sn;
    ep->tx.acked_sn      = ep->tx.sn;
    qpx_ops_take(ops, &ep->tx.ops);
    qpx_ep_pending_schedule(&iface->super.super, &ep->super);
}


/*
 * The operations of a failed endpoint finish with the error after its
 * failure is reported, as qpx_dc's of a failed DCI: a user that retries a
 * request at its error completion (UCP's failover restarts it) must find
 * the endpoint reported and replaced, not post on it again and get the
 * error back at once. They are off the endpoint before the report, whose
 * handler may destroy it.
 */
void qpx_rc_ep_handle_failure(qpx_rc_ep_t *ep, enum ibv_wc_status wc_status)
{
    ucs_status_t status = qpx_wc_failure_status(wc_status);
    ucs_list_link_t ops;

    if (ep->flags & QPX_RC_EP_FLAG_ERROR) {
        return;
    }

    qpx_rc_ep_set_error(ep, &ops);
    /* The handler may destroy ep: nothing touches it afterwards */
    (void)qpx_ep_report_failure(&ep->super, status,
                                "qpx_rc: qp 0x%x failed: %s", ep->qp->qp_num,
                                ibv_wc_status_str(wc_status));
    qpx_ops_complete(&ops, UINT64_MAX, status);
}


/*
 * uct_ep_invalidate: a transport error, emulated (UCX's tests of error
 * handling and UCP's failover call it): the QP goes to ERR, as rc_mlx5's
 * does. What it holds, and what is posted on it after, is flushed with
 * errors, and the first error completion reports the failure from
 * progress (a flush or a keepalive check posts one if nothing else does).
 * The peer sees nothing until its own requests fail.
 */
ucs_status_t qpx_rc_ep_invalidate(uct_ep_h tl_ep, qpx_ep_invalidate_arg_t arg)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);

    (void)arg;
    if (ep->flags & QPX_RC_EP_FLAG_ERROR) {
        return UCS_OK; /* failed already: reported, or about to be */
    }
    ucs_debug("qp 0x%x: invalidated", ep->qp->qp_num);
    return qpx_qp_to_err(ep->qp);
}


ucs_status_t qpx_rc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    ucs_list_link_t ops;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        qpx_rc_ep_set_error(ep, &ops);
        qpx_ops_complete(&ops, UINT64_MAX, UCS_ERR_CANCELED);
        return UCS_OK;
    }

    if (ep->flags & QPX_RC_EP_FLAG_ERROR) {
        return (ep->tx.sn == ep->tx.acked_sn) ? UCS_OK : UCS_ERR_CANCELED;
    }

    /* Requests queued before this flush must go first (as qpx_dc and
     * qpx_ud): UCP's flush must not return before them. Not when the flush
     * is itself the pending request being dispatched. */
    if (!qpx_ep_pending_is_clear(&iface->super.super, &ep->super)) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->tx.sn == ep->tx.acked_sn) {
        return UCS_OK;
    }

    /* The last request must be signalled for the flush to complete */
    return qpx_rc_ep_probe(tl_ep, ep, ep->tx.signaled_sn != ep->tx.sn, comp,
                           UCS_INPROGRESS);
}


ucs_status_t qpx_rc_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);

    /* The next request waits for earlier reads and atomics to finish */
    ep->tx.fence = IBV_SEND_FENCE;
    return UCS_OK;
}


ucs_status_t qpx_rc_ep_check(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);

    if (flags != 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* Known now, comp not used (UCT allows it): a failure already reported,
     * or nothing to probe before the endpoint is connected */
    if ((ep->flags & QPX_RC_EP_FLAG_ERROR) ||
        !(ep->flags & QPX_RC_EP_FLAG_CONNECTED)) {
        return UCS_OK;
    }

    /* An outstanding signalled last request completes, or fails when the
     * peer is gone; otherwise (idle, or unsignalled ones at the tail, which
     * would never report) a zero-length write the peer's HCA must
     * acknowledge. comp (UCX 1.22's asynchronous check) completes with
     * either. */
    return qpx_rc_ep_probe(tl_ep, ep,
                           (ep->tx.sn == ep->tx.acked_sn) ||
                           (ep->tx.signaled_sn != ep->tx.sn),
                           comp, UCS_OK);
}


void qpx_rc_ep_keepalive(qpx_rc_ep_t *ep)
{
    /* Not probed: endpoints whose peer closed them (the next send fails,
     * rightly) and ones still carrying traffic (it detects a failure by
     * itself) */
    if (!ep->fc.ctl->peer_closed && (ep->tx.sn == ep->tx.keepalive_sn) &&
        ((ep->flags & (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_ERROR)) ==
         QPX_RC_EP_FLAG_CONNECTED)) {
        /* Idle for a whole interval: a signalled zero-length write the
         * peer's HCA must acknowledge. A dead peer makes it fail after the
         * transport retries. Also when unsignalled requests are still
         * unacknowledged: they may have been executed long ago, and without
         * a signalled request after them nothing would ever report on them.
         * Without a free slot the next round tries again. */
        (void)qpx_rc_ep_post_nop(ep);
    }
    ep->tx.keepalive_sn = ep->tx.sn;
}


/*
 * The send buffer pool is empty (TX_MAX_BUFS, or the device registers no
 * more memory). A buffer comes back when the request that carried it, or a
 * later one of its QP, completes, and only signalled requests complete:
 * with every buffer held by unsignalled requests (one in TX_MODERATION is
 * signalled, per QP) no completion would come, and the senders would wait
 * for ever. Every connected endpoint whose last request is unsignalled gets
 * a signalled zero-length write, in a send slot kept for it
 * (QPX_RC_SQ_RESERVE); one already asked is not asked again.
 */
void qpx_rc_iface_tx_solicit(qpx_iface_t *base_iface)
{
    qpx_rc_iface_t *iface = ucs_derived_of(base_iface, qpx_rc_iface_t);
    qpx_rc_ep_t *ep;

    ucs_list_for_each(ep, &iface->super.eps, list) {
        if ((ep->tx.signaled_sn != ep->tx.sn) &&
            ((ep->flags & (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_ERROR)) ==
             QPX_RC_EP_FLAG_CONNECTED)) {
            (void)qpx_rc_ep_post_nop(ep);
        }
    }
}


/* uct_ep_is_connected: the peer's QP and port, as the QP holds them (read
 * back rather than kept in every endpoint: UCP asks only when it
 * reconfigures an endpoint) */
int qpx_rc_ep_is_connected(const uct_ep_h tl_ep,
                           const uct_ep_is_connected_params_t *params)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    const qpx_rc_ep_addr_t *rc_addr;
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr attr;
    qpx_device_addr_t addr;
    int ret;

    if (!(params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) ||
        !(ep->flags & QPX_RC_EP_FLAG_CONNECTED)) {
        return 0;
    }

    ret = ibv_query_qp(ep->qp, &attr, IBV_QP_AV | IBV_QP_DEST_QPN,
                       &init_attr);
    if (ret != 0) {
        ucs_debug("qp 0x%x: ibv_query_qp() failed: %s", ep->qp->qp_num,
                  strerror(ret));
        return 0;
    }

    if (params->field_mask & UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) {
        rc_addr = (const qpx_rc_ep_addr_t*)params->ep_addr;
        if (qpx_rc_unpack24(rc_addr->qp_num) != attr.dest_qp_num) {
            return 0;
        }
    }

    qpx_device_addr_unpack(params->device_addr, &addr);
    return qpx_device_addr_is_ah_peer(&addr, &attr.ah_attr);
}
