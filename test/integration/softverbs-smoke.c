/*
 * softverbs-smoke: quick checks of the soft device's semantics, in one
 * process (two connected RC QPs) and with a forked peer.
 * Run with LD_LIBRARY_PATH pointing at the softverbs libraries.
 */
#include <infiniband/verbs.h>
#include <softverbs/softverbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/mman.h>

static int failures;
static int passes;

#define CHECK(_cond, _fmt, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAIL %s:%d: " _fmt "\n", __func__, __LINE__, ## __VA_ARGS__); \
            failures++; \
        } else { \
            passes++; \
        } \
    } while (0)

struct pair {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq[2];
    struct ibv_qp *qp[2];
    char *buf;
    struct ibv_mr *mr;
};

static struct ibv_qp *mk_qp(struct pair *p, struct ibv_cq *cq,
                            enum ibv_qp_type type)
{
    struct ibv_qp_init_attr a = {
        .send_cq = cq, .recv_cq = cq, .qp_type = type,
        .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
                 .max_recv_sge = 2, .max_inline_data = 64 },
    };
    return ibv_create_qp(p->pd, &a);
}

static int connect_rc(struct ibv_qp *qp, uint32_t dqpn, int rnr_retry,
                      int timeout, int retry)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = dqpn;
    a.ah_attr.dlid = 1;
    a.ah_attr.port_num = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = timeout;
    a.retry_cnt = retry;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                         IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC);
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
    int i, n;

    for (i = 0; i < 2000000; i++) {
        n = ibv_poll_cq(cq, 1, wc);
        if (n) {
            return n;
        }
        if (i > 1000) {
            usleep(10);
        }
    }
    return 0;
}

static int post_write(struct ibv_qp *qp, void *laddr, uint32_t lkey,
                      uint64_t raddr, uint32_t rkey, uint32_t len,
                      enum ibv_wr_opcode op)
{
    struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
    struct ibv_send_wr wr = {0}, *bad;

    wr.wr_id = 42;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &wr, &bad);
}

/* Post one signaled WR (see post_write) and check that it completes on _cq
 * with status _st */
#define CHECK_WR(_st, _cq, _qp, _buf, _lkey, _raddr, _rkey, _len, _op, _what) \
    do { \
        struct ibv_wc _wc = {0}; \
        CHECK(post_write(_qp, _buf, _lkey, _raddr, _rkey, _len, _op) == 0, \
              "post"); \
        CHECK(wait_wc(_cq, &_wc) && (_wc.status == (_st)), _what ": %s", \
              ibv_wc_status_str(_wc.status)); \
    } while (0)

static void setup(struct pair *p, int rnr_retry, int timeout, int retry)
{
    int i;

    p->pd = ibv_alloc_pd(p->ctx);
    for (i = 0; i < 2; i++) {
        p->cq[i] = ibv_create_cq(p->ctx, 64, NULL, NULL, 0);
        p->qp[i] = mk_qp(p, p->cq[i], IBV_QPT_RC);
    }
    p->buf = calloc(1, 65536);
    p->mr = ibv_reg_mr(p->pd, p->buf, 65536, IBV_ACCESS_LOCAL_WRITE |
                       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC);
    CHECK(connect_rc(p->qp[0], p->qp[1]->qp_num, rnr_retry, timeout,
                     retry) == 0, "connect 0");
    CHECK(connect_rc(p->qp[1], p->qp[0]->qp_num, rnr_retry, timeout,
                     retry) == 0, "connect 1");
}

static void teardown(struct pair *p)
{
    int i;

    for (i = 0; i < 2; i++) {
        ibv_destroy_qp(p->qp[i]);
        ibv_destroy_cq(p->cq[i]);
    }
    ibv_dereg_mr(p->mr);
    ibv_dealloc_pd(p->pd);
    free(p->buf);
}

