/*
 * softverbs devices: discovery, contexts, device/port/GID/P_Key queries.
 */
#include "sv.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <sys/socket.h>

static struct sv_device sv_devs[SV_MAX_DEVS];
static struct ibv_device *sv_dev_list[SV_MAX_DEVS + 1];

/*
 * The device list, from SOFTVERBS_NUM_DEVICES, SOFTVERBS_NUM_PORTS and
 * SOFTVERBS_FIRST_DEVICE: built once, when the registry is first attached
 * (sv_shm_init). The registry has SV_MAX_DEVS device slots; a process owns
 * slots first .. first + n - 1, named softverbs0.. as a host names its own
 * HCAs. Processes that share a registry but own other slots are other
 * hosts (contrib/cluster-one-host.sh): their devices are reached by LID
 * (slot x ports + port), as a fabric's, and never listed here. Every
 * slot's GUID is known (from its number), so that GIDs of other hosts'
 * ports are too.
 */
/* SOFTVERBS_FIRST_DEVICE: a slot number, or HOST=SLOT,... picked by this
 * host's name (gethostname: the hosts of one machine differ by their UTS
 * namespaces), so that one environment serves every host of a job */
static int sv_devices_first(void)
{
    const char *s = getenv(SOFTVERBS_ENV_FIRST_DEVICE);
    char host[256], *end;
    const char *p, *eq;
    size_t len;
    long slot;

    if ((s == NULL) || (strchr(s, '=') == NULL)) {
        return (int)sv_env_uint(SOFTVERBS_ENV_FIRST_DEVICE, 0,
                                SV_MAX_DEVS - 1, 0, 0);
    }
    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    for (p = s; *p != '\0'; p = (*end == ',') ? end + 1 : end) {
        eq = strchr(p, '=');
        if (eq == NULL) {
            break;
        }
        len  = (size_t)(eq - p);
        slot = strtol(eq + 1, &end, 10);
        if ((end == eq + 1) || ((*end != ',') && (*end != '\0')) ||
            (slot < 0) || (slot >= SV_MAX_DEVS)) {
            break;
        }
        if ((len == strlen(host)) && !strncmp(p, host, len)) {
            return (int)slot;
        }
        if (*end == '\0') {
            sv_env_bad(SOFTVERBS_ENV_FIRST_DEVICE, s,
                       "a slot for this host's name", "0");
            return 0;
        }
    }
    sv_env_bad(SOFTVERBS_ENV_FIRST_DEVICE, s,
               "a slot 0..7 or HOST=SLOT,... entries", "0");
    return 0;
}

static void sv_devices_init(void)
{
    int first = sv_devices_first();
    int n     = (int)sv_env_uint(SOFTVERBS_ENV_NUM_DEVICES, 0,
                                 SV_MAX_DEVS - first, 1, 0);
    char sysfs[256];
    int i;

    sv_g.num_ports = (int)sv_env_uint(SOFTVERBS_ENV_NUM_PORTS, 1, SV_MAX_PORTS,
                                      1, 0);
    sv_gid_init(sv_g.num_ports);
    /* the devices' sysfs directories, as libibverbs names them under
     * ibv_get_sysfs_path(): softverbs' tree (sv_misc.c) */
    sv_g.first_dev = first;
    sv_sysfs_root(sysfs, sizeof(sysfs), n, sv_g.num_ports);
    for (i = 0; i < SV_MAX_DEVS; i++) {
        struct sv_device *d = &sv_devs[i];
        int local           = i - first;

        memset(d, 0, sizeof(*d));
        d->index                = i;
        d->guid                 = 0x0002c90300a00000ull + i + 1;
        d->ibdev.node_type      = IBV_NODE_CA;
        d->ibdev.transport_type = IBV_TRANSPORT_IB;
        if ((local < 0) || (local >= n)) {
            continue; /* another host's slot, or none */
        }
        snprintf(d->ibdev.name, sizeof(d->ibdev.name), "softverbs%d", local);
        snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d",
                 local);
        snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
                 "%.200s/class/infiniband_verbs/uverbs%d", sysfs, local);
        snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
                 "%.200s/class/infiniband/softverbs%d", sysfs, local);
        sv_dev_list[local] = &d->ibdev;
    }
    sv_dev_list[n] = NULL;
    sv_g.num_devs  = n;
    sv_gid_publish();
}

