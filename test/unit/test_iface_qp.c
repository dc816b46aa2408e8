/*
 * Unit tests of base's QP getter (qpx_iface_qp_get) and the send slots a
 * transport keeps (qpx_iface_init_attr_t.tx_reserve): the first QP's caps
 * are read back and become the interface's; a first QP whose send queue a
 * clamping device lowered to the reserve or below is refused and destroyed
 * (every send would have waited for a slot forever); a later QP is not
 * judged again; a QP from the pool is reused as it is. The creator is a
 * fake standing in for qpx_qp_create (the transport's creator hook), and
 * ibv_destroy_qp is wrapped to record what is destroyed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_iface.h>
#include <uct/qpx/base/qpx_md.h>


#define TEST_RESERVE   2
#define TEST_QUEUE_LEN 64

typedef struct test_ctx {
    qpx_iface_t    iface;
    qpx_md_t       md;
    struct ibv_qp  qps[4];
    unsigned       num_created;
    uint32_t       grant_send_wr;  /* what the fake device grants */
    struct ibv_qp  *destroyed[4];
    unsigned       num_destroyed;
    ucs_log_level_t last_level;    /* the exhausted level of the last create */
} test_ctx_t;

static test_ctx_t *ctx;


int __wrap_ibv_destroy_qp(struct ibv_qp *qp)
{
    assert_true(ctx->num_destroyed < 4);
    ctx->destroyed[ctx->num_destroyed++] = qp;
    return 0;
}

/* A device that clamps the send queue to grant_send_wr, as softverbs'
 * "clamp" policy and some HCAs do: the caps are written back */
static ucs_status_t test_qp_create(struct ibv_pd *pd, const qpx_device_t *dev,
                                   struct ibv_qp_init_attr *attr,
                                   ucs_log_level_t exhausted_level,
                                   struct ibv_qp **qp_p)
{
    struct ibv_qp *qp;

    assert_ptr_equal(pd, ctx->md.pd);
    assert_true(ctx->num_created < 4);
    ctx->last_level = exhausted_level;
    qp         = &ctx->qps[ctx->num_created];
    qp->qp_num = 0x100 + ctx->num_created++;
    attr->cap.max_send_wr     = ucs_min(attr->cap.max_send_wr,
                                        ctx->grant_send_wr);
    attr->cap.max_inline_data = 64;
    attr->cap.max_send_sge    = 4;
    *qp_p = qp;
    return UCS_OK;
}

static int test_setup(void **state)
{
    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ctx->md.pd                            = (struct ibv_pd*)&ctx->md;
    ctx->iface.md                         = &ctx->md;
    ctx->iface.qp_create                  = test_qp_create;
    ctx->iface.srq                        = (struct ibv_srq*)&ctx->iface;
    ctx->iface.config.tx_queue_len        = TEST_QUEUE_LEN;
    ctx->iface.config.tx_reserve          = TEST_RESERVE;
    ctx->iface.qp_init_attr.cap.max_send_wr = TEST_QUEUE_LEN;
    ctx->grant_send_wr                    = TEST_QUEUE_LEN;
    assert_int_equal(qpx_qp_pool_init(&ctx->iface.qp_pool, 2), UCS_OK);
    *state = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    ctx->iface.qp_pool.count = 0; /* the fakes are not the pool's to free */
    qpx_qp_pool_cleanup(&ctx->iface.qp_pool);
    free(ctx);
    ctx = NULL;
    return 0;
}

/* Granted as asked: the caps become the interface's */
static void test_first_qp_granted(void **state)
{
    struct ibv_qp *qp = NULL;

    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp), UCS_OK);
    assert_ptr_equal(qp, &ctx->qps[0]);
    assert_true(ctx->iface.qp_caps_granted);
    assert_int_equal(ctx->iface.config.tx_queue_len, TEST_QUEUE_LEN);
    assert_int_equal(ctx->iface.config.max_inline, 64);
    assert_int_equal(ctx->iface.config.max_send_sge, 4);
    assert_int_equal(ctx->iface.qp_pool.created, 1);
    assert_int_equal(ctx->num_destroyed, 0);
}

