/*
 * The UCX entry points whose shape changes between the UCX releases qpx
 * builds against (1.13, 1.19, 1.22), in one place: qpx's code is written
 * once against the release-neutral names below, and this header (with
 * ucx_ops.c) says what each release wants.
 *
 * What differs (UCX's own sources of each release are the reference):
 *  - 1.19: the memory domain reports through uct_md_attr_v2_t, registers
 *    with a params struct, packs an mkey with its address range, and has
 *    mem_attach where is_sockaddr_accessible was; the component unpacks
 *    an rkey with params and compares rkeys; the interfaces' internal ops
 *    gain ep_connect_to_ep_v2, iface_is_reachable_v2 and ep_is_connected,
 *    which UCP calls instead of the public ops, and UCX no longer exports a
 *    default table; ucs_mpool_init takes a params struct; the interface
 *    memory pool config gains max_chunk_size and grow_factor; the rcache
 *    takes the alignment per get and calls a merge op; configuration types
 *    have a doc function; the callback queue has oneshot calls instead of
 *    flags.
 *  - 1.22: the internal ops start with iface_query_v2, and gain
 *    ep_get_device_ep and ep_put_sgl_zcopy; ep_invalidate takes params;
 *    the memory domain gains mem_elem_pack.
 */
#ifndef QPX_UCX_OPS_H_
#define QPX_UCX_OPS_H_

#include "ucx_compat.h"

#include <ucs/config/parser.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>


/*
 * Loaded into another UCX release, a qpx build must get as far as its
 * version check (qpx_component_register), which refuses that release with
 * one clear message: the symbols of this release that another one lacks are
 * weak references, so that the dynamic linker does not end the program
 * first ("undefined symbol"). Nothing calls them before the check passed.
 * (contrib/ucx-versions.sh loads each build into the other releases.)
 */
#if QPX_UCX_AT_LEAST(1, 19)
#  pragma weak ucs_callbackq_add_oneshot
#  pragma weak ucs_callbackq_remove_oneshot
#  pragma weak ucs_config_doc_nop
#  pragma weak ucs_mpool_params_reset
#  pragma weak uct_base_rkey_compare
#  pragma weak uct_iface_fill_info_str_buf
#  pragma weak uct_iface_is_reachable_params_valid
#  pragma weak uct_iface_scope_is_reachable
#  pragma weak uct_ep_is_connected
#  pragma weak uct_md_base_md_query
#else
#  pragma weak ucs_callbackq_remove_if
#  pragma weak ucs_callbackq_add_safe
#endif
#if QPX_UCX_AT_LEAST(1, 22)
#  pragma weak uct_iface_base_query_v2
#endif


/* ------------------------------------------------------------------------
 * Interface internal ops
 */

/*
 * uct_ep_is_connected (1.19+: does ep talk to the peer of these addresses;
 * UCP asks it when it reconfigures an endpoint, to reuse a lane). Each
 * transport answers it with UCX's signature in every release: 1.13, which
 * never asks, gets the parameters' type here, as 1.19 declares it.
 */
#if !QPX_UCX_AT_LEAST(1, 19)
typedef enum {
    UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR = UCS_BIT(0),
    UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR  = UCS_BIT(1),
    UCT_EP_IS_CONNECTED_FIELD_EP_ADDR     = UCS_BIT(2)
} uct_ep_is_connected_field_mask_t;

typedef struct uct_ep_is_connected_params {
    uint64_t                field_mask;
    const uct_device_addr_t *device_addr;
    const uct_iface_addr_t  *iface_addr;
    const uct_ep_addr_t     *ep_addr;
} uct_ep_is_connected_params_t;
#endif

/* Ask another transport's endpoint (the hybrid's sub-endpoints) through
 * UCX: its answer on 1.19+, 0 on 1.13 (nothing there asks) */
int qpx_ucx_ep_is_connected(uct_ep_h ep,
                            const uct_ep_is_connected_params_t *params);

#if QPX_UCX_AT_LEAST(1, 19)
int qpx_ucx_iface_is_reachable_v2(const uct_iface_h iface,
                                  const uct_iface_is_reachable_params_t *params);
ucs_status_t
qpx_ucx_ep_connect_to_ep_v2(uct_ep_h ep, const uct_device_addr_t *dev_addr,
                            const uct_ep_addr_t *ep_addr,
                            const uct_ep_connect_to_ep_params_t *params);
#  define QPX_UCX_INTERNAL_OPS_V2(_ep_is_connected) \
    .ep_connect_to_ep_v2   = qpx_ucx_ep_connect_to_ep_v2, \
    .iface_is_reachable_v2 = qpx_ucx_iface_is_reachable_v2, \
    .ep_is_connected       = _ep_is_connected,
