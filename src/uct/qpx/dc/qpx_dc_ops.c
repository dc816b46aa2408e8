/*
 * qpx_dc data path: put, get, active messages and atomics are the RC
 * family's (qpx_rdma_ops.inl) over qpx_dc's post operations here, each one
 * work request on the endpoint's DCI addressed to the peer's DCT
 * (qpx_dc.inl): through the ibv_wr_* API on the verbs path, a WQE on the
 * direct path (each path its own operations); and the no-op of a flush.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"

#include <uct/qpx/rdma/qpx_rdma_ops.inl>


/*
 * The post operations of qpx_dc (qpx_rdma_ops.inl): a request goes on the
 * DCI the endpoint holds (taken under the policy by qpx_dc_ep_tx_begin),
 * addressed to the peer's DCT.
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
qpx_dc_post_wr(uct_ep_h tl_ep, void *tx, const qpx_rdma_wr_t *rwr)
{
    qpx_dc_ep_t *ep = ucs_derived_of(tl_ep, qpx_dc_ep_t);

    return qpx_dc_dci_post_wr(qpx_dc_ep_iface(ep), ep, tx, rwr,
                              QPX_RDMA_PATH_VERBS);
}


/* The direct path's post operations: the same but the WR's (a WQE) */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_dc_direct_post_wr(uct_ep_h tl_ep, void *tx, const qpx_rdma_wr_t *rwr)
{
    qpx_dc_ep_t *ep = ucs_derived_of(tl_ep, qpx_dc_ep_t);

    return qpx_dc_dci_post_wr(qpx_dc_ep_iface(ep), ep, tx, rwr,
                              QPX_RDMA_PATH_DIRECT);
}

#define qpx_dc_direct_post_tx_begin qpx_dc_post_tx_begin
#define qpx_dc_direct_post_add_op   qpx_dc_post_add_op
#define qpx_dc_direct_post_nop      qpx_dc_post_nop


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
QPX_RDMA_EP_OPS_DEFINE(qpx_dc_direct)


ucs_status_t qpx_dc_ep_post_nop(qpx_dc_ep_t *ep)
{
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci = NULL;
    qpx_rdma_wr_t wr;

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

    return qpx_dc_dci_post_wr(iface, ep, dci, qpx_dc_wr_empty(&wr),
                              QPX_RDMA_PATH_ANY);
}
