/*
 * qpx hybrid: the sub-endpoints' bookkeeping. RC endpoints had from the
 * RC interface's pool of QPs (the interface opened by the first, a failure
 * said once and followed by a back-off), the interface's opening for a
 * peer's promotion deferred until the peer was answered, the owner each
 * sub-endpoint's errors are reported to, and the retirement of
 * sub-endpoints: destroyed once they have nothing in flight, their RC QPs
 * back to the pool.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <uct/qpx/base/qpx_iface.h>


/* The RC interface or an RC QP could not be had at now: said once per
 * interface (endpoints stay on the cold path meanwhile), and nothing is
 * tried again before a wait, doubled while it keeps failing */
static void qpx_hybrid_rc_failed(qpx_hybrid_iface_t *iface,
                                 ucs_status_t status, uint64_t now)
{
    const char *what = iface->sub_exhausted;

    if (!iface->rc_warned) {
        ucs_warn("qpx: %s: no RC %s for a promotion (%s%s%s): endpoints "
                 "stay on %s until one can be had", iface->open_args.dev_name,
                 (iface->rc == NULL) ? "interface" : "QP",
                 (what != NULL) ? "no " : "",
                 (what != NULL) ? what : ucs_status_string(status),
                 (what != NULL) ? " left on the device" : "", iface->cold_tl);
        iface->rc_warned = 1;
    }
    iface->stats.rc_failures++;
    iface->rc_backoff  = ucs_min(ucs_max(iface->rc_backoff * 2,
                                         QPX_HYBRID_RC_BACKOFF_MIN_NS),
                                 QPX_HYBRID_RC_BACKOFF_MAX_NS);
    iface->rc_retry_at = now + iface->rc_backoff;
}


/*
 * UCX_QPX_RC_OPEN_EAGER: the RC interface opens at the interface's first
 * endpoint, tried once. Not at the interface's open: there it took the CQs
 * that ranks starting later needed for their cold paths (8 ranks under a
 * device limit of 16 CQs: two ranks' workers could not be created). A
 * process's cold path opens with its worker, and an MPI job's ranks all
 * have their workers before any of them creates an endpoint (their
 * addresses are exchanged first). One that finds no room leaves the RC
 * interface to the first promotion, as without the option.
 */
void qpx_hybrid_rc_open_eager(qpx_hybrid_iface_t *iface)
{
    ucs_status_t status;

    if (ucs_likely(!iface->rc_eager_due)) {
        return;
    }
    iface->rc_eager_due = 0;
    if (!iface->rc_avail || (iface->rc != NULL) ||
        (iface->config.pool_size == 0)) {
        return;
    }

    iface->sub_exhausted = NULL;
    status = qpx_hybrid_iface_rc_open(iface);
    if (status != UCS_OK) {
        ucs_debug("qpx: %s: no RC interface at the first endpoint (%s): it "
                  "opens at the first promotion", iface->open_args.dev_name,
                  (iface->sub_exhausted != NULL) ? iface->sub_exhausted :
                  ucs_status_string(status));
    }
}


ucs_status_t qpx_hybrid_rc_ep_create(qpx_hybrid_iface_t *iface,
                                     uct_ep_h *ep_p)
{
    uint64_t now = qpx_hybrid_time_ns();
    uct_ep_params_t params;
    qpx_iface_t *rc_iface;
    ucs_status_t status;
    unsigned room;

    if (now < iface->rc_retry_at) {
        return UCS_ERR_NO_RESOURCE; /* the last one failed a moment ago */
    }

    iface->sub_exhausted = NULL;
    status = (iface->rc != NULL) ? UCS_OK : qpx_hybrid_iface_rc_open(iface);
    if (status == UCS_OK) {
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        params.iface      = iface->rc;
        status            = uct_ep_create(&params, ep_p);
    }
    if (status != UCS_OK) {
        qpx_hybrid_rc_failed(iface, status, now);
        return status;
    }
    iface->rc_backoff = 0;
    rc_iface          = iface->rc_core;

    /* Its QP was created, none waited in RESET: the next ones of the batch
     * are created now, within the pool, unless QPs ran out before */
    room = (iface->config.pool_size > iface->rc_in_use + 1) ?
           iface->config.pool_size - iface->rc_in_use - 1 : 0;
    if ((rc_iface->qp_pool.count == 0) && !iface->rc_warned) {
        (void)qpx_iface_qp_prefill(rc_iface,
                                   ucs_min(iface->config.pool_batch - 1,
                                           room));
    }
    return UCS_OK;
}


int qpx_hybrid_rc_opening(qpx_hybrid_iface_t *iface)
{
    if ((iface->rc != NULL) || (qpx_hybrid_time_ns() < iface->rc_retry_at)) {
        return 0; /* open, or it failed a moment ago: a QP is asked for */
    }
    iface->rc_open_due = 1;
    return 1;
}


