/*
 * softverbs QP state (sv_qp_state.h says where it lives and how it is
 * read): its one writer, the owner's moves to ERR and SQE and the flushes
 * they start. Called by the requester, the responder and the CQ's poll of
 * any QP, and by ibv_modify_qp; it calls only the queues below it (the
 * send queue's flush, sv_comp.c; the receive queue's, sv_srq.c) and the
 * async events.
 */
#include "sv.h"
#include "sv_xfer.h"

/* Flush the QP's own receive queue */
void sv_qp_flush_rq(struct sv_qp *qp)
{
    if (qp->rq != NULL) {
        sv_rq_flush(qp->rq, qp->rcq->index, qp->shm->qpn);
    }
}

/*
 * The one writer of a QP's state after its creation (see sv_qp_state.h):
 * ibv_modify_qp, the owner's moves to ERR and SQE (sv_qp_move_to_err) and
 * the responder of any process that moves the QP it serves to ERR
 * (sv_resp.c). The owner and those responders share no lock, so the state
 * changes by compare-and-swap, and only from one of the states in from:
 *  - a responder moves to ERR a QP that can fail (SV_QPS_CAN_FAIL), not
 *    one already in ERR: the one whose move it was flushes and notifies,
 *    once;
 *  - the owner's error moves leave a QP it reset (or took on to INIT)
 *    meanwhile as it is: only a modify leaves RESET (IBA spec 10.3.1);
 *  - SQE is entered from RTS only (IBA spec 10.3.1, the SQ Error state:
 *    a send completion error of a UC or UD QP in RTS).
 * rxe also keeps one state (qp->attr.qp_state, under qp->state_lock; its
 * req/resp/comp state copies were removed) and moves it to ERR in one
 * function, rxe_qp_error (Linux drivers/infiniband/sw/rxe/rxe_qp.c), which
 * schedules its tasks to flush the queues; it never enters SQE ("not
 * possible from modify_qp", and its requester's and completer's errors
 * call rxe_qp_error). Here the flush follows in sv_qp_move_to_err, or in
 * the responder (sv_resp.c) for a QP of another process.
 * acq_rel: what was stored before the move (a modify's attributes) is seen
 * by whoever reads the new state; the mover sees what came before the
 * state it replaces.
 */
int sv_qp_set_state(struct sv_shm_qp *s, enum ibv_qp_state next,
                    uint32_t from)
{
    uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

    do {
        if ((st > IBV_QPS_ERR) || !(from & SV_QPS_BIT(st))) {
            return 0;
        }
    } while (!__atomic_compare_exchange_n(&s->state, &st, next, 0,
                                          __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return 1;
}

/*
 * The owner's move to ERR (a completion error of a reliable QP, IBA spec
 * 10.7.3.1; a modify to ERR; a responder's move found by the CQ's progress)
 * or to SQE (a send completion error of a UC or UD QP: its receive queue
 * keeps working, IBA spec 10.3.1), with qp->lock held. Then what the state
 * in effect flushes (IBA 10.7.3.1, man ibv_modify_qp): ERR every
 * outstanding send and receive WR, SQE the send WRs; none when the QP
 * moved on meanwhile (its owner reset it). An ERR set already stays:
 * SQE is entered from RTS only.
 */
void sv_qp_move_to_err(struct sv_qp *qp, enum ibv_qp_state to)
{
    enum ibv_qp_state st;

    sv_qp_set_state(qp->shm, to, (to == IBV_QPS_SQE) ?
                                 SV_QPS_BIT(IBV_QPS_RTS) : SV_QPS_CAN_FAIL);
    st = sv_qp_state(qp->shm);
    if ((st == IBV_QPS_ERR) || (st == IBV_QPS_SQE)) {
        sv_comp_flush_sq(qp);
    }
    if (st == IBV_QPS_ERR) {
        sv_qp_flush_rq(qp);
    }
}

/* The public ibv_qp.state stays as it was (see sv_qp_state.h) */
void sv_qp_to_err(struct sv_qp *qp)
{
    pthread_mutex_lock(&qp->lock);
    sv_qp_move_to_err(qp, IBV_QPS_ERR);
    pthread_mutex_unlock(&qp->lock);
}
