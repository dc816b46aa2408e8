/*
 * qpx_ud tests with peer processes, through the public UCT API:
 *
 *   ud_uct_test peer-failure T   a child process is killed mid-traffic: the
 *                                parent's error handler must fire within
 *                                T seconds and another ep must keep working
 *   ud_uct_test many-eps P I E   P child processes with I ifaces each; one
 *                                parent iface creates E eps to each child
 *                                iface, sends on all, flushes all
 */
#include "ud_uct_test.h"

#include <uct/api/uct.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Child: I ifaces; sends their addresses to wfd; on a byte from rfd, sends
 * back the total count received and exits */
static void child_serve(void *arg, int wfd, int rfd)
{
    int nifaces = *(int*)arg;
    test_resource_t res;
    test_iface_t *tis = calloc(nifaces, sizeof(*tis));
    uint64_t total = 0;
    struct timespec ts = {0, 0};
    fd_set fds;
    int i;

    if (!test_init(&res)) {
        _exit(77);
    }
    for (i = 0; i < nifaces; ++i) {
        if (!iface_open(&res, &tis[i])) {
            _exit(1);
        }
        uct_iface_set_am_handler(tis[i].iface, AM_ID + 1, count_handler,
                                 &tis[i], 0);
        write_full(wfd, tis[i].dev_addr, MAX_ADDR);
        write_full(wfd, tis[i].iface_addr, MAX_ADDR);
    }
    for (;;) {
        for (i = 0; i < 1000; ++i) {
            uct_worker_progress(worker);
        }
        FD_ZERO(&fds);
        FD_SET(rfd, &fds);
        if (pselect(rfd + 1, &fds, NULL, NULL, &ts, NULL) > 0) {
            break;
        }
    }
    for (i = 0; i < nifaces; ++i) {
        total += tis[i].rx_count;
    }
    write_full(wfd, &total, sizeof(total));
    /* keep acknowledging until the parent is done with us */
    for (i = 0; i < 200000; ++i) {
        uct_worker_progress(worker);
    }
    _exit(0);
}

/* QPs this process has, from softverbs-stat ($SOFTVERBS_STAT) */
static int own_qp_count(void)
{
    const char *tool = getenv("SOFTVERBS_STAT");
    char cmd[512], line[512], *p;
    int qps = -1;
    FILE *f;

    if (tool == NULL) {
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "%s -p %d", tool, (int)getpid());
    f = popen(cmd, "r");
    while ((f != NULL) && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "proc", 4) && ((p = strstr(line, " qp=")) != NULL)) {
            qps = atoi(p + 4);
        }
    }
    if (f != NULL) {
        pclose(f);
    }
    return qps;
}

int test_many_eps(int nprocs, int nifaces, int neps_per_iface)
{
    int total_ifaces = nprocs * nifaces, ok = 1, i, j, n = 0, qp0, qp1;
    int neps = total_ifaces * neps_per_iface;
    uint8_t (*addrs)[2][MAX_ADDR] = calloc(total_ifaces, sizeof(*addrs));
    uct_ep_h *eps = calloc(neps, sizeof(*eps));
    pid_t *pids = calloc(nprocs, sizeof(*pids));
    int *wfds = calloc(nprocs, sizeof(int)), *rfds = calloc(nprocs, sizeof(int));
    test_resource_t res;
    test_iface_t p;
    uint64_t total = 0, count;
    ucs_status_t status;
    double deadline, start;
    long rss0, rss1;
    uint64_t payload = 0;

    for (i = 0; i < nprocs; ++i) {
        pids[i] = fork_child(child_serve, &nifaces, &rfds[i], &wfds[i]);
        for (j = 0; j < nifaces; ++j) {
            if (!read_full(rfds[i], addrs[i * nifaces + j][0], MAX_ADDR) ||
                !read_full(rfds[i], addrs[i * nifaces + j][1], MAX_ADDR)) {
                fprintf(stderr, "child %d did not start\n", i);
                return 1;
            }
        }
    }

    if (!test_init(&res) || !iface_open(&res, &p)) {
        return 1;
    }
    qp0  = own_qp_count();
    rss0 = vm_rss_kb();
    start = now_sec();
    for (i = 0; i < neps; ++i) {
        if (!ep_create(&p, addrs[i % total_ifaces][0], addrs[i % total_ifaces][1],
                       &eps[i])) {
            return 1;
        }
        if ((i + 1 == 1) || (i + 1 == 64) || (i + 1 == neps)) {
            printf("footprint: %d eps: VmRSS +%ld kB, QPs of this process %d\n",
                   i + 1, vm_rss_kb() - rss0, own_qp_count());
        }
    }
    qp1 = own_qp_count();
    rss1 = vm_rss_kb();

    /* One message on every ep (the first one also carries the handshake) */
    deadline = now_sec() + 300;
    for (i = 0; (i < neps) && (now_sec() < deadline);) {
        status = uct_ep_am_short(eps[i], AM_ID + 1, i, &payload, 8);
        if (status == UCS_OK) {
            ++i;
        } else if (status != UCS_ERR_NO_RESOURCE) {
            fprintf(stderr, "ep %d: %s\n", i, ucs_status_string(status));
            return 1;
        }
        uct_worker_progress(worker);
    }
    if (!flush_iface(p.iface, deadline)) {
        fprintf(stderr, "iface flush of %d eps failed\n", neps);
        ok = 0;
    }
    for (i = 0; i < neps; ++i) {
        n += flush_ep(eps[i], deadline);
    }
    printf("many-eps: %d eps over %d ifaces in %d processes, %d flushed, "
           "%.1f s\n", neps, total_ifaces, nprocs, n, now_sec() - start);

    for (i = 0; i < nprocs; ++i) {
        write_full(wfds[i], "x", 1);
        if (!read_full(rfds[i], &count, sizeof(count))) {
            count = 0;
        }
        total += count;
    }
    printf("many-eps: children received %lu of %d; QPs of this process: "
           "%d before eps, %d with %d eps; VmRSS +%ld kB (%.0f B/ep)\n",
           (unsigned long)total, neps, qp0, qp1, neps, rss1 - rss0,
           (rss1 - rss0) * 1024.0 / neps);
    /* qpx_ud: exactly one QP for the interface, whatever the ep count */
    ok = ok && (n == neps) && (total == (uint64_t)neps) && (qp1 == qp0) &&
         ((qp0 == 1) || strcmp(tl_name(), "qpx_ud"));

    for (i = 0; i < neps; ++i) {
        uct_ep_destroy(eps[i]);
    }
    uct_iface_close(p.iface);
    for (i = 0; i < nprocs; ++i) {
        kill(pids[i], SIGTERM);
        waitpid(pids[i], NULL, 0);
    }
    return ok ? 0 : 1;
}

