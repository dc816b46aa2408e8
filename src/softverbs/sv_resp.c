/*
 * softverbs responder: executed by the requester against the responder's
 * shared state (its QP entry, receive queue, MRs and CQ rings), with the
 * payload moved by process_vm_writev/readv into the responder's memory.
 *
 * Responder steps (after rxe's responder):
 *   CHECK_QP     destination QP exists, right type/connection, RTR..SQE
 *   CHECK_RKEY   RDMA/atomic: rkey, PD, access rights, bounds
 *   GET_WQE      SEND, WRITE_WITH_IMM: consume a receive WQE, else RNR
 *   EXECUTE      move the payload / perform the atomic
 *   COMPLETE     push the responder's CQE, raise the SRQ limit event
 *
 * Errors (after rxe's responder classes): an RC request that fails the
 * rkey check or the receive WQE's checks is NAKed and moves the responder
 * QP to ERR (sv_resp_qp_error); UC has no NAK, so the message is dropped
 * and the requester completes successfully.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>
#include <errno.h>
#include <sys/uio.h>
#include <time.h>

/* ---------------------------------------------------------------------
 * State machine
 * ------------------------------------------------------------------- */
enum sv_resp_state {
    SV_RESPST_CHECK_QP,
    SV_RESPST_CHECK_RKEY,
    SV_RESPST_GET_WQE,
    SV_RESPST_EXECUTE,
    SV_RESPST_COMPLETE,
    SV_RESPST_DONE,
};

struct sv_resp {
    struct sv_resp_req *r;
    struct sv_swqe     *w;
    struct sv_shm_qp   *dq;            /* destination QP: its state */
    struct sv_shm_qp   *tq;            /* the data's process, PD, receive
                                          queue, CQ: dq, or for an XRC
                                          target its SRQ's (tview) */
    struct sv_shm_qp    tview;
    struct iovec        riov;          /* RDMA / atomic target */
    struct sv_mr_holds  holds;         /* MRs it moves data through, held
                                          until it is done */
    struct sv_rwqe     *rw;            /* consumed receive WQE */
    struct sv_cqe       cqe;           /* responder completion */
    struct sv_cqe_inl   inl;
    int                 result;        /* enum sv_resp_status */
    enum ibv_wc_status  wqe_status;    /* set: complete the WQE with it */
    int                 to_err;        /* enum sv_resp_err */
    int                 event;         /* async event with it, or -1 */
    uint8_t             life;          /* dq's, read before its state */
};

