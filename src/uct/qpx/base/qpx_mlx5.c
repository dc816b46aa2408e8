/*
 * The direct path (qpx_mlx5.h): its operations (a send WR as a WQE and its
 * doorbell, CQEs as work completions, receive WRs as SRQ WQEs; no
 * allocation, lock or system call; the layouts are mlx5dv.h's), and its
 * setup: an interface's CQs and SRQ, and each QP's send queue, taken from
 * mlx5dv_init_obj(3) and checked against what the operations assume:
 * 64-byte send blocks in a power-of-two ring, a power-of-two CQ of 64- or
 * 128-byte entries, an SRQ ring from head 0 whose WQE holds one data
 * segment.
 *
 * The send is inline (qpx_mlx5.inl) in the direct path's own operations,
 * which the verbs path does not share (qpx_rdma_tl_t's direct_ops); the
 * rest are functions of this file.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "qpx_iface.h"
#include "qpx_mlx5.inl"

#include <inttypes.h>
#include <stdlib.h>

#if HAVE_MLX5DV

#include <ucs/arch/bitops.h>


int qpx_mlx5_post(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr)
{
    return qpx_mlx5_post_inline(wq, wr);
}


int qpx_mlx5_post_dc(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                     const struct mlx5_wqe_av *av, uint32_t dct_num,
                     uint64_t dc_key)
{
    return qpx_mlx5_post_dc_inline(wq, wr, av, dct_num, dc_key);
}


/*
 * mlx5dv_init_obj(3) of one object: in, the verbs object of type
 * (MLX5DV_OBJ_QP, _CQ, _SRQ or _AH), described into out (its struct
 * mlx5dv_<type>); num (a QP number; 0: none) names it in the log. probe:
 * the caller is finding out whether the device has the direct path, and a
 * failure is a debug message and UCS_ERR_UNSUPPORTED; otherwise it is an
 * error (UCS_ERR_IO_ERROR).
 */
static ucs_status_t qpx_mlx5_obj_get(uint64_t type, void *in, void *out,
                                     uint32_t num, int probe)
{
    struct mlx5dv_obj obj = {};
    char id[16]           = "";
    const char *what;
    int ret;

    switch (type) {
    case MLX5DV_OBJ_QP:
        obj.qp.in   = in;
        obj.qp.out  = out;
        what        = "qp";
        break;
    case MLX5DV_OBJ_CQ:
        obj.cq.in   = in;
        obj.cq.out  = out;
        what        = "cq";
        break;
    case MLX5DV_OBJ_SRQ:
        obj.srq.in  = in;
        obj.srq.out = out;
        what        = "srq";
        break;
    default:
        ucs_assertv(type == MLX5DV_OBJ_AH, "type 0x%" PRIx64, type);
        obj.ah.in   = in;
        obj.ah.out  = out;
        what        = "ah";
        break;
    }

    ret = mlx5dv_init_obj(&obj, type);
    if (ret == 0) {
        return UCS_OK;
    }
    if (num != 0) {
        ucs_snprintf_zero(id, sizeof(id), " 0x%x", num);
    }
    if (probe) {
        ucs_debug("mlx5dv_init_obj(%s%s) failed: %s", what, id,
                  strerror(ret));
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_error("mlx5dv_init_obj(%s%s) failed: %s", what, id, strerror(ret));
    return UCS_ERR_IO_ERROR;
}


ucs_status_t qpx_mlx5_ah_av(struct ibv_ah *ah, const struct mlx5_wqe_av **av_p)
{
    struct mlx5dv_ah dv = {};
    ucs_status_t status;

    status = qpx_mlx5_obj_get(MLX5DV_OBJ_AH, ah, &dv, 0, 0);
    if (status != UCS_OK) {
        return status;
    }
    *av_p = dv.av;
    return UCS_OK;
}


static UCS_F_ALWAYS_INLINE enum ibv_wc_status qpx_mlx5_status(uint8_t synd)
{
    switch (synd) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:        return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:         return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:          return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:            return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:             return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:            return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:        return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:    return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:       return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:           return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:       return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:      return IBV_WC_REM_ABORT_ERR;
    default:                                        return IBV_WC_GENERAL_ERR;
    }
}


