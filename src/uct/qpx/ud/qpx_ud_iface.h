/*
 * qpx_ud: reliable datagram transport, one UD QP per interface, reliability
 * in software (qpx_ud_rel.h). Interface, endpoint and wire formats.
 */
#ifndef QPX_UD_IFACE_H_
#define QPX_UD_IFACE_H_

#include "qpx_ud_rel.h"

#include <uct/qpx/base/qpx_async.h>
#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/base/qpx_ep_table.h>
#include <ucs/datastruct/khash.h>
#include <infiniband/verbs.h>


#define QPX_UD_TL_NAME       "qpx_ud"
#define QPX_UD_QKEY          QPX_QP_UD_QKEY  /* one Q_Key for every qpx UD QP */
#define QPX_UD_GRH_LEN       40
#define QPX_UD_EP_ID_NULL    QPX_EP_ID_NULL     /* CONN: no receiver ep yet */
/* am_zcopy's iovs. UCP 1.13 sends a fragmented AM with a user header
 * only over more than 2 (it asserted `max_iov > 1` over 2, in
 * ucp_am_send_nbx); ud_verbs offers 5 */
#define QPX_UD_MAX_IOV       4
#define QPX_UD_RX_BATCH      16                 /* completions polled at once */
#define QPX_UD_TX_MODERATION_MAX 64
#define QPX_UD_MIN_SEG_SIZE  256                /* GRH + header + payload */
/* Software reliability on every packet (sequence, ACK, resend window): what
 * it adds to the port's latency, and its cost per operation, seconds, as
 * UCP weighs them (uct_iface_attr_t latency.c and overhead) */
#define QPX_UD_LATENCY_ADD   200e-9
#define QPX_UD_OVERHEAD      100e-9


/* Packet types */
enum {
    QPX_UD_PKT_AM      = 1,  /* reliable: active message */
    QPX_UD_PKT_CONN    = 2,  /* reliable: first packet of a connection */
    QPX_UD_PKT_NOP     = 3,  /* reliable: keepalive probe, not delivered */
    QPX_UD_PKT_ACK     = 4,  /* unreliable: acknowledgement only */
    QPX_UD_PKT_ACK_REQ = 5,  /* unreliable: asks for an immediate ack */
    QPX_UD_PKT_DISC    = 6   /* unreliable: the sender's ep is destroyed */
};

/* Packet flags */
enum {
    QPX_UD_PKT_FLAG_ACK     = UCS_BIT(0), /* ack_psn is valid */
    QPX_UD_PKT_FLAG_ACK_REQ = UCS_BIT(1), /* receiver: ack now */
    QPX_UD_PKT_FLAG_NAK     = UCS_BIT(2), /* gap after ack_psn: resend */
    QPX_UD_PKT_FLAG_OOO     = UCS_BIT(3)  /* with NAK: packets after the
                                             gap are kept, resend one */
};


/* Header of every packet, after the GRH */
typedef struct qpx_ud_hdr {
    uint32_t dest_id;  /* receiver's endpoint id, or NULL for a CONN request */
    uint32_t src_id;   /* sender's endpoint id */
    uint16_t psn;      /* reliable types only */
    uint16_t ack_psn;  /* with QPX_UD_PKT_FLAG_ACK */
    uint8_t  type;
    uint8_t  flags;
    uint8_t  am_id;
    uint8_t  reserved;
} UCS_S_PACKED qpx_ud_hdr_t;


typedef struct qpx_ud_iface_addr {
    uint8_t qpn[3];
} UCS_S_PACKED qpx_ud_iface_addr_t;

static inline uint32_t qpx_ud_iface_addr_qpn(const qpx_ud_iface_addr_t *addr)
{
    return addr->qpn[0] | ((uint32_t)addr->qpn[1] << 8) |
           ((uint32_t)addr->qpn[2] << 16);
}


typedef struct qpx_ud_ep_addr {
    qpx_ud_iface_addr_t iface_addr;
    uint32_t            ep_id;
} UCS_S_PACKED qpx_ud_ep_addr_t;


/* Payload of a CONN packet: who is connecting */
typedef struct qpx_ud_conn_payload {
    uint32_t            conn_sn;
    qpx_ud_iface_addr_t iface_addr;
    qpx_device_addr_t   dev_addr;
} UCS_S_PACKED qpx_ud_conn_payload_t;


