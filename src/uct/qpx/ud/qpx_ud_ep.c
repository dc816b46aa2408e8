/*
 * qpx_ud endpoints: lifetime, connection handshake, acknowledgements
 * received, retransmission, control packets, timers, peer failure. Sends
 * and flush are in qpx_ud_ep_tx.c, receive in qpx_ud_ep_rx.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <string.h>


void qpx_ud_ep_flushes_complete(qpx_ud_ep_t *ep, ucs_status_t status)
{
    qpx_ud_flush_req_t *req;

    while (!ucs_list_is_empty(&ep->flushes)) {
        req = ucs_list_head(&ep->flushes, qpx_ud_flush_req_t, list);
        if ((status == UCS_OK) &&
            qpx_ud_psn_lt(ep->tx.acked_psn, req->psn)) {
            break;
        }
        ucs_list_del(&req->list);
        qpx_ud_iface_comp(qpx_ud_ep_iface(ep), ep, req->comp, status);
        free(req);
    }
}

/* Drop every unacknowledged packet, completing its operation with status */
static void qpx_ud_ep_purge_tx(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                               ucs_status_t status)
{
    qpx_ud_rel_desc_t *rel;

    while ((rel = qpx_ud_rel_tx_purge_one(&ep->tx)) != NULL) {
        qpx_ud_ep_desc_complete(iface, ucs_container_of(rel,
                                qpx_ud_send_desc_t, rel), status);
    }
    qpx_ud_ep_flushes_complete(ep, status);
}

void qpx_ud_ep_cancel(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_CANCELED);
}

ucs_status_t qpx_ud_ep_alloc(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                             uint32_t conn_sn, uint32_t flags,
                             qpx_ud_ep_t **ep_p)
{
    qpx_ud_ep_t *ep;
    ucs_status_t status;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        ucs_error("qpx_ud: failed to allocate an endpoint");
        return UCS_ERR_NO_MEMORY;
    }

    status = UCS_CLASS_INIT(qpx_ep_t, &ep->super, &iface->super);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = qpx_ep_table_add(&iface->eps, ep, &ep->id);
    if (status != UCS_OK) {
        goto err_cleanup;
    }

    ep->dest_id = QPX_UD_EP_ID_NULL;
    ep->conn_sn = conn_sn;
    ep->flags   = flags | QPX_UD_EP_FLAG_RX_SLOW; /* rx not started */
    ep->peer    = peer;
    /* A fresh starting PSN per endpoint: a packet of an earlier endpoint
     * in the same slot is very unlikely to fall in the new window */
    qpx_ud_rel_tx_init(&ep->tx, &iface->rel_config,
                       (qpx_ud_psn_t)((ep->id * 40503u) ^ iface->now));
    qpx_ud_rel_rx_init(&ep->rx);
    ucs_list_head_init(&ep->flushes);
    if (peer != NULL) {
        ucs_list_add_tail(&peer->eps, &ep->peer_list);
    } else {
        ucs_list_head_init(&ep->peer_list);
    }

    *ep_p = ep;
    return UCS_OK;

err_cleanup:
    UCS_CLASS_CLEANUP_CALL(&qpx_ep_t_class, &ep->super);
err_free:
    free(ep);
    return status;
}

/* The peer answered our CONN (an ack or data): the connection is open */
void qpx_ud_ep_half_open_clear(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    if (ep->flags & QPX_UD_EP_FLAG_HALF_OPEN) {
        ep->flags &= ~QPX_UD_EP_FLAG_HALF_OPEN;
        --iface->conn.half_open;
        --ep->peer->half_open;
    }
}

/* The packets an endpoint kept after a gap go back to the pool */
void qpx_ud_ep_rx_ooo_cleanup(qpx_ud_ep_t *ep)
{
    void *rdesc;

    if (ep->rx.ooo == NULL) {
        return;
    }
    while ((rdesc = qpx_ud_rel_rx_ooo_purge_one(&ep->rx)) != NULL) {
        qpx_iface_rx_desc_put(&qpx_ud_ep_iface(ep)->super, rdesc);
    }
    free(ep->rx.ooo);
    ep->rx.ooo = NULL;
}

