/*
 * Unit tests of base's receive refill (qpx_iface_rx_post, _recycle,
 * _post_due, _kept):
 * what each posted WR carries, batching, buffers released after a receive
 * going back as they are, kept ones replaced by fresh ones, a post that
 * fails part-way, an empty buffer pool (and the progress refilling the
 * queue it left short once a buffer comes back), an interface sharing
 * another's SRQ and buffer pool (whether its layout fits, and the pool's
 * lock when the sharer uses it from another thread), a first fill that
 * fails, and the queue growing after the SRQ limit event. The SRQ is a
 * fake whose post_srq_recv records the WRs (ibv_post_srq_recv calls
 * through the context's ops); ibv_modify_srq is wrapped to record the
 * limits armed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include <pthread.h>

#include <uct/qpx/base/qpx_iface.h>


#define TEST_BATCH     4
#define TEST_SEG_SIZE  256
#define TEST_HDR_OFF   72  /* after qpx_rx_desc_t and 16 private bytes */
#define TEST_MAX_BUFS  12
#define TEST_MAX_POSTS 64

typedef struct test_post {
    uint64_t wr_id;
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} test_post_t;

typedef struct test_ctx {
    qpx_iface_t        iface;
    struct ibv_context verbs_ctx;
    struct ibv_srq     srq;
    test_post_t        posted[TEST_MAX_POSTS];
    unsigned           num_posted;
    unsigned           num_calls;  /* post_srq_recv calls */
    int                fail_at;    /* WR index of the next call to refuse,
                                      or -1 */
} test_ctx_t;

static test_ctx_t *ctx;

/* The SRQ limits asked for (ibv_modify_srq with IBV_SRQ_LIMIT) */
static unsigned test_limits[8];
static unsigned test_num_limits;
static int      test_modify_ret;

int __wrap_ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
                          int mask)
{
    assert_ptr_equal(srq, &ctx->srq);
    assert_int_equal(mask, IBV_SRQ_LIMIT);
    if (test_modify_ret != 0) {
        return test_modify_ret;
    }
    assert_true(test_num_limits < 8);
    test_limits[test_num_limits++] = attr->srq_limit;
    return 0;
}


static int test_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                              struct ibv_recv_wr **bad_wr)
{
    int i;

    assert_ptr_equal(srq, &ctx->srq);
    ++ctx->num_calls;
    for (i = 0; wr != NULL; wr = wr->next, ++i) {
        if (i == ctx->fail_at) {
            ctx->fail_at = -1;
            *bad_wr      = wr;
            return ENOMEM;
        }
        assert_int_equal(wr->num_sge, 1);
        assert_true(ctx->num_posted < TEST_MAX_POSTS);
        ctx->posted[ctx->num_posted].wr_id  = wr->wr_id;
        ctx->posted[ctx->num_posted].addr   = wr->sg_list[0].addr;
        ctx->posted[ctx->num_posted].length = wr->sg_list[0].length;
        ctx->posted[ctx->num_posted].lkey   = wr->sg_list[0].lkey;
        ++ctx->num_posted;
    }
    return 0;
}

static void test_desc_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    (void)mp;
    (void)chunk;
    /* a distinct key per buffer, to see that each WR carries its own;
     * then the buffer's WR, as rx_mp's object init makes it */
    ((qpx_desc_t*)obj)->lkey = (uint32_t)((uintptr_t)obj >> 4);
    qpx_iface_rx_desc_wr_init(&ctx->iface, obj);
}

static ucs_mpool_ops_t test_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = test_desc_init,
    .obj_cleanup   = NULL
};

