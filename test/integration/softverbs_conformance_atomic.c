/*
 * softverbs conformance: atomics (results, atomicity under concurrency from
 * two processes) and the extended QP API (ibv_create_qp_ex + ibv_wr_*).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#define SVT_ATOMIC_OFF 256   /* 8-byte aligned counter in the target buffer */

static uint64_t svt_u64_at(const svt_ep_t *ep, size_t off)
{
    uint64_t v;

    memcpy(&v, ep->buf + off, sizeof(v));
    return v;
}

static void svt_u64_set(svt_ep_t *ep, size_t off, uint64_t v)
{
    memcpy(ep->buf + off, &v, sizeof(v));
}

/* Post one atomic and return the fetched (original) value */
static uint64_t svt_atomic(svt_ep_t *ep, enum ibv_wr_opcode op, size_t roff,
                           uint64_t add_or_cmp, uint64_t swap, uint64_t wr_id)
{
    struct ibv_sge sge = {(uintptr_t)ep->buf, 8, ep->mr->lkey};
    struct ibv_send_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id                 = wr_id;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.opcode                = op;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = svt_raddr(ep, roff);
    wr.wr.atomic.rkey        = ep->remote.rkey;
    wr.wr.atomic.compare_add = add_or_cmp;
    wr.wr.atomic.swap        = swap;
    SVT_OK(ibv_post_send(ep->qp, &wr, &bad));
    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, (op == IBV_WR_ATOMIC_CMP_AND_SWP) ?
                  IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, wr_id, NULL);
    return svt_u64_at(ep, 0);
}

static void svt_atomic_pair(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *ep)
{
    svt_ep_opts_t o;

    svt_dev_open(dev);
    SVT_CHECK(dev->attr.atomic_cap != IBV_ATOMIC_NONE,
              "device reports atomic_cap NONE");
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 4096;
    svt_ep_pair(p, !p->rank, dev, &o, ep);
}

static void svt_case_fetch_add(svt_proc_t *p)
{
    const uint64_t init = 0x00000000fffffff0ull, add = 0x25;
    svt_dev_t dev;
    svt_ep_t ep;
    uint64_t old;

    svt_atomic_pair(p, &dev, &ep);
    if (p->rank == 1) {
        svt_u64_set(&ep, SVT_ATOMIC_OFF, init);
        svt_u64_set(&ep, SVT_ATOMIC_OFF + 8, 0x1111111111111111ull);
        svt_sync(p, 0);
        svt_sync(p, 0);
        SVT_CHECK(svt_u64_at(&ep, SVT_ATOMIC_OFF) == init + 2 * add,
                  "counter 0x%llx, expected 0x%llx",
                  (unsigned long long)svt_u64_at(&ep, SVT_ATOMIC_OFF),
                  (unsigned long long)(init + 2 * add));
        SVT_CHECK(svt_u64_at(&ep, SVT_ATOMIC_OFF + 8) == 0x1111111111111111ull,
                  "fetch-add touched the next word");
    } else {
        svt_sync(p, 1);
        old = svt_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, SVT_ATOMIC_OFF, add,
                         0, 1);
        SVT_CHECK(old == init, "first fetch returned 0x%llx, expected 0x%llx",
                  (unsigned long long)old, (unsigned long long)init);
        old = svt_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, SVT_ATOMIC_OFF, add,
                         0, 2);
        SVT_CHECK(old == init + add, "second fetch returned 0x%llx",
                  (unsigned long long)old);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

