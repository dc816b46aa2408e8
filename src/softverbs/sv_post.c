/*
 * softverbs posting: ibv_post_send/ibv_post_recv, the ibv_wr_* API and
 * its mlx5 half, the mlx5dv_qp_ex functions every QP of the mlx5
 * personality has (a DCI's destination per WR, mlx5dv_wr_set_dc_addr;
 * the mkey, signature, crypto, raw WQE and memcpy operations softverbs
 * lacks fail the WR list with EOPNOTSUPP at ibv_wr_complete).
 *
 * A posted send WR is validated and copied into the process-local send
 * queue, then the requester runs at once (sv_req_progress).
 */
#include "sv.h"
#include "sv_xfer.h"

#include <stdlib.h>
#include <string.h>

static int sv_opcode_ok(uint8_t type, enum ibv_wr_opcode op)
{
    if (type == IBV_QPT_XRC_RECV) {
        return 0; /* an XRC target has no send queue */
    }
    switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return 1;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return (type != IBV_QPT_UD) && (type != SV_QPT_DCT);
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return sv_qp_reliable(type);
    case IBV_WR_LOCAL_INV:
    case IBV_WR_BIND_MW:
    case IBV_WR_SEND_WITH_INV:
        /* UC and RC (ibv_post_send(3)'s table; mlx5's
         * MLX5_SUPPORTED_SEND_OPS_FLAGS_RC/_UC); not on DCIs, where
         * softverbs offers no window operation */
        return (type == IBV_QPT_RC) || (type == IBV_QPT_UC);
    default:
        return 0;
    }
}

/* A local operation: executed by the requester, no packet, no data */
static int sv_wr_is_local(enum ibv_wr_opcode op)
{
    return (op == IBV_WR_BIND_MW) || (op == IBV_WR_LOCAL_INV);
}

/* The window operation of a BIND_MW WR into w: the window is named by the
 * key it has when the WR is posted (as rxe's provider and mlx5 put
 * mw->rkey in the WQE), the new key is bind_mw.rkey. Everything else is
 * checked when the WQE executes (a bind error completion, as rxe) */
static int sv_post_bind(struct sv_swqe *w, const struct ibv_send_wr *wr)
{
    const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

    if (wr->bind_mw.mw == NULL) {
        return EINVAL;
    }
    w->mw_rkey     = wr->bind_mw.mw->rkey;
    w->rkey        = wr->bind_mw.rkey;
    w->mr_lkey     = (bi->mr != NULL) ? bi->mr->lkey : 0;
    w->remote_addr = bi->addr;
    w->bind_len    = bi->length;
    w->bind_access = bi->mw_access_flags;
    return 0;
}

/* A WR built by the ibv_wr_* API, with room for its DC address */
struct sv_wr_ent {
    struct ibv_send_wr wr;
    struct sv_dc_addr  dc;
    struct ibv_sge     sge[];
};

/* The address vector of an AH into a WQE (UD and DCI destinations) */
static void sv_swqe_set_av(struct sv_swqe *w, struct ibv_ah *ibah)
{
    struct sv_ah *ah = sv_container_of(ibah, struct sv_ah, ah);

    w->ud_dlid       = ah->attr.dlid;
    w->ud_port       = ah->attr.port_num;
    w->ud_has_grh    = ah->attr.is_global;
    w->ud_dgid       = ah->attr.grh.dgid;
    w->ud_sgid_index = ah->attr.grh.sgid_index;
}

/* Where a WR goes: the remote address and key of RDMA and atomics, the
 * operands of atomics, the destination of UD and DCI WRs */
