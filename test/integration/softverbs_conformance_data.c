/*
 * softverbs conformance: data movement. Every operation and size, patterns
 * verified byte by byte with guard bytes around the target, completion
 * fields, inline data, scatter/gather lists, signaling, ordering, and a
 * deregistration during a transfer into the MR.
 * Rank 0 is the initiator, rank 1 the target.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#define SVT_GUARD     64
#define SVT_GUARD_VAL 0xaa
#define SVT_IMM       0x12345678u

typedef struct {
    size_t off;
    size_t len;
} svt_seg_t;

/* Both ranks: an RC endpoint with room for size bytes plus guards */
static void svt_data_setup(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *ep,
                           enum ibv_qp_type type, size_t size)
{
    svt_ep_opts_t o;

    svt_dev_open(dev);
    svt_ep_opts_init(&o, type);
    o.buf_size = size + 2 * SVT_GUARD;
    svt_ep_create(dev, &o, ep);
    memset(ep->buf, SVT_GUARD_VAL, ep->size);
    {
        svt_addr_t mine, theirs;

        svt_ep_addr(ep, &mine);
        svt_msg_send(p, !p->rank, &mine, sizeof(mine));
        svt_msg_recv(p, !p->rank, &theirs, sizeof(theirs));
        svt_ep_connect(ep, &theirs);
    }
}

/* The target's buffer: pattern in the middle, guards untouched */
static void svt_data_check_target(const svt_ep_t *ep, size_t size, uint32_t seed)
{
    svt_memset_check(ep->buf, SVT_GUARD, SVT_GUARD_VAL, "guard before data");
    svt_pattern_check(ep->buf + SVT_GUARD, size, seed, "data");
    svt_memset_check(ep->buf + SVT_GUARD + size, SVT_GUARD, SVT_GUARD_VAL,
                     "guard after data");
}

/* A data case's arg: message size, opcode and QP type */
#define SVT_DATA_ARG(_op, _type, _size) \
    ((long)(_size) | ((long)(_op) << 32) | ((long)(_type) << 40))

