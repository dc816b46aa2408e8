/*
 * qpx_ud endpoints: connection handshake, sends, receive processing,
 * acknowledgements, retransmission, flush, pending queue, peer failure.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <string.h>


void qpx_ud_ep_ctl_schedule(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                            uint32_t flag)
{
    ep->flags |= flag;
    if (!(ep->flags & QPX_UD_EP_FLAG_ON_CTL)) {
        ep->flags |= QPX_UD_EP_FLAG_ON_CTL;
        ucs_list_add_tail(&iface->ctl_eps, &ep->ctl_list);
    }
}

static void qpx_ud_ep_desc_complete(qpx_ud_iface_t *iface,
                                    qpx_ud_send_desc_t *desc,
                                    ucs_status_t status)
{
    uct_completion_t *comp = desc->comp;

    desc->released = 1;
    desc->comp     = NULL;
    if (comp != NULL) {
        qpx_ud_iface_comp(iface, comp, status);
    }
    if (desc->posted == 0) {
        qpx_ud_iface_desc_put(iface, desc);
    }
}

static void qpx_ud_ep_acked_cb(qpx_ud_rel_desc_t *rel, void *arg)
{
    qpx_ud_send_desc_t *desc = ucs_container_of(rel, qpx_ud_send_desc_t, rel);

    qpx_ud_ep_desc_complete(arg, desc, UCS_OK);
}

static void qpx_ud_ep_flushes_complete(qpx_ud_ep_t *ep, ucs_status_t status)
{
    qpx_ud_flush_req_t *req;

    while (!ucs_list_is_empty(&ep->flushes)) {
        req = ucs_list_head(&ep->flushes, qpx_ud_flush_req_t, list);
        if ((status == UCS_OK) &&
            qpx_ud_psn_lt(ep->tx.acked_psn, req->psn)) {
            break;
        }
        ucs_list_del(&req->list);
        qpx_ud_iface_comp(qpx_ud_ep_iface(ep), req->comp, status);
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

static ucs_status_t qpx_ud_ep_alloc(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                                    uint32_t conn_sn, uint32_t flags,
                                    qpx_ud_ep_t **ep_p)
{
    qpx_ud_ep_t *ep;
    ucs_status_t status;
    int init_count = 1;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        ucs_error("qpx_ud: failed to allocate an endpoint");
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_base_ep_t_init(&ep->super, &uct_base_ep_t_class, &init_count,
                                &iface->super.super);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = qpx_ep_table_add(&iface->eps, ep, &ep->id);
    if (status != UCS_OK) {
        goto err_free;
    }

    ep->dest_id = QPX_UD_EP_ID_NULL;
    ep->conn_sn = conn_sn;
    ep->flags   = flags;
    ep->peer    = peer;
    /* A fresh starting PSN per endpoint: a packet of an earlier endpoint
     * in the same slot is very unlikely to fall in the new window */
    qpx_ud_rel_tx_init(&ep->tx, &iface->rel_config,
                       (qpx_ud_psn_t)((ep->id * 40503u) ^ iface->now));
    qpx_ud_rel_rx_init(&ep->rx);
    ucs_arbiter_group_init(&ep->pending);
    ucs_list_head_init(&ep->flushes);
    if (peer != NULL) {
        ucs_list_add_tail(&peer->eps, &ep->peer_list);
    } else {
        ucs_list_head_init(&ep->peer_list);
    }

    *ep_p = ep;
    return UCS_OK;

err_free:
    free(ep);
    return status;
}

/* The peer answered our CONN (an ack or data): the connection is open */
static void qpx_ud_ep_half_open_clear(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    if (ep->flags & QPX_UD_EP_FLAG_HALF_OPEN) {
        ep->flags &= ~QPX_UD_EP_FLAG_HALF_OPEN;
        --iface->conn.half_open;
        --ep->peer->half_open;
    }
}

