/*
 * Unit tests of qpx_ud's delayed acknowledgement (qpx_ud_ep_timer, run for
 * each active endpoint on every tick): packets a tick finds unacknowledged
 * are acknowledged at the next tick unless an ack was sent in between
 * (carried by a send, or explicit), so that an ack waits at least one tick
 * and less than two, and nothing is noted per received packet. The
 * endpoint has an idle send window (its send timer has nothing to do); the
 * interface is only what the timer touches: the control and active lists.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/ud/qpx_ud.inl>


#define TEST_TICK 1000

typedef struct test_ctx {
    qpx_ud_iface_t      iface;
    qpx_ud_ep_t         ep;
    qpx_ud_rel_config_t rel_config;
} test_ctx_t;

static test_ctx_t *ctx;


static int test_setup(void **state)
{
    qpx_ud_iface_t *iface;
    qpx_ud_ep_t *ep;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    iface       = &ctx->iface;
    ep          = &ctx->ep;
    iface->tick          = TEST_TICK;
    iface->rx.ack_thresh = 128; /* no ack for a count of packets */
    iface->now           = 1000000;
    ucs_list_head_init(&iface->ctl_eps);
    ucs_list_head_init(&iface->active_eps);

    ctx->rel_config.window       = 64;
    ctx->rel_config.rto_init     = 10 * TEST_TICK;
    ctx->rel_config.rto_max      = 100 * TEST_TICK;
    ctx->rel_config.backoff      = 2.0;
    ctx->rel_config.peer_timeout = 1000 * TEST_TICK;
    ctx->rel_config.nak_holdoff  = TEST_TICK;
    qpx_ud_rel_tx_init(&ep->tx, &ctx->rel_config, 0);
    qpx_ud_rel_rx_init(&ep->rx);
    qpx_ud_rel_rx_start(&ep->rx, 100);
    ep->flags = QPX_UD_EP_FLAG_CONNECTED | QPX_UD_EP_FLAG_RX_STARTED;
    *state    = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    free(ctx);
    *state = NULL;
    return 0;
}

/* n packets delivered in order, as the receive path does: then active */
static void test_deliver(unsigned n)
{
    while (n-- > 0) {
        ++ctx->ep.rx.expected_psn;
        qpx_ud_ep_rx_delivered(&ctx->iface, &ctx->ep, 0, 0);
    }
    assert_true(ctx->ep.flags & QPX_UD_EP_FLAG_ON_ACTIVE);
}

static void test_tick(void)
{
    ctx->iface.now += TEST_TICK;
    qpx_ud_ep_timer(&ctx->iface, &ctx->ep);
}

static int test_ack_owed(void)
{
    return !!(ctx->ep.flags & QPX_UD_EP_FLAG_ACK_NOW);
}

/* An ack carried by a send (what qpx_ud_ep_hdr_init does) */
static void test_ack_sent(void)
{
    qpx_ud_rel_rx_acked(&ctx->ep.rx);
    ctx->ep.flags &= ~QPX_UD_EP_FLAG_ACK_NOW;
}


/* Packets unacked at two ticks in a row: the second one acks them */
static void test_acked_at_second_tick(void **state)
{
    (void)state;
    test_deliver(3);
    assert_int_equal(qpx_ud_rel_rx_unacked(&ctx->ep.rx), 3);
    test_tick();
    assert_false(test_ack_owed());
    test_deliver(2); /* more arrive: still the same wait */
    test_tick();
    assert_true(test_ack_owed());
    assert_true(ctx->ep.flags & QPX_UD_EP_FLAG_ON_CTL);
    assert_false(ucs_list_is_empty(&ctx->iface.ctl_eps));
}

/* An ack sent between the ticks restarts the wait for what came after */
static void test_ack_between_ticks(void **state)
{
    (void)state;
    test_deliver(3);
    test_tick();
    test_ack_sent();
    test_deliver(1);
    test_tick(); /* this packet came after the ack: it waits one more */
    assert_false(test_ack_owed());
    test_tick();
    assert_true(test_ack_owed());
}

/* Nothing unacked at a tick: the next packets wait a whole tick again */
static void test_nothing_unacked(void **state)
{
    (void)state;
    test_deliver(2);
    test_tick();
    test_ack_sent();
    test_tick(); /* nothing unacked: the mark goes */
    assert_false(ctx->ep.flags & QPX_UD_EP_FLAG_ACK_AGING);
    assert_false(test_ack_owed());
    test_deliver(1);
    test_tick();
    assert_false(test_ack_owed());
    test_tick();
    assert_true(test_ack_owed());
}

/* An idle endpoint (nothing to ack, nothing in flight) leaves the active
 * list at its tick */
static void test_idle_leaves_active(void **state)
{
    (void)state;
    test_deliver(1);
    test_tick();
    test_ack_sent();
    test_tick();
    assert_false(ctx->ep.flags & QPX_UD_EP_FLAG_ON_ACTIVE);
    assert_true(ucs_list_is_empty(&ctx->iface.active_eps));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_acked_at_second_tick,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_ack_between_ticks, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_nothing_unacked, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_idle_leaves_active, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