static void test_write_and_errors(struct ibv_context *ctx)
{
    struct pair p = { .ctx = ctx };
    struct ibv_wc wc;
    struct ibv_sge sge;
    struct ibv_send_wr wr = {0}, *bad;

    setup(&p, 0, 14, 1);
    strcpy(p.buf, "hello");
    CHECK(post_write(p.qp[0], p.buf, p.mr->lkey, (uintptr_t)p.buf + 1024,
                     p.mr->rkey, 6, IBV_WR_RDMA_WRITE) == 0, "post");
    CHECK(wait_wc(p.cq[0], &wc) && wc.status == IBV_WC_SUCCESS &&
          !strcmp(p.buf + 1024, "hello"), "write: %s",
          ibv_wc_status_str(wc.status));

    /* atomics */
    *(uint64_t *)(p.buf + 2048) = 5;
    sge.addr = (uintptr_t)p.buf + 4096;
    sge.length = 8;
    sge.lkey = p.mr->lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = (uintptr_t)p.buf + 2048;
    wr.wr.atomic.rkey = p.mr->rkey;
    wr.wr.atomic.compare_add = 3;
    CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0, "post faa");
    CHECK(wait_wc(p.cq[0], &wc) && wc.status == IBV_WC_SUCCESS &&
          *(uint64_t *)(p.buf + 4096) == 5 &&
          *(uint64_t *)(p.buf + 2048) == 8, "faa");

    /* bad rkey: remote access error, nothing written, QP in error and
     * the next WR flushed */
    memset(p.buf + 1024, 0, 16);
    CHECK_WR(IBV_WC_REM_ACCESS_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey,
             (uintptr_t)p.buf + 1024, p.mr->rkey + 1, 6, IBV_WR_RDMA_WRITE,
             "bad rkey");
    CHECK(p.buf[1024] == 0, "written despite bad rkey");
    CHECK_WR(IBV_WC_WR_FLUSH_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey,
             (uintptr_t)p.buf + 1024, p.mr->rkey, 6, IBV_WR_RDMA_WRITE,
             "flush");
    teardown(&p);

    /* out of bounds */
    setup(&p, 0, 14, 1);
    CHECK_WR(IBV_WC_REM_ACCESS_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey,
             (uintptr_t)p.buf + 65530, p.mr->rkey, 16, IBV_WR_RDMA_WRITE,
             "oob");
    teardown(&p);

    /* RNR: no receive posted */
    setup(&p, 1, 14, 1);
    CHECK_WR(IBV_WC_RNR_RETRY_EXC_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey, 0,
             0, 6, IBV_WR_SEND, "rnr");
    teardown(&p);

    /* peer QP in error: transport retry exceeded */
    setup(&p, 0, 10, 2);
    {
        struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
        CHECK(ibv_modify_qp(p.qp[1], &a, IBV_QP_STATE) == 0, "to err");
    }
    CHECK_WR(IBV_WC_RETRY_EXC_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey,
             (uintptr_t)p.buf + 1024, p.mr->rkey, 6, IBV_WR_RDMA_WRITE,
             "retry");
    teardown(&p);
}

static void test_modify(struct ibv_context *ctx)
{
    struct pair p = { .ctx = ctx };
    struct ibv_qp_attr a;

    p.pd = ibv_alloc_pd(ctx);
    p.cq[0] = ibv_create_cq(ctx, 8, NULL, NULL, 0);
    p.qp[0] = mk_qp(&p, p.cq[0], IBV_QPT_RC);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE) == EINVAL,
          "missing attrs accepted");
    a.qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE) == EINVAL,
          "RESET->RTS accepted");
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                        IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY) ==
          EINVAL, "extra attr accepted");
    CHECK(ibv_modify_qp(p.qp[0], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                        IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
    ibv_destroy_qp(p.qp[0]);
    ibv_destroy_cq(p.cq[0]);
    ibv_dealloc_pd(p.pd);
}

static void test_cross_process(struct ibv_context *ctx)
{
    struct pair p = { .ctx = ctx };
    volatile char *shared;
    pid_t pid;
    int i;

    /* the forked child owns QP 1's memory through its own registration */
    shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    setup(&p, 0, 10, 2);
    pid = fork();
    if (pid == 0) {
        struct ibv_mr *mr;
        char *buf = calloc(1, 4096);
        struct ibv_pd *pd = p.pd;
        mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_WRITE);
        if (mr == NULL) {
            _exit(1);
        }
        *(uint64_t *)(shared + 8) = (uintptr_t)buf;
        *(uint32_t *)(shared + 16) = mr->rkey;
        __sync_synchronize();
        shared[0] = 1;
        for (i = 0; (i < 1000000) && strcmp(buf, "xproc"); i++) {
            usleep(10);
        }
        _exit(strcmp(buf, "xproc") ? 2 : 0);
    }
    while (!shared[0]) {
        usleep(100);
    }
    /* QP 1 (owned by the parent) is connected; the MR is the child's,
     * registered in the same PD id: the write goes to the child iff the
     * child owns QP 1; here it must fail with a remote access error since
     * QP 1's owner is the parent */
    strcpy(p.buf, "xproc");
    CHECK_WR(IBV_WC_REM_ACCESS_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey,
             *(uint64_t *)(shared + 8), *(uint32_t *)(shared + 16), 6,
             IBV_WR_RDMA_WRITE, "foreign mr");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    teardown(&p);
}


