/*
 * softverbs librdmacm: connections. The IBA CM exchange (IBA spec 12.4 and
 * 12.9; the kernel's drivers/infiniband/core/cm.c, cma.c) with one message
 * per MAD over the ids' unix stream sockets:
 *
 *   active                        passive
 *   rdma_connect   -- REQ -->     listener accepts: CONNECT_REQUEST
 *                  <-- REP --     rdma_accept (its QP to RTR/RTS)
 *   ESTABLISHED    -- RTU -->     ESTABLISHED
 *   (or, without a QP: CONNECT_RESPONSE, then rdma_establish sends RTU)
 *                  <-- REJ --     rdma_reject: REJECTED, consumer reason
 *   rdma_disconnect -- DREQ -->   DISCONNECTED (QP to ERR)
 *   DISCONNECTED   <-- DREP --
 *
 * Nobody listening on the address: REJECTED with the IB CM reason "invalid
 * service ID" (8), as a REQ to an unknown service gets on a fabric. A peer
 * that goes away (its process died: the socket closes) during the
 * handshake gives UNREACHABLE (active) or CONNECT_ERROR (passive) with
 * -ETIMEDOUT, as the lost MADs would after their timeouts; once
 * connected, DISCONNECTED.
 *
 * Private data, as the IBA CM MADs carry it: REQ 92 bytes less the
 * 36-byte CMA header of RDMA_PS_TCP (56 for the user), REP 196, REJ 148;
 * more is EINVAL. The receiver's event gives the whole field (its length is
 * the field's, zero-padded), as the kernel's CM reports it.
 *
 * UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB) resolve the peer's QP with the
 * connectionless SIDR exchange (IBA 12.11): SIDR REQ (216 bytes less the
 * CMA header: 180 for the user) gives the listener a CONNECT_REQUEST;
 * rdma_accept answers SIDR REP (136) with its QP number and Q_Key, and
 * gives the passive side no event; the active side gets ESTABLISHED with
 * param.ud (address handle attributes, QP number, Q_Key). Nobody
 * listening: UNREACHABLE with the SIDR status "unsupported" (1);
 * rdma_reject: UNREACHABLE, status "reject" (2) (the kernel's
 * cma_sidr_rep_handler and cm.c's cm_sidr_req_handler).
 *
 * Timewait (the kernel's cm.c, cm_enter_timewait and
 * cm_timewait_handler, and cma.c's cma_ib_handler): after a connection
 * ends, the IB CM keeps it in timewait, so that stray packets of the old
 * QP die out, and then reports IB_CM_TIMEWAIT_EXIT, which the RDMA CM
 * gives an id that got DISCONNECTED as RDMA_CM_EVENT_TIMEWAIT_EXIT (with
 * or without a QP; never a destroyed id, whose cm_id is gone, nor a UD id).
 * Timewait begins when the DREP answering this side's DREQ arrives (or the
 * DREQ goes unanswered: the peer is gone), or, on the side that got the
 * peer's DREQ, when it sends the DREP: when the application calls
 * rdma_disconnect after DISCONNECTED (here the peer had its DREP at once;
 * the timewait still waits for that call, as the kernel's does). It lasts
 * cm_convert_to_ms of the connection's ACK timeout: the path's packet life
 * time (SV_CM_PACKET_LIFE_TIME, 14) combined with the CA's ACK delay (16)
 * as cm_ack_timeout does gives 17, i.e. 2^(17-8) = 512 ms, on both sides
 * (the passive side's path has the life time the REQ's ACK timeout
 * implies, cm_format_paths_from_req).
 */
#include "sv_cm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SV_CM_REQ_PRIV   56
#define SV_CM_REP_PRIV   196
#define SV_CM_REJ_PRIV   148
#define SV_CM_SIDR_REQ_PRIV 180
#define SV_CM_SIDR_REP_PRIV 136
#define SV_CM_REJ_INVALID_SERVICE_ID 8   /* IBA table 112, reject reasons */
#define SV_CM_REJ_TIMEOUT            1
#define SV_CM_REJ_CONSUMER_DEFINED   28
/* the device's max_qp_rd_atom, should its query fail (sv_dev.c) */
#define SV_CM_RD_ATOM_DEFAULT 16
#define SV_CM_SIDR_UNSUPPORTED       1   /* IBA table 124, SIDR REP status */
#define SV_CM_SIDR_REJECT            2
#define SV_CM_UDP_QKEY 0x01234567        /* RDMA_UDP_QKEY of rdma-core */

