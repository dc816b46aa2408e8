/*
 * Many endpoints flooding one interface: the sender opens NUM_EPS endpoints
 * to NUM_EPS endpoints of one receiver interface (one shared receive queue)
 * and sends active messages round-robin as fast as the transport accepts
 * them. Every message must arrive exactly once and in order per endpoint,
 * and no endpoint may fail: run it with a small receive queue and
 * RNR_RETRY_COUNT=0, where one receiver-not-ready is fatal (test/
 * integration/rc_flood.sh).
 *
 * Usage: qpx_uct_flood -x <tl> [-d <dev>] [-e <eps>] [-n <msgs per ep>]
 * Exit: 0 all delivered, 1 a failure, 77 the transport is not there.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include "qpx_uct_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>


#define AM_ID    13
#define MAX_EPS  64

typedef struct {
    uint8_t dev_addr[64];
    uint8_t ep_addr[MAX_EPS][128];
    uint8_t iface_addr[64];   /* a connect-to-iface transport's */
} addrs_t;

typedef struct {
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uct_ep_h            eps[MAX_EPS];
    int                 sock;
    int                 failed;      /* error handler calls */
    uint64_t            received;
    uint64_t            bad;         /* out of order or malformed */
    uint32_t            next[MAX_EPS];
} ctx_t;

static const char *tl_name, *dev_name = "softverbs0:1";
static unsigned num_eps = 16, num_msgs = 20000;


/* Payload: endpoint index (4 bytes), sequence number (4 bytes) */
static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    ctx_t *c = arg;
    uint32_t hdr[2];

    memcpy(hdr, data, sizeof(hdr));
    if ((length != sizeof(uint64_t)) || (hdr[0] >= num_eps) ||
        (hdr[1] != c->next[hdr[0]])) {
        ++c->bad;
    } else {
        ++c->next[hdr[0]];
    }
    ++c->received;
    return UCS_OK;
}


static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    ++((ctx_t*)arg)->failed;
    printf("INFO: error handler: %s\n", ucs_status_string(status));
    return UCS_OK;
}


static int ctx_open(ctx_t *c)
{
    uct_component_h comp;

    if (qpx_uct_md_open(tl_name, dev_name, &comp, &c->md) != 0) {
        fprintf(stderr, "no %s on %s\n", tl_name, dev_name);
        return -1;
    }
    if (qpx_uct_iface_open(c->md, tl_name, dev_name, err_cb, c, &c->async,
                           &c->worker, &c->iface) != 0) {
        return -1;
    }
    uct_iface_query(c->iface, &c->attr);
    uct_iface_set_am_handler(c->iface, AM_ID, am_cb, c, UCT_CB_FLAG_ASYNC);

    return 0;
}


/* num_eps endpoints to the peer: connected to its endpoints one to one
 * (CONNECT_TO_EP), or else all created to its interface (CONNECT_TO_IFACE,
 * e.g. qpx_dc: one receive queue, one DCT) */
static int ctx_connect(ctx_t *c)
{
    static addrs_t local, remote;
    int to_ep = !!(c->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    uct_ep_params_t ep_params;
    unsigned i;

    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = c->iface;
    if (uct_iface_get_device_address(c->iface,
                                     (uct_device_addr_t*)local.dev_addr) ||
        (!to_ep && (uct_iface_get_address(c->iface,
                                          (uct_iface_addr_t*)local.iface_addr)))) {
        return -1;
    }
    for (i = 0; to_ep && (i < num_eps); ++i) {
        if (uct_ep_create(&ep_params, &c->eps[i]) ||
            uct_ep_get_address(c->eps[i], (uct_ep_addr_t*)local.ep_addr[i])) {
            return -1;
        }
    }
    if (qpx_uct_xfer(c->sock, &local, sizeof(local), 1) ||
        qpx_uct_xfer(c->sock, &remote, sizeof(remote), 0)) {
        return -1;
    }
    if (!to_ep) {
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = (uct_device_addr_t*)remote.dev_addr;
        ep_params.iface_addr  = (uct_iface_addr_t*)remote.iface_addr;
    }
    for (i = 0; i < num_eps; ++i) {
        if (to_ep ?
            uct_ep_connect_to_ep(c->eps[i],
                                 (uct_device_addr_t*)remote.dev_addr,
                                 (uct_ep_addr_t*)remote.ep_addr[i]) :
            uct_ep_create(&ep_params, &c->eps[i])) {
            return -1;
        }
    }
    return 0;
}


static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}


