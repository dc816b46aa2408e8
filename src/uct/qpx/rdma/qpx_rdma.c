/*
 * The RC family's configuration, capabilities, query and connection
 * attributes (qpx_rdma.h), shared by qpx_rc and qpx_dc.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rdma.h"

#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/base/qpx_param.h>
#include <ucs/qpx_config.h>
#include <string.h>


static const char *qpx_rdma_mtu_names[] = {
    [0]                = "default",
    [IBV_MTU_256]      = "256",
    [IBV_MTU_512]      = "512",
    [IBV_MTU_1024]     = "1024",
    [IBV_MTU_2048]     = "2048",
    [IBV_MTU_4096]     = "4096",
    [IBV_MTU_4096 + 1] = NULL
};


ucs_config_field_t qpx_rdma_iface_config_table[] = {
    {"TIMEOUT", "1.0s",
     "Transport retry timeout, per try (as UCX's rc and dc transports): a "
     "request unacknowledged for TIMEOUT is sent again, RETRY_COUNT times, "
     "before its QP fails; a dead peer fails the endpoints with requests on "
     "it after about TIMEOUT x (RETRY_COUNT + 1). Taken to the nearest "
     "IBTA code 4.096 us x 2^n on the log scale, as UCX does (5ms: 4.19 "
     "ms).",
     ucs_offsetof(qpx_rdma_iface_config_t, timeout), QPX_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "Transport retries of a request before its QP fails (0..7), each "
     "after TIMEOUT.",
     ucs_offsetof(qpx_rdma_iface_config_t, retry_count),
     QPX_CONFIG_TYPE_UINT},

    {"RNR_RETRY_COUNT", "7",
     "Retries after receiver-not-ready (0..7, 7: infinite, so that a flood "
     "of messages into a full receive queue slows senders down instead of "
     "failing their QPs).",
     ucs_offsetof(qpx_rdma_iface_config_t, rnr_retry_count),
     QPX_CONFIG_TYPE_UINT},

    {"RNR_TIMEOUT", "1ms",
     "Delay the receiving QP asks for after a receiver-not-ready.",
     ucs_offsetof(qpx_rdma_iface_config_t, rnr_timeout),
     QPX_CONFIG_TYPE_TIME},

    {"PATH_MTU", "default",
     "Path MTU: default (the port's active MTU), 256, 512, 1024, 2048, 4096; "
     "never above the port's active MTU.",
     ucs_offsetof(qpx_rdma_iface_config_t, path_mtu),
     UCS_CONFIG_TYPE_ENUM(qpx_rdma_mtu_names)},

    {"MAX_RD_ATOMIC", "4",
     "Outstanding RDMA reads and atomics per QP (capped by the device).",
     ucs_offsetof(qpx_rdma_iface_config_t, max_rd_atomic),
     QPX_CONFIG_TYPE_UINT},

    {"ATOMICS", "y",
     "Offer the device's 64-bit atomics.",
     ucs_offsetof(qpx_rdma_iface_config_t, atomics), UCS_CONFIG_TYPE_BOOL},

    {"EVENTS", "y",
     "Offer event notification (uct_iface_event_fd_get/arm through a "
     "completion channel of the send and receive CQs). UCP uses a transport "
     "in wakeup mode (ucp_worker_wait) only when it is offered.",
     ucs_offsetof(qpx_rdma_iface_config_t, events), UCS_CONFIG_TYPE_BOOL},

    {"KEEPALIVE_INTERVAL", "2s",
     "Every interval, an endpoint that sent before and nothing since the "
     "last check is probed with a zero-length RDMA write, so that a peer "
     "that died while this side only waits for it fails the endpoint (after "
     "the transport's TIMEOUT) instead of going unnoticed. Runs in "
     "uct_iface_progress. 0: off.",
     ucs_offsetof(qpx_rdma_iface_config_t, keepalive_interval),
     QPX_CONFIG_TYPE_TIME},

    {NULL}
};


ucs_status_t qpx_rdma_iface_caps_init(qpx_rdma_iface_t *rdma_iface,
                                      const qpx_rdma_iface_config_t *config)
{
    const qpx_iface_t *iface = &rdma_iface->super;
    qpx_rdma_caps_t *caps    = &rdma_iface->caps;
    size_t hdr_len           = sizeof(qpx_rdma_hdr_t);

    /* An AM short goes inline as header and payload SGEs; AMs carry a
     * header SGE before the user's iov */
    if ((iface->config.max_send_sge < 2) ||
        (iface->config.max_inline < sizeof(qpx_rdma_am_short_hdr_t))) {
        ucs_log(iface->exhausted_level, "%s: %s:%d granted %u SGEs and %zu "
                "inline bytes, need 2 and %zu", iface->config.tl_name,
                iface->md->dev.name, iface->port_num,
                iface->config.max_send_sge, iface->config.max_inline,
                sizeof(qpx_rdma_am_short_hdr_t));
        return UCS_ERR_UNSUPPORTED;
    }

    caps->max_put_short = iface->config.max_inline;
    caps->am_hdr_len    = hdr_len;
    /* UCT's am.max_short counts the 8-byte header with the payload */
    caps->max_am_short  = iface->config.max_inline - hdr_len;
    caps->max_bcopy     = iface->config.seg_size;
    caps->max_zcopy     = ucs_min(iface->port->attr.max_msg_sz, 1ul << 30);
    /* one SGE is the transport header's */
    caps->max_iov       = iface->config.max_send_sge - 1;
    caps->atomics       = config->atomics &&
                          (iface->md->dev.attr.atomic_cap != IBV_ATOMIC_NONE);
    caps->events        = config->events;
    return UCS_OK;
}


