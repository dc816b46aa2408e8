/*
 * Unit tests of qpx_rc's active-message flow control (rc/): the window an
 * endpoint gets from FC_WND_SIZE and the shared receive queue
 * (qpx_rc_fc_window), the credits a sender has (qpx_rc_ep_has_fc_credits:
 * messages sent less those the peer reported consumed), and the credit
 * update (qpx_rc_ep_fc_update): an inline RDMA write of the consumed count
 * to the peer's control word, or, without a send slot, a CQ entry or a
 * connection, a flag that makes the next progress try again. The QP's
 * context has a post_send op of the test's (ibv_post_send is inline) to see
 * what is posted; the interface and the endpoint are zeroed structures with
 * what these functions read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/rc/qpx_rc_ep.inl>


static struct {
    int                 calls;
    int                 fail;       /* errno to answer */
    enum ibv_wr_opcode  opcode;
    uint64_t            remote_addr;
    uint32_t            rkey;
    uint64_t            value;      /* the inline payload */
    unsigned            send_flags;
} post;

/* ibv_post_send is inline in verbs.h: the QP's context's op is the fake */
static int test_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                          struct ibv_send_wr **bad_wr)
{
    (void)qp;
    ++post.calls;
    if (post.fail) {
        *bad_wr = wr;
        return post.fail;
    }
    post.opcode      = wr->opcode;
    post.remote_addr = wr->wr.rdma.remote_addr;
    post.rkey        = wr->wr.rdma.rkey;
    post.send_flags  = wr->send_flags;
    assert_int_equal(wr->num_sge, 1);
    assert_int_equal(wr->sg_list[0].length, sizeof(uint64_t));
    memcpy(&post.value, (void *)(uintptr_t)wr->sg_list[0].addr,
           sizeof(post.value));
    return 0;
}


typedef struct {
    qpx_rc_iface_t  iface;
    qpx_rc_ep_t     ep;
    qpx_rc_ep_ctl_t ctl;
    struct ibv_qp   qp;
    struct ibv_context context;
} test_ctx_t;

static test_ctx_t *ctx;

static int test_setup(void **state)
{
    (void)state;
    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ctx->iface.config.fc_wnd    = 8;
    ctx->iface.config.fc_thresh = 4;
    ctx->iface.super.super.config.tx_moderation = 16;
    ctx->iface.super.super.tx.cq_size           = 32;
    ctx->iface.super.super.tx.cq_available      = 32;
    ctx->qp.qp_num = 0x123;
    ctx->qp.context                = &ctx->context;
    ctx->context.ops.post_send     = test_post_send;
    ctx->ep.super.super.super.iface = &ctx->iface.super.super.super.super;
    ctx->ep.qp              = &ctx->qp;
    ctx->ep.flags           = QPX_RC_EP_FLAG_CONNECTED;
    ctx->ep.tx.sq_available = 4;
    ctx->ep.fc.enabled      = 1;
    ctx->ep.fc.ctl          = &ctx->ctl;
    ctx->ep.fc.remote_addr  = 0x7000;
    ctx->ep.fc.remote_rkey  = 0xabc;
    memset(&post, 0, sizeof(post));
    return 0;
}

static int test_teardown(void **state)
{
    (void)state;
    free(ctx);
    return 0;
}


/* The window: FC_WND_SIZE within the receive queue less one repost batch;
 * a queue no longer than a batch turns flow control off; the update comes
 * at half the window, at least every message */
static void test_window_rule(void **state)
{
    unsigned thresh;

    (void)state;
    assert_int_equal(qpx_rc_fc_window(512, 1024, 16, &thresh), 512);
    assert_int_equal(thresh, 256);
    assert_int_equal(qpx_rc_fc_window(512, 256, 16, &thresh), 240);
    assert_int_equal(thresh, 120);
    assert_int_equal(qpx_rc_fc_window(512, 16, 16, &thresh), 0);
    assert_int_equal(qpx_rc_fc_window(512, 8, 16, &thresh), 0);
    assert_int_equal(qpx_rc_fc_window(0, 1024, 16, &thresh), 0);
    assert_int_equal(qpx_rc_fc_window(1, 1024, 16, &thresh), 1);
    assert_int_equal(thresh, 1);
}

