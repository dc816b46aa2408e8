/*
 * qpx hybrid: the interface. It opens a qpx_dc interface (cold path) and a
 * qpx_rc interface (hot path) on its own device port through UCT's public
 * API (qpx_hybrid_sub.c), progresses both, and describes itself to UCP
 * from what both can do.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <ucs/qpx_config.h>

#include <uct/qpx/base/qpx_component.h>
#include <uct/qpx/base/qpx_iface.h>
#include <uct/qpx/base/qpx_md.h>
#include <uct/qpx/base/qpx_param.h>

#include <string.h>
#include <unistd.h>


static const char *qpx_hybrid_cold_tl_names[] = {
    [QPX_HYBRID_COLD_AUTO] = "auto",
    [QPX_HYBRID_COLD_DC]   = "dc",
    [QPX_HYBRID_COLD_UD]   = "ud",
    [QPX_HYBRID_COLD_LAST] = NULL
};


ucs_config_field_t qpx_hybrid_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(qpx_hybrid_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"RC_POOL_SIZE", "auto",
     "RC QPs (a number, inf or auto) an interface of the qpx transport may have in use at once, its "
     "peers' promotions to it included. auto: 32, or from the job size the "
     "launcher gives (N processes: 4*sqrt(N) within 16..128).",
     ucs_offsetof(qpx_hybrid_iface_config_t, pool_size),
     QPX_CONFIG_TYPE_ULUNITS},

    {"PROMOTE_THRESH", "64",
     "Operations an endpoint posts within PROMOTE_WINDOW that promote it "
     "from DC to an RC QP (1: at its first operation).",
     ucs_offsetof(qpx_hybrid_iface_config_t, promote_thresh),
     QPX_CONFIG_TYPE_UINT},

    {"PROMOTE_BYTES", "1m",
     "Bytes an endpoint moves within PROMOTE_WINDOW that promote it as "
     "PROMOTE_THRESH operations do (inf: operations alone count). Each "
     "operation counts 1, plus 1 for every PROMOTE_BYTES/PROMOTE_THRESH "
     "bytes it moves (rounded down to a power of two).",
     ucs_offsetof(qpx_hybrid_iface_config_t, promote_bytes),
     QPX_CONFIG_TYPE_MEMUNITS},

    {"PROMOTE_WINDOW", "10ms",
     "The window PROMOTE_THRESH and PROMOTE_BYTES count in.",
     ucs_offsetof(qpx_hybrid_iface_config_t, promote_window),
     QPX_CONFIG_TYPE_TIME},

    {"SWITCH_TIMEOUT", "10ms",
     "How long an endpoint waits for its peer's answer to a promotion or a "
     "demotion (its sends wait meanwhile): a peer that does not call "
     "progress in that time leaves the endpoint on its path.",
     ucs_offsetof(qpx_hybrid_iface_config_t, switch_timeout),
     QPX_CONFIG_TYPE_TIME},

    {"RC_POOL_BATCH", "4",
     "RC QPs created at a time when a promotion finds no QP to reuse: the "
     "rest wait in RESET for the next promotions (within RC_POOL_SIZE; "
     "1: one at a time).",
     ucs_offsetof(qpx_hybrid_iface_config_t, pool_batch), QPX_CONFIG_TYPE_UINT},

    {"COLD_TL", "auto",
     "The cold path's transport, every endpoint's before it is promoted:\n"
     " auto - qpx_dc where the device has DC (mlx5), else qpx_ud\n"
     " dc   - qpx_dc (the interface does not open without DC)\n"
     " ud   - qpx_ud (its reliability in software; active messages only, "
     "so UCP emulates RMA and atomics over them)",
     ucs_offsetof(qpx_hybrid_iface_config_t, cold_tl),
     UCS_CONFIG_TYPE_ENUM(qpx_hybrid_cold_tl_names)},

    {"SHARED_SRQ", "y",
     "One shared receive queue and buffer pool for the RC QPs and the cold "
     "path: the RC QPs receive from the DC target's SRQ, or the UD QP from "
     "the RC interface's (where the receive buffer layouts fit); n: an SRQ "
     "and pool each.",
     ucs_offsetof(qpx_hybrid_iface_config_t, shared_srq), UCS_CONFIG_TYPE_BOOL},

    {"RC_OPEN_EAGER", "n",
     "Open the RC interface at the interface's first endpoint, not at the "
     "first promotion: the first promotion to or from this process then "
     "waits for no interface to open (on softverbs about 10 ms on each "
     "side), and the process holds the RC interface's CQs and send buffers "
     "from its first endpoint on, whether or not a peer gets hot. An open "
     "that finds no room leaves it to the first promotion.",
     ucs_offsetof(qpx_hybrid_iface_config_t, rc_eager), UCS_CONFIG_TYPE_BOOL},

    {"PRINT_STATS", "n",
     "Print the qpx transport's promotion statistics to stderr when an "
     "interface closes.",
     ucs_offsetof(qpx_hybrid_iface_config_t, print_stats),
     UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


/* RC_POOL_SIZE=auto from the job size, when the launcher gives it */