/* A remote interface: one address handle shared by all eps to it */
typedef struct qpx_ud_peer_key {
    uint32_t          qpn;
    qpx_device_addr_t dev_addr; /* zero-padded beyond its packed size */
} UCS_S_PACKED qpx_ud_peer_key_t;

/* The key of the interface at iface_addr on the port of dev_addr */
static inline void qpx_ud_peer_key_init(qpx_ud_peer_key_t *key,
                                        const qpx_device_addr_t *dev_addr,
                                        const qpx_ud_iface_addr_t *iface_addr)
{
    memset(key, 0, sizeof(*key));
    key->qpn = qpx_ud_iface_addr_qpn(iface_addr);
    memcpy(&key->dev_addr, dev_addr,
           (dev_addr->flags & QPX_DEVICE_ADDR_FLAG_GID) ?
           sizeof(qpx_device_addr_t) : ucs_offsetof(qpx_device_addr_t, gid));
}

typedef struct qpx_ud_peer {
    qpx_ud_peer_key_t key;
    struct ibv_ah     *ah;
    const struct mlx5_wqe_av *av;  /* ah's address vector (direct path) */
    uint32_t          next_conn_sn;
    unsigned          half_open;  /* its eps with QPX_UD_EP_FLAG_HALF_OPEN */
    ucs_list_link_t   eps;
} qpx_ud_peer_t;

khint32_t qpx_ud_peer_key_hash(qpx_ud_peer_key_t key);
int qpx_ud_peer_key_equal(qpx_ud_peer_key_t a, qpx_ud_peer_key_t b);

KHASH_INIT(qpx_ud_peers, qpx_ud_peer_key_t, qpx_ud_peer_t*, 1,
           qpx_ud_peer_key_hash, qpx_ud_peer_key_equal)


typedef struct qpx_ud_iface_config {
    qpx_iface_config_t super;  /* SEG_SIZE, TX_/RX_ queues and buffers */
    unsigned           window;
    double             timeout;
    double             rto;
    double             rto_max;
    double             backoff;
    double             timer_tick;
    unsigned           ack_thresh;
    unsigned           rx_reorder;
    int                async_progress;
    int                async_fence;
    double             async_idle;
    int                srq;
    double             keepalive_interval;
    unsigned           max_half_open;
    int                print_stats;
    int                events;
} qpx_ud_iface_config_t;


/* Endpoint flags */
enum {
    QPX_UD_EP_FLAG_USER       = UCS_BIT(0), /* created by uct_ep_create */
    QPX_UD_EP_FLAG_CONN_SENT  = UCS_BIT(1), /* our CONN is in the window */
    QPX_UD_EP_FLAG_CONNECTED  = UCS_BIT(2), /* dest_id known */
    QPX_UD_EP_FLAG_FAILED     = UCS_BIT(3),
    QPX_UD_EP_FLAG_ACK_NOW    = UCS_BIT(4), /* explicit ack at end of progress */
    QPX_UD_EP_FLAG_NAK        = UCS_BIT(5), /* ... with the NAK flag */
    QPX_UD_EP_FLAG_ACK_REQ    = UCS_BIT(6), /* send an ACK_REQ packet */
    QPX_UD_EP_FLAG_ON_ACTIVE  = UCS_BIT(7), /* in active_eps or failed_eps */
    QPX_UD_EP_FLAG_ON_CTL     = UCS_BIT(8), /* in iface->ctl_eps */
    QPX_UD_EP_FLAG_CLOSED     = UCS_BIT(9), /* destroyed by the user, kept
                                               in iface->linger_eps to
                                               acknowledge the peer */
    QPX_UD_EP_FLAG_PEER_GONE  = UCS_BIT(10), /* DISC: the peer's ep is gone */
    QPX_UD_EP_FLAG_HALF_OPEN  = UCS_BIT(11), /* made by a peer's CONN, which
                                                has not answered ours yet */
    QPX_UD_EP_FLAG_CANCELED   = UCS_BIT(12), /* flushed with CANCEL: sends
                                                refused (uct_ep_flush(3)) */
    QPX_UD_EP_FLAG_CONN_OWED  = UCS_BIT(13), /* our CONN found no send
                                                buffer: the control progress
                                                sends it, sends wait */
    QPX_UD_EP_FLAG_RX_SLOW    = UCS_BIT(14), /* a packet needs the full
                                                receive path: rx not started,
                                                packets kept ahead of a gap,
                                                or a probe out
                                                (qpx_ud_ep_rx_slow_update) */
    QPX_UD_EP_FLAG_RX_STARTED = UCS_BIT(15), /* rx.initialized: our packets
                                                carry an ack */
    QPX_UD_EP_FLAG_ACK_AGING  = UCS_BIT(16), /* a tick found packets
                                                unacked up to ack_mark */
    QPX_UD_EP_FLAG_INVALID    = UCS_BIT(17)  /* failed by uct_ep_invalidate,
                                                not by its peer */
};