static int test_setup(void **state)
{
    qpx_iface_t *iface;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    iface                                = &ctx->iface;
    ctx->fail_at                         = -1;
    ctx->verbs_ctx.ops.post_srq_recv     = test_post_srq_recv;
    ctx->srq.context                     = &ctx->verbs_ctx;
    iface->srq                           = &ctx->srq;
    iface->config.tl_name                = "test";
    iface->config.seg_size               = TEST_SEG_SIZE;
    iface->config.rx_hdr_offset          = TEST_HDR_OFF;
    iface->rx.batch                      = TEST_BATCH;
    iface->rx.queue_len                  = 16;
    iface->rx.am_flags                   = UCT_CB_PARAM_FLAG_DESC;
    iface->rx.available                  = 16;
    iface->exhausted_level               = UCS_LOG_LEVEL_ERROR; /* as built */
    assert_int_equal(ucs_mpool_init(&iface->rx_mp, 0,
                                    TEST_HDR_OFF + TEST_SEG_SIZE, 0, 64, 4,
                                    TEST_MAX_BUFS, &test_mp_ops, "test_rx"),
                     UCS_OK);

    qpx_iface_rx_recycled_reset(iface); /* as the interface starts */
    *state = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    qpx_iface_t *iface = &ctx->iface;
    unsigned i;

    /* the posted buffers come back as a QP flush would return them */
    for (i = 0; i < ctx->num_posted; ++i) {
        if (ctx->posted[i].wr_id != 0) {
            ucs_mpool_put((void*)(uintptr_t)ctx->posted[i].wr_id);
        }
    }
    ucs_mpool_cleanup(&iface->rx_mp, 1);
    free(ctx);
    *state = NULL;
    return 0;
}

/* Every WR from the first-th on carries its own buffer, at the receive
 * offset, with the buffer's key and the segment size */
static void test_check_posted(unsigned first)
{
    qpx_desc_t *desc;
    unsigned i, j;

    for (i = first; i < ctx->num_posted; ++i) {
        desc = (qpx_desc_t*)(uintptr_t)ctx->posted[i].wr_id;
        assert_non_null(desc);
        assert_int_equal(ctx->posted[i].addr,
                         (uintptr_t)desc + TEST_HDR_OFF);
        assert_int_equal(ctx->posted[i].length, TEST_SEG_SIZE);
        assert_int_equal(ctx->posted[i].lkey, desc->lkey);
        for (j = 0; j < i; ++j) {
            assert_true(ctx->posted[j].wr_id != ctx->posted[i].wr_id);
        }
    }
}

/* A completion whose buffer was not kept, handled alone: recycled, then
 * what is due posted, as a transport's loop does for each poll */
static void test_release(qpx_iface_t *iface, qpx_desc_t *desc)
{
    qpx_iface_rx_recycle(iface, desc);
    qpx_iface_rx_post_due(iface);
}

/* Take the buffer of the n-th posted WR out, as a receive completion does */
static qpx_desc_t *test_complete(unsigned n)
{
    qpx_desc_t *desc = (qpx_desc_t*)(uintptr_t)ctx->posted[n].wr_id;

    ctx->posted[n].wr_id = 0;
    return desc;
}


/* A refill larger than a batch is one chain (the batch says how often
 * completions are reposted, not how many WRs a post may carry) */
static void test_post_batches(void **state)
{
    (void)state;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, 10), 10);
    assert_int_equal(ctx->num_posted, 10);
    assert_int_equal(ctx->num_calls, 1);
    assert_int_equal(ctx->iface.rx.available, 6);
    test_check_posted(0);
    /* nothing is left chained for the next batch */
    assert_null(ctx->iface.rx.recycled);
    assert_ptr_equal(ctx->iface.rx.recycled_tail, &ctx->iface.rx.recycled);
}


