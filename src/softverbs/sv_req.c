/*
 * softverbs requester: runs the send queue of a QP in the poster's own
 * calls (post_send, poll_cq of the send CQ).
 *
 * Per WQE state machine:
 *   POSTED --execute--> ACK ----------------------------> complete OK
 *                   \-> RNR NAK  --(rnr_retry left)--> WAIT(rnr timer)
 *                   \-> no response --(retry left)---> WAIT(ack timeout)
 *                   \-> NAK / local error --------------> complete with
 *                                                         error, QP->ERR
 *   WAIT --deadline passed--> POSTED (re-executed)
 * Retries exhausted give IBV_WC_RNR_RETRY_EXC_ERR / IBV_WC_RETRY_EXC_ERR.
 * A reliable request that crossed a wire (sv_wire.c) hears its answer one
 * delay later: it waits DONE (with the status the answer carries) until
 * then, and the requester goes on with the WQEs behind it meanwhile, as
 * an HCA sends requests without waiting for the earlier ones' ACKs:
 *   POSTED --execute--> answer on the wire --> DONE --back--> complete
 * Completions stay in order (from the head); nothing is executed past a
 * WQE that waits for a timer or whose answer is an error.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* RNR NAK timer values in microseconds, indexed by the 5-bit encoding
 * (IBA spec 9.7.5.2.8, table "Encoding for RNR NAK Timer Field") */
static const uint32_t sv_rnr_timer_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
    40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static uint64_t sv_ack_timeout_ns(uint8_t timeout)
{
    /* 4.096 usec * 2^timeout (IBA spec 9.7.6.1.3, local ACK timeout) */
    if (timeout == 0) {
        return 0; /* infinite */
    }
    return 4096ull << (timeout > 31 ? 31 : timeout);
}

static uint32_t sv_rand(void)
{
    static __thread uint64_t s;

    if (s == 0) {
        s = sv_now_ns() | 1;
    }
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (uint32_t)(s >> 32);
}

static int sv_chance(double p)
{
    return (p > 0.0) && ((sv_rand() / 4294967296.0) < p);
}

/* Gather the requester's local buffers, checking lkeys (C9-... local
 * protection: the lkey must belong to the QP's PD and cover the range) */
static int sv_req_local_iov(struct sv_qp *qp, struct sv_swqe *w,
                            struct iovec *iov, int *cnt, int need_write)
{
    uint32_t pd_id = sv_container_of(qp->qpx.qp_base.pd, struct sv_pd,
                                     pd)->pd_id;
    struct sv_shm_mr *m;
    uint32_t i;
    int n = 0;

    if ((w->num_sge == 0) && (w->length > 0)) {
        iov[0].iov_base = sv_swqe_inline(qp, w);
        iov[0].iov_len  = w->length;
        *cnt = 1;
        return 0;
    }
    for (i = 0; i < w->num_sge; i++) {
        struct ibv_sge *s = &w->sge[i];
        if (s->length == 0) {
            continue;
        }
        m = sv_shm_mr_lookup(s->lkey);
        if ((m == NULL) || (m->pid != sv_g.pid) || (m->pd_id != pd_id) ||
            (s->addr < m->addr) || (s->addr + s->length < s->addr) ||
            (s->addr + s->length > m->addr + m->len) ||
            (need_write && !(m->access & IBV_ACCESS_LOCAL_WRITE))) {
            sv_error("qp 0x%x: bad local sge lkey 0x%x addr 0x%lx len %u",
                     qp->shm->qpn, s->lkey, (unsigned long)s->addr,
                     s->length);
            return -1;
        }
        iov[n].iov_base = (void *)(uintptr_t)(m->va + (s->addr - m->addr));
        iov[n].iov_len  = s->length;
        n++;
    }
    *cnt = n;
    return 0;
}

static int sv_req_deliver(struct sv_qp *qp, struct sv_resp_req *r,
                          uint32_t dest_qpn)
{
    int ret;

    r->dest_qpn = dest_qpn;
    ret = sv_resp_execute(r);
    r->wqe->rnr_timer = r->min_rnr_timer;
    return ret;
}