enum sv_cm_msg_type {
    SV_CM_MSG_REQ = 1,
    SV_CM_MSG_REP,
    SV_CM_MSG_RTU,
    SV_CM_MSG_REJ,
    SV_CM_MSG_DREQ,
    SV_CM_MSG_DREP,
    SV_CM_MSG_SIDR_REQ,
    SV_CM_MSG_SIDR_REP,
};

/* One CM message; always sent and read whole */
struct sv_cm_msg {
    uint32_t type;
    uint32_t qpn;
    uint32_t psn;
    int32_t  reason;                   /* REJ, SIDR REP status */
    uint32_t qkey;                     /* SIDR REP */
    uint16_t lid;
    uint8_t  resp_res;
    uint8_t  init_depth;
    uint8_t  retry;
    uint8_t  rnr_retry;
    uint8_t  priv_len;
    uint8_t  pad;
    union ibv_gid gid;
    struct sockaddr_storage src;
    struct sockaddr_storage dst;
    uint8_t  priv[SV_CM_PRIV_MAX];
};

int sv_cm_qp_to_rtr_rts(struct sv_cm_id *id);
void sv_cm_qp_to_err(struct sv_cm_id *id);

static int sv_cm_send(struct sv_cm_id *id, struct sv_cm_msg *m)
{
    ssize_t n;

    if (id->sock < 0) {
        errno = ENOTCONN;
        return -1;
    }
    n = send(id->sock, m, sizeof(*m), MSG_NOSIGNAL);
    return (n == (ssize_t)sizeof(*m)) ? 0 : -1;
}

static void sv_cm_msg_init(struct sv_cm_id *id, struct sv_cm_msg *m,
                           enum sv_cm_msg_type type, const void *priv,
                           uint8_t len)
{
    struct ibv_port_attr pa;

    memset(m, 0, sizeof(*m));
    m->type = type;
    m->psn  = id->psn;
    if ((id->id.verbs != NULL) &&
        (ibv_query_port(id->id.verbs, id->id.port_num, &pa) == 0)) {
        m->lid = pa.lid;
        ibv_query_gid(id->id.verbs, id->id.port_num, 0, &m->gid);
    }
    memcpy(&m->src, &id->id.route.addr.src_storage, sizeof(m->src));
    memcpy(&m->dst, &id->id.route.addr.dst_storage, sizeof(m->dst));
    if ((priv != NULL) && (len > 0)) {
        memcpy(m->priv, priv, len);
    }
    m->priv_len = len;
}

static void sv_cm_close_sock(struct sv_cm_id *id)
{
    if (id->sock >= 0) {
        sv_cm_channel_unwatch(id, id->sock);
        close(id->sock);
        id->sock = -1;
    }
}

/* An event of id with the private data of m (the whole field len) */
static void sv_cm_event_conn(struct sv_cm_id *id, enum rdma_cm_event_type t,
                             int status, const struct sv_cm_msg *m,
                             uint8_t field_len)
{
    struct sv_cm_event *ev = sv_cm_event_new(id, t, status);

    if (ev == NULL) {
        return;
    }
    if (m != NULL) {
        memcpy(ev->priv, m->priv, field_len);
        ev->event.param.conn.private_data     = ev->priv;
        ev->event.param.conn.private_data_len = field_len;
        /* the peer's resources, seen from this side: its initiator depth
         * is what we must answer, and the reverse (cma.c) */
        ev->event.param.conn.responder_resources = m->init_depth;
        ev->event.param.conn.initiator_depth     = m->resp_res;
        ev->event.param.conn.retry_count         = m->retry;
        ev->event.param.conn.rnr_retry_count     = m->rnr_retry;
        ev->event.param.conn.qp_num              = m->qpn;
    }
    if (id->listen != NULL && t == RDMA_CM_EVENT_CONNECT_REQUEST) {
        ev->event.listen_id = &id->listen->id;
    }
    sv_cm_event_queue(ev);
}

