/*
 * Unit tests of the RC family's data path (src/uct/qpx/rdma/
 * qpx_rdma_ops.inl), the put/get/am/atomic operations qpx_rc and qpx_dc
 * share: over a fake transport (its post operations record what they are
 * given), each operation's checks (lengths, AM ids, alignment, atomics
 * off), the work request it describes (opcode, inline or not, signalled or
 * not, the SGEs and the bytes they point to at post time, remote address
 * and key, atomic operands), the operation that completes it, and the send
 * buffer given back whenever the operation does not go (refused post,
 * packed data too long). And async progress's start: what the timer's
 * first round takes is set before the timer is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/rdma/qpx_rdma_ops.inl>


#define TEST_SEG_SIZE   256
#define TEST_MAX_INLINE 64
#define TEST_MAX_IOV    4
#define TEST_MAX_BYTES  512

/* One work request as the fake transport's post saw it */
typedef struct test_post {
    qpx_rdma_wr_t wr;
    struct ibv_sge sge[TEST_MAX_IOV + 1];
    uint8_t        bytes[TEST_MAX_BYTES]; /* what the SGEs held, in order */
    size_t         num_bytes;
} test_post_t;

typedef struct test_ctx {
    qpx_rdma_iface_t iface;
    uct_ep_t         ep;
    ucs_status_t     begin_status;   /* what tx_begin answers */
    ucs_status_t     post_status;    /* what post answers */
    unsigned         begins;
    int              begin_is_am;
    unsigned         posts;
    test_post_t      post;
    unsigned         add_ops;
    ucs_list_link_t  ops;            /* as a transport queues them */
    qpx_op_t         *op;
    qpx_op_cb_t      op_cb;
    uct_completion_t *op_comp;
} test_ctx_t;

static test_ctx_t *ctx;
static const qpx_iface_ops_t test_base_ops = {NULL};
static char test_tx_handle; /* the queue tx_begin names */


static ucs_status_t test_tx_begin(uct_ep_h tl_ep, int is_am, void **tx_p)
{
    assert_ptr_equal(tl_ep, &ctx->ep);
    ++ctx->begins;
    ctx->begin_is_am = is_am;
    if (ctx->begin_status == UCS_OK) {
        *tx_p = &test_tx_handle;
    }
    return ctx->begin_status;
}

static ucs_status_t test_post(uct_ep_h tl_ep, void *tx,
                              const qpx_rdma_wr_t *wr)
{
    test_post_t *p = &ctx->post;
    int i;

    assert_ptr_equal(tl_ep, &ctx->ep);
    assert_ptr_equal(tx, &test_tx_handle);
    assert_true(wr->num_sge <= TEST_MAX_IOV + 1);
    ++ctx->posts;
    p->wr        = *wr;
    p->num_bytes = 0;
    /* The bytes now: an inline request's buffers may go after the post */
    for (i = 0; i < wr->num_sge; ++i) {
        p->sge[i] = wr->sge[i];
        assert_true(p->num_bytes + wr->sge[i].length <= TEST_MAX_BYTES);
        memcpy(p->bytes + p->num_bytes, (void*)(uintptr_t)wr->sge[i].addr,
               wr->sge[i].length);
        p->num_bytes += wr->sge[i].length;
    }
    return ctx->post_status;
}

static void test_add_op(uct_ep_h tl_ep, void *tx, qpx_op_t *op,
                        qpx_op_cb_t cb, uct_completion_t *comp)
{
    assert_ptr_equal(tl_ep, &ctx->ep);
    assert_ptr_equal(tx, &test_tx_handle);
    ++ctx->add_ops;
    qpx_op_add(&ctx->ops, op, ctx->posts, cb, comp, 0);
    ctx->op      = op;
    ctx->op_cb   = cb;
    ctx->op_comp = comp;
}

static const qpx_rdma_post_ops_t test_post_ops = {
    .tx_begin = test_tx_begin,
    .post     = test_post,
    .add_op   = test_add_op
};


