/*
 * softverbs conformance: librdmacm ids, binding, the QP an id gets
 * (rdma_create_qp(3)) and the event channel (rdma_create_event_channel(3)),
 * with the helpers of softverbs_conformance_cm.h. Connections are in
 * softverbs_conformance_cm_conn.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance_cm.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */

struct rdma_event_channel *svt_cm_channel(void)
{
    struct rdma_event_channel *ch;
    int fl;

    SVT_NN(ch, rdma_create_event_channel());
    fl = fcntl(ch->fd, F_GETFL);
    SVT_CHECK((fl >= 0) && (fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0),
              "cannot make the event channel fd non-blocking (errno %d)",
              errno);
    return ch;
}

struct rdma_cm_event *svt_cm_next(struct rdma_event_channel *ch, int ms)
{
    double deadline = svt_now_ms() + ms;
    struct rdma_cm_event *ev;
    int left;

    for (;;) {
        if (rdma_get_cm_event(ch, &ev) == 0) {
            return ev;
        }
        SVT_CHECK((errno == EAGAIN) || (errno == EINTR), "rdma_get_cm_event "
                  "on a non-blocking channel: errno %d, expected EAGAIN",
                  errno);
        left = (int)(deadline - svt_now_ms());
        if (left <= 0) {
            return NULL;
        }
        svt_wait_fd(ch->fd, left);
    }
}

void svt_cm_expect(struct rdma_event_channel *ch,
                   enum rdma_cm_event_type type, int status,
                   struct rdma_cm_event **out)
{
    struct rdma_cm_event *ev = svt_cm_next(ch, SVT_CM_EV_MS);

    SVT_CHECK(ev != NULL, "no CM event within %d ms, expected %s",
              SVT_CM_EV_MS, rdma_event_str(type));
    SVT_CHECK(ev->event == type, "CM event %s (status %d), expected %s",
              rdma_event_str(ev->event), ev->status, rdma_event_str(type));
    SVT_CHECK(ev->status == status, "%s with status %d, expected %d",
              rdma_event_str(type), ev->status, status);
    if (out != NULL) {
        *out = ev;
    } else {
        SVT_OK(rdma_ack_cm_event(ev));
    }
}

void svt_cm_expect_none(struct rdma_event_channel *ch, int ms)
{
    struct rdma_cm_event *ev = svt_cm_next(ch, ms);

    SVT_CHECK(ev == NULL, "unexpected CM event %s (status %d)",
              rdma_event_str(ev->event), ev->status);
}

void svt_cm_loopback(struct sockaddr_in *sin, uint16_t port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static struct rdma_cm_id *svt_cm_id_new(struct rdma_event_channel *ch,
                                        enum rdma_port_space ps)
{
    struct rdma_cm_id *id;

    SVT_OK(rdma_create_id(ch, &id, NULL, ps));
    return id;
}

struct rdma_cm_id *svt_cm_bound_id(struct rdma_event_channel *ch,
                                   enum rdma_port_space ps, uint16_t port)
{
    struct rdma_cm_id *id = svt_cm_id_new(ch, ps);
    struct sockaddr_in sin;

    svt_cm_loopback(&sin, port);
    SVT_OK(rdma_bind_addr(id, (struct sockaddr *)&sin));
    return id;
}

struct rdma_cm_id *svt_cm_resolved_id(struct rdma_event_channel *ch,
                                      enum rdma_port_space ps,
                                      uint16_t port)
{
    struct rdma_cm_id *id = svt_cm_id_new(ch, ps);
    struct sockaddr_in dst;

    svt_cm_loopback(&dst, port);
    SVT_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
    svt_cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
    SVT_OK(rdma_resolve_route(id, 2000));
    svt_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
    return id;
}

void svt_cm_qp_attr(struct ibv_qp_init_attr *a, enum ibv_qp_type type)
{
    memset(a, 0, sizeof(*a));
    a->qp_type          = type;
    a->cap.max_send_wr  = 16;
    a->cap.max_recv_wr  = 16;
    a->cap.max_send_sge = 1;
    a->cap.max_recv_sge = 1;
}

typedef int (*svt_cm_stats_fn_t)(uint32_t pid, struct softverbs_stats *st);

void svt_cm_stats(struct softverbs_stats *st)
{
    svt_cm_stats_fn_t fn;

    fn = (svt_cm_stats_fn_t)dlvsym(RTLD_DEFAULT, "softverbs_get_stats",
                                   "SOFTVERBS_1.1");
    SVT_CHECK(fn != NULL, "softverbs_get_stats@SOFTVERBS_1.1 not exported");
    memset(st, 0xa5, sizeof(*st));
    SVT_OK(fn((uint32_t)getpid(), st));
}

static void svt_cm_expect_objs(uint32_t qps, uint32_t cqs, const char *when)
{
    struct softverbs_stats st;

    svt_cm_stats(&st);
    SVT_CHECK((st.num_qp == qps) && (st.num_cq == cqs), "%s: this process "
              "owns %u QPs and %u CQs, expected %u and %u", when, st.num_qp,
              st.num_cq, qps, cqs);
}

void svt_cm_listen_xchg(svt_proc_t *p, svt_cm_t *cm)
{
    memset(cm, 0, sizeof(*cm));
    cm->ch = svt_cm_channel();
    if (p->rank == 1) {
        cm->listen = svt_cm_bound_id(cm->ch, RDMA_PS_TCP, 0);
        SVT_OK(rdma_listen(cm->listen, 8));
        cm->port = ntohs(rdma_get_src_port(cm->listen));
        SVT_CHECK(cm->port != 0, "listener bound to port 0");
        svt_msg_send(p, 0, &cm->port, sizeof(cm->port));
    } else {
        svt_msg_recv(p, 1, &cm->port, sizeof(cm->port));
    }
}

void svt_cm_wait_request(svt_cm_t *cm)
{
    struct rdma_cm_event *ev;

    svt_cm_expect(cm->ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &ev);
    SVT_CHECK(ev->listen_id == cm->listen, "CONNECT_REQUEST: listen_id %p, "
              "expected the listener %p", (void *)ev->listen_id,
              (void *)cm->listen);
    SVT_CHECK((ev->id != NULL) && (ev->id != cm->listen),
              "CONNECT_REQUEST without a new id");
    cm->id       = ev->id;
    cm->priv_len = ev->param.conn.private_data_len;
    SVT_CHECK((cm->priv_len == 0) ||
              (ev->param.conn.private_data != NULL),
              "private_data_len %u with a NULL private_data", cm->priv_len);
    memcpy(cm->priv, ev->param.conn.private_data, cm->priv_len);
    SVT_OK(rdma_ack_cm_event(ev));
}

void svt_cm_close(svt_cm_t *cm)
{
    if (cm->id != NULL) {
        rdma_destroy_qp(cm->id);
        SVT_OK(rdma_destroy_id(cm->id));
    }
    if (cm->listen != NULL) {
        SVT_OK(rdma_destroy_id(cm->listen));
    }
    rdma_destroy_event_channel(cm->ch);
    memset(cm, 0, sizeof(*cm));
}

void svt_cm_wait_comp(struct ibv_cq *cq, struct ibv_comp_channel *chan,
                      struct ibv_wc *wc, int ms)
{
    double deadline = svt_now_ms() + ms;
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    int n, left;

    for (;;) {
        n = ibv_poll_cq(cq, 1, wc);
        SVT_CHECK(n >= 0, "ibv_poll_cq returned %d", n);
        if (n == 1) {
            return;
        }
        SVT_OK(ibv_req_notify_cq(cq, 0));
        n = ibv_poll_cq(cq, 1, wc);
        SVT_CHECK(n >= 0, "ibv_poll_cq returned %d", n);
        if (n == 1) {
            return;
        }
        left = (int)(deadline - svt_now_ms());
        SVT_CHECK((left > 0) && svt_wait_fd(chan->fd, left), "no completion "
                  "event on the CQ's completion channel within %d ms", ms);
        SVT_OK(ibv_get_cq_event(chan, &ev_cq, &ev_ctx));
        SVT_CHECK(ev_cq == cq, "completion event of CQ %p, expected %p",
                  (void *)ev_cq, (void *)cq);
        ibv_ack_cq_events(ev_cq, 1);
    }
}

static int svt_fd_closed(int fd)
{
    return (fcntl(fd, F_GETFD) < 0) && (errno == EBADF);
}

/* ---------------------------------------------------------------------
 * rdma_create_qp(3)
 * ------------------------------------------------------------------- */

/* An id that is not bound to a device has no QP to give: error, with or
 * without a PD */
static void svt_case_cm_qp_unbound(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_id_new(ch, RDMA_PS_TCP);
    struct ibv_qp_init_attr a;
    svt_dev_t dev;
    int ret;

    (void)p;
    SVT_CHECK(id->verbs == NULL, "a new id has a device");
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    errno = 0;
    ret   = rdma_create_qp(id, NULL, &a);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_create_qp on an "
              "unbound id: %d (errno %d), expected -1 EINVAL", ret, errno);
    SVT_CHECK(id->qp == NULL, "unbound id got a QP");
    svt_dev_open(&dev);
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    errno = 0;
    ret   = rdma_create_qp(id, dev.pd, &a);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_create_qp on an "
              "unbound id with a PD: %d (errno %d), expected -1 EINVAL", ret,
              errno);
    SVT_CHECK(id->qp == NULL, "unbound id got a QP");
    svt_cm_expect_objs(0, 0, "after the failed creations");
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
    svt_dev_close(&dev);
}

