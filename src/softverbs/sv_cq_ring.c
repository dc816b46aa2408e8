/*
 * softverbs CQ rings: their size, allocation, the device's max_cqe,
 * ibv_resize_cq, which moves the queued completions to a new ring while
 * producers of any process keep pushing, and whether a CQE waits at the
 * owner's consumer index (for the poll and for the arming).
 *
 * Resizing protocol. Producers (sv_cq_push) claim a slot by a CAS on the
 * ring's tail. The resizer (the owner, under the CQ lock) closes the old
 * ring by setting SV_CQ_TAIL_CLOSED in its tail with a CAS: from then on no
 * producer can claim a slot in it (their CAS expects a tail without the
 * bit), and one that reads the bit waits for the CQ's ring_off to name the
 * new ring. The resizer waits until every slot claimed before the close is
 * published, copies the queued CQEs (with the payloads carried in their
 * slots) to the start of the new ring, and publishes its offset. The old ring
 * goes to the arena's quarantine, so a producer that still holds its
 * address reads a closed tail, never a reused block.
 */
#include "sv.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

/* Ring bytes for cqe entries; *size: its slots (a power of two > cqe) */
static uint64_t sv_cq_ring_len(uint32_t cqe, uint32_t *size)
{
    uint32_t s;

    s = sv_pow2_roundup(cqe + 1);
    s = (s < 2) ? 2 : s;
    *size = s;
    return sizeof(struct sv_cq_hdr) + (uint64_t)s * sizeof(struct sv_cq_slot);
}

/*
 * The largest CQ the device offers: ConnectX's 2^22 - 1 entries
 * (SV_MAX_CQE), or less when its ring (a power-of-two block of the arena)
 * would need more than half the registry's arena (SOFTVERBS_SHM_MB). A CQ
 * of max_cqe entries then fits in an arena that is at most half in use.
 */
uint32_t sv_cq_max_cqe(void)
{
    uint64_t half = sv_g.shm->arena_len / 2;
    uint32_t cqe = SV_MAX_CQE, size;

    while ((cqe > 1) && (sv_cq_ring_len(cqe, &size) > half)) {
        cqe = size / 2 - 1;
    }
    return cqe;
}

/* A zeroed ring for cqe entries, under the registry lock: its offset (0
 * when the arena is full) and *len */
uint64_t sv_cq_ring_alloc(uint32_t cqe, uint64_t *len)
{
    struct sv_cq_hdr *ring;
    uint32_t size;
    uint64_t off;

    *len = sv_cq_ring_len(cqe, &size);
    off  = sv_shm_alloc(*len);
    if (off == 0) {
        return 0;
    }
    ring = sv_shm_ptr(off);        /* zeroed by sv_shm_alloc */
    ring->size = size;
    /* All of the ring but one slot, as mlx5 sizes a CQ: the kernel's
     * mlx5_ib_create_cq/resize_cq round cqe + 1 up to a power of two and
     * report one less as ibv_cq.cqe. Asked 4096, a program gets 8191 (UCX's
     * rc_verbs counts on that room: with exactly 4096, UCX's gtest
     * test_uct_pending overran its send CQ) */
    ring->cqe  = size - 1;
    return off;
}

/* Wait (bounded) until the slots [h, t) of a closed ring are published; a
 * producer that died between its claim and its store leaves a hole, which
 * is given up after a second, as a lost CQE */
static void sv_cq_ring_drain(struct sv_cq_hdr *ring, uint64_t h, uint64_t t)
{
    struct sv_cq_slot *slots = (struct sv_cq_slot *)(ring + 1);
    uint64_t deadline = sv_now_ns() + 1000000000ull, i;

    for (i = h; i < t; i++) {
        /* acquire: pairs with the producer's release store of seq */
        while (__atomic_load_n(&slots[i & (ring->size - 1)].h.seq,
                               __ATOMIC_ACQUIRE) != i + 1) {
            if (sv_now_ns() > deadline) {
                sv_error("resize: a CQE claimed before the resize was never "
                         "written (its producer died?)");
                break;
            }
            sched_yield();
        }
    }
}