/* A send completion's opcode from the opcode of its WQE, which the CQE
 * carries (libmlx5's handle_good_req) */
static enum ibv_wc_opcode qpx_mlx5_wc_opcode(uint8_t wqe_opcode)
{
    switch (wqe_opcode) {
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM: return IBV_WC_RDMA_WRITE;
    case MLX5_OPCODE_RDMA_READ:      return IBV_WC_RDMA_READ;
    case MLX5_OPCODE_ATOMIC_CS:      return IBV_WC_COMP_SWAP;
    case MLX5_OPCODE_ATOMIC_FA:      return IBV_WC_FETCH_ADD;
    default:                         return IBV_WC_SEND;
    }
}


/* The send WQE a CQE names (its QP's queue, its first block) into wc;
 * 0 when the QP is not (or no longer) the interface's */
static UCS_F_ALWAYS_INLINE int qpx_mlx5_wc_tx(qpx_iface_t *iface, uint32_t qpn,
                                              uint16_t wqe_counter,
                                              struct ibv_wc *wc)
{
    khash_t(qpx_qp_map) *map = iface->direct.qps;
    qpx_mlx5_txwq_t *wq;
    khiter_t it;

    it = kh_get(qpx_qp_map, map, qpn);
    if (ucs_unlikely(it == kh_end(map))) {
        ucs_debug("qpx: completion of unknown qp 0x%x dropped", qpn);
        return 0;
    }
    wq            = kh_value(map, it);
    wc->wr_id     = wq->wrid[wqe_counter & wq->mask];
    return 1;
}


/* An SRQ WQE's next segment */
static UCS_F_ALWAYS_INLINE struct mlx5_wqe_srq_next_seg *
qpx_mlx5_rxq_next(qpx_mlx5_rxq_t *rxq, uint16_t idx)
{
    return (void*)(rxq->buf + (size_t)idx * rxq->stride);
}


/* The receive WQE a CQE consumed: the next in order on a QP's own queue;
 * on an SRQ the one it names, free again: linked behind the last free one
 * (never posted, so the device has not passed it), where the next posts
 * take it in turn (mlx5_free_srq_wqe) */
static UCS_F_ALWAYS_INLINE uint16_t qpx_mlx5_rxq_done(qpx_mlx5_rxq_t *rxq,
                                                      uint16_t wqe_counter)
{
    uint16_t idx;

    if (rxq->in_order) {
        return rxq->ci++ & rxq->tail;
    }
    idx = wqe_counter & rxq->tail;
    qpx_mlx5_rxq_next(rxq, rxq->free_tail)->next_wqe_index = htobe16(idx);
    rxq->free_tail = idx;
    return idx;
}


/*
 * Up to max completions of cq into wc: an entry is the software's when its
 * owner bit is the parity of the pass (then a load fence: its body after
 * its op_own), and the consumer index goes to the doorbell record (the
 * device must not overrun what was not read).
 */
int qpx_mlx5_poll(qpx_iface_t *iface, qpx_mlx5_cq_t *cq, int max,
                  struct ibv_wc *wc)
{
    struct mlx5_cqe64 *cqe;
    struct mlx5_err_cqe *err;
    uint32_t start = cq->ci;
    uint8_t op_own, opcode;
    uint16_t idx;
    int n = 0;

