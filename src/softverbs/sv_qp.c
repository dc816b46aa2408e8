/*
 * softverbs queue pairs: creation, the modify state machine, queries,
 * multicast attachment.
 *
 * The QP layer keeps transport-specific decisions in sv_req/sv_resp, so
 * that further QP types (e.g. mlx5 DC initiators/targets created through
 * mlx5dv_create_qp) can be added as new qp_type values there.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------
 * Attribute masks per transition (IBA spec 11.2.5.2, table "QP state
 * transition properties"; man ibv_modify_qp)
 * ------------------------------------------------------------------- */
struct sv_qp_trans {
    int valid;
    int req[3];                   /* RC, UC, UD */
    int opt[3];
};

#define SV_ALL3(x) { (x), (x), (x) }

static const struct sv_qp_trans sv_qp_table[7][7] = {
    [IBV_QPS_RESET] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_INIT]  = {
            .valid = 1,
            .req = {
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_INIT] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_INIT]  = {
            .valid = 1,
            .opt = {
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_RTR] = {
            .valid = 1,
            .req = {
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER,
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN,
                0,
            },
            .opt = {
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
                IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_RTR] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .req = {
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_SQ_PSN,
                IBV_QP_SQ_PSN,
            },
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_RTS] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_SQD]   = {
            .valid = 1,
            .opt = SV_ALL3(IBV_QP_EN_SQD_ASYNC_NOTIFY),
        },
    },
    [IBV_QPS_SQD] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PATH_MIG_STATE,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
        [IBV_QPS_SQD]   = {
            .valid = 1,
            .opt = {
                IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
                IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
                IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
                IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_SQE] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
        [IBV_QPS_RTS]   = {
            .valid = 1,
            .opt = {
                0,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
                IBV_QP_CUR_STATE | IBV_QP_QKEY,
            },
        },
    },
    [IBV_QPS_ERR] = {
        [IBV_QPS_RESET] = { .valid = 1 },
        [IBV_QPS_ERR]   = { .valid = 1 },
    },
};

static int sv_qp_type_idx(uint8_t t)
{
    return (t == IBV_QPT_RC) ? 0 : (t == IBV_QPT_UC) ? 1 : 2;
}

/* ---------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------- */
static void sv_qp_free_shm(struct sv_qp *qp)
{
    sv_shm_lock();
    /* release: requesters that still see in_use find a complete entry */
    __atomic_store_n(&qp->shm->in_use, 0, __ATOMIC_RELEASE);
    sv_shm_free(qp->shm->rq_off, qp->shm->rq_len);
    sv_g.shm->num_qp--;
    sv_shm_unlock();
}

/* The send operations softverbs executes per QP type through ibv_wr_*:
 * those of a ConnectX device (rdma-core providers/mlx5/qp.c,
 * MLX5_SUPPORTED_SEND_OPS_FLAGS_RC/_UC/_UD; rxe's check_qp_init_attr in
 * providers/rxe/rxe.c has the same per-type sets) less TSO, which softverbs
 * does not have: memory windows and invalidation on RC and UC (sv_mw.c) */
static uint64_t sv_qp_send_ops(enum ibv_qp_type type)
{
    uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

    if (type == IBV_QPT_UD) {
        return ops;
    }
    ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
           IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_LOCAL_INV |
           IBV_QP_EX_WITH_BIND_MW;
    if (type == IBV_QPT_UC) {
        return ops;
    }
    return ops | IBV_QP_EX_WITH_RDMA_READ |
           IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
           IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
}

/* The comp_mask attributes of ibv_create_qp_ex (RC/UC/UD): 0 or the errno.
 * - A bit libibverbs does not define: EINVAL, as libibverbs' own check
 *   (ibv_cmd_create_qp_ex2 in rdma-core libibverbs/cmd_qp.c; mlx5
 *   create_qp returns NULL before it without setting errno).
 * - XRCD, IND_TABLE, RX_HASH: EOPNOTSUPP, the device has no XRC or RSS
 *   (rxe refuses the comp_mask bits it lacks with EOPNOTSUPP,
 *   check_qp_init_attr in rdma-core providers/rxe/rxe.c).
 * - MAX_TSO_HEADER: EINVAL, TSO exists only on raw packet QPs (mlx5
 *   create_qp refuses it on any other type, providers/mlx5/verbs.c).
 * - CREATE_FLAGS: 0 is accepted; IBV_QP_CREATE_SOURCE_QPN on a non-UD QP
 *   is EINVAL (mlx5 create_qp); any flag otherwise EOPNOTSUPP, softverbs
 *   supports none (rxe: RXE_QP_CREATE_FLAGS_SUP 0, EOPNOTSUPP).
 * - SEND_OPS_FLAGS beyond sv_qp_send_ops(): EOPNOTSUPP (mlx5
 *   mlx5_qp_fill_wr_pfns in providers/mlx5/qp.c, rxe check_qp_init_attr) */
