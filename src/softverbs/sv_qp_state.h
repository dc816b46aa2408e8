/*
 * softverbs QP state (IBA spec 10.3.1, QP state transitions): where it
 * lives, how it is read, its one writer and the moves to ERR and SQE
 * (sv_qp_state.c). Included by sv.h, after the registry's struct
 * sv_shm_qp it needs; not to be included on its own.
 *
 * The state lives in one place, the registry entry's state (struct
 * sv_shm_qp), because other processes use it: a requester checks the state
 * of the responder QP it delivers to, and a responder moves the QP it
 * serves to ERR (sv_resp.c). Read with sv_qp_state; after creation,
 * written by sv_qp_set_state only. Derived from it, never changed on their
 * own:
 *   ibv_qp.state     the public field, kept as libibverbs keeps it: set by
 *                    ibv_modify_qp and ibv_query_qp (with IBV_QP_STATE)
 *                    only (rdma-core libibverbs/verbs.c), so a QP that
 *                    failed by itself shows its last modified state there
 *                    until its owner queries it (UCX's rc_verbs looks at
 *                    that field when it purges a failed peer)
 *   ibv_query_qp     qp_state and cur_qp_state, read at each query
 */
#ifndef SV_QP_STATE_H
#define SV_QP_STATE_H

#define SV_QPS_BIT(_s)   (1u << (_s))
/* any state: ibv_modify_qp, whose transition was checked before */
#define SV_QPS_ANY       (SV_QPS_BIT(IBV_QPS_ERR + 1) - 1)
/* the states in which a QP processes work and so can fail by itself:
 * RESET and INIT process nothing (a responder drops what comes; only a
 * modify leaves RESET), ERR is where failing leads */
#define SV_QPS_CAN_FAIL  (SV_QPS_BIT(IBV_QPS_RTR) | SV_QPS_BIT(IBV_QPS_RTS) | \
                          SV_QPS_BIT(IBV_QPS_SQD) | SV_QPS_BIT(IBV_QPS_SQE))

static inline enum ibv_qp_state sv_qp_state(const struct sv_shm_qp *s)
{
    /* acquire: pairs with sv_qp_set_state; what was stored before a state
     * (the attributes of a modify) is seen with it */
    return (enum ibv_qp_state)__atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}
/* Move s to next if its state is one of from (SV_QPS_BIT()s): 1 if this
 * call moved it, 0 if it was in another state (sv_qp_state.c) */
int  sv_qp_set_state(struct sv_shm_qp *s, enum ibv_qp_state next,
                     uint32_t from);
/* The owner's move to ERR or SQE (to), with qp->lock held: the state, then
 * the flush of the state in effect */
void sv_qp_move_to_err(struct sv_qp *qp, enum ibv_qp_state to);
/* sv_qp_move_to_err(qp, IBV_QPS_ERR), taking qp->lock */
void sv_qp_to_err(struct sv_qp *qp);

#endif
