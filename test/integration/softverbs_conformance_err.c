/*
 * softverbs conformance: error semantics. Remote access violations, flushes,
 * RNR, a dead peer, CQ overrun, UD send-queue errors, resource limits.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVT_VICTIM_LEN 4096
#define SVT_VICTIM_VAL 0x5c

enum {
    SVT_ACC_BAD_RKEY_WRITE,
    SVT_ACC_BAD_RKEY_READ,
    SVT_ACC_OOB_WRITE,
    SVT_ACC_OOB_READ,
    SVT_ACC_NO_REMOTE_WRITE,
    SVT_ACC_NO_REMOTE_READ,
    SVT_ACC_NO_REMOTE_ATOMIC,
    SVT_ACC_DEREGISTERED,  /* rkey of an MR deregistered before the write */
    SVT_ACC_OTHER_PD,      /* MR in another PD than the target QP */
    SVT_ACC_QP_NO_WRITE,   /* MR allows it, the QP's access flags do not */
    SVT_ACC_UNSIGNALED,    /* bad rkey on an unsignaled WR: still completes */
};

static int svt_acc_mr_access(int kind)
{
    int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

    switch (kind) {
    case SVT_ACC_NO_REMOTE_WRITE:
        return all & ~IBV_ACCESS_REMOTE_WRITE;
    case SVT_ACC_NO_REMOTE_READ:
        return all & ~IBV_ACCESS_REMOTE_READ;
    case SVT_ACC_NO_REMOTE_ATOMIC:
        return all & ~IBV_ACCESS_REMOTE_ATOMIC;
    default:
        return all;
    }
}

static void svt_expect_qp_event(svt_dev_t *dev, svt_ep_t *ep, int event)
{
    struct ibv_async_event ev;

    svt_wait_async(dev->ctx, event, SVT_WC_TIMEOUT_MS, &ev);
    SVT_CHECK(ev.element.qp == ep->qp, "%s names qp %p, expected %p",
              ibv_event_type_str(event), (void *)ev.element.qp,
              (void *)ep->qp);
}

/*
 * The responder of an RC request that failed its checks (rxe's class C): its
 * QP is in ERR, with IBV_EVENT_QP_ACCESS_ERR when event is not -1, and the
 * receive WQE flush_id (posted before the error) is flushed; on an SRQ, it
 * stays there, and the QP reports IBV_EVENT_QP_LAST_WQE_REACHED.
 */
static void svt_expect_responder_err(svt_dev_t *dev, svt_ep_t *ep, int event,
                                     uint64_t flush_id)
{
    if (ep->o.srq == NULL) {
        svt_expect_wc(ep->cq, IBV_WC_WR_FLUSH_ERR, -1, flush_id, NULL);
    }
    SVT_CHECK(svt_qp_state(ep->qp) == IBV_QPS_ERR, "responder QP state %d "
              "after the NAK, expected ERR", svt_qp_state(ep->qp));
    if (event >= 0) {
        svt_expect_qp_event(dev, ep, event);
    }
    if (ep->o.srq != NULL) {
        svt_expect_qp_event(dev, ep, IBV_EVENT_QP_LAST_WQE_REACHED);
        svt_expect_no_wc(ep->cq, 50);
    }
}

/*
 * Rank 1 exposes a "victim" MR filled with a marker. Rank 0 violates the
 * access rules once, then posts a valid write: the first WR completes with
 * REM_ACCESS_ERR, the QP is in ERR, the next WRs flush, and neither the
 * victim nor the valid target is modified. Rank 1's QP goes to ERR too,
 * with IBV_EVENT_QP_ACCESS_ERR, and its posted receive is flushed.
 */
