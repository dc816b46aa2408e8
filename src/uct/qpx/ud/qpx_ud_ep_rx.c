/*
 * qpx_ud receive: the endpoint a packet is for (bound to its real source),
 * connection requests, ordering (deliver, keep ahead of a gap, drop), and
 * the acknowledgement it calls for.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <string.h>


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

/* The ack (and NAK) a received header carries; nonzero when it acked
 * packets of ours that were in flight */
int qpx_ud_ep_rx_ack(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                     const qpx_ud_hdr_t *hdr)
{
    int acked;

    ep->ack_req_time = 0; /* the peer answers: it may be asked again */
    acked = (qpx_ud_rel_tx_ack(&ep->tx, hdr->ack_psn, iface->now,
                               qpx_ud_ep_acked_cb, iface) > 0);
    if (acked) {
        qpx_ud_ep_flushes_complete(ep, UCS_OK);
        qpx_ep_pending_schedule(&iface->super, &ep->super);
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
    qpx_ud_ep_rx_slow_update(ep); /* the probe may be answered */
    return acked;
}

/* Keep a packet that arrived ahead of a gap until the gap is filled */
static int qpx_ud_ep_rx_keep(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                             qpx_ud_recv_desc_t *rdesc, qpx_ud_hdr_t *hdr,
                             size_t length)
{
    void **slots;

    if (iface->super.rx.starved) {
        /* Not while the buffer pool is short (UCX_QPX_RX_MAX_BUFS, or no
         * memory to register): kept packets could hold every buffer, and
         * the one that fills the gap would find none. Go-back-N resends. */
        return 0;
    }
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

    rdesc->super.super.flags = length;
    if (!qpx_ud_rel_rx_ooo_put(&ep->rx, hdr->psn, rdesc)) {
        return 0;
    }
    ep->flags |= QPX_UD_EP_FLAG_RX_SLOW; /* the next ones are pulled */
    return 1;
}

/* Deliver the packets kept after the one just delivered, in order */
void qpx_ud_ep_rx_pull(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_recv_desc_t *rdesc;
    qpx_ud_hdr_t *hdr;

    while ((rdesc = qpx_ud_rel_rx_ooo_pull(&ep->rx)) != NULL) {
        hdr = qpx_ud_iface_rx_hdr(iface, rdesc);
        if ((hdr->type != QPX_UD_PKT_AM) ||
            !qpx_ud_iface_rx_deliver(iface, rdesc, hdr,
                                     rdesc->super.super.flags)) {
            qpx_iface_rx_desc_put(&iface->super, rdesc);
        }
    }

    if (ep->rx.ooo_count > 0) {
        /* Another gap: report it now rather than wait for more packets */
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW |
                                          QPX_UD_EP_FLAG_NAK);
    }
    qpx_ud_ep_rx_slow_update(ep);
}

/*
 * The endpoint a packet is for: the one its CONN makes or finds, else the
 * one it names, if its peer sent it and it is live and connected (a CONN
 * connects it; an ack of our CONN that came before the peer's CONN is taken
 * here). NULL: the packet goes, counted.
 */
static qpx_ud_ep_t *qpx_ud_ep_rx_find(qpx_ud_iface_t *iface,
                                      const qpx_ud_hdr_t *hdr, size_t length,
                                      const struct ibv_wc *wc)
{
    qpx_ud_ep_t *ep;

    if ((hdr->type == QPX_UD_PKT_CONN) &&
        (hdr->dest_id == QPX_UD_EP_ID_NULL)) {
        ep = qpx_ud_ep_rx_conn_lookup(iface, hdr, length, wc);
        if (ep == NULL) {
            return NULL;
        }
    } else {
        ep = qpx_ep_table_lookup(&iface->eps, hdr->dest_id);
        if (ep == NULL) {
            ++iface->stats.rx_unknown_ep;
            return NULL;
        }
        /* Only the endpoint's peer may speak for it */
        if (ucs_unlikely((ep->peer != NULL) &&
                         !qpx_ud_ep_rx_src_is(wc, hdr, ep->peer->key.qpn,
                                              &ep->peer->key.dev_addr))) {
            ++iface->stats.rx_spoofed;
            return NULL;
        }
    }

    if (ucs_unlikely(ep->flags & QPX_UD_EP_FLAG_FAILED)) {
        ++iface->stats.rx_stale;
        return NULL;
    }

    if (!(ep->flags & QPX_UD_EP_FLAG_CONNECTED)) {
        if ((hdr->type == QPX_UD_PKT_ACK) && (ep->peer != NULL) &&
            (hdr->flags & QPX_UD_PKT_FLAG_ACK)) {
            /* The peer acknowledges our CONN before its own CONN came: that
             * found no send buffer yet (qpx_ud_ep_send_conn), and goes when
             * one is back. Not taking the ack would fail this endpoint by
             * the peer timeout although the peer answers. */
            qpx_ud_ep_rx_ack(iface, ep, hdr);
            qpx_ud_rel_tx_peer_alive(&ep->tx, iface->now);
            return NULL;
        }
        if ((hdr->type != QPX_UD_PKT_CONN) || (ep->peer == NULL)) {
            ++iface->stats.rx_stale;
            return NULL;
        }
        qpx_ud_ep_set_connected(iface, ep, hdr->src_id);
    } else if (ucs_unlikely(hdr->src_id != ep->dest_id)) {
        /* From an earlier endpoint of the same peer */
        ++iface->stats.rx_stale;
        return NULL;
    }

    return ep;
}


