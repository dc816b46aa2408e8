/*
 * softverbs memory regions and address handles (protection domains are
 * in sv_pd.c, memory windows in sv_mw.c). With the MRs, the holds on them
 * that make ibv_dereg_mr, ibv_rereg_mr and a window's invalidation wait
 * for the transfers moving data through the region: taken by the
 * responder's checks (sv_resp_check.c) and by windows (sv_mw.c), above.
 */
#include "sv.h"
#include "sv_xfer.h"   /* the holds on MRs */

#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mman.h>

static inline uint32_t sv_pd_id(struct ibv_pd *pd)
{
    return sv_container_of(pd, struct sv_pd, pd)->pd_id;
}

/* ---------------------------------------------------------------------
 * MR: lkey == rkey == (index << 8 | generation)
 * ------------------------------------------------------------------- */

/* An HCA pins the pages at registration and fails with EFAULT when the
 * range is not mapped; mincore() tells us the same without pinning */
static int sv_range_mapped(void *addr, size_t length)
{
    const size_t page = sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    uintptr_t start = (uintptr_t)addr & ~(page - 1);
    uintptr_t end   = ((uintptr_t)addr + length + page - 1) & ~(page - 1);
    size_t chunk;

    if ((uintptr_t)addr + length < (uintptr_t)addr) {
        return 0;
    }
    for (; start < end; start += chunk) {
        chunk = end - start;
        if (chunk > sizeof(vec) * page) {
            chunk = sizeof(vec) * page;
        }
        if (mincore((void *)start, chunk, vec) < 0) {
            return 0;
        }
    }
    return 1;
}
struct ibv_mr *sv_mr_reg(struct ibv_pd *pd, void *addr, size_t length,
                         uint64_t iova, unsigned access)
{
    const unsigned known = SV_MR_ACCESS;
    struct sv_shm_hdr *h = sv_g.shm;
    struct sv_shm_mr *m = NULL;
    struct sv_mr *mr;
    uint32_t i, n;

    if ((pd == NULL) || (access & ~known) ||
        ((addr == NULL) && (length > 0) && !(access & IBV_ACCESS_ON_DEMAND))) {
        errno = EINVAL;
        return NULL;
    }
    if ((length > 0) && !(access & IBV_ACCESS_ON_DEMAND) &&
        !sv_range_mapped(addr, length)) {
        errno = EFAULT;
        return NULL;
    }
    /* man ibv_reg_mr: remote write or atomic requires local write */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EINVAL;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    if (h->num_mr >= sv_g.max_mr) {
        sv_shm_reap();
        sv_shm_recount();
    }
    for (n = 0; (h->num_mr < sv_g.max_mr) && (n < SV_MR_TBL); n++) {
        i = (h->mr_cursor + n) & (SV_MR_TBL - 1);
        if ((i != 0) && !h->mrs[i].in_use) {
            m = &h->mrs[i];
            break;
        }
    }
    if (m == NULL) {
        sv_shm_unlock();
        sv_error("cannot register MR: limit %u reached", sv_g.max_mr);
        free(mr);
        errno = ENOMEM;
        return NULL;
    }
    h->mr_cursor = i + 1;
    h->mr_gen[i]++;
    m->key    = (i << 8) | h->mr_gen[i];
    m->proc   = sv_g.proc;
    m->pid    = sv_g.pid;
    m->pd_id  = sv_pd_id(pd);
    m->access = access;
    m->addr   = iova;
    m->len    = length;
    m->va     = (uintptr_t)addr;
    m->num_mw = 0;
    m->gen    = 0; /* even: no rereg under way (a dead owner's may not be) */
    /* release: fields are visible before lookups see in_use */
    __atomic_store_n(&m->in_use, 1, __ATOMIC_RELEASE);
    h->num_mr++;
    sv_shm_unlock();

    sv_pd_ref(pd, 1);
    mr->index      = i;
    mr->mr.context = pd->context;
    mr->mr.pd      = pd;
    mr->mr.addr    = addr;
    mr->mr.length  = length;
    mr->mr.handle  = i;
    mr->mr.lkey    = m->key;
    mr->mr.rkey    = m->key;
    return &mr->mr;
}

