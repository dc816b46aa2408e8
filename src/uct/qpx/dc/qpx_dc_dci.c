/*
 * qpx_dc DCI pool: creation, the policies that give endpoints a DCI, send
 * completions, a DCI's failure and recovery, and the failure of the
 * endpoints it served (see qpx_dc_iface.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_dc.inl"


static ucs_status_t qpx_dc_dci_connect(qpx_dc_iface_t *iface,
                                       qpx_dc_dci_t *dci)
{
    return qpx_qp_dci_connect(dci->qp, iface->super.super.port_num,
                              &iface->super.conn);
}


static void qpx_dc_dci_reset_counters(qpx_dc_iface_t *iface,
                                      qpx_dc_dci_t *dci)
{
    dci->acked_sn     = dci->sn;
    dci->signaled_sn  = dci->sn;
    dci->sq_available = iface->super.super.config.tx_queue_len;
    dci->unsignaled   = 0;
    dci->quota_used   = 0;
    dci->flags        = 0;
}


static ucs_status_t qpx_dc_dci_init(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci,
                                    uint8_t index)
{
    ucs_status_t status;

    /* The first DCI is required; the others the interface can do without
     * (fewer DCIs, one warning from its init) */
    status = (index == 0) ?
             qpx_iface_qp_get(&iface->super.super, &dci->qp) :
             qpx_iface_qp_get_spare(&iface->super.super, &dci->qp);
    if (status != UCS_OK) {
        return status;
    }

    dci->qpx = ibv_qp_to_qp_ex(dci->qp);
    dci->mqp = (dci->qpx == NULL) ? NULL :
               mlx5dv_qp_ex_from_ibv_qp_ex(dci->qpx);
    if (dci->mqp == NULL) {
        ucs_error("dci 0x%x has no ibv_wr_* interface: %m", dci->qp->qp_num);
        status = UCS_ERR_UNSUPPORTED;
        goto err_destroy;
    }

    status = qpx_dc_dci_connect(iface, dci);
    if (status != UCS_OK) {
        goto err_destroy;
    }

    dci->index     = index;
    qpx_dc_dci_gen_set(dci, 0);
    dci->sn        = 0;
    dci->owner_id  = QPX_EP_ID_NULL;
    dci->target_id = QPX_EP_ID_NULL;
    dci->target_ah = NULL;
    dci->target_av = NULL;
    dci->target_dct = 0;
    /* the verbs path until qpx_dc_iface_dcis_direct_init */
    memset(&dci->txwq, 0, sizeof(dci->txwq));
    dci->last_used = 0;
    dci->num_targets = 0;
    ucs_list_head_init(&dci->ops);
    qpx_dc_dci_reset_counters(iface, dci);
    return UCS_OK;

err_destroy:
    qpx_qp_destroy(dci->qp);
    return status;
}


/* Stack of free DCIs, lowest index on top: all of them, at init */
static void qpx_dc_iface_dcis_free_all(qpx_dc_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        iface->free_dcis[i] = iface->num_dci - 1 - i;
    }
    iface->num_free = iface->num_dci;
}

ucs_status_t qpx_dc_iface_dcis_create(qpx_dc_iface_t *iface, unsigned num_dci,
                                      ucs_status_t *short_status_p)
{
    ucs_status_t status = UCS_OK;
    unsigned i;

    iface->num_dci  = 0;
    iface->num_free = 0;
    for (i = 0; i < num_dci; ++i) {
        status = qpx_dc_dci_init(iface, &iface->dcis[i], i);
        if (status != UCS_OK) {
            break;
        }
        ++iface->num_dci;
    }

    if (iface->num_dci == 0) {
        return status;
    }

    /* Out of QPs or memory on the HCA: fewer DCIs, not no interface (the
     * caller says so, once its DCT is made too) */
    *short_status_p = status;
    qpx_dc_iface_dcis_free_all(iface);
    return UCS_OK;
}

ucs_status_t qpx_dc_iface_dcis_direct_init(qpx_dc_iface_t *iface)
{
    ucs_status_t status;
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        status = qpx_mlx5_txwq_init(&iface->super.super, iface->dcis[i].qp,
                                    &iface->dcis[i].txwq);
        if (status != UCS_OK) {
            while (i-- > 0) {
                qpx_mlx5_txwq_cleanup(&iface->super.super,
                                      &iface->dcis[i].txwq);
            }
            return status;
        }
    }
    return UCS_OK;
}


