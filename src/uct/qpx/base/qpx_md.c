/*
 * qpx memory domain: device discovery, memory registration, remote keys.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_md.h"
#include "qpx_component.h"

#include <ucs/qpx_config.h>
#include <ucs/ucx_ops.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>


ucs_config_field_t qpx_md_config_table[] = {
    /* UCX_QPX_<NAME> only: unnamed, UCX's common MD options would also be
     * read under their bare UCX_<NAME> */
    {"QPX_", "", NULL, ucs_offsetof(qpx_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"REG_OVERHEAD", "16us",
     "Estimated fixed cost of one memory registration.",
     ucs_offsetof(qpx_md_config_t, reg_overhead), QPX_CONFIG_TYPE_TIME},

    {"REG_GROWTH", "0.06ns",
     "Estimated cost of registering one byte of memory.",
     ucs_offsetof(qpx_md_config_t, reg_growth), QPX_CONFIG_TYPE_TIME},

    {"RCACHE", "y",
     "Cache memory registrations (UCX's registration cache): a buffer "
     "registered again, as UCP does for every rendezvous message, reuses "
     "the registration; a registration is dropped when its memory is "
     "unmapped.",
     ucs_offsetof(qpx_md_config_t, rcache), UCS_CONFIG_TYPE_BOOL},

    {"RCACHE_OVERHEAD", "180ns",
     "Estimated cost of a registration found in the cache (reported to UCP "
     "as the registration cost when the cache is on).",
     ucs_offsetof(qpx_md_config_t, rcache_overhead), QPX_CONFIG_TYPE_TIME},

    {"GID_INDEX", "auto",
     "The GID a RoCE port sends from (and is reached at). auto: of the "
     "port's populated GIDs, a RoCE v2 one before a v1 one, an IPv4-mapped "
     "address before a global IPv6 one before a link-local one (the debug "
     "log says which). A number: that index of the table; one that names no "
     "populated GID is refused. InfiniBand ports route by LID and ignore it.",
     ucs_offsetof(qpx_md_config_t, gid_index), QPX_CONFIG_TYPE_ULUNITS},

    {NULL}
};


static ucs_status_t qpx_md_query(uct_md_h uct_md,
                                 qpx_ucx_md_attr_t *ucx_attr)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);
    uct_md_attr_t attr, *md_attr = &attr;

    memset(md_attr, 0, sizeof(*md_attr));
    /* Invalidation (qpx_md_mem_dereg): UCP asks it of an RMA lane that is
     * not point to point (DC, UD) when endpoints handle peer failure */
    md_attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                                    UCT_MD_FLAG_NEED_RKEY |
                                    QPX_UCX_MD_FLAGS_INVALIDATE;
    /* No UCT_MD_FLAG_ALLOC: nothing is allocated here, so nothing limits
     * a size by it; SIZE_MAX, as UCX's IB memory domain reports (0 made
     * UCX's test harness trim every transfer size to nothing) */
    md_attr->cap.max_alloc        = SIZE_MAX;
    md_attr->cap.max_reg          = md->dev.attr.max_mr_size;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->reg_cost             = md->reg_cost;
    md_attr->rkey_packed_size     = sizeof(qpx_packed_rkey_t);
    ucs_strncpy_zero(md_attr->component_name, QPX_COMPONENT_NAME,
                     sizeof(md_attr->component_name));
    CPU_ZERO(&md_attr->local_cpus);
    qpx_ucx_md_attr_export(md_attr, ucx_attr);
    return UCS_OK;
}