    while (n < max) {
        cqe    = (void*)(cq->buf + (size_t)(cq->ci & cq->mask) * cq->stride +
                         cq->stride - sizeof(*cqe));
        op_own = *(volatile uint8_t*)&cqe->op_own;
        opcode = op_own >> 4;
        if (((op_own & MLX5_CQE_OWNER_MASK) != ((cq->ci >> cq->log_cnt) & 1)) ||
            (opcode == MLX5_CQE_INVALID)) {
            break;
        }
        /* the body was written before op_own: read it after */
        qpx_mlx5_rmb();
        ++cq->ci;
        memset(&wc[n], 0, sizeof(wc[n]));
        switch (opcode) {
        case MLX5_CQE_REQ:
            wc[n].qp_num   = be32toh(cqe->sop_drop_qpn) & 0xffffff;
            wc[n].opcode   = qpx_mlx5_wc_opcode(be32toh(cqe->sop_drop_qpn) >>
                                                24);
            wc[n].byte_len = be32toh(cqe->byte_cnt);
            if (!qpx_mlx5_wc_tx(iface, wc[n].qp_num, be16toh(cqe->wqe_counter),
                                &wc[n])) {
                continue;
            }
            break;
        case MLX5_CQE_RESP_SEND:
        case MLX5_CQE_RESP_SEND_IMM:
        case MLX5_CQE_RESP_WR_IMM:
            idx              = qpx_mlx5_rxq_done(iface->direct.rx,
                                                  be16toh(cqe->wqe_counter));
            wc[n].wr_id      = iface->direct.rx->wrid[idx];
            wc[n].opcode     = (opcode == MLX5_CQE_RESP_WR_IMM) ?
                               IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
            wc[n].byte_len   = be32toh(cqe->byte_cnt);
            wc[n].qp_num     = be32toh(cqe->sop_drop_qpn) & 0xffffff;
            wc[n].src_qp     = be32toh(cqe->flags_rqpn) & 0xffffff;
            wc[n].slid       = be16toh(cqe->slid);
            /* the "g" bits: a GRH starts the buffer (a UD receive) */
            if ((be32toh(cqe->flags_rqpn) >> 28) & 3) {
                wc[n].wc_flags |= IBV_WC_GRH;
            }
            if (opcode != MLX5_CQE_RESP_SEND) {
                wc[n].imm_data  = cqe->imm_inval_pkey;
                wc[n].wc_flags |= IBV_WC_WITH_IMM;
            }
            break;
        case MLX5_CQE_REQ_ERR:
        case MLX5_CQE_RESP_ERR:
            err               = (void*)cqe;
            wc[n].status      = qpx_mlx5_status(err->syndrome);
            wc[n].vendor_err  = err->vendor_err_synd;
            wc[n].qp_num      = be32toh(err->s_wqe_opcode_qpn) & 0xffffff;
            if (opcode == MLX5_CQE_RESP_ERR) {
                idx          = qpx_mlx5_rxq_done(iface->direct.rx,
                                                  be16toh(err->wqe_counter));
                wc[n].wr_id  = iface->direct.rx->wrid[idx];
                wc[n].opcode = IBV_WC_RECV;
            } else if (!qpx_mlx5_wc_tx(iface, wc[n].qp_num,
                                       be16toh(err->wqe_counter), &wc[n])) {
                continue;
            }
            break;
        default:
            ucs_error("qpx: cq 0x%x: CQE opcode %u not expected", cq->cqn,
                      opcode);
            continue;
        }
        ++n;
    }
    if (cq->ci != start) {
        qpx_mlx5_cq_next_set(cq);
        /* the entries read are the device's again */
        cq->dbrec[0] = htobe32(cq->ci & 0xffffff);
    }
    return n;
}


/* The receive WRs from head as receive WQEs, in index order on a QP's own
 * queue, from the free list's head on an SRQ (its last free WQE kept), each
 * behind the terminating segment libmlx5 writes where a WQE has room for
 * more than one; the counter after a store fence (the WQEs, and the links
 * of completed ones, before it). Returns how many. */
unsigned qpx_mlx5_rxq_post(qpx_mlx5_rxq_t *rxq, struct ibv_recv_wr *head,
                           struct ibv_recv_wr **bad_wr)
{
    struct mlx5_wqe_data_seg *dseg;
    struct ibv_recv_wr *wr;
    uint16_t idx;
    unsigned n = 0;

