/*
 * Async progress of the RC family (qpx_rdma.h, qpx_rdma_iface_async_init):
 * what an interface needs to report UCT_IFACE_FLAG_CB_ASYNC, i.e. to call
 * an active message handler set with UCT_CB_FLAG_ASYNC "within a
 * reasonable time" when the user does not progress. UCP 1.13 takes only
 * such an interface for its auxiliary wireup lane: with it, qpx_dc wires
 * UCP's endpoints up by itself (UCX_TLS=qpx_rc,qpx_dc).
 *
 * A timer on the worker's async thread (every idle seconds, a timerfd:
 * see qpx_iface_timer_start) does nothing while the user progresses the
 * interface. Once the user has not since its last period, it blocks the
 * async context and, with it held:
 *  - polls the receive CQ: a message whose handler was set with
 *    UCT_CB_FLAG_ASYNC is delivered at once; the others go, in order, to
 *    the interface's backlog, which the user's next progress handles before
 *    anything received later (no handler of the user runs from here);
 *  - polls the send CQ while requests are outstanding: successful
 *    completions free the queues' slots (so a pending request can go), and
 *    the operations they finish wait in async.ops for the user's progress
 *    (their callbacks are the user's); an error completion and those after
 *    it go to the backlog for the user, who handles failures;
 *  - dispatches the pending requests added with UCT_CB_FLAG_ASYNC (base's
 *    async_only pass);
 *  - signals the interface's event fd if it left work for the user (a
 *    worker asleep in ucp_worker_wait, or UCP's deactivated interface, is
 *    woken for it).
 * The user's thread holds the context in every operation instead
 * (wrappers installed in the interface's ops only when async progress is
 * on), as UCX's ud_verbs does: a lock per call, paid only then.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_rdma.h"

#include <uct/qpx/base/qpx_async.h>
#include <uct/qpx/base/qpx_iface.inl>
#include <uct/qpx/base/qpx_ep_table.h>

#include <inttypes.h>


static UCS_F_ALWAYS_INLINE qpx_rdma_iface_t *
qpx_rdma_async_iface(uct_iface_h tl_iface)
{
    return ucs_derived_of(tl_iface, qpx_rdma_iface_t);
}


static UCS_F_ALWAYS_INLINE qpx_rdma_iface_t *
qpx_rdma_async_ep_iface(uct_ep_h tl_ep)
{
    return qpx_rdma_async_iface(tl_ep->iface);
}


/* An operation the timer completed, finished with the status it kept */
static void qpx_rdma_async_op_finish(qpx_op_t *op)
{
    op->cb(op, op->canceled ? UCS_ERR_CANCELED : (ucs_status_t)op->status);
}


/* The operations the timer completed, finished in order: each is taken off
 * the list before its callback, which may progress (a nested run goes on
 * from the new head) or destroy an endpoint */
static unsigned qpx_rdma_async_ops_run(qpx_rdma_iface_t *iface)
{
    unsigned count = 0;
    qpx_op_t *op;

    while (!ucs_list_is_empty(&iface->async.ops)) {
        op = ucs_list_extract_head(&iface->async.ops, qpx_op_t, list);
        qpx_rdma_async_op_finish(op);
        ++count;
    }
    return count;
}


void qpx_rdma_iface_async_ops_run_ep(qpx_rdma_iface_t *iface,
                                     uint32_t ep_id)
{
    qpx_op_t *op, *tmp;

    /* The context held by the destroy's wrapper; in the timer's round
     * too, where a handler set with UCT_CB_FLAG_ASYNC destroys an
     * endpoint (UCP's wireup replaces its auxiliary endpoint there): the
     * operations finish in the call that destroys their endpoint */
    ucs_list_for_each_safe(op, tmp, &iface->async.ops, list) {
        if (op->ep_id == ep_id) {
            ucs_list_del(&op->list);
            qpx_rdma_async_op_finish(op);
        }
    }
}


static unsigned qpx_rdma_async_iface_progress(uct_iface_h tl_iface)
{
    qpx_rdma_iface_t *iface = qpx_rdma_async_iface(tl_iface);
    unsigned count          = 0;

    qpx_async_block(iface->async.ctx);
    /* Counted, not timed (no clock read per call): the timer compares it
     * with what it saw a period before. Read by the timer without the
     * context: a stale value only moves its work by one period. */
    __atomic_store_n(&iface->async.progress_count,
                     iface->async.progress_count + 1, __ATOMIC_RELAXED);
    if (ucs_unlikely(!ucs_list_is_empty(&iface->async.ops))) {
        count += qpx_rdma_async_ops_run(iface);
    }
    count += iface->progress(tl_iface);
    qpx_async_unblock(iface->async.ctx);
    return count;
}


