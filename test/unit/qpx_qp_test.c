/*
 * QP lifecycle unit tests: verbs calls are wrapped (-Wl,--wrap=...) to play
 * a device that runs out of memory, refuses caps above its limits (EINVAL,
 * softverbs' "fail" policy) or grants its limits instead ("clamp"), and
 * fails state transitions.
 */
#include <uct/qpx/base/qpx_qp.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#define DEV_MAX_WR     100
#define DEV_MAX_SGE    4
#define DEV_MAX_INLINE 64

enum { POLICY_OK, POLICY_ENOMEM, POLICY_FAIL, POLICY_CLAMP, POLICY_EINVAL };

static int policy;
static int create_calls, create_ok, destroy_calls, modify_calls;
static int modify_fail_state = -1;
static struct ibv_qp fake_qps[8];
static int next_qp;
static struct ibv_qp_attr last_attr;
static int last_mask;
static enum ibv_qp_state states[16];

struct ibv_qp *__wrap_ibv_create_qp(struct ibv_pd *pd,
                                    struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_cap *cap = &attr->cap;
    int over = (cap->max_send_wr > DEV_MAX_WR) ||
               (cap->max_send_sge > DEV_MAX_SGE) ||
               (cap->max_inline_data > DEV_MAX_INLINE);
    struct ibv_qp *qp;

    ++create_calls;
    switch (policy) {
    case POLICY_ENOMEM:
        errno = ENOMEM;
        return NULL;
    case POLICY_EINVAL:
        errno = EINVAL;
        return NULL;
    case POLICY_FAIL:
        if (over) {
            errno = EINVAL;
            return NULL;
        }
        break;
    case POLICY_CLAMP:
        if (cap->max_send_wr > DEV_MAX_WR) cap->max_send_wr = DEV_MAX_WR;
        if (cap->max_send_sge > DEV_MAX_SGE) cap->max_send_sge = DEV_MAX_SGE;
        if (cap->max_inline_data > DEV_MAX_INLINE) {
            cap->max_inline_data = DEV_MAX_INLINE;
        }
        break;
    default:
        break;
    }

    /* A device may grant more than asked: round the queue up */
    cap->max_send_wr = (cap->max_send_wr + 3) & ~3u;
    ++create_ok;
    qp           = &fake_qps[next_qp++ % 8];
    qp->qp_num   = 0x100 + next_qp;
    qp->qp_type  = attr->qp_type;
    qp->state    = IBV_QPS_RESET;
    return qp;
}

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    states[modify_calls % 16] = attr->qp_state;
    ++modify_calls;
    last_attr = *attr;
    last_mask = mask;
    if ((int)attr->qp_state == modify_fail_state) {
        return EINVAL;
    }
    qp->state = attr->qp_state;
    return 0;
}

int __wrap_ibv_destroy_qp(struct ibv_qp *qp)
{
    ++destroy_calls;
    return 0;
}

static qpx_device_t dev;

static int setup(void **state)
{
    memset(&dev, 0, sizeof(dev));
    dev.attr.max_qp_wr = DEV_MAX_WR;
    dev.attr.max_sge   = DEV_MAX_SGE;
    policy             = POLICY_OK;
    create_calls = create_ok = destroy_calls = modify_calls = 0;
    modify_fail_state  = -1;
    return 0;
}

static void init_attr(struct ibv_qp_init_attr *attr, unsigned wr, unsigned sge,
                      unsigned inl)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_type              = IBV_QPT_RC;
    attr->cap.max_send_wr      = wr;
    attr->cap.max_send_sge     = sge;
    attr->cap.max_inline_data  = inl;
}

static void test_create_ok(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_non_null(qp);
    assert_int_equal(create_calls, 1);
    assert_int_equal(attr.cap.max_send_wr, 64);
    assert_int_equal(attr.cap.max_inline_data, 32);
}

static void test_create_enomem(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = (void*)0x1234;

    policy = POLICY_ENOMEM;
    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp),
                     UCS_ERR_NO_MEMORY);
    assert_int_equal(create_calls, 1);           /* not retried */
    assert_ptr_equal(qp, (void*)0x1234);         /* output untouched */
    assert_int_equal(attr.cap.max_send_wr, 64);
}

