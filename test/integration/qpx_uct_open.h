/*
 * Opening a UCT transport by name, for the test and benchmark programs that
 * drive qpx (or UCX's own transports) through the public UCT API.
 */
#ifndef QPX_UCT_OPEN_H_
#define QPX_UCT_OPEN_H_

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <stddef.h>

/*
 * The memory domain whose component offers tl_name on dev_name.
 * Returns 0 (outputs set), or 77 when no component offers it.
 */
int qpx_uct_md_open(const char *tl_name, const char *dev_name,
                    uct_component_h *comp_p, uct_md_h *md_p);

/*
 * An async context (thread mode), a worker and the interface tl_name on
 * dev_name of md, with err_cb(err_arg, ...) as its error handler (called
 * from any thread) unless err_cb is NULL. Progress is enabled.
 * Returns 0 (outputs set) or -1.
 */
int qpx_uct_iface_open(uct_md_h md, const char *tl_name, const char *dev_name,
                       uct_error_handler_t err_cb, void *err_arg,
                       ucs_async_context_t **async_p, uct_worker_h *worker_p,
                       uct_iface_h *iface_p);

/*
 * An endpoint of interface a to interface b of the same process (and b's
 * back to a where the transport connects endpoint to endpoint; else *ba_p
 * is NULL). Returns 0 or -1.
 */
int qpx_uct_connect_pair(uct_iface_h a, uct_iface_h b, uct_ep_h *ab_p,
                         uct_ep_h *ba_p);

/*
 * Two interfaces of one transport on one worker of one process, for the
 * loopback test programs: qpx_uct_loopback_open(argc, argv, opts, lb)
 * reads -x TL and -d DEV (default softverbs0:1) and, in opts, the letters
 * of further options with an argument, each handed to lb->opt_cb; it opens
 * the memory domain, an async context, a worker, the sender's and the
 * receiver's interface (progress enabled) and a registered buffer of
 * buf_size bytes. Returns 0, 2 on a usage error, 77 without TL, 1 when
 * something cannot be set up (all logged).
 */
typedef struct qpx_uct_loopback {
    const char          *tl, *dev;
    void                (*opt_cb)(int opt, const char *arg);
    size_t              buf_size;
    uct_md_h            md;
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_iface_h         send_iface, recv_iface;
    uct_iface_attr_t    attr;       /* the sender's */
    void                *buf;
    uct_mem_h           memh;
} qpx_uct_loopback_t;

int qpx_uct_loopback_open(int argc, char **argv, const char *opts,
                          qpx_uct_loopback_t *lb);
void qpx_uct_loopback_close(qpx_uct_loopback_t *lb);

/* One check: "PASS: ..." or "FAIL: ..." (printf-style), counted in
 * qpx_uct_npass / qpx_uct_nfail for the closing "N passed, N failed" */
extern int qpx_uct_npass, qpx_uct_nfail;
void qpx_uct_report(int ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* All of len bytes through fd: out != 0 writes, else reads. 0 or -1. */
int qpx_uct_xfer(int fd, void *p, size_t len, int out);

#endif
