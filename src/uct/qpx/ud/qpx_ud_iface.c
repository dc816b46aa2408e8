/*
 * qpx_ud interface: progress (receive, send completions, timers, control
 * packets, pending). What the endpoints call of the interface (peers, the
 * clock, DISC, completions) is below it, in qpx_ud_iface_svc.c.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <uct/qpx/base/qpx_async.h>
#include <uct/qpx/base/qpx_iface_progress.h>


void qpx_ud_iface_release_desc(uct_recv_desc_t *self, void *user_desc)
{
    qpx_ud_iface_t *iface = ucs_container_of(self, qpx_ud_iface_t,
                                             super.release_desc);
    void *rdesc           = UCS_PTR_BYTE_OFFSET(user_desc,
                            -(ptrdiff_t)iface->super.config.rx_headroom_offset);

    /* Released from any thread, any time: the async timer may be taking
     * receive buffers from the same pool. Its receive slot was refilled
     * when it was kept. */
    qpx_ud_iface_async_enter(iface);
    qpx_iface_rx_desc_put(&iface->super, rdesc);
    qpx_ud_iface_async_leave(iface);
}

/*
 * The packet of a busy endpoint, handled inline: an AM, in order, from the
 * connected peer of an endpoint that is neither failed nor half-open nor in
 * a state the full path must see (QPX_UD_EP_FLAG_RX_SLOW: receiving not
 * started, packets kept ahead of a gap, a probe out), carrying an ack and
 * no NAK, outside the async timer (known when may_be_async is 0, a
 * constant where inlined). It does what qpx_ud_ep_rx does for that case
 * (ack first, then delivery, then the ack decision), without its calls and
 * its switch, and recycles the buffer unless the AM handler kept it:
 * returns 1.
 * Anything else goes to qpx_ud_ep_rx (returns 0, nothing changed).
 */
static UCS_F_ALWAYS_INLINE int
qpx_ud_iface_rx_fast(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc,
                     qpx_ud_hdr_t *hdr, size_t length, const struct ibv_wc *wc,
                     int may_be_async)
{
    qpx_ud_ep_t *ep;

    if (ucs_unlikely(((qpx_ud_hdr_type_flags(hdr) &
                       QPX_UD_HDR_TYPE_FLAGS(0xff, QPX_UD_PKT_FLAG_NAK |
                                                   QPX_UD_PKT_FLAG_ACK)) !=
                      QPX_UD_HDR_TYPE_FLAGS(QPX_UD_PKT_AM,
                                            QPX_UD_PKT_FLAG_ACK)) ||
                     (may_be_async && iface->async.in_async))) {
        return 0;
    }

    /* A connected endpoint has its peer (set before it is connected) */
    ep = qpx_ep_table_lookup(&iface->eps, hdr->dest_id);
    if (ucs_unlikely((ep == NULL) ||
                     ((ep->flags & (QPX_UD_EP_FLAG_CONNECTED |
                                    QPX_UD_EP_FLAG_FAILED |
                                    QPX_UD_EP_FLAG_HALF_OPEN |
                                    QPX_UD_EP_FLAG_RX_SLOW)) !=
                      QPX_UD_EP_FLAG_CONNECTED) ||
                     (hdr->src_id != ep->dest_id) ||
                     (hdr->psn != ep->rx.expected_psn) ||
                     !qpx_ud_ep_rx_src_is(wc, hdr, ep->peer->key.qpn,
                                          &ep->peer->key.dev_addr))) {
        return 0;
    }

    /* The ack it carries (every AM of a peer that receives from us does) */
    if (ucs_unlikely(hdr->ack_psn != ep->tx.acked_psn)) {
        ep->ack_req_time = 0; /* the peer answers: it may be asked again */
        if (qpx_ud_rel_tx_ack(&ep->tx, hdr->ack_psn, iface->now,
                              qpx_ud_ep_acked_cb, iface) > 0) {
            if (!ucs_list_is_empty(&ep->flushes)) {
                qpx_ud_ep_flushes_complete(ep, UCS_OK);
            }
            qpx_ep_pending_schedule(&iface->super, &ep->super);
        }
    }

    ++ep->rx.expected_psn; /* qpx_ud_rel_rx_check's DELIVER */
    if (ucs_likely(!qpx_ud_iface_rx_deliver_common(iface, rdesc, hdr, length,
                                                   0))) {
        qpx_iface_rx_recycle(&iface->super, &rdesc->super.super);
    } else {
        qpx_iface_rx_kept(&iface->super);
    }
    qpx_ud_ep_rx_delivered(iface, ep, hdr->flags, 0);
    return 1;
}