static int sv_qp_init_attr_check(const struct ibv_qp_init_attr_ex *attr)
{
    const uint32_t known = (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS << 1) - 1;

    if (attr->comp_mask & ~known) {
        return EINVAL;
    }
    if (attr->comp_mask & (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_IND_TABLE |
                           IBV_QP_INIT_ATTR_RX_HASH)) {
        return EOPNOTSUPP;
    }
    if (attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) {
        return EINVAL;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
        (attr->create_flags != 0)) {
        if ((attr->create_flags & IBV_QP_CREATE_SOURCE_QPN) &&
            (attr->qp_type != IBV_QPT_UD)) {
            return EINVAL;
        }
        return EOPNOTSUPP;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
        (attr->send_ops_flags & ~sv_qp_send_ops(attr->qp_type))) {
        return EOPNOTSUPP;
    }
    return 0;
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *ctx,
                               struct ibv_qp_init_attr_ex *attr)
{
    int err;

    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->pd == NULL) ||
        (attr->send_cq == NULL) || (attr->recv_cq == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if ((attr->qp_type != IBV_QPT_RC) && (attr->qp_type != IBV_QPT_UC) &&
        (attr->qp_type != IBV_QPT_UD)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    err = sv_qp_init_attr_check(attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    /* man ibv_create_qp: an SRQ is usable with RC and UD QPs only here */
    if (attr->srq && (attr->qp_type == IBV_QPT_UC)) {
        errno = EINVAL;
        return NULL;
    }
    /* An SRQ serves QPs of its own protection domain: its receive buffers
     * are registered there, and a QP of another PD receiving into them
     * would cross the PD boundary (IBA protection domains). Refused with
     * EINVAL, as an invalid attribute of the request. A parent domain is
     * the domain of the PD it contains (sv_pd.c) */
    if (attr->srq && (sv_pd(attr->srq->pd)->pd_id != sv_pd(attr->pd)->pd_id)) {
        errno = EINVAL;
        return NULL;
    }
    return sv_qp_create(ctx, attr, attr->qp_type);
}

/*
 * The inline capacity of a send WQE, as libmlx5 computes it (rdma-core
 * providers/mlx5/verbs.c): a WQE is sized from the caps asked for
 * (mlx5_calc_send_wqe) and whatever room it has beyond the largest
 * operation's segments is inline data, which mlx5_calc_sq_size writes back
 * in cap.max_inline_data (and query_qp reports):
 *   overhead  the segments of the largest send operation the QP may post
 *             (_sq_overhead): the control segment (16 bytes); with RDMA
 *             write/read a remote address segment (+16); with atomics an
 *             atomic segment too (+16 more); with memory windows or local
 *             invalidation a UMR (16 + 48 + 64 + 64 = 192); plus, for UD
 *             and DC initiators, the datagram segment (48). Without
 *             IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, RC, UC and DCIs count every
 *             operation of their type (MW and LOCAL_INV included: 192),
 *             UD send (16 + 48 = 64).
 *   size      max(overhead + 16 x max_send_sge,
 *                 max_inline_data ? overhead + align16(4 + max_inline_data)
 *                                 : 0), rounded up to 64-byte blocks
 *   capacity  size - overhead - 4 (the inline segment's byte count)
 * So an RC or UD QP of one SGE and no inline asked has 60 bytes, an RC QP
 * asking for 100 bytes gets 124. The segment sizes are those of mlx5dv.h's
 * struct mlx5_wqe_*_seg. A WQE with no room past the overhead (no SGE, no
 * inline asked, an overhead of whole blocks) has 0 here, where libmlx5's
 * int arithmetic would write back a negative value.
 */
static uint32_t sv_qp_send_overhead(const struct ibv_qp_init_attr_ex *attr,
                                    uint8_t sv_type)
{
    const uint32_t ctrl = 16, raddr = 16, atomic = 16, datagram = 48;
    const uint32_t umr = 16 + 48 + 64 + 64;
    uint64_t ops;
    uint32_t ovh = ctrl;

    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        ops = attr->send_ops_flags;
    } else if (sv_type == IBV_QPT_UD) {
        ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    } else {
        ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
              IBV_QP_EX_WITH_BIND_MW;
    }
    if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
               IBV_QP_EX_WITH_RDMA_READ)) {
        ovh = ctrl + raddr;
    }
    if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)) {
        ovh = ctrl + raddr + atomic;
    }
    if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)) {
        ovh = umr;
    }
    if ((sv_type == IBV_QPT_UD) || (sv_type == SV_QPT_DCI)) {
        ovh += datagram;
    }
    return ovh;
}

