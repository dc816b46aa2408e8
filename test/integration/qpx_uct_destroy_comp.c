/*
 * uct_ep_destroy completes what is outstanding (UCX's gtest
 * test_uct_ep.destroy_entity_after_send), one process, two interfaces of
 * one transport on one worker:
 *   qpx_uct_destroy_comp -x TL [-d DEV]
 * Zero-copy active messages of the largest size until the send queue is
 * full, then the endpoint is destroyed without a flush: by the time
 * uct_ep_destroy returns, every completion has been called (with
 * UCS_ERR_CANCELED or, for what finished, UCS_OK), and none is called
 * after it, however long the worker progresses. Ten rounds, a new
 * endpoint each, then five that pause 50 ms before the destroy without
 * calling progress (qpx_ud's async progress acknowledges sends meanwhile,
 * and their completions wait for the next progress: the destroy must run
 * them). Prints "N passed, N failed"; exit 0 when none failed, 77 without
 * TL.
 */
#include "qpx_uct_open.h"

#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DESTROY_AM_ID 3
#define DESTROY_BUF   (256 * 1024)

typedef struct {
    uct_completion_t super;
    int              destroyed;  /* the endpoint is gone */
    int              late;       /* calls after that */
    int              canceled;
} destroy_comp_t;

static void destroy_comp_cb(uct_completion_t *self)
{
    destroy_comp_t *comp = ucs_container_of(self, destroy_comp_t, super);

    comp->late     += comp->destroyed;
    comp->canceled += (self->status == UCS_ERR_CANCELED);
}

static ucs_status_t destroy_am_cb(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    return UCS_OK;
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = DESTROY_BUF};
    destroy_comp_t comp;
    ucs_status_t status;
    uct_ep_h ep, back;
    int ret, round, posted, i;
    uct_iov_t iov;

    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    uct_iface_set_am_handler(lb.recv_iface, DESTROY_AM_ID, destroy_am_cb,
                             NULL, 0);
    if (!(lb.attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY)) {
        printf("SKIP: %s has no am_zcopy\n", lb.tl);
        return 77;
    }

    iov.buffer = lb.buf;
    iov.length = ucs_min(lb.attr.cap.am.max_zcopy, DESTROY_BUF);
    iov.memh   = lb.memh;
    iov.stride = 0;
    iov.count  = 1;
    for (round = 0; round < 15; ++round) {
        if (qpx_uct_connect_pair(lb.send_iface, lb.recv_iface, &ep, &back)) {
            qpx_uct_report(0, "round %d: connect", round);
            break;
        }
        memset(&comp, 0, sizeof(comp));
        comp.super.func   = destroy_comp_cb;
        comp.super.status = UCS_OK;
        for (posted = 0, i = 0; (posted < 10000) && (i < 1000000); ++i) {
            ++comp.super.count;
            status = uct_ep_am_zcopy(ep, DESTROY_AM_ID, NULL, 0, &iov, 1, 0,
                                     &comp.super);
            if (status != UCS_INPROGRESS) {
                --comp.super.count;
            }
            if ((status == UCS_INPROGRESS) || (status == UCS_OK)) {
                ++posted;
            } else if ((status == UCS_ERR_NO_RESOURCE) && (posted == 0)) {
                uct_worker_progress(lb.worker); /* still connecting */
            } else {
                break; /* the queue is full */
            }
        }
        if (round >= 10) {
            usleep(50000); /* no progress: the async thread's turn */
        }
        uct_ep_destroy(ep); /* no flush */
        comp.destroyed = 1;
        qpx_uct_report(comp.super.count == 0,
                       "round %d: %d posted, %d outstanding after "
                       "uct_ep_destroy (%d canceled)", round, posted,
                       comp.super.count, comp.canceled);
        for (i = 0; i < 200000; ++i) {
            uct_worker_progress(lb.worker);
        }
        qpx_uct_report(comp.late == 0, "round %d: %d completions called "
                       "after uct_ep_destroy", round, comp.late);
        if (back != NULL) {
            uct_ep_destroy(back);
        }
    }

    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
