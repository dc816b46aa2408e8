/*
 * Instructions per operation of a UCT transport, without the noise of
 * polling: two processes (fork), the sender posts a burst of 8-byte
 * operations, then tells the receiver, which progresses until the whole
 * burst has arrived. Under `valgrind --tool=callgrind --collect-atstart=no`
 * each phase is collected only while it runs and dumped under its own name
 * (CALLGRIND_DUMP_STATS_AT after every instance; the script adds up the
 * dumps of a name), so the counts do not depend on how often a process
 * found its queues empty. test/bench/rc_instr.sh runs it for each
 * transport and prints the table. Without valgrind it prints ns per
 * operation. A benchmark: prints, never asserts.
 *
 * Usage: qpx_uct_instr -x <tl> [-d <dev>] [-b <burst>] [-r <rounds>]
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include "qpx_uct_open.h"
#include <valgrind/callgrind.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>


#define AM_ID    12
#define BUF_SIZE 65536

typedef struct {
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uct_ep_h            ep;
    void                *buf;
    uct_mem_h           memh;
    uct_rkey_bundle_t   rkey;
    uint64_t            remote_addr;
    int                 sock;
    volatile unsigned   received;
} ctx_t;

typedef struct {
    uint64_t buf_addr;
    uint8_t  rkey[64];
    uint8_t  dev_addr[64];
    uint8_t  ep_addr[128];
    uint8_t  iface_addr[64];
} peer_t;

static const char *tl_name, *dev_name = "softverbs0:1";
static unsigned burst = 128, rounds = 64;


static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    ++((ctx_t*)arg)->received;
    return UCS_OK;
}


static int sync_fd(int fd, int send_first)
{
    char c = 0;

    if (send_first) {
        return (write(fd, &c, 1) == 1) && (read(fd, &c, 1) == 1) ? 0 : -1;
    }
    return (read(fd, &c, 1) == 1) && (write(fd, &c, 1) == 1) ? 0 : -1;
}


static int ctx_open(ctx_t *c, uct_component_h *comp_p)
{
    if (qpx_uct_md_open(tl_name, dev_name, comp_p, &c->md) != 0) {
        fprintf(stderr, "no %s on %s\n", tl_name, dev_name);
        return -1;
    }
    if (qpx_uct_iface_open(c->md, tl_name, dev_name, NULL, NULL, &c->async,
                           &c->worker, &c->iface) != 0) {
        return -1;
    }
    uct_iface_query(c->iface, &c->attr);
    uct_iface_set_am_handler(c->iface, AM_ID, am_cb, c, UCT_CB_FLAG_ASYNC);

    if (posix_memalign(&c->buf, 4096, BUF_SIZE) ||
        uct_md_mem_reg(c->md, c->buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                       &c->memh)) {
        return -1;
    }
    return 0;
}


/* An endpoint to the peer: to its endpoint (CONNECT_TO_EP) or else to its
 * interface (CONNECT_TO_IFACE: qpx_dc) */
static int ctx_connect(ctx_t *c, uct_component_h comp)
{
    int to_ep = !!(c->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    uct_ep_params_t ep_params;
    peer_t local, remote;

    memset(&local, 0, sizeof(local));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = c->iface;
    if ((to_ep && (uct_ep_create(&ep_params, &c->ep) ||
                   uct_ep_get_address(c->ep,
                                      (uct_ep_addr_t*)local.ep_addr))) ||
        (!to_ep && uct_iface_get_address(c->iface,
                                         (uct_iface_addr_t*)local.iface_addr)) ||
        uct_iface_get_device_address(c->iface,
                                     (uct_device_addr_t*)local.dev_addr) ||
        uct_md_mkey_pack(c->md, c->memh, local.rkey)) {
        return -1;
    }
    local.buf_addr = (uintptr_t)c->buf;
    if (qpx_uct_xfer(c->sock, &local, sizeof(local), 1) ||
        qpx_uct_xfer(c->sock, &remote, sizeof(remote), 0)) {
        return -1;
    }
    if (to_ep) {
        if (uct_ep_connect_to_ep(c->ep, (uct_device_addr_t*)remote.dev_addr,
                                 (uct_ep_addr_t*)remote.ep_addr)) {
            return -1;
        }
    } else {
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = (uct_device_addr_t*)remote.dev_addr;
        ep_params.iface_addr  = (uct_iface_addr_t*)remote.iface_addr;
        if (uct_ep_create(&ep_params, &c->ep)) {
            return -1;
        }
    }
    c->remote_addr = remote.buf_addr;
    return (uct_rkey_unpack(comp, remote.rkey, &c->rkey) == UCS_OK) ? 0 : -1;
}


static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}


/* End of one instance of a measured phase: stop collecting, dump */
#define PHASE_END(_name) \
    do { \
        CALLGRIND_TOGGLE_COLLECT; \
        CALLGRIND_DUMP_STATS_AT(_name); \
    } while (0)


static void report(const char *phase, double ns, unsigned ops)
{
    printf("%-24s %8u ops %10.1f ns/op\n", phase, ops, ns / ops);
}


/* Progress until the endpoint has nothing outstanding */
static void flush_ep(ctx_t *c)
{
    while (uct_ep_flush(c->ep, 0, NULL) != UCS_OK) {
        uct_worker_progress(c->worker);
    }
}


/*
 * A send refused for want of room (UCS_ERR_NO_RESOURCE: a UD window or a
 * send queue full): the refused call is counted in the send's phase and
 * in the refused count printed with it; the progress that makes room is
 * not (it is work of the kind "sender progress per am" measures). A
 * transport that refuses many calls still reads high: rc_instr.sh prints
 * the refused counts beside the table.
 */
