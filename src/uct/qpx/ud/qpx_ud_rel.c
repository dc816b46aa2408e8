/*
 * qpx_ud reliability core: initialization, timers, NAK handling, purge.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud_rel.h"


ucs_status_t qpx_ud_rel_config_check(const qpx_ud_rel_config_t *config)
{
    if ((config->window < 1) || (config->window > QPX_UD_REL_MAX_WINDOW)) {
        ucs_error("qpx_ud: window %u out of range [1, %u]", config->window,
                  QPX_UD_REL_MAX_WINDOW);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->rto_init == 0) || (config->rto_max < config->rto_init)) {
        ucs_error("qpx_ud: retransmission timeout %lu ns must be non-zero "
                  "and not above its maximum %lu ns", config->rto_init,
                  config->rto_max);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!(config->backoff >= 1.0)) {
        ucs_error("qpx_ud: backoff %f must be at least 1", config->backoff);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->peer_timeout < config->rto_init) {
        ucs_error("qpx_ud: peer timeout %lu ns is below the retransmission "
                  "timeout %lu ns", config->peer_timeout, config->rto_init);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

void qpx_ud_rel_tx_init(qpx_ud_rel_tx_t *tx, const qpx_ud_rel_config_t *config,
                        qpx_ud_psn_t initial_psn)
{
    tx->config        = config;
    tx->next_psn      = initial_psn;
    tx->acked_psn     = initial_psn - 1;
    tx->resend_psn    = initial_psn;
    tx->resend_end    = initial_psn;
    tx->resending     = 0;
    tx->probed        = 0;
    tx->rtt_timing    = 0;
    tx->rtt_psn       = 0;
    tx->cwnd          = config->window;
    ucs_queue_head_init(&tx->window);
    tx->resend_pos    = tx->window.ptail;
    tx->rto           = config->rto_init;
    tx->rto_base      = config->rto_init;
    tx->rtt_start     = 0;
    tx->srtt          = 0;
    tx->rttvar        = 0;
    tx->deadline      = 0;
    tx->progress_time = 0;
    tx->last_nak_time = 0;
    tx->nak_acked_psn = tx->acked_psn - 1;
    tx->num_timeouts  = 0;
    tx->num_resent    = 0;
}

void qpx_ud_rel_rx_init(qpx_ud_rel_rx_t *rx)
{
    rx->ooo          = NULL;
    rx->ooo_mask     = 0;
    rx->ooo_count    = 0;
    rx->expected_psn = 0;
    rx->acked_psn    = (qpx_ud_psn_t)-1;
    rx->initialized  = 0;
    rx->num_dups     = 0;
    rx->num_ahead    = 0;
    rx->num_stale    = 0;
}

void qpx_ud_rel_rx_start(qpx_ud_rel_rx_t *rx, qpx_ud_psn_t first_psn)
{
    rx->expected_psn = first_psn;
    rx->acked_psn    = first_psn - 1;
    rx->initialized  = 1;
}

/* Retransmit count packets from the oldest unacknowledged one */
static void qpx_ud_rel_tx_resend_from_oldest(qpx_ud_rel_tx_t *tx,
                                             unsigned count)
{
    tx->rtt_timing = 0; /* Karn: an ack may now answer either copy */
    tx->resending  = 1;
    tx->resend_psn = tx->acked_psn + 1;
    tx->resend_end = tx->resend_psn +
                     ucs_min(count, qpx_ud_rel_tx_inflight(tx));
    tx->resend_pos = &tx->window.head;
}

void qpx_ud_rel_rx_ooo_init(qpx_ud_rel_rx_t *rx, void **slots,
                            unsigned capacity)
{
    rx->ooo       = slots;
    rx->ooo_mask  = capacity - 1;
    rx->ooo_count = 0;
}

int qpx_ud_rel_rx_ooo_put(qpx_ud_rel_rx_t *rx, qpx_ud_psn_t psn, void *item)
{
    void **slot;
    int diff = qpx_ud_psn_diff(psn, rx->expected_psn);

    if ((rx->ooo == NULL) || (diff <= 0) || ((unsigned)diff > rx->ooo_mask)) {
        return 0;
    }

    slot = &rx->ooo[psn & rx->ooo_mask];
    if (*slot != NULL) {
        return 0; /* a duplicate of a packet already kept */
    }

    *slot = item;
    ++rx->ooo_count;
    return 1;
}

