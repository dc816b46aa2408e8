/*
 * The mlx5 personality's completion queues (sv_mlx5_front.h): what the
 * engine (sv_mlx5_engine.c) does in step 3 of its round. Internal
 * completions become mlx5 CQEs (mlx5dv.h: struct mlx5_cqe64, struct
 * mlx5_err_cqe), the body first and op_own last with a release store and
 * the owner bit of the pass; a signalled NOP completes once the WQEs
 * before it have; a UD QP's receive completions are written in the order
 * of its queue; a CQ armed through its doorbell record gets its channel's
 * event.
 */
#include <string.h>

#include "sv.h"
#include "sv_log.h"
#include "sv_mlx5_front.h"
#include "sv_qp_state.h"

/* --- CQEs ------------------------------------------------------------- */

static uint8_t sv_mlx5_syndrome(enum ibv_wc_status st)
{
    switch (st) {
    case IBV_WC_LOC_LEN_ERR:        return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    case IBV_WC_LOC_QP_OP_ERR:      return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    case IBV_WC_LOC_PROT_ERR:       return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    case IBV_WC_WR_FLUSH_ERR:       return MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
    case IBV_WC_MW_BIND_ERR:        return MLX5_CQE_SYNDROME_MW_BIND_ERR;
    case IBV_WC_BAD_RESP_ERR:       return MLX5_CQE_SYNDROME_BAD_RESP_ERR;
    case IBV_WC_LOC_ACCESS_ERR:     return MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR;
    case IBV_WC_REM_INV_REQ_ERR:    return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
    case IBV_WC_REM_ACCESS_ERR:     return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
    case IBV_WC_REM_OP_ERR:         return MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
    case IBV_WC_RETRY_EXC_ERR:      return MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
    case IBV_WC_RNR_RETRY_EXC_ERR:  return MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
    case IBV_WC_REM_ABORT_ERR:      return MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR;
    default:                        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    }
}

/* The opcode of the send WQE a requester completion ends, as a CQE carries
 * it in sop_drop_qpn's top byte (the PRM's CQE "opcode" of the WQE;
 * libmlx5's handle_good_req decodes it into the ibv_wc's opcode). The
 * completion names the operation's class only: a send with immediate
 * reads as a send, as libmlx5 reports both */
static uint8_t sv_mlx5_wqe_opcode(enum ibv_wc_opcode op)
{
    switch (op) {
    case IBV_WC_RDMA_WRITE: return MLX5_OPCODE_RDMA_WRITE;
    case IBV_WC_RDMA_READ:  return MLX5_OPCODE_RDMA_READ;
    case IBV_WC_COMP_SWAP:  return MLX5_OPCODE_ATOMIC_CS;
    case IBV_WC_FETCH_ADD:  return MLX5_OPCODE_ATOMIC_FA;
    case IBV_WC_BIND_MW:    return MLX5_OPCODE_UMR;
    case IBV_WC_LOCAL_INV:  return MLX5_OPCODE_UMR;
    default:                return MLX5_OPCODE_SEND;
    }
}

/* Publish body as the next entry: everything but op_own first, then op_own
 * with the owner bit of this pass over the buffer (the program reads op_own,
 * then the rest after a load fence: the release store pairs with it) */
static void sv_mlx5_cqe_put(struct sv_mlx5_cq *f,
                            const struct mlx5_cqe64 *body, uint8_t opcode)
{
    uint32_t i   = f->pi & (f->cqe_cnt - 1);
    struct mlx5_cqe64 *cqe = (void *)(f->buf + (size_t)i * f->cqe_size +
                                      f->cqe_size - 64);
    uint8_t owner = (f->pi & f->cqe_cnt) ? 1 : 0;

    memcpy(cqe, body, offsetof(struct mlx5_cqe64, op_own));
    __atomic_store_n(&cqe->op_own, (uint8_t)((opcode << 4) | owner),
                     __ATOMIC_RELEASE);
    f->pi++;
}