static void qpx_ud_ep_free(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_ep_half_open_clear(iface, ep);
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_CANCELED);
    qpx_ud_ep_rx_ooo_cleanup(ep);
    ucs_arbiter_group_desched(&iface->super.arbiter, &ep->pending);
    ucs_arbiter_group_cleanup(&ep->pending);
    if (ep->flags & QPX_UD_EP_FLAG_ON_ACTIVE) {
        ucs_list_del(&ep->active_list);
    }
    if (ep->flags & QPX_UD_EP_FLAG_ON_CTL) {
        ucs_list_del(&ep->ctl_list);
    }
    ucs_list_del(&ep->peer_list);
    qpx_ep_table_remove(&iface->eps, ep->id);
    free(ep);
}

/* Our first packet: tells the peer who we are and where our PSNs start */
static ucs_status_t qpx_ud_ep_send_conn(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_send_desc_t *desc;
    qpx_ud_conn_payload_t *conn;
    qpx_ud_hdr_t *hdr;
    uint32_t qpn = iface->qp->qp_num;

    desc = qpx_ud_ep_desc_get(iface, ep);
    if (desc == NULL) {
        ucs_error("qpx_ud: no send descriptor for a connection request");
        return UCS_ERR_NO_MEMORY;
    }

    hdr  = qpx_ud_send_desc_hdr(desc);
    conn = (qpx_ud_conn_payload_t*)(hdr + 1);
    qpx_ud_ep_hdr_init(ep, hdr, QPX_UD_PKT_CONN, 0);
    memset(conn, 0, sizeof(*conn));
    conn->conn_sn          = ep->conn_sn;
    conn->iface_addr.qpn[0] = qpn;
    conn->iface_addr.qpn[1] = qpn >> 8;
    conn->iface_addr.qpn[2] = qpn >> 16;
    qpx_device_addr_pack(iface->super.port, &conn->dev_addr);
    desc->length = sizeof(*hdr) + sizeof(*conn);
    ep->flags   |= QPX_UD_EP_FLAG_CONN_SENT;

    hdr->psn = qpx_ud_rel_tx_add(&ep->tx, &desc->rel, iface->now);
    qpx_ud_ep_activate(iface, ep);
    if (iface->tx.available > 0) {
        qpx_ud_iface_post_desc(iface, ep->peer, desc);
    } /* else the retransmission timer sends it */
    return UCS_OK;
}

static void qpx_ud_ep_set_connected(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                                    uint32_t dest_id)
{
    ep->dest_id = dest_id;
    ep->flags  |= QPX_UD_EP_FLAG_CONNECTED;
    ucs_arbiter_group_schedule(&iface->super.arbiter, &ep->pending);
}

ucs_status_t qpx_ud_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    qpx_ud_iface_t *iface = ucs_derived_of(params->iface, qpx_ud_iface_t);
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

    status = qpx_ud_iface_peer_get(iface,
                                   (const qpx_device_addr_t*)params->dev_addr,
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
            *ep_p      = &ep->super.super;
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
        *ep_p = &ep->super.super;
    }
    return status;
}