void qpx_dc_iface_dci_give_way(qpx_dc_iface_t *iface)
{
    qpx_dc_dci_t *dci = &iface->dcis[iface->num_dci - 1];

    /* At init, with more than one DCI: no endpoint has had a DCI, none has
     * an operation on one */
    ucs_debug("qpx_dc: dci 0x%x gives way to the DCT", dci->qp->qp_num);
    qpx_mlx5_txwq_cleanup(&iface->super.super, &dci->txwq);
    qpx_qp_destroy(dci->qp);
    --iface->num_dci;
    qpx_dc_iface_dcis_free_all(iface);
}


void qpx_dc_iface_dcis_destroy(qpx_dc_iface_t *iface)
{
    qpx_dc_dci_t *dci;
    qpx_op_t *op;
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        dci = &iface->dcis[i];
        while (!ucs_list_is_empty(&dci->ops)) {
            op = ucs_list_extract_head(&dci->ops, qpx_op_t, list);
            op->cb(op, UCS_ERR_CANCELED);
        }
        qpx_mlx5_txwq_cleanup(&iface->super.super, &dci->txwq);
        qpx_qp_destroy(dci->qp);
    }
    iface->num_dci = 0;
}


static UCS_F_ALWAYS_INLINE int qpx_dc_dci_is_idle(qpx_dc_dci_t *dci)
{
    return dci->acked_sn == dci->sn;
}


/* The idle DCI owned by another endpoint that was used least recently, or
 * NULL (sticky) */
static qpx_dc_dci_t *qpx_dc_iface_dci_victim(qpx_dc_iface_t *iface)
{
    qpx_dc_dci_t *dci, *victim = NULL;
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        dci = &iface->dcis[i];
        if (qpx_dc_dci_is_idle(dci) && !dci->flags &&
            ((victim == NULL) || (dci->last_used < victim->last_used))) {
            victim = dci;
        }
    }
    return victim;
}


/* Whether endpoints keep one shared DCI for life (rand, spread) */
static UCS_F_ALWAYS_INLINE int qpx_dc_iface_policy_fixed(qpx_dc_iface_t *iface)
{
    return (iface->config.policy == QPX_DC_POLICY_RAND) ||
           (iface->config.policy == QPX_DC_POLICY_SPREAD);
}


/* spread: the DCI of another endpoint to ep's target, else the one with the
 * fewest endpoints */
static uint8_t qpx_dc_iface_dci_spread(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    qpx_dc_ep_t *other;
    unsigned i, best = 0;

    ucs_list_for_each(other, &iface->super.eps, list) {
        if ((other != ep) && (other->dci != QPX_DC_DCI_NONE) &&
            (other->ah == ep->ah) && (other->dct_num == ep->dct_num)) {
            return other->dci;
        }
    }
    for (i = 1; i < iface->num_dci; ++i) {
        if (iface->dcis[i].num_targets < iface->dcis[best].num_targets) {
            best = i;
        }
    }
    return best;
}


int qpx_dc_iface_dci_can_get(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    if (qpx_dc_iface_policy_fixed(iface)) {
        return 1;
    }
    if ((iface->num_dci_waiters > 0) &&
        !(ep->flags & QPX_DC_EP_FLAG_DCI_WAIT)) {
        return 0; /* behind the endpoints that waited first */
    }
    if (iface->num_free > 0) {
        return 1;
    }
    return (iface->config.policy == QPX_DC_POLICY_STICKY) &&
           (qpx_dc_iface_dci_victim(iface) != NULL);
}


static void qpx_dc_iface_dci_assign(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep,
                                    qpx_dc_dci_t *dci)
{
    dci->owner_id   = ep->id;
    dci->quota_used = 0;
    ep->dci         = dci->index;
    ep->last_sn     = dci->sn; /* nothing of ep's is outstanding on it */
}


/*
 * Ask for the completion of every DCI whose last requests were unsignalled:
 * a signalled zero-length RDMA write to its last target, which completes
 * them all. Only then is such a DCI known idle, to be given back (dcs,
 * dcs_quota) or taken (sticky): requests are signalled one in
 * tx_moderation, not one each, so that a busy endpoint's DCI costs no
 * completion per request. Done when an endpoint finds no DCI; a DCI
 * already asked (its last request signalled) is not asked again.
 */
