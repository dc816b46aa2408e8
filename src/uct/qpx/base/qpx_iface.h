/*
 * qpx interface core, shared by every qpx transport.
 *
 * A qpx_iface_t owns, for one device port:
 *  - a send CQ and a receive CQ,
 *  - one SRQ that every receive-capable QP of the interface uses,
 *  - receive buffers (rx_mp) from a registered ucs mpool, reposted to the SRQ
 *    in batches (qpx_iface_rx_post), and handed to AM handlers with
 *    UCT_CB_PARAM_FLAG_DESC (release via uct_iface_release_desc),
 *  - send bounce buffers (tx_mp), registered, for bcopy and small headers,
 *  - a QP pool: qpx_iface_qp_get()/qpx_iface_qp_put() create QPs with the
 *    interface's caps, keep RESET QPs for reuse and destroy the rest,
 *  - a qpn -> object map for transports that find an endpoint by the QP
 *    number of a completion (qpx_iface_qp_map_*),
 *  - the arbiter of the endpoints' pending queues (qpx_ep.h), run with
 *    what the transport answers through qpx_iface_ops_t.
 *
 * Receive buffer layout (offsets in qpx_iface_t.config):
 *
 *   | qpx_rx_desc_t | rx_priv | ... | uct_recv_desc_t* | rx_headroom | payload
 *
 * The AM handler's desc is the headroom (rx_headroom_offset), the release
 * pointer the 8 bytes before it; the receive lands at rx_hdr_offset, the
 * transport's header (rx_hdr_len bytes) overlapping those, and the payload
 * follows at rx_payload_offset (8-byte aligned; the receive is seg_size
 * bytes).
 *
 * Using it from a transport (qpx_rc is the reference user):
 *  1. config: embed qpx_iface_config_table as the first entry of the
 *     transport's table ({"", "", NULL, offsetof(super),
 *     UCS_CONFIG_TYPE_TABLE(qpx_iface_config_table)}); variables then read
 *     UCX_QPX_<TL>_SEG_SIZE, _TX_QUEUE_LEN, _RX_QUEUE_LEN, ...
 *  2. init: UCS_CLASS_CALL_SUPER_INIT(qpx_iface_t, ops, internal_ops, md,
 *     worker, params, config, &init_attr) with init_attr.ops (the
 *     transport's answers, qpx_iface_ops_t), qp_type (RC or UD),
 *     rx_hdr_len (bytes the transport puts before an AM payload in a receive
 *     buffer, e.g. 40-byte GRH + UD header), rx_priv_len (transport bytes
 *     after qpx_desc_t, e.g. a link for deferred delivery), seg_size (0: the
 *     configuration's), tx_priv_len (bytes of a tx_mp element before its
 *     data; start the element with qpx_desc_t), max_send_sge, use_srq
 *     (receives come from the SRQ, which verbs allows for RC and UD QPs; or
 *     from the one QP's receive queue), access_flags (RC).
 *  3. qpx_iface_qp_get() once: iface->config.max_inline, max_send_sge and
 *     tx_queue_len (and, without an SRQ, rx.queue_len) then hold what the
 *     device granted; give the QP back with qpx_iface_qp_put() or keep it.
 *  4. qpx_iface_rx_post(iface, iface->rx.available) fills the SRQ.
 *  5. progress: poll iface->recv_cq; wc.wr_id is the qpx_desc_t*; the
 *     received bytes start at desc + config.rx_hdr_offset, the AM payload at
 *     desc + config.rx_payload_offset. Call qpx_iface_rx_user_desc() before
 *     the AM handler (UCT_CB_PARAM_FLAG_DESC); if it returns UCS_INPROGRESS
 *     count the slot (qpx_iface_rx_kept()), else recycle the buffer
 *     (qpx_iface_rx_recycle()); after the loop over the polled completions
 *     post what is due (qpx_iface_rx_post_due()). qpx_iface_rx_am() does
 *     the handler's part.
 *     Poll iface->send_cq yourself and add one to
 *     tx.cq_available per completion polled; subtract one per signalled
 *     post.
 *  6. ops: qpx_iface_get_device_address, qpx_iface_is_reachable; tl:
 *     qpx_iface_query_devices; attributes: qpx_iface_query() then the
 *     transport's caps.
 */
#ifndef QPX_IFACE_H_
#define QPX_IFACE_H_

#include "qpx_device.h"
#include "qpx_md.h"
#include "qpx_qp.h"
#include "qpx_mlx5.h"

#include <ucs/ucx_compat.h>
#include <ucs/ucx_ops.h>
#include <ucs/datastruct/khash.h>
#include <infiniband/verbs.h>
#include <string.h>


