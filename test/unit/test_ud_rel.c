/*
 * Unit tests of the qpx_ud reliability core (no device): PSN arithmetic and
 * wrap-around, send window, cumulative acks, retransmission with backoff,
 * peer failure, duplicate/gap/stale rejection, and a lossy reordering
 * channel simulation that checks exactly-once in-order delivery.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/ud/qpx_ud_rel.h>

#define MS 1000000ull

typedef struct {
    qpx_ud_rel_desc_t rel;
    unsigned          seq;   /* application sequence number */
    int               acked;
} test_desc_t;

static qpx_ud_rel_config_t test_config = {
    .window       = 8,
    .rto_init     = 10 * MS,
    .rto_max      = 80 * MS,
    .backoff      = 2.0,
    .peer_timeout = 1000 * MS,
    .nak_holdoff  = 5 * MS
};

static void test_ack_cb(qpx_ud_rel_desc_t *desc, void *arg)
{
    test_desc_t *d = ucs_container_of(desc, test_desc_t, rel);
    unsigned *count = arg;

    assert_int_equal(d->acked, 0);
    d->acked = 1;
    ++(*count);
}

static void test_psn_arith(void **state)
{
    (void)state;
    assert_true(qpx_ud_psn_lt(0xfffe, 0xffff));
    assert_true(qpx_ud_psn_lt(0xffff, 0));
    assert_true(qpx_ud_psn_lt(0xfff0, 5));
    assert_false(qpx_ud_psn_lt(5, 0xfff0));
    assert_true(qpx_ud_psn_le(7, 7));
    assert_int_equal(qpx_ud_psn_diff(2, 0xfffe), 4);
    assert_int_equal(qpx_ud_psn_diff(0xfffe, 2), -4);
}

static void test_config_check(void **state)
{
    qpx_ud_rel_config_t config = test_config;

    (void)state;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_OK);
    config.window = 0;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_ERR_INVALID_PARAM);
    config.window = QPX_UD_REL_MAX_WINDOW + 1;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_ERR_INVALID_PARAM);
    config        = test_config;
    config.rto_max = config.rto_init - 1;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_ERR_INVALID_PARAM);
    config         = test_config;
    config.backoff = 0.5;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_ERR_INVALID_PARAM);
    config              = test_config;
    config.peer_timeout = 1;
    assert_int_equal(qpx_ud_rel_config_check(&config), UCS_ERR_INVALID_PARAM);
}

/* Window limit and cumulative ack across the PSN wrap */
static void test_window_and_ack(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[16];
    unsigned i, count = 0;

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 0xfffc);
    assert_true(qpx_ud_rel_tx_is_idle(&tx));

    for (i = 0; i < test_config.window; ++i) {
        assert_true(qpx_ud_rel_tx_can_send(&tx));
        assert_int_equal(qpx_ud_rel_tx_add(&tx, &descs[i].rel, 0),
                         (qpx_ud_psn_t)(0xfffc + i));
    }
    assert_false(qpx_ud_rel_tx_can_send(&tx));
    assert_int_equal(qpx_ud_rel_tx_inflight(&tx), 8);

    /* Stale acks: behind the window, and ahead of anything sent */
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0xfffa, 1, test_ack_cb, &count), 0);
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0x0004, 1, test_ack_cb, &count), 0);
    assert_int_equal(count, 0);

    /* Ack 0xfffc..0x0001 (6 packets), across the wrap */
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0x0001, 1, test_ack_cb, &count), 6);
    assert_int_equal(count, 6);
    for (i = 0; i < 8; ++i) {
        assert_int_equal(descs[i].acked, i < 6);
    }
    assert_int_equal(qpx_ud_rel_tx_inflight(&tx), 2);
    assert_true(qpx_ud_rel_tx_can_send(&tx));

    /* A repeated ack does nothing */
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0x0001, 2, test_ack_cb, &count), 0);
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0x0003, 2, test_ack_cb, &count), 2);
    assert_true(qpx_ud_rel_tx_is_idle(&tx));
    assert_int_equal(count, 8);
}