void qpx_hybrid_rc_open_due(qpx_hybrid_iface_t *iface)
{
    ucs_status_t status;

    iface->rc_open_due = 0;
    if (iface->rc != NULL) {
        return;
    }
    iface->sub_exhausted = NULL;
    status = qpx_hybrid_iface_rc_open(iface);
    if (status != UCS_OK) {
        qpx_hybrid_rc_failed(iface, status, qpx_hybrid_time_ns());
        return;
    }
    iface->rc_backoff = 0;
    ucs_debug("qpx iface %p: RC interface opened for a peer's promotion, "
              "which asks again", iface);
}


void qpx_hybrid_owner_set(qpx_hybrid_iface_t *iface, uct_ep_h sub_ep,
                          void *owner, int kind)
{
    khiter_t it;
    int ret;

    it = kh_put(qpx_hybrid_owner, &iface->owners, (uintptr_t)sub_ep, &ret);
    if (ret < 0) {
        /* Without the entry an error of sub_ep is not reported to its
         * endpoint: logged, the endpoint still works */
        ucs_error("qpx iface %p: no memory to track sub-endpoint %p", iface,
                  sub_ep);
        return;
    }
    ucs_assert(!((uintptr_t)owner & QPX_HYBRID_OWNER_MASK));
    kh_value(&iface->owners, it) = (uintptr_t)owner | kind;
}


void qpx_hybrid_owner_del(qpx_hybrid_iface_t *iface, uct_ep_h sub_ep)
{
    khiter_t it = kh_get(qpx_hybrid_owner, &iface->owners, (uintptr_t)sub_ep);

    if (it != kh_end(&iface->owners)) {
        kh_del(qpx_hybrid_owner, &iface->owners, it);
    }
}


void qpx_hybrid_retire(qpx_hybrid_iface_t *iface, uct_ep_h ep, int is_rc,
                       unsigned flags)
{
    qpx_hybrid_retired_t *r = malloc(sizeof(*r));

    qpx_hybrid_owner_del(iface, ep);
    if (r == NULL) {
        /* Destroyed at once: what it had in flight is canceled */
        ucs_warn("qpx iface %p: no memory to retire ep %p: destroyed now",
                 iface, ep);
        uct_ep_destroy(ep);
        iface->rc_in_use -= !!is_rc;
        return;
    }
    iface->rc_retiring += !!is_rc;
    r->ep       = ep;
    r->is_rc    = is_rc;
    r->drain_rx = !!(flags & QPX_HYBRID_RETIRE_DRAIN_RX);
    r->drop_rx  = !!(flags & QPX_HYBRID_RETIRE_DROP_RX);
    r->deadline = qpx_hybrid_time_ns() + QPX_HYBRID_RETIRE_TIMEOUT_NS;
    ucs_list_add_tail(&iface->retired, &r->list);
    if (r->drop_rx) {
        /* The drain below must not hand over what came after the held
         * messages that were dropped: a later message before the earlier
         * ones of the cold path that never came */
        qpx_hybrid_owner_set(iface, ep, r, QPX_HYBRID_OWNER_DROP);
        qpx_hybrid_rx_holds_add(iface);
    }
}


/* r is out of the list: its endpoint destroyed, r freed */
void qpx_hybrid_retired_destroy(qpx_hybrid_iface_t *iface,
                                qpx_hybrid_retired_t *r)
{
    if (r->drop_rx) {
        qpx_hybrid_owner_del(iface, r->ep);
        qpx_hybrid_rx_holds_remove(iface);
    }
    uct_ep_destroy(r->ep);
    iface->rc_in_use   -= !!r->is_rc;
    iface->rc_retiring -= !!r->is_rc;
    free(r);
}


/* Destroy retired sub-endpoints that have nothing in flight. An RC QP a
 * peer sent to is reset only after the RC interface's receive CQ was
 * drained: messages it received before are delivered, not dropped */
unsigned qpx_hybrid_iface_retire_progress(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_retired_t *r, *tmp;
    unsigned count = 0, rounds;
    ucs_status_t status;

    ucs_list_for_each_safe(r, tmp, &iface->retired, list) {
        if (r->drain_rx && (iface->rc != NULL)) {
            for (rounds = 0; (rounds < 64) &&
                             (uct_iface_progress(iface->rc) > 0); ++rounds) {
            }
            r->drain_rx = 0;
        }
        status = uct_ep_flush(r->ep, 0, NULL);
        if ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) {
            if (qpx_hybrid_time_ns() < r->deadline) {
                continue;
            }
            ucs_debug("qpx iface %p: retired %s ep %p not flushed in %llu s: "
                      "destroyed", iface, r->is_rc ? "RC" : "cold", r->ep,
                      QPX_HYBRID_RETIRE_TIMEOUT_NS / 1000000000ull);
        }
        ucs_list_del(&r->list);
        qpx_hybrid_retired_destroy(iface, r);
        ++count;
    }
    return count;
}
