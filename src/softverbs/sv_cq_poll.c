/*
 * softverbs completion queues: polling, by the owner only. A poll first
 * runs the requesters of the CQ's QPs with unfinished work (their RNR and
 * retry timers; those of the process's other CQs at most every 0.1 ms)
 * and the flushes a responder asked for, then pops the CQEs:
 * ibv_poll_cq and the ibv_cq_ex interface (ibv_start_poll and the
 * ibv_wc_read_* functions). A QP that goes to RESET has its CQEs cleaned
 * out here too. And the owner's wait for a CQ's events: completion
 * channels (ibv_create_comp_channel(3)), whose ibv_get_cq_event runs the
 * process's requesters while it waits; the producers and the arming that
 * send the events are sv_cq_push.c's, below.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>

/* ---------------------------------------------------------------------
 * Polling (owner)
 * ------------------------------------------------------------------- */
static void sv_cq_progress(struct sv_cq *cq)
{
    int i;

    if (__atomic_load_n(&cq->sq_pending, __ATOMIC_RELAXED)) {
        for (i = 0; i < cq->nqps; i++) {
            if (cq->qps[i]->scq == cq && cq->qps[i]->sq_pending) {
                sv_req_progress(cq->qps[i]);
            }
        }
    }
    if (__atomic_load_n(&cq->shm->flush_req, __ATOMIC_RELAXED)) {
        __atomic_store_n(&cq->shm->flush_req, 0, __ATOMIC_RELAXED);
        for (i = 0; i < cq->nqps; i++) {
            struct sv_qp *qp = cq->qps[i];
            /* moved to ERR by a responder (sv_resp.c): the owner flushes
             * its send queue */
            if (sv_qp_state(qp->shm) == IBV_QPS_ERR) {
                sv_qp_to_err(qp);
            }
        }
    }
}

/* A send WQE frees its slot when its completion (or a later one of the
 * same QP) is polled, as on an HCA; s: its QP's registry entry, NULL
 * when gone (sv_cq_drop_stale looked it up) */
static void sv_cq_retire(struct sv_shm_qp *s, struct sv_cqe *c)
{
    struct sv_qp *qp;

    if ((s != NULL) && (s->pid == sv_g.pid)) {
        qp = sv_qp((struct ibv_qp *)(uintptr_t)s->cookie);
        /* Only forward, and not past what was posted: a CQE of an earlier
         * life of the QP (before a RESET, which sv_cq_clean missed because
         * it was produced meanwhile) would otherwise make the send queue
         * look full (sq_tail - sq_retired wraps) */
        if ((uint32_t)(c->src_qp + 1 - qp->sq_retired) <=
            (uint32_t)(qp->sq_tail - qp->sq_retired)) {
            /* release: pairs with the acquire in sv_post_one */
            __atomic_store_n(&qp->sq_retired, c->src_qp + 1,
                             __ATOMIC_RELEASE);
        }
    }
    c->src_qp = 0;
}

/*
 * Give a receive WQE an SRQ lent to a reset QP back to the SRQ, as
 * __mlx5_cq_clean does (mlx5_free_srq_wqe: the WQE returns to the SRQ's
 * free list). The SRQ's ring keeps the WQE's copy in its slot until the
 * owner posts over it (tail - pos > size): then, or when the SRQ is full,
 * it cannot be given back and 0 is returned.
 */
static int sv_cq_clean_srq_wqe(struct sv_srq *srq, const struct sv_cqe *c)
{
    struct sv_rq_hdr *rq = srq->ring;
    struct ibv_sge sge[SV_MAX_SGE];
    struct ibv_recv_wr wr, *bad;
    struct sv_rwqe *w;
    int ret = 0;

    pthread_mutex_lock(&srq->lock);
    w = sv_rq_wqe(rq, c->rq_pos);
    if (((uint32_t)((uint32_t)rq->tail - c->rq_pos) <= rq->size) &&
        (w->wr_id == c->wr_id) && (w->num_sge <= rq->max_sge)) {
        memset(&wr, 0, sizeof(wr));
        memcpy(sge, w->sge, w->num_sge * sizeof(sge[0]));
        wr.wr_id   = w->wr_id;
        wr.sg_list = sge;
        wr.num_sge = (int)w->num_sge;
        ret        = (sv_rq_post(rq, &wr, &bad) == 0);
    }
    pthread_mutex_unlock(&srq->lock);
    return ret;
}