SV_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr,
                                      size_t length, int access)
{
    return sv_mr_reg(pd, addr, length, (uintptr_t)addr, access);
}

SV_EXPORT struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr,
                                           size_t length, uint64_t iova,
                                           int access)
{
    return sv_mr_reg(pd, addr, length, iova, access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
                                          size_t length, uint64_t iova,
                                          unsigned int access)
{
    return sv_mr_reg(pd, addr, length, iova, access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
    struct sv_mr *mr = sv_container_of(ibmr, struct sv_mr, mr);
    struct sv_shm_mr *m = &sv_g.shm->mrs[mr->index];

    sv_shm_lock();
    /* an MR with memory windows bound to it stays (rxe_dereg_mr: -EINVAL
     * while num_mw > 0; IBTA vol 1 10.6.7: a window's MR must outlive the
     * binding); the windows are unbound by invalidation, a bind of length
     * 0 (type 1) or their deallocation */
    if (m->in_use && (m->key == ibmr->lkey) && (m->num_mw > 0)) {
        sv_shm_unlock();
        return EINVAL;
    }
    if (m->in_use && (m->key == ibmr->lkey)) {
        /* lookups after this see the key as invalid; sequentially
         * consistent, before the holds are read (sv_mr_wait_unheld) */
        __atomic_store_n(&m->in_use, 0, __ATOMIC_SEQ_CST);
        sv_g.shm->num_mr--;
    }
    sv_shm_unlock();
    /* a transfer of another process that passed the key check before
     * finishes first: no access reaches the memory once this returns, as
     * on an HCA (UCX frees or reuses it after an invalidation) */
    sv_mr_wait_unheld(ibmr->lkey);
    sv_pd_ref(ibmr->pd, -1);
    if (mr->dm_refs != NULL) {
        __atomic_fetch_sub(mr->dm_refs, 1, __ATOMIC_ACQ_REL);
    }
    free(mr);
    return 0;
}

void sv_mr_set_dm(struct ibv_mr *ibmr, uint32_t *dm_refs)
{
    sv_container_of(ibmr, struct sv_mr, mr)->dm_refs = dm_refs;
}

/*
 * ibv_rereg_mr(3). The input checks are libibverbs' (ibv_rereg_mr in
 * rdma-core libibverbs/verbs.c): an unknown flag, a new translation without
 * an address or a length, access flags without IBV_REREG_MR_CHANGE_ACCESS,
 * or an MR that is not a plain one (a DM MR) give IBV_REREG_MR_ERR_INPUT with
 * errno EINVAL. The kernel then checks what a registration checks
 * (ib_uverbs_rereg_mr): a failure there is IBV_REREG_MR_ERR_CMD. The keys
 * stay the same (the kernel may change them; programs read them again).
 * The change is made under the registry lock and inside a write of the
 * MR's sequence lock (gen), so a requester sees the old or the new region,
 * never a mix, and it returns once the transfers that saw the old one are
 * done.
 */
SV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd,
                           void *addr, size_t length, int access)
{
    struct sv_mr *mr = sv_container_of(ibmr, struct sv_mr, mr);
    struct sv_shm_mr *m = &sv_g.shm->mrs[mr->index];
    unsigned new_access = m->access;

    if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) || (mr->dm_refs != NULL) ||
        ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
         ((addr == NULL) || (length == 0))) ||
        (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
        new_access = access;
    }
    if ((new_access & ~SV_MR_ACCESS) ||
        ((flags & IBV_REREG_MR_CHANGE_PD) && (pd == NULL)) ||
        ((new_access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(new_access & IBV_ACCESS_LOCAL_WRITE))) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_CMD;
    }
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
        !(new_access & IBV_ACCESS_ON_DEMAND) && !sv_range_mapped(addr, length)) {
        errno = EFAULT;
        return IBV_REREG_MR_ERR_CMD;
    }
    sv_shm_lock();
    /* odd: transfers checking the MR wait (sv_mr_gen); sequentially
     * consistent, as the hold they publish (sv_mr_hold_checked) */
    __atomic_store_n(&m->gen, m->gen + 1, __ATOMIC_SEQ_CST);
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        m->addr = m->va = (uintptr_t)addr;
        m->len  = length;
        ibmr->addr   = addr;
        ibmr->length = length;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        m->pd_id  = sv_pd_id(pd);
        sv_pd_ref(ibmr->pd, -1);
        sv_pd_ref(pd, 1);
        ibmr->pd  = pd;
    }
    m->access = new_access;
    /* release: the fields are written before the even generation */
    __atomic_store_n(&m->gen, m->gen + 1, __ATOMIC_RELEASE);
    sv_shm_unlock();
    /* a transfer that passed the check before moves its data first: the
     * old region may be freed or reused once this returns, as after an
     * HCA's rereg; the new generation is visible before the holds are
     * read */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    sv_mr_wait_unheld(ibmr->lkey);
    return 0;
}