static void test_create_rules(struct ibv_context *ctx)
{
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
    struct ibv_srq *srq = ibv_create_srq(pd, &sa);
    struct ibv_qp_init_attr a = {
        .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UC,
        .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                 .max_recv_sge = 1 },
    };
    struct ibv_qp *qp;
    union ibv_gid mgid = { .raw = { 0xff, 0x12 } };
    struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };

    CHECK(srq != NULL, "srq");
    CHECK(ibv_create_qp(pd, &a) == NULL, "SRQ with UC accepted");
    a.qp_type = IBV_QPT_UD;
    a.cap.max_recv_wr = 100000;   /* ignored with an SRQ */
    qp = ibv_create_qp(pd, &a);
    CHECK(qp != NULL && a.cap.max_recv_wr == 0, "UD with SRQ: %p %u",
          (void *)qp, a.cap.max_recv_wr);
    CHECK(ibv_attach_mcast(qp, &mgid, 0xc001) == 0, "attach");
    CHECK(ibv_destroy_qp(qp) == EBUSY, "destroy while attached");
    CHECK(ibv_detach_mcast(qp, &mgid, 0xc001) == 0, "detach");
    CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0, "reset->reset");
    CHECK(ibv_destroy_qp(qp) == 0, "destroy");

    /* caps above the device limits: EINVAL by default, as mlx5's
     * create_qp (SOFTVERBS_CAP_POLICY=clamp lowers them instead) */
    a.srq = NULL;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 1 << 20;
    a.cap.max_recv_wr = 4;
    a.cap.max_inline_data = 100000;
    errno = 0;
    qp = ibv_create_qp(pd, &a);
    CHECK(qp == NULL && errno == EINVAL, "caps above the device refused");
    if (qp) {
        ibv_destroy_qp(qp);
    }
    ibv_destroy_srq(srq);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
}

