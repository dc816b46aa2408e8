/*
 * Unit tests of qpx_dc's DCI policies (dc/qpx_dc_dci.c, dc/qpx_dc.inl):
 * which endpoint gets which DCI under dcs, dcs_quota, rand, sticky and
 * spread, when a DCI goes back, who waits and who is served first. The
 * interface is a zeroed qpx_dc_iface_t with NUM_DCI fake DCIs (no QP: a
 * "post" is a sequence number taken, a completion a work completion handed
 * to qpx_dc_iface_tx_process, as the send CQ would); endpoints are fakes
 * in its endpoint table, and a DCI's last target is left unset, so that
 * qpx_dc_iface_dci_solicit posts nothing. Each test breaks when the rule
 * it names is broken. A failed DCI (test_dci_failure_order) has fake QPs,
 * whose moves back to RTS go to the wrapped ibv_modify_qp (-Wl,--wrap).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/dc/qpx_dc.inl>

#include "test_op_rec.h"


#define NUM_DCI 2
#define NUM_EPS 6
#define SQ_LEN  16

typedef struct {
    qpx_dc_iface_t *iface;
    qpx_dc_ep_t    ep[NUM_EPS];
} test_ctx_t;

static test_ctx_t ctx;


static void test_setup_policy(qpx_dc_policy_t policy)
{
    qpx_dc_iface_t *iface = calloc(1, sizeof(*iface));
    unsigned i;

    assert_non_null(iface);
    ucs_arbiter_init(&iface->super.super.arbiter);
    ucs_list_head_init(&iface->super.eps);
    ucs_list_head_init(&iface->tx_wait);
    qpx_ep_table_init(&iface->ep_table);
    iface->super.super.tx.cq_size      = 64;
    iface->super.super.tx.cq_available = 64;
    iface->config.policy = policy;
    iface->config.quota  = 2;
    iface->num_dci       = NUM_DCI;
    for (i = 0; i < NUM_DCI; ++i) {
        iface->dcis[i].index        = i;
        qpx_dc_dci_gen_set(&iface->dcis[i], 0);
        iface->dcis[i].sq_available = SQ_LEN;
        iface->dcis[i].owner_id     = QPX_EP_ID_NULL;
        ucs_list_head_init(&iface->dcis[i].ops);
        /* a stack: the last pushed is taken first, dcis[0] first */
        iface->free_dcis[iface->num_free++] = NUM_DCI - 1 - i;
    }
    ctx.iface = iface;
    memset(ctx.ep, 0, sizeof(ctx.ep));
    for (i = 0; i < NUM_EPS; ++i) {
        ctx.ep[i].super.super.super.iface = &iface->super.super.super.super;
        ucs_arbiter_group_init(&ctx.ep[i].super.arb_group);
        ctx.ep[i].dci     = QPX_DC_DCI_NONE;
        ctx.ep[i].dct_num = 0x100 + i;  /* each its own target */
        assert_int_equal(qpx_ep_table_add(&iface->ep_table, &ctx.ep[i],
                                          &ctx.ep[i].id), UCS_OK);
        ucs_list_add_tail(&iface->super.eps, &ctx.ep[i].list);
    }
}

static int test_teardown(void **state)
{
    unsigned i;

    (void)state;
    for (i = 0; i < NUM_EPS; ++i) {
        ucs_arbiter_group_cleanup(&ctx.ep[i].super.arb_group);
    }
    qpx_ep_table_cleanup(&ctx.iface->ep_table);
    ucs_arbiter_cleanup(&ctx.iface->super.super.arbiter);
    free(ctx.iface);
    return 0;
}

/* ep posts one request on its DCI (taken under the policy first) */
static ucs_status_t test_post(unsigned e)
{
    qpx_dc_ep_t *ep   = &ctx.ep[e];
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;

    status = qpx_dc_ep_tx_begin(ctx.iface, ep, &dci);
    if (status != UCS_OK) {
        return status;
    }
    ++dci->sn;
    --dci->sq_available;
    ++dci->quota_used;
    --ctx.iface->super.super.tx.cq_available;
    dci->signaled_sn = dci->sn; /* asked: nothing to solicit */
    ep->last_sn      = dci->sn;
    return UCS_OK;
}

/* Everything posted on DCI d completes (one signalled completion) */
static void test_complete(unsigned d)
{
    qpx_dc_dci_t *dci = &ctx.iface->dcis[d];
    struct ibv_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.status = IBV_WC_SUCCESS;
    wc.wr_id  = qpx_dc_dci_wr_id(dci, dci->sn);
    qpx_dc_iface_tx_process(&ctx.iface->super.super, &wc, 1);
}


/* dcs: a free DCI to whoever sends; none free: NO_RESOURCE; given back to
 * the pool when all its work completed, and then taken by the next */
