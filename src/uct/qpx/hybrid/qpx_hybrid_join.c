/*
 * qpx hybrid: one RC QP pair for both directions.
 *
 * A promotion (qpx_hybrid.h) connects A's endpoint's RC QP to a QP of B's
 * connection, which only receives. When B's own endpoint to A gets hot
 * while that pair exists, it joins the pair instead of promoting on a pair
 * of its own: its messages then go on the connection's QP, and A's RC
 * interface receives them as any (UCT's active messages are the
 * interface's). The pool's reach doubles for peers that talk both ways
 * (halo exchanges, alltoall). The order of B's messages is kept as in a
 * promotion:
 *
 *   join, B's endpoint:
 *     B: JOIN_REQ(B's connection) on its cold endpoint, then holds
 *     A: reads it after every cold message B sent before; its endpoint is
 *        on that pair (HOT): PEER_JOINED, JOIN_ACK; else JOIN_NACK
 *     B: flushes its cold endpoint and sends on the connection's QP
 *   A demotes its endpoint (DEMOTE_REQ on RC, as always):
 *     B: the joined endpoint holds; once the connection's QP is flushed,
 *        DEMOTE_ACK goes on it, after every message B sent on it
 *     A: flushes, RELEASE over DC (sent after it read them all)
 *     B: the joined endpoint sends on its cold path again, the connection
 *        goes. A demotion A gives up (no answer in time) is undone at B by
 *        DEMOTE_CANCEL when B's late answer comes.
 *   A destroys its endpoint: the pair stays, B's endpoint now owns it.
 *     A: its QP becomes a connection of A's interface, TRANSFER to B
 *     B: the joined endpoint takes the connection's QP as its own (a
 *        promoted endpoint whose peer connection is A's new one)
 *   The QP fails: the joined endpoint fails with it, and keeps it.
 *
 * A joined endpoint holds no slot of B's pool (the connection holds it)
 * and is never an LRU victim of B's.
 *
 * Who holds an RC QP ends here too, for the switch above to call: a
 * connection's end (its joined endpoint goes back to the cold path) and a
 * promotion given up before its switch.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <string.h>


void qpx_hybrid_peer_id(const void *dev, size_t dev_len,
                        const void *iface_addr, size_t iface_len,
                        qpx_hybrid_peer_t *peer)
{
    memset(peer, 0, sizeof(*peer));
    if ((dev_len == 0) || (dev_len < qpx_device_addr_unpack_len(dev))) {
        return; /* a malformed one: matches no endpoint */
    }
    qpx_device_addr_unpack(dev, &peer->dev);
    memcpy(peer->iface, iface_addr, ucs_min(iface_len, QPX_HYBRID_ADDR_MAX));
}


/* The interface that sent msg */
void qpx_hybrid_ctl_sender(const qpx_hybrid_ctl_msg_t *msg,
                           qpx_hybrid_peer_t *peer)
{
    qpx_hybrid_peer_id(qpx_hybrid_ctl_dev_addr(msg), msg->hdr.dev_addr_len,
                       qpx_hybrid_ctl_iface_addr(msg),
                       msg->hdr.iface_addr_len, peer);
}


/* Byte strings in order, the shorter first when one starts the other */
static int qpx_hybrid_addr_cmp(const void *a, size_t a_len, const void *b,
                               size_t b_len)
{
    int cmp = memcmp(a, b, ucs_min(a_len, b_len));

    return (cmp != 0) ? cmp : (a_len > b_len) - (a_len < b_len);
}

/* Of two interfaces whose promotions cross (to each other, or for the last
 * slot of a pool), the one whose address (device, then interface) is
 * greater goes on: both sides answer the same. Whether the sender of msg
 * goes before us. */
int qpx_hybrid_ctl_peer_wins(const qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg)
{
    int cmp = qpx_hybrid_addr_cmp(qpx_hybrid_ctl_dev_addr(msg),
                                  msg->hdr.dev_addr_len, iface->addr.dev,
                                  iface->addr.dev_len);

    if (cmp == 0) {
        cmp = qpx_hybrid_addr_cmp(qpx_hybrid_ctl_iface_addr(msg),
                                  msg->hdr.iface_addr_len, iface->addr.iface,
                                  iface->addr.iface_len);
    }
    return cmp > 0;
}


