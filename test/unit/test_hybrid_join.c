/*
 * Unit tests of the hybrid's pair for both directions
 * (hybrid/qpx_hybrid_join.c): crossing promotions, a join and its refusal,
 * the pair's end by the owner's demotion, a demotion given up, the owner's
 * endpoint destroyed (TRANSFER), the QP failing under a joined endpoint.
 * Over the fakes of test_hybrid_fake.h. Each test breaks when the rule it
 * names is broken.
 */
#include "test_hybrid_fake.h"


/* Two peers promote to each other at once: the one with the greater
 * address goes on, on both sides (the other gives its own promotion up,
 * accepts, and joins the winner's pair), so that both directions are on
 * one pair, one QP a side, instead of both being refused (one slot each)
 * or two pairs */
static void test_crossing(int a_wins)
{
    qpx_hybrid_ep_t *a = test_hep(0), *b, *winner, *loser;
    test_node_t *win_node, *lose_node;
    unsigned n;

    A->h.config.pool_size = 1;
    B->h.config.pool_size = 1;
    if (a_wins) {
        A->h.addr.dev[1] = 0xff; /* B's LID is 2 */
    }
    ctx->b_ep = test_ep_create(B, 0);
    b         = ucs_derived_of(ctx->b_ep, qpx_hybrid_ep_t);
    winner    = a_wins ? a : b;
    loser     = a_wins ? b : a;
    win_node  = a_wins ? A : B;
    lose_node = a_wins ? B : A;

    test_heat(0);
    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, n, NULL, 0),
                         UCS_OK);
    }
    test_progress(A);
    test_progress(B);
    test_progress(A);
    test_progress(B);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 2);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
    test_run();
    assert_int_equal(winner->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(loser->state, QPX_HYBRID_EP_HOT);
    assert_true(loser->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_false(winner->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_true(winner->flags & QPX_HYBRID_EP_FLAG_PEER_JOINED);
    assert_int_equal(loser->refusals, 0);
    assert_int_equal(lose_node->h.stats.yielded, 1);
    assert_int_equal(lose_node->h.stats.joins, 1);
    assert_int_equal(win_node->h.stats.yielded, 0);
    assert_int_equal(win_node->h.stats.declined, 1);
    assert_int_equal(lose_node->h.stats.accepted, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
}

static void test_crossing_promotions(void **state)
{
    (void)state;
    test_crossing(0);
}

static void test_crossing_promotions_other_wins(void **state)
{
    (void)state;
    test_crossing(1);
}


/* B's endpoint to A, hot while A's endpoint is on a pair to B: it joins
 * the pair (JOIN_REQ on its cold path, JOIN_ACK), sends on B's connection's
 * QP, and no QP more is used on either side */
static qpx_hybrid_ep_t *test_join_setup(void)
{
    qpx_hybrid_ep_t *b;
    unsigned n;

    test_promote(0);
    ctx->b_ep = test_ep_create(B, 0);
    b         = ucs_derived_of(ctx->b_ep, qpx_hybrid_ep_t);
    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 500 + n,
                                         NULL, 0), UCS_OK);
    }
    test_run();
    return b;
}

static void test_join(void **state)
{
    qpx_hybrid_ep_t *b;
    qpx_hybrid_conn_t *conn;

    (void)state;
    b    = test_join_setup();
    conn = test_only_conn(B);
    assert_non_null(conn);
    assert_int_equal(b->state, QPX_HYBRID_EP_HOT);
    assert_true(b->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_ptr_equal(b->rc_ep, conn->rc_ep);
    assert_ptr_equal(b->tx_ep, conn->rc_ep);
    assert_int_equal(conn->joined_ep, b->id);
    assert_true(test_hep(0)->flags & QPX_HYBRID_EP_FLAG_PEER_JOINED);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_JOIN_REQ], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_JOIN_ACK], 1);
    assert_int_equal(B->h.stats.joins, 1);
    assert_int_equal(B->rc.creates, 1);   /* the connection's only */
    assert_int_equal(A->rc.creates, 1);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);

    assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 600, NULL, 0),
                     UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].node, 1);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 1);
    assert_int_equal(ctx->log[ctx->num_log - 2].on_rc, 0); /* before */
    assert_int_equal(test_fake(b->rc_ep)->peer, 0);

    /* a canceling flush does not fail the pair A's endpoint uses */
    assert_int_equal(uct_ep_flush(ctx->b_ep, UCT_FLUSH_FLAG_CANCEL, NULL),
                     UCS_OK);
    assert_false(test_fake(conn->rc_ep)->flush_flags &
                 UCT_FLUSH_FLAG_CANCEL);
}

/* A demotes its endpoint: the joined one holds, B answers on the pair once
 * the QP is flushed (after its messages), and after RELEASE it sends on
 * its cold path again */
