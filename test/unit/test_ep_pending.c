/*
 * Unit tests of base's pending queue and the contract of qpx_iface_ops_t:
 * what pending_add answers, which requests dispatch runs, stops on or
 * deschedules for each answer of the transport, what is tried again
 * without being scheduled, order, the running request's right to send,
 * purge and destroy; the send pool's exhaustion (qpx_iface_tx_no_desc).
 * The interface and the transport's answers are fakes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_ep.h>
#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>


#define NUM_EPS  2
#define NUM_REQS 4

typedef struct test_req {
    uct_pending_req_t super;
    qpx_ep_t          *ep;
    ucs_status_t      ret;      /* what its callback returns */
    unsigned          calls;
    int               clear;    /* qpx_ep_pending_is_clear() during the call */
    int               other_clear; /* the same for the other endpoint */
    int               clear_all;   /* qpx_ep_pending_is_clear_all() */
    int               takes_last;  /* the call leaves its endpoint WAIT */
    unsigned          busy_calls;  /* calls that answer UCS_INPROGRESS */
} test_req_t;

typedef struct test_ctx {
    ucs_async_context_t *async;
    uct_worker_h      worker;   /* endpoint cleanup walks its progress queue */
    qpx_iface_t       iface;
    qpx_ep_t          ep[NUM_EPS];
    int               ep_live[NUM_EPS];
    qpx_ep_tx_state_t state[NUM_EPS];
    int               exhausted;
    test_req_t        req[NUM_REQS];
    unsigned          order[NUM_REQS * 4]; /* indexes of reqs, as called */
    unsigned          num_called;
    unsigned          purged[NUM_REQS];
    unsigned          num_purged;
} test_ctx_t;

static test_ctx_t *ctx;


static int test_tx_exhausted(qpx_iface_t *iface)
{
    (void)iface;
    return ctx->exhausted;
}

static qpx_ep_tx_state_t test_ep_tx_state(qpx_iface_t *iface, qpx_ep_t *ep)
{
    (void)iface;
    return ctx->state[ep - ctx->ep];
}

static void test_solicit(qpx_iface_t *iface);

static const qpx_iface_ops_t test_ops = {
    .tx_exhausted = test_tx_exhausted,
    .ep_tx_state  = test_ep_tx_state,
    .tx_solicit   = test_solicit
};

static ucs_status_t test_req_cb(uct_pending_req_t *self)
{
    test_req_t *req = ucs_container_of(self, test_req_t, super);
    qpx_ep_t *other = (req->ep == &ctx->ep[0]) ? &ctx->ep[1] : &ctx->ep[0];

    ++req->calls;
    req->clear       = qpx_ep_pending_is_clear(&ctx->iface, req->ep);
    req->other_clear = qpx_ep_pending_is_clear(&ctx->iface, other);
    req->clear_all   = qpx_ep_pending_is_clear_all(&ctx->iface, req->ep);
    ctx->order[ctx->num_called++] = req - ctx->req;
    if (req->busy_calls > 0) {
        --req->busy_calls;
        return UCS_INPROGRESS;
    }
    if (req->takes_last) {
        ctx->state[req->ep - ctx->ep] = QPX_EP_TX_WAIT;
    }
    return req->ret;
}

static void test_purge_cb(uct_pending_req_t *self, void *arg)
{
    test_req_t *req = ucs_container_of(self, test_req_t, super);

    assert_ptr_equal(arg, ctx);
    ctx->purged[ctx->num_purged++] = req - ctx->req;
}

static int test_setup(void **state)
{
    unsigned i;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    assert_int_equal(ucs_async_context_create(UCS_ASYNC_MODE_POLL,
                                              &ctx->async), UCS_OK);
    assert_int_equal(uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE,
                                       &ctx->worker), UCS_OK);
    ctx->iface.super.worker = (uct_priv_worker_t*)ctx->worker;
    ctx->iface.ops          = &test_ops;
    ucs_arbiter_init(&ctx->iface.arbiter);
    ucs_list_head_init(&ctx->iface.pending.resched);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_int_equal(UCS_CLASS_INIT(qpx_ep_t, &ctx->ep[i], &ctx->iface),
                         UCS_OK);
        ctx->ep_live[i] = 1;
        ctx->state[i]   = QPX_EP_TX_OK;
    }
    for (i = 0; i < NUM_REQS; ++i) {
        ctx->req[i].super.func = test_req_cb;
        ctx->req[i].ret        = UCS_OK;
    }
    *state = ctx;
    return 0;
}