static void svt_case_cmp_swap(svt_proc_t *p)
{
    const uint64_t init = 0xdeadbeefcafef00dull, swap = 0x0123456789abcdefull;
    svt_dev_t dev;
    svt_ep_t ep;
    uint64_t old;

    svt_atomic_pair(p, &dev, &ep);
    if (p->rank == 1) {
        svt_u64_set(&ep, SVT_ATOMIC_OFF, init);
        svt_sync(p, 0);
        svt_sync(p, 0); /* after the miss */
        SVT_CHECK(svt_u64_at(&ep, SVT_ATOMIC_OFF) == init,
                  "compare-swap with a wrong compare value changed memory");
        svt_sync(p, 0);
        svt_sync(p, 0); /* after the hit */
        SVT_CHECK(svt_u64_at(&ep, SVT_ATOMIC_OFF) == swap,
                  "compare-swap hit did not swap: 0x%llx",
                  (unsigned long long)svt_u64_at(&ep, SVT_ATOMIC_OFF));
    } else {
        svt_sync(p, 1);
        old = svt_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP, SVT_ATOMIC_OFF,
                         init + 1, swap, 1);
        SVT_CHECK(old == init, "miss returned 0x%llx", (unsigned long long)old);
        svt_sync(p, 1);
        svt_sync(p, 1);
        old = svt_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP, SVT_ATOMIC_OFF, init,
                         swap, 2);
        SVT_CHECK(old == init, "hit returned 0x%llx", (unsigned long long)old);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/*
 * Concurrency: rank 0 owns the counter, ranks 1 and 2 hammer it at the same
 * time, with fetch-and-add (arg 0) or with compare-and-swap loops (arg 1).
 * The final value must be the exact total.
 */
#define SVT_HAMMER_OPS 2000

static void svt_case_hammer(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_opts_t o;
    svt_ep_t ep[SVT_MAX_PROCS];
    uint64_t old, expect, v, i, retries = 0;
    int r;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 4096;
    if (p->rank == 0) {
        /* one QP per client; both clients target the first endpoint's MR
         * (same PD, so its rkey is valid on every QP) */
        for (r = 1; r < p->nprocs; ++r) {
            svt_ep_pair(p, r, &dev, &o, &ep[r]);
        }
        for (r = 1; r < p->nprocs; ++r) {
            svt_addr_t a;

            svt_ep_addr(&ep[1], &a);
            svt_msg_send(p, r, &a, sizeof(a));
        }
        svt_barrier(p); /* go */
        svt_barrier(p); /* done */
        expect = (uint64_t)(p->nprocs - 1) * SVT_HAMMER_OPS;
        v      = svt_u64_at(&ep[1], SVT_ATOMIC_OFF);
        SVT_CHECK(v == expect, "counter is %llu after %llu increments",
                  (unsigned long long)v, (unsigned long long)expect);
    } else {
        svt_addr_t target;

        svt_ep_pair(p, 0, &dev, &o, &ep[0]);
        svt_msg_recv(p, 0, &target, sizeof(target));
        ep[0].remote.addr = target.addr;
        ep[0].remote.rkey = target.rkey;
        svt_barrier(p);
        for (i = 0; i < SVT_HAMMER_OPS; ++i) {
            if (p->arg == 0) {
                old = svt_atomic(&ep[0], IBV_WR_ATOMIC_FETCH_AND_ADD,
                                 SVT_ATOMIC_OFF, 1, 0, i);
                continue;
            }
            old = svt_atomic(&ep[0], IBV_WR_ATOMIC_FETCH_AND_ADD,
                             SVT_ATOMIC_OFF, 0, 0, i);
            while (svt_atomic(&ep[0], IBV_WR_ATOMIC_CMP_AND_SWP, SVT_ATOMIC_OFF,
                              old, old + 1, i) != old) {
                old = svt_u64_at(&ep[0], 0);
                ++retries;
            }
        }
        svt_note("rank %d: %llu cas retries", p->rank,
                 (unsigned long long)retries);
        svt_barrier(p);
    }
    svt_barrier(p);
}