static void svt_case_data(svt_proc_t *p)
{
    size_t size   = p->arg & 0xffffffffl;
    enum ibv_wr_opcode op = (enum ibv_wr_opcode)((p->arg >> 32) & 0xff);
    enum ibv_qp_type type = (enum ibv_qp_type)((p->arg >> 40) & 0xff);
    uint32_t seed = 0x5a + (uint32_t)size;
    uint64_t wr_id = 0xabc000 + size;
    int has_recv  = (op == IBV_WR_SEND) || (op == IBV_WR_SEND_WITH_IMM) ||
                    (op == IBV_WR_RDMA_WRITE_WITH_IMM);
    svt_dev_t dev;
    svt_ep_t ep;
    struct ibv_wc wc;

    svt_data_setup(p, &dev, &ep, type, size);
    if (p->rank == 1) {
        if (op == IBV_WR_RDMA_READ) {
            svt_fill(ep.buf + SVT_GUARD, size, seed);
        } else if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
            svt_post_recv(&ep, 0, 0, wr_id + 1);
        } else if (has_recv) {
            svt_post_recv(&ep, SVT_GUARD, size, wr_id + 1);
        }
        svt_sync(p, 0);
        if (has_recv) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS,
                          (op == IBV_WR_RDMA_WRITE_WITH_IMM) ?
                          IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                          wr_id + 1, &wc);
            SVT_CHECK(wc.byte_len == size, "recv byte_len %u, expected %zu",
                      wc.byte_len, size);
            SVT_CHECK(wc.qp_num == ep.qp->qp_num, "recv qp_num 0x%x, "
                      "expected 0x%x", wc.qp_num, ep.qp->qp_num);
            if (op == IBV_WR_SEND) {
                SVT_CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM),
                          "IBV_WC_WITH_IMM set on a plain send");
            } else {
                SVT_CHECK(wc.wc_flags & IBV_WC_WITH_IMM,
                          "IBV_WC_WITH_IMM not set (wc_flags 0x%x)", wc.wc_flags);
                SVT_CHECK(ntohl(wc.imm_data) == SVT_IMM, "imm_data 0x%x, "
                          "expected 0x%x", ntohl(wc.imm_data), SVT_IMM);
            }
        }
        svt_sync(p, 0); /* initiator saw its completion */
        if (op != IBV_WR_RDMA_READ) {
            svt_data_check_target(&ep, size, seed);
        } else {
            svt_pattern_check(ep.buf + SVT_GUARD, size, seed, "read source");
        }
        /* a write without immediate consumes no receive, makes no wc */
        svt_expect_no_wc(ep.cq, 0);
    } else {
        static const int wc_op[] = {
            [IBV_WR_RDMA_WRITE]          = IBV_WC_RDMA_WRITE,
            [IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
            [IBV_WR_SEND]                = IBV_WC_SEND,
            [IBV_WR_SEND_WITH_IMM]       = IBV_WC_SEND,
            [IBV_WR_RDMA_READ]           = IBV_WC_RDMA_READ,
        };

        if (op != IBV_WR_RDMA_READ) {
            svt_fill(ep.buf + SVT_GUARD, size, seed);
        }
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, op, SVT_GUARD, size,
                             svt_raddr(&ep, SVT_GUARD), ep.remote.rkey,
                             SVT_IMM, IBV_SEND_SIGNALED, wr_id));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, wc_op[op], wr_id, &wc);
        SVT_CHECK(wc.qp_num == ep.qp->qp_num, "send qp_num 0x%x, expected "
                  "0x%x", wc.qp_num, ep.qp->qp_num);
        if (op == IBV_WR_RDMA_READ) {
            svt_data_check_target(&ep, size, seed);
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/*
 * Inline: the source is an unregistered stack buffer with lkey 0, and it is
 * overwritten right after ibv_post_send returns. arg: the opcode.
 */
static void svt_case_inline(svt_proc_t *p)
{
    enum ibv_wr_opcode op = (enum ibv_wr_opcode)p->arg;
    const size_t size = 48;
    uint32_t seed     = 0x77;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    uint8_t src[64];

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.max_inline = 64;
    o.buf_size   = size + 2 * SVT_GUARD;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    SVT_CHECK(ep.o.max_inline >= 64, "max_inline_data %u < 64 requested",
              ep.o.max_inline);
    if (p->rank == 0) {
        struct ibv_sge sge = {(uintptr_t)src, (uint32_t)size, 0};
        struct ibv_send_wr wr, *bad;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id               = 7;
        wr.sg_list             = &sge;
        wr.num_sge             = 1;
        wr.opcode              = op;
        wr.send_flags          = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = svt_raddr(&ep, SVT_GUARD);
        wr.wr.rdma.rkey        = ep.remote.rkey;
        svt_fill(src, size, seed);
        svt_sync(p, 1);
        SVT_OK(ibv_post_send(ep.qp, &wr, &bad));
        memset(src, 0xee, sizeof(src));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, (op == IBV_WR_SEND) ?
                      IBV_WC_SEND : IBV_WC_RDMA_WRITE, 7, NULL);
        svt_sync(p, 1);
    } else {
        memset(ep.buf, SVT_GUARD_VAL, ep.size);
        if (op == IBV_WR_SEND) {
            svt_post_recv(&ep, SVT_GUARD, size, 9);
        }
        svt_sync(p, 0);
        if (op == IBV_WR_SEND) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 9, &wc);
            SVT_CHECK(wc.byte_len == size, "byte_len %u", wc.byte_len);
        }
        svt_sync(p, 0);
        svt_data_check_target(&ep, size, seed);
    }
    svt_sync(p, !p->rank);
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/*
 * Scatter/gather: the initiator gathers `src` segments of its buffer, the
 * target (or, for READ, the initiator) scatters into `dst` segments. The
 * byte stream is the concatenation of the source segments.
 */
static const svt_seg_t svt_sge_src[] = {{0, 100}, {1000, 1}, {5000, 4000}};
static const svt_seg_t svt_sge_dst[] = {{64, 7}, {3000, 2000}, {9000, 94},
                                        {20000, 4000}};
#define SVT_SGE_TOTAL 4101
#define SVT_SGE_SEED  0x31

static void svt_sge_list(const svt_ep_t *ep, const svt_seg_t *seg, int n,
                         struct ibv_sge *sge)
{
    int i;

    for (i = 0; i < n; ++i) {
        sge[i].addr   = (uintptr_t)ep->buf + seg[i].off;
        sge[i].length = (uint32_t)seg[i].len;
        sge[i].lkey   = ep->mr->lkey;
    }
}