static int run_sender(ctx_t *c)
{
    uint32_t seq[MAX_EPS] = {0}, hdr[2];
    uint64_t sent = 0, total = (uint64_t)num_eps * num_msgs, payload;
    uint64_t result[3];
    ucs_status_t status;
    double t0 = now_sec();
    unsigned i;

    while ((sent < total) && !c->failed && (now_sec() - t0 < 120)) {
        for (i = 0; i < num_eps; ++i) {
            if (seq[i] == num_msgs) {
                continue;
            }
            hdr[0] = i;
            hdr[1] = seq[i];
            memcpy(&payload, hdr, sizeof(payload));
            status = uct_ep_am_short(c->eps[i], AM_ID, payload, NULL, 0);
            if (status == UCS_OK) {
                ++seq[i];
                ++sent;
            } else if (status != UCS_ERR_NO_RESOURCE) {
                printf("FAIL: am_short on ep %u: %s\n", i,
                       ucs_status_string(status));
                c->failed++;
                break;
            }
        }
        uct_worker_progress(c->worker);
    }
    for (i = 0; (i < num_eps) && !c->failed; ++i) {
        while (uct_ep_flush(c->eps[i], 0, NULL) != UCS_OK) {
            uct_worker_progress(c->worker);
            if (c->failed || (now_sec() - t0 > 120)) {
                break;
            }
        }
    }

    /* Ask the receiver what arrived */
    qpx_uct_xfer(c->sock, &sent, sizeof(sent), 1);
    qpx_uct_xfer(c->sock, result, sizeof(result), 0);
    printf("%s: %u endpoints x %u messages: sent %llu, received %llu, "
           "out of order %llu, sender errors %d, receiver errors %llu, "
           "%.2f s\n", tl_name, num_eps, num_msgs, (unsigned long long)sent,
           (unsigned long long)result[0], (unsigned long long)result[1],
           c->failed, (unsigned long long)result[2], now_sec() - t0);
    return (sent == total) && (result[0] == total) && (result[1] == 0) &&
           (c->failed == 0) && (result[2] == 0);
}


static void run_receiver(ctx_t *c)
{
    uint64_t expected = 0, result[3];
    double t0;

    /* Progress while the sender floods; its count comes when it is done */
    for (;;) {
        ssize_t n = recv(c->sock, &expected, sizeof(expected), MSG_DONTWAIT);
        if (n == sizeof(expected)) {
            break;
        }
        if ((n == 0) || ((n < 0) && (errno != EAGAIN))) {
            return;
        }
        uct_worker_progress(c->worker);
    }
    t0 = now_sec();
    while ((c->received < expected) && (now_sec() - t0 < 30)) {
        uct_worker_progress(c->worker);
    }
    result[0] = c->received;
    result[1] = c->bad;
    result[2] = c->failed;
    qpx_uct_xfer(c->sock, result, sizeof(result), 1);
}


/* Endpoints destroyed, the interface, the worker and the memory domain
 * closed, as a program ends its use of a transport (a transport's
 * statistics print then; under valgrind nothing is left allocated) */
static void ctx_close(ctx_t *c)
{
    unsigned i;

    for (i = 0; i < num_eps; ++i) {
        if (c->eps[i] != NULL) {
            uct_ep_destroy(c->eps[i]);
        }
    }
    uct_iface_close(c->iface);
    uct_worker_destroy(c->worker);
    ucs_async_context_destroy(c->async);
    uct_md_close(c->md);
}


int main(int argc, char **argv)
{
    int sv[2], opt, status, ok;
    ctx_t c;
    pid_t pid;

    while ((opt = getopt(argc, argv, "x:d:e:n:")) != -1) {
        switch (opt) {
        case 'x': tl_name  = optarg; break;
        case 'd': dev_name = optarg; break;
        case 'e': num_eps  = strtoul(optarg, NULL, 0); break;
        case 'n': num_msgs = strtoul(optarg, NULL, 0); break;
        default:
            return 1;
        }
    }
    if ((tl_name == NULL) || (num_eps == 0) || (num_eps > MAX_EPS) ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        fprintf(stderr, "usage: %s -x tl [-d dev] [-e eps<=%d] [-n msgs]\n",
                argv[0], MAX_EPS);
        return 1;
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&c, 0, sizeof(c));
    pid    = fork();
    c.sock = (pid == 0) ? sv[1] : sv[0];
    close((pid == 0) ? sv[0] : sv[1]);
    if (ctx_open(&c)) {
        printf("SKIP: no %s on %s\n", tl_name, dev_name);
        if (pid != 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        return 77;
    }
    if (ctx_connect(&c)) {
        printf("FAIL: %s: connecting %u endpoints\n",
               (pid == 0) ? "receiver" : "sender", num_eps);
        return 1;
    }
    if (pid == 0) {
        run_receiver(&c);
        /* the sender has its answer: nothing of ours is awaited */
        ctx_close(&c);
        return 0;
    }

    ok = run_sender(&c);
    ctx_close(&c);
    waitpid(pid, &status, 0);
    printf("%s\n", ok ? "PASS: every message delivered once, in order" :
                        "FAIL: messages lost, reordered or an endpoint "
                        "failed");
    printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}
