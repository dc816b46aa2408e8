/*
 * softverbs conformance suite: helpers shared by all cases (messaging
 * between ranks, patterns, device/endpoint setup, post-and-poll).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int svt_msg_fd = 2;

static void svt_vmsg(const char *prefix, const char *fmt, va_list ap)
{
    char buf[768];
    int n;

    n = snprintf(buf, sizeof(buf), "%s", prefix);
    n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
    if (n > (int)sizeof(buf) - 2) {
        n = sizeof(buf) - 2;
    }
    buf[n++] = '\n';
    if (write(svt_msg_fd, buf, n) < 0) {
        /* nothing to do: the verdict is the exit status */
    }
}

void svt_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    svt_vmsg("", fmt, ap);
    va_end(ap);
    _exit(1);
}

void svt_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    svt_vmsg("", fmt, ap);
    va_end(ap);
    _exit(77);
}

void svt_note(const char *fmt, ...)
{
    va_list ap;

    if (getenv("SVT_VERBOSE") == NULL) {
        return;
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---------------------------------------------------------------------- */

void svt_msg_send(svt_proc_t *p, int peer, const void *buf, size_t len)
{
    const char *ptr = buf;
    ssize_t n;

    while (len > 0) {
        n = write(p->sock[peer], ptr, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if ((n < 0) && ((errno == EPIPE) || (errno == ECONNRESET))) {
            _exit(1); /* the peer failed and reports why */
        }
        SVT_CHECK(n > 0, "rank %d: send to rank %d failed: %s", p->rank, peer,
                  strerror(errno));
        ptr += n;
        len -= n;
    }
}

void svt_msg_recv(svt_proc_t *p, int peer, void *buf, size_t len)
{
    char *ptr = buf;
    ssize_t n;

    while (len > 0) {
        n = read(p->sock[peer], ptr, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if ((n == 0) || ((n < 0) && (errno == ECONNRESET))) {
            _exit(1); /* the peer failed and reports why */
        }
        SVT_CHECK(n > 0, "rank %d: recv from rank %d failed: %s", p->rank,
                  peer, strerror(errno));
        ptr += n;
        len -= n;
    }
}

void svt_sync(svt_proc_t *p, int peer)
{
    char c = 's';

    svt_msg_send(p, peer, &c, 1);
    svt_msg_recv(p, peer, &c, 1);
}

/* All ranks meet (rank 0 is the hub) */
void svt_barrier(svt_proc_t *p)
{
    int r;

    if (p->rank != 0) {
        svt_sync(p, 0);
        return;
    }
    for (r = 1; r < p->nprocs; ++r) {
        svt_sync(p, r);
    }
}

uint64_t svt_xchg_u64(svt_proc_t *p, int peer, uint64_t v)
{
    uint64_t other;

    svt_msg_send(p, peer, &v, sizeof(v));
    svt_msg_recv(p, peer, &other, sizeof(other));
    return other;
}

double svt_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void svt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------------- */

static inline uint8_t svt_pattern_byte(size_t i, uint32_t seed)
{
    uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u + (uint32_t)(i >> 13);

    return (uint8_t)((x >> 24) ^ (x >> 11) ^ seed);
}

void svt_fill(void *buf, size_t len, uint32_t seed)
{
    uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        b[i] = svt_pattern_byte(i, seed);
    }
}

ssize_t svt_verify(const void *buf, size_t len, uint32_t seed)
{
    const uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        if (b[i] != svt_pattern_byte(i, seed)) {
            return i;
        }
    }
    return -1;
}

void svt_pattern_check(const void *buf, size_t len, uint32_t seed,
                       const char *what)
{
    ssize_t bad = svt_verify(buf, len, seed);

    SVT_CHECK(bad < 0, "%s: byte %zd of %zu is 0x%02x, expected 0x%02x", what,
              bad, len, ((const uint8_t *)buf)[bad < 0 ? 0 : bad],
              svt_pattern_byte(bad < 0 ? 0 : bad, seed));
}

void svt_memset_check(const void *buf, size_t len, uint8_t val,
                      const char *what)
{
    const uint8_t *b = buf;
    size_t i;

    for (i = 0; i < len; ++i) {
        SVT_CHECK(b[i] == val, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x",
                  what, i, len, b[i], val);
    }
}

/* ---------------------------------------------------------------------- */

void svt_dev_open(svt_dev_t *dev)
{
    svt_dev_open_name(dev, getenv("SVT_DEVICE"));
}

/* Open device `want` (NULL: softverbs0, else the first one) */
void svt_dev_open_name(svt_dev_t *dev, const char *want)
{
    struct ibv_device **list;
    int num = 0, i, pick = -1;

    memset(dev, 0, sizeof(*dev));
    list = ibv_get_device_list(&num);
    if ((list == NULL) || (num == 0)) {
        svt_skip("no verbs device");
    }
    for (i = 0; i < num; ++i) {
        const char *name = ibv_get_device_name(list[i]);

        if ((want != NULL) ? !strcmp(name, want) : !strcmp(name, "softverbs0")) {
            pick = i;
        }
    }
    if (pick < 0) {
        SVT_CHECK(want == NULL, "device %s not found", want);
        pick = 0;
    }
    SVT_NN(dev->ctx, ibv_open_device(list[pick]));
    ibv_free_device_list(list);
    dev->port_num = 1;
    SVT_OK(ibv_query_device(dev->ctx, &dev->attr));
    SVT_OK(ibv_query_port(dev->ctx, dev->port_num, &dev->port));
    SVT_CHECK(dev->port.state == IBV_PORT_ACTIVE, "port 1 state %d, not ACTIVE",
              dev->port.state);
    SVT_OK(ibv_query_gid(dev->ctx, dev->port_num, 0, &dev->gid));
    SVT_NN(dev->pd, ibv_alloc_pd(dev->ctx));
}

void svt_dev_close(svt_dev_t *dev)
{
    SVT_OK(ibv_dealloc_pd(dev->pd));
    SVT_OK(ibv_close_device(dev->ctx));
}

void svt_ep_opts_init(svt_ep_opts_t *o, enum ibv_qp_type type)
{
    memset(o, 0, sizeof(*o));
    o->type          = type;
    o->cq_size       = 64;
    o->max_send_wr   = 32;
    o->max_recv_wr   = 32;
    o->max_send_sge  = 4;
    o->max_recv_sge  = 4;
    o->max_inline    = 0;
    o->sig_all       = 0;
    o->buf_size      = 65536;
    o->mr_access     = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    o->qp_access     = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC;
    o->timeout       = 14;
    o->retry_cnt     = 7;
    o->rnr_retry     = 7;
    o->min_rnr_timer = 12;
}

void svt_ep_create(svt_dev_t *dev, const svt_ep_opts_t *o, svt_ep_t *ep)
{
    struct ibv_qp_init_attr init;

    memset(ep, 0, sizeof(*ep));
    ep->dev  = dev;
    ep->o    = *o;
    ep->size = o->buf_size;
    if (o->cq != NULL) {
        ep->cq = o->cq;
    } else {
        SVT_NN(ep->cq, ibv_create_cq(dev->ctx, o->cq_size, NULL, o->chan, 0));
        ep->own_cq = 1;
    }
    SVT_CHECK(posix_memalign((void **)&ep->buf, 4096, ep->size ? ep->size : 1) == 0,
              "out of memory");
    memset(ep->buf, 0, ep->size);
    SVT_NN(ep->mr, ibv_reg_mr(dev->pd, ep->buf, ep->size, o->mr_access));

    memset(&init, 0, sizeof(init));
    init.send_cq          = ep->cq;
    init.recv_cq          = ep->cq;
    init.srq              = o->srq;
    init.qp_type          = o->type;
    init.sq_sig_all       = o->sig_all;
    init.cap.max_send_wr  = o->max_send_wr;
    init.cap.max_recv_wr  = o->max_recv_wr;
    init.cap.max_send_sge = o->max_send_sge;
    init.cap.max_recv_sge = o->max_recv_sge;
    init.cap.max_inline_data = o->max_inline;
    SVT_NN(ep->qp, ibv_create_qp(dev->pd, &init));
    ep->o.max_inline = init.cap.max_inline_data;
}

void svt_ep_addr(const svt_ep_t *ep, svt_addr_t *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->qpn  = ep->qp->qp_num;
    addr->psn  = (ep->qp->qp_num * 7919u) & 0xffffff;
    addr->rkey = ep->mr->rkey;
    addr->lid  = ep->dev->port.lid;
    memcpy(addr->gid, ep->dev->gid.raw, 16);
    addr->addr = (uintptr_t)ep->buf;
    addr->size = ep->size;
    addr->pid  = getpid();
}

void svt_ah_attr_init(const svt_dev_t *dev, const svt_addr_t *remote,
                      struct ibv_ah_attr *ah)
{
    memset(ah, 0, sizeof(*ah));
    ah->dlid     = remote->lid;
    ah->port_num = dev->port_num;
    if ((dev->port.link_layer == IBV_LINK_LAYER_ETHERNET) ||
        (remote->lid == 0)) {
        ah->is_global      = 1;
        ah->grh.hop_limit  = 1;
        ah->grh.sgid_index = 0;
        memcpy(ah->grh.dgid.raw, remote->gid, 16);
    }
}

void svt_qp_to_init(struct ibv_qp *qp, const svt_dev_t *dev, int access)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = dev->port_num;
    if (qp->qp_type == IBV_QPT_UD) {
        attr.qkey = SVT_QKEY;
        mask     |= IBV_QP_QKEY;
    } else {
        attr.qp_access_flags = access;
        mask                |= IBV_QP_ACCESS_FLAGS;
    }
    SVT_OK(ibv_modify_qp(qp, &attr, mask));
}

void svt_qp_to_rtr(struct ibv_qp *qp, const svt_dev_t *dev,
                   const svt_addr_t *remote, const svt_ep_opts_t *o)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    if (qp->qp_type != IBV_QPT_UD) {
        attr.path_mtu    = dev->port.active_mtu;
        attr.dest_qp_num = remote->qpn;
        attr.rq_psn      = remote->psn;
        svt_ah_attr_init(dev, remote, &attr.ah_attr);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    }
    if (qp->qp_type == IBV_QPT_RC) {
        attr.max_dest_rd_atomic = dev->attr.max_qp_rd_atom < 16 ?
                                  dev->attr.max_qp_rd_atom : 16;
        attr.min_rnr_timer      = o->min_rnr_timer;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    SVT_OK(ibv_modify_qp(qp, &attr, mask));
}

void svt_qp_to_rts(struct ibv_qp *qp, const svt_ep_opts_t *o)
{
    struct ibv_qp_attr attr;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = (qp->qp_num * 7919u) & 0xffffff;
    if (qp->qp_type == IBV_QPT_RC) {
        attr.timeout       = o->timeout;
        attr.retry_cnt     = o->retry_cnt;
        attr.rnr_retry     = o->rnr_retry;
        attr.max_rd_atomic = 1;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                IBV_QP_MAX_QP_RD_ATOMIC;
    }
    SVT_OK(ibv_modify_qp(qp, &attr, mask));
}

enum ibv_qp_state svt_qp_state(struct ibv_qp *qp)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;

    memset(&attr, 0, sizeof(attr));
    SVT_OK(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init));
    return attr.qp_state;
}