/* A PD of another context (the same device opened again by the
 * application: softverbs' CM, like rdma-core's, has contexts of its own)
 * and of another device: EINVAL, nothing created */
static void svt_case_cm_qp_other_pd(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct ibv_qp_init_attr_ex ax;
    struct ibv_qp_init_attr a;
    svt_dev_t same, other;
    int ret;

    (void)p;
    SVT_CHECK((id->verbs != NULL) && (id->pd != NULL), "bound id: verbs %p "
              "pd %p", (void *)id->verbs, (void *)id->pd);
    svt_dev_open_name(&same, ibv_get_device_name(id->verbs->device));
    svt_dev_open_name(&other, "softverbs1");
    SVT_CHECK(same.ctx != id->verbs, "ibv_open_device gave the CM's context");
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    errno = 0;
    ret   = rdma_create_qp(id, same.pd, &a);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "PD of another context of "
              "the same device: %d (errno %d), expected -1 EINVAL", ret,
              errno);
    SVT_CHECK(id->qp == NULL, "id got a QP");
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    errno = 0;
    ret   = rdma_create_qp(id, other.pd, &a);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "PD of another device: %d "
              "(errno %d), expected -1 EINVAL", ret, errno);
    SVT_CHECK(id->qp == NULL, "id got a QP");
    memset(&ax, 0, sizeof(ax));
    memcpy(&ax, &a, sizeof(a));
    ax.comp_mask = IBV_QP_INIT_ATTR_PD;
    ax.pd        = other.pd;
    errno = 0;
    ret   = rdma_create_qp_ex(id, &ax);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_create_qp_ex with a PD "
              "of another device: %d (errno %d), expected -1 EINVAL", ret,
              errno);
    SVT_CHECK((id->qp == NULL) && (id->send_cq == NULL) &&
              (id->recv_cq == NULL), "id got a QP or CQs");
    svt_cm_expect_objs(0, 0, "after the refused creations");
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
    svt_dev_close(&same);
    svt_dev_close(&other);
}

/* NULL PD: the id's device's default PD (id->pd); a PD allocated on the
 * id's own context is taken as given */
static void svt_case_cm_qp_default_pd(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct rdma_cm_id *id2 = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct ibv_qp_init_attr a;
    struct ibv_pd *pd;

    (void)p;
    SVT_CHECK(id->pd != NULL, "a bound id has no PD");
    SVT_CHECK(id->pd->context == id->verbs, "id->pd is of context %p, the "
              "id's is %p", (void *)id->pd->context, (void *)id->verbs);
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    SVT_OK(rdma_create_qp(id, NULL, &a));
    SVT_CHECK(id->qp != NULL, "no id->qp");
    SVT_CHECK((id->qp->pd == id->pd) && (id->pd != NULL), "qp->pd %p, "
              "id->pd %p", (void *)id->qp->pd, (void *)id->pd);
    SVT_CHECK(id->qp->context == id->verbs, "QP of another context");
    SVT_NN(pd, ibv_alloc_pd(id2->verbs));
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    SVT_OK(rdma_create_qp(id2, pd, &a));
    SVT_CHECK(id2->qp->pd == pd, "qp->pd %p, the PD given %p",
              (void *)id2->qp->pd, (void *)pd);
    rdma_destroy_qp(id2);
    rdma_destroy_qp(id);
    SVT_OK(ibv_dealloc_pd(pd));
    SVT_OK(rdma_destroy_id(id2));
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
}

