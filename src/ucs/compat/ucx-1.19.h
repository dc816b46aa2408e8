/*
 * Declarations of the UCX 1.19.x and 1.22.x internal types qpx needs,
 * written from the field order of UCX 1.19.1 and 1.22.0 (their headers under
 * uct/base/, uct/api/v2/ and ucs/datastruct/arbiter.h are not installed).
 * The two releases share most layouts; what 1.22 added is under
 * QPX_UCX_AT_LEAST(1, 22), next to the 1.19 declaration it extends.
 *
 * UCX builds whose layouts depend on the configuration are taken as
 * configured by distributions and contrib/ucx-build.sh: assertions on
 * (ENABLE_ASSERT: the arbiter group's guard, the async context's owner),
 * statistics off (no stats node in the base interface). The sizes and
 * offsets checked at the end were compared with each release's own headers
 * (x86_64, that configuration). A layout that does not match fails the
 * build instead of corrupting memory at run time.
 *
 * Include only through src/ucs/ucx_compat.h.
 */
#ifndef QPX_UCX_COMPAT_1_19_H_
#define QPX_UCX_COMPAT_1_19_H_

#include <uct/api/uct.h>
#include <uct/api/tl.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/linear_func.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue_types.h>
#include <ucs/type/class.h>
#include <ucs/type/param.h>
#include <stddef.h>
#include <stdio.h>

#define QPX_UCX_COMPAT_MAJOR 1
#define QPX_UCX_COMPAT_MINOR 19

/* 1.19 moved the alignment macros from the installed ucs/sys/math.h to
 * ucs/sys/ptr_arith.h, which is not installed: _n rounded up to a multiple
 * of _alignment */
#ifndef ucs_align_up
#  define ucs_align_up(_n, _alignment) \
    ((_n) + (((_alignment) - ((_n) % (_alignment))) % (_alignment)))
#endif

/* ucs: arbiter and queue (the same in 1.13, 1.19 and 1.22) */
#include "ucx-datastruct.h"

/* ------------------------------------------------------------------------
 * uct: memory domain (src/uct/base/uct_md.h) and the parameter structs of
 * uct/api/v2/uct_v2.h that the md, component and interface ops take
 */
typedef struct uct_component uct_component_t;
typedef struct uct_perf_attr uct_perf_attr_t; /* ucx-uct-base.h */
typedef struct uct_ep_attr   uct_ep_attr_t;
typedef struct uct_md_mem_attach_params  uct_md_mem_attach_params_t;
typedef struct uct_rkey_compare_params   uct_rkey_compare_params_t;
typedef struct uct_ep_connect_to_ep_params uct_ep_connect_to_ep_params_t;
#if QPX_UCX_AT_LEAST(1, 22)
typedef struct uct_md_mem_attr_v2 uct_md_mem_attr_v2_t; /* opaque here */
#endif

enum {
    UCT_MD_MEM_REG_FIELD_FLAGS         = UCS_BIT(0),
    UCT_MD_MEM_REG_FIELD_DMABUF_FD     = UCS_BIT(1),
    UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET = UCS_BIT(2)
#if QPX_UCX_AT_LEAST(1, 22)
    ,
    UCT_MD_MEM_REG_FIELD_MEM_TYPE      = UCS_BIT(3)
#endif
};

enum {
    UCT_MD_MEM_DEREG_FIELD_MEMH       = UCS_BIT(0),
    UCT_MD_MEM_DEREG_FIELD_FLAGS      = UCS_BIT(1),
    UCT_MD_MEM_DEREG_FIELD_COMPLETION = UCS_BIT(2)
};

enum {
    UCT_MD_MEM_DEREG_FLAG_INVALIDATE = UCS_BIT(0)
};

/* The v2 md flags (uct_md_attr_v2_t.flags) past the v1 ones: a
 * deregistration's invalidation covers RMA, atomics (UCX's uct_v2.h) */
