/*
 * softverbs conformance: mlx5 Dynamically Connected QPs, creation and state
 * transitions (the DC helpers of softverbs_conformance_dc.h are here too).
 * The rules are those of rdma-core 44's mlx5 provider (providers/mlx5/
 * verbs.c create_qp, create_dct) and the kernel's mlx5_ib (check_qp_attr,
 * process_vendor_flags, modify_dci_qp_is_ok, mlx5_ib_modify_dct,
 * mlx5_ib_dct_query_qp), as softverbs' sv_dc.c cites them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_dc.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVT_DC_ACCESS    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* The masks of each transition (modify_dci_qp_is_ok, mlx5_ib_modify_dct) */
#define SVT_DCI_INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT)
#define SVT_DCI_RTR_MASK  (IBV_QP_STATE | IBV_QP_PATH_MTU)
#define SVT_DCI_RTS_MASK  (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
                           IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | \
                           IBV_QP_MAX_QP_RD_ATOMIC)
#define SVT_DCT_INIT_MASK (IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | \
                           IBV_QP_PKEY_INDEX | IBV_QP_PORT)
#define SVT_DCT_RTR_MASK  (IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | \
                           IBV_QP_PATH_MTU)

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */

void svt_dc_init_attr(svt_dev_t *dev, struct ibv_cq *cq, int dct,
                      struct ibv_srq *srq, struct ibv_qp_init_attr_ex *init,
                      struct mlx5dv_qp_init_attr *dv)
{
    memset(init, 0, sizeof(*init));
    memset(dv, 0, sizeof(*dv));
    init->qp_type   = IBV_QPT_DRIVER;
    init->send_cq   = cq;
    init->recv_cq   = cq;
    init->pd        = dev->pd;
    init->comp_mask = IBV_QP_INIT_ATTR_PD;
    dv->comp_mask   = MLX5DV_QP_INIT_ATTR_MASK_DC;
    if (dct) {
        init->srq                       = srq;
        dv->dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
        dv->dc_init_attr.dct_access_key = SVT_DC_KEY;
        return;
    }
    init->cap.max_send_wr     = SVT_DC_SEND_WR;
    init->cap.max_send_sge    = 2;
    init->cap.max_inline_data = SVT_DC_INLINE;
    init->comp_mask          |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    init->send_ops_flags      = SVT_DC_SEND_OPS;
    dv->dc_init_attr.dc_type  = MLX5DV_DCTYPE_DCI;
}

void svt_dc_ep_create(svt_dev_t *dev, int dct, size_t size, svt_dc_ep_t *ep)
{
    struct ibv_srq_init_attr sa;
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;

    memset(ep, 0, sizeof(*ep));
    ep->dev  = dev;
    ep->dct  = dct;
    ep->size = size;
    SVT_NN(ep->cq, ibv_create_cq(dev->ctx, SVT_DC_CQ_SIZE, NULL, NULL, 0));
    SVT_CHECK(posix_memalign((void **)&ep->buf, 4096, size) == 0,
              "out of memory");
    memset(ep->buf, 0, size);
    SVT_NN(ep->mr, ibv_reg_mr(dev->pd, ep->buf, size, SVT_DC_ACCESS));
    if (dct) {
        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr  = 64;
        sa.attr.max_sge = 1;
        SVT_NN(ep->srq, ibv_create_srq(dev->pd, &sa));
    }
    svt_dc_init_attr(dev, ep->cq, dct, ep->srq, &init, &dv);
    SVT_NN(ep->qp, mlx5dv_create_qp(dev->ctx, &init, &dv));
    if (!dct) {
        SVT_NN(ep->qpx, ibv_qp_to_qp_ex(ep->qp));
        SVT_NN(ep->dv, mlx5dv_qp_ex_from_ibv_qp_ex(ep->qpx));
    }
}

void svt_dc_ep_destroy(svt_dc_ep_t *ep)
{
    SVT_OK(ibv_destroy_qp(ep->qp));
    if (ep->srq != NULL) {
        SVT_OK(ibv_destroy_srq(ep->srq));
    }
    SVT_OK(ibv_dereg_mr(ep->mr));
    SVT_OK(ibv_destroy_cq(ep->cq));
    free(ep->buf);
}

/* Valid values for every attribute of a move to state st: each case
 * chooses the mask */