static void test_create_refused_then_retried(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    policy = POLICY_FAIL;
    init_attr(&attr, 1000, 8, 1000);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_non_null(qp);
    assert_true(create_calls > 1);
    /* granted caps are recorded, within the device limits */
    assert_int_equal(attr.cap.max_send_wr, DEV_MAX_WR);
    assert_int_equal(attr.cap.max_send_sge, DEV_MAX_SGE);
    /* the largest inline size the device takes, found by bisection after
     * halving, not half of it; every QP it replaced was destroyed */
    assert_int_equal(attr.cap.max_inline_data, DEV_MAX_INLINE);
    assert_int_equal(destroy_calls, create_ok - 1);
}

static void test_create_clamped(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    policy = POLICY_CLAMP;
    init_attr(&attr, 1000, 8, 1000);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_int_equal(create_calls, 1);
    assert_int_equal(attr.cap.max_send_wr, DEV_MAX_WR);
    assert_int_equal(attr.cap.max_inline_data, DEV_MAX_INLINE);
}

static void test_create_granted_more(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    init_attr(&attr, 61, 1, 0);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_int_equal(attr.cap.max_send_wr, 64); /* read back, not assumed */
}

static void test_create_always_refused(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = (void*)0x1234;

    policy = POLICY_EINVAL;
    init_attr(&attr, 64, 2, 256);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp),
                     UCS_ERR_INVALID_PARAM);
    assert_ptr_equal(qp, (void*)0x1234);
    assert_true(create_calls <= 12);            /* bounded retries */
}

static void test_transitions(void **state)
{
    struct ibv_qp_init_attr attr;
    qpx_qp_connect_attr_t conn;
    struct ibv_qp *qp;

    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);

    assert_int_equal(qpx_qp_to_init(qp, 1, IBV_ACCESS_REMOTE_WRITE, 0), UCS_OK);
    assert_int_equal(last_attr.qp_state, IBV_QPS_INIT);
    assert_int_equal(last_attr.port_num, 1);
    assert_true(last_mask & IBV_QP_ACCESS_FLAGS);
    assert_false(last_mask & IBV_QP_QKEY);

    memset(&conn, 0, sizeof(conn));
    conn.dest_qpn = 0xabc; conn.rq_psn = 17; conn.sq_psn = 23;
    conn.path_mtu = IBV_MTU_1024; conn.timeout = 14; conn.retry_cnt = 7;
    conn.rnr_retry = 7; conn.max_rd_atomic = 4; conn.max_dest_rd_atomic = 4;
    conn.min_rnr_timer = 12;
    assert_int_equal(qpx_qp_to_rtr(qp, &conn), UCS_OK);
    assert_int_equal(last_attr.qp_state, IBV_QPS_RTR);
    assert_int_equal(last_attr.dest_qp_num, 0xabc);
    assert_int_equal(last_attr.rq_psn, 17);
    assert_int_equal(last_attr.path_mtu, IBV_MTU_1024);
    assert_int_equal(last_mask & (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                  IBV_QP_MIN_RNR_TIMER),
                     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                     IBV_QP_MIN_RNR_TIMER);

    assert_int_equal(qpx_qp_to_rts(qp, &conn), UCS_OK);
    assert_int_equal(last_attr.qp_state, IBV_QPS_RTS);
    assert_int_equal(last_attr.sq_psn, 23);
    assert_int_equal(last_attr.timeout, 14);
    assert_int_equal(last_attr.retry_cnt, 7);
    assert_int_equal(last_attr.rnr_retry, 7);

    assert_int_equal(qpx_qp_to_err(qp), UCS_OK);
    assert_int_equal(qp->state, IBV_QPS_ERR);
    assert_int_equal(qpx_qp_to_reset(qp), UCS_OK);
    assert_int_equal(qp->state, IBV_QPS_RESET);
}

static void test_ud_init(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp;

    init_attr(&attr, 64, 2, 32);
    attr.qp_type = IBV_QPT_UD;
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_int_equal(qpx_qp_to_init(qp, 1, 0, QPX_QP_UD_QKEY), UCS_OK);
    assert_true(last_mask & IBV_QP_QKEY);
    assert_int_equal(last_attr.qkey, QPX_QP_UD_QKEY);
}

