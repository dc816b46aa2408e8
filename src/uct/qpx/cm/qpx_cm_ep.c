/*
 * qpx CM endpoints: the client side (resolve, REQ, and the RTU once UCP
 * connected its transports) and the server side (REP from a connection
 * request), disconnection, and the events of both on UCX's async thread.
 *
 * Each endpoint reports its fate once through the callback UCP expects at
 * that stage: resolve_cb or connect_cb on the client before it is
 * connected, notify_cb on the server, disconnect_cb once connected.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_cm.h"

#include <uct/qpx/base/qpx_async.h>

#include <ucs/sys/sock.h>
#include <ucs/type/class.h>

#include <errno.h>


/* IB CM reject reason of a REQ to a service ID nobody listens on
 * (IBA 12.6.7.2, "invalid service ID"; rdma_cm's event status) */
#define QPX_CM_REJ_INVALID_SERVICE_ID 8
/* ... and the kernel's consumer reject of a listener that went away */
#define QPX_CM_REJ_CONSUMER_DEFINED   28


static const char *qpx_cm_ep_peer_str(qpx_cm_ep_t *cep, char *buf)
{
    struct sockaddr *peer = (cep->id != NULL) ? rdma_get_peer_addr(cep->id) :
                            NULL;

    if ((peer == NULL) || ((peer->sa_family != AF_INET) &&
                           (peer->sa_family != AF_INET6))) {
        return "<unknown>";
    }
    return ucs_sockaddr_str(peer, buf, UCS_SOCKADDR_STRING_LEN);
}


/* Report a failure through the callback the endpoint's stage calls for */
static void qpx_cm_ep_report(qpx_cm_ep_t *cep, ucs_status_t status)
{
    uct_cm_remote_data_t remote_data = {.field_mask = 0};
    uct_cm_ep_resolve_args_t args;

    if (cep->flags & QPX_CM_EP_CONNECTED) {
        /* UCT's disconnect callback has no status: the user disconnects */
        uct_cm_ep_disconnect_cb(&cep->super);
    } else if (cep->flags & QPX_CM_EP_SERVER) {
        uct_cm_ep_server_conn_notify_cb(&cep->super, status);
    } else if (cep->flags & QPX_CM_EP_RESOLVED) {
        uct_cm_ep_client_connect_cb(&cep->super, &remote_data, status);
    } else {
        args.field_mask = UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS;
        args.status     = status;
        cep->flags     |= QPX_CM_EP_RESOLVED;
        uct_cm_ep_resolve_cb(&cep->super, &args);
    }
}


static void qpx_cm_ep_set_failed(qpx_cm_ep_t *cep, ucs_status_t status,
                                 int report)
{
    if (cep->flags & QPX_CM_EP_FAILED) {
        return;
    }

    if (report) {
        qpx_cm_ep_report(cep, status);
    }
    /* after the callback: uct_ep_disconnect called from it still sees a
     * live endpoint, later calls see the failure */
    cep->flags  |= QPX_CM_EP_FAILED;
    cep->status  = status;
}


static void qpx_cm_ep_qp_release(qpx_cm_ep_t *cep)
{
    if (cep->dev == NULL) {
        return;
    }

    if (cep->flags & QPX_CM_EP_SERVER) {
        rdma_destroy_qp(cep->id);
    } else if (ibv_destroy_qp(cep->qp)) {
        ucs_warn("qpx cm: ibv_destroy_qp(qp 0x%x) failed: %m",
                 cep->qp->qp_num);
    }

    --cep->dev->num_qps;
    cep->dev = NULL;
    cep->qp  = NULL;
}


/* The QP of the connection (qpx_cm.h): the server's through
 * rdma_create_qp, the client's only for its number */
