/*
 * softverbs memory windows: ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw
 * (type 1), and the window side of the data path: binding (IBV_WR_BIND_MW,
 * run by the requester), invalidation (IBV_WR_LOCAL_INV by the requester,
 * IBV_WR_SEND_WITH_INV by the responder) and the responder's check of a
 * window's rkey.
 *
 * The semantics are Linux rxe's (drivers/infiniband/sw/rxe/rxe_mw.c), which
 * implements type 1 and type 2B windows after IBTA vol 1 10.6.7; the clause
 * numbers in the comments are the ones rxe cites. Where softverbs checks
 * more than rxe, the comment says so.
 *
 * Window states (enum sv_mw_state, rxe's rxe_mw_state):
 *
 *   alloc type 1 --> VALID (length 0: unbound) --bind--> VALID (bound)
 *                      ^------------- bind of length 0 ------'
 *   alloc type 2 --> FREE --bind--> VALID --LOCAL_INV / SEND_WITH_INV--> FREE
 *   dealloc (any state) --> INVALID (the slot is free)
 *
 * A window lives in the registry (struct sv_shm_mw), since responders of
 * other processes check it. Every change is made under the registry lock
 * and inside a write of the window's sequence lock; a responder reads a
 * consistent copy without a lock (sv_mw_read). A bind takes a new rkey: the
 * window's index bits and the 8-bit key the consumer chose (ibv_inc_rkey),
 * so a key handed out before the bind no longer matches.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* The access a bind may give (rxe: RXE_ACCESS_SUPPORTED_MW, the MR flags
 * and zero-based); another bit fails the bind (rxe_bind_mw: -EOPNOTSUPP,
 * a bind error completion) */
#define SV_MW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
                      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
                      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_RELAXED_ORDERING)

/* Registry slot of a window key, 0 for none (slot 0 is never used) */
static uint32_t sv_mw_index(uint32_t key)
{
    uint32_t i = (key >> 8) - SV_MW_KEY_BASE;

    return (sv_key_is_mw(key) && (i < SV_MW_TBL)) ? i : 0;
}

/* ---------------------------------------------------------------------
 * Sequence lock: writers hold the registry lock
 * ------------------------------------------------------------------- */
static void sv_mw_write_begin(struct sv_shm_mw *m)
{
    /* odd; already odd if a writer died in the middle (EOWNERDEAD) */
    __atomic_store_n(&m->seq, m->seq | 1, __ATOMIC_RELAXED);
    /* the odd sequence is visible before any field changes */
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void sv_mw_write_end(struct sv_shm_mw *m)
{
    /* release: the fields are written before the even sequence */
    __atomic_store_n(&m->seq, m->seq + 1, __ATOMIC_RELEASE);
}

/* A consistent copy of slot i: 0, or -1 when a writer never finished (it
 * died holding the registry lock): the window is then taken as invalid */
static int sv_mw_read(uint32_t i, struct sv_shm_mw *out)
{
    struct sv_shm_mw *m = &sv_g.shm->mws[i];
    uint32_t s1, n;

    for (n = 0; n < 100000; n++) {
        /* acquire: the fields read below are at least this new */
        s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            memcpy(out, m, sizeof(*out));
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) == s1) {
                return 0;
            }
        }
        if (n > 64) {
            sched_yield();
        }
    }
    return -1;
}

/* The window no longer holds its MR (under the lock) */
static void sv_mw_release_mr(struct sv_shm_mw *m)
{
    struct sv_shm_mr *mr = m->mr_key ? sv_shm_mr_lookup(m->mr_key) : NULL;

    if ((mr != NULL) && (mr->num_mw > 0)) {
        mr->num_mw--;
    }
    m->mr_key = 0;
}

/*
 * A key the window no longer has (invalidated, rebound, deallocated; the
 * change made and the registry lock released): a transfer of any process
 * that passed its check before moves its data first, as an HCA finishes or
 * stops every access through a window before the operation that ends it
 * completes. Transfers hold a window's key as they hold an MR's
 * (sv_mw_check_rkey, sv_mr_wait_unheld: the Dekker pattern of
 * sv_resp_check.c, the fence here on the writer's side)
 */
static void sv_mw_wait_unheld(uint32_t old_rkey)
{
    /* the window's change is visible before the holds are read */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    sv_mr_wait_unheld(old_rkey);
}