/* One QP per id: a second rdma_create_qp fails and leaves the first (and
 * creates no CQ) */
static void svt_case_cm_qp_twice(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct ibv_qp_init_attr a;
    struct ibv_qp *qp;
    int ret;

    (void)p;
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    SVT_OK(rdma_create_qp(id, NULL, &a));
    qp = id->qp;
    svt_cm_expect_objs(1, 2, "after rdma_create_qp");
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    errno = 0;
    ret   = rdma_create_qp(id, NULL, &a);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "second rdma_create_qp: %d "
              "(errno %d), expected -1 EINVAL", ret, errno);
    SVT_CHECK(id->qp == qp, "id->qp changed to %p", (void *)id->qp);
    SVT_CHECK(svt_qp_state(qp) == IBV_QPS_INIT, "first QP in state %d",
              svt_qp_state(qp));
    svt_cm_expect_objs(1, 2, "after the second rdma_create_qp");
    rdma_destroy_qp(id);
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
}

/* Check the CQs and channels the CM made for id (send and receive) */
static void svt_cm_check_cm_cqs(struct rdma_cm_id *id, uint32_t send_wr,
                                uint32_t recv_wr, int *fds)
{
    SVT_CHECK((id->send_cq != NULL) && (id->recv_cq != NULL), "CM CQs: "
              "send %p recv %p", (void *)id->send_cq, (void *)id->recv_cq);
    SVT_CHECK((id->send_cq_channel != NULL) && (id->recv_cq_channel != NULL),
              "CM completion channels: send %p recv %p",
              (void *)id->send_cq_channel, (void *)id->recv_cq_channel);
    SVT_CHECK((id->qp->send_cq == id->send_cq) &&
              (id->qp->recv_cq == id->recv_cq), "the QP's CQs %p/%p are not "
              "id->send_cq/recv_cq %p/%p", (void *)id->qp->send_cq,
              (void *)id->qp->recv_cq, (void *)id->send_cq,
              (void *)id->recv_cq);
    SVT_CHECK((id->send_cq->channel == id->send_cq_channel) &&
              (id->recv_cq->channel == id->recv_cq_channel), "a CM CQ is not "
              "on its completion channel");
    /* rdma_verbs.h's rdma_get_*_comp rely on the CQ's context being the id */
    SVT_CHECK((id->send_cq->cq_context == id) &&
              (id->recv_cq->cq_context == id), "CM CQ context %p/%p, not the "
              "id %p", id->send_cq->cq_context, id->recv_cq->cq_context,
              (void *)id);
    /* as deep as the queues asked for (rdma-core sizes them so too) */
    SVT_CHECK(((uint32_t)id->send_cq->cqe >= send_wr) &&
              ((uint32_t)id->recv_cq->cqe >= recv_wr), "CM CQs of %d/%d "
              "entries for queues of %u/%u work requests", id->send_cq->cqe,
              id->recv_cq->cqe, send_wr, recv_wr);
    fds[0] = id->send_cq_channel->fd;
    fds[1] = id->recv_cq_channel->fd;
}

/* NULL CQs: the CM creates them with completion channels, exposed in the
 * id; rdma_destroy_qp, and rdma_destroy_ep for an endpoint, free them */
static void svt_case_cm_qp_cm_cqs(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_TCP, 0), *ep;
    struct rdma_addrinfo hints, *res;
    struct ibv_qp_init_attr a;
    int fds[2];

    (void)p;
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    a.cap.max_send_wr = 8;
    a.cap.max_recv_wr = 24;
    SVT_OK(rdma_create_qp(id, NULL, &a));
    svt_cm_check_cm_cqs(id, 8, 24, fds);
    SVT_CHECK(fds[0] != fds[1], "send and receive completion channels share "
              "fd %d", fds[0]);
    svt_cm_expect_objs(1, 2, "after rdma_create_qp with NULL CQs");
    rdma_destroy_qp(id);
    SVT_CHECK(id->qp == NULL, "id->qp still set after rdma_destroy_qp");
    svt_cm_expect_objs(0, 0, "after rdma_destroy_qp");
    SVT_CHECK(svt_fd_closed(fds[0]) && svt_fd_closed(fds[1]), "completion "
              "channel fds %d/%d still open after rdma_destroy_qp", fds[0],
              fds[1]);
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);

    /* an endpoint: rdma_destroy_ep frees the QP and the CM's CQs */
    memset(&hints, 0, sizeof(hints));
    hints.ai_port_space = RDMA_PS_TCP;
    hints.ai_flags      = RAI_NUMERICHOST;
    SVT_OK(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res));
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    SVT_OK(rdma_create_ep(&ep, res, NULL, &a));
    rdma_freeaddrinfo(res);
    SVT_CHECK(ep->qp != NULL, "rdma_create_ep with QP attributes: no QP");
    svt_cm_check_cm_cqs(ep, 16, 16, fds);
    svt_cm_expect_objs(1, 2, "after rdma_create_ep");
    rdma_destroy_ep(ep);
    svt_cm_expect_objs(0, 0, "after rdma_destroy_ep");
    SVT_CHECK(svt_fd_closed(fds[0]) && svt_fd_closed(fds[1]), "completion "
              "channel fds %d/%d still open after rdma_destroy_ep", fds[0],
              fds[1]);
}

static void svt_cm_check_caps(struct ibv_qp *qp, const struct ibv_qp_cap *c,
                              const char *what)
{
    struct ibv_qp_init_attr qi;
    struct ibv_qp_attr qa;

    memset(&qa, 0, sizeof(qa));
    memset(&qi, 0, sizeof(qi));
    SVT_OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
    SVT_CHECK(!memcmp(&qi.cap, c, sizeof(*c)) &&
              !memcmp(&qa.cap, c, sizeof(*c)), "%s: caps written back "
              "wr %u/%u sge %u/%u inline %u, ibv_query_qp gives wr %u/%u "
              "sge %u/%u inline %u", what, c->max_send_wr, c->max_recv_wr,
              c->max_send_sge, c->max_recv_sge, c->max_inline_data,
              qi.cap.max_send_wr, qi.cap.max_recv_wr, qi.cap.max_send_sge,
              qi.cap.max_recv_sge, qi.cap.max_inline_data);
}