static void sv_post_dest(uint8_t type, struct sv_swqe *w,
                         const struct ibv_send_wr *wr,
                         const struct sv_dc_addr *dc)
{
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        w->remote_addr = wr->wr.rdma.remote_addr;
        w->rkey        = wr->wr.rdma.rkey;
        break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        w->remote_addr = wr->wr.atomic.remote_addr;
        w->rkey        = wr->wr.atomic.rkey;
        w->compare_add = wr->wr.atomic.compare_add;
        w->swap        = wr->wr.atomic.swap;
        break;
    default:
        break;
    }
    if (type == IBV_QPT_UD) {
        w->ud_qpn  = wr->wr.ud.remote_qpn;
        w->ud_qkey = wr->wr.ud.remote_qkey;
        sv_swqe_set_av(w, wr->wr.ud.ah);
    } else if (type == SV_QPT_DCI) {
        w->ud_qpn = dc->dctn;
        w->dc_key = dc->key;
        sv_swqe_set_av(w, dc->ah);
    } else if (type == IBV_QPT_XRC_SEND) {
        /* every XRC request carries the SRQ it is for (IBA Annex A14, the
         * XRCETH), RDMA and atomics too: its domain is checked against
         * the target QP's (sv_xrc_resp_target) */
        w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
    }
}

/* dc: the WR's DC address (a DCI's WR from the ibv_wr_* API), else NULL;
 * max_sge: the SGEs it may have */
