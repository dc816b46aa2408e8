/*
 * softverbs conformance: memory windows, part 1. The helpers of every
 * window case, the device capabilities, type 1 windows (ibv_bind_mw,
 * unbind, remote access within the window's range and rights), the
 * checks a bind fails (IBV_WC_MW_BIND_ERR), an MR with windows bound to it,
 * and windows on UC. Type 2 windows and invalidation are in
 * softverbs_conformance_mw_inv.c.
 *
 * Semantics: IBTA vol 1 10.6.7, as Linux rxe implements them (rxe_mw.c,
 * rxe_resp.c check_rkey), man ibv_alloc_mw(3), ibv_bind_mw(3),
 * ibv_post_send(3).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_mw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */
void svt_mw_opts(svt_ep_opts_t *o, enum ibv_qp_type type)
{
    svt_ep_opts_init(o, type);
    o->mr_access |= IBV_ACCESS_MW_BIND;
    if (type == IBV_QPT_UC) {
        o->mr_access &= ~IBV_ACCESS_REMOTE_ATOMIC;
        o->qp_access &= ~(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
    }
}

void svt_mw_ex_pair(svt_proc_t *p, int peer, svt_dev_t *dev,
                    const svt_ep_opts_t *o, svt_ep_t *ep)
{
    struct ibv_qp_init_attr_ex init;
    svt_addr_t mine, theirs;

    svt_ep_create(dev, o, ep);
    SVT_OK(ibv_destroy_qp(ep->qp));
    memset(&init, 0, sizeof(init));
    init.qp_type          = o->type;
    init.send_cq          = ep->cq;
    init.recv_cq          = ep->cq;
    init.cap.max_send_wr  = o->max_send_wr;
    init.cap.max_recv_wr  = o->max_recv_wr;
    init.cap.max_send_sge = o->max_send_sge;
    init.cap.max_recv_sge = o->max_recv_sge;
    init.comp_mask        = IBV_QP_INIT_ATTR_PD |
                            IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    init.pd               = dev->pd;
    init.send_ops_flags   = SVT_MW_OPS;
    SVT_NN(ep->qp, ibv_create_qp_ex(dev->ctx, &init));
    svt_ep_addr(ep, &mine);
    svt_msg_send(p, peer, &mine, sizeof(mine));
    svt_msg_recv(p, peer, &theirs, sizeof(theirs));
    svt_ep_connect(ep, &theirs);
    svt_sync(p, peer);
}

/* The completion of the bind or invalidation just posted */
static enum ibv_wc_status svt_mw_local_wc(svt_ep_t *ep, uint64_t wr_id,
                                          enum ibv_wc_opcode opcode)
{
    struct ibv_wc wc;

    svt_wait_wc(ep->cq, &wc, SVT_WC_TIMEOUT_MS);
    SVT_CHECK(wc.wr_id == wr_id, "wr_id %llu, expected %llu",
              (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
    SVT_CHECK((wc.status != IBV_WC_SUCCESS) || (wc.opcode == opcode),
              "opcode %d, expected %d", wc.opcode, opcode);
    return wc.status;
}

enum ibv_wc_status svt_mw_bind1(svt_ep_t *ep, struct ibv_mw *mw,
                                struct ibv_mr *mr, uint64_t addr,
                                uint64_t len, unsigned access)
{
    struct ibv_mw_bind b;

    memset(&b, 0, sizeof(b));
    b.wr_id                     = 0x1b;
    b.send_flags                = IBV_SEND_SIGNALED;
    b.bind_info.mr              = mr;
    b.bind_info.addr            = addr;
    b.bind_info.length          = len;
    b.bind_info.mw_access_flags = access;
    SVT_OK(ibv_bind_mw(ep->qp, mw, &b));
    return svt_mw_local_wc(ep, 0x1b, IBV_WC_BIND_MW);
}

enum ibv_wc_status svt_mw_bind2(svt_ep_t *ep, struct ibv_mw *mw,
                                struct ibv_mr *mr, uint64_t addr,
                                uint64_t len, unsigned access)
{
    struct ibv_send_wr wr, *bad;
    enum ibv_wc_status st;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id                             = 0x2b;
    wr.opcode                            = IBV_WR_BIND_MW;
    wr.send_flags                        = IBV_SEND_SIGNALED;
    wr.bind_mw.mw                        = mw;
    wr.bind_mw.rkey                      = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info.mr              = mr;
    wr.bind_mw.bind_info.addr            = addr;
    wr.bind_mw.bind_info.length          = len;
    wr.bind_mw.bind_info.mw_access_flags = access;
    SVT_OK(ibv_post_send(ep->qp, &wr, &bad));
    st = svt_mw_local_wc(ep, 0x2b, IBV_WC_BIND_MW);
    if (st == IBV_WC_SUCCESS) {
        /* a type 2 bind leaves the key to the consumer (ibv_post_send(3):
         * "the desired new rkey") */
        mw->rkey = wr.bind_mw.rkey;
    }
    return st;
}

enum ibv_wc_status svt_mw_local_inv(svt_ep_t *ep, uint32_t rkey)
{
    struct ibv_send_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id           = 0x1f;
    wr.opcode          = IBV_WR_LOCAL_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = rkey;
    SVT_OK(ibv_post_send(ep->qp, &wr, &bad));
    return svt_mw_local_wc(ep, 0x1f, IBV_WC_LOCAL_INV);
}

svt_mw_ans_t svt_mw_ask(svt_proc_t *p, int op, int qp, uint32_t rkey,
                        uint64_t raddr, uint32_t len, uint32_t seed,
                        uint64_t arg)
{
    svt_mw_cmd_t c;
    svt_mw_ans_t a;

    memset(&c, 0, sizeof(c));
    c.op    = op;
    c.qp    = qp;
    c.rkey  = rkey;
    c.raddr = raddr;
    c.len   = len;
    c.seed  = seed;
    c.arg   = arg;
    svt_msg_send(p, 1, &c, sizeof(c));
    memset(&a, 0, sizeof(a));
    if (op != SVT_MW_DONE) {
        svt_msg_recv(p, 1, &a, sizeof(a));
    }
    return a;
}

/* rank 1: run one command on ep */
static void svt_mw_run(svt_ep_t *ep, const svt_mw_cmd_t *c, svt_mw_ans_t *a)
{
    struct ibv_sge sge = {(uintptr_t)ep->buf, c->len, ep->mr->lkey};
    struct ibv_send_wr wr, *bad;
    struct ibv_qp_ex *qpx;
    struct ibv_wc wc;

    memset(&wr, 0, sizeof(wr));
    memset(ep->buf, 0, c->len + 8);
    wr.wr_id      = 0x77;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = c->raddr;
    wr.wr.rdma.rkey        = c->rkey;
    switch (c->op) {
    case SVT_MW_READ:
        wr.opcode = IBV_WR_RDMA_READ;
        break;
    case SVT_MW_WRITE:
        svt_fill(ep->buf, c->len, c->seed);
        wr.opcode = IBV_WR_RDMA_WRITE;
        break;
    case SVT_MW_FAA:
        memset(&wr.wr, 0, sizeof(wr.wr));
        sge.length = 8;
        wr.opcode                = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.wr.atomic.remote_addr = c->raddr;
        wr.wr.atomic.rkey        = c->rkey;
        wr.wr.atomic.compare_add = c->arg;
        break;
    case SVT_MW_SEND_INV:
        svt_fill(ep->buf, c->len, c->seed);
        memset(&wr.wr, 0, sizeof(wr.wr));
        wr.opcode          = IBV_WR_SEND_WITH_INV;
        wr.invalidate_rkey = c->rkey;
        break;
    default:
        break;
    }
    if (c->op == SVT_MW_SEND_INV_WR) {
        svt_fill(ep->buf, c->len, c->seed);
        SVT_NN(qpx, ibv_qp_to_qp_ex(ep->qp));
        ibv_wr_start(qpx);
        qpx->wr_id    = 0x77;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send_inv(qpx, c->rkey);
        ibv_wr_set_sge(qpx, ep->mr->lkey, (uintptr_t)ep->buf, c->len);
        SVT_OK(ibv_wr_complete(qpx));
    } else {
        SVT_OK(ibv_post_send(ep->qp, &wr, &bad));
    }
    svt_wait_wc(ep->cq, &wc, SVT_WC_TIMEOUT_MS);
    SVT_CHECK(wc.wr_id == 0x77, "wr_id %llu", (unsigned long long)wc.wr_id);
    a->status = wc.status;
    a->bad    = -1;
    if ((wc.status == IBV_WC_SUCCESS) && (c->op == SVT_MW_READ)) {
        a->bad = (int32_t)svt_verify(ep->buf, c->len, c->seed);
    }
    if ((wc.status == IBV_WC_SUCCESS) && (c->op == SVT_MW_FAA)) {
        memcpy(&a->value, ep->buf, 8);
    }
}

void svt_mw_peer(svt_proc_t *p, enum ibv_qp_type type, int nqp, int ex)
{
    svt_ep_t eps[2];
    svt_ep_opts_t o;
    svt_mw_cmd_t c;
    svt_mw_ans_t a;
    svt_dev_t dev;
    int i;

    svt_dev_open(&dev);
    svt_mw_opts(&o, type);
    for (i = 0; i < nqp; ++i) {
        if (ex) {
            svt_mw_ex_pair(p, 0, &dev, &o, &eps[i]);
        } else {
            svt_ep_pair(p, 0, &dev, &o, &eps[i]);
        }
    }
    for (;;) {
        svt_msg_recv(p, 0, &c, sizeof(c));
        if (c.op == SVT_MW_DONE) {
            break;
        }
        SVT_CHECK((c.qp >= 0) && (c.qp < nqp), "command for QP %d", c.qp);
        memset(&a, 0, sizeof(a));
        svt_mw_run(&eps[c.qp], &c, &a);
        svt_msg_send(p, 0, &a, sizeof(a));
    }
    for (i = 0; i < nqp; ++i) {
        svt_ep_destroy(&eps[i]);
    }
    svt_dev_close(&dev);
}

void svt_mw_expect_denied(svt_dev_t *dev, svt_ep_t *ep)
{
    SVT_CHECK(svt_qp_state(ep->qp) == IBV_QPS_ERR, "responder QP in state "
              "%d after an access the window refused, not ERR",
              svt_qp_state(ep->qp));
    svt_wait_async(dev->ctx, IBV_EVENT_QP_ACCESS_ERR, 2000, NULL);
}

/* A READ through the window that must work and return pattern seed */
static void svt_mw_read_ok(svt_proc_t *p, int qp, uint32_t rkey,
                           uint64_t raddr, uint32_t len, uint32_t seed)
{
    svt_mw_ans_t a = svt_mw_ask(p, SVT_MW_READ, qp, rkey, raddr, len, seed,
                                0);

    SVT_CHECK(a.status == IBV_WC_SUCCESS, "RDMA READ through window key 0x%x: "
              "%s", rkey, ibv_wc_status_str(a.status));
    SVT_CHECK(a.bad < 0, "RDMA READ through the window: byte %d wrong",
              a.bad);
}

/* ---------------------------------------------------------------------
 * Capabilities and allocation
 * ------------------------------------------------------------------- */

/* Windows are offered as rxe offers them: IBV_DEVICE_MEM_WINDOW and
 * _TYPE_2B (not 2A), max_mw > 0, in ibv_query_device_ex too; both types
 * allocate, another type is EINVAL; a window holds its PD */
static void svt_case_mw_caps(svt_proc_t *p)
{
    struct ibv_device_attr_ex ax;
    struct ibv_mw *mw1, *mw2;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_CHECK((dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
              (dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
              !(dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A),
              "device_cap_flags 0x%x: want MEM_WINDOW and TYPE_2B, not 2A",
              dev.attr.device_cap_flags);
    SVT_CHECK(dev.attr.max_mw > 0, "max_mw %d", dev.attr.max_mw);
    SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
    SVT_CHECK((ax.device_cap_flags_ex & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
              (ax.orig_attr.max_mw == dev.attr.max_mw),
              "device_cap_flags_ex 0x%llx, max_mw %d",
              (unsigned long long)ax.device_cap_flags_ex, ax.orig_attr.max_mw);

    SVT_NN(mw1, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    SVT_NN(mw2, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    SVT_CHECK((mw1->type == IBV_MW_TYPE_1) && (mw2->type == IBV_MW_TYPE_2) &&
              (mw1->pd == dev.pd) && (mw1->context == dev.ctx),
              "window fields: types %d/%d", mw1->type, mw2->type);
    SVT_CHECK((mw1->rkey != 0) && (mw2->rkey != 0) &&
              ((mw1->rkey >> 8) != (mw2->rkey >> 8)),
              "window keys 0x%x 0x%x", mw1->rkey, mw2->rkey);
    errno = 0;
    SVT_CHECK((ibv_alloc_mw(dev.pd, (enum ibv_mw_type)3) == NULL) &&
              (errno == EINVAL), "window of type 3: errno %d", errno);
    /* man ibv_dealloc_pd: fails while an object uses the PD */
    SVT_CHECK(ibv_dealloc_pd(dev.pd) == EBUSY, "PD with windows deallocated");
    SVT_OK(ibv_dealloc_mw(mw1));
    SVT_OK(ibv_dealloc_mw(mw2));
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * Type 1
 * ------------------------------------------------------------------- */

/* ibv_bind_mw of a type 1 window: the bind completes with IBV_WC_BIND_MW
 * and gives the window a new key (its 8-bit key the next one, man
 * ibv_bind_mw, ibv_inc_rkey); rank 1 reads, writes and adds through it
 * (data checked); a rebind to another range gives another key, through
 * which the new range is read, and the old key is refused with a remote
 * access error at rank 1 and IBV_EVENT_QP_ACCESS_ERR at rank 0, as an MR
 * key would be */
static void svt_case_mw_type1_remote(svt_proc_t *p)
{
    uint32_t key0, key1;
    svt_ep_opts_t o;
    svt_mw_ans_t a;
    svt_dev_t dev;
    struct ibv_mw *mw;
    uint64_t win, v;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_dev_open(&dev);
    svt_mw_opts(&o, IBV_QPT_RC);
    svt_ep_pair(p, 1, &dev, &o, &ep);
    win = (uintptr_t)ep.buf + 4096;
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    key0 = mw->rkey;
    SVT_CHECK(svt_mw_bind1(&ep, mw, ep.mr, win, 8192, SVT_MW_RWA) ==
              IBV_WC_SUCCESS, "type 1 bind failed");
    key1 = mw->rkey;
    SVT_CHECK(key1 == ibv_inc_rkey(key0), "key after the bind 0x%x, before "
              "0x%x", key1, key0);

    svt_fill(ep.buf + 4096 + 100, 1000, 11);
    svt_mw_read_ok(p, 0, key1, win + 100, 1000, 11);
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, key1, win + 2048, 512, 12, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "RDMA WRITE through the window: %s",
              ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + 4096 + 2048, 512, 12, "written through window");
    v = 100;
    memcpy(ep.buf + 4096 + 8, &v, 8);
    a = svt_mw_ask(p, SVT_MW_FAA, 0, key1, win + 8, 8, 0, 5);
    SVT_CHECK((a.status == IBV_WC_SUCCESS) && (a.value == 100), "fetch-and-add "
              "through the window: %s, fetched %llu",
              ibv_wc_status_str(a.status), (unsigned long long)a.value);
    memcpy(&v, ep.buf + 4096 + 8, 8);
    SVT_CHECK(v == 105, "after fetch-and-add 5: %llu", (unsigned long long)v);

    /* rebind: read-only, another range, another key */
    SVT_CHECK(svt_mw_bind1(&ep, mw, ep.mr, (uintptr_t)ep.buf + 16384, 4096,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "rebind failed");
    SVT_CHECK(mw->rkey != key1, "rebind kept key 0x%x", key1);
    svt_fill(ep.buf + 16384, 4096, 13);
    svt_mw_read_ok(p, 0, mw->rkey, (uintptr_t)ep.buf + 16384, 4096, 13);
    a = svt_mw_ask(p, SVT_MW_READ, 0, key1, win + 100, 64, 11, 0);
    SVT_CHECK(a.status == IBV_WC_REM_ACCESS_ERR, "READ with the key of the "
              "earlier bind: %s", ibv_wc_status_str(a.status));
    svt_mw_expect_denied(&dev, &ep);
    svt_mw_ask(p, SVT_MW_DONE, 0, 0, 0, 0, 0, 0);
    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* A bind of length 0 unbinds a type 1 window (rxe_do_bind_mw: no MR): it
 * completes, the window keeps a (new) key, and remote access through it is
 * refused */
static void svt_case_mw_type1_unbind(svt_proc_t *p)
{
    svt_ep_opts_t o;
    svt_mw_ans_t a;
    svt_dev_t dev;
    struct ibv_mw *mw;
    uint32_t bound;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_dev_open(&dev);
    svt_mw_opts(&o, IBV_QPT_RC);
    svt_ep_pair(p, 1, &dev, &o, &ep);
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    SVT_CHECK(svt_mw_bind1(&ep, mw, ep.mr, (uintptr_t)ep.buf, 4096,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "bind failed");
    bound = mw->rkey;
    svt_fill(ep.buf, 4096, 3);
    svt_mw_read_ok(p, 0, bound, (uintptr_t)ep.buf, 4096, 3);
    SVT_CHECK(svt_mw_bind1(&ep, mw, NULL, 0, 0, 0) == IBV_WC_SUCCESS,
              "unbind (length 0) failed");
    SVT_CHECK(mw->rkey != bound, "unbind kept key 0x%x", bound);
    a = svt_mw_ask(p, SVT_MW_READ, 0, mw->rkey, (uintptr_t)ep.buf, 64, 3, 0);
    SVT_CHECK(a.status == IBV_WC_REM_ACCESS_ERR, "READ through an unbound "
              "window: %s", ibv_wc_status_str(a.status));
    svt_mw_expect_denied(&dev, &ep);
    svt_mw_ask(p, SVT_MW_DONE, 0, 0, 0, 0, 0, 0);
    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * Bind errors: each fails its completion with IBV_WC_MW_BIND_ERR and
 * takes the QP to ERR (rxe_do_local_ops), or is refused at the post
 * ------------------------------------------------------------------- */
enum {
    SVT_BE_NO_MW_BIND,   /* MR without IBV_ACCESS_MW_BIND (C10-73) */
    SVT_BE_PAST_MR,      /* range beyond the MR (C10-75) */
    SVT_BE_NO_LOCAL_WR,  /* writable window, MR without local write */
    SVT_BE_ACCESS,       /* an access flag windows do not take */
    SVT_BE_T2_LEN0,      /* type 2 of length 0 (o10-37.2.40) */
    SVT_BE_T2_BOUND,     /* type 2 bound already (o10-37.2.30) */
    SVT_BE_T2_OTHER_PD,  /* type 2 on a QP of another PD (C10-72) */
    SVT_BE_STALE_KEY,    /* the WR names the window by an old key */
    SVT_BE_COUNT,
};

static void svt_case_mw_bind_errors(svt_proc_t *p)
{
    static const char *const what[SVT_BE_COUNT] = {
        "MR without MW_BIND", "range past the MR", "writable window on an "
        "MR without local write", "access flag HUGETLB", "type 2 of length 0",
        "type 2 bound twice", "type 2 on a QP of another PD",
        "window named by a stale key",
    };
    struct ibv_mr *mr;
    struct ibv_mw *mw;
    struct ibv_pd *pd2;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    int i, acc;
    enum ibv_wc_status st = IBV_WC_SUCCESS;
    uint64_t base;

    svt_dev_open(&dev);
    SVT_NN(pd2, ibv_alloc_pd(dev.ctx));
    for (i = 0; i < SVT_BE_COUNT; ++i) {
        svt_mw_opts(&o, IBV_QPT_RC);
        svt_ep_local_pair(&dev, &o, &a, &b);
        acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND |
              IBV_ACCESS_REMOTE_READ;
        if (i == SVT_BE_NO_MW_BIND) {
            acc &= ~IBV_ACCESS_MW_BIND;
        } else if (i == SVT_BE_NO_LOCAL_WR) {
            acc &= ~IBV_ACCESS_LOCAL_WRITE;
        }
        SVT_NN(mr, ibv_reg_mr((i == SVT_BE_T2_OTHER_PD) ? pd2 : dev.pd,
                              a.buf, 8192, acc));
        SVT_NN(mw, ibv_alloc_mw((i == SVT_BE_T2_OTHER_PD) ? pd2 : dev.pd,
                                ((i >= SVT_BE_T2_LEN0) &&
                                 (i <= SVT_BE_T2_OTHER_PD)) ?
                                IBV_MW_TYPE_2 : IBV_MW_TYPE_1));
        base = (uintptr_t)a.buf;
        switch (i) {
        case SVT_BE_NO_MW_BIND:
            st = svt_mw_bind1(&a, mw, mr, base, 4096, IBV_ACCESS_REMOTE_READ);
            break;
        case SVT_BE_PAST_MR:
            st = svt_mw_bind1(&a, mw, mr, base + 4096, 8192,
                              IBV_ACCESS_REMOTE_READ);
            break;
        case SVT_BE_NO_LOCAL_WR:
            st = svt_mw_bind1(&a, mw, mr, base, 4096, IBV_ACCESS_REMOTE_WRITE);
            break;
        case SVT_BE_ACCESS:
            st = svt_mw_bind1(&a, mw, mr, base, 4096, IBV_ACCESS_HUGETLB);
            break;
        case SVT_BE_T2_LEN0:
            st = svt_mw_bind2(&a, mw, mr, base, 0, IBV_ACCESS_REMOTE_READ);
            break;
        case SVT_BE_T2_BOUND:
            SVT_CHECK(svt_mw_bind2(&a, mw, mr, base, 4096,
                                   IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
                      "first type 2 bind failed");
            st = svt_mw_bind2(&a, mw, mr, base, 4096, IBV_ACCESS_REMOTE_READ);
            break;
        case SVT_BE_T2_OTHER_PD:
            /* window and MR in pd2, the QP in the device's PD */
            st = svt_mw_bind2(&a, mw, mr, base, 4096, IBV_ACCESS_REMOTE_READ);
            break;
        case SVT_BE_STALE_KEY:
            mw->rkey = ibv_inc_rkey(ibv_inc_rkey(mw->rkey));
            st = svt_mw_bind1(&a, mw, mr, base, 4096, IBV_ACCESS_REMOTE_READ);
            break;
        }
        SVT_CHECK(st == IBV_WC_MW_BIND_ERR, "%s: bind completed with %s, "
                  "expected %s", what[i], ibv_wc_status_str(st),
                  ibv_wc_status_str(IBV_WC_MW_BIND_ERR));
        SVT_CHECK(svt_qp_state(a.qp) == IBV_QPS_ERR, "%s: QP in state %d "
                  "after a bind error", what[i], svt_qp_state(a.qp));
        SVT_OK(ibv_dealloc_mw(mw));
        SVT_OK(ibv_dereg_mr(mr));
        svt_ep_destroy(&a);
        svt_ep_destroy(&b);
    }
    /* checked when posted: a zero-based type 1 window (rxe's provider,
     * rxe_bind_mw: EINVAL) */
    svt_mw_opts(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &a, &b);
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    {
        struct ibv_mw_bind bind = {
            .wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
            .bind_info = {a.mr, (uintptr_t)a.buf, 4096,
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED},
        };
        SVT_CHECK(ibv_bind_mw(a.qp, mw, &bind) == EINVAL, "zero-based type 1 "
                  "bind not refused with EINVAL");
    }
    svt_expect_no_wc(a.cq, 10);
    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_dealloc_pd(pd2));
    svt_dev_close(&dev);
}

/* An MR with windows bound to it is not deregistered (rxe_dereg_mr:
 * EINVAL while num_mw > 0), whether a type 1 or a type 2 window holds it;
 * unbinding, invalidating or deallocating the window releases it */
static void svt_case_mw_dereg_bound_mr(svt_proc_t *p)
{
    struct ibv_mw *mw1, *mw2;
    struct ibv_mr *mr;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint64_t base;

    svt_dev_open(&dev);
    svt_mw_opts(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &a, &b);
    base = (uintptr_t)a.buf + 32768;
    SVT_NN(mr, ibv_reg_mr(dev.pd, a.buf + 32768, 8192,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND));
    SVT_NN(mw1, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    SVT_NN(mw2, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    SVT_CHECK(svt_mw_bind1(&a, mw1, mr, base, 4096, IBV_ACCESS_REMOTE_READ) ==
              IBV_WC_SUCCESS, "type 1 bind");
    SVT_CHECK(svt_mw_bind2(&a, mw2, mr, base + 4096, 4096,
                           IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS,
              "type 2 bind");
    SVT_CHECK(ibv_dereg_mr(mr) == EINVAL, "MR with 2 windows deregistered");
    SVT_CHECK(svt_mw_bind1(&a, mw1, NULL, 0, 0, 0) == IBV_WC_SUCCESS,
              "type 1 unbind");
    SVT_CHECK(ibv_dereg_mr(mr) == EINVAL, "MR with a type 2 window "
              "deregistered");
    SVT_CHECK(svt_mw_local_inv(&a, mw2->rkey) == IBV_WC_SUCCESS,
              "local invalidation");
    SVT_CHECK(svt_mw_bind1(&a, mw1, mr, base, 8192, IBV_ACCESS_REMOTE_READ) ==
              IBV_WC_SUCCESS, "type 1 bind again");
    SVT_CHECK(ibv_dereg_mr(mr) == EINVAL, "MR with a window deregistered");
    SVT_OK(ibv_dealloc_mw(mw1));
    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(ibv_dealloc_mw(mw2));
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    svt_dev_close(&dev);
}

/* UC takes windows too (ibv_bind_mw(3): UC, RC, XRC): an RDMA WRITE
 * through a window lands; one outside it is dropped without a NAK (UC),
 * the requester completes, nothing is written, and the QP stays usable */
static void svt_case_mw_uc(svt_proc_t *p)
{
    svt_ep_opts_t o;
    svt_mw_ans_t a;
    svt_dev_t dev;
    struct ibv_mw *mw;
    uint64_t win;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_UC, 1, 0);
        return;
    }
    svt_dev_open(&dev);
    svt_mw_opts(&o, IBV_QPT_UC);
    svt_ep_pair(p, 1, &dev, &o, &ep);
    win = (uintptr_t)ep.buf + 8192;
    memset(ep.buf, 0xab, ep.size);
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1));
    SVT_CHECK(svt_mw_bind1(&ep, mw, ep.mr, win, 4096,
                           IBV_ACCESS_REMOTE_WRITE) == IBV_WC_SUCCESS,
              "bind on UC failed");
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, mw->rkey, win + 1000, 1000, 31, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "UC WRITE: %s",
              ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + 8192 + 1000, 1000, 31, "UC write via window");
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, mw->rkey, win + 4000, 1000, 32, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "UC WRITE past the window: %s",
              ibv_wc_status_str(a.status));
    svt_memset_check(ep.buf + 8192 + 4000, 1000, 0xab, "UC write past the "
                     "window");
    SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_RTS, "UC QP state %d",
              svt_qp_state(ep.qp));
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, mw->rkey, win, 4096, 33, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "UC WRITE after the drop: %s",
              ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + 8192, 4096, 33, "UC write after the drop");
    svt_mw_ask(p, SVT_MW_DONE, 0, 0, 0, 0, 0, 0);
    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* ibv_create_qp_ex takes the window operations on RC and UC (mlx5's
 * MLX5_SUPPORTED_SEND_OPS_FLAGS_RC/_UC), not on UD (EOPNOTSUPP) */
static void svt_case_mw_send_ops(svt_proc_t *p)
{
    static const uint64_t mw_ops[] = {
        IBV_QP_EX_WITH_BIND_MW, IBV_QP_EX_WITH_LOCAL_INV,
        IBV_QP_EX_WITH_SEND_WITH_INV,
    };
    struct ibv_qp_init_attr_ex init;
    enum ibv_qp_type t;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (t = IBV_QPT_RC; t <= IBV_QPT_UD; ++t) {
        for (i = 0; i < sizeof(mw_ops) / sizeof(mw_ops[0]); ++i) {
            memset(&init, 0, sizeof(init));
            init.qp_type = t;
            init.send_cq = init.recv_cq = cq;
            init.cap.max_send_wr = init.cap.max_recv_wr = 4;
            init.cap.max_send_sge = init.cap.max_recv_sge = 1;
            init.comp_mask = IBV_QP_INIT_ATTR_PD |
                             IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
            init.pd             = dev.pd;
            init.send_ops_flags = IBV_QP_EX_WITH_SEND | mw_ops[i];
            errno = 0;
            qp    = ibv_create_qp_ex(dev.ctx, &init);
            if (t == IBV_QPT_UD) {
                SVT_CHECK((qp == NULL) && (errno == EOPNOTSUPP), "UD QP with "
                          "window op 0x%llx: errno %d",
                          (unsigned long long)mw_ops[i], errno);
            } else {
                SVT_CHECK(qp != NULL, "%s QP with window op 0x%llx: errno %d",
                          (t == IBV_QPT_RC) ? "RC" : "UC",
                          (unsigned long long)mw_ops[i], errno);
                SVT_OK(ibv_destroy_qp(qp));
            }
        }
    }
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_mw[] = {
    {"mw/caps", svt_case_mw_caps, 1},
    {"mw/type1_remote", svt_case_mw_type1_remote, 2},
    {"mw/type1_unbind", svt_case_mw_type1_unbind, 2},
    {"mw/bind_errors", svt_case_mw_bind_errors, 1},
    {"mw/dereg_bound_mr", svt_case_mw_dereg_bound_mr, 1},
    {"mw/uc", svt_case_mw_uc, 2},
    {"mw/send_ops", svt_case_mw_send_ops, 1},
    {NULL}
};