static uint32_t sv_qp_inline_cap(const struct ibv_qp_init_attr_ex *attr,
                                 uint8_t sv_type, uint32_t max_send_sge,
                                 uint32_t max_inline)
{
    const uint32_t dseg = 16, inl_hdr = 4;
    uint32_t ovh = sv_qp_send_overhead(attr, sv_type), size, inl = 0;

    size = ovh + max_send_sge * dseg;
    if (max_inline != 0) {
        inl = ovh + ((inl_hdr + max_inline + 15) & ~15u);
    }
    size = (size > inl) ? size : inl;
    size = (size + 63) & ~63u;
    return (size >= ovh + inl_hdr) ? size - ovh - inl_hdr : 0;
}

/*
 * The largest max_inline_data a QP may ask for: its send WQE must fit in
 * the device's largest send descriptor, as libmlx5 checks it against
 * max_sq_desc_sz (mlx5_calc_send_wqe: a larger tot_size is EINVAL). So the
 * limit follows the QP's overhead, and the capacity written back always
 * fits (it fills the same WQE): a QP asking for the room another QP was
 * given gets it, as with mlx5. A ConnectX-4/5 has 1024 bytes (perftest
 * PR #176: on a ConnectX-4 Lx, ib_send_lat -I 1004 is created and 1005
 * refused, 1004 = 1024 - 16 - 4); softverbs has 768 (SV_MAX_SQ_DESC), the
 * WQE of 512 inline bytes on an RC QP with every operation: every QP type
 * takes the 512 bytes softverbs always gave, RC/UC at most 572 (as before),
 * UD 700, a DCI 524, RC with send only 748. softverbs refused every
 * request above 512 while writing back up to 572 (UD, 4 SGEs, 512 asked):
 * libfabric's verbs provider probes the inline room with one SGE
 * (vrb_find_max_inline: 512), learns its endpoint's capacity
 * (vrb_get_qp_cap: 572) and asks for that, so fi_pingpong -e dgram (and
 * ofi_rxd over it) failed in fi_enable with EINVAL.
 */
static uint32_t sv_qp_inline_max(const struct ibv_qp_init_attr_ex *attr,
                                 uint8_t sv_type)
{
    const uint32_t inl_hdr = 4;

    return ((SV_MAX_SQ_DESC - sv_qp_send_overhead(attr, sv_type)) & ~15u) -
           inl_hdr;
}