void qpx_dc_iface_dci_solicit(qpx_dc_iface_t *iface)
{
    qpx_rdma_wr_t wr;
    qpx_dc_dci_t *dci;
    unsigned i;
    int ret;

    for (i = 0; i < iface->num_dci; ++i) {
        dci = &iface->dcis[i];
        if ((dci->signaled_sn == dci->sn) || dci->flags ||
            (dci->target_ah == NULL) || (dci->sq_available <= 0) ||
            (iface->super.super.tx.cq_available <= 0)) {
            continue;
        }
        ret = qpx_dc_dci_post_path(iface, dci, dci->target_ah, dci->target_av,
                                   dci->target_dct, qpx_dc_wr_empty(&wr),
                                   qpx_dc_dci_wr_id(dci, dci->sn + 1),
                                   IBV_SEND_SIGNALED, QPX_RDMA_PATH_ANY);
        if (ret != 0) {
            ucs_error("post on dci 0x%x (solicitation) failed: %s",
                      dci->qp->qp_num, strerror(ret));
            continue;
        }
        ++dci->sn;
        --dci->sq_available;
        ++iface->super.tx_unacked;
        dci->unsignaled  = 0;
        dci->signaled_sn = dci->sn;
        --iface->super.super.tx.cq_available;
    }
}


ucs_status_t qpx_dc_iface_dci_get(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    qpx_dc_ep_t *owner;
    qpx_dc_dci_t *dci;

    /* Requests of ep already waiting go first (the arbiter runs them) */
    if (!qpx_ep_pending_is_clear(&iface->super.super, &ep->super)) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (qpx_dc_iface_policy_fixed(iface)) {
        /* one DCI for the endpoint's life, shared, never given back */
        if (iface->config.policy == QPX_DC_POLICY_RAND) {
            iface->rand_state = iface->rand_state * 6364136223846793005ull +
                                1442695040888963407ull;
            ep->dci = (iface->rand_state >> 33) % iface->num_dci;
        } else {
            ep->dci = qpx_dc_iface_dci_spread(iface, ep);
        }
        ep->last_sn = iface->dcis[ep->dci].sn;
        ++iface->dcis[ep->dci].num_targets;
        return UCS_OK;
    }

    /* Refused below, ep is not made a waiter: a waiter is an endpoint
     * whose request is queued (qpx_dc_ep_tx_state marks it when its
     * pending request is added or dispatched). A nop of a keepalive round,
     * of uct_ep_check or of a flush that queues nothing stayed counted
     * (5 of them, with a DCI free, in an 8-rank MPI accumulate phase on 2
     * DCIs), and every other endpoint was refused once, through the
     * pending queue, for each DCI it took */
    if ((iface->num_dci_waiters > 0) &&
        !(ep->flags & QPX_DC_EP_FLAG_DCI_WAIT)) {
        return UCS_ERR_NO_RESOURCE; /* others wait: queued behind them */
    }

    if (iface->num_free > 0) {
        dci = &iface->dcis[iface->free_dcis[--iface->num_free]];
    } else if ((iface->config.policy == QPX_DC_POLICY_STICKY) &&
               ((dci = qpx_dc_iface_dci_victim(iface)) != NULL)) {
        /* idle: nothing of its owner is outstanding on it */
        owner = qpx_ep_table_lookup(&iface->ep_table, dci->owner_id);
        if (owner != NULL) {
            owner->dci = QPX_DC_DCI_NONE;
        }
    } else {
        qpx_dc_iface_dci_solicit(iface);
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_dc_ep_dci_unwait(iface, ep);
    qpx_dc_iface_dci_assign(iface, ep, dci);
    return UCS_OK;
}


/* dcs, dcs_quota: an idle DCI goes back to the pool */
static void qpx_dc_iface_dci_put(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci)
{
    qpx_dc_ep_t *owner = qpx_ep_table_lookup(&iface->ep_table, dci->owner_id);

    if (owner != NULL) {
        owner->dci = QPX_DC_DCI_NONE;
    }
    dci->owner_id = QPX_EP_ID_NULL;
    iface->free_dcis[iface->num_free++] = dci->index;
}


static UCS_F_ALWAYS_INLINE int qpx_dc_iface_policy_releases(qpx_dc_iface_t *iface)
{
    return (iface->config.policy == QPX_DC_POLICY_DCS) ||
           (iface->config.policy == QPX_DC_POLICY_DCS_QUOTA);
}


/*
 * dci has nothing outstanding: under dcs and dcs_quota it goes back to the
 * pool; under sticky it stays with its endpoint, unless that endpoint was
 * destroyed while dci was busy (an orphan). A DCI out of service (ERROR
 * after a failed recovery) is never given out again.
 */
static void qpx_dc_dci_idle_release(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci)
{
    if (!qpx_dc_dci_is_idle(dci) || dci->flags) {
        return;
    }
    if (qpx_dc_iface_policy_releases(iface) ||
        ((iface->config.policy == QPX_DC_POLICY_STICKY) &&
         (dci->owner_id == QPX_EP_ID_NULL))) {
        qpx_dc_iface_dci_put(iface, dci);
    }
}


void qpx_dc_iface_dci_detach(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    qpx_dc_dci_t *dci;

    if (ep->dci == QPX_DC_DCI_NONE) {
        return;
    }
    if (qpx_dc_iface_policy_fixed(iface)) {
        --iface->dcis[ep->dci].num_targets;
        ep->dci = QPX_DC_DCI_NONE;
        return;
    }

    dci           = &iface->dcis[ep->dci];
    ep->dci       = QPX_DC_DCI_NONE;
    dci->owner_id = QPX_EP_ID_NULL;
    if (qpx_dc_dci_is_idle(dci) && !dci->flags) {
        iface->free_dcis[iface->num_free++] = dci->index;
        qpx_dc_iface_tx_wake(iface);
    }
    /* else: given back when its last request completes (orphan) */
}


void qpx_dc_ep_dci_wait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    if (!(ep->flags & QPX_DC_EP_FLAG_DCI_WAIT)) {
        ep->flags |= QPX_DC_EP_FLAG_DCI_WAIT;
        ++iface->num_dci_waiters;
    }
}