static ucs_status_t qpx_md_mem_reg_flags(uct_md_h uct_md, void *address,
                                         size_t length, unsigned flags,
                                         uct_mem_h *memh_p)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);
    ucs_status_t status;
    struct ibv_mr *mr;
    qpx_mem_t *mem;

    /* A range the cache cannot hold (memory not writable, say) is
     * registered on its own; one the device had no room for is not tried
     * again */
    if (qpx_md_rcache_ready(md)) {
        status = qpx_md_rcache_get(md, address, length, flags, &mem);
        if (status == UCS_OK) {
            *memh_p = mem;
            return UCS_OK;
        } else if (status == UCS_ERR_NO_MEMORY) {
            return status;
        }
    }

    mem = malloc(sizeof(*mem));
    if (mem == NULL) {
        ucs_error("failed to allocate memory handle");
        return UCS_ERR_NO_MEMORY;
    }

    status = qpx_md_mr_reg(md, address, length, qpx_md_access_flags(flags),
                           flags & UCT_MD_MEM_FLAG_HIDE_ERRORS, &mr);
    if (status != UCS_OK) {
        free(mem);
        return status;
    }

    ucs_trace("%s: registered %p..%p lkey 0x%x rkey 0x%x", md->dev.name,
              address, UCS_PTR_BYTE_OFFSET(address, length), mr->lkey,
              mr->rkey);
    mem->mr     = mr;
    mem->region = NULL;
    *memh_p     = mem;
    return UCS_OK;
}


static ucs_status_t qpx_md_mem_reg(uct_md_h uct_md, void *address,
                                   size_t length, qpx_ucx_mem_reg_arg_t arg,
                                   uct_mem_h *memh_p)
{
    return qpx_md_mem_reg_flags(uct_md, address, length,
                                qpx_ucx_mem_reg_flags(arg), memh_p);
}


/*
 * Deregistration, and with UCT_MD_MEM_DEREG_FLAG_INVALIDATE an
 * invalidation: params->comp completes once no remote access and no
 * zero-copy operation can reach the memory through this registration.
 * ibv_dereg_mr gives that when it returns (the keys are invalid: IBTA vol 1
 * 10.6.7.2, and an access with them fails as one with a wrong key), so
 * every rkey qpx packs can be invalidated, with no indirect key (mlx5's
 * UMR) to change. A cached registration others hold is only taken out of
 * the cache: it completes when the last holder gives it back.
 */
static ucs_status_t qpx_md_mem_dereg(uct_md_h uct_md,
                                     const uct_md_mem_dereg_params_t *params)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);
    uct_completion_t *comp = NULL;
    qpx_mem_t *mem;
    int ret;

    if (!(params->field_mask & UCT_MD_MEM_DEREG_FIELD_MEMH) ||
        (params->memh == UCT_MEM_HANDLE_NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params->field_mask & UCT_MD_MEM_DEREG_FIELD_FLAGS) &&
        (params->flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE)) {
        if (!(params->field_mask & UCT_MD_MEM_DEREG_FIELD_COMPLETION) ||
            (params->comp == NULL)) {
            ucs_error("%s: invalidation without a completion",
                      md->dev.name);
            return UCS_ERR_INVALID_PARAM;
        }
        comp = params->comp;
    }

    mem = params->memh;
    if (comp != NULL) {
        ucs_debug("%s: invalidating rkey 0x%x%s", md->dev.name, mem->mr->rkey,
                  (mem->region != NULL) ? " (cached)" : "");
    }
    if (mem->region != NULL) {
        qpx_md_rcache_put(md, mem, comp);
        return UCS_OK;
    }

    ret = ibv_dereg_mr(mem->mr);
    if (ret != 0) {
        ucs_error("%s: ibv_dereg_mr(lkey 0x%x) failed: %s", md->dev.name,
                  mem->mr->lkey, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    free(mem);
    if (comp != NULL) {
        qpx_invoke_completion(comp, UCS_OK);
    }
    return UCS_OK;
}


static ucs_status_t qpx_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                                     QPX_UCX_MKEY_PACK_RANGE_ARGS
                                     const uct_md_mkey_pack_params_t *params,
                                     void *rkey_buffer)
{
    qpx_mem_t *mem          = memh;
    qpx_packed_rkey_t *pkey = rkey_buffer;

    pkey->rkey = mem->mr->rkey;
    return UCS_OK;
}


ucs_status_t qpx_md_rkey_unpack(uct_component_t *component,
                                const void *rkey_buffer,
                                QPX_UCX_RKEY_UNPACK_PARAMS_ARGS
                                uct_rkey_t *rkey_p, void **handle_p)
{
    const qpx_packed_rkey_t *pkey = rkey_buffer;

    *rkey_p   = pkey->rkey;
    *handle_p = NULL;
    return UCS_OK;
}


ucs_status_t qpx_md_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle)
{
    return UCS_OK;
}


