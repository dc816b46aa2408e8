/*
 * The RC family: what the transports built on reliable-connected QPs
 * (qpx_rc, one QP per peer; qpx_dc, DC initiators to DC targets) share
 * above base. Dependencies point down: rc/ and dc/ include this, this
 * includes base/, and base/ knows nothing of it.
 *
 *  - configuration: the RC transport's QP settings (retries, RNR, path MTU,
 *    outstanding reads, atomics, events, keepalive), one table embedded in
 *    both transports' (UCX_QPX_RC_<NAME>, UCX_QPX_DC_<NAME>);
 *  - capabilities: what the operations take, from the caps the QPs were
 *    granted, and the uct_iface_attr_t they make;
 *  - connection attributes: the RTR/RTS settings both derive from it.
 */
#ifndef QPX_RDMA_H_
#define QPX_RDMA_H_

#include <uct/qpx/base/qpx_iface.h>
#include <uct/qpx/base/qpx_qp.h>
#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/base/qpx_iface_progress.h>


/* The header before an active message's payload */
typedef struct qpx_rdma_hdr {
    uint8_t am_id;
} UCS_S_PACKED qpx_rdma_hdr_t;


/* The header of an active message short: id and the 64-bit header */
typedef struct qpx_rdma_am_short_hdr {
    qpx_rdma_hdr_t rdma;
    uint64_t       am_hdr;
} UCS_S_PACKED qpx_rdma_am_short_hdr_t;


/*
 * The end of a transport's flush or ep_check, once it has found that tl_ep
 * has requests to wait for or must be probed: with nop, a signalled
 * zero-length RDMA write (the last request must be signalled for a flush
 * to complete, and the peer's HCA must acknowledge a probe; a dead peer
 * fails it after the transport retries); with comp, an operation that
 * completes comp when the last request of tx (the queue, when known
 * without the no-op) completes. UCS_INPROGRESS with comp, done_status
 * without it, or why nothing could be posted (UCS_ERR_NO_RESOURCE).
 */
typedef ucs_status_t qpx_rdma_ep_probe_t(uct_ep_h tl_ep, void *tx, int nop,
                                         uct_completion_t *comp,
                                         ucs_status_t done_status);


/*
 * Declares the uct_iface_ops_t functions of a transport of the family that
 * QPX_RDMA_EP_OPS_DEFINE (qpx_rdma_ops.inl) defines: _tl##_ep_put_short,
 * put_bcopy, put_zcopy, get_zcopy, get_bcopy, am_short, am_bcopy,
 * am_zcopy, atomic64_post, atomic64_fetch and atomic_cswap64
 */
#define QPX_RDMA_EP_OPS_DECLARE(_tl) \
    qpx_rdma_ep_probe_t _tl##_ep_probe; \
    ucs_status_t _tl##_ep_put_short(uct_ep_h tl_ep, const void *buffer, \
                                    unsigned length, uint64_t remote_addr, \
                                    uct_rkey_t rkey); \
    ssize_t _tl##_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, \
                               void *arg, uint64_t remote_addr, \
                               uct_rkey_t rkey); \
    ucs_status_t _tl##_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, \
                                    size_t iovcnt, uint64_t remote_addr, \
                                    uct_rkey_t rkey, uct_completion_t *comp); \
    ucs_status_t _tl##_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, \
                                    size_t iovcnt, uint64_t remote_addr, \
                                    uct_rkey_t rkey, uct_completion_t *comp); \
    ucs_status_t _tl##_ep_get_bcopy(uct_ep_h tl_ep, \
                                    uct_unpack_callback_t unpack_cb, \
                                    void *arg, size_t length, \
                                    uint64_t remote_addr, uct_rkey_t rkey, \
                                    uct_completion_t *comp); \
    ucs_status_t _tl##_ep_am_short(uct_ep_h tl_ep, uint8_t id, \
                                   uint64_t header, const void *payload, \
                                   unsigned length); \
    ssize_t _tl##_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, \
                              uct_pack_callback_t pack_cb, void *arg, \
                              unsigned flags); \
    ucs_status_t _tl##_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, \
                                   const void *header, \
                                   unsigned header_length, \
                                   const uct_iov_t *iov, size_t iovcnt, \
                                   unsigned flags, uct_completion_t *comp); \
    ucs_status_t _tl##_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode, \
                                        uint64_t value, uint64_t remote_addr, \
                                        uct_rkey_t rkey); \
    ucs_status_t _tl##_ep_atomic64_fetch(uct_ep_h tl_ep, \
                                         uct_atomic_op_t opcode, \
                                         uint64_t value, uint64_t *result, \
                                         uint64_t remote_addr, \
                                         uct_rkey_t rkey, \
                                         uct_completion_t *comp); \
    ucs_status_t _tl##_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare, \
                                         uint64_t swap, uint64_t remote_addr, \
                                         uct_rkey_t rkey, uint64_t *result, \
                                         uct_completion_t *comp)


