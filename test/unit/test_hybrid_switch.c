/*
 * Unit tests of the hybrid's promotion and demotion state machine
 * (hybrid/qpx_hybrid_switch.c, qpx_hybrid_ep.c, qpx_hybrid_ctl.c): every
 * transition of an endpoint (COLD -> PROMOTING -> HOT -> DEMOTING -> COLD,
 * refused, not answered in time, answered late, answered with a stale
 * serial), the responder's connections, the LRU choice of a victim, and
 * a peer lost in each state.
 *
 * Two nodes A and B, each a hybrid interface whose cold and RC
 * sub-interfaces are fakes: a fake endpoint records the active messages
 * sent on it, and the control messages it carries are queued for the
 * peer node, whose control handler gets them when the test delivers
 * ("the network"). Interfaces, endpoints and the control messages are the
 * hybrid's own code. Each test breaks when the rule it names is broken.
 */
#include "test_hybrid_fake.h"


/* COLD -> PROMOTING -> HOT: active messages go on while the switch is
 * under way, on DC until the answer, on RC after SWITCHED (which B holds
 * them for), none lost or reordered; one-sided operations go on (on DC)
 * while the answer is awaited; B holds one RC QP for A */
static void test_promote_handshake(void **state)
{
    qpx_hybrid_ep_t *ep;
    qpx_hybrid_conn_t *conn;
    unsigned i;

    (void)state;
    ep = test_hep(0);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    test_heat(0);

    test_progress(A); /* COLD -> PROMOTING: RC ep made, REQ due */
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_non_null(ep->rc_ep);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(test_send(0, 100), UCS_OK); /* before the REQ, on DC */
    test_progress(A); /* the REQ goes on DC */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 1);
    assert_int_equal(ctx->msgs[0].on_rc, 0);
    assert_int_equal(test_send(0, 101), UCS_OK); /* after it, on DC */
    assert_int_equal(uct_ep_put_short(ctx->ep[0], NULL, 0, 0, 0), UCS_OK);
    assert_ptr_equal(ep->rma_ep, ep->cold_ep);

    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* accepted: connected, REP due, then sent */
    conn = test_only_conn(B);
    assert_non_null(conn);
    assert_true(conn->rx_hold); /* until A's SWITCHED */
    assert_int_equal(B->h.rx_holds, 1);
    assert_true(B->rc_core.rx.src_want & QPX_IFACE_RX_SRC_USER);
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(B->h.stats.accepted, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(test_send(0, 102), UCS_OK);

    assert_int_equal(test_deliver(), 1);
    test_progress(A); /* REP: connect, SWITCHED on DC, flush DC, HOT */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_SWITCHED], 1);
    assert_int_equal(ctx->msgs[ctx->msg_tail - 1].on_rc, 0);
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_ptr_equal(ep->tx_ep, ep->rc_ep);
    assert_int_equal(test_fake(ep->rc_ep)->peer, 1);
    assert_int_equal(test_fake(conn->rc_ep)->peer, 0);
    assert_int_equal(A->h.stats.promotions, 1);
    assert_int_equal(ep->refusals, 0);
    assert_int_equal(test_send(0, 103), UCS_OK);

    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* SWITCHED: what came on RC is handed over */
    assert_false(conn->rx_hold);
    assert_int_equal(B->h.rx_holds, 0);
    assert_false(B->rc_core.rx.src_want & QPX_IFACE_RX_SRC_USER);

    assert_int_equal(ctx->num_log, THRESH + 4);
    for (i = 0; i < THRESH; ++i) {
        assert_int_equal(ctx->log[i].on_rc, 0);
        assert_int_equal(ctx->log[i].seq, i);
    }
    for (i = 0; i < 3; ++i) {
        assert_int_equal(ctx->log[THRESH + i].on_rc, 0);
        assert_int_equal(ctx->log[THRESH + i].seq, 100 + i);
    }
    assert_int_equal(ctx->log[THRESH + 3].on_rc, 1);
    assert_int_equal(ctx->log[THRESH + 3].seq, 103);
}


/* What B receives on the promotion's RC QP before A's SWITCHED is held, in
 * order (control messages too), and handed over when SWITCHED is read; a
 * message on another QP is not held; a connection that ends without
 * SWITCHED drops what it held */
static uint64_t test_rx_seq[8];
static unsigned test_rx_count;

