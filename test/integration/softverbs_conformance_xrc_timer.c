/*
 * softverbs conformance: an XRC initiator's retry and RNR timers run while
 * its process polls another CQ only (xrc/timer_*).
 *
 * An HCA retransmits a request that got no response, or an RNR NAK, by
 * itself (rxe too: its retransmit and RNR NAK timers): the application
 * need not poll the send CQ for it. ibv_xsrq_pingpong relies on that: its sends are
 * unsignaled until the last, and it polls its receive CQ only until every
 * message arrived; a server's first send reaches the client's XRC target
 * before the client moved it to RTR (nothing answers, the request is sent
 * again after the QP's timeout). Rank 0 is that server: an XRC_SEND QP on
 * send CQ scq, and a second CQ, the only one it polls while the request
 * waits. Rank 1 is the client: its target is in INIT when the request comes
 * (arg 0: transport retry) or its XRC SRQ empty (arg 1: RNR retry); then it
 * moves the target to RTR or posts the WQE, and must get the message.
 */
#include "softverbs_conformance.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XT_LEN 256

/* what the target rank tells the initiator */
typedef struct xt_info {
    svt_addr_t tgt;
    uint32_t   srqn;
} xt_info_t;

static void xt_addr(const svt_dev_t *dev, const struct ibv_qp *qp,
                    svt_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->qpn = qp->qp_num;
    a->psn = (qp->qp_num * 7919u) & 0xffffff;
    a->lid = dev->port.lid;
    memcpy(a->gid, dev->gid.raw, 16);
}

/* INIT->RTR (->RTS for the initiator) with ibv_xsrq_pingpong's values:
 * timeout 14 (67 ms), 7 retries, RNR retries forever; the target's RNR
 * timer 1 (0.01 ms) */