struct ibv_qp *sv_qp_create(struct ibv_context *ctx,
                            struct ibv_qp_init_attr_ex *attr, uint8_t sv_type)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct ibv_qp_cap cap = attr->cap;
    struct sv_shm_qp *s = NULL;
    uint32_t i = 0, n, sq_size;
    struct sv_qp *qp;
    uint64_t rq_len = 0;

    if (cap.max_send_wr == 0) {
        cap.max_send_wr = 1;
    }
    if (sv_cap_check(&cap.max_send_wr, SV_MAX_WR) ||
        sv_cap_check(&cap.max_send_sge, SV_MAX_SGE) ||
        sv_cap_check(&cap.max_inline_data, sv_qp_inline_max(attr, sv_type))) {
        errno = EINVAL;
        return NULL;
    }
    /* the capacity the WQE has, reported and enforced on post (mlx5) */
    cap.max_inline_data = sv_qp_inline_cap(attr, sv_type, cap.max_send_sge,
                                           cap.max_inline_data);
    if (cap.max_send_sge == 0) {
        cap.max_send_sge = 1;
    }
    if (attr->srq || (sv_type == SV_QPT_DCI)) {
        /* man ibv_create_qp: ignored when the QP uses an SRQ; a DCI has no
         * receive queue (its SRQ, if given, is not used) */
        cap.max_recv_wr = cap.max_recv_sge = 0;
    } else {
        if (cap.max_recv_wr == 0) {
            cap.max_recv_wr = 1;
        }
        if (sv_cap_check(&cap.max_recv_wr, SV_MAX_WR) ||
            sv_cap_check(&cap.max_recv_sge, SV_MAX_SGE)) {
            errno = EINVAL;
            return NULL;
        }
    }

    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (sq_size = 1; sq_size < cap.max_send_wr; sq_size <<= 1)
        ;
    cap.max_send_wr = sq_size; /* granted: the ring is a power of two */
    qp->sq_size   = sq_size;
    qp->sq_stride = (sizeof(struct sv_swqe) +
                     cap.max_send_sge * sizeof(struct ibv_sge) +
                     cap.max_inline_data + 7) & ~7u;
    /* from the parent domain's allocator, if it has one (sv_pd.c) */
    qp->sq = sv_pd_buf_alloc(attr->pd, (size_t)sq_size * qp->sq_stride,
                             MLX5DV_RES_TYPE_QP, &qp->sq_custom);
    if (qp->sq == NULL) {
        goto err_free_qp;
    }

    sv_shm_lock();
    if (h->num_qp >= sv_g.max_qp) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (n = 0; (h->num_qp < sv_g.max_qp) && (n < SV_QP_TBL); n++) {
        i = (h->qp_cursor + n) & (SV_QP_TBL - 1);
        if (!h->qps[i].in_use) {
            s = &h->qps[i];
            break;
        }
    }
    if (s == NULL) {
        sv_shm_unlock();
        sv_error("cannot create QP: limit %u reached", sv_g.max_qp);
        errno = ENOMEM;
        goto err_free_sq;
    }
    memset(s, 0, sizeof(*s));
    if (!attr->srq && (sv_type != SV_QPT_DCI)) {
        s->rq_off = sv_rq_alloc(&cap.max_recv_wr, &cap.max_recv_sge,
                                &rq_len);
        if (s->rq_off == 0) {
            sv_shm_unlock();
            sv_error("cannot create QP: registry arena full");
            errno = ENOMEM;
            goto err_free_sq;
        }
        s->rq_len = rq_len;
    }
    h->qp_cursor = i + 1;
    if (++h->qp_gen[i] == 0) {
        h->qp_gen[i] = 1;
    }
    s->qpn     = ((uint32_t)h->qp_gen[i] << 16) | i;
    s->proc    = sv_g.proc;
    s->pid     = sv_g.pid;
    s->ctx_id  = sv_ctx(ctx)->ctx_id;
    s->pd_id   = sv_container_of(attr->pd, struct sv_pd, pd)->pd_id;
    s->type    = sv_type;
    s->dev     = sv_ctx(ctx)->dev->index;
    s->port    = 1;
    s->state   = IBV_QPS_RESET;   /* initial: published with in_use */
    s->scq     = sv_cq(attr->send_cq)->index;
    s->rcq     = sv_cq(attr->recv_cq)->index;
    s->srq     = (attr->srq && (sv_type != SV_QPT_DCI)) ?
                 sv_srq(attr->srq)->index + 1 : 0;
    s->sq_sig_all = attr->sq_sig_all;
    s->cookie  = (uintptr_t)&qp->qpx.qp_base;
    /* release: the entry is complete before lookups see in_use */
    __atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);
    h->num_qp++;
    sv_shm_unlock();

    qp->index   = i;
    qp->shm     = s;
    qp->sv_type = sv_type;
    qp->scq   = sv_cq(attr->send_cq);
    qp->rcq   = sv_cq(attr->recv_cq);
    qp->srq   = (attr->srq && (sv_type != SV_QPT_DCI)) ?
                sv_srq(attr->srq) : NULL;
    qp->rq    = s->rq_off ? sv_shm_ptr(s->rq_off) : NULL;
    qp->cap   = cap;
    pthread_mutex_init(&qp->lock, NULL);
    qp->qpx.qp_base.context    = ctx;
    qp->qpx.qp_base.qp_context = attr->qp_context;
    qp->qpx.qp_base.pd         = attr->pd;
    qp->qpx.qp_base.send_cq    = attr->send_cq;
    qp->qpx.qp_base.recv_cq    = attr->recv_cq;
    qp->qpx.qp_base.srq        = attr->srq;
    qp->qpx.qp_base.handle     = i;
    /* a DCT has its number from RTR on (see ibv_modify_qp) */
    qp->qpx.qp_base.qp_num     = (sv_type == SV_QPT_DCT) ? 0 : s->qpn;
    qp->qpx.qp_base.state      = IBV_QPS_RESET; /* public mirror (sv.h) */
    qp->qpx.qp_base.qp_type    = attr->qp_type;
    pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
    pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
    qp->attr.cap      = cap;
    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        qp->is_ex          = 1;
        qp->send_ops_flags = attr->send_ops_flags;
    }
    sv_qp_init_wr_ops(qp);
    sv_dc_init_dv_ops(qp);
    sv_pd_ref(attr->pd, 1);
    sv_cq_add_qp(qp->scq, qp);
    if (qp->rcq != qp->scq) {
        sv_cq_add_qp(qp->rcq, qp);
    }
    attr->cap = cap; /* granted values */
    return &qp->qpx.qp_base;

err_free_sq:
    sv_pd_buf_free(attr->pd, qp->sq, MLX5DV_RES_TYPE_QP, qp->sq_custom);