/* Timeout, go-back-N resend order, backoff doubling and cap, reset on ack */
static void test_retransmit_backoff(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[4];
    qpx_ud_rel_desc_t *d;
    unsigned i, count = 0;
    uint64_t now = 100 * MS;

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 100);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now), QPX_UD_REL_TIMER_IDLE);
    for (i = 0; i < 4; ++i) {
        qpx_ud_rel_tx_add(&tx, &descs[i].rel, now);
    }
    assert_null(qpx_ud_rel_tx_resend_next(&tx));

    /* Not yet */
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now + 10 * MS - 1),
                     QPX_UD_REL_TIMER_IDLE);
    /* First timeout: resend 100..103, rto doubles */
    now += 10 * MS;
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now), QPX_UD_REL_TIMER_RESEND);
    assert_int_equal(tx.rto, 20 * MS);
    for (i = 0; i < 2; ++i) {
        d = qpx_ud_rel_tx_resend_next(&tx);
        assert_ptr_equal(d, &descs[i].rel);
        qpx_ud_rel_tx_resend_done(&tx);
    }

    /* Ack of 100..102 while resending: cursor skips the acked 102 */
    assert_int_equal(qpx_ud_rel_tx_ack(&tx, 102, now, test_ack_cb, &count), 3);
    assert_int_equal(tx.rto, 10 * MS); /* backoff reset by progress */
    d = qpx_ud_rel_tx_resend_next(&tx);
    assert_ptr_equal(d, &descs[3].rel);
    qpx_ud_rel_tx_resend_done(&tx);
    assert_null(qpx_ud_rel_tx_resend_next(&tx));

    /* Repeated timeouts back off 10, 20, 40, 80, 80 (capped) */
    {
        static const uint64_t expect[] = {20, 40, 80, 80, 80};
        uint64_t rto = 10 * MS;
        for (i = 0; i < 5; ++i) {
            assert_int_equal(qpx_ud_rel_tx_timer(&tx, now + rto - 1),
                             QPX_UD_REL_TIMER_IDLE);
            now += rto;
            assert_int_equal(qpx_ud_rel_tx_timer(&tx, now),
                             QPX_UD_REL_TIMER_RESEND);
            assert_int_equal(tx.rto, expect[i] * MS);
            assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[3].rel);
            qpx_ud_rel_tx_resend_done(&tx);
            rto = tx.rto;
        }
    }
    assert_int_equal(tx.num_timeouts, 6);
    assert_int_equal(tx.num_resent, 8);
}

/* No ack progress for peer_timeout: failure; purge returns all in order */
static void test_peer_failure(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[3];
    qpx_ud_rel_desc_t *d;
    uint64_t now = 5 * MS;
    unsigned i, count = 0;

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 7);
    for (i = 0; i < 3; ++i) {
        qpx_ud_rel_tx_add(&tx, &descs[i].rel, now);
    }
    /* Progress at +500ms restarts the failure clock */
    qpx_ud_rel_tx_ack(&tx, 7, now + 500 * MS, test_ack_cb, &count);
    assert_int_not_equal(qpx_ud_rel_tx_timer(&tx, now + 1000 * MS),
                         QPX_UD_REL_TIMER_FAILED);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now + 1500 * MS),
                     QPX_UD_REL_TIMER_FAILED);

    for (i = 1; i < 3; ++i) {
        d = qpx_ud_rel_tx_purge_one(&tx);
        assert_ptr_equal(d, &descs[i].rel);
    }
    assert_null(qpx_ud_rel_tx_purge_one(&tx));
    assert_true(qpx_ud_rel_tx_is_idle(&tx));
    assert_int_equal(qpx_ud_rel_tx_inflight(&tx), 0);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now + 5000 * MS),
                     QPX_UD_REL_TIMER_IDLE);
}

/* NAK: immediate resend from oldest, rate limited by nak_holdoff */
static void test_nak(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[2];

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 0);
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, 100 * MS, QPX_UD_REL_MAX_WINDOW), 0); /* empty */
    qpx_ud_rel_tx_add(&tx, &descs[0].rel, 100 * MS);
    qpx_ud_rel_tx_add(&tx, &descs[1].rel, 100 * MS);
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, 100 * MS, QPX_UD_REL_MAX_WINDOW), 1);
    assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[0].rel);
    qpx_ud_rel_tx_resend_done(&tx);
    qpx_ud_rel_tx_resend_done(&tx);
    assert_null(qpx_ud_rel_tx_resend_next(&tx));
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, 101 * MS, QPX_UD_REL_MAX_WINDOW), 0); /* holdoff */
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, 106 * MS, QPX_UD_REL_MAX_WINDOW), 1);
    qpx_ud_rel_tx_resend_done(&tx);
    qpx_ud_rel_tx_resend_done(&tx);

    /* A new gap (the cumulative ack moved) is resent without holdoff */
    {
        unsigned count = 0;
        test_desc_t more;
        qpx_ud_rel_tx_add(&tx, &more.rel, 106 * MS);
        assert_int_equal(qpx_ud_rel_tx_ack(&tx, 0, 107 * MS, test_ack_cb,
                                           &count), 1);
        assert_int_equal(qpx_ud_rel_tx_nak(&tx, 107 * MS, QPX_UD_REL_MAX_WINDOW), 1);
        assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[1].rel);
    }
}