void svt_ep_connect(svt_ep_t *ep, const svt_addr_t *remote)
{
    struct ibv_ah_attr ah;

    ep->remote = *remote;
    svt_qp_to_init(ep->qp, ep->dev, ep->o.qp_access);
    svt_qp_to_rtr(ep->qp, ep->dev, remote, &ep->o);
    svt_qp_to_rts(ep->qp, &ep->o);
    if (ep->o.type == IBV_QPT_UD) {
        svt_ah_attr_init(ep->dev, remote, &ah);
        SVT_NN(ep->ah, ibv_create_ah(ep->dev->pd, &ah));
    }
}

void svt_ep_destroy(svt_ep_t *ep)
{
    if (ep->ah != NULL) {
        SVT_OK(ibv_destroy_ah(ep->ah));
    }
    SVT_OK(ibv_destroy_qp(ep->qp));
    SVT_OK(ibv_dereg_mr(ep->mr));
    if (ep->own_cq) {
        SVT_OK(ibv_destroy_cq(ep->cq));
    }
    free(ep->buf);
}

/* Two endpoints of this process, connected to each other */
void svt_ep_local_pair(svt_dev_t *dev, const svt_ep_opts_t *o, svt_ep_t *a,
                       svt_ep_t *b)
{
    svt_addr_t aa, ba;

    svt_ep_create(dev, o, a);
    svt_ep_create(dev, o, b);
    svt_ep_addr(a, &aa);
    svt_ep_addr(b, &ba);
    svt_ep_connect(a, &ba);
    svt_ep_connect(b, &aa);
}

