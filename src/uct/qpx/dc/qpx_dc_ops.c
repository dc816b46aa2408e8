/*
 * qpx_dc data path: put, get, active messages and atomics are the RC
 * family's (qpx_rdma_ops.inl) over qpx_dc's post operations here, each one
 * work request on the endpoint's DCI through the ibv_wr_* API, addressed
 * to the peer's DCT (qpx_dc.inl); and the no-op of a flush.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"

#include <uct/qpx/rdma/qpx_rdma_ops.inl>


/*
 * The post operations of qpx_dc (qpx_rdma_ops.inl): a request goes on the
 * DCI the endpoint holds (taken under the policy by qpx_dc_ep_tx_begin),
 * built with the ibv_wr_* API and addressed to the peer's DCT.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_post_tx_begin(uct_ep_h tl_ep, int is_am, void **tx_p)
{
    qpx_dc_ep_t *ep   = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_dci_t *dci = NULL;
    ucs_status_t status;

    /* No flow control: a DCT's receives come from the shared SRQ, whose
     * limit event refills it (is_am asks nothing more) */
    status = qpx_dc_ep_tx_begin(qpx_dc_ep_iface(ep), ep, &dci);
    if (ucs_likely(status == UCS_OK)) {
        *tx_p = dci;
    }
    return status;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_post_wr(uct_ep_h tl_ep, void *tx, const qpx_rdma_wr_t *wr)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci     = tx;
    struct ibv_data_buf buf[QPX_RDMA_INLINE_SGE_MAX];
    int i, signal;

    signal = qpx_dc_dci_wr_start(iface, ep, dci, wr->send_flags, wr->signal);
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
        ibv_wr_rdma_write(dci->qpx, wr->rkey, wr->remote_addr);
        break;
    case IBV_WR_RDMA_READ:
        ibv_wr_rdma_read(dci->qpx, wr->rkey, wr->remote_addr);
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        ibv_wr_atomic_fetch_add(dci->qpx, wr->rkey, wr->remote_addr,
                                wr->compare_add);
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        ibv_wr_atomic_cmp_swp(dci->qpx, wr->rkey, wr->remote_addr,
                              wr->compare_add, wr->swap);
        break;
    default:
        ucs_assertv(wr->opcode == IBV_WR_SEND, "opcode %d", wr->opcode);
        ibv_wr_send(dci->qpx);
        break;
    }

    if (wr->send_flags & IBV_SEND_INLINE) {
        /* Copied by the post: the buffers may go after it */
        ucs_assertv(wr->num_sge <= QPX_RDMA_INLINE_SGE_MAX, "num_sge %d",
                    wr->num_sge);
        for (i = 0; i < wr->num_sge; ++i) {
            buf[i].addr   = (void*)(uintptr_t)wr->sge[i].addr;
            buf[i].length = wr->sge[i].length;
        }
        ibv_wr_set_inline_data_list(dci->qpx, wr->num_sge, buf);
    } else {
        ibv_wr_set_sge_list(dci->qpx, wr->num_sge, wr->sge);
    }
    return qpx_dc_dci_wr_complete(iface, ep, dci, signal);
}


static UCS_F_ALWAYS_INLINE void
qpx_dc_post_add_op(uct_ep_h tl_ep, void *tx, qpx_op_t *op, qpx_op_cb_t cb,
                   uct_completion_t *comp)
{
    qpx_dc_dci_add_op(tx, ucs_derived_of(tl_ep, qpx_dc_ep_t), op, cb, comp);
}


static ucs_status_t qpx_dc_post_nop(uct_ep_h tl_ep, void **tx_p)
{
    qpx_dc_ep_t *ep = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    ucs_status_t status;

    /* The DCI the endpoint holds, or one it takes for the no-op */
    status = qpx_dc_ep_post_nop(ep);
    if (status == UCS_OK) {
        *tx_p = &qpx_dc_ep_iface(ep)->dcis[ep->dci];
    }
    return status;
}


QPX_RDMA_EP_OPS_DEFINE(qpx_dc)


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
    if ((dci->sq_available <= 0) || (iface->super.super.tx.cq_available <= 0) ||
        dci->flags) {
        return UCS_ERR_NO_RESOURCE;
    }

    (void)qpx_dc_dci_wr_start(iface, ep, dci, 0, 1);
    ibv_wr_rdma_write(dci->qpx, 0, 0);
    ibv_wr_set_sge_list(dci->qpx, 0, NULL);
    return qpx_dc_dci_wr_complete(iface, ep, dci, 1);
}