/* The CQE in slot is of an ended life of its QP (qp: that QP, or NULL
 * where it is gone or another process's): dropped (1), or, a receive whose
 * SRQ WQE cannot be given back, turned into a flush (0), so that its
 * buffer is not lost */
static int sv_cq_clean_slot(struct sv_qp *qp, struct sv_cq_slot *slot)
{
    if (slot->h.is_send || (qp == NULL) || (qp->srq == NULL) ||
        sv_cq_clean_srq_wqe(qp->srq, &slot->h)) {
        slot->h.cleaned = SV_CQE_DROPPED;
        return 1;
    }
    slot->h.cleaned  = SV_CQE_FLUSHED;
    slot->h.status   = IBV_WC_WR_FLUSH_ERR;
    slot->h.byte_len = 0;
    slot->h.wc_flags = 0;
    slot->h.inl_nsge = 0;
    slot->h.inl_len  = 0;
    return 0;
}

/*
 * A CQE made for a life of its QP that has ended: a responder checked the
 * QP's state before a reset and pushed after the reset's sweep (no lock of
 * the reset's is taken on that path, sv_resp.c), or a producer had not yet
 * published a slot the sweep stopped at. mlx5 finds none (the HCA writes
 * no CQE for a QP in RESET, and __mlx5_cq_clean removes the rest); a QP
 * pool's reused QP would see its former peer's message as its new peer's.
 * Dropped here as the sweep would have (1), or kept as a flush (0); also
 * where the QP was destroyed (mlx5_destroy_qp cleans its CQs). *s_p: the
 * QP's registry entry, NULL when gone (a flush's is not looked up), for
 * sv_cq_retire: one lookup a CQE.
 */
static int sv_cq_drop_stale(struct sv_cq_slot *slot, struct sv_shm_qp **s_p)
{
    struct sv_shm_qp *s;
    struct sv_qp *qp = NULL;

    *s_p = NULL;
    if (slot->h.cleaned == SV_CQE_FLUSHED) {
        return 0;
    }
    s    = sv_shm_qp_lookup(slot->h.qp_num);
    *s_p = s;
    /* acquire: pairs with the release store of a reset's new life */
    if ((s != NULL) &&
        (__atomic_load_n(&s->life, __ATOMIC_ACQUIRE) == slot->h.life)) {
        return 0;
    }
    if ((s != NULL) && (s->pid == sv_g.pid)) {
        qp = sv_qp((struct ibv_qp *)(uintptr_t)s->cookie);
    }
    return sv_cq_clean_slot(qp, slot);
}

/*
 * A QP of this process went to RESET: what its earlier life left in cq is
 * not returned, as rdma-core's mlx5 provider removes a reset QP's CQEs
 * from its CQs (mlx5_modify_qp -> mlx5_cq_clean -> __mlx5_cq_clean),
 * which users of a QP pool rely on (a reused QP must not see its former
 * requests complete). Send CQEs and receive CQEs of the QP's own receive
 * queue are dropped (the RQ is emptied by the reset too: its buffers are
 * the application's again). A receive CQE of an SRQ gives its WQE back to
 * the SRQ (mlx5_free_srq_wqe), posted again from the SRQ ring's copy; only
 * when that copy was posted over, or the SRQ is full, is it returned
 * flushed (IBV_WC_WR_FLUSH_ERR, no data) so that its buffer is not lost.
 */
void sv_cq_clean(struct sv_cq *cq, struct sv_qp *qp)
{
    uint32_t qpn = qp->shm->qpn;
    struct sv_cq_hdr *ring;
    struct sv_cq_slot *slot;
    uint64_t h;

    pthread_mutex_lock(&cq->lock);
    ring = cq->ring;
    for (h = ring->head; ; ++h) {
        slot = &cq->slots[h & (ring->size - 1)];
        /* acquire: pairs with the producer's release store of seq; a CQE
         * of the ended life published after this sweep (or behind a slot
         * not yet published) is dropped when polled (sv_cq_drop_stale) */
        if (__atomic_load_n(&slot->h.seq, __ATOMIC_ACQUIRE) != h + 1) {
            break;
        }
        if ((slot->h.qp_num != qpn) || (slot->h.cleaned != SV_CQE_LIVE)) {
            continue;
        }
        (void)sv_cq_clean_slot(qp, slot);
    }
    pthread_mutex_unlock(&cq->lock);
}

