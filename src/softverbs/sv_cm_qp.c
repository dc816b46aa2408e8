/*
 * softverbs librdmacm: the QP of an id (rdma_create_qp(3)), its states as
 * the CM moves it, SRQs, endpoints (rdma_create_ep), and what softverbs'
 * CM does not offer (multicast, rsockets, ECE rejects), which fails
 * cleanly.
 *
 * rdma_create_qp, as its manual page and rdma-core's cma.c have it: the id
 * must be bound to a device (else EINVAL); the PD must be of that device
 * (EINVAL), NULL meaning the CM's default PD of the device; one QP per id
 * (EINVAL for a second); NULL CQs are created by the CM, each with a
 * completion channel, sized by the send and receive queue lengths, exposed
 * as id->send_cq(_channel) and id->recv_cq(_channel) and destroyed with the
 * QP; the caps granted are written back. The QP is left ready to post
 * receives (INIT: RC with remote read and write, UD with the CM's Q_Key);
 * UD goes on to RTS at once (ready to send unconnected), RC to RTR/RTS when
 * the connection is made (rdma_connect/rdma_accept), to ERR when it ends.
 *
 * XRC (RDMA_PS_IB ids of the QP types IBV_QPT_XRC_SEND/_RECV, as
 * rdma_xclient/rdma_xserver -c x make them): an XRC_RECV QP and an SRQ of an
 * XRC_RECV id without an XRC domain of the application's get the CM's
 * domain of the device (rdma-core's ucma_get_xrcd); rdma_create_srq on such
 * an id makes an XRC SRQ, its completions on the id's receive CQ (created
 * for it when the id has none), which outlives the QP: it goes with the
 * SRQ. Both XRC QP types move through RTR/RTS with RC's attributes;
 * softverbs drops those an XRC QP ignores, as the kernel does.
 */
#include "sv_cm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SV_CM_UDP_QKEY 0x01234567  /* RDMA_UDP_QKEY of rdma-core's cma.h */

/* The QP types the CM connects (REQ/REP and RTR/RTS) */
static int sv_cm_qp_connected(enum ibv_qp_type t)
{
    return (t == IBV_QPT_RC) || (t == IBV_QPT_XRC_SEND) ||
           (t == IBV_QPT_XRC_RECV);
}

static int sv_cm_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    int ret = ibv_modify_qp(qp, a, mask);

    if (ret != 0) {
        errno = ret;
        return -1;
    }
    return 0;
}

static int sv_cm_qp_to_init(struct sv_cm_id *id)
{
    struct ibv_qp_attr a;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    memset(&a, 0, sizeof(a));
    a.qp_state   = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num   = id->id.port_num;
    if (id->id.qp->qp_type == IBV_QPT_UD) {
        a.qkey = SV_CM_UDP_QKEY;
        mask  |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        mask             |= IBV_QP_ACCESS_FLAGS;
    }
    return sv_cm_modify(id->id.qp, &a, mask);
}

