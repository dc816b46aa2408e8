/*
 * softverbs conformance: device features programs probe through
 * ibv_query_device_ex and then use (issue 14): CQ limits and
 * ibv_resize_cq, ibv_rereg_mr, raw packet QPs, on-demand paging, completion
 * timestamps, device memory. Every case runs in one process unless its
 * table entry says otherwise.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <arpa/inet.h>

static uint64_t svt_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------
 * CQ limits: max_cqe entries succeed, one more is EINVAL (mlx5
 * create_cq / the kernel's mlx5_ib_create_cq check the size against the
 * device's log_max_cq_sz), whatever SOFTVERBS_CAP_POLICY says
 * ------------------------------------------------------------------- */
static void svt_case_cq_max_cqe(svt_proc_t *p)
{
    struct ibv_cq_init_attr_ex ca;
    struct ibv_cq_ex *cqx;
    struct ibv_cq *cq;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_CHECK(dev.attr.max_cqe > 0, "max_cqe %d", dev.attr.max_cqe);
    SVT_NN(cq, ibv_create_cq(dev.ctx, dev.attr.max_cqe, NULL, NULL, 0));
    SVT_CHECK(cq->cqe >= dev.attr.max_cqe, "cq->cqe %d < max_cqe %d",
              cq->cqe, dev.attr.max_cqe);
    SVT_OK(ibv_destroy_cq(cq));

    errno = 0;
    cq    = ibv_create_cq(dev.ctx, dev.attr.max_cqe + 1, NULL, NULL, 0);
    SVT_CHECK((cq == NULL) && (errno == EINVAL), "CQ of max_cqe + 1 = %d "
              "entries: %s, errno %d (expected EINVAL)", dev.attr.max_cqe + 1,
              cq ? "created" : "refused", errno);

    memset(&ca, 0, sizeof(ca));
    ca.cqe      = dev.attr.max_cqe;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    svt_sleep_ms(20);
    SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
    SVT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
    ca.cqe = dev.attr.max_cqe + 1;
    errno  = 0;
    cqx    = ibv_create_cq_ex(dev.ctx, &ca);
    SVT_CHECK((cqx == NULL) && (errno == EINVAL), "ibv_create_cq_ex of "
              "max_cqe + 1: %s, errno %d", cqx ? "created" : "refused", errno);

    /* resizing follows the same limit. A freed ring waits at least 10 ms
     * in the arena's quarantine before an allocation short of memory takes
     * it (docs/softverbs.md, Registry) */
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    SVT_CHECK(ibv_resize_cq(cq, dev.attr.max_cqe + 1) == EINVAL,
              "ibv_resize_cq beyond max_cqe not EINVAL");
    svt_sleep_ms(20);
    SVT_OK(ibv_resize_cq(cq, dev.attr.max_cqe));
    SVT_CHECK(cq->cqe >= dev.attr.max_cqe, "resized cq->cqe %d", cq->cqe);
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * ibv_resize_cq keeps the completions queued (man ibv_resize_cq; mlx5
 * copies them into the new buffer, mlx5_cq_resize_copy_cqes), grows beyond
 * the size first allocated, and refuses fewer entries than are queued
 * ------------------------------------------------------------------- */
/*
 * A CQ holds what mlx5 gives: cqe + 1 rounded up to a power of two, less
 * one (the kernel's mlx5_ib_create_cq and mlx5_ib_resize_cq), written back
 * to ibv_cq.cqe; programs sized for a ConnectX count on that room (UCX's
 * rc_verbs overran a CQ of exactly the size it asked for)
 */
static void svt_case_cq_size_rounded(svt_proc_t *p)
{
    static const int asked[] = {1, 2, 3, 4, 100, 255, 256, 4096};
    static const int given[] = {1, 3, 3, 7, 127, 255, 511, 8191};
    struct ibv_cq *cq;
    svt_dev_t dev;
    unsigned i;

    svt_dev_open(&dev);
    for (i = 0; i < sizeof(asked) / sizeof(asked[0]); ++i) {
        SVT_NN(cq, ibv_create_cq(dev.ctx, asked[i], NULL, NULL, 0));
        SVT_CHECK(cq->cqe == given[i], "CQ of %d entries: cq->cqe %d "
                  "(mlx5: %d)", asked[i], cq->cqe, given[i]);
        SVT_OK(ibv_resize_cq(cq, 1000));
        SVT_CHECK(cq->cqe == 1023, "resized to 1000: cq->cqe %d (mlx5: "
                  "1023)", cq->cqe);
        SVT_OK(ibv_destroy_cq(cq));
    }
    svt_dev_close(&dev);
}

static void svt_case_cq_resize(svt_proc_t *p)
{
    struct ibv_wc wc;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    int i, round;
    uint64_t id = 1;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.cq_size = 4;
    svt_ep_local_pair(&dev, &o, &a, &b);
    for (i = 0; i < 4; ++i) {
        svt_post_recv(&b, 8192 + i * 256, 256, 100 + i);
        svt_fill(a.buf + i * 256, 256, i);
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, i * 256, 256, 0, 0, 0,
                             IBV_SEND_SIGNALED, id++));
    }
    /* 4 queued on each CQ: 3 is too few, 1000 grows the ring */
    SVT_CHECK(ibv_resize_cq(a.cq, 3) == EINVAL, "resize below the queued "
              "count accepted");
    SVT_OK(ibv_resize_cq(a.cq, 1000));
    SVT_CHECK(a.cq->cqe >= 1000, "cq->cqe %d after resize to 1000",
              a.cq->cqe);
    SVT_OK(ibv_resize_cq(b.cq, 64));
    for (round = 0; round < 3; ++round) {
        /* 4 + 3 * 8 WQEs: within max_send_wr 32, which are retired only
         * when their completions are polled */
        for (i = 0; i < 8; ++i) {
            SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 64,
                                 svt_raddr(&a, 16384 + i * 64),
                                 a.remote.rkey, 0, IBV_SEND_SIGNALED, id++));
        }
        /* resize again with completions queued: 4 + 8 * (round + 1) */
        SVT_OK(ibv_resize_cq(a.cq, 200 + round * 300));
    }
    for (i = 1; (uint64_t)i < id; ++i) {
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, (i <= 4) ? IBV_WC_SEND :
                      IBV_WC_RDMA_WRITE, i, NULL);
    }
    svt_expect_no_wc(a.cq, 10);
    for (i = 0; i < 4; ++i) {
        svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 100 + i, &wc);
        SVT_CHECK(wc.byte_len == 256, "byte_len %u", wc.byte_len);
        svt_pattern_check(b.buf + 8192 + i * 256, 256, i, "received");
    }
    /* shrink: allowed down to what is queued (nothing now) */
    SVT_OK(ibv_resize_cq(a.cq, 8));
    SVT_CHECK((a.cq->cqe >= 8) && (a.cq->cqe < 1000), "cq->cqe %d after "
              "shrinking to 8", a.cq->cqe);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 64, svt_raddr(&a, 0),
                         a.remote.rkey, 0, IBV_SEND_SIGNALED, 77));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 77, NULL);
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    svt_dev_close(&dev);
}

