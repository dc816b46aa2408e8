/*
 * softverbs mlx5 Dynamically Connected QPs (mlx5dv_create_qp(3) with
 * MLX5DV_QP_INIT_ATTR_MASK_DC): DC initiators (DCI) and DC targets (DCT).
 *
 * A DCI is a reliable requester (as RC: acknowledged, retried, RDMA read and
 * atomics) whose destination is given per WR by mlx5dv_wr_set_dc_addr(): an
 * address handle, the DCT number and the DCT's access key. A DCT is a
 * responder only, always on an SRQ, reached by any DCI that carries its key;
 * it never sends, so it goes no further than RTR.
 *
 * The entry points are libmlx5's (sv_mlx5.c), which calls the
 * softverbs_dv_* functions here through libibverbs' private version node
 * SOFTVERBS_PRIVATE_1.0, as rdma-core's providers call libibverbs through
 * IBVERBS_PRIVATE_34 (sv_provider.h).
 *
 * Applications see both as IBV_QPT_DRIVER QPs; the registry keeps them as
 * SV_QPT_DCI / SV_QPT_DCT, which the requester (sv_req.c) and the responder
 * (sv_resp.c) tell apart from RC.
 */
#include "sv.h"
#include "sv_provider.h"

#include <stdlib.h>
#include <string.h>

/* The comp_mask bits of struct mlx5dv_qp_init_attr rdma-core 44 knows
 * (providers/mlx5/mlx5dv.h, enum mlx5dv_qp_init_attr_mask) */
#define SV_DC_DV_COMP_MASK  (MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS | \
                             MLX5DV_QP_INIT_ATTR_MASK_DC | \
                             MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS | \
                             MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)

/* The ibv_wr_* operations of a DCI: those of RC (rdma-core
 * providers/mlx5/qp.c, MLX5_SUPPORTED_SEND_OPS_FLAGS_DCI, less what
 * softverbs lacks: memory windows, invalidation) */
#define SV_DC_SEND_OPS      (IBV_QP_EX_WITH_SEND | \
                             IBV_QP_EX_WITH_SEND_WITH_IMM | \
                             IBV_QP_EX_WITH_RDMA_WRITE | \
                             IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
                             IBV_QP_EX_WITH_RDMA_READ | \
                             IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
                             IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* ---------------------------------------------------------------------
 * State transitions (the kernel's mlx5_ib_modify_qp: a DCI is checked by
 * modify_dci_qp_is_ok, not the IBA table; a DCT by mlx5_ib_modify_dct).
 * Required bits must be set, others outside required + optional: EINVAL.
 * ------------------------------------------------------------------- */
static int sv_dc_mask_ok(int mask, int req, int opt)
{
    return ((mask & req) == req) && !(mask & ~(req | opt | IBV_QP_STATE));
}

