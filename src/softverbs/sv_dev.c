/*
 * softverbs contexts (ibv_open_device, the ops table of every object),
 * device, port and P_Key queries. The device table is sv_devices.c's,
 * libibverbs' names of its enums and rates sv_names.c's.
 */
#include "sv.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

void sv_device_attr(struct ibv_device_attr *a, struct sv_device *dev)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "16.35.1012");
    a->node_guid           = htobe64(sv_device_guid(dev->index));
    a->sys_image_guid      = htobe64(sv_device_guid(dev->index));
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
    if (!sv_device_is_listed(dev)) {
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
    sv_dm_init_ops(v);
    sv_pd_init_ops(v);
    sv_mw_init_ops(v);
    sv_xrc_init_ops(v);
    sv_xrc_qp_init_ops(v);
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
