/*
 * softverbs librdmacm: connection establishment (the exchange is described
 * in sv_cm_conn.c). The active side's rdma_connect sends the REQ (SIDR REQ
 * for a UD id) to the listener, whose child gets CONNECT_REQUEST; the
 * passive side's rdma_accept answers REP (SIDR REP) or rdma_reject REJ;
 * the active side, its QP moved to RTR/RTS, answers RTU, or without a QP
 * gets CONNECT_RESPONSE and rdma_establish sends it. The RDMA read/atomic
 * resources of the connection are agreed here too. A listener owns the
 * abstract socket named after its address, which connecting ids dial;
 * what a connection's socket reads is handed from here to the handler of
 * its phase (sv_cm_conn_input). The top of the CM's files.
 */
#include "sv_cm_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

/* A UD event: private data of the whole field, and for the active side the
 * peer's address, QP number and Q_Key */
static void sv_cm_event_ud(struct sv_cm_id *id, enum rdma_cm_event_type t,
                           int status, const struct sv_cm_msg *m,
                           uint8_t field_len, int with_addr)
{
    struct sv_cm_event *ev = sv_cm_event_new(id, t, status);
    struct rdma_ud_param *ud;

    if (ev == NULL) {
        return;
    }
    ud = &ev->event.param.ud;
    memcpy(ev->priv, m->priv, field_len);
    ud->private_data     = ev->priv;
    ud->private_data_len = field_len;
    if (with_addr) {
        ud->ah_attr.dlid     = m->lid;
        ud->ah_attr.port_num = id->id.port_num;
        if (m->lid == 0) {
            sv_cm_ah_global(id, &ud->ah_attr, &m->gid);
        }
        ud->qp_num = m->qpn;
        ud->qkey   = m->qkey;
    }
    if ((id->listen != NULL) && (t == RDMA_CM_EVENT_CONNECT_REQUEST)) {
        ev->event.listen_id = &id->listen->id;
    }
    sv_cm_event_queue(ev);
}

/*
 * The RDMA read/atomic resources of a connection, as librdmacm and the
 * kernel's CM agree them (rdma-core 44 librdmacm/cma.c: ucma_valid_param,
 * rdma_connect, rdma_accept, ucma_process_conn_req; Linux
 * drivers/infiniband/core/cm.c: cm_req_handler, cm_rep_handler):
 *
 *   rdma_connect   resp_res, init_depth = the param's, where
 *                  RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xff) or no
 *                  param means the device's max_qp_rd_atom /
 *                  max_qp_init_rd_atom; the REQ carries them
 *   REQ received   resp_res = the REQ's initiator depth, init_depth = its
 *                  responder resources (what CONNECT_REQUEST shows)
 *   rdma_accept    the param's, where 0xff or no param means the REQ's
 *                  (above) capped at the device's; the REP carries them
 *   REP received   swapped from the REP as from a REQ
 *
 * RTR takes resp_res as max_dest_rd_atomic, RTS init_depth as
 * max_rd_atomic (sv_cm_qp.c). For an RDMA_PS_TCP id a value other than
 * 0xff above the device's limit is EINVAL, and so is connecting or
 * accepting without QP and without param (ucma_valid_param).
 * libfabric's verbs provider passes 0xff for both
 * (vrb_ep_prepare_rdma_cm_param); softverbs gave 255 to the QP as
 * max_dest_rd_atomic and the modify to RTR failed: rdma_accept EINVAL.
 */
static void sv_cm_dev_rd_atom(struct sv_cm_id *id, uint8_t *max_resp,
                              uint8_t *max_init)
{
    struct ibv_device_attr da;

    if ((id->id.verbs == NULL) || (ibv_query_device(id->id.verbs, &da) != 0)) {
        da.max_qp_rd_atom      = SV_CM_RD_ATOM_DEFAULT;
        da.max_qp_init_rd_atom = SV_CM_RD_ATOM_DEFAULT;
    }
    /* uint8_t, as librdmacm's cma_dev keeps them */
    *max_resp = (uint8_t)da.max_qp_rd_atom;
    *max_init = (uint8_t)da.max_qp_init_rd_atom;
}