void qpx_ud_ep_free(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_ep_half_open_clear(iface, ep);
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_CANCELED);
    qpx_ud_ep_rx_ooo_cleanup(ep);
    UCS_CLASS_CLEANUP_CALL(&qpx_ep_t_class, &ep->super);
    if (ep->flags & QPX_UD_EP_FLAG_ON_ACTIVE) {
        ucs_list_del(&ep->active_list);
    }
    if (ep->flags & QPX_UD_EP_FLAG_ON_CTL) {
        ucs_list_del(&ep->ctl_list);
    }
    if (ep->flags & QPX_UD_EP_FLAG_CLOSED) {
        ucs_list_del(&ep->linger_list);
    }
    ucs_list_del(&ep->peer_list);
    qpx_ep_table_remove(&iface->eps, ep->id);
    free(ep);
}

/*
 * A destroyed endpoint whose peer has not closed its side lingers, as
 * ud_verbs' does: the peer may still send (packets in flight, resends of
 * ones whose ack was delayed or lost, its own flush's ACK_REQ), and its
 * flush waits for our acks. Dropping them made the peer's close wait for
 * the peer timeout and then fail (an 8-rank MPI_Finalize over the hybrid's
 * UD cold path aborted in about 1 run of 8). The endpoint stays in the
 * table under its id, without the user: it acknowledges and delivers to
 * the interface as any internal endpoint does, and goes when the peer's
 * DISC comes, after the peer timeout (a peer that has not finished by then
 * has failed its sends already), or with the interface.
 */
static void qpx_ud_ep_linger(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    /* What the user did not flush is canceled, as qpx_ud_ep_free does */
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_CANCELED);
    /* ... and a CONN still owed is not sent: the peer is told to go */
    ep->flags     &= ~(QPX_UD_EP_FLAG_USER | QPX_UD_EP_FLAG_CONN_OWED);
    ep->flags     |= QPX_UD_EP_FLAG_CLOSED;
    ep->close_time = iface->now;
    ucs_list_add_tail(&iface->linger_eps, &ep->linger_list);
}

/* Closed endpoints lingering longer than the peer timeout go (the tick) */
void qpx_ud_ep_linger_expire(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep;

    while (!ucs_list_is_empty(&iface->linger_eps)) {
        ep = ucs_list_head(&iface->linger_eps, qpx_ud_ep_t, linger_list);
        if ((int64_t)(iface->now - ep->close_time) <
            (int64_t)iface->rel_config.peer_timeout) {
            break;
        }
        ucs_debug("qpx_ud: closed endpoint %p (id %u) to qpn 0x%x: no DISC "
                  "from the peer in %.3f s, freed", ep, ep->id,
                  ep->peer->key.qpn,
                  qpx_ud_time_to_sec(iface->rel_config.peer_timeout));
        qpx_ud_ep_free(iface, ep);
    }
}

/*
 * Our first packet: tells the peer who we are and where our PSNs start.
 * With no send buffer free (every one held by sends in flight, the pool at
 * its UCX_QPX_TX_MAX_BUFS), it is owed: the control progress sends it when
 * a buffer is back (qpx_ud_ep_send_ctl), and the endpoint's sends wait for
 * it, as they wait for the peer's reply.
 */
ucs_status_t qpx_ud_ep_send_conn(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_send_desc_t *desc;
    qpx_ud_conn_payload_t *conn;
    qpx_ud_hdr_t *hdr;
    uint32_t qpn = iface->qp->qp_num;

    desc = qpx_ud_ep_desc_get(iface, ep);
    if (desc == NULL) {
        ucs_debug("qpx_ud: ep %p: no send buffer for its connection request "
                  "yet", ep);
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_CONN_OWED);
        return UCS_OK;
    }
    ep->flags &= ~QPX_UD_EP_FLAG_CONN_OWED;

    hdr  = qpx_ud_send_desc_hdr(desc);
    conn = (qpx_ud_conn_payload_t*)(hdr + 1);
    qpx_ud_ep_hdr_init(ep, hdr, QPX_UD_PKT_CONN, 0);
    memset(conn, 0, sizeof(*conn));
    conn->conn_sn          = ep->conn_sn;
    conn->iface_addr.qpn[0] = qpn;
    conn->iface_addr.qpn[1] = qpn >> 8;
    conn->iface_addr.qpn[2] = qpn >> 16;
    qpx_device_addr_get(iface->super.port, &conn->dev_addr);
    desc->length = sizeof(*hdr) + sizeof(*conn);
    ep->flags   |= QPX_UD_EP_FLAG_CONN_SENT;

    hdr->psn = qpx_ud_rel_tx_add(&ep->tx, &desc->rel, iface->now);
    qpx_ud_ep_activate(iface, ep);
    if (iface->tx.available > 0) {
        qpx_ud_iface_post_desc(iface, ep->peer, desc);
    } /* else the retransmission timer sends it */
    return UCS_OK;
}