static void test_dcs_take_and_give_back(void **state)
{
    (void)state;
    test_setup_policy(QPX_DC_POLICY_DCS);
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(test_post(1), UCS_OK);
    assert_int_equal(ctx.ep[0].dci, 0);
    assert_int_equal(ctx.ep[1].dci, 1);
    assert_int_equal(ctx.iface->num_free, 0);
    assert_int_equal(test_post(2), UCS_ERR_NO_RESOURCE);
    assert_int_equal(ctx.ep[2].dci, QPX_DC_DCI_NONE);
    /* ep 0 posts again on the DCI it holds */
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(ctx.ep[0].dci, 0);
    /* its work completes: the DCI goes back, ep 0 holds none */
    test_complete(0);
    assert_int_equal(ctx.ep[0].dci, QPX_DC_DCI_NONE);
    assert_int_equal(ctx.iface->num_free, 1);
    assert_int_equal(test_post(2), UCS_OK);
    assert_int_equal(ctx.ep[2].dci, 0);
}

/* dcs: an endpoint refused a DCI waits, and one that did not is served
 * after it even when a DCI is free (the first come is served first: MPI
 * lock spinners starved an unlock before) */
static void test_dcs_waiters_first(void **state)
{
    qpx_dc_iface_t *iface;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_DCS);
    iface = ctx.iface;
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(test_post(1), UCS_OK);
    /* ep 2 refused: the pending path makes it a waiter */
    assert_int_equal(qpx_dc_ep_tx_state(&iface->super.super,
                                        &ctx.ep[2].super), QPX_EP_TX_WAIT);
    assert_int_equal(iface->num_dci_waiters, 1);
    assert_true(ctx.ep[2].flags & QPX_DC_EP_FLAG_DCI_WAIT);
    test_complete(1);
    assert_int_equal(iface->num_free, 1);
    /* ep 3 did not wait: refused while ep 2 waits, though a DCI is free */
    assert_false(qpx_dc_iface_dci_can_get(iface, &ctx.ep[3]));
    assert_int_equal(test_post(3), UCS_ERR_NO_RESOURCE);
    assert_true(qpx_dc_iface_dci_can_get(iface, &ctx.ep[2]));
    assert_int_equal(test_post(2), UCS_OK);
    assert_int_equal(ctx.ep[2].dci, 1);
    assert_int_equal(iface->num_dci_waiters, 0);
    assert_false(ctx.ep[2].flags & QPX_DC_EP_FLAG_DCI_WAIT);
}

/* dcs: an endpoint destroyed while its DCI is busy leaves it orphaned,
 * given back when its last request completes, not before */
static void test_dcs_detach_busy(void **state)
{
    (void)state;
    test_setup_policy(QPX_DC_POLICY_DCS);
    assert_int_equal(test_post(0), UCS_OK);
    qpx_dc_iface_dci_detach(ctx.iface, &ctx.ep[0]);
    assert_int_equal(ctx.ep[0].dci, QPX_DC_DCI_NONE);
    assert_int_equal(ctx.iface->num_free, 1);      /* dcis[1] only */
    test_complete(0);
    assert_int_equal(ctx.iface->num_free, NUM_DCI); /* back */
    assert_int_equal(ctx.iface->dcis[0].owner_id, QPX_EP_ID_NULL);
}

/* dcs_quota: an endpoint that posted QUOTA requests on its DCI stops while
 * others wait for a DCI, and goes on when nobody waits */
static void test_dcs_quota(void **state)
{
    qpx_dc_iface_t *iface;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_DCS_QUOTA);
    iface = ctx.iface;
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(test_post(0), UCS_OK);   /* quota (2) used */
    assert_int_equal(test_post(0), UCS_OK);   /* nobody waits: goes on */
    assert_int_equal(test_post(1), UCS_OK);   /* the other DCI */
    assert_int_equal(qpx_dc_ep_tx_state(&iface->super.super,
                                        &ctx.ep[2].super), QPX_EP_TX_WAIT);
    assert_false(ucs_list_is_empty(&iface->tx_wait));
    /* ep 2 waits: ep 0 is over its quota, ep 1 is not */
    assert_int_equal(test_post(0), UCS_ERR_NO_RESOURCE);
    assert_int_equal(test_post(1), UCS_OK);
    assert_int_equal(test_post(1), UCS_ERR_NO_RESOURCE);
    /* ep 0's DCI completes: back to the pool, ep 2 takes it, its quota
     * starts at 0 */
    test_complete(0);
    assert_int_equal(test_post(2), UCS_OK);
    assert_int_equal(ctx.ep[2].dci, 0);
    assert_int_equal(iface->dcis[0].quota_used, 1);
}

