/*
 * softverbs statistics: softverbs_get_stats() and
 * softverbs_get_proc_stats(), the objects of the registry counted per
 * process and for the host (read by softverbs-stat, sv_stat.c).
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

static void sv_stats_add_qp(struct softverbs_stats *s, struct sv_shm_qp *q)
{
    enum ibv_qp_state st = sv_qp_state(q); /* read once */

    s->num_qp++;
    s->num_qp_by_type[(q->type == IBV_QPT_RC) ? 0 :
                      (q->type == IBV_QPT_UC) ? 1 :
                      (q->type == IBV_QPT_UD) ? 2 : 3]++;
    s->num_qp_by_state[(st < 7) ? st : 6]++;
    if (q->type == SV_QPT_DCI) {
        s->num_dci++;
        /* relaxed: counters, written without the registry lock */
        s->dc_switches += __atomic_load_n(&q->dc_switches, __ATOMIC_RELAXED);
    } else if (q->type == SV_QPT_DCT) {
        s->num_dct++;
        s->dc_key_violations += __atomic_load_n(&q->dc_key_violations,
                                                __ATOMIC_RELAXED);
    }
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

/* the versions of softverbs_get_stats and softverbs_get_proc_stats, bound
 * by .symver below (default visibility for that; the version script keeps
 * only the public names) */
SV_EXPORT int sv_get_stats_1_1(uint32_t pid, struct softverbs_stats *out);
SV_EXPORT int sv_get_stats_1_0(uint32_t pid, void *out);
SV_EXPORT int sv_get_proc_stats_1_1(struct softverbs_stats *out, int max);
SV_EXPORT int sv_get_proc_stats_1_0(void *out, int max);

SV_EXPORT int sv_get_stats_1_1(uint32_t pid, struct softverbs_stats *out)
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

SV_EXPORT int sv_get_proc_stats_1_1(struct softverbs_stats *out, int max)
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

/*
 * SOFTVERBS_1.0's structure is the prefix of 1.1's up to mr_bytes: programs
 * linked against 1.0 bind the @SOFTVERBS_1.0 versions, which write that
 * much per entry (the default, @@SOFTVERBS_1.1, writes the whole).
 */
#define SV_STATS_1_0_SIZE offsetof(struct softverbs_stats, num_dci)

__asm__(".symver sv_get_stats_1_1, softverbs_get_stats@@SOFTVERBS_1.1");
__asm__(".symver sv_get_stats_1_0, softverbs_get_stats@SOFTVERBS_1.0");
__asm__(".symver sv_get_proc_stats_1_1, softverbs_get_proc_stats@@SOFTVERBS_1.1");
__asm__(".symver sv_get_proc_stats_1_0, softverbs_get_proc_stats@SOFTVERBS_1.0");

SV_EXPORT int sv_get_stats_1_0(uint32_t pid, void *out)
{
    struct softverbs_stats s;
    int ret = sv_get_stats_1_1(pid, &s);

    if (ret == 0) {
        memcpy(out, &s, SV_STATS_1_0_SIZE);
    }
    return ret;
}

SV_EXPORT int sv_get_proc_stats_1_0(void *out, int max)
{
    struct softverbs_stats *st;
    int i, n;

    if (max <= 0) {
        return 0;
    }
    st = malloc(sizeof(*st) * max);
    if (st == NULL) {
        return -ENOMEM;
    }
    n = sv_get_proc_stats_1_1(st, max);
    for (i = 0; i < n; i++) {
        memcpy((char *)out + (size_t)i * SV_STATS_1_0_SIZE, &st[i],
               SV_STATS_1_0_SIZE);
    }
    free(st);
    return n;
}
