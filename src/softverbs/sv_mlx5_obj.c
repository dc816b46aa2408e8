/*
 * The mlx5 personality's objects (sv_mlx5_front.h): mlx5dv_is_supported,
 * mlx5dv_create_cq and mlx5dv_init_obj of softverbs' libmlx5, which reach
 * here through the SOFTVERBS_PRIVATE node, and the fronts' lifetime.
 *
 * mlx5dv_init_obj(3) hands out what rdma-core's libmlx5 hands out
 * (providers/mlx5/mlx5.c, mlx5dv_get_qp/cq/srq): a send queue of 64-byte
 * basic blocks sized as mlx5_calc_sq_size sizes it, the doorbell record
 * pair of a QP (MLX5_RCV_DBR, MLX5_SND_DBR), a BlueFlame register of size
 * 0 (the program rings with an 8-byte doorbell; nobody reads it, the
 * engine follows the doorbell record), CQ buffers whose every entry starts
 * invalid and hardware-owned (opcode MLX5_CQE_INVALID, owner 1, as
 * mlx5_alloc_cq_buf leaves them), and an SRQ of tail + 1 linked WQEs whose
 * head is 0 (mlx5_create_srq: max_wr + 1 rounded up to a power of two, one
 * kept spare).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "sv.h"
#include "sv_log.h"
#include "sv_mlx5_front.h"
#include "sv_provider.h"

const char *ibv_get_sysfs_path(void); /* libibverbs' driver.h */

static const struct sv_obj_hooks sv_mlx5_hooks = {
    .qp_detach  = sv_mlx5_qp_detach,
    .qp_reset   = sv_mlx5_qp_reset,
    .cq_detach  = sv_mlx5_cq_detach,
    .srq_detach = sv_mlx5_srq_detach,
};

static void *sv_mlx5_zalloc(size_t align, size_t size)
{
    void *p;

    if (posix_memalign(&p, align, size) != 0) {
        return NULL;
    }
    memset(p, 0, size);
    return p;
}

/* An mlx5 device has its PCI function in sysfs (sv_misc.c): the tree is
 * made now, since a program asking this (UCX) reads it next, without
 * calling ibv_get_sysfs_path() */
SV_EXPORT bool softverbs_dv_is_supported(struct ibv_device *device)
{
    if ((device == NULL) || !sv_g.mlx5) {
        return false;
    }
    (void)ibv_get_sysfs_path();
    return true;
}

/* mlx5dv_create_cq(3): the CQE size is 64 or 128 bytes; compression and
 * the other DV attributes are features this device does not have */
SV_EXPORT struct ibv_cq_ex *softverbs_dv_create_cq(struct ibv_context *context,
                                         struct ibv_cq_init_attr_ex *cq_attr,
                                         struct mlx5dv_cq_init_attr *dv)
{
    uint32_t cqe_size = 64;
    struct ibv_cq_ex *cqx;