/* The caps granted are written back to the init attributes and are what
 * ibv_query_qp says. Above the device's limits: lowered to them
 * (SOFTVERBS_CAP_POLICY=clamp; arg 0) or EINVAL with nothing
 * left behind (=fail; arg 1). Small values: at least what was asked */
static void svt_case_cm_qp_caps(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct rdma_cm_id *id2 = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct ibv_device_attr da;
    struct ibv_qp_init_attr a;
    int ret;

    SVT_OK(ibv_query_device(id->verbs, &da));
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    a.cap.max_send_wr  = (uint32_t)da.max_qp_wr + 100;
    a.cap.max_recv_wr  = (uint32_t)da.max_qp_wr + 1;
    a.cap.max_send_sge = (uint32_t)da.max_sge + 3;
    a.cap.max_recv_sge = (uint32_t)da.max_sge + 1;
    errno = 0;
    ret   = rdma_create_qp(id, NULL, &a);
    if (p->arg == 0) {
        SVT_CHECK(ret == 0, "caps above the limits with the clamp policy: "
                  "%d (errno %d)", ret, errno);
        SVT_CHECK((a.cap.max_send_wr == (uint32_t)da.max_qp_wr) &&
                  (a.cap.max_recv_wr == (uint32_t)da.max_qp_wr) &&
                  (a.cap.max_send_sge == (uint32_t)da.max_sge) &&
                  (a.cap.max_recv_sge == (uint32_t)da.max_sge),
                  "clamped caps wr %u/%u sge %u/%u, the device's limits "
                  "wr %d sge %d", a.cap.max_send_wr, a.cap.max_recv_wr,
                  a.cap.max_send_sge, a.cap.max_recv_sge, da.max_qp_wr,
                  da.max_sge);
        svt_cm_check_caps(id->qp, &a.cap, "clamped");
        rdma_destroy_qp(id);
    } else {
        SVT_CHECK((ret == -1) && (errno == EINVAL), "caps above the limits "
                  "with the fail policy: %d (errno %d), expected -1 EINVAL",
                  ret, errno);
        SVT_CHECK((id->qp == NULL) && (id->send_cq == NULL) &&
                  (id->recv_cq == NULL) && (id->send_cq_channel == NULL),
                  "refused creation left a QP, CQ or channel in the id");
        svt_cm_expect_objs(0, 0, "after the refused creation");
    }
    svt_cm_qp_attr(&a, IBV_QPT_RC);
    a.cap.max_send_wr     = 1;
    a.cap.max_recv_wr     = 1;
    a.cap.max_inline_data = 16;
    SVT_OK(rdma_create_qp(id2, NULL, &a));
    SVT_CHECK((a.cap.max_send_wr >= 1) && (a.cap.max_recv_wr >= 1) &&
              (a.cap.max_send_sge >= 1) && (a.cap.max_recv_sge >= 1) &&
              (a.cap.max_inline_data >= 16) &&
              (a.cap.max_send_wr <= (uint32_t)da.max_qp_wr) &&
              (a.cap.max_send_sge <= (uint32_t)da.max_sge), "small caps "
              "granted wr %u/%u sge %u/%u inline %u", a.cap.max_send_wr,
              a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge,
              a.cap.max_inline_data);
    svt_cm_check_caps(id2->qp, &a.cap, "small");
    rdma_destroy_qp(id2);
    SVT_OK(rdma_destroy_id(id2));
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
}

/* A UD id's QP is ready to send at once (RTS, the CM's Q_Key): a datagram
 * to itself arrives */
static void svt_case_cm_qp_state_ud(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *id = svt_cm_bound_id(ch, RDMA_PS_UDP, 0);
    struct ibv_qp_init_attr a, qi;
    struct ibv_port_attr pa;
    struct ibv_ah_attr aha;
    struct ibv_qp_attr qa;
    struct ibv_send_wr wr, *bad_s;
    struct ibv_recv_wr rwr, *bad_r;
    struct ibv_sge sge;
    struct ibv_wc wc;
    struct ibv_mr *mr;
    struct ibv_ah *ah;
    static uint8_t buf[4096];

    (void)p;
    SVT_CHECK(id->qp_type == IBV_QPT_UD, "RDMA_PS_UDP id of QP type %d",
              id->qp_type);
    svt_cm_qp_attr(&a, IBV_QPT_UD);
    SVT_OK(rdma_create_qp(id, NULL, &a));
    memset(&qa, 0, sizeof(qa));
    SVT_OK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &qi));
    SVT_CHECK(qa.qp_state == IBV_QPS_RTS, "UD QP in state %d after "
              "rdma_create_qp, expected RTS", qa.qp_state);
    SVT_CHECK(qa.qkey == SVT_CM_UDP_QKEY, "UD QP Q_Key 0x%x, expected 0x%x",
              qa.qkey, SVT_CM_UDP_QKEY);

    SVT_NN(mr, ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    SVT_OK(ibv_query_port(id->verbs, id->port_num, &pa));
    memset(&aha, 0, sizeof(aha));
    aha.dlid     = pa.lid;
    aha.port_num = id->port_num;
    SVT_NN(ah, ibv_create_ah(id->pd, &aha));
    sge.addr   = (uintptr_t)buf + 1024;
    sge.length = SVT_GRH_LEN + 100;
    sge.lkey   = mr->lkey;
    memset(&rwr, 0, sizeof(rwr));
    rwr.wr_id   = 7;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    SVT_OK(ibv_post_recv(id->qp, &rwr, &bad_r));
    svt_fill(buf, 100, 9);
    sge.addr   = (uintptr_t)buf;
    sge.length = 100;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id             = 8;
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = IBV_WR_SEND;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = id->qp->qp_num;
    wr.wr.ud.remote_qkey = SVT_CM_UDP_QKEY;
    SVT_OK(ibv_post_send(id->qp, &wr, &bad_s));
    svt_cm_wait_comp(id->send_cq, id->send_cq_channel, &wc, SVT_WC_TIMEOUT_MS);
    SVT_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == 8), "send wc "
              "status %s wr_id %llu", ibv_wc_status_str(wc.status),
              (unsigned long long)wc.wr_id);
    svt_cm_wait_comp(id->recv_cq, id->recv_cq_channel, &wc, SVT_WC_TIMEOUT_MS);
    SVT_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == 7) &&
              (wc.byte_len == SVT_GRH_LEN + 100), "recv wc status %s wr_id "
              "%llu byte_len %u", ibv_wc_status_str(wc.status),
              (unsigned long long)wc.wr_id, wc.byte_len);
    svt_pattern_check(buf + 1024 + SVT_GRH_LEN, 100, 9, "UD datagram");
    SVT_OK(ibv_destroy_ah(ah));
    rdma_destroy_qp(id);
    SVT_OK(ibv_dereg_mr(mr));
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(ch);
}