/* A periodic timer on UCX's async thread (qpx_iface_timer_start) */
typedef struct qpx_iface_timer {
    int                  fd;   /* timerfd, -1: none */
    int                  id;   /* UCX timer (poll, signal mode), -1: none */
    ucs_async_event_cb_t cb;
    void                 *arg;
} qpx_iface_timer_t;


/* Header of every registered buffer of rx_mp and tx_mp */
typedef struct qpx_desc {
    uint32_t lkey;
    uint32_t flags; /* free for the transport */
} qpx_desc_t;


/* Header of every receive buffer (rx_mp): its own receive WR, filled when
 * the pool makes the buffer (wr_id: the buffer; one SGE at config's
 * rx_hdr_offset, seg_size long) and posted as it is every time after, only
 * its link set. A transport's private bytes (rx_priv_len) follow it. */
typedef struct qpx_rx_desc {
    qpx_desc_t         super;
    struct ibv_recv_wr wr;
    struct ibv_sge     sge;
} qpx_rx_desc_t;


/* Common configuration: UCX_QPX_<TL>_* (embed qpx_iface_config_table first) */
typedef struct qpx_iface_config {
    uct_iface_config_t       super;
    size_t                   seg_size;      /* bytes per receive/bcopy buffer */
    struct {
        unsigned                 queue_len; /* send WRs per QP */
        unsigned                 cq_len;    /* send CQ entries */
        size_t                   max_inline;
        unsigned                 moderation; /* signal one send every N */
        uct_iface_mpool_config_t mp;
    } tx;
    struct {
        unsigned                 queue_len; /* SRQ WRs */
        size_t                   queue_max; /* SRQ WRs it may grow to */
        unsigned                 max_batch; /* repost in batches of */
        uct_iface_mpool_config_t mp;
    } rx;
    unsigned                 qp_pool_size;
    int                      direct;        /* ucs_on_off_auto_value_t */
} qpx_iface_config_t;

extern ucs_config_field_t qpx_iface_config_table[];


/* An interface's two CQs, by index (also of direct.cq) */
enum {
    QPX_IFACE_CQ_TX = QPX_MLX5_CQ_TX,
    QPX_IFACE_CQ_RX = QPX_MLX5_CQ_RX
};


typedef struct qpx_iface qpx_iface_t;
typedef struct qpx_ep    qpx_ep_t;

/* qpx_iface_t's rx.src_want bits */
#define QPX_IFACE_RX_SRC_TL   UCS_BIT(0) /* the transport's own */
#define QPX_IFACE_RX_SRC_USER UCS_BIT(1) /* a user above */


/* Whether an endpoint may post now, as its transport sees it */
typedef enum {
    QPX_EP_TX_OK,    /* it may post */
    QPX_EP_TX_WAIT,  /* not now; the transport schedules its pending requests
                        again (qpx_ep_pending_schedule) when the resource
                        returns: a send completion, an acknowledgement */
    QPX_EP_TX_RETRY  /* a request may or may not go (flow-control credits
                        that only messages need, a failed endpoint whose
                        requests must run to see the error); nothing
                        announces a change, so a refused request is tried
                        again on the next progress */
} qpx_ep_tx_state_t;


/*
 * What a transport tells base (qpx_iface_init_attr_t.ops). Base runs every
 * transport's pending queues with these answers and nothing else of the
 * transport's state.
 */
typedef struct qpx_iface_ops {
    /* Interface-wide send resources are used up (send CQ entries, send
     * slots of a shared QP, descriptors): pending dispatch stops, and goes
     * on with the same request at the next progress */
    int               (*tx_exhausted)(qpx_iface_t *iface);
    /* The endpoint's own resources (see qpx_ep_tx_state_t) */
    qpx_ep_tx_state_t (*ep_tx_state)(qpx_iface_t *iface, qpx_ep_t *ep);
    /* NULL, or: the send buffer pool is empty, ask for the completions
     * that bring buffers back (qpx_rc, qpx_dc: their unsignalled requests
     * hold buffers until a later signalled one completes). Called where a
     * buffer is refused (qpx_iface_tx_desc_get) and while the pool stays
     * empty (qpx_iface_tx_exhausted_signaled) */
    void              (*tx_solicit)(qpx_iface_t *iface);
} qpx_iface_ops_t;


/*
 * How an interface is opened beyond UCT's parameters, for a user inside qpx
 * (the hybrid's sub-interfaces): given to a transport's constructor
 * (qpx_iface_open_func_t, qpx_iface_open_hinted) and by it to base's
 * (qpx_iface_init_attr_t.hints); NULL, as UCX's uct_iface_open gives, means
 * the defaults below.
 */
