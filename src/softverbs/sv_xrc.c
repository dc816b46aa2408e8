/*
 * softverbs XRC (eXtended Reliable Connected; IBA vol 1 Annex A14, as
 * Linux's ib_core and mlx5 implement it): XRC domains (ibv_open_xrcd,
 * ibv_close_xrcd), XRC SRQs and the responder's SRQ lookup. The XRC_SEND
 * (initiator) and XRC_RECV (target) QPs and ibv_open_qp of a target are
 * sv_xrc_qp.c's, above the QP layer; the registry layout is in sv_xrc.h.
 *
 * Data path: an XRC_SEND QP is a requester like RC (sv_req.c) whose every
 * WQE names a remote SRQ (the XRCETH, wr.qp_type.xrc.remote_srqn or
 * ibv_wr_set_xrc_srqn). It is connected to an XRC_RECV QP; the responder
 * (sv_resp.c) checks that QP as an RC responder's, then resolves the SRQ
 * here: the SRQ must exist and belong to the target's XRC domain. The
 * message is placed through the SRQ: its WQE, its process's memory and
 * PD (also for RDMA and atomics), and its CQ, which gets the receive
 * completion with qp_num the target's (xsrq_pingpong finds its target QP
 * by wc.qp_num) and src_qp the initiator's.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------
 * Domains
 * ------------------------------------------------------------------- */
/* The domain opened through the file (st) on device dev, or -1; under
 * the registry lock */
static int sv_xrcd_find(uint32_t dev, const struct stat *st)
{
    struct sv_shm_xrcd *x;
    int i;

    for (i = 0; i < SV_XRCD_TBL; i++) {
        x = &sv_g.shm->xrcds[i];
        if (x->in_use && x->has_inode && (x->dev == dev) &&
            (x->st_dev == (uint64_t)st->st_dev) &&
            (x->st_ino == (uint64_t)st->st_ino)) {
            return i;
        }
    }
    return -1;
}

/* Frees a domain and the XRC_RECV QPs still in it (held by handles of
 * processes that died); under the registry lock */
/*
 * ibv_open_xrcd(3). The rules are libibverbs' and the kernel's:
 *  - comp_mask bits from IBV_XRCD_INIT_ATTR_RESERVED up: EOPNOTSUPP;
 *    without _FD and _OFLAGS: EINVAL (ibv_cmd_open_xrcd);
 *  - fd -1: a new domain of this handle alone; else the domain is the
 *    file's (its inode, per device): a bad fd is EBADF, a file without a
 *    domain and no O_CREAT EAGAIN, a file with one and O_EXCL EINVAL
 *    (ib_uverbs_open_xrcd, drivers/infiniband/core/uverbs_cmd.c).
 * Each call is a handle of its own, counted in the domain.
 */
static struct ibv_xrcd *sv_open_xrcd(struct ibv_context *ctx,
                                     struct ibv_xrcd_init_attr *attr)
{
    const uint32_t need = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    uint32_t dev = sv_ctx(ctx)->dev->index;
    struct sv_shm_xrcd *x;
    struct sv_xrcd *xh;
    struct stat st;
    int i, err = 0;