int test_peer_failure(double timeout)
{
    uint8_t addr[2][MAX_ADDR];
    test_resource_t res;
    test_iface_t a, b;
    uct_ep_h ec, eb;
    uint64_t payload = 0;
    int wfd, rfd, i, ok, sent_after = 0, one = 1;
    ucs_status_t status;
    double t_kill, t_fail = -1, deadline;
    pid_t pid;

    pid = fork_child(child_serve, &one, &rfd, &wfd);
    if ((pid < 0) || !read_full(rfd, addr[0], MAX_ADDR) ||
        !read_full(rfd, addr[1], MAX_ADDR)) {
        fprintf(stderr, "child did not start\n");
        return 1;
    }
    if (!test_init(&res) || !iface_open(&res, &a) || !iface_open(&res, &b) ||
        !ep_create(&a, addr[0], addr[1], &ec) ||
        !ep_create(&a, b.dev_addr, b.iface_addr, &eb)) {
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b,
                             0);

    /* The child is alive: traffic is acknowledged */
    deadline = now_sec() + 60;
    for (i = 0; (i < 1000) && (now_sec() < deadline);) {
        status = uct_ep_am_short(ec, AM_ID + 1, i, &payload, 8);
        i += (status == UCS_OK);
        uct_worker_progress(worker);
    }
    if (!flush_ep(ec, deadline)) {
        fprintf(stderr, "flush to the live child failed\n");
        return 1;
    }

    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    t_kill   = now_sec();
    deadline = t_kill + timeout * 3 + 10;
    status   = UCS_OK;
    while ((a.failed_eps == 0) && (status != UCS_ERR_ENDPOINT_TIMEOUT) &&
           (now_sec() < deadline)) {
        if (use_ep_check) {
            /* Idle ep: only the keepalive probe can find the failure */
            uct_ep_check(ec, 0, NULL);
        } else {
            status = uct_ep_am_short(ec, AM_ID + 1, 0, &payload, 8);
            sent_after += (status == UCS_OK);
        }
        uct_worker_progress(worker);
    }
    if ((a.failed_eps > 0) || (status == UCS_ERR_ENDPOINT_TIMEOUT)) {
        t_fail = now_sec() - t_kill;
    }
    status = uct_ep_am_short(ec, AM_ID + 1, 0, &payload, 8);
    printf("peer-failure: ep failed after %.2f s (timeout %.2f s, error "
           "handler %s, called %d), %d sends accepted after the kill, send on "
           "the failed ep: %s\n", t_fail, timeout,
           no_err_handler ? "none" : "set", a.failed_eps, sent_after,
           ucs_status_string(status));

    /* The interface keeps serving its other endpoints */
    deadline = now_sec() + 60;
    for (i = 0; (i < 1000) && (now_sec() < deadline);) {
        i += (uct_ep_am_short(eb, AM_ID + 1, i, &payload, 8) == UCS_OK);
        uct_worker_progress(worker);
    }
    ok = flush_ep(eb, deadline);
    printf("peer-failure: other ep after the failure: %lu/1000 delivered, "
           "flush %s\n", (unsigned long)b.rx_count, ok ? "ok" : "FAILED");

    ok = ok && (t_fail >= 0) && (t_fail <= timeout + 2.0) &&
         (b.rx_count == 1000) && (status == UCS_ERR_ENDPOINT_TIMEOUT) &&
         (a.failed_eps == (no_err_handler ? 0 : 1));
    uct_ep_destroy(ec);
    uct_ep_destroy(eb);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    return ok ? 0 : 1;
}