/* ---------------------------------------------------------------------
 * rdma_bind_addr(3)
 * ------------------------------------------------------------------- */

static int svt_cm_try_bind(struct rdma_cm_id *id, uint16_t port)
{
    struct sockaddr_in sin;

    svt_cm_loopback(&sin, port);
    errno = 0;
    return rdma_bind_addr(id, (struct sockaddr *)&sin);
}

/* A (port space, address, port) held by an id, in this process or in
 * another: EADDRINUSE; free again once that id is destroyed; the same
 * port in another port space is another address */
static void svt_case_cm_bind_in_use(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *a = NULL, *b, *u;
    uint16_t port;
    int ret;

    b = svt_cm_id_new(ch, RDMA_PS_TCP);
    if (p->rank == 0) {
        a    = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
        port = ntohs(rdma_get_src_port(a));
        svt_msg_send(p, 1, &port, sizeof(port));
    } else {
        svt_msg_recv(p, 0, &port, sizeof(port));
    }
    ret = svt_cm_try_bind(b, port);
    SVT_CHECK((ret == -1) && (errno == EADDRINUSE), "rank %d: bind to "
              "127.0.0.1:%u, held by rank 0: %d (errno %d), expected -1 "
              "EADDRINUSE", p->rank, port, ret, errno);
    u = svt_cm_id_new(ch, RDMA_PS_UDP);
    if (p->rank == 1) {
        SVT_CHECK(svt_cm_try_bind(u, port) == 0, "RDMA_PS_UDP bind to the "
                  "port a RDMA_PS_TCP id holds: errno %d", errno);
    }
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        SVT_OK(rdma_destroy_id(a));
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        SVT_CHECK(svt_cm_try_bind(b, port) == 0, "bind to 127.0.0.1:%u after "
                  "its holder was destroyed: errno %d", port, errno);
        SVT_CHECK(ntohs(rdma_get_src_port(b)) == port, "bound to port %u",
                  ntohs(rdma_get_src_port(b)));
    }
    svt_sync(p, !p->rank);
    SVT_OK(rdma_destroy_id(u));
    SVT_OK(rdma_destroy_id(b));
    rdma_destroy_event_channel(ch);
}

static int svt_cm_try_bind_ip(struct rdma_cm_id *id, uint32_t ip,
                              uint16_t port)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons(port);
    sin.sin_addr.s_addr = htonl(ip);
    errno = 0;
    return rdma_bind_addr(id, (struct sockaddr *)&sin);
}

#define SVT_CM_BIND_FAILS(_id, _ip, _port, _errno, _what) \
    do { \
        int _r = svt_cm_try_bind_ip(_id, _ip, _port); \
        SVT_CHECK((_r == -1) && (errno == (_errno)), "rank %d: %s: %d " \
                  "(errno %d), expected -1 %s", p->rank, _what, _r, errno, \
                  #_errno); \
    } while (0)

/* The kernel's CM keeps one list of owners per (port space, port), whatever
 * their addresses (cma.c, cma_check_port): a wildcard and a specific
 * address of one port overlap, both ways, in one process as in two:
 * EADDRNOTAVAIL (two wildcards too); two specific addresses coexist unless
 * they are the same (EADDRINUSE) */
static void svt_case_cm_bind_overlap(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *w = NULL, *s = NULL, *o = NULL, *x;
    uint16_t port;

    SVT_OK(rdma_create_id(ch, &x, NULL, RDMA_PS_TCP));
    if (p->rank == 0) {
        SVT_OK(rdma_create_id(ch, &w, NULL, RDMA_PS_TCP));
        SVT_OK(svt_cm_try_bind_ip(w, INADDR_ANY, 0));
        port = ntohs(rdma_get_src_port(w));
        svt_msg_send(p, 1, &port, sizeof(port));
    } else {
        svt_msg_recv(p, 0, &port, sizeof(port));
    }
    /* 0.0.0.0:port is held (by rank 0) */
    SVT_CM_BIND_FAILS(x, INADDR_LOOPBACK, port, EADDRNOTAVAIL,
                      "127.0.0.1 with the wildcard of its port held");
    SVT_CM_BIND_FAILS(x, INADDR_ANY, port, EADDRNOTAVAIL,
                      "the wildcard with the wildcard of its port held");
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        SVT_OK(rdma_destroy_id(w));
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        SVT_OK(rdma_create_id(ch, &s, NULL, RDMA_PS_TCP));
        SVT_CHECK(svt_cm_try_bind_ip(s, INADDR_LOOPBACK, port) == 0,
                  "127.0.0.1:%u once the wildcard's holder was destroyed: "
                  "errno %d", port, errno);
    }
    svt_sync(p, !p->rank);
    /* 127.0.0.1:port is held (by rank 1) */
    SVT_CM_BIND_FAILS(x, INADDR_ANY, port, EADDRNOTAVAIL,
                      "the wildcard with 127.0.0.1 of its port held");
    SVT_CM_BIND_FAILS(x, INADDR_LOOPBACK, port, EADDRINUSE,
                      "127.0.0.1 held");
    if (p->rank == 0) {
        SVT_OK(rdma_create_id(ch, &o, NULL, RDMA_PS_TCP));
        SVT_CHECK(svt_cm_try_bind_ip(o, INADDR_LOOPBACK + 1, port) == 0,
                  "127.0.0.2:%u with 127.0.0.1 of its port held: errno %d",
                  port, errno);
        SVT_CM_BIND_FAILS(x, INADDR_ANY, port, EADDRNOTAVAIL,
                          "the wildcard with two addresses of its port held");
    }
    svt_sync(p, !p->rank);
    if (o != NULL) {
        SVT_OK(rdma_destroy_id(o));
    }
    if (s != NULL) {
        SVT_OK(rdma_destroy_id(s));
    }
    SVT_OK(rdma_destroy_id(x));
    rdma_destroy_event_channel(ch);
}

