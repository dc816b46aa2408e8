/*
 * softverbs host-wide registry: a file in /dev/shm mapped by every process
 * that opens a soft HCA. It holds QPs, CQs, SRQs, MRs and the rings that
 * other processes write into (receive queues, completion queues).
 */
#include "sv.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

struct sv_global sv_g = { .cq_list_lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t sv_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int sv_init_done;
static int sv_init_status;

void sv_log(const char *fmt, ...)
{
    va_list ap;

    if (!sv_g.debug) {
        return;
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

uint64_t sv_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t sv_proc_start_time(int32_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    ssize_t n;
    int fd, i;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    /* field 22 (starttime) counted after the ")" closing the comm */
    p = strrchr(buf, ')');
    if (p == NULL) {
        return 0;
    }
    for (i = 2; (i < 22) && (p != NULL); i++) {
        p = strchr(p + 1, ' ');
    }
    if (p != NULL) {
        st = strtoull(p + 1, NULL, 10);
    }
    return st;
}

int sv_proc_alive(uint32_t proc, int32_t pid)
{
    struct sv_shm_proc *p = &sv_g.shm->procs[proc % SV_PROC_TBL];

    if (pid == sv_g.pid) {
        return 1;
    }
    if (pid <= 0) {
        return 0;
    }
    if (!p->in_use || (p->pid != pid)) {
        return 0;
    }
    if ((kill(pid, 0) < 0) && (errno == ESRCH)) {
        return 0;
    }
    return sv_proc_start_time(pid) == p->start_time;
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
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        cur = 0;
    }
}

void sv_atomic_unlock(void)
{
    /* release: the atomic's memory update precedes the next holder */
    __atomic_store_n(&sv_g.shm->atomic_owner, 0, __ATOMIC_RELEASE);
}

static int sv_size_class(uint64_t len)
{
    int c = 12;

    while (((uint64_t)1 << c) < len) {
        c++;
    }
    return c;
}

/*
 * A freed ring is not reused at once. A requester of another process may
 * have looked the QP or CQ up just before its owner destroyed it (or died
 * and was reaped) and still be writing a WQE or CQE into it: the in_use
 * store stops new lookups, not one in progress. Such a write into memory
 * already given to a new object of a third process corrupted its queues.
 * Freed blocks wait in FIFO order for SV_QUARANTINE_NS (far longer than a
 * request takes) before they return to their free list; when memory runs
 * short, blocks older than SV_QUARANTINE_MIN_NS are taken. The FIFO lives
 * in the registry header, not in the blocks: a late responder may still
 * advance a freed receive queue's head, the block's first word.
 */
#define SV_QUARANTINE_NS     1000000000ull
#define SV_QUARANTINE_MIN_NS 10000000ull

static void sv_shm_free_list_push(struct sv_shm_hdr *h, uint64_t off, int c)
{
    *(uint64_t *)sv_shm_ptr(off) = h->free_list[c];
    h->free_list[c] = off;
}

/* The oldest quarantined block goes to its free list */
static void sv_shm_quarantine_pop(struct sv_shm_hdr *h)
{
    uint32_t k = h->quarantine_first;

    sv_shm_free_list_push(h, h->quarantine[k].off,
                          sv_size_class(h->quarantine[k].len));
    h->quarantine_first = (k + 1) % SV_QUARANTINE_MAX;
    --h->quarantine_count;
}

/* Blocks freed at least min_age_ns ago go to their free lists */
static void sv_shm_quarantine_release(struct sv_shm_hdr *h,
                                      uint64_t min_age_ns)
{
    uint64_t now = sv_now_ns();

    while ((h->quarantine_count > 0) &&
           (now - h->quarantine[h->quarantine_first].freed_ns >=
            min_age_ns)) {
        sv_shm_quarantine_pop(h);
    }
}

/* Take the head of free list c; 0 when it is empty */
static uint64_t sv_shm_free_list_pop(struct sv_shm_hdr *h, int c)
{
    uint64_t off = h->free_list[c];

    if (off != 0) {
        h->free_list[c] = *(uint64_t *)sv_shm_ptr(off);
    }
    return off;
}

/*
 * A free block of a larger class, split down to class c: the upper halves
 * go to the free lists of the classes between. Blocks are never merged
 * again, so this keeps a registry that served many sizes from running out
 * while most of it is free.
 */
static uint64_t sv_shm_alloc_split(struct sv_shm_hdr *h, int c)
{
    uint64_t off;
    int j;

    for (j = c + 1; j < 48; j++) {
        off = sv_shm_free_list_pop(h, j);
        if (off == 0) {
            continue;
        }
        while (j > c) {
            --j;
            sv_shm_free_list_push(h, off + ((uint64_t)1 << j), j);
        }
        return off;
    }
    return 0;
}

uint64_t sv_shm_alloc(uint64_t len)
{
    struct sv_shm_hdr *h = sv_g.shm;
    int c = sv_size_class(len);
    uint64_t off, sz = (uint64_t)1 << c;

    if (c >= 48) {
        return 0;
    }
    sv_shm_quarantine_release(h, SV_QUARANTINE_NS);
    off = sv_shm_free_list_pop(h, c);
    if ((off == 0) && (h->arena_top + sz > h->arena_off + h->arena_len) &&
        (h->num_qp == 0) && (h->num_cq == 0) && (h->num_srq == 0) &&
        (h->quarantine_count == 0)) {
        /* Nothing holds arena memory (only QP, CQ and SRQ rings live
         * there, and none waits in quarantine): start the arena again
         * instead of failing */
        memset(h->free_list, 0, sizeof(h->free_list));
        h->arena_top = h->arena_off;
    }
    if ((off == 0) && (h->arena_top + sz <= h->arena_off + h->arena_len)) {
        off = h->arena_top;
        h->arena_top += sz;
        return off;
    }
    if (off == 0) {
        off = sv_shm_alloc_split(h, c);
    }
    if ((off == 0) && (h->quarantine_count > 0)) {
        /* Short of memory: take blocks that waited a little */
        sv_shm_quarantine_release(h, SV_QUARANTINE_MIN_NS);
        off = sv_shm_free_list_pop(h, c);
        if (off == 0) {
            off = sv_shm_alloc_split(h, c);
        }
    }
    if (off == 0) {
        return 0;
    }
    memset(sv_shm_ptr(off), 0, sz);
    return off;
}

void sv_shm_free(uint64_t off, uint64_t len)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t k;

    if (off == 0) {
        return;
    }
    if (h->quarantine_count == SV_QUARANTINE_MAX) {
        sv_shm_quarantine_pop(h); /* full: the oldest has waited most */
    }
    k = (h->quarantine_first + h->quarantine_count) % SV_QUARANTINE_MAX;
    h->quarantine[k].off      = off;
    h->quarantine[k].len      = len;
    h->quarantine[k].freed_ns = sv_now_ns();
    ++h->quarantine_count;
}

/*
 * Recount the live objects of each kind from the tables. The counters
 * decide the SOFTVERBS_MAX_* limits; a creator that finds a limit reached
 * calls this after reaping, so a counter that drifted (a process killed
 * between an update of an entry and of its counter) cannot refuse every
 * creation on a registry that is in fact empty. Called with the lock held.
 */
void sv_shm_recount(void)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t i, n;

