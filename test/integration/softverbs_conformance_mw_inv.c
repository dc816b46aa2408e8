/*
 * softverbs conformance: memory windows, part 2. Type 2 windows (bound by
 * IBV_WR_BIND_MW and ibv_wr_bind_mw, zero-based, tied to the QP that bound
 * them: type 2B), their invalidation (IBV_WR_LOCAL_INV, ibv_wr_local_inv,
 * IBV_WR_SEND_WITH_INV and ibv_wr_send_inv at the responder: IBTA vol 1
 * 9.7.5 and 10.6.7, rxe's rxe_invalidate_mw), and remote accesses a window
 * refuses, each the way an MR's rkey is refused: IBV_WC_REM_ACCESS_ERR at
 * the requester, the responder QP in ERR with IBV_EVENT_QP_ACCESS_ERR, and
 * nothing written. Helpers: softverbs_conformance_mw.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_mw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVT_WIN_OFF 4096     /* the window: 8 KiB at this offset of the MR */
#define SVT_WIN_LEN 8192
#define SVT_RECV_OFF 32768   /* where rank 0 receives */

/* A READ through the window that must work and return pattern seed */
static void svt_mw2_read_ok(svt_proc_t *p, int qp, uint32_t rkey,
                            uint64_t raddr, uint32_t len, uint32_t seed)
{
    svt_mw_ans_t a = svt_mw_ask(p, SVT_MW_READ, qp, rkey, raddr, len, seed,
                                0);

    SVT_CHECK(a.status == IBV_WC_SUCCESS, "READ through window key 0x%x: %s",
              rkey, ibv_wc_status_str(a.status));
    SVT_CHECK(a.bad < 0, "READ through the window: byte %d wrong", a.bad);
}

/* A READ through (rkey, raddr) that the responder ep must refuse */
static void svt_mw2_read_denied(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *ep,
                                int qp, uint32_t rkey, uint64_t raddr,
                                const char *what)
{
    svt_mw_ans_t a = svt_mw_ask(p, SVT_MW_READ, qp, rkey, raddr, 64, 0, 0);

    SVT_CHECK(a.status == IBV_WC_REM_ACCESS_ERR, "READ %s: %s, expected a "
              "remote access error", what, ibv_wc_status_str(a.status));
    svt_mw_expect_denied(dev, ep);
}

/* The receive of a Send with Invalidate of rkey (len bytes of seed at
 * SVT_RECV_OFF): IBV_WC_WITH_INV and the key in invalidated_rkey */
static void svt_mw2_expect_inv_recv(svt_ep_t *ep, uint32_t rkey, uint32_t len,
                                    uint32_t seed)
{
    struct ibv_wc wc;

    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, IBV_WC_RECV, 0x5e, &wc);
    SVT_CHECK((wc.wc_flags & IBV_WC_WITH_INV) &&
              !(wc.wc_flags & IBV_WC_WITH_IMM), "wc_flags 0x%x, want "
              "IBV_WC_WITH_INV", wc.wc_flags);
    SVT_CHECK(wc.invalidated_rkey == rkey, "invalidated_rkey 0x%x, sent 0x%x",
              wc.invalidated_rkey, rkey);
    SVT_CHECK(wc.byte_len == len, "byte_len %u, sent %u", wc.byte_len, len);
    svt_pattern_check(ep->buf + SVT_RECV_OFF, len, seed, "send with "
                      "invalidate payload");
}

/* Rank 0's endpoints: nqp RC pairs with rank 1 (ex: ibv_create_qp_ex) */
static void svt_mw2_setup(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *eps,
                          int nqp, int ex)
{
    svt_ep_opts_t o;
    int i;

    svt_dev_open(dev);
    svt_mw_opts(&o, IBV_QPT_RC);
    for (i = 0; i < nqp; ++i) {
        if (ex) {
            svt_mw_ex_pair(p, 1, dev, &o, &eps[i]);
        } else {
            svt_ep_pair(p, 1, dev, &o, &eps[i]);
        }
    }
}

static void svt_mw2_teardown(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *eps,
                             int nqp)
{
    int i;

    svt_mw_ask(p, SVT_MW_DONE, 0, 0, 0, 0, 0, 0);
    for (i = 0; i < nqp; ++i) {
        svt_ep_destroy(&eps[i]);
    }
    svt_dev_close(dev);
}