static void test_join_leave(void **state)
{
    qpx_hybrid_ep_t *b, *ep0 = test_hep(0);
    qpx_hybrid_conn_t *conn;

    (void)state;
    b    = test_join_setup();
    conn = test_only_conn(B);
    A->h.config.pool_size = 1;
    test_heat(1);
    test_progress(A);
    test_progress(A); /* DEMOTE_REQ */
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    test_fake(conn->rc_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_int_equal(b->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 700, NULL, 0),
                     UCS_ERR_NO_RESOURCE);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 0);

    test_fake(conn->rc_ep)->flush_status = UCS_OK;
    test_progress(B);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 1);
    assert_int_equal(ctx->msgs[(ctx->msg_tail - 1) % MAX_MSGS].on_rc, 1);
    test_run();
    assert_int_equal(ep0->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(b->state, QPX_HYBRID_EP_COLD);
    assert_false(b->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_ptr_equal(b->tx_ep, b->cold_ep);
    assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 701, NULL, 0),
                     UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 0);
    /* ep1 took the slot: B holds its connection only */
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
}

/* A gives its demotion up (no answer in time): B's late answer is met with
 * DEMOTE_CANCEL, and B's joined endpoint sends on the pair again */
static void test_join_demote_cancel(void **state)
{
    qpx_hybrid_ep_t *b, *ep0 = test_hep(0);

    (void)state;
    b = test_join_setup();
    A->h.config.pool_size      = 1;
    A->h.config.switch_timeout = 0;
    test_heat(1);
    test_progress(A);
    test_progress(A); /* DEMOTE_REQ */
    ep0->hold_start -= 1000;
    test_progress(A); /* given up */
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    test_hep(1)->flags &= ~QPX_HYBRID_EP_FLAG_WANT_HOT;
    A->h.config.switch_timeout = 60ull * 1000000000ull;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_CANCEL], 1);
    assert_int_equal(b->state, QPX_HYBRID_EP_HOT);
    assert_true(b->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_false(test_only_conn(B)->demoting);
    assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 800, NULL, 0),
                     UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 1);
}

/* A destroys its endpoint: the pair stays, B's endpoint owns it (TRANSFER)
 * and later gives it back as any promoted endpoint */
static void test_join_transfer(void **state)
{
    qpx_hybrid_ep_t *b;
    uct_ep_h rc_ep;

    (void)state;
    b     = test_join_setup();
    rc_ep = b->rc_ep;
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(A->h.stats.transfers, 1);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_non_null(test_only_conn(A));
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_TRANSFER], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 0);
    assert_null(test_only_conn(B));
    assert_int_equal(b->state, QPX_HYBRID_EP_HOT);
    assert_false(b->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_ptr_equal(b->rc_ep, rc_ep);
    assert_int_equal(b->peer_conn, test_only_conn(A)->id);
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, 900, NULL, 0),
                     UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 1);

    qpx_hybrid_ep_t_delete(ctx->b_ep);
    ctx->b_ep = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(A));
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_in_use, 0);
}

/* B's joined endpoint went before A's: A's TRANSFER finds nobody, and both
 * connections go */
static void test_join_transfer_nobody(void **state)
{
    (void)state;
    (void)test_join_setup();
    qpx_hybrid_ep_t_delete(ctx->b_ep);
    ctx->b_ep = NULL;
    assert_non_null(test_only_conn(B)); /* the QP stays A's pair */
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_TRANSFER], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(A));
    assert_null(test_only_conn(B));
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_in_use, 0);
}

/* The pair's QP fails at B: the joined endpoint fails with it (its error
 * handler gets it) and owns the failed QP until destroyed */
static void test_join_failed(void **state)
{
    qpx_hybrid_ep_t *b;
    uct_ep_h rc_ep;

    (void)state;
    b     = test_join_setup();
    rc_ep = b->rc_ep;
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h, rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(B->errors, 1);
    assert_ptr_equal(B->err_ep, ctx->b_ep);
    assert_null(test_only_conn(B));
    assert_true(b->flags & QPX_HYBRID_EP_FLAG_FAILED);
    assert_ptr_equal(b->tx_ep, rc_ep);
    assert_int_equal(B->h.rc_in_use, 1);
    qpx_hybrid_ep_t_delete(ctx->b_ep);
    ctx->b_ep = NULL;
    assert_int_equal(B->h.rc_in_use, 0);
}

/* A join that finds A's endpoint leaving the pair is refused */
static void test_join_refused(void **state)
{
    qpx_hybrid_ep_t *b, *ep0 = test_hep(0);
    unsigned n;

    (void)state;
    test_promote(0);
    ctx->b_ep = test_ep_create(B, 0);
    b         = ucs_derived_of(ctx->b_ep, qpx_hybrid_ep_t);
    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, n, NULL, 0),
                         UCS_OK);
    }
    test_progress(B);
    test_progress(B); /* JOIN_REQ sent */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_JOIN_REQ], 1);
    A->h.config.pool_size = 1;
    test_heat(1);
    test_progress(A); /* ep0 DEMOTING, before A reads the request */
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_JOIN_NACK], 1);
    assert_int_equal(b->state, QPX_HYBRID_EP_COLD);
    assert_false(b->flags & QPX_HYBRID_EP_FLAG_JOINED);
    assert_int_equal(b->refusals, 1);
    assert_int_equal(B->h.stats.joins, 0);
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_HOT);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_join, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_leave, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_demote_cancel, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_transfer, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_transfer_nobody, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_failed, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_join_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_crossing_promotions, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_crossing_promotions_other_wins, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
