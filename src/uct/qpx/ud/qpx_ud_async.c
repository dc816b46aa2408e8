/*
 * qpx_ud async progress: a timer on the worker's async context runs the
 * reliability protocol (acks, retransmission, peer timeouts, control
 * packets) when the user has not called progress for a while, so a process
 * in a long compute phase keeps acknowledging and is not declared dead.
 *
 * Serialization follows ud_verbs: the timer's work runs with the async
 * context blocked (by the timer when nobody holds it, else by the user's
 * progress it is handed to), and every operation of such an interface
 * blocks it too. With UCX_QPX_UD_ASYNC_FENCE=y the hot ones (am_short,
 * am_bcopy, progress) exclude the timer through the interface's
 * qpx_async_fence_t instead (plain stores; the timer pays a membarrier).
 * Not the default: code of another transport that UCX's async thread runs
 * with the context blocked (UCX's ud_verbs delivers UCP's wireup messages
 * there, and UCP answers them over any lane) does not claim the fence, and
 * would run beside a user's send. The wrappers are installed in the
 * interface's own ops only when async progress is on: without it the
 * operations are the lock-free ones of qpx_ud_tl.c.
 *
 * User callbacks never run from the timer, except AM handlers registered
 * with UCT_CB_FLAG_ASYNC: other AMs and completions are queued and run by
 * the next user progress, before anything received after them.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <uct/qpx/base/qpx_async.h>

#if defined(QPX_UCX_INTERNAL_HEADERS)
#  include <ucs/time/time.h>
#endif

#include <stdlib.h>


#define QPX_UD_ASYNC_IFACE(_tl_iface) \
    ucs_derived_of(_tl_iface, qpx_ud_iface_t)

#define QPX_UD_ASYNC_EP_IFACE(_tl_ep) \
    ucs_derived_of((_tl_ep)->iface, qpx_ud_iface_t)

/* Call _func with the async context of _iface blocked, returning _type */
#define QPX_UD_ASYNC_CALL(_type, _iface, _func, ...) \
    QPX_ASYNC_CALL(_type, (_iface)->async.ctx, _func, __VA_ARGS__)

static ucs_status_t
qpx_ud_async_am_zcopy(uct_ep_h ep, uint8_t id, const void *header,
                      unsigned header_length, const uct_iov_t *iov,
                      size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_EP_IFACE(ep),
                             qpx_ud_ep_am_zcopy, ep, id, header,
                             header_length, iov, iovcnt, flags, comp);
}

static ucs_status_t qpx_ud_async_pending_add(uct_ep_h ep,
                                             uct_pending_req_t *req,
                                             unsigned flags)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_EP_IFACE(ep),
                             qpx_ep_pending_add, ep, req, flags);
}

static void qpx_ud_async_pending_purge(uct_ep_h ep,
                                       uct_pending_purge_callback_t cb,
                                       void *arg)
{
    qpx_ud_iface_t *iface = QPX_UD_ASYNC_EP_IFACE(ep);

    qpx_async_block(iface->async.ctx);
    qpx_ep_pending_purge(ep, cb, arg);
    qpx_async_unblock(iface->async.ctx);
}

static ucs_status_t qpx_ud_async_ep_flush(uct_ep_h ep, unsigned flags,
                                          uct_completion_t *comp)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_EP_IFACE(ep),
                             qpx_ud_ep_flush, ep, flags, comp);
}

static ucs_status_t qpx_ud_async_ep_check(uct_ep_h ep, unsigned flags,
                                          uct_completion_t *comp)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_EP_IFACE(ep),
                             qpx_ud_ep_check, ep, flags, comp);
}

static ucs_status_t qpx_ud_async_ep_create(const uct_ep_params_t *params,
                                           uct_ep_h *ep_p)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_IFACE(params->iface),
                             qpx_ud_ep_create, params, ep_p);
}

static void qpx_ud_async_ep_destroy(uct_ep_h ep)
{
    qpx_ud_iface_t *iface = QPX_UD_ASYNC_EP_IFACE(ep);

    qpx_async_block(iface->async.ctx);
    qpx_ud_ep_destroy(ep);
    qpx_async_unblock(iface->async.ctx);
}

static ucs_status_t
qpx_ud_async_connect_to_ep(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                           const uct_ep_addr_t *ep_addr)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_EP_IFACE(ep),
                             qpx_ud_ep_connect_to_ep, ep, dev_addr, ep_addr);
}

static ucs_status_t qpx_ud_async_iface_flush(uct_iface_h tl_iface,
                                             unsigned flags,
                                             uct_completion_t *comp)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_IFACE(tl_iface),
                             qpx_ud_iface_flush, tl_iface, flags, comp);
}