static ucs_status_t qpx_cm_ep_qp_create(qpx_cm_ep_t *cep)
{
    qpx_cm_t *cm = qpx_cm_ep_cm(cep);
    struct ibv_qp_init_attr attr;
    qpx_cm_dev_t *dev;
    ucs_status_t status;

    status = qpx_cm_dev_get(cm, cep->id->verbs, &dev);
    if (status != UCS_OK) {
        return status;
    }

    memset(&attr, 0, sizeof(attr));
    attr.send_cq          = dev->cq;
    attr.recv_cq          = dev->cq;
    attr.cap.max_send_wr  = 1;
    attr.cap.max_recv_wr  = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;

    if (cep->flags & QPX_CM_EP_SERVER) {
        /* NULL PD: librdmacm's default PD of the id's device */
        attr.qp_type = IBV_QPT_RC;
        if (rdma_create_qp(cep->id, NULL, &attr)) {
            ucs_error("qpx cm: rdma_create_qp(id %p) failed: %m", cep->id);
            return UCS_ERR_NO_RESOURCE;
        }
        cep->qp = cep->id->qp;
    } else {
        attr.qp_type = IBV_QPT_UD;
        cep->qp      = ibv_create_qp(cep->id->pd, &attr);
        if (cep->qp == NULL) {
            ucs_error("qpx cm: ibv_create_qp(UD, id %p) failed: %m",
                      cep->id);
            return UCS_ERR_NO_RESOURCE;
        }
    }

    /* rdma_create_qp and ibv_create_qp write back the caps granted */
    ucs_debug("qpx cm: qp 0x%x for id %p: %u/%u wr, %u/%u sge",
              cep->qp->qp_num, cep->id, attr.cap.max_send_wr,
              attr.cap.max_recv_wr, attr.cap.max_send_sge,
              attr.cap.max_recv_sge);
    cep->dev = dev;
    ++dev->num_qps;
    return UCS_OK;
}


