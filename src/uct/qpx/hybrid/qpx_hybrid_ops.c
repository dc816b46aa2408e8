/*
 * qpx hybrid: the operations of an endpoint, each forwarded to the
 * sub-endpoint of the endpoint's current path (qpx_hybrid.inl), and the
 * interface's operation table.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.inl"

#include <uct/qpx/base/qpx_param.h>


/*
 * UCT's parameter contract (qpx_param.h) with the hybrid's own limits,
 * the smaller of both paths' (iface->attr): an endpoint may be on either
 * path, and a path that takes more must not take what the hybrid says it
 * does not. A bcopy's length is known only once packed: where a path
 * takes more than the hybrid (iface->check_bcopy), the pack callback is
 * wrapped, and a length above the limit becomes one no path takes, so
 * that the path refuses the send.
 */
static UCS_F_ALWAYS_INLINE const uct_iface_attr_t *
qpx_hybrid_ep_attr(uct_ep_h tl_ep)
{
    return &ucs_derived_of(tl_ep->iface, qpx_hybrid_iface_t)->attr;
}

typedef struct {
    uct_pack_callback_t pack_cb;
    void                *arg;
    const char          *op;
    size_t              max;
} qpx_hybrid_pack_t;

static size_t qpx_hybrid_pack_checked(void *dest, void *arg)
{
    const qpx_hybrid_pack_t *pack = arg;
    size_t length                 = pack->pack_cb(dest, pack->arg);

    if (ucs_unlikely(length > pack->max)) {
        (void)qpx_param_length_error(pack->op, length, pack->max);
        return SIZE_MAX;
    }
    return length;
}

/* Where a path takes more than the hybrid says (check_bcopy), the pack
 * callback *pack_cb_p with *arg_p is replaced by one that checks the
 * packed length against max (pack holds the original) */
static UCS_F_ALWAYS_INLINE void
qpx_hybrid_pack_wrap(const qpx_hybrid_iface_t *iface, qpx_hybrid_pack_t *pack,
                     const char *op, size_t max,
                     uct_pack_callback_t *pack_cb_p, void **arg_p)
{
    if (ucs_likely(!iface->check_bcopy)) {
        return;
    }
    pack->pack_cb = *pack_cb_p;
    pack->arg     = *arg_p;
    pack->op      = op;
    pack->max     = max;
    *pack_cb_p    = qpx_hybrid_pack_checked;
    *arg_p        = pack;
}

/* For bcopy operations, which return the length sent: count it */
static UCS_F_ALWAYS_INLINE ssize_t qpx_hybrid_ep_counted(uct_ep_h tl_ep,
                                                         ssize_t ret)
{
    if (ucs_likely(ret >= 0)) {
        qpx_hybrid_ep_count(tl_ep, ret);
    }
    return ret;
}


static ucs_status_t qpx_hybrid_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                            unsigned length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_rma(tl_ep);

    if (ucs_unlikely(length > attr->cap.put.max_short)) {
        return qpx_param_length_error("put_short", length,
                                      attr->cap.put.max_short);
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_put_short(ep, buffer, length,
                                                      remote_addr, rkey),
                              length);
}

static ssize_t qpx_hybrid_ep_put_bcopy(uct_ep_h tl_ep,
                                       uct_pack_callback_t pack_cb, void *arg,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                               qpx_hybrid_iface_t);
    uct_ep_h ep               = qpx_hybrid_ep_rma(tl_ep);
    qpx_hybrid_pack_t pack;

    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    qpx_hybrid_pack_wrap(iface, &pack, "put_bcopy",
                         iface->attr.cap.put.max_bcopy, &pack_cb, &arg);
    return qpx_hybrid_ep_counted(tl_ep, uct_ep_put_bcopy(ep, pack_cb, arg,
                                                         remote_addr, rkey));
}

