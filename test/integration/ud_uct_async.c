/*
 * qpx_ud: the user's thread against the async timer, through the public
 * UCT API over softverbs.
 *
 *   ud_uct_test async-race S    for S seconds the parent sends (am_short
 *                               and am_bcopy in turn) in bursts without
 *                               calling progress, so that its acks come
 *                               through its async timer while it sends, and
 *                               between bursts progresses for a while. The
 *                               child progresses in short spells and sleeps
 *                               between them, so that its timer receives
 *                               while its user's progress comes and goes;
 *                               its AM handler is flagged async and answers
 *                               every 32nd message from whichever thread it
 *                               runs on. Every message and answer is
 *                               checked (sequence, length, payload), and
 *                               the counts must match at the end. Run with
 *                               UCX_QPX_UD_ASYNC_IDLE=1ms and
 *                               UCX_QPX_UD_PRINT_STATS=y to see how often
 *                               the timers ran (async_runs) and found a
 *                               user's call inside (async_busy).
 */
#include "ud_uct_test.h"

#include <uct/api/uct.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RACE_SHORT_LEN 24  /* am_short payload after the 8-byte header */
#define RACE_BCOPY_LEN 56  /* am_bcopy payload after the sequence */
#define RACE_REPLY_ID  (AM_ID + 2)
#define RACE_REPLY_EVERY 32

typedef struct {
    test_iface_t  ti;
    uct_ep_h      reply_ep;       /* the child's, to the parent */
    uint64_t      replies_sent;
    uint64_t      replies_failed; /* no resource: not sent, not counted */
    uint64_t      async_calls;    /* handler calls on the async thread */
} race_rx_t;

static void race_fill(uint8_t *p, uint64_t seq, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(seq * 31 + i);
    }
}

static int race_check(const uint8_t *p, uint64_t seq, size_t len)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (p[i] != (uint8_t)(seq * 31 + i)) {
            return 0;
        }
    }
    return 1;
}

/* The child's handler: sequence, length and payload, then every 32nd an
 * answer from this thread (the async one or the user's) */
static ucs_status_t race_rx_handler(void *arg, void *data, size_t length,
                                   unsigned flags)
{
    race_rx_t *rx = arg;
    uint64_t seq;

    (void)flags;
    memcpy(&seq, data, sizeof(seq));
    if ((seq != rx->ti.rx_expected) ||
        (length != sizeof(seq) + ((seq & 1) ? RACE_BCOPY_LEN :
                                              RACE_SHORT_LEN)) ||
        !race_check((const uint8_t*)data + sizeof(seq), seq,
                    length - sizeof(seq))) {
        if (rx->ti.rx_errors++ < 5) {
            fprintf(stderr, "async-race: message %lu (expected %lu, length "
                    "%zu) is wrong\n", (unsigned long)seq,
                    (unsigned long)rx->ti.rx_expected, length);
        }
    }
    rx->ti.rx_expected = seq + 1;
    ++rx->ti.rx_count;

    if ((seq % RACE_REPLY_EVERY) == 0) {
        if (uct_ep_am_short(rx->reply_ep, RACE_REPLY_ID,
                            rx->replies_sent, NULL, 0) == UCS_OK) {
            ++rx->replies_sent;
        } else {
            ++rx->replies_failed;
        }
    }
    return UCS_OK;
}

/* The parent's: answers in order, nothing else */
static ucs_status_t race_reply_handler(void *arg, void *data, size_t length,
                                       unsigned flags)
{
    test_iface_t *ti = arg;
    uint64_t seq;

    (void)flags;
    memcpy(&seq, data, sizeof(seq));
    if ((length != sizeof(seq)) || (seq != ti->rx_expected)) {
        ++ti->rx_errors;
    }
    ti->rx_expected = seq + 1;
    ++ti->rx_count;
    return UCS_OK;
}

static void race_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    nanosleep(&ts, NULL);
}

static void race_child(void *arg, int wfd, int rfd)
{
    uint8_t addr[2][MAX_ADDR];
    uint64_t report[4];
    test_resource_t res;
    race_rx_t rx = {};
    double until;
    char cmd = 0;

    (void)arg;
    srand(getpid());
    if (!test_init(&res) || !iface_open(&res, &rx.ti)) {
        _exit(77);
    }
    uct_iface_set_am_handler(rx.ti.iface, AM_ID + 1, race_rx_handler, &rx,
                             UCT_CB_FLAG_ASYNC);
    write_full(wfd, rx.ti.dev_addr, MAX_ADDR);
    write_full(wfd, rx.ti.iface_addr, MAX_ADDR);
    if (!read_full(rfd, addr[0], MAX_ADDR) ||
        !read_full(rfd, addr[1], MAX_ADDR) ||
        !ep_create(&rx.ti, addr[0], addr[1], &rx.reply_ep)) {
        _exit(1);
    }
    /* Only now may messages come: the handler answers on reply_ep */
    write_full(wfd, "r", 1);
    fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);

    /* Spells of progress (0-2 ms) and of sleep (0-3 ms): the timer
     * (every 0.5 ms) receives while the user is away, and the user comes
     * back while it works */
    while (cmd != 'x') {
        until = now_sec() + (rand() % 2000) * 1e-6;
        while (now_sec() < until) {
            uct_worker_progress(worker);
        }
        race_sleep_us(rand() % 3000);
        if (read(rfd, &cmd, 1) != 1) {
            cmd = 0;
        }
    }

    /* The answers acknowledged, then the counts */
    report[3] = flush_ep(rx.reply_ep, now_sec() + 30);
    report[0] = rx.ti.rx_count;
    report[1] = rx.ti.rx_errors;
    report[2] = rx.replies_sent;
    write_full(wfd, report, sizeof(report));
    printf("async-race: child: %lu received, %lu wrong, %lu answers sent, "
           "%lu not sent (no resource)\n", (unsigned long)report[0],
           (unsigned long)report[1], (unsigned long)report[2],
           (unsigned long)rx.replies_failed);
    while (cmd != 'q') {
        uct_worker_progress(worker);
        if (read(rfd, &cmd, 1) != 1) {
            cmd = 0;
        }
    }
    uct_ep_destroy(rx.reply_ep);
    uct_iface_close(rx.ti.iface); /* its statistics */
    _exit(0);
}

