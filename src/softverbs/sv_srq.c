/*
 * softverbs receive queues: the ring shared by a QP's RQ and an SRQ.
 *
 * The owner posts (single producer); requesters of any process consume a
 * WQE by copying it and then moving head by CAS.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

uint32_t sv_rq_count(struct sv_rq_hdr *rq)
{
    /* acquire: both indices as published by producer and consumers */
    return __atomic_load_n(&rq->tail, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&rq->head, __ATOMIC_ACQUIRE);
}

/*
 * The WQEs of a list are published together, by one store of tail once
 * they are written (also when one of them fails: those before it are
 * posted, as ibv_post_recv(3) says), so that consumers read the tail's
 * cache line once per list rather than once per WQE. The consumers' head
 * is read only when the head read last (head_seen, on the tail's line,
 * which only the owner writes) shows no room: consumers move head on every
 * receive.
 */
int sv_rq_post(struct sv_rq_hdr *rq, struct ibv_recv_wr *wr,
               struct ibv_recv_wr **bad)
{
    uint64_t t = rq->tail, t0 = t;
    struct sv_rwqe *w;
    int ret = 0;

    for (; wr != NULL; wr = wr->next, ++t) {
        if ((wr->num_sge < 0) || ((uint32_t)wr->num_sge > rq->max_sge)) {
            ret = EINVAL;
            break;
        }
        if (t - rq->head_seen >= rq->cap) {
            /* acquire: consumers copied the WQE before moving head */
            rq->head_seen = __atomic_load_n(&rq->head, __ATOMIC_ACQUIRE);
            if (t - rq->head_seen >= rq->cap) {
                ret = ENOMEM;
                break;
            }
        }
        w = sv_rq_wqe(rq, t);
        w->wr_id   = wr->wr_id;
        w->num_sge = wr->num_sge;
        memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * wr->num_sge);
    }
    if (ret != 0) {
        *bad = wr;
    }
    if (t != t0) {
        /* release: the WQEs are written before consumers see the tail */
        __atomic_store_n(&rq->tail, t, __ATOMIC_RELEASE);
    }
    return ret;
}

