/*
 * qpx QP lifecycle, shared by every qpx transport (rc, ud, dc, hybrid).
 *
 *   qpx_qp_create()  create with requested caps; when the device refuses
 *                    them (EINVAL) retry within the device limits, then with
 *                    smaller inline sizes; the granted caps are written back
 *                    into init_attr->cap (read back from the created QP).
 *   qpx_qp_to_init() RESET -> INIT (RC: access flags, UD: qkey)
 *   qpx_qp_to_rtr()  INIT -> RTR  (RC: path, remote QPN and PSN)
 *   qpx_qp_to_rts()  RTR  -> RTS  (RC: timeout, retry counts, send PSN)
 *   qpx_qp_to_err()  any  -> ERR  (outstanding work requests are flushed)
 *   qpx_qp_to_reset() any -> RESET (for reuse, see qpx_qp_pool_t)
 *   qpx_qp_destroy()
 *
 * mlx5 DC QPs (qpx_qp_dc.c, built with HAVE_MLX5DV): qpx_qp_dci_create(),
 * qpx_qp_dct_create(), qpx_qp_dci_connect() (RESET -> RTS, also to recover
 * a DCI from ERR after qpx_qp_to_reset()), qpx_qp_dct_listen() (RESET ->
 * RTR); qpx_qp_to_reset(), qpx_qp_to_err() and qpx_qp_destroy() serve them
 * too.
 *
 * A QP pool keeps RESET QPs of one configuration so that an endpoint that
 * goes away gives its QP to the next one instead of destroying it.
 */
#ifndef QPX_QP_H_
#define QPX_QP_H_

#include "qpx_device.h"

#include <ucs/ucx_compat.h>
#include <infiniband/verbs.h>


/* Well-known Q_Key of qpx UD QPs */
#define QPX_QP_UD_QKEY 0x1ee7a331u


/* Attributes of RTR and RTS (RC; UD uses only sq_psn) */
typedef struct qpx_qp_connect_attr {
    struct ibv_ah_attr ah_attr;           /* path to the peer port */
    enum ibv_mtu       path_mtu;
    uint32_t           dest_qpn;
    uint32_t           rq_psn;            /* the peer's send PSN */
    uint32_t           sq_psn;            /* our send PSN */
    uint8_t            max_rd_atomic;     /* our outstanding reads/atomics */
    uint8_t            max_dest_rd_atomic;
    uint8_t            min_rnr_timer;     /* IBTA code */
    uint8_t            timeout;           /* IBTA code: 4.096us * 2^timeout */
    uint8_t            retry_cnt;
    uint8_t            rnr_retry;         /* 7: infinite */
} qpx_qp_connect_attr_t;


/* A stack of RESET QPs ready for reuse */
typedef struct qpx_qp_pool {
    struct ibv_qp **qps;
    unsigned      count;
    unsigned      size;
    uint64_t      created;  /* QPs created for its interface, ahead too */
    uint64_t      reused;   /* QPs it gave out again */
} qpx_qp_pool_t;


/*
 * Create a QP. init_attr->cap holds the requested caps; on success it holds
 * what the device granted. dev gives the limits used when the device refuses
 * the request. ENOMEM and other errors are not retried. exhausted_level: the
 * level a QP the device has no room or memory for (ENOMEM, EAGAIN) is logged
 * at, lower than error for a caller that takes it as a normal outcome and
 * says so itself (an interface's exhausted_level, a pool filled ahead).
 */
ucs_status_t qpx_qp_create(struct ibv_pd *pd, const qpx_device_t *dev,
                           struct ibv_qp_init_attr *init_attr,
                           ucs_log_level_t exhausted_level,
                           struct ibv_qp **qp_p);

/* A creator of QPs with qpx_qp_create()'s arguments and cap negotiation
 * (qpx_qp_create itself, qpx_qp_dci_create) */
typedef ucs_status_t (*qpx_qp_creator_t)(struct ibv_pd *pd,
                                         const qpx_device_t *dev,
                                         struct ibv_qp_init_attr *init_attr,
                                         ucs_log_level_t exhausted_level,
                                         struct ibv_qp **qp_p);

/* How qpx_qp_create_with() creates one QP: NULL with errno on failure (EINVAL:
 * caps refused, tried again smaller), attr->cap the granted caps on success */