typedef struct qpx_iface_hints {
    /* Not NULL: one SRQ for the QPs of two interfaces of a port (the
     * hybrid's RC QPs and DCT, or its RC QPs and UD QP). The interface, on
     * the same memory domain and port, posts no SRQ of its own but uses
     * rx_owner's (and its buffer pool), where rx_owner's buffers fit it:
     * they are at least its SEG_SIZE, and its own layout from rx_owner's
     * landing point (rx_hdr_offset) keeps its private bytes, the release
     * pointer and the user's headroom apart. Its payload is then at the
     * landing point plus its own header, which need not be 8-byte aligned
     * (a UD sharer's, after the 40-byte GRH and its header, behind RC's
     * 1-byte header). Its completions stay on its own CQ. rx_owner must
     * outlive it. Whether it took it: iface->rx_owner. Default NULL. */
    qpx_iface_t     *rx_owner;
    /* The level it logs a QP, CQ or SRQ the device has no room or memory
     * for (ENOMEM, EAGAIN) at (its exhausted_level), and caps granted too
     * small for it, for a user that goes on without it and says so
     * itself. Default error. */
    ucs_log_level_t exhausted_level;
    /* Opened only to be queried (uct_iface_query) and closed: CQs of one
     * entry, no send buffer allocated ahead. Its attributes are those of an
     * interface of the same configuration; it must not be used for
     * anything else. Default 0. */
    int             attr_only;
    /* Not NULL: where the interface says what the device had no room or
     * memory for ("QP", "CQ", "SRQ", "memory registration") when its open,
     * an endpoint or a buffer pool's growth fails for want of it, for its
     * user's one warning; the user clears it before such a call and reads
     * it after. Must outlive the interface. Default NULL. */
    const char      **exhausted_what;
} qpx_iface_hints_t;

/* A transport's interface constructor with hints (NULL: the defaults): its
 * uct_tl_t.iface_open calls it with NULL */
typedef ucs_status_t (*qpx_iface_open_func_t)(uct_md_h md,
                                              uct_worker_h worker,
                                              const uct_iface_params_t *params,
                                              const uct_iface_config_t *config,
                                              const qpx_iface_hints_t *hints,
                                              uct_iface_h *iface_p);

/*
 * The class functions of a transport's interface _type (a qpx_iface_t, or
 * a class derived from one, _super): UCS_CLASS_DEFINE, its new and delete
 * functions (the delete one is _type##_delete, for iface_close), and
 * _open, its qpx_iface_open_func_t for qpx_transport_opens. Its
 * UCS_CLASS_INIT_FUNC takes (md, worker, params, tl_config, hints).
 */
#define QPX_IFACE_CLASS_DEFINE(_type, _super, _open) \
    UCS_CLASS_DEFINE(_type, _super); \
    static UCS_CLASS_DEFINE_NEW_FUNC(_type, uct_iface_t, uct_md_h, \
                                     uct_worker_h, const uct_iface_params_t*, \
                                     const uct_iface_config_t*, \
                                     const qpx_iface_hints_t*); \
    static UCS_CLASS_DEFINE_DELETE_FUNC(_type, uct_iface_t); \
    ucs_status_t _open(uct_md_h md, uct_worker_h worker, \
                       const uct_iface_params_t *params, \
                       const uct_iface_config_t *config, \
                       const qpx_iface_hints_t *hints, uct_iface_h *iface_p) \
    { \
        return UCS_CLASS_NEW_FUNC_NAME(_type)(md, worker, params, config, \
                                              hints, iface_p); \
    }

/* The endpoint class _tl##_ep_t of a transport _tl (created from
 * uct_ep_params_t) and its control functions, as uct_iface_ops_t and
 * uct_iface_internal_ops_t take them (ep_invalidate: UCX's emulated
 * transport error) */
#define QPX_EP_DECLARE(_tl) \
    UCS_CLASS_DECLARE(_tl##_ep_t, const uct_ep_params_t*); \
    UCS_CLASS_DECLARE_NEW_FUNC(_tl##_ep_t, uct_ep_t, const uct_ep_params_t*); \
    UCS_CLASS_DECLARE_DELETE_FUNC(_tl##_ep_t, uct_ep_t); \
    ucs_status_t _tl##_ep_flush(uct_ep_h tl_ep, unsigned flags, \
                                uct_completion_t *comp); \
    ucs_status_t _tl##_ep_fence(uct_ep_h tl_ep, unsigned flags); \
    int _tl##_ep_is_connected(const uct_ep_h tl_ep, \
                              const uct_ep_is_connected_params_t *params); \
    ucs_status_t _tl##_ep_check(uct_ep_h tl_ep, unsigned flags, \
                                uct_completion_t *comp); \
    ucs_status_t _tl##_ep_invalidate(uct_ep_h tl_ep, \
                                     qpx_ep_invalidate_arg_t arg)

