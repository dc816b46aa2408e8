/*
 * softverbs completer: turns finished send WQEs into CQEs of the send CQ
 * (in order), and flushes the send queue of a QP in error.
 */
#include "sv.h"
#include "sv_xfer.h"

static enum ibv_wc_opcode sv_comp_opcode(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    case IBV_WR_BIND_MW:
        return IBV_WC_BIND_MW;
    case IBV_WR_LOCAL_INV:
        return IBV_WC_LOCAL_INV;
    default:                      /* SEND, SEND_WITH_IMM, SEND_WITH_INV */
        return IBV_WC_SEND;
    }
}

/* Complete the WQE at the head of the send queue (qp->lock held) */
void sv_comp_wqe(struct sv_qp *qp, struct sv_swqe *w,
                 enum ibv_wc_status status)
{
    struct sv_cqe c;

    /* unsignaled WRs complete silently unless in error
     * (man ibv_post_send: IBV_SEND_SIGNALED, sq_sig_all) */
    if ((status != IBV_WC_SUCCESS) || qp->shm->sq_sig_all ||
        (w->send_flags & IBV_SEND_SIGNALED)) {
        c.wr_id      = w->wr_id;
        c.status     = status;
        c.opcode     = sv_comp_opcode(w->opcode);
        c.byte_len   = (status == IBV_WC_SUCCESS) ? w->length : 0;
        c.imm_data   = 0;
        c.qp_num     = qp->shm->qpn;
        c.src_qp     = qp->sq_head;   /* retires up to here when polled */
        c.is_send    = 1;
        c.cleaned    = SV_CQE_LIVE;
        c.life       = qp->shm->life; /* the owner's: under its lock */
        c.wc_flags   = 0;
        c.slid       = 0;
        c.sl         = 0;
        c.dlid_path_bits = 0;
        c.vendor_err = (status == IBV_WC_SUCCESS) ? 0 : 0x81;
        c.pkey_index = 0;
        c.inl_len    = 0;
        c.inl_nsge   = 0;
        sv_cq_push(qp->scq->index, &c, NULL, 0);
    }
    qp->sq_head++;
}

/* Every outstanding send WR completes with IBV_WC_WR_FLUSH_ERR
 * (IBA spec 10.7.3.1; man ibv_modify_qp, state IBV_QPS_ERR) */
void sv_comp_flush_sq(struct sv_qp *qp)
{
    struct sv_swqe *w;
    struct sv_cqe c = {0};

    while (qp->sq_head != qp->sq_tail) {
        w = sv_sq_wqe(qp, qp->sq_head);
        c.wr_id      = w->wr_id;
        c.status     = IBV_WC_WR_FLUSH_ERR;
        c.opcode     = sv_comp_opcode(w->opcode);
        c.qp_num     = qp->shm->qpn;
        c.vendor_err = 0xf9;
        c.src_qp     = qp->sq_head;
        c.is_send    = 1;
        c.life       = qp->shm->life;
        sv_cq_push(qp->scq->index, &c, NULL, 0);
        qp->sq_head++;
    }
}
