/*
 * softverbs host-wide registry: a file in /dev/shm mapped by every process
 * that opens a soft HCA. It holds QPs, CQs, SRQs, MRs and the rings that
 * other processes write into (receive queues, completion queues).
 *
 * This file: the registry file and its format. Opening, sizing and mapping
 * the file, formatting the header, replacing a registry of another layout
 * (the magic), and this process's slot (attach, exit, fork). The locks,
 * clocks and logger are in sv_core.c, the arena allocator in
 * sv_shm_alloc.c, the reclaim of dead processes' objects in sv_reap.c,
 * event sockets in sv_event.c, statistics in sv_stats_api.c and the
 * SOFTVERBS_* settings in sv_env.c.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

static pthread_mutex_t sv_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int sv_init_done;
static int sv_init_status;
static void (*sv_init_hook)(void);

static void sv_shm_format(struct sv_shm_hdr *h, uint64_t total, uint64_t arena)
{
    pthread_mutexattr_t ma;

    memset(h, 0, sizeof(*h));
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->lock, &ma);
    pthread_mutex_init(&h->ev_spill.lock, &ma);
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
    uint64_t arena, total;
    struct sv_shm_hdr *h;
    struct stat st, st2;
    uint64_t magic;
    int fd;

    arena    = sv_env_init();
    total    = ((sizeof(struct sv_shm_hdr) + 4095) & ~4095ull) + arena;
    sv_g.pid = getpid();
    sv_mem_allow_peers();

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
    /* a dead process's holds do not pass to the slot's next one */
    memset(h->procs[i].mr_hold, 0, sizeof(h->procs[i].mr_hold));
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
        sv_mem_allow_peers();
        sv_proc_register();
    }
}

/*
 * The layer above the registry (the devices, sv_devices.c) has its own setup
 * to do once the registry is attached. It registers it here, from a
 * constructor, so that the registry never calls into device code. The hook
 * runs once, under sv_init_lock, before sv_shm_init() returns to anyone.
 */
void sv_shm_set_init_hook(void (*hook)(void))
{
    pthread_mutex_lock(&sv_init_lock);
    sv_init_hook = hook;
    pthread_mutex_unlock(&sv_init_lock);
}

int sv_shm_init(void)
{
    pthread_mutex_lock(&sv_init_lock);
    if (!sv_init_done) {
        sv_init_status = sv_shm_do_init();
        if (sv_init_status == 0) {
            if (sv_init_hook != NULL) {
                sv_init_hook();
            }
            pthread_atfork(NULL, NULL, sv_atfork_child);
        }
        sv_init_done = 1;
    }
    pthread_mutex_unlock(&sv_init_lock);
    return sv_init_status;
}