err_free_qp:
    free(qp);
    return NULL;
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
                                       struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_init_attr_ex ex;
    struct ibv_qp *qp;

    if ((pd == NULL) || (attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    memset(&ex, 0, sizeof(ex));
    memcpy(&ex, attr, sizeof(*attr));
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd        = pd;
    qp = sv_create_qp_ex(pd->context, &ex);
    if (qp != NULL) {
        attr->cap = ex.cap;
    }
    return qp;
}

/* The ibv_wr_* API exists for QPs created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS only: libibverbs returns NULL for a QP
 * without VERBS_QP_EX, which mlx5 sets only for that comp_mask bit
 * (rdma-core libibverbs/verbs.c ibv_qp_to_qp_ex, providers/mlx5/verbs.c
 * create_qp). errno is set as well, to tell the caller why */
SV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
    struct sv_qp *qp = sv_qp(ibqp);

    if (!qp->is_ex) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return &qp->qpx;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    struct sv_qp *qp = sv_qp(ibqp);

    /* man ibv_destroy_qp: fails while attached to a multicast group */
    /* acquire: counts are changed under the registry lock elsewhere */
    if (__atomic_load_n(&qp->shm->mcast_count, __ATOMIC_ACQUIRE) > 0) {
        return EBUSY;
    }
    /* man ibv_get_async_event: destroying the QP waits, without a timeout
     * and through signals, until every async event reported about it was
     * acknowledged (libibverbs waits for the kernel's count the same way) */
    pthread_mutex_lock(&ibqp->mutex);
    while (ibqp->events_completed != qp->events_reported) {
        pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
    }
    pthread_mutex_unlock(&ibqp->mutex);
    sv_cq_del_qp(qp->scq, qp);
    if (qp->rcq != qp->scq) {
        sv_cq_del_qp(qp->rcq, qp);
    }
    /* Its completions not yet polled go with it, as rdma-core's mlx5
     * removes a destroyed QP's CQEs from both CQs (mlx5_destroy_qp ->
     * __mlx5_cq_clean; an SRQ receive's WQE goes back to the SRQ): a CQ
     * shared by many QPs (libfabric's verbs provider, one per domain)
     * would otherwise return completions whose wr_id names the freed
     * endpoint's buffers. libfabric's ofi_rxm crashed polling them after
     * closing its connections. A CQE a peer pushes between this sweep and
     * the QP's release below still arrives, as with a reset (sv_cq_clean) */
    if (qp->scq != NULL) {
        sv_cq_clean(qp->scq, qp);
    }
    if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
        sv_cq_clean(qp->rcq, qp);
    }
    if (qp->sq_pending) {
        __atomic_fetch_sub(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
    }
    sv_qp_free_shm(qp);
    free(qp->wr_list);
    sv_pd_buf_free(ibqp->pd, qp->sq, MLX5DV_RES_TYPE_QP, qp->sq_custom);
    sv_pd_ref(ibqp->pd, -1);
    free(qp);
    return 0;
}

/* ---------------------------------------------------------------------
 * Modify
 * ------------------------------------------------------------------- */
static void sv_qp_async_event(struct sv_qp *qp, enum ibv_event_type type)
{
    sv_ev_async(qp->shm->ctx_id, SV_EV_QP, type, qp->index, qp->shm->cookie);
}

/* Flush the QP's own receive queue */
void sv_qp_flush_rq(struct sv_qp *qp)
{
    if (qp->rq != NULL) {
        sv_rq_flush(qp->rq, qp->rcq->index, qp->shm->qpn);
    }
}

/*
 * The one writer of a QP's state after its creation (see sv_qp_state in
 * sv.h): ibv_modify_qp, the owner's moves to ERR and SQE
 * (sv_qp_move_to_err) and the responder of any process that moves the QP
 * it serves to ERR (sv_resp.c). The owner and those responders share no
 * lock, so the state changes by compare-and-swap, and only from one of the
 * states in from:
 *  - a responder moves to ERR a QP that can fail (SV_QPS_CAN_FAIL), not
 *    one already in ERR: the one whose move it was flushes and notifies,
 *    once;
 *  - the owner's error moves leave a QP it reset (or took on to INIT)
 *    meanwhile as it is: only a modify leaves RESET (IBA spec 10.3.1);
 *  - SQE is entered from RTS only (IBA spec 10.3.1, the SQ Error state:
 *    a send completion error of a UC or UD QP in RTS).
 * rxe also keeps one state (qp->attr.qp_state, under qp->state_lock) and
 * moves it to ERR in one function, rxe_qp_error (Linux
 * drivers/infiniband/sw/rxe/rxe_qp.c), which schedules its tasks to flush
 * the queues; it has no move to SQE of its own. Here the flush follows in
 * sv_qp_move_to_err, or in the responder (sv_resp.c) for a QP of another
 * process.
 * acq_rel: what was stored before the move (a modify's attributes) is seen
 * by whoever reads the new state; the mover sees what came before the
 * state it replaces.
 */