    if (!sv_g.mlx5) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((context == NULL) || (cq_attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if (dv != NULL) {
        if (dv->comp_mask & ~(uint64_t)MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) {
            sv_error("mlx5dv_create_cq: comp_mask 0x%llx not supported",
                     (unsigned long long)dv->comp_mask);
            errno = EOPNOTSUPP;
            return NULL;
        }
        if (dv->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) {
            if ((dv->cqe_size != 64) && (dv->cqe_size != 128)) {
                sv_error("mlx5dv_create_cq: cqe_size %u", dv->cqe_size);
                errno = EINVAL;
                return NULL;
            }
            cqe_size = dv->cqe_size;
        }
    }
    cqx = sv_create_cq_ex(context, cq_attr);
    if (cqx != NULL) {
        sv_cq(ibv_cq_ex_to_cq(cqx))->mlx5_cqe_size = cqe_size;
    }
    return cqx;
}

/* A front's buffer, its doorbell record, itself */
static void sv_mlx5_front_free(void *buf, void *dbrec, void *front)
{
    free(buf);
    free(dbrec);
    free(front);
}

static void sv_mlx5_uar_get(void)
{
    if (sv_mlx5.uar == NULL) {
        sv_mlx5.uar = sv_mlx5_zalloc(4096, 4096);
    }
}

/* The queues of an RC or UD QP, or of a DC initiator (a DCT has none: it
 * only receives, through its SRQ) */
static int sv_mlx5_qp_front(struct sv_qp *qp, struct mlx5dv_qp *out)
{
    struct sv_mlx5_qp *f = qp->mlx5;
    size_t blen;

    if ((qp->sv_type != IBV_QPT_RC) && (qp->sv_type != IBV_QPT_UD) &&
        (qp->sv_type != SV_QPT_DCI)) {
        sv_error("mlx5dv_init_obj: qp 0x%x: type %u has no mlx5 queues",
                 qp->qpx.qp_base.qp_num, qp->sv_type);
        return EOPNOTSUPP;
    }
    if (f == NULL) {
        f = calloc(1, sizeof(*f));
        if (f == NULL) {
            return ENOMEM;
        }
        f->wqe_cnt = sv_qp_mlx5_sq_blocks(&qp->cap, qp->sv_type);
        blen       = (size_t)f->wqe_cnt * MLX5_SEND_WQE_BB + SV_MLX5_BOUNCE_PAD;
        f->qp      = qp;
        f->sq_buf  = sv_mlx5_zalloc(4096,
                                    (size_t)f->wqe_cnt * MLX5_SEND_WQE_BB);
        f->dbrec   = sv_mlx5_zalloc(64, 64);
        f->bounce  = sv_mlx5_zalloc(64, blen);
        if ((qp->sv_type == IBV_QPT_UD) && (qp->srq == NULL) &&
            (qp->cap.max_recv_wr > 0)) {
            f->rq_cnt = sv_pow2_roundup(qp->cap.max_recv_wr);
            f->rq_buf = sv_mlx5_zalloc(4096, (size_t)f->rq_cnt *
                                       sizeof(struct mlx5_wqe_data_seg));
            f->rq_held     = calloc(f->rq_cnt, sizeof(*f->rq_held));
            f->rq_held_set = calloc(f->rq_cnt, 1);
        }
        if ((f->sq_buf == NULL) || (f->dbrec == NULL) || (f->bounce == NULL) ||
            ((f->rq_cnt != 0) &&
             ((f->rq_buf == NULL) || (f->rq_held == NULL) ||
              (f->rq_held_set == NULL)))) {
            goto err;
        }
        f->bounce_mr = ibv_reg_mr(qp->qpx.qp_base.pd, f->bounce, blen,
                                  IBV_ACCESS_LOCAL_WRITE);
        if (f->bounce_mr == NULL) {
            goto err;
        }
        f->next    = sv_mlx5.qps;
        sv_mlx5.qps = f;
        qp->mlx5   = f;
    }
    out->dbrec       = f->dbrec;
    out->sq.buf      = f->sq_buf;
    out->sq.wqe_cnt  = f->wqe_cnt;
    out->sq.stride   = MLX5_SEND_WQE_BB;
    out->rq.buf      = f->rq_buf;
    out->rq.wqe_cnt  = f->rq_cnt;
    out->rq.stride   = f->rq_cnt ? sizeof(struct mlx5_wqe_data_seg) : 0;
    out->bf.reg      = sv_mlx5.uar + 0x800;
    out->bf.size     = 0;
    out->comp_mask   = 0;
    return 0;

err:
    free(f->bounce);
    free(f->rq_held);
    free(f->rq_held_set);
    free(f->rq_buf);
    sv_mlx5_front_free(f->sq_buf, f->dbrec, f);
    return ENOMEM;
}

/* An AH's address vector as libmlx5 writes it (mlx5_create_ah, rdma-core
 * providers/mlx5/verbs.c): the LID, the SL and rate, and on a global route
 * the GRH bit, source GID index and flow label, the GID, class and hop
 * limit. The program fills the key and the destination QP itself. */
static void sv_mlx5_ah_front(struct sv_ah *ah, struct mlx5dv_ah *out)
{
    const struct ibv_ah_attr *a = &ah->attr;
    struct mlx5_wqe_av *av      = &ah->av;

    memset(av, 0, sizeof(*av));
    av->stat_rate_sl = (uint8_t)((a->static_rate << 4) | (a->sl & 0xf));
    av->fl_mlid      = a->src_path_bits & 0x7f;
    av->rlid         = htobe16(a->dlid);
    if (a->is_global) {
        av->grh_gid_fl = htobe32((1u << 30) |
                                 ((uint32_t)a->grh.sgid_index << 20) |
                                 (a->grh.flow_label & 0xfffff));
        av->tclass     = a->grh.traffic_class;
        av->hop_limit  = a->grh.hop_limit;
        memcpy(av->rgid, a->grh.dgid.raw, sizeof(av->rgid));
    }
    out->av        = av;
    out->comp_mask = 0;
}

static int sv_mlx5_cq_front(struct sv_cq *cq, struct mlx5dv_cq *out)
{
    struct sv_mlx5_cq *f = cq->mlx5;
    struct mlx5_cqe64 *cqe;
    uint32_t i;

    if (f == NULL) {
        f = calloc(1, sizeof(*f));
        if (f == NULL) {
            return ENOMEM;
        }
        f->cq       = cq;
        f->cqe_size = cq->mlx5_cqe_size ? cq->mlx5_cqe_size : 64;
        f->cqe_cnt  = sv_pow2_roundup(cq->cq.cqe + 1);
        f->buf      = sv_mlx5_zalloc(4096, (size_t)f->cqe_cnt * f->cqe_size);
        f->dbrec    = sv_mlx5_zalloc(64, 64);
        if ((f->buf == NULL) || (f->dbrec == NULL)) {
            sv_mlx5_front_free(f->buf, f->dbrec, f);
            return ENOMEM;
        }
        for (i = 0; i < f->cqe_cnt; i++) {
            cqe = (struct mlx5_cqe64 *)(f->buf + (size_t)i * f->cqe_size +
                                        f->cqe_size - 64);
            cqe->op_own = (MLX5_CQE_INVALID << 4) | MLX5_CQE_OWNER_MASK;
        }
        /* no arm yet: the program's first arm word differs (its reserved
         * bits 25..27 are 0) */
        f->dbrec[1] = 0xffffffffu;
        f->next     = sv_mlx5.cqs;
        sv_mlx5.cqs = f;
        cq->mlx5    = f;
    }
    out->buf       = f->buf;
    out->dbrec     = f->dbrec;
    out->cqe_cnt   = f->cqe_cnt;
    out->cqe_size  = f->cqe_size;
    out->cq_uar    = sv_mlx5.uar;
    out->cqn       = cq->index;
    out->comp_mask = 0;
    return 0;
}

static int sv_mlx5_srq_front(struct sv_srq *srq, struct mlx5dv_srq *out)
{
    struct sv_mlx5_srq *f = srq->mlx5;
    struct mlx5_wqe_srq_next_seg *next;
    uint32_t i;

    if (srq->xrcd != NULL) {
        return EOPNOTSUPP;
    }
    if (f == NULL) {
        f = calloc(1, sizeof(*f));
        if (f == NULL) {
            return ENOMEM;
        }
        f->srq   = srq;
        f->tail  = sv_pow2_roundup(srq->max_wr + 1) - 1;
        f->buf   = sv_mlx5_zalloc(4096, (size_t)(f->tail + 1) *
                                  SV_MLX5_SRQ_STRIDE);
        f->dbrec = sv_mlx5_zalloc(64, 64);
        if ((f->buf == NULL) || (f->dbrec == NULL)) {
            sv_mlx5_front_free(f->buf, f->dbrec, f);
            return ENOMEM;
        }
        for (i = 0; i <= f->tail; i++) {
            next = (void *)(f->buf + (size_t)i * SV_MLX5_SRQ_STRIDE);
            next->next_wqe_index = htobe16((uint16_t)((i + 1) & f->tail));
        }
        f->next      = sv_mlx5.srqs;
        sv_mlx5.srqs = f;
        srq->mlx5    = f;
    }
    out->buf    = f->buf;
    out->dbrec  = f->dbrec;
    out->stride = SV_MLX5_SRQ_STRIDE;
    out->head   = 0;
    out->tail   = f->tail;
    if (out->comp_mask & MLX5DV_SRQ_MASK_SRQN) {
        out->srqn = srq->index;
    }
    out->comp_mask &= MLX5DV_SRQ_MASK_SRQN;
    return 0;
}

/* mlx5dv_init_obj(3): each object asked for, in the order of the type
 * bits; the first failure is the result (rdma-core's mlx5dv_init_obj) */
SV_EXPORT int softverbs_dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
    const uint64_t known = MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ |
                           MLX5DV_OBJ_DM | MLX5DV_OBJ_AH;
    int ret = 0;

    if (!sv_g.mlx5) {
        return EOPNOTSUPP;
    }
    if (obj == NULL) {
        return EINVAL;
    }
    if (obj_type & ~known) {
        sv_error("mlx5dv_init_obj: object types 0x%llx not supported",
                 (unsigned long long)(obj_type & ~known));
        return EOPNOTSUPP;
    }
    pthread_mutex_lock(&sv_mlx5.lock);
    sv_g.hooks = &sv_mlx5_hooks; /* before any front: see struct sv_global */
    sv_mlx5_uar_get();
    if (sv_mlx5.uar == NULL) {
        ret = ENOMEM;
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_QP)) {
        ret = sv_mlx5_qp_front(sv_qp(obj->qp.in), obj->qp.out);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_CQ)) {
        ret = sv_mlx5_cq_front(sv_cq(obj->cq.in), obj->cq.out);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_SRQ)) {
        ret = sv_mlx5_srq_front(sv_srq(obj->srq.in), obj->srq.out);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_AH)) {
        sv_mlx5_ah_front(sv_container_of(obj->ah.in, struct sv_ah, ah),
                         obj->ah.out);
    }
    if ((ret == 0) && (obj_type & MLX5DV_OBJ_DM)) {
        obj->dm.out->buf       = sv_dm_buf(obj->dm.in, &obj->dm.out->length);
        obj->dm.out->comp_mask = 0;
    }
    if ((ret == 0) && (obj_type & (MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ |
                                   MLX5DV_OBJ_SRQ))) {
        sv_mlx5_engine_start();
    }
    pthread_mutex_unlock(&sv_mlx5.lock);
    return ret;
}

