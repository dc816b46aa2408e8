/*
 * qpx_rc interface: configuration, attributes, progress and the tl.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rc_ep.inl"

#include <uct/qpx/rdma/qpx_rdma_rx.inl>
#include <ucs/qpx_config.h>

#include <string.h>


static ucs_config_field_t qpx_rc_iface_config_table[] = {
    /* Shared qpx options: UCX_QPX_<NAME>, overridden by UCX_QPX_RC_<NAME>.
     * One QP (and its HCA context) per peer: beyond MAX_NUM_EPS peers UCP
     * picks a transport whose cost does not grow with them (qpx_ud), as it
     * does with UCX's own RC (256 too) */
    {"QPX_", "MAX_NUM_EPS=256", NULL, ucs_offsetof(qpx_rc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(qpx_iface_config_table)},

    /* The RC family's: TIMEOUT, RETRY_COUNT, RNR_*, PATH_MTU,
     * MAX_RD_ATOMIC, ATOMICS, EVENTS, KEEPALIVE_INTERVAL */
    {"", "", NULL, ucs_offsetof(qpx_rc_iface_config_t, rdma),
     UCS_CONFIG_TYPE_TABLE(qpx_rdma_iface_config_table)},

    {"FC_WND_SIZE", "512",
     "Active messages an endpoint may have unconsumed at the peer (credit "
     "flow control; capped by the receive queue; 0: off).",
     ucs_offsetof(qpx_rc_iface_config_t, fc_wnd_size), QPX_CONFIG_TYPE_UINT},

    {NULL}
};


/* The endpoint whose QP received a message (flow control, and base's
 * rx.src for a user that asks), cached in rx.src */
static UCS_F_ALWAYS_INLINE qpx_rc_ep_t *
qpx_rc_iface_rx_ep(qpx_rc_iface_t *iface, uint32_t qp_num)
{
    qpx_iface_t *base = &iface->super.super;
    qpx_rc_ep_t *ep;

    if (ucs_likely((base->rx.src != NULL) &&
                   (base->rx.src_qp_num == qp_num))) {
        return ucs_derived_of(base->rx.src, qpx_rc_ep_t);
    }

    ep = qpx_iface_qp_map_find(base, qp_num);
    base->rx.src        = (ep != NULL) ? &ep->super : NULL;
    base->rx.src_qp_num = qp_num;
    return ep;
}


/* count messages of ep were consumed: report them when a threshold is due.
 * ep came from qpx_rc_iface_rx_ep() before the handlers ran; a handler that
 * destroyed it cleared the cache, so a mismatch means ep is gone. */
static UCS_F_ALWAYS_INLINE void
qpx_rc_iface_rx_consumed(qpx_rc_iface_t *iface, qpx_rc_ep_t *ep,
                         unsigned count)
{
    if ((ep == NULL) || (iface->super.super.rx.src != &ep->super) ||
        !ep->fc.enabled) {
        return;
    }

    ep->fc.consumed += count;
    if ((ep->fc.consumed - ep->fc.reported) >= iface->config.fc_thresh) {
        qpx_rc_ep_fc_update(ep);
    }
}


/* A run of receives from one QP: its endpoint, for its credits and for a
 * user that asked which endpoint the messages came from (rx.src_want);
 * none without either (a flow control that is off ignores it) */
static UCS_F_ALWAYS_INLINE void *
qpx_rc_iface_rx_run_begin(qpx_rdma_iface_t *rdma_iface, uint32_t qp_num)
{
    qpx_rc_iface_t *iface = ucs_derived_of(rdma_iface, qpx_rc_iface_t);

    return (iface->super.super.rx.src_want == 0) ? NULL :
           qpx_rc_iface_rx_ep(iface, qp_num);
}


static UCS_F_ALWAYS_INLINE void
qpx_rc_iface_rx_run_end(qpx_rdma_iface_t *rdma_iface, void *run,
                        unsigned count)
{
    qpx_rc_iface_rx_consumed(ucs_derived_of(rdma_iface, qpx_rc_iface_t), run,
                             count);
}


