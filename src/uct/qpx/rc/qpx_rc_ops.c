/*
 * qpx_rc data path: put, get, active messages and atomics.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rc_ep.inl"

#include <uct/qpx/base/qpx_param.h>

#include <string.h>


/* Send buffers: base's qpx_iface_tx_desc_get, which solicits the
 * endpoints' completions when it refuses one (qpx_rc_iface_tx_solicit) */

ucs_status_t qpx_rc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                 unsigned length, uint64_t remote_addr,
                                 uct_rkey_t rkey)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    if (ucs_unlikely(length > iface->config.caps.max_put_short)) {
        return qpx_param_length_error("put_short", length,
                                      iface->config.caps.max_put_short);
    }
    if (ucs_unlikely(!qpx_rc_ep_can_send(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }

    sge.addr   = (uintptr_t)buffer;
    sge.length = length;
    sge.lkey   = 0;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1, remote_addr, rkey);
    return qpx_rc_ep_post(iface, ep, &wr, IBV_SEND_INLINE, 0);
}


ssize_t qpx_rc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                            void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    size_t length;

    if (!qpx_rc_ep_can_send(iface, ep) ||
        ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    length     = pack_cb(qpx_tx_desc_data(desc), arg);
    if (ucs_unlikely(length > iface->config.caps.max_bcopy)) {
        ucs_mpool_put(desc);
        return qpx_param_length_error("put_bcopy", length,
                                      iface->config.caps.max_bcopy);
    }
    sge.addr   = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length = length;
    sge.lkey   = desc->super.lkey;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1, remote_addr, rkey);
    status = qpx_rc_ep_post(iface, ep, &wr, 0, 0);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_rc_ep_add_op(ep, &desc->op, qpx_op_release, NULL);
    return length;
}


/* RDMA write or read from iov, completing comp (if any) when done */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rc_ep_rdma_zcopy(qpx_rc_ep_t *ep, const char *op, enum ibv_wr_opcode opcode,
                     const uct_iov_t *iov, size_t iovcnt,
                     uint64_t remote_addr, uct_rkey_t rkey,
                     uct_completion_t *comp)
{
    qpx_rc_iface_t *iface  = qpx_rc_ep_iface(ep);
    qpx_tx_desc_t *desc = NULL;
    struct ibv_sge sge[iface->config.caps.max_iov + 1];
    struct ibv_send_wr wr;
    ucs_status_t status;
    size_t num_sge;

    status = qpx_param_check_iov(op, iov, iovcnt, iface->config.caps.max_iov,
                                 0, iface->config.caps.max_zcopy);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (!qpx_rc_ep_can_send(iface, ep) ||
        ((comp != NULL) &&
         ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL))) {
        return UCS_ERR_NO_RESOURCE;
    }

    num_sge = qpx_iov_to_sge(sge, iov, iovcnt);
    qpx_rc_wr_rdma(&wr, opcode, sge, num_sge, remote_addr, rkey);
    status = qpx_rc_ep_post(iface, ep, &wr, 0, comp != NULL);
    if (status != UCS_OK) {
        if (desc != NULL) {
            ucs_mpool_put(desc);
        }
        return status;
    }

    if (desc != NULL) {
        qpx_rc_ep_add_op(ep, &desc->op, qpx_op_comp_release, comp);
    }
    return UCS_INPROGRESS;
}


ucs_status_t qpx_rc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    return qpx_rc_ep_rdma_zcopy(ucs_derived_of(tl_ep, qpx_rc_ep_t),
                                "put_zcopy", IBV_WR_RDMA_WRITE, iov, iovcnt,
                                remote_addr,
                                rkey, comp);
}


ucs_status_t qpx_rc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                 size_t iovcnt, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    return qpx_rc_ep_rdma_zcopy(ucs_derived_of(tl_ep, qpx_rc_ep_t),
                                "get_zcopy", IBV_WR_RDMA_READ, iov, iovcnt,
                                remote_addr,
                                rkey, comp);
}


ucs_status_t qpx_rc_ep_get_bcopy(uct_ep_h tl_ep,
                                 uct_unpack_callback_t unpack_cb, void *arg,
                                 size_t length, uint64_t remote_addr,
                                 uct_rkey_t rkey, uct_completion_t *comp)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    if (ucs_unlikely(length > iface->config.caps.max_bcopy)) {
        return qpx_param_length_error("get_bcopy", length,
                                      iface->config.caps.max_bcopy);
    }
    if (!qpx_rc_ep_can_send(iface, ep) ||
        ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    sge.addr   = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length = length;
    sge.lkey   = desc->super.lkey;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_READ, &sge, 1, remote_addr, rkey);
    status = qpx_rc_ep_post(iface, ep, &wr, 0, 1);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    qpx_rc_ep_add_op(ep, &desc->op, qpx_op_get_bcopy, comp);
    desc->op.get.unpack_cb = unpack_cb;
    desc->op.get.arg       = arg;
    desc->op.get.length    = length;
    return UCS_INPROGRESS;
}