static void svt_dc_attr_fill(const svt_dev_t *dev, enum ibv_qp_state st,
                             struct ibv_qp_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->qp_state         = st;
    a->pkey_index       = 0;
    a->port_num         = dev->port_num;
    a->qp_access_flags  = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC;
    a->path_mtu         = dev->port.active_mtu;
    a->ah_attr.dlid     = dev->port.lid;
    a->ah_attr.port_num = dev->port_num;
    a->dest_qp_num      = 0x123;
    a->qkey             = SVT_QKEY;
    a->min_rnr_timer    = 12;
    a->timeout          = 14;
    a->retry_cnt        = 7;
    a->rnr_retry        = 7;
    a->max_rd_atomic    = 1;
}

void svt_dci_connect(svt_dc_ep_t *ep, uint8_t timeout, uint8_t retry_cnt,
                     uint8_t rnr_retry)
{
    struct ibv_qp_attr a;

    svt_dc_attr_fill(ep->dev, IBV_QPS_INIT, &a);
    SVT_OK(ibv_modify_qp(ep->qp, &a, SVT_DCI_INIT_MASK));
    svt_dc_attr_fill(ep->dev, IBV_QPS_RTR, &a);
    SVT_OK(ibv_modify_qp(ep->qp, &a, SVT_DCI_RTR_MASK));
    svt_dc_attr_fill(ep->dev, IBV_QPS_RTS, &a);
    a.timeout   = timeout;
    a.retry_cnt = retry_cnt;
    a.rnr_retry = rnr_retry;
    SVT_OK(ibv_modify_qp(ep->qp, &a, SVT_DCI_RTS_MASK));
}

void svt_dct_connect(svt_dc_ep_t *ep, uint8_t min_rnr_timer)
{
    struct ibv_qp_attr a;

    svt_dc_attr_fill(ep->dev, IBV_QPS_INIT, &a);
    SVT_OK(ibv_modify_qp(ep->qp, &a, SVT_DCT_INIT_MASK));
    svt_dc_attr_fill(ep->dev, IBV_QPS_RTR, &a);
    a.min_rnr_timer = min_rnr_timer;
    SVT_OK(ibv_modify_qp(ep->qp, &a, SVT_DCT_RTR_MASK));
}

void svt_dc_addr(const svt_dc_ep_t *ep, svt_addr_t *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->qpn  = ep->qp->qp_num;
    addr->rkey = ep->mr->rkey;
    addr->lid  = ep->dev->port.lid;
    memcpy(addr->gid, ep->dev->gid.raw, 16);
    addr->addr = (uintptr_t)ep->buf;
    addr->size = ep->size;
    addr->pid  = getpid();
}

void svt_dc_tgt_init(svt_dc_ep_t *ep, const svt_addr_t *remote, uint64_t key,
                     svt_dc_tgt_t *tgt)
{
    struct ibv_ah_attr ah;

    svt_ah_attr_init(ep->dev, remote, &ah);
    SVT_NN(tgt->ah, ibv_create_ah(ep->dev->pd, &ah));
    tgt->dctn = remote->qpn;
    tgt->key  = key;
    tgt->addr = remote->addr;
    tgt->rkey = remote->rkey;
}

void svt_dci_wr(svt_dc_ep_t *ep, const svt_dc_tgt_t *tgt,
                enum ibv_wr_opcode op, size_t off, uint32_t len, size_t roff,
                uint64_t arg1, uint64_t arg2, unsigned flags, uint64_t wr_id)
{
    struct ibv_qp_ex *q = ep->qpx;
    uint64_t raddr      = tgt->addr + roff;

    q->wr_id    = wr_id;
    q->wr_flags = flags & ~IBV_SEND_INLINE; /* inline: set_inline_data */
    switch (op) {
    case IBV_WR_SEND:
        ibv_wr_send(q);
        break;
    case IBV_WR_SEND_WITH_IMM:
        ibv_wr_send_imm(q, htobe32((uint32_t)arg1));
        break;
    case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(q, tgt->rkey, raddr);
        break;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        ibv_wr_rdma_write_imm(q, tgt->rkey, raddr, htobe32((uint32_t)arg1));
        break;
    case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(q, tgt->rkey, raddr);
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(q, tgt->rkey, raddr, arg1);
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(q, tgt->rkey, raddr, arg1, arg2);
        break;
    default:
        svt_fail("svt_dci_wr: opcode %d", op);
    }
    /* mlx5dv_wr_post(3): the DC address of each WR, after its builder */
    mlx5dv_wr_set_dc_addr(ep->dv, tgt->ah, tgt->dctn, tgt->key);
    if (flags & IBV_SEND_INLINE) {
        ibv_wr_set_inline_data(q, ep->buf + off, len);
    } else {
        ibv_wr_set_sge(q, ep->mr->lkey, (uintptr_t)(ep->buf + off), len);
    }
}