static int svt_cm_reuse(struct rdma_cm_id *id, int on, size_t len)
{
    errno = 0;
    return rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &on,
                           len);
}

static struct rdma_cm_id *svt_cm_reusable_id(struct rdma_event_channel *ch)
{
    struct rdma_cm_id *id;

    SVT_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
    SVT_OK(svt_cm_reuse(id, 1, sizeof(int)));
    return id;
}

/* RDMA_OPTION_ID_REUSEADDR (an int; ucma_set_option_id, rdma_set_reuseaddr,
 * cma_check_port, rdma_listen): ids that both set it share a port, even
 * its address, across processes; an id without it still conflicts with
 * them; it can be set on a bound id, not cleared; rdma_listen checks the
 * id as if it were not reusable (EADDRINUSE while a reusable id shares
 * its address) and makes it unique: no longer reusable, the option EINVAL */
static void svt_case_cm_bind_reuseaddr(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *a = NULL, *b = NULL, *c = NULL, *e, *f;
    uint16_t port;
    int ret;

    if (p->rank == 0) {
        SVT_OK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP));
        ret = svt_cm_reuse(a, 1, 1);
        SVT_CHECK((ret == -1) && (errno == EINVAL), "REUSEADDR with an "
                  "optlen of 1: %d (errno %d), expected -1 EINVAL", ret,
                  errno);
        SVT_OK(svt_cm_reuse(a, 1, sizeof(int)));
        SVT_OK(svt_cm_try_bind_ip(a, INADDR_LOOPBACK, 0));
        port = ntohs(rdma_get_src_port(a));
        svt_msg_send(p, 1, &port, sizeof(port));
    } else {
        svt_msg_recv(p, 0, &port, sizeof(port));
        b = svt_cm_reusable_id(ch);
        SVT_CHECK(svt_cm_try_bind_ip(b, INADDR_LOOPBACK, port) == 0,
                  "reusable id to 127.0.0.1:%u, held by a reusable id: "
                  "errno %d", port, errno);
        SVT_OK(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP));
        SVT_CM_BIND_FAILS(c, INADDR_LOOPBACK, port, EADDRINUSE,
                          "plain id to 127.0.0.1 held by reusable ids");
        SVT_CM_BIND_FAILS(c, INADDR_ANY, port, EADDRNOTAVAIL,
                          "plain id to the wildcard of a port reusable ids "
                          "hold");
        e = svt_cm_reusable_id(ch);
        SVT_CHECK(svt_cm_try_bind_ip(e, INADDR_ANY, port) == 0,
                  "reusable id to 0.0.0.0:%u, 127.0.0.1 held by reusable "
                  "ids: errno %d", port, errno);
        ret = svt_cm_reuse(b, 0, sizeof(int));
        SVT_CHECK((ret == -1) && (errno == EINVAL), "clearing REUSEADDR of "
                  "a bound id: %d (errno %d), expected -1 EINVAL", ret,
                  errno);
        SVT_OK(rdma_destroy_id(e));
    }
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        /* b (rank 1) shares 127.0.0.1:port */
        errno = 0;
        ret   = rdma_listen(a, 4);
        SVT_CHECK((ret == -1) && (errno == EADDRINUSE), "rdma_listen of a "
                  "reusable id while another shares its address: %d "
                  "(errno %d), expected -1 EADDRINUSE", ret, errno);
    }
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        SVT_OK(rdma_destroy_id(b));
    }
    svt_sync(p, !p->rank);
    if (p->rank == 0) {
        SVT_OK(rdma_listen(a, 4));
        ret = svt_cm_reuse(a, 1, sizeof(int));
        SVT_CHECK((ret == -1) && (errno == EINVAL), "REUSEADDR on a "
                  "listener: %d (errno %d), expected -1 EINVAL", ret, errno);
    }
    svt_sync(p, !p->rank);
    f = svt_cm_reusable_id(ch);
    SVT_CM_BIND_FAILS(f, INADDR_LOOPBACK, port, EADDRINUSE,
                      "reusable id to the address of a listener that was "
                      "reusable");
    svt_sync(p, !p->rank);
    SVT_OK(rdma_destroy_id(f));
    if (c != NULL) {
        SVT_OK(rdma_destroy_id(c));
    }
    if (a != NULL) {
        SVT_OK(rdma_destroy_id(a));
    }
    rdma_destroy_event_channel(ch);
}

/* Port 0: a free port is assigned (rdma_get_src_port, the local address),
 * each id its own, and it can be listened on and reached */
static void svt_case_cm_bind_port_zero(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct rdma_cm_id *a = svt_cm_bound_id(ch, RDMA_PS_TCP, 0);
    struct rdma_cm_id *b = svt_cm_bound_id(ch, RDMA_PS_TCP, 0), *c, *child;
    struct rdma_conn_param cp;
    struct sockaddr_in *sin;
    struct rdma_cm_event *ev;
    uint16_t pa = ntohs(rdma_get_src_port(a));
    uint16_t pb = ntohs(rdma_get_src_port(b));

    (void)p;
    SVT_CHECK((pa != 0) && (pb != 0), "port 0 bound as port %u / %u", pa, pb);
    SVT_CHECK(pa != pb, "two ids bound to port 0 both got port %u", pa);
    sin = (struct sockaddr_in *)rdma_get_local_addr(a);
    SVT_CHECK((sin->sin_family == AF_INET) && (ntohs(sin->sin_port) == pa),
              "local address family %d port %u, rdma_get_src_port %u",
              sin->sin_family, ntohs(sin->sin_port), pa);
    SVT_OK(rdma_listen(a, 4));
    c = svt_cm_resolved_id(ch, RDMA_PS_TCP, pa);
    memset(&cp, 0, sizeof(cp)); /* no QP: a param (ucma_valid_param) */
    SVT_OK(rdma_connect(c, &cp));
    svt_cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &ev);
    SVT_CHECK(ev->listen_id == a, "CONNECT_REQUEST for listener %p, expected "
              "%p", (void *)ev->listen_id, (void *)a);
    SVT_OK(rdma_reject(ev->id, NULL, 0));
    /* man rdma_destroy_id: the id's events are acknowledged first (the
     * kernel's librdmacm waits for them) */
    child = ev->id;
    SVT_OK(rdma_ack_cm_event(ev));
    SVT_OK(rdma_destroy_id(child));
    svt_cm_expect(ch, RDMA_CM_EVENT_REJECTED, SVT_CM_REJ_CONSUMER, NULL);
    SVT_OK(rdma_destroy_id(c));
    SVT_OK(rdma_destroy_id(b));
    SVT_OK(rdma_destroy_id(a));
    rdma_destroy_event_channel(ch);
}