static void svt_case_access(svt_proc_t *p)
{
    int kind = (int)p->arg;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_mr *vmr;
    uint8_t *victim;
    svt_addr_t va;
    enum ibv_wr_opcode op;
    uint64_t raddr;
    uint32_t rkey;
    size_t len = 64;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.retry_cnt = 1;
    o.buf_size  = 8192;
    if ((p->rank == 1) && (kind == SVT_ACC_QP_NO_WRITE)) {
        o.qp_access &= ~IBV_ACCESS_REMOTE_WRITE;
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        struct ibv_pd *vpd = dev.pd;

        SVT_CHECK(posix_memalign((void **)&victim, 4096, SVT_VICTIM_LEN) == 0,
                  "out of memory");
        memset(victim, SVT_VICTIM_VAL, SVT_VICTIM_LEN);
        memset(ep.buf, SVT_VICTIM_VAL, ep.size);
        if (kind == SVT_ACC_OTHER_PD) {
            SVT_NN(vpd, ibv_alloc_pd(dev.ctx));
        }
        SVT_NN(vmr, ibv_reg_mr(vpd, victim, SVT_VICTIM_LEN,
                               svt_acc_mr_access(kind)));
        memset(&va, 0, sizeof(va));
        va.addr = (uintptr_t)victim;
        va.rkey = vmr->rkey;
        if (kind == SVT_ACC_DEREGISTERED) {
            SVT_OK(ibv_dereg_mr(vmr));
            vmr = NULL;
        }
        svt_post_recv(&ep, 0, 64, 7);
        svt_msg_send(p, 0, &va, sizeof(va));
        svt_sync(p, 0); /* rank 0 saw its completions */
        svt_expect_responder_err(&dev, &ep, IBV_EVENT_QP_ACCESS_ERR, 7);
        svt_memset_check(victim, SVT_VICTIM_LEN, SVT_VICTIM_VAL,
                         "victim MR after the rejected access");
        svt_memset_check(ep.buf, ep.size, SVT_VICTIM_VAL,
                         "target after flushed writes");
        if (vmr != NULL) {
            SVT_OK(ibv_dereg_mr(vmr));
        }
        if (vpd != dev.pd) {
            SVT_OK(ibv_dealloc_pd(vpd));
        }
        free(victim);
    } else {
        svt_msg_recv(p, 1, &va, sizeof(va));
        raddr = va.addr;
        rkey  = va.rkey;
        op    = IBV_WR_RDMA_WRITE;
        switch (kind) {
        case SVT_ACC_BAD_RKEY_READ:
            op = IBV_WR_RDMA_READ;
            /* fallthrough */
        case SVT_ACC_BAD_RKEY_WRITE:
        case SVT_ACC_UNSIGNALED:
            rkey = va.rkey ^ 0x5a5a00;
            break;
        case SVT_ACC_OOB_READ:
            op = IBV_WR_RDMA_READ;
            /* fallthrough */
        case SVT_ACC_OOB_WRITE:
            raddr = va.addr + SVT_VICTIM_LEN - len / 2; /* straddles the end */
            break;
        case SVT_ACC_NO_REMOTE_READ:
            op = IBV_WR_RDMA_READ;
            break;
        case SVT_ACC_NO_REMOTE_ATOMIC:
            op  = IBV_WR_ATOMIC_FETCH_AND_ADD;
            len = 8;
            break;
        default:
            break;
        }
        memset(ep.buf, 0x77, ep.size);
        SVT_OK(svt_post_send(&ep, op, 0, len, raddr, rkey, 0,
                             (kind == SVT_ACC_UNSIGNALED) ? 0 :
                             IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_REM_ACCESS_ERR, -1, 1, NULL);
        SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_ERR, "QP state %d after "
                  "REM_ACCESS_ERR, expected ERR", svt_qp_state(ep.qp));
        /* posting in ERR is allowed and flushes */
        SVT_OK(svt_post_send(&ep, p->arg ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, 0,
                         p->arg ? 8 : 64, svt_raddr(&ep, 0),
                             ep.remote.rkey, 0, IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 2, NULL);
        svt_memset_check(ep.buf, ep.size, 0x77, "local buffer of a failed op");
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/*
 * An MR on an unaligned address and odd length: accesses of exactly its
 * range succeed (write, then read back), one byte past its end fails
 */
static void svt_case_mr_exact_bounds(svt_proc_t *p)
{
    const size_t off = 3, len = 1001;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_mr *mr;
    svt_addr_t va;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.retry_cnt = 1;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        memset(ep.buf, SVT_VICTIM_VAL, ep.size);
        SVT_NN(mr, ibv_reg_mr(dev.pd, ep.buf + 4096 + off, len,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ));
        memset(&va, 0, sizeof(va));
        va.addr = (uintptr_t)ep.buf + 4096 + off;
        va.rkey = mr->rkey;
        svt_msg_send(p, 0, &va, sizeof(va));
        svt_sync(p, 0);
        svt_memset_check(ep.buf + 4096, off, SVT_VICTIM_VAL, "before the MR");
        svt_pattern_check(ep.buf + 4096 + off, len, 0x99, "the MR's range");
        svt_memset_check(ep.buf + 4096 + off + len, 64, SVT_VICTIM_VAL,
                         "after the MR");
    } else {
        svt_msg_recv(p, 1, &va, sizeof(va));
        svt_fill(ep.buf, len, 0x99);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, len, va.addr, va.rkey,
                             0, IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_READ, 8192, len, va.addr,
                             va.rkey, 0, IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2, NULL);
        svt_pattern_check(ep.buf + 8192, len, 0x99, "read of the MR's range");
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 1, va.addr + len,
                             va.rkey, 0, IBV_SEND_SIGNALED, 3));
        svt_expect_wc(ep.cq, IBV_WC_REM_ACCESS_ERR, -1, 3, NULL);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/* RC requests that the responder NAKs (rxe's class A/C errors) */
typedef struct {
    enum ibv_wr_opcode op;
    size_t             off;        /* remote offset */
    uint32_t           rkey_xor;   /* spoils the rkey */
    size_t             len;
    size_t             recv_len;   /* of the responder's two receives */
    enum ibv_wc_status req_status; /* at the requester */
    enum ibv_wc_status wqe_status; /* of the responder's first receive */
    int                event;      /* at the responder, or -1 */
    int                srq;        /* the responder's QP on an SRQ */
} svt_resp_err_t;

static const svt_resp_err_t svt_resp_errs[] = {
    /* bad rkey: the receive WQE a WRITE_WITH_IMM consumes completes with
     * REM_ACCESS_ERR (rxe checks the receive WQE before the rkey) */
    {IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0x5a5a00, 64, 64, IBV_WC_REM_ACCESS_ERR,
     IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR},
    /* misaligned atomic */
    {IBV_WR_ATOMIC_FETCH_AND_ADD, 4, 0, 8, 64, IBV_WC_REM_INV_REQ_ERR,
     IBV_WC_WR_FLUSH_ERR, IBV_EVENT_QP_ACCESS_ERR},
    /* receive buffer too small: the error has a completion, no event */
    {IBV_WR_SEND, 0, 0, 200, 100, IBV_WC_REM_INV_REQ_ERR, IBV_WC_LOC_LEN_ERR,
     -1},
    /* bad rkey to a QP on an SRQ: the SRQ keeps its other WQE */
    {IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0x5a5a00, 64, 64, IBV_WC_REM_ACCESS_ERR,
     IBV_WC_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR, 1},
};

/*
 * Rank 0 posts a request the responder rejects (svt_resp_errs[arg]): its WR
 * completes with req_status; rank 1's first receive completes with
 * wqe_status, its second is flushed, its QP is in ERR (with the event), and
 * an RDMA target is left untouched.
 */
static void svt_case_resp_err(svt_proc_t *p)
{
    const svt_resp_err_t *e = &svt_resp_errs[p->arg];
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.retry_cnt = 1;
    if ((p->rank == 1) && e->srq) {
        SVT_NN(o.srq, ibv_create_srq(dev.pd, &sa));
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        memset(ep.buf + 4096, SVT_VICTIM_VAL, ep.size - 4096);
        svt_post_recv(&ep, 0, e->recv_len, 1);
        svt_post_recv(&ep, 0, e->recv_len, 2);
        svt_sync(p, 0);
        svt_expect_wc(ep.cq, e->wqe_status, -1, 1, NULL);
        svt_expect_responder_err(&dev, &ep, e->event, 2);
        svt_memset_check(ep.buf + 4096, ep.size - 4096, SVT_VICTIM_VAL,
                         "target of a rejected request");
    } else {
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, e->op, 0, e->len,
                             svt_raddr(&ep, 4096 + e->off),
                             ep.remote.rkey ^ e->rkey_xor, 0x1234,
                             IBV_SEND_SIGNALED, 3));
        svt_expect_wc(ep.cq, e->req_status, -1, 3, NULL);
    }
    svt_sync(p, !p->rank);
}

