/*
 * softverbs conformance: parent domains and thread domains
 * (ibv_alloc_parent_domain(3), ibv_alloc_td(3)). A parent domain is
 * "completely interchangeable with the struct ibv_pd used to create it":
 * MRs, windows, CQs and QPs made with it move data with objects of its PD,
 * in one process and across two; it holds its PD and thread domain, and is
 * held by its objects (EBUSY, as mlx5's mlx5_dealloc_parent_domain and
 * mlx5_dealloc_td); its custom allocator is asked for the send queue.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_mw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

static struct ibv_td *svt_pd_td(svt_dev_t *dev)
{
    struct ibv_td_init_attr ta = {0};
    struct ibv_td *td;

    SVT_NN(td, ibv_alloc_td(dev->ctx, &ta));
    SVT_CHECK(td->context == dev->ctx, "td context");
    return td;
}

static struct ibv_pd *svt_pd_parent(svt_dev_t *dev, struct ibv_td *td)
{
    struct ibv_parent_domain_init_attr pa;
    struct ibv_pd *pad;

    memset(&pa, 0, sizeof(pa));
    pa.pd = dev->pd;
    pa.td = td;
    SVT_NN(pad, ibv_alloc_parent_domain(dev->ctx, &pa));
    SVT_CHECK((pad != dev->pd) && (pad->context == dev->ctx),
              "parent domain fields");
    return pad;
}

/* In one process: a QP, an MR, a window and a CQ of a parent domain (with a
 * thread domain) work with a QP and an MR of its PD, an SRQ of the PD
 * serves a QP of the parent domain; an MR of another PD is still refused;
 * the PD, the thread domain and the parent domain are held while in use */
static void svt_case_pd_parent_domain(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa;
    struct ibv_qp_init_attr qa;
    struct ibv_cq_init_attr_ex ca;
    struct ibv_cq_ex *cqx;
    struct ibv_pd *pad, *pd2;
    struct ibv_srq *srq;
    struct ibv_qp *qp;
    struct ibv_mr *mr2;
    struct ibv_mw *mw;
    struct ibv_td *td;
    struct ibv_wc wc;
    svt_dev_t dev, pdev;
    svt_ep_opts_t o;
    svt_addr_t aa, ba;
    svt_ep_t a, b;

    svt_dev_open(&dev);
    td   = svt_pd_td(&dev);
    pad  = svt_pd_parent(&dev, td);
    pdev = dev;
    pdev.pd = pad;
    memset(&ca, 0, sizeof(ca));
    ca.cqe           = 64;
    ca.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
    ca.parent_domain = pad;
    SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
    svt_mw_opts(&o, IBV_QPT_RC);
    o.cq = ibv_cq_ex_to_cq(cqx);
    svt_ep_create(&pdev, &o, &a);        /* MR and QP of the parent domain */
    o.cq = NULL;
    svt_ep_create(&dev, &o, &b);         /* MR and QP of the PD */
    SVT_CHECK((a.qp->pd == pad) && (a.mr->pd == pad), "objects' pd");
    svt_ep_addr(&a, &aa);
    svt_ep_addr(&b, &ba);
    svt_ep_connect(&a, &ba);
    svt_ep_connect(&b, &aa);

    svt_fill(a.buf, 4096, 1);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 4096, svt_raddr(&a, 8192),
                         a.remote.rkey, 0, IBV_SEND_SIGNALED, 1));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    svt_pattern_check(b.buf + 8192, 4096, 1, "written by the parent's QP");
    svt_fill(a.buf + 16384, 2048, 2);
    SVT_OK(svt_post_send(&b, IBV_WR_RDMA_READ, 0, 2048, svt_raddr(&b, 16384),
                         b.remote.rkey, 0, IBV_SEND_SIGNALED, 2));
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 2, NULL);
    svt_pattern_check(b.buf, 2048, 2, "read from the parent's MR");

    /* a window of the parent domain on its MR, read by the PD's QP */
    SVT_NN(mw, ibv_alloc_mw(pad, IBV_MW_TYPE_1));
    SVT_CHECK(svt_mw_bind1(&a, mw, a.mr, (uintptr_t)a.buf + 16384, 2048,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "bind of the parent domain's window");
    memset(b.buf, 0, 2048);
    SVT_OK(svt_post_send(&b, IBV_WR_RDMA_READ, 0, 2048,
                         (uintptr_t)a.buf + 16384, mw->rkey, 0,
                         IBV_SEND_SIGNALED, 3));
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 3, NULL);
    svt_pattern_check(b.buf, 2048, 2, "read through the window");

    /* an SRQ of the PD serves a QP of the parent domain */
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr  = 4;
    sa.attr.max_sge = 1;
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = b.cq;
    qa.srq     = srq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr  = 1;
    qa.cap.max_send_sge = 1;
    SVT_NN(qp, ibv_create_qp(pad, &qa));

    /* held: the PD and the TD by the parent domain, the parent domain by
     * its objects */
    SVT_CHECK(ibv_dealloc_pd(pad) == EBUSY, "parent domain in use freed");
    SVT_CHECK(ibv_dealloc_td(td) == EBUSY, "thread domain in use freed");
    SVT_OK(ibv_destroy_qp(qp));
    SVT_OK(ibv_destroy_srq(srq));

    /* another PD stays another PD: its lkey is refused to the parent's QP */
    SVT_NN(pd2, ibv_alloc_pd(dev.ctx));
    SVT_NN(mr2, ibv_reg_mr(pd2, a.buf, 4096, IBV_ACCESS_LOCAL_WRITE));
    {
        struct ibv_sge sge = {(uintptr_t)a.buf, 64, mr2->lkey};
        struct ibv_send_wr wr, *bad;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id      = 4;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.opcode     = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = svt_raddr(&a, 0);
        wr.wr.rdma.rkey        = a.remote.rkey;
        SVT_OK(ibv_post_send(a.qp, &wr, &bad));
        svt_wait_wc(a.cq, &wc, SVT_WC_TIMEOUT_MS);
        SVT_CHECK(wc.status == IBV_WC_LOC_PROT_ERR, "lkey of another PD: %s",
                  ibv_wc_status_str(wc.status));
    }
    SVT_OK(ibv_dereg_mr(mr2));
    SVT_OK(ibv_dealloc_pd(pd2));

    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_CHECK(ibv_dealloc_pd(pad) == EBUSY, "parent domain of a CQ freed");
    SVT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));
    SVT_CHECK(ibv_dealloc_pd(dev.pd) == EBUSY, "PD of a parent domain freed");
    SVT_OK(ibv_dealloc_pd(pad));
    SVT_OK(ibv_dealloc_td(td));
    svt_dev_close(&dev);
}

