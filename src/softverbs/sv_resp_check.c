/*
 * softverbs responder's checks and lookups, called by its state machine
 * (sv_resp.c): whether the destination QP takes a request (alive, type,
 * state, DC key, RoCE route), the rkey of an RDMA or atomic request (IBA
 * 9.7.4.1.4, as rxe's check_rkey), the receive queue a message consumes
 * and its WQE's buffers, and the GRH a UD receive gets. The holds on MRs
 * it takes are sv_obj.c's.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>
#include <errno.h>
#include <sched.h>
#include <sys/uio.h>

/*
 * A dead peer is noticed by process_vm_*v failing with ESRCH, but a
 * payload carried in the CQ slot, or none, makes no such call: the peer is
 * probed by reading one byte of its QP object (the cookie), at most once a
 * millisecond per requester QP (qp->lock held), so that a request to it
 * gets no response, as a destroyed QP's. A zombie fails the read too. The
 * millisecond is the coarse clock's (it moves at the kernel's tick): the
 * precise one, read on every request, was a tenth of an 8-byte am_bw
 * sender's time under a hypervisor's clock source.
 */
int sv_resp_peer_alive(struct sv_qp *qp, struct sv_shm_qp *dq)
{
    struct iovec liov, riov;
    uint64_t now;
    char c;

    if (dq->pid == sv_g.pid) {
        return 1;
    }
    now = sv_now_coarse_ns();
    if (now - qp->peer_probe_ns < 1000000ull) {
        return 1;
    }
    qp->peer_probe_ns = now;
    liov.iov_base = &c;
    liov.iov_len  = 1;
    riov.iov_base = (void *)(uintptr_t)dq->cookie;
    riov.iov_len  = 1;
    if (sv_mem_read(dq->pid, &liov, 1, &riov, 1) == -ESRCH) {
        sv_error("qp 0x%x: peer pid %d of qp 0x%x is gone", qp->shm->qpn,
                 dq->pid, dq->qpn);
        return 0;
    }
    return 1;
}

/*
 * A DC request whose key is not the DCT's. The DCT counts the violation
 * (the dctc field dc_access_key_violation_count of the mlx5 PRM) and drops
 * the packet without a response: the DCI retries until it completes with
 * IBV_WC_RETRY_EXC_ERR and goes to ERR. Nothing is written, no event is
 * raised (a DCT reports no async events: the kernel's qpc.c passes only
 * DCT_DRAINED for DCTs), and the DCT keeps serving its other initiators.
 */
static int sv_resp_dc_key_violation(struct sv_resp_req *r,
                                    struct sv_shm_qp *dq)
{
    /* relaxed: a statistic; requesters of any process add to it */
    __atomic_fetch_add(&dq->dc_key_violations, 1, __ATOMIC_RELAXED);
    sv_error("dct 0x%x: request from dci 0x%x with a wrong DC key, dropped",
             dq->qpn, r->qp->shm->qpn);
    return SV_RESP_NORESP;
}

/* A RoCE packet reaches dq: its AV (the WR's for UD and DC, the QP's for
 * RC and UC) names one of dq's GIDs, of the sender GID's type */
static int sv_resp_roce_route(struct sv_resp_req *r, struct sv_shm_qp *dq)
{
    struct sv_shm_qp *sq = r->qp->shm;

    if ((sq->type == IBV_QPT_UD) || (sq->type == SV_QPT_DCI)) {
        return sv_gid_route(sq, r->wqe->ud_sgid_index, r->wqe->ud_has_grh,
                            &r->wqe->ud_dgid, dq);
    }
    return sv_gid_route(sq, r->qp->attr.ah_attr.grh.sgid_index,
                        r->qp->attr.ah_attr.is_global,
                        &r->qp->attr.ah_attr.grh.dgid, dq);
}

/* The responder type of a requester type (DCI: DCT, XRC_SEND: RECV) */
static uint8_t sv_resp_peer_type(uint8_t type)
{
    switch (type) {
    case SV_QPT_DCI:
        return SV_QPT_DCT;
    case IBV_QPT_XRC_SEND:
        return IBV_QPT_XRC_RECV;
    default:
        return type;
    }
}

