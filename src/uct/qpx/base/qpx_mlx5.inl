/*
 * The direct path's send: a WR as a WQE in an mlx5 send queue and its
 * doorbell (qpx_mlx5.h), inline for the direct path's own operations
 * (qpx_rdma_tl_t's direct_ops: the verbs path never includes it), and the
 * barriers toward the device that qpx_mlx5.c shares.
 */
#ifndef QPX_MLX5_INL_
#define QPX_MLX5_INL_

#include "qpx_mlx5.h"

#if HAVE_MLX5DV

#include <infiniband/mlx5dv.h>
#include <ucs/ucx_compat.h>
#include <ucs/sys/compiler_def.h>
#include <endian.h>
#include <string.h>

#define QPX_MLX5_MAX_WQE   1024


/*
 * Barriers toward the device (Debian's UCX installs no ucs/arch/cpu.h, so
 * its ucs_memory_* are out of reach). qpx_mlx5_wmb: stores to queue memory
 * before the stores after them, as the device (a bus master) sees them:
 * aarch64 needs the outer-shareable store barrier (rdma-core's udma_to_
 * device_barrier is "dmb oshst"); x86 orders stores to write-back memory
 * already (a compiler barrier, as rdma-core's). qpx_mlx5_mmio_flush: the
 * doorbell register's store out of a write-combining buffer (x86 "sfence",
 * rdma-core's mmio_flush_writes; "dsb st" on aarch64). Elsewhere: a full
 * C11 fence.
 */