void qpx_ud_ep_set_connected(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                             uint32_t dest_id)
{
    ep->dest_id = dest_id;
    ep->flags  |= QPX_UD_EP_FLAG_CONNECTED;
    qpx_ep_pending_schedule(&iface->super, &ep->super);
}

ucs_status_t qpx_ud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    qpx_ud_iface_t *iface = ucs_derived_of(params->iface, qpx_ud_iface_t);
    qpx_device_addr_t dev_addr;
    qpx_ud_peer_t *peer;
    qpx_ud_ep_t *ep;
    ucs_status_t status;
    uint32_t conn_sn;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR)) {
        /* CONNECT_TO_EP: the peer is known at uct_ep_connect_to_ep() */
        status = qpx_ud_ep_alloc(iface, NULL, UINT32_MAX,
                                 QPX_UD_EP_FLAG_USER, &ep);
        goto out;
    }

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR)) {
        ucs_error("qpx_ud: endpoint needs the device address of the peer");
        return UCS_ERR_INVALID_PARAM;
    }

    qpx_device_addr_unpack(params->dev_addr, &dev_addr);
    status = qpx_ud_iface_peer_get(iface, &dev_addr,
                                   (const qpx_ud_iface_addr_t*)params->iface_addr,
                                   &peer);
    if (status != UCS_OK) {
        return status;
    }

    /* The n-th endpoint each side creates to the other pairs with the n-th
     * one of the peer; one the peer already created for us is adopted */
    conn_sn = peer->next_conn_sn++;
    ucs_list_for_each(ep, &peer->eps, peer_list) {
        if (!(ep->flags & QPX_UD_EP_FLAG_USER) && (ep->conn_sn == conn_sn)) {
            ep->flags |= QPX_UD_EP_FLAG_USER;
            *ep_p      = &ep->super.super.super;
            return UCS_OK;
        }
    }

    status = qpx_ud_ep_alloc(iface, peer, conn_sn, QPX_UD_EP_FLAG_USER, &ep);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_ud_ep_send_conn(iface, ep);
    if (status != UCS_OK) {
        qpx_ud_ep_free(iface, ep);
        return status;
    }

out:
    if (status == UCS_OK) {
        *ep_p = &ep->super.super.super;
    }
    return status;
}

void qpx_ud_ep_destroy(uct_ep_h tl_ep)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);

    /* Operations the timer completed (acknowledged in async progress) wait
     * for the next progress to call their completions: not after this */
    qpx_ud_iface_async_comps_run_ep(iface, ep);

    /* Best effort: let the peer know what we received before we go */
    if ((ep->flags & QPX_UD_EP_FLAG_CONNECTED) &&
        (qpx_ud_rel_rx_unacked(&ep->rx) > 0) && (iface->tx.available > 0)) {
        ep->flags |= QPX_UD_EP_FLAG_ACK_NOW;
        qpx_ud_ep_send_ctl(iface, ep);
    }
    /* ... and that its endpoint for us may go (unacknowledged, repeated:
     * if all are lost it stays until the peer's interface closes) */
    if ((ep->flags & QPX_UD_EP_FLAG_CONNECTED) &&
        !(ep->flags & QPX_UD_EP_FLAG_FAILED)) {
        qpx_ud_iface_disc_send(iface, ep->peer, ep->dest_id, ep->id);
        if (!(ep->flags & QPX_UD_EP_FLAG_PEER_GONE)) {
            /* The peer has not closed: it may still send */
            qpx_ud_ep_linger(iface, ep);
            return;
        }
    }
    qpx_ud_ep_free(iface, ep);
}

