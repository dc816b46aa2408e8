/*
 * qpx_dc with many peers and with failing ones, through the public UCT API
 * (qpx_dc over softverbs), from one "hub" interface:
 *
 *  -m many  [-p PROCS] [-i IFACES] [-e EPS]: PROCS processes of IFACES
 *           interfaces each; the hub makes EPS endpoints spread over all of
 *           them. Every endpoint puts its own 8-byte value into its slot of
 *           its target's buffer and fetch-adds 1 to the target's counter:
 *           each target checks every slot and its counter, the hub checks
 *           that each target's fetch-add results are 0..n-1 once each.
 *           While all endpoints exist, softverbs' accounting must show, per
 *           process, NUM_DCI DCIs and one DCT per interface: the QPs of an
 *           interface do not grow with its endpoints.
 *  -m fail: a healthy peer, a peer whose DCT carries another access key (a
 *           raw mlx5dv DCT), a peer that closes its interface (its DCT is
 *           destroyed) and a peer that is killed. A put to each of the
 *           three bad ones must fail the endpoint through the error handler
 *           (no hang), nothing may be written at the wrong-key peer, and
 *           the healthy peer must still get every put, checked, after each.
 *
 * -x qpx runs the same over the hybrid qpx transport, whose RC QPs must stay
 * within UCX_QPX_RC_POOL_SIZE.
 *  -m switch (-x qpx): peers killed during a promotion and during a
 *           demotion (run_switch).
 *
 * Prints one PASS/FAIL line per check and "N passed, N failed".
 */
#define _GNU_SOURCE /* dlvsym */
#include "qpx_uct_open.h"

#include <infiniband/mlx5dv.h>
#include <ucs/type/status.h>
#include <dlfcn.h>
#include <poll.h>
#include <stdarg.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_IFACES  64
#define BUF_SIZE    (64 * 1024)
#define SLOT0       64                /* slots start here; word 0: counter */

static const char *dev_name = "softverbs0:1";
static const char *TL       = "qpx_dc"; /* or "qpx": the hybrid */


/* What a peer interface tells the hub */
typedef struct {
    uint8_t  dev_addr[32];
    uint8_t  iface_addr[16];
    uint8_t  rkey[64];
    uint64_t buf;
} peer_addr_t;

typedef struct {
    uct_component_h     comp;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         iface;
    uct_mem_h           memh;
    void                *buf;
} node_t;

static volatile int failed_eps;

static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    __atomic_fetch_add(&failed_eps, 1, __ATOMIC_RELAXED);
    return UCS_OK;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int node_open(node_t *n, int with_err_cb)
{
    if ((qpx_uct_md_open(TL, dev_name, &n->comp, &n->md) != 0) ||
        (qpx_uct_iface_open(n->md, TL, dev_name, with_err_cb ? err_cb : NULL,
                            NULL, &n->async, &n->worker, &n->iface) != 0) ||
        posix_memalign(&n->buf, 4096, BUF_SIZE)) {
        return -1;
    }
    memset(n->buf, 0, BUF_SIZE);
    return (uct_md_mem_reg(n->md, n->buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                           &n->memh) == UCS_OK) ? 0 : -1;
}

static int node_addr(node_t *n, peer_addr_t *a)
{
    memset(a, 0, sizeof(*a));
    a->buf = (uintptr_t)n->buf;
    return ((uct_iface_get_device_address(n->iface,
                                          (uct_device_addr_t*)a->dev_addr) ==
             UCS_OK) &&
            (uct_iface_get_address(n->iface,
                                   (uct_iface_addr_t*)a->iface_addr) ==
             UCS_OK) &&
            (uct_md_mkey_pack(n->md, n->memh, a->rkey) == UCS_OK)) ? 0 : -1;
}

static uct_ep_h ep_create(node_t *hub, peer_addr_t *a)
{
    uct_ep_params_t p;
    uct_ep_h ep;

    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = hub->iface;
    p.dev_addr   = (uct_device_addr_t*)a->dev_addr;
    p.iface_addr = (uct_iface_addr_t*)a->iface_addr;
    return (uct_ep_create(&p, &ep) == UCS_OK) ? ep : NULL;
}

/* Progress until the interface flush completes (bounded); 0 when it did */
static int hub_flush(node_t *hub, double limit_s)
{
    double end = now_s() + limit_s;
    ucs_status_t status;

    do {
        status = uct_iface_flush(hub->iface, 0, NULL);
        uct_worker_progress(hub->worker);
    } while ((status != UCS_OK) && (now_s() < end));
    return (status == UCS_OK) ? 0 : -1;
}

