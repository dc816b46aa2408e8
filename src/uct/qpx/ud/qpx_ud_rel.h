/*
 * qpx_ud reliability core: packet sequence numbers with wrap-around, a send
 * window of descriptors, cumulative acknowledgements, retransmission on
 * timeout with exponential backoff, peer failure detection, and in-order
 * duplicate-free acceptance on the receive side.
 *
 * Nothing here touches a device, allocates memory or reads a clock: the
 * transport embeds qpx_ud_rel_desc_t in its send descriptors, passes the
 * current time in nanoseconds, and posts whatever the core tells it to
 * (re)send. That keeps the core testable without verbs (test/unit/ud).
 *
 * The protocol is go-back-N: the receiver accepts only the next expected
 * PSN and drops anything ahead of it (asking the sender for an
 * acknowledgement so that a reordering or loss is repaired quickly); the
 * sender retransmits from the oldest unacknowledged packet.
 *
 * Timeouts adapt to the path, and retransmissions are bounded, so that a
 * receiver that is only slow (a process descheduled for a few ms on a busy
 * host) does not start a storm of duplicates:
 *  - the retransmission timeout follows the measured round trip (RFC 6298:
 *    srtt + 4 rttvar, at least rto_init, at most rto_max; one packet timed
 *    at a time, from the timer's tick to the ack that covers it, and none
 *    across a retransmission: Karn's rule), backing off on timeouts;
 *  - a congestion window (cwnd, at most the window) halves on a timeout,
 *    down to QPX_UD_REL_MIN_CWND, and grows by the packets each ack
 *    releases: new packets and every retransmission (timeout, NAK, probe)
 *    stay within it.
 * Under load (the suite beside a UCX build on two cores) 4 MiB puts over
 * UCP resent 1,067,083 packets for some 210,000 with a fixed 10 ms timeout
 * and full-window go-back-N (docs/performance.md).
 */
#ifndef QPX_UD_REL_H_
#define QPX_UD_REL_H_

#include <ucs/ucx_compat.h>
#include <stdint.h>


/* 16-bit sequence numbers: wrap-around happens after 65536 packets */
typedef uint16_t qpx_ud_psn_t;

/* Largest send window that keeps PSN comparisons unambiguous */
#define QPX_UD_REL_MAX_WINDOW 0x4000

/* Smallest congestion window: packets in flight after repeated timeouts */
#define QPX_UD_REL_MIN_CWND   2


typedef struct qpx_ud_rel_config {
    unsigned window;       /* max packets in flight, 1..QPX_UD_REL_MAX_WINDOW */
    uint64_t rto_init;     /* first retransmission timeout, ns */
    uint64_t rto_max;      /* backoff cap, ns */
    double   backoff;      /* rto multiplier after each timeout, >= 1 */
    uint64_t peer_timeout; /* no ack progress for this long: peer failed, ns */
    uint64_t nak_holdoff;  /* min time between NAK-driven resends, ns */
    uint64_t probe_time;   /* no ack progress this long: ask for an ack
                              (tail loss probe), ns; 0: never */
} qpx_ud_rel_config_t;


/* Embedded in every reliable send descriptor. Its PSN is not kept: the
 * window holds every PSN from acked_psn + 1 to next_psn - 1, in order, one
 * descriptor each, so the k-th from the head has acked_psn + 1 + k */
typedef struct qpx_ud_rel_desc {
    ucs_queue_elem_t queue; /* in qpx_ud_rel_tx_t::window, PSN order */
} qpx_ud_rel_desc_t;


typedef enum {
    QPX_UD_REL_TIMER_IDLE,     /* nothing to do */
    QPX_UD_REL_TIMER_RESEND,   /* retransmit from the oldest packet */
    QPX_UD_REL_TIMER_PROBE,    /* ask the peer for an ack */
    QPX_UD_REL_TIMER_FAILED    /* peer did not ack within peer_timeout */
} qpx_ud_rel_timer_result_t;


typedef enum {
    QPX_UD_REL_RX_DELIVER,     /* next in order: deliver it */
    QPX_UD_REL_RX_DUPLICATE,   /* already delivered: drop, re-ack */
    QPX_UD_REL_RX_AHEAD,       /* a gap before it: drop, ask for resend */
    QPX_UD_REL_RX_STALE        /* outside any valid window: drop, count */
} qpx_ud_rel_rx_result_t;


