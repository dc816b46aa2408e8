/*
 * softverbs conformance: mlx5 Dynamically Connected QPs, shared helpers of
 * softverbs_conformance_dc.c (creation, modify) and
 * softverbs_conformance_dc_data.c (traffic, errors). Only the public API:
 * mlx5dv_create_qp(3) with MLX5DV_QP_INIT_ATTR_MASK_DC, the ibv_wr_* API
 * and mlx5dv_wr_set_dc_addr(3).
 */
#ifndef SOFTVERBS_CONFORMANCE_DC_H
#define SOFTVERBS_CONFORMANCE_DC_H

#include "softverbs_conformance.h"

#include <infiniband/mlx5dv.h>
#include <softverbs/softverbs.h>

#define SVT_DC_KEY      0x5dc0ffee12345678ull  /* the DCTs' access key */
#define SVT_DC_CQ_SIZE  256
#define SVT_DC_SEND_WR  64
#define SVT_DC_INLINE   64

/* The ibv_wr_* operations of a DCI: those of RC (rdma-core
 * providers/mlx5/qp.c, MLX5_SUPPORTED_SEND_OPS_FLAGS_DCI) that softverbs
 * runs */
#define SVT_DC_SEND_OPS (IBV_QP_EX_WITH_SEND | \
                         IBV_QP_EX_WITH_SEND_WITH_IMM | \
                         IBV_QP_EX_WITH_RDMA_WRITE | \
                         IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
                         IBV_QP_EX_WITH_RDMA_READ | \
                         IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* A DCI or a DCT with its CQ, registered buffer and (DCT) SRQ */
typedef struct svt_dc_ep {
    svt_dev_t           *dev;
    int                 dct;
    struct ibv_cq       *cq;
    struct ibv_srq      *srq;  /* DCT */
    struct ibv_qp       *qp;
    struct ibv_qp_ex    *qpx;  /* DCI */
    struct mlx5dv_qp_ex *dv;   /* DCI */
    struct ibv_mr       *mr;
    uint8_t             *buf;
    size_t              size;
} svt_dc_ep_t;

/* Where a DCI's WR goes: the DCT (AH, number, key) and its memory */
typedef struct svt_dc_tgt {
    struct ibv_ah *ah;
    uint32_t      dctn;
    uint64_t      key;
    uint64_t      addr;
    uint32_t      rkey;
} svt_dc_tgt_t;

/* Default creation attributes of a DCI (srq NULL) or a DCT */
void svt_dc_init_attr(svt_dev_t *dev, struct ibv_cq *cq, int dct,
                      struct ibv_srq *srq, struct ibv_qp_init_attr_ex *init,
                      struct mlx5dv_qp_init_attr *dv);
/* A DCI or DCT (key SVT_DC_KEY) with a buffer of size bytes, in RESET */
void svt_dc_ep_create(svt_dev_t *dev, int dct, size_t size, svt_dc_ep_t *ep);
void svt_dc_ep_destroy(svt_dc_ep_t *ep);
/* DCI: RESET -> INIT -> RTR -> RTS with these RTS attributes */
void svt_dci_connect(svt_dc_ep_t *ep, uint8_t timeout, uint8_t retry_cnt,
                     uint8_t rnr_retry);
/* DCT: RESET -> INIT -> RTR */
void svt_dct_connect(svt_dc_ep_t *ep, uint8_t min_rnr_timer);
/* The address of a DCT (qpn: its DCT number) for the peers */
void svt_dc_addr(const svt_dc_ep_t *ep, svt_addr_t *addr);
/* A target for DCI ep: an AH to remote's LID, key */
void svt_dc_tgt_init(svt_dc_ep_t *ep, const svt_addr_t *remote, uint64_t key,
                     svt_dc_tgt_t *tgt);
/* Build one WR through ibv_wr_* (within ibv_wr_start/complete): op from
 * off of ep's buffer (len bytes; inline if IBV_SEND_INLINE in flags) to
 * roff of the target; imm for *_WITH_IMM, add/compare in arg1, swap in
 * arg2 for atomics */
void svt_dci_wr(svt_dc_ep_t *ep, const svt_dc_tgt_t *tgt,
                enum ibv_wr_opcode op, size_t off, uint32_t len, size_t roff,
                uint64_t arg1, uint64_t arg2, unsigned flags, uint64_t wr_id);
/* One WR, signaled, posted on its own: the ibv_wr_complete result */
int  svt_dci_post(svt_dc_ep_t *ep, const svt_dc_tgt_t *tgt,
                  enum ibv_wr_opcode op, size_t off, uint32_t len,
                  size_t roff, uint64_t arg1, uint64_t arg2, uint64_t wr_id);
/* softverbs_get_stats@SOFTVERBS_1.1 of process pid */
void svt_dc_stats(uint32_t pid, struct softverbs_stats *st);
/* ibv_query_qp's state, or the errno of ibv_query_qp negated */
int  svt_dc_state(struct ibv_qp *qp);
void svt_dc_post_srq_recv(svt_dc_ep_t *ep, size_t off, uint32_t len,
                          uint64_t wr_id);

#endif