/* The timeout follows the round trip (RFC 6298), measured from the tick
 * that times a packet to the ack that covers it; none across a resend */
static void test_rto_adapts(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[64];
    unsigned i, count = 0;
    uint64_t now = 1000 * MS;

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 500);
    assert_int_equal(tx.rto, 10 * MS);

    /* Round trips of 30 ms: each tick times the newest, its ack 30 ms on */
    for (i = 0; i < 6; ++i) {
        qpx_ud_rel_tx_add(&tx, &descs[i].rel, now);
        assert_int_equal(qpx_ud_rel_tx_timer(&tx, now),
                         QPX_UD_REL_TIMER_IDLE);
        assert_true(tx.rtt_timing);
        now += 30 * MS;
        assert_int_equal(qpx_ud_rel_tx_ack(&tx, 500 + i, now, test_ack_cb,
                                           &count), 1);
        assert_false(tx.rtt_timing);
    }
    assert_int_equal(tx.srtt / MS, 30);
    /* above the samples, within rto_max (80 ms) */
    assert_true(tx.rto >= 30 * MS);
    assert_true(tx.rto <= 80 * MS);

    /* A 30 ms wait for the next ack is no timeout any more */
    qpx_ud_rel_tx_add(&tx, &descs[6].rel, now);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now + 29 * MS),
                     QPX_UD_REL_TIMER_IDLE);

    /* Karn: a resend cancels the timing, the ack after it is no sample */
    now += tx.rto;
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now), QPX_UD_REL_TIMER_RESEND);
    assert_false(tx.rtt_timing);
    qpx_ud_rel_tx_ack(&tx, 506, now + 500 * MS, test_ack_cb, &count);
    assert_int_equal(tx.srtt / MS, 30);

    /* A short path keeps the floor, rto_init */
    qpx_ud_rel_tx_init(&tx, &test_config, 0);
    qpx_ud_rel_tx_add(&tx, &descs[10].rel, now);
    qpx_ud_rel_tx_timer(&tx, now);
    qpx_ud_rel_tx_ack(&tx, 0, now + 1000, test_ack_cb, &count);
    assert_int_equal(tx.rto, 10 * MS);
}

/* The congestion window: halved by a timeout (down to the minimum), the
 * resend within it, grown back by the packets acks release */
static void test_cwnd(void **state)
{
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[8];
    unsigned i, n, count = 0;
    uint64_t now = 0;

    (void)state;
    memset(descs, 0, sizeof(descs));
    qpx_ud_rel_tx_init(&tx, &test_config, 0xfffc); /* across the wrap */
    assert_int_equal(tx.cwnd, 8);
    for (i = 0; i < 8; ++i) {
        assert_true(qpx_ud_rel_tx_can_send(&tx));
        qpx_ud_rel_tx_add(&tx, &descs[i].rel, now);
    }
    assert_false(qpx_ud_rel_tx_can_send(&tx));

    /* Timeout: cwnd 4, four resent, not eight */
    now += tx.rto;
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, now), QPX_UD_REL_TIMER_RESEND);
    assert_int_equal(tx.cwnd, 4);
    for (n = 0; qpx_ud_rel_tx_resend_next(&tx) != NULL; ++n) {
        qpx_ud_rel_tx_resend_done(&tx);
    }
    assert_int_equal(n, 4);

    /* Two more: 2, then the minimum */
    now += tx.rto;
    qpx_ud_rel_tx_timer(&tx, now);
    assert_int_equal(tx.cwnd, 2);
    now += tx.rto;
    qpx_ud_rel_tx_timer(&tx, now);
    assert_int_equal(tx.cwnd, QPX_UD_REL_MIN_CWND);
    while (qpx_ud_rel_tx_resend_next(&tx) != NULL) {
        qpx_ud_rel_tx_resend_done(&tx);
    }

    /* A NAK resends within it too */
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, now, QPX_UD_REL_MAX_WINDOW), 1);
    for (n = 0; qpx_ud_rel_tx_resend_next(&tx) != NULL; ++n) {
        qpx_ud_rel_tx_resend_done(&tx);
    }
    assert_int_equal(n, QPX_UD_REL_MIN_CWND);

    /* Acks of 3, then of the other 5: 2 + 3 = 5 in flight allowed, then
     * the window (8) */
    qpx_ud_rel_tx_ack(&tx, 0xfffe, now, test_ack_cb, &count);
    assert_int_equal(tx.cwnd, 5);
    assert_false(qpx_ud_rel_tx_can_send(&tx)); /* 5 still in flight */
    qpx_ud_rel_tx_ack(&tx, 3, now, test_ack_cb, &count);
    assert_int_equal(count, 8);
    assert_int_equal(tx.cwnd, 8);
    assert_true(qpx_ud_rel_tx_can_send(&tx));
}