/* IBV_WR_BIND_MW of a type 2 window: IBV_WC_BIND_MW, the key the WR gave;
 * READ, WRITE and fetch-and-add through it (data checked); rank 1's Send
 * with Invalidate of the key completes rank 0's receive with
 * IBV_WC_WITH_INV and the key; the window is FREE again and takes a new
 * bind and key, and the invalidated key is refused */
static void svt_case_mw_type2_remote(svt_proc_t *p)
{
    struct ibv_mw *mw;
    svt_mw_ans_t a;
    svt_dev_t dev;
    uint32_t key, alloc_key;
    uint64_t win, v;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_mw2_setup(p, &dev, &ep, 1, 0);
    win = (uintptr_t)ep.buf + SVT_WIN_OFF;
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    alloc_key = mw->rkey;
    SVT_CHECK(svt_mw_bind2(&ep, mw, ep.mr, win, SVT_WIN_LEN, SVT_MW_RWA) ==
              IBV_WC_SUCCESS, "type 2 bind failed");
    key = mw->rkey;
    SVT_CHECK(key == ibv_inc_rkey(alloc_key), "key 0x%x", key);
    svt_fill(ep.buf + SVT_WIN_OFF, SVT_WIN_LEN, 51);
    svt_mw2_read_ok(p, 0, key, win, SVT_WIN_LEN, 51);
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, key, win + 4000, 3000, 52, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "WRITE through the window: %s",
              ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + SVT_WIN_OFF + 4000, 3000, 52, "written");
    v = 7;
    memcpy(ep.buf + SVT_WIN_OFF + SVT_WIN_LEN - 8, &v, 8);
    a = svt_mw_ask(p, SVT_MW_FAA, 0, key, win + SVT_WIN_LEN - 8, 8, 0, 3);
    memcpy(&v, ep.buf + SVT_WIN_OFF + SVT_WIN_LEN - 8, 8);
    SVT_CHECK((a.status == IBV_WC_SUCCESS) && (a.value == 7) && (v == 10),
              "fetch-and-add at the window's last word: %s, fetched %llu, "
              "now %llu", ibv_wc_status_str(a.status),
              (unsigned long long)a.value, (unsigned long long)v);

    svt_post_recv(&ep, SVT_RECV_OFF, 4096, 0x5e);
    a = svt_mw_ask(p, SVT_MW_SEND_INV, 0, key, 0, 256, 53, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "SEND_WITH_INV: %s",
              ibv_wc_status_str(a.status));
    svt_mw2_expect_inv_recv(&ep, key, 256, 53);

    /* FREE again: a new bind, a new key */
    SVT_CHECK(svt_mw_bind2(&ep, mw, ep.mr, win, 4096,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "bind after the remote invalidation failed");
    svt_mw2_read_ok(p, 0, mw->rkey, win, 4000, 51); /* before the WRITE */
    svt_mw2_read_denied(p, &dev, &ep, 0, key, win, "with the key rank 1 "
                        "invalidated");
    SVT_OK(ibv_dealloc_mw(mw));
    svt_mw2_teardown(p, &dev, &ep, 1);
}

/* IBV_WR_LOCAL_INV of a bound type 2 window: IBV_WC_LOCAL_INV, and the
 * key is refused afterwards */
static void svt_case_mw_type2_local_inv(svt_proc_t *p)
{
    struct ibv_mw *mw;
    svt_dev_t dev;
    uint64_t win;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_mw2_setup(p, &dev, &ep, 1, 0);
    win = (uintptr_t)ep.buf + SVT_WIN_OFF;
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    SVT_CHECK(svt_mw_bind2(&ep, mw, ep.mr, win, SVT_WIN_LEN, SVT_MW_RWA) ==
              IBV_WC_SUCCESS, "type 2 bind failed");
    svt_fill(ep.buf + SVT_WIN_OFF, 512, 61);
    svt_mw2_read_ok(p, 0, mw->rkey, win, 512, 61);
    SVT_CHECK(svt_mw_local_inv(&ep, mw->rkey) == IBV_WC_SUCCESS,
              "local invalidation failed");
    svt_mw2_read_denied(p, &dev, &ep, 0, mw->rkey, win, "after the local "
                        "invalidation");
    SVT_OK(ibv_dealloc_mw(mw));
    svt_mw2_teardown(p, &dev, &ep, 1);
}