int svt_dci_post(svt_dc_ep_t *ep, const svt_dc_tgt_t *tgt,
                 enum ibv_wr_opcode op, size_t off, uint32_t len, size_t roff,
                 uint64_t arg1, uint64_t arg2, uint64_t wr_id)
{
    ibv_wr_start(ep->qpx);
    svt_dci_wr(ep, tgt, op, off, len, roff, arg1, arg2, IBV_SEND_SIGNALED,
               wr_id);
    return ibv_wr_complete(ep->qpx);
}

typedef int (*svt_dc_stats_fn_t)(uint32_t pid, struct softverbs_stats *st);

void svt_dc_stats(uint32_t pid, struct softverbs_stats *st)
{
    svt_dc_stats_fn_t fn;

    fn = (svt_dc_stats_fn_t)dlvsym(RTLD_DEFAULT, "softverbs_get_stats",
                                   "SOFTVERBS_1.1");
    SVT_CHECK(fn != NULL, "softverbs_get_stats@SOFTVERBS_1.1 not exported");
    memset(st, 0xa5, sizeof(*st));
    SVT_OK(fn(pid, st));
}

int svt_dc_state(struct ibv_qp *qp)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    ret = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);
    return (ret != 0) ? -ret : (int)attr.qp_state;
}

void svt_dc_post_srq_recv(svt_dc_ep_t *ep, size_t off, uint32_t len,
                          uint64_t wr_id)
{
    struct ibv_sge sge = {(uintptr_t)(ep->buf + off), len, ep->mr->lkey};
    struct ibv_recv_wr wr, *bad = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    SVT_OK(ibv_post_srq_recv(ep->srq, &wr, &bad));
}

/* ibv_modify_qp must return err (its return value, ibv_modify_qp(3)) */
#define SVT_DC_MODIFY(_qp, _attr, _mask, _err, _what) \
    do { \
        int _r = ibv_modify_qp((_qp), (_attr), (_mask)); \
        SVT_CHECK(_r == (_err), "%s: ibv_modify_qp mask 0x%x returned %d, " \
                  "expected %d", (_what), (unsigned)(_mask), _r, (_err)); \
    } while (0)

/* ---------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------- */

/*
 * A DCI and a DCT are created. The DCI: IBV_QPT_DRIVER with the ibv_wr_*
 * and mlx5dv_wr_* interfaces, its caps written back, no receive queue
 * (check_qp_attr: max_recv_* 0). The DCT: no number until RTR (modify_dct
 * sets qp_num = dctn), queried in RTR only (mlx5_ib_dct_query_qp: EINVAL
 * otherwise), no ibv_wr_* interface (no send operations). softverbs' own
 * accounting counts each (SOFTVERBS_1.1 num_dci/num_dct).
 */