/* Create an endpoint, swap addresses with rank `peer`, connect, sync */
void svt_ep_pair(svt_proc_t *p, int peer, svt_dev_t *dev,
                 const svt_ep_opts_t *o, svt_ep_t *ep)
{
    svt_addr_t mine, theirs;

    svt_ep_create(dev, o, ep);
    svt_ep_addr(ep, &mine);
    svt_msg_send(p, peer, &mine, sizeof(mine));
    svt_msg_recv(p, peer, &theirs, sizeof(theirs));
    svt_ep_connect(ep, &theirs);
    svt_sync(p, peer);
}

/* ---------------------------------------------------------------------- */

int svt_post_send(svt_ep_t *ep, enum ibv_wr_opcode op, size_t off,
                  size_t len, uint64_t raddr, uint32_t rkey, uint32_t imm,
                  int flags, uint64_t wr_id)
{
    struct ibv_sge sge = {(uintptr_t)ep->buf + off, (uint32_t)len, ep->mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = wr_id;
    wr.sg_list    = &sge;
    wr.num_sge    = (len > 0) ? 1 : 0;
    wr.opcode     = op;
    wr.send_flags = flags;
    wr.imm_data   = htobe32(imm);
    if ((op == IBV_WR_ATOMIC_FETCH_AND_ADD) || (op == IBV_WR_ATOMIC_CMP_AND_SWP)) {
        wr.wr.atomic.remote_addr = raddr;
        wr.wr.atomic.rkey        = rkey;
    } else if (ep->o.type == IBV_QPT_UD) {
        wr.wr.ud.ah          = ep->ah;
        wr.wr.ud.remote_qpn  = ep->remote.qpn;
        wr.wr.ud.remote_qkey = SVT_QKEY;
    } else {
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey        = rkey;
    }
    return ibv_post_send(ep->qp, &wr, &bad);
}

void svt_post_recv(svt_ep_t *ep, size_t off, size_t len, uint64_t wr_id)
{
    struct ibv_sge sge = {(uintptr_t)ep->buf + off, (uint32_t)len, ep->mr->lkey};
    struct ibv_recv_wr wr, *bad = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = (len > 0) ? 1 : 0;
    if (ep->o.srq != NULL) {
        SVT_OK(ibv_post_srq_recv(ep->o.srq, &wr, &bad));
    } else {
        SVT_OK(ibv_post_recv(ep->qp, &wr, &bad));
    }
}

/* Poll one completion: 1 if got one, 0 on timeout */
int svt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
    double deadline = svt_now_ms() + timeout_ms;
    unsigned spins = 0;
    int n;

    do {
        n = ibv_poll_cq(cq, 1, wc);
        SVT_CHECK(n >= 0, "ibv_poll_cq returned %d", n);
        if (n == 1) {
            return 1;
        }
        if ((++spins & 1023) == 0) {
            usleep(50);
        }
    } while (svt_now_ms() < deadline);
    return 0;
}

