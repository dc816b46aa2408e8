/*
 * softverbs conformance: completion channels (blocking, epoll, solicited),
 * the async event fd with epoll, and host-wide properties (unique QPNs and
 * keys across processes, reclaim of a dead process's objects).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Target side of the channel cases: an RC endpoint whose CQ has a channel,
 * with `nrecv` receives of 64 bytes posted (wr_id 1..nrecv) */
static void svt_chan_pair(svt_proc_t *p, svt_dev_t *dev, svt_ep_t *ep,
                          struct ibv_comp_channel **chan, int nrecv)
{
    svt_ep_opts_t o;
    int i;

    svt_dev_open(dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    *chan = NULL;
    if (p->rank == 1) {
        SVT_NN(*chan, ibv_create_comp_channel(dev->ctx));
        o.chan = *chan;
    }
    svt_ep_pair(p, !p->rank, dev, &o, ep);
    for (i = 0; (p->rank == 1) && (i < nrecv); ++i) {
        svt_post_recv(ep, i * 64, 64, i + 1);
    }
}

/* Rank 0: send `n` messages of 8 bytes after `delay_ms` */
static void svt_chan_sender(svt_proc_t *p, svt_ep_t *ep, int delay_ms,
                            int flags, uint64_t wr_id)
{
    svt_sleep_ms(delay_ms);
    SVT_OK(svt_post_send(ep, IBV_WR_SEND, 0, 8, 0, 0, 0,
                         IBV_SEND_SIGNALED | flags, wr_id));
    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, IBV_WC_SEND, wr_id, NULL);
}

/* Rank 0 of the two-send cases: a plain send after the first sync, the
 * second (with `flags2`) after the third */
static void svt_chan_two_sends(svt_proc_t *p, svt_ep_t *ep, int flags2)
{
    svt_sync(p, 1);
    svt_chan_sender(p, ep, 0, 0, 1);
    svt_sync(p, 1);
    svt_sync(p, 1);
    svt_chan_sender(p, ep, 0, flags2, 2);
}

/* Take the CQ event, check it names our CQ, ack it, poll the completion */
static void svt_chan_consume(struct ibv_comp_channel *chan, svt_ep_t *ep,
                             uint64_t wr_id)
{
    struct ibv_cq *ev_cq;
    void *ev_ctx;

    SVT_OK(ibv_get_cq_event(chan, &ev_cq, &ev_ctx));
    SVT_CHECK(ev_cq == ep->cq, "event for cq %p, expected %p", (void *)ev_cq,
              (void *)ep->cq);
    ibv_ack_cq_events(ev_cq, 1);
    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, IBV_WC_RECV, wr_id, NULL);
}

/* ibv_get_cq_event blocks until the other process's send completes here */
static void svt_case_cq_event_blocking(svt_proc_t *p)
{
    struct ibv_comp_channel *chan;
    svt_dev_t dev;
    svt_ep_t ep;
    double t0;

    svt_chan_pair(p, &dev, &ep, &chan, 1);
    if (p->rank == 1) {
        SVT_OK(ibv_req_notify_cq(ep.cq, 0));
        svt_sync(p, 0);
        t0 = svt_now_ms();
        svt_chan_consume(chan, &ep, 1);
        SVT_CHECK(svt_now_ms() - t0 >= 100, "ibv_get_cq_event returned after "
                  "%.1f ms, before the peer sent (200 ms)", svt_now_ms() - t0);
    } else {
        svt_sync(p, 1);
        svt_chan_sender(p, &ep, 200, 0, 1);
    }
    svt_sync(p, !p->rank);
}

/* The channel fd in epoll: quiet while nothing happens, readable after the
 * peer's send, quiet again when not re-armed */