#else
#  define QPX_UCX_INTERNAL_OPS_V2(_ep_is_connected)
#endif

#if QPX_UCX_AT_LEAST(1, 22)
#  define QPX_UCX_INTERNAL_OPS_V3 \
    .iface_query_v2   = uct_iface_base_query_v2, \
    .ep_get_device_ep = (void*)ucs_empty_function_return_unsupported, \
    .ep_put_sgl_zcopy = (void*)ucs_empty_function_return_unsupported,
#else
#  define QPX_UCX_INTERNAL_OPS_V3
#endif

/*
 * The initializer of a uct_iface_internal_ops_t for this UCX: the four ops
 * every release has and ep_is_connected (dropped where UCX has no such op),
 * given by the transport, and the ones later releases added, which qpx
 * answers from the public ops (reachability and connection go through
 * iface->ops, so a transport's wrappers stay in the path).
 */
#define QPX_UCX_IFACE_INTERNAL_OPS(_estimate_perf, _vfs_refresh, _ep_query, \
                                   _ep_invalidate, _ep_is_connected) \
    { \
        QPX_UCX_INTERNAL_OPS_V3 \
        QPX_UCX_INTERNAL_OPS_V2(_ep_is_connected) \
        .iface_estimate_perf = _estimate_perf, \
        .iface_vfs_refresh   = _vfs_refresh, \
        .ep_query            = _ep_query, \
        .ep_invalidate       = _ep_invalidate \
    }


/* The argument of the ep_invalidate internal op: flags before 1.22, a
 * params struct since */
#if QPX_UCX_AT_LEAST(1, 22)
typedef const uct_ep_invalidate_params_t *qpx_ep_invalidate_arg_t;
#else
typedef unsigned qpx_ep_invalidate_arg_t;
#endif

/* An md whose deregistration can invalidate (UCT_MD_MEM_DEREG_FLAG_
 * INVALIDATE): one flag before 1.19, since then also one per kind of
 * access, which UCP 1.19's wireup asks of an RMA lane */
#if QPX_UCX_AT_LEAST(1, 19)
#  define QPX_UCX_MD_FLAGS_INVALIDATE \
    (UCT_MD_FLAG_INVALIDATE | UCT_MD_FLAG_INVALIDATE_RMA | \
     UCT_MD_FLAG_INVALIDATE_AMO)
#else
#  define QPX_UCX_MD_FLAGS_INVALIDATE UCT_MD_FLAG_INVALIDATE
#endif

/* libuct's uct_ep_invalidate (internal, exported by every release): calls
 * the endpoint's interface's internal op */
ucs_status_t uct_ep_invalidate(uct_ep_h ep, qpx_ep_invalidate_arg_t arg);


/* A network transport (1.19+): UCP takes an interface without the flag for
 * shared memory (its intra-node thresholds, left out of network-only
 * worker addresses) */
#if QPX_UCX_AT_LEAST(1, 19)
#  define QPX_UCX_IFACE_FLAG_INTER_NODE UCT_IFACE_FLAG_INTER_NODE
#else
#  define QPX_UCX_IFACE_FLAG_INTER_NODE 0
#endif

/* What a release's uct_base_iface_query leaves wrong for qpx: 1.22's
 * ctl_device 0 is a system device; qpx's control path has none */
static inline void qpx_ucx_iface_attr_fixup(uct_iface_attr_t *iface_attr)
{
#if QPX_UCX_AT_LEAST(1, 22)
    iface_attr->ctl_device = UCS_SYS_DEVICE_ID_UNKNOWN;
#else
    (void)iface_attr;
#endif
}


/* ------------------------------------------------------------------------
 * Memory domain and component
 */

#if QPX_UCX_AT_LEAST(1, 19)
typedef uct_md_attr_v2_t qpx_ucx_md_attr_t;
typedef const uct_md_mem_reg_params_t *qpx_ucx_mem_reg_arg_t;
/* mkey_pack's arguments between memh and params */
#  define QPX_UCX_MKEY_PACK_RANGE_ARGS void *address, size_t length,
/* rkey_unpack's arguments between the buffer and rkey_p */
#  define QPX_UCX_RKEY_UNPACK_PARAMS_ARGS \
    const uct_rkey_unpack_params_t *unpack_params,
#  define QPX_UCX_COMPONENT_OPS_V2 .rkey_compare = uct_base_rkey_compare,
#  define QPX_UCX_MD_OPS_V2 \
    .mem_attach = (void*)ucs_empty_function_return_unsupported,