enum {
    UCT_MD_FLAG_INVALIDATE_RMA = UCS_BIT(11),
    UCT_MD_FLAG_INVALIDATE_AMO = UCS_BIT(12)
};

enum {
    UCT_MD_MKEY_PACK_FIELD_FLAGS = UCS_BIT(0)
};

enum {
    UCT_RKEY_UNPACK_FIELD_SYS_DEVICE = UCS_BIT(0)
};

enum {
    UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR        = UCS_BIT(0),
    UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR         = UCS_BIT(1),
    UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING        = UCS_BIT(2),
    UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH = UCS_BIT(3),
    UCT_IFACE_IS_REACHABLE_FIELD_SCOPE              = UCS_BIT(4),
    UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH = UCS_BIT(5),
    UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH  = UCS_BIT(6)
};

typedef enum {
    UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR = UCS_BIT(0),
    UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR  = UCS_BIT(1),
    UCT_EP_IS_CONNECTED_FIELD_EP_ADDR     = UCS_BIT(2)
} uct_ep_is_connected_field_mask_t;

typedef enum {
    UCT_IFACE_REACHABILITY_SCOPE_DEVICE,
    UCT_IFACE_REACHABILITY_SCOPE_NETWORK
} uct_iface_reachability_scope_t;

/* Read through UCX's params helper (ucs/type/param.h, installed) */
#define UCT_MD_MEM_REG_FIELD_VALUE(_params, _name, _flag, _default) \
    UCS_PARAM_VALUE(UCT_MD_MEM_REG, _params, _name, _flag, _default)

typedef struct uct_md_mem_reg_params {
    uint64_t          field_mask;
    uint64_t          flags;
    int               dmabuf_fd;
    size_t            dmabuf_offset;
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_memory_type_t mem_type;
#endif
} uct_md_mem_reg_params_t;

typedef struct uct_md_mem_dereg_params {
    uint64_t         field_mask;
    unsigned         flags;
    uct_mem_h        memh;
    uct_completion_t *comp;
} uct_md_mem_dereg_params_t;

typedef struct uct_md_mkey_pack_params {
    uint64_t field_mask;
    unsigned flags;
} uct_md_mkey_pack_params_t;

typedef struct uct_rkey_unpack_params {
    uint64_t         field_mask;
    ucs_sys_device_t sys_device;
} uct_rkey_unpack_params_t;

typedef struct uct_iface_is_reachable_params {
    uint64_t                       field_mask;
    const uct_device_addr_t        *device_addr;
    const uct_iface_addr_t         *iface_addr;
    char                           *info_string;
    size_t                         info_string_length;
    uct_iface_reachability_scope_t scope;
    size_t                         device_addr_length;
    size_t                         iface_addr_length;
} uct_iface_is_reachable_params_t;

typedef struct uct_ep_is_connected_params {
    uint64_t                field_mask;
    const uct_device_addr_t *device_addr;
    const uct_iface_addr_t  *iface_addr;
    const uct_ep_addr_t     *ep_addr;
} uct_ep_is_connected_params_t;

#if QPX_UCX_AT_LEAST(1, 22)
typedef struct {
    uint64_t field_mask;
} uct_ep_invalidate_params_t;

typedef struct {
    uint64_t   field_mask;
    size_t     max_put_sgl_zcopy_count;
    struct {
        uint64_t flags;
    } cap;
    size_t     tx_token_length;
    size_t     rx_token_length;
    const void *tx_token;
    void       *rx_token;
} uct_iface_attr_v2_t;
#endif

/* What an md reports: 1.19's uct_md_attr_v2_t; 1.22 appended
 * required_mem_flags */
