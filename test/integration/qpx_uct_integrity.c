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
#include <sys/socket.h>
#include <sys/wait.h>

ucs_status_t ucs_async_context_create(ucs_async_mode_t mode,
                                      ucs_async_context_t **async_p);
void ucs_async_context_destroy(ucs_async_context_t *async);

#define AM_ID      11
#define BUF_SIZE   (4ul << 20)
#define MAX_IOV    16

typedef struct {
    uct_component_h    comp;
    uct_md_h           md;
    ucs_async_context_t *async;
    uct_worker_h       worker;
    uct_iface_h        iface;
    uct_iface_attr_t   attr;
    uct_ep_h           ep;
    void               *buf;      /* BUF_SIZE, registered */
    uct_mem_h          memh;
    size_t             rkey_size;
    int                sock;
    int                ep_failed;
} ctx_t;

/* What the peers exchange */
typedef struct {
    uint64_t buf_addr;
    uint8_t  rkey[64];
    uint8_t  dev_addr[64];
    uint8_t  ep_addr[128];
} peer_info_t;

/* Commands from the initiator to the target */
enum { CMD_CHECK = 1, CMD_FILL, CMD_AMSTAT, CMD_SET64, CMD_GET64, CMD_QUIT };

typedef struct {
    uint32_t cmd;
    uint32_t seed;
    uint64_t len;
    uint64_t value;
} cmd_t;

static int passed, failed, skipped;
static uint64_t am_good, am_bad;
static const char *tl_name, *dev_name;

static void pass(const char *what) { ++passed; printf("PASS: %s\n", what); }
static void fail(const char *what) { ++failed; printf("FAIL: %s\n", what); }
static void skip(const char *what) { ++skipped; printf("SKIP: %s\n", what); }

static uint8_t pattern_byte(uint32_t seed, size_t i)
{
    return (uint8_t)((i * 2654435761u) >> 13) ^ (uint8_t)(seed * 31 + (i >> 8));
}

static void fill(void *p, uint32_t seed, size_t len)
{
    size_t i;
    for (i = 0; i < len; ++i) {
        ((uint8_t*)p)[i] = pattern_byte(seed, i);
    }
}

static int check(const void *p, uint32_t seed, size_t len)
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

