/*
 * softverbs completion queues: creation, destruction, and the local QPs a
 * CQ runs. A CQ is a ring in the shared registry: any process may push a
 * CQE (claiming a slot by CAS on the tail, sv_cq_push.c), only the owner
 * polls it (sv_cq_poll.c); its ring is allocated and resized in
 * sv_cq_ring.c.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

#define SV_CQ_WC_TS    (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
                        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SV_CQ_WC_FLAGS (IBV_WC_STANDARD_FLAGS | SV_CQ_WC_TS)

/* ---------------------------------------------------------------------
 * Local QP bookkeeping (progress and flushing driven by poll_cq)
 * ------------------------------------------------------------------- */
void sv_cq_add_qp(struct sv_cq *cq, struct sv_qp *qp)
{
    struct sv_qp **n;

    pthread_mutex_lock(&cq->lock);
    if (cq->nqps == cq->qps_cap) {
        n = realloc(cq->qps, sizeof(*n) * (cq->qps_cap * 2 + 4));
        if (n == NULL) {
            pthread_mutex_unlock(&cq->lock);
            return;
        }
        cq->qps     = n;
        cq->qps_cap = cq->qps_cap * 2 + 4;
    }
    cq->qps[cq->nqps++] = qp;
    pthread_mutex_unlock(&cq->lock);
}

void sv_cq_del_qp(struct sv_cq *cq, struct sv_qp *qp)
{
    int i;

    pthread_mutex_lock(&cq->lock);
    for (i = 0; i < cq->nqps; i++) {
        if (cq->qps[i] == qp) {
            cq->qps[i] = cq->qps[--cq->nqps];
            break;
        }
    }
    pthread_mutex_unlock(&cq->lock);
}

/* ---------------------------------------------------------------------
 * Creation / destruction
 * ------------------------------------------------------------------- */
/* ibv_create_cq_ex(3)'s attributes as mlx5 checks them: 0, or the errno */
static int sv_cq_attr_check(const struct ibv_cq_init_attr_ex *attr)
{
    if ((attr->cqe < 1) || (attr->comp_vector > 0) ||
        (attr->comp_mask & ~(IBV_CQ_INIT_ATTR_MASK_FLAGS |
                             IBV_CQ_INIT_ATTR_MASK_PD))) {
        return EINVAL;
    }
    /* The standard fields and the completion timestamps can be read; no
     * VLAN, flow tags or tag matching. mlx5 refuses wc_flags it cannot
     * provide with ENOTSUP (rdma-core providers/mlx5/verbs.c, create_cq) */
    if (attr->wc_flags & ~(uint64_t)SV_CQ_WC_FLAGS) {
        return EOPNOTSUPP;
    }
    /* above max_cqe: EINVAL whatever SOFTVERBS_CAP_POLICY says, as mlx5
     * (create_cq: more than 2^24 entries; the kernel's mlx5_ib_create_cq:
     * more than the device's log_max_cq_sz) */
    if (attr->cqe > sv_cq_max_cqe()) {
        return EINVAL;
    }
    /* IBV_CQ_INIT_ATTR_MASK_PD names a parent domain (ibv_create_cq_ex(3));
     * a plain PD, or none, is EINVAL as with mlx5 (create_cq:
     * to_mparent_domain() NULL). The CQ references it until destroyed */
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
        ((attr->parent_domain == NULL) ||
         (sv_pd(attr->parent_domain)->parent_of == NULL))) {
        return EINVAL;
    }
    return 0;
}

struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *ctx,
                                  struct ibv_cq_init_attr_ex *attr)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_cq *scq = NULL;
    uint32_t cqe = attr->cqe, i;
    struct sv_cq *cq;
    uint64_t len;
    int err;

    err = sv_cq_attr_check(attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    if (h->num_cq >= sv_g.max_cq) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (i = 1; (h->num_cq < sv_g.max_cq) && (i < SV_CQ_TBL); i++) {
        if (!h->cqs[i].in_use) {
            scq = &h->cqs[i];
            break;
        }
    }
    if (scq == NULL) {
        sv_shm_unlock();
        sv_error("cannot create CQ: limit %u reached", sv_g.max_cq);
        errno = ENOMEM;
        goto err_free;
    }
    memset(scq, 0, sizeof(*scq));
    scq->ring_off = sv_cq_ring_alloc(cqe, &len);
    if (scq->ring_off == 0) {
        sv_shm_unlock();
        sv_error("cannot create CQ: registry arena full");
        errno = ENOMEM;
        goto err_free;
    }
    scq->ring_len = len;
    scq->proc     = sv_g.proc;
    scq->pid      = sv_g.pid;
    scq->ctx_id   = sv_ctx(ctx)->ctx_id;
    scq->cookie   = (uintptr_t)cq;
    scq->ts       = !!(attr->wc_flags & SV_CQ_WC_TS);
    scq->ch_id    = attr->channel ?
                    ((struct sv_comp_channel *)attr->channel)->ch_id : 0;
    cq->ring      = sv_shm_ptr(scq->ring_off);
    /* release: the ring is initialized before producers see in_use */
    __atomic_store_n(&scq->in_use, 1, __ATOMIC_RELEASE);
    h->num_cq++;
    sv_shm_unlock();

    cq->index = i;
    cq->shm   = scq;
    cq->slots = (struct sv_cq_slot *)(cq->ring + 1);
    pthread_mutex_init(&cq->lock, NULL);
    cq->cq.context    = ctx;
    cq->cq.channel    = attr->channel;
    cq->cq.cq_context = attr->cq_context;
    cq->cq.cqe        = cq->ring->cqe;
    cq->cq.handle     = i;
    if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
        cq->parent_domain = attr->parent_domain;
        sv_pd_ref(cq->parent_domain, 1);
    }
    pthread_mutex_init(&cq->cq.mutex, NULL);
    pthread_cond_init(&cq->cq.cond, NULL);
    sv_cq_init_poll_ex(cq, attr->wc_flags);
    if (attr->channel) {
        attr->channel->refcnt++;
    }
    pthread_mutex_lock(&sv_g.cq_list_lock);
    cq->next = sv_g.cq_list;
    if (cq->next != NULL) {
        cq->next->prev = cq;
    }
    sv_g.cq_list = cq;
    pthread_mutex_unlock(&sv_g.cq_list_lock);
    return &cq->cq;

err_free:
    free(cq);
    return NULL;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe,
                                       void *cq_context,
                                       struct ibv_comp_channel *channel,
                                       int comp_vector)
{
    struct ibv_cq_init_attr_ex attr;
    struct ibv_cq_ex *cq;

    memset(&attr, 0, sizeof(attr));
    if (cqe < 1) {
        errno = EINVAL;
        return NULL;
    }
    attr.cqe         = cqe;
    attr.cq_context  = cq_context;
    attr.channel     = channel;
    attr.comp_vector = comp_vector;
    cq = sv_create_cq_ex(ctx, &attr);
    return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    struct sv_cq *cq = sv_cq(ibcq);

    /* in use by a QP, or an XRC SRQ's completions come here (the kernel
     * counts both in the CQ's usecnt) */
    if ((cq->nqps > 0) ||
        (__atomic_load_n(&cq->xrc_srqs, __ATOMIC_RELAXED) > 0)) {
        return EBUSY;
    }
    if (cq->mlx5 != NULL) {
        sv_g.hooks->cq_detach(cq); /* the engine lets go of its front */
    }
    /* man ibv_destroy_cq / ibv_get_cq_event: waits, without a timeout and
     * through signals, until every completion and async event reported
     * about the CQ was acknowledged (libibverbs does the same) */
    pthread_mutex_lock(&ibcq->mutex);
    while ((ibcq->comp_events_completed != cq->comp_events_reported) ||
           (ibcq->async_events_completed != cq->async_events_reported)) {
        pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
    }
    pthread_mutex_unlock(&ibcq->mutex);
    pthread_mutex_lock(&sv_g.cq_list_lock);
    if (cq->prev != NULL) {
        cq->prev->next = cq->next;
    } else {
        sv_g.cq_list = cq->next;
    }
    if (cq->next != NULL) {
        cq->next->prev = cq->prev;
    }
    pthread_mutex_unlock(&sv_g.cq_list_lock);
    sv_shm_lock();
    /* release: producers that still see in_use push into a live ring */
    __atomic_store_n(&cq->shm->in_use, 0, __ATOMIC_RELEASE);
    sv_shm_free(cq->shm->ring_off, cq->shm->ring_len);
    sv_g.shm->num_cq--;
    sv_shm_unlock();
    if (ibcq->channel) {
        ibcq->channel->refcnt--;
    }
    if (cq->parent_domain != NULL) {
        sv_pd_ref(cq->parent_domain, -1);
    }
    free(cq->qps);
    free(cq);
    return 0;
}