static const qpx_rdma_rx_ops_t qpx_rc_iface_rx_ops = {
    .run_begin = qpx_rc_iface_rx_run_begin,
    .run_end   = qpx_rc_iface_rx_run_end
};


static void qpx_rc_iface_tx_completion(qpx_rc_iface_t *iface,
                                       const struct ibv_wc *wc)
{
    qpx_rc_ep_t *ep = qpx_iface_qp_map_find(&iface->super.super, wc->qp_num);
    uint64_t sn;

    if ((ep == NULL) || ((wc->wr_id >> QPX_RC_EP_ID_SHIFT) != ep->id) ||
        (ep->flags & QPX_RC_EP_FLAG_ERROR)) {
        return; /* a request of a destroyed, reused or failed endpoint */
    }

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        qpx_rc_ep_handle_failure(ep, wc->status);
        return;
    }

    /* wr_id carries the low bits of sn; acked_sn < sn <= tx.sn */
    sn = ep->tx.sn - ((ep->tx.sn - wc->wr_id) & QPX_RC_SN_MASK);
    ep->tx.sq_available += sn - ep->tx.acked_sn;
    iface->super.tx_unacked   -= sn - ep->tx.acked_sn;
    ep->tx.acked_sn      = sn;
    qpx_ops_complete(&ep->tx.ops, sn, UCS_OK);

    if (ep->flags & QPX_RC_EP_FLAG_FC_UPDATE) {
        qpx_rc_ep_fc_update(ep);
    }
    qpx_ep_pending_schedule(&iface->super.super, &ep->super);
}


/* Handle n send completions (qpx_iface_wc_cb_t) */
static UCS_F_ALWAYS_INLINE unsigned
qpx_rc_iface_tx_wc(qpx_iface_t *base_iface, struct ibv_wc *wc, int n)
{
    qpx_rc_iface_t *iface = ucs_derived_of(base_iface, qpx_rc_iface_t);
    int i;

    qpx_rdma_iface_tx_cq_credit(&iface->super, n);
    for (i = 0; i < n; ++i) {
        qpx_rc_iface_tx_completion(iface, &wc[i]);
    }

    return n;
}


/* A keepalive round: every endpoint idle since the last one is probed */
static UCS_F_NOINLINE void qpx_rc_iface_keepalive(qpx_iface_t *base_iface)
{
    qpx_rc_iface_t *iface = ucs_derived_of(base_iface, qpx_rc_iface_t);
    qpx_rc_ep_t *ep;

    ucs_list_for_each(ep, &iface->super.eps, list) {
        qpx_rc_ep_keepalive(ep);
    }
}


static UCS_F_ALWAYS_INLINE unsigned
qpx_rc_iface_rx_wc(qpx_iface_t *iface, struct ibv_wc *wc, int n)
{
    return qpx_rdma_iface_rx_process(ucs_derived_of(iface, qpx_rdma_iface_t),
                                     &qpx_rc_iface_rx_ops, wc, n);
}


static unsigned qpx_rc_iface_progress(uct_iface_h tl_iface)
{
    return qpx_rdma_iface_progress(ucs_derived_of(tl_iface, qpx_rdma_iface_t),
                                   0, qpx_rc_iface_rx_wc, qpx_rc_iface_tx_wc,
                                   qpx_rc_iface_keepalive);
}


static UCS_F_NOINLINE unsigned
qpx_rc_iface_progress_direct_round(qpx_rdma_iface_t *iface)
{
    return qpx_rdma_iface_progress(iface, 1, qpx_rc_iface_rx_wc,
                                   qpx_rc_iface_tx_wc, qpx_rc_iface_keepalive);
}


static unsigned qpx_rc_iface_progress_direct(uct_iface_h tl_iface)
{
    return qpx_rdma_iface_progress_direct(
            ucs_derived_of(tl_iface, qpx_rdma_iface_t),
            qpx_rc_iface_progress_direct_round);
}