static ucs_status_t test_rx_handler(void *arg, void *data, size_t length,
                                    unsigned flags)
{
    (void)arg;
    (void)flags;
    assert_int_equal(length, sizeof(uint64_t));
    assert_true(test_rx_count < 8);
    memcpy(&test_rx_seq[test_rx_count++], data, sizeof(uint64_t));
    return UCS_OK;
}

static void test_rc_rx(uct_ep_h src, uint8_t id, uint64_t seq)
{
    uct_am_handler_t *am = &B->rc_core.super.am[id];

    /* the fake endpoint stands where a qpx endpoint's uct_ep_t is, at its
     * start */
    B->rc_core.rx.src = (qpx_ep_t*)(void*)src;
    assert_int_equal(am->cb(am->arg, &seq, sizeof(seq), 0), UCS_OK);
}

/* B's RC interface hands its messages to the hybrid, UCP's handler is
 * test_rx_handler; endpoint 0 promoted up to B's accepting (REP sent):
 * B's connection, which holds */
static qpx_hybrid_conn_t *test_rx_accepted(void)
{
    qpx_hybrid_conn_t *conn;

    test_rx_count = 0;
    qpx_hybrid_iface_set_sub_am(&B->h, &B->rc_core, 1);
    B->h.super.am[AM_ID_DATA].cb  = test_rx_handler;
    B->h.super.am[AM_ID_DATA].arg = NULL;
    test_heat(0);
    test_progress(A);
    test_progress(A); /* the REQ */
    assert_int_equal(test_deliver(), 1);
    test_progress(B);
    conn = test_only_conn(B);
    assert_non_null(conn);
    assert_true(conn->rx_hold);
    return conn;
}

static void test_promote_rx_hold(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    qpx_hybrid_conn_t *conn;
    uct_ep_h other;
    unsigned i;

    (void)state;
    conn = test_rx_accepted();

    /* A's first messages on RC come before SWITCHED: held */
    test_rc_rx(conn->rc_ep, AM_ID_DATA, 7);
    test_rc_rx(conn->rc_ep, AM_ID_DATA, 8);
    assert_int_equal(test_rx_count, 0);
    /* one on a QP that holds nothing goes through */
    assert_int_equal(qpx_hybrid_rc_ep_create(&B->h, &other), UCS_OK);
    test_rc_rx(other, AM_ID_DATA, 99);
    assert_int_equal(test_rx_count, 1);
    assert_int_equal(test_rx_seq[0], 99);
    test_rc_rx(conn->rc_ep, AM_ID_DATA, 9);

    /* A: REP, SWITCHED; B reads it and hands them over, in order */
    assert_int_equal(test_deliver(), 1);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(test_rx_count, 1);
    assert_int_equal(test_deliver(), 1);
    test_progress(B);
    assert_false(conn->rx_hold);
    assert_int_equal(test_rx_count, 4);
    for (i = 0; i < 3; ++i) {
        assert_int_equal(test_rx_seq[1 + i], 7 + i);
    }
    /* from now on at once */
    test_rc_rx(conn->rc_ep, AM_ID_DATA, 10);
    assert_int_equal(test_rx_count, 5);
    uct_ep_destroy(other);
}

/* A connection that ends (A's QP failed) before SWITCHED drops what it
 * held; what its retired QP still brings while it drains (completions
 * already in the CQ) is dropped too, not handed over after the dropped
 * ones; once the QP is destroyed nothing holds */
static void test_promote_rx_hold_dropped(void **state)
{
    qpx_hybrid_conn_t *conn;
    uct_ep_h rc_ep;

    (void)state;
    conn  = test_rx_accepted();
    rc_ep = conn->rc_ep;
    test_rc_rx(rc_ep, AM_ID_DATA, 7);
    test_fake(rc_ep)->flush_status = UCS_INPROGRESS; /* still draining */
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h, rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.stats.dropped, 1);

    /* retired, not destroyed yet: what it receives goes */
    (void)qpx_hybrid_iface_retire_progress(&B->h);
    test_rc_rx(rc_ep, AM_ID_DATA, 8);
    assert_int_equal(test_rx_count, 0);
    assert_int_equal(B->h.stats.dropped, 2);
    /* an error of the retired QP is nobody's */
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h, rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(B->errors, 0);

    test_fake(rc_ep)->flush_status = UCS_OK;
    (void)qpx_hybrid_iface_retire_progress(&B->h);
    assert_int_equal(B->h.rx_holds, 0);
    assert_false(B->rc_core.rx.src_want & QPX_IFACE_RX_SRC_USER);
    assert_int_equal(test_rx_count, 0);
    test_drop();
}

