/*
 * Connection setup between two processes: how long one connection takes
 * and how many are made per second, for N connections kept open together.
 * Prints, never asserts (cm-bench.sh runs it).
 *
 *   cm_connect_bench MODE -s -p PORT -n N            the passive side
 *   cm_connect_bench MODE -c HOST -p PORT -n N       the active side
 *
 * MODE
 *   rdmacm      librdmacm alone: one connection is rdma_resolve_addr,
 *               rdma_resolve_route, rdma_create_qp (RC, CQs by the CM),
 *               rdma_connect, until RDMA_CM_EVENT_ESTABLISHED
 *   ucp-cm      UCP's client/server flow (ucp_listener, an endpoint by
 *               sockaddr through UCX's connection manager): one connection
 *               is ucp_ep_create until the reply to a first active message
 *   ucp-wireup  UCP's worker-address flow (the address over a TCP socket,
 *               wireup through the transports): ucp_ep_create until the
 *               reply to a first active message
 * The UCP modes end on a round trip because a UCP endpoint is usable
 * before it is connected: the reply proves the peer's side exists.
 *
 * The active side prints one line:
 *   MODE: N connections, T ms, R conn/s, median L us, p99 P us
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <ucp/api/ucp.h>

#define BENCH_AM_PING  1
#define BENCH_AM_PONG  2
#define BENCH_AM_DONE  3
#define BENCH_TIMEOUT  2000  /* ms for address and route resolution */

typedef struct bench_args {
    const char *mode;
    const char *host;    /* NULL: passive side */
    int        port;
    int        n;
} bench_args_t;


static double bench_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static void bench_report(const bench_args_t *args, double *lat, double total)
{
    qsort(lat, args->n, sizeof(*lat), bench_cmp_double);
    printf("%s: %d connections, %.1f ms, %.0f conn/s, median %.1f us, "
           "p99 %.1f us\n", args->mode, args->n, total / 1e3,
           args->n / (total / 1e6), lat[args->n / 2],
           lat[(args->n * 99) / 100 < args->n ? (args->n * 99) / 100 :
                                                args->n - 1]);
}

/* ------------------------------------------------------------ rdmacm */

static int bench_cm_wait(struct rdma_event_channel *ch,
                         enum rdma_cm_event_type want)
{
    struct rdma_cm_event *ev;
    enum rdma_cm_event_type got;
    int status;

    if (rdma_get_cm_event(ch, &ev) != 0) {
        perror("rdma_get_cm_event");
        return -1;
    }
    got    = ev->event;
    status = ev->status;
    rdma_ack_cm_event(ev);
    if (got != want) {
        fprintf(stderr, "expected %s, got %s (status %d)\n",
                rdma_event_str(want), rdma_event_str(got), status);
        return -1;
    }
    return 0;
}

static void bench_cm_qp_attr(struct ibv_qp_init_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_type          = IBV_QPT_RC;
    attr->cap.max_send_wr  = 16;
    attr->cap.max_recv_wr  = 16;
    attr->cap.max_send_sge = 1;
    attr->cap.max_recv_sge = 1;
}

