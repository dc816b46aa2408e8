/*
 * softverbs conformance suite: memory window cases, shared helpers
 * (softverbs_conformance_mw.c: type 1, capabilities, bind errors;
 * softverbs_conformance_mw_inv.c: type 2, invalidation, denied access).
 *
 * The two-rank cases keep the windows in rank 0 and let rank 1 access them:
 * rank 0 sends rank 1 one command at a time (svt_mw_ask) and rank 1 runs it
 * on its QP and answers with the completion status (svt_mw_serve).
 */
#ifndef SOFTVERBS_CONFORMANCE_MW_H
#define SOFTVERBS_CONFORMANCE_MW_H

#include "softverbs_conformance.h"

enum svt_mw_op {
    SVT_MW_DONE = 0,
    SVT_MW_READ,        /* RDMA READ of len bytes, checked against seed */
    SVT_MW_WRITE,       /* RDMA WRITE of len bytes of pattern seed */
    SVT_MW_FAA,         /* fetch-and-add of arg: value is the old value */
    SVT_MW_SEND_INV,    /* SEND_WITH_INV of rkey, len bytes of seed */
    SVT_MW_SEND_INV_WR, /* the same through ibv_wr_send_inv */
};

typedef struct svt_mw_cmd {
    int32_t  op;
    int32_t  qp;        /* which of rank 1's QPs */
    uint32_t rkey;
    uint32_t len;
    uint64_t raddr;
    uint64_t arg;
    uint32_t seed;
    uint32_t pad;
} svt_mw_cmd_t;

typedef struct svt_mw_ans {
    int32_t  status;    /* enum ibv_wc_status */
    int32_t  bad;       /* READ: first byte not as expected, -1: none */
    uint64_t value;     /* FAA: the value fetched */
} svt_mw_ans_t;

/* Window operations every case's QPs take (ibv_create_qp_ex) */
#define SVT_MW_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | \
                    IBV_QP_EX_WITH_RDMA_READ | \
                    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
                    IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | \
                    IBV_QP_EX_WITH_SEND_WITH_INV)
#define SVT_MW_RWA (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
                    IBV_ACCESS_REMOTE_ATOMIC)

/* Endpoint options whose MR takes windows (IBV_ACCESS_MW_BIND) */
void svt_mw_opts(svt_ep_opts_t *o, enum ibv_qp_type type);
/* svt_ep_pair, the QP from ibv_create_qp_ex with SVT_MW_OPS */
void svt_mw_ex_pair(svt_proc_t *p, int peer, svt_dev_t *dev,
                    const svt_ep_opts_t *o, svt_ep_t *ep);
/* Bind through ibv_bind_mw (type 1) or an IBV_WR_BIND_MW work request
 * (type 2, new key ibv_inc_rkey(mw->rkey), kept in mw->rkey on success),
 * signaled; the completion's status (its opcode checked on success) */
enum ibv_wc_status svt_mw_bind1(svt_ep_t *ep, struct ibv_mw *mw,
                                struct ibv_mr *mr, uint64_t addr,
                                uint64_t len, unsigned access);
enum ibv_wc_status svt_mw_bind2(svt_ep_t *ep, struct ibv_mw *mw,
                                struct ibv_mr *mr, uint64_t addr,
                                uint64_t len, unsigned access);
/* IBV_WR_LOCAL_INV of rkey, signaled: the completion's status */
enum ibv_wc_status svt_mw_local_inv(svt_ep_t *ep, uint32_t rkey);
/* rank 0: rank 1 runs cmd, the answer */
svt_mw_ans_t svt_mw_ask(svt_proc_t *p, int op, int qp, uint32_t rkey,
                        uint64_t raddr, uint32_t len, uint32_t seed,
                        uint64_t arg);
/* rank 1: create nqp endpoints (ex: with ibv_create_qp_ex) paired with
 * rank 0's, serve commands until DONE, clean up */
void svt_mw_peer(svt_proc_t *p, enum ibv_qp_type type, int nqp, int ex);
/* rank 0: the responder side of a refused access, as for an MR's rkey:
 * the QP in ERR and IBV_EVENT_QP_ACCESS_ERR */
void svt_mw_expect_denied(svt_dev_t *dev, svt_ep_t *ep);

extern const svt_case_t svt_cases_mw[];
extern const svt_case_t svt_cases_mw_inv[];
extern const svt_case_t svt_cases_pd[];

#endif
