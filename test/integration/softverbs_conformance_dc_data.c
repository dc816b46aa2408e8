/*
 * softverbs conformance: mlx5 Dynamically Connected QPs moving data, and
 * their errors. A DCI is reliable as an RC requester (acknowledged,
 * retried, RDMA read and atomics: mlx5dv_create_qp(3)); its target comes
 * per WR (mlx5dv_wr_set_dc_addr(3)); a DCT serves every DCI that carries
 * its key, on its SRQ. The rules are cited from softverbs' sv_dc.c,
 * sv_req.c (sv_req_dc) and sv_resp.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_dc.h"

#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dc/data: the layout of both buffers */
#define SVT_DCD_SIZE       (4u << 20)
#define SVT_DCD_RECV_OFF   0u           /* DCT: receive buffer */
#define SVT_DCD_RECV_LEN   8192u
#define SVT_DCD_WRITE_OFF  (1u << 20)   /* DCT: RDMA WRITE target */
/* DCT: READ source, DCI: its copy; the WRITE guard stays before it */
#define SVT_DCD_READ_OFF   ((2u << 20) + 4096)
#define SVT_DCD_ATOMIC_OFF ((3u << 20) + 8192) /* DCT: the word, DCI: old */
#define SVT_DCD_GUARD      64u
#define SVT_DCD_ATOMIC0    0x00000001ffffffffull

static const struct {
    enum ibv_wr_opcode op;
    uint32_t           len;
    unsigned           flags;   /* IBV_SEND_INLINE */
    uint64_t           arg1;    /* add / compare */
    uint64_t           arg2;    /* swap */
} svt_dcd_steps[] = {
    {IBV_WR_SEND, 1}, {IBV_WR_SEND, 64}, {IBV_WR_SEND, 4096},
    {IBV_WR_SEND_WITH_IMM, 1}, {IBV_WR_SEND_WITH_IMM, 64},
    {IBV_WR_SEND_WITH_IMM, 4096},
    {IBV_WR_SEND, 1, IBV_SEND_INLINE}, {IBV_WR_SEND, 64, IBV_SEND_INLINE},
    {IBV_WR_RDMA_WRITE, 1}, {IBV_WR_RDMA_WRITE, 64},
    {IBV_WR_RDMA_WRITE, 4096}, {IBV_WR_RDMA_WRITE, 1u << 20},
    {IBV_WR_RDMA_WRITE_WITH_IMM, 1}, {IBV_WR_RDMA_WRITE_WITH_IMM, 64},
    {IBV_WR_RDMA_WRITE_WITH_IMM, 4096},
    {IBV_WR_RDMA_WRITE_WITH_IMM, 1u << 20},
    {IBV_WR_RDMA_READ, 1}, {IBV_WR_RDMA_READ, 64},
    {IBV_WR_RDMA_READ, 4096}, {IBV_WR_RDMA_READ, 1u << 20},
    /* 64-bit arithmetic (a carry into the high word), a CAS that swaps,
     * one that does not */
    {IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 0, 1},
    {IBV_WR_ATOMIC_CMP_AND_SWP, 8, 0, 0x0000000200000000ull,
     0xfedcba9876543210ull},
    {IBV_WR_ATOMIC_CMP_AND_SWP, 8, 0, 0x0000000200000000ull, 1},
};

static int svt_dcd_has_imm(enum ibv_wr_opcode op)
{
    return (op == IBV_WR_SEND_WITH_IMM) || (op == IBV_WR_RDMA_WRITE_WITH_IMM);
}

static int svt_dcd_needs_recv(enum ibv_wr_opcode op)
{
    return (op == IBV_WR_SEND) || svt_dcd_has_imm(op);
}

static int svt_dcd_is_atomic(enum ibv_wr_opcode op)
{
    return (op == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
           (op == IBV_WR_ATOMIC_CMP_AND_SWP);
}

static enum ibv_wc_opcode svt_dcd_wc_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    default:
        return IBV_WC_SEND;
    }
}

