/*
 * librdmacm in a process forked after it used the CM (issue 37):
 *   softverbs_cm_fork CASE PORT
 * The parent makes an event channel and an id and listens on 127.0.0.1
 * (PORT), so that its CM is running, then forks. Real librdmacm has no
 * thread of its own (the kernel makes the events), so a child that opens
 * its own channel and ids uses the CM as any process does. CASE:
 *   child-connects  the child connects to the parent's listener
 *   child-listens   the child listens (PORT + 1), the parent connects
 *   child-sync      the child connects with a synchronous id (no channel)
 *   grandchild      the child connects, then forks; the grandchild
 *                   connects too
 *   parent-relisten the parent destroys its listener and listens on the
 *                   same port again while the child lives (the port and
 *                   its name are free at once, as the kernel frees them);
 *                   then the child connects to it
 * Every connection moves a patterned message each way (RDMA SEND/RECV),
 * checked byte by byte on arrival, then disconnects. Unmodified librdmacm
 * API only. Prints "PASS: CASE ..." and exits 0, or "FAIL: ..." and 1;
 * every wait is bounded (10 s), so a missing CM fails instead of hanging.
 */
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define MSG_LEN     4096
#define WAIT_MS     10000

struct conn {
    struct rdma_cm_id *id;
    struct ibv_mr     *mr;
    uint8_t           buf[2 * MSG_LEN]; /* receive, then send */
};

static const char *who = "parent";

static void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s (pid %d): ", who, (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

static void addr_of(struct sockaddr_in *sin, int port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons((uint16_t)port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* The next event of ch within WAIT_MS, which must be expect with status 0;
 * acked unless ev_p wants it */
static int get_event(struct rdma_event_channel *ch,
                     enum rdma_cm_event_type expect,
                     struct rdma_cm_event **ev_p)
{
    struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    int n;

    n = poll(&pfd, 1, WAIT_MS);
    if (n <= 0) {
        fail("no event in %d ms waiting for %s", WAIT_MS,
             rdma_event_str(expect));
        return -1;
    }
    if (rdma_get_cm_event(ch, &ev) != 0) {
        fail("rdma_get_cm_event: %m");
        return -1;
    }
    if ((ev->event != expect) || (ev->status != 0)) {
        fail("got %s status %d waiting for %s", rdma_event_str(ev->event),
             ev->status, rdma_event_str(expect));
        rdma_ack_cm_event(ev);
        return -1;
    }
    if (ev_p != NULL) {
        *ev_p = ev;
    } else {
        rdma_ack_cm_event(ev);
    }
    return 0;
}

/* The id's QP (CQs made by the CM), its buffer registered, a receive
 * posted */
static int conn_qp(struct conn *c)
{
    struct ibv_qp_init_attr a;
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    int ret;

    memset(&a, 0, sizeof(a));
    a.qp_type          = IBV_QPT_RC;
    a.cap.max_send_wr  = 4;
    a.cap.max_recv_wr  = 4;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    if (rdma_create_qp(c->id, NULL, &a) != 0) {
        fail("rdma_create_qp: %m");
        return -1;
    }
    c->mr = ibv_reg_mr(c->id->pd, c->buf, sizeof(c->buf),
                       IBV_ACCESS_LOCAL_WRITE);
    if (c->mr == NULL) {
        fail("ibv_reg_mr: %m");
        return -1;
    }
    memset(c->buf, 0, MSG_LEN);
    sge.addr   = (uintptr_t)c->buf;
    sge.length = MSG_LEN;
    sge.lkey   = c->mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ret = ibv_post_recv(c->id->qp, &wr, &bad);
    if (ret != 0) {
        fail("ibv_post_recv: %s", strerror(ret));
        return -1;
    }
    return 0;
}

static uint8_t pattern(unsigned seed, size_t i)
{
    return (uint8_t)((i * 131u) ^ (seed * 17u) ^ (i >> 8));
}

/* One completion of cq within WAIT_MS, which must be a success */
static int poll_one(struct ibv_cq *cq, const char *what)
{
    struct timespec t0, t;
    struct ibv_wc wc;
    int n;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) {
            fail("ibv_poll_cq: %d", n);
            return -1;
        } else if (n == 1) {
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 +
            (t.tv_nsec - t0.tv_nsec) / 1000000 > WAIT_MS) {
            fail("no %s completion in %d ms", what, WAIT_MS);
            return -1;
        }
    }
    if (wc.status != IBV_WC_SUCCESS) {
        fail("%s completion: %s", what, ibv_wc_status_str(wc.status));
        return -1;
    }
    if ((wc.opcode == IBV_WC_RECV) && (wc.byte_len != MSG_LEN)) {
        fail("received %u bytes, not %d", wc.byte_len, MSG_LEN);
        return -1;
    }
    return 0;
}