/* Check that the dst segments of buf hold the gathered src stream */
static void svt_sge_check(const uint8_t *buf, const svt_seg_t *dst, int ndst,
                          const uint8_t *srcbuf)
{
    uint8_t stream[SVT_SGE_TOTAL];
    size_t pos = 0, i;
    int s;

    for (s = 0; s < 3; ++s) {
        memcpy(stream + pos, srcbuf + svt_sge_src[s].off, svt_sge_src[s].len);
        pos += svt_sge_src[s].len;
    }
    for (pos = 0, s = 0; s < ndst; ++s) {
        for (i = 0; (i < dst[s].len) && (pos < SVT_SGE_TOTAL); ++i, ++pos) {
            SVT_CHECK(buf[dst[s].off + i] == stream[pos], "segment %d byte %zu "
                      "(stream byte %zu) is 0x%02x, expected 0x%02x", s, i,
                      pos, buf[dst[s].off + i], stream[pos]);
        }
    }
}

/* arg: the opcode */
static void svt_case_sge(svt_proc_t *p)
{
    enum ibv_wr_opcode op = (enum ibv_wr_opcode)p->arg;
    static uint8_t ref[32768];
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_sge sge[4];
    struct ibv_send_wr swr, *sbad;
    struct ibv_recv_wr rwr, *rbad;
    struct ibv_wc wc;
    int initiator_fills = (op != IBV_WR_RDMA_READ);

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = sizeof(ref);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    svt_fill(ref, sizeof(ref), SVT_SGE_SEED);
    SVT_CHECK(ep.qp->qp_type == IBV_QPT_RC, "qp_type %d", ep.qp->qp_type);
    if ((p->rank == 0) == initiator_fills) {
        memcpy(ep.buf, ref, sizeof(ref));
    }
    if (p->rank == 1) {
        if (op == IBV_WR_SEND) {
            svt_sge_list(&ep, svt_sge_dst, 4, sge);
            memset(&rwr, 0, sizeof(rwr));
            rwr.wr_id   = 21;
            rwr.sg_list = sge;
            rwr.num_sge = 4;
            SVT_OK(ibv_post_recv(ep.qp, &rwr, &rbad));
        }
        svt_sync(p, 0);
        if (op == IBV_WR_SEND) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 21, &wc);
            SVT_CHECK(wc.byte_len == SVT_SGE_TOTAL, "byte_len %u, expected %d",
                      wc.byte_len, SVT_SGE_TOTAL);
        }
        svt_sync(p, 0);
        if (op == IBV_WR_SEND) {
            svt_sge_check(ep.buf, svt_sge_dst, 4, ref);
        } else if (op == IBV_WR_RDMA_WRITE) {
            svt_seg_t whole = {0, SVT_SGE_TOTAL};

            svt_sge_check(ep.buf, &whole, 1, ref);
            svt_memset_check(ep.buf + SVT_SGE_TOTAL, 64, 0, "after write");
        }
    } else {
        memset(&swr, 0, sizeof(swr));
        swr.wr_id      = 22;
        swr.opcode     = op;
        swr.send_flags = IBV_SEND_SIGNALED;
        swr.sg_list    = sge;
        swr.wr.rdma.remote_addr = svt_raddr(&ep, 0);
        swr.wr.rdma.rkey        = ep.remote.rkey;
        if (op == IBV_WR_RDMA_READ) {
            /* the remote bytes [0, total) land in the dst segments; build
             * the reference stream accordingly: read source is contiguous */
            svt_sge_list(&ep, svt_sge_dst, 4, sge);
            swr.num_sge = 4;
        } else {
            svt_sge_list(&ep, svt_sge_src, 3, sge);
            swr.num_sge = 3;
        }
        svt_sync(p, 1);
        SVT_OK(ibv_post_send(ep.qp, &swr, &sbad));
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, (op == IBV_WR_SEND) ? IBV_WC_SEND :
                      (op == IBV_WR_RDMA_READ) ? IBV_WC_RDMA_READ :
                      IBV_WC_RDMA_WRITE, 22, NULL);
        if (op == IBV_WR_RDMA_READ) {
            size_t pos = 0, i;
            int s;

            for (s = 0; s < 4; ++s) {
                for (i = 0; i < svt_sge_dst[s].len; ++i, ++pos) {
                    SVT_CHECK(ep.buf[svt_sge_dst[s].off + i] == ref[pos],
                              "read segment %d byte %zu mismatch", s, i);
                }
            }
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* arg (sq_sig_all) 0: only the signaled WR completes; 1: all do */
static void svt_case_signal(svt_proc_t *p)
{
    int sig_all = (int)p->arg;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.sig_all = sig_all;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        for (i = 1; i <= 8; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, i * 8, 8,
                                 svt_raddr(&ep, i * 8), ep.remote.rkey, 0,
                                 (!sig_all && (i == 8)) ? IBV_SEND_SIGNALED : 0,
                                 i));
        }
        for (i = sig_all ? 1 : 8; i <= 8; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, i, &wc);
        }
        svt_expect_no_wc(ep.cq, 100);
    }
    svt_sync(p, !p->rank);
}

