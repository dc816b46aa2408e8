/*
 * softverbs registry allocator: the arena of the shared registry, which
 * holds the rings of QPs, CQs and SRQs. Power-of-two size classes with a
 * free list each, split from larger classes when a list is empty, and a
 * quarantine that keeps freed blocks from being reused at once. Every
 * function is called with the registry lock held.
 */
#include "sv.h"

#include <string.h>

static int sv_size_class(uint64_t len)
{
    int c = 12;

    while (((uint64_t)1 << c) < len) {
        c++;
    }
    return c;
}

/*
 * A freed ring is not reused at once. A requester of another process may
 * have looked the QP or CQ up just before its owner destroyed it (or died
 * and was reaped) and still be writing a WQE or CQE into it: the in_use
 * store stops new lookups, not one in progress. Such a write into memory
 * already given to a new object of a third process corrupted its queues.
 * Freed blocks wait in FIFO order for SV_QUARANTINE_NS (far longer than a
 * request takes) before they return to their free list; when memory runs
 * short, blocks older than SV_QUARANTINE_MIN_NS are taken. The FIFO lives
 * in the registry header, not in the blocks: a late responder may still
 * advance a freed receive queue's head, the block's first word.
 */
#define SV_QUARANTINE_NS     1000000000ull
#define SV_QUARANTINE_MIN_NS 10000000ull

static void sv_shm_free_list_push(struct sv_shm_hdr *h, uint64_t off, int c)
{
    *(uint64_t *)sv_shm_ptr(off) = h->free_list[c];
    h->free_list[c] = off;
}

/* The oldest quarantined block goes to its free list */
static void sv_shm_quarantine_pop(struct sv_shm_hdr *h)
{
    uint32_t k = h->quarantine_first;

    sv_shm_free_list_push(h, h->quarantine[k].off,
                          sv_size_class(h->quarantine[k].len));
    h->quarantine_first = (k + 1) % SV_QUARANTINE_MAX;
    --h->quarantine_count;
}

/* Blocks freed at least min_age_ns ago go to their free lists */
static void sv_shm_quarantine_release(struct sv_shm_hdr *h,
                                      uint64_t min_age_ns)
{
    uint64_t now = sv_now_ns();

    while ((h->quarantine_count > 0) &&
           (now - h->quarantine[h->quarantine_first].freed_ns >=
            min_age_ns)) {
        sv_shm_quarantine_pop(h);
    }
}

/* Take the head of free list c; 0 when it is empty */
static uint64_t sv_shm_free_list_pop(struct sv_shm_hdr *h, int c)
{
    uint64_t off = h->free_list[c];

    if (off != 0) {
        h->free_list[c] = *(uint64_t *)sv_shm_ptr(off);
    }
    return off;
}

/*
 * A free block of a larger class, split down to class c: the upper halves
 * go to the free lists of the classes between. Blocks are never merged
 * again, so this keeps a registry that served many sizes from running out
 * while most of it is free.
 */
static uint64_t sv_shm_alloc_split(struct sv_shm_hdr *h, int c)
{
    uint64_t off;
    int j;

    for (j = c + 1; j < 48; j++) {
        off = sv_shm_free_list_pop(h, j);
        if (off == 0) {
            continue;
        }
        while (j > c) {
            --j;
            sv_shm_free_list_push(h, off + ((uint64_t)1 << j), j);
        }
        return off;
    }
    return 0;
}

uint64_t sv_shm_alloc(uint64_t len)
{
    struct sv_shm_hdr *h = sv_g.shm;
    int c = sv_size_class(len);
    uint64_t off, sz = (uint64_t)1 << c;

    if (c >= 48) {
        return 0;
    }
    sv_shm_quarantine_release(h, SV_QUARANTINE_NS);
    off = sv_shm_free_list_pop(h, c);
    if ((off == 0) && (h->arena_top + sz > h->arena_off + h->arena_len) &&
        (h->num_qp == 0) && (h->num_cq == 0) && (h->num_srq == 0) &&
        (h->quarantine_count == 0)) {
        /* Nothing holds arena memory (only QP, CQ and SRQ rings live
         * there, and none waits in quarantine): start the arena again
         * instead of failing */
        memset(h->free_list, 0, sizeof(h->free_list));
        h->arena_top = h->arena_off;
    }
    if ((off == 0) && (h->arena_top + sz <= h->arena_off + h->arena_len)) {
        off = h->arena_top;
        h->arena_top += sz;
        return off;
    }
    if (off == 0) {
        off = sv_shm_alloc_split(h, c);
    }
    if ((off == 0) && (h->quarantine_count > 0)) {
        /* Short of memory: take blocks that waited a little */
        sv_shm_quarantine_release(h, SV_QUARANTINE_MIN_NS);
        off = sv_shm_free_list_pop(h, c);
        if (off == 0) {
            off = sv_shm_alloc_split(h, c);
        }
    }
    if (off == 0) {
        return 0;
    }
    memset(sv_shm_ptr(off), 0, sz);
    return off;
}

void sv_shm_free(uint64_t off, uint64_t len)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t k;

    if (off == 0) {
        return;
    }
    if (h->quarantine_count == SV_QUARANTINE_MAX) {
        sv_shm_quarantine_pop(h); /* full: the oldest has waited most */
    }
    k = (h->quarantine_first + h->quarantine_count) % SV_QUARANTINE_MAX;
    h->quarantine[k].off      = off;
    h->quarantine[k].len      = len;
    h->quarantine[k].freed_ns = sv_now_ns();
    ++h->quarantine_count;
}