/* PROMOTING waits for DC to be flushed before it sends on RC, and
 * requests queued meanwhile run on RC afterwards, in order */
static unsigned test_pending_calls;
static uint64_t test_pending_seq[4];

static ucs_status_t test_pending_cb(uct_pending_req_t *req)
{
    uint64_t seq = 200 + test_pending_calls;

    (void)req;
    test_pending_seq[test_pending_calls++] = seq;
    return test_send(0, seq);
}

static void test_promote_waits_for_flush(void **state)
{
    uct_pending_req_t req[2];
    qpx_hybrid_ep_t *ep = test_hep(0);
    unsigned i;

    (void)state;
    test_pending_calls = 0;
    test_heat(0);
    test_progress(A);
    test_fake(ep->cold_ep)->flush_status = UCS_INPROGRESS;
    for (i = 0; i < 2; ++i) {
        req[i].func = test_pending_cb;
        assert_int_equal(uct_ep_pending_add(ctx->ep[0], &req[i], 0), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    assert_null(ep->tx_ep);
    assert_int_equal(test_pending_calls, 0);

    test_fake(ep->cold_ep)->flush_status = UCS_OK;
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(test_pending_calls, 2);
    assert_int_equal(ctx->num_log, THRESH + 2);
    for (i = 0; i < 2; ++i) {
        assert_int_equal(ctx->log[THRESH + i].on_rc, 1);
        assert_int_equal(ctx->log[THRESH + i].seq, 200 + i);
    }
}

/* PROMOTE_NACK (B's pool is full): back to COLD, the RC QP given back, the
 * next promotion needs twice the operations */
static void test_promote_refused(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    B->h.config.pool_size = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(B->h.stats.declined, 1);
    assert_null(test_only_conn(B));
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_null(ep->rc_ep);
    assert_ptr_equal(ep->tx_ep, ep->cold_ep);
    assert_int_equal(ep->refusals, 1);
    assert_int_equal(ep->promote_at, (uint64_t)THRESH << 1);
    assert_int_equal(A->h.stats.refused, 1);
    assert_int_equal(A->h.rc_in_use, 0); /* the retired QP went back */
    assert_int_equal(B->h.rc_in_use, 0);
}

/* No RC QP to be had: the endpoint stays COLD, and no QP is asked for
 * again before the back-off has passed */
static void test_promote_no_qp(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    A->rc.create_status = UCS_ERR_NO_RESOURCE;
    A->h.rc_warned      = 1; /* said once per interface: not here */
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.stats.rc_failures, 1);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_true(A->h.rc_retry_at > qpx_hybrid_time_ns());
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);

    /* the device has QPs again, but the back-off has not passed */
    A->rc.create_status = UCS_OK;
    while (!(ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT)) {
        assert_int_equal(test_send(0, 7), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->rc.creates, 0);
    assert_int_equal(A->h.stats.rc_failures, 1);
    assert_int_equal(ep->refusals, 2);

    A->h.rc_retry_at = 0; /* it has */
    while (!(ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT)) {
        assert_int_equal(test_send(0, 7), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_backoff, 0);
}

/* B's RC interface is closed when A's PROMOTE_REQ comes (it opens at the
 * first promotion, and takes milliseconds): B answers PROMOTE_NACK with
 * NACK_OPENING at once and opens it after the answer went; A goes back to
 * COLD at once instead of holding its sends for B's open, not refused (the
 * same threshold), asks again no sooner than QPX_HYBRID_REASK_NS later
 * (SWITCH_TIMEOUT is a minute here), and is accepted then */
static void test_promote_peer_opening(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    unsigned i;

    (void)state;
    B->h.rc      = NULL;
    B->h.rc_core = NULL;
    test_heat(0);
    test_progress(A);
    test_progress(A); /* REQ sent */
    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* NACK(opening) sent, then the interface opened */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(B->rc_opens, 1);
    assert_ptr_equal(B->h.rc, &B->rc.super);
    assert_int_equal(B->rc.creates, 0);
    assert_int_equal(B->h.rc_in_use, 0);
    assert_null(test_only_conn(B));

    assert_int_equal(test_deliver(), 1);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_ptr_equal(ep->tx_ep, ep->cold_ep);
    assert_int_equal(ep->refusals, 0);
    assert_int_equal(ep->promote_at, THRESH);
    assert_int_equal(A->h.stats.deferred, 1);
    assert_int_equal(A->h.stats.refused, 0);
    assert_int_equal(A->h.rc_in_use, 0);

    /* Within QPX_HYBRID_REASK_NS of the answer the threshold does not
     * promote */
    for (i = 0; i < 3 * THRESH; ++i) {
        assert_int_equal(test_send(0, i), UCS_OK);
    }
    assert_false(ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 1);

    /* Once it has passed, THRESH operations promote, and B accepts */
    ep->window_start -= QPX_HYBRID_REASK_NS;
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 2);
    assert_int_equal(B->h.stats.accepted, 1);
    assert_int_equal(B->rc_opens, 1);
    assert_int_equal(A->h.stats.deferred, 1);
}

/* B's RC interface cannot be opened: A is told to ask again, as above,
 * but B says it once, waits its back-off, and refuses the next request
 * (no RC QP) without trying to open it again before the back-off passed */
static void test_promote_peer_open_fails(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    B->h.rc             = NULL;
    B->h.rc_core        = NULL;
    B->h.rc_warned      = 1; /* said once per interface: not here */
    B->rc_open_status   = UCS_ERR_NO_RESOURCE;
    test_heat(0);
    test_run();
    assert_int_equal(A->h.stats.deferred, 1);
    assert_int_equal(B->rc_opens, 1);
    assert_null(B->h.rc);
    assert_int_equal(B->h.stats.rc_failures, 1);
    assert_true(B->h.rc_retry_at > qpx_hybrid_time_ns());

    ep->window_start -= QPX_HYBRID_REASK_NS;
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.stats.refused, 1);
    assert_int_equal(ep->refusals, 1);
    assert_int_equal(A->h.stats.deferred, 1);
    assert_int_equal(B->rc_opens, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 2);
}

