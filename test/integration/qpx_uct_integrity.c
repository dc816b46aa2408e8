/*
 * Data-integrity test of a UCT transport, two processes: the initiator
 * drives every operation the transport advertises (put/get/am short, bcopy,
 * zcopy; 64-bit atomics; flush with completion and with cancel; pending
 * requests under a full send queue) against the target's memory, and every
 * byte and atomic result is checked. Operations the transport does not offer
 * (capability flags) are reported as SKIP, never as passes.
 *
 * Usage: qpx_uct_integrity -x <tl> -d <dev> [-m <max size>] [-k <seconds>]
 *        -k: peer-failure test instead, the error handler must fire within
 *            <seconds> of the peer's death
 * Exit: 0 all passed, 1 a failure, 77 the transport/device is not there.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/config/types.h>
#include <ucs/sys/math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "qpx_uct_integrity.h"
#include "qpx_uct_open.h"
#include <sys/socket.h>
#include <sys/wait.h>


static int passed, failed, skipped;
static uint64_t am_good, am_bad;
static const char *tl_name, *dev_name, *target_dev;
/* -P: a transport of UCX's own (softverbs' mlx5 personality runs them): no
 * parameter-contract checks, since Debian's assertion-enabled build aborts
 * on a bad parameter instead of refusing it (rc_mlx5: "iovcnt(4) should be
 * limited by 3", then an assertion in rc_mlx5.inl), and a feature UCX 1.13
 * does not offer (iface flush(CANCEL) with a completion) is a skip */
int ucx_own;

void pass(const char *what) { ++passed; printf("PASS: %s\n", what); }
void fail(const char *what) { ++failed; printf("FAIL: %s\n", what); }
void skip(const char *what) { ++skipped; printf("SKIP: %s\n", what); }

static uint8_t pattern_byte(uint32_t seed, size_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13) ^ (uint8_t)(seed * 31 + (i >> 8));
}

void fill(void *p, uint32_t seed, size_t len)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        ((uint8_t*)p)[i] = pattern_byte(seed, i);
    }
}

int check(const void *p, uint32_t seed, size_t len)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        if (((const uint8_t*)p)[i] != pattern_byte(seed, i)) {
            fprintf(stderr, "mismatch at %zu of %zu (seed %u)\n", i, len, seed);
            return 0;
        }
    }
    return 1;
}

/* AM payload: 4-byte seed, then pattern bytes */
static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    uint32_t seed;

    if (length < sizeof(seed)) {
        ++am_bad;
        return UCS_OK;
    }
    memcpy(&seed, data, sizeof(seed));
    if (check((char*)data + sizeof(seed), seed, length - sizeof(seed))) {
        ++am_good;
    } else {
        ++am_bad;
    }
    return UCS_OK;
}

static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
{
    ((ctx_t*)arg)->ep_failed = 1;
    printf("INFO: error handler: %s\n", ucs_status_string(status));
    return UCS_OK;
}

static int ctx_open(ctx_t *c)
{
    uct_md_attr_t md_attr;

    if (qpx_uct_md_open(tl_name, dev_name, &c->comp, &c->md) != 0) {
        printf("SKIP: no %s on %s\n", tl_name, dev_name);
        return 77;
    }
    uct_md_query(c->md, &md_attr);
    c->rkey_size = md_attr.rkey_packed_size;

    if (qpx_uct_iface_open(c->md, tl_name, dev_name, err_cb, c, &c->async,
                           &c->worker, &c->iface) != 0) {
        return 1;
    }
    uct_iface_query(c->iface, &c->attr);
    if (c->attr.cap.flags & (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                             UCT_IFACE_FLAG_AM_ZCOPY)) {
        uct_iface_set_am_handler(c->iface, AM_ID, am_cb, c, 0);
    }

    if (posix_memalign(&c->buf, 4096, BUF_SIZE) ||
        uct_md_mem_reg(c->md, c->buf, BUF_SIZE, UCT_MD_MEM_ACCESS_ALL,
                       &c->memh)) {
        return 1;
    }
    return 0;
}

/* Release what ctx_open and ctx_connect made, in reverse (a transport
 * prints its statistics as its interface closes) */
static void ctx_close(ctx_t *c)
{
    if (c->ep != NULL) {
        uct_ep_destroy(c->ep);
    }
    uct_md_mem_dereg(c->md, c->memh);
    free(c->buf);
    uct_iface_close(c->iface);
    uct_worker_destroy(c->worker);
    ucs_async_context_destroy(c->async);
    uct_md_close(c->md);
}

/* An endpoint to the peer: connected to its endpoint (CONNECT_TO_EP), or
 * else created to its interface (CONNECT_TO_IFACE, e.g. qpx_dc) */
