/*
 * A receiver that keeps every active message it is handed in its own
 * buffer runs qpx's receive buffers out: qpx then hands the messages over
 * without a buffer (no UCT_CB_PARAM_FLAG_DESC: the receiver copies, as UCP
 * does), so that nothing is lost and the receive queue keeps moving, and
 * once the receiver gives the buffers back they are handed over in buffers
 * again. (UCX's IB transports stop receiving instead, and their senders
 * get UCS_ERR_NO_RESOURCE: UCX's gtest uct_p2p_am_misc.no_rx_buffs expects
 * that, through UCX's IB option names, which qpx does not offer, so the
 * case skips for qpx. qpx degrades instead: UCP keeps unexpected
 * fragments' buffers, and a receiver that stopped there deadlocked.)
 *   qpx_uct_rx_exhaust -x TL [-d DEV]
 * The script sets UCX_QPX_RX_MAX_BUFS=1024 and UCX_QPX_RX_QUEUE_LEN=256, the
 * gtest's values. One process, two interfaces of one transport on one
 * worker. The sender sends EXHAUST_N 80-byte short AMs, each with its
 * sequence number and a pattern, progressing the worker; the receiver
 * checks each (in order, bytes intact) and keeps those in buffers. Then
 * the kept ones are checked again and released, and after 0.3 s of
 * progress (qpx_ud refills its queue on its timer) EXHAUST_MORE messages
 * more must come in buffers (all but the first, which may have been
 * received into a buffer the starved queue had). Prints "N passed, N failed"; exit 0 when none
 * failed, 77 without TL.
 */
#include "qpx_uct_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXHAUST_AM_ID   5
#define EXHAUST_LEN     80
#define EXHAUST_N       20000  /* far more than the 1024 buffers */
#define EXHAUST_MORE    100

typedef struct {
    void     **descs;
    unsigned count;     /* kept */
    unsigned copied;    /* handed over without a buffer */
    uint64_t next;      /* the sequence number due */
    unsigned bad;       /* out of order, wrong length or bytes */
    int      keep;
} exhaust_rx_t;

static void exhaust_fill(uint8_t *p, uint64_t seq)
{
    unsigned i;

    memcpy(p, &seq, sizeof(seq));
    for (i = sizeof(seq); i < EXHAUST_LEN; i++) {
        p[i] = (uint8_t)(seq * 7 + i);
    }
}

static ucs_status_t exhaust_am_cb(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    exhaust_rx_t *rx = arg;
    uint8_t ref[EXHAUST_LEN];

    exhaust_fill(ref, rx->next++);
    rx->bad += (length != EXHAUST_LEN) || memcmp(data, ref, EXHAUST_LEN);
    if (!(flags & UCT_CB_PARAM_FLAG_DESC)) {
        rx->copied++; /* the data are ours only now: looked at above */
        return UCS_OK;
    }
    if (!rx->keep || (rx->count == EXHAUST_N + EXHAUST_MORE)) {
        return UCS_OK;
    }
    rx->descs[rx->count++] = data;
    return UCS_INPROGRESS;
}

static double exhaust_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Sends until one succeeds or timeout_s passes: the status of the last */
static ucs_status_t exhaust_send(qpx_uct_loopback_t *lb, uct_ep_h ep,
                                 uint64_t seq, double timeout_s)
{
    double end = exhaust_now() + timeout_s;
    uint8_t buf[EXHAUST_LEN];
    ucs_status_t status;
    uint64_t hdr;

    exhaust_fill(buf, seq);
    memcpy(&hdr, buf, sizeof(hdr));
    do {
        status = uct_ep_am_short(ep, EXHAUST_AM_ID, hdr, buf + sizeof(hdr),
                                 EXHAUST_LEN - sizeof(hdr));
        uct_worker_progress(lb->worker);
    } while ((status == UCS_ERR_NO_RESOURCE) && (exhaust_now() < end));
    return status;
}

static uint64_t exhaust_send_n(qpx_uct_loopback_t *lb, uct_ep_h ep,
                               uint64_t seq, unsigned n, exhaust_rx_t *rx)
{
    uint64_t end = seq + n;
    unsigned i;

    while ((seq < end) && (exhaust_send(lb, ep, seq, 30.0) == UCS_OK)) {
        seq++;
    }
    for (i = 0; (i < 100000) && (rx->next < seq); i++) {
        uct_worker_progress(lb->worker); /* the last ones in flight */
    }
    return seq;
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 4096};
    exhaust_rx_t rx = {.keep = 1};
    uint8_t ref[EXHAUST_LEN];
    unsigned i, bad = 0;
    double t0;
    uct_ep_h ep, back;
    uint64_t seq;
    int ret;

    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    rx.descs = calloc(EXHAUST_N + EXHAUST_MORE, sizeof(*rx.descs));
    if ((rx.descs == NULL) ||
        (qpx_uct_connect_pair(lb.send_iface, lb.recv_iface, &ep, &back) != 0) ||
        (uct_iface_set_am_handler(lb.recv_iface, EXHAUST_AM_ID, exhaust_am_cb,
                                  &rx, 0) != UCS_OK)) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    seq = exhaust_send_n(&lb, ep, 0, EXHAUST_N, &rx);
    qpx_uct_report((seq == EXHAUST_N) && (rx.next == seq) && (rx.bad == 0),
                   "%s: %llu of %u sent, %llu arrived, in order, %u wrong",
                   lb.tl, (unsigned long long)seq, EXHAUST_N,
                   (unsigned long long)rx.next, rx.bad);
    qpx_uct_report((rx.count > 0) && (rx.count <= 1024) && (rx.copied > 0) &&
                   (rx.count + rx.copied == rx.next),
                   "%s: %u kept in buffers (at most 1024), then %u handed "
                   "over without one", lb.tl, rx.count, rx.copied);
    for (i = 0; i < rx.count; i++) {
        uint64_t s;

        memcpy(&s, rx.descs[i], sizeof(s));
        exhaust_fill(ref, s);
        bad += memcmp(rx.descs[i], ref, EXHAUST_LEN) != 0;
        uct_iface_release_desc(rx.descs[i]);
    }
    qpx_uct_report(bad == 0, "%s: the kept messages intact when released "
                   "(%u differ)", lb.tl, bad);
    rx.count = 0;
    /* the receive queue is refilled from the pool by the next progress
     * (qpx_ud: by its next timer tick) */
    for (t0 = exhaust_now(); exhaust_now() < t0 + 0.3;) {
        uct_worker_progress(lb.worker);
    }
    seq = exhaust_send_n(&lb, ep, seq, EXHAUST_MORE, &rx);
    qpx_uct_report((seq == EXHAUST_N + EXHAUST_MORE) && (rx.next == seq) &&
                   (rx.bad == 0) && (rx.count >= EXHAUST_MORE - 1),
                   "%s: the buffers given back, %u more, in buffers again "
                   "(%u of them; the first may still be copied)", lb.tl,
                   EXHAUST_MORE, rx.count);
    for (i = 0; i < rx.count; i++) {
        uct_iface_release_desc(rx.descs[i]);
    }
    uct_ep_destroy(ep);
    if (back != NULL) {
        uct_ep_destroy(back);
    }
    free(rx.descs);
    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return qpx_uct_nfail ? 1 : 0;
}
