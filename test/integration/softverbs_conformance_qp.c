/*
 * softverbs conformance: the QP state machine (legal and illegal
 * transitions, required and unsupported attribute masks, ibv_query_qp) and
 * the manual-page rules on capabilities. All cases run in one process; a
 * QP that needs a remote is pointed at a second QP of the same process.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const svt_state_name[] = {
    "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"
};

#define SVT_STATE_STR(_s) svt_state_name[(_s) <= IBV_QPS_UNKNOWN ? (_s) : 7]

/* Create a QP of `type` in RESET with its own CQ, plus a peer address */
static struct ibv_qp *svt_qp_new(svt_dev_t *dev, enum ibv_qp_type type,
                                 struct ibv_srq *srq)
{
    struct ibv_qp_init_attr init;
    struct ibv_cq *cq;
    struct ibv_qp *qp;

    SVT_NN(cq, ibv_create_cq(dev->ctx, 16, NULL, NULL, 0));
    memset(&init, 0, sizeof(init));
    init.send_cq = init.recv_cq = cq;
    init.qp_type          = type;
    init.srq              = srq;
    init.cap.max_send_wr  = 8;
    init.cap.max_recv_wr  = 8;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    SVT_NN(qp, ibv_create_qp(dev->pd, &init));
    return qp;
}

static void svt_qp_free(struct ibv_qp *qp)
{
    struct ibv_cq *cq = qp->send_cq;

    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_cq(cq));
}

/* Attributes and the required mask to move a QP of its type from its
 * current state to `to` */
static int svt_qp_attr_full(const svt_dev_t *dev, struct ibv_qp *qp,
                            enum ibv_qp_state to, struct ibv_qp_attr *attr)
{
    enum ibv_qp_type t = qp->qp_type;
    svt_addr_t self;
    int mask = IBV_QP_STATE;

    memset(attr, 0, sizeof(*attr));
    memset(&self, 0, sizeof(self));
    self.qpn = qp->qp_num;
    self.lid = dev->port.lid;
    memcpy(self.gid, dev->gid.raw, 16);
    attr->qp_state = to;
    switch (to) {
    case IBV_QPS_INIT:
        attr->port_num   = dev->port_num;
        attr->pkey_index = 0;
        mask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
        if (t == IBV_QPT_UD) {
            attr->qkey = SVT_QKEY;
            mask      |= IBV_QP_QKEY;
        } else {
            attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        break;
    case IBV_QPS_RTR:
        if (t == IBV_QPT_UD) {
            break;
        }
        attr->path_mtu    = IBV_MTU_1024;
        attr->dest_qp_num = qp->qp_num;
        attr->rq_psn      = 0x123;
        svt_ah_attr_init(dev, &self, &attr->ah_attr);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (t == IBV_QPT_RC) {
            attr->max_dest_rd_atomic = 1;
            attr->min_rnr_timer      = 12;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
        break;
    case IBV_QPS_RTS:
        if (svt_qp_state(qp) != IBV_QPS_RTR) {
            /* SQD/SQE -> RTS: only optional attributes, none required */
            break;
        }
        attr->sq_psn = 0x456;
        mask        |= IBV_QP_SQ_PSN;
        if (t == IBV_QPT_RC) {
            attr->timeout       = 14;
            attr->retry_cnt     = 6;
            attr->rnr_retry     = 5;
            attr->max_rd_atomic = 1;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC;
        }
        break;
    default:
        break;
    }
    return mask;
}

/* Move qp to `to` with the full required mask; must succeed */
static void svt_qp_move(const svt_dev_t *dev, struct ibv_qp *qp,
                        enum ibv_qp_state to)
{
    struct ibv_qp_attr attr;
    int mask = svt_qp_attr_full(dev, qp, to, &attr), ret;

    ret = ibv_modify_qp(qp, &attr, mask);
    SVT_CHECK(ret == 0, "%s -> %s failed: %d", SVT_STATE_STR(svt_qp_state(qp)),
              SVT_STATE_STR(to), ret);
    SVT_CHECK(svt_qp_state(qp) == to, "query after -> %s shows %s",
              SVT_STATE_STR(to), SVT_STATE_STR(svt_qp_state(qp)));
}

/* Bring a fresh QP to `state` along the legal path */
static void svt_qp_goto(const svt_dev_t *dev, struct ibv_qp *qp,
                        enum ibv_qp_state state)
{
    static const enum ibv_qp_state path[] = {IBV_QPS_INIT, IBV_QPS_RTR,
                                             IBV_QPS_RTS};
    int i;

    for (i = 0; i < 3 && (state != IBV_QPS_RESET); ++i) {
        svt_qp_move(dev, qp, path[i]);
        if (path[i] == state) {
            return;
        }
    }
    if (state == IBV_QPS_ERR) {
        svt_qp_move(dev, qp, IBV_QPS_ERR);
    }
}

/* modify must fail with EINVAL (the return value, per ibv_modify_qp(3))
 * and leave the state alone */
static void svt_modify_einval(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                              int mask, const char *what)
{
    enum ibv_qp_state before = svt_qp_state(qp);
    int ret = ibv_modify_qp(qp, attr, mask);

    SVT_CHECK(ret == EINVAL, "%s: ibv_modify_qp returned %d, expected EINVAL",
              what, ret);
    SVT_CHECK(svt_qp_state(qp) == before, "%s: state changed to %s", what,
              SVT_STATE_STR(svt_qp_state(qp)));
}

static void svt_case_legal_path(svt_proc_t *p)
{
    enum ibv_qp_type type = (enum ibv_qp_type)p->arg;
    struct ibv_qp_attr attr, q;
    struct ibv_qp_init_attr qi;
    svt_dev_t dev;
    struct ibv_qp *qp;
    int round;

    svt_dev_open(&dev);
    qp = svt_qp_new(&dev, type, NULL);
    SVT_CHECK(svt_qp_state(qp) == IBV_QPS_RESET, "new QP not in RESET");
    for (round = 0; round < 2; ++round) { /* second round: reuse after RESET */
        svt_qp_move(&dev, qp, IBV_QPS_INIT);
        svt_qp_move(&dev, qp, IBV_QPS_INIT); /* INIT -> INIT is legal */
        SVT_OK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PORT |
                            IBV_QP_PKEY_INDEX | IBV_QP_QKEY |
                            IBV_QP_ACCESS_FLAGS, &qi));
        SVT_CHECK(q.port_num == dev.port_num, "port_num %u", q.port_num);
        SVT_CHECK(q.pkey_index == 0, "pkey_index %u", q.pkey_index);
        if (type == IBV_QPT_UD) {
            SVT_CHECK(q.qkey == SVT_QKEY, "qkey 0x%x", q.qkey);
        } else {
            SVT_CHECK(q.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE |
                                            IBV_ACCESS_REMOTE_READ),
                      "qp_access_flags 0x%x", q.qp_access_flags);
        }
        svt_qp_move(&dev, qp, IBV_QPS_RTR);
        svt_qp_move(&dev, qp, IBV_QPS_RTS);
        SVT_OK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PATH_MTU |
                            IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN |
                            IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER |
                            IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_CAP, &qi));
        SVT_CHECK(q.sq_psn == 0x456, "sq_psn 0x%x", q.sq_psn);
        SVT_CHECK(qi.qp_type == type, "init_attr qp_type %d", qi.qp_type);
        if (type != IBV_QPT_UD) {
            SVT_CHECK(q.path_mtu == IBV_MTU_1024, "path_mtu %d", q.path_mtu);
            SVT_CHECK(q.dest_qp_num == qp->qp_num, "dest_qp_num 0x%x",
                      q.dest_qp_num);
            SVT_CHECK(q.rq_psn == 0x123, "rq_psn 0x%x", q.rq_psn);
        }
        if (type == IBV_QPT_RC) {
            SVT_CHECK(q.timeout == 14 && q.retry_cnt == 6 && q.rnr_retry == 5 &&
                      q.min_rnr_timer == 12 && q.max_rd_atomic == 1,
                      "timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u "
                      "max_rd_atomic %u", q.timeout, q.retry_cnt, q.rnr_retry,
                      q.min_rnr_timer, q.max_rd_atomic);
            /* RTS -> RTS with an optional attribute */
            memset(&attr, 0, sizeof(attr));
            attr.qp_state      = IBV_QPS_RTS;
            attr.min_rnr_timer = 3;
            SVT_OK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER));
            SVT_OK(ibv_query_qp(qp, &q, IBV_QP_MIN_RNR_TIMER, &qi));
            SVT_CHECK(q.min_rnr_timer == 3, "min_rnr_timer %u after RTS->RTS",
                      q.min_rnr_timer);
        }
        svt_qp_move(&dev, qp, IBV_QPS_SQD);
        svt_qp_move(&dev, qp, IBV_QPS_RTS);
        svt_qp_move(&dev, qp, IBV_QPS_ERR);
        svt_qp_move(&dev, qp, IBV_QPS_RESET);
    }
    svt_qp_free(qp);
}

