/*
 * softverbs conformance: XRC (IBA vol 1 Annex A14; man ibv_open_xrcd,
 * ibv_create_srq_ex, ibv_open_qp). Data cases run an XRC_SEND QP in rank
 * 0 against an XRC_RECV QP in rank 1 (and rank 2) and check what lands in
 * which XRC SRQ: bytes, wr_id, byte_len, qp_num, src_qp, the CQ.
 */
#include "softverbs_conformance.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XRC_NSRQ 3
#define XRC_SLOT 4096

/* what a target tells the initiator */
typedef struct xrc_info {
    svt_addr_t tgt;               /* the XRC_RECV QP (qpn, lid, gid) */
    uint32_t   srqn[XRC_NSRQ];
    uint32_t   rkey;
    uint64_t   addr;
} xrc_info_t;

static struct ibv_xrcd *xrc_open(svt_dev_t *dev, int fd, int oflags)
{
    struct ibv_xrcd_init_attr xa;

    memset(&xa, 0, sizeof(xa));
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd        = fd;
    xa.oflags    = oflags;
    return ibv_open_xrcd(dev->ctx, &xa);
}

static struct ibv_srq *xrc_srq(svt_dev_t *dev, struct ibv_xrcd *xrcd,
                               struct ibv_cq *cq, uint32_t max_wr)
{
    struct ibv_srq_init_attr_ex sa;
    struct ibv_srq *srq;

    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr  = max_wr;
    sa.attr.max_sge = 1;
    sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
                   IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    sa.srq_type  = IBV_SRQT_XRC;
    sa.xrcd      = xrcd;
    sa.cq        = cq;
    sa.pd        = dev->pd;
    SVT_NN(srq, ibv_create_srq_ex(dev->ctx, &sa));
    return srq;
}

static struct ibv_qp *xrc_tgt(svt_dev_t *dev, struct ibv_xrcd *xrcd)
{
    struct ibv_qp_init_attr_ex qa;
    struct ibv_qp *qp;

    memset(&qa, 0, sizeof(qa));
    qa.qp_type   = IBV_QPT_XRC_RECV;
    qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    qa.xrcd      = xrcd;
    SVT_NN(qp, ibv_create_qp_ex(dev->ctx, &qa));
    return qp;
}

static struct ibv_qp *xrc_ini(svt_dev_t *dev, struct ibv_cq *cq, int ex)
{
    struct ibv_qp_init_attr_ex qa;
    struct ibv_qp *qp;

    memset(&qa, 0, sizeof(qa));
    qa.qp_type          = IBV_QPT_XRC_SEND;
    qa.send_cq          = cq;
    qa.cap.max_send_wr  = 64;
    qa.cap.max_send_sge = 1;
    qa.comp_mask        = IBV_QP_INIT_ATTR_PD;
    qa.pd               = dev->pd;
    if (ex) {
        qa.comp_mask     |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
    }
    SVT_NN(qp, ibv_create_qp_ex(dev->ctx, &qa));
    SVT_CHECK(qa.cap.max_recv_wr == 0, "XRC_SEND max_recv_wr %u",
              qa.cap.max_recv_wr);
    return qp;
}

/* RESET->INIT->RTR(->RTS) with the masks the kernel's table gives XRC
 * (qp_state_table): a target needs MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER at
 * RTR, TIMEOUT and SQ_PSN at RTS; an initiator the RC set at RTS */
static void xrc_connect(svt_dev_t *dev, struct ibv_qp *qp,
                        const svt_addr_t *remote)
{
    struct ibv_qp_attr a;
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
               IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

    svt_qp_to_init(qp, dev, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                            IBV_ACCESS_REMOTE_ATOMIC);
    memset(&a, 0, sizeof(a));
    a.qp_state    = IBV_QPS_RTR;
    a.path_mtu    = dev->port.active_mtu;
    a.dest_qp_num = remote->qpn;
    a.rq_psn      = remote->psn;
    svt_ah_attr_init(dev, remote, &a.ah_attr);
    if (qp->qp_type == IBV_QPT_XRC_RECV) {
        SVT_CHECK(ibv_modify_qp(qp, &a, mask) == EINVAL,
                  "XRC_RECV INIT->RTR without MAX_DEST_RD_ATOMIC accepted");
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer      = 1;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        SVT_OK(ibv_modify_qp(qp, &a, mask));
        return;
    }
    SVT_OK(ibv_modify_qp(qp, &a, mask));
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = 10;
    a.retry_cnt     = 3;
    a.rnr_retry     = 3;
    a.max_rd_atomic = 1;
    a.sq_psn        = (qp->qp_num * 7919u) & 0xffffff;
    SVT_CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL,
              "XRC_SEND RTR->RTS without TIMEOUT, retries accepted");
    SVT_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
                         IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