static int sv_cq_pop(struct sv_cq *cq, struct sv_cqe *out)
{
    struct sv_cq_hdr *ring = cq->ring;
    uint64_t h = ring->head;
    struct sv_cq_slot *slot = &cq->slots[h & (ring->size - 1)];
    struct sv_shm_qp *s = NULL;
    uint32_t i, off = 0, n;

    /* acquire: pairs with the producer's release store of seq */
    if (__atomic_load_n(&slot->h.seq, __ATOMIC_ACQUIRE) != h + 1) {
        return 0;
    }
    while ((slot->h.cleaned == SV_CQE_DROPPED) ||
           sv_cq_drop_stale(slot, &s)) {
        /* release: the slot is the producers' again (sv_cq_clean) */
        __atomic_store_n(&ring->head, ++h, __ATOMIC_RELEASE);
        slot = &cq->slots[h & (ring->size - 1)];
        if (__atomic_load_n(&slot->h.seq, __ATOMIC_ACQUIRE) != h + 1) {
            return 0;
        }
    }
    *out = slot->h;
    cq->cur_ts = slot->inl.ts;
    for (i = 0; (i < out->inl_nsge) && (i < SV_CQE_INL_SGE); i++) {
        n = slot->inl.len[i];
        if (off + n > out->inl_len) {
            n = out->inl_len - off;
        }
        memcpy((void *)(uintptr_t)slot->inl.va[i], slot->inl.data + off, n);
        off += n;
    }
    /* release: slot fully read before producers may reuse it */
    __atomic_store_n(&ring->head, h + 1, __ATOMIC_RELEASE);
    if (out->is_send) {
        sv_cq_retire(s, out); /* a send CQE is never a flush: s looked up */
    }
    return 1;
}

static void sv_cqe_to_wc(const struct sv_cqe *c, struct ibv_wc *wc)
{
    wc->wr_id          = c->wr_id;
    wc->status         = c->status;
    wc->opcode         = c->opcode;
    wc->vendor_err     = c->vendor_err;
    wc->byte_len       = c->byte_len;
    wc->imm_data       = c->imm_data;
    wc->qp_num         = c->qp_num;
    wc->src_qp         = c->src_qp;
    wc->wc_flags       = c->wc_flags;
    wc->pkey_index     = c->pkey_index;
    wc->slid           = c->slid;
    wc->sl             = c->sl;
    wc->dlid_path_bits = c->dlid_path_bits;
}

/*
 * Nothing to poll: no local requester has unfinished work on this CQ, no
 * flush was asked for, and the next slot is not written. Reads without the
 * lock, only to skip it: a CQE published meanwhile is found by the next
 * poll, as one that lands just after an HCA's CQ was read.
 */
static int sv_cq_idle(struct sv_cq *cq)
{
    return !__atomic_load_n(&cq->sq_pending, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&cq->shm->flush_req, __ATOMIC_RELAXED) &&
           !sv_cq_holds_cqe(cq);
}

/*
 * The RNR and retry timers of this process's requesters on other CQs. An
 * HCA retransmits by itself, as rxe's retransmit and RNR NAK timers fire
 * with nobody polling (rxe_comp.c, rxe_req.c); here a requester runs in
 * its owner's verbs calls only, and a program may poll one CQ while a
 * request of a QP on another CQ waits for its timer:
 * ibv_xsrq_pingpong polls its receive CQ until every message has come, and
 * its first (unsignaled) send, which reached the peer's XRC target before
 * the peer moved it to RTR, was never sent again: both sides hung. So a
 * poll of any CQ runs them too, at most once per SV_CQ_SWEEP_NS for the
 * process (those of the CQ polled run at every poll: sv_cq_progress).
 * Called without the CQ's lock: sv_cq_progress_all takes the list's lock,
 * then each CQ's.
 */
#define SV_CQ_SWEEP_NS 100000ull /* below the retry timeout's 1 ms steps */
static uint64_t sv_cq_sweep_due;

