/*
 * Many-peer benchmark of a connect-to-interface transport (qpx_dc, qpx_ud)
 * through the public UCT API, over softverbs. Prints one result line;
 * never asserts (test/bench/dc-bench.sh makes the tables).
 *
 *  -m rate:      one sender interface, PEERS peer interfaces in 2 other
 *                processes; 8-byte active messages (or puts, -o put) sent
 *                round-robin over one endpoint per peer. Prints messages per
 *                second and, from softverbs' accounting, DCI target
 *                switches per message.
 *  -m footprint: the sender creates EPS endpoints over 16 peer interfaces
 *                (each endpoint puts once, so that it is in use) and prints
 *                its QPs, registered bytes and the growth of its resident
 *                memory. A transport that connects endpoint to endpoint
 *                (qpx_rc, UCX's rc_verbs) gets EPS endpoints to one peer
 *                process, each connected to an endpoint of its own there:
 *                a QP per endpoint, as with EPS peers.
 *
 * Usage: qpx_peers_bench -x TL [-d DEV] -m rate|footprint [-p PEERS]
 *        [-n MSGS] [-o am|put] [-e EPS]
 */
#define _GNU_SOURCE /* dlvsym */
#include "qpx_uct_open.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AM_ID     7
#define MAX_PEERS 256
#define NPROCS    2

static const char *tl_name, *dev_name = "softverbs0:1";

typedef struct {
    uint8_t  dev_addr[32];
    uint8_t  iface_addr[32];
    uint8_t  rkey[64];
    uint64_t buf;
} peer_addr_t;

typedef struct {
    uct_component_h     comp;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
    uct_iface_attr_t    attr;
    uct_mem_h           memh;
    void                *buf;
} node_t;

/* softverbs' struct softverbs_stats at SOFTVERBS_1.1 */
typedef struct {
    uint32_t pid, num_qp, num_qp_by_type[4], num_qp_by_state[7];
    uint32_t num_cq, num_srq, num_mr;
    uint64_t mr_bytes;
    uint32_t num_dci, num_dct;
    uint64_t dc_switches, dc_key_violations;
} sv_stats_t;

static uint64_t am_count;

