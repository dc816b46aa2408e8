/*
 * qpx_ud tests through the public UCT API, over softverbs.
 *
 *   ud_uct_test integrity N      two ifaces in one process, N messages each
 *                                way (short, bcopy, zcopy, varying sizes);
 *                                every message must arrive once, in order,
 *                                intact; flush must complete
 *   (peer-failure and many-eps: ud_uct_peers.c; pending-stall,
 *   no-progress, ep-churn, late-connect, flush-cancel: ud_uct_robust.c;
 *   garbage:
 *   ud_uct_raw.c)
 *
 * Exit 0 pass, 1 fail, 77 cannot run (no qpx_ud resource).
 */
#include "ud_uct_test.h"
#include "qpx_uct_open.h"

#include <uct/api/uct.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *tl_name(void)
{
    const char *tl = getenv("UD_TEST_TL");

    return (tl != NULL) ? tl : "qpx_ud";
}

static const char *component_name(void)
{
    return strncmp(tl_name(), "qpx", 3) ? "ib" : "qpx";
}

ucs_async_context_t        *async;
uct_worker_h               worker;
int                        no_err_handler; /* peer-failure without one */
int                        use_ep_check;   /* peer-failure: idle + ep_check */
uct_md_h                   md;

double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int find_resource(test_resource_t *res)
{
    uct_component_h *comps;
    uct_component_attr_t cattr;
    uct_md_resource_desc_t mdr[16];
    uct_tl_resource_desc_t *tls;
    unsigned ncomps, i, j, k, ntls;
    uct_md_config_t *md_config;
    uct_md_h m;

    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        return 0;
    }
    for (i = 0; i < ncomps; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                           UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(comps[i], &cattr);
        if (strcmp(cattr.name, component_name()) || (cattr.md_resource_count > 16)) {
            continue;
        }
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mdr;
        uct_component_query(comps[i], &cattr);
        for (j = 0; j < cattr.md_resource_count; ++j) {
            uct_md_config_read(comps[i], NULL, NULL, &md_config);
            if (uct_md_open(comps[i], mdr[j].md_name, md_config, &m) !=
                UCS_OK) {
                uct_config_release(md_config);
                continue;
            }
            uct_config_release(md_config);
            if (uct_md_query_tl_resources(m, &tls, &ntls) == UCS_OK) {
                for (k = 0; k < ntls; ++k) {
                    if (!strcmp(tls[k].tl_name, TL_NAME)) {
                        res->comp = comps[i];
                        strcpy(res->md_name, mdr[j].md_name);
                        strcpy(res->dev_name, tls[k].dev_name);
                        md = m;
                        uct_release_tl_resource_list(tls);
                        uct_release_component_list(comps);
                        return 1;
                    }
                }
                uct_release_tl_resource_list(tls);
            }
            uct_md_close(m);
        }
    }
    uct_release_component_list(comps);
    return 0;
}

/* Payload: 8-byte sequence number, then bytes derived from it */
static size_t msg_length(uint64_t seq, size_t max)
{
    return 8 + (seq * 7919) % (max - 8 + 1);
}

static void msg_fill(uint8_t *buf, uint64_t seq, size_t length)
{
    size_t i;

    memcpy(buf, &seq, sizeof(seq));
    for (i = 8; i < length; ++i) {
        buf[i] = (uint8_t)(seq * 31 + i);
    }
}