/* Released buffers wait for a whole batch and then go back as they are */
static void test_release_recycles(void **state)
{
    qpx_desc_t *desc[TEST_BATCH];
    unsigned i;

    (void)state;
    ctx->iface.rx.available = TEST_BATCH;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH), TEST_BATCH);
    assert_int_equal(ctx->iface.rx.available, 0);

    for (i = 0; i < TEST_BATCH; ++i) {
        desc[i] = test_complete(i);
    }
    for (i = 0; i < TEST_BATCH - 1; ++i) {
        test_release(&ctx->iface, desc[i]);
        assert_int_equal(ctx->num_calls, 1);  /* not yet a batch */
    }
    test_release(&ctx->iface, desc[TEST_BATCH - 1]);
    assert_int_equal(ctx->num_calls, 2);
    assert_int_equal(ctx->num_posted, 2 * TEST_BATCH);
    for (i = 0; i < TEST_BATCH; ++i) {
        assert_int_equal(ctx->posted[TEST_BATCH + i].wr_id,
                         (uintptr_t)desc[i]);
    }
    test_check_posted(TEST_BATCH);
    assert_int_equal(ctx->iface.rx.available, 0);
    assert_int_equal(ctx->iface.rx.num_recycled, 0);
}


/* A post of fewer buffers than are recycled takes the first ones released;
 * the rest stay recycled, and the next post takes them (no trip through
 * the pool). Completions recycled in a loop are posted after it: more may
 * be recycled than a batch. */
static void test_recycled_beyond_count(void **state)
{
    qpx_desc_t *desc[TEST_BATCH + 2];
    unsigned i;

    (void)state;
    ctx->iface.rx.available = TEST_BATCH + 2;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH + 2),
                     TEST_BATCH + 2);
    for (i = 0; i < TEST_BATCH + 2; ++i) {
        desc[i] = test_complete(i);
        qpx_iface_rx_recycle(&ctx->iface, desc[i]);
    }
    assert_int_equal(ctx->iface.rx.num_recycled, TEST_BATCH + 2);
    assert_int_equal(ctx->iface.rx.available, TEST_BATCH + 2);
    assert_int_equal(ctx->num_calls, 1);

    /* after the loop: one post of all of them, in order */
    qpx_iface_rx_post_due(&ctx->iface);
    assert_int_equal(ctx->num_calls, 2);
    assert_int_equal(ctx->num_posted, 2 * (TEST_BATCH + 2));
    for (i = 0; i < TEST_BATCH + 2; ++i) {
        assert_int_equal(ctx->posted[TEST_BATCH + 2 + i].wr_id,
                         (uintptr_t)desc[i]);
    }
    test_check_posted(TEST_BATCH + 2);
    for (i = 0; i < TEST_BATCH + 2; ++i) {
        desc[i] = test_complete(TEST_BATCH + 2 + i);
    }
    assert_int_equal(ctx->iface.rx.num_recycled, 0);
    assert_int_equal(ctx->iface.rx.available, 0);

    /* three recycled, two asked for: the first two; the third stays */
    for (i = 0; i < 3; ++i) {
        test_release(&ctx->iface, desc[i]);
    }
    assert_int_equal(ctx->num_calls, 2); /* 3 < a batch */
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, 2), 2);
    assert_int_equal(ctx->num_calls, 3);
    assert_int_equal(ctx->posted[2 * (TEST_BATCH + 2)].wr_id,
                     (uintptr_t)desc[0]);
    assert_int_equal(ctx->posted[2 * (TEST_BATCH + 2) + 1].wr_id,
                     (uintptr_t)desc[1]);
    assert_int_equal(ctx->iface.rx.num_recycled, 1);
    assert_int_equal(ctx->iface.rx.available, 1);

    /* the next post takes it as it is, its WR whole (the chain was cut
     * after the second) */
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, 1), 1);
    assert_int_equal(ctx->posted[2 * (TEST_BATCH + 2) + 2].wr_id,
                     (uintptr_t)desc[2]);
    test_check_posted(2 * (TEST_BATCH + 2));
    for (i = 3; i < TEST_BATCH + 2; ++i) {
        ucs_mpool_put(desc[i]); /* taken out above, never released */
    }
    assert_int_equal(ctx->iface.rx.num_recycled, 0);
    assert_int_equal(ctx->iface.rx.available, 0);
}


/* Recycled buffers wait for the end of a loop, a kept one posts at once
 * when a batch is due: a pool that runs dry is found at the kept buffer
 * that drains it, before the handlers are given more to keep */