static int bench_rdmacm_server(const bench_args_t *args)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct rdma_conn_param param = {.responder_resources = 1,
                                    .initiator_depth = 1};
    struct ibv_qp_init_attr attr;
    struct rdma_cm_id *listen_id, *id;
    struct rdma_cm_event *ev;
    enum rdma_cm_event_type type;
    int closed = 0;

    if ((ch == NULL) || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP)) {
        perror("rdma_create_id");
        return -1;
    }
    sin.sin_port = htons(args->port);
    if (rdma_bind_addr(listen_id, (struct sockaddr*)&sin) ||
        rdma_listen(listen_id, 1024)) {
        perror("rdma_bind_addr/rdma_listen");
        return -1;
    }
    while (closed < args->n) {
        if (rdma_get_cm_event(ch, &ev) != 0) {
            perror("rdma_get_cm_event");
            return -1;
        }
        type = ev->event;
        id   = ev->id;
        rdma_ack_cm_event(ev);
        switch (type) {
        case RDMA_CM_EVENT_CONNECT_REQUEST:
            bench_cm_qp_attr(&attr);
            if (rdma_create_qp(id, NULL, &attr) || rdma_accept(id, &param)) {
                perror("rdma_create_qp/rdma_accept");
                return -1;
            }
            break;
        case RDMA_CM_EVENT_DISCONNECTED:
            rdma_destroy_qp(id);
            rdma_destroy_id(id);
            ++closed;
            break;
        case RDMA_CM_EVENT_ESTABLISHED:
            break;
        default:
            fprintf(stderr, "server: unexpected %s\n", rdma_event_str(type));
            return -1;
        }
    }
    rdma_destroy_id(listen_id);
    rdma_destroy_event_channel(ch);
    return 0;
}

static int bench_rdmacm_client(const bench_args_t *args)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_conn_param param  = {.responder_resources = 1,
                                     .initiator_depth = 1,
                                     .retry_count = 7};
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct rdma_cm_id **ids = calloc(args->n, sizeof(*ids));
    double *lat = calloc(args->n, sizeof(*lat));
    struct ibv_qp_init_attr attr;
    double start, t0;
    int i;

    if ((ch == NULL) || (ids == NULL) || (lat == NULL) ||
        (inet_pton(AF_INET, args->host, &sin.sin_addr) != 1)) {
        fprintf(stderr, "client: setup failed (host %s)\n", args->host);
        return -1;
    }
    sin.sin_port = htons(args->port);
    start = bench_now_us();
    for (i = 0; i < args->n; ++i) {
        t0 = bench_now_us();
        if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP) ||
            rdma_resolve_addr(ids[i], NULL, (struct sockaddr*)&sin,
                              BENCH_TIMEOUT) ||
            bench_cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED) ||
            rdma_resolve_route(ids[i], BENCH_TIMEOUT) ||
            bench_cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) {
            fprintf(stderr, "connection %d: resolve failed\n", i);
            return -1;
        }
        bench_cm_qp_attr(&attr);
        if (rdma_create_qp(ids[i], NULL, &attr) ||
            rdma_connect(ids[i], &param) ||
            bench_cm_wait(ch, RDMA_CM_EVENT_ESTABLISHED)) {
            fprintf(stderr, "connection %d: connect failed\n", i);
            return -1;
        }
        lat[i] = bench_now_us() - t0;
    }
    bench_report(args, lat, bench_now_us() - start);

    for (i = 0; i < args->n; ++i) {
        rdma_disconnect(ids[i]);
        bench_cm_wait(ch, RDMA_CM_EVENT_DISCONNECTED);
        rdma_destroy_qp(ids[i]);
        rdma_destroy_id(ids[i]);
    }
    rdma_destroy_event_channel(ch);
    free(ids);
    free(lat);
    return 0;
}

/* --------------------------------------------------------------- UCP */

typedef struct bench_ucp {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      *eps;     /* the passive side's accepted endpoints */
    int           neps;
    int           pongs;
    int           done;
    ucp_listener_h listener;
    uint64_t      pong[64]; /* reply payloads, valid until sent */
} bench_ucp_t;

static bench_ucp_t bench_ucp;


/* A peer that closed first: nothing to do */
static void bench_ucp_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
}

static void bench_ucp_ep_params(ucp_ep_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->field_mask      = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params->err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params->err_handler.cb  = bench_ucp_err_cb;
}

