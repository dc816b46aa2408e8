/*
 * Unit tests of the DC QP lifecycle (base/qpx_qp_dc.c): mlx5dv_create_qp and
 * ibv_modify_qp are wrapped (-Wl,--wrap=...) to check the attributes a DC
 * initiator and a DC target are created and moved with (the rules of
 * rdma-core's mlx5 provider and the kernel's mlx5_ib), and to play a device
 * that refuses caps above its limits or runs out of memory.
 */
#include <uct/qpx/base/qpx_qp.h>

#include <infiniband/mlx5dv.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#define DEV_MAX_WR     100
#define DEV_MAX_SGE    4
#define DEV_MAX_INLINE 64

enum { POLICY_OK, POLICY_ENOMEM, POLICY_FAIL };

static int policy;
static int create_calls, modify_calls, destroy_calls;
static int modify_fail_state = -1;
static struct ibv_qp fake_qp;
static struct ibv_context fake_ctx;
static struct ibv_pd fake_pd = {.context = &fake_ctx};
static struct ibv_qp_init_attr_ex last_ex;
static struct mlx5dv_qp_init_attr last_dv;
static struct ibv_qp_attr attrs[8];
static int masks[8];

struct ibv_qp *__wrap_mlx5dv_create_qp(struct ibv_context *ctx,
                                       struct ibv_qp_init_attr_ex *ex,
                                       struct mlx5dv_qp_init_attr *dv)
{
    struct ibv_qp_cap *cap = &ex->cap;

    ++create_calls;
    last_ex = *ex;
    last_dv = *dv;
    assert_ptr_equal(ctx, &fake_ctx);
    if (policy == POLICY_ENOMEM) {
        errno = ENOMEM;
        return NULL;
    }
    if ((policy == POLICY_FAIL) &&
        ((cap->max_send_wr > DEV_MAX_WR) || (cap->max_send_sge > DEV_MAX_SGE) ||
         (cap->max_inline_data > DEV_MAX_INLINE))) {
        errno = EINVAL;
        return NULL;
    }
    cap->max_send_wr = (cap->max_send_wr + 3) & ~3u; /* granted: rounded */
    fake_qp.qp_num   = (dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT) ?
                       0 : 0x200;
    fake_qp.qp_type  = IBV_QPT_DRIVER;
    fake_qp.state    = IBV_QPS_RESET;
    return &fake_qp;
}

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    attrs[modify_calls % 8] = *attr;
    masks[modify_calls % 8] = mask;
    ++modify_calls;
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
    create_calls = modify_calls = destroy_calls = 0;
    modify_fail_state  = -1;
    return 0;
}

static void init_attr(struct ibv_qp_init_attr *attr, unsigned wr, unsigned sge,
                      unsigned inl)
{
    memset(attr, 0, sizeof(*attr));
    attr->send_cq              = (void*)0x10;
    attr->recv_cq              = (void*)0x20;
    attr->srq                  = (void*)0x30;
    attr->cap.max_send_wr      = wr;
    attr->cap.max_send_sge     = sge;
    attr->cap.max_inline_data  = inl;
    attr->cap.max_recv_wr      = 16;  /* must not reach a DCI */
    attr->cap.max_recv_sge     = 1;
}

/* A DCI: IBV_QPT_DRIVER with the DC attributes, every RC operation through
 * the ibv_wr_* API, no SRQ and no receive caps (the kernel refuses a DCI
 * with max_recv_*), the granted caps written back */