ucs_status_t qpx_rdma_iface_estimate_perf(uct_iface_h tl_iface,
                                          uct_perf_attr_t *perf_attr)
{
    qpx_rdma_iface_t *iface = ucs_derived_of(tl_iface, qpx_rdma_iface_t);
    ucs_status_t status;

    status = uct_base_iface_estimate_perf(tl_iface, perf_attr);
    if (status != UCS_OK) {
        return status;
    }
    /* uct_base_iface_estimate_perf says SIZE_MAX, which won qpx_rc UCP's
     * keepalive lane over qpx_ud: qpx_ud was then only the auxiliary
     * transport, parked and woken for every connection (UCX_QPX_UD_EVENTS=y
     * made a wireup ~1 ms instead of ~0.1), where rc_verbs' 16 left it to
     * qpx_ud (UCX's ud transports say SIZE_MAX) */
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = iface->tl->max_inflight_eps(iface);
    }
    return UCS_OK;
}

ucs_status_t qpx_rdma_iface_query(uct_iface_h tl_iface,
                                  uct_iface_attr_t *iface_attr)
{
    qpx_rdma_iface_t *rdma_iface = ucs_derived_of(tl_iface, qpx_rdma_iface_t);
    const qpx_rdma_tl_t *tl      = rdma_iface->tl;
    qpx_iface_t *iface          = &rdma_iface->super;
    const qpx_rdma_caps_t *caps = &rdma_iface->caps;
    size_t am_max               = iface->config.seg_size - caps->am_hdr_len;

    qpx_iface_query(iface, iface_attr);

    iface_attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT |
                             UCT_IFACE_FLAG_PUT_BCOPY |
                             UCT_IFACE_FLAG_PUT_ZCOPY |
                             UCT_IFACE_FLAG_GET_BCOPY |
                             UCT_IFACE_FLAG_GET_ZCOPY |
                             UCT_IFACE_FLAG_AM_SHORT |
                             UCT_IFACE_FLAG_AM_BCOPY |
                             UCT_IFACE_FLAG_AM_ZCOPY |
                             UCT_IFACE_FLAG_PENDING |
                             UCT_IFACE_FLAG_CB_SYNC |
                             UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                             UCT_IFACE_FLAG_EP_CHECK |
                             QPX_UCX_IFACE_FLAG_INTER_NODE;
    if (qpx_rdma_iface_async_is_on(rdma_iface)) {
        /* Handlers set with UCT_CB_FLAG_ASYNC run from the async timer */
        iface_attr->cap.flags |= UCT_IFACE_FLAG_CB_ASYNC;
    }
    if (caps->events) {
        iface_attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                      UCT_IFACE_FLAG_EVENT_RECV |
                                      UCT_IFACE_FLAG_EVENT_FD;
    }

    iface_attr->cap.put.max_short       = caps->max_put_short;
    iface_attr->cap.put.max_bcopy       = caps->max_bcopy;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = caps->max_zcopy;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = caps->max_iov;

    iface_attr->cap.get.max_bcopy       = caps->max_bcopy;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = caps->max_zcopy;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = caps->max_iov;

    iface_attr->cap.am.max_short        = caps->max_am_short;
    iface_attr->cap.am.max_bcopy        = am_max;
    iface_attr->cap.am.min_zcopy        = 0;
    iface_attr->cap.am.max_zcopy        = am_max;
    iface_attr->cap.am.opt_zcopy_align  = 1;
    iface_attr->cap.am.align_mtu        = 1;
    iface_attr->cap.am.max_hdr          = ucs_min(am_max, QPX_AM_MAX_HDR);
    iface_attr->cap.am.max_iov          = caps->max_iov;

    if (caps->atomics) {
        iface_attr->cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        iface_attr->cap.atomic64.op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD);
        iface_attr->cap.atomic64.fop_flags = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                             UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }

    iface_attr->cap.flags     |= tl->connect_flag;
    iface_attr->iface_addr_len = tl->iface_addr_len;
    iface_attr->ep_addr_len    = tl->ep_addr_len;
    iface_attr->overhead       = tl->overhead;
    iface_attr->latency.c     += tl->latency_c;
    iface_attr->latency.m     += tl->latency_m;
    return UCS_OK;
}