int sv_rq_take(struct sv_rq_hdr *rq, struct sv_rwqe *out)
{
    struct sv_rwqe *w;
    uint64_t h, t;
    uint32_t n;

    /* acquire: a head moved by another consumer, with its copy done */
    h = __atomic_load_n(&rq->head, __ATOMIC_ACQUIRE);
    for (;;) {
        /* The producer's tail is read only when the tail a consumer read
         * last (tail_seen, on head's line) has no WQE beyond head: the
         * producer writes tail at every post. tail_seen <= tail.
         * acquire: pairs with the release store of tail_seen, made after
         * an acquire load of tail (the WQEs before it are written). */
        t = __atomic_load_n(&rq->tail_seen, __ATOMIC_ACQUIRE);
        if ((int64_t)(t - h) <= 0) {
            /* acquire: pairs with the producer's release of tail */
            t = __atomic_load_n(&rq->tail, __ATOMIC_ACQUIRE);
            if (h == t) {
                return 0;
            }
            __atomic_store_n(&rq->tail_seen, t, __ATOMIC_RELEASE);
        }
        w = sv_rq_wqe(rq, h);
        n = w->num_sge;
        if (n > rq->max_sge) {
            n = rq->max_sge;
        }
        out->wr_id   = w->wr_id;
        out->num_sge = n;
        out->pos     = (uint32_t)h;
        memcpy(out->sge, w->sge, sizeof(struct ibv_sge) * n);
        /* the slot cannot be reused until head passes it: our copy is
         * valid iff nobody moved head meanwhile */
        if (__atomic_compare_exchange_n(&rq->head, &h, h + 1, 0,
                                        __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            return 1;
        }
    }
}

/* Complete every WQE of a receive queue with IBV_WC_WR_FLUSH_ERR into the
 * CQ at cq_index. Safe from any process: the ring and the CQ are shared, and
 * WQEs are taken with the same CAS as the responder's. */
void sv_rq_flush(struct sv_rq_hdr *rq, uint32_t cq_index, uint32_t qpn)
{
    struct sv_rwqe *w = alloca(sizeof(*w) +
                               rq->max_sge * sizeof(struct ibv_sge));
    struct sv_shm_qp *q = sv_shm_qp_lookup(qpn);
    struct sv_cqe c;

    memset(&c, 0, sizeof(c));
    c.status = IBV_WC_WR_FLUSH_ERR;
    c.opcode = IBV_WC_RECV;
    c.qp_num = qpn;
    /* acquire: the life before the WQEs taken (a reset empties the ring
     * before its life changes) */
    c.life   = (q != NULL) ? __atomic_load_n(&q->life, __ATOMIC_ACQUIRE) : 0;
    while (sv_rq_take(rq, w)) {
        c.wr_id = w->wr_id;
        if (sv_cq_push(cq_index, &c, NULL, 0) < 0) {
            break;
        }
    }
}

uint64_t sv_rq_alloc(uint32_t *wr, uint32_t *sge, uint64_t *len_out)
{
    struct sv_rq_hdr *rq;
    uint32_t size, stride;
    uint64_t off, len;

    size = sv_pow2_roundup(*wr);
    if (*sge == 0) {
        *sge = 1;
    }
    stride = sizeof(struct sv_rwqe) + *sge * sizeof(struct ibv_sge);
    len    = sizeof(*rq) + (uint64_t)size * stride;
    off    = sv_shm_alloc(len);
    if (off == 0) {
        return 0;
    }
    rq = sv_shm_ptr(off);
    memset(rq, 0, sizeof(*rq));
    rq->size    = size;
    rq->cap     = size;
    rq->max_sge = *sge;
    rq->stride  = stride;
    *wr         = size;
    *len_out    = len;
    return off;
}

/* ---------------------------------------------------------------------
 * SRQ
 * ------------------------------------------------------------------- */
int sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad)
{
    struct sv_srq *srq = sv_srq(ibsrq);
    int ret;

    if (SV_UNLIKELY(srq->max_wr == 0) && (wr != NULL)) {
        /* an SRQ of max_wr 0 holds no WQE: mlx5_post_srq_recv finds its
         * free list empty (head == tail) and fails with ENOMEM */
        *bad = wr;
        return ENOMEM;
    }
    pthread_mutex_lock(&srq->lock);
    ret = sv_rq_post(srq->ring, wr, bad);
    pthread_mutex_unlock(&srq->lock);
    return ret;
}

/* The comp_mask and type of ibv_create_srq_ex: 0 or the errno. Basic
 * SRQs (IBV_SRQ_INIT_ATTR_CQ and _XRCD are ignored for them, as by
 * mlx5_create_srq_ex) and XRC SRQs (sv_xrc.c) exist:
 * - comp_mask from IBV_SRQ_INIT_ATTR_RESERVED up: EOPNOTSUPP, and no
 *   IBV_SRQ_INIT_ATTR_PD: EINVAL (libibverbs ibv_cmd_create_srq_ex,
 *   rdma-core libibverbs/cmd_srq.c);
 * - a type that is none of BASIC, XRC, TM: EINVAL (mlx5_create_srq_ex,
 *   providers/mlx5/verbs.c);
 * - XRC without IBV_SRQ_INIT_ATTR_XRCD and _CQ, TM without _CQ, _TM and
 *   max_num_tags: EINVAL (libibverbs ibv_icmd_create_srq);
 * - an XRC request: its domain and CQ are checked by sv_xrc_srq_check;
 * - a valid TM request: EOPNOTSUPP, the device has no tag matching
 *   (tm_caps 0), as Linux's rxe, siw and bnxt_re refuse the SRQ types
 *   they lack (rxe_create_srq) */