/* From each of RESET/INIT/RTR/RTS/SQD to ERR and to RESET */
static void svt_case_any_to_err_reset(svt_proc_t *p)
{
    static const enum ibv_qp_state from[] = {IBV_QPS_RESET, IBV_QPS_INIT,
                                             IBV_QPS_RTR, IBV_QPS_RTS};
    svt_dev_t dev;
    struct ibv_qp *qp;
    size_t i;
    int to_reset;

    svt_dev_open(&dev);
    for (to_reset = 0; to_reset < 2; ++to_reset) {
        for (i = 0; i < sizeof(from) / sizeof(from[0]); ++i) {
            qp = svt_qp_new(&dev, IBV_QPT_RC, NULL);
            svt_qp_goto(&dev, qp, from[i]);
            svt_qp_move(&dev, qp, to_reset ? IBV_QPS_RESET : IBV_QPS_ERR);
            svt_qp_free(qp);
        }
    }
    qp = svt_qp_new(&dev, IBV_QPT_RC, NULL);
    svt_qp_goto(&dev, qp, IBV_QPS_RTS);
    svt_qp_move(&dev, qp, IBV_QPS_SQD);
    svt_qp_move(&dev, qp, IBV_QPS_ERR);
    svt_qp_free(qp);
}

/*
 * A QP reused through RESET: nothing of its earlier life is polled from
 * its CQs, as rdma-core's mlx5 cleans a reset QP's CQEs (mlx5_modify_qp ->
 * mlx5_cq_clean -> __mlx5_cq_clean): no old send completion, no send queue
 * that looks full (a stale CQE once moved its retired index past the new
 * tail: every post failed with ENOMEM), no completion of a receive it
 * consumed. With an SRQ (arg 1) such a receive's WQE goes back to the SRQ
 * (mlx5_free_srq_wqe) and takes a later message.
 */
static void svt_case_reset_cqes(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_srq *srq = NULL;
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    svt_dev_t dev;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_addr_t aa, ba;
    uint64_t wr_id;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->arg) {
        SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
        o.srq = srq;
    }
    svt_ep_local_pair(&dev, &o, &a, &b);
    svt_ep_addr(&a, &aa);
    svt_ep_addr(&b, &ba);
    /* the earlier life: 8 writes and 2 sends completed, nothing polled */
    for (i = 0; i < 2; ++i) {
        if (srq == NULL) {
            svt_post_recv(&b, 256 + 64 * i, 64, 200 + i);
            continue;
        }
        sge = (struct ibv_sge){(uintptr_t)b.buf + 256 + 64 * i, 64,
                               b.mr->lkey};
        memset(&rwr, 0, sizeof(rwr));
        rwr.wr_id   = 200 + i;
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        SVT_OK(ibv_post_srq_recv(srq, &rwr, &rbad));
    }
    for (i = 1; i <= 8; ++i) {
        SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 8, svt_raddr(&a, 0),
                             a.remote.rkey, 0, IBV_SEND_SIGNALED, i));
    }
    for (i = 0; i < 2; ++i) {
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 8, 0, 0, 0,
                             IBV_SEND_SIGNALED, 10 + i));
    }
    svt_qp_move(&dev, a.qp, IBV_QPS_RESET);
    svt_qp_move(&dev, b.qp, IBV_QPS_RESET);
    svt_ep_connect(&a, &ba);
    svt_ep_connect(&b, &aa);

    svt_expect_no_wc(b.cq, 50);
    /* the new life's writes post and are the only completions */
    for (wr_id = 100; wr_id < 103; ++wr_id) {
        SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 8, svt_raddr(&a, 0),
                             a.remote.rkey, 0, IBV_SEND_SIGNALED, wr_id));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, wr_id, NULL);
    }
    svt_expect_no_wc(a.cq, 50);
    if (srq != NULL) {
        /* the two WQEs are the SRQ's again: two sends land in them */
        svt_fill(a.buf, 16, 21);
        for (i = 0; i < 2; ++i) {
            SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 16, 0, 0, 0,
                                 IBV_SEND_SIGNALED, 110 + i));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 110 + i, NULL);
            svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 200 + i, &wc);
            SVT_CHECK(wc.byte_len == 16, "received %u bytes", wc.byte_len);
            svt_pattern_check(b.buf + 256 + 64 * i, 16, 21, "send into an "
                              "SRQ WQE given back by the reset");
        }
    }
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    if (srq != NULL) {
        SVT_OK(ibv_destroy_srq(srq));
    }
    svt_dev_close(&dev);
}