/* The peer does not answer within SWITCH_TIMEOUT: back to COLD; its late
 * PROMOTE_REP is turned down with RELEASE, and the peer gives its QP
 * back */
static void test_promote_timeout_late_answer(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    uint32_t serial;

    (void)state;
    A->h.config.switch_timeout = 0;
    test_heat(0);
    test_progress(A);
    test_progress(A); /* REQ sent */
    serial          = ep->serial;
    ep->hold_start -= 1000; /* a microsecond ago: past a timeout of 0 */
    test_progress(A); /* not answered: given up */
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_int_equal(ep->refusals, 1);
    assert_ptr_equal(ep->tx_ep, ep->cold_ep);
    assert_int_equal(ep->serial, serial);

    /* B answers now */
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(A->h.stats.promotions, 0);
}

/* An answer with another serial than the switch's changes nothing: a REP
 * is turned down (RELEASE), a NACK ignored */
static void test_stale_answers(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    test_msg_t *msg;
    qpx_hybrid_ctl_hdr_t *hdr;

    (void)state;
    test_heat(0);
    test_progress(A);
    test_progress(A);
    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* REP queued for A */
    assert_int_equal(ctx->msg_tail - ctx->msg_head, 1);
    msg = &ctx->msgs[ctx->msg_head % MAX_MSGS];
    hdr = (qpx_hybrid_ctl_hdr_t*)msg->data;
    assert_int_equal(hdr->type, QPX_HYBRID_CTL_PROMOTE_REP);

    hdr->serial = ep->serial + 1;
    assert_int_equal(test_deliver(), 1);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_int_equal(test_deliver(), 1);
    test_progress(B);
    assert_null(test_only_conn(B)); /* the stale REP's QP went back */

    /* a NACK of another switch */
    hdr->type   = QPX_HYBRID_CTL_PROMOTE_NACK;
    hdr->serial = ep->serial - 1;
    assert_int_equal(qpx_hybrid_ctl_handler(&A->h, hdr, msg->length, 0),
                     UCS_OK);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_int_equal(A->h.stats.refused, 0);
}

/* A full pool: the least recently used HOT endpoint is demoted (DEMOTE_REQ
 * on RC, DEMOTE_ACK over DC, RELEASE), and its slot promotes the new one;
 * the demoted endpoint sends on DC again, after its RC path was flushed */