static int conn_send(struct conn *c, unsigned seed)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    size_t i;
    int ret;

    for (i = 0; i < MSG_LEN; i++) {
        c->buf[MSG_LEN + i] = pattern(seed, i);
    }
    sge.addr   = (uintptr_t)(c->buf + MSG_LEN);
    sge.length = MSG_LEN;
    sge.lkey   = c->mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list    = &sge;
    wr.num_sge    = 1;
    wr.opcode     = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ret = ibv_post_send(c->id->qp, &wr, &bad);
    if (ret != 0) {
        fail("ibv_post_send: %s", strerror(ret));
        return -1;
    }
    return poll_one(c->id->send_cq, "send");
}

static int conn_recv(struct conn *c, unsigned seed)
{
    size_t i;

    if (poll_one(c->id->recv_cq, "receive") != 0) {
        return -1;
    }
    for (i = 0; i < MSG_LEN; i++) {
        if (c->buf[i] != pattern(seed, i)) {
            fail("byte %zu received 0x%02x, sent 0x%02x", i, c->buf[i],
                 pattern(seed, i));
            return -1;
        }
    }
    return 0;
}

/* The active side sends seed and receives seed + 1; the passive side the
 * other way round */
static int conn_exchange(struct conn *c, int active, unsigned seed)
{
    if (active) {
        return ((conn_send(c, seed) == 0) && (conn_recv(c, seed + 1) == 0)) ?
               0 : -1;
    }
    return ((conn_recv(c, seed) == 0) && (conn_send(c, seed + 1) == 0)) ?
           0 : -1;
}

static void conn_param(struct rdma_conn_param *cp)
{
    memset(cp, 0, sizeof(*cp));
    cp->responder_resources = 1;
    cp->initiator_depth     = 1;
    cp->retry_count         = 7;
    cp->rnr_retry_count     = 7;
}

static void conn_free(struct conn *c)
{
    if (c->id == NULL) {
        return;
    }
    if (c->id->qp != NULL) {
        rdma_destroy_qp(c->id);
    }
    if (c->mr != NULL) {
        ibv_dereg_mr(c->mr);
    }
    rdma_destroy_id(c->id);
    c->id = NULL;
}

/* A connection to 127.0.0.1:port on a channel of its own (or a
 * synchronous id), a message each way, a disconnect */
