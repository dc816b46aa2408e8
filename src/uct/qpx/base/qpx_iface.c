/*
 * qpx interface core: configuration, send and receive buffer pools, query;
 * the CQs and receive queue are qpx_iface_queues.c, the QP pool and map,
 * and what the device ran out of, qpx_iface_qp.c, the receive side
 * qpx_iface_rx.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface.h"
#include "qpx_param.h"
#include "qpx_component.h"

#include <ucs/qpx_config.h>

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <string.h>


/* Buffers start on a cache line */
#define QPX_IFACE_DESC_ALIGN 64


ucs_config_field_t qpx_iface_config_table[] = {
    /* UCT's common interface options (MAX_SHORT, MAX_BCOPY, ALLOC,
     * FAILURE, MAX_NUM_EPS) under their UCT names, as every UCX transport
     * embeds them: uct_config_modify() and uct_config_get() address them
     * so (UCX's tools and gtest do). Unnamed, UCX's parser reads them as
     * UCX_<NAME> (UCT's generic default for every transport), then
     * UCX_QPX_<NAME>, then UCX_QPX_<TL>_<NAME>. qpx's own options below
     * stay under QPX_ only (the table that embeds this one is named so):
     * UCX_SEG_SIZE is UCP's own knob. */
    {"", "", NULL, ucs_offsetof(qpx_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Size of a receive buffer and of a bcopy send buffer, including the "
     "transport header. Active messages up to this size are accepted.",
     ucs_offsetof(qpx_iface_config_t, seg_size), QPX_CONFIG_TYPE_MEMUNITS},

    {"TX_QUEUE_LEN", "256",
     "Send work requests per QP (the device may grant fewer).",
     ucs_offsetof(qpx_iface_config_t, tx.queue_len), QPX_CONFIG_TYPE_UINT},

    {"TX_CQ_LEN", "4096",
     "Entries of the interface's send completion queue.",
     ucs_offsetof(qpx_iface_config_t, tx.cq_len), QPX_CONFIG_TYPE_UINT},

    {"TX_MAX_INLINE", "128",
     "Inline data requested per send; the granted size (read back from the "
     "QP) bounds the short operations.",
     ucs_offsetof(qpx_iface_config_t, tx.max_inline), QPX_CONFIG_TYPE_MEMUNITS},

    {"TX_MODERATION", "32",
     "Request a send completion every N sends (operations that need a "
     "completion are always signalled).",
     ucs_offsetof(qpx_iface_config_t, tx.moderation), QPX_CONFIG_TYPE_UINT},

    {"TX_MAX_BUFS", "-1",
     "Maximal number of send bounce buffers (-1: unlimited).",
     ucs_offsetof(qpx_iface_config_t, tx.mp.max_bufs), UCS_CONFIG_TYPE_INT},

    {"TX_BUFS_GROW", "128",
     "Send bounce buffers allocated at a time.",
     ucs_offsetof(qpx_iface_config_t, tx.mp.bufs_grow), QPX_CONFIG_TYPE_UINT},

    {"RX_QUEUE_LEN", "1024",
     "Receive buffers posted to the interface's shared receive queue.",
     ucs_offsetof(qpx_iface_config_t, rx.queue_len), QPX_CONFIG_TYPE_UINT},

    {"RX_QUEUE_MAX", "auto",
     "Receive buffers the shared receive queue may grow to when the device "
     "reports it running low (the SRQ limit event: a burst the progress "
     "falls behind); auto: 4 times RX_QUEUE_LEN. At most RX_QUEUE_LEN: it "
     "does not grow.",
     ucs_offsetof(qpx_iface_config_t, rx.queue_max), QPX_CONFIG_TYPE_ULUNITS},

    {"RX_MAX_BATCH", "16",
     "Receive buffers due before they are reposted (one post, after a poll\n"
     "of the CQ).",
     ucs_offsetof(qpx_iface_config_t, rx.max_batch), QPX_CONFIG_TYPE_UINT},

    {"RX_MAX_BUFS", "-1",
     "Maximal number of receive buffers (-1: unlimited).",
     ucs_offsetof(qpx_iface_config_t, rx.mp.max_bufs), UCS_CONFIG_TYPE_INT},

    {"RX_BUFS_GROW", "256",
     "Receive buffers allocated at a time.",
     ucs_offsetof(qpx_iface_config_t, rx.mp.bufs_grow), QPX_CONFIG_TYPE_UINT},

    {"QP_POOL_SIZE", "16",
     "QPs kept in RESET for reuse by new endpoints.",
     ucs_offsetof(qpx_iface_config_t, qp_pool_size), QPX_CONFIG_TYPE_UINT},

    {"DIRECT", "auto",
     "The direct path: post WQEs and read CQEs in the device's own queues "
     "(mlx5 devices, through mlx5dv), without a verbs call per operation. "
     "auto: where the device has them (qpx_rc, qpx_dc and qpx_ud; an "
     "interface that receives from another's SRQ, as a sub-interface of the "
     "qpx transport does, only where that one is direct), else verbs; on: "
     "fail to open without it; off: verbs.",
     ucs_offsetof(qpx_iface_config_t, direct), UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {NULL}
};


static void qpx_iface_desc_init(uct_iface_h tl_iface, void *obj,
                                uct_mem_h memh)
{
    qpx_desc_t *desc = obj;
    qpx_mem_t *mem   = memh;

    desc->lkey  = mem->mr->lkey;
    desc->flags = 0;
}


/* A receive buffer: its key, then its WR (qpx_rx_desc_t) */
static void qpx_iface_rx_desc_init(uct_iface_h tl_iface, void *obj,
                                   uct_mem_h memh)
{
    qpx_iface_desc_init(tl_iface, obj, memh);
    qpx_iface_rx_desc_wr_init(ucs_derived_of(tl_iface, qpx_iface_t), obj);
}


static void qpx_iface_release_desc(uct_recv_desc_t *self, void *user_desc)
{
    qpx_iface_t *iface = ucs_container_of(self, qpx_iface_t, release_desc);
    qpx_desc_t *desc   = UCS_PTR_BYTE_OFFSET(user_desc,
                                   -(ptrdiff_t)iface->config.rx_headroom_offset);

    /* The SRQ slot of a kept buffer was refilled when it was kept */
    qpx_iface_rx_desc_put(iface, desc);
}


/* The hints' defaults: an SRQ of its own, errors logged as errors, a
 * complete interface */
static const qpx_iface_hints_t qpx_iface_hints_default = {
    .rx_owner        = NULL,
    .exhausted_level = UCS_LOG_LEVEL_ERROR,
    .attr_only       = 0,
    .exhausted_what  = NULL
};


ucs_status_t qpx_iface_open_hinted(uct_md_h md, uct_worker_h worker,
                                   const uct_iface_params_t *params,
                                   const uct_iface_config_t *config,
                                   const qpx_iface_hints_t *hints,
                                   uct_iface_h *iface_p)
{
    const qpx_transport_open_t *t;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx interfaces open only in device mode");
        return UCS_ERR_UNSUPPORTED;
    }
    for (t = qpx_transport_opens; t->tl_name != NULL; ++t) {
        if (!strcmp(t->tl_name, params->mode.device.tl_name)) {
            return t->open(md, worker, params, config, hints, iface_p);
        }
    }
    ucs_error("qpx: no transport %s", params->mode.device.tl_name);
    return UCS_ERR_NO_DEVICE;
}


ucs_status_t qpx_iface_open_core(uct_md_h md, uct_worker_h worker,
                                 const uct_iface_params_t *params,
                                 const uct_iface_config_t *config,
                                 const qpx_iface_hints_t *hints,
                                 uct_iface_h *iface_p, qpx_iface_t **core_p)
{
    ucs_status_t status;

    status = qpx_iface_open_hinted(md, worker, params, config, hints,
                                   iface_p);
    if (status == UCS_OK) {
        *core_p = ucs_derived_of(*iface_p, qpx_iface_t);
    }
    return status;
}


ucs_status_t qpx_iface_open_default(uct_md_h md, uct_worker_h worker,
                                    const uct_iface_params_t *params,
                                    const uct_iface_config_t *config,
                                    uct_iface_h *iface_p)
{
    return qpx_iface_open_hinted(md, worker, params, config, NULL, iface_p);
}


void qpx_iface_query(qpx_iface_t *iface, uct_iface_attr_t *iface_attr)
{
    uct_base_iface_query(&iface->super, iface_attr);
    qpx_ucx_iface_attr_fixup(iface_attr);

    iface_attr->device_addr_len = qpx_device_addr_size(iface->port);
    iface_attr->iface_addr_len  = 0;
    iface_attr->max_num_eps     = iface->super.config.max_num_eps;
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = iface->port->bandwidth;
    iface_attr->latency         = ucs_linear_func_make(iface->port->latency,
                                                       0);
    iface_attr->overhead        = QPX_IFACE_OVERHEAD;
    iface_attr->priority        = 0;
}


ucs_status_t qpx_iface_get_device_address(uct_iface_h tl_iface,
                                          uct_device_addr_t *addr)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);

    qpx_device_addr_pack(iface->port, addr);
    return UCS_OK;
}