/*
 * UC has no NAK: an RDMA WRITE with a bad rkey is dropped by the responder
 * (rxe: class D/E drop), the requester completes it successfully, both QPs
 * stay in RTS, and a following valid write lands.
 */
static void svt_case_uc_bad_rkey(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UC);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        memset(ep.buf, SVT_VICTIM_VAL, ep.size);
        svt_sync(p, 0);
        svt_sync(p, 0); /* rank 0 saw its completions */
        svt_memset_check(ep.buf, 64, 0x77, "target of the valid write");
        svt_memset_check(ep.buf + 64, 64, SVT_VICTIM_VAL,
                         "target of the dropped write");
        SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_RTS, "responder QP state "
                  "%d after a dropped UC write, expected RTS",
                  svt_qp_state(ep.qp));
        SVT_CHECK(!svt_wait_fd(dev.ctx->async_fd, 50),
                  "async event after a dropped UC write");
    } else {
        memset(ep.buf, 0x77, ep.size);
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 64,
                             svt_raddr(&ep, 64), ep.remote.rkey ^ 0x5a5a00,
                             0, IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
        SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_RTS, "requester QP state "
                  "%d after a UC write to a bad rkey, expected RTS",
                  svt_qp_state(ep.qp));
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 64,
                             svt_raddr(&ep, 0), ep.remote.rkey, 0,
                             IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 2, NULL);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/*
 * The responder's own send queue: a SEND of rank 1 waits on RNR (rank 0
 * posts no receive, infinite rnr_retry) when rank 0's bad-rkey write moves
 * rank 1's QP to ERR; rank 1's next poll flushes that SEND.
 */
