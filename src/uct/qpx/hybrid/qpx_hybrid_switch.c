/*
 * qpx hybrid: promotion to RC and demotion to DC (the handshake is
 * described in qpx_hybrid.h; its messages go through qpx_hybrid_ctl.c),
 * the responder side's connections (their end is qpx_hybrid_join.c's), and
 * the errors of sub-endpoints.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <uct/qpx/base/qpx_iface.h>

#include <string.h>


static int qpx_hybrid_iface_yield_slot(qpx_hybrid_iface_t *iface);


/* Why a peer's PROMOTE_REQ is refused before a QP is asked for, NULL:
 * it is not; *aux_p: the refusal's PROMOTE_NACK aux */
static const char *qpx_hybrid_conn_refusal(qpx_hybrid_iface_t *iface,
                                           const qpx_hybrid_ctl_msg_t *msg,
                                           uint32_t *aux_p)
{
    ucs_log_level_t level;

    if (!iface->rc_avail) {
        return "no RC interface";
    }
    if (qpx_hybrid_join_crossing(iface, msg,
                                 qpx_hybrid_ctl_peer_wins(iface, msg))) {
        return "our promotion to the peer goes on: it joins ours";
    }
    if ((iface->rc_in_use >= iface->config.pool_size) &&
        (!qpx_hybrid_ctl_peer_wins(iface, msg) ||
         !qpx_hybrid_iface_yield_slot(iface))) {
        return "RC pool full";
    }
    if (msg->hdr.ep_addr_len != iface->addr.rc_ep_len) {
        level = qpx_log_sampled_level(&iface->stats.malformed,
                                      UCS_LOG_LEVEL_WARN);
        ucs_log(level,
                "qpx iface %p: PROMOTE_REQ with an RC address of %u bytes "
                "(expected %zu), %lu malformed so far", iface,
                msg->hdr.ep_addr_len, iface->addr.rc_ep_len,
                iface->stats.malformed);
        return "malformed request";
    }
    if (qpx_hybrid_rc_opening(iface)) {
        /* The peer would hold its sends while we open it */
        *aux_p = QPX_HYBRID_NACK_OPENING;
        return "RC interface opening: asks again";
    }
    return NULL;
}


/* A peer's endpoint asks for an RC QP (PROMOTE_REQ) */
static void qpx_hybrid_conn_accept(qpx_hybrid_iface_t *iface,
                                   const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_conn_t *conn;
    const char *why;
    ucs_status_t status;

    conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        ucs_error("qpx iface %p: no memory for a connection", iface);
        return;
    }
    conn->id        = QPX_EP_ID_NULL;
    conn->peer_ep   = msg->hdr.src_id;
    conn->serial    = msg->hdr.serial;
    conn->joined_ep = QPX_EP_ID_NULL;
    ucs_list_head_init(&conn->rx_held);
    qpx_hybrid_ctl_sender(msg, &conn->peer);

    /* For the answers: REP, NACK, DEMOTE_ACK */
    status = qpx_hybrid_ctl_ep_create(iface, qpx_hybrid_ctl_dev_addr(msg),
                                      qpx_hybrid_ctl_iface_addr(msg),
                                      QPX_HYBRID_CTL_PROMOTE_REP,
                                      &conn->ctl_ep);
    if (status != UCS_OK) {
        /* The peer waits: it sees the answer never came only if it dies */
        free(conn);
        return;
    }
    qpx_hybrid_owner_set(iface, conn->ctl_ep, conn, QPX_HYBRID_OWNER_CONN);

    why = qpx_hybrid_conn_refusal(iface, msg, &conn->aux);
    if (why != NULL) {
        goto decline;
    }

    status = qpx_hybrid_rc_ep_create(iface, &conn->rc_ep);
    if (status != UCS_OK) {
        conn->rc_ep = NULL;
        why = "no RC QP";
        goto decline;
    }

    status = uct_ep_connect_to_ep(conn->rc_ep, qpx_hybrid_ctl_dev_addr(msg),
                                  qpx_hybrid_ctl_ep_addr(msg));
    if (status != UCS_OK) {
        why = "connect failed";
        goto decline_destroy;
    }

    status = qpx_ep_table_add(&iface->conns, conn, &conn->id);
    if (status != UCS_OK) {
        why = "connection table full";
        goto decline_destroy;
    }

    iface->rc_in_use++;
    iface->stats.accepted++;
    iface->stats.max_rc_in_use = ucs_max(iface->stats.max_rc_in_use,
                                         iface->rc_in_use);
    qpx_hybrid_owner_set(iface, conn->rc_ep, conn, QPX_HYBRID_OWNER_CONN);
    /* What the peer sends on RC waits for its SWITCHED on the cold path */
    qpx_hybrid_conn_rx_hold(iface, conn);
    conn->reply = QPX_HYBRID_CTL_PROMOTE_REP;
    qpx_hybrid_conn_work(iface, conn);
    ucs_debug("qpx iface %p: connection 0x%x accepts peer ep 0x%x", iface,
              conn->id, conn->peer_ep);
    return;