static int xfer(int fd, void *p, size_t len, int out)
{
    ssize_t n;
    while (len > 0) {
        n = out ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) {
            return -1;
        }
        p = (char*)p + n;
        len -= n;
    }
    return 0;
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
    uct_component_h *comps;
    unsigned ncomps, i, j;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_iface_config_t *if_config;
    uct_iface_params_t params;
    ucs_status_t status;
    uct_md_attr_t md_attr;

    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        return 77;
    }
    for (i = 0; i < ncomps && c->md == NULL; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(comps[i], &cattr);
        cattr.md_resources = alloca(sizeof(*cattr.md_resources) *
                                    cattr.md_resource_count);
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        uct_component_query(comps[i], &cattr);
        for (j = 0; j < cattr.md_resource_count && c->md == NULL; ++j) {
            uct_tl_resource_desc_t *tls;
            unsigned ntls, k;
            uct_md_h md;
            if (uct_md_config_read(comps[i], NULL, NULL, &md_config) != UCS_OK) {
                continue;
            }
            status = uct_md_open(comps[i], cattr.md_resources[j].md_name,
                                 md_config, &md);
            uct_config_release(md_config);
            if (status != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
                for (k = 0; k < ntls; ++k) {
                    if (!strcmp(tls[k].tl_name, tl_name) &&
                        !strcmp(tls[k].dev_name, dev_name)) {
                        c->md   = md;
                        c->comp = comps[i];
                    }
                }
                uct_release_tl_resource_list(tls);
            }
            if (c->md == NULL) {
                uct_md_close(md);
            }
        }
    }
    uct_release_component_list(comps);
    if (c->md == NULL) {
        printf("SKIP: no %s on %s\n", tl_name, dev_name);
        return 77;
    }

    uct_md_query(c->md, &md_attr);
    c->rkey_size = md_attr.rkey_packed_size;
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &c->async) ||
        uct_worker_create(c->async, UCS_THREAD_MODE_SINGLE, &c->worker) ||
        uct_md_iface_config_read(c->md, tl_name, NULL, NULL, &if_config)) {
        return 1;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name;
    params.mode.device.dev_name = dev_name;
    params.err_handler          = err_cb;
    params.err_handler_arg      = c;
    params.err_handler_flags    = UCT_CB_FLAG_ASYNC;
    status = uct_iface_open(c->md, c->worker, &params, if_config, &c->iface);
    uct_config_release(if_config);
    if (status != UCS_OK) {
        return 1;
    }
    uct_iface_query(c->iface, &c->attr);
    uct_iface_progress_enable(c->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
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

static int ctx_connect(ctx_t *c, peer_info_t *remote)
{
    uct_ep_params_t ep_params;
    peer_info_t local;

    memset(&local, 0, sizeof(local));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = c->iface;
    if ((c->attr.ep_addr_len > sizeof(local.ep_addr)) ||
        (c->attr.device_addr_len > sizeof(local.dev_addr)) ||
        (c->rkey_size > sizeof(local.rkey)) ||
        !(c->attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP) ||
        uct_ep_create(&ep_params, &c->ep) ||
        uct_ep_get_address(c->ep, (uct_ep_addr_t*)local.ep_addr) ||
        uct_iface_get_device_address(c->iface,
                                     (uct_device_addr_t*)local.dev_addr) ||
        uct_md_mkey_pack(c->md, c->memh, local.rkey)) {
        fprintf(stderr, "%s: cannot create a connect-to-ep endpoint\n", tl_name);
        return -1;
    }
    local.buf_addr = (uintptr_t)c->buf;
    if (xfer(c->sock, &local, sizeof(local), 1) ||
        xfer(c->sock, remote, sizeof(*remote), 0)) {
        return -1;
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
        xfer(c->sock, &cmd, sizeof(cmd), 0);
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
        default:
            reply = 0;
            xfer(c->sock, &reply, sizeof(reply), 1);
            goto out;
        }
        xfer(c->sock, &reply, sizeof(reply), 1);
    }
out:
    return 0;
}

/* ---------------- initiator ---------------- */

static uint64_t remote_cmd(ctx_t *c, uint32_t op, uint32_t seed, uint64_t len,
                           uint64_t value)
{
    cmd_t cmd = {op, seed, len, value};
    uint64_t reply = 0;

    xfer(c->sock, &cmd, sizeof(cmd), 1);
    xfer(c->sock, &reply, sizeof(reply), 0);
    return reply;
}

typedef struct {
    uct_completion_t super;
    int              done;
    ucs_status_t     status;
} comp_t;

static void comp_cb(uct_completion_t *self)
{
    comp_t *comp = (comp_t*)self;
    comp->done   = 1;
    comp->status = self->status;
}

static void comp_init(comp_t *comp)
{
    comp->super.func   = comp_cb;
    comp->super.count  = 1;
    comp->super.status = UCS_OK;
    comp->done         = 0;
    comp->status       = UCS_OK;
}

/* Wait for an operation that returned status; 0 on success */
static int wait_op(ctx_t *c, ucs_status_t status, comp_t *comp)
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

static int flush_ep(ctx_t *c)
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

typedef struct {
    const void *src;
    size_t      len;
    void        *dst;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *a = arg;
    memcpy(dest, a->src, a->len);
    return a->len;
}

static void unpack_cb(void *arg, const void *data, size_t length)
{
    memcpy(((pack_arg_t*)arg)->dst, data, length);
}

static size_t make_iov(ctx_t *c, uct_iov_t *iov, void *buf, size_t len,
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

#define RETRY(_c, _expr) \
    ({ ucs_status_t _s; \
       while ((_s = (_expr)) == UCS_ERR_NO_RESOURCE) uct_worker_progress((_c)->worker); \
       _s; })

static void test_put(ctx_t *c, uct_rkey_t rkey, uint64_t raddr, size_t max_size)
{
    static const char *names[] = {"put_short", "put_bcopy", "put_zcopy"};
    static const uint64_t flags[] = {UCT_IFACE_FLAG_PUT_SHORT,
                                     UCT_IFACE_FLAG_PUT_BCOPY,
                                     UCT_IFACE_FLAG_PUT_ZCOPY};
    size_t maxes[] = {c->attr.cap.put.max_short, c->attr.cap.put.max_bcopy,
                      ucs_min(c->attr.cap.put.max_zcopy, max_size)};
    uct_iov_t iov[MAX_IOV];
    char what[128];
    int m, ok;
    size_t len;

    for (m = 0; m < 3; ++m) {
        if (!(c->attr.cap.flags & flags[m])) {
            snprintf(what, sizeof(what), "%s: not offered", names[m]);
            skip(what);
            continue;
        }
        for (len = 1; ; len = (len * 4 > maxes[m] && len < maxes[m]) ? maxes[m] : len * 4) {
            uint32_t seed = (uint32_t)(len * 7 + m);
            comp_t comp;
            ucs_status_t status = UCS_OK;
            ssize_t ret;
            pack_arg_t arg = {c->buf, len, NULL};

            if (len > maxes[m]) {
                break;
            }
            fill(c->buf, seed, len);
            comp_init(&comp);
            if (m == 0) {
                status = RETRY(c, uct_ep_put_short(c->ep, c->buf, len, raddr, rkey));
            } else if (m == 1) {
                while ((ret = uct_ep_put_bcopy(c->ep, pack_cb, &arg, raddr,
                                               rkey)) == UCS_ERR_NO_RESOURCE) {
                    uct_worker_progress(c->worker);
                }
                status = (ret == (ssize_t)len) ? UCS_OK : UCS_ERR_IO_ERROR;
            } else {
                size_t n = make_iov(c, iov, c->buf, len, c->attr.cap.put.max_iov);
                status = RETRY(c, uct_ep_put_zcopy(c->ep, iov, n, raddr, rkey,
                                                   &comp.super));
            }
            ok = (wait_op(c, status, &comp) == 0) && (flush_ep(c) == 0) &&
                 remote_cmd(c, CMD_CHECK, seed, len, 0);
            snprintf(what, sizeof(what), "%s %zu bytes", names[m], len);
            ok ? pass(what) : fail(what);
            if (len == maxes[m]) {
                break;
            }
        }
    }
}

static void test_get(ctx_t *c, uct_rkey_t rkey, uint64_t raddr, size_t max_size)
{
    static const char *names[] = {"get_bcopy", "get_zcopy"};
    static const uint64_t flags[] = {UCT_IFACE_FLAG_GET_BCOPY,
                                     UCT_IFACE_FLAG_GET_ZCOPY};
    size_t maxes[] = {c->attr.cap.get.max_bcopy,
                      ucs_min(c->attr.cap.get.max_zcopy, max_size)};
    uct_iov_t iov[MAX_IOV];
    char what[128];
    size_t len;
    int m, ok;

    for (m = 0; m < 2; ++m) {
        if (!(c->attr.cap.flags & flags[m])) {
            snprintf(what, sizeof(what), "%s: not offered", names[m]);
            skip(what);
            continue;
        }
        for (len = 1; ; len = (len * 4 > maxes[m] && len < maxes[m]) ? maxes[m] : len * 4) {
            uint32_t seed = (uint32_t)(len * 13 + m);
            pack_arg_t arg = {NULL, len, c->buf};
            ucs_status_t status;
            comp_t comp;

            if (len > maxes[m]) {
                break;
            }
            remote_cmd(c, CMD_FILL, seed, len, 0);
            memset(c->buf, 0, len);
            comp_init(&comp);
            if (m == 0) {
                status = RETRY(c, uct_ep_get_bcopy(c->ep, unpack_cb, &arg, len,
                                                   raddr, rkey, &comp.super));
            } else {
                size_t n = make_iov(c, iov, c->buf, len, c->attr.cap.get.max_iov);
                status = RETRY(c, uct_ep_get_zcopy(c->ep, iov, n, raddr, rkey,
                                                   &comp.super));
            }
            ok = (wait_op(c, status, &comp) == 0) && check(c->buf, seed, len);
            snprintf(what, sizeof(what), "%s %zu bytes", names[m], len);
            ok ? pass(what) : fail(what);
            if (len == maxes[m]) {
                break;
            }
        }
    }
}

static int send_am(ctx_t *c, int m, size_t len, uint32_t seed)
{
    uint8_t *msg = c->buf;
    uct_iov_t iov[MAX_IOV];
    ucs_status_t status;
    comp_t comp;
    ssize_t ret;

    memcpy(msg, &seed, 4);
    fill(msg + 4, seed, len - 4);
    comp_init(&comp);
    if (m == 0) {
        /* header carries the seed and the first 4 pattern bytes */
        uint64_t hdr;
        memcpy(&hdr, msg, 8);
        status = RETRY(c, uct_ep_am_short(c->ep, AM_ID, hdr, msg + 8, len - 8));
    } else if (m == 1) {
        pack_arg_t arg = {msg, len, NULL};
        while ((ret = uct_ep_am_bcopy(c->ep, AM_ID, pack_cb, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(c->worker);
        }
        status = (ret == (ssize_t)len) ? UCS_OK : UCS_ERR_IO_ERROR;
    } else {
        size_t hlen = ucs_min(ucs_min(len, c->attr.cap.am.max_hdr), 8);
        size_t n = make_iov(c, iov, msg + hlen, len - hlen,
                            c->attr.cap.am.max_iov);
        status = RETRY(c, uct_ep_am_zcopy(c->ep, AM_ID, msg, hlen, iov,
                                          (len > hlen) ? n : 0, 0,
                                          &comp.super));
    }
    return wait_op(c, status, &comp);
}

static void test_am(ctx_t *c)
{
    static const char *names[] = {"am_short", "am_bcopy", "am_zcopy"};
    static const uint64_t flags[] = {UCT_IFACE_FLAG_AM_SHORT,
                                     UCT_IFACE_FLAG_AM_BCOPY,
                                     UCT_IFACE_FLAG_AM_ZCOPY};
    size_t maxes[] = {c->attr.cap.am.max_short + 8, c->attr.cap.am.max_bcopy,
                      c->attr.cap.am.max_zcopy};
    uint64_t expected = 0, stat = 0;
    char what[128];
    size_t len;
    int m, ok, i;

    for (m = 0; m < 3; ++m) {
        if (!(c->attr.cap.flags & flags[m])) {
            snprintf(what, sizeof(what), "%s: not offered", names[m]);
            skip(what);
            continue;
        }
        for (len = 8; ; len = (len * 2 > maxes[m] && len < maxes[m]) ? maxes[m] : len * 2) {
            if (len > maxes[m]) {
                break;
            }
            ok = (send_am(c, m, len, (uint32_t)(len + m)) == 0);
            ++expected;
            snprintf(what, sizeof(what), "%s %zu bytes sent", names[m], len);
            ok ? pass(what) : fail(what);
            if (len == maxes[m]) {
                break;
            }
        }
    }

    /* A flood: far more messages than the receiver posts buffers for */
    if (c->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) {
        for (i = 0, ok = 1; i < 20000 && ok; ++i) {
            ok = (send_am(c, 0, 16, (uint32_t)i) == 0);
            ++expected;
        }
        ok ? pass("am_short flood of 20000 sent") : fail("am_short flood");
    }

    flush_ep(c);
    for (i = 0; i < 2000; ++i) {
        stat = remote_cmd(c, CMD_AMSTAT, 0, 0, 0);
        if ((stat >> 32) + (stat & 0xffffffff) >= expected) {
            break;
        }
        usleep(1000);
    }
    snprintf(what, sizeof(what), "am: %llu of %llu delivered intact, %llu corrupt",
             (unsigned long long)(stat >> 32), (unsigned long long)expected,
             (unsigned long long)(stat & 0xffffffff));
    ((stat >> 32) == expected && !(stat & 0xffffffff)) ? pass(what) : fail(what);
}

static void test_atomics(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    uint64_t *result = (uint64_t*)c->buf;
    ucs_status_t status;
    comp_t comp;
    int ok;

    if (!(c->attr.cap.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        skip("atomic64 add: not offered");
    } else {
        remote_cmd(c, CMD_SET64, 0, 0, 1000);
        status = RETRY(c, uct_ep_atomic64_post(c->ep, UCT_ATOMIC_OP_ADD, 234,
                                               raddr, rkey));
        ok = (status == UCS_OK) && !flush_ep(c) &&
             (remote_cmd(c, CMD_GET64, 0, 0, 0) == 1234);
        ok ? pass("atomic64 add") : fail("atomic64 add");
    }

    if (!(c->attr.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) {
        skip("atomic64 fetch-add: not offered");
    } else {
        remote_cmd(c, CMD_SET64, 0, 0, 0x100000000ull);
        comp_init(&comp);
        *result = 0;
        status = RETRY(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_ADD, 5,
                                                result, raddr, rkey,
                                                &comp.super));
        ok = !wait_op(c, status, &comp) && (*result == 0x100000000ull) &&
             (remote_cmd(c, CMD_GET64, 0, 0, 0) == 0x100000005ull);
        ok ? pass("atomic64 fetch-add") : fail("atomic64 fetch-add");
    }

    if (!(c->attr.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_SWAP))) {
        skip("atomic64 swap: not offered");
    } else {
        remote_cmd(c, CMD_SET64, 0, 0, 77);
        comp_init(&comp);
        status = RETRY(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_SWAP, 88,
                                                result, raddr, rkey,
                                                &comp.super));
        ok = !wait_op(c, status, &comp) && (*result == 77) &&
             (remote_cmd(c, CMD_GET64, 0, 0, 0) == 88);
        ok ? pass("atomic64 swap") : fail("atomic64 swap");
    }

    if (!(c->attr.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_CSWAP))) {
        skip("atomic64 cswap: not offered");
    } else {
        remote_cmd(c, CMD_SET64, 0, 0, 42);
        comp_init(&comp);
        status = RETRY(c, uct_ep_atomic_cswap64(c->ep, 41, 99, raddr, rkey,
                                                result, &comp.super));
        ok = !wait_op(c, status, &comp) && (*result == 42) &&
             (remote_cmd(c, CMD_GET64, 0, 0, 0) == 42);
        ok ? pass("atomic64 cswap (no match)") : fail("atomic64 cswap (no match)");
        comp_init(&comp);
        status = RETRY(c, uct_ep_atomic_cswap64(c->ep, 42, 99, raddr, rkey,
                                                result, &comp.super));
        ok = !wait_op(c, status, &comp) && (*result == 42) &&
             (remote_cmd(c, CMD_GET64, 0, 0, 0) == 99);
        ok ? pass("atomic64 cswap (match)") : fail("atomic64 cswap (match)");
    }
}

typedef struct {
    uct_pending_req_t super;
    ctx_t             *c;
    uct_rkey_t        rkey;
    uint64_t          raddr;
    int               done;
} pending_t;

static ucs_status_t pending_cb(uct_pending_req_t *self)
{
    pending_t *p = ucs_container_of(self, pending_t, super);
    ucs_status_t status = uct_ep_put_short(p->c->ep, p->c->buf, 8, p->raddr,
                                           p->rkey);
    if (status == UCS_OK) {
        p->done = 1;
    }
    return status;
}

static void purge_cb(uct_pending_req_t *self, void *arg)
{
    ++*(int*)arg;
}

static void test_pending(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    pending_t req = {.c = c, .rkey = rkey, .raddr = raddr};
    ucs_status_t status;
    int n = 0, ok, purged = 0;

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_PENDING) ||
        !(c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT)) {
        skip("pending: not offered");
        return;
    }

    /* Fill the send queue without progressing */
    fill(c->buf, 5, 8);
    while ((status = uct_ep_put_short(c->ep, c->buf, 8, raddr, rkey)) ==
           UCS_OK) {
        if (++n > 1000000) {
            break;
        }
    }
    ok = (status == UCS_ERR_NO_RESOURCE);
    ok ? pass("send queue fills up with NO_RESOURCE") :
         fail("send queue never reported NO_RESOURCE");
    if (!ok) {
        return;
    }

    req.super.func = pending_cb;
    status = uct_ep_pending_add(c->ep, &req.super, 0);
    ok = (status == UCS_OK);
    ok ? pass("pending_add under a full queue") : fail("pending_add");
    while (ok && !req.done && !c->ep_failed) {
        uct_worker_progress(c->worker);
    }
    ok = ok && req.done && !flush_ep(c) && remote_cmd(c, CMD_CHECK, 5, 8, 0);
    ok ? pass("pending request dispatched, data intact") :
         fail("pending request dispatched");

    /* purge returns requests that never ran */
    while (uct_ep_put_short(c->ep, c->buf, 8, raddr, rkey) == UCS_OK) {
    }
    req.done = 0;
    if (uct_ep_pending_add(c->ep, &req.super, 0) == UCS_OK) {
        uct_ep_pending_purge(c->ep, purge_cb, &purged);
        (purged == 1) ? pass("pending_purge") : fail("pending_purge");
    } else {
        fail("pending_add before purge");
    }
    flush_ep(c);
}