static ucs_status_t qpx_rc_iface_get_address(uct_iface_h tl_iface,
                                             uct_iface_addr_t *addr)
{
    return UCS_OK;
}


static void qpx_rc_iface_t_delete(uct_iface_t *tl_iface);


static uct_iface_ops_t qpx_rc_iface_ops = {
    .ep_get_address           = qpx_rc_ep_get_address,
    .ep_connect_to_ep         = qpx_rc_ep_connect_to_ep,
    QPX_RDMA_IFACE_OPS(qpx_rc)
};

/* What a direct interface takes instead (qpx_rdma_tl_t's direct_ops) */
static const uct_iface_ops_t qpx_rc_iface_direct_ops = {
    QPX_RDMA_IFACE_DATA_OPS(qpx_rc_direct),
    .iface_progress           = qpx_rc_iface_progress_direct
};


static qpx_ep_tx_state_t qpx_rc_ep_tx_state(qpx_iface_t *base_iface,
                                            qpx_ep_t *base_ep)
{
    qpx_rc_iface_t *iface = ucs_derived_of(base_iface, qpx_rc_iface_t);
    qpx_rc_ep_t *ep       = ucs_derived_of(base_ep, qpx_rc_ep_t);

    if (!qpx_rc_ep_has_tx_resources(iface, ep)) {
        return QPX_EP_TX_WAIT; /* a send completion of ep schedules it */
    }
    /* Credits arrive as the peer's RDMA write, without a completion; a
     * put or get does not need them */
    return qpx_rc_ep_has_fc_credits(iface, ep) ? QPX_EP_TX_OK :
                                                 QPX_EP_TX_RETRY;
}


/* As UCX's RC (rc_iface.c): a send CQ's worth of endpoints with a full
 * send queue each */
static size_t qpx_rc_iface_max_inflight_eps(const qpx_rdma_iface_t *iface)
{
    size_t cq_size = (size_t)ucs_max(iface->super.tx.cq_size, 1);

    return ucs_max(cq_size / ucs_max(iface->super.config.tx_queue_len, 1),
                   (size_t)1);
}

static uct_iface_internal_ops_t qpx_rc_iface_internal_ops =
    QPX_RDMA_IFACE_INTERNAL_OPS(qpx_rc_ep_invalidate, qpx_rc_ep_is_connected);

static const qpx_iface_ops_t qpx_rc_iface_base_ops = {
    /* send CQ entries and send buffers */
    .tx_exhausted = qpx_iface_tx_exhausted_signaled,
    .ep_tx_state  = qpx_rc_ep_tx_state,
    .tx_solicit   = qpx_rc_iface_tx_solicit
};

static const qpx_rdma_tl_t qpx_rc_rdma_tl = {
    .name           = QPX_RC_TL_NAME,
    .qp_type        = IBV_QPT_RC,
    .tx_reserve     = QPX_RC_SQ_RESERVE,
    .access_flags   = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
    .qp_create      = NULL,
    .ops            = &qpx_rc_iface_ops,
    .internal_ops   = &qpx_rc_iface_internal_ops,
    .max_inflight_eps = qpx_rc_iface_max_inflight_eps,
    .ep_list_offset = ucs_offsetof(qpx_rc_ep_t, list),
    .direct         = 1,
    .direct_ops     = &qpx_rc_iface_direct_ops,
    .base_ops       = &qpx_rc_iface_base_ops,
    .connect_flag   = UCT_IFACE_FLAG_CONNECT_TO_EP,
    .iface_addr_len = 0,
    .ep_addr_len    = sizeof(qpx_rc_ep_addr_t),
    /* Posting, the doorbell and polling cost more than a plain verbs RC */
    .overhead       = 75e-9,
    .latency_c      = 50e-9,
    /* Every connected peer is one more QP context the HCA caches: latency
     * grows with their number (1 ns each, UCX's estimate for its RC), so
     * UCP weighs RC against UD by the number of peers it expects */
    .latency_m      = 1e-9
};