/* DCT side of one step: the receive completion and the memory */
static void svt_dcd_check_dct(svt_dc_ep_t *dct, size_t i,
                              const svt_addr_t *dci, uint64_t atomic)
{
    enum ibv_wr_opcode op = svt_dcd_steps[i].op;
    uint32_t len          = svt_dcd_steps[i].len;
    uint32_t seed         = 100 + (uint32_t)i;
    struct ibv_wc wc;

    if (svt_dcd_needs_recv(op)) {
        svt_expect_wc(dct->cq, IBV_WC_SUCCESS,
                      (op == IBV_WR_RDMA_WRITE_WITH_IMM) ?
                      IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, 1000 + i, &wc);
        SVT_CHECK((wc.byte_len == len) && (wc.src_qp == dci->qpn) &&
                  (wc.qp_num == dct->qp->qp_num) && (wc.slid == dci->lid),
                  "step %zu: DCT CQE byte_len %u src_qp 0x%x qp_num 0x%x "
                  "slid %u; expected %u, DCI 0x%x, DCT 0x%x, %u", i,
                  wc.byte_len, wc.src_qp, wc.qp_num, wc.slid, len, dci->qpn,
                  dct->qp->qp_num, dci->lid);
        SVT_CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == svt_dcd_has_imm(op),
                  "step %zu: wc_flags 0x%x", i, wc.wc_flags);
        SVT_CHECK(!svt_dcd_has_imm(op) ||
                  (wc.imm_data == htobe32(0xa0b0c000u + (uint32_t)i)),
                  "step %zu: imm_data 0x%x", i, be32toh(wc.imm_data));
    } else {
        SVT_CHECK(ibv_poll_cq(dct->cq, 1, &wc) == 0, "step %zu: a DCT "
                  "completion (opcode %d) for a request without one", i,
                  wc.opcode);
    }
    if ((op == IBV_WR_SEND) || (op == IBV_WR_SEND_WITH_IMM)) {
        svt_pattern_check(dct->buf + SVT_DCD_RECV_OFF, len, seed, "SEND");
        svt_memset_check(dct->buf + SVT_DCD_RECV_OFF + len, SVT_DCD_GUARD, 0,
                         "after the SEND");
    } else if ((op == IBV_WR_RDMA_WRITE) ||
               (op == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        svt_pattern_check(dct->buf + SVT_DCD_WRITE_OFF, len, seed, "WRITE");
        svt_memset_check(dct->buf + SVT_DCD_WRITE_OFF + len, SVT_DCD_GUARD,
                         0, "after the WRITE");
    }
    SVT_CHECK(*(uint64_t *)(dct->buf + SVT_DCD_ATOMIC_OFF) == atomic,
              "step %zu: atomic word 0x%llx, expected 0x%llx", i,
              (unsigned long long)*(uint64_t *)(dct->buf +
                                                SVT_DCD_ATOMIC_OFF),
              (unsigned long long)atomic);
}

/*
 * Every operation of a DCI through the ibv_wr_* API, at 1 B to 1 MiB, to a
 * DCT of another process: every byte arrives, the DCT's receive CQEs name
 * the DCI (src_qp) and the DCT (qp_num), atomics are 64-bit and return the
 * old value. Rank 0 owns the DCT, rank 1 the DCI.
 */