static int sv_resp_needs_wqe(uint32_t opcode)
{
    return (opcode == IBV_WR_SEND) || (opcode == IBV_WR_SEND_WITH_IMM) ||
           (opcode == IBV_WR_SEND_WITH_INV) ||
           (opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
}

static int sv_resp_needs_rkey(struct sv_swqe *w)
{
    switch (w->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        /* zero-length RDMA carries no rkey check (IBA spec 9.7.4.1.4) */
        return w->length > 0;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return 1;
    default:
        return 0;
    }
}

static enum sv_resp_state sv_resp_after_checks(struct sv_resp *rs)
{
    return sv_resp_needs_wqe(rs->w->opcode) ? SV_RESPST_GET_WQE :
                                              SV_RESPST_EXECUTE;
}

static void sv_resp_set_error(struct sv_resp *rs, int event);
static enum sv_resp_state sv_resp_st_check_qp(struct sv_resp *rs)
{
    /* The QP's life before its state: a reset between the check and the
     * CQE's push (which takes no lock the reset takes) leaves a CQE of the
     * old life, which the poll then drops (sv_cq_poll.c); read after the
     * state it could carry the new one. acquire: pairs with the release
     * store of the life after the state at a reset */
    rs->life   = (rs->dq != NULL) ?
                 __atomic_load_n(&rs->dq->life, __ATOMIC_ACQUIRE) : 0;
    rs->result = sv_resp_check_qp(rs->r, rs->dq);
    if (rs->result != SV_RESP_ACK) {
        return SV_RESPST_DONE;
    }
    if (rs->dq->type == IBV_QPT_XRC_RECV) {
        /* the SRQ the XRCETH names, of the target's domain (sv_xrc.c) */
        rs->result = sv_xrc_resp_target(rs->r, rs->dq, &rs->tview);
        if (rs->result == SV_RESP_NAK_ACCESS) {
            sv_resp_set_error(rs, IBV_EVENT_QP_ACCESS_ERR);
        }
        if (rs->result != SV_RESP_ACK) {
            return SV_RESPST_DONE;
        }
        rs->tq = &rs->tview;
        if (!sv_resp_peer_alive(rs->r->qp, rs->tq)) {
            rs->result = SV_RESP_NORESP;
            return SV_RESPST_DONE;
        }
    }
    return sv_resp_needs_rkey(rs->w) ? SV_RESPST_CHECK_RKEY :
                                       sv_resp_after_checks(rs);
}

/* A responder that answers (ACK/NAK): RC, a DC target, an XRC target */
static int sv_resp_acked(const struct sv_shm_qp *dq)
{
    return (dq->type == IBV_QPT_RC) || (dq->type == SV_QPT_DCT) ||
           (dq->type == IBV_QPT_XRC_RECV);
}

/* A responder QP that an error moves to ERR: RC and an XRC target (a
 * connected reliable QP; a DC target stays, see sv_resp_dc_key_violation
 * and the bad rkey of a DCI) */
static int sv_resp_fails(const struct sv_shm_qp *dq)
{
    return (dq->type == IBV_QPT_RC) || (dq->type == IBV_QPT_XRC_RECV);
}

enum sv_resp_err {
    SV_RESP_ERR_NONE,
    SV_RESP_ERR_PENDING,               /* responder QP must go to ERR */
    SV_RESP_ERR_MOVED,                 /* moved by us: flush and notify */
    SV_RESP_ERR_DONE,                  /* nothing more to do */
};

static void sv_resp_set_error(struct sv_resp *rs, int event)
{
    rs->to_err = SV_RESP_ERR_PENDING;
    rs->event  = event;
}

/* Move the responder QP to ERR unless it is there already or cannot fail
 * (RESET, INIT): only the responder whose move it was flushes and notifies
 * (sv_resp_qp_error). Made before the error CQE is pushed: the owner sees
 * ERR with it, and no requester delivers to the QP after it */
static void sv_resp_qp_set_err(struct sv_resp *rs)
{
    struct sv_shm_qp *dq = rs->dq;

    rs->to_err = SV_RESP_ERR_DONE;
    if (!sv_qp_set_state(dq, IBV_QPS_ERR, SV_QPS_CAN_FAIL)) {
        return;
    }
    sv_error("qp 0x%x: responder error, moved to ERR", dq->qpn);
    rs->to_err = SV_RESP_ERR_MOVED;
}

/*
 * Remote access violation (rkey, PD, rights, bounds, misaligned atomic).
 * RC, class C: the request is NAKed, the responder QP goes to ERR with
 * IBV_EVENT_QP_ACCESS_ERR, and the receive WQE a WRITE_WITH_IMM needs
 * completes with IBV_WC_REM_ACCESS_ERR. As in rxe, the receive WQE is
 * looked for before the rkey: without one, the request is RNR NAKed first.
 * UC: dropped, no NAK, no WQE consumed (rxe completes a WQE already taken
 * from an SRQ in error; softverbs has no UC QP on an SRQ).
 */
static enum sv_resp_state sv_resp_access_error(struct sv_resp *rs)
{
    struct sv_swqe *w = rs->w;
    int rc = sv_resp_acked(rs->dq);

    sv_error("qp 0x%x: remote access error from qp 0x%x: rkey 0x%x "
             "addr 0x%lx len %u", rs->dq->qpn, rs->r->qp->shm->qpn, w->rkey,
             (unsigned long)w->remote_addr, w->length);
    if (sv_resp_fails(rs->dq)) {
        sv_resp_set_error(rs, IBV_EVENT_QP_ACCESS_ERR);
    } else if (!rc) {
        rs->result = SV_RESP_ACK;
    }
    if (!rc || !sv_resp_needs_wqe(w->opcode)) {
        return SV_RESPST_DONE;
    }
    rs->wqe_status = IBV_WC_REM_ACCESS_ERR;
    return SV_RESPST_GET_WQE;
}

static enum sv_resp_state sv_resp_st_check_rkey(struct sv_resp *rs)
{
    struct sv_swqe *w = rs->w;
    unsigned access;
    uint64_t len;

    switch (w->opcode) {
    case IBV_WR_RDMA_READ:
        access = IBV_ACCESS_REMOTE_READ;
        len    = w->length;
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        if (w->remote_addr & 7) {
            rs->result = SV_RESP_NAK_INV; /* misaligned atomic */
            return sv_resp_access_error(rs);
        }
        access = IBV_ACCESS_REMOTE_ATOMIC;
        len    = 8;
        break;
    default:
        access = IBV_ACCESS_REMOTE_WRITE;
        len    = w->length;
        break;
    }
    rs->result = sv_resp_check_rkey(rs->tq, w->rkey, w->remote_addr, len,
                                    access, &rs->riov, &rs->holds);
    if (rs->result != SV_RESP_ACK) {
        return sv_resp_access_error(rs);
    }
    return sv_resp_after_checks(rs);
}

/* A receive WQE must be there before any data is placed, else RNR NAK */
static enum sv_resp_state sv_resp_st_get_wqe(struct sv_resp *rs)
{
    struct sv_shm_srq *srq;
    struct sv_rq_hdr *rq = sv_resp_rq(rs->tq, &srq);

    if ((rq == NULL) || !sv_rq_take(rq, rs->rw)) {
        sv_error("qp 0x%x: no receive WQE (RNR)", rs->dq->qpn);
        rs->r->min_rnr_timer = rs->dq->min_rnr_timer;
        rs->result = SV_RESP_RNR;
        rs->to_err = SV_RESP_ERR_NONE; /* NAKed for RNR, not the error */
        return SV_RESPST_DONE;
    }
    if (srq != NULL) {
        sv_resp_srq_limit(srq, rq, rs->tq->srq - 1);
    }
    memset(&rs->cqe, 0, sizeof(rs->cqe));
    rs->cqe.wr_id  = rs->rw->wr_id;
    rs->cqe.rq_pos = rs->rw->pos;
    rs->cqe.qp_num = rs->dq->qpn;
    rs->cqe.life   = rs->life;
    rs->cqe.opcode = (rs->w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ?
                     IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    rs->cqe.src_qp = rs->r->qp->shm->qpn;
    /* RoCE has no LIDs: SLID 0 (the source is in the GRH) */
    rs->cqe.slid   = sv_port_is_eth(rs->r->qp->shm->port) ? 0 :
                     sv_port_lid(rs->r->qp->shm->dev, rs->r->qp->shm->port);
    if ((rs->w->opcode == IBV_WR_SEND_WITH_IMM) ||
        (rs->w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        rs->cqe.imm_data  = rs->w->imm_data;
        rs->cqe.wc_flags |= IBV_WC_WITH_IMM;
    }
    if (rs->wqe_status != IBV_WC_SUCCESS) {
        rs->cqe.status = rs->wqe_status;
        return SV_RESPST_COMPLETE;
    }
    return SV_RESPST_EXECUTE;
}

/* The receive WQE fails its checks: it completes in error. RC: the request
 * is NAKed and the responder QP goes to ERR (a completion error, so no async
 * event; rxe class C). UC and UD have no NAK: the requester succeeds. */
static enum sv_resp_state sv_resp_recv_error(struct sv_resp *rs, int nak)
{
    if (sv_resp_acked(rs->dq)) {
        rs->result = nak;
    }
    if (sv_resp_fails(rs->dq)) {
        sv_resp_set_error(rs, -1);
    }
    return SV_RESPST_COMPLETE;
}

/*
 * A move into or out of the peer's memory failed. The peer gone (-ESRCH):
 * no response, as to a lost packet. -EPERM (sv_mem_eperm: Yama, another
 * user) is no better on a retry, so it does not wait out the retries: the
 * request is NAKed with a remote operational error (the responder could
 * not complete it), also on UC, and a receive WQE it took (SEND,
 * WRITE_WITH_IMM) completes with IBV_WC_GENERAL_ERR (RC: the responder QP
 * goes to ERR, as for any receive WQE error). UD requesters complete
 * successfully (unacknowledged); the receiver sees the error. A page not
 * mapped (-EFAULT: the peer unmapped it under its registration) fails a
 * request that took no receive WQE like a lost packet; one that took a
 * receive WQE completes it with IBV_WC_LOC_PROT_ERR and is NAKed as above:
 * a taken WQE never vanishes without a completion.
 */
static enum sv_resp_state sv_resp_xfer_failed(struct sv_resp *rs, int ret,
                                              int took_wqe)
{
    if ((ret != -EPERM) && ((ret != -EFAULT) || !took_wqe)) {
        rs->result = SV_RESP_NORESP;
        return SV_RESPST_DONE;
    }
    if (took_wqe) {
        rs->cqe.status = (ret == -EPERM) ? IBV_WC_GENERAL_ERR :
                                           IBV_WC_LOC_PROT_ERR;
        sv_resp_recv_error(rs, SV_RESP_NAK_OP);
    }
    rs->result = SV_RESP_NAK_OP;
    return took_wqe ? SV_RESPST_COMPLETE : SV_RESPST_DONE;
}

/* SEND: scatter the payload (and the GRH for UD) into the receive WQE */
static enum sv_resp_state sv_resp_exec_send(struct sv_resp *rs)
{
    struct iovec riov[SV_MAX_SGE];
    struct iovec liov[SV_MAX_SGE + 2];
    struct sv_resp_req *r = rs->r;
    struct sv_shm_qp *dq = rs->tq;
    int ud = (dq->type == IBV_QPT_UD);
    int rcnt = 0, lcnt = 0, i, ret;
    struct ibv_grh grh;
    ssize_t cap;
    size_t len;

    rs->result = SV_RESP_ACK;
    len = sv_iov_len(r->liov, r->liovcnt) + (ud ? SV_GRH_LEN : 0);
    cap = sv_resp_recv_iov(dq, rs->rw, riov, &rcnt, &rs->holds);
    if (cap < 0) {
        rs->cqe.status = IBV_WC_LOC_PROT_ERR;
        return sv_resp_recv_error(rs, SV_RESP_NAK_OP);
    }
    if ((size_t)cap < len) {
        rs->cqe.status = IBV_WC_LOC_LEN_ERR;
        return sv_resp_recv_error(rs, SV_RESP_NAK_INV);
    }
    /* Send with Invalidate (IBTA vol 1 9.7.5, remote invalidate): the
     * window of the IETH's rkey is invalidated before the receive
     * completes, which then carries IBV_WC_WITH_INV and the key
     * (invalidated_rkey). A key that cannot be invalidated completes the
     * receive WQE with IBV_WC_REM_INV_REQ_ERR and takes an RC QP to ERR, as
     * rxe (RESPST_ERR_INVALIDATE_RKEY, class J); the request is NAKed as
     * an invalid request (rxe answers it with an ACK, leaving the requester
     * unaware); nothing is placed */
    if (rs->w->opcode == IBV_WR_SEND_WITH_INV) {
        if (sv_mw_remote_invalidate(dq, rs->w->imm_data) < 0) {
            rs->cqe.status = IBV_WC_REM_INV_REQ_ERR;
            return sv_resp_recv_error(rs, SV_RESP_NAK_INV);
        }
        rs->cqe.imm_data  = rs->w->imm_data;
        rs->cqe.wc_flags |= IBV_WC_WITH_INV;
    }
    if (ud) {
        sv_resp_build_grh(r, &grh, len - SV_GRH_LEN);
        liov[lcnt].iov_base = &grh;
        liov[lcnt].iov_len  = SV_GRH_LEN;
        lcnt++;
        rs->cqe.wc_flags |= IBV_WC_GRH;
    }
    memcpy(&liov[lcnt], r->liov, r->liovcnt * sizeof(*r->liov));
    lcnt += r->liovcnt;
    rcnt  = sv_iov_trim(riov, rcnt, len);
    rs->cqe.byte_len = len;
    if ((dq->pid != sv_g.pid) && (len <= SV_CQE_INL) &&
        (rcnt <= SV_CQE_INL_SGE)) {
        /* small payload: carried in the CQ slot (see struct sv_cqe_inl) */
        struct iovec dst = { rs->inl.data, len };
        sv_iov_copy(&dst, 1, liov, lcnt);
        for (i = 0; i < rcnt; i++) {
            rs->inl.va[i]  = (uintptr_t)riov[i].iov_base;
            rs->inl.len[i] = riov[i].iov_len;
        }
        rs->cqe.inl_len  = len;
        rs->cqe.inl_nsge = rcnt;
        return SV_RESPST_COMPLETE;
    }
    ret = sv_mem_write(dq->pid, liov, lcnt, riov, rcnt);
    if (ret < 0) {
        return sv_resp_xfer_failed(rs, ret, 1);
    }
    return SV_RESPST_COMPLETE;
}

static enum sv_resp_state sv_resp_exec_atomic(struct sv_resp *rs)
{
    struct sv_swqe *w = rs->w;
    struct iovec liov;
    uint64_t old, val;
    int ret;

    liov.iov_base = &old;
    liov.iov_len  = 8;
    /* one host-wide lock: atomics are atomic against each other */
    sv_atomic_lock();
    ret = sv_mem_read(rs->tq->pid, &liov, 1, &rs->riov, 1);
    if (ret < 0) {
        sv_atomic_unlock();
        return sv_resp_xfer_failed(rs, ret, 0);
    }
    if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
        val = (old == w->compare_add) ? w->swap : old;
    } else {
        val = old + w->compare_add;
    }
    liov.iov_base = &val;
    ret = (val != old) ? sv_mem_write(rs->tq->pid, &liov, 1, &rs->riov, 1) : 0;
    if (ret < 0) {
        sv_atomic_unlock();
        return sv_resp_xfer_failed(rs, ret, 0);
    }
    sv_atomic_unlock();
    /* the original value lands in the requester's local buffer */
    memcpy(rs->r->liov[0].iov_base, &old, 8);
    rs->result = SV_RESP_ACK;
    return SV_RESPST_DONE;
}

static enum sv_resp_state sv_resp_st_execute(struct sv_resp *rs)
{
    struct sv_resp_req *r = rs->r;
    struct sv_swqe *w = rs->w;
    int ret;

    switch (w->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_SEND_WITH_INV:
        return sv_resp_exec_send(rs);
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        ret = (w->length > 0) ?
              sv_mem_write(rs->tq->pid, r->liov, r->liovcnt, &rs->riov, 1) :
              0;
        if (ret < 0) {
            return sv_resp_xfer_failed(rs, ret,
                                       w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
        }
        rs->result       = SV_RESP_ACK;
        rs->cqe.byte_len = w->length;
        return (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ?
               SV_RESPST_COMPLETE : SV_RESPST_DONE;
    case IBV_WR_RDMA_READ:
        ret = (w->length > 0) ?
              sv_mem_read(rs->tq->pid, r->liov, r->liovcnt, &rs->riov, 1) :
              0;
        if (ret < 0) {
            return sv_resp_xfer_failed(rs, ret, 0);
        }
        rs->result = SV_RESP_ACK;
        return SV_RESPST_DONE;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return sv_resp_exec_atomic(rs);
    default:
        rs->result = SV_RESP_NAK_INV;
        return SV_RESPST_DONE;
    }
}

static enum sv_resp_state sv_resp_st_complete(struct sv_resp *rs)
{
    struct timespec ts;

    if (SV_UNLIKELY(sv_g.resp_delay_ns != 0)) {
        /* SOFTVERBS_RESP_DELAY: the target may be reset meanwhile */
        ts.tv_sec  = (time_t)(sv_g.resp_delay_ns / 1000000000ull);
        ts.tv_nsec = (long)(sv_g.resp_delay_ns % 1000000000ull);
        while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
        }
    }
    if (rs->to_err == SV_RESP_ERR_PENDING) {
        sv_resp_qp_set_err(rs); /* ERR is seen with the error CQE */
    }
    if (rs->cqe.status != IBV_WC_SUCCESS) {
        sv_error("qp 0x%x: receive WQE error %s", rs->dq->qpn,
                 ibv_wc_status_str(rs->cqe.status));
    }
    if (sv_cq_push(rs->tq->rcq, &rs->cqe, &rs->inl,
                   !!(rs->w->send_flags & IBV_SEND_SOLICITED)) < 0) {
        /*
         * The receive CQ overran (or is gone): IBA class G, as rxe's
         * RESPST_ERR_CQ_OVERFLOW. The responder QP goes to ERR with
         * IBV_EVENT_QP_FATAL (after the CQ's IBV_EVENT_CQ_ERR) and the
         * request is not acknowledged: the requester retries into a QP in
         * ERR and ends with IBV_WC_RETRY_EXC_ERR. Before, the request was
         * ACKed and the QP went on delivering into buffers whose
         * completions were lost, which no HCA does.
         */
        if (rs->to_err == SV_RESP_ERR_NONE) {
            sv_resp_set_error(rs, IBV_EVENT_QP_FATAL);
            rs->result = SV_RESP_NORESP;
        }
    }
    return SV_RESPST_DONE;
}

/* After the responder QP was moved to ERR: flush its receive queue (the
 * ring and the CQ are shared, so the flush completions appear without its
 * owner); the owner flushes its send queue when it next polls (flush_req)
 * or posts. An SRQ is not flushed; its QP reports
 * IBV_EVENT_QP_LAST_WQE_REACHED. */
static void sv_resp_qp_error(struct sv_resp *rs)
{
    struct sv_shm_qp *dq = rs->dq;

    if (!dq->srq && dq->rq_off) {
        sv_rq_flush(sv_shm_ptr(dq->rq_off), dq->rcq, dq->qpn);
    }
    /* release: the owner's poll sees the ERR state with the request. An
     * XRC target has no CQs (0) and no queue of its own to flush */
    if (dq->scq != 0) {
        __atomic_store_n(&sv_g.shm->cqs[dq->scq].flush_req, 1,
                         __ATOMIC_RELEASE);
    }
    if (dq->rcq != 0) {
        __atomic_store_n(&sv_g.shm->cqs[dq->rcq].flush_req, 1,
                         __ATOMIC_RELEASE);
    }

    /* cookie 0: an XRC target without its creator (sv_xrc_qp_release) */
    if ((rs->event >= 0) && (dq->cookie != 0)) {
        sv_ev_async(dq->ctx_id, SV_EV_QP, rs->event, dq - sv_g.shm->qps,
                    dq->cookie);
    }
    if (dq->srq) {
        sv_ev_async(dq->ctx_id, SV_EV_QP, IBV_EVENT_QP_LAST_WQE_REACHED,
                    dq - sv_g.shm->qps, dq->cookie);
    }
}

int sv_resp_execute(struct sv_resp_req *r)
{
    struct sv_resp rs;
    enum sv_resp_state state = SV_RESPST_CHECK_QP;

    rs.r      = r;
    rs.w      = r->wqe;
    rs.dq     = sv_shm_qp_lookup(r->dest_qpn);
    rs.tq     = rs.dq;
    rs.rw     = alloca(sizeof(*rs.rw) + SV_MAX_SGE * sizeof(struct ibv_sge));
    rs.result = SV_RESP_NAK_INV;
    rs.cqe.status = IBV_WC_SUCCESS;
    rs.wqe_status = IBV_WC_SUCCESS;
    rs.to_err     = SV_RESP_ERR_NONE;
    rs.event      = -1;
    rs.holds.n    = 0;

    while (state != SV_RESPST_DONE) {
        switch (state) {
        case SV_RESPST_CHECK_QP:
            state = sv_resp_st_check_qp(&rs);
            break;
        case SV_RESPST_CHECK_RKEY:
            state = sv_resp_st_check_rkey(&rs);
            break;
        case SV_RESPST_GET_WQE:
            state = sv_resp_st_get_wqe(&rs);
            break;
        case SV_RESPST_EXECUTE:
            state = sv_resp_st_execute(&rs);
            break;
        case SV_RESPST_COMPLETE:
            state = sv_resp_st_complete(&rs);
            break;
        default:
            state = SV_RESPST_DONE;
            break;
        }
    }
    /* the data is placed: a deregistration waiting for it may return */
    sv_mr_release(&rs.holds, 0);
    if (rs.to_err == SV_RESP_ERR_PENDING) {
        sv_resp_qp_set_err(&rs);
    }
    if (rs.to_err == SV_RESP_ERR_MOVED) {
        sv_resp_qp_error(&rs);
    }
    return rs.result;
}