static ucs_status_t qpx_ud_async_event_arm(uct_iface_h tl_iface,
                                           unsigned events)
{
    return QPX_UD_ASYNC_CALL(ucs_status_t, QPX_UD_ASYNC_IFACE(tl_iface),
                             qpx_ud_iface_event_arm, tl_iface, events);
}

/* The user progresses this interface (its last progress is recent): the
 * timer has nothing to do. Read without the context by the async thread: a
 * torn or stale value only moves the work by one period. */
static int qpx_ud_iface_async_is_idle(qpx_ud_iface_t *iface)
{
    return (qpx_ud_time_now() -
            __atomic_load_n(&iface->async.last_progress, __ATOMIC_RELAXED)) >=
           iface->async.idle;
}

/* The timer's work handed to the user's thread: one-shot, from the
 * worker's progress (uct_worker_progress, which UCP calls whether or not it
 * progresses this interface) */
static unsigned qpx_ud_iface_async_deferred(void *arg)
{
    qpx_ud_iface_t *iface = arg;

    /* Cleared first: a timer period from now may queue another one */
    __atomic_store_n(&iface->async.deferred, 0, __ATOMIC_RELEASE);
    if (!qpx_ud_iface_async_is_idle(iface)) {
        return 0;
    }

    ++iface->async.runs;
    return qpx_ud_iface_progress_blocked(&iface->super.super.super);
}

static int qpx_ud_iface_async_is_deferred_cb(const ucs_callbackq_elem_t *elem,
                                             void *arg)
{
    return (elem->cb == qpx_ud_iface_async_deferred) && (elem->arg == arg);
}

static void qpx_ud_async_iface_close(uct_iface_h tl_iface)
{
    qpx_ud_iface_t *iface = QPX_UD_ASYNC_IFACE(tl_iface);

    /* Waits for a running timer callback: not with the context blocked.
     * Then nothing queues work any more, and what was queued goes. */
    qpx_iface_timer_stop(&iface->async.timer);
    qpx_ucx_callbackq_remove_oneshot(
            &iface->super.super.worker->super.progress_q, iface,
            qpx_ud_iface_async_is_deferred_cb, iface);
    iface->async.on = 0;
    iface->async.close(tl_iface);
}

/* The timer's work to the user's progress, once (the timer could not run
 * it: the user is inside a call) */
static void qpx_ud_iface_async_defer(qpx_ud_iface_t *iface,
                                     uct_worker_h worker)
{
    /* Only this thread sets it, only the callback clears it */
    if (!__atomic_load_n(&iface->async.deferred, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&iface->async.deferred, 1, __ATOMIC_RELAXED);
        qpx_ucx_callbackq_add_oneshot(&worker->progress_q, iface,
                                      qpx_ud_iface_async_deferred, iface);
    }
}

/*
 * Every half ASYNC_IDLE on UCX's async thread, without the context (a
 * timerfd: UCX 1.13's own timers make that thread spin up to a millisecond
 * per period, about 10% of a core at this period). The work runs with the
 * context blocked and the fence claimed. When the user holds the context,
 * or is inside a hot call, it is inside a call:
 * the work is queued to the worker's progress, one-shot, as UCX's missed
 * queue does for its own timers. Skipping it would be wrong: a user may
 * hold the context while not progressing this interface (a multi-threaded
 * UCP worker holds it in every ucp_worker_progress, UCP's sends, flushes
 * and wireup hold it too; UCP stops progressing an idle interface and the
 * hybrid polls its cold path rarely), and a peer that gets no acks
 * declares this process dead.
 */
static void qpx_ud_iface_async_timer(int id, ucs_event_set_types_t events,
                                     void *arg)
{
    qpx_ud_iface_t *iface = arg;
    uct_worker_h worker   = &iface->super.super.worker->super;

    (void)id;
    (void)events;
    if (!qpx_ud_iface_async_is_idle(iface)) {
        return;
    }

    if (!qpx_async_try_block(iface->async.ctx)) {
        qpx_ud_iface_async_defer(iface, worker);
        return;
    }
    if (!qpx_async_fence_claim(&iface->async.fence)) {
        /* A send or progress of the user is inside, without the lock */
        ++iface->async.busy;
        qpx_async_unblock(iface->async.ctx);
        qpx_ud_iface_async_defer(iface, worker);
        return;
    }

    iface->async.in_async = 1;
    qpx_ud_iface_progress_common(iface);
    if (!ucs_arbiter_is_empty(&iface->super.arbiter)) {
        /* Requests the user let run from here (UCT_CB_FLAG_ASYNC): an AM
         * handler registered with UCT_CB_FLAG_ASYNC may answer and queue
         * the rest of its answer while the user never progresses (UCX's
         * gtest am_async_response); UCP's wireup proxies are such too */
        iface->super.pending.async_only = 1;
        qpx_iface_pending_progress(&iface->super);
        iface->super.pending.async_only = 0;
    }
    iface->async.in_async = 0;
    ++iface->async.runs;
    /* A worker asleep in ucp_worker_wait: the packets and completions
     * deferred here are its to deliver, and the receive event that
     * announced them may have been consumed by this poll */
    if (qpx_ud_iface_has_deferred(iface)) {
        qpx_iface_event_signal(&iface->super);
    }
    qpx_async_fence_unclaim(&iface->async.fence);
    qpx_async_unblock(iface->async.ctx);
}