/*
 * A destroyed QP leaves nothing in its CQs: rdma-core's mlx5 removes its
 * CQEs from both (mlx5_destroy_qp -> __mlx5_cq_clean), so a CQ that
 * outlives the QP (libfabric's verbs provider shares one per domain) never
 * returns a completion whose wr_id names the freed QP's buffers. Sends,
 * writes and a receive completed, nothing polled, both QPs destroyed: the
 * CQs poll empty.
 */
static void svt_case_destroy_cqes(svt_proc_t *p)
{
    svt_ep_t ep[2];
    svt_ep_opts_t o;
    svt_dev_t dev;
    int i;

    (void)p;
    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &ep[0], &ep[1]);
    svt_post_recv(&ep[1], 256, 64, 200);
    for (i = 1; i <= 3; ++i) {
        SVT_OK(svt_post_send(&ep[0], IBV_WR_RDMA_WRITE, 0, 8,
                             svt_raddr(&ep[0], 0), ep[0].remote.rkey, 0,
                             IBV_SEND_SIGNALED, i));
    }
    SVT_OK(svt_post_send(&ep[0], IBV_WR_SEND, 0, 8, 0, 0, 0,
                         IBV_SEND_SIGNALED, 10));
    /* the receive landed (its CQE waits) before the QPs go */
    svt_sleep_ms(20);
    for (i = 0; i < 2; ++i) {
        SVT_OK(ibv_destroy_qp(ep[i].qp));
    }
    for (i = 0; i < 2; ++i) {
        svt_expect_no_wc(ep[i].cq, 50);
        SVT_OK(ibv_dereg_mr(ep[i].mr));
        if (ep[i].own_cq) {
            SVT_OK(ibv_destroy_cq(ep[i].cq));
        }
        free(ep[i].buf);
    }
    svt_dev_close(&dev);
}

/*
 * IBV_ACCESS_ON_DEMAND in qp_access_flags is taken and ignored, as the
 * kernel's modify_qp passes the flags on unchecked and mlx5_ib uses only
 * their remote read/write/atomic bits (to_mlx5_access_flags): at
 * RESET->INIT and RTS->RTS, and the QP still carries RDMA writes
 */
static void svt_case_access_odp(svt_proc_t *p)
{
    struct ibv_qp_attr attr;
    svt_ep_opts_t o;
    svt_dev_t dev;
    svt_ep_t a, b;
    int ret;

    (void)p;
    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.qp_access |= IBV_ACCESS_ON_DEMAND;
    svt_ep_local_pair(&dev, &o, &a, &b);
    memset(&attr, 0, sizeof(attr));
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_ON_DEMAND;
    ret = ibv_modify_qp(b.qp, &attr, IBV_QP_ACCESS_FLAGS);
    SVT_CHECK(ret == 0, "RTS->RTS with IBV_ACCESS_ON_DEMAND in "
              "qp_access_flags: %d, expected 0", ret);
    svt_fill(a.buf, 64, 5);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 64, svt_raddr(&a, 128),
                         a.remote.rkey, 0, IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    svt_pattern_check(b.buf + 128, 64, 5, "write to a QP with ON_DEMAND");
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    svt_dev_close(&dev);
}

static void svt_case_illegal(svt_proc_t *p)
{
    static const struct {
        enum ibv_qp_state from, to;
    } bad[] = {
        {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS},
        {IBV_QPS_RESET, IBV_QPS_SQD}, {IBV_QPS_RESET, IBV_QPS_SQE},
        {IBV_QPS_INIT, IBV_QPS_RTS},  {IBV_QPS_INIT, IBV_QPS_SQD},
        {IBV_QPS_RTR, IBV_QPS_INIT},  {IBV_QPS_RTR, IBV_QPS_SQD},
        {IBV_QPS_RTS, IBV_QPS_INIT},  {IBV_QPS_RTS, IBV_QPS_RTR},
        {IBV_QPS_RTS, IBV_QPS_SQE},   {IBV_QPS_ERR, IBV_QPS_INIT},
        {IBV_QPS_ERR, IBV_QPS_RTR},   {IBV_QPS_ERR, IBV_QPS_RTS},
    };
    struct ibv_qp_attr attr;
    char what[64];
    svt_dev_t dev;
    struct ibv_qp *qp;
    size_t i;
    int mask;

    svt_dev_open(&dev);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        qp = svt_qp_new(&dev, IBV_QPT_RC, NULL);
        svt_qp_goto(&dev, qp, bad[i].from);
        /* all attributes the target state would need, so only the
         * transition itself is wrong */
        mask = svt_qp_attr_full(&dev, qp, bad[i].to, &attr);
        snprintf(what, sizeof(what), "%s -> %s", SVT_STATE_STR(bad[i].from),
                 SVT_STATE_STR(bad[i].to));
        svt_modify_einval(qp, &attr, mask, what);
        svt_qp_free(qp);
    }
}

/* Each required attribute left out, one at a time; then extra ones that the
 * transition does not accept */
