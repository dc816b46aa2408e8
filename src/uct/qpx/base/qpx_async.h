/*
 * Blocking UCX's async context (a worker's), as UCS_ASYNC_BLOCK and
 * UCS_ASYNC_UNBLOCK do in UCX's own transports; those macros are not in
 * the installed headers. Handlers that UCX's async thread runs for a
 * context (timers, event fds) run with the context blocked, so code that
 * shares state with them blocks it around the shared part. Recursive: the
 * async thread or the user may already hold it.
 */
#ifndef QPX_ASYNC_H_
#define QPX_ASYNC_H_

#include <ucs/ucx_compat.h>

#if defined(QPX_UCX_INTERNAL_HEADERS)
#  include <ucs/async/async.h>
#  include <ucs/async/async_int.h>
#endif


/* The modes qpx can block: the thread modes, and poll mode (no thread, a
 * counter). Signal mode runs handlers inside any call of the user's
 * thread; nothing in qpx supports it */
static inline int qpx_async_mode_is_supported(ucs_async_mode_t mode)
{
    return (mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) ||
           (mode == UCS_ASYNC_MODE_THREAD_MUTEX) ||
           (mode == UCS_ASYNC_MODE_POLL);
}


static UCS_F_ALWAYS_INLINE void qpx_async_block(ucs_async_context_t *async)
{
    /* The spinlock mode (UCP's and ucx_perftest's workers) inline, as
     * UCS_ASYNC_BLOCK does, instead of a call through the mode's ops into
     * libucs on every operation */
    if (ucs_likely(async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK)) {
        ucs_recursive_spin_lock(&async->thread.spinlock);
    } else if (async->mode == UCS_ASYNC_MODE_THREAD_MUTEX) {
        while (!ucs_async_thread_mutex_ops.context_try_block(async)) {
            /* pause: spin politely while a handler runs */
            __builtin_ia32_pause();
        }
    } else {
        ++async->poll_block;
    }
}


/* Block the context if nobody else holds it: 1 when blocked (unblock it
 * after), 0 when another thread is inside (a user call, or a handler).
 * Poll mode has no other thread: it always blocks. */
static inline int qpx_async_try_block(ucs_async_context_t *async)
{
    if (async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) {
        return ucs_recursive_spin_trylock(&async->thread.spinlock);
    } else if (async->mode == UCS_ASYNC_MODE_THREAD_MUTEX) {
        return ucs_async_thread_mutex_ops.context_try_block(async);
    }

    ++async->poll_block;
    return 1;
}


static UCS_F_ALWAYS_INLINE void qpx_async_unblock(ucs_async_context_t *async)
{
    if (ucs_likely(async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK)) {
        ucs_recursive_spin_unlock(&async->thread.spinlock);
    } else if (async->mode == UCS_ASYNC_MODE_THREAD_MUTEX) {
        ucs_async_thread_mutex_ops.context_unblock(async);
    } else {
        --async->poll_block;
    }
}

#endif