/* Runs when libibverbs.so.1 is loaded, before any verbs or stats call can
 * attach the registry: the registry calls back through this hook, and so
 * depends on no device code */
static void __attribute__((constructor)) sv_devices_register(void)
{
    sv_shm_set_init_hook(sv_devices_init);
}

struct sv_device *sv_device_by_lid(uint16_t lid)
{
    int slot;

    if ((lid == 0) || (lid > SV_MAX_DEVS * sv_g.num_ports)) {
        return NULL;
    }
    slot = (lid - 1) / sv_g.num_ports;
    /* a slot some process of the registry owns (this host's or another's,
     * ibv_get_device_list); relaxed: set once, before any QP of it */
    if (!(__atomic_load_n(&sv_g.shm->devs_present, __ATOMIC_RELAXED) &
          (1u << slot))) {
        return NULL;
    }
    return &sv_devs[slot];
}

uint16_t sv_port_lid(int index, uint8_t port)
{
    return (uint16_t)(index * sv_g.num_ports + port);
}

uint8_t sv_lid_port(uint16_t lid)
{
    return (uint8_t)((lid - 1) % sv_g.num_ports + 1);
}

int sv_port_valid(uint8_t port)
{
    return (port >= 1) && (port <= sv_g.num_ports);
}

uint64_t sv_device_guid(int index)
{
    return sv_devs[index].guid;
}

/* Apply SOFTVERBS_CAP_POLICY to a requested capability: fail (the
 * default, EINVAL as mlx5) or clamp (lowered to the limit, written back) */
int sv_cap_check(uint32_t *val, uint32_t max)
{
    if (*val <= max) {
        return 0;
    }
    if (sv_g.cap_fail) {
        return EINVAL;
    }
    *val = max;
    return 0;
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    int ret;

    ret = sv_shm_init();
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* this host's slots exist from now on (sv_device_by_lid of any host);
     * relaxed: a flag, read before any packet to them */
    __atomic_fetch_or(&sv_g.shm->devs_present,
                      ((1u << sv_g.num_devs) - 1) << sv_g.first_dev,
                      __ATOMIC_RELAXED);
    list = calloc(sv_g.num_devs + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(list, sv_dev_list, sv_g.num_devs * sizeof(*list));
    if (num_devices != NULL) {
        *num_devices = sv_g.num_devs;
    }
    return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(((struct sv_device *)device)->guid);
}

/* -1, as ibv_get_device_index(3) answers where the kernel has no device
 * indexes: no kernel RDMA netlink family knows softverbs devices, and an
 * index made UCX 1.19+ query one per device (uct_ib_device_is_smi),
 * logging an error (EPROTONOSUPPORT) in every process */
SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return -1;
}

