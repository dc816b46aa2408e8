/*
 * The operation tests of the UCT data-integrity test: put, get and active
 * messages of every size, atomics, pending requests, flush with cancel and
 * the peer-failure test. See qpx_uct_integrity.c.
 */
#include "qpx_uct_integrity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

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
            /* UCT's contract: get_zcopy from cap.get.min_zcopy (rc_mlx5's
             * 65: smaller reads go through bcopy) */
            if ((m == 1) && (len < c->attr.cap.get.min_zcopy)) {
                continue;
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
    /* am.max_short counts the 8-byte header */
    size_t maxes[] = {c->attr.cap.am.max_short, c->attr.cap.am.max_bcopy,
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

static void test_iface_flush(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    pack_arg_t arg = {c->buf, 4096, NULL};
    ucs_status_t status;
    comp_t comp;
    int i, ok = 1;

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_PUT_BCOPY)) {
        skip("iface flush: no put_bcopy");
        return;
    }
    fill(c->buf, 99, 4096);
    for (i = 0; (i < 10) && ok; ++i) {
        ssize_t ret;
        while ((ret = uct_ep_put_bcopy(c->ep, pack_cb, &arg, raddr, rkey)) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(c->worker);
        }
        ok = (ret == 4096);
    }
    do {
        comp_init(&comp);
        status = uct_iface_flush(c->iface, 0, &comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(c->worker);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    if (status == UCS_ERR_UNSUPPORTED) {
        skip("iface flush with a completion: unsupported");
        return;
    }
    ok = ok && (wait_op(c, status, &comp) == 0) &&
         remote_cmd(c, CMD_CHECK, 99, 4096, 0);
    ok ? pass("iface flush with a completion") : fail("iface flush");
}

/*
 * A flush right after the user left the interface alone for 100 ms: a
 * transport with async progress (qpx_dc under UCX 1.13) may have taken the
 * put's completion in its timer's round, leaving the callback for the
 * user's progress; the flush must not answer UCS_OK before it has run
 * (UCT: a flush that returns UCS_OK means the operations completed).
 */
static void test_flush_after_idle(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    ucs_status_t status, fstatus;
    uct_iov_t iov;
    comp_t comp;
    char what[160];
    int round, ok = 1;

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY)) {
        skip("flush after an idle period: no put_zcopy");
        return;
    }
    for (round = 0; (round < 5) && ok; ++round) {
        fill(c->buf, 55 + round, 4096);
        iov.buffer = c->buf;
        iov.length = 4096;
        iov.memh   = c->memh;
        iov.stride = 0;
        iov.count  = 1;
        comp_init(&comp);
        status = RETRY(c, uct_ep_put_zcopy(c->ep, &iov, 1, raddr, rkey,
                                           &comp.super));
        usleep(100000);
        fstatus = uct_ep_flush(c->ep, 0, NULL); /* no progress before it */
        ok = ((fstatus != UCS_OK) || (status == UCS_OK) || comp.done);
        snprintf(what, sizeof(what), "flush after 100 ms idle answered %s "
                 "with the put's completion %s (round %d)",
                 ucs_status_string(fstatus), comp.done ? "called" :
                 "not called", round);
        ok = ok && (wait_op(c, status, &comp) == 0) && (flush_ep(c) == 0) &&
             remote_cmd(c, CMD_CHECK, 55 + round, 4096, 0);
    }
    ok ? pass("flush after 100 ms idle: never UCS_OK before the put's "
              "completion, data checked (5 rounds)") : fail(what);
}

/* n 64 KiB get_zcopy operations into c->buf; returns how many are
 * outstanding (the others completed at once and are marked done) */
static int post_gets(ctx_t *c, comp_t *comps, int n, uint64_t raddr,
                     uct_rkey_t rkey)
{
    ucs_status_t status;
    uct_iov_t iov;
    int i, posted = 0;

    for (i = 0; i < n; ++i) {
        comp_init(&comps[i]);
        iov.buffer = (char*)c->buf + i * 65536;
        iov.length = 65536;
        iov.memh   = c->memh;
        iov.stride = 0;
        iov.count  = 1;
        status = uct_ep_get_zcopy(c->ep, &iov, 1, raddr, rkey,
                                  &comps[i].super);
        if (status != UCS_INPROGRESS) {
            comps[i].done = 1;
            continue;
        }
        ++posted;
    }
    return posted;
}

/* Progress until the n completions are done, and flush_comp too unless it
 * is NULL; returns how many of the n are done. The completions live in the
 * caller's frame, so the caller must not return while the transport still
 * holds them: past 120 s of wall time (a slow, loaded machine is not a
 * failure before that) the test reports the failure and exits. */