#else
typedef uct_md_attr_t qpx_ucx_md_attr_t;
typedef unsigned qpx_ucx_mem_reg_arg_t;
#  define QPX_UCX_MKEY_PACK_RANGE_ARGS
#  define QPX_UCX_RKEY_UNPACK_PARAMS_ARGS
#  define QPX_UCX_COMPONENT_OPS_V2
#  define QPX_UCX_MD_OPS_V2 \
    .is_sockaddr_accessible = (void*)ucs_empty_function_return_zero,
#endif

#if QPX_UCX_AT_LEAST(1, 22)
#  define QPX_UCX_MD_OPS_V3 \
    .mem_elem_pack = (void*)ucs_empty_function_return_unsupported,
#else
#  define QPX_UCX_MD_OPS_V3
#endif

/* The uct_md_ops_t entries qpx does not implement, for this UCX */
#define QPX_UCX_MD_OPS_UNSUPPORTED \
    QPX_UCX_MD_OPS_V2 \
    QPX_UCX_MD_OPS_V3 \
    .mem_alloc  = (void*)ucs_empty_function_return_unsupported, \
    .mem_free   = (void*)ucs_empty_function_return_unsupported, \
    .mem_advise = (void*)ucs_empty_function_return_unsupported, \
    .mem_query  = (void*)ucs_empty_function_return_unsupported,

/* The uct_md_mem_flags of a registration */
static inline unsigned qpx_ucx_mem_reg_flags(qpx_ucx_mem_reg_arg_t arg)
{
#if QPX_UCX_AT_LEAST(1, 19)
    return UCT_MD_MEM_REG_FIELD_VALUE(arg, flags, FIELD_FLAGS, 0);
#else
    return arg;
#endif
}

/*
 * Give UCX the memory domain's attributes, filled in the shape every
 * release understands (uct_md_attr_t, without component_name, which UCX
 * sets): copied as they are into 1.13's, moved onto the defaults of
 * uct_md_base_md_query() in 1.19's (registrations of host memory may be
 * cached by UCP, aligned to a byte).
 */
void qpx_ucx_md_attr_export(const uct_md_attr_t *attr,
                            qpx_ucx_md_attr_t *ucx_attr);


/* ------------------------------------------------------------------------
 * UCS services
 */

/* Fill opts from entry's table and the environment (env_prefix, then the
 * table's prefix: "UCX_" "QPX_JOB_" reads UCX_QPX_JOB_<FIELD>), marking the
 * variables used, as UCX does for its own tables */
ucs_status_t qpx_ucx_config_fill(void *opts,
                                 ucs_config_global_list_entry_t *entry,
                                 const char *env_prefix);

/* The configuration parser's doc function, where it has one */
#if QPX_UCX_AT_LEAST(1, 19)
#  define QPX_UCX_CONFIG_DOC ucs_config_doc_nop,
#else
#  define QPX_UCX_CONFIG_DOC
#endif

/* ucs_mpool_init with the parameters of every release */
ucs_status_t qpx_ucx_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, ucs_mpool_ops_t *ops,
                                const char *name);

/* An interface memory pool configuration made of qpx's two settings,
 * with the growth defaults of releases that have more */
void qpx_ucx_iface_mpool_config_init(uct_iface_mpool_config_t *config,
                                     unsigned max_bufs, unsigned bufs_grow);

/* rcache parameters: zeroed, with the alignment fields where they are */
void qpx_ucx_rcache_params_init(ucs_rcache_params_t *params);

/* rcache ops the releases added (merge), as no-ops */
#if QPX_UCX_AT_LEAST(1, 19)
void qpx_ucx_rcache_merge_nop(void *context, ucs_rcache_t *rcache, void *arg,
                              ucs_rcache_region_t *region);
#  define QPX_UCX_RCACHE_OPS_V2 .merge = qpx_ucx_rcache_merge_nop,
#else
#  define QPX_UCX_RCACHE_OPS_V2
#endif

ucs_status_t qpx_ucx_rcache_get(ucs_rcache_t *rcache, void *address,
                                size_t length, int prot, void *arg,
                                ucs_rcache_region_t **region_p);

/* A oneshot callback on a worker's progress queue, and its removal */
void qpx_ucx_callbackq_add_oneshot(ucs_callbackq_t *cbq, void *key,
                                   ucs_callback_t cb, void *arg);
void qpx_ucx_callbackq_remove_oneshot(ucs_callbackq_t *cbq, void *key,
                                      ucs_callbackq_predicate_t pred,
                                      void *arg);

#endif