/* Unlink the front f from the list at head, linked by next (under
 * sv_mlx5.lock) */
#define SV_MLX5_UNLINK(_head, _f) \
    do { \
        __typeof__(_f) *_pp; \
        for (_pp = &(_head); *_pp != NULL; _pp = &(*_pp)->next) { \
            if (*_pp == (_f)) { \
                *_pp = (_f)->next; \
                break; \
            } \
        } \
    } while (0)

/* ibv_destroy_*: the engine lets go of the object before it goes (it
 * holds the lock for a whole round) */
void sv_mlx5_qp_detach(struct sv_qp *qp)
{
    struct sv_mlx5_qp *f = qp->mlx5;

    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&sv_mlx5.lock);
    SV_MLX5_UNLINK(sv_mlx5.qps, f);
    qp->mlx5 = NULL;
    pthread_mutex_unlock(&sv_mlx5.lock);
    ibv_dereg_mr(f->bounce_mr);
    while (f->nah > 0) {
        ibv_destroy_ah(f->ahs[--f->nah].ah);
    }
    free(f->ahs);
    free(f->rq_held);
    free(f->rq_held_set);
    free(f->rq_buf);
    free(f->bounce);
    sv_mlx5_front_free(f->sq_buf, f->dbrec, f);
}

/* A QP moved to RESET: the engine reads its queues from index 0 again,
 * and the doorbell records are zeroed as libmlx5 zeroes them
 * (mlx5_modify_qp: db[MLX5_RCV_DBR] = db[MLX5_SND_DBR] = 0 with the
 * queue indices), so that WQEs posted before the reset are not run */