static ucs_status_t am_handler(void *arg, void *data, size_t length,
                               unsigned flags)
{
    test_iface_t *ti = arg;
    const uint8_t *buf = data;
    uint64_t seq;
    size_t i;

    (void)flags;
    ++ti->rx_count;
    if (length < 8) {
        ++ti->rx_errors;
        return UCS_OK;
    }
    memcpy(&seq, buf, sizeof(seq));
    if (seq != ti->rx_expected) {
        if (ti->rx_errors++ < 10) {
            fprintf(stderr, "iface %p: got seq %lu expected %lu\n", ti,
                    (unsigned long)seq, (unsigned long)ti->rx_expected);
        }
    }
    for (i = 8; i < length; ++i) {
        if (buf[i] != (uint8_t)(seq * 31 + i)) {
            if (ti->rx_errors++ < 10) {
                fprintf(stderr, "seq %lu: byte %zu corrupted\n",
                        (unsigned long)seq, i);
            }
            break;
        }
    }
    ti->rx_expected = seq + 1;
    return UCS_OK;
}

static ucs_status_t err_handler(void *arg, uct_ep_h ep, ucs_status_t status)
{
    test_iface_t *ti = arg;

    (void)ep;
    fprintf(stderr, "error handler: ep %p %s\n", ep,
            ucs_status_string(status));
    if (status == UCS_ERR_ENDPOINT_TIMEOUT) {
        ++ti->failed_eps;
    }
    return UCS_OK;
}

int iface_open(const test_resource_t *res, test_iface_t *ti)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;

    memset(ti, 0, sizeof(*ti));
    if (uct_md_iface_config_read(md, TL_NAME, NULL, NULL, &config) != UCS_OK) {
        return 0;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE;
    if (!no_err_handler) {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                             UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    }
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = TL_NAME;
    params.mode.device.dev_name = res->dev_name;
    params.err_handler          = err_handler;
    params.err_handler_arg      = ti;
    params.err_handler_flags    = 0;
    status = uct_iface_open(md, worker, &params, config, &ti->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_iface_open: %s\n", ucs_status_string(status));
        return 0;
    }
    uct_iface_query(ti->iface, &ti->attr);
    uct_iface_get_device_address(ti->iface, (uct_device_addr_t*)ti->dev_addr);
    uct_iface_get_address(ti->iface, (uct_iface_addr_t*)ti->iface_addr);
    uct_iface_set_am_handler(ti->iface, AM_ID, am_handler, ti,
                             0);
    uct_iface_progress_enable(ti->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return 1;
}

int ep_create(test_iface_t *ti, const uint8_t *dev_addr,
                     const uint8_t *iface_addr, uct_ep_h *ep_p)
{
    uct_ep_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = ti->iface;
    params.dev_addr   = (const uct_device_addr_t*)dev_addr;
    params.iface_addr = (const uct_iface_addr_t*)iface_addr;
    status = uct_ep_create(&params, ep_p);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_ep_create: %s\n", ucs_status_string(status));
        return 0;
    }
    return 1;
}

typedef struct {
    uint64_t seq;
    size_t   length;
} pack_arg_t;

static size_t pack_cb(void *dest, void *arg)
{
    pack_arg_t *p = arg;

    msg_fill(dest, p->seq, p->length);
    return p->length;
}

typedef struct {
    uct_completion_t comp;
    int              done;
} test_comp_t;

static void comp_cb(uct_completion_t *self)
{
    test_comp_t *c = ucs_container_of(self, test_comp_t, comp);

    c->done = (self->status == UCS_OK) ? 1 : -1;
}

typedef struct {
    test_iface_t *ti;
    uct_ep_h     ep;
    uint64_t     seq;    /* next to send */
    uint8_t      *zbuf;
    uct_mem_h    memh;
    test_comp_t  zc;     /* zcopy in flight while zc.done == 0 */
    int          zbusy;
} test_side_t;