/* rand: every endpoint gets a DCI at once, one of the pool, shared and
 * never given back; the count of endpoints on each follows detach */
static void test_rand(void **state)
{
    unsigned i, total = 0;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_RAND);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_int_equal(test_post(i), UCS_OK);
        assert_true(ctx.ep[i].dci < NUM_DCI);
    }
    for (i = 0; i < NUM_DCI; ++i) {
        total += ctx.iface->dcis[i].num_targets;
        test_complete(i);
    }
    assert_int_equal(total, NUM_EPS);
    for (i = 0; i < NUM_EPS; ++i) {
        assert_true(ctx.ep[i].dci < NUM_DCI); /* kept when idle */
    }
    assert_int_equal(ctx.iface->num_free, NUM_DCI); /* the stack untouched */
    qpx_dc_iface_dci_detach(ctx.iface, &ctx.ep[0]);
    assert_int_equal(ctx.iface->dcis[0].num_targets +
                     ctx.iface->dcis[1].num_targets, NUM_EPS - 1);
}

/* sticky: a DCI stays with its endpoint when idle; an endpoint that finds
 * none free takes the idle one used least recently, never a busy one */
static void test_sticky(void **state)
{
    qpx_dc_iface_t *iface;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_STICKY);
    iface = ctx.iface;
    assert_int_equal(test_post(0), UCS_OK);
    iface->dcis[0].last_used = 10;
    assert_int_equal(test_post(1), UCS_OK);
    iface->dcis[1].last_used = 20;
    /* both busy: nothing to take */
    assert_int_equal(test_post(2), UCS_ERR_NO_RESOURCE);
    test_complete(0);
    test_complete(1);
    assert_int_equal(ctx.ep[0].dci, 0);  /* kept, idle */
    assert_int_equal(ctx.ep[1].dci, 1);
    assert_int_equal(iface->num_free, 0);
    /* ep 2 takes the least recently used idle one: ep 0's */
    assert_int_equal(test_post(2), UCS_OK);
    assert_int_equal(ctx.ep[2].dci, 0);
    assert_int_equal(ctx.ep[0].dci, QPX_DC_DCI_NONE);
    /* ep 1's is busy now: ep 0 cannot take it */
    assert_int_equal(test_post(1), UCS_OK);
    assert_int_equal(test_post(0), UCS_ERR_NO_RESOURCE);
    /* a failed DCI is never taken */
    test_complete(1);
    iface->dcis[1].flags = QPX_DC_DCI_FLAG_ERROR;
    assert_int_equal(test_post(0), UCS_ERR_NO_RESOURCE);
    /* an idle DCI of an endpoint destroyed goes to the pool at once */
    iface->dcis[1].flags = 0;
    test_complete(0);
    assert_int_equal(ctx.ep[2].dci, 0);
    qpx_dc_iface_dci_detach(iface, &ctx.ep[2]);
    assert_int_equal(iface->num_free, 1);
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(ctx.ep[0].dci, 0);
}

/* spread: endpoints to the same target share its DCI; another target goes
 * to the DCI with the fewest endpoints; nothing is given back */
static void test_spread(void **state)
{
    qpx_dc_iface_t *iface;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_SPREAD);
    iface = ctx.iface;
    ctx.ep[1].dct_num = ctx.ep[0].dct_num;  /* ep 0 and 1: one target */
    assert_int_equal(test_post(0), UCS_OK);
    assert_int_equal(test_post(1), UCS_OK);
    assert_int_equal(ctx.ep[1].dci, ctx.ep[0].dci);
    assert_int_equal(iface->dcis[ctx.ep[0].dci].num_targets, 2);
    assert_int_equal(test_post(2), UCS_OK);
    assert_int_not_equal(ctx.ep[2].dci, ctx.ep[0].dci);
    assert_int_equal(test_post(3), UCS_OK);
    assert_int_equal(ctx.ep[3].dci, ctx.ep[2].dci); /* 1 against 2 */
    assert_int_equal(test_post(4), UCS_OK);          /* 2 against 2 */
    test_complete(0);
    test_complete(1);
    assert_int_equal(ctx.ep[0].dci, ctx.ep[1].dci);  /* kept */
    assert_int_equal(iface->num_free, NUM_DCI);
    qpx_dc_iface_dci_detach(iface, &ctx.ep[2]);
    assert_int_equal(iface->dcis[0].num_targets +
                     iface->dcis[1].num_targets, 4);
}

/* ibv_modify_qp of a failed DCI's recovery (RESET, INIT, RTR, RTS) */
static int modify_calls;

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                         int mask);

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                         int mask)
{
    (void)mask;
    ++modify_calls;
    qp->state = attr->qp_state; /* as libibverbs keeps it */
    return 0;
}

#define NUM_FAIL_OPS 3