/* RDMA write or read from iov on the endpoint's RMA path */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_hybrid_ep_rma_zcopy(uct_ep_h tl_ep, int is_get, const uct_iov_t *iov,
                        size_t iovcnt, uint64_t remote_addr, uct_rkey_t rkey,
                        uct_completion_t *comp)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_rma(tl_ep);
    ucs_status_t status;

    status = is_get ?
             qpx_param_check_iov("get_zcopy", iov, iovcnt,
                                 attr->cap.get.max_iov, 0,
                                 attr->cap.get.max_zcopy) :
             qpx_param_check_iov("put_zcopy", iov, iovcnt,
                                 attr->cap.put.max_iov, 0,
                                 attr->cap.put.max_zcopy);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    status = is_get ?
             uct_ep_get_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp) :
             uct_ep_put_zcopy(ep, iov, iovcnt, remote_addr, rkey, comp);
    return qpx_hybrid_ep_done(tl_ep, status, qpx_iov_total_length(iov, iovcnt));
}

static ucs_status_t qpx_hybrid_ep_put_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov,
                                            size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    return qpx_hybrid_ep_rma_zcopy(tl_ep, 0, iov, iovcnt, remote_addr, rkey,
                                   comp);
}

static ucs_status_t qpx_hybrid_ep_get_bcopy(uct_ep_h tl_ep,
                                            uct_unpack_callback_t unpack_cb,
                                            void *arg, size_t length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_rma(tl_ep);

    if (ucs_unlikely(length > attr->cap.get.max_bcopy)) {
        return qpx_param_length_error("get_bcopy", length,
                                      attr->cap.get.max_bcopy);
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_get_bcopy(ep, unpack_cb, arg,
                                                      length, remote_addr,
                                                      rkey, comp),
                              length);
}

static ucs_status_t qpx_hybrid_ep_get_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov,
                                            size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp)
{
    return qpx_hybrid_ep_rma_zcopy(tl_ep, 1, iov, iovcnt, remote_addr, rkey,
                                   comp);
}

static ucs_status_t qpx_hybrid_ep_am_short(uct_ep_h tl_ep, uint8_t id,
                                           uint64_t header,
                                           const void *payload,
                                           unsigned length)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_tx(tl_ep);

    /* The last id is the hybrid's own (its control messages): a user's
     * would be taken for one by the peer */
    if (ucs_unlikely(id >= QPX_HYBRID_AM_ID_CTL)) {
        return qpx_param_am_id_error(id, QPX_HYBRID_AM_ID_CTL);
    }
    if (ucs_unlikely(sizeof(header) + length > attr->cap.am.max_short)) {
        return qpx_param_length_error("am_short", sizeof(header) + length,
                                      attr->cap.am.max_short);
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_am_short(ep, id, header, payload,
                                                     length),
                              sizeof(header) + length);
}

static ucs_status_t qpx_hybrid_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                               const uct_iov_t *iov,
                                               size_t iovcnt)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_tx(tl_ep);
    ucs_status_t status;

    if (ucs_unlikely(id >= QPX_HYBRID_AM_ID_CTL)) {
        return qpx_param_am_id_error(id, QPX_HYBRID_AM_ID_CTL);
    }
    status = qpx_param_check_iov("am_short_iov", iov, iovcnt,
                                 attr->cap.am.max_iov, 0,
                                 attr->cap.am.max_short);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_am_short_iov(ep, id, iov,
                                                         iovcnt),
                              qpx_iov_total_length(iov, iovcnt));
}

static ssize_t qpx_hybrid_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                                      uct_pack_callback_t pack_cb, void *arg,
                                      unsigned flags)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                               qpx_hybrid_iface_t);
    uct_ep_h ep               = qpx_hybrid_ep_tx(tl_ep);
    qpx_hybrid_pack_t pack;

    if (ucs_unlikely(id >= QPX_HYBRID_AM_ID_CTL)) {
        return qpx_param_am_id_error(id, QPX_HYBRID_AM_ID_CTL);
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    qpx_hybrid_pack_wrap(iface, &pack, "am_bcopy",
                         iface->attr.cap.am.max_bcopy, &pack_cb, &arg);
    return qpx_hybrid_ep_counted(tl_ep, uct_ep_am_bcopy(ep, id, pack_cb, arg,
                                                        flags));
}