typedef struct ibv_qp *(*qpx_qp_create_func_t)(struct ibv_pd *pd,
                                               struct ibv_qp_init_attr *attr,
                                               void *arg);

/* qpx_qp_create() with another way to create (ibv_create_qp there) */
ucs_status_t qpx_qp_create_with(struct ibv_pd *pd, const qpx_device_t *dev,
                                struct ibv_qp_init_attr *init_attr,
                                qpx_qp_create_func_t create_func, void *arg,
                                ucs_log_level_t exhausted_level,
                                struct ibv_qp **qp_p);

/* ibv_modify_qp, logged on failure */
ucs_status_t qpx_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                           int mask);

ucs_status_t qpx_qp_to_init(struct ibv_qp *qp, uint8_t port_num,
                            int access_flags, uint32_t qkey);

ucs_status_t qpx_qp_to_rtr(struct ibv_qp *qp,
                           const qpx_qp_connect_attr_t *attr);

ucs_status_t qpx_qp_to_rts(struct ibv_qp *qp,
                           const qpx_qp_connect_attr_t *attr);

ucs_status_t qpx_qp_to_err(struct ibv_qp *qp);

ucs_status_t qpx_qp_to_reset(struct ibv_qp *qp);

void qpx_qp_destroy(struct ibv_qp *qp);


ucs_status_t qpx_qp_pool_init(qpx_qp_pool_t *pool, unsigned size);

/* Destroy every pooled QP */
void qpx_qp_pool_cleanup(qpx_qp_pool_t *pool);

/* A pooled QP in RESET, or NULL when the pool is empty */
struct ibv_qp *qpx_qp_pool_get(qpx_qp_pool_t *pool);

/* Keep a QP just created (RESET): 0 if the pool is full (qp untouched) */
int qpx_qp_pool_add(qpx_qp_pool_t *pool, struct ibv_qp *qp);

/* Move qp to RESET and keep it; destroy it if the pool is full or the
 * transition fails */
void qpx_qp_pool_put(qpx_qp_pool_t *pool, struct ibv_qp *qp);

/* IBTA local ACK timeout exponent for a time in seconds: 4.096us * 2^code */
uint8_t qpx_qp_timeout_code(double timeout);

/* IBTA min RNR NAK timer code for a time in seconds */
uint8_t qpx_qp_rnr_timer_code(double timeout);


/* A DC initiator: init_attr gives the CQs (send_cq, recv_cq) and the send
 * caps, negotiated as qpx_qp_create() does; its SRQ and receive caps are
 * not used (a DCI has no receive queue). It takes every RC operation
 * through the ibv_wr_* API (ibv_qp_to_qp_ex + mlx5dv_qp_ex_from_ibv_qp_ex) */
ucs_status_t qpx_qp_dci_create(struct ibv_pd *pd, const qpx_device_t *dev,
                               struct ibv_qp_init_attr *init_attr,
                               ucs_log_level_t exhausted_level,
                               struct ibv_qp **qp_p);

/* A DC target on init_attr->srq (required) with access key dc_key; its
 * number (qp_num) exists once qpx_qp_dct_listen() has moved it to RTR. A
 * DCT the device has no room or memory for (ENOMEM, EAGAIN) is logged at
 * exhausted_level, any other failure as an error */
ucs_status_t qpx_qp_dct_create(struct ibv_pd *pd,
                               struct ibv_qp_init_attr *init_attr,
                               uint64_t dc_key, ucs_log_level_t exhausted_level,
                               struct ibv_qp **qp_p);

/* DCI: RESET -> INIT -> RTR -> RTS; of conn, ah_attr.port_num (the port),
 * path_mtu, timeout, retry_cnt, rnr_retry, max_rd_atomic and sq_psn */
ucs_status_t qpx_qp_dci_connect(struct ibv_qp *qp, uint8_t port_num,
                                const qpx_qp_connect_attr_t *conn);

/* DCT: RESET -> INIT -> RTR; of conn, ah_attr, path_mtu and min_rnr_timer */
ucs_status_t qpx_qp_dct_listen(struct ibv_qp *qp, uint8_t port_num,
                               int access_flags,
                               const qpx_qp_connect_attr_t *conn);

#endif