void qpx_dc_ep_dci_unwait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    if (ep->flags & QPX_DC_EP_FLAG_DCI_WAIT) {
        ep->flags &= ~QPX_DC_EP_FLAG_DCI_WAIT;
        --iface->num_dci_waiters;
    }
}


void qpx_dc_ep_tx_wait(qpx_dc_iface_t *iface, qpx_dc_ep_t *ep)
{
    if (!(ep->flags & QPX_DC_EP_FLAG_WAITING)) {
        ep->flags |= QPX_DC_EP_FLAG_WAITING;
        ucs_list_add_tail(&iface->tx_wait, &ep->wait_link);
    }
    if ((iface->num_free > 0) && !qpx_dc_iface_policy_fixed(iface)) {
        /* Behind the waiters with a DCI free: it may be idle for good (no
         * request outstanding to complete and wake them), so the next
         * progress schedules them and the first of them takes it. 8 PEs
         * with one DCI and one send buffer hung in shmem_atomic_fetch_add
         * with a DCI free and six endpoints waiting. */
        iface->tx_wake_due = 1;
    }
}


void qpx_dc_iface_tx_wake(qpx_dc_iface_t *iface)
{
    qpx_dc_ep_t *ep;

    while (!ucs_list_is_empty(&iface->tx_wait)) {
        ep = ucs_list_extract_head(&iface->tx_wait, qpx_dc_ep_t, wait_link);
        ep->flags &= ~QPX_DC_EP_FLAG_WAITING;
        qpx_ep_pending_schedule(&iface->super.super, &ep->super);
    }
}


/* ep failed (a DCI's failure, below, or its invalidation, qpx_dc_ep.c):
 * its requests run and see the error, and its user is told */
void qpx_dc_ep_set_failed(qpx_dc_ep_t *ep, ucs_status_t status,
                          const char *reason)
{
    qpx_dc_iface_t *iface = qpx_dc_ep_iface(ep);

    ep->flags  |= QPX_DC_EP_FLAG_ERROR;
    ep->status  = status;
    /* Its requests run now and see the error */
    qpx_ep_pending_schedule(&iface->super.super, &ep->super);
    /* The handler may destroy ep: nothing touches it afterwards */
    (void)qpx_ep_report_failure(&ep->super, status,
                                "qpx_dc: ep to dct 0x%x failed: %s",
                                ep->dct_num, reason);
}


/*
 * dci completed with an error and went to ERR: every request on it is lost.
 * The endpoints with work outstanding on it fail; its operations finish
 * with the error; it is moved through RESET back to RTS (a new generation,
 * so that the flush completions of its old requests are dropped) and serves
 * the other endpoints again.
 */
static void qpx_dc_dci_failed(qpx_dc_iface_t *iface, qpx_dc_dci_t *dci,
                              enum ibv_wc_status wc_status)
{
    ucs_status_t status = qpx_wc_failure_status(wc_status);
    uint32_t failed[64];
    ucs_list_link_t old_ops;
    unsigned num_failed = 0, i;
    qpx_dc_ep_t *ep;
    char reason[128];