void sv_device_attr(struct ibv_device_attr *a, struct sv_device *dev)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "16.35.1012");
    a->node_guid           = htobe64(dev->guid);
    a->sys_image_guid      = htobe64(dev->guid);
    a->max_mr_size         = ~0ull;
    a->page_size_cap       = 0xfffffffffffff000ull;
    a->vendor_id           = 0x02c9;
    a->vendor_part_id      = 4119;
    a->hw_ver              = 0;
    a->max_qp              = sv_g.max_qp;
    a->max_qp_wr           = SV_MAX_WR;
    a->device_cap_flags    = IBV_DEVICE_BAD_PKEY_CNTR |
                             IBV_DEVICE_BAD_QKEY_CNTR |
                             IBV_DEVICE_CHANGE_PHY_PORT |
                             IBV_DEVICE_PORT_ACTIVE_EVENT |
                             IBV_DEVICE_SYS_IMAGE_GUID |
                             IBV_DEVICE_RC_RNR_NAK_GEN |
                             IBV_DEVICE_SRQ_RESIZE |
                             IBV_DEVICE_N_NOTIFY_CQ |
                             /* type 1 and type 2B windows, as rxe
                              * (rxe_init_device_param: RXE_DEVICE_CAP_FLAGS;
                              * sv_mw.c) */
                             IBV_DEVICE_MEM_WINDOW |
                             IBV_DEVICE_MEM_WINDOW_TYPE_2B |
                             IBV_DEVICE_XRC; /* sv_xrc.c */
    a->max_sge             = SV_MAX_SGE;
    a->max_sge_rd          = SV_MAX_SGE;
    a->max_cq              = sv_g.max_cq;
    a->max_cqe             = sv_cq_max_cqe();
    a->max_mr              = sv_g.max_mr;
    a->max_mw              = SV_MW_TBL - 1;
    a->max_pd              = 1 << 24;
    a->max_qp_rd_atom      = SV_MAX_RD_ATOM;
    a->max_ee_rd_atom      = 0;
    a->max_res_rd_atom     = SV_MAX_RD_ATOM * sv_g.max_qp;
    a->max_qp_init_rd_atom = SV_MAX_RD_ATOM;
    a->atomic_cap          = IBV_ATOMIC_HCA;
    a->max_mcast_grp       = SV_MCAST_TBL;
    a->max_mcast_qp_attach = SV_MCAST_QPS;
    a->max_total_mcast_qp_attach = SV_MCAST_TBL * SV_MCAST_QPS;
    a->max_ah              = 1 << 24;
    a->max_srq             = sv_g.max_srq;
    a->max_srq_wr          = SV_MAX_WR - 1;
    a->max_srq_sge         = SV_MAX_SGE;
    a->max_pkeys           = 1;
    a->local_ca_ack_delay  = 16;
    a->phys_port_cnt       = sv_g.num_ports;
}

static int sv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
    sv_device_attr(a, sv_ctx(ctx)->dev);
    return 0;
}

static int sv_query_device_ex(struct ibv_context *ctx,
                              const struct ibv_query_device_ex_input *input,
                              struct ibv_device_attr_ex *attr, size_t size)
{
    struct ibv_device_attr_ex a;

    if (size < sizeof(struct ibv_device_attr)) {
        return EINVAL;
    }
    /* Every field of struct ibv_device_attr_ex is either something the
     * device honours, or 0 with its capability flag clear (man
     * ibv_query_device_ex: a field of 0 means the feature is absent) */
    memset(&a, 0, sizeof(a));
    sv_device_attr(&a.orig_attr, sv_ctx(ctx)->dev);
    a.comp_mask                  = 0;
    /* ibv_query_device's flags (windows, XRC), no 64-bit-only ones */
    a.device_cap_flags_ex        = a.orig_attr.device_cap_flags;
    /* On-demand paging: softverbs pins nothing and reaches a peer's memory
     * with process_vm_*v, which faults pages in, so every MR behaves as an
     * ODP one; an implicit ODP MR (ibv_reg_mr(pd, NULL, SIZE_MAX,
     * IBV_ACCESS_ON_DEMAND)) covers the whole address space. Every
     * operation of each transport is honoured (XRC: RC's but RECV) */
    a.odp_caps.general_caps      = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    a.odp_caps.per_transport_caps.rc_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
        IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
        IBV_ODP_SUPPORT_SRQ_RECV;
    a.odp_caps.per_transport_caps.uc_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
        IBV_ODP_SUPPORT_SRQ_RECV;
    a.odp_caps.per_transport_caps.ud_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
        IBV_ODP_SUPPORT_SRQ_RECV;
    a.xrc_odp_caps = a.odp_caps.per_transport_caps.rc_odp_caps &
                     ~IBV_ODP_SUPPORT_RECV;
    /* The clock is CLOCK_MONOTONIC in nanoseconds: a 1 GHz device clock
     * (hca_core_clock is in kHz), with mlx5's 63-bit timestamp mask (the
     * kernel's mlx5_ib_query_device); ibv_create_cq_ex takes
     * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP(_WALLCLOCK) */
    a.completion_timestamp_mask  = SV_TS_MASK;
    a.hca_core_clock             = SV_CLOCK_KHZ;
    /* no raw packet QPs, WQs, RSS, TSO, rate limiting, tag matching, CQ
     * moderation (ibv_modify_cq), PCI atomics */
    memset(&a.tso_caps, 0, sizeof(a.tso_caps));
    memset(&a.rss_caps, 0, sizeof(a.rss_caps));
    a.max_wq_type_rq             = 0;
    memset(&a.packet_pacing_caps, 0, sizeof(a.packet_pacing_caps));
    a.raw_packet_caps            = 0;
    memset(&a.tm_caps, 0, sizeof(a.tm_caps));
    memset(&a.cq_mod_caps, 0, sizeof(a.cq_mod_caps));
    /* device memory: an arena per device and process (sv_dm.c) */
    a.max_dm_size                = SV_MAX_DM;
    memset(&a.pci_atomic_caps, 0, sizeof(a.pci_atomic_caps));
    /* libibverbs fills phys_port_cnt_ex from the kernel's port count and
     * falls back to phys_port_cnt (rdma-core libibverbs/cmd_device.c,
     * ibv_cmd_query_device_any): both always agree */
    a.phys_port_cnt_ex           = a.orig_attr.phys_port_cnt;
    memcpy(attr, &a, (size < sizeof(a)) ? size : sizeof(a));
    return 0;
}

