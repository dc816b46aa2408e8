/*
 * softverbs conformance: short stress cases. Several QPs on one shared CQ
 * with writes, reads and sends in flight together; the same from several
 * threads of one process (each thread with its own QP and CQ). Every byte
 * read back and every message sequence is checked. Descriptors do not leak
 * over object lifetimes. A target QP reset while a responder completes a
 * receive into it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define SVT_ST_QPS     3
#define SVT_ST_ITERS   2000
#define SVT_ST_AREA    (128 * 1024)  /* write area; read-back area after it */
#define SVT_ST_MSG     64
#define SVT_ST_RECVS   32

typedef struct {
    uint32_t q;
    uint32_t seq;
} svt_st_msg_t;

static uint32_t svt_st_rand(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

/*
 * Initiator side of one iteration on one endpoint: an unsignaled WRITE of a
 * random range, a signaled READ of the same range into the read-back area,
 * a signaled SEND carrying (q, seq). The data comes from the local write
 * area, filled with a seed per iteration.
 */
static void svt_st_post(svt_ep_t *ep, uint32_t q, uint32_t seq,
                        uint32_t *rnd, size_t *off, size_t *len)
{
    svt_st_msg_t msg = {q, seq};
    size_t moff = 2 * SVT_ST_AREA + (seq % SVT_ST_RECVS) * SVT_ST_MSG;

    *len = 1 + svt_st_rand(rnd) % 8192;
    *off = svt_st_rand(rnd) % (SVT_ST_AREA - *len);
    svt_fill(ep->buf + *off, *len, seq * 31 + q);
    memcpy(ep->buf + moff, &msg, sizeof(msg));
    SVT_OK(svt_post_send(ep, IBV_WR_RDMA_WRITE, *off, *len,
                         svt_raddr(ep, *off), ep->remote.rkey, 0, 0,
                         ((uint64_t)q << 32) | seq));
    SVT_OK(svt_post_send(ep, IBV_WR_RDMA_READ, SVT_ST_AREA + *off, *len,
                         svt_raddr(ep, *off), ep->remote.rkey, 0,
                         IBV_SEND_SIGNALED, ((uint64_t)q << 32) | seq));
    SVT_OK(svt_post_send(ep, IBV_WR_SEND, moff, sizeof(msg), 0, 0, 0,
                         IBV_SEND_SIGNALED, ((uint64_t)q << 32) | seq));
}

/* Target side: receive n messages per endpoint (all on `cq`), re-posting
 * receives, checking each endpoint's sequence */
static void svt_st_receive(svt_ep_t *ep, int nep, struct ibv_cq *cq, int n)
{
    uint32_t next[SVT_ST_QPS] = {0};
    svt_st_msg_t msg;
    struct ibv_wc wc;
    int q, i, got;

    for (q = 0; q < nep; ++q) {
        for (i = 0; i < SVT_ST_RECVS; ++i) {
            svt_post_recv(&ep[q], 2 * SVT_ST_AREA + i * SVT_ST_MSG,
                          SVT_ST_MSG, i);
        }
    }
    for (got = 0; got < n * nep; ++got) {
        svt_wait_wc(cq, &wc, SVT_WC_TIMEOUT_MS);
        SVT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
                  "receive %d: status %s opcode %d", got,
                  ibv_wc_status_str(wc.status), wc.opcode);
        for (q = 0; (q < nep) && (ep[q].qp->qp_num != wc.qp_num); ++q) {
        }
        SVT_CHECK(q < nep, "completion for unknown qp_num 0x%x", wc.qp_num);
        memcpy(&msg, ep[q].buf + 2 * SVT_ST_AREA + wc.wr_id * SVT_ST_MSG,
               sizeof(msg));
        SVT_CHECK(msg.seq == next[q], "QP %d: message %u arrived, expected "
                  "%u", q, msg.seq, next[q]);
        ++next[q];
        svt_post_recv(&ep[q], 2 * SVT_ST_AREA + wc.wr_id * SVT_ST_MSG,
                      SVT_ST_MSG, wc.wr_id);
    }
}

