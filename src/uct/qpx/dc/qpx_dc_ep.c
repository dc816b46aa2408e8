/*
 * qpx_dc endpoint control path: creation (to a peer interface: its device
 * address and DCT number), flush, fence, ep_check, failure, and the answer
 * to base's pending dispatch.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"

#include <uct/qpx/base/qpx_async.h>


static uint32_t qpx_dc_unpack24(const uint8_t *src)
{
    return src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16);
}


UCS_CLASS_INIT_FUNC(qpx_dc_ep_t, const uct_ep_params_t *params)
{
    const uint64_t need = UCT_EP_PARAM_FIELD_IFACE |
                          UCT_EP_PARAM_FIELD_DEV_ADDR |
                          UCT_EP_PARAM_FIELD_IFACE_ADDR;
    const qpx_dc_iface_addr_t *iface_addr;
    qpx_device_addr_t dev_addr;
    qpx_dc_iface_t *iface;
    ucs_status_t status;

    if ((params->field_mask & need) != need) {
        ucs_error("qpx_dc connects to an interface: ep_create needs the "
                  "interface, the peer's device and interface addresses");
        return UCS_ERR_INVALID_PARAM;
    }

    iface      = ucs_derived_of(params->iface, qpx_dc_iface_t);
    iface_addr = (const qpx_dc_iface_addr_t*)params->iface_addr;
    UCS_CLASS_CALL_SUPER_INIT(qpx_ep_t, &iface->super.super);

    qpx_device_addr_unpack(params->dev_addr, &dev_addr);
    if (!qpx_device_addr_is_reachable(iface->super.super.port, &dev_addr)) {
        ucs_error("qpx_dc: peer lid %u (address flags 0x%x) is not "
                  "reachable from %s:%d", dev_addr.lid, dev_addr.flags,
                  iface->super.super.md->dev.name, iface->super.super.port_num);
        return UCS_ERR_UNREACHABLE;
    }

    status = qpx_ah_cache_get(&iface->ah_cache, &dev_addr, &self->ah);
    if (status != UCS_OK) {
        return status;
    }
    self->av = NULL;
    if (iface->super.super.direct.enabled) {
        /* the WQEs' datagram segment (it lives as long as the cached AH) */
        status = qpx_mlx5_ah_av(self->ah, &self->av);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = qpx_ep_table_add(&iface->ep_table, self, &self->id);
    if (status != UCS_OK) {
        return status;
    }

    self->dct_num    = qpx_dc_unpack24(iface_addr->dct_num);
    self->dci        = QPX_DC_DCI_NONE;
    self->flags      = 0;
    self->status     = UCS_OK;
    self->last_sn    = 0;
    self->posts      = 0;
    self->keepalive_posts = 0;
    self->fence      = 0;
    self->fence_beat = iface->super.fence_beat;
    ucs_list_add_tail(&iface->super.eps, &self->list);
    if ((iface->config.policy == QPX_DC_POLICY_RAND) ||
        (iface->config.policy == QPX_DC_POLICY_SPREAD)) {
        /* its DCI for life (nothing is pending yet: this cannot fail) */
        (void)qpx_dc_iface_dci_get(iface, self);
    }

    ucs_debug("qpx_dc ep %p: dct 0x%x lid %u", self, self->dct_num,
              dev_addr.lid);
    return UCS_OK;
}


UCS_CLASS_CLEANUP_FUNC(qpx_dc_ep_t)
{
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(self);

    qpx_op_t *op;

    /* Its operations still on a DCI name it by id only: their user
     * completions run now, as canceled (UCT: uct_ep_destroy completes what
     * is outstanding), their buffers go when the DCI completes them */
    if (self->dci != QPX_DC_DCI_NONE) {
        ucs_list_for_each(op, &iface->dcis[self->dci].ops, list) {
            if (op->ep_id == self->id) {
                qpx_op_orphan(op);
            }
        }
    }
    /* Those the async timer completed for it finish now */
    if (ucs_unlikely(!ucs_list_is_empty(&iface->super.async.ops))) {
        qpx_rdma_iface_async_ops_run_ep(&iface->super, self->id);
    }
    if (self->flags & QPX_DC_EP_FLAG_INVALID) {
        --iface->num_invalid;
    }
    qpx_dc_iface_dci_detach(iface, self);
    qpx_dc_ep_dci_unwait(iface, self);
    if (self->flags & QPX_DC_EP_FLAG_WAITING) {
        ucs_list_del(&self->wait_link);
    }
    ucs_list_del(&self->list);
    qpx_ep_table_remove(&iface->ep_table, self->id);
}


