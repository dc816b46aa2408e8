/*
 * qpx_ud robustness tests through the public UCT API, over softverbs.
 *
 *   ud_uct_test pending-stall   the send descriptors of an interface are
 *                               all held by eps to a silent peer; a request
 *                               queued on another ep must still run once
 *                               descriptors come back, although that ep gets
 *                               no ack of its own (needs
 *                               UCX_QPX_UD_MAX_TX_BUFS=256 UCX_QPX_UD_WINDOW=16;
 *                               with UCX_QPX_UD_TX_QUEUE_LEN=256 the send
 *                               queue is full too and pending_add queues,
 *                               with 1024 it must not answer BUSY)
 *   ud_uct_test no-progress P   a child stops calling progress for P
 *                               seconds while the parent keeps sending: the
 *                               parent's ep must not fail (run with
 *                               UCX_QPX_UD_TIMEOUT < P)
 *   ud_uct_test ep-churn N      N eps created, used and destroyed to one
 *                               peer iface: the peer's ep count and memory
 *                               stay bounded
 */
#include "ud_uct_test.h"

#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_SILENT_EPS 32
#define BCOPY_LEN      1024


typedef struct {
    uct_pending_req_t req;
    uct_ep_h          ep;
    int               done;
    int               calls;
} stall_req_t;

static size_t fill_pack_cb(void *dest, void *arg)
{
    (void)arg;
    memset(dest, 0x5a, BCOPY_LEN);
    return BCOPY_LEN;
}

/* bcopy of BCOPY_LEN: larger than the inline limit, so its descriptor is
 * held until the peer acknowledges it */
static ucs_status_t send_bcopy(uct_ep_h ep)
{
    ssize_t ret = uct_ep_am_bcopy(ep, AM_ID + 1, fill_pack_cb, NULL, 0);

    return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
}

static ucs_status_t stall_req_cb(uct_pending_req_t *self)
{
    stall_req_t *r = ucs_container_of(self, stall_req_t, req);
    ucs_status_t status;

    ++r->calls;
    status = send_bcopy(r->ep);
    if (status == UCS_OK) {
        r->done = 1;
    }
    return status;
}

static void progress_for(double seconds)
{
    double end = now_sec() + seconds;

    while (now_sec() < end) {
        uct_worker_progress(worker);
    }
}

int test_pending_stall(const test_resource_t *res)
{
    test_iface_t a, b, c;
    uct_ep_h ex, ey, ecs[NUM_SILENT_EPS];
    stall_req_t rx = {.done = 0}, ry = {.done = 0};
    uint64_t payload = 0;
    int i, n, held = 0, window = 0, busy_lie = 0, ok;
    ucs_status_t status;
    double deadline;

    if (!iface_open(res, &a) || !iface_open(res, &b) || !iface_open(res, &c) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ex) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ey)) {
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);
    uct_iface_set_am_handler(c.iface, AM_ID + 1, count_handler, &c, 0);
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        if (!ep_create(&a, c.dev_addr, c.iface_addr, &ecs[i])) {
            return 1;
        }
    }

    /* Connect every ep: one acknowledged message each */
    deadline = now_sec() + 30;
    for (i = -2; i < NUM_SILENT_EPS; ++i) {
        uct_ep_h ep = (i == -2) ? ex : (i == -1) ? ey : ecs[i];

        while ((uct_ep_am_short(ep, AM_ID + 1, 0, &payload, 8) != UCS_OK) &&
               (now_sec() < deadline)) {
            uct_worker_progress(worker);
        }
        if (!flush_ep(ep, deadline)) {
            fprintf(stderr, "pending-stall: connecting ep %d failed\n", i);
            return 1;
        }
    }

    /* c goes silent: what is sent to it stays unacknowledged */
    uct_iface_progress_disable(c.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* ex: its own window full of inline sends (acked by b later), which
     * hold no descriptor: their acks give none back */
    while (uct_ep_am_short(ex, AM_ID + 1, 0, &payload, 8) == UCS_OK) {
        ++window;
    }
    /* The silent eps take every descriptor that is left */
    for (n = 1; n > 0;) {
        for (i = 0, n = 0; i < NUM_SILENT_EPS; ++i) {
            n += (send_bcopy(ecs[i]) == UCS_OK);
        }
        held += n;
    }
    status = send_bcopy(ey);
    printf("pending-stall: ex window %d, %d descriptors held by %d eps to a "
           "silent iface; idle ep send: %s\n", window, held, NUM_SILENT_EPS,
           ucs_status_string(status));
    if ((status != UCS_ERR_NO_RESOURCE) || (window == 0)) {
        fprintf(stderr, "pending-stall: descriptors not exhausted (set "
                "UCX_QPX_UD_MAX_TX_BUFS=256 UCX_QPX_UD_WINDOW=16)\n");
        return 1;
    }

    /* An idle ep: pending_add may say BUSY only if a send would now work */
    ry.req.func = stall_req_cb;
    ry.ep       = ey;
    status      = uct_ep_pending_add(ey, &ry.req, 0);
    if (status == UCS_ERR_BUSY) {
        busy_lie = (send_bcopy(ey) != UCS_OK);
        ry.done  = !busy_lie;
        printf("pending-stall: pending_add on the idle ep: BUSY, send then "
               "%s\n", busy_lie ? "NO_RESOURCE (contract broken)" : "ok");
    } else if (status != UCS_OK) {
        fprintf(stderr, "pending_add(ey): %s\n", ucs_status_string(status));
        return 1;
    }

    /* ex: window full, so the request is queued */
    rx.req.func = stall_req_cb;
    rx.ep       = ex;
    status      = uct_ep_pending_add(ex, &rx.req, 0);
    if (status != UCS_OK) {
        fprintf(stderr, "pending_add(ex): %s\n", ucs_status_string(status));
        return 1;
    }

    /* b acknowledges ex's window while descriptors are still held: the
     * request finds none, and ex has nothing in flight any more */
    progress_for(0.5);
    printf("pending-stall: after 0.5 s with the peer silent: request ran %d "
           "time(s), done %d\n", rx.calls, rx.done);

    /* c speaks again: descriptors come back through the other eps' acks */
    uct_iface_progress_enable(c.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    deadline = now_sec() + 5;
    while ((!rx.done || !ry.done) && (now_sec() < deadline)) {
        uct_worker_progress(worker);
    }
    printf("pending-stall: descriptors released: queued request on the "
           "acked ep %s (%d calls), on the idle ep %s\n",
           rx.done ? "ran" : "STALLED", rx.calls,
           ry.done ? "ran" : "STALLED");

    ok = rx.done && ry.done && !busy_lie;
    deadline = now_sec() + 30;
    ok = ok && flush_ep(ex, deadline) && flush_ep(ey, deadline);
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        ok = ok && flush_ep(ecs[i], deadline);
    }
    if (!rx.done) {
        uct_ep_pending_purge(ex, NULL, NULL);
    }
    if (!ry.done && !busy_lie) {
        uct_ep_pending_purge(ey, NULL, NULL);
    }
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        uct_ep_destroy(ecs[i]);
    }
    uct_ep_destroy(ex);
    uct_ep_destroy(ey);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    uct_iface_close(c.iface);
    return ok ? 0 : 1;
}

int test_no_progress(const test_resource_t *res, double pause)
{
    (void)res;
    (void)pause;
    return 77;
}

int test_ep_churn(const test_resource_t *res, int count)
{
    (void)res;
    (void)count;
    return 77;
}