/* Bytes that count as one operation: PROMOTE_BYTES / PROMOTE_THRESH,
 * rounded down to a power of two so that the data path shifts instead of
 * dividing; 63 (never) for inf */
static unsigned qpx_hybrid_bytes_shift(size_t promote_bytes, unsigned thresh)
{
    size_t per_op;

    if (promote_bytes == UCS_MEMUNITS_INF) {
        return 63;
    }
    per_op = ucs_max(promote_bytes / thresh, 1);
    return ucs_ilog2(per_op);
}

static unsigned qpx_hybrid_pool_size_auto(void)
{
    qpx_job_info_t job;
    unsigned size, root;

    qpx_job_info_get(&job);
    if (job.ntasks == 0) {
        size = 32;
    } else {
        for (root = 1; root * root < job.ntasks; ++root) {
        }
        size = ucs_min(128, ucs_max(16, 4 * root));
    }
    ucs_debug("qpx: RC pool of %u QPs (job: %s, %u processes)", size,
              job.launcher, job.ntasks);
    return size;
}


/* Whether a path takes more bytes in a bcopy than the hybrid offers */
static int qpx_hybrid_bcopy_above(const uct_iface_attr_t *path,
                                  const uct_iface_attr_t *hybrid)
{
    return (path->cap.am.max_bcopy > hybrid->cap.am.max_bcopy) ||
           (path->cap.put.max_bcopy > hybrid->cap.put.max_bcopy);
}


/*
 * Empty state, and the settings of config. Everything after super (which
 * its class initialised) starts from zero: ucs_class_malloc does not clear,
 * and a counter left as the allocator gave it (rx_holds at 0xffffffff
 * wrapped to 0 on the first hold, and the hold was skipped) is a bug no
 * test sees until the heap holds the wrong bytes.
 */
void qpx_hybrid_iface_state_init(qpx_hybrid_iface_t *self,
                                 const qpx_hybrid_iface_config_t *config)
{
    UCS_STATIC_ASSERT(ucs_offsetof(qpx_hybrid_iface_t, super) == 0);
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0,
           sizeof(*self) - sizeof(self->super));
    self->epfd = -1;
    qpx_ep_table_init(&self->eps);
    qpx_ep_table_init(&self->conns);
    kh_init_inplace(qpx_hybrid_owner, &self->owners);
    ucs_list_head_init(&self->ep_list);
    ucs_list_head_init(&self->pending_eps);
    ucs_list_head_init(&self->work_eps);
    ucs_list_head_init(&self->work_conns);
    ucs_list_head_init(&self->ctl_msgs);
    ucs_list_head_init(&self->ctl_out);
    ucs_list_head_init(&self->retired);

    self->config.pool_size      = (config->pool_size == UCS_ULUNITS_AUTO) ?
                                  qpx_hybrid_pool_size_auto() :
                                  ucs_min(config->pool_size, UINT_MAX);
    self->config.promote_thresh = ucs_max(1, config->promote_thresh);
    self->config.bytes_shift    = qpx_hybrid_bytes_shift(
                                          config->promote_bytes,
                                          self->config.promote_thresh);
    self->config.promote_window = (uint64_t)(config->promote_window * 1e9);
    self->config.switch_timeout = (uint64_t)(config->switch_timeout * 1e9);
    self->config.pool_batch     = ucs_max(1, config->pool_batch);
    self->rc_eager_due          = config->rc_eager;
    self->config.print_stats    = config->print_stats;
}