UCS_CLASS_DEFINE(qpx_dc_ep_t, qpx_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(qpx_dc_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(qpx_dc_ep_t, uct_ep_t);


/*
 * uct_ep_invalidate: a transport error, emulated (UCX's tests of error
 * handling and UCP's failover call it). dc_mlx5 moves the endpoint's DCI to
 * ERR, which fails every endpoint with work on it; here only this one
 * fails, at the next progress (not from inside the call: the handler may
 * destroy it), with UCS_ERR_CONNECTION_RESET as a flushed request would.
 * What it posts until then goes out; its operations after return the
 * error.
 */
ucs_status_t qpx_dc_ep_invalidate(uct_ep_h tl_ep, qpx_ep_invalidate_arg_t arg)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);

    (void)arg;
    /* the async timer's completions touch the same flags */
    if (qpx_rdma_iface_async_is_on(&iface->super)) {
        qpx_async_block(iface->super.async.ctx);
    }
    if (!(ep->flags & (QPX_DC_EP_FLAG_ERROR | QPX_DC_EP_FLAG_INVALID))) {
        ucs_debug("qpx_dc: ep to dct 0x%x invalidated", ep->dct_num);
        ep->flags         |= QPX_DC_EP_FLAG_INVALID;
        ++iface->num_invalid;
        iface->tx_wake_due = 1;
    }
    if (qpx_rdma_iface_async_is_on(&iface->super)) {
        qpx_async_unblock(iface->super.async.ctx);
    }
    return UCS_OK;
}


/* The first endpoint of iface waiting to fail for its invalidation, or
 * NULL */
static qpx_dc_ep_t *qpx_dc_iface_first_invalid(qpx_dc_iface_t *iface)
{
    qpx_dc_ep_t *ep;

    ucs_list_for_each(ep, &iface->super.eps, list) {
        if (ep->flags & QPX_DC_EP_FLAG_INVALID) {
            return ep;
        }
    }
    return NULL;
}


/* From progress: the invalidated endpoints fail, one at a time (a handler
 * may destroy any endpoint, so the list is walked again each time) */
void qpx_dc_iface_fail_invalid(qpx_dc_iface_t *iface)
{
    qpx_dc_ep_t *ep;

    while ((iface->num_invalid != 0) &&
           ((ep = qpx_dc_iface_first_invalid(iface)) != NULL)) {
        ep->flags &= ~QPX_DC_EP_FLAG_INVALID;
        --iface->num_invalid;
        if (!(ep->flags & QPX_DC_EP_FLAG_ERROR)) { /* failed meanwhile */
            qpx_dc_ep_set_failed(ep, UCS_ERR_CONNECTION_RESET, "invalidated");
        }
    }
    /* the count follows the flags (set and cleared together); were it
     * ahead, no endpoint is left to fail */
    ucs_assertv(iface->num_invalid == 0, "num_invalid %u", iface->num_invalid);
    iface->num_invalid = 0;
}


/* ep's operations on its DCI complete with UCS_ERR_CANCELED when the DCI
 * completes them (a posted request cannot be taken back without failing
 * the DCI for the endpoints that share it). Returns how many of them have
 * a completion for the caller (the others only give back a descriptor). */
static unsigned qpx_dc_ep_cancel(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    unsigned count = 0;
    qpx_op_t *op;

    if (ep->dci == QPX_DC_DCI_NONE) {
        return 0;
    }
    ucs_list_for_each(op, &iface->dcis[ep->dci].ops, list) {
        if (op->ep_id == ep->id) {
            op->canceled = 1;
            count       += (op->comp != NULL);
        }
    }
    return count;
}


/* The last of ep's canceled operations with a completion for the caller
 * still on its DCI, or NULL */
