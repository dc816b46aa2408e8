/*
 * softverbs' ground floor: the process's state (sv_g), the one logger, the
 * clocks and the registry's locks. Every other file of libibverbs calls
 * down to these; they call nothing of softverbs', so that the registry
 * (sv_shm.c), the reclaim of dead processes (sv_reap.c) and the settings
 * (sv_env.c) can stand above them and below the objects.
 */
#include "sv.h"

#include <stdarg.h>
#include <signal.h>
#include <sched.h>
#include <time.h>

struct sv_global sv_g = { .cq_list_lock = PTHREAD_MUTEX_INITIALIZER };



SV_EXPORT void softverbs_log(int level, const char *fmt, ...)
{
    va_list ap;

    if ((level == SV_LOG_DEBUG) && !sv_g.debug) {
        return;
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static uint64_t sv_clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t sv_now_ns(void)
{
    return sv_clock_ns(CLOCK_MONOTONIC);
}

/* The time as of the kernel's last tick (1 to 4 ms old): read from the vDSO
 * page without the clock source, for checks that run on every request */
uint64_t sv_now_coarse_ns(void)
{
    return sv_clock_ns(CLOCK_MONOTONIC_COARSE);
}

static void sv_mutex_lock(pthread_mutex_t *m)
{
    int ret = pthread_mutex_lock(m);

    if (ret == EOWNERDEAD) {
        /* the holder died: registry updates are single stores or are
         * re-validated by sv_shm_reap(), so the state is usable */
        pthread_mutex_consistent(m);
    }
}

/* A robust lock of the registry other than its main one */
void sv_shm_mutex_lock(pthread_mutex_t *m)
{
    sv_mutex_lock(m);
}

void sv_shm_lock(void)
{
    sv_mutex_lock(&sv_g.shm->lock);
}

void sv_shm_unlock(void)
{
    pthread_mutex_unlock(&sv_g.shm->lock);
}

/*
 * Remote atomics take a host-wide spinlock held for two process_vm calls.
 * A sleeping mutex would make the peer that polls for the result and
 * answers at once sleep and be woken by a futex, costing a scheduler
 * wakeup per operation. A holder that died is detected by its pid.
 */
void sv_atomic_lock(void)
{
    int32_t *owner = &sv_g.shm->atomic_owner;
    int32_t cur = 0;
    unsigned spins = 0;

    /* acquire: the previous holder's memory update is visible to us */
    while (!__atomic_compare_exchange_n(owner, &cur, sv_g.pid, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        ++spins;
        if (((spins & 0xfff) == 0) && (kill(cur, 0) < 0) &&
            (errno == ESRCH)) {
            /* the holder died with the lock: take it over */
            if (__atomic_compare_exchange_n(owner, &cur, sv_g.pid, 0,
                                            __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                return;
            }
        } else if (spins > 256) {
            /* the holder may be preempted (more runnable processes than
             * cores): give it the CPU instead of spinning its time slice */
            sched_yield();
        }
        /* the CPU's spin-wait hint where there is one (x86 PAUSE, Arm
         * YIELD); the loop is correct without it */
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
        cur = 0;
    }
}

void sv_atomic_unlock(void)
{
    /* release: the atomic's memory update precedes the next holder */
    __atomic_store_n(&sv_g.shm->atomic_owner, 0, __ATOMIC_RELEASE);
}
