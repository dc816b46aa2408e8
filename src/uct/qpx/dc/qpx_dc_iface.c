/*
 * qpx_dc interface: configuration, the DCT, attributes, progress and the
 * tl.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"

#include <uct/qpx/rdma/qpx_rdma_rx.inl>
#include <ucs/qpx_config.h>

#include <uct/qpx/base/qpx_component.h>

#include <inttypes.h>
#include <time.h>


static const char *qpx_dc_policy_names[] = {
    [QPX_DC_POLICY_DCS]       = "dcs",
    [QPX_DC_POLICY_DCS_QUOTA] = "dcs_quota",
    [QPX_DC_POLICY_RAND]      = "rand",
    [QPX_DC_POLICY_STICKY]    = "sticky",
    [QPX_DC_POLICY_SPREAD]    = "spread",
    [QPX_DC_POLICY_LAST]      = NULL
};


static ucs_config_field_t qpx_dc_iface_config_table[] = {
    /* Shared qpx options: UCX_QPX_<NAME>, overridden by UCX_QPX_DC_<NAME>.
     * MAX_NUM_EPS stays UCT's unlimited default: a DC interface costs the
     * same QPs whatever its number of peers */
    {"QPX_", "", NULL,
     ucs_offsetof(qpx_dc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(qpx_iface_config_table)},

    {"NUM_DCI", "8",
     "DC initiators of the interface (1..64): the endpoints that can have "
     "requests in flight at once.",
     ucs_offsetof(qpx_dc_iface_config_t, num_dci), QPX_CONFIG_TYPE_UINT},

    {"TX_POLICY", "dcs_quota",
     "How endpoints get a DC initiator (the default is UCX's dc_mlx5's: with\n"
     "more busy endpoints than DCIs, dcs lets the holders of DCIs starve the\n"
     "others):\n"
     " dcs       - an endpoint holds a DCI while it has requests in flight\n"
     " dcs_quota - dcs, and an endpoint that posted QUOTA requests while\n"
     "             others wait for a DCI stops until it gave its DCI back\n"
     " rand      - each endpoint sends on a DCI picked at random, shared\n"
     " sticky    - dcs, but an idle DCI stays with its endpoint (still\n"
     "             connected to its target) until another endpoint needs it\n"
     " spread    - each endpoint sends on one shared DCI for its life: the\n"
     "             one of its target's other endpoints, else the least used",
     ucs_offsetof(qpx_dc_iface_config_t, policy),
     UCS_CONFIG_TYPE_ENUM(qpx_dc_policy_names)},

    {"QUOTA", "32",
     "dcs_quota: requests an endpoint may post on its DCI while others wait "
     "for one.",
     ucs_offsetof(qpx_dc_iface_config_t, quota), QPX_CONFIG_TYPE_UINT},

    /* The RC family's: TIMEOUT, RETRY_COUNT, RNR_*, PATH_MTU,
     * MAX_RD_ATOMIC, ATOMICS, EVENTS, KEEPALIVE_INTERVAL */
    {"", "", NULL, ucs_offsetof(qpx_dc_iface_config_t, rdma),
     UCS_CONFIG_TYPE_TABLE(qpx_rdma_iface_config_table)},

    {"KEY", "auto",
     "Access key of the interface's DC target, which every request to it "
     "must carry; requests with another are refused by the device.\n"
     " auto     - derived from the job the launcher names (SLURM_JOB_ID, "
     "else PMIX_NAMESPACE, else OMPI_MCA_ess_base_jobid), so that a process "
     "of another job cannot write into this job's DC targets by knowing "
     "qpx's default; that default where no job is named\n"
     " <number> - this key (decimal, or hex with 0x): every process that "
     "talks to this one over qpx_dc (or the hybrid) must set the same",
     ucs_offsetof(qpx_dc_iface_config_t, key), QPX_CONFIG_TYPE_KEY},

    {"ASYNC_PROGRESS", "auto",
     "Receive from the worker's async thread while the user does not call\n"
     "progress for ASYNC_IDLE (thread async modes only): active message\n"
     "handlers set with UCT_CB_FLAG_ASYNC run there, and the interface\n"
     "reports UCT_IFACE_FLAG_CB_ASYNC, which UCX 1.13's UCP requires of the\n"
     "transport that wires its endpoints up (UCX_TLS=qpx_rc,qpx_dc). Every\n"
     "operation then blocks the async context, as UCX's ud transports do.\n"
     " on   - always (not for the hybrid's DC path, which it progresses)\n"
     " off  - never\n"
     " auto - on where UCP needs it to wire up: qpx built for a UCX before\n"
     "        1.19 (later UCP takes a transport without it)",
     ucs_offsetof(qpx_dc_iface_config_t, async_progress),
     UCS_CONFIG_TYPE_ON_OFF_AUTO},

    {"ASYNC_IDLE", "10ms",
     "With async progress: how often the async thread looks whether the\n"
     "user progressed the interface since its last look, and polls it if\n"
     "not (the user idle for one to two periods).",
     ucs_offsetof(qpx_dc_iface_config_t, async_idle), QPX_CONFIG_TYPE_TIME},

    {NULL}
};