static void svt_case_cq_event_epoll(svt_proc_t *p)
{
    struct ibv_comp_channel *chan;
    struct epoll_event ev = {.events = EPOLLIN}, out;
    svt_dev_t dev;
    svt_ep_t ep;
    int efd, n;

    svt_chan_pair(p, &dev, &ep, &chan, 2);
    if (p->rank == 1) {
        SVT_CHECK(fcntl(chan->fd, F_SETFL,
                        fcntl(chan->fd, F_GETFL) | O_NONBLOCK) == 0,
                  "fcntl on the channel fd failed");
        SVT_CHECK((efd = epoll_create1(0)) >= 0, "epoll_create1");
        SVT_CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, chan->fd, &ev) == 0,
                  "epoll_ctl(ADD) on the channel fd failed: %s",
                  strerror(errno));
        SVT_OK(ibv_req_notify_cq(ep.cq, 0));
        n = epoll_wait(efd, &out, 1, 100);
        SVT_CHECK(n == 0, "epoll_wait returned %d before any send", n);
        svt_sync(p, 0);
        n = epoll_wait(efd, &out, 1, 3000);
        SVT_CHECK(n == 1, "epoll_wait returned %d after the peer's send", n);
        svt_chan_consume(chan, &ep, 1);
        svt_sync(p, 0); /* second send, CQ not re-armed */
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 2, NULL);
        n = epoll_wait(efd, &out, 1, 100);
        SVT_CHECK(n == 0, "channel readable without ibv_req_notify_cq");
        close(efd);
    } else {
        svt_sync(p, 1);
        svt_chan_sender(p, &ep, 0, 0, 1);
        svt_sync(p, 1);
        svt_chan_sender(p, &ep, 0, 0, 2);
    }
    svt_sync(p, !p->rank);
}

/* solicited_only: an unsolicited send does not wake, a solicited one does */
static void svt_case_cq_event_solicited(svt_proc_t *p)
{
    struct ibv_comp_channel *chan;
    svt_dev_t dev;
    svt_ep_t ep;

    svt_chan_pair(p, &dev, &ep, &chan, 2);
    if (p->rank == 1) {
        SVT_OK(ibv_req_notify_cq(ep.cq, 1));
        svt_sync(p, 0);
        svt_sync(p, 0); /* unsolicited send done */
        SVT_CHECK(!svt_wait_fd(chan->fd, 100), "unsolicited completion woke "
                  "a solicited-only CQ");
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, NULL);
        svt_sync(p, 0);
        SVT_CHECK(svt_wait_fd(chan->fd, 3000), "solicited completion did not "
                  "wake the channel");
        svt_chan_consume(chan, &ep, 2);
    } else {
        svt_chan_two_sends(p, &ep, IBV_SEND_SOLICITED);
    }
    svt_sync(p, !p->rank);
}

/*
 * Arming a CQ that holds an unpolled CQE sends the event at once, as
 * ConnectX does (the arm doorbell carries the consumer index; libmlx5's
 * mlx5_arm_cq): Open MPI's openib udcm polls its CQ empty, then arms it
 * without polling again, and waited for good on a CQE that came between
 * the two. Arming the emptied CQ again stays quiet until the next CQE.
 */
static void svt_case_cq_event_arm_pending(svt_proc_t *p)
{
    struct ibv_comp_channel *chan;
    svt_dev_t dev;
    svt_ep_t ep;

    svt_chan_pair(p, &dev, &ep, &chan, 2);
    if (p->rank == 1) {
        svt_sync(p, 0);
        svt_sync(p, 0); /* the first send completed at the peer: its CQE
                           is in this CQ, not polled */
        SVT_CHECK(!svt_wait_fd(chan->fd, 100), "channel readable before the "
                  "CQ was armed");
        SVT_OK(ibv_req_notify_cq(ep.cq, 0));
        SVT_CHECK(svt_wait_fd(chan->fd, 3000), "arming a CQ that holds an "
                  "unpolled CQE sent no event");
        svt_chan_consume(chan, &ep, 1);
        SVT_OK(ibv_req_notify_cq(ep.cq, 0));
        SVT_CHECK(!svt_wait_fd(chan->fd, 100), "arming an empty CQ sent an "
                  "event");
        svt_sync(p, 0);
        SVT_CHECK(svt_wait_fd(chan->fd, 3000), "the next completion did not "
                  "wake the armed CQ");
        svt_chan_consume(chan, &ep, 2);
    } else {
        svt_chan_two_sends(p, &ep, 0);
    }
    svt_sync(p, !p->rank);
}