/* A put that may meet NO_RESOURCE: progress and retry (bounded) */
static ucs_status_t put8(node_t *hub, uct_ep_h ep, uint64_t value,
                         uint64_t raddr, uct_rkey_t rkey)
{
    double end = now_s() + 10;
    ucs_status_t status;

    do {
        status = uct_ep_put_short(ep, &value, sizeof(value), raddr, rkey);
        if (status == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(hub->worker);
        }
    } while ((status == UCS_ERR_NO_RESOURCE) && (now_s() < end));
    return status;
}

/* ------------------------------------------------------------------ many */

typedef struct {
    uint64_t          result;
    uct_completion_t  comp;
    int               done;
} fadd_t;

static void fadd_done(uct_completion_t *self)
{
    ucs_container_of(self, fadd_t, comp)->done = 1;
}

/* A child: its interfaces' addresses to the hub, then wait for the hub's
 * count of endpoints per interface and check slots and counter */
static int many_child(int sock, int nifaces)
{
    static node_t nodes[MAX_IFACES];
    peer_addr_t a;
    uint32_t count;
    uint64_t *w;
    int i, k, bad = 0;

    for (i = 0; i < nifaces; ++i) {
        if ((node_open(&nodes[i], 0) != 0) || (node_addr(&nodes[i], &a) != 0)) {
            fprintf(stderr, "child %d: cannot open interface %d\n", getpid(), i);
            return 1;
        }
        qpx_uct_xfer(sock, &a, sizeof(a), 1);
    }
    for (i = 0; i < nifaces; ++i) {
        if (qpx_uct_xfer(sock, &count, sizeof(count), 0) != 0) {
            return 1;
        }
        w = nodes[i].buf;
        bad += (w[0] != count);
        for (k = 0; k < (int)count; ++k) {
            bad += (w[SLOT0 / 8 + k] != (((uint64_t)getpid() << 32) |
                                         ((uint64_t)i << 20) | k));
        }
    }
    qpx_uct_xfer(sock, &bad, sizeof(bad), 1);
    return 0;
}

typedef int (*get_stats_fn_t)(uint32_t pid, void *stats);

/* softverbs' struct softverbs_stats (SOFTVERBS_1.1), read through dlvsym
 * so that the program also links against rdma-core */
typedef struct {
    uint32_t pid, num_qp, num_qp_by_type[4], num_qp_by_state[7];
    uint32_t num_cq, num_srq, num_mr;
    uint64_t mr_bytes;
    uint32_t num_dci, num_dct;
    uint64_t dc_switches, dc_key_violations;
} sv_stats_t;

