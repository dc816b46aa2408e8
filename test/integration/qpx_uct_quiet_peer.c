/*
 * One-sided operations to a peer that never calls progress (a SHMEM PE
 * busy computing, UCX's gtest uct_fence_test), one process, one transport:
 *   qpx_uct_quiet_peer -x TL [-d DEV] [-n ITERATIONS]
 * The target interface is on a worker nobody progresses. Each iteration,
 * as uct_fence_test does: an atomic add posted, a fence, an atomic
 * fetch-add of 0 with a completion, then the sender's interface flushed;
 * the fetched value must be the target's value plus the add, and no
 * operation may be refused (UCS_ERR_NO_RESOURCE: the queues are nearly
 * empty, so a refusal means the endpoint held one-sided operations for its
 * peer's sake). Then a put of a pattern and a get of it back, checked.
 * ITERATIONS (default 1000) must exceed what promotes a hybrid endpoint
 * (UCX_QPX_PROMOTE_THRESH, 64): its promotion request is never answered.
 * Then, on an endpoint of its own, QUIET_AMS active messages to the quiet
 * peer, which it cannot have answered any promotion for: none may be
 * refused either (a hybrid endpoint sends on its cold path while its
 * promotion waits; it held them for SWITCH_TIMEOUT once), and the time the
 * sends took is printed; the peer then progresses and must receive every
 * one, in order, payload checked.
 * Prints "N passed, N failed"; exit 0 when none failed, 77 without TL or
 * without 64-bit atomics.
 */
#include "qpx_uct_open.h"

#include <alloca.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUIET_SPINS 10000000
#define QUIET_AMS   500      /* below the target's receive queue */
#define QUIET_AM_ID 5

static uct_worker_h quiet_worker;

static int quiet_flush(uct_iface_h iface);

typedef struct quiet_rx {
    unsigned count;          /* received */
    unsigned bad;            /* out of order or wrong payload */
} quiet_rx_t;

static ucs_status_t quiet_am_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    quiet_rx_t *rx = arg;
    uint64_t seq, val;

    if (length != 2 * sizeof(uint64_t)) {
        ++rx->bad;
        return UCS_OK;
    }
    memcpy(&seq, data, sizeof(seq));
    memcpy(&val, (uint8_t*)data + sizeof(seq), sizeof(val));
    rx->bad += (seq != rx->count) || (val != seq * 7 + 1);
    ++rx->count;
    return UCS_OK;
}

static uint64_t quiet_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

/* QUIET_AMS active messages on a new endpoint of send_iface to the quiet
 * interface t_iface (at its addresses), then t_worker progressed until
 * they are in */
static void quiet_am(qpx_uct_loopback_t *lb, uct_iface_h t_iface,
                     uct_worker_h t_worker, uint8_t *dev_addr,
                     uint8_t *iface_addr)
{
    quiet_rx_t rx = {0, 0};
    unsigned i, refused = 0, spins;
    uint64_t start, val;
    ucs_status_t status;
    uct_ep_params_t p;
    uct_ep_h ep;

    if (!(lb->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) ||
        (lb->attr.cap.am.max_short < 2 * sizeof(uint64_t)) ||
        (uct_iface_set_am_handler(t_iface, QUIET_AM_ID, quiet_am_cb, &rx,
                                  0) != UCS_OK)) {
        qpx_uct_report(0, "%s: no am_short of 16 bytes, or no handler",
                       lb->tl);
        return;
    }
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = lb->send_iface;
    p.dev_addr   = (uct_device_addr_t*)dev_addr;
    p.iface_addr = (uct_iface_addr_t*)iface_addr;
    if (uct_ep_create(&p, &ep) != UCS_OK) {
        qpx_uct_report(0, "%s: an endpoint for active messages", lb->tl);
        return;
    }

    start = quiet_now_us();
    for (i = 0; i < QUIET_AMS; ) {
        val    = (uint64_t)i * 7 + 1;
        status = uct_ep_am_short(ep, QUIET_AM_ID, i, &val, sizeof(val));
        if (status == UCS_OK) {
            ++i;
        } else if (status == UCS_ERR_NO_RESOURCE) {
            ++refused;
        } else {
            break;
        }
        uct_worker_progress(quiet_worker);
    }
    qpx_uct_report((i == QUIET_AMS) && (refused == 0), "%s: %u active "
                   "messages to a peer that never progresses: %u refused, "
                   "%lu us (%s)", lb->tl, i, refused,
                   (unsigned long)(quiet_now_us() - start),
                   ucs_status_string(status));
    if (quiet_flush(lb->send_iface)) {
        qpx_uct_report(0, "%s: flush after the active messages", lb->tl);
    }

    /* The peer wakes up: every message, in order */
    for (spins = 0; (rx.count < i) && (spins < QUIET_SPINS); ++spins) {
        uct_worker_progress(t_worker);
        uct_worker_progress(quiet_worker);
    }
    qpx_uct_report((rx.count == i) && (rx.bad == 0), "%s: the peer, "
                   "progressing at last, received %u of %u active messages, "
                   "%u out of order or wrong", lb->tl, rx.count, i, rx.bad);
    uct_ep_destroy(ep);
    (void)uct_iface_set_am_handler(t_iface, QUIET_AM_ID, NULL, NULL, 0);
}

static void quiet_comp_cb(uct_completion_t *self)
{
}

/* Flush the sender's interface (only its worker progresses) */
static int quiet_flush(uct_iface_h iface)
{
    ucs_status_t status;
    int i;

    for (i = 0; i < QUIET_SPINS; ++i) {
        status = uct_iface_flush(iface, 0, NULL);
        if (status == UCS_OK) {
            return 0;
        }
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return -1;
        }
        uct_worker_progress(quiet_worker);
    }
    return -1;
}