/*
 * IBV_WR_LOCAL_INV of a window while a peer's RDMA write through it is
 * under way: once the invalidation completes, nothing reaches the memory
 * (an HCA finishes or stops the accesses through a window first), as for
 * ibv_dereg_mr (data/dereg_during_write). Rank 0 invalidates as soon as
 * the first byte lands, then writes the last page itself: that page must
 * keep its bytes, and the write, which passed the key check before, must
 * have placed the rest. An invalidation that completed mid-transfer lets
 * the transfer overwrite the last page afterwards.
 */
#define SVT_INV_LEN (256ul << 20)

typedef struct {
    svt_ep_t      *ep;
    struct ibv_mw *mw;
} svt_mw2_inv_arg_t;

static void svt_mw2_inv(void *arg)
{
    svt_mw2_inv_arg_t *a = arg;

    SVT_CHECK(svt_mw_local_inv(a->ep, a->mw->rkey) == IBV_WC_SUCCESS,
              "local invalidation failed");
}

static void svt_case_mw_inv_during_write(svt_proc_t *p)
{
    svt_mw2_inv_arg_t a;
    svt_ep_opts_t o;
    svt_addr_t va;
    svt_dev_t dev;
    svt_ep_t ep;

    svt_dev_open(&dev);
    svt_mw_opts(&o, IBV_QPT_RC);
    o.buf_size = SVT_INV_LEN;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        memset(ep.buf, 0, SVT_INV_LEN);
        SVT_NN(a.mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
        SVT_CHECK(svt_mw_bind2(&ep, a.mw, ep.mr, (uintptr_t)ep.buf,
                               SVT_INV_LEN, IBV_ACCESS_REMOTE_WRITE) ==
                  IBV_WC_SUCCESS, "type 2 bind failed");
        memset(&va, 0, sizeof(va));
        va.addr = (uintptr_t)ep.buf;
        va.rkey = a.mw->rkey;
        svt_msg_send(p, 1, &va, sizeof(va));
        a.ep = &ep;
        svt_during_write_target(p, 1, ep.buf, SVT_INV_LEN,
                                "the local invalidation", svt_mw2_inv, &a);
        SVT_OK(ibv_dealloc_mw(a.mw));
    } else {
        svt_during_write_writer(p, 0, &ep, SVT_INV_LEN);
    }
    svt_sync(p, !p->rank);
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* A zero-based type 2 window (IBV_ACCESS_ZERO_BASED: the remote address is
 * an offset into the window, ibv_bind_mw(3)): reads and writes at offsets
 * land at the window's start plus the offset; past its length is refused */
static void svt_case_mw_type2_zero_based(svt_proc_t *p)
{
    struct ibv_mw *mw;
    svt_mw_ans_t a;
    svt_dev_t dev;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_mw2_setup(p, &dev, &ep, 1, 0);
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    SVT_CHECK(svt_mw_bind2(&ep, mw, ep.mr, (uintptr_t)ep.buf + 8192, 4096,
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_ZERO_BASED) == IBV_WC_SUCCESS,
              "zero-based type 2 bind failed");
    svt_fill(ep.buf + 8192 + 100, 200, 71);
    svt_mw2_read_ok(p, 0, mw->rkey, 100, 200, 71);
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, mw->rkey, 1000, 100, 72, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "WRITE at offset 1000: %s",
              ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + 8192 + 1000, 100, 72, "written at offset");
    svt_mw2_read_denied(p, &dev, &ep, 0, mw->rkey, 4096 - 8, "across the "
                        "end of a zero-based window");
    SVT_OK(ibv_dealloc_mw(mw));
    svt_mw2_teardown(p, &dev, &ep, 1);
}

/* The extended QP API: ibv_wr_bind_mw binds, rank 1's ibv_wr_send_inv
 * invalidates (IBV_WC_WITH_INV), ibv_wr_local_inv invalidates locally */
