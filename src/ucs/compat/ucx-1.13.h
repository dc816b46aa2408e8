/*
 * Declarations of the UCX 1.13.x internal types qpx needs, written from
 * UCX 1.13.1's field order (its own headers under uct/base/ and
 * ucs/datastruct/arbiter.h are not installed by distributions).
 *
 * Every type whose size `ucx_info -y` prints is checked below; the others are
 * checked against the offsets measured in docs/architecture.md. A layout that
 * does not match fails the build instead of corrupting memory at run time.
 *
 * Include only through src/ucs/ucx_compat.h.
 */
#ifndef QPX_UCX_COMPAT_1_13_H_
#define QPX_UCX_COMPAT_1_13_H_

#include <uct/api/uct.h>
#include <uct/api/tl.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/linear_func.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue_types.h>
#include <ucs/type/class.h>
#include <stddef.h>
#include <stdio.h>

#define QPX_UCX_COMPAT_MAJOR 1
#define QPX_UCX_COMPAT_MINOR 13

/* ucs: arbiter and queue (the same in 1.13, 1.19 and 1.22) */
#include "ucx-datastruct.h"

/* ------------------------------------------------------------------------
 * uct: memory domain (src/uct/base/uct_md.h, uct/api/v2/uct_v2.h)
 */
typedef struct uct_component uct_component_t;
typedef struct uct_perf_attr uct_perf_attr_t; /* ucx-uct-base.h */
typedef struct uct_ep_attr   uct_ep_attr_t;   /* opaque here */

enum {
    UCT_MD_MEM_DEREG_FIELD_MEMH       = UCS_BIT(0),
    UCT_MD_MEM_DEREG_FIELD_FLAGS      = UCS_BIT(1),
    UCT_MD_MEM_DEREG_FIELD_COMPLETION = UCS_BIT(2)
};

enum {
    UCT_MD_MEM_DEREG_FLAG_INVALIDATE = UCS_BIT(0)
};

enum {
    UCT_MD_MKEY_PACK_FIELD_FLAGS = UCS_BIT(0)
};

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

struct uct_md_config {
    char __dummy; /* C forbids empty structures */
};

typedef struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_t *md_attr);
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_advise)(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md,
                              const uct_md_mem_dereg_params_t *params);
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *mem_attr);
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh,
                              const uct_md_mkey_pack_params_t *params,
                              void *rkey_buffer);
    int          (*is_sockaddr_accessible)(uct_md_h md,
                                           const ucs_sock_addr_t *sockaddr,
                                           uct_sockaddr_accessibility_t mode);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *addr,
                                       size_t length,
                                       ucs_memory_type_t *mem_type_p);
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
                                const void *rkey_buffer, uct_rkey_t *rkey_p,
                                void **handle_p);
    ucs_status_t (*rkey_ptr)(uct_component_t *component, uct_rkey_t rkey,
                             void *handle, uint64_t remote_addr,
                             void **local_addr_p);
    ucs_status_t (*rkey_release)(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);
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
                                     uct_rkey_t *rkey_p, void **handle_p);

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

typedef struct uct_iface_internal_ops {
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface,
                                        uct_perf_attr_t *perf_attr);
    void         (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, uct_ep_attr_t *ep_attr);
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
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
} uct_iface_mpool_config_t;


extern uct_iface_internal_ops_t uct_base_iface_internal_ops;


/* ------------------------------------------------------------------------
 * ucs async and the uct worker (src/ucs/async/async.h, async_int.h,
 * src/uct/base/uct_worker.h). Only async/async_fwd.h is installed; the
 * fields before `mode` are opaque here (sizes from `ucx_info -y`).
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
    volatile uint32_t         num_handlers;
    char                      missed[24]; /* ucs_mpmc_queue_t */
    uint64_t                  last_wakeup;
};

/* uct_base_iface_t, uct_tl_t, the base functions, ucs async ops and
 * uct_priv_worker: the same in every release qpx knows */
#include "ucx-uct-base.h"

#include "ucx-cm.h"

#if defined(__x86_64__)
/* ------------------------------------------------------------------------
 * Layout checks: sizes printed by `ucx_info -y` (1.13.1, x86_64) and the
 * offsets recorded in ../shared/notes and docs/architecture.md.
 */