    for (wr = head; wr != NULL; wr = wr->next) {
        if (rxq->in_order) {
            idx = rxq->counter & rxq->tail;
        } else if (ucs_unlikely(rxq->free_head == rxq->free_tail)) {
            break;
        } else {
            idx            = rxq->free_head;
            rxq->free_head = be16toh(qpx_mlx5_rxq_next(rxq, idx)->next_wqe_index) &
                             rxq->tail;
        }
        dseg             = (void*)(rxq->buf + (size_t)idx * rxq->stride +
                                   rxq->dseg_off);
        dseg->byte_count = htobe32(wr->sg_list[0].length);
        dseg->lkey       = htobe32(wr->sg_list[0].lkey);
        dseg->addr       = htobe64(wr->sg_list[0].addr);
        if (rxq->dseg_off + 2 * sizeof(*dseg) <= rxq->stride) {
            dseg[1].byte_count = 0;
            dseg[1].lkey       = htobe32(MLX5_INVALID_LKEY);
            dseg[1].addr       = 0;
        }
        rxq->wrid[idx]   = wr->wr_id;
        ++rxq->counter;
        ++n;
    }
    *bad_wr = wr;
    /* the WQEs before the counter that covers them */
    qpx_mlx5_wmb();
    *rxq->dbrec = htobe32(rxq->counter);
    return n;
}


static ucs_status_t qpx_mlx5_cq_init(struct ibv_cq *ibcq, qpx_mlx5_cq_t *cq)
{
    struct mlx5dv_cq dv = {};
    ucs_status_t status;

    status = qpx_mlx5_obj_get(MLX5DV_OBJ_CQ, ibcq, &dv, 0, 1);
    if (status != UCS_OK) {
        return status;
    }
    if ((dv.cqe_cnt == 0) || !ucs_is_pow2(dv.cqe_cnt) ||
        ((dv.cqe_size != 64) && (dv.cqe_size != 128))) {
        ucs_debug("cq 0x%x: %u entries of %u bytes: not for the direct path",
                  dv.cqn, dv.cqe_cnt, dv.cqe_size);
        return UCS_ERR_UNSUPPORTED;
    }
    cq->buf     = dv.buf;
    cq->mask    = dv.cqe_cnt - 1;
    cq->stride  = dv.cqe_size;
    cq->log_cnt = ucs_ilog2(dv.cqe_cnt);
    cq->ci      = 0;
    qpx_mlx5_cq_next_set(cq);
    cq->dbrec   = dv.dbrec;
    cq->uar     = dv.cq_uar;
    cq->cqn     = dv.cqn;
    cq->sn      = 0;
    return UCS_OK;
}