static int run_many(int nprocs, int nifaces, int neps)
{
    int total = nprocs * nifaces, p, i, j, ok, bad, num_dci, max_rc;
    static peer_addr_t addrs[MAX_IFACES * 16];
    static uct_rkey_bundle_t rkeys[MAX_IFACES * 16];
    static uint32_t counts[MAX_IFACES * 16];
    uct_ep_h *eps = calloc(neps, sizeof(*eps));
    fadd_t *fadds = calloc(neps, sizeof(*fadds));
    int socks[16], pids[16], sv[2];
    get_stats_fn_t get_stats;
    sv_stats_t st;
    ucs_status_t status;
    const char *env;
    uint8_t *seen;
    node_t hub;
    uint64_t v;

    if ((nprocs > 16) || (nifaces > MAX_IFACES) || !eps || !fadds) {
        return 2;
    }
    for (p = 0; p < nprocs; ++p) {
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        pids[p] = fork();
        if (pids[p] == 0) {
            close(sv[0]);
            _exit(many_child(sv[1], nifaces));
        }
        close(sv[1]);
        socks[p] = sv[0];
    }
    if (node_open(&hub, 0) != 0) {
        qpx_uct_report(0, "hub interface open");
        return 1;
    }
    for (p = 0; p < nprocs; ++p) {
        for (i = 0; i < nifaces; ++i) {
            j = p * nifaces + i;
            if ((qpx_uct_xfer(socks[p], &addrs[j], sizeof(addrs[j]), 0) != 0) ||
                (uct_rkey_unpack(hub.comp, addrs[j].rkey, &rkeys[j]) != UCS_OK)) {
                qpx_uct_report(0, "address of interface %d of child %d", i, p);
                return 1;
            }
        }
    }

    /* The endpoints, round-robin over the targets; each puts its value and
     * fetch-adds the target's counter */
    ok = 1;
    for (j = 0; (j < neps) && ok; ++j) {
        int t = j % total, slot = counts[t]++;

        eps[j] = ep_create(&hub, &addrs[t]);
        ok     = (eps[j] != NULL);
        if (!ok) {
            break;
        }
        v = ((uint64_t)pids[t / nifaces] << 32) |
            ((uint64_t)(t % nifaces) << 20) | slot;
        status = put8(&hub, eps[j], v, addrs[t].buf + SLOT0 + 8 * slot,
                      rkeys[t].rkey);
        ok = (status == UCS_OK);
        fadds[j].comp.func   = fadd_done;
        fadds[j].comp.count  = 1;
        fadds[j].comp.status = UCS_OK;
        do {
            status = uct_ep_atomic64_fetch(eps[j], UCT_ATOMIC_OP_ADD, 1,
                                           &fadds[j].result, addrs[t].buf,
                                           rkeys[t].rkey, &fadds[j].comp);
            if (status == UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(hub.worker);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        fadds[j].done = (status == UCS_OK);
        ok = ok && ((status == UCS_OK) || (status == UCS_INPROGRESS));
    }
    qpx_uct_report(ok, "%d endpoints on one interface to %d interfaces of %d "
           "processes, each put + fetch-add posted", j, total, nprocs);
    ok = ok && (hub_flush(&hub, 60) == 0);
    for (j = 0; ok && (j < neps); ++j) {
        while (!fadds[j].done) {
            uct_worker_progress(hub.worker);
        }
    }
    qpx_uct_report(ok, "every operation completed (interface flush)");

    /* QPs while every endpoint exists */
    env     = getenv("UCX_QPX_DC_NUM_DCI");
    num_dci = env ? atoi(env) : 8;
    get_stats = (get_stats_fn_t)dlvsym(RTLD_DEFAULT, "softverbs_get_stats",
                                       "SOFTVERBS_1.1");
    if (get_stats == NULL) {
        qpx_uct_report(0, "softverbs_get_stats@SOFTVERBS_1.1 not found");
    } else {
        /* The hybrid adds its RC QPs: those in use (at most its pool) and
         * the RESET ones qpx_rc keeps for reuse, which were in use before
         * (so also at most the pool), plus the one qpx_rc creates at open
         * to learn the granted caps */
        env     = getenv("UCX_QPX_RC_POOL_SIZE");
        max_rc  = strcmp(TL, "qpx") ? 0 : (env ? atoi(env) : 32) + 1;
        memset(&st, 0, sizeof(st));
        get_stats(getpid(), &st);
        qpx_uct_report((st.num_dci == (uint32_t)num_dci) && (st.num_dct == 1) &&
               (st.num_qp_by_type[0] <= (uint32_t)max_rc) &&
               (st.num_qp == (uint32_t)num_dci + 1 + st.num_qp_by_type[0]),
               "hub with %d endpoints: %u QPs = %u DCIs + %u DCT + %u RC "
               "(expected %d + 1 + at most %d)", neps, st.num_qp, st.num_dci,
               st.num_dct, st.num_qp_by_type[0], num_dci, max_rc);
        if (!strcmp(TL, "qpx")) {
            /* The RC QPs receive from the DCT's SRQ unless told not to */
            env = getenv("UCX_QPX_SHARED_SRQ");
            j   = ((env != NULL) && (env[0] == 'n')) ? 2 : 1;
            qpx_uct_report(st.num_srq == (uint32_t)j, "hub: %u SRQs (expected %d: "
                   "UCX_QPX_SHARED_SRQ=%s)", st.num_srq, j, env ? env : "y");
        }
        for (p = 0; p < nprocs; ++p) {
            memset(&st, 0, sizeof(st));
            get_stats(pids[p], &st);
            if ((st.num_dct != (uint32_t)nifaces) ||
                (st.num_dci != (uint32_t)(nifaces * num_dci)) ||
                (st.num_qp_by_type[0] > (uint32_t)(nifaces * max_rc))) {
                break;
            }
        }
        qpx_uct_report(p == nprocs, "each of %d processes: %d interfaces, %d DCTs, "
               "%d DCIs and at most %d RC QPs", nprocs, nifaces, nifaces,
               nifaces * num_dci, nifaces * max_rc);
    }

    /* Each target's fetch-add results: 0..count-1, each once */
    bad = 0;
    for (i = 0; i < total; ++i) {
        seen = calloc(counts[i], 1);
        for (j = i; j < neps; j += total) {
            if ((fadds[j].result >= counts[i]) || seen[fadds[j].result]++) {
                ++bad;
            }
        }
        free(seen);
    }
    qpx_uct_report(bad == 0, "fetch-add results: each target's 0..n-1 once each "
           "(%d wrong)", bad);

    for (j = 0; j < neps; ++j) {
        if (eps[j] != NULL) {
            uct_ep_destroy(eps[j]);
        }
    }
    /* The targets check their memory */
    bad = 0;
    for (p = 0; p < nprocs; ++p) {
        int cbad = -1, wstatus;

        for (i = 0; i < nifaces; ++i) {
            qpx_uct_xfer(socks[p], &counts[p * nifaces + i], sizeof(uint32_t),
                         1);
        }
        qpx_uct_xfer(socks[p], &cbad, sizeof(cbad), 0);
        waitpid(pids[p], &wstatus, 0);
        bad += (cbad != 0) || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus);
    }
    qpx_uct_report(bad == 0, "every target slot and counter holds what was sent "
           "(%d processes wrong)", bad);
    return qpx_uct_nfail != 0;
}

/* ------------------------------------------------------------------ fail */

enum { CMD_CHECK = 1, CMD_CLOSE, CMD_EXIT };

/* A healthy or closing peer: its address, then commands; with progress,
 * it progresses while it waits for one (it answers the hybrid's
 * promotions), else it only reads them */
static int peer_child(int sock, int progress)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    peer_addr_t a;
    node_t n;
    uint64_t *w;
    int cmd, reply;

    if ((node_open(&n, 0) != 0) || (node_addr(&n, &a) != 0)) {
        return 1;
    }
    qpx_uct_xfer(sock, &a, sizeof(a), 1);
    w = n.buf;
    for (;;) {
        if (progress && (poll(&pfd, 1, 0) == 0)) {
            uct_worker_progress(n.worker);
            continue;
        }
        if (qpx_uct_xfer(sock, &cmd, sizeof(cmd), 0) != 0) {
            return 0;
        }
        switch (cmd) {
        case CMD_CHECK: /* the value the hub put last, at word 8 */
            qpx_uct_xfer(sock, &reply, sizeof(reply), 0);
            reply = (w[8] == (uint64_t)reply);
            break;
        case CMD_CLOSE: /* the DCT goes with the interface */
            uct_iface_close(n.iface);
            progress = 0;
            reply    = 1;
            break;
        default:
            return 0;
        }
        qpx_uct_xfer(sock, &reply, sizeof(reply), 1);
    }
}