/* UD: ready to send as soon as created */
static int sv_cm_ud_to_rts(struct sv_cm_id *id)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (sv_cm_modify(id->id.qp, &a, IBV_QP_STATE) != 0) {
        return -1;
    }
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn   = id->psn;
    return sv_cm_modify(id->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The local ACK timeout of the id's QP: RDMA_OPTION_ID_ACK_TIMEOUT if set
 * (the kernel's rdma_init_qp_attr uses id_priv->timeout when timeout_set),
 * else 14 (4.096 us x 2^14, about 67 ms) */
static uint8_t sv_cm_ack_timeout(const struct sv_cm_id *id)
{
    return id->ack_timeout_set ? id->ack_timeout : 14;
}

/* RC: RTR toward the peer of the REQ/REP, then RTS (cma.c's
 * rdma_init_qp_attr values: the path's MTU and LID, the peer's QPN and
 * PSN, reads in flight from the agreed resources) */
int sv_cm_qp_to_rtr_rts(struct sv_cm_id *id)
{
    struct ibv_port_attr pa;
    struct ibv_qp_attr a;

    if (!sv_cm_qp_connected(id->id.qp->qp_type)) {
        return 0;
    }
    if (ibv_query_port(id->id.verbs, id->id.port_num, &pa) != 0) {
        pa.active_mtu = IBV_MTU_1024;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = pa.active_mtu;
    a.dest_qp_num        = id->peer_qpn;
    a.rq_psn             = id->peer_psn;
    a.max_dest_rd_atomic = id->resp_res ? id->resp_res : 1;
    a.min_rnr_timer      = 12;
    a.ah_attr.dlid       = id->peer_lid;
    a.ah_attr.port_num   = id->id.port_num;
    if (id->peer_lid == 0) {
        sv_cm_ah_global(id, &a.ah_attr, &id->peer_gid);
    }
    if (sv_cm_modify(id->id.qp, &a, IBV_QP_STATE | IBV_QP_AV |
                     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.sq_psn        = id->psn;
    a.timeout       = sv_cm_ack_timeout(id);
    a.retry_cnt     = id->peer_retry ? id->peer_retry :
                      (id->conn.retry_count & 7);
    a.rnr_retry     = id->conn.rnr_retry_count & 7;
    a.max_rd_atomic = id->init_depth ? id->init_depth : 1;
    return sv_cm_modify(id->id.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                        IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC);
}

void sv_cm_qp_to_err(struct sv_cm_id *id)
{
    struct ibv_qp_attr a;

    if (id->id.qp != NULL) {
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_ERR;
        ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
    }
}

static void sv_cm_destroy_cqs(struct sv_cm_id *id)
{
    struct rdma_cm_id *c = &id->id;

    if (!id->own_cqs) {
        return;
    }
    if (c->recv_cq && (c->recv_cq != c->send_cq)) {
        ibv_destroy_cq(c->recv_cq);
    }
    if (c->send_cq) {
        ibv_destroy_cq(c->send_cq);
    }
    if (c->recv_cq_channel && (c->recv_cq_channel != c->send_cq_channel)) {
        ibv_destroy_comp_channel(c->recv_cq_channel);
    }
    if (c->send_cq_channel) {
        ibv_destroy_comp_channel(c->send_cq_channel);
    }
    c->send_cq = c->recv_cq = NULL;
    c->send_cq_channel = c->recv_cq_channel = NULL;
    id->own_cqs = 0;
}

/* The id's CQs made by the CM go once nothing uses them: its QP, or the XRC SRQ
 * of an XRC_RECV id, whose completions go to the receive CQ */
static void sv_cm_release_cqs(struct rdma_cm_id *cm_id)
{
    if ((cm_id->qp == NULL) &&
        ((cm_id->srq == NULL) || (cm_id->qp_type != IBV_QPT_XRC_RECV))) {
        sv_cm_destroy_cqs(sv_cm_id(cm_id));
    }
}

/* One side's CQ and completion channel, as deep as its queue */
static int sv_cm_create_cq(struct rdma_cm_id *c, uint32_t size,
                           struct ibv_cq **cq_p,
                           struct ibv_comp_channel **chan_p)
{
    struct ibv_comp_channel *chan;
    struct ibv_cq *cq;

    chan = ibv_create_comp_channel(c->verbs);
    if (chan == NULL) {
        return -1;
    }
    cq = ibv_create_cq(c->verbs, size ? size : 1, c, chan, 0);
    if (cq == NULL) {
        ibv_destroy_comp_channel(chan);
        return -1;
    }
    *cq_p   = cq;
    *chan_p = chan;
    return 0;
}

/* rdma-core's ucma_create_cqs: a CQ and a completion channel each for the
 * send and the receive side the id lacks; with_send 0 makes the receive
 * side only (the CQ of an XRC SRQ). A failure leaves the id's CQs as they
 * were. */
static int sv_cm_create_cqs(struct sv_cm_id *id, uint32_t send_size,
                            uint32_t recv_size, int with_send)
{
    struct rdma_cm_id *c = &id->id;
    int made_recv        = 0;

    if (c->recv_cq == NULL) {
        if (sv_cm_create_cq(c, recv_size, &c->recv_cq,
                            &c->recv_cq_channel) != 0) {
            goto err;
        }
        made_recv = 1;
    }
    if (with_send && (c->send_cq == NULL) &&
        (sv_cm_create_cq(c, send_size, &c->send_cq,
                         &c->send_cq_channel) != 0)) {
        goto err_recv;
    }
    id->own_cqs = 1;
    return 0;

err_recv:
    if (made_recv) {
        ibv_destroy_cq(c->recv_cq);
        ibv_destroy_comp_channel(c->recv_cq_channel);
        c->recv_cq         = NULL;
        c->recv_cq_channel = NULL;
    }
err:
    errno = ENOMEM;
    return -1;
}

static int sv_cm_api_create_qp_ex(struct rdma_cm_id *cm_id,
                                  struct ibv_qp_init_attr_ex *attr)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct ibv_qp_init_attr_ex a;
    struct ibv_qp *qp;

    if ((id == NULL) || (attr == NULL) || (cm_id->verbs == NULL) ||
        (cm_id->qp != NULL)) {
        errno = EINVAL;
        return -1;
    }
    a = *attr;
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || (a.pd == NULL)) {
        a.pd         = cm_id->pd ? cm_id->pd : sv_cm_default_pd(cm_id->verbs);
        a.comp_mask |= IBV_QP_INIT_ATTR_PD;
    }
    if ((a.pd == NULL) || (a.pd->context != cm_id->verbs)) {
        errno = EINVAL; /* a PD of another device */
        return -1;
    }
    if ((a.qp_type == IBV_QPT_XRC_RECV) &&
        (!(a.comp_mask & IBV_QP_INIT_ATTR_XRCD) || (a.xrcd == NULL))) {
        a.xrcd       = sv_cm_default_xrcd(cm_id->verbs);
        a.comp_mask |= IBV_QP_INIT_ATTR_XRCD;
        if (a.xrcd == NULL) {
            return -1;
        }
    }
    if (((a.send_cq == NULL) && (cm_id->send_cq == NULL)) ||
        ((a.recv_cq == NULL) && (cm_id->recv_cq == NULL))) {
        if (sv_cm_create_cqs(id, a.cap.max_send_wr, a.cap.max_recv_wr,
                             1) != 0) {
            return -1;
        }
    }
    a.send_cq = a.send_cq ? a.send_cq : cm_id->send_cq;
    a.recv_cq = a.recv_cq ? a.recv_cq : cm_id->recv_cq;
    if ((a.srq == NULL) && (cm_id->srq != NULL) &&
        (a.qp_type != IBV_QPT_XRC_RECV)) {
        /* the id's SRQ; an XRC target has none (its SRQs are named by
         * each request) */
        a.srq = cm_id->srq;
    }
    qp = ibv_create_qp_ex(cm_id->verbs, &a);
    if (qp == NULL) {
        sv_cm_release_cqs(cm_id);
        return -1;
    }
    cm_id->qp      = qp;
    cm_id->pd      = a.pd;
    cm_id->qp_type = qp->qp_type;
    if ((sv_cm_qp_to_init(id) != 0) ||
        ((qp->qp_type == IBV_QPT_UD) && (sv_cm_ud_to_rts(id) != 0))) {
        ibv_destroy_qp(qp);
        cm_id->qp = NULL;
        sv_cm_destroy_cqs(id);
        return -1;
    }
    attr->cap = a.cap; /* granted */
    return 0;
}

SV_CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *cm_id,
                                   struct ibv_qp_init_attr_ex *attr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_qp_ex(cm_id, attr);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_create_qp(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
                               struct ibv_qp_init_attr *qp_init_attr)
{
    struct ibv_qp_init_attr_ex a;
    int ret;

    if (qp_init_attr == NULL) {
        errno = EINVAL;
        return -1;
    }
    memset(&a, 0, sizeof(a));
    memcpy(&a, qp_init_attr, sizeof(*qp_init_attr));
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd        = pd;
    if ((pd != NULL) && (cm_id != NULL) && (cm_id->verbs != NULL) &&
        (pd->context != cm_id->verbs)) {
        errno = EINVAL;
        return -1;
    }
    ret = rdma_create_qp_ex(cm_id, &a);
    if (ret == 0) {
        qp_init_attr->cap     = a.cap;
        qp_init_attr->send_cq = cm_id->qp->send_cq;
        qp_init_attr->recv_cq = cm_id->qp->recv_cq;
    }
    return ret;
}

SV_CM_EXPORT int rdma_create_qp(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
                                struct ibv_qp_init_attr *qp_init_attr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_qp(cm_id, pd, qp_init_attr);
    sv_cm_unlock();
    return ret;
}

static void sv_cm_api_destroy_qp(struct rdma_cm_id *cm_id)
{
    if ((cm_id == NULL) || (cm_id->qp == NULL)) {
        return;
    }
    /* man ibv_destroy_qp: a QP attached to a group cannot be destroyed */
    sv_cm_mcast_detach_all(sv_cm_id(cm_id));
    ibv_destroy_qp(cm_id->qp);
    cm_id->qp = NULL;
    sv_cm_release_cqs(cm_id);
}

SV_CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cm_id)
{
    sv_cm_lock();
    sv_cm_api_destroy_qp(cm_id);
    sv_cm_unlock();
}

static int sv_cm_api_create_srq_ex(struct rdma_cm_id *cm_id,
                                   struct ibv_srq_init_attr_ex *attr)
{
    struct ibv_srq_init_attr_ex a;

    if ((cm_id == NULL) || (attr == NULL) || (cm_id->verbs == NULL) ||
        (cm_id->srq != NULL)) {
        errno = EINVAL;
        return -1;
    }
    a = *attr;
    if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
        a.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
        a.srq_type   = (cm_id->qp_type == IBV_QPT_XRC_RECV) ? IBV_SRQT_XRC :
                       IBV_SRQT_BASIC;
    }
    if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_PD) || (a.pd == NULL)) {
        a.pd         = cm_id->pd ? cm_id->pd : sv_cm_default_pd(cm_id->verbs);
        a.comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    if (a.srq_type == IBV_SRQT_XRC) {
        if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || (a.xrcd == NULL)) {
            a.xrcd = sv_cm_default_xrcd(cm_id->verbs);
            if (a.xrcd == NULL) {
                return -1;
            }
        }
        if (!(a.comp_mask & IBV_SRQ_INIT_ATTR_CQ) || (a.cq == NULL)) {
            if ((cm_id->recv_cq == NULL) &&
                (sv_cm_create_cqs(sv_cm_id(cm_id), 0, a.attr.max_wr,
                                  0) != 0)) {
                return -1;
            }
            a.cq = cm_id->recv_cq;
        }
        a.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
    }
    cm_id->srq = ibv_create_srq_ex(cm_id->verbs, &a);
    if (cm_id->srq == NULL) {
        sv_cm_release_cqs(cm_id); /* made for it, if any */
        return -1;
    }
    cm_id->pd  = a.pd;
    attr->attr = a.attr;
    return 0;
}

