/*
 * qpx_ud robustness tests through the public UCT API, over softverbs.
 *
 *   ud_uct_test pending-stall   the send descriptors of an interface are
 *                               all held by eps to a silent peer; a request
 *                               queued on another ep must still run once
 *                               descriptors come back, although that ep gets
 *                               no ack of its own (needs
 *                               UCX_QPX_UD_TX_MAX_BUFS=256 UCX_QPX_UD_WINDOW=16;
 *                               with UCX_QPX_UD_TX_QUEUE_LEN=256 the send
 *                               queue is full too and pending_add queues,
 *                               with 1024 it must not answer BUSY)
 *   ud_uct_test no-progress P   a child stops calling progress for P
 *                               seconds while the parent keeps sending: the
 *                               parent's ep must not fail (run with
 *                               UCX_QPX_UD_TIMEOUT < P)
 *   ud_uct_test no-progress P held
 *                               the child's phase is UCP's progress of a
 *                               worker whose qpx_ud interface it does not
 *                               progress (UCP deactivated it): it holds the
 *                               worker's async context and progresses the
 *                               worker for P seconds with the interface's
 *                               progress disabled; the same must hold
 *   ud_uct_test ep-churn N      N eps created, used and destroyed to one
 *                               peer iface: the peer's ep count and memory
 *                               stay bounded
 *   ud_uct_test late-connect    CONNECT_TO_EP where the child connects its
 *                               ep late and then progresses only once a
 *                               millisecond (ucx_perftest in its socket
 *                               barrier); the parent flushes its iface in a
 *                               loop meanwhile (perftest's flush): the flush
 *                               must complete (run with UCX_QPX_UD_PRINT_STATS=y
 *                               to see how many ACK_REQs the loop sent)
 *   ud_uct_test close-race      one side destroys its ep while the other
 *                               still sends to it: the peer's sends are
 *                               acknowledged and delivered to the closed
 *                               side's interface, and its flush completes
 *                               (run with UCX_QPX_UD_TIMEOUT short: a
 *                               closed side that drops them fails it)
 *   ud_uct_test flush-cancel    zcopy AMs in flight to a peer that does not
 *                               progress (run with
 *                               UCX_QPX_UD_ASYNC_PROGRESS=n): uct_iface_flush
 *                               with CANCEL completes every one of them with
 *                               UCS_ERR_CANCELED at once, and the endpoint
 *                               then refuses sends
 */
#include "ud_uct_test.h"

#include <uct/api/uct.h>
#include <uct/qpx/base/qpx_async.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NUM_SILENT_EPS 32
#define BCOPY_LEN      1024


typedef struct {
    uct_pending_req_t req;
    uct_ep_h          ep;
    int               done;
    int               calls;
} stall_req_t;

static size_t fill_pack_cb(void *dest, void *arg)
{
    (void)arg;
    memset(dest, 0x5a, BCOPY_LEN);
    return BCOPY_LEN;
}

/* bcopy of BCOPY_LEN: larger than the inline limit, so its descriptor is
 * held until the peer acknowledges it */
static ucs_status_t send_bcopy(uct_ep_h ep)
{
    ssize_t ret = uct_ep_am_bcopy(ep, AM_ID + 1, fill_pack_cb, NULL, 0);

    return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
}

static ucs_status_t stall_req_cb(uct_pending_req_t *self)
{
    stall_req_t *r = ucs_container_of(self, stall_req_t, req);
    ucs_status_t status;

    ++r->calls;
    status = send_bcopy(r->ep);
    if (status == UCS_OK) {
        r->done = 1;
    }
    return status;
}

static void progress_for(double seconds)
{
    double end = now_sec() + seconds;

    while (now_sec() < end) {
        uct_worker_progress(worker);
    }
}