static void xrc_addr(svt_dev_t *dev, struct ibv_qp *qp, svt_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->qpn = qp->qp_num;
    a->psn = (qp->qp_num * 7919u) & 0xffffff;
    a->lid = dev->port.lid;
    memcpy(a->gid, dev->gid.raw, 16);
}

/* An XRC_SEND QP of rank 0 connected to the target that rank peer
 * described in *ti (its own address goes to peer first) */
static struct ibv_qp *xrc_ini_pair(svt_proc_t *p, int peer, svt_dev_t *dev,
                                   struct ibv_cq *cq, int ex, xrc_info_t *ti)
{
    struct ibv_qp *qp = xrc_ini(dev, cq, ex);
    svt_addr_t me;

    xrc_addr(dev, qp, &me);
    svt_msg_send(p, peer, &me, sizeof(me));
    svt_msg_recv(p, peer, ti, sizeof(*ti));
    xrc_connect(dev, qp, &ti->tgt);
    return qp;
}

/* The target side: receives the initiator's address, connects tgt to it,
 * sends *ti with tgt's address filled in; returns the initiator's QPN */
static uint32_t xrc_tgt_pair(svt_proc_t *p, svt_dev_t *dev,
                             struct ibv_qp *tgt, xrc_info_t *ti)
{
    svt_addr_t ini;

    svt_msg_recv(p, 0, &ini, sizeof(ini));
    xrc_connect(dev, tgt, &ini);
    xrc_addr(dev, tgt, &ti->tgt);
    svt_msg_send(p, 0, ti, sizeof(*ti));
    return ini.qpn;
}

static int xrc_send(struct ibv_qp *qp, struct ibv_mr *mr, void *buf,
                    uint32_t len, uint32_t srqn, uint64_t wr_id, int ex)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_qp_ex *qx;

    if (ex) {
        qx = ibv_qp_to_qp_ex(qp);
        ibv_wr_start(qx);
        qx->wr_id    = wr_id;
        qx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send(qx);
        ibv_wr_set_xrc_srqn(qx, srqn);
        ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, len);
        return ibv_wr_complete(qx);
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = wr_id;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.qp_type.xrc.remote_srqn = srqn;
    return ibv_post_send(qp, &wr, &bad);
}

static void xrc_post_srq(struct ibv_srq *srq, struct ibv_mr *mr, void *buf,
                         uint32_t len, uint64_t wr_id)
{
    struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
    struct ibv_recv_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    SVT_OK(ibv_post_srq_recv(srq, &wr, &bad));
}

/* message i: its SRQ, length and pattern seed */
#define XRC_MSGS 9
static uint32_t xrc_len(int i)  { return 100 + 450 * i; }
static uint32_t xrc_seed(int i) { return 0x5a00 + i; }

/* xrc/send_srqs(_wr): three XRC SRQs, each with its own CQ, behind one
 * target QP; each message goes to the SRQ its remote_srqn names (arg 1:
 * set with ibv_wr_set_xrc_srqn) */