/* The CQ of rank 0 is resized over and over while rank 1 sends to it (small
 * SENDs, whose payload travels in the CQ slot, and larger ones): every
 * message arrives once, in order, intact.
 * Every size holds all the receives posted (ibv_create_cq(3): a CQ too
 * small for the completions queued overruns, an error, IBV_EVENT_CQ_ERR):
 * the sender does not wait for rank 0, which may not run for a while on a
 * loaded host. Before, the CQ kept its first 8 entries until rank 0 polled,
 * and when rank 0 was late, the 9th completion on overran it. */
#define SVT_RESIZE_MSGS  400
#define SVT_RESIZE_SMALL 450  /* a ring of 512 slots */
#define SVT_RESIZE_LARGE 1000 /* a ring of 1024 */
static void svt_case_cq_resize_traffic(svt_proc_t *p)
{
    struct ibv_wc wc;
    svt_ep_opts_t o;
    svt_dev_t dev;
    svt_ep_t ep;
    int i, n = 0, sizes[] = {40, 300, 2000, 120};
    size_t len;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.cq_size     = 8;
    o.max_recv_wr = 512;
    o.buf_size    = SVT_RESIZE_MSGS * 2048;
    if (p->rank == 0) {
        svt_ep_pair(p, 1, &dev, &o, &ep);
        /* from 8 entries: grown before the receives are posted */
        SVT_OK(ibv_resize_cq(ep.cq, SVT_RESIZE_SMALL));
        for (i = 0; i < SVT_RESIZE_MSGS; ++i) {
            svt_post_recv(&ep, (size_t)i * 2048, 2048, i);
        }
        svt_sync(p, 1);
        while (n < SVT_RESIZE_MSGS) {
            /* grow or shrink around the completions queued: the ring
             * changes size twice in every 4 messages */
            SVT_OK(ibv_resize_cq(ep.cq, ((n & 3) == 0) ? SVT_RESIZE_LARGE :
                                 SVT_RESIZE_SMALL));
            if (svt_poll(ep.cq, &wc, 1)) {
                SVT_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)n,
                          "message %d: status %s wr_id %llu", n,
                          ibv_wc_status_str(wc.status),
                          (unsigned long long)wc.wr_id);
                len = sizes[n % 4];
                SVT_CHECK(wc.byte_len == len, "message %d: byte_len %u, sent "
                          "%zu", n, wc.byte_len, len);
                svt_pattern_check(ep.buf + (size_t)n * 2048, len, n,
                                  "message after a resize");
                ++n;
            }
        }
        svt_sync(p, 1);
    } else {
        o.sig_all = 1;
        o.cq_size = 1024;
        svt_ep_pair(p, 0, &dev, &o, &ep);
        svt_sync(p, 0);
        for (i = 0; i < SVT_RESIZE_MSGS; ++i) {
            len = sizes[i % 4];
            svt_fill(ep.buf + (i % 16) * 2048, len, i);
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, (i % 16) * 2048, len, 0, 0,
                                 0, 0, i));
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
            if ((i & 15) == 0) {
                svt_sleep_ms(1);
            }
        }
        svt_sync(p, 0);
    }
    svt_ep_destroy(&ep);
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * ibv_rereg_mr (man ibv_rereg_mr; libibverbs ibv_rereg_mr checks the
 * input, the keys may change and are read again from the MR)
 * ------------------------------------------------------------------- */