    for (i = n = 0; i < SV_QP_TBL; i++) {
        n += !!h->qps[i].in_use;
    }
    h->num_qp = n;
    for (i = n = 0; i < SV_CQ_TBL; i++) {
        n += !!h->cqs[i].in_use;
    }
    h->num_cq = n;
    for (i = n = 0; i < SV_SRQ_TBL; i++) {
        n += !!h->srqs[i].in_use;
    }
    h->num_srq = n;
    for (i = n = 0; i < SV_MR_TBL; i++) {
        n += !!h->mrs[i].in_use;
    }
    h->num_mr = n;
}

/* Release every object of dead processes. Called with the lock held. */
void sv_shm_reap(void)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint8_t dead[SV_PROC_TBL];
    int any = 0;
    uint32_t i;

    for (i = 0; i < SV_PROC_TBL; i++) {
        dead[i] = h->procs[i].in_use &&
                  !sv_proc_alive(i, h->procs[i].pid);
        any |= dead[i];
    }
    if (!any) {
        return;
    }
    /* release stores of in_use below: lookups stop before the rings go
     * back to the allocator */
    for (i = 0; i < SV_QP_TBL; i++) {
        struct sv_shm_qp *q = &h->qps[i];
        if (q->in_use && dead[q->proc]) {
            __atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
            sv_shm_free(q->rq_off, q->rq_len);
            h->num_qp--;
        }
    }
    for (i = 0; i < SV_CQ_TBL; i++) {
        struct sv_shm_cq *c = &h->cqs[i];
        if (c->in_use && dead[c->proc]) {
            __atomic_store_n(&c->in_use, 0, __ATOMIC_RELEASE);
            sv_shm_free(c->ring_off, c->ring_len);
            h->num_cq--;
        }
    }
    for (i = 0; i < SV_SRQ_TBL; i++) {
        struct sv_shm_srq *s = &h->srqs[i];
        if (s->in_use && dead[s->proc]) {
            __atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
            sv_shm_free(s->ring_off, s->ring_len);
            h->num_srq--;
        }
    }
    for (i = 0; i < SV_MR_TBL; i++) {
        struct sv_shm_mr *m = &h->mrs[i];
        if (m->in_use && dead[m->proc]) {
            __atomic_store_n(&m->in_use, 0, __ATOMIC_RELEASE);
            h->num_mr--;
        }
    }
    for (i = 0; i < SV_MCAST_TBL; i++) {
        struct sv_shm_mcast *g = &h->mcast[i];
        int j, k;
        for (j = k = 0; g->in_use && (j < g->nqp); j++) {
            if (sv_shm_qp_lookup(g->qpn[j]) != NULL) {
                g->qpn[k++] = g->qpn[j];
            }
        }
        if (g->in_use) {
            g->nqp = k;
            g->in_use = (k > 0);
        }
    }
    for (i = 0; i < SV_PROC_TBL; i++) {
        if (dead[i]) {
            h->procs[i].in_use = 0;
        }
    }
}