static void svt_case_mw_type2_wr_api(svt_proc_t *p)
{
    struct ibv_mw_bind_info bi;
    struct ibv_qp_ex *qpx;
    struct ibv_mw *mw;
    svt_mw_ans_t a;
    svt_dev_t dev;
    uint32_t key;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 1);
        return;
    }
    svt_mw2_setup(p, &dev, &ep, 1, 1);
    SVT_NN(qpx, ibv_qp_to_qp_ex(ep.qp));
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    memset(&bi, 0, sizeof(bi));
    bi.mr              = ep.mr;
    bi.addr            = (uintptr_t)ep.buf + SVT_WIN_OFF;
    bi.length          = SVT_WIN_LEN;
    bi.mw_access_flags = IBV_ACCESS_REMOTE_READ;
    svt_fill(ep.buf + SVT_WIN_OFF, SVT_WIN_LEN, 81);
    for (int round = 0; round < 2; ++round) {
        key = ibv_inc_rkey(mw->rkey);
        ibv_wr_start(qpx);
        qpx->wr_id    = 0x81;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_bind_mw(qpx, mw, key, &bi);
        SVT_OK(ibv_wr_complete(qpx));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0x81, NULL);
        mw->rkey = key;
        svt_mw2_read_ok(p, 0, key, bi.addr, SVT_WIN_LEN, 81);
        if (round == 0) {
            svt_post_recv(&ep, SVT_RECV_OFF, 4096, 0x5e);
            a = svt_mw_ask(p, SVT_MW_SEND_INV_WR, 0, key, 0, 100, 82, 0);
            SVT_CHECK(a.status == IBV_WC_SUCCESS, "ibv_wr_send_inv: %s",
                      ibv_wc_status_str(a.status));
            svt_mw2_expect_inv_recv(&ep, key, 100, 82);
        }
    }
    ibv_wr_start(qpx);
    qpx->wr_id    = 0x82;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_local_inv(qpx, key);
    SVT_OK(ibv_wr_complete(qpx));
    svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, 0x82, NULL);
    svt_mw2_read_denied(p, &dev, &ep, 0, key, bi.addr, "after "
                        "ibv_wr_local_inv");
    SVT_OK(ibv_dealloc_mw(mw));
    svt_mw2_teardown(p, &dev, &ep, 1);
}

/* Type 2B: a type 2 window serves the QP that bound it only (rxe_lookup_mw:
 * mw->qp != qp), another QP of the same PD is refused */
static void svt_case_mw_type2_other_qp(svt_proc_t *p)
{
    struct ibv_mw *mw;
    svt_dev_t dev;
    svt_ep_t eps[2];
    uint64_t win;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 2, 0);
        return;
    }
    svt_mw2_setup(p, &dev, eps, 2, 0);
    win = (uintptr_t)eps[0].buf + SVT_WIN_OFF;
    SVT_NN(mw, ibv_alloc_mw(dev.pd, IBV_MW_TYPE_2));
    SVT_CHECK(svt_mw_bind2(&eps[0], mw, eps[0].mr, win, SVT_WIN_LEN,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "type 2 bind failed");
    svt_fill(eps[0].buf + SVT_WIN_OFF, 256, 91);
    svt_mw2_read_ok(p, 0, mw->rkey, win, 256, 91);
    svt_mw2_read_denied(p, &dev, &eps[1], 1, mw->rkey, win, "through a QP "
                        "other than the one that bound the window");
    SVT_OK(ibv_dealloc_mw(mw));
    svt_mw2_teardown(p, &dev, eps, 2);
}

/* ---------------------------------------------------------------------
 * Accesses a window refuses (arg: the row)
 * ------------------------------------------------------------------- */
static const struct svt_mw_deny {
    int      type;
    unsigned access;
    int      op;
    int64_t  off;              /* from the window's start */
    uint32_t len;
    int      dealloc;          /* the window is deallocated first */
    const char *what;
} svt_mw_denies[] = {
    {1, SVT_MW_RWA, SVT_MW_READ, -8, 16, 0, "starting before the window"},
    {1, SVT_MW_RWA, SVT_MW_READ, SVT_WIN_LEN - 8, 16, 0, "across its end"},
    {1, IBV_ACCESS_REMOTE_READ, SVT_MW_WRITE, 0, 64, 0,
     "writing a read-only window"},
    {2, IBV_ACCESS_REMOTE_WRITE, SVT_MW_READ, 0, 64, 0,
     "reading a write-only window"},
    {1, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, SVT_MW_FAA, 0, 8,
     0, "atomic without the atomic right"},
    {2, SVT_MW_RWA, SVT_MW_WRITE, 0, 64, 1, "after ibv_dealloc_mw"},
};

