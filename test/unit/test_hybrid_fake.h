/*
 * The harness of the hybrid's unit tests (test_hybrid_switch,
 * test_hybrid_join): two nodes A and B, each a hybrid interface whose cold
 * and RC sub-interfaces are fakes. A fake endpoint records the active
 * messages sent on it; the control messages it carries are queued for the
 * peer node, whose control handler gets them when the test delivers ("the
 * network"). Interfaces, endpoints and the control messages are the
 * hybrid's own code.
 */
#ifndef TEST_HYBRID_FAKE_H_
#define TEST_HYBRID_FAKE_H_

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
    unsigned        flush_flags;  /* of the last ep_flush */
    ucs_list_link_t list;         /* in ctx->fake_eps */
} test_fake_ep_t;

typedef struct test_node {
    qpx_hybrid_iface_t h;
    test_fake_iface_t  cold;
    test_fake_iface_t  rc;
    qpx_iface_t        rc_core;
    unsigned           rc_opens;  /* of the RC interface, after setup */
    ucs_status_t       rc_open_status; /* what such an open answers */
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
extern test_ctx_t *ctx;

#define A (&ctx->node[0])
#define B (&ctx->node[1])

test_fake_ep_t *test_fake(uct_ep_h ep);
uct_ep_h test_ep_create(test_node_t *from, unsigned to);
qpx_hybrid_ep_t *test_hep(unsigned i);
int test_setup(void **state);
int test_teardown(void **state);
/* The network: control messages to their nodes' handlers; how many */
unsigned test_deliver(void);
/* Messages not delivered: dropped (a peer gone); how many */
unsigned test_drop(void);
void test_progress(test_node_t *node);
/* Progress both nodes and deliver until nothing moves */
void test_run(void);
/* An active message of sequence seq on A's endpoint i */
ucs_status_t test_send(unsigned i, uint64_t seq);
/* Send THRESH messages on A's endpoint i: it wants RC */
void test_heat(unsigned i);
/* A's endpoint i promoted, every message exchanged */
void test_promote(unsigned i);
/* The node's one connection, or NULL */
qpx_hybrid_conn_t *test_only_conn(test_node_t *node);

#endif
