/*
 * qpx hybrid: endpoints. Life (create, destroy), the pending queue that
 * holds requests while the endpoint switches paths or its path has no
 * resources, and flush, fence and check (the sub-endpoints' owners and
 * retirement are qpx_hybrid_rc.c's).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"


_Static_assert(sizeof(ucs_list_link_t) <= UCT_PENDING_REQ_PRIV_LEN,
               "a pending request links through its priv");


static UCS_F_ALWAYS_INLINE ucs_list_link_t *
qpx_hybrid_req_link(uct_pending_req_t *req)
{
    return (ucs_list_link_t*)req->priv;
}


/* ep has requests: its link joins the interface's list, unless it is in
 * one (QPX_HYBRID_EP_FLAG_PENDING) */
static void qpx_hybrid_ep_pending_link(qpx_hybrid_iface_t *iface,
                                       qpx_hybrid_ep_t *ep)
{
    if (!(ep->flags & QPX_HYBRID_EP_FLAG_PENDING)) {
        ep->flags |= QPX_HYBRID_EP_FLAG_PENDING;
        ucs_list_add_tail(&iface->pending_eps, &ep->pending_link);
    }
}


static void qpx_hybrid_ep_pending_unlink(qpx_hybrid_ep_t *ep)
{
    if (ep->flags & QPX_HYBRID_EP_FLAG_PENDING) {
        ep->flags &= ~QPX_HYBRID_EP_FLAG_PENDING;
        ucs_list_del(&ep->pending_link);
    }
}


/* tx_count reached promote_at (the slow side of qpx_hybrid_ep_count) */
void qpx_hybrid_ep_heat(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    uint64_t now;

    if ((ep->state != QPX_HYBRID_EP_COLD) ||
        (ep->flags & (QPX_HYBRID_EP_FLAG_WANT_HOT |
                      QPX_HYBRID_EP_FLAG_FAILED))) {
        ep->promote_at = UINT64_MAX;
        return;
    }

    now = qpx_hybrid_time_ns();
    if ((int64_t)(now - ep->window_start) < 0) {
        /* A window that starts later: the peer opens its RC interface
         * (QPX_HYBRID_NACK_OPENING); operations before count for nothing */
        ep->tx_count = 0;
        return;
    }
    if ((now - ep->window_start) > iface->config.promote_window) {
        /* Not within the window: a new one starts */
        ep->tx_count     = 0;
        ep->window_start = now;
        return;
    }

    ep->flags     |= QPX_HYBRID_EP_FLAG_WANT_HOT;
    ep->promote_at = UINT64_MAX;
    qpx_hybrid_ep_work(ep);
}


UCS_CLASS_INIT_FUNC(qpx_hybrid_ep_t, const uct_ep_params_t *params)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(params->iface,
                                               qpx_hybrid_iface_t);
    uct_ep_params_t dc_params;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        ucs_error("qpx: an endpoint connects to an interface address");
        return UCS_ERR_INVALID_PARAM;
    }

    if (((const uint8_t*)params->iface_addr)[0] !=
        qpx_hybrid_iface_cold_tag(iface)) {
        ucs_error("qpx: the peer's cold path is not ours (%s): unreachable",
                  iface->cold_tl);
        return UCS_ERR_UNREACHABLE;
    }

    dc_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    dc_params.iface      = iface->cold;
    dc_params.dev_addr   = params->dev_addr;
    dc_params.iface_addr = (const uct_iface_addr_t*)
                           ((const uint8_t*)params->iface_addr + 1);
    if (params->field_mask & UCT_EP_PARAM_FIELD_PATH_INDEX) {
        dc_params.field_mask |= UCT_EP_PARAM_FIELD_PATH_INDEX;
        dc_params.path_index  = params->path_index;
    }
    status = uct_ep_create(&dc_params, &self->cold_ep);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_ep_table_add(&iface->eps, self, &self->id);
    if (status != UCS_OK) {
        goto err_destroy_dc;
    }

    qpx_hybrid_peer_id(params->dev_addr, SIZE_MAX, dc_params.iface_addr,
                       iface->addr.iface_len, &self->dst);
    self->join_conn    = QPX_EP_ID_NULL;
    self->peer_join_ep = QPX_EP_ID_NULL;
    self->rc_ep     = NULL;
    self->path_ep   = self->cold_ep;
    self->tx_ep     = self->cold_ep;
    self->rma_ep    = self->cold_ep;
    self->last_used = iface->tick;
    self->hold_start = 0;
    self->peer_addr = NULL;
    self->serial    = 0;
    self->peer_conn = QPX_EP_ID_NULL;
    self->refusals  = 0;
    self->state     = QPX_HYBRID_EP_COLD;
    self->flags     = 0;
    ucs_list_head_init(&self->pending);
    ucs_list_add_tail(&iface->ep_list, &self->list);
    qpx_hybrid_ep_cool(self, 0);
    qpx_hybrid_owner_set(iface, self->cold_ep, self, QPX_HYBRID_OWNER_EP);
    ucs_debug("qpx ep %p id 0x%x: cold ep %p", self, self->id, self->cold_ep);
    qpx_hybrid_rc_open_eager(iface);
    return UCS_OK;