static ucs_status_t bench_ucp_ping_cb(void *arg, const void *header,
                                      size_t header_length, void *data,
                                      size_t length,
                                      const ucp_am_recv_param_t *param)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};
    uint64_t *slot;
    void *req;

    (void)arg; (void)header; (void)header_length;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        (length != sizeof(uint64_t))) {
        fprintf(stderr, "server: a ping without reply endpoint or of %zu "
                "bytes\n", length);
        return UCS_OK;
    }
    /* the client waits for each reply before its next ping: one slot of
     * the ring is enough, 64 leave room */
    slot = &bench_ucp.pong[*(const uint64_t*)data % 64];
    memcpy(slot, data, sizeof(*slot));
    req = ucp_am_send_nbx(param->reply_ep, BENCH_AM_PONG, NULL, 0, slot,
                          sizeof(*slot), &rp);
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "server: reply failed: %s\n",
                ucs_status_string(UCS_PTR_STATUS(req)));
    } else if (req != NULL) {
        ucp_request_free(req);
    }
    return UCS_OK;
}

static ucs_status_t bench_ucp_pong_cb(void *arg, const void *header,
                                      size_t header_length, void *data,
                                      size_t length,
                                      const ucp_am_recv_param_t *param)
{
    (void)arg; (void)header; (void)header_length; (void)param;
    if ((length == sizeof(uint64_t)) &&
        (*(const uint64_t*)data == (uint64_t)bench_ucp.pongs)) {
        ++bench_ucp.pongs;
    } else {
        fprintf(stderr, "client: reply %d carries the wrong value\n",
                bench_ucp.pongs);
    }
    return UCS_OK;
}

static ucs_status_t bench_ucp_done_cb(void *arg, const void *header,
                                      size_t header_length, void *data,
                                      size_t length,
                                      const ucp_am_recv_param_t *param)
{
    (void)arg; (void)header; (void)header_length; (void)data; (void)length;
    (void)param;
    bench_ucp.done = 1;
    return UCS_OK;
}

static int bench_ucp_init(void)
{
    ucp_params_t params            = {0};
    ucp_worker_params_t wparams    = {0};
    ucp_am_handler_param_t hparams = {0};
    ucp_am_recv_callback_t cbs[]   = {bench_ucp_ping_cb, bench_ucp_pong_cb,
                                      bench_ucp_done_cb};
    unsigned i;

    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = UCP_FEATURE_AM;
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if ((ucp_init(&params, NULL, &bench_ucp.context) != UCS_OK) ||
        (ucp_worker_create(bench_ucp.context, &wparams,
                           &bench_ucp.worker) != UCS_OK)) {
        fprintf(stderr, "ucp_init/ucp_worker_create failed\n");
        return -1;
    }
    for (i = 0; i < 3; ++i) {
        hparams.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                             UCP_AM_HANDLER_PARAM_FIELD_CB;
        hparams.id         = BENCH_AM_PING + i;
        hparams.cb         = cbs[i];
        if (ucp_worker_set_am_recv_handler(bench_ucp.worker,
                                           &hparams) != UCS_OK) {
            return -1;
        }
    }
    return 0;
}

/* Wait for a request to complete; 0 on success */
static int bench_ucp_wait(void *req)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        return -1;
    }
    if (req == NULL) {
        return 0;
    }
    do {
        ucp_worker_progress(bench_ucp.worker);
        status = ucp_request_check_status(req);
    } while (status == UCS_INPROGRESS);
    ucp_request_free(req);
    return (status == UCS_OK) ? 0 : -1;
}

static void bench_ucp_close_all(ucp_ep_h *eps, int n)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};
    int i;

    /* Flush mode, as UCX's examples close: a forced close leaves the
     * transports' discards running, and UCX 1.13 asserts in
     * ucp_worker_destroy on an endpoint whose discard has not finished */

    for (i = 0; i < n; ++i) {
        bench_ucp_wait(ucp_ep_close_nbx(eps[i], &rp));
    }
}

static void bench_ucp_conn_cb(ucp_conn_request_h conn_request, void *arg)
{
    ucp_ep_params_t params;
    int max = *(const int*)arg;

    bench_ucp_ep_params(&params);
    params.field_mask  |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = conn_request;
    if ((bench_ucp.neps >= max) ||
        (ucp_ep_create(bench_ucp.worker, &params,
                       &bench_ucp.eps[bench_ucp.neps]) != UCS_OK)) {
        fprintf(stderr, "server: cannot accept connection %d\n",
                bench_ucp.neps);
        ucp_listener_reject(bench_ucp.listener, conn_request);
        return;
    }
    ++bench_ucp.neps;
}

