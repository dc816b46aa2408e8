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
 * to 16 bytes; returns the end, or NULL when they pass end */
static UCS_F_ALWAYS_INLINE char *
qpx_mlx5_set_inline(char *p, const char *end, const struct ibv_send_wr *wr)
{
    uint32_t inl = 0;
    int i;

    for (i = 0; i < wr->num_sge; ++i) {
        if (ucs_unlikely(p + 4 + inl + wr->sg_list[i].length > end)) {
            return NULL;
        }
        memcpy(p + 4 + inl, (void*)(uintptr_t)wr->sg_list[i].addr,
               wr->sg_list[i].length);
        inl += wr->sg_list[i].length;
    }
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


/* The control segment of a WQE of size bytes at the producer index */
static UCS_F_ALWAYS_INLINE void
qpx_mlx5_set_ctrl(struct mlx5_wqe_ctrl_seg *ctrl, const qpx_mlx5_txwq_t *wq,
                  uint8_t opcode, size_t size, const struct ibv_send_wr *wr)
{
    ctrl->opmod_idx_opcode      = htobe32(((uint32_t)wq->pi << 8) | opcode);
    ctrl->qpn_ds                = htobe32((wq->qpn << 8) |
                                          (uint32_t)(size / 16));
    ctrl->signature             = 0;
    ctrl->dci_stream_channel_id = 0;
    ctrl->fm_ce_se              = ((wr->send_flags & IBV_SEND_SIGNALED) ?
                                   MLX5_WQE_CTRL_CQ_UPDATE : 0) |
                                  ((wr->send_flags & IBV_SEND_SOLICITED) ?
                                   MLX5_WQE_CTRL_SOLICITED : 0) |
                                  ((wr->send_flags & IBV_SEND_FENCE) ?
                                   MLX5_WQE_CTRL_FENCE : 0);
    ctrl->imm                   = 0;
    if ((wr->opcode == IBV_WR_SEND_WITH_IMM) ||
        (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
        ctrl->imm = wr->imm_data; /* set only for these, as verbs reads it */
    }
}


/*
 * The WQE of size bytes built at ctrl (in place at offset off, or staged
 * where it wraps: copied in now) posted: its WR id and completion opcode
 * kept at its first block, the doorbell record moved past it after a
 * store fence (the device reads the WQE once it sees the record), and the
 * first 8 bytes of the control segment written to the doorbell register
 * after another (the record before the register).
 */
static UCS_F_ALWAYS_INLINE void
qpx_mlx5_ring(qpx_mlx5_txwq_t *wq, const struct mlx5_wqe_ctrl_seg *ctrl,
              int in_place, size_t off, size_t size, uint64_t wr_id,
              uint8_t wc_opcode)
{
    size_t first;

    if (!in_place) {
        first = ucs_min(size, (size_t)(wq->qend - wq->qstart) - off);
        memcpy(wq->qstart + off, ctrl, first);
        memcpy(wq->qstart, (const char*)ctrl + first, size - first);
    }
    wq->wrid[wq->pi & wq->mask]      = wr_id;
    wq->wc_opcode[wq->pi & wq->mask] = wc_opcode;
    wq->pi += (uint16_t)((size + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);

    /* the WQE before the record that covers it */
    qpx_mlx5_wmb();
    *wq->dbrec = htobe32(wq->pi);
    /* the record before the register that makes the device read it */
    qpx_mlx5_wmb();
    *wq->reg = *(const uint64_t*)ctrl;
    qpx_mlx5_mmio_flush();
}


/*
 * Post one WR as a WQE at the producer index and ring the doorbell: a DCI's
 * or a UD QP's when av is not NULL (its datagram segment after the control
 * segment, to dct_num or the remote QP with its key), an RC QP's else.
 * The WQE is built in place, or in a staging buffer where it might wrap
 * from the end of the queue to its start. Returns 0 or EINVAL (an opcode
 * or a size the queue does not take; nothing posted). Inlined in the
 * direct path's operations (constant opcodes, flags and av fold away);
 * qpx_mlx5_post and qpx_mlx5_post_dc are the same out of line (qpx_ud
 * posts only inline).
 */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_wqe_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                         const struct mlx5_wqe_av *av, uint32_t dct_num,
                         uint64_t dc_key)
{
    uint64_t buf[QPX_MLX5_MAX_WQE / sizeof(uint64_t)];
    size_t off   = (size_t)(wq->pi & wq->mask) * MLX5_SEND_WQE_BB;
    int in_place = (off + wq->max_wqe <= (size_t)(wq->qend - wq->qstart));
    struct mlx5_wqe_ctrl_seg *ctrl = in_place ? (void*)(wq->qstart + off) :
                                                (void*)buf;
    char *p                        = (char*)(ctrl + 1);
    char *end                      = (char*)ctrl + wq->max_wqe;
    uint8_t opcode, wc_opcode = 0;

    opcode = qpx_mlx5_opcode(wr->opcode, &wc_opcode);
    if (ucs_unlikely(opcode == 0xff)) {
        return EINVAL;
    }
    if (av != NULL) {
        p = qpx_mlx5_set_dgram(p, av, dct_num, dc_key);
    }
    /* tested on the WR's opcode, as its writer tests it before filling the
     * atomic part (the compiler then sees that part written) */
    if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
        (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        p = qpx_mlx5_set_atomic(p, wr);
    } else if ((opcode != MLX5_OPCODE_SEND) &&
               (opcode != MLX5_OPCODE_SEND_IMM)) {
        p = qpx_mlx5_set_raddr(p, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
    }
    if ((wr->send_flags & IBV_SEND_INLINE) &&
        (opcode != MLX5_OPCODE_RDMA_READ) && (opcode != MLX5_OPCODE_ATOMIC_CS) &&
        (opcode != MLX5_OPCODE_ATOMIC_FA)) {
        p = qpx_mlx5_set_inline(p, end, wr);
    } else {
        p = qpx_mlx5_set_dptrs(p, end, wr);
    }
    if (ucs_unlikely(p == NULL)) {
        return EINVAL;
    }

    qpx_mlx5_set_ctrl(ctrl, wq, opcode, p - (char*)ctrl, wr);
    qpx_mlx5_ring(wq, ctrl, in_place, off, p - (char*)ctrl, wr->wr_id,
                  wc_opcode);
    return 0;
}


/* An RC QP's WQE (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, NULL, 0, 0);
}


/* A DCI's WQE to DCT dct_num behind av (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_dc_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                        const struct mlx5_wqe_av *av, uint32_t dct_num,
                        uint64_t dc_key)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, av, dct_num, dc_key);
}


/* A UD QP's WQE to wr->wr.ud's remote QP and Q_Key behind av
 * (qpx_mlx5_post_wqe_inline) */
static UCS_F_ALWAYS_INLINE int
qpx_mlx5_post_ud_inline(qpx_mlx5_txwq_t *wq, const struct ibv_send_wr *wr,
                        const struct mlx5_wqe_av *av)
{
    return qpx_mlx5_post_wqe_inline(wq, wr, av, wr->wr.ud.remote_qpn,
                                    (uint64_t)wr->wr.ud.remote_qkey << 32);
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