static void svt_case_dc_data(svt_proc_t *p)
{
    uint64_t atomic = SVT_DCD_ATOMIC0, old;
    svt_addr_t mine, theirs;
    enum ibv_wr_opcode op;
    svt_dc_tgt_t tgt;
    svt_dc_ep_t ep;
    struct ibv_wc wc;
    svt_dev_t dev;
    uint32_t len, seed;
    size_t i, off;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, p->rank == 0, SVT_DCD_SIZE, &ep);
    if (p->rank == 0) {
        *(uint64_t *)(ep.buf + SVT_DCD_ATOMIC_OFF) = atomic;
        svt_dct_connect(&ep, 12);
    } else {
        svt_dci_connect(&ep, 14, 7, 7);
    }
    svt_dc_addr(&ep, &mine);
    svt_msg_send(p, !p->rank, &mine, sizeof(mine));
    svt_msg_recv(p, !p->rank, &theirs, sizeof(theirs));

    if (p->rank == 1) {
        svt_dc_tgt_init(&ep, &theirs, SVT_DC_KEY, &tgt);
    }
    for (i = 0; i < sizeof(svt_dcd_steps) / sizeof(svt_dcd_steps[0]); ++i) {
        op   = svt_dcd_steps[i].op;
        len  = svt_dcd_steps[i].len;
        seed = 100 + (uint32_t)i;
        old  = atomic;
        if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            atomic += svt_dcd_steps[i].arg1;
        } else if ((op == IBV_WR_ATOMIC_CMP_AND_SWP) &&
                   (atomic == svt_dcd_steps[i].arg1)) {
            atomic = svt_dcd_steps[i].arg2;
        }
        if (p->rank == 0) {
            memset(ep.buf + SVT_DCD_RECV_OFF, 0, SVT_DCD_RECV_LEN);
            memset(ep.buf + SVT_DCD_WRITE_OFF, 0, len + SVT_DCD_GUARD);
            if (op == IBV_WR_RDMA_READ) {
                svt_fill(ep.buf + SVT_DCD_READ_OFF, len, seed);
            }
            if (svt_dcd_needs_recv(op)) {
                svt_dc_post_srq_recv(&ep, SVT_DCD_RECV_OFF, SVT_DCD_RECV_LEN,
                                     1000 + i);
            }
            svt_sync(p, 1);
            svt_sync(p, 1); /* rank 1 has its completion */
            svt_dcd_check_dct(&ep, i, &theirs, atomic);
            continue;
        }
        svt_fill(ep.buf, len, seed);
        memset(ep.buf + SVT_DCD_READ_OFF, 0, len + SVT_DCD_GUARD);
        memset(ep.buf + SVT_DCD_ATOMIC_OFF, 0x5a, 8 + SVT_DCD_GUARD);
        svt_sync(p, 0);
        /* READ and atomics land at their offset of the DCI's buffer, at
         * the same offset as their source at the DCT */
        off = (op == IBV_WR_RDMA_READ) ? SVT_DCD_READ_OFF :
              svt_dcd_is_atomic(op) ? SVT_DCD_ATOMIC_OFF : 0;
        ibv_wr_start(ep.qpx);
        svt_dci_wr(&ep, &tgt, op, off, len, off ? off : SVT_DCD_WRITE_OFF,
                   svt_dcd_has_imm(op) ? 0xa0b0c000u + i :
                   svt_dcd_steps[i].arg1, svt_dcd_steps[i].arg2,
                   IBV_SEND_SIGNALED | svt_dcd_steps[i].flags, i);
        SVT_OK(ibv_wr_complete(ep.qpx));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, svt_dcd_wc_opcode(op), i, &wc);
        SVT_CHECK(wc.qp_num == ep.qp->qp_num, "step %zu: DCI CQE qp_num "
                  "0x%x, DCI 0x%x", i, wc.qp_num, ep.qp->qp_num);
        if (op == IBV_WR_RDMA_READ) {
            SVT_CHECK(wc.byte_len == len, "READ byte_len %u, expected %u",
                      wc.byte_len, len);
            svt_pattern_check(ep.buf + SVT_DCD_READ_OFF, len, seed, "READ");
            svt_memset_check(ep.buf + SVT_DCD_READ_OFF + len, SVT_DCD_GUARD,
                             0, "after the READ");
        } else if (svt_dcd_is_atomic(op)) {
            SVT_CHECK(wc.byte_len == 8, "atomic byte_len %u", wc.byte_len);
            SVT_CHECK(*(uint64_t *)(ep.buf + SVT_DCD_ATOMIC_OFF) == old,
                      "step %zu: atomic returned 0x%llx, expected 0x%llx", i,
                      (unsigned long long)*(uint64_t *)(ep.buf +
                                                        SVT_DCD_ATOMIC_OFF),
                      (unsigned long long)old);
            svt_memset_check(ep.buf + SVT_DCD_ATOMIC_OFF + 8, SVT_DCD_GUARD,
                             0x5a, "after the atomic result");
        }
        svt_sync(p, 0);
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        SVT_OK(ibv_destroy_ah(tgt.ah));
    }
    svt_dc_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* dc/switch */
#define SVT_DCS_N      100    /* WRITEs to each DCT */
#define SVT_DCS_BATCH  20     /* WRs per ibv_wr_start .. ibv_wr_complete */
#define SVT_DCS_HALF   (1ull << 40)

static inline uint64_t svt_dcs_val(unsigned seq)
{
    return (0xd5ull << 56) | seq;
}

/*
 * One DCI (rank 0) alternates between the DCTs of ranks 1 and 2, 100
 * WRITEs each, 20 WRs per ibv_wr_complete: the DC address belongs to each
 * WR, not to the DCI. WQEs run in posting order across target switches
 * (sv_req_dc: "order within the DCI holds across the switch"): completions
 * come back in order, and at each DCT WRITE n+1 (16 bytes: its value, then
 * a marked copy) overwrites the copy WRITE n left in its slot. softverbs
 * counts each change of target (dc_switches: 2 x 100 - 1).
 */
