/*
 * UCP failover over a port that really goes down (UCX 1.22's
 * UCP_ERR_HANDLING_MODE_FAILOVER): two processes on two softverbs devices,
 * the client putting, getting back and sending active messages to the
 * server, every byte checked. Midway the client takes the second device's
 * port down (softverbs_set_port_state: no packet leaves or enters it, so
 * RC requests on it end with retry exceeded once their retries run out).
 * UCP must carry on over the lanes of the first device: every operation
 * after the port went down completes, moves the right bytes, and the
 * endpoint's error handler is not called. Built against a UCX tree that
 * has the failover mode (contrib/ucx-failover.sh); prints one PASS/FAIL
 * line per check and "N passed, N failed".
 *
 *   qpx_ucp_failover ROUNDS_BEFORE ROUNDS_AFTER [peer]
 *
 * With "peer" the endpoint asks for UCP_ERR_HANDLING_MODE_PEER instead,
 * the control: the same port failure must then fail the endpoint (its
 * error handler called, a round failing), which shows that the port taken
 * down carried the endpoint's traffic.
 */
#include "qpx_ucp_util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FO_BUF_LEN  (256 * 1024)
#define FO_PUT_LEN  (64 * 1024)   /* above the rendezvous/zcopy thresholds */
#define FO_AM_LEN   (16 * 1024)
#define FO_AM_ID    7

/* The device whose port goes down: the one UCP puts the AM lane and the
 * single-lane put and get protocols on, softverbs0 (softverbs1 holds only
 * the second RMA bandwidth lane, which those protocols leave idle) */
static const char *fo_down_dev = "softverbs0";
static int fo_passed, fo_failed;

static void fo_check(int ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fo_check(int ok, const char *fmt, ...)
{
    va_list ap;

    printf("%s: ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    ok ? ++fo_passed : ++fo_failed;
}

static void fo_die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "qpx_ucp_failover: %s: %s\n", what,
            ucs_status_string(status));
    exit(2);
}

/* pipes: whole messages or exit */
static void fo_write(int fd, const void *buf, size_t len)
{
    if (write(fd, &len, sizeof(len)) != sizeof(len) ||
        write(fd, buf, len) != (ssize_t)len) {
        perror("qpx_ucp_failover: write");
        exit(2);
    }
}

static void *fo_read(int fd, size_t *len_p)
{
    size_t len, got = 0;
    ssize_t n;
    char *buf;

    if (read(fd, &len, sizeof(len)) != sizeof(len)) {
        fprintf(stderr, "qpx_ucp_failover: peer gone\n");
        exit(2);
    }
    buf = malloc(len ? len : 1);
    while (got < len) {
        n = read(fd, buf + got, len - got);
        if (n <= 0) {
            fprintf(stderr, "qpx_ucp_failover: short message\n");
            exit(2);
        }
        got += n;
    }
    if (len_p != NULL) {
        *len_p = len;
    }
    return buf;
}

static void fo_init(ucp_context_h *ctx_p, ucp_worker_h *worker_p)
{
    ucp_params_t params         = {0};
    ucp_worker_params_t wparams = {0};
    ucs_status_t status;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    status            = ucp_init(&params, NULL, ctx_p);
    if (status != UCS_OK) {
        fo_die("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status              = ucp_worker_create(*ctx_p, &wparams, worker_p);
    if (status != UCS_OK) {
        fo_die("ucp_worker_create", status);
    }
}

static void fo_fill(uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
    }
}

static size_t fo_bad(const uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 9))) {
            return i + 1;
        }
    }
    return 0;
}

/* ---- server: memory to put into and get from, and an AM checker ---- */

typedef struct {
    unsigned received;
    unsigned bad;
} fo_am_count_t;

static ucs_status_t fo_am_cb(void *arg, const void *header,
                             size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param)
{
    fo_am_count_t *count = arg;
    unsigned seed;

    if ((header_length != sizeof(seed)) || (length != FO_AM_LEN) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        ++count->bad; /* FO_AM_LEN is sent eagerly: data is here */
        return UCS_OK;
    }
    memcpy(&seed, header, sizeof(seed));
    count->bad += (fo_bad(data, length, seed) != 0);
    ++count->received;
    return UCS_OK;
}