static void test_flush_cancel(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    comp_t comps[64], fcomp;
    uct_iov_t iov;
    ucs_status_t status;
    int i, posted = 0, done = 0, ok;

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY)) {
        skip("flush cancel: no get_zcopy");
        return;
    }
    for (i = 0; i < 64; ++i) {
        comp_init(&comps[i]);
        iov.buffer = (char*)c->buf + i * 65536;
        iov.length = 65536;
        iov.memh   = c->memh;
        iov.stride = 0;
        iov.count  = 1;
        status = uct_ep_get_zcopy(c->ep, &iov, 1, raddr, rkey, &comps[i].super);
        if (status != UCS_INPROGRESS) {
            comps[i].done = 1;
            continue;
        }
        ++posted;
    }
    comp_init(&fcomp);
    status = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_CANCEL, &fcomp.super);
    ok = (wait_op(c, status, &fcomp) == 0) || (status == UCS_INPROGRESS);
    for (i = 0; (i < 1000000) && (done < 64); ++i) {
        uct_worker_progress(c->worker);
        for (done = 0; (done < 64) && comps[done].done; ++done) {
        }
    }
    ok = ok && (done == 64);
    {
        char what[128];
        snprintf(what, sizeof(what),
                 "flush(CANCEL): all %d outstanding gets completed", posted);
        ok ? pass(what) : fail(what);
    }
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Peer failure: two targets; A is killed while operations are outstanding.
 * The error handler must fire for A's endpoint within limit seconds, every
 * outstanding operation must complete (with an error), and the endpoint to
 * B on the same interface must keep working.
 */
