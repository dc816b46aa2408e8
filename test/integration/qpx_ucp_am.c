/*
 * UCP active messages with a user header, every size class, payload
 * checked: two processes (fork; worker addresses over a socketpair), the
 * parent sends ITERS messages of each size with ucp_am_send_nbx and a
 * 16-byte header naming the message, the child's handler checks header
 * and payload (eager: in place; rendezvous: after ucp_am_recv_data_nbx)
 * and answers with its counts. Sizes cross each protocol: short, bcopy,
 * one zcopy fragment, several (eager zcopy fragments carry the user header
 * in an iov of their own), rendezvous.
 *
 * usage: qpx_ucp_am [ITERS] [quiet]   (transports: UCX_TLS)
 * quiet: the receiver does not progress (nor make its endpoint) until the
 * sender's first flush of its endpoint completed (or 30 s passed): the
 * wireup must be answered by the receiver's async progress (the
 * transports' UCT_CB_FLAG_ASYNC handlers), as when a peer computes; one
 * more PASS/FAIL says whether it was. Prints "PASS:"/"FAIL:" per size and "N passed, N failed"; exit 0
 * when all passed.
 */
#include "qpx_ucp_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AM_DATA 7
#define AM_DONE 8

static const size_t sizes[] = {0, 8, 200, 3000, 4081, 8192, 20000, 60000,
                               300000};
#define NUM_SIZES (sizeof(sizes) / sizeof(sizes[0]))

typedef struct {
    uint32_t seq;   /* message index, over all sizes */
    uint32_t size;
    uint64_t seed;
} am_hdr_t;

typedef struct {
    uint32_t ok[NUM_SIZES];
    uint32_t bad[NUM_SIZES];
    uint32_t received;
} am_counts_t;

static am_counts_t counts;      /* the receiver's */
static int done_received;       /* the sender's: the receiver's answer */
static unsigned rndv_pending;

static uint8_t pattern(uint64_t seed, size_t i)
{
    return (uint8_t)((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = pattern(seed, i);
    }
}

static int size_index(uint32_t size)
{
    unsigned i;

    for (i = 0; i < NUM_SIZES; ++i) {
        if (sizes[i] == size) {
            return (int)i;
        }
    }
    return -1;
}

/* A damaged message of size class k (an unknown size counts in class 0) */
static void count_bad(int k)
{
    counts.bad[(k < 0) ? 0 : k]++;
    counts.received++;
}

static void check(const am_hdr_t *hdr, const uint8_t *data, size_t length)
{
    int k = size_index(hdr->size);
    size_t i;
    int good;

    if (k < 0) {
        fprintf(stderr, "message %u: unknown size %u\n", hdr->seq, hdr->size);
        count_bad(k);
        return;
    }
    good = (length == hdr->size);
    for (i = 0; good && (i < length); ++i) {
        good = (data[i] == pattern(hdr->seed, i));
    }
    if (!good) {
        fprintf(stderr, "message %u (%u bytes): received %zu bytes, %s\n",
                hdr->seq, hdr->size, length,
                (length == hdr->size) ? "payload differs" : "wrong length");
        count_bad(k);
        return;
    }
    counts.ok[k]++;
    counts.received++;
}

typedef struct {
    am_hdr_t hdr;
    uint8_t  *buf;
} rndv_ctx_t;

static void rndv_done(void *request, ucs_status_t status, size_t length,
                      void *user_data)
{
    rndv_ctx_t *ctx = user_data;

    if (status == UCS_OK) {
        check(&ctx->hdr, ctx->buf, length);
    } else {
        fprintf(stderr, "message %u: receive failed: %s\n", ctx->hdr.seq,
                ucs_status_string(status));
        count_bad(size_index(ctx->hdr.size));
    }
    free(ctx->buf);
    free(ctx);
    --rndv_pending;
    ucp_request_free(request);
}

static ucs_status_t data_cb(void *arg, const void *header,
                            size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    ucp_worker_h worker = arg;
    ucp_request_param_t rp;
    rndv_ctx_t *ctx;
    am_hdr_t hdr;
    void *req;

    if (header_length != sizeof(hdr)) {
        fprintf(stderr, "header of %zu bytes, expected %zu\n", header_length,
                sizeof(hdr));
        count_bad(-1);
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        check(&hdr, data, length);
        return UCS_OK;
    }

    ctx      = malloc(sizeof(*ctx));
    ctx->hdr = hdr;
    ctx->buf = malloc(length ? length : 1);
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.recv_am   = rndv_done;
    rp.user_data    = ctx;
    ++rndv_pending;
    req = ucp_am_recv_data_nbx(worker, data, ctx->buf, length, &rp);
    if (UCS_PTR_IS_ERR(req)) {
        rndv_done(NULL, UCS_PTR_STATUS(req), 0, ctx);
    } else if (req == NULL) {
        /* completed in place: the callback is not called */
        check(&ctx->hdr, ctx->buf, length);
        free(ctx->buf);
        free(ctx);
        --rndv_pending;
    }
    return UCS_OK;
}

static ucs_status_t done_cb(void *arg, const void *header,
                            size_t header_length, void *data, size_t length,
                            const ucp_am_recv_param_t *param)
{
    (void)arg;
    (void)header;
    (void)header_length;
    (void)param;
    if (length == sizeof(counts)) {
        memcpy(&counts, data, sizeof(counts));
        done_received = 1;
    }
    return UCS_OK;
}

static int set_handler(ucp_worker_h worker, unsigned id,
                       ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t p;

    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG |
                   UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id         = id;
    p.cb         = cb;
    p.arg        = worker;
    p.flags      = UCP_AM_FLAG_WHOLE_MSG;
    return ucp_worker_set_am_recv_handler(worker, &p) == UCS_OK;
}

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + (ts.tv_nsec * 1e-9);
}