static int sv_cm_valid_param(struct sv_cm_id *id,
                             const struct rdma_conn_param *param,
                             uint8_t max_resp, uint8_t max_init)
{
    if (id->id.ps != RDMA_PS_TCP) {
        return 0;
    }
    if ((id->id.qp == NULL) && (param == NULL)) {
        return EINVAL;
    }
    if (param == NULL) {
        return 0;
    }
    if (((param->responder_resources != RDMA_MAX_RESP_RES) &&
         (param->responder_resources > max_resp)) ||
        ((param->initiator_depth != RDMA_MAX_INIT_DEPTH) &&
         (param->initiator_depth > max_init))) {
        return EINVAL;
    }
    return 0;
}

/* rdma_connect (accept = 0) or rdma_accept (1): the resources the REQ or
 * REP will carry */
static void sv_cm_resources(struct sv_cm_id *id,
                            const struct rdma_conn_param *param, int accept,
                            uint8_t max_resp, uint8_t max_init)
{
    if ((param != NULL) && (param->responder_resources != RDMA_MAX_RESP_RES)) {
        id->resp_res = param->responder_resources;
    } else {
        id->resp_res = (accept && (id->resp_res < max_resp)) ? id->resp_res :
                       max_resp;
    }
    if ((param != NULL) && (param->initiator_depth != RDMA_MAX_INIT_DEPTH)) {
        id->init_depth = param->initiator_depth;
    } else {
        id->init_depth = (accept && (id->init_depth < max_init)) ?
                         id->init_depth : max_init;
    }
}

static void sv_cm_take_peer(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    id->peer_qpn        = m->qpn;
    id->peer_psn        = m->psn;
    id->peer_lid        = m->lid;
    id->peer_gid        = m->gid;
    id->peer_resp_res   = m->resp_res;
    id->peer_init_depth = m->init_depth;
    /* the peer's resources seen from here (cm_req_handler, cm_rep_handler) */
    id->resp_res        = m->init_depth;
    id->init_depth      = m->resp_res;
    id->peer_retry      = m->retry;
    id->peer_rnr_retry  = m->rnr_retry;
}

/* What arrived on a connection's socket: one whole message, handed to the
 * handler of its phase (here, sv_cm_conn_teardown.c), or
 * the peer's departure when the socket closed */
static void sv_cm_conn_input(struct sv_cm_id *id)
{
    struct sv_cm_msg m;
    ssize_t n;

    n = recv(id->sock, &m, sizeof(m), MSG_WAITALL);
    if (n != (ssize_t)sizeof(m)) {
        sv_cm_handle_gone(id);
        return;
    }
    switch (m.type) {
    case SV_CM_MSG_REQ:
        if (id->state == SV_CM_IDLE) {
            sv_cm_handle_req(id, &m);
        }
        break;
    case SV_CM_MSG_SIDR_REQ:
        if (id->state == SV_CM_IDLE) {
            sv_cm_handle_sidr_req(id, &m);
        }
        break;
    case SV_CM_MSG_SIDR_REP:
        sv_cm_handle_sidr_rep(id, &m);
        break;
    case SV_CM_MSG_REP:
        if (id->state == SV_CM_CONNECT) {
            sv_cm_handle_rep(id, &m);
        }
        break;
    case SV_CM_MSG_RTU:
        sv_cm_handle_rtu(id);
        break;
    case SV_CM_MSG_REJ:
        sv_cm_handle_rej(id, &m);
        break;
    case SV_CM_MSG_DREQ:
        sv_cm_handle_dreq(id);
        break;
    case SV_CM_MSG_DREP:
        sv_cm_handle_drep(id);
        break;
    default:
        break;
    }
}

