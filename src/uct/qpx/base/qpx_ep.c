/*
 * qpx endpoint core: the endpoint class every transport's endpoint derives
 * from, and its pending queue (add, purge, dispatch, rescheduling), run
 * with the transport's answers from qpx_iface_ops_t.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ep.h"


UCS_CLASS_INIT_FUNC(qpx_ep_t, qpx_iface_t *iface)
{
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    ucs_arbiter_group_init(&self->arb_group);
    ucs_list_head_init(&self->resched);
    self->on_resched = 0;
    return UCS_OK;
}


static ucs_arbiter_cb_result_t
qpx_ep_pending_warn_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                       ucs_arbiter_elem_t *elem, void *arg)
{
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);

    (void)arbiter;
    (void)group;
    /* The user destroyed the endpoint without purging it: the request is
     * dropped, which the user must hear of */
    ucs_warn("ep %p destroyed with pending request %p", arg, req);
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_ep_t)
{
    qpx_iface_t *iface = qpx_ep_iface(self);

    ucs_arbiter_group_purge(&iface->arbiter, &self->arb_group,
                            qpx_ep_pending_warn_cb, self);
    ucs_arbiter_group_cleanup(&self->arb_group);
    if (self->on_resched) {
        ucs_list_del(&self->resched);
    }
}


UCS_CLASS_DEFINE(qpx_ep_t, uct_base_ep_t);


ucs_status_t qpx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                unsigned flags)
{
    qpx_ep_t *ep             = ucs_derived_of(tl_ep, qpx_ep_t);
    qpx_iface_t *iface       = qpx_ep_iface(ep);
    ucs_arbiter_elem_t *elem = &qpx_pending_priv(req)->elem;
    qpx_ep_tx_state_t state  = QPX_EP_TX_OK;
    int first;

    first = ucs_arbiter_group_is_empty(&ep->arb_group);
    if (first && !iface->ops->tx_exhausted(iface)) {
        state = iface->ops->ep_tx_state(iface, ep);
        /* Queued behind other endpoints' requests too: a transport whose
         * sends wait for them (qpx_ep_pending_is_clear_all) would refuse
         * the retry */
        if ((state == QPX_EP_TX_OK) && ucs_arbiter_is_empty(&iface->arbiter)) {
            return UCS_ERR_BUSY;
        }
    }

    UCS_STATIC_ASSERT(sizeof(qpx_pending_priv_t) <= UCT_PENDING_REQ_PRIV_LEN);
    UCS_STATIC_ASSERT(ucs_offsetof(qpx_pending_priv_t, elem) == 0);
    qpx_pending_priv(req)->flags = flags;
    ucs_arbiter_elem_init(elem);
    ucs_arbiter_group_push_elem(&ep->arb_group, elem);
    /*
     * Scheduled only as the first request of ep that may go: while ep
     * waits (QPX_EP_TX_WAIT) the transport schedules the group when the
     * resource returns, in the order its endpoints began to wait, and a
     * queue already there is scheduled, or waits so. Scheduled at once,
     * the group of an endpoint that just began to wait went before those
     * that waited longer: two of 8 MPI ranks spinning on a lock over one
     * DCI had their answers sent at every turn, the holder's never (a
     * hang).
     */
    if (first && (state != QPX_EP_TX_WAIT)) {
        qpx_ep_pending_schedule(iface, ep);
    }
    return UCS_OK;
}


typedef struct {
    uct_pending_purge_callback_t cb;
    void                         *arg;
} qpx_ep_purge_ctx_t;


static ucs_arbiter_cb_result_t
qpx_ep_pending_purge_cb(ucs_arbiter_t *arbiter, ucs_arbiter_group_t *group,
                        ucs_arbiter_elem_t *elem, void *arg)
{
    qpx_ep_purge_ctx_t *ctx = arg;
    uct_pending_req_t *req  = ucs_container_of(elem, uct_pending_req_t, priv);

    (void)arbiter;
    (void)group;
    if (ctx->cb != NULL) {
        ctx->cb(req, ctx->arg);
    }
    return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
}


void qpx_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                          void *arg)
{
    qpx_ep_t *ep           = ucs_derived_of(tl_ep, qpx_ep_t);
    qpx_iface_t *iface     = qpx_ep_iface(ep);
    qpx_ep_purge_ctx_t ctx = {cb, arg};

    ucs_arbiter_group_purge(&iface->arbiter, &ep->arb_group,
                            qpx_ep_pending_purge_cb, &ctx);
}


void qpx_iface_pending_resched(qpx_iface_t *iface)
{
    qpx_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->pending.resched, resched) {
        ucs_list_del(&ep->resched);
        ep->on_resched = 0;
        qpx_ep_pending_schedule(iface, ep);
    }
}


/* ep's group, descheduled, is scheduled again by the next progress of the
 * user (qpx_iface_pending_resched) */
static void qpx_ep_pending_resched_later(qpx_iface_t *iface, qpx_ep_t *ep)
{
    if (!ep->on_resched) {
        ep->on_resched   = 1;
        iface->attention = 1;
        ucs_list_add_tail(&iface->pending.resched, &ep->resched);
    }
}


ucs_arbiter_cb_result_t qpx_iface_pending_dispatch_cb(ucs_arbiter_t *arbiter,
                                                      ucs_arbiter_group_t *group,
                                                      ucs_arbiter_elem_t *elem,
                                                      void *arg)
{
    qpx_iface_t *iface     = arg;
    qpx_ep_t *ep           = ucs_container_of(group, qpx_ep_t, arb_group);
    uct_pending_req_t *req = ucs_container_of(elem, uct_pending_req_t, priv);
    ucs_status_t status;

    (void)arbiter;
    /* From the async thread only what the user added with
     * UCT_CB_FLAG_ASYNC (as UCX's ud transports' uct_ud_ep_do_pending);
     * the group waits, in order, for the user's progress, which schedules
     * it again (kept scheduled, NEXT_GROUP, a dispatch whose every group
     * waits so goes round forever) */
    if (iface->pending.async_only &&
        !(qpx_pending_priv(req)->flags & UCT_CB_FLAG_ASYNC)) {
        qpx_ep_pending_resched_later(iface, ep);
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }
    /* Interface-wide resources: the group stays scheduled, so progress
     * dispatches it again as soon as one is free */
    if (iface->ops->tx_exhausted(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    if (iface->ops->ep_tx_state(iface, ep) == QPX_EP_TX_WAIT) {
        /* The transport schedules it again when the resource returns */
        return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
    }

    /* The request may send (or flush) on ep although ep's queue, which it
     * heads, is not empty */
    iface->pending.ep = ep;
    status            = req->func(req);
    iface->pending.ep = NULL;

    if (status == UCS_OK) {
        return UCS_ARBITER_CB_RESULT_REMOVE_ELEM;
    } else if (status == UCS_INPROGRESS) {
        return UCS_ARBITER_CB_RESULT_NEXT_GROUP;
    } else if (iface->ops->tx_exhausted(iface)) {
        return UCS_ARBITER_CB_RESULT_STOP;
    }

    if (iface->ops->ep_tx_state(iface, ep) != QPX_EP_TX_WAIT) {
        /* Refused for something no completion announces (credits, a
         * buffer): the next progress schedules the group again */
        qpx_ep_pending_resched_later(iface, ep);
    }
    return UCS_ARBITER_CB_RESULT_DESCHED_GROUP;
}