/* The sender's first flush while the receiver does not progress: whether
 * it completed within 30 s (a liveness bound, not a measure); it is waited
 * for to the end either way, after the receiver was let go (fd) */
static int quiet_flush(ucp_worker_h worker, ucp_ep_h ep, int fd)
{
    double deadline = now_sec() + 30;
    ucp_request_param_t rp;
    ucs_status_t status;
    int done;
    char c = 'q';
    void *req;

    memset(&rp, 0, sizeof(rp));
    req = ucp_ep_flush_nbx(ep, &rp);
    if (UCS_PTR_IS_ERR(req)) {
        status = UCS_PTR_STATUS(req);
    } else {
        status = (req == NULL) ? UCS_OK : UCS_INPROGRESS;
        while ((status == UCS_INPROGRESS) && (now_sec() < deadline)) {
            ucp_worker_progress(worker);
            status = ucp_request_check_status(req);
        }
    }
    done = (status == UCS_OK);
    if (write(fd, &c, 1) != 1) {
        return 0;
    }
    if (status == UCS_INPROGRESS) {
        status = qpx_ucp_wait(worker, req);
        req    = NULL;
    }
    if ((req != NULL) && !UCS_PTR_IS_ERR(req)) {
        ucp_request_free(req);
    }
    printf("%s: the endpoint wired up while the receiver did not progress "
           "(%s)\n", done ? "PASS" : "FAIL",
           done ? "flushed" : ucs_status_string(status));
    return done;
}

static int xfer(int fd, void *buf, size_t len, int out)
{
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = out ? write(fd, (char*)buf + done, len - done) :
                  read(fd, (char*)buf + done, len - done);
        if (n <= 0) {
            return 0;
        }
        done += n;
    }
    return 1;
}

/* Worker addresses over the socket: the peer's, malloc'ed */
static void *exchange(int fd, ucp_worker_h worker)
{
    ucp_address_t *addr;
    size_t len, peer_len;
    void *peer;

    if (ucp_worker_get_address(worker, &addr, &len) != UCS_OK) {
        return NULL;
    }
    if (!xfer(fd, &len, sizeof(len), 1) || !xfer(fd, addr, len, 1) ||
        !xfer(fd, &peer_len, sizeof(peer_len), 0)) {
        return NULL;
    }
    ucp_worker_release_address(worker, addr);
    peer = malloc(peer_len);
    if ((peer == NULL) || !xfer(fd, peer, peer_len, 0)) {
        free(peer);
        return NULL;
    }
    return peer;
}

/* A setup step failed: said, and the process's exit code */
static int setup_failed(const char *what)
{
    fprintf(stderr, "%s failed\n", what);
    return 2;
}