static int sv_cm_is_ud(const struct sv_cm_id *id)
{
    return id->id.qp_type == IBV_QPT_UD;
}

/* The ACK timeout (exponent of 4.096 us) the IB CM derives from a packet
 * life time and a CA's ACK delay: twice the life time plus the delay, that
 * is the larger of (life time + 1) and the delay, plus one if the smaller
 * is within one of it (the kernel's cm_ack_timeout) */
static int sv_cm_ack_timeout(int ack_delay, int life_time)
{
    int hi = (life_time + 1 > ack_delay) ? life_time + 1 : ack_delay;
    int lo = (life_time + 1 > ack_delay) ? ack_delay : life_time + 1;
    int t  = hi + (lo >= hi - 1);

    return (t > 31) ? 31 : t;
}

static int sv_cm_ack_delay(struct sv_cm_id *id)
{
    struct ibv_device_attr da;

    if ((id->id.verbs == NULL) || (ibv_query_device(id->id.verbs, &da) != 0)) {
        return 0;
    }
    return da.local_ca_ack_delay;
}

/* cm_enter_timewait: the IB CM's timewait of the connection begins; it
 * lasts cm_convert_to_ms(av.timeout): the active side's av.timeout is the
 * ACK timeout of its path with the target's ACK delay (cm_rep_handler),
 * the passive side's its path's life time + 1 (cm_init_av_by_path) */
static void sv_cm_timewait_enter(struct sv_cm_id *id)
{
    int t;

    if (sv_cm_is_ud(id) ||
        ((id->tw != SV_CM_TW_NONE) && (id->tw != SV_CM_TW_DREQ_RCVD))) {
        return;
    }
    t = (id->listen != NULL) ? id->path.packet_life_time + 1 :
        sv_cm_ack_timeout(sv_cm_ack_delay(id), id->path.packet_life_time);
    id->tw          = SV_CM_TW_WAIT;
    id->tw_deadline = sv_cm_now_ns() +
                      (1000000ull << ((t > 8) ? t - 8 : 0));
    sv_cm_timer_arm(id->tw_deadline);
}

/* cm_timewait_handler, cma_ib_handler: the id still exists (a destroyed
 * one is not in the CM thread's list) and is disconnected */
void sv_cm_timewait_exit(struct sv_cm_id *id)
{
    id->tw = SV_CM_TW_DONE;
    if (id->state == SV_CM_DISCONNECTED) {
        sv_cm_event_conn(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
    }
}

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
            ud->ah_attr.is_global     = 1;
            ud->ah_attr.grh.dgid      = m->gid;
            ud->ah_attr.grh.hop_limit = 64;
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

/* The listener: a new connection (its REQ comes next, on its socket) */
void sv_cm_listen_input(struct sv_cm_id *listener)
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
        sv_cm_channel_watch(child, fd);
    }
}

/* A child whose peer left before its REQ: nobody knows it, it goes */
static void sv_cm_child_drop(struct sv_cm_id *id)
{
    sv_cm_close_sock(id);
    rdma_destroy_id(&id->id);
}

static void sv_cm_handle_req(struct sv_cm_id *id, const struct sv_cm_msg *m)
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

static void sv_cm_handle_rep(struct sv_cm_id *id, const struct sv_cm_msg *m)
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

