/*
 * softverbs completion queues and completion channels.
 *
 * A CQ is a ring in the shared registry: any process may push a CQE
 * (claiming a slot by CAS on the tail), only the owner polls it.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <sched.h>

#define SV_CQ_WC_TS    (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
                        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SV_CQ_WC_FLAGS (IBV_WC_STANDARD_FLAGS | SV_CQ_WC_TS)

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
    free(ch);
    return 0;
}

static void sv_cq_progress(struct sv_cq *cq);

/* Run the requesters of every local CQ: a process blocked waiting for a
 * completion event still has its RNR/retry timers evaluated */
static void sv_cq_progress_all(void)
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

/* ---------------------------------------------------------------------
 * CQE production (any process)
 * ------------------------------------------------------------------- */
static void sv_cq_notify(struct sv_shm_cq *scq, uint32_t index, int solicited)
{
    struct sv_ev_msg msg;
    uint32_t armed;

    /* seq_cst fence: the CQE just published must be visible before armed is
     * read. Paired with the fence in sv_req_notify_cq (store armed, then
     * the consumer polls): without both, the producer can read armed == 0
     * while the consumer, having armed, still sees an empty CQ (store-load
     * reordering), and the wakeup is lost */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&scq->armed, __ATOMIC_RELAXED)) {
        return;
    }
    /* acq_rel: one producer wins the arming, after its CQE is published */
    armed = __atomic_exchange_n(&scq->armed, 0, __ATOMIC_ACQ_REL);
    if ((armed == 2) && !solicited) {
        /* solicited-only arming stays until a solicited completion */
        uint32_t zero = 0;
        __atomic_compare_exchange_n(&scq->armed, &zero, 2, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return;
    }
    if (armed && scq->ch_id) {
        memset(&msg, 0, sizeof(msg));
        msg.kind   = SV_EV_COMP;
        msg.index  = index;
        msg.cookie = scq->cookie;
        sv_ev_send('c', scq->ch_id, &msg);
    }
}

/* A producer found the ring closed by ibv_resize_cq: the ring that
 * replaces it, once its owner published it (NULL: the CQ is gone, or its
 * owner died in the middle of the resize) */
static struct sv_cq_hdr *sv_cq_push_wait_ring(struct sv_shm_cq *scq,
                                              struct sv_cq_hdr *closed)
{
    struct sv_cq_hdr *ring;
    unsigned spins = 0;

    for (;;) {
        if (!__atomic_load_n(&scq->in_use, __ATOMIC_ACQUIRE)) {
            return NULL;
        }
        /* acquire: pairs with the resizer's release store of ring_off */
        ring = sv_shm_ptr(__atomic_load_n(&scq->ring_off, __ATOMIC_ACQUIRE));
        if (ring != closed) {
            return ring;
        }
        if ((++spins % 4096) == 0 && !sv_proc_alive(scq->proc, scq->pid)) {
            return NULL;
        }
        sched_yield();
    }
}