void svt_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
    SVT_CHECK(svt_poll(cq, wc, timeout_ms), "no completion within %d ms",
              timeout_ms);
}

/* Wait for one completion and check status, opcode (if >= 0), wr_id */
void svt_expect_wc(struct ibv_cq *cq, enum ibv_wc_status status, int opcode,
                   uint64_t wr_id, struct ibv_wc *wc_out)
{
    struct ibv_wc wc;

    svt_wait_wc(cq, &wc, SVT_WC_TIMEOUT_MS);
    SVT_CHECK(wc.status == status, "wc status %d (%s), expected %d (%s), "
              "wr_id %llu vendor_err 0x%x", wc.status,
              ibv_wc_status_str(wc.status), status, ibv_wc_status_str(status),
              (unsigned long long)wc.wr_id, wc.vendor_err);
    SVT_CHECK(wc.wr_id == wr_id, "wc wr_id %llu, expected %llu",
              (unsigned long long)wc.wr_id, (unsigned long long)wr_id);
    /* opcode is only defined for successful completions */
    SVT_CHECK((opcode < 0) || (status != IBV_WC_SUCCESS) ||
              ((int)wc.opcode == opcode), "wc opcode %d, expected %d",
              wc.opcode, opcode);
    if (wc_out != NULL) {
        *wc_out = wc;
    }
}