ucs_status_t qpx_rc_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    qpx_rc_am_short_hdr_t hdr;
    struct ibv_send_wr wr;
    struct ibv_sge sge[2];
    ucs_status_t status;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (ucs_unlikely(sizeof(header) + length >
                     iface->config.caps.max_am_short)) {
        return qpx_param_length_error("am_short", sizeof(header) + length,
                                      iface->config.caps.max_am_short);
    }
    if (ucs_unlikely(!qpx_rc_ep_can_send(iface, ep) ||
                     !qpx_rc_ep_has_fc_credits(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }

    hdr.rc.am_id  = id;
    hdr.am_hdr    = header;
    sge[0].addr   = (uintptr_t)&hdr;
    sge[0].length = sizeof(hdr);
    sge[0].lkey   = 0;
    sge[1].addr   = (uintptr_t)payload;
    sge[1].length = length;
    sge[1].lkey   = 0;
    wr.opcode     = IBV_WR_SEND;
    wr.sg_list    = sge;
    wr.num_sge    = (length > 0) ? 2 : 1;
    status = qpx_rc_ep_post(iface, ep, &wr, IBV_SEND_INLINE, 0);
    ep->fc.sent += (status == UCS_OK);
    return status;
}


ssize_t qpx_rc_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           unsigned flags)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    qpx_rc_hdr_t *hdr;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;
    size_t length;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (!qpx_rc_ep_can_send(iface, ep) ||
        !qpx_rc_ep_has_fc_credits(iface, ep) ||
        ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL)) {
        return UCS_ERR_NO_RESOURCE;
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
    sge.addr   = (uintptr_t)hdr;
    sge.length = sizeof(*hdr) + length;
    sge.lkey   = desc->super.lkey;
    wr.opcode  = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    status = qpx_rc_ep_post(iface, ep, &wr,
                            (sge.length <= iface->super.config.max_inline) ?
                            IBV_SEND_INLINE : 0, 0);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    ++ep->fc.sent;
    qpx_rc_ep_add_op(ep, &desc->op, qpx_op_release, NULL);
    return length;
}


ucs_status_t qpx_rc_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp)
{
    qpx_rc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_rc_ep_t);
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    struct ibv_sge sge[iface->config.caps.max_iov + 1];
    qpx_tx_desc_t *desc;
    qpx_rc_hdr_t *hdr;
    struct ibv_send_wr wr;
    ucs_status_t status;
    size_t max_payload    = iface->super.config.seg_size - sizeof(*hdr);

    status = qpx_param_check_am_zcopy(id, header_length, iov, iovcnt,
                                      iface->config.caps.max_iov,
                                      max_payload);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (!qpx_rc_ep_can_send(iface, ep) ||
        !qpx_rc_ep_has_fc_credits(iface, ep) ||
        ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    hdr        = qpx_tx_desc_data(desc);
    hdr->am_id = id;
    memcpy(hdr + 1, header, header_length);
    sge[0].addr   = (uintptr_t)hdr;
    sge[0].length = sizeof(*hdr) + header_length;
    sge[0].lkey   = desc->super.lkey;
    wr.opcode     = IBV_WR_SEND;
    wr.sg_list    = sge;
    wr.num_sge    = 1 + qpx_iov_to_sge(&sge[1], iov, iovcnt);
    status = qpx_rc_ep_post(iface, ep, &wr, 0, comp != NULL);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    ++ep->fc.sent;
    qpx_rc_ep_add_op(ep, &desc->op, (comp != NULL) ? qpx_op_comp_release :
                                               qpx_op_release, comp);
    return UCS_INPROGRESS;
}


/* Post a 64-bit fetch-add or compare-swap whose result lands in a bounce
 * buffer; result NULL: nobody waits for the old value */
static ucs_status_t
qpx_rc_ep_atomic(qpx_rc_ep_t *ep, enum ibv_wr_opcode opcode, uint64_t add,
                 uint64_t swap, uint64_t remote_addr, uct_rkey_t rkey,
                 uint64_t *result, uct_completion_t *comp)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    qpx_tx_desc_t *desc;
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    ucs_status_t status;

    if (ucs_unlikely(!iface->config.caps.atomics || (remote_addr % 8) != 0)) {
        return iface->config.caps.atomics ? UCS_ERR_INVALID_PARAM :
                                       UCS_ERR_UNSUPPORTED;
    }
    if (!qpx_rc_ep_can_send(iface, ep) ||
        ((desc = qpx_iface_tx_desc_get(&iface->super)) == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    sge.addr                  = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length                = sizeof(uint64_t);
    sge.lkey                  = desc->super.lkey;
    wr.opcode                 = opcode;
    wr.sg_list                = &sge;
    wr.num_sge                = 1;
    wr.wr.atomic.remote_addr  = remote_addr;
    wr.wr.atomic.rkey         = (uint32_t)rkey;
    wr.wr.atomic.compare_add  = add;
    wr.wr.atomic.swap         = swap;
    status = qpx_rc_ep_post(iface, ep, &wr, 0, result != NULL);
    if (status != UCS_OK) {
        ucs_mpool_put(desc);
        return status;
    }

    if (result != NULL) {
        qpx_rc_ep_add_op(ep, &desc->op, qpx_op_atomic_fetch, comp);
        desc->op.result = result;
    } else {
        qpx_rc_ep_add_op(ep, &desc->op, qpx_op_release, NULL);
    }
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}


ucs_status_t qpx_rc_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                     uint64_t value, uint64_t remote_addr,
                                     uct_rkey_t rkey)
{
    if (opcode != UCT_ATOMIC_OP_ADD) {
        return UCS_ERR_UNSUPPORTED;
    }

    return qpx_rc_ep_atomic(ucs_derived_of(tl_ep, qpx_rc_ep_t),
                            IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                            remote_addr, rkey, NULL, NULL);
}