static void test_kept_posts_at_once(void **state)
{
    qpx_desc_t *desc[TEST_BATCH];
    unsigned i;

    (void)state;
    ctx->iface.rx.available = TEST_BATCH;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH), TEST_BATCH);
    for (i = 0; i < TEST_BATCH; ++i) {
        desc[i] = test_complete(i);
    }
    for (i = 0; i < TEST_BATCH - 1; ++i) {
        qpx_iface_rx_recycle(&ctx->iface, desc[i]);
    }
    assert_int_equal(ctx->num_calls, 1);
    qpx_iface_rx_kept(&ctx->iface); /* the handler kept desc[last] */
    assert_int_equal(ctx->num_calls, 2);
    assert_int_equal(ctx->num_posted, 2 * TEST_BATCH);
    for (i = 0; i < TEST_BATCH - 1; ++i) {
        assert_int_equal(ctx->posted[TEST_BATCH + i].wr_id,
                         (uintptr_t)desc[i]);
    }
    /* the kept one's slot took a fresh buffer */
    assert_true(ctx->posted[2 * TEST_BATCH - 1].wr_id !=
                (uintptr_t)desc[TEST_BATCH - 1]);
    test_check_posted(TEST_BATCH);
    assert_int_equal(ctx->iface.rx.available, 0);
    ucs_mpool_put(desc[TEST_BATCH - 1]); /* the handler releases it */
}


/* Kept buffers are replaced by fresh ones; with released ones in the same
 * batch, the released go first */
static void test_kept_and_released(void **state)
{
    qpx_desc_t *kept[2], *released[2];
    unsigned i;

    (void)state;
    ctx->iface.rx.available = TEST_BATCH;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH), TEST_BATCH);
    kept[0]     = test_complete(0);
    released[0] = test_complete(1);
    kept[1]     = test_complete(2);
    released[1] = test_complete(3);
    qpx_iface_rx_kept(&ctx->iface);
    test_release(&ctx->iface, released[0]);
    qpx_iface_rx_kept(&ctx->iface);
    assert_int_equal(ctx->num_calls, 1);
    test_release(&ctx->iface, released[1]);
    assert_int_equal(ctx->num_calls, 2);

    assert_int_equal(ctx->num_posted, 2 * TEST_BATCH);
    assert_int_equal(ctx->posted[4].wr_id, (uintptr_t)released[0]);
    assert_int_equal(ctx->posted[5].wr_id, (uintptr_t)released[1]);
    for (i = 6; i < 8; ++i) {   /* fresh: neither kept buffer */
        assert_true(ctx->posted[i].wr_id != (uintptr_t)kept[0]);
        assert_true(ctx->posted[i].wr_id != (uintptr_t)kept[1]);
    }
    test_check_posted(TEST_BATCH);
    /* the user gives the kept ones back later, to the pool */
    ucs_mpool_put(kept[0]);
    ucs_mpool_put(kept[1]);
}


/* A post refused part-way: the WRs before the refused one count, the rest
 * go back to the pool and their slots stay to be refilled */
static void test_post_fails(void **state)
{
    (void)state;
    ctx->iface.rx.available = TEST_BATCH;
    ctx->fail_at            = 2;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH), 2);
    assert_int_equal(ctx->num_posted, 2);
    assert_int_equal(ctx->iface.rx.available, TEST_BATCH - 2);

    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH - 2),
                     TEST_BATCH - 2);
    assert_int_equal(ctx->iface.rx.available, 0);
    test_check_posted(0);
}


/* The pool at its limit: what it gives is posted, the rest stays owed */
static void test_pool_empty(void **state)
{
    (void)state;
    ctx->iface.rx.available = 16;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, 16), TEST_MAX_BUFS);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS);
    assert_int_equal(ctx->iface.rx.available, 16 - TEST_MAX_BUFS);
    test_check_posted(0);

    /* a buffer back in the pool is posted at the next refill */
    ucs_mpool_put(test_complete(0));
    assert_int_equal(qpx_iface_rx_post(&ctx->iface,
                                       ctx->iface.rx.available), 1);
}