/* What a packet does to ep before its sequence counts: control packets end
 * here (0); a CONN, an AM or a NOP goes on to be sequenced (1) */
static int qpx_ud_ep_rx_ctl(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                            const qpx_ud_hdr_t *hdr)
{
    switch (hdr->type) {
    case QPX_UD_PKT_DISC:
        /* The peer's user closed its ep: one we made for it, or one our
         * user closed (lingering), goes too. The id's generation changes,
         * so its late packets find no ep. A user's ep stays: the peer's
         * lingers and acknowledges its sends until our DISC or the peer
         * timeout. */
        if (!(ep->flags & QPX_UD_EP_FLAG_USER)) {
            /* Ours was not closed yet (a peer's CONN made it): the peer's,
             * lingering for our packets, may go too */
            if (!(ep->flags & QPX_UD_EP_FLAG_CLOSED)) {
                qpx_ud_iface_disc_send(iface, ep->peer, ep->dest_id, ep->id);
            }
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
            ep->flags |= QPX_UD_EP_FLAG_RX_STARTED;
            qpx_ud_ep_rx_slow_update(ep);
        }
        /* A CONN that acks nothing: the peer has not received ours. Its
         * endpoint may have had no peer yet when ours came (its user calls
         * uct_ep_connect_to_ep later than ours), and then it dropped ours
         * and what followed: all of it goes again now, not at the
         * retransmission timeout (crossing CONNs cost a duplicate) */
        if (!(hdr->flags & QPX_UD_PKT_FLAG_ACK) &&
            qpx_ud_rel_tx_nak(&ep->tx, iface->now, QPX_UD_REL_MAX_WINDOW)) {
            ++iface->stats.tx_conn_resends;
            qpx_ud_ep_resend(iface, ep);
        }
        return 1;
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
        return 1;
    default:
        ++iface->stats.rx_bad_type;
        return 0;
    }
}


int qpx_ud_ep_rx(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc,
                 qpx_ud_hdr_t *hdr, size_t length, const struct ibv_wc *wc)
{
    qpx_ud_ep_t *ep = qpx_ud_ep_rx_find(iface, hdr, length, wc);
    uint8_t type    = hdr->type;
    int kept;

    if (ep == NULL) {
        return 0;
    }

    /* Half-open until the peer acks a packet this side sent (our CONN
     * first): an ACK flag alone proves nothing, the CONN that made this
     * endpoint may carry one, and a flood of those would bypass the
     * half-open limits */
    if ((hdr->flags & QPX_UD_PKT_FLAG_ACK) &&
        qpx_ud_ep_rx_ack(iface, ep, hdr)) {
        qpx_ud_ep_half_open_clear(iface, ep);
    }

    if (!qpx_ud_ep_rx_ctl(iface, ep, hdr)) {
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
    qpx_ud_ep_rx_delivered(iface, ep, hdr->flags, 1);

    if ((type == QPX_UD_PKT_CONN) && !(ep->flags & QPX_UD_EP_FLAG_CONN_SENT)) {
        qpx_ud_ep_send_conn(iface, ep); /* reply: our id and first PSN */
    }
    return kept;
}
