/*
 * qpx_rc: reliable-connected transport. An endpoint owns one RC QP
 * connected to exactly one remote QP (UCT_IFACE_FLAG_CONNECT_TO_EP); every
 * QP of the interface sends completions to the interface's send CQ and
 * receives from its SRQ (see ../base/qpx_iface.h).
 *
 * Send accounting: every work request posted on an endpoint gets the next
 * sequence number (ep->tx.sn). Only one in tx_moderation requests is
 * signalled, plus every request whose completion the user waits for. A
 * signalled completion for sn completes every request up to sn, frees their
 * send queue slots and runs the operations queued on ep->tx.ops with
 * op->sn <= sn (bcopy buffer release, get unpack, atomic result, user
 * completions, flush).
 *
 * Active-message flow control: an endpoint may have fc_wnd messages
 * unconsumed at the peer. The peer RDMA-writes the count of messages it has
 * consumed into the endpoint's control words (ep->fc.ctl, a slot of the
 * interface's registered ctl_mp: one memory registration per 256
 * endpoints, not one each; address and rkey in the ep address), so credit
 * updates never consume a receive buffer.
 */
#ifndef QPX_RC_IFACE_H_
#define QPX_RC_IFACE_H_

#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/rdma/qpx_rdma.h>


#define QPX_RC_TL_NAME        "qpx_rc"
#define QPX_RC_SQ_RESERVE     2   /* send slots kept for flush and credits */
#define QPX_RC_SN_BITS        48
#define QPX_RC_SN_MASK        ((1ull << QPX_RC_SN_BITS) - 1)
#define QPX_RC_EP_ID_SHIFT    QPX_RC_SN_BITS
#define QPX_RC_SQ_FAILED      (-(1 << 30)) /* sq_available of a dead ep */


/*
 * Endpoint address: QPN and the flow-control counter. No PSN: a QP's first
 * is a function of its number (qpx_rc_qp_initial_psn), which the peer
 * computes. 16 bytes, so that UCP's address of a qpx_rc endpoint fits in
 * the 53 bytes qpx's CM carries in a REQ (qpx_cm.h).
 */
typedef struct qpx_rc_ep_addr {
    uint8_t  qp_num[3];
    uint8_t  flags;      /* QPX_RC_EP_ADDR_FLAG_* */
    uint32_t fc_rkey;
    uint64_t fc_addr;
} UCS_S_PACKED qpx_rc_ep_addr_t;

enum {
    QPX_RC_EP_ADDR_FLAG_FC  = UCS_BIT(0), /* the sender does flow control */
    QPX_RC_EP_ADDR_FLAG_CTL = UCS_BIT(1)  /* fc_addr/fc_rkey are valid */
};


enum {
    QPX_RC_EP_FLAG_CONNECTED = UCS_BIT(0),
    QPX_RC_EP_FLAG_ERROR     = UCS_BIT(1), /* QP in ERR: failed or canceled */
    QPX_RC_EP_FLAG_FC_UPDATE = UCS_BIT(2), /* credit update waits for a slot */
    QPX_RC_EP_FLAG_PEER_CTL  = UCS_BIT(3)  /* peer's control words known */
};


typedef struct qpx_rc_ep qpx_rc_ep_t;


/* The words a peer RDMA-writes into an endpoint: a slot of the interface's
 * registered ctl_mp, so that endpoints share registrations */
typedef struct qpx_rc_ep_ctl {
    qpx_md_reg_elem_t keys;             /* of the chunk holding the slot */
    volatile uint64_t consumed_by_peer; /* its count of our messages */
    volatile uint64_t peer_closed;      /* != 0: it destroyed its ep; the
                                           word after consumed_by_peer */
} qpx_rc_ep_ctl_t;


typedef struct qpx_rc_iface_config {
    qpx_iface_config_t      super;
    qpx_rdma_iface_config_t rdma;        /* the RC family's settings */
    unsigned                fc_wnd_size; /* 0: no flow control */
} qpx_rc_iface_config_t;