static int run(int fd, int sender, unsigned iters, int quiet)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_ep_params_t eparams;
    ucp_request_param_t rp;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h ep;
    void *peer, *req;
    uint8_t *buf;
    am_hdr_t hdr;
    unsigned i, k, seq = 0, passed = 0, failed = 0;
    ucs_status_t status;
    char c = 0;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM;
    if (ucp_init(&params, NULL, &context) != UCS_OK) {
        return setup_failed("ucp_init");
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(context, &wparams, &worker) != UCS_OK) {
        return setup_failed("ucp_worker_create");
    }
    if (!set_handler(worker, AM_DATA, data_cb) ||
        !set_handler(worker, AM_DONE, done_cb)) {
        return setup_failed("ucp_worker_set_am_recv_handler");
    }
    peer = exchange(fd, worker);
    if (peer == NULL) {
        return setup_failed("address exchange");
    }
    /* quiet: the receiver makes its endpoint after the wait (with one
     * made before, UCP's connection request crosses the sender's, and the
     * side that answers sends its acknowledgement from its progress only,
     * whatever the transports: UCX's rc_verbs,ud_verbs too) */
    if (quiet && !sender && !xfer(fd, &c, 1, 0)) {
        return setup_failed("quiet wait");
    }
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer;
    if (ucp_ep_create(worker, &eparams, &ep) != UCS_OK) {
        return setup_failed("ucp_ep_create");
    }
    if (quiet && sender) {
        if (quiet_flush(worker, ep, fd)) {
            ++passed;
        } else {
            ++failed;
        }
    }

    memset(&rp, 0, sizeof(rp));
    if (sender) {
        buf = malloc(sizes[NUM_SIZES - 1]);
        for (k = 0; k < NUM_SIZES; ++k) {
            for (i = 0; i < iters; ++i) {
                hdr.seq  = seq++;
                hdr.size = sizes[k];
                hdr.seed = (uint64_t)seq * 1000003u + k;
                fill(buf, sizes[k], hdr.seed);
                req    = ucp_am_send_nbx(ep, AM_DATA, &hdr, sizeof(hdr), buf,
                                         sizes[k], &rp);
                status = qpx_ucp_wait(worker, req);
                if (status != UCS_OK) {
                    fprintf(stderr, "ucp_am_send_nbx(%zu bytes): %s\n",
                            sizes[k], ucs_status_string(status));
                    return 1;
                }
            }
        }
        while (!done_received) {
            ucp_worker_progress(worker);
        }
        for (k = 0; k < NUM_SIZES; ++k) {
            if ((counts.ok[k] == iters) && (counts.bad[k] == 0)) {
                printf("PASS: %zu-byte AMs with a user header: %u intact\n",
                       sizes[k], iters);
                ++passed;
            } else {
                printf("FAIL: %zu-byte AMs with a user header: %u intact, "
                       "%u damaged of %u\n", sizes[k], counts.ok[k],
                       counts.bad[k], iters);
                ++failed;
            }
        }
        free(buf);
    } else {
        while ((counts.received < iters * NUM_SIZES) || rndv_pending) {
            ucp_worker_progress(worker);
        }
        req    = ucp_am_send_nbx(ep, AM_DONE, NULL, 0, &counts,
                                 sizeof(counts), &rp);
        status = qpx_ucp_wait(worker, req);
        if (status != UCS_OK) {
            fprintf(stderr, "answer: %s\n", ucs_status_string(status));
            return 1;
        }
    }

    /* Both sides done with the data before either endpoint goes */
    if (!xfer(fd, &c, 1, 1) || !xfer(fd, &c, 1, 0)) {
        fprintf(stderr, "final handshake failed\n");
    }
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    qpx_ucp_wait(worker, ucp_ep_close_nbx(ep, &rp));
    free(peer);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    if (sender) {
        printf("%u passed, %u failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned iters = (argc > 1) ? (unsigned)atoi(argv[1]) : 20;
    int quiet      = (argc > 2) && !strcmp(argv[2], "quiet");
    int sv[2], status, ret;
    pid_t pid;

    if ((iters == 0) || (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)) {
        fprintf(stderr, "usage: %s [ITERS > 0]\n", argv[0]);
        return 2;
    }
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        close(sv[0]);
        _exit(run(sv[1], 0, iters, quiet));
    }
    close(sv[1]);
    ret = run(sv[0], 1, iters, quiet);
    if ((waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "receiver failed (status 0x%x)\n", status);
        return ret ? ret : 1;
    }
    return ret;
}