static int sv_post_one(struct sv_qp *qp, struct ibv_send_wr *wr,
                       const struct sv_dc_addr *dc, uint32_t max_sge)
{
    uint8_t type = qp->sv_type;
    struct sv_swqe *w;
    uint32_t len = 0;
    char *inl;
    int i;

    if (!sv_opcode_ok(type, wr->opcode) || (wr->num_sge < 0)) {
        return EINVAL;
    }
    /* acquire: pairs with the release in sv_cq_retire (poll_cq) */
    if (qp->sq_tail - __atomic_load_n(&qp->sq_retired, __ATOMIC_ACQUIRE) >=
        qp->sq_size) {
        return ENOMEM;
    }
    if ((type == IBV_QPT_UD) && (wr->wr.ud.ah == NULL)) {
        return EINVAL;
    }
    /* A DCI WR names its target by mlx5dv_wr_set_dc_addr(); without one
     * there is nobody to send to */
    if ((type == SV_QPT_DCI) && ((dc == NULL) || (dc->ah == NULL))) {
        return EINVAL;
    }
    w = sv_sq_wqe(qp, qp->sq_tail);
    if (sv_wr_is_local(wr->opcode)) {
        if ((wr->opcode == IBV_WR_BIND_MW) && sv_post_bind(w, wr)) {
            return EINVAL;
        }
        w->num_sge = 0;
    } else if ((wr->send_flags & IBV_SEND_INLINE) &&
        (wr->opcode != IBV_WR_RDMA_READ) &&
        (wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP) &&
        (wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        inl = sv_swqe_inline(qp, w);
        for (i = 0; i < wr->num_sge; i++) {
            if (len + wr->sg_list[i].length > qp->cap.max_inline_data) {
                return EINVAL;
            }
            memcpy(inl + len, (void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            len += wr->sg_list[i].length;
        }
        w->num_sge = 0;
    } else {
        if ((uint32_t)wr->num_sge > max_sge) {
            return EINVAL;
        }
        for (i = 0; i < wr->num_sge; i++) {
            w->sge[i] = wr->sg_list[i];
            len      += wr->sg_list[i].length;
        }
        w->num_sge = wr->num_sge;
    }
    if (((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
         (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) &&
        ((wr->num_sge != 1) || (wr->sg_list[0].length != 8))) {
        return EINVAL;
    }
    if ((type == IBV_QPT_UD) && (len > SV_MTU)) {
        return EINVAL;
    }
    w->wr_id      = wr->wr_id;
    w->opcode     = wr->opcode;
    w->send_flags = wr->send_flags;
    w->imm_data   = wr->imm_data;
    w->length     = len;
    w->state      = SV_SWQE_POSTED;
    w->held       = 0;
    w->rnr_left   = qp->attr.rnr_retry;
    w->retry_left = qp->attr.retry_cnt;
    sv_post_dest(type, w, wr, dc);
    sv_wire_stamp(qp, w);
    qp->sq_tail++;
    return 0;
}

/* A send queue takes WRs in RTS, and in SQD, SQE and ERR (where they are
 * held, or flushed); not before RTS (ibv_post_send(3): EINVAL) */
static int sv_post_state_ok(struct sv_qp *qp)
{
    enum ibv_qp_state st = sv_qp_state(qp->shm);

    return (st == IBV_QPS_RTS) || (st == IBV_QPS_ERR) ||
           (st == IBV_QPS_SQD) || (st == IBV_QPS_SQE);
}

/* from_wr_api: the WRs are sv_wr_ent entries (their DC addresses apply) */
static int sv_post_list(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                        struct ibv_send_wr **bad, int from_wr_api)
{
    struct sv_qp *qp = sv_qp(ibqp);
    int ret = 0;

    pthread_mutex_lock(&qp->lock);
    if (!sv_post_state_ok(qp)) {
        *bad = wr;
        pthread_mutex_unlock(&qp->lock);
        return EINVAL;
    }
    for (; wr != NULL; wr = wr->next) {
        ret = sv_post_one(qp, wr, from_wr_api ?
                          &sv_container_of(wr, struct sv_wr_ent, wr)->dc :
                          NULL, qp->cap.max_send_sge);
        if (ret != 0) {
            *bad = wr;
            break;
        }
    }
    pthread_mutex_unlock(&qp->lock);
    sv_req_progress(qp);
    return ret;
}

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad)
{
    return sv_post_list(ibqp, wr, bad, 0);
}

/* One WR of a WQE the mlx5 engine parsed (dc: the target its address
 * vector names, for a DCI), with as many SGEs as the queue's slots hold
 * (sq_sge, sv_qp_create); as ibv_post_send otherwise */
int sv_post_send_wqe(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                     const struct sv_dc_addr *dc)
{
    struct sv_qp *qp = sv_qp(ibqp);
    int ret;

    pthread_mutex_lock(&qp->lock);
    if (!sv_post_state_ok(qp)) {
        pthread_mutex_unlock(&qp->lock);
        return EINVAL;
    }
    ret = sv_post_one(qp, wr, dc, qp->sq_sge);
    pthread_mutex_unlock(&qp->lock);
    sv_req_progress(qp);
    return ret;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad)
{
    struct sv_qp *qp = sv_qp(ibqp);
    enum ibv_qp_state st;
    int ret;

    /* a QP on an SRQ, and one without a receive queue (a DCI, XRC QPs),
     * takes no receive WR */
    if ((qp->srq != NULL) || (qp->rq == NULL)) {
        *bad = wr;
        return EINVAL;
    }
    st = sv_qp_state(qp->shm);
    if (st == IBV_QPS_RESET) {
        *bad = wr;
        return EINVAL;
    }
    pthread_mutex_lock(&qp->lock);
    ret = sv_rq_post(qp->rq, wr, bad);
    pthread_mutex_unlock(&qp->lock);
    if (st == IBV_QPS_ERR) {
        pthread_mutex_lock(&qp->lock);
        sv_qp_flush_rq(qp);
        pthread_mutex_unlock(&qp->lock);
    }
    return ret;
}

/* ---------------------------------------------------------------------
 * ibv_wr_* API: WRs are built in a per-QP array and posted by
 * wr_complete through the same path as ibv_post_send.
 * ------------------------------------------------------------------- */
static inline size_t sv_wr_ent_size(struct sv_qp *qp)
{
    return (sizeof(struct sv_wr_ent) +
            qp->cap.max_send_sge * sizeof(struct ibv_sge) +
            qp->cap.max_inline_data + 7) & ~7ul;
}

static inline struct sv_wr_ent *sv_wr_ent(struct sv_qp *qp, int i)
{
    return (struct sv_wr_ent *)((char *)qp->wr_list + i * sv_wr_ent_size(qp));
}

static inline struct sv_qp *sv_qpx(struct ibv_qp_ex *q)
{
    return sv_container_of(q, struct sv_qp, qpx);
}

static void sv_wr_start(struct ibv_qp_ex *q)
{
    struct sv_qp *qp = sv_qpx(q);

    pthread_mutex_lock(&qp->lock);
    if (qp->wr_list == NULL) {
        qp->wr_cap  = qp->sq_size;
        qp->wr_list = calloc(qp->wr_cap, sv_wr_ent_size(qp));
    }
    pthread_mutex_unlock(&qp->lock);
    qp->wr_count = 0;
    qp->wr_err   = (qp->wr_list == NULL) ? ENOMEM : 0;
}

static struct ibv_send_wr *sv_wr_new(struct ibv_qp_ex *q,
                                     enum ibv_wr_opcode op)
{
    struct sv_qp *qp = sv_qpx(q);
    struct sv_wr_ent *e;

    if (qp->wr_err || (qp->wr_count >= qp->wr_cap)) {
        qp->wr_err = qp->wr_err ? qp->wr_err : ENOMEM;
        return NULL;
    }
    e = sv_wr_ent(qp, qp->wr_count++);
    memset(&e->wr, 0, sizeof(e->wr));
    memset(&e->dc, 0, sizeof(e->dc));
    e->wr.wr_id      = q->wr_id;
    e->wr.send_flags = q->wr_flags;
    e->wr.opcode     = op;
    e->wr.sg_list    = e->sge;
    return &e->wr;
}

static struct ibv_send_wr *sv_wr_cur(struct ibv_qp_ex *q)
{
    struct sv_qp *qp = sv_qpx(q);

    if (qp->wr_err || (qp->wr_count == 0)) {
        qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
        return NULL;
    }
    return &sv_wr_ent(qp, qp->wr_count - 1)->wr;
}

struct sv_dc_addr *sv_wr_cur_dc(struct sv_qp *qp)
{
    struct ibv_send_wr *wr = sv_wr_cur(&qp->qpx);

    return wr ? &sv_container_of(wr, struct sv_wr_ent, wr)->dc : NULL;
}

static void sv_wr_send(struct ibv_qp_ex *q)
{
    sv_wr_new(q, IBV_WR_SEND);
}

static void sv_wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
    struct ibv_send_wr *wr = sv_wr_new(q, IBV_WR_SEND_WITH_IMM);

    if (wr) {
        wr->imm_data = imm;
    }
}

static void sv_wr_rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op,
                       uint32_t rkey, uint64_t addr, __be32 imm)
{
    struct ibv_send_wr *wr = sv_wr_new(q, op);

    if (wr) {
        wr->wr.rdma.rkey        = rkey;
        wr->wr.rdma.remote_addr = addr;
        wr->imm_data            = imm;
    }
}

static void sv_wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t a)
{
    sv_wr_rdma(q, IBV_WR_RDMA_WRITE, rkey, a, 0);
}

static void sv_wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey,
                                 uint64_t a, __be32 imm)
{
    sv_wr_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, a, imm);
}