/* Progress on the path direct names (a constant of the caller) */
static UCS_F_ALWAYS_INLINE unsigned
qpx_dc_iface_progress_path(uct_iface_h tl_iface, int direct)
{
    qpx_dc_iface_t *iface = ucs_derived_of(tl_iface, qpx_dc_iface_t);

    if (ucs_unlikely(iface->tx_wake_due)) {
        iface->tx_wake_due = 0;
        qpx_dc_iface_tx_wake(iface);
        if (iface->num_invalid != 0) {
            qpx_dc_iface_fail_invalid(iface);
        }
    }

    /* Receives without per-run hooks: DC has no credits to return */
    return qpx_rdma_iface_progress(&iface->super, direct, qpx_rdma_iface_rx_wc,
                                   qpx_dc_iface_tx_process,
                                   qpx_dc_iface_keepalive);
}


static unsigned qpx_dc_iface_progress(uct_iface_h tl_iface)
{
    return qpx_dc_iface_progress_path(tl_iface, QPX_RDMA_PATH_VERBS);
}


static UCS_F_NOINLINE unsigned
qpx_dc_iface_progress_direct_round(qpx_rdma_iface_t *iface)
{
    return qpx_dc_iface_progress_path(&iface->super.super.super,
                                      QPX_RDMA_PATH_DIRECT);
}


static unsigned qpx_dc_iface_progress_direct(uct_iface_h tl_iface)
{
    qpx_dc_iface_t *iface = ucs_derived_of(tl_iface, qpx_dc_iface_t);

    if (ucs_unlikely(iface->tx_wake_due)) {
        return qpx_dc_iface_progress_direct_round(&iface->super);
    }
    return qpx_rdma_iface_progress_direct(&iface->super,
                                          qpx_dc_iface_progress_direct_round);
}


static ucs_status_t qpx_dc_iface_get_address(uct_iface_h tl_iface,
                                             uct_iface_addr_t *addr)
{
    qpx_dc_iface_t *iface          = ucs_derived_of(tl_iface, qpx_dc_iface_t);
    qpx_dc_iface_addr_t *dc_addr   = (qpx_dc_iface_addr_t*)addr;
    uint32_t dct_num               = iface->dct->qp_num;

    dc_addr->dct_num[0] = dct_num & 0xff;
    dc_addr->dct_num[1] = (dct_num >> 8) & 0xff;
    dc_addr->dct_num[2] = (dct_num >> 16) & 0xff;
    return UCS_OK;
}


static void qpx_dc_iface_t_delete(uct_iface_t *tl_iface);


static uct_iface_ops_t qpx_dc_iface_ops = {
    QPX_RDMA_IFACE_OPS(qpx_dc)
};

/* What a direct interface takes instead (qpx_rdma_tl_t's direct_ops) */
static const uct_iface_ops_t qpx_dc_iface_direct_ops = {
    QPX_RDMA_IFACE_DATA_OPS(qpx_dc_direct),
    .iface_progress           = qpx_dc_iface_progress_direct
};


static void qpx_dc_iface_tx_solicit_base(qpx_iface_t *iface)
{
    qpx_dc_iface_dci_solicit(ucs_derived_of(iface, qpx_dc_iface_t));
}


/* As UCX's dc_mlx5: one endpoint in flight per DCI */
static size_t qpx_dc_iface_max_inflight_eps(const qpx_rdma_iface_t *iface)
{
    return ucs_derived_of(iface, qpx_dc_iface_t)->num_dci;
}

static uct_iface_internal_ops_t qpx_dc_iface_internal_ops =
    QPX_RDMA_IFACE_INTERNAL_OPS(qpx_dc_ep_invalidate, qpx_dc_ep_is_connected);