static qpx_op_t *qpx_dc_ep_last_canceled(qpx_dc_iface_t *iface,
                                         qpx_dc_ep_t *ep)
{
    qpx_op_t *op, *last = NULL;

    if (ep->dci == QPX_DC_DCI_NONE) {
        return NULL;
    }
    ucs_list_for_each(op, &iface->dcis[ep->dci].ops, list) {
        if ((op->ep_id == ep->id) && op->canceled && (op->comp != NULL)) {
            last = op;
        }
    }
    return last;
}


/*
 * The flush of an endpoint in error: done once the operations its
 * canceling flush left on the DCI have completed (as the DCI completes
 * them; the endpoint posts nothing more, not even a no-op, which could
 * fail the DCI for the others on a dead peer). comp then runs after the
 * last of them: queued right behind it.
 */
static ucs_status_t qpx_dc_ep_flush_failed(qpx_dc_iface_t *iface,
                                           qpx_dc_ep_t *ep,
                                           uct_completion_t *comp)
{
    qpx_op_t *last = qpx_dc_ep_last_canceled(iface, ep);
    qpx_tx_desc_t *desc;

    if (last == NULL) {
        return UCS_OK;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    desc = qpx_iface_tx_desc_get(&iface->super.super);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* right behind last, at its sn: the list stays ordered by sn */
    qpx_op_init(&desc->op, last->sn, qpx_op_comp_release, comp, ep->id);
    ucs_list_insert_after(&last->list, &desc->op.list);
    return UCS_INPROGRESS;
}


ucs_status_t qpx_dc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci;
    ucs_status_t status;

    if ((flags & UCT_FLUSH_FLAG_CANCEL) &&
        !(ep->flags & QPX_DC_EP_FLAG_ERROR)) {
        /* After a canceling flush the endpoint is in error, as an RC QP
         * moved to ERR: further operations return UCS_ERR_CANCELED. The
         * flush completes when the canceled operations have; when none
         * with a completion is left (requests that were complete when
         * posted, unacknowledged on the DCI), at once: nothing the caller
         * can observe is outstanding, and the DCI completes them without
         * the endpoint (UCP destroys it after this flush, and its worker
         * may be destroyed before any further progress) */
        if (qpx_dc_ep_cancel(iface, ep) == 0) {
            status = UCS_OK;
        } else {
            status = qpx_dc_ep_flush(tl_ep, 0, comp);
        }
        ep->flags  |= QPX_DC_EP_FLAG_ERROR;
        ep->status  = UCS_ERR_CANCELED;
        return status;
    }

    /* A failed endpoint's operations finished with its error; canceled
     * ones finish as its DCI completes them. UCX's gtest
     * uct_flush_test.am_zcopy_flush_ep_no_comp on the direct path, where
     * the DCI completes later: the flush after the canceling one answered
     * UCS_OK with the am_zcopy's completion not yet called */
    if (ep->flags & QPX_DC_EP_FLAG_ERROR) {
        return qpx_dc_ep_flush_failed(iface, ep, comp);
    }

    /* Requests queued before this flush (waiting for a DCI) must go first:
     * without a DCI the endpoint has nothing in flight, and answering OK
     * let UCP's flush return before them (osc ucx's MPI_Accumulate then
     * computed on a get not yet issued, and wrote the garbage back, with
     * 16 ranks on 8 DCIs). Not when the flush is itself the pending
     * request being dispatched: what was queued before it has left. */
    if (!qpx_ep_pending_is_clear(&iface->super.super, &ep->super)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ep->dci == QPX_DC_DCI_NONE) {
        return UCS_OK;
    }

    dci = &iface->dcis[ep->dci];
    if (dci->acked_sn >= ep->last_sn) {
        return UCS_OK;
    }

    /* A signalled request at the tail completes everything before it */
    return qpx_dc_ep_probe(tl_ep, dci, dci->signaled_sn != dci->sn, comp,
                           UCS_INPROGRESS);
}


ucs_status_t qpx_dc_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    qpx_dc_ep_t *ep = ucs_derived_of(tl_ep, qpx_dc_ep_t);

    /* The next request waits for the DCI's earlier reads and atomics, which
     * include the endpoint's own (IBV_SEND_FENCE orders within the DCI) */
    ep->fence = IBV_SEND_FENCE;
    return UCS_OK;
}