static int fo_server(int rfd, int wfd)
{
    ucp_mem_map_params_t mparams = {0};
    ucp_am_handler_param_t aparams = {0};
    fo_am_count_t count = {0, 0};
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len, rkey_len;
    ucp_mem_h memh;
    void *rkey_buf, *buf;
    uint64_t remote;
    ucs_status_t status;
    ssize_t n;
    char done;

    fo_init(&ctx, &worker);
    buf = aligned_alloc(4096, FO_BUF_LEN);
    memset(buf, 0, FO_BUF_LEN);
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = buf;
    mparams.length     = FO_BUF_LEN;
    status = ucp_mem_map(ctx, &mparams, &memh);
    if (status != UCS_OK) {
        fo_die("ucp_mem_map", status);
    }
    status = ucp_rkey_pack(ctx, memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        fo_die("ucp_rkey_pack", status);
    }
    aparams.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                         UCP_AM_HANDLER_PARAM_FIELD_CB |
                         UCP_AM_HANDLER_PARAM_FIELD_ARG;
    aparams.id         = FO_AM_ID;
    aparams.cb         = fo_am_cb;
    aparams.arg        = &count;
    status = ucp_worker_set_am_recv_handler(worker, &aparams);
    if (status != UCS_OK) {
        fo_die("ucp_worker_set_am_recv_handler", status);
    }
    status = ucp_worker_get_address(worker, &addr, &addr_len);
    if (status != UCS_OK) {
        fo_die("ucp_worker_get_address", status);
    }
    remote = (uintptr_t)buf;
    fo_write(wfd, addr, addr_len);
    fo_write(wfd, rkey_buf, rkey_len);
    fo_write(wfd, &remote, sizeof(remote));
    ucp_worker_release_address(worker, addr);
    ucp_rkey_buffer_release(rkey_buf);

    /* progress until the client says it is done (one byte, non-blocking
     * read between progress calls) */
    for (;;) {
        ucp_worker_progress(worker);
        n = read(rfd, &done, 1);
        if (n == 1) {
            break;
        }
        if (n == 0) {
            fprintf(stderr, "qpx_ucp_failover: the client is gone\n");
            exit(2);
        }
    }
    fo_write(wfd, &count, sizeof(count));
    /* the client closes first: keep answering until it has */
    while (read(rfd, &done, 1) != 0) {
        ucp_worker_progress(worker);
    }
    ucp_mem_unmap(ctx, memh);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    free(buf);
    return 0;
}

/* ---- client ---- */

static unsigned fo_errors;
static ucs_status_t fo_error_status = UCS_OK;

static void fo_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ++fo_errors;
    fo_error_status = status;
}

/* One round: put a pattern, flush, get it back into a cleared buffer,
 * check it; send an AM of another pattern. Returns what failed, or NULL */
static const char *fo_round(ucp_worker_h worker, ucp_ep_h ep, ucp_rkey_h rkey,
                            uint64_t remote, uint8_t *src, uint8_t *dst,
                            unsigned seed)
{
    ucp_request_param_t rp = {0};
    uint64_t off = (uint64_t)(seed % 3) * FO_PUT_LEN;

    fo_fill(src, FO_PUT_LEN, seed);
    if (qpx_ucp_wait(worker, ucp_put_nbx(ep, src, FO_PUT_LEN, remote + off, rkey,
                                    &rp)) != UCS_OK) {
        return "put";
    }
    if (qpx_ucp_wait(worker, ucp_ep_flush_nbx(ep, &rp)) != UCS_OK) {
        return "flush";
    }
    memset(dst, 0, FO_PUT_LEN);
    if (qpx_ucp_wait(worker, ucp_get_nbx(ep, dst, FO_PUT_LEN, remote + off, rkey,
                                    &rp)) != UCS_OK) {
        return "get";
    }
    if (fo_bad(dst, FO_PUT_LEN, seed) != 0) {
        return "data read back";
    }
    fo_fill(src, FO_AM_LEN, seed + 1000);
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags        = UCP_AM_SEND_FLAG_EAGER;
    if (qpx_ucp_wait(worker, ucp_am_send_nbx(ep, FO_AM_ID, &(unsigned){seed + 1000},
                                        sizeof(unsigned), src, FO_AM_LEN,
                                        &rp)) != UCS_OK) {
        return "am";
    }
    return NULL;
}