static void svt_case_masks(svt_proc_t *p)
{
    enum ibv_qp_type type = (enum ibv_qp_type)p->arg;
    static const enum ibv_qp_state step[] = {IBV_QPS_INIT, IBV_QPS_RTR,
                                             IBV_QPS_RTS};
    static const int extra_rc[] = {
        IBV_QP_SQ_PSN | IBV_QP_QKEY,      /* RESET -> INIT */
        IBV_QP_RETRY_CNT | IBV_QP_SQ_PSN, /* INIT -> RTR (each alone below) */
        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU, /* RTR -> RTS */
    };
    struct ibv_qp_attr attr;
    char what[96];
    svt_dev_t dev;
    struct ibv_qp *qp;
    int s, bit, mask;

    svt_dev_open(&dev);
    qp = svt_qp_new(&dev, type, NULL);
    for (s = 0; s < 3; ++s) {
        mask = svt_qp_attr_full(&dev, qp, step[s], &attr);
        for (bit = 1; bit <= IBV_QP_DEST_QPN; bit <<= 1) {
            if ((bit == IBV_QP_STATE) || !(mask & bit)) {
                continue;
            }
            snprintf(what, sizeof(what), "-> %s without mask 0x%x",
                     SVT_STATE_STR(step[s]), bit);
            svt_modify_einval(qp, &attr, mask & ~bit, what);
        }
        if (type == IBV_QPT_RC) {
            for (bit = 1; bit <= IBV_QP_DEST_QPN; bit <<= 1) {
                if (!(extra_rc[s] & bit)) {
                    continue;
                }
                snprintf(what, sizeof(what), "-> %s with extra mask 0x%x",
                         SVT_STATE_STR(step[s]), bit);
                svt_modify_einval(qp, &attr, mask | bit, what);
            }
        }
        svt_qp_move(&dev, qp, step[s]);
    }
    svt_qp_free(qp);
}

/* Posting sends in RESET or INIT is an error; receives are allowed in INIT */
static void svt_case_post_early(svt_proc_t *p)
{
    struct ibv_sge sge;
    struct ibv_send_wr swr, *sbad;
    struct ibv_recv_wr rwr, *rbad;
    svt_dev_t dev;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    static char buf[64];
    int ret;

    svt_dev_open(&dev);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    qp  = svt_qp_new(&dev, IBV_QPT_RC, NULL);
    sge = (struct ibv_sge){(uintptr_t)buf, 8, mr->lkey};
    memset(&swr, 0, sizeof(swr));
    swr.sg_list = &sge;
    swr.num_sge = 1;
    swr.opcode  = IBV_WR_SEND;
    memset(&rwr, 0, sizeof(rwr));
    rwr.sg_list = &sge;
    rwr.num_sge = 1;

    ret = ibv_post_send(qp, &swr, &sbad);
    SVT_CHECK(ret != 0, "ibv_post_send in RESET succeeded");
    SVT_CHECK(sbad == &swr, "bad_wr not set to the failing WR in RESET");
    ret = ibv_post_recv(qp, &rwr, &rbad);
    SVT_CHECK(ret != 0, "ibv_post_recv in RESET succeeded");
    svt_qp_move(&dev, qp, IBV_QPS_INIT);
    ret = ibv_post_send(qp, &swr, &sbad);
    SVT_CHECK(ret != 0, "ibv_post_send in INIT succeeded");
    SVT_OK(ibv_post_recv(qp, &rwr, &rbad));
    svt_qp_free(qp);
    SVT_OK(ibv_dereg_mr(mr));
}

/*
 * Immediate errors of ibv_post_send/ibv_post_recv (the WR is refused, bad_wr
 * points at it, the QP state is unchanged): more SGEs than the QP has
 * (arg 0), inline data above max_inline_data (1), a full receive queue (2)
 * and a full send queue (3): ENOMEM. A list of receive WRs whose third is
 * refused (4): the two before it are posted, and take the next two SENDs
 * (ibv_post_recv(3): processing stops at the first failed WR). Two QPs of
 * this process connected to each other.
 */
enum { SVT_POST_SGE, SVT_POST_INLINE, SVT_POST_RQ_FULL, SVT_POST_SQ_FULL,
       SVT_POST_RECV_LIST };