void qpx_ud_ep_destroy(uct_ep_h tl_ep)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);

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
    qpx_ud_peer_t *peer;
    ucs_status_t status;

    if (ep->peer != NULL) {
        ucs_error("qpx_ud: endpoint %p is already connected", ep);
        return UCS_ERR_ALREADY_EXISTS;
    }

    status = qpx_ud_iface_peer_get(iface, (const qpx_device_addr_t*)dev_addr,
                                   &ep_addr->iface_addr, &peer);
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
                   QPX_UD_EP_FLAG_ACK_IDLE | QPX_UD_EP_FLAG_NAK);
    qpx_ud_ep_purge_tx(iface, ep, UCS_ERR_ENDPOINT_TIMEOUT);
    if (ep->flags & QPX_UD_EP_FLAG_ON_CTL) {
        ep->flags &= ~QPX_UD_EP_FLAG_ON_CTL;
        ucs_list_del(&ep->ctl_list);
    }
    /* stays QPX_UD_EP_FLAG_ON_ACTIVE: qpx_ud_ep_free unlinks it */
    ucs_list_del(&ep->active_list);
    ucs_list_add_tail(&iface->failed_eps, &ep->active_list);
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

    (void)qpx_iface_report_ep_failure(&iface->super.super, &ep->super.super,
                                      UCS_ERR_ENDPOINT_TIMEOUT,
                                      "qpx_ud: endpoint %p to qpn 0x%x: no "
                                      "acknowledgement for %.3f seconds, peer "
                                      "considered failed", ep,
                                      ep->peer->key.qpn,
                                      iface->rel_config.peer_timeout / 1e9);
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
    qpx_ud_hdr_t *hdr;

    desc = ucs_mpool_get(&iface->super.tx_mp);
    if (desc == NULL) {
        iface->tx.no_desc = 1;
        return; /* control packets are retried by the timers */
    }

    desc->ep       = NULL;
    desc->comp     = NULL;
    desc->posted   = 0;
    desc->released = 1;
    desc->iovcnt   = 0;
    desc->length   = sizeof(*hdr);
    hdr            = qpx_ud_send_desc_hdr(desc);
    qpx_ud_ep_hdr_init(ep, hdr, type, 0);
    hdr->flags    |= flags;
    hdr->psn       = 0;
    qpx_ud_iface_post_desc(iface, ep->peer, desc);
    if (desc->posted == 0) {
        qpx_ud_iface_desc_put(iface, desc); /* sent inline */
    }
}

/* Send owed control packets; stays on the control list if the SQ is full */
void qpx_ud_ep_send_ctl(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    /* Nothing more arrived: acknowledge now instead of at the next tick */
    if ((ep->flags & QPX_UD_EP_FLAG_ACK_IDLE) && iface->rx_idle) {
        ep->flags |= QPX_UD_EP_FLAG_ACK_NOW;
    }

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
        qpx_ud_iface_post_ctl(iface, ep, QPX_UD_PKT_ACK, 0); /* clears it */
    }

    if (ep->tx.resending) {
        qpx_ud_ep_resend(iface, ep);
    }

    if (!(ep->flags & (QPX_UD_EP_FLAG_ACK_NOW | QPX_UD_EP_FLAG_ACK_REQ |
                       QPX_UD_EP_FLAG_ACK_IDLE)) &&
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
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_REQ);
        break;
    default:
        break;
    }

    /* Delayed acknowledgement: nothing carried it within a tick */
    if ((qpx_ud_rel_rx_unacked(&ep->rx) > 0) &&
        ((iface->now - ep->ack_time) >= iface->tick)) {
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
    }

    if (qpx_ud_rel_tx_is_idle(&ep->tx) &&
        (qpx_ud_rel_rx_unacked(&ep->rx) == 0) &&
        (ep->flags & QPX_UD_EP_FLAG_ON_ACTIVE)) {
        ep->flags &= ~QPX_UD_EP_FLAG_ON_ACTIVE;
        ucs_list_del(&ep->active_list);
    }
}

/*
 * Does the packet come from the interface it claims (qpn, dev_addr)? As the
 * device reports it, not as the packet says: the source QPN and LID of the
 * work completion, or on a GID-routed address (RoCE) the source GID of the
 * GRH the receive buffer starts with.
 */
static int qpx_ud_ep_rx_src_is(const struct ibv_wc *wc,
                               const qpx_ud_hdr_t *hdr, uint32_t qpn,
                               const qpx_device_addr_t *dev_addr)
{
    const struct ibv_grh *grh;

    if (wc->src_qp != qpn) {
        return 0;
    }
    if (dev_addr->flags & QPX_DEVICE_ADDR_FLAG_GID) {
        grh = (const void*)((const char*)hdr - QPX_UD_GRH_LEN);
        return (wc->wc_flags & IBV_WC_GRH) &&
               !memcmp(grh->sgid.raw, dev_addr->gid, sizeof(dev_addr->gid));
    }
    return wc->slid == dev_addr->lid;
}

