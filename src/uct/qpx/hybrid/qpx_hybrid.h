/*
 * qpx: the hybrid transport.
 *
 * An interface of the hybrid ("qpx") opens two interfaces of its own on the
 * same device port through UCT's public API: a qpx_dc interface (the cold
 * path: one DCT, a few DCIs, whatever the number of peers) and a qpx_rc
 * interface (the hot path: one RC QP per promoted peer, taken from and given
 * back to qpx_rc's pool of RESET QPs). UCP sees one CONNECT_TO_IFACE
 * interface whose endpoints forward every operation to the sub-endpoint of
 * their current path.
 *
 * Every endpoint starts on DC. When it posts PROMOTE_THRESH operations
 * within PROMOTE_WINDOW it is promoted: with a free slot in the RC pool
 * (RC_POOL_SIZE QPs in use at most, those peers connected to us included),
 * or after the least recently used promoted endpoint was demoted to make
 * room. The switch keeps the order of everything the endpoint sent, with
 * no header on data messages, by a handshake on the control AM id
 * (QPX_HYBRID_AM_ID_CTL, never one of UCP's):
 *
 *   promotion, A's endpoint to B's interface:
 *     A: RC ep created, PROMOTE_REQ(A's RC address) on the DC ep, then A
 *        holds its sends (they go pending)
 *     B: receives it after every DC message A sent before; creates an RC
 *        ep, connects it, answers PROMOTE_REP(B's RC address) over DC, or
 *        PROMOTE_NACK when its pool is full or an RC QP cannot be had. If
 *        B's RC interface is not open yet, B answers PROMOTE_NACK
 *        (NACK_OPENING) at once and opens it then: A sends on DC again
 *        and asks again a moment later, instead of holding its sends for
 *        the milliseconds the open takes
 *     A: sends on DC meanwhile. On the answer it connects its RC ep, sends
 *        SWITCHED on the DC ep (after its last message there) and sends its
 *        active messages on RC from then on; one-sided operations go on RC
 *        once the DC ep is flushed
 *     B: holds what arrives on the RC QP of the connection (copied, in
 *        order, control messages too) until it reads SWITCHED, which comes
 *        after every DC message A sent before it: nothing of A's on RC
 *        overtakes them, and A never waits for B's software
 *   demotion (LRU eviction), A's endpoint:
 *     A: DEMOTE_REQ on the RC ep, then A holds
 *     B: receives it after every RC message A sent before; answers
 *        DEMOTE_ACK over DC
 *     A: flushes its RC ep (B's QP still answers), sends RELEASE over DC
 *        and sends on DC again; its RC QP goes back to the pool
 *     B: on RELEASE, drains its receive CQ and gives its RC QP back.
 *
 * A peer that does not answer within SWITCH_TIMEOUT (it computes without
 * calling progress, or a one-sided target never does) costs the endpoint
 * that long: the promotion is given up and the endpoint sends on DC again
 * (an answer that comes later is turned down with RELEASE), a demotion is
 * given up and the endpoint stays on RC. Every answer carries its
 * request's serial, so a late one never completes a later switch.
 *
 * The RC QP pair of a promotion carries both directions: B's endpoint to
 * A, hot on its own traffic, joins the pair A promoted on instead of a
 * pair of its own (qpx_hybrid_join.c says how, and how the pair ends).
 * Two interfaces promoting to each other at once end on one pair: the one
 * with the greater address goes on, the other gives its own promotion up
 * (its RC QP, never used, goes back at once) and joins. A promotion asks
 * for a slot of the peer's pool; when the peer's pool is full and one of
 * the peer's own promotions (to another interface) is still unanswered,
 * the same rule gives the slot to the greater address.
 */
#ifndef QPX_HYBRID_H_
#define QPX_HYBRID_H_

#include <uct/qpx/base/qpx_ep_table.h>
#include <uct/qpx/base/qpx_iface.h>
#include <uct/qpx/base/qpx_log.h>

#include <ucs/ucx_compat.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define QPX_HYBRID_TL_NAME    "qpx"
#define QPX_HYBRID_AM_ID_CTL  (UCT_AM_ID_MAX - 1)
#define QPX_HYBRID_ADDR_MAX   64  /* bytes of a sub-interface address */
/* The first byte of the interface address: which cold path the rest is
 * the address of. qpx_dc's and qpx_ud's addresses are both 3-byte queue
 * numbers: without it a peer on the other cold path would look reachable,
 * and its UD QPN be taken for a DCT number. */
#define QPX_HYBRID_ADDR_COLD_DC 1
#define QPX_HYBRID_ADDR_COLD_UD 2
#define QPX_HYBRID_SUB_UD_SRQ   UCS_BIT(0) /* qpx_hybrid_iface_open_sub */
#define QPX_HYBRID_SUB_PROBE    UCS_BIT(1)
#define QPX_HYBRID_COLD_TRIES   20    /* the cold path's interface, when */
#define QPX_HYBRID_COLD_WAIT_US 50000 /* the device is out of queues */
#define QPX_HYBRID_IDLE_CALLS 4096 /* progress calls without work: idle */
#define QPX_HYBRID_IDLE_EVERY 16   /* an idle path is polled every N calls */