static void sv_cq_sweep_others(const struct sv_cq *cq)
{
    uint64_t now, due;

    if (SV_LIKELY(__atomic_load_n(&sv_g.sq_pending_qps, __ATOMIC_RELAXED) <=
                  __atomic_load_n(&cq->sq_pending, __ATOMIC_RELAXED))) {
        return; /* none, or only the polled CQ's */
    }
    now = sv_now_ns();
    if (sv_wire_take_due(now)) {
        /* a head waiting on the wire is due (sv_wire.c): at its time, not
         * at the next period */
        sv_cq_progress_all();
        return;
    }
    due = __atomic_load_n(&sv_cq_sweep_due, __ATOMIC_RELAXED);
    /* one thread sweeps per period */
    if ((now < due) ||
        !__atomic_compare_exchange_n(&sv_cq_sweep_due, &due,
                                     now + SV_CQ_SWEEP_NS, 0,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        return;
    }
    sv_cq_progress_all();
}

int sv_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
    struct sv_cq *cq = sv_cq(ibcq);
    struct sv_cqe c;
    int n = 0;

    if (num < 0) {
        return -1;
    }
    sv_cq_sweep_others(cq);
    if (sv_cq_idle(cq)) {
        return 0;
    }
    pthread_mutex_lock(&cq->lock);
    sv_cq_progress(cq);
    while ((n < num) && sv_cq_pop(cq, &c)) {
        sv_cqe_to_wc(&c, &wc[n++]);
    }
    pthread_mutex_unlock(&cq->lock);
    return n;
}

/* Run the requesters of every local CQ: a process blocked waiting for a
 * completion event still has its RNR/retry timers evaluated
 * (ibv_get_cq_event, below) */
void sv_cq_progress_all(void)
{
    struct sv_cq *cq;

    pthread_mutex_lock(&sv_g.cq_list_lock);
    for (cq = sv_g.cq_list; cq != NULL; cq = cq->next) {
        if (__atomic_load_n(&cq->sq_pending, __ATOMIC_RELAXED)) {
            pthread_mutex_lock(&cq->lock);
            sv_cq_progress(cq);
            pthread_mutex_unlock(&cq->lock);
        }
    }
    pthread_mutex_unlock(&sv_g.cq_list_lock);
}

/* ibv_cq_ex polling interface */
/* Pop the next CQE into cq->cur (after running the requesters when asked) */
static int sv_cq_poll_next(struct ibv_cq_ex *cqx, int progress)
{
    struct sv_cq *cq = (struct sv_cq *)cqx;
    int ret;

    if (progress) {
        sv_cq_sweep_others(cq);
    }
    pthread_mutex_lock(&cq->lock);
    if (progress) {
        sv_cq_progress(cq);
    }
    ret = sv_cq_pop(cq, &cq->cur);
    pthread_mutex_unlock(&cq->lock);
    if (!ret) {
        return ENOENT;
    }
    cqx->wr_id  = cq->cur.wr_id;
    cqx->status = cq->cur.status;
    return 0;
}

static int sv_cq_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *a)
{
    return sv_cq_poll_next(cqx, 1);
}

static int sv_cq_next_poll(struct ibv_cq_ex *cqx)
{
    return sv_cq_poll_next(cqx, 0);
}

static void sv_cq_end_poll(struct ibv_cq_ex *cqx)
{
}

#define SV_CQ_READ(_name, _type, _field) \
    static _type sv_cq_read_##_name(struct ibv_cq_ex *cqx) \
    { \
        return (_type)((struct sv_cq *)cqx)->cur._field; \
    }
SV_CQ_READ(opcode, enum ibv_wc_opcode, opcode)
SV_CQ_READ(vendor_err, uint32_t, vendor_err)
SV_CQ_READ(byte_len, uint32_t, byte_len)
SV_CQ_READ(imm_data, __be32, imm_data)
SV_CQ_READ(qp_num, uint32_t, qp_num)
SV_CQ_READ(src_qp, uint32_t, src_qp)
SV_CQ_READ(wc_flags, unsigned int, wc_flags)
SV_CQ_READ(slid, uint32_t, slid)
SV_CQ_READ(sl, uint8_t, sl)
SV_CQ_READ(dlid_path_bits, uint8_t, dlid_path_bits)

/* ibv_wc_read_completion_ts: device clock cycles (ns, see SV_CLOCK_KHZ) */
static uint64_t sv_cq_read_completion_ts(struct ibv_cq_ex *cqx)
{
    return ((struct sv_cq *)cqx)->cur_ts & SV_TS_MASK;
}