static int sv_srq_init_attr_check(struct ibv_context *ctx,
                                  const struct ibv_srq_init_attr_ex *attr)
{
    enum ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ?
                             attr->srq_type : IBV_SRQT_BASIC;

    if (attr->comp_mask >= IBV_SRQ_INIT_ATTR_RESERVED) {
        return EOPNOTSUPP;
    }
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || (attr->pd == NULL)) {
        return EINVAL;
    }
    switch (type) {
    case IBV_SRQT_BASIC:
        return 0;
    case IBV_SRQT_XRC:
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
            !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ)) {
            return EINVAL;
        }
        return sv_xrc_srq_check(ctx, attr);
    case IBV_SRQT_TM:
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
            !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) ||
            (attr->tm_cap.max_num_tags == 0)) {
            return EINVAL;
        }
        return EOPNOTSUPP;
    default:
        return EINVAL;
    }
}

struct ibv_srq *sv_create_srq_ex(struct ibv_context *ctx,
                                 struct ibv_srq_init_attr_ex *attr)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_srq *s = NULL;
    struct sv_srq *srq;
    uint32_t wr, sge, i;
    uint64_t len = 0;
    int err;

    err = sv_srq_init_attr_check(ctx, attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    /* max_wr 0 is accepted, as by mlx5: mlx5_create_srq and
     * mlx5_alloc_srq_buf (rdma-core providers/mlx5/verbs.c, srq.c) size a
     * queue of one WQE, none of it usable (max_wr written back 0), and the
     * kernel's mlx5_ib_create_srq takes it; every post then fails.
     * Sizes as mlx5's (mlx5_ib_create_srq, drivers/infiniband/hw/mlx5/
     * srq.c): max_wr + 1 rounded up to a power of two, one WQE of it kept
     * (the free list's own), max_wr written back as that less one: 4095
     * asked holds 4095, not 4096. UCX's rc_verbs posts what is written
     * back into an SRQ whose CQ it sizes as asked (4095): a ring that
     * took 4096 overran that CQ (UCX's gtest pending_op). */
    wr  = attr->attr.max_wr;
    sge = attr->attr.max_sge;
    if (sv_cap_check(&wr, SV_MAX_WR - 1) ||
        sv_cap_check(&sge, SV_MAX_SGE) ||
        (attr->attr.srq_limit > wr)) {
        errno = EINVAL;
        return NULL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    if (h->num_srq >= sv_g.max_srq) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (i = 1; (h->num_srq < sv_g.max_srq) && (i < SV_SRQ_TBL); i++) {
        if (!h->srqs[i].in_use) {
            s = &h->srqs[i];
            break;
        }
    }
    if (s == NULL) {
        sv_shm_unlock();
        sv_error("cannot create SRQ: limit %u reached", sv_g.max_srq);
        errno = ENOMEM;
        goto err_free;
    }
    memset(s, 0, sizeof(*s));
    wr         += 1;
    s->ring_off = sv_rq_alloc(&wr, &sge, &len);
    if (s->ring_off == 0) {
        sv_shm_unlock();
        errno = ENOMEM;
        goto err_free;
    }
    wr = ((struct sv_rq_hdr *)sv_shm_ptr(s->ring_off))->cap = wr - 1;
    s->ring_len = len;
    s->proc     = sv_g.proc;
    s->pid      = sv_g.pid;
    s->ctx_id   = sv_ctx(ctx)->ctx_id;
    s->pd_id    = sv_container_of(attr->pd, struct sv_pd, pd)->pd_id;
    s->limit    = attr->attr.srq_limit;
    s->cookie   = (uintptr_t)srq;
    if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
        (attr->srq_type == IBV_SRQT_XRC)) {
        sv_xrc_srq_bind(srq, s, attr); /* its domain and CQ */
    }
    /* release: the ring is initialized before consumers see in_use */
    __atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);
    h->num_srq++;
    sv_shm_unlock();

    srq->index  = i;
    srq->max_wr = (attr->attr.max_wr == 0) ? 0 : wr;
    srq->shm    = s;
    srq->ring  = sv_shm_ptr(s->ring_off);
    pthread_mutex_init(&srq->lock, NULL);
    srq->srq.context    = ctx;
    srq->srq.srq_context = attr->srq_context;
    srq->srq.pd         = attr->pd;
    srq->srq.handle     = i;
    sv_pd_ref(attr->pd, 1);
    pthread_mutex_init(&srq->srq.mutex, NULL);
    pthread_cond_init(&srq->srq.cond, NULL);
    /* caps written back with the values granted */
    attr->attr.max_wr  = srq->max_wr;
    attr->attr.max_sge = sge;
    return &srq->srq;