/* Control messages (QPX_HYBRID_AM_ID_CTL) */
typedef enum {
    QPX_HYBRID_CTL_PROMOTE_REQ = 1, /* A -> B, DC: connect to my RC ep */
    QPX_HYBRID_CTL_PROMOTE_REP,     /* B -> A, DC: done, here is mine */
    QPX_HYBRID_CTL_PROMOTE_NACK,    /* B -> A, DC: no RC QP for you */
    QPX_HYBRID_CTL_DEMOTE_REQ,      /* A -> B, RC: last message on RC */
    QPX_HYBRID_CTL_DEMOTE_ACK,      /* B -> A, DC: all delivered */
    QPX_HYBRID_CTL_RELEASE,         /* A -> B, DC: give the QP back */
    QPX_HYBRID_CTL_JOIN_REQ,        /* B -> A, DC: my ep sends on your
                                       pair too (aux: B's connection) */
    QPX_HYBRID_CTL_JOIN_ACK,        /* A -> B, DC: it may */
    QPX_HYBRID_CTL_JOIN_NACK,       /* A -> B, DC: it may not */
    QPX_HYBRID_CTL_DEMOTE_CANCEL,   /* A -> B, DC: the demotion you
                                       answered was given up */
    QPX_HYBRID_CTL_TRANSFER,        /* A -> B, DC: my ep is gone, the
                                       pair is your joined ep's now (aux:
                                       B's connection) */
    QPX_HYBRID_CTL_SWITCHED,        /* A -> B, DC: my last message on DC
                                       before the RC ones of the promotion
                                       (B holds those until it reads it) */
    QPX_HYBRID_CTL_LAST
} qpx_hybrid_ctl_type_t;

/* The aux of a PROMOTE_NACK: 0, refused (the next promotion needs twice
 * the operations), or this: the peer is opening its RC interface for it,
 * ask again after QPX_HYBRID_REASK_NS or SWITCH_TIMEOUT, the shorter (an
 * older peer reads it as refused). An open took 4 to 15 ms on softverbs
 * (docs/performance.md); a request that comes before it is done waits in
 * the peer's queue, and is answered when it is */
#define QPX_HYBRID_NACK_OPENING 1
#define QPX_HYBRID_REASK_NS     10000000ull /* 10 ms */


typedef struct qpx_hybrid_ctl_hdr {
    uint8_t  type;           /* qpx_hybrid_ctl_type_t */
    uint8_t  dev_addr_len;   /* of the sender's device */
    uint8_t  iface_addr_len; /* of the sender's DC interface */
    uint8_t  ep_addr_len;    /* of the sender's RC endpoint, or 0 */
    uint32_t src_id;         /* sender's endpoint or connection id */
    uint32_t dst_id;         /* receiver's endpoint or connection id */
    uint32_t serial;         /* the switch's: an answer names its request */
    uint32_t aux;            /* JOIN_REQ, TRANSFER: B's connection id */
    /* followed by: device address, DC interface address, RC ep address */
} UCS_S_PACKED qpx_hybrid_ctl_hdr_t;


/* A control message received, kept until the next progress runs it */
typedef struct qpx_hybrid_ctl_msg {
    ucs_list_link_t      list;
    size_t               length;
    qpx_hybrid_ctl_hdr_t hdr; /* and the rest of the message */
} qpx_hybrid_ctl_msg_t;


/* Who an interface is, to tell whether two addresses name the same peer:
 * its device address unpacked and its cold interface's address */
typedef struct qpx_hybrid_peer {
    qpx_device_addr_t dev;
    uint8_t           iface[QPX_HYBRID_ADDR_MAX];
} qpx_hybrid_peer_t;


/* The sender's addresses in a control message, and its RC ep's */
static inline const void *
qpx_hybrid_ctl_dev_addr(const qpx_hybrid_ctl_msg_t *msg)
{
    return &msg->hdr + 1;
}

static inline const void *
qpx_hybrid_ctl_iface_addr(const qpx_hybrid_ctl_msg_t *msg)
{
    return UCS_PTR_BYTE_OFFSET(&msg->hdr + 1, msg->hdr.dev_addr_len);
}

static inline const void *
qpx_hybrid_ctl_ep_addr(const qpx_hybrid_ctl_msg_t *msg)
{
    return UCS_PTR_BYTE_OFFSET(&msg->hdr + 1, msg->hdr.dev_addr_len +
                                              msg->hdr.iface_addr_len);
}


typedef enum {
    QPX_HYBRID_EP_COLD,      /* sends go to the DC ep */
    QPX_HYBRID_EP_PROMOTING, /* PROMOTE_REQ sent (or due): sends go on
                                DC until the answer, then on RC
                                (qpx_hybrid_ep_update_tx) */
    QPX_HYBRID_EP_HOT,       /* sends go to the RC ep */
    QPX_HYBRID_EP_DEMOTING   /* DEMOTE_REQ sent (or due): sends held */
} qpx_hybrid_ep_state_t;


