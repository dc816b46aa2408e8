/*
 * qpx interface: its completion channel, send CQ, receive CQ and receive
 * queue (an SRQ of its own, one shared with another interface, or per-QP
 * receive queues), sized as the device grants them; called by
 * qpx_iface_t's init (qpx_iface.c).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface.h"
#include "qpx_param.h"

#include <ucs/qpx_config.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>


/*
 * The CQ length to ask the device for, for n entries. Providers make a ring
 * of n + 1 rounded up to a power of two and report one entry fewer (mlx5:
 * align_queue_size(cqe + 1), rxe: a queue of cqe + 1 slots), so n a power
 * of two (the defaults: 4096) would double the ring for its last entry.
 * With round_down, one fewer is asked then: half the ring's memory for one
 * entry, which the users of the CQ give up, since they size themselves to
 * what was granted (tx.cq_available, the SRQ's max_wr, rx.queue_len).
 * Without it (a CQ that must hold exactly n) n is asked.
 */
static int qpx_iface_cq_len(unsigned n, int round_down,
                            const qpx_device_t *dev)
{
    /* not below 2: a send CQ keeps one entry (qpx_iface_create_queues) */
    if (round_down && (n > 2) && ucs_is_pow2(n)) {
        --n;
    }
    return ucs_min(n, (unsigned)dev->attr.max_cqe);
}


/* A CQ of the interface on its completion channel, for n completions
 * (qpx_iface_cq_len; one entry for an interface that only reports its
 * attributes); a failure is logged at the level the exhausted resource
 * calls for (qpx_iface_create_failed) */
static ucs_status_t qpx_iface_cq_create(qpx_iface_t *self, unsigned n,
                                        int round_down, struct ibv_cq **cq_p)
{
    const qpx_device_t *dev = &self->md->dev;
    int cq_len = self->attr_only ? 1 : qpx_iface_cq_len(n, round_down, dev);
    ucs_log_level_t level;
    ucs_status_t status;
    struct ibv_cq *cq;

    cq = ibv_create_cq(dev->ctx, cq_len, NULL, self->comp_channel, 0);
    if (cq == NULL) {
        status = qpx_iface_create_failed(self, "CQ", &level);
        ucs_log(level, "ibv_create_cq(%s, %d) failed: %m", dev->name, cq_len);
        return status;
    }
    *cq_p = cq;
    return UCS_OK;
}


/* The completion channel of both CQs (event notification:
 * uct_iface_event_fd_get/arm), non-blocking so that pre-arm can drain it,
 * and the interface's event state */