static int wait_comps(ctx_t *c, comp_t *comps, int n, comp_t *flush_comp)
{
    struct timespec start, now;
    int i, done;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        for (done = 0, i = 0; i < n; ++i) {
            done += comps[i].done;
        }
        if ((done == n) && ((flush_comp == NULL) || flush_comp->done)) {
            return done;
        }
        uct_worker_progress(c->worker);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 120) {
            break;
        }
    }
    printf("FAIL: %d of %d operations%s still outstanding after 120 s; "
           "exiting, since their completions live on this stack\n",
           n - done, n, ((flush_comp != NULL) && !flush_comp->done) ?
           " and the flush" : "");
    fflush(stdout);
    _exit(1);
}

static void test_flush_cancel(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    comp_t comps[64], fcomp;
    ucs_status_t status;
    int posted, ok;
    char what[128];

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY)) {
        skip("flush cancel: no get_zcopy");
        return;
    }
    posted = post_gets(c, comps, 64, raddr, rkey);
    comp_init(&fcomp);
    status = uct_ep_flush(c->ep, UCT_FLUSH_FLAG_CANCEL, &fcomp.super);
    ok = (status == UCS_OK) || (status == UCS_INPROGRESS);
    ok = ok && (wait_comps(c, comps, 64,
                           (status == UCS_INPROGRESS) ? &fcomp : NULL) == 64);
    snprintf(what, sizeof(what),
             "flush(CANCEL): all %d outstanding gets completed", posted);
    ok ? pass(what) : fail(what);
}

/* Flush of the interface with CANCEL and a completion: every outstanding
 * operation completes (canceled or done), and the flush either returns
 * UCS_OK or completes comp; afterwards the endpoint is reconnected */
static void test_iface_flush_cancel(ctx_t *c, uct_rkey_t *rkey,
                                    peer_info_t *remote,
                                    uct_rkey_bundle_t *bundle)
{
    comp_t comps[32], fcomp;
    ucs_status_t status;
    int posted, done, ok;
    char what[160];

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY)) {
        skip("iface flush cancel: no get_zcopy");
        return;
    }

    /* The endpoint of test_flush_cancel is in error: a new pair */
    remote_cmd(c, CMD_RECONNECT, 0, 0, 0);
    uct_rkey_release(c->comp, bundle);
    uct_ep_destroy(c->ep);
    c->ep_failed = 0;
    if (ctx_connect(c, remote) ||
        uct_rkey_unpack(c->comp, remote->rkey, bundle)) {
        fail("iface flush cancel: reconnect");
        return;
    }
    *rkey = bundle->rkey;

    posted = post_gets(c, comps, 32, remote->buf_addr, *rkey);

    comp_init(&fcomp);
    status = uct_iface_flush(c->iface, UCT_FLUSH_FLAG_CANCEL, &fcomp.super);
    if (status == UCS_ERR_UNSUPPORTED) {
        /* the gets' completions live here: wait for them before leaving */
        wait_comps(c, comps, 32, NULL);
        if (ucx_own) {
            skip("iface flush(CANCEL) with a completion: unsupported");
        } else {
            fail("iface flush(CANCEL) with a completion: unsupported");
        }
        return;
    }
    ok   = (status == UCS_OK) || (status == UCS_INPROGRESS);
    done = wait_comps(c, comps, 32,
                      (status == UCS_INPROGRESS) ? &fcomp : NULL);
    ok   = ok && (done == 32) && ((status == UCS_OK) || fcomp.done);
    snprintf(what, sizeof(what), "iface flush(CANCEL) with a completion: "
             "returned %s, all %d outstanding gets completed",
             ucs_status_string(status), posted);
    ok ? pass(what) : fail(what);

    /* The endpoint is in error now: operations are refused, not lost */
    status = uct_ep_put_short(c->ep, c->buf, 8, remote->buf_addr, *rkey);
    snprintf(what, sizeof(what), "put after iface flush(CANCEL): %s",
             ucs_status_string(status));
    (status != UCS_OK) ? pass(what) : fail(what);
}

/*
 * Fences: a get posted before a put to the same remote word reads the old
 * value when uct_ep_fence or uct_iface_fence (UCP's worker fence, hence
 * shmem_fence) separates them. Under SOFTVERBS_RC_READ_REORDER=1 softverbs
 * lets a write pass an earlier read unless it is fenced, as the IB ordering
 * rules allow an HCA: the unfenced case must then read the new value, which
 * shows that the fenced cases are tested against a device that reorders.
 */
