/*
 * qpx_dc data path: put, get, active messages and atomics, each one work
 * request on the endpoint's DCI through the ibv_wr_* API, addressed to the
 * peer's DCT (qpx_dc.inl).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"

#include <uct/qpx/base/qpx_param.h>


/* The DCI and a bounce buffer for an operation of ep, or the reason not */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_ep_tx_begin_desc(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                        qpx_dc_dci_t **dci_p, qpx_tx_desc_t **desc_p)
{
    ucs_status_t status = qpx_dc_ep_tx_begin(iface, ep, dci_p);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* A refused buffer solicits the DCIs' completions (tx_solicit): every
     * buffer may be held by unsignalled requests */
    *desc_p = qpx_iface_tx_desc_get(&iface->super);
    return (*desc_p == NULL) ? UCS_ERR_NO_RESOURCE : UCS_OK;
}


ucs_status_t qpx_dc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                 unsigned length, uint64_t remote_addr,
                                 uct_rkey_t rkey)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    int signal;

    if (ucs_unlikely(length > iface->config.caps.max_put_short)) {
        return qpx_param_length_error("put_short", length,
                                      iface->config.caps.max_put_short);
    }
    status = qpx_dc_ep_tx_begin(iface, ep, &dci);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    signal = qpx_dc_dci_wr_start(iface, ep, dci, IBV_SEND_INLINE, 0);
    ibv_wr_rdma_write(dci->qpx, (uint32_t)rkey, remote_addr);
    ibv_wr_set_inline_data(dci->qpx, (void*)buffer, length);
    return qpx_dc_dci_wr_complete(iface, ep, dci, signal);
}


ssize_t qpx_dc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                            void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    size_t length;
    int signal;

    status = qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc);
    if (status != UCS_OK) {
        return status;
    }

    length = pack_cb(qpx_tx_desc_data(desc), arg);
    if (ucs_unlikely(length > iface->config.caps.max_bcopy)) {
        ucs_mpool_put(desc);
        return qpx_param_length_error("put_bcopy", length,
                                      iface->config.caps.max_bcopy);
    }
    signal = qpx_dc_dci_wr_start(iface, ep, dci, 0, 0);
    ibv_wr_rdma_write(dci->qpx, (uint32_t)rkey, remote_addr);
    ibv_wr_set_sge(dci->qpx, desc->super.lkey,
                   (uintptr_t)qpx_tx_desc_data(desc), length);
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_release, NULL);
    return length;
}


/* RDMA write or read from iov, completing comp (if any) when done */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_ep_rdma_zcopy(qpx_dc_ep_t *ep, int is_read, const uct_iov_t *iov,
                     size_t iovcnt, uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp)
{
    qpx_dc_iface_t *iface  = qpx_dc_ep_iface(ep);
    qpx_tx_desc_t *desc = NULL;
    struct ibv_sge sge[iface->config.caps.max_iov + 1];
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    size_t num_sge;
    int signal;

    status = qpx_param_check_iov(is_read ? "get_zcopy" : "put_zcopy", iov,
                                 iovcnt, iface->config.caps.max_iov, 0,
                                 iface->config.caps.max_zcopy);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = (comp != NULL) ?
             qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc) :
             qpx_dc_ep_tx_begin(iface, ep, &dci);
    if (status != UCS_OK) {
        return status;
    }

    num_sge = qpx_iov_to_sge(sge, iov, iovcnt);
    signal  = qpx_dc_dci_wr_start(iface, ep, dci, 0, comp != NULL);
    if (is_read) {
        ibv_wr_rdma_read(dci->qpx, (uint32_t)rkey, remote_addr);
    } else {
        ibv_wr_rdma_write(dci->qpx, (uint32_t)rkey, remote_addr);
    }
    ibv_wr_set_sge_list(dci->qpx, num_sge, sge);
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        if (desc != NULL) {
            ucs_mpool_put(desc);
        }
        return status;
    }

    if (desc != NULL) {
        qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_comp_release, comp);
    }
    return UCS_INPROGRESS;
}


ucs_status_t qpx_dc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    return qpx_dc_ep_rdma_zcopy(ucs_derived_of(tl_ep, qpx_dc_ep_t), 0, iov,
                                iovcnt, remote_addr, rkey, comp);
}