static void test_ep_destroy(unsigned i)
{
    UCS_CLASS_CLEANUP_CALL(&qpx_ep_t_class, &ctx->ep[i]);
    ctx->ep_live[i] = 0;
}

static int test_teardown(void **state)
{
    unsigned i;

    for (i = 0; i < NUM_EPS; ++i) {
        if (ctx->ep_live[i]) {
            test_ep_destroy(i);
        }
    }
    assert_true(ucs_list_is_empty(&ctx->iface.pending.resched));
    ucs_arbiter_cleanup(&ctx->iface.arbiter);
    uct_worker_destroy(ctx->worker);
    ucs_async_context_destroy(ctx->async);
    free(ctx);
    *state = NULL;
    return 0;
}

/* Queue req r on ep e; returns what pending_add said */
static ucs_status_t test_add(unsigned r, unsigned e)
{
    ctx->req[r].ep = &ctx->ep[e];
    return qpx_ep_pending_add(&ctx->ep[e].super.super, &ctx->req[r].super, 0);
}


/* Nothing queued and the endpoint can send: BUSY, nothing queued */
static void test_add_busy(void **state)
{
    (void)state;
    assert_int_equal(test_add(0, 0), UCS_ERR_BUSY);
    assert_true(ucs_arbiter_is_empty(&ctx->iface.arbiter));
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 0);
}


/* Queued behind another request although the endpoint could send, and
 * when the interface is out of resources, or the endpoint is WAIT or
 * RETRY */
static void test_add_queued(void **state)
{
    (void)state;
    ctx->state[0] = QPX_EP_TX_WAIT;
    assert_int_equal(test_add(0, 0), UCS_OK);
    ctx->state[0] = QPX_EP_TX_OK;
    assert_int_equal(test_add(1, 0), UCS_OK);  /* behind req 0 */

    ctx->exhausted = 1;
    assert_int_equal(test_add(2, 1), UCS_OK);
    ctx->exhausted = 0;
    qpx_ep_pending_purge(&ctx->ep[1].super.super, NULL, NULL);
    ctx->state[1] = QPX_EP_TX_RETRY;
    assert_int_equal(test_add(2, 1), UCS_OK);
    assert_true(qpx_iface_pending_is_due(&ctx->iface));
}


/* Another endpoint's request waits for the interface's resources: ep 1,
 * with nothing queued and able to send, may not go before it (its sends
 * see qpx_ep_pending_is_clear_all false, its pending_add queues instead of
 * BUSY); the waiting request runs first, with the right to send */
static void test_queue_behind_others(void **state)
{
    (void)state;
    ctx->exhausted = 1;
    assert_int_equal(test_add(0, 0), UCS_OK);
    ctx->exhausted = 0; /* the resource is back, not yet dispatched */

    assert_true(qpx_ep_pending_is_clear(&ctx->iface, &ctx->ep[1]));
    assert_false(qpx_ep_pending_is_clear_all(&ctx->iface, &ctx->ep[1]));
    assert_int_equal(test_add(1, 1), UCS_OK);

    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 2);
    assert_int_equal(ctx->order[0], 0);
    assert_int_equal(ctx->order[1], 1);
    assert_true(ctx->req[0].clear_all);
    assert_true(ctx->req[1].clear_all);

    /* Nothing waits any more: ep 1 may send, pending_add says BUSY */
    assert_true(qpx_ep_pending_is_clear_all(&ctx->iface, &ctx->ep[1]));
    assert_int_equal(test_add(2, 1), UCS_ERR_BUSY);
}


/* Dispatch runs each endpoint's requests in order, one endpoint's after
 * another's in turn, each with the right to send on its own endpoint only */
static void test_dispatch_order(void **state)
{
    (void)state;
    ctx->state[0] = ctx->state[1] = QPX_EP_TX_WAIT;
    test_add(0, 0);
    test_add(1, 0);
    test_add(2, 1);
    /* the resource back: the transport schedules them (ep 0 waited first) */
    ctx->state[0] = ctx->state[1] = QPX_EP_TX_OK;
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[0]);
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[1]);
    qpx_iface_pending_progress(&ctx->iface);

    assert_int_equal(ctx->num_called, 3);
    assert_int_equal(ctx->order[0], 0);   /* one of ep 0, one of ep 1 */
    assert_int_equal(ctx->order[1], 2);
    assert_int_equal(ctx->order[2], 1);
    assert_true(ctx->req[0].clear);
    assert_false(ctx->req[0].other_clear); /* req 2 queued on ep 1 */
    assert_true(ctx->req[2].clear);
    assert_false(ctx->req[2].other_clear); /* req 1 still on ep 0 */
    assert_true(ctx->req[1].clear);
    assert_true(ctx->req[1].other_clear);  /* ep 1 is empty by then */
    assert_null(ctx->iface.pending.ep);
    assert_false(qpx_iface_pending_is_due(&ctx->iface));
}


