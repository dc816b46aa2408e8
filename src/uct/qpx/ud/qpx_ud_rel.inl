/*
 * qpx_ud reliability core: fast-path parts (send, ack, receive check).
 * Include only through qpx_ud_rel.h.
 */
#ifndef QPX_UD_REL_INL_
#define QPX_UD_REL_INL_


/* Signed distance from b to a, valid while |a - b| < 2^15 */
static UCS_F_ALWAYS_INLINE int
qpx_ud_psn_diff(qpx_ud_psn_t a, qpx_ud_psn_t b)
{
    return (int16_t)(qpx_ud_psn_t)(a - b);
}

static UCS_F_ALWAYS_INLINE int
qpx_ud_psn_lt(qpx_ud_psn_t a, qpx_ud_psn_t b)
{
    return qpx_ud_psn_diff(a, b) < 0;
}

static UCS_F_ALWAYS_INLINE int
qpx_ud_psn_le(qpx_ud_psn_t a, qpx_ud_psn_t b)
{
    return qpx_ud_psn_diff(a, b) <= 0;
}


/* Packets sent and not yet acknowledged */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_rel_tx_inflight(const qpx_ud_rel_tx_t *tx)
{
    return (qpx_ud_psn_t)(tx->next_psn - tx->acked_psn - 1);
}

static UCS_F_ALWAYS_INLINE int
qpx_ud_rel_tx_can_send(const qpx_ud_rel_tx_t *tx)
{
    return qpx_ud_rel_tx_inflight(tx) < tx->cwnd;
}

static UCS_F_ALWAYS_INLINE int
qpx_ud_rel_tx_is_idle(qpx_ud_rel_tx_t *tx)
{
    return ucs_queue_is_empty(&tx->window);
}

/* The first packet goes into an empty window (qpx_ud_rel_tx_is_idle) at
 * now: the timers start */
static UCS_F_ALWAYS_INLINE void
qpx_ud_rel_tx_start(qpx_ud_rel_tx_t *tx, uint64_t now)
{
    tx->deadline      = now + tx->rto;
    tx->progress_time = now;
}

/* Put a new packet in a window that has one (else qpx_ud_rel_tx_start
 * first); returns its PSN. The caller checked qpx_ud_rel_tx_can_send(). */
static UCS_F_ALWAYS_INLINE qpx_ud_psn_t
qpx_ud_rel_tx_push(qpx_ud_rel_tx_t *tx, qpx_ud_rel_desc_t *desc)
{
    ucs_queue_push(&tx->window, &desc->queue);
    return tx->next_psn++;
}

/*
 * Put a new packet in the window; returns its PSN. The caller checked
 * qpx_ud_rel_tx_can_send().
 */
static UCS_F_ALWAYS_INLINE qpx_ud_psn_t
qpx_ud_rel_tx_add(qpx_ud_rel_tx_t *tx, qpx_ud_rel_desc_t *desc, uint64_t now)
{
    if (ucs_queue_is_empty(&tx->window)) {
        qpx_ud_rel_tx_start(tx, now);
    }
    return qpx_ud_rel_tx_push(tx, desc);
}

/*
 * Process a cumulative acknowledgement of everything up to ack_psn: calls
 * cb(desc, arg) for each newly acknowledged descriptor, oldest first, after
 * unlinking it. An ack outside [acked_psn, next_psn) is stale and ignored.
 * Returns the number of descriptors released.
 */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_rel_tx_ack(qpx_ud_rel_tx_t *tx, qpx_ud_psn_t ack_psn, uint64_t now,
                  void (*cb)(qpx_ud_rel_desc_t *desc, void *arg), void *arg)
{
    qpx_ud_rel_desc_t *desc;
    unsigned i, count;

    if (!qpx_ud_psn_lt(tx->acked_psn, ack_psn) ||
        !qpx_ud_psn_lt(ack_psn, tx->next_psn)) {
        return 0;
    }

    /* The oldest count descriptors of the window (it holds one per PSN in
     * flight, ack_psn among them) */
    count = (qpx_ud_psn_t)(ack_psn - tx->acked_psn);
    for (i = 0; i < count; ++i) {
        desc = ucs_container_of(ucs_queue_pull_non_empty(&tx->window),
                                qpx_ud_rel_desc_t, queue);
        /* A cursor on the next one: that one becomes the head */
        if (tx->resend_pos == &desc->queue.next) {
            tx->resend_pos = &tx->window.head;
        }
        cb(desc, arg);
    }

    if (ucs_unlikely(tx->rtt_timing) && qpx_ud_psn_le(tx->rtt_psn, ack_psn)) {
        qpx_ud_rel_tx_rtt_sample(tx, now - tx->rtt_start);
    }
    /* Each packet released lets one more in, up to the window */
    tx->cwnd          = ucs_min(tx->cwnd + count, tx->config->window);
    tx->acked_psn     = ack_psn;
    tx->probed        = 0;
    tx->rto           = tx->rto_base;
    tx->deadline      = now + tx->rto;
    tx->progress_time = now;
    if (tx->resending && qpx_ud_psn_le(tx->resend_psn, ack_psn)) {
        tx->resend_psn = ack_psn + 1;
        tx->resend_pos = &tx->window.head;
    }
    if (tx->resending && !qpx_ud_psn_lt(tx->resend_psn, tx->resend_end)) {
        tx->resending = 0;
    }
    return count;
}