int sv_qp_set_state(struct sv_shm_qp *s, enum ibv_qp_state next,
                    uint32_t from)
{
    uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

    do {
        if ((st > IBV_QPS_ERR) || !(from & SV_QPS_BIT(st))) {
            return 0;
        }
    } while (!__atomic_compare_exchange_n(&s->state, &st, next, 0,
                                          __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return 1;
}

/*
 * The owner's move to ERR (a completion error of a reliable QP, IBA spec
 * 10.7.3.1; a modify to ERR; a responder's move found by the CQ's progress)
 * or to SQE (a send completion error of a UC or UD QP: its receive queue
 * keeps working, IBA spec 10.3.1), with qp->lock held. Then what the state
 * in effect flushes (IBA 10.7.3.1, man ibv_modify_qp): ERR every
 * outstanding send and receive WR, SQE the send WRs; none when the QP
 * moved on meanwhile (its owner reset it). An ERR set already stays:
 * SQE is entered from RTS only.
 */
void sv_qp_move_to_err(struct sv_qp *qp, enum ibv_qp_state to)
{
    enum ibv_qp_state st;

    sv_qp_set_state(qp->shm, to, (to == IBV_QPS_SQE) ?
                                 SV_QPS_BIT(IBV_QPS_RTS) : SV_QPS_CAN_FAIL);
    st = sv_qp_state(qp->shm);
    if ((st == IBV_QPS_ERR) || (st == IBV_QPS_SQE)) {
        sv_comp_flush_sq(qp);
    }
    if (st == IBV_QPS_ERR) {
        sv_qp_flush_rq(qp);
    }
}

/* The public ibv_qp.state stays as it was (see sv_qp_state in sv.h) */
void sv_qp_to_err(struct sv_qp *qp)
{
    pthread_mutex_lock(&qp->lock);
    sv_qp_move_to_err(qp, IBV_QPS_ERR);
    pthread_mutex_unlock(&qp->lock);
}

static int sv_qp_check_attr(struct sv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    if ((mask & IBV_QP_PORT) && !sv_port_valid(a->port_num)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && (a->pkey_index != 0)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) &&
        ((a->path_mtu < IBV_MTU_256) || (a->path_mtu > IBV_MTU_4096))) {
        return EINVAL;
    }
    if ((mask & IBV_QP_DEST_QPN) && (a->dest_qp_num > 0xffffff)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_TIMEOUT) && (a->timeout > 31)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RETRY_CNT) && (a->retry_cnt > 7)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RNR_RETRY) && (a->rnr_retry > 7)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MIN_RNR_TIMER) && (a->min_rnr_timer > 31)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
        (a->max_rd_atomic > SV_MAX_RD_ATOM)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
        (a->max_dest_rd_atomic > SV_MAX_RD_ATOM)) {
        return EINVAL;
    }
    /* the AV of a DCI or DCT gives its port, SL and GRH only (the target
     * comes per WR; mlx5_ib uses no DLID of it), so a zero DLID is fine */
    if ((mask & IBV_QP_AV) &&
        (((a->ah_attr.port_num != 0) && !sv_port_valid(a->ah_attr.port_num)) ||
         ((a->ah_attr.dlid == 0) && !a->ah_attr.is_global &&
          (qp->sv_type != SV_QPT_DCI) && (qp->sv_type != SV_QPT_DCT)))) {
        return EINVAL;
    }
    /* qp_access_flags are not checked: the kernel's modify_qp
     * (drivers/infiniband/core/uverbs_cmd.c) copies them as they come and
     * mlx5_ib reads only the remote read/write/atomic bits of them
     * (to_mlx5_access_flags, later set_qpc_atomic_flags, in
     * drivers/infiniband/hw/mlx5/qp.c), so IBV_ACCESS_ON_DEMAND (an MR's
     * flag, which applications pass along with the rest) is taken and
     * has no effect; the responder here likewise looks at the remote bits
     * only */
    return 0;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a,
                            int mask)
{
    struct sv_qp *qp = sv_qp(ibqp);
    const struct sv_qp_trans *t;
    enum ibv_qp_state cur, next;
    int ti = sv_qp_type_idx(qp->sv_type);
    int ret;

    if (a == NULL) {
        return EINVAL;
    }
    /* the state may have been set to ERR/SQE by a requester or responder */
    cur  = sv_qp_state(qp->shm);
    next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
    if ((mask & IBV_QP_CUR_STATE) && (a->cur_qp_state != cur)) {
        return EINVAL;
    }
    if (((unsigned)next > IBV_QPS_ERR) || ((unsigned)cur > IBV_QPS_ERR)) {
        return EINVAL;
    }
    t = &sv_qp_table[cur][next];
    if ((qp->sv_type == SV_QPT_DCI) || (qp->sv_type == SV_QPT_DCT)) {
        ret = sv_dc_modify_check(qp, cur, next, mask);
    } else {
        ret = (!t->valid || ((mask & t->req[ti]) != t->req[ti]) ||
               (mask & ~(t->req[ti] | t->opt[ti] | IBV_QP_STATE))) ?
              EINVAL : 0;
    }
    if (ret != 0) {
        sv_error("qp 0x%x: invalid modify %d->%d mask 0x%x",
                 qp->shm->qpn, cur, next, mask);
        return ret;
    }
    ret = sv_qp_check_attr(qp, a, mask);
    if (ret != 0) {
        return ret;
    }

    pthread_mutex_lock(&qp->lock);
    if (mask & IBV_QP_ACCESS_FLAGS) {
        qp->attr.qp_access_flags = a->qp_access_flags;
        qp->shm->access          = a->qp_access_flags;
    }
    if (mask & IBV_QP_PKEY_INDEX)      qp->attr.pkey_index = a->pkey_index;
    if (mask & IBV_QP_PORT) {
        /* the port whose LID peers address: checked by responders */
        qp->attr.port_num = a->port_num;
        qp->shm->port     = a->port_num;
    }
    if (mask & IBV_QP_QKEY) {
        qp->attr.qkey = a->qkey;
        qp->shm->qkey = a->qkey;
    }
    if (mask & IBV_QP_AV)              qp->attr.ah_attr = a->ah_attr;
    if (mask & IBV_QP_ALT_PATH) {
        qp->attr.alt_ah_attr    = a->alt_ah_attr;
        qp->attr.alt_pkey_index = a->alt_pkey_index;
        qp->attr.alt_port_num   = a->alt_port_num;
        qp->attr.alt_timeout    = a->alt_timeout;
    }
    if (mask & IBV_QP_PATH_MTU)        qp->attr.path_mtu = a->path_mtu;
    if (mask & IBV_QP_TIMEOUT)         qp->attr.timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT)       qp->attr.retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)       qp->attr.rnr_retry = a->rnr_retry;
    if (mask & IBV_QP_RQ_PSN)          qp->attr.rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN)          qp->attr.sq_psn = a->sq_psn;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        qp->attr.max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        qp->attr.min_rnr_timer  = a->min_rnr_timer;
        qp->shm->min_rnr_timer  = a->min_rnr_timer;
    }
    if (mask & IBV_QP_PATH_MIG_STATE)  qp->attr.path_mig_state = a->path_mig_state;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
        qp->attr.en_sqd_async_notify = a->en_sqd_async_notify;
    if (mask & IBV_QP_DEST_QPN) {
        qp->attr.dest_qp_num = a->dest_qp_num;
        qp->shm->dest_qpn    = a->dest_qp_num;
    }

    if (next == IBV_QPS_RESET) {
        /* drop everything outstanding, as a reset HCA QP does */
        if (qp->sq_pending) {
            qp->sq_pending = 0;
            __atomic_fetch_sub(&qp->scq->sq_pending, 1, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&sv_g.sq_pending_qps, 1, __ATOMIC_RELAXED);
        }
        qp->sq_head = qp->sq_tail = qp->sq_retired = 0;
        qp->dc_last_dctn = 0; /* a reset DCI is connected to nobody */
        qp->dc_last_dlid = 0;
        if (qp->rq != NULL) {
            /* release: consumers see an empty ring from now on */
            __atomic_store_n(&qp->rq->head, qp->rq->tail, __ATOMIC_RELEASE);
        }
    }
    if (mask & IBV_QP_STATE) {
        ibqp->state = next; /* as libibverbs' ibv_modify_qp */
    }
    if ((qp->sv_type == SV_QPT_DCT) && (next == IBV_QPS_RTR)) {
        /* the DCT exists on the HCA from RTR on, and its number with it
         * (rdma-core providers/mlx5/verbs.c modify_dct: qp_num = dctn) */
        ibqp->qp_num = qp->shm->qpn;
    }
    /* from any state, as the plain store it replaced: the transition was
     * checked against cur above. The attributes above are visible to
     * requesters seeing the state */
    sv_qp_set_state(qp->shm, next, SV_QPS_ANY);
    pthread_mutex_unlock(&qp->lock);

    if (next == IBV_QPS_RESET) {
        /* its CQEs go too (mlx5_cq_clean), without the QP's lock: the
         * CQ's lock is taken before a QP's when a poll runs requesters */
        if (qp->scq != NULL) {
            sv_cq_clean(qp->scq, qp);
        }
        if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
            sv_cq_clean(qp->rcq, qp);
        }
    }

    if ((next == IBV_QPS_ERR) && (cur != IBV_QPS_ERR)) {
        sv_qp_to_err(qp);
        if (qp->srq != NULL) {
            sv_qp_async_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
        }
    }
    if ((next == IBV_QPS_RTS) && (cur == IBV_QPS_SQD)) {
        sv_req_progress(qp); /* WRs posted while drained */
    }
    if ((next == IBV_QPS_SQD) && qp->attr.en_sqd_async_notify) {
        /* the send queue is always drained: requests run synchronously */
        sv_qp_async_event(qp, IBV_EVENT_SQ_DRAINED);
    }
    return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
                           int mask, struct ibv_qp_init_attr *init)
{
    struct sv_qp *qp = sv_qp(ibqp);

    if ((attr == NULL) || (init == NULL)) {
        return EINVAL;
    }
    /* a DCT is queried in RTR only (the kernel's mlx5_ib_dct_query_qp) */
    if ((qp->sv_type == SV_QPT_DCT) &&
        (sv_qp_state(qp->shm) != IBV_QPS_RTR)) {
        return EINVAL;
    }
    pthread_mutex_lock(&qp->lock);
    *attr              = qp->attr;
    /* the state, maybe changed by a requester's or responder's error */
    attr->qp_state     = sv_qp_state(qp->shm);
    attr->cur_qp_state = attr->qp_state;
    attr->cap          = qp->cap;
    attr->sq_draining  = 0;
    memset(init, 0, sizeof(*init));
    init->qp_context = ibqp->qp_context;
    init->send_cq    = ibqp->send_cq;
    init->recv_cq    = ibqp->recv_cq;
    init->srq        = ibqp->srq;
    init->cap        = qp->cap;
    init->qp_type    = ibqp->qp_type;
    init->sq_sig_all = qp->shm->sq_sig_all;
    if (mask & IBV_QP_STATE) {
        /* libibverbs' ibv_query_qp updates the public field: a QP that
         * went to ERR by itself shows it from here on */
        ibqp->state = attr->qp_state;
    }
    pthread_mutex_unlock(&qp->lock);
    return 0;
}