int test_pending_stall(const test_resource_t *res)
{
    test_iface_t a, b, c;
    uct_ep_h ex, ey, ecs[NUM_SILENT_EPS];
    stall_req_t rx = {.done = 0}, ry = {.done = 0};
    uint64_t payload = 0;
    int i, n, held = 0, window = 0, busy_lie = 0, ok;
    ucs_status_t status;
    double deadline;

    if (!iface_open(res, &a) || !iface_open(res, &b) || !iface_open(res, &c) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ex) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ey)) {
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);
    uct_iface_set_am_handler(c.iface, AM_ID + 1, count_handler, &c, 0);
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        if (!ep_create(&a, c.dev_addr, c.iface_addr, &ecs[i])) {
            return 1;
        }
    }

    /* Connect every ep: one acknowledged message each */
    deadline = now_sec() + 30;
    for (i = -2; i < NUM_SILENT_EPS; ++i) {
        uct_ep_h ep = (i == -2) ? ex : (i == -1) ? ey : ecs[i];

        while ((uct_ep_am_short(ep, AM_ID + 1, 0, &payload, 8) != UCS_OK) &&
               (now_sec() < deadline)) {
            uct_worker_progress(worker);
        }
        if (!flush_ep(ep, deadline)) {
            fprintf(stderr, "pending-stall: connecting ep %d failed\n", i);
            return 1;
        }
    }

    /* c goes silent: what is sent to it stays unacknowledged */
    uct_iface_progress_disable(c.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    /* ex: its own window full of inline sends (acked by b later), which
     * hold no descriptor: their acks give none back */
    while (uct_ep_am_short(ex, AM_ID + 1, 0, &payload, 8) == UCS_OK) {
        ++window;
    }
    /* The silent eps take every descriptor that is left */
    for (n = 1; n > 0;) {
        for (i = 0, n = 0; i < NUM_SILENT_EPS; ++i) {
            n += (send_bcopy(ecs[i]) == UCS_OK);
        }
        held += n;
    }
    status = send_bcopy(ey);
    printf("pending-stall: ex window %d, %d descriptors held by %d eps to a "
           "silent iface; idle ep send: %s\n", window, held, NUM_SILENT_EPS,
           ucs_status_string(status));
    if ((status != UCS_ERR_NO_RESOURCE) || (window == 0)) {
        fprintf(stderr, "pending-stall: descriptors not exhausted (set "
                "UCX_QPX_UD_TX_MAX_BUFS=256 UCX_QPX_UD_WINDOW=16)\n");
        return 1;
    }

    /* An idle ep: pending_add may say BUSY only if a send would now work */
    ry.req.func = stall_req_cb;
    ry.ep       = ey;
    status      = uct_ep_pending_add(ey, &ry.req, 0);
    if (status == UCS_ERR_BUSY) {
        busy_lie = (send_bcopy(ey) != UCS_OK);
        ry.done  = !busy_lie;
        printf("pending-stall: pending_add on the idle ep: BUSY, send then "
               "%s\n", busy_lie ? "NO_RESOURCE (contract broken)" : "ok");
    } else if (status != UCS_OK) {
        fprintf(stderr, "pending_add(ey): %s\n", ucs_status_string(status));
        return 1;
    }

    /* ex: window full, so the request is queued */
    rx.req.func = stall_req_cb;
    rx.ep       = ex;
    status      = uct_ep_pending_add(ex, &rx.req, 0);
    if (status != UCS_OK) {
        fprintf(stderr, "pending_add(ex): %s\n", ucs_status_string(status));
        return 1;
    }

    /* b acknowledges ex's window while descriptors are still held: the
     * request finds none, and ex has nothing in flight any more */
    progress_for(0.5);
    printf("pending-stall: after 0.5 s with the peer silent: request ran %d "
           "time(s), done %d\n", rx.calls, rx.done);

    /* c speaks again: descriptors come back through the other eps' acks */
    uct_iface_progress_enable(c.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    deadline = now_sec() + 5;
    while ((!rx.done || !ry.done) && (now_sec() < deadline)) {
        uct_worker_progress(worker);
    }
    printf("pending-stall: descriptors released: queued request on the "
           "acked ep %s (%d calls), on the idle ep %s\n",
           rx.done ? "ran" : "STALLED", rx.calls,
           ry.done ? "ran" : "STALLED");

    ok = rx.done && ry.done && !busy_lie;
    deadline = now_sec() + 30;
    ok = ok && flush_ep(ex, deadline) && flush_ep(ey, deadline);
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        ok = ok && flush_ep(ecs[i], deadline);
    }
    if (!rx.done) {
        uct_ep_pending_purge(ex, NULL, NULL);
    }
    if (!ry.done && !busy_lie) {
        uct_ep_pending_purge(ey, NULL, NULL);
    }
    for (i = 0; i < NUM_SILENT_EPS; ++i) {
        uct_ep_destroy(ecs[i]);
    }
    uct_ep_destroy(ex);
    uct_ep_destroy(ey);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    uct_iface_close(c.iface);
    return ok ? 0 : 1;
}