/* man rdma_migrate_id: the id moves with its events, those reported on
 * the old channel and not yet got included (the kernel moves them); the
 * old channel's fd stops being readable */
static void svt_case_cm_migrate_events(svt_proc_t *p)
{
    struct rdma_event_channel *from = svt_cm_channel();
    struct rdma_event_channel *to   = svt_cm_channel();
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    struct sockaddr_in dst;
    struct pollfd pfd;

    SVT_OK(rdma_create_id(from, &id, NULL, RDMA_PS_TCP));
    svt_cm_loopback(&dst, 1);
    SVT_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
    /* ADDR_RESOLVED is reported on the old channel; not got before the
     * migration */
    pfd.fd     = from->fd;
    pfd.events = POLLIN;
    SVT_CHECK(poll(&pfd, 1, SVT_CM_EV_MS) == 1, "ADDR_RESOLVED not "
              "reported within %d ms", SVT_CM_EV_MS);
    SVT_OK(rdma_migrate_id(id, to));
    SVT_CHECK(id->channel == to, "id->channel %p after rdma_migrate_id, "
              "expected %p", (void *)id->channel, (void *)to);
    pfd.revents = 0;
    SVT_CHECK(poll(&pfd, 1, 0) == 0, "the old channel's fd is still "
              "readable after its only event moved");
    svt_cm_expect_none(from, 50);
    svt_cm_expect(to, RDMA_CM_EVENT_ADDR_RESOLVED, 0, &ev);
    SVT_CHECK(ev->id == id, "ADDR_RESOLVED for id %p, expected %p",
              (void *)ev->id, (void *)id);
    SVT_OK(rdma_ack_cm_event(ev));
    SVT_OK(rdma_destroy_id(id));
    rdma_destroy_event_channel(to);
    rdma_destroy_event_channel(from);
}

/*
 * rdma_getaddrinfo of a multicast group, as mckey resolves its -m
 * address: IPv4 and IPv6 groups come back as the group address; with
 * RDMA_PS_UDP and no QP type, librdmacm's result is a UD QP in the UDP
 * port space (librdmacm/addrinfo.c: ucma_convert_to_ai asks getaddrinfo(3)
 * for UDP, ucma_convert_to_rai maps its datagram socket type to UD)
 */
static void svt_case_cm_gai_mcast(svt_proc_t *p)
{
    static const char *const group[] = {"239.1.2.3", "ff0e::1"};
    struct rdma_addrinfo hints, *res;
    uint8_t want[16];
    size_t i;
    int ret, fam;

    (void)p;
    for (i = 0; i < 2; ++i) {
        fam = i ? AF_INET6 : AF_INET;
        SVT_CHECK(inet_pton(fam, group[i], want) == 1, "inet_pton %s",
                  group[i]);
        memset(&hints, 0, sizeof(hints));
        hints.ai_port_space = RDMA_PS_UDP;
        res   = NULL;
        errno = 0;
        ret   = rdma_getaddrinfo(group[i], NULL, &hints, &res);
        SVT_CHECK(ret == 0 && res != NULL, "rdma_getaddrinfo(%s): %d "
                  "(errno %d)", group[i], ret, errno);
        SVT_CHECK(res->ai_family == fam && res->ai_dst_addr != NULL &&
                  res->ai_dst_addr->sa_family == fam, "%s: family %d, "
                  "destination family %d", group[i], res->ai_family,
                  res->ai_dst_addr ? res->ai_dst_addr->sa_family : -1);
        SVT_CHECK(!memcmp(want, i ? (const void *)&((struct sockaddr_in6 *)
                                     res->ai_dst_addr)->sin6_addr :
                                    (const void *)&((struct sockaddr_in *)
                                     res->ai_dst_addr)->sin_addr,
                          i ? 16 : 4), "%s: another destination address",
                  group[i]);
        SVT_CHECK(res->ai_qp_type == IBV_QPT_UD &&
                  res->ai_port_space == RDMA_PS_UDP, "%s with RDMA_PS_UDP: "
                  "qp_type %d, port space %d; librdmacm's are UD (%d) and "
                  "RDMA_PS_UDP", group[i], res->ai_qp_type,
                  res->ai_port_space, IBV_QPT_UD);
        rdma_freeaddrinfo(res);
        /* no hints: resolved as well */
        res = NULL;
        ret = rdma_getaddrinfo(group[i], NULL, NULL, &res);
        SVT_CHECK(ret == 0 && res != NULL, "rdma_getaddrinfo(%s) without "
                  "hints: %d (errno %d)", group[i], ret, errno);
        rdma_freeaddrinfo(res);
    }
}

/*
 * rdma_getaddrinfo as rdma-core 44's (librdmacm/addrinfo.c): without node
 * and service the result is the hints' own (flags, family, QP type, port
 * space, destination address, and the source address), nothing looked up;
 * libfabric's verbs provider resolves its endpoints' source addresses so
 * (vrb_get_rdmacm_rai), and softverbs answered ENODEV (getaddrinfo(NULL,
 * NULL)): fi_pingpong over verbs and ofi_rxm failed with -61 (ENODATA).
 * No node, service nor hints is EINVAL; a name gives one result, its
 * first address (ucma_convert_to_rai converts getaddrinfo's head only).
 */
