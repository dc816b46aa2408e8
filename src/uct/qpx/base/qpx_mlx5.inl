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


static UCS_F_ALWAYS_INLINE uint8_t qpx_mlx5_opcode(enum ibv_wr_opcode op,
                                                   uint8_t *wc_opcode)
{
    switch (op) {
    case IBV_WR_SEND:
        *wc_opcode = IBV_WC_SEND;
        return MLX5_OPCODE_SEND;
    case IBV_WR_SEND_WITH_IMM:
        *wc_opcode = IBV_WC_SEND;
        return MLX5_OPCODE_SEND_IMM;
    case IBV_WR_RDMA_WRITE:
        *wc_opcode = IBV_WC_RDMA_WRITE;
        return MLX5_OPCODE_RDMA_WRITE;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        *wc_opcode = IBV_WC_RDMA_WRITE;
        return MLX5_OPCODE_RDMA_WRITE_IMM;
    case IBV_WR_RDMA_READ:
        *wc_opcode = IBV_WC_RDMA_READ;
        return MLX5_OPCODE_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        *wc_opcode = IBV_WC_COMP_SWAP;
        return MLX5_OPCODE_ATOMIC_CS;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        *wc_opcode = IBV_WC_FETCH_ADD;
        return MLX5_OPCODE_ATOMIC_FA;
    default:
        return 0xff;
    }
}