/* Wait for the READ and SEND completions of one iteration of every QP in
 * `ep` and verify each read-back range */
static void svt_st_complete(svt_ep_t *ep, int nep, struct ibv_cq *cq,
                            uint32_t seq, const size_t *off, const size_t *len)
{
    struct ibv_wc wc;
    uint32_t q;
    int i;

    for (i = 0; i < 2 * nep; ++i) {
        svt_wait_wc(cq, &wc, SVT_WC_TIMEOUT_MS);
        q = (uint32_t)(wc.wr_id >> 32);
        SVT_CHECK(wc.status == IBV_WC_SUCCESS, "iteration %u QP %u: %s", seq,
                  q, ibv_wc_status_str(wc.status));
        SVT_CHECK((uint32_t)wc.wr_id == seq && q < (uint32_t)nep,
                  "completion for iteration %u QP %u during iteration %u",
                  (uint32_t)wc.wr_id, q, seq);
        if (wc.opcode == IBV_WC_RDMA_READ) {
            svt_pattern_check(ep[q].buf + SVT_ST_AREA + off[q], len[q],
                              seq * 31 + q, "read-back after write");
        }
    }
}

static void svt_st_opts(svt_ep_opts_t *o, struct ibv_cq *cq)
{
    svt_ep_opts_init(o, IBV_QPT_RC);
    o->buf_size    = 2 * SVT_ST_AREA + SVT_ST_RECVS * SVT_ST_MSG;
    o->max_send_wr = 64;
    o->max_recv_wr = SVT_ST_RECVS;
    o->cq          = cq;
}

/* SVT_ST_QPS QPs per side, one CQ per side shared by all of them */
static void svt_case_mixed(svt_proc_t *p)
{
    size_t off[SVT_ST_QPS], len[SVT_ST_QPS];
    svt_ep_t ep[SVT_ST_QPS];
    uint32_t seq, rnd = 12345;
    struct ibv_cq *cq;
    svt_ep_opts_t o;
    svt_dev_t dev;
    int q;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 512, NULL, NULL, 0));
    svt_st_opts(&o, cq);
    for (q = 0; q < SVT_ST_QPS; ++q) {
        svt_ep_pair(p, !p->rank, &dev, &o, &ep[q]);
    }
    if (p->rank == 1) {
        svt_st_receive(ep, SVT_ST_QPS, cq, SVT_ST_ITERS);
    } else {
        for (seq = 0; seq < SVT_ST_ITERS; ++seq) {
            for (q = 0; q < SVT_ST_QPS; ++q) {
                svt_st_post(&ep[q], q, seq, &rnd, &off[q], &len[q]);
            }
            svt_st_complete(ep, SVT_ST_QPS, cq, seq, off, len);
        }
    }
    svt_sync(p, !p->rank);
}

/* Threads: each thread of each rank drives its own QP and CQ */
#define SVT_ST_THREADS 2

typedef struct {
    svt_proc_t    *p;
    svt_ep_t      ep;
    struct ibv_cq *cq;
    int           index;
} svt_st_thread_t;

static void *svt_st_thread(void *arg)
{
    svt_st_thread_t *t = arg;
    uint32_t seq, rnd = 777 + t->index;
    size_t off, len;

    if (t->p->rank == 1) {
        svt_st_receive(&t->ep, 1, t->cq, SVT_ST_ITERS);
        return NULL;
    }
    for (seq = 0; seq < SVT_ST_ITERS; ++seq) {
        svt_st_post(&t->ep, 0, seq, &rnd, &off, &len);
        svt_st_complete(&t->ep, 1, t->cq, seq, &off, &len);
    }
    return NULL;
}