/* ibv_wc_read_completion_wallclock_ns: the same instant on CLOCK_REALTIME */
static uint64_t sv_cq_read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
    struct timespec rt;
    uint64_t mono, real;

    mono = sv_now_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    real = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    return real - (mono - ((struct sv_cq *)cqx)->cur_ts);
}

/* The ibv_cq_ex polling functions of a new CQ; the timestamp readers for
 * the wc_flags that asked for them */
void sv_cq_init_poll_ex(struct sv_cq *cq, uint64_t wc_flags)
{
    cq->cq.start_poll          = sv_cq_start_poll;
    cq->cq.next_poll           = sv_cq_next_poll;
    cq->cq.end_poll            = sv_cq_end_poll;
    cq->cq.read_opcode         = sv_cq_read_opcode;
    cq->cq.read_vendor_err     = sv_cq_read_vendor_err;
    cq->cq.read_byte_len       = sv_cq_read_byte_len;
    cq->cq.read_imm_data       = sv_cq_read_imm_data;
    cq->cq.read_qp_num         = sv_cq_read_qp_num;
    cq->cq.read_src_qp         = sv_cq_read_src_qp;
    cq->cq.read_wc_flags       = sv_cq_read_wc_flags;
    cq->cq.read_slid           = sv_cq_read_slid;
    cq->cq.read_sl             = sv_cq_read_sl;
    cq->cq.read_dlid_path_bits = sv_cq_read_dlid_path_bits;
    if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) {
        cq->cq.read_completion_ts = sv_cq_read_completion_ts;
    }
    if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
        cq->cq.read_completion_wallclock_ns =
            sv_cq_read_completion_wallclock_ns;
    }
}

/* ---------------------------------------------------------------------
 * Completion channels
 * ------------------------------------------------------------------- */
SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
    struct sv_comp_channel *ch;

    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->ch.context = ctx;
    ch->ch.fd      = sv_ev_open('c', &ch->ch_id);
    if (ch->ch.fd < 0) {
        free(ch);
        return NULL;
    }
    return &ch->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    struct sv_comp_channel *ch = (struct sv_comp_channel *)channel;

    if (channel->refcnt) {
        return EBUSY;
    }
    close(channel->fd);
    sv_ev_close('c', ch->ch_id);
    free(ch);
    return 0;
}

static ssize_t sv_cq_event_recv(int fd, struct sv_ev_msg *msg)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int ret;

    for (;;) {
        if (!__atomic_load_n(&sv_g.sq_pending_qps, __ATOMIC_RELAXED)) {
            return recv(fd, msg, sizeof(*msg), 0);
        }
        sv_cq_progress_all();
        if (fcntl(fd, F_GETFL) & O_NONBLOCK) {
            return recv(fd, msg, sizeof(*msg), 0);
        }
        ret = poll(&pfd, 1, 1);
        if (ret > 0) {
            return recv(fd, msg, sizeof(*msg), 0);
        }
        if ((ret < 0) && (errno != EINTR)) {
            return -1;
        }
    }
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
                               struct ibv_cq **cq_out, void **cq_context)
{
    struct sv_ev_msg msg;
    struct sv_shm_cq *scq;
    struct ibv_cq *cq;
    ssize_t n;

    for (;;) {
        n = sv_cq_event_recv(channel->fd, &msg);
        if (n < 0) {
            return -1;
        }
        /* a kick (SV_EV_KICK) is dropped below, after the refill that
         * put its event in the socket */
        sv_ev_refill('c', ((struct sv_comp_channel *)channel)->ch_id);
        if ((n != sizeof(msg)) || (msg.kind != SV_EV_COMP) ||
            (msg.index >= SV_CQ_TBL)) {
            continue;
        }
        scq = &sv_g.shm->cqs[msg.index];
        if (!scq->in_use || (scq->cookie != msg.cookie) ||
            (scq->pid != sv_g.pid)) {
            continue; /* CQ destroyed meanwhile */
        }
        cq          = (struct ibv_cq *)(uintptr_t)msg.cookie;
        pthread_mutex_lock(&cq->mutex);
        sv_cq(cq)->comp_events_reported++;
        pthread_mutex_unlock(&cq->mutex);
        *cq_out     = cq;
        *cq_context = cq->cq_context;
        return 0;
    }
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
