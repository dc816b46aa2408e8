/*
 * The direct path of an interface on an mlx5 device: its send queues, CQs
 * and SRQ are the queues mlx5dv_init_obj(3) hands out, written and read
 * here without a verbs call, as the HCA defines them (mlx5dv.h: WQE
 * segments, CQEs with owner bits, doorbell records, the doorbell register).
 * The rest of qpx keeps its verbs shapes: a send is an ibv_send_wr turned
 * into a WQE (qpx_mlx5_post), a completion an ibv_wc read from a CQE
 * (qpx_mlx5_poll), a receive buffer an ibv_recv_wr turned into a receive
 * WQE (qpx_mlx5_rxq_post), so that one interface is all direct or all verbs,
 * chosen when it opens (UCX_QPX_<TL>_DIRECT; the transport must offer it,
 * qpx_iface_ops_t direct).
 *
 * What is direct today: qpx_rc (its QPs, both CQs, its own SRQ), qpx_dc
 * (its DCIs, both CQs, the SRQ of its DCT) and qpx_ud (its QP, both CQs,
 * the QP's own receive queue or its SRQ), and so the hybrid's
 * sub-interfaces, one of which receives from the other's SRQ (direct.rx):
 * both are direct, or neither.
 */
#ifndef QPX_MLX5_H_
#define QPX_MLX5_H_

#include <stdint.h>
#include <infiniband/verbs.h>
#include <ucs/type/status.h>
#include <ucs/config/types.h>


/* A CQ: entry i's struct mlx5_cqe64 at buf + (i & mask) * stride +
 * stride - 64; software-owned when its owner bit is (i >> log_cnt) & 1 */
typedef struct qpx_mlx5_cq {
    char              *buf;
    uint32_t           mask;      /* entries - 1 */
    unsigned           stride;    /* 64 or 128 */
    unsigned           log_cnt;
    uint32_t           ci;        /* next entry to read */
    volatile uint32_t *dbrec;     /* [0] consumer index, [1] arm word */
    void              *uar;       /* the CQ doorbell register's page */
    uint32_t           cqn;
    unsigned           sn;        /* events taken: the arm sequence */
    const volatile uint8_t *next_op_own; /* of entry ci (qpx_mlx5_cq_ready) */
    uint8_t            next_owner; /* the owner bit entry ci has when it is
                                      the software's: the pass's parity */
} qpx_mlx5_cq_t;


/* A send queue of 64-byte blocks; the WR id of the WQE that starts at each
 * block, for its CQE (which names the block; the CQE carries the WQE's
 * opcode itself) */
typedef struct qpx_mlx5_txwq {
    char              *qstart;
    char              *qend;
    uint16_t           pi;        /* next block */
    uint16_t           mask;      /* blocks - 1 */
    uint32_t           qpn;
    volatile uint32_t *dbrec;     /* [MLX5_SND_DBR]: the producer counter */
    volatile uint64_t *reg;       /* the doorbell register (8-byte store) */
    size_t             max_wqe;   /* bytes one WQE may take */
    size_t             inplace_max; /* the last offset a WQE of max_wqe bytes
                                       starts at without passing qend */
    uint64_t          *wrid;
} qpx_mlx5_txwq_t;


/* A receive queue of tail + 1 WQEs: a QP's own (data segments only,
 * posted and consumed in index order: a CQE does not name the WQE, IBA
 * 10.8.3, as libmlx5 reads it), or an SRQ, whose WQEs the device takes
 * along their links (next segments) and completes in any order (a CQE
 * names its WQE): posted from the head of the list of free WQEs, a
 * completed one linked behind its tail, which is never posted
 * (mlx5_post_srq_recv, mlx5_free_srq_wqe). A WQE a reset QP held is so
 * never posted over before it completes, however late. */
typedef struct qpx_mlx5_rxq {
    char              *buf;
    uint16_t           counter;   /* WQEs posted */
    uint16_t           tail;      /* index mask */
    uint16_t           ci;        /* WQEs consumed (in_order) */
    uint16_t           free_head; /* SRQ: the next WQE to post */
    uint16_t           free_tail; /* SRQ: the last free WQE (kept) */
    uint8_t            in_order;  /* a QP's own queue */
    uint8_t            dseg_off;  /* the data segment's offset in a WQE */
    unsigned           stride;
    volatile uint32_t *dbrec;
    uint64_t          *wrid;
} qpx_mlx5_rxq_t;