decline_destroy:
    uct_ep_destroy(conn->rc_ep);
    conn->rc_ep = NULL;
decline:
    ucs_debug("qpx iface %p: promotion of peer ep 0x%x declined: %s", iface,
              conn->peer_ep, why);
    iface->stats.declined++;
    conn->reply   = QPX_HYBRID_CTL_PROMOTE_NACK;
    conn->closing = 1;
    qpx_hybrid_conn_work(iface, conn);
}


/*
 * A full pool in which one of our promotions waits for its answer, and a
 * peer that wins (qpx_hybrid_ctl_peer_wins) asks for a slot: our promotion
 * is given up, as if refused, and its slot goes to the peer. Two
 * interfaces promoting to each other with one slot left each were both
 * refused, every time their traffic made them try again; now one of them
 * succeeds. The answer to the promotion given up comes later and is turned
 * down (RELEASE). Returns whether a slot was freed.
 */
static int qpx_hybrid_iface_yield_slot(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_ep_t *ep = qpx_hybrid_iface_promoting_ep(iface, NULL);

    if (ep == NULL) {
        return 0;
    }

    ucs_debug("qpx ep %p id 0x%x: promotion given up for a peer's", ep,
              ep->id);
    iface->stats.yielded++;
    qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
    return 1;
}


/* The peer's answer to our promotion: its QP's address to connect ours
 * to, then SWITCHED on the cold path, after which active messages go on RC
 * and, once the cold path is flushed, one-sided operations too (the
 * switch). Where that cannot be
 * (our endpoint gone or gave up, the connect failed, no memory for the
 * peer's address) the peer is told to give its QP back. */
static void qpx_hybrid_ctl_promote_rep(qpx_hybrid_iface_t *iface,
                                       const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_ep_t *ep = qpx_hybrid_ctl_ep(iface, msg,
                                            QPX_HYBRID_EP_PROMOTING);
    ucs_status_t status;

    if (ep == NULL) {
        /* Our endpoint went away, or gave this promotion up */
        qpx_hybrid_ctl_post(iface, qpx_hybrid_ctl_dev_addr(msg),
                            qpx_hybrid_ctl_iface_addr(msg),
                            QPX_HYBRID_CTL_RELEASE, msg->hdr.dst_id,
                            msg->hdr.src_id, msg->hdr.serial);
        return;
    }
    if (msg->hdr.ep_addr_len != iface->addr.rc_ep_len) {
        status = UCS_ERR_INVALID_ADDR;
    } else {
        status = uct_ep_connect_to_ep(ep->rc_ep, qpx_hybrid_ctl_dev_addr(msg),
                                      qpx_hybrid_ctl_ep_addr(msg));
    }
    if (status != UCS_OK) {
        ucs_warn("qpx ep %p: RC connect failed (%s): stays on DC", ep,
                 ucs_status_string(status));
        goto err_release;
    }
    ep->peer_addr = malloc(msg->hdr.dev_addr_len + msg->hdr.iface_addr_len);
    if (ep->peer_addr == NULL) {
        /* Without it the peer could not be told to give its QP back */
        ucs_error("qpx ep %p: no memory for the peer's address: stays "
                  "on DC", ep);
        goto err_release;
    }
    memcpy(ep->peer_addr, qpx_hybrid_ctl_dev_addr(msg),
           msg->hdr.dev_addr_len + msg->hdr.iface_addr_len);
    ep->peer_dev_len   = msg->hdr.dev_addr_len;
    ep->peer_iface_len = msg->hdr.iface_addr_len;
    ep->peer_conn      = msg->hdr.src_id;
    ep->flags         |= QPX_HYBRID_EP_FLAG_SWITCH_DUE |
                         QPX_HYBRID_EP_FLAG_MARK_DUE;
    qpx_hybrid_ep_update_tx(ep); /* all held until SWITCHED went */
    qpx_hybrid_ep_work(ep);
    return;

err_release:
    qpx_hybrid_ctl_post(iface, qpx_hybrid_ctl_dev_addr(msg),
                        qpx_hybrid_ctl_iface_addr(msg), QPX_HYBRID_CTL_RELEASE,
                        ep->id, msg->hdr.src_id, ep->serial);
    qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 1);
}