/* The listener: a new connection (its REQ comes next, on its socket) */
static void sv_cm_listen_input(struct sv_cm_id *listener)
{
    struct sv_cm_id *child;
    int fd;

    while ((fd = accept4(listener->sock, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        child = sv_cm_id_alloc(listener->chan, listener->id.context,
                               listener->id.ps, listener->id.qp_type);
        if (child == NULL) {
            close(fd);
            continue;
        }
        child->listen      = listener;
        child->sock        = fd;
        child->id.verbs    = listener->id.verbs;
        child->id.port_num = listener->id.port_num;
        child->id.pd       = listener->id.pd;
        child->id.route.path_rec = &child->path;
        sv_cm_channel_watch(child, fd, sv_cm_conn_input);
    }
}

/* REQ (the listener's child, IDLE): the peer's addresses, path and
 * resources, and CONNECT_REQUEST with its private data */
void sv_cm_handle_req(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    memcpy(&id->id.route.addr.src_storage, &m->dst, sizeof(m->dst));
    memcpy(&id->id.route.addr.dst_storage, &m->src, sizeof(m->src));
    sv_cm_take_peer(id, m);
    memset(&id->path, 0, sizeof(id->path));
    id->path.slid = htobe16(m->lid);
    id->path.dlid = htobe16(m->lid);
    id->path.sgid = m->gid;
    id->path.dgid = m->gid;
    /* the REQ's local ACK timeout less one (cm_format_paths_from_req) */
    id->path.packet_life_time = sv_cm_ack_timeout(sv_cm_ack_delay(id),
                                                  SV_CM_PACKET_LIFE_TIME) - 1;
    id->id.route.num_paths = 1;
    id->state = SV_CM_REQ_RCVD;
    sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m,
                     SV_CM_REQ_PRIV);
}

/* REP (the active side, CONNECT): with a QP, RTR/RTS and RTU, then
 * ESTABLISHED; without, CONNECT_RESPONSE (rdma_establish sends the RTU) */
void sv_cm_handle_rep(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    struct sv_cm_msg rtu;

    sv_cm_take_peer(id, m);
    if (id->id.qp == NULL) {
        /* the application moves its QP itself, then rdma_establish */
        id->state = SV_CM_REP_RCVD;
        sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, m,
                         SV_CM_REP_PRIV);
        return;
    }
    if (sv_cm_qp_to_rtr_rts(id) != 0) {
        sv_cm_msg_init(id, &rtu, SV_CM_MSG_REJ, NULL, 0);
        sv_cm_send(id, &rtu);
        sv_cm_close_sock(id);
        id->state = SV_CM_ROUTE_RESOLVED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -errno, NULL, 0);
        return;
    }
    sv_cm_msg_init(id, &rtu, SV_CM_MSG_RTU, NULL, 0);
    sv_cm_send(id, &rtu);
    id->state = SV_CM_CONNECTED;
    sv_cm_event_conn(id, RDMA_CM_EVENT_ESTABLISHED, 0, m, SV_CM_REP_PRIV);
}

/* RTU: the passive side is connected */
void sv_cm_handle_rtu(struct sv_cm_id *id)
{
    if (id->state == SV_CM_REP_SENT) {
        id->state = SV_CM_CONNECTED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
    }
}

/* REJ: the peer refused or gave up before the connection was
 * established */
void sv_cm_handle_rej(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    sv_cm_close_sock(id);
    if (id->state == SV_CM_CONNECT) {
        /* rdma-core moves the active QP to ERR on REJECTED */
        sv_cm_qp_to_err(id);
        id->state = SV_CM_ROUTE_RESOLVED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED, m->reason, m,
                         SV_CM_REJ_PRIV);
    } else if (id->state == SV_CM_REP_SENT) {
        id->state = SV_CM_DISCONNECTED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNREFUSED,
                         NULL, 0);
    } else if ((id->state == SV_CM_REQ_RCVD) ||
               (id->state == SV_CM_REP_RCVD)) {
        /* The peer gave up before the connection was established
         * (cm_rej_handler in REQ_RCVD or REP_RCVD, cma_ib_handler):
         * REJECTED with its reason, also to a request not accepted */
        id->state = SV_CM_DISCONNECTED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED, m->reason, m,
                         SV_CM_REJ_PRIV);
    }
}

/* SIDR REQ (the listener's child, IDLE): CONNECT_REQUEST with its
 * private data, no address (IBA 12.11) */