void sv_mlx5_qp_reset(struct sv_qp *qp)
{
    struct sv_mlx5_qp *f;

    pthread_mutex_lock(&sv_mlx5.lock);
    f = qp->mlx5;
    if (f != NULL) {
        __atomic_store_n(&f->dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&f->dbrec[MLX5_SND_DBR], 0, __ATOMIC_RELAXED);
        f->sq_ci       = 0;
        f->rq_mirrored = 0;
        f->rq_done     = 0;
        if (f->rq_cnt != 0) {
            memset(f->rq_held_set, 0, f->rq_cnt);
        }
        f->nop_wait    = 0;
        f->nop_ready   = 0;
    }
    pthread_mutex_unlock(&sv_mlx5.lock);
}

void sv_mlx5_cq_detach(struct sv_cq *cq)
{
    struct sv_mlx5_cq *f = cq->mlx5;

    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&sv_mlx5.lock);
    SV_MLX5_UNLINK(sv_mlx5.cqs, f);
    cq->mlx5 = NULL;
    pthread_mutex_unlock(&sv_mlx5.lock);
    sv_mlx5_front_free(f->buf, f->dbrec, f);
}

void sv_mlx5_srq_detach(struct sv_srq *srq)
{
    struct sv_mlx5_srq *f = srq->mlx5;

    if (f == NULL) {
        return;
    }
    pthread_mutex_lock(&sv_mlx5.lock);
    SV_MLX5_UNLINK(sv_mlx5.srqs, f);
    srq->mlx5 = NULL;
    pthread_mutex_unlock(&sv_mlx5.lock);
    sv_mlx5_front_free(f->buf, f->dbrec, f);
}