static ucs_status_t qpx_hybrid_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id,
                                           const void *header,
                                           unsigned header_length,
                                           const uct_iov_t *iov,
                                           size_t iovcnt, unsigned flags,
                                           uct_completion_t *comp)
{
    const uct_iface_attr_t *attr = qpx_hybrid_ep_attr(tl_ep);
    uct_ep_h ep                  = qpx_hybrid_ep_tx(tl_ep);
    ucs_status_t status;

    if (ucs_unlikely(id >= QPX_HYBRID_AM_ID_CTL)) {
        return qpx_param_am_id_error(id, QPX_HYBRID_AM_ID_CTL);
    }
    if (ucs_unlikely(header_length > attr->cap.am.max_hdr)) {
        return qpx_param_length_error("am_zcopy header", header_length,
                                      attr->cap.am.max_hdr);
    }
    status = qpx_param_check_iov("am_zcopy", iov, iovcnt,
                                 attr->cap.am.max_iov, header_length,
                                 attr->cap.am.max_zcopy);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_am_zcopy(ep, id, header,
                                                     header_length, iov,
                                                     iovcnt, flags, comp),
                              header_length +
                              qpx_iov_total_length(iov, iovcnt));
}

static ucs_status_t qpx_hybrid_ep_atomic_cswap64(uct_ep_h tl_ep,
                                                 uint64_t compare,
                                                 uint64_t swap,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uint64_t *result,
                                                 uct_completion_t *comp)
{
    uct_ep_h ep = qpx_hybrid_ep_rma(tl_ep);

    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_atomic_cswap64(ep, compare, swap,
                                                           remote_addr, rkey,
                                                           result, comp), 0);
}

static ucs_status_t qpx_hybrid_ep_atomic64_post(uct_ep_h tl_ep,
                                                unsigned opcode,
                                                uint64_t value,
                                                uint64_t remote_addr,
                                                uct_rkey_t rkey)
{
    uct_ep_h ep = qpx_hybrid_ep_rma(tl_ep);

    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_atomic64_post(ep, opcode, value,
                                                          remote_addr, rkey),
                              0);
}

static ucs_status_t qpx_hybrid_ep_atomic64_fetch(uct_ep_h tl_ep,
                                                 uct_atomic_op_t opcode,
                                                 uint64_t value,
                                                 uint64_t *result,
                                                 uint64_t remote_addr,
                                                 uct_rkey_t rkey,
                                                 uct_completion_t *comp)
{
    uct_ep_h ep = qpx_hybrid_ep_rma(tl_ep);

    if (ucs_unlikely(ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return qpx_hybrid_ep_done(tl_ep, uct_ep_atomic64_fetch(ep, opcode, value,
                                                           result, remote_addr,
                                                           rkey, comp), 0);
}

/* Interface-level calls (qpx_hybrid_iface.c) */
ucs_status_t qpx_hybrid_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                    uct_completion_t *comp);
ucs_status_t qpx_hybrid_iface_fence(uct_iface_h tl_iface, unsigned flags);
unsigned qpx_hybrid_iface_progress(uct_iface_h tl_iface);
ucs_status_t qpx_hybrid_iface_get_device_address(uct_iface_h tl_iface,
                                                 uct_device_addr_t *addr);
ucs_status_t qpx_hybrid_iface_get_address(uct_iface_h tl_iface,
                                          uct_iface_addr_t *addr);
int qpx_hybrid_iface_is_reachable(const uct_iface_h tl_iface,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_iface_addr_t *iface_addr);
void qpx_hybrid_iface_close(uct_iface_h tl_iface);
ucs_status_t qpx_hybrid_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p);
ucs_status_t qpx_hybrid_iface_event_arm(uct_iface_h tl_iface,
                                        unsigned events);


