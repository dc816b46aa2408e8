/*
 * Unit tests of qpx_ud's posting (qpx_ud.inl): the flags, wr_id and SGEs
 * of each WR, the completion moderation of inline sends (one signaled in
 * TX_MODERATION, its wr_id the slots it returns), sends from descriptors
 * (always signaled, counted in desc->posted), and posts that the device
 * refuses: the send slot stays free and the counters are as before the
 * post (qpx_ud_iface_post_failed), whichever kind of WR failed. The QP is
 * a fake whose post_send (called through the context's ops, as
 * ibv_post_send does) records the WR, or refuses it when told.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include <uct/qpx/ud/qpx_ud.inl>


#define TEST_MODERATION  4
#define TEST_AVAILABLE   32
#define TEST_MAX_INLINE  64
#define TEST_QPN         0x123

typedef struct test_wr {
    uint64_t wr_id;
    unsigned send_flags;
    int      num_sge;
    uint32_t lengths[1 + QPX_UD_MAX_IOV];
    uint32_t lkey0;
    uint32_t remote_qpn;
    uint32_t remote_qkey;
} test_wr_t;

typedef struct test_ctx {
    qpx_ud_iface_t     iface;
    struct ibv_context verbs_ctx;
    struct ibv_qp      qp;
    qpx_ud_peer_t      peer;
    test_wr_t          posted[128];
    unsigned           num_posted;
    int                fail;    /* errno of the next post, once, or 0 */
    struct {
        qpx_ud_send_desc_t desc;
        char               data[128];
    } buf;
} test_ctx_t;

static test_ctx_t *ctx;


static int test_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                          struct ibv_send_wr **bad_wr)
{
    test_wr_t *rec;
    int i;

    assert_ptr_equal(qp, &ctx->qp);
    assert_null(wr->next); /* one WR per post */
    if (ctx->fail != 0) {
        i         = ctx->fail;
        ctx->fail = 0;
        *bad_wr   = wr;
        return i;
    }

    assert_true(ctx->num_posted < 128);
    rec              = &ctx->posted[ctx->num_posted++];
    rec->wr_id       = wr->wr_id;
    rec->send_flags  = wr->send_flags;
    rec->num_sge     = wr->num_sge;
    rec->lkey0       = wr->sg_list[0].lkey;
    rec->remote_qpn  = wr->wr.ud.remote_qpn;
    rec->remote_qkey = wr->wr.ud.remote_qkey;
    assert_int_equal(wr->opcode, IBV_WR_SEND);
    assert_ptr_equal(wr->wr.ud.ah, ctx->peer.ah);
    for (i = 0; i < wr->num_sge; ++i) {
        rec->lengths[i] = wr->sg_list[i].length;
    }
    return 0;
}

static int test_setup(void **state)
{
    qpx_ud_iface_t *iface;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    iface                            = &ctx->iface;
    ctx->verbs_ctx.ops.post_send     = test_post_send;
    ctx->qp.context                  = &ctx->verbs_ctx;
    ctx->qp.qp_num                   = TEST_QPN;
    ctx->peer.ah                     = (struct ibv_ah*)(uintptr_t)0xa4;
    ctx->peer.key.qpn                = 0x456;
    iface->qp                        = &ctx->qp;
    iface->super.config.max_inline   = TEST_MAX_INLINE;
    iface->tx.available              = TEST_AVAILABLE;
    iface->tx.moderation             = TEST_MODERATION;
    qpx_ud_iface_tx_wrs_init(iface); /* as the interface does at open */
    ctx->buf.desc.super.lkey         = 0x77;
    *state                           = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    free(*state);
    ctx = NULL;
    return 0;
}

/* A descriptor of length bytes (header included), no iovs, not posted */
static qpx_ud_send_desc_t *test_desc(unsigned length)
{
    qpx_ud_send_desc_t *desc = &ctx->buf.desc;

    desc->length   = length;
    desc->posted   = 0;
    desc->released = 0;
    desc->iovcnt   = 0;
    desc->sq_slots = 0;
    return desc;
}