/* Interface out of resources: nothing runs, and the requests run at the
 * first progress after, without being scheduled again */
static void test_exhausted_stops(void **state)
{
    (void)state;
    ctx->exhausted = 1;
    test_add(0, 0);
    test_add(1, 1);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 0);

    ctx->exhausted = 0;
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 1);
    assert_int_equal(ctx->req[1].calls, 1);
}


/* WAIT: not run, and not run again until the transport schedules it */
static void test_wait_needs_schedule(void **state)
{
    (void)state;
    ctx->state[0] = QPX_EP_TX_WAIT;
    test_add(0, 0);
    qpx_iface_pending_progress(&ctx->iface);
    ctx->state[0] = QPX_EP_TX_OK;
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 0);

    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[0]);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 1);
    assert_true(ucs_arbiter_is_empty(&ctx->iface.arbiter));
}


/* Endpoints that wait (WAIT) go in the order the transport schedules
 * them, the order they began to wait: one that begins to wait while
 * another's group is descheduled is not scheduled by its pending_add,
 * which had it dispatched first (two lock spinners' answers over one DCI
 * went at every turn, the lock holder's never); nor is a waiting group by
 * a later request of its endpoint */
static void test_wait_order(void **state)
{
    (void)state;
    ctx->state[0] = QPX_EP_TX_WAIT;
    assert_int_equal(test_add(0, 0), UCS_OK);
    qpx_iface_pending_progress(&ctx->iface);
    ctx->state[1] = QPX_EP_TX_WAIT;
    assert_int_equal(test_add(1, 1), UCS_OK);
    ctx->state[0] = QPX_EP_TX_OK;
    assert_int_equal(test_add(2, 0), UCS_OK); /* behind req 0, waiting */
    assert_true(ucs_arbiter_is_empty(&ctx->iface.arbiter));
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 0);

    /* the resource back: ep 0 began to wait first */
    ctx->state[1] = QPX_EP_TX_OK;
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[0]);
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[1]);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 3);
    assert_int_equal(ctx->order[0], 0);
    assert_int_equal(ctx->order[1], 1);
    assert_int_equal(ctx->order[2], 2);
    assert_true(ucs_arbiter_is_empty(&ctx->iface.arbiter));
}


/* A request refused while the endpoint is OK or RETRY is tried again at
 * the next progress (nothing else would announce the resource); refused
 * with the endpoint then WAIT, it waits for a schedule */
static void test_refused(void **state)
{
    (void)state;
    ctx->state[0]   = QPX_EP_TX_RETRY;
    ctx->req[0].ret = UCS_ERR_NO_RESOURCE;
    test_add(0, 0);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 1);
    assert_true(qpx_iface_pending_is_due(&ctx->iface));
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 2);

    ctx->state[0]   = QPX_EP_TX_OK;
    ctx->req[0].ret = UCS_OK;
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[0].calls, 3);
    assert_false(qpx_iface_pending_is_due(&ctx->iface));

    /* refused, and by then the endpoint's own resource is gone (the
     * request took the last slot): it waits for a schedule */
    ctx->req[1].ret        = UCS_ERR_NO_RESOURCE;
    ctx->req[1].takes_last = 1;
    ctx->state[1]          = QPX_EP_TX_RETRY;
    test_add(1, 1);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[1].calls, 1);
    assert_false(qpx_iface_pending_is_due(&ctx->iface));
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[1].calls, 1);
}


/* INPROGRESS: the request stays at the head of its endpoint's queue and
 * is called again, after the other endpoint's turn */
static void test_inprogress(void **state)
{
    (void)state;
    ctx->state[0]          = QPX_EP_TX_WAIT;
    ctx->state[1]          = QPX_EP_TX_WAIT;
    ctx->req[0].busy_calls = 2;
    test_add(0, 0);
    test_add(1, 0);
    test_add(2, 1);
    ctx->state[0] = ctx->state[1] = QPX_EP_TX_OK;
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[0]);
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[1]);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 5);
    assert_int_equal(ctx->order[0], 0);
    assert_int_equal(ctx->order[1], 2);
    assert_int_equal(ctx->order[2], 0);
    assert_int_equal(ctx->order[3], 0);
    assert_int_equal(ctx->order[4], 1);
    assert_false(qpx_iface_pending_is_due(&ctx->iface));
}