/* Clamped to one slot above the reserve: taken, and the queue length is
 * what was granted */
static void test_first_qp_clamped_above_reserve(void **state)
{
    struct ibv_qp *qp = NULL;

    ctx->grant_send_wr = TEST_RESERVE + 1;
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp), UCS_OK);
    assert_ptr_equal(qp, &ctx->qps[0]);
    assert_int_equal(ctx->iface.config.tx_queue_len, TEST_RESERVE + 1);
    assert_int_equal(ctx->num_destroyed, 0);
}

/* Clamped to the reserve, or below: refused, destroyed, not counted as
 * created, and the interface's caps untouched (qp_p untouched too) */
static void test_first_qp_clamped_to_reserve(void **state)
{
    uint32_t grants[] = {TEST_RESERVE, 1};
    struct ibv_qp *qp;
    unsigned i;

    for (i = 0; i < 2; ++i) {
        ctx->grant_send_wr = grants[i];
        qp                 = (struct ibv_qp*)0x1;
        assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp),
                         UCS_ERR_UNSUPPORTED);
        assert_ptr_equal(qp, (struct ibv_qp*)0x1);
        assert_int_equal(ctx->num_destroyed, i + 1);
        assert_ptr_equal(ctx->destroyed[i], &ctx->qps[i]);
        assert_false(ctx->iface.qp_caps_granted);
        assert_int_equal(ctx->iface.qp_pool.created, 0);
        assert_int_equal(ctx->iface.config.tx_queue_len, TEST_QUEUE_LEN);
    }
}

/* Without a reserve (qpx_ud) one slot is enough */
static void test_no_reserve(void **state)
{
    struct ibv_qp *qp = NULL;

    ctx->iface.config.tx_reserve = 0;
    ctx->grant_send_wr           = 1;
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp), UCS_OK);
    assert_int_equal(ctx->iface.config.tx_queue_len, 1);
    assert_int_equal(ctx->num_destroyed, 0);
}

/* After the first, QPs ask for exactly what it got, and a QP put back in
 * the pool comes out again without a creation */
static void test_later_qps_and_pool(void **state)
{
    struct ibv_qp *qp1 = NULL, *qp2 = NULL, *qp3 = NULL;

    ctx->grant_send_wr = 16;
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp1), UCS_OK);
    assert_int_equal(ctx->iface.qp_init_attr.cap.max_send_wr, 16);
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp2), UCS_OK);
    assert_ptr_not_equal(qp1, qp2);
    assert_int_equal(ctx->iface.qp_pool.created, 2);
    assert_true(qpx_qp_pool_add(&ctx->iface.qp_pool, qp2));
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp3), UCS_OK);
    assert_ptr_equal(qp3, qp2);
    assert_int_equal(ctx->iface.qp_pool.created, 2);
    assert_int_equal(ctx->iface.qp_pool.reused, 1);
    assert_int_equal(ctx->num_created, 2);
}

/* The level a QP the device has no room for is logged at: the interface's
 * for a QP an endpoint needs, debug for a spare one and for the pool filled
 * ahead (the caller goes on without it) */
static void test_exhausted_level(void **state)
{
    struct ibv_qp *qp1 = NULL, *qp2 = NULL;

    ctx->iface.exhausted_level = UCS_LOG_LEVEL_WARN;
    assert_int_equal(qpx_iface_qp_get(&ctx->iface, &qp1), UCS_OK);
    assert_int_equal(ctx->last_level, UCS_LOG_LEVEL_WARN);
    assert_int_equal(qpx_iface_qp_get_spare(&ctx->iface, &qp2), UCS_OK);
    assert_int_equal(ctx->last_level, UCS_LOG_LEVEL_DEBUG);
    ctx->last_level = UCS_LOG_LEVEL_ERROR;
    assert_int_equal(qpx_iface_qp_prefill(&ctx->iface, 1), 1);
    assert_int_equal(ctx->last_level, UCS_LOG_LEVEL_DEBUG);
    assert_int_equal(ctx->num_created, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_qp_granted, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_first_qp_clamped_above_reserve,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_first_qp_clamped_to_reserve,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_no_reserve, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_later_qps_and_pool, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_exhausted_level, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