enum {
    QPX_HYBRID_EP_FLAG_WANT_HOT   = UCS_BIT(0), /* promote at next progress */
    QPX_HYBRID_EP_FLAG_CTL_DUE    = UCS_BIT(1), /* a REQ waits for a slot */
    QPX_HYBRID_EP_FLAG_SWITCH_DUE = UCS_BIT(2), /* answered: switch once the
                                                   old path is flushed */
    QPX_HYBRID_EP_FLAG_FAILED     = UCS_BIT(3), /* a sub-ep failed */
    QPX_HYBRID_EP_FLAG_IN_WORK    = UCS_BIT(4), /* in iface->work_eps */
    QPX_HYBRID_EP_FLAG_PENDING    = UCS_BIT(5), /* pending_link is in
                                                   iface->pending_eps or in
                                                   a dispatch round */
    QPX_HYBRID_EP_FLAG_JOINED     = UCS_BIT(6), /* its RC path is the QP of
                                                   connection join_conn (a
                                                   peer's promotion to us),
                                                   not its own */
    QPX_HYBRID_EP_FLAG_PEER_JOINED = UCS_BIT(7),/* the peer's endpoint
                                                   peer_join_ep sends on our
                                                   RC QP too */
    QPX_HYBRID_EP_FLAG_MARK_DUE   = UCS_BIT(8)  /* answered: SWITCHED waits
                                                   for a send slot on DC */
};


typedef struct qpx_hybrid_iface qpx_hybrid_iface_t;


typedef struct qpx_hybrid_ep {
    uct_base_ep_t   super;
    /* Where a send goes now: path_ep, or NULL while the endpoint holds its
     * sends (a switch under way, requests pending): one load decides */
    uct_ep_h        tx_ep;
    /* Where one-sided operations (put, get, atomics) and flush go: tx_ep,
     * and also the cold path while a promotion awaits the peer's answer
     * (they need no order with the peer's software, and a peer that does
     * not progress must not stall them: qpx_hybrid_ep_update_tx) */
    uct_ep_h        rma_ep;
    uct_ep_h        path_ep;     /* cold_ep or rc_ep */
    uct_ep_h        cold_ep;
    uct_ep_h        rc_ep;       /* PROMOTING, HOT, DEMOTING */
    uint64_t        tx_count;    /* operations in the window, each 1 plus
                                    1 per 1 << bytes_shift bytes it moved */
    uint64_t        promote_at;  /* tx_count at which to look again */
    uint64_t        last_used;   /* iface tick of the last operation */
    uint64_t        window_start;
    uint64_t        hold_start;  /* when the switch's request went */
    uint32_t        serial;      /* of the current (or last) switch */
    uint32_t        id;          /* in iface->eps */
    uint32_t        peer_conn;   /* the peer's connection id, HOT */
    uint32_t        join_conn;   /* JOINED: our connection whose QP */
    uint32_t        peer_join_ep;/* PEER_JOINED: the peer's endpoint */
    qpx_hybrid_peer_t dst;       /* the peer it was created for: which of
                                    our connections is its (a join) */
    uint8_t         *peer_addr;  /* its device and DC interface address
                                    (from PROMOTE_REP), for RELEASE */
    uint8_t         peer_dev_len;
    uint8_t         peer_iface_len;
    unsigned        refusals;    /* promotions refused in a row */
    uint8_t         state;       /* qpx_hybrid_ep_state_t */
    uint16_t        flags;
    ucs_list_link_t pending;     /* uct_pending_req_t, by priv */
    ucs_list_link_t pending_link;/* in iface->pending_eps */
    ucs_list_link_t work_link;   /* in iface->work_eps */
    ucs_list_link_t list;        /* in iface->ep_list */
} qpx_hybrid_ep_t;


/* An RC QP a peer promoted its endpoint to us onto (the responder side) */
typedef struct qpx_hybrid_conn {
    uct_ep_h        rc_ep;
    uct_ep_h        ctl_ep;      /* DC ep to the peer, for answers */
    uint32_t        id;          /* in iface->conns */
    uint32_t        peer_ep;     /* the peer's endpoint id */
    uint32_t        serial;      /* of the request being answered */
    uint32_t        aux;         /* of the reply (TRANSFER) */
    uint32_t        joined_ep;   /* our endpoint that sends on this QP
                                    too (a join), or QPX_EP_ID_NULL */
    qpx_hybrid_peer_t peer;      /* the peer (from its PROMOTE_REQ) */
    uint8_t         reply;       /* answer still due: REP, ACK,
                                    TRANSFER, or 0 */
    uint8_t         reply_on_rc; /* the reply goes on rc_ep (DEMOTE_ACK
                                    after a joined endpoint's messages),
                                    once rc_ep is flushed */
    uint8_t         closing;     /* give the QP back once reply is sent */
    uint8_t         demoting;    /* DEMOTE_REQ read, RELEASE not yet */
    uint8_t         in_work;     /* in iface->work_conns */
    uint8_t         rx_hold;     /* what comes on rc_ep waits in rx_held
                                    for the peer's SWITCHED */
    ucs_list_link_t rx_held;     /* qpx_hybrid_held_t, in order */
    ucs_list_link_t work_link;   /* in iface->work_conns */
} qpx_hybrid_conn_t;


/* A message that came on a connection's RC QP before the peer's SWITCHED:
 * a copy, handed to the handler of its AM id when SWITCHED is read */
typedef struct qpx_hybrid_held {
    ucs_list_link_t list;
    uint8_t         id;
    size_t          length;
    uint8_t         data[];
} qpx_hybrid_held_t;


