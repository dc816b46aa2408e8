/*
 * What an endpoint says about its peer (UCX's gtest test_uct_ep.is_connected
 * and, from UCX 1.22, test_uct_ep_check_async), one process, one
 * transport:
 *   qpx_uct_ep_peer -x TL [-d DEV]
 * Interfaces S and R on one worker, E on another; S connects to R and E to
 * R, once through the interfaces' addresses and once endpoint to endpoint,
 * as far as TL offers each. Then:
 *  - uct_ep_is_connected (UCX 1.19+; where the build's UCX lacks it, these
 *    cases are not compiled and not counted): S's endpoint is connected to
 *    R (its device, interface and, endpoint to endpoint, the endpoint of R
 *    it was connected to), not to E, and not to R's other endpoint;
 *  - uct_ep_check with a completion, as UCX 1.22 calls it: either UCS_OK
 *    with the completion not called, or UCS_INPROGRESS and the completion
 *    called once, with UCS_OK (the peer is alive), while both workers
 *    progress; and a check of an endpoint still connecting.
 * Prints "N passed, N failed"; exit 0 when none failed, 77 without TL.
 */
#include "qpx_uct_open.h"

#include <uct/api/version.h>
/* uct_v2.h (not installed by UCX: the release's source tree) */
#if UCT_API >= UCT_VERSION(1, 19)
#  include <uct/api/v2/uct_v2.h>
#  define PEER_HAVE_IS_CONNECTED 1
#else
#  define PEER_HAVE_IS_CONNECTED 0
#endif

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PEER_ADDR_MAX 256
#define PEER_SPINS    2000000

typedef struct {
    uint8_t dev[PEER_ADDR_MAX];
    uint8_t iface[PEER_ADDR_MAX];
    uint8_t ep[PEER_ADDR_MAX];
    int     has_ep;
} peer_addr_t;

typedef struct {
    uct_completion_t super;
    int              calls;
} peer_comp_t;

static uct_worker_h peer_workers[2];

static void peer_comp_cb(uct_completion_t *self)
{
    ucs_container_of(self, peer_comp_t, super)->calls++;
}

static void peer_progress(void)
{
    uct_worker_progress(peer_workers[0]);
    uct_worker_progress(peer_workers[1]);
}

/* The addresses of iface (and of its endpoint ep, when not NULL) */
static int peer_addr_get(uct_iface_h iface, uct_ep_h ep, peer_addr_t *addr)
{
    uct_iface_attr_t attr;

    memset(addr, 0, sizeof(*addr));
    if (uct_iface_query(iface, &attr) ||
        uct_iface_get_device_address(iface, (uct_device_addr_t*)addr->dev) ||
        ((attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) &&
         uct_iface_get_address(iface, (uct_iface_addr_t*)addr->iface))) {
        return -1;
    }
    addr->has_ep = (ep != NULL);
    return (ep != NULL) ? (int)uct_ep_get_address(ep,
                                                  (uct_ep_addr_t*)addr->ep) :
                          0;
}

/* a's endpoint to b: through b's interface address (by_ep 0), or endpoint
 * to endpoint, with b's endpoint back to a in *ba_p */
static int peer_connect(uct_iface_h a, uct_iface_h b, int by_ep,
                        uct_ep_h *ab_p, uct_ep_h *ba_p)
{
    peer_addr_t addr_a, addr_b;
    uct_ep_params_t p;

    *ba_p = NULL;
    memset(&p, 0, sizeof(p));
    if (!by_ep) {
        if (peer_addr_get(b, NULL, &addr_b)) {
            return -1;
        }
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                       UCT_EP_PARAM_FIELD_DEV_ADDR |
                       UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface      = a;
        p.dev_addr   = (uct_device_addr_t*)addr_b.dev;
        p.iface_addr = (uct_iface_addr_t*)addr_b.iface;
        return uct_ep_create(&p, ab_p) ? -1 : 0;
    }

    p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    p.iface      = a;
    if (uct_ep_create(&p, ab_p)) {
        return -1;
    }
    p.iface = b;
    if (uct_ep_create(&p, ba_p) || peer_addr_get(a, *ab_p, &addr_a) ||
        peer_addr_get(b, *ba_p, &addr_b) ||
        uct_ep_connect_to_ep(*ba_p, (uct_device_addr_t*)addr_a.dev,
                             (uct_ep_addr_t*)addr_a.ep)) {
        return -1;
    }
    return uct_ep_connect_to_ep(*ab_p, (uct_device_addr_t*)addr_b.dev,
                                (uct_ep_addr_t*)addr_b.ep) ? -1 : 0;
}

/* Until ep's operations so far are complete (connected, for the datagram
 * transports) */
static int peer_flush(uct_ep_h ep)
{
    ucs_status_t status;
    int i;

    for (i = 0; i < PEER_SPINS; ++i) {
        status = uct_ep_flush(ep, 0, NULL);
        if (status == UCS_OK) {
            return 0;
        }
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return -1;
        }
        peer_progress();
    }
    return -1;
}

