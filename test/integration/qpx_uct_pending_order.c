/*
 * Order of pending requests against what completion callbacks send, one
 * process, two interfaces of one transport on one worker (the case of
 * UCX's gtest test_uct_pending.send_ooo_with_comp):
 *   qpx_uct_pending_order -x TL [-d DEV]
 * An am_zcopy with a completion whose callback sends an am_short (COMP);
 * am_shorts until the send queue is full; one pending request that makes
 * progress without sending five times (UCS_INPROGRESS), then sends
 * (PENDING). The receiver must see PENDING before COMP: a send from a
 * completion callback may not overtake a request queued before it (it is
 * refused with UCS_ERR_NO_RESOURCE while the request waits). Also: a
 * request freed by its own callback when it completes (as the gtest does)
 * is not touched after it. Run with small queues (the script sets them).
 * Prints "N passed, N failed"; exit 0 when none failed, 77 without TL.
 */
#include "qpx_uct_open.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ORDER_AM_ID   5
#define HDR_FILL      0x0ul
#define HDR_PENDING   0x1ul
#define HDR_COMP      0x2ul

typedef struct {
    int pending_seen, comp_seen, comp_before_pending, fills;
} order_rx_t;

typedef struct {
    uct_completion_t super;
    uct_ep_h         ep;
    int              comp_sent;
    int              early;     /* completed before the request was queued */
} order_comp_t;

static int order_queued; /* the pending request was added */

typedef struct {
    uct_pending_req_t super;
    uct_ep_h          ep;
    int               countdown;
    int               *done;
} order_req_t;

static uct_worker_h worker;

static ucs_status_t order_am_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    order_rx_t *rx = arg;
    uint64_t hdr;

    memcpy(&hdr, data, sizeof(hdr));
    if (hdr == HDR_PENDING) {
        ++rx->pending_seen;
    } else if (hdr == HDR_COMP) {
        rx->comp_before_pending += (rx->pending_seen == 0);
        ++rx->comp_seen;
    } else {
        ++rx->fills;
    }
    return UCS_OK;
}

/* The zcopy completed: send COMP (refused while the request waits) */
static void order_comp_cb(uct_completion_t *self)
{
    order_comp_t *comp = ucs_container_of(self, order_comp_t, super);

    comp->early     = !order_queued;
    comp->comp_sent = (uct_ep_am_short(comp->ep, ORDER_AM_ID, HDR_COMP, NULL,
                                       0) == UCS_OK);
}

/* In progress five times, then PENDING; freed by itself once sent */
static ucs_status_t order_pending_cb(uct_pending_req_t *self)
{
    order_req_t *req = ucs_container_of(self, order_req_t, super);
    uint64_t data    = 0xdeadbeef;
    ucs_status_t status;

    if (req->countdown > 0) {
        --req->countdown;
        return UCS_INPROGRESS;
    }
    status = uct_ep_am_short(req->ep, ORDER_AM_ID, HDR_PENDING, &data,
                             sizeof(data));
    if (status == UCS_OK) {
        *req->done = 1;
        memset(req, 0xa5, sizeof(*req)); /* a use after this is seen */
        free(req);
    }
    return status;
}

static void order_case(uct_iface_h send_iface, uct_iface_h recv_iface,
                       uct_ep_h ep, uct_mem_h memh, void *buf, int round)
{
    order_rx_t rx = {0, 0, 0, 0};
    order_comp_t comp;
    order_req_t *req;
    uct_iov_t iov = {buf, 32, memh, 0, 1};
    uint64_t data = 7;
    ucs_status_t status;
    int i, sent = 0, done = 0;

    uct_iface_set_am_handler(recv_iface, ORDER_AM_ID, order_am_cb, &rx, 0);
    comp.super.func   = order_comp_cb;
    comp.super.count  = 1;
    comp.super.status = UCS_OK;
    comp.ep           = ep;
    comp.comp_sent    = 0;
    comp.early        = 0;
    order_queued      = 0;
    while ((status = uct_ep_am_zcopy(ep, ORDER_AM_ID, &data, sizeof(data),
                                     &iov, 1, 0, &comp.super)) ==
           UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(worker);
    }
    if (status == UCS_OK) {
        order_comp_cb(&comp.super); /* completed at once */
    }

    /* Fill the send queue, then queue one request */
    for (i = 0; i < 100000; ++i) {
        status = uct_ep_am_short(ep, ORDER_AM_ID, HDR_FILL, &data,
                                 sizeof(data));
        if (status != UCS_OK) {
            break;
        }
        ++sent;
    }
    req            = calloc(1, sizeof(*req));
    req->super.func = order_pending_cb;
    req->ep        = ep;
    req->countdown = 5;
    req->done      = &done;
    order_queued   = 1;
    if ((status != UCS_ERR_NO_RESOURCE) ||
        (uct_ep_pending_add(ep, &req->super, 0) != UCS_OK)) {
        qpx_uct_report(0, "round %d: the queue did not fill (%d sent, %s)",
                       round, sent, ucs_status_string(status));
        free(req);
        return;
    }

    for (i = 0; (i < 5000000) && (rx.pending_seen == 0); ++i) {
        uct_worker_progress(worker);
    }
    for (i = 0; i < 100000; ++i) { /* and COMP, if it was sent */
        uct_worker_progress(worker);
    }
    qpx_uct_report(done && (rx.pending_seen == 1) &&
                   (rx.comp_before_pending == 0),
                   "round %d: %d fills, PENDING %s, COMP %s%s%s", round,
                   sent, rx.pending_seen ? "received" : "lost",
                   comp.comp_sent ? "sent" : "refused (a request waited)",
                   rx.comp_before_pending ? ", before PENDING" : "",
                   comp.early ? " (its completion came before the request "
                   "was queued)" : "");
    (void)send_iface;
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 4096};
    uct_ep_h ep, back;
    int ret, i;

    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    if (qpx_uct_connect_pair(lb.send_iface, lb.recv_iface, &ep, &back)) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }
    worker = lb.worker;

    for (i = 0; i < 5; ++i) {
        order_case(lb.send_iface, lb.recv_iface, ep, lb.memh, lb.buf, i);
        for (ret = 0; ret < 100000; ++ret) {
            uct_worker_progress(worker);
        }
    }

    uct_ep_destroy(ep);
    if (back != NULL) {
        uct_ep_destroy(back);
    }
    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
