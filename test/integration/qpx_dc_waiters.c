/*
 * qpx_dc's line of endpoints waiting for a DCI, through the public UCT API,
 * in one process (run with UCX_QPX_DC_NUM_DCI=1, policy dcs):
 *
 *  1. endpoint A's put takes the one DCI;
 *  2. uct_ep_check of endpoint B finds no DCI for its probe and queues
 *     nothing (UCS_ERR_NO_RESOURCE, no pending request);
 *  3. once A's put completed, the DCI is back, and endpoint C's put must
 *     take it at once. B is in no line: only endpoints with a queued
 *     request wait. (A refused probe used to count B as a waiter for good,
 *     so that every other endpoint was refused once, through UCP's pending
 *     queue, each time it took a DCI.)
 *  4. and the line itself: with A's put holding the DCI again, C's put is
 *     refused and queued (pending_add); D's direct put, after the DCI is
 *     back, is refused while C waits, and C's request gets the DCI.
 *  5. an owner that keeps sending (A puts before every progress) gives the
 *     DCI up to C's queued request: its requests are signalled while
 *     others wait, so the DCI is known idle once A's last one completed.
 *
 * Every put is checked at the target. Prints PASS/FAIL lines and
 * "N passed, N failed".
 */
#include "qpx_uct_open.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NEPS 4

static const char *dev_name = "softverbs0:1";

typedef struct {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
} node_t;

typedef struct {
    uct_pending_req_t super;
    uct_ep_h          ep;
    uint64_t          *value;
    uint64_t          raddr;
    uct_rkey_t        rkey;
    int               done;
} put_req_t;


static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(node_t *a, node_t *b)
{
    uct_worker_progress(a->worker);
    uct_worker_progress(b->worker);
}

/* Progress until ep's flush completes (bounded): 1 when it did */
static int ep_flush(node_t *hub, node_t *peer, uct_ep_h ep)
{
    double end = now_s() + 10;
    ucs_status_t status;

    while (((status = uct_ep_flush(ep, 0, NULL)) != UCS_OK) &&
           (now_s() < end)) {
        progress(hub, peer);
    }
    return status == UCS_OK;
}

/* A puts value_a (taking the DCI); C's put of req->value is refused and
 * queued as req. 1 when all three went so */
static int a_holds_c_queued(uct_ep_h a, uint64_t *value_a, uint64_t raddr_a,
                            put_req_t *req)
{
    ucs_status_t status;

    status    = uct_ep_put_short(a, value_a, 8, raddr_a, req->rkey);
    req->done = 0;
    return (status == UCS_OK) &&
           (uct_ep_put_short(req->ep, req->value, 8, req->raddr,
                             req->rkey) == UCS_ERR_NO_RESOURCE) &&
           (uct_ep_pending_add(req->ep, &req->super, 0) == UCS_OK);
}

static ucs_status_t put_req_cb(uct_pending_req_t *self)
{
    put_req_t *req = ucs_container_of(self, put_req_t, super);
    ucs_status_t status;

    status = uct_ep_put_short(req->ep, req->value, sizeof(*req->value),
                              req->raddr, req->rkey);
    req->done = (status == UCS_OK);
    return status;
}