/* Receive side: deliver, duplicate, gap, stale, across the wrap */
static void test_rx_check(void **state)
{
    qpx_ud_rel_rx_t rx;

    (void)state;
    qpx_ud_rel_rx_init(&rx);
    qpx_ud_rel_rx_start(&rx, 0xfffe);
    assert_int_equal(qpx_ud_rel_rx_unacked(&rx), 0);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xfffe), QPX_UD_REL_RX_DELIVER);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xfffe), QPX_UD_REL_RX_DUPLICATE);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0x0000), QPX_UD_REL_RX_AHEAD);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xffff), QPX_UD_REL_RX_DELIVER);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0x0000), QPX_UD_REL_RX_DELIVER);
    assert_int_equal(qpx_ud_rel_rx_ack_psn(&rx), 0);
    assert_int_equal(qpx_ud_rel_rx_unacked(&rx), 3);
    qpx_ud_rel_rx_acked(&rx);
    assert_int_equal(qpx_ud_rel_rx_unacked(&rx), 0);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0x8001), QPX_UD_REL_RX_STALE);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xffff), QPX_UD_REL_RX_DUPLICATE);
    assert_int_equal(rx.num_dups, 2);
    assert_int_equal(rx.num_ahead, 1);
    assert_int_equal(rx.num_stale, 1);
    assert_int_equal(rx.expected_psn, 1);
}

/* Receive reorder buffer: kept packets come out in PSN order, once */
static void test_rx_ooo(void **state)
{
    qpx_ud_rel_rx_t rx;
    void *slots[8] = {NULL};
    int items[20];

    (void)state;
    qpx_ud_rel_rx_init(&rx);
    qpx_ud_rel_rx_start(&rx, 0xfffe);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0x0000, &items[2]), 0);
    qpx_ud_rel_rx_ooo_init(&rx, slots, 8);

    /* 0xfffe lost; 0xffff, 0x0001, 0x0000 arrive (across the wrap) */
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xffff), QPX_UD_REL_RX_AHEAD);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0xffff, &items[1]), 1);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0x0001, &items[3]), 1);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0x0001, &items[3]), 0);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0x0000, &items[2]), 1);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0x0006, &items[8]), 0);
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 0xfffe, &items[0]), 0);
    assert_null(qpx_ud_rel_rx_ooo_pull(&rx));  /* gap still there */
    assert_int_equal(rx.ooo_count, 3);

    /* The gap is filled: the kept ones follow in order */
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0xfffe), QPX_UD_REL_RX_DELIVER);
    assert_ptr_equal(qpx_ud_rel_rx_ooo_pull(&rx), &items[1]);
    assert_ptr_equal(qpx_ud_rel_rx_ooo_pull(&rx), &items[2]);
    assert_ptr_equal(qpx_ud_rel_rx_ooo_pull(&rx), &items[3]);
    assert_null(qpx_ud_rel_rx_ooo_pull(&rx));
    assert_int_equal(rx.expected_psn, 2);
    assert_int_equal(qpx_ud_rel_rx_ack_psn(&rx), 1);
    assert_int_equal(qpx_ud_rel_rx_check(&rx, 0x0001), QPX_UD_REL_RX_DUPLICATE);

    /* Cleanup returns what is still kept */
    assert_int_equal(qpx_ud_rel_rx_ooo_put(&rx, 4, &items[4]), 1);
    assert_ptr_equal(qpx_ud_rel_rx_ooo_purge_one(&rx), &items[4]);
    assert_null(qpx_ud_rel_rx_ooo_purge_one(&rx));
}