/* Whether the message of a receive completion has a handler that may run
 * from the async thread */
static int qpx_rdma_async_wc_is_async_am(qpx_rdma_iface_t *iface,
                                         const struct ibv_wc *wc)
{
    uint8_t am_id;

    if ((wc->status != IBV_WC_SUCCESS) ||
        (wc->byte_len < sizeof(qpx_rdma_hdr_t))) {
        return 0; /* the user's progress drops it */
    }

    am_id = qpx_iface_rx_am_id(&iface->super,
                               (qpx_desc_t*)(uintptr_t)wc->wr_id);
    return !!(iface->super.super.am[am_id].flags & UCT_CB_FLAG_ASYNC);
}


static void qpx_rdma_async_rx(qpx_rdma_iface_t *iface)
{
    qpx_iface_t *base = &iface->super;
    struct ibv_wc wc[QPX_IFACE_BACKLOG];
    int i, n;

    /* No more than the backlog can keep: the rest stays in the CQ */
    n = qpx_iface_poll_cq(base, QPX_IFACE_CQ_RX,
                          QPX_IFACE_BACKLOG - base->backlog.rx_count, wc);
    for (i = 0; i < n; ++i) {
        if (qpx_rdma_async_wc_is_async_am(iface, &wc[i])) {
            ++iface->async.stats.am_async;
            iface->tl->rx_wc(base, &wc[i], 1);
        } else {
            ++iface->async.stats.am_deferred;
            base->backlog.rx[base->backlog.rx_count++] = wc[i];
        }
    }
}


static void qpx_rdma_async_tx(qpx_rdma_iface_t *iface)
{
    qpx_iface_t *base = &iface->super;
    struct ibv_wc wc[QPX_IFACE_BACKLOG];
    int n, ok;

    /* Completions the user has not handled come first */
    if ((base->backlog.tx_count != 0) || qpx_rdma_iface_tx_is_idle(iface)) {
        return;
    }

    n = qpx_iface_poll_cq(base, QPX_IFACE_CQ_TX, QPX_IFACE_BACKLOG, wc);
    for (ok = 0; (ok < n) && (wc[ok].status == IBV_WC_SUCCESS); ++ok) {
    }
    if (ok > 0) {
        iface->tl->tx_wc(base, wc, ok);
    }
    /* A failure is the user's to handle (its error handler), and what
     * completed after it comes after it */
    memcpy(base->backlog.tx, &wc[ok], (n - ok) * sizeof(*wc));
    base->backlog.tx_count = n - ok;
}


/* The timer (UCX's async thread, without the context) */
static void qpx_rdma_async_timer(int id, ucs_event_set_types_t events,
                                 void *arg)
{
    qpx_rdma_iface_t *iface = arg;
    qpx_iface_t *base       = &iface->super;

    uint64_t count;

    (void)id;
    (void)events;
    count = __atomic_load_n(&iface->async.progress_count, __ATOMIC_RELAXED);
    if (count != iface->async.progress_seen) {
        /* The user progressed in the last period: nothing to do */
        iface->async.progress_seen = count;
        return;
    }

    if (!qpx_async_try_block(iface->async.ctx)) {
        /* The user is inside a call of this context: a progress, or an
         * operation after which it progresses; the next period looks
         * again */
        ++iface->async.stats.busy;
        return;
    }

    ++iface->async.stats.rounds;
    iface->async.in_async = 1;
    qpx_rdma_async_rx(iface);
    qpx_rdma_async_tx(iface);
    if (!ucs_arbiter_is_empty(&base->arbiter)) {
        /* Requests a handler of this round (or an earlier one) added with
         * UCT_CB_FLAG_ASYNC: UCX's gtest am_async_response, UCP's wireup
         * answers */
        base->pending.async_only = 1;
        qpx_iface_pending_progress(base);
        base->pending.async_only = 0;
    }
    iface->async.in_async = 0;

    if ((base->backlog.rx_count | base->backlog.tx_count) ||
        !ucs_list_is_empty(&iface->async.ops)) {
        base->attention = 1;
        qpx_iface_event_signal(base);
    }
    qpx_async_unblock(iface->async.ctx);
}