err_destroy_dc:
    uct_ep_destroy(self->cold_ep);
    return status;
}


UCS_CLASS_CLEANUP_FUNC(qpx_hybrid_ep_t)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(self);

    if (iface->dispatch_ep == self) {
        iface->dispatch_ep = NULL; /* tells the dispatch loop it is gone */
    }
    qpx_hybrid_ep_pending_unlink(self);
    if (self->flags & QPX_HYBRID_EP_FLAG_IN_WORK) {
        ucs_list_del(&self->work_link);
    }
    ucs_list_del(&self->list);

    if (self->flags & QPX_HYBRID_EP_FLAG_JOINED) {
        qpx_hybrid_ep_unjoin(self); /* the QP stays its connection's */
    } else if ((self->flags & QPX_HYBRID_EP_FLAG_PEER_JOINED) &&
               !(self->flags & QPX_HYBRID_EP_FLAG_FAILED) &&
               (self->rc_ep != NULL)) {
        /* The peer's endpoint sends on our QP: it keeps the pair, our QP
         * goes on as a connection of the interface */
        (void)qpx_hybrid_ep_transfer(self);
    }

    if (self->rc_ep != NULL) {
        /* The peer gives its RC QP back: told over DC (best effort; the
         * peer drains its receive CQ before it resets the QP). A peer that
         * only got our PROMOTE_REQ answers an endpoint id that is gone, and
         * is told then. */
        if (!(self->flags & QPX_HYBRID_EP_FLAG_FAILED) &&
            (self->peer_addr != NULL)) {
            qpx_hybrid_ctl_post(iface, self->peer_addr,
                                self->peer_addr + self->peer_dev_len,
                                QPX_HYBRID_CTL_RELEASE, self->id,
                                self->peer_conn, self->serial);
        }
        qpx_hybrid_owner_del(iface, self->rc_ep);
        uct_ep_destroy(self->rc_ep);
        iface->rc_in_use--;
    }
    free(self->peer_addr);
    qpx_hybrid_owner_del(iface, self->cold_ep);
    uct_ep_destroy(self->cold_ep);
    qpx_ep_table_remove(&iface->eps, self->id);
    ucs_debug("qpx ep %p id 0x%x destroyed", self, self->id);
}


UCS_CLASS_DEFINE(qpx_hybrid_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(qpx_hybrid_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(qpx_hybrid_ep_t, uct_ep_t);


/* Accepted always: the request runs at the next progress at the earliest,
 * in order after the ones before it (nothing is sent meanwhile) */
ucs_status_t qpx_hybrid_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags)
{
    qpx_hybrid_ep_t *ep       = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    ucs_list_add_tail(&ep->pending, qpx_hybrid_req_link(req));
    qpx_hybrid_ep_pending_link(iface, ep);
    ep->tx_ep  = NULL;
    ep->rma_ep = NULL;
    return UCS_OK;
}


void qpx_hybrid_ep_pending_purge(uct_ep_h tl_ep,
                                 uct_pending_purge_callback_t cb, void *arg)
{
    qpx_hybrid_ep_t *ep       = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);
    uct_pending_req_t *req;
    ucs_list_link_t *link;

    qpx_hybrid_ep_pending_unlink(ep);
    while (!ucs_list_is_empty(&ep->pending)) {
        link = ep->pending.next;
        ucs_list_del(link);
        req = ucs_container_of(link, uct_pending_req_t, priv);
        if (cb != NULL) {
            cb(req, arg);
        }
    }
    qpx_hybrid_ep_update_tx(ep);
}