void sv_cm_handle_sidr_req(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    memcpy(&id->id.route.addr.src_storage, &m->dst, sizeof(m->dst));
    memcpy(&id->id.route.addr.dst_storage, &m->src, sizeof(m->src));
    sv_cm_take_peer(id, m);
    id->state = SV_CM_REQ_RCVD;
    sv_cm_event_ud(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m,
                   SV_CM_SIDR_REQ_PRIV, 0);
}

/* SIDR REP: the active UD id's answer, ESTABLISHED with the peer's QP
 * number and Q_Key, or UNREACHABLE with the SIDR status */
void sv_cm_handle_sidr_rep(struct sv_cm_id *id, const struct sv_cm_msg *m)
{
    sv_cm_close_sock(id);
    if (id->state == SV_CM_CONNECT) {
        id->state = (m->reason == 0) ? SV_CM_CONNECTED :
                    SV_CM_ROUTE_RESOLVED;
        sv_cm_event_ud(id, (m->reason == 0) ? RDMA_CM_EVENT_ESTABLISHED :
                       RDMA_CM_EVENT_UNREACHABLE, m->reason, m,
                       SV_CM_SIDR_REP_PRIV, m->reason == 0);
    }
}

/* Connect to the listener of dst: its exact address, else the wildcard */
static int sv_cm_dial(struct sv_cm_id *id)
{
    const struct sockaddr *dst = &id->id.route.addr.dst_addr;
    struct sockaddr_un un;
    socklen_t len;
    int fd, w;

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    for (w = 0; w < 2; w++) {
        len = sv_cm_sock_name(&un, id->id.ps, dst, w);
        if ((len != 0) && (connect(fd, (struct sockaddr *)&un, len) == 0)) {
            return fd;
        }
    }
    close(fd);
    return -1;
}

/* man rdma_listen: the id must be bound; backlog 0 or less: the default.
 * A reusable id must overlap nobody (the kernel's rdma_listen checks it
 * again without the flag and clears it); the listener owns the socket
 * that connecting ids dial (sv_cm_dial) */
