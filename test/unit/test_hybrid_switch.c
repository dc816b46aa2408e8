/*
 * Unit tests of the hybrid's promotion and demotion state machine
 * (hybrid/qpx_hybrid_switch.c, qpx_hybrid_ep.c, qpx_hybrid_ctl.c): every
 * transition of an endpoint (COLD -> PROMOTING -> HOT -> DEMOTING -> COLD,
 * refused, not answered in time, answered late, answered with a stale
 * serial), the responder's connections, the LRU choice of a victim, and
 * a peer lost in each state.
 *
 * Two nodes A and B, each a hybrid interface whose cold and RC
 * sub-interfaces are fakes: a fake endpoint records the active messages
 * sent on it, and the control messages it carries are queued for the
 * peer node, whose control handler gets them when the test delivers
 * ("the network"). Interfaces, endpoints and the control messages are the
 * hybrid's own code. Each test breaks when the rule it names is broken.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/hybrid/qpx_hybrid.inl>
#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>


#define NUM_NODES  2
#define NUM_EPS    3    /* hybrid endpoints of node A */
#define MAX_MSGS   64   /* control messages in flight */
#define MAX_LOG    256  /* data messages sent, both nodes */
#define THRESH     4    /* PROMOTE_THRESH */
#define AM_ID_DATA 5

typedef struct test_fake_iface {
    uct_iface_t  super;
    unsigned     node;
    int          is_rc;
    ucs_status_t create_status; /* what ep_create answers */
    unsigned     creates;
    int          busy;          /* every endpoint's am_bcopy answers
                                   NO_RESOURCE */
} test_fake_iface_t;

typedef struct test_fake_ep {
    uct_ep_t        super;
    unsigned        node;         /* whose */
    unsigned        peer;         /* the node it sends to (RC: once
                                     connected) */
    int             is_rc;
    int             connected;
    ucs_status_t    flush_status; /* what ep_flush answers */
    int             busy;         /* am_bcopy answers NO_RESOURCE */
    ucs_list_link_t list;         /* in ctx->fake_eps */
} test_fake_ep_t;

typedef struct test_node {
    qpx_hybrid_iface_t h;
    test_fake_iface_t  cold;
    test_fake_iface_t  rc;
    qpx_iface_t        rc_core;
    unsigned           errors;    /* reported to the error handler */
    uct_ep_h           err_ep;
    ucs_status_t       err_status;
} test_node_t;

typedef struct test_msg {
    unsigned dst;
    int      on_rc;
    size_t   length;
    uint8_t  data[256];
} test_msg_t;

typedef struct test_log {
    unsigned node;
    int      on_rc;
    uint64_t seq;
} test_log_t;

typedef struct test_ctx {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    test_node_t         node[NUM_NODES];
    uct_ep_h            ep[NUM_EPS];    /* A's hybrid endpoints to B */
    uct_ep_h            b_ep;           /* B's to A, or NULL */
    ucs_list_link_t     fake_eps;
    unsigned            num_fake_eps;
    test_msg_t          msgs[MAX_MSGS];
    unsigned            msg_head, msg_tail;
    unsigned            sent_ctl[QPX_HYBRID_CTL_LAST];
    test_log_t          log[MAX_LOG];
    unsigned            num_log;
    unsigned            prefills;
} test_ctx_t;

static test_ctx_t *ctx;

#define A (&ctx->node[0])
#define B (&ctx->node[1])


/* The pool is not filled ahead: no verbs here */
unsigned __wrap_qpx_iface_qp_prefill(qpx_iface_t *iface, unsigned count)
{
    (void)iface;
    (void)count;
    ++ctx->prefills;
    return 0;
}


static test_fake_ep_t *test_fake(uct_ep_h ep)
{
    return ucs_derived_of(ep, test_fake_ep_t);
}

static test_fake_iface_t *test_fake_iface(uct_iface_h iface)
{
    return ucs_derived_of(iface, test_fake_iface_t);
}

static ucs_status_t test_fake_ep_create(const uct_ep_params_t *params,
                                        uct_ep_h *ep_p)
{
    test_fake_iface_t *iface = test_fake_iface(params->iface);
    test_fake_ep_t *ep;

    if (iface->create_status != UCS_OK) {
        return iface->create_status;
    }
    ep = calloc(1, sizeof(*ep));
    assert_non_null(ep);
    ep->super.iface  = params->iface;
    ep->node         = iface->node;
    ep->is_rc        = iface->is_rc;
    ep->flush_status = UCS_OK;
    if (params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) {
        /* the cold interface's address: the node's number */
        ep->peer      = *(const uint8_t*)params->iface_addr;
        ep->connected = 1;
        assert_true(ep->peer < NUM_NODES);
    }
    ucs_list_add_tail(&ctx->fake_eps, &ep->list);
    ++ctx->num_fake_eps;
    ++iface->creates;
    *ep_p = &ep->super;
    return UCS_OK;
}

static void test_fake_ep_destroy(uct_ep_h tl_ep)
{
    test_fake_ep_t *ep = test_fake(tl_ep);

    ucs_list_del(&ep->list);
    --ctx->num_fake_eps;
    free(ep);
}

