/*
 * qpx QP lifecycle: create with cap negotiation, state transitions, pool.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_qp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


static const char *qpx_qp_type_str(enum ibv_qp_type type)
{
    switch (type) {
    case IBV_QPT_RC:
        return "RC";
    case IBV_QPT_UD:
        return "UD";
    case IBV_QPT_DRIVER:
        return "DC";
    default:
        return "?";
    }
}


/* Clamp the requested caps to what the device says it supports */
static int qpx_qp_caps_clamp(const qpx_device_t *dev, struct ibv_qp_cap *cap,
                             int has_srq)
{
    struct ibv_qp_cap orig = *cap;
    uint32_t max_wr        = (uint32_t)dev->attr.max_qp_wr;
    uint32_t max_sge       = (uint32_t)dev->attr.max_sge;

    cap->max_send_wr  = ucs_min(cap->max_send_wr, max_wr);
    cap->max_send_sge = ucs_min(cap->max_send_sge, max_sge);
    if (!has_srq) {
        cap->max_recv_wr  = ucs_min(cap->max_recv_wr, max_wr);
        cap->max_recv_sge = ucs_min(cap->max_recv_sge, max_sge);
    }

    return memcmp(&orig, cap, sizeof(orig)) != 0;
}


/*
 * The device took inline size ok and refused refused (> ok): find the
 * largest size between them it takes, by bisection, so that a device whose
 * limit is not a power-of-two fraction of the request (512 when 1000000
 * was asked) is not left with half of it. Each try creates a QP; the best
 * one is kept in *qp_p and *attr (its granted caps). Returns whether a
 * better QP replaced *qp_p.
 */
static int qpx_qp_inline_search(struct ibv_pd *pd,
                                 struct ibv_qp_init_attr *attr,
                                 qpx_qp_create_func_t create_func, void *arg,
                                 struct ibv_qp **qp_p, uint32_t ok,
                                 uint32_t refused)
{
    struct ibv_qp_init_attr try_attr;
    struct ibv_qp *qp;
    int replaced = 0;
    uint32_t mid;

    while (refused - ok > 1) {
        mid                          = ok + (refused - ok) / 2;
        try_attr                     = *attr;
        try_attr.cap.max_inline_data = mid;
        qp = create_func(pd, &try_attr, arg);
        if (qp == NULL) {
            if (errno != EINVAL) {
                /* out of resources: keep what we have */
                ucs_debug("create qp (inline %u) failed: %m", mid);
                break;
            }
            refused = mid;
            continue;
        }

        qpx_qp_destroy(*qp_p);
        *qp_p    = qp;
        *attr    = try_attr;
        ok       = mid;
        replaced = 1;
    }

    return replaced;
}


static struct ibv_qp *qpx_qp_verbs_create(struct ibv_pd *pd,
                                          struct ibv_qp_init_attr *attr,
                                          void *arg)
{
    return ibv_create_qp(pd, attr);
}


ucs_status_t qpx_qp_create(struct ibv_pd *pd, const qpx_device_t *dev,
                           struct ibv_qp_init_attr *init_attr,
                           ucs_log_level_t exhausted_level,
                           struct ibv_qp **qp_p)
{
    return qpx_qp_create_with(pd, dev, init_attr, qpx_qp_verbs_create, NULL,
                              exhausted_level, qp_p);
}


ucs_status_t qpx_qp_create_with(struct ibv_pd *pd, const qpx_device_t *dev,
                                struct ibv_qp_init_attr *init_attr,
                                qpx_qp_create_func_t create_func, void *arg,
                                ucs_log_level_t exhausted_level,
                                struct ibv_qp **qp_p)
{
    struct ibv_qp_init_attr attr = *init_attr;
    uint32_t refused_inline      = 0;
    int clamped                  = 0;
    struct ibv_qp_init_attr req;
    struct ibv_qp *qp;