static void sv_shm_format(struct sv_shm_hdr *h, uint64_t total, uint64_t arena)
{
    pthread_mutexattr_t ma;

    memset(h, 0, sizeof(*h));
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    h->total_len  = total;
    h->arena_off  = (sizeof(*h) + 4095) & ~4095ull;
    h->arena_len  = arena;
    h->arena_top  = h->arena_off;
    h->next_pd_id = 1;
    h->next_ctx_id = 1;
    h->next_ch_id = 1;
    /* publish: processes that find the magic see a formatted registry */
    __atomic_store_n(&h->magic, SV_MAGIC, __ATOMIC_RELEASE);
}

/* A malformed value is reported (whatever SOFTVERBS_DEBUG says: the user
 * asked for something that is not applied) and the default kept */
void sv_env_bad(const char *name, const char *value, const char *want,
                       const char *used)
{
    fprintf(stderr, "softverbs: %s='%s' is not %s; using %s\n", name, value,
            want, used);
}

static double sv_env_prob(const char *name)
{
    const char *s = getenv(name);
    char *end;
    double v;

    if (s == NULL) {
        return 0.0;
    }
    v = strtod(s, &end);
    if ((end == s) || (*end != '\0') || !(v >= 0.0) || (v > 1.0)) {
        sv_env_bad(name, s, "a probability from 0 to 1", "0");
        return 0.0;
    }
    return v;
}

uint64_t sv_env_uint(const char *name, uint64_t min, uint64_t max,
                     uint64_t def, int clamp)
{
    const char *s = getenv(name);
    unsigned long long v;
    char want[64], used[32];
    char *end;

    if (s == NULL) {
        return def;
    }
    errno = 0;
    v     = strtoull(s, &end, 0);
    if ((end != s) && (*end == '\0') && (errno == 0) && (s[0] != '-') &&
        (v >= min) && ((v <= max) || clamp)) {
        return (v > max) ? max : v;
    }
    snprintf(want, sizeof(want), "a number from %llu to %llu",
             (unsigned long long)min, (unsigned long long)max);
    snprintf(used, sizeof(used), "%llu", (unsigned long long)def);
    sv_env_bad(name, s, want, used);
    return def;
}

static void sv_atexit(void)
{
    if (sv_g.shm != NULL) {
        sv_shm_lock();
        sv_g.shm->procs[sv_g.proc].in_use = 0;
        /* our objects are now owned by a dead slot: release them */
        sv_g.shm->procs[sv_g.proc].pid = -1;
        sv_g.shm->procs[sv_g.proc].in_use = 1;
        sv_shm_reap();
        sv_shm_unlock();
    }
}

static int sv_proc_register(void);