/* Tail loss probe: ask for an ack before the timeout; a partial reply
 * resends the rest; a NAK with a count resends just that many */
static void test_probe_and_nak_count(void **state)
{
    qpx_ud_rel_config_t config = test_config;
    qpx_ud_rel_tx_t tx;
    test_desc_t descs[4];
    unsigned i, count = 0;

    (void)state;
    memset(descs, 0, sizeof(descs));
    config.probe_time = 3 * MS;
    qpx_ud_rel_tx_init(&tx, &config, 10);
    for (i = 0; i < 4; ++i) {
        qpx_ud_rel_tx_add(&tx, &descs[i].rel, 0);
    }
    assert_int_equal(qpx_ud_rel_tx_probe_reply(&tx), 0); /* no probe yet */
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, 2 * MS), QPX_UD_REL_TIMER_IDLE);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, 3 * MS), QPX_UD_REL_TIMER_PROBE);
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, 4 * MS), QPX_UD_REL_TIMER_IDLE);

    /* The reply acks 10, 11: 12 and 13 were lost at the tail */
    qpx_ud_rel_tx_ack(&tx, 11, 5 * MS, test_ack_cb, &count);
    assert_int_equal(qpx_ud_rel_tx_probe_reply(&tx), 0); /* progress */
    assert_int_equal(qpx_ud_rel_tx_timer(&tx, 8 * MS), QPX_UD_REL_TIMER_PROBE);
    assert_int_equal(qpx_ud_rel_tx_probe_reply(&tx), 1);
    assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[2].rel);
    qpx_ud_rel_tx_resend_done(&tx);
    assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[3].rel);
    qpx_ud_rel_tx_resend_done(&tx);
    assert_null(qpx_ud_rel_tx_resend_next(&tx));

    /* NAK from a receiver that keeps later packets: resend one only */
    assert_int_equal(qpx_ud_rel_tx_nak(&tx, 20 * MS, 1), 1);
    assert_ptr_equal(qpx_ud_rel_tx_resend_next(&tx), &descs[2].rel);
    qpx_ud_rel_tx_resend_done(&tx);
    assert_null(qpx_ud_rel_tx_resend_next(&tx));
}

/*
 * A sender and a receiver over a channel that drops 10% of packets and acks
 * and delays packets by a random number of steps (reordering). 3 wraps of
 * the PSN space; every message must be delivered exactly once, in order.
 */
#define SIM_MSGS   (3 * 65536 + 123)
#define SIM_QLEN   256

typedef struct {
    unsigned   due;
    int        is_ack;
    uint16_t   psn;
    unsigned   seq;
} sim_pkt_t;

static sim_pkt_t sim_q[SIM_QLEN];
static unsigned  sim_qn;

static void sim_send(unsigned now, int is_ack, uint16_t psn, unsigned seq)
{
    if (((rand() % 100) < 10) || (sim_qn == SIM_QLEN)) {
        return; /* lost */
    }
    sim_q[sim_qn].due    = now + 1 + (rand() % 4);
    sim_q[sim_qn].is_ack = is_ack;
    sim_q[sim_qn].psn    = psn;
    sim_q[sim_qn].seq    = seq;
    ++sim_qn;
}

static void sim_free_cb(qpx_ud_rel_desc_t *desc, void *arg)
{
    (void)arg;
    free(ucs_container_of(desc, test_desc_t, rel));
}