static void svt_rereg_write(svt_ep_t *a, svt_ep_t *b, struct ibv_mr *mr,
                            uint8_t *dst, uint32_t seed, uint64_t wr_id)
{
    svt_fill(a->buf, 512, seed);
    memset(dst, 0, 512);
    SVT_OK(svt_post_send(a, IBV_WR_RDMA_WRITE, 0, 512, (uintptr_t)dst,
                         mr->rkey, 0, IBV_SEND_SIGNALED, wr_id));
    svt_expect_wc(a->cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, wr_id, NULL);
    svt_pattern_check(dst, 512, seed, "RDMA write after ibv_rereg_mr");
}

static void svt_case_rereg_mr(svt_proc_t *p)
{
    struct ibv_pd *pd2;
    struct ibv_mr *mr;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint8_t *buf1, *buf2;
    struct ibv_sge sge;
    struct ibv_send_wr wr, *bad;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &a, &b);
    SVT_CHECK(posix_memalign((void **)&buf1, 4096, 8192) == 0, "no memory");
    SVT_CHECK(posix_memalign((void **)&buf2, 4096, 8192) == 0, "no memory");
    SVT_NN(pd2, ibv_alloc_pd(dev.ctx));

    /* an MR of b's side, first without remote write */
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf1, 8192, IBV_ACCESS_LOCAL_WRITE));
    SVT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_READ));
    svt_rereg_write(&a, &b, mr, buf1 + 1000, 1, 1);

    /* new translation: the same MR now covers buf2 only */
    SVT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2,
                        8192, 0));
    SVT_CHECK(mr->addr == buf2 && mr->length == 8192, "mr addr/length not "
              "updated");
    svt_rereg_write(&a, &b, mr, buf2 + 4096, 2, 2);

    /* to another PD and back (the QPs are in dev.pd) */
    SVT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0));
    SVT_CHECK(mr->pd == pd2, "mr->pd not updated");
    SVT_CHECK(ibv_dealloc_pd(pd2) == EBUSY, "PD with an MR deallocated");
    SVT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD |
                        IBV_REREG_MR_CHANGE_ACCESS |
                        IBV_REREG_MR_CHANGE_TRANSLATION, dev.pd, buf1, 4096,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    svt_rereg_write(&a, &b, mr, buf1 + 2048, 3, 3);

    /* the requester's own MR after a new translation: sends gather from
     * the new buffer */
    SVT_OK(ibv_rereg_mr(a.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2,
                        8192, 0));
    svt_fill(buf2, 128, 4);
    svt_post_recv(&b, 0, 256, 10);
    sge.addr   = (uintptr_t)buf2;
    sge.length = 128;
    sge.lkey   = a.mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = 11;
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    SVT_OK(ibv_post_send(a.qp, &wr, &bad));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 11, NULL);
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 10, NULL);
    svt_pattern_check(b.buf, 128, 4, "SEND from a re-registered buffer");

    /* input libibverbs refuses: IBV_REREG_MR_ERR_INPUT, errno EINVAL */
    errno = 0;
    SVT_CHECK(ibv_rereg_mr(mr, 1 << 5, NULL, NULL, 0, 0) ==
              IBV_REREG_MR_ERR_INPUT && errno == EINVAL, "unknown flag");
    errno = 0;
    SVT_CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL,
                           4096, 0) == IBV_REREG_MR_ERR_INPUT &&
              errno == EINVAL, "new translation without an address");
    errno = 0;
    SVT_CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, dev.pd, NULL, 0,
                           IBV_ACCESS_LOCAL_WRITE) ==
              IBV_REREG_MR_ERR_INPUT && errno == EINVAL,
              "access without IBV_REREG_MR_CHANGE_ACCESS");
    /* the MR still works after the refusals */
    SVT_OK(ibv_rereg_mr(a.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, a.buf,
                        a.size, 0));
    svt_rereg_write(&a, &b, mr, buf1 + 3000, 5, 5);

    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(ibv_dealloc_pd(pd2));
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    free(buf1);
    free(buf2);
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * Raw packet QPs: softverbs has no Ethernet port, so none (max_raw_ethy_qp
 * 0, raw_packet_caps 0): refused whatever the caps, as by rxe
 * ------------------------------------------------------------------- */