/*
 * The wrappers of the interface's operations (async progress on): defines
 * qpx_rdma_async_<_op>, the transport's own _op (iface->tl->ops) with the
 * async context blocked. _iface is the interface, an expression of the
 * parameters; the variadic arguments are the call's.
 */
#define QPX_RDMA_ASYNC_OP(_ret, _op, _iface, _params, ...) \
    static _ret qpx_rdma_async_##_op _params \
    { \
        qpx_rdma_iface_t *iface = (_iface); \
        return QPX_ASYNC_CALL(_ret, iface->async.ctx, iface->tl->ops->_op, \
                              __VA_ARGS__); \
    }

/* The same of a data operation: the path's (iface->path_ops: a direct
 * interface posts only through its direct operations) */
#define QPX_RDMA_ASYNC_DATA_OP(_ret, _op, _iface, _params, ...) \
    static _ret qpx_rdma_async_##_op _params \
    { \
        qpx_rdma_iface_t *iface = (_iface); \
        return QPX_ASYNC_CALL(_ret, iface->async.ctx, iface->path_ops->_op, \
                              __VA_ARGS__); \
    }

#define QPX_RDMA_ASYNC_EP_IFACE qpx_rdma_async_ep_iface(tl_ep)

QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_put_short, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, const void *buffer, unsigned length,
                   uint64_t remote_addr, uct_rkey_t rkey),
                  tl_ep, buffer, length, remote_addr, rkey)
QPX_RDMA_ASYNC_DATA_OP(ssize_t, ep_put_bcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                   uint64_t remote_addr, uct_rkey_t rkey),
                  tl_ep, pack_cb, arg, remote_addr, rkey)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_put_zcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                   uint64_t remote_addr, uct_rkey_t rkey,
                   uct_completion_t *comp),
                  tl_ep, iov, iovcnt, remote_addr, rkey, comp)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_get_bcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                   void *arg, size_t length, uint64_t remote_addr,
                   uct_rkey_t rkey, uct_completion_t *comp),
                  tl_ep, unpack_cb, arg, length, remote_addr, rkey, comp)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_get_zcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                   uint64_t remote_addr, uct_rkey_t rkey,
                   uct_completion_t *comp),
                  tl_ep, iov, iovcnt, remote_addr, rkey, comp)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_am_short, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uint8_t id, uint64_t header,
                   const void *payload, unsigned length),
                  tl_ep, id, header, payload, length)
QPX_RDMA_ASYNC_DATA_OP(ssize_t, ep_am_bcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                   void *arg, unsigned flags),
                  tl_ep, id, pack_cb, arg, flags)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_am_zcopy, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uint8_t id, const void *header,
                   unsigned header_length, const uct_iov_t *iov,
                   size_t iovcnt, unsigned flags, uct_completion_t *comp),
                  tl_ep, id, header, header_length, iov, iovcnt, flags, comp)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_atomic_cswap64, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uint64_t compare, uint64_t swap,
                   uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result,
                   uct_completion_t *comp),
                  tl_ep, compare, swap, remote_addr, rkey, result, comp)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_atomic64_post, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                   uint64_t remote_addr, uct_rkey_t rkey),
                  tl_ep, opcode, value, remote_addr, rkey)
QPX_RDMA_ASYNC_DATA_OP(ucs_status_t, ep_atomic64_fetch, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uct_atomic_op_t opcode, uint64_t value,
                   uint64_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                   uct_completion_t *comp),
                  tl_ep, opcode, value, result, remote_addr, rkey, comp)
QPX_RDMA_ASYNC_OP(ucs_status_t, ep_pending_add, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags),
                  tl_ep, req, flags)
QPX_RDMA_ASYNC_OP(ucs_status_t, ep_fence, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, unsigned flags), tl_ep, flags)
QPX_RDMA_ASYNC_OP(ucs_status_t, ep_check, QPX_RDMA_ASYNC_EP_IFACE,
                  (uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp),
                  tl_ep, flags, comp)
QPX_RDMA_ASYNC_OP(ucs_status_t, ep_create,
                  qpx_rdma_async_iface(params->iface),
                  (const uct_ep_params_t *params, uct_ep_h *ep_p),
                  params, ep_p)


