/*
 * softverbs responder: executed by the requester against the responder's
 * shared state (its QP entry, receive queue, MRs and CQ rings), with the
 * payload moved by process_vm_writev/readv into the responder's memory.
 *
 * Responder steps (after rxe's responder):
 *   CHECK_QP     destination QP exists, right type/connection, RTR..SQE
 *   CHECK_RKEY   RDMA/atomic: rkey, PD, access rights, bounds
 *   GET_WQE      SEND, WRITE_WITH_IMM: consume a receive WQE, else RNR
 *   EXECUTE      move the payload / perform the atomic
 *   COMPLETE     push the responder's CQE, raise the SRQ limit event
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>
#include <sys/uio.h>

/* ---------------------------------------------------------------------
 * Memory movement
 * ------------------------------------------------------------------- */
static void sv_iov_copy(const struct iovec *dst, int dcnt,
                        const struct iovec *src, int scnt)
{
    size_t doff = 0, soff = 0, n;
    int d = 0, s = 0;

    while ((d < dcnt) && (s < scnt)) {
        n = dst[d].iov_len - doff;
        if (src[s].iov_len - soff < n) {
            n = src[s].iov_len - soff;
        }
        memcpy((char *)dst[d].iov_base + doff,
               (const char *)src[s].iov_base + soff, n);
        doff += n;
        soff += n;
        if (doff == dst[d].iov_len) {
            d++;
            doff = 0;
        }
        if (soff == src[s].iov_len) {
            s++;
            soff = 0;
        }
    }
}

static size_t sv_iov_len(const struct iovec *iov, int cnt)
{
    size_t len = 0;
    int i;

    for (i = 0; i < cnt; i++) {
        len += iov[i].iov_len;
    }
    return len;
}

/* Returns 0, or -ESRCH when the peer process is gone, -EFAULT otherwise */
static int sv_mem_xfer(int32_t pid, const struct iovec *liov, int lcnt,
                       const struct iovec *riov, int rcnt, int write)
{
    size_t total = sv_iov_len(liov, lcnt);
    ssize_t n;

    if (total == 0) {
        return 0;
    }
    if (pid == sv_g.pid) {
        if (write) {
            sv_iov_copy(riov, rcnt, liov, lcnt);
        } else {
            sv_iov_copy(liov, lcnt, riov, rcnt);
        }
        return 0;
    }
    n = write ? process_vm_writev(pid, liov, lcnt, riov, rcnt, 0) :
                process_vm_readv(pid, liov, lcnt, riov, rcnt, 0);
    if (n == (ssize_t)total) {
        return 0;
    }
    if (n < 0) {
        sv_error("process_vm_%sv(pid %d) failed: %m",
                 write ? "write" : "read", pid);
        return (errno == ESRCH) ? -ESRCH : -EFAULT;
    }
    /* partial: the kernel stops at the first unmapped page */
    sv_error("process_vm_%sv(pid %d): %zd of %zu bytes",
             write ? "write" : "read", pid, n, total);
    return -EFAULT;
}

int sv_mem_write(int32_t pid, const struct iovec *liov, int lcnt,
                 const struct iovec *riov, int rcnt)
{
    return sv_mem_xfer(pid, liov, lcnt, riov, rcnt, 1);
}

int sv_mem_read(int32_t pid, const struct iovec *liov, int lcnt,
                const struct iovec *riov, int rcnt)
{
    return sv_mem_xfer(pid, liov, lcnt, riov, rcnt, 0);
}

/* ---------------------------------------------------------------------
 * Responder
 * ------------------------------------------------------------------- */
static int sv_resp_check_qp(struct sv_resp_req *r, struct sv_shm_qp *dq)
{
    struct sv_shm_qp *sq = r->qp->shm;
    uint32_t st;

    if (dq == NULL) {
        return SV_RESP_NORESP;
    }
    st = __atomic_load_n(&dq->state, __ATOMIC_ACQUIRE);
    if ((st < IBV_QPS_RTR) || (st == IBV_QPS_ERR) || (dq->type != sq->type)) {
        return SV_RESP_NORESP; /* packets are silently dropped */
    }
    if (sq->type == IBV_QPT_UD) {
        if (dq->qkey != r->qkey) {
            return SV_RESP_NORESP; /* Q_Key violation: dropped */
        }
    } else if (dq->dest_qpn != sq->qpn) {
        return SV_RESP_NORESP;    /* not connected to us */
    }
    /* a dead peer is noticed by process_vm_*v failing with ESRCH */
    return SV_RESP_ACK;
}