/* What libibverbs and mlx5 refuse: no PD, unknown comp_mask bits,
 * allocators without callbacks (EINVAL); a thread domain with comp_mask
 * bits (mlx5_alloc_td: EINVAL); a CQ whose IBV_CQ_INIT_ATTR_MASK_PD names
 * a plain PD or none (mlx5 create_cq: EINVAL) */
static void svt_case_pd_parent_domain_refused(svt_proc_t *p)
{
    struct ibv_parent_domain_init_attr pa;
    struct ibv_cq_init_attr_ex ca;
    struct ibv_td_init_attr ta;
    svt_dev_t dev;

    svt_dev_open(&dev);
    memset(&pa, 0, sizeof(pa));
    errno = 0;
    SVT_CHECK(!ibv_alloc_parent_domain(dev.ctx, &pa) && (errno == EINVAL),
              "parent domain without a PD: errno %d", errno);
    pa.pd        = dev.pd;
    pa.comp_mask = 1u << 2;
    errno = 0;
    SVT_CHECK(!ibv_alloc_parent_domain(dev.ctx, &pa) && (errno == EINVAL),
              "parent domain with comp_mask bit 2: errno %d", errno);
    pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    errno = 0;
    SVT_CHECK(!ibv_alloc_parent_domain(dev.ctx, &pa) && (errno == EINVAL),
              "allocators without callbacks: errno %d", errno);
    ta.comp_mask = 1;
    errno = 0;
    SVT_CHECK(!ibv_alloc_td(dev.ctx, &ta) && (errno == EINVAL),
              "thread domain with comp_mask 1: errno %d", errno);
    memset(&ca, 0, sizeof(ca));
    ca.cqe           = 8;
    ca.comp_mask     = IBV_CQ_INIT_ATTR_MASK_PD;
    ca.parent_domain = dev.pd;
    errno = 0;
    SVT_CHECK(!ibv_create_cq_ex(dev.ctx, &ca) && (errno == EINVAL),
              "CQ with a plain PD as parent domain: errno %d", errno);
    ca.parent_domain = NULL;
    errno = 0;
    SVT_CHECK(!ibv_create_cq_ex(dev.ctx, &ca) && (errno == EINVAL),
              "CQ with no parent domain: errno %d", errno);
    svt_dev_close(&dev);
}