static void test_demote_lru(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0), *ep1 = test_hep(1), *ep2 = test_hep(2);

    (void)state;
    A->h.config.pool_size = 2;
    test_promote(0);
    test_promote(1);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(test_send(0, 50), UCS_OK); /* ep1 now least recent */

    test_heat(2);
    test_progress(A);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep2->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(test_send(1, 51), UCS_ERR_NO_RESOURCE);
    test_progress(A); /* the REQ, the last message on RC */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    assert_int_equal(ctx->msgs[(ctx->msg_tail - 1) % MAX_MSGS].on_rc, 1);

    test_fake(ep1->rc_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 1);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING); /* RC in flight */
    assert_int_equal(ep2->state, QPX_HYBRID_EP_COLD);
    test_fake(ep1->rc_ep)->flush_status = UCS_OK;
    test_run();
    assert_int_equal(ep1->state, QPX_HYBRID_EP_COLD);
    assert_null(ep1->rc_ep);
    assert_ptr_equal(ep1->tx_ep, ep1->cold_ep);
    assert_int_equal(A->h.stats.demotions, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);

    /* the slot went to ep2 */
    assert_int_equal(ep2->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(B->h.rc_in_use, 2);
    assert_int_equal(test_send(1, 52), UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 0);
}

/* The peer does not answer a demotion in time: HOT again, and most
 * recently used, so that the next eviction picks the other endpoint; the
 * late DEMOTE_ACK changes nothing */
static void test_demote_timeout(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0), *ep1 = test_hep(1), *ep2 = test_hep(2);

    (void)state;
    A->h.config.pool_size = 2;
    test_promote(0);
    test_promote(1);
    assert_int_equal(test_send(1, 60), UCS_OK); /* ep0 least recent */
    test_heat(2);
    A->h.config.switch_timeout = 0;
    test_progress(A);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    test_progress(A); /* DEMOTE_REQ sent */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    ep0->hold_start -= 1000;
    test_progress(A); /* not answered */
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_ptr_equal(ep0->tx_ep, ep0->rc_ep);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_true(ep0->last_used > ep1->last_used);

    A->h.config.switch_timeout = 60ull * 1000000000ull;
    test_progress(A); /* the next victim */
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);

    test_run(); /* ep0's late ACK, ep1's ACK */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 2);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(ep2->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.stats.demotions, 1);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(test_send(0, 61), UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 1);
}

/* A failed sub-endpoint fails its endpoint once, in whatever state: the
 * error handler gets the hybrid endpoint, sends go to the failed path (and
 * finish with its error), the switch stops, and destroying the endpoint
 * gives every QP back */
