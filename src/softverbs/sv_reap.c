/*
 * softverbs reclaim: whether the process that owns a registry slot is
 * still alive (pid and start time), and the release of every object of
 * dead processes, with the recount of the live objects.
 */
#include "sv.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

uint64_t sv_proc_start_time(int32_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    ssize_t n;
    int dfd, fd, i;

    /* "PID/stat" opened relative to /proc, not by its absolute path:
     * qemu-user answers /proc/self/stat and /proc/<own pid>/stat itself,
     * with a starttime of its own reckoning (a few ticks off the kernel's),
     * so under qemu a process registered a start time that its peers,
     * reading the kernel's file, never matched, and each reaped the
     * other's objects as those of a dead process. Natively the same file. */
    dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        return 0;
    }
    snprintf(path, sizeof(path), "%d/stat", pid);
    fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    close(dfd);
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
    for (i = n = 0; i < SV_MW_TBL; i++) {
        n += !!h->mws[i].in_use;
    }
    h->num_mw = n;
}

/* Free an XRC domain's slot and the XRC_RECV QPs it holds; under the
 * registry lock (ibv_close_xrcd of its last handle, or the reap below) */
void sv_shm_xrcd_free(uint32_t index)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t i;

    for (i = 0; i < SV_QP_TBL; i++) {
        struct sv_shm_qp *q = &h->qps[i];
        if (q->in_use && (q->type == IBV_QPT_XRC_RECV) &&
            (q->xrcd == index + 1)) {
            __atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
            h->num_qp--;
        }
    }
    memset(&h->xrcds[index], 0, sizeof(h->xrcds[index]));
}

/* The handles of dead processes: dropped, and the domains nobody holds
 * any more freed (the kernel closes a process's handles when it exits);
 * under the registry lock, from sv_shm_reap; the domains themselves are sv_xrc.c's */
static void sv_reap_xrcds(const uint8_t *dead)
{
    struct sv_shm_xrcd *x;
    uint32_t i, p;

    for (i = 0; i < SV_XRCD_TBL; i++) {
        x = &sv_g.shm->xrcds[i];
        if (!x->in_use) {
            continue;
        }
        for (p = 0; p < SV_PROC_TBL; p++) {
            if (dead[p] && x->opens[p]) {
                x->total -= x->opens[p];
                x->opens[p] = 0;
            }
        }
        if (x->total == 0) {
            sv_shm_xrcd_free(i);
        }
    }
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
    /* the dead processes' XRC domain handles, and the domains (with their
     * XRC_RECV QPs) that no process holds any more (sv_xrc.c) */
    sv_reap_xrcds(dead);
    /* release stores of in_use below: lookups stop before the rings go
     * back to the allocator. An XRC_RECV QP belongs to its domain, not to
     * the process that created it: another may hold it (ibv_open_qp) */
    for (i = 0; i < SV_QP_TBL; i++) {
        struct sv_shm_qp *q = &h->qps[i];
        if (q->in_use && dead[q->proc] && (q->type != IBV_QPT_XRC_RECV)) {
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
    /* windows: a write of their sequence lock, so that a responder never
     * reads a half-released window (sv_mw.c); an unfinished write of a
     * dead writer is completed here */
    for (i = 0; i < SV_MW_TBL; i++) {
        struct sv_shm_mw *w = &h->mws[i];
        if (w->in_use && dead[w->proc]) {
            w->seq |= 1;
            __atomic_thread_fence(__ATOMIC_RELEASE);
            w->in_use = 0;
            w->state  = SV_MW_INVALID;
            w->len    = 0;
            __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
            h->num_mw--;
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