static ucs_status_t qpx_mlx5_rxq_set(qpx_mlx5_rxq_t *rxq, void *buf,
                                     uint32_t cnt, unsigned stride,
                                     volatile uint32_t *dbrec, int in_order)
{
    rxq->wrid = calloc(cnt, sizeof(*rxq->wrid));
    if (rxq->wrid == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    rxq->buf      = buf;
    rxq->tail     = (uint16_t)(cnt - 1);
    rxq->stride   = stride;
    rxq->dbrec    = dbrec;
    rxq->counter  = 0;
    rxq->ci       = 0;
    /* mlx5_create_srq links the WQEs from head 0 to tail cnt - 1 */
    rxq->free_head = 0;
    rxq->free_tail = (uint16_t)(cnt - 1);
    rxq->in_order = in_order;
    rxq->dseg_off = in_order ? 0 : sizeof(struct mlx5_wqe_srq_next_seg);
    return UCS_OK;
}


static ucs_status_t qpx_mlx5_srq_init(struct ibv_srq *ibsrq,
                                      qpx_mlx5_rxq_t *rxq)
{
    struct mlx5dv_srq dv = {};
    ucs_status_t status;

    status = qpx_mlx5_obj_get(MLX5DV_OBJ_SRQ, ibsrq, &dv, 0, 1);
    if (status != UCS_OK) {
        return status;
    }
    if ((dv.head != 0) || !ucs_is_pow2(dv.tail + 1) || (dv.tail > UINT16_MAX) ||
        (dv.stride < sizeof(struct mlx5_wqe_srq_next_seg) +
                     sizeof(struct mlx5_wqe_data_seg))) {
        ucs_debug("srq head %u tail %u stride %u: not for the direct path",
                  dv.head, dv.tail, dv.stride);
        return UCS_ERR_UNSUPPORTED;
    }
    return qpx_mlx5_rxq_set(rxq, dv.buf, dv.tail + 1, dv.stride, dv.dbrec, 0);
}


/* A QP's own receive queue (a UD QP without an SRQ), from its creation:
 * empty, its record at 0 */
static ucs_status_t qpx_mlx5_rq_init(struct ibv_qp *qp, qpx_mlx5_rxq_t *rxq)
{
    struct mlx5dv_qp dv = {};
    ucs_status_t status;

    status = qpx_mlx5_obj_get(MLX5DV_OBJ_QP, qp, &dv, qp->qp_num, 1);
    if (status != UCS_OK) {
        return status;
    }
    if ((dv.rq.wqe_cnt == 0) || !ucs_is_pow2(dv.rq.wqe_cnt) ||
        (dv.rq.wqe_cnt > UINT16_MAX + 1) ||
        (dv.rq.stride < sizeof(struct mlx5_wqe_data_seg))) {
        ucs_debug("qp 0x%x: receive queue of %u WQEs of %u bytes: not for the "
                  "direct path", qp->qp_num, dv.rq.wqe_cnt, dv.rq.stride);
        return UCS_ERR_UNSUPPORTED;
    }
    return qpx_mlx5_rxq_set(rxq, dv.rq.buf, dv.rq.wqe_cnt, dv.rq.stride,
                            &dv.dbrec[MLX5_RCV_DBR], 1);
}


ucs_status_t qpx_mlx5_iface_init(qpx_iface_t *iface, struct ibv_qp *rq_qp)
{
    ucs_on_off_auto_value_t mode = iface->config.direct;
    qpx_mlx5_iface_t *d          = &iface->direct;
    const char *why              = "the device has no mlx5 queues for it";
    khash_t(qpx_qp_map) *map;
    ucs_status_t status;

    memset(d, 0, sizeof(*d));
    if (mode == UCS_CONFIG_OFF) {
        ucs_debug("%s iface %p: verbs path (DIRECT=off)",
                  iface->config.tl_name, iface);
        return UCS_OK;
    }
    status = UCS_ERR_UNSUPPORTED;
    if (!mlx5dv_is_supported(iface->md->dev.ctx->device) ||
        ((iface->srq == NULL) && (rq_qp == NULL))) {
        goto out_unsupported;
    }
    if ((iface->rx_owner != NULL) && !iface->rx_owner->direct.enabled) {
        /* the owner posts into the SRQ through libmlx5's index */
        why = "the interface whose SRQ it shares is on the verbs path";
        goto out_unsupported;
    }
    status = qpx_mlx5_cq_init(iface->send_cq, &d->cq[QPX_MLX5_CQ_TX]);
    if (status == UCS_OK) {
        status = qpx_mlx5_cq_init(iface->recv_cq, &d->cq[QPX_MLX5_CQ_RX]);
    }
    if (status != UCS_OK) {
        goto out_unsupported;
    }
    if (iface->rx_owner != NULL) {
        /* the owner's ring, free list and WR ids: it outlives this
         * interface */
        d->rx = iface->rx_owner->direct.rx;
    } else {
        status = (iface->srq != NULL) ? qpx_mlx5_srq_init(iface->srq, &d->rxq) :
                                        qpx_mlx5_rq_init(rq_qp, &d->rxq);
        if (status != UCS_OK) {
            goto out_unsupported;
        }
        d->rx = &d->rxq;
    }
    map = malloc(sizeof(*map));
    if (map == NULL) {
        free(d->rxq.wrid);
        return UCS_ERR_NO_MEMORY;
    }
    kh_init_inplace(qpx_qp_map, map);
    d->qps     = map;
    d->enabled = 1;
    ucs_debug("%s iface %p: direct path (mlx5 queues%s)",
              iface->config.tl_name, iface,
              (iface->rx_owner != NULL) ? ", a shared SRQ" : "");
    return UCS_OK;

out_unsupported:
    if (status == UCS_ERR_NO_MEMORY) {
        why = "no memory";
    }
    if (mode == UCS_CONFIG_ON) {
        ucs_error("%s: DIRECT=on, but on %s %s", iface->config.tl_name,
                  iface->md->dev.name, why);
        return (status == UCS_ERR_NO_MEMORY) ? status : UCS_ERR_UNSUPPORTED;
    }
    memset(d, 0, sizeof(*d));
    ucs_debug("%s iface %p: verbs path (%s)", iface->config.tl_name, iface,
              why);
    return (status == UCS_ERR_NO_MEMORY) ? status : UCS_OK;
}


void qpx_mlx5_iface_cleanup(qpx_iface_t *iface)
{
    qpx_mlx5_iface_t *d = &iface->direct;

    if (!d->enabled) {
        return;
    }
    kh_destroy_inplace(qpx_qp_map, (khash_t(qpx_qp_map)*)d->qps);
    free(d->qps);
    free(d->rxq.wrid);
    memset(d, 0, sizeof(*d));
}


ucs_status_t qpx_mlx5_txwq_init(qpx_iface_t *iface, struct ibv_qp *qp,
                                qpx_mlx5_txwq_t *wq)
{
    khash_t(qpx_qp_map) *map = iface->direct.qps;
    struct ibv_qp_init_attr init_attr;
    struct mlx5dv_qp dv = {};
    struct ibv_qp_attr attr;
    ucs_status_t status;
    unsigned per_wr;
    size_t overhead;
    khiter_t it;
    int ret;

    status = qpx_mlx5_obj_get(MLX5DV_OBJ_QP, qp, &dv, qp->qp_num, 0);
    if (status != UCS_OK) {
        return status;
    }
    if (ibv_query_qp(qp, &attr, IBV_QP_CAP, &init_attr) != 0) {
        ucs_error("ibv_query_qp(qp 0x%x) failed: %m", qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }
    /* a WQE may take the room of one WR: blocks / max_send_wr, at most what
     * the fast path builds */
    per_wr = dv.sq.wqe_cnt / ucs_max(attr.cap.max_send_wr, 1);
    if ((dv.sq.stride != MLX5_SEND_WQE_BB) || (dv.sq.wqe_cnt == 0) ||
        !ucs_is_pow2(dv.sq.wqe_cnt) || (per_wr == 0)) {
        ucs_error("qp 0x%x: send queue of %u blocks of %u bytes for %u WRs: "
                  "not for the direct path", qp->qp_num, dv.sq.wqe_cnt,
                  dv.sq.stride, attr.cap.max_send_wr);
        return UCS_ERR_IO_ERROR;
    }
    /* the direct operations write inline data up to the QP's
     * max_inline_data unchecked (their callers hold them to it): it must
     * fit one WQE after the segments it goes with (a remote address but on
     * UD, a datagram segment but on RC) */
    overhead = sizeof(struct mlx5_wqe_ctrl_seg) +
               ((qp->qp_type == IBV_QPT_RC) ? 0 : sizeof(struct mlx5_wqe_av)) +
               ((qp->qp_type == IBV_QPT_UD) ? 0 :
                sizeof(struct mlx5_wqe_raddr_seg));
    if ((overhead + ucs_align_up(sizeof(uint32_t) + attr.cap.max_inline_data,
                                 16)) >
        ucs_min((size_t)per_wr * MLX5_SEND_WQE_BB, (size_t)QPX_MLX5_MAX_WQE)) {
        ucs_error("qp 0x%x: %u inline bytes do not fit a WQE of %u blocks: "
                  "not for the direct path", qp->qp_num,
                  attr.cap.max_inline_data, per_wr);
        return UCS_ERR_IO_ERROR;
    }
    wq->wrid = calloc(dv.sq.wqe_cnt, sizeof(*wq->wrid));
    if (wq->wrid == NULL) {
        goto err_free;
    }
    wq->qstart  = dv.sq.buf;
    wq->qend    = (char*)dv.sq.buf + (size_t)dv.sq.wqe_cnt * MLX5_SEND_WQE_BB;
    wq->mask    = (uint16_t)(dv.sq.wqe_cnt - 1);
    wq->qpn     = qp->qp_num;
    wq->dbrec   = &dv.dbrec[MLX5_SND_DBR];
    wq->reg     = dv.bf.reg;
    wq->max_wqe = ucs_min((size_t)per_wr * MLX5_SEND_WQE_BB,
                          (size_t)QPX_MLX5_MAX_WQE);
    wq->inplace_max = (size_t)(wq->qend - wq->qstart) - wq->max_wqe;
    /* a QP from RESET starts at block 0: libmlx5 zeroed the record */
    wq->pi      = 0;

    it = kh_put(qpx_qp_map, map, qp->qp_num, &ret);
    if (ret < 0) {
        goto err_free;
    }
    kh_value(map, it) = wq;
    return UCS_OK;

err_free:
    free(wq->wrid);
    memset(wq, 0, sizeof(*wq));
    return UCS_ERR_NO_MEMORY;
}


/*
 * The CQEs of QP qpn that cq holds unread are taken out of its life, as
 * libmlx5 takes them out at the QP's RESET or destruction (mlx5_cq_clean),
 * by its own consumer index, which the direct path does not move: it is
 * done here. A send CQE is renamed to QP 0, which no interface has, so
 * that qpx_mlx5_poll skips it; a receive CQE becomes a flushed one (its
 * buffer goes back to the receive queue, its data is not delivered: a
 * reused QP must not deliver its former peer's messages, libmlx5 gives
 * the WQE back to the SRQ instead). A device writes no CQE of a QP after
 * its RESET, so none comes after this.
 */
static void qpx_mlx5_cq_clean(qpx_mlx5_cq_t *cq, uint32_t qpn)
{
    struct mlx5_err_cqe *err;
    struct mlx5_cqe64 *cqe;
    volatile uint32_t *word;
    uint8_t op_own, opcode;
    uint32_t i, dropped = 0;

    /* a receive CQE is rewritten as an error CQE in place: the QP number
     * and WQE counter are at the same offsets in both */
    UCS_STATIC_ASSERT(ucs_offsetof(struct mlx5_err_cqe, s_wqe_opcode_qpn) ==
                      ucs_offsetof(struct mlx5_cqe64, sop_drop_qpn));
    UCS_STATIC_ASSERT(ucs_offsetof(struct mlx5_err_cqe, wqe_counter) ==
                      ucs_offsetof(struct mlx5_cqe64, wqe_counter));
    for (i = cq->ci; i != cq->ci + cq->mask + 1; ++i) {
        cqe    = (void*)(cq->buf + (size_t)(i & cq->mask) * cq->stride +
                         cq->stride - sizeof(*cqe));
        op_own = *(volatile uint8_t*)&cqe->op_own;
        opcode = op_own >> 4;
        if (((op_own & MLX5_CQE_OWNER_MASK) != ((i >> cq->log_cnt) & 1)) ||
            (opcode == MLX5_CQE_INVALID)) {
            break;
        }
        /* the body after its op_own, as the poll reads it */
        qpx_mlx5_rmb();
        err  = (void*)cqe;
        word = ((opcode == MLX5_CQE_REQ_ERR) ||
                (opcode == MLX5_CQE_RESP_ERR)) ? &err->s_wqe_opcode_qpn :
                                                 &cqe->sop_drop_qpn;
        if ((be32toh(*word) & 0xffffff) != qpn) {
            continue;
        }
        ++dropped;
        if ((opcode == MLX5_CQE_RESP_SEND) ||
            (opcode == MLX5_CQE_RESP_SEND_IMM) ||
            (opcode == MLX5_CQE_RESP_WR_IMM)) {
            err->syndrome        = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
            err->vendor_err_synd = 0;
            cqe->op_own          = (uint8_t)((MLX5_CQE_RESP_ERR << 4) |
                                             (op_own & 0x0f));
        } else if (opcode != MLX5_CQE_RESP_ERR) {
            *word = htobe32(be32toh(*word) & 0xff000000u);
        }
    }
    if (dropped > 0) {
        ucs_debug("cq 0x%x: %u completions of reset qp 0x%x dropped", cq->cqn,
                  dropped, qpn);
    }
}


void qpx_mlx5_qp_clean(qpx_iface_t *iface, uint32_t qpn)
{
    qpx_mlx5_cq_clean(&iface->direct.cq[QPX_MLX5_CQ_TX], qpn);
    qpx_mlx5_cq_clean(&iface->direct.cq[QPX_MLX5_CQ_RX], qpn);
}


void qpx_mlx5_txwq_reset(qpx_iface_t *iface, qpx_mlx5_txwq_t *wq)
{
    if (wq->qstart == NULL) {
        return; /* the verbs path: libmlx5 cleaned the CQ */
    }
    /* a QP from RESET starts at block 0: libmlx5 zeroed the record */
    wq->pi = 0;
    qpx_mlx5_qp_clean(iface, wq->qpn);
}


void qpx_mlx5_txwq_cleanup(qpx_iface_t *iface, qpx_mlx5_txwq_t *wq)
{
    khash_t(qpx_qp_map) *map = iface->direct.qps;
    khiter_t it;

    if (wq->qstart == NULL) {
        return;
    }
    /* the map goes with the interface's direct state (a DCI's queue may
     * be released after it) */
    if (map != NULL) {
        it = kh_get(qpx_qp_map, map, wq->qpn);
        if (it != kh_end(map)) {
            kh_del(qpx_qp_map, map, it);
        }
    }
    free(wq->wrid);
    memset(wq, 0, sizeof(*wq));
}


/*
 * Arm (uct_ib_mlx5dv_arm_cq's shape, the PRM's CQ doorbell): the arm word
 * (sequence, command, consumer index) into the record, then, after a
 * barrier, the same word and the CQ number to the CQ doorbell register.
 */
void qpx_mlx5_cq_arm(qpx_mlx5_cq_t *cq, int solicited_only)
{
    uint32_t word = ((cq->sn & 3) << 28) |
                    (solicited_only ? MLX5_CQ_DB_REQ_NOT_SOL :
                                      MLX5_CQ_DB_REQ_NOT) |
                    (cq->ci & 0xffffff);

    cq->dbrec[1] = htobe32(word);
    qpx_mlx5_wmb();
    *(volatile uint64_t*)((char*)cq->uar + MLX5_CQ_DOORBELL) =
            htobe64(((uint64_t)word << 32) | cq->cqn);
    qpx_mlx5_mmio_flush();
}

#else /* !HAVE_MLX5DV */

ucs_status_t qpx_mlx5_iface_init(qpx_iface_t *iface, struct ibv_qp *rq_qp)
{
    memset(&iface->direct, 0, sizeof(iface->direct));
    if (iface->config.direct == UCS_CONFIG_ON) {
        ucs_error("%s: DIRECT=on, but qpx was built without mlx5dv.h",
                  iface->config.tl_name);
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}

void qpx_mlx5_iface_cleanup(qpx_iface_t *iface)
{
}

ucs_status_t qpx_mlx5_txwq_init(qpx_iface_t *iface, struct ibv_qp *qp,
                                qpx_mlx5_txwq_t *wq)
{
    return UCS_ERR_UNSUPPORTED;
}

void qpx_mlx5_txwq_cleanup(qpx_iface_t *iface, qpx_mlx5_txwq_t *wq)
{
}

void qpx_mlx5_txwq_reset(qpx_iface_t *iface, qpx_mlx5_txwq_t *wq)
{
}

void qpx_mlx5_qp_clean(qpx_iface_t *iface, uint32_t qpn)
{
}

void qpx_mlx5_cq_arm(qpx_mlx5_cq_t *cq, int solicited_only)
{
}

int qpx_mlx5_post(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr)
{
    return EOPNOTSUPP;
}

int qpx_mlx5_post_dc(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                     const struct mlx5_wqe_av *av, uint32_t dct_num,
                     uint64_t dc_key)
{
    return EOPNOTSUPP;
}

ucs_status_t qpx_mlx5_ah_av(struct ibv_ah *ah, const struct mlx5_wqe_av **av_p)
{
    return UCS_ERR_UNSUPPORTED;
}

int qpx_mlx5_poll(qpx_iface_t *iface, qpx_mlx5_cq_t *cq, int max,
                  struct ibv_wc *wc)
{
    return 0;
}

unsigned qpx_mlx5_rxq_post(qpx_mlx5_rxq_t *rxq, struct ibv_recv_wr *head,
                           struct ibv_recv_wr **bad_wr)
{
    *bad_wr = head;
    return 0;
}

#endif