int sv_resp_check_qp(struct sv_resp_req *r, struct sv_shm_qp *dq)
{
    struct sv_shm_qp *sq = r->qp->shm;
    uint16_t dlid;
    uint32_t st;

    if (dq == NULL) {
        return SV_RESP_NORESP;
    }
    /* the responder's attributes (dest QPN, access, Q_Key) were stored
     * before its state (ibv_modify_qp) */
    st = sv_qp_state(dq);
    if ((st < IBV_QPS_RTR) || (st == IBV_QPS_ERR) ||
        (dq->type != sv_resp_peer_type(sq->type))) {
        return SV_RESP_NORESP; /* packets are silently dropped */
    }
    /* a port taken down passes nothing, either way (sv_port.c) */
    if (!sv_port_is_up(sq->dev, sq->port) || !sv_port_is_up(dq->dev, dq->port)) {
        return SV_RESP_NORESP;
    }
    /* the packet goes to the port of the destination LID: the QP must be
     * on that port (multicast LIDs were resolved by the requester) */
    dlid = ((sq->type == IBV_QPT_UD) || (sq->type == SV_QPT_DCI)) ?
           r->wqe->ud_dlid : r->qp->attr.ah_attr.dlid;
    if (sv_port_is_eth(sq->port) || sv_port_is_eth(dq->port)) {
        /* RoCE: by the GRH, of the right GID type (sv_gid_route) */
        if (!sv_resp_roce_route(r, dq)) {
            return SV_RESP_NORESP;
        }
    } else if ((dlid != 0) && (dlid < SV_MCAST_LID_BASE) &&
               (dlid != sv_port_lid(dq->dev, dq->port))) {
        return SV_RESP_NORESP;
    }
    if (sq->type == IBV_QPT_UD) {
        if (dq->qkey != r->qkey) {
            return SV_RESP_NORESP; /* Q_Key violation: dropped */
        }
    } else if (sq->type == SV_QPT_DCI) {
        if (dq->dc_key != r->dc_key) {
            return sv_resp_dc_key_violation(r, dq);
        }
    } else if (dq->dest_qpn != sq->qpn) {
        return SV_RESP_NORESP;    /* not connected to us */
    }
    /* an XRC target's SRQ's process is probed (sv_resp_st_check_qp) */
    if ((dq->type != IBV_QPT_XRC_RECV) && !sv_resp_peer_alive(r->qp, dq)) {
        return SV_RESP_NORESP;
    }
    return SV_RESP_ACK;
}

/* rkey check (IBA spec 9.7.4.1.4 / 10.6.3): valid key of the responder,
 * same PD as the QP, access right granted, range inside the region. The
 * key of a memory window is checked against the window (sv_mw.c, as rxe's
 * check_rkey takes rkey_is_mw keys to rxe_lookup_mw) */
int sv_resp_check_rkey(struct sv_shm_qp *dq, uint32_t rkey,
                       uint64_t addr, uint64_t len, unsigned access,
                       struct iovec *riov, struct sv_mr_holds *holds)
{
    struct sv_shm_mr *m;
    uint32_t gen;
    int ret;

    if (sv_key_is_mw(rkey)) {
        return (dq->access & access) ?
               sv_mw_check_rkey(dq, rkey, addr, len, access, riov, holds) :
               SV_RESP_NAK_ACCESS;
    }
again:
    m   = sv_shm_mr_lookup(rkey);
    gen = (m != NULL) ? sv_mr_gen(m) : 0;
    if (!(dq->access & access) || (m == NULL) || (m->pid != dq->pid) ||
        (m->pd_id != dq->pd_id) || !(m->access & access) ||
        (addr < m->addr) || (addr + len < addr) ||
        (addr + len > m->addr + m->len)) {
        return SV_RESP_NAK_ACCESS;
    }
    /* the request's only hold: it waits for a slot (never -2) */
    ret = sv_mr_hold_checked(holds, m, rkey, gen);
    if (ret == -3) {
        goto again; /* reregistered meanwhile */
    }
    if (ret != 0) {
        return SV_RESP_NAK_ACCESS;
    }
    riov->iov_base = (void *)(uintptr_t)(m->va + (addr - m->addr));
    riov->iov_len  = len;
    return SV_RESP_ACK;
}