err_free:
    free(srq);
    return NULL;
}

SV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
                                         struct ibv_srq_init_attr *attr)
{
    struct ibv_srq_init_attr_ex ex;
    struct ibv_srq *srq;

    memset(&ex, 0, sizeof(ex));
    ex.srq_context = attr->srq_context;
    ex.attr        = attr->attr;
    ex.comp_mask   = IBV_SRQ_INIT_ATTR_PD;
    ex.pd          = pd;
    srq = sv_create_srq_ex(pd->context, &ex);
    if (srq != NULL) {
        attr->attr = ex.attr;
    }
    return srq;
}

SV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
                             int mask)
{
    struct sv_srq *srq = sv_srq(ibsrq);

    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) {
        return EINVAL;
    }
    if (mask & IBV_SRQ_MAX_WR) {
        /* resizing: allowed within the ring already allocated */
        if ((attr->max_wr == 0) || (attr->max_wr > srq->ring->cap)) {
            return EINVAL;
        }
    }
    if (mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq->ring->cap) {
            return EINVAL;
        }
        /* release: armed after the WQEs posted before this call */
        __atomic_store_n(&srq->shm->limit, attr->srq_limit, __ATOMIC_RELEASE);
    }
    return 0;
}

SV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
    struct sv_srq *srq = sv_srq(ibsrq);

    attr->max_wr    = srq->max_wr;
    attr->max_sge   = srq->ring->max_sge;
    /* acquire: the limit may have been disarmed by a consumer */
    attr->srq_limit = __atomic_load_n(&srq->shm->limit, __ATOMIC_ACQUIRE);
    return 0;
}

SV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
    struct sv_srq *srq = sv_srq(ibsrq);
    struct sv_shm_hdr *h = sv_g.shm;
    uint32_t i;

    sv_shm_lock();
    for (i = 0; i < SV_QP_TBL; i++) {
        if (h->qps[i].in_use && (h->qps[i].pid == sv_g.pid) &&
            (h->qps[i].srq == srq->index + 1)) {
            sv_shm_unlock();
            return EBUSY;
        }
    }
    sv_shm_unlock();
    if (srq->mlx5 != NULL) {
        sv_g.hooks->srq_detach(srq); /* the engine lets go of its front */
    }
    /* as ibv_destroy_qp: wait until its reported events are acknowledged */
    pthread_mutex_lock(&ibsrq->mutex);
    while (ibsrq->events_completed != srq->events_reported) {
        pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
    }
    pthread_mutex_unlock(&ibsrq->mutex);
    sv_shm_lock();
    /* release: consumers that still see in_use find a live ring */
    __atomic_store_n(&srq->shm->in_use, 0, __ATOMIC_RELEASE);
    sv_shm_free(srq->shm->ring_off, srq->shm->ring_len);
    h->num_srq--;
    if (srq->xrcd != NULL) {
        sv_xrc_srq_unbind(srq);
    }
    sv_shm_unlock();
    sv_pd_ref(ibsrq->pd, -1);
    free(srq);
    return 0;
}

/* ibv_get_srq_num(3) (the verbs_context op): the SRQ number, which mlx5
 * gives for any SRQ (rdma-core providers/mlx5/verbs.c mlx5_get_srq_num);
 * here the registry index */
int sv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
    *srq_num = sv_srq(ibsrq)->index;
    return 0;
}