ucs_status_t qpx_ud_iface_async_init(qpx_ud_iface_t *iface,
                                     const qpx_ud_iface_config_t *config)
{
    ucs_async_context_t *ctx = iface->super.super.worker->async;
    uct_iface_ops_t *ops     = &iface->super.super.super.ops;
    ucs_status_t status;

    iface->async.rx_tail       = &iface->async.rx_head;
    iface->async.timer.fd      = -1;
    iface->async.timer.id      = -1;
    iface->async.deferred      = 0;
    iface->async.idle          = qpx_ud_time_from_sec(config->async_idle);
    iface->async.last_progress = qpx_ud_time_now();
    qpx_async_fence_init(&iface->async.fence, 0);
    if (!config->async_progress || (ctx == NULL)) {
        return UCS_OK;
    }

    /* Signal mode would run the timer on the user's thread, inside any
     * call; poll mode has no thread: progress alone serves both */
    if (!qpx_async_mode_is_thread(ctx->mode)) {
        ucs_debug("qpx_ud: async mode %d: no async progress", ctx->mode);
        return UCS_OK;
    }

    iface->async.ctx   = ctx;
    iface->async.close = ops->iface_close;
    iface->async.on    = 1;
    qpx_async_fence_init(&iface->async.fence, config->async_fence);
    /* The timer takes and gives back receive buffers: where they come from
     * another interface's pool (the hybrid's shared SRQ), that one does
     * not block this context, so the pool takes a lock */
    qpx_iface_rx_pool_lock(&iface->super);
    status = qpx_iface_timer_start(&iface->super, config->async_idle / 2,
                                   qpx_ud_iface_async_timer, iface,
                                   &iface->async.timer);
    if (status != UCS_OK) {
        iface->async.on = 0;
        return status;
    }

    if (!iface->async.fence.locked) {
        ops->ep_am_short    = qpx_ud_ep_am_short_fenced;
        ops->ep_am_bcopy    = qpx_ud_ep_am_bcopy_fenced;
        ops->iface_progress = qpx_ud_iface_progress_fenced;
    } else if (ctx->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) {
        /* UCP's workers: no test of the mode on every call */
        ops->ep_am_short    = qpx_ud_ep_am_short_spinlocked;
        ops->ep_am_bcopy    = qpx_ud_ep_am_bcopy_spinlocked;
        ops->iface_progress = qpx_ud_iface_progress_spinlocked;
    } else {
        ops->ep_am_short    = qpx_ud_ep_am_short_blocked;
        ops->ep_am_bcopy    = qpx_ud_ep_am_bcopy_blocked;
        ops->iface_progress = qpx_ud_iface_progress_blocked;
    }
    ops->ep_am_zcopy           = qpx_ud_async_am_zcopy;
    ops->ep_pending_add        = qpx_ud_async_pending_add;
    ops->ep_pending_purge      = qpx_ud_async_pending_purge;
    ops->ep_flush              = qpx_ud_async_ep_flush;
    ops->ep_check              = qpx_ud_async_ep_check;
    ops->ep_create             = qpx_ud_async_ep_create;
    ops->ep_destroy            = qpx_ud_async_ep_destroy;
    ops->ep_connect_to_ep      = qpx_ud_async_connect_to_ep;
    ops->iface_flush           = qpx_ud_async_iface_flush;
    ops->iface_event_arm       = qpx_ud_async_event_arm;
    ops->iface_close           = qpx_ud_async_iface_close;
    return UCS_OK;
}

void qpx_ud_iface_async_cleanup(qpx_ud_iface_t *iface)
{
    qpx_ud_recv_desc_t *rdesc;

    unsigned i;

    /* Not delivered: the interface goes away, like packets in its queue */
    while ((rdesc = iface->async.rx_head) != NULL) {
        iface->async.rx_head = rdesc->next;
        qpx_iface_rx_desc_put(&iface->super, rdesc);
    }
    /* Completed operations are reported, as purged ones are on close */
    for (i = iface->async.comp_head; i < iface->async.comp_count; ++i) {
        if (iface->async.comps[i].comp != NULL) {
            qpx_invoke_completion(iface->async.comps[i].comp,
                                  iface->async.comps[i].status);
        }
    }
    free(iface->async.comps);
}