static void sv_wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t a)
{
    sv_wr_rdma(q, IBV_WR_RDMA_READ, rkey, a, 0);
}

static void sv_wr_atomic(struct ibv_qp_ex *q, enum ibv_wr_opcode op,
                         uint32_t rkey, uint64_t addr, uint64_t cmp_add,
                         uint64_t swap)
{
    struct ibv_send_wr *wr = sv_wr_new(q, op);

    if (wr) {
        wr->wr.atomic.rkey        = rkey;
        wr->wr.atomic.remote_addr = addr;
        wr->wr.atomic.compare_add = cmp_add;
        wr->wr.atomic.swap        = swap;
    }
}

static void sv_wr_cas(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
                      uint64_t compare, uint64_t swap)
{
    sv_wr_atomic(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void sv_wr_faa(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr,
                      uint64_t add)
{
    sv_wr_atomic(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void sv_wr_unsupported(struct ibv_qp_ex *q)
{
    sv_qpx(q)->wr_err = EOPNOTSUPP;
}

/* The window operations exist on RC and UC QPs (see sv_opcode_ok); a DCI
 * has none (EOPNOTSUPP, as before softverbs had windows) */
static struct ibv_send_wr *sv_wr_new_mw(struct ibv_qp_ex *q,
                                        enum ibv_wr_opcode op)
{
    struct sv_qp *qp = sv_qpx(q);

    if ((qp->sv_type != IBV_QPT_RC) && (qp->sv_type != IBV_QPT_UC)) {
        sv_wr_unsupported(q);
        return NULL;
    }
    return sv_wr_new(q, op);
}

static void sv_wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
    struct ibv_send_wr *wr = sv_wr_new_mw(q, IBV_WR_SEND_WITH_INV);

    if (wr) {
        wr->invalidate_rkey = rkey;
    }
}

static void sv_wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
    struct ibv_send_wr *wr = sv_wr_new_mw(q, IBV_WR_LOCAL_INV);

    if (wr) {
        wr->invalidate_rkey = rkey;
    }
}

/* ibv_wr_bind_mw(3): a type 2 bind (rkey: the window's new key) */
static void sv_wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw,
                          uint32_t rkey, const struct ibv_mw_bind_info *info)
{
    struct ibv_send_wr *wr = sv_wr_new_mw(q, IBV_WR_BIND_MW);

    if (wr) {
        wr->bind_mw.mw        = mw;
        wr->bind_mw.rkey      = rkey;
        wr->bind_mw.bind_info = *info;
    }
}

static void sv_wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz,
                           uint16_t mss)
{
    sv_wr_unsupported(q);
}