static int active_connect(int port, int sync, unsigned seed)
{
    struct rdma_event_channel *ch = NULL;
    struct rdma_conn_param cp;
    struct sockaddr_in sin;
    struct conn c;
    int ret = -1;

    memset(&c, 0, sizeof(c));
    if (!sync && ((ch = rdma_create_event_channel()) == NULL)) {
        fail("rdma_create_event_channel: %m");
        return -1;
    }
    if (rdma_create_id(ch, &c.id, NULL, RDMA_PS_TCP) != 0) {
        fail("rdma_create_id: %m");
        goto out;
    }
    addr_of(&sin, port);
    if (rdma_resolve_addr(c.id, NULL, (struct sockaddr *)&sin, WAIT_MS)) {
        fail("rdma_resolve_addr: %m");
        goto out;
    } else if (!sync && get_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL)) {
        goto out;
    }
    if (rdma_resolve_route(c.id, WAIT_MS)) {
        fail("rdma_resolve_route: %m");
        goto out;
    } else if (!sync && get_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL)) {
        goto out;
    }
    if (conn_qp(&c) != 0) {
        goto out;
    }
    conn_param(&cp);
    if (rdma_connect(c.id, &cp)) {
        fail("rdma_connect: %m");
        goto out;
    } else if (!sync && get_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL)) {
        goto out;
    }
    if (conn_exchange(&c, 1, seed) != 0) {
        goto out;
    }
    if (rdma_disconnect(c.id)) {
        fail("rdma_disconnect: %m");
        goto out;
    } else if (!sync && get_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL)) {
        goto out;
    }
    ret = 0;
out:
    conn_free(&c);
    if (ch != NULL) {
        rdma_destroy_event_channel(ch);
    }
    return ret;
}

/* A listener on 127.0.0.1:port of channel ch */
static struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, int port)
{
    struct sockaddr_in sin;
    struct rdma_cm_id *id;

    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
        fail("rdma_create_id: %m");
        return NULL;
    }
    addr_of(&sin, port);
    if ((rdma_bind_addr(id, (struct sockaddr *)&sin) != 0) ||
        (rdma_listen(id, 8) != 0)) {
        fail("listen on port %d: %m", port);
        rdma_destroy_id(id);
        return NULL;
    }
    return id;
}

/* One connection request on ch accepted, a message each way, the peer's
 * disconnect */
static int passive_serve(struct rdma_event_channel *ch, unsigned seed)
{
    struct rdma_cm_event *ev;
    struct rdma_conn_param cp;
    struct conn c;
    int ret = -1;

    memset(&c, 0, sizeof(c));
    if (get_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev) != 0) {
        return -1;
    }
    c.id = ev->id;
    rdma_ack_cm_event(ev);
    conn_param(&cp);
    if (conn_qp(&c) != 0) {
        goto out;
    } else if (rdma_accept(c.id, &cp) != 0) {
        fail("rdma_accept: %m");
        goto out;
    }
    if ((get_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL) != 0) ||
        (conn_exchange(&c, 0, seed) != 0) ||
        (get_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL) != 0)) {
        goto out;
    }
    rdma_disconnect(c.id); /* our DREP, as applications answer */
    ret = 0;
out:
    conn_free(&c);
    return ret;
}

/* The exit status of pid within WAIT_MS * 3 (killed when later) */
static int reap(pid_t pid)
{
    int status, i;

    for (i = 0; i < WAIT_MS * 3 / 10; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return (WIFEXITED(status) && (WEXITSTATUS(status) == 0)) ? 0 : -1;
        }
        usleep(10000);
    }
    fail("process %d did not finish", (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* In the child: connect to the parent's listener, then (grandchild) fork
 * and let the grandchild connect too, the parent serving both */
static int child_connects(int port, int sync, int grandchild)
{
    pid_t pid;

    if (active_connect(port, sync, 1) != 0) {
        return -1;
    }
    if (!grandchild) {
        return 0;
    }
    pid = fork();
    if (pid < 0) {
        fail("fork: %m");
        return -1;
    } else if (pid == 0) {
        who = "grandchild";
        exit(active_connect(port, 0, 3) ? 1 : 0);
    }
    return reap(pid);
}

/* A byte on fd within WAIT_MS: the other process is ready */
static int wait_ready(int fd, const char *what)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    char byte;

    if ((poll(&pfd, 1, WAIT_MS) == 1) && (read(fd, &byte, 1) == 1)) {
        return 0;
    }
    fail("%s: not ready in %d ms", what, WAIT_MS);
    return -1;
}

static void tell_ready(int fd)
{
    char byte = 0;

    if (write(fd, &byte, 1) != 1) {
        fail("write: %m");
    }
}

/* The child's side of tc: up tells the parent, down hears from it */
static int child_main(const char *tc, int port, int up, int down)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *lid;
    int ret;

    who = "child";
    if (!strcmp(tc, "child-listens")) {
        /* a listener on a channel of its own, serving the parent */
        ch  = rdma_create_event_channel();
        lid = (ch != NULL) ? listen_on(ch, port + 1) : NULL;
        if (lid == NULL) {
            return -1;
        }
        tell_ready(up);
        ret = passive_serve(ch, 2);
        rdma_destroy_id(lid);
        rdma_destroy_event_channel(ch);
        return ret;
    } else if (!strcmp(tc, "parent-relisten")) {
        if (wait_ready(down, "the parent's new listener") != 0) {
            return -1;
        }
    }
    return child_connects(port, !strcmp(tc, "child-sync"),
                          !strcmp(tc, "grandchild"));
}