static void test_peer_lost(unsigned stage)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    uct_ep_h failed;

    if (stage >= 1) {
        test_heat(0);
        test_progress(A);              /* 1: PROMOTING, REQ due */
    }
    if (stage >= 2) {
        test_progress(A);              /* 2: REQ sent */
    }
    if (stage >= 3) {
        test_run();                    /* 3: HOT */
    }
    if (stage >= 4) {
        A->h.config.pool_size = 1;     /* 4: DEMOTING */
        test_heat(1);
        test_progress(A);
        test_progress(A);
        assert_int_equal(ep->state, QPX_HYBRID_EP_DEMOTING);
    }

    failed = (stage >= 3) ? ep->rc_ep : ep->cold_ep;
    assert_int_equal(qpx_hybrid_sub_ep_failed(&A->h, failed,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(A->errors, 1);
    assert_ptr_equal(A->err_ep, ctx->ep[0]);
    assert_int_equal(A->err_status, UCS_ERR_ENDPOINT_TIMEOUT);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_FAILED);
    assert_ptr_equal(ep->tx_ep, failed);
    assert_ptr_equal(ep->rma_ep, failed);

    /* reported once */
    assert_int_equal(qpx_hybrid_sub_ep_failed(&A->h, failed,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(A->errors, 1);

    /* the switch stops where it was; answers for it change nothing */
    test_run();
    assert_int_equal(A->errors, 1);
    assert_int_equal(A->h.stats.promotions, (stage >= 3) ? 1 : 0);
    assert_int_equal(A->h.stats.demotions, 0);

    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_int_equal(A->h.rc_in_use, 0);
}

static void test_peer_lost_cold(void **state)
{
    (void)state;
    test_peer_lost(0);
}

static void test_peer_lost_promote_due(void **state)
{
    (void)state;
    test_peer_lost(1);
}

static void test_peer_lost_promote_sent(void **state)
{
    (void)state;
    test_peer_lost(2);
}

static void test_peer_lost_hot(void **state)
{
    (void)state;
    test_peer_lost(3);
}

static void test_peer_lost_demoting(void **state)
{
    (void)state;
    test_peer_lost(4);
}

/* The responder's side: the RC QP of a connection whose peer died fails,
 * and the connection closes and gives the QP back, without reaching any
 * endpoint's error handler */
static void test_conn_lost(void **state)
{
    qpx_hybrid_conn_t *conn;

    (void)state;
    test_promote(0);
    conn = test_only_conn(B);
    assert_non_null(conn);
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h, conn->rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_null(test_only_conn(B));
    assert_int_equal(B->errors, 0);
    test_run();
    assert_int_equal(B->h.rc_in_use, 0);
}

/* An endpoint destroyed while its promotion awaits the answer: the answer
 * finds it gone and the peer is told to give its QP back */
static void test_destroyed_while_promoting(void **state)
{
    (void)state;
    test_heat(0);
    test_progress(A);
    test_progress(A);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(A->h.rc_in_use, 0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
}

/* A HOT endpoint destroyed: the peer is told (RELEASE) and gives its QP
 * back; a peer lost meanwhile is not waited for */
static void test_destroyed_hot(void **state)
{
    (void)state;
    test_promote(0);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    test_run();
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);

    /* the same with the RELEASE lost: B keeps the QP until its RC path
     * fails, which returns it */
    ctx->ep[0] = test_ep_create(A, 1);
    test_promote(0);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(test_drop(), 1);
    test_run();
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h,
                                              test_only_conn(B)->rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    test_run();
    assert_int_equal(B->h.rc_in_use, 0);
}

/* A control message that does not fit its length, or names no type, is
 * dropped and counted */
static void test_malformed_ctl(void **state)
{
    qpx_hybrid_ctl_hdr_t hdr;
    uint8_t buf[sizeof(hdr) + 2];

    (void)state;
    memset(&hdr, 0, sizeof(hdr));
    hdr.type         = QPX_HYBRID_CTL_PROMOTE_REQ;
    hdr.dev_addr_len = 1;
    hdr.iface_addr_len = 1;
    hdr.ep_addr_len  = 1;  /* one byte more than sent */
    memcpy(buf, &hdr, sizeof(hdr));
    buf[sizeof(hdr)]     = 0;
    buf[sizeof(hdr) + 1] = 0;
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, buf, sizeof(buf), 0),
                     UCS_OK);
    hdr.type = QPX_HYBRID_CTL_LAST;
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, &hdr, sizeof(hdr), 0),
                     UCS_OK);
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, &hdr, 3, 0), UCS_OK);
    assert_int_equal(B->h.stats.malformed, 3);
    assert_true(ucs_list_is_empty(&B->h.ctl_msgs));

    /* a whole one whose RC address has the wrong length is declined */
    hdr.type        = QPX_HYBRID_CTL_PROMOTE_REQ;
    hdr.ep_addr_len = 0;
    memcpy(buf, &hdr, sizeof(hdr));
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, buf, sizeof(buf), 0),
                     UCS_OK);
    test_run();
    assert_int_equal(B->h.stats.declined, 1);
    assert_int_equal(B->h.stats.malformed, 4);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(B->h.rc_in_use, 0);
}


/* A control message without a send slot waits for one, and nothing is
 * lost: the REQ stays due (its timeout counts from when it went), the
 * peer's REP waits in its connection, a RELEASE in the interface's queue */
static void test_ctl_no_resource(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    unsigned i;

    (void)state;
    A->cold.busy               = 1;
    A->h.config.switch_timeout = 0;
    test_heat(0);
    for (i = 0; i < 4; ++i) {
        test_progress(A);
    }
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_CTL_DUE);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);
    assert_int_equal(A->h.stats.timeouts, 0);

    A->h.config.switch_timeout = 60ull * 1000000000ull;
    A->cold.busy = 0;
    B->cold.busy = 1;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 0);
    assert_false(ucs_list_is_empty(&B->h.work_conns));
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);

    B->cold.busy = 0;
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);

    /* destroyed with no send slot: its RELEASE waits, then goes */
    A->cold.busy = 1;
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_false(ucs_list_is_empty(&A->h.ctl_out));
    assert_int_equal(B->h.rc_in_use, 1);
    A->cold.busy = 0;
    test_run();
    assert_true(ucs_list_is_empty(&A->h.ctl_out));
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
}

