/*
 * Unit tests of the order in which qpx_rc reports a failed endpoint
 * (qpx_rc_ep_handle_failure, rc/qpx_rc_ep.c): the QP goes to ERR, every
 * outstanding operation is taken off the endpoint, the user's error handler
 * is called, and only then do the operations complete, with the failure's
 * status, in posting order. A user that retries a request from its error
 * completion (UCP's failover does) finds the endpoint reported; the handler
 * may destroy the endpoint, which nothing touches afterwards (the endpoint
 * is freed in the handler here, so that valgrind.sh sees any later access).
 * ibv_modify_qp is wrapped (-Wl,--wrap); the interface and the endpoint are
 * zeroed structures with what these functions read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/rc/qpx_rc_ep.inl>

#include "test_op_rec.h"


#define TEST_NUM_OPS 3


static struct {
    int                 modify_calls;
    enum ibv_qp_state   modify_state;
    int                 reported;       /* error handler calls */
    ucs_status_t        report_status;
    int                 done_at_report; /* operations completed by then */
    int                 destroy;        /* the handler frees the endpoint */
} rec;


int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                         int mask);

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                         int mask)
{
    assert_int_equal(mask, IBV_QP_STATE);
    ++rec.modify_calls;
    rec.modify_state = attr->qp_state;
    qp->state        = attr->qp_state; /* as libibverbs keeps it */
    return 0;
}


typedef struct {
    qpx_rc_iface_t     iface;
    qpx_device_port_t  port;
    struct ibv_qp      qp;
    test_rec_op_t      ops[TEST_NUM_OPS];
} test_ctx_t;

static test_ctx_t *ctx;
static qpx_rc_ep_t *test_ep;


static ucs_status_t test_err_handler(void *arg, uct_ep_h tl_ep,
                                     ucs_status_t status)
{
    qpx_rc_ep_t *ep = ucs_derived_of(tl_ep, qpx_rc_ep_t);

    assert_ptr_equal(arg, ctx);
    assert_ptr_equal(ep, test_ep);
    /* The QP is in ERR and the endpoint failed before the user hears */
    assert_int_equal(rec.modify_calls, 1);
    assert_true(ep->flags & QPX_RC_EP_FLAG_ERROR);
    assert_true(ucs_list_is_empty(&ep->tx.ops));
    ++rec.reported;
    rec.report_status  = status;
    rec.done_at_report = test_op_rec.done;
    if (rec.destroy) {
        free(ep);
        test_ep = NULL;
    }
    return UCS_OK;
}


static int test_setup(void **state)
{
    qpx_rc_ep_t *ep;
    int i;

    (void)state;
    memset(&rec, 0, sizeof(rec));
    memset(&test_op_rec, 0, sizeof(test_op_rec));
    ctx = calloc(1, sizeof(*ctx));
    ep  = calloc(1, sizeof(*ep));
    assert_non_null(ctx);
    assert_non_null(ep);
    test_ep = ep;

    ctx->iface.super.super.port                    = &ctx->port;
    ctx->iface.super.super.super.err_handler       = test_err_handler;
    ctx->iface.super.super.super.err_handler_arg   = ctx;
    ctx->iface.super.super.super.config.failure_level = UCS_LOG_LEVEL_DEBUG;
    ucs_arbiter_init(&ctx->iface.super.super.arbiter);
    ctx->qp.qp_num = 0x321;

    ep->super.super.super.iface = &ctx->iface.super.super.super.super;
    ucs_arbiter_group_init(&ep->super.arb_group);
    ep->qp    = &ctx->qp;
    ep->flags = QPX_RC_EP_FLAG_CONNECTED;
    ucs_list_head_init(&ep->tx.ops);

    /* TEST_NUM_OPS requests posted, none completed */
    for (i = 0; i < TEST_NUM_OPS; ++i) {
        ctx->ops[i].index = i;
        qpx_op_add(&ep->tx.ops, &ctx->ops[i].op, i + 1, test_rec_op_cb, NULL,
                   ep->id);
    }
    ep->tx.sn                       = TEST_NUM_OPS;
    ep->tx.acked_sn                 = 0;
    ep->tx.sq_available             = 8;
    ctx->iface.super.tx_unacked     = TEST_NUM_OPS;
    return 0;
}


static int test_teardown(void **state)
{
    (void)state;
    if (test_ep != NULL) {
        ucs_arbiter_group_cleanup(&test_ep->super.arb_group);
        free(test_ep);
    }
    ucs_arbiter_cleanup(&ctx->iface.super.super.arbiter);
    free(ctx);
    return 0;
}


static void test_check_completed(ucs_status_t status)
{
    assert_int_equal(rec.reported, 1);
    assert_int_equal(rec.report_status, status);
    /* none completed before the report, all after it, in posting order */
    assert_int_equal(rec.done_at_report, 0);
    test_rec_op_check(TEST_NUM_OPS, status);
}


/* A retry timeout: the QP to ERR, reported, then its operations complete
 * with UCS_ERR_ENDPOINT_TIMEOUT; the endpoint's accounting is closed */
static void test_report_before_ops(void **state)
{
    qpx_rc_ep_t *ep = test_ep;

    (void)state;
    qpx_rc_ep_handle_failure(ep, IBV_WC_RETRY_EXC_ERR);
    assert_int_equal(rec.modify_calls, 1);
    assert_int_equal(rec.modify_state, IBV_QPS_ERR);
    test_check_completed(UCS_ERR_ENDPOINT_TIMEOUT);
    assert_int_equal(ep->tx.acked_sn, ep->tx.sn);
    assert_int_equal(ctx->iface.super.tx_unacked, 0);
    assert_true(ep->tx.sq_available <= 0);

    /* a second error completion of the same endpoint reports nothing */
    qpx_rc_ep_handle_failure(ep, IBV_WC_WR_FLUSH_ERR);
    assert_int_equal(rec.reported, 1);
    assert_int_equal(test_op_rec.done, TEST_NUM_OPS);
    assert_int_equal(rec.modify_calls, 1);
}


/* The handler destroys the endpoint: the operations still complete (they
 * were taken off it before), and nothing reads the freed endpoint
 * (valgrind.sh runs this test too) */
static void test_handler_destroys_ep(void **state)
{
    (void)state;
    rec.destroy = 1;
    qpx_rc_ep_handle_failure(test_ep, IBV_WC_REM_ACCESS_ERR);
    assert_null(test_ep);
    test_check_completed(UCS_ERR_CONNECTION_RESET);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_report_before_ops, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_handler_destroys_ep, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