/* rkey check (IBA spec 9.7.4.1.4 / 10.6.3): valid key of the responder,
 * same PD as the QP, access right granted, range inside the region */
static int sv_resp_check_rkey(struct sv_shm_qp *dq, uint32_t rkey,
                              uint64_t addr, uint64_t len, unsigned access,
                              struct iovec *riov)
{
    struct sv_shm_mr *m = sv_shm_mr_lookup(rkey);

    if (!(dq->access & access) || (m == NULL) || (m->pid != dq->pid) ||
        (m->pd_id != dq->pd_id) || !(m->access & access) ||
        (addr < m->addr) || (addr + len < addr) ||
        (addr + len > m->addr + m->len)) {
        return SV_RESP_NAK_ACCESS;
    }
    riov->iov_base = (void *)(uintptr_t)(m->va + (addr - m->addr));
    riov->iov_len  = len;
    return SV_RESP_ACK;
}

static struct sv_rq_hdr *sv_resp_rq(struct sv_shm_qp *dq,
                                    struct sv_shm_srq **srq)
{
    struct sv_shm_srq *s;

    *srq = NULL;
    if (dq->srq) {
        s = &sv_g.shm->srqs[dq->srq - 1];
        if (!__atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE)) {
            return NULL;
        }
        *srq = s;
        return sv_shm_ptr(s->ring_off);
    }
    return dq->rq_off ? sv_shm_ptr(dq->rq_off) : NULL;
}