typedef struct {
    uint64_t          field_mask;
    uint64_t          max_alloc;
    size_t            max_reg;
    uint64_t          flags;
    uint64_t          reg_mem_types;
    uint64_t          reg_nonblock_mem_types;
    uint64_t          cache_mem_types;
    uint64_t          gva_mem_types;
    uint64_t          detect_mem_types;
    uint64_t          alloc_mem_types;
    uint64_t          access_mem_types;
    uint64_t          dmabuf_mem_types;
    ucs_linear_func_t reg_cost;
    char              component_name[UCT_COMPONENT_NAME_MAX];
    size_t            rkey_packed_size;
    ucs_cpu_set_t     local_cpus;
    size_t            exported_mkey_packed_size;
    char              global_id[UCT_MD_GLOBAL_ID_MAX];
    size_t            reg_alignment;
#if QPX_UCX_AT_LEAST(1, 22)
    uint8_t           required_mem_flags;
#endif
} uct_md_attr_v2_t;

struct uct_md_config {
    char __dummy; /* C forbids empty structures */
};

/* 1.19: mem_attach took is_sockaddr_accessible's place; 1.22 appended
 * mem_elem_pack and mem_query reports through uct_md_mem_attr_v2_t */
typedef struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_v2_t *md_attr);
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type,
                              ucs_sys_device_t sys_dev, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_advise)(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            const uct_md_mem_reg_params_t *params,
                            uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md,
                              const uct_md_mem_dereg_params_t *params);
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_v2_t *mem_attr);
#else
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *mem_attr);
#endif
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh, void *address,
                              size_t length,
                              const uct_md_mkey_pack_params_t *params,
                              void *buffer);
    ucs_status_t (*mem_attach)(uct_md_h md, const void *mkey_buffer,
                               uct_md_mem_attach_params_t *params,
                               uct_mem_h *memh_p);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *addr,
                                       size_t length,
                                       ucs_memory_type_t *mem_type_p);
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_status_t (*mem_elem_pack)(uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
                                  uct_device_mem_elem_t *mem_elem_p);
#endif
} uct_md_ops_t;

struct uct_md {
    uct_md_ops_t    *ops;
    uct_component_t *component;
};

/* ------------------------------------------------------------------------
 * uct: component (src/uct/base/uct_component.h)
 */
struct uct_component {
    const char   name[UCT_COMPONENT_NAME_MAX];
    ucs_status_t (*query_md_resources)(uct_component_t *component,
                                       uct_md_resource_desc_t **resources_p,
                                       unsigned *num_resources_p);
    ucs_status_t (*md_open)(uct_component_t *component, const char *md_name,
                            const uct_md_config_t *config, uct_md_h *md_p);
    ucs_status_t (*cm_open)(uct_component_t *component, uct_worker_h worker,
                            const uct_cm_config_t *config, uct_cm_h *cm_p);
    ucs_status_t (*rkey_unpack)(uct_component_t *component,
                                const void *rkey_buffer,
                                const uct_rkey_unpack_params_t *params,
                                uct_rkey_t *rkey_p, void **handle_p);
    ucs_status_t (*rkey_ptr)(uct_component_t *component, uct_rkey_t rkey,
                             void *handle, uint64_t remote_addr,
                             void **local_addr_p);
    ucs_status_t (*rkey_release)(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);
    ucs_status_t (*rkey_compare)(uct_component_t *component, uct_rkey_t rkey1,
                                 uct_rkey_t rkey2,
                                 const uct_rkey_compare_params_t *params,
                                 int *result);
    ucs_config_global_list_entry_t md_config;
    ucs_config_global_list_entry_t cm_config;
    ucs_list_link_t                tl_list;
    ucs_list_link_t                list;
    uint64_t                       flags;
    void                           (*md_vfs_init)(uct_md_h md);
};

void uct_component_register(uct_component_t *component);

ucs_status_t uct_md_query_single_md_resource(uct_component_t *component,
                                             uct_md_resource_desc_t **resources_p,
                                             unsigned *num_resources_p);
ucs_status_t uct_md_query_empty_md_resource(uct_md_resource_desc_t **resources_p,
                                            unsigned *num_resources_p);