    ucs_debug("dci 0x%x failed: %s", dci->qp->qp_num,
              ibv_wc_status_str(wc_status));
    dci->flags |= QPX_DC_DCI_FLAG_ERROR;

    /* The endpoints that had work on it: their last post is not acked */
    ucs_list_for_each(ep, &iface->super.eps, list) {
        if ((ep->dci == dci->index) && (ep->last_sn > dci->acked_sn) &&
            !(ep->flags & QPX_DC_EP_FLAG_ERROR) &&
            (num_failed < ucs_static_array_size(failed))) {
            failed[num_failed++] = ep->id;
            ep->flags  |= QPX_DC_EP_FLAG_ERROR;
            ep->status  = status;
        }
    }

    iface->super.tx_unacked -= dci->sn - dci->acked_sn;
    /* Its operations finish with the error only after the endpoints'
     * failures are reported (below): a user that retries a failed request
     * at its completion (UCP's failover restarts it) must find the
     * endpoint reported and replaced, not send on it again, as it would
     * before the report and get the error back at once (UCP 1.22
     * recursed until its stack overflowed). Taken off the DCI now: what
     * is posted on it from here on is of its next life. */
    qpx_ops_take(&old_ops, &dci->ops);

    /* Back to RTS. The flushed requests' completions of this life carry the
     * old generation and are dropped */
    qpx_dc_dci_gen_set(dci, dci->gen + 1);
    if ((qpx_qp_to_reset(dci->qp) != UCS_OK) ||
        (qpx_dc_dci_connect(iface, dci) != UCS_OK)) {
        ucs_error("dci 0x%x could not be recovered: out of service",
                  dci->qp->qp_num);
        dci->sq_available = 0; /* never used again */
        dci->acked_sn     = dci->sn;
    } else {
        /* its queue from block 0, without the CQEs of its last life */
        qpx_mlx5_txwq_reset(&iface->super.super, &dci->txwq);
        qpx_dc_dci_reset_counters(iface, dci);
    }

    qpx_dc_dci_idle_release(iface, dci);

    snprintf(reason, sizeof(reason), "dci 0x%x: %s", dci->qp->qp_num,
             ibv_wc_status_str(wc_status));
    for (i = 0; i < num_failed; ++i) {
        /* a handler may have destroyed any of them */
        ep = qpx_ep_table_lookup(&iface->ep_table, failed[i]);
        if (ep != NULL) {
            qpx_dc_ep_set_failed(ep, status, reason);
        }
    }
    qpx_rdma_ops_complete(&iface->super, &old_ops, UINT64_MAX, status);
    qpx_dc_iface_tx_wake(iface);
}


static void qpx_dc_iface_tx_completion(qpx_dc_iface_t *iface,
                                       const struct ibv_wc *wc)
{
    unsigned index = wc->wr_id >> QPX_DC_DCI_SHIFT;
    qpx_dc_dci_t *dci;
    uint64_t sn;

    if (ucs_unlikely(index >= iface->num_dci)) {
        return;
    }
    dci = &iface->dcis[index];
    if (ucs_unlikely((((wc->wr_id >> QPX_DC_GEN_SHIFT) & QPX_DC_GEN_MASK) !=
                      dci->gen) || (dci->flags & QPX_DC_DCI_FLAG_ERROR))) {
        return; /* a request of an earlier life of the DCI */
    }

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        qpx_dc_dci_failed(iface, dci, wc->status);
        return;
    }

    /* wr_id carries the low bits of sn; acked_sn < sn <= dci->sn */
    sn = dci->sn - ((dci->sn - wc->wr_id) & QPX_DC_SN_MASK);
    dci->sq_available += sn - dci->acked_sn;
    iface->super.tx_unacked -= sn - dci->acked_sn;
    dci->acked_sn      = sn;
    qpx_rdma_ops_complete(&iface->super, &dci->ops, sn, UCS_OK);

    qpx_dc_dci_idle_release(iface, dci);
}


unsigned qpx_dc_iface_tx_process(qpx_iface_t *base_iface, struct ibv_wc *wc,
                                 int n)
{
    qpx_dc_iface_t *iface = ucs_derived_of(base_iface, qpx_dc_iface_t);
    int i;

    qpx_rdma_iface_tx_cq_credit(&iface->super, n);
    for (i = 0; i < n; ++i) {
        qpx_dc_iface_tx_completion(iface, &wc[i]);
    }
    qpx_dc_iface_tx_wake(iface);
    return n;
}