/*
 * ibv_advise_mr(3): prefetch of on-demand-paging MRs. Every SGE must name
 * an ODP MR of this process and PD and lie inside it (the kernel's
 * ib_uverbs_advise_mr / mlx5_ib_advise_mr_prefetch: EINVAL otherwise);
 * unknown advice or flags are EINVAL (ib_uverbs_advise_mr checks the
 * advice, libibverbs passes the flags through). The pages are faulted in
 * by the data path anyway (process_vm_*v), so the advice only tells the
 * kernel (madvise MADV_WILLNEED); it is synchronous, so
 * IBV_ADVISE_MR_FLAG_FLUSH holds.
 */
static int sv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
                        uint32_t flags, struct ibv_sge *sg_list,
                        uint32_t num_sge)
{
    const uintptr_t page = sysconf(_SC_PAGESIZE);
    struct sv_shm_mr *m;
    uintptr_t start;
    uint32_t i;

    if ((advice > IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) ||
        (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || (num_sge == 0) ||
        (sg_list == NULL)) {
        return EINVAL;
    }
    for (i = 0; i < num_sge; i++) {
        m = sv_shm_mr_lookup(sg_list[i].lkey);
        if ((m == NULL) || (m->pid != sv_g.pid) ||
            (m->pd_id != sv_pd_id(pd)) ||
            !(m->access & IBV_ACCESS_ON_DEMAND) ||
            (sg_list[i].addr < m->addr) ||
            (sg_list[i].addr + sg_list[i].length < sg_list[i].addr) ||
            (sg_list[i].addr + sg_list[i].length > m->addr + m->len)) {
            return EINVAL;
        }
    }
    for (i = 0; i < num_sge; i++) {
        m     = sv_shm_mr_lookup(sg_list[i].lkey);
        start = (uintptr_t)(m->va + (sg_list[i].addr - m->addr));
        /* advice only: a range not mapped (yet) is no error for ODP */
        (void)madvise((void *)(start & ~(page - 1)), sg_list[i].length +
                      (start & (page - 1)), MADV_WILLNEED);
    }
    return 0;
}

void sv_obj_init_ops(struct verbs_context *v)
{
    v->advise_mr = sv_advise_mr;
}

/* ---------------------------------------------------------------------
 * Holds on MRs
 * ------------------------------------------------------------------- */
/*
 * Holds on MRs. An HCA has finished or stopped every access through an MR
 * when ibv_dereg_mr returns (the memory may then be freed or reused, as
 * UCX does once its invalidation completes); here the requester of
 * another process moves the data itself after checking the key. So a
 * transfer publishes each key it moves data through in a slot of its
 * process's entry and then checks the key (again); ibv_dereg_mr clears the
 * MR's in_use and then waits while a live process holds the key. Each
 * side stores, then loads what the other stores, all sequentially
 * consistent (the Dekker pattern): at least one of them sees the other, so
 * either the transfer finds the key gone or the deregistration waits for
 * it. A dead process's slots are ignored, and cleared when its slot is
 * reused (sv_proc_register).
 */
int sv_mr_hold(struct sv_mr_holds *h, uint32_t key)
{
    uint32_t *slots = sv_g.shm->procs[sv_g.proc].mr_hold;
    uint32_t i, zero;
    int k;

    for (k = 0; k < h->n; k++) {
        if (slots[h->slot[k]] == key) {
            return 0; /* held already (another SGE of the same MR) */
        }
    }
    for (i = 0; i < SV_MR_HOLDS; i++) {
        zero = 0;
        if ((__atomic_load_n(&slots[i], __ATOMIC_RELAXED) == 0) &&
            __atomic_compare_exchange_n(&slots[i], &zero, key, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            h->slot[h->n++] = i;
            return 0;
        }
    }
    return -1; /* every slot is another thread's: release, retry */
}

void sv_mr_release(struct sv_mr_holds *h, int keep)
{
    uint32_t *slots = sv_g.shm->procs[sv_g.proc].mr_hold;

    while (h->n > keep) {
        /* release: the data moved before the deregistration sees it free */
        __atomic_store_n(&slots[h->slot[--h->n]], 0, __ATOMIC_RELEASE);
    }
}

/* A key still held after this long is a process stopped mid-transfer
 * (SIGSTOP, a debugger): the deregistration goes on, with a warning,
 * rather than hang */
#define SV_MR_HOLD_WAIT_NS 5000000000ull

void sv_mr_wait_unheld(uint32_t key)
{
    struct sv_shm_hdr *h = sv_g.shm;
    uint64_t t0 = 0;
    uint32_t i, j;

    for (i = 0; i < SV_PROC_TBL; i++) {
        if (!__atomic_load_n(&h->procs[i].in_use, __ATOMIC_ACQUIRE)) {
            continue;
        }
        for (j = 0; j < SV_MR_HOLDS; j++) {
            while (__atomic_load_n(&h->procs[i].mr_hold[j],
                                   __ATOMIC_SEQ_CST) == key) {
                if (!sv_proc_alive(i, h->procs[i].pid)) {
                    break;
                }
                if (t0 == 0) {
                    t0 = sv_now_ns();
                } else if (sv_now_ns() - t0 > SV_MR_HOLD_WAIT_NS) {
                    sv_warn("mr key 0x%x: deregistered while process %d "
                            "still moves data through it (5 s)", key,
                            h->procs[i].pid);
                    return;
                }
                sched_yield();
            }
        }
    }
}

/* m still holds key, now that a hold on it is published */
static int sv_mr_still(struct sv_shm_mr *m, uint32_t key)
{
    return __atomic_load_n(&m->in_use, __ATOMIC_SEQ_CST) && (m->key == key);
}

/* The generation m's fields are read in (ibv_rereg_mr's sequence lock):
 * an even value once no rereg is under way. Odd for good only if the owner
 * died mid-rereg: its memory is gone, and the transfer fails on the dead
 * peer (sv_resp_peer_alive) */
uint32_t sv_mr_gen(struct sv_shm_mr *m)
{
    uint32_t gen, n;

    for (n = 0; n < 100000; n++) {
        /* acquire: the fields read after are at least this new */
        gen = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
        if (!(gen & 1)) {
            break;
        }
        sched_yield();
    }
    return gen;
}

int sv_mr_hold_wait(struct sv_mr_holds *h, uint32_t key)
{
    while (sv_mr_hold(h, key) != 0) {
        if (h->n > 0) {
            return -2;
        }
        sched_yield();
    }
    return 0;
}

/* Hold key (a check of m's fields of generation gen passed): 0; -1 when m
 * no longer holds the key; -2 as sv_mr_hold_wait; -3 when an
 * ibv_rereg_mr changed m since (check it again). A rereg after the hold
 * waits for the transfer (sv_mr_wait_unheld) */
int sv_mr_hold_checked(struct sv_mr_holds *h, struct sv_shm_mr *m,
                       uint32_t key, uint32_t gen)
{
    int keep = h->n;

    if (sv_mr_hold_wait(h, key) != 0) {
        return -2;
    }
    if (!sv_mr_still(m, key)) {
        sv_mr_release(h, keep);
        return -1;
    }
    if (__atomic_load_n(&m->gen, __ATOMIC_SEQ_CST) != gen) {
        sv_mr_release(h, keep);
        return -3;
    }
    return 0;
}

/* ---------------------------------------------------------------------
 * AH
 * ------------------------------------------------------------------- */
/* An address vector a port can send with: on InfiniBand a DLID or a GRH
 * from GID 0 (softverbs' IB ports have one GID); on RoCE a GRH always
 * (IBA annex A16: no LRH, the GRH carries the address; mlx5 and rxe refuse
 * a RoCE AH without IB_AH_GRH) from a populated GID, the DLID unused.
 * port: the port it is used on; no_dlid_ok: a DC AV, which names no DLID (the target comes per WR) */
int sv_ah_attr_valid(const struct ibv_ah_attr *attr, uint8_t port,
                     int no_dlid_ok)
{
    if (sv_port_is_eth(port)) {
        return attr->is_global &&
               sv_gid_sgid_valid(port, attr->grh.sgid_index);
    }
    return ((attr->dlid != 0) || attr->is_global || no_dlid_ok) &&
           (!attr->is_global || (attr->grh.sgid_index == 0));
}

SV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
                                       struct ibv_ah_attr *attr)
{
    struct sv_ah *ah;

    if ((pd == NULL) || (attr == NULL) || !sv_port_valid(attr->port_num) ||
        !sv_ah_attr_valid(attr, attr->port_num, 0)) {
        errno = EINVAL;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ah->ah.context = pd->context;
    ah->ah.pd      = pd;
    ah->attr       = *attr;
    sv_pd_ref(pd, 1);
    return &ah->ah;
}

SV_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    sv_pd_ref(ah->pd, -1);
    free(sv_container_of(ah, struct sv_ah, ah));
    return 0;
}

/* RoCE: the reply goes to the GRH's source GID (an IPv4 header for RoCE
 * v2 over IPv4), from this port's GID the packet was sent to, of the same
 * type (rdma-core's ibv_init_ah_from_wc: get_grh_header_version, then
 * ibv_find_gid_index) */
static int sv_init_roce_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
                                   struct ibv_wc *wc, struct ibv_grh *grh,
                                   struct ibv_ah_attr *ah_attr)
{
    union ibv_gid sgid, dgid;
    int type, index;

