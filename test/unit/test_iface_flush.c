/*
 * Unit tests of base's interface flush over endpoints (qpx_iface_flush_eps):
 * one completion for many endpoint flushes, the first error reported,
 * pending requests not waited for (and never UCS_ERR_NO_RESOURCE), CANCEL,
 * refusals that leave nothing behind, and endpoint flushes that
 * complete before they return. Endpoints are fakes: their uct_ep_flush
 * returns what each test tells it to.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_iface.h>


#define NUM_EPS 4

typedef struct test_ep {
    uct_ep_t         super;
    ucs_list_link_t  list;
    ucs_status_t     ret;          /* what its flush returns */
    int              done_now;     /* INPROGRESS, but completes first */
    int              unlink;       /* the flush removes it from the list */
    unsigned         calls;
    unsigned         flags;
    uct_completion_t *comp;        /* given to its last flush */
} test_ep_t;

typedef struct test_ctx {
    qpx_iface_t      iface;
    ucs_list_link_t  eps;
    test_ep_t        ep[NUM_EPS];
    uct_completion_t comp;
    unsigned         comp_calls;
} test_ctx_t;

static test_ctx_t *ctx;


static ucs_status_t test_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp)
{
    test_ep_t *ep = ucs_derived_of(tl_ep, test_ep_t);

    ++ep->calls;
    ep->flags = flags;
    ep->comp  = comp;
    if (ep->unlink) {
        ucs_list_del(&ep->list);
    }
    if ((ep->ret == UCS_INPROGRESS) && ep->done_now && (comp != NULL)) {
        qpx_invoke_completion(comp, UCS_OK);
    }
    return ep->ret;
}

static void test_comp_cb(uct_completion_t *self)
{
    (void)self;
    ++ctx->comp_calls;
}

static int test_setup(void **state)
{
    unsigned i;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ucs_arbiter_init(&ctx->iface.arbiter);
    ucs_list_head_init(&ctx->eps);
    for (i = 0; i < NUM_EPS; ++i) {
        ctx->ep[i].ret = UCS_OK;
        ucs_list_add_tail(&ctx->eps, &ctx->ep[i].list);
    }
    ctx->comp.func   = test_comp_cb;
    ctx->comp.count  = 1;
    ctx->comp.status = UCS_OK;
    *state = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    ucs_arbiter_cleanup(&ctx->iface.arbiter);
    free(ctx);
    *state = NULL;
    return 0;
}

static ucs_status_t test_flush(unsigned flags, uct_completion_t *comp)
{
    return qpx_iface_flush_eps(&ctx->iface, flags, comp, &ctx->eps,
                               ucs_offsetof(test_ep_t, list), test_ep_flush);
}


/* Nothing outstanding anywhere: UCS_OK, comp untouched */
static void test_all_idle(void **state)
{
    unsigned i;

    (void)state;
    assert_int_equal(test_flush(0, &ctx->comp), UCS_OK);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_int_equal(ctx->ep[i].calls, 1);
    }
    assert_int_equal(ctx->comp_calls, 0);
    assert_int_equal(ctx->comp.count, 1);
}


/* Two endpoints busy: comp is called once, after both, with the first
 * error either had */
static void test_two_busy(void **state)
{
    uct_completion_t *inner;

    (void)state;
    ctx->ep[1].ret = UCS_INPROGRESS;
    ctx->ep[3].ret = UCS_INPROGRESS;
    assert_int_equal(test_flush(0, &ctx->comp), UCS_INPROGRESS);
    inner = ctx->ep[1].comp;
    assert_non_null(inner);
    assert_ptr_equal(ctx->ep[3].comp, inner);
    assert_ptr_not_equal(inner, &ctx->comp);

    qpx_invoke_completion(inner, UCS_ERR_ENDPOINT_TIMEOUT);
    assert_int_equal(ctx->comp_calls, 0);
    qpx_invoke_completion(inner, UCS_OK);
    assert_int_equal(ctx->comp_calls, 1);
    assert_int_equal(ctx->comp.count, 0);
    assert_int_equal(ctx->comp.status, UCS_ERR_ENDPOINT_TIMEOUT);
}


/* An endpoint refuses after another started: the error is returned, comp
 * is never called, the started flush completes silently (valgrind: freed) */