static int fail_child(int sock)
{
    return peer_child(sock, 0);
}

static int switch_child(int sock)
{
    return peer_child(sock, 1);
}

/*
 * A peer whose DCT has another access key than qpx's: a raw mlx5dv DCT on
 * an SRQ, published as a qpx_dc interface address (its DCT number; the
 * hybrid's has its cold path's tag before) with a
 * qpx device address (flags byte 0, the port's LID: InfiniBand). Reports
 * whether its buffer is still untouched.
 */
static int rogue_child(int sock)
{
    struct ibv_device **devs = ibv_get_device_list(NULL);
    struct ibv_srq_init_attr srq_attr = {.attr = {.max_wr = 4, .max_sge = 1}};
    struct mlx5dv_qp_init_attr dv = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC};
    struct ibv_qp_init_attr_ex ex;
    struct ibv_port_attr port;
    struct ibv_qp_attr qa;
    struct ibv_context *ctx;
    struct ibv_srq *srq;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *dct;
    struct ibv_mr *mr;
    static uint64_t buf[BUF_SIZE / 8];
    peer_addr_t a;
    int cmd, reply, i;

    if ((devs == NULL) || (devs[0] == NULL) ||
        !(ctx = ibv_open_device(devs[0])) || !(pd = ibv_alloc_pd(ctx)) ||
        !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)) ||
        !(srq = ibv_create_srq(pd, &srq_attr)) ||
        !(mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
                          IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC)) ||
        ibv_query_port(ctx, 1, &port)) {
        return 1;
    }
    memset(&ex, 0, sizeof(ex));
    ex.qp_type   = IBV_QPT_DRIVER;
    ex.send_cq   = cq;
    ex.recv_cq   = cq;
    ex.srq       = srq;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd        = pd;
    dv.dc_init_attr.dc_type        = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = 0xbadbadull;
    dct = mlx5dv_create_qp(ctx, &ex, &dv);
    if (dct == NULL) {
        return 1;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state        = IBV_QPS_INIT;
    qa.port_num        = 1;
    qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(dct, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        return 1;
    }
    memset(&qa, 0, sizeof(qa));
    qa.qp_state          = IBV_QPS_RTR;
    qa.path_mtu          = port.active_mtu;
    qa.min_rnr_timer     = 1;
    qa.ah_attr.port_num  = 1;
    if (ibv_modify_qp(dct, &qa, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
                                IBV_QP_AV | IBV_QP_PATH_MTU)) {
        return 1;
    }

    memset(&a, 0, sizeof(a));
    a.dev_addr[0]   = 0;                 /* qpx_device_addr_t.flags */
    memcpy(&a.dev_addr[1], &port.lid, 2);
    /* The hybrid's interface address: its cold path's tag (1: DC), then
     * qpx_dc's */
    i               = !strcmp(TL, "qpx");
    a.iface_addr[0] = 1;
    a.iface_addr[i] = dct->qp_num & 0xff;
    a.iface_addr[i + 1] = (dct->qp_num >> 8) & 0xff;
    a.iface_addr[i + 2] = (dct->qp_num >> 16) & 0xff;
    a.buf           = (uintptr_t)buf;
    memcpy(a.rkey, &mr->rkey, sizeof(mr->rkey)); /* qpx_md's packed rkey */
    qpx_uct_xfer(sock, &a, sizeof(a), 1);

    while (qpx_uct_xfer(sock, &cmd, sizeof(cmd), 0) == 0) {
        if (cmd != CMD_CHECK) {
            break;
        }
        qpx_uct_xfer(sock, &reply, sizeof(reply), 0);
        for (i = 0, reply = 1; i < BUF_SIZE / 8; ++i) {
            reply &= (buf[i] == 0);
        }
        qpx_uct_xfer(sock, &reply, sizeof(reply), 1);
    }
    return 0;
}

