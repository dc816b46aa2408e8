/*
 * qpx_ud interface lifecycle and attributes: open (CQs, UD QP, buffers),
 * close, query, addresses, and the uct_tl_t "qpx_ud".
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <string.h>


static ucs_status_t qpx_ud_iface_query(uct_iface_h tl_iface,
                                       uct_iface_attr_t *attr)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    size_t max_payload    = iface->tx.max_payload;

    uct_base_iface_query(&iface->super, attr);

    attr->cap.am.max_short       = iface->tx.max_short;
    attr->cap.am.max_bcopy       = max_payload;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = max_payload;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = ucs_min(max_payload, 128);
    attr->cap.am.max_iov         = QPX_UD_MAX_IOV;

    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT |
                      UCT_IFACE_FLAG_AM_BCOPY |
                      UCT_IFACE_FLAG_AM_ZCOPY |
                      UCT_IFACE_FLAG_PENDING |
                      UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_CONNECT_TO_EP |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK;
    if (iface->async.ops != NULL) {
        /* AM handlers flagged async are called from the async timer */
        attr->cap.flags |= UCT_IFACE_FLAG_CB_ASYNC;
    }

    attr->device_addr_len   = qpx_device_addr_size(iface->port);
    attr->iface_addr_len    = sizeof(qpx_ud_iface_addr_t);
    attr->ep_addr_len       = sizeof(qpx_ud_ep_addr_t);
    attr->max_conn_priv     = 0;
    attr->latency.c         = iface->port->latency + 200e-9;
    attr->latency.m         = 0;
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared  = iface->port->bandwidth;
    attr->overhead          = 100e-9;
    attr->priority          = 0;
    return UCS_OK;
}

static ucs_status_t qpx_ud_iface_get_device_address(uct_iface_h tl_iface,
                                                    uct_device_addr_t *addr)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    qpx_device_addr_t full;

    qpx_device_addr_pack(iface->port, &full);
    memcpy(addr, &full, qpx_device_addr_size(iface->port));
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

static int qpx_ud_iface_is_reachable(const uct_iface_h tl_iface,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_iface_addr_t *iface_addr)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);

    (void)iface_addr;
    return (dev_addr != NULL) &&
           qpx_device_addr_is_reachable(iface->port,
                                        (const qpx_device_addr_t*)dev_addr);
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

static ucs_status_t qpx_ud_ep_invalidate(uct_ep_h ep, unsigned flags)
{
    (void)ep;
    (void)flags;
    return UCS_ERR_UNSUPPORTED;
}

static void qpx_ud_iface_close(uct_iface_h tl_iface);

static uct_iface_ops_t qpx_ud_iface_ops = {
    .ep_am_short              = qpx_ud_ep_am_short,
    .ep_am_short_iov          = uct_base_ep_am_short_iov,
    .ep_am_bcopy              = qpx_ud_ep_am_bcopy,
    .ep_am_zcopy              = qpx_ud_ep_am_zcopy,
    .ep_pending_add           = qpx_ud_ep_pending_add,
    .ep_pending_purge         = qpx_ud_ep_pending_purge,
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
    .iface_close              = qpx_ud_iface_close,
    .iface_query              = qpx_ud_iface_query,
    .iface_get_device_address = qpx_ud_iface_get_device_address,
    .iface_get_address        = qpx_ud_iface_get_address,
    .iface_is_reachable       = qpx_ud_iface_is_reachable
};

static uct_iface_internal_ops_t qpx_ud_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = qpx_ud_iface_vfs_refresh,
    .ep_query            = qpx_ud_ep_query,
    .ep_invalidate       = qpx_ud_ep_invalidate
};

static void qpx_ud_iface_send_desc_init(uct_iface_h tl_iface, void *obj,
                                        uct_mem_h memh)
{
    qpx_ud_send_desc_t *desc = obj;
    qpx_mem_t *mem           = memh;

    (void)tl_iface;
    desc->lkey = mem->mr->lkey;
}