static ucs_status_t test_fake_ep_get_address(uct_ep_h tl_ep,
                                             uct_ep_addr_t *addr)
{
    *(uint8_t*)addr = test_fake(tl_ep)->node;
    return UCS_OK;
}

static ucs_status_t test_fake_ep_connect_to_ep(uct_ep_h tl_ep,
                                               const uct_device_addr_t *dev,
                                               const uct_ep_addr_t *ep_addr)
{
    test_fake_ep_t *ep = test_fake(tl_ep);

    (void)dev;
    assert_true(ep->is_rc);
    assert_false(ep->connected);
    ep->peer      = *(const uint8_t*)ep_addr;
    ep->connected = 1;
    return UCS_OK;
}

static ucs_status_t test_fake_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                          uint64_t header, const void *payload,
                                          unsigned length)
{
    test_fake_ep_t *ep = test_fake(tl_ep);

    (void)payload;
    (void)length;
    assert_int_equal(id, AM_ID_DATA);
    assert_true(ep->connected);
    assert_true(ctx->num_log < MAX_LOG);
    ctx->log[ctx->num_log].node  = ep->node;
    ctx->log[ctx->num_log].on_rc = ep->is_rc;
    ctx->log[ctx->num_log].seq   = header;
    ++ctx->num_log;
    return UCS_OK;
}

static ucs_status_t test_fake_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                           unsigned length,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey)
{
    (void)tl_ep;
    (void)buffer;
    (void)length;
    (void)remote_addr;
    (void)rkey;
    return UCS_OK;
}

/* Control messages go to the peer's queue, data ones are refused */
static ssize_t test_fake_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                     uct_pack_callback_t pack_cb, void *arg,
                                     unsigned flags)
{
    test_fake_ep_t *ep = test_fake(tl_ep);
    test_msg_t *msg;
    uint8_t type;

    (void)flags;
    assert_int_equal(id, QPX_HYBRID_AM_ID_CTL);
    assert_true(ep->connected);
    if (ep->busy || test_fake_iface(tl_ep->iface)->busy) {
        return UCS_ERR_NO_RESOURCE;
    }
    assert_true(ctx->msg_tail - ctx->msg_head < MAX_MSGS);
    msg         = &ctx->msgs[ctx->msg_tail++ % MAX_MSGS];
    msg->dst    = ep->peer;
    msg->on_rc  = ep->is_rc;
    msg->length = pack_cb(msg->data, arg);
    assert_true(msg->length <= sizeof(msg->data));
    type = ((qpx_hybrid_ctl_hdr_t*)msg->data)->type;
    assert_true((type > 0) && (type < QPX_HYBRID_CTL_LAST));
    ++ctx->sent_ctl[type];
    return msg->length;
}

static ucs_status_t test_fake_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                       uct_completion_t *comp)
{
    (void)flags;
    (void)comp;
    return test_fake(tl_ep)->flush_status;
}

static unsigned test_fake_iface_progress(uct_iface_h iface)
{
    (void)iface;
    return 0;
}

static void test_fake_iface_init(test_fake_iface_t *iface, unsigned node,
                                 int is_rc)
{
    memset(iface, 0, sizeof(*iface));
    iface->node                       = node;
    iface->is_rc                      = is_rc;
    iface->create_status              = UCS_OK;
    iface->super.ops.ep_create        = test_fake_ep_create;
    iface->super.ops.ep_destroy       = test_fake_ep_destroy;
    iface->super.ops.ep_get_address   = test_fake_ep_get_address;
    iface->super.ops.ep_connect_to_ep = test_fake_ep_connect_to_ep;
    iface->super.ops.ep_am_short      = test_fake_ep_am_short;
    iface->super.ops.ep_am_bcopy      = test_fake_ep_am_bcopy;
    iface->super.ops.ep_put_short     = test_fake_ep_put_short;
    iface->super.ops.ep_flush         = test_fake_ep_flush;
    iface->super.ops.iface_progress   = test_fake_iface_progress;
}

static ucs_status_t test_err_handler(void *arg, uct_ep_h ep,
                                     ucs_status_t status)
{
    test_node_t *node = arg;

    ++node->errors;
    node->err_ep     = ep;
    node->err_status = status;
    return UCS_OK;
}

static void test_node_init(test_node_t *node, unsigned index, unsigned pool)
{
    qpx_hybrid_iface_t *h = &node->h;

    test_fake_iface_init(&node->cold, index, 0);
    test_fake_iface_init(&node->rc, index, 1);
    h->super.super.ops      = qpx_hybrid_iface_ops;
    h->super.worker         = (uct_priv_worker_t*)ctx->worker;
    h->super.err_handler     = test_err_handler;
    h->super.err_handler_arg = node;
    h->cold                 = &node->cold.super;
    h->rc                   = &node->rc.super;
    h->rc_core              = &node->rc_core;
    h->cold_tl              = "qpx_dc";
    h->rc_avail             = 1;
    qpx_ep_table_init(&h->eps);
    qpx_ep_table_init(&h->conns);
    kh_init_inplace(qpx_hybrid_owner, &h->owners);
    ucs_list_head_init(&h->ep_list);
    ucs_list_head_init(&h->pending_eps);
    ucs_list_head_init(&h->work_eps);
    ucs_list_head_init(&h->work_conns);
    ucs_list_head_init(&h->ctl_msgs);
    ucs_list_head_init(&h->ctl_out);
    ucs_list_head_init(&h->retired);
    snprintf(h->open_args.dev_name, sizeof(h->open_args.dev_name), "fake%u",
             index);
    h->config.pool_size      = pool;
    h->config.promote_thresh = THRESH;
    h->config.bytes_shift    = 20;
    h->config.promote_window = 60ull * 1000000000ull;
    h->config.switch_timeout = 60ull * 1000000000ull;
    h->config.pool_batch     = 1;
    h->attr.cap.am.max_short  = 64;
    h->attr.cap.put.max_short = 64;
    h->addr.dev[0]   = 0xd0 + index;
    h->addr.dev_len  = 1;
    h->addr.iface[0] = index;
    h->addr.iface_len = 1;
    h->addr.rc_ep_len = 1;
}