/* Received packets: delivered, or their buffers given back. Inline in
 * progress; the backlog (completions event_arm took out of the CQ) calls
 * it through qpx_ud_iface_rx_wc. may_be_async: as for
 * qpx_ud_iface_rx_fast */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_rx_wcs(qpx_ud_iface_t *iface, struct ibv_wc *wc, int n,
                    int may_be_async)
{
    qpx_ud_recv_desc_t *rdesc;
    qpx_ud_hdr_t *hdr;
    size_t length;
    int i;

    /* Every buffer's slot is refilled in batches (the producer index of the
     * receive queue is a cache line the sender reads, or a doorbell), after
     * the loop unless a kept buffer makes one due: a buffer not kept is
     * reposted as it is */
    for (i = 0; i < n; ++i) {
        rdesc = (qpx_ud_recv_desc_t*)(uintptr_t)wc[i].wr_id;
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            ++iface->stats.rx_bad_status;
            qpx_iface_rx_recycle(&iface->super, &rdesc->super.super);
            continue;
        }

        if (ucs_unlikely(wc[i].byte_len < QPX_UD_GRH_LEN + sizeof(*hdr))) {
            ++iface->stats.rx_short;
            qpx_iface_rx_recycle(&iface->super, &rdesc->super.super);
            continue;
        }

        hdr    = qpx_ud_iface_rx_hdr(iface, rdesc);
        length = wc[i].byte_len - QPX_UD_GRH_LEN;
        if (ucs_likely(qpx_ud_iface_rx_fast(iface, rdesc, hdr, length,
                                            &wc[i], may_be_async))) {
            continue;
        }
        if (qpx_ud_ep_rx(iface, rdesc, hdr, length, &wc[i])) {
            /* kept: by the AM handler, deferred, or ahead of a gap */
            qpx_iface_rx_kept(&iface->super);
        } else {
            qpx_iface_rx_recycle(&iface->super, &rdesc->super.super);
        }
    }

    qpx_iface_rx_post_due(&iface->super);
    return n;
}

static unsigned qpx_ud_iface_rx_wc(qpx_iface_t *super, struct ibv_wc *wc,
                                   int n)
{
    return qpx_ud_iface_rx_wcs(ucs_derived_of(super, qpx_ud_iface_t), wc, n,
                               1);
}

static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_poll_rx(qpx_ud_iface_t *iface, int may_be_async)
{
    struct ibv_wc wc[QPX_UD_RX_BATCH];
    int n;

    n = qpx_iface_poll_cq(&iface->super, QPX_IFACE_CQ_RX, QPX_UD_RX_BATCH, wc);
    if (n <= 0) {
        return 0;
    }
    return qpx_ud_iface_rx_wcs(iface, wc, n, may_be_async);
}

/* Send completions: slots and descriptors back (base's backlog too) */
static unsigned qpx_ud_iface_tx_wc(qpx_iface_t *super, struct ibv_wc *wc,
                                   int n)
{
    qpx_ud_iface_t *iface = ucs_derived_of(super, qpx_ud_iface_t);
    qpx_ud_send_desc_t *desc;
    int i;

    for (i = 0; i < n; ++i) {
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            ucs_debug("qpx_ud: send completion with status %s",
                      ibv_wc_status_str(wc[i].status));
        }
        if (wc[i].wr_id == 0) {
            /* An unsignaled send reported in error: its slot comes
             * back with the next signaled one */
            continue;
        }
        --iface->tx.signaled;
        if (wc[i].wr_id <= QPX_UD_TX_MODERATION_MAX) {
            /* inline: wr_id is the number of slots it completes */
            iface->tx.available += wc[i].wr_id;
            continue;
        }
        desc                 = (qpx_ud_send_desc_t*)(uintptr_t)wc[i].wr_id;
        iface->tx.available += desc->sq_slots;
        qpx_ud_iface_send_completed(iface, desc);
    }
    return n;
}