struct sv_rq_hdr *sv_resp_rq(struct sv_shm_qp *dq, struct sv_shm_srq **srq)
{
    struct sv_shm_srq *s;

    *srq = NULL;
    if (dq->srq) {
        s = &sv_g.shm->srqs[dq->srq - 1];
        /* acquire: the ring offset is valid once in_use is seen */
        if (!__atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE)) {
            return NULL;
        }
        *srq = s;
        return sv_shm_ptr(s->ring_off);
    }
    return dq->rq_off ? sv_shm_ptr(dq->rq_off) : NULL;
}

void sv_resp_srq_limit(struct sv_shm_srq *s, struct sv_rq_hdr *rq,
                       uint32_t index)
{
    /* acquire/CAS: exactly one consumer fires the event and disarms */
    uint32_t limit = __atomic_load_n(&s->limit, __ATOMIC_ACQUIRE);

    /* man ibv_modify_srq: the event fires once when the number of WQEs
     * drops below the limit, which is then disarmed */
    if ((limit == 0) || (sv_rq_count(rq) >= limit) ||
        !__atomic_compare_exchange_n(&s->limit, &limit, 0, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        return;
    }
    sv_ev_async(s->ctx_id, SV_EV_SRQ, IBV_EVENT_SRQ_LIMIT_REACHED, index,
                s->cookie);
}

/* Receive WQE SGEs -> responder iovecs; returns the capacity or -1 */
ssize_t sv_resp_recv_iov(struct sv_shm_qp *dq, struct sv_rwqe *w,
                         struct iovec *riov, int *cnt,
                         struct sv_mr_holds *holds)
{
    int keep = holds->n;
    struct sv_shm_mr *m;
    uint32_t i, gen;
    size_t total;
    int n, ret;

again:
    total = 0;
    n     = 0;
    for (i = 0; i < w->num_sge; i++) {
        struct ibv_sge *s = &w->sge[i];
        if (s->length == 0) {
            continue;
        }
        m   = sv_shm_mr_lookup(s->lkey);
        gen = (m != NULL) ? sv_mr_gen(m) : 0;
        if ((m == NULL) || (m->pid != dq->pid) || (m->pd_id != dq->pd_id) ||
            !(m->access & IBV_ACCESS_LOCAL_WRITE) || (s->addr < m->addr) ||
            (s->addr + s->length > m->addr + m->len)) {
            return -1;
        }
        ret = sv_mr_hold_checked(holds, m, s->lkey, gen);
        if ((ret == -2) || (ret == -3)) {
            /* out of slots (all or none), or reregistered meanwhile */
            sv_mr_release(holds, keep);
            sched_yield();
            goto again;
        }
        if (ret != 0) {
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

void sv_resp_build_grh(struct sv_resp_req *r, struct ibv_grh *grh,
                       uint32_t paylen)
{
    if (sv_port_is_eth(r->qp->shm->port)) {
        sv_gid_build_roce_grh(r->qp->shm, r->wqe->ud_sgid_index,
                              &r->wqe->ud_dgid, paylen, grh);
        return;
    }
    memset(grh, 0, sizeof(*grh));
    /* IPVer 6, TClass 0, flow label 0 (IBA spec 8.3.1 GRH format) */
    grh->version_tclass_flow = htobe32(6u << 28);
    grh->paylen    = htobe16(paylen);
    grh->next_hdr  = 0x1b;
    grh->hop_limit = 0xff;
    sv_device_gid(r->qp->shm->dev, r->qp->shm->port, &grh->sgid);
    if (r->wqe->ud_has_grh) {
        grh->dgid = r->wqe->ud_dgid;
    } else if ((r->wqe->ud_dlid < SV_MCAST_LID_BASE) &&
               (sv_device_by_lid(r->wqe->ud_dlid) != NULL)) {
        sv_device_gid(sv_device_by_lid(r->wqe->ud_dlid)->index,
                      sv_lid_port(r->wqe->ud_dlid), &grh->dgid);
    }
}