/* The peer's socket closed (its process exited or died) */
static void sv_cm_handle_gone(struct sv_cm_id *id)
{
    enum sv_cm_state st = id->state;

    sv_cm_close_sock(id);
    /* UD has no connection: a SIDR peer that goes away changes nothing
     * here (the kernel's CM neither moves the QP nor reports it), but for
     * a request still unanswered and a child whose REQ never came */
    if (sv_cm_is_ud(id) && (st != SV_CM_CONNECT) &&
        !((id->listen != NULL) && (st == SV_CM_IDLE))) {
        return;
    }
    switch (st) {
    case SV_CM_CONNECT:
        id->state = SV_CM_ROUTE_RESOLVED;
        /* The kernel's CM rejects the REQ of an id destroyed in REQ_RCVD
         * (cm_destroy_id: IB_CM_REJ_CONSUMER_DEFINED), which is what a
         * listener's death does to a request it holds; the REQ of a UD id
         * (SIDR) has no reject and times out */
        if (id->id.qp_type == IBV_QPT_UD) {
            sv_cm_event_conn(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL,
                             0);
        } else {
            sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED,
                             SV_CM_REJ_CONSUMER_DEFINED, NULL, 0);
        }
        break;
    case SV_CM_REQ_RCVD:
    case SV_CM_REP_SENT:
        id->state = SV_CM_DISCONNECTED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL,
                         0);
        break;
    case SV_CM_CONNECTED:
    case SV_CM_REP_RCVD:
        /* a peer that dies sends its DREQ (cm_destroy_id) */
        sv_cm_qp_to_err(id);
        id->state = SV_CM_DISCONNECTED;
        id->tw    = SV_CM_TW_DREQ_RCVD;
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        break;
    case SV_CM_DISCONNECTED:
        if (id->disc_pending) {
            /* our DREQ's answer will not come: the peer is gone */
            id->disc_pending = 0;
            sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
            sv_cm_timewait_enter(id);
        }
        break;
    default:
        if (id->listen != NULL) {
            sv_cm_child_drop(id); /* before its REQ */
        }
        break;
    }
}

void sv_cm_conn_input(struct sv_cm_id *id)
{
    struct sv_cm_msg m, reply;
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
            memcpy(&id->id.route.addr.src_storage, &m.dst, sizeof(m.dst));
            memcpy(&id->id.route.addr.dst_storage, &m.src, sizeof(m.src));
            sv_cm_take_peer(id, &m);
            id->state = SV_CM_REQ_RCVD;
            sv_cm_event_ud(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &m,
                           SV_CM_SIDR_REQ_PRIV, 0);
        }
        break;
    case SV_CM_MSG_SIDR_REP:
        sv_cm_close_sock(id);
        if (id->state == SV_CM_CONNECT) {
            id->state = (m.reason == 0) ? SV_CM_CONNECTED :
                        SV_CM_ROUTE_RESOLVED;
            sv_cm_event_ud(id, (m.reason == 0) ? RDMA_CM_EVENT_ESTABLISHED :
                           RDMA_CM_EVENT_UNREACHABLE, m.reason, &m,
                           SV_CM_SIDR_REP_PRIV, m.reason == 0);
        }
        break;
    case SV_CM_MSG_REP:
        if (id->state == SV_CM_CONNECT) {
            sv_cm_handle_rep(id, &m);
        }
        break;
    case SV_CM_MSG_RTU:
        if (id->state == SV_CM_REP_SENT) {
            id->state = SV_CM_CONNECTED;
            sv_cm_event_conn(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
        }
        break;
    case SV_CM_MSG_REJ:
        sv_cm_close_sock(id);
        if (id->state == SV_CM_CONNECT) {
            /* rdma-core moves the active QP to ERR on REJECTED */
            sv_cm_qp_to_err(id);
            id->state = SV_CM_ROUTE_RESOLVED;
            sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED, m.reason, &m,
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
            sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED, m.reason, &m,
                             SV_CM_REJ_PRIV);
        }
        break;
    case SV_CM_MSG_DREQ:
        /* DISCONNECTED at once; the DREP goes at once too (the kernel's CM
         * waits for this side's rdma_disconnect or destroy to send it, and
         * the peer times out otherwise: here the peer is told now). The QP
         * goes to ERR with this side's rdma_disconnect, as in rdma-core */
        sv_cm_msg_init(id, &reply, SV_CM_MSG_DREP, NULL, 0);
        sv_cm_send(id, &reply);
        sv_cm_close_sock(id);
        /* both sides may disconnect at once: their DREQs cross, and each
         * answers the other's */
        id->state        = SV_CM_DISCONNECTED;
        id->disc_pending = 0;
        if (id->tw == SV_CM_TW_NONE) {
            id->tw = SV_CM_TW_DREQ_RCVD; /* timewait at rdma_disconnect */
        }
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        break;
    case SV_CM_MSG_DREP:
        sv_cm_close_sock(id);
        if (id->disc_pending) {
            id->disc_pending = 0;
            sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
            sv_cm_timewait_enter(id);
        }
        break;
    default:
        break;
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
        if (connect(fd, (struct sockaddr *)&un, len) == 0) {
            return fd;
        }
    }
    close(fd);
    return -1;
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
    sv_cm_channel_watch(id, id->sock);
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