static const qpx_iface_ops_t qpx_dc_iface_base_ops = {
    /* send CQ entries and send buffers */
    .tx_exhausted = qpx_iface_tx_exhausted_signaled,
    .ep_tx_state  = qpx_dc_ep_tx_state,
    .tx_solicit   = qpx_dc_iface_tx_solicit_base
};

static const qpx_rdma_tl_t qpx_dc_rdma_tl = {
    .name           = QPX_DC_TL_NAME,
    .qp_type        = IBV_QPT_DRIVER,
    .tx_reserve     = QPX_DC_SQ_RESERVE,
    .access_flags   = 0,
    .qp_create      = qpx_qp_dci_create,
    .ops            = &qpx_dc_iface_ops,
    .internal_ops   = &qpx_dc_iface_internal_ops,
    .max_inflight_eps = qpx_dc_iface_max_inflight_eps,
    .ep_list_offset = ucs_offsetof(qpx_dc_ep_t, list),
    .direct         = 1,
    .direct_ops     = &qpx_dc_iface_direct_ops,
    .base_ops       = &qpx_dc_iface_base_ops,
    .connect_flag   = UCT_IFACE_FLAG_CONNECT_TO_IFACE,
    .iface_addr_len = sizeof(qpx_dc_iface_addr_t),
    .ep_addr_len    = 0,
    /* An RC QP's costs, plus the DC connect a target switch may need; the
     * cost does not grow with the number of peers (latency.m 0) */
    .overhead       = 80e-9,
    .latency_c      = 60e-9,
    .latency_m      = 0,
    /* Receives without per-run hooks: DC has no credits to return */
    .rx_wc          = qpx_rdma_iface_rx_wc,
    .tx_wc          = qpx_dc_iface_tx_process
};


/* The attributes of DCIs (RTR, RTS) and of the DCT (RTR) */
static void qpx_dc_iface_init_conn(qpx_dc_iface_t *self,
                                   const qpx_dc_iface_config_t *config)
{
    qpx_qp_connect_attr_t *conn = &self->super.conn;
    qpx_device_addr_t self_addr;

    qpx_rdma_iface_conn_init(&self->super, &config->rdma);
    /* The local port's address vector: its GRH on RoCE */
    qpx_device_addr_get(self->super.super.port, &self_addr);
    qpx_device_ah_attr(&self_addr, self->super.super.port_num,
                       self->super.super.port->gid_index, &conn->ah_attr);
    conn->sq_psn = 0;
}


static ucs_status_t qpx_dc_iface_dct_create(qpx_dc_iface_t *self)
{
    ucs_status_t status;

    /* A DCT the device has no room for is logged at the level the
     * interface's user asked for (the hybrid, which goes on without it),
     * or at debug level while a DCI can still give way to it */
    status = qpx_qp_dct_create(self->super.super.md->pd,
                               &self->super.super.qp_init_attr,
                               self->config.dc_key, (self->num_dci > 1) ?
                               UCS_LOG_LEVEL_DEBUG :
                               self->super.super.exhausted_level, &self->dct);
    if (status != UCS_OK) {
        if (status == UCS_ERR_NO_MEMORY) {
            qpx_iface_exhausted_set(&self->super.super, "QP");
        }
        return status;
    }

    status = qpx_qp_dct_listen(self->dct, self->super.super.port_num,
                               IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC, &self->super.conn);
    if (status != UCS_OK) {
        qpx_qp_destroy(self->dct);
    }
    return status;
}


/*
 * The DCIs an interface asks for, on a device the job's processes on this
 * host share: unless the user set UCX_QPX_DC_NUM_DCI, an interface takes
 * no more than half its process's share of the device's QPs (max_qp over
 * the local processes the launcher reports), its DCT included, and at
 * least one DCI; the other half stays for RC QPs. Without the cap, on a
 * device of 20 QPs and 8 processes, the first processes took 8 DCIs each
 * and a later one found no QP for its DCT. On a device of thousands of QPs
 * it changes nothing.
 */