typedef struct qpx_rc_iface {
    qpx_rdma_iface_t super;     /* super.eps: its qpx_rc_ep_t */
    ucs_mpool_t     ctl_mp;   /* endpoints' control words (qpx_rc_ep_ctl_t),
                                 registered a chunk at a time */
    uint16_t        next_ep_id;
    struct {
        unsigned              fc_wnd;
        unsigned              fc_thresh;
    } config;
} qpx_rc_iface_t;


struct qpx_rc_ep {
    qpx_ep_t            super;          /* interface, pending queue */
    struct ibv_qp       *qp;
    qpx_mlx5_txwq_t     txwq;           /* direct: qp's send queue (qstart
                                           NULL on the verbs path) */
    ucs_list_link_t     list;           /* in iface->super.eps */
    uint16_t            id;             /* tags wr_id against a reused QP */
    uint8_t             flags;
    struct {
        uint64_t        sn;             /* last posted */
        uint64_t        acked_sn;       /* last completed */
        uint64_t        signaled_sn;    /* last signalled */
        int             sq_available;
        unsigned        unsignaled;
        int             fence;          /* IBV_SEND_FENCE for the next post */
        unsigned        fence_beat;     /* iface fence_beat at the last post */
        uint64_t        keepalive_sn;   /* sn at the last keepalive round */
        ucs_list_link_t ops;
    } tx;
    struct {
        /* The words the peer writes (address and rkey in our ep address) */
        qpx_rc_ep_ctl_t   *ctl;
        uint64_t          sent;
        uint64_t          consumed;         /* messages we received */
        uint64_t          reported;         /* last count written to peer */
        uint64_t          remote_addr;
        uint32_t          remote_rkey;
        int               enabled;
    } fc;
};


extern uct_tl_t qpx_rc_tl;



/* Control path (qpx_rc_ep.c) */
ucs_status_t qpx_rc_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr);
ucs_status_t qpx_rc_ep_connect_to_ep(uct_ep_h tl_ep,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_ep_addr_t *ep_addr);
QPX_EP_DECLARE(qpx_rc);
/* QP went to ERR (error completion): fail everything, tell the user */
void qpx_rc_ep_handle_failure(qpx_rc_ep_t *ep, enum ibv_wc_status wc_status);

/* The flow-control window (credits) for an endpoint: wnd_size (FC_WND_SIZE)
 * within what the receive queue of rx_queue_len buffers, reposted rx_batch
 * at a time, holds; 0 turns flow control off. *thresh_p: the consumed count
 * is reported to the peer each time it grew by this much */
unsigned qpx_rc_fc_window(unsigned wnd_size, unsigned rx_queue_len,
                          unsigned rx_batch, unsigned *thresh_p);
/* Write our consumed-message count to the peer (flow control) */
void qpx_rc_ep_fc_update(qpx_rc_ep_t *ep);
/* Tell the peer (RDMA write of its peer_closed word) that this endpoint is
 * destroyed: its keepalive then stops probing, instead of taking our gone QP
 * for a dead peer */
void qpx_rc_ep_post_close_notice(qpx_rc_ep_t *ep);
/* Probe ep if nothing was posted to it since the last round */
void qpx_rc_ep_keepalive(qpx_rc_ep_t *ep);

/* No send buffer could be had (qpx_iface_ops_t.tx_solicit): ask for the
 * completion of every endpoint's unsignalled requests, whose buffers come
 * back only then */
void qpx_rc_iface_tx_solicit(qpx_iface_t *base_iface);

/* Data path (qpx_rc_ops.c) */
QPX_RDMA_EP_OPS_DECLARE(qpx_rc);
/* the same on the direct path (qpx_rdma_tl_t's direct_ops) */
QPX_RDMA_EP_OPS_DECLARE(qpx_rc_direct);
/* Post a signalled zero-length write (flush, ep_check); uses the reserve */
ucs_status_t qpx_rc_ep_post_nop(qpx_rc_ep_t *ep);

#endif