/* man rdma_disconnect: the QP goes to ERR, both sides get DISCONNECTED */
static int sv_cm_api_disconnect(struct rdma_cm_id *cm_id)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;

    if (id == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (id->state == SV_CM_DISCONNECTED) {
        /* the peer disconnected first: answering it (its DREP went),
         * which starts the timewait (cm_enter_timewait of ib_send_cm_drep) */
        sv_cm_qp_to_err(id);
        if (id->tw == SV_CM_TW_DREQ_RCVD) {
            sv_cm_timewait_enter(id);
        }
        return 0;
    }
    if ((id->state != SV_CM_CONNECTED) && (id->state != SV_CM_REP_SENT) &&
        (id->state != SV_CM_REP_RCVD)) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_qp_to_err(id);
    sv_cm_msg_init(id, &m, SV_CM_MSG_DREQ, NULL, 0);
    id->state        = SV_CM_DISCONNECTED;
    id->disc_pending = 1;
    if (sv_cm_send(id, &m) != 0) {
        id->disc_pending = 0;
        /* the peer is gone already */
        sv_cm_close_sock(id);
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        sv_cm_timewait_enter(id);
    }
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_DISCONNECTED) : 0;
}

SV_CM_EXPORT int rdma_disconnect(struct rdma_cm_id *cm_id)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_disconnect(cm_id);
    sv_cm_unlock();
    return ret;
}

/*
 * rdma_destroy_id: the peer is told what the kernel's cm_destroy_id sends
 * for the IB CM state. A connection not established yet is rejected (REJ:
 * "timeout" from an active side still waiting for the REP, as for
 * IB_CM_REQ_SENT; "consumer defined" once a REQ or a REP was received or a
 * REP sent), and the peer's id gets REJECTED; an established one is
 * disconnected (DREQ), and the peer's id gets DISCONNECTED. A DREQ for a
 * request not yet accepted gave its listener's user a DISCONNECTED for an
 * id it never accepted, which UCX's rdmacm took for one of its endpoints.
 */
void sv_cm_conn_close(struct sv_cm_id *id)
{
    struct sv_cm_msg m;

    if ((id->sock >= 0) && (id->state != SV_CM_LISTEN) &&
        (id->state != SV_CM_DISCONNECTED)) {
        switch (sv_cm_is_ud(id) ? SV_CM_CONNECTED : id->state) {
        case SV_CM_CONNECT:
            sv_cm_msg_init(id, &m, SV_CM_MSG_REJ, NULL, 0);
            m.reason = SV_CM_REJ_TIMEOUT;
            break;
        case SV_CM_REQ_RCVD:
        case SV_CM_REP_SENT:
        case SV_CM_REP_RCVD:
            sv_cm_msg_init(id, &m, SV_CM_MSG_REJ, NULL, 0);
            m.reason = SV_CM_REJ_CONSUMER_DEFINED;
            break;
        default:
            sv_cm_msg_init(id, &m, SV_CM_MSG_DREQ, NULL, 0);
            break;
        }
        sv_cm_send(id, &m);
    }
    sv_cm_close_sock(id);
    sv_cm_channel_drop(id->chan, id);
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
    rdma_ack_cm_event(ev);
    chan = sv_cm_channel_new();
    if ((chan == NULL) || (rdma_migrate_id(&child->id, &chan->ch) != 0)) {
        return -1;
    }
    child->sync       = 1;
    child->id.channel = NULL;
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