static void test_node_cleanup(test_node_t *node)
{
    qpx_hybrid_iface_t *h = &node->h;
    qpx_hybrid_conn_t *conn;
    qpx_hybrid_ctl_out_t *out;
    qpx_hybrid_ctl_msg_t *msg;
    unsigned i;

    for (i = 0; i < h->conns.capacity; ++i) {
        conn = h->conns.slots[i].obj;
        if (conn != NULL) {
            qpx_hybrid_conn_destroy(h, conn);
        }
    }
    while (!ucs_list_is_empty(&h->ctl_out)) {
        out = ucs_list_extract_head(&h->ctl_out, qpx_hybrid_ctl_out_t, list);
        uct_ep_destroy(out->ep);
        free(out);
    }
    while (!ucs_list_is_empty(&h->ctl_msgs)) {
        msg = ucs_list_extract_head(&h->ctl_msgs, qpx_hybrid_ctl_msg_t, list);
        free(msg);
    }
    /* every retired sub-endpoint is flushed (the fakes say done) */
    (void)qpx_hybrid_iface_retire_progress(h);
    assert_true(ucs_list_is_empty(&h->retired));
    assert_int_equal(h->rc_in_use, 0);
    assert_int_equal(h->rc_retiring, 0);
    kh_destroy_inplace(qpx_hybrid_owner, &h->owners);
    qpx_ep_table_cleanup(&h->eps);
    qpx_ep_table_cleanup(&h->conns);
}

static uct_ep_h test_ep_create(test_node_t *from, unsigned to)
{
    uint8_t iface_addr[2] = {QPX_HYBRID_ADDR_COLD_DC, to};
    uint8_t dev_addr      = 0xd0 + to;
    uct_ep_params_t params;
    uct_ep_h ep;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &from->h.super.super;
    params.dev_addr   = (const uct_device_addr_t*)&dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)iface_addr;
    assert_int_equal(qpx_hybrid_ep_t_new(&params, &ep), UCS_OK);
    return ep;
}

static qpx_hybrid_ep_t *test_hep(unsigned i)
{
    return ucs_derived_of(ctx->ep[i], qpx_hybrid_ep_t);
}

static int test_setup(void **state)
{
    unsigned i;

    ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ucs_list_head_init(&ctx->fake_eps);
    assert_int_equal(ucs_async_context_create(UCS_ASYNC_MODE_POLL,
                                              &ctx->async), UCS_OK);
    assert_int_equal(uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE,
                                       &ctx->worker), UCS_OK);
    for (i = 0; i < NUM_NODES; ++i) {
        test_node_init(&ctx->node[i], i, 4);
    }
    for (i = 0; i < NUM_EPS; ++i) {
        ctx->ep[i] = test_ep_create(A, 1);
    }
    *state = ctx;
    return 0;
}

static int test_teardown(void **state)
{
    unsigned i;

    (void)state;
    for (i = 0; i < NUM_EPS; ++i) {
        if (ctx->ep[i] != NULL) {
            qpx_hybrid_ep_t_delete(ctx->ep[i]);
        }
    }
    if (ctx->b_ep != NULL) {
        qpx_hybrid_ep_t_delete(ctx->b_ep);
    }
    for (i = 0; i < NUM_NODES; ++i) {
        test_node_cleanup(&ctx->node[i]);
    }
    /* no sub-endpoint is left behind */
    assert_int_equal(ctx->num_fake_eps, 0);
    uct_worker_destroy(ctx->worker);
    ucs_async_context_destroy(ctx->async);
    free(ctx);
    return 0;
}


/* The network: control messages to their nodes' handlers; how many */
static unsigned test_deliver(void)
{
    unsigned count = 0;
    test_msg_t *msg;

    while (ctx->msg_head != ctx->msg_tail) {
        msg = &ctx->msgs[ctx->msg_head++ % MAX_MSGS];
        assert_int_equal(qpx_hybrid_ctl_handler(&ctx->node[msg->dst].h,
                                                msg->data, msg->length, 0),
                         UCS_OK);
        ++count;
    }
    return count;
}

/* Messages not delivered: dropped (a peer gone) */
static unsigned test_drop(void)
{
    unsigned count = ctx->msg_tail - ctx->msg_head;

    ctx->msg_head = ctx->msg_tail;
    return count;
}