/*
 * The cold path's interface and, where the SRQ is shared and its layout
 * asks for it first, the RC one. The cold path is required: one that finds
 * no room beside the RC interface opens alone, and qpx_dc chosen (not
 * asked for) gives way to qpx_ud. On failure nothing stays open.
 */
static ucs_status_t
qpx_hybrid_iface_open_paths(qpx_hybrid_iface_t *self,
                            const qpx_hybrid_iface_config_t *config,
                            uct_md_h md, uct_worker_h worker,
                            const uct_iface_params_t *params)
{
    ucs_status_t status;
    int rc_first;


    /* The RC QPs and the cold path's receive queue share one SRQ and
     * buffer pool where their layouts allow: the DCT's, which the RC QPs
     * take as they are (the same header), or the RC interface's, which the
     * UD QP takes behind its GRH and header (so that the RC payload, the
     * hot one, stays 8-byte aligned): then the RC interface opens first */
    self->cold_tl       = qpx_hybrid_cold_tl_choose(md, config->cold_tl);
    self->cold_fallback = (config->cold_tl == QPX_HYBRID_COLD_AUTO) &&
                          !strcmp(self->cold_tl, "qpx_dc");
    rc_first            = config->shared_srq &&
                          !strcmp(self->cold_tl, "qpx_ud");

    self->open_args.md          = md;
    self->open_args.worker      = worker;
    self->open_args.params      = *params;
    self->open_args.owner       = NULL;
    self->open_args.ep_failed   = qpx_hybrid_sub_ep_failed;
    self->open_args.ctl_handler = qpx_hybrid_ctl_handler;
    ucs_strncpy_zero(self->open_args.dev_name, params->mode.device.dev_name,
                     sizeof(self->open_args.dev_name));
    self->open_args.params.mode.device.dev_name = self->open_args.dev_name;
    if (rc_first && (qpx_hybrid_iface_rc_open(self) != UCS_OK)) {
        rc_first = 0; /* the cold path alone, then RC with an SRQ each */
    }

    /* The cold path is required (a QP the RC interface left it no room
     * for is tried again below, so not an error yet) */
    status = qpx_hybrid_iface_open_cold(self, rc_first ? 1 :
                                        QPX_HYBRID_COLD_TRIES);
    if ((status != UCS_OK) && rc_first) {
        /* The RC interface may hold what the cold path needs (a QP, a CQ,
         * memory the device ran out of): the cold path first, on its own,
         * as with UCX_QPX_SHARED_SRQ=n */
        ucs_debug("qpx: %s: no %s interface beside the RC one (%s): the "
                  "cold path first, an SRQ each", params->mode.device.dev_name,
                  self->cold_tl, ucs_status_string(status));
        qpx_hybrid_iface_rc_close(self);
        rc_first = 0;
        status   = qpx_hybrid_iface_open_cold(self, QPX_HYBRID_COLD_TRIES);
    }
    if ((status != UCS_OK) && self->cold_fallback) {
        /* Chosen, not asked for: qpx_ud needs no DCT, SRQ or DC inline
         * room. Peers whose cold path is DC do not reach this interface
         * (the address says which path it is), but those that fell back
         * too do, where the job would have failed */
        ucs_warn("qpx: %s: no qpx_dc interface for the cold path (%s, "
                 "logged at debug level): qpx_ud instead",
                 params->mode.device.dev_name, ucs_status_string(status));
        qpx_hybrid_iface_rc_close(self);
        rc_first            = 0;
        self->cold_tl       = "qpx_ud";
        self->cold_fallback = 0;
        status              = qpx_hybrid_iface_open_cold(self,
                                                         QPX_HYBRID_COLD_TRIES);
    }
    if (status != UCS_OK) {
        ucs_error("qpx: %s: no %s interface for the cold path (%s)",
                  params->mode.device.dev_name, self->cold_tl,
                  ucs_status_string(status));
        qpx_hybrid_iface_rc_close(self);
        return status;
    }

    /* The hot path is not: without it every endpoint stays on the cold
     * one. Unless the cold path receives from its SRQ, it opens at the
     * first promotion. */
    if (!rc_first) {
        self->open_args.owner = (config->shared_srq &&
                               !strcmp(self->cold_tl, "qpx_dc")) ?
                              self->cold_core : NULL;
    }
    qpx_hybrid_iface_rc_probe(self, rc_first);
    return UCS_OK;
}