void qpx_rdma_iface_conn_init(qpx_rdma_iface_t *rdma_iface,
                              const qpx_rdma_iface_config_t *config)
{
    const qpx_iface_t *iface    = &rdma_iface->super;
    qpx_qp_connect_attr_t *conn = &rdma_iface->conn;

    const qpx_device_t *dev = &iface->md->dev;
    enum ibv_mtu active_mtu = iface->port->attr.active_mtu;

    conn->path_mtu           = ((config->path_mtu == 0) ||
                                (config->path_mtu > (int)active_mtu)) ?
                               active_mtu : (enum ibv_mtu)config->path_mtu;
    conn->max_rd_atomic      = ucs_max(1, ucs_min(config->max_rd_atomic,
                                       (unsigned)dev->attr.max_qp_rd_atom));
    conn->max_dest_rd_atomic = ucs_max(1, ucs_min(config->max_rd_atomic,
                                       (unsigned)dev->attr.max_qp_init_rd_atom));
    conn->min_rnr_timer      = qpx_qp_rnr_timer_code(config->rnr_timeout);
    conn->timeout            = qpx_qp_timeout_code(config->timeout);
    conn->retry_cnt          = ucs_min(config->retry_count, 7);
    conn->rnr_retry          = ucs_min(config->rnr_retry_count, 7);
}


ucs_status_t qpx_rdma_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    qpx_rdma_iface_t *iface = ucs_derived_of(tl_iface, qpx_rdma_iface_t);

    /* Every endpoint's next request waits for its earlier reads and
     * atomics (UCP's worker fence, hence shmem_fence, comes here) */
    ++iface->fence_beat;
    return UCS_OK;
}


ucs_status_t qpx_rdma_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp)
{
    qpx_rdma_iface_t *iface = ucs_derived_of(tl_iface, qpx_rdma_iface_t);

    return qpx_iface_flush_eps(&iface->super, flags, comp, &iface->eps,
                               iface->tl->ep_list_offset,
                               iface->tl->ops->ep_flush);
}


/* The data operations and progress of the path iface took (qpx_rdma_tl_t's
 * direct_ops), in its copy of the operations, which UCT calls through */