/* A transfer can pass the window's check (sv_mw_check_rkey) */
static int sv_mw_live(const struct sv_shm_mw *m)
{
    return m->in_use && (m->state == SV_MW_VALID) && (m->len != 0);
}

/* ---------------------------------------------------------------------
 * Allocation (rxe_alloc_mw, rxe_dealloc_mw)
 * ------------------------------------------------------------------- */
static struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_mw *m = NULL;
    struct sv_mw *mw;
    uint32_t i = 0, n;

    /* the kernel's ib_uverbs_alloc_mw passes the type on; rxe knows 1 and
     * 2 (IB_MW_TYPE_1/_2), anything else is no window */
    if ((type != IBV_MW_TYPE_1) && (type != IBV_MW_TYPE_2)) {
        errno = EINVAL;
        return NULL;
    }
    mw = calloc(1, sizeof(*mw));
    if (mw == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    if (h->num_mw >= SV_MW_TBL - 1) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (n = 0; n < SV_MW_TBL; n++) {
        i = (h->mw_cursor + n) & (SV_MW_TBL - 1);
        if ((i != 0) && !h->mws[i].in_use) {
            m = &h->mws[i];
            break;
        }
    }
    if (m == NULL) {
        sv_shm_unlock();
        sv_error("cannot allocate MW: limit %u reached", SV_MW_TBL - 1);
        free(mw);
        errno = ENOMEM;
        return NULL;
    }
    h->mw_cursor = i + 1;
    h->mw_gen[i]++;
    sv_mw_write_begin(m);
    m->rkey   = ((SV_MW_KEY_BASE + i) << 8) | h->mw_gen[i];
    m->proc   = sv_g.proc;
    m->pid    = sv_g.pid;
    m->pd_id  = sv_pd(pd)->pd_id;
    m->type   = type;
    /* rxe_alloc_mw: type 2 starts FREE, type 1 VALID (and unbound) */
    m->state  = (type == IBV_MW_TYPE_2) ? SV_MW_FREE : SV_MW_VALID;
    m->access = 0;
    m->mr_key = 0;
    m->qpn    = 0;
    m->addr   = 0;
    m->len    = 0;
    m->in_use = 1;
    sv_mw_write_end(m);
    h->num_mw++;
    sv_shm_unlock();

    sv_pd_ref(pd, 1);
    mw->index     = i;
    mw->mw.context = pd->context;
    mw->mw.pd      = pd;
    mw->mw.rkey    = m->rkey;
    mw->mw.handle  = i;
    mw->mw.type    = type;
    return &mw->mw;
}

/* Deallocation unbinds a bound window (rxe_mw_cleanup) and frees the slot:
 * its rkey is then refused like any unknown key */
static int sv_dealloc_mw(struct ibv_mw *ibmw)
{
    struct sv_mw *mw = sv_container_of(ibmw, struct sv_mw, mw);
    struct sv_shm_mw *m = &sv_g.shm->mws[mw->index];
    uint32_t old_rkey = 0;

    sv_shm_lock();
    if (m->in_use && (m->pid == sv_g.pid)) {
        old_rkey = sv_mw_live(m) ? m->rkey : 0;
        sv_mw_write_begin(m);
        sv_mw_release_mr(m);
        m->state  = SV_MW_INVALID;
        m->len    = 0;
        m->access = 0;
        m->in_use = 0;
        sv_mw_write_end(m);
        sv_g.shm->num_mw--;
    }
    sv_shm_unlock();
    if (old_rkey != 0) {
        sv_mw_wait_unheld(old_rkey);
    }
    sv_pd_ref(ibmw->pd, -1);
    free(mw);
    return 0;
}

/*
 * ibv_bind_mw(3), type 1 windows: libibverbs has checked the type, an MR
 * for a range and the PDs (EINVAL, EPERM); as rxe's provider (rdma-core
 * providers/rxe/rxe.c, rxe_bind_mw) a zero-based window is EINVAL, and the
 * bind is posted as an IBV_WR_BIND_MW work request whose new rkey is the
 * window's with the next 8-bit key (ibv_inc_rkey). The window's rkey is
 * updated when the post succeeds; the man page leaves it to the caller to
 * restore it if the completion reports an error.
 */
static int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
                      struct ibv_mw_bind *mw_bind)
{
    struct ibv_send_wr wr, *bad;
    int ret;

