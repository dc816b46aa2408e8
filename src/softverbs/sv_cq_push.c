/*
 * softverbs completion queues: the producer side. Any process pushes a CQE
 * into a CQ's ring (claiming a slot by CAS on the tail) and, when the CQ is
 * armed (ibv_req_notify_cq), sends its completion event to the CQ's
 * completion channel, whose owner reads it with ibv_get_cq_event
 * (sv_cq_poll.c). The arming and the producer's check of it pair their
 * fences here.
 */
#include "sv.h"

#include <string.h>
#include <sched.h>

/* ---------------------------------------------------------------------
 * CQE production (any process)
 * ------------------------------------------------------------------- */
/* A completion event of the CQ (registry entry, index) to its channel, if
 * it has one */
static void sv_cq_send_event(struct sv_shm_cq *scq, uint32_t index)
{
    struct sv_ev_msg msg;

    if (scq->ch_id == 0) {
        return;
    }
    memset(&msg, 0, sizeof(msg));
    msg.kind   = SV_EV_COMP;
    msg.index  = index;
    msg.cookie = scq->cookie;
    sv_ev_send('c', scq->ch_id, &msg);
}

/* A CQE is in the CQ: the event, if the CQ is armed for it. Called by the
 * producer of the CQE, and by the owner that arms a CQ already holding
 * CQEs (sv_req_notify_cq); whichever takes the arming sends the event */
static void sv_cq_notify(struct sv_shm_cq *scq, uint32_t index, int solicited)
{
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
    if (armed) {
        sv_cq_send_event(scq, index);
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

/* A push found the CQ full: the completion is lost; the owner gets
 * IBV_EVENT_CQ_ERR, and stderr says it once per CQ whatever
 * SOFTVERBS_DEBUG says, as mlx5's driver warns of a CQ error in the
 * kernel log (an owner that does not read async events would not know
 * why) */
static void sv_cq_push_overrun(struct sv_shm_cq *scq, uint32_t cq_index,
                               unsigned queued)
{
    if (!__atomic_exchange_n(&scq->overrun, 1, __ATOMIC_RELAXED)) {
        sv_ev_async(scq->ctx_id, SV_EV_CQ, IBV_EVENT_CQ_ERR, cq_index,
                    scq->cookie);
        sv_warn("cq %u overrun: %u completions queued, the CQ's capacity; "
                "this and later completions that find it full are lost "
                "(IBV_EVENT_CQ_ERR)", cq_index, queued);
    } else {
        sv_error("cq %u overrun", cq_index);
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
                sv_cq_push_overrun(scq, cq_index, (unsigned)(t - h));
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

/* A completion event of cq to its channel, now (the mlx5 engine: the
 * program armed the CQ through its doorbell record and an entry it waits
 * for is there) */
void sv_cq_event(struct sv_cq *cq)
{
    sv_cq_send_event(cq->shm, cq->index);
}

/* ---------------------------------------------------------------------
 * Arming (owner): the next completion, or the next solicited one, sends
 * an event to the CQ's channel (sv_cq_notify above).
 *
 * Arming for the next completion a CQ that already holds unpolled CQEs
 * sends the event at once, as ConnectX does: libmlx5's mlx5_arm_cq writes
 * the consumer index into the arm doorbell, and the HCA raises the event
 * when entries past it exist (the same rule as sv_mlx5_cq_arm). Programs
 * rely on it: Open MPI's openib udcm polls its CQ empty, then arms it
 * without polling again (udcm_cq_event_dispatch), so a CQE that landed in
 * between left its connection message unread for good (the openib job
 * hung in 1 run of 12 to 90, softverbs-openib.sh). A solicited-only arming
 * still waits for the next solicited CQE: the ring does not record which
 * queued CQEs were solicited.
 * ------------------------------------------------------------------- */
int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
    struct sv_cq *cq = sv_cq(ibcq);

    /* release: pairs with the producer's exchange on armed */
    __atomic_store_n(&cq->shm->armed, solicited_only ? 2 : 1,
                     __ATOMIC_RELEASE);
    /* seq_cst fence: armed is visible before the caller polls the CQ again
     * and before the ring is read below (pairs with the fence in
     * sv_cq_notify; see there) */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!solicited_only && sv_cq_holds_cqe(cq)) {
        /* as a producer would: the arming is taken once, here or there */
        sv_cq_notify(cq->shm, cq->index, 0);
    }
    return 0;
}