static void svt_case_post_limits(svt_proc_t *p)
{
    struct ibv_sge sge[64];
    struct ibv_send_wr swr, *sbad = NULL;
    struct ibv_recv_wr rwr, *rbad = NULL;
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr q;
    svt_ep_opts_t o;
    svt_dev_t dev;
    svt_ep_t a, b;
    uint32_t i;
    int ret;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.max_send_wr = o.max_recv_wr = 8;
    o.max_send_sge = o.max_recv_sge = 2;
    o.max_inline = 32;
    o.cq_size    = 256;
    svt_ep_local_pair(&dev, &o, &a, &b);
    SVT_OK(ibv_query_qp(a.qp, &q, IBV_QP_CAP, &qi));
    SVT_CHECK(qi.cap.max_send_wr < 64 && qi.cap.max_recv_wr < 64 &&
              qi.cap.max_send_sge < 64 && qi.cap.max_recv_sge < 64 &&
              qi.cap.max_inline_data < 4096, "caps %u/%u/%u/%u/%u for "
              "8/8/2/2/32 requested", qi.cap.max_send_wr, qi.cap.max_recv_wr,
              qi.cap.max_send_sge, qi.cap.max_recv_sge,
              qi.cap.max_inline_data);
    for (i = 0; i < 64; ++i) {
        sge[i] = (struct ibv_sge){(uintptr_t)a.buf + 8 * i, 8, a.mr->lkey};
    }
    memset(&swr, 0, sizeof(swr));
    swr.sg_list             = sge;
    swr.num_sge             = 1;
    swr.opcode              = IBV_WR_RDMA_WRITE;
    swr.wr.rdma.remote_addr = svt_raddr(&a, 0);
    swr.wr.rdma.rkey        = a.remote.rkey;
    memset(&rwr, 0, sizeof(rwr));
    rwr.sg_list = sge;
    rwr.num_sge = 1;

    switch (p->arg) {
    case SVT_POST_SGE:
        swr.num_sge = qi.cap.max_send_sge + 1;
        ret = ibv_post_send(a.qp, &swr, &sbad);
        SVT_CHECK(ret != 0 && sbad == &swr, "post_send with %u SGEs (max %u):"
                  " ret %d", swr.num_sge, qi.cap.max_send_sge, ret);
        rwr.num_sge = qi.cap.max_recv_sge + 1;
        ret = ibv_post_recv(a.qp, &rwr, &rbad);
        SVT_CHECK(ret != 0 && rbad == &rwr, "post_recv with %u SGEs (max %u):"
                  " ret %d", rwr.num_sge, qi.cap.max_recv_sge, ret);
        break;
    case SVT_POST_INLINE:
        sge[0].length  = qi.cap.max_inline_data + 1;
        swr.send_flags = IBV_SEND_INLINE;
        ret = ibv_post_send(a.qp, &swr, &sbad);
        SVT_CHECK(ret != 0 && sbad == &swr, "inline post of %u bytes "
                  "(max_inline_data %u): ret %d", sge[0].length,
                  qi.cap.max_inline_data, ret);
        break;
    case SVT_POST_RECV_LIST: {
        struct ibv_recv_wr list[3];
        struct ibv_wc wc;

        for (i = 0; i < 3; ++i) {
            memset(&list[i], 0, sizeof(list[i]));
            list[i].wr_id   = 40 + i;
            list[i].sg_list = &sge[8 + i];
            list[i].num_sge = 1;
            list[i].next    = (i < 2) ? &list[i + 1] : NULL;
        }
        list[2].num_sge = qi.cap.max_recv_sge + 1;
        ret = ibv_post_recv(a.qp, list, &rbad);
        SVT_CHECK(ret != 0 && rbad == &list[2], "post_recv of a list whose "
                  "third WR has %u SGEs (max %u): ret %d, bad_wr %s",
                  list[2].num_sge, qi.cap.max_recv_sge, ret,
                  (rbad == &list[2]) ? "the third" : "another");
        for (i = 0; i < 2; ++i) {
            SVT_OK(svt_post_send(&b, IBV_WR_SEND, 0, 8, 0, 0, 0,
                                 IBV_SEND_SIGNALED, 60 + i));
            svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 60 + i, NULL);
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + i, &wc);
            SVT_CHECK(wc.byte_len == 8, "receive %u of the list: %u bytes",
                      i, wc.byte_len);
        }
        break;
    }
    case SVT_POST_RQ_FULL:
        for (i = 0; i < qi.cap.max_recv_wr; ++i) {
            svt_post_recv(&a, 0, 8, i);
        }
        ret = ibv_post_recv(a.qp, &rwr, &rbad);
        SVT_CHECK(ret == ENOMEM && rbad == &rwr, "post_recv on a full "
                  "receive queue (%u WRs): ret %d, expected ENOMEM",
                  qi.cap.max_recv_wr, ret);
        break;
    default:
        /* b has no receive posted: the first SEND is held in RNR retry
         * (rnr_retry 7 = infinite) and every later one waits behind it, so
         * no slot can be free on any implementation */
        for (i = 0; i < qi.cap.max_send_wr; ++i) {
            SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 8, 0, 0, 0,
                                 IBV_SEND_SIGNALED, i));
        }
        svt_sleep_ms(20);
        ret = svt_post_send(&a, IBV_WR_SEND, 0, 8, 0, 0, 0, IBV_SEND_SIGNALED,
                            99);
        SVT_CHECK(ret == ENOMEM, "post_send on a full send queue (%u WRs "
                  "outstanding): ret %d, expected ENOMEM", qi.cap.max_send_wr,
                  ret);
        for (i = 0; i < qi.cap.max_send_wr; ++i) {
            if (i % qi.cap.max_recv_wr == 0) {
                for (uint32_t k = 0; k < qi.cap.max_recv_wr; ++k) {
                    svt_post_recv(&b, 0, 8, k);
                }
            }
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
            if (i % qi.cap.max_recv_wr == qi.cap.max_recv_wr - 1) {
                for (uint32_t k = 0; k < qi.cap.max_recv_wr; ++k) {
                    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, k, NULL);
                }
            }
        }
        ret = svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 8, svt_raddr(&a, 0),
                            a.remote.rkey, 0, IBV_SEND_SIGNALED, 100);
        SVT_CHECK(ret == 0, "post_send after the queue drained: ret %d", ret);
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 100, NULL);
        break;
    }
    SVT_CHECK(svt_qp_state(a.qp) == IBV_QPS_RTS, "a refused post changed "
              "the QP state to %s", SVT_STATE_STR(svt_qp_state(a.qp)));
}

/* Caps written back by ibv_create_qp are >= the request, and ibv_query_qp
 * agrees */
static void svt_case_caps_writeback(svt_proc_t *p)
{
    struct ibv_qp_init_attr init, qi;
    struct ibv_qp_attr q;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    memset(&init, 0, sizeof(init));
    init.send_cq = init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap     = (struct ibv_qp_cap){10, 11, 2, 3, 17};
    SVT_NN(qp, ibv_create_qp(dev.pd, &init));
    SVT_CHECK(init.cap.max_send_wr >= 10 && init.cap.max_recv_wr >= 11 &&
              init.cap.max_send_sge >= 2 && init.cap.max_recv_sge >= 3 &&
              init.cap.max_inline_data >= 17, "caps written back %u/%u/%u/%u/%u "
              "< requested 10/11/2/3/17", init.cap.max_send_wr,
              init.cap.max_recv_wr, init.cap.max_send_sge,
              init.cap.max_recv_sge, init.cap.max_inline_data);
    SVT_OK(ibv_query_qp(qp, &q, IBV_QP_CAP, &qi));
    SVT_CHECK(q.cap.max_send_wr >= 10 && q.cap.max_recv_wr >= 11 &&
              q.cap.max_send_sge >= 2 && q.cap.max_recv_sge >= 3 &&
              q.cap.max_inline_data >= 17, "ibv_query_qp caps %u/%u/%u/%u/%u",
              q.cap.max_send_wr, q.cap.max_recv_wr, q.cap.max_send_sge,
              q.cap.max_recv_sge, q.cap.max_inline_data);
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_cq(cq));
}

/*
 * max_inline_data is the room the send WQE has, as libmlx5 sizes it from
 * the caps (rdma-core providers/mlx5/verbs.c: _sq_overhead,
 * mlx5_calc_send_wqe, mlx5_calc_sq_size writes the capacity back):
 * written back by create, reported by query, and what a post may carry
 * inline. A QP created with max_inline_data 0 takes a 16-byte inline send.
 */
