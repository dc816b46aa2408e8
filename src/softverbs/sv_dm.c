/*
 * softverbs device memory: ibv_alloc_dm(3), ibv_memcpy_to_dm /
 * ibv_memcpy_from_dm, ibv_reg_dm_mr, ibv_free_dm.
 *
 * An HCA's device memory (mlx5 MEMIC) is a small on-chip arena mapped into
 * the process. softverbs gives each device an arena of SV_MAX_DM bytes per
 * process (max_dm_size); an allocation is ordinary page-aligned memory of
 * the process, so peers reach it like any registered memory
 * (process_vm_*v), and it is reached only through the DM verbs and MRs
 * registered on it, as on hardware. The checks and errnos are rdma-core
 * 44's: mlx5 alloc_dm_memic and mlx5_access_dm (providers/mlx5/verbs.c),
 * libibverbs ibv_cmd_reg_dm_mr (libibverbs/cmd_dm.c), mlx5_reg_dm_mr.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sv_dm {
    struct ibv_dm dm;
    struct sv_device *dev;
    void    *va;
    uint64_t length;              /* as asked */
    uint64_t charged;             /* against the device's arena */
    uint32_t refs;                /* MRs registered on it */
};

static pthread_mutex_t sv_dm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sv_dm_used[SV_MAX_DEVS];  /* bytes of each device's arena */

static inline struct sv_dm *sv_dm(struct ibv_dm *dm)
{
    return sv_container_of(dm, struct sv_dm, dm);
}

/* mlx5dv_init_obj(MLX5DV_OBJ_DM): where the program reaches the DM with
 * loads and stores (its arena memory, as MEMIC's mapped BAR) */
void *sv_dm_buf(struct ibv_dm *dm, uint64_t *length)
{
    *length = sv_dm(dm)->length;
    return sv_dm(dm)->va;
}

/* mlx5_access_dm: the range must lie in the DM (EFAULT), offset and length
 * be multiples of 4 bytes (EINVAL: the hardware copies 4-byte words) */
static int sv_dm_check(struct sv_dm *d, uint64_t off, size_t length)
{
    if ((off + length < off) || (off + length > d->length)) {
        return EFAULT;
    }
    if ((length & 3) || (off & 3)) {
        return EINVAL;
    }
    return 0;
}

static int sv_memcpy_to_dm(struct ibv_dm *dm, uint64_t off,
                           const void *host, size_t length)
{
    struct sv_dm *d = sv_dm(dm);
    int ret = sv_dm_check(d, off, length);

    if (ret == 0) {
        memcpy((char *)d->va + off, host, length);
    }
    return ret;
}

static int sv_memcpy_from_dm(void *host, struct ibv_dm *dm, uint64_t off,
                             size_t length)
{
    struct sv_dm *d = sv_dm(dm);
    int ret = sv_dm_check(d, off, length);

    if (ret == 0) {
        memcpy(host, (char *)d->va + off, length);
    }
    return ret;
}

static struct ibv_dm *sv_alloc_dm(struct ibv_context *ctx,
                                  struct ibv_alloc_dm_attr *attr)
{
    const uint64_t page = sysconf(_SC_PAGESIZE);
    struct sv_device *dev = sv_ctx(ctx)->dev;
    uint64_t align, charged;
    struct sv_dm *d;

    /* alloc_dm_memic: above max_dm_size EINVAL; no comp_mask bits are
     * defined (check_comp_mask in mlx5dv_alloc_dm) */
    if ((attr->length == 0) || (attr->length > SV_MAX_DM) ||
        (attr->comp_mask != 0) || (attr->log_align_req > 20)) {
        errno = EINVAL;
        return NULL;
    }
    align   = (1ull << attr->log_align_req) > page ?
              (1ull << attr->log_align_req) : page;
    charged = (attr->length + page - 1) & ~(page - 1);
    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&sv_dm_lock);
    if (sv_dm_used[dev->index] + charged > SV_MAX_DM) {
        /* the arena is full: the kernel's MEMIC allocator gives ENOMEM */
        pthread_mutex_unlock(&sv_dm_lock);
        free(d);
        errno = ENOMEM;
        return NULL;
    }
    sv_dm_used[dev->index] += charged;
    pthread_mutex_unlock(&sv_dm_lock);
    d->va = aligned_alloc(align, charged);
    if (d->va == NULL) {
        pthread_mutex_lock(&sv_dm_lock);
        sv_dm_used[dev->index] -= charged;
        pthread_mutex_unlock(&sv_dm_lock);
        free(d);
        errno = ENOMEM;
        return NULL;
    }
    memset(d->va, 0, charged);
    d->dev               = dev;
    d->length            = attr->length;
    d->charged           = charged;
    d->dm.context        = ctx;
    d->dm.memcpy_to_dm   = sv_memcpy_to_dm;
    d->dm.memcpy_from_dm = sv_memcpy_from_dm;
    d->dm.handle         = (uint32_t)(uintptr_t)d;
    return &d->dm;
}

static int sv_free_dm(struct ibv_dm *dm)
{
    struct sv_dm *d = sv_dm(dm);

    /* an MR holds it (the kernel's usecnt of the DM object) */
    if (__atomic_load_n(&d->refs, __ATOMIC_ACQUIRE) > 0) {
        return EBUSY;
    }
    pthread_mutex_lock(&sv_dm_lock);
    sv_dm_used[d->dev->index] -= d->charged;
    pthread_mutex_unlock(&sv_dm_lock);
    free(d->va);
    free(d);
    return 0;
}

/* mlx5_reg_dm_mr takes local/remote write, read, atomic, zero based and the
 * optional range (EINVAL for others, ON_DEMAND included); libibverbs'
 * ibv_cmd_reg_dm_mr requires IBV_ACCESS_ZERO_BASED (EINVAL): the MR's
 * addresses are offsets from its start; the kernel checks the range lies in
 * the DM (EINVAL; UVERBS_METHOD_DM_MR_REG in
 * drivers/infiniband/core/uverbs_std_types_mr.c). A length of 0 is taken:
 * neither that handler nor mlx5_ib_reg_dm_mr (mlx5_ib_get_dm_mr, an mkey
 * of length 0) refuses it; every access through such an MR is out of
 * bounds */
static struct ibv_mr *sv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
                                   uint64_t off, size_t length,
                                   unsigned access)
{
    const unsigned allowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC |
                             IBV_ACCESS_ZERO_BASED |
                             IBV_ACCESS_OPTIONAL_RANGE;
    struct sv_dm *d = sv_dm(dm);
    struct ibv_mr *mr;

    if ((access & ~allowed) || !(access & IBV_ACCESS_ZERO_BASED) ||
        (off + length < off) || (off + length > d->length)) {
        errno = EINVAL;
        return NULL;
    }
    mr = sv_mr_reg(pd, (char *)d->va + off, length, 0, access);
    if (mr == NULL) {
        return NULL;
    }
    sv_mr_set_dm(mr, &d->refs);
    mr->addr = NULL;              /* as ibv_cmd_reg_dm_mr leaves it */
    __atomic_fetch_add(&d->refs, 1, __ATOMIC_ACQ_REL);
    return mr;
}

void sv_dm_init_ops(struct verbs_context *v)
{
    v->alloc_dm  = sv_alloc_dm;
    v->free_dm   = sv_free_dm;
    v->reg_dm_mr = sv_reg_dm_mr;
}