/* Our connection from the peer ep was created to (a pair the peer promoted
 * on), or NULL */
static qpx_hybrid_conn_t *qpx_hybrid_join_conn_find(qpx_hybrid_iface_t *iface,
                                                    const qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_conn_t *conn;
    unsigned i;

    for (i = 0; i < iface->conns.capacity; ++i) {
        conn = qpx_ep_table_slot(&iface->conns, i);
        if ((conn != NULL) && (conn->rc_ep != NULL) && !conn->closing &&
            qpx_hybrid_peer_is(&conn->peer, &ep->dst)) {
            return conn;
        }
    }
    return NULL;
}


/*
 * COLD -> PROMOTING (joining) when the peer has a pair to us to join:
 * QPX_HYBRID_JOIN_STARTED; QPX_HYBRID_JOIN_WAIT while that pair is being
 * set up (our answer to it not sent yet: the endpoint asks again at the
 * next progress); QPX_HYBRID_JOIN_NONE: it promotes on a pair of its own.
 */
int qpx_hybrid_ep_join(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    qpx_hybrid_conn_t *conn   = qpx_hybrid_join_conn_find(iface, ep);

    if ((conn == NULL) || conn->demoting ||
        (conn->joined_ep != QPX_EP_ID_NULL)) {
        return QPX_HYBRID_JOIN_NONE;
    }
    if (conn->reply != 0) {
        return QPX_HYBRID_JOIN_WAIT;
    }
    ucs_assertv(ep->state == QPX_HYBRID_EP_COLD, "ep %p state %d", ep,
                ep->state);
    ep->state     = QPX_HYBRID_EP_PROMOTING;
    ep->flags     = (ep->flags & ~QPX_HYBRID_EP_FLAG_WANT_HOT) |
                    QPX_HYBRID_EP_FLAG_CTL_DUE | QPX_HYBRID_EP_FLAG_JOINED;
    ep->join_conn = conn->id;
    ep->serial++;
    qpx_hybrid_ep_update_tx(ep); /* active messages held from now */
    ucs_debug("qpx ep %p id 0x%x: joining connection 0x%x", ep, ep->id,
              conn->id);
    return QPX_HYBRID_JOIN_STARTED;
}


/*
 * A PROMOTE_REQ from the peer our endpoint is promoting to as well, its
 * request unanswered: one pair is enough for both. Whose goes on is the
 * one of the greater address (qpx_hybrid_ctl_peer_wins), the same on both
 * sides: when it is the peer's, our promotion is given up (its QP, never
 * used, goes back at once) and our endpoint joins the peer's pair once it
 * is set up; when it is ours, 1: the caller declines the peer's request,
 * and the peer's endpoint will join ours.
 */
int qpx_hybrid_join_crossing(qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg, int peer_wins)
{
    qpx_hybrid_peer_t sender;
    qpx_hybrid_ep_t *ep;

    qpx_hybrid_ctl_sender(msg, &sender);
    ep = qpx_hybrid_iface_promoting_ep(iface, &sender);
    if (ep == NULL) {
        return 0;
    }
    if (!peer_wins) {
        return 1;
    }

    ucs_debug("qpx ep %p id 0x%x: promotion crossed the peer's: joins the "
              "peer's pair instead", ep, ep->id);
    iface->stats.yielded++;
    qpx_hybrid_ep_promote_abort(ep, ep->refusals, 0);
    ep->flags |= QPX_HYBRID_EP_FLAG_WANT_HOT;
    qpx_hybrid_ep_work(ep);
    return 0;
}


uint32_t qpx_hybrid_join_peer_ep(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_conn_t *conn = qpx_ep_table_lookup(&qpx_hybrid_ep_iface(ep)->conns,
                                                  ep->join_conn);

    return (conn != NULL) ? conn->peer_ep : QPX_EP_ID_NULL;
}


/* The connection's QP is not ep's path any more (state: the caller's) */
void qpx_hybrid_ep_unjoin(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    qpx_hybrid_conn_t *conn   = qpx_ep_table_lookup(&iface->conns,
                                                    ep->join_conn);

    if ((conn != NULL) && (conn->joined_ep == ep->id)) {
        conn->joined_ep = QPX_EP_ID_NULL;
    }
    ep->flags    &= ~QPX_HYBRID_EP_FLAG_JOINED;
    ep->join_conn = QPX_EP_ID_NULL;
    ep->rc_ep     = NULL;
}