static int run_kill(ctx_t *c, int sock_a, int sock_b, pid_t pid_a,
                    double limit)
{
    peer_info_t ra, rb;
    uct_rkey_bundle_t ka, kb;
    uct_ep_h ep_a, ep_b;
    comp_t comps[16];
    uct_iov_t iov;
    double t0, t1 = 0;
    char what[160];
    int i, done, posted = 0;
    ucs_status_t status;

    c->sock = sock_a;
    if (ctx_connect(c, &ra) || uct_rkey_unpack(c->comp, ra.rkey, &ka)) {
        fail("connect A");
        return 1;
    }
    ep_a  = c->ep;
    c->sock = sock_b;
    if (ctx_connect(c, &rb) || uct_rkey_unpack(c->comp, rb.rkey, &kb)) {
        fail("connect B");
        return 1;
    }
    ep_b = c->ep;

    c->ep = ep_a;
    c->sock = sock_a;
    remote_cmd(c, CMD_SET64, 0, 0, 1); /* A is up and connected */
    kill(pid_a, SIGKILL);
    waitpid(pid_a, NULL, 0);
    t0 = now_sec();

    for (i = 0; i < 16; ++i) {
        comp_init(&comps[i]);
        iov.buffer = (char*)c->buf + i * 4096;
        iov.length = 4096;
        iov.memh   = c->memh;
        iov.stride = 0;
        iov.count  = 1;
        status = uct_ep_get_zcopy(ep_a, &iov, 1, ra.buf_addr, ka.rkey,
                                  &comps[i].super);
        if (status == UCS_INPROGRESS) {
            ++posted;
        } else {
            comps[i].done = 1;
        }
    }
    while (!c->ep_failed && (now_sec() - t0 < limit * 3)) {
        uct_worker_progress(c->worker);
    }
    t1 = now_sec() - t0;
    snprintf(what, sizeof(what), "error handler after peer kill: %.3f s "
             "(limit %.3f s)", t1, limit);
    (c->ep_failed && (t1 <= limit)) ? pass(what) : fail(what);

    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(c->worker);
    }
    for (done = 0, i = 0; i < 16; ++i) {
        done += comps[i].done && (comps[i].status != UCS_OK ||
                                  comps[i].super.status != UCS_OK);
    }
    snprintf(what, sizeof(what), "%d of %d outstanding operations completed "
             "with an error", done, 16);
    (done == 16) ? pass(what) : fail(what);

    uct_ep_destroy(ep_a);
    c->ep        = ep_b;
    c->sock      = sock_b;
    c->ep_failed = 0;
    test_put(c, kb.rkey, rb.buf_addr, 65536);
    remote_cmd(c, CMD_QUIT, 0, 0, 0);
    uct_rkey_release(c->comp, &ka);
    uct_rkey_release(c->comp, &kb);
    return 0;
}