/* What the RC interface's handler of an AM id is given (qpx_hybrid_sub.c):
 * the hybrid, and the id, to hold a message or hand it over */
typedef struct qpx_hybrid_rc_am {
    qpx_hybrid_iface_t *iface;
    uint8_t            id;
} qpx_hybrid_rc_am_t;


/* A control message that waits for a send slot, on an endpoint of its own */
typedef struct qpx_hybrid_ctl_out {
    ucs_list_link_t list;
    uct_ep_h        ep;          /* DC, to the peer; retired once sent */
    uint8_t         type;
    uint32_t        src_id;
    uint32_t        dst_id;
    uint32_t        serial;
} qpx_hybrid_ctl_out_t;


/* A sub-endpoint to destroy once it has nothing in flight */
typedef struct qpx_hybrid_retired {
    ucs_list_link_t list;
    uct_ep_h        ep;
    int             is_rc;       /* an RC QP of the pool: counted in use */
    int             drain_rx;    /* progress the RC interface dry first */
    int             drop_rx;     /* owned as QPX_HYBRID_OWNER_DROP, and
                                    counted in rx_holds, until destroyed */
    uint64_t        deadline;    /* qpx_hybrid_time_ns(): destroyed then */
} qpx_hybrid_retired_t;


/* A retired sub-endpoint whose flush has not completed after this long is
 * destroyed anyway (what it has in flight completes as canceled): its peer
 * is gone. Above the time a QP with qpx_rc's defaults takes to fail on a
 * dead peer (TIMEOUT 1 s x (RETRY_COUNT 7 + 1)) */
#define QPX_HYBRID_RETIRE_TIMEOUT_NS (30ull * 1000000000ull)

/* Back-off between tries to get an RC interface or QP after the device
 * refused one: doubled each time within these */
#define QPX_HYBRID_RC_BACKOFF_MIN_NS  100000000ull   /* 100 ms */
#define QPX_HYBRID_RC_BACKOFF_MAX_NS  10000000000ull /* 10 s */


/* What a sub-endpoint belongs to (iface->owners: the owner's address with
 * the kind in its two low bits, free in an allocated object's address) */
enum {
    QPX_HYBRID_OWNER_EP   = 0,   /* a qpx_hybrid_ep_t */
    QPX_HYBRID_OWNER_CONN = 1,   /* a qpx_hybrid_conn_t */
    QPX_HYBRID_OWNER_DROP = 2,   /* a qpx_hybrid_retired_t: an RC QP whose
                                    connection ended before SWITCHED; what
                                    it still receives is dropped */
    QPX_HYBRID_OWNER_MASK = 3
};

KHASH_MAP_INIT_INT64(qpx_hybrid_owner, uintptr_t);


typedef struct qpx_hybrid_stats {
    uint64_t promotions;     /* endpoints that went to RC */
    uint64_t demotions;      /* that went back to DC (eviction) */
    uint64_t refused;        /* promotions the peer refused (its pool) */
    uint64_t no_slot;        /* promotions given up: pool held by peers */
    uint64_t rc_failures;    /* RC QPs that could not be had */
    uint64_t accepted;       /* peers' promotions to us */
    uint64_t declined;       /* peers' promotions we refused */
    uint64_t yielded;        /* our promotions given up for a peer's */
    uint64_t joins;          /* endpoints that joined a peer's pair */
    uint64_t transfers;      /* pairs handed to the peer's endpoint */
    uint64_t max_rc_in_use;
    uint64_t timeouts;       /* switches given up: the peer did not answer */
    uint64_t deferred;       /* promotions the peer had us ask again (it
                                opened its RC interface for them) */
    uint64_t qps_created;    /* RC QPs created (ahead too), at close */
    uint64_t qps_reused;     /* RC QPs reused through RESET, at close */
    uint64_t held;           /* messages on a connection's RC QP held
                                until the peer's SWITCHED */
    uint64_t dropped;        /* of those, and of what came on the QP after,
                                dropped: the connection ended before it */
    unsigned long malformed; /* control messages dropped as malformed
                                (logging sampled: qpx_log.h) */
} qpx_hybrid_stats_t;


/* The cold path's transport (UCX_QPX_COLD_TL) */
typedef enum {
    QPX_HYBRID_COLD_AUTO,   /* qpx_dc where the device has DC, else qpx_ud */
    QPX_HYBRID_COLD_DC,
    QPX_HYBRID_COLD_UD,
    QPX_HYBRID_COLD_LAST
} qpx_hybrid_cold_tl_t;


typedef struct qpx_hybrid_iface_config {
    uct_iface_config_t super;
    size_t             pool_size;     /* UCS_ULUNITS_AUTO: auto */
    unsigned           promote_thresh;
    size_t             promote_bytes;
    double             promote_window;
    double             switch_timeout;
    int                shared_srq;
    int                rc_eager;      /* RC_OPEN_EAGER */
    unsigned           pool_batch;
    int                cold_tl;       /* qpx_hybrid_cold_tl_t */
    int                print_stats;
} qpx_hybrid_iface_config_t;