/* The UCS_CLASS_INIT_FUNC of a transport's interface _type, with the
 * arguments of QPX_IFACE_CLASS_DEFINE's new function */
#define QPX_IFACE_INIT_FUNC(_type) \
    UCS_CLASS_INIT_FUNC(_type, uct_md_h md, uct_worker_h worker, \
                        const uct_iface_params_t *params, \
                        const uct_iface_config_t *tl_config, \
                        const qpx_iface_hints_t *hints)

/*
 * The uct_tl_t of a transport that opens through qpx_transport_opens:
 * named _name, configured by _table (of _config_type) under UCX_<_prefix>
 */
#define QPX_TL_DEFINE(_var, _name, _prefix, _table, _config_type, _query) \
    uct_tl_t _var = { \
        .name          = _name, \
        .query_devices = _query, \
        .iface_open    = qpx_iface_open_default, \
        .config        = { \
            .name   = _name " transport", \
            .prefix = _prefix, \
            .table  = _table, \
            .size   = sizeof(_config_type), \
        } \
    }

/* The transports that open with hints, by name, ended by a NULL name
 * (qpx_transports.c, above every transport: base includes none) */
typedef struct qpx_transport_open {
    const char            *tl_name;
    qpx_iface_open_func_t open;
} qpx_transport_open_t;

extern const qpx_transport_open_t qpx_transport_opens[];

/* uct_tl_t.iface_open of the transports in qpx_transport_opens: theirs,
 * with the defaults (no hints) */
ucs_status_t qpx_iface_open_default(uct_md_h md, uct_worker_h worker,
                                    const uct_iface_params_t *params,
                                    const uct_iface_config_t *config,
                                    uct_iface_h *iface_p);

/* Open the interface of the qpx transport params names (device mode) with
 * hints, through that transport's constructor (qpx_transport_opens): as
 * uct_iface_open does, without its VFS entry (a sub-interface is its
 * owner's business) */
ucs_status_t qpx_iface_open_hinted(uct_md_h md, uct_worker_h worker,
                                   const uct_iface_params_t *params,
                                   const uct_iface_config_t *config,
                                   const qpx_iface_hints_t *hints,
                                   uct_iface_h *iface_p);

/* The same, for an owner that keeps the interface's core too (the
 * hybrid): every transport of qpx_transport_opens derives from
 * qpx_iface_t, so the core is known here, not cast back by the owner */
ucs_status_t qpx_iface_open_core(uct_md_h md, uct_worker_h worker,
                                 const uct_iface_params_t *params,
                                 const uct_iface_config_t *config,
                                 const qpx_iface_hints_t *hints,
                                 uct_iface_h *iface_p, qpx_iface_t **core_p);

/* What a transport asks of the interface core */
typedef struct qpx_iface_init_attr {
    const qpx_iface_ops_t *ops;   /* the transport's answers */
    const char      *tl_name;      /* the transport's name, for logs */
    enum ibv_qp_type qp_type;
    size_t           rx_hdr_len;   /* transport bytes before an AM payload */
    size_t           rx_priv_len;  /* bytes after qpx_rx_desc_t in a
                                      receive buffer kept for the
                                      transport */
    size_t           seg_size;     /* receive/bcopy buffer bytes, or 0 for
                                      the configured SEG_SIZE (a datagram
                                      transport: at most GRH + MTU) */
    size_t           tx_priv_len;  /* bytes of a tx descriptor before data,
                                      including qpx_desc_t */
    unsigned         max_send_sge; /* SGEs requested per send WR */
    unsigned         tx_reserve;   /* send slots a QP keeps from the user's
                                      operations (flush, credits): its send
                                      queue must hold more */
    int              use_srq;      /* 1: QPs receive from the SRQ; 0: no
                                      SRQ, the first QP's own receive queue
                                      is the interface's */
    int              access_flags; /* RC QP access flags */
    /* How the interface is opened beyond UCT's parameters (the hybrid's),
     * NULL: the defaults (qpx_iface_hints_t) */
    const qpx_iface_hints_t *hints;
    /* How the interface's QPs are created (qpx_iface_qp_get): NULL for
     * qpx_qp_create (ibv_create_qp), or another creator with its cap
     * negotiation, such as qpx_qp_dci_create for DC initiators */
    qpx_qp_creator_t qp_create;
} qpx_iface_init_attr_t;