/* A queue the empty pool left short is refilled by the progress once a
 * buffer comes back (all of them held by AM handlers: no completion would
 * come to refill it, and the peer waiting for it would hang), and only
 * then: a buffer back sets rx.low, qpx_iface_rx_tend posts it, and the
 * SRQ limit is not armed again for it */
static void test_pool_starved(void **state)
{
    qpx_iface_t *iface = &ctx->iface;
    qpx_desc_t *held[2];

    (void)state;
    test_num_limits  = 0;
    iface->rx.available = 16;
    assert_int_equal(qpx_iface_rx_am_flags(iface), UCT_CB_PARAM_FLAG_DESC);
    assert_int_equal(qpx_iface_rx_post(iface, 16), TEST_MAX_BUFS);
    assert_int_equal(iface->rx.starved, 1);
    assert_int_equal(iface->rx.low, 0);
    /* meanwhile AM handlers copy what they keep: no buffer is kept */
    assert_int_equal(qpx_iface_rx_am_flags(iface), 0);
    held[0] = test_complete(0);  /* kept by a handler: slot owed */
    held[1] = test_complete(1);
    qpx_iface_rx_kept(iface);
    qpx_iface_rx_kept(iface);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS);
    assert_int_equal(iface->rx.available, 16 - TEST_MAX_BUFS + 2);

    /* the handler gives one back: progress posts it, the pool is short
     * again (starved stays) */
    qpx_iface_rx_desc_put(iface, held[0]);
    assert_int_equal(iface->rx.low, 1);
    qpx_iface_rx_tend(iface);
    assert_int_equal(iface->rx.low, 0);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS + 1);
    assert_int_equal(ctx->posted[TEST_MAX_BUFS].wr_id, (uintptr_t)held[0]);
    assert_int_equal(iface->rx.starved, 1);

    /* nothing back: nothing to do */
    assert_int_equal(iface->rx.low, 0);

    qpx_iface_rx_desc_put(iface, held[1]);
    assert_int_equal(iface->rx.low, 1);
    qpx_iface_rx_tend(iface);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS + 2);
    assert_int_equal(test_num_limits, 0);
    test_check_posted(TEST_MAX_BUFS);

    /* a queue that is full again is not starved (as a tend that posts
     * all it owes leaves it) */
    iface->rx.starved  = 0;
    iface->rx.am_flags = UCT_CB_PARAM_FLAG_DESC;
    qpx_iface_rx_desc_put(iface, test_complete(2));
    assert_int_equal(iface->rx.low, 0);
    assert_int_equal(qpx_iface_rx_am_flags(iface), UCT_CB_PARAM_FLAG_DESC);
}


/* An interface that shares the owner's SRQ (qpx_iface_hints_t): its
 * first fill posts nothing, what it consumes it refills to the same SRQ,
 * fresh buffers from the owner's pool (one pool: its limit is shared) */