int sv_dc_modify_check(struct sv_qp *qp, enum ibv_qp_state cur,
                       enum ibv_qp_state next, int mask)
{
    if (!(mask & IBV_QP_STATE)) {
        return EINVAL; /* both take a state change only */
    }
    if (qp->sv_type == SV_QPT_DCT) {
        /* RESET->INIT and INIT->RTR, each with exactly its attributes; no
         * way back (RESET, ERR) while it exists */
        if ((cur == IBV_QPS_RESET) && (next == IBV_QPS_INIT)) {
            return (mask == (IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
                             IBV_QP_PKEY_INDEX | IBV_QP_PORT)) ? 0 : EINVAL;
        }
        if ((cur == IBV_QPS_INIT) && (next == IBV_QPS_RTR)) {
            return (mask == (IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                             IBV_QP_AV | IBV_QP_PATH_MTU)) ? 0 : EINVAL;
        }
        return EINVAL;
    }
    if (next == IBV_QPS_RESET) {
        return (mask == IBV_QP_STATE) ? 0 : EINVAL;
    }
    if (next == IBV_QPS_ERR) {
        return ((cur != IBV_QPS_RESET) && (mask == IBV_QP_STATE)) ? 0 : EINVAL;
    }
    switch ((cur << 4) | next) {
    case (IBV_QPS_RESET << 4) | IBV_QPS_INIT:
        return sv_dc_mask_ok(mask, IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0) ?
               0 : EINVAL;
    case (IBV_QPS_INIT << 4) | IBV_QPS_INIT:
        return sv_dc_mask_ok(mask, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT) ?
               0 : EINVAL;
    case (IBV_QPS_INIT << 4) | IBV_QPS_RTR:
        return sv_dc_mask_ok(mask, IBV_QP_PATH_MTU,
                             IBV_QP_PKEY_INDEX | IBV_QP_AV) ? 0 : EINVAL;
    case (IBV_QPS_RTR << 4) | IBV_QPS_RTS:
        return sv_dc_mask_ok(mask, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                                   IBV_QP_SQ_PSN,
                             IBV_QP_MIN_RNR_TIMER) ? 0 : EINVAL;
    case (IBV_QPS_RTS << 4) | IBV_QPS_RTS:
        return sv_dc_mask_ok(mask, 0, IBV_QP_MIN_RNR_TIMER) ? 0 : EINVAL;
    default:
        return EINVAL; /* no SQD or SQE for a DCI */
    }
}

/* ---------------------------------------------------------------------
 * Creation (rdma-core providers/mlx5/verbs.c create_qp / create_dct, the
 * kernel's check_qp_attr and process_vendor_flags)
 * ------------------------------------------------------------------- */
#define SV_DC_CREATE_FLAGS  (MLX5DV_QP_CREATE_TUNNEL_OFFLOADS | \
                             MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC | \
                             MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC | \
                             MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE | \
                             MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE | \
                             MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE | \
                             MLX5DV_QP_CREATE_SIG_PIPELINING)

/*
 * The create flags of mlx5dv_qp_init_attr for a QP of type t (an
 * ibv_qp_type or SV_QPT_DC*): 0 or the errno.
 * - A bit outside the seven flags, or both scatter-to-CQE flags: EINVAL
 *   (create_qp).
 * - SIG_PIPELINING: EOPNOTSUPP, softverbs has no signature offload.
 * - Tunnel offloads and the TIR self-loopback flags belong to raw packet
 *   QPs, packet-based credit mode to RC on a device with that capability,
 *   which softverbs does not report (MLX5DV_CONTEXT_FLAGS_
 *   PACKET_BASED_CREDIT_MODE): EINVAL, the kernel's answer to a flag left
 *   over by process_vendor_flags.
 * - The scatter-to-CQE flags are hints: accepted (a DCT takes only
 *   DISABLE_SCATTER_TO_CQE, create_dct).
 */
static int sv_dc_create_flags_check(uint32_t flags, uint8_t t)
{
    if ((flags & ~SV_DC_CREATE_FLAGS) ||
        ((flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) &&
         (flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE))) {
        return EINVAL;
    }
    if (flags & MLX5DV_QP_CREATE_SIG_PIPELINING) {
        return EOPNOTSUPP;
    }
    if (flags & (MLX5DV_QP_CREATE_TUNNEL_OFFLOADS |
                 MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC |
                 MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC |
                 MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE)) {
        return EINVAL;
    }
    if ((t == SV_QPT_DCT) && (flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE)) {
        return EINVAL;
    }
    return 0;
}

/* DCT: comp_mask PD only (create_dct: send ops or create flags of ibverbs
 * are EINVAL), DV attributes DC and create flags only, an SRQ and a receive
 * CQ (the kernel's check_qp_attr). Send caps are neither checked nor used:
 * they are given back as requested, as the kernel leaves them */