unsigned qpx_rc_fc_window(unsigned wnd_size, unsigned rx_queue_len,
                          unsigned rx_batch, unsigned *thresh_p)
{
    /* Credits never exceed what the SRQ holds beyond one repost batch: the
     * peer may have that many messages in flight while the batch waits to
     * be reposted, and none of them finds the queue empty (an RNR) */
    unsigned max_fc = (rx_queue_len > rx_batch) ? rx_queue_len - rx_batch : 0;
    unsigned wnd    = ucs_min(wnd_size, max_fc);

    /* the count is written back to the peer at half the window */
    *thresh_p = ucs_max(1, wnd / 2);
    return wnd;
}


static QPX_IFACE_INIT_FUNC(qpx_rc_iface_t)
{
    const qpx_rc_iface_config_t *config =
            ucs_derived_of(tl_config, qpx_rc_iface_config_t);
    struct ibv_qp *qp;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(qpx_rdma_iface_t, &qpx_rc_rdma_tl, md, worker,
                              params, &config->super, hints);

    self->next_ep_id = 0;

    /* Create one QP now: the caps it is granted bound the operations */
    status = qpx_iface_qp_get(&self->super.super, &qp);
    if (status != UCS_OK) {
        return status;
    }
    qpx_iface_qp_put(&self->super.super, qp);

    status = qpx_rdma_iface_caps_init(&self->super, &config->rdma);
    if (status != UCS_OK) {
        return status;
    }
    qpx_rdma_iface_conn_init(&self->super, &config->rdma);

    self->config.fc_wnd = qpx_rc_fc_window(config->fc_wnd_size,
                                           self->super.super.rx.queue_len,
                                           self->super.super.rx.batch,
                                           &self->config.fc_thresh);
    if ((config->fc_wnd_size > 0) && (self->config.fc_wnd == 0) &&
        !self->super.super.attr_only) {
        ucs_warn("qpx_rc: receive queue too small for flow control");
    }
    /* Flow control needs the endpoint of each run of receives */
    self->super.super.rx.src_want = (self->config.fc_wnd > 0) ?
                                    QPX_IFACE_RX_SRC_TL : 0;

    /* Endpoints' control words: 256 endpoints per registration */
    status = qpx_md_reg_mpool_init(self->super.super.md, &self->ctl_mp,
                                   sizeof(qpx_rc_ep_ctl_t), 256,
                                   IBV_ACCESS_LOCAL_WRITE |
                                   IBV_ACCESS_REMOTE_WRITE,
                                   self->super.super.exhausted_level,
                                   "qpx_rc_ep_ctl");
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_rdma_iface_start(&self->super, &config->rdma);
    if (status != UCS_OK) {
        goto err_ctl_mp_cleanup;
    }

    ucs_debug("qpx_rc iface %p: inline %zu sge %u fc %u/%u", self,
              self->super.super.config.max_inline,
              self->super.super.config.max_send_sge, self->config.fc_wnd,
              self->super.super.rx.queue_len);
    return UCS_OK;

err_ctl_mp_cleanup:
    ucs_mpool_cleanup(&self->ctl_mp, 1);
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_rc_iface_t)
{
    qpx_rdma_iface_stop(&self->super);
    ucs_mpool_cleanup(&self->ctl_mp, ucs_list_is_empty(&self->super.eps));
}


/* qpx_rc_iface_open, with hints: the hybrid's sub-interface too */
QPX_IFACE_CLASS_DEFINE(qpx_rc_iface_t, qpx_rdma_iface_t, qpx_rc_iface_open);


QPX_TL_DEFINE(qpx_rc_tl, QPX_RC_TL_NAME, "QPX_RC_", qpx_rc_iface_config_table,
              qpx_rc_iface_config_t, qpx_iface_query_devices);