static void qpx_hybrid_ctl_run(qpx_hybrid_iface_t *iface,
                               const qpx_hybrid_ctl_msg_t *msg)
{
    qpx_hybrid_conn_t *conn;
    qpx_hybrid_ep_t *ep;

    ucs_trace("qpx iface %p: %s 0x%x -> 0x%x", iface,
              qpx_hybrid_ctl_names[msg->hdr.type], msg->hdr.src_id,
              msg->hdr.dst_id);

    switch (msg->hdr.type) {
    case QPX_HYBRID_CTL_PROMOTE_REQ:
        qpx_hybrid_conn_accept(iface, msg);
        break;
    case QPX_HYBRID_CTL_PROMOTE_REP:
        qpx_hybrid_ctl_promote_rep(iface, msg);
        break;
    case QPX_HYBRID_CTL_PROMOTE_NACK:
        ep = qpx_hybrid_ctl_ep(iface, msg, QPX_HYBRID_EP_PROMOTING);
        if (ep == NULL) {
            break;
        }
        if (msg->hdr.aux != QPX_HYBRID_NACK_OPENING) {
            iface->stats.refused++;
            qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
            break;
        }
        /* Not refused: the same threshold, counted from a moment on by
         * when the peer's interface is open (qpx_hybrid_ep_heat) */
        iface->stats.deferred++;
        qpx_hybrid_ep_promote_abort(ep, ep->refusals, 0);
        ep->window_start += ucs_min(iface->config.switch_timeout,
                                    QPX_HYBRID_REASK_NS);
        break;
    case QPX_HYBRID_CTL_DEMOTE_REQ:
        conn = qpx_ep_table_lookup(&iface->conns, msg->hdr.dst_id);
        if (conn != NULL) {
            /* The QP stays until RELEASE: the peer's flush of its side
             * needs ours to answer. An endpoint of ours that joined the
             * pair leaves it too (qpx_hybrid_join_demote) */
            conn->reply    = QPX_HYBRID_CTL_DEMOTE_ACK;
            conn->serial   = msg->hdr.serial;
            conn->demoting = 1;
            qpx_hybrid_join_demote(iface, conn);
            qpx_hybrid_conn_work(iface, conn);
        }
        break;
    case QPX_HYBRID_CTL_DEMOTE_ACK:
        ep = qpx_hybrid_ctl_ep(iface, msg, QPX_HYBRID_EP_DEMOTING);
        if (ep != NULL) {
            ep->flags |= QPX_HYBRID_EP_FLAG_SWITCH_DUE;
            qpx_hybrid_ep_work(ep);
        } else {
            qpx_hybrid_join_stale_ack(iface, msg);
        }
        break;
    case QPX_HYBRID_CTL_RELEASE:
        conn = qpx_ep_table_lookup(&iface->conns, msg->hdr.dst_id);
        if (conn != NULL) {
            /* What came on RC before it is the peer's too (SWITCHED went
             * before its RC messages, and is read before a RELEASE sent
             * after their flush; none when it never went) */
            qpx_hybrid_conn_rx_release(iface, conn, 1);
            qpx_hybrid_conn_destroy(iface, conn);
        }
        break;
    case QPX_HYBRID_CTL_SWITCHED:
        conn = qpx_ep_table_lookup(&iface->conns, msg->hdr.dst_id);
        if ((conn != NULL) && (conn->peer_ep == msg->hdr.src_id)) {
            /* Every message of the peer's on the cold path before it was
             * handed over: the ones on RC follow */
            qpx_hybrid_conn_rx_release(iface, conn, 1);
        }
        break;
    default:
        qpx_hybrid_join_ctl_run(iface, msg);
        break;
    }
}


unsigned qpx_hybrid_iface_ctl_progress(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_ctl_msg_t *msg;
    unsigned count = 0;

    while (!ucs_list_is_empty(&iface->ctl_msgs)) {
        msg = ucs_list_extract_head(&iface->ctl_msgs, qpx_hybrid_ctl_msg_t,
                                    list);
        qpx_hybrid_ctl_run(iface, msg);
        free(msg);
        ++count;
    }
    return count;
}