static void svt_case_mw_denied(svt_proc_t *p)
{
    const struct svt_mw_deny *d = &svt_mw_denies[p->arg];
    struct ibv_mw *mw;
    svt_mw_ans_t a;
    svt_dev_t dev;
    uint64_t win;
    uint32_t key;
    svt_ep_t ep;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_mw2_setup(p, &dev, &ep, 1, 0);
    win = (uintptr_t)ep.buf + SVT_WIN_OFF;
    memset(ep.buf, 0xab, ep.size);
    SVT_NN(mw, ibv_alloc_mw(dev.pd, d->type));
    SVT_CHECK(((d->type == 1) ?
               svt_mw_bind1(&ep, mw, ep.mr, win, SVT_WIN_LEN, d->access) :
               svt_mw_bind2(&ep, mw, ep.mr, win, SVT_WIN_LEN, d->access)) ==
              IBV_WC_SUCCESS, "bind failed");
    key = mw->rkey;
    /* the window works before: an access it grants */
    a = svt_mw_ask(p, (d->access & IBV_ACCESS_REMOTE_READ) ? SVT_MW_READ :
                   SVT_MW_WRITE, 0, key, win + 64, 64, 0xab, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "granted access: %s",
              ibv_wc_status_str(a.status));
    memset(ep.buf, 0xab, ep.size);
    if (d->dealloc) {
        SVT_OK(ibv_dealloc_mw(mw));
        mw = NULL;
    }
    a = svt_mw_ask(p, d->op, 0, key, win + d->off, d->len, 5, 1);
    SVT_CHECK(a.status == IBV_WC_REM_ACCESS_ERR, "%s: %s, expected a remote "
              "access error", d->what, ibv_wc_status_str(a.status));
    svt_mw_expect_denied(&dev, &ep);
    svt_memset_check(ep.buf, ep.size, 0xab, "memory after a refused access");
    if (mw != NULL) {
        SVT_OK(ibv_dealloc_mw(mw));
    }
    svt_mw2_teardown(p, &dev, &ep, 1);
}

/* ---------------------------------------------------------------------
 * Invalidations refused
 * ------------------------------------------------------------------- */

/* A Send with Invalidate whose key cannot be invalidated at the responder
 * (arg 0: a type 1 window's, o10-37.2.26; 1: an MR's; 2: a type 2 window
 * never bound; 3: a type 2 window bound through another QP): the receive
 * WQE completes with IBV_WC_REM_INV_REQ_ERR and the QP goes to ERR (rxe,
 * RESPST_ERR_INVALIDATE_RKEY), the requester gets a remote invalid request
 * error, and a window bound stays usable through its own QP */