/* Half-open endpoints one remote interface may hold (a peer needs one per
 * connection it is making; more is a flood) */
#define QPX_UD_PEER_MAX_HALF_OPEN 32


typedef struct qpx_ud_ep {
    qpx_ep_t            super;       /* interface, pending queue */
    /* In the order of the header's dest_id and src_id: one copy */
    uint32_t            dest_id;
    uint32_t            id;
    uint32_t            conn_sn;
    uint32_t            flags;
    qpx_ud_peer_t       *peer;
    qpx_ud_rel_tx_t     tx;
    qpx_ud_rel_rx_t     rx;
    ucs_list_link_t     flushes;     /* qpx_ud_flush_req_t, psn order */
    ucs_list_link_t     peer_list;   /* in peer->eps */
    ucs_list_link_t     active_list; /* in iface->active_eps */
    ucs_list_link_t     ctl_list;    /* in iface->ctl_eps */
    ucs_list_link_t     linger_list; /* in iface->linger_eps (CLOSED) */
    uint64_t            close_time;  /* CLOSED: when the user destroyed it */
    qpx_ud_psn_t        ack_mark;    /* rx.acked_psn at the tick that
                                        found packets unacked
                                        (QPX_UD_EP_FLAG_ACK_AGING) */
    uint64_t            ack_req_time; /* last ACK_REQ sent, 0: answered */
    qpx_ud_psn_t        keepalive_psn; /* tx.next_psn at the last round */
} qpx_ud_ep_t;


/* Send descriptor (an element of the interface's tx_mp): header and inline
 * payload follow it */
typedef struct qpx_ud_send_desc {
    qpx_desc_t        super;      /* lkey */
    qpx_ud_rel_desc_t rel;
    qpx_ud_ep_t       *ep;
    uct_completion_t  *comp;
    uint16_t          length;     /* header + copied payload */
    uint8_t           posted;     /* sends not yet completed by the device */
    uint8_t           released;   /* acked or purged: free when posted == 0 */
    uint8_t           iovcnt;     /* zcopy: user buffers after the header */
    uint8_t           sq_slots;   /* send slots its completion frees */
    struct ibv_sge    iov[QPX_UD_MAX_IOV];
} qpx_ud_send_desc_t;

#define qpx_ud_send_desc_hdr(_desc) ((qpx_ud_hdr_t*)((_desc) + 1))


/* Receive descriptor (an element of the interface's rx_mp; layout in
 * qpx_iface.h): GRH, header and payload follow at config.rx_hdr_offset */
typedef struct qpx_ud_recv_desc {
    qpx_rx_desc_t           super;  /* lkey, WR; flags: packet length when
                                       kept ahead of a gap or deferred */
    struct qpx_ud_recv_desc *next;  /* in iface->async.rx_head until
                                       delivered */
} qpx_ud_recv_desc_t;


/* DISC of a destroyed ep, sent again on the next ticks (it is not
 * acknowledged: repeats make a lost one unlikely) */
#define QPX_UD_DISC_REPEAT   3

typedef struct qpx_ud_disc {
    ucs_list_link_t list;
    qpx_ud_peer_t   *peer;
    uint32_t        dest_id;
    uint32_t        src_id;
    unsigned        left;
} qpx_ud_disc_t;


typedef struct qpx_ud_flush_req {
    ucs_list_link_t  list;
    qpx_ud_psn_t     psn;  /* complete when this PSN is acked */
    uct_completion_t *comp;
} qpx_ud_flush_req_t;