KHASH_MAP_INIT_INT(qpx_qp_map, void*);


/* Completions event_arm may take out of each CQ (qpx_iface_event_arm) */
#define QPX_IFACE_BACKLOG 32

/* The software cost of one operation, seconds, that UCP weighs transports
 * by (uct_iface_attr_t.overhead): base's estimate for a verbs post and
 * poll, which each transport replaces with its own (qpx_rdma_tl_t's
 * overhead, qpx_ud's QPX_UD_OVERHEAD) */
#define QPX_IFACE_OVERHEAD 75e-9


struct qpx_iface {
    uct_base_iface_t          super;
    const qpx_iface_ops_t     *ops;
    qpx_md_t                  *md;
    qpx_device_port_t         *port;
    uint8_t                   port_num;
    struct ibv_cq             *send_cq;
    struct ibv_cq             *recv_cq;
    struct ibv_comp_channel   *comp_channel; /* of both CQs, non-blocking */
    struct {
        int                   epfd;      /* the iface's event fd: channel +
                                            signal_fd */
        int                   signal_fd; /* eventfd: "progress me" */
    } event;
    struct ibv_srq            *srq;      /* NULL: receives go to rx.qp */
    /* srq's context: the device's SRQ limit event calls it
     * (qpx_iface_rx_limit_reached) */
    qpx_device_srq_handler_t  srq_handler;
    /* Not NULL: srq is this interface's, shared (qpx_iface_hints_t),
     * and fresh receive buffers come from its rx_mp */
    qpx_iface_t               *rx_owner;
    ucs_mpool_t               rx_mp;
    /* rx_mp is used from UCX's async thread too (a sharer's timer, see
     * qpx_iface_rx_pool_lock): its gets and puts take rx_mp_lock */
    int                       rx_mp_locked;
    ucs_spinlock_t            rx_mp_lock;
    ucs_mpool_t               tx_mp;
    /* UCX's ops of rx_mp and tx_mp, with chunk_alloc wrapped: a pool the
     * device has no registration left for keeps what it has
     * (qpx_iface_mp_grow) */
    ucs_mpool_ops_t           rx_mp_ops;
    ucs_mpool_ops_t           tx_mp_ops;
    ucs_status_t              (*mp_chunk_alloc)(ucs_mpool_t*, size_t*,
                                                void**);
    uct_recv_desc_t           release_desc;
    ucs_arbiter_t             arbiter;   /* of the eps' pending groups */
    struct {
        qpx_ep_t              *ep;       /* whose pending request runs now */
        int                   async_only; /* dispatched from the async
                                             thread: only requests added
                                             with UCT_CB_FLAG_ASYNC run */
        ucs_list_link_t       resched;   /* qpx_ep_t: schedule again at the
                                            next progress */
    } pending;
    qpx_qp_pool_t             qp_pool;
    qpx_qp_creator_t          qp_create;
    khash_t(qpx_qp_map)       qp_map;
    /* the direct path (qpx_mlx5.h): enabled, its CQs and SRQ are mlx5
     * queues read and written without verbs calls */
    qpx_mlx5_iface_t          direct;
    struct ibv_qp_init_attr   qp_init_attr; /* caps: what was granted */
    int                       qp_caps_granted;
    /* How a QP, CQ or SRQ the device has no room or memory for is logged
     * (qpx_qp_create's exhausted_level for QPs), and caps it granted too
     * small for the transport: error, unless the transport's user degrades
     * and says so itself */
    ucs_log_level_t           exhausted_level;
    /* qpx_iface_hints_t's exhausted_what (qpx_iface_exhausted_set) */
    const char                **exhausted_what;
    /* Opened only to read its attributes (qpx_iface_hints_t) */
    int                       attr_only;
    struct {
        struct ibv_qp         *qp;       /* without an SRQ: the QP whose
                                            receive queue is refilled */
        unsigned              available; /* receive slots to refill */
        unsigned              batch;
        unsigned              queue_len; /* buffers kept posted */
        /* An SRQ this interface owns may hold up to queue_max buffers: the
         * device's SRQ limit event (a burst the progress falls behind)
         * doubles queue_len up to it (qpx_iface_rx_tend) */
        unsigned              queue_max;
        /* Progress has receive work: the SRQ limit event came (limit_hit,
         * set first: the device event handler runs on UCX's async thread),
         * or a buffer went back to rx_mp while starved (qpx_iface_rx_tend) */
        volatile int          low;
        volatile int          limit_hit;
        unsigned              grows;
        /* A post found rx_mp empty (every buffer held by AM handlers, or no
         * memory could be registered for more): the receive queue is short
         * until a buffer comes back, which sets low. am_flags follows it:
         * the flags AMs are handed over with (qpx_iface_rx_am_flags), read
         * as they are on every AM instead of testing starved */
        int                   starved;
        unsigned              am_flags;
        /* Buffers released after a receive, reposted as they are (no trip
         * through rx_mp) by the next qpx_iface_rx_post(): the chain of
         * their own WRs (recycled_tail: the link to set next), at most
         * a batch and one poll's completions long */
        struct ibv_recv_wr    *recycled;
        struct ibv_recv_wr    **recycled_tail;
        unsigned              num_recycled;
        /* The endpoint whose QP the messages being handed over came
         * from, and that QP's number: kept by a transport that tracks it
         * (qpx_rc, per run of one QP's messages) while src_want has a bit
         * set, QPX_IFACE_RX_SRC_TL for its own needs (qpx_rc's flow
         * control) or QPX_IFACE_RX_SRC_USER for a user above that asks
         * which endpoint a message came from (the hybrid, while a
         * promotion's first messages on RC wait for the last ones on the
         * cold path). NULL: not known */
        qpx_ep_t              *src;
        uint32_t              src_qp_num;
        unsigned              src_want;
    } rx;
    struct {
        int                   cq_available;
        int                   cq_size;   /* cq_available when all polled */
        /* tx_mp could not give a buffer (at its max_bufs, or no memory to
         * grow): set by qpx_iface_tx_desc_get, never cleared. Once set, an
         * empty free list means no buffer until one comes back
         * (qpx_iface_tx_no_desc); before, the pool grows on the next get */
        int                   desc_limit;
    } tx;
    /* Completions that event_arm polled (they arrived before the CQs were
     * armed, so no event announces them): the transport's progress handles
     * them first, and empties the counts before it does */
    struct {
        unsigned              rx_count;
        unsigned              tx_count;
        struct ibv_wc         rx[QPX_IFACE_BACKLOG];
        struct ibv_wc         tx[QPX_IFACE_BACKLOG];
    } backlog;
    /* Nonzero when progress may have rare work: set by whoever makes some
     * (base: a backlog, an endpoint to reschedule; a transport: its own),
     * so that a transport's progress tests one word instead of each list.
     * Only a hint that may stay set: the transport that reads it clears it
     * after it looked at everything (qpx_ud) */
    unsigned                  attention;
    /* Idle endpoints are probed every interval (qpx_iface_keepalive_start),
     * so that a peer that died while we only wait for it is still detected:
     * the timer sets due, the transport's progress runs a round when it
     * sees it (and clears it) */
    struct {
        ucs_time_t            interval;  /* 0: off */
        qpx_iface_timer_t     timer;
        volatile int          due;
    } keepalive;
    struct {
        size_t                seg_size;
        size_t                rx_hdr_offset;
        size_t                rx_hdr_len;   /* init_attr's */
        size_t                rx_priv_len;  /* init_attr's */
        size_t                rx_payload_offset;
        size_t                rx_headroom_offset;
        size_t                rx_headroom;
        size_t                tx_priv_len;
        unsigned              tx_queue_len;
        unsigned              tx_reserve;   /* init_attr's */
        const char            *tl_name;     /* init_attr's, for logs */
        unsigned              tx_moderation;
        size_t                max_inline;   /* granted by the first QP */
        unsigned              max_send_sge; /* granted by the first QP */
        int                   access_flags;
        int                   direct;       /* DIRECT: on, off, auto */
    } config;
};