/* REQ (client) or REP (server) with the header and the user's data */
static ucs_status_t qpx_cm_ep_send_priv_data(qpx_cm_ep_t *cep,
                                             const void *data, size_t length)
{
    uint8_t buf[QPX_CM_PRIV_DATA_LEN];
    qpx_cm_priv_hdr_t *hdr = (qpx_cm_priv_hdr_t*)buf;
    struct rdma_conn_param param;
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    ucs_status_t status;
    int ret;

    if (length > qpx_cm_max_conn_priv()) {
        ucs_error("qpx cm: %zu bytes of private data, at most %zu", length,
                  qpx_cm_max_conn_priv());
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = qpx_cm_ep_qp_create(cep);
    if (status != UCS_OK) {
        return status;
    }

    if (length > 0) {
        memcpy(hdr + 1, data, length);
    }
    qpx_cm_priv_pack(hdr, QPX_CM_PRIV_CONNECT, length);

    memset(&param, 0, sizeof(param));
    param.private_data     = buf;
    param.private_data_len = sizeof(*hdr) + length;
    param.flow_control     = 1;
    param.retry_count      = 7;
    param.rnr_retry_count  = 7;
    param.qp_num           = cep->qp->qp_num;

    if (cep->flags & QPX_CM_EP_CLIENT) {
        ret = rdma_connect(cep->id, &param);
    } else {
        ret = rdma_accept(cep->id, &param);
    }
    if (ret) {
        ucs_log(qpx_cm_ep_cm(cep)->super.config.failure_level,
                "qpx cm: %s(id %p, peer %s) failed: %m",
                (cep->flags & QPX_CM_EP_CLIENT) ? "rdma_connect" :
                "rdma_accept", cep->id, qpx_cm_ep_peer_str(cep, peer_str));
        qpx_cm_ep_qp_release(cep);
        return UCS_ERR_CONNECTION_RESET;
    }

    return UCS_OK;
}


/* Private data from the user's pack callback, which learns the device */
static ucs_status_t qpx_cm_ep_pack_and_send(qpx_cm_ep_t *cep)
{
    uint8_t data[QPX_CM_PRIV_DATA_LEN];
    uct_cm_ep_priv_data_pack_args_t args;
    ucs_status_t status;
    size_t length;

    args.field_mask = UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME;
    qpx_cm_id_dev_name(cep->id, args.dev_name);
    status = uct_cm_ep_pack_cb(&cep->super, cep->super.user_data, &args, data,
                               qpx_cm_max_conn_priv(), &length);
    if (status != UCS_OK) {
        return status;
    }

    return qpx_cm_ep_send_priv_data(cep, data, length);
}


static void qpx_cm_ep_route_resolved(qpx_cm_ep_t *cep)
{
    uct_cm_ep_resolve_args_t args;
    ucs_status_t status;

    if (cep->super.resolve_cb != NULL) {
        /* UCP creates its transports on the device, then uct_ep_connect */
        args.field_mask = UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME |
                          UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS;
        args.status     = UCS_OK;
        qpx_cm_id_dev_name(cep->id, args.dev_name);
        cep->flags     |= QPX_CM_EP_RESOLVED;
        status          = uct_cm_ep_resolve_cb(&cep->super, &args);
    } else {
        cep->flags |= QPX_CM_EP_RESOLVED;
        status      = qpx_cm_ep_pack_and_send(cep);
    }

    if (status != UCS_OK) {
        /* the user already knows (its callback failed), or is told now */
        qpx_cm_ep_set_failed(cep, status, cep->super.resolve_cb == NULL);
    }
}


static void qpx_cm_ep_connect_response(qpx_cm_ep_t *cep,
                                       struct rdma_cm_event *event)
{
    const qpx_cm_priv_hdr_t *hdr = event->param.conn.private_data;
    size_t priv_len              = event->param.conn.private_data_len;
    qpx_cm_t *cm                 = qpx_cm_ep_cm(cep);
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    uct_cm_remote_data_t remote_data;
    uint8_t dev_addr[64];
    size_t dev_addr_len;
    ucs_status_t status;

    if (cep->flags & QPX_CM_EP_GOT_DISCONNECT) {
        return; /* rdma_cm reported them out of order */
    }

    if (!qpx_cm_priv_is_valid(hdr, priv_len)) {
        qpx_cm_malformed_log(cm, "response",
                             qpx_cm_ep_peer_str(cep, peer_str), priv_len);
        rdma_disconnect(cep->id);
        qpx_cm_ep_set_failed(cep, UCS_ERR_CONNECTION_RESET, 1);
        return;
    }

    status = qpx_cm_id_peer_dev_addr(cm, event->id, dev_addr, &dev_addr_len);
    if (status != UCS_OK) {
        qpx_cm_ep_set_failed(cep, status, 1);
        return;
    }

    qpx_cm_remote_data_set(&remote_data, dev_addr, dev_addr_len, hdr);
    cep->flags |= QPX_CM_EP_CONNECTED;
    uct_cm_ep_client_connect_cb(&cep->super, &remote_data, UCS_OK);
}


/* The status of a failed connection, and how loudly to say it */
static ucs_status_t qpx_cm_ep_event_status(qpx_cm_ep_t *cep,
                                           struct rdma_cm_event *event)
{
    const qpx_cm_priv_hdr_t *hdr = event->param.conn.private_data;

    switch (event->event) {
    case RDMA_CM_EVENT_REJECTED:
        if (cep->flags & QPX_CM_EP_SERVER) {
            return UCS_ERR_CONNECTION_RESET; /* the client refused our REP */
        }
        if ((hdr != NULL) &&
            (event->param.conn.private_data_len >= sizeof(*hdr)) &&
            (qpx_cm_priv_kind(hdr) == QPX_CM_PRIV_REJECT)) {
            return UCS_ERR_REJECTED;  /* the server's user rejected us */
        }
        /* the IB CM answered for nobody: no listener on that port */
        return ((event->status == QPX_CM_REJ_INVALID_SERVICE_ID) ||
                (event->status == QPX_CM_REJ_CONSUMER_DEFINED)) ?
               UCS_ERR_UNREACHABLE : UCS_ERR_CONNECTION_RESET;
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        return UCS_ERR_UNREACHABLE;
    default:
        return UCS_ERR_IO_ERROR;
    }
}


static void qpx_cm_ep_handle_error(qpx_cm_ep_t *cep,
                                   struct rdma_cm_event *event)
{
    ucs_status_t status = qpx_cm_ep_event_status(cep, event);
    char peer_str[UCS_SOCKADDR_STRING_LEN];

    ucs_log((status == UCS_ERR_IO_ERROR) ? UCS_LOG_LEVEL_ERROR :
            qpx_cm_ep_cm(cep)->super.config.failure_level,
            "qpx cm: %s from %s (status %d): %s",
            rdma_event_str(event->event), qpx_cm_ep_peer_str(cep, peer_str),
            event->status, ucs_status_string(status));

    if (cep->flags & QPX_CM_EP_CONNECTED) {
        /* a connected endpoint learns it through disconnect_cb, once */
        if (!(cep->flags & QPX_CM_EP_GOT_DISCONNECT)) {
            cep->flags |= QPX_CM_EP_GOT_DISCONNECT;
            qpx_cm_ep_report(cep, UCS_ERR_CONNECTION_RESET);
        }
        return;
    }
    qpx_cm_ep_set_failed(cep, status, 1);
}


void qpx_cm_ep_handle_event(qpx_cm_ep_t *cep, struct rdma_cm_event *event)
{
    if (cep->flags & QPX_CM_EP_FAILED) {
        return; /* its user was told; late events change nothing */
    }

    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(cep->id, qpx_cm_ep_cm(cep)->timeout_ms)) {
            ucs_diag("qpx cm: rdma_resolve_route(id %p) failed: %m",
                     cep->id);
            qpx_cm_ep_set_failed(cep, UCS_ERR_UNREACHABLE, 1);
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        qpx_cm_ep_route_resolved(cep);
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        qpx_cm_ep_connect_response(cep, event);
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        /* the server's: the client sent the RTU once UCP connected */
        if ((cep->flags & QPX_CM_EP_SERVER) &&
            !(cep->flags & QPX_CM_EP_GOT_DISCONNECT)) {
            cep->flags |= QPX_CM_EP_CONNECTED;
            uct_cm_ep_server_conn_notify_cb(&cep->super, UCS_OK);
        }
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (cep->flags & QPX_CM_EP_GOT_DISCONNECT) {
            break; /* the user was told once */
        }
        cep->flags |= QPX_CM_EP_GOT_DISCONNECT;
        qpx_cm_ep_report(cep, UCS_ERR_CONNECTION_RESET);
        if (!(cep->flags & QPX_CM_EP_CONNECTED)) {
            qpx_cm_ep_set_failed(cep, UCS_ERR_CONNECTION_RESET, 0);
        }
        break;
    default:
        qpx_cm_ep_handle_error(cep, event);
        break;
    }
}