/* RC delivers sends in order; receives complete in posting order */
static void svt_case_send_order(svt_proc_t *p)
{
    const int n = 200;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    uint32_t v;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.max_send_wr = o.max_recv_wr = 256;
    o.cq_size     = 512;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        for (i = 0; i < n; ++i) {
            svt_post_recv(&ep, i * 4, 4, i);
        }
        svt_sync(p, 0);
        for (i = 0; i < n; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, i, &wc);
            memcpy(&v, ep.buf + i * 4, 4);
            SVT_CHECK(v == (uint32_t)i, "receive %d holds message %u", i, v);
        }
    } else {
        for (i = 0; i < n; ++i) {
            v = i;
            memcpy(ep.buf + i * 4, &v, 4);
        }
        svt_sync(p, 1);
        for (i = 0; i < n; ++i) {
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, i * 4, 4, 0, 0, 0,
                                 (i % 16 == 15) ? IBV_SEND_SIGNALED : 0, i));
            if (i % 16 == 15) {
                svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
            }
        }
    }
    svt_sync(p, !p->rank);
}

/*
 * RC ordering between operations of one QP, posted back to back without
 * waiting: a SEND after a 1 MiB RDMA WRITE completes at the target only when
 * the written data is all there (arg 0); an RDMA READ after an RDMA WRITE of
 * the same remote range returns the written data (arg 1).
 */
static void svt_case_write_then(svt_proc_t *p)
{
    const size_t size = 1 << 20;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 2 * size + 64;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        svt_post_recv(&ep, 2 * size, 64, 1);
        svt_sync(p, 0);
        if (p->arg == 0) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, NULL);
            svt_pattern_check(ep.buf, size, 0x42, "data written before the "
                              "send, checked at its receive completion");
        }
        svt_sync(p, 0);
    } else {
        svt_fill(ep.buf, size, 0x42);
        svt_sync(p, 1);
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, size, svt_raddr(&ep, 0),
                             ep.remote.rkey, 0, 0, 1));
        if (p->arg == 0) {
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 2 * size, 8, 0, 0, 0,
                                 IBV_SEND_SIGNALED, 2));
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 2, NULL);
        } else {
            SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_READ, size, size,
                                 svt_raddr(&ep, 0), ep.remote.rkey, 0,
                                 IBV_SEND_SIGNALED, 2));
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2, NULL);
            svt_pattern_check(ep.buf + size, size, 0x42, "read right after "
                              "a write of the same range");
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

#define SVT_DATA_CASE(_name, _op, _type, _size) \
    {_name, svt_case_data, 2, SVT_DATA_ARG(_op, _type, _size)}
#define SVT_SIZE_CASES(_pfx, _op) \
    SVT_DATA_CASE(_pfx "/0", _op, IBV_QPT_RC, 0), \
    SVT_DATA_CASE(_pfx "/1", _op, IBV_QPT_RC, 1), \
    SVT_DATA_CASE(_pfx "/7", _op, IBV_QPT_RC, 7), \
    SVT_DATA_CASE(_pfx "/8", _op, IBV_QPT_RC, 8), \
    SVT_DATA_CASE(_pfx "/63", _op, IBV_QPT_RC, 63), \
    SVT_DATA_CASE(_pfx "/64", _op, IBV_QPT_RC, 64), \
    SVT_DATA_CASE(_pfx "/4095", _op, IBV_QPT_RC, 4095), \
    SVT_DATA_CASE(_pfx "/4096", _op, IBV_QPT_RC, 4096), \
    SVT_DATA_CASE(_pfx "/65537", _op, IBV_QPT_RC, 65537), \
    SVT_DATA_CASE(_pfx "/1MiB", _op, IBV_QPT_RC, 1 << 20), \
    SVT_DATA_CASE(_pfx "/4MiB", _op, IBV_QPT_RC, 4 << 20)

/*
 * ibv_dereg_mr while a peer's RDMA write into the MR is under way: once it
 * returns, nothing reaches the memory (an HCA finishes or stops the access
 * first; UCX frees or reuses memory once its invalidation, a
 * deregistration, completes). The target deregisters as soon as the first
 * byte lands, then writes the last page itself: that page must keep its
 * bytes, and the write, which passed the key check before, must have
 * placed the rest. A deregistration that returned mid-transfer lets the
 * transfer overwrite the last page afterwards.
 */
#define SVT_DEREG_LEN (256ul << 20)