static void svt_case_dc_switch(svt_proc_t *p)
{
    svt_dc_tgt_t tgt[2];
    struct softverbs_stats st;
    svt_addr_t addr;
    struct ibv_wc wc;
    svt_dc_ep_t ep;
    svt_dev_t dev;
    uint64_t *v;
    unsigned s, b, j, t;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, p->rank != 0, 8192, &ep);
    v = (uint64_t *)ep.buf;
    if (p->rank != 0) {
        t = p->rank - 1;
        svt_dct_connect(&ep, 12);
        svt_dc_addr(&ep, &addr);
        svt_msg_send(p, 0, &addr, sizeof(addr));
        svt_sync(p, 0); /* the DCI is done */
        for (j = 0; j < SVT_DCS_N; ++j) {
            SVT_CHECK(v[j] == svt_dcs_val(2 * j + t), "DCT %u slot %u: "
                      "0x%llx, expected 0x%llx (WRITEs out of order?)", t, j,
                      (unsigned long long)v[j],
                      (unsigned long long)svt_dcs_val(2 * j + t));
        }
        SVT_CHECK((v[SVT_DCS_N] == (svt_dcs_val(2 * SVT_DCS_N - 2 + t) |
                                    SVT_DCS_HALF)) && (v[SVT_DCS_N + 1] == 0),
                  "DCT %u: after the last slot 0x%llx 0x%llx", t,
                  (unsigned long long)v[SVT_DCS_N],
                  (unsigned long long)v[SVT_DCS_N + 1]);
        svt_dc_stats(getpid(), &st);
        SVT_CHECK((st.num_dct == 1) && (st.num_dci == 0) &&
                  (st.dc_switches == 0) && (st.dc_key_violations == 0),
                  "DCT process stats: %u DCTs, %u DCIs, %llu switches, %llu "
                  "key violations", st.num_dct, st.num_dci,
                  (unsigned long long)st.dc_switches,
                  (unsigned long long)st.dc_key_violations);
        svt_sync(p, 0);
        svt_dc_ep_destroy(&ep);
        svt_dev_close(&dev);
        return;
    }

    svt_dci_connect(&ep, 14, 7, 7);
    for (t = 0; t < 2; ++t) {
        svt_msg_recv(p, t + 1, &addr, sizeof(addr));
        svt_dc_tgt_init(&ep, &addr, SVT_DC_KEY, &tgt[t]);
    }
    SVT_CHECK(tgt[0].dctn != tgt[1].dctn, "both DCTs are 0x%x", tgt[0].dctn);
    for (s = 0; s < 2 * SVT_DCS_N; ++s) {
        v[2 * s]     = svt_dcs_val(s);
        v[2 * s + 1] = svt_dcs_val(s) | SVT_DCS_HALF;
    }
    for (b = 0; b < 2 * SVT_DCS_N; b += SVT_DCS_BATCH) {
        ibv_wr_start(ep.qpx);
        for (s = b; s < b + SVT_DCS_BATCH; ++s) {
            svt_dci_wr(&ep, &tgt[s % 2], IBV_WR_RDMA_WRITE, 16 * s, 16,
                       8 * (s / 2), 0, 0, IBV_SEND_SIGNALED, s);
        }
        SVT_OK(ibv_wr_complete(ep.qpx));
        for (s = b; s < b + SVT_DCS_BATCH; ++s) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, s, &wc);
        }
    }
    svt_dc_stats(getpid(), &st);
    SVT_CHECK((st.num_dci == 1) && (st.num_dct == 0) &&
              (st.dc_switches == 2 * SVT_DCS_N - 1), "DCI process stats: "
              "%u DCIs, %u DCTs, %llu switches; expected 1, 0, %u",
              st.num_dci, st.num_dct, (unsigned long long)st.dc_switches,
              2 * SVT_DCS_N - 1);
    svt_barrier(p); /* the DCTs check */
    svt_barrier(p);
    for (t = 0; t < 2; ++t) {
        SVT_OK(ibv_destroy_ah(tgt[t].ah));
    }
    svt_dc_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/*
 * A request with another key than the DCT's is dropped without a response
 * and counted by the DCT (sv_resp_dc_key_violation, the PRM's
 * dc_access_key_violation_count): the DCI retries and completes with
 * IBV_WC_RETRY_EXC_ERR; nothing is written, no receive WQE is consumed,
 * the DCT stays in RTR and serves a DCI with the right key. Rank 0 owns
 * the DCT, rank 1 the DCIs.
 */