static int child_cmd(int sock, int cmd, int arg)
{
    int reply = 0;

    qpx_uct_xfer(sock, &cmd, sizeof(cmd), 1);
    if (cmd == CMD_CHECK) {
        qpx_uct_xfer(sock, &arg, sizeof(arg), 1);
    }
    return (qpx_uct_xfer(sock, &reply, sizeof(reply), 0) == 0) ? reply : -1;
}

/* Put to ep and wait for the error handler (bounded); 1 when it failed ep */
/* Progress (and flush) the hub until an endpoint failed after before, or
 * limit_s; *secs: how long it took */
static int wait_failure(node_t *hub, int before, double limit_s, double *secs)
{
    double t0 = now_s();

    while ((failed_eps == before) && (now_s() < t0 + limit_s)) {
        uct_iface_flush(hub->iface, 0, NULL);
        uct_worker_progress(hub->worker);
    }
    *secs = now_s() - t0;
    return failed_eps > before;
}

/* A put to a bad peer fails ep through the handler */
static int expect_failure(node_t *hub, uct_ep_h ep, peer_addr_t *a,
                          uct_rkey_t rkey, double *secs)
{
    int before = failed_eps;

    if (put8(hub, ep, 0x5eed, a->buf + 64, rkey) != UCS_OK) {
        return 0;
    }
    return wait_failure(hub, before, 20, secs);
}

/* The healthy peer still gets a put, checked at the peer */
static void check_healthy(node_t *hub, uct_ep_h ep, peer_addr_t *a,
                          uct_rkey_t rkey, int sock, int value,
                          const char *after)
{
    int ok = (put8(hub, ep, value, a->buf + 64, rkey) == UCS_OK);

    ok = ok && (hub_flush(hub, 10) == 0) &&
         (child_cmd(sock, CMD_CHECK, value) == 1);
    qpx_uct_report(ok, "healthy peer served after %s: put of %d landed", after,
           value);
}

typedef int (*child_fn_t)(int sock);

/* npeers child processes (child(p) the p-th's), the hub's interface and an
 * endpoint to each; 0, or 1 after a FAIL line */