/* async_fd in epoll wakes for an event caused by the peer (SRQ limit) */
static void svt_case_async_epoll(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_srq_attr attr = {.srq_limit = 2};
    struct epoll_event ev = {.events = EPOLLIN}, out;
    struct ibv_async_event aev;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    int efd, n, i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 1) {
        SVT_NN(o.srq, ibv_create_srq(dev.pd, &sa));
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        SVT_CHECK((efd = epoll_create1(0)) >= 0, "epoll_create1");
        SVT_CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, dev.ctx->async_fd, &ev) == 0,
                  "epoll_ctl(ADD) on async_fd failed: %s", strerror(errno));
        for (i = 0; i < 4; ++i) {
            svt_post_recv(&ep, i * 64, 64, i);
        }
        SVT_OK(ibv_modify_srq(o.srq, &attr, IBV_SRQ_LIMIT));
        n = epoll_wait(efd, &out, 1, 50);
        SVT_CHECK(n == 0, "async_fd readable before any event");
        svt_sync(p, 0);
        n = epoll_wait(efd, &out, 1, 3000);
        SVT_CHECK(n == 1, "epoll_wait on async_fd returned %d", n);
        SVT_OK(ibv_get_async_event(dev.ctx, &aev));
        SVT_CHECK(aev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED, "event %s",
                  ibv_event_type_str(aev.event_type));
        ibv_ack_async_event(&aev);
        close(efd);
    } else {
        svt_sync(p, 1);
        for (i = 0; i < 3; ++i) {
            svt_chan_sender(p, &ep, 0, 0, i);
        }
    }
    svt_sync(p, !p->rank);
}

/* QPNs, lkeys and rkeys from two processes never collide */
#define SVT_UNIQ_N 32

typedef struct {
    uint32_t qpn[SVT_UNIQ_N];
    uint32_t lkey[SVT_UNIQ_N];
    uint32_t rkey[SVT_UNIQ_N];
} svt_ids_t;

static void svt_ids_unique(const uint32_t *a, const uint32_t *b, int n,
                           const char *what)
{
    int i, j;

    for (i = 0; i < 2 * n; ++i) {
        uint32_t x = (i < n) ? a[i] : b[i - n];

        for (j = i + 1; j < 2 * n; ++j) {
            uint32_t y = (j < n) ? a[j] : b[j - n];

            SVT_CHECK(x != y, "%s 0x%x appears twice (%s process %d, %s %d)",
                      what, x, (i < n) ? "this" : "peer", i % n,
                      (j < n) ? "this" : "peer", j % n);
        }
    }
}