int qpx_iface_is_reachable(const uct_iface_h tl_iface,
                           const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);
    qpx_device_addr_t addr;

    if (dev_addr == NULL) {
        return 0;
    }
    qpx_device_addr_unpack(dev_addr, &addr);
    return qpx_device_addr_is_reachable(iface->port, &addr);
}


ucs_status_t qpx_iface_query_devices(uct_md_h uct_md,
                                     uct_tl_device_resource_t **tl_devices_p,
                                     unsigned *num_tl_devices_p)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);

    return qpx_device_query_tl_resources(&md->dev, tl_devices_p,
                                         num_tl_devices_p);
}


/* The configuration's values that cannot work, refused with a message */
static ucs_status_t qpx_iface_config_check(const qpx_iface_config_t *config,
                                           const qpx_iface_init_attr_t *init_attr,
                                           size_t seg_size)
{
    if ((seg_size <= init_attr->rx_hdr_len) ||
        (config->tx.queue_len == 0) || (config->rx.queue_len == 0)) {
        ucs_error("invalid qpx configuration: seg_size %zu queue lengths "
                  "tx %u rx %u", seg_size, config->tx.queue_len,
                  config->rx.queue_len);
        return UCS_ERR_INVALID_PARAM;
    }
    /* MAX_BUFS are read as int (-1: unlimited) into UCX's unsigned field */
    if ((config->tx.mp.max_bufs == 0) || ((int)config->tx.mp.max_bufs < -1)) {
        ucs_error("%s: TX_MAX_BUFS %d must be -1 (unlimited) or at least 1",
                  init_attr->tl_name, (int)config->tx.mp.max_bufs);
        return UCS_ERR_INVALID_PARAM;
    }
    if (((int)config->rx.mp.max_bufs < -1) ||
        (config->rx.mp.max_bufs < config->rx.queue_len)) {
        /* else the receive queue could never be full: a job whose messages
         * AM handlers keep (UCP's unexpected ones) ran out of posted
         * buffers, and its peers' sends waited or failed for ever */
        ucs_error("%s: RX_MAX_BUFS %d must be -1 (unlimited) or at least "
                  "RX_QUEUE_LEN (%u)", init_attr->tl_name,
                  (int)config->rx.mp.max_bufs, config->rx.queue_len);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->tx.cq_len < 2) {
        /* else the send CQ had no entry for a send, one being kept for the
         * errors of a flushed send queue: every send waited forever */
        ucs_error("%s: TX_CQ_LEN %u must be at least 2, one completion "
                  "being kept for a flushed send queue", init_attr->tl_name,
                  config->tx.cq_len);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config->tx.queue_len <= init_attr->tx_reserve) {
        /* else no operation would ever find a free send slot: every send
         * returned NO_RESOURCE and the user waited forever */
        ucs_error("%s: TX_QUEUE_LEN %u must be above %u, the send slots "
                  "kept for flush and flow control", init_attr->tl_name,
                  config->tx.queue_len, init_attr->tx_reserve);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}


/* The interface's sizes and offsets (its receive buffers' layout), the
 * transport's settings and the hints, and the state that starts empty */
static void qpx_iface_layout_init(qpx_iface_t *self,
                                  const qpx_iface_config_t *config,
                                  const qpx_iface_init_attr_t *init_attr,
                                  const qpx_iface_hints_t *hints,
                                  size_t seg_size, size_t rx_headroom)
{
    self->port                      = qpx_device_port(&self->md->dev,
                                                      self->port_num);
    self->config.seg_size           = seg_size;
    self->config.rx_headroom        = rx_headroom;
    /* Aligned for the user's headroom and the release pointer before it */
    self->config.rx_payload_offset  = ucs_align_up(sizeof(qpx_rx_desc_t) +
                                                   init_attr->rx_priv_len +
                                                   ucs_max(init_attr->rx_hdr_len,
                                                           sizeof(void*) +
                                                           rx_headroom), 8);
    self->config.rx_hdr_offset      = self->config.rx_payload_offset -
                                      init_attr->rx_hdr_len;
    self->config.rx_hdr_len         = init_attr->rx_hdr_len;
    self->config.rx_priv_len        = init_attr->rx_priv_len;
    self->config.rx_headroom_offset = self->config.rx_payload_offset -
                                      rx_headroom;
    self->config.tx_priv_len        = init_attr->tx_priv_len;
    self->config.tx_queue_len       = config->tx.queue_len;
    self->config.tx_reserve         = init_attr->tx_reserve;
    self->config.tl_name            = init_attr->tl_name;
    self->config.direct             = config->direct;
    self->config.tx_moderation      = ucs_max(1, ucs_min(config->tx.moderation,
                                                config->tx.queue_len / 2));
    self->config.max_inline         = config->tx.max_inline;
    self->config.max_send_sge       = init_attr->max_send_sge;
    self->config.access_flags       = init_attr->access_flags;
    self->release_desc.cb           = qpx_iface_release_desc;
    self->rx.batch                  = ucs_max(1, config->rx.max_batch);
    self->qp_caps_granted           = 0;
    self->exhausted_level           = hints->exhausted_level;
    self->exhausted_what            = hints->exhausted_what;
    self->attr_only                 = hints->attr_only;
    self->rx.qp                     = NULL;
    self->rx.low                    = 0;
    self->rx.limit_hit              = 0;
    self->rx.grows                  = 0;
    self->rx.starved                = 0;
    self->rx.am_flags               = UCT_CB_PARAM_FLAG_DESC;
    self->rx.src                    = NULL;
    self->rx.src_qp_num             = 0;
    self->rx.src_want               = 0;
    self->rx_owner                  = NULL;
    self->rx_mp_locked              = 0;
}


/* What every QP of the interface is created with (qpx_iface_qp_get) */
static void qpx_iface_qp_attr_init(qpx_iface_t *self,
                                   const qpx_iface_config_t *config,
                                   const qpx_iface_init_attr_t *init_attr)
{
    memset(&self->qp_init_attr, 0, sizeof(self->qp_init_attr));
    self->qp_init_attr.qp_type          = init_attr->qp_type;
    self->qp_init_attr.send_cq          = self->send_cq;
    self->qp_init_attr.recv_cq          = self->recv_cq;
    self->qp_init_attr.srq              = init_attr->use_srq ? self->srq : NULL;
    self->qp_init_attr.sq_sig_all       = 0;
    self->qp_init_attr.cap.max_send_wr  = config->tx.queue_len;
    self->qp_init_attr.cap.max_send_sge = init_attr->max_send_sge;
    self->qp_init_attr.cap.max_inline_data = config->tx.max_inline;
    if (!init_attr->use_srq) {
        self->qp_init_attr.cap.max_recv_wr  = self->rx.queue_len;
        self->qp_init_attr.cap.max_recv_sge = 1;
    }
}


/* The receive and send buffer pools, and the first chunk of send buffers */
static ucs_status_t qpx_iface_mpools_init(qpx_iface_t *self,
                                          const uct_iface_params_t *params,
                                          const qpx_iface_config_t *config,
                                          const qpx_iface_init_attr_t *init_attr,
                                          size_t am_align,
                                          size_t am_align_offset)
{
    uct_iface_mpool_config_t mp_config;
    ucs_status_t status;
    void *desc;

    /* A chunk holds at least the whole receive queue: the first fill is one
     * registration, not one per RX_BUFS_GROW buffers */
    /* (max_bufs -1 is UINT_MAX) */
    qpx_ucx_iface_mpool_config_init(&mp_config, config->rx.mp.max_bufs,
                                    ucs_min(ucs_max(config->rx.mp.bufs_grow,
                                                    self->rx.queue_len),
                                            config->rx.mp.max_bufs));
    /* Buffers start at QPX_IFACE_DESC_ALIGN, unless the user asks the
     * payload (plus an offset) aligned: then the payload is, and a buffer
     * starts where that puts it (UCX's IB transports do the same) */
    if (params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) {
        am_align_offset += self->config.rx_payload_offset;
    }
    status = uct_iface_mpool_init(&self->super, &self->rx_mp,
                                  self->config.rx_hdr_offset +
                                  self->config.seg_size, am_align_offset,
                                  am_align, &mp_config,
                                  mp_config.bufs_grow,
                                  qpx_iface_rx_desc_init, "qpx_rx_desc");
    if (status != UCS_OK) {
        return status;
    }
    qpx_iface_mp_wrap(self, &self->rx_mp);

    /* ucs_mpool refuses a chunk larger than its maximum */
    qpx_ucx_iface_mpool_config_init(&mp_config, config->tx.mp.max_bufs,
                                    ucs_min(config->tx.mp.bufs_grow,
                                            config->tx.mp.max_bufs));
    status = uct_iface_mpool_init(&self->super, &self->tx_mp,
                                  init_attr->tx_priv_len +
                                  self->config.seg_size, 0,
                                  QPX_IFACE_DESC_ALIGN, &mp_config,
                                  mp_config.bufs_grow,
                                  qpx_iface_desc_init, "qpx_tx_desc");
    if (status != UCS_OK) {
        goto err_rx_mp_cleanup;
    }
    qpx_iface_mp_wrap(self, &self->tx_mp);

    /* The first chunk of send buffers now: an interface whose memory cannot
     * be registered (the device's MR limit) fails to open with that error,
     * instead of refusing every send later with no end (UCP retries a
     * UCS_ERR_NO_RESOURCE for ever) */
    if (!self->attr_only) {
        desc = ucs_mpool_get(&self->tx_mp);
        if (desc == NULL) {
            ucs_log(self->exhausted_level, "qpx iface %s:%d: no send buffer "
                    "could be allocated and registered", self->md->dev.name,
                    self->port_num);
            status = UCS_ERR_NO_MEMORY;
            goto err_tx_mp_cleanup;
        }
        ucs_mpool_put(desc);
    }
    return UCS_OK;

err_tx_mp_cleanup:
    ucs_mpool_cleanup(&self->tx_mp, 1);
err_rx_mp_cleanup:
    ucs_mpool_cleanup(&self->rx_mp, 1);
    return status;
}


/* The interface's software state before its queues: the receive pool's
 * lock, the pending arbiter, counters, the keepalive timer (none yet) and
 * the QP number map */
static ucs_status_t qpx_iface_state_init(qpx_iface_t *self)
{
    ucs_status_t status;

    status = ucs_spinlock_init(&self->rx_mp_lock, 0);
    if (status != UCS_OK) {
        return status;
    }

    qpx_iface_rx_recycled_reset(self);
    ucs_arbiter_init(&self->arbiter);
    self->pending.ep          = NULL;
    self->pending.async_only  = 0;
    self->backlog.rx_count    = 0;
    self->backlog.tx_count    = 0;
    self->attention           = 0;
    self->keepalive.interval  = 0;
    self->keepalive.timer.fd  = -1;
    self->keepalive.timer.id  = -1;
    self->keepalive.due       = 0;
    ucs_list_head_init(&self->pending.resched);
    kh_init_inplace(qpx_qp_map, &self->qp_map);
    /* the verbs path until a transport makes it direct (qpx_mlx5_iface_init):
     * qpx_ud and interfaces that never ask must read enabled 0 */
    memset(&self->direct, 0, sizeof(self->direct));
    return UCS_OK;
}

static void qpx_iface_state_cleanup(qpx_iface_t *self)
{
    kh_destroy_inplace(qpx_qp_map, &self->qp_map);
    ucs_arbiter_cleanup(&self->arbiter);
    ucs_spinlock_destroy(&self->rx_mp_lock);
}

UCS_CLASS_INIT_FUNC(qpx_iface_t, uct_iface_ops_t *ops,
                    uct_iface_internal_ops_t *internal_ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const qpx_iface_config_t *config,
                    const qpx_iface_init_attr_t *init_attr)
{
    const qpx_iface_hints_t hints = (init_attr->hints != NULL) ?
                                    *init_attr->hints :
                                    qpx_iface_hints_default;
    ucs_status_t status;
    size_t rx_headroom, seg_size, am_align, am_align_offset;
    qpx_job_info_t job;

    /* The job, read (and logged at debug level) once per process when its
     * first interface opens, never at load (qpx_job.c) */
    qpx_job_info_get(&job);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops, internal_ops, md, worker,
                              params, &config->super);

    self->md  = ucs_derived_of(md, qpx_md_t);
    self->ops = init_attr->ops;
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx interfaces open only in device mode");
        return UCS_ERR_UNSUPPORTED;
    }

    status = qpx_device_parse_port(&self->md->dev, params->mode.device.dev_name,
                                   &self->port_num);
    if (status != UCS_OK) {
        return status;
    }

    /* Its CQs and QPs report through the device's async events */
    status = qpx_device_events_start(&self->md->dev);
    if (status != UCS_OK) {
        return status;
    }

    seg_size = (init_attr->seg_size != 0) ? init_attr->seg_size :
                                            config->seg_size;
    status = qpx_iface_config_check(config, init_attr, seg_size);
    if (status != UCS_OK) {
        return status;
    }

    rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                  params->rx_headroom : 0;
    status = qpx_param_am_alignment(params, seg_size, QPX_IFACE_DESC_ALIGN,
                                    &am_align, &am_align_offset);
    if (status != UCS_OK) {
        return status;
    }

    qpx_iface_layout_init(self, config, init_attr, &hints, seg_size,
                          rx_headroom);

    status = qpx_iface_state_init(self);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_iface_create_queues(self, config, init_attr->use_srq,
                                     hints.rx_owner);
    if (status != UCS_OK) {
        goto err_destroy_map;
    }

    qpx_iface_qp_attr_init(self, config, init_attr);
    self->qp_create = (init_attr->qp_create != NULL) ? init_attr->qp_create :
                      qpx_qp_create;
    status = qpx_qp_pool_init(&self->qp_pool, config->qp_pool_size);
    if (status != UCS_OK) {
        goto err_destroy_queues;
    }

    status = qpx_iface_mpools_init(self, params, config, init_attr, am_align,
                                   am_align_offset);
    if (status != UCS_OK) {
        goto err_pool_cleanup;
    }

    ucs_debug("qpx iface %p %s:%d seg %zu rx hdr %zu payload %zu headroom "
              "%zu srq %u", self, self->md->dev.name, self->port_num,
              self->config.seg_size, self->config.rx_hdr_offset,
              self->config.rx_payload_offset, rx_headroom, self->rx.queue_len);
    return UCS_OK;