/* ibv_query_rt_values_ex(3): the device clock, as mlx5_query_rt_values
 * gives it (cycles in raw_clock.tv_nsec, tv_sec 0); another comp_mask bit
 * is EINVAL */
static int sv_query_rt_values(struct ibv_context *ctx,
                              struct ibv_values_ex *values)
{
    if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK) {
        return EINVAL;
    }
    if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
        values->raw_clock.tv_sec  = 0;
        values->raw_clock.tv_nsec = sv_now_ns() & SV_TS_MASK;
    }
    return 0;
}

SV_EXPORT int ibv_query_device(struct ibv_context *ctx,
                               struct ibv_device_attr *attr)
{
    return sv_query_device(ctx, attr);
}

static void sv_port_attr(struct ibv_port_attr *p, struct sv_device *dev,
                         uint8_t port)
{
    memset(p, 0, sizeof(*p));
    p->state           = IBV_PORT_ACTIVE;
    p->max_mtu         = IBV_MTU_4096;
    p->active_mtu      = sv_gid_active_mtu(port);
    p->gid_tbl_len     = sv_gid_tbl_len(port);
    p->port_cap_flags  = IBV_PORT_SM | IBV_PORT_TRAP_SUP |
                         IBV_PORT_SYS_IMAGE_GUID_SUP |
                         IBV_PORT_CM_SUP;
    p->max_msg_sz      = SV_MAX_MSG;
    p->bad_pkey_cntr   = 0;
    p->qkey_viol_cntr  = 0;
    p->pkey_tbl_len    = 1;
    p->lid             = sv_port_lid(dev->index, port);
    p->sm_lid          = 1;
    p->lmc             = 0;
    p->max_vl_num      = 1;
    p->sm_sl           = 0;
    p->subnet_timeout  = 18;
    p->init_type_reply = 0;
    p->active_width    = 2;   /* 4X */
    p->active_speed    = 32;  /* EDR, 25 Gb/s per lane */
    p->phys_state      = 5;   /* LinkUp */
    p->link_layer      = IBV_LINK_LAYER_INFINIBAND;
    p->flags           = 0;
    p->port_cap_flags2 = 0;
    if (!sv_port_is_up(dev->index, port)) {
        /* taken down (sv_port.c): DOWN, the link Disabled */
        p->state      = IBV_PORT_DOWN;
        p->phys_state = 3;
    }
    if (sv_port_is_eth(port)) {
        /* RoCE: no subnet manager, no LIDs; GIDs from IP addresses (rxe's
         * RXE_PORT_PORT_CAP_FLAGS, IB_PORT_IP_BASED_GIDS as mlx5_ib sets
         * for Ethernet ports) */
        p->link_layer     = IBV_LINK_LAYER_ETHERNET;
        p->lid            = 0;
        p->sm_lid         = 0;
        p->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
    }
}

static int sv_query_port(struct ibv_context *ctx, uint8_t port,
                         struct ibv_port_attr *attr, size_t len)
{
    struct ibv_port_attr p;

