/*
 * softverbs queue pairs: the state machine. The transitions ibv_modify_qp
 * allows and the attributes each takes, ibv_modify_qp and ibv_query_qp.
 * The QP's one state, its only writer and the moves to ERR and SQE, which
 * the data path calls, are sv_qp_state.c's, below it; creation and
 * destruction are in sv_qp.c.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <string.h>

/* ---------------------------------------------------------------------
 * Attribute masks per transition (IBA spec 11.2.5.2, table "QP state
 * transition properties"; man ibv_modify_qp)
 * ------------------------------------------------------------------- */
struct sv_qp_trans {
    int valid;
    int req[3];                   /* RC, UC, UD */
    int opt[3];
};

#define SV_ALL3(x) { (x), (x), (x) }

static const struct sv_qp_trans sv_qp_table[7][7] = {
    [IBV_QPS_RESET] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_INIT]  = {
            .valid = 1,
            .req = {
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_INIT] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_INIT]  = {
            .valid = 1,
            .opt = {
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_RTR] = {
            .valid = 1,
            .req = {
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER,
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN,
                0,
            },
            .opt = {
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
                IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_RTR] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .req = {
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_SQ_PSN,
                IBV_QP_SQ_PSN,
            },
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_RTS] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_SQD]   = {
            .valid = 1,
            .opt = SV_ALL3(IBV_QP_EN_SQD_ASYNC_NOTIFY),
        },
    },
    [IBV_QPS_SQD] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_SQD]   = {
            .valid = 1,
            .opt = {
                IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
                IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
                IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_SQE] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                0,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_ERR] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
    },
};

/* The table's column of a QP type: XRC QPs take RC's, less the
 * attributes they ignore (sv_xrc_modify_ignored) */
static int sv_qp_type_idx(uint8_t t)
{
    return ((t == IBV_QPT_RC) || (t == IBV_QPT_XRC_SEND) ||
            (t == IBV_QPT_XRC_RECV)) ? 0 : (t == IBV_QPT_UC) ? 1 : 2;
}

/* ---------------------------------------------------------------------
 * Modify and query
 * ------------------------------------------------------------------- */
static void sv_qp_async_event(struct sv_qp *qp, enum ibv_event_type type)
{
    sv_ev_async(qp->shm->ctx_id, SV_EV_QP, type, qp->index, qp->shm->cookie);
}

static int sv_qp_check_attr(struct sv_qp *qp, const struct ibv_qp_attr *a,
                            int mask)
{
    if ((mask & IBV_QP_PORT) && !sv_port_valid(a->port_num)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && (a->pkey_index != 0)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) &&
        ((a->path_mtu < IBV_MTU_256) || (a->path_mtu > IBV_MTU_4096))) {
        return EINVAL;
    }
    if ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num > 0xffffff)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_TIMEOUT) && (a->timeout > 31)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RETRY_CNT) && (a->retry_cnt > 7)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RNR_RETRY) && (a->rnr_retry > 7)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MIN_RNR_TIMER) && (a->min_rnr_timer > 31)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
        (a->max_rd_atomic > SV_MAX_RD_ATOM)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
        (a->max_dest_rd_atomic > SV_MAX_RD_ATOM)) {
        return EINVAL;
    }
    /* the AV of a DCI or DCT gives its port, SL and GRH only (the target
     * comes per WR; mlx5_ib uses no DLID of it), so a zero DLID is fine */
    if ((mask & IBV_QP_AV) &&
        (((a->ah_attr.port_num != 0) && !sv_port_valid(a->ah_attr.port_num)) ||
         !sv_ah_attr_valid(&a->ah_attr,
                           a->ah_attr.port_num ? a->ah_attr.port_num :
                           (mask & IBV_QP_PORT) ? a->port_num :
                           qp->shm->port,
                           (qp->sv_type == SV_QPT_DCI) ||
                           (qp->sv_type == SV_QPT_DCT)))) {
        return EINVAL;
    }
    /* qp_access_flags are not checked: the kernel's modify_qp
     * (drivers/infiniband/core/uverbs_cmd.c) copies them as they come and
     * mlx5_ib reads only the remote read/write/atomic bits of them
     * (to_mlx5_access_flags, later set_qpc_atomic_flags, in
     * drivers/infiniband/hw/mlx5/qp.c), so IBV_ACCESS_ON_DEMAND (an MR's
     * flag, which applications pass along with the rest) is taken and
     * has no effect; the responder here likewise looks at the remote bits
     * only */
    return 0;
}

/* The modify's move (*cur_p to *next_p) and attributes are valid for qp:
 * a transition of the state table (DC's own rules for DCI and DCT) with its
 * required and optional attributes; else EINVAL */