static unsigned qpx_ud_iface_poll_tx(qpx_ud_iface_t *iface)
{
    struct ibv_wc wc[QPX_UD_RX_BATCH];
    unsigned count = 0, batch;
    int n;

    /* A few batches: completions free send slots and descriptors */
    for (batch = 0; batch < 4; ++batch) {
        n = qpx_iface_poll_cq(&iface->super, QPX_IFACE_CQ_TX,
                              QPX_UD_RX_BATCH, wc);
        if (n <= 0) {
            break;
        }
        count += qpx_ud_iface_tx_wc(&iface->super, wc, n);
        if (n < QPX_UD_RX_BATCH) {
            break;
        }
    }

    return count;
}

/*
 * Before the QP goes: the descriptors of sends still on the device (sent
 * from a descriptor, not inline: TX_MAX_INLINE below the packet) come back
 * with their completions. The QP moves to ERR, so that what it has not
 * sent completes flushed, and the send CQ is polled until every signaled
 * send has completed or a second has passed (a device that does not flush).
 * Before, such descriptors stayed with the device and the send pool's
 * cleanup reported them as not returned.
 */
void qpx_ud_iface_tx_drain(qpx_ud_iface_t *iface)
{
    uint64_t deadline = qpx_ud_time_now() + qpx_ud_time_from_sec(1.0);

    if ((iface->tx.signaled == 0) || (qpx_qp_to_err(iface->qp) != UCS_OK)) {
        return;
    }
    while ((iface->tx.signaled > 0) &&
           ((int64_t)(qpx_ud_time_now() - deadline) < 0)) {
        qpx_ud_iface_poll_tx(iface);
    }
    if (iface->tx.signaled > 0) {
        ucs_debug("qpx_ud: qp 0x%x: %u send completions did not come before "
                  "it was destroyed", iface->qp->qp_num, iface->tx.signaled);
    }
}

/* A keepalive round: connected user endpoints that sent nothing during the
 * last interval send a probe */
static UCS_F_NOINLINE void qpx_ud_iface_keepalive(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep;
    unsigned i;

    iface->keepalive.next = iface->now + iface->keepalive.interval;
    for (i = 0; i < iface->eps.capacity; ++i) {
        ep = qpx_ep_table_slot(&iface->eps, i);
        if (ep != NULL) {
            qpx_ud_ep_keepalive(iface, ep);
        }
    }
}

/* Whether progress has rare work: what sets iface->super.attention (base's
 * backlog and endpoints to reschedule, what the async timer deferred,
 * control packets owed, endpoints failed) */
static int qpx_ud_iface_attention_due(qpx_ud_iface_t *iface)
{
    return ((iface->super.backlog.rx_count | iface->super.backlog.tx_count)
            != 0) ||
           !ucs_list_is_empty(&iface->super.pending.resched) ||
           qpx_ud_iface_has_deferred(iface);
}

/* The timer walk, once a tick: retransmissions, delayed acks and peer
 * timeouts of the active endpoints, DISC repeats, keepalive rounds, a
 * receive queue to refill */
static UCS_F_NOINLINE void qpx_ud_iface_tick(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep, *tmp;

    iface->next_tick = iface->now + iface->tick;
    ucs_list_for_each_safe(ep, tmp, &iface->active_eps, active_list) {
        qpx_ud_ep_timer(iface, ep);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&iface->discs))) {
        qpx_ud_iface_discs_timer(iface);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&iface->linger_eps))) {
        qpx_ud_ep_linger_expire(iface);
    }
    if ((iface->keepalive.interval > 0) &&
        ((int64_t)(iface->now - iface->keepalive.next) >= 0)) {
        qpx_ud_iface_keepalive(iface);
    }
    /* A receive queue its pool left short, now that a buffer came back
     * (here, not on every progress: within a tick is soon enough, and the
     * peer resends what found no buffer) */
    if (ucs_unlikely(iface->super.rx.low)) {
        qpx_iface_rx_tend(&iface->super);
    }
    /* Whatever makes rare work sets the attention; should one place not,
     * its work waits a tick instead of forever (and is counted) */
    if (!iface->super.attention && qpx_ud_iface_attention_due(iface)) {
        ++iface->stats.attention_missed;
        iface->super.attention = 1;
    }
}