static void svt_case_dc_create(svt_proc_t *p)
{
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct softverbs_stats st;
    struct mlx5dv_context dctx;
    struct ibv_qp_init_attr qinit;
    struct ibv_qp_attr a;
    svt_dc_ep_t dct;
    struct ibv_qp *dci;
    struct ibv_qp_ex *qpx;
    struct mlx5dv_qp_ex *mqpx;
    svt_dev_t dev;

    svt_dev_open(&dev);
    /* mlx5dv_query_device: the DCI streams caps asked for are given back
     * (0/0: no streams) */
    memset(&dctx, 0xa5, sizeof(dctx));
    dctx.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS;
    SVT_OK(mlx5dv_query_device(dev.ctx, &dctx));
    SVT_CHECK((dctx.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS) &&
              (dctx.dci_streams_caps.max_log_num_concurent == 0) &&
              (dctx.dci_streams_caps.max_log_num_errored == 0),
              "mlx5dv_query_device: comp_mask 0x%llx, DCI streams %u/%u",
              (unsigned long long)dctx.comp_mask,
              dctx.dci_streams_caps.max_log_num_concurent,
              dctx.dci_streams_caps.max_log_num_errored);

    svt_dc_ep_create(&dev, 1, 8192, &dct);
    svt_dc_init_attr(&dev, dct.cq, 0, NULL, &init, &dv);
    init.cap.max_send_wr  = 16;
    init.cap.max_recv_wr  = 0;
    init.cap.max_recv_sge = 0;
    SVT_NN(dci, mlx5dv_create_qp(dev.ctx, &init, &dv));
    SVT_CHECK(dci->qp_type == IBV_QPT_DRIVER, "DCI qp_type %d, expected "
              "IBV_QPT_DRIVER", dci->qp_type);
    SVT_CHECK(dci->qp_num != 0, "DCI has qp_num 0");
    SVT_CHECK((init.cap.max_send_wr >= 16) && (init.cap.max_send_sge >= 2) &&
              (init.cap.max_inline_data >= SVT_DC_INLINE) &&
              (init.cap.max_recv_wr == 0) && (init.cap.max_recv_sge == 0),
              "DCI caps written back: send %u/%u inline %u recv %u/%u",
              init.cap.max_send_wr, init.cap.max_send_sge,
              init.cap.max_inline_data, init.cap.max_recv_wr,
              init.cap.max_recv_sge);
    SVT_NN(qpx, ibv_qp_to_qp_ex(dci));
    SVT_NN(mqpx, mlx5dv_qp_ex_from_ibv_qp_ex(qpx));
    SVT_CHECK((mqpx->wr_set_dc_addr != NULL) && (qpx->wr_start != NULL),
              "DCI without wr_set_dc_addr/wr_start");
    SVT_CHECK(svt_dc_state(dci) == IBV_QPS_RESET, "new DCI state %d",
              svt_dc_state(dci));

    SVT_CHECK(dct.qp->qp_type == IBV_QPT_DRIVER, "DCT qp_type %d",
              dct.qp->qp_type);
    SVT_CHECK(ibv_qp_to_qp_ex(dct.qp) == NULL, "a DCT has ibv_wr_* ops");
    SVT_CHECK(dct.qp->qp_num == 0, "DCT qp_num 0x%x before RTR, expected 0",
              dct.qp->qp_num);
    SVT_CHECK(svt_dc_state(dct.qp) == -EINVAL, "ibv_query_qp of a DCT in "
              "RESET: %d, expected -EINVAL", svt_dc_state(dct.qp));
    svt_dc_attr_fill(&dev, IBV_QPS_INIT, &a);
    SVT_OK(ibv_modify_qp(dct.qp, &a, SVT_DCT_INIT_MASK));
    SVT_CHECK(dct.qp->qp_num == 0, "DCT qp_num 0x%x in INIT, expected 0",
              dct.qp->qp_num);
    SVT_CHECK(svt_dc_state(dct.qp) == -EINVAL, "ibv_query_qp of a DCT in "
              "INIT: %d, expected -EINVAL", svt_dc_state(dct.qp));
    svt_dc_attr_fill(&dev, IBV_QPS_RTR, &a);
    a.min_rnr_timer = 7;
    SVT_OK(ibv_modify_qp(dct.qp, &a, SVT_DCT_RTR_MASK));
    SVT_CHECK((dct.qp->qp_num != 0) && (dct.qp->qp_num < (1u << 24)) &&
              (dct.qp->qp_num != dci->qp_num), "DCT qp_num 0x%x in RTR "
              "(DCI 0x%x)", dct.qp->qp_num, dci->qp_num);
    /* in RTR the DCT's attributes are given (mlx5_ib_dct_query_qp) */
    memset(&a, 0, sizeof(a));
    SVT_OK(ibv_query_qp(dct.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                        IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MTU | IBV_QP_PORT,
                        &qinit));
    SVT_CHECK((a.qp_state == IBV_QPS_RTR) && (a.min_rnr_timer == 7) &&
              (a.path_mtu == dev.port.active_mtu) &&
              (a.port_num == dev.port_num) &&
              (a.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE |
                                     IBV_ACCESS_REMOTE_READ |
                                     IBV_ACCESS_REMOTE_ATOMIC)),
              "DCT query in RTR: state %d min_rnr_timer %u path_mtu %d port "
              "%u access 0x%x", a.qp_state, a.min_rnr_timer, a.path_mtu,
              a.port_num, a.qp_access_flags);

    svt_dc_stats(getpid(), &st);
    SVT_CHECK((st.num_dci == 1) && (st.num_dct == 1) && (st.num_qp == 2) &&
              (st.num_qp_by_type[3] == 2) && (st.dc_switches == 0) &&
              (st.dc_key_violations == 0), "stats: %u DCIs, %u DCTs, %u QPs "
              "(%u other), %llu switches, %llu key violations; expected "
              "1, 1, 2 (2), 0, 0", st.num_dci, st.num_dct, st.num_qp,
              st.num_qp_by_type[3], (unsigned long long)st.dc_switches,
              (unsigned long long)st.dc_key_violations);
    SVT_OK(ibv_destroy_qp(dci));
    svt_dc_ep_destroy(&dct);
    svt_dc_stats(getpid(), &st);
    SVT_CHECK((st.num_dci == 0) && (st.num_dct == 0) && (st.num_qp == 0),
              "stats after destroy: %u DCIs, %u DCTs, %u QPs", st.num_dci,
              st.num_dct, st.num_qp);
    svt_dev_close(&dev);
}