/*
 * Find (or create) the endpoint a CONN packet is for. The claimed sender
 * must be the real one, and a sender gets at most QPX_UD_PEER_MAX_HALF_OPEN
 * endpoints (the interface UCX_QPX_UD_MAX_HALF_OPEN) that it has not yet
 * answered for: a flood of requests, forged or not, creates no more (a
 * refused request of a real peer is sent again and accepted later).
 * Half-open endpoints that are never answered go after UCX_QPX_UD_TIMEOUT.
 */
static qpx_ud_ep_t *qpx_ud_ep_rx_conn_lookup(qpx_ud_iface_t *iface,
                                             const qpx_ud_hdr_t *hdr,
                                             size_t length,
                                             const struct ibv_wc *wc)
{
    const qpx_ud_conn_payload_t *conn = (const void*)(hdr + 1);
    qpx_ud_peer_t *peer;
    qpx_ud_ep_t *ep;

    if (length < sizeof(*hdr) + sizeof(*conn)) {
        ++iface->stats.rx_short;
        return NULL;
    }

    /* Before any state is made for the claimed address */
    if (!qpx_ud_ep_rx_src_is(wc, hdr, qpx_ud_iface_addr_qpn(&conn->iface_addr),
                             &conn->dev_addr)) {
        ++iface->stats.rx_spoofed;
        return NULL;
    }

    if (qpx_ud_iface_peer_get(iface, &conn->dev_addr, &conn->iface_addr,
                              &peer) != UCS_OK) {
        return NULL;
    }

    ucs_list_for_each(ep, &peer->eps, peer_list) {
        if ((ep->conn_sn == conn->conn_sn) &&
            ((ep->dest_id == QPX_UD_EP_ID_NULL) ||
             (ep->dest_id == hdr->src_id))) {
            return ep;
        }
    }

    if ((peer->half_open >= QPX_UD_PEER_MAX_HALF_OPEN) ||
        (iface->conn.half_open >= iface->conn.max_half_open)) {
        ++iface->stats.rx_conn_refused;
        return NULL;
    }

    if (qpx_ud_ep_alloc(iface, peer, conn->conn_sn, QPX_UD_EP_FLAG_HALF_OPEN,
                        &ep) != UCS_OK) {
        return NULL;
    }
    ++iface->conn.half_open;
    ++peer->half_open;
    return ep;
}

static void qpx_ud_ep_rx_ack(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                             const qpx_ud_hdr_t *hdr)
{
    ep->ack_req_time = 0; /* the peer answers: it may be asked again */
    if (qpx_ud_rel_tx_ack(&ep->tx, hdr->ack_psn, iface->now,
                          qpx_ud_ep_acked_cb, iface) > 0) {
        qpx_ud_ep_flushes_complete(ep, UCS_OK);
        ucs_arbiter_group_schedule(&iface->super.arbiter, &ep->pending);
    }

    /* A peer that keeps packets ahead of the gap needs just the missing one */
    if ((hdr->flags & QPX_UD_PKT_FLAG_NAK) &&
        qpx_ud_rel_tx_nak(&ep->tx, iface->now,
                          (hdr->flags & QPX_UD_PKT_FLAG_OOO) ?
                          1 : QPX_UD_REL_MAX_WINDOW)) {
        qpx_ud_ep_resend(iface, ep);
    }

    /* An ack after a probe (explicit or carried by data) that still does not
     * cover everything: the rest was lost at the tail */
    if (qpx_ud_rel_tx_probe_reply(&ep->tx)) {
        ++iface->stats.tx_probe_resends;
        qpx_ud_ep_resend(iface, ep);
    }
}

