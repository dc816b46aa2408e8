/*
 * qpx memory domain: one per verbs device. Owns the device context and the
 * protection domain every interface of the device uses, registers memory
 * with ibv_reg_mr (through UCX's registration cache) and carries the rkey
 * to the peer.
 */
#ifndef QPX_MD_H_
#define QPX_MD_H_

#include "qpx_device.h"

#include <ucs/ucx_compat.h>
#include <ucs/ucx_ops.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <errno.h>


#define QPX_COMPONENT_NAME "qpx"


/* Memory domain configuration (UCX_QPX_*) */
typedef struct qpx_md_config {
    uct_md_config_t super;
    double          reg_overhead; /* registration cost, seconds */
    double          reg_growth;   /* registration cost, seconds per byte */
    int             rcache;       /* cache registrations */
    double          rcache_overhead; /* a cached registration's cost, s */
    unsigned long   gid_index;    /* RoCE ports' GID, or auto */
} qpx_md_config_t;


/* Registered memory */
typedef struct qpx_mem {
    struct ibv_mr             *mr;
    /* Not NULL: a region of the registration cache (qpx_md_rcache.c),
     * which owns the registration */
    struct ucs_rcache_region  *region;
} qpx_mem_t;


/* Packed remote key: what mkey_pack writes and rkey_unpack reads */
typedef struct qpx_packed_rkey {
    uint32_t rkey;
} UCS_S_PACKED qpx_packed_rkey_t;


typedef struct qpx_md {
    uct_md_t          super;
    qpx_device_t      dev;
    struct ibv_pd     *pd;
    ucs_linear_func_t reg_cost;
    /* The registration cache, created at the first registration (not at
     * open: its first creation in a process starts UCX's async thread,
     * which a child forked after opening an md would lack). NULL: every
     * registration goes to the device */
    struct ucs_rcache *rcache;
    int               rcache_state;  /* QPX_MD_RCACHE_* */
    pthread_mutex_t   rcache_lock;   /* around its creation */
} qpx_md_t;

enum {
    QPX_MD_RCACHE_OFF,      /* not wanted, or could not be had */
    QPX_MD_RCACHE_LATER,    /* wanted, not created yet */
    QPX_MD_RCACHE_ON
};


extern uct_component_t qpx_component;
extern ucs_config_field_t qpx_md_config_table[];


ucs_status_t qpx_md_query_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p);

ucs_status_t qpx_md_open(uct_component_t *component, const char *md_name,
                         const uct_md_config_t *uct_md_config, uct_md_h *md_p);

ucs_status_t qpx_md_rkey_unpack(uct_component_t *component,
                                const void *rkey_buffer,
                                QPX_UCX_RKEY_UNPACK_PARAMS_ARGS
                                uct_rkey_t *rkey_p, void **handle_p);

ucs_status_t qpx_md_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                 void *handle);

/* ibv access flags for a registration with the given UCT flags */
static inline int qpx_md_access_flags(unsigned uct_flags)
{
    int access = IBV_ACCESS_LOCAL_WRITE;

    /* Without an explicit access request, UCT memory is accessible to every
     * remote operation the transports offer */
    if (!(uct_flags & UCT_MD_MEM_ACCESS_ALL) ||
        (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_PUT)) {
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (!(uct_flags & UCT_MD_MEM_ACCESS_ALL) ||
        (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_GET)) {
        access |= IBV_ACCESS_REMOTE_READ;
    }
    if (!(uct_flags & UCT_MD_MEM_ACCESS_ALL) ||
        (uct_flags & UCT_MD_MEM_ACCESS_REMOTE_ATOMIC)) {
        access |= IBV_ACCESS_REMOTE_ATOMIC;
    }

    return access;
}

/* Register [address, address + length) with access (qpx_md_rcache.c, for
 * the md and its cache): the MR, or a failure logged at
 * qpx_md_reg_fail_level(quiet) and its status */
ucs_status_t qpx_md_mr_reg(qpx_md_t *md, void *address, size_t length,
                           int access, int quiet, struct ibv_mr **mr_p);

/* The registration cache (qpx_md_rcache.c): whether md has one (created
 * on the first call that wants it), destroy it, take a cached registration
 * that covers the range (the memory must be readable and writable), give
 * it back (and with inv_comp, invalidate it: inv_comp completes once it is
 * deregistered) */
int qpx_md_rcache_ready(qpx_md_t *md);
void qpx_md_rcache_destroy(qpx_md_t *md);
ucs_status_t qpx_md_rcache_get(qpx_md_t *md, void *address, size_t length,
                               unsigned flags, qpx_mem_t **mem_p);
void qpx_md_rcache_put(qpx_md_t *md, qpx_mem_t *mem,
                       uct_completion_t *inv_comp);


/* What every element of a registered pool starts with: the keys of the
 * registration of its chunk */
typedef struct qpx_md_reg_elem {
    uint32_t lkey;
    uint32_t rkey;
} qpx_md_reg_elem_t;

/* The level a registration the device has no room or memory for (ENOMEM,
 * EAGAIN) is logged at in this thread, unless the caller asked quietly
 * (UCT_MD_MEM_FLAG_HIDE_ERRORS): error by default. A buffer pool that stops
 * growing then and says so itself lowers it around its growth
 * (qpx_iface_mp_grow). It is per thread, not a parameter, because that
 * growth reaches the md through UCX's own code (uct_iface_mpool's chunk
 * allocation calls uct_md_mem_reg), which has no parameter for it; qpx's
 * own pools take a level instead (qpx_md_reg_mpool_init). */
extern __thread ucs_log_level_t qpx_md_reg_exhausted_level;

/* The level for a registration that failed with errno (set by it) */
static inline ucs_log_level_t qpx_md_reg_fail_level(int hide_errors)
{
    if (hide_errors) {
        return UCS_LOG_LEVEL_DEBUG;
    }
    return qpx_device_err_exhausted(errno) ?
           qpx_md_reg_exhausted_level : UCS_LOG_LEVEL_ERROR;
}

/*
 * A memory pool of elements (starting with qpx_md_reg_elem_t) registered
 * with the given ibv access flags, one registration per chunk of
 * elems_per_chunk: small objects a peer writes (endpoint control words)
 * share registrations instead of taking one each. A chunk the device has
 * no room or memory to register is logged at exhausted_level (error, or
 * lower for a user that says so itself).
 */
ucs_status_t qpx_md_reg_mpool_init(qpx_md_t *md, ucs_mpool_t *mp,
                                   size_t elem_size, unsigned elems_per_chunk,
                                   int access, ucs_log_level_t exhausted_level,
                                   const char *name);

#endif