/* The child's phase in held mode: what a UCP worker's progress does (a
 * multi-threaded one holds the async context; UCP's sends, flushes and
 * wireup hold it too) for an interface UCP no longer progresses */
static void no_progress_held(uct_iface_h iface, double pause)
{
    double end = now_sec() + pause;

    uct_iface_progress_disable(iface,
                               UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    qpx_async_block(async);
    while (now_sec() < end) {
        uct_worker_progress(worker);
        /* ucs_async_check_miss: what UCX's async thread left to the
         * holder */
        __ucs_async_poll_missed(async);
    }
    qpx_async_unblock(async);
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

/* Child: progress until 'p' (or 'h'), then no UCT call at all (or no
 * progress of its interface, held mode) for pause seconds, then progress
 * again until 'x'; sends back what it received */
static void no_progress_child(void *arg, int wfd, int rfd)
{
    double pause = *(double*)arg;
    test_resource_t res;
    test_iface_t b;
    struct timespec ts;
    char cmd;
    int flags;

    if (!test_init(&res) || !iface_open(&res, &b)) {
        _exit(77);
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);
    write_full(wfd, b.dev_addr, MAX_ADDR);
    write_full(wfd, b.iface_addr, MAX_ADDR);
    flags = fcntl(rfd, F_GETFL);
    fcntl(rfd, F_SETFL, flags | O_NONBLOCK);
    for (cmd = 0; cmd != 'x';) {
        uct_worker_progress(worker);
        if (read(rfd, &cmd, 1) != 1) {
            continue;
        }
        if (cmd == 'p') {
            /* The compute phase: this thread does not touch UCT */
            ts.tv_sec  = (time_t)pause;
            ts.tv_nsec = (long)((pause - ts.tv_sec) * 1e9);
            nanosleep(&ts, NULL);
        } else if (cmd == 'h') {
            no_progress_held(b.iface, pause);
        }
    }
    write_full(wfd, &b.rx_count, sizeof(b.rx_count));
    /* keep acknowledging until the parent is done */
    for (ts.tv_sec = 0; ts.tv_sec < 1000000; ++ts.tv_sec) {
        uct_worker_progress(worker);
    }
    _exit(0);
}

int test_no_progress(const test_resource_t *res, double pause, int held)
{
    uint8_t addr[2][MAX_ADDR];
    int rfd, wfd, ok;
    uint64_t payload = 0, sent = 0, received = 0;
    test_iface_t a;
    uct_ep_h ep;
    ucs_status_t status = UCS_OK;
    double start, deadline;
    pid_t pid;

    pid = fork_child(no_progress_child, &pause, &rfd, &wfd);
    if (pid < 0) {
        return 1;
    }
    if (!read_full(rfd, addr[0], MAX_ADDR) ||
        !read_full(rfd, addr[1], MAX_ADDR) || !iface_open(res, &a) ||
        !ep_create(&a, addr[0], addr[1], &ep)) {
        fprintf(stderr, "no-progress: setup failed\n");
        return 1;
    }

    /* Both sides alive */
    deadline = now_sec() + 30;
    while ((sent < 100) && (now_sec() < deadline)) {
        sent += (uct_ep_am_short(ep, AM_ID + 1, sent, &payload, 8) == UCS_OK);
        uct_worker_progress(worker);
    }
    if (!flush_ep(ep, deadline)) {
        fprintf(stderr, "no-progress: first flush failed\n");
        return 1;
    }

    /* The child computes (or progresses without its interface); this side
     * keeps sending and progressing */
    write_full(wfd, held ? "h" : "p", 1);
    start = now_sec();
    while ((now_sec() < start + pause + 1.0) && (a.failed_eps == 0)) {
        status = uct_ep_am_short(ep, AM_ID + 1, sent, &payload, 8);
        if (status == UCS_OK) {
            ++sent;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(worker);
    }
    printf("no-progress: peer without %s for %.1f s: %lu sent, ep "
           "%s after %.2f s\n", held ? "progress of its interface" :
           "progress", pause, (unsigned long)sent,
           (a.failed_eps || (status == UCS_ERR_ENDPOINT_TIMEOUT)) ?
           "FAILED" : "alive", now_sec() - start);

    ok = (a.failed_eps == 0) && (status != UCS_ERR_ENDPOINT_TIMEOUT) &&
         flush_ep(ep, now_sec() + 30);
    write_full(wfd, "x", 1);
    ok = ok && read_full(rfd, &received, sizeof(received)) &&
         (received == sent);
    printf("no-progress: peer received %lu of %lu\n",
           (unsigned long)received, (unsigned long)sent);
    uct_ep_destroy(ep);
    uct_iface_close(a.iface);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return ok ? 0 : 1;
}

/* One round: create an ep from a to b, one acknowledged message, destroy */
static int churn_one(test_iface_t *a, test_iface_t *b, uint64_t seq)
{
    double deadline = now_sec() + 30;
    uct_ep_h ep;

    if (!ep_create(a, b->dev_addr, b->iface_addr, &ep)) {
        return 0;
    }
    while ((uct_ep_am_short(ep, AM_ID + 1, seq, &seq, 8) != UCS_OK) &&
           (now_sec() < deadline)) {
        uct_worker_progress(worker);
    }
    if (!flush_ep(ep, deadline)) {
        fprintf(stderr, "ep-churn: flush %lu failed\n", (unsigned long)seq);
        uct_ep_destroy(ep);
        return 0;
    }
    uct_ep_destroy(ep);
    return 1;
}

int test_ep_churn(const test_resource_t *res, int count)
{
    int i, warmup = count / 10, ok = 1;
    long rss0, rss1;
    test_iface_t a, b;

    if (!iface_open(res, &a) || !iface_open(res, &b)) {
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);

    for (i = 0; ok && (i < warmup); ++i) {
        ok = churn_one(&a, &b, i);
    }
    progress_for(0.1); /* the last disconnect */
    rss0 = vm_rss_kb();
    for (; ok && (i < count); ++i) {
        ok = churn_one(&a, &b, i);
    }
    progress_for(0.1);
    rss1 = vm_rss_kb();

    printf("ep-churn: %d eps created and destroyed to one iface, %lu "
           "delivered; VmRSS +%ld kB over the last %d (%.1f B/ep)\n", i,
           (unsigned long)b.rx_count, rss1 - rss0, count - warmup,
           (rss1 - rss0) * 1024.0 / (count - warmup));
    /* An ep left behind per round costs hundreds of bytes: 64 B per round
     * is allocator noise */
    ok = ok && (b.rx_count == (uint64_t)count) &&
         ((rss1 - rss0) * 1024.0 / (count - warmup) < 64);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    return ok ? 0 : 1;
}

/* Messages each way before the close, and sent after it */
#define CLOSE_RACE_BEFORE 100
#define CLOSE_RACE_AFTER  50

static int send_n(uct_ep_h ep, uint64_t n, double deadline)
{
    uint64_t seq = 0;

    while ((seq < n) && (now_sec() < deadline)) {
        if (uct_ep_am_short(ep, AM_ID + 1, seq, &seq, 8) == UCS_OK) {
            ++seq;
        } else {
            uct_worker_progress(worker);
        }
    }
    return seq == n;
}

int test_close_race(const test_resource_t *res)
{
    double deadline = now_sec() + 30;
    test_iface_t a, b;
    uct_ep_h ab, ba;
    int ok;

    if (!iface_open(res, &a) || !iface_open(res, &b) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ab) ||
        !ep_create(&b, a.dev_addr, a.iface_addr, &ba)) {
        fprintf(stderr, "close-race: setup failed\n");
        return 1;
    }
    uct_iface_set_am_handler(a.iface, AM_ID + 1, count_handler, &a, 0);
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);

    ok = send_n(ab, CLOSE_RACE_BEFORE, deadline) &&
         send_n(ba, CLOSE_RACE_BEFORE, deadline) &&
         flush_ep(ab, deadline) && flush_ep(ba, deadline);
    if (!ok) {
        fprintf(stderr, "close-race: exchange before the close failed\n");
        return 1;
    }

    /* b's user is done and closes; a sends before it hears of that */
    uct_ep_destroy(ba);
    ok = send_n(ab, CLOSE_RACE_AFTER, deadline) &&
         flush_ep(ab, now_sec() + 10);
    printf("close-race: %lu of %d sent after the peer closed its ep "
           "delivered to its iface; flush %s, %d failed eps\n",
           (unsigned long)(b.rx_count - CLOSE_RACE_BEFORE), CLOSE_RACE_AFTER,
           ok ? "completed" : "FAILED", a.failed_eps);
    ok = ok && (a.failed_eps == 0) && (a.rx_count == CLOSE_RACE_BEFORE) &&
         (b.rx_count == CLOSE_RACE_BEFORE + CLOSE_RACE_AFTER);

    /* Both closed: the DISCs free the lingering ep (eps=0 at close) */
    uct_ep_destroy(ab);
    progress_for(0.1);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    return ok ? 0 : 1;
}

/* Child of late-connect: its ep exists (its address is sent) but connects
 * only after LATE_CONNECT_DELAY; then one progress a millisecond until the
 * parent writes 'x' */
#define LATE_CONNECT_DELAY 0.2

static void late_connect_child(void *arg, int wfd, int rfd)
{
    uint8_t dev_addr[MAX_ADDR], ep_addr[MAX_ADDR], my_ep_addr[MAX_ADDR];
    uct_ep_params_t params;
    test_resource_t res;
    test_iface_t b;
    uct_ep_h ep;
    char cmd = 0;
    double end;

    (void)arg;
    if (!test_init(&res) || !iface_open(&res, &b)) {
        _exit(77);
    }
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = b.iface;
    if ((uct_ep_create(&params, &ep) != UCS_OK) ||
        (uct_ep_get_address(ep, (uct_ep_addr_t*)my_ep_addr) != UCS_OK)) {
        _exit(1);
    }
    write_full(wfd, b.dev_addr, MAX_ADDR);
    write_full(wfd, my_ep_addr, MAX_ADDR);
    if (!read_full(rfd, dev_addr, MAX_ADDR) ||
        !read_full(rfd, ep_addr, MAX_ADDR)) {
        _exit(1);
    }
    usleep(LATE_CONNECT_DELAY * 1e6);
    if (uct_ep_connect_to_ep(ep, (uct_device_addr_t*)dev_addr,
                             (uct_ep_addr_t*)ep_addr) != UCS_OK) {
        _exit(1);
    }
    fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);
    end = now_sec() + 60;
    while ((cmd != 'x') && (now_sec() < end)) {
        uct_worker_progress(worker);
        usleep(1000);
        if (read(rfd, &cmd, 1) != 1) {
            cmd = 0;
        }
    }
    uct_ep_destroy(ep);
    uct_iface_close(b.iface);
    _exit(0);
}