static int sv_shm_do_init(void)
{
    const char *path = getenv(SOFTVERBS_ENV_SHM);
    const char *pol  = getenv(SOFTVERBS_ENV_CAP_POLICY);
    const char *dbg  = getenv(SOFTVERBS_ENV_DEBUG);
    uint64_t arena, total;
    struct sv_shm_hdr *h;
    struct stat st, st2;
    uint64_t magic;
    const char *c;
    int fd;

    sv_g.debug = dbg && (atoi(dbg) > 0);
    if ((dbg != NULL) && strcmp(dbg, "0") && strcmp(dbg, "1")) {
        sv_env_bad(SOFTVERBS_ENV_DEBUG, dbg, "0 or 1", sv_g.debug ? "1" : "0");
    }
    /* the arena, in MiB: 1 .. 1048576 (1 TiB) */
    arena = sv_env_uint(SOFTVERBS_ENV_SHM_MB, 1, 1u << 20, 1024, 0);
    arena <<= 20;
    total   = ((sizeof(struct sv_shm_hdr) + 4095) & ~4095ull) + arena;
    snprintf(sv_g.shm_path, sizeof(sv_g.shm_path), "%s",
             path ? path : "/dev/shm/softverbs");
    for (c = sv_g.shm_path, sv_g.shm_tag = 2166136261u; *c; c++) {
        sv_g.shm_tag = (sv_g.shm_tag ^ (uint8_t)*c) * 16777619u;
    }
    sv_g.cap_fail   = pol && !strcmp(pol, "fail");
    if ((pol != NULL) && strcmp(pol, "fail") && strcmp(pol, "clamp")) {
        sv_env_bad(SOFTVERBS_ENV_CAP_POLICY, pol, "'fail' or 'clamp'",
                   "clamp");
    }
    sv_g.max_qp     = sv_env_uint(SOFTVERBS_ENV_MAX_QP, 0, SV_QP_TBL - 1,
                                  SV_QP_TBL - 1, 1);
    sv_g.max_cq     = sv_env_uint(SOFTVERBS_ENV_MAX_CQ, 0, SV_CQ_TBL - 1,
                                  SV_CQ_TBL - 1, 1);
    sv_g.max_mr     = sv_env_uint(SOFTVERBS_ENV_MAX_MR, 0, SV_MR_TBL - 1,
                                  SV_MR_TBL - 1, 1);
    sv_g.max_srq    = sv_env_uint(SOFTVERBS_ENV_MAX_SRQ, 0, SV_SRQ_TBL - 1,
                                  SV_SRQ_TBL - 1, 1);
    sv_g.ud_drop    = sv_env_prob(SOFTVERBS_ENV_UD_DROP);
    sv_g.ud_reorder = sv_env_prob(SOFTVERBS_ENV_UD_REORDER);
    sv_g.rc_read_reorder = sv_env_prob(SOFTVERBS_ENV_RC_READ_REORDER);
    sv_g.pid        = getpid();

retry:
    fd = open(sv_g.shm_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        sv_error("open(%s) failed: %m", sv_g.shm_path);
        return errno;
    }
    fchmod(fd, 0666);
    /* serialize formatting between processes starting together */
    flock(fd, LOCK_EX);
    if (fstat(fd, &st) < 0) {
        goto err_close;
    }
    if ((uint64_t)st.st_size < sizeof(struct sv_shm_hdr)) {
        if (ftruncate(fd, total) < 0) {
            sv_error("ftruncate(%s) failed: %m", sv_g.shm_path);
            goto err_close;
        }
    } else {
        total = st.st_size;
    }
    h = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        sv_error("mmap(%s) failed: %m", sv_g.shm_path);
        goto err_close;
    }
    /* acquire: pairs with the release in sv_shm_format */
    magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if ((magic != SV_MAGIC) && (magic != 0)) {
        /* a registry of another softverbs version: leave it to the
         * processes using it and start a new file under the same path */
        sv_error("%s has another layout: replacing it", sv_g.shm_path);
        munmap(h, total);
        if ((stat(sv_g.shm_path, &st2) == 0) && (st2.st_ino == st.st_ino)) {
            unlink(sv_g.shm_path);
        }
        flock(fd, LOCK_UN);
        close(fd);
        total = ((sizeof(struct sv_shm_hdr) + 4095) & ~4095ull) + arena;
        goto retry;
    }
    if (magic == 0) {
        sv_shm_format(h, total, total - ((sizeof(*h) + 4095) & ~4095ull));
    }
    flock(fd, LOCK_UN);
    close(fd);

    sv_g.shm  = h;
    sv_g.base = (char *)h;
    if (sv_proc_register() != 0) {
        return ENOMEM;
    }
    atexit(sv_atexit);
    return 0;