int main(int argc, char **argv)
{
    qpx_uct_loopback_t lb = {.buf_size = 4096};
    unsigned iterations   = 1000;
    uct_component_h component;
    uct_md_h md2;
    size_t put_len;
    unsigned i, refused = 0, wrong = 0, first_bad = 0;
    uint8_t dev_addr[256], iface_addr[256];
    uint64_t *target, remote, local, result;
    ucs_async_context_t *t_async;
    uct_worker_h t_worker;
    uct_iface_h t_iface;
    uct_rkey_bundle_t rkey;
    uct_completion_t comp;
    uct_ep_params_t p;
    ucs_status_t status;
    void *rkey_buf;
    uct_ep_h ep;
    uint8_t *local_buf;
    int ret, opt;

    for (opt = 1; opt + 1 < argc; ++opt) {
        if (!strcmp(argv[opt], "-n")) {
            iterations = (unsigned)atoi(argv[opt + 1]);
            memmove(&argv[opt], &argv[opt + 2],
                    (argc - opt - 1) * sizeof(*argv));
            argc -= 2;
            break;
        }
    }
    ret = qpx_uct_loopback_open(argc, argv, "", &lb);
    if (ret != 0) {
        return ret;
    }
    if (!(lb.attr.cap.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_ADD)) ||
        !(lb.attr.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD)) ||
        !(lb.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        printf("SKIP: %s has no 64-bit atomic add, or does not connect to "
               "an interface\n", lb.tl);
        return 77;
    }
    quiet_worker = lb.worker;
    /* The component, for the rkey (a second md handle of the same device) */
    if (qpx_uct_md_open(lb.tl, lb.dev, &component, &md2) != 0) {
        qpx_uct_report(0, "%s: the component", lb.tl);
        goto out;
    }
    uct_md_close(md2);

    /* The quiet target: an interface of its own worker, never progressed */
    if (qpx_uct_iface_open(lb.md, lb.tl, lb.dev, NULL, NULL, &t_async,
                           &t_worker, &t_iface) ||
        uct_iface_get_device_address(t_iface, (uct_device_addr_t*)dev_addr) ||
        uct_iface_get_address(t_iface, (uct_iface_addr_t*)iface_addr)) {
        qpx_uct_report(0, "%s: the target interface", lb.tl);
        goto out;
    }
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = lb.send_iface;
    p.dev_addr   = (uct_device_addr_t*)dev_addr;
    p.iface_addr = (uct_iface_addr_t*)iface_addr;
    rkey_buf     = alloca(256);
    if (uct_ep_create(&p, &ep) ||
        uct_md_mkey_pack(lb.md, lb.memh, rkey_buf) ||
        uct_rkey_unpack(component, rkey_buf, &rkey)) {
        qpx_uct_report(0, "%s: endpoint or rkey", lb.tl);
        goto out_iface;
    }

    /* lb.buf: the first word is the target of the atomics, the second
     * half of the page the put's destination; the source is local_buf */
    target    = (uint64_t*)lb.buf;
    local_buf = (uint8_t*)lb.buf + 1024;
    for (i = 0; i < iterations; ++i) {
        remote  = ((uint64_t)rand() << 32) | (uint64_t)rand();
        local   = ((uint64_t)rand() << 32) | (uint64_t)rand();
        *target = remote;
        result  = 0;
        status  = uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, local,
                                       (uintptr_t)target, rkey.rkey);
        refused += (status == UCS_ERR_NO_RESOURCE);
        uct_ep_fence(ep, 0);
        comp.func   = quiet_comp_cb;
        comp.count  = 1;
        comp.status = UCS_OK;
        status = uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 0, &result,
                                       (uintptr_t)target, rkey.rkey, &comp);
        refused += (status == UCS_ERR_NO_RESOURCE);
        if (quiet_flush(lb.send_iface)) {
            qpx_uct_report(0, "%s: iteration %u: flush failed", lb.tl, i);
            break;
        }
        if (result != remote + local) {
            first_bad = first_bad ? first_bad : i + 1;
            ++wrong;
        }
    }
    qpx_uct_report(refused == 0, "%s: %u iterations of add, fence, "
                   "fetch-add to a peer that never progresses: %u "
                   "operations refused", lb.tl, i, refused);
    qpx_uct_report(wrong == 0, "%s: %u fetched values wrong (first at "
                   "iteration %u)", lb.tl, wrong, first_bad);

    /* put a pattern, get it back: the data a quiet peer holds */
    put_len = (lb.attr.cap.put.max_short < 256) ? lb.attr.cap.put.max_short :
              256;
    for (i = 0; i < put_len; ++i) {
        local_buf[i] = (uint8_t)(i * 7 + 3);
    }
    status = uct_ep_put_short(ep, local_buf, put_len,
                              (uintptr_t)lb.buf + 2048, rkey.rkey);
    if ((status == UCS_OK) && !quiet_flush(lb.send_iface)) {
        qpx_uct_report(!memcmp((uint8_t*)lb.buf + 2048, local_buf, put_len),
                       "%s: put_short of %zu bytes to the quiet peer: data "
                       "checked", lb.tl, put_len);
    } else {
        qpx_uct_report(0, "%s: put_short to the quiet peer: %s", lb.tl,
                       ucs_status_string(status));
    }

    uct_rkey_release(component, &rkey);
    uct_ep_destroy(ep);
    quiet_am(&lb, t_iface, t_worker, dev_addr, iface_addr);
out_iface:
    uct_iface_close(t_iface);
    uct_worker_destroy(t_worker);
    ucs_async_context_destroy(t_async);
out:
    qpx_uct_loopback_close(&lb);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
