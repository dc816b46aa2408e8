/*
 * softverbs queue pairs: the verbs that create and destroy them, and
 * multicast attachment. ibv_create_qp_ex sends an XRC QP to its creator
 * (sv_xrc_qp.c) and builds the others with sv_qp_create (sv_qp_create.c,
 * below both); mlx5dv_create_qp comes here for the QPs that are not DC
 * (sv_dc.c, above). The state machine (ibv_modify_qp, ibv_query_qp) is in
 * sv_qp_modify.c, the one QP state and its moves to ERR and SQE in
 * sv_qp_state.c.
 *
 * The QP layer keeps transport-specific decisions in sv_req/sv_resp, so
 * that further QP types (e.g. mlx5 DC initiators/targets created through
 * mlx5dv_create_qp) can be added as new qp_type values there.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
 * Creation and destruction
 * ------------------------------------------------------------------- */
static void sv_qp_free_shm(struct sv_qp *qp)
{
    sv_shm_lock();
    /* release: requesters that still see in_use find a complete entry */
    __atomic_store_n(&qp->shm->in_use, 0, __ATOMIC_RELEASE);
    sv_shm_free(qp->shm->rq_off, qp->shm->rq_len);
    sv_g.shm->num_qp--;
    sv_shm_unlock();
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *ctx,
                               struct ibv_qp_init_attr_ex *attr)
{
    int err;