err_pool_cleanup:
    qpx_qp_pool_cleanup(&self->qp_pool);
err_destroy_queues:
    if ((self->srq != NULL) && (self->rx_owner == NULL)) {
        ibv_destroy_srq(self->srq);
    }
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    qpx_iface_event_cleanup(self);
    ibv_destroy_comp_channel(self->comp_channel);
err_destroy_map:
    qpx_iface_state_cleanup(self);
    return status;
}


UCS_CLASS_CLEANUP_FUNC(qpx_iface_t)
{
    int ret;

    qpx_iface_keepalive_stop(self);
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    qpx_qp_pool_cleanup(&self->qp_pool);

    if ((self->srq != NULL) && (self->rx_owner == NULL)) {
        ret = ibv_destroy_srq(self->srq);
        if (ret != 0) {
            ucs_warn("ibv_destroy_srq() failed: %s", strerror(ret));
        }
    }
    qpx_iface_ack_events(self); /* destroying a CQ waits for its acks */
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    qpx_iface_event_cleanup(self);
    ibv_destroy_comp_channel(self->comp_channel);

    /* Receive buffers posted to the destroyed SRQ are not returned to the
     * pool: leak-check quietly */
    ucs_mpool_cleanup(&self->rx_mp, 0);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    qpx_iface_state_cleanup(self);
}


UCS_CLASS_DEFINE(qpx_iface_t, uct_base_iface_t);