int main(int argc, char **argv)
{
    uint64_t values[NEPS] = {0x1111, 0x2222, 0x3333, 0x4444};
    uint8_t dev_addr[64], iface_addr[64], rkey_buf[256];
    volatile uint64_t *buf;
    uct_rkey_bundle_t rkey;
    uct_ep_h ep[NEPS];
    uct_ep_params_t p;
    ucs_status_t status;
    uct_component_h comp;
    uct_mem_h memh;
    node_t hub, peer;
    put_req_t req;
    uct_md_h md;
    double end;
    int i, ret;

    if (argc > 1) {
        dev_name = argv[1];
    }
    ret = qpx_uct_md_open("qpx_dc", dev_name, &comp, &md);
    if (ret != 0) {
        printf("SKIP: qpx_dc not offered on %s\n", dev_name);
        return 77;
    }
    if ((qpx_uct_iface_open(md, "qpx_dc", dev_name, NULL, NULL, &hub.async,
                            &hub.worker, &hub.iface) != 0) ||
        (qpx_uct_iface_open(md, "qpx_dc", dev_name, NULL, NULL, &peer.async,
                            &peer.worker, &peer.iface) != 0) ||
        posix_memalign((void**)&buf, 4096, 4096) ||
        (uct_md_mem_reg(md, (void*)buf, 4096, UCT_MD_MEM_ACCESS_ALL,
                        &memh) != UCS_OK) ||
        (uct_md_mkey_pack(md, memh, rkey_buf) != UCS_OK) ||
        (uct_rkey_unpack(comp, rkey_buf, &rkey) != UCS_OK) ||
        (uct_iface_get_device_address(peer.iface,
                                      (uct_device_addr_t*)dev_addr) !=
         UCS_OK) ||
        (uct_iface_get_address(peer.iface,
                               (uct_iface_addr_t*)iface_addr) != UCS_OK)) {
        printf("FAIL: setup\n0 passed, 1 failed\n");
        return 1;
    }
    memset((void*)buf, 0, 4096);
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = hub.iface;
    p.dev_addr   = (uct_device_addr_t*)dev_addr;
    p.iface_addr = (uct_iface_addr_t*)iface_addr;
    for (i = 0; i < NEPS; ++i) {
        if (uct_ep_create(&p, &ep[i]) != UCS_OK) {
            printf("FAIL: endpoint %d\n0 passed, 1 failed\n", i);
            return 1;
        }
    }

    /* 1, 2: A holds the DCI, B's probe finds none */
    status = uct_ep_put_short(ep[0], &values[0], 8, (uintptr_t)&buf[0],
                              rkey.rkey);
    qpx_uct_report(status == UCS_OK, "A's put takes the one DCI (%s)",
           ucs_status_string(status));
    status = uct_ep_check(ep[1], 0, NULL);
    qpx_uct_report(status == UCS_ERR_NO_RESOURCE,
           "B's uct_ep_check finds no DCI for its probe (%s)",
           ucs_status_string(status));

    /* 3: the DCI back, C takes it at once */
    qpx_uct_report(ep_flush(&hub, &peer, ep[0]) && (buf[0] == values[0]),
           "A's put completed, value 0x%lx at the target",
           (unsigned long)buf[0]);
    status = uct_ep_put_short(ep[2], &values[2], 8, (uintptr_t)&buf[2],
                              rkey.rkey);
    qpx_uct_report(status == UCS_OK,
           "C's put takes the free DCI at its first try, B waits in no line "
           "(%s)", ucs_status_string(status));
    qpx_uct_report(ep_flush(&hub, &peer, ep[2]) && (buf[2] == values[2]),
           "C's put completed, value 0x%lx at the target",
           (unsigned long)buf[2]);

    /* 4: the line. A holds the DCI, C's refused put is queued */
    values[0] = 0x5555;
    values[2] = 0x6666;
    req.super.func = put_req_cb;
    req.ep         = ep[2];
    req.value      = &values[2];
    req.raddr      = (uintptr_t)&buf[2];
    req.rkey       = rkey.rkey;
    qpx_uct_report(a_holds_c_queued(ep[0], &values[0], (uintptr_t)&buf[0],
                                    &req),
           "A holds the DCI again; C's put is refused and queued");
    /* D's direct puts until C's request ran: none may pass C */
    end = now_s() + 10;
    ret = 0;
    while (!req.done && (now_s() < end)) {
        if (uct_ep_put_short(ep[3], &values[3], 8, (uintptr_t)&buf[3],
                             rkey.rkey) == UCS_OK) {
            ret = 1;
            break;
        }
        progress(&hub, &peer);
    }
    qpx_uct_report(req.done && !ret,
           "C's queued request got the DCI before D's direct put");
    qpx_uct_report(ep_flush(&hub, &peer, ep[2]) && (buf[2] == values[2]) &&
           (buf[0] == values[0]),
           "C's queued put completed, 0x%lx at the target (A's 0x%lx)",
           (unsigned long)buf[2], (unsigned long)buf[0]);

    /* 5: an owner that keeps sending gives the DCI up to a waiter. A
     * holds it and puts again before every progress; C's request waits */
    values[0] = 0x7000;
    values[2] = 0x7777;
    qpx_uct_report(a_holds_c_queued(ep[0], &values[0], (uintptr_t)&buf[0],
                                    &req),
           "A holds the DCI; C's put is refused and queued");
    ++values[0]; /* the next put's value: the last sent is values[0] - 1 */
    end = now_s() + 10;
    ret = 0;
    while (!req.done && (now_s() < end)) {
        if (uct_ep_put_short(ep[0], &values[0], 8, (uintptr_t)&buf[0],
                             rkey.rkey) == UCS_OK) {
            ++ret;
            ++values[0];
        }
        progress(&hub, &peer);
    }
    --values[0];
    /* A DCI is known idle only after its last request's completion: an
     * owner posting unsignalled requests all along kept it (the waiter
     * starved; 4 ranks of MPI_Accumulate on one DCI, 5 to 100 s) */
    qpx_uct_report(req.done, "C's queued request got the DCI while A kept "
                   "sending (%d puts of A before it)", ret);
    qpx_uct_report(ep_flush(&hub, &peer, ep[2]) && ep_flush(&hub, &peer, ep[0]) &&
           (buf[2] == values[2]) && (buf[0] == values[0]),
           "C's put 0x%lx and A's last 0x%lx at the target",
           (unsigned long)buf[2], (unsigned long)buf[0]);

    for (i = 0; i < NEPS; ++i) {
        uct_ep_destroy(ep[i]);
    }
    uct_rkey_release(comp, &rkey);
    uct_md_mem_dereg(md, memh);
    uct_iface_close(hub.iface);
    uct_iface_close(peer.iface);
    uct_worker_destroy(hub.worker);
    uct_worker_destroy(peer.worker);
    ucs_async_context_destroy(hub.async);
    ucs_async_context_destroy(peer.async);
    uct_md_close(md);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