/* The direct state of an interface (qpx_iface_t direct) */
typedef struct qpx_mlx5_iface {
    int                enabled;
    qpx_mlx5_cq_t      cq[2];     /* send, receive */
    qpx_mlx5_rxq_t     rxq;       /* the SRQ, or the QP's receive queue */
    qpx_mlx5_rxq_t     *rx;       /* the one received into: rxq, or that
                                     of the interface whose SRQ this one
                                     shares (rx_owner, direct too) */
    void              *qps;       /* QP number -> qpx_mlx5_txwq_t (khash) */
} qpx_mlx5_iface_t;

enum {
    QPX_MLX5_CQ_TX = 0,
    QPX_MLX5_CQ_RX = 1
};

struct qpx_iface;
struct mlx5_wqe_av;

/* At interface open, before any receive is posted: when its DIRECT
 * setting asks for it (on, auto) and the device has mlx5 queues, make both
 * CQs and the receive queue direct: the interface's SRQ (that of its
 * rx_owner, which must be direct itself), or without one rq_qp's own
 * (NULL: an SRQ is needed); UCS_OK with direct.enabled 0 otherwise (auto,
 * off), an error when DIRECT is on and it cannot be */
ucs_status_t qpx_mlx5_iface_init(struct qpx_iface *iface,
                                 struct ibv_qp *rq_qp);
void qpx_mlx5_iface_cleanup(struct qpx_iface *iface);

/* A QP of a direct interface: its send queue, found by its QP number */
ucs_status_t qpx_mlx5_txwq_init(struct qpx_iface *iface, struct ibv_qp *qp,
                                qpx_mlx5_txwq_t *wq);
void qpx_mlx5_txwq_cleanup(struct qpx_iface *iface, qpx_mlx5_txwq_t *wq);
/* After the QP went through RESET: the queue starts at block 0 again, and
 * the CQEs of its last life still unread are dropped (qpx_mlx5_qp_clean;
 * nothing on the verbs path, where wq is not set up) */
void qpx_mlx5_txwq_reset(struct qpx_iface *iface, qpx_mlx5_txwq_t *wq);
/* After QP qpn of a direct interface went to RESET or was destroyed: the
 * CQEs of its last life still unread in the interface's CQs are dropped
 * (sends) or flushed (receives: their buffers come back, undelivered), as
 * libmlx5 cleans its CQs then (mlx5_cq_clean) */
void qpx_mlx5_qp_clean(struct qpx_iface *iface, uint32_t qpn);

/* Arming a direct CQ for its next (solicited) completion (taking its
 * event moves cq->sn on) */
void qpx_mlx5_cq_arm(qpx_mlx5_cq_t *cq, int solicited_only);

/* Post one WR as a WQE at the queue's producer index and ring the
 * doorbell: 0, or EINVAL (an opcode or a size the queue does not take;
 * nothing posted) */
int qpx_mlx5_post(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr);

/* The same on a DCI: to DCT dct_num behind av with its access key */
int qpx_mlx5_post_dc(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                     const struct mlx5_wqe_av *av, uint32_t dct_num,
                     uint64_t dc_key);

/* The address vector of ah, for a DCI's or a UD QP's WQEs (it lives as
 * long as ah) */
ucs_status_t qpx_mlx5_ah_av(struct ibv_ah *ah, const struct mlx5_wqe_av **av_p);

/* Up to max completions of cq, one of iface's direct CQs, into wc */
int qpx_mlx5_poll(struct qpx_iface *iface, qpx_mlx5_cq_t *cq, int max,
                  struct ibv_wc *wc);

/* The receive WRs from head (one SGE each) as receive WQEs; returns how
 * many, and in *bad_wr the first not posted (NULL: all), where an SRQ had
 * no free WQE left (the caller counts the queue's room: not expected) */
unsigned qpx_mlx5_rxq_post(qpx_mlx5_rxq_t *rxq, struct ibv_recv_wr *head,
                           struct ibv_recv_wr **bad_wr);

#endif