static void sv_resp_srq_limit(struct sv_shm_srq *s, struct sv_rq_hdr *rq,
                              uint32_t index)
{
    struct sv_ev_msg msg;
    uint32_t limit = __atomic_load_n(&s->limit, __ATOMIC_ACQUIRE);

    /* man ibv_modify_srq: the event fires once when the number of WQEs
     * drops below the limit, which is then disarmed */
    if ((limit == 0) || (sv_rq_count(rq) >= limit) ||
        !__atomic_compare_exchange_n(&s->limit, &limit, 0, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        return;
    }
    memset(&msg, 0, sizeof(msg));
    msg.kind   = SV_EV_SRQ;
    msg.type   = IBV_EVENT_SRQ_LIMIT_REACHED;
    msg.index  = index;
    msg.cookie = s->cookie;
    sv_ev_send('a', s->ctx_id, &msg);
}

/* Receive WQE SGEs -> responder iovecs; returns the capacity or -1 */
static ssize_t sv_resp_recv_iov(struct sv_shm_qp *dq, struct sv_rwqe *w,
                                struct iovec *riov, int *cnt)
{
    struct sv_shm_mr *m;
    size_t total = 0;
    uint32_t i;
    int n = 0;

    for (i = 0; i < w->num_sge; i++) {
        struct ibv_sge *s = &w->sge[i];
        if (s->length == 0) {
            continue;
        }
        m = sv_shm_mr_lookup(s->lkey);
        if ((m == NULL) || (m->pid != dq->pid) || (m->pd_id != dq->pd_id) ||
            !(m->access & IBV_ACCESS_LOCAL_WRITE) || (s->addr < m->addr) ||
            (s->addr + s->length > m->addr + m->len)) {
            return -1;
        }
        riov[n].iov_base = (void *)(uintptr_t)(m->va + (s->addr - m->addr));
        riov[n].iov_len  = s->length;
        total += s->length;
        n++;
    }
    *cnt = n;
    return total;
}

/* Trim an iovec list to len bytes */
static int sv_iov_trim(struct iovec *iov, int cnt, size_t len)
{
    int i;

    for (i = 0; (i < cnt) && (len > 0); i++) {
        if (iov[i].iov_len >= len) {
            iov[i].iov_len = len;
            return i + 1;
        }
        len -= iov[i].iov_len;
    }
    return i;
}

static void sv_resp_build_grh(struct sv_resp_req *r, struct ibv_grh *grh,
                              uint32_t paylen)
{
    memset(grh, 0, sizeof(*grh));
    /* IPVer 6, TClass 0, flow label 0 (IBA spec 8.3.1 GRH format) */
    grh->version_tclass_flow = htobe32(6u << 28);
    grh->paylen    = htobe16(paylen);
    grh->next_hdr  = 0x1b;
    grh->hop_limit = 0xff;
    sv_device_gid(r->qp->shm->dev, &grh->sgid);
    if (r->wqe->ud_has_grh) {
        grh->dgid = r->wqe->ud_dgid;
    } else {
        sv_device_gid(0, &grh->dgid);
    }
}

static int sv_resp_recv(struct sv_resp_req *r, struct sv_shm_qp *dq,
                        struct iovec *data, int dcnt, int opcode,
                        uint64_t wlen)
{
    struct sv_rwqe *rw = alloca(sizeof(*rw) + SV_MAX_SGE *
                                sizeof(struct ibv_sge));
    struct iovec riov[SV_MAX_SGE];
    struct iovec liov[SV_MAX_SGE + 2];
    int ud = (dq->type == IBV_QPT_UD);
    struct sv_swqe *w = r->wqe;
    struct sv_shm_srq *srq;
    struct sv_rq_hdr *rq;
    struct sv_cqe_inl inl;
    struct ibv_grh grh;
    struct sv_cqe c;
    ssize_t cap;
    size_t len;
    int rcnt = 0, lcnt = 0, ret, i;

    rq = sv_resp_rq(dq, &srq);
    if ((rq == NULL) || !sv_rq_take(rq, rw)) {
        sv_error("qp 0x%x: no receive WQE (RNR)", dq->qpn);
        r->min_rnr_timer = dq->min_rnr_timer;
        return SV_RESP_RNR;
    }
    if (srq != NULL) {
        sv_resp_srq_limit(srq, rq, dq->srq - 1);
    }
    memset(&c, 0, sizeof(c));
    c.wr_id  = rw->wr_id;
    c.qp_num = dq->qpn;
    c.opcode = (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ?
               IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
    c.src_qp = r->qp->shm->qpn;
    c.slid   = r->qp->shm->dev + 1;
    if ((opcode == IBV_WR_SEND_WITH_IMM) ||
        (opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        c.imm_data  = w->imm_data;
        c.wc_flags |= IBV_WC_WITH_IMM;
    }

    ret = SV_RESP_ACK;
    if (opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        c.byte_len = wlen;
        goto complete;
    }
    len = sv_iov_len(data, dcnt) + (ud ? SV_GRH_LEN : 0);
    cap = sv_resp_recv_iov(dq, rw, riov, &rcnt);
    if (cap < 0) {
        c.status = IBV_WC_LOC_PROT_ERR;
        ret = ud ? SV_RESP_ACK : SV_RESP_NAK_OP;
        goto complete;
    }
    if ((size_t)cap < len) {
        c.status = IBV_WC_LOC_LEN_ERR;
        ret = ud ? SV_RESP_ACK : SV_RESP_NAK_INV;
        goto complete;
    }
    if (ud) {
        sv_resp_build_grh(r, &grh, len - SV_GRH_LEN);
        liov[lcnt].iov_base = &grh;
        liov[lcnt].iov_len  = SV_GRH_LEN;
        lcnt++;
        c.wc_flags |= IBV_WC_GRH;
    }
    memcpy(&liov[lcnt], data, dcnt * sizeof(*data));
    lcnt += dcnt;
    rcnt  = sv_iov_trim(riov, rcnt, len);
    c.byte_len = len;
    if ((dq->pid != sv_g.pid) && (len <= SV_CQE_INL) &&
        (rcnt <= SV_CQE_INL_SGE)) {
        /* small payload: carried in the CQ slot (see struct sv_cqe_inl) */
        struct iovec dst = { inl.data, len };
        sv_iov_copy(&dst, 1, liov, lcnt);
        for (i = 0; i < rcnt; i++) {
            inl.va[i]  = (uintptr_t)riov[i].iov_base;
            inl.len[i] = riov[i].iov_len;
        }
        c.inl_len  = len;
        c.inl_nsge = rcnt;
        goto complete;
    }
    if (sv_mem_write(dq->pid, liov, lcnt, riov, rcnt) < 0) {
        return SV_RESP_NORESP;
    }

complete:
    if (c.status != IBV_WC_SUCCESS) {
        sv_error("qp 0x%x: receive WQE error %s", dq->qpn,
                 ibv_wc_status_str(c.status));
    }
    sv_cq_push(dq->rcq, &c, &inl, !!(w->send_flags & IBV_SEND_SOLICITED));
    return ret;
}

static int sv_resp_atomic(struct sv_resp_req *r, struct sv_shm_qp *dq)
{
    struct sv_swqe *w = r->wqe;
    struct iovec riov, liov;
    uint64_t old, val;
    int ret;

    if (w->remote_addr & 7) {
        return SV_RESP_NAK_INV; /* misaligned atomic */
    }
    ret = sv_resp_check_rkey(dq, w->rkey, w->remote_addr, 8,
                             IBV_ACCESS_REMOTE_ATOMIC, &riov);
    if (ret != SV_RESP_ACK) {
        return ret;
    }
    liov.iov_base = &old;
    liov.iov_len  = 8;
    /* one host-wide lock: atomics are atomic against each other */
    sv_atomic_lock();
    if (sv_mem_read(dq->pid, &liov, 1, &riov, 1) < 0) {
        sv_atomic_unlock();
        return SV_RESP_NORESP;
    }
    if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
        val = (old == w->compare_add) ? w->swap : old;
    } else {
        val = old + w->compare_add;
    }
    liov.iov_base = &val;
    if ((val != old) && (sv_mem_write(dq->pid, &liov, 1, &riov, 1) < 0)) {
        sv_atomic_unlock();
        return SV_RESP_NORESP;
    }
    sv_atomic_unlock();
    /* the original value lands in the requester's local buffer */
    memcpy(r->liov[0].iov_base, &old, 8);
    return SV_RESP_ACK;
}

int sv_resp_execute(struct sv_resp_req *r)
{
    struct sv_swqe *w = r->wqe;
    struct sv_shm_qp *dq = sv_shm_qp_lookup(r->dest_qpn);
    struct iovec riov;
    int ret;

    ret = sv_resp_check_qp(r, dq);
    if (ret != SV_RESP_ACK) {
        return ret;
    }
    switch (w->opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return sv_resp_recv(r, dq, r->liov, r->liovcnt, w->opcode, 0);
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        if (w->length > 0) {
            ret = sv_resp_check_rkey(dq, w->rkey, w->remote_addr, w->length,
                                     IBV_ACCESS_REMOTE_WRITE, &riov);
            if (ret != SV_RESP_ACK) {
                return ret;
            }
        }
        if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
            /* a receive WQE must be there before the data is placed */
            struct sv_shm_srq *srq;
            struct sv_rq_hdr *rq = sv_resp_rq(dq, &srq);
            if ((rq == NULL) || (sv_rq_count(rq) == 0)) {
                r->min_rnr_timer = dq->min_rnr_timer;
                return SV_RESP_RNR;
            }
        }
        if ((w->length > 0) &&
            (sv_mem_write(dq->pid, r->liov, r->liovcnt, &riov, 1) < 0)) {
            return SV_RESP_NORESP;
        }
        if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
            return sv_resp_recv(r, dq, NULL, 0, w->opcode, w->length);
        }
        return SV_RESP_ACK;
    case IBV_WR_RDMA_READ:
        if (w->length == 0) {
            return SV_RESP_ACK;
        }
        ret = sv_resp_check_rkey(dq, w->rkey, w->remote_addr, w->length,
                                 IBV_ACCESS_REMOTE_READ, &riov);
        if (ret != SV_RESP_ACK) {
            return ret;
        }
        if (sv_mem_read(dq->pid, r->liov, r->liovcnt, &riov, 1) < 0) {
            return SV_RESP_NORESP;
        }
        return SV_RESP_ACK;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return sv_resp_atomic(r, dq);
    default:
        return SV_RESP_NAK_INV;
    }
}