/* The worker address to the client over a TCP socket */
static int bench_ucp_send_address(int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_ANY)};
    ucp_address_t *addr;
    size_t len;
    uint32_t len32;
    int lfd, fd, one = 1, ret = -1;

    if (ucp_worker_get_address(bench_ucp.worker, &addr, &len) != UCS_OK) {
        return -1;
    }
    len32        = len;
    sin.sin_port = htons(port);
    lfd          = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((bind(lfd, (struct sockaddr*)&sin, sizeof(sin)) == 0) &&
        (listen(lfd, 1) == 0) && ((fd = accept(lfd, NULL, NULL)) >= 0)) {
        if ((send(fd, &len32, sizeof(len32), 0) == sizeof(len32)) &&
            (send(fd, addr, len, 0) == (ssize_t)len)) {
            ret = 0;
        }
        close(fd);
    } else {
        perror("server: address socket");
    }
    close(lfd);
    ucp_worker_release_address(bench_ucp.worker, addr);
    return ret;
}

static ucp_address_t *bench_ucp_recv_address(const char *host, int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    ucp_address_t *addr;
    uint32_t len;
    int fd, tries;

    sin.sin_port = htons(port);
    inet_pton(AF_INET, host, &sin.sin_addr);
    for (tries = 0; tries < 100; ++tries) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr*)&sin, sizeof(sin)) == 0) {
            break;
        }
        close(fd);
        fd = -1;
        usleep(100000);
    }
    if ((fd < 0) ||
        (recv(fd, &len, sizeof(len), MSG_WAITALL) != sizeof(len)) ||
        ((addr = malloc(len)) == NULL) ||
        (recv(fd, addr, len, MSG_WAITALL) != (ssize_t)len)) {
        fprintf(stderr, "client: no worker address from %s:%d\n", host, port);
        return NULL;
    }
    close(fd);
    return addr;
}

static int bench_ucp_server(const bench_args_t *args, int sockaddr)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_ANY)};
    ucp_listener_params_t lparams = {0};

    bench_ucp.eps = calloc(args->n, sizeof(*bench_ucp.eps));
    if ((bench_ucp.eps == NULL) || (bench_ucp_init() != 0)) {
        return -1;
    }
    if (sockaddr) {
        sin.sin_port                = htons(args->port);
        lparams.field_mask          = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                                      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lparams.sockaddr.addr       = (struct sockaddr*)&sin;
        lparams.sockaddr.addrlen    = sizeof(sin);
        lparams.conn_handler.cb     = bench_ucp_conn_cb;
        lparams.conn_handler.arg    = (void*)&args->n;
        if (ucp_listener_create(bench_ucp.worker, &lparams,
                                &bench_ucp.listener) != UCS_OK) {
            fprintf(stderr, "server: ucp_listener_create failed\n");
            return -1;
        }
    } else if (bench_ucp_send_address(args->port) != 0) {
        return -1;
    }
    while (!bench_ucp.done) {
        ucp_worker_progress(bench_ucp.worker);
    }
    bench_ucp_close_all(bench_ucp.eps, bench_ucp.neps);
    if (bench_ucp.listener != NULL) {
        ucp_listener_destroy(bench_ucp.listener);
    }
    ucp_worker_destroy(bench_ucp.worker);
    ucp_cleanup(bench_ucp.context);
    return 0;
}