static int fo_client(int rfd, int wfd, unsigned before, unsigned after,
                     int peer_mode)
{
    int (*set_port)(const char*, unsigned, int);
    ucp_ep_params_t eparams = {0};
    void *lib;
    ucp_request_param_t rp  = {0};
    unsigned i, rounds = 0, sent;
    fo_am_count_t count;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_rkey_h rkey;
    ucp_ep_h ep;
    void *addr, *rkey_buf, *remote_p, *count_p;
    const char *what = NULL;
    uint8_t *src, *dst;
    ucs_status_t status;
    uint64_t remote;

    /* softverbs' libibverbs (UCX's modules load it, locally) */
    lib      = dlopen("libibverbs.so.1", RTLD_NOW);
    set_port = (lib == NULL) ? NULL :
               (int (*)(const char*, unsigned, int))
               dlsym(lib, "softverbs_set_port_state");
    if (set_port == NULL) {
        fprintf(stderr, "qpx_ucp_failover: softverbs_set_port_state not "
                "found: not on softverbs\n");
        exit(2);
    }
    fo_init(&ctx, &worker);
    addr     = fo_read(rfd, NULL);
    rkey_buf = fo_read(rfd, NULL);
    remote_p = fo_read(rfd, NULL);
    memcpy(&remote, remote_p, sizeof(remote));

    eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
    eparams.address         = addr;
    eparams.err_mode        = peer_mode ? UCP_ERR_HANDLING_MODE_PEER :
                                          UCP_ERR_HANDLING_MODE_FAILOVER;
    eparams.err_handler.cb  = fo_err_cb;
    eparams.err_handler.arg = NULL;
    status = ucp_ep_create(worker, &eparams, &ep);
    if (status != UCS_OK) {
        fo_die("ucp_ep_create", status);
    }
    status = ucp_ep_rkey_unpack(ep, rkey_buf, &rkey);
    if (status != UCS_OK) {
        fo_die("ucp_ep_rkey_unpack", status);
    }
    ucp_ep_print_info(ep, stdout);
    src = malloc(FO_PUT_LEN);
    dst = malloc(FO_PUT_LEN);

    for (i = 0; (i < before) && (what == NULL); ++i, ++rounds) {
        what = fo_round(worker, ep, rkey, remote, src, dst, rounds);
    }
    fo_check(what == NULL, "%u rounds of put, flush, get and AM with both "
             "ports up, data checked%s%s", i, what ? ": failed: " : "",
             what ? what : "");

    if (set_port(fo_down_dev, 1, 0) != 0) {
        fprintf(stderr, "qpx_ucp_failover: %s port 1 down failed\n",
                fo_down_dev);
        exit(2);
    }
    printf("port %s:1 down\n", fo_down_dev);
    fflush(stdout);
    what = NULL;
    for (i = 0; (i < after) && (what == NULL); ++i, ++rounds) {
        what = fo_round(worker, ep, rkey, remote, src, dst, rounds);
    }
    if (peer_mode) {
        fo_check((what != NULL) && (fo_errors > 0), "control, without "
                 "failover: the endpoint fails when %s:1 goes down (round "
                 "%u: %s; error handler called %u times%s%s)", fo_down_dev,
                 i, what ? what : "none failed", fo_errors,
                 fo_errors ? ", " : "",
                 fo_errors ? ucs_status_string(fo_error_status) : "");
    } else {
        fo_check(what == NULL, "%u rounds after port %s:1 went down, data "
                 "checked%s%s%s", i, fo_down_dev,
                 what ? ": round failed: " : "", what ? what : "",
                 what ? " (the endpoint did not fail over)" : "");
        fo_check(fo_errors == 0, "the endpoint's error handler was not "
                 "called (%u calls%s%s)", fo_errors,
                 fo_errors ? ", last: " : "",
                 fo_errors ? ucs_status_string(fo_error_status) : "");
    }
    set_port(fo_down_dev, 1, 1);

    sent = rounds - (what != NULL);
    fo_write(wfd, "d", 1);
    count_p = fo_read(rfd, NULL);
    memcpy(&count, count_p, sizeof(count));
    if (!peer_mode) { /* the control's AMs stop with its endpoint */
        fo_check((count.received == sent) && (count.bad == 0),
                 "the server received %u of %u active messages, %u damaged",
                 count.received, sent, count.bad);
    }

    ucp_rkey_destroy(rkey);
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    (void)qpx_ucp_wait(worker, ucp_ep_close_nbx(ep, &rp));
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    free(src);
    free(dst);
    free(addr);
    free(rkey_buf);
    free(remote_p);
    free(count_p);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned before = (argc > 1) ? strtoul(argv[1], NULL, 0) : 20;
    unsigned after  = (argc > 2) ? strtoul(argv[2], NULL, 0) : 200;
    int peer_mode   = (argc > 3) && !strcmp(argv[3], "peer");
    int to_client[2], to_server[2], status;
    pid_t pid;

    if ((pipe(to_client) != 0) || (pipe(to_server) != 0)) {
        perror("pipe");
        return 2;
    }
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        /* never outlive the client (timeout(1) kills only its child) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(to_client[1]);
        close(to_server[0]);
        /* the server polls its pipe between progress calls */
        fcntl(to_client[0], F_SETFL, O_NONBLOCK);
        return fo_server(to_client[0], to_server[1]);
    }
    close(to_client[0]);
    close(to_server[1]);
    fo_client(to_server[0], to_client[1], before, after, peer_mode);
    close(to_client[1]);
    if ((waitpid(pid, &status, 0) != pid) || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0)) {
        fo_check(0, "the server exited with status 0x%x", status);
    }
    printf("%d passed, %d failed\n", fo_passed, fo_failed);
    return fo_failed ? 1 : 0;
}
