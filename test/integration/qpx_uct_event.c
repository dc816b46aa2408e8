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

int main(int argc, char **argv)
{
    const char *tl = NULL, *dev = "softverbs0:1";
    unsigned i, count = 5000, received = 0, spurious = 0, missed = 0;
    uct_iface_h send_iface, recv_iface;
    uct_iface_params_t params;
    uct_iface_config_t *config;
    ucs_async_context_t *async;
    uct_iface_attr_t attr;
    uct_component_h comp;
    ucs_status_t status;
    uint64_t data = 0;
    uct_ep_h ep, back;
    unsigned progress;
    uct_md_h md;
    int opt, ret, fd;
    ssize_t len;

    while ((opt = getopt(argc, argv, "x:d:n:")) != -1) {
        if (opt == 'x') {
            tl = optarg;
        } else if (opt == 'd') {
            dev = optarg;
        } else if (opt == 'n') {
            count = atoi(optarg);
        }
    }
    if (tl == NULL) {
        fprintf(stderr, "usage: %s -x TL [-d DEV] [-n COUNT]\n", argv[0]);
        return 2;
    }
    ret = qpx_uct_md_open(tl, dev, &comp, &md);
    if (ret != 0) {
        return ret;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl;
    params.mode.device.dev_name = dev;
    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                  &async) != UCS_OK) ||
        (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK) ||
        (uct_md_iface_config_read(md, tl, NULL, NULL, &config) != UCS_OK) ||
        (uct_iface_open(md, worker, &params, config, &send_iface) != UCS_OK) ||
        (uct_iface_open(md, worker, &params, config, &recv_iface) != UCS_OK) ||
        (uct_iface_query(recv_iface, &attr) != UCS_OK)) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    uct_config_release(config);
    if (!(attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_RECV) ||
        (uct_iface_event_fd_get(recv_iface, &fd) != UCS_OK)) {
        printf("SKIP: %s offers no receive events\n", tl);
        return 77;
    }
    uct_iface_progress_enable(send_iface, UCT_PROGRESS_SEND |
                                          UCT_PROGRESS_RECV);
    uct_iface_progress_enable(recv_iface, UCT_PROGRESS_SEND |
                                          UCT_PROGRESS_RECV);
    uct_iface_set_am_handler(recv_iface, EVENT_AM_ID, event_am_cb, &received,
                             0);
    if (qpx_uct_connect_pair(send_iface, recv_iface, &ep, &back)) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }

    for (i = 0; i < count; ++i) {
        /* Nothing left to do, armed */
        do {
            progress = uct_worker_progress(worker);
            status   = uct_iface_event_arm(recv_iface, UCT_EVENT_RECV);
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
            uct_iface_progress(send_iface); /* the sender's side only */
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

    qpx_uct_report(i == count, "%u of %u messages received", received,
                   count);
    qpx_uct_report(spurious < ucs_max(20u, count / 100),
                   "spurious events after arming: %u of %u (below 1%%)",
                   spurious, count);
    qpx_uct_report(missed == 0, "events missed: %u", missed);

    uct_ep_destroy(ep);
    if (back != NULL) {
        uct_ep_destroy(back);
    }
    uct_iface_close(recv_iface);
    uct_iface_close(send_iface);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