/* The least recently used promoted endpoint, other than ep; *freeing_p:
 * whether an endpoint is being demoted now (a slot is on its way back) */
static qpx_hybrid_ep_t *qpx_hybrid_lru_victim(qpx_hybrid_iface_t *iface,
                                              qpx_hybrid_ep_t *ep,
                                              int *freeing_p)
{
    qpx_hybrid_ep_t *victim = NULL, *it;

    *freeing_p = 0;
    ucs_list_for_each(it, &iface->ep_list, list) {
        if (it->flags & (QPX_HYBRID_EP_FLAG_FAILED |
                         QPX_HYBRID_EP_FLAG_JOINED)) {
            continue; /* a joined endpoint holds no slot of ours */
        }
        *freeing_p |= (it->state == QPX_HYBRID_EP_DEMOTING);
        if ((it != ep) && (it->state == QPX_HYBRID_EP_HOT) &&
            ((victim == NULL) || (it->last_used < victim->last_used))) {
            victim = it;
        }
    }
    return victim;
}


static void qpx_hybrid_ep_demote(qpx_hybrid_ep_t *ep)
{
    ucs_debug("qpx ep %p id 0x%x: demoted (least recently used)", ep, ep->id);
    /* HOT -> DEMOTING: only an endpoint on RC has a slot to give back */
    ucs_assertv(ep->state == QPX_HYBRID_EP_HOT, "ep %p state %d", ep,
                ep->state);
    ucs_assert(ep->rc_ep != NULL);
    ep->state  = QPX_HYBRID_EP_DEMOTING;
    ep->flags |= QPX_HYBRID_EP_FLAG_CTL_DUE;
    ep->serial++;
    qpx_hybrid_ep_update_tx(ep);
    qpx_hybrid_ep_work(ep);
}


/* Start a promotion; 0 when it must be tried again at the next progress */
static int qpx_hybrid_ep_promote(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    qpx_hybrid_ep_t *victim;
    ucs_status_t status;
    int freeing;

    if (qpx_hybrid_ep_join(ep) != QPX_HYBRID_JOIN_NONE) {
        return 0; /* the peer's pair carries it, or will: no QP of its own */
    }

    if (!iface->rc_avail || (iface->config.pool_size == 0)) {
        ep->flags &= ~QPX_HYBRID_EP_FLAG_WANT_HOT;
        return 1;
    }

    if (iface->rc_in_use >= iface->config.pool_size) {
        victim = qpx_hybrid_lru_victim(iface, ep, &freeing);
        if (freeing || (iface->rc_retiring > 0)) {
            /* A demotion under way, or its QP being given back: a slot
             * comes, and no second victim is taken meanwhile (this runs at
             * every progress until then) */
            return 0;
        }
        if (victim != NULL) {
            qpx_hybrid_ep_demote(victim);
            return 0; /* the slot comes back when the victim is on DC */
        }
        /* Every slot is a peer's or in a switch: stay on DC for now */
        iface->stats.no_slot++;
        ep->flags &= ~QPX_HYBRID_EP_FLAG_WANT_HOT;
        qpx_hybrid_ep_cool(ep, ++ep->refusals);
        return 1;
    }

    status = qpx_hybrid_rc_ep_create(iface, &ep->rc_ep);
    if (status != UCS_OK) {
        ep->rc_ep  = NULL;
        ep->flags &= ~QPX_HYBRID_EP_FLAG_WANT_HOT;
        qpx_hybrid_ep_cool(ep, ++ep->refusals);
        return 1;
    }

    /* COLD -> PROMOTING, within the pool */
    ucs_assertv(ep->state == QPX_HYBRID_EP_COLD, "ep %p state %d", ep,
                ep->state);
    iface->rc_in_use++;
    ucs_assert(iface->rc_in_use <= iface->config.pool_size);
    iface->stats.max_rc_in_use = ucs_max(iface->stats.max_rc_in_use,
                                         iface->rc_in_use);
    qpx_hybrid_owner_set(iface, ep->rc_ep, ep, QPX_HYBRID_OWNER_EP);
    ep->state      = QPX_HYBRID_EP_PROMOTING;
    ep->flags      = (ep->flags & ~QPX_HYBRID_EP_FLAG_WANT_HOT) |
                     QPX_HYBRID_EP_FLAG_CTL_DUE;
    ep->serial++;
    qpx_hybrid_ep_update_tx(ep); /* active messages held from now */
    ucs_debug("qpx ep %p id 0x%x: promoting, rc ep %p", ep, ep->id,
              ep->rc_ep);
    return 0;
}