/* The cold path's device and interface addresses (the hybrid's carries
 * them), and its attributes in *attr */
static ucs_status_t qpx_hybrid_iface_addr_init(qpx_hybrid_iface_t *self,
                                               uct_iface_attr_t *attr)
{
    ucs_status_t status;


    status = uct_iface_get_device_address(self->cold,
                                          (uct_device_addr_t*)self->addr.dev);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_get_address(self->cold,
                                   (uct_iface_addr_t*)self->addr.iface);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_query(self->cold, attr);
    if (status != UCS_OK) {
        return status;
    }
    if ((attr->device_addr_len > QPX_HYBRID_ADDR_MAX) ||
        (attr->iface_addr_len > QPX_HYBRID_ADDR_MAX)) {
        ucs_error("qpx: %s addresses of %zu/%zu bytes exceed %d",
                  self->cold_tl, attr->device_addr_len, attr->iface_addr_len,
                  QPX_HYBRID_ADDR_MAX);
        status = UCS_ERR_UNSUPPORTED;
        return status;
    }
    self->addr.dev_len   = attr->device_addr_len;
    self->addr.iface_len = attr->iface_addr_len;
    return UCS_OK;
}


static UCS_CLASS_INIT_FUNC(qpx_hybrid_iface_t, uct_iface_ops_t *ops,
                           uct_iface_internal_ops_t *internal_ops,
                           uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const qpx_hybrid_iface_config_t *config =
            ucs_derived_of(tl_config, qpx_hybrid_iface_config_t);
    uct_iface_attr_t attr;
    ucs_status_t status;
    size_t align, align_offset;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx: only device open mode is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    /* Checked here once; the sub-interfaces get it (qpx_hybrid_sub.c) */
    status = qpx_param_am_alignment(params, SIZE_MAX, 1, &align,
                                    &align_offset);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops, internal_ops, md,
                              worker, params, tl_config);

    qpx_hybrid_iface_state_init(self, config);

    status = qpx_hybrid_iface_open_paths(self, config, md, worker, params);
    if (status != UCS_OK) {
        goto err_cleanup;
    }

    status = qpx_hybrid_iface_addr_init(self, &attr);
    if (status != UCS_OK) {
        goto err_close;
    }

    qpx_hybrid_iface_event_init(self, &attr);
    status = qpx_hybrid_iface_query(&self->super.super, &self->attr);
    if (status != UCS_OK) {
        goto err_close;
    }
    self->check_bcopy = qpx_hybrid_bcopy_above(&attr, &self->attr) ||
                        (self->rc_avail &&
                         qpx_hybrid_bcopy_above(&self->rc_attr, &self->attr));
    if (self->rc != NULL) {
        ucs_debug("qpx iface %p: %s", self,
                  (self->cold_core->rx_owner != NULL) ?
                  "the cold path receives from the RC QPs' SRQ" :
                  (self->rc_core->rx_owner != NULL) ?
                  "the RC QPs receive from the cold path's SRQ" :
                  "RC QPs and the cold path have an SRQ each");
    }
    ucs_debug("qpx iface %p on %s: cold %s %p rc %p, pool %u, promote after "
              "%u operations (an operation per %zu bytes) in %.3f ms", self,
              params->mode.device.dev_name, self->cold_tl, self->cold,
              self->rc, self->config.pool_size, self->config.promote_thresh,
              (self->config.bytes_shift < 63) ?
              ((size_t)1 << self->config.bytes_shift) : SIZE_MAX,
              config->promote_window * 1e3);
    return UCS_OK;