static int hub_spawn(int npeers, child_fn_t (*child)(int p), node_t *hub,
                     int *socks, int *pids, peer_addr_t *addrs,
                     uct_rkey_bundle_t *rkeys, uct_ep_h *eps)
{
    int p, sv[2];

    for (p = 0; p < npeers; ++p) {
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
        pids[p] = fork();
        if (pids[p] == 0) {
            close(sv[0]);
            _exit(child(p)(sv[1]));
        }
        close(sv[1]);
        socks[p] = sv[0];
    }
    if (node_open(hub, 1) != 0) {
        qpx_uct_report(0, "hub interface open");
        return 1;
    }
    for (p = 0; p < npeers; ++p) {
        if ((qpx_uct_xfer(socks[p], &addrs[p], sizeof(addrs[p]), 0) != 0) ||
            (uct_rkey_unpack(hub->comp, addrs[p].rkey, &rkeys[p]) != UCS_OK) ||
            ((eps[p] = ep_create(hub, &addrs[p])) == NULL)) {
            qpx_uct_report(0, "endpoint to peer %d", p);
            return 1;
        }
    }
    return 0;
}

/* run_fail's peers: the second one (FAIL_ROGUE) has a DCT of its own */
#define FAIL_ROGUE 1

static child_fn_t fail_child_of(int p)
{
    return (p == FAIL_ROGUE) ? rogue_child : fail_child;
}

static int run_fail(void)
{
    enum { HEALTHY, ROGUE = FAIL_ROGUE, CLOSER, VICTIM, NPEERS };
    uct_rkey_bundle_t rkeys[NPEERS];
    peer_addr_t addrs[NPEERS];
    int socks[NPEERS], pids[NPEERS], p, ok;
    uct_ep_h eps[NPEERS];
    double secs;
    node_t hub;

    if (hub_spawn(NPEERS, fail_child_of, &hub, socks, pids, addrs, rkeys,
                  eps) != 0) {
        return 1;
    }
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 1, "start");

    ok = expect_failure(&hub, eps[ROGUE], &addrs[ROGUE], rkeys[ROGUE].rkey,
                        &secs);
    qpx_uct_report(ok, "wrong DC key: endpoint failed through the handler after "
           "%.2f s", secs);
    qpx_uct_report(child_cmd(socks[ROGUE], CMD_CHECK, 0) == 1,
           "wrong DC key: nothing written at the peer");
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 2, "a wrong key");

    qpx_uct_report(child_cmd(socks[CLOSER], CMD_CLOSE, 0) == 1,
           "peer closed its interface");
    ok = expect_failure(&hub, eps[CLOSER], &addrs[CLOSER],
                        rkeys[CLOSER].rkey, &secs);
    qpx_uct_report(ok, "destroyed DCT: endpoint failed through the handler after "
           "%.2f s", secs);
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 3, "a destroyed DCT");

    kill(pids[VICTIM], SIGKILL);
    waitpid(pids[VICTIM], NULL, 0);
    ok = expect_failure(&hub, eps[VICTIM], &addrs[VICTIM],
                        rkeys[VICTIM].rkey, &secs);
    qpx_uct_report(ok, "killed peer: endpoint failed through the handler after "
           "%.2f s", secs);
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 4, "a killed peer");

    for (p = 0; p < NPEERS; ++p) {
        uct_ep_destroy(eps[p]);
        if (p != VICTIM) {
            int cmd = CMD_EXIT;

            qpx_uct_xfer(socks[p], &cmd, sizeof(cmd), 1);
            waitpid(pids[p], NULL, 0);
        }
    }
    return qpx_uct_nfail != 0;
}

/* ---------------------------------------------------------------- switch */

static child_fn_t switch_child_of(int p)
{
    (void)p;
    return switch_child;
}

/*
 * The hybrid (-x qpx) with peers that answer promotions, a pool of one RC QP
 * (UCX_QPX_RC_POOL_SIZE=1) and promotion at the first operation
 * (UCX_QPX_PROMOTE_THRESH=1), each set by the caller:
 *  - a peer killed before the promotion its first put starts: the request
 *    meets a dead peer; the endpoint fails through the handler;
 *  - a peer killed while its endpoint holds the RC QP: the next promotion
 *    (to the healthy peer) demotes it, and the demotion meets a dead peer;
 *    the endpoint fails through the handler;
 * and the healthy peer is served after each (put checked at the peer).
 */