SV_CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *cm_id,
                                    struct ibv_srq_init_attr_ex *attr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_srq_ex(cm_id, attr);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_create_srq(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
                                struct ibv_srq_init_attr *attr)
{
    struct ibv_srq_init_attr_ex a;
    int ret;

    if (attr == NULL) {
        errno = EINVAL;
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.srq_context = attr->srq_context;
    a.attr        = attr->attr;
    a.comp_mask   = IBV_SRQ_INIT_ATTR_TYPE | (pd ? IBV_SRQ_INIT_ATTR_PD : 0);
    /* an XRC_RECV id's SRQ is an XRC SRQ (rdma-core's rdma_create_srq) */
    a.srq_type    = ((cm_id != NULL) &&
                     (cm_id->qp_type == IBV_QPT_XRC_RECV)) ? IBV_SRQT_XRC :
                    IBV_SRQT_BASIC;
    a.pd          = pd;
    ret = rdma_create_srq_ex(cm_id, &a);
    if (ret == 0) {
        attr->attr = a.attr;
    }
    return ret;
}

SV_CM_EXPORT int rdma_create_srq(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
                                 struct ibv_srq_init_attr *attr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_srq(cm_id, pd, attr);
    sv_cm_unlock();
    return ret;
}

static void sv_cm_api_destroy_srq(struct rdma_cm_id *cm_id)
{
    if ((cm_id != NULL) && (cm_id->srq != NULL)) {
        ibv_destroy_srq(cm_id->srq);
        cm_id->srq = NULL;
        sv_cm_release_cqs(cm_id); /* kept for an XRC SRQ */
    }
}

SV_CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *cm_id)
{
    sv_cm_lock();
    sv_cm_api_destroy_srq(cm_id);
    sv_cm_unlock();
}