static void qpx_rdma_iface_path_ops_set(qpx_rdma_iface_t *iface)
{
    uct_iface_ops_t *ops        = &iface->super.super.super.ops;
    const uct_iface_ops_t *path = iface->super.direct.enabled ?
                                  iface->tl->direct_ops : iface->tl->ops;

    ucs_assert(path != NULL);
    ops->ep_put_short      = path->ep_put_short;
    ops->ep_put_bcopy      = path->ep_put_bcopy;
    ops->ep_put_zcopy      = path->ep_put_zcopy;
    ops->ep_get_bcopy      = path->ep_get_bcopy;
    ops->ep_get_zcopy      = path->ep_get_zcopy;
    ops->ep_am_short       = path->ep_am_short;
    ops->ep_am_bcopy       = path->ep_am_bcopy;
    ops->ep_am_zcopy       = path->ep_am_zcopy;
    ops->ep_atomic_cswap64 = path->ep_atomic_cswap64;
    ops->ep_atomic64_post  = path->ep_atomic64_post;
    ops->ep_atomic64_fetch = path->ep_atomic64_fetch;
    ops->iface_progress    = path->iface_progress;
    iface->progress        = path->iface_progress;
    iface->path_ops        = path;
}


ucs_status_t qpx_rdma_iface_start(qpx_rdma_iface_t *iface,
                                  const qpx_rdma_iface_config_t *config)
{
    ucs_status_t status;

    /* before the first receive is posted: direct ones go to the mlx5 SRQ */
    if (iface->direct_ok) {
        status = qpx_mlx5_iface_init(&iface->super, NULL);
    } else if (iface->super.config.direct == UCS_CONFIG_ON) {
        ucs_error("%s: DIRECT=on: the transport has no direct path",
                  iface->tl->name);
        status = UCS_ERR_UNSUPPORTED;
    } else {
        status = UCS_OK;
    }
    if (status != UCS_OK) {
        return status;
    }
    qpx_rdma_iface_path_ops_set(iface);
    status = qpx_iface_rx_fill(&iface->super);
    if (status != UCS_OK) {
        qpx_mlx5_iface_cleanup(&iface->super);
        return status;
    }
    status = qpx_iface_keepalive_start(&iface->super,
                                       config->keepalive_interval);
    if (status != UCS_OK) {
        qpx_mlx5_iface_cleanup(&iface->super);
    }
    return status;
}


void qpx_rdma_iface_stop(qpx_rdma_iface_t *iface)
{
    /* no keepalive round may run on the endpoints' state from here on */
    qpx_iface_keepalive_stop(&iface->super);
    qpx_rdma_iface_async_stop(iface);
    if (!ucs_list_is_empty(&iface->eps)) {
        ucs_warn("%s iface %p closed with endpoints",
                 iface->super.config.tl_name, iface);
    }
    qpx_mlx5_iface_cleanup(&iface->super);
}


UCS_CLASS_INIT_FUNC(qpx_rdma_iface_t, const qpx_rdma_tl_t *tl, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const qpx_iface_config_t *config,
                    const qpx_iface_hints_t *hints)
{
    qpx_iface_init_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.ops          = tl->base_ops;
    attr.hints        = hints;
    attr.tl_name      = tl->name;
    attr.qp_type      = tl->qp_type;
    attr.tx_reserve   = tl->tx_reserve;
    attr.access_flags = tl->access_flags;
    attr.qp_create    = tl->qp_create;
    /* What every interface of the family has: one SRQ for all its QPs,
     * the family's header before each active message, base's send
     * descriptor, and up to 8 send SGEs (a header and an iov) */
    attr.rx_hdr_len   = sizeof(qpx_rdma_hdr_t);
    attr.tx_priv_len  = sizeof(qpx_tx_desc_t);
    attr.max_send_sge = 8;
    attr.use_srq      = 1;
    UCS_CLASS_CALL_SUPER_INIT(qpx_iface_t, tl->ops, tl->internal_ops, md,
                              worker, params, config, &attr);

    self->tl         = tl;
    /* a hybrid's sub-interface too: one that shares another's SRQ is
     * direct where that one is (qpx_mlx5_iface_init) */
    self->direct_ok  = tl->direct;
    self->path_ops   = tl->ops; /* the verbs path until started */
    ucs_list_head_init(&self->eps);
    self->tx_unacked = 0;
    self->fence_beat = 0;
    memset(&self->conn, 0, sizeof(self->conn));
    memset(&self->caps, 0, sizeof(self->caps));
    qpx_rdma_iface_async_init(self);
    return UCS_OK;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_rdma_iface_t)
{
}


UCS_CLASS_DEFINE(qpx_rdma_iface_t, qpx_iface_t);