/* Internal ops of a transport whose own ones are ep_invalidate,
 * ep_is_connected and the performance estimate: no VFS entries, no ep
 * query */
#define QPX_IFACE_INTERNAL_OPS_INV(_estimate_perf, _ep_invalidate, \
                                   _ep_is_connected) \
    QPX_UCX_IFACE_INTERNAL_OPS(_estimate_perf, \
                               (void*)ucs_empty_function, \
                               (void*)ucs_empty_function_return_unsupported, \
                               _ep_invalidate, _ep_is_connected)

UCS_CLASS_DECLARE(qpx_iface_t, uct_iface_ops_t*, uct_iface_internal_ops_t*,
                  uct_md_h, uct_worker_h, const uct_iface_params_t*,
                  const qpx_iface_config_t*, const qpx_iface_init_attr_t*);


/* Post up to count receive buffers to the SRQ (recycled ones first, then
 * fresh ones from rx_mp), as one chain; returns how many */
unsigned qpx_iface_rx_post(qpx_iface_t *iface, unsigned count);

/* The first fill of the receive queue (step 4 above): UCS_ERR_NO_MEMORY,
 * logged, if nothing could be posted. An interface that shares another's
 * SRQ posts nothing: the owner filled it, and each consumer refills what
 * it consumes. */