/* Requests queued while a demotion holds the endpoint run after it, in
 * order, on the cold path */
static void test_pending_across_demotion(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0);
    uct_pending_req_t req[2];
    unsigned i;

    (void)state;
    test_pending_calls    = 0;
    A->h.config.pool_size = 1;
    test_promote(0);
    test_heat(1);
    test_progress(A);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    for (i = 0; i < 2; ++i) {
        req[i].func = test_pending_cb;
        assert_int_equal(uct_ep_pending_add(ctx->ep[0], &req[i], 0), UCS_OK);
    }
    test_run();
    assert_int_equal(ep0->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(test_pending_calls, 2);
    for (i = 0; i < 2; ++i) {
        assert_int_equal(ctx->log[ctx->num_log - 2 + i].on_rc, 0);
        assert_int_equal(ctx->log[ctx->num_log - 2 + i].seq, 200 + i);
    }
    assert_ptr_equal(ep0->tx_ep, ep0->cold_ep);
}

/* A retired RC QP counts in the pool until its flush completes, or until
 * the retirement's deadline: then it is destroyed anyway (B's QP of a
 * connection whose peer said RELEASE, and whose flush does not complete) */
static void test_retire_deadline(void **state)
{
    qpx_hybrid_retired_t *r;
    qpx_hybrid_conn_t *conn;

    (void)state;
    test_promote(0);
    conn = test_only_conn(B);
    assert_non_null(conn);
    test_fake(conn->rc_ep)->flush_status = UCS_INPROGRESS;
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_retiring, 1);

    ucs_list_for_each(r, &B->h.retired, list) {
        if (r->is_rc) {
            r->deadline = 0;
        }
    }
    test_progress(B);
    assert_int_equal(B->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_retiring, 0);
}

/* A promotion refused or not answered gives its RC QP back at once (it
 * never carried anything): the slot is free for the next one */
static void test_abort_frees_slot(void **state)
{
    (void)state;
    B->h.config.pool_size = 0; /* NACK */
    test_heat(0);
    test_progress(A);
    test_fake(test_hep(0)->rc_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_int_equal(test_hep(0)->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(A->h.rc_retiring, 0);
}

/* Without an RC interface nothing is promoted: the endpoint stays on the
 * cold path without asking, and a peer without one declines */
static void test_no_rc_interface(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    A->h.rc_avail = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->rc.creates, 0);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);

    A->h.rc_avail = 1;
    B->h.rc_avail = 0;
    ep->promote_at = THRESH;
    ep->tx_count   = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(B->rc.creates, 0);
    assert_int_equal(A->h.rc_in_use, 0);
}

/* An endpoint destroyed mid-switch on RC's side: while its promotion is
 * flushing the cold path (answered, connected) and while its demotion
 * waits for the answer; the peer is told either way and gives its QP
 * back, and its late answers find nobody */
static void test_destroyed_mid_switch(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    test_heat(0);
    test_progress(A);
    test_fake(ep->cold_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_in_use, 0);

    /* DEMOTING, its DEMOTE_REQ sent */
    A->h.config.pool_size = 1;
    test_promote(1);
    test_heat(2);
    test_progress(A);
    test_progress(A);
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    qpx_hybrid_ep_t_delete(ctx->ep[1]);
    ctx->ep[1] = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 2);
    assert_int_equal(test_hep(2)->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(A->h.stats.demotions, 0);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_promote_handshake, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_rx_hold, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_rx_hold_dropped,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_waits_for_flush, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_no_qp, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_peer_opening, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_peer_open_fails,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_timeout_late_answer, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_stale_answers, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_demote_lru, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_demote_timeout, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_cold, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_promote_due, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_promote_sent, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_hot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_demoting, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_conn_lost, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_while_promoting, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_hot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_mid_switch, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_ctl, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_ctl_no_resource, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pending_across_demotion, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_retire_deadline, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_abort_frees_slot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_no_rc_interface, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