int sv_cq_push(uint32_t cq_index, const struct sv_cqe *cqe,
               const struct sv_cqe_inl *inl, int solicited)
{
    struct sv_shm_cq *scq = &sv_g.shm->cqs[cq_index];
    struct sv_cq_hdr *ring;
    struct sv_cq_slot *slot;
    uint64_t t, h;

    /* acquire: the ring offset is valid once in_use is seen */
    if (!__atomic_load_n(&scq->in_use, __ATOMIC_ACQUIRE)) {
        return -1;
    }
    /* acquire: the ring is complete once its offset is seen (a resize
     * publishes a new one, sv_cq_ring.c) */
    ring = sv_shm_ptr(__atomic_load_n(&scq->ring_off, __ATOMIC_ACQUIRE));
    for (;;) {
        /*
         * Tail is read before head, so that tail - head never overstates
         * the entries waiting (the consumer can only have moved head on
         * since tail was read), and a difference that wraps (head overtook
         * the tail read, while this producer was descheduled between the two
         * reads) is read again. Before, a tail left from an earlier read was
         * compared with a newer head: the unsigned difference wrapped into a
         * false overrun and a CQE was dropped from a CQ with room
         * (oversubscribed 8-rank MPI jobs stalled).
         * acquire: the head load is not moved before the tail load.
         */
        t = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
        if (SV_UNLIKELY(t & SV_CQ_TAIL_CLOSED)) {
            /* being resized: push into the ring that replaces it */
            ring = sv_cq_push_wait_ring(scq, ring);
            if (ring == NULL) {
                return -1;
            }
            continue;
        }
        /*
         * The consumer's head is read only when the head a producer read
         * last (head_seen, on the tail's cache line) shows no room: the
         * consumer writes head on every poll, and reading it on every push
         * moved its cache line between the two processes once per CQE
         * (about half of this function's time in an 8-byte am_bw). As
         * head_seen <= head, the room it shows is there. A head_seen
         * beyond this tail read (stored by a producer that read a newer
         * tail) makes t - h wrap: head is read then.
         * acquire: pairs with the release store of head_seen, made after
         * an acquire load of head (the consumer has read those slots).
         */
        h = __atomic_load_n(&ring->head_seen, __ATOMIC_ACQUIRE);
        if (t - h >= ring->cqe) {
            /* acquire: the consumer has read the slot before moving head */
            h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
            if ((int64_t)(t - h) < 0) {
                continue;
            }
            if (t - h >= ring->cqe) {
                /* head was read after tail: the CQ really was full */
                if (!__atomic_exchange_n(&scq->overrun, 1,
                                         __ATOMIC_RELAXED)) {
                    sv_ev_async(scq->ctx_id, SV_EV_CQ, IBV_EVENT_CQ_ERR,
                                cq_index, scq->cookie);
                    /* Said once per CQ whatever SOFTVERBS_DEBUG says, as
                     * mlx5's driver warns of a CQ error in the kernel log:
                     * the completion is lost, and an owner that does not
                     * read async events would not know why */
                    sv_warn("cq %u overrun: %u "
                            "completions queued, the CQ's capacity; this "
                            "and later completions that find it full are "
                            "lost (IBV_EVENT_CQ_ERR)", cq_index,
                            (unsigned)(t - h));
                } else {
                    sv_error("cq %u overrun", cq_index);
                }
                return -1;
            }
            __atomic_store_n(&ring->head_seen, h, __ATOMIC_RELEASE);
        }
        if (__atomic_compare_exchange_n(&ring->tail, &t, t + 1, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            break;
        }
    }
    slot = (struct sv_cq_slot *)(ring + 1) + (t & (ring->size - 1));
    if (cqe->inl_len) {
        memcpy(&slot->inl, inl, offsetof(struct sv_cqe_inl, data) +
               cqe->inl_len);
    }
    if (scq->ts) {
        /* completion timestamp: when the CQE is written, as an HCA stamps
         * it (the clock is host-wide, so any producer process may) */
        slot->inl.ts = sv_now_ns();
    }
    /* The header last, right before seq on its cache line: x86 commits
     * stores in order, so a header written first waited in the cache for
     * the payload's lines, and a consumer polling seq took that line away
     * in between: the seq store then had to fetch it again */
    memcpy((char *)&slot->h + sizeof(slot->h.seq), (const char *)cqe +
           sizeof(cqe->seq), sizeof(*cqe) - sizeof(cqe->seq));
    /* release: the CQE body is visible before the consumer sees seq */
    __atomic_store_n(&slot->h.seq, t + 1, __ATOMIC_RELEASE);
    sv_cq_notify(scq, cq_index, solicited);
    return 0;
}

/* ---------------------------------------------------------------------
 * Local QP bookkeeping (progress and flushing driven by poll_cq)
 * ------------------------------------------------------------------- */
void sv_cq_add_qp(struct sv_cq *cq, struct sv_qp *qp)
{
    struct sv_qp **n;

    pthread_mutex_lock(&cq->lock);
    if (cq->nqps == cq->qps_cap) {
        n = realloc(cq->qps, sizeof(*n) * (cq->qps_cap * 2 + 4));
        if (n == NULL) {
            pthread_mutex_unlock(&cq->lock);
            return;
        }
        cq->qps     = n;
        cq->qps_cap = cq->qps_cap * 2 + 4;
    }
    cq->qps[cq->nqps++] = qp;
    pthread_mutex_unlock(&cq->lock);
}

void sv_cq_del_qp(struct sv_cq *cq, struct sv_qp *qp)
{
    int i;

    pthread_mutex_lock(&cq->lock);
    for (i = 0; i < cq->nqps; i++) {
        if (cq->qps[i] == qp) {
            cq->qps[i] = cq->qps[--cq->nqps];
            break;
        }
    }
    pthread_mutex_unlock(&cq->lock);
}

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
 * same QP) is polled, as on an HCA */