err_close:
    flock(fd, LOCK_UN);
    close(fd);
    return errno ? errno : EIO;
}

static int sv_proc_register(void)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t i;

    sv_shm_lock();
    sv_shm_reap();
    for (i = 0; i < SV_PROC_TBL; i++) {
        if (!h->procs[i].in_use) {
            break;
        }
    }
    if (i == SV_PROC_TBL) {
        sv_shm_unlock();
        sv_error("too many processes attached to %s", sv_g.shm_path);
        return ENOMEM;
    }
    h->procs[i].in_use     = 1;
    h->procs[i].pid        = sv_g.pid;
    h->procs[i].start_time = sv_proc_start_time(sv_g.pid);
    sv_g.proc = i;
    sv_shm_unlock();
    return 0;
}

static void sv_atfork_child(void)
{
    /* the child is another process: its own slot, and the objects it
     * inherited stay owned by the parent */
    if (sv_g.shm != NULL) {
        sv_g.pid = getpid();
        sv_proc_register();
    }
}

int sv_shm_init(void)
{
    pthread_mutex_lock(&sv_init_lock);
    if (!sv_init_done) {
        sv_init_status = sv_shm_do_init();
        if (sv_init_status == 0) {
            sv_devices_init();
            pthread_atfork(NULL, NULL, sv_atfork_child);
        }
        sv_init_done = 1;
    }
    pthread_mutex_unlock(&sv_init_lock);
    return sv_init_status;
}

/* ---------------------------------------------------------------------
 * Event sockets
 * ------------------------------------------------------------------- */
static socklen_t sv_ev_addr(struct sockaddr_un *sun, char tag, uint32_t id)
{
    int n;

    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    /* abstract namespace: sun_path[0] == 0 */
    n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
                 "softverbs-%08x-%c-%u", sv_g.shm_tag, tag, id);
    return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

