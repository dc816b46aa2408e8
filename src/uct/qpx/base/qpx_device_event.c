/*
 * Asynchronous events of a qpx device (ibv_get_async_event(3)).
 *
 * The device reports there what no completion carries: a CQ that overran
 * (its completions are lost and its QPs go to the error state), a QP that
 * failed outside a work request, a port that went down. qpx reads the
 * context's async fd on UCX's async thread, logs each event where it is
 * decided to matter (an SRQ that runs low also tells its owner, which
 * grows it: qpx_device_srq_handler_t), and acknowledges it at once:
 * ibv_destroy_qp/cq/srq wait until every event reported about their object
 * is acknowledged, so an event left unacknowledged would hang the
 * destruction of its object.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_device.h"

#include <ucs/async/async_fwd.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>


/* Log level of an event: what loses data or a QP is an error, a port that
 * goes down a warning, the rest (COMM_EST, LAST_WQE_REACHED, SRQ limit,
 * port up, LID/GID/SM changes) is routine */
static ucs_log_level_t qpx_device_event_level(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        return UCS_LOG_LEVEL_ERROR;
    case IBV_EVENT_PORT_ERR:
        return UCS_LOG_LEVEL_WARN;
    default:
        return UCS_LOG_LEVEL_DEBUG;
    }
}


static void qpx_device_event_log(qpx_device_t *dev,
                                 const struct ibv_async_event *event)
{
    ucs_log_level_t level = qpx_device_event_level(event->event_type);
    const char *what      = ibv_event_type_str(event->event_type);

    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        /* The CQ had no room for a completion: the operation it reported
         * is lost, and its QPs are moved to the error state by the HCA */
        ucs_log(level, "%s: %s on cq %p (%d entries): completions were "
                "lost; its QPs fail", dev->name, what, event->element.cq,
                event->element.cq->cqe);
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        ucs_log(level, "%s: %s on qp 0x%x", dev->name, what,
                event->element.qp->qp_num);
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        ucs_log(level, "%s: %s on srq %p", dev->name, what,
                event->element.srq);
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE:
        ucs_log(level, "%s:%d: %s", dev->name, event->element.port_num,
                what);
        break;
    default:
        ucs_log(level, "%s: %s", dev->name, what);
        break;
    }
}


/* A port that went down or came back: remembered, so that a QP that fails
 * on it says why (qpx_ep_report_failure) */
static void qpx_device_event_port(qpx_device_t *dev,
                                  const struct ibv_async_event *event)
{
    qpx_device_port_t *port;

    port = ((event->element.port_num < 1) ||
            (event->element.port_num > UINT8_MAX)) ? NULL :
           qpx_device_port(dev, (uint8_t)event->element.port_num);
    if (port == NULL) {
        return; /* not a port of ours */
    }
    /* relaxed: a hint for a log message, read on another thread; nothing
     * else is published with it */
    __atomic_store_n(&port->down, event->event_type == IBV_EVENT_PORT_ERR,
                     __ATOMIC_RELAXED);
}


static void qpx_device_event_handler(int fd, ucs_event_set_types_t events,
                                     void *arg)
{
    qpx_device_t *dev = arg;
    struct ibv_async_event event;

    /* The fd is non-blocking: read until the queue is empty */
    while (ibv_get_async_event(dev->ctx, &event) == 0) {
        qpx_device_event_log(dev, &event);
        if ((event.event_type == IBV_EVENT_PORT_ERR) ||
            (event.event_type == IBV_EVENT_PORT_ACTIVE)) {
            qpx_device_event_port(dev, &event);
        }
        if ((event.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) &&
            (event.element.srq->srq_context != NULL)) {
            /* Before the ack: ibv_destroy_srq waits for it, so the
             * interface that owns the SRQ is still there */
            qpx_device_srq_handler_t *h = event.element.srq->srq_context;
            h->limit_reached(h);
        }
        ibv_ack_async_event(&event);
    }
    if ((errno != EAGAIN) && (errno != EWOULDBLOCK)) {
        ucs_debug("%s: ibv_get_async_event(fd %d) failed: %m", dev->name, fd);
    }
}


ucs_status_t qpx_device_events_start(qpx_device_t *dev)
{
    int fd = dev->ctx->async_fd;
    ucs_status_t status;
    int flags;

    if (dev->events_fd >= 0) {
        return UCS_OK; /* an earlier interface started it */
    }

    flags = fcntl(fd, F_GETFL);
    if ((flags < 0) || (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("%s: fcntl(async fd %d, O_NONBLOCK) failed: %m", dev->name,
                  fd);
        return UCS_ERR_IO_ERROR;
    }

    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK, fd,
                                         UCS_EVENT_SET_EVREAD,
                                         qpx_device_event_handler, dev, NULL);
    if (status != UCS_OK) {
        ucs_error("%s: cannot watch async events (fd %d): %s", dev->name, fd,
                  ucs_status_string(status));
        return status;
    }

    dev->events_fd = fd;
    return UCS_OK;
}


void qpx_device_events_stop(qpx_device_t *dev)
{
    if (dev->events_fd < 0) {
        return;
    }

    /* sync: the handler is not running, and will not, once this returns */
    ucs_async_remove_handler(dev->events_fd, 1);
    dev->events_fd = -1;
}