enum {
    SVT_DCR_DV_MASK,         /* unknown mlx5dv comp_mask bit */
    SVT_DCR_DRIVER_NO_DC,    /* IBV_QPT_DRIVER without MASK_DC */
    SVT_DCR_DC_ON_RC,        /* MASK_DC with qp_type RC */
    SVT_DCR_DC_TYPE,         /* dc_type 7 */
    SVT_DCR_NO_SRQ,          /* DCT without SRQ */
    SVT_DCR_DCT_SEND_OPS,    /* DCT with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
    SVT_DCR_DCT_STREAMS,     /* DCT with MASK_DCI_STREAMS */
    SVT_DCR_RECV_WR,         /* DCI with max_recv_wr 1 */
    SVT_DCR_STREAMS,         /* DCI streams log_num_concurent 1 */
    SVT_DCR_FLAGS,           /* create_flags (arg) */
    SVT_DCR_DV_OPS,          /* mlx5 send_ops_flags (arg) */
    SVT_DCR_IBV_OPS          /* ibv send_ops_flags (arg) */
};

/*
 * mlx5dv_create_qp refusals, each with its errno (sv_dc.c: create_qp,
 * create_dct, check_qp_attr, process_vendor_flags, mlx5_qp_fill_wr_pfns).
 * A refused creation leaves no QP behind. mlx5dv_create_qp without DC is
 * an ordinary QP: an RC QP with the DISABLE_SCATTER_TO_CQE hint moves data.
 */