typedef struct qpx_ud_iface_stats {
    uint64_t rx_short;      /* shorter than GRH + header */
    uint64_t rx_bad_type;
    uint64_t rx_unknown_ep;
    uint64_t rx_stale;      /* wrong source id or PSN out of any window */
    uint64_t rx_dup;
    uint64_t rx_ahead;
    uint64_t rx_bad_status;
    uint64_t rx_async_full;    /* dropped: async queue at rx.queue_len */
    uint64_t tx_resent;
    uint64_t tx_timeouts;
    uint64_t tx_probe_resends; /* tail losses found by a probe */
    uint64_t tx_ack_reqs;      /* ACK_REQ packets sent */
    uint64_t tx_acks;          /* explicit ACK packets sent */
    uint64_t tx_conn_resends;  /* resent at once: the peer's CONN acked
                                  nothing of ours */
    uint64_t eps_failed;
    uint64_t eps_reclaimed;    /* internal eps freed on the peer's DISC */
    uint64_t rx_spoofed;       /* source QPN/LID/GID not the one claimed */
    uint64_t rx_conn_refused;  /* CONN beyond the half-open limits */
    uint64_t attention_missed; /* rare work the tick found with
                                  super.attention clear (a defect) */
} qpx_ud_iface_stats_t;


typedef struct qpx_ud_iface {
    qpx_iface_t           super;       /* CQs, receive queue and buffers,
                                          send buffers, pending arbiter */
    struct ibv_qp         *qp;
    qpx_mlx5_txwq_t       txwq;        /* qp's send queue (direct path) */
    qpx_ud_rel_config_t   rel_config;
    struct {
        unsigned          available;   /* free SQ slots */
        unsigned          moderation;  /* one inline send in N signaled */
        unsigned          unsignaled;  /* posted since the last signaled */
        unsigned          signaled;    /* signaled sends not yet polled */
        unsigned          ack_thresh;  /* in flight: ask for an ack */
        size_t            max_payload; /* seg_size - GRH - header */
        size_t            max_short;
        /* The send WRs, their constant fields set at open
         * (qpx_ud_iface_tx_wrs_init): a post fills in the rest
         * (qpx_ud_iface_post_wr). wr_inl is the unsignaled inline send of
         * one SGE, most packets: only its SGE and destination change */
        struct ibv_send_wr wr;
        struct ibv_sge    sge[1 + QPX_UD_MAX_IOV];
        struct ibv_send_wr wr_inl;
        struct ibv_sge    sge_inl;
        /* Where the QP takes no header inline (only then initialized):
         * registered buffers for the header-only packets, apart from
         * tx_mp, which packets waiting for acks may hold whole
         * (qpx_ud_iface_ctl_hdr) */
        ucs_mpool_t       ctl_mp;
        unsigned          sge_iov;     /* am_zcopy iovs sent from the user's
                                          buffers: the SGEs the QP granted
                                          beyond the header's, at most
                                          QPX_UD_MAX_IOV; more are copied */
    } tx;
    struct {
        unsigned          ack_thresh;  /* delivered: send explicit ack */
        unsigned          ooo_capacity; /* per-ep reorder buffer, or 0 */
    } rx;
    qpx_ep_table_t        eps;         /* ids in packets: dest_id */
    khash_t(qpx_ud_peers) peers;
    ucs_list_link_t       active_eps;   /* window non-empty or ack owed */
    ucs_list_link_t       ctl_eps;      /* control packets to send */
    ucs_list_link_t       failed_eps;   /* to report to the error handler */
    ucs_list_link_t       linger_eps;   /* CLOSED eps, oldest first */
    ucs_list_link_t       discs;        /* qpx_ud_disc_t to repeat */
    struct {
        uint64_t          interval;     /* ns, 0: off */
        uint64_t          next;         /* time of the next round */
    } keepalive;
    uint64_t              next_tick;
    uint64_t              tick;
    uint64_t              now;         /* qpx_ud_time_now() at the start
                                          of this progress call */
    qpx_ud_iface_stats_t  stats;
    int                   print_stats;  /* UCX_QPX_UD_PRINT_STATS */
    struct {
        unsigned          half_open;    /* eps with QPX_UD_EP_FLAG_HALF_OPEN */
        unsigned          max_half_open;
    } conn;
    int                   events;       /* event notification offered */
    struct {
        ucs_async_context_t *ctx;      /* the worker's */
        int                 on;        /* async progress runs: the
                                          context is a thread mode's */
        qpx_iface_timer_t   timer;
        void                (*close)(uct_iface_h); /* without the block */
        int                 in_async;  /* progress run by the async timer */
        uint64_t            idle;      /* user progress older: async runs */
        uint64_t            last_progress; /* the user's last
                                              progress call */
        int                 deferred;  /* the timer queued its work to the
                                          user's progress (set by the
                                          async thread, cleared by the
                                          user's one-shot callback) */
        uint64_t            runs;      /* async progress calls that worked */
        uint64_t            busy;      /* timer runs that found a user's
                                          call inside (then deferred) */
        qpx_async_fence_t   fence;     /* the hot calls against the timer */
        qpx_ud_recv_desc_t  *rx_head;  /* AMs received in async progress, */
        qpx_ud_recv_desc_t  **rx_tail; /* delivered by the next progress */
        unsigned            rx_count;  /* in rx_head: at most rx.queue_len */
        struct {
            uct_completion_t *comp;
            ucs_status_t     status;
            void             *ep;      /* whose operation: its destroy
                                          runs them (qpx_ud_ep_t) */
        }                   *comps;    /* completions deferred likewise */
        unsigned            comp_count;
        unsigned            comp_head; /* the next to run (dispatch) */
        unsigned            comp_capacity;
    } async;
} qpx_ud_iface_t;