/* Keep a packet that arrived ahead of a gap until the gap is filled */
static int qpx_ud_ep_rx_keep(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                             qpx_ud_recv_desc_t *rdesc, qpx_ud_hdr_t *hdr,
                             size_t length)
{
    void **slots;

    if ((ep->rx.ooo == NULL) && (iface->rx.ooo_capacity > 0)) {
        slots = calloc(iface->rx.ooo_capacity, sizeof(*slots));
        if (slots == NULL) {
            return 0; /* go-back-N resends it */
        }
        qpx_ud_rel_rx_ooo_init(&ep->rx, slots, iface->rx.ooo_capacity);
    }

    if ((hdr->type != QPX_UD_PKT_AM) && (hdr->type != QPX_UD_PKT_NOP)) {
        return 0;
    }

    rdesc->super.flags = length;
    return qpx_ud_rel_rx_ooo_put(&ep->rx, hdr->psn, rdesc);
}

void qpx_ud_ep_rx_ooo_cleanup(qpx_ud_ep_t *ep)
{
    void *rdesc;

    if (ep->rx.ooo == NULL) {
        return;
    }
    while ((rdesc = qpx_ud_rel_rx_ooo_purge_one(&ep->rx)) != NULL) {
        ucs_mpool_put(rdesc);
    }
    free(ep->rx.ooo);
    ep->rx.ooo = NULL;
}

/* Deliver the packets kept after the one just delivered, in order */
static void qpx_ud_ep_rx_pull(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_recv_desc_t *rdesc;
    qpx_ud_hdr_t *hdr;

    while ((rdesc = qpx_ud_rel_rx_ooo_pull(&ep->rx)) != NULL) {
        hdr = qpx_ud_iface_rx_hdr(iface, rdesc);
        if ((hdr->type != QPX_UD_PKT_AM) ||
            !qpx_ud_iface_rx_deliver(iface, rdesc, hdr,
                                     rdesc->super.flags)) {
            ucs_mpool_put(rdesc);
        }
    }

    if (ep->rx.ooo_count > 0) {
        /* Another gap: report it now rather than wait for more packets */
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW |
                                          QPX_UD_EP_FLAG_NAK);
    }
}

