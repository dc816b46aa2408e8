/*
 * qpx_ud interface lifecycle and attributes: the configuration table, open
 * (CQs, UD QP, buffers), close, query, addresses, and the uct_tl_t
 * "qpx_ud".
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <ucs/qpx_config.h>
#include <uct/qpx/base/qpx_param.h>

#include <string.h>


ucs_config_field_t qpx_ud_iface_config_table[] = {
    /* The interface core's options (SEG_SIZE, TX_/RX_ queues and buffers):
     * UCX_QPX_<NAME>, overridden by UCX_QPX_UD_<NAME>; never the bare
     * UCX_<NAME> (see qpx_iface_config_table). qpx_ud's own defaults: one
     * inline send in 64 signalled (1..64: a send completion is a CQE the
     * device writes and progress polls; 64 rather than 16 made 8-byte
     * am_bw about 1% faster alone, 5 to 8% with ACK_THRESH 128,
     * docs/performance.md), at most 64k send buffers (each holds an
     * unacknowledged packet) */
    {"QPX_", "TX_MODERATION=64;TX_MAX_BUFS=65536;TX_BUFS_GROW=256", NULL,
     ucs_offsetof(qpx_ud_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(qpx_iface_config_table)},

    {"WINDOW", "256",
     "Packets an endpoint may have unacknowledged (at most 16384).",
     ucs_offsetof(qpx_ud_iface_config_t, window), QPX_CONFIG_TYPE_UINT},

    {"TIMEOUT", "30s",
     "No acknowledgement from a peer for this long fails the endpoint: its\n"
     "error handler is called with UCS_ERR_ENDPOINT_TIMEOUT.",
     ucs_offsetof(qpx_ud_iface_config_t, timeout), QPX_CONFIG_TYPE_TIME},

    {"RTO", "10ms",
     "Initial and smallest retransmission timeout: above it, the timeout\n"
     "follows the measured round trip (srtt + 4 rttvar, RFC 6298).",
     ucs_offsetof(qpx_ud_iface_config_t, rto), QPX_CONFIG_TYPE_TIME},

    {"RTO_MAX", "1s", "Largest retransmission timeout after backoff.",
     ucs_offsetof(qpx_ud_iface_config_t, rto_max), QPX_CONFIG_TYPE_TIME},

    {"BACKOFF", "2.0",
     "Factor applied to the retransmission timeout after each timeout.",
     ucs_offsetof(qpx_ud_iface_config_t, backoff), QPX_CONFIG_TYPE_DOUBLE},

    {"TIMER_TICK", "1ms",
     "How often progress checks retransmission timers and delayed acks.",
     ucs_offsetof(qpx_ud_iface_config_t, timer_tick), QPX_CONFIG_TYPE_TIME},

    {"ACK_THRESH", "128",
     "Packets delivered before the receiver sends an explicit ack (else acks\n"
     "ride on its sends, answer an ack request, or go at the next tick).\n"
     "Capped at half the window, where the sender asks for one anyway.",
     ucs_offsetof(qpx_ud_iface_config_t, ack_thresh), QPX_CONFIG_TYPE_UINT},

    {"RX_REORDER", "256",
     "Packets an endpoint keeps when they arrive after a gap (rounded up to\n"
     "a power of 2, at most 16384; 0: drop them and rely on go-back-N).\n"
     "The buffer is allocated on the first gap an endpoint sees.",
     ucs_offsetof(qpx_ud_iface_config_t, rx_reorder), QPX_CONFIG_TYPE_UINT},

    {"ASYNC_PROGRESS", "y",
     "Run acknowledgements, retransmissions and peer timeouts from the\n"
     "worker's async thread when the user does not call progress (thread\n"
     "async modes only). Operations then block the async context (or see\n"
     "ASYNC_FENCE); with 'n' a process that stops calling progress for\n"
     "longer than TIMEOUT is declared dead by its peers.",
     ucs_offsetof(qpx_ud_iface_config_t, async_progress), UCS_CONFIG_TYPE_BOOL},

    {"ASYNC_FENCE", "n",
     "With async progress, sends and progress exclude the timer without a\n"
     "lock: the timer, which runs rarely, pays a process-wide membarrier(2)\n"
     "instead. Only for workers where no other transport calls UCP from the\n"
     "async thread (UCX's ud_verbs and ud_mlx5 do: a wireup answer they run\n"
     "could be sent over this interface beside the user's send). 'n', or a\n"
     "kernel without membarrier: every operation blocks the worker's async\n"
     "context (an uncontended recursive lock), as ud_verbs does.",
     ucs_offsetof(qpx_ud_iface_config_t, async_fence), UCS_CONFIG_TYPE_BOOL},

    {"ASYNC_IDLE", "10ms",
     "Async progress runs once the user has not called progress for this\n"
     "long; its timer fires every half of it.",
     ucs_offsetof(qpx_ud_iface_config_t, async_idle), QPX_CONFIG_TYPE_TIME},

    {"SRQ", "n",
     "Post receive buffers to a shared receive queue attached to the UD QP\n"
     "instead of the QP's own receive queue (docs/performance.md).",
     ucs_offsetof(qpx_ud_iface_config_t, srq), UCS_CONFIG_TYPE_BOOL},

    {"KEEPALIVE_INTERVAL", "2s",
     "Every interval, a connected endpoint that sent nothing since the last "
     "one sends a reliable probe, so that a peer that died while this side "
     "only waits for it fails the endpoint after TIMEOUT instead of going "
     "unnoticed. Endpoints whose peer destroyed its side (DISC) are not "
     "probed. 0: off.",
     ucs_offsetof(qpx_ud_iface_config_t, keepalive_interval),
     QPX_CONFIG_TYPE_TIME},

    {"MAX_HALF_OPEN", "1024",
     "Endpoints that peers' connection requests may create and that have not "
     "yet been answered, in all (one remote interface gets at most 32). "
     "Requests beyond are refused and counted; a real peer sends its request "
     "again. Unanswered ones go after TIMEOUT.",
     ucs_offsetof(qpx_ud_iface_config_t, max_half_open), QPX_CONFIG_TYPE_UINT},

    {"EVENTS", "y",
     "Offer event notification (uct_iface_event_fd_get, uct_iface_event_arm):\n"
     "a worker may sleep in ucp_worker_wait until a packet arrives, as with\n"
     "UCX's ud_verbs. UCP's adaptive progress then stops progressing an idle\n"
     "qpx_ud interface and waits for its events.",
     ucs_offsetof(qpx_ud_iface_config_t, events), UCS_CONFIG_TYPE_BOOL},

    {"PRINT_STATS", "n",
     "Print the interface's packet counters (refused, spoofed, duplicate, "
     "resent, ...) to stderr when it is closed.",
     ucs_offsetof(qpx_ud_iface_config_t, print_stats), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


static ucs_status_t qpx_ud_iface_query(uct_iface_h tl_iface,
                                       uct_iface_attr_t *attr)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    size_t max_payload    = iface->tx.max_payload;

    qpx_iface_query(&iface->super, attr);

    attr->cap.am.max_short       = iface->tx.max_short;
    attr->cap.am.max_bcopy       = max_payload;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = max_payload;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = ucs_min(max_payload, QPX_AM_MAX_HDR);
    attr->cap.am.max_iov         = QPX_UD_MAX_IOV;
    if (iface->events) {
        /* a send completes when its ack arrives: a receive event */
        attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                UCT_IFACE_FLAG_EVENT_RECV |
                                UCT_IFACE_FLAG_EVENT_FD;
    }

    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT |
                      UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_CONNECT_TO_EP |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK |
                      QPX_UCX_IFACE_FLAG_INTER_NODE;
    if (iface->async.on) {
        /* AM handlers flagged async are called from the async timer */
        attr->cap.flags |= UCT_IFACE_FLAG_CB_ASYNC;
    }

    attr->iface_addr_len    = sizeof(qpx_ud_iface_addr_t);
    attr->ep_addr_len       = sizeof(qpx_ud_ep_addr_t);
    attr->max_conn_priv     = 0;
    attr->latency.c        += QPX_UD_LATENCY_ADD;
    attr->overhead          = QPX_UD_OVERHEAD;
    return UCS_OK;
}

static ucs_status_t qpx_ud_iface_get_address(uct_iface_h tl_iface,
                                             uct_iface_addr_t *addr)
{
    qpx_ud_iface_t *iface         = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    qpx_ud_iface_addr_t *ud_addr  = (qpx_ud_iface_addr_t*)addr;
    uint32_t qpn                  = iface->qp->qp_num;

    ud_addr->qpn[0] = qpn;
    ud_addr->qpn[1] = qpn >> 8;
    ud_addr->qpn[2] = qpn >> 16;
    return UCS_OK;
}

static void qpx_ud_iface_vfs_refresh(uct_iface_h iface)
{
    (void)iface;
}

static ucs_status_t qpx_ud_ep_query(uct_ep_h ep, uct_ep_attr_t *ep_attr)
{
    (void)ep;
    (void)ep_attr;
    return UCS_ERR_UNSUPPORTED;
}

static void qpx_ud_iface_t_delete(uct_iface_t *tl_iface);

static uct_iface_ops_t qpx_ud_iface_ops = {
    .ep_am_short              = qpx_ud_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = qpx_ud_ep_am_bcopy,
    .ep_am_zcopy              = qpx_ud_ep_am_zcopy,
    .ep_pending_add           = qpx_ep_pending_add,
    .ep_pending_purge         = qpx_ep_pending_purge,
    .ep_flush                 = qpx_ud_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_check                 = qpx_ud_ep_check,
    .ep_create                = qpx_ud_ep_create,
    .ep_destroy               = qpx_ud_ep_destroy,
    .ep_get_address           = qpx_ud_ep_get_address,
    .ep_connect_to_ep         = qpx_ud_ep_connect_to_ep,
    .iface_flush              = qpx_ud_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = qpx_ud_iface_progress,
    .iface_event_fd_get       = qpx_iface_event_fd_get,
    .iface_event_arm          = qpx_ud_iface_event_arm,
    .iface_close              = qpx_ud_iface_t_delete,
    .iface_query              = qpx_ud_iface_query,
    .iface_get_device_address = qpx_iface_get_device_address,
    .iface_get_address        = qpx_ud_iface_get_address,
    .iface_is_reachable       = qpx_iface_is_reachable
};

static uct_iface_internal_ops_t qpx_ud_iface_internal_ops =
    QPX_UCX_IFACE_INTERNAL_OPS(uct_base_iface_estimate_perf,
                               qpx_ud_iface_vfs_refresh, qpx_ud_ep_query,
                               qpx_ud_ep_invalidate, qpx_ud_ep_is_connected);

/* The UD QP, through base's lifecycle: RESET -> INIT (Q_Key) -> RTR -> RTS.
 * Caps above the device's are retried within its limits (a device that
 * refuses them) or taken as granted (one that clamps), and read back. */
static ucs_status_t qpx_ud_iface_create_qp(qpx_ud_iface_t *self,
                                           const qpx_ud_iface_config_t *config)
{
    qpx_qp_connect_attr_t conn;
    ucs_status_t status;

    status = qpx_iface_qp_get(&self->super, &self->qp);
    if (status != UCS_OK) {
        ucs_log((status == UCS_ERR_NO_MEMORY) ?
                self->super.exhausted_level : UCS_LOG_LEVEL_ERROR,
                "qpx_ud: no UD QP on %s (send queue %u, receive queue %u): %s",
                self->super.md->dev.name, config->super.tx.queue_len,
                self->super.rx.queue_len, ucs_status_string(status));
        return status;
    }

    memset(&conn, 0, sizeof(conn));
    status = qpx_qp_to_init(self->qp, self->super.port_num, 0, QPX_UD_QKEY);
    if (status == UCS_OK) {
        status = qpx_qp_to_rtr(self->qp, &conn);
    }
    if (status == UCS_OK) {
        status = qpx_qp_to_rts(self->qp, &conn);
    }
    if (status != UCS_OK) {
        ibv_destroy_qp(self->qp);
        return status;
    }

    /* Send slots: what the QP granted, each with room in the send CQ (a
     * failed QP flushes every posted request there) */
    self->tx.available  = ucs_min(self->super.config.tx_queue_len,
                                  (unsigned)self->super.tx.cq_available);
    /* At most half the queue unsignaled: the other half always has a
     * completion coming that returns the slots */
    self->tx.moderation = ucs_max(1, ucs_min(config->super.tx.moderation,
                                             self->tx.available / 2));
    self->tx.unsignaled = 0;
    self->tx.signaled   = 0;
    /* read back (ibv_create_qp(3)): a device may grant fewer SGEs */
    self->tx.sge_iov    = ucs_min(QPX_UD_MAX_IOV,
                                  self->super.config.max_send_sge - 1);
    qpx_ud_iface_tx_wrs_init(self);
    return UCS_OK;
}

/* The direct path (qpx_mlx5.h) where the device has it and DIRECT lets it
 * (UCX_QPX_UD_DIRECT): the QP's send queue, both CQs and its receive queue
 * (or SRQ), before the first receive is posted */
static ucs_status_t qpx_ud_iface_direct_init(qpx_ud_iface_t *self)
{
    ucs_status_t status;

    status = qpx_mlx5_iface_init(&self->super, self->qp);
    if ((status != UCS_OK) || !self->super.direct.enabled) {
        return status;
    }
    status = qpx_mlx5_txwq_init(&self->super, self->qp, &self->txwq);
    if (status != UCS_OK) {
        qpx_mlx5_iface_cleanup(&self->super);
    }
    return status;
}

static void qpx_ud_iface_direct_cleanup(qpx_ud_iface_t *self)
{
    qpx_mlx5_txwq_cleanup(&self->super, &self->txwq);
    qpx_mlx5_iface_cleanup(&self->super);
}

static ucs_status_t qpx_ud_iface_init_config(qpx_ud_iface_t *iface,
                                             const qpx_ud_iface_config_t *config)
{
    qpx_ud_rel_config_t *rel = &iface->rel_config;

    rel->window       = config->window;
    rel->rto_init     = qpx_ud_time_from_sec(config->rto);
    rel->rto_max      = qpx_ud_time_from_sec(config->rto_max);
    rel->backoff      = config->backoff;
    rel->peer_timeout = qpx_ud_time_from_sec(config->timeout);
    rel->nak_holdoff  = rel->rto_init / 4;
    rel->probe_time   = rel->rto_init / 4;
    iface->tick       = qpx_ud_time_from_sec(ucs_max(config->timer_tick,
                                                     1e-6));
    if ((config->super.tx.moderation < 1) ||
        (config->super.tx.moderation > QPX_UD_TX_MODERATION_MAX)) {
        ucs_error("qpx_ud: TX_MODERATION must be 1..%d",
                  QPX_UD_TX_MODERATION_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->super.tx.queue_len < 2) || (config->super.rx.queue_len < 2)) {
        ucs_error("qpx_ud: TX_QUEUE_LEN and RX_QUEUE_LEN must be at least 2");
        return UCS_ERR_INVALID_PARAM;
    }
    return qpx_ud_rel_config_check(rel);
}

/* A receive buffer holds a whole packet: GRH + MTU, or SEG_SIZE if less
 * (then every peer must use the same) */
static ucs_status_t qpx_ud_iface_seg_size(qpx_md_t *md,
                                          const uct_iface_params_t *params,
                                          const qpx_ud_iface_config_t *config,
                                          size_t *seg_size_p)
{
    ucs_status_t status;
    uint8_t port_num;
    size_t mtu, seg_size;

    status = qpx_device_parse_port(&md->dev, params->mode.device.dev_name,
                                   &port_num);
    if (status != UCS_OK) {
        return status;
    }

    mtu      = qpx_device_mtu_bytes(qpx_device_port(&md->dev,
                                                    port_num)->attr.active_mtu);
    seg_size = ucs_min(config->super.seg_size, QPX_UD_GRH_LEN + mtu);
    if (seg_size < QPX_UD_MIN_SEG_SIZE) {
        ucs_error("qpx_ud: SEG_SIZE %zu is below %d", seg_size,
                  QPX_UD_MIN_SEG_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    *seg_size_p = seg_size;
    return UCS_OK;
}

/* No send slot of the interface's QP, or no descriptor */
static int qpx_ud_iface_base_tx_exhausted(qpx_iface_t *iface)
{
    return qpx_ud_iface_tx_exhausted(ucs_derived_of(iface, qpx_ud_iface_t));
}

static qpx_ep_tx_state_t qpx_ud_ep_tx_state(qpx_iface_t *iface,
                                            qpx_ep_t *base_ep)
{
    qpx_ud_ep_t *ep = ucs_derived_of(base_ep, qpx_ud_ep_t);

    (void)iface;
    if (ep->flags & (QPX_UD_EP_FLAG_FAILED | QPX_UD_EP_FLAG_CANCELED)) {
        /* Its requests run: they see the error and finish */
        return QPX_EP_TX_RETRY;
    }
    if (!(ep->flags & QPX_UD_EP_FLAG_CONNECTED) ||
        (ep->flags & QPX_UD_EP_FLAG_CONN_OWED) ||
        !qpx_ud_rel_tx_can_send(&ep->tx)) {
        /* The connection reply, an ack or our CONN's post schedules it
         * again */
        return QPX_EP_TX_WAIT;
    }
    return QPX_EP_TX_OK;
}

static const qpx_iface_ops_t qpx_ud_iface_base_ops = {
    .tx_exhausted = qpx_ud_iface_base_tx_exhausted,
    .ep_tx_state  = qpx_ud_ep_tx_state
};

/* The limits of sends and acks, the reorder buffer and the clocks from
 * config and the segment size; the empty tables and lists */
static void qpx_ud_iface_state_init(qpx_ud_iface_t *self,
                                    const qpx_ud_iface_config_t *config,
                                    size_t seg_size)
{
    /* Kept buffers go back to the pool under the async block */
    self->super.release_desc.cb = qpx_ud_iface_release_desc;
    self->tx.max_payload  = seg_size - QPX_UD_GRH_LEN - sizeof(qpx_ud_hdr_t);
    /* UCT's am.max_short counts the 8-byte header with the payload */
    self->tx.max_short    = ucs_min(self->tx.max_payload, 256);
    self->tx.ack_thresh   = ucs_max(config->window / 2, 1);
    self->rx.ack_thresh   = ucs_max(ucs_min(config->ack_thresh,
                                            config->window / 2), 1);
    self->rx.ooo_capacity = 0;
    if (config->rx_reorder > 0) {
        self->rx.ooo_capacity = 1;
        while (self->rx.ooo_capacity < ucs_min(config->rx_reorder,
                                               QPX_UD_REL_MAX_WINDOW)) {
            self->rx.ooo_capacity *= 2;
        }
    }
    self->print_stats         = config->print_stats;
    self->events              = config->events;
    self->conn.half_open      = 0;
    self->conn.max_half_open  = config->max_half_open;
    self->now                 = qpx_ud_time_now();
    self->next_tick           = self->now + self->tick;
    self->keepalive.interval  = qpx_ud_time_from_sec(
                                        config->keepalive_interval);
    self->keepalive.next      = self->now + self->keepalive.interval;
    qpx_ep_table_init(&self->eps);
    kh_init_inplace(qpx_ud_peers, &self->peers);
    ucs_list_head_init(&self->active_eps);
    ucs_list_head_init(&self->ctl_eps);
    ucs_list_head_init(&self->failed_eps);
    ucs_list_head_init(&self->linger_eps);
    ucs_list_head_init(&self->discs);
}

/* Header-only packets the QP cannot take inline get buffers of their own:
 * in tx_mp they could find none, all held by packets that wait for the
 * very acks that cannot be sent (a small TX_MAX_BUFS) */
static ucs_status_t qpx_ud_iface_ctl_mp_init(qpx_ud_iface_t *self)
{
    if (qpx_ud_iface_hdr_inline(self)) {
        return UCS_OK;
    }
    return qpx_md_reg_mpool_init(self->super.md, &self->tx.ctl_mp,
                                 sizeof(qpx_ud_send_desc_t) +
                                 sizeof(qpx_ud_hdr_t), 64,
                                 IBV_ACCESS_LOCAL_WRITE, UCS_LOG_LEVEL_ERROR,
                                 "qpx_ud_ctl");
}

static void qpx_ud_iface_ctl_mp_cleanup(qpx_ud_iface_t *self, int leak_check)
{
    if (!qpx_ud_iface_hdr_inline(self)) {
        ucs_mpool_cleanup(&self->tx.ctl_mp, leak_check);
    }
}

QPX_IFACE_INIT_FUNC(qpx_ud_iface_t)
{
    const qpx_ud_iface_config_t *config = ucs_derived_of(tl_config,
                                                         qpx_ud_iface_config_t);
    qpx_iface_init_attr_t init_attr;
    ucs_status_t status;
    size_t seg_size;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx_ud: only device open mode is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    status = qpx_ud_iface_seg_size(ucs_derived_of(md, qpx_md_t), params,
                                   config, &seg_size);
    if (status != UCS_OK) {
        return status;
    }

    memset(&init_attr, 0, sizeof(init_attr));
    init_attr.ops          = &qpx_ud_iface_base_ops;
    init_attr.hints        = hints;
    init_attr.tl_name      = QPX_UD_TL_NAME;
    init_attr.qp_type      = IBV_QPT_UD;
    init_attr.rx_hdr_len   = QPX_UD_GRH_LEN + sizeof(qpx_ud_hdr_t);
    init_attr.rx_priv_len  = sizeof(qpx_ud_recv_desc_t) -
                             sizeof(qpx_rx_desc_t);
    init_attr.seg_size     = seg_size;
    init_attr.tx_priv_len  = sizeof(qpx_ud_send_desc_t);
    init_attr.max_send_sge = 1 + QPX_UD_MAX_IOV;
    init_attr.use_srq      = config->srq;
    UCS_CLASS_CALL_SUPER_INIT(qpx_iface_t, &qpx_ud_iface_ops,
                              &qpx_ud_iface_internal_ops, md, worker, params,
                              &config->super, &init_attr);

    /* Class objects are not zeroed: qpx_ud's own fields start at zero
     * (counters, endpoint table, async state), then are set below */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));

    qpx_ud_time_init(); /* the config's durations are in its units */
    status = qpx_ud_iface_init_config(self, config);
    if (status != UCS_OK) {
        return status;
    }

    qpx_ud_iface_state_init(self, config, seg_size);

    status = qpx_ud_iface_create_qp(self, config);
    if (status != UCS_OK) {
        goto err_peers_cleanup;
    }

    status = qpx_ud_iface_direct_init(self);
    if (status != UCS_OK) {
        goto err_destroy_qp;
    }

    status = qpx_ud_iface_ctl_mp_init(self);
    if (status != UCS_OK) {
        goto err_direct_cleanup;
    }

    /* Posts nothing when the SRQ is another interface's (it filled it) */
    status = qpx_iface_rx_fill(&self->super);
    if (status != UCS_OK) {
        goto err_ctl_mp_cleanup;
    }

    status = qpx_ud_iface_async_init(self, config);
    if (status != UCS_OK) {
        goto err_ctl_mp_cleanup;
    }

    ucs_debug("qpx_ud: iface %p on %s qpn 0x%x inline %zu seg %zu rx %u%s, "
              "%s path", self, params->mode.device.dev_name, self->qp->qp_num,
              self->super.config.max_inline, seg_size,
              self->super.rx.queue_len, (self->super.srq != NULL) ?
              " (srq)" : "", self->super.direct.enabled ? "direct" : "verbs");
    return UCS_OK;

err_ctl_mp_cleanup:
    qpx_ud_iface_ctl_mp_cleanup(self, 1);
err_direct_cleanup:
    qpx_ud_iface_direct_cleanup(self);
err_destroy_qp:
    ibv_destroy_qp(self->qp);
err_peers_cleanup:
    kh_destroy_inplace(qpx_ud_peers, &self->peers);
    return status;
}

static void qpx_ud_iface_print_stats(qpx_ud_iface_t *iface)
{
    qpx_ud_iface_stats_t *s = &iface->stats;

    ucs_debug("qpx_ud: iface %p closing: rx short %lu bad_type %lu "
              "unknown_ep %lu stale %lu dup %lu ahead %lu bad_status %lu, "
              "tx resent %lu timeouts %lu probe_resends %lu, eps failed %lu",
              iface,
              s->rx_short, s->rx_bad_type, s->rx_unknown_ep, s->rx_stale,
              s->rx_dup, s->rx_ahead, s->rx_bad_status, s->tx_resent,
              s->tx_timeouts, s->tx_probe_resends, s->eps_failed);
    if (iface->print_stats) {
        fprintf(stderr, "qpx_ud stats: rx_short=%lu rx_bad_type=%lu "
                "rx_unknown_ep=%lu rx_stale=%lu rx_dup=%lu rx_ahead=%lu "
                "rx_bad_status=%lu rx_async_full=%lu rx_spoofed=%lu "
                "rx_conn_refused=%lu tx_resent=%lu "
                "tx_timeouts=%lu tx_probe_resends=%lu tx_ack_reqs=%lu "
                "tx_acks=%lu tx_conn_resends=%lu eps_failed=%lu "
                "eps_reclaimed=%lu eps=%u async_runs=%lu async_busy=%lu async_fence=%d "
                "async_blocked=%lu attention_missed=%lu\n",
                s->rx_short, s->rx_bad_type, s->rx_unknown_ep, s->rx_stale,
                s->rx_dup, s->rx_ahead, s->rx_bad_status, s->rx_async_full,
                s->rx_spoofed, s->rx_conn_refused,
                s->tx_resent, s->tx_timeouts, s->tx_probe_resends,
                s->tx_ack_reqs, s->tx_acks, s->tx_conn_resends, s->eps_failed,
                s->eps_reclaimed,
                iface->eps.count, iface->async.runs, iface->async.busy,
                !iface->async.fence.locked, iface->async.fence.blocked,
                s->attention_missed);
    }
}

UCS_CLASS_CLEANUP_FUNC(qpx_ud_iface_t)
{
    int ret;

    uct_base_iface_progress_disable(&self->super.super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    qpx_ud_iface_print_stats(self);
    qpx_ud_ep_free_all(self);
    qpx_ud_iface_discs_cleanup(self);
    qpx_ud_iface_async_cleanup(self);
    qpx_ud_iface_tx_drain(self);
    qpx_ud_iface_direct_cleanup(self);
    ret = ibv_destroy_qp(self->qp);
    if (ret != 0) {
        ucs_warn("qpx_ud: ibv_destroy_qp(0x%x) failed: %s", self->qp->qp_num,
                 strerror(ret));
    }
    /* Those the device held when the QP went away are no leaks */
    qpx_ud_iface_ctl_mp_cleanup(self, 0);
    qpx_ud_iface_peers_cleanup(self);
    qpx_ep_table_cleanup(&self->eps);
    /* The interface core destroys the CQs and the SRQ, and frees the
     * buffers (those the device held when the QP went away are no leaks) */
}

/* qpx_ud_iface_open, with hints: the hybrid's sub-interface too */
QPX_IFACE_CLASS_DEFINE(qpx_ud_iface_t, qpx_iface_t, qpx_ud_iface_open);

QPX_TL_DEFINE(qpx_ud_tl, QPX_UD_TL_NAME, "QPX_UD_", qpx_ud_iface_config_table,
              qpx_ud_iface_config_t, qpx_iface_query_devices);