static void svt_case_unique_ids(svt_proc_t *p)
{
    static char buf[SVT_UNIQ_N][64];
    struct ibv_qp_init_attr qi = {.cap = {4, 4, 1, 1, 0},
                                  .qp_type = IBV_QPT_RC};
    svt_ids_t mine, theirs;
    svt_dev_t dev;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    int i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 8, NULL, NULL, 0));
    qi.send_cq = qi.recv_cq = cq;
    svt_barrier(p); /* create concurrently */
    for (i = 0; i < SVT_UNIQ_N; ++i) {
        SVT_NN(qp, ibv_create_qp(dev.pd, &qi));
        SVT_NN(mr, ibv_reg_mr(dev.pd, buf[i], sizeof(buf[i]),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
        mine.qpn[i]  = qp->qp_num;
        mine.lkey[i] = mr->lkey;
        mine.rkey[i] = mr->rkey;
    }
    svt_msg_send(p, !p->rank, &mine, sizeof(mine));
    svt_msg_recv(p, !p->rank, &theirs, sizeof(theirs));
    svt_ids_unique(mine.qpn, theirs.qpn, SVT_UNIQ_N, "QPN");
    svt_ids_unique(mine.rkey, theirs.rkey, SVT_UNIQ_N, "rkey");
    svt_ids_unique(mine.lkey, theirs.lkey, SVT_UNIQ_N, "lkey");
    for (i = 0; i < SVT_UNIQ_N; ++i) {
        SVT_CHECK(mine.qpn[i] > 1 && mine.qpn[i] < (1u << 24),
                  "QPN 0x%x is reserved (0/1) or above 24 bits", mine.qpn[i]);
    }
    svt_sync(p, !p->rank);
}

/*
 * A process holding objects dies. softverbs' own accounting
 * (softverbs_get_stats@SOFTVERBS_1.0, found with dlvsym so that this
 * program still links against any libibverbs, and so that the 1.0
 * structure's version is the one checked) must drop them, and with the host-wide
 * SOFTVERBS_MAX_QP=4 another process can create 4 QPs again.
 */
typedef struct {
    uint32_t pid, num_qp, num_qp_by_type[4], num_qp_by_state[7];
    uint32_t num_cq, num_srq, num_mr;
    uint64_t mr_bytes;
    uint64_t guard;     /* must stay as it is: 1.0 writes no further */
} svt_stats_t; /* layout of SOFTVERBS_1.0's struct softverbs_stats */
typedef int (*svt_get_stats_fn_t)(uint32_t pid, svt_stats_t *stats);

static void svt_case_reclaim(svt_proc_t *p)
{
    struct ibv_qp_init_attr qi = {.cap = {4, 4, 1, 1, 0},
                                  .qp_type = IBV_QPT_RC};
    svt_get_stats_fn_t get_stats;
    static char buf[8192];
    struct ibv_qp *qp[4];
    svt_stats_t st;
    svt_dev_t dev;
    struct ibv_cq *cq;
    double deadline;
    uint64_t pid1;
    int i, n = 0, ret;
    char c;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 8, NULL, NULL, 0));
    qi.send_cq = qi.recv_cq = cq;
    if (p->rank == 1) {
        struct ibv_mr *mr;

        for (i = 0; i < 4; ++i) {
            SVT_NN(qp[i], ibv_create_qp(dev.pd, &qi));
        }
        SVT_NN(mr, ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
        svt_xchg_u64(p, 0, getpid());
        svt_sync(p, 0);
        kill(getpid(), SIGKILL);
    }
    get_stats = (svt_get_stats_fn_t)dlvsym(RTLD_DEFAULT, "softverbs_get_stats",
                                           "SOFTVERBS_1.0");
    SVT_CHECK(get_stats != NULL, "softverbs_get_stats@SOFTVERBS_1.0 not "
              "exported");
    pid1 = svt_xchg_u64(p, 1, 0);
    st.guard = 0x5a5a5a5a5a5a5a5aull;
    SVT_OK(get_stats((uint32_t)pid1, &st));
    SVT_CHECK(st.guard == 0x5a5a5a5a5a5a5a5aull, "softverbs_get_stats@"
              "SOFTVERBS_1.0 wrote beyond the 1.0 structure");
    SVT_CHECK(st.num_qp == 4 && st.num_cq == 1 && st.num_mr == 1 &&
              st.mr_bytes >= sizeof(buf), "live peer: stats show %u QPs, %u "
              "CQs, %u MRs (%llu bytes); expected 4, 1, 1 (%zu bytes)",
              st.num_qp, st.num_cq, st.num_mr,
              (unsigned long long)st.mr_bytes, sizeof(buf));
    qp[0] = ibv_create_qp(dev.pd, &qi);
    SVT_CHECK(qp[0] == NULL, "a 5th QP on the host was created with "
              "SOFTVERBS_MAX_QP=4 (the limit must be host-wide)");
    svt_sync(p, 1);
    while (read(p->sock[1], &c, 1) > 0) {
    }
    /* the peer is gone: its objects must go within a bounded time */
    deadline = svt_now_ms() + 3000;
    while ((n < 4) && (svt_now_ms() < deadline)) {
        qp[n] = ibv_create_qp(dev.pd, &qi);
        if (qp[n] != NULL) {
            ++n;
        } else {
            svt_sleep_ms(20);
        }
    }
    SVT_CHECK(n == 4, "only %d of 4 QPs could be created 3 s after the "
              "process holding them died: stale objects", n);
    ret = get_stats((uint32_t)pid1, &st);
    SVT_CHECK((ret != 0) || (st.num_qp + st.num_cq + st.num_mr == 0),
              "dead process still owns %u QPs, %u CQs, %u MRs", st.num_qp,
              st.num_cq, st.num_mr);
    SVT_OK(get_stats(0, &st));
    SVT_CHECK(st.num_qp == 4 && st.num_cq == 1 && st.num_mr == 0,
              "host-wide stats after reclaim: %u QPs, %u CQs, %u MRs; "
              "expected only this process's 4, 1, 0", st.num_qp, st.num_cq,
              st.num_mr);
}