/* ---------------------------------------------------------------------
 * Multicast (UD)
 * ------------------------------------------------------------------- */
SV_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
                               uint16_t lid)
{
    struct sv_qp *qp = sv_qp(ibqp);
    struct sv_shm_mcast *g, *free_g = NULL;
    int i, j, ret = 0;

    if ((ibqp->qp_type != IBV_QPT_UD) || (gid->raw[0] != 0xff) ||
        (lid < SV_MCAST_LID_BASE) || (lid == 0xffff)) {
        return EINVAL;
    }
    sv_shm_lock();
    for (i = 0; i < SV_MCAST_TBL; i++) {
        g = &sv_g.shm->mcast[i];
        if (!g->in_use) {
            free_g = free_g ? free_g : g;
            continue;
        }
        if (!memcmp(&g->gid, gid, sizeof(*gid))) {
            for (j = 0; j < g->nqp; j++) {
                if (g->qpn[j] == ibqp->qp_num) {
                    goto out; /* already attached */
                }
            }
            if (g->nqp == SV_MCAST_QPS) {
                ret = ENOMEM;
                goto out;
            }
            g->qpn[g->nqp++] = ibqp->qp_num;
            qp->shm->mcast_count++;
            goto out;
        }
    }
    if (free_g == NULL) {
        ret = ENOMEM;
        goto out;
    }
    free_g->gid    = *gid;
    free_g->lid    = lid;
    free_g->nqp    = 1;
    free_g->qpn[0] = ibqp->qp_num;
    free_g->in_use = 1;
    qp->shm->mcast_count++;
out:
    sv_shm_unlock();
    return ret;
}

SV_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
                               uint16_t lid)
{
    struct sv_qp *qp = sv_qp(ibqp);
    struct sv_shm_mcast *g;
    int i, j, ret = EINVAL;

    sv_shm_lock();
    for (i = 0; i < SV_MCAST_TBL; i++) {
        g = &sv_g.shm->mcast[i];
        if (!g->in_use || memcmp(&g->gid, gid, sizeof(*gid))) {
            continue;
        }
        for (j = 0; j < g->nqp; j++) {
            if (g->qpn[j] == ibqp->qp_num) {
                g->qpn[j] = g->qpn[--g->nqp];
                g->in_use = (g->nqp > 0);
                qp->shm->mcast_count--;
                ret = 0;
                break;
            }
        }
    }
    sv_shm_unlock();
    return ret;
}