/*
 * Run ep's requests in order until one is refused (UCS_INPROGRESS: kept,
 * and the next endpoint's turn, as UCX's transports do). Returns how many
 * ran, or -1 when a request destroyed the endpoint.
 *
 * A request is unlinked before its callback runs and linked back at the
 * head unless it completed: a callback that completes may free or reuse
 * it (UCP's requests go back to their pool), and may add requests, purge
 * or send on this endpoint or on others.
 */
static int qpx_hybrid_ep_pending_dispatch(qpx_hybrid_iface_t *iface,
                                          qpx_hybrid_ep_t *ep)
{
    uct_pending_req_t *req;
    ucs_list_link_t *link;
    ucs_status_t status;
    int count = 0;

    while (!ucs_list_is_empty(&ep->pending)) {
        link = ep->pending.next;
        req  = ucs_container_of(link, uct_pending_req_t, priv);
        ucs_list_del(link);

        /* The request sends through the endpoint like any caller */
        ep->tx_ep          = ep->path_ep;
        ep->rma_ep         = ep->path_ep;
        iface->dispatch_ep = ep;
        status             = req->func(req);
        if (iface->dispatch_ep != ep) {
            return -1; /* req, unless it completed, went with its ep */
        }
        iface->dispatch_ep = NULL;

        if (status == UCS_OK) {
            ++count;
            continue;
        }
        ucs_list_add_head(&ep->pending, link);
        count += (status == UCS_INPROGRESS);
        break;
    }

    if (!ucs_list_is_empty(&ep->pending)) {
        qpx_hybrid_ep_pending_link(iface, ep);
    }
    qpx_hybrid_ep_update_tx(ep);
    return count;
}


/*
 * One round over the endpoints with requests: the list is taken whole, so
 * that what the callbacks do to other endpoints (add requests, purge them,
 * destroy the endpoint) changes only this round's list, never an iterator
 * into it; an endpoint whose requests remain goes back to the interface's
 * list for the next round.
 */
unsigned qpx_hybrid_iface_pending_progress(qpx_hybrid_iface_t *iface)
{
    ucs_list_link_t round;
    qpx_hybrid_ep_t *ep;
    unsigned count = 0;
    int ret;

    ucs_list_head_init(&round);
    ucs_list_splice_tail(&round, &iface->pending_eps);
    ucs_list_head_init(&iface->pending_eps);

    while (!ucs_list_is_empty(&round)) {
        ep         = ucs_list_extract_head(&round, qpx_hybrid_ep_t,
                                           pending_link);
        ep->flags &= ~QPX_HYBRID_EP_FLAG_PENDING;
        if (!(ep->flags & QPX_HYBRID_EP_FLAG_FAILED) &&
            (ep->state != QPX_HYBRID_EP_COLD) &&
            (ep->state != QPX_HYBRID_EP_HOT)) {
            qpx_hybrid_ep_pending_link(iface, ep); /* a switch holds it */
            continue;
        }
        ret    = qpx_hybrid_ep_pending_dispatch(iface, ep);
        count += (ret < 0) ? 1 : ret;
    }
    return count;
}


/*
 * Held (a switch, requests waiting): refused, so that UCP queues the flush
 * after them. A switch flushes the old path before the new one is used, so
 * the current path's flush covers everything the endpoint sent (while a
 * promotion awaits its answer, one-sided operations and the request, all
 * on the cold path).
 */