static void svt_case_resp_sq_flushed(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.rnr_retry     = 7;
    o.min_rnr_timer = 1;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 8, 0, 0, 0,
                             IBV_SEND_SIGNALED, 1));
        svt_expect_no_wc(ep.cq, 20); /* RNR retries */
        svt_sync(p, 0);
        svt_sync(p, 0); /* rank 0 saw its REM_ACCESS_ERR */
        svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 1, NULL);
        SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_ERR, "responder QP state "
                  "%d, expected ERR", svt_qp_state(ep.qp));
    } else {
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 64,
                             svt_raddr(&ep, 0), ep.remote.rkey ^ 0x5a5a00, 0,
                             IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep.cq, IBV_WC_REM_ACCESS_ERR, -1, 2, NULL);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/* An RC QP whose destination QP does not exist (destroyed): no ACK ever
 * comes, so RETRY_EXC_ERR after timeout x retry_cnt */
static void svt_case_dest_qp_gone(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t a, b;
    svt_ep_opts_t o;
    svt_addr_t ba;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.timeout   = 10; /* 4 ms */
    o.retry_cnt = 2;
    svt_ep_create(&dev, &o, &a);
    svt_ep_create(&dev, &o, &b);
    svt_ep_addr(&b, &ba);
    svt_ep_destroy(&b);
    svt_ep_connect(&a, &ba);
    SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 8, 0, 0, 0, IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_RETRY_EXC_ERR, -1, 1, NULL);
    SVT_CHECK(svt_qp_state(a.qp) == IBV_QPS_ERR, "QP not in ERR");
}

/* The same on a QP attached to an SRQ: reaching ERR through a send error
 * (not ibv_modify_qp) still reports IBV_EVENT_QP_LAST_WQE_REACHED */
static void svt_case_srq_qp_err_event(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_async_event aev;
    svt_dev_t dev;
    svt_ep_t a, b;
    svt_ep_opts_t o;
    svt_addr_t ba;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.timeout   = 10; /* 4 ms */
    o.retry_cnt = 1;
    svt_ep_create(&dev, &o, &b);
    SVT_NN(o.srq, ibv_create_srq(dev.pd, &sa));
    svt_ep_create(&dev, &o, &a);
    svt_ep_addr(&b, &ba);
    svt_ep_destroy(&b);
    svt_ep_connect(&a, &ba);
    SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 8, 0, 0, 0, IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_RETRY_EXC_ERR, -1, 1, NULL);
    SVT_OK(ibv_get_async_event(dev.ctx, &aev));
    SVT_CHECK((aev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) &&
              (aev.element.qp == a.qp), "event %s",
              ibv_event_type_str(aev.event_type));
    ibv_ack_async_event(&aev);
}

/* WRs queued behind a failing one, and posted receives, flush */
static void svt_case_flush(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        for (i = 0; i < 4; ++i) {
            svt_post_recv(&ep, 0, 64, 100 + i);
        }
        struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
        SVT_OK(ibv_modify_qp(ep.qp, &attr, IBV_QP_STATE));
        for (i = 0; i < 4; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 100 + i, NULL);
        }
        for (i = 0; i < 3; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 8, 0, 0, 0,
                                 IBV_SEND_SIGNALED, 200 + i));
        }
        for (i = 0; i < 3; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 200 + i, NULL);
        }
        svt_expect_no_wc(ep.cq, 20);
    }
    svt_sync(p, !p->rank);
}

/* No receive posted: RNR NAKs, then RNR_RETRY_EXC_ERR (arg 0); with
 * infinite RNR retry, a late receive lets the send complete (arg 1) */