static void test_progress(test_node_t *node)
{
    (void)qpx_hybrid_iface_progress(&node->h.super.super);
}

/* Progress both nodes and deliver until nothing moves */
static void test_run(void)
{
    unsigned round;

    for (round = 0; round < 32; ++round) {
        test_progress(A);
        test_progress(B);
        if (test_deliver() == 0) {
            test_progress(A);
            test_progress(B);
            if (ctx->msg_head == ctx->msg_tail) {
                return;
            }
        }
    }
    fail_msg("the nodes keep exchanging messages");
}

static ucs_status_t test_send(unsigned i, uint64_t seq)
{
    return uct_ep_am_short(ctx->ep[i], AM_ID_DATA, seq, NULL, 0);
}

/* Send THRESH messages on endpoint i: it wants RC */
static void test_heat(unsigned i)
{
    unsigned n;

    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(test_send(i, 1000 * i + n), UCS_OK);
    }
    assert_true(test_hep(i)->flags & QPX_HYBRID_EP_FLAG_WANT_HOT);
}

/* Endpoint i promoted, every message exchanged */
static void test_promote(unsigned i)
{
    test_heat(i);
    test_run();
    assert_int_equal(test_hep(i)->state, QPX_HYBRID_EP_HOT);
}

static qpx_hybrid_conn_t *test_only_conn(test_node_t *node)
{
    qpx_hybrid_conn_t *conn, *found = NULL;
    unsigned i;

    for (i = 0; i < node->h.conns.capacity; ++i) {
        conn = node->h.conns.slots[i].obj;
        if (conn != NULL) {
            assert_null(found);
            found = conn;
        }
    }
    return found;
}


/* COLD -> PROMOTING -> HOT: active messages held while the switch is
 * under way, the ones before on DC, the ones after on RC, none lost or
 * reordered; one-sided operations go on (on DC) while the answer is
 * awaited; B holds one RC QP for A */
static void test_promote_handshake(void **state)
{
    qpx_hybrid_ep_t *ep;
    unsigned i;

    (void)state;
    ep = test_hep(0);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    test_heat(0);

    test_progress(A); /* COLD -> PROMOTING: RC ep made, REQ due */
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_non_null(ep->rc_ep);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(test_send(0, 100), UCS_ERR_NO_RESOURCE);
    test_progress(A); /* the REQ goes on DC */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 1);
    assert_int_equal(ctx->msgs[0].on_rc, 0);
    assert_int_equal(test_send(0, 100), UCS_ERR_NO_RESOURCE);
    assert_int_equal(uct_ep_put_short(ctx->ep[0], NULL, 0, 0, 0), UCS_OK);
    assert_ptr_equal(ep->rma_ep, ep->cold_ep);

    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* accepted: connected, REP due, then sent */
    assert_non_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(B->h.stats.accepted, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(test_send(0, 100), UCS_ERR_NO_RESOURCE);

    assert_int_equal(test_deliver(), 1);
    test_progress(A); /* REP: connect, flush DC, HOT */
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_ptr_equal(ep->tx_ep, ep->rc_ep);
    assert_int_equal(test_fake(ep->rc_ep)->peer, 1);
    assert_int_equal(test_fake(test_only_conn(B)->rc_ep)->peer, 0);
    assert_int_equal(A->h.stats.promotions, 1);
    assert_int_equal(ep->refusals, 0);

    assert_int_equal(test_send(0, 101), UCS_OK);
    assert_int_equal(ctx->num_log, THRESH + 1);
    for (i = 0; i < THRESH; ++i) {
        assert_int_equal(ctx->log[i].on_rc, 0);
        assert_int_equal(ctx->log[i].seq, i);
    }
    assert_int_equal(ctx->log[THRESH].on_rc, 1);
    assert_int_equal(ctx->log[THRESH].seq, 101);
}

/* PROMOTING waits for DC to be flushed before it sends on RC, and
 * requests queued meanwhile run on RC afterwards, in order */
static unsigned test_pending_calls;
static uint64_t test_pending_seq[4];

static ucs_status_t test_pending_cb(uct_pending_req_t *req)
{
    uint64_t seq = 200 + test_pending_calls;

    (void)req;
    test_pending_seq[test_pending_calls++] = seq;
    return test_send(0, seq);
}