static ucs_status_t qpx_md_detect_memory_type(uct_md_h md, const void *addr,
                                              size_t length,
                                              ucs_memory_type_t *mem_type_p)
{
    return UCS_ERR_UNSUPPORTED;
}


static void qpx_md_close(uct_md_h uct_md)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);
    int ret;

    /* its registrations use the PD */
    qpx_md_rcache_destroy(md);
    ret = ibv_dealloc_pd(md->pd);
    if (ret != 0) {
        ucs_warn("%s: ibv_dealloc_pd() failed: %s (objects still use it)",
                 md->dev.name, strerror(ret));
    }

    qpx_device_events_stop(&md->dev);
    qpx_device_close(&md->dev);
    free(md);
}


static uct_md_ops_t qpx_md_ops = {
    .close                  = qpx_md_close,
    .query                  = qpx_md_query,
    QPX_UCX_MD_OPS_UNSUPPORTED
    .mem_reg                = qpx_md_mem_reg,
    .mem_dereg              = qpx_md_mem_dereg,
    .mkey_pack              = qpx_md_mkey_pack,
    .detect_memory_type     = qpx_md_detect_memory_type
};


ucs_status_t qpx_md_query_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **devices;
    int i, num_devices;

    devices = ibv_get_device_list(&num_devices);
    if ((devices == NULL) || (num_devices == 0)) {
        /* No RDMA device is not an error: the component offers nothing */
        ucs_debug("no verbs devices found");
        if (devices != NULL) {
            ibv_free_device_list(devices);
        }
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    /* libuct releases the array with ucs_free(), i.e. free() */
    resources = calloc(num_devices, sizeof(*resources));
    if (resources == NULL) {
        ucs_error("failed to allocate %d md resources", num_devices);
        ibv_free_device_list(devices);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_devices; ++i) {
        ucs_strncpy_zero(resources[i].md_name, ibv_get_device_name(devices[i]),
                         sizeof(resources[i].md_name));
    }

    ibv_free_device_list(devices);
    *resources_p     = resources;
    *num_resources_p = num_devices;
    return UCS_OK;
}


ucs_status_t qpx_md_open(uct_component_t *component, const char *md_name,
                         const uct_md_config_t *uct_md_config, uct_md_h *md_p)
{
    const qpx_md_config_t *config = ucs_derived_of(uct_md_config,
                                                   qpx_md_config_t);
    struct ibv_device **devices, *ibdev = NULL;
    ucs_status_t status;
    int i, num_devices;
    qpx_md_t *md;

    qpx_job_config_read();

    devices = ibv_get_device_list(&num_devices);
    if (devices == NULL) {
        ucs_debug("ibv_get_device_list() failed: %m");
        return UCS_ERR_NO_DEVICE;
    }

    for (i = 0; i < num_devices; ++i) {
        if (!strcmp(ibv_get_device_name(devices[i]), md_name)) {
            ibdev = devices[i];
            break;
        }
    }

    if (ibdev == NULL) {
        ucs_debug("verbs device '%s' not found", md_name);
        status = UCS_ERR_NO_DEVICE;
        goto err_free_list;
    }

    md = calloc(1, sizeof(*md));
    if (md == NULL) {
        ucs_error("failed to allocate memory domain %s", md_name);
        status = UCS_ERR_NO_MEMORY;
        goto err_free_list;
    }

    status = qpx_device_open(&md->dev, ibdev, config->gid_index);
    if (status != UCS_OK) {
        goto err_free_md;
    }

    md->pd = ibv_alloc_pd(md->dev.ctx);
    if (md->pd == NULL) {
        ucs_error("%s: ibv_alloc_pd() failed: %m", md_name);
        status = UCS_ERR_NO_MEMORY;
        goto err_close_device;
    }

    md->super.ops       = &qpx_md_ops;
    md->super.component = component;
    md->reg_cost.c      = config->reg_overhead;
    md->reg_cost.m      = config->reg_growth;
    md->rcache          = NULL;
    md->rcache_state    = config->rcache ? QPX_MD_RCACHE_LATER :
                                           QPX_MD_RCACHE_OFF;
    pthread_mutex_init(&md->rcache_lock, NULL);
    if (config->rcache) {
        /* what UCP pays for a registration found again */
        md->reg_cost.c = config->rcache_overhead;
        md->reg_cost.m = 0;
    }
    ibv_free_device_list(devices);

    *md_p = &md->super;
    return UCS_OK;

err_close_device:
    qpx_device_close(&md->dev);
err_free_md:
    free(md);
err_free_list:
    ibv_free_device_list(devices);
    return status;
}