static void svt_case_rnr(svt_proc_t *p)
{
    int recover = (p->arg != 0);
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.rnr_retry     = recover ? 7 : 1;
    o.min_rnr_timer = 1; /* 0.01 ms */
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 32, 0, 0, 0,
                             IBV_SEND_SIGNALED, 1));
        if (!recover) {
            svt_expect_wc(ep.cq, IBV_WC_RNR_RETRY_EXC_ERR, -1, 1, NULL);
        } else {
            svt_expect_no_wc(ep.cq, 100); /* still retrying */
            svt_sync(p, 1);
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 1, NULL);
        }
    } else if (recover) {
        svt_sync(p, 0);
        svt_post_recv(&ep, 0, 64, 2);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 2, &wc);
    }
    svt_sync(p, !p->rank);
}

/*
 * A QP that fails by itself (RNR retries exceeded) is in ERR, but the
 * public ibv_qp.state still reads RTS: libibverbs changes that field only
 * in ibv_modify_qp and ibv_query_qp (rdma-core libibverbs/verbs.c), and
 * UCX's rc_verbs asserts it while purging a failed peer. ibv_query_qp
 * reports ERR and updates the field.
 */
static void svt_case_state_field(svt_proc_t *p)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.rnr_retry     = 1;
    o.min_rnr_timer = 1;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        SVT_CHECK(ep.qp->state == IBV_QPS_RTS, "qp->state %d after the "
                  "move to RTS", ep.qp->state);
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 32, 0, 0, 0,
                             IBV_SEND_SIGNALED, 1));
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 32, 0, 0, 0,
                             IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep.cq, IBV_WC_RNR_RETRY_EXC_ERR, -1, 1, NULL);
        svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 2, NULL);
        SVT_CHECK(ep.qp->state == IBV_QPS_RTS, "qp->state %d after the QP "
                  "failed by itself, expected RTS (%d) until ibv_query_qp",
                  ep.qp->state, IBV_QPS_RTS);
        memset(&attr, 0, sizeof(attr));
        SVT_OK(ibv_query_qp(ep.qp, &attr, IBV_QP_STATE, &init));
        SVT_CHECK(attr.qp_state == IBV_QPS_ERR, "ibv_query_qp: state %d, "
                  "expected ERR", attr.qp_state);
        SVT_CHECK(ep.qp->state == IBV_QPS_ERR, "qp->state %d after "
                  "ibv_query_qp, expected ERR", ep.qp->state);
    }
    svt_sync(p, !p->rank);
}

/* The peer process dies: RETRY_EXC_ERR after about timeout x retry_cnt,
 * for an RDMA WRITE (arg 0) and for a small SEND to a receive the peer
 * posted before dying (arg 1: its payload would fit in the CQ slot) */
static void svt_case_peer_killed(svt_proc_t *p)
{
    const uint8_t timeout = 14, retry = 3; /* 67 ms x (1 + 3) */
    double t0, elapsed, unit_ms = 4.096e-3 * (1u << timeout);
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    char c;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.timeout   = timeout;
    o.retry_cnt = retry;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        svt_post_recv(&ep, 0, 64, 1);
        kill(getpid(), SIGKILL);
    }
    /* wait for the peer's death: its socket end closes */
    while (read(p->sock[1], &c, 1) > 0) {
    }
    svt_sleep_ms(20);
    t0 = svt_now_ms();
    SVT_OK(svt_post_send(&ep, p->arg ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, 0,
                         p->arg ? 8 : 64, svt_raddr(&ep, 0),
                         ep.remote.rkey, 0, IBV_SEND_SIGNALED, 1));
    svt_expect_wc(ep.cq, IBV_WC_RETRY_EXC_ERR, -1, 1, NULL);
    elapsed = svt_now_ms() - t0;
    SVT_CHECK(elapsed >= 0.5 * unit_ms * retry, "RETRY_EXC_ERR after %.1f ms; "
              "timeout %u x retry_cnt %u means at least %.0f ms", elapsed,
              timeout, retry, unit_ms * retry);
    SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_ERR, "QP not in ERR");
}

/* More completions than the CQ holds: IBV_EVENT_CQ_ERR, and one line on
 * stderr whatever SOFTVERBS_DEBUG says (read back from a file it is sent
 * to meanwhile) */
