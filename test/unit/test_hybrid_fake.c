/*
 * The harness of the hybrid's unit tests: fake sub-interfaces and
 * endpoints, two nodes, the network between them (test_hybrid_fake.h).
 */
#include "test_hybrid_fake.h"


test_ctx_t *ctx;


/* The pool is not filled ahead: no verbs here */
unsigned __wrap_qpx_iface_qp_prefill(qpx_iface_t *iface, unsigned count)
{
    (void)iface;
    (void)count;
    ++ctx->prefills;
    return 0;
}


/* The RC interface opened after it was closed (h.rc NULL): the fake again,
 * or the node's rc_open_status */
ucs_status_t __wrap_qpx_hybrid_iface_rc_open(qpx_hybrid_iface_t *iface)
{
    test_node_t *node = ucs_container_of(iface, test_node_t, h);

    ++node->rc_opens;
    if (node->rc_open_status != UCS_OK) {
        return node->rc_open_status;
    }
    iface->rc      = &node->rc.super;
    iface->rc_core = &node->rc_core;
    return UCS_OK;
}


test_fake_ep_t *test_fake(uct_ep_h ep)
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
    (void)comp;
    test_fake(tl_ep)->flush_flags = flags;
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
    qpx_hybrid_iface_config_t config;

    test_fake_iface_init(&node->cold, index, 0);
    test_fake_iface_init(&node->rc, index, 1);
    /* The interface's own state from its init, over bytes as a reused heap
     * may hold them (ucs_class_malloc does not clear): a field it leaves
     * alone keeps 0xff.. here */
    memset(UCS_PTR_BYTE_OFFSET(h, sizeof(h->super)), 0xff,
           sizeof(*h) - sizeof(h->super));
    memset(&config, 0, sizeof(config));
    config.pool_size      = pool;
    config.promote_thresh = THRESH;
    config.promote_bytes  = SIZE_MAX;
    config.promote_window = 60.0;
    config.switch_timeout = 60.0;
    config.pool_batch     = 1;
    qpx_hybrid_iface_state_init(h, &config);
    h->super.super.ops      = qpx_hybrid_iface_ops;
    h->super.worker         = (uct_priv_worker_t*)ctx->worker;
    h->super.err_handler     = test_err_handler;
    h->super.err_handler_arg = node;
    h->cold                 = &node->cold.super;
    h->rc                   = &node->rc.super;
    h->rc_core              = &node->rc_core;
    h->cold_tl              = "qpx_dc";
    h->rc_avail             = 1;
    snprintf(h->open_args.dev_name, sizeof(h->open_args.dev_name), "fake%u",
             index);
    h->config.bytes_shift    = 20;
    h->attr.cap.am.max_short  = 64;
    h->attr.cap.put.max_short = 64;
    /* a packed IB device address: flags, then the LID */
    h->addr.dev[0]   = 0;
    h->addr.dev[1]   = 1 + index;
    h->addr.dev[2]   = 0;
    h->addr.dev_len  = 3;
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

uct_ep_h test_ep_create(test_node_t *from, unsigned to)
{
    uint8_t iface_addr[2] = {QPX_HYBRID_ADDR_COLD_DC, to};
    const uint8_t *dev_addr = ctx->node[to].h.addr.dev; /* as it packs it */
    uct_ep_params_t params;
    uct_ep_h ep;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = &from->h.super.super;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)iface_addr;
    assert_int_equal(qpx_hybrid_ep_t_new(&params, &ep), UCS_OK);
    return ep;
}

qpx_hybrid_ep_t *test_hep(unsigned i)
{
    return ucs_derived_of(ctx->ep[i], qpx_hybrid_ep_t);
}

int test_setup(void **state)
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

int test_teardown(void **state)
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
unsigned test_deliver(void)
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
unsigned test_drop(void)
{
    unsigned count = ctx->msg_tail - ctx->msg_head;

    ctx->msg_head = ctx->msg_tail;
    return count;
}

void test_progress(test_node_t *node)
{
    (void)qpx_hybrid_iface_progress(&node->h.super.super);
}

/* Progress both nodes and deliver until nothing moves */
void test_run(void)
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

ucs_status_t test_send(unsigned i, uint64_t seq)
{
    return uct_ep_am_short(ctx->ep[i], AM_ID_DATA, seq, NULL, 0);
}

/* Send THRESH messages on endpoint i: it wants RC */
void test_heat(unsigned i)
{
    unsigned n;

    for (n = 0; n < THRESH; ++n) {
        assert_int_equal(test_send(i, 1000 * i + n), UCS_OK);
    }
    assert_true(test_hep(i)->flags & QPX_HYBRID_EP_FLAG_WANT_HOT);
}

/* Endpoint i promoted, every message exchanged */
void test_promote(unsigned i)
{
    test_heat(i);
    test_run();
    assert_int_equal(test_hep(i)->state, QPX_HYBRID_EP_HOT);
}

qpx_hybrid_conn_t *test_only_conn(test_node_t *node)
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