ucs_status_t qpx_rc_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                      uint64_t value, uint64_t *result,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    if ((opcode != UCT_ATOMIC_OP_ADD) || (result == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    return qpx_rc_ep_atomic(ucs_derived_of(tl_ep, qpx_rc_ep_t),
                            IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0,
                            remote_addr, rkey, result, comp);
}


ucs_status_t qpx_rc_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                      uint64_t swap, uint64_t remote_addr,
                                      uct_rkey_t rkey, uint64_t *result,
                                      uct_completion_t *comp)
{
    if (result == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    return qpx_rc_ep_atomic(ucs_derived_of(tl_ep, qpx_rc_ep_t),
                            IBV_WR_ATOMIC_CMP_AND_SWP, compare, swap,
                            remote_addr, rkey, result, comp);
}


ucs_status_t qpx_rc_ep_post_nop(qpx_rc_ep_t *ep)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    struct ibv_send_wr wr;

    if ((ep->tx.sq_available <= 0) || (iface->super.tx.cq_available <= 0)) {
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, NULL, 0, 0, 0);
    return qpx_rc_ep_post(iface, ep, &wr, 0, 1);
}


void qpx_rc_ep_post_close_notice(qpx_rc_ep_t *ep)
{
    static const uint64_t closed = 1;
    struct ibv_send_wr wr, *bad_wr;
    struct ibv_sge sge;
    int ret;

    if ((ep->flags & (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_ERROR |
                      QPX_RC_EP_FLAG_PEER_CTL)) !=
        (QPX_RC_EP_FLAG_CONNECTED | QPX_RC_EP_FLAG_PEER_CTL) ||
        (ep->tx.sq_available <= 0) || ep->fc.ctl->peer_closed) {
        return;
    }

    /* Outside the endpoint's accounting, unsignalled: the endpoint is going
     * away, and a completion of it (an error) finds no endpoint. Inline, so
     * nothing of ours must outlive the post. */
    sge.addr   = (uintptr_t)&closed;
    sge.length = sizeof(closed);
    sge.lkey   = 0;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1,
                   ep->fc.remote_addr + sizeof(uint64_t), ep->fc.remote_rkey);
    wr.wr_id      = qpx_rc_ep_wr_id(ep, ep->tx.sn + 1);
    wr.next       = NULL;
    wr.send_flags = IBV_SEND_INLINE;
    ret = ibv_post_send(ep->qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_debug("qp 0x%x: close notice not posted: %s", ep->qp->qp_num,
                  strerror(ret));
    }
}


void qpx_rc_ep_fc_update(qpx_rc_ep_t *ep)
{
    qpx_rc_iface_t *iface = qpx_rc_ep_iface(ep);
    uint64_t consumed     = ep->fc.consumed;
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    if ((ep->tx.sq_available <= 0) || (iface->super.tx.cq_available <= 0) ||
        !(ep->flags & QPX_RC_EP_FLAG_CONNECTED) ||
        (ep->flags & QPX_RC_EP_FLAG_ERROR)) {
        ep->flags |= QPX_RC_EP_FLAG_FC_UPDATE;
        return;
    }

    /* Inline: the value is copied at post time, no registered source */
    sge.addr   = (uintptr_t)&consumed;
    sge.length = sizeof(consumed);
    sge.lkey   = 0;
    qpx_rc_wr_rdma(&wr, IBV_WR_RDMA_WRITE, &sge, 1, ep->fc.remote_addr,
                   ep->fc.remote_rkey);
    if (qpx_rc_ep_post(iface, ep, &wr, IBV_SEND_INLINE, 0) == UCS_OK) {
        ep->fc.reported = consumed;
        ep->flags      &= ~QPX_RC_EP_FLAG_FC_UPDATE;
    } else {
        ep->flags      |= QPX_RC_EP_FLAG_FC_UPDATE;
    }
}