static int sv_qp_modify_check(struct sv_qp *qp, const struct ibv_qp_attr *a,
                              int mask, enum ibv_qp_state *cur_p,
                              enum ibv_qp_state *next_p)
{
    int ti = sv_qp_type_idx(qp->sv_type);
    int ign = sv_xrc_modify_ignored(qp->sv_type);
    const struct sv_qp_trans *t;
    enum ibv_qp_state cur, next;
    int ret;

    mask &= ~ign;
    /* the state may have been set to ERR/SQE by a requester or responder */
    cur  = sv_qp_state(qp->shm);
    next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
    if ((mask & IBV_QP_CUR_STATE) && (a->cur_qp_state != cur)) {
        return EINVAL;
    }
    if (((unsigned)next > IBV_QPS_ERR) || ((unsigned)cur > IBV_QPS_ERR)) {
        return EINVAL;
    }
    t = &sv_qp_table[cur][next];
    if ((qp->sv_type == SV_QPT_DCI) || (qp->sv_type == SV_QPT_DCT)) {
        ret = sv_dc_modify_check(qp, cur, next, mask);
    } else {
        ret = (!t->valid ||
               ((mask & t->req[ti] & ~ign) != (t->req[ti] & ~ign)) ||
               (mask & ~(t->req[ti] | t->opt[ti] | IBV_QP_STATE))) ?
              EINVAL : 0;
    }
    if (ret != 0) {
        sv_error("qp 0x%x: invalid modify %d->%d mask 0x%x",
                 qp->shm->qpn, cur, next, mask);
        return ret;
    }
    ret = sv_qp_check_attr(qp, a, mask);
    if (ret != 0) {
        return ret;
    }

    *cur_p  = cur;
    *next_p = next;
    return 0;
}


/* The attributes of mask into qp (and the registry's copies requesters and
 * responders read); under the QP's lock */
static void sv_qp_attr_apply(struct sv_qp *qp, const struct ibv_qp_attr *a,
                             int mask)
{
    if (mask & IBV_QP_ACCESS_FLAGS) {
        qp->attr.qp_access_flags = a->qp_access_flags;
        qp->shm->access          = a->qp_access_flags;
    }
    if (mask & IBV_QP_PKEY_INDEX)      qp->attr.pkey_index = a->pkey_index;
    if (mask & IBV_QP_PORT) {
        /* the port whose LID peers address: checked by responders */
        qp->attr.port_num = a->port_num;
        qp->shm->port     = a->port_num;
    }
    if (mask & IBV_QP_QKEY) {
        qp->attr.qkey = a->qkey;
        qp->shm->qkey = a->qkey;
    }
    if (mask & IBV_QP_AV) {
        qp->attr.ah_attr        = a->ah_attr;
        qp->shm->av_is_global   = a->ah_attr.is_global;
        qp->shm->av_sgid_index  = a->ah_attr.grh.sgid_index;
        memcpy(qp->shm->av_dgid, a->ah_attr.grh.dgid.raw,
               sizeof(qp->shm->av_dgid));
    }
    if (mask & IBV_QP_ALT_PATH) {
        qp->attr.alt_ah_attr    = a->alt_ah_attr;
        qp->attr.alt_pkey_index = a->alt_pkey_index;
        qp->attr.alt_port_num   = a->alt_port_num;
        qp->attr.alt_timeout    = a->alt_timeout;
    }
    if (mask & IBV_QP_PATH_MTU)        qp->attr.path_mtu = a->path_mtu;
    if (mask & IBV_QP_TIMEOUT)         qp->attr.timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT)       qp->attr.retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)       qp->attr.rnr_retry = a->rnr_retry;
    if (mask & IBV_QP_RQ_PSN)          qp->attr.rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN)          qp->attr.sq_psn = a->sq_psn;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        qp->attr.max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        qp->attr.min_rnr_timer  = a->min_rnr_timer;
        qp->shm->min_rnr_timer  = a->min_rnr_timer;
    }
    if (mask & IBV_QP_PATH_MIG_STATE)  qp->attr.path_mig_state = a->path_mig_state;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
        qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;
    if (mask & IBV_QP_DEST_QPN) {
        qp->attr.dest_qp_num = a->dest_qp_num;
        qp->shm->dest_qpn    = a->dest_qp_num;
    }
}


/* A QP moved to RESET drops everything outstanding, as a reset HCA QP
 * does; under the QP's lock */