    for (;;) {
        req = attr;
        qp  = create_func(pd, &attr, arg);
        if (qp != NULL) {
            break;
        }

        if (errno != EINVAL) {
            /* Out of QPs or memory, or a QP type the device does not have
             * (EOPNOTSUPP: no DC): at the level the opener chose, which
             * the hybrid lowers while it can do without */
            ucs_log((qpx_device_err_exhausted(errno) ||
                     (errno == EOPNOTSUPP)) ?
                    exhausted_level : UCS_LOG_LEVEL_ERROR,
                    "create qp (%s, send_wr %u sge %u inline %u) "
                    "failed: %m", qpx_qp_type_str(attr.qp_type),
                    attr.cap.max_send_wr, attr.cap.max_send_sge,
                    attr.cap.max_inline_data);
            return qpx_device_err_status(errno);
        }

        /* The device refused the caps: first try its advertised limits,
         * then shrink the inline size, which it does not advertise */
        if (!clamped) {
            clamped = 1;
            if (qpx_qp_caps_clamp(dev, &attr.cap, attr.srq != NULL)) {
                continue;
            }
        }

        if (attr.cap.max_inline_data == 0) {
            ucs_error("create qp (%s) refused caps send_wr %u sge %u "
                      "recv_wr %u sge %u even without inline: %m",
                      qpx_qp_type_str(attr.qp_type), attr.cap.max_send_wr,
                      attr.cap.max_send_sge, attr.cap.max_recv_wr,
                      attr.cap.max_recv_sge);
            return UCS_ERR_INVALID_PARAM;
        }
        refused_inline             = attr.cap.max_inline_data;
        attr.cap.max_inline_data  /= 2;
    }

    if (refused_inline != 0) {
        /* req: the caps the device took, as asked (attr holds them as
         * granted) */
        if (qpx_qp_inline_search(pd, &req, create_func, arg, &qp,
                                 req.cap.max_inline_data, refused_inline)) {
            attr = req;
        }
    }

    /* ibv_create_qp(3): the cap fields now hold what was granted, which can
     * be more than requested */
    if (memcmp(&attr.cap, &init_attr->cap, sizeof(attr.cap))) {
        ucs_debug("qp 0x%x %s: requested send_wr %u sge %u inline %u, "
                  "granted send_wr %u sge %u inline %u", qp->qp_num,
                  qpx_qp_type_str(attr.qp_type), init_attr->cap.max_send_wr,
                  init_attr->cap.max_send_sge, init_attr->cap.max_inline_data,
                  attr.cap.max_send_wr, attr.cap.max_send_sge,
                  attr.cap.max_inline_data);
    }

    init_attr->cap = attr.cap;
    *qp_p          = qp;
    return UCS_OK;
}


ucs_status_t qpx_qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr,
                           int mask)
{
    int ret = ibv_modify_qp(qp, attr, mask);

    if (ret != 0) {
        ucs_error("ibv_modify_qp(qp 0x%x, state %d, mask 0x%x) failed: %s",
                  qp->qp_num, attr->qp_state, mask, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}


ucs_status_t qpx_qp_to_init(struct ibv_qp *qp, uint8_t port_num,
                            int access_flags, uint32_t qkey)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    /* The lifecycle (ibv_modify_qp(3)): a new or reset QP goes to INIT;
     * libibverbs keeps qp->state after each successful modify */
    ucs_assertv(qp->state == IBV_QPS_RESET, "qp 0x%x state %d", qp->qp_num,
                qp->state);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = port_num;
    if (qp->qp_type == IBV_QPT_UD) {
        attr.qkey = qkey;
        mask     |= IBV_QP_QKEY;
    } else {
        attr.qp_access_flags = access_flags;
        mask                |= IBV_QP_ACCESS_FLAGS;
    }

    return qpx_qp_modify(qp, &attr, mask);
}


ucs_status_t qpx_qp_to_rtr(struct ibv_qp *qp,
                           const qpx_qp_connect_attr_t *conn)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE;

    ucs_assertv(qp->state == IBV_QPS_INIT, "qp 0x%x state %d", qp->qp_num,
                qp->state);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    if (qp->qp_type == IBV_QPT_RC) {
        attr.ah_attr            = conn->ah_attr;
        attr.path_mtu           = conn->path_mtu;
        attr.dest_qp_num        = conn->dest_qpn;
        attr.rq_psn             = conn->rq_psn;
        attr.max_dest_rd_atomic = conn->max_dest_rd_atomic;
        attr.min_rnr_timer      = conn->min_rnr_timer;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
    }

    return qpx_qp_modify(qp, &attr, mask);
}


ucs_status_t qpx_qp_to_rts(struct ibv_qp *qp,
                           const qpx_qp_connect_attr_t *conn)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

    ucs_assertv(qp->state == IBV_QPS_RTR, "qp 0x%x state %d", qp->qp_num,
                qp->state);
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = conn->sq_psn;
    /* reliable: RC, and the DC initiator (a driver QP; a DC target never
     * goes to RTS) */
    if ((qp->qp_type == IBV_QPT_RC) || (qp->qp_type == IBV_QPT_DRIVER)) {
        attr.timeout       = conn->timeout;
        attr.retry_cnt     = conn->retry_cnt;
        attr.rnr_retry     = conn->rnr_retry;
        attr.max_rd_atomic = conn->max_rd_atomic;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
    }

    return qpx_qp_modify(qp, &attr, mask);
}