/* Send the next message of side; returns the status (NO_RESOURCE: later) */
static ucs_status_t send_next(test_side_t *side)
{
    test_iface_t *ti = side->ti;
    uint64_t seq     = side->seq;
    size_t length;
    pack_arg_t arg;
    uct_iov_t iov;
    ucs_status_t status;
    ssize_t ret;
    uint64_t hdr;
    uint8_t buf[256];

    switch (seq % 3) {
    case 0: /* short: the 8-byte header is the sequence number */
        length = msg_length(seq, ti->attr.cap.am.max_short < 64 ?
                                 ti->attr.cap.am.max_short : 64);
        msg_fill(buf, seq, length);
        memcpy(&hdr, buf, sizeof(hdr));
        return uct_ep_am_short(side->ep, AM_ID, hdr, buf + 8, length - 8);
    case 1:
        arg.seq    = seq;
        arg.length = msg_length(seq, ti->attr.cap.am.max_bcopy);
        ret        = uct_ep_am_bcopy(side->ep, AM_ID, pack_cb, &arg, 0);
        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
    default:
        if (side->zbusy && (side->zc.done == 0)) {
            return UCS_ERR_NO_RESOURCE; /* its buffer is still in use */
        }
        if (side->zc.done < 0) {
            fprintf(stderr, "zcopy completed with an error\n");
            return UCS_ERR_IO_ERROR;
        }
        length = msg_length(seq, ti->attr.cap.am.max_zcopy);
        msg_fill(side->zbuf, seq, length);
        iov.buffer = side->zbuf + 8;
        iov.length = length - 8;
        iov.memh   = side->memh;
        iov.stride = 0;
        iov.count  = 1;
        side->zc.comp.func   = comp_cb;
        side->zc.comp.count  = 1;
        side->zc.comp.status = UCS_OK;
        side->zc.done        = 0;
        status = uct_ep_am_zcopy(side->ep, AM_ID, side->zbuf, 8, &iov, 1, 0,
                                 &side->zc.comp);
        if (status == UCS_INPROGRESS) {
            side->zbusy = 1;
            return UCS_OK;
        }
        /* Done, refused or failed: no zcopy of ours is in flight */
        side->zbusy = 0;
        if (status == UCS_OK) {
            side->zc.done = 1;
        }
        return status;
    }
}

static int side_init(test_side_t *side, test_iface_t *ti, test_iface_t *peer)
{
    memset(side, 0, sizeof(*side));
    side->ti   = ti;
    side->zbuf = aligned_alloc(64, 8192);
    if (uct_md_mem_reg(md, side->zbuf, 8192, UCT_MD_MEM_ACCESS_ALL,
                       &side->memh) != UCS_OK) {
        fprintf(stderr, "uct_md_mem_reg failed\n");
        return 0;
    }
    if ((getenv("UD_TEST_CONNECT") != NULL) &&
        !strcmp(getenv("UD_TEST_CONNECT"), "ep")) {
        return 1; /* connect_to_ep_pair() creates the eps */
    }
    return ep_create(ti, peer->dev_addr, peer->iface_addr, &side->ep);
}

static void side_cleanup(test_side_t *side)
{
    uct_ep_destroy(side->ep);
    uct_md_mem_dereg(md, side->memh);
    free(side->zbuf);
}

/* Flush ep, or iface when ep is NULL, with a completion, until deadline */
static int flush_wait(uct_ep_h ep, uct_iface_h iface, double deadline)
{
    test_comp_t fc;
    ucs_status_t status;

    fc.comp.func   = comp_cb;
    fc.comp.count  = 1;
    fc.comp.status = UCS_OK;
    fc.done        = 0;
    do {
        status = (ep != NULL) ? uct_ep_flush(ep, 0, &fc.comp) :
                                uct_iface_flush(iface, 0, &fc.comp);
        uct_worker_progress(worker);
    } while ((status == UCS_ERR_NO_RESOURCE) && (now_sec() < deadline));
    if (status == UCS_OK) {
        return 1;
    } else if (status != UCS_INPROGRESS) {
        fprintf(stderr, "flush: %s\n", ucs_status_string(status));
        return 0;
    }
    while ((fc.done == 0) && (now_sec() < deadline)) {
        uct_worker_progress(worker);
    }
    return fc.done == 1;
}

int flush_ep(uct_ep_h ep, double deadline)
{
    return flush_wait(ep, NULL, deadline);
}