err_close:
    qpx_hybrid_iface_close_subs(self);
err_cleanup:
    kh_destroy_inplace(qpx_hybrid_owner, &self->owners);
    qpx_ep_table_cleanup(&self->conns);
    qpx_ep_table_cleanup(&self->eps);
    return status;
}


static void qpx_hybrid_iface_print_stats(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_stats_t *s = &iface->stats;
    qpx_qp_pool_t *pool;

    if (iface->rc != NULL) {
        pool           = &iface->rc_core->qp_pool;
        s->qps_created = pool->created;
        s->qps_reused  = pool->reused;
    }

    ucs_debug("qpx iface %p closing: promotions %lu demotions %lu refused "
              "%lu no_slot %lu rc_failures %lu timeouts %lu deferred %lu "
              "accepted %lu declined %lu max_rc_in_use %lu qps_created %lu "
              "qps_reused %lu malformed %lu yielded %lu joins %lu "
              "transfers %lu held %lu dropped %lu", iface, s->promotions,
              s->demotions, s->refused, s->no_slot, s->rc_failures,
              s->timeouts, s->deferred, s->accepted, s->declined,
              s->max_rc_in_use, s->qps_created, s->qps_reused, s->malformed,
              s->yielded, s->joins, s->transfers, s->held, s->dropped);
    if (iface->config.print_stats) {
        fprintf(stderr, "qpx stats: promotions=%lu demotions=%lu refused=%lu "
                "no_slot=%lu rc_failures=%lu timeouts=%lu deferred=%lu "
                "accepted=%lu declined=%lu max_rc_in_use=%lu pool=%u "
                "qps_created=%lu qps_reused=%lu malformed=%lu yielded=%lu "
                "joins=%lu transfers=%lu held=%lu dropped=%lu\n",
                s->promotions,
                s->demotions, s->refused, s->no_slot, s->rc_failures,
                s->timeouts, s->deferred, s->accepted, s->declined,
                s->max_rc_in_use, iface->config.pool_size, s->qps_created,
                s->qps_reused, s->malformed, s->yielded, s->joins,
                s->transfers, s->held, s->dropped);
    }
}