static void svt_case_inline_capacity(svt_proc_t *p)
{
    static const struct {
        enum ibv_qp_type type;
        uint32_t sge, inl;
        uint64_t ops;            /* 0: no IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
        uint32_t expect;
    } t[] = {
        {IBV_QPT_RC, 1, 0, 0, 60},    /* 192 (MW/UMR) + 16 -> 256 */
        {IBV_QPT_RC, 1, 100, 0, 124}, /* 192 + 16 + 104 -> 320 */
        {IBV_QPT_RC, 4, 0, 0, 60},
        {IBV_QPT_UC, 1, 0, 0, 60},
        {IBV_QPT_UD, 1, 0, 0, 60},    /* 16 + 48 + 16 -> 128 */
        {IBV_QPT_UD, 2, 100, 0, 124},
        {IBV_QPT_RC, 1, 0, IBV_QP_EX_WITH_SEND, 44},
        {IBV_QPT_RC, 1, 0, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
         28},
    };
    struct ibv_qp_init_attr_ex ix;
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr qa;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    struct ibv_wc wc;
    size_t i;
    int ret;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < sizeof(t) / sizeof(t[0]); ++i) {
        memset(&ix, 0, sizeof(ix));
        ix.send_cq = ix.recv_cq = cq;
        ix.qp_type = t[i].type;
        ix.cap     = (struct ibv_qp_cap){4, 4, t[i].sge, 1, t[i].inl};
        ix.pd      = dev.pd;
        ix.comp_mask = IBV_QP_INIT_ATTR_PD;
        if (t[i].ops != 0) {
            ix.comp_mask     |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
            ix.send_ops_flags = t[i].ops;
        }
        SVT_NN(qp, ibv_create_qp_ex(dev.ctx, &ix));
        SVT_CHECK(ix.cap.max_inline_data == t[i].expect, "type %d, %u SGEs, "
                  "%u inline, ops 0x%llx: max_inline_data %u written back, "
                  "mlx5's is %u", t[i].type, t[i].sge, t[i].inl,
                  (unsigned long long)t[i].ops, ix.cap.max_inline_data,
                  t[i].expect);
        SVT_OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
        SVT_CHECK(qi.cap.max_inline_data == t[i].expect &&
                  qa.cap.max_inline_data == t[i].expect, "case %zu: "
                  "ibv_query_qp max_inline_data %u/%u, expected %u", i,
                  qi.cap.max_inline_data, qa.cap.max_inline_data,
                  t[i].expect);
        SVT_OK(ibv_destroy_qp(qp));
    }
    SVT_OK(ibv_destroy_cq(cq));

    /* a QP asked for no inline data takes inline sends up to 60 bytes */
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.max_send_sge = 1;
    o.max_inline   = 0;
    svt_ep_local_pair(&dev, &o, &a, &b);
    SVT_CHECK(a.o.max_inline == 60, "max_inline_data %u written back for "
              "0 asked, mlx5's is 60", a.o.max_inline);
    svt_fill(a.buf, 60, 7);
    svt_post_recv(&b, 1024, 256, 1);
    ret = svt_post_send(&a, IBV_WR_SEND, 0, 16, 0, 0, 0,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE, 2);
    SVT_CHECK(ret == 0, "16-byte inline send on a QP created with "
              "max_inline_data 0: %d", ret);
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 2, NULL);
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
    SVT_CHECK(wc.byte_len == 16, "received %u bytes", wc.byte_len);
    svt_pattern_check(b.buf + 1024, 16, 7, "inline send");
    svt_post_recv(&b, 1024, 256, 3);
    SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 60, 0, 0, 0,
                         IBV_SEND_SIGNALED | IBV_SEND_INLINE, 4));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 4, NULL);
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 3, &wc);
    svt_pattern_check(b.buf + 1024, 60, 7, "60-byte inline send");
    ret = svt_post_send(&a, IBV_WR_SEND, 0, 61, 0, 0, 0,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE, 5);
    SVT_CHECK(ret != 0, "61-byte inline send above the capacity of 60 was "
              "posted");
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    svt_dev_close(&dev);
}

/* An SRQ is for RC/UD (and XRC) only, of the QP's PD; with one,
 * max_recv_wr/sge are ignored */
static void svt_case_srq_rules(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_qp_init_attr init;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    memset(&init, 0, sizeof(init));
    init.send_cq = init.recv_cq = cq;
    init.srq     = srq;
    init.qp_type = IBV_QPT_UC;
    init.cap     = (struct ibv_qp_cap){4, 4, 1, 1, 0};
    qp = ibv_create_qp(dev.pd, &init);
    SVT_CHECK(qp == NULL, "UC QP with an SRQ was created");

    init.qp_type          = IBV_QPT_RC;
    init.cap.max_recv_wr  = dev.attr.max_qp_wr + 1000;
    init.cap.max_recv_sge = dev.attr.max_sge + 100;
    qp = ibv_create_qp(dev.pd, &init);
    SVT_CHECK(qp != NULL, "RC QP with an SRQ and max_recv_wr/sge above the "
              "device limits failed (errno %d): they must be ignored", errno);
    SVT_OK(ibv_destroy_qp(qp));
    init.qp_type = IBV_QPT_UD;
    SVT_NN(qp, ibv_create_qp(dev.pd, &init));
    SVT_OK(ibv_destroy_qp(qp));

    /* the SRQ must come from the QP's PD */
    {
        struct ibv_pd *pd2;

        SVT_NN(pd2, ibv_alloc_pd(dev.ctx));
        init.qp_type = IBV_QPT_RC;
        errno        = 0;
        qp           = ibv_create_qp(pd2, &init);
        SVT_CHECK((qp == NULL) && (errno == EINVAL), "RC QP with another "
                  "PD's SRQ: %s (errno %d)", qp ? "created" : "refused",
                  errno);
        SVT_OK(ibv_dealloc_pd(pd2));
    }
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_cq(cq));
}

/* ibv_destroy_qp fails while the QP is attached to a multicast group */
static void svt_case_mcast_busy(svt_proc_t *p)
{
    union ibv_gid mgid = {.raw = {0xff, 0x0e, [15] = 0x42}};
    svt_dev_t dev;
    struct ibv_qp *qp;
    struct ibv_cq *cq;
    int ret;

    svt_dev_open(&dev);
    qp = svt_qp_new(&dev, IBV_QPT_UD, NULL);
    cq = qp->send_cq;
    svt_qp_goto(&dev, qp, IBV_QPS_RTS);
    SVT_OK(ibv_attach_mcast(qp, &mgid, 0xc042));
    ret = ibv_destroy_qp(qp);
    SVT_CHECK(ret != 0, "ibv_destroy_qp succeeded while attached to a "
              "multicast group");
    SVT_OK(ibv_detach_mcast(qp, &mgid, 0xc042));
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_cq(cq));
}

