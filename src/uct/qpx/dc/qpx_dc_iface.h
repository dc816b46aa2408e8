/*
 * qpx_dc: mlx5 Dynamically Connected transport. One DC target (DCT) per
 * interface, on the interface's SRQ, receives from any peer that knows its
 * number (the interface address: UCT_IFACE_FLAG_CONNECT_TO_IFACE, no
 * wireup); a pool of DC initiators (DCIs) sends to any target, the target
 * given with each work request (mlx5dv_wr_set_dc_addr). The number of QPs is
 * the pool's size + 1, whatever the number of endpoints.
 *
 * DCI policies (UCX_QPX_DC_TX_POLICY, qpx_dc_dci.c):
 *  - dcs:       an endpoint takes a free DCI when it sends and gives it back
 *               when all its work on it completed; without a free one its
 *               requests wait (pending) until a DCI is given back;
 *  - dcs_quota: dcs, but an endpoint that posted QUOTA requests on its DCI
 *               while others wait for one stops until it gave the DCI back;
 *  - rand:      each endpoint sends on one DCI picked at random at creation,
 *               shared with other endpoints;
 *  - sticky:    dcs, but a DCI stays with its endpoint when idle, and is
 *               taken from it only when another endpoint needs a DCI and
 *               none is free (the idle one used least recently): an
 *               endpoint that sends again finds its DCI still connected to
 *               its target, without a target switch;
 *  - spread:    each endpoint sends on one DCI for its life, shared: the
 *               DCI of another endpoint to the same target if there is one
 *               (UCP opens several to a peer: they then share its
 *               connection), else the DCI fewest targets use. Nothing is
 *               taken or given back per request (as rand), and the load is
 *               even (rand's is not).
 *
 * Send accounting is per DCI, as qpx_rc's is per endpoint: each request
 * posted on a DCI gets the next sequence number; one in tx_moderation is
 * signalled, and a signalled completion for sn completes everything up to
 * sn. A DCI is known idle (to be given back, or taken) only from a
 * completion: when an endpoint finds no DCI, every DCI whose last requests
 * were unsignalled gets a signalled zero-length write to its last target,
 * so that its completion comes (qpx_dc_iface_dci_solicit). wr_id = DCI index | DCI generation | sn: a DCI recovered after an
 * error (RESET -> RTS) has a new generation, and completions of its old
 * life are dropped.
 *
 * A DCI completion error fails the endpoints that had work on it
 * (UCS_ERR_ENDPOINT_TIMEOUT for retries exceeded, UCS_ERR_CONNECTION_RESET
 * otherwise), and the DCI is recovered for the others.
 */
#ifndef QPX_DC_IFACE_H_
#define QPX_DC_IFACE_H_

#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/rdma/qpx_rdma.h>
#include <uct/qpx/base/qpx_ah.h>
#include <uct/qpx/base/qpx_ep_table.h>
#include <ucs/qpx_config.h>

#include <infiniband/mlx5dv.h>


#define QPX_DC_TL_NAME        "qpx_dc"
/* Access key of a qpx DCT where the launcher names no job and the user
 * sets none (UCX_QPX_DC_KEY): a DCI must carry its target's */
#define QPX_DC_KEY            0x1ee7a332ull
#define QPX_DC_MAX_DCI        64
#define QPX_DC_DCI_NONE       0xff
#define QPX_DC_SQ_RESERVE     1   /* send slot kept for flush and ep_check */
#define QPX_DC_SN_BITS        40
#define QPX_DC_SN_MASK        ((1ull << QPX_DC_SN_BITS) - 1)
#define QPX_DC_GEN_SHIFT      QPX_DC_SN_BITS
#define QPX_DC_GEN_MASK       0xffffull
#define QPX_DC_DCI_SHIFT      56


typedef enum {
    QPX_DC_POLICY_DCS,
    QPX_DC_POLICY_DCS_QUOTA,
    QPX_DC_POLICY_RAND,
    QPX_DC_POLICY_STICKY,
    QPX_DC_POLICY_SPREAD,
    QPX_DC_POLICY_LAST
} qpx_dc_policy_t;


/* Interface address: the DCT number */
typedef struct qpx_dc_iface_addr {
    uint8_t dct_num[3];
} UCS_S_PACKED qpx_dc_iface_addr_t;