/* The parent's side of tc, its listener lid on ch */
static int parent_main(const char *tc, int port, struct rdma_event_channel *ch,
                       struct rdma_cm_id **lid, int up, int down)
{
    if (!strcmp(tc, "child-listens")) {
        /* once the child listens: a REQ earlier is rejected (reason 8) */
        return (wait_ready(up, "the child's listener") == 0) ?
               active_connect(port + 1, 0, 2) : -1;
    } else if (!strcmp(tc, "parent-relisten")) {
        /* the port is free once the parent destroyed its listener, as the
         * kernel's DESTROY_ID frees it, the child alive or not */
        rdma_destroy_id(*lid);
        *lid = listen_on(ch, port);
        if (*lid == NULL) {
            return -1;
        }
        tell_ready(down);
    }
    if (passive_serve(ch, 1) != 0) {
        return -1;
    }
    return strcmp(tc, "grandchild") ? 0 : passive_serve(ch, 3);
}

int main(int argc, char **argv)
{
    static const char *const cases[] = {
        "child-connects", "child-listens", "child-sync", "grandchild",
        "parent-relisten", NULL
    };
    const char *tc = (argc == 3) ? argv[1] : "";
    struct rdma_event_channel *ch;
    struct rdma_cm_id *lid;
    int port, ret, up[2], down[2], i;
    pid_t pid;

    for (i = 0; (cases[i] != NULL) && strcmp(cases[i], tc); i++) {
    }
    if (cases[i] == NULL) {
        fprintf(stderr, "usage: %s child-connects|child-listens|child-sync|"
                "grandchild|parent-relisten PORT\n", argv[0]);
        return 2;
    }
    port = atoi(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    /* the parent's CM at work before the fork: a channel, a listener */
    ch = rdma_create_event_channel();
    if ((ch == NULL) || ((lid = listen_on(ch, port)) == NULL)) {
        fail("no listener before the fork");
        return 1;
    }
    if ((pipe(up) != 0) || (pipe(down) != 0)) {
        fail("pipe: %m");
        return 1;
    }
    pid = fork();
    if (pid < 0) {
        fail("fork: %m");
        return 1;
    } else if (pid == 0) {
        close(up[0]);
        close(down[1]);
        exit(child_main(tc, port, up[1], down[0]) ? 1 : 0);
    }
    close(up[1]);
    close(down[0]);
    ret = parent_main(tc, port, ch, &lid, up[0], down[1]);
    if (reap(pid) != 0) {
        fail("the child failed");
        ret = -1;
    }
    if (lid != NULL) {
        rdma_destroy_id(lid);
    }
    rdma_destroy_event_channel(ch);
    if (ret != 0) {
        printf("FAIL: %s\n", tc);
        return 1;
    }
    printf("PASS: %s: %d-byte messages checked both ways\n", tc, MSG_LEN);
    return 0;
}