/* The control packets that endpoints owe (acks, NAKs, ack requests), while
 * send slots last */
static UCS_F_NOINLINE void qpx_ud_iface_ctl_progress(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->ctl_eps, ctl_list) {
        if (iface->tx.available == 0) {
            break;
        }
        qpx_ud_ep_send_ctl(iface, ep);
    }
}

/* Receive, send completions, timers and control packets: what the async
 * timer may run too. User callbacks are deferred while in_async. Inline in
 * the user's progress (one layer from the worker to the packet) and behind
 * qpx_ud_iface_progress_common for the timer. */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_progress_run(qpx_ud_iface_t *iface)
{
    unsigned count;

    /* What event_arm took out of the CQs, before anything newer */
    count = 0;
    if (ucs_unlikely((iface->super.backlog.rx_count |
                      iface->super.backlog.tx_count) != 0)) {
        count = qpx_iface_backlog_progress(&iface->super, qpx_ud_iface_rx_wc,
                                           qpx_ud_iface_tx_wc);
    }
    /* Send completions first: a NAK received below may ask to resend a
     * packet whose earlier post is only finished once it is polled. Only
     * signaled sends make completions. */
    count += (iface->tx.signaled > 0) ? qpx_ud_iface_poll_tx(iface) : 0;
    count += qpx_ud_iface_poll_rx(iface, 1);

    if (ucs_unlikely((int64_t)(iface->now - iface->next_tick) >= 0)) {
        qpx_ud_iface_tick(iface);
    }

    if (ucs_unlikely(!ucs_list_is_empty(&iface->ctl_eps))) {
        qpx_ud_iface_ctl_progress(iface);
    }
    return count;
}

unsigned qpx_ud_iface_progress_common(qpx_ud_iface_t *iface)
{
    iface->now = qpx_ud_time_now();
    return qpx_ud_iface_progress_run(iface);
}

/* The clock, read on every call of the user's progress (qpx_ud_time_now),
 * which is then recent for the async timer's idle test */
static UCS_F_ALWAYS_INLINE void qpx_ud_iface_clock_update(qpx_ud_iface_t *iface)
{
    iface->now                 = qpx_ud_time_now();
    iface->async.last_progress = iface->now;
}

/* The rare work a round made or found (attention set): control packets
 * owed, failed endpoints reported (here, not in the timer walk: an error
 * handler may destroy endpoints), endpoints to schedule again; then the
 * attention is what is left */
static UCS_F_NOINLINE void qpx_ud_iface_progress_rare(qpx_ud_iface_t *iface)
{
    qpx_ud_ep_t *ep;

    if (!ucs_list_is_empty(&iface->ctl_eps)) {
        qpx_ud_iface_ctl_progress(iface);
    }
    while (!ucs_list_is_empty(&iface->failed_eps)) {
        ep = ucs_list_head(&iface->failed_eps, qpx_ud_ep_t, active_list);
        qpx_ud_ep_notify_failed(iface, ep);
    }
    if (!ucs_list_is_empty(&iface->super.pending.resched)) {
        qpx_iface_pending_resched(&iface->super);
    }
    iface->super.attention = qpx_ud_iface_attention_due(iface);
}

/* One round of the user's progress once the clock is read: send
 * completions (first: a NAK received may ask to resend a packet whose
 * earlier post is only finished once it is polled; only signaled sends make
 * them), received packets, the tick when due, then the rare work when the
 * attention is set, and the pending requests */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_progress_round(qpx_ud_iface_t *iface)
{
    unsigned count;

    count  = (iface->tx.signaled > 0) ? qpx_ud_iface_poll_tx(iface) : 0;
    count += qpx_ud_iface_poll_rx(iface, 0); /* the user's */
    if (ucs_unlikely((int64_t)(iface->now - iface->next_tick) >= 0)) {
        qpx_ud_iface_tick(iface);
    }

    if (ucs_unlikely(iface->super.attention)) {
        qpx_ud_iface_progress_rare(iface);
    }
    qpx_iface_pending_dispatch(&iface->super);
    return count;
}

/* The user's progress with attention set: what came before this round
 * first (what the async timer received or completed, what event_arm took
 * out of the CQs), then the round, whose rare part then runs */