static void progress_for_room(ctx_t *c, unsigned *refused)
{
    ++(*refused);
    CALLGRIND_TOGGLE_COLLECT;
    uct_worker_progress(c->worker);
    CALLGRIND_TOGGLE_COLLECT;
}


static void run_sender(ctx_t *c)
{
    uint64_t payload = 0x1234;
    double put_ns = 0, am_ns = 0, tx_ns = 0, t;
    unsigned r, i, put_refused = 0, am_refused = 0;
    char ch = 0;

    /* Warm-up, unmeasured, both sides progressing: one AM acknowledged, so
     * that a transport that connects lazily (ud_verbs) is connected */
    while (uct_ep_am_short(c->ep, AM_ID, payload, NULL, 0) != UCS_OK) {
        uct_worker_progress(c->worker);
    }
    flush_ep(c);
    if (write(c->sock, &ch, 1) != 1) {
        return;
    }

    /* qpx_ud and ud_verbs have no RMA */
    for (r = 0; (r < rounds) && (c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT);
         ++r) {
        CALLGRIND_TOGGLE_COLLECT;
        t = now_ns();
        for (i = 0; i < burst; ++i) {
            while (uct_ep_put_short(c->ep, &payload, sizeof(payload),
                                    c->remote_addr, c->rkey.rkey) != UCS_OK) {
                progress_for_room(c, &put_refused);
            }
        }
        put_ns += now_ns() - t;
        PHASE_END("put_short");
        flush_ep(c);
    }
    if (c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) {
        report("put_short", put_ns, rounds * burst);
        printf("put_short refused          %8u calls (counted)\n",
               put_refused);
    }

    for (r = 0; r < rounds; ++r) {
        CALLGRIND_TOGGLE_COLLECT;
        t = now_ns();
        for (i = 0; i < burst; ++i) {
            while (uct_ep_am_short(c->ep, AM_ID, payload, NULL, 0) !=
                   UCS_OK) {
                progress_for_room(c, &am_refused);
            }
        }
        am_ns += now_ns() - t;
        PHASE_END("am_short");
        sync_fd(c->sock, 1); /* the receiver consumed the burst */
        CALLGRIND_TOGGLE_COLLECT;
        t = now_ns();
        flush_ep(c); /* send completions and credits of the burst */
        tx_ns += now_ns() - t;
        PHASE_END("sender progress per am");
        sync_fd(c->sock, 1); /* the receiver may stop progressing */
    }
    report("am_short", am_ns, rounds * burst);
    printf("am_short refused           %8u calls (counted)\n", am_refused);
    report("sender progress per am", tx_ns, rounds * burst);

    CALLGRIND_TOGGLE_COLLECT;
    t = now_ns();
    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(c->worker);
    }
    t = now_ns() - t;
    PHASE_END("empty progress (sender)");
    report("empty progress (sender)", t, 1000);
    sync_fd(c->sock, 1);
}


static void run_receiver(ctx_t *c)
{
    unsigned r, i, target = 1;
    double rx_ns = 0, t;
    char ch;

    /* The warm-up AM of run_sender */
    while ((c->received < target) ||
           (recv(c->sock, &ch, 1, MSG_DONTWAIT) != 1)) {
        uct_worker_progress(c->worker);
    }

    for (r = 0; r < rounds; ++r) {
        if (read(c->sock, &ch, 1) != 1) {
            return;
        }
        target += burst;
        CALLGRIND_TOGGLE_COLLECT;
        t = now_ns();
        while (c->received < target) {
            uct_worker_progress(c->worker);
        }
        rx_ns += now_ns() - t;
        PHASE_END("am receive (progress)");
        if (write(c->sock, &ch, 1) != 1) {
            return;
        }
        /* Acknowledgements (UD) and credits (RC) go out from progress: keep
         * calling it, unmeasured, until the sender's flush is done */
        while (recv(c->sock, &ch, 1, MSG_DONTWAIT) != 1) {
            uct_worker_progress(c->worker);
        }
        if (write(c->sock, &ch, 1) != 1) {
            return;
        }
    }
    report("am receive (progress)", rx_ns, rounds * burst);

    CALLGRIND_TOGGLE_COLLECT;
    t = now_ns();
    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(c->worker);
    }
    t = now_ns() - t;
    PHASE_END("empty progress (recv)");
    report("empty progress (recv)", t, 1000);
    sync_fd(c->sock, 0);
}


int main(int argc, char **argv)
{
    uct_component_h comp;
    ctx_t c;
    int sv[2], opt, status;
    pid_t pid;

    while ((opt = getopt(argc, argv, "x:d:b:r:")) != -1) {
        switch (opt) {
        case 'x': tl_name  = optarg; break;
        case 'd': dev_name = optarg; break;
        case 'b': burst    = strtoul(optarg, NULL, 0); break;
        case 'r': rounds   = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: %s -x tl [-d dev] [-b burst] [-r rounds]\n",
                    argv[0]);
            return 1;
        }
    }
    if ((tl_name == NULL) || (burst == 0) || (rounds == 0) ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        fprintf(stderr, "usage: %s -x tl [-d dev] [-b burst] [-r rounds]\n",
                argv[0]);
        return 1;
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&c, 0, sizeof(c));
    pid    = fork();
    c.sock = (pid == 0) ? sv[1] : sv[0];
    close((pid == 0) ? sv[0] : sv[1]);
    if (ctx_open(&c, &comp) || ctx_connect(&c, comp)) {
        fprintf(stderr, "%s: setup failed\n", (pid == 0) ? "receiver" :
                                                           "sender");
        return 1;
    }
    if (pid == 0) {
        run_receiver(&c);
        return 0;
    }
    printf("%s on %s, %u rounds of %u\n", tl_name, dev_name, rounds, burst);
    run_sender(&c);
    waitpid(pid, &status, 0);
    return 0;
}