static void svt_case_xrc_send_srqs(svt_proc_t *p)
{
    struct ibv_cq *cq[XRC_NSRQ], *scq;
    struct ibv_srq *srq[XRC_NSRQ];
    struct ibv_xrcd *xrcd;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_wc wc;
    xrc_info_t ti;
    svt_dev_t dev;
    uint32_t ini;
    uint8_t *buf;
    int i, s;

    svt_dev_open(&dev);
    buf = calloc(XRC_MSGS, XRC_SLOT);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, XRC_MSGS * XRC_SLOT,
                          IBV_ACCESS_LOCAL_WRITE));
    if (p->rank == 0) {
        SVT_NN(scq, ibv_create_cq(dev.ctx, 64, NULL, NULL, 0));
        qp = xrc_ini_pair(p, 1, &dev, scq, (int)p->arg, &ti);
        for (i = 0; i < XRC_MSGS; i++) {
            svt_fill(buf + i * XRC_SLOT, xrc_len(i), xrc_seed(i));
            SVT_OK(xrc_send(qp, mr, buf + i * XRC_SLOT, xrc_len(i),
                            ti.srqn[i % XRC_NSRQ], 1000 + i, (int)p->arg));
            svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_SEND, 1000 + i, NULL);
        }
        svt_sync(p, 1);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_cq(scq));
    } else {
        SVT_NN(xrcd, xrc_open(&dev, -1, O_CREAT));
        for (s = 0; s < XRC_NSRQ; s++) {
            SVT_NN(cq[s], ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
            srq[s] = xrc_srq(&dev, xrcd, cq[s], 8);
            SVT_OK(ibv_get_srq_num(srq[s], &ti.srqn[s]));
        }
        /* slot i of the buffer waits in the SRQ message i is for */
        for (i = 0; i < XRC_MSGS; i++) {
            xrc_post_srq(srq[i % XRC_NSRQ], mr, buf + i * XRC_SLOT,
                         XRC_SLOT, 2000 + i);
        }
        qp  = xrc_tgt(&dev, xrcd);
        ini = xrc_tgt_pair(p, &dev, qp, &ti);
        for (i = 0; i < XRC_MSGS; i++) {
            s = i % XRC_NSRQ;
            svt_expect_wc(cq[s], IBV_WC_SUCCESS, IBV_WC_RECV, 2000 + i, &wc);
            SVT_CHECK(wc.byte_len == xrc_len(i), "msg %d byte_len %u", i,
                      wc.byte_len);
            SVT_CHECK(wc.qp_num == qp->qp_num, "msg %d qp_num 0x%x, target "
                      "0x%x", i, wc.qp_num, qp->qp_num);
            SVT_CHECK(wc.src_qp == ini, "msg %d src_qp 0x%x, initiator "
                      "0x%x", i, wc.src_qp, ini);
            svt_pattern_check(buf + i * XRC_SLOT, xrc_len(i), xrc_seed(i),
                              "XRC SRQ receive");
        }
        for (s = 0; s < XRC_NSRQ; s++) {
            svt_expect_no_wc(cq[s], 20);
        }
        svt_sync(p, 0);
        SVT_OK(ibv_destroy_qp(qp));
        for (s = 0; s < XRC_NSRQ; s++) {
            SVT_OK(ibv_destroy_srq(srq[s]));
            SVT_OK(ibv_destroy_cq(cq[s]));
        }
        SVT_OK(ibv_close_xrcd(xrcd));
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

/* A target rank's usual setup: a private domain, one XRC SRQ with its CQ,
 * the target QP, connected to rank 0's initiator */
typedef struct xrc_tside {
    struct ibv_xrcd *xrcd;
    struct ibv_cq   *cq;
    struct ibv_srq  *srq;
    struct ibv_qp   *qp;
    uint32_t         ini;
} xrc_tside_t;

static void xrc_tside_create(svt_proc_t *p, svt_dev_t *dev, xrc_tside_t *t,
                             xrc_info_t *ti, uint32_t max_wr)
{
    SVT_NN(t->xrcd, xrc_open(dev, -1, 0));
    SVT_NN(t->cq, ibv_create_cq(dev->ctx, 16, NULL, NULL, 0));
    t->srq = xrc_srq(dev, t->xrcd, t->cq, max_wr);
    SVT_OK(ibv_get_srq_num(t->srq, &ti->srqn[0]));
    t->qp  = xrc_tgt(dev, t->xrcd);
    t->ini = xrc_tgt_pair(p, dev, t->qp, ti);
}

static void xrc_tside_destroy(xrc_tside_t *t)
{
    SVT_OK(ibv_destroy_qp(t->qp));
    SVT_OK(ibv_destroy_srq(t->srq));
    SVT_OK(ibv_destroy_cq(t->cq));
    SVT_OK(ibv_close_xrcd(t->xrcd));
}

/* xrc/rdma: RDMA WRITE, READ and an atomic over an XRC_SEND QP; the
 * target's memory and R_Key are those of the SRQ's PD (the target QP has
 * none); every request names the SRQ */
static void svt_case_xrc_rdma(svt_proc_t *p)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_cq *scq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    xrc_tside_t t;
    xrc_info_t ti;
    svt_dev_t dev;
    uint64_t *ctr;
    uint8_t *buf;

    svt_dev_open(&dev);
    buf = calloc(3, XRC_SLOT);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, 3 * XRC_SLOT,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC));
    ctr = (uint64_t *)(buf + 2 * XRC_SLOT);
    memset(&ti, 0, sizeof(ti));
    if (p->rank == 1) {
        svt_fill(buf + XRC_SLOT, XRC_SLOT, 0x77); /* read by rank 0 */
        *ctr = 40;
        ti.rkey = mr->rkey;
        ti.addr = (uintptr_t)buf;
        xrc_tside_create(p, &dev, &t, &ti, 4);
        svt_sync(p, 0);
        svt_pattern_check(buf, 3000, 0x66, "RDMA WRITE through XRC");
        SVT_CHECK(*ctr == 42, "fetch-and-add through XRC: %llu",
                  (unsigned long long)*ctr);
        svt_expect_no_wc(t.cq, 20); /* RDMA consumes no receive */
        xrc_tside_destroy(&t);
    } else {
        SVT_NN(scq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        qp = xrc_ini_pair(p, 1, &dev, scq, 0, &ti);
        svt_fill(buf, 3000, 0x66);
        memset(&wr, 0, sizeof(wr));
        sge.addr = (uintptr_t)buf;
        sge.length = 3000;
        sge.lkey = mr->lkey;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.qp_type.xrc.remote_srqn = ti.srqn[0];
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr_id  = 1;
        wr.wr.rdma.remote_addr = ti.addr;
        wr.wr.rdma.rkey = ti.rkey;
        SVT_OK(ibv_post_send(qp, &wr, &bad));
        svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
        sge.addr = (uintptr_t)(buf + XRC_SLOT);
        sge.length = XRC_SLOT;
        wr.opcode = IBV_WR_RDMA_READ;
        wr.wr_id  = 2;
        wr.wr.rdma.remote_addr = ti.addr + XRC_SLOT;
        SVT_OK(ibv_post_send(qp, &wr, &bad));
        svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2, NULL);
        svt_pattern_check(buf + XRC_SLOT, XRC_SLOT, 0x77,
                          "RDMA READ through XRC");
        sge.addr = (uintptr_t)ctr;
        sge.length = 8;
        wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.wr_id  = 3;
        wr.wr.atomic.remote_addr = ti.addr + 2 * XRC_SLOT;
        wr.wr.atomic.rkey = ti.rkey;
        wr.wr.atomic.compare_add = 2;
        SVT_OK(ibv_post_send(qp, &wr, &bad));
        svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 3, NULL);
        SVT_CHECK(*ctr == 40, "fetch-and-add returned %llu",
                  (unsigned long long)*ctr);
        svt_sync(p, 1);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_cq(scq));
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