void svt_expect_no_wc(struct ibv_cq *cq, int ms)
{
    struct ibv_wc wc;

    SVT_CHECK(!svt_poll(cq, &wc, ms), "unexpected completion: status %s "
              "opcode %d wr_id %llu", ibv_wc_status_str(wc.status), wc.opcode,
              (unsigned long long)wc.wr_id);
}

/* 1 if fd became readable within timeout_ms */
int svt_wait_fd(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    int n;

    do {
        n = poll(&pfd, 1, timeout_ms);
    } while ((n < 0) && (errno == EINTR));
    return n > 0;
}

/* Wait for a given async event; other events are acked and skipped */
void svt_wait_async(struct ibv_context *ctx, enum ibv_event_type type,
                    int timeout_ms, struct ibv_async_event *out)
{
    double deadline = svt_now_ms() + timeout_ms;
    struct ibv_async_event ev;
    int left;

    for (;;) {
        left = (int)(deadline - svt_now_ms());
        SVT_CHECK(left > 0, "no async event %s within %d ms",
                  ibv_event_type_str(type), timeout_ms);
        if (!svt_wait_fd(ctx->async_fd, left)) {
            continue;
        }
        SVT_OK(ibv_get_async_event(ctx, &ev));
        if (ev.event_type == type) {
            if (out != NULL) {
                *out = ev;
            }
            ibv_ack_async_event(&ev);
            return;
        }
        svt_note("skipping async event %s", ibv_event_type_str(ev.event_type));
        ibv_ack_async_event(&ev);
    }
}

/* stderr into a temporary file until svt_stderr_end(), which returns how
 * often needle was written there */
int svt_stderr_begin(void)
{
    char path[] = "/tmp/svt-stderr.XXXXXX";
    int fd, saved;

    fflush(stderr);
    fd = mkstemp(path);
    SVT_CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    unlink(path);
    saved = dup(2);
    SVT_CHECK((saved >= 0) && (dup2(fd, 2) == 2), "dup2: %s", strerror(errno));
    close(fd);
    return saved;
}

int svt_stderr_end(int saved, const char *needle, char *text,
                          size_t size)
{
    const char *at;
    ssize_t n;
    int count = 0;

    fflush(stderr);
    n = pread(2, text, size - 1, 0);
    text[(n > 0) ? n : 0] = '\0';
    dup2(saved, 2);
    close(saved);
    for (at = strstr(text, needle); at != NULL;
         at = strstr(at + 1, needle)) {
        count++;
    }
    return count;
}


void svt_during_write_writer(svt_proc_t *p, int target, svt_ep_t *ep,
                             size_t len)
{
    svt_addr_t va;

    svt_msg_recv(p, target, &va, sizeof(va));
    memset(ep->buf, 0x55, len);
    SVT_OK(svt_post_send(ep, IBV_WR_RDMA_WRITE, 0, len, va.addr, va.rkey, 0,
                         IBV_SEND_SIGNALED, 1));
    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 1, NULL);
    svt_sync(p, target);
}

void svt_during_write_target(svt_proc_t *p, int writer, uint8_t *buf,
                             size_t len, const char *what,
                             void (*change)(void *arg), void *arg)
{
    const uint8_t guard  = 0xaa;
    const size_t page    = 4096;
    volatile uint8_t *first = buf;
    char msg[128];
    double t0;

    t0 = svt_now_ms();
    while (*first == 0) {
        SVT_CHECK(svt_now_ms() - t0 < 20000,
                  "the peer's write did not start in 20 s");
    }
    t0 = svt_now_ms();
    change(arg);
    svt_note("%s returned %.1f ms after the write began", what,
             svt_now_ms() - t0);
    memset(buf + len - page, guard, page);
    svt_sync(p, writer); /* the writer saw its completion */
    snprintf(msg, sizeof(msg), "last page, written after %s returned", what);
    svt_memset_check(buf + len - page, page, guard, msg);
    snprintf(msg, sizeof(msg), "the write placed before %s returned", what);
    svt_memset_check(buf, len - page, 0x55, msg);
}