static void test_promote_waits_for_flush(void **state)
{
    uct_pending_req_t req[2];
    qpx_hybrid_ep_t *ep = test_hep(0);
    unsigned i;

    (void)state;
    test_pending_calls = 0;
    test_heat(0);
    test_progress(A);
    test_fake(ep->cold_ep)->flush_status = UCS_INPROGRESS;
    for (i = 0; i < 2; ++i) {
        req[i].func = test_pending_cb;
        assert_int_equal(uct_ep_pending_add(ctx->ep[0], &req[i], 0), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    assert_null(ep->tx_ep);
    assert_int_equal(test_pending_calls, 0);

    test_fake(ep->cold_ep)->flush_status = UCS_OK;
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(test_pending_calls, 2);
    assert_int_equal(ctx->num_log, THRESH + 2);
    for (i = 0; i < 2; ++i) {
        assert_int_equal(ctx->log[THRESH + i].on_rc, 1);
        assert_int_equal(ctx->log[THRESH + i].seq, 200 + i);
    }
}

/* PROMOTE_NACK (B's pool is full): back to COLD, the RC QP given back, the
 * next promotion needs twice the operations */
static void test_promote_refused(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    B->h.config.pool_size = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(B->h.stats.declined, 1);
    assert_null(test_only_conn(B));
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_null(ep->rc_ep);
    assert_ptr_equal(ep->tx_ep, ep->cold_ep);
    assert_int_equal(ep->refusals, 1);
    assert_int_equal(ep->promote_at, (uint64_t)THRESH << 1);
    assert_int_equal(A->h.stats.refused, 1);
    assert_int_equal(A->h.rc_in_use, 0); /* the retired QP went back */
    assert_int_equal(B->h.rc_in_use, 0);
}

/* No RC QP to be had: the endpoint stays COLD, and no QP is asked for
 * again before the back-off has passed */
static void test_promote_no_qp(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    A->rc.create_status = UCS_ERR_NO_RESOURCE;
    A->h.rc_warned      = 1; /* said once per interface: not here */
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.stats.rc_failures, 1);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_true(A->h.rc_retry_at > qpx_hybrid_time_ns());
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);

    /* the device has QPs again, but the back-off has not passed */
    A->rc.create_status = UCS_OK;
    while (!(ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT)) {
        assert_int_equal(test_send(0, 7), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->rc.creates, 0);
    assert_int_equal(A->h.stats.rc_failures, 1);
    assert_int_equal(ep->refusals, 2);

    A->h.rc_retry_at = 0; /* it has */
    while (!(ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT)) {
        assert_int_equal(test_send(0, 7), UCS_OK);
    }
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_backoff, 0);
}

/* The peer does not answer within SWITCH_TIMEOUT: back to COLD; its late
 * PROMOTE_REP is turned down with RELEASE, and the peer gives its QP
 * back */
static void test_promote_timeout_late_answer(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    uint32_t serial;

    (void)state;
    A->h.config.switch_timeout = 0;
    test_heat(0);
    test_progress(A);
    test_progress(A); /* REQ sent */
    serial          = ep->serial;
    ep->hold_start -= 1000; /* a microsecond ago: past a timeout of 0 */
    test_progress(A); /* not answered: given up */
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_int_equal(ep->refusals, 1);
    assert_ptr_equal(ep->tx_ep, ep->cold_ep);
    assert_int_equal(ep->serial, serial);

    /* B answers now */
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(A->h.stats.promotions, 0);
}

/* An answer with another serial than the switch's changes nothing: a REP
 * is turned down (RELEASE), a NACK ignored */
static void test_stale_answers(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    test_msg_t *msg;
    qpx_hybrid_ctl_hdr_t *hdr;

    (void)state;
    test_heat(0);
    test_progress(A);
    test_progress(A);
    assert_int_equal(test_deliver(), 1);
    test_progress(B); /* REP queued for A */
    assert_int_equal(ctx->msg_tail - ctx->msg_head, 1);
    msg = &ctx->msgs[ctx->msg_head % MAX_MSGS];
    hdr = (qpx_hybrid_ctl_hdr_t*)msg->data;
    assert_int_equal(hdr->type, QPX_HYBRID_CTL_PROMOTE_REP);

    hdr->serial = ep->serial + 1;
    assert_int_equal(test_deliver(), 1);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_int_equal(test_deliver(), 1);
    test_progress(B);
    assert_null(test_only_conn(B)); /* the stale REP's QP went back */

    /* a NACK of another switch */
    hdr->type   = QPX_HYBRID_CTL_PROMOTE_NACK;
    hdr->serial = ep->serial - 1;
    assert_int_equal(qpx_hybrid_ctl_handler(&A->h, hdr, msg->length, 0),
                     UCS_OK);
    test_progress(A);
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_int_equal(A->h.stats.refused, 0);
}

/* A full pool: the least recently used HOT endpoint is demoted (DEMOTE_REQ
 * on RC, DEMOTE_ACK over DC, RELEASE), and its slot promotes the new one;
 * the demoted endpoint sends on DC again, after its RC path was flushed */
static void test_demote_lru(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0), *ep1 = test_hep(1), *ep2 = test_hep(2);

    (void)state;
    A->h.config.pool_size = 2;
    test_promote(0);
    test_promote(1);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(test_send(0, 50), UCS_OK); /* ep1 now least recent */

    test_heat(2);
    test_progress(A);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep2->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(test_send(1, 51), UCS_ERR_NO_RESOURCE);
    test_progress(A); /* the REQ, the last message on RC */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    assert_int_equal(ctx->msgs[(ctx->msg_tail - 1) % MAX_MSGS].on_rc, 1);

    test_fake(ep1->rc_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 1);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING); /* RC in flight */
    assert_int_equal(ep2->state, QPX_HYBRID_EP_COLD);
    test_fake(ep1->rc_ep)->flush_status = UCS_OK;
    test_run();
    assert_int_equal(ep1->state, QPX_HYBRID_EP_COLD);
    assert_null(ep1->rc_ep);
    assert_ptr_equal(ep1->tx_ep, ep1->cold_ep);
    assert_int_equal(A->h.stats.demotions, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);

    /* the slot went to ep2 */
    assert_int_equal(ep2->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(B->h.rc_in_use, 2);
    assert_int_equal(test_send(1, 52), UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 0);
}