UCS_CLASS_DECLARE(qpx_ud_iface_t, uct_md_h, uct_worker_h,
                  const uct_iface_params_t*, const uct_iface_config_t*,
                  const qpx_iface_hints_t*);

extern uct_tl_t qpx_ud_tl;
extern ucs_config_field_t qpx_ud_iface_config_table[];


/* qpx_ud_ep.c */
ucs_status_t qpx_ud_ep_alloc(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                             uint32_t conn_sn, uint32_t flags,
                             qpx_ud_ep_t **ep_p);
void qpx_ud_ep_free(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
ucs_status_t qpx_ud_ep_send_conn(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_set_connected(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                             uint32_t dest_id);
/* The peer answered our CONN: ep is no longer half-open */
void qpx_ud_ep_half_open_clear(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
/* Complete the flushes the acknowledged PSNs cover (all, on an error) */
void qpx_ud_ep_flushes_complete(qpx_ud_ep_t *ep, ucs_status_t status);
ucs_status_t qpx_ud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void qpx_ud_ep_destroy(uct_ep_h tl_ep);
ucs_status_t qpx_ud_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr);
ucs_status_t qpx_ud_ep_connect_to_ep(uct_ep_h tl_ep,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_ep_addr_t *ep_addr);
ucs_status_t qpx_ud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp);
ucs_status_t qpx_ud_ep_invalidate(uct_ep_h tl_ep, qpx_ep_invalidate_arg_t arg);
int qpx_ud_ep_is_connected(const uct_ep_h tl_ep,
                           const uct_ep_is_connected_params_t *params);
ucs_status_t qpx_ud_ep_check(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp);
ucs_status_t qpx_ud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length);
ssize_t qpx_ud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           unsigned flags);
/*
 * The same two and progress, guarded against the async timer, one set per
 * guard (_sfx): with the worker's async context blocked (blocked; async
 * progress on), in a context of spinlock mode (spinlocked), or excluding
 * the timer by the interface's fence (fenced, ASYNC_FENCE=y). Each is its
 * own function so that the guard is a constant where it is inlined.
 */
#define QPX_UD_GUARDED_OPS_DECLARE(_sfx) \
    ucs_status_t qpx_ud_ep_am_short_##_sfx(uct_ep_h tl_ep, uint8_t id, \
                                           uint64_t header, \
                                           const void *payload, \
                                           unsigned length); \
    ssize_t qpx_ud_ep_am_bcopy_##_sfx(uct_ep_h tl_ep, uint8_t id, \
                                      uct_pack_callback_t pack_cb, void *arg, \
                                      unsigned flags); \
    unsigned qpx_ud_iface_progress_##_sfx(uct_iface_h tl_iface)

