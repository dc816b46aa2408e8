/*
 * Shared parts of the qpx_ud UCT test program (ud_uct_test.c, ud_uct_raw.c).
 */
#ifndef UD_UCT_TEST_H_
#define UD_UCT_TEST_H_

#include <uct/api/uct.h>
#include <stdint.h>
#include <sys/types.h>

/* UD_TEST_TL=ud_verbs runs the same footprint test over UCX's own UD */
#define TL_NAME  tl_name()
#define AM_ID    5
#define MAX_ADDR 64

typedef struct {
    uct_component_h  comp;
    char             md_name[UCT_MD_NAME_MAX];
    char             dev_name[UCT_DEVICE_NAME_MAX];
} test_resource_t;

typedef struct {
    uct_iface_h      iface;
    uct_iface_attr_t attr;
    uint8_t          dev_addr[MAX_ADDR];
    uint8_t          iface_addr[MAX_ADDR];
    uint64_t         rx_expected;  /* next sequence number */
    uint64_t         rx_errors;
    uint64_t         rx_count;
    int              failed_eps;
} test_iface_t;

extern uct_worker_h worker;
extern ucs_async_context_t *async;
extern uct_md_h     md;
extern int          no_err_handler; /* peer-failure without an error handler */
extern int          use_ep_check;   /* peer-failure: idle ep, uct_ep_check */

const char *tl_name(void);
double now_sec(void);
int test_init(test_resource_t *res);
int iface_open(const test_resource_t *res, test_iface_t *ti);
ucs_status_t count_handler(void *arg, void *data, size_t length,
                          unsigned flags);

int ep_create(test_iface_t *ti, const uint8_t *dev_addr,
              const uint8_t *iface_addr, uct_ep_h *ep_p);
int flush_ep(uct_ep_h ep, double deadline);
int flush_iface(uct_iface_h iface, double deadline);
int write_full(int fd, const void *buf, size_t len);
int read_full(int fd, void *buf, size_t len);
/* A child process linked by two pipes: it runs child(arg, wfd, rfd) and
 * never returns; the parent gets the other ends, *rfd_p and *wfd_p */
pid_t fork_child(void (*child)(void *arg, int wfd, int rfd), void *arg,
                 int *rfd_p, int *wfd_p);
long vm_rss_kb(void);

/* ud_uct_peers.c: peer failure, many eps */
int test_peer_failure(double timeout);
int test_many_eps(int nprocs, int nifaces, int neps_per_iface);

/* ud_uct_robust.c: pending stall, progress-less peer, ep churn, late
 * connect */
int test_pending_stall(const test_resource_t *res);
int test_close_race(const test_resource_t *res);
int test_no_progress(const test_resource_t *res, double pause, int held);
int test_ep_churn(const test_resource_t *res, int count);
int test_late_connect(const test_resource_t *res);
int test_flush_cancel(const test_resource_t *res);

/* ud_uct_async.c: the user's calls against the async timer */
int test_async_race(const test_resource_t *res, double seconds);

/* ud_uct_raw.c: crafted packets from a raw UD QP */
int test_garbage(const test_resource_t *res);

#endif
