/*
 * The entry points whose shape changes between UCX releases (ucx_ops.h):
 * adapters from what a release asks to qpx's release-neutral functions.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_ops.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>


#if QPX_UCX_AT_LEAST(1, 19)
/*
 * UCP asks reachability only through the internal op: qpx's public one
 * (iface->ops, which knows the transport's addresses) decides whether the
 * peer can be reached, and UCX's scope check whether it is on this device
 * when UCP asks that (its intra-node test, UCT_IFACE_REACHABILITY_SCOPE_
 * DEVICE).
 */
int qpx_ucx_iface_is_reachable_v2(const uct_iface_h iface,
                                  const uct_iface_is_reachable_params_t *params)
{
    const uct_iface_addr_t *iface_addr;

    if (!uct_iface_is_reachable_params_valid(
                params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR)) {
        return 0;
    }

    iface_addr = (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) ?
                 params->iface_addr : NULL;
    if (!iface->ops.iface_is_reachable(iface, params->device_addr,
                                       iface_addr)) {
        uct_iface_fill_info_str_buf(params, "not reachable over qpx");
        return 0;
    }

    return uct_iface_scope_is_reachable(iface, params);
}

/* Through the interface's public op, so that a transport's wrapper of it
 * (qpx_ud's async connect) stays in the path */
ucs_status_t
qpx_ucx_ep_connect_to_ep_v2(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                            const uct_ep_addr_t *ep_addr,
                            const uct_ep_connect_to_ep_params_t *params)
{
    return ep->iface->ops.ep_connect_to_ep(ep, dev_addr, ep_addr);
}

#endif


int qpx_ucx_ep_is_connected(uct_ep_h ep,
                            const uct_ep_is_connected_params_t *params)
{
#if QPX_UCX_AT_LEAST(1, 19)
    return uct_ep_is_connected(ep, params);
#else
    return 0;
#endif
}


void qpx_ucx_md_attr_export(const uct_md_attr_t *attr,
                            qpx_ucx_md_attr_t *ucx_attr)
{
#if QPX_UCX_AT_LEAST(1, 19)
    /* UCX set field_mask; the base query keeps it and fills the rest with
     * defaults (no capability, any size, byte alignment) */
    uct_md_base_md_query(ucx_attr);
    ucx_attr->flags            = attr->cap.flags;
    ucx_attr->max_alloc        = attr->cap.max_alloc;
    ucx_attr->max_reg          = attr->cap.max_reg;
    ucx_attr->reg_mem_types    = attr->cap.reg_mem_types;
    ucx_attr->access_mem_types = attr->cap.access_mem_types;
    ucx_attr->detect_mem_types = attr->cap.detect_mem_types;
    ucx_attr->alloc_mem_types  = attr->cap.alloc_mem_types;
    /* UCP caches the registrations of memory qpx registers (and asserts
     * that an MD it registers zero-copy buffers with says so) */
    ucx_attr->cache_mem_types  = attr->cap.reg_mem_types;
    ucx_attr->reg_cost         = attr->reg_cost;
    ucx_attr->rkey_packed_size = attr->rkey_packed_size;
    ucx_attr->local_cpus       = attr->local_cpus;
    ucx_attr->reg_alignment    = 1;
#else
    *ucx_attr = *attr;
#endif
}


ucs_status_t qpx_ucx_config_fill(void *opts,
                                 ucs_config_global_list_entry_t *entry,
                                 const char *env_prefix)
{
#if QPX_UCX_AT_LEAST(1, 19)
    return ucs_config_parser_fill_opts(opts, entry, env_prefix, 0);
#else
    return ucs_config_parser_fill_opts(opts, entry->table, env_prefix,
                                       entry->prefix, 0);
#endif
}


ucs_status_t qpx_ucx_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, ucs_mpool_ops_t *ops,
                                const char *name)
{
#if QPX_UCX_AT_LEAST(1, 19)
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = align_offset;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, align_offset, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}


void qpx_ucx_iface_mpool_config_init(uct_iface_mpool_config_t *config,
                                     unsigned max_bufs, unsigned bufs_grow)
{
    memset(config, 0, sizeof(*config));
    config->max_bufs  = max_bufs;
    config->bufs_grow = bufs_grow;
#if QPX_UCX_AT_LEAST(1, 19)
    /* Chunks of bufs_grow buffers, as in 1.13: no geometric growth, and a
     * chunk limited only by what ucs_mpool allows */
    config->max_chunk_size = SIZE_MAX;
    config->grow_factor    = 1.0;
#endif
}


void qpx_ucx_rcache_params_init(ucs_rcache_params_t *params)
{
    memset(params, 0, sizeof(*params));
#if !QPX_UCX_AT_LEAST(1, 19)
    params->alignment     = UCS_RCACHE_MIN_ALIGNMENT;
    params->max_alignment = sysconf(_SC_PAGESIZE);
#endif
}


#if QPX_UCX_AT_LEAST(1, 19)
void qpx_ucx_rcache_merge_nop(void *context, ucs_rcache_t *rcache, void *arg,
                              ucs_rcache_region_t *region)
{
}
#endif


ucs_status_t qpx_ucx_rcache_get(ucs_rcache_t *rcache, void *address,
                                size_t length, int prot, void *arg,
                                ucs_rcache_region_t **region_p)
{
#if QPX_UCX_AT_LEAST(1, 19)
    return ucs_rcache_get(rcache, address, length, UCS_RCACHE_MIN_ALIGNMENT,
                          prot, arg, region_p);
#else
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}


void qpx_ucx_callbackq_add_oneshot(ucs_callbackq_t *cbq, void *key,
                                   ucs_callback_t cb, void *arg)
{
#if QPX_UCX_AT_LEAST(1, 19)
    ucs_callbackq_add_oneshot(cbq, key, cb, arg);
#else
    (void)key;
    ucs_callbackq_add_safe(cbq, cb, arg, UCS_CALLBACKQ_FLAG_ONESHOT);
#endif
}


void qpx_ucx_callbackq_remove_oneshot(ucs_callbackq_t *cbq, void *key,
                                      ucs_callbackq_predicate_t pred,
                                      void *arg)
{
#if QPX_UCX_AT_LEAST(1, 19)
    ucs_callbackq_remove_oneshot(cbq, key, pred, arg);
#else
    (void)key;
    ucs_callbackq_remove_if(cbq, pred, arg);
#endif
}