/* The connection ep joined goes: ep sends on its cold path again */
void qpx_hybrid_ep_leave(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    if (ep->state == QPX_HYBRID_EP_PROMOTING) {
        qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
        return;
    }
    if (ep->state == QPX_HYBRID_EP_HOT) {
        /* Not after a DEMOTE_REQ: the peer did not read what we sent on
         * the QP (it could not keep its QP for us); messages may be lost */
        ucs_debug("qpx ep %p id 0x%x: joined pair closed under it", ep,
                  ep->id);
    }
    qpx_hybrid_ep_unjoin(ep);
    ep->state   = QPX_HYBRID_EP_COLD;
    ep->path_ep = ep->cold_ep;
    ep->flags  &= ~(QPX_HYBRID_EP_FLAG_CTL_DUE |
                    QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    iface->stats.demotions++;
    qpx_hybrid_ep_cool(ep, 0);
    qpx_hybrid_ep_update_tx(ep);
}


void qpx_hybrid_conn_destroy(qpx_hybrid_iface_t *iface,
                             qpx_hybrid_conn_t *conn)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, conn->joined_ep);
    int dropped;

    if (ep != NULL) {
        /* Its RC path goes with the QP: back to the cold one (the callers
         * made sure the peer read everything it sent on the QP) */
        qpx_hybrid_ep_leave(ep);
    }
    if (conn->in_work) {
        ucs_list_del(&conn->work_link);
    }
    /* Held for a SWITCHED that never came: the peer failed or gave up;
     * what its QP still brings goes the same way */
    dropped = conn->rx_hold;
    qpx_hybrid_conn_rx_release(iface, conn, 0);
    if (conn->id != QPX_EP_ID_NULL) {
        qpx_ep_table_remove(&iface->conns, conn->id);
    }
    if (conn->rc_ep != NULL) {
        qpx_hybrid_retire(iface, conn->rc_ep, 1,
                          QPX_HYBRID_RETIRE_DRAIN_RX |
                          (dropped ? QPX_HYBRID_RETIRE_DROP_RX : 0));
    }
    if (conn->ctl_ep != NULL) {
        qpx_hybrid_retire(iface, conn->ctl_ep, 0, 0);
    }
    ucs_debug("qpx iface %p: connection 0x%x of peer ep 0x%x closed", iface,
              conn->id, conn->peer_ep);
    free(conn);
}


/* Back to DC without a switch (refused, not answered, yielded, or the RC
 * connect failed). An RC endpoint never connected has had nothing posted
 * (the endpoint held its sends): its QP goes back to the pool now, and its
 * slot is free at once; one that was connected is flushed first */
void qpx_hybrid_ep_promote_abort(qpx_hybrid_ep_t *ep, unsigned backoff,
                                 int connected)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    ucs_assertv(ep->state == QPX_HYBRID_EP_PROMOTING, "ep %p state %d", ep,
                ep->state);
    if (ep->flags & QPX_HYBRID_EP_FLAG_JOINED) {
        qpx_hybrid_ep_unjoin(ep); /* the QP is the connection's */
    } else if (connected) {
        qpx_hybrid_retire(iface, ep->rc_ep, 1, 0);
    } else {
        qpx_hybrid_owner_del(iface, ep->rc_ep);
        uct_ep_destroy(ep->rc_ep);
        iface->rc_in_use--;
    }
    free(ep->peer_addr);
    ep->peer_addr = NULL;
    ep->rc_ep     = NULL;
    ep->peer_conn = QPX_EP_ID_NULL;
    ep->state     = QPX_HYBRID_EP_COLD;
    ep->flags    &= ~(QPX_HYBRID_EP_FLAG_CTL_DUE |
                      QPX_HYBRID_EP_FLAG_SWITCH_DUE |
                      QPX_HYBRID_EP_FLAG_MARK_DUE);
    qpx_hybrid_ep_cool(ep, backoff);
    qpx_hybrid_ep_update_tx(ep);
}