/*
 * A flush the transport found done may leave operations the timer
 * completed waiting in async.ops for the user's progress (their callbacks
 * are the user's): the flush is done only after them. Without comp:
 * UCS_INPROGRESS (the user's progress runs them, a later flush returns
 * UCS_OK); with comp: an operation queued behind them completes it. UCX's
 * gtest uct_flush_test.am_zcopy_flush_ep_no_comp saw an am_zcopy's
 * completion not yet called when uct_ep_flush had returned UCS_OK.
 */
static ucs_status_t qpx_rdma_async_flush_end(qpx_rdma_iface_t *iface,
                                             ucs_status_t status,
                                             uct_completion_t *comp)
{
    qpx_tx_desc_t *desc;

    if ((status != UCS_OK) || ucs_list_is_empty(&iface->async.ops)) {
        return status;
    }
    if (comp == NULL) {
        return UCS_INPROGRESS;
    }
    desc = qpx_iface_tx_desc_get(&iface->super);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* async.ops holds several queues' operations, not ordered by sn */
    qpx_op_init(&desc->op, 0, qpx_op_comp_release, comp, QPX_EP_ID_NULL);
    desc->op.status = UCS_OK;
    ucs_list_add_tail(&iface->async.ops, &desc->op.list);
    return UCS_INPROGRESS;
}

static ucs_status_t qpx_rdma_async_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    qpx_rdma_iface_t *iface = qpx_rdma_async_ep_iface(tl_ep);
    ucs_status_t status;

    qpx_async_block(iface->async.ctx);
    status = qpx_rdma_async_flush_end(iface,
                                      iface->tl->ops->ep_flush(tl_ep, flags,
                                                               comp),
                                      comp);
    qpx_async_unblock(iface->async.ctx);
    return status;
}

static ucs_status_t qpx_rdma_async_iface_flush(uct_iface_h tl_iface,
                                               unsigned flags,
                                               uct_completion_t *comp)
{
    qpx_rdma_iface_t *iface = qpx_rdma_async_iface(tl_iface);
    ucs_status_t status;

    qpx_async_block(iface->async.ctx);
    status = qpx_rdma_async_flush_end(iface,
                                      iface->tl->ops->iface_flush(tl_iface,
                                                                  flags, comp),
                                      comp);
    qpx_async_unblock(iface->async.ctx);
    return status;
}

QPX_RDMA_ASYNC_OP(ucs_status_t, iface_fence, qpx_rdma_async_iface(tl_iface),
                  (uct_iface_h tl_iface, unsigned flags), tl_iface, flags)


/* As QPX_RDMA_ASYNC_OP, of an operation that returns nothing */
#define QPX_RDMA_ASYNC_VOID_OP(_op, _iface, _params, ...) \
    static void qpx_rdma_async_##_op _params \
    { \
        qpx_rdma_iface_t *iface = (_iface); \
        qpx_async_block(iface->async.ctx); \
        iface->tl->ops->_op(__VA_ARGS__); \
        qpx_async_unblock(iface->async.ctx); \
    }

QPX_RDMA_ASYNC_VOID_OP(ep_pending_purge, QPX_RDMA_ASYNC_EP_IFACE,
                       (uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                        void *arg),
                       tl_ep, cb, arg)
QPX_RDMA_ASYNC_VOID_OP(ep_destroy, QPX_RDMA_ASYNC_EP_IFACE, (uct_ep_h tl_ep),
                       tl_ep)


/* Operations the timer finished are the user's: it must not sleep on them */
static ucs_status_t qpx_rdma_async_event_arm(qpx_rdma_iface_t *iface,
                                             uct_iface_h tl_iface,
                                             unsigned events)
{
    if (!ucs_list_is_empty(&iface->async.ops)) {
        return UCS_ERR_BUSY;
    }
    return iface->tl->ops->iface_event_arm(tl_iface, events);
}


static ucs_status_t qpx_rdma_async_iface_event_arm(uct_iface_h tl_iface,
                                                   unsigned events)
{
    qpx_rdma_iface_t *iface = qpx_rdma_async_iface(tl_iface);

    return QPX_ASYNC_CALL(ucs_status_t, iface->async.ctx,
                          qpx_rdma_async_event_arm, iface, tl_iface, events);
}