static void test_dci_create(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    init_attr(&attr, 63, 2, 32);
    assert_int_equal(qpx_qp_dci_create(&fake_pd, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_ptr_equal(qp, &fake_qp);
    assert_int_equal(create_calls, 1);
    assert_int_equal(last_ex.qp_type, IBV_QPT_DRIVER);
    assert_int_equal(last_ex.comp_mask,
                     IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
    assert_ptr_equal(last_ex.pd, &fake_pd);
    assert_int_equal(last_ex.send_ops_flags,
                     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                     IBV_QP_EX_WITH_RDMA_WRITE |
                     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                     IBV_QP_EX_WITH_RDMA_READ |
                     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
    assert_null(last_ex.srq);
    assert_int_equal(last_ex.cap.max_recv_wr, 0);
    assert_int_equal(last_ex.cap.max_recv_sge, 0);
    assert_ptr_equal(last_ex.send_cq, (void*)0x10);
    assert_ptr_equal(last_ex.recv_cq, (void*)0x20);
    assert_int_equal(last_dv.comp_mask, MLX5DV_QP_INIT_ATTR_MASK_DC);
    assert_int_equal(last_dv.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCI);
    /* granted: the rounded-up queue, read back */
    assert_int_equal(attr.cap.max_send_wr, 64);
    assert_int_equal(attr.cap.max_inline_data, 32);
    assert_int_equal(attr.cap.max_recv_wr, 0);
}

/* Caps above the device's limits refused with EINVAL: retried within them */
static void test_dci_create_clamped(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    policy = POLICY_FAIL;
    init_attr(&attr, 1000, 8, 32);
    assert_int_equal(qpx_qp_dci_create(&fake_pd, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp), UCS_OK);
    assert_int_equal(create_calls, 2);
    assert_int_equal(attr.cap.max_send_wr, DEV_MAX_WR);
    assert_int_equal(attr.cap.max_send_sge, DEV_MAX_SGE);
    assert_int_equal(last_dv.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCI);
}

/* Out of memory: one try, UCS_ERR_NO_MEMORY, the caps untouched */
static void test_dci_create_enomem(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    policy = POLICY_ENOMEM;
    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_dci_create(&fake_pd, &dev, &attr, UCS_LOG_LEVEL_ERROR, &qp),
                     UCS_ERR_NO_MEMORY);
    assert_int_equal(create_calls, 1);
    assert_null(qp);
    assert_int_equal(attr.cap.max_send_wr, 64);
}

/* A DCT: comp_mask PD only (rdma-core's create_dct refuses more), its SRQ,
 * its key; without an SRQ it is refused before the device is asked */
static void test_dct_create(void **state)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp = NULL;

    init_attr(&attr, 64, 2, 32);
    assert_int_equal(qpx_qp_dct_create(&fake_pd, &attr, 0x1ee7a330ull,
                                       UCS_LOG_LEVEL_ERROR, &qp),
                     UCS_OK);
    assert_ptr_equal(qp, &fake_qp);
    assert_int_equal(last_ex.comp_mask, IBV_QP_INIT_ATTR_PD);
    assert_int_equal(last_ex.qp_type, IBV_QPT_DRIVER);
    assert_ptr_equal(last_ex.srq, (void*)0x30);
    assert_ptr_equal(last_ex.recv_cq, (void*)0x20);
    assert_int_equal(last_dv.comp_mask, MLX5DV_QP_INIT_ATTR_MASK_DC);
    assert_int_equal(last_dv.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCT);
    assert_true(last_dv.dc_init_attr.dct_access_key == 0x1ee7a330ull);

    attr.srq = NULL;
    qp       = NULL;
    assert_int_equal(qpx_qp_dct_create(&fake_pd, &attr, 1, UCS_LOG_LEVEL_ERROR,
                                       &qp),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(create_calls, 1);
    assert_null(qp);

    policy   = POLICY_ENOMEM;
    attr.srq = (void*)0x30;
    assert_int_equal(qpx_qp_dct_create(&fake_pd, &attr, 1, UCS_LOG_LEVEL_ERROR,
                                       &qp),
                     UCS_ERR_NO_MEMORY);
}

static void conn_attr(qpx_qp_connect_attr_t *conn)
{
    memset(conn, 0, sizeof(*conn));
    conn->path_mtu      = IBV_MTU_2048;
    conn->sq_psn        = 5;
    conn->timeout       = 14;
    conn->retry_cnt     = 7;
    conn->rnr_retry     = 7;
    conn->max_rd_atomic = 4;
    conn->min_rnr_timer = 12;
}

/* DCI: RESET->INIT (state, P_Key, port: no access flags), INIT->RTR (state,
 * MTU, AV with the port), RTR->RTS (state, PSN, timeout, retries, reads):
 * exactly the masks of the kernel's modify_dci_qp_is_ok */
static void test_dci_connect(void **state)
{
    qpx_qp_connect_attr_t conn;

    conn_attr(&conn);
    fake_qp.state = IBV_QPS_RESET;
    assert_int_equal(qpx_qp_dci_connect(&fake_qp, 2, &conn), UCS_OK);
    assert_int_equal(modify_calls, 3);
    assert_int_equal(attrs[0].qp_state, IBV_QPS_INIT);
    assert_int_equal(masks[0], IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
    assert_int_equal(attrs[0].port_num, 2);
    assert_int_equal(attrs[1].qp_state, IBV_QPS_RTR);
    assert_int_equal(masks[1], IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV);
    assert_int_equal(attrs[1].path_mtu, IBV_MTU_2048);
    assert_int_equal(attrs[1].ah_attr.port_num, 2);
    assert_int_equal(attrs[2].qp_state, IBV_QPS_RTS);
    assert_int_equal(masks[2], IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                               IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                               IBV_QP_MAX_QP_RD_ATOMIC);
    assert_int_equal(attrs[2].sq_psn, 5);
    assert_int_equal(attrs[2].timeout, 14);
    assert_int_equal(attrs[2].max_rd_atomic, 4);
    assert_int_equal(fake_qp.state, IBV_QPS_RTS);

    /* recovery from ERR: RESET, then the same three steps again */
    assert_int_equal(qpx_qp_to_err(&fake_qp), UCS_OK);
    assert_int_equal(qpx_qp_to_reset(&fake_qp), UCS_OK);
    assert_int_equal(masks[4], IBV_QP_STATE);
    assert_int_equal(qpx_qp_dci_connect(&fake_qp, 2, &conn), UCS_OK);
    assert_int_equal(fake_qp.state, IBV_QPS_RTS);
    assert_int_equal(modify_calls, 8);
}

/* A transition the device refuses stops the sequence with an error */
static void test_dci_connect_fails(void **state)
{
    qpx_qp_connect_attr_t conn;

    conn_attr(&conn);
    fake_qp.state     = IBV_QPS_RESET;
    modify_fail_state = IBV_QPS_RTR;
    assert_int_equal(qpx_qp_dci_connect(&fake_qp, 1, &conn),
                     UCS_ERR_IO_ERROR);
    assert_int_equal(modify_calls, 2);
    assert_int_equal(fake_qp.state, IBV_QPS_INIT);
}

/* DCT: RESET->INIT with exactly state, access, P_Key, port; INIT->RTR with
 * exactly state, RNR timer, AV, MTU (mlx5_ib_modify_dct); never RTS */
static void test_dct_listen(void **state)
{
    qpx_qp_connect_attr_t conn;

    conn_attr(&conn);
    fake_qp.state = IBV_QPS_RESET;
    assert_int_equal(qpx_qp_dct_listen(&fake_qp, 1, IBV_ACCESS_REMOTE_WRITE |
                                                   IBV_ACCESS_REMOTE_READ,
                                       &conn), UCS_OK);
    assert_int_equal(modify_calls, 2);
    assert_int_equal(masks[0], IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                               IBV_QP_PKEY_INDEX | IBV_QP_PORT);
    assert_int_equal(attrs[0].qp_access_flags,
                     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    assert_int_equal(masks[1], IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                               IBV_QP_AV | IBV_QP_PATH_MTU);
    assert_int_equal(attrs[1].min_rnr_timer, 12);
    assert_int_equal(attrs[1].ah_attr.port_num, 1);
    assert_int_equal(fake_qp.state, IBV_QPS_RTR);

    modify_calls      = 0;
    fake_qp.state     = IBV_QPS_RESET;
    modify_fail_state = IBV_QPS_INIT;
    assert_int_equal(qpx_qp_dct_listen(&fake_qp, 1, 0, &conn),
                     UCS_ERR_IO_ERROR);
    assert_int_equal(modify_calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dci_create, setup),
        cmocka_unit_test_setup(test_dci_create_clamped, setup),
        cmocka_unit_test_setup(test_dci_create_enomem, setup),
        cmocka_unit_test_setup(test_dct_create, setup),
        cmocka_unit_test_setup(test_dci_connect, setup),
        cmocka_unit_test_setup(test_dci_connect_fails, setup),
        cmocka_unit_test_setup(test_dct_listen, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