    if (!(wc->wc_flags & IBV_WC_GRH) || (grh == NULL) ||
        (sv_gid_parse_roce_grh(grh, &sgid, &dgid, &type) != 0)) {
        errno = EINVAL;
        return -1;
    }
    index = sv_gid_find(sv_ctx(ctx)->dev->index, port_num, &dgid, type);
    if (index < 0) {
        errno = ENOENT;
        return -1;
    }
    ah_attr->sl                 = wc->sl;
    ah_attr->port_num           = port_num;
    ah_attr->is_global          = 1;
    ah_attr->grh.dgid           = sgid;
    ah_attr->grh.sgid_index     = (uint8_t)index;
    ah_attr->grh.hop_limit      = 0xff;
    return 0;
}

SV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num,
                                  struct ibv_wc *wc, struct ibv_grh *grh,
                                  struct ibv_ah_attr *ah_attr)
{
    if (!sv_port_valid(port_num)) {
        errno = EINVAL;
        return -1;
    }
    memset(ah_attr, 0, sizeof(*ah_attr));
    if (sv_port_is_eth(port_num)) {
        return sv_init_roce_ah_from_wc(ctx, port_num, wc, grh, ah_attr);
    }
    ah_attr->dlid          = wc->slid;
    ah_attr->sl            = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num      = port_num;
    if (wc->wc_flags & IBV_WC_GRH) {
        if (grh == NULL) {
            errno = EINVAL;
            return -1;
        }
        ah_attr->is_global          = 1;
        ah_attr->grh.dgid           = grh->sgid;
        ah_attr->grh.flow_label     = be32toh(grh->version_tclass_flow) &
                                      0xfffff;
        ah_attr->grh.sgid_index     = 0;
        ah_attr->grh.hop_limit      = 0xff;
        ah_attr->grh.traffic_class  = (be32toh(grh->version_tclass_flow) >>
                                       20) & 0xff;
    }
    return 0;
}

SV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
                                               struct ibv_wc *wc,
                                               struct ibv_grh *grh,
                                               uint8_t port_num)
{
    struct ibv_ah_attr attr;

    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) {
        return NULL;
    }
    return ibv_create_ah(pd, &attr);
}