ucs_status_t qpx_cm_ep_connect(uct_ep_h ep,
                               const uct_ep_connect_params_t *params)
{
    qpx_cm_ep_t *cep   = ucs_derived_of(ep, qpx_cm_ep_t);
    qpx_cm_t *cm       = qpx_cm_ep_cm(cep);
    const void *data   = NULL;
    size_t length      = 0;
    ucs_status_t status;

    if (params->field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA) {
        data = params->private_data;
    }
    if (params->field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH) {
        length = params->private_data_length;
    }

    qpx_async_block(cm->async);
    if (cep->flags & QPX_CM_EP_FAILED) {
        status = cep->status;
    } else if (!(cep->flags & QPX_CM_EP_CLIENT) || (cep->dev != NULL)) {
        ucs_error("qpx cm: uct_ep_connect on a %s endpoint",
                  (cep->dev != NULL) ? "connecting" : "server");
        status = UCS_ERR_INVALID_PARAM;
    } else {
        status = qpx_cm_ep_send_priv_data(cep, data, length);
    }
    qpx_async_unblock(cm->async);
    return status;
}


ucs_status_t qpx_cm_ep_conn_notify(uct_ep_h ep)
{
    qpx_cm_ep_t *cep = ucs_derived_of(ep, qpx_cm_ep_t);
    qpx_cm_t *cm     = qpx_cm_ep_cm(cep);
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    ucs_status_t status;

    qpx_async_block(cm->async);
    if (!(cep->flags & (QPX_CM_EP_FAILED | QPX_CM_EP_GOT_DISCONNECT))) {
        /* the RTU: the server's notify_cb may now let it send */
        if (rdma_establish(cep->id)) {
            ucs_log(cm->super.config.failure_level,
                    "qpx cm: rdma_establish(id %p, peer %s) failed: %m",
                    cep->id, qpx_cm_ep_peer_str(cep, peer_str));
            cep->flags  |= QPX_CM_EP_FAILED;
            cep->status  = UCS_ERR_CONNECTION_RESET;
        }
    }
    status = cep->status;
    qpx_async_unblock(cm->async);
    return status;
}