ucs_status_t uct_md_stub_rkey_unpack(uct_component_t *component,
                                     const void *rkey_buffer,
                                     const uct_rkey_unpack_params_t *params,
                                     uct_rkey_t *rkey_p, void **handle_p);
ucs_status_t uct_base_rkey_compare(uct_component_t *component, uct_rkey_t rkey1,
                                   uct_rkey_t rkey2,
                                   const uct_rkey_compare_params_t *params,
                                   int *result);
void uct_md_base_md_query(uct_md_attr_v2_t *md_attr);

extern ucs_config_field_t uct_md_config_table[];
extern ucs_config_field_t uct_iface_config_table[];

/* ------------------------------------------------------------------------
 * uct: transports and interfaces (src/uct/base/uct_iface.h)
 */
typedef struct uct_priv_worker uct_priv_worker_t; /* opaque here */

typedef struct uct_am_handler {
    uct_am_callback_t cb;
    void              *arg;
    uint32_t          flags;
} uct_am_handler_t;

/* 1.19 appended three ops; 1.22 put iface_query_v2 first, appended two
 * more and gave ep_invalidate a params struct */
typedef struct uct_iface_internal_ops {
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_status_t (*iface_query_v2)(uct_iface_h iface,
                                   uct_iface_attr_v2_t *iface_attr);
#endif
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface,
                                        uct_perf_attr_t *perf_attr);
    void         (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, uct_ep_attr_t *ep_attr);
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_status_t (*ep_invalidate)(uct_ep_h ep,
                                  const uct_ep_invalidate_params_t *params);
#else
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
#endif
    ucs_status_t (*ep_connect_to_ep_v2)(
            uct_ep_h ep, const uct_device_addr_t *device_addr,
            const uct_ep_addr_t *ep_addr,
            const uct_ep_connect_to_ep_params_t *params);
    int          (*iface_is_reachable_v2)(
            const uct_iface_h iface,
            const uct_iface_is_reachable_params_t *params);
    int          (*ep_is_connected)(uct_ep_h ep,
                                    const uct_ep_is_connected_params_t *params);
#if QPX_UCX_AT_LEAST(1, 22)
    ucs_status_t (*ep_get_device_ep)(uct_ep_h ep, uct_device_ep_h *device_ep_p);
    ucs_status_t (*ep_put_sgl_zcopy)(uct_ep_h ep, void * const *buffers,
                                     const size_t *lengths,
                                     uct_mem_h const *memhs,
                                     const uint64_t *remote_addrs,
                                     uct_rkey_t const *rkeys,
                                     const size_t *counts,
                                     const size_t *strides, size_t count,
                                     uct_completion_t *comp);
#endif
} uct_iface_internal_ops_t;

typedef struct uct_worker_progress {
    uct_worker_cb_id_t id;
    uint32_t           refcount;
} uct_worker_progress_t;

struct uct_iface_config {
    struct {
        uct_alloc_method_t *methods;
        unsigned           count;
    } alloc_methods;
    int    failure;
    size_t max_num_eps;
};

typedef struct uct_iface_mpool_config {
    unsigned max_bufs;
    unsigned bufs_grow;
    size_t   max_chunk_size; /* 1.19: chunks may grow geometrically */
    double   grow_factor;
} uct_iface_mpool_config_t;


int uct_iface_scope_is_reachable(const uct_iface_h iface,
                                 const uct_iface_is_reachable_params_t *params);
void uct_iface_fill_info_str_buf(const uct_iface_is_reachable_params_t *params,
                                 const char *fmt, ...) UCS_F_PRINTF(2, 3);
int uct_iface_is_reachable_params_valid(
        const uct_iface_is_reachable_params_t *params, uint64_t flags);
int uct_ep_is_connected(uct_ep_h ep,
                        const uct_ep_is_connected_params_t *params);
#if QPX_UCX_AT_LEAST(1, 22)
ucs_status_t uct_iface_base_query_v2(uct_iface_h iface,
                                     uct_iface_attr_v2_t *iface_attr);