    if (!sv_port_valid(port)) {
        return EINVAL;
    }
    sv_port_attr(&p, sv_ctx(ctx)->dev, port);
    memcpy(attr, &p, (len < sizeof(p)) ? len : sizeof(p));
    return 0;
}

SV_EXPORT int (ibv_query_port)(struct ibv_context *ctx, uint8_t port,
                               struct _compat_ibv_port_attr *attr)
{
    /* old binaries pass the struct without the trailing new fields */
    return sv_query_port(ctx, port, (struct ibv_port_attr *)attr,
                         offsetof(struct ibv_port_attr, link_layer) + 1);
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
                             __be16 *pkey)
{
    if (!sv_port_valid(port) || (index != 0)) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port,
                                 __be16 pkey)
{
    if (sv_port_valid(port) && ((be16toh(pkey) & 0x7fff) == 0x7fff)) {
        return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------------
 * Contexts
 * ------------------------------------------------------------------- */
struct ibv_srq *sv_create_srq_ex(struct ibv_context *ctx,
                                 struct ibv_srq_init_attr_ex *attr);

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct sv_device *dev = (struct sv_device *)device;
    struct sv_context *ctx;
    struct verbs_context *v;
    pthread_mutexattr_t ma;
    int err;

    if (sv_shm_init() != 0) {
        errno = ENODEV;
        return NULL;
    }
    if ((dev < sv_devs + sv_g.first_dev) ||
        (dev >= sv_devs + sv_g.first_dev + sv_g.num_devs)) {
        errno = ENODEV;
        return NULL;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ctx->dev = dev;

    v = &ctx->vctx;
    v->context.device     = device;
    v->context.async_fd   = sv_ev_open('a', &ctx->ctx_id);
    if (v->context.async_fd < 0) {
        goto err_free;
    }
    v->context.cmd_fd     = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (v->context.cmd_fd < 0) {
        sv_error("open(/dev/null) failed: %m");
        goto err_close_async;
    }
    v->context.num_comp_vectors = 1;
    v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&v->context.mutex, NULL);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ctx->lock, &ma);
    pthread_mutexattr_destroy(&ma);

    v->context.ops._compat_query_device = sv_query_device;
    v->context.ops.poll_cq       = sv_poll_cq;
    v->context.ops.req_notify_cq = sv_req_notify_cq;
    v->context.ops.post_send     = sv_post_send;
    v->context.ops.post_recv     = sv_post_recv;
    v->context.ops.post_srq_recv = sv_post_srq_recv;
    v->sz              = sizeof(*v);
    v->query_port      = sv_query_port;
    v->query_device_ex = sv_query_device_ex;
    v->create_qp_ex    = sv_create_qp_ex;
    v->create_cq_ex    = sv_create_cq_ex;
    v->create_srq_ex   = sv_create_srq_ex;
    v->get_srq_num     = sv_get_srq_num;
    v->query_rt_values = sv_query_rt_values;
    sv_obj_init_ops(v);
    sv_pd_init_ops(v);
    sv_mw_init_ops(v);
    sv_xrc_init_ops(v);
    return &v->context;

err_close_async:
    err = errno;
    close(v->context.async_fd);
    errno = err;
err_free:
    free(ctx);
    return NULL;
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct sv_context *ctx = sv_ctx(context);

    close(context->async_fd);
    sv_ev_close('a', ctx->ctx_id);
    close(context->cmd_fd);
    free(ctx);
    return 0;
}

/* ---------------------------------------------------------------------
 * Strings and rates
 * ------------------------------------------------------------------- */
SV_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
    static const char *const s[] = {
        [IBV_NODE_CA] = "InfiniBand channel adapter",
        [IBV_NODE_SWITCH] = "InfiniBand switch",
        [IBV_NODE_ROUTER] = "InfiniBand router",
        [IBV_NODE_RNIC] = "iWARP NIC",
        [IBV_NODE_USNIC] = "usNIC",
        [IBV_NODE_USNIC_UDP] = "usNIC UDP",
        [IBV_NODE_UNSPECIFIED] = "unspecified",
    };

    if (((unsigned)t >= sizeof(s) / sizeof(s[0])) || (s[t] == NULL)) {
        return "unknown";
    }
    return s[t];
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state st)
{
    static const char *const s[] = {
        "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
        "PORT_ACTIVE", "PORT_ACTIVE_DEFER",
    };

    return ((unsigned)st < 6) ? s[st] : "unknown";
}