_Static_assert(sizeof(ucs_arbiter_t) == 16, "ucs_arbiter_t layout");
_Static_assert(sizeof(ucs_arbiter_group_t) == 24, "ucs_arbiter_group_t layout");
_Static_assert(sizeof(ucs_arbiter_elem_t) == 32, "ucs_arbiter_elem_t layout");
_Static_assert(sizeof(uct_md_ops_t) == 88, "uct_md_ops_t layout");
_Static_assert(sizeof(struct uct_md) == 16, "uct_md_t layout");
_Static_assert(sizeof(uct_md_config_t) == 1, "uct_md_config_t layout");
_Static_assert(sizeof(uct_component_t) == 208, "uct_component_t layout");
_Static_assert(offsetof(uct_component_t, md_config) == 64, "component md_config");
_Static_assert(offsetof(uct_component_t, cm_config) == 112, "component cm_config");
_Static_assert(offsetof(uct_component_t, tl_list) == 160, "component tl_list");
_Static_assert(offsetof(uct_component_t, flags) == 192, "component flags");
_Static_assert(offsetof(uct_component_t, md_vfs_init) == 200, "component md_vfs_init");
_Static_assert(sizeof(uct_am_handler_t) == 24, "uct_am_handler_t layout");
_Static_assert(sizeof(uct_iface_config_t) == 32, "uct_iface_config_t layout");
_Static_assert(sizeof(uct_iface_internal_ops_t) == 32, "internal ops layout");
_Static_assert(sizeof(uct_base_iface_t) == 1280, "uct_base_iface_t layout");
_Static_assert(offsetof(uct_base_iface_t, internal_ops) == 400, "iface internal_ops");
_Static_assert(offsetof(uct_base_iface_t, am) == 424, "iface am[]");
_Static_assert(offsetof(uct_base_iface_t, err_handler) == 1208, "iface err_handler");
_Static_assert(offsetof(uct_base_iface_t, prog) == 1228, "iface prog");
_Static_assert(offsetof(uct_base_iface_t, config.max_num_eps) == 1272,
               "iface config.max_num_eps");
_Static_assert(sizeof(uct_tl_t) == 96, "uct_tl_t layout");
_Static_assert(offsetof(uct_tl_t, query_devices) == 16, "tl query_devices");
_Static_assert(offsetof(uct_tl_t, config) == 32, "tl config");
_Static_assert(offsetof(uct_tl_t, list) == 80, "tl list");
_Static_assert(sizeof(uct_tl_device_resource_t) == 40, "tl device resource");
_Static_assert(sizeof(uct_base_ep_t) == 8, "uct_base_ep_t layout");
_Static_assert(sizeof(ucs_async_context_t) == 96, "ucs_async_context_t layout");
_Static_assert(offsetof(ucs_async_context_t, mode) == 56, "async mode");
_Static_assert(sizeof(((ucs_async_context_t*)0)->thread) == 56,
               "ucs_async_thread_context_t layout");
_Static_assert(sizeof(ucs_async_ops_t) == 112, "ucs_async_ops_t layout");
_Static_assert(offsetof(ucs_async_ops_t, context_try_block) == 56,
               "async ops context_try_block");
_Static_assert(offsetof(struct uct_priv_worker, async) == 264,
               "uct_priv_worker_t async");
_Static_assert(sizeof(uct_cm_config_t) == 8, "uct_cm_config_t layout");
_Static_assert(sizeof(uct_cm_ops_t) == 56, "uct_cm_ops_t layout");
_Static_assert(sizeof(uct_cm_t) == 1304, "uct_cm_t layout (uct_cm_t_class)");
_Static_assert(offsetof(uct_cm_t, iface) == 16, "uct_cm_t iface");
_Static_assert(sizeof(uct_cm_base_ep_t) == 48,
               "uct_cm_base_ep_t layout (uct_cm_base_ep_t_class)");
_Static_assert(sizeof(uct_listener_t) == 8,
               "uct_listener_t layout (uct_listener_t_class)");
_Static_assert(sizeof(uct_ep_attr_t) == 264, "uct_ep_attr_t layout");
#elif defined(__aarch64__)
/* aarch64 (Debian's libucx0:arm64 1.13.1: contexts of both thread modes
 * created and dumped under qemu-aarch64): the async context, whose lock
 * holds a pthread_mutex_t of this ABI's size */
_Static_assert(sizeof(ucs_async_context_t) == 104, "ucs_async_context_t layout");
_Static_assert(offsetof(ucs_async_context_t, mode) == 64, "async mode");
#endif

#endif