enum {
    QPX_DC_DCI_FLAG_ERROR = UCS_BIT(0)  /* failed, not yet recovered */
};


/* A DC initiator of the pool */
typedef struct qpx_dc_dci {
    struct ibv_qp       *qp;
    struct ibv_qp_ex    *qpx;        /* ibv_wr_* */
    struct mlx5dv_qp_ex *mqp;        /* mlx5dv_wr_set_dc_addr */
    uint64_t            sn;          /* last posted */
    uint64_t            acked_sn;    /* last completed */
    uint64_t            signaled_sn; /* last signalled */
    int                 sq_available;
    unsigned            unsignaled;
    unsigned            quota_used;  /* posts since its endpoint took it */
    uint64_t            wr_id_base;  /* index and gen as a WR id has them */
    uint16_t            gen;
    uint8_t             index;
    uint8_t             flags;
    uint32_t            owner_id;    /* dcs, sticky: its endpoint's id */
    uint32_t            target_id;   /* endpoint id of the last post */
    struct ibv_ah       *target_ah;  /* and its target, to solicit a */
    const struct mlx5_wqe_av *target_av; /* completion (qpx_dc_dci.c) */
    uint32_t            target_dct;
    qpx_mlx5_txwq_t     txwq;        /* direct: its send queue (qstart
                                        NULL on the verbs path) */
    uint32_t            num_targets; /* rand, spread: endpoints on it */
    uint64_t            last_used;   /* sticky: iface tick of the last post */
    ucs_list_link_t     ops;         /* qpx_op_t, by sn */
} qpx_dc_dci_t;


typedef struct qpx_dc_iface_config {
    qpx_iface_config_t super;
    unsigned           num_dci;
    int                policy;          /* qpx_dc_policy_t */
    unsigned           quota;
    qpx_rdma_iface_config_t rdma;      /* the RC family's settings */
    qpx_config_key_t   key;             /* of the DCT, and of the peers' */
    int                async_progress;  /* ucs_on_off_auto_value_t */
    double             async_idle;
} qpx_dc_iface_config_t;


typedef struct qpx_dc_iface {
    qpx_rdma_iface_t super;          /* its conn: the DCIs' and the DCT's */
    struct ibv_qp    *dct;
    qpx_ah_cache_t   ah_cache;
    qpx_ep_table_t   ep_table;  /* super.eps: every qpx_dc_ep_t */
    /* Endpoints whose requests wait for a DCI or for a DCI's send slots:
     * scheduled again when a DCI is given back or completes requests */
    ucs_list_link_t  tx_wait;
    qpx_dc_dci_t     dcis[QPX_DC_MAX_DCI];
    uint8_t          free_dcis[QPX_DC_MAX_DCI]; /* stack of free DCIs */
    unsigned         num_dci;
    unsigned         num_free;
    /* Endpoints refused a DCI and waiting for one: while any wait, an
     * endpoint that did not gets none either (it queues behind them), so
     * that a free DCI goes to those who waited first, not to whoever calls
     * next (MPI passive-target lock spinners starved the unlock) */
    unsigned         num_dci_waiters;
    /* An endpoint went to tx_wait behind the waiters while a DCI was free:
     * no completion may come to wake them, so the next progress does */
    int              tx_wake_due;
    /* Endpoints invalidated (QPX_DC_EP_FLAG_INVALID) that the next progress
     * fails, through the same unlikely branch (it sets tx_wake_due) */
    unsigned         num_invalid;
    uint64_t         tick;          /* posts so far: sticky's clock */
    uint64_t         rand_state;
    uint64_t         target_switches; /* posts to another endpoint than the
                                         DCI's post before */
    struct {
        qpx_dc_policy_t       policy;
        unsigned              quota;
        uint64_t              dc_key;  /* of our DCT and of the peers' */
    } config;
} qpx_dc_iface_t;


enum {
    QPX_DC_EP_FLAG_ERROR    = UCS_BIT(0), /* failed: operations return status */
    QPX_DC_EP_FLAG_WAITING  = UCS_BIT(1), /* in iface->tx_wait */
    QPX_DC_EP_FLAG_DCI_WAIT = UCS_BIT(2), /* refused a DCI: counted in
                                             iface->num_dci_waiters */
    QPX_DC_EP_FLAG_INVALID  = UCS_BIT(3)  /* uct_ep_invalidate: fails at the
                                             next progress (num_invalid) */
};