static unsigned qpx_dc_iface_num_dci(qpx_dc_iface_t *iface, unsigned num_dci)
{
    qpx_job_info_t job;
    unsigned share, cap;

    if (getenv("UCX_QPX_DC_NUM_DCI") != NULL) {
        return num_dci;
    }

    qpx_job_info_get(&job);
    if (job.local_tasks <= 1) {
        return num_dci;
    }

    share = (unsigned)iface->super.super.md->dev.attr.max_qp / job.local_tasks;
    cap   = ucs_max(share / 2, 2) - 1;
    if (cap >= num_dci) {
        return num_dci;
    }

    ucs_debug("qpx_dc: %s:%d takes %u of %u DCIs: %d QPs for %u processes "
              "on this host", iface->super.super.md->dev.name,
              iface->super.super.port_num, cap, num_dci,
              iface->super.super.md->dev.attr.max_qp, job.local_tasks);
    return cap;
}


/* The access key of our DCT and of the peers': derived from the job, or
 * set by the user */
static void qpx_dc_iface_key_init(qpx_dc_iface_t *self,
                                  const qpx_dc_iface_config_t *config)
{
    const char *key_source;

    if (config->key.is_auto) {
        self->config.dc_key = qpx_job_key(QPX_DC_KEY, &key_source);
    } else {
        self->config.dc_key = config->key.value;
        key_source          = "UCX_QPX_DC_KEY";
    }
    ucs_debug("qpx_dc: %s:%d DC access key from %s",
              self->super.super.md->dev.name, self->super.super.port_num,
              key_source);
}


/* The DCIs and the DCT, and the caps the first DCI fixes (inline room,
 * SGEs); on failure none stays */
static ucs_status_t qpx_dc_iface_qps_create(qpx_dc_iface_t *self,
                                            const qpx_dc_iface_config_t *config)
{
    ucs_status_t status, dci_status;
    unsigned num_dci;

    /* The DCIs first: the first one fixes the caps (inline, SGEs) */
    dci_status = UCS_OK;
    num_dci    = qpx_dc_iface_num_dci(self, config->num_dci);
    status     = qpx_dc_iface_dcis_create(self, num_dci, &dci_status);
    if (status != UCS_OK) {
        return status;
    }
    status = qpx_rdma_iface_caps_init(&self->super, &config->rdma);
    if (status != UCS_OK) {
        goto err_destroy_dcis;
    }

    /* The DCT is the interface's only way in, a DCI one of its ways out:
     * on a device out of QPs the DCIs give way to it, down to one, rather
     * than leave the process without an interface */
    status = qpx_dc_iface_dct_create(self);
    while ((status == UCS_ERR_NO_MEMORY) && (self->num_dci > 1)) {
        qpx_dc_iface_dci_give_way(self);
        dci_status = status;
        status     = qpx_dc_iface_dct_create(self);
    }
    if (status != UCS_OK) {
        goto err_destroy_dcis;
    }
    if (self->num_dci < num_dci) {
        ucs_warn("qpx_dc: %s:%d has %u of %u DCIs (%s)",
                 self->super.super.md->dev.name, self->super.super.port_num,
                 self->num_dci, num_dci,
                 ucs_status_string(dci_status));
    }
    return UCS_OK;

err_destroy_dcis:
    qpx_dc_iface_dcis_destroy(self);
    return status;
}


/*
 * Whether the interface receives from the async thread (ASYNC_PROGRESS):
 * never as the hybrid's sub-interface (hints), which the hybrid progresses
 * and which shares its receive buffers; auto where qpx is built for a UCX
 * whose UCP wires endpoints up only over a transport that reports
 * UCT_IFACE_FLAG_CB_ASYNC (1.13; 1.19 and later fall back to one without)
 */
static int qpx_dc_iface_async_wanted(const qpx_dc_iface_config_t *config,
                                     const qpx_iface_hints_t *hints)
{
    if ((config->async_progress == UCS_CONFIG_OFF) || (hints != NULL)) {
        return 0;
    }

    return (config->async_progress == UCS_CONFIG_ON) ||
           !QPX_UCX_AT_LEAST(1, 19);
}