static void test_ud_and_events(struct ibv_context *ctx)
{
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 2, NULL, ch, 0);
    struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr ia = {
        .send_cq = scq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
        .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
                 .max_recv_sge = 2, .max_inline_data = 64 },
    };
    struct ibv_qp *qp[2];
    struct ibv_qp_attr a;
    struct ibv_ah_attr aha = { .dlid = 1, .port_num = 1 };
    struct ibv_ah *ah = ibv_create_ah(pd, &aha);
    char *buf = calloc(1, 8192);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge;
    struct ibv_recv_wr rwr = {0}, *rbad;
    struct ibv_send_wr wr = {0}, *bad;
    struct ibv_async_event ev;
    struct ibv_cq *evcq;
    void *evctx;
    struct ibv_wc wc;
    struct pollfd pfd;
    int i;

    for (i = 0; i < 2; i++) {
        qp[i] = ibv_create_qp(pd, &ia);
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qkey = 0x1234;
        CHECK(!ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                             IBV_QP_PORT | IBV_QP_QKEY), "ud init");
        a.qp_state = IBV_QPS_RTR;
        CHECK(!ibv_modify_qp(qp[i], &a, IBV_QP_STATE), "ud rtr");
        a.qp_state = IBV_QPS_RTS;
        CHECK(!ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
              "ud rts");
    }
    /* 3 receives into a CQ of 2 entries: the third overruns */
    for (i = 0; i < 3; i++) {
        sge.addr = (uintptr_t)buf + 4096 + i * 1024;
        sge.length = 1024;
        sge.lkey = mr->lkey;
        rwr.wr_id = i;
        rwr.sg_list = &sge;
        rwr.num_sge = 1;
        CHECK(!ibv_post_recv(qp[1], &rwr, &rbad), "post recv");
    }
    CHECK(!ibv_req_notify_cq(cq, 0), "arm");
    strcpy(buf, "datagram");
    sge.addr = (uintptr_t)buf;
    sge.length = 9;
    sge.lkey = mr->lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = qp[1]->qp_num;
    wr.wr.ud.remote_qkey = 0x1234;
    CHECK(!ibv_post_send(qp[0], &wr, &bad), "ud send");
    pfd.fd = ch->fd;
    pfd.events = POLLIN;
    CHECK(poll(&pfd, 1, 1000) == 1, "channel not readable");
    CHECK(!ibv_get_cq_event(ch, &evcq, &evctx) && evcq == cq, "cq event");
    ibv_ack_cq_events(cq, 1);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.byte_len == 40 + 9 && (wc.wc_flags & IBV_WC_GRH) &&
          wc.src_qp == qp[0]->qp_num && !strcmp(buf + 4096 + 40, "datagram"),
          "ud recv: len %u", wc.byte_len);
    /* wrong qkey: dropped silently */
    wr.wr.ud.remote_qkey = 0x9999;
    CHECK(!ibv_post_send(qp[0], &wr, &bad), "ud send");
    CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "qkey mismatch delivered");
    wr.wr.ud.remote_qkey = 0x1234;
    /* A CQ asked for 2 holds 3, as mlx5's (cqe + 1 rounded up to a power
     * of two, less one): fill it to cq->cqe (two receives are still
     * posted), then one more completion overruns it: an event */
    CHECK(cq->cqe == 3, "CQ of 2 asked: cqe %d (mlx5: 3)", cq->cqe);
    sge.addr = (uintptr_t)buf + 4096;
    for (i = 0; i < cq->cqe; i++) {
        if (i >= 2) {
            rwr.wr_id = 10 + i;
            CHECK(!ibv_post_recv(qp[1], &rwr, &rbad), "post recv");
        }
        CHECK(!ibv_post_send(qp[0], &wr, &bad), "ud send");
    }
    rwr.wr_id = 9;
    CHECK(!ibv_post_recv(qp[1], &rwr, &rbad), "post recv");
    CHECK(!ibv_post_send(qp[0], &wr, &bad), "ud send");
    pfd.fd = ctx->async_fd;
    if (poll(&pfd, 1, 1000) == 1) {
        /* readable: ibv_get_async_event does not block */
        CHECK(!ibv_get_async_event(ctx, &ev) &&
              ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq,
              "cq overrun event");
        ibv_ack_async_event(&ev);
    } else {
        CHECK(0, "async fd not readable: no overrun event");
    }
    while (ibv_poll_cq(scq, 1, &wc) > 0)
        ;
    while (ibv_poll_cq(cq, 1, &wc) > 0)
        ;
    for (i = 0; i < 2; i++) {
        ibv_destroy_qp(qp[i]);
    }
    ibv_destroy_ah(ah);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_destroy_cq(scq);
    ibv_destroy_comp_channel(ch);
    ibv_dealloc_pd(pd);
    free(buf);
}


/* a peer process that dies: the requester retries, then gets
 * IBV_WC_RETRY_EXC_ERR; a live peer in another process gets the data */