static void svt_case_dc_wrong_key(svt_proc_t *p)
{
    svt_dc_tgt_t good, bad;
    struct softverbs_stats st;
    svt_addr_t mine, theirs;
    struct ibv_qp_attr a;
    svt_dc_ep_t ep, dci2;
    struct ibv_wc wc;
    uint64_t viol;
    svt_dev_t dev;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, p->rank == 0, 8192, &ep);
    if (p->rank == 0) {
        svt_dct_connect(&ep, 1);
        svt_dc_post_srq_recv(&ep, 4096, 1024, 7);
        svt_dc_addr(&ep, &mine);
        svt_msg_send(p, 1, &mine, sizeof(mine));
        svt_msg_recv(p, 1, &theirs, sizeof(theirs)); /* the good DCI */
        svt_sync(p, 1); /* the wrong-key WRITE and SEND have failed */
        svt_memset_check(ep.buf, 8192, 0, "DCT memory after wrong-key "
                         "requests");
        SVT_CHECK(ibv_poll_cq(ep.cq, 1, &wc) == 0, "a DCT completion (wr_id "
                  "%llu status %d) for a wrong-key SEND",
                  (unsigned long long)wc.wr_id, wc.status);
        SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_RTR, "DCT state %d after "
                  "wrong-key requests", svt_dc_state(ep.qp));
        svt_dc_stats(getpid(), &st);
        viol = st.dc_key_violations;
        SVT_CHECK(viol >= 2, "dc_key_violations %llu after two wrong-key "
                  "requests", (unsigned long long)viol);
        svt_sync(p, 1);
        svt_sync(p, 1); /* the good DCI's SEND and WRITE are done */
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 7, &wc);
        SVT_CHECK((wc.byte_len == 128) && (wc.src_qp == theirs.qpn) &&
                  (wc.qp_num == ep.qp->qp_num), "DCT CQE byte_len %u src_qp "
                  "0x%x qp_num 0x%x", wc.byte_len, wc.src_qp, wc.qp_num);
        svt_pattern_check(ep.buf + 4096, 128, 2, "SEND with the right key");
        svt_pattern_check(ep.buf, 256, 3, "WRITE with the right key");
        svt_dc_stats(getpid(), &st);
        SVT_CHECK(st.dc_key_violations == viol, "dc_key_violations %llu "
                  "after right-key requests, was %llu",
                  (unsigned long long)st.dc_key_violations,
                  (unsigned long long)viol);
        svt_sync(p, 1);
        svt_dc_ep_destroy(&ep);
        svt_dev_close(&dev);
        return;
    }

    /* timeout 8 (1 ms), one retry: the failure comes quickly */
    svt_dci_connect(&ep, 8, 1, 7);
    svt_dc_ep_create(&dev, 0, 8192, &dci2);
    svt_dci_connect(&dci2, 14, 7, 7);
    svt_msg_recv(p, 0, &theirs, sizeof(theirs));
    svt_dc_addr(&dci2, &mine);
    svt_msg_send(p, 0, &mine, sizeof(mine));
    svt_dc_tgt_init(&ep, &theirs, SVT_DC_KEY ^ 0x100, &bad);
    svt_dc_tgt_init(&dci2, &theirs, SVT_DC_KEY, &good);
    svt_fill(ep.buf, 256, 1);
    SVT_OK(svt_dci_post(&ep, &bad, IBV_WR_RDMA_WRITE, 0, 256, 0, 0, 0, 1));
    svt_expect_wc(ep.cq, IBV_WC_RETRY_EXC_ERR, -1, 1, NULL);
    SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_ERR, "DCI state %d after "
              "RETRY_EXC_ERR", svt_dc_state(ep.qp));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    SVT_OK(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE));
    svt_dci_connect(&ep, 8, 1, 7);
    SVT_OK(svt_dci_post(&ep, &bad, IBV_WR_SEND, 0, 128, 0, 0, 0, 2));
    svt_expect_wc(ep.cq, IBV_WC_RETRY_EXC_ERR, -1, 2, NULL);
    svt_sync(p, 0);
    svt_sync(p, 0);

    svt_fill(dci2.buf, 128, 2);
    SVT_OK(svt_dci_post(&dci2, &good, IBV_WR_SEND, 0, 128, 0, 0, 0, 3));
    svt_expect_wc(dci2.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 3, NULL);
    svt_fill(dci2.buf + 512, 256, 3);
    SVT_OK(svt_dci_post(&dci2, &good, IBV_WR_RDMA_WRITE, 512, 256, 0, 0, 0,
                        4));
    svt_expect_wc(dci2.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 4, NULL);
    svt_sync(p, 0);
    svt_sync(p, 0);
    SVT_OK(ibv_destroy_ah(bad.ah));
    SVT_OK(ibv_destroy_ah(good.ah));
    svt_dc_ep_destroy(&dci2);
    svt_dc_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/*
 * A WRITE with a bad rkey: the DCT NAKs it (IBV_WC_REM_ACCESS_ERR), the
 * DCI goes to ERR and flushes the WR posted after it; the DCT is not
 * moved to ERR (sv_resp_access_error: only an RC responder is). The DCI
 * recovers through RESET, and a second DCI is served meanwhile. Rank 0
 * owns the DCT, rank 1 the DCIs.
 */
