/*
 * qpx's connection manager: opening and closing it, and its event channel
 * on UCX's async thread, which hands each event to its endpoint or
 * listener (above what they share, qpx_cm_common.c). See qpx_cm.h for how
 * it connects.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_cm.h"

#include <ucs/qpx_config.h>

#include <uct/qpx/base/qpx_async.h>

#include <ucs/async/async_fwd.h>
#include <ucs/type/class.h>

#include <errno.h>
#include <fcntl.h>


ucs_config_field_t qpx_cm_config_table[] = {
    /* UCX's common CM options (FAILURE, REUSEADDR) as UCX_QPX_<NAME> and
     * UCX_QPX_CM_<NAME> only, never under their bare UCX_<NAME> */
    {"QPX_", "", NULL, ucs_offsetof(qpx_cm_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_cm_config_table)},

    {"TIMEOUT", "10s",
     "Time the connection manager waits for an address or route to "
     "resolve (rdma_resolve_addr, rdma_resolve_route).",
     ucs_offsetof(qpx_cm_config_t, timeout), QPX_CONFIG_TYPE_TIME},

    {NULL}
};


static void qpx_cm_process_event(qpx_cm_t *cm, struct rdma_cm_event *event)
{
    switch (event->event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
        /* the listener acknowledges it once the user accepted or rejected */
        qpx_cm_listener_handle_request(cm, event);
        return;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        /* the QP left timewait; the CM reuses nothing */
        break;
    default:
        if (event->id->context == NULL) {
            /* The id of a connection request no endpoint has taken yet
             * (qpx_cm_listener_handle_request): the client went away
             * before the user answered, say. The endpoint made from it
             * later sees the failure; nobody is to be told now */
            ucs_debug("qpx cm %p: %s on the id %p of a request not answered "
                      "yet", cm, rdma_event_str(event->event), event->id);
            break;
        }
        qpx_cm_ep_handle_event(event->id->context, event);
        break;
    }

    if (rdma_ack_cm_event(event)) {
        ucs_warn("qpx cm: rdma_ack_cm_event(%s) failed: %m",
                 rdma_event_str(event->event));
    }
}


static void qpx_cm_event_handler(int fd, ucs_event_set_types_t events,
                                 void *arg)
{
    qpx_cm_t *cm = arg;
    struct rdma_cm_event *event;

    /* The channel is non-blocking: take events until it is empty */
    for (;;) {
        if (rdma_get_cm_event(cm->channel, &event)) {
            if ((errno != EAGAIN) && (errno != EINTR)) {
                ucs_warn("qpx cm: rdma_get_cm_event(fd %d) failed: %m", fd);
            }
            return;
        }

        ucs_debug("qpx cm %p: %s on id %p, status %d", cm,
                  rdma_event_str(event->event), event->id, event->status);
        qpx_async_block(cm->async);
        qpx_cm_process_event(cm, event);
        qpx_async_unblock(cm->async);
    }
}


static ucs_status_t qpx_cm_query(uct_cm_h cm, uct_cm_attr_t *attr)
{
    if (attr->field_mask & UCT_CM_ATTR_FIELD_MAX_CONN_PRIV) {
        attr->max_conn_priv = qpx_cm_max_conn_priv();
    }
    return UCS_OK;
}


static UCS_CLASS_DECLARE_DELETE_FUNC(qpx_cm_t, uct_cm_t);

static uct_cm_ops_t qpx_cm_ops = {
    .close            = UCS_CLASS_DELETE_FUNC_NAME(qpx_cm_t),
    .cm_query         = qpx_cm_query,
    .listener_create  = qpx_cm_listener_create,
    .listener_reject  = qpx_cm_listener_reject,
    .listener_query   = qpx_cm_listener_query,
    .listener_destroy = qpx_cm_listener_destroy,
    .ep_create        = qpx_cm_ep_create
};