/* Returns the bound socket, or -1 with errno set */
static int sv_ev_socket(char tag, uint32_t id)
{
    struct sockaddr_un sun;
    socklen_t len = sv_ev_addr(&sun, tag, id);
    int fd, err;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sv_error("socket() failed: %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sun, len) < 0) {
        err = errno;
        if (err != EADDRINUSE) {
            sv_error("bind(%c-%u) failed: %m", tag, id);
        }
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/*
 * An event socket ('a': context, 'c': completion channel) under a fresh id
 * from the registry's counter. A name still bound by a process of an earlier
 * registry at the same path (removed and formatted again, so the counters
 * restarted) is skipped. Returns the fd and sets *id_p, or -1 with errno.
 */
int sv_ev_open(char tag, uint32_t *id_p)
{
    uint32_t *next = (tag == 'a') ? &sv_g.shm->next_ctx_id :
                     &sv_g.shm->next_ch_id;
    uint32_t id;
    int i, fd = -1;

    for (i = 0; i < 64; i++) {
        sv_shm_lock();
        id = (*next)++;
        sv_shm_unlock();
        fd = sv_ev_socket(tag, id);
        if (fd >= 0) {
            *id_p = id;
            return fd;
        }
        if (errno != EADDRINUSE) {
            return -1;
        }
    }
    sv_error("no free event socket name for '%c'", tag);
    return -1;
}

/* One unbound sender socket per process (sendto is thread-safe); a
 * per-thread socket would leak one fd per thread that ever sent */
static int sv_ev_sender(void)
{
    static int sender = -1;
    int fd, expected = -1;

    /* acquire: a socket published by another thread is fully created */
    fd = __atomic_load_n(&sender, __ATOMIC_ACQUIRE);
    if (fd >= 0) {
        return fd;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        sv_error("socket() failed: %m");
        return -1;
    }
    /* acq_rel: publish ours, or see the one another thread published */
    if (!__atomic_compare_exchange_n(&sender, &expected, fd, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        close(fd);
        return expected;
    }
    return fd;
}

void sv_ev_send(char tag, uint32_t id, const struct sv_ev_msg *msg)
{
    struct sockaddr_un sun;
    socklen_t len = sv_ev_addr(&sun, tag, id);
    int fd = sv_ev_sender();

    if (fd >= 0) {
        sendto(fd, msg, sizeof(*msg), MSG_DONTWAIT, (struct sockaddr *)&sun,
               len);
    }
}

/* An async event for the object (kind, registry index, owner's pointer) to
 * the async fd of the context ctx_id */
void sv_ev_async(uint32_t ctx_id, enum sv_ev_kind kind,
                 enum ibv_event_type type, uint32_t index, uint64_t cookie)
{
    struct sv_ev_msg msg;

    memset(&msg, 0, sizeof(msg));
    msg.kind   = kind;
    msg.type   = type;
    msg.index  = index;
    msg.cookie = cookie;
    sv_ev_send('a', ctx_id, &msg);
}

/* ---------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------- */
static void sv_stats_add_qp(struct softverbs_stats *s, struct sv_shm_qp *q)
{
    s->num_qp++;
    s->num_qp_by_type[(q->type == IBV_QPT_RC) ? 0 :
                      (q->type == IBV_QPT_UC) ? 1 :
                      (q->type == IBV_QPT_UD) ? 2 : 3]++;
    s->num_qp_by_state[(q->state < 7) ? q->state : 6]++;
}

/* One pass over the registry; st[SV_PROC_TBL] gets the host total */
static void sv_stats_collect(struct softverbs_stats *st)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t i;

    memset(st, 0, sizeof(*st) * (SV_PROC_TBL + 1));
    for (i = 0; i < SV_PROC_TBL; i++) {
        st[i].pid = h->procs[i].in_use ? h->procs[i].pid : 0;
    }
    for (i = 0; i < SV_QP_TBL; i++) {
        if (h->qps[i].in_use) {
            sv_stats_add_qp(&st[h->qps[i].proc % SV_PROC_TBL], &h->qps[i]);
            sv_stats_add_qp(&st[SV_PROC_TBL], &h->qps[i]);
        }
    }
    for (i = 0; i < SV_CQ_TBL; i++) {
        if (h->cqs[i].in_use) {
            st[h->cqs[i].proc % SV_PROC_TBL].num_cq++;
            st[SV_PROC_TBL].num_cq++;
        }
    }
    for (i = 0; i < SV_SRQ_TBL; i++) {
        if (h->srqs[i].in_use) {
            st[h->srqs[i].proc % SV_PROC_TBL].num_srq++;
            st[SV_PROC_TBL].num_srq++;
        }
    }
    for (i = 0; i < SV_MR_TBL; i++) {
        if (h->mrs[i].in_use) {
            st[h->mrs[i].proc % SV_PROC_TBL].num_mr++;
            st[h->mrs[i].proc % SV_PROC_TBL].mr_bytes += h->mrs[i].len;
            st[SV_PROC_TBL].num_mr++;
            st[SV_PROC_TBL].mr_bytes += h->mrs[i].len;
        }
    }
}

static struct softverbs_stats *sv_stats_snapshot(void)
{
    struct softverbs_stats *st;

    st = malloc(sizeof(*st) * (SV_PROC_TBL + 1));
    if (st == NULL) {
        return NULL;
    }
    sv_shm_lock();
    sv_shm_reap();
    sv_stats_collect(st);
    sv_shm_unlock();
    return st;
}

SV_EXPORT int softverbs_get_stats(uint32_t pid, struct softverbs_stats *out)
{
    struct softverbs_stats *st, s;
    uint32_t i;
    int ret;

    ret = sv_shm_init();
    if (ret != 0) {
        return ret;
    }
    st = sv_stats_snapshot();
    if (st == NULL) {
        return ENOMEM;
    }
    if (pid == 0) {
        s = st[SV_PROC_TBL];
    } else {
        memset(&s, 0, sizeof(s));
        for (i = 0; i < SV_PROC_TBL; i++) {
            if (st[i].pid == pid) {
                s = st[i];
            }
        }
    }
    s.pid = pid;
    free(st);
    *out = s;
    return 0;
}

SV_EXPORT int softverbs_get_proc_stats(struct softverbs_stats *out, int max)
{
    struct softverbs_stats *st;
    int i, n = 0, ret;

    ret = sv_shm_init();
    if (ret != 0) {
        return -ret;
    }
    st = sv_stats_snapshot();
    if (st == NULL) {
        return -ENOMEM;
    }
    for (i = 0; (i < SV_PROC_TBL) && (n < max); i++) {
        if (st[i].pid != 0) {
            out[n++] = st[i];
        }
    }
    free(st);
    return n;
}