ucs_status_t qpx_hybrid_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp)
{
    qpx_hybrid_ep_t *ep = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);

    if ((flags & UCT_FLUSH_FLAG_CANCEL) &&
        (ep->flags & QPX_HYBRID_EP_FLAG_JOINED)) {
        /* The QP is the pair's, the peer's endpoint sends on it: not failed
         * for our cancel; what we have on it completes (a plain flush) */
        if (ep->cold_ep != ep->path_ep) {
            (void)uct_ep_flush(ep->cold_ep, UCT_FLUSH_FLAG_CANCEL, NULL);
        }
        return uct_ep_flush(ep->path_ep, (ep->path_ep == ep->rc_ep) ?
                            (flags & ~UCT_FLUSH_FLAG_CANCEL) : flags, comp);
    }

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        if ((ep->rc_ep != NULL) && (ep->rc_ep != ep->path_ep)) {
            (void)uct_ep_flush(ep->rc_ep, UCT_FLUSH_FLAG_CANCEL, NULL);
        }
        if (ep->cold_ep != ep->path_ep) {
            (void)uct_ep_flush(ep->cold_ep, UCT_FLUSH_FLAG_CANCEL, NULL);
        }
        return uct_ep_flush(ep->path_ep, flags, comp);
    }

    if (ucs_unlikely(ep->rma_ep == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return uct_ep_flush(ep->rma_ep, flags, comp);
}


ucs_status_t qpx_hybrid_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    qpx_hybrid_ep_t *ep = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);

    /* A switch completes the old path before the new one is used: a fence
     * is needed within the current path only */
    return uct_ep_fence(ep->path_ep, flags);
}


ucs_status_t qpx_hybrid_ep_check(uct_ep_h tl_ep, unsigned flags,
                                 uct_completion_t *comp)
{
    qpx_hybrid_ep_t *ep = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);

    return uct_ep_check(ep->path_ep, flags, comp);
}


/*
 * uct_ep_invalidate: a transport error, emulated (UCX's tests of error
 * handling and UCP's failover call it). The error is the current path's:
 * its sub-endpoint is invalidated, and its failure reaches this endpoint
 * as a real one would (qpx_hybrid_sub_ep_failed), with its operations and
 * pending requests ending with the sub-endpoint's error. During a switch
 * that is the old path, which the switch does not leave once the endpoint
 * has failed.
 */
ucs_status_t qpx_hybrid_ep_invalidate(uct_ep_h tl_ep,
                                      qpx_ep_invalidate_arg_t arg)
{
    qpx_hybrid_ep_t *ep = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);

    if (ep->flags & QPX_HYBRID_EP_FLAG_FAILED) {
        return UCS_OK; /* failed already: reported */
    }
    ucs_assert(ep->path_ep != NULL);
    ucs_debug("qpx ep %p (id %u): invalidated, %s path %p", ep, ep->id,
              (ep->path_ep == ep->cold_ep) ? "cold" : "RC", ep->path_ep);
    return uct_ep_invalidate(ep->path_ep, arg);
}


/* uct_ep_is_connected: the peer of the cold path (the hybrid's address is
 * its cold interface's, behind a tag; a hot endpoint keeps its cold one) */
int qpx_hybrid_ep_is_connected(const uct_ep_h tl_ep,
                               const uct_ep_is_connected_params_t *params)
{
    const uint64_t need       = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                                UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    qpx_hybrid_ep_t *ep       = ucs_derived_of(tl_ep, qpx_hybrid_ep_t);
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                               qpx_hybrid_iface_t);
    uct_ep_is_connected_params_t cold_params;
    const uint8_t *p;

    if ((params->field_mask & need) != need) {
        return 0;
    }

    p = (const uint8_t*)params->iface_addr;
    if (p[0] != qpx_hybrid_iface_cold_tag(iface)) {
        return 0;
    }

    cold_params.field_mask  = need;
    cold_params.device_addr = params->device_addr;
    cold_params.iface_addr  = (const uct_iface_addr_t*)(p + 1);
    cold_params.ep_addr     = NULL;
    return qpx_ucx_ep_is_connected(ep->cold_ep, &cold_params);
}