static UCS_F_NOINLINE unsigned
qpx_ud_iface_progress_attend(qpx_ud_iface_t *iface)
{
    unsigned count = 0;

    if ((iface->async.rx_head != NULL) || (iface->async.comp_count > 0)) {
        qpx_ud_iface_async_dispatch(iface);
    }
    qpx_ud_iface_clock_update(iface);
    if ((iface->super.backlog.rx_count | iface->super.backlog.tx_count) != 0) {
        count = qpx_iface_backlog_progress(&iface->super, qpx_ud_iface_rx_wc,
                                           qpx_ud_iface_tx_wc);
    }
    return count + qpx_ud_iface_progress_round(iface);
}

/*
 * The user's progress. With no attention (the usual round) there is no
 * deferred work, no backlog, nothing to reschedule, no control packet owed
 * and no failed endpoint, so none of their lists is looked at; what
 * receiving or the tick makes of them sets the attention, and the round
 * handles it after, in the order of a full round.
 */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_progress_user(qpx_ud_iface_t *iface)
{
    if (ucs_unlikely(iface->super.attention)) {
        return qpx_ud_iface_progress_attend(iface);
    }

    qpx_ud_iface_clock_update(iface);
    return qpx_ud_iface_progress_round(iface);
}

unsigned qpx_ud_iface_progress(uct_iface_h tl_iface)
{
    return qpx_ud_iface_progress_user(ucs_derived_of(tl_iface,
                                                     qpx_ud_iface_t));
}

/* The async timer runs progress too (qpx_ud_async.c) */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_iface_progress_guarded(uct_iface_h tl_iface, qpx_ud_guard_t guard)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    ucs_async_context_t *async = iface->async.ctx;
    unsigned count;
    int blocked;

    blocked = qpx_ud_iface_hot_enter(iface, async, guard);
    count   = qpx_ud_iface_progress_user(iface);
    qpx_ud_iface_hot_leave(iface, async, guard, blocked);
    return count;
}


/* qpx_ud_iface_progress_blocked, _spinlocked and _fenced
 * (QPX_UD_GUARDED_OPS_DECLARE) */
#define QPX_UD_IFACE_PROGRESS_GUARDED_DEFINE(_sfx, _guard) \
    unsigned qpx_ud_iface_progress_##_sfx(uct_iface_h tl_iface) \
    { \
        return qpx_ud_iface_progress_guarded(tl_iface, _guard); \
    }

QPX_UD_IFACE_PROGRESS_GUARDED_DEFINE(blocked, QPX_UD_GUARD_BLOCK)
QPX_UD_IFACE_PROGRESS_GUARDED_DEFINE(spinlocked, QPX_UD_GUARD_SPIN)
QPX_UD_IFACE_PROGRESS_GUARDED_DEFINE(fenced, QPX_UD_GUARD_FENCE)

int qpx_ud_iface_has_deferred(qpx_ud_iface_t *iface)
{
    return (iface->async.rx_head != NULL) || (iface->async.comp_count > 0) ||
           !ucs_list_is_empty(&iface->ctl_eps) ||
           !ucs_list_is_empty(&iface->failed_eps);
}

/* Retransmissions, delayed acks and peer timeouts run from the timer walk
 * of progress: the async timer runs it while the worker sleeps (and wakes
 * the worker for what it delivered); without async progress the worker
 * must not sleep while packets are unacknowledged */
ucs_status_t qpx_ud_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);
    ucs_status_t status;

    status = qpx_iface_event_arm(tl_iface, events);
    if (status != UCS_OK) {
        return status;
    }
    if (qpx_ud_iface_has_deferred(iface) ||
        (!iface->async.on &&
         (!ucs_list_is_empty(&iface->active_eps) ||
          !ucs_list_is_empty(&iface->discs)))) {
        qpx_iface_event_signal(&iface->super);
    }
    return UCS_OK;
}

ucs_status_t qpx_ud_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                uct_completion_t *comp)
{
    qpx_ud_iface_t *iface = ucs_derived_of(tl_iface, qpx_ud_iface_t);

    /* Only endpoints with packets in flight (or acks owed) have anything
     * to flush or cancel: they are the active ones */
    return qpx_iface_flush_eps(&iface->super, flags, comp, &iface->active_eps,
                               ucs_offsetof(qpx_ud_ep_t, active_list),
                               qpx_ud_ep_flush);
}
