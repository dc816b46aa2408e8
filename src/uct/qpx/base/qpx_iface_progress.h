/*
 * One progress round of an interface that polls its two CQs (the RC
 * family's, qpx_ud's): the completions event_arm took out first
 * (qpx_iface_event.c), the receive and send CQs, a due keepalive round,
 * the receive queue's care, the pending queue (qpx_ep.c's). The transports
 * include it; base's own files, but the event file that defines the
 * backlog's round, need not.
 */
#ifndef QPX_IFACE_PROGRESS_H_
#define QPX_IFACE_PROGRESS_H_

#include "qpx_ep.h"
#include "qpx_iface.inl"


/* Handles n completions of one CQ; the transport's, given as a constant
 * to qpx_iface_progress_cqs() so that inlining makes its calls direct */
typedef unsigned (*qpx_iface_wc_cb_t)(qpx_iface_t *iface, struct ibv_wc *wc,
                                      int n);

/* The completions event_arm took out of the CQs, handled (cold path) */
unsigned qpx_iface_backlog_progress(qpx_iface_t *iface, qpx_iface_wc_cb_t rx,
                                    qpx_iface_wc_cb_t tx);

/*
 * One progress round of a transport that polls the interface's two CQs:
 * the completions event_arm took first, then the receive CQ, the send CQ
 * unless nothing is outstanding there (tx_idle: nothing signalled and every
 * request known complete), a due keepalive round, a receive queue to grow
 * (its SRQ ran low) or to refill (its pool was empty), the pending queue.
 * direct: a constant, iface's path (qpx_iface_poll_cq_path).
 */
static UCS_F_ALWAYS_INLINE unsigned
qpx_iface_progress_cqs(qpx_iface_t *iface, int direct, int tx_idle,
                       qpx_iface_wc_cb_t rx,
                       qpx_iface_wc_cb_t tx,
                       void (*keepalive)(qpx_iface_t *iface))
{
    struct ibv_wc wc[QPX_IFACE_BACKLOG];
    unsigned count = 0;
    int n;

    if (ucs_unlikely((iface->backlog.rx_count | iface->backlog.tx_count) !=
                     0)) {
        count += qpx_iface_backlog_progress(iface, rx, tx);
    }
    n = qpx_iface_poll_cq_path(iface, QPX_IFACE_CQ_RX, QPX_IFACE_BACKLOG, wc,
                               direct);
    if (n > 0) {
        count += rx(iface, wc, n);
    }
    if (!tx_idle) {
        n = qpx_iface_poll_cq_path(iface, QPX_IFACE_CQ_TX, QPX_IFACE_BACKLOG,
                                   wc, direct);
        if (n > 0) {
            count += tx(iface, wc, n);
        }
    }
    if (ucs_unlikely(iface->keepalive.due)) {
        iface->keepalive.due = 0;
        keepalive(iface);
    }
    if (ucs_unlikely(iface->rx.low)) {
        qpx_iface_rx_tend(iface);
    }
    qpx_iface_pending_progress(iface);
    return count;
}

/*
 * Whether a direct interface's progress round (qpx_iface_progress_cqs)
 * would find nothing to do but its pending queue: no backlog, no CQE in
 * the receive CQ or (unless tx_idle) the send CQ, no keepalive round due,
 * no receive queue to tend. Such a round need not make room for
 * completions (that function's frame): the direct progress functions test
 * this first (qpx_rdma_iface_progress_direct).
 */
static UCS_F_ALWAYS_INLINE int qpx_iface_progress_is_empty(qpx_iface_t *iface,
                                                           int tx_idle)
{
    ucs_assert(iface->direct.enabled);
    return ((iface->backlog.rx_count | iface->backlog.tx_count) == 0) &&
           !qpx_mlx5_cq_ready(&iface->direct.cq[QPX_IFACE_CQ_RX]) &&
           (tx_idle ||
            !qpx_mlx5_cq_ready(&iface->direct.cq[QPX_IFACE_CQ_TX])) &&
           !iface->keepalive.due && !iface->rx.low;
}


#endif