static int bench_ucp_client(const bench_args_t *args, int sockaddr)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags        = UCP_AM_SEND_FLAG_REPLY};
    ucp_ep_h *eps   = calloc(args->n, sizeof(*eps));
    double *lat     = calloc(args->n, sizeof(*lat));
    uint64_t *seq   = calloc(args->n, sizeof(*seq));
    ucp_address_t *addr = NULL;
    ucp_ep_params_t params;
    double start, t0;
    int i;

    if ((eps == NULL) || (lat == NULL) || (seq == NULL) ||
        (bench_ucp_init() != 0) ||
        (inet_pton(AF_INET, args->host, &sin.sin_addr) != 1)) {
        return -1;
    }
    sin.sin_port = htons(args->port);
    if (!sockaddr &&
        ((addr = bench_ucp_recv_address(args->host, args->port)) == NULL)) {
        return -1;
    }
    start = bench_now_us();
    for (i = 0; i < args->n; ++i) {
        t0 = bench_now_us();
        bench_ucp_ep_params(&params);
        if (sockaddr) {
            params.field_mask       |= UCP_EP_PARAM_FIELD_FLAGS |
                                       UCP_EP_PARAM_FIELD_SOCK_ADDR;
            params.flags             = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
            params.sockaddr.addr     = (struct sockaddr*)&sin;
            params.sockaddr.addrlen  = sizeof(sin);
        } else {
            params.field_mask       |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
            params.address           = addr;
        }
        if (ucp_ep_create(bench_ucp.worker, &params, &eps[i]) != UCS_OK) {
            fprintf(stderr, "connection %d: ucp_ep_create failed\n", i);
            return -1;
        }
        seq[i] = i;
        if (bench_ucp_wait(ucp_am_send_nbx(eps[i], BENCH_AM_PING, NULL, 0,
                                           &seq[i], sizeof(seq[i]),
                                           &rp)) != 0) {
            fprintf(stderr, "connection %d: ping failed\n", i);
            return -1;
        }
        while (bench_ucp.pongs <= i) {
            ucp_worker_progress(bench_ucp.worker);
            if (bench_now_us() - t0 > 30e6) {
                fprintf(stderr, "connection %d: no reply in 30 s\n", i);
                return -1;
            }
        }
        lat[i] = bench_now_us() - t0;
    }
    bench_report(args, lat, bench_now_us() - start);

    rp.flags = 0;
    bench_ucp_wait(ucp_am_send_nbx(eps[0], BENCH_AM_DONE, NULL, 0, NULL, 0,
                                   &rp));
    bench_ucp_wait(ucp_ep_flush_nbx(eps[0], &rp));
    bench_ucp_close_all(eps, args->n);
    ucp_worker_destroy(bench_ucp.worker);
    ucp_cleanup(bench_ucp.context);
    free(addr);
    free(eps);
    free(lat);
    free(seq);
    return 0;
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    bench_args_t args = {.port = 13337, .n = 1};
    int sockaddr, c;

    if (argc < 2) {
        goto usage;
    }
    args.mode = argv[1];
    optind    = 2;
    while ((c = getopt(argc, argv, "sc:p:n:")) != -1) {
        switch (c) {
        case 's': args.host = NULL; break;
        case 'c': args.host = optarg; break;
        case 'p': args.port = atoi(optarg); break;
        case 'n': args.n    = atoi(optarg); break;
        default: goto usage;
        }
    }
    if ((args.n < 1) || (args.port < 1) || (args.port > 65535)) {
        goto usage;
    }
    if (!strcmp(args.mode, "rdmacm")) {
        return (args.host ? bench_rdmacm_client(&args) :
                            bench_rdmacm_server(&args)) ? 1 : 0;
    }
    if (!strcmp(args.mode, "ucp-cm") || !strcmp(args.mode, "ucp-wireup")) {
        sockaddr = !strcmp(args.mode, "ucp-cm");
        return (args.host ? bench_ucp_client(&args, sockaddr) :
                            bench_ucp_server(&args, sockaddr)) ? 1 : 0;
    }
usage:
    fprintf(stderr, "usage: %s rdmacm|ucp-cm|ucp-wireup (-s | -c HOST) "
            "[-p PORT] [-n CONNECTIONS]\n", argv[0]);
    return 2;
}
