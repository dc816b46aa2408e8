/*
 * softverbs conformance: librdmacm connections between two ranks (rank 1
 * listens, rank 0 connects): the QP states the CM moves the QPs through,
 * private data of rdma_connect/rdma_accept/rdma_reject at the IBA CM
 * limits, a port nobody listens on, a listener that dies in the handshake,
 * rdma_disconnect, data over the connected QP, and the event channel's fd
 * under poll(2). Helpers in softverbs_conformance_cm.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_cm.h"

#include <rdma/rdma_verbs.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVT_CM_SLOT 65536

static void svt_cm_param(struct rdma_conn_param *cp, const void *priv,
                         uint8_t len)
{
    memset(cp, 0, sizeof(*cp));
    cp->private_data        = priv;
    cp->private_data_len    = len;
    cp->responder_resources = 1;
    cp->initiator_depth     = 1;
    cp->retry_count         = 7;
    cp->rnr_retry_count     = 7;
}

/* The QP of cm->id (NULL PD and CQs), its state right after creation kept */
static void svt_cm_qp(svt_cm_t *cm)
{
    struct ibv_qp_init_attr a;

    svt_cm_qp_attr(&a, IBV_QPT_RC);
    SVT_OK(rdma_create_qp(cm->id, NULL, &a));
    cm->created_state = svt_qp_state(cm->id->qp);
}

/* Rank 0: an id resolved to the listener, with its QP, connecting */
static void svt_cm_active_connect(svt_cm_t *cm, const void *priv,
                                  uint8_t len)
{
    struct rdma_conn_param cp;

    cm->id = svt_cm_resolved_id(cm->ch, RDMA_PS_TCP, cm->port);
    svt_cm_qp(cm);
    svt_cm_param(&cp, priv, len);
    SVT_OK(rdma_connect(cm->id, &cp));
}

/* Keep the private data of ev (conn) in cm */
static void svt_cm_keep_priv(svt_cm_t *cm, const struct rdma_cm_event *ev)
{
    cm->priv_len = ev->param.conn.private_data_len;
    SVT_CHECK((cm->priv_len == 0) || (ev->param.conn.private_data != NULL),
              "%s: private_data_len %u with a NULL private_data",
              rdma_event_str(ev->event), cm->priv_len);
    memcpy(cm->priv, ev->param.conn.private_data, cm->priv_len);
}

/* Rank 0: ESTABLISHED for cm->id, the accept's private data kept */
static void svt_cm_active_established(svt_cm_t *cm)
{
    struct rdma_cm_event *ev;

    svt_cm_expect(cm->ch, RDMA_CM_EVENT_ESTABLISHED, 0, &ev);
    SVT_CHECK(ev->id == cm->id, "ESTABLISHED for id %p, expected %p",
              (void *)ev->id, (void *)cm->id);
    svt_cm_keep_priv(cm, ev);
    SVT_OK(rdma_ack_cm_event(ev));
}