static int sv_cm_api_listen(struct rdma_cm_id *cm_id, int backlog)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sockaddr_un un;
    socklen_t len;
    int fd, err;

    if ((id == NULL) || (id->state != SV_CM_ADDR_BOUND)) {
        errno = EINVAL;
        return -1;
    }
    if (sv_cm_port_listen(id) != 0) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    len = sv_cm_sock_name(&un, cm_id->ps, &cm_id->route.addr.src_addr, 0);
    if ((bind(fd, (struct sockaddr *)&un, len) != 0) &&
        ((errno != EADDRINUSE) || (sv_cm_sock_reclaim(&un, len) != 0) ||
         (bind(fd, (struct sockaddr *)&un, len) != 0))) {
        /* EADDRINUSE: a wildcard listener of the other family, both
         * af-only, on the port (their sockets share the name) */
        err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    if (listen(fd, (backlog > 0) ? backlog : 1024) != 0) {
        /* EADDRINUSE: a wildcard listener of the other family, both
         * af-only, on the port (their sockets share the name) */
        err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    id->sock       = fd;
    id->backlog    = backlog;
    id->listen_pid = getpid();
    id->state      = SV_CM_LISTEN;
    sv_cm_channel_watch(id, id->sock, sv_cm_listen_input);
    return 0;
}

SV_CM_EXPORT int rdma_listen(struct rdma_cm_id *cm_id, int backlog)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_listen(cm_id, backlog);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_connect(struct rdma_cm_id *cm_id,
                             struct rdma_conn_param *param)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;
    uint8_t max_resp, max_init;

    if ((id == NULL) || (id->state != SV_CM_ROUTE_RESOLVED) ||
        ((param != NULL) &&
         (param->private_data_len > (sv_cm_is_ud(id) ? SV_CM_SIDR_REQ_PRIV :
                                                       SV_CM_REQ_PRIV))) ||
        ((param != NULL) && (param->private_data_len > 0) &&
         (param->private_data == NULL))) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_dev_rd_atom(id, &max_resp, &max_init);
    if (sv_cm_valid_param(id, param, max_resp, max_init) != 0) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_resources(id, param, 0, max_resp, max_init);
    if (param != NULL) {
        id->conn = *param;
    } else {
        memset(&id->conn, 0, sizeof(id->conn));
        id->conn.rnr_retry_count = 7;
        id->conn.retry_count     = 7;
    }
    id->sock = sv_cm_dial(id);
    if ((id->sock < 0) && sv_cm_is_ud(id)) {
        /* nobody listens there: SIDR REP "unsupported" */
        sv_cm_msg_init(id, &m, SV_CM_MSG_SIDR_REP, NULL, 0);
        sv_cm_event_ud(id, RDMA_CM_EVENT_UNREACHABLE, SV_CM_SIDR_UNSUPPORTED,
                       &m, SV_CM_SIDR_REP_PRIV, 0);
        return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ESTABLISHED) :
                          0;
    }
    if (id->sock < 0) {
        /* nobody listens there: the REQ is rejected (invalid service) */
        sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED,
                         SV_CM_REJ_INVALID_SERVICE_ID, NULL, 0);
        return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ESTABLISHED) :
                          0;
    }
    sv_cm_msg_init(id, &m, sv_cm_is_ud(id) ? SV_CM_MSG_SIDR_REQ :
                                             SV_CM_MSG_REQ,
                   id->conn.private_data, id->conn.private_data_len);
    m.qpn        = cm_id->qp ? cm_id->qp->qp_num : id->conn.qp_num;
    m.resp_res   = id->resp_res;
    m.init_depth = id->init_depth;
    m.retry      = id->conn.retry_count & 7;
    m.rnr_retry  = id->conn.rnr_retry_count & 7;
    id->conn.private_data = NULL; /* the user's buffer is not kept */
    id->state = SV_CM_CONNECT;
    sv_cm_channel_watch(id, id->sock, sv_cm_conn_input);
    if (sv_cm_send(id, &m) != 0) {
        sv_cm_handle_gone(id);
    }
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

SV_CM_EXPORT int rdma_connect(struct rdma_cm_id *cm_id,
                              struct rdma_conn_param *param)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_connect(cm_id, param);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_accept(struct rdma_cm_id *cm_id,
                            struct rdma_conn_param *param)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;
    uint8_t max_resp, max_init;

    if ((id == NULL) || (id->state != SV_CM_REQ_RCVD) ||
        ((param != NULL) &&
         (param->private_data_len > (sv_cm_is_ud(id) ? SV_CM_SIDR_REP_PRIV :
                                                       SV_CM_REP_PRIV)))) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_dev_rd_atom(id, &max_resp, &max_init);
    if (sv_cm_valid_param(id, param, max_resp, max_init) != 0) {
        errno = EINVAL;
        return -1;
    }
    if (sv_cm_is_ud(id)) {
        /* SIDR REP with our QP: connectionless, no event on this side */
        sv_cm_msg_init(id, &m, SV_CM_MSG_SIDR_REP,
                       param ? param->private_data : NULL,
                       param ? param->private_data_len : 0);
        m.qpn  = cm_id->qp ? cm_id->qp->qp_num : (param ? param->qp_num : 0);
        m.qkey = SV_CM_UDP_QKEY;
        sv_cm_send(id, &m);
        sv_cm_close_sock(id);
        id->state = SV_CM_CONNECTED;
        return 0;
    }
    if (param != NULL) {
        id->conn = *param;
    } else {
        memset(&id->conn, 0, sizeof(id->conn));
        id->conn.rnr_retry_count = 7;
    }
    sv_cm_resources(id, param, 1, max_resp, max_init);
    if ((cm_id->qp != NULL) && (sv_cm_qp_to_rtr_rts(id) != 0)) {
        return -1;
    }
    sv_cm_msg_init(id, &m, SV_CM_MSG_REP, param ? param->private_data : NULL,
                   param ? param->private_data_len : 0);
    m.qpn        = cm_id->qp ? cm_id->qp->qp_num : id->conn.qp_num;
    m.resp_res   = id->resp_res;
    m.init_depth = id->init_depth;
    m.rnr_retry  = id->conn.rnr_retry_count & 7;
    id->conn.private_data = NULL;
    id->state = SV_CM_REP_SENT;
    if (sv_cm_send(id, &m) != 0) {
        sv_cm_handle_gone(id);
    }
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