static void test_shared_srq(void **state)
{
    qpx_iface_t *sharer = calloc(1, sizeof(*sharer));
    qpx_desc_t *kept[2];

    (void)state;
    assert_non_null(sharer);
    sharer->srq                  = &ctx->srq;
    sharer->rx_owner             = &ctx->iface;
    sharer->config.tl_name       = "test";
    sharer->config.seg_size      = TEST_SEG_SIZE;
    sharer->config.rx_hdr_offset = TEST_HDR_OFF;
    sharer->rx.batch             = TEST_BATCH;
    sharer->rx.queue_len         = 16;
    sharer->rx.available         = 0;
    qpx_iface_rx_recycled_reset(sharer);

    /* the owner fills the SRQ; the sharer's first fill posts nothing */
    assert_int_equal(qpx_iface_rx_fill(&ctx->iface), UCS_OK);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS);
    assert_int_equal(qpx_iface_rx_fill(sharer), UCS_OK);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS);

    /* the sharer's QP received into two buffers and the handlers kept
     * them: their slots are refilled with fresh buffers, from the owner's
     * pool, which has none left */
    kept[0] = test_complete(0);
    kept[1] = test_complete(1);
    qpx_iface_rx_kept(sharer);
    qpx_iface_rx_kept(sharer);
    assert_int_equal(qpx_iface_rx_post(sharer, sharer->rx.available), 0);
    assert_int_equal(sharer->rx.available, 2);

    /* one comes back to the owner's pool: the sharer posts it, to the SRQ */
    ucs_mpool_put((void*)(uintptr_t)ctx->posted[TEST_MAX_BUFS - 1].wr_id);
    ctx->posted[TEST_MAX_BUFS - 1].wr_id = 0;
    assert_int_equal(qpx_iface_rx_post(sharer, sharer->rx.available), 1);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS + 1);
    assert_int_equal(sharer->rx.available, 1);
    test_check_posted(TEST_MAX_BUFS);

    /* a released buffer goes back to the SRQ as it is */
    test_release(sharer, test_complete(2));
    assert_int_equal(qpx_iface_rx_post(sharer, sharer->rx.available), 1);
    assert_int_equal(ctx->num_posted, TEST_MAX_BUFS + 2);

    /* the handlers release what they kept (uct_iface_release_desc) */
    ucs_mpool_put(kept[0]);
    ucs_mpool_put(kept[1]);
    free(sharer);
}


/* A sharer's layout from the owner's landing point (TEST_HDR_OFF): taken
 * where its private bytes, the release pointer and its headroom fit before
 * its payload and the owner's buffers are long enough; refused, and left
 * as it was, otherwise */
static void test_share_layout(void **state)
{
    qpx_iface_t *sharer = calloc(1, sizeof(*sharer));
    qpx_iface_t other_port;
    qpx_rx_desc_t *desc;

    (void)state;
    assert_non_null(sharer);
    ctx->iface.port_num = 1;
    sharer->port_num    = 1;
    sharer->rx.batch    = TEST_BATCH;

    /* RC-like: a 1-byte header, no private bytes, 8 bytes of headroom: the
     * payload right after the landing point, the headroom before it */
    sharer->config.seg_size           = TEST_SEG_SIZE / 2;
    sharer->config.rx_hdr_len         = 1;
    sharer->config.rx_priv_len        = 0;
    sharer->config.rx_headroom        = 8;
    sharer->config.rx_hdr_offset      = 99;
    assert_true(qpx_iface_rx_share_layout(sharer, &ctx->iface));
    assert_int_equal(sharer->config.rx_hdr_offset, TEST_HDR_OFF);
    assert_int_equal(sharer->config.rx_payload_offset, TEST_HDR_OFF + 1);
    assert_int_equal(sharer->config.rx_headroom_offset, TEST_HDR_OFF + 1 - 8);
    /* what it posts are the owner's buffers, whose WRs say the owner's
     * length and landing point (every buffer in the SRQ of one length) */
    desc = (qpx_rx_desc_t*)qpx_iface_rx_desc_get(&ctx->iface);
    assert_non_null(desc);
    assert_int_equal(desc->sge.length, TEST_SEG_SIZE);
    assert_int_equal(desc->sge.addr, (uintptr_t)desc + TEST_HDR_OFF);
    assert_int_equal(desc->wr.wr_id, (uintptr_t)desc);
    qpx_iface_rx_desc_put(&ctx->iface, desc);

    /* UD-like: GRH and header of 56 bytes, 8 private bytes, 32 of
     * headroom: the payload 56 bytes after the landing point */
    sharer->config.rx_hdr_len  = 56;
    sharer->config.rx_priv_len = 8;
    sharer->config.rx_headroom = 32;
    assert_true(qpx_iface_rx_share_layout(sharer, &ctx->iface));
    assert_int_equal(sharer->config.rx_payload_offset, TEST_HDR_OFF + 56);
    assert_int_equal(sharer->config.rx_headroom_offset,
                     TEST_HDR_OFF + 56 - 32);

    /* no room: the headroom and release pointer would cover the private
     * bytes (72 + 1 < 56 + 8 + 8 + 16), or the private bytes the landing
     * point */
    sharer->config.rx_hdr_len         = 1;
    sharer->config.rx_priv_len        = 8;
    sharer->config.rx_headroom        = 16;
    sharer->config.rx_payload_offset  = 7;
    assert_false(qpx_iface_rx_share_layout(sharer, &ctx->iface));
    assert_int_equal(sharer->config.rx_payload_offset, 7);
    sharer->config.rx_headroom = 0;
    sharer->config.rx_priv_len = TEST_HDR_OFF;
    assert_false(qpx_iface_rx_share_layout(sharer, &ctx->iface));

    /* owner's buffers shorter than the sharer's segment, another port, an
     * owner without an SRQ, none */
    sharer->config.rx_priv_len = 0;
    sharer->config.seg_size    = TEST_SEG_SIZE + 1;
    assert_false(qpx_iface_rx_share_layout(sharer, &ctx->iface));
    sharer->config.seg_size = TEST_SEG_SIZE;
    assert_true(qpx_iface_rx_share_layout(sharer, &ctx->iface));
    other_port          = ctx->iface;
    other_port.port_num = 2;
    assert_false(qpx_iface_rx_share_layout(sharer, &other_port));
    other_port.port_num = 1;
    other_port.srq      = NULL;
    assert_false(qpx_iface_rx_share_layout(sharer, &other_port));
    assert_false(qpx_iface_rx_share_layout(sharer, NULL));
    free(sharer);
}