/* ---- registered pool ---- */

typedef struct qpx_md_reg_mpool_priv {
    qpx_md_t        *md;
    int             access;
    ucs_log_level_t exhausted_level; /* qpx_md_reg_mpool_init's */
} qpx_md_reg_mpool_priv_t;

/* Chunk header: the registration of the chunk */
typedef struct qpx_md_reg_chunk {
    struct ibv_mr *mr;
} UCS_V_ALIGNED(64) qpx_md_reg_chunk_t;


static ucs_status_t qpx_md_reg_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                           void **chunk_p)
{
    qpx_md_reg_mpool_priv_t *priv = ucs_mpool_priv(mp);
    size_t size                   = sizeof(qpx_md_reg_chunk_t) + *size_p;
    qpx_md_reg_chunk_t *chunk;
    ucs_status_t status;
    int ret;

    ret = posix_memalign((void**)&chunk, 64, size);
    if (ret != 0) {
        ucs_error("%s: failed to allocate %zu bytes for %s", priv->md->dev.name,
                  size, ucs_mpool_name(mp));
        return UCS_ERR_NO_MEMORY;
    }

    chunk->mr = ibv_reg_mr(priv->md->pd, chunk, size, priv->access);
    if (chunk->mr == NULL) {
        status = qpx_device_err_status(errno);
        ucs_log(qpx_device_err_exhausted(errno) ? priv->exhausted_level :
                UCS_LOG_LEVEL_ERROR, "%s: ibv_reg_mr(%s, %zu bytes) "
                "failed: %m", priv->md->dev.name, ucs_mpool_name(mp), size);
        free(chunk);
        return status;
    }

    *chunk_p = chunk + 1;
    return UCS_OK;
}


static void qpx_md_reg_chunk_release(ucs_mpool_t *mp, void *ptr)
{
    qpx_md_reg_chunk_t *chunk = (qpx_md_reg_chunk_t*)ptr - 1;
    int ret;

    ret = ibv_dereg_mr(chunk->mr);
    if (ret != 0) {
        ucs_warn("ibv_dereg_mr(%s) failed: %s", ucs_mpool_name(mp),
                 strerror(ret));
    }
    free(chunk);
}


static void qpx_md_reg_obj_init(ucs_mpool_t *mp, void *obj, void *ptr)
{
    qpx_md_reg_chunk_t *chunk = (qpx_md_reg_chunk_t*)ptr - 1;
    qpx_md_reg_elem_t *elem   = obj;

    elem->lkey = chunk->mr->lkey;
    elem->rkey = chunk->mr->rkey;
}


static ucs_mpool_ops_t qpx_md_reg_mpool_ops = {
    .chunk_alloc   = qpx_md_reg_chunk_alloc,
    .chunk_release = qpx_md_reg_chunk_release,
    .obj_init      = qpx_md_reg_obj_init,
    .obj_cleanup   = NULL
};


ucs_status_t qpx_md_reg_mpool_init(qpx_md_t *md, ucs_mpool_t *mp,
                                   size_t elem_size, unsigned elems_per_chunk,
                                   int access, ucs_log_level_t exhausted_level,
                                   const char *name)
{
    qpx_md_reg_mpool_priv_t *priv;
    ucs_status_t status;

    if (elem_size < sizeof(qpx_md_reg_elem_t)) {
        ucs_error("%s: element of %zu bytes cannot hold its keys", name,
                  elem_size);
        return UCS_ERR_INVALID_PARAM;
    }
    status = qpx_ucx_mpool_init(mp, sizeof(*priv), elem_size, 0, 8,
                                elems_per_chunk, UINT_MAX,
                                &qpx_md_reg_mpool_ops, name);
    if (status != UCS_OK) {
        return status;
    }

    priv         = ucs_mpool_priv(mp);
    priv->md              = md;
    priv->access          = access;
    priv->exhausted_level = exhausted_level;
    return UCS_OK;
}