void qpx_ud_ep_free_all(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep;
    unsigned i;

    for (i = 0; i < iface->eps.capacity; ++i) {
        ep = qpx_ep_table_slot(&iface->eps, i);
        if (ep != NULL) {
            if (ep->flags & QPX_UD_EP_FLAG_USER) {
                ucs_warn("qpx_ud: iface %p closed with endpoint %p",
                         iface, ep);
            }
            qpx_ud_ep_free(iface, ep);
        }
    }
}

ucs_status_t qpx_ud_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    qpx_ud_ep_t *ep           = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface     = qpx_ud_ep_iface(ep);
    qpx_ud_ep_addr_t *ep_addr = (qpx_ud_ep_addr_t*)addr;
    uint32_t qpn              = iface->qp->qp_num;

    ep_addr->iface_addr.qpn[0] = qpn;
    ep_addr->iface_addr.qpn[1] = qpn >> 8;
    ep_addr->iface_addr.qpn[2] = qpn >> 16;
    ep_addr->ep_id             = ep->id;
    return UCS_OK;
}

ucs_status_t qpx_ud_ep_connect_to_ep(uct_ep_h tl_ep,
                                     const uct_device_addr_t *dev_addr,
                                     const uct_ep_addr_t *uct_ep_addr)
{
    qpx_ud_ep_t *ep                 = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface           = qpx_ud_ep_iface(ep);
    const qpx_ud_ep_addr_t *ep_addr = (const qpx_ud_ep_addr_t*)uct_ep_addr;
    qpx_device_addr_t addr;
    qpx_ud_peer_t *peer;
    ucs_status_t status;

    if (ep->peer != NULL) {
        ucs_error("qpx_ud: endpoint %p is already connected", ep);
        return UCS_ERR_ALREADY_EXISTS;
    }

    qpx_device_addr_unpack(dev_addr, &addr);
    status = qpx_ud_iface_peer_get(iface, &addr, &ep_addr->iface_addr, &peer);
    if (status != UCS_OK) {
        return status;
    }

    ep->peer = peer;
    ucs_list_add_tail(&peer->eps, &ep->peer_list);
    qpx_ud_ep_set_connected(iface, ep, ep_addr->ep_id);
    return qpx_ud_ep_send_conn(iface, ep);
}

/*
 * Packets the peer did not acknowledge in time: peer failure. The ep is
 * parked on iface->failed_eps; qpx_ud_ep_notify_failed() reports it once no
 * list of the iface is being walked (the error handler may destroy eps).
 */
static void qpx_ud_ep_set_failed(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    ++iface->stats.eps_failed;
    ep->flags |= QPX_UD_EP_FLAG_FAILED;
    ep->flags &= ~(QPX_UD_EP_FLAG_ACK_NOW | QPX_UD_EP_FLAG_ACK_REQ |
                   QPX_UD_EP_FLAG_NAK);
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT);
    if (ep->flags & QPX_UD_EP_FLAG_ON_CTL) {
        ep->flags &= ~QPX_UD_EP_FLAG_ON_CTL;
        ucs_list_del(&ep->ctl_list);
    }
    /* stays QPX_UD_EP_FLAG_ON_ACTIVE: qpx_ud_ep_free unlinks it */
    ucs_list_del(&ep->active_list);
    ucs_list_add_tail(&iface->failed_eps, &ep->active_list);
    iface->super.attention = 1;
}

/*
 * uct_ep_invalidate: a transport error, emulated (UCX's tests of error
 * handling and UCP's failover call it): the endpoint fails as if its peer
 * had stopped acknowledging, as ud_verbs' does. Its packets complete with
 * UCS_ERR_ENDPOINT_TIMEOUT and the next progress reports the failure.
 */
ucs_status_t qpx_ud_ep_invalidate(uct_ep_h tl_ep, qpx_ep_invalidate_arg_t arg)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);

    (void)arg;
    qpx_ud_iface_async_enter(iface);
    if (!(ep->flags & QPX_UD_EP_FLAG_FAILED)) {
        ucs_debug("qpx_ud: endpoint %p (id %u) invalidated", ep, ep->id);
        ep->flags |= QPX_UD_EP_FLAG_INVALID;
        qpx_ud_ep_activate(iface, ep); /* set_failed moves it from there */
        qpx_ud_ep_set_failed(iface, ep);
    }
    qpx_ud_iface_async_leave(iface);
    return UCS_OK;
}