struct qpx_hybrid_iface {
    uct_base_iface_t    super;
    uct_iface_h         cold;        /* the cold path: qpx_dc, or qpx_ud */
    uct_iface_h         rc;          /* the hot path, NULL: not open (yet,
                                        or degraded) */
    qpx_iface_t         *cold_core;  /* their cores (qpx_iface_open_core), */
    qpx_iface_t         *rc_core;    /* NULL when the interface is */
    uct_iface_config_t  *cold_config;
    const char          *cold_tl;    /* "qpx_dc" or "qpx_ud" */
    /* The cold path was chosen (COLD_TL=auto) and has qpx_ud to fall back
     * to: its failure is logged by the hybrid (qpx_hybrid_iface_open_cold) */
    int                 cold_fallback;
    uct_iface_config_t  *rc_config;
    qpx_ep_table_t      eps;         /* qpx_hybrid_ep_t by id */
    qpx_ep_table_t      conns;       /* qpx_hybrid_conn_t by id */
    khash_t(qpx_hybrid_owner) owners;/* sub-ep -> endpoint or connection */
    ucs_list_link_t     ep_list;
    ucs_list_link_t     pending_eps;
    ucs_list_link_t     work_eps;    /* switches to advance */
    ucs_list_link_t     work_conns;  /* answers to send */
    ucs_list_link_t     ctl_msgs;    /* control messages to run */
    ucs_list_link_t     ctl_out;     /* qpx_hybrid_ctl_out_t to send */
    ucs_list_link_t     retired;     /* qpx_hybrid_retired_t */
    qpx_hybrid_ep_t     *dispatch_ep;/* whose pending request runs */
    /* The RC interface's AM handlers' arguments, and how many connections
     * hold what comes on their QP (qpx_hybrid_conn_rx_hold): while any
     * does, the RC interface says which endpoint a message came from */
    qpx_hybrid_rc_am_t  rc_am[UCT_AM_ID_MAX];
    unsigned            rx_holds;
    unsigned            rc_in_use;   /* RC QPs: ours, peers', draining */
    unsigned            rc_retiring; /* of those, retired: going back */
    uint64_t            tick;        /* operations so far: the LRU clock */
    unsigned            progress_calls;
    unsigned            cold_idle;     /* progress calls DC had nothing */
    unsigned            rc_idle;     /* and RC */
    int                 rc_warned;
    int                 rc_open_due; /* a peer's promotion was deferred
                                        for it (qpx_hybrid_rc_opening) */
    /* What the device last had no room or memory for, as the
     * sub-interfaces say it (qpx_iface_hints_t's exhausted_what): cleared
     * before opening one or an endpoint on one, read after a failure */
    const char          *sub_exhausted;
    /* The RC interface opens at the first promotion, ours or a peer's
     * (after the answer to the peer: qpx_hybrid_rc_opening), unless the
     * cold path receives from its SRQ (then it opens first and stays): a
     * process with no hot peer holds no CQ or buffer of it. What
     * opening a sub-interface needs is kept; RC's attributes were read at
     * the hybrid's open, from an RC interface opened and closed there
     * (rc_avail: it could be; if not, every endpoint stays on the cold
     * path) */
    struct {
        uct_md_h           md;
        uct_worker_h       worker;
        uct_iface_params_t params;
        char               dev_name[UCT_DEVICE_NAME_MAX];
        qpx_iface_t        *owner;   /* whose SRQ RC receives from */
        /* What a sub-interface calls, set by the interface above the
         * layers that open them (qpx_hybrid_sub.c does not name them): a
         * sub-endpoint's error (qpx_hybrid_sub_ep_failed) and a control
         * message (qpx_hybrid_ctl_handler) */
        uct_error_handler_t ep_failed;
        uct_am_callback_t   ctl_handler;
    } open_args;
    uct_iface_attr_t    rc_attr;
    int                 rc_avail;
    /* The hybrid's own attributes (qpx_hybrid_iface_query at open): its
     * operations hold callers to these limits, the smaller of both paths',
     * whichever path an endpoint is on (qpx_hybrid_ops.c) */
    uct_iface_attr_t    attr;
    int                 check_bcopy; /* a path takes more than attr says */
    /* After an RC endpoint could not be created (no QP, CQ or memory
     * registration left): none is tried before rc_retry_at, the wait
     * doubling from 100 ms to 10 s while it keeps failing */
    uint64_t            rc_retry_at;
    uint64_t            rc_backoff;
    int                 rc_eager_due;  /* RC_OPEN_EAGER, not tried yet */
    int                 epfd;        /* over the sub-interfaces' event fds,
                                        -1: no events */
    uint64_t            event_flags; /* what both sub-interfaces offer */
    struct {
        uint8_t         dev[QPX_HYBRID_ADDR_MAX];
        uint8_t         iface[QPX_HYBRID_ADDR_MAX];
        size_t          dev_len;
        size_t          iface_len;
        size_t          rc_ep_len;
    } addr;
    struct {
        unsigned        pool_size;
        unsigned        promote_thresh;
        unsigned        bytes_shift;    /* 1 << it bytes count as an op */
        uint64_t        promote_window;
        uint64_t        switch_timeout;
        unsigned        pool_batch;
        int             print_stats;
    } config;
    qpx_hybrid_stats_t  stats;
};


extern uct_tl_t qpx_hybrid_tl;