static void svt_case_threads(svt_proc_t *p)
{
    svt_st_thread_t t[SVT_ST_THREADS];
    pthread_t tid[SVT_ST_THREADS];
    svt_ep_opts_t o;
    svt_dev_t dev;
    int i;

    svt_dev_open(&dev);
    for (i = 0; i < SVT_ST_THREADS; ++i) {
        t[i].p     = p;
        t[i].index = i;
        SVT_NN(t[i].cq, ibv_create_cq(dev.ctx, 256, NULL, NULL, 0));
        svt_st_opts(&o, t[i].cq);
        svt_ep_pair(p, !p->rank, &dev, &o, &t[i].ep);
    }
    svt_sync(p, !p->rank);
    for (i = 0; i < SVT_ST_THREADS; ++i) {
        SVT_CHECK(pthread_create(&tid[i], NULL, svt_st_thread, &t[i]) == 0,
                  "pthread_create failed");
    }
    for (i = 0; i < SVT_ST_THREADS; ++i) {
        pthread_join(tid[i], NULL);
    }
    svt_sync(p, !p->rank);
}

/* Open descriptors of this process */
static int svt_fd_count(void)
{
    struct dirent *d;
    DIR *dir;
    int n = 0;

    SVT_NN(dir, opendir("/proc/self/fd"));
    while ((d = readdir(dir)) != NULL) {
        n += (d->d_name[0] != '.');
    }
    closedir(dir);
    return n;
}

typedef struct {
    svt_ep_t *ep;
    int      ret;
} svt_fd_send_t;

/* A SEND posted from a short-lived thread: the responder's completion
 * event is sent from this thread */
static void *svt_fd_thread(void *arg)
{
    svt_fd_send_t *s = arg;

    s->ret = svt_post_send(s->ep, IBV_WR_SEND, 0, 8, 0, 0, 0,
                           IBV_SEND_SIGNALED, 1);
    return NULL;
}

/*
 * Every object that may hold a descriptor, created and destroyed in a loop
 * (context, completion channel, CQ on it, SRQ, RC QPs, a UD QP attached to
 * a multicast group), with a completion event sent from a new thread each
 * time: the process ends with as many descriptors as after the first round.
 */
static void svt_case_fd_count(svt_proc_t *p)
{
    static const union ibv_gid mgid = {
        .raw = {0xff, 0x12, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}};
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
    struct ibv_comp_channel *ch;
    struct ibv_srq *srq;
    struct ibv_cq *cq, *ev_cq;
    svt_ep_t a, b, u;
    svt_fd_send_t s;
    svt_ep_opts_t o;
    svt_dev_t dev;
    pthread_t tid;
    void *ev_ctx;
    int i, base = -1;

    for (i = 0; i < 20; ++i) {
        svt_dev_open(&dev);
        SVT_NN(ch, ibv_create_comp_channel(dev.ctx));
        SVT_NN(cq, ibv_create_cq(dev.ctx, 64, NULL, ch, 0));
        SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
        svt_ep_opts_init(&o, IBV_QPT_RC);
        o.cq = cq;
        svt_ep_local_pair(&dev, &o, &a, &b);
        svt_ep_opts_init(&o, IBV_QPT_UD);
        svt_ep_create(&dev, &o, &u);
        SVT_OK(ibv_attach_mcast(u.qp, &mgid, 0xc009));

        svt_post_recv(&b, 0, 64, 2);
        SVT_OK(ibv_req_notify_cq(cq, 0));
        s.ep = &a;
        SVT_CHECK(pthread_create(&tid, NULL, svt_fd_thread, &s) == 0,
                  "pthread_create failed");
        pthread_join(tid, NULL);
        SVT_OK(s.ret);
        SVT_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
        SVT_CHECK(ev_cq == cq, "event of cq %p, expected %p", (void *)ev_cq,
                  (void *)cq);
        ibv_ack_cq_events(cq, 1);
        /* the receive completes inside the send, before it */
        svt_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_RECV, 2, NULL);
        svt_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_SEND, 1, NULL);

        SVT_OK(ibv_detach_mcast(u.qp, &mgid, 0xc009));
        svt_ep_destroy(&u);
        svt_ep_destroy(&b);
        svt_ep_destroy(&a);
        SVT_OK(ibv_destroy_srq(srq));
        SVT_OK(ibv_destroy_cq(cq));
        SVT_OK(ibv_destroy_comp_channel(ch));
        svt_dev_close(&dev);
        if (i == 0) {
            base = svt_fd_count();
        }
    }
    SVT_CHECK(svt_fd_count() == base, "%d descriptors open after 20 rounds, "
              "%d after the first", svt_fd_count(), base);
}