static void sv_wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey,
                               uint64_t addr, const void *data)
{
    sv_wr_unsupported(q);
}

/* ibv_wr_set_xrc_srqn(3): the remote SRQ of the WR being built, on an
 * XRC_SEND QP; any other QP has no such field (EOPNOTSUPP at complete) */
static void sv_wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
    struct ibv_send_wr *wr;

    if (sv_qpx(q)->sv_type != IBV_QPT_XRC_SEND) {
        sv_wr_unsupported(q);
        return;
    }
    wr = sv_wr_cur(q);
    if (wr) {
        wr->qp_type.xrc.remote_srqn = srqn;
    }
}

static void sv_wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah,
                              uint32_t qpn, uint32_t qkey)
{
    struct ibv_send_wr *wr = sv_wr_cur(q);

    if (wr) {
        wr->wr.ud.ah          = ah;
        wr->wr.ud.remote_qpn  = qpn;
        wr->wr.ud.remote_qkey = qkey;
    }
}

static void sv_wr_set_sge_list(struct ibv_qp_ex *q, size_t n,
                               const struct ibv_sge *sg)
{
    struct sv_qp *qp = sv_qpx(q);
    struct ibv_send_wr *wr = sv_wr_cur(q);

    if (wr == NULL) {
        return;
    }
    if (n > qp->cap.max_send_sge) {
        qp->wr_err = EINVAL;
        return;
    }
    memcpy(wr->sg_list, sg, n * sizeof(*sg));
    wr->num_sge = n;
}

static void sv_wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr,
                          uint32_t length)
{
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

    sv_wr_set_sge_list(q, 1, &sge);
}

static void sv_wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n,
                                       const struct ibv_data_buf *buf)
{
    struct sv_qp *qp = sv_qpx(q);
    struct ibv_send_wr *wr = sv_wr_cur(q);
    struct sv_wr_ent *e;
    size_t i, len = 0;
    char *data;

    if (wr == NULL) {
        return;
    }
    e    = sv_container_of(wr, struct sv_wr_ent, wr);
    data = (char *)&e->sge[qp->cap.max_send_sge];
    for (i = 0; i < n; i++) {
        if (len + buf[i].length > qp->cap.max_inline_data) {
            qp->wr_err = EINVAL;
            return;
        }
        /* copied now: the caller may reuse its buffers on return */
        memcpy(data + len, buf[i].addr, buf[i].length);
        len += buf[i].length;
    }
    e->sge[0].addr    = (uintptr_t)data;
    e->sge[0].length  = len;
    e->sge[0].lkey    = 0;
    wr->num_sge       = 1;
    wr->send_flags   |= IBV_SEND_INLINE;
}

