/*
 * softverbs registry allocator: the arena of the shared registry, which
 * holds the rings of QPs, CQs and SRQs. A buddy allocator: power-of-two
 * size classes, each block aligned to its size within the arena, a free
 * list per class, split from larger classes when a list is empty, and a
 * freed block merged with its buddy when that is free too, so that memory
 * freed by many small objects serves a large one again (without merging,
 * a host that had run many small queues could no longer create one CQ of
 * 100000 entries with the arena all but empty). A quarantine keeps freed
 * blocks from being reused at once. Every function is called with the
 * registry lock held.
 */
#include "sv.h"

#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* Blocks from this size on are zeroed lazily (sv_shm_zero) */
#define SV_SHM_ZERO_LAZY_MIN (16ull << 20)

/* Zero len bytes of the registry. A huge block's pages go back to the file
 * (MADV_REMOVE on the shared tmpfs mapping) and read as zero, so a block of
 * a CQ of millions of entries costs only the pages its completions use (a
 * memset of the block made a max_cqe CQ write 2 GiB). Smaller blocks (every
 * ordinary ring) are written now, as before: their pages are resident from
 * creation, so a process's memory does not creep up while its rings fill
 * for the first time (ud-ep-churn.sh measures per-endpoint growth).
 * memset where the file system cannot punch holes. */
static void sv_shm_zero(void *p, uint64_t len)
{
    const uintptr_t page = sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t end   = ((uintptr_t)p + len) & ~(page - 1);

    if ((len < SV_SHM_ZERO_LAZY_MIN) || (end <= start) ||
        (madvise((void *)start, end - start, MADV_REMOVE) != 0)) {
#ifdef MADV_POPULATE_WRITE
        /* A block's first use faults its pages in one call, not one trap
         * per page: a CQ of 4096 entries (1 MiB) was 5.3 ms and is 4.0 on
         * a 2-core VM. Linux 5.14 and later; before, memset faults them */
        if (end > start) {
            (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE);
        }
#endif
        memset(p, 0, len);
        return;
    }
    memset(p, 0, start - (uintptr_t)p);
    memset((void *)end, 0, (uintptr_t)p + len - end);
}

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

/* A free block's header, at its start (a block in use holds ring data) */
struct sv_free_blk {
    uint64_t magic;               /* SV_FREE_MAGIC ^ own offset */
    uint64_t next, prev;          /* offsets in the class's list, 0: none */
    uint32_t cls;
    uint32_t pad;
};
#define SV_FREE_MAGIC 0x5356465245454c53ull /* "SVFREELS" */

static inline struct sv_free_blk *sv_blk(uint64_t off)
{
    return (struct sv_free_blk *)sv_shm_ptr(off);
}

static void sv_shm_free_list_unlink(struct sv_shm_hdr *h, uint64_t off)
{
    struct sv_free_blk *b = sv_blk(off);

    if (b->prev != 0) {
        sv_blk(b->prev)->next = b->next;
    } else {
        h->free_list[b->cls] = b->next;
    }
    if (b->next != 0) {
        sv_blk(b->next)->prev = b->prev;
    }
    b->magic = 0;
}

/* The buddy of the block at off of class c, if it is free in class c */
static uint64_t sv_shm_free_buddy(struct sv_shm_hdr *h, uint64_t off, int c)
{
    uint64_t buddy = h->arena_off + ((off - h->arena_off) ^ ((uint64_t)1 << c));
    struct sv_free_blk *b;

    if ((buddy < h->arena_off) ||
        (buddy + ((uint64_t)1 << c) > h->arena_top)) {
        return 0;
    }
    b = sv_blk(buddy);
    return ((b->magic == (SV_FREE_MAGIC ^ buddy)) && (b->cls == (uint32_t)c)) ?
           buddy : 0;
}

/* Free the block at off of class c: merged with its free buddy, class after
 * class; with lower_top, a block that ends at the top of the arena gives
 * the space back to the bump pointer instead */
static void sv_shm_free_list_push(struct sv_shm_hdr *h, uint64_t off, int c,
                                  int lower_top)
{
    struct sv_free_blk *b;
    uint64_t buddy;

    while ((c < 47) && ((buddy = sv_shm_free_buddy(h, off, c)) != 0)) {
        sv_shm_free_list_unlink(h, buddy);
        off = (buddy < off) ? buddy : off;
        ++c;
    }
    if (lower_top && (off + ((uint64_t)1 << c) == h->arena_top)) {
        h->arena_top = off;
        return;
    }
    b        = sv_blk(off);
    b->magic = SV_FREE_MAGIC ^ off;
    b->cls   = c;
    b->prev  = 0;
    b->next  = h->free_list[c];
    if (b->next != 0) {
        sv_blk(b->next)->prev = off;
    }
    h->free_list[c] = off;
}

/* The oldest quarantined block goes to its free list */
static void sv_shm_quarantine_pop(struct sv_shm_hdr *h)
{
    uint32_t k = h->quarantine_first;

    sv_shm_free_list_push(h, h->quarantine[k].off,
                          sv_size_class(h->quarantine[k].len), 1);
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
        sv_shm_free_list_unlink(h, off);
    }
    return off;
}

/* A block of class c from the top of the arena, aligned to its size; the
 * space skipped to align it goes to the free lists. 0 when it does not fit */
static uint64_t sv_shm_alloc_top(struct sv_shm_hdr *h, int c)
{
    uint64_t sz  = (uint64_t)1 << c;
    uint64_t rel = h->arena_top - h->arena_off;
    uint64_t off = h->arena_off + ((rel + sz - 1) & ~(sz - 1));
    uint64_t gap;
    int g;

    if (off + sz > h->arena_off + h->arena_len) {
        return 0;
    }
    /* the gap [top, off) in aligned power-of-two pieces */
    while (h->arena_top < off) {
        rel = h->arena_top - h->arena_off;
        g   = __builtin_ctzll(rel);
        for (gap = (uint64_t)1 << g; h->arena_top + gap > off; gap >>= 1, --g)
            ;
        h->arena_top += gap;
        sv_shm_free_list_push(h, h->arena_top - gap, g, 0);
    }
    h->arena_top = off + sz;
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
            sv_shm_free_list_push(h, off + ((uint64_t)1 << j), j, 0);
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
    if (off == 0) {
        off = sv_shm_alloc_split(h, c);
    }
    if ((off == 0) && (h->num_qp == 0) && (h->num_cq == 0) &&
        (h->num_srq == 0) && (h->quarantine_count == 0)) {
        /* Nothing holds arena memory (only QP, CQ and SRQ rings live
         * there, and none waits in quarantine): start the arena again */
        memset(h->free_list, 0, sizeof(h->free_list));
        h->arena_top = h->arena_off;
    }
    if (off == 0) {
        off = sv_shm_alloc_top(h, c);
    }
    if ((off == 0) && (h->quarantine_count > 0)) {
        /* Short of memory: take blocks that waited a little */
        sv_shm_quarantine_release(h, SV_QUARANTINE_MIN_NS);
        off = sv_shm_free_list_pop(h, c);
        if (off == 0) {
            off = sv_shm_alloc_split(h, c);
        }
        if (off == 0) {
            /* released blocks at the top lowered it */
            off = sv_shm_alloc_top(h, c);
        }
    }
    if (off == 0) {
        return 0;
    }
    sv_shm_zero(sv_shm_ptr(off), sz);
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
