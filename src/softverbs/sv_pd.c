/*
 * softverbs protection domains, parent domains and thread domains.
 *
 * A parent domain (ibv_alloc_parent_domain(3)) is "completely
 * interchangeable with the struct ibv_pd used to create it": it carries
 * the pd_id of the PD it contains, so every protection check (MR, MW, QP,
 * SRQ) sees the two as one domain, and objects created with it reference
 * it, so that ibv_dealloc_pd of a parent domain in use fails with EBUSY as
 * with mlx5 (mlx5_dealloc_parent_domain: refcount > 1). The rules are those
 * of rdma-core 44: libibverbs' ibv_check_alloc_parent_domain (no PD:
 * EINVAL) and mlx5's mlx5_alloc_parent_domain / mlx5_alloc_td /
 * mlx5_dealloc_td (providers/mlx5/verbs.c; rxe has neither parent nor
 * thread domains).
 *
 * Thread domains are a hint: "objects created under this thread domain
 * will disable internal locking" (ibv_alloc_td(3)); softverbs keeps its
 * locks, which is allowed (objects stay safe for any use). A custom
 * allocator of a parent domain (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) is
 * asked for the buffers softverbs keeps in the process: a QP's send queue
 * (resource type MLX5DV_RES_TYPE_QP, as mlx5 allocates its QP buffers
 * through it). Receive queues and CQ rings live in the shared registry,
 * where other processes write into them, so they cannot come from it.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ibv_pd *sv_alloc_pd(struct ibv_context *ctx)
{
    struct sv_pd *pd = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    pd->pd_id = sv_g.shm->next_pd_id++;
    sv_shm_unlock();
    pd->pd.context = ctx;
    pd->pd.handle  = pd->pd_id;
    return &pd->pd;
}

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
    return sv_alloc_pd(ctx);
}

/* ibv_dealloc_pd(3) for a PD and a parent domain (ibv_alloc_parent_domain(3):
 * "ibv_dealloc_pd() will deallocate the parent domain"): fails with EBUSY
 * while any object (a parent domain too) is associated with it */
SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    struct sv_pd *spd = sv_pd(pd);

    if (__atomic_load_n(&spd->refs, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    if (spd->parent_of != NULL) {
        sv_pd_ref(&spd->parent_of->pd, -1);
    }
    if (spd->td != NULL) {
        __atomic_fetch_sub(&spd->td->refs, 1, __ATOMIC_RELAXED);
    }
    free(spd);
    return 0;
}

/* ---------------------------------------------------------------------
 * Thread domains: mlx5_alloc_td refuses any comp_mask bit (EINVAL) and
 * mlx5_dealloc_td a TD that a parent domain still uses (EBUSY)
 * ------------------------------------------------------------------- */
static struct ibv_td *sv_alloc_td(struct ibv_context *ctx,
                                  struct ibv_td_init_attr *init_attr)
{
    struct sv_td *td;

    if ((init_attr == NULL) || (init_attr->comp_mask != 0)) {
        errno = EINVAL;
        return NULL;
    }
    td = calloc(1, sizeof(*td));
    if (td == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    td->td.context = ctx;
    return &td->td;
}

static int sv_dealloc_td(struct ibv_td *ibtd)
{
    struct sv_td *td = sv_container_of(ibtd, struct sv_td, td);

    if (__atomic_load_n(&td->refs, __ATOMIC_RELAXED) > 0) {
        return EBUSY;
    }
    free(td);
    return 0;
}

/* ---------------------------------------------------------------------
 * Parent domains
 * ------------------------------------------------------------------- */
static struct ibv_pd *sv_alloc_parent_domain(
    struct ibv_context *ctx, struct ibv_parent_domain_init_attr *attr)
{
    const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                           IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    struct sv_pd *inner, *pd;

    /* libibverbs' ibv_check_alloc_parent_domain: a PD must be given;
     * mlx5_alloc_parent_domain: unknown comp_mask bits are EINVAL. Objects
     * of another context, or allocators without both callbacks, are
     * EINVAL too (mlx5 would use them as given) */
    if ((attr == NULL) || (attr->pd == NULL) || (attr->comp_mask & ~known) ||
        (attr->pd->context != ctx) ||
        ((attr->td != NULL) && (attr->td->context != ctx)) ||
        ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
         ((attr->alloc == NULL) || (attr->free == NULL)))) {
        errno = EINVAL;
        return NULL;
    }
    pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    /* a parent domain given as the PD stands for the PD it contains, as
     * mlx5's to_mpd() resolves it */
    inner = sv_pd(attr->pd);
    if (inner->parent_of != NULL) {
        inner = inner->parent_of;
    }
    pd->pd.context = ctx;
    pd->pd.handle  = inner->pd.handle;
    pd->pd_id      = inner->pd_id;
    pd->parent_of  = inner;
    sv_pd_ref(&inner->pd, 1);
    if (attr->td != NULL) {
        pd->td = sv_container_of(attr->td, struct sv_td, td);
        __atomic_fetch_add(&pd->td->refs, 1, __ATOMIC_RELAXED);
    }
    if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
        pd->alloc = attr->alloc;
        pd->free  = attr->free;
    }
    if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) {
        pd->pd_context = attr->pd_context;
    }
    return &pd->pd;
}

/* A buffer for an object of pd: the parent domain's allocator, which may
 * answer IBV_ALLOCATOR_USE_DEFAULT, and zeroes what it gives
 * (ibv_alloc_parent_domain(3)); else calloc. Page-aligned, as mlx5 asks
 * for its queue buffers */
void *sv_pd_buf_alloc(struct ibv_pd *pd, size_t size, uint64_t type,
                      int *custom)
{
    struct sv_pd *p = sv_pd(pd);
    void *buf;

    *custom = 0;
    if (p->alloc != NULL) {
        buf = p->alloc(pd, p->pd_context, size, sysconf(_SC_PAGESIZE), type);
        if (buf != IBV_ALLOCATOR_USE_DEFAULT) {
            if (buf == NULL) {
                errno = ENOMEM;
            }
            *custom = (buf != NULL);
            return buf;
        }
    }
    buf = calloc(1, size);
    if (buf == NULL) {
        errno = ENOMEM;
    }
    return buf;
}

void sv_pd_buf_free(struct ibv_pd *pd, void *buf, uint64_t type, int custom)
{
    struct sv_pd *p = sv_pd(pd);

    if (custom) {
        p->free(pd, p->pd_context, buf, type);
    } else {
        free(buf);
    }
}

void sv_pd_init_ops(struct verbs_context *v)
{
    v->alloc_td            = sv_alloc_td;
    v->dealloc_td          = sv_dealloc_td;
    v->alloc_parent_domain = sv_alloc_parent_domain;
}