/* Monotonic nanoseconds (vDSO): the slow path's clock */
static inline uint64_t qpx_hybrid_time_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static UCS_F_ALWAYS_INLINE qpx_hybrid_iface_t *
qpx_hybrid_ep_iface(qpx_hybrid_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, qpx_hybrid_iface_t);
}

/* Whom sub_ep belongs to (iface->owners; qpx_hybrid_owner_set), NULL:
 * nobody (retired, or an answer's); *kind_p: QPX_HYBRID_OWNER_EP,
 * QPX_HYBRID_OWNER_CONN or QPX_HYBRID_OWNER_DROP */
static inline void *qpx_hybrid_owner_get(qpx_hybrid_iface_t *iface,
                                         uct_ep_h sub_ep, int *kind_p)
{
    khiter_t it = kh_get(qpx_hybrid_owner, &iface->owners,
                         (uintptr_t)sub_ep);
    uintptr_t value;

    if (it == kh_end(&iface->owners)) {
        return NULL;
    }
    value   = kh_value(&iface->owners, it);
    *kind_p = (int)(value & QPX_HYBRID_OWNER_MASK);
    return (void*)(value & ~(uintptr_t)QPX_HYBRID_OWNER_MASK);
}

/* The state of endpoints and connections, kept by the layers of the
 * switch (qpx_hybrid_join.c, qpx_hybrid_switch.c) and the endpoint
 * (qpx_hybrid_ep.c) alike */

/*
 * Sends go to the path unless a switch holds them or requests wait.
 * While a promotion of its own is under way (PROMOTING, not a join) active
 * messages go on: on the cold path until the answer, on RC once SWITCHED
 * went (the peer holds what comes on RC until it reads it); held only
 * while SWITCHED waits for a send slot. One-sided operations go on while
 * the promotion is not yet answered (its request due or sent): they need
 * no order with what the peer's software has handled, only completion
 * before the RC path is used, which the switch's flush of the cold path
 * gives; they are held from the answer until then. Held while
 * unanswered, they stalled until the request went
 * (at the sender's next progress: a program posting puts and flushing an
 * interface with nothing in flight never gave one) and then until the
 * peer answered, which one that does not progress (a SHMEM PE computing)
 * never does within SWITCH_TIMEOUT. Requests waiting hold them too (they
 * go first).
 */
static inline void qpx_hybrid_ep_update_tx(qpx_hybrid_ep_t *ep)
{
    int idle = ucs_list_is_empty(&ep->pending);
    int open = (ep->flags & QPX_HYBRID_EP_FLAG_FAILED) ||
               (((ep->state == QPX_HYBRID_EP_COLD) ||
                 (ep->state == QPX_HYBRID_EP_HOT)) && idle);
    int awaiting = (ep->state == QPX_HYBRID_EP_PROMOTING) && idle &&
                   !(ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    /* A promotion of its own (a join holds): active messages go on, on
     * the cold path until the answer, on RC once SWITCHED went (the peer
     * holds them until it has read it); held only while SWITCHED waits */
    int through  = (ep->state == QPX_HYBRID_EP_PROMOTING) && idle &&
                   !(ep->flags & (QPX_HYBRID_EP_FLAG_JOINED |
                                  QPX_HYBRID_EP_FLAG_MARK_DUE));

    ucs_assert(!awaiting || (ep->path_ep == ep->cold_ep));
    ucs_assert(!through || awaiting || (ep->path_ep == ep->rc_ep));
    ep->tx_ep  = (open || through) ? ep->path_ep : NULL;
    ep->rma_ep = (open || awaiting) ? ep->path_ep : NULL;
}


static inline void qpx_hybrid_ep_work(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    if (!(ep->flags & QPX_HYBRID_EP_FLAG_IN_WORK)) {
        ep->flags |= QPX_HYBRID_EP_FLAG_IN_WORK;
        ucs_list_add_tail(&iface->work_eps, &ep->work_link);
    }
}


/* Count again from now; the next promotion needs the threshold, doubled
 * for every promotion refused in a row (at most 1024 times) */
static inline void qpx_hybrid_ep_cool(qpx_hybrid_ep_t *ep, unsigned backoff)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    ep->tx_count     = 0;
    ep->window_start = qpx_hybrid_time_ns();
    if (!iface->rc_avail || (iface->config.pool_size == 0)) {
        ep->promote_at = UINT64_MAX;
    } else {
        ep->promote_at = (uint64_t)iface->config.promote_thresh <<
                         ucs_min(backoff, 10);
    }
}


static inline void qpx_hybrid_conn_work(qpx_hybrid_iface_t *iface,
                                        qpx_hybrid_conn_t *conn)
{
    if (!conn->in_work) {
        conn->in_work = 1;
        ucs_list_add_tail(&iface->work_conns, &conn->work_link);
    }
}


/* The endpoint an answer is for, in the state it must be in */
static inline qpx_hybrid_ep_t *
qpx_hybrid_ctl_ep(qpx_hybrid_iface_t *iface, const qpx_hybrid_ctl_msg_t *msg,
                  qpx_hybrid_ep_state_t state)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, msg->hdr.dst_id);

    if ((ep == NULL) || (ep->state != state) ||
        (ep->serial != msg->hdr.serial) ||
        (ep->flags & QPX_HYBRID_EP_FLAG_FAILED)) {
        return NULL;
    }
    return ep;
}


