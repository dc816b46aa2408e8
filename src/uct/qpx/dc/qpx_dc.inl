/*
 * qpx_dc fast path: the DCI an operation goes on, its resources, and the
 * post: a WQE with its datagram segment in the DCI's mlx5 send queue on
 * the direct path, else through the ibv_wr_* API with the target set by
 * mlx5dv_wr_set_dc_addr. No allocation, lock or system call here beyond
 * the verbs post itself.
 */
#ifndef QPX_DC_INL_
#define QPX_DC_INL_

#include "qpx_dc_iface.h"

#include <uct/qpx/base/qpx_mlx5.inl>

#include <string.h>


static UCS_F_ALWAYS_INLINE qpx_dc_iface_t *qpx_dc_ep_iface(qpx_dc_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, qpx_dc_iface_t);
}


/* dci's life is gen: its requests' WR ids carry it (and its index) */
static UCS_F_ALWAYS_INLINE void qpx_dc_dci_gen_set(qpx_dc_dci_t *dci,
                                                   uint16_t gen)
{
    dci->gen        = gen;
    dci->wr_id_base = ((uint64_t)dci->index << QPX_DC_DCI_SHIFT) |
                      ((uint64_t)gen << QPX_DC_GEN_SHIFT);
}


static UCS_F_ALWAYS_INLINE uint64_t qpx_dc_dci_wr_id(qpx_dc_dci_t *dci,
                                                    uint64_t sn)
{
    ucs_assert(dci->wr_id_base ==
               (((uint64_t)dci->index << QPX_DC_DCI_SHIFT) |
                ((uint64_t)dci->gen << QPX_DC_GEN_SHIFT)));
    return dci->wr_id_base | (sn & QPX_DC_SN_MASK);
}


/* Room on dci for one more user request: a send slot beyond the reserve, a
 * send CQ entry, and (dcs_quota) the quota while others wait for a DCI */
static UCS_F_ALWAYS_INLINE int
qpx_dc_dci_has_tx_resources(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci)
{
    return (dci->sq_available > QPX_DC_SQ_RESERVE) &&
           (iface->super.super.tx.cq_available > 0) && !dci->flags &&
           ((iface->config.policy != QPX_DC_POLICY_DCS_QUOTA) ||
            (dci->quota_used < iface->config.quota) ||
            ucs_list_is_empty(&iface->tx_wait));
}


/*
 * The DCI for a new request of ep, taken under the policy if ep holds none.
 * A failed endpoint answers with its error; no DCI or no room on it:
 * UCS_ERR_NO_RESOURCE (the caller's pending request waits in tx_wait, see
 * qpx_dc_ep_tx_state).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_ep_tx_begin(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                   qpx_dc_dci_t **dci_p)
{
    qpx_dc_dci_t *dci;

    if (ucs_unlikely(ep->flags & QPX_DC_EP_FLAG_ERROR)) {
        return ep->status;
    }
    /* Nothing of ep's queued before it (as qpx_rc_ep_can_send) */
    if (ucs_unlikely(!qpx_ep_pending_is_clear(&iface->super.super,
                                              &ep->super))) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_unlikely(ep->dci == QPX_DC_DCI_NONE) &&
        (qpx_dc_iface_dci_get(iface, ep) != UCS_OK)) {
        return UCS_ERR_NO_RESOURCE;
    }

    ucs_assertv(ep->dci < iface->num_dci, "ep %p dci %u of %u", ep,
                (unsigned)ep->dci, iface->num_dci);
    dci = &iface->dcis[ep->dci];
    if (ucs_unlikely(!qpx_dc_dci_has_tx_resources(iface, dci))) {
        return UCS_ERR_NO_RESOURCE;
    }
    *dci_p = dci;
    return UCS_OK;
}


/*
 * The flags of ep's next request on dci: send_flags, its fence, and
 * IBV_SEND_SIGNALED. signal: the caller needs a completion; it is
 * signalled anyway when tx_moderation unsignalled ones precede it. The
 * caller posts it (qpx_dc_dci_post_path) and counts it
 * (qpx_dc_dci_wr_posted).
 */