static int sv_dc_dct_check(const struct ibv_qp_init_attr_ex *attr,
                           const struct mlx5dv_qp_init_attr *dv)
{
    if ((attr->comp_mask != IBV_QP_INIT_ATTR_PD) ||
        (dv->comp_mask & ~(MLX5DV_QP_INIT_ATTR_MASK_DC |
                           MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS)) ||
        (attr->srq == NULL) || (attr->recv_cq == NULL)) {
        return EINVAL;
    }
    return 0;
}

/* DCI: no receive queue (max_recv_* non-zero: EINVAL, check_qp_attr), both
 * CQs (libibverbs dereferences them), send operations within the RC set
 * softverbs runs (more: EOPNOTSUPP, mlx5_qp_fill_wr_pfns), no mlx5 send
 * operations (softverbs has neither RAW_WQE nor MEMCPY: EOPNOTSUPP), and
 * no DCI streams beyond the 0/0 that mlx5dv_query_device reports (EINVAL) */
static int sv_dc_dci_check(const struct ibv_qp_init_attr_ex *attr,
                           const struct mlx5dv_qp_init_attr *dv)
{
    if ((attr->cap.max_recv_wr != 0) || (attr->cap.max_recv_sge != 0) ||
        (attr->send_cq == NULL) || (attr->recv_cq == NULL)) {
        return EINVAL;
    }
    if (attr->comp_mask & ~((IBV_QP_INIT_ATTR_SEND_OPS_FLAGS << 1) - 1)) {
        return EINVAL;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
        (attr->create_flags != 0)) {
        return EINVAL; /* no ibverbs create flag applies to a DCI */
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (attr->send_ops_flags & ~SV_DC_SEND_OPS)) {
        return EOPNOTSUPP;
    }
    if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) &&
        (dv->send_ops_flags != 0)) {
        return EOPNOTSUPP;
    }
    if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) &&
        ((dv->dc_init_attr.dci_streams.log_num_concurent > 0) ||
         (dv->dc_init_attr.dci_streams.log_num_errored > 0))) {
        return EINVAL;
    }
    return 0;
}

/* mlx5dv_create_qp without DC: an RC/UC/UD QP with mlx5 attributes.
 * IBV_QPT_DRIVER needs the DC attributes (EINVAL); DCI streams belong to a
 * DCI (EINVAL); mlx5 send operations: softverbs has none (EOPNOTSUPP) */
static int sv_dc_plain_check(const struct ibv_qp_init_attr_ex *attr,
                             const struct mlx5dv_qp_init_attr *dv)
{
    if (attr->qp_type == IBV_QPT_DRIVER) {
        return EINVAL;
    }
    if (dv == NULL) {
        return 0;
    }
    if (dv->comp_mask & ~SV_DC_DV_COMP_MASK) {
        return EINVAL;
    }
    if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) {
        return EINVAL;
    }
    if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) &&
        (dv->send_ops_flags != 0)) {
        return EOPNOTSUPP;
    }
    if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) {
        return sv_dc_create_flags_check(dv->create_flags, attr->qp_type);
    }
    return 0;
}

/* A DCI or DCT of checked attributes */
static struct ibv_qp *sv_dc_create(struct ibv_context *context,
                                   struct ibv_qp_init_attr_ex *attr,
                                   const struct mlx5dv_qp_init_attr *dv,
                                   uint8_t type)
{
    struct ibv_qp_init_attr_ex a = *attr;
    struct ibv_qp *ibqp;
    struct sv_qp *qp;

    if (type == SV_QPT_DCT) {
        /* a DCT never sends: the smallest send queue, caps unchanged */
        memset(&a.cap, 0, sizeof(a.cap));
    }
    ibqp = sv_qp_create(context, &a, type);
    if (ibqp == NULL) {
        return NULL;
    }
    qp = sv_qp(ibqp);
    if (type == SV_QPT_DCT) {
        /* seen by requesters once the DCT is in RTR (state release) */
        qp->shm->dc_key = dv->dc_init_attr.dct_access_key;
        qp->cap = attr->cap;
    } else {
        attr->cap = a.cap; /* granted, max_recv_* 0 */
    }
    return ibqp;
}