/* The CM's "interface" serves its endpoints' ops; nothing moves data */
static uct_iface_ops_t qpx_cm_iface_ops = {
    .ep_connect             = qpx_cm_ep_connect,
    .ep_disconnect          = qpx_cm_ep_disconnect,
    .cm_ep_conn_notify      = qpx_cm_ep_conn_notify,
    .ep_destroy             = qpx_cm_ep_destroy,
    .ep_pending_purge       = (void*)ucs_empty_function,
    .ep_put_short           = (void*)ucs_empty_function_return_unsupported,
    .ep_put_bcopy           = (void*)ucs_empty_function_return_unsupported,
    .ep_get_bcopy           = (void*)ucs_empty_function_return_unsupported,
    .ep_am_short            = (void*)ucs_empty_function_return_unsupported,
    .ep_am_short_iov        = (void*)ucs_empty_function_return_unsupported,
    .ep_am_bcopy            = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic_cswap64      = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic64_post       = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic64_fetch      = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic_cswap32      = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic32_post       = (void*)ucs_empty_function_return_unsupported,
    .ep_atomic32_fetch      = (void*)ucs_empty_function_return_unsupported,
    .ep_pending_add         = (void*)ucs_empty_function_return_unsupported,
    .ep_flush               = (void*)ucs_empty_function_return_success,
    .ep_fence               = (void*)ucs_empty_function_return_unsupported,
    .ep_check               = (void*)ucs_empty_function_return_unsupported,
    .ep_create              = (void*)ucs_empty_function_return_unsupported,
    .iface_flush            = (void*)ucs_empty_function_return_unsupported,
    .iface_fence            = (void*)ucs_empty_function_return_unsupported,
    .iface_progress_enable  = (void*)ucs_empty_function,
    .iface_progress_disable = (void*)ucs_empty_function,
    .iface_progress         = (void*)ucs_empty_function_return_zero,
    .iface_event_fd_get     = (void*)ucs_empty_function_return_unsupported,
    .iface_event_arm        = (void*)ucs_empty_function_return_unsupported,
    .iface_close            = (void*)ucs_empty_function,
    .iface_query            = (void*)ucs_empty_function_return_unsupported,
    .iface_get_device_address = (void*)ucs_empty_function_return_unsupported,
    .iface_get_address      = (void*)ucs_empty_function_return_unsupported,
    .iface_is_reachable     = (void*)ucs_empty_function_return_zero
};

static uct_iface_internal_ops_t qpx_cm_iface_internal_ops =
    QPX_UCX_IFACE_INTERNAL_OPS((void*)ucs_empty_function_return_unsupported,
                               (void*)ucs_empty_function, qpx_cm_ep_query,
                               (void*)ucs_empty_function_return_unsupported,
                               (void*)ucs_empty_function_return_zero);


static UCS_CLASS_INIT_FUNC(qpx_cm_t, uct_component_h component,
                           uct_worker_h worker, const uct_cm_config_t *config)
{
    const qpx_cm_config_t *cm_config = ucs_derived_of(config, qpx_cm_config_t);
    ucs_async_context_t *async       = ((uct_priv_worker_t*)worker)->async;
    ucs_status_t status;
    int flags;

    UCS_CLASS_CALL_SUPER_INIT(uct_cm_t, &qpx_cm_ops, &qpx_cm_iface_ops,
                              &qpx_cm_iface_internal_ops, worker, component,
                              config);

    if ((async == NULL) || !qpx_async_mode_is_supported(async->mode)) {
        ucs_diag("qpx cm: the worker's async mode is not supported");
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_head_init(&self->devs);
    self->malformed  = 0;
    self->async      = async;
    self->timeout_ms = ucs_max(1, (int)(cm_config->timeout * 1e3));
    self->channel    = rdma_create_event_channel();
    if (self->channel == NULL) {
        /* no RDMA CM on this host: quiet, as UCP opens every CM it knows */
        ucs_log(((errno == ENODEV) || (errno == ENOENT)) ?
                UCS_LOG_LEVEL_DIAG : UCS_LOG_LEVEL_ERROR,
                "qpx cm: rdma_create_event_channel failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    /* non-blocking: the handler reads until the channel is empty */
    flags = fcntl(self->channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(self->channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("qpx cm: fcntl(fd %d, O_NONBLOCK) failed: %m",
                  self->channel->fd);
        status = UCS_ERR_IO_ERROR;
        goto err_destroy_channel;
    }

    status = ucs_async_set_event_handler(async->mode, self->channel->fd,
                                         UCS_EVENT_SET_EVREAD,
                                         qpx_cm_event_handler, self, async);
    if (status != UCS_OK) {
        ucs_error("qpx cm: cannot watch the event channel (fd %d): %s",
                  self->channel->fd, ucs_status_string(status));
        goto err_destroy_channel;
    }

    ucs_debug("qpx cm %p: opened, event channel fd %d", self,
              self->channel->fd);
    return UCS_OK;

err_destroy_channel:
    rdma_destroy_event_channel(self->channel);
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_cm_t)
{
    /* sync: the handler is not running, and will not, once this returns */
    ucs_async_remove_handler(self->channel->fd, 1);
    rdma_destroy_event_channel(self->channel);
    qpx_cm_devs_release(self);
    ucs_debug("qpx cm %p: closed", self);
}


UCS_CLASS_DEFINE(qpx_cm_t, uct_cm_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(qpx_cm_t, uct_cm_t);


ucs_status_t qpx_cm_open(uct_component_h component, uct_worker_h worker,
                         const uct_cm_config_t *config, uct_cm_h *cm_p)
{
    return UCS_CLASS_NEW(qpx_cm_t, cm_p, component, worker, config);
}
