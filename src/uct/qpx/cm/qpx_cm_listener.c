/*
 * qpx CM listeners: a listening rdma_cm id on the CM's event channel, its
 * connection requests handed to the user with the client's private data
 * and device address, and rejects.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_cm.h"

#include <uct/qpx/base/qpx_async.h>

#include <ucs/sys/sock.h>
#include <ucs/type/class.h>

#include <errno.h>


/* Reject a request and release its id. The event is acknowledged before
 * the id is destroyed: rdma_destroy_id(3) waits for the acknowledgement of
 * every event reported on the id */
static void qpx_cm_request_release(qpx_cm_t *cm, struct rdma_cm_event *event,
                                   int reject)
{
    struct rdma_cm_id *id = event->id;
    qpx_cm_priv_hdr_t hdr;

    if (reject) {
        qpx_cm_priv_pack(&hdr, QPX_CM_PRIV_REJECT, 0);
        /* EINVAL: the client has gone since its request (its id
         * destroyed, the IB CM's connection ended): nothing to answer, and
         * a peer must not make us log once per such request */
        if (rdma_reject(id, &hdr, sizeof(hdr))) {
            ucs_log((errno == EINVAL) ? UCS_LOG_LEVEL_DEBUG :
                    cm->super.config.failure_level,
                    "qpx cm: rdma_reject(id %p) failed: %m", id);
        }
    }
    if (rdma_ack_cm_event(event)) {
        ucs_warn("qpx cm: rdma_ack_cm_event(CONNECT_REQUEST) failed: %m");
    }
    if (rdma_destroy_id(id)) {
        ucs_warn("qpx cm: rdma_destroy_id(%p) failed: %m", id);
    }
}


void qpx_cm_listener_handle_request(qpx_cm_t *cm, struct rdma_cm_event *event)
{
    qpx_cm_listener_t *listener = event->listen_id->context;
    const qpx_cm_priv_hdr_t *hdr = event->param.conn.private_data;
    size_t priv_len              = event->param.conn.private_data_len;
    uct_cm_listener_conn_request_args_t args;
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    uint8_t dev_addr[64];
    uct_cm_remote_data_t remote_data;
    struct sockaddr *client;
    size_t dev_addr_len, addr_len;
    ucs_status_t status;

    /* The new id has the listener's context (librdmacm): none until an
     * endpoint takes the request (qpx_cm_ep_server_init), so that an event
     * of the id before then is not read as an endpoint's
     * (qpx_cm_process_event) */
    event->id->context = NULL;
    client = rdma_get_peer_addr(event->id);
    /* A REQ not made by a qpx CM (or cut short) is not handed to UCP */
    if (!qpx_cm_priv_is_valid(hdr, priv_len)) {
        qpx_cm_malformed_log(cm, "request",
                             ucs_sockaddr_str(client, peer_str,
                                              sizeof(peer_str)),
                             priv_len);
        qpx_cm_request_release(cm, event, 1);
        return;
    }

    status = qpx_cm_id_peer_dev_addr(cm, event->id, dev_addr, &dev_addr_len);
    if (status == UCS_OK) {
        status = ucs_sockaddr_sizeof(client, &addr_len);
    }
    if (status != UCS_OK) {
        qpx_cm_request_release(cm, event, 1);
        return;
    }

    qpx_cm_remote_data_set(&remote_data, dev_addr, dev_addr_len, hdr);

    args.field_mask             =
            UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME |
            UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST |
            UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA |
            UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR;
    args.conn_request           = event;
    args.remote_data            = &remote_data;
    args.client_address.addr    = client;
    args.client_address.addrlen = addr_len;
    qpx_cm_id_dev_name(event->id, args.dev_name);

    ucs_debug("qpx cm: connection request from %s on %s, %zu bytes",
              ucs_sockaddr_str(client, peer_str, sizeof(peer_str)),
              args.dev_name, qpx_cm_priv_length(hdr));
    /* the user owns the request now: uct_ep_create or uct_listener_reject
     * acknowledges the event */
    listener->conn_request_cb(&listener->super, listener->user_data, &args);
}


ucs_status_t qpx_cm_listener_reject(uct_listener_h listener,
                                    uct_conn_request_h conn_request)
{
    qpx_cm_t *cm = ucs_derived_of(listener->cm, qpx_cm_t);

    qpx_async_block(cm->async);
    qpx_cm_request_release(cm, conn_request, 1);
    qpx_async_unblock(cm->async);
    return UCS_OK;
}