static ucs_status_t am_cb(void *arg, void *data, size_t length,
                          unsigned flags)
{
    ++am_count;
    return UCS_OK;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stats(sv_stats_t *st)
{
    static int (*get)(uint32_t, void*);

    memset(st, 0, sizeof(*st));
    if (get == NULL) {
        get = (int (*)(uint32_t, void*))dlvsym(RTLD_DEFAULT,
                                              "softverbs_get_stats",
                                              "SOFTVERBS_1.1");
    }
    if (get != NULL) {
        get(getpid(), st);
    }
}

static long rss_kb(void)
{
    long pages = 0, resident = 0;
    FILE *f    = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int node_open(node_t *n)
{
    if ((qpx_uct_md_open(tl_name, dev_name, &n->comp, &n->md) != 0) ||
        (qpx_uct_iface_open(n->md, tl_name, dev_name, NULL, NULL, &n->async,
                            &n->worker, &n->iface) != 0) ||
        posix_memalign(&n->buf, 4096, 4096) ||
        (uct_md_mem_reg(n->md, n->buf, 4096, UCT_MD_MEM_ACCESS_ALL,
                        &n->memh) != UCS_OK)) {
        return -1;
    }
    uct_iface_set_am_handler(n->iface, AM_ID, am_cb, NULL, 0);
    uct_iface_query(n->iface, &n->attr);
    return 0;
}

static void node_addr(node_t *n, peer_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->buf = (uintptr_t)n->buf;
    uct_iface_get_device_address(n->iface, (uct_device_addr_t*)a->dev_addr);
    uct_iface_get_address(n->iface, (uct_iface_addr_t*)a->iface_addr);
    uct_md_mkey_pack(n->md, n->memh, a->rkey);
}

/* A peer process: its interfaces' addresses, then progress until told
 * (active messages need the receiver's progress; RDMA does not, and a peer
 * that only waits leaves the cores to the sender) */
static int peer_main(int sock, int nifaces, int progress)
{
    static node_t nodes[MAX_PEERS];
    peer_addr_t a;
    char c;
    int i;

    for (i = 0; i < nifaces; ++i) {
        if (node_open(&nodes[i]) != 0) {
            return 1;
        }
        node_addr(&nodes[i], &a);
        qpx_uct_xfer(sock, &a, sizeof(a), 1);
    }
    while (recv(sock, &c, 1, progress ? MSG_DONTWAIT : 0) < 0) {
        for (i = 0; i < nifaces; ++i) {
            uct_worker_progress(nodes[i].worker);
        }
    }
    return 0;
}

static int spawn_peers(int npeers, peer_addr_t *addrs, int *socks, int *pids,
                       int progress)
{
    int p, i, sv[2], per = (npeers + NPROCS - 1) / NPROCS, k = 0, n;

    for (p = 0; p < NPROCS; ++p) {
        n = (p == NPROCS - 1) ? npeers - per * p : per;
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        pids[p] = fork();
        if (pids[p] == 0) {
            close(sv[0]);
            _exit(peer_main(sv[1], n, progress));
        }
        close(sv[1]);
        socks[p] = sv[0];
        for (i = 0; i < n; ++i) {
            if (qpx_uct_xfer(socks[p], &addrs[k++], sizeof(*addrs), 0) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

static void stop_peers(int *socks, int *pids)
{
    int p;

    for (p = 0; p < NPROCS; ++p) {
        (void)!write(socks[p], "x", 1);
        waitpid(pids[p], NULL, 0);
    }
}

static uct_ep_h ep_to(node_t *n, peer_addr_t *a)
{
    uct_ep_params_t p;
    uct_ep_h ep = NULL;

    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = n->iface;
    p.dev_addr   = (uct_device_addr_t*)a->dev_addr;
    p.iface_addr = (uct_iface_addr_t*)a->iface_addr;
    uct_ep_create(&p, &ep);
    return ep;
}

static ucs_status_t send_one(node_t *n, uct_ep_h ep, int put,
                             peer_addr_t *a, uct_rkey_t rkey, uint64_t v)
{
    return put ? uct_ep_put_short(ep, &v, sizeof(v), a->buf, rkey) :
                 uct_ep_am_short(ep, AM_ID, v, NULL, 0);
}

static void flush_all(node_t *n)
{
    while (uct_iface_flush(n->iface, 0, NULL) != UCS_OK) {
        uct_worker_progress(n->worker);
    }
}

static int run_rate(int npeers, long msgs, int put)
{
    static peer_addr_t addrs[MAX_PEERS];
    static uct_rkey_bundle_t rkeys[MAX_PEERS];
    static uct_ep_h eps[MAX_PEERS];
    int socks[NPROCS], pids[NPROCS], i;
    sv_stats_t st0, st1;
    ucs_status_t status;
    double t0, t;
    long sent;
    node_t n;

    if ((npeers > MAX_PEERS) || (node_open(&n) != 0)) {
        return 1;
    }
    if (put && !(n.attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT)) {
        printf("%s put_short %d peers: not offered\n", tl_name, npeers);
        return 0;
    }
    if (spawn_peers(npeers, addrs, socks, pids, !put) != 0) {
        return 1;
    }
    for (i = 0; i < npeers; ++i) {
        uct_rkey_unpack(n.comp, addrs[i].rkey, &rkeys[i]);
        eps[i] = ep_to(&n, &addrs[i]);
        if (eps[i] == NULL) {
            return 1;
        }
    }
    /* warm-up: every endpoint once, everything complete */
    for (i = 0; i < npeers; ++i) {
        while (send_one(&n, eps[i], put, &addrs[i], rkeys[i].rkey, i) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(n.worker);
        }
    }
    flush_all(&n);

    stats(&st0);
    t0 = now_s();
    for (sent = 0, i = 0; sent < msgs;) {
        status = send_one(&n, eps[i], put, &addrs[i], rkeys[i].rkey, sent);
        if (status == UCS_OK) {
            ++sent;
            i = (i + 1 == npeers) ? 0 : i + 1;
        } else {
            uct_worker_progress(n.worker);
        }
    }
    flush_all(&n);
    t = now_s() - t0;
    stats(&st1);

    printf("%s %s %d peers: %.0f msg/s, %.3f DCI target switches/msg\n",
           tl_name, put ? "put_short" : "am_short", npeers, msgs / t,
           (double)(st1.dc_switches - st0.dc_switches) / msgs);
    for (i = 0; i < npeers; ++i) {
        uct_ep_destroy(eps[i]);
    }
    stop_peers(socks, pids);
    return 0;
}

/* The footprint line: everything complete, then the QPs, registered and
 * resident memory of this process (its growth since rss0, taken with the
 * interface open, and all of it), and the rate since t0 */
static void footprint_print(node_t *n, int neps, long rss0, double t0)
{
    sv_stats_t st;
    long rss;
    double t1;

    flush_all(n);
    t1 = now_s();
    stats(&st);
    rss = rss_kb();
    printf("%s %d eps: %u QPs (%u DCI, %u DCT), %u MRs, %.1f MiB "
           "registered, +%ld kB resident (%ld kB in all), %.0f eps/s set up "
           "and used\n", tl_name, neps, st.num_qp, st.num_dci, st.num_dct,
           st.num_mr, st.mr_bytes / 1048576.0, rss - rss0, rss,
           neps / (t1 - t0));
}

/* Endpoint-to-endpoint footprint: the peer makes an endpoint for each of
 * the sender's and connects the pair (-m footprint with a CONNECT_TO_EP
 * transport) */
typedef struct {
    uint8_t dev_addr[32];
    uint8_t ep_addr[64];
} ep_addr_msg_t;

static uct_ep_h ep_pair_half(node_t *n, ep_addr_msg_t *mine)
{
    uct_ep_params_t p;
    uct_ep_h ep = NULL;

    if ((n->attr.ep_addr_len > sizeof(mine->ep_addr)) ||
        (n->attr.device_addr_len > sizeof(mine->dev_addr))) {
        return NULL;
    }
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    p.iface      = n->iface;
    if (uct_ep_create(&p, &ep) != UCS_OK) {
        return NULL;
    }
    memset(mine, 0, sizeof(*mine));
    uct_iface_get_device_address(n->iface,
                                 (uct_device_addr_t*)mine->dev_addr);
    uct_ep_get_address(ep, (uct_ep_addr_t*)mine->ep_addr);
    return ep;
}

static int ep_peer_main(int sock, int neps)
{
    ep_addr_msg_t theirs, mine;
    peer_addr_t a;
    uct_ep_h ep;
    node_t n;
    int i;

    if (node_open(&n) != 0) {
        return 1;
    }
    node_addr(&n, &a);
    qpx_uct_xfer(sock, &a, sizeof(a), 1);
    for (i = 0; i < neps; ++i) {
        if ((qpx_uct_xfer(sock, &theirs, sizeof(theirs), 0) != 0) ||
            ((ep = ep_pair_half(&n, &mine)) == NULL) ||
            (uct_ep_connect_to_ep(ep, (uct_device_addr_t*)theirs.dev_addr,
                                  (uct_ep_addr_t*)theirs.ep_addr) != UCS_OK)) {
            return 1;
        }
        qpx_uct_xfer(sock, &mine, sizeof(mine), 1);
    }
    /* puts need no progress here; wait until told */
    (void)!read(sock, &mine, 1);
    return 0;
}

static int run_footprint_to_ep(node_t *n, int neps, uct_ep_h *eps)
{
    ep_addr_msg_t mine, theirs;
    uct_rkey_bundle_t rkey;
    int sv[2], pid, i;
    peer_addr_t a;
    long rss0;
    double t0;

    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pid = fork();
    if (pid == 0) {
        close(sv[0]);
        _exit(ep_peer_main(sv[1], neps));
    }
    close(sv[1]);
    if (qpx_uct_xfer(sv[0], &a, sizeof(a), 0) != 0) {
        return 1;
    }
    uct_rkey_unpack(n->comp, a.rkey, &rkey);
    rss0 = rss_kb();
    t0   = now_s();
    for (i = 0; i < neps; ++i) {
        eps[i] = ep_pair_half(n, &mine);
        if ((eps[i] == NULL) ||
            (qpx_uct_xfer(sv[0], &mine, sizeof(mine), 1) != 0) ||
            (qpx_uct_xfer(sv[0], &theirs, sizeof(theirs), 0) != 0) ||
            (uct_ep_connect_to_ep(eps[i], (uct_device_addr_t*)theirs.dev_addr,
                                  (uct_ep_addr_t*)theirs.ep_addr) != UCS_OK)) {
            fprintf(stderr, "endpoint %d: not connected\n", i);
            return 1;
        }
        while (send_one(n, eps[i], 1, &a, rkey.rkey, i) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(n->worker);
        }
    }
    footprint_print(n, neps, rss0, t0);
    for (i = 0; i < neps; ++i) {
        uct_ep_destroy(eps[i]);
    }
    (void)!write(sv[0], "x", 1);
    waitpid(pid, NULL, 0);
    return 0;
}

static int run_footprint(int neps)
{
    static peer_addr_t addrs[16];
    static uct_rkey_bundle_t rkeys[16];
    int socks[NPROCS], pids[NPROCS], i;
    uct_ep_h *eps = calloc(neps, sizeof(*eps));
    double t0;
    long rss0;
    node_t n;
    int put;

    if ((eps == NULL) || (node_open(&n) != 0)) {
        return 1;
    }
    if (!(n.attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        return run_footprint_to_ep(&n, neps, eps);
    }
    /* each endpoint used once: a put where offered, else a message */
    put = !!(n.attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT);
    if (spawn_peers(16, addrs, socks, pids, !put) != 0) {
        return 1;
    }
    for (i = 0; i < 16; ++i) {
        uct_rkey_unpack(n.comp, addrs[i].rkey, &rkeys[i]);
    }
    rss0 = rss_kb();
    t0   = now_s();
    for (i = 0; i < neps; ++i) {
        eps[i] = ep_to(&n, &addrs[i % 16]);
        if (eps[i] == NULL) {
            return 1;
        }
        while (send_one(&n, eps[i], put, &addrs[i % 16], rkeys[i % 16].rkey,
                        i) == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(n.worker);
        }
    }
    footprint_print(&n, neps, rss0, t0);
    for (i = 0; i < neps; ++i) {
        uct_ep_destroy(eps[i]);
    }
    stop_peers(socks, pids);
    return 0;
}

int main(int argc, char **argv)
{
    int npeers = 64, neps = 64, put = 0, opt;
    const char *mode = "rate";
    long msgs = 200000;

    while ((opt = getopt(argc, argv, "x:d:m:p:n:o:e:")) != -1) {
        switch (opt) {
        case 'x': tl_name = optarg; break;
        case 'd': dev_name = optarg; break;
        case 'm': mode = optarg; break;
        case 'p': npeers = atoi(optarg); break;
        case 'n': msgs = atol(optarg); break;
        case 'o': put = !strcmp(optarg, "put"); break;
        case 'e': neps = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s -x tl [-d dev] -m rate|footprint "
                    "[-p peers] [-n msgs] [-o am|put] [-e eps]\n", argv[0]);
            return 2;
        }
    }
    if (tl_name == NULL) {
        fprintf(stderr, "-x tl is required\n");
        return 2;
    }
    return !strcmp(mode, "footprint") ? run_footprint(neps) :
           run_rate(npeers, msgs, put);
}