static void svt_case_cq_overrun(svt_proc_t *p)
{
    struct ibv_async_event ev;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_cq *cq = NULL;
    char log[4096];
    int i, n, saved;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 0) {
        SVT_NN(cq, ibv_create_cq(dev.ctx, 4, NULL, NULL, 0));
        SVT_CHECK(cq->cqe >= 4, "cq->cqe %d < 4 requested", cq->cqe);
        o.cq          = cq;
        o.max_send_wr = cq->cqe + 8;
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        saved = svt_stderr_begin();
        n     = cq->cqe + 4;
        for (i = 0; i < n; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 8,
                                 svt_raddr(&ep, 0), ep.remote.rkey, 0,
                                 IBV_SEND_SIGNALED, i));
        }
        svt_wait_async(dev.ctx, IBV_EVENT_CQ_ERR, 5000, &ev);
        n = svt_stderr_end(saved, "overrun: ", log, sizeof(log));
        SVT_CHECK(ev.element.cq == cq, "CQ_ERR names cq %p, expected %p",
                  (void *)ev.element.cq, (void *)cq);
        SVT_CHECK(n > 0, "no overrun message on stderr (got \"%s\")", log);
    }
    svt_sync(p, !p->rank);
}

/*
 * A receive CQ that overruns (IBA class G; rxe's RESPST_ERR_CQ_OVERFLOW,
 * mlx5 moves the QP to error): rank 1's CQ holds cqe completions and is
 * not polled while rank 0 sends cqe + 3 messages. The first cqe complete
 * on both sides; the next finds the CQ full: IBV_EVENT_CQ_ERR, the
 * responder QP in ERR with IBV_EVENT_QP_FATAL, and that send is not
 * acknowledged (RETRY_EXC_ERR, the rest flushed). The receiver then finds
 * each of the first cqe messages once, intact, and nothing more: no
 * message delivered twice, none delivered without its completion.
 */
static void svt_case_cq_overrun_recv(svt_proc_t *p)
{
    struct ibv_async_event ev;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    int i, n, cqe;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.cq_size   = (p->rank == 1) ? 4 : 64; /* the sender's has room */
    o.timeout   = 8; /* about 1 ms */
    o.retry_cnt = 1;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    /* the receiver's capacity, which the sender needs too */
    cqe = (int)svt_xchg_u64(p, !p->rank, (uint64_t)ep.cq->cqe);
    if (p->rank == 1) {
        cqe = ep.cq->cqe;
    }
    n   = cqe + 3;
    SVT_CHECK((size_t)(n + 1) * 64 <= ep.size, "buffer too small");
    if (p->rank == 1) {
        for (i = 0; i <= n; ++i) {
            svt_post_recv(&ep, (size_t)i * 64, 64, i);
        }
        svt_sync(p, 0);
        svt_wait_async(dev.ctx, IBV_EVENT_CQ_ERR, 5000, &ev);
        SVT_CHECK(ev.element.cq == ep.cq, "CQ_ERR names another CQ");
        svt_wait_async(dev.ctx, IBV_EVENT_QP_FATAL, 5000, &ev);
        SVT_CHECK(ev.element.qp == ep.qp, "QP_FATAL names another QP");
        svt_sync(p, 0);
        SVT_CHECK(svt_qp_state(ep.qp) == IBV_QPS_ERR, "receiver QP in %d",
                  (int)svt_qp_state(ep.qp));
        for (i = 0; i < cqe; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, i, &wc);
            SVT_CHECK(wc.byte_len == 32, "message %d: %u bytes", i,
                      wc.byte_len);
            svt_pattern_check(ep.buf + (size_t)i * 64, 32, 100 + i, "recv");
        }
        svt_expect_no_wc(ep.cq, 50);
        /* message cqe found the CQ full (placed or not: the spec leaves
         * it unknown); those after it met a QP in ERR: nothing placed */
        for (i = cqe + 1; i < n; ++i) {
            svt_memset_check(ep.buf + (size_t)i * 64, 64, 0,
                             "a message sent after the overrun");
        }
    } else {
        for (i = 0; i < n; ++i) {
            svt_fill(ep.buf + (size_t)i * 64, 32, 100 + i);
        }
        svt_sync(p, 1);
        for (i = 0; i < n; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, (size_t)i * 64, 32, 0, 0,
                                 0, IBV_SEND_SIGNALED, i));
        }
        for (i = 0; i < cqe; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
        }
        svt_expect_wc(ep.cq, IBV_WC_RETRY_EXC_ERR, -1, cqe, NULL);
        for (i = cqe + 1; i < n; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, i, NULL);
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/*
 * UD send-queue error (bad lkey): LOC_PROT_ERR and the QP in SQE (UD/UC send
 * errors stop the send queue only). Then the transitions out of SQE: to RTS
 * (arg 0; a send works again), to ERR (1) and to RESET (2).
 */
