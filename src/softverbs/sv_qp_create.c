/*
 * softverbs queue pairs: building one. The checks every creator shares
 * (the comp_mask attributes, the SRQ), the sizes of the send queue and
 * its inline capacity as libmlx5 computes them, the registry entry, the
 * receive ring, the send queue's memory and sv_qp_create, which ties them
 * together for every QP type's creator: ibv_create_qp_ex (sv_qp.c), XRC
 * (sv_xrc_qp.c) and DC (sv_dc.c), all above this file.
 */
#include "sv.h"
#include "sv_mlx5_front.h" /* SV_MLX5_MAX_SGE */

#include <stdlib.h>
#include <string.h>

/* The send operations softverbs executes per QP type through ibv_wr_*:
 * those of a ConnectX device (rdma-core providers/mlx5/qp.c,
 * MLX5_SUPPORTED_SEND_OPS_FLAGS_RC/_UC/_UD; rxe's check_qp_init_attr in
 * providers/rxe/rxe.c has the same per-type sets) less TSO, which softverbs
 * does not have: memory windows and invalidation on RC and UC (sv_mw.c) */
static uint64_t sv_qp_send_ops(enum ibv_qp_type type)
{
    uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

    if (type == IBV_QPT_XRC_RECV) {
        return 0; /* an XRC target sends nothing */
    }
    if (type == IBV_QPT_UD) {
        return ops;
    }
    if (type == IBV_QPT_XRC_SEND) {
        /* RC's send, RDMA and atomics; softverbs offers no window
         * operation or invalidation on XRC (mlx5 has them: a narrower
         * set, refused with EOPNOTSUPP as any operation the QP lacks) */
        return ops | IBV_QP_EX_WITH_RDMA_WRITE |
               IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
               IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
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
 * - IND_TABLE, RX_HASH: EOPNOTSUPP, the device has no RSS (rxe refuses
 *   the comp_mask bits it lacks with EOPNOTSUPP, check_qp_init_attr in
 *   rdma-core providers/rxe/rxe.c).
 * - XRCD: EINVAL here; it names the domain of an XRC_RECV QP only
 *   (sv_xrc_create_qp), which RC, UC and UD QPs do not have.
 * - MAX_TSO_HEADER: EINVAL, TSO exists only on raw packet QPs (mlx5
 *   create_qp refuses it on any other type, providers/mlx5/verbs.c).
 * - CREATE_FLAGS: 0 is accepted; IBV_QP_CREATE_SOURCE_QPN on a non-UD QP
 *   is EINVAL (mlx5 create_qp); any flag otherwise EOPNOTSUPP, softverbs
 *   supports none (rxe: RXE_QP_CREATE_FLAGS_SUP 0, EOPNOTSUPP).
 * - SEND_OPS_FLAGS beyond sv_qp_send_ops(): EOPNOTSUPP (mlx5
 *   mlx5_qp_fill_wr_pfns in providers/mlx5/qp.c, rxe check_qp_init_attr) */
int sv_qp_init_attr_check(const struct ibv_qp_init_attr_ex *attr)
{
    const uint32_t known = (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS << 1) - 1;

    if (attr->comp_mask & ~known) {
        return EINVAL;
    }
    if (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE |
                           IBV_QP_INIT_ATTR_RX_HASH)) {
        return EOPNOTSUPP;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) &&
        (attr->qp_type != IBV_QPT_XRC_RECV)) {
        return EINVAL;
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

/* The SRQ of a QP being created (ibv_create_qp_ex or mlx5dv_create_qp):
 * 0 or EINVAL.
 * - an XRC SRQ serves XRC_RECV QPs only, named by the requests: the kernel's
 *   create_qp refuses it as another QP's SRQ;
 * - an SRQ serves QPs of its own protection domain: its receive buffers are
 *   registered there, and a QP of another PD receiving into them would cross
 *   the PD boundary (IBA protection domains). A parent domain is the domain
 *   of the PD it contains (sv_pd.c): UCX's mlx5 transports create their QPs
 *   in a parent domain and their SRQ in its PD */
int sv_qp_srq_check(const struct ibv_qp_init_attr_ex *attr)
{
    if (attr->srq == NULL) {
        return 0;
    }
    if ((sv_srq(attr->srq)->xrcd != NULL) ||
        (sv_pd(attr->srq->pd)->pd_id != sv_pd(attr->pd)->pd_id)) {
        return EINVAL;
    }
    return 0;
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
    if (sv_type == IBV_QPT_XRC_SEND) {
        ovh += 16; /* the XRC segment naming the remote SRQ (mlx5's
                      _sq_overhead: struct mlx5_wqe_xrc_seg) */
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

/* The size of a send WQE of a QP of type with caps cap as libmlx5 sizes it
 * (mlx5_calc_send_wqe: the overhead of its operations, then its SGEs or its
 * inline room, in whole 64-byte blocks) */
static uint32_t sv_qp_sq_wqe_size(const struct ibv_qp_cap *cap, uint8_t type)
{
    const struct ibv_qp_init_attr_ex attr = { .comp_mask = 0 };
    const uint32_t dseg = 16, inl_hdr = 4;
    uint32_t ovh = sv_qp_send_overhead(&attr, type), size, inl;

    size = ovh + cap->max_send_sge * dseg;
    inl  = ovh + ((inl_hdr + cap->max_inline_data + 15) & ~15u);
    size = (size > inl) ? size : inl;
    return (size + 63) & ~63u;
}

/* mlx5dv_init_obj's sq.wqe_cnt: max_send_wr WQEs of the size above, in
 * 64-byte blocks, rounded up to a power of two (mlx5_calc_sq_size) */
uint32_t sv_qp_mlx5_sq_blocks(const struct ibv_qp_cap *cap, uint8_t type)
{
    uint32_t bbs = (cap->max_send_wr ? cap->max_send_wr : 1) *
                   (sv_qp_sq_wqe_size(cap, type) / MLX5_SEND_WQE_BB);

    return sv_pow2_roundup((bbs < 16) ? 16 : bbs);
}

/*
 * The entries of a QP's send ring. A verbs QP holds max_send_wr WRs. A QP
 * the mlx5 personality may front holds one per 64-byte block of its mlx5
 * send queue: a program writing WQEs there counts its room in blocks, and a
 * one-block WQE takes one (rc_mlx5 posts up to wqe_cnt of them with one
 * signalled in 64), so a ring of max_send_wr WRs would fill with unsignalled
 * WRs that no completion retires, and the send queue would stop.
 */
static uint32_t sv_qp_sq_ring_size(const struct ibv_qp_cap *cap,
                                   uint8_t type)
{
    if (sv_g.mlx5 && ((type == IBV_QPT_RC) || (type == IBV_QPT_UD) ||
                      (type == SV_QPT_DCI))) {
        return sv_qp_mlx5_sq_blocks(cap, type);
    }
    return cap->max_send_wr;
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

/* The caps a QP of sv_type gets for attr's request, in *cap (as mlx5: the
 * inline room its WQE has, a send ring and SGEs at least one; none for the
 * receive queue of an SRQ user or a DCI); -1 with errno EINVAL when the
 * device cannot give them */
static int sv_qp_caps_grant(const struct ibv_qp_init_attr_ex *attr,
                            uint8_t sv_type, struct ibv_qp_cap *cap_p)
{
    struct ibv_qp_cap cap = attr->cap;

    if (sv_type == IBV_QPT_XRC_RECV) {
        /* a target has neither queue (the kernel's create_xrc_qp_user:
         * no PD, CQs or SRQ; its receives are the XRC SRQs') */
        memset(cap_p, 0, sizeof(*cap_p));
        return 0;
    }
    if (cap.max_send_wr == 0) {
        cap.max_send_wr = 1;
    }
    if (sv_cap_check(&cap.max_send_wr, SV_MAX_WR) ||
        sv_cap_check(&cap.max_send_sge, SV_MAX_SGE) ||
        sv_cap_check(&cap.max_inline_data, sv_qp_inline_max(attr, sv_type))) {
        errno = EINVAL;
        return -1;
    }
    /* the capacity the WQE has, reported and enforced on post (mlx5) */
    cap.max_inline_data = sv_qp_inline_cap(attr, sv_type, cap.max_send_sge,
                                           cap.max_inline_data);
    if (cap.max_send_sge == 0) {
        cap.max_send_sge = 1;
    }
    if (attr->srq || (sv_type == SV_QPT_DCI) ||
        (sv_type == IBV_QPT_XRC_SEND)) {
        /* man ibv_create_qp: ignored when the QP uses an SRQ; a DCI and an
         * XRC initiator have no receive queue (the kernel's create_qp sets
         * an XRC_INI's max_recv_wr and max_recv_sge to 0) */
        cap.max_recv_wr = cap.max_recv_sge = 0;
    } else {
        if (cap.max_recv_wr == 0) {
            cap.max_recv_wr = 1;
        }
        if (sv_cap_check(&cap.max_recv_wr, SV_MAX_WR) ||
            sv_cap_check(&cap.max_recv_sge, SV_MAX_SGE)) {
            errno = EINVAL;
            return -1;
        }
    }
    *cap_p = cap;
    return 0;
}


/* A registry entry for qp (its receive queue in the arena unless it has
 * none), published with state RESET; NULL with errno ENOMEM when the QP
 * table or the arena is full. Sets *index_p. */
static struct sv_shm_qp *sv_qp_shm_alloc(struct ibv_context *ctx,
                                         const struct ibv_qp_init_attr_ex *attr,
                                         uint8_t sv_type, struct sv_qp *qp,
                                         struct ibv_qp_cap *cap,
                                         uint32_t *index_p)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_qp *s  = NULL;
    uint32_t i = 0, n;
    uint64_t rq_len = 0;

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
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    if (!attr->srq && (sv_type != SV_QPT_DCI) &&
        (sv_type != IBV_QPT_XRC_SEND) && (sv_type != IBV_QPT_XRC_RECV)) {
        s->rq_off = sv_rq_alloc(&cap->max_recv_wr, &cap->max_recv_sge,
                                &rq_len);
        if (s->rq_off == 0) {
            sv_shm_unlock();
            sv_error("cannot create QP: registry arena full");
            errno = ENOMEM;
            return NULL;
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
    /* an XRC_RECV QP has no PD nor CQs: its SRQs' are used (sv_xrc.c) */
    s->pd_id   = attr->pd ? sv_pd(attr->pd)->pd_id : 0;
    s->type    = sv_type;
    s->dev     = sv_ctx(ctx)->dev->index;
    s->port    = 1;
    s->state   = IBV_QPS_RESET;   /* initial: published with in_use */
    s->scq     = attr->send_cq ? sv_cq(attr->send_cq)->index : 0;
    s->rcq     = attr->recv_cq ? sv_cq(attr->recv_cq)->index : 0;
    if (sv_type == IBV_QPT_XRC_RECV) {
        s->xrcd     = sv_container_of(attr->xrcd, struct sv_xrcd,
                                      xrcd)->index + 1;
        s->xrc_refs = 1; /* the creator's handle */
    }
    s->srq     = (attr->srq && (sv_type != SV_QPT_DCI)) ?
                 sv_srq(attr->srq)->index + 1 : 0;
    s->sq_sig_all = attr->sq_sig_all;
    s->cookie  = (uintptr_t)&qp->qpx.qp_base;
    /* release: the entry is complete before lookups see in_use */
    __atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);
    h->num_qp++;
    sv_shm_unlock();

    *index_p = i;
    return s;
}


/* The send queue of qp, of cap's (granted) sizes: the number of WQEs
 * rounded up to a power of two (written back to cap), the slot layout, and
 * its memory. -1: no memory for it */
static int sv_qp_sq_alloc(struct sv_qp *qp, struct ibv_qp_init_attr_ex *attr,
                          struct ibv_qp_cap *cap, uint8_t sv_type)
{
    uint32_t sq_size;

    cap->max_send_wr = sv_pow2_roundup(cap->max_send_wr); /* granted */
    sq_size          = sv_qp_sq_ring_size(cap, sv_type);
    qp->sq_size      = sq_size;
    /* The mlx5 personality: its engine posts the data segments of a WQE
     * the program wrote (up to 14 in 4 blocks, and an inline one) as SGEs
     * of this QP, and an HCA checks a WQE against its queue only, not
     * against the max_send_sge asked: UCX 1.22's ud_mlx5 asks for 2 SGEs
     * "to minimize WQE length" and writes 4 (the inline header and 3 IOVs
     * of an am_zcopy). So the slots of a queue it may front hold that
     * many, while the caps written back stay libmlx5's (UCX sizes its CQs
     * from them) and bound ibv_post_send */
    qp->sq_sge = cap->max_send_sge;
    if (sv_g.mlx5 && ((sv_type == IBV_QPT_RC) || (sv_type == IBV_QPT_UD) ||
                      (sv_type == SV_QPT_DCI)) &&
        (qp->sq_sge < SV_MLX5_MAX_SGE)) {
        qp->sq_sge = SV_MLX5_MAX_SGE;
    }
    qp->sq_stride = (sizeof(struct sv_swqe) +
                     qp->sq_sge * sizeof(struct ibv_sge) +
                     cap->max_inline_data + 7) & ~7u;
    if (sv_type == IBV_QPT_XRC_RECV) {
        /* no send queue: nothing to post, nothing in flight */
        qp->sq_size = 0;
    } else {
        /* from the parent domain's allocator, if it has one (sv_pd.c) */
        qp->sq = sv_pd_buf_alloc(attr->pd, (size_t)sq_size * qp->sq_stride,
                                 MLX5DV_RES_TYPE_QP, &qp->sq_custom);
        if (qp->sq == NULL) {
            return -1;
        }
    }
    return 0;
}


struct ibv_qp *sv_qp_create(struct ibv_context *ctx,
                            struct ibv_qp_init_attr_ex *attr, uint8_t sv_type)
{
    struct ibv_qp_cap cap;
    struct sv_shm_qp *s;
    struct sv_qp *qp;
    uint32_t i;

    if (sv_qp_caps_grant(attr, sv_type, &cap) != 0) {
        return NULL;
    }

    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (sv_qp_sq_alloc(qp, attr, &cap, sv_type) != 0) {
        goto err_free_qp;
    }

    s = sv_qp_shm_alloc(ctx, attr, sv_type, qp, &cap, &i);
    if (s == NULL) {
        goto err_free_sq;
    }

    qp->index   = i;
    qp->shm     = s;
    qp->sv_type = sv_type;
    qp->scq   = attr->send_cq ? sv_cq(attr->send_cq) : NULL;
    qp->rcq   = attr->recv_cq ? sv_cq(attr->recv_cq) : NULL;
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
    sv_qp_init_dv_ops(qp);
    if (attr->pd != NULL) {
        sv_pd_ref(attr->pd, 1);
    }
    if (qp->scq != NULL) {
        sv_cq_add_qp(qp->scq, qp);
    }
    if ((qp->rcq != NULL) && (qp->rcq != qp->scq)) {
        sv_cq_add_qp(qp->rcq, qp);
    }
    attr->cap = cap; /* granted values */
    return &qp->qpx.qp_base;

err_free_sq:
    if (qp->sq != NULL) {
        sv_pd_buf_free(attr->pd, qp->sq, MLX5DV_RES_TYPE_QP, qp->sq_custom);
    }
err_free_qp:
    free(qp);
    return NULL;
}