static int test_setup(void **state)
{
    /* Kept by the pool: not on this stack */
    static ucs_mpool_ops_t ops = {ucs_mpool_chunk_malloc,
                                  ucs_mpool_chunk_free, NULL, NULL};
    qpx_iface_t *base;

    (void)state;
    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    base                     = &ctx->iface.super;
    base->ops                = &test_base_ops;
    base->config.seg_size    = TEST_SEG_SIZE;
    base->config.max_inline  = TEST_MAX_INLINE;
    ctx->iface.caps.max_put_short = TEST_MAX_INLINE;
    ctx->iface.caps.max_am_short  = TEST_MAX_INLINE - sizeof(qpx_rdma_hdr_t);
    ctx->iface.caps.max_bcopy     = TEST_SEG_SIZE;
    ctx->iface.caps.max_zcopy     = 1ul << 20;
    ctx->iface.caps.max_iov       = TEST_MAX_IOV;
    ctx->iface.caps.am_hdr_len    = sizeof(qpx_rdma_hdr_t);
    ctx->iface.caps.atomics       = 1;
    /* Two send buffers: enough to see one given back and taken again;
     * with room beyond the segment, where a pack callback that breaks
     * UCT's contract writes before the operation refuses its length */
    assert_int_equal(ucs_mpool_init(&base->tx_mp, 0,
                                    sizeof(qpx_tx_desc_t) + TEST_SEG_SIZE +
                                    64, 0, 8, 2, 2, &ops, "test_rdma_tx"),
                     UCS_OK);
    ucs_list_head_init(&ctx->ops);
    ctx->ep.iface      = &base->super.super;
    ctx->begin_status  = UCS_OK;
    ctx->post_status   = UCS_OK;
    return 0;
}

static int test_teardown(void **state)
{
    (void)state;
    assert_true(ucs_list_is_empty(&ctx->ops)); /* every op finished */
    ucs_mpool_cleanup(&ctx->iface.super.tx_mp, 1);
    free(ctx);
    return 0;
}


/* The device completed everything posted: the ops run, in order */
static void test_complete(void)
{
    qpx_ops_complete(&ctx->ops, ctx->posts, UCS_OK);
}

/* Both send buffers are in the pool (none kept by a failed operation) */
static void test_check_pool_full(void)
{
    void *a = ucs_mpool_get(&ctx->iface.super.tx_mp);
    void *b = ucs_mpool_get(&ctx->iface.super.tx_mp);

    assert_non_null(a);
    assert_non_null(b);
    ucs_mpool_put(a);
    ucs_mpool_put(b);
}

static void test_comp_cb(uct_completion_t *comp)
{
    (void)comp;
}

static size_t test_pack(void *dest, void *arg)
{
    size_t length = *(size_t*)arg;

    memset(dest, 0x5a, length);
    return length;
}


static void test_put_short(void **state)
{
    uint8_t buf[TEST_MAX_INLINE + 1];
    ucs_status_t status;

    (void)state;
    memset(buf, 0xa5, sizeof(buf));
    status = qpx_rdma_ep_put_short(&test_post_ops, &ctx->ep, buf,
                                   TEST_MAX_INLINE + 1, 0x1000, 0x77);
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    assert_int_equal(ctx->begins, 0);

    status = qpx_rdma_ep_put_short(&test_post_ops, &ctx->ep, buf, 16, 0x1000,
                                   0x77);
    assert_int_equal(status, UCS_OK);
    assert_int_equal(ctx->begin_is_am, 0);
    assert_int_equal(ctx->posts, 1);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(ctx->post.wr.send_flags, IBV_SEND_INLINE);
    assert_int_equal(ctx->post.wr.signal, 0);
    assert_int_equal(ctx->post.wr.remote_addr, 0x1000);
    assert_int_equal(ctx->post.wr.rkey, 0x77);
    assert_int_equal(ctx->post.wr.num_sge, 1);
    assert_int_equal(ctx->post.num_bytes, 16);
    assert_memory_equal(ctx->post.bytes, buf, 16);
    assert_int_equal(ctx->add_ops, 0); /* nothing to complete */

    /* No room: the transport's answer, nothing posted */
    ctx->begin_status = UCS_ERR_NO_RESOURCE;
    status = qpx_rdma_ep_put_short(&test_post_ops, &ctx->ep, buf, 16, 0x1000,
                                   0x77);
    assert_int_equal(status, UCS_ERR_NO_RESOURCE);
    assert_int_equal(ctx->posts, 1);
}

