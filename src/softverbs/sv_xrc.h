/*
 * softverbs XRC (eXtended Reliable Connected, IBA vol 1 Annex A14): the
 * registry's XRC domains and the process-local handles of them. The
 * domain verbs, XRC SRQs and the responder's SRQ lookup are in sv_xrc.c,
 * the XRC QPs in sv_xrc_qp.c. Included by sv.h for the registry's table of domains.
 *
 * Objects and where they live:
 *   XRC domain    registry (struct sv_shm_xrcd): shared by every process
 *                 that opened it through the same file (the kernel's
 *                 xrcd table keyed by inode, per device: ib_uverbs_open_xrcd
 *                 in drivers/infiniband/core/uverbs_cmd.c)
 *   XRC SRQ       an SRQ entry whose xrcd is set, with its own CQ (rcq):
 *                 receive completions go to the SRQ's CQ, not a QP's
 *   XRC_RECV QP   a QP entry of the domain (xrcd set), no PD, no CQs, no
 *                 receive queue; it lives while a handle (its creator's or
 *                 an ibv_open_qp's) holds it (xrc_refs), as the kernel's
 *                 shared target QP (__ib_destroy_shared_qp)
 *   XRC_SEND QP   an RC-like requester without a receive queue; each WR
 *                 names the remote XRC SRQ (XRCETH)
 */
#ifndef SV_XRC_H
#define SV_XRC_H

#include <stdint.h>

#define SV_XRCD_TBL 256           /* XRC domains of the host */

/* An XRC domain. Changed under the registry lock only. opens[p] counts
 * the handles process slot p holds (ibv_open_xrcd calls not yet closed):
 * a dead process's handles are dropped by the reaper, and the domain goes
 * with its last handle (uverbs' xrcd usecnt) */
struct sv_shm_xrcd {
    uint32_t in_use;
    uint32_t dev;                 /* device index: domains are per device */
    uint32_t has_inode;           /* 0: private (fd -1), never found */
    uint32_t total;               /* sum of opens[] */
    uint64_t st_dev;              /* the file's identity */
    uint64_t st_ino;
    uint16_t opens[SV_PROC_TBL];
};

/* A handle of a domain (ibv_open_xrcd). refs: the objects created or
 * opened through it (XRC SRQs, XRC_RECV QPs), which make ibv_close_xrcd
 * fail with EBUSY (uverbs_free_xrcd: ib_destroy_usecnt of the handle's
 * refcnt) */
struct sv_xrcd {
    struct ibv_xrcd xrcd;
    uint32_t index;               /* registry slot */
    uint32_t refs;                /* under the registry lock */
};

static inline struct sv_xrcd *sv_xrcd(struct ibv_xrcd *x)
{
    return sv_container_of(x, struct sv_xrcd, xrcd);
}

/* sv_xrc.c: the domains' verbs_context ops, XRC SRQs, the responder's
 * view of the target (dead processes' domains are reclaimed by
 * sv_reap.c); sv_xrc_qp.c: XRC QPs, ibv_open_qp, the handles' release,
 * the modify attributes XRC QPs ignore */
struct sv_srq;
struct sv_qp;
struct sv_shm_srq;
struct sv_shm_qp;
struct sv_resp_req;
void sv_xrc_init_ops(struct verbs_context *v);
void sv_xrc_qp_init_ops(struct verbs_context *v);
struct ibv_qp *sv_xrc_create_qp(struct ibv_context *ctx,
                                struct ibv_qp_init_attr_ex *attr);
int  sv_xrc_srq_check(struct ibv_context *ctx,
                      const struct ibv_srq_init_attr_ex *attr);
void sv_xrc_srq_bind(struct sv_srq *srq, struct sv_shm_srq *s,
                     const struct ibv_srq_init_attr_ex *attr);
void sv_xrc_srq_unbind(struct sv_srq *srq);
int  sv_xrc_qp_release(struct sv_qp *qp);
int  sv_xrc_modify_ignored(uint8_t sv_type);
int  sv_xrc_resp_target(struct sv_resp_req *r, const struct sv_shm_qp *dq,
                        struct sv_shm_qp *view);

#endif