/* xrc/srq_other_xrcd (arg 0), xrc/srq_unknown (arg 1): a SEND naming an
 * XRC SRQ of another domain than the target's, or no SRQ at all. A target
 * delivers only to its domain's SRQs (Annex A14); softverbs NAKs it as an
 * access violation: the initiator completes with IBV_WC_REM_ACCESS_ERR,
 * the target goes to ERR with IBV_EVENT_QP_ACCESS_ERR, nothing lands in
 * the other domain's SRQ (its WQE stays posted) */
static void svt_case_xrc_wrong_srq(svt_proc_t *p)
{
    struct ibv_async_event ev;
    struct ibv_xrcd *other;
    struct ibv_srq *osrq;
    struct ibv_cq *ocq, *scq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_wc wc;
    xrc_tside_t t;
    xrc_info_t ti;
    svt_dev_t dev;
    uint8_t *buf;

    svt_dev_open(&dev);
    buf = calloc(2, XRC_SLOT);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, 2 * XRC_SLOT, IBV_ACCESS_LOCAL_WRITE));
    memset(&ti, 0, sizeof(ti));
    if (p->rank == 1) {
        SVT_NN(other, xrc_open(&dev, -1, 0));
        SVT_NN(ocq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        osrq = xrc_srq(&dev, other, ocq, 4);
        memset(buf, 0xee, 2 * XRC_SLOT);
        xrc_post_srq(osrq, mr, buf, XRC_SLOT, 7);
        SVT_OK(ibv_get_srq_num(osrq, &ti.srqn[1]));
        xrc_tside_create(p, &dev, &t, &ti, 4);
        xrc_post_srq(t.srq, mr, buf + XRC_SLOT, XRC_SLOT, 8);
        svt_sync(p, 0);
        svt_wait_async(dev.ctx, IBV_EVENT_QP_ACCESS_ERR, 5000, &ev);
        SVT_CHECK(ev.element.qp == t.qp, "access error of another QP");
        SVT_CHECK(svt_qp_state(t.qp) == IBV_QPS_ERR, "target state %d",
                  svt_qp_state(t.qp));
        svt_sync(p, 0);
        svt_expect_no_wc(ocq, 50);
        svt_expect_no_wc(t.cq, 20);
        svt_memset_check(buf, 2 * XRC_SLOT, 0xee, "SRQ buffers");
        SVT_OK(ibv_destroy_srq(osrq));
        SVT_OK(ibv_destroy_cq(ocq));
        SVT_OK(ibv_close_xrcd(other));
        xrc_tside_destroy(&t);
    } else {
        SVT_NN(scq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        qp = xrc_ini_pair(p, 1, &dev, scq, 0, &ti);
        svt_sync(p, 1);
        svt_fill(buf, 64, 1);
        SVT_OK(xrc_send(qp, mr, buf, 64, p->arg ? 4000 : ti.srqn[1], 9, 0));
        svt_expect_wc(scq, IBV_WC_REM_ACCESS_ERR, -1, 9, &wc);
        svt_sync(p, 1);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_cq(scq));
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

/* a file of the case for a shared domain, named by rank 0's pid */
static void xrc_path(svt_proc_t *p, char *path, size_t len)
{
    int32_t pid = (int32_t)svt_xchg_u64(p, p->rank ? 0 : 1,
                                        (uint64_t)getpid());

    snprintf(path, len, "/tmp/svt-xrcd-%d", p->rank ? (int)pid : getpid());
}

/* xrc/xrcd_file: processes opening the same file share a domain; the
 * open rules of ib_uverbs_open_xrcd: no domain yet and no O_CREAT EAGAIN,
 * a domain and O_EXCL EINVAL, a bad fd EBADF; libibverbs': without FD and
 * OFLAGS in comp_mask EINVAL. Sharing shows as ibv_open_qp of the other
 * process's target, which only a handle of its domain may open */
static void svt_case_xrc_xrcd_file(svt_proc_t *p)
{
    struct ibv_xrcd_init_attr xa;
    struct ibv_qp_open_attr oa;
    struct ibv_xrcd *x, *x2, *priv;
    struct ibv_qp *tgt, *op;
    svt_dev_t dev;
    uint32_t qpn;
    char path[64];
    int fd;

    svt_dev_open(&dev);
    xrc_path(p, path, sizeof(path));
    if (p->rank == 0) {
        fd = open(path, O_RDONLY | O_CREAT, 0600);
        SVT_CHECK(fd >= 0, "open %s: %d", path, errno);
        errno = 0;
        SVT_CHECK(xrc_open(&dev, fd, 0) == NULL && errno == EAGAIN,
                  "no domain, no O_CREAT: errno %d", errno);
        SVT_CHECK(xrc_open(&dev, 1000, O_CREAT) == NULL && errno == EBADF,
                  "bad fd: errno %d", errno);
        memset(&xa, 0, sizeof(xa));
        xa.comp_mask = IBV_XRCD_INIT_ATTR_FD;
        xa.fd        = fd;
        SVT_CHECK(ibv_open_xrcd(dev.ctx, &xa) == NULL && errno == EINVAL,
                  "no OFLAGS in comp_mask: errno %d", errno);
        SVT_NN(x, xrc_open(&dev, fd, O_CREAT | O_EXCL));
        SVT_CHECK(xrc_open(&dev, fd, O_CREAT | O_EXCL) == NULL &&
                  errno == EINVAL, "O_EXCL of an existing domain: errno %d",
                  errno);
        SVT_NN(x2, xrc_open(&dev, fd, 0)); /* a second handle */
        tgt = xrc_tgt(&dev, x);
        qpn = tgt->qp_num;
        svt_msg_send(p, 1, &qpn, sizeof(qpn));
        svt_sync(p, 1);
        SVT_OK(ibv_destroy_qp(tgt));
        SVT_OK(ibv_close_xrcd(x2));
        SVT_OK(ibv_close_xrcd(x));
        svt_sync(p, 1);
        close(fd);
        unlink(path);
    } else {
        svt_msg_recv(p, 0, &qpn, sizeof(qpn));
        fd = open(path, O_RDONLY);
        SVT_CHECK(fd >= 0, "open %s: %d", path, errno);
        SVT_NN(x, xrc_open(&dev, fd, 0)); /* rank 0's domain */
        SVT_NN(priv, xrc_open(&dev, -1, O_CREAT));
        memset(&oa, 0, sizeof(oa));
        oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
                       IBV_QP_OPEN_ATTR_TYPE;
        oa.qp_num  = qpn;
        oa.qp_type = IBV_QPT_XRC_RECV;
        oa.xrcd    = priv;
        SVT_CHECK(ibv_open_qp(dev.ctx, &oa) == NULL && errno == EINVAL,
                  "target opened through another domain: errno %d", errno);
        oa.xrcd    = x;
        oa.qp_type = IBV_QPT_RC;
        SVT_CHECK(ibv_open_qp(dev.ctx, &oa) == NULL && errno == EINVAL,
                  "ibv_open_qp of type RC: errno %d", errno);
        oa.qp_type = IBV_QPT_XRC_RECV;
        SVT_NN(op, ibv_open_qp(dev.ctx, &oa));
        SVT_CHECK(op->qp_num == qpn, "opened 0x%x", op->qp_num);
        SVT_CHECK(ibv_close_xrcd(x) == EBUSY, "close with an opened QP");
        SVT_OK(ibv_destroy_qp(op));
        SVT_OK(ibv_close_xrcd(x));
        SVT_OK(ibv_close_xrcd(priv));
        svt_sync(p, 0);
        svt_sync(p, 0);
        /* every handle closed: the domain is gone with them */
        errno = 0;
        SVT_CHECK(xrc_open(&dev, fd, 0) == NULL && errno == EAGAIN,
                  "domain left after its last handle: errno %d", errno);
        close(fd);
    }
    svt_dev_close(&dev);
}

/* xrc/open_qp: rank 1 creates the target in a file's domain and connects
 * it to rank 0's initiator; rank 2 opens the domain and the target by
 * number (ibv_open_qp) and puts an XRC SRQ in it; rank 1 destroys its
 * handle (the QP lives while rank 2's does); rank 0's message lands in
 * rank 2's SRQ, completed with the target's qp_num */
static void svt_case_xrc_open_qp(svt_proc_t *p)
{
    struct ibv_qp_open_attr oa;
    struct ibv_xrcd *x;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    struct ibv_wc wc;
    xrc_info_t ti;
    svt_dev_t dev;
    int32_t pid0 = getpid();
    char path[64];
    uint8_t *buf;
    int fd = -1;

    svt_dev_open(&dev);
    buf = calloc(1, XRC_SLOT);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, XRC_SLOT, IBV_ACCESS_LOCAL_WRITE));
    memset(&ti, 0, sizeof(ti));
    if (p->rank == 0) {
        svt_msg_send(p, 1, &pid0, sizeof(pid0));
        svt_msg_send(p, 2, &pid0, sizeof(pid0));
        SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        qp = xrc_ini_pair(p, 1, &dev, cq, 0, &ti);
        svt_msg_send(p, 2, &ti.tgt.qpn, sizeof(ti.tgt.qpn));
        svt_msg_recv(p, 2, &ti.srqn[0], sizeof(ti.srqn[0]));
        svt_sync(p, 1); /* rank 1: drop your handle */
        svt_sync(p, 1);
        svt_fill(buf, 1234, 0x99);
        SVT_OK(xrc_send(qp, mr, buf, 1234, ti.srqn[0], 5, 0));
        svt_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_SEND, 5, NULL);
        svt_sync(p, 2);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_cq(cq));
        snprintf(path, sizeof(path), "/tmp/svt-xrcd-open-%d", (int)pid0);
        unlink(path);
    } else {
        svt_msg_recv(p, 0, &pid0, sizeof(pid0));
        snprintf(path, sizeof(path), "/tmp/svt-xrcd-open-%d", (int)pid0);
        fd = open(path, O_RDONLY | O_CREAT, 0600);
        SVT_CHECK(fd >= 0, "open %s: %d", path, errno);
    }
    if (p->rank == 1) {
        SVT_NN(x, xrc_open(&dev, fd, O_CREAT));
        qp = xrc_tgt(&dev, x);
        xrc_tgt_pair(p, &dev, qp, &ti);
        svt_sync(p, 0);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_close_xrcd(x));
        svt_sync(p, 0);
    }
    if (p->rank == 2) {
        svt_msg_recv(p, 0, &ti.tgt.qpn, sizeof(ti.tgt.qpn));
        SVT_NN(x, xrc_open(&dev, fd, O_CREAT));
        SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        srq = xrc_srq(&dev, x, cq, 4);
        memset(&oa, 0, sizeof(oa));
        oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
                       IBV_QP_OPEN_ATTR_TYPE;
        oa.qp_num  = ti.tgt.qpn;
        oa.qp_type = IBV_QPT_XRC_RECV;
        oa.xrcd    = x;
        SVT_NN(qp, ibv_open_qp(dev.ctx, &oa));
        xrc_post_srq(srq, mr, buf, XRC_SLOT, 77);
        SVT_OK(ibv_get_srq_num(srq, &ti.srqn[0]));
        svt_msg_send(p, 0, &ti.srqn[0], sizeof(ti.srqn[0]));
        svt_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_RECV, 77, &wc);
        SVT_CHECK(wc.qp_num == ti.tgt.qpn, "qp_num 0x%x, target 0x%x",
                  wc.qp_num, ti.tgt.qpn);
        SVT_CHECK(wc.byte_len == 1234, "byte_len %u", wc.byte_len);
        svt_pattern_check(buf, 1234, 0x99, "receive through an opened QP");
        svt_sync(p, 0);
        SVT_CHECK(ibv_close_xrcd(x) == EBUSY, "close with an SRQ and QP");
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_srq(srq));
        SVT_OK(ibv_destroy_cq(cq));
        SVT_OK(ibv_close_xrcd(x));
    }
    if (fd >= 0) {
        close(fd);
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

/* xrc/close_busy: a domain with an SRQ or a target QP made through the
 * handle is not closed (EBUSY, uverbs_free_xrcd), nor the CQ of an XRC
 * SRQ destroyed (EBUSY); once they are gone, both go */
static void svt_case_xrc_close_busy(svt_proc_t *p)
{
    struct ibv_xrcd *x;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_NN(x, xrc_open(&dev, -1, 0));
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    srq = xrc_srq(&dev, x, cq, 4);
    SVT_CHECK(ibv_close_xrcd(x) == EBUSY, "close_xrcd with an XRC SRQ");
    SVT_CHECK(ibv_destroy_cq(cq) == EBUSY, "destroy_cq of an XRC SRQ's CQ");
    SVT_OK(ibv_destroy_srq(srq));
    qp = xrc_tgt(&dev, x);
    SVT_CHECK(ibv_close_xrcd(x) == EBUSY, "close_xrcd with a target QP");
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_cq(cq));
    SVT_OK(ibv_close_xrcd(x));
    svt_dev_close(&dev);
}