/* Extended QP: ibv_create_qp_ex + ibv_wr_* (write, send with imm, atomic) */
static void svt_case_qp_ex(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_qp_init_attr_ex init;
    struct ibv_qp_ex *qpx;
    struct ibv_wc wc;
    svt_addr_t mine, theirs;
    uint64_t v;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 8192;
    svt_ep_create(&dev, &o, &ep);
    /* replace the plain QP with an extended one */
    SVT_OK(ibv_destroy_qp(ep.qp));
    memset(&init, 0, sizeof(init));
    init.qp_type          = IBV_QPT_RC;
    init.send_cq          = ep.cq;
    init.recv_cq          = ep.cq;
    init.cap.max_send_wr  = 16;
    init.cap.max_recv_wr  = 16;
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 2;
    init.pd               = dev.pd;
    init.comp_mask        = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    init.send_ops_flags   = IBV_QP_EX_WITH_RDMA_WRITE |
                            IBV_QP_EX_WITH_SEND_WITH_IMM |
                            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    SVT_NN(ep.qp, ibv_create_qp_ex(dev.ctx, &init));
    SVT_NN(qpx, ibv_qp_to_qp_ex(ep.qp));
    svt_ep_addr(&ep, &mine);
    svt_msg_send(p, !p->rank, &mine, sizeof(mine));
    svt_msg_recv(p, !p->rank, &theirs, sizeof(theirs));
    svt_ep_connect(&ep, &theirs);
    svt_sync(p, !p->rank);

    if (p->rank == 1) {
        svt_post_recv(&ep, 4096, 64, 40);
        svt_sync(p, 0);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 40, &wc);
        SVT_CHECK((wc.wc_flags & IBV_WC_WITH_IMM) &&
                  (ntohl(wc.imm_data) == 0xfeed), "imm 0x%x flags 0x%x",
                  ntohl(wc.imm_data), wc.wc_flags);
        SVT_CHECK(wc.byte_len == 32, "byte_len %u", wc.byte_len);
        svt_pattern_check(ep.buf + 4096, 32, 2, "send_imm payload");
        svt_sync(p, 0);
        svt_pattern_check(ep.buf + 100, 1000, 1, "wr_rdma_write data");
        memcpy(&v, ep.buf + 2048, 8);
        SVT_CHECK(v == 1005, "counter %llu after wr_atomic_fetch_add, "
                  "expected 1005", (unsigned long long)v);
    } else {
        svt_fill(ep.buf + 100, 1000, 1);
        svt_fill(ep.buf + 1200, 32, 2);
        svt_sync(p, 1);

        ibv_wr_start(qpx);
        qpx->wr_id    = 30;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(qpx, ep.remote.rkey, svt_raddr(&ep, 100));
        ibv_wr_set_sge(qpx, ep.mr->lkey, (uintptr_t)ep.buf + 100, 1000);
        qpx->wr_id    = 31;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_send_imm(qpx, htonl(0xfeed));
        ibv_wr_set_sge(qpx, ep.mr->lkey, (uintptr_t)ep.buf + 1200, 32);
        SVT_OK(ibv_wr_complete(qpx));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 30, NULL);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 31, NULL);

        /* a started-then-aborted batch must post nothing */
        ibv_wr_start(qpx);
        qpx->wr_id    = 32;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(qpx, ep.remote.rkey, svt_raddr(&ep, 100));
        ibv_wr_set_sge(qpx, ep.mr->lkey, (uintptr_t)ep.buf + 3000, 1000);
        ibv_wr_abort(qpx);
        svt_expect_no_wc(ep.cq, 50);

        /* remote counter at 2048 starts at 0 */
        ibv_wr_start(qpx);
        qpx->wr_id    = 33;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_atomic_fetch_add(qpx, ep.remote.rkey, svt_raddr(&ep, 2048), 1005);
        ibv_wr_set_sge(qpx, ep.mr->lkey, (uintptr_t)ep.buf + 4000, 8);
        SVT_OK(ibv_wr_complete(qpx));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 33, NULL);
        memcpy(&v, ep.buf + 4000, 8);
        SVT_CHECK(v == 0, "fetched %llu, expected 0", (unsigned long long)v);
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/* Extended CQ: ibv_create_cq_ex and the ibv_start_poll/ibv_wc_read_* API */
static void svt_case_cq_ex(svt_proc_t *p)
{
    struct ibv_cq_init_attr_ex ca = {.cqe = 16,
                                     .wc_flags = IBV_WC_STANDARD_FLAGS};
    struct ibv_poll_cq_attr pa = {0};
    struct ibv_cq_ex *cqx = NULL;
    double deadline;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    int ret;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 1) {
        SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
        o.cq = ibv_cq_ex_to_cq(cqx);
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        svt_post_recv(&ep, 0, 256, 77);
        svt_sync(p, 0);
        deadline = svt_now_ms() + SVT_WC_TIMEOUT_MS;
        while ((ret = ibv_start_poll(cqx, &pa)) == ENOENT) {
            SVT_CHECK(svt_now_ms() < deadline, "no completion on the cq_ex");
        }
        SVT_CHECK(ret == 0, "ibv_start_poll returned %d", ret);
        SVT_CHECK(cqx->status == IBV_WC_SUCCESS && cqx->wr_id == 77,
                  "status %s wr_id %llu", ibv_wc_status_str(cqx->status),
                  (unsigned long long)cqx->wr_id);
        SVT_CHECK(ibv_wc_read_opcode(cqx) == IBV_WC_RECV, "opcode %d",
                  ibv_wc_read_opcode(cqx));
        SVT_CHECK(ibv_wc_read_byte_len(cqx) == 100, "byte_len %u",
                  ibv_wc_read_byte_len(cqx));
        SVT_CHECK(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM, "wc_flags 0x%x",
                  ibv_wc_read_wc_flags(cqx));
        SVT_CHECK(ntohl(ibv_wc_read_imm_data(cqx)) == 0xabcd, "imm 0x%x",
                  ntohl(ibv_wc_read_imm_data(cqx)));
        SVT_CHECK(ibv_wc_read_qp_num(cqx) == ep.qp->qp_num, "qp_num 0x%x",
                  ibv_wc_read_qp_num(cqx));
        SVT_CHECK(ibv_next_poll(cqx) == ENOENT, "a second completion");
        ibv_end_poll(cqx);
        svt_pattern_check(ep.buf, 100, 5, "payload");
    } else {
        svt_fill(ep.buf, 100, 5);
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND_WITH_IMM, 0, 100, 0, 0, 0xabcd,
                             IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 1, NULL);
    }
    svt_sync(p, !p->rank);
}