static void svt_case_mw_send_inv_refused(svt_proc_t *p)
{
    int nqp = (p->arg == 3) ? 2 : 1, bq = nqp - 1;
    struct ibv_mw *mw = NULL;
    svt_mw_ans_t a;
    svt_ep_t eps[2];
    svt_dev_t dev;
    uint32_t key;
    uint64_t win;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, nqp, 0);
        return;
    }
    svt_mw2_setup(p, &dev, eps, nqp, 0);
    win = (uintptr_t)eps[bq].buf + SVT_WIN_OFF;
    if (p->arg == 1) {
        key = eps[0].mr->rkey;
    } else {
        SVT_NN(mw, ibv_alloc_mw(dev.pd, (p->arg == 0) ? IBV_MW_TYPE_1 :
                                IBV_MW_TYPE_2));
        if (p->arg == 0) {
            SVT_CHECK(svt_mw_bind1(&eps[bq], mw, eps[bq].mr, win, SVT_WIN_LEN,
                                   IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
                      "type 1 bind failed");
        } else if (p->arg == 3) {
            SVT_CHECK(svt_mw_bind2(&eps[bq], mw, eps[bq].mr, win, SVT_WIN_LEN,
                                   IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
                      "type 2 bind failed");
        }
        key = mw->rkey;
    }
    svt_post_recv(&eps[0], SVT_RECV_OFF, 4096, 0x5e);
    a = svt_mw_ask(p, SVT_MW_SEND_INV, 0, key, 0, 64, 3, 0);
    SVT_CHECK(a.status == IBV_WC_REM_INV_REQ_ERR, "SEND_WITH_INV of key 0x%x: "
              "%s, expected a remote invalid request error", key,
              ibv_wc_status_str(a.status));
    svt_expect_wc(eps[0].cq, IBV_WC_REM_INV_REQ_ERR, -1, 0x5e, NULL);
    SVT_CHECK(svt_qp_state(eps[0].qp) == IBV_QPS_ERR, "responder QP state %d",
              svt_qp_state(eps[0].qp));
    if (p->arg == 3) {
        svt_fill(eps[bq].buf + SVT_WIN_OFF, 128, 4);
        svt_mw2_read_ok(p, bq, key, win, 128, 4);
    }
    if (mw != NULL) {
        SVT_OK(ibv_dealloc_mw(mw));
    }
    svt_mw2_teardown(p, &dev, eps, nqp);
}

/* IBV_WR_LOCAL_INV of a key it cannot invalidate completes with
 * IBV_WC_LOC_QP_OP_ERR (rxe_do_local_ops) and takes the QP to ERR: a type
 * 1 window's key, an MR's, an unbound type 2 window's, a type 2 window's
 * bound through another QP (mlx5 checks the QP number), a key of nothing */
static void svt_case_mw_local_inv_refused(svt_proc_t *p)
{
    static const char *const what[] = {
        "type 1 window", "MR", "unbound type 2 window",
        "type 2 window of another QP", "key of nothing",
    };
    enum ibv_wc_status st;
    struct ibv_mw *mw;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint32_t key;
    int i;

    svt_dev_open(&dev);
    for (i = 0; i < 5; ++i) {
        svt_mw_opts(&o, IBV_QPT_RC);
        svt_ep_local_pair(&dev, &o, &a, &b);
        SVT_NN(mw, ibv_alloc_mw(dev.pd, (i == 0) ? IBV_MW_TYPE_1 :
                                IBV_MW_TYPE_2));
        key = mw->rkey;
        if (i == 0) {
            SVT_CHECK(svt_mw_bind1(&a, mw, a.mr, (uintptr_t)a.buf, 4096,
                                   IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
                      "type 1 bind");
            key = mw->rkey;
        } else if (i == 1) {
            key = a.mr->lkey;
        } else if (i == 3) {
            SVT_CHECK(svt_mw_bind2(&b, mw, b.mr, (uintptr_t)b.buf, 4096,
                                   IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
                      "type 2 bind on the other QP");
            key = mw->rkey;
        } else if (i == 4) {
            key = ibv_inc_rkey(key) ^ 0x100;
        }
        st = svt_mw_local_inv(&a, key);
        SVT_CHECK(st == IBV_WC_LOC_QP_OP_ERR, "LOCAL_INV of a %s's key: %s, "
                  "expected %s", what[i], ibv_wc_status_str(st),
                  ibv_wc_status_str(IBV_WC_LOC_QP_OP_ERR));
        SVT_CHECK(svt_qp_state(a.qp) == IBV_QPS_ERR, "%s: QP state %d",
                  what[i], svt_qp_state(a.qp));
        SVT_OK(ibv_dealloc_mw(mw));
        svt_ep_destroy(&a);
        svt_ep_destroy(&b);
    }
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_mw_inv[] = {
    {"mw/type2_remote", svt_case_mw_type2_remote, 2},
    {"mw/type2_local_inv", svt_case_mw_type2_local_inv, 2},
    {"mw/inv_during_write", svt_case_mw_inv_during_write, 2},
    {"mw/type2_zero_based", svt_case_mw_type2_zero_based, 2},
    {"mw/type2_wr_api", svt_case_mw_type2_wr_api, 2},
    {"mw/type2_other_qp", svt_case_mw_type2_other_qp, 2},
    {"mw/denied_before_window", svt_case_mw_denied, 2, 0},
    {"mw/denied_past_end", svt_case_mw_denied, 2, 1},
    {"mw/denied_write_read_only", svt_case_mw_denied, 2, 2},
    {"mw/denied_read_write_only", svt_case_mw_denied, 2, 3},
    {"mw/denied_atomic_right", svt_case_mw_denied, 2, 4},
    {"mw/denied_after_dealloc", svt_case_mw_denied, 2, 5},
    {"mw/send_inv_type1", svt_case_mw_send_inv_refused, 2, 0},
    {"mw/send_inv_mr_key", svt_case_mw_send_inv_refused, 2, 1},
    {"mw/send_inv_unbound", svt_case_mw_send_inv_refused, 2, 2},
    {"mw/send_inv_other_qp", svt_case_mw_send_inv_refused, 2, 3},
    {"mw/local_inv_refused", svt_case_mw_local_inv_refused, 1},
    {NULL}
};