int test_late_connect(const test_resource_t *res)
{
    uint8_t dev_addr[MAX_ADDR], ep_addr[MAX_ADDR], my_ep_addr[MAX_ADDR];
    uct_ep_params_t params;
    ucs_status_t status;
    int rfd, wfd, ok, child_status;
    double start, deadline;
    test_iface_t a;
    uct_ep_h ep;
    pid_t pid;

    pid = fork_child(late_connect_child, NULL, &rfd, &wfd);
    if (pid < 0) {
        return 1;
    }

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    if (!read_full(rfd, dev_addr, MAX_ADDR) ||
        !read_full(rfd, ep_addr, MAX_ADDR) || !iface_open(res, &a)) {
        fprintf(stderr, "late-connect: setup failed\n");
        return 1;
    }
    params.iface = a.iface;
    if ((uct_ep_create(&params, &ep) != UCS_OK) ||
        (uct_ep_get_address(ep, (uct_ep_addr_t*)my_ep_addr) != UCS_OK) ||
        !write_full(wfd, a.dev_addr, MAX_ADDR) ||
        !write_full(wfd, my_ep_addr, MAX_ADDR) ||
        (uct_ep_connect_to_ep(ep, (uct_device_addr_t*)dev_addr,
                              (uct_ep_addr_t*)ep_addr) != UCS_OK)) {
        fprintf(stderr, "late-connect: connect failed\n");
        return 1;
    }

    /* What ucx_perftest does after connecting: flush in a loop */
    start    = now_sec();
    deadline = start + 30;
    do {
        status = uct_iface_flush(a.iface, 0, NULL);
        uct_worker_progress(worker);
    } while (((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) &&
             (now_sec() < deadline));
    ok = (status == UCS_OK);
    printf("late-connect: peer connected %.1f s late, flush %s after %.2f s\n",
           LATE_CONNECT_DELAY, ok ? "completed" : "DID NOT complete",
           now_sec() - start);

    write_full(wfd, "x", 1);
    waitpid(pid, &child_status, 0);
    ok = ok && WIFEXITED(child_status) && (WEXITSTATUS(child_status) == 0);
    uct_ep_destroy(ep);
    uct_iface_close(a.iface);
    return ok ? 0 : 1;
}


/* ------------------------------------------------------------------------
 * flush-cancel
 */
#define CANCEL_NUM_SENDS 8
#define CANCEL_LEN       2048

typedef struct {
    uct_completion_t comp;
    ucs_status_t     status;
    int              calls;
} cancel_comp_t;

static void cancel_comp_cb(uct_completion_t *self)
{
    cancel_comp_t *c = ucs_container_of(self, cancel_comp_t, comp);

    c->status = self->status;
    ++c->calls;
}

static void cancel_comp_init(cancel_comp_t *c)
{
    c->comp.func   = cancel_comp_cb;
    c->comp.count  = 1;
    c->comp.status = UCS_OK;
    c->status      = UCS_INPROGRESS;
    c->calls       = 0;
}

int test_flush_cancel(const test_resource_t *res)
{
    cancel_comp_t comps[CANCEL_NUM_SENDS], fcomp;
    int i, posted = 0, canceled = 0, ok;
    ucs_status_t status, flush_status;
    uct_mem_h memh;
    test_iface_t a, b;
    uct_iov_t iov;
    uint64_t hdr = 0;
    uct_ep_h ep;
    void *buf;

    buf = calloc(1, CANCEL_LEN);
    if ((buf == NULL) || !iface_open(res, &a) || !iface_open(res, &b) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &ep) ||
        (uct_md_mem_reg(md, buf, CANCEL_LEN, UCT_MD_MEM_ACCESS_ALL, &memh) !=
         UCS_OK)) {
        fprintf(stderr, "flush-cancel: setup failed\n");
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID, count_handler, &b, 0);

    /* Connected and idle: one message through, acknowledged */
    while (uct_ep_am_short(ep, AM_ID, hdr, NULL, 0) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(worker);
    }
    if (!flush_ep(ep, now_sec() + 30)) {
        fprintf(stderr, "flush-cancel: the first flush failed\n");
        return 1;
    }

    /* The peer stops progressing: nothing is acknowledged any more */
    iov.buffer = buf;
    iov.length = CANCEL_LEN;
    iov.memh   = memh;
    iov.stride = 0;
    iov.count  = 1;
    for (i = 0; i < CANCEL_NUM_SENDS; ++i) {
        cancel_comp_init(&comps[i]);
        status = uct_ep_am_zcopy(ep, AM_ID, &hdr, sizeof(hdr), &iov, 1, 0,
                                 &comps[i].comp);
        if (status == UCS_INPROGRESS) {
            ++posted;
        } else {
            comps[i].status = status;
        }
        uct_iface_progress(a.iface);
    }

    cancel_comp_init(&fcomp);
    flush_status = uct_iface_flush(a.iface, UCT_FLUSH_FLAG_CANCEL,
                                   &fcomp.comp);
    uct_iface_progress(a.iface);
    for (i = 0; i < CANCEL_NUM_SENDS; ++i) {
        canceled += (comps[i].calls == 1) &&
                    (comps[i].status == UCS_ERR_CANCELED);
    }
    status = uct_ep_am_short(ep, AM_ID, hdr, NULL, 0);
    printf("flush-cancel: %d zcopy in flight, iface flush(CANCEL) %s, %d "
           "completed canceled, send afterwards: %s\n", posted,
           ucs_status_string(flush_status), canceled,
           ucs_status_string(status));
    ok = (posted == CANCEL_NUM_SENDS) && (flush_status == UCS_OK) &&
         (fcomp.calls == 0) && (canceled == posted) &&
         (status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE);

    /* The peer catches up with what reached it; nothing breaks */
    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(worker);
    }
    uct_ep_destroy(ep);
    uct_md_mem_dereg(md, memh);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    free(buf);
    return ok ? 0 : 1;
}