static void test_peer_death(struct ibv_context *ctx)
{
    struct pair p = { .ctx = ctx };
    volatile uint64_t *sh;
    pid_t pid;
    int i;

    sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    p.pd = ibv_alloc_pd(ctx);
    p.cq[0] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    p.qp[0] = mk_qp(&p, p.cq[0], IBV_QPT_RC);
    p.buf = calloc(1, 4096);
    p.mr = ibv_reg_mr(p.pd, p.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    pid = fork();
    if (pid == 0) {
        struct ibv_cq *cq;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
        struct ibv_qp *qp = mk_qp(&p, cq, IBV_QPT_RC);
        char *buf = calloc(1, 4096);
        struct ibv_mr *mr = ibv_reg_mr(p.pd, buf, 4096,
                                       IBV_ACCESS_LOCAL_WRITE |
                                       IBV_ACCESS_REMOTE_WRITE);
        if (!qp || !mr || connect_rc(qp, p.qp[0]->qp_num, 0, 8, 1)) {
            _exit(1);
        }
        sh[1] = qp->qp_num;
        sh[2] = (uintptr_t)buf;
        sh[3] = mr->rkey;
        __sync_synchronize();
        sh[0] = 1;
        for (i = 0; (i < 100000) && strcmp(buf, "alive"); i++) {
            usleep(10);
        }
        sh[4] = !strcmp(buf, "alive");
        __sync_synchronize();
        sh[0] = 2;
        pause();
        _exit(0);
    }
    while (sh[0] != 1) {
        usleep(100);
    }
    CHECK(connect_rc(p.qp[0], sh[1], 0, 8, 1) == 0, "connect");
    strcpy(p.buf, "alive");
    CHECK_WR(IBV_WC_SUCCESS, p.cq[0], p.qp[0], p.buf, p.mr->lkey, sh[2],
             sh[3], 6, IBV_WR_RDMA_WRITE, "write to live peer");
    while (sh[0] != 2) {
        usleep(100);
    }
    CHECK(sh[4] == 1, "peer did not see the data");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_WR(IBV_WC_RETRY_EXC_ERR, p.cq[0], p.qp[0], p.buf, p.mr->lkey, sh[2],
             sh[3], 6, IBV_WR_RDMA_WRITE, "write to dead peer");
    ibv_destroy_qp(p.qp[0]);
    ibv_destroy_cq(p.cq[0]);
    ibv_dereg_mr(p.mr);
    ibv_dealloc_pd(p.pd);
    free(p.buf);
    munmap((void *)sh, 4096);
}

static void test_srq_limit(struct ibv_context *ctx)
{
    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
    struct ibv_srq *srq = ibv_create_srq(pd, &sa);
    struct ibv_srq_attr lim = { .srq_limit = 3 };
    struct ibv_qp_init_attr ia = {
        .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 8, .max_send_sge = 1 },
    };
    struct ibv_qp *qp[2];
    char *buf = calloc(1, 4096);
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
    struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
    struct ibv_async_event ev;
    struct ibv_wc wc;
    struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
    int i;

    qp[0] = ibv_create_qp(pd, &ia);
    qp[1] = ibv_create_qp(pd, &ia);
    CHECK(!connect_rc(qp[0], qp[1]->qp_num, 0, 10, 1) &&
          !connect_rc(qp[1], qp[0]->qp_num, 0, 10, 1), "connect");
    for (i = 0; i < 3; i++) {
        CHECK(!ibv_post_srq_recv(srq, &rwr, &rbad), "post srq");
    }
    CHECK(!ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT), "arm limit");
    CHECK(post_write(qp[0], buf + 1024, mr->lkey, 0, 0, 8, IBV_WR_SEND) == 0,
          "send");
    /* 3 posted, one consumed: fewer than the limit of 3 */
    CHECK(poll(&pfd, 1, 1000) == 1, "no async event");
    CHECK(pfd.revents && !ibv_get_async_event(ctx, &ev) &&
          ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
          ev.element.srq == srq, "srq limit event %d", ev.event_type);
    ibv_ack_async_event(&ev);
    CHECK(!ibv_query_srq(srq, &lim) && lim.srq_limit == 0, "disarmed");
    while (ibv_poll_cq(cq, 1, &wc) > 0)
        ;
    CHECK(ibv_destroy_srq(srq) == EBUSY, "destroy SRQ in use");
    ibv_destroy_qp(qp[0]);
    ibv_destroy_qp(qp[1]);
    CHECK(ibv_destroy_srq(srq) == 0, "destroy srq");
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    free(buf);
}

int main(void)
{
    struct ibv_device **list;
    struct ibv_context *ctx;
    struct softverbs_stats st;
    int n;

    list = ibv_get_device_list(&n);
    if (!list || n < 1) {
        printf("FAIL no device\n");
        return 1;
    }
    ctx = ibv_open_device(list[0]);
    test_write_and_errors(ctx);
    test_modify(ctx);
    test_cross_process(ctx);
    test_create_rules(ctx);
    test_ud_and_events(ctx);
    test_peer_death(ctx);
    test_srq_limit(ctx);
    CHECK(softverbs_get_stats(getpid(), &st) == 0 && st.num_qp == 0,
          "leaked QPs: %u", st.num_qp);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    /* the registry of this run is private to it (see Makefile.am) */
    if (getenv("SOFTVERBS_SHM") != NULL) {
        unlink(getenv("SOFTVERBS_SHM"));
    }
    printf("%d passed, %d failed\n", passes, failures);
    return failures != 0;
}