static void test_refused_midway(void **state)
{
    uct_completion_t *inner;

    (void)state;
    ctx->ep[0].ret = UCS_INPROGRESS;
    ctx->ep[2].ret = UCS_ERR_NO_RESOURCE;
    assert_int_equal(test_flush(0, &ctx->comp), UCS_ERR_NO_RESOURCE);
    assert_int_equal(ctx->ep[3].calls, 0);
    inner = ctx->ep[0].comp;
    assert_non_null(inner);
    qpx_invoke_completion(inner, UCS_OK);
    assert_int_equal(ctx->comp_calls, 0);
    assert_int_equal(ctx->comp.count, 1);
}


/* Without a completion, an endpoint without room counts as in progress:
 * the caller polls again */
static void test_no_comp_no_resource(void **state)
{
    (void)state;
    ctx->ep[2].ret = UCS_ERR_NO_RESOURCE;
    assert_int_equal(test_flush(0, NULL), UCS_INPROGRESS);
    assert_int_equal(ctx->ep[3].calls, 1);
    assert_null(ctx->ep[2].comp);
}


/* Failed endpoints have nothing left to wait for */
static void test_failed_eps(void **state)
{
    (void)state;
    ctx->ep[0].ret = UCS_ERR_ENDPOINT_TIMEOUT;
    ctx->ep[1].ret = UCS_ERR_CANCELED;
    assert_int_equal(test_flush(0, &ctx->comp), UCS_OK);
    assert_int_equal(ctx->comp_calls, 0);
}


/* Flushes that complete before they return: the result is returned, comp
 * is not called */
static void test_done_before_return(void **state)
{
    (void)state;
    ctx->ep[1].ret      = UCS_INPROGRESS;
    ctx->ep[1].done_now = 1;
    assert_int_equal(test_flush(0, &ctx->comp), UCS_OK);
    assert_int_equal(ctx->comp_calls, 0);
    assert_int_equal(ctx->comp.count, 1);
}


static ucs_arbiter_cb_result_t
test_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
              ucs_arbiter_elem_t *elem, void *arg)
{
    (void)arbiter;
    (void)group;
    (void)elem;
    (void)arg;
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}

/* Pending requests are not issued operations: a flush does not wait for
 * them, and never answers UCS_ERR_NO_RESOURCE (UCP's worker flush fails on
 * it); without a completion it says UCS_INPROGRESS while any are queued */
static void test_pending_not_issued(void **state)
{
    ucs_arbiter_group_t group;
    ucs_arbiter_elem_t elem;
    unsigned i;

    (void)state;
    ucs_arbiter_group_init(&group);
    ucs_arbiter_elem_init(&elem);
    ucs_arbiter_group_push_elem(&group, &elem);
    ucs_arbiter_group_schedule(&ctx->iface.arbiter, &group);

    assert_int_equal(test_flush(0, NULL), UCS_INPROGRESS);
    assert_int_equal(test_flush(0, &ctx->comp), UCS_OK);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_int_equal(ctx->ep[i].calls, 2);
    }
    assert_int_equal(ctx->comp_calls, 0);

    ucs_arbiter_group_desched(&ctx->iface.arbiter, &group);
    ucs_arbiter_group_purge(&ctx->iface.arbiter, &group, test_purge_cb, NULL);
    ucs_arbiter_group_cleanup(&group);
    assert_int_equal(test_flush(0, NULL), UCS_OK);
}


/* CANCEL: every endpoint is flushed with CANCEL and no completion, also
 * when a flush unlinks its endpoint; UCS_OK, comp untouched */
static void test_cancel(void **state)
{
    unsigned i;

    (void)state;
    ctx->ep[1].unlink = 1;
    ctx->ep[2].unlink = 1;
    ctx->ep[2].ret    = UCS_INPROGRESS;
    assert_int_equal(test_flush(UCT_FLUSH_FLAG_CANCEL, &ctx->comp), UCS_OK);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_int_equal(ctx->ep[i].calls, 1);
        assert_int_equal(ctx->ep[i].flags, UCT_FLUSH_FLAG_CANCEL);
        assert_null(ctx->ep[i].comp);
    }
    assert_int_equal(ctx->comp_calls, 0);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all_idle, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_two_busy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_refused_midway, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_no_comp_no_resource, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_failed_eps, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_done_before_return, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pending_not_issued, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_cancel, test_setup,
                                        test_teardown)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