/* Connect the two sides with CONNECT_TO_EP instead (UD_TEST_CONNECT=ep) */
static int connect_to_ep_pair(test_side_t *s0, test_side_t *s1)
{
    uint8_t addr0[MAX_ADDR], addr1[MAX_ADDR];
    uct_ep_params_t params;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = s0->ti->iface;
    if (uct_ep_create(&params, &s0->ep) != UCS_OK) {
        return 0;
    }
    params.iface = s1->ti->iface;
    if (uct_ep_create(&params, &s1->ep) != UCS_OK) {
        return 0;
    }
    uct_ep_get_address(s0->ep, (uct_ep_addr_t*)addr0);
    uct_ep_get_address(s1->ep, (uct_ep_addr_t*)addr1);
    return (uct_ep_connect_to_ep(s0->ep,
                                 (uct_device_addr_t*)s1->ti->dev_addr,
                                 (uct_ep_addr_t*)addr1) == UCS_OK) &&
           (uct_ep_connect_to_ep(s1->ep,
                                 (uct_device_addr_t*)s0->ti->dev_addr,
                                 (uct_ep_addr_t*)addr0) == UCS_OK);
}

/* uct_iface_flush with a completion: every ep of the iface acknowledged */
int flush_iface(uct_iface_h iface, double deadline)
{
    return flush_wait(NULL, iface, deadline);
}

static int test_integrity(const test_resource_t *res, uint64_t count)
{
    test_iface_t a, b;
    test_side_t sides[2];
    ucs_status_t status;
    double deadline, start = now_sec();
    int i, ok, flushed;

    if (!iface_open(res, &a) || !iface_open(res, &b) ||
        !side_init(&sides[0], &a, &b) || !side_init(&sides[1], &b, &a)) {
        return 1;
    }
    if ((sides[0].ep == NULL) && !connect_to_ep_pair(&sides[0], &sides[1])) {
        fprintf(stderr, "CONNECT_TO_EP setup failed\n");
        return 1;
    }

    deadline = now_sec() + 900;
    while (((sides[0].seq < count) || (sides[1].seq < count)) &&
           (now_sec() < deadline)) {
        for (i = 0; i < 2; ++i) {
            if (sides[i].seq >= count) {
                continue;
            }
            status = send_next(&sides[i]);
            if (status == UCS_OK) {
                ++sides[i].seq;
            } else if (status != UCS_ERR_NO_RESOURCE) {
                fprintf(stderr, "send %d seq %lu: %s\n", i,
                        (unsigned long)sides[i].seq,
                        ucs_status_string(status));
                return 1;
            }
        }
        uct_worker_progress(worker);
    }

    flushed = flush_iface(a.iface, deadline) && flush_iface(b.iface, deadline) &&
              flush_ep(sides[0].ep, deadline) && flush_ep(sides[1].ep, deadline);
    /* Flushed: everything sent was acknowledged, so it was delivered */
    printf("integrity: sent %lu/%lu, received %lu/%lu, errors %lu/%lu, "
           "flush %s, %.1f s\n", (unsigned long)sides[0].seq,
           (unsigned long)sides[1].seq, (unsigned long)b.rx_count,
           (unsigned long)a.rx_count, (unsigned long)b.rx_errors,
           (unsigned long)a.rx_errors, flushed ? "ok" : "FAILED",
           now_sec() - start);
    ok = flushed && (a.rx_count == count) && (b.rx_count == count) &&
         (a.rx_errors == 0) && (b.rx_errors == 0) &&
         (sides[0].zc.done == 1) && (sides[1].zc.done == 1);

    side_cleanup(&sides[0]);
    side_cleanup(&sides[1]);
    uct_iface_close(a.iface);
    uct_iface_close(b.iface);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------------
 * Child processes: open ifaces, publish their addresses, serve until told
 */
/* The pipe helpers of the qpx_ud tests: 1 when all of len went through */
int write_full(int fd, const void *buf, size_t len)
{
    return qpx_uct_xfer(fd, (void*)buf, len, 1) == 0;
}

int read_full(int fd, void *buf, size_t len)
{
    return qpx_uct_xfer(fd, buf, len, 0) == 0;
}

ucs_status_t count_handler(void *arg, void *data, size_t length,
                                  unsigned flags)
{
    (void)data; (void)length; (void)flags;
    ++((test_iface_t*)arg)->rx_count;
    return UCS_OK;
}

int test_init(test_resource_t *res)
{
    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) !=
        UCS_OK) {
        return 0;
    }
    if (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK) {
        return 0;
    }
    return find_resource(res);
}

