/*
 * A pending request added with UCT_CB_FLAG_ASYNC runs without the user's
 * progress (UCX's gtest uct_p2p_am_test.am_async_response), one process:
 *   qpx_uct_async_pending -x TL [-d DEV]
 * Two interfaces on workers of their own; the receiver's worker is never
 * progressed. Its active message handler, registered with
 * UCT_CB_FLAG_ASYNC (the transport calls it from its async progress),
 * answers the sender's message with short messages until the endpoint
 * refuses one, then adds a pending request with UCT_CB_FLAG_ASYNC that
 * sends the last answer. The sender progresses until it has every answer
 * the receiver sent and the pending one ran, or 30 s pass (a liveness
 * bound, not a measure). Each answer carries its sequence number, checked
 * in order. Prints "N passed, N failed"; exit 0 when none failed, 77
 * without TL or without asynchronous callbacks.
 */
#include "qpx_uct_open.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#define AP_AM_REQ  1
#define AP_AM_RESP 2
#define AP_LAST    0xfffffffful

typedef struct {
    uct_pending_req_t super;
    uct_ep_h          ep;        /* the receiver's, to the sender */
    pthread_mutex_t   lock;
    volatile int      handled;   /* the handler ran */
    volatile int      posted;    /* the pending request sent its answer */
    volatile int      add_status;
    volatile uint64_t sent;      /* answers sent */
    volatile uint64_t received;  /* answers the sender got */
    volatile uint64_t out_of_order;
} ap_ctx_t;

static ap_ctx_t ap;

/* The pending request: the last answer */
static ucs_status_t ap_pending_cb(uct_pending_req_t *req)
{
    ucs_status_t status;

    pthread_mutex_lock(&ap.lock);
    status = uct_ep_am_short(ap.ep, AP_AM_RESP, ap.sent, NULL, 0);
    if (status == UCS_OK) {
        ++ap.sent;
        ap.posted = 1;
    }
    pthread_mutex_unlock(&ap.lock);
    return status;
}

/* The receiver's handler (async): answers until refused, then queues one */
static ucs_status_t ap_req_cb(void *arg, void *data, size_t length,
                              unsigned flags)
{
    ucs_status_t status;

    pthread_mutex_lock(&ap.lock);
    ap.handled = 1;
    do {
        status = uct_ep_am_short(ap.ep, AP_AM_RESP, ap.sent, NULL, 0);
        ap.sent += (status == UCS_OK);
    } while ((status == UCS_OK) && (ap.sent < 100000));
    ap.super.func  = ap_pending_cb;
    ap.add_status  = uct_ep_pending_add(ap.ep, &ap.super, UCT_CB_FLAG_ASYNC);
    pthread_mutex_unlock(&ap.lock);
    return UCS_OK;
}

static ucs_status_t ap_resp_cb(void *arg, void *data, size_t length,
                               unsigned flags)
{
    uint64_t seq = *(const uint64_t*)data;

    ap.out_of_order += (seq != ap.received);
    ++ap.received;
    return UCS_OK;
}

static double ap_now(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 4096};
    ucs_async_context_t *r_async;
    uct_worker_h r_worker;
    uct_iface_h r_iface;
    uct_iface_attr_t r_attr;
    uct_ep_h s_ep, r_back;
    double deadline;
    ucs_status_t status;
    int ret;

    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    if (qpx_uct_iface_open(lb.md, lb.tl, lb.dev, NULL, NULL, &r_async,
                           &r_worker, &r_iface) ||
        uct_iface_query(r_iface, &r_attr)) {
        qpx_uct_report(0, "%s: the receiver's interface", lb.tl);
        goto out;
    }
    if (!(r_attr.cap.flags & UCT_IFACE_FLAG_CB_ASYNC) ||
        !(r_attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT)) {
        printf("SKIP: %s has no asynchronous callbacks\n", lb.tl);
        return 77;
    }
    pthread_mutex_init(&ap.lock, NULL);
    /* The receiver answers on its endpoint to the sender; the sender's
     * endpoint to the receiver carries the request */
    if (qpx_uct_connect_pair(r_iface, lb.send_iface, &ap.ep, &r_back) ||
        qpx_uct_connect_pair(lb.send_iface, r_iface, &s_ep, &r_back)) {
        qpx_uct_report(0, "%s: connect", lb.tl);
        goto out;
    }
    uct_iface_set_am_handler(r_iface, AP_AM_REQ, ap_req_cb, NULL,
                             UCT_CB_FLAG_ASYNC);
    uct_iface_set_am_handler(lb.send_iface, AP_AM_RESP, ap_resp_cb, NULL, 0);

    deadline = ap_now() + 30;
    do {
        uct_worker_progress(lb.worker);
        status = uct_ep_am_short(s_ep, AP_AM_REQ, 0, NULL, 0);
    } while ((status == UCS_ERR_NO_RESOURCE) && (ap_now() < deadline));
    qpx_uct_report(status == UCS_OK, "%s: the request sent: %s", lb.tl,
                   ucs_status_string(status));

    /* Only the sender progresses; the receiver's worker never does */
    while ((!ap.posted || (ap.received != ap.sent)) && (ap_now() < deadline)) {
        uct_worker_progress(lb.worker);
    }
    qpx_uct_report(ap.handled && (ap.add_status == UCS_OK),
                   "%s: the async handler ran and queued its request (%s)",
                   lb.tl, ucs_status_string((ucs_status_t)ap.add_status));
    qpx_uct_report(ap.posted, "%s: the pending request added with "
                   "UCT_CB_FLAG_ASYNC ran without the receiver's progress",
                   lb.tl);
    qpx_uct_report((ap.received == ap.sent) && (ap.out_of_order == 0),
                   "%s: %lu of %lu answers arrived, %lu out of order",
                   lb.tl, (unsigned long)ap.received,
                   (unsigned long)ap.sent, (unsigned long)ap.out_of_order);

out:
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