/* More RDMA READs posted at once than max_rd_atomic (1): they queue, all
 * complete in order with the right data */
static void svt_case_many_reads(svt_proc_t *p)
{
    const int n = 16, len = 4096;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 2 * n * len;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        for (i = 0; i < n; ++i) {
            svt_fill(ep.buf + i * len, len, 100 + i);
        }
        svt_sync(p, 0);
    } else {
        svt_sync(p, 1);
        for (i = 0; i < n; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_READ, (n + i) * len, len,
                                 svt_raddr(&ep, i * len), ep.remote.rkey, 0,
                                 IBV_SEND_SIGNALED, i));
        }
        for (i = 0; i < n; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, i, NULL);
            svt_pattern_check(ep.buf + (n + i) * len, len, 100 + i, "read");
        }
    }
    svt_sync(p, !p->rank);
}

const svt_case_t svt_cases_atomic[] = {
    {"atomic/fetch_add", svt_case_fetch_add, 2},
    {"atomic/cmp_swap", svt_case_cmp_swap, 2},
    {"atomic/concurrent_fetch_add", svt_case_hammer, 3, 0, 30},
    {"atomic/concurrent_cmp_swap", svt_case_hammer, 3, 1, 30},
    {"qp_ex/wr_api", svt_case_qp_ex, 2},
    {"cq_ex/poll_api", svt_case_cq_ex, 2},
    {"order/reads_beyond_max_rd_atomic", svt_case_many_reads, 2},
    {NULL}
};