/* The peer does not answer a demotion in time: HOT again, and most
 * recently used, so that the next eviction picks the other endpoint; the
 * late DEMOTE_ACK changes nothing */
static void test_demote_timeout(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0), *ep1 = test_hep(1), *ep2 = test_hep(2);

    (void)state;
    A->h.config.pool_size = 2;
    test_promote(0);
    test_promote(1);
    assert_int_equal(test_send(1, 60), UCS_OK); /* ep0 least recent */
    test_heat(2);
    A->h.config.switch_timeout = 0;
    test_progress(A);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    test_progress(A); /* DEMOTE_REQ sent */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    ep0->hold_start -= 1000;
    test_progress(A); /* not answered */
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_ptr_equal(ep0->tx_ep, ep0->rc_ep);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_true(ep0->last_used > ep1->last_used);

    A->h.config.switch_timeout = 60ull * 1000000000ull;
    test_progress(A); /* the next victim */
    assert_int_equal(ep1->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);

    test_run(); /* ep0's late ACK, ep1's ACK */
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_ACK], 2);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(ep1->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(ep2->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.stats.demotions, 1);
    assert_int_equal(A->h.stats.timeouts, 1);
    assert_int_equal(A->h.rc_in_use, 2);
    assert_int_equal(test_send(0, 61), UCS_OK);
    assert_int_equal(ctx->log[ctx->num_log - 1].on_rc, 1);
}

/* A failed sub-endpoint fails its endpoint once, in whatever state: the
 * error handler gets the hybrid endpoint, sends go to the failed path (and
 * finish with its error), the switch stops, and destroying the endpoint
 * gives every QP back */
static void test_peer_lost(unsigned stage)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    uct_ep_h failed;

    if (stage >= 1) {
        test_heat(0);
        test_progress(A);              /* 1: PROMOTING, REQ due */
    }
    if (stage >= 2) {
        test_progress(A);              /* 2: REQ sent */
    }
    if (stage >= 3) {
        test_run();                    /* 3: HOT */
    }
    if (stage >= 4) {
        A->h.config.pool_size = 1;     /* 4: DEMOTING */
        test_heat(1);
        test_progress(A);
        test_progress(A);
        assert_int_equal(ep->state, QPX_HYBRID_EP_DEMOTING);
    }

    failed = (stage >= 3) ? ep->rc_ep : ep->cold_ep;
    assert_int_equal(qpx_hybrid_sub_ep_failed(&A->h, failed,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(A->errors, 1);
    assert_ptr_equal(A->err_ep, ctx->ep[0]);
    assert_int_equal(A->err_status, UCS_ERR_ENDPOINT_TIMEOUT);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_FAILED);
    assert_ptr_equal(ep->tx_ep, failed);
    assert_ptr_equal(ep->rma_ep, failed);

    /* reported once */
    assert_int_equal(qpx_hybrid_sub_ep_failed(&A->h, failed,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_int_equal(A->errors, 1);

    /* the switch stops where it was; answers for it change nothing */
    test_run();
    assert_int_equal(A->errors, 1);
    assert_int_equal(A->h.stats.promotions, (stage >= 3) ? 1 : 0);
    assert_int_equal(A->h.stats.demotions, 0);

    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_int_equal(A->h.rc_in_use, 0);
}

static void test_peer_lost_cold(void **state)
{
    (void)state;
    test_peer_lost(0);
}

static void test_peer_lost_promote_due(void **state)
{
    (void)state;
    test_peer_lost(1);
}

static void test_peer_lost_promote_sent(void **state)
{
    (void)state;
    test_peer_lost(2);
}

static void test_peer_lost_hot(void **state)
{
    (void)state;
    test_peer_lost(3);
}

static void test_peer_lost_demoting(void **state)
{
    (void)state;
    test_peer_lost(4);
}

/* The responder's side: the RC QP of a connection whose peer died fails,
 * and the connection closes and gives the QP back, without reaching any
 * endpoint's error handler */
static void test_conn_lost(void **state)
{
    qpx_hybrid_conn_t *conn;

    (void)state;
    test_promote(0);
    conn = test_only_conn(B);
    assert_non_null(conn);
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h, conn->rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    assert_null(test_only_conn(B));
    assert_int_equal(B->errors, 0);
    test_run();
    assert_int_equal(B->h.rc_in_use, 0);
}

/* An endpoint destroyed while its promotion awaits the answer: the answer
 * finds it gone and the peer is told to give its QP back */
static void test_destroyed_while_promoting(void **state)
{
    (void)state;
    test_heat(0);
    test_progress(A);
    test_progress(A);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(A->h.rc_in_use, 0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
}

/* A HOT endpoint destroyed: the peer is told (RELEASE) and gives its QP
 * back; a peer lost meanwhile is not waited for */
static void test_destroyed_hot(void **state)
{
    (void)state;
    test_promote(0);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    test_run();
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);

    /* the same with the RELEASE lost: B keeps the QP until its RC path
     * fails, which returns it */
    ctx->ep[0] = test_ep_create(A, 1);
    test_promote(0);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    assert_int_equal(test_drop(), 1);
    test_run();
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(qpx_hybrid_sub_ep_failed(&B->h,
                                              test_only_conn(B)->rc_ep,
                                              UCS_ERR_ENDPOINT_TIMEOUT),
                     UCS_OK);
    test_run();
    assert_int_equal(B->h.rc_in_use, 0);
}

/* A control message that does not fit its length, or names no type, is
 * dropped and counted */
static void test_malformed_ctl(void **state)
{
    qpx_hybrid_ctl_hdr_t hdr;
    uint8_t buf[sizeof(hdr) + 2];

    (void)state;
    memset(&hdr, 0, sizeof(hdr));
    hdr.type         = QPX_HYBRID_CTL_PROMOTE_REQ;
    hdr.dev_addr_len = 1;
    hdr.iface_addr_len = 1;
    hdr.ep_addr_len  = 1;  /* one byte more than sent */
    memcpy(buf, &hdr, sizeof(hdr));
    buf[sizeof(hdr)]     = 0xd0;
    buf[sizeof(hdr) + 1] = 0;
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, buf, sizeof(buf), 0),
                     UCS_OK);
    hdr.type = QPX_HYBRID_CTL_LAST;
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, &hdr, sizeof(hdr), 0),
                     UCS_OK);
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, &hdr, 3, 0), UCS_OK);
    assert_int_equal(B->h.stats.malformed, 3);
    assert_true(ucs_list_is_empty(&B->h.ctl_msgs));

    /* a whole one whose RC address has the wrong length is declined */
    hdr.type        = QPX_HYBRID_CTL_PROMOTE_REQ;
    hdr.ep_addr_len = 0;
    memcpy(buf, &hdr, sizeof(hdr));
    assert_int_equal(qpx_hybrid_ctl_handler(&B->h, buf, sizeof(buf), 0),
                     UCS_OK);
    test_run();
    assert_int_equal(B->h.stats.declined, 1);
    assert_int_equal(B->h.stats.malformed, 4);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(B->h.rc_in_use, 0);
}


