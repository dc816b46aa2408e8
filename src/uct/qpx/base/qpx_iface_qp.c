/*
 * qpx interface core: the interface's pool of QPs (created ahead in RESET,
 * taken by endpoints, given back through RESET), the map from QP number to
 * the QP's owner, for completions, and the account of what the device ran
 * out of when a QP, CQ or SRQ could not be created (qpx_iface.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface.h"

#include <errno.h>
#include <string.h>


/* A failed creation of what (errno set by it, read here before anything
 * logs): its status, and in *level_p the level to log it at: self's
 * exhausted_level where the device had no room or memory for it (ENOMEM,
 * EAGAIN), which is then remembered, else error */
ucs_status_t qpx_iface_create_failed(const qpx_iface_t *self,
                                     const char *what,
                                     ucs_log_level_t *level_p)
{
    ucs_status_t status = qpx_device_err_status(errno);

    if (!qpx_device_err_exhausted(errno)) {
        *level_p = UCS_LOG_LEVEL_ERROR;
        return status;
    }
    qpx_iface_exhausted_set(self, what);
    *level_p = self->exhausted_level;
    return status;
}


static ucs_status_t qpx_iface_qp_get_level(qpx_iface_t *iface,
                                           ucs_log_level_t exhausted_level,
                                           struct ibv_qp **qp_p)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp;
    ucs_status_t status;

    qp = qpx_qp_pool_get(&iface->qp_pool);
    if (qp != NULL) {
        iface->qp_pool.reused++;
        *qp_p = qp;
        return UCS_OK;
    }

    attr   = iface->qp_init_attr;
    status = iface->qp_create(iface->md->pd, &iface->md->dev, &attr,
                              exhausted_level, &qp);
    if (status != UCS_OK) {
        if (status == UCS_ERR_NO_MEMORY) {
            qpx_iface_exhausted_set(iface, "QP");
        }
        return status;
    }
    if (!iface->qp_caps_granted &&
        (attr.cap.max_send_wr <= iface->config.tx_reserve)) {
        /* A device that lowered the send queue to its limit (the clamping
         * kind) left no slot beyond the reserve */
        ucs_error("qp 0x%x: %u send WRs granted, no more than the %u kept "
                  "for flush and flow control", qp->qp_num,
                  attr.cap.max_send_wr, iface->config.tx_reserve);
        qpx_qp_destroy(qp);
        return UCS_ERR_UNSUPPORTED;
    }
    iface->qp_pool.created++;

    if (!iface->qp_caps_granted) {
        /* Every later QP asks for exactly what the first one got */
        iface->qp_init_attr.cap     = attr.cap;
        iface->qp_caps_granted      = 1;
        iface->config.max_inline    = attr.cap.max_inline_data;
        iface->config.max_send_sge  = attr.cap.max_send_sge;
        iface->config.tx_queue_len  = ucs_min(attr.cap.max_send_wr,
                                              iface->config.tx_queue_len);
        if (iface->srq == NULL) {
            /* Its receive queue is the interface's (ibv_create_qp(3): the
             * granted max_recv_wr may be larger than asked) */
            iface->rx.qp = qp;
            qpx_iface_rx_queue_set(iface, attr.cap.max_recv_wr);
        }
    }

    *qp_p = qp;
    return UCS_OK;
}


ucs_status_t qpx_iface_qp_get(qpx_iface_t *iface, struct ibv_qp **qp_p)
{
    return qpx_iface_qp_get_level(iface, iface->exhausted_level, qp_p);
}


ucs_status_t qpx_iface_qp_get_spare(qpx_iface_t *iface, struct ibv_qp **qp_p)
{
    return qpx_iface_qp_get_level(iface, UCS_LOG_LEVEL_DEBUG, qp_p);
}


unsigned qpx_iface_qp_prefill(qpx_iface_t *iface, unsigned count)
{
    struct ibv_qp_init_attr attr;
    ucs_status_t status;
    struct ibv_qp *qp;
    unsigned n;

    /* The first QP fixes the granted caps: it is created on demand */
    if (!iface->qp_caps_granted) {
        return 0;
    }
    for (n = 0; (n < count) &&
                (iface->qp_pool.count < iface->qp_pool.size); ++n) {
        /* Ahead of need: a QP the device has no room for is no error */
        attr   = iface->qp_init_attr;
        status = iface->qp_create(iface->md->pd, &iface->md->dev, &attr,
                                  UCS_LOG_LEVEL_DEBUG, &qp);
        if (status != UCS_OK) {
            ucs_debug("qpx iface %p: %u of %u QPs created ahead", iface, n,
                      count);
            break;
        }
        iface->qp_pool.created++;
        (void)qpx_qp_pool_add(&iface->qp_pool, qp);
    }
    return n;
}


void qpx_iface_qp_put(qpx_iface_t *iface, struct ibv_qp *qp)
{
    uint32_t qp_num = qp->qp_num;

    qpx_qp_pool_put(&iface->qp_pool, qp);
    if (iface->direct.enabled) {
        /* reset or destroyed: what its CQs still hold of it is not the next
         * user's (a verbs CQ is cleaned by the provider) */
        qpx_mlx5_qp_clean(iface, qp_num);
    }
}


ucs_status_t qpx_iface_qp_map_add(qpx_iface_t *iface, uint32_t qp_num,
                                  void *obj)
{
    khiter_t it;
    int ret;

    it = kh_put(qpx_qp_map, &iface->qp_map, qp_num, &ret);
    if (ret == -1) {
        ucs_error("failed to map qp 0x%x", qp_num);
        return UCS_ERR_NO_MEMORY;
    }

    kh_value(&iface->qp_map, it) = obj;
    return UCS_OK;
}


void qpx_iface_qp_map_del(qpx_iface_t *iface, uint32_t qp_num)
{
    khiter_t it = kh_get(qpx_qp_map, &iface->qp_map, qp_num);

    if (it != kh_end(&iface->qp_map)) {
        kh_del(qpx_qp_map, &iface->qp_map, it);
    }
}