    if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) {
        errno = EINVAL;
        return EINVAL;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id             = mw_bind->wr_id;
    wr.opcode            = IBV_WR_BIND_MW;
    wr.send_flags        = mw_bind->send_flags;
    wr.bind_mw.mw        = mw;
    wr.bind_mw.rkey      = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = mw_bind->bind_info;
    /* through the context's post_send, as libibverbs' inline does: the
     * window verbs stand below the send queue's (sv_post.c), which calls
     * into them when the WR executes */
    ret = ibv_post_send(qp, &wr, &bad);
    if (ret != 0) {
        errno = ret;
        return ret;
    }
    mw->rkey = wr.bind_mw.rkey;
    return 0;
}

void sv_mw_init_ops(struct verbs_context *v)
{
    v->context.ops.alloc_mw   = sv_alloc_mw;
    v->context.ops.bind_mw    = sv_bind_mw;
    v->context.ops.dealloc_mw = sv_dealloc_mw;
}

/* ---------------------------------------------------------------------
 * Binding (rxe_bind_mw, rxe_check_bind_mw, rxe_do_bind_mw)
 * ------------------------------------------------------------------- */

/* Why window m cannot be bound by w on qp (NULL: it can). mr is the MR
 * of the lkey, NULL for a bind of length 0 */
static const char *sv_mw_check_bind(const struct sv_qp *qp,
                                    const struct sv_swqe *w,
                                    const struct sv_shm_mw *m,
                                    const struct sv_shm_mr *mr)
{
    unsigned access = w->bind_access;

    if (access & ~SV_MW_ACCESS) {
        return "access flags not supported";
    }
    if (m->type == IBV_MW_TYPE_1) {
        if (m->state != SV_MW_VALID) {
            return "type 1 window not valid";
        }
        if (access & IBV_ACCESS_ZERO_BASED) {
            return "zero-based type 1 window (o10-36.2.2)";
        }
    } else {
        if (m->state != SV_MW_FREE) {
            return "type 2 window not free (o10-37.2.30)";
        }
        if (qp->shm->pd_id != m->pd_id) {
            return "QP of another PD (C10-72)";
        }
        if ((mr == NULL) || (w->bind_len == 0)) {
            return "type 2 bind without an MR or of length 0 "
                   "(o10-37.2.40)";
        }
    }
    if (mr == NULL) {
        return NULL; /* type 1 unbind */
    }
    /* the MR and the window share a PD: libibverbs' ibv_bind_mw refuses
     * it with EPERM; a type 2 bind posted directly is checked here (rxe
     * does not check it) */
    if (mr->pd_id != m->pd_id) {
        return "MR of another PD";
    }
    if (mr->access & IBV_ACCESS_ZERO_BASED) {
        return "zero-based MR";
    }
    if (!(mr->access & IBV_ACCESS_MW_BIND)) {
        return "MR without IBV_ACCESS_MW_BIND (C10-73)";
    }
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & IBV_ACCESS_LOCAL_WRITE)) {
        return "writable window on an MR without local write (C10-74)";
    }
    /* C10-75: the window lies within the MR. rxe checks only the length
     * of a zero-based window; its start is an address of the MR too */
    if ((w->remote_addr < mr->addr) ||
        (w->remote_addr + w->bind_len < w->remote_addr) ||
        (w->remote_addr + w->bind_len > mr->addr + mr->len)) {
        return "range outside the MR (C10-75)";
    }
    return NULL;
}

static void sv_mw_do_bind(const struct sv_qp *qp, const struct sv_swqe *w,
                          struct sv_shm_mw *m, struct sv_shm_mr *mr)
{
    sv_mw_write_begin(m);
    m->rkey   = (m->rkey & ~0xffu) | (w->rkey & 0xffu);
    m->access = w->bind_access;
    m->state  = SV_MW_VALID;
    m->addr   = w->remote_addr;
    m->len    = w->bind_len;
    sv_mw_release_mr(m);
    if (m->len != 0) {
        m->mr_key = mr->key;
        mr->num_mw++;
    }
    /* a type 2 window is bound to the QP that bound it (type 2B) */
    m->qpn = (m->type == IBV_MW_TYPE_2) ? qp->shm->qpn : 0;
    sv_mw_write_end(m);
}