SV_CM_EXPORT int rdma_accept(struct rdma_cm_id *cm_id,
                             struct rdma_conn_param *param)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_accept(cm_id, param);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_reject(struct rdma_cm_id *cm_id,
                            const void *private_data, uint8_t len)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;

    if ((id == NULL) || (id->state != SV_CM_REQ_RCVD) ||
        (len > SV_CM_REJ_PRIV)) {
        errno = EINVAL;
        return -1;
    }
    if (sv_cm_is_ud(id)) {
        sv_cm_msg_init(id, &m, SV_CM_MSG_SIDR_REP, private_data,
                       (len > SV_CM_SIDR_REP_PRIV) ? SV_CM_SIDR_REP_PRIV : len);
        m.reason = SV_CM_SIDR_REJECT;
    } else {
        sv_cm_msg_init(id, &m, SV_CM_MSG_REJ, private_data, len);
        m.reason = SV_CM_REJ_CONSUMER_DEFINED;
    }
    sv_cm_send(id, &m);
    sv_cm_close_sock(id);
    id->state = SV_CM_DISCONNECTED;
    return 0;
}

SV_CM_EXPORT int rdma_reject(struct rdma_cm_id *cm_id,
                             const void *private_data, uint8_t len)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_reject(cm_id, private_data, len);
    sv_cm_unlock();
    return ret;
}

/* The active side without a QP of its own, after CONNECT_RESPONSE */
static int sv_cm_api_establish(struct rdma_cm_id *cm_id)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;

    if ((id == NULL) || (id->state != SV_CM_REP_RCVD)) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_msg_init(id, &m, SV_CM_MSG_RTU, NULL, 0);
    if (sv_cm_send(id, &m) != 0) {
        return -1;
    }
    id->state = SV_CM_CONNECTED;
    return 0;
}

SV_CM_EXPORT int rdma_establish(struct rdma_cm_id *cm_id)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_establish(cm_id);
    sv_cm_unlock();
    return ret;
}

/* man rdma_get_request: a synchronous listener's next connection request;
 * the new id is synchronous too */
static int sv_cm_api_get_request(struct rdma_cm_id *listen_id,
                                 struct rdma_cm_id **id_p)
{
    struct sv_cm_id *listener = sv_cm_id(listen_id);
    struct rdma_cm_event *ev;
    struct sv_cm_channel *chan;
    struct sv_cm_id *child;

    if ((listener == NULL) || !listener->sync ||
        (listener->state != SV_CM_LISTEN)) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        if (sv_cm_sync_wait(listener, &ev) != 0) {
            return -1;
        }
        if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            break;
        }
        rdma_ack_cm_event(ev);
    }
    child = sv_cm_id(ev->id);
    chan  = sv_cm_channel_new();
    if ((chan == NULL) || (rdma_migrate_id(&child->id, &chan->ch) != 0)) {
        rdma_ack_cm_event(ev);
        return -1;
    }
    child->sync       = 1;
    child->id.channel = NULL;
    /* the request stays readable in the new id's event (its private
     * data), as rdma-core's rdma_get_request leaves it */
    child->id.event   = ev;
    if (listener->ep_qp_attr != NULL) {
        struct ibv_qp_init_attr attr = *listener->ep_qp_attr;

        if (rdma_create_qp(&child->id, listener->ep_pd, &attr) != 0) {
            rdma_reject(&child->id, NULL, 0);
            rdma_destroy_id(&child->id);
            return -1;
        }
    }
    *id_p = &child->id;
    return 0;
}

SV_CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen_id,
                                  struct rdma_cm_id **id_p)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_get_request(listen_id, id_p);
    sv_cm_unlock();
    return ret;
}