QPX_UD_GUARDED_OPS_DECLARE(blocked);
QPX_UD_GUARDED_OPS_DECLARE(spinlocked);
QPX_UD_GUARDED_OPS_DECLARE(fenced);
ucs_status_t qpx_ud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp);
void qpx_ud_ep_notify_failed(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_timer(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
/* Probe ep (a reliable NOP) if it sent nothing since the last round */
void qpx_ud_ep_keepalive(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_send_ctl(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_resend(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_free_all(qpx_ud_iface_t *iface);
void qpx_ud_ep_linger_expire(qpx_ud_iface_t *iface);
void qpx_ud_ep_cancel(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
void qpx_ud_ep_rx_ooo_cleanup(qpx_ud_ep_t *ep);

/* qpx_ud_ep_rx.c: returns 1 when the buffer is kept */
int qpx_ud_ep_rx(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc,
                 qpx_ud_hdr_t *hdr, size_t length, const struct ibv_wc *wc);
/* Deliver the packets kept after the one just delivered, in order */
void qpx_ud_ep_rx_pull(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
/* The ack, NAK or probe reply a received header carries, processed */
int qpx_ud_ep_rx_ack(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                     const qpx_ud_hdr_t *hdr);

/* qpx_ud_async.c (init, cleanup), qpx_ud_iface_svc.c (the rest) */
ucs_status_t qpx_ud_iface_async_init(qpx_ud_iface_t *iface,
                                     const qpx_ud_iface_config_t *config);
void qpx_ud_iface_async_cleanup(qpx_ud_iface_t *iface);
void qpx_ud_iface_async_enter(qpx_ud_iface_t *iface);
void qpx_ud_iface_async_leave(qpx_ud_iface_t *iface);
void qpx_ud_iface_comp(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                       uct_completion_t *comp, ucs_status_t status);
/* Run the completions of ep's operations the timer deferred, now (its
 * destroy: UCT completes an endpoint's operations by uct_ep_destroy, and
 * calls nothing of it after); the others' stay deferred, in order */
void qpx_ud_iface_async_comps_run_ep(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep);
int qpx_ud_iface_async_defer_rx(qpx_ud_iface_t *iface,
                                qpx_ud_recv_desc_t *rdesc, size_t length);
void qpx_ud_iface_async_dispatch(qpx_ud_iface_t *iface);

/* qpx_ud_iface.c, qpx_ud_iface_svc.c */
unsigned qpx_ud_iface_progress_common(qpx_ud_iface_t *iface);
/* ibv_post_send() of wr (iface->tx.wr or wr_inl) returned ret: log it, undo
 * its completion accounting (and its descriptor's post count) */
void qpx_ud_iface_post_failed(qpx_ud_iface_t *iface, struct ibv_send_wr *wr,
                              int ret);
void qpx_ud_iface_disc_send(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                            uint32_t dest_id, uint32_t src_id);
void qpx_ud_iface_discs_cleanup(qpx_ud_iface_t *iface);
/* A tick: the DISCs not yet repeated enough go again */
void qpx_ud_iface_discs_timer(qpx_ud_iface_t *iface);
ucs_status_t qpx_ud_iface_peer_get(qpx_ud_iface_t *iface,
                                   const qpx_device_addr_t *dev_addr,
                                   const qpx_ud_iface_addr_t *iface_addr,
                                   qpx_ud_peer_t **peer_p);
void qpx_ud_iface_tx_drain(qpx_ud_iface_t *iface);
void qpx_ud_iface_send_completed(qpx_ud_iface_t *iface,
                                 qpx_ud_send_desc_t *desc);
unsigned qpx_ud_iface_progress(uct_iface_h tl_iface);

/* uct_iface_event_arm: base's arming, and a wakeup for the work that no
 * completion event announces */
ucs_status_t qpx_ud_iface_event_arm(uct_iface_h tl_iface, unsigned events);

/* Work that a sleeping worker must be woken for: what the async timer
 * received or completed, control packets and failures to report */
int qpx_ud_iface_has_deferred(qpx_ud_iface_t *iface);
void qpx_ud_iface_release_desc(uct_recv_desc_t *self, void *data);

/*
 * qpx_ud's clock, in its own units: on x86-64 the time-stamp counter, which
 * UCX's own clock (ucs_get_time) reads too, at the rate UCX measured for it;
 * elsewhere CLOCK_MONOTONIC in ns. Every duration qpx_ud keeps (timeouts,
 * the tick, the reliability core's) is converted to these units once, at
 * configuration, so that the data path neither converts nor divides.
 * qpx_ud_time_init() before the first use. The user's progress reads it on
 * every call (one RDTSC; a countdown that read it once in 16 calls spun
 * its empty polls faster against the peer, and am_bw lost 6-9% to
 * ud_verbs over softverbs, docs/performance.md).
 */
extern double qpx_ud_time_per_sec;
void qpx_ud_time_init(void);
uint64_t qpx_ud_time_ns_monotonic(void);

static UCS_F_ALWAYS_INLINE uint64_t qpx_ud_time_now(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return qpx_ud_time_ns_monotonic();
#endif
}

static inline uint64_t qpx_ud_time_from_sec(double sec)
{
    return sec * qpx_ud_time_per_sec;
}

static inline double qpx_ud_time_to_sec(uint64_t t)
{
    return t / qpx_ud_time_per_sec;
}

void qpx_ud_iface_peers_cleanup(qpx_ud_iface_t *iface);
ucs_status_t qpx_ud_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                uct_completion_t *comp);

#endif