static UCS_F_ALWAYS_INLINE unsigned
qpx_dc_dci_wr_flags(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep, qpx_dc_dci_t *dci,
                    unsigned send_flags, int signal)
{
    /* Signalled too while endpoints wait for a DCI: a DCI is known idle,
     * and given back, only once its last request's completion is polled.
     * Unsignalled, an owner that keeps posting (UCP's replies to a peer's
     * software atomics, each before the last one is known done) kept its
     * DCI for good: 4 ranks of MPI_Accumulate on one DCI took 5 to over
     * 100 s, spinning in the waiters' solicitations (0.04 s on spread) */
    ucs_assertv(dci->sq_available > 0, "dci 0x%x sq_available %d",
                dci->qp->qp_num, (int)dci->sq_available);
    /* A DCI serves one endpoint at a time under dcs/dcs_quota/sticky, and
     * only an endpoint that holds it posts on it */
    ucs_assert(&iface->dcis[ep->dci] == dci);
    signal |= (dci->unsignaled + 1 >= iface->super.super.config.tx_moderation) |
              (iface->num_dci_waiters > 0);
    ucs_assert(!signal || (iface->super.super.tx.cq_available > 0));
    /* An interface fence since ep's last post fences this one too */
    return send_flags | ep->fence |
           ((ep->fence_beat != iface->super.fence_beat) ? IBV_SEND_FENCE : 0) |
           (signal ? IBV_SEND_SIGNALED : 0);
}


/*
 * Post rwr on dci as request wr_id with send_flags (qpx_dc_dci_wr_flags),
 * to DCT dct_num behind ah (av: ah's address vector, on the direct path),
 * on the path direct names (QPX_RDMA_PATH_VERBS, or _ANY for a caller that
 * does not know it; a constant of the caller): a WQE in the DCI's mlx5 send
 * queue through qpx_mlx5_post_dc (a control post: out of line), or a
 * request through the ibv_wr_* API. The direct data operations write their
 * WQEs in qpx_dc_dci_post_wr. 0 or an errno.
 */
static UCS_F_ALWAYS_INLINE int
qpx_dc_dci_post_path(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci,
                     struct ibv_ah *ah, const struct mlx5_wqe_av *av,
                     uint32_t dct_num, const qpx_rdma_wr_t *rwr,
                     uint64_t wr_id, unsigned send_flags, int direct)
{
    struct ibv_data_buf buf[QPX_RDMA_INLINE_SGE_MAX];
    struct ibv_send_wr wr;
    int i;

    ucs_assert(direct != QPX_RDMA_PATH_DIRECT);
    if ((direct == QPX_RDMA_PATH_ANY) &&
        ucs_unlikely(dci->txwq.qstart != NULL)) {
        qpx_rdma_wr_to_send_wr(rwr, &wr, 1);
        wr.wr_id      = wr_id;
        wr.send_flags = send_flags;
        return qpx_mlx5_post_dc(&dci->txwq, &wr, av, dct_num,
                                iface->config.dc_key);
    }

    ucs_assert(dci->txwq.qstart == NULL);
    ibv_wr_start(dci->qpx);
    dci->qpx->wr_id    = wr_id;
    dci->qpx->wr_flags = send_flags;
    switch (rwr->opcode) {
    case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(dci->qpx, rwr->rkey, rwr->remote_addr);
        break;
    case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(dci->qpx, rwr->rkey, rwr->remote_addr);
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(dci->qpx, rwr->rkey, rwr->remote_addr,
                                rwr->compare_add);
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(dci->qpx, rwr->rkey, rwr->remote_addr,
                              rwr->compare_add, rwr->swap);
        break;
    default:
        ucs_assertv(rwr->opcode == IBV_WR_SEND, "opcode %d", rwr->opcode);
        ibv_wr_send(dci->qpx);
        break;
    }
    if (rwr->send_flags & IBV_SEND_INLINE) {
        /* Copied by the post: the buffers may go after it */
        ucs_assertv(rwr->num_sge <= QPX_RDMA_INLINE_SGE_MAX, "num_sge %d",
                    rwr->num_sge);
        for (i = 0; i < rwr->num_sge; ++i) {
            buf[i].addr   = (void*)(uintptr_t)rwr->sge[i].addr;
            buf[i].length = rwr->sge[i].length;
        }
        ibv_wr_set_inline_data_list(dci->qpx, rwr->num_sge, buf);
    } else {
        ibv_wr_set_sge_list(dci->qpx, rwr->num_sge, rwr->sge);
    }
    mlx5dv_wr_set_dc_addr(dci->mqp, ah, dct_num, iface->config.dc_key);
    return ibv_wr_complete(dci->qpx);
}