static void qpx_ud_iface_recv_desc_init(uct_iface_h tl_iface, void *obj,
                                        uct_mem_h memh)
{
    qpx_ud_recv_desc_t *rdesc = obj;
    qpx_mem_t *mem            = memh;

    (void)tl_iface;
    rdesc->lkey = mem->mr->lkey;
}

static ucs_status_t qpx_ud_iface_create_qp(qpx_ud_iface_t *iface,
                                           const qpx_ud_iface_config_t *config,
                                           unsigned tx_len)
{
    struct ibv_srq_init_attr srq_attr;
    struct ibv_qp_init_attr init_attr;
    qpx_qp_connect_attr_t conn;
    ucs_status_t status;

    if (config->srq) {
        memset(&srq_attr, 0, sizeof(srq_attr));
        srq_attr.attr.max_wr  = iface->rx.queue_len;
        srq_attr.attr.max_sge = 1;
        iface->srq = ibv_create_srq(iface->md->pd, &srq_attr);
        if (iface->srq == NULL) {
            ucs_error("qpx_ud: ibv_create_srq(%u) on %s failed: %m",
                      iface->rx.queue_len, iface->md->dev.name);
            return UCS_ERR_IO_ERROR;
        }
        /* ibv_create_srq(3): max_wr now holds what was granted */
        iface->rx.queue_len = ucs_min(iface->rx.queue_len,
                                      srq_attr.attr.max_wr);
    }

    /* Caps above the device's: base retries within its limits (a device
     * that refuses them) or takes what it grants (one that clamps), then
     * with smaller inline sizes; the granted caps are read back */
    memset(&init_attr, 0, sizeof(init_attr));
    init_attr.send_cq             = iface->send_cq;
    init_attr.recv_cq             = iface->recv_cq;
    init_attr.qp_type             = IBV_QPT_UD;
    init_attr.srq                 = iface->srq;
    init_attr.cap.max_send_wr     = tx_len;
    /* ibv_create_qp(3): max_recv_* are ignored with an SRQ */
    init_attr.cap.max_recv_wr     = (iface->srq != NULL) ? 0 :
                                    iface->rx.queue_len;
    init_attr.cap.max_send_sge    = 1 + QPX_UD_MAX_IOV;
    init_attr.cap.max_recv_sge    = 1;
    init_attr.cap.max_inline_data = 128;
    status = qpx_qp_create(iface->md->pd, &iface->md->dev, &init_attr,
                           &iface->qp);
    if (status != UCS_OK) {
        ucs_error("qpx_ud: no UD QP on %s (send queue %u, receive queue %u)",
                  iface->md->dev.name, tx_len, iface->rx.queue_len);
        goto err_destroy_srq;
    }
    if (iface->srq == NULL) {
        iface->rx.queue_len = ucs_min(iface->rx.queue_len,
                                      init_attr.cap.max_recv_wr);
    }
    iface->tx.max_inline = init_attr.cap.max_inline_data;
    iface->tx.available  = ucs_min(init_attr.cap.max_send_wr, tx_len);
    /* At most half the queue unsignaled: the other half always has a
     * completion coming that returns the slots */
    iface->tx.moderation = ucs_min(config->tx_moderation,
                                   iface->tx.available / 2);
    iface->tx.unsignaled = 0;
    iface->tx.signaled   = 0;

    /* RESET -> INIT (Q_Key) -> RTR -> RTS through base's lifecycle */
    memset(&conn, 0, sizeof(conn));
    status = qpx_qp_to_init(iface->qp, iface->port_num, 0, QPX_UD_QKEY);
    if (status == UCS_OK) {
        status = qpx_qp_to_rtr(iface->qp, &conn);
    }
    if (status == UCS_OK) {
        status = qpx_qp_to_rts(iface->qp, &conn);
    }
    if (status != UCS_OK) {
        goto err_destroy;
    }

    return UCS_OK;

err_destroy:
    ibv_destroy_qp(iface->qp);
err_destroy_srq:
    if (iface->srq != NULL) {
        ibv_destroy_srq(iface->srq);
        iface->srq = NULL;
    }
    return status;
}