/* The request of ep's switch on via, if a send slot is free (else at the
 * next progress): the hold's clock starts when it has gone */
static void qpx_hybrid_ep_send_request(qpx_hybrid_ep_t *ep, uct_ep_h via,
                                       uint8_t type, uint32_t dst_id,
                                       uint32_t aux, uct_ep_h rc_ep)
{
    if (qpx_hybrid_ctl_send(qpx_hybrid_ep_iface(ep), via, type, ep->id,
                            dst_id, ep->serial, aux, rc_ep) == UCS_OK) {
        ep->flags     &= ~QPX_HYBRID_EP_FLAG_CTL_DUE;
        ep->hold_start = qpx_hybrid_time_ns();
    }
}


/* The promotion was answered: SWITCHED, the last message on the cold
 * path, then active messages go on RC (the peer holds them until it reads
 * SWITCHED); one-sided operations wait for the cold path's flush. 0 while
 * it waits for a send slot; 1 when it went, or the promotion was given up
 * (the peer is told to give its QP back) */
static int qpx_hybrid_ep_send_switched(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);
    ucs_status_t status;

    status = qpx_hybrid_ctl_send(iface, ep->cold_ep, QPX_HYBRID_CTL_SWITCHED,
                                 ep->id, ep->peer_conn, ep->serial, 0, NULL);
    if (status == UCS_ERR_NO_RESOURCE) {
        return 0;
    }
    ep->flags &= ~QPX_HYBRID_EP_FLAG_MARK_DUE;
    if (status != UCS_OK) {
        ucs_debug("qpx ep %p id 0x%x: SWITCHED not sent (%s): stays on DC",
                  ep, ep->id, ucs_status_string(status));
        ep->flags &= ~QPX_HYBRID_EP_FLAG_SWITCH_DUE;
        qpx_hybrid_ctl_post(iface, ep->peer_addr,
                            ep->peer_addr + ep->peer_dev_len,
                            QPX_HYBRID_CTL_RELEASE, ep->id, ep->peer_conn,
                            ep->serial);
        qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 1);
        return 1;
    }
    ep->path_ep = ep->rc_ep;
    qpx_hybrid_ep_update_tx(ep);
    return 1;
}


/* The promotion's flush is done: the endpoint sends on RC from now on */
static void qpx_hybrid_ep_on_rc(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    ep->state    = QPX_HYBRID_EP_HOT;
    ep->path_ep  = ep->rc_ep;
    ep->flags   &= ~QPX_HYBRID_EP_FLAG_SWITCH_DUE;
    ep->refusals = 0;
    ep->promote_at = UINT64_MAX;
    iface->stats.promotions++;
    qpx_hybrid_ep_update_tx(ep);
    ucs_debug("qpx ep %p id 0x%x: on RC (peer connection 0x%x)", ep, ep->id,
              ep->peer_conn);
}

/* The demotion's flush is done: the peer is told it may reset its QP,
 * ours goes back to the pool, and the endpoint sends on DC again */
static void qpx_hybrid_ep_on_dc(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    qpx_hybrid_ctl_post(iface, ep->peer_addr,
                        ep->peer_addr + ep->peer_dev_len,
                        QPX_HYBRID_CTL_RELEASE, ep->id, ep->peer_conn,
                        ep->serial);
    free(ep->peer_addr);
    qpx_hybrid_retire(iface, ep->rc_ep, 1, 0);
    ep->peer_addr = NULL;
    ep->rc_ep     = NULL;
    ep->peer_conn = QPX_EP_ID_NULL;
    ep->state     = QPX_HYBRID_EP_COLD;
    ep->path_ep   = ep->cold_ep;
    ep->flags    &= ~QPX_HYBRID_EP_FLAG_SWITCH_DUE;
    iface->stats.demotions++;
    qpx_hybrid_ep_cool(ep, 0);
    qpx_hybrid_ep_update_tx(ep);
    ucs_debug("qpx ep %p id 0x%x: on DC again", ep, ep->id);
}