/* A control message without a send slot waits for one, and nothing is
 * lost: the REQ stays due (its timeout counts from when it went), the
 * peer's REP waits in its connection, a RELEASE in the interface's queue */
static void test_ctl_no_resource(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);
    unsigned i;

    (void)state;
    A->cold.busy               = 1;
    A->h.config.switch_timeout = 0;
    test_heat(0);
    for (i = 0; i < 4; ++i) {
        test_progress(A);
    }
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_CTL_DUE);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);
    assert_int_equal(A->h.stats.timeouts, 0);

    A->h.config.switch_timeout = 60ull * 1000000000ull;
    A->cold.busy = 0;
    B->cold.busy = 1;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 0);
    assert_false(ucs_list_is_empty(&B->h.work_conns));
    assert_int_equal(ep->state, QPX_HYBRID_EP_PROMOTING);

    B->cold.busy = 0;
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_HOT);

    /* destroyed with no send slot: its RELEASE waits, then goes */
    A->cold.busy = 1;
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_false(ucs_list_is_empty(&A->h.ctl_out));
    assert_int_equal(B->h.rc_in_use, 1);
    A->cold.busy = 0;
    test_run();
    assert_true(ucs_list_is_empty(&A->h.ctl_out));
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 0);
}

/* Requests queued while a demotion holds the endpoint run after it, in
 * order, on the cold path */
static void test_pending_across_demotion(void **state)
{
    qpx_hybrid_ep_t *ep0 = test_hep(0);
    uct_pending_req_t req[2];
    unsigned i;

    (void)state;
    test_pending_calls    = 0;
    A->h.config.pool_size = 1;
    test_promote(0);
    test_heat(1);
    test_progress(A);
    assert_int_equal(ep0->state, QPX_HYBRID_EP_DEMOTING);
    for (i = 0; i < 2; ++i) {
        req[i].func = test_pending_cb;
        assert_int_equal(uct_ep_pending_add(ctx->ep[0], &req[i], 0), UCS_OK);
    }
    test_run();
    assert_int_equal(ep0->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(test_pending_calls, 2);
    for (i = 0; i < 2; ++i) {
        assert_int_equal(ctx->log[ctx->num_log - 2 + i].on_rc, 0);
        assert_int_equal(ctx->log[ctx->num_log - 2 + i].seq, 200 + i);
    }
    assert_ptr_equal(ep0->tx_ep, ep0->cold_ep);
}

/* A retired RC QP counts in the pool until its flush completes, or until
 * the retirement's deadline: then it is destroyed anyway (B's QP of a
 * connection whose peer said RELEASE, and whose flush does not complete) */
static void test_retire_deadline(void **state)
{
    qpx_hybrid_retired_t *r;
    qpx_hybrid_conn_t *conn;

    (void)state;
    test_promote(0);
    conn = test_only_conn(B);
    assert_non_null(conn);
    test_fake(conn->rc_ep)->flush_status = UCS_INPROGRESS;
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_null(test_only_conn(B));
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_retiring, 1);

    ucs_list_for_each(r, &B->h.retired, list) {
        if (r->is_rc) {
            r->deadline = 0;
        }
    }
    test_progress(B);
    assert_int_equal(B->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_retiring, 0);
}