static void test_am_short(void **state)
{
    const uint64_t header = 0x0102030405060708ull;
    uint8_t payload[8]    = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t expect[1 + sizeof(header) + sizeof(payload)];
    ucs_status_t status;

    (void)state;
    status = qpx_rdma_ep_am_short(&test_post_ops, &ctx->ep, UCT_AM_ID_MAX,
                                  header, payload, sizeof(payload));
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    status = qpx_rdma_ep_am_short(&test_post_ops, &ctx->ep, 3, header,
                                  payload, TEST_MAX_INLINE);
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    assert_int_equal(ctx->begins, 0);

    status = qpx_rdma_ep_am_short(&test_post_ops, &ctx->ep, 3, header,
                                  payload, sizeof(payload));
    assert_int_equal(status, UCS_OK);
    assert_int_equal(ctx->begin_is_am, 1); /* a credit, where there are */
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_SEND);
    assert_int_equal(ctx->post.wr.send_flags, IBV_SEND_INLINE);
    assert_int_equal(ctx->post.wr.num_sge, 2);
    /* The id, the header as it is in memory, the payload */
    expect[0] = 3;
    memcpy(expect + 1, &header, sizeof(header));
    memcpy(expect + 1 + sizeof(header), payload, sizeof(payload));
    assert_int_equal(ctx->post.num_bytes, sizeof(expect));
    assert_memory_equal(ctx->post.bytes, expect, sizeof(expect));

    /* No payload: the header alone, still two SGEs (the second empty: a
     * constant count, which the direct path's inline copy unrolls) */
    status = qpx_rdma_ep_am_short(&test_post_ops, &ctx->ep, 4, header, NULL,
                                  0);
    assert_int_equal(status, UCS_OK);
    assert_int_equal(ctx->post.wr.num_sge, 2);
    assert_int_equal(ctx->post.num_bytes, 1 + sizeof(header));
}

static void test_am_bcopy(void **state)
{
    size_t length;
    ssize_t ret;

    (void)state;
    /* Small: inline, the buffer goes back when the request completes */
    length = 16;
    ret    = qpx_rdma_ep_am_bcopy(&test_post_ops, &ctx->ep, 7, test_pack,
                                  &length);
    assert_int_equal(ret, 16);
    assert_int_equal(ctx->begin_is_am, 1);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_SEND);
    assert_int_equal(ctx->post.wr.send_flags, IBV_SEND_INLINE);
    assert_int_equal(ctx->post.num_bytes, 1 + length);
    assert_int_equal(ctx->post.bytes[0], 7);
    assert_int_equal(ctx->post.bytes[length], 0x5a);
    assert_int_equal(ctx->add_ops, 1);
    assert_ptr_equal(ctx->op_cb, qpx_op_release);
    test_complete();
    test_check_pool_full();

    /* Above the inline room: from the registered buffer */
    length = TEST_MAX_INLINE;
    ret    = qpx_rdma_ep_am_bcopy(&test_post_ops, &ctx->ep, 7, test_pack,
                                  &length);
    assert_int_equal(ret, TEST_MAX_INLINE);
    assert_int_equal(ctx->post.wr.send_flags, 0);
    test_complete();

    /* Packed more than a segment holds beside the header: refused, the
     * buffer given back, nothing posted */
    length = TEST_SEG_SIZE;
    ret    = qpx_rdma_ep_am_bcopy(&test_post_ops, &ctx->ep, 7, test_pack,
                                  &length);
    assert_int_equal(ret, UCS_ERR_INVALID_PARAM);
    assert_int_equal(ctx->posts, 2);
    test_check_pool_full();

    /* A refused post gives the buffer back too */
    length           = 16;
    ctx->post_status = UCS_ERR_IO_ERROR;
    ret              = qpx_rdma_ep_am_bcopy(&test_post_ops, &ctx->ep, 7,
                                            test_pack, &length);
    assert_int_equal(ret, UCS_ERR_IO_ERROR);
    assert_int_equal(ctx->add_ops, 2);
    test_check_pool_full();
}

static void test_put_get_bcopy(void **state)
{
    uct_completion_t comp = {test_comp_cb, 1, UCS_OK};
    size_t length         = 100;
    ssize_t ret;
    ucs_status_t status;
    qpx_tx_desc_t *desc;

    (void)state;
    ret = qpx_rdma_ep_put_bcopy(&test_post_ops, &ctx->ep, test_pack, &length,
                                0x2000, 0x11);
    assert_int_equal(ret, 100);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(ctx->post.wr.send_flags, 0);
    assert_int_equal(ctx->post.wr.remote_addr, 0x2000);
    assert_int_equal(ctx->post.num_bytes, 100);
    assert_ptr_equal(ctx->op_cb, qpx_op_release);
    test_complete();

    status = qpx_rdma_ep_get_bcopy(&test_post_ops, &ctx->ep, NULL, NULL,
                                   TEST_SEG_SIZE + 1, 0x3000, 0x22, &comp);
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    status = qpx_rdma_ep_get_bcopy(&test_post_ops, &ctx->ep, NULL, &comp, 64,
                                   0x3000, 0x22, &comp);
    assert_int_equal(status, UCS_INPROGRESS);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_RDMA_READ);
    assert_int_equal(ctx->post.wr.signal, 1); /* the data comes with it */
    assert_int_equal(ctx->post.wr.sge[0].length, 64);
    assert_ptr_equal(ctx->op_cb, qpx_op_get_bcopy);
    assert_ptr_equal(ctx->op_comp, &comp);
    desc = ucs_container_of(ctx->op, qpx_tx_desc_t, op);
    assert_int_equal(desc->op.get.length, 64);
    assert_ptr_equal(desc->op.get.arg, &comp);
    ucs_list_del(&ctx->op->list); /* its data is not unpacked here */
    ucs_mpool_put(desc);
    test_check_pool_full();
}