SV_EXPORT struct ibv_qp *
softverbs_dv_create_qp(struct ibv_context *context,
                       struct ibv_qp_init_attr_ex *attr,
                       struct mlx5dv_qp_init_attr *dv)
{
    uint32_t flags = 0;
    uint8_t type;
    int err;

    if ((context == NULL) || (attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if ((dv == NULL) || !(dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC)) {
        err = sv_dc_plain_check(attr, dv);
        if (err != 0) {
            errno = err;
            return NULL;
        }
        /* the caps as asked, as libmlx5 grants them: the mlx5
         * personality's engine posts a WQE's data segments into send slots
         * that hold more (sq_sge, sv_qp_create) */
        return sv_create_qp_ex(context, attr);
    }
    /* SOFTVERBS_DC=0: a device without DC, as an mlx5 HCA whose firmware
     * does not offer it (mlx5dv_create_qp: EOPNOTSUPP) */
    if (!sv_g.dc) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((dv->comp_mask & ~SV_DC_DV_COMP_MASK) ||
        (attr->qp_type != IBV_QPT_DRIVER) ||
        !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->pd == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    switch (dv->dc_init_attr.dc_type) {
    case MLX5DV_DCTYPE_DCT:
        type = SV_QPT_DCT;
        err  = sv_dc_dct_check(attr, dv);
        break;
    case MLX5DV_DCTYPE_DCI:
        type = SV_QPT_DCI;
        err  = sv_dc_dci_check(attr, dv);
        break;
    default:
        errno = EINVAL;
        return NULL;
    }
    if ((err == 0) &&
        (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS)) {
        flags = dv->create_flags;
        err   = sv_dc_create_flags_check(flags, type);
    }
    if (err == 0) {
        err = sv_qp_srq_check(attr);
    }
    if (err != 0) {
        errno = err;
        return NULL;
    }
    return sv_dc_create(context, attr, dv, type);
}

/* A container_of in rdma-core (providers/mlx5/verbs.c), with no checks; a
 * NULL QP (ibv_qp_to_qp_ex of a QP without send operations, such as a DCT)
 * gives NULL here rather than an address below it */
SV_EXPORT struct mlx5dv_qp_ex *
softverbs_dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *q)
{
    return (q == NULL) ? NULL : &sv_container_of(q, struct sv_qp, qpx)->dv;
}

/*
 * mlx5dv_query_device(3): a ConnectX-5's answer, less what softverbs lacks.
 * Flags: CQE version 1 (every CQE of a current mlx5 device). Of the
 * requested comp_mask bits, those filled are given back (as rdma-core's
 * _mlx5dv_query_device does): DC ODP caps (none: softverbs has no ODP) and
 * DCI streams (0/0: no streams, as a ConnectX-5). Nothing reports DC
 * support itself: an application learns it from mlx5dv_create_qp.
 */
SV_EXPORT int softverbs_dv_query_device(struct ibv_context *ctx,
                                        struct mlx5dv_context *attrs)
{
    uint64_t want;

    if ((ctx == NULL) || (attrs == NULL)) {
        return EINVAL;
    }
    want = attrs->comp_mask;
    attrs->version   = 0;
    attrs->flags     = MLX5DV_CONTEXT_FLAGS_CQE_V1;
    attrs->comp_mask = 0;
    if (want & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS) {
        attrs->dc_odp_caps = 0;
        attrs->comp_mask  |= MLX5DV_CONTEXT_MASK_DC_ODP_CAPS;
    }
    if (want & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
        attrs->dci_streams_caps.max_log_num_concurent = 0;
        attrs->dci_streams_caps.max_log_num_errored   = 0;
        attrs->comp_mask |= MLX5DV_CONTEXT_MASK_DCI_STREAMS;
    }
    return 0;
}