/* Two header-only packets, inline and unsignaled: two slots taken */
static void test_post_two_hdrs(void)
{
    qpx_ud_hdr_t hdr = {0};

    qpx_ud_iface_post_hdr_inline(&ctx->iface, &ctx->peer, &hdr);
    qpx_ud_iface_post_hdr_inline(&ctx->iface, &ctx->peer, &hdr);
    assert_int_equal(ctx->iface.tx.unsignaled, 2);
}

/* Header-only packets go inline: TEST_MODERATION - 1 unsignaled, then a
 * signaled one whose wr_id is the slots it returns; the counters follow */
static void test_inline_moderation(void **state)
{
    qpx_ud_iface_t *iface = &ctx->iface;
    qpx_ud_hdr_t hdr      = {0};
    unsigned i;

    (void)state;
    for (i = 0; i < 2 * TEST_MODERATION; ++i) {
        qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    }

    assert_int_equal(ctx->num_posted, 2 * TEST_MODERATION);
    for (i = 0; i < 2 * TEST_MODERATION; ++i) {
        assert_int_equal(ctx->posted[i].num_sge, 1);
        assert_int_equal(ctx->posted[i].lengths[0], sizeof(hdr));
        assert_int_equal(ctx->posted[i].remote_qpn, 0x456);
        assert_int_equal(ctx->posted[i].remote_qkey, QPX_UD_QKEY);
        if ((i % TEST_MODERATION) == (TEST_MODERATION - 1)) {
            assert_int_equal(ctx->posted[i].send_flags,
                             IBV_SEND_INLINE | IBV_SEND_SIGNALED);
            assert_int_equal(ctx->posted[i].wr_id, TEST_MODERATION);
        } else {
            assert_int_equal(ctx->posted[i].send_flags, IBV_SEND_INLINE);
            assert_int_equal(ctx->posted[i].wr_id, 0);
        }
    }
    assert_int_equal(iface->tx.available,
                     TEST_AVAILABLE - 2 * TEST_MODERATION);
    assert_int_equal(iface->tx.signaled, 2);
    assert_int_equal(iface->tx.unsignaled, 0);
}

/* A refused inline post, unsignaled and signaled: nothing is counted, and
 * the next post asks for the completion the refused one would have */
static void test_inline_refused(void **state)
{
    qpx_ud_iface_t *iface = &ctx->iface;
    qpx_ud_hdr_t hdr      = {0};
    unsigned i;

    (void)state;
    qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    ctx->fail = ENOMEM;
    qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    assert_int_equal(ctx->num_posted, 1);
    assert_int_equal(iface->tx.available, TEST_AVAILABLE - 1);
    assert_int_equal(iface->tx.unsignaled, 1);
    assert_int_equal(iface->tx.signaled, 0);

    /* up to the one that is signaled, refused */
    for (i = 1; i < TEST_MODERATION - 1; ++i) {
        qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    }
    assert_int_equal(iface->tx.unsignaled, TEST_MODERATION - 1);
    ctx->fail = EIO;
    qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    assert_int_equal(ctx->num_posted, TEST_MODERATION - 1);
    assert_int_equal(iface->tx.available,
                     TEST_AVAILABLE - (TEST_MODERATION - 1));
    assert_int_equal(iface->tx.unsignaled, TEST_MODERATION - 1);
    assert_int_equal(iface->tx.signaled, 0);

    /* the next one is signaled, for all the slots */
    qpx_ud_iface_post_hdr_inline(iface, &ctx->peer, &hdr);
    assert_int_equal(ctx->num_posted, TEST_MODERATION);
    assert_int_equal(ctx->posted[TEST_MODERATION - 1].send_flags,
                     IBV_SEND_INLINE | IBV_SEND_SIGNALED);
    assert_int_equal(ctx->posted[TEST_MODERATION - 1].wr_id,
                     TEST_MODERATION);
    assert_int_equal(iface->tx.unsignaled, 0);
    assert_int_equal(iface->tx.signaled, 1);
}

/* A copied packet longer than the inline limit is sent from its
 * descriptor: signaled, wr_id the descriptor, its lkey, the slots since
 * the last signaled one in sq_slots, counted in posted */