ucs_status_t qpx_iface_rx_fill(qpx_iface_t *iface);

/* The device said the SRQ of an interface fell below its limit (the
 * device event handler, on UCX's async thread, through the interface's
 * srq_handler): the next progress grows the queue */
void qpx_iface_rx_limit_reached(qpx_device_srq_handler_t *handler);

/* The progress (on the worker's thread) saw rx.low: after the SRQ limit
 * event, post more buffers (up to queue_max) and arm the limit again;
 * after a short post, post what the queue lacks */
void qpx_iface_rx_tend(qpx_iface_t *iface);

/* Whether self's QPs can receive into owner's buffers, as
 * qpx_iface_hints_t's rx_owner describes; if so self's receive offsets (landing
 * point, payload, headroom) and posted length become those it has in
 * them. Construction calls it; owner may be NULL. */
int qpx_iface_rx_share_layout(qpx_iface_t *self, const qpx_iface_t *owner);

/* Base-internal, between qpx_iface.c and qpx_iface_qp.c: a failed
 * creation of what (a CQ, an SRQ; errno set by it, read before anything
 * logs): its status, and in *level_p the level to log it at: self's
 * exhausted_level where the device had no room or memory for it (ENOMEM,
 * EAGAIN), which qpx_iface_exhausted_set() then reports, else error */
ucs_status_t qpx_iface_create_failed(const qpx_iface_t *self,
                                     const char *what,
                                     ucs_log_level_t *level_p);

/* Base-internal, between qpx_iface.c and qpx_iface_rx.c: the
 * receive queue's length, the empty chain of recycled buffers, a receive
 * buffer's WR (rx_mp's object init, after its lkey is set), and the
 * registered pools' growth (qpx_iface_mp_wrap, after UCX initialized mp:
 * rx_mp or tx_mp) */
void qpx_iface_rx_queue_set(qpx_iface_t *iface, unsigned len);
void qpx_iface_rx_desc_wr_init(qpx_iface_t *iface, qpx_desc_t *desc);
void qpx_iface_mp_wrap(qpx_iface_t *iface, ucs_mpool_t *mp);

/* Say what the device had no room or memory for ("QP", "CQ", "SRQ",
 * "memory registration") to iface's user, where it asked
 * (qpx_iface_hints_t's exhausted_what): for a transport's own objects;
 * base says it for QPs, CQs, SRQs and its buffer pools */
static inline void qpx_iface_exhausted_set(const qpx_iface_t *iface,
                                           const char *what)
{
    if (iface->exhausted_what != NULL) {
        *iface->exhausted_what = what;
    }
}

/* iface uses its receive buffer pool from UCX's async thread as well as
 * from the user's (qpx_ud's timer): where that pool is shared with another
 * interface, which knows nothing of that thread, every get and put of it
 * takes a lock from now on. Call before any concurrent use. */
void qpx_iface_rx_pool_lock(qpx_iface_t *iface);

/* Base-internal (qpx_iface_queues.c, for qpx_iface_t's init): the
 * completion channel, the send and receive CQs and the receive queue (an
 * SRQ unless use_srq is 0, owner's when owner is given) */
ucs_status_t qpx_iface_create_queues(qpx_iface_t *self,
                                     const qpx_iface_config_t *config,
                                     int use_srq, qpx_iface_t *owner);

#include "qpx_iface.inl"

/*
 * A RESET QP with the interface's caps, from the pool or new. The first QP
 * created fixes iface->config.max_inline and max_send_sge (granted caps).
 */
ucs_status_t qpx_iface_qp_get(qpx_iface_t *iface, struct ibv_qp **qp_p);

/* The same, for a QP the caller can do without (a DCI beyond the first): a
 * device with no room for it is logged at debug level */
ucs_status_t qpx_iface_qp_get_spare(qpx_iface_t *iface, struct ibv_qp **qp_p);

/* Give a QP back: RESET and pooled, or destroyed */
void qpx_iface_qp_put(qpx_iface_t *iface, struct ibv_qp *qp);

/* Create up to count QPs ahead, in RESET, into the pool (as far as it has
 * room); how many. A creation that fails stops it (logged at debug level:
 * a later qpx_iface_qp_get() tries again and reports) */
unsigned qpx_iface_qp_prefill(qpx_iface_t *iface, unsigned count);

/* qpn -> transport object (endpoint) map */
ucs_status_t qpx_iface_qp_map_add(qpx_iface_t *iface, uint32_t qp_num,
                                  void *obj);