void sv_mlx5_cqe_err(struct sv_mlx5_cq *f, uint8_t opcode, uint8_t syndrome,
                     uint8_t vendor, uint32_t qpn, uint16_t wqe_counter)
{
    union {
        struct mlx5_cqe64   cqe;
        struct mlx5_err_cqe err;
    } u;

    memset(&u, 0, sizeof(u));
    u.err.syndrome         = syndrome;
    u.err.vendor_err_synd  = vendor;
    u.err.s_wqe_opcode_qpn = htobe32(qpn & 0xffffff);
    u.err.wqe_counter      = htobe16(wqe_counter);
    sv_mlx5_cqe_put(f, &u.cqe, opcode);
}

static void sv_mlx5_cqe_from_wc(struct sv_mlx5_cq *f, const struct ibv_wc *wc)
{
    int recv = (wc->opcode & IBV_WC_RECV) != 0;
    struct mlx5_cqe64 cqe;
    uint8_t opcode;

    if (wc->status != IBV_WC_SUCCESS) {
        sv_mlx5_cqe_err(f, recv ? MLX5_CQE_RESP_ERR : MLX5_CQE_REQ_ERR,
                        sv_mlx5_syndrome(wc->status),
                        (uint8_t)wc->vendor_err, wc->qp_num,
                        (uint16_t)wc->wr_id);
        return;
    }
    memset(&cqe, 0, sizeof(cqe));
    cqe.byte_cnt     = htobe32(wc->byte_len);
    cqe.sop_drop_qpn = htobe32(wc->qp_num & 0xffffff);
    cqe.wqe_counter  = htobe16((uint16_t)wc->wr_id);
    if (!recv) {
        opcode            = MLX5_CQE_REQ;
        cqe.sop_drop_qpn |= htobe32((uint32_t)sv_mlx5_wqe_opcode(wc->opcode)
                                    << 24);
    } else {
        if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            opcode = MLX5_CQE_RESP_WR_IMM;
        } else if (wc->wc_flags & IBV_WC_WITH_IMM) {
            opcode = MLX5_CQE_RESP_SEND_IMM;
        } else {
            opcode = MLX5_CQE_RESP_SEND;
        }
        cqe.imm_inval_pkey = wc->imm_data;   /* already big endian */
        cqe.slid           = htobe16(wc->slid);
        cqe.flags_rqpn     = htobe32((wc->src_qp & 0xffffff) |
                                     ((wc->wc_flags & IBV_WC_GRH) ?
                                      (1u << 28) : 0));
        /* the wc does not say whether the sender asked for an event: a
         * receive counts as solicited (at worst a spurious event) */
        f->sol_pi = f->pi + 1;
    }
    sv_mlx5_cqe_put(f, &cqe, opcode);
}

/* --- completion queues -------------------------------------------------- */

/*
 * Arming through the doorbell record (UCX's uct_ib_mlx5dv_arm_cq; the PRM's
 * CQ doorbell): the program writes (sn << 28 | cmd | ci) into dbrec[1],
 * cmd 0 for the next entry, 1 << 24 for the next solicited one. A new
 * word is answered once: an event on the CQ's channel as soon as such an
 * entry with an index at or past ci is there.
 */
static void sv_mlx5_cq_arm(struct sv_mlx5_cq *f)
{
    uint32_t word = be32toh(__atomic_load_n(&f->dbrec[1], __ATOMIC_ACQUIRE));
    uint32_t ci   = word & 0xffffff, last;

    if ((word == 0xffffffffu) || (f->arm_valid && (word == f->arm_done))) {
        return; /* not armed, or answered */
    }
    if (word & (1u << 24)) {
        if (f->sol_pi == 0) {
            return;
        }
        last = f->sol_pi - 1;
    } else {
        if (f->pi == 0) {
            return;
        }
        last = f->pi - 1;
    }
    if (((last - ci) & 0xffffff) >= 0x800000) {
        return; /* before ci: already seen */
    }
    f->arm_done  = word;
    f->arm_valid = 1;
    sv_cq_event(f->cq);
}

/* The front of the UD QP whose own receive queue a completion is of, or
 * NULL (an SRQ's, or a send's: their order is the program's to sort out) */