static ucs_status_t qpx_ud_iface_init_config(qpx_ud_iface_t *iface,
                                             const qpx_ud_iface_config_t *config)
{
    qpx_ud_rel_config_t *rel = &iface->rel_config;

    rel->window       = config->window;
    rel->rto_init     = config->rto * 1e9;
    rel->rto_max      = config->rto_max * 1e9;
    rel->backoff      = config->backoff;
    rel->peer_timeout = config->timeout * 1e9;
    rel->nak_holdoff  = rel->rto_init / 4;
    rel->probe_time   = rel->rto_init / 4;
    iface->tick       = ucs_max(config->timer_tick * 1e9, 1000);
    if ((config->tx_moderation < 1) ||
        (config->tx_moderation > QPX_UD_TX_MODERATION_MAX)) {
        ucs_error("qpx_ud: TX_MODERATION must be 1..%d",
                  QPX_UD_TX_MODERATION_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->tx_queue_len < 2) || (config->rx_queue_len < 2)) {
        ucs_error("qpx_ud: TX_QUEUE_LEN and RX_QUEUE_LEN must be at least 2");
        return UCS_ERR_INVALID_PARAM;
    }
    return qpx_ud_rel_config_check(rel);
}

static ucs_status_t qpx_ud_iface_open(uct_md_h uct_md, uct_worker_h worker,
                                      const uct_iface_params_t *params,
                                      const uct_iface_config_t *tl_config,
                                      uct_iface_h *iface_p)
{
    const qpx_ud_iface_config_t *config = ucs_derived_of(tl_config,
                                                         qpx_ud_iface_config_t);
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);
    uct_iface_mpool_config_t mp_config;
    qpx_ud_iface_t *iface;
    ucs_status_t status;
    unsigned tx_len;
    size_t mtu;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx_ud: only device open mode is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    iface = calloc(1, sizeof(*iface));
    if (iface == NULL) {
        ucs_error("qpx_ud: failed to allocate an interface");
        return UCS_ERR_NO_MEMORY;
    }

    status = UCS_CLASS_INIT(uct_base_iface_t, &iface->super, &qpx_ud_iface_ops,
                            &qpx_ud_iface_internal_ops, uct_md, worker, params,
                            tl_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    iface->md = md;
    status    = qpx_device_parse_port(&md->dev, params->mode.device.dev_name,
                                      &iface->port_num);
    if (status != UCS_OK) {
        goto err_cleanup_base;
    }

    /* Its CQs and QP report through the device's async events */
    status = qpx_device_events_start(&md->dev);
    if (status != UCS_OK) {
        goto err_cleanup_base;
    }

    iface->port = qpx_device_port(&md->dev, iface->port_num);
    status      = qpx_ud_iface_init_config(iface, config);
    if (status != UCS_OK) {
        goto err_cleanup_base;
    }

    mtu                   = qpx_device_mtu_bytes(iface->port->attr.active_mtu);
    iface->tx.max_payload = mtu - sizeof(qpx_ud_hdr_t);
    iface->tx.max_short   = ucs_min(iface->tx.max_payload, 256) -
                            sizeof(uint64_t);
    iface->tx.ack_thresh  = ucs_max(config->window / 2, 1);
    iface->rx.ack_thresh  = ucs_max(ucs_min(config->ack_thresh,
                                            config->window / 2), 1);
    iface->rx.buf_len     = QPX_UD_GRH_LEN + mtu;
    iface->rx.ooo_capacity = 0;
    if (config->rx_reorder > 0) {
        iface->rx.ooo_capacity = 1;
        while (iface->rx.ooo_capacity < ucs_min(config->rx_reorder,
                                                QPX_UD_REL_MAX_WINDOW)) {
            iface->rx.ooo_capacity *= 2;
        }
    }
    iface->rx.headroom    = (params->field_mask &
                             UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                            params->rx_headroom : 0;
    iface->rx.hdr_room    = ucs_align_up(ucs_max(iface->rx.headroom,
                                                 QPX_UD_GRH_LEN +
                                                 sizeof(qpx_ud_hdr_t)), 8);
    iface->rx.queue_len   = config->rx_queue_len;
    iface->print_stats    = config->print_stats;
    iface->conn.half_open = 0;
    iface->conn.max_half_open = config->max_half_open;
    iface->rx.release.cb  = qpx_ud_iface_release_desc;
    iface->now            = qpx_ud_time_ns();
    iface->next_tick      = iface->now + iface->tick;
    iface->keepalive.interval = config->keepalive_interval * 1e9;
    iface->keepalive.next     = iface->now + iface->keepalive.interval;
    iface->eps.free_head  = UINT32_MAX;
    kh_init_inplace(qpx_ud_peers, &iface->peers);
    ucs_list_head_init(&iface->active_eps);
    ucs_list_head_init(&iface->ctl_eps);
    ucs_list_head_init(&iface->failed_eps);
    ucs_list_head_init(&iface->discs);
    ucs_arbiter_init(&iface->tx.pending);

    /* Queues within what the device advertises (a CQ entry per work
     * request); the QP and SRQ may grant less still */
    tx_len = ucs_min(config->tx_queue_len,
                     ucs_min((unsigned)md->dev.attr.max_qp_wr,
                             (unsigned)md->dev.attr.max_cqe));
    iface->rx.queue_len = ucs_min(iface->rx.queue_len,
                                  ucs_min((unsigned)(config->srq ?
                                                     md->dev.attr.max_srq_wr :
                                                     md->dev.attr.max_qp_wr),
                                          (unsigned)md->dev.attr.max_cqe));
    if ((tx_len != config->tx_queue_len) ||
        (iface->rx.queue_len != config->rx_queue_len)) {
        ucs_debug("qpx_ud: %s limits the send queue to %u and the receive "
                  "queue to %u (asked %u and %u)", md->dev.name, tx_len,
                  iface->rx.queue_len, config->tx_queue_len,
                  config->rx_queue_len);
    }

    iface->send_cq = ibv_create_cq(md->dev.ctx, tx_len, NULL, NULL, 0);
    if (iface->send_cq == NULL) {
        ucs_error("qpx_ud: ibv_create_cq(%u) failed: %m", tx_len);
        status = UCS_ERR_IO_ERROR;
        goto err_cleanup_base;
    }

    iface->recv_cq = ibv_create_cq(md->dev.ctx, iface->rx.queue_len, NULL,
                                   NULL, 0);
    if (iface->recv_cq == NULL) {
        ucs_error("qpx_ud: ibv_create_cq(%u) failed: %m", iface->rx.queue_len);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_send_cq;
    }

    status = qpx_ud_iface_create_qp(iface, config, tx_len);
    if (status != UCS_OK) {
        goto err_destroy_recv_cq;
    }

    mp_config.max_bufs  = config->max_tx_bufs;
    /* ucs_mpool refuses a chunk larger than its maximum */
    mp_config.bufs_grow = ucs_min(256, config->max_tx_bufs);
    status = uct_iface_mpool_init(&iface->super, &iface->tx.mp,
                                  sizeof(qpx_ud_send_desc_t) + mtu, 0,
                                  64, &mp_config, 256,
                                  qpx_ud_iface_send_desc_init, "qpx_ud_tx");
    if (status != UCS_OK) {
        goto err_destroy_qp;
    }

    /* One registration for the whole receive queue */
    mp_config.max_bufs  = UINT_MAX;
    mp_config.bufs_grow = ucs_max(256, iface->rx.queue_len);
    status = uct_iface_mpool_init(&iface->super, &iface->rx.mp,
                                  sizeof(qpx_ud_recv_desc_t) +
                                  iface->rx.hdr_room + mtu, 0,
                                  64, &mp_config,
                                  mp_config.bufs_grow,
                                  qpx_ud_iface_recv_desc_init, "qpx_ud_rx");
    if (status != UCS_OK) {
        goto err_cleanup_tx_mp;
    }

    iface->rx.available  = iface->rx.queue_len;
    iface->rx.post_batch = ucs_max(ucs_min(QPX_UD_RX_BATCH,
                                           iface->rx.queue_len / 4), 1);
    qpx_ud_iface_post_recv_init(iface);
    qpx_ud_iface_post_recv(iface);
    if (iface->rx.available == iface->rx.queue_len) {
        ucs_error("qpx_ud: could not post any receive buffer");
        status = UCS_ERR_NO_MEMORY;
        goto err_cleanup_rx_mp;
    }

    status = qpx_ud_iface_async_init(iface, config);
    if (status != UCS_OK) {
        goto err_cleanup_rx_mp;
    }

    ucs_debug("qpx_ud: iface %p on %s qpn 0x%x inline %u mtu %zu", iface,
              params->mode.device.dev_name, iface->qp->qp_num,
              iface->tx.max_inline, mtu);
    *iface_p = &iface->super.super;
    return UCS_OK;

err_cleanup_rx_mp:
    ucs_mpool_cleanup(&iface->rx.mp, 0);
err_cleanup_tx_mp:
    ucs_mpool_cleanup(&iface->tx.mp, 0);
err_destroy_qp:
    ibv_destroy_qp(iface->qp);
    if (iface->srq != NULL) {
        ibv_destroy_srq(iface->srq);
    }
err_destroy_recv_cq:
    ibv_destroy_cq(iface->recv_cq);
err_destroy_send_cq:
    ibv_destroy_cq(iface->send_cq);
err_cleanup_base:
    kh_destroy_inplace(qpx_ud_peers, &iface->peers);
    UCS_CLASS_CLEANUP_CALL(&uct_base_iface_t_class, &iface->super);
err_free:
    free(iface);
    return status;
}

static void qpx_ud_iface_close(uct_iface_h tl_iface)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    qpx_ud_iface_stats_t *s = &iface->stats;

    uct_base_iface_progress_disable(tl_iface, UCT_PROGRESS_SEND |
                                    UCT_PROGRESS_RECV);
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
                "eps_failed=%lu eps_reclaimed=%lu eps=%u\n",
                s->rx_short, s->rx_bad_type, s->rx_unknown_ep, s->rx_stale,
                s->rx_dup, s->rx_ahead, s->rx_bad_status, s->rx_async_full,
                s->rx_spoofed, s->rx_conn_refused,
                s->tx_resent, s->tx_timeouts, s->tx_probe_resends,
                s->tx_ack_reqs, s->eps_failed, s->eps_reclaimed,
                iface->eps.count);
    }

    qpx_ud_ep_free_all(iface);
    qpx_ud_iface_discs_cleanup(iface);
    qpx_ud_iface_async_cleanup(iface);
    ibv_destroy_qp(iface->qp);
    if (iface->srq != NULL) {
        ibv_destroy_srq(iface->srq);
    }
    ibv_destroy_cq(iface->recv_cq);
    ibv_destroy_cq(iface->send_cq);
    /* Buffers the device held when the QP went away are not leaks */
    ucs_mpool_cleanup(&iface->rx.mp, 0);
    ucs_mpool_cleanup(&iface->tx.mp, 0);
    qpx_ud_iface_peers_cleanup(iface);
    ucs_arbiter_cleanup(&iface->tx.pending);
    free(iface->eps.table);
    free(iface->eps.gen);
    free(iface->eps.free_next);
    UCS_CLASS_CLEANUP_CALL(&uct_base_iface_t_class, &iface->super);
    free(iface);
}

static ucs_status_t qpx_ud_query_devices(uct_md_h uct_md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);

    return qpx_device_query_tl_resources(&md->dev, devices_p, num_devices_p);
}

uct_tl_t qpx_ud_tl = {
    .name          = "qpx_ud",
    .query_devices = qpx_ud_query_devices,
    .iface_open    = qpx_ud_iface_open,
    .config        = {
        .name   = "qpx_ud",
        .prefix = "QPX_UD_",
        .table  = qpx_ud_iface_config_table,
        .size   = sizeof(qpx_ud_iface_config_t),
    },
};