/* The uct_iface_ops_t entries of QPX_RDMA_EP_OPS_DEFINE's operations of _tl
 * (qpx_rdma_iface_data_ops_set copies them) */
#define QPX_RDMA_IFACE_DATA_OPS(_tl) \
    .ep_put_short             = _tl##_ep_put_short, \
    .ep_put_bcopy             = _tl##_ep_put_bcopy, \
    .ep_put_zcopy             = _tl##_ep_put_zcopy, \
    .ep_get_bcopy             = _tl##_ep_get_bcopy, \
    .ep_get_zcopy             = _tl##_ep_get_zcopy, \
    .ep_am_short              = _tl##_ep_am_short, \
    .ep_am_bcopy              = _tl##_ep_am_bcopy, \
    .ep_am_zcopy              = _tl##_ep_am_zcopy, \
    .ep_atomic_cswap64        = _tl##_ep_atomic_cswap64, \
    .ep_atomic64_post         = _tl##_ep_atomic64_post, \
    .ep_atomic64_fetch        = _tl##_ep_atomic64_fetch

/*
 * The uct_iface_ops_t entries a transport _tl of the family fills alike:
 * the operations of QPX_RDMA_EP_OPS_DEFINE, its endpoint control
 * (QPX_EP_DECLARE), endpoint class, progress, address and close (QPX_IFACE_CLASS_DEFINE's _tl##_iface_t_delete), and
 * base's and the family's for the rest. The transport adds its connection
 * model's entries (ep_get_address, ep_connect_to_ep).
 */