static int run_initiator(ctx_t *c, size_t max_size)
{
    peer_info_t remote;
    uct_rkey_bundle_t rkey;

    if (ctx_connect(c, &remote) ||
        uct_rkey_unpack(c->comp, remote.rkey, &rkey)) {
        fail("connect");
        return 1;
    }
    test_put(c, rkey.rkey, remote.buf_addr, max_size);
    test_get(c, rkey.rkey, remote.buf_addr, max_size);
    test_am(c);
    test_atomics(c, rkey.rkey, remote.buf_addr);
    test_pending(c, rkey.rkey, remote.buf_addr);
    c->ep_failed = 0;
    test_flush_cancel(c, rkey.rkey, remote.buf_addr);
    remote_cmd(c, CMD_QUIT, 0, 0, 0);
    uct_rkey_release(c->comp, &rkey);
    return 0;
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
    while ((opt = getopt(argc, argv, "x:d:m:k:")) != -1) {
        switch (opt) {
        case 'x': tl_name = optarg; break;
        case 'd': dev_name = optarg; break;
        case 'k': kill_limit = atof(optarg); break;
        case 'm': max_size = ucs_min(strtoul(optarg, NULL, 0), BUF_SIZE); break;
        default:
            fprintf(stderr, "usage: %s -x tl -d dev [-m max_size]\n", argv[0]);
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
        ret = ctx_open(&c);
        if (ret != 0) {
            return ret;
        }
        return run_target(&c);
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail("target exited abnormally");
    }
    printf("%d passed, %d failed (%d skipped)\n", passed, failed, skipped);
    return (failed == 0 && passed > 0) ? 0 : 1;
}