static void svt_case_raw_packet_refused(svt_proc_t *p)
{
    static const struct ibv_qp_cap caps[] = {
        {1, 1, 1, 1, 0},
        {1u << 30, 1u << 30, 1000, 1000, 1u << 20}, /* impossible */
        {0, 0, 0, 0, 0},
    };
    struct ibv_qp_init_attr_ex ix;
    struct ibv_qp_init_attr init;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < sizeof(caps) / sizeof(caps[0]); ++i) {
        memset(&init, 0, sizeof(init));
        init.qp_type = IBV_QPT_RAW_PACKET;
        init.send_cq = init.recv_cq = cq;
        init.cap     = caps[i];
        errno        = 0;
        qp           = ibv_create_qp(dev.pd, &init);
        if (qp != NULL) {
            SVT_OK(ibv_destroy_qp(qp));
        }
        SVT_CHECK((qp == NULL) && (errno == EOPNOTSUPP), "raw packet QP "
                  "(caps %u/%u/%u/%u/%u): %s, errno %d (expected "
                  "EOPNOTSUPP)", caps[i].max_send_wr, caps[i].max_recv_wr,
                  caps[i].max_send_sge, caps[i].max_recv_sge,
                  caps[i].max_inline_data, qp ? "created" : "refused", errno);
        memset(&ix, 0, sizeof(ix));
        ix.qp_type   = IBV_QPT_RAW_PACKET;
        ix.send_cq   = ix.recv_cq = cq;
        ix.cap       = caps[i];
        ix.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
        ix.pd        = dev.pd;
        ix.max_tso_header = 64;
        errno        = 0;
        qp           = ibv_create_qp_ex(dev.ctx, &ix);
        if (qp != NULL) {
            SVT_OK(ibv_destroy_qp(qp));
        }
        SVT_CHECK((qp == NULL) && (errno == EOPNOTSUPP), "raw packet QP "
                  "through ibv_create_qp_ex: %s, errno %d",
                  qp ? "created" : "refused", errno);
    }
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * On-demand paging: advertised for RC, UC, UD (send, receive, SRQ
 * receive, RDMA, atomics on RC) and implicit; an ODP MR needs no mapping
 * at registration, and an implicit one (NULL, SIZE_MAX) covers every
 * address of the process
 * ------------------------------------------------------------------- */