void svt_cm_pair(svt_proc_t *p, svt_cm_t *cm, const void *conn_priv,
                 uint8_t conn_len, const void *acc_priv, uint8_t acc_len)
{
    struct rdma_conn_param cp;

    svt_cm_listen_xchg(p, cm);
    if (p->rank == 1) {
        svt_cm_wait_request(cm);
        svt_cm_qp(cm);
        svt_cm_param(&cp, acc_priv, acc_len);
        SVT_OK(rdma_accept(cm->id, &cp));
        svt_cm_expect(cm->ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else {
        svt_cm_active_connect(cm, conn_priv, conn_len);
        svt_cm_active_established(cm);
    }
}

static void *svt_cm_alloc(size_t size)
{
    void *buf = NULL;

    SVT_CHECK(posix_memalign(&buf, 4096, size) == 0, "out of memory");
    memset(buf, 0, size);
    return buf;
}

static void svt_cm_comp(struct rdma_cm_id *id, int recv, uint64_t wr_id,
                        enum ibv_wc_status status, struct ibv_wc *wc)
{
    svt_cm_wait_comp(recv ? id->recv_cq : id->send_cq,
                     recv ? id->recv_cq_channel : id->send_cq_channel, wc,
                     SVT_WC_TIMEOUT_MS);
    SVT_CHECK(wc->status == status, "%s wc status %s, expected %s (wr_id "
              "%llu)", recv ? "recv" : "send", ibv_wc_status_str(wc->status),
              ibv_wc_status_str(status), (unsigned long long)wc->wr_id);
    SVT_CHECK(wc->wr_id == wr_id, "%s wc wr_id %llu, expected %llu",
              recv ? "recv" : "send", (unsigned long long)wc->wr_id,
              (unsigned long long)wr_id);
}

/* ---------------------------------------------------------------------
 * QP states (rdma_create_qp(3): ready to post receives once created; the
 * CM moves an RC QP to RTS when the connection is made)
 * ------------------------------------------------------------------- */

static void svt_case_cm_qp_state_rc(svt_proc_t *p)
{
    struct rdma_conn_param cp;
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr qa;
    struct ibv_wc wc;
    struct ibv_mr *mr;
    uint8_t *buf = svt_cm_alloc(4096);
    uint64_t peer_qpn;
    svt_cm_t cm;

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
        svt_cm_qp(&cm);
    } else {
        cm.id = svt_cm_resolved_id(cm.ch, RDMA_PS_TCP, cm.port);
        svt_cm_qp(&cm);
    }
    SVT_CHECK(cm.created_state == IBV_QPS_INIT, "rank %d: RC QP in state %d "
              "after rdma_create_qp, expected INIT", p->rank,
              cm.created_state);
    /* ready to post receives before the connection exists */
    SVT_NN(mr, ibv_reg_mr(cm.id->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
    SVT_OK(rdma_post_recv(cm.id, (void *)(uintptr_t)1, buf, 256, mr));
    svt_cm_param(&cp, NULL, 0);
    if (p->rank == 1) {
        SVT_OK(rdma_accept(cm.id, &cp));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else {
        SVT_OK(rdma_connect(cm.id, &cp));
        svt_cm_active_established(&cm);
    }
    memset(&qa, 0, sizeof(qa));
    SVT_OK(ibv_query_qp(cm.id->qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi));
    SVT_CHECK(qa.qp_state == IBV_QPS_RTS, "rank %d: RC QP in state %d after "
              "ESTABLISHED, expected RTS", p->rank, qa.qp_state);
    peer_qpn = svt_xchg_u64(p, !p->rank, cm.id->qp->qp_num);
    SVT_CHECK(qa.dest_qp_num == peer_qpn, "rank %d: dest_qp_num 0x%x, the "
              "peer's QP is 0x%llx", p->rank, qa.dest_qp_num,
              (unsigned long long)peer_qpn);
    /* the receive posted in INIT takes the peer's message */
    svt_fill(buf + 1024, 200, 30 + p->rank);
    SVT_OK(rdma_post_send(cm.id, (void *)(uintptr_t)2, buf + 1024, 200, mr,
                          IBV_SEND_SIGNALED));
    svt_cm_comp(cm.id, 0, 2, IBV_WC_SUCCESS, &wc);
    svt_cm_comp(cm.id, 1, 1, IBV_WC_SUCCESS, &wc);
    SVT_CHECK(wc.byte_len == 200, "received %u bytes, 200 sent", wc.byte_len);
    svt_pattern_check(buf, 200, 30 + !p->rank, "message to the receive "
                      "posted in INIT");
    svt_sync(p, !p->rank);
    rdma_destroy_qp(cm.id);
    SVT_OK(ibv_dereg_mr(mr));
    svt_cm_close(&cm);
    free(buf);
}

/*
 * RDMA_OPTION_ID_ACK_TIMEOUT (rdma_set_option(3)): a uint8_t, RC ids only
 * (the kernel's ucma_set_option_id and rdma_set_ack_timeout: EINVAL
 * otherwise), the local ACK timeout of the id's QP: it is what the QP gets
 * at RTR->RTS and what rdma_init_qp_attr gives for RTS (the kernel's
 * rdma_init_qp_attr), on the active side (set before rdma_connect) and the
 * passive one (set on the request's id before rdma_accept)
 */
static void svt_case_cm_ack_timeout(svt_proc_t *p)
{
    uint8_t want = p->rank ? 20 : 18, t8;
    struct rdma_cm_id *ud;
    struct rdma_conn_param cp;
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr qa;
    int mask, i32 = 18;
    svt_cm_t cm;

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
    } else {
        cm.id = svt_cm_resolved_id(cm.ch, RDMA_PS_TCP, cm.port);
        errno = 0;
        SVT_CHECK(rdma_set_option(cm.id, RDMA_OPTION_ID,
                                  RDMA_OPTION_ID_ACK_TIMEOUT, &i32,
                                  sizeof(i32)) != 0 && errno == EINVAL,
                  "ACK_TIMEOUT given as an int: errno %d, expected EINVAL",
                  errno);
        SVT_OK(rdma_create_id(NULL, &ud, NULL, RDMA_PS_UDP));
        t8    = 18;
        errno = 0;
        SVT_CHECK(rdma_set_option(ud, RDMA_OPTION_ID,
                                  RDMA_OPTION_ID_ACK_TIMEOUT, &t8,
                                  sizeof(t8)) != 0 && errno == EINVAL,
                  "ACK_TIMEOUT on a UD id: errno %d, expected EINVAL",
                  errno);
        SVT_OK(rdma_destroy_id(ud));
    }
    t8 = want;
    SVT_OK(rdma_set_option(cm.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
                           &t8, sizeof(t8)));
    svt_cm_qp(&cm);
    svt_cm_param(&cp, NULL, 0);
    if (p->rank == 1) {
        SVT_OK(rdma_accept(cm.id, &cp));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else {
        SVT_OK(rdma_connect(cm.id, &cp));
        svt_cm_active_established(&cm);
    }
    memset(&qa, 0, sizeof(qa));
    SVT_OK(ibv_query_qp(cm.id->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT, &qi));
    SVT_CHECK(qa.qp_state == IBV_QPS_RTS && qa.timeout == want, "rank %d: "
              "QP in state %d with timeout %u, expected RTS and the %u set "
              "with RDMA_OPTION_ID_ACK_TIMEOUT", p->rank, qa.qp_state,
              qa.timeout, want);
    memset(&qa, 0, sizeof(qa));
    qa.qp_state = IBV_QPS_RTS;
    SVT_OK(rdma_init_qp_attr(cm.id, &qa, &mask));
    SVT_CHECK((mask & IBV_QP_TIMEOUT) && qa.timeout == want, "rank %d: "
              "rdma_init_qp_attr(RTS) timeout %u (mask 0x%x), expected %u",
              p->rank, qa.timeout, mask, want);
    svt_sync(p, !p->rank);
    rdma_destroy_qp(cm.id);
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * Private data (rdma_connect(3): 56 bytes for RDMA_PS_TCP; the IBA CM's
 * REP carries 196, REJ 148; rdma_get_cm_event(3): the receiver's buffer
 * may be longer than what was sent, the rest zeroed)
 * ------------------------------------------------------------------- */

/* What arrived: the len bytes sent (pattern seed), zeros after them */
static void svt_cm_check_priv(const svt_cm_t *cm, uint8_t len, uint32_t seed,
                              const char *what)
{
    SVT_CHECK(cm->priv_len >= len, "%s: private_data_len %u, %u bytes were "
              "sent", what, cm->priv_len, len);
    svt_pattern_check(cm->priv, len, seed, what);
    svt_memset_check(cm->priv + len, cm->priv_len - len, 0, what);
}

/* Rank 1 of private_data_over_limits: accept with one byte too many,
 * then with the limit */
static void svt_cm_priv_over_passive(svt_cm_t *cm, const uint8_t *rep)
{
    struct rdma_conn_param cp;
    int ret;

    svt_cm_wait_request(cm);
    svt_cm_qp(cm);
    svt_cm_param(&cp, rep, SVT_CM_REP_PRIV + 1);
    errno = 0;
    ret   = rdma_accept(cm->id, &cp);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_accept with %d bytes "
              "of private data: %d (errno %d), expected -1 EINVAL",
              SVT_CM_REP_PRIV + 1, ret, errno);
    svt_cm_param(&cp, rep, SVT_CM_REP_PRIV);
    SVT_OK(rdma_accept(cm->id, &cp));
    svt_cm_expect(cm->ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    svt_cm_expect_none(cm->ch, 100); /* one request only */
}

/* Rank 0 of private_data_over_limits: connect with one byte too many,
 * then with the limit */
static void svt_cm_priv_over_active(svt_cm_t *cm, const uint8_t *req)
{
    struct rdma_conn_param cp;
    int ret;

    cm->id = svt_cm_resolved_id(cm->ch, RDMA_PS_TCP, cm->port);
    svt_cm_qp(cm);
    svt_cm_param(&cp, req, SVT_CM_REQ_PRIV + 1);
    errno = 0;
    ret   = rdma_connect(cm->id, &cp);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_connect with %d bytes "
              "of private data: %d (errno %d), expected -1 EINVAL",
              SVT_CM_REQ_PRIV + 1, ret, errno);
    svt_cm_param(&cp, req, SVT_CM_REQ_PRIV);
    SVT_OK(rdma_connect(cm->id, &cp));
    svt_cm_active_established(cm);
}

/* arg 0: the limits (56 with the REQ, 196 with the REP); 1: a few bytes,
 * the rest of the field zero; 2: one byte over each limit is EINVAL (and
 * nothing is sent), the limit then goes */
static void svt_case_cm_priv(svt_proc_t *p)
{
    uint8_t req[256], rep[256];
    uint8_t rl = (p->arg == 1) ? 5 : SVT_CM_REQ_PRIV;
    uint8_t pl = (p->arg == 1) ? 9 : SVT_CM_REP_PRIV;
    svt_cm_t cm;

    svt_fill(req, sizeof(req), 1);
    svt_fill(rep, sizeof(rep), 2);
    if (p->arg != 2) {
        svt_cm_pair(p, &cm, req, rl, rep, pl);
    } else {
        svt_cm_listen_xchg(p, &cm);
        if (p->rank == 1) {
            svt_cm_priv_over_passive(&cm, rep);
        } else {
            svt_cm_priv_over_active(&cm, req);
        }
    }
    if (p->rank == 1) {
        svt_cm_check_priv(&cm, rl, 1, "CONNECT_REQUEST private data");
    } else {
        svt_cm_check_priv(&cm, pl, 2, "ESTABLISHED private data (accept's)");
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/* rdma_reject(3) with private data: REJECTED, status 28 (the IBA reason
 * "consumer defined"), the 148 bytes intact; one byte more: EINVAL */
static void svt_case_cm_reject(svt_proc_t *p)
{
    uint8_t rej[SVT_CM_REJ_PRIV + 1];
    struct rdma_cm_event *ev;
    svt_cm_t cm;
    int ret;

    svt_fill(rej, sizeof(rej), 3);
    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
        errno = 0;
        ret   = rdma_reject(cm.id, rej, SVT_CM_REJ_PRIV + 1);
        SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_reject with %d "
                  "bytes of private data: %d (errno %d), expected -1 EINVAL",
                  SVT_CM_REJ_PRIV + 1, ret, errno);
        SVT_OK(rdma_reject(cm.id, rej, SVT_CM_REJ_PRIV));
    } else {
        svt_cm_active_connect(&cm, NULL, 0);
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_REJECTED, SVT_CM_REJ_CONSUMER, &ev);
        SVT_CHECK(ev->id == cm.id, "REJECTED for id %p, expected %p",
                  (void *)ev->id, (void *)cm.id);
        svt_cm_keep_priv(&cm, ev);
        SVT_OK(rdma_ack_cm_event(ev));
        svt_cm_check_priv(&cm, SVT_CM_REJ_PRIV, 3, "REJECTED private data");
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * Failures in the handshake
 * ------------------------------------------------------------------- */

/* A port held by an id that does not listen, then a port nobody holds:
 * REJECTED with status 8 (the IBA reason "invalid service ID", what a
 * fabric's CM answers a REQ for a service nobody listens on), in time */
static void svt_case_cm_no_listener(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *holder = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    uint16_t port = ntohs(rdma_get_src_port(holder));
    struct rdma_conn_param cp;
    struct rdma_cm_event *ev;
    svt_cm_t cm;
    int round;

    (void)p;
    for (round = 0; round < 2; ++round) {
        memset(&cm, 0, sizeof(cm));
        cm.ch   = ch;
        cm.port = port;
        svt_cm_active_connect(&cm, NULL, 0);
        svt_cm_expect(ch, RDMA_CM_EVENT_REJECTED, SVT_CM_REJ_INVALID_SID,
                      &ev);
        SVT_CHECK(ev->id == cm.id, "REJECTED for id %p, expected %p",
                  (void *)ev->id, (void *)cm.id);
        SVT_OK(rdma_ack_cm_event(ev));
        rdma_destroy_qp(cm.id);
        SVT_OK(rdma_destroy_id(cm.id));
        if (round == 0) {
            SVT_OK(rdma_destroy_id(holder));
        }
    }
    /* and an id without a QP */
    cm.id = svt_cm_resolved_id(ch, RDMA_PS_TCP, port);
    svt_cm_param(&cp, NULL, 0);
    SVT_OK(rdma_connect(cm.id, &cp));
    svt_cm_expect(ch, RDMA_CM_EVENT_REJECTED, SVT_CM_REJ_INVALID_SID, NULL);
    SVT_OK(rdma_destroy_id(cm.id));
    rdma_destroy_event_channel(ch);
}

/* The next event of cm's channel, within ms: REJECTED with status for
 * cm's id (what: the situation, for the message) */
static void svt_cm_expect_rejected(svt_cm_t *cm, int ms, int status,
                                   const char *what)
{
    struct rdma_cm_event *ev;
    double t0 = svt_now_ms();

    ev = svt_cm_next(cm->ch, ms);
    SVT_CHECK(ev != NULL, "%s: no CM event within %d ms", what, ms);
    SVT_CHECK((ev->event == RDMA_CM_EVENT_REJECTED) && (ev->status == status),
              "%s: %s status %d after %.0f ms, expected REJECTED status %d",
              what, rdma_event_str(ev->event), ev->status, svt_now_ms() - t0,
              status);
    SVT_CHECK(ev->id == cm->id, "%s: event for id %p, expected %p", what,
              (void *)ev->id, (void *)cm->id);
    SVT_OK(rdma_ack_cm_event(ev));
}

/* The listener's process is killed after CONNECT_REQUEST, without an
 * answer: the active side gets REJECTED with status 28 (consumer
 * defined), as the kernel's CM rejects the REQ of an id destroyed in
 * REQ_RCVD (cm_destroy_id), within a bound, not after a timeout */
static void svt_case_cm_listener_killed(svt_proc_t *p)
{
    svt_cm_t cm;
    char c = 'r';

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
        svt_msg_send(p, 0, &c, 1);
        kill(getpid(), SIGKILL);
    }
    svt_cm_active_connect(&cm, NULL, 0);
    svt_msg_recv(p, 1, &c, 1);
    svt_cm_expect_rejected(&cm, 8000, 28, "the listener died in the "
                           "handshake");
    svt_cm_close(&cm);
}

/* The active side destroys its id while its request waits for an answer
 * (the kernel's cm_destroy_id in IB_CM_REQ_SENT sends a REJ with the
 * reason "timeout", 1): the listener's new id, not accepted yet, gets
 * REJECTED with that status, never DISCONNECTED (which UCX's rdmacm takes
 * for the disconnection of one of its endpoints) */
static void svt_case_cm_destroy_before_accept(svt_proc_t *p)
{
    svt_cm_t cm;
    char c = 'd';

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
        svt_msg_send(p, 0, &c, 1);
        svt_cm_expect_rejected(&cm, 4000, 1, "request not accepted, "
                               "the active id destroyed");
        svt_cm_expect_none(cm.ch, 200);
    } else {
        svt_cm_active_connect(&cm, NULL, 0);
        svt_msg_recv(p, 1, &c, 1);
        rdma_destroy_qp(cm.id);
        SVT_OK(rdma_destroy_id(cm.id));
        cm.id = NULL;
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * rdma_disconnect(3): both sides get DISCONNECTED (once), each side's
 * rdma_disconnect moves its QP to ERR and flushes its receives
 * ------------------------------------------------------------------- */

static void svt_case_cm_disconnect(svt_proc_t *p)
{
    uint8_t *buf = svt_cm_alloc(4096);
    enum ibv_qp_state st;
    struct ibv_wc wc;
    struct ibv_mr *mr;
    svt_cm_t cm;
    uint64_t i;

    svt_cm_pair(p, &cm, NULL, 0, NULL, 0);
    SVT_NN(mr, ibv_reg_mr(cm.id->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
    for (i = 1; i <= 3; ++i) {
        SVT_OK(rdma_post_recv(cm.id, (void *)(uintptr_t)i, buf + i * 256, 256,
                              mr));
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        /* the peer disconnects first */
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
    }
    SVT_OK(rdma_disconnect(cm.id));
    st = svt_qp_state(cm.id->qp);
    SVT_CHECK(st == IBV_QPS_ERR, "rank %d: QP in state %d after "
              "rdma_disconnect, expected ERR", p->rank, st);
    for (i = 1; i <= 3; ++i) {
        svt_cm_comp(cm.id, 1, i, IBV_WC_WR_FLUSH_ERR, &wc);
    }
    if (p->rank == 0) {
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
    }
    svt_cm_expect_none(cm.ch, 200);
    svt_sync(p, !p->rank);
    rdma_destroy_qp(cm.id);
    SVT_OK(ibv_dereg_mr(mr));
    svt_cm_close(&cm);
    free(buf);
}

/* ---------------------------------------------------------------------
 * The DREP: the kernel's CM answers a DREQ only when the passive side's
 * user calls rdma_disconnect (cma.c: ib_send_cm_dreq fails in DREQ_RCVD,
 * ib_send_cm_drep goes) or destroys its id (cm_destroy_id), so that the
 * initiator's DISCONNECTED comes after the peer's user acted on its own.
 * arg 0: the peer answers by rdma_disconnect; 1: by rdma_destroy_id
 * ------------------------------------------------------------------- */

#define SVT_CM_DREP_HOLD_MS 300

static void svt_cm_destroy_conn(svt_cm_t *cm);

static void svt_case_cm_drep_waits(svt_proc_t *p)
{
    double t0, dt;
    svt_cm_t cm;

    svt_cm_pair(p, &cm, NULL, 0, NULL, 0);
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        t0 = svt_now_ms();
        SVT_OK(rdma_disconnect(cm.id));
        /* nothing while the peer's user holds its DISCONNECTED */
        svt_cm_expect_none(cm.ch, SVT_CM_DREP_HOLD_MS - 100);
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        dt = svt_now_ms() - t0;
        SVT_CHECK(dt >= SVT_CM_DREP_HOLD_MS - 1, "DISCONNECTED %.1f ms after "
                  "rdma_disconnect, before the peer answered (%d ms)", dt,
                  SVT_CM_DREP_HOLD_MS);
        svt_sync(p, !p->rank);
        svt_cm_destroy_conn(&cm);
    } else {
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        usleep(SVT_CM_DREP_HOLD_MS * 1000);
        if (p->arg == 0) {
            SVT_OK(rdma_disconnect(cm.id));
            svt_sync(p, !p->rank);
            svt_cm_destroy_conn(&cm);
        } else {
            svt_cm_destroy_conn(&cm);
            svt_sync(p, !p->rank);
        }
    }
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * RDMA_CM_EVENT_TIMEWAIT_EXIT: the kernel's cma_ib_handler reports the IB
 * CM's IB_CM_TIMEWAIT_EXIT to an id that got DISCONNECTED (and only to
 * one still existing: cm_timewait_handler finds no destroyed cm_id). The
 * IB CM enters timewait (cm_enter_timewait) when the DREP answering this
 * side's DREQ arrives, or when this side sends the DREP for the peer's
 * DREQ, which rdma_disconnect after DISCONNECTED does; it lasts
 * cm_convert_to_ms of the connection's ACK timeout: 512 ms with the path
 * softverbs gives (packet life time 14) and its CA ACK delay (16)
 * ------------------------------------------------------------------- */

#define SVT_CM_TIMEWAIT_MS 512

static void svt_cm_expect_timewait(svt_cm_t *cm, double t0, const char *who)
{
    struct rdma_cm_event *ev;
    double dt;

    svt_cm_expect(cm->ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, &ev);
    dt = svt_now_ms() - t0;
    SVT_CHECK(ev->id == cm->id, "%s: TIMEWAIT_EXIT for id %p, expected %p",
              who, (void *)ev->id, (void *)cm->id);
    SVT_CHECK(dt >= SVT_CM_TIMEWAIT_MS - 1, "%s: TIMEWAIT_EXIT %.1f ms "
              "after the disconnect, timewait lasts %d ms", who, dt,
              SVT_CM_TIMEWAIT_MS);
    SVT_OK(rdma_ack_cm_event(ev));
}

static void svt_cm_destroy_conn(svt_cm_t *cm)
{
    rdma_destroy_qp(cm->id);
    SVT_OK(rdma_destroy_id(cm->id));
    cm->id = NULL;
}

static void svt_case_cm_timewait(svt_proc_t *p)
{
    struct rdma_conn_param cp;
    svt_cm_t cm;
    double t0;

    svt_cm_pair(p, &cm, NULL, 0, NULL, 0);
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        t0 = svt_now_ms();
        SVT_OK(rdma_disconnect(cm.id));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        svt_cm_expect_timewait(&cm, t0, "rank 0 (its DREQ answered)");
    } else {
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        /* the peer's DREQ is not answered before rdma_disconnect: no
         * timewait yet */
        svt_cm_expect_none(cm.ch, SVT_CM_TIMEWAIT_MS + 300);
        t0 = svt_now_ms();
        SVT_OK(rdma_disconnect(cm.id));
        svt_cm_expect_timewait(&cm, t0, "rank 1 (after its rdma_disconnect)");
    }
    svt_cm_expect_none(cm.ch, 300); /* once */
    svt_sync(p, !p->rank);
    svt_cm_destroy_conn(&cm);

    /* ids destroyed in timewait: nothing comes (and nothing touches them) */
    if (p->rank == 1) {
        svt_cm_wait_request(&cm);
        svt_cm_qp(&cm);
        svt_cm_param(&cp, NULL, 0);
        SVT_OK(rdma_accept(cm.id, &cp));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else {
        svt_cm_active_connect(&cm, NULL, 0);
        svt_cm_active_established(&cm);
    }
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        SVT_OK(rdma_disconnect(cm.id));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
    } else {
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        SVT_OK(rdma_disconnect(cm.id));
    }
    svt_cm_destroy_conn(&cm);
    svt_cm_expect_none(cm.ch, SVT_CM_TIMEWAIT_MS + 300);
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * Data over the connected QP (rdma_verbs.h): SENDs of 1, 100, 4096 and
 * 65536 bytes, completions through the CM's CQ channels; an RDMA WRITE and
 * an RDMA READ of 64 KiB
 * ------------------------------------------------------------------- */

static void svt_case_cm_data(svt_proc_t *p)
{
    static const size_t sizes[4] = {1, 100, 4096, SVT_CM_SLOT};
    uint8_t *buf = svt_cm_alloc(9 * SVT_CM_SLOT);
    uint64_t raddr, rkey, i;
    struct ibv_wc wc;
    struct ibv_mr *mr;
    svt_cm_t cm;

    svt_cm_pair(p, &cm, NULL, 0, NULL, 0);
    SVT_CHECK(cm.id->pd == cm.id->qp->pd, "id->pd is not the QP's PD");
    SVT_NN(mr, ibv_reg_mr(cm.id->pd, buf, 9 * SVT_CM_SLOT,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ));
    raddr = svt_xchg_u64(p, !p->rank, (uintptr_t)buf);
    rkey  = svt_xchg_u64(p, !p->rank, mr->rkey);
    if (p->rank == 1) {
        for (i = 0; i < 4; ++i) {
            SVT_OK(rdma_post_recv(cm.id, (void *)(uintptr_t)i,
                                  buf + i * SVT_CM_SLOT, SVT_CM_SLOT, mr));
        }
        svt_sync(p, 0);
        for (i = 0; i < 4; ++i) {
            svt_cm_comp(cm.id, 1, i, IBV_WC_SUCCESS, &wc);
            SVT_CHECK((wc.opcode == IBV_WC_RECV) && (wc.byte_len == sizes[i]),
                      "recv %llu: opcode %d byte_len %u, %zu bytes sent",
                      (unsigned long long)i, wc.opcode, wc.byte_len, sizes[i]);
            svt_pattern_check(buf + i * SVT_CM_SLOT, sizes[i], 40 + i,
                              "SEND payload");
        }
        svt_sync(p, 0); /* the peer's RDMA WRITE done */
        svt_pattern_check(buf + 8 * SVT_CM_SLOT, SVT_CM_SLOT, 50,
                          "RDMA WRITE payload");
        svt_fill(buf + 7 * SVT_CM_SLOT, SVT_CM_SLOT, 51);
        svt_sync(p, 0);
    } else {
        for (i = 0; i < 4; ++i) {
            svt_fill(buf + (4 + i) * SVT_CM_SLOT, sizes[i], 40 + i);
        }
        svt_sync(p, 1);
        for (i = 0; i < 4; ++i) {
            SVT_OK(rdma_post_send(cm.id, (void *)(uintptr_t)i,
                                  buf + (4 + i) * SVT_CM_SLOT, sizes[i], mr,
                                  IBV_SEND_SIGNALED));
        }
        for (i = 0; i < 4; ++i) {
            svt_cm_comp(cm.id, 0, i, IBV_WC_SUCCESS, &wc);
        }
        svt_fill(buf, SVT_CM_SLOT, 50);
        SVT_OK(rdma_post_write(cm.id, (void *)(uintptr_t)10, buf, SVT_CM_SLOT,
                               mr, IBV_SEND_SIGNALED,
                               raddr + 8 * SVT_CM_SLOT, (uint32_t)rkey));
        svt_cm_comp(cm.id, 0, 10, IBV_WC_SUCCESS, &wc);
        svt_sync(p, 1);
        svt_sync(p, 1); /* the peer filled its slot 7 */
        memset(buf + SVT_CM_SLOT, 0, SVT_CM_SLOT);
        SVT_OK(rdma_post_read(cm.id, (void *)(uintptr_t)11,
                              buf + SVT_CM_SLOT, SVT_CM_SLOT, mr,
                              IBV_SEND_SIGNALED, raddr + 7 * SVT_CM_SLOT,
                              (uint32_t)rkey));
        svt_cm_comp(cm.id, 0, 11, IBV_WC_SUCCESS, &wc);
        SVT_CHECK(wc.opcode == IBV_WC_RDMA_READ, "read wc opcode %d",
                  wc.opcode);
        svt_pattern_check(buf + SVT_CM_SLOT, SVT_CM_SLOT, 51,
                          "RDMA READ payload");
    }
    svt_sync(p, !p->rank);
    rdma_destroy_qp(cm.id);
    SVT_OK(ibv_dereg_mr(mr));
    svt_cm_close(&cm);
    free(buf);
}

/* ---------------------------------------------------------------------
 * The event channel's fd
 * ------------------------------------------------------------------- */

static int svt_cm_pollin(int fd, int ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    int n;

    do {
        n = poll(&pfd, 1, ms);
    } while ((n < 0) && (errno == EINTR));
    SVT_CHECK(n >= 0, "poll: errno %d", errno);
    return (n > 0) && (pfd.revents & POLLIN);
}

#define SVT_CM_POLL_NOW     0x1  /* POLLIN: rdma_get_cm_event has it */
#define SVT_CM_POLL_DRAINED 0x2  /* the last event taken: no POLLIN */

/* POLLIN within SVT_CM_EV_MS, then the event t. With SVT_CM_POLL_NOW one
 * non-blocking rdma_get_cm_event must return it (no EAGAIN after POLLIN);
 * with SVT_CM_POLL_DRAINED the fd must not be readable once it was taken
 * (nothing else is pending at that point in the case) */
static struct rdma_cm_event *svt_cm_poll_step(struct rdma_event_channel *ch,
                                              enum rdma_cm_event_type t,
                                              const char *what, long mode)
{
    struct rdma_cm_event *ev;
    int ret;

    SVT_CHECK(svt_cm_pollin(ch->fd, SVT_CM_EV_MS), "%s: no POLLIN within "
              "%d ms", what, SVT_CM_EV_MS);
    if (mode & SVT_CM_POLL_NOW) {
        errno = 0;
        ret   = rdma_get_cm_event(ch, &ev);
        SVT_CHECK(ret == 0, "%s: POLLIN, yet rdma_get_cm_event on the "
                  "non-blocking fd: %d (errno %d)", what, ret, errno);
    } else {
        ev = svt_cm_next(ch, 1000);
        SVT_CHECK(ev != NULL, "%s: POLLIN, yet no event within 1000 ms",
                  what);
    }
    SVT_CHECK(ev->event == t, "%s: event %s, expected %s", what,
              rdma_event_str(ev->event), rdma_event_str(t));
    if (mode & SVT_CM_POLL_DRAINED) {
        SVT_CHECK(!svt_cm_pollin(ch->fd, 0), "%s: POLLIN after the only "
                  "pending event (%s) was taken", what, rdma_event_str(t));
    }
    return ev;
}

/* Nothing pending: no POLLIN within ms, rdma_get_cm_event gives EAGAIN */
static void svt_cm_poll_idle(struct rdma_event_channel *ch, int ms,
                             const char *what)
{
    struct rdma_cm_event *ev;
    int ret;

    SVT_CHECK(!svt_cm_pollin(ch->fd, ms), "%s: POLLIN with no event pending",
              what);
    errno = 0;
    ret   = rdma_get_cm_event(ch, &ev);
    SVT_CHECK((ret == -1) && (errno == EAGAIN), "%s: rdma_get_cm_event on "
              "the non-blocking fd: %d (errno %d), expected -1 EAGAIN", what,
              ret, errno);
}

/* The event channel's fd under poll(2): not readable before an event is
 * pending, POLLIN once one is (an event made locally, ADDR/ROUTE_RESOLVED,
 * and one from the peer, CONNECT_REQUEST and REJECTED); arg: the strict
 * checks above */
static void svt_case_cm_chan_poll(svt_proc_t *p)
{
    struct rdma_conn_param cp;
    struct rdma_cm_event *ev;
    struct sockaddr_in dst;
    svt_cm_t cm;

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        svt_cm_poll_idle(cm.ch, 300, "listener before any connect");
        svt_sync(p, 0);
        ev = svt_cm_poll_step(cm.ch, RDMA_CM_EVENT_CONNECT_REQUEST,
                              "listener", p->arg);
        cm.id = ev->id;
        SVT_OK(rdma_ack_cm_event(ev));
        svt_sync(p, 0);
        SVT_OK(rdma_reject(cm.id, NULL, 0));
    } else {
        SVT_OK(rdma_create_id(cm.ch, &cm.id, NULL, RDMA_PS_TCP));
        svt_cm_poll_idle(cm.ch, 0, "new id");
        svt_cm_loopback(&dst, cm.port);
        SVT_OK(rdma_resolve_addr(cm.id, NULL, (struct sockaddr *)&dst, 2000));
        ev = svt_cm_poll_step(cm.ch, RDMA_CM_EVENT_ADDR_RESOLVED,
                              "rdma_resolve_addr", p->arg);
        SVT_OK(rdma_ack_cm_event(ev));
        SVT_OK(rdma_resolve_route(cm.id, 2000));
        ev = svt_cm_poll_step(cm.ch, RDMA_CM_EVENT_ROUTE_RESOLVED,
                              "rdma_resolve_route", p->arg);
        SVT_OK(rdma_ack_cm_event(ev));
        svt_sync(p, 1);
        /* an id without QP connects with a param (NULL: EINVAL, as
         * librdmacm's ucma_valid_param) */
        memset(&cp, 0, sizeof(cp));
        SVT_OK(rdma_connect(cm.id, &cp));
        svt_sync(p, 1); /* the listener took the request, rejects now */
        ev = svt_cm_poll_step(cm.ch, RDMA_CM_EVENT_REJECTED,
                              "rejected connect", p->arg);
        SVT_OK(rdma_ack_cm_event(ev));
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/* ---------------------------------------------------------------------
 * Addresses of a connection whose client resolved with no source address:
 * the kernel binds it to the address its route leaves from (the loopback
 * for 127.0.0.1), with an ephemeral port, and the server sees that as its
 * peer: not the wildcard 0.0.0.0 (rdma_resolve_addr(3))
 * ------------------------------------------------------------------- */

static void svt_cm_check_loopback(const struct sockaddr *sa, const char *what)
{
    const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

    SVT_CHECK(sa->sa_family == AF_INET, "%s: family %d, expected AF_INET",
              what, sa->sa_family);
    SVT_CHECK(sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
              "%s: address 0x%08x, expected 127.0.0.1", what,
              ntohl(sin->sin_addr.s_addr));
    SVT_CHECK(ntohs(sin->sin_port) != 0, "%s: port 0", what);
}

static void svt_case_cm_source_address(svt_proc_t *p)
{
    svt_cm_t cm;

    svt_cm_pair(p, &cm, NULL, 0, NULL, 0);
    if (p->rank == 1) {
        svt_cm_check_loopback(rdma_get_peer_addr(cm.id),
                              "server's rdma_get_peer_addr");
    } else {
        svt_cm_check_loopback(rdma_get_local_addr(cm.id),
                              "client's rdma_get_local_addr");
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

/*
 * RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xff) in rdma_connect's and
 * rdma_accept's param mean "the most the device takes" (rdma-core 44
 * librdmacm/cma.c: rdma_connect gives the device's max_qp_rd_atom /
 * max_qp_init_rd_atom, rdma_accept the request's capped at them), and the
 * QPs get them (ucma_modify_qp_rtr/_rts, the kernel CM's cm_req_handler
 * and cm_rep_handler swap the peer's): libfabric's verbs provider connects
 * and accepts so (vrb_ep_prepare_rdma_cm_param). A value above the
 * device's, or no param for an id without QP, is EINVAL
 * (ucma_valid_param). softverbs gave the QP 255 and rdma_accept failed
 * (EINVAL), which is why ofi_rxm over verbs could not connect.
 */
static void svt_cm_check_rd_atomic(struct rdma_cm_id *id, int want,
                                   const char *who)
{
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr qa;

    SVT_OK(ibv_query_qp(id->qp, &qa,
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MAX_QP_RD_ATOMIC,
                       &qi));
    SVT_CHECK((qa.max_dest_rd_atomic == want) && (qa.max_rd_atomic == want),
              "%s QP: max_dest_rd_atomic %u, max_rd_atomic %u; expected the "
              "device's %d for RDMA_MAX_RESP_RES/RDMA_MAX_INIT_DEPTH", who,
              qa.max_dest_rd_atomic, qa.max_rd_atomic, want);
}

static void svt_case_cm_max_resources(svt_proc_t *p)
{
    struct ibv_device_attr da;
    struct rdma_conn_param cp;
    struct rdma_cm_event *ev;
    struct rdma_cm_id *bare;
    svt_cm_t cm;
    int ret;

    svt_cm_listen_xchg(p, &cm);
    if (p->rank == 1) {
        SVT_OK(ibv_query_device(cm.listen->verbs, &da));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &ev);
        cm.id = ev->id;
        /* the active side's 0xff became the device's in its REQ */
        SVT_CHECK((ev->param.conn.responder_resources ==
                   da.max_qp_init_rd_atom) &&
                  (ev->param.conn.initiator_depth == da.max_qp_rd_atom),
                  "CONNECT_REQUEST: responder_resources %u, "
                  "initiator_depth %u; expected %d/%d",
                  ev->param.conn.responder_resources,
                  ev->param.conn.initiator_depth, da.max_qp_init_rd_atom,
                  da.max_qp_rd_atom);
        SVT_OK(rdma_ack_cm_event(ev));
        svt_cm_qp(&cm);
        svt_cm_param(&cp, NULL, 0);
        cp.responder_resources = (uint8_t)(da.max_qp_rd_atom + 1);
        errno = 0;
        ret   = rdma_accept(cm.id, &cp);
        SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_accept with "
                  "responder_resources %u above the device's %d: %d (errno "
                  "%d), expected EINVAL", cp.responder_resources,
                  da.max_qp_rd_atom, ret, errno);
        cp.responder_resources = RDMA_MAX_RESP_RES;
        cp.initiator_depth     = RDMA_MAX_INIT_DEPTH;
        SVT_OK(rdma_accept(cm.id, &cp));
        svt_cm_expect(cm.ch, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
        svt_cm_check_rd_atomic(cm.id, da.max_qp_rd_atom, "passive");
    } else {
        cm.id = svt_cm_resolved_id(cm.ch, RDMA_PS_TCP, cm.port);
        SVT_OK(ibv_query_device(cm.id->verbs, &da));
        /* no QP and no param */
        bare = svt_cm_resolved_id(cm.ch, RDMA_PS_TCP, cm.port);
        errno = 0;
        ret   = rdma_connect(bare, NULL);
        SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_connect of an id "
                  "without QP and without param: %d (errno %d), expected "
                  "EINVAL", ret, errno);
        SVT_OK(rdma_destroy_id(bare));
        svt_cm_qp(&cm);
        svt_cm_param(&cp, NULL, 0);
        cp.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom + 1);
        errno = 0;
        ret   = rdma_connect(cm.id, &cp);
        SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_connect with "
                  "initiator_depth %u above the device's %d: %d (errno %d), "
                  "expected EINVAL", cp.initiator_depth,
                  da.max_qp_init_rd_atom, ret, errno);
        cp.responder_resources = RDMA_MAX_RESP_RES;
        cp.initiator_depth     = RDMA_MAX_INIT_DEPTH;
        SVT_OK(rdma_connect(cm.id, &cp));
        svt_cm_active_established(&cm);
        svt_cm_check_rd_atomic(cm.id, da.max_qp_rd_atom, "active");
    }
    svt_sync(p, !p->rank);
    svt_cm_close(&cm);
}

const svt_case_t svt_cases_cm_conn[] = {
    {"cm/qp_states_rc_init_then_rts", svt_case_cm_qp_state_rc, 2},
    {"cm/ack_timeout_option", svt_case_cm_ack_timeout, 2},
    {"cm/private_data_at_limits", svt_case_cm_priv, 2, 0},
    {"cm/private_data_short_zero_padded", svt_case_cm_priv, 2, 1},
    {"cm/private_data_over_limits_einval", svt_case_cm_priv, 2, 2},
    {"cm/reject_private_data", svt_case_cm_reject, 2},
    {"cm/connect_no_listener_rejected", svt_case_cm_no_listener, 1},
    {"cm/listener_killed_in_handshake", svt_case_cm_listener_killed, 2, 0,
     15, NULL, SVT_CASE_F_PEER_DIES},
    {"cm/destroy_before_accept_rejects", svt_case_cm_destroy_before_accept,
     2},
    {"cm/disconnect_flushes_both_sides", svt_case_cm_disconnect, 2},
    {"cm/timewait_exit_after_disconnect", svt_case_cm_timewait, 2},
    {"cm/drep_after_peer_disconnect", svt_case_cm_drep_waits, 2, 0},
    {"cm/drep_after_peer_destroy", svt_case_cm_drep_waits, 2, 1},
    {"cm/data_send_write_read", svt_case_cm_data, 2},
    {"cm/source_address_resolved", svt_case_cm_source_address, 2},
    {"cm/max_resources_0xff", svt_case_cm_max_resources, 2},
    {"cm/channel_fd_poll", svt_case_cm_chan_poll, 2, 0},
    {"cm/channel_fd_pollin_means_event", svt_case_cm_chan_poll, 2,
     SVT_CM_POLL_NOW},
    {"cm/channel_fd_not_readable_when_drained", svt_case_cm_chan_poll, 2,
     SVT_CM_POLL_DRAINED},
    {NULL}
};