/* The peer did not answer a switch within SWITCH_TIMEOUT */
static void qpx_hybrid_ep_switch_timeout(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    iface->stats.timeouts++;
    ucs_assertv((ep->state == QPX_HYBRID_EP_PROMOTING) ||
                (ep->state == QPX_HYBRID_EP_DEMOTING), "ep %p state %d", ep,
                ep->state);
    if (ep->state == QPX_HYBRID_EP_PROMOTING) {
        /* Back to DC as if never promoted: nothing went on RC. A late
         * answer finds the serial changed and is turned down. */
        ucs_debug("qpx ep %p id 0x%x: promotion not answered in time, "
                  "stays on DC", ep, ep->id);
        qpx_hybrid_ep_promote_abort(ep, ++ep->refusals, 0);
    } else {
        /* Still on RC: the peer reads our DEMOTE_REQ some day and answers
         * an ACK nobody waits for; its QP stays ours. Most recently used
         * now, so that the next eviction picks another endpoint. */
        ucs_debug("qpx ep %p id 0x%x: demotion not answered in time, "
                  "stays on RC", ep, ep->id);
        ep->serial++;
        ep->state     = QPX_HYBRID_EP_HOT;
        ep->last_used = ++iface->tick;
        qpx_hybrid_ep_update_tx(ep);
    }
}


/* The last step of a switch, due (SWITCH_DUE): from's operations complete
 * before the other path's start (fence, flush), then on(ep) moves the
 * endpoint over. 1 when it moved, 0 while the flush is in progress. */
static int qpx_hybrid_ep_switch_flushed(qpx_hybrid_ep_t *ep, uct_ep_h from,
                                        void (*on)(qpx_hybrid_ep_t *ep))
{
    if (uct_ep_flush(from, 0, NULL) != UCS_OK) {
        return 0;
    }
    on(ep);
    return 1;
}


/* Advance ep's switch; 1 when it has nothing left to do */
static int qpx_hybrid_ep_advance(qpx_hybrid_ep_t *ep)
{
    qpx_hybrid_iface_t *iface = qpx_hybrid_ep_iface(ep);

    if ((ep->flags & QPX_HYBRID_EP_FLAG_FAILED) ||
        ((ep->flags & QPX_HYBRID_EP_FLAG_JOINED) &&
         (ep->state == QPX_HYBRID_EP_DEMOTING))) {
        return 1; /* a joined endpoint leaves as the peer's messages say */
    }

    switch (ep->state) {
    case QPX_HYBRID_EP_COLD:
        return (ep->flags & QPX_HYBRID_EP_FLAG_WANT_HOT) ?
               qpx_hybrid_ep_promote(ep) : 1;
    case QPX_HYBRID_EP_PROMOTING:
        if ((ep->flags & QPX_HYBRID_EP_FLAG_CTL_DUE) &&
            (ep->flags & QPX_HYBRID_EP_FLAG_JOINED)) {
            /* The last message on DC before the switch: to the peer's
             * endpoint that owns the pair (qpx_hybrid_ep_join) */
            qpx_hybrid_ep_send_request(ep, ep->cold_ep,
                                       QPX_HYBRID_CTL_JOIN_REQ,
                                       qpx_hybrid_join_peer_ep(ep),
                                       ep->join_conn, NULL);
            return 0;
        }
        if (ep->flags & QPX_HYBRID_EP_FLAG_CTL_DUE) {
            /* The last message on DC before the switch */
            qpx_hybrid_ep_send_request(ep, ep->cold_ep,
                                       QPX_HYBRID_CTL_PROMOTE_REQ,
                                       QPX_EP_ID_NULL, 0, ep->rc_ep);
            return 0;
        }
        if (ep->flags & QPX_HYBRID_EP_FLAG_MARK_DUE) {
            if (!qpx_hybrid_ep_send_switched(ep)) {
                return 0;
            }
            if (ep->state != QPX_HYBRID_EP_PROMOTING) {
                return 1; /* given up */
            }
        }
        if (ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE) {
            return qpx_hybrid_ep_switch_flushed(ep, ep->cold_ep,
                                                qpx_hybrid_ep_on_rc);
        }
        break;
    case QPX_HYBRID_EP_DEMOTING:
        if (ep->flags & QPX_HYBRID_EP_FLAG_CTL_DUE) {
            /* The last message on RC */
            qpx_hybrid_ep_send_request(ep, ep->rc_ep,
                                       QPX_HYBRID_CTL_DEMOTE_REQ,
                                       ep->peer_conn, 0, NULL);
            return 0;
        }
        if (ep->flags & QPX_HYBRID_EP_FLAG_SWITCH_DUE) {
            return qpx_hybrid_ep_switch_flushed(ep, ep->rc_ep,
                                                qpx_hybrid_ep_on_dc);
        }
        break;
    default:
        return 1;
    }

    /* Waiting for the peer's answer: not longer than SWITCH_TIMEOUT */
    if ((qpx_hybrid_time_ns() - ep->hold_start) <=
        iface->config.switch_timeout) {
        return 0;
    }
    qpx_hybrid_ep_switch_timeout(ep);
    return 1;
}