/* UD to a multicast LID: deliver to every attached QP */
static int sv_req_mcast(struct sv_qp *qp, struct sv_resp_req *r)
{
    uint32_t qpns[SV_MCAST_QPS];
    struct sv_shm_mcast *g;
    int i, j, n = 0;

    for (i = 0; i < SV_MCAST_TBL; i++) {
        g = &sv_g.shm->mcast[i];
        if (g->in_use && (g->lid == r->wqe->ud_dlid) &&
            (!r->wqe->ud_has_grh ||
             !memcmp(&g->gid, &r->wqe->ud_dgid, sizeof(g->gid)))) {
            for (j = 0; (j < g->nqp) && (n < SV_MCAST_QPS); j++) {
                qpns[n++] = g->qpn[j];
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (qpns[i] != qp->shm->qpn) {
            sv_req_deliver(qp, r, qpns[i]);
        }
    }
    return SV_RESP_ACK;
}

/*
 * DCI: the target is the WQE's (DCT number, LID, DC key). A DCI is
 * connected to one target at a time: a WQE for another target than the one
 * before makes the DCI leave the old target and connect to the new one (the
 * mlx5 DC "disconnect/reconnect"; WQEs still run in posting order, so order
 * within the DCI holds across the switch). Each switch is counted in the
 * registry (softverbs-stat dc_switches). A LID that no port has: the
 * packets are lost, no response, as for RC.
 */
static int sv_req_dc(struct sv_qp *qp, struct sv_resp_req *r)
{
    struct sv_swqe *w = r->wqe;

    if ((w->ud_qpn != qp->dc_last_dctn) || (w->ud_dlid != qp->dc_last_dlid)) {
        if (qp->dc_last_dlid != 0) {
            /* relaxed: a counter read by softverbs-stat, owner writes only */
            __atomic_store_n(&qp->shm->dc_switches, qp->shm->dc_switches + 1,
                             __ATOMIC_RELAXED);
        }
        qp->dc_last_dctn = w->ud_qpn;
        qp->dc_last_dlid = w->ud_dlid;
    }
    /* on RoCE the GRH addresses the target (sv_resp_check_qp) */
    if (!sv_port_is_eth(qp->shm->port) &&
        (sv_device_by_lid(w->ud_dlid) == NULL)) {
        return SV_RESP_NORESP;
    }
    r->dc_key = w->dc_key;
    return sv_req_deliver(qp, r, w->ud_qpn);
}

/*
 * A WR run late (sv_mem_deferred_thread) reads its local buffers into a
 * staging copy before the responder takes anything. The program may have
 * unmapped them meanwhile under a registration still alive (a registration
 * cache drops it later; UCX's gtest destroy_entity_after_send frees its
 * buffer with sends outstanding): an HCA then reads the pages the
 * registration pinned and the send succeeds with their old bytes. Those
 * bytes are gone here, so what cannot be read is sent as zeros, and the
 * send succeeds as on hardware instead of failing the QP (UCX's ud_mlx5
 * takes a send error as fatal) or faulting the process. liov becomes the
 * one staging range; *stage_p is to be freed. -1: no memory to stage
 * (a local protection error of the requester).
 */
static int sv_req_stage(struct sv_qp *qp, struct iovec *liov, int *cnt,
                        void **stage_p)
{
    struct iovec dst, piece;
    size_t off;
    int i;

    dst.iov_len  = sv_iov_len(liov, *cnt);
    dst.iov_base = malloc(dst.iov_len ? dst.iov_len : 1);
    if (dst.iov_base == NULL) {
        sv_error("qp 0x%x: no memory to stage %zu bytes", qp->shm->qpn,
                 dst.iov_len);
        return -1;
    }
    if (sv_mem_read(sv_g.pid, &dst, 1, liov, *cnt) != 0) {
        sv_error("qp 0x%x: a local buffer of the WR is no longer mapped: "
                 "its bytes go as zeros", qp->shm->qpn);
        memset(dst.iov_base, 0, dst.iov_len);
        for (i = 0, off = 0; i < *cnt; off += liov[i++].iov_len) {
            piece.iov_base = (char *)dst.iov_base + off;
            piece.iov_len  = liov[i].iov_len;
            (void)sv_mem_read(sv_g.pid, &piece, 1, &liov[i], 1);
        }
    }
    liov[0]  = dst;
    *cnt     = 1;
    *stage_p = dst.iov_base;
    return 0;
}

static int sv_req_execute_iov(struct sv_qp *qp, struct sv_swqe *w,
                              struct iovec *liov, int cnt);

/* Execute one WQE once; returns an sv_resp_status */
static int sv_req_execute(struct sv_qp *qp, struct sv_swqe *w)
{
    struct iovec liov[SV_MAX_SGE + 1];
    void *stage = NULL;
    int need_write, cnt = 0, ret;

    /* local operations: no packet, done in order with the other WQEs
     * (rxe_requester: WR_LOCAL_OP_MASK, rxe_do_local_ops) */
    if ((w->opcode == IBV_WR_BIND_MW) || (w->opcode == IBV_WR_LOCAL_INV)) {
        return sv_mw_local_op(qp, w);
    }
    need_write = (w->opcode == IBV_WR_RDMA_READ) ||
                 (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
                 (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
    if (sv_req_local_iov(qp, w, liov, &cnt, need_write) < 0) {
        return SV_RESP_LOC_PROT;
    }
    if (!need_write && (w->num_sge > 0) && (cnt > 0) &&
        sv_mem_is_deferred() &&
        (sv_req_stage(qp, liov, &cnt, &stage) != 0)) {
        return SV_RESP_LOC_PROT;
    }
    ret = sv_req_execute_iov(qp, w, liov, cnt);
    free(stage);
    return ret;
}

static int sv_req_execute_iov(struct sv_qp *qp, struct sv_swqe *w,
                              struct iovec *liov, int cnt)
{
    struct sv_resp_req r;

    memset(&r, 0, sizeof(r));
    r.qp      = qp;
    r.wqe     = w;
    r.liov    = liov;
    r.liovcnt = cnt;

    if (w->wire && sv_chance(sv_wire_loss(qp, w))) {
        /* SOFTVERBS_WIRE_LOSS: lost on the wire between ports; a reliable
         * requester hears nothing (below), UD and UC lose it */
        return (qp->sv_type == IBV_QPT_UD) ? SV_RESP_ACK : SV_RESP_NORESP;
    }
    if ((qp->sv_type != IBV_QPT_UD) && sv_chance(sv_g.rc_drop)) {
        /* SOFTVERBS_RC_DROP: the request is lost on the wire before the
         * responder saw it, so it runs there once: no response, and the
         * requester sends it again after the ACK timeout while retries
         * are left (IBA 9.7.6.1.3), else RETRY_EXC_ERR; UC loses it
         * (sv_req_handle). A lost ACK, whose request would run twice
         * unless the responder kept PSNs, is not modelled. */
        return SV_RESP_NORESP;
    }
    if (qp->sv_type == SV_QPT_DCI) {
        return sv_req_dc(qp, &r);
    }
    if (qp->sv_type != IBV_QPT_UD) {
        return sv_req_deliver(qp, &r, qp->attr.dest_qp_num);
    }
    /* UD: the Q_Key of the WR, or the QP's if its high bit is set
     * (IBA spec 10.2.5, man ibv_post_send) */
    r.qkey = (w->ud_qkey & SV_QKEY_PRIV) ? qp->shm->qkey : w->ud_qkey;
    if (sv_chance(sv_g.ud_drop)) {
        return SV_RESP_ACK; /* lost on the wire */
    }
    if (sv_port_is_eth(qp->shm->port)) {
        /* RoCE: no LIDs, the GRH addresses the port (sv_resp_check_qp);
         * no multicast on RoCE ports: a multicast GID is lost there */
        if (w->ud_dgid.raw[0] != 0xff) {
            sv_req_deliver(qp, &r, w->ud_qpn);
        }
        return SV_RESP_ACK;
    }
    if (w->ud_dlid >= SV_MCAST_LID_BASE) {
        return sv_req_mcast(qp, &r);
    }
    if (sv_device_by_lid(w->ud_dlid) == NULL) {
        return SV_RESP_ACK; /* no such port: lost */
    }
    sv_req_deliver(qp, &r, w->ud_qpn);
    return SV_RESP_ACK; /* UD is unacknowledged */
}

/* Decide what a response means for the WQE. Returns 1 when the WQE is
 * finished (*status set), 0 when it waits for a timer. */
static int sv_req_handle(struct sv_qp *qp, struct sv_swqe *w, int resp,
                         enum ibv_wc_status *status)
{
    int reliable = sv_qp_reliable(qp->sv_type);
    uint64_t tmo;

    switch (resp) {
    case SV_RESP_ACK:
        *status = IBV_WC_SUCCESS;
        return 1;
    case SV_RESP_RNR:
        if (!reliable) {
            *status = IBV_WC_SUCCESS; /* UC: the message is dropped */
            return 1;
        }
        if (w->rnr_left == 0) {
            *status = IBV_WC_RNR_RETRY_EXC_ERR;
            return 1;
        }
        if (w->rnr_left != 7) { /* 7 means retry forever */
            w->rnr_left--;
        }
        /* the RNR NAK comes back over the wire, and the request sent
         * again crosses it again (sv_wire.c) */
        w->state       = SV_SWQE_WAIT;
        w->deadline_ns = sv_now_ns() + 1000ull *
                         sv_rnr_timer_us[w->rnr_timer & 31] +
                         2 * sv_wire_delay_ns(qp, w);
        return 0;
    case SV_RESP_NORESP:
        if (!reliable) {
            *status = IBV_WC_SUCCESS;
            return 1;
        }
        tmo = sv_ack_timeout_ns(qp->attr.timeout);
        if (tmo != 0) {
            if (w->retry_left == 0) {
                *status = IBV_WC_RETRY_EXC_ERR;
                return 1;
            }
            sv_error("qp 0x%x: no response to wr_id 0x%" PRIx64 ", sent "
                     "again after the ACK timeout (%u retries left)",
                     qp->shm->qpn, w->wr_id, w->retry_left);
            w->retry_left--;
        } else {
            tmo = 1000000; /* infinite timeout: keep retrying every 1 ms */
        }
        w->state       = SV_SWQE_WAIT;
        w->deadline_ns = sv_now_ns() + tmo + sv_wire_delay_ns(qp, w);
        return 0;
    case SV_RESP_NAK_ACCESS:
        *status = IBV_WC_REM_ACCESS_ERR;
        return 1;
    case SV_RESP_NAK_INV:
        *status = IBV_WC_REM_INV_REQ_ERR;
        return 1;
    case SV_RESP_NAK_OP:
        *status = IBV_WC_REM_OP_ERR;
        return 1;
    case SV_RESP_LOC_LEN:
        *status = IBV_WC_LOC_LEN_ERR;
        return 1;
    case SV_RESP_MW_BIND:
        *status = IBV_WC_MW_BIND_ERR;
        return 1;
    case SV_RESP_LOC_QP_OP:
        *status = IBV_WC_LOC_QP_OP_ERR;
        return 1;
    case SV_RESP_LOC_PROT:
    default:
        *status = IBV_WC_LOC_PROT_ERR;
        return 1;
    }
}

/* Whether a posted WQE has reached the far end of its wire (sv_wire.c):
 * 1 when it may be executed now */
static int sv_req_due(struct sv_swqe *w)
{
    if (SV_LIKELY(w->due_ns == 0)) {
        return 1;
    }
    if (sv_now_ns() < w->due_ns) {
        return 0;
    }
    w->due_ns = 0;
    return 1;
}

static int sv_req_is_read_or_atomic(const struct sv_swqe *w)
{
    return (w->opcode == IBV_WR_RDMA_READ) ||
           (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
           (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/* w was executed with the answer status: DONE until the answer is back
 * (one delay, for a reliable request that crossed a wire: sv_wire.c) and
 * w is at the head */
static void sv_req_set_done(struct sv_qp *qp, struct sv_swqe *w,
                            enum ibv_wc_status status)
{
    uint64_t back = sv_qp_reliable(qp->sv_type) ?
                    sv_wire_delay_ns(qp, w) : 0;

    w->state       = SV_SWQE_DONE;
    w->done_status = (uint8_t)status;
    w->deadline_ns = (back != 0) ? sv_now_ns() + back : 0;
}

/* Whether a DONE WQE's answer is back; if not, a poll of any CQ of the
 * process runs the requesters when it is (sv_wire_wait) */
static int sv_req_answered(struct sv_swqe *w)
{
    if (SV_LIKELY(w->deadline_ns == 0) || (sv_now_ns() >= w->deadline_ns)) {
        return 1;
    }
    sv_wire_wait(w->deadline_ns);
    return 0;
}

/*
 * RC ordering: a SEND or RDMA WRITE posted after an RDMA READ or ATOMIC may
 * be executed before it (an HCA starts the next request while the read
 * response is outstanding), unless it carries the fence indicator, which
 * holds it until every earlier read and atomic has completed
 * (ibv_post_send(3), IBV_SEND_FENCE). With SOFTVERBS_RC_READ_REORDER a read
 * or atomic is held once, as if its response were late: the request posted
 * after it, if it may pass, is executed first; completions stay in order
 * (the early one is marked DONE). Returns 1 to leave the read for the next
 * call (the next post or poll), which executes it.
 */
static int sv_req_overtake_read(struct sv_qp *qp, uint32_t i,
                                struct sv_swqe *w)
{
    struct sv_swqe *w2;

    if (!sv_qp_reliable(qp->sv_type) ||
        (w->state != SV_SWQE_POSTED) || !sv_req_is_read_or_atomic(w)) {
        return 0;
    }
    if (!w->held) {
        if (!sv_chance(sv_g.rc_read_reorder)) {
            return 0;
        }
        w->held = 1;
        if (qp->sq_tail - i < 2) {
            return 1; /* nothing after it yet: wait for the next call */
        }
    } else if (qp->sq_tail - i < 2) {
        return 0; /* held once already and nothing came: execute it */
    }
    w2 = sv_sq_wqe(qp, i + 1);
    if ((w2->state != SV_SWQE_POSTED) || sv_req_is_read_or_atomic(w2) ||
        (w2->send_flags & IBV_SEND_FENCE) || !sv_req_due(w2)) {
        return 0;
    }
    /* Kept only if it went through; else it runs again in its turn (an RNR
     * or lost request placed nothing) */
    if (sv_req_execute(qp, w2) == SV_RESP_ACK) {
        sv_req_set_done(qp, w2, IBV_WC_SUCCESS);
    }
    return 0;
}

static void sv_req_update_pending(struct sv_qp *qp)
{
    int pending = (qp->sq_head != qp->sq_tail);

    if (pending != qp->sq_pending) {
        qp->sq_pending = pending;
        if (pending) {
            __atomic_fetch_add(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_sub(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
        }
    }
}

/* Complete the head w with status; 0 when the queue stops there (an
 * error took the QP to SQE or ERR) */
static int sv_req_finish(struct sv_qp *qp, struct sv_swqe *w,
                         enum ibv_wc_status status)
{
    sv_comp_wqe(qp, w, status);
    if (status == IBV_WC_SUCCESS) {
        return 1;
    }
    sv_error("qp 0x%x: wr_id 0x%lx failed: %s", qp->shm->qpn,
             (unsigned long)w->wr_id, ibv_wc_status_str(status));
    if (!sv_qp_reliable(qp->sv_type)) {
        /* UC/UD: a send error takes the QP to SQE, the receive queue keeps
         * working (IBA spec 10.3.1, SQ Error state) */
        sv_qp_move_to_err(qp, IBV_QPS_SQE);
        return 0;
    }
    /* a completion error moves the QP to the error state and flushes the
     * rest (IBA spec 10.7.3.1, man ibv_poll_cq) */
    sv_qp_move_to_err(qp, IBV_QPS_ERR);
    /* a QP on an SRQ reports reaching ERR, whatever took it there (man
     * ibv_get_async_event: IBV_EVENT_QP_LAST_WQE_REACHED) */
    if (qp->srq != NULL) {
        sv_ev_async(qp->shm->ctx_id, SV_EV_QP, IBV_EVENT_QP_LAST_WQE_REACHED,
                    qp->index, qp->shm->cookie);
    }
    return 0;
}

/* Execute the WQE at position i (not yet executed, due): 1 when it was
 * (DONE now), 0 when it waits (a timer, or a read held) */
static int sv_req_step(struct sv_qp *qp, uint32_t i, struct sv_swqe *w)
{
    enum ibv_wc_status status;
    struct sv_swqe *w2;

    /* UD reordering: the next datagram overtakes this one */
    if ((qp->sv_type == IBV_QPT_UD) && (qp->sq_tail - i > 1) &&
        sv_chance(sv_g.ud_reorder)) {
        w2 = sv_sq_wqe(qp, i + 1);
        if ((w2->state == SV_SWQE_POSTED) && sv_req_due(w2)) {
            sv_req_execute(qp, w2);
            sv_req_set_done(qp, w2, IBV_WC_SUCCESS);
        }
    }
    if (sv_req_overtake_read(qp, i, w)) {
        return 0;
    }
    if (!sv_req_handle(qp, w, sv_req_execute(qp, w), &status)) {
        return 0; /* timer running */
    }
    sv_req_set_done(qp, w, status);
    return 1;
}

int sv_req_progress(struct sv_qp *qp)
{
    struct sv_swqe *w;
    uint32_t st, i;

    pthread_mutex_lock(&qp->lock);
    i = qp->sq_head;
    while (i != qp->sq_tail) {
        st = sv_qp_state(qp->shm);
        if ((st == IBV_QPS_ERR) || (st == IBV_QPS_SQE)) {
            sv_comp_flush_sq(qp);
            break;
        }
        if (st == IBV_QPS_SQD) {
            break; /* drained: new WRs wait for the return to RTS */
        }
        w = sv_sq_wqe(qp, i);
        if (w->state == SV_SWQE_DONE) {
            if ((i == qp->sq_head) && sv_req_answered(w)) {
                if (!sv_req_finish(qp, w,
                                   (enum ibv_wc_status)w->done_status)) {
                    break;
                }
                i = qp->sq_head;
                continue;
            }
            if (w->done_status != IBV_WC_SUCCESS) {
                break; /* nothing past an error: the QP fails when it
                          completes */
            }
            ++i; /* executed; completes in its turn */
            continue;
        }
        if (w->state == SV_SWQE_WAIT) {
            if (sv_now_ns() < w->deadline_ns) {
                break;
            }
            w->state = SV_SWQE_POSTED;
        }
        if (!sv_req_due(w)) {
            /* still on the wire; the WQEs behind it wait */
            sv_wire_wait(w->due_ns);
            break;
        }
        if ((i != qp->sq_head) && (w->send_flags & IBV_SEND_FENCE)) {
            /* fenced: not before every earlier read and atomic completed
             * (ibv_post_send(3)); here, every earlier WQE */
            break;
        }
        if (!sv_req_step(qp, i, w)) {
            break;
        }
        /* DONE now: completed above if at the head with its answer back */
    }
    sv_req_update_pending(qp);
    pthread_mutex_unlock(&qp->lock);
    return 0;
}