#define TEST_POOL_ROUNDS 100000

typedef struct {
    qpx_iface_t *iface;
    unsigned    got;
} test_pool_thread_t;

/* Take and give back buffers of iface's pool as fast as it can */
static void *test_pool_thread(void *arg)
{
    test_pool_thread_t *t = arg;
    qpx_desc_t *held[3];
    unsigned i, j;

    for (i = 0; i < TEST_POOL_ROUNDS; ++i) {
        for (j = 0; j < 3; ++j) {
            held[j] = qpx_iface_rx_desc_get(t->iface);
            t->got += (held[j] != NULL);
        }
        for (j = 0; j < 3; ++j) {
            if (held[j] != NULL) {
                qpx_iface_rx_desc_put(t->iface, held[j]);
            }
        }
    }
    return NULL;
}

/* A sharer that uses the owner's pool from another thread locks it: the
 * owner's thread and the sharer's take and give back buffers at once, and
 * the pool ends whole (every buffer can be taken once, no more) */
static void test_pool_lock(void **state)
{
    qpx_iface_t *sharer = calloc(1, sizeof(*sharer));
    test_pool_thread_t threads[2];
    qpx_desc_t *all[TEST_MAX_BUFS + 1];
    pthread_t tid[2];
    unsigned i, n;

    (void)state;
    assert_non_null(sharer);
    assert_int_equal(ucs_spinlock_init(&ctx->iface.rx_mp_lock, 0), UCS_OK);

    /* not shared: nothing to lock (the async context serializes) */
    qpx_iface_rx_pool_lock(&ctx->iface);
    assert_false(ctx->iface.rx_mp_locked);

    sharer->rx_owner = &ctx->iface;
    qpx_iface_rx_pool_lock(sharer);
    assert_true(ctx->iface.rx_mp_locked);

    threads[0].iface = &ctx->iface;
    threads[1].iface = sharer;
    for (i = 0; i < 2; ++i) {
        threads[i].got = 0;
        assert_int_equal(pthread_create(&tid[i], NULL, test_pool_thread,
                                        &threads[i]), 0);
    }
    for (i = 0; i < 2; ++i) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        assert_true(threads[i].got > 0);
    }

    for (n = 0; (n <= TEST_MAX_BUFS) &&
                ((all[n] = qpx_iface_rx_desc_get(sharer)) != NULL); ++n) {
    }
    assert_int_equal(n, TEST_MAX_BUFS);
    for (i = 0; i < n; ++i) {
        qpx_iface_rx_desc_put(&ctx->iface, all[i]);
    }
    ctx->iface.rx_mp_locked = 0;
    ucs_spinlock_destroy(&ctx->iface.rx_mp_lock);
    free(sharer);
}