static void xt_rtr(const svt_dev_t *dev, struct ibv_qp *qp,
                   const svt_addr_t *remote)
{
    struct ibv_qp_attr a;
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
               IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

    memset(&a, 0, sizeof(a));
    a.qp_state    = IBV_QPS_RTR;
    a.path_mtu    = dev->port.active_mtu;
    a.dest_qp_num = remote->qpn;
    a.rq_psn      = remote->psn;
    svt_ah_attr_init(dev, remote, &a.ah_attr);
    if (qp->qp_type == IBV_QPT_XRC_RECV) {
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer      = 1;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    SVT_OK(ibv_modify_qp(qp, &a, mask));
    if (qp->qp_type == IBV_QPT_XRC_RECV) {
        return;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 14;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.max_rd_atomic = 1;
    a.sq_psn        = (qp->qp_num * 7919u) & 0xffffff;
    SVT_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                         IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

/* Rank 1: a private domain, an XRC SRQ with its CQ, the target QP in INIT
 * (arg 0) or RTR with the SRQ empty (arg 1) when rank 0 sends; then the
 * target to RTR or a WQE posted, and the message must arrive */
static void xt_target(svt_proc_t *p, svt_dev_t *dev, struct ibv_mr *mr,
                      uint8_t *buf)
{
    struct ibv_xrcd_init_attr xa;
    struct ibv_srq_init_attr_ex sa;
    struct ibv_qp_init_attr_ex qa;
    struct ibv_sge sge = { (uintptr_t)buf, XT_LEN, mr->lkey };
    struct ibv_recv_wr wr, *bad;
    struct ibv_xrcd *xrcd;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_wc wc;
    svt_addr_t ini;
    xt_info_t ti;
    char c = 'r';

    memset(&xa, 0, sizeof(xa));
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd        = -1;
    SVT_NN(xrcd, ibv_open_xrcd(dev->ctx, &xa));
    SVT_NN(cq, ibv_create_cq(dev->ctx, 1, NULL, NULL, 0));
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr  = 1;
    sa.attr.max_sge = 1;
    sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
                   IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    sa.srq_type  = IBV_SRQT_XRC;
    sa.xrcd      = xrcd;
    sa.cq        = cq;
    sa.pd        = dev->pd;
    SVT_NN(srq, ibv_create_srq_ex(dev->ctx, &sa));
    memset(&qa, 0, sizeof(qa));
    qa.qp_type   = IBV_QPT_XRC_RECV;
    qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    qa.xrcd      = xrcd;
    SVT_NN(qp, ibv_create_qp_ex(dev->ctx, &qa));
    svt_qp_to_init(qp, dev, 0);

    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = 7;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    memset(&ti, 0, sizeof(ti));
    SVT_OK(ibv_get_srq_num(srq, &ti.srqn));
    xt_addr(dev, qp, &ti.tgt);
    svt_msg_recv(p, 0, &ini, sizeof(ini));
    if (p->arg == 1) {
        xt_rtr(dev, qp, &ini);              /* ready, but no WQE */
    } else {
        SVT_OK(ibv_post_srq_recv(srq, &wr, &bad));  /* a WQE, QP in INIT */
    }
    svt_msg_send(p, 0, &ti, sizeof(ti));
    /* rank 0 posted: its request found the target in INIT or no WQE */
    svt_msg_recv(p, 0, &c, 1);
    if (p->arg == 1) {
        SVT_OK(ibv_post_srq_recv(srq, &wr, &bad));
    } else {
        xt_rtr(dev, qp, &ini);
    }
    /* the retry comes while rank 0 polls its other CQ only */
    svt_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_RECV, 7, &wc);
    SVT_CHECK(wc.byte_len == XT_LEN, "byte_len %u", wc.byte_len);
    SVT_CHECK(wc.qp_num == qp->qp_num, "qp_num 0x%x, target 0x%x",
              wc.qp_num, qp->qp_num);
    svt_pattern_check(buf, XT_LEN, 0x7e7e, "retried XRC send");
    svt_msg_send(p, 0, &c, 1);
    svt_sync(p, 0);
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_cq(cq));
    SVT_OK(ibv_close_xrcd(xrcd));
}

/* Rank 0: the initiator, its send CQ, and the CQ it polls meanwhile */
static void xt_initiator(svt_proc_t *p, svt_dev_t *dev, struct ibv_mr *mr,
                         uint8_t *buf)
{
    struct ibv_qp_init_attr_ex qa;
    struct ibv_sge sge = { (uintptr_t)buf, XT_LEN, mr->lkey };
    struct ibv_send_wr wr, *bad;
    struct ibv_cq *scq, *other;
    struct ibv_qp *qp;
    struct ibv_wc wc;
    svt_addr_t me;
    xt_info_t ti;
    double deadline;
    char c = 'p';
    int n;

    SVT_NN(scq, ibv_create_cq(dev->ctx, 1, NULL, NULL, 0));
    SVT_NN(other, ibv_create_cq(dev->ctx, 1, NULL, NULL, 0));
    memset(&qa, 0, sizeof(qa));
    qa.qp_type          = IBV_QPT_XRC_SEND;
    qa.send_cq          = scq;
    qa.cap.max_send_wr  = 4;
    qa.cap.max_send_sge = 1;
    qa.comp_mask        = IBV_QP_INIT_ATTR_PD;
    qa.pd               = dev->pd;
    SVT_NN(qp, ibv_create_qp_ex(dev->ctx, &qa));
    svt_qp_to_init(qp, dev, 0);
    xt_addr(dev, qp, &me);
    svt_msg_send(p, 1, &me, sizeof(me));
    svt_msg_recv(p, 1, &ti, sizeof(ti));
    xt_rtr(dev, qp, &ti.tgt);

    svt_fill(buf, XT_LEN, 0x7e7e);
    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = 9;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.qp_type.xrc.remote_srqn = ti.srqn;
    SVT_OK(ibv_post_send(qp, &wr, &bad));
    SVT_CHECK(ibv_poll_cq(scq, 1, &wc) == 0, "the send completed at once "
              "(status %d): the target was not to be ready", wc.status);
    svt_msg_send(p, 1, &c, 1);
    /* poll the other CQ only until rank 1 has the message (or failed) */
    deadline = svt_now_ms() + 8000;
    while (!svt_wait_fd(p->sock[1], 0)) {
        n = ibv_poll_cq(other, 1, &wc);
        SVT_CHECK(n == 0, "ibv_poll_cq of the idle CQ returned %d", n);
        SVT_CHECK(svt_now_ms() < deadline, "rank 1 never answered");
        usleep(100);
    }
    svt_msg_recv(p, 1, &c, 1);
    svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_SEND, 9, NULL);
    svt_sync(p, 1);
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_cq(other));
    SVT_OK(ibv_destroy_cq(scq));
}

static void svt_case_xrc_timer(svt_proc_t *p)
{
    struct ibv_mr *mr;
    svt_dev_t dev;
    uint8_t *buf;

    svt_dev_open(&dev);
    buf = calloc(1, XT_LEN);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, XT_LEN, IBV_ACCESS_LOCAL_WRITE));
    if (p->rank == 0) {
        xt_initiator(p, &dev, mr, buf);
    } else {
        xt_target(p, &dev, mr, buf);
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_xrc_timer[] = {
    {"xrc/timer_retry_other_cq", svt_case_xrc_timer, 2, 0, 15},
    {"xrc/timer_rnr_other_cq", svt_case_xrc_timer, 2, 1, 15},
    {NULL}
};