static void sv_wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t len)
{
    struct ibv_data_buf buf = { .addr = addr, .length = len };

    sv_wr_set_inline_data_list(q, 1, &buf);
}

static int sv_wr_complete(struct ibv_qp_ex *q)
{
    struct sv_qp *qp = sv_qpx(q);
    struct ibv_send_wr *bad;
    int i, ret;

    if (qp->wr_err) {
        ret = qp->wr_err;
        qp->wr_count = 0;
        return ret;
    }
    if (qp->wr_count == 0) {
        return 0;
    }
    for (i = 0; i < qp->wr_count - 1; i++) {
        sv_wr_ent(qp, i)->wr.next = &sv_wr_ent(qp, i + 1)->wr;
    }
    sv_wr_ent(qp, qp->wr_count - 1)->wr.next = NULL;
    ret = sv_post_list(&q->qp_base, &sv_wr_ent(qp, 0)->wr, &bad, 1);
    qp->wr_count = 0;
    return ret;
}

static void sv_wr_abort(struct ibv_qp_ex *q)
{
    sv_qpx(q)->wr_count = 0;
    sv_qpx(q)->wr_err   = 0;
}

void sv_qp_init_wr_ops(struct sv_qp *qp)
{
    struct ibv_qp_ex *q = &qp->qpx;

    q->wr_atomic_cmp_swp       = sv_wr_cas;
    q->wr_atomic_fetch_add     = sv_wr_faa;
    q->wr_bind_mw              = sv_wr_bind_mw;
    q->wr_local_inv            = sv_wr_local_inv;
    q->wr_rdma_read            = sv_wr_rdma_read;
    q->wr_rdma_write           = sv_wr_rdma_write;
    q->wr_rdma_write_imm       = sv_wr_rdma_write_imm;
    q->wr_send                 = sv_wr_send;
    q->wr_send_imm             = sv_wr_send_imm;
    q->wr_send_inv             = sv_wr_send_inv;
    q->wr_send_tso             = sv_wr_send_tso;
    q->wr_set_ud_addr          = sv_wr_set_ud_addr;
    q->wr_set_xrc_srqn         = sv_wr_set_xrc_srqn;
    q->wr_set_inline_data      = sv_wr_set_inline_data;
    q->wr_set_inline_data_list = sv_wr_set_inline_data_list;
    q->wr_set_sge              = sv_wr_set_sge;
    q->wr_set_sge_list         = sv_wr_set_sge_list;
    q->wr_start                = sv_wr_start;
    q->wr_complete             = sv_wr_complete;
    q->wr_abort                = sv_wr_abort;
    q->wr_atomic_write         = sv_wr_atomic_write;
}

/* ---------------------------------------------------------------------
 * mlx5dv_qp_ex (mlx5dv_qp_ex_from_ibv_qp_ex(3))
 * ------------------------------------------------------------------- */
static inline struct sv_qp *sv_dc_qp(struct mlx5dv_qp_ex *mqp)
{
    return sv_container_of(mqp, struct sv_qp, dv);
}

static void sv_dc_wr_set_addr(struct mlx5dv_qp_ex *mqp, struct ibv_ah *ah,
                              uint32_t dctn, uint64_t key)
{
    struct sv_qp *qp = sv_dc_qp(mqp);
    struct sv_dc_addr *dc = sv_wr_cur_dc(qp);

    if (dc == NULL) {
        return; /* no WR started: sv_wr_cur_dc() set the error */
    }
    if ((ah == NULL) || (dctn > 0xffffff)) {
        qp->wr_err = EINVAL;
        return;
    }
    dc->ah   = ah;
    dc->dctn = dctn;
    dc->key  = key;
}