static void svt_case_dc_bad_rkey_recover(svt_proc_t *p)
{
    svt_dc_tgt_t good, bad, good2;
    svt_addr_t mine, theirs;
    struct ibv_qp_attr a;
    svt_dc_ep_t ep, dci2;
    struct ibv_wc wc;
    svt_dev_t dev;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, p->rank == 0, 16384, &ep);
    if (p->rank == 0) {
        svt_dct_connect(&ep, 12);
        svt_dc_post_srq_recv(&ep, 12288, 64, 9);
        svt_dc_addr(&ep, &mine);
        svt_msg_send(p, 1, &mine, sizeof(mine));
        svt_msg_recv(p, 1, &theirs, sizeof(theirs));
        svt_sync(p, 1); /* failed and flushed */
        svt_memset_check(ep.buf, 16384, 0, "DCT memory after a bad-rkey "
                         "WRITE and a flushed one");
        SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_RTR, "DCT state %d after "
                  "a remote access error, expected RTR", svt_dc_state(ep.qp));
        SVT_CHECK(ibv_poll_cq(ep.cq, 1, &wc) == 0, "a DCT completion (status "
                  "%d) for a bad-rkey WRITE", wc.status);
        svt_sync(p, 1); /* checked: rank 1 goes on */
        svt_sync(p, 1); /* the recovered DCI wrote */
        svt_pattern_check(ep.buf, 4096, 21, "WRITE after the recovery");
        svt_sync(p, 1);
        svt_sync(p, 1); /* the second DCI wrote with immediate */
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 9,
                      &wc);
        SVT_CHECK((wc.src_qp == theirs.qpn) && (wc.byte_len == 64) &&
                  (wc.wc_flags & IBV_WC_WITH_IMM) &&
                  (wc.imm_data == htobe32(0x5150)), "DCT CQE src_qp 0x%x "
                  "(DCI 0x%x) byte_len %u flags 0x%x imm 0x%x", wc.src_qp,
                  theirs.qpn, wc.byte_len, wc.wc_flags,
                  be32toh(wc.imm_data));
        svt_pattern_check(ep.buf + 8192, 64, 22, "second DCI's WRITE");
        svt_dc_ep_destroy(&ep);
        svt_dev_close(&dev);
        return;
    }

    svt_dci_connect(&ep, 14, 7, 7);
    svt_dc_ep_create(&dev, 0, 16384, &dci2);
    svt_dci_connect(&dci2, 14, 7, 7);
    svt_msg_recv(p, 0, &theirs, sizeof(theirs));
    svt_dc_addr(&dci2, &mine);
    svt_msg_send(p, 0, &mine, sizeof(mine));
    svt_dc_tgt_init(&ep, &theirs, SVT_DC_KEY, &good);
    svt_dc_tgt_init(&dci2, &theirs, SVT_DC_KEY, &good2);
    bad       = good;
    bad.rkey ^= 0xff00;
    svt_fill(ep.buf, 4096, 20);
    ibv_wr_start(ep.qpx);
    svt_dci_wr(&ep, &bad, IBV_WR_RDMA_WRITE, 0, 64, 0, 0, 0,
               IBV_SEND_SIGNALED, 1);
    svt_dci_wr(&ep, &good, IBV_WR_RDMA_WRITE, 0, 64, 4096, 0, 0,
               IBV_SEND_SIGNALED, 2);
    SVT_OK(ibv_wr_complete(ep.qpx));
    svt_expect_wc(ep.cq, IBV_WC_REM_ACCESS_ERR, -1, 1, &wc);
    SVT_CHECK(wc.qp_num == ep.qp->qp_num, "CQE qp_num 0x%x", wc.qp_num);
    svt_expect_wc(ep.cq, IBV_WC_WR_FLUSH_ERR, -1, 2, NULL);
    SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_ERR, "DCI state %d after "
              "REM_ACCESS_ERR, expected ERR", svt_dc_state(ep.qp));
    svt_sync(p, 0);
    svt_sync(p, 0);

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    SVT_OK(ibv_modify_qp(ep.qp, &a, IBV_QP_STATE));
    svt_dci_connect(&ep, 14, 7, 7);
    SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_RTS, "DCI state %d after "
              "RESET->RTS", svt_dc_state(ep.qp));
    svt_fill(ep.buf, 4096, 21);
    SVT_OK(svt_dci_post(&ep, &good, IBV_WR_RDMA_WRITE, 0, 4096, 0, 0, 0, 3));
    svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 3, NULL);
    svt_sync(p, 0);
    svt_sync(p, 0);

    svt_fill(dci2.buf, 64, 22);
    SVT_OK(svt_dci_post(&dci2, &good2, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 64,
                        8192, 0x5150, 0, 4));
    svt_expect_wc(dci2.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 4, NULL);
    svt_sync(p, 0);
    SVT_OK(ibv_destroy_ah(good.ah));
    SVT_OK(ibv_destroy_ah(good2.ah));
    svt_dc_ep_destroy(&dci2);
    svt_dc_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/*
 * A SEND to a DCT whose SRQ is empty is RNR NAKed with the DCT's
 * min_rnr_timer (1: 0.01 ms); with rnr_retry 1 the DCI completes with
 * IBV_WC_RNR_RETRY_EXC_ERR at once (a timer not taken from the DCT, 0,
 * would be 655 ms per retry). The DCT is unaffected: once a receive is
 * posted, a recovered DCI's SEND lands.
 */