    if ((attr->qp_type == IBV_QPT_XRC_SEND) ||
        (attr->qp_type == IBV_QPT_XRC_RECV)) {
        return sv_xrc_create_qp(ctx, attr); /* sv_xrc_qp.c */
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->pd == NULL) ||
        (attr->send_cq == NULL) || (attr->recv_cq == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if ((attr->qp_type != IBV_QPT_RC) && (attr->qp_type != IBV_QPT_UC) &&
        (attr->qp_type != IBV_QPT_UD)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    err = sv_qp_init_attr_check(attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    /* man ibv_create_qp: an SRQ is usable with RC and UD QPs only here */
    if (attr->srq && (attr->qp_type == IBV_QPT_UC)) {
        errno = EINVAL;
        return NULL;
    }
    err = sv_qp_srq_check(attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    return sv_qp_create(ctx, attr, attr->qp_type);
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
                                       struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex ex;
    struct ibv_qp *qp;

    if ((pd == NULL) || (attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    memset(&ex, 0, sizeof(ex));
    memcpy(&ex, attr, sizeof(*attr));
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd        = pd;
    qp = sv_create_qp_ex(pd->context, &ex);
    if (qp != NULL) {
        attr->cap = ex.cap;
    }
    return qp;
}

/* The ibv_wr_* API exists for QPs created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS only: libibverbs returns NULL for a QP
 * without VERBS_QP_EX, which mlx5 sets only for that comp_mask bit
 * (rdma-core libibverbs/verbs.c ibv_qp_to_qp_ex, providers/mlx5/verbs.c
 * create_qp). errno is set as well, to tell the caller why */
SV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
    struct sv_qp *qp = sv_qp(ibqp);

    if (!qp->is_ex) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return &qp->qpx;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct sv_qp *qp = sv_qp(ibqp);

    /* man ibv_destroy_qp: fails while attached to a multicast group */
    /* acquire: counts are changed under the registry lock elsewhere */
    if (__atomic_load_n(&qp->shm->mcast_count, __ATOMIC_ACQUIRE) > 0) {
        return EBUSY;
    }
    /* man ibv_get_async_event: destroying the QP waits, without a timeout
     * and through signals, until every async event reported about it was
     * acknowledged (libibverbs waits for the kernel's count the same way) */
    pthread_mutex_lock(&ibqp->mutex);
    while (ibqp->events_completed != qp->events_reported) {
        pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
    }
    pthread_mutex_unlock(&ibqp->mutex);
    if (qp->sv_type == IBV_QPT_XRC_RECV) {
        /* a target of the XRC domain: the handle goes, the QP with its
         * last one (sv_xrc_qp.c) */
        return sv_xrc_qp_release(qp);
    }
    if (qp->mlx5 != NULL) {
        sv_g.hooks->qp_detach(qp); /* the engine lets go of its queues */
    }
    sv_cq_del_qp(qp->scq, qp);
    if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
        sv_cq_del_qp(qp->rcq, qp);
    }
    /* Its completions not yet polled go with it, as rdma-core's mlx5
     * removes a destroyed QP's CQEs from both CQs (mlx5_destroy_qp ->
     * __mlx5_cq_clean; an SRQ receive's WQE goes back to the SRQ): a CQ
     * shared by many QPs (libfabric's verbs provider, one per domain)
     * would otherwise return completions whose wr_id names the freed
     * endpoint's buffers. libfabric's ofi_rxm crashed polling them after
     * closing its connections. A CQE a peer pushes between this sweep and
     * the QP's release below is dropped when polled, its QP gone
     * (sv_cq_drop_stale) */
    if (qp->scq != NULL) {
        sv_cq_clean(qp->scq, qp);
    }
    if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
        sv_cq_clean(qp->rcq, qp);
    }
    if (qp->sq_pending) {
        __atomic_fetch_sub(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
    }
    sv_qp_free_shm(qp);
    free(qp->wr_list);
    sv_pd_buf_free(ibqp->pd, qp->sq, MLX5DV_RES_TYPE_QP, qp->sq_custom);
    sv_pd_ref(ibqp->pd, -1);
    free(qp);
    return 0;
}

/* ---------------------------------------------------------------------
 * Multicast (UD)
 * ------------------------------------------------------------------- */
SV_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
                               uint16_t lid)
{
    struct sv_qp *qp = sv_qp(ibqp);
    struct sv_shm_mcast *g, *free_g = NULL;
    int i, j, ret = 0;

    if ((ibqp->qp_type != IBV_QPT_UD) || (gid->raw[0] != 0xff) ||
        (lid < SV_MCAST_LID_BASE) || (lid == 0xffff)) {
        return EINVAL;
    }
    sv_shm_lock();
    for (i = 0; i < SV_MCAST_TBL; i++) {
        g = &sv_g.shm->mcast[i];
        if (!g->in_use) {
            free_g = free_g ? free_g : g;
            continue;
        }
        if (!memcmp(&g->gid, gid, sizeof(*gid))) {
            for (j = 0; j < g->nqp; j++) {
                if (g->qpn[j] == ibqp->qp_num) {
                    goto out; /* already attached */
                }
            }
            if (g->nqp == SV_MCAST_QPS) {
                ret = ENOMEM;
                goto out;
            }
            g->qpn[g->nqp++] = ibqp->qp_num;
            qp->shm->mcast_count++;
            goto out;
        }
    }
    if (free_g == NULL) {
        ret = ENOMEM;
        goto out;
    }
    free_g->gid    = *gid;
    free_g->lid    = lid;
    free_g->nqp    = 1;
    free_g->qpn[0] = ibqp->qp_num;
    free_g->in_use = 1;
    qp->shm->mcast_count++;
out:
    sv_shm_unlock();
    return ret;
}

SV_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
                               uint16_t lid)
{
    struct sv_qp *qp = sv_qp(ibqp);
    struct sv_shm_mcast *g;
    int i, j, ret = EINVAL;

    sv_shm_lock();
    for (i = 0; i < SV_MCAST_TBL; i++) {
        g = &sv_g.shm->mcast[i];
        if (!g->in_use || memcmp(&g->gid, gid, sizeof(*gid))) {
            continue;
        }
        for (j = 0; j < g->nqp; j++) {
            if (g->qpn[j] == ibqp->qp_num) {
                g->qpn[j] = g->qpn[--g->nqp];
                g->in_use = (g->nqp > 0);
                qp->shm->mcast_count--;
                ret = 0;
                break;
            }
        }
    }
    sv_shm_unlock();
    return ret;
}
