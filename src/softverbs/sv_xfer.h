/*
 * softverbs' transfer engine, as the files of the data path call it: the
 * requester (sv_req.c) runs a QP's send WQEs in the poster's thread, the
 * responder (sv_resp.c) executes each request against the target QP and
 * its memory and answers as IBA's responder does (ACK, RNR NAK, NAKs), the
 * completer (sv_comp.c) writes the requester's completions; the bytes
 * cross processes through sv_mem.c. Included by those files and by the
 * few that start the requester (a post, a poll, a state change) or answer
 * for a responder (memory windows, XRC).
 */
#ifndef SV_XFER_H
#define SV_XFER_H

#include "sv.h"

/* requester / responder / completer */
enum sv_resp_status {
    SV_RESP_ACK = 0,              /* done */
    SV_RESP_RNR,                  /* no receive WQE: RNR NAK */
    SV_RESP_NORESP,               /* dropped: peer gone or not ready */
    SV_RESP_NAK_ACCESS,           /* remote access error */
    SV_RESP_NAK_INV,              /* remote invalid request */
    SV_RESP_NAK_OP,               /* remote operational error */
    SV_RESP_LOC_PROT,             /* local (requester) protection error */
    SV_RESP_LOC_LEN,              /* local length error */
    SV_RESP_MW_BIND,              /* local: the bind failed its checks */
    SV_RESP_LOC_QP_OP,            /* local: a local operation failed */
};

struct sv_resp_req {
    struct sv_qp *qp;             /* requester */
    struct sv_swqe *wqe;
    struct iovec *liov;           /* requester's gathered buffers */
    int liovcnt;
    uint32_t dest_qpn;
    uint32_t qkey;
    uint64_t dc_key;              /* DCI: the key the request carries */
    uint8_t  min_rnr_timer;       /* out: responder's timer */
};

int  sv_req_progress(struct sv_qp *qp);
int  sv_resp_execute(struct sv_resp_req *req);
void sv_comp_wqe(struct sv_qp *qp, struct sv_swqe *wqe,
                 enum ibv_wc_status status);
void sv_comp_flush_sq(struct sv_qp *qp);

/* Holds on MRs (sv_obj.c): keys a transfer moves data through, which a
 * deregistration waits for: add one (0, or -1 when this process has no
 * free slot: release and retry), release all but the first keep; wait
 * until no live process holds key */
struct sv_mr_holds {
    int     n;
    uint8_t slot[SV_MAX_SGE];
};
int  sv_mr_hold(struct sv_mr_holds *h, uint32_t key);
/* sv_mr_hold, waiting for a slot other threads of this process free when
 * h holds nothing else: 0, or -2 when h holds others (release them, start
 * again: two threads holding some and waiting for more could wait for
 * each other) */
int  sv_mr_hold_wait(struct sv_mr_holds *h, uint32_t key);
void sv_mr_release(struct sv_mr_holds *h, int keep);
void sv_mr_wait_unheld(uint32_t key);
/* The generation m's fields are read in (even: no ibv_rereg_mr under way);
 * hold key once a check of m's fields of generation gen passed: 0, -1 when
 * m no longer holds the key, -2 as sv_mr_hold_wait, -3 when m was
 * reregistered since (check again) */
uint32_t sv_mr_gen(struct sv_shm_mr *m);
int  sv_mr_hold_checked(struct sv_mr_holds *h, struct sv_shm_mr *m,
                        uint32_t key, uint32_t gen);
/* the responder's checks and lookups (sv_resp_check.c) */
/* The destination QP's process is alive (probed at most once a ms per
 * requester QP): 1, or 0 when it is gone */
int sv_resp_peer_alive(struct sv_qp *qp, struct sv_shm_qp *dq);
/* The destination QP takes r: SV_RESP_ACK or why not */
int sv_resp_check_qp(struct sv_resp_req *r, struct sv_shm_qp *dq);
/* rkey grants access to [addr, addr + len) of dq's process: SV_RESP_ACK
 * and the target in riov, else SV_RESP_NAK_ACCESS */
int sv_resp_check_rkey(struct sv_shm_qp *dq, uint32_t rkey,
                       uint64_t addr, uint64_t len, unsigned access,
                       struct iovec *riov, struct sv_mr_holds *holds);
/* The receive queue dq consumes from (its SRQ's: *srq), or NULL */
struct sv_rq_hdr *sv_resp_rq(struct sv_shm_qp *dq, struct sv_shm_srq **srq);
/* The SRQ limit event, once, when s dropped below its limit */
void sv_resp_srq_limit(struct sv_shm_srq *s, struct sv_rq_hdr *rq,
                       uint32_t index);
/* A receive WQE's SGEs as iovecs of dq's process: their capacity, or -1
 * for an SGE its MRs do not cover */
ssize_t sv_resp_recv_iov(struct sv_shm_qp *dq, struct sv_rwqe *w,
                         struct iovec *riov, int *cnt,
                         struct sv_mr_holds *holds);
/* The GRH a UD receive of r gets (paylen bytes after it) */
void sv_resp_build_grh(struct sv_resp_req *r, struct ibv_grh *grh,
                       uint32_t paylen);

/* memory movement between processes (sv_mem.c) */
void   sv_iov_copy(const struct iovec *dst, int dcnt,
                   const struct iovec *src, int scnt);
size_t sv_iov_len(const struct iovec *iov, int cnt);
int    sv_iov_trim(struct iovec *iov, int cnt, size_t len);
void sv_mem_deferred_thread(void);
int  sv_mem_is_deferred(void);
int  sv_mem_write(int32_t pid, const struct iovec *liov, int lcnt,
                  const struct iovec *riov, int rcnt);
int  sv_mem_read(int32_t pid, const struct iovec *liov, int lcnt,
                 const struct iovec *riov, int rcnt);
void sv_mem_allow_peers(void);

#endif