static UCS_F_ALWAYS_INLINE void qpx_mlx5_wmb(void)
{
#if defined(__aarch64__)
    __asm__ __volatile__("dmb oshst" ::: "memory");
#elif defined(__x86_64__)
    __asm__ __volatile__("" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* loads of what the device wrote after the load that saw it written
 * (rdma-core's udma_from_device_barrier: "dmb oshld" on aarch64) */
static UCS_F_ALWAYS_INLINE void qpx_mlx5_rmb(void)
{
#if defined(__aarch64__)
    __asm__ __volatile__("dmb oshld" ::: "memory");
#elif defined(__x86_64__)
    __asm__ __volatile__("" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static UCS_F_ALWAYS_INLINE void qpx_mlx5_mmio_flush(void)
{
#if defined(__aarch64__)
    __asm__ __volatile__("dsb st" ::: "memory");
#elif defined(__x86_64__)
    __asm__ __volatile__("sfence" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}


static UCS_F_ALWAYS_INLINE uint8_t qpx_mlx5_opcode(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_SEND:                return MLX5_OPCODE_SEND;
    case IBV_WR_SEND_WITH_IMM:       return MLX5_OPCODE_SEND_IMM;
    case IBV_WR_RDMA_WRITE:          return MLX5_OPCODE_RDMA_WRITE;
    case IBV_WR_RDMA_WRITE_WITH_IMM: return MLX5_OPCODE_RDMA_WRITE_IMM;
    case IBV_WR_RDMA_READ:           return MLX5_OPCODE_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:  return MLX5_OPCODE_ATOMIC_CS;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return MLX5_OPCODE_ATOMIC_FA;
    default:                         return 0xff;
    }
}


/* The remote address segment; returns the end */
static UCS_F_ALWAYS_INLINE char *qpx_mlx5_set_raddr(char *p, uint64_t addr,
                                                   uint32_t rkey)
{
    struct mlx5_wqe_raddr_seg *raddr = (void*)p;

    raddr->raddr    = htobe64(addr);
    raddr->rkey     = htobe32(rkey);
    raddr->reserved = 0;
    return p + sizeof(*raddr);
}


/* An atomic's target (from the WR's atomic part, laid out unlike rdma's)
 * and its operands in network order (libmlx5's set_atomic_seg); returns
 * the end */
static UCS_F_ALWAYS_INLINE char *
qpx_mlx5_set_atomic(char *p, const struct ibv_send_wr *wr)
{
    struct mlx5_wqe_atomic_seg *atomic;

    p      = qpx_mlx5_set_raddr(p, wr->wr.atomic.remote_addr,
                                wr->wr.atomic.rkey);
    atomic = (void*)p;
    if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
        atomic->swap_add = htobe64(wr->wr.atomic.swap);
        atomic->compare  = htobe64(wr->wr.atomic.compare_add);
    } else {
        atomic->swap_add = htobe64(wr->wr.atomic.compare_add);
        atomic->compare  = 0;
    }
    return p + sizeof(*atomic);
}


/* The WR's SGEs copied as one inline segment (none for no bytes), padded
 * to 16 bytes; returns the end, or NULL when they pass end. bounded (a
 * constant): the caller holds the bytes to the QP's max_inline_data, which
 * fits a WQE (qpx_mlx5_txwq_init checks it), so they are not tested */
static UCS_F_ALWAYS_INLINE char *
qpx_mlx5_set_inline(char *p, const char *end, const struct ibv_send_wr *wr,
                    int bounded)
{
    uint32_t inl = 0;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        if (!bounded &&
            ucs_unlikely(p + 4 + inl + wr->sg_list[i].length > end)) {
            return NULL;
        }
        memcpy(p + 4 + inl, (void*)(uintptr_t)wr->sg_list[i].addr,
               wr->sg_list[i].length);
        inl += wr->sg_list[i].length;
    }
    ucs_assertv(p + 4 + inl <= end, "%u inline bytes pass the WQE", inl);
    if (inl == 0) {
        return p;
    }
    *(uint32_t*)p = htobe32(inl | MLX5_INLINE_SEG);
    return p + ((4 + inl + 15) & ~15u);
}


/* A data segment per non-empty SGE; returns the end, or NULL when they
 * pass end */
static UCS_F_ALWAYS_INLINE char *
qpx_mlx5_set_dptrs(char *p, const char *end, const struct ibv_send_wr *wr)
{
    struct mlx5_wqe_data_seg *dseg;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        if (wr->sg_list[i].length == 0) {
            continue;
        }
        if (ucs_unlikely(p + sizeof(*dseg) > end)) {
            return NULL;
        }
        dseg             = (void*)p;
        dseg->byte_count = htobe32(wr->sg_list[i].length);
        dseg->lkey       = htobe32(wr->sg_list[i].lkey);
        dseg->addr       = htobe64(wr->sg_list[i].addr);
        p               += sizeof(*dseg);
    }
    return p;
}


/* A datagram segment: the AH's address vector, in the extended form (the
 * 48 bytes libmlx5 writes), with the destination and its key: a DCI's
 * target DCT and DC access key (mlx5_send_wr_set_dc_addr), or a UD QP's
 * remote QP and Q_Key (set_datagram_seg: the Q_Key in the key's first 4
 * bytes, key << 32 here); returns the end */
static UCS_F_ALWAYS_INLINE char *
qpx_mlx5_set_dgram(char *p, const struct mlx5_wqe_av *av, uint32_t dqp,
                   uint64_t key)
{
    struct mlx5_wqe_av *seg = (void*)p;

    memcpy(seg, av, sizeof(*seg));
    seg->dqp_dct    = htobe32(dqp | MLX5_EXTENDED_UD_AV);
    seg->key.dc_key = htobe64(key);
    return p + sizeof(*seg);
}


/* A WQE being written: built in place at offset off of the queue, or in a
 * staging buffer of the caller's (where it might wrap from the end of the
 * queue to its start; the buffer apart, so that the compiler keeps these
 * fields in registers) */
typedef struct qpx_mlx5_wqe {
    struct mlx5_wqe_ctrl_seg *ctrl;
    size_t                   off;
    size_t                   size;
    int                      in_place;
    uint8_t                  opcode;
} qpx_mlx5_wqe_t;

/* A staging buffer for one WQE */
typedef uint64_t qpx_mlx5_wqe_stage_t[QPX_MLX5_MAX_WQE / sizeof(uint64_t)];


/* The control segment's flags from a WR's: IBV_SEND_FENCE (1),
 * IBV_SEND_SIGNALED (2), IBV_SEND_SOLICITED (4) as an index (a load
 * instead of a test per flag) */
static const uint8_t qpx_mlx5_fm_ce_se[8] = {
    0,
    MLX5_WQE_CTRL_FENCE,
    MLX5_WQE_CTRL_CQ_UPDATE,
    MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE,
    MLX5_WQE_CTRL_SOLICITED,
    MLX5_WQE_CTRL_SOLICITED | MLX5_WQE_CTRL_FENCE,
    MLX5_WQE_CTRL_SOLICITED | MLX5_WQE_CTRL_CQ_UPDATE,
    MLX5_WQE_CTRL_SOLICITED | MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE
};


/*
 * Every segment of wr's WQE but the control segment, at the producer index:
 * a DCI's or a UD QP's when av is not NULL (its datagram segment first, to
 * dct_num or the remote QP with its key), an RC QP's else, in place or in
 * stage. bounded: qpx_mlx5_set_inline's. Returns 0 or EINVAL (an opcode or
 * a size the queue does not take; nothing to post). The caller may decide
 * the WQE's flags and WR id after it (qpx_mlx5_wqe_post): its copy of the
 * data is then done before the state they come from is read.
 */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_wqe_build(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                   const struct mlx5_wqe_av *av, uint32_t dct_num,
                   uint64_t dc_key, int bounded, qpx_mlx5_wqe_stage_t stage,
                   qpx_mlx5_wqe_t *wqe)
{
    char *p, *end;

    wqe->off      = (size_t)(wq->pi & wq->mask) * MLX5_SEND_WQE_BB;
    wqe->in_place = (wqe->off <= wq->inplace_max);
    wqe->ctrl     = wqe->in_place ? (void*)(wq->qstart + wqe->off) :
                                    (void*)stage;
    wqe->opcode   = qpx_mlx5_opcode(wr->opcode);
    if (ucs_unlikely(wqe->opcode == 0xff)) {
        return EINVAL;
    }
    p   = (char*)(wqe->ctrl + 1);
    end = (char*)wqe->ctrl + wq->max_wqe;
    if (av != NULL) {
        p = qpx_mlx5_set_dgram(p, av, dct_num, dc_key);
    }
    /* tested on the WR's opcode, as its writer tests it before filling the
     * atomic part (the compiler then sees that part written) */
    if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
        (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        p = qpx_mlx5_set_atomic(p, wr);
    } else if ((wqe->opcode != MLX5_OPCODE_SEND) &&
               (wqe->opcode != MLX5_OPCODE_SEND_IMM)) {
        p = qpx_mlx5_set_raddr(p, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
    }
    if ((wr->send_flags & IBV_SEND_INLINE) &&
        (wqe->opcode != MLX5_OPCODE_RDMA_READ) &&
        (wqe->opcode != MLX5_OPCODE_ATOMIC_CS) &&
        (wqe->opcode != MLX5_OPCODE_ATOMIC_FA)) {
        p = qpx_mlx5_set_inline(p, end, wr, bounded);
    } else {
        p = qpx_mlx5_set_dptrs(p, end, wr);
    }
    if (ucs_unlikely(p == NULL)) {
        return EINVAL;
    }
    wqe->size = p - (char*)wqe->ctrl;
    return 0;
}


/*
 * The WQE qpx_mlx5_wqe_build wrote posted as request wr_id with send_flags
 * (IBV_SEND_*) and imm (big endian; 0 but for an opcode with immediate):
 * its control segment (the second half in one store), the staged copy
 * moved in, its WR id kept at its first block, the doorbell record moved
 * past it after a store fence (the device reads the WQE once it sees the
 * record), and the control segment's first 8 bytes written to the doorbell
 * register after another (the record before the register).
 */
static UCS_F_ALWAYS_INLINE void
qpx_mlx5_wqe_post(qpx_mlx5_txwq_t *wq, qpx_mlx5_wqe_t *wqe,
                  unsigned send_flags, uint32_t imm, uint64_t wr_id)
{
    struct mlx5_wqe_ctrl_seg *ctrl = wqe->ctrl;
    uint64_t fm_ce_se              = qpx_mlx5_fm_ce_se[send_flags &
                                                       (IBV_SEND_FENCE |
                                                        IBV_SEND_SIGNALED |
                                                        IBV_SEND_SOLICITED)];
    uint64_t second; /* signature and stream id 0, the flags, imm */
    size_t first;

    /* the segment's bytes 8 to 15 as one 8-byte value in host order: the
     * flags are byte 11, imm (already big endian) bytes 12 to 15 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    second = (fm_ce_se << 24) | ((uint64_t)imm << 32);
#else
    second = (fm_ce_se << 32) | imm;
#endif
    ctrl->opmod_idx_opcode = htobe32(((uint32_t)wq->pi << 8) | wqe->opcode);
    ctrl->qpn_ds           = htobe32((wq->qpn << 8) |
                                     (uint32_t)(wqe->size / 16));
    memcpy(&ctrl->signature, &second, sizeof(second));

    if (!wqe->in_place) {
        first = ucs_min(wqe->size, (size_t)(wq->qend - wq->qstart) - wqe->off);
        memcpy(wq->qstart + wqe->off, ctrl, first);
        memcpy(wq->qstart, (const char*)ctrl + first, wqe->size - first);
    }
    wq->wrid[wq->pi & wq->mask] = wr_id;
    wq->pi += (uint16_t)((wqe->size + MLX5_SEND_WQE_BB - 1) /
                         MLX5_SEND_WQE_BB);

    /* the WQE before the record that covers it */
    qpx_mlx5_wmb();
    *wq->dbrec = htobe32(wq->pi);
    /* the record before the register that makes the device read it */
    qpx_mlx5_wmb();
    *wq->reg = *(const uint64_t*)ctrl;
    qpx_mlx5_mmio_flush();
}


/* The immediate data a WR's WQE carries: the WR's for an opcode with
 * immediate (verbs reads it only then), else 0 */
static UCS_F_ALWAYS_INLINE uint32_t
qpx_mlx5_wr_imm(const struct ibv_send_wr *wr)
{
    return ((wr->opcode == IBV_WR_SEND_WITH_IMM) ||
            (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) ? wr->imm_data : 0;
}


/*
 * Post one WR as a WQE at the producer index and ring the doorbell
 * (qpx_mlx5_wqe_build, then qpx_mlx5_wqe_post with the WR's flags and id).
 * Returns 0 or EINVAL (nothing posted). Inlined in the direct path's
 * operations (constant opcodes, flags and av fold away); qpx_mlx5_post and
 * qpx_mlx5_post_dc are the same out of line, with the inline bytes tested.
 */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_wqe_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                         const struct mlx5_wqe_av *av, uint32_t dct_num,
                         uint64_t dc_key, int bounded)
{
    qpx_mlx5_wqe_stage_t stage;
    qpx_mlx5_wqe_t wqe;
    int ret;

    ret = qpx_mlx5_wqe_build(wq, wr, av, dct_num, dc_key, bounded, stage,
                             &wqe);
    if (ucs_unlikely(ret != 0)) {
        return ret;
    }
    qpx_mlx5_wqe_post(wq, &wqe, wr->send_flags, qpx_mlx5_wr_imm(wr),
                      wr->wr_id);
    return 0;
}


/* An RC QP's WQE (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, NULL, 0, 0, 0);
}


/* A DCI's WQE to DCT dct_num behind av (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_dc_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                        const struct mlx5_wqe_av *av, uint32_t dct_num,
                        uint64_t dc_key)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, av, dct_num, dc_key, 0);
}


/* A UD QP's WQE to wr->wr.ud's remote QP and Q_Key behind av
 * (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_ud_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                        const struct mlx5_wqe_av *av)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, av, wr->wr.ud.remote_qpn,
                                    (uint64_t)wr->wr.ud.remote_qkey << 32, 0);
}


/* Entry ci's op_own (the last byte of its 64-byte CQE, the second half
 * of a 128-byte one), and the owner bit it has when it is the software's
 * (the parity of the pass), for qpx_mlx5_cq_ready: set whenever ci
 * moves */
static UCS_F_ALWAYS_INLINE void qpx_mlx5_cq_next_set(qpx_mlx5_cq_t *cq)
{
    cq->next_op_own = (const volatile uint8_t*)
                      (cq->buf + (size_t)(cq->ci & cq->mask) * cq->stride +
                       cq->stride - 1);
    cq->next_owner  = (cq->ci >> cq->log_cnt) & 1;
}

/* Whether cq's next entry is the software's: the test qpx_mlx5_poll
 * begins with, inline in the progress of a direct interface so that an
 * empty CQ costs no call (and two loads, its op_own kept apart) */
static UCS_F_ALWAYS_INLINE int qpx_mlx5_cq_ready(const qpx_mlx5_cq_t *cq)
{
    uint8_t op_own = *cq->next_op_own;

    ucs_assert(cq->next_op_own ==
               (const volatile uint8_t*)
               (cq->buf + (size_t)(cq->ci & cq->mask) * cq->stride +
                cq->stride - 1));
    return (((op_own ^ cq->next_owner) & MLX5_CQE_OWNER_MASK) == 0) &&
           ((op_own >> 4) != MLX5_CQE_INVALID);
}

#else

/* Without mlx5dv.h no interface is direct: these are never reached */
typedef struct qpx_mlx5_wqe {
    int unused;
} qpx_mlx5_wqe_t;

typedef uint64_t qpx_mlx5_wqe_stage_t[1];

static inline int qpx_mlx5_wqe_build(qpx_mlx5_txwq_t *wq,
                                     const struct ibv_send_wr *wr,
                                     const struct mlx5_wqe_av *av,
                                     uint32_t dct_num, uint64_t dc_key,
                                     int bounded, qpx_mlx5_wqe_stage_t stage,
                                     qpx_mlx5_wqe_t *wqe)
{
    return EOPNOTSUPP;
}

static inline void qpx_mlx5_wqe_post(qpx_mlx5_txwq_t *wq, qpx_mlx5_wqe_t *wqe,
                                     unsigned send_flags, uint32_t imm,
                                     uint64_t wr_id)
{
}

static inline uint32_t qpx_mlx5_wr_imm(const struct ibv_send_wr *wr)
{
    return 0;
}

static inline int qpx_mlx5_cq_ready(const qpx_mlx5_cq_t *cq)
{
    return 1;
}

static inline int qpx_mlx5_post_inline(qpx_mlx5_txwq_t *wq,
                                       const struct ibv_send_wr *wr)
{
    return qpx_mlx5_post(wq, wr);
}

static inline int qpx_mlx5_post_dc_inline(qpx_mlx5_txwq_t *wq,
                                          const struct ibv_send_wr *wr,
                                          const struct mlx5_wqe_av *av,
                                          uint32_t dct_num, uint64_t dc_key)
{
    return qpx_mlx5_post_dc(wq, wr, av, dct_num, dc_key);
}

static inline int qpx_mlx5_post_ud_inline(qpx_mlx5_txwq_t *wq,
                                          const struct ibv_send_wr *wr,
                                          const struct mlx5_wqe_av *av)
{
    return EOPNOTSUPP;
}

#endif

#endif