#endif

/* ------------------------------------------------------------------------
 * ucs async and the uct worker (src/ucs/async/async.h, async_int.h,
 * src/uct/base/uct_worker.h). Only async/async_fwd.h is installed; the
 * lock union is opaque here but for the spinlock. 1.19 dropped the handler
 * count and, with assertions, records the owner thread at the end.
 */
#include <ucs/async/async_fwd.h>
#include <ucs/config/types.h>
#include <ucs/type/spinlock.h>

struct ucs_async_context {
    union {
        union {
            /* UCS_ASYNC_MODE_THREAD_SPINLOCK: the lock UCS_ASYNC_BLOCK
             * takes (ucs_async_thread_context_t starts with it) */
            ucs_recursive_spinlock_t spinlock;
            /* and the mutex mode's: a pthread_mutex_t (40 bytes on
             * x86-64, 48 on aarch64) with UCX's count and owner, so the
             * size follows the ABI's mutex; raw[56] put mode 8 bytes short
             * on aarch64 (UCX's there at 64, seen under qemu-aarch64) */
            char raw[sizeof(pthread_mutex_t) + 16];
        } thread;
        char                  signal[24]; /* ucs_async_signal_context_t */
        int                   poll_block;
    };
    ucs_async_mode_t          mode;
    struct {                              /* ucs_mpmc_queue_t */
        ucs_spinlock_t        lock;
        ucs_queue_head_t      queue;
    } missed;
    uint64_t                  last_wakeup;
    pthread_t                 owner;      /* only with assertions */
};

/* uct_base_iface_t, uct_tl_t, the base functions, ucs async ops and
 * uct_priv_worker: the same in every release qpx knows */
#include "ucx-uct-base.h"

#include "ucx-cm.h"

#if defined(__x86_64__)
/* ------------------------------------------------------------------------
 * Layout checks (x86_64): sizes and offsets measured from UCX 1.19.1's and
 * 1.22.0's own headers, configured as contrib/ucx-build.sh does
 * (assertions on, statistics off). Where the releases differ, the first
 * value is 1.22's.
 */
#if QPX_UCX_AT_LEAST(1, 22)
#  define QPX_UCX_LAYOUT(_v122, _v119) (_v122)
#else
#  define QPX_UCX_LAYOUT(_v122, _v119) (_v119)
#endif
_Static_assert(sizeof(ucs_arbiter_t) == 16, "ucs_arbiter_t layout");
_Static_assert(sizeof(ucs_arbiter_group_t) == 24, "ucs_arbiter_group_t layout");
_Static_assert(sizeof(ucs_arbiter_elem_t) == 32, "ucs_arbiter_elem_t layout");
_Static_assert(sizeof(uct_md_mem_reg_params_t) == QPX_UCX_LAYOUT(40, 32),
               "uct_md_mem_reg_params_t layout");
_Static_assert(sizeof(uct_md_mem_dereg_params_t) == 32, "dereg params layout");
_Static_assert(sizeof(uct_rkey_unpack_params_t) == 16, "unpack params layout");
_Static_assert(sizeof(uct_iface_is_reachable_params_t) == 64,
               "uct_iface_is_reachable_params_t layout");
_Static_assert(offsetof(uct_iface_is_reachable_params_t, scope) == 40,
               "reachable params scope");
_Static_assert(sizeof(uct_ep_is_connected_params_t) == 32,
               "uct_ep_is_connected_params_t layout");
_Static_assert(sizeof(uct_md_attr_v2_t) == QPX_UCX_LAYOUT(544, 536),
               "uct_md_attr_v2_t layout");
_Static_assert(offsetof(uct_md_attr_v2_t, local_cpus) == 136, "md attr cpus");
_Static_assert(offsetof(uct_md_attr_v2_t, reg_alignment) == 528,
               "md attr reg_alignment");
