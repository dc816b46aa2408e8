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
 *
 * Here the messages and their dispatch; the establishment (REQ, REP, RTU,
 * REJ, SIDR, the resources of a connection) is in sv_cm_conn_setup.c, the
 * end of a connection (DREQ, DREP, a peer gone, timewait, rdma_disconnect,
 * the close of a destroyed id) in sv_cm_conn_teardown.c.
 */
#include "sv_cm_conn.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

int sv_cm_send(struct sv_cm_id *id, struct sv_cm_msg *m)
{
    ssize_t n;

    if (id->sock < 0) {
        errno = ENOTCONN;
        return -1;
    }
    n = send(id->sock, m, sizeof(*m), MSG_NOSIGNAL);
    return (n == (ssize_t)sizeof(*m)) ? 0 : -1;
}

void sv_cm_msg_init(struct sv_cm_id *id, struct sv_cm_msg *m,
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
        sv_cm_gid_index(id, &m->gid);
    }
    memcpy(&m->src, &id->id.route.addr.src_storage, sizeof(m->src));
    memcpy(&m->dst, &id->id.route.addr.dst_storage, sizeof(m->dst));
    if ((priv != NULL) && (len > 0)) {
        memcpy(m->priv, priv, len);
    }
    m->priv_len = len;
}

void sv_cm_close_sock(struct sv_cm_id *id)
{
    if (id->sock >= 0) {
        sv_cm_channel_unwatch(id, id->sock);
        close(id->sock);
        id->sock = -1;
    }
}

/* An event of id with the private data of m (the whole field len) */
void sv_cm_event_conn(struct sv_cm_id *id, enum rdma_cm_event_type t,
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

int sv_cm_is_ud(const struct sv_cm_id *id)
{
    return id->id.qp_type == IBV_QPT_UD;
}

/* The ACK timeout (exponent of 4.096 us) the IB CM derives from a packet
 * life time and a CA's ACK delay: twice the life time plus the delay, that
 * is the larger of (life time + 1) and the delay, plus one if the smaller
 * is within one of it (the kernel's cm_ack_timeout) */
int sv_cm_ack_timeout(int ack_delay, int life_time)
{
    int hi = (life_time + 1 > ack_delay) ? life_time + 1 : ack_delay;
    int lo = (life_time + 1 > ack_delay) ? ack_delay : life_time + 1;
    int t  = hi + (lo >= hi - 1);

    return (t > 31) ? 31 : t;
}

int sv_cm_ack_delay(struct sv_cm_id *id)
{
    struct ibv_device_attr da;

    if ((id->id.verbs == NULL) || (ibv_query_device(id->id.verbs, &da) != 0)) {
        return 0;
    }
    return da.local_ca_ack_delay;
}