qpx_hybrid_ep_t *qpx_hybrid_iface_promoting_ep(qpx_hybrid_iface_t *iface,
                                               const qpx_hybrid_peer_t *peer)
{
    qpx_hybrid_ep_t *ep;

    ucs_list_for_each(ep, &iface->ep_list, list) {
        if ((ep->state == QPX_HYBRID_EP_PROMOTING) &&
            !(ep->flags & (QPX_HYBRID_EP_FLAG_SWITCH_DUE |
                           QPX_HYBRID_EP_FLAG_FAILED |
                           QPX_HYBRID_EP_FLAG_JOINED)) &&
            ((peer == NULL) || qpx_hybrid_peer_is(peer, &ep->dst))) {
            return ep;
        }
    }
    return NULL;
}



/* The peer demotes its endpoint of conn's pair (DEMOTE_REQ): ours leaves
 * the pair too, and the answer goes on the QP after its messages */
void qpx_hybrid_join_demote(qpx_hybrid_iface_t *iface,
                            qpx_hybrid_conn_t *conn)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, conn->joined_ep);

    if ((ep == NULL) || (ep->flags & QPX_HYBRID_EP_FLAG_FAILED)) {
        return;
    }
    if (ep->state == QPX_HYBRID_EP_PROMOTING) {
        /* Answered, its cold path flushing: nothing went on the QP */
        qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
        return;
    }
    /* HOT, or DEMOTING already (a demotion the peer gave up and tried
     * again): held until RELEASE or DEMOTE_CANCEL */
    ep->state  = QPX_HYBRID_EP_DEMOTING;
    ep->flags &= ~(QPX_HYBRID_EP_FLAG_CTL_DUE | QPX_HYBRID_EP_FLAG_SWITCH_DUE);
    qpx_hybrid_ep_update_tx(ep);
    conn->reply_on_rc = 1;
    ucs_debug("qpx ep %p id 0x%x: leaving connection 0x%x", ep, ep->id,
              conn->id);
}


/* A DEMOTE_ACK for no demotion of ours: if we gave it up (timeout) and are
 * on that pair still, the peer's joined endpoint waits for us: undo it */
void qpx_hybrid_join_stale_ack(qpx_hybrid_iface_t *iface,
                               const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, msg->hdr.dst_id);

    if ((ep != NULL) && (ep->state == QPX_HYBRID_EP_HOT) &&
        !(ep->flags & QPX_HYBRID_EP_FLAG_FAILED) &&
        (ep->peer_conn == msg->hdr.src_id)) {
        qpx_hybrid_ctl_post(iface, qpx_hybrid_ctl_dev_addr(msg),
                            qpx_hybrid_ctl_iface_addr(msg),
                            QPX_HYBRID_CTL_DEMOTE_CANCEL, ep->id,
                            msg->hdr.src_id, msg->hdr.serial);
    }
}


/* A: the peer's endpoint asks to send on the pair of our endpoint */
static void qpx_hybrid_join_request(qpx_hybrid_iface_t *iface,
                                    const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, msg->hdr.dst_id);
    qpx_hybrid_peer_t sender;
    uint8_t answer = QPX_HYBRID_CTL_JOIN_NACK;

    qpx_hybrid_ctl_sender(msg, &sender);
    if ((ep != NULL) && (ep->state == QPX_HYBRID_EP_HOT) &&
        !(ep->flags & (QPX_HYBRID_EP_FLAG_FAILED |
                       QPX_HYBRID_EP_FLAG_JOINED |
                       QPX_HYBRID_EP_FLAG_PEER_JOINED)) &&
        (ep->rc_ep != NULL) && (ep->peer_conn == msg->hdr.aux) &&
        qpx_hybrid_peer_is(&sender, &ep->dst)) {
        ep->flags       |= QPX_HYBRID_EP_FLAG_PEER_JOINED;
        ep->peer_join_ep = msg->hdr.src_id;
        answer           = QPX_HYBRID_CTL_JOIN_ACK;
    }
    qpx_hybrid_ctl_post(iface, qpx_hybrid_ctl_dev_addr(msg),
                        qpx_hybrid_ctl_iface_addr(msg), answer,
                        msg->hdr.dst_id, msg->hdr.src_id, msg->hdr.serial);
}