static UCS_CLASS_CLEANUP_FUNC(qpx_hybrid_iface_t)
{
    qpx_hybrid_ctl_msg_t *msg, *tmp;
    qpx_hybrid_conn_t *conn;
    unsigned i;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    qpx_hybrid_iface_print_stats(self);
    if (self->epfd >= 0) {
        close(self->epfd);
    }

    ucs_list_for_each_safe(msg, tmp, &self->ctl_msgs, list) {
        free(msg);
    }
    while (!ucs_list_is_empty(&self->ctl_out)) {
        qpx_hybrid_ctl_out_t *out = ucs_list_extract_head(&self->ctl_out,
                                                          qpx_hybrid_ctl_out_t,
                                                          list);
        ucs_debug("qpx iface %p closing: control message to 0x%x not sent",
                  self, out->dst_id);
        uct_ep_destroy(out->ep);
        free(out);
    }
    for (i = 0; i < self->conns.capacity; ++i) {
        conn = qpx_ep_table_slot(&self->conns, i);
        if (conn != NULL) {
            qpx_hybrid_conn_destroy(self, conn);
        }
    }
    /* What is still retired goes now: the interfaces close */
    while (!ucs_list_is_empty(&self->retired)) {
        qpx_hybrid_retired_t *r = ucs_list_extract_head(&self->retired,
                                                        qpx_hybrid_retired_t,
                                                        list);
        qpx_hybrid_retired_destroy(self, r);
    }
    if (!ucs_list_is_empty(&self->ep_list)) {
        ucs_warn("qpx iface %p closed with %zu endpoints", self,
                 ucs_list_length(&self->ep_list));
    }
    qpx_hybrid_iface_close_subs(self);
    kh_destroy_inplace(qpx_hybrid_owner, &self->owners);
    qpx_ep_table_cleanup(&self->conns);
    qpx_ep_table_cleanup(&self->eps);
}


UCS_CLASS_DEFINE(qpx_hybrid_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(qpx_hybrid_iface_t, uct_iface_t);


ucs_status_t qpx_hybrid_iface_new(uct_iface_ops_t *ops,
                                  uct_iface_internal_ops_t *internal_ops,
                                  uct_md_h md, uct_worker_h worker,
                                  const uct_iface_params_t *params,
                                  const uct_iface_config_t *config,
                                  uct_iface_h *iface_p)
{
    qpx_hybrid_iface_t *iface;
    ucs_status_t status;

    status = UCS_CLASS_NEW(qpx_hybrid_iface_t, &iface, ops, internal_ops, md,
                           worker, params, config);
    if (status != UCS_OK) {
        return status;
    }
    *iface_p = &iface->super.super;
    return UCS_OK;
}


void qpx_hybrid_iface_close(uct_iface_h tl_iface)
{
    UCS_CLASS_DELETE_FUNC_NAME(qpx_hybrid_iface_t)(tl_iface);
}


/*
 * A path that had nothing for QPX_HYBRID_IDLE_CALLS calls is polled every
 * QPX_HYBRID_IDLE_EVERY calls only, so that the busy path's latency does
 * not carry the other's polling (the first message on an idle path waits
 * a few more calls); the RC interface is not polled at all while it has no
 * QP in use
 */
static UCS_F_ALWAYS_INLINE unsigned
qpx_hybrid_iface_poll(uct_iface_h sub, unsigned *idle, unsigned calls)
{
    unsigned count;

    if (ucs_unlikely(*idle >= QPX_HYBRID_IDLE_CALLS) &&
        ((calls % QPX_HYBRID_IDLE_EVERY) != 0)) {
        return 0;
    }
    count = uct_iface_progress(sub);
    if (count != 0) {
        *idle = 0;
    } else if (*idle < QPX_HYBRID_IDLE_CALLS) {
        ++*idle;
    }
    return count;
}


unsigned qpx_hybrid_iface_progress(uct_iface_h tl_iface)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    unsigned calls            = ++iface->progress_calls;
    unsigned count;

    count = qpx_hybrid_iface_poll(iface->cold, &iface->cold_idle, calls);
    if (iface->rc_in_use != 0) {
        count += qpx_hybrid_iface_poll(iface->rc, &iface->rc_idle, calls);
    }

    /* Switches, answers and retirements: rare, each list empty otherwise */
    if (ucs_unlikely(!ucs_list_is_empty(&iface->ctl_msgs))) {
        count += qpx_hybrid_iface_ctl_progress(iface);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&iface->work_eps) ||
                     !ucs_list_is_empty(&iface->work_conns) ||
                     !ucs_list_is_empty(&iface->ctl_out))) {
        count += qpx_hybrid_iface_work_progress(iface);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&iface->retired))) {
        count += qpx_hybrid_iface_retire_progress(iface);
    }
    if (!ucs_list_is_empty(&iface->pending_eps)) {
        count += qpx_hybrid_iface_pending_progress(iface);
    }
    return count;
}