static void sv_cq_retire(struct sv_cqe *c)
{
    struct sv_shm_qp *s = sv_shm_qp_lookup(c->qp_num);
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
         * published after this sweep is not the reset QP's any more */
        if (__atomic_load_n(&slot->h.seq, __ATOMIC_ACQUIRE) != h + 1) {
            break;
        }
        if ((slot->h.qp_num != qpn) || slot->h.cleaned) {
            continue;
        }
        if (slot->h.is_send || (qp->srq == NULL) ||
            sv_cq_clean_srq_wqe(qp->srq, &slot->h)) {
            slot->h.cleaned = 1;
        } else {
            slot->h.status   = IBV_WC_WR_FLUSH_ERR;
            slot->h.byte_len = 0;
            slot->h.wc_flags = 0;
            slot->h.inl_nsge = 0;
            slot->h.inl_len  = 0;
        }
    }
    pthread_mutex_unlock(&cq->lock);
}

static int sv_cq_pop(struct sv_cq *cq, struct sv_cqe *out)
{
    struct sv_cq_hdr *ring = cq->ring;
    uint64_t h = ring->head;
    struct sv_cq_slot *slot = &cq->slots[h & (ring->size - 1)];
    uint32_t i, off = 0, n;

    /* acquire: pairs with the producer's release store of seq */
    if (__atomic_load_n(&slot->h.seq, __ATOMIC_ACQUIRE) != h + 1) {
        return 0;
    }
    while (slot->h.cleaned) {
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
        sv_cq_retire(out);
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
    /* one load of the ring: a resize in another thread replaces it */
    struct sv_cq_hdr *ring = __atomic_load_n(&cq->ring, __ATOMIC_ACQUIRE);
    struct sv_cq_slot *slots = (struct sv_cq_slot *)(ring + 1);
    uint64_t h = __atomic_load_n(&ring->head, __ATOMIC_RELAXED);

    return !__atomic_load_n(&cq->sq_pending, __ATOMIC_RELAXED) &&
           !__atomic_load_n(&cq->shm->flush_req, __ATOMIC_RELAXED) &&
           /* acquire: pairs with the producer's release store of seq */
           (__atomic_load_n(&slots[h & (ring->size - 1)].h.seq,
                            __ATOMIC_ACQUIRE) != h + 1);
}

int sv_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
    struct sv_cq *cq = sv_cq(ibcq);
    struct sv_cqe c;
    int n = 0;

    if (num < 0) {
        return -1;
    }
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

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sv_cq *cq = sv_cq(ibcq);

    /* release: pairs with the producer's exchange on armed */
    __atomic_store_n(&cq->shm->armed, solicited_only ? 2 : 1,
                     __ATOMIC_RELEASE);
    /* seq_cst fence: armed is visible before the caller polls the CQ again
     * (pairs with the fence in sv_cq_notify; see there) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return 0;
}

/* ibv_cq_ex polling interface */
/* Pop the next CQE into cq->cur (after running the requesters when asked) */
static int sv_cq_poll_next(struct ibv_cq_ex *cqx, int progress)
{
    struct sv_cq *cq = (struct sv_cq *)cqx;
    int ret;

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

/* ---------------------------------------------------------------------
 * Creation / destruction
 * ------------------------------------------------------------------- */
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *ctx,
                                  struct ibv_cq_init_attr_ex *attr)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_cq *scq = NULL;
    uint32_t cqe = attr->cqe, i;
    struct sv_cq *cq;
    uint64_t len;

    if ((attr->cqe < 1) || (attr->comp_vector > 0) ||
        (attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
                             IBV_CQ_INIT_ATTR_MASK_PD))) {
        errno = EINVAL;
        return NULL;
    }
    /* The standard fields and the completion timestamps can be read; no
     * VLAN, flow tags or tag matching. mlx5 refuses wc_flags it cannot
     * provide with ENOTSUP (rdma-core providers/mlx5/verbs.c, create_cq) */
    if (attr->wc_flags & ~(uint64_t)SV_CQ_WC_FLAGS) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    /* above max_cqe: EINVAL whatever SOFTVERBS_CAP_POLICY says, as mlx5
     * (create_cq: more than 2^24 entries; the kernel's mlx5_ib_create_cq:
     * more than the device's log_max_cq_sz) */
    if (cqe > sv_cq_max_cqe()) {
        errno = EINVAL;
        return NULL;
    }
    /* IBV_CQ_INIT_ATTR_MASK_PD names a parent domain (ibv_create_cq_ex(3));
     * a plain PD, or none, is EINVAL as with mlx5 (create_cq:
     * to_mparent_domain() NULL). The CQ references it until destroyed */
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
        ((attr->parent_domain == NULL) ||
         (sv_pd(attr->parent_domain)->parent_of == NULL))) {
        errno = EINVAL;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    if (h->num_cq >= sv_g.max_cq) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (i = 1; (h->num_cq < sv_g.max_cq) && (i < SV_CQ_TBL); i++) {
        if (!h->cqs[i].in_use) {
            scq = &h->cqs[i];
            break;
        }
    }
    if (scq == NULL) {
        sv_shm_unlock();
        sv_error("cannot create CQ: limit %u reached", sv_g.max_cq);
        errno = ENOMEM;
        goto err_free;
    }
    memset(scq, 0, sizeof(*scq));
    scq->ring_off = sv_cq_ring_alloc(cqe, &len);
    if (scq->ring_off == 0) {
        sv_shm_unlock();
        sv_error("cannot create CQ: registry arena full");
        errno = ENOMEM;
        goto err_free;
    }
    scq->ring_len = len;
    scq->proc     = sv_g.proc;
    scq->pid      = sv_g.pid;
    scq->ctx_id   = sv_ctx(ctx)->ctx_id;
    scq->cookie   = (uintptr_t)cq;
    scq->ts       = !!(attr->wc_flags & SV_CQ_WC_TS);
    scq->ch_id    = attr->channel ?
                    ((struct sv_comp_channel *)attr->channel)->ch_id : 0;
    cq->ring      = sv_shm_ptr(scq->ring_off);
    /* release: the ring is initialized before producers see in_use */
    __atomic_store_n(&scq->in_use, 1, __ATOMIC_RELEASE);
    h->num_cq++;
    sv_shm_unlock();

    cq->index = i;
    cq->shm   = scq;
    cq->slots = (struct sv_cq_slot *)(cq->ring + 1);
    pthread_mutex_init(&cq->lock, NULL);
    cq->cq.context    = ctx;
    cq->cq.channel    = attr->channel;
    cq->cq.cq_context = attr->cq_context;
    cq->cq.cqe        = cq->ring->cqe;
    cq->cq.handle     = i;
    if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
        cq->parent_domain = attr->parent_domain;
        sv_pd_ref(cq->parent_domain, 1);
    }
    pthread_mutex_init(&cq->cq.mutex, NULL);
    pthread_cond_init(&cq->cq.cond, NULL);
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
    if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) {
        cq->cq.read_completion_ts = sv_cq_read_completion_ts;
    }
    if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
        cq->cq.read_completion_wallclock_ns =
            sv_cq_read_completion_wallclock_ns;
    }
    if (attr->channel) {
        attr->channel->refcnt++;
    }
    pthread_mutex_lock(&sv_g.cq_list_lock);
    cq->next = sv_g.cq_list;
    if (cq->next != NULL) {
        cq->next->prev = cq;
    }
    sv_g.cq_list = cq;
    pthread_mutex_unlock(&sv_g.cq_list_lock);
    return &cq->cq;