void qpx_ud_ep_notify_failed(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    ep->flags &= ~QPX_UD_EP_FLAG_ON_ACTIVE;
    ucs_list_del(&ep->active_list);

    if (!(ep->flags & QPX_UD_EP_FLAG_USER)) {
        ucs_debug("qpx_ud: internal endpoint %p to qpn 0x%x timed out",
                  ep, ep->peer->key.qpn);
        qpx_ud_ep_free(iface, ep);
        return;
    }

    if (ep->flags & QPX_UD_EP_FLAG_INVALID) {
        (void)qpx_ep_report_failure(&ep->super, UCS_ERR_ENDPOINT_TIMEOUT,
                                    "qpx_ud: endpoint %p (id %u) to qpn 0x%x: "
                                    "invalidated", ep, ep->id,
                                    ep->peer->key.qpn);
        return;
    }
    (void)qpx_ep_report_failure(&ep->super, UCS_ERR_ENDPOINT_TIMEOUT,
                                "qpx_ud: endpoint %p (id %u, peer's %u, "
                                "flags 0x%x) to qpn 0x%x: no acknowledgement "
                                "for %.3f seconds%s, peer considered failed",
                                ep, ep->id, ep->dest_id, ep->flags,
                                ep->peer->key.qpn,
                                qpx_ud_time_to_sec(iface->rel_config.peer_timeout),
                                (ep->flags & QPX_UD_EP_FLAG_PEER_GONE) ?
                                " after the peer closed its endpoint" : "");
}

void qpx_ud_ep_resend(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_rel_desc_t *rel;
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr;

    while ((iface->tx.available > 0) &&
           ((rel = qpx_ud_rel_tx_resend_next(&ep->tx)) != NULL)) {
        desc = ucs_container_of(rel, qpx_ud_send_desc_t, rel);
        if (desc->posted > 0) {
            /* The device still reads an earlier post of it: the header must
             * not change under it; resend once that send completes */
            break;
        }
        hdr          = qpx_ud_send_desc_hdr(desc);
        hdr->dest_id = ep->dest_id;
        if (ep->rx.initialized) {
            hdr->flags  |= QPX_UD_PKT_FLAG_ACK;
            hdr->ack_psn = qpx_ud_rel_rx_ack_psn(&ep->rx);
            qpx_ud_rel_rx_acked(&ep->rx);
        }
        hdr->flags |= QPX_UD_PKT_FLAG_ACK_REQ;
        qpx_ud_iface_post_desc(iface, ep->peer, desc);
        ++iface->stats.tx_resent;
        qpx_ud_rel_tx_resend_done(&ep->tx);
    }

    if (ep->tx.resending) {
        /* continue when the SQ drains or the earlier post completes */
        qpx_ud_ep_ctl_schedule(iface, ep, 0);
    }
}

static void qpx_ud_iface_post_ctl(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                                  uint8_t type, uint8_t flags)
{
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr, ctl;

    /* Taken before the header: hdr_init takes the ack state out of ep */
    hdr = qpx_ud_iface_ctl_hdr(iface, &ctl, &desc);
    if (hdr == NULL) {
        return; /* control packets are retried by the progress */
    }
    qpx_ud_ep_hdr_init(ep, hdr, type, 0);
    hdr->flags |= flags;
    hdr->psn    = 0;
    qpx_ud_iface_post_ctl_hdr(iface, ep->peer, hdr, desc);
}