static struct {
    int          reported;        /* error handler calls */
    int          done_at_report;  /* operations finished by the first */
    uint32_t     ep_failed;       /* the endpoint reported */
} fail_rec;

static ucs_status_t test_fail_handler(void *arg, uct_ep_h tl_ep,
                                      ucs_status_t status)
{
    qpx_dc_ep_t *ep = ucs_derived_of(tl_ep, qpx_dc_ep_t);

    (void)arg;
    assert_int_equal(status, UCS_ERR_ENDPOINT_TIMEOUT);
    assert_true(ep->flags & QPX_DC_EP_FLAG_ERROR);
    if (fail_rec.reported++ == 0) {
        fail_rec.done_at_report = test_op_rec.done;
    }
    fail_rec.ep_failed = ep->id;
    return UCS_OK;
}

/* A DCI's error completion: the endpoint with work on it is reported
 * failed before the DCI's operations finish (with the failure's status, in
 * posting order), and the DCI, moved back to RTS in a new generation, serves
 * the other endpoints */
static void test_dci_failure_order(void **state)
{
    static struct ibv_qp qps[NUM_DCI];
    test_rec_op_t ops[NUM_FAIL_OPS];
    qpx_device_port_t port;
    qpx_dc_iface_t *iface;
    qpx_dc_dci_t *dci;
    struct ibv_wc wc;
    uint16_t gen;
    int i;

    (void)state;
    test_setup_policy(QPX_DC_POLICY_DCS);
    iface = ctx.iface;
    memset(&port, 0, sizeof(port));
    memset(&fail_rec, 0, sizeof(fail_rec));
    memset(&test_op_rec, 0, sizeof(test_op_rec));
    modify_calls = 0;
    iface->super.super.port                            = &port;
    iface->super.super.super.err_handler               = test_fail_handler;
    iface->super.super.super.config.failure_level      = UCS_LOG_LEVEL_DEBUG;
    iface->super.super.config.tx_queue_len             = SQ_LEN;
    for (i = 0; i < NUM_DCI; ++i) {
        qps[i].qp_num        = 0x200 + i;
        iface->dcis[i].qp    = &qps[i];
    }

    /* ep 1 posts NUM_FAIL_OPS requests on DCI 0, each with an operation */
    for (i = 0; i < NUM_FAIL_OPS; ++i) {
        assert_int_equal(test_post(1), UCS_OK);
        dci          = &iface->dcis[ctx.ep[1].dci];
        ops[i].index = i;
        qpx_dc_dci_add_op(dci, &ctx.ep[1], &ops[i].op, test_rec_op_cb, NULL);
    }
    iface->super.tx_unacked = NUM_FAIL_OPS; /* what the posts count */
    gen = dci->gen;

    /* its first request fails (the rest are flushed after it) */
    memset(&wc, 0, sizeof(wc));
    wc.status = IBV_WC_RETRY_EXC_ERR;
    wc.wr_id  = qpx_dc_dci_wr_id(dci, dci->acked_sn + 1);
    qpx_dc_iface_tx_process(&iface->super.super, &wc, 1);

    assert_int_equal(fail_rec.reported, 1);
    assert_int_equal(fail_rec.ep_failed, ctx.ep[1].id);
    assert_int_equal(fail_rec.done_at_report, 0);
    test_rec_op_check(NUM_FAIL_OPS, UCS_ERR_ENDPOINT_TIMEOUT);
    /* recovered: RESET, INIT, RTR, RTS; a new life; nothing of the old
     * one left */
    assert_int_equal(modify_calls, 4);
    assert_int_equal(dci->gen, (uint16_t)(gen + 1));
    assert_false(dci->flags & QPX_DC_DCI_FLAG_ERROR);
    assert_true(ucs_list_is_empty(&dci->ops));
    assert_int_equal(iface->super.tx_unacked, 0);
    /* the flushed completions of the old life are dropped */
    wc.status = IBV_WC_WR_FLUSH_ERR;
    qpx_dc_iface_tx_process(&iface->super.super, &wc, 1);
    assert_int_equal(fail_rec.reported, 1);
    /* another endpoint is served */
    assert_int_equal(test_post(2), UCS_OK);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_dcs_take_and_give_back, test_teardown),
        cmocka_unit_test_teardown(test_dcs_waiters_first, test_teardown),
        cmocka_unit_test_teardown(test_dcs_detach_busy, test_teardown),
        cmocka_unit_test_teardown(test_dcs_quota, test_teardown),
        cmocka_unit_test_teardown(test_rand, test_teardown),
        cmocka_unit_test_teardown(test_sticky, test_teardown),
        cmocka_unit_test_teardown(test_spread, test_teardown),
        cmocka_unit_test_teardown(test_dci_failure_order, test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