ucs_status_t qpx_qp_to_err(struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    return qpx_qp_modify(qp, &attr, IBV_QP_STATE);
}


ucs_status_t qpx_qp_to_reset(struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RESET;
    return qpx_qp_modify(qp, &attr, IBV_QP_STATE);
}


void qpx_qp_destroy(struct ibv_qp *qp)
{
    uint32_t qp_num = qp->qp_num;
    int ret         = ibv_destroy_qp(qp);

    if (ret != 0) {
        ucs_warn("ibv_destroy_qp(qp 0x%x) failed: %s", qp_num, strerror(ret));
    }
}


ucs_status_t qpx_qp_pool_init(qpx_qp_pool_t *pool, unsigned size)
{
    pool->count   = 0;
    pool->size    = size;
    pool->qps     = NULL;
    pool->created = 0;
    pool->reused  = 0;
    if (size == 0) {
        return UCS_OK;
    }

    pool->qps = calloc(size, sizeof(*pool->qps));
    if (pool->qps == NULL) {
        ucs_error("failed to allocate a pool of %u QPs", size);
        return UCS_ERR_NO_MEMORY;
    }

    return UCS_OK;
}


void qpx_qp_pool_cleanup(qpx_qp_pool_t *pool)
{
    while (pool->count > 0) {
        qpx_qp_destroy(pool->qps[--pool->count]);
    }
    free(pool->qps);
    pool->qps = NULL;
}


struct ibv_qp *qpx_qp_pool_get(qpx_qp_pool_t *pool)
{
    if (pool->count == 0) {
        return NULL;
    }

    /* Only RESET QPs are kept (qpx_qp_pool_put, qpx_qp_pool_add) */
    ucs_assertv(pool->qps[pool->count - 1]->state == IBV_QPS_RESET,
                "pooled qp 0x%x state %d", pool->qps[pool->count - 1]->qp_num,
                pool->qps[pool->count - 1]->state);
    return pool->qps[--pool->count];
}


int qpx_qp_pool_add(qpx_qp_pool_t *pool, struct ibv_qp *qp)
{
    if (pool->count >= pool->size) {
        return 0;
    }
    ucs_assertv(qp->state == IBV_QPS_RESET, "qp 0x%x state %d", qp->qp_num,
                qp->state);
    pool->qps[pool->count++] = qp;
    return 1;
}


void qpx_qp_pool_put(qpx_qp_pool_t *pool, struct ibv_qp *qp)
{
    if ((pool->count < pool->size) && (qpx_qp_to_reset(qp) == UCS_OK)) {
        ucs_trace("qp 0x%x returned to the pool", qp->qp_num);
        pool->qps[pool->count++] = qp;
        return;
    }

    qpx_qp_destroy(qp);
}


uint8_t qpx_qp_timeout_code(double timeout)
{
    /* The IBA's Local ACK Timeout is 4.096 us * 2^code (ibv_modify_qp(3):
     * code 0 is infinite, never asked for here). The nearest code on the
     * log scale, as UCX's ib transports take it (uct_ib_to_qp_fabric_time):
     * the same TIMEOUT gives the same QP timeout as UCX_RC_TIMEOUT does
     * (5ms: 4.19 ms; rounding up gave 8.39 ms, twice UCX's stall after a
     * lost packet) */
    double t     = 4.096e-6 * 2;
    uint8_t code = 1;

    /* code c is nearest from t_c / sqrt(2) up to t_c * sqrt(2) */
    while ((timeout >= t * 1.4142135623730951) && (code < 31)) {
        t *= 2;
        ++code;
    }
    return code;
}


uint8_t qpx_qp_rnr_timer_code(double timeout)
{
    /* IBTA table 45 (ms): code n >= 1 is roughly 0.01 * 1.25^(n-1)... use
     * the standard approximation of the nearest code not below timeout */
    static const double table_ms[32] = {
        655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32,
        0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36,
        20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68,
        491.52};
    double ms = timeout * 1e3;
    uint8_t code;

    for (code = 1; code < 32; ++code) {
        if (table_ms[code] >= ms) {
            return code;
        }
    }
    return 0;
}