#if PEER_HAVE_IS_CONNECTED
static int peer_is_connected(uct_ep_h ep, const peer_addr_t *addr)
{
    uct_ep_is_connected_params_t params;

    params.field_mask  = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                         UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    params.device_addr = (const uct_device_addr_t*)addr->dev;
    params.iface_addr  = (const uct_iface_addr_t*)addr->iface;
    params.ep_addr     = NULL;
    if (addr->has_ep) {
        params.field_mask |= UCT_EP_IS_CONNECTED_FIELD_EP_ADDR;
        params.ep_addr     = (const uct_ep_addr_t*)addr->ep;
    }
    return uct_ep_is_connected(ep, &params);
}
#endif

/* uct_ep_check(ep, 0, comp): OK untouched, or INPROGRESS and one call with
 * UCS_OK */
static void peer_check(uct_ep_h ep, const char *mode, const char *when)
{
    peer_comp_t comp = {.super = {.func = peer_comp_cb, .count = 1,
                                  .status = UCS_OK}};
    ucs_status_t status;
    int i;

    status = uct_ep_check(ep, 0, &comp.super);
    if (status == UCS_OK) {
        qpx_uct_report(comp.calls == 0, "%s: ep_check %s: UCS_OK, "
                       "completion called %d times", mode, when, comp.calls);
        return;
    }
    if (status != UCS_INPROGRESS) {
        qpx_uct_report(0, "%s: ep_check %s: %s", mode, when,
                       ucs_status_string(status));
        return;
    }
    for (i = 0; (i < PEER_SPINS) && (comp.calls == 0); ++i) {
        peer_progress();
    }
    qpx_uct_report((comp.calls == 1) && (comp.super.status == UCS_OK),
                   "%s: ep_check %s: in progress, completion called %d "
                   "times, %s", mode, when, comp.calls,
                   ucs_status_string(comp.super.status));
}

static void peer_run(qpx_uct_loopback_t *lb, uct_iface_h e_iface, int by_ep)
{
    const char *mode = by_ep ? "to ep" : "to iface";
    uct_ep_h s_ep, r_ep0, e_ep, r_ep1;
    peer_addr_t r_addr, e_addr, r1_addr;

    if (peer_connect(lb->send_iface, lb->recv_iface, by_ep, &s_ep, &r_ep0)) {
        qpx_uct_report(0, "%s: S to R: connect", mode);
        return;
    }
    peer_check(s_ep, mode, "while connecting");
    if (peer_connect(e_iface, lb->recv_iface, by_ep, &e_ep, &r_ep1) ||
        peer_flush(s_ep) || peer_flush(e_ep) ||
        peer_addr_get(lb->recv_iface, r_ep0, &r_addr) ||
        peer_addr_get(e_iface, by_ep ? e_ep : NULL, &e_addr) ||
        peer_addr_get(lb->recv_iface, r_ep1, &r1_addr)) {
        qpx_uct_report(0, "%s: E to R: connect, or flush", mode);
        return;
    }

#if PEER_HAVE_IS_CONNECTED
    qpx_uct_report(peer_is_connected(s_ep, &r_addr),
                   "%s: S's ep is connected to R", mode);
    qpx_uct_report(!peer_is_connected(s_ep, &e_addr),
                   "%s: S's ep is not connected to E", mode);
    if (by_ep) {
        qpx_uct_report(!peer_is_connected(s_ep, &r1_addr),
                       "%s: S's ep is not connected to R's other ep", mode);
        qpx_uct_report(peer_is_connected(e_ep, &r1_addr) &&
                       !peer_is_connected(e_ep, &r_addr),
                       "%s: E's ep is connected to R's other ep, not to the "
                       "first", mode);
    }
#endif
    peer_check(s_ep, mode, "when idle");
    peer_check(s_ep, mode, "again");

    uct_ep_destroy(e_ep);
    uct_ep_destroy(s_ep);
    if (r_ep1 != NULL) {
        uct_ep_destroy(r_ep1);
    }
    if (r_ep0 != NULL) {
        uct_ep_destroy(r_ep0);
    }
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 4096};
    ucs_async_context_t *e_async;
    uct_iface_h e_iface;
    int ret;

    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    if (qpx_uct_iface_open(lb.md, lb.tl, lb.dev, NULL, NULL, &e_async,
                           &peer_workers[1], &e_iface)) {
        qpx_uct_report(0, "%s: a third interface does not open", lb.tl);
    } else {
        peer_workers[0] = lb.worker;
        if (lb.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) {
            peer_run(&lb, e_iface, 0);
        }
        if (lb.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) {
            peer_run(&lb, e_iface, 1);
        }
        uct_iface_close(e_iface);
        uct_worker_destroy(peer_workers[1]);
        ucs_async_context_destroy(e_async);
    }

    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