/* A destroy call run on a thread of its own, so that the case can see it
 * block and return */
typedef struct {
    int           (*fn)(void *obj);
    void          *obj;
    volatile int  done;
    int           ret;
} svt_destroy_t;

static void *svt_destroy_thread(void *arg)
{
    svt_destroy_t *d = arg;

    d->ret = d->fn(d->obj);
    __atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int svt_destroy_qp_fn(void *obj) { return ibv_destroy_qp(obj); }
static int svt_destroy_cq_fn(void *obj) { return ibv_destroy_cq(obj); }

/* Start fn(obj) on a thread; check it is still blocked 200 ms later, run
 * ack, then check it returns 0 within 5 s */
static void svt_destroy_waits(int (*fn)(void *), void *obj,
                              void (*ack)(void *), void *ack_arg,
                              const char *what)
{
    svt_destroy_t d = {fn, obj, 0, -1};
    pthread_t tid;
    double t0;

    SVT_CHECK(pthread_create(&tid, NULL, svt_destroy_thread, &d) == 0,
              "pthread_create failed");
    svt_sleep_ms(200);
    SVT_CHECK(!__atomic_load_n(&d.done, __ATOMIC_ACQUIRE),
              "%s returned (%d) with an event not acknowledged", what, d.ret);
    ack(ack_arg);
    t0 = svt_now_ms();
    while (!__atomic_load_n(&d.done, __ATOMIC_ACQUIRE) &&
           (svt_now_ms() - t0 < 5000)) {
        svt_sleep_ms(5);
    }
    SVT_CHECK(__atomic_load_n(&d.done, __ATOMIC_ACQUIRE),
              "%s still blocked 5 s after the acknowledgement", what);
    pthread_join(tid, NULL);
    SVT_CHECK(d.ret == 0, "%s failed: %d", what, d.ret);
}

static void svt_ack_async(void *arg) { ibv_ack_async_event(arg); }
static void svt_ack_cq(void *arg) { ibv_ack_cq_events(arg, 1); }

/* The attributes of an RC QP of 4 WRs on cq, receiving from srq (none:
 * NULL) */
static void svt_ev_srq_qp_attr(struct ibv_qp_init_attr *init,
                               struct ibv_cq *cq, struct ibv_srq *srq)
{
    memset(init, 0, sizeof(*init));
    init->send_cq = init->recv_cq = cq;
    init->qp_type = IBV_QPT_RC;
    init->cap     = (struct ibv_qp_cap){4, 4, 1, 1, 0};
    init->srq     = srq;
}

/*
 * ibv_destroy_qp waits until every async event reported about the QP was
 * acknowledged, ibv_destroy_cq the same for its completion events (man
 * ibv_get_async_event, ibv_get_cq_event; libibverbs waits on the kernel's
 * counts, without a timeout)
 */
static void svt_case_destroy_waits_ack(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    struct ibv_qp_init_attr init;
    struct ibv_async_event aev;
    struct ibv_comp_channel *chan;
    struct ibv_qp *qp, *qp2;
    struct ibv_srq *srq;
    struct ibv_cq *cq, *ev_cq;
    struct ibv_recv_wr rwr = {0}, *bad;
    struct ibv_sge sge;
    struct ibv_mr *mr;
    static char buf[64];
    void *ev_ctx;
    svt_dev_t dev;

    svt_dev_open(&dev);
    SVT_NN(chan, ibv_create_comp_channel(dev.ctx));
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, chan, 0));
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    svt_ev_srq_qp_attr(&init, cq, srq);
    SVT_NN(qp, ibv_create_qp(dev.pd, &init));

    /* a QP on an SRQ that goes to ERR reports the last WQE reached */
    SVT_OK(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
    SVT_OK(ibv_get_async_event(dev.ctx, &aev));
    SVT_CHECK((aev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) &&
              (aev.element.qp == qp), "event %s",
              ibv_event_type_str(aev.event_type));
    svt_destroy_waits(svt_destroy_qp_fn, qp, svt_ack_async, &aev,
                      "ibv_destroy_qp");

    /* a completion event on the CQ: a receive flushed by ERR */
    init.srq = NULL;
    SVT_NN(qp2, ibv_create_qp(dev.pd, &init));
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    sge.addr = (uintptr_t)buf; sge.length = sizeof(buf); sge.lkey = mr->lkey;
    rwr.sg_list = &sge; rwr.num_sge = 1; rwr.wr_id = 7;
    {
        struct ibv_qp_attr ia = {.qp_state = IBV_QPS_INIT, .port_num = 1};

        SVT_OK(ibv_modify_qp(qp2, &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                             IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    }
    SVT_OK(ibv_req_notify_cq(cq, 0));
    SVT_OK(ibv_post_recv(qp2, &rwr, &bad));
    SVT_OK(ibv_modify_qp(qp2, &attr, IBV_QP_STATE));
    SVT_OK(ibv_get_cq_event(chan, &ev_cq, &ev_ctx));
    SVT_CHECK(ev_cq == cq, "CQ event for %p", (void *)ev_cq);
    SVT_OK(ibv_destroy_qp(qp2));
    svt_destroy_waits(svt_destroy_cq_fn, cq, svt_ack_cq, cq,
                      "ibv_destroy_cq");

    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_comp_channel(chan));
    svt_dev_close(&dev);
}

/*
 * No event is lost when more come than a unix socket queues unread
 * (net.unix.max_dgram_qlen + 1, 11 by default; the kernel's uverbs queues
 * them without bound): SVT_EV_MANY QPs of one SRQ go to ERR before the
 * async fd is read, and each reports its LAST_WQE_REACHED once; then
 * SVT_EV_MANY CQs of one channel each get a completion before it is read.
 * The fds are non-blocking so that a lost event fails, not hangs.
 */
#define SVT_EV_MANY 64

static void svt_ev_nonblock(int fd)
{
    SVT_CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0,
              "fcntl(O_NONBLOCK): %s", strerror(errno));
}