/* A promotion refused or not answered gives its RC QP back at once (it
 * never carried anything): the slot is free for the next one */
static void test_abort_frees_slot(void **state)
{
    (void)state;
    B->h.config.pool_size = 0; /* NACK */
    test_heat(0);
    test_progress(A);
    test_fake(test_hep(0)->rc_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_int_equal(test_hep(0)->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(A->h.rc_retiring, 0);
}

/* Without an RC interface nothing is promoted: the endpoint stays on the
 * cold path without asking, and a peer without one declines */
static void test_no_rc_interface(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    A->h.rc_avail = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(A->rc.creates, 0);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 0);

    A->h.rc_avail = 1;
    B->h.rc_avail = 0;
    ep->promote_at = THRESH;
    ep->tx_count   = 0;
    test_heat(0);
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(ep->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(B->rc.creates, 0);
    assert_int_equal(A->h.rc_in_use, 0);
}

/* Two peers promote to each other at once with one slot each: the one
 * with the greater address wins on both sides (the other gives its own
 * promotion up and accepts), so that one of them is on RC at once instead
 * of both being refused; the pool bound holds on both sides */
static void test_crossing(int a_wins)
{
    qpx_hybrid_ep_t *a = test_hep(0), *b, *winner, *loser;
    test_node_t *win_node, *lose_node;
    unsigned n;

    A->h.config.pool_size = 1;
    B->h.config.pool_size = 1;
    if (a_wins) {
        A->h.addr.dev[0] = 0xff; /* B's is 0xd1 */
    }
    ctx->b_ep = test_ep_create(B, 0);
    b         = ucs_derived_of(ctx->b_ep, qpx_hybrid_ep_t);
    winner    = a_wins ? a : b;
    loser     = a_wins ? b : a;
    win_node  = a_wins ? A : B;
    lose_node = a_wins ? B : A;

    test_heat(0);
    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(uct_ep_am_short(ctx->b_ep, AM_ID_DATA, n, NULL, 0),
                         UCS_OK);
    }
    test_progress(A);
    test_progress(B);
    test_progress(A);
    test_progress(B);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REQ], 2);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
    test_run();
    assert_int_equal(winner->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(loser->state, QPX_HYBRID_EP_COLD);
    assert_int_equal(loser->refusals, 1);
    assert_int_equal(lose_node->h.stats.yielded, 1);
    assert_int_equal(win_node->h.stats.yielded, 0);
    assert_int_equal(win_node->h.stats.declined, 1);
    assert_int_equal(lose_node->h.stats.accepted, 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_REP], 1);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_PROMOTE_NACK], 1);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(win_node->h.stats.promotions, 1);
    assert_int_equal(lose_node->h.stats.promotions, 0);
}

static void test_crossing_promotions(void **state)
{
    (void)state;
    test_crossing(0);
}

static void test_crossing_promotions_other_wins(void **state)
{
    (void)state;
    test_crossing(1);
}


/* An endpoint destroyed mid-switch on RC's side: while its promotion is
 * flushing the cold path (answered, connected) and while its demotion
 * waits for the answer; the peer is told either way and gives its QP
 * back, and its late answers find nobody */
static void test_destroyed_mid_switch(void **state)
{
    qpx_hybrid_ep_t *ep = test_hep(0);

    (void)state;
    test_heat(0);
    test_progress(A);
    test_fake(ep->cold_ep)->flush_status = UCS_INPROGRESS;
    test_run();
    assert_true(ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    qpx_hybrid_ep_t_delete(ctx->ep[0]);
    ctx->ep[0] = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 1);
    assert_null(test_only_conn(B));
    assert_int_equal(A->h.rc_in_use, 0);
    assert_int_equal(B->h.rc_in_use, 0);

    /* DEMOTING, its DEMOTE_REQ sent */
    A->h.config.pool_size = 1;
    test_promote(1);
    test_heat(2);
    test_progress(A);
    test_progress(A);
    assert_int_equal(test_hep(1)->state, QPX_HYBRID_EP_DEMOTING);
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_DEMOTE_REQ], 1);
    qpx_hybrid_ep_t_delete(ctx->ep[1]);
    ctx->ep[1] = NULL;
    test_run();
    assert_int_equal(ctx->sent_ctl[QPX_HYBRID_CTL_RELEASE], 2);
    assert_int_equal(test_hep(2)->state, QPX_HYBRID_EP_HOT);
    assert_int_equal(A->h.rc_in_use, 1);
    assert_int_equal(B->h.rc_in_use, 1);
    assert_int_equal(A->h.stats.demotions, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_promote_handshake, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_waits_for_flush,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_refused, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_no_qp, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_promote_timeout_late_answer,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_stale_answers, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_demote_lru, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_demote_timeout, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_cold, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_promote_due,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_promote_sent,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_hot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_peer_lost_demoting, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_conn_lost, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_while_promoting,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_hot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_destroyed_mid_switch,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_ctl, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_ctl_no_resource, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_pending_across_demotion,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_retire_deadline, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_abort_frees_slot, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_no_rc_interface, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_crossing_promotions, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_crossing_promotions_other_wins,
                                        test_setup, test_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