/* An owner that cannot post its first fill says so */
static void test_fill_fails(void **state)
{
    (void)state;
    ctx->fail_at = 0;
    assert_int_equal(qpx_iface_rx_fill(&ctx->iface),
                     UCS_ERR_NO_MEMORY);
}


/* The first fill arms the limit at a quarter of the queue; each limit
 * event doubles the queue up to its maximum, posts what was owed and the
 * added buffers at once, and arms the limit again until the maximum */
static void test_grow(void **state)
{
    qpx_iface_t *iface = &ctx->iface;

    (void)state;
    test_num_limits     = 0;
    test_modify_ret     = 0;
    iface->rx.queue_len = 4;
    iface->rx.available = 4;
    iface->rx.queue_max = 10;
    assert_int_equal(qpx_iface_rx_fill(iface), UCS_OK);
    assert_int_equal(ctx->num_posted, 4);
    assert_int_equal(test_num_limits, 1);
    assert_int_equal(test_limits[0], 1);

    /* one buffer consumed and owed (below a batch): posted with the 4 */
    ucs_mpool_put(test_complete(0));
    iface->rx.available = 1;
    iface->rx.limit_hit = 1; /* as qpx_iface_rx_limit_reached sets them */
    iface->rx.low       = 1;
    qpx_iface_rx_tend(iface);
    assert_int_equal(iface->rx.low, 0);
    assert_int_equal(iface->rx.limit_hit, 0);
    assert_int_equal(iface->rx.queue_len, 8);
    assert_int_equal(ctx->num_posted, 4 + 5);
    assert_int_equal(iface->rx.available, 0);
    assert_int_equal(test_num_limits, 2);
    assert_int_equal(test_limits[1], 2);
    test_check_posted(4);

    /* capped at the maximum, and no limit armed there */
    iface->rx.limit_hit = 1;
    iface->rx.low       = 1;
    qpx_iface_rx_tend(iface);
    assert_int_equal(iface->rx.queue_len, 10);
    assert_int_equal(ctx->num_posted, 4 + 5 + 2);
    assert_int_equal(test_num_limits, 2);
    assert_int_equal(iface->rx.grows, 2);
}

/* A device without the SRQ limit: the queue keeps its size */
static void test_grow_unsupported(void **state)
{
    qpx_iface_t *iface = &ctx->iface;

    (void)state;
    test_num_limits     = 0;
    test_modify_ret     = EOPNOTSUPP;
    iface->rx.queue_len = 4;
    iface->rx.available = 4;
    iface->rx.queue_max = 10;
    assert_int_equal(qpx_iface_rx_fill(iface), UCS_OK);
    assert_int_equal(iface->rx.queue_max, 4);
    assert_int_equal(test_num_limits, 0);
    test_modify_ret = 0;
}


/* Without an SRQ or a QP there is nowhere to post yet */
static void test_no_queue(void **state)
{
    (void)state;
    ctx->iface.srq = NULL;
    assert_int_equal(qpx_iface_rx_post(&ctx->iface, TEST_BATCH), 0);
    assert_int_equal(ctx->num_calls, 0);
    assert_int_equal(ctx->iface.rx.available, 16);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_post_batches, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_release_recycles, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_recycled_beyond_count,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_kept_posts_at_once, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_kept_and_released, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_post_fails, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pool_starved, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pool_empty, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_no_queue, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_shared_srq, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_share_layout, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pool_lock, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_fill_fails, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_grow, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_grow_unsupported, test_setup,
                                        test_teardown)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