/* xrc/caps_refused: the device reports XRC; an XRC SRQ has a number; the
 * QPs take only what their type has: a target has no queues (caps 0, no
 * send or receive WR), an initiator no receive queue and needs a send CQ;
 * a target needs its domain; an XRC SRQ serves no RC QP */
static void svt_case_xrc_caps_refused(svt_proc_t *p)
{
    struct ibv_qp_init_attr_ex qa;
    struct ibv_qp_init_attr ia;
    struct ibv_send_wr swr, *sbad;
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_xrcd *x;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *tgt, *ini;
    svt_dev_t dev;
    uint32_t n;

    svt_dev_open(&dev);
    SVT_CHECK(dev.attr.device_cap_flags & IBV_DEVICE_XRC,
              "IBV_DEVICE_XRC clear: 0x%x", dev.attr.device_cap_flags);
    SVT_NN(x, xrc_open(&dev, -1, 0));
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    srq = xrc_srq(&dev, x, cq, 4);
    SVT_OK(ibv_get_srq_num(srq, &n));
    SVT_CHECK(n != 0, "SRQ number 0");
    tgt = xrc_tgt(&dev, x);
    memset(&swr, 0, sizeof(swr));
    memset(&rwr, 0, sizeof(rwr));
    SVT_CHECK(ibv_post_send(tgt, &swr, &sbad) != 0, "send WR on a target");
    SVT_CHECK(ibv_post_recv(tgt, &rwr, &rbad) != 0, "recv WR on a target");
    ini = xrc_ini(&dev, cq, 0);
    SVT_CHECK(ibv_post_recv(ini, &rwr, &rbad) != 0, "recv WR on an XRC_SEND");
    memset(&qa, 0, sizeof(qa));
    qa.qp_type   = IBV_QPT_XRC_RECV;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD;
    qa.pd        = dev.pd;
    SVT_CHECK(ibv_create_qp_ex(dev.ctx, &qa) == NULL && errno == EINVAL,
              "XRC_RECV without a domain: errno %d", errno);
    memset(&qa, 0, sizeof(qa));
    qa.qp_type   = IBV_QPT_XRC_SEND;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD;
    qa.pd        = dev.pd;
    qa.cap.max_send_wr = 1;
    SVT_CHECK(ibv_create_qp_ex(dev.ctx, &qa) == NULL && errno == EINVAL,
              "XRC_SEND without a send CQ: errno %d", errno);
    memset(&ia, 0, sizeof(ia));
    ia.qp_type = IBV_QPT_RC;
    ia.send_cq = ia.recv_cq = cq;
    ia.srq     = srq;
    ia.cap.max_send_wr = 1;
    SVT_CHECK(ibv_create_qp(dev.pd, &ia) == NULL && errno == EINVAL,
              "RC QP on an XRC SRQ: errno %d", errno);
    SVT_OK(ibv_destroy_qp(ini));
    SVT_OK(ibv_destroy_qp(tgt));
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_cq(cq));
    SVT_OK(ibv_close_xrcd(x));
    svt_dev_close(&dev);
}