/*
 * Next descriptor to retransmit, or NULL. The caller posts it and then calls
 * qpx_ud_rel_tx_resend_done(); if it cannot post now, it simply stops and
 * asks again later.
 */
static UCS_F_ALWAYS_INLINE qpx_ud_rel_desc_t *
qpx_ud_rel_tx_resend_next(qpx_ud_rel_tx_t *tx)
{
    if (!tx->resending || (tx->resend_pos == tx->window.ptail) ||
        !qpx_ud_psn_lt(tx->resend_psn, tx->resend_end)) {
        tx->resending = 0;
        return NULL;
    }

    return ucs_container_of(*tx->resend_pos, qpx_ud_rel_desc_t, queue);
}

static UCS_F_ALWAYS_INLINE void
qpx_ud_rel_tx_resend_done(qpx_ud_rel_tx_t *tx)
{
    ++tx->num_resent;
    ++tx->resend_psn;
    tx->resend_pos = &(*tx->resend_pos)->next;
    if ((tx->resend_pos == tx->window.ptail) ||
        !qpx_ud_psn_lt(tx->resend_psn, tx->resend_end)) {
        tx->resending = 0;
    }
}


/*
 * Classify a received PSN. Only QPX_UD_REL_RX_DELIVER advances the receive
 * state; anything behind it within a window is a duplicate, anything ahead
 * within a window is a gap, anything further is stale.
 */
static UCS_F_ALWAYS_INLINE qpx_ud_rel_rx_result_t
qpx_ud_rel_rx_check(qpx_ud_rel_rx_t *rx, qpx_ud_psn_t psn)
{
    int diff = qpx_ud_psn_diff(psn, rx->expected_psn);

    if (ucs_likely(diff == 0)) {
        ++rx->expected_psn;
        return QPX_UD_REL_RX_DELIVER;
    } else if ((diff < 0) && (diff >= -QPX_UD_REL_MAX_WINDOW)) {
        ++rx->num_dups;
        return QPX_UD_REL_RX_DUPLICATE;
    } else if ((diff > 0) && (diff <= QPX_UD_REL_MAX_WINDOW)) {
        ++rx->num_ahead;
        return QPX_UD_REL_RX_AHEAD;
    }

    ++rx->num_stale;
    return QPX_UD_REL_RX_STALE;
}

/*
 * The item kept for the next expected PSN, if any: removes it and advances
 * the receive state as a delivery would. Call after each delivery.
 */
static UCS_F_ALWAYS_INLINE void *
qpx_ud_rel_rx_ooo_pull(qpx_ud_rel_rx_t *rx)
{
    void **slot;
    void *item;

    if (ucs_likely(rx->ooo_count == 0)) {
        return NULL;
    }

    slot = &rx->ooo[rx->expected_psn & rx->ooo_mask];
    item = *slot;
    if (item != NULL) {
        *slot = NULL;
        --rx->ooo_count;
        ++rx->expected_psn;
    }
    return item;
}

/* Cumulative ack to send: the last PSN delivered in order */
static UCS_F_ALWAYS_INLINE qpx_ud_psn_t
qpx_ud_rel_rx_ack_psn(const qpx_ud_rel_rx_t *rx)
{
    return rx->expected_psn - 1;
}

/* Packets delivered since the last ack we sent */
static UCS_F_ALWAYS_INLINE unsigned
qpx_ud_rel_rx_unacked(const qpx_ud_rel_rx_t *rx)
{
    return (qpx_ud_psn_t)(rx->expected_psn - 1 - rx->acked_psn);
}

/* An ack (piggybacked or explicit) carrying qpx_ud_rel_rx_ack_psn() was sent */
static UCS_F_ALWAYS_INLINE void
qpx_ud_rel_rx_acked(qpx_ud_rel_rx_t *rx)
{
    rx->acked_psn = rx->expected_psn - 1;
}

/* The peer answered without acknowledging anything new: it is alive but
 * not accepting (busy), so the peer timeout starts again */
static UCS_F_ALWAYS_INLINE void
qpx_ud_rel_tx_peer_alive(qpx_ud_rel_tx_t *tx, uint64_t now)
{
    tx->progress_time = now;
}

#endif