/* The custom allocator of a parent domain */
struct svt_pd_alloc {
    int      mode;              /* 0: allocate, 1: use default, 2: fail */
    int      allocs, frees;
    struct ibv_pd *pd;
    void     *ptr;
    size_t   size, align;
    uint64_t type, free_type;
};

static void *svt_pd_alloc_cb(struct ibv_pd *pd, void *ctx, size_t size,
                             size_t alignment, uint64_t type)
{
    struct svt_pd_alloc *s = ctx;
    void *ptr;

    s->allocs++;
    s->pd    = pd;
    s->size  = size;
    s->align = alignment;
    s->type  = type;
    if (s->mode == 1) {
        return IBV_ALLOCATOR_USE_DEFAULT;
    }
    if ((s->mode == 2) || posix_memalign(&ptr, alignment, size)) {
        return NULL;
    }
    memset(ptr, 0, size);
    s->ptr = ptr;
    return ptr;
}

static void svt_pd_free_cb(struct ibv_pd *pd, void *ctx, void *ptr,
                           uint64_t type)
{
    struct svt_pd_alloc *s = ctx;

    SVT_CHECK((ptr == s->ptr) && (pd == s->pd), "free of %p, allocated %p",
              ptr, s->ptr);
    s->frees++;
    s->free_type = type;
    free(ptr);
}

/* IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS and _PD_CONTEXT: the send queue of
 * a QP of the parent domain comes from its allocator (with pd_context, the
 * parent domain, a page alignment and mlx5's QP resource type) and goes
 * back to its free callback; IBV_ALLOCATOR_USE_DEFAULT falls back to
 * softverbs' own; an allocator that fails fails the QP with ENOMEM */
static void svt_case_pd_parent_domain_allocators(svt_proc_t *p)
{
    struct ibv_parent_domain_init_attr pa;
    struct svt_pd_alloc s;
    struct ibv_qp_init_attr qa;
    svt_dev_t dev, pdev;
    struct ibv_pd *pad;
    svt_ep_opts_t o;
    svt_addr_t aa, ba;
    svt_ep_t a, b;
    int mode;

    svt_dev_open(&dev);
    for (mode = 0; mode < 2; ++mode) {
        memset(&s, 0, sizeof(s));
        s.mode = mode;
        memset(&pa, 0, sizeof(pa));
        pa.pd         = dev.pd;
        pa.comp_mask  = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                        IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
        pa.alloc      = svt_pd_alloc_cb;
        pa.free       = svt_pd_free_cb;
        pa.pd_context = &s;
        SVT_NN(pad, ibv_alloc_parent_domain(dev.ctx, &pa));
        pdev    = dev;
        pdev.pd = pad;
        svt_ep_opts_init(&o, IBV_QPT_RC);
        svt_ep_create(&pdev, &o, &a);
        svt_ep_create(&dev, &o, &b);
        SVT_CHECK((s.allocs == 1) && (s.pd == pad) && (s.size > 0) &&
                  (s.align >= 4096), "allocator: %d calls, pd %p (parent "
                  "%p), size %zu, alignment %zu", s.allocs, (void *)s.pd,
                  (void *)pad, s.size, s.align);
#ifdef HAVE_MLX5DV
        SVT_CHECK(s.type == MLX5DV_RES_TYPE_QP, "resource type 0x%llx",
                  (unsigned long long)s.type);
#endif
        svt_ep_addr(&a, &aa);
        svt_ep_addr(&b, &ba);
        svt_ep_connect(&a, &ba);
        svt_ep_connect(&b, &aa);
        svt_post_recv(&b, 0, 4096, 9);
        svt_fill(a.buf, 3000, 8 + mode);
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 3000, 0, 0, 0,
                             IBV_SEND_SIGNALED, 8));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 8, NULL);
        svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 9, NULL);
        svt_pattern_check(b.buf, 3000, 8 + mode, "sent by the QP of the "
                          "parent domain");
        svt_ep_destroy(&a);
        svt_ep_destroy(&b);
        SVT_CHECK(s.frees == (mode == 0), "free callback called %d times",
                  s.frees);
        SVT_CHECK((mode != 0) || (s.free_type == s.type), "freed as type "
                  "0x%llx", (unsigned long long)s.free_type);
        SVT_OK(ibv_dealloc_pd(pad));
    }
    /* an allocator that fails */
    memset(&s, 0, sizeof(s));
    s.mode = 2;
    SVT_NN(pad, ibv_alloc_parent_domain(dev.ctx, &pa));
    SVT_NN(a.cq, ibv_create_cq(dev.ctx, 8, NULL, NULL, 0));
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = a.cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    errno = 0;
    SVT_CHECK(!ibv_create_qp(pad, &qa) && (errno == ENOMEM) &&
              (s.allocs == 1), "QP with a failing allocator: errno %d, %d "
              "calls", errno, s.allocs);
    SVT_OK(ibv_destroy_cq(a.cq));
    SVT_OK(ibv_dealloc_pd(pad));
    svt_dev_close(&dev);
}