void *qpx_ud_rel_rx_ooo_purge_one(qpx_ud_rel_rx_t *rx)
{
    unsigned i;
    void *item;

    for (i = 0; (rx->ooo_count > 0) && (i <= rx->ooo_mask); ++i) {
        if (rx->ooo[i] != NULL) {
            item       = rx->ooo[i];
            rx->ooo[i] = NULL;
            --rx->ooo_count;
            return item;
        }
    }
    return NULL;
}

qpx_ud_rel_timer_result_t qpx_ud_rel_tx_timer(qpx_ud_rel_tx_t *tx,
                                              uint64_t now)
{
    uint64_t rto;

    if (ucs_queue_is_empty(&tx->window)) {
        return QPX_UD_REL_TIMER_IDLE;
    }

    if ((now - tx->progress_time) >= tx->config->peer_timeout) {
        return QPX_UD_REL_TIMER_FAILED;
    }

    /* Time the newest packet, unless one is timed: its ack gives a round
     * trip (at the tick's resolution, the receiver's delayed ack in it) */
    if (!tx->rtt_timing) {
        tx->rtt_timing = 1;
        tx->rtt_psn    = tx->next_psn - 1;
        tx->rtt_start  = now;
    }

    if ((int64_t)(now - tx->deadline) < 0) {
        if (!tx->probed && (tx->config->probe_time > 0) &&
            ((now - tx->progress_time) >= tx->config->probe_time)) {
            tx->probed = 1;
            return QPX_UD_REL_TIMER_PROBE;
        }
        return QPX_UD_REL_TIMER_IDLE;
    }

    /* Timed out: half the congestion window, back to the oldest packet
     * (what fits in the window), back off */
    ++tx->num_timeouts;
    tx->cwnd = ucs_max(tx->cwnd / 2, QPX_UD_REL_MIN_CWND);
    qpx_ud_rel_tx_resend_from_oldest(tx, tx->cwnd);
    rto          = (uint64_t)(tx->rto * tx->config->backoff);
    tx->rto      = ucs_min(rto, tx->config->rto_max);
    tx->deadline = now + tx->rto;
    return QPX_UD_REL_TIMER_RESEND;
}

int qpx_ud_rel_tx_nak(qpx_ud_rel_tx_t *tx, uint64_t now, unsigned count)
{
    if (ucs_queue_is_empty(&tx->window) || tx->resending) {
        return 0;
    }

    /* The same gap reported again (its resend may still be on the way):
     * wait a little; a gap further on is new and resent at once */
    if ((tx->acked_psn == tx->nak_acked_psn) &&
        ((now - tx->last_nak_time) < tx->config->nak_holdoff)) {
        return 0;
    }

    tx->last_nak_time = now;
    tx->nak_acked_psn = tx->acked_psn;
    qpx_ud_rel_tx_resend_from_oldest(tx, ucs_min(count, tx->cwnd));
    return 1;
}

void qpx_ud_rel_tx_rtt_sample(qpx_ud_rel_tx_t *tx, uint64_t rtt)
{
    uint64_t err, rto;

    tx->rtt_timing = 0;
    if (tx->srtt == 0) {
        tx->srtt   = rtt;
        tx->rttvar = rtt / 2;
    } else {
        err        = (tx->srtt > rtt) ? (tx->srtt - rtt) : (rtt - tx->srtt);
        tx->rttvar = (3 * tx->rttvar + err) / 4;
        tx->srtt   = (7 * tx->srtt + rtt) / 8;
    }
    rto          = tx->srtt + 4 * tx->rttvar;
    tx->rto_base = ucs_min(ucs_max(rto, tx->config->rto_init),
                           tx->config->rto_max);
}

int qpx_ud_rel_tx_probe_reply(qpx_ud_rel_tx_t *tx)
{
    if (!tx->probed || tx->resending || ucs_queue_is_empty(&tx->window)) {
        return 0;
    }

    tx->probed = 0;
    qpx_ud_rel_tx_resend_from_oldest(tx, tx->cwnd);
    return 1;
}

qpx_ud_rel_desc_t *qpx_ud_rel_tx_purge_one(qpx_ud_rel_tx_t *tx)
{
    qpx_ud_rel_desc_t *desc;

    tx->resending  = 0;
    tx->resend_pos = &tx->window.head;
    if (ucs_queue_is_empty(&tx->window)) {
        return NULL;
    }

    desc = ucs_container_of(ucs_queue_pull_non_empty(&tx->window),
                            qpx_ud_rel_desc_t, queue);
    /* The packet (the oldest in flight) is gone for good: the peer must not
     * expect it */
    ++tx->acked_psn;
    return desc;
}