static void test_zcopy(void **state)
{
    uint8_t a[32], b[16];
    uct_iov_t iov[3];
    uct_completion_t comp = {test_comp_cb, 1, UCS_OK};
    ucs_status_t status;

    (void)state;
    memset(a, 1, sizeof(a));
    memset(b, 2, sizeof(b));
    memset(iov, 0, sizeof(iov));
    iov[0].buffer = a;
    iov[0].length = sizeof(a);
    iov[0].count  = 1;
    iov[1].buffer = a; /* empty: no SGE */
    iov[1].count  = 1;
    iov[2].buffer = b;
    iov[2].length = sizeof(b);
    iov[2].count  = 1;

    /* Without a completion: no buffer, unsignalled, nothing to complete */
    status = qpx_rdma_ep_rdma_zcopy(&test_post_ops, &ctx->ep, "put_zcopy",
                                    IBV_WR_RDMA_WRITE, iov, 3, 0x4000, 0x33,
                                    NULL);
    assert_int_equal(status, UCS_INPROGRESS);
    assert_int_equal(ctx->post.wr.signal, 0);
    assert_int_equal(ctx->post.wr.num_sge, 2);
    assert_int_equal(ctx->post.num_bytes, sizeof(a) + sizeof(b));
    assert_int_equal(ctx->add_ops, 0);

    status = qpx_rdma_ep_rdma_zcopy(&test_post_ops, &ctx->ep, "get_zcopy",
                                    IBV_WR_RDMA_READ, iov, 3, 0x4000, 0x33,
                                    &comp);
    assert_int_equal(status, UCS_INPROGRESS);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_RDMA_READ);
    assert_int_equal(ctx->post.wr.signal, 1);
    assert_ptr_equal(ctx->op_cb, qpx_op_comp_release);
    test_complete(); /* comp_release: comp down to 0 */
    assert_int_equal(comp.count, 0);
    comp.count = 1;

    /* More entries than the iov limit: refused before anything */
    status = qpx_rdma_ep_rdma_zcopy(&test_post_ops, &ctx->ep, "put_zcopy",
                                    IBV_WR_RDMA_WRITE, iov, TEST_MAX_IOV + 1,
                                    0x4000, 0x33, NULL);
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    assert_int_equal(ctx->posts, 2);

    /* am_zcopy: id, user header in the buffer, then the iov */
    status = qpx_rdma_ep_am_zcopy(&test_post_ops, &ctx->ep, 9, "hdr", 3, iov,
                                  3, &comp);
    assert_int_equal(status, UCS_INPROGRESS);
    assert_int_equal(ctx->begin_is_am, 1);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_SEND);
    assert_int_equal(ctx->post.wr.num_sge, 3);
    assert_int_equal(ctx->post.num_bytes, 1 + 3 + sizeof(a) + sizeof(b));
    assert_int_equal(ctx->post.bytes[0], 9);
    assert_memory_equal(ctx->post.bytes + 1, "hdr", 3);
    assert_int_equal(ctx->post.bytes[4], 1);
    test_complete();
    assert_int_equal(comp.count, 0);
    test_check_pool_full();
}