static void svt_case_ud_sqe(svt_proc_t *p)
{
    static const enum ibv_qp_state to[] = {IBV_QPS_RTS, IBV_QPS_ERR,
                                           IBV_QPS_RESET};
    struct ibv_qp_attr attr;
    svt_dev_t dev;
    svt_ep_t a, b;
    svt_ep_opts_t o;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_local_pair(&dev, &o, &a, &b);
    svt_post_recv(&b, 0, 256, 1);

    sge = (struct ibv_sge){(uintptr_t)a.buf, 16, a.mr->lkey ^ 0x7f7f00};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = 9;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = a.ah;
    wr.wr.ud.remote_qpn  = b.qp->qp_num;
    wr.wr.ud.remote_qkey = SVT_QKEY;
    SVT_OK(ibv_post_send(a.qp, &wr, &bad));
    svt_expect_wc(a.cq, IBV_WC_LOC_PROT_ERR, -1, 9, NULL);
    SVT_CHECK(svt_qp_state(a.qp) == IBV_QPS_SQE, "UD QP state %d after a send "
              "error, expected SQE (%d)", svt_qp_state(a.qp), IBV_QPS_SQE);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = to[p->arg];
    SVT_OK(ibv_modify_qp(a.qp, &attr, IBV_QP_STATE));
    SVT_CHECK(svt_qp_state(a.qp) == to[p->arg], "state %d after SQE -> %d",
              svt_qp_state(a.qp), to[p->arg]);
    if (to[p->arg] == IBV_QPS_RTS) {
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 16, 0, 0, 0,
                             IBV_SEND_SIGNALED, 10));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 10, NULL);
        svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, NULL);
    }
}

/*
 * SOFTVERBS_MAX_<OBJ>=4: the fifth object fails with ENOMEM, and one can be
 * created again after a destroy. arg selects the object.
 */
enum { SVT_LIM_QP, SVT_LIM_CQ, SVT_LIM_MR, SVT_LIM_SRQ };
#define SVT_LIMIT 4