/* xrc/srq_limit: an XRC SRQ's limit event fires once when the SRQ's
 * WQEs drop below it (man ibv_modify_srq), consumed through a target */
static void svt_case_xrc_srq_limit(svt_proc_t *p)
{
    struct ibv_async_event ev;
    struct ibv_srq_attr sa;
    struct ibv_cq *scq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    xrc_tside_t t;
    xrc_info_t ti;
    svt_dev_t dev;
    uint8_t *buf;
    int i;

    svt_dev_open(&dev);
    buf = calloc(4, XRC_SLOT);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, 4 * XRC_SLOT, IBV_ACCESS_LOCAL_WRITE));
    memset(&ti, 0, sizeof(ti));
    if (p->rank == 1) {
        xrc_tside_create(p, &dev, &t, &ti, 8);
        for (i = 0; i < 4; i++) {
            xrc_post_srq(t.srq, mr, buf + i * XRC_SLOT, XRC_SLOT, i);
        }
        memset(&sa, 0, sizeof(sa));
        sa.srq_limit = 3;
        SVT_OK(ibv_modify_srq(t.srq, &sa, IBV_SRQ_LIMIT));
        svt_sync(p, 0);
        svt_wait_async(dev.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 5000, &ev);
        SVT_CHECK(ev.element.srq == t.srq, "limit event of another SRQ");
        for (i = 0; i < 2; i++) {
            svt_expect_wc(t.cq, IBV_WC_SUCCESS, IBV_WC_RECV, i, NULL);
        }
        SVT_OK(ibv_query_srq(t.srq, &sa));
        SVT_CHECK(sa.srq_limit == 0, "limit still armed: %u", sa.srq_limit);
        svt_sync(p, 0);
        xrc_tside_destroy(&t);
    } else {
        SVT_NN(scq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
        qp = xrc_ini_pair(p, 1, &dev, scq, 0, &ti);
        svt_sync(p, 1);
        for (i = 0; i < 2; i++) {
            SVT_OK(xrc_send(qp, mr, buf, 16, ti.srqn[0], i, 0));
            svt_expect_wc(scq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
        }
        svt_sync(p, 1);
        SVT_OK(ibv_destroy_qp(qp));
        SVT_OK(ibv_destroy_cq(scq));
    }
    SVT_OK(ibv_dereg_mr(mr));
    free(buf);
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_xrc[] = {
    {"xrc/caps_refused", svt_case_xrc_caps_refused, 1},
    {"xrc/close_busy", svt_case_xrc_close_busy, 1},
    {"xrc/send_srqs", svt_case_xrc_send_srqs, 2, 0},
    {"xrc/send_srqs_wr", svt_case_xrc_send_srqs, 2, 1},
    {"xrc/rdma", svt_case_xrc_rdma, 2},
    {"xrc/srq_other_xrcd", svt_case_xrc_wrong_srq, 2, 0},
    {"xrc/srq_unknown", svt_case_xrc_wrong_srq, 2, 1},
    {"xrc/xrcd_file", svt_case_xrc_xrcd_file, 2},
    {"xrc/open_qp", svt_case_xrc_open_qp, 3},
    {"xrc/srq_limit", svt_case_xrc_srq_limit, 2},
    {NULL}
};