static struct sv_mlx5_qp *sv_mlx5_rq_owner(struct sv_mlx5_qp *qps,
                                           const struct ibv_wc *wc)
{
    struct sv_mlx5_qp *q;

    /* softverbs sets the opcode of error completions too (sv_rq_flush) */
    if (!(wc->opcode & IBV_WC_RECV)) {
        return NULL;
    }
    for (q = qps; q != NULL; q = q->next) {
        if ((q->rq_cnt != 0) && (q->qp->qpx.qp_base.qp_num == wc->qp_num)) {
            return q;
        }
    }
    return NULL;
}

/*
 * A completion of q's receive queue: written when it is the next one of the
 * queue, with those held after it, else held (IBA: receive WRs of a QP
 * complete in order; UCX's ud_mlx5 asserts wqe_counter). Flushed WQEs'
 * completions come after those of the WQEs taken before them.
 */
static void sv_mlx5_rq_complete(struct sv_mlx5_cq *f, struct sv_mlx5_qp *q,
                                const struct ibv_wc *wc)
{
    uint32_t mask = q->rq_cnt - 1;
    uint16_t pos  = (uint16_t)wc->wr_id;

    if (pos != q->rq_done) {
        if ((uint16_t)(pos - q->rq_done) >= q->rq_cnt) {
            sv_error("mlx5: qp 0x%x: receive completion %u out of the "
                     "window from %u", wc->qp_num, pos, q->rq_done);
            sv_mlx5_cqe_from_wc(f, wc);
            return;
        }
        q->rq_held[pos & mask]     = *wc;
        q->rq_held_set[pos & mask] = 1;
        return;
    }
    sv_mlx5_cqe_from_wc(f, wc);
    q->rq_done++;
    while (q->rq_held_set[q->rq_done & mask]) {
        q->rq_held_set[q->rq_done & mask] = 0;
        sv_mlx5_cqe_from_wc(f, &q->rq_held[q->rq_done & mask]);
        q->rq_done++;
    }
}

int sv_mlx5_cq_drain(struct sv_mlx5_cq *f, struct sv_mlx5_qp *qps)
{
    struct ibv_wc wc[16];
    struct sv_mlx5_qp *q, *rq_owner;
    struct sv_qp *qp;
    int i, n, total = 0, idle;

    for (q = qps; q != NULL; q = q->next) {
        /* before the drain: a NOP whose WQEs had all finished then has
         * their CQEs written before its own */
        q->nop_ready = q->nop_wait && (q->qp->scq == f->cq) &&
                       (__atomic_load_n(&q->qp->sq_head, __ATOMIC_ACQUIRE) ==
                        __atomic_load_n(&q->qp->sq_tail, __ATOMIC_ACQUIRE));
    }
    do {
        n = ibv_poll_cq(ibv_cq_ex_to_cq(&f->cq->cq), 16, wc);
        for (i = 0; i < n; i++) {
            rq_owner = sv_mlx5_rq_owner(qps, &wc[i]);
            if (rq_owner != NULL) {
                sv_mlx5_rq_complete(f, rq_owner, &wc[i]);
            } else {
                sv_mlx5_cqe_from_wc(f, &wc[i]);
            }
        }
        total += (n > 0) ? n : 0;
    } while (n == 16);
    for (q = qps; q != NULL; q = q->next) {
        if (!q->nop_ready) {
            continue;
        }
        qp   = q->qp;
        idle = (sv_qp_state(qp->shm) != IBV_QPS_ERR) &&
               (sv_qp_state(qp->shm) != IBV_QPS_SQE);
        if (idle) {
            struct mlx5_cqe64 cqe;

            memset(&cqe, 0, sizeof(cqe));
            cqe.sop_drop_qpn = htobe32(qp->qpx.qp_base.qp_num & 0xffffff);
            cqe.wqe_counter  = htobe16(q->nop_idx);
            sv_mlx5_cqe_put(f, &cqe, MLX5_CQE_REQ);
        } else {
            sv_mlx5_cqe_err(f, MLX5_CQE_REQ_ERR,
                            MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0,
                            qp->qpx.qp_base.qp_num, q->nop_idx);
        }
        q->nop_wait  = 0;
        q->nop_ready = 0;
        total++;
    }
    sv_mlx5_cq_arm(f);
    return total;
}