static void svt_case_dc_rnr(svt_proc_t *p)
{
    struct ibv_qp_attr a;
    svt_dc_ep_t dci, dct;
    svt_dc_tgt_t tgt;
    svt_addr_t addr;
    struct ibv_wc wc;
    svt_dev_t dev;
    double t0;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, 0, 8192, &dci);
    svt_dc_ep_create(&dev, 1, 8192, &dct);
    svt_dct_connect(&dct, 1);
    svt_dci_connect(&dci, 14, 7, 1);
    svt_dc_addr(&dct, &addr);
    svt_dc_tgt_init(&dci, &addr, SVT_DC_KEY, &tgt);
    svt_fill(dci.buf, 64, 40);
    t0 = svt_now_ms();
    SVT_OK(svt_dci_post(&dci, &tgt, IBV_WR_SEND, 0, 64, 0, 0, 0, 1));
    svt_expect_wc(dci.cq, IBV_WC_RNR_RETRY_EXC_ERR, -1, 1, NULL);
    SVT_CHECK(svt_now_ms() - t0 < 500, "RNR_RETRY_EXC_ERR after %.0f ms with "
              "min_rnr_timer 1 and rnr_retry 1", svt_now_ms() - t0);
    SVT_CHECK(svt_dc_state(dci.qp) == IBV_QPS_ERR, "DCI state %d",
              svt_dc_state(dci.qp));
    SVT_CHECK(svt_dc_state(dct.qp) == IBV_QPS_RTR, "DCT state %d",
              svt_dc_state(dct.qp));
    SVT_CHECK(ibv_poll_cq(dct.cq, 1, &wc) == 0, "a DCT completion (status "
              "%d) for an RNR NAKed SEND", wc.status);

    svt_dc_post_srq_recv(&dct, 1024, 256, 5);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    SVT_OK(ibv_modify_qp(dci.qp, &a, IBV_QP_STATE));
    svt_dci_connect(&dci, 14, 7, 1);
    SVT_OK(svt_dci_post(&dci, &tgt, IBV_WR_SEND, 0, 64, 0, 0, 0, 2));
    svt_expect_wc(dci.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 2, NULL);
    svt_expect_wc(dct.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 5, &wc);
    SVT_CHECK((wc.byte_len == 64) && (wc.src_qp == dci.qp->qp_num),
              "DCT CQE byte_len %u src_qp 0x%x", wc.byte_len, wc.src_qp);
    svt_pattern_check(dct.buf + 1024, 64, 40, "SEND after the RNR error");
    SVT_OK(ibv_destroy_ah(tgt.ah));
    svt_dc_ep_destroy(&dci);
    svt_dc_ep_destroy(&dct);
    svt_dev_close(&dev);
}

