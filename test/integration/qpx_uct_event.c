/*
 * Receive events of a qpx interface (the case of UCX's gtest
 * test_uct_event), one process, two interfaces of one transport on one
 * worker:
 *   qpx_uct_event -x TL [-d DEV] [-n COUNT]
 * COUNT times: progress until there is nothing to do and
 * uct_iface_event_arm(UCT_EVENT_RECV) returns UCS_OK (UCS_ERR_BUSY: again),
 * then the event fd must not be readable (a spurious event), an active
 * message is sent, and the event fd must become readable within 10 s (a
 * missed event), and the message is received. Spurious events must stay
 * below 1% (UCX's bound), none may be missed, every message arrives.
 * Prints "N passed, N failed"; exit 0 when none failed, 77 without TL or
 * without receive events.
 */
#include "qpx_uct_open.h"

#include <ucs/sys/math.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVENT_AM_ID 9

static uct_worker_h worker;

static ucs_status_t event_am_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    ++*(unsigned*)arg;
    return UCS_OK;
}

static size_t event_pack(void *dest, void *arg)
{
    memcpy(dest, arg, sizeof(uint64_t));
    return sizeof(uint64_t);
}

static int event_fd_ready(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return poll(&pfd, 1, timeout_ms) > 0;
}

static unsigned event_count = 5000;

static void event_opt(int opt, const char *arg)
{
    event_count = atoi(arg); /* -n COUNT */
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 64, .opt_cb = event_opt};
    unsigned i, received = 0, spurious = 0, missed = 0;
    uct_iface_attr_t attr;
    ucs_status_t status;
    uint64_t data = 0;
    uct_ep_h ep, back;
    unsigned progress;
    int ret, fd;
    ssize_t len;

    ret = qpx_uct_loopback_open(argc, argv, "n:", &lb);
    if (ret != 0) {
        return ret;
    }
    worker = lb.worker;
    if ((uct_iface_query(lb.recv_iface, &attr) != UCS_OK) ||
        !(attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV) ||
        (uct_iface_event_fd_get(lb.recv_iface, &fd) != UCS_OK)) {
        printf("SKIP: %s offers no receive events\n", lb.tl);
        return 77;
    }
    uct_iface_set_am_handler(lb.recv_iface, EVENT_AM_ID, event_am_cb,
                             &received, 0);
    if (qpx_uct_connect_pair(lb.send_iface, lb.recv_iface, &ep, &back)) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }

    for (i = 0; i < event_count; ++i) {
        /* Nothing left to do, armed */
        do {
            progress = uct_worker_progress(worker);
            status   = uct_iface_event_arm(lb.recv_iface, UCT_EVENT_RECV);
        } while ((status == UCS_ERR_BUSY) || (progress != 0));
        if (status != UCS_OK) {
            qpx_uct_report(0, "uct_iface_event_arm: %s",
                           ucs_status_string(status));
            break;
        }
        spurious += event_fd_ready(fd, 0);

        ++data;
        while ((len = uct_ep_am_bcopy(ep, EVENT_AM_ID, event_pack, &data,
                                      0)) == UCS_ERR_NO_RESOURCE) {
            uct_iface_progress(lb.send_iface); /* the sender's side only */
        }
        if (len < 0) {
            qpx_uct_report(0, "am_bcopy: %s",
                           ucs_status_string((ucs_status_t)len));
            break;
        }
        missed += !event_fd_ready(fd, 10000);
        while (received < i + 1) {
            uct_worker_progress(worker);
        }
    }

    qpx_uct_report(i == event_count, "%u of %u messages received", received,
                   event_count);
    qpx_uct_report(spurious < ucs_max(20u, event_count / 100),
                   "spurious events after arming: %u of %u (below 1%%)",
                   spurious, event_count);
    qpx_uct_report(missed == 0, "events missed: %u", missed);

    uct_ep_destroy(ep);
    if (back != NULL) {
        uct_ep_destroy(back);
    }
    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