err_free:
    free(cq);
    return NULL;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe,
                                       void *cq_context,
                                       struct ibv_comp_channel *channel,
                                       int comp_vector)
{
    struct ibv_cq_init_attr_ex attr;
    struct ibv_cq_ex *cq;

    memset(&attr, 0, sizeof(attr));
    if (cqe < 1) {
        errno = EINVAL;
        return NULL;
    }
    attr.cqe         = cqe;
    attr.cq_context  = cq_context;
    attr.channel     = channel;
    attr.comp_vector = comp_vector;
    cq = sv_create_cq_ex(ctx, &attr);
    return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct sv_cq *cq = sv_cq(ibcq);

    if (cq->nqps > 0) {
        return EBUSY;
    }
    /* man ibv_destroy_cq / ibv_get_cq_event: waits, without a timeout and
     * through signals, until every completion and async event reported
     * about the CQ was acknowledged (libibverbs does the same) */
    pthread_mutex_lock(&ibcq->mutex);
    while ((ibcq->comp_events_completed != cq->comp_events_reported) ||
           (ibcq->async_events_completed != cq->async_events_reported)) {
        pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
    }
    pthread_mutex_unlock(&ibcq->mutex);
    pthread_mutex_lock(&sv_g.cq_list_lock);
    if (cq->prev != NULL) {
        cq->prev->next = cq->next;
    } else {
        sv_g.cq_list = cq->next;
    }
    if (cq->next != NULL) {
        cq->next->prev = cq->prev;
    }
    pthread_mutex_unlock(&sv_g.cq_list_lock);
    sv_shm_lock();
    /* release: producers that still see in_use push into a live ring */
    __atomic_store_n(&cq->shm->in_use, 0, __ATOMIC_RELEASE);
    sv_shm_free(cq->shm->ring_off, cq->shm->ring_len);
    sv_g.shm->num_cq--;
    sv_shm_unlock();
    if (ibcq->channel) {
        ibcq->channel->refcnt--;
    }
    if (cq->parent_domain != NULL) {
        sv_pd_ref(cq->parent_domain, -1);
    }
    free(cq->qps);
    free(cq);
    return 0;
}