void qpx_iface_qp_map_del(qpx_iface_t *iface, uint32_t qp_num);

static UCS_F_ALWAYS_INLINE void *
qpx_iface_qp_map_find(qpx_iface_t *iface, uint32_t qp_num)
{
    khiter_t it = kh_get(qpx_qp_map, &iface->qp_map, qp_num);

    return (it == kh_end(&iface->qp_map)) ? NULL :
           kh_value(&iface->qp_map, it);
}

/* Fill the attributes common to qpx transports (device, latency, bw) */
void qpx_iface_query(qpx_iface_t *iface, uct_iface_attr_t *iface_attr);


/* uct_iface_ops: device address (LID/GID) and reachability */
ucs_status_t qpx_iface_get_device_address(uct_iface_h tl_iface,
                                          uct_device_addr_t *addr);
int qpx_iface_is_reachable(const uct_iface_h tl_iface,
                           const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr);

/* query_devices for a tl: one resource per active port */
ucs_status_t qpx_iface_query_devices(uct_md_h md,
                                     uct_tl_device_resource_t **tl_devices_p,
                                     unsigned *num_tl_devices_p);

/* uct_iface_ops: an epoll fd over the completion channel of the send and
 * receive CQs and an eventfd the transport signals */
ucs_status_t qpx_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);

/* Before arming: consume and acknowledge the events the channel holds and
 * the signal. UCS_ERR_BUSY if there were any */
ucs_status_t qpx_iface_pre_arm(qpx_iface_t *iface);

/* Make the event fd readable now (there is work for progress that no
 * completion event will announce) */
void qpx_iface_event_signal(qpx_iface_t *iface);

/* Request an event for the next completion on cq (solicited_only: only for
 * completions of requests sent with IBV_SEND_SOLICITED) */
ucs_status_t qpx_iface_arm_cq(qpx_iface_t *iface, struct ibv_cq *cq,
                              int solicited_only);

/* uct_iface_ops.iface_event_arm of a transport that polls the interface's
 * two CQs and handles iface->backlog in its progress (see
 * qpx_iface_event.c) */
ucs_status_t qpx_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/*
 * The one timer service of every transport: cb(id, events, arg) runs every
 * interval seconds. In the thread modes on UCX's async thread WITHOUT the
 * context blocked (the callback takes only what is safe: a flag, an
 * eventfd, or the context through qpx_async_try_block), from a timerfd the
 * async thread watches, not a UCX timer: UCX 1.13's thread rounds the time
 * to its next timer down to whole milliseconds and then polls with a zero
 * timeout until it is due, spinning up to a millisecond per period (with a
 * 5 ms period, 11% of a core beside the user's, perf). In the poll and
 * signal modes (no thread) it is a UCX timer, run with the context
 * blocked. Stopping waits for a running callback.
 */
ucs_status_t qpx_iface_timer_start(qpx_iface_t *iface, double interval,
                                   ucs_async_event_cb_t cb, void *arg,
                                   qpx_iface_timer_t *timer);
void qpx_iface_timer_stop(qpx_iface_timer_t *timer);

/* The keepalive timer every interval seconds (0: none) */
ucs_status_t qpx_iface_keepalive_start(qpx_iface_t *iface, double interval);
void qpx_iface_keepalive_stop(qpx_iface_t *iface);

/* For base's own use (qpx_iface.c): the event fd's life, and consuming the
 * channel's pending events (returns how many, -1 on error) */
ucs_status_t qpx_iface_event_init(qpx_iface_t *self);
void qpx_iface_event_cleanup(qpx_iface_t *self);
int qpx_iface_ack_events(qpx_iface_t *iface);

/*
 * uct_iface_flush over the endpoints of the list eps (each linked at
 * link_offset), with ep_flush each transport's uct_ep_flush. One completion
 * scheme for every transport: comp is called once, when every endpoint
 * flush that was under way has completed, with the first error any of them
 * had. Requests still pending are not waited for (they are not issued
 * yet); without comp the call returns UCS_INPROGRESS while there are any,
 * and an endpoint that refuses (UCS_ERR_NO_RESOURCE) counts as in
 * progress. When an endpoint refuses with comp given, the call returns
 * that error and comp is never called (the endpoint flushes already under
 * way complete silently). With
 * UCT_FLUSH_FLAG_CANCEL every endpoint's flush cancels its operations and
 * the call returns UCS_OK.
 */
ucs_status_t qpx_iface_flush_eps(qpx_iface_t *iface, unsigned flags,
                                 uct_completion_t *comp, ucs_list_link_t *eps,
                                 size_t link_offset,
                                 uct_ep_flush_func_t ep_flush);

#endif