/* Across processes: rank 1 (a plain PD) writes and reads rank 0's MR of a
 * parent domain through rank 0's QP of the parent domain, and reads
 * through a type 2 window of the parent domain bound by that QP */
static void svt_case_pd_parent_domain_remote(svt_proc_t *p)
{
    struct ibv_pd *pad;
    struct ibv_td *td;
    struct ibv_mw *mw;
    svt_dev_t dev, pdev;
    svt_ep_opts_t o;
    svt_mw_ans_t a;
    svt_ep_t ep;
    int32_t bad;

    if (p->rank == 1) {
        svt_mw_peer(p, IBV_QPT_RC, 1, 0);
        return;
    }
    svt_dev_open(&dev);
    td   = svt_pd_td(&dev);
    pad  = svt_pd_parent(&dev, td);
    pdev = dev;
    pdev.pd = pad;
    svt_mw_opts(&o, IBV_QPT_RC);
    svt_ep_pair(p, 1, &pdev, &o, &ep);
    a = svt_mw_ask(p, SVT_MW_WRITE, 0, ep.mr->rkey, (uintptr_t)ep.buf + 100,
                   5000, 21, 0);
    SVT_CHECK(a.status == IBV_WC_SUCCESS, "WRITE into the parent domain's "
              "MR: %s", ibv_wc_status_str(a.status));
    svt_pattern_check(ep.buf + 100, 5000, 21, "written into the parent's MR");
    svt_fill(ep.buf + 8192, 4096, 22);
    a = svt_mw_ask(p, SVT_MW_READ, 0, ep.mr->rkey, (uintptr_t)ep.buf + 8192,
                   4096, 22, 0);
    bad = a.bad;
    SVT_CHECK((a.status == IBV_WC_SUCCESS) && (bad < 0), "READ of the "
              "parent domain's MR: %s, byte %d", ibv_wc_status_str(a.status),
              bad);
    SVT_NN(mw, ibv_alloc_mw(pad, IBV_MW_TYPE_2));
    SVT_CHECK(svt_mw_bind2(&ep, mw, ep.mr, (uintptr_t)ep.buf + 8192, 4096,
                           IBV_ACCESS_REMOTE_READ) == IBV_WC_SUCCESS,
              "type 2 bind on the parent domain's QP");
    a = svt_mw_ask(p, SVT_MW_READ, 0, mw->rkey, (uintptr_t)ep.buf + 8192,
                   4096, 22, 0);
    SVT_CHECK((a.status == IBV_WC_SUCCESS) && (a.bad < 0), "READ through the "
              "parent domain's window: %s, byte %d",
              ibv_wc_status_str(a.status), a.bad);
    svt_mw_ask(p, SVT_MW_DONE, 0, 0, 0, 0, 0, 0);
    SVT_OK(ibv_dealloc_mw(mw));
    svt_ep_destroy(&ep);
    SVT_OK(ibv_dealloc_pd(pad));
    SVT_OK(ibv_dealloc_td(td));
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_pd[] = {
    {"pd/parent_domain", svt_case_pd_parent_domain, 1},
    {"pd/parent_domain_refused", svt_case_pd_parent_domain_refused, 1},
    {"pd/parent_domain_allocators", svt_case_pd_parent_domain_allocators, 1},
    {"pd/parent_domain_remote", svt_case_pd_parent_domain_remote, 2},
    {NULL}
};