/*
 * The inline room a QP was given can be asked for again: libmlx5 checks a
 * request against the largest send descriptor (mlx5_calc_send_wqe:
 * max_sq_desc_sz), and the capacity it writes back fills the same WQE, so
 * it passes. libfabric's verbs provider does exactly that (vrb_get_qp_cap
 * learns 572 for a UD QP of 4 SGEs asking 512, its endpoints then ask
 * 572); softverbs refused anything above 512 and fi_pingpong -e dgram
 * failed. softverbs' descriptor is 768 bytes (sv_qp.c): 572 at most on
 * RC with every operation, 700 on UD, and 512 on every QP type.
 */
static void svt_case_inline_recreate(svt_proc_t *p)
{
    static const struct {
        enum ibv_qp_type type;
        uint32_t sge, inl;
        int ok;
    } t[] = {
        {IBV_QPT_UD, 4, 512, 1}, {IBV_QPT_RC, 1, 512, 1},
        {IBV_QPT_UC, 30, 512, 1}, {IBV_QPT_RC, 1, 572, 1},
        {IBV_QPT_RC, 1, 573, 0}, {IBV_QPT_UD, 1, 700, 1},
        {IBV_QPT_UD, 1, 701, 0},
    };
    struct ibv_qp_init_attr a, again;
    struct ibv_cq *cq;
    struct ibv_qp *qp, *qp2;
    svt_dev_t dev;
    size_t i;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < sizeof(t) / sizeof(t[0]); ++i) {
        memset(&a, 0, sizeof(a));
        a.send_cq = a.recv_cq = cq;
        a.qp_type = t[i].type;
        a.cap     = (struct ibv_qp_cap){4, 4, t[i].sge, 1, t[i].inl};
        errno     = 0;
        qp        = ibv_create_qp(dev.pd, &a);
        if (!t[i].ok) {
            SVT_CHECK((qp == NULL) && (errno == EINVAL), "type %d, %u "
                      "inline bytes (a WQE above 768 bytes): %s, errno %d, "
                      "expected EINVAL", t[i].type, t[i].inl,
                      qp ? "created" : "refused", errno);
            if (qp != NULL) {
                SVT_OK(ibv_destroy_qp(qp));
            }
            continue;
        }
        SVT_CHECK(qp != NULL, "type %d, %u SGEs, %u inline bytes refused "
                  "(errno %d)", t[i].type, t[i].sge, t[i].inl, errno);
        SVT_CHECK(a.cap.max_inline_data >= t[i].inl, "type %d: %u inline "
                  "bytes asked, %u written back", t[i].type, t[i].inl,
                  a.cap.max_inline_data);
        /* the room written back, asked for again: the same WQE */
        again = a;
        errno = 0;
        qp2   = ibv_create_qp(dev.pd, &again);
        SVT_CHECK(qp2 != NULL, "type %d, %u SGEs: asking for the %u inline "
                  "bytes written back was refused (errno %d)", t[i].type,
                  t[i].sge, a.cap.max_inline_data, errno);
        SVT_CHECK(again.cap.max_inline_data == a.cap.max_inline_data,
                  "asked again for %u, %u written back",
                  a.cap.max_inline_data, again.cap.max_inline_data);
        SVT_OK(ibv_destroy_qp(qp2));
        SVT_OK(ibv_destroy_qp(qp));
    }
    SVT_OK(ibv_destroy_cq(cq));
}

/* SOFTVERBS_CAP_POLICY: fail (and unset: the default, as mlx5's
 * create_qp refuses caps above the device's) -> EINVAL above a device
 * limit; clamp -> the limit is written back */
static void svt_case_cap_policy(svt_proc_t *p)
{
    int clamp = (p->arg != 0);
    struct ibv_qp_init_attr init;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;
    int i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < 2; ++i) { /* 0: max_send_wr, 1: max_send_sge */
        memset(&init, 0, sizeof(init));
        init.send_cq = init.recv_cq = cq;
        init.qp_type = IBV_QPT_RC;
        init.cap     = (struct ibv_qp_cap){4, 4, 1, 1, 0};
        if (i == 0) {
            init.cap.max_send_wr = dev.attr.max_qp_wr + 1;
        } else {
            init.cap.max_send_sge = dev.attr.max_sge + 1;
        }
        errno = 0;
        qp    = ibv_create_qp(dev.pd, &init);
        if (!clamp) {
            SVT_CHECK(qp == NULL, "%s above the device limit was accepted "
                      "with CAP_POLICY=fail", i ? "max_send_sge" : "max_send_wr");
            SVT_CHECK(errno == EINVAL, "errno %d, expected EINVAL", errno);
            continue;
        }
        SVT_CHECK(qp != NULL, "create failed with CAP_POLICY=clamp (errno %d)",
                  errno);
        if (i == 0) {
            SVT_CHECK(init.cap.max_send_wr == (uint32_t)dev.attr.max_qp_wr,
                      "max_send_wr written back %u, device limit %d",
                      init.cap.max_send_wr, dev.attr.max_qp_wr);
        } else {
            SVT_CHECK(init.cap.max_send_sge == (uint32_t)dev.attr.max_sge,
                      "max_send_sge written back %u, device limit %d",
                      init.cap.max_send_sge, dev.attr.max_sge);
        }
        SVT_OK(ibv_destroy_qp(qp));
    }
    SVT_OK(ibv_destroy_cq(cq));
}