static void svt_case_odp(svt_proc_t *p)
{
    const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                        IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                        IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
    struct ibv_device_attr_ex ax;
    struct ibv_mr *omr, *imr;
    struct ibv_sge sge;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint8_t *late;
    size_t len = 1 << 20;
    uint64_t v;

    svt_dev_open(&dev);
    SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
    SVT_CHECK((ax.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
              (ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT),
              "general_caps 0x%llx",
              (unsigned long long)ax.odp_caps.general_caps);
    SVT_CHECK((ax.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc,
              "rc_odp_caps 0x%x", ax.odp_caps.per_transport_caps.rc_odp_caps);
    SVT_CHECK(ax.odp_caps.per_transport_caps.ud_odp_caps &
              IBV_ODP_SUPPORT_SEND, "ud_odp_caps 0x%x",
              ax.odp_caps.per_transport_caps.ud_odp_caps);
    SVT_CHECK((ax.xrc_odp_caps & (IBV_ODP_SUPPORT_SEND |
                                  IBV_ODP_SUPPORT_SRQ_RECV)) ==
              (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV),
              "xrc_odp_caps 0x%x (xsrq_pingpong -o asks for SEND and "
              "SRQ_RECV)", ax.xrc_odp_caps);

    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.mr_access |= IBV_ACCESS_ON_DEMAND;
    svt_ep_local_pair(&dev, &o, &a, &b);

    /* registered while PROT_NONE (an HCA without ODP would fail), used
     * once it is accessible */
    late = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    SVT_CHECK(late != MAP_FAILED, "mmap");
    SVT_NN(omr, ibv_reg_mr(dev.pd, late, len, IBV_ACCESS_LOCAL_WRITE |
                           IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_ON_DEMAND));
    SVT_OK(mprotect(late, len, PROT_READ | PROT_WRITE));
    svt_fill(a.buf, 4096, 7);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 4096,
                         (uintptr_t)late + len - 4096, omr->rkey, 0,
                         IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    svt_pattern_check(late + len - 4096, 4096, 7, "write into an ODP MR");

    /* prefetch (ibv_advise_mr) of an ODP range succeeds; of a range outside
     * the MR or with an unknown lkey it is refused */
    sge.addr   = (uintptr_t)late;
    sge.length = 65536;
    sge.lkey   = omr->lkey;
    SVT_OK(ibv_advise_mr(dev.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                         IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
    SVT_OK(ibv_advise_mr(dev.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1));
    sge.length = len + 1;
    SVT_CHECK(ibv_advise_mr(dev.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge,
                            1) == EINVAL, "prefetch beyond the MR");
    sge.length = 4096;
    sge.lkey   = omr->lkey ^ 0x100;
    SVT_CHECK(ibv_advise_mr(dev.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge,
                            1) == EINVAL, "prefetch with a bad lkey");
    sge.lkey   = omr->lkey;
    SVT_CHECK(ibv_advise_mr(dev.pd, 17, 0, &sge, 1) == EINVAL,
              "unknown advice");

    /* implicit ODP: one MR for the whole address space, used by a SEND's
     * gather, a receive and an atomic (ibv_rc_pingpong -O) */
    SVT_NN(imr, ibv_reg_mr(dev.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE |
                           IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND));
    {
        struct ibv_recv_wr rwr, *rbad;
        struct ibv_send_wr wr, *bad;
        struct ibv_sge rs = {(uintptr_t)late, 4096, imr->lkey};
        struct ibv_sge ss = {(uintptr_t)a.buf + 8192, 300, imr->lkey};

        memset(&rwr, 0, sizeof(rwr));
        rwr.wr_id   = 20;
        rwr.sg_list = &rs;
        rwr.num_sge = 1;
        SVT_OK(ibv_post_recv(b.qp, &rwr, &rbad));
        svt_fill(a.buf + 8192, 300, 8);
        memset(&wr, 0, sizeof(wr));
        wr.wr_id      = 21;
        wr.sg_list    = &ss;
        wr.num_sge    = 1;
        wr.opcode     = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        SVT_OK(ibv_post_send(a.qp, &wr, &bad));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 21, NULL);
        svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 20, NULL);
        svt_pattern_check(late, 300, 8, "SEND through implicit ODP MRs");

        /* fetch-and-add of 0 (svt_post_send leaves compare_add 0): the
         * old value comes back into a.buf */
        v = 5;
        memcpy(late + 8192, &v, 8);
        memset(a.buf, 0, 8);
        SVT_OK(svt_post_send(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8,
                             (uintptr_t)late + 8192, imr->rkey, 0,
                             IBV_SEND_SIGNALED, 22));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 22, NULL);
        memcpy(&v, a.buf, 8);
        SVT_CHECK(v == 5, "fetch-and-add through an implicit MR returned "
                  "%llu, expected 5", (unsigned long long)v);
    }
    SVT_OK(ibv_dereg_mr(imr));
    SVT_OK(ibv_dereg_mr(omr));
    munmap(late, len);
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * Completion timestamps: a clock is advertised (hca_core_clock in kHz,
 * completion_timestamp_mask), a CQ created with
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP(_WALLCLOCK) stamps every completion,
 * ibv_query_rt_values_ex reads the clock
 * ------------------------------------------------------------------- */
static void svt_case_timestamps(svt_proc_t *p)
{
    struct ibv_device_attr_ex ax;
    struct ibv_cq_init_attr_ex ca;
    struct ibv_poll_cq_attr pa;
    struct ibv_values_ex vals;
    struct ibv_cq_ex *cqx;
    struct timespec rt;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint64_t t0, t1, ts, ts_ns, prev = 0, wall, now_wall;
    int i, ret;

    svt_dev_open(&dev);
    SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
    SVT_CHECK(ax.completion_timestamp_mask != 0 && ax.hca_core_clock != 0,
              "completion_timestamp_mask 0x%llx hca_core_clock %llu",
              (unsigned long long)ax.completion_timestamp_mask,
              (unsigned long long)ax.hca_core_clock);
    memset(&vals, 0, sizeof(vals));
    vals.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    t0 = svt_mono_ns();
    SVT_OK(ibv_query_rt_values_ex(dev.ctx, &vals));
    SVT_CHECK(vals.comp_mask == IBV_VALUES_MASK_RAW_CLOCK, "comp_mask 0x%x",
              vals.comp_mask);
    vals.comp_mask = 1u << 5;
    SVT_CHECK(ibv_query_rt_values_ex(dev.ctx, &vals) == EINVAL,
              "unknown ibv_values_ex bit accepted");

    memset(&ca, 0, sizeof(ca));
    ca.cqe      = 64;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS |
                  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
    SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.cq = ibv_cq_ex_to_cq(cqx);
    svt_ep_local_pair(&dev, &o, &a, &b);
    for (i = 0; i < 8; ++i) {
        svt_post_recv(&b, 4096, 256, 100 + i);
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 64, 0, 0, 0,
                             IBV_SEND_SIGNALED, i));
        svt_sleep_ms(1);
    }
    t1 = svt_mono_ns();
    memset(&pa, 0, sizeof(pa));
    ret = ibv_start_poll(cqx, &pa);
    for (i = 0; i < 16; ++i) {
        SVT_CHECK(ret == 0, "completion %d: poll returned %d", i, ret);
        SVT_CHECK(cqx->status == IBV_WC_SUCCESS, "status %s",
                  ibv_wc_status_str(cqx->status));
        ts = ibv_wc_read_completion_ts(cqx);
        SVT_CHECK(ts >= prev, "timestamps go back: %llu after %llu",
                  (unsigned long long)ts, (unsigned long long)prev);
        /* in device clock cycles: hca_core_clock kHz (128 bits: cycles
         * times 10^6 overflow 64 bits once the clock passes ~5 hours) */
        ts_ns = (uint64_t)((unsigned __int128)ts * 1000000u /
                           ax.hca_core_clock);
        SVT_CHECK((ts_ns >= t0) && (ts_ns <= t1),
                  "timestamp %llu cycles (%llu ns) outside the run "
                  "[%llu, %llu] ns", (unsigned long long)ts,
                  (unsigned long long)ts_ns, (unsigned long long)t0,
                  (unsigned long long)t1);
        prev = ts;
        wall = ibv_wc_read_completion_wallclock_ns(cqx);
        clock_gettime(CLOCK_REALTIME, &rt);
        now_wall = (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec;
        SVT_CHECK(wall <= now_wall && now_wall - wall < 10000000000ull,
                  "wallclock %llu, now %llu", (unsigned long long)wall,
                  (unsigned long long)now_wall);
        ret = ibv_next_poll(cqx);
    }
    SVT_CHECK(ret == ENOENT, "a 17th completion (%d)", ret);
    ibv_end_poll(cqx);
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));

    /* still refused: the fields softverbs has no value for */
    ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_CVLAN;
    errno = 0;
    cqx   = ibv_create_cq_ex(dev.ctx, &ca);
    SVT_CHECK(cqx == NULL && errno == EOPNOTSUPP, "CQ with CVLAN: errno %d",
              errno);
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * Device memory (ibv_alloc_dm, ibv_memcpy_to/from_dm, ibv_reg_dm_mr with
 * zero-based addresses), the checks of mlx5 (alloc_dm_memic,
 * mlx5_access_dm) and libibverbs (ibv_cmd_reg_dm_mr)
 * ------------------------------------------------------------------- */