int qpx_ud_ep_rx(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc,
                 qpx_ud_hdr_t *hdr, size_t length, const struct ibv_wc *wc)
{
    qpx_ud_ep_t *ep;
    uint8_t type = hdr->type;
    int kept;

    if ((type == QPX_UD_PKT_CONN) && (hdr->dest_id == QPX_UD_EP_ID_NULL)) {
        ep = qpx_ud_ep_rx_conn_lookup(iface, hdr, length, wc);
        if (ep == NULL) {
            return 0;
        }
    } else {
        ep = qpx_ep_table_lookup(&iface->eps, hdr->dest_id);
        if (ep == NULL) {
            ++iface->stats.rx_unknown_ep;
            return 0;
        }
        /* Only the endpoint's peer may speak for it */
        if (ucs_unlikely((ep->peer != NULL) &&
                         !qpx_ud_ep_rx_src_is(wc, hdr, ep->peer->key.qpn,
                                              &ep->peer->key.dev_addr))) {
            ++iface->stats.rx_spoofed;
            return 0;
        }
    }

    if (ucs_unlikely(ep->flags & QPX_UD_EP_FLAG_FAILED)) {
        ++iface->stats.rx_stale;
        return 0;
    }

    if (!(ep->flags & QPX_UD_EP_FLAG_CONNECTED)) {
        if ((type != QPX_UD_PKT_CONN) || (ep->peer == NULL)) {
            ++iface->stats.rx_stale;
            return 0;
        }
        qpx_ud_ep_set_connected(iface, ep, hdr->src_id);
    } else if (ucs_unlikely(hdr->src_id != ep->dest_id)) {
        /* From an earlier endpoint of the same peer */
        ++iface->stats.rx_stale;
        return 0;
    }

    if (hdr->flags & QPX_UD_PKT_FLAG_ACK) {
        qpx_ud_ep_half_open_clear(iface, ep); /* it answered our CONN */
        qpx_ud_ep_rx_ack(iface, ep, hdr);
    }

    switch (type) {
    case QPX_UD_PKT_DISC:
        /* The peer's ep is gone: one we made for it goes too. The id's
         * generation changes, so its late packets find no ep. A user's ep
         * stays: its next sends fail by timeout. */
        if (!(ep->flags & QPX_UD_EP_FLAG_USER)) {
            ++iface->stats.eps_reclaimed;
            qpx_ud_ep_free(iface, ep);
        } else {
            /* Closed, not dead: the keepalive leaves it alone */
            ep->flags |= QPX_UD_EP_FLAG_PEER_GONE;
        }
        return 0;
    case QPX_UD_PKT_ACK:
        /* An answer, even without progress: the peer is alive, maybe
         * computing with a full async queue (qpx_ud_async.c) */
        qpx_ud_rel_tx_peer_alive(&ep->tx, iface->now);
        return 0;
    case QPX_UD_PKT_ACK_REQ:
        if (ep->rx.initialized) {
            qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW |
                                   ((ep->rx.ooo_count > 0) ?
                                    QPX_UD_EP_FLAG_NAK : 0));
        }
        return 0;
    case QPX_UD_PKT_CONN:
        if (!ep->rx.initialized) {
            qpx_ud_rel_rx_start(&ep->rx, hdr->psn);
        }
        break;
    case QPX_UD_PKT_AM:
    case QPX_UD_PKT_NOP:
        if (!ep->rx.initialized) {
            ++iface->stats.rx_ahead; /* its CONN was lost: wait for it */
            return 0;
        }
        if (ucs_unlikely(iface->async.in_async &&
                         (iface->async.rx_count >=
                          iface->super.rx.queue_len))) {
            /* The user holds enough already: not accepted, resent later;
             * the ack tells the peer we live */
            ++iface->stats.rx_async_full;
            qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
            return 0;
        }
        break;
    default:
        ++iface->stats.rx_bad_type;
        return 0;
    }

    switch (qpx_ud_rel_rx_check(&ep->rx, hdr->psn)) {
    case QPX_UD_REL_RX_DELIVER:
        break;
    case QPX_UD_REL_RX_DUPLICATE:
        ++iface->stats.rx_dup;
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
        return 0;
    case QPX_UD_REL_RX_AHEAD:
        ++iface->stats.rx_ahead;
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW |
                                          QPX_UD_EP_FLAG_NAK);
        return qpx_ud_ep_rx_keep(iface, ep, rdesc, hdr, length);
    default:
        ++iface->stats.rx_stale;
        return 0;
    }

    /* Deliver first (and what was kept behind it), then decide the ack */
    kept = 0;
    if (type == QPX_UD_PKT_AM) {
        kept = qpx_ud_iface_rx_deliver(iface, rdesc, hdr, length);
    }
    if (ep->rx.ooo_count > 0) {
        qpx_ud_ep_rx_pull(iface, ep);
    }

    /* Acknowledge now, soon, or with the next send */
    if (qpx_ud_rel_rx_unacked(&ep->rx) == 1) {
        ep->ack_time = iface->now;
    }
    if ((hdr->flags & QPX_UD_PKT_FLAG_ACK_REQ) ||
        (qpx_ud_rel_rx_unacked(&ep->rx) >= iface->rx.ack_thresh)) {
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
    } else {
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_IDLE);
        qpx_ud_ep_activate(iface, ep);
    }

    if ((type == QPX_UD_PKT_CONN) && !(ep->flags & QPX_UD_EP_FLAG_CONN_SENT)) {
        qpx_ud_ep_send_conn(iface, ep); /* reply: our id and first PSN */
    }
    return kept;
}