static int run_switch(void)
{
    enum { HEALTHY, EARLY, HOT, NPEERS };
    uct_rkey_bundle_t rkeys[NPEERS];
    peer_addr_t addrs[NPEERS];
    int socks[NPEERS], pids[NPEERS], p, i, ok, before;
    uct_ep_h eps[NPEERS];
    double secs;
    node_t hub;

    if (hub_spawn(NPEERS, switch_child_of, &hub, socks, pids, addrs, rkeys,
                  eps) != 0) {
        return 1;
    }
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 1, "start");

    /* Killed before the promotion: its request goes to a dead peer */
    kill(pids[EARLY], SIGKILL);
    waitpid(pids[EARLY], NULL, 0);
    before = failed_eps;
    ok     = expect_failure(&hub, eps[EARLY], &addrs[EARLY],
                            rkeys[EARLY].rkey, &secs);
    qpx_uct_report(ok && (failed_eps == before + 1), "peer killed before its "
           "promotion: its endpoint (only) failed through the handler after "
           "%.2f s", secs);
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 2, "a peer killed before its promotion");

    /* The hot peer takes the pool's one RC QP: puts for half a second, by
     * then long on RC (the healthy peer's QP went back when the hot one
     * wanted it: a demotion, then a promotion, each a round trip) */
    secs = now_s() + 0.5;
    for (i = 0, ok = 1; ok && (now_s() < secs); ++i) {
        ok = (put8(&hub, eps[HOT], 100 + i, addrs[HOT].buf + 64,
                   rkeys[HOT].rkey) == UCS_OK) && (hub_flush(&hub, 10) == 0);
    }
    ok = ok && (child_cmd(socks[HOT], CMD_CHECK, 100 + i - 1) == 1);
    qpx_uct_report(ok, "hot peer served (%d puts in 0.5 s, the last checked)", i);

    /* Killed while it holds the RC QP: the healthy peer's promotion demotes
     * it, and its DEMOTE_REQ meets a dead peer */
    kill(pids[HOT], SIGKILL);
    waitpid(pids[HOT], NULL, 0);
    before = failed_eps;
    for (i = 0; (failed_eps == before) && (i < 50); ++i) {
        (void)put8(&hub, eps[HEALTHY], 1000 + i, addrs[HEALTHY].buf + 64,
                   rkeys[HEALTHY].rkey);
        (void)hub_flush(&hub, 1);
    }
    ok = wait_failure(&hub, before, 20, &secs);
    qpx_uct_report(ok && (failed_eps == before + 1), "peer killed holding the RC "
           "QP: its endpoint (only) failed through the handler during its "
           "demotion");
    check_healthy(&hub, eps[HEALTHY], &addrs[HEALTHY], rkeys[HEALTHY].rkey,
                  socks[HEALTHY], 3, "a peer killed during its demotion");

    for (p = 0; p < NPEERS; ++p) {
        uct_ep_destroy(eps[p]);
        if (p == HEALTHY) {
            int cmd = CMD_EXIT;

            qpx_uct_xfer(socks[p], &cmd, sizeof(cmd), 1);
            waitpid(pids[p], NULL, 0);
        }
    }
    return qpx_uct_nfail != 0;
}

int main(int argc, char **argv)
{
    int nprocs = 4, nifaces = 4, neps = 4096, opt, ret;
    const char *mode = "many";

    while ((opt = getopt(argc, argv, "m:p:i:e:d:x:")) != -1) {
        switch (opt) {
        case 'x': TL = optarg; break;
        case 'm': mode = optarg; break;
        case 'p': nprocs = atoi(optarg); break;
        case 'i': nifaces = atoi(optarg); break;
        case 'e': neps = atoi(optarg); break;
        case 'd': dev_name = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-m many|fail|switch] [-p procs] [-i ifaces] "
                    "[-e eps] [-d dev] [-x qpx_dc|qpx]\n", argv[0]);
            return 2;
        }
    }
    {
        uct_component_h comp;
        uct_md_h md;

        if (qpx_uct_md_open(TL, dev_name, &comp, &md) != 0) {
            printf("SKIP: %s not offered on %s\n", TL, dev_name);
            return 77;
        }
        uct_md_close(md);
    }
    ret = !strcmp(mode, "fail")   ? run_fail() :
          !strcmp(mode, "switch") ? run_switch() :
          run_many(nprocs, nifaces, neps);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (ret == 0) && (qpx_uct_nfail == 0) ? 0 : 1;
}