static void *svt_lim_create(svt_dev_t *dev, int kind, struct ibv_cq *cq,
                            void *buf)
{
    struct ibv_qp_init_attr qi = {.send_cq = cq, .recv_cq = cq,
                                  .cap = {4, 4, 1, 1, 0},
                                  .qp_type = IBV_QPT_RC};
    struct ibv_srq_init_attr si = {.attr = {.max_wr = 4, .max_sge = 1}};

    switch (kind) {
    case SVT_LIM_QP:
        return ibv_create_qp(dev->pd, &qi);
    case SVT_LIM_CQ:
        return ibv_create_cq(dev->ctx, 4, NULL, NULL, 0);
    case SVT_LIM_MR:
        return ibv_reg_mr(dev->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    default:
        return ibv_create_srq(dev->pd, &si);
    }
}

static int svt_lim_destroy(int kind, void *obj)
{
    switch (kind) {
    case SVT_LIM_QP:
        return ibv_destroy_qp(obj);
    case SVT_LIM_CQ:
        return ibv_destroy_cq(obj);
    case SVT_LIM_MR:
        return ibv_dereg_mr(obj);
    default:
        return ibv_destroy_srq(obj);
    }
}

static void svt_case_limit(svt_proc_t *p)
{
    static const char *const name[] = {"QP", "CQ", "MR", "SRQ"};
    static char buf[4096];
    int kind = (int)p->arg, i;
    void *obj[SVT_LIMIT + 1];
    struct ibv_cq *cq = NULL;
    svt_dev_t dev;

    svt_dev_open(&dev);
    if ((kind == SVT_LIM_QP) || (kind == SVT_LIM_SRQ)) {
        SVT_NN(cq, ibv_create_cq(dev.ctx, 4, NULL, NULL, 0));
    }
    /* the CQ above counts against the CQ limit only in the CQ case, where
     * it is not created */
    for (i = 0; i < SVT_LIMIT; ++i) {
        obj[i] = svt_lim_create(&dev, kind, cq, buf);
        SVT_CHECK(obj[i] != NULL, "%s %d of %d failed (errno %d)", name[kind],
                  i + 1, SVT_LIMIT, errno);
    }
    errno  = 0;
    obj[i] = svt_lim_create(&dev, kind, cq, buf);
    SVT_CHECK(obj[i] == NULL, "%s %d created beyond SOFTVERBS_MAX_%s=%d",
              name[kind], i + 1, name[kind], SVT_LIMIT);
    SVT_CHECK(errno == ENOMEM, "%s beyond the limit: errno %d, expected ENOMEM",
              name[kind], errno);
    SVT_OK(svt_lim_destroy(kind, obj[0]));
    obj[0] = svt_lim_create(&dev, kind, cq, buf);
    SVT_CHECK(obj[0] != NULL, "%s not created after a destroy (errno %d)",
              name[kind], errno);
    for (i = 0; i < SVT_LIMIT; ++i) {
        SVT_OK(svt_lim_destroy(kind, obj[i]));
    }
    if (cq != NULL) {
        SVT_OK(ibv_destroy_cq(cq));
    }
}

#define SVT_ACCESS_CASE(_name, _kind) \
    {"err/" _name, svt_case_access, 2, _kind}

const svt_case_t svt_cases_err[] = {
    SVT_ACCESS_CASE("bad_rkey_write", SVT_ACC_BAD_RKEY_WRITE),
    SVT_ACCESS_CASE("bad_rkey_read", SVT_ACC_BAD_RKEY_READ),
    SVT_ACCESS_CASE("out_of_bounds_write", SVT_ACC_OOB_WRITE),
    SVT_ACCESS_CASE("out_of_bounds_read", SVT_ACC_OOB_READ),
    SVT_ACCESS_CASE("no_remote_write", SVT_ACC_NO_REMOTE_WRITE),
    SVT_ACCESS_CASE("no_remote_read", SVT_ACC_NO_REMOTE_READ),
    SVT_ACCESS_CASE("no_remote_atomic", SVT_ACC_NO_REMOTE_ATOMIC),
    SVT_ACCESS_CASE("rkey_after_dereg", SVT_ACC_DEREGISTERED),
    SVT_ACCESS_CASE("mr_of_other_pd", SVT_ACC_OTHER_PD),
    SVT_ACCESS_CASE("qp_without_remote_write", SVT_ACC_QP_NO_WRITE),
    SVT_ACCESS_CASE("unsignaled_wr_error_completes", SVT_ACC_UNSIGNALED),
    {"err/mr_exact_bounds", svt_case_mr_exact_bounds, 2},
    {"err/write_imm_bad_rkey", svt_case_resp_err, 2, 0},
    {"err/atomic_misaligned", svt_case_resp_err, 2, 1},
    {"sge/recv_too_small", svt_case_resp_err, 2, 2},
    {"err/srq_bad_rkey", svt_case_resp_err, 2, 3},
    {"err/uc_bad_rkey_dropped", svt_case_uc_bad_rkey, 2},
    {"err/responder_sq_flushed", svt_case_resp_sq_flushed, 2},
    {"err/dest_qp_destroyed", svt_case_dest_qp_gone, 1},
    {"err/srq_qp_error_last_wqe_event", svt_case_srq_qp_err_event, 1},
    {"err/flush_in_err", svt_case_flush, 2},
    {"err/rnr_retry_exceeded", svt_case_rnr, 2, 0},
    {"err/rnr_then_recv", svt_case_rnr, 2, 1},
    {"err/qp_state_field_until_query", svt_case_state_field, 2},
    {"err/peer_killed", svt_case_peer_killed, 2, 0, 15, NULL,
     SVT_CASE_F_PEER_DIES},
    {"err/peer_killed_small_send", svt_case_peer_killed, 2, 1, 15, NULL,
     SVT_CASE_F_PEER_DIES},
    {"err/cq_overrun", svt_case_cq_overrun, 2},
    {"err/cq_overrun_recv", svt_case_cq_overrun_recv, 2},
    {"err/ud_send_error_sqe_to_rts", svt_case_ud_sqe, 1, 0},
    {"err/ud_send_error_sqe_to_err", svt_case_ud_sqe, 1, 1},
    {"err/ud_send_error_sqe_to_reset", svt_case_ud_sqe, 1, 2},
    {"limit/qp", svt_case_limit, 1, SVT_LIM_QP, 0, "SOFTVERBS_MAX_QP=4"},
    {"limit/cq", svt_case_limit, 1, SVT_LIM_CQ, 0, "SOFTVERBS_MAX_CQ=4"},
    {"limit/mr", svt_case_limit, 1, SVT_LIM_MR, 0, "SOFTVERBS_MAX_MR=4"},
    {"limit/srq", svt_case_limit, 1, SVT_LIM_SRQ, 0, "SOFTVERBS_MAX_SRQ=4"},
    {NULL}
};