static ucs_status_t qpx_iface_channel_create(qpx_iface_t *self)
{
    const qpx_device_t *dev = &self->md->dev;
    int flags;

    self->comp_channel = ibv_create_comp_channel(dev->ctx);
    if (self->comp_channel == NULL) {
        ucs_error("ibv_create_comp_channel(%s) failed: %m", dev->name);
        return UCS_ERR_IO_ERROR;
    }
    flags = fcntl(self->comp_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(self->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("fcntl(completion channel fd %d, O_NONBLOCK) failed: %m",
                  self->comp_channel->fd);
        goto err_destroy_channel;
    }

    if (qpx_iface_event_init(self) != UCS_OK) {
        goto err_destroy_channel;
    }
    return UCS_OK;

err_destroy_channel:
    ibv_destroy_comp_channel(self->comp_channel);
    return UCS_ERR_IO_ERROR;
}


/* The send CQ, and the send completions it has room for */
static ucs_status_t qpx_iface_send_cq_create(qpx_iface_t *self,
                                             const qpx_iface_config_t *config)
{
    const qpx_device_t *dev = &self->md->dev;
    ucs_status_t status;

    status = qpx_iface_cq_create(self, config->tx.cq_len, 1, &self->send_cq);
    if (status != UCS_OK) {
        return status;
    }
    if (!self->attr_only && (self->send_cq->cqe < 2)) {
        ucs_error("ibv_create_cq(%s, %u) granted %d entries: a send CQ needs "
                  "2 or more", dev->name, config->tx.cq_len,
                  self->send_cq->cqe);
        ibv_destroy_cq(self->send_cq);
        return UCS_ERR_UNSUPPORTED;
    }
    /* Keep room for the error completions of one flushed send queue */
    self->tx.cq_available = self->send_cq->cqe - 1;
    self->tx.cq_size      = self->tx.cq_available;
    self->tx.desc_limit   = 0;

    return UCS_OK;
}


/*
 * The receive CQ and the receive queue: the SRQ of owner where the
 * interface takes it and their receive buffers agree, else an SRQ of its
 * own, or (use_srq 0) the first QP's receive queue, sized at its creation
 */
static ucs_status_t qpx_iface_rx_queues_create(qpx_iface_t *self,
                                               const qpx_iface_config_t *config,
                                               int use_srq, qpx_iface_t *owner)
{
    const qpx_device_t *dev = &self->md->dev;
    struct ibv_srq_init_attr srq_attr;
    size_t queue_max, posted_max;
    ucs_log_level_t level;
    ucs_status_t status;
    uint32_t srq_max_wr;

    /* The SRQ of the interface offered to this one, where their receive
     * buffers agree */
    if (!use_srq || !qpx_iface_rx_share_layout(self, owner)) {
        if (use_srq && (owner != NULL)) {
            ucs_debug("qpx iface %p: a receive buffer layout or port of its "
                      "own (seg %zu hdr %zu+%zu headroom %zu against seg "
                      "%zu landing at %zu): an SRQ of its own", self,
                      self->config.seg_size, self->config.rx_hdr_offset,
                      self->config.rx_hdr_len, self->config.rx_headroom,
                      owner->config.seg_size, owner->config.rx_hdr_offset);
        }
        owner = NULL;
    }

    /* A completion per receive: the CQ holds every buffer the receive queue
     * may have posted (all of a shared SRQ's, which its owner may grow) */
    queue_max = (config->rx.queue_max == UCS_ULUNITS_AUTO) ?
                4 * (size_t)config->rx.queue_len : config->rx.queue_max;
    queue_max = ucs_max(queue_max, config->rx.queue_len);
    if (owner != NULL) {
        posted_max = ucs_max(owner->rx.queue_max, config->rx.queue_len);
    } else {
        posted_max = use_srq ? queue_max : config->rx.queue_len;
    }
    /* A sharer's CQ holds all the owner may post: exactly posted_max */
    status = qpx_iface_cq_create(self, posted_max, owner == NULL,
                                 &self->recv_cq);
    if (status != UCS_OK) {
        return status;
    }
    self->rx.queue_len = ucs_min(config->rx.queue_len,
                                 (unsigned)self->recv_cq->cqe);
    self->rx.queue_max = self->rx.queue_len;

    if (!use_srq) {
        /* The first QP's receive queue, sized when it is created */
        self->srq = NULL;
        qpx_iface_rx_queue_set(self, dev->attr.max_qp_wr);
        return UCS_OK;
    }

    if (owner != NULL) {
        /* The owner's SRQ: it filled it; what this interface's QPs consume
         * it refills (qpx_iface_rx_fill posts nothing) */
        self->srq      = owner->srq;
        self->rx_owner = owner;
        qpx_iface_rx_queue_set(self, owner->rx.queue_len);
        self->rx.available = 0;
        ucs_debug("qpx iface %p shares srq %p of iface %p", self, self->srq,
                  owner);
        return UCS_OK;
    }

    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_max_wr            = ucs_min(ucs_min(queue_max,
                                            (unsigned)self->recv_cq->cqe),
                                    (unsigned)dev->attr.max_srq_wr);
    srq_attr.attr.max_wr  = srq_max_wr;
    srq_attr.attr.max_sge = 1;
    /* The device's SRQ events name the interface's handler
     * (qpx_device_event.c) */
    self->srq_handler.limit_reached = qpx_iface_rx_limit_reached;
    srq_attr.srq_context  = &self->srq_handler;
    self->srq = ibv_create_srq(self->md->pd, &srq_attr);
    if (self->srq == NULL) {
        status = qpx_iface_create_failed(self, "SRQ", &level);
        ucs_log(level, "ibv_create_srq(%s, %u) failed: %m", dev->name,
                srq_attr.attr.max_wr);
        goto err_destroy_recv_cq;
    }

    /* srq_attr.attr.max_wr now holds what the device granted, which may be
     * more than asked (ibv_create_srq(3); mlx5, and softverbs as it, grant
     * max_wr + 1 rounded up to a power of two, less one) or, on a device
     * that clamps, less: the queue starts at RX_QUEUE_LEN and may grow to
     * what was asked and granted, never beyond RX_QUEUE_MAX or what the
     * receive CQ holds (a completion per posted buffer) */
    self->rx.queue_max = ucs_min(srq_attr.attr.max_wr, srq_max_wr);
    qpx_iface_rx_queue_set(self, self->rx.queue_max);
    return UCS_OK;

err_destroy_recv_cq:
    ibv_destroy_cq(self->recv_cq);
    return status;
}


ucs_status_t qpx_iface_create_queues(qpx_iface_t *self,
                                     const qpx_iface_config_t *config,
                                     int use_srq, qpx_iface_t *owner)
{
    ucs_status_t status;

    status = qpx_iface_channel_create(self);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_iface_send_cq_create(self, config);
    if (status != UCS_OK) {
        goto err_event_cleanup;
    }

    status = qpx_iface_rx_queues_create(self, config, use_srq, owner);
    if (status != UCS_OK) {
        goto err_destroy_send_cq;
    }
    return UCS_OK;

err_destroy_send_cq:
    ibv_destroy_cq(self->send_cq);
err_event_cleanup:
    qpx_iface_event_cleanup(self);
    ibv_destroy_comp_channel(self->comp_channel);
    return status;
}
