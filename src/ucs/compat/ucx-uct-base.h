/*
 * UCX's internal uct base declarations that UCX 1.13, 1.19 and 1.22 share
 * (src/uct/base/uct_iface.h, uct_worker.h; src/ucs/async/async_int.h):
 * the base interface and endpoint, a transport's registration, the base
 * functions qpx calls, the async context's ops and the private worker.
 * Included by ucx-1.13.h and ucx-1.19.h once each has declared what
 * differs (uct_iface_internal_ops_t, the config and mpool structures,
 * struct ucs_async_context), before their layout checks.
 */
#ifndef QPX_UCX_UCT_BASE_H
#define QPX_UCX_UCT_BASE_H

/* uct/api/v2/uct_v2.h: what uct_iface_estimate_perf fills in; 1.19 added
 * path_bandwidth and flags (layouts checked below) */
struct uct_perf_attr {
    uint64_t            field_mask;
    int                 operation;          /* uct_ep_operation_t */
    ucs_memory_type_t   local_memory_type;
    ucs_memory_type_t   remote_memory_type;
    ucs_sys_device_t    local_sys_device;
    ucs_sys_device_t    remote_sys_device;
    double              send_pre_overhead;
    double              send_post_overhead;
    double              recv_overhead;
    uct_ppn_bandwidth_t bandwidth;
#if QPX_UCX_AT_LEAST(1, 19)
    uct_ppn_bandwidth_t path_bandwidth;
#endif
    ucs_linear_func_t   latency;
    size_t              max_inflight_eps;
#if QPX_UCX_AT_LEAST(1, 19)
    uint64_t            flags;
#endif
};

enum {
#if QPX_UCX_AT_LEAST(1, 19)
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS = UCS_BIT(11)
#else
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS = UCS_BIT(10)
#endif
};

#if QPX_UCX_AT_LEAST(1, 19)
_Static_assert(sizeof(uct_perf_attr_t) == 112, "uct_perf_attr_t layout");
_Static_assert(offsetof(uct_perf_attr_t, max_inflight_eps) == 96,
               "uct_perf_attr_t layout");
#else
_Static_assert(sizeof(uct_perf_attr_t) == 88, "uct_perf_attr_t layout");
_Static_assert(offsetof(uct_perf_attr_t, max_inflight_eps) == 80,
               "uct_perf_attr_t layout");
#endif

typedef struct uct_base_iface {
    uct_iface_t              super;
    uct_iface_internal_ops_t *internal_ops;
    uct_md_h                 md;
    uct_priv_worker_t        *worker;
    uct_am_handler_t         am[UCT_AM_ID_MAX];
    uct_am_tracer_t          am_tracer;
    void                     *am_tracer_arg;
    uct_error_handler_t      err_handler;
    void                     *err_handler_arg;
    uint32_t                 err_handler_flags;
    uct_worker_progress_t    prog;
    unsigned                 progress_flags;
    struct {
        unsigned           num_alloc_methods;
        uct_alloc_method_t alloc_methods[UCT_ALLOC_METHOD_LAST];
        ucs_log_level_t    failure_level;
        size_t             max_num_eps;
    } config;
} uct_base_iface_t;

UCS_CLASS_DECLARE(uct_base_iface_t, uct_iface_ops_t*, uct_iface_internal_ops_t*,
                  uct_md_h, uct_worker_h, const uct_iface_params_t*,
                  const uct_iface_config_t*);

typedef struct uct_base_ep {
    uct_ep_t super;
} uct_base_ep_t;

UCS_CLASS_DECLARE(uct_base_ep_t, uct_base_iface_t*);

typedef struct uct_tl_device_resource {
    char              name[UCT_DEVICE_NAME_MAX];
    uct_device_type_t type;
    ucs_sys_device_t  sys_device;
} uct_tl_device_resource_t;

typedef struct uct_tl {
    char                           name[UCT_TL_NAME_MAX];
    ucs_status_t                   (*query_devices)(uct_md_h md,
                                        uct_tl_device_resource_t **tl_devices_p,
                                        unsigned *num_tl_devices_p);
    ucs_status_t                   (*iface_open)(uct_md_h md, uct_worker_h worker,
                                        const uct_iface_params_t *params,
                                        const uct_iface_config_t *config,
                                        uct_iface_h *iface_p);
    ucs_config_global_list_entry_t config;
    ucs_list_link_t                list;
} uct_tl_t;

void uct_tl_register(uct_component_t *component, uct_tl_t *tl);
void uct_base_iface_query(uct_base_iface_t *iface, uct_iface_attr_t *iface_attr);
ucs_status_t uct_single_device_resource(uct_md_h md, const char *dev_name,
                                        uct_device_type_t dev_type,
                                        ucs_sys_device_t sys_device,
                                        uct_tl_device_resource_t **tl_devices_p,
                                        unsigned *num_tl_devices_p);
ucs_status_t uct_base_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t uct_base_iface_fence(uct_iface_h tl_iface, unsigned flags);
void uct_base_iface_progress_enable(uct_iface_h tl_iface, unsigned flags);
void uct_base_iface_progress_enable_cb(uct_base_iface_t *iface,
                                       ucs_callback_t cb, unsigned flags);
void uct_base_iface_progress_disable(uct_iface_h tl_iface, unsigned flags);
ucs_status_t uct_base_iface_estimate_perf(uct_iface_h iface,
                                          uct_perf_attr_t *perf_attr);
ucs_status_t uct_base_ep_flush(uct_ep_h tl_ep, unsigned flags,
                               uct_completion_t *comp);
ucs_status_t uct_base_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_base_ep_am_short_iov(uct_ep_h ep, uint8_t id,
                                      const uct_iov_t *iov, size_t iovcnt);
ucs_status_t uct_iface_handle_ep_err(uct_iface_h iface, uct_ep_h ep,
                                     ucs_status_t status);
ucs_status_t uct_iface_mpool_init(uct_base_iface_t *iface, ucs_mpool_t *mp,
                                  size_t elem_size, size_t align_offset,
                                  size_t alignment,
                                  const uct_iface_mpool_config_t *config,
                                  unsigned grow,
                                  void (*init_obj_cb)(uct_iface_h iface,
                                                      void *obj,
                                                      uct_mem_h memh),
                                  const char *name);
void uct_ep_set_iface(uct_ep_h ep, uct_iface_t *iface);

typedef struct ucs_async_ops {
    void (*init)(void);
    void (*cleanup)(void);
    int  (*is_from_async)(void);
    void (*block)(void);
    void (*unblock)(void);
    ucs_status_t (*context_init)(ucs_async_context_t *async);
    void (*context_cleanup)(ucs_async_context_t *async);
    int  (*context_try_block)(ucs_async_context_t *async);
    void (*context_unblock)(ucs_async_context_t *async);
    void *add_event_fd;
    void *remove_event_fd;
    void *modify_event_fd;
    void *add_timer;
    void *remove_timer;
} ucs_async_ops_t;

extern ucs_async_ops_t ucs_async_thread_spinlock_ops;
extern ucs_async_ops_t ucs_async_thread_mutex_ops;

double ucs_get_cpu_clocks_per_sec(void);

struct uct_priv_worker {
    uct_worker_t        super;
    ucs_async_context_t *async;
    ucs_thread_mode_t   thread_mode;
    ucs_list_link_t     tl_data;
};

#endif