static void test_modify_failures(void **state)
{
    struct ibv_qp_init_attr attr;
    qpx_qp_connect_attr_t conn;
    struct ibv_qp *qp;

    memset(&conn, 0, sizeof(conn));
    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);

    modify_fail_state = IBV_QPS_INIT;
    assert_int_equal(qpx_qp_to_init(qp, 1, 0, 0), UCS_ERR_IO_ERROR);
    assert_int_equal(qp->state, IBV_QPS_RESET);
    modify_fail_state = IBV_QPS_RTR;
    assert_int_equal(qpx_qp_to_init(qp, 1, 0, 0), UCS_OK);
    assert_int_equal(qpx_qp_to_rtr(qp, &conn), UCS_ERR_IO_ERROR);
    modify_fail_state = IBV_QPS_RTS;
    assert_int_equal(qpx_qp_to_rtr(qp, &conn), UCS_OK);
    assert_int_equal(qpx_qp_to_rts(qp, &conn), UCS_ERR_IO_ERROR);
    modify_fail_state = IBV_QPS_ERR;
    assert_int_equal(qpx_qp_to_err(qp), UCS_ERR_IO_ERROR);
}

static void test_pool_reuse(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp, *qp2;
    qpx_qp_pool_t pool;

    assert_int_equal(qpx_qp_pool_init(&pool, 1), UCS_OK);
    assert_null(qpx_qp_pool_get(&pool));

    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_int_equal(qpx_qp_to_init(qp, 1, 0, 0), UCS_OK);
    assert_int_equal(qpx_qp_to_err(qp), UCS_OK);

    /* back to RESET and kept, not destroyed */
    qpx_qp_pool_put(&pool, qp);
    assert_int_equal(qp->state, IBV_QPS_RESET);
    assert_int_equal(destroy_calls, 0);

    /* the pool is full: the next QP is destroyed */
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp2), UCS_OK);
    qpx_qp_pool_put(&pool, qp2);
    assert_int_equal(destroy_calls, 1);

    /* reuse: the same QP comes back, nothing is created */
    create_calls = 0;
    assert_ptr_equal(qpx_qp_pool_get(&pool), qp);
    assert_int_equal(create_calls, 0);
    assert_null(qpx_qp_pool_get(&pool));

    /* a QP that does not go to RESET is destroyed instead of pooled */
    modify_fail_state = IBV_QPS_RESET;
    qpx_qp_pool_put(&pool, qp);
    assert_int_equal(destroy_calls, 2);
    assert_null(qpx_qp_pool_get(&pool));

    modify_fail_state = -1;
    assert_int_equal(qpx_qp_create((void*)1, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    qpx_qp_pool_put(&pool, qp);
    qpx_qp_pool_cleanup(&pool);
    assert_int_equal(destroy_calls, 3);
}

/* The ACK timeout's code is the nearest on the log scale, as UCX's
 * uct_ib_to_qp_fabric_time gives it: one TIMEOUT, one QP timeout */
static void test_timeout_code(void **state)
{
    assert_int_equal(qpx_qp_timeout_code(0), 1);
    assert_int_equal(qpx_qp_timeout_code(1e-6), 1);
    assert_int_equal(qpx_qp_timeout_code(2e-3), 9);     /* 2.10 ms */
    assert_int_equal(qpx_qp_timeout_code(5e-3), 10);    /* 4.19 ms */
    assert_int_equal(qpx_qp_timeout_code(6e-3), 11);    /* 8.39 ms */
    assert_int_equal(qpx_qp_timeout_code(100e-3), 15);  /* 134 ms */
    assert_int_equal(qpx_qp_timeout_code(1.0), 18);     /* 1.07 s */
    assert_int_equal(qpx_qp_timeout_code(1e6), 31);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeout_code),
        cmocka_unit_test_setup(test_create_ok, setup),
        cmocka_unit_test_setup(test_create_enomem, setup),
        cmocka_unit_test_setup(test_create_refused_then_retried, setup),
        cmocka_unit_test_setup(test_create_clamped, setup),
        cmocka_unit_test_setup(test_create_granted_more, setup),
        cmocka_unit_test_setup(test_create_always_refused, setup),
        cmocka_unit_test_setup(test_transitions, setup),
        cmocka_unit_test_setup(test_ud_init, setup),
        cmocka_unit_test_setup(test_modify_failures, setup),
        cmocka_unit_test_setup(test_pool_reuse, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