static uct_iface_internal_ops_t qpx_hybrid_iface_internal_ops =
    QPX_IFACE_INTERNAL_OPS_INV(uct_base_iface_estimate_perf,
                               qpx_hybrid_ep_invalidate,
                               qpx_hybrid_ep_is_connected);

uct_iface_ops_t qpx_hybrid_iface_ops = {
    .ep_put_short             = qpx_hybrid_ep_put_short,
    .ep_put_bcopy             = qpx_hybrid_ep_put_bcopy,
    .ep_put_zcopy             = qpx_hybrid_ep_put_zcopy,
    .ep_get_bcopy             = qpx_hybrid_ep_get_bcopy,
    .ep_get_zcopy             = qpx_hybrid_ep_get_zcopy,
    .ep_am_short              = qpx_hybrid_ep_am_short,
    .ep_am_short_iov          = qpx_hybrid_ep_am_short_iov,
    .ep_am_bcopy              = qpx_hybrid_ep_am_bcopy,
    .ep_am_zcopy              = qpx_hybrid_ep_am_zcopy,
    .ep_atomic_cswap64        = qpx_hybrid_ep_atomic_cswap64,
    /* No path has 32-bit atomics: base's refusal (UCS_ERR_UNSUPPORTED) */
    .ep_atomic_cswap32        = qpx_ep_atomic_cswap32,
    .ep_atomic64_post         = qpx_hybrid_ep_atomic64_post,
    .ep_atomic32_post         = qpx_ep_atomic32_post,
    .ep_atomic64_fetch        = qpx_hybrid_ep_atomic64_fetch,
    .ep_atomic32_fetch        = qpx_ep_atomic32_fetch,
    .ep_pending_add           = qpx_hybrid_ep_pending_add,
    .ep_pending_purge         = qpx_hybrid_ep_pending_purge,
    .ep_flush                 = qpx_hybrid_ep_flush,
    .ep_fence                 = qpx_hybrid_ep_fence,
    .ep_check                 = qpx_hybrid_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(qpx_hybrid_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(qpx_hybrid_ep_t),
    .iface_flush              = qpx_hybrid_iface_flush,
    .iface_fence              = qpx_hybrid_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = qpx_hybrid_iface_progress,
    .iface_event_fd_get       = qpx_hybrid_iface_event_fd_get,
    .iface_event_arm          = qpx_hybrid_iface_event_arm,
    .iface_close              = qpx_hybrid_iface_close,
    .iface_query              = qpx_hybrid_iface_query,
    .iface_get_device_address = qpx_hybrid_iface_get_device_address,
    .iface_get_address        = qpx_hybrid_iface_get_address,
    .iface_is_reachable       = qpx_hybrid_iface_is_reachable
};


/* Every active port: the cold path is qpx_dc where the device has DC,
 * else qpx_ud */
static ucs_status_t qpx_hybrid_query_devices(uct_md_h md,
                                             uct_tl_device_resource_t **devs_p,
                                             unsigned *num_devs_p)
{
    return qpx_iface_query_devices(md, devs_p, num_devs_p);
}


/* The interface with its operations: the tables above, handed down */
static ucs_status_t qpx_hybrid_iface_open(uct_md_h md, uct_worker_h worker,
                                          const uct_iface_params_t *params,
                                          const uct_iface_config_t *config,
                                          uct_iface_h *iface_p)
{
    return qpx_hybrid_iface_new(&qpx_hybrid_iface_ops,
                                &qpx_hybrid_iface_internal_ops, md, worker,
                                params, config, iface_p);
}

uct_tl_t qpx_hybrid_tl = {
    .name          = QPX_HYBRID_TL_NAME,
    .query_devices = qpx_hybrid_query_devices,
    .iface_open    = qpx_hybrid_iface_open,
    .config        = {
        .name   = "qpx hybrid transport",
        .prefix = "QPX_",
        .table  = qpx_hybrid_iface_config_table,
        .size   = sizeof(qpx_hybrid_iface_config_t),
    }
};