/* Device and port attributes that clients (UCX, perftest) rely on */
static void svt_case_device_attrs(svt_proc_t *p)
{
    static const uint8_t zero[16];
    svt_dev_t dev;
    uint16_t pkey;

    svt_dev_open(&dev);
    SVT_CHECK(dev.attr.max_qp > 0 && dev.attr.max_cq > 0 &&
              dev.attr.max_mr > 0 && dev.attr.max_qp_wr > 0 &&
              dev.attr.max_cqe > 0 && dev.attr.max_srq > 0,
              "zero limits: max_qp %d max_cq %d max_mr %d max_qp_wr %d "
              "max_cqe %d max_srq %d", dev.attr.max_qp, dev.attr.max_cq,
              dev.attr.max_mr, dev.attr.max_qp_wr, dev.attr.max_cqe,
              dev.attr.max_srq);
    SVT_CHECK(dev.attr.max_sge > 1, "max_sge %d (UCX UD needs > 1)",
              dev.attr.max_sge);
    SVT_CHECK(dev.attr.phys_port_cnt >= 1, "phys_port_cnt %u",
              dev.attr.phys_port_cnt);
    SVT_CHECK(dev.port.gid_tbl_len > 0, "gid_tbl_len 0");
    SVT_CHECK(memcmp(dev.gid.raw, zero, 16) != 0, "GID 0 is zero");
    SVT_CHECK(dev.port.max_msg_sz >= (4u << 20), "max_msg_sz %u < 4 MiB",
              dev.port.max_msg_sz);
    SVT_CHECK(dev.port.active_mtu >= IBV_MTU_256 &&
              dev.port.active_mtu <= dev.port.max_mtu, "active_mtu %d max_mtu %d",
              dev.port.active_mtu, dev.port.max_mtu);
    SVT_CHECK((dev.port.link_layer != IBV_LINK_LAYER_INFINIBAND) ||
              (dev.port.lid != 0), "InfiniBand link layer with LID 0");
    {
        struct ibv_device_attr_ex ax;

        memset(&ax, 0, sizeof(ax));
        SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
        SVT_CHECK(ax.orig_attr.max_qp == dev.attr.max_qp &&
                  ax.orig_attr.max_qp_wr == dev.attr.max_qp_wr &&
                  ax.orig_attr.vendor_part_id == dev.attr.vendor_part_id,
                  "ibv_query_device_ex differs from ibv_query_device");
    }
    SVT_OK(ibv_query_pkey(dev.ctx, dev.port_num, 0, &pkey));
    SVT_CHECK(pkey == htobe16(0xffff), "pkey[0] 0x%x, expected 0xffff",
              be16toh(pkey));
    SVT_CHECK(ibv_query_port(dev.ctx, 2, &dev.port) != 0 ||
              dev.attr.phys_port_cnt >= 2, "port 2 query succeeded with "
              "phys_port_cnt %u", dev.attr.phys_port_cnt);
}

/* SOFTVERBS_NUM_DEVICES=2: two devices with distinct names, GUIDs, GIDs;
 * an RC QP on softverbs0 talks to one on softverbs1 */
static void svt_case_two_devices(svt_proc_t *p)
{
    struct ibv_device **list;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    uint64_t guid[2], peer_gid[2];
    int num = 0;

    list = ibv_get_device_list(&num);
    SVT_CHECK((list != NULL) && (num == 2), "%d devices listed with "
              "SOFTVERBS_NUM_DEVICES=2", num);
    SVT_CHECK(!strcmp(ibv_get_device_name(list[0]), "softverbs0") &&
              !strcmp(ibv_get_device_name(list[1]), "softverbs1"),
              "device names %s, %s", ibv_get_device_name(list[0]),
              ibv_get_device_name(list[1]));
    guid[0] = ibv_get_device_guid(list[0]);
    guid[1] = ibv_get_device_guid(list[1]);
    SVT_CHECK(guid[0] != guid[1], "both devices have GUID 0x%llx",
              (unsigned long long)guid[0]);
    ibv_free_device_list(list);

    svt_dev_open_name(&dev, p->rank ? "softverbs1" : "softverbs0");
    memcpy(peer_gid, dev.gid.raw, 16);
    svt_msg_send(p, !p->rank, peer_gid, 16);
    svt_msg_recv(p, !p->rank, peer_gid, 16);
    SVT_CHECK(memcmp(peer_gid, dev.gid.raw, 16) != 0, "both devices have "
              "the same GID 0");
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        svt_fill(ep.buf, 4096, 9);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 4096, svt_raddr(&ep, 0),
                             ep.remote.rkey, 0, IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        svt_pattern_check(ep.buf, 4096, 9, "write across devices");
    }
    svt_sync(p, !p->rank);
}

const svt_case_t svt_cases_qp[] = {
    {"dev/two_devices", svt_case_two_devices, 2, 0, 0,
     "SOFTVERBS_NUM_DEVICES=2"},
    {"qp/device_attrs", svt_case_device_attrs, 1},
    {"qp/legal_path_rc", svt_case_legal_path, 1, IBV_QPT_RC},
    {"qp/legal_path_uc", svt_case_legal_path, 1, IBV_QPT_UC},
    {"qp/legal_path_ud", svt_case_legal_path, 1, IBV_QPT_UD},
    {"qp/any_to_err_reset", svt_case_any_to_err_reset, 1},
    {"qp/reset_cleans_cqes", svt_case_reset_cqes, 1},
    {"qp/destroy_cleans_cqes", svt_case_destroy_cqes, 1},
    {"qp/reset_gives_srq_wqes_back", svt_case_reset_cqes, 1, 1},
    {"qp/access_flags_on_demand", svt_case_access_odp, 1},
    {"qp/illegal_transitions", svt_case_illegal, 1},
    {"qp/masks_rc", svt_case_masks, 1, IBV_QPT_RC},
    {"qp/masks_uc", svt_case_masks, 1, IBV_QPT_UC},
    {"qp/masks_ud", svt_case_masks, 1, IBV_QPT_UD},
    {"qp/post_in_reset_init", svt_case_post_early, 1},
    {"qp/post_too_many_sges", svt_case_post_limits, 1, SVT_POST_SGE},
    {"qp/post_inline_too_big", svt_case_post_limits, 1, SVT_POST_INLINE},
    {"qp/post_recv_queue_full", svt_case_post_limits, 1, SVT_POST_RQ_FULL},
    {"qp/post_recv_list_stops", svt_case_post_limits, 1, SVT_POST_RECV_LIST},
    {"qp/post_send_queue_full", svt_case_post_limits, 1, SVT_POST_SQ_FULL},
    {"caps/writeback", svt_case_caps_writeback, 1},
    {"caps/inline_capacity_mlx5", svt_case_inline_capacity, 1},
    {"caps/inline_written_back_asked_again", svt_case_inline_recreate, 1, 0,
     0, "SOFTVERBS_CAP_POLICY=fail"},
    {"caps/srq_rules", svt_case_srq_rules, 1},
    {"caps/destroy_attached_qp", svt_case_mcast_busy, 1},
    {"caps/policy_fail", svt_case_cap_policy, 1, 0, 0,
     "SOFTVERBS_CAP_POLICY=fail"},
    {"caps/policy_clamp", svt_case_cap_policy, 1, 1, 0,
     "SOFTVERBS_CAP_POLICY=clamp"},
    /* no SOFTVERBS_CAP_POLICY: mlx5's EINVAL (caps above the device's) */
    {"caps/policy_default_fails", svt_case_cap_policy, 1, 0},
    {NULL}
};