static void svt_case_dm(svt_proc_t *p)
{
    struct ibv_device_attr_ex ax;
    struct ibv_alloc_dm_attr da;
    struct ibv_dm *dm, *dm2;
    struct ibv_mr *mr;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint8_t host[4096];
    struct ibv_sge sge;
    struct ibv_recv_wr rwr, *rbad;

    svt_dev_open(&dev);
    SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
    SVT_CHECK(ax.max_dm_size >= 65536, "max_dm_size %llu",
              (unsigned long long)ax.max_dm_size);
    memset(&da, 0, sizeof(da));
    da.length = ax.max_dm_size + 1;
    errno = 0;
    SVT_CHECK(ibv_alloc_dm(dev.ctx, &da) == NULL && errno == EINVAL,
              "DM above max_dm_size: errno %d", errno);
    da.length = 16384;
    SVT_NN(dm, ibv_alloc_dm(dev.ctx, &da));
    /* the whole arena is max_dm_size: a second allocation that does not
     * fit is ENOMEM */
    da.length = ax.max_dm_size;
    errno = 0;
    dm2   = ibv_alloc_dm(dev.ctx, &da);
    SVT_CHECK(dm2 == NULL && errno == ENOMEM, "DM beyond the arena: %s, "
              "errno %d", dm2 ? "allocated" : "refused", errno);

    svt_fill(host, sizeof(host), 3);
    SVT_OK(ibv_memcpy_to_dm(dm, 4096, host, sizeof(host)));
    memset(host, 0, sizeof(host));
    SVT_OK(ibv_memcpy_from_dm(host, dm, 4096, sizeof(host)));
    svt_pattern_check(host, sizeof(host), 3, "DM copy round trip");
    SVT_CHECK(ibv_memcpy_to_dm(dm, 16384 - 4, host, 8) == EFAULT,
              "copy past the DM end");
    SVT_CHECK(ibv_memcpy_to_dm(dm, 2, host, 8) == EINVAL,
              "copy at an unaligned DM offset");
    SVT_CHECK(ibv_memcpy_from_dm(host, dm, 0, 6) == EINVAL,
              "copy of an unaligned length");

    /* a DM MR must be zero based (libibverbs ibv_cmd_reg_dm_mr), its range
     * inside the DM; ON_DEMAND is not an access DM MRs take (mlx5) */
    errno = 0;
    SVT_CHECK(ibv_reg_dm_mr(dev.pd, dm, 0, 8192, IBV_ACCESS_LOCAL_WRITE) ==
              NULL && errno == EINVAL, "DM MR without ZERO_BASED: errno %d",
              errno);
    errno = 0;
    SVT_CHECK(ibv_reg_dm_mr(dev.pd, dm, 8192, 16384, IBV_ACCESS_ZERO_BASED |
                            IBV_ACCESS_LOCAL_WRITE) == NULL &&
              errno == EINVAL, "DM MR beyond the DM: errno %d", errno);
    errno = 0;
    SVT_CHECK(ibv_reg_dm_mr(dev.pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED |
                            IBV_ACCESS_ON_DEMAND) == NULL &&
              errno == EINVAL, "ODP DM MR: errno %d", errno);
    SVT_NN(mr, ibv_reg_dm_mr(dev.pd, dm, 4096, 8192, IBV_ACCESS_ZERO_BASED |
                             IBV_ACCESS_LOCAL_WRITE |
                             IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ));
    SVT_CHECK(ibv_free_dm(dm) == EBUSY, "DM with an MR freed");

    /* RDMA write into the DM MR at zero-based address 100 (DM offset
     * 4196), a read back, a SEND gathered from the DM and one received
     * into it */
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &a, &b);
    svt_fill(a.buf, 1000, 9);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 1000, 100, mr->rkey, 0,
                         IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    SVT_OK(ibv_memcpy_from_dm(host, dm, 4196, 1000));
    svt_pattern_check(host, 1000, 9, "RDMA write into DM");
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_READ, 2000, 1000, 100, mr->rkey, 0,
                         IBV_SEND_SIGNALED, 2));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2, NULL);
    svt_pattern_check(a.buf + 2000, 1000, 9, "RDMA read from DM");

    memset(&rwr, 0, sizeof(rwr));
    sge.addr    = 4096;            /* zero based: DM offset 8192 */
    sge.length  = 2048;
    sge.lkey    = mr->lkey;
    rwr.wr_id   = 3;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    SVT_OK(ibv_post_recv(b.qp, &rwr, &rbad));
    svt_fill(a.buf, 700, 10);
    SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 700, 0, 0, 0,
                         IBV_SEND_SIGNALED, 4));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 4, NULL);
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 3, NULL);
    SVT_OK(ibv_memcpy_from_dm(host, dm, 8192, 700));
    svt_pattern_check(host, 700, 10, "SEND received into DM");

    /* out of the MR's zero-based range: remote access error */
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 64, 8192 - 32, mr->rkey,
                         0, IBV_SEND_SIGNALED, 5));
    svt_expect_wc(a.cq, IBV_WC_REM_ACCESS_ERR, -1, 5, NULL);

    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(ibv_free_dm(dm));
    /* freed: the whole arena again */
    da.length = ax.max_dm_size;
    SVT_NN(dm, ibv_alloc_dm(dev.ctx, &da));
    SVT_OK(ibv_free_dm(dm));
    svt_dev_close(&dev);
}