static int sv_mw_bind(struct sv_qp *qp, struct sv_swqe *w)
{
    uint32_t i = sv_mw_index(w->mw_rkey);
    struct sv_shm_mw *m = &sv_g.shm->mws[i];
    struct sv_shm_mr *mr = NULL;
    const char *why = NULL;
    uint32_t old_rkey = 0;

    sv_shm_lock();
    if ((i == 0) || !m->in_use || (m->rkey != w->mw_rkey) ||
        (m->pid != sv_g.pid)) {
        why = "no window of this process has the key";
    } else if (w->bind_len != 0) {
        mr = sv_shm_mr_lookup(w->mr_lkey);
        if ((mr == NULL) || (mr->pid != sv_g.pid)) {
            why = "no MR of this process has the lkey";
        }
    }
    if (why == NULL) {
        why = sv_mw_check_bind(qp, w, m, mr);
    }
    if (why == NULL) {
        /* a rebind (type 1) ends the accesses of the key before */
        old_rkey = sv_mw_live(m) ? m->rkey : 0;
        sv_mw_do_bind(qp, w, m, mr);
    }
    sv_shm_unlock();
    if (why != NULL) {
        sv_error("qp 0x%x: bind of mw 0x%x failed: %s", qp->shm->qpn,
                 w->mw_rkey, why);
        return SV_RESP_MW_BIND;
    }
    if (old_rkey != 0) {
        sv_mw_wait_unheld(old_rkey);
    }
    return SV_RESP_ACK;
}

/* ---------------------------------------------------------------------
 * Invalidation (rxe_invalidate_mw, rxe_check_invalidate_mw)
 * ------------------------------------------------------------------- */

/* Invalidate the window of rkey, on behalf of a QP of process pid, PD
 * pd_id, number qpn (under the lock). NULL, or why not */
static const char *sv_mw_invalidate(uint32_t rkey, int32_t pid,
                                    uint32_t pd_id, uint32_t qpn)
{
    uint32_t i = sv_mw_index(rkey);
    struct sv_shm_mw *m = &sv_g.shm->mws[i];

    /* an MR key: rxe invalidates only fast-registration MRs
     * (rxe_invalidate_mr: IB_MR_TYPE_MEM_REG), which verbs programs
     * cannot create; softverbs has none */
    if (!sv_key_is_mw(rkey)) {
        return "the key is an MR's";
    }
    if ((i == 0) || !m->in_use || (m->rkey != rkey) || (m->pid != pid) ||
        (m->state == SV_MW_INVALID)) {
        return "no window has the key";
    }
    if (m->type == IBV_MW_TYPE_1) {
        return "type 1 window (o10-37.2.26)";
    }
    /* rxe takes a FREE window too (and would drop a QP reference it does
     * not hold); an unbound window has nothing to invalidate */
    if (m->state != SV_MW_VALID) {
        return "window not bound";
    }
    /* the PD and, for type 2B, the QP the window was bound through:
     * mlx5 checks the QP number of a type 2 window on invalidation
     * (set_umr_control_seg: MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN); rxe checks
     * neither */
    if ((m->pd_id != pd_id) || (m->qpn != qpn)) {
        return "window of another PD or QP";
    }
    sv_mw_write_begin(m);
    sv_mw_release_mr(m);
    m->state  = SV_MW_FREE;
    m->access = 0;
    m->addr   = 0;
    m->len    = 0;
    m->qpn    = 0;
    sv_mw_write_end(m);
    return NULL;
}

/* IBV_WR_BIND_MW and IBV_WR_LOCAL_INV, executed by the requester in order
 * with the QP's other WQEs (rxe_do_local_ops): a bind that fails completes
 * with IBV_WC_MW_BIND_ERR, an invalidation with IBV_WC_LOC_QP_OP_ERR, and
 * the QP goes to the error state as for any completion error */
int sv_mw_local_op(struct sv_qp *qp, struct sv_swqe *w)
{
    const char *why;

    if (w->opcode == IBV_WR_BIND_MW) {
        return sv_mw_bind(qp, w);
    }
    sv_shm_lock();
    why = sv_mw_invalidate(w->imm_data, sv_g.pid, qp->shm->pd_id,
                           qp->shm->qpn);
    sv_shm_unlock();
    if (why != NULL) {
        sv_error("qp 0x%x: local invalidation of 0x%x failed: %s",
                 qp->shm->qpn, w->imm_data, why);
        return SV_RESP_LOC_QP_OP;
    }
    sv_mw_wait_unheld(w->imm_data);
    return SV_RESP_ACK;
}