ucs_status_t qpx_cm_ep_disconnect(uct_ep_h ep, unsigned flags)
{
    qpx_cm_ep_t *cep = ucs_derived_of(ep, qpx_cm_ep_t);
    qpx_cm_t *cm     = qpx_cm_ep_cm(cep);
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    ucs_status_t status;

    qpx_async_block(cm->async);
    if (cep->flags & QPX_CM_EP_FAILED) {
        status = cep->status;
    } else if (cep->flags & QPX_CM_EP_DISCONNECTING) {
        /* a second call: an error once the peer's DISCONNECTED came,
         * logged in the words of UCX's rdmacm and tcp managers (UCX's
         * tests expect that error and recognise it by them) */
        if (cep->flags & QPX_CM_EP_GOT_DISCONNECT) {
            ucs_error("qpx cm: duplicate call of uct_ep_disconnect on a "
                      "disconnected ep (peer %s)",
                      qpx_cm_ep_peer_str(cep, peer_str));
            status = UCS_ERR_NOT_CONNECTED;
        } else {
            status = UCS_INPROGRESS;
        }
    } else if (!(cep->flags & QPX_CM_EP_CONNECTED)) {
        status = UCS_ERR_BUSY; /* uct_ep_disconnect(3): not connected yet */
    } else {
        cep->flags |= QPX_CM_EP_DISCONNECTING;
        if (rdma_disconnect(cep->id)) {
            ucs_error("qpx cm: rdma_disconnect(id %p, peer %s) failed: %m",
                      cep->id, qpx_cm_ep_peer_str(cep, peer_str));
            status = UCS_ERR_IO_ERROR;
        } else {
            status = UCS_OK;
        }
    }
    qpx_async_unblock(cm->async);
    return status;
}


ucs_status_t qpx_cm_ep_query(uct_ep_h ep, uct_ep_attr_t *attr)
{
    qpx_cm_ep_t *cep = ucs_derived_of(ep, qpx_cm_ep_t);
    ucs_status_t status;

    if (attr->field_mask & UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR) {
        status = ucs_sockaddr_copy((struct sockaddr*)&attr->local_address,
                                   rdma_get_local_addr(cep->id));
        if (status != UCS_OK) {
            return status;
        }
    }
    if (attr->field_mask & UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR) {
        return ucs_sockaddr_copy((struct sockaddr*)&attr->remote_address,
                                 rdma_get_peer_addr(cep->id));
    }
    return UCS_OK;
}


/* Any callback type, to choose one before it is stored with its own */
typedef void (*qpx_cm_cb_t)(void);

/* The user's callback cb named by flag, or, without the flag, one that
 * does nothing (as UCT's own managers); the flag with a NULL callback is
 * an error */
static ucs_status_t qpx_cm_ep_user_cb(const uct_ep_params_t *params,
                                      uint64_t flag, qpx_cm_cb_t cb,
                                      const char *what, qpx_cm_cb_t *cb_p)
{
    if (!(params->field_mask & flag)) {
        *cb_p = (qpx_cm_cb_t)ucs_empty_function;
    } else if (cb == NULL) {
        ucs_error("qpx cm: the %s callback is NULL", what);
        return UCS_ERR_INVALID_PARAM;
    } else {
        *cb_p = cb;
    }
    return UCS_OK;
}


