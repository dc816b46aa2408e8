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