void qpx_rdma_iface_async_init(qpx_rdma_iface_t *iface)
{
    iface->async.ctx           = NULL;
    iface->async.timer.fd      = -1;
    iface->async.timer.id      = -1;
    iface->async.progress_count = 0;
    iface->async.progress_seen  = 0;
    iface->async.in_async      = 0;
    ucs_list_head_init(&iface->async.ops);
    memset(&iface->async.stats, 0, sizeof(iface->async.stats));
}


ucs_status_t qpx_rdma_iface_async_start(qpx_rdma_iface_t *iface,
                                        double idle)
{
    ucs_async_context_t *ctx = iface->super.super.worker->async;
    uct_iface_ops_t *ops     = &iface->super.super.super.ops;
    ucs_status_t status;

    ucs_assert((iface->tl->rx_wc != NULL) && (iface->tl->tx_wc != NULL));
    /* The thread modes only: signal mode would run the timer inside any
     * call of the user's thread, poll mode has no thread */
    if ((ctx == NULL) || !qpx_async_mode_is_thread(ctx->mode)) {
        ucs_debug("%s iface %p: no async progress (async mode %d)",
                  iface->tl->name, iface, (ctx == NULL) ? -1 : (int)ctx->mode);
        return UCS_OK;
    }

    /* Before the timer: its first round may run before the start returns
     * (under valgrind it did, and blocked a NULL context) */
    iface->async.ctx = ctx;
    status = qpx_iface_timer_start(&iface->super, idle,
                                   qpx_rdma_async_timer, iface,
                                   &iface->async.timer);
    if (status != UCS_OK) {
        iface->async.ctx = NULL;
        return status;
    }

    ops->ep_put_short      = qpx_rdma_async_ep_put_short;
    ops->ep_put_bcopy      = qpx_rdma_async_ep_put_bcopy;
    ops->ep_put_zcopy      = qpx_rdma_async_ep_put_zcopy;
    ops->ep_get_bcopy      = qpx_rdma_async_ep_get_bcopy;
    ops->ep_get_zcopy      = qpx_rdma_async_ep_get_zcopy;
    ops->ep_am_short       = qpx_rdma_async_ep_am_short;
    ops->ep_am_bcopy       = qpx_rdma_async_ep_am_bcopy;
    ops->ep_am_zcopy       = qpx_rdma_async_ep_am_zcopy;
    ops->ep_atomic_cswap64 = qpx_rdma_async_ep_atomic_cswap64;
    ops->ep_atomic64_post  = qpx_rdma_async_ep_atomic64_post;
    ops->ep_atomic64_fetch = qpx_rdma_async_ep_atomic64_fetch;
    ops->ep_pending_add    = qpx_rdma_async_ep_pending_add;
    ops->ep_pending_purge  = qpx_rdma_async_ep_pending_purge;
    ops->ep_flush          = qpx_rdma_async_ep_flush;
    ops->ep_fence          = qpx_rdma_async_ep_fence;
    ops->ep_check          = qpx_rdma_async_ep_check;
    ops->ep_create         = qpx_rdma_async_ep_create;
    ops->ep_destroy        = qpx_rdma_async_ep_destroy;
    ops->iface_flush       = qpx_rdma_async_iface_flush;
    ops->iface_fence       = qpx_rdma_async_iface_fence;
    ops->iface_progress    = qpx_rdma_async_iface_progress;
    ops->iface_event_arm   = qpx_rdma_async_iface_event_arm;
    ucs_debug("%s iface %p: async progress after %.0f ms idle",
              iface->tl->name, iface, idle * 1e3);
    return UCS_OK;
}


void qpx_rdma_iface_async_stop(qpx_rdma_iface_t *iface)
{
    /* Waits for a running round: the caller must not hold the context */
    qpx_iface_timer_stop(&iface->async.timer);
    /* What the timer completed is reported, as purged operations are on
     * close */
    qpx_rdma_async_ops_run(iface);
    if (iface->async.ctx != NULL) {
        ucs_debug("%s iface %p: async rounds %" PRIu64 " (busy %" PRIu64
                  "), handlers called %" PRIu64 ", messages left to the "
                  "user %" PRIu64 ", completions %" PRIu64,
                  iface->tl->name, iface, iface->async.stats.rounds,
                  iface->async.stats.busy, iface->async.stats.am_async,
                  iface->async.stats.am_deferred, iface->async.stats.ops);
    }
}