static ucs_status_t qpx_cm_ep_client_init(qpx_cm_ep_t *cep,
                                          const uct_ep_params_t *params)
{
    qpx_cm_t *cm = qpx_cm_ep_cm(cep);
    char addr_str[UCS_SOCKADDR_STRING_LEN];
    struct sockaddr *src = NULL;
    qpx_cm_cb_t cb;

    cep->flags |= QPX_CM_EP_CLIENT;
    if (qpx_cm_ep_user_cb(params, UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT,
                          (qpx_cm_cb_t)params->sockaddr_cb_client,
                          "client's connect", &cb) != UCS_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    cep->super.client.connect_cb = (uct_cm_ep_client_connect_callback_t)cb;

    if (rdma_create_id(cm->channel, &cep->id, cep, RDMA_PS_TCP)) {
        ucs_error("qpx cm: rdma_create_id failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    if (params->field_mask & UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR) {
        src = (struct sockaddr*)params->local_sockaddr->addr;
    }

    /* last: its events may follow at once (the caller holds the async
     * context, so they wait for an endpoint that is complete) */
    if (rdma_resolve_addr(cep->id, src,
                          (struct sockaddr*)params->sockaddr->addr,
                          cm->timeout_ms)) {
        ucs_diag("qpx cm: rdma_resolve_addr(%s) failed: %m",
                 ucs_sockaddr_str(params->sockaddr->addr, addr_str,
                                  sizeof(addr_str)));
        rdma_destroy_id(cep->id);
        cep->id = NULL;
        return UCS_ERR_UNREACHABLE;
    }

    return UCS_OK;
}


static ucs_status_t qpx_cm_ep_server_init(qpx_cm_ep_t *cep,
                                          const uct_ep_params_t *params)
{
    struct rdma_cm_event *event = params->conn_request;
    struct rdma_event_channel *listen_channel = event->listen_id->channel;
    struct rdma_cm_id *id                     = event->id;
    qpx_cm_t *cm                              = qpx_cm_ep_cm(cep);
    ucs_status_t status;
    qpx_cm_cb_t cb;
    int reject;

    /* the request is the endpoint's now; the id outlives the event */
    if (rdma_ack_cm_event(event)) {
        ucs_warn("qpx cm: rdma_ack_cm_event(CONNECT_REQUEST) failed: %m");
    }

    cep->id     = id;
    id->context = cep;
    cep->flags |= QPX_CM_EP_SERVER;
    reject      = 1;

    if (qpx_cm_ep_user_cb(params, UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER,
                          (qpx_cm_cb_t)params->sockaddr_cb_server,
                          "server's notify", &cb) != UCS_OK) {
        status = UCS_ERR_INVALID_PARAM;
        goto err;
    }
    cep->super.server.notify_cb = (uct_cm_ep_server_conn_notify_callback_t)cb;

    if ((listen_channel != cm->channel) && rdma_migrate_id(id, cm->channel)) {
        /* the endpoint is on another worker's CM than the listener */
        ucs_error("qpx cm: rdma_migrate_id(id %p) failed: %m", id);
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    if (ucs_test_all_flags(params->field_mask,
                           UCT_EP_PARAM_FIELD_PRIV_DATA |
                           UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH)) {
        status = qpx_cm_ep_send_priv_data(cep, params->private_data,
                                          params->private_data_length);
    } else if (params->field_mask & UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB) {
        status = qpx_cm_ep_pack_and_send(cep);
    } else {
        status = qpx_cm_ep_send_priv_data(cep, NULL, 0);
    }
    if (status == UCS_OK) {
        return UCS_OK;
    }
    /* rdma_accept failed: the IB CM answers the client itself */
    reject = (status != UCS_ERR_CONNECTION_RESET);

err:
    if (reject) {
        rdma_reject(id, NULL, 0);
    }
    rdma_destroy_id(id);
    cep->id = NULL;
    return status;
}


static UCS_CLASS_INIT_FUNC(qpx_cm_ep_t, const uct_ep_params_t *params)
{
    char peer_str[UCS_SOCKADDR_STRING_LEN];
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_cm_base_ep_t, params);

    self->id     = NULL;
    self->dev    = NULL;
    self->qp     = NULL;
    self->flags  = 0;
    self->status = UCS_OK;

    if (params->field_mask & UCT_EP_PARAM_FIELD_SOCKADDR) {
        status = qpx_cm_ep_client_init(self, params);
    } else if (params->field_mask & UCT_EP_PARAM_FIELD_CONN_REQUEST) {
        status = qpx_cm_ep_server_init(self, params);
    } else {
        ucs_error("qpx cm: an endpoint needs a socket address or a "
                  "connection request");
        status = UCS_ERR_INVALID_PARAM;
    }

    if (status == UCS_OK) {
        ucs_debug("qpx cm: %s endpoint %p, id %p, peer %s",
                  (self->flags & QPX_CM_EP_CLIENT) ? "client" : "server",
                  self, self->id, qpx_cm_ep_peer_str(self, peer_str));
    }
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_cm_ep_t)
{
    qpx_cm_ep_qp_release(self);
    /* rdma_destroy_id discards the events not yet taken: no callback
     * follows the endpoint's destruction */
    if ((self->id != NULL) && rdma_destroy_id(self->id)) {
        ucs_warn("qpx cm: rdma_destroy_id(%p) failed: %m", self->id);
    }
}


UCS_CLASS_DEFINE(qpx_cm_ep_t, uct_cm_base_ep_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(qpx_cm_ep_t, uct_ep_t);


ucs_status_t qpx_cm_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    qpx_cm_t *cm = ucs_derived_of(params->cm, qpx_cm_t);
    ucs_status_t status;

    /* the endpoint is complete before any of its events is handled */
    qpx_async_block(cm->async);
    status = UCS_CLASS_NEW(qpx_cm_ep_t, ep_p, params);
    qpx_async_unblock(cm->async);
    return status;
}


void qpx_cm_ep_destroy(uct_ep_h ep)
{
    qpx_cm_t *cm = qpx_cm_ep_cm(ucs_derived_of(ep, qpx_cm_ep_t));

    qpx_async_block(cm->async);
    UCS_CLASS_DELETE_FUNC_NAME(qpx_cm_ep_t)(ep);
    qpx_async_unblock(cm->async);
}