unsigned qpx_hybrid_iface_work_progress(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_conn_t *conn, *ctmp;
    qpx_hybrid_ep_t *ep, *tmp;
    ucs_status_t status;
    unsigned count = 0;

    ucs_list_for_each_safe(ep, tmp, &iface->work_eps, work_link) {
        if (qpx_hybrid_ep_advance(ep)) {
            ucs_list_del(&ep->work_link);
            ep->flags &= ~QPX_HYBRID_EP_FLAG_IN_WORK;
            ++count;
        }
    }

    if (!ucs_list_is_empty(&iface->ctl_out)) {
        count += qpx_hybrid_iface_ctl_out_progress(iface);
    }

    ucs_list_for_each_safe(conn, ctmp, &iface->work_conns, work_link) {
        if (conn->reply != 0) {
            if (conn->reply_on_rc &&
                (uct_ep_flush(conn->rc_ep, 0, NULL) != UCS_OK)) {
                continue; /* the joined endpoint's messages first */
            }
            status = qpx_hybrid_ctl_send(iface, conn->reply_on_rc ?
                                         conn->rc_ep : conn->ctl_ep,
                                         conn->reply, conn->id, conn->peer_ep,
                                         conn->serial, conn->aux,
                                         (conn->reply ==
                                          QPX_HYBRID_CTL_PROMOTE_REP) ?
                                         conn->rc_ep : NULL);
            if (status == UCS_ERR_NO_RESOURCE) {
                continue;
            }
            conn->reply       = 0;
            conn->reply_on_rc = 0;
        }
        ucs_list_del(&conn->work_link);
        conn->in_work = 0;
        if (conn->closing) {
            qpx_hybrid_conn_destroy(iface, conn);
        }
        ++count;
    }

    if (ucs_unlikely(iface->rc_open_due)) {
        qpx_hybrid_rc_open_due(iface); /* after this round's answers */
    }
    return count;
}


/* A sub-interface's error handler: the endpoint the sub-endpoint belongs
 * to fails; a peer's connection closes */
ucs_status_t qpx_hybrid_sub_ep_failed(void *arg, uct_ep_h sub_ep,
                                      ucs_status_t status)
{
    qpx_hybrid_iface_t *iface = arg;
    qpx_hybrid_conn_t *conn;
    qpx_hybrid_ep_t *ep;
    void *owner;
    int kind;

    owner = qpx_hybrid_owner_get(iface, sub_ep, &kind);
    if ((owner == NULL) || (kind == QPX_HYBRID_OWNER_DROP)) {
        /* Retired or an answer's: nobody waits for it */
        ucs_debug("qpx iface %p: retired sub-endpoint %p failed: %s", iface,
                  sub_ep, ucs_status_string(status));
        return UCS_OK;
    }

    if (kind == QPX_HYBRID_OWNER_CONN) {
        ucs_debug("qpx iface %p: a peer's connection failed: %s", iface,
                  ucs_status_string(status));
        conn = owner;
        /* An endpoint of ours that joined its QP fails with it, and keeps
         * the failed QP (its operations end with the error) */
        ep = qpx_hybrid_join_take_failed(iface, conn, sub_ep);
        qpx_hybrid_conn_destroy(iface, conn);
        if (ep == NULL) {
            return UCS_OK;
        }
    } else {
        ep = owner;
    }
    if (ep->flags & QPX_HYBRID_EP_FLAG_FAILED) {
        return UCS_OK; /* reported already */
    }
    /* Its operations (and pending requests) go to the failed sub-endpoint
     * from now on, and finish with its error */
    ep->flags  |= QPX_HYBRID_EP_FLAG_FAILED;
    ep->path_ep = sub_ep;
    qpx_hybrid_ep_update_tx(ep);
    return uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                   status);
}