SV_EXPORT const char *ibv_event_type_str(enum ibv_event_type ev)
{
    static const char *const s[] = {
        "CQ error", "local work queue catastrophic error",
        "invalid request local work queue error",
        "local access violation work queue error",
        "communication established", "send queue drained",
        "path migrated", "path migration request error",
        "local catastrophic error", "port active", "port error",
        "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
        "SRQ limit reached", "last WQE reached", "client reregistration",
        "GID table change", "WQ fatal",
    };

    return ((unsigned)ev < sizeof(s) / sizeof(s[0])) ? s[ev] : "unknown";
}

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status st)
{
    static const char *const s[] = {
        "success", "local length error", "local QP operation error",
        "local EE context operation error", "local protection error",
        "Work Request Flushed Error", "memory management operation error",
        "bad response error", "local access error",
        "remote invalid request error", "remote access error",
        "remote operation error", "transport retry counter exceeded",
        "RNR retry counter exceeded", "local RDD violation error",
        "remote invalid RD request", "aborted error",
        "invalid EE context number", "invalid EE context state",
        "fatal error", "response timeout error", "general error",
        "TM error", "TM rendezvous error",
    };

    return ((unsigned)st < sizeof(s) / sizeof(s[0])) ? s[st] : "unknown";
}

static const int sv_rate_mult[] = {
    [IBV_RATE_2_5_GBPS] = 1, [IBV_RATE_5_GBPS] = 2, [IBV_RATE_10_GBPS] = 4,
    [IBV_RATE_20_GBPS] = 8, [IBV_RATE_30_GBPS] = 12, [IBV_RATE_40_GBPS] = 16,
    [IBV_RATE_60_GBPS] = 24, [IBV_RATE_80_GBPS] = 32,
    [IBV_RATE_120_GBPS] = 48,
};

SV_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    return ((unsigned)rate < sizeof(sv_rate_mult) / sizeof(int)) ?
           sv_rate_mult[rate] : 0;
}

SV_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    unsigned i;

    for (i = 1; i < sizeof(sv_rate_mult) / sizeof(int); i++) {
        if (sv_rate_mult[i] == mult) {
            return i;
        }
    }
    return IBV_RATE_MAX;
}

static const struct { enum ibv_rate rate; int mbps; } sv_rate_mbps[] = {
    {IBV_RATE_2_5_GBPS, 2500}, {IBV_RATE_5_GBPS, 5000},
    {IBV_RATE_10_GBPS, 10000}, {IBV_RATE_20_GBPS, 20000},
    {IBV_RATE_30_GBPS, 30000}, {IBV_RATE_40_GBPS, 40000},
    {IBV_RATE_60_GBPS, 60000}, {IBV_RATE_80_GBPS, 80000},
    {IBV_RATE_120_GBPS, 120000}, {IBV_RATE_14_GBPS, 14062},
    {IBV_RATE_56_GBPS, 56250}, {IBV_RATE_112_GBPS, 112500},
    {IBV_RATE_168_GBPS, 168750}, {IBV_RATE_25_GBPS, 25781},
    {IBV_RATE_100_GBPS, 103125}, {IBV_RATE_200_GBPS, 206250},
    {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_28_GBPS, 28125},
    {IBV_RATE_50_GBPS, 53125}, {IBV_RATE_400_GBPS, 425000},
    {IBV_RATE_600_GBPS, 637500},
};

SV_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < sizeof(sv_rate_mbps) / sizeof(sv_rate_mbps[0]); i++) {
        if (sv_rate_mbps[i].rate == rate) {
            return sv_rate_mbps[i].mbps;
        }
    }
    return 0;
}

SV_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    unsigned i;

    for (i = 0; i < sizeof(sv_rate_mbps) / sizeof(sv_rate_mbps[0]); i++) {
        if (sv_rate_mbps[i].mbps == mbps) {
            return sv_rate_mbps[i].rate;
        }
    }
    return IBV_RATE_MAX;
}