    if ((attr == NULL) || ((attr->comp_mask & need) != need)) {
        errno = EINVAL;
        return NULL;
    }
    if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((attr->fd != -1) && (fstat(attr->fd, &st) != 0)) {
        errno = EBADF;
        return NULL;
    }
    xh = calloc(1, sizeof(*xh));
    if (xh == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    i = (attr->fd == -1) ? -1 : sv_xrcd_find(dev, &st);
    if ((i < 0) && (attr->fd != -1) && !(attr->oflags & O_CREAT)) {
        err = EAGAIN;
    } else if ((i >= 0) && (attr->oflags & O_EXCL)) {
        err = EINVAL;
    } else if (i < 0) {
        for (i = 0; (i < SV_XRCD_TBL) && sv_g.shm->xrcds[i].in_use; i++)
            ;
        if (i == SV_XRCD_TBL) {
            err = ENOMEM;
        } else {
            x = &sv_g.shm->xrcds[i];
            memset(x, 0, sizeof(*x));
            x->in_use    = 1;
            x->dev       = dev;
            x->has_inode = (attr->fd != -1);
            x->st_dev    = x->has_inode ? (uint64_t)st.st_dev : 0;
            x->st_ino    = x->has_inode ? (uint64_t)st.st_ino : 0;
        }
    }
    if ((err == 0) && (sv_g.shm->xrcds[i].opens[sv_g.proc] == UINT16_MAX)) {
        err = ENOMEM; /* this process's handles of it */
    }
    if (err == 0) {
        sv_g.shm->xrcds[i].opens[sv_g.proc]++;
        sv_g.shm->xrcds[i].total++;
    }
    sv_shm_unlock();
    if (err != 0) {
        free(xh);
        errno = err;
        return NULL;
    }
    xh->xrcd.context = ctx;
    xh->index        = i;
    return &xh->xrcd;
}

/* ibv_close_xrcd(3): EBUSY while an SRQ or XRC_RECV QP created or opened
 * through this handle exists (uverbs_free_xrcd checks the handle's
 * refcnt); the domain goes with its last handle, and the target QPs that
 * dead processes' handles still held go with it */
static int sv_close_xrcd(struct ibv_xrcd *ibxrcd)
{
    struct sv_xrcd *xh = sv_xrcd(ibxrcd);
    struct sv_shm_xrcd *x = &sv_g.shm->xrcds[xh->index];

    sv_shm_lock();
    if (xh->refs > 0) {
        sv_shm_unlock();
        return EBUSY;
    }
    if (x->opens[sv_g.proc] > 0) {
        x->opens[sv_g.proc]--;
        x->total--;
    }
    if (x->total == 0) {
        sv_shm_xrcd_free(xh->index);
    }
    sv_shm_unlock();
    free(xh);
    return 0;
}

/* ---------------------------------------------------------------------
 * XRC SRQs
 * ------------------------------------------------------------------- */
/* An XRC SRQ's domain and CQ are this context's (the kernel's create_srq
 * looks both up among the caller's objects: EINVAL otherwise) */
int sv_xrc_srq_check(struct ibv_context *ctx,
                     const struct ibv_srq_init_attr_ex *attr)
{
    if ((attr->xrcd == NULL) || (attr->xrcd->context != ctx) ||
        (attr->cq == NULL) || (attr->cq->context != ctx)) {
        return EINVAL;
    }
    return 0;
}

/* Under the registry lock, before the SRQ is published: its domain and
 * CQ (the SRQ's receive completions go there, man ibv_create_srq_ex), a
 * reference on the handle and on the CQ */
void sv_xrc_srq_bind(struct sv_srq *srq, struct sv_shm_srq *s,
                     const struct ibv_srq_init_attr_ex *attr)
{
    struct sv_xrcd *xh = sv_xrcd(attr->xrcd);

    s->xrcd     = xh->index + 1;
    s->rcq      = sv_cq(attr->cq)->index;
    srq->xrcd   = xh;
    srq->xrc_cq = sv_cq(attr->cq);
    xh->refs++;
    __atomic_fetch_add(&srq->xrc_cq->xrc_srqs, 1, __ATOMIC_RELAXED);
}

/* Under the registry lock, the SRQ destroyed */
void sv_xrc_srq_unbind(struct sv_srq *srq)
{
    srq->xrcd->refs--;
    __atomic_fetch_sub(&srq->xrc_cq->xrc_srqs, 1, __ATOMIC_RELAXED);
    srq->xrcd = NULL;
}

/* ---------------------------------------------------------------------
 * Responder
 * ------------------------------------------------------------------- */
/*
 * The SRQ of a request to the XRC target dq: the XRCETH's SRQ number
 * (r->wqe->xrc_srqn) must name an XRC SRQ of dq's domain (Annex A14: a
 * target QP delivers only to the SRQs of its XRC domain). In *view, dq as
 * the rest of the responder sees it: the SRQ's process, PD, receive queue
 * and CQ, so that receive buffers, R_Keys and the completion are the
 * SRQ's (the target QP has no PD or CQ of its own). A request naming no
 * such SRQ is an access violation of the target: NAKed with a remote
 * access error, nothing placed, the target goes to ERR with
 * IBV_EVENT_QP_ACCESS_ERR (the responder's class C handling, as for an
 * R_Key violation: sv_resp.c).
 */
int sv_xrc_resp_target(struct sv_resp_req *r, const struct sv_shm_qp *dq,
                       struct sv_shm_qp *view)
{
    uint32_t srqn = r->wqe->xrc_srqn;
    struct sv_shm_srq *s;

    if ((srqn == 0) || (srqn >= SV_SRQ_TBL)) {
        sv_error("xrc qp 0x%x: request from qp 0x%x names no SRQ (%u)",
                 dq->qpn, r->qp->shm->qpn, srqn);
        return SV_RESP_NAK_ACCESS;
    }
    s = &sv_g.shm->srqs[srqn];
    /* acquire: the SRQ's fields are complete once in_use is seen */
    if (!__atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE) || (s->xrcd == 0) ||
        (s->xrcd != dq->xrcd)) {
        sv_error("xrc qp 0x%x: request from qp 0x%x for SRQ %u, not an "
                 "XRC SRQ of its domain", dq->qpn, r->qp->shm->qpn, srqn);
        return SV_RESP_NAK_ACCESS;
    }
    *view        = *dq;
    view->proc   = s->proc;
    view->pid    = s->pid;
    view->pd_id  = s->pd_id;
    view->rcq    = s->rcq;
    view->srq    = srqn + 1;
    view->rq_off = 0;
    view->cookie = s->cookie; /* probed for the SRQ's process */
    return SV_RESP_ACK;
}

/* ---------------------------------------------------------------------
 * Ops
 * ------------------------------------------------------------------- */
void sv_xrc_init_ops(struct verbs_context *v)
{
    v->open_xrcd  = sv_open_xrcd;
    v->close_xrcd = sv_close_xrcd;
}