/* Count the request of ep just posted on dci (signalled or not) */
static UCS_F_ALWAYS_INLINE void
qpx_dc_dci_wr_posted(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                     qpx_dc_dci_t *dci, int signal)
{
    ++dci->sn;
    ++ep->posts;
    ep->last_sn    = dci->sn;
    ep->fence      = 0;
    ep->fence_beat = iface->super.fence_beat;
    --dci->sq_available;
    ++dci->quota_used;
    ++iface->super.tx_unacked;
    dci->last_used = ++iface->tick;
    if (dci->target_id != ep->id) {
        iface->target_switches += (dci->target_id != QPX_EP_ID_NULL);
        dci->target_id          = ep->id;
        dci->target_ah          = ep->ah;
        dci->target_av          = ep->av;
        dci->target_dct         = ep->dct_num;
    }
    if (signal) {
        dci->unsignaled  = 0;
        dci->signaled_sn = dci->sn;
        --iface->super.super.tx.cq_available;
    } else {
        ++dci->unsignaled;
    }
}


/*
 * One request of ep on dci, rwr, on the path direct names: its flags
 * (qpx_dc_dci_wr_flags), the post, its count. On the direct path the WQE's
 * body is written first, its flags and id after (qpx_rc_ep_post_path).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_dci_post_wr(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep, qpx_dc_dci_t *dci,
                   const qpx_rdma_wr_t *rwr, int direct)
{
    qpx_mlx5_wqe_stage_t stage;
    struct ibv_send_wr wr;
    qpx_mlx5_wqe_t wqe;
    unsigned flags;
    int ret;

    if (direct == QPX_RDMA_PATH_DIRECT) {
        /* the inline bytes are the operations' own, held to max_inline */
        qpx_rdma_wr_to_send_wr(rwr, &wr, 1);
        wr.send_flags = rwr->send_flags;
        ret = qpx_mlx5_wqe_build(&dci->txwq, &wr, ep->av, ep->dct_num,
                                 iface->config.dc_key, 1, stage, &wqe);
        if (ucs_unlikely(ret != 0)) {
            goto err;
        }
    }

    flags = qpx_dc_dci_wr_flags(iface, ep, dci, rwr->send_flags, rwr->signal);
    if (direct == QPX_RDMA_PATH_DIRECT) {
        /* as qpx_rc's: the WR's immediate data, 0 for every opcode the
         * family posts today (a constant once inlined) */
        qpx_mlx5_wqe_post(&dci->txwq, &wqe, flags, qpx_mlx5_wr_imm(&wr),
                          qpx_dc_dci_wr_id(dci, dci->sn + 1));
    } else {
        ret = qpx_dc_dci_post_path(iface, dci, ep->ah, ep->av, ep->dct_num,
                                   rwr, qpx_dc_dci_wr_id(dci, dci->sn + 1),
                                   flags, direct);
        if (ucs_unlikely(ret != 0)) {
            goto err;
        }
    }
    qpx_dc_dci_wr_posted(iface, ep, dci, flags & IBV_SEND_SIGNALED);
    return UCS_OK;

err:
    ucs_error("post on dci 0x%x (opcode %d) failed: %s", dci->qp->qp_num,
              rwr->opcode, strerror(ret));
    return UCS_ERR_IO_ERROR;
}


/* rwr as a signalled zero-length RDMA write (a flush's no-op, a
 * solicitation) */
static UCS_F_ALWAYS_INLINE const qpx_rdma_wr_t *
qpx_dc_wr_empty(qpx_rdma_wr_t *rwr)
{
    qpx_rdma_wr_init(rwr, IBV_WR_RDMA_WRITE, 0, 1, NULL, 0, 0, 0);
    return rwr;
}


/* Queue op (of ep), to run cb when the request just posted on dci
 * completes */
static UCS_F_ALWAYS_INLINE void qpx_dc_dci_add_op(qpx_dc_dci_t *dci,
                                                  qpx_dc_ep_t *ep,
                                                  qpx_op_t *op, qpx_op_cb_t cb,
                                                  uct_completion_t *comp)
{
    qpx_op_add(&dci->ops, op, dci->sn, cb, comp, ep->id);
}

#endif