static int svt_ev_index(void *const *objs, const void *obj)
{
    int i;

    for (i = 0; i < SVT_EV_MANY; ++i) {
        if (objs[i] == obj) {
            return i;
        }
    }
    return -1;
}

static void svt_case_async_many(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    struct ibv_qp_init_attr init;
    struct ibv_async_event aev;
    struct ibv_qp *qps[SVT_EV_MANY];
    int seen[SVT_EV_MANY] = {0};
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    svt_dev_t dev;
    int i, k;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    svt_ev_srq_qp_attr(&init, cq, srq);
    for (i = 0; i < SVT_EV_MANY; ++i) {
        SVT_NN(qps[i], ibv_create_qp(dev.pd, &init));
        SVT_OK(ibv_modify_qp(qps[i], &attr, IBV_QP_STATE));
    }
    svt_ev_nonblock(dev.ctx->async_fd);
    for (i = 0; i < SVT_EV_MANY; ++i) {
        SVT_CHECK(ibv_get_async_event(dev.ctx, &aev) == 0,
                  "async event %d of %d: none (%s)", i + 1, SVT_EV_MANY,
                  strerror(errno));
        SVT_CHECK(aev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED,
                  "event %s", ibv_event_type_str(aev.event_type));
        k = svt_ev_index((void *const *)qps, aev.element.qp);
        SVT_CHECK((k >= 0) && !seen[k]++, "event %d names qp %p (index %d)",
                  i, (void *)aev.element.qp, k);
        ibv_ack_async_event(&aev);
    }
    SVT_CHECK((ibv_get_async_event(dev.ctx, &aev) < 0) && (errno == EAGAIN),
              "an event more than the %d sent", SVT_EV_MANY);
    for (i = 0; i < SVT_EV_MANY; ++i) {
        SVT_OK(ibv_destroy_qp(qps[i]));
    }
    SVT_OK(ibv_destroy_srq(srq));
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/* `n` CQs on `chan`, each armed and given one completion (a receive of
 * wr_id i flushed by ERR) through its own QP */
static void svt_ev_flushed_cqs(svt_dev_t *dev, struct ibv_comp_channel *chan,
                               struct ibv_mr *mr, int n, struct ibv_cq **cqs,
                               struct ibv_qp **qps)
{
    struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
    struct ibv_qp_attr ia = {.qp_state = IBV_QPS_INIT, .port_num = 1};
    struct ibv_qp_init_attr init;
    struct ibv_recv_wr rwr = {0}, *bad;
    struct ibv_sge sge;
    int i;

    sge.addr = (uintptr_t)mr->addr; sge.length = 64; sge.lkey = mr->lkey;
    rwr.sg_list = &sge; rwr.num_sge = 1;
    memset(&init, 0, sizeof(init));
    init.qp_type = IBV_QPT_RC;
    init.cap     = (struct ibv_qp_cap){4, 4, 1, 1, 0};
    for (i = 0; i < n; ++i) {
        SVT_NN(cqs[i], ibv_create_cq(dev->ctx, 4, NULL, chan, 0));
        init.send_cq = init.recv_cq = cqs[i];
        SVT_NN(qps[i], ibv_create_qp(dev->pd, &init));
        SVT_OK(ibv_modify_qp(qps[i], &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                             IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
        SVT_OK(ibv_req_notify_cq(cqs[i], 0));
        rwr.wr_id = i;
        SVT_OK(ibv_post_recv(qps[i], &rwr, &bad));
        SVT_OK(ibv_modify_qp(qps[i], &err, IBV_QP_STATE));
    }
}

static void svt_ev_destroy_cqs(int n, struct ibv_cq **cqs, struct ibv_qp **qps)
{
    int i;

    for (i = 0; i < n; ++i) {
        SVT_OK(ibv_destroy_qp(qps[i]));
        SVT_OK(ibv_destroy_cq(cqs[i]));
    }
}

static void svt_case_chan_many(svt_proc_t *p)
{
    struct ibv_cq *cqs[SVT_EV_MANY], *ev_cq;
    struct ibv_qp *qps[SVT_EV_MANY];
    int seen[SVT_EV_MANY] = {0};
    struct ibv_comp_channel *chan;
    struct ibv_mr *mr;
    static char buf[64];
    svt_dev_t dev;
    void *ev_ctx;
    int i, k;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(chan, ibv_create_comp_channel(dev.ctx));
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    svt_ev_flushed_cqs(&dev, chan, mr, SVT_EV_MANY, cqs, qps);
    svt_ev_nonblock(chan->fd);
    for (i = 0; i < SVT_EV_MANY; ++i) {
        SVT_CHECK(ibv_get_cq_event(chan, &ev_cq, &ev_ctx) == 0,
                  "CQ event %d of %d: none (%s)", i + 1, SVT_EV_MANY,
                  strerror(errno));
        k = svt_ev_index((void *const *)cqs, ev_cq);
        SVT_CHECK((k >= 0) && !seen[k]++, "event %d names cq %p (index %d)",
                  i, (void *)ev_cq, k);
        ibv_ack_cq_events(ev_cq, 1);
        svt_expect_wc(ev_cq, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, k, NULL);
    }
    SVT_CHECK((ibv_get_cq_event(chan, &ev_cq, &ev_ctx) < 0) &&
              (errno == EAGAIN), "a CQ event more than the %d sent",
              SVT_EV_MANY);
    svt_ev_destroy_cqs(SVT_EV_MANY, cqs, qps);
    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(ibv_destroy_comp_channel(chan));
    svt_dev_close(&dev);
}

/*
 * Linux charges a unix datagram to its sender's socket until it is read
 * (SO_SNDBUF, 212992 bytes: about 278 events). Channels nobody reads, 11
 * events each, fill the sending process's socket; an event to a channel
 * that is read must still come.
 */
#define SVT_EV_DEAF_CHANS 32
#define SVT_EV_DEAF_EACH  11

static void svt_case_chan_sender_full(svt_proc_t *p)
{
    enum { N = SVT_EV_DEAF_CHANS * SVT_EV_DEAF_EACH };
    struct ibv_comp_channel *deaf[SVT_EV_DEAF_CHANS], *chan;
    struct ibv_cq *cqs[N + 1], *ev_cq;
    struct ibv_qp *qps[N + 1];
    struct ibv_mr *mr;
    static char buf[64];
    svt_dev_t dev;
    void *ev_ctx;
    int c;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(mr, ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    for (c = 0; c < SVT_EV_DEAF_CHANS; ++c) {
        SVT_NN(deaf[c], ibv_create_comp_channel(dev.ctx));
        svt_ev_flushed_cqs(&dev, deaf[c], mr, SVT_EV_DEAF_EACH,
                           &cqs[c * SVT_EV_DEAF_EACH],
                           &qps[c * SVT_EV_DEAF_EACH]);
    }
    SVT_NN(chan, ibv_create_comp_channel(dev.ctx));
    svt_ev_flushed_cqs(&dev, chan, mr, 1, &cqs[N], &qps[N]);
    svt_ev_nonblock(chan->fd);
    SVT_CHECK(ibv_get_cq_event(chan, &ev_cq, &ev_ctx) == 0,
              "no CQ event after %d unread ones on other channels (%s)", N,
              strerror(errno));
    SVT_CHECK(ev_cq == cqs[N], "event for cq %p, expected %p", (void *)ev_cq,
              (void *)cqs[N]);
    ibv_ack_cq_events(ev_cq, 1);
    /* the unread events of the deaf channels are acknowledged as none
     * were reported: their CQs are destroyed without waiting */
    svt_ev_destroy_cqs(N + 1, cqs, qps);
    for (c = 0; c < SVT_EV_DEAF_CHANS; ++c) {
        SVT_OK(ibv_destroy_comp_channel(deaf[c]));
    }
    SVT_OK(ibv_destroy_comp_channel(chan));
    SVT_OK(ibv_dereg_mr(mr));
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_event[] = {
    {"destroy/waits_for_ack", svt_case_destroy_waits_ack, 1},
    {"chan/get_cq_event_blocking", svt_case_cq_event_blocking, 2},
    {"chan/epoll", svt_case_cq_event_epoll, 2},
    {"chan/solicited_only", svt_case_cq_event_solicited, 2},
    {"chan/arm_with_pending_cqe", svt_case_cq_event_arm_pending, 2},
    {"chan/async_fd_epoll", svt_case_async_epoll, 2},
    {"chan/async_no_event_lost", svt_case_async_many, 1},
    {"chan/cq_no_event_lost", svt_case_chan_many, 1},
    {"chan/event_past_full_sender", svt_case_chan_sender_full, 1},
    {"host/unique_qpn_keys", svt_case_unique_ids, 2},
    {"host/reclaim_dead_process", svt_case_reclaim, 2, 0, 15,
     "SOFTVERBS_MAX_QP=4", SVT_CASE_F_PEER_DIES},
    {NULL}
};