#define QPX_RDMA_IFACE_OPS(_tl) \
    QPX_RDMA_IFACE_DATA_OPS(_tl), \
    .ep_am_short_iov          = uct_base_ep_am_short_iov, \
    .ep_atomic_cswap32        = qpx_ep_atomic_cswap32, \
    .ep_atomic32_post         = qpx_ep_atomic32_post, \
    .ep_atomic32_fetch        = qpx_ep_atomic32_fetch, \
    .ep_pending_add           = qpx_ep_pending_add, \
    .ep_pending_purge         = qpx_ep_pending_purge, \
    .ep_flush                 = _tl##_ep_flush, \
    .ep_fence                 = _tl##_ep_fence, \
    .ep_check                 = _tl##_ep_check, \
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(_tl##_ep_t), \
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(_tl##_ep_t), \
    .iface_flush              = qpx_rdma_iface_flush, \
    .iface_fence              = qpx_rdma_iface_fence, \
    .iface_progress_enable    = uct_base_iface_progress_enable, \
    .iface_progress_disable   = uct_base_iface_progress_disable, \
    .iface_progress           = _tl##_iface_progress, \
    .iface_event_fd_get       = qpx_iface_event_fd_get, \
    .iface_event_arm          = qpx_iface_event_arm, \
    .iface_close              = _tl##_iface_t_delete, \
    .iface_query              = qpx_rdma_iface_query, \
    .iface_get_device_address = qpx_iface_get_device_address, \
    .iface_get_address        = _tl##_iface_get_address, \
    .iface_is_reachable       = qpx_iface_is_reachable


/* At most this many buffers in an inline work request (am_short: the
 * header and the payload) */
#define QPX_RDMA_INLINE_SGE_MAX 2


/* The path a post takes, a constant of its caller: the verbs path, the
 * direct path (the WQE writer inlined), or either (a control post, whose
 * caller does not know: tested, the WQE writer out of line) */
enum {
    QPX_RDMA_PATH_VERBS  = 0,
    QPX_RDMA_PATH_DIRECT = 1,
    QPX_RDMA_PATH_ANY    = 2
};


/* One work request as the family's operations describe it; the transport
 * turns it into its own (an ibv_send_wr, or ibv_wr_* calls) */
typedef struct qpx_rdma_wr {
    enum ibv_wr_opcode opcode;      /* RDMA write/read, send, 64-bit atomic */
    unsigned           send_flags;  /* IBV_SEND_INLINE or 0 */
    int                signal;      /* the caller needs its completion */
    struct ibv_sge     *sge;
    int                num_sge;
    uint64_t           remote_addr; /* RDMA and atomics */
    uint32_t           rkey;
    uint64_t           compare_add; /* atomics */
    uint64_t           swap;
} qpx_rdma_wr_t;


static UCS_F_ALWAYS_INLINE void
qpx_rdma_wr_init(qpx_rdma_wr_t *wr, enum ibv_wr_opcode opcode,
                 unsigned send_flags, int signal, struct ibv_sge *sge,
                 int num_sge, uint64_t remote_addr, uct_rkey_t rkey)
{
    wr->opcode      = opcode;
    wr->send_flags  = send_flags;
    wr->signal      = signal;
    wr->sge         = sge;
    wr->num_sge     = num_sge;
    wr->remote_addr = remote_addr;
    wr->rkey        = (uint32_t)rkey;
    wr->compare_add = 0;
    wr->swap        = 0;
}


/*
 * rwr as a verbs WR (its wr_id and send_flags are the transport's, set
 * after). by_opcode: the WR goes to a reader inlined after (the WQE
 * writer, DC's ibv_wr_* calls) that reads the parts of the WR's unions its
 * opcode names; where the opcode is not a constant the compiler cannot tell
 * they were written: these are (atomics' are written again below, the rest
 * is dead for other opcodes).
 */
static UCS_F_ALWAYS_INLINE void
qpx_rdma_wr_to_send_wr(const qpx_rdma_wr_t *rwr, struct ibv_send_wr *wr,
                       int by_opcode)
{
    if (by_opcode) {
        wr->imm_data              = 0;
        wr->wr.atomic.compare_add = rwr->compare_add;
        wr->wr.atomic.swap        = rwr->swap;
        wr->wr.atomic.rkey        = rwr->rkey;
    }
    wr->next    = NULL;
    wr->opcode  = rwr->opcode;
    wr->sg_list = rwr->sge;
    wr->num_sge = rwr->num_sge;
    if ((rwr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
        (rwr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)) {
        wr->wr.atomic.remote_addr = rwr->remote_addr;
        wr->wr.atomic.rkey        = rwr->rkey;
        wr->wr.atomic.compare_add = rwr->compare_add;
        wr->wr.atomic.swap        = rwr->swap;
    } else {
        wr->wr.rdma.remote_addr   = rwr->remote_addr;
        wr->wr.rdma.rkey          = rwr->rkey;
    }
}


/* The RC family's settings (qpx_rdma_iface_config_table) */
typedef struct qpx_rdma_iface_config {
    double   timeout;            /* per try */
    unsigned retry_count;
    unsigned rnr_retry_count;
    double   rnr_timeout;
    int      path_mtu;           /* enum ibv_mtu, 0: the port's active */
    unsigned max_rd_atomic;
    int      atomics;            /* allow device atomics */
    int      events;             /* offer event notification */
    double   keepalive_interval; /* 0: no keepalive */
} qpx_rdma_iface_config_t;

extern ucs_config_field_t qpx_rdma_iface_config_table[];


/* What an RC-family transport's operations take, from the caps its QPs
 * were granted */
typedef struct qpx_rdma_caps {
    size_t   max_put_short;
    size_t   max_am_short;
    size_t   max_bcopy;     /* put/get */
    size_t   max_zcopy;
    size_t   max_iov;
    size_t   am_hdr_len;    /* transport header before an AM payload */
    int      atomics;       /* 64-bit add, fetch-add, compare-swap */
    int      events;        /* event fd and arm */
} qpx_rdma_caps_t;



/*
 * A transport of the family, as the family's interface class takes it: what
 * it asks of the interface core beyond what the family fixes (qpx_rdma.c:
 * an SRQ, the family's header, base's send descriptor, 8 send SGEs), its
 * operations, and its connection model and costs for uct_iface_query
 */
struct qpx_rdma_iface;

typedef struct qpx_rdma_tl {
    const char               *name;
    enum ibv_qp_type         qp_type;
    unsigned                 tx_reserve;   /* qpx_iface_init_attr_t's */
    int                      access_flags; /* RC QP access flags, or 0 */
    /* qpx_iface_init_attr_t's: NULL for ibv_create_qp */
    qpx_qp_creator_t         qp_create;
    uct_iface_ops_t          *ops;
    uct_iface_internal_ops_t *internal_ops;
    /* Where an endpoint's link in qpx_rdma_iface_t.eps is */
    size_t                   ep_list_offset;
    /* It posts through qpx_mlx5_post when its interface is direct
     * (UCX_QPX_<TL>_DIRECT), with these operations (QPX_RDMA_IFACE_DATA_OPS
     * of its direct post operations, and iface_progress) instead of ops':
     * neither path tests which it is on */
    int                      direct;
    const uct_iface_ops_t    *direct_ops;
    const qpx_iface_ops_t    *base_ops;
    /* uct_iface_query: UCT_IFACE_FLAG_CONNECT_TO_EP or _IFACE, the
     * addresses' lengths, and what an operation costs beyond what base
     * reports (overhead, and added to latency.c and latency.m) */
    uint64_t                 connect_flag;
    size_t                   iface_addr_len;
    size_t                   ep_addr_len;
    double                   overhead;
    double                   latency_c;
    double                   latency_m;
    /* uct_iface_estimate_perf's max_inflight_eps: how many endpoints can
     * have sends in flight at once (UCP gives its keepalive lane to the
     * transport with the most) */
    size_t                   (*max_inflight_eps)(const struct qpx_rdma_iface *iface);
    /* Its receive and send completion handlers, called by async progress
     * (qpx_rdma_iface_async_start; its own progress inlines them): NULL
     * for a transport that never turns it on */
    qpx_iface_wc_cb_t        rx_wc;
    qpx_iface_wc_cb_t        tx_wc;
} qpx_rdma_tl_t;


/*
 * An interface of the family: base's, and what its sends share whatever
 * queue they go on (the endpoint's QP or a DCI)
 */
typedef struct qpx_rdma_iface {
    qpx_iface_t           super;
    const qpx_rdma_tl_t   *tl;     /* the transport */
    int                   direct_ok; /* it may take the direct path */
    /* Its progress for the path it took (qpx_rdma_iface_start): the
     * transport's ops->iface_progress or direct_progress */
    unsigned              (*progress)(uct_iface_h tl_iface);
    /* And its data operations (tl->ops or tl->direct_ops), which the
     * async wrappers call */
    const uct_iface_ops_t *path_ops;
    ucs_list_link_t       eps;     /* every endpoint (tl->ep_list_offset) */
    /* Requests posted and not yet known complete, over all queues: while
     * any exist the send CQ is polled, so that an unsignalled request that
     * fails is seen, and a device whose requester advances in the poster's
     * verbs calls (softverbs) retries what waits for the peer */
    uint64_t              tx_unacked;
    /* Interface fence (uct_iface_fence): bumped by each fence; a request
     * whose endpoint posted last before a newer beat sets IBV_SEND_FENCE */
    unsigned              fence_beat;
    qpx_qp_connect_attr_t conn;    /* template for RTR/RTS */
    qpx_rdma_caps_t       caps;    /* set by qpx_rdma_iface_caps_init */
    /* Async progress (qpx_rdma_async.c): a timer on the worker's async
     * context receives for the user while the user does not progress */
    struct {
        ucs_async_context_t *ctx;       /* NULL: off */
        qpx_iface_timer_t   timer;
        uint64_t            progress_count; /* the user's progress calls */
        uint64_t            progress_seen;  /* the timer's last look */
        int                 in_async;   /* the timer's round runs */
        ucs_list_link_t     ops;        /* completed there, to finish */
        struct {
            uint64_t        rounds;     /* the timer polled */
            uint64_t        busy;       /* the user held the context */
            uint64_t        am_async;   /* handlers called from it */
            uint64_t        am_deferred;/* messages left to the user */
            uint64_t        ops;        /* completions left to the user */
        } stats;
    } async;
} qpx_rdma_iface_t;

UCS_CLASS_DECLARE(qpx_rdma_iface_t, const qpx_rdma_tl_t*, uct_md_h,
                  uct_worker_h, const uct_iface_params_t*,
                  const qpx_iface_config_t*, const qpx_iface_hints_t*);


/* The send CQ is idle: nothing signalled is outstanding and every request
 * posted is known complete */
static UCS_F_ALWAYS_INLINE int
qpx_rdma_iface_tx_is_idle(const qpx_rdma_iface_t *iface)
{
    return (iface->super.tx.cq_available == iface->super.tx.cq_size) &&
           (iface->tx_unacked == 0);
}


/* n send completions were polled: their CQ entries are free again. Error
 * completions of unsignalled requests (and entries credited back by a
 * destroyed endpoint) must not push the count past the CQ. */
static UCS_F_ALWAYS_INLINE void
qpx_rdma_iface_tx_cq_credit(qpx_rdma_iface_t *iface, int n)
{
    iface->super.tx.cq_available = ucs_min(iface->super.tx.cq_available + n,
                                           iface->super.tx.cq_size);
}


/* uct_iface_query: base's attributes, the flags and limits of put, get,
 * am (short, bcopy, zcopy), pending, the error handling and, as caps say,
 * atomics and events, and the transport's connection model and costs */
/* UCX's estimate, with the transport's max_inflight_eps */
ucs_status_t qpx_rdma_iface_estimate_perf(uct_iface_h tl_iface,
                                          uct_perf_attr_t *perf_attr);

/* The internal ops of a family transport */
#define QPX_RDMA_IFACE_INTERNAL_OPS(_ep_invalidate, _ep_is_connected) \
    QPX_IFACE_INTERNAL_OPS_INV(qpx_rdma_iface_estimate_perf, _ep_invalidate, \
                               _ep_is_connected)

ucs_status_t qpx_rdma_iface_query(uct_iface_h tl_iface,
                                  uct_iface_attr_t *iface_attr);

/* uct_iface_fence: every endpoint's next request waits for its earlier
 * reads and atomics */
ucs_status_t qpx_rdma_iface_fence(uct_iface_h tl_iface, unsigned flags);

/*
 * iface->caps, from the caps the interface's first QP was granted
 * (qpx_iface_qp_create: max_inline, max_send_sge): atomics as configured
 * and as the device has them. UCS_ERR_UNSUPPORTED, logged at the
 * interface's exhausted level, when they cannot carry an active message
 * short (its header inline) or a header SGE before an iov.
 */
ucs_status_t qpx_rdma_iface_caps_init(qpx_rdma_iface_t *iface,
                                      const qpx_rdma_iface_config_t *config);

/*
 * The RTR/RTS attributes of the configuration: path MTU (never above the
 * port's), outstanding reads and atomics within the device's, the RNR timer
 * and retries, the timeout of a try and retry_count transport retries. The
 * transport sets the address vector and the PSNs.
 */
void qpx_rdma_iface_conn_init(qpx_rdma_iface_t *iface,
                              const qpx_rdma_iface_config_t *config);

/* The last step of a transport's init: the first receives posted, and the
 * keepalive rounds of the configuration started */
ucs_status_t qpx_rdma_iface_start(qpx_rdma_iface_t *iface,
                                  const qpx_rdma_iface_config_t *config);

/* The first step of a transport's cleanup: no keepalive round from here
 * on; every endpoint should be gone (warned) */
void qpx_rdma_iface_stop(qpx_rdma_iface_t *iface);

/*
 * Async progress of an interface of the family, as uct_iface_attr_t's
 * UCT_IFACE_FLAG_CB_ASYNC promises: a timer on the worker's async thread
 * (thread modes only) looks every idle seconds, and polls the interface's
 * CQs when the user has not progressed it since the last look. Active
 * messages whose handler was set with UCT_CB_FLAG_ASYNC run there; the
 * others, and send
 * completions that would call the user, wait for the user's progress, in
 * order; pending requests added with UCT_CB_FLAG_ASYNC are dispatched.
 * Every operation of the interface then blocks the async context (its ops
 * are replaced by wrappers that do), as UCX's ud transports do. The
 * transport gives its completion handlers (qpx_rdma_tl_t's rx_wc, tx_wc)
 * and finishes its operations through qpx_rdma_ops_complete. UCS_OK, also
 * where the async mode has no thread (nothing replaced then), or why the
 * timer did not start.
 */
ucs_status_t qpx_rdma_iface_async_start(qpx_rdma_iface_t *iface,
                                        double idle);

/* Async progress off (the family's interface init) */
void qpx_rdma_iface_async_init(qpx_rdma_iface_t *iface);

/* No round from here on (the family's qpx_rdma_iface_stop): what rounds
 * completed is finished. Not with the context held: waits for a round. */
void qpx_rdma_iface_async_stop(qpx_rdma_iface_t *iface);

/* Whether the interface calls handlers from the async thread */
static UCS_F_ALWAYS_INLINE int
qpx_rdma_iface_async_is_on(const qpx_rdma_iface_t *iface)
{
    return iface->async.ctx != NULL;
}

/* The operations the timer completed for endpoint ep_id, finished now
 * (its destroy: nothing of it runs after) */
void qpx_rdma_iface_async_ops_run_ep(qpx_rdma_iface_t *iface,
                                     uint32_t ep_id);

/* Finish the operations of ops up to sn with status; from the timer's
 * round they wait for the user's progress (iface->async.ops) */
static UCS_F_ALWAYS_INLINE void
qpx_rdma_ops_complete(qpx_rdma_iface_t *iface, ucs_list_link_t *ops,
                      uint64_t sn, ucs_status_t status)
{
    qpx_op_t *op;

    if (ucs_likely(!iface->async.in_async)) {
        qpx_ops_complete(ops, sn, status);
        return;
    }

    while (!ucs_list_is_empty(ops)) {
        op = ucs_list_head(ops, qpx_op_t, list);
        if (op->sn > sn) {
            break;
        }
        ucs_list_del(&op->list);
        op->status = status;
        ucs_list_add_tail(&iface->async.ops, &op->list);
        ++iface->async.stats.ops;
    }
}

/* uct_iface_flush: every endpoint's (qpx_iface_flush_eps); with
 * UCT_FLUSH_FLAG_CANCEL each endpoint's operations complete with
 * UCS_ERR_CANCELED before its flush returns */
ucs_status_t qpx_rdma_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp);

#endif