static void sv_qp_queues_reset(struct sv_qp *qp)
{
    /* drop everything outstanding, as a reset HCA QP does */
    if (qp->sq_pending) {
        qp->sq_pending = 0;
        __atomic_fetch_sub(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
    }
    qp->sq_head = qp->sq_tail = qp->sq_retired = 0;
    qp->dc_last_dctn = 0; /* a reset DCI is connected to nobody */
    qp->dc_last_dlid = 0;
    if (qp->rq != NULL) {
        /* release: consumers see an empty ring from now on */
        __atomic_store_n(&qp->rq->head, qp->rq->tail, __ATOMIC_RELEASE);
    }
}


/* What follows a move from cur to next, without the QP's lock: its CQEs
 * cleaned at RESET, the error flow and its events, the drained send queue
 * restarted */
static void sv_qp_modify_finish(struct sv_qp *qp, enum ibv_qp_state cur,
                                enum ibv_qp_state next)
{
    if (next == IBV_QPS_RESET) {
        /* its CQEs go too (mlx5_cq_clean), without the QP's lock: the
         * CQ's lock is taken before a QP's when a poll runs requesters */
        if (qp->scq != NULL) {
            sv_cq_clean(qp->scq, qp);
        }
        if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
            sv_cq_clean(qp->rcq, qp);
        }
        if (qp->mlx5 != NULL) {
            sv_g.hooks->qp_reset(qp); /* its mlx5 queues start at 0 */
        }
    }

    if ((next == IBV_QPS_ERR) && (cur != IBV_QPS_ERR)) {
        sv_qp_to_err(qp);
        if (qp->srq != NULL) {
            sv_qp_async_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
        }
    }
    if ((next == IBV_QPS_RTS) && (cur == IBV_QPS_SQD)) {
        sv_req_progress(qp); /* WRs posted while drained */
    }
    if ((next == IBV_QPS_SQD) && qp->attr.en_sqd_async_notify) {
        /* the send queue is always drained: requests run synchronously */
        sv_qp_async_event(qp, IBV_EVENT_SQ_DRAINED);
    }
}


SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a,
                            int mask)
{
    struct sv_qp *qp = sv_qp(ibqp);
    enum ibv_qp_state cur, next;
    int ret;

    if (a == NULL) {
        return EINVAL;
    }
    /* what an XRC QP ignores is not applied either (the kernel's
     * modify_qp_mask drops it before the driver sees it) */
    mask &= ~sv_xrc_modify_ignored(qp->sv_type);
    ret = sv_qp_modify_check(qp, a, mask, &cur, &next);
    if (ret != 0) {
        return ret;
    }

    pthread_mutex_lock(&qp->lock);
    sv_qp_attr_apply(qp, a, mask);
    if (next == IBV_QPS_RESET) {
        sv_qp_queues_reset(qp);
    }
    if (mask & IBV_QP_STATE) {
        ibqp->state = next; /* as libibverbs' ibv_modify_qp */
    }
    if ((qp->sv_type == SV_QPT_DCT) && (next == IBV_QPS_RTR)) {
        /* the DCT exists on the HCA from RTR on, and its number with it
         * (rdma-core providers/mlx5/verbs.c modify_dct: qp_num = dctn) */
        ibqp->qp_num = qp->shm->qpn;
    }
    /* from any state, as the plain store it replaced: the transition was
     * checked against cur above. The attributes above are visible to
     * requesters seeing the state */
    sv_qp_set_state(qp->shm, next, SV_QPS_ANY);
    if (next == IBV_QPS_RESET) {
        /* A new life, after the state: a responder that read the old life
         * may still push a CQE once the sweep below has run; the poll
         * drops it then (release: pairs with the responder's acquire) */
        __atomic_store_n(&qp->shm->life, (uint8_t)(qp->shm->life + 1),
                         __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&qp->lock);

    sv_qp_modify_finish(qp, cur, next);
    return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
                           int mask, struct ibv_qp_init_attr *init)
{
    struct sv_qp *qp = sv_qp(ibqp);

    if ((attr == NULL) || (init == NULL)) {
        return EINVAL;
    }
    /* a DCT is queried in RTR only (the kernel's mlx5_ib_dct_query_qp) */
    if ((qp->sv_type == SV_QPT_DCT) &&
        (sv_qp_state(qp->shm) != IBV_QPS_RTR)) {
        return EINVAL;
    }
    pthread_mutex_lock(&qp->lock);
    *attr              = qp->attr;
    /* the state, maybe changed by a requester's or responder's error */
    attr->qp_state     = sv_qp_state(qp->shm);
    attr->cur_qp_state = attr->qp_state;
    attr->cap          = qp->cap;
    attr->sq_draining  = 0;
    memset(init, 0, sizeof(*init));
    init->qp_context = ibqp->qp_context;
    init->send_cq    = ibqp->send_cq;
    init->recv_cq    = ibqp->recv_cq;
    init->srq        = ibqp->srq;
    init->cap        = qp->cap;
    init->qp_type    = ibqp->qp_type;
    init->sq_sig_all = qp->shm->sq_sig_all;
    if (mask & IBV_QP_STATE) {
        /* libibverbs' ibv_query_qp updates the public field: a QP that
         * went to ERR by itself shows it from here on */
        ibqp->state = attr->qp_state;
    }
    pthread_mutex_unlock(&qp->lock);
    return 0;
}