/*
 * Post one WR as a WQE at the producer index and ring the doorbell: the
 * WQE is built in place, or where it might wrap from the end of the queue
 * to its start, in a staging buffer copied in; its WR id and completion opcode
 * kept at its first block, the doorbell record moved past it after a store
 * fence (the device reads the WQE once it sees the record), and the first
 * 8 bytes of the control segment written to the doorbell register after
 * another (the record before the register). Returns 0 or EINVAL (an
 * opcode or a size the queue does not take; nothing posted). Inlined in
 * the direct path's operations (constant opcodes and flags fold away);
 * qpx_mlx5_post is the same out of line.
 */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr)
{
    uint64_t buf[QPX_MLX5_MAX_WQE / sizeof(uint64_t)];
    size_t off   = (size_t)(wq->pi & wq->mask) * MLX5_SEND_WQE_BB;
    int in_place = (off + wq->max_wqe <= (size_t)(wq->qend - wq->qstart));
    struct mlx5_wqe_ctrl_seg *ctrl = in_place ? (void*)(wq->qstart + off) :
                                                (void*)buf;
    char *p                        = (char*)(ctrl + 1);
    char *end                      = (char*)ctrl + wq->max_wqe;
    struct mlx5_wqe_raddr_seg *raddr;
    struct mlx5_wqe_atomic_seg *atomic;
    struct mlx5_wqe_data_seg *dseg;
    uint8_t opcode, wc_opcode = 0;
    uint32_t inl = 0, ds;
    size_t size, first;
    unsigned bbs;
    int i;

    opcode = qpx_mlx5_opcode(wr->opcode, &wc_opcode);
    if (ucs_unlikely(opcode == 0xff)) {
        return EINVAL;
    }
    /* tested on the WR's opcode, as its writer tests it before filling the
     * atomic part (the compiler then sees that part written) */
    if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
        (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        /* the target from the WR's atomic part (laid out unlike rdma's),
         * the operands in network order (mlx5_post_send's set_atomic_seg) */
        raddr           = (void*)p;
        raddr->raddr    = htobe64(wr->wr.atomic.remote_addr);
        raddr->rkey     = htobe32(wr->wr.atomic.rkey);
        raddr->reserved = 0;
        p              += sizeof(*raddr);
        atomic = (void*)p;
        if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
            atomic->swap_add = htobe64(wr->wr.atomic.swap);
            atomic->compare  = htobe64(wr->wr.atomic.compare_add);
        } else {
            atomic->swap_add = htobe64(wr->wr.atomic.compare_add);
            atomic->compare  = 0;
        }
        p += sizeof(*atomic);
    } else if ((opcode != MLX5_OPCODE_SEND) && (opcode != MLX5_OPCODE_SEND_IMM)) {
        raddr           = (void*)p;
        raddr->raddr    = htobe64(wr->wr.rdma.remote_addr);
        raddr->rkey     = htobe32(wr->wr.rdma.rkey);
        raddr->reserved = 0;
        p              += sizeof(*raddr);
    }
    if ((wr->send_flags & IBV_SEND_INLINE) &&
        (opcode != MLX5_OPCODE_RDMA_READ) && (opcode != MLX5_OPCODE_ATOMIC_CS) &&
        (opcode != MLX5_OPCODE_ATOMIC_FA)) {
        for (i = 0; i < wr->num_sge; ++i) {
            if (ucs_unlikely(p + 4 + inl + wr->sg_list[i].length > end)) {
                return EINVAL;
            }
            memcpy(p + 4 + inl, (void*)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            inl += wr->sg_list[i].length;
        }
        if (inl > 0) {
            *(uint32_t*)p = htobe32(inl | MLX5_INLINE_SEG);
            p += (4 + inl + 15) & ~15u;
        }
    } else {
        for (i = 0; i < wr->num_sge; ++i) {
            if (wr->sg_list[i].length == 0) {
                continue;
            }
            if (ucs_unlikely(p + sizeof(*dseg) > end)) {
                return EINVAL;
            }
            dseg             = (void*)p;
            dseg->byte_count = htobe32(wr->sg_list[i].length);
            dseg->lkey       = htobe32(wr->sg_list[i].lkey);
            dseg->addr       = htobe64(wr->sg_list[i].addr);
            p               += sizeof(*dseg);
        }
    }

    size = p - (char*)ctrl;
    ds   = (uint32_t)(size / 16);
    bbs  = (unsigned)((size + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);
    ctrl->opmod_idx_opcode = htobe32(((uint32_t)wq->pi << 8) | opcode);
    ctrl->qpn_ds           = htobe32((wq->qpn << 8) | ds);
    ctrl->signature        = 0;
    ctrl->dci_stream_channel_id = 0;
    ctrl->fm_ce_se         = ((wr->send_flags & IBV_SEND_SIGNALED) ?
                              MLX5_WQE_CTRL_CQ_UPDATE : 0) |
                             ((wr->send_flags & IBV_SEND_SOLICITED) ?
                              MLX5_WQE_CTRL_SOLICITED : 0) |
                             ((wr->send_flags & IBV_SEND_FENCE) ?
                              MLX5_WQE_CTRL_FENCE : 0);
    ctrl->imm              = 0;
    if ((wr->opcode == IBV_WR_SEND_WITH_IMM) ||
        (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        ctrl->imm = wr->imm_data; /* set only for these, as verbs reads it */
    }

    if (!in_place) {
        first = ucs_min(size, (size_t)(wq->qend - wq->qstart) - off);
        memcpy(wq->qstart + off, buf, first);
        memcpy(wq->qstart, (char*)buf + first, size - first);
    }
    wq->wrid[wq->pi & wq->mask]      = wr->wr_id;
    wq->wc_opcode[wq->pi & wq->mask] = wc_opcode;
    wq->pi                          += bbs;

    /* the WQE before the record that covers it */
    qpx_mlx5_wmb();
    *wq->dbrec = htobe32(wq->pi);
    /* the record before the register that makes the device read it */
    qpx_mlx5_wmb();
    *wq->reg = *(const uint64_t*)ctrl;
    qpx_mlx5_mmio_flush();
    return 0;
}


/* Whether cq's next entry is the software's: the test qpx_mlx5_poll
 * begins with, inline in the progress of a direct interface so that an
 * empty CQ costs no call */
static UCS_F_ALWAYS_INLINE int qpx_mlx5_cq_ready(const qpx_mlx5_cq_t *cq)
{
    const struct mlx5_cqe64 *cqe;
    uint8_t op_own;

    cqe    = (const void*)(cq->buf + (size_t)(cq->ci & cq->mask) * cq->stride +
                           cq->stride - sizeof(*cqe));
    op_own = *(const volatile uint8_t*)&cqe->op_own;
    return ((op_own & MLX5_CQE_OWNER_MASK) == ((cq->ci >> cq->log_cnt) & 1)) &&
           ((op_own >> 4) != MLX5_CQE_INVALID);
}

#else

static inline int qpx_mlx5_cq_ready(const qpx_mlx5_cq_t *cq)
{
    return 1;
}

static inline int qpx_mlx5_post_inline(qpx_mlx5_txwq_t *wq,
                                       const struct ibv_send_wr *wr)
{
    return qpx_mlx5_post(wq, wr);
}

#endif

#endif
