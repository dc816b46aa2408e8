/*
 * softverbs XRC QPs (IBA vol 1 Annex A14; the data path is described in
 * sv_xrc.c): creating XRC_SEND (initiator) and XRC_RECV (target) QPs,
 * ibv_open_qp of a target by another handle of its domain, the release of
 * a target's handle, and the modify attributes XRC QPs ignore. Builds on
 * the QP layer (sv_qp_create.c) and the domains (sv_xrc.c); called by
 * ibv_create_qp_ex and ibv_destroy_qp (sv_qp.c) and ibv_modify_qp.
 */
#include "sv.h"
#include "sv_xfer.h"

#include <stdlib.h>
#include <string.h>

/* The modify attributes an XRC QP ignores: the kernel's modify_qp_mask
 * (uverbs_cmd.c) takes them out of the mask before the transition table
 * (ib_modify_qp_is_ok) sees it: an initiator has no responder resources
 * or RNR timer, a target no requester's. With them out, the table's XRC
 * columns are RC's (qp_state_table in drivers/infiniband/core/verbs.c:
 * e.g. INIT->RTR of XRC_INI needs AV, PATH_MTU, DEST_QPN, RQ_PSN; RTR->RTS
 * of XRC_TGT TIMEOUT and SQ_PSN) */
int sv_xrc_modify_ignored(uint8_t sv_type)
{
    switch (sv_type) {
    case IBV_QPT_XRC_SEND:
        return IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    case IBV_QPT_XRC_RECV:
        return IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
    default:
        return 0;
    }
}

/*
 * ibv_create_qp_ex of XRC QPs.
 * XRC_SEND: a PD and a send CQ, as any requester (EINVAL without); no
 *   receive queue: max_recv_wr and max_recv_sge are 0, a receive CQ or
 *   SRQ given is not used (the kernel's create_qp for XRC_INI).
 * XRC_RECV: IBV_QP_INIT_ATTR_XRCD with a domain of this context, else
 *   EINVAL (libibverbs' ibv_cmd_create_qp_ex2, the kernel's create_qp);
 *   PD, CQs, SRQ and caps are not used: all caps come back 0, and the QP
 *   takes no send or receive WR (create_xrc_qp_user).
 */
struct ibv_qp *sv_xrc_create_qp(struct ibv_context *ctx,
                                struct ibv_qp_init_attr_ex *attr)
{
    struct ibv_qp_init_attr_ex ex = *attr;
    struct ibv_qp *ibqp;
    int err;

    err = sv_qp_init_attr_check(attr);
    if (err != 0) {
        errno = err;
        return NULL;
    }
    ex.srq     = NULL;
    ex.recv_cq = NULL;
    if (attr->qp_type == IBV_QPT_XRC_SEND) {
        if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->pd == NULL) ||
            (attr->send_cq == NULL)) {
            errno = EINVAL;
            return NULL;
        }
        ex.cap.max_recv_wr = ex.cap.max_recv_sge = 0;
        ibqp = sv_qp_create(ctx, &ex, IBV_QPT_XRC_SEND);
        if (ibqp != NULL) {
            ibqp->recv_cq = NULL;
            attr->cap     = ex.cap;
        }
        return ibqp;
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || (attr->xrcd == NULL) ||
        (attr->xrcd->context != ctx)) {
        errno = EINVAL;
        return NULL;
    }
    ex.pd      = NULL;
    ex.send_cq = NULL;
    ibqp = sv_qp_create(ctx, &ex, IBV_QPT_XRC_RECV);
    if (ibqp == NULL) {
        return NULL;
    }
    sv_shm_lock();
    sv_qp(ibqp)->xrcd = sv_xrcd(attr->xrcd);
    sv_qp(ibqp)->xrcd->refs++;
    sv_shm_unlock();
    ibqp->pd      = NULL;
    ibqp->send_cq = ibqp->recv_cq = NULL;
    attr->cap     = ex.cap;
    return ibqp;
}

/*
 * ibv_open_qp(3): a handle of an XRC_RECV QP of the domain, e.g. one
 * another process created. comp_mask must give the number, the domain and
 * the type, the type must be XRC_RECV, and the QP must be a target of
 * that domain: EINVAL otherwise (libibverbs' ibv_cmd_open_qp; the
 * kernel's ib_open_qp refuses another type and finds the QP in the
 * domain's tgt_qps only). The QP lives until its last handle is destroyed
 * (sv_xrc_qp_release); a handle can modify and query it.
 */
static struct ibv_qp *sv_open_qp(struct ibv_context *ctx,
                                 struct ibv_qp_open_attr *attr)
{
    const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
                          IBV_QP_OPEN_ATTR_TYPE;
    struct sv_shm_qp *q;
    struct sv_xrcd *xh;
    struct sv_qp *qp;

    if ((attr == NULL) || ((attr->comp_mask & need) != need) ||
        (attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED) ||
        (attr->qp_type != IBV_QPT_XRC_RECV) || (attr->xrcd == NULL) ||
        (attr->xrcd->context != ctx)) {
        errno = EINVAL;
        return NULL;
    }
    xh = sv_xrcd(attr->xrcd);
    qp = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    sv_shm_lock();
    q = sv_shm_qp_lookup(attr->qp_num);
    if ((q == NULL) || (q->type != IBV_QPT_XRC_RECV) ||
        (q->xrcd != xh->index + 1)) {
        sv_shm_unlock();
        free(qp);
        errno = EINVAL;
        return NULL;
    }
    q->xrc_refs++;
    xh->refs++;
    sv_shm_unlock();

    qp->index   = attr->qp_num & (SV_QP_TBL - 1);
    qp->shm     = q;
    qp->sv_type = IBV_QPT_XRC_RECV;
    qp->xrcd    = xh;
    pthread_mutex_init(&qp->lock, NULL);
    qp->attr.port_num                 = q->port;
    qp->attr.dest_qp_num              = q->dest_qpn;
    qp->attr.qp_access_flags          = q->access;
    qp->attr.min_rnr_timer            = q->min_rnr_timer;
    qp->qpx.qp_base.context    = ctx;
    qp->qpx.qp_base.qp_context = attr->qp_context;
    qp->qpx.qp_base.handle     = qp->index;
    qp->qpx.qp_base.qp_num     = q->qpn;
    qp->qpx.qp_base.state      = sv_qp_state(q);
    qp->qpx.qp_base.qp_type    = IBV_QPT_XRC_RECV;
    pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
    pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
    sv_qp_init_wr_ops(qp);
    return &qp->qpx.qp_base;
}

/* ibv_destroy_qp of an XRC_RECV handle: the handle goes; the QP with the
 * last one (__ib_destroy_shared_qp). Its async events were sent to the
 * creator's context: when the creator's handle goes first, they are no
 * longer sent (cookie 0), rather than name a freed QP */
int sv_xrc_qp_release(struct sv_qp *qp)
{
    struct sv_shm_qp *q = qp->shm;

    sv_shm_lock();
    if (q->cookie == (uintptr_t)&qp->qpx.qp_base) {
        q->cookie = 0;
    }
    if (--q->xrc_refs == 0) {
        /* release: responders that still see in_use find a whole entry */
        __atomic_store_n(&q->in_use, 0, __ATOMIC_RELEASE);
        sv_g.shm->num_qp--;
    }
    qp->xrcd->refs--;
    sv_shm_unlock();
    free(qp->wr_list);
    free(qp);
    return 0;
}

void sv_xrc_qp_init_ops(struct verbs_context *v)
{
    v->open_qp = sv_open_qp;
}