/* man rdma_init_qp_attr: the attributes for moving a QP the application
 * created itself to qp_attr->qp_state */
static int sv_cm_api_init_qp_attr(struct rdma_cm_id *cm_id,
                                  struct ibv_qp_attr *a, int *mask)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct ibv_port_attr pa;
    enum ibv_qp_state want;

    if ((id == NULL) || (a == NULL) || (mask == NULL) ||
        (cm_id->verbs == NULL)) {
        errno = EINVAL;
        return -1;
    }
    want = a->qp_state;
    memset(a, 0, sizeof(*a));
    a->qp_state = want;
    switch (want) {
    case IBV_QPS_INIT:
        a->port_num        = cm_id->port_num;
        a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                IBV_QP_ACCESS_FLAGS;
        return 0;
    case IBV_QPS_RTR:
        if (ibv_query_port(cm_id->verbs, cm_id->port_num, &pa) != 0) {
            pa.active_mtu = IBV_MTU_1024;
        }
        a->path_mtu           = pa.active_mtu;
        a->dest_qp_num        = id->peer_qpn;
        a->rq_psn             = id->peer_psn;
        a->max_dest_rd_atomic = id->resp_res ? id->resp_res : 1;
        a->min_rnr_timer      = 12;
        a->ah_attr.dlid       = id->peer_lid;
        a->ah_attr.port_num   = cm_id->port_num;
        if (id->peer_lid == 0) {
            sv_cm_ah_global(id, &a->ah_attr, &id->peer_gid);
        }
        *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
        return 0;
    case IBV_QPS_RTS:
        a->sq_psn        = id->psn;
        a->timeout       = sv_cm_ack_timeout(id);
        a->retry_cnt     = 7;
        a->rnr_retry     = id->conn.rnr_retry_count & 7;
        a->max_rd_atomic = id->init_depth ? id->init_depth : 1;
        *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        return 0;
    default:
        errno = EINVAL;
        return -1;
    }
}

SV_CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *cm_id,
                                   struct ibv_qp_attr *a, int *mask)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_init_qp_attr(cm_id, a, mask);
    sv_cm_unlock();
    return ret;
}