ucs_status_t qpx_cm_listener_query(uct_listener_h listener,
                                   uct_listener_attr_t *attr)
{
    qpx_cm_listener_t *qlistener = ucs_derived_of(listener,
                                                  qpx_cm_listener_t);

    if (attr->field_mask & UCT_LISTENER_ATTR_FIELD_SOCKADDR) {
        return ucs_sockaddr_copy((struct sockaddr*)&attr->sockaddr,
                                 rdma_get_local_addr(qlistener->id));
    }
    return UCS_OK;
}


static UCS_CLASS_INIT_FUNC(qpx_cm_listener_t, uct_cm_h cm,
                           const struct sockaddr *saddr, socklen_t socklen,
                           const uct_listener_params_t *params)
{
    qpx_cm_t *qcm = ucs_derived_of(cm, qpx_cm_t);
    char addr_str[UCS_SOCKADDR_STRING_LEN];
    ucs_status_t status;
    int backlog, reuse;

    UCS_CLASS_CALL_SUPER_INIT(uct_listener_t, cm);

    self->conn_request_cb = params->conn_request_cb;
    self->user_data       = (params->field_mask &
                             UCT_LISTENER_PARAM_FIELD_USER_DATA) ?
                            params->user_data : NULL;

    status = uct_listener_backlog_adjust(params, ucs_socket_max_conn(),
                                         &backlog);
    if (status != UCS_OK) {
        return status;
    }

    if (rdma_create_id(qcm->channel, &self->id, self, RDMA_PS_TCP)) {
        ucs_error("qpx cm: rdma_create_id failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    if (cm->config.reuse_addr) {
        reuse = 1;
        if (rdma_set_option(self->id, RDMA_OPTION_ID,
                            RDMA_OPTION_ID_REUSEADDR, &reuse,
                            sizeof(reuse))) {
            ucs_error("qpx cm: rdma_set_option(REUSEADDR) failed: %m");
            status = UCS_ERR_IO_ERROR;
            goto err_destroy_id;
        }
    }

    if (rdma_bind_addr(self->id, (struct sockaddr*)saddr)) {
        /* UCP tries another port on BUSY */
        status = ((errno == EADDRINUSE) || (errno == EADDRNOTAVAIL)) ?
                 UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        ucs_log((status == UCS_ERR_BUSY) ? UCS_LOG_LEVEL_DIAG :
                UCS_LOG_LEVEL_ERROR, "qpx cm: rdma_bind_addr(%s) failed: %m",
                ucs_sockaddr_str(saddr, addr_str, sizeof(addr_str)));
        goto err_destroy_id;
    }

    if (rdma_listen(self->id, backlog)) {
        ucs_error("qpx cm: rdma_listen(%s, backlog %d) failed: %m",
                  ucs_sockaddr_str(saddr, addr_str, sizeof(addr_str)),
                  backlog);
        status = (errno == EADDRINUSE) ? UCS_ERR_BUSY : UCS_ERR_IO_ERROR;
        goto err_destroy_id;
    }

    ucs_debug("qpx cm %p: listening on %s (id %p, backlog %d)", qcm,
              ucs_sockaddr_str(rdma_get_local_addr(self->id), addr_str,
                               sizeof(addr_str)), self->id, backlog);
    return UCS_OK;

err_destroy_id:
    rdma_destroy_id(self->id);
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_cm_listener_t)
{
    if (rdma_destroy_id(self->id)) {
        ucs_warn("qpx cm: rdma_destroy_id(listener %p) failed: %m", self->id);
    }
}


UCS_CLASS_DEFINE(qpx_cm_listener_t, uct_listener_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(qpx_cm_listener_t, uct_listener_t);


ucs_status_t qpx_cm_listener_create(uct_cm_h cm, const struct sockaddr *saddr,
                                    socklen_t socklen,
                                    const uct_listener_params_t *params,
                                    uct_listener_h *listener_p)
{
    return UCS_CLASS_NEW(qpx_cm_listener_t, listener_p, cm, saddr, socklen,
                         params);
}


void qpx_cm_listener_destroy(uct_listener_h listener)
{
    qpx_cm_t *cm = ucs_derived_of(listener->cm, qpx_cm_t);

    /* no request of this listener is being handed to the user meanwhile */
    qpx_async_block(cm->async);
    UCS_CLASS_DELETE_FUNC_NAME(qpx_cm_listener_t)(listener);
    qpx_async_unblock(cm->async);
}