/*
 * A DM MR of length 0 is registered, as the kernel's DM_MR_REG handler
 * (uverbs_std_types_mr.c: only the range inside the DM is checked) and
 * mlx5_ib_reg_dm_mr (an mkey of length 0) allow; a remote write of one
 * byte through it is out of bounds
 */
static void svt_case_dm_mr_empty(svt_proc_t *p)
{
    struct ibv_alloc_dm_attr da;
    struct ibv_dm *dm;
    struct ibv_mr *mr;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_dev_t dev;

    (void)p;
    svt_dev_open(&dev);
    memset(&da, 0, sizeof(da));
    da.length = 4096;
    SVT_NN(dm, ibv_alloc_dm(dev.ctx, &da));
    errno = 0;
    mr = ibv_reg_dm_mr(dev.pd, dm, 0, 0, IBV_ACCESS_ZERO_BASED |
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    SVT_CHECK(mr != NULL, "DM MR of length 0 refused (errno %d)", errno);
    SVT_CHECK(mr->length == 0, "DM MR length %zu, 0 registered",
              mr->length);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_local_pair(&dev, &o, &a, &b);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 1, 0, mr->rkey, 0,
                         IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_REM_ACCESS_ERR, -1, 1, NULL);
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_dereg_mr(mr));
    /* at the DM's end, length 0: inside; past it: EINVAL */
    SVT_NN(mr, ibv_reg_dm_mr(dev.pd, dm, 4096, 0, IBV_ACCESS_ZERO_BASED));
    SVT_OK(ibv_dereg_mr(mr));
    errno = 0;
    SVT_CHECK(ibv_reg_dm_mr(dev.pd, dm, 4100, 0, IBV_ACCESS_ZERO_BASED) ==
              NULL && errno == EINVAL, "DM MR at an offset past the DM: "
              "errno %d", errno);
    SVT_OK(ibv_free_dm(dm));
    svt_dev_close(&dev);
}