/* The smaller limit of two, 0 meaning "not offered" in either */
static void qpx_hybrid_cap_min(size_t *a, size_t b)
{
    *a = ucs_min(*a, b);
}


ucs_status_t qpx_hybrid_iface_query(uct_iface_h tl_iface,
                                    uct_iface_attr_t *iface_attr)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    uct_iface_attr_t *a       = iface_attr;
    const uct_iface_attr_t *r;
    ucs_status_t status;
    uint64_t drop;

    status = uct_iface_query(iface->cold, iface_attr);
    if (status != UCS_OK) {
        return status;
    }
    /* The RC interface's as read at open: it may not be open now */
    r = iface->rc_avail ? &iface->rc_attr : iface_attr;

    /* An endpoint may move from one path to the other between two
     * operations: it offers what both offer, within both's limits. It
     * connects to an interface; events as qpx_hybrid_iface_event_init
     * found them */
    drop = UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_CONNECT_TO_IFACE |
           UCT_IFACE_FLAG_CB_ASYNC;
    iface_attr->cap.flags       = (iface_attr->cap.flags & r->cap.flags &
                                   ~drop) | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    iface_attr->cap.event_flags = iface->event_flags;

    /* a: what both give; r: the RC side */
    qpx_hybrid_cap_min(&a->cap.put.max_short, r->cap.put.max_short);
    qpx_hybrid_cap_min(&a->cap.put.max_bcopy, r->cap.put.max_bcopy);
    qpx_hybrid_cap_min(&a->cap.put.max_zcopy, r->cap.put.max_zcopy);
    qpx_hybrid_cap_min(&a->cap.put.max_iov, r->cap.put.max_iov);
    qpx_hybrid_cap_min(&a->cap.get.max_short, r->cap.get.max_short);
    qpx_hybrid_cap_min(&a->cap.get.max_bcopy, r->cap.get.max_bcopy);
    qpx_hybrid_cap_min(&a->cap.get.max_zcopy, r->cap.get.max_zcopy);
    qpx_hybrid_cap_min(&a->cap.get.max_iov, r->cap.get.max_iov);
    qpx_hybrid_cap_min(&a->cap.am.max_short, r->cap.am.max_short);
    qpx_hybrid_cap_min(&a->cap.am.max_bcopy, r->cap.am.max_bcopy);
    qpx_hybrid_cap_min(&a->cap.am.max_zcopy, r->cap.am.max_zcopy);
    qpx_hybrid_cap_min(&a->cap.am.max_iov, r->cap.am.max_iov);
    qpx_hybrid_cap_min(&a->cap.am.max_hdr, r->cap.am.max_hdr);
    a->cap.put.min_zcopy = ucs_max(a->cap.put.min_zcopy, r->cap.put.min_zcopy);
    a->cap.get.min_zcopy = ucs_max(a->cap.get.min_zcopy, r->cap.get.min_zcopy);
    a->cap.am.min_zcopy  = ucs_max(a->cap.am.min_zcopy, r->cap.am.min_zcopy);
    iface_attr->cap.atomic32.op_flags  &= r->cap.atomic32.op_flags;
    iface_attr->cap.atomic32.fop_flags &= r->cap.atomic32.fop_flags;
    iface_attr->cap.atomic64.op_flags  &= r->cap.atomic64.op_flags;
    iface_attr->cap.atomic64.fop_flags &= r->cap.atomic64.fop_flags;

    iface_attr->ep_addr_len    = 0;
    iface_attr->iface_addr_len = 1 + iface->addr.iface_len; /* the tag */
    /* A busy peer is served at RC's cost; any number of peers at DC's
     * (max_num_eps stays DC's): RC's fixed latency, without its growth
     * with the number of endpoints (RC QPs stay within the pool) */
    iface_attr->latency.c   = r->latency.c;
    iface_attr->overhead    = r->overhead;
    iface_attr->bandwidth   = r->bandwidth;
    return UCS_OK;
}