ucs_status_t qpx_dc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    return qpx_dc_ep_rdma_zcopy(ucs_derived_of(tl_ep, qpx_dc_ep_t), 1, iov,
                                iovcnt, remote_addr, rkey, comp);
}


ucs_status_t qpx_dc_ep_get_bcopy(uct_ep_h tl_ep,
                                 uct_unpack_callback_t unpack_cb, void *arg,
                                 size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    int signal;

    if (ucs_unlikely(length > iface->config.caps.max_bcopy)) {
        return qpx_param_length_error("get_bcopy", length,
                                      iface->config.caps.max_bcopy);
    }
    status = qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc);
    if (status != UCS_OK) {
        return status;
    }

    signal = qpx_dc_dci_wr_start(iface, ep, dci, 0, 1);
    ibv_wr_rdma_read(dci->qpx, (uint32_t)rkey, remote_addr);
    ibv_wr_set_sge(dci->qpx, desc->super.lkey,
                   (uintptr_t)qpx_tx_desc_data(desc), length);
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_get_bcopy, comp);
    desc->op.get.unpack_cb = unpack_cb;
    desc->op.get.arg       = arg;
    desc->op.get.length    = length;
    return UCS_INPROGRESS;
}


ucs_status_t qpx_dc_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_am_short_hdr_t hdr;
    struct ibv_data_buf buf[2];
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    int signal;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (ucs_unlikely(sizeof(header) + length >
                     iface->config.caps.max_am_short)) {
        return qpx_param_length_error("am_short", sizeof(header) + length,
                                      iface->config.caps.max_am_short);
    }
    status = qpx_dc_ep_tx_begin(iface, ep, &dci);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    hdr.dc.am_id  = id;
    hdr.am_hdr    = header;
    buf[0].addr   = &hdr;
    buf[0].length = sizeof(hdr);
    buf[1].addr   = (void*)payload;
    buf[1].length = length;
    signal = qpx_dc_dci_wr_start(iface, ep, dci, IBV_SEND_INLINE, 0);
    ibv_wr_send(dci->qpx);
    /* copied by the post: hdr may go out of scope after it */
    ibv_wr_set_inline_data_list(dci->qpx, (length > 0) ? 2 : 1, buf);
    return qpx_dc_dci_wr_complete(iface, ep, dci, signal);
}


ssize_t qpx_dc_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           unsigned flags)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    qpx_dc_dci_t *dci = NULL;
    qpx_dc_hdr_t *hdr;
    ucs_status_t status;
    size_t length;
    int signal;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    status = qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc);
    if (status != UCS_OK) {
        return status;
    }

    hdr        = qpx_tx_desc_data(desc);
    hdr->am_id = id;
    length     = pack_cb(hdr + 1, arg);
    if (ucs_unlikely(length > iface->super.config.seg_size - sizeof(*hdr))) {
        ucs_mpool_put(desc);
        return qpx_param_length_error("am_bcopy", length,
                                      iface->super.config.seg_size -
                                      sizeof(*hdr));
    }
    signal     = qpx_dc_dci_wr_start(iface, ep, dci, 0, 0);
    ibv_wr_send(dci->qpx);
    ibv_wr_set_sge(dci->qpx, desc->super.lkey, (uintptr_t)hdr,
                   sizeof(*hdr) + length);
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_release, NULL);
    return length;
}


ucs_status_t qpx_dc_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    struct ibv_sge sge[iface->config.caps.max_iov + 1];
    qpx_tx_desc_t *desc;
    qpx_dc_dci_t *dci = NULL;
    qpx_dc_hdr_t *hdr;
    ucs_status_t status;
    size_t max_payload    = iface->super.config.seg_size - sizeof(*hdr);
    int signal;

    status = qpx_param_check_am_zcopy(id, header_length, iov, iovcnt,
                                      iface->config.caps.max_iov,
                                      max_payload);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc);
    if (status != UCS_OK) {
        return status;
    }

    hdr        = qpx_tx_desc_data(desc);
    hdr->am_id = id;
    memcpy(hdr + 1, header, header_length);
    sge[0].addr   = (uintptr_t)hdr;
    sge[0].length = sizeof(*hdr) + header_length;
    sge[0].lkey   = desc->super.lkey;
    signal = qpx_dc_dci_wr_start(iface, ep, dci, 0, comp != NULL);
    ibv_wr_send(dci->qpx);
    ibv_wr_set_sge_list(dci->qpx, 1 + qpx_iov_to_sge(&sge[1], iov, iovcnt),
                        sge);
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_dc_dci_add_op(dci, ep, &desc->op,
                      (comp != NULL) ? qpx_op_comp_release :
                                       qpx_op_release, comp);
    return UCS_INPROGRESS;
}