/*
 * An SRQ of max_wr 0 is created, as mlx5_create_srq does (mlx5_alloc_srq_buf
 * sizes one WQE, none usable, max_wr written back 0; the kernel's
 * mlx5_ib_create_srq takes it); a post finds no room: ENOMEM, bad_wr the
 * first WR (mlx5_post_srq_recv)
 */
static void svt_case_srq_max_wr_zero(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 0, .max_sge = 1}};
    struct ibv_recv_wr rwr, *bad = NULL;
    struct ibv_srq_attr qa;
    struct ibv_sge sge;
    struct ibv_srq *srq;
    svt_dev_t dev;
    uint64_t buf;
    int ret;

    (void)p;
    svt_dev_open(&dev);
    errno = 0;
    srq = ibv_create_srq(dev.pd, &sa);
    SVT_CHECK(srq != NULL, "SRQ of max_wr 0 refused (errno %d)", errno);
    SVT_CHECK(sa.attr.max_wr == 0, "max_wr written back %u, mlx5's is 0",
              sa.attr.max_wr);
    SVT_OK(ibv_query_srq(srq, &qa));
    SVT_CHECK(qa.max_wr == 0, "ibv_query_srq: max_wr %u", qa.max_wr);
    sge.addr    = (uintptr_t)&buf;
    sge.length  = sizeof(buf);
    sge.lkey    = 0;
    memset(&rwr, 0, sizeof(rwr));
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ret = ibv_post_srq_recv(srq, &rwr, &bad);
    SVT_CHECK(ret == ENOMEM && bad == &rwr, "post to an SRQ of max_wr 0: "
              "%d, expected ENOMEM", ret);
    SVT_OK(ibv_destroy_srq(srq));
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_feat[] = {
    {"feat/cq_max_cqe", svt_case_cq_max_cqe, 1, 0, 60},
    {"feat/cq_size_rounded", svt_case_cq_size_rounded, 1},
    {"feat/cq_resize", svt_case_cq_resize, 1},
    {"feat/cq_resize_traffic", svt_case_cq_resize_traffic, 2, 0, 30},
    {"feat/rereg_mr", svt_case_rereg_mr, 1},
    {"feat/raw_packet_refused", svt_case_raw_packet_refused, 1},
    {"feat/odp", svt_case_odp, 1, 0, 30},
    {"feat/timestamps", svt_case_timestamps, 1},
    {"feat/dm", svt_case_dm, 1},
    {"feat/dm_mr_length_zero", svt_case_dm_mr_empty, 1},
    {"feat/srq_max_wr_zero", svt_case_srq_max_wr_zero, 1},
    {NULL}
};