static void lossy_channel(int keep_ahead)
{
    void *slots[64] = {NULL};
    qpx_ud_rel_config_t config = test_config;
    qpx_ud_rel_tx_t tx;
    qpx_ud_rel_rx_t rx;
    qpx_ud_rel_desc_t *d;
    test_desc_t *desc;
    unsigned step, i, next_seq = 0, delivered = 0, *kept;
    uint64_t now;

    srand(12345);
    config.window      = 32;
    config.rto_init    = 8;  /* time unit: one step */
    config.rto_max     = 64;
    config.nak_holdoff = 4;
    sim_qn             = 0;
    qpx_ud_rel_tx_init(&tx, &config, 0xff00);
    qpx_ud_rel_rx_init(&rx);
    qpx_ud_rel_rx_start(&rx, 0xff00);
    if (keep_ahead) {
        qpx_ud_rel_rx_ooo_init(&rx, slots, 64);
    }

    for (step = 1; (delivered < SIM_MSGS) && (step < 100 * SIM_MSGS); ++step) {
        now = step;
        /* Sender: new packets while the window allows */
        while ((next_seq < SIM_MSGS) && qpx_ud_rel_tx_can_send(&tx)) {
            desc      = calloc(1, sizeof(*desc));
            desc->seq = next_seq++;
            sim_send(step, 0, qpx_ud_rel_tx_add(&tx, &desc->rel, now),
                     desc->seq);
        }
        assert_int_not_equal(qpx_ud_rel_tx_timer(&tx, now),
                             QPX_UD_REL_TIMER_FAILED);
        while ((d = qpx_ud_rel_tx_resend_next(&tx)) != NULL) {
            desc = ucs_container_of(d, test_desc_t, rel);
            /* the PSN it goes with is the cursor's */
            sim_send(step, 0, tx.resend_psn, desc->seq);
            qpx_ud_rel_tx_resend_done(&tx);
        }

        /* Channel: deliver what is due, in random order */
        for (i = 0; i < sim_qn;) {
            sim_pkt_t pkt = sim_q[i];
            if (pkt.due > step) {
                ++i;
                continue;
            }
            sim_q[i] = sim_q[--sim_qn];
            if (pkt.is_ack) {
                qpx_ud_rel_tx_ack(&tx, pkt.psn, now, sim_free_cb, NULL);
                if (pkt.seq) { /* NAK */
                    qpx_ud_rel_tx_nak(&tx, now, keep_ahead ? 1 :
                                      QPX_UD_REL_MAX_WINDOW);
                }
                continue;
            }
            switch (qpx_ud_rel_rx_check(&rx, pkt.psn)) {
            case QPX_UD_REL_RX_DELIVER:
                assert_int_equal(pkt.seq, delivered);
                ++delivered;
                while ((kept = qpx_ud_rel_rx_ooo_pull(&rx)) != NULL) {
                    assert_int_equal(*kept, delivered);
                    free(kept);
                    ++delivered;
                }
                break;
            case QPX_UD_REL_RX_AHEAD:
                kept  = malloc(sizeof(*kept));
                *kept = pkt.seq;
                if (!qpx_ud_rel_rx_ooo_put(&rx, pkt.psn, kept)) {
                    free(kept);
                }
                sim_send(step, 1, qpx_ud_rel_rx_ack_psn(&rx), 1);
                break;
            case QPX_UD_REL_RX_DUPLICATE:
                sim_send(step, 1, qpx_ud_rel_rx_ack_psn(&rx), 0);
                break;
            default:
                fail_msg("stale psn %u", pkt.psn);
            }
        }
        /* Receiver acks every 8 packets or each step when idle */
        if ((qpx_ud_rel_rx_unacked(&rx) >= 8) ||
            ((qpx_ud_rel_rx_unacked(&rx) > 0) && (sim_qn == 0))) {
            sim_send(step, 1, qpx_ud_rel_rx_ack_psn(&rx), 0);
            qpx_ud_rel_rx_acked(&rx);
        }
    }

    assert_int_equal(delivered, SIM_MSGS);
    assert_true(tx.num_resent > 0);
    assert_true(rx.num_dups > 0);
    assert_true(rx.num_ahead > 0);
    assert_int_equal(rx.num_stale, 0);
    while ((d = qpx_ud_rel_tx_purge_one(&tx)) != NULL) {
        free(ucs_container_of(d, test_desc_t, rel));
    }
    while ((kept = qpx_ud_rel_rx_ooo_purge_one(&rx)) != NULL) {
        free(kept);
    }
}

static void test_lossy_channel(void **state)
{
    (void)state;
    lossy_channel(0);
}

/* Same, with the receiver keeping packets ahead of a gap */
static void test_lossy_channel_keep_ahead(void **state)
{
    (void)state;
    lossy_channel(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_psn_arith),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_window_and_ack),
        cmocka_unit_test(test_retransmit_backoff),
        cmocka_unit_test(test_peer_failure),
        cmocka_unit_test(test_nak),
        cmocka_unit_test(test_rto_adapts),
        cmocka_unit_test(test_cwnd),
        cmocka_unit_test(test_rx_check),
        cmocka_unit_test(test_rx_ooo),
        cmocka_unit_test(test_probe_and_nak_count),
        cmocka_unit_test(test_lossy_channel),
        cmocka_unit_test(test_lossy_channel_keep_ahead)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
