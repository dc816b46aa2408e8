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

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>


/* A spin-wait's pause: the CPU's hint that this is a busy loop (x86
 * PAUSE, Arm YIELD), nothing where there is none */
static UCS_F_ALWAYS_INLINE void qpx_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}


/* The modes with a thread of their own, which runs handlers beside the
 * user's calls (what an async timer of qpx needs) */
static inline int qpx_async_mode_is_thread(ucs_async_mode_t mode)
{
    return (mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) ||
           (mode == UCS_ASYNC_MODE_THREAD_MUTEX);
}


/* The modes qpx can block: the thread modes, and poll mode (no thread, a
 * counter). Signal mode runs handlers inside any call of the user's
 * thread; nothing in qpx supports it */
static inline int qpx_async_mode_is_supported(ucs_async_mode_t mode)
{
    return qpx_async_mode_is_thread(mode) || (mode == UCS_ASYNC_MODE_POLL);
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
            qpx_cpu_relax(); /* spin politely while a handler runs */
        }
    } else {
        ++async->poll_block;
    }
}


/* _func(...) with the async context _async blocked, an expression of type
 * _type: the operations of an interface whose async progress shares its
 * state (qpx_ud's wrappers, the RC family's) */
#define QPX_ASYNC_CALL(_type, _async, _func, ...) \
    ({ \
        ucs_async_context_t *_qpx_async = (_async); \
        _type _qpx_ret; \
        qpx_async_block(_qpx_async); \
        _qpx_ret = _func(__VA_ARGS__); \
        qpx_async_unblock(_qpx_async); \
        _qpx_ret; \
    })


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


/*
 * Excluding the async thread from a user's hot call without the context's
 * lock (an atomic read-modify-write and a pthread_self() per send):
 * Dekker's exclusion with the expensive barrier on the rare side. The
 * user's call marks itself busy and reads claim with plain accesses and a
 * compiler barrier; the async thread, before it works, raises claim and
 * runs membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full memory
 * barrier on every CPU that runs a thread of this process, then reads
 * busy. Either it sees the user inside (and hands its work to the user's
 * progress, as when the lock is taken), or the user's call sees claim and
 * takes the context's lock, which the async thread holds while it works.
 * Without membarrier (a kernel before 4.14, a seccomp filter), or when
 * the user turns it off, claim stays high: every call takes the lock.
 * Only the async code that claims is excluded: what UCX's async thread
 * runs for others with the context blocked (another transport's handlers,
 * UCP's code they call) is not, so a user of the fence must know that no
 * such code calls it.
 */
typedef struct qpx_async_fence {
    unsigned busy;   /* user calls inside (nested: an AM handler sends);
                        written by the user's thread only */
    int      claim;  /* the async thread works, or is about to */
    int      locked; /* no membarrier: claim is always high */
    uint64_t blocked; /* calls that took the lock (statistics) */
} qpx_async_fence_t;


/* Use membarrier if enable and the kernel lets this process register for
 * it (repeated, a no-op), else the lock */
static inline void qpx_async_fence_init(qpx_async_fence_t *fence, int enable)
{
    fence->busy    = 0;
    fence->locked  = 1;
    fence->blocked = 0;
    if (enable) {
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                    0, 0) == 0) {
            fence->locked = 0;
        } else {
            ucs_debug("membarrier(REGISTER_PRIVATE_EXPEDITED) failed: %m");
        }
    }
    fence->claim = fence->locked;
}


/* busy up and down by the user's thread, its only writer. On x86 a plain
 * read-modify-write of memory (one instruction) is enough: the hardware
 * keeps stores in order (TSO), so the decrement is a release; elsewhere
 * atomic stores give the ordering */
static UCS_F_ALWAYS_INLINE void
qpx_async_fence_busy_inc(qpx_async_fence_t *fence)
{
#if defined(__x86_64__) || defined(__i386__)
    ++fence->busy; /* stored before the claim is read: the fence after */
#else
    __atomic_store_n(&fence->busy, fence->busy + 1, __ATOMIC_RELAXED);
#endif
}

static UCS_F_ALWAYS_INLINE void
qpx_async_fence_busy_dec(qpx_async_fence_t *fence)
{
#if defined(__x86_64__) || defined(__i386__)
    /* Compiler barrier: the call's stores stay before the decrement */
    __atomic_signal_fence(__ATOMIC_RELEASE);
    --fence->busy;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* not sunk into a later call */
#else
    __atomic_store_n(&fence->busy, fence->busy - 1, __ATOMIC_RELEASE);
#endif
}


/* A user's call enters: 0 without the lock, 1 with the context blocked
 * (the async thread claimed it); give it to qpx_async_fence_leave. The
 * async thread's own calls (an AM handler flagged async that sends) see
 * claim at once and never write busy, so the user's thread is its only
 * writer. */
static UCS_F_ALWAYS_INLINE int
qpx_async_fence_enter(qpx_async_fence_t *fence, ucs_async_context_t *async)
{
    if (ucs_likely(!__atomic_load_n(&fence->claim, __ATOMIC_RELAXED))) {
        qpx_async_fence_busy_inc(fence);
        /* The light half of the barrier: the store above is ordered
         * before the load below by the async thread's membarrier(); the
         * compiler must not reorder them either */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (ucs_likely(!__atomic_load_n(&fence->claim, __ATOMIC_ACQUIRE))) {
            return 0;
        }
        qpx_async_fence_busy_dec(fence);
    }

    qpx_async_block(async);
    ++fence->blocked;
    return 1;
}


static UCS_F_ALWAYS_INLINE void
qpx_async_fence_leave(qpx_async_fence_t *fence, ucs_async_context_t *async,
                      int blocked)
{
    if (ucs_unlikely(blocked)) {
        qpx_async_unblock(async);
        return;
    }
    /* Release: what the call wrote is visible before the async thread can
     * see it out */
    qpx_async_fence_busy_dec(fence);
}


/*
 * The async thread, holding the context (qpx_async_try_block): 1 when no
 * user's call is inside and none enters without the lock until
 * qpx_async_fence_unclaim; 0 when one is inside (nothing claimed then).
 */
static inline int qpx_async_fence_claim(qpx_async_fence_t *fence)
{
    if (fence->locked) {
        return 1; /* every call takes the context, which this thread has */
    }

    __atomic_store_n(&fence->claim, 1, __ATOMIC_RELAXED);
    /* The heavy half: a full barrier on every CPU running this process */
    if ((syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ==
         0) &&
        (__atomic_load_n(&fence->busy, __ATOMIC_ACQUIRE) == 0)) {
        return 1;
    }

    __atomic_store_n(&fence->claim, 0, __ATOMIC_RELEASE);
    return 0;
}


static inline void qpx_async_fence_unclaim(qpx_async_fence_t *fence)
{
    if (fence->locked) {
        return;
    }
    /* Release: the async thread's work is visible to a call that then
     * sees claim low */
    __atomic_store_n(&fence->claim, 0, __ATOMIC_RELEASE);
}

#endif