/* DCI streams (rdma-core 44, mlx5dv_wr_set_dc_addr_stream(3)): softverbs
 * runs a DCI's WQEs in order whatever their stream, which is what a DCI
 * with one stream does; the stream id only selects an error domain on the
 * HCA, so it is accepted and not used. A DCI created without streams takes
 * any id, as perftest (built with HAVE_DCS) passes a counter on every post */
static void sv_dc_wr_set_addr_stream(struct mlx5dv_qp_ex *mqp,
                                     struct ibv_ah *ah, uint32_t dctn,
                                     uint64_t key, uint16_t stream_id)
{
    sv_dc_wr_set_addr(mqp, ah, dctn, key);
}

static void sv_dc_wr_unsupported(struct mlx5dv_qp_ex *mqp)
{
    sv_dc_qp(mqp)->wr_err = EOPNOTSUPP;
}

static void sv_dc_wr_mr_interleaved(struct mlx5dv_qp_ex *mqp,
                                    struct mlx5dv_mkey *mkey, uint32_t access,
                                    uint32_t repeat, uint16_t num,
                                    struct mlx5dv_mr_interleaved *data)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_mr_list(struct mlx5dv_qp_ex *mqp, struct mlx5dv_mkey *mkey,
                             uint32_t access, uint16_t num, struct ibv_sge *sge)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_mkey_configure(struct mlx5dv_qp_ex *mqp,
                                    struct mlx5dv_mkey *mkey, uint8_t num,
                                    struct mlx5dv_mkey_conf_attr *attr)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_set_mkey_access(struct mlx5dv_qp_ex *mqp, uint32_t access)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_set_mkey_layout_list(struct mlx5dv_qp_ex *mqp,
                                          uint16_t num,
                                          const struct ibv_sge *sge)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_set_mkey_layout_il(struct mlx5dv_qp_ex *mqp,
                                        uint32_t repeat, uint16_t num,
                                        const struct mlx5dv_mr_interleaved *d)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_set_mkey_sig_block(struct mlx5dv_qp_ex *mqp,
                                        const struct mlx5dv_sig_block_attr *a)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_raw_wqe(struct mlx5dv_qp_ex *mqp, const void *wqe)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_memcpy(struct mlx5dv_qp_ex *mqp, uint32_t dest_lkey,
                            uint64_t dest_addr, uint32_t src_lkey,
                            uint64_t src_addr, size_t length)
{
    sv_dc_wr_unsupported(mqp);
}

static void sv_dc_wr_set_mkey_crypto(struct mlx5dv_qp_ex *mqp,
                                     const struct mlx5dv_crypto_attr *attr)
{
    sv_dc_wr_unsupported(mqp);
}

void sv_qp_init_dv_ops(struct sv_qp *qp)
{
    struct mlx5dv_qp_ex *d = &qp->dv;

    d->wr_set_dc_addr                 = sv_dc_wr_set_addr;
    d->wr_set_dc_addr_stream          = sv_dc_wr_set_addr_stream;
    d->wr_mr_interleaved              = sv_dc_wr_mr_interleaved;
    d->wr_mr_list                     = sv_dc_wr_mr_list;
    d->wr_mkey_configure              = sv_dc_wr_mkey_configure;
    d->wr_set_mkey_access_flags       = sv_dc_wr_set_mkey_access;
    d->wr_set_mkey_layout_list        = sv_dc_wr_set_mkey_layout_list;
    d->wr_set_mkey_layout_interleaved = sv_dc_wr_set_mkey_layout_il;
    d->wr_set_mkey_sig_block          = sv_dc_wr_set_mkey_sig_block;
    d->wr_raw_wqe                     = sv_dc_wr_raw_wqe;
    d->wr_memcpy                      = sv_dc_wr_memcpy;
    d->wr_set_mkey_crypto             = sv_dc_wr_set_mkey_crypto;
}