static void svt_case_dc_create_refused(svt_proc_t *p)
{
    static const struct {
        const char *what;
        int        how;
        int        dct;
        uint64_t   arg;
        int        err;
    } bad[] = {
        {"mlx5dv comp_mask bit 10", SVT_DCR_DV_MASK, 0, 0, EINVAL},
        {"IBV_QPT_DRIVER without MASK_DC", SVT_DCR_DRIVER_NO_DC, 0, 0, EINVAL},
        {"MASK_DC with IBV_QPT_RC", SVT_DCR_DC_ON_RC, 0, 0, EINVAL},
        {"dc_type 7", SVT_DCR_DC_TYPE, 0, 0, EINVAL},
        {"DCT without SRQ", SVT_DCR_NO_SRQ, 1, 0, EINVAL},
        {"DCT with SEND_OPS_FLAGS", SVT_DCR_DCT_SEND_OPS, 1, 0, EINVAL},
        {"DCT with DCI_STREAMS", SVT_DCR_DCT_STREAMS, 1, 0, EINVAL},
        {"DCI with max_recv_wr 1", SVT_DCR_RECV_WR, 0, 0, EINVAL},
        {"DCI streams log_num_concurent 1", SVT_DCR_STREAMS, 0, 0, EINVAL},
        {"DCI TUNNEL_OFFLOADS", SVT_DCR_FLAGS, 0,
         MLX5DV_QP_CREATE_TUNNEL_OFFLOADS, EINVAL},
        {"DCI PACKET_BASED_CREDIT_MODE", SVT_DCR_FLAGS, 0,
         MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE, EINVAL},
        {"DCI SIG_PIPELINING", SVT_DCR_FLAGS, 0,
         MLX5DV_QP_CREATE_SIG_PIPELINING, EOPNOTSUPP},
        {"DCI DISABLE|ALLOW_SCATTER_TO_CQE", SVT_DCR_FLAGS, 0,
         MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
         MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE, EINVAL},
        {"DCI create flag bit 12", SVT_DCR_FLAGS, 0, 1u << 12, EINVAL},
        {"DCT ALLOW_SCATTER_TO_CQE", SVT_DCR_FLAGS, 1,
         MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE, EINVAL},
        {"DCI MLX5DV_QP_EX_WITH_MEMCPY", SVT_DCR_DV_OPS, 0,
         MLX5DV_QP_EX_WITH_MEMCPY, EOPNOTSUPP},
        {"DCI IBV_QP_EX_WITH_TSO", SVT_DCR_IBV_OPS, 0,
         SVT_DC_SEND_OPS | IBV_QP_EX_WITH_TSO, EOPNOTSUPP},
    };
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct softverbs_stats st;
    svt_ep_opts_t o;
    svt_addr_t aa, ba;
    svt_ep_t a, b;
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        svt_dc_init_attr(&dev, cq, bad[i].dct, srq, &init, &dv);
        switch (bad[i].how) {
        case SVT_DCR_DV_MASK:
            dv.comp_mask |= 1u << 10;
            break;
        case SVT_DCR_DRIVER_NO_DC:
            dv.comp_mask = 0;
            break;
        case SVT_DCR_DC_ON_RC:
            init.qp_type = IBV_QPT_RC;
            break;
        case SVT_DCR_DC_TYPE:
            dv.dc_init_attr.dc_type = (enum mlx5dv_dc_type)7;
            break;
        case SVT_DCR_NO_SRQ:
            init.srq = NULL;
            break;
        case SVT_DCR_DCT_SEND_OPS:
            init.comp_mask     |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
            init.send_ops_flags = IBV_QP_EX_WITH_SEND;
            break;
        case SVT_DCR_DCT_STREAMS:
            dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
            break;
        case SVT_DCR_RECV_WR:
            init.cap.max_recv_wr  = 1;
            init.cap.max_recv_sge = 1;
            break;
        case SVT_DCR_STREAMS:
            dv.comp_mask |= MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
            dv.dc_init_attr.dci_streams.log_num_concurent = 1;
            break;
        case SVT_DCR_FLAGS:
            dv.comp_mask   |= MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
            dv.create_flags = (uint32_t)bad[i].arg;
            break;
        case SVT_DCR_DV_OPS:
            dv.comp_mask     |= MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
            dv.send_ops_flags = bad[i].arg;
            break;
        case SVT_DCR_IBV_OPS:
            init.send_ops_flags = bad[i].arg;
            break;
        }
        errno = 0;
        qp    = mlx5dv_create_qp(dev.ctx, &init, &dv);
        SVT_CHECK((qp == NULL) && (errno == bad[i].err), "%s: %s, errno %d, "
                  "expected %d", bad[i].what, qp ? "created" : "refused",
                  errno, bad[i].err);
    }
    svt_dc_stats(getpid(), &st);
    SVT_CHECK(st.num_qp == 0, "%u QPs left by refused creations", st.num_qp);

    /* no MASK_DC: an RC QP (DISABLE_SCATTER_TO_CQE is a hint), which
     * connects and moves data as any other */
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.buf_size = 8192;
    svt_ep_create(&dev, &o, &a);
    svt_ep_create(&dev, &o, &b);
    SVT_OK(ibv_destroy_qp(a.qp));
    memset(&init, 0, sizeof(init));
    memset(&dv, 0, sizeof(dv));
    init.qp_type          = IBV_QPT_RC;
    init.send_cq          = a.cq;
    init.recv_cq          = a.cq;
    init.pd               = dev.pd;
    init.comp_mask        = IBV_QP_INIT_ATTR_PD;
    init.cap.max_send_wr  = 8;
    init.cap.max_recv_wr  = 8;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    dv.comp_mask          = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.create_flags       = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
    SVT_NN(a.qp, mlx5dv_create_qp(dev.ctx, &init, &dv));
    SVT_CHECK((a.qp->qp_type == IBV_QPT_RC) && (a.qp->qp_num != 0),
              "mlx5dv_create_qp RC: qp_type %d qp_num 0x%x", a.qp->qp_type,
              a.qp->qp_num);
    svt_ep_addr(&a, &aa);
    svt_ep_addr(&b, &ba);
    svt_ep_connect(&a, &ba);
    svt_ep_connect(&b, &aa);
    svt_fill(a.buf, 512, 77);
    SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 0, 512, svt_raddr(&a, 1024),
                         a.remote.rkey, 0, IBV_SEND_SIGNALED, 5));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 5, NULL);
    svt_pattern_check(b.buf + 1024, 512, 77, "RC QP of mlx5dv_create_qp");
    svt_dc_stats(getpid(), &st);
    SVT_CHECK((st.num_qp_by_type[0] == 2) && (st.num_dci == 0),
              "stats: %u RC QPs, %u DCIs; expected 2, 0",
              st.num_qp_by_type[0], st.num_dci);
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/*
 * State transitions. A DCI follows modify_dci_qp_is_ok (no access flags,
 * no destination: those come per WR), a DCT mlx5_ib_modify_dct (RESET->INIT
 * and INIT->RTR with exactly their attributes, nothing after RTR). A
 * refused modify leaves the QP as it was: both still move data at the end.
 * A send WR before RTS is an immediate error (EINVAL, as the kernel's
 * rxe_post_send and softverbs' ibv_post_send give it), through
 * ibv_wr_complete as through ibv_post_send.
 */