/* B: the join was accepted; the connection must still be there, unused */
static void qpx_hybrid_join_accepted(qpx_hybrid_iface_t *iface,
                                     qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_conn_t *conn = qpx_ep_table_lookup(&iface->conns,
                                                  ep->join_conn);

    if ((conn == NULL) || (conn->rc_ep == NULL) || conn->closing ||
        conn->demoting || (conn->joined_ep != QPX_EP_ID_NULL)) {
        /* Gone meanwhile: the peer's stale PEER_JOINED ends in RELEASE */
        qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
        return;
    }
    ep->rc_ep       = conn->rc_ep;
    conn->joined_ep = ep->id;
    ep->flags      |= QPX_HYBRID_EP_FLAG_SWITCH_DUE;
    iface->stats.joins++;
    qpx_hybrid_ep_update_tx(ep); /* all held: the cold path drains */
    qpx_hybrid_ep_work(ep);
}


/* conn's QP (and its slot of the pool) becomes the joined ep's own */
static void qpx_hybrid_join_take(qpx_hybrid_iface_t *iface,
                                 qpx_hybrid_ep_t *ep, qpx_hybrid_conn_t *conn)
{
    ep->rc_ep       = conn->rc_ep;
    ep->flags      &= ~QPX_HYBRID_EP_FLAG_JOINED;
    ep->join_conn   = QPX_EP_ID_NULL;
    conn->rc_ep     = NULL;
    conn->joined_ep = QPX_EP_ID_NULL;
    qpx_hybrid_owner_set(iface, ep->rc_ep, ep, QPX_HYBRID_OWNER_EP);
}


/* B: A's endpoint is gone and its QP is a connection of A's (src_id):
 * our joined endpoint takes the pair as its own */
static void qpx_hybrid_join_transfer(qpx_hybrid_iface_t *iface,
                                     const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_ep_t *ep     = qpx_ep_table_lookup(&iface->eps,
                                                  msg->hdr.dst_id);
    qpx_hybrid_conn_t *conn = qpx_ep_table_lookup(&iface->conns,
                                                  msg->hdr.aux);
    size_t len              = msg->hdr.dev_addr_len +
                              msg->hdr.iface_addr_len;
    uint8_t *peer_addr      = NULL;
    qpx_hybrid_peer_t sender;

    qpx_hybrid_ctl_sender(msg, &sender);
    if ((ep != NULL) && (conn != NULL) &&
        qpx_hybrid_peer_is(&sender, &conn->peer) &&
        (ep->flags & QPX_HYBRID_EP_FLAG_JOINED) &&
        !(ep->flags & QPX_HYBRID_EP_FLAG_FAILED) &&
        (ep->join_conn == conn->id) && (conn->joined_ep == ep->id) &&
        (ep->state != QPX_HYBRID_EP_PROMOTING)) {
        peer_addr = malloc(len);
    }
    if (peer_addr == NULL) {
        /* Nobody to take it: A's connection and ours go */
        qpx_hybrid_ctl_post(iface, qpx_hybrid_ctl_dev_addr(msg),
                            qpx_hybrid_ctl_iface_addr(msg),
                            QPX_HYBRID_CTL_RELEASE, msg->hdr.dst_id,
                            msg->hdr.src_id, msg->hdr.serial);
        if (conn != NULL) {
            qpx_hybrid_conn_destroy(iface, conn);
        }
        return;
    }

    qpx_hybrid_join_take(iface, ep, conn);
    qpx_hybrid_conn_destroy(iface, conn);
    memcpy(peer_addr, qpx_hybrid_ctl_dev_addr(msg), len);
    ep->path_ep        = ep->rc_ep;
    ep->peer_conn      = msg->hdr.src_id;
    ep->peer_addr      = peer_addr;
    ep->peer_dev_len   = msg->hdr.dev_addr_len;
    ep->peer_iface_len = msg->hdr.iface_addr_len;
    ep->state          = QPX_HYBRID_EP_HOT; /* a leave under way ends */
    ep->last_used      = ++iface->tick;
    qpx_hybrid_ep_update_tx(ep);
    ucs_debug("qpx ep %p id 0x%x: owns the pair now (peer connection 0x%x)",
              ep, ep->id, ep->peer_conn);
}


/* A: ep, whose pair the peer's endpoint joined, is destroyed: its QP goes
 * on as a connection of ours and the peer's endpoint owns the pair. 1 when
 * done (ep->rc_ep is then NULL) */