static void test_atomics(void **state)
{
    uct_completion_t comp = {test_comp_cb, 1, UCS_OK};
    uint64_t result       = 0;
    ucs_status_t status;
    qpx_tx_desc_t *desc;

    (void)state;
    /* Misaligned: refused; atomics off: unsupported */
    status = qpx_rdma_ep_atomic(&test_post_ops, &ctx->ep,
                                IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 0x5004,
                                0x44, &result, &comp);
    assert_int_equal(status, UCS_ERR_INVALID_PARAM);
    ctx->iface.caps.atomics = 0;
    status = qpx_rdma_ep_atomic(&test_post_ops, &ctx->ep,
                                IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 0x5000,
                                0x44, &result, &comp);
    assert_int_equal(status, UCS_ERR_UNSUPPORTED);
    ctx->iface.caps.atomics = 1;
    assert_int_equal(ctx->begins, 0);

    /* A post: nobody waits, unsignalled, the buffer goes with it */
    status = qpx_rdma_ep_atomic(&test_post_ops, &ctx->ep,
                                IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, 0x5000,
                                0x44, NULL, NULL);
    assert_int_equal(status, UCS_OK);
    assert_int_equal(ctx->post.wr.signal, 0);
    assert_int_equal(ctx->post.wr.compare_add, 5);
    assert_ptr_equal(ctx->op_cb, qpx_op_release);
    test_complete();

    /* A compare-swap whose old value lands in result */
    status = qpx_rdma_ep_atomic(&test_post_ops, &ctx->ep,
                                IBV_WR_ATOMIC_CMP_AND_SWP, 7, 8, 0x5008,
                                0x44, &result, &comp);
    assert_int_equal(status, UCS_INPROGRESS);
    assert_int_equal(ctx->post.wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
    assert_int_equal(ctx->post.wr.signal, 1);
    assert_int_equal(ctx->post.wr.compare_add, 7);
    assert_int_equal(ctx->post.wr.swap, 8);
    assert_int_equal(ctx->post.wr.remote_addr, 0x5008);
    assert_int_equal(ctx->post.wr.sge[0].length, sizeof(uint64_t));
    assert_ptr_equal(ctx->op_cb, qpx_op_atomic_fetch);
    desc = ucs_container_of(ctx->op, qpx_tx_desc_t, op);
    assert_ptr_equal(desc->op.result, &result);
    /* The device wrote the old value into the buffer */
    *(uint64_t*)qpx_tx_desc_data(desc) = 42;
    test_complete();
    assert_int_equal(result, 42);
    assert_int_equal(comp.count, 0);
    test_check_pool_full();
}


/* The timer as async progress starts it: its first round may run on the
 * async thread before the start returns (under valgrind, qpx_dc's did, and
 * blocked a NULL context: qpx-valgrind.sh), so the context it blocks must
 * be set already; not started here (no thread runs it) */
static int test_timer_starts;
static ucs_status_t test_timer_status;

ucs_status_t __wrap_qpx_iface_timer_start(qpx_iface_t *iface,
                                          double interval,
                                          ucs_async_event_cb_t cb, void *arg,
                                          qpx_iface_timer_t *timer)
{
    qpx_rdma_iface_t *rdma = arg;

    (void)interval;
    (void)cb;
    assert_ptr_equal(rdma, ucs_derived_of(iface, qpx_rdma_iface_t));
    assert_non_null(rdma->async.ctx);
    assert_ptr_equal(rdma->async.ctx, iface->super.worker->async);
    ++test_timer_starts;
    timer->fd = -1;
    timer->id = -1;
    return test_timer_status;
}

static unsigned test_wc_cb(qpx_iface_t *iface, struct ibv_wc *wc, int n)
{
    (void)iface;
    (void)wc;
    return (unsigned)n;
}

static void test_async_start(void **state)
{
    static qpx_rdma_tl_t tl = {.name = "test_rdma"};
    qpx_rdma_iface_t *iface = &ctx->iface;
    uct_iface_ops_t *ops    = &iface->super.super.super.ops;
    ucs_async_context_t *async;
    uct_worker_h worker;

    (void)state;
    tl.rx_wc = test_wc_cb;
    tl.tx_wc = test_wc_cb;
    assert_int_equal(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                              &async), UCS_OK);
    assert_int_equal(uct_worker_create(async, UCS_THREAD_MODE_SINGLE,
                                       &worker), UCS_OK);
    iface->tl                  = &tl;
    iface->super.super.worker  = (uct_priv_worker_t*)worker;
    qpx_rdma_iface_async_init(iface);

    /* refused: nothing changes, no context kept */
    test_timer_status = UCS_ERR_IO_ERROR;
    assert_int_equal(qpx_rdma_iface_async_start(iface, 0.001),
                     UCS_ERR_IO_ERROR);
    assert_int_equal(test_timer_starts, 1);
    assert_null(iface->async.ctx);
    assert_null(ops->ep_am_short);

    test_timer_status = UCS_OK;
    assert_int_equal(qpx_rdma_iface_async_start(iface, 0.001), UCS_OK);
    assert_int_equal(test_timer_starts, 2);
    assert_ptr_equal(iface->async.ctx, async);
    assert_non_null(ops->ep_am_short); /* the wrappers that block it */

    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_short, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_am_short, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_am_bcopy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_put_get_bcopy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_zcopy, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_atomics, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_async_start, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