static size_t race_pack(void *dest, void *arg)
{
    memcpy(dest, arg, sizeof(uint64_t) + RACE_BCOPY_LEN);
    return sizeof(uint64_t) + RACE_BCOPY_LEN;
}

static ucs_status_t race_send(uct_ep_h ep, uint64_t seq)
{
    uint8_t buf[sizeof(seq) + RACE_BCOPY_LEN];
    ssize_t len;

    if (!(seq & 1)) {
        race_fill(buf, seq, RACE_SHORT_LEN);
        return uct_ep_am_short(ep, AM_ID + 1, seq, buf, RACE_SHORT_LEN);
    }

    memcpy(buf, &seq, sizeof(seq));
    race_fill(buf + sizeof(seq), seq, RACE_BCOPY_LEN);
    len = uct_ep_am_bcopy(ep, AM_ID + 1, race_pack, buf, 0);
    return (len < 0) ? (ucs_status_t)len : UCS_OK;
}

int test_async_race(const test_resource_t *res, double seconds)
{
    uint8_t addr[2][MAX_ADDR];
    uint64_t report[4] = {};
    uint64_t sent = 0;
    ucs_status_t status = UCS_OK;
    test_iface_t a = {};
    double end, until;
    int rfd, wfd, ok;
    char ready = 0;
    uct_ep_h ep;
    pid_t pid;

    pid = fork_child(race_child, NULL, &rfd, &wfd);
    if (pid < 0) {
        return 1;
    }
    if (!read_full(rfd, addr[0], MAX_ADDR) ||
        !read_full(rfd, addr[1], MAX_ADDR) || !iface_open(res, &a) ||
        !ep_create(&a, addr[0], addr[1], &ep)) {
        fprintf(stderr, "async-race: setup failed\n");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 1;
    }
    uct_iface_set_am_handler(a.iface, RACE_REPLY_ID, race_reply_handler, &a,
                             0);
    write_full(wfd, a.dev_addr, MAX_ADDR);
    write_full(wfd, a.iface_addr, MAX_ADDR);
    if (!read_full(rfd, &ready, 1) || (ready != 'r')) {
        fprintf(stderr, "async-race: the child did not get ready\n");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 1;
    }

    end = now_sec() + seconds;
    while ((now_sec() < end) && (a.failed_eps == 0)) {
        /* 5 ms of sends and nothing else: the window opens only through
         * the acks the async timer takes in */
        until = now_sec() + 0.005;
        while ((now_sec() < until) &&
               (((status = race_send(ep, sent)) == UCS_OK) ||
                (status == UCS_ERR_NO_RESOURCE))) {
            sent += (status == UCS_OK);
        }
        if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
            break;
        }
        /* 1 ms of sends and progress */
        until = now_sec() + 0.001;
        while ((now_sec() < until) &&
               (((status = race_send(ep, sent)) == UCS_OK) ||
                (status == UCS_ERR_NO_RESOURCE))) {
            sent += (status == UCS_OK);
            uct_worker_progress(worker);
        }
        if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
            break;
        }
    }

    ok = (a.failed_eps == 0) &&
         ((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE)) &&
         flush_ep(ep, now_sec() + 30);
    /* The child's report comes while this side does not progress: its
     * answers' acks come from this side's timer */
    write_full(wfd, "x", 1);
    ok = read_full(rfd, report, sizeof(report)) && ok;
    for (until = now_sec() + 0.1; now_sec() < until;) {
        uct_worker_progress(worker); /* the last answers delivered */
    }
    printf("async-race: %lu sent in %.1f s (status %s), child received "
           "%lu (%lu wrong); answers %lu sent, %lu received (%lu wrong); "
           "child's flush %s\n", (unsigned long)sent, seconds,
           ucs_status_string(status), (unsigned long)report[0],
           (unsigned long)report[1], (unsigned long)report[2],
           (unsigned long)a.rx_count, (unsigned long)a.rx_errors,
           report[3] ? "done" : "FAILED");
    ok = ok && (report[0] == sent) && (report[1] == 0) && report[3] &&
         (report[2] == a.rx_count) && (a.rx_errors == 0) && (sent > 0);

    write_full(wfd, "q", 1);
    waitpid(pid, NULL, 0);
    uct_ep_destroy(ep);
    uct_iface_close(a.iface);
    return ok ? 0 : 1;
}