/*
 * The DCT goes away: its process is killed (arg 0) or it is destroyed
 * (arg 1). A WRITE to it gets no response, as on a fabric: with timeout 8
 * and retry_cnt 1 the DCI completes with IBV_WC_RETRY_EXC_ERR within a few
 * seconds, and (arg 1) nothing reaches the memory the DCT served. Rank 1
 * owns the DCT, rank 0 the DCI.
 */
static void svt_case_dc_dead_target(svt_proc_t *p)
{
    svt_addr_t addr;
    svt_dc_tgt_t tgt;
    svt_dc_ep_t ep;
    svt_dev_t dev;
    double t0;
    char c;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, p->rank == 1, 8192, &ep);
    if (p->rank == 1) {
        svt_dct_connect(&ep, 12);
        svt_dc_addr(&ep, &addr);
        svt_msg_send(p, 0, &addr, sizeof(addr));
        svt_sync(p, 0); /* the first WRITE is done */
        svt_pattern_check(ep.buf, 64, 50, "WRITE to the live DCT");
        if (p->arg == 0) {
            kill(getpid(), SIGKILL);
        }
        SVT_OK(ibv_destroy_qp(ep.qp));
        svt_sync(p, 0);
        svt_sync(p, 0); /* the second WRITE has failed */
        svt_memset_check(ep.buf + 1024, 64, 0, "memory of the destroyed "
                         "DCT");
        SVT_OK(ibv_destroy_srq(ep.srq));
        SVT_OK(ibv_dereg_mr(ep.mr));
        SVT_OK(ibv_destroy_cq(ep.cq));
        free(ep.buf);
        svt_dev_close(&dev);
        return;
    }

    svt_dci_connect(&ep, 8, 1, 7);
    svt_msg_recv(p, 1, &addr, sizeof(addr));
    svt_dc_tgt_init(&ep, &addr, SVT_DC_KEY, &tgt);
    svt_fill(ep.buf, 64, 50);
    SVT_OK(svt_dci_post(&ep, &tgt, IBV_WR_RDMA_WRITE, 0, 64, 0, 0, 0, 1));
    svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    svt_sync(p, 1);
    if (p->arg == 0) {
        /* wait for the peer's death: its socket end closes */
        while (read(p->sock[1], &c, 1) > 0) {
        }
    } else {
        svt_sync(p, 1);
    }
    svt_fill(ep.buf + 1024, 64, 51);
    t0 = svt_now_ms();
    SVT_OK(svt_dci_post(&ep, &tgt, IBV_WR_RDMA_WRITE, 1024, 64, 1024, 0, 0,
                        2));
    svt_expect_wc(ep.cq, IBV_WC_RETRY_EXC_ERR, -1, 2, NULL);
    SVT_CHECK(svt_now_ms() - t0 < 3000, "RETRY_EXC_ERR after %.0f ms with "
              "timeout 8 and retry_cnt 1", svt_now_ms() - t0);
    SVT_CHECK(svt_dc_state(ep.qp) == IBV_QPS_ERR, "DCI state %d",
              svt_dc_state(ep.qp));
    if (p->arg == 1) {
        svt_sync(p, 1);
    }
    SVT_OK(ibv_destroy_ah(tgt.ah));
    svt_dc_ep_destroy(&ep);
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_dc_data[] = {
    {"dc/data", svt_case_dc_data, 2, 0, 30},
    {"dc/switch", svt_case_dc_switch, 3},
    {"dc/wrong_key", svt_case_dc_wrong_key, 2},
    {"dc/bad_rkey_recover", svt_case_dc_bad_rkey_recover, 2},
    {"dc/rnr", svt_case_dc_rnr, 1},
    {"dc/dead_target_killed", svt_case_dc_dead_target, 2, 0, 15, NULL,
     SVT_CASE_F_PEER_DIES},
    {"dc/dead_target_destroyed", svt_case_dc_dead_target, 2, 1, 15},
    {NULL}
};
