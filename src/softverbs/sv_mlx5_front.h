/*
 * The mlx5 personality of softverbs (SOFTVERBS_MLX5=1): the queues a
 * program that drives an mlx5 HCA directly sees through mlx5dv_init_obj(3)
 * ("front" objects), and the engine that plays the HCA behind them.
 *
 * Each front belongs to one internal softverbs object (QP, CQ, SRQ), which
 * keeps doing the transport as for a verbs program; the front holds what
 * libmlx5 hands out (mlx5dv.h): a send queue of 64-byte basic blocks and
 * its doorbell record, a CQ buffer of 64- or 128-byte CQEs with owner bits
 * and its doorbell record, an SRQ buffer of linked receive WQEs and its
 * counter. A program writes WQEs and doorbell records with plain stores and
 * never calls softverbs on its data path, so one engine thread per process
 * (sv_mlx5_engine.c) follows the doorbell records: it turns new send WQEs
 * into internal posts, mirrors new receive WQEs into the internal SRQ, and
 * writes the internal completions as mlx5 CQEs.
 *
 * What is there today (docs/mlx5-plan.md §5): RC and UD QPs and DC
 * initiators (their send queues; a UD QP's receive queue), CQs
 * (mlx5dv_create_cq or ibv_create_cq; arming through the doorbell record
 * raises the completion channel's event), SRQs (also in the linked-list
 * order of dc_mlx5), AHs (the address vector UCX copies into its WQEs) and
 * DMs, and the send opcodes UCX's rc_mlx5, ud_mlx5 and dc_mlx5 write
 * (SEND, SEND_IMM, RDMA_WRITE, RDMA_READ, ATOMIC_CS, ATOMIC_FA, NOP).
 */
#ifndef SV_MLX5_FRONT_H
#define SV_MLX5_FRONT_H

#include <infiniband/mlx5dv.h>
#include <stdint.h>

#include "sv.h"

/* A CQ's front: entry i at buf + (i mod cqe_cnt) * cqe_size, its mlx5_cqe64
 * in the last 64 bytes */
struct sv_mlx5_cq {
    struct sv_cq     *cq;          /* the internal CQ */
    char             *buf;
    uint32_t          cqe_cnt;     /* a power of two */
    uint32_t          cqe_size;    /* 64 or 128 */
    __be32           *dbrec;       /* [0] consumer index, [1] arm word */
    uint32_t          pi;          /* next entry the engine writes */
    uint32_t          sol_pi;      /* 1 + the last solicited entry, 0: none */
    uint32_t          arm_done;    /* the arm word last answered (+ valid) */
    int               arm_valid;
    struct sv_mlx5_cq *next;
};

/* A QP's front: the send queue the program writes */
struct sv_mlx5_qp {
    struct sv_qp     *qp;          /* the internal QP */
    char             *sq_buf;
    uint32_t          wqe_cnt;     /* 64-byte blocks, a power of two */
    __be32           *dbrec;       /* [MLX5_RCV_DBR], [MLX5_SND_DBR] */
    uint16_t          sq_ci;       /* next block the engine reads */
    int               nop_wait;    /* a signalled NOP waits for the WQEs
                                      before it: its CQE comes after theirs */
    uint16_t          nop_idx;
    int               nop_ready;   /* its WQEs had finished before a drain */
    char             *bounce;      /* inline bytes of a WQE, as an SGE */
    struct ibv_mr    *bounce_mr;
    /* a UD QP's receive queue: 16-byte WQEs (one data segment), posted
     * while the counter in dbrec[MLX5_RCV_DBR] runs ahead */
    char             *rq_buf;
    uint32_t          rq_cnt;      /* a power of two, 0: none */
    uint16_t          rq_mirrored;
    /* receive completions in the order of the queue, as an HCA writes
     * them (ud_mlx5 asserts it): requesters of several processes take
     * WQEs in order but may finish out of it; one finished ahead of
     * rq_done waits in rq_held[counter mod rq_cnt] (wr_id == counter) */
    uint16_t          rq_done;
    struct ibv_wc    *rq_held;
    uint8_t          *rq_held_set;
    /* address handles of the address vectors UD and DCI WQEs carry */
    struct sv_mlx5_ah *ahs;
    uint32_t          nah, ah_cap;
    struct sv_mlx5_qp *next;
};

/* An address vector's handle: the AV's fields as ibv_ah_attr */
struct sv_mlx5_ah {
    struct ibv_ah_attr attr;
    struct ibv_ah     *ah;
};

#define SV_MLX5_MAX_AH     4096   /* per QP */

/* An SRQ's front: (tail + 1) WQEs of a next segment and one data segment */
struct sv_mlx5_srq {
    struct sv_srq    *srq;         /* the internal SRQ */
    char             *buf;
    uint32_t          tail;        /* index mask */
    __be32           *dbrec;       /* the program's 16-bit counter */
    uint16_t          mirrored;    /* WQEs posted to the internal SRQ */
    uint16_t          next_idx;    /* the next WQE to take: the head (0),
                                      then the link each WQE had when it
                                      was taken */
    struct sv_mlx5_srq *next;
};

#define SV_MLX5_MAX_SGE    16     /* data segments of one WQE */
#define SV_MLX5_SRQ_STRIDE 32     /* next segment + one data segment */
#define SV_MLX5_BOUNCE_PAD 1024   /* a WQE's inline bytes past its slot */

/* The fronts of this process, under sv_mlx5_lock (the engine holds it for
 * a whole round; a destroy takes it to unlink) */
struct sv_mlx5_fronts {
    pthread_mutex_t     lock;
    struct sv_mlx5_cq  *cqs;
    struct sv_mlx5_qp  *qps;
    struct sv_mlx5_srq *srqs;
    char               *uar;      /* one 4 KiB page: bf.reg, cq_uar */
    int                 engine_started;
    int                 engine_stop;
    pthread_t           engine;
};

extern struct sv_mlx5_fronts sv_mlx5;        /* sv_mlx5_engine.c */

void sv_mlx5_engine_start(void);            /* under sv_mlx5.lock */
/* sv_mlx5_cq.c, under sv_mlx5.lock: a CQ's internal completions as
 * CQEs (the count written; qps: the QP fronts, whose NOPs and receive
 * order it completes), and one error CQE */
int  sv_mlx5_cq_drain(struct sv_mlx5_cq *f, struct sv_mlx5_qp *qps);
void sv_mlx5_cqe_err(struct sv_mlx5_cq *f, uint8_t opcode, uint8_t syndrome,
                     uint8_t vendor, uint32_t qpn, uint16_t wqe_counter);
int  sv_mlx5_engine_round(void);            /* under sv_mlx5.lock */
void sv_mlx5_qp_detach(struct sv_qp *qp);   /* ibv_destroy_qp */
void sv_mlx5_qp_reset(struct sv_qp *qp);    /* ibv_modify_qp to RESET */
void sv_mlx5_cq_detach(struct sv_cq *cq);   /* ibv_destroy_cq */
void sv_mlx5_srq_detach(struct sv_srq *srq);/* ibv_destroy_srq */

#endif