typedef struct qpx_dc_ep {
    qpx_ep_t        super;
    ucs_list_link_t list;        /* in iface->super.eps */
    ucs_list_link_t wait_link;   /* in iface->tx_wait */
    struct ibv_ah   *ah;         /* the peer port's, from the iface cache */
    const struct mlx5_wqe_av *av; /* direct: ah's address vector */
    uint32_t        dct_num;
    uint32_t        id;          /* in iface->ep_table */
    uint64_t        last_sn;     /* sn of its last post on its DCI */
    uint64_t        posts;       /* requests posted so far */
    uint64_t        keepalive_posts; /* posts at the last keepalive round */
    ucs_status_t    status;      /* with QPX_DC_EP_FLAG_ERROR */
    uint8_t         dci;         /* QPX_DC_DCI_NONE: none held */
    uint8_t         flags;
    int             fence;       /* IBV_SEND_FENCE for the next post */
    unsigned        fence_beat;
} qpx_dc_ep_t;


extern uct_tl_t qpx_dc_tl;



/* DCI pool (qpx_dc_dci.c) */
/* At least one DCI, up to num_dci; *short_status_p: why there are fewer
 * (set only when at least one was made) */
ucs_status_t qpx_dc_iface_dcis_create(qpx_dc_iface_t *iface, unsigned num_dci,
                                      ucs_status_t *short_status_p);
/* At init, the last DCI destroyed so that its QP can go to the DCT */
void qpx_dc_iface_dci_give_way(qpx_dc_iface_t *iface);
void qpx_dc_iface_dcis_destroy(qpx_dc_iface_t *iface);
/* On a direct interface (qpx_rdma_iface_start made it so): each DCI's
 * mlx5 send queue */
ucs_status_t qpx_dc_iface_dcis_direct_init(qpx_dc_iface_t *iface);
/* Give ep a DCI under the policy; UCS_ERR_NO_RESOURCE when none can be
 * had now (ep then waits in iface->tx_wait if queue is set) */
ucs_status_t qpx_dc_iface_dci_get(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);
/* Ask for the completions that tell which DCIs are idle */
void qpx_dc_iface_dci_solicit(qpx_dc_iface_t *iface);
/* Whether qpx_dc_iface_dci_get() would give ep a DCI now */
int qpx_dc_iface_dci_can_get(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);
/* ep no longer needs its DCI (destroyed): released now or when idle */
void qpx_dc_iface_dci_detach(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);
/* Handle n send completions */
unsigned qpx_dc_iface_tx_process(qpx_iface_t *base_iface, struct ibv_wc *wc,
                                 int n);
/* A keepalive round: every endpoint that sent before and nothing since the
 * last round is probed (qpx_dc_ep.c) */
void qpx_dc_iface_keepalive(qpx_iface_t *iface);
/* Schedule every waiting endpoint's pending requests */
void qpx_dc_iface_tx_wake(qpx_dc_iface_t *iface);

/* uct_ep_invalidate's failures, at progress */
void qpx_dc_iface_fail_invalid(qpx_dc_iface_t *iface);
/* Make ep wait for a DCI or send slots */
void qpx_dc_ep_tx_wait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);
void qpx_dc_ep_dci_wait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);
void qpx_dc_ep_dci_unwait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep);

/* Endpoint control (qpx_dc_ep.c) */
QPX_EP_DECLARE(qpx_dc);
/* ep failed with status (its DCI failed, or it was invalidated;
 * qpx_dc_dci.c): finish its operations, tell the user; the handler may
 * destroy ep */
void qpx_dc_ep_set_failed(qpx_dc_ep_t *ep, ucs_status_t status,
                          const char *reason);
qpx_ep_tx_state_t qpx_dc_ep_tx_state(qpx_iface_t *base_iface,
                                     qpx_ep_t *base_ep);

/* Data path (qpx_dc_ops.c): the verbs path's and the direct path's */
QPX_RDMA_EP_OPS_DECLARE(qpx_dc);
QPX_RDMA_EP_OPS_DECLARE(qpx_dc_direct);
/* A signalled zero-length RDMA write to ep's target (flush, ep_check) */
ucs_status_t qpx_dc_ep_post_nop(qpx_dc_ep_t *ep);

#endif