ucs_status_t qpx_hybrid_iface_get_device_address(uct_iface_h tl_iface,
                                                 uct_device_addr_t *addr)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);

    return uct_iface_get_device_address(iface->cold, addr);
}


/* Our cold path's tag, then its interface address */
ucs_status_t qpx_hybrid_iface_get_address(uct_iface_h tl_iface,
                                          uct_iface_addr_t *addr)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    uint8_t *p                = (uint8_t*)addr;

    p[0] = qpx_hybrid_iface_cold_tag(iface);
    memcpy(p + 1, iface->addr.iface, iface->addr.iface_len);
    return UCS_OK;
}


/* A peer whose cold path is ours, and which that path reaches */
int qpx_hybrid_iface_is_reachable(const uct_iface_h tl_iface,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_iface_addr_t *iface_addr)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    const uint8_t *p          = (const uint8_t*)iface_addr;

    if ((p == NULL) || (p[0] != qpx_hybrid_iface_cold_tag(iface))) {
        return 0;
    }
    return uct_iface_is_reachable(iface->cold, dev_addr,
                                  (const uct_iface_addr_t*)(p + 1));
}


/*
 * Every endpoint's operations: those of both sub-interfaces, and the
 * requests endpoints hold in their pending queues (as an endpoint's flush
 * is refused while it holds any, so is the interface's: UCP's worker flush
 * takes an interface flush that succeeds for the end of every operation it
 * started, a get held during a switch included). Without comp the answer
 * is UCS_INPROGRESS while there is any; with comp, the sub-interfaces
 * complete theirs by themselves, and the call is refused
 * (UCS_ERR_NO_RESOURCE) until one of them is left with work in flight.
 */
ucs_status_t qpx_hybrid_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                    uct_completion_t *comp)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    ucs_status_t dc_status, rc_status;

    if (!(flags & UCT_FLUSH_FLAG_CANCEL) &&
        !ucs_list_is_empty(&iface->pending_eps)) {
        return (comp == NULL) ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
    }

    if (comp != NULL) {
        if (iface->rc == NULL) {
            return uct_iface_flush(iface->cold, flags, comp);
        }
        rc_status = uct_iface_flush(iface->rc, flags, NULL);
        if (rc_status == UCS_OK) {
            return uct_iface_flush(iface->cold, flags, comp);
        }
        dc_status = uct_iface_flush(iface->cold, flags, NULL);
        if (dc_status == UCS_OK) {
            return uct_iface_flush(iface->rc, flags, comp);
        }
        return UCS_ERR_NO_RESOURCE;
    }

    dc_status = uct_iface_flush(iface->cold, flags, NULL);
    rc_status = (iface->rc == NULL) ? UCS_OK :
                uct_iface_flush(iface->rc, flags, NULL);
    if (UCS_STATUS_IS_ERR(dc_status) && (dc_status != UCS_ERR_NO_RESOURCE)) {
        return dc_status;
    }
    if (UCS_STATUS_IS_ERR(rc_status) && (rc_status != UCS_ERR_NO_RESOURCE)) {
        return rc_status;
    }
    return ((dc_status == UCS_OK) && (rc_status == UCS_OK)) ? UCS_OK :
           UCS_INPROGRESS;
}


ucs_status_t qpx_hybrid_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    ucs_status_t status;

    status = uct_iface_fence(iface->cold, flags);
    if ((status == UCS_OK) && (iface->rc != NULL)) {
        status = uct_iface_fence(iface->rc, flags);
    }
    return status;
}