static void test_fence(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    static const char *modes[] = {"no fence", "uct_ep_fence",
                                  "uct_iface_fence"};
    const char *env = getenv("SOFTVERBS_RC_READ_REORDER");
    int reorder     = (env != NULL) && (strtod(env, NULL) >= 1.0);
    uint64_t old_val, new_val, expect, got;
    ucs_status_t status, put_status;
    pack_arg_t arg;
    char what[160];
    comp_t comp;
    int m, ok;

    if (!(c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) ||
        !(c->attr.cap.flags & UCT_IFACE_FLAG_GET_BCOPY)) {
        skip("fence: put_short or get_bcopy not offered");
        return;
    }
    for (m = 0; m < 3; ++m) {
        old_val = 0x1111111100000000ull + m;
        new_val = 0x2222222200000000ull + m;
        status  = RETRY(c, uct_ep_put_short(c->ep, &old_val, sizeof(old_val),
                                            raddr, rkey));
        if ((status != UCS_OK) || (flush_ep(c) != 0)) {
            fail("fence: writing the old value");
            return;
        }

        got = 0;
        arg.src = NULL;
        arg.len = sizeof(got);
        arg.dst = &got;
        comp_init(&comp);
        status = RETRY(c, uct_ep_get_bcopy(c->ep, unpack_cb, &arg, sizeof(got),
                                           raddr, rkey, &comp.super));
        if (m == 1) {
            uct_ep_fence(c->ep, 0);
        } else if (m == 2) {
            uct_iface_fence(c->iface, 0);
        }
        put_status = RETRY(c, uct_ep_put_short(c->ep, &new_val,
                                               sizeof(new_val), raddr, rkey));
        ok = (put_status == UCS_OK) && (wait_op(c, status, &comp) == 0) &&
             (flush_ep(c) == 0);
        expect = ((m == 0) && reorder) ? new_val : old_val;
        snprintf(what, sizeof(what), "get then put, %s%s: read 0x%016llx "
                 "(expected the %s value)", modes[m],
                 reorder ? " (device reorders)" : "", (unsigned long long)got,
                 (expect == new_val) ? "new" : "old");
        (ok && (got == expect)) ? pass(what) : fail(what);
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
int run_kill(ctx_t *c, int sock_a, int sock_b, pid_t pid_a,
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

    /* A bad rkey is reported through the error handler, not a crash */
    if (c->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT) {
        comp_t fcomp;

        status = uct_ep_put_short(ep_b, c->buf, 8, rb.buf_addr,
                                  kb.rkey ^ 0x5a5a5a);
        comp_init(&fcomp);
        if (status == UCS_OK) {
            status = uct_ep_flush(ep_b, 0, &fcomp.super);
        }
        t0 = now_sec();
        while (!c->ep_failed && (now_sec() - t0 < limit * 3)) {
            uct_worker_progress(c->worker);
        }
        snprintf(what, sizeof(what), "bad rkey reported by the error handler"
                 " (flush status %s)", ucs_status_string(fcomp.done ?
                                                         fcomp.status : status));
        c->ep_failed ? pass(what) : fail(what);
    }
    remote_cmd(c, CMD_QUIT, 0, 0, 0);
    uct_rkey_release(c->comp, &ka);
    uct_rkey_release(c->comp, &kb);
    return 0;
}

int run_initiator(ctx_t *c, size_t max_size)
{
    peer_info_t remote;
    uct_rkey_bundle_t rkey;

    if (ctx_connect(c, &remote) ||
        uct_rkey_unpack(c->comp, remote.rkey, &rkey)) {
        fail("connect");
        return 1;
    }
    if (!ucx_own) {
        test_params(c, rkey.rkey, remote.buf_addr);
    }
    test_put(c, rkey.rkey, remote.buf_addr, max_size);
    test_get(c, rkey.rkey, remote.buf_addr, max_size);
    test_am(c);
    test_atomics(c, rkey.rkey, remote.buf_addr);
    test_fence(c, rkey.rkey, remote.buf_addr);
    test_pending(c, rkey.rkey, remote.buf_addr);
    test_iface_flush(c, rkey.rkey, remote.buf_addr);
    test_flush_after_idle(c, rkey.rkey, remote.buf_addr);
    c->ep_failed = 0;
    test_flush_cancel(c, rkey.rkey, remote.buf_addr);
    test_iface_flush_cancel(c, &rkey.rkey, &remote, &rkey);
    remote_cmd(c, CMD_QUIT, 0, 0, 0);
    uct_rkey_release(c->comp, &rkey);
    return 0;
}