typedef struct qpx_ud_rel_tx {
    const qpx_ud_rel_config_t *config;
    qpx_ud_psn_t              next_psn;    /* PSN of the next new packet */
    qpx_ud_psn_t              acked_psn;   /* all PSNs up to this are acked */
    qpx_ud_psn_t              resend_psn;  /* next PSN to retransmit */
    qpx_ud_psn_t              resend_end;  /* stop before this PSN */
    uint8_t                   resending;   /* resend_psn is valid */
    uint8_t                   probed;      /* probe sent, no progress yet */
    uint8_t                   rtt_timing;  /* rtt_psn is timed */
    qpx_ud_psn_t              rtt_psn;     /* the packet timed */
    unsigned                  cwnd;        /* packets allowed in flight */
    ucs_queue_head_t          window;      /* unacked descriptors: sent at
                                              the tail, acked at the head */
    ucs_queue_iter_t          resend_pos;  /* cursor: the link to the desc
                                              with resend_psn (the window's
                                              ptail: none) */
    uint64_t                  rto;         /* current timeout, ns */
    uint64_t                  rto_base;    /* without backoff, from srtt */
    uint64_t                  rtt_start;   /* when rtt_psn was timed */
    uint64_t                  srtt;        /* smoothed RTT, ns; 0: none */
    uint64_t                  rttvar;      /* its mean deviation, ns */
    uint64_t                  deadline;    /* retransmit at, when unacked */
    uint64_t                  progress_time; /* last ack progress / start */
    uint64_t                  last_nak_time;
    qpx_ud_psn_t              nak_acked_psn; /* acked_psn at the last NAK */
    uint64_t                  num_timeouts;  /* statistics */
    uint64_t                  num_resent;
} qpx_ud_rel_tx_t;


typedef struct qpx_ud_rel_rx {
    void         **ooo;         /* packets ahead of a gap, by PSN; or NULL */
    unsigned     ooo_mask;      /* capacity - 1 (capacity: a power of 2) */
    unsigned     ooo_count;
    qpx_ud_psn_t expected_psn;  /* next PSN to deliver */
    qpx_ud_psn_t acked_psn;     /* last PSN we acknowledged to the peer */
    uint8_t      initialized;   /* expected_psn learnt from the peer */
    uint64_t     num_dups;      /* statistics */
    uint64_t     num_ahead;
    uint64_t     num_stale;
} qpx_ud_rel_rx_t;


ucs_status_t qpx_ud_rel_config_check(const qpx_ud_rel_config_t *config);

void qpx_ud_rel_tx_init(qpx_ud_rel_tx_t *tx, const qpx_ud_rel_config_t *config,
                        qpx_ud_psn_t initial_psn);

void qpx_ud_rel_rx_init(qpx_ud_rel_rx_t *rx);

/* Start accepting from the peer's first PSN (learnt from its connect packet) */
void qpx_ud_rel_rx_start(qpx_ud_rel_rx_t *rx, qpx_ud_psn_t first_psn);

qpx_ud_rel_timer_result_t qpx_ud_rel_tx_timer(qpx_ud_rel_tx_t *tx,
                                              uint64_t now);

/*
 * Peer reports a gap after the acked PSN: resend count packets from the
 * oldest one (1 when the peer keeps packets ahead of a gap, the window when
 * it drops them), unless the same gap was resent less than nak_holdoff ago.
 * Returns 1 when a resend starts.
 */
int qpx_ud_rel_tx_nak(qpx_ud_rel_tx_t *tx, uint64_t now, unsigned count);

/*
 * Give the receive side a buffer for packets that arrive ahead of a gap:
 * slots[capacity] (a power of 2, at most QPX_UD_REL_MAX_WINDOW), all NULL.
 * Without one, such packets are dropped and resent by go-back-N.
 */
void qpx_ud_rel_rx_ooo_init(qpx_ud_rel_rx_t *rx, void **slots,
                            unsigned capacity);

/* Keep item for PSN psn (classified QPX_UD_REL_RX_AHEAD); 0: not kept */
int qpx_ud_rel_rx_ooo_put(qpx_ud_rel_rx_t *rx, qpx_ud_psn_t psn, void *item);

/* Any kept item, removed (cleanup); NULL when none is left */
void *qpx_ud_rel_rx_ooo_purge_one(qpx_ud_rel_rx_t *rx);

/*
 * An explicit ack arrived after a probe and did not cover everything: the
 * rest was lost at the tail; resend it. Returns 1 when a resend starts.
 */
int qpx_ud_rel_tx_probe_reply(qpx_ud_rel_tx_t *tx);

/* A round trip of rtt ns measured (the timed packet acked): the smoothed
 * RTT, its deviation and the timeout without backoff follow (RFC 6298) */
void qpx_ud_rel_tx_rtt_sample(qpx_ud_rel_tx_t *tx, uint64_t rtt);

/* Remove every descriptor from the window (peer failed or ep destroyed) */
qpx_ud_rel_desc_t *qpx_ud_rel_tx_purge_one(qpx_ud_rel_tx_t *tx);

#include "qpx_ud_rel.inl"

#endif