/* Credits: fewer than the window unconsumed at the peer; the peer's
 * reports (its RDMA writes into ctl) give them back; no flow control: any
 * number */
static void test_credits(void **state)
{
    qpx_rc_iface_t *iface = &ctx->iface;
    qpx_rc_ep_t *ep       = &ctx->ep;

    (void)state;
    ep->fc.sent = 7;
    assert_true(qpx_rc_ep_has_fc_credits(iface, ep));
    ep->fc.sent = 8;                          /* the window: 8 unconsumed */
    assert_false(qpx_rc_ep_has_fc_credits(iface, ep));
    ctx->ctl.consumed_by_peer = 1;            /* the peer consumed one */
    assert_true(qpx_rc_ep_has_fc_credits(iface, ep));
    ep->fc.sent = 1000;
    ctx->ctl.consumed_by_peer = 992;
    assert_false(qpx_rc_ep_has_fc_credits(iface, ep));
    ep->fc.enabled = 0;
    assert_true(qpx_rc_ep_has_fc_credits(iface, ep));
}

/* The update: an inline RDMA write of the consumed count to the peer's
 * word, unsignalled, on the endpoint's accounting; reported follows */
static void test_update_posts(void **state)
{
    qpx_rc_ep_t *ep = &ctx->ep;

    (void)state;
    ep->fc.consumed = 37;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 1);
    assert_int_equal(post.opcode, IBV_WR_RDMA_WRITE);
    assert_int_equal(post.remote_addr, 0x7000);
    assert_int_equal(post.rkey, 0xabc);
    assert_int_equal(post.value, 37);
    assert_true(post.send_flags & IBV_SEND_INLINE);
    assert_false(post.send_flags & IBV_SEND_SIGNALED);
    assert_int_equal(ep->fc.reported, 37);
    assert_int_equal(ep->tx.sn, 1);
    assert_int_equal(ep->tx.sq_available, 3);
    assert_false(ep->flags & QPX_RC_EP_FLAG_FC_UPDATE);
}

/* No send slot, no CQ entry, no connection or an error: nothing posted,
 * the update marked due; once there is room it goes and the mark goes */
static void test_update_deferred(void **state)
{
    qpx_rc_iface_t *iface = &ctx->iface;
    qpx_rc_ep_t *ep       = &ctx->ep;

    (void)state;
    ep->fc.consumed      = 5;
    ep->tx.sq_available  = 0;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 0);
    assert_true(ep->flags & QPX_RC_EP_FLAG_FC_UPDATE);
    assert_int_equal(ep->fc.reported, 0);

    ep->tx.sq_available = 2;
    iface->super.super.tx.cq_available = 0;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 0);

    iface->super.super.tx.cq_available = 32;
    ep->flags = QPX_RC_EP_FLAG_FC_UPDATE;     /* not connected (yet) */
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 0);

    ep->flags = QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_ERROR |
                QPX_RC_EP_FLAG_FC_UPDATE;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 0);

    ep->flags = QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_FC_UPDATE;
    ep->fc.consumed = 9;                      /* more came meanwhile */
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 1);
    assert_int_equal(post.value, 9);
    assert_int_equal(ep->fc.reported, 9);
    assert_false(ep->flags & QPX_RC_EP_FLAG_FC_UPDATE);
}

/* A post the device refuses: not reported, still due */
static void test_update_post_fails(void **state)
{
    qpx_rc_ep_t *ep = &ctx->ep;

    (void)state;
    ep->fc.consumed = 12;
    post.fail       = ENOMEM;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(post.calls, 1);
    assert_int_equal(ep->fc.reported, 0);
    assert_true(ep->flags & QPX_RC_EP_FLAG_FC_UPDATE);
    assert_int_equal(ep->tx.sq_available, 4); /* nothing taken */
    post.fail = 0;
    qpx_rc_ep_fc_update(ep);
    assert_int_equal(ep->fc.reported, 12);
    assert_false(ep->flags & QPX_RC_EP_FLAG_FC_UPDATE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_rule),
        cmocka_unit_test_setup_teardown(test_credits, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_update_posts, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_update_deferred, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_update_post_fails, test_setup,
                                        test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