int ctx_connect(ctx_t *c, peer_info_t *remote)
{
    int to_ep = !!(c->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    uct_ep_params_t ep_params;
    peer_info_t local;

    memset(&local, 0, sizeof(local));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = c->iface;
    if ((c->attr.ep_addr_len > sizeof(local.ep_addr)) ||
        (c->attr.iface_addr_len > sizeof(local.iface_addr)) ||
        (c->attr.device_addr_len > sizeof(local.dev_addr)) ||
        (c->rkey_size > sizeof(local.rkey)) ||
        (!to_ep && !(c->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) ||
        (to_ep && (uct_ep_create(&ep_params, &c->ep) ||
                   uct_ep_get_address(c->ep, (uct_ep_addr_t*)local.ep_addr))) ||
        (!to_ep && uct_iface_get_address(c->iface,
                                         (uct_iface_addr_t*)local.iface_addr)) ||
        uct_iface_get_device_address(c->iface,
                                     (uct_device_addr_t*)local.dev_addr) ||
        uct_md_mkey_pack(c->md, c->memh, local.rkey)) {
        fprintf(stderr, "%s: cannot create an endpoint\n", tl_name);
        return -1;
    }
    local.buf_addr = (uintptr_t)c->buf;
    if (qpx_uct_xfer(c->sock, &local, sizeof(local), 1) ||
        qpx_uct_xfer(c->sock, remote, sizeof(*remote), 0)) {
        return -1;
    }
    if (!to_ep) {
        ep_params.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.dev_addr    = (uct_device_addr_t*)remote->dev_addr;
        ep_params.iface_addr  = (uct_iface_addr_t*)remote->iface_addr;
        return uct_ep_create(&ep_params, &c->ep) ? -1 : 0;
    }
    return uct_ep_connect_to_ep(c->ep, (uct_device_addr_t*)remote->dev_addr,
                                (uct_ep_addr_t*)remote->ep_addr) ? -1 : 0;
}

/* ---------------- target ---------------- */

static int run_target(ctx_t *c)
{
    peer_info_t remote;
    cmd_t cmd;
    uint64_t reply;

    if (ctx_connect(c, &remote)) {
        return 1;
    }
    for (;;) {
        ssize_t n = recv(c->sock, &cmd, sizeof(cmd), MSG_DONTWAIT | MSG_PEEK);
        if ((n == 0) || ((n < 0) && (errno != EAGAIN))) {
            break;
        }
        if (n < (ssize_t)sizeof(cmd)) {
            uct_worker_progress(c->worker);
            continue;
        }
        qpx_uct_xfer(c->sock, &cmd, sizeof(cmd), 0);
        switch (cmd.cmd) {
        case CMD_CHECK:
            reply = check(c->buf, cmd.seed, cmd.len);
            break;
        case CMD_FILL:
            fill(c->buf, cmd.seed, cmd.len);
            reply = 1;
            break;
        case CMD_AMSTAT:
            reply = (am_good << 32) | (am_bad & 0xffffffff);
            break;
        case CMD_SET64:
            memcpy(c->buf, &cmd.value, 8);
            reply = 1;
            break;
        case CMD_GET64:
            memcpy(&reply, c->buf, 8);
            break;
        case CMD_RECONNECT:
            /* A fresh endpoint pair: the initiator's was canceled */
            reply = 1;
            qpx_uct_xfer(c->sock, &reply, sizeof(reply), 1);
            uct_ep_destroy(c->ep);
            if (ctx_connect(c, &remote)) {
                return 1;
            }
            continue;
        default:
            reply = 0;
            qpx_uct_xfer(c->sock, &reply, sizeof(reply), 1);
            goto out;
        }
        qpx_uct_xfer(c->sock, &reply, sizeof(reply), 1);
    }
out:
    return 0;
}

/* ---------------- initiator ---------------- */

uint64_t remote_cmd(ctx_t *c, uint32_t op, uint32_t seed, uint64_t len,
                           uint64_t value)
{
    cmd_t cmd = {op, seed, len, value};
    uint64_t reply = 0;

    qpx_uct_xfer(c->sock, &cmd, sizeof(cmd), 1);
    qpx_uct_xfer(c->sock, &reply, sizeof(reply), 0);
    return reply;
}

static void comp_cb(uct_completion_t *self)
{
    comp_t *comp = (comp_t*)self;
    comp->done   = 1;
    comp->status = self->status;
}

void comp_init(comp_t *comp)
{
    comp->super.func   = comp_cb;
    comp->super.count  = 1;
    comp->super.status = UCS_OK;
    comp->done         = 0;
    comp->status       = UCS_OK;
}

/* Wait for an operation that returned status; 0 on success */
int wait_op(ctx_t *c, ucs_status_t status, comp_t *comp)
{
    if (status == UCS_OK) {
        return 0;
    }
    if (status != UCS_INPROGRESS) {
        return -1;
    }
    while (!comp->done && !c->ep_failed) {
        uct_worker_progress(c->worker);
    }
    return (comp->done && comp->status == UCS_OK) ? 0 : -1;
}

int flush_ep(ctx_t *c)
{
    comp_t comp;
    ucs_status_t status;

    do {
        comp_init(&comp);
        status = uct_ep_flush(c->ep, 0, &comp.super);
        uct_worker_progress(c->worker);
    } while (status == UCS_ERR_NO_RESOURCE);
    return wait_op(c, status, &comp);
}

size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *a = arg;
    memcpy(dest, a->src, a->len);
    return a->len;
}

void unpack_cb(void *arg, const void *data, size_t length)
{
    memcpy(((pack_arg_t*)arg)->dst, data, length);
}

size_t make_iov(ctx_t *c, uct_iov_t *iov, void *buf, size_t len,
                       size_t max_iov)
{
    size_t n = ucs_min(max_iov, MAX_IOV), i, off = 0, chunk;

    if (len < n) {
        n = len ? len : 1;
    }
    chunk = len / n;
    for (i = 0; i < n; ++i) {
        iov[i].buffer = (char*)buf + off;
        iov[i].length = (i == n - 1) ? len - off : chunk;
        iov[i].memh   = c->memh;
        iov[i].stride = 0;
        iov[i].count  = 1;
        off += iov[i].length;
    }
    return n;
}

int main(int argc, char **argv)
{
    size_t max_size = BUF_SIZE;
    double kill_limit = 0;
    int sv[2], sv2[2], opt, status, ret;
    pid_t pid_b;
    ctx_t c;
    pid_t pid;

    tl_name  = "qpx_rc";
    dev_name = "softverbs0:1";
    while ((opt = getopt(argc, argv, "x:d:D:m:k:P")) != -1) {
        switch (opt) {
        case 'P': ucx_own = 1; break;
        case 'x': tl_name = optarg; break;
        case 'd': dev_name = optarg; break;
        case 'D': target_dev = optarg; break;
        case 'k': kill_limit = atof(optarg); break;
        case 'm': max_size = ucs_min(strtoul(optarg, NULL, 0), BUF_SIZE); break;
        default:
            fprintf(stderr, "usage: %s -x tl -d dev [-D target_dev] [-m max_size] [-k secs] [-P]\n", argv[0]);
            return 1;
        }
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (kill_limit > 0) {
        /* -k <seconds>: peer-failure test with two targets */
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
            socketpair(AF_UNIX, SOCK_STREAM, 0, sv2)) {
            return 1;
        }
        memset(&c, 0, sizeof(c));
        pid = fork();
        if (pid == 0) {
            c.sock = sv[1];
            return ctx_open(&c) ? 1 : run_target(&c);
        }
        pid_b = fork();
        if (pid_b == 0) {
            c.sock = sv2[1];
            return ctx_open(&c) ? 1 : run_target(&c);
        }
        ret = ctx_open(&c);
        if (ret != 0) {
            kill(pid, SIGKILL);
            kill(pid_b, SIGKILL);
            return ret;
        }
        run_kill(&c, sv[0], sv2[0], pid, kill_limit);
        waitpid(pid_b, &status, 0);
        printf("%d passed, %d failed (%d skipped)\n", passed, failed, skipped);
        return (failed == 0 && passed > 0) ? 0 : 1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        return 1;
    }
    pid = fork();
    memset(&c, 0, sizeof(c));
    if (pid == 0) {
        c.sock = sv[1];
        close(sv[0]);
        if (target_dev != NULL) {
            dev_name = target_dev; /* -D: the target on another device */
        }
        ret = ctx_open(&c);
        if (ret != 0) {
            return ret;
        }
        ret = run_target(&c);
        ctx_close(&c);
        return ret;
    }

    c.sock = sv[0];
    close(sv[1]);
    ret = ctx_open(&c);
    if (ret != 0) {
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        return ret;
    }
    run_initiator(&c, max_size);
    waitpid(pid, &status, 0);
    ctx_close(&c);
    if (WIFSIGNALED(status)) {
        printf("INFO: target (pid %d) killed by signal %d\n", (int)pid,
               WTERMSIG(status));
        fail("target exited abnormally");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("INFO: target (pid %d) exited with %d\n", (int)pid,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        fail("target exited abnormally");
    }
    printf("%d passed, %d failed (%d skipped)\n", passed, failed, skipped);
    return (failed == 0 && passed > 0) ? 0 : 1;
}