_Static_assert(sizeof(uct_md_ops_t) == QPX_UCX_LAYOUT(96, 88), "uct_md_ops_t layout");
_Static_assert(offsetof(uct_md_ops_t, mem_attach) == 72, "md ops mem_attach");
_Static_assert(sizeof(struct uct_md) == 16, "uct_md_t layout");
_Static_assert(sizeof(uct_component_t) == 232, "uct_component_t layout");
_Static_assert(offsetof(uct_component_t, rkey_compare) == 64,
               "component rkey_compare");
_Static_assert(offsetof(uct_component_t, md_config) == 72, "component md_config");
_Static_assert(offsetof(uct_component_t, tl_list) == 184, "component tl_list");
_Static_assert(offsetof(uct_component_t, md_vfs_init) == 224,
               "component md_vfs_init");
_Static_assert(sizeof(uct_am_handler_t) == 24, "uct_am_handler_t layout");
_Static_assert(sizeof(uct_iface_config_t) == 32, "uct_iface_config_t layout");
_Static_assert(sizeof(uct_iface_mpool_config_t) == 24, "iface mpool config");
_Static_assert(sizeof(uct_iface_internal_ops_t) == QPX_UCX_LAYOUT(80, 56),
               "internal ops layout");
_Static_assert(offsetof(uct_iface_internal_ops_t, ep_is_connected) ==
               QPX_UCX_LAYOUT(56, 48), "internal ops ep_is_connected");
_Static_assert(sizeof(uct_base_iface_t) == 1280, "uct_base_iface_t layout");
_Static_assert(offsetof(uct_base_iface_t, internal_ops) == 400, "iface internal_ops");
_Static_assert(offsetof(uct_base_iface_t, am) == 424, "iface am[]");
_Static_assert(offsetof(uct_base_iface_t, err_handler) == 1208, "iface err_handler");
_Static_assert(offsetof(uct_base_iface_t, prog) == 1228, "iface prog");
_Static_assert(offsetof(uct_base_iface_t, config.max_num_eps) == 1272,
               "iface config.max_num_eps");
_Static_assert(sizeof(uct_tl_t) == 104, "uct_tl_t layout");
_Static_assert(offsetof(uct_tl_t, config) == 32, "tl config");
_Static_assert(sizeof(uct_tl_device_resource_t) == 40, "tl device resource");
_Static_assert(sizeof(uct_base_ep_t) == 8, "uct_base_ep_t layout");
_Static_assert(sizeof(ucs_async_context_t) == 104, "ucs_async_context_t layout");
_Static_assert(offsetof(ucs_async_context_t, mode) == 56, "async mode");
_Static_assert(offsetof(ucs_async_context_t, missed) == 64, "async missed");
_Static_assert(sizeof(((ucs_async_context_t*)0)->thread) == 56,
               "ucs_async_thread_context_t layout");
_Static_assert(sizeof(ucs_async_ops_t) == 112, "ucs_async_ops_t layout");
_Static_assert(offsetof(ucs_async_ops_t, context_try_block) == 56,
               "async ops context_try_block");
_Static_assert(offsetof(struct uct_priv_worker, async) == 136,
               "uct_priv_worker_t async");
_Static_assert(sizeof(uct_cm_ops_t) == 56, "uct_cm_ops_t layout");
_Static_assert(sizeof(uct_cm_t) == 1304, "uct_cm_t layout");
_Static_assert(offsetof(uct_cm_t, iface) == 16, "uct_cm_t iface");
_Static_assert(sizeof(uct_cm_base_ep_t) == 48, "uct_cm_base_ep_t layout");
_Static_assert(sizeof(uct_listener_t) == 8, "uct_listener_t layout");
_Static_assert(sizeof(uct_ep_attr_t) == QPX_UCX_LAYOUT(280, 264),
               "uct_ep_attr_t layout");
#undef QPX_UCX_LAYOUT
#endif

#endif