/* qpx_hybrid_sub.c: the sub-interfaces */
const char *qpx_hybrid_cold_tl_choose(uct_md_h md, int cold_tl);

/* The cold path's tag in our interface address (QPX_HYBRID_ADDR_COLD_*) */
static inline uint8_t qpx_hybrid_iface_cold_tag(const qpx_hybrid_iface_t *iface)
{
    return strcmp(iface->cold_tl, "qpx_dc") ? QPX_HYBRID_ADDR_COLD_UD :
                                              QPX_HYBRID_ADDR_COLD_DC;
}

ucs_status_t qpx_hybrid_iface_open_cold(qpx_hybrid_iface_t *self,
                                        unsigned tries);
ucs_status_t qpx_hybrid_iface_rc_open(qpx_hybrid_iface_t *iface);
/* An unconnected RC endpoint (its QP from qpx_rc's pool, or new), on the
 * RC interface, which the first one opens. What cannot be had (ENOMEM, a
 * QP or CQ limit) is said once per interface: endpoints stay on the cold
 * path meanwhile, and later promotions try again, after a wait */
ucs_status_t qpx_hybrid_rc_ep_create(qpx_hybrid_iface_t *iface,
                                     uct_ep_h *ep_p);
/* A peer's promotion finds the RC interface closed: opening it takes
 * milliseconds (CQs, send buffers), longer than the peer may hold its sends
 * for our answer. 1: the peer is to be told to ask again (NACK_OPENING),
 * and qpx_hybrid_rc_open_due opens it once the answers went; 0: open, or
 * failed a moment ago (ask for a QP: refused until the wait has passed) */
int qpx_hybrid_rc_opening(qpx_hybrid_iface_t *iface);
void qpx_hybrid_rc_open_due(qpx_hybrid_iface_t *iface);
/* UCX_QPX_RC_OPEN_EAGER: the RC interface opens at the first endpoint */
void qpx_hybrid_rc_open_eager(qpx_hybrid_iface_t *iface);
ucs_status_t qpx_hybrid_iface_query(uct_iface_h tl_iface,
                                    uct_iface_attr_t *iface_attr);
unsigned qpx_hybrid_iface_progress(uct_iface_h tl_iface);
/* Everything after super from zero (the class does not clear), and the
 * settings of config */
void qpx_hybrid_iface_state_init(qpx_hybrid_iface_t *self,
                                 const qpx_hybrid_iface_config_t *config);
void qpx_hybrid_iface_rc_close(qpx_hybrid_iface_t *iface);
void qpx_hybrid_iface_rc_probe(qpx_hybrid_iface_t *self, int keep);
void qpx_hybrid_iface_close_subs(qpx_hybrid_iface_t *self);
void qpx_hybrid_iface_event_init(qpx_hybrid_iface_t *self,
                                 const uct_iface_attr_t *cold_attr);

/* qpx_hybrid_ep.c */
void qpx_hybrid_ep_heat(qpx_hybrid_ep_t *ep);
ucs_status_t qpx_hybrid_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags);
void qpx_hybrid_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg);
unsigned qpx_hybrid_iface_pending_progress(qpx_hybrid_iface_t *iface);
QPX_EP_DECLARE(qpx_hybrid);
void qpx_hybrid_owner_set(qpx_hybrid_iface_t *iface, uct_ep_h sub_ep,
                          void *owner, int kind);
void qpx_hybrid_owner_del(qpx_hybrid_iface_t *iface, uct_ep_h sub_ep);
/* qpx_hybrid_retire's flags: progress the RC interface dry before the
 * flush (a QP a peer sent to); and drop what the QP still receives (its
 * connection ended before SWITCHED and dropped what it held) */
#define QPX_HYBRID_RETIRE_DRAIN_RX  UCS_BIT(0)
#define QPX_HYBRID_RETIRE_DROP_RX   UCS_BIT(1)
void qpx_hybrid_retire(qpx_hybrid_iface_t *iface, uct_ep_h ep, int is_rc,
                       unsigned flags);
unsigned qpx_hybrid_iface_retire_progress(qpx_hybrid_iface_t *iface);
void qpx_hybrid_retired_destroy(qpx_hybrid_iface_t *iface,
                                qpx_hybrid_retired_t *r);

/* qpx_hybrid_switch.c */
unsigned qpx_hybrid_iface_ctl_progress(qpx_hybrid_iface_t *iface);
/* A sub-interface's error handler (open_args.ep_failed) */
ucs_status_t qpx_hybrid_sub_ep_failed(void *arg, uct_ep_h sub_ep,
                                      ucs_status_t status);
unsigned qpx_hybrid_iface_work_progress(qpx_hybrid_iface_t *iface);

/* qpx_hybrid_join.c: the pair of a promotion carrying both directions */
void qpx_hybrid_peer_id(const void *dev, size_t dev_len,
                        const void *iface_addr, size_t iface_len,
                        qpx_hybrid_peer_t *peer);
void qpx_hybrid_ctl_sender(const qpx_hybrid_ctl_msg_t *msg,
                           qpx_hybrid_peer_t *peer);