static void svt_case_dc_modify(svt_proc_t *p)
{
    static const int rts_bits[] = {IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
                                   IBV_QP_RNR_RETRY, IBV_QP_SQ_PSN,
                                   IBV_QP_MAX_QP_RD_ATOMIC};
    struct ibv_qp_attr a;
    svt_dc_ep_t dci, dct;
    svt_dc_tgt_t tgt;
    svt_addr_t addr;
    struct ibv_wc wc;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    svt_dc_ep_create(&dev, 0, 8192, &dci);
    svt_dc_ep_create(&dev, 1, 8192, &dct);

    /* DCT: RESET->INIT takes exactly ACCESS_FLAGS|PKEY_INDEX|PORT */
    svt_dc_attr_fill(&dev, IBV_QPS_INIT, &a);
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_INIT_MASK & ~IBV_QP_ACCESS_FLAGS,
                  EINVAL, "DCT RESET->INIT without ACCESS_FLAGS");
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_INIT_MASK | IBV_QP_QKEY, EINVAL,
                  "DCT RESET->INIT with QKEY");
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_INIT_MASK, 0, "DCT RESET->INIT");
    /* INIT->RTR exactly MIN_RNR_TIMER|AV|PATH_MTU. The AV gives only the
     * DCT's source path (port, GID index, hop limit: mlx5_ib_modify_dct
     * takes no DLID), so an AV without DLID or GRH, as UCX's dc_mlx5 gives
     * on InfiniBand, is taken */
    svt_dc_attr_fill(&dev, IBV_QPS_RTR, &a);
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_RTR_MASK & ~IBV_QP_AV, EINVAL,
                  "DCT INIT->RTR without AV");
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_RTR_MASK | IBV_QP_DEST_QPN, EINVAL,
                  "DCT INIT->RTR with DEST_QPN");
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_RTR_MASK | IBV_QP_RQ_PSN, EINVAL,
                  "DCT INIT->RTR with RQ_PSN");
    SVT_CHECK(dct.qp->qp_num == 0, "DCT numbered by a refused modify");
    a.ah_attr.dlid = 0;
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCT_RTR_MASK, 0,
                  "DCT INIT->RTR, AV of port only");
    /* no way out of RTR */
    svt_dc_attr_fill(&dev, IBV_QPS_RTS, &a);
    SVT_DC_MODIFY(dct.qp, &a, SVT_DCI_RTS_MASK, EINVAL, "DCT RTR->RTS");
    a.qp_state = IBV_QPS_ERR;
    SVT_DC_MODIFY(dct.qp, &a, IBV_QP_STATE, EINVAL, "DCT RTR->ERR");
    a.qp_state = IBV_QPS_RESET;
    SVT_DC_MODIFY(dct.qp, &a, IBV_QP_STATE, EINVAL, "DCT RTR->RESET");
    SVT_CHECK(svt_dc_state(dct.qp) == IBV_QPS_RTR, "DCT state %d after "
              "refused modifies, expected RTR", svt_dc_state(dct.qp));

    /* DCI: no WR in RESET */
    svt_dc_addr(&dct, &addr);
    svt_dc_tgt_init(&dci, &addr, SVT_DC_KEY, &tgt);
    svt_fill(dci.buf, 256, 31);
    SVT_CHECK(svt_dci_post(&dci, &tgt, IBV_WR_RDMA_WRITE, 0, 256, 0, 0, 0,
                           1) == EINVAL, "ibv_wr_complete on a DCI in RESET "
              "did not return EINVAL");
    /* RESET->INIT without access flags; no RESET->ERR */
    svt_dc_attr_fill(&dev, IBV_QPS_INIT, &a);
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_INIT_MASK | IBV_QP_ACCESS_FLAGS, EINVAL,
                  "DCI RESET->INIT with ACCESS_FLAGS");
    a.qp_state = IBV_QPS_ERR;
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_STATE, EINVAL, "DCI RESET->ERR");
    SVT_CHECK(svt_dc_state(dci.qp) == IBV_QPS_RESET, "DCI state %d",
              svt_dc_state(dci.qp));
    a.qp_state = IBV_QPS_INIT;
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_INIT_MASK, 0, "DCI RESET->INIT");
    /* INIT->RTR: PATH_MTU, no destination QPN */
    svt_dc_attr_fill(&dev, IBV_QPS_RTR, &a);
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_RTR_MASK | IBV_QP_DEST_QPN, EINVAL,
                  "DCI INIT->RTR with DEST_QPN");
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_STATE, EINVAL,
                  "DCI INIT->RTR without PATH_MTU");
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_RTR_MASK, 0, "DCI INIT->RTR");

    /* a WR in RTR: ibv_wr_complete fails, nothing runs */
    SVT_CHECK(svt_dci_post(&dci, &tgt, IBV_WR_RDMA_WRITE, 0, 256, 0, 0, 0,
                           1) == EINVAL, "ibv_wr_complete on a DCI in RTR "
              "did not return EINVAL");
    SVT_CHECK(ibv_poll_cq(dci.cq, 1, &wc) == 0, "a completion for a WR "
              "refused before RTS");
    svt_memset_check(dct.buf, 256, 0, "DCT memory after a refused WR");

    /* RTR->RTS: each of the five attributes is required */
    svt_dc_attr_fill(&dev, IBV_QPS_RTS, &a);
    for (i = 0; i < sizeof(rts_bits) / sizeof(rts_bits[0]); ++i) {
        SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_RTS_MASK & ~rts_bits[i], EINVAL,
                      "DCI RTR->RTS without a required attribute");
    }
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_RTS_MASK | IBV_QP_ACCESS_FLAGS, EINVAL,
                  "DCI RTR->RTS with ACCESS_FLAGS");
    SVT_DC_MODIFY(dci.qp, &a, SVT_DCI_RTS_MASK | IBV_QP_MIN_RNR_TIMER, 0,
                  "DCI RTR->RTS (MIN_RNR_TIMER optional)");
    /* no SQD; every modify changes the state; RESET takes STATE only */
    a.qp_state = IBV_QPS_SQD;
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_STATE, EINVAL, "DCI RTS->SQD");
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_MIN_RNR_TIMER, EINVAL,
                  "DCI modify without IBV_QP_STATE");
    a.qp_state = IBV_QPS_RESET;
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX, EINVAL,
                  "DCI RTS->RESET with PKEY_INDEX");
    SVT_CHECK(svt_dc_state(dci.qp) == IBV_QPS_RTS, "DCI state %d after "
              "refused modifies, expected RTS", svt_dc_state(dci.qp));

    /* both still work */
    SVT_OK(svt_dci_post(&dci, &tgt, IBV_WR_RDMA_WRITE, 0, 256, 0, 0, 0, 2));
    svt_expect_wc(dci.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 2, NULL);
    svt_pattern_check(dct.buf, 256, 31, "DCT memory");
    SVT_DC_MODIFY(dci.qp, &a, IBV_QP_STATE, 0, "DCI RTS->RESET");
    SVT_CHECK(svt_dc_state(dci.qp) == IBV_QPS_RESET, "DCI state %d",
              svt_dc_state(dci.qp));

    SVT_OK(ibv_destroy_ah(tgt.ah));
    svt_dc_ep_destroy(&dci);
    svt_dc_ep_destroy(&dct);
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_dc[] = {
    {"dc/create", svt_case_dc_create, 1},
    {"dc/create_refused", svt_case_dc_create_refused, 1},
    {"dc/modify", svt_case_dc_modify, 1},
    {NULL}
};