static void svt_dereg(void *arg)
{
    SVT_OK(ibv_dereg_mr(arg));
}

typedef struct {
    struct ibv_mr *mr;
    void          *other;   /* the new translation: a page */
} svt_rereg_arg_t;

static void svt_rereg(void *arg)
{
    svt_rereg_arg_t *a = arg;

    SVT_OK(ibv_rereg_mr(a->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
                        a->other, 4096, 0));
}

/* Rank 1 registers 256 MiB for rank 0 to write, and changes the MR
 * (deregisters it, or moves it to a page of its own) once the write is
 * under way (svt_during_write_target) */
static void svt_mr_during_write(svt_proc_t *p, int rereg)
{
    const size_t page = 4096;
    svt_rereg_arg_t a;
    svt_ep_opts_t o;
    svt_addr_t va;
    svt_dev_t dev;
    uint8_t *big;
    svt_ep_t ep;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 0) {
        o.buf_size = SVT_DEREG_LEN;
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 0) {
        svt_during_write_writer(p, 1, &ep, SVT_DEREG_LEN);
        svt_sync(p, 1);
        return;
    }
    big     = aligned_alloc(page, SVT_DEREG_LEN);
    a.other = aligned_alloc(page, page);
    SVT_CHECK((big != NULL) && (a.other != NULL), "no memory for %lu bytes",
              SVT_DEREG_LEN);
    memset(big, 0, SVT_DEREG_LEN);
    SVT_NN(a.mr, ibv_reg_mr(dev.pd, big, SVT_DEREG_LEN,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    memset(&va, 0, sizeof(va));
    va.addr = (uintptr_t)big;
    va.rkey = a.mr->rkey;
    svt_msg_send(p, 0, &va, sizeof(va));
    if (rereg) {
        svt_during_write_target(p, 0, big, SVT_DEREG_LEN, "ibv_rereg_mr",
                                svt_rereg, &a);
        SVT_OK(ibv_dereg_mr(a.mr));
    } else {
        svt_during_write_target(p, 0, big, SVT_DEREG_LEN, "ibv_dereg_mr",
                                svt_dereg, a.mr);
    }
    free(a.other);
    free(big);
    svt_sync(p, 0);
}

static void svt_case_dereg_during_write(svt_proc_t *p)
{
    svt_mr_during_write(p, 0);
}

/*
 * ibv_rereg_mr (a new translation) while a peer's RDMA write into the old
 * one is under way: once it returns, nothing reaches the old memory (the
 * program may free or reuse it), as for ibv_dereg_mr above. The target
 * moves the MR to a page of its own as soon as the first byte lands, then
 * writes the last page of the old region itself: that page must keep its
 * bytes, and the write, which passed the key check before, must have
 * placed the rest.
 */
static void svt_case_rereg_during_write(svt_proc_t *p)
{
    svt_mr_during_write(p, 1);
}

const svt_case_t svt_cases_data[] = {
    SVT_SIZE_CASES("rc/send", IBV_WR_SEND),
    SVT_SIZE_CASES("rc/send_imm", IBV_WR_SEND_WITH_IMM),
    SVT_SIZE_CASES("rc/write", IBV_WR_RDMA_WRITE),
    SVT_SIZE_CASES("rc/write_imm", IBV_WR_RDMA_WRITE_WITH_IMM),
    SVT_SIZE_CASES("rc/read", IBV_WR_RDMA_READ),
    SVT_DATA_CASE("uc/send_imm/4096", IBV_WR_SEND_WITH_IMM, IBV_QPT_UC, 4096),
    SVT_DATA_CASE("uc/write/65537", IBV_WR_RDMA_WRITE, IBV_QPT_UC, 65537),
    {"inline/send", svt_case_inline, 2, IBV_WR_SEND},
    {"inline/write", svt_case_inline, 2, IBV_WR_RDMA_WRITE},
    {"sge/send", svt_case_sge, 2, IBV_WR_SEND},
    {"sge/write", svt_case_sge, 2, IBV_WR_RDMA_WRITE},
    {"sge/read", svt_case_sge, 2, IBV_WR_RDMA_READ},
    {"signal/selective", svt_case_signal, 2, 0},
    {"signal/sq_sig_all", svt_case_signal, 2, 1},
    {"order/rc_send", svt_case_send_order, 2},
    {"order/write_then_send", svt_case_write_then, 2, 0},
    {"order/write_then_read", svt_case_write_then, 2, 1},
    {"data/dereg_during_write", svt_case_dereg_during_write, 2},
    {"data/rereg_during_write", svt_case_rereg_during_write, 2},
    {NULL}
};