/*
 * ibv_resize_cq(3): at least cqe entries (1..max_cqe, else EINVAL, as mlx5
 * and the kernel's mlx5_ib_resize_cq), and no fewer than the completions
 * queued (EINVAL, man ibv_resize_cq: "cqe must be at least the number of
 * unpolled entries"). The completions queued stay, in order (mlx5 copies
 * them, mlx5_cq_resize_copy_cqes); a size the ring already has changes
 * only the capacity. The new capacity is written to cq->cqe.
 */
SV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
    struct sv_cq *cq = sv_cq(ibcq);
    struct sv_cq_hdr *old, *ring;
    struct sv_cq_slot *os, *ns;
    uint64_t h, t, off, len, i;
    uint32_t size;

    if ((cqe < 1) || ((uint32_t)cqe > sv_cq_max_cqe())) {
        return EINVAL;
    }
    pthread_mutex_lock(&cq->lock);
    /* under the lock: another thread's resize replaces the ring */
    old = cq->ring;
    h   = old->head;
    t = __atomic_load_n(&old->tail, __ATOMIC_ACQUIRE);
    if (t - h > (uint32_t)cqe) {
        pthread_mutex_unlock(&cq->lock);
        return EINVAL;
    }
    sv_cq_ring_len(cqe, &size);
    if (size == old->size) {
        /* the capacity it has (sv_cq_ring_alloc) */
        ibcq->cqe = old->cqe;
        pthread_mutex_unlock(&cq->lock);
        return 0;
    }
    sv_shm_lock();
    off = sv_cq_ring_alloc(cqe, &len);
    sv_shm_unlock();
    if (off == 0) {
        pthread_mutex_unlock(&cq->lock);
        sv_error("cannot resize CQ: registry arena full");
        return ENOMEM;
    }
    ring = sv_shm_ptr(off);

    /* close the old ring: no producer claims a slot in it from now on */
    t = __atomic_load_n(&old->tail, __ATOMIC_ACQUIRE);
    while (!__atomic_compare_exchange_n(&old->tail, &t, t | SV_CQ_TAIL_CLOSED,
                                        0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
        ;
    if (t - h > (uint32_t)cqe) {
        /* producers filled it meanwhile: reopen, nothing changed */
        __atomic_store_n(&old->tail, t, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&cq->lock);
        sv_shm_lock();
        sv_shm_free(off, len);
        sv_shm_unlock();
        return EINVAL;
    }
    sv_cq_ring_drain(old, h, t);
    os = (struct sv_cq_slot *)(old + 1);
    ns = (struct sv_cq_slot *)(ring + 1);
    for (i = h; i < t; i++) {
        ns[i - h]       = os[i & (old->size - 1)];
        ns[i - h].h.seq = i - h + 1;
    }
    ring->head = 0;
    ring->tail = t - h;

    sv_shm_lock();
    /* release: the copied ring is complete before producers find it */
    __atomic_store_n(&cq->shm->ring_off, off, __ATOMIC_RELEASE);
    len = __atomic_exchange_n(&cq->shm->ring_len, len, __ATOMIC_RELAXED);
    sv_shm_free((char *)old - sv_g.base, len);
    sv_shm_unlock();
    __atomic_store_n(&cq->ring, ring, __ATOMIC_RELEASE);
    cq->slots = ns;
    ibcq->cqe = ring->cqe;
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

/* The slot at the owner's consumer index is written: a CQE waits to be
 * polled */
int sv_cq_holds_cqe(struct sv_cq *cq)
{
    /* one load of the ring: a resize in another thread replaces it */
    struct sv_cq_hdr *ring = __atomic_load_n(&cq->ring, __ATOMIC_ACQUIRE);
    struct sv_cq_slot *slots = (struct sv_cq_slot *)(ring + 1);
    uint64_t h = __atomic_load_n(&ring->head, __ATOMIC_RELAXED);

    /* acquire: pairs with the producer's release store of seq */
    return __atomic_load_n(&slots[h & (ring->size - 1)].h.seq,
                           __ATOMIC_ACQUIRE) == h + 1;
}