/* Send owed control packets; stays on the control list if the SQ is full */
void qpx_ud_ep_send_ctl(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    /* One request in flight: a caller flushing in a loop would otherwise
     * send one per call, and such a flood fills the peer's receive queue
     * so that the packets it waits for find no buffer. Another goes once
     * an ack arrives, or after the hold-off if this one is lost. */
    if ((ep->flags & QPX_UD_EP_FLAG_ACK_REQ) && (iface->tx.available > 0) &&
        ((ep->ack_req_time == 0) ||
         ((iface->now - ep->ack_req_time) >= iface->rel_config.nak_holdoff))) {
        ep->flags        &= ~QPX_UD_EP_FLAG_ACK_REQ;
        ep->ack_req_time  = iface->now;
        ++iface->stats.tx_ack_reqs;
        qpx_ud_iface_post_ctl(iface, ep, QPX_UD_PKT_ACK_REQ, 0);
    }

    if ((ep->flags & QPX_UD_EP_FLAG_ACK_NOW) && (iface->tx.available > 0)) {
        ++iface->stats.tx_acks;
        qpx_ud_iface_post_ctl(iface, ep, QPX_UD_PKT_ACK, 0); /* clears it */
    }

    if (ep->tx.resending) {
        qpx_ud_ep_resend(iface, ep);
    }

    if ((ep->flags & QPX_UD_EP_FLAG_CONN_OWED) &&
        !qpx_ud_iface_tx_exhausted(iface)) {
        qpx_ud_ep_send_conn(iface, ep);
        if (!(ep->flags & QPX_UD_EP_FLAG_CONN_OWED)) {
            qpx_ep_pending_schedule(&iface->super, &ep->super);
        }
    }

    if (!(ep->flags & (QPX_UD_EP_FLAG_ACK_NOW | QPX_UD_EP_FLAG_ACK_REQ |
                       QPX_UD_EP_FLAG_CONN_OWED)) &&
        !ep->tx.resending && (ep->flags & QPX_UD_EP_FLAG_ON_CTL)) {
        ep->flags &= ~QPX_UD_EP_FLAG_ON_CTL;
        ucs_list_del(&ep->ctl_list);
    }
}

void qpx_ud_ep_timer(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    switch (qpx_ud_rel_tx_timer(&ep->tx, iface->now)) {
    case QPX_UD_REL_TIMER_FAILED:
        qpx_ud_ep_set_failed(iface, ep);
        return;
    case QPX_UD_REL_TIMER_RESEND:
        ++iface->stats.tx_timeouts;
        qpx_ud_ep_resend(iface, ep);
        break;
    case QPX_UD_REL_TIMER_PROBE:
        ep->flags |= QPX_UD_EP_FLAG_RX_SLOW; /* the answer needs it */
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_REQ);
        break;
    default:
        break;
    }

    /* Delayed acknowledgement: packets this tick finds unacked that the
     * previous one found unacked too, with no ack sent in between, waited a
     * whole tick (at most two) for one to carry it */
    if (qpx_ud_rel_rx_unacked(&ep->rx) == 0) {
        ep->flags &= ~QPX_UD_EP_FLAG_ACK_AGING;
    } else if ((ep->flags & QPX_UD_EP_FLAG_ACK_AGING) &&
               (ep->ack_mark == ep->rx.acked_psn)) {
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
    } else {
        ep->flags   |= QPX_UD_EP_FLAG_ACK_AGING;
        ep->ack_mark = ep->rx.acked_psn;
    }

    if (qpx_ud_rel_tx_is_idle(&ep->tx) &&
        (qpx_ud_rel_rx_unacked(&ep->rx) == 0) &&
        (ep->flags & QPX_UD_EP_FLAG_ON_ACTIVE)) {
        ep->flags &= ~QPX_UD_EP_FLAG_ON_ACTIVE;
        ucs_list_del(&ep->active_list);
    }
}


/* uct_ep_is_connected: the peer's interface (its QP on its port) and, when
 * given, its endpoint */
int qpx_ud_ep_is_connected(const uct_ep_h tl_ep,
                           const uct_ep_is_connected_params_t *params)
{
    const uint64_t need = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                          UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    qpx_ud_ep_t *ep     = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    const qpx_ud_ep_addr_t *ep_addr;
    qpx_device_addr_t dev_addr;
    qpx_ud_peer_key_t key;

    if (((params->field_mask & need) != need) || (ep->peer == NULL)) {
        return 0;
    }

    if (params->field_mask & UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) {
        ep_addr = (const qpx_ud_ep_addr_t*)params->ep_addr;
        if (!(ep->flags & QPX_UD_EP_FLAG_CONNECTED) ||
            (ep->dest_id != ep_addr->ep_id)) {
            return 0;
        }
    }

    qpx_device_addr_unpack(params->device_addr, &dev_addr);
    qpx_ud_peer_key_init(&key, &dev_addr,
                         (const qpx_ud_iface_addr_t*)params->iface_addr);
    return !memcmp(&key, &ep->peer->key, sizeof(key));
}