pid_t fork_child(void (*child)(void *arg, int wfd, int rfd), void *arg,
                 int *rfd_p, int *wfd_p)
{
    int up[2], down[2];
    pid_t pid;

    if (pipe(up) || pipe(down)) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        child(arg, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    *rfd_p = up[0];
    *wfd_p = down[1];
    return pid;
}

long vm_rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while ((f != NULL) && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "VmRSS:", 6)) {
            kb = atol(line + 6);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

int main(int argc, char **argv)
{
    test_resource_t res;

    setvbuf(stdout, NULL, _IONBF, 0);
    if ((argc >= 3) && !strcmp(argv[1], "integrity")) {
        if (!test_init(&res)) {
            printf("SKIP: no %s resource\n", TL_NAME);
            return 77;
        }
        return test_integrity(&res, strtoull(argv[2], NULL, 0));
    } else if ((argc >= 2) && !strcmp(argv[1], "garbage")) {
        if (!test_init(&res)) {
            printf("SKIP: no %s resource\n", TL_NAME);
            return 77;
        }
        return test_garbage(&res);
    } else if ((argc >= 3) && !strcmp(argv[1], "peer-failure")) {
        no_err_handler = (argc >= 4) && !strcmp(argv[3], "no-handler");
        use_ep_check   = (argc >= 4) && !strcmp(argv[3], "ep-check");
        return test_peer_failure(atof(argv[2]));
    } else if ((argc >= 2) && !strcmp(argv[1], "pending-stall")) {
        return test_init(&res) ? test_pending_stall(&res) : 77;
    } else if ((argc >= 3) && !strcmp(argv[1], "no-progress")) {
        return test_init(&res) ?
               test_no_progress(&res, atof(argv[2]),
                                (argc >= 4) && !strcmp(argv[3], "held")) :
               77;
    } else if ((argc >= 3) && !strcmp(argv[1], "async-race")) {
        return test_init(&res) ? test_async_race(&res, atof(argv[2])) : 77;
    } else if ((argc >= 2) && !strcmp(argv[1], "late-connect")) {
        return test_init(&res) ? test_late_connect(&res) : 77;
    } else if ((argc >= 2) && !strcmp(argv[1], "close-race")) {
        return test_init(&res) ? test_close_race(&res) : 77;
    } else if ((argc >= 2) && !strcmp(argv[1], "flush-cancel")) {
        return test_init(&res) ? test_flush_cancel(&res) : 77;
    } else if ((argc >= 3) && !strcmp(argv[1], "ep-churn")) {
        return test_init(&res) ? test_ep_churn(&res, atoi(argv[2])) : 77;
    } else if ((argc >= 5) && !strcmp(argv[1], "many-eps")) {
        return test_many_eps(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    }
    fprintf(stderr, "usage: %s integrity N | garbage | "
            "peer-failure TIMEOUT [no-handler|ep-check] | "
            "many-eps PROCS IFACES EPS_PER_IFACE | pending-stall | "
            "no-progress SECONDS [held] | ep-churn N | late-connect | "
            "close-race | flush-cancel\n", argv[0]);
    return 1;
}