static void *svt_st_late_send(void *arg)
{
    svt_ep_t *a = arg;

    /* the responder runs in this post, and waits SOFTVERBS_RESP_DELAY
     * between its checks of b and b's CQE */
    if (svt_post_send(a, IBV_WR_SEND, 0, 16, 0, 0, 0, IBV_SEND_SIGNALED,
                      10) != 0) {
        return a;
    }
    return NULL;
}

/*
 * The target of a SEND is reset (and connected again) while the responder
 * is between its checks of the QP and the receive CQE it writes
 * (SOFTVERBS_RESP_DELAY=300ms here): the reset's sweep finds nothing yet,
 * and the CQE comes after it. mlx5 returns no completion of a QP's earlier
 * life after a reset (the HCA writes none for a QP in RESET;
 * __mlx5_cq_clean removes the rest), so the message must not be polled in
 * the new life, as if the QP's new peer had sent it: a QP pool's reused
 * QP (qpx_rc) would take it for its new endpoint's. Its SRQ WQE goes back
 * to the SRQ, and the new life's first message lands in it.
 */
static void svt_case_reset_while_responding(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
    struct ibv_srq *srq;
    struct ibv_wc wc;
    svt_dev_t dev;
    svt_ep_opts_t o;
    svt_ep_t a, b;
    svt_addr_t aa;
    pthread_t tid;
    void *ret;

    (void)p;
    svt_dev_open(&dev);
    SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
    svt_ep_opts_init(&o, IBV_QPT_RC);
    o.srq = srq;
    svt_ep_local_pair(&dev, &o, &a, &b);
    svt_ep_addr(&a, &aa);
    svt_post_recv(&b, 256, 64, 200); /* to b's SRQ */

    svt_fill(a.buf, 16, 31);
    SVT_CHECK(pthread_create(&tid, NULL, svt_st_late_send, &a) == 0,
              "pthread_create");
    usleep(100000); /* the responder waits for its CQE */
    SVT_OK(ibv_modify_qp(b.qp, &reset, IBV_QP_STATE));
    svt_ep_connect(&b, &aa);
    SVT_CHECK(pthread_join(tid, &ret) == 0, "pthread_join");
    SVT_CHECK(ret == NULL, "the send was not posted");
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 10, NULL);
    /* the earlier life's message is not the new life's */
    svt_expect_no_wc(b.cq, 50);

    svt_fill(a.buf, 16, 32);
    SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 16, 0, 0, 0, IBV_SEND_SIGNALED,
                         11));
    svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 11, NULL);
    svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 200, &wc);
    SVT_CHECK(wc.byte_len == 16, "received %u bytes", wc.byte_len);
    svt_pattern_check(b.buf + 256, 16, 32, "the new life's message in the "
                      "SRQ WQE given back");
    svt_ep_destroy(&a);
    svt_ep_destroy(&b);
    SVT_OK(ibv_destroy_srq(srq));
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_stress[] = {
    {"stress/qps_on_shared_cq", svt_case_mixed, 2, 0, 30},
    {"stress/threads", svt_case_threads, 2, 0, 30},
    {"stress/fd_count", svt_case_fd_count, 1, 0, 30},
    {"stress/reset_while_responding", svt_case_reset_while_responding, 1, 0,
     30, "SOFTVERBS_RESP_DELAY=300ms"},
    {NULL}
};