int qpx_hybrid_ep_transfer(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    qpx_hybrid_conn_t *conn;

    if (ep->peer_addr == NULL) {
        return 0;
    }
    conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        return 0;
    }
    ucs_list_head_init(&conn->rx_held);
    if (qpx_hybrid_ctl_ep_create(iface, ep->peer_addr,
                                 ep->peer_addr + ep->peer_dev_len,
                                 QPX_HYBRID_CTL_TRANSFER,
                                 &conn->ctl_ep) != UCS_OK) {
        goto err_free;
    }
    if (qpx_ep_table_add(&iface->conns, conn, &conn->id) != UCS_OK) {
        goto err_destroy_ctl;
    }

    conn->rc_ep     = ep->rc_ep;
    conn->peer_ep   = ep->peer_join_ep;
    conn->serial    = ep->serial;
    conn->aux       = ep->peer_conn;
    conn->joined_ep = QPX_EP_ID_NULL;
    conn->reply     = QPX_HYBRID_CTL_TRANSFER;
    qpx_hybrid_peer_id(ep->peer_addr, ep->peer_dev_len,
                       ep->peer_addr + ep->peer_dev_len, ep->peer_iface_len,
                       &conn->peer);
    qpx_hybrid_owner_set(iface, conn->rc_ep, conn, QPX_HYBRID_OWNER_CONN);
    qpx_hybrid_owner_set(iface, conn->ctl_ep, conn, QPX_HYBRID_OWNER_CONN);
    qpx_hybrid_conn_work(iface, conn);
    ep->rc_ep = NULL;
    iface->stats.transfers++;
    ucs_debug("qpx ep %p id 0x%x: pair handed to peer ep 0x%x (connection "
              "0x%x)", ep, ep->id, conn->peer_ep, conn->id);
    return 1;

err_destroy_ctl:
    uct_ep_destroy(conn->ctl_ep);
err_free:
    free(conn);
    return 0;
}


/* The connection's QP failed: the endpoint that joined it fails with it and
 * owns it from now on (its operations end with the error); NULL: none */
qpx_hybrid_ep_t *qpx_hybrid_join_take_failed(qpx_hybrid_iface_t *iface,
                                             qpx_hybrid_conn_t *conn,
                                             uct_ep_h sub_ep)
{
    qpx_hybrid_ep_t *ep = qpx_ep_table_lookup(&iface->eps, conn->joined_ep);

    if ((ep == NULL) || (sub_ep != conn->rc_ep)) {
        return NULL;
    }
    qpx_hybrid_join_take(iface, ep, conn);
    return ep;
}


void qpx_hybrid_join_ctl_run(qpx_hybrid_iface_t *iface,
                             const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_conn_t *conn;
    qpx_hybrid_ep_t *ep;

    switch (msg->hdr.type) {
    case QPX_HYBRID_CTL_JOIN_REQ:
        qpx_hybrid_join_request(iface, msg);
        break;
    case QPX_HYBRID_CTL_JOIN_ACK:
    case QPX_HYBRID_CTL_JOIN_NACK:
        ep = qpx_hybrid_ctl_ep(iface, msg, QPX_HYBRID_EP_PROMOTING);
        if ((ep == NULL) || !(ep->flags & QPX_HYBRID_EP_FLAG_JOINED)) {
            break; /* given up: a stale PEER_JOINED ends in RELEASE */
        }
        if (msg->hdr.type == QPX_HYBRID_CTL_JOIN_ACK) {
            qpx_hybrid_join_accepted(iface, ep);
        } else {
            qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
        }
        break;
    case QPX_HYBRID_CTL_DEMOTE_CANCEL:
        conn = qpx_ep_table_lookup(&iface->conns, msg->hdr.dst_id);
        if ((conn == NULL) || !conn->demoting ||
            (conn->serial != msg->hdr.serial)) {
            break;
        }
        conn->demoting = 0;
        ep = qpx_ep_table_lookup(&iface->eps, conn->joined_ep);
        if ((ep != NULL) && (ep->state == QPX_HYBRID_EP_DEMOTING)) {
            ep->state     = QPX_HYBRID_EP_HOT;
            ep->last_used = ++iface->tick;
            qpx_hybrid_ep_update_tx(ep);
        }
        break;
    case QPX_HYBRID_CTL_TRANSFER:
        qpx_hybrid_join_transfer(iface, msg);
        break;
    }
}