static void svt_case_cm_gai_from_hints(svt_proc_t *p)
{
    struct rdma_addrinfo hints, *res = NULL;
    struct sockaddr_in src, dst;
    int ret;

    (void)p;
    svt_cm_loopback(&src, 0);
    svt_cm_loopback(&dst, 7471);
    memset(&hints, 0, sizeof(hints));
    hints.ai_flags       = RAI_PASSIVE;
    hints.ai_family      = AF_INET;
    hints.ai_port_space  = RDMA_PS_TCP;
    hints.ai_src_addr    = (struct sockaddr *)&src;
    hints.ai_src_len     = sizeof(src);
    errno = 0;
    ret   = rdma_getaddrinfo(NULL, NULL, &hints, &res);
    SVT_CHECK((ret == 0) && (res != NULL), "rdma_getaddrinfo(NULL, NULL, "
              "hints with a source address): %d (errno %d), expected the "
              "hints' address", ret, errno);
    SVT_CHECK((res->ai_flags == RAI_PASSIVE) && (res->ai_family == AF_INET) &&
              (res->ai_port_space == RDMA_PS_TCP) && (res->ai_qp_type == 0) &&
              (res->ai_dst_len == 0) && (res->ai_next == NULL),
              "result flags 0x%x family %d port space %d qp type %d dst_len "
              "%u next %p: expected the hints' own", res->ai_flags,
              res->ai_family, res->ai_port_space, res->ai_qp_type,
              res->ai_dst_len, (void *)res->ai_next);
    SVT_CHECK((res->ai_src_len == sizeof(src)) &&
              (res->ai_src_addr != (struct sockaddr *)&src) &&
              !memcmp(res->ai_src_addr, &src, sizeof(src)),
              "source address not the hints' (a copy)");
    rdma_freeaddrinfo(res);

    /* an active side's: both addresses from the hints */
    hints.ai_flags    = 0;
    hints.ai_dst_addr = (struct sockaddr *)&dst;
    hints.ai_dst_len  = sizeof(dst);
    res = NULL;
    SVT_OK(rdma_getaddrinfo(NULL, NULL, &hints, &res));
    SVT_CHECK((res->ai_dst_len == sizeof(dst)) &&
              !memcmp(res->ai_dst_addr, &dst, sizeof(dst)) &&
              (res->ai_src_len == sizeof(src)) &&
              !memcmp(res->ai_src_addr, &src, sizeof(src)),
              "destination and source not the hints'");
    rdma_freeaddrinfo(res);

    errno = 0;
    ret   = rdma_getaddrinfo(NULL, NULL, NULL, &res);
    SVT_CHECK((ret == -1) && (errno == EINVAL), "rdma_getaddrinfo(NULL, "
              "NULL, NULL): %d (errno %d), expected EINVAL", ret, errno);

    memset(&hints, 0, sizeof(hints));
    hints.ai_port_space = RDMA_PS_TCP;
    res = NULL;
    SVT_OK(rdma_getaddrinfo("localhost", "7471", &hints, &res));
    SVT_CHECK((res->ai_next == NULL) && (res->ai_dst_addr != NULL) &&
              (res->ai_qp_type == IBV_QPT_RC), "localhost: next %p, dst %p, "
              "qp type %d; librdmacm gives one RC result",
              (void *)res->ai_next, (void *)res->ai_dst_addr,
              res->ai_qp_type);
    rdma_freeaddrinfo(res);
}

static int svt_cm_fd_count(void)
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

/*
 * rdma_migrate_id of a synchronous id (no channel at rdma_create_id)
 * destroys the id's own channel, as librdmacm's does (rdma-core 44
 * librdmacm/cma.c: rdma_destroy_event_channel when id_priv->sync).
 * libfabric's verbs provider makes each endpoint's id so (vrb_create_ep)
 * and migrates it to its event queue; softverbs kept the old channel's two
 * descriptors, and a process that retried connections ran out of them.
 */
static void svt_case_cm_migrate_sync(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel();
    struct sockaddr_in dst;
    struct rdma_cm_id *id;
    int i, base = 0;

    (void)p;
    svt_cm_loopback(&dst, 7471);
    for (i = 0; i < 20; i++) {
        if (i == 1) {
            base = svt_cm_fd_count();
        }
        SVT_OK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
        SVT_CHECK(id->channel == NULL, "synchronous id with a channel");
        SVT_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
        SVT_OK(rdma_migrate_id(id, ch));
        SVT_CHECK(id->channel == ch, "migrated id on channel %p, expected "
                  "%p", (void *)id->channel, (void *)ch);
        SVT_OK(rdma_resolve_route(id, 2000));
        svt_cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
        SVT_OK(rdma_destroy_id(id));
    }
    SVT_CHECK(svt_cm_fd_count() == base, "%d descriptors open after 19 "
              "synchronous ids migrated and destroyed, %d before",
              svt_cm_fd_count(), base);
    rdma_destroy_event_channel(ch);
}

const svt_case_t svt_cases_cm[] = {
    {"cm/getaddrinfo_multicast", svt_case_cm_gai_mcast, 1},
    {"cm/getaddrinfo_from_hints", svt_case_cm_gai_from_hints, 1},
    {"cm/migrate_sync_id_frees_channel", svt_case_cm_migrate_sync, 1},
    {"cm/create_qp_unbound_id", svt_case_cm_qp_unbound, 1},
    {"cm/create_qp_pd_of_other_context", svt_case_cm_qp_other_pd, 1, 0, 0,
     "SOFTVERBS_NUM_DEVICES=2"},
    {"cm/create_qp_default_pd", svt_case_cm_qp_default_pd, 1},
    {"cm/create_qp_twice", svt_case_cm_qp_twice, 1},
    {"cm/create_qp_cm_cqs_released", svt_case_cm_qp_cm_cqs, 1},
    {"cm/create_qp_caps_clamped", svt_case_cm_qp_caps, 1, 0, 0,
     "SOFTVERBS_CAP_POLICY=clamp"},
    {"cm/create_qp_caps_fail_policy", svt_case_cm_qp_caps, 1, 1, 0,
     "SOFTVERBS_CAP_POLICY=fail"},
    {"cm/create_qp_ud_rts", svt_case_cm_qp_state_ud, 1},
    {"cm/bind_in_use", svt_case_cm_bind_in_use, 2},
    {"cm/bind_port_zero", svt_case_cm_bind_port_zero, 1},
    {"cm/bind_wildcard_specific_overlap", svt_case_cm_bind_overlap, 2},
    {"cm/bind_reuseaddr", svt_case_cm_bind_reuseaddr, 2},
    {"cm/migrate_id_moves_pending_events", svt_case_cm_migrate_events, 1},
    {NULL}
};