static void test_desc_signaled(void **state)
{
    qpx_ud_iface_t *iface = &ctx->iface;
    qpx_ud_send_desc_t *desc;

    (void)state;
    test_post_two_hdrs();
    desc = test_desc(TEST_MAX_INLINE + 1);
    qpx_ud_iface_post_desc(iface, &ctx->peer, desc);
    assert_int_equal(ctx->num_posted, 3);
    assert_int_equal(ctx->posted[2].send_flags, IBV_SEND_SIGNALED);
    assert_int_equal(ctx->posted[2].wr_id, (uintptr_t)desc);
    assert_int_equal(ctx->posted[2].lkey0, 0x77);
    assert_int_equal(ctx->posted[2].lengths[0], TEST_MAX_INLINE + 1);
    assert_int_equal(desc->posted, 1);
    assert_int_equal(desc->sq_slots, 3);
    assert_int_equal(iface->tx.available, TEST_AVAILABLE - 3);
    assert_int_equal(iface->tx.unsignaled, 0);
    assert_int_equal(iface->tx.signaled, 1);

    /* one that fits goes inline, and the descriptor is not counted */
    desc = test_desc(TEST_MAX_INLINE);
    qpx_ud_iface_post_desc(iface, &ctx->peer, desc);
    assert_int_equal(ctx->posted[3].send_flags, IBV_SEND_INLINE);
    assert_int_equal(ctx->posted[3].wr_id, 0);
    assert_int_equal(desc->posted, 0);
    assert_int_equal(iface->tx.unsignaled, 1);
}

/* A refused post from a descriptor: not counted in posted (it stays in
 * its window, to be resent), and the counters as before */
static void test_desc_refused(void **state)
{
    qpx_ud_iface_t *iface = &ctx->iface;
    qpx_ud_send_desc_t *desc;

    (void)state;
    test_post_two_hdrs();
    desc      = test_desc(TEST_MAX_INLINE + 8);
    ctx->fail = ENOMEM;
    qpx_ud_iface_post_desc(iface, &ctx->peer, desc);
    assert_int_equal(ctx->num_posted, 2);
    assert_int_equal(desc->posted, 0);
    assert_int_equal(iface->tx.available, TEST_AVAILABLE - 2);
    assert_int_equal(iface->tx.unsignaled, 2);
    assert_int_equal(iface->tx.signaled, 0);

    /* resent: now it goes, with the same slots */
    qpx_ud_iface_post_desc(iface, &ctx->peer, desc);
    assert_int_equal(ctx->num_posted, 3);
    assert_int_equal(desc->posted, 1);
    assert_int_equal(desc->sq_slots, 3);
    assert_int_equal(iface->tx.signaled, 1);
    assert_int_equal(iface->tx.unsignaled, 0);
}

/* A descriptor with user iovs (am_zcopy): one SGE for the header and one
 * per iov, never inline, whatever its length */
static void test_desc_iovs(void **state)
{
    qpx_ud_iface_t *iface = &ctx->iface;
    qpx_ud_send_desc_t *desc;

    (void)state;
    desc                = test_desc(sizeof(qpx_ud_hdr_t));
    desc->iovcnt        = 2;
    desc->iov[0].length = 5;
    desc->iov[0].lkey   = 1;
    desc->iov[1].length = 7;
    desc->iov[1].lkey   = 2;
    qpx_ud_iface_post_desc(iface, &ctx->peer, desc);
    assert_int_equal(ctx->num_posted, 1);
    assert_int_equal(ctx->posted[0].num_sge, 3);
    assert_int_equal(ctx->posted[0].lengths[0], sizeof(qpx_ud_hdr_t));
    assert_int_equal(ctx->posted[0].lengths[1], 5);
    assert_int_equal(ctx->posted[0].lengths[2], 7);
    assert_int_equal(ctx->posted[0].send_flags, IBV_SEND_SIGNALED);
    assert_int_equal(desc->posted, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inline_moderation, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_inline_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_desc_signaled, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_desc_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_desc_iovs, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