/* A 64-bit fetch-add or compare-swap whose result lands in a bounce
 * buffer; result NULL: nobody waits for the old value */
static ucs_status_t
qpx_dc_ep_atomic(qpx_dc_ep_t *ep, int is_cswap, uint64_t add, uint64_t swap,
                 uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result,
                 uct_completion_t *comp)
{
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;
    int signal;

    if (ucs_unlikely(!iface->config.caps.atomics || (remote_addr % 8) != 0)) {
        return iface->config.caps.atomics ? UCS_ERR_INVALID_PARAM :
                                       UCS_ERR_UNSUPPORTED;
    }
    status = qpx_dc_ep_tx_begin_desc(iface, ep, &dci, &desc);
    if (status != UCS_OK) {
        return status;
    }

    signal = qpx_dc_dci_wr_start(iface, ep, dci, 0, result != NULL);
    if (is_cswap) {
        ibv_wr_atomic_cmp_swp(dci->qpx, (uint32_t)rkey, remote_addr, add,
                              swap);
    } else {
        ibv_wr_atomic_fetch_add(dci->qpx, (uint32_t)rkey, remote_addr, add);
    }
    ibv_wr_set_sge(dci->qpx, desc->super.lkey,
                   (uintptr_t)qpx_tx_desc_data(desc), sizeof(uint64_t));
    status = qpx_dc_dci_wr_complete(iface, ep, dci, signal);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    if (result != NULL) {
        qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_atomic_fetch, comp);
        desc->op.result = result;
    } else {
        qpx_dc_dci_add_op(dci, ep, &desc->op, qpx_op_release, NULL);
    }
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}


ucs_status_t qpx_dc_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint64_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    if (opcode != UCT_ATOMIC_OP_ADD) {
        return UCS_ERR_UNSUPPORTED;
    }

    return qpx_dc_ep_atomic(ucs_derived_of(tl_ep, qpx_dc_ep_t), 0, value, 0,
                            remote_addr, rkey, NULL, NULL);
}


ucs_status_t qpx_dc_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint64_t value, uint64_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    if ((opcode != UCT_ATOMIC_OP_ADD) || (result == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    return qpx_dc_ep_atomic(ucs_derived_of(tl_ep, qpx_dc_ep_t), 0, value, 0,
                            remote_addr, rkey, result, comp);
}


ucs_status_t qpx_dc_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                      uint64_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint64_t *result,
                                      uct_completion_t *comp)
{
    if (result == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    return qpx_dc_ep_atomic(ucs_derived_of(tl_ep, qpx_dc_ep_t), 1, compare,
                            swap, remote_addr, rkey, result, comp);
}


ucs_status_t qpx_dc_ep_post_nop(qpx_dc_ep_t *ep)
{
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci = NULL;

    /* Flush and ep_check may use the reserved slot */
    if ((ep->flags & QPX_DC_EP_FLAG_ERROR) ||
        ((ep->dci == QPX_DC_DCI_NONE) &&
         (qpx_dc_iface_dci_get(iface, ep) != UCS_OK))) {
        return UCS_ERR_NO_RESOURCE;
    }
    dci = &iface->dcis[ep->dci];
    if ((dci->sq_available <= 0) || (iface->super.tx.cq_available <= 0) ||
        dci->flags) {
        return UCS_ERR_NO_RESOURCE;
    }

    (void)qpx_dc_dci_wr_start(iface, ep, dci, 0, 1);
    ibv_wr_rdma_write(dci->qpx, 0, 0);
    ibv_wr_set_sge_list(dci->qpx, 0, NULL);
    return qpx_dc_dci_wr_complete(iface, ep, dci, 1);
}