/* Purge gives every request to the callback, in order, and runs none */
static void test_purge(void **state)
{
    (void)state;
    ctx->state[0] = QPX_EP_TX_WAIT;
    test_add(0, 0);
    test_add(1, 0);
    test_add(3, 0);
    qpx_ep_pending_purge(&ctx->ep[0].super.super, test_purge_cb, ctx);
    assert_int_equal(ctx->num_purged, 3);
    assert_int_equal(ctx->purged[0], 0);
    assert_int_equal(ctx->purged[1], 1);
    assert_int_equal(ctx->purged[2], 3);
    ctx->state[0] = QPX_EP_TX_OK;
    qpx_ep_pending_schedule(&ctx->iface, &ctx->ep[0]);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 0);
    assert_false(qpx_iface_pending_is_due(&ctx->iface));
}


/* An endpoint destroyed with queued requests, or while waiting to be tried
 * again, leaves nothing behind that progress would touch */
static void test_destroy(void **state)
{
    (void)state;
    ctx->state[0] = QPX_EP_TX_WAIT;
    test_add(0, 0);
    test_add(1, 0);
    ctx->state[1]   = QPX_EP_TX_RETRY;
    ctx->req[2].ret = UCS_ERR_NO_RESOURCE;
    test_add(2, 1);
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->req[2].calls, 1);  /* now on the resched list */

    test_ep_destroy(0);
    test_ep_destroy(1);
    assert_true(ucs_list_is_empty(&ctx->iface.pending.resched));
    assert_true(ucs_arbiter_is_empty(&ctx->iface.arbiter));
    qpx_iface_pending_progress(&ctx->iface);
    assert_int_equal(ctx->num_called, 1);
}


/* The send pool as qpx_rc and qpx_dc see it (qpx_iface_tx_exhausted_signaled):
 * an empty free list counts only once a get was refused (the pool at its
 * max), a buffer put back ends it, and ops->tx_solicit is asked at the
 * refused get and while it lasts */
static unsigned test_solicits;

static void test_solicit(qpx_iface_t *iface)
{
    assert_ptr_equal(iface, &ctx->iface);
    ++test_solicits;
}

static void test_tx_no_desc(void **state)
{
    ucs_mpool_ops_t ops = {ucs_mpool_chunk_malloc, ucs_mpool_chunk_free,
                           NULL, NULL};
    qpx_iface_t *iface  = &ctx->iface;
    void *a, *b;

    (void)state;
    test_solicits           = 0;
    iface->tx.cq_available  = 4;
    iface->tx.desc_limit    = 0;
    assert_int_equal(ucs_mpool_init(&iface->tx_mp, 0, 64, 0, 8, 1, 2, &ops,
                                    "test_tx"), UCS_OK);
    a = qpx_iface_tx_desc_get(iface);
    b = qpx_iface_tx_desc_get(iface);
    assert_non_null(a);
    assert_non_null(b);
    /* Empty, but no get refused yet: not exhausted, nothing solicited */
    assert_false(qpx_iface_tx_no_desc(iface));
    assert_false(qpx_iface_tx_exhausted_signaled(iface));
    assert_int_equal(test_solicits, 0);

    assert_null(qpx_iface_tx_desc_get(iface));
    assert_int_equal(test_solicits, 1); /* by the refused get */
    assert_true(qpx_iface_tx_no_desc(iface));
    assert_true(qpx_iface_tx_exhausted_signaled(iface));
    assert_int_equal(test_solicits, 2);

    ucs_mpool_put(a);
    assert_false(qpx_iface_tx_no_desc(iface));
    assert_false(qpx_iface_tx_exhausted_signaled(iface));
    assert_int_equal(test_solicits, 2);

    /* No send CQ entry: exhausted, with no solicit (a completion comes) */
    iface->tx.cq_available = 0;
    assert_true(qpx_iface_tx_exhausted_signaled(iface));
    assert_int_equal(test_solicits, 2);

    a = qpx_iface_tx_desc_get(iface);
    assert_non_null(a);
    ucs_mpool_put(a);
    ucs_mpool_put(b);
    ucs_mpool_cleanup(&iface->tx_mp, 1);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_busy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_add_queued, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_queue_behind_others, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_dispatch_order, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_exhausted_stops, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_wait_needs_schedule, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_wait_order, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_inprogress, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_purge, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_tx_no_desc, test_setup,
                                        test_teardown)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