/* IBV_WR_SEND_WITH_INV at the responder QP dq (IBTA vol 1 9.7.5 remote
 * invalidate; rxe_resp.c execute/invalidate_rkey): the window of the
 * responder's process, PD and QP is invalidated. 0, or -1 (rxe: the
 * receive WQE completes with IBV_WC_REM_INV_REQ_ERR, the QP goes to ERR) */
int sv_mw_remote_invalidate(const struct sv_shm_qp *dq, uint32_t rkey)
{
    const char *why;

    sv_shm_lock();
    why = sv_mw_invalidate(rkey, dq->pid, dq->pd_id, dq->qpn);
    sv_shm_unlock();
    if (why != NULL) {
        sv_error("qp 0x%x: remote invalidation of 0x%x failed: %s",
                 dq->qpn, rkey, why);
        return -1;
    }
    sv_mw_wait_unheld(rkey);
    return 0;
}

/* ---------------------------------------------------------------------
 * Responder: rkey of a window (rxe_lookup_mw, check_rkey)
 * ------------------------------------------------------------------- */

/*
 * The request [addr, addr + len) with the rights access, through the
 * window of rkey, at responder QP dq. As rxe_lookup_mw: the key matches a
 * VALID window of length > 0, of the responder's PD, with the rights;
 * a type 2 window must be bound through dq itself (type 2B). Then the
 * range: within the window (a zero-based window takes addr as an offset
 * into it), and within the MR. rxe checks the range against the MR only
 * (mr_check_range); the window's bounds are the point of a window (IBTA
 * vol 1 10.6.7.1), so softverbs checks both. Any failure is an rkey
 * violation, a remote access error exactly as for an MR's rkey.
 */
int sv_mw_check_rkey(const struct sv_shm_qp *dq, uint32_t rkey,
                     uint64_t addr, uint64_t len, unsigned access,
                     struct iovec *riov, struct sv_mr_holds *holds)
{
    uint32_t i = sv_mw_index(rkey);
    struct sv_shm_mw c, again;
    struct sv_shm_mr *mr;
    uint64_t iova;
    int keep;

    if ((i == 0) || (sv_mw_read(i, &c) < 0) || !c.in_use ||
        (c.rkey != rkey) || (c.state != SV_MW_VALID) || (c.len == 0) ||
        (c.pid != dq->pid) || (c.pd_id != dq->pd_id) ||
        ((c.type == IBV_MW_TYPE_2) && (c.qpn != dq->qpn)) ||
        ((c.access & access) != access) || (addr + len < addr)) {
        return SV_RESP_NAK_ACCESS;
    }
    if (c.access & IBV_ACCESS_ZERO_BASED) {
        if (addr + len > c.len) {
            return SV_RESP_NAK_ACCESS;
        }
        iova = c.addr + addr;
    } else {
        if ((addr < c.addr) || (addr + len > c.addr + c.len)) {
            return SV_RESP_NAK_ACCESS;
        }
        iova = addr;
    }
    mr = sv_shm_mr_lookup(c.mr_key);
    if ((mr == NULL) || (mr->pid != dq->pid) || (iova < mr->addr) ||
        (iova + len > mr->addr + mr->len)) {
        return SV_RESP_NAK_ACCESS;
    }
    /* Held until the transfer is done (the request's only hold: never
     * -2), then checked again: a window changed before the hold was seen
     * refuses the access, one changed after waits for it
     * (sv_mw_wait_unheld) */
    keep = holds->n;
    if (sv_mr_hold_wait(holds, rkey) != 0) {
        return SV_RESP_NAK_ACCESS;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the hold, then the read */
    if ((sv_mw_read(i, &again) < 0) || !sv_mw_live(&again) ||
        (again.rkey != rkey) || (again.addr != c.addr) ||
        (again.len != c.len) || (again.mr_key != c.mr_key)) {
        sv_mr_release(holds, keep);
        return SV_RESP_NAK_ACCESS;
    }
    riov->iov_base = (void *)(uintptr_t)(mr->va + (iova - mr->addr));
    riov->iov_len  = len;
    return SV_RESP_ACK;
}