static inline int qpx_hybrid_peer_is(const qpx_hybrid_peer_t *a,
                                     const qpx_hybrid_peer_t *b)
{
    return !memcmp(a, b, sizeof(*a));
}
enum {
    QPX_HYBRID_JOIN_NONE,
    QPX_HYBRID_JOIN_STARTED,
    QPX_HYBRID_JOIN_WAIT
};
int qpx_hybrid_ep_join(qpx_hybrid_ep_t *ep);
int qpx_hybrid_ctl_peer_wins(const qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg);
int qpx_hybrid_join_crossing(qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg, int peer_wins);
uint32_t qpx_hybrid_join_peer_ep(qpx_hybrid_ep_t *ep);
void qpx_hybrid_ep_unjoin(qpx_hybrid_ep_t *ep);
void qpx_hybrid_ep_leave(qpx_hybrid_ep_t *ep);
void qpx_hybrid_join_demote(qpx_hybrid_iface_t *iface,
                            qpx_hybrid_conn_t *conn);
void qpx_hybrid_join_stale_ack(qpx_hybrid_iface_t *iface,
                               const qpx_hybrid_ctl_msg_t *msg);
void qpx_hybrid_join_ctl_run(qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg);
qpx_hybrid_ep_t *qpx_hybrid_join_take_failed(qpx_hybrid_iface_t *iface,
                                             qpx_hybrid_conn_t *conn,
                                             uct_ep_h sub_ep);
int qpx_hybrid_ep_transfer(qpx_hybrid_ep_t *ep);
void qpx_hybrid_conn_destroy(qpx_hybrid_iface_t *iface,
                             qpx_hybrid_conn_t *conn);
/* Back to the cold path without a switch */
void qpx_hybrid_ep_promote_abort(qpx_hybrid_ep_t *ep, unsigned backoff,
                                 int connected);
/* An endpoint of ours whose promotion waits for its answer (not switching,
 * failed or joined) to peer, or to any peer when peer is NULL: the one a
 * crossing or a full pool makes give up (qpx_hybrid_join_crossing,
 * qpx_hybrid_iface_yield_slot). NULL: none. */
qpx_hybrid_ep_t *qpx_hybrid_iface_promoting_ep(qpx_hybrid_iface_t *iface,
                                               const qpx_hybrid_peer_t *peer);

/* qpx_hybrid_sub.c: what comes on a connection's RC QP before the peer's
 * SWITCHED is held (a copy, in order), and handed over when it is read
 * (deliver) or dropped (the connection ends without it) */
void qpx_hybrid_iface_set_sub_am(qpx_hybrid_iface_t *iface, qpx_iface_t *sub,
                                 int is_rc);
void qpx_hybrid_conn_rx_hold(qpx_hybrid_iface_t *iface,
                             qpx_hybrid_conn_t *conn);
void qpx_hybrid_conn_rx_release(qpx_hybrid_iface_t *iface,
                                qpx_hybrid_conn_t *conn, int deliver);
/* One more (or one less) QP whose messages the RC trampoline looks at */
void qpx_hybrid_rx_holds_add(qpx_hybrid_iface_t *iface);
void qpx_hybrid_rx_holds_remove(qpx_hybrid_iface_t *iface);

/* qpx_hybrid_ctl.c: control messages */
extern const char *qpx_hybrid_ctl_names[];
ucs_status_t qpx_hybrid_ctl_handler(void *arg, void *data, size_t length,
                                    unsigned flags);
ucs_status_t qpx_hybrid_ctl_ep_create(qpx_hybrid_iface_t *iface,
                                      const void *dev_addr,
                                      const void *iface_addr, uint8_t type,
                                      uct_ep_h *ep_p);
unsigned qpx_hybrid_iface_ctl_out_progress(qpx_hybrid_iface_t *iface);
/* Send a control message on a DC endpoint of its own to the peer at
 * dev_addr/iface_addr, now or when a send slot frees: never lost for want
 * of resources */
void qpx_hybrid_ctl_post(qpx_hybrid_iface_t *iface, const void *dev_addr,
                         const void *iface_addr, uint8_t type,
                         uint32_t src_id, uint32_t dst_id, uint32_t serial);
ucs_status_t qpx_hybrid_ctl_send(qpx_hybrid_iface_t *iface, uct_ep_h via,
                                 uint8_t type, uint32_t src_id,
                                 uint32_t dst_id, uint32_t serial,
                                 uint32_t aux, uct_ep_h rc_ep);

/* qpx_hybrid_iface.c: the interface, with the operations qpx_hybrid_ops.c
 * (the tl, above it) hands down */
extern ucs_config_field_t qpx_hybrid_iface_config_table[];
ucs_status_t qpx_hybrid_iface_new(uct_iface_ops_t *ops,
                                  uct_iface_internal_ops_t *internal_ops,
                                  uct_md_h md, uct_worker_h worker,
                                  const uct_iface_params_t *params,
                                  const uct_iface_config_t *config,
                                  uct_iface_h *iface_p);

/* qpx_hybrid_ops.c: the tl and the operation tables it hands down (the
 * unit tests install the operations on interfaces they build by hand) */
extern uct_iface_ops_t qpx_hybrid_iface_ops;

#endif
