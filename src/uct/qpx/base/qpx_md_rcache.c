/*
 * The registration cache of a qpx memory domain: UCX's own (ucs_rcache),
 * which keeps a registration after its user released it and hands it out
 * again for any range it covers, and drops it when the memory is unmapped
 * (UCM's VM_UNMAPPED event) or the process forks.
 *
 * UCP 1.13 registers the user's buffer of every rendezvous message on
 * both sides and releases it when the message completes; without a cache
 * each message paid two ibv_reg_mr and two ibv_dereg_mr (a 32 KiB UCP
 * tag_lat over qpx_rc: 7.5 us against rc_verbs' 4.8, whose md caches).
 * A cached region is registered page-aligned, with every access right the
 * transports use (qpx_md_access_flags(0)), so that one region serves
 * every request that falls inside it.
 *
 * Below the md (qpx_md.c calls here, never the other way), it also holds
 * what both register with: one MR and its failure's log level.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_md.h"

#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


__thread ucs_log_level_t qpx_md_reg_exhausted_level = UCS_LOG_LEVEL_ERROR;


ucs_status_t qpx_md_mr_reg(qpx_md_t *md, void *address, size_t length,
                           int access, int quiet, struct ibv_mr **mr_p)
{
    struct ibv_mr *mr;

    mr = ibv_reg_mr(md->pd, address, length, access);
    if (mr == NULL) {
        ucs_log(qpx_md_reg_fail_level(quiet),
                "%s: ibv_reg_mr(address=%p length=%zu) failed: %m",
                md->dev.name, address, length);
        return qpx_device_err_status(errno);
    }

    *mr_p = mr;
    return UCS_OK;
}


typedef struct qpx_rcache_region {
    ucs_rcache_region_t super;
    qpx_mem_t           mem;
} qpx_rcache_region_t;


static ucs_status_t qpx_md_rcache_mem_reg(void *context, ucs_rcache_t *rcache,
                                          void *arg,
                                          ucs_rcache_region_t *rregion,
                                          uint16_t flags)
{
    qpx_md_t *md                = context;
    qpx_rcache_region_t *region = ucs_derived_of(rregion,
                                                 qpx_rcache_region_t);
    const unsigned *md_flags    = arg; /* qpx_md_rcache_get's */
    void *address               = (void*)rregion->super.start;
    size_t length               = rregion->super.end - rregion->super.start;
    ucs_status_t status;
    int quiet;

    /* the cache asks quietly when it tries a larger range first, and the
     * md's user when it has another way (UCP's rendezvous) */
    quiet  = (flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
             ((md_flags != NULL) && (*md_flags & UCT_MD_MEM_FLAG_HIDE_ERRORS));
    status = qpx_md_mr_reg(md, address, length, qpx_md_access_flags(0), quiet,
                           &region->mem.mr);
    if (status != UCS_OK) {
        return status;
    }

    region->mem.region = rregion;
    return UCS_OK;
}


static void qpx_md_rcache_mem_dereg(void *context, ucs_rcache_t *rcache,
                                    ucs_rcache_region_t *rregion)
{
    qpx_md_t *md                = context;
    qpx_rcache_region_t *region = ucs_derived_of(rregion,
                                                 qpx_rcache_region_t);
    int ret;

    ret = ibv_dereg_mr(region->mem.mr);
    if (ret != 0) {
        ucs_warn("%s: ibv_dereg_mr(lkey 0x%x) failed: %s", md->dev.name,
                 region->mem.mr->lkey, strerror(ret));
    }
}


static void qpx_md_rcache_dump_region(void *context, ucs_rcache_t *rcache,
                                      ucs_rcache_region_t *rregion, char *buf,
                                      size_t max)
{
    qpx_rcache_region_t *region = ucs_derived_of(rregion,
                                                 qpx_rcache_region_t);

    snprintf(buf, max, "lkey 0x%x rkey 0x%x", region->mem.mr->lkey,
             region->mem.mr->rkey);
}


static ucs_rcache_ops_t qpx_md_rcache_ops = {
    .mem_reg     = qpx_md_rcache_mem_reg,
    .mem_dereg   = qpx_md_rcache_mem_dereg,
    QPX_UCX_RCACHE_OPS_V2
    .dump_region = qpx_md_rcache_dump_region
};


static void qpx_md_rcache_create(qpx_md_t *md)
{
    ucs_rcache_params_t params;
    ucs_status_t status;
    char name[64];

    qpx_ucx_rcache_params_init(&params);
    params.region_struct_size = sizeof(qpx_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.ucm_event_priority = 1000;
    params.ops                = &qpx_md_rcache_ops;
    params.context            = md;
    params.flags              = UCS_RCACHE_FLAG_PURGE_ON_FORK;
    params.max_regions        = ULONG_MAX;
    params.max_size           = SIZE_MAX;
    params.max_unreleased     = SIZE_MAX;

    snprintf(name, sizeof(name), "qpx_%s", md->dev.name);
    status = ucs_rcache_create(&params, name, NULL, &md->rcache);
    if (status != UCS_OK) {
        /* registrations go straight to the device */
        ucs_diag("%s: no registration cache: %s", md->dev.name,
                 ucs_status_string(status));
        md->rcache = NULL;
    }
}


int qpx_md_rcache_ready(qpx_md_t *md)
{
    int state = __atomic_load_n(&md->rcache_state, __ATOMIC_ACQUIRE);

    if (ucs_likely(state != QPX_MD_RCACHE_LATER)) {
        return state == QPX_MD_RCACHE_ON;
    }

    /* The first registration: one thread creates it, others wait */
    pthread_mutex_lock(&md->rcache_lock);
    if (md->rcache_state == QPX_MD_RCACHE_LATER) {
        qpx_md_rcache_create(md);
        /* release: md->rcache is set before the state says so */
        __atomic_store_n(&md->rcache_state, (md->rcache != NULL) ?
                         QPX_MD_RCACHE_ON : QPX_MD_RCACHE_OFF,
                         __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&md->rcache_lock);
    return md->rcache_state == QPX_MD_RCACHE_ON;
}


void qpx_md_rcache_destroy(qpx_md_t *md)
{
    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
        md->rcache = NULL;
    }
    pthread_mutex_destroy(&md->rcache_lock);
}


ucs_status_t qpx_md_rcache_get(qpx_md_t *md, void *address, size_t length,
                               unsigned flags, qpx_mem_t **mem_p)
{
    ucs_rcache_region_t *rregion;
    ucs_status_t status;

    /* the access asked for is within what every region is registered
     * with; the memory must be readable and writable to be cached */
    status = qpx_ucx_rcache_get(md->rcache, address, length,
                                PROT_READ | PROT_WRITE, &flags, &rregion);
    if (status != UCS_OK) {
        return status;
    }

    *mem_p = &ucs_derived_of(rregion, qpx_rcache_region_t)->mem;
    return UCS_OK;
}


static void qpx_md_rcache_invalidated(void *arg)
{
    qpx_invoke_completion(arg, UCS_OK);
}


void qpx_md_rcache_put(qpx_md_t *md, qpx_mem_t *mem,
                       uct_completion_t *inv_comp)
{
    if (inv_comp != NULL) {
        /* out of the cache now (a new registration of the range gets new
         * keys); deregistered when the last holder puts it */
        ucs_rcache_region_invalidate(md->rcache, mem->region,
                                     qpx_md_rcache_invalidated, inv_comp);
    }
    ucs_rcache_region_put(md->rcache, mem->region);
}