ucs_status_t qpx_dc_ep_check(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    qpx_dc_dci_t *dci;

    if (flags != 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ep->flags & QPX_DC_EP_FLAG_ERROR) {
        return UCS_OK; /* already reported; comp not used (UCT allows it) */
    }

    /* An outstanding signalled request of ep completes, or fails when the
     * peer is gone; otherwise a zero-length write the peer's DCT must
     * acknowledge (a dead peer fails it after the retries, about
     * UCX_QPX_DC_TIMEOUT). comp (UCX 1.22's asynchronous check) waits for
     * the DCI's last request, which must then be signalled (others'
     * unsignalled ones may follow ep's) */
    dci = (ep->dci == QPX_DC_DCI_NONE) ? NULL : &iface->dcis[ep->dci];
    return qpx_dc_ep_probe(tl_ep, dci,
                           (dci == NULL) || (dci->acked_sn >= ep->last_sn) ||
                           (dci->signaled_sn < ep->last_sn) ||
                           ((comp != NULL) && (dci->signaled_sn != dci->sn)),
                           comp, UCS_OK);
}


qpx_ep_tx_state_t qpx_dc_ep_tx_state(qpx_iface_t *base_iface,
                                     qpx_ep_t *base_ep)
{
    qpx_dc_iface_t *iface = ucs_derived_of(base_iface, qpx_dc_iface_t);
    qpx_dc_ep_t *ep       = ucs_derived_of(base_ep, qpx_dc_ep_t);

    if (ep->flags & QPX_DC_EP_FLAG_ERROR) {
        return QPX_EP_TX_OK; /* its requests run and see the error */
    }
    if ((ep->dci == QPX_DC_DCI_NONE) ?
        qpx_dc_iface_dci_can_get(iface, ep) :
        qpx_dc_dci_has_tx_resources(iface, &iface->dcis[ep->dci])) {
        return QPX_EP_TX_OK;
    }

    /* A DCI given back or a completion on ep's DCI schedules it again */
    if (ep->dci == QPX_DC_DCI_NONE) {
        qpx_dc_iface_dci_solicit(iface);
        qpx_dc_ep_dci_wait(iface, ep);
    }
    qpx_dc_ep_tx_wait(iface, ep);
    return QPX_EP_TX_WAIT;
}


void qpx_dc_iface_keepalive(qpx_iface_t *base_iface)
{
    qpx_dc_iface_t *iface = ucs_derived_of(base_iface, qpx_dc_iface_t);
    qpx_dc_ep_t *ep;

    ucs_list_for_each(ep, &iface->super.eps, list) {
        /* Idle for a whole interval after having sent (a peer it never
         * addressed is nobody to watch): a signalled zero-length write the
         * peer's DCT must acknowledge; a dead peer fails it after the
         * retries. Without a DCI or a slot now, the next round tries */
        if ((ep->posts != 0) && (ep->posts == ep->keepalive_posts) &&
            !(ep->flags & QPX_DC_EP_FLAG_ERROR)) {
            (void)qpx_dc_ep_post_nop(ep);
        }
        ep->keepalive_posts = ep->posts;
    }
}


/* uct_ep_is_connected: the peer's DCT, on the port of the address handle
 * the endpoint took from the interface's cache (one per port) */
int qpx_dc_ep_is_connected(const uct_ep_h tl_ep,
                           const uct_ep_is_connected_params_t *params)
{
    const uint64_t need   = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                            UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    qpx_dc_ep_t *ep       = ucs_derived_of(tl_ep, qpx_dc_ep_t);
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);
    const qpx_dc_iface_addr_t *iface_addr;
    qpx_device_addr_t addr;

    if ((params->field_mask & need) != need) {
        return 0;
    }

    iface_addr = (const qpx_dc_iface_addr_t*)params->iface_addr;
    if (qpx_dc_unpack24(iface_addr->dct_num) != ep->dct_num) {
        return 0;
    }

    qpx_device_addr_unpack(params->device_addr, &addr);
    return qpx_ah_cache_find(&iface->ah_cache, &addr) == ep->ah;
}