static QPX_IFACE_INIT_FUNC(qpx_dc_iface_t)
{
    const qpx_dc_iface_config_t *config =
            ucs_derived_of(tl_config, qpx_dc_iface_config_t);
    ucs_status_t status;

    if ((config->num_dci == 0) || (config->num_dci > QPX_DC_MAX_DCI)) {
        ucs_error("qpx_dc: NUM_DCI=%u is out of 1..%d", config->num_dci,
                  QPX_DC_MAX_DCI);
        return UCS_ERR_INVALID_PARAM;
    }

    UCS_CLASS_CALL_SUPER_INIT(qpx_rdma_iface_t, &qpx_dc_rdma_tl, md, worker,
                              params, &config->super, hints);

    ucs_list_head_init(&self->tx_wait);
    self->tx_wake_due = 0;
    self->num_invalid = 0;
    self->num_dci_waiters = 0;
    qpx_ep_table_init(&self->ep_table);
    qpx_ah_cache_init(&self->ah_cache, self->super.super.md->pd,
                      self->super.super.port_num,
                      self->super.super.port->gid_index);
    self->tick            = 0;
    self->target_switches = 0;
    self->rand_state      = ((uint64_t)(uintptr_t)self ^
                             (uint64_t)time(NULL)) | 1;

    qpx_dc_iface_init_conn(self, config);
    self->config.policy     = (qpx_dc_policy_t)config->policy;
    self->config.quota      = ucs_max(1, config->quota);
    qpx_dc_iface_key_init(self, config);

    status = qpx_dc_iface_qps_create(self, config);
    if (status != UCS_OK) {
        goto err_cleanup;
    }

    status = qpx_rdma_iface_start(&self->super, &config->rdma);
    if (status != UCS_OK) {
        goto err_destroy_qps;
    }
    if (self->super.super.direct.enabled) {
        status = qpx_dc_iface_dcis_direct_init(self);
        if (status != UCS_OK) {
            goto err_stop;
        }
    }

    if (qpx_dc_iface_async_wanted(config, hints)) {
        status = qpx_rdma_iface_async_start(&self->super, config->async_idle);
        if (status != UCS_OK) {
            goto err_stop;
        }
    }

    ucs_debug("qpx_dc iface %p: dct 0x%x, %u dcis (%s), %s path, inline %zu "
              "sge %u", self, self->dct->qp_num, self->num_dci,
              qpx_dc_policy_names[self->config.policy],
              self->super.super.direct.enabled ? "direct" : "verbs",
              self->super.super.config.max_inline,
              self->super.super.config.max_send_sge);
    return UCS_OK;

err_stop:
    qpx_rdma_iface_stop(&self->super);
err_destroy_qps:
    qpx_qp_destroy(self->dct);
    qpx_dc_iface_dcis_destroy(self);
err_cleanup:
    qpx_ah_cache_cleanup(&self->ah_cache);
    qpx_ep_table_cleanup(&self->ep_table);
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(qpx_dc_iface_t)
{
    qpx_rdma_iface_stop(&self->super);
    ucs_debug("qpx_dc iface %p: %" PRIu64 " target switches", self,
              self->target_switches);
    qpx_qp_destroy(self->dct);
    qpx_dc_iface_dcis_destroy(self);
    qpx_ah_cache_cleanup(&self->ah_cache);
    qpx_ep_table_cleanup(&self->ep_table);
}


/* qpx_dc_iface_open, with hints: the hybrid's sub-interface too */
QPX_IFACE_CLASS_DEFINE(qpx_dc_iface_t, qpx_rdma_iface_t, qpx_dc_iface_open);


/*
 * The device's active ports, if it offers DC: mlx5dv_query_device answers
 * on an mlx5 device (and on softverbs) and fails with EOPNOTSUPP on any
 * other (rdma-core's mlx5dv wrappers without the provider's ops), so that
 * qpx_dc offers no resource there rather than one whose interface cannot
 * open.
 */
static ucs_status_t qpx_dc_query_devices(uct_md_h tl_md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p)
{
    qpx_md_t *md = ucs_derived_of(tl_md, qpx_md_t);
    struct mlx5dv_context dv_attr;
    int ret;

    memset(&dv_attr, 0, sizeof(dv_attr));
    ret = mlx5dv_query_device(md->dev.ctx, &dv_attr);
    if (ret != 0) {
        ucs_debug("qpx_dc: %s has no DC (mlx5dv_query_device: %s)",
                  md->dev.name, strerror(ret));
        *devices_p     = NULL;
        *num_devices_p = 0;
        return UCS_OK;
    }
    return qpx_iface_query_devices(tl_md, devices_p, num_devices_p);
}


QPX_TL_DEFINE(qpx_dc_tl, QPX_DC_TL_NAME, "QPX_DC_", qpx_dc_iface_config_table,
              qpx_dc_iface_config_t, qpx_dc_query_devices);
