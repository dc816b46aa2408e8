/*
 * softverbs rsockets: datagram sockets (rsocket(AF_INET/AF_INET6,
 * SOCK_DGRAM), man rsocket(7)) over a softverbs UD QP, as rdma-core's
 * rsockets carry them over UD: each socket has a UD QP and, beside it, a
 * kernel UDP socket bound to the same address, which reserves the port
 * (EADDRINUSE as UDP gives it) and serves the address resolution that UD
 * needs and IP does not have. rdma-core's datagram rsockets likewise keep
 * a UDP socket and announce their QP over it; the exchange here is
 * softverbs' own (only softverbs talks to softverbs):
 *
 *   resolve  the first datagram to an IP:port unknown to the socket sends
 *            a REQ (our QPN, LID, GID) over UDP to that address; the
 *            owner, progressing in any rsocket call on it, learns the
 *            sender from it and answers a REP with its own QPN, LID, GID
 *            and the address it saw the request come from
 *   data     UD SENDs of a header (magic, the sender's address as the
 *            receiver knows it) and the payload, one datagram each, at
 *            most the port's MTU less the header (EMSGSIZE beyond, as UDP
 *            beyond 64 KiB); a receiver learns an unknown sender from the
 *            header and the completion (its QPN, an AH from the WC)
 *
 * Datagram semantics: a datagram that finds no posted receive (a reader
 * RS_DG_SLOTS behind) is dropped, as UD drops it; one to an address that
 * answers no REQ within RS_DG_RESOLVE_MS is dropped and reported sent, as
 * UDP reports an unconnected send to a closed port. The socket's number
 * is its UDP socket's fd. rconnect sets the default destination (rsend,
 * rwrite); datagrams from other addresses are still received. Not done:
 * MSG_TRUNC's real length, datagrams from other addresses filtered on a
 * connected socket, multicast.
 */
#include "sv_cm.h"
#include "sv_rsocket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RS_DG_SLOTS      64          /* receives posted, sends in flight */
#define RS_DG_GRH        40          /* the GRH room of a UD receive */
#define RS_DG_MAGIC      0x73764447u /* "svDG" */
#define RS_DG_QKEY       0x01234567u /* RDMA_UDP_QKEY, as the CM's UD QPs */
#define RS_DG_DESTS      256         /* addresses a socket knows */
#define RS_DG_RESOLVE_MS 1000        /* then a datagram to it is dropped */
#define RS_DG_RETRY_MS   100         /* REQ resent after */

enum { RS_DG_REQ = 1, RS_DG_REP = 2 };

/* Before each datagram's payload */
typedef struct sv_rs_dg_hdr {
    uint32_t magic;
    uint16_t family;
    uint16_t port;      /* network order */
    uint8_t  addr[16];
} sv_rs_dg_hdr_t;

/* The resolution exchange over UDP */
typedef struct sv_rs_dg_udp {
    uint32_t                magic;
    uint32_t                op;
    uint32_t                qpn;
    uint16_t                lid;
    uint16_t                pad;
    uint8_t                 gid[16];
    struct sockaddr_storage seen; /* REP: the requester as seen */
} sv_rs_dg_udp_t;

typedef struct sv_rs_dest {
    struct sockaddr_storage addr;  /* the key: the peer's address */
    struct sockaddr_storage seen;  /* us, as that peer knows us */
    struct ibv_ah           *ah;
    uint32_t                qpn;
    long                    first_req_ms; /* 0: no REQ outstanding */
    long                    last_req_ms;
} sv_rs_dest_t;

struct sv_rs_dg {
    struct ibv_context      *ctx;
    uint8_t                 port;
    uint16_t                lid;
    union ibv_gid           gid;
    struct ibv_qp           *qp;
    char                    *buf;      /* RS_DG_SLOTS receive, then send */
    struct ibv_mr           *mr;
    uint32_t                slot_size;
    uint32_t                max_msg;
    uint32_t                rx_slot[RS_DG_SLOTS];
    uint32_t                rx_len[RS_DG_SLOTS];
    struct sockaddr_storage rx_from[RS_DG_SLOTS];
    unsigned                rx_head, rx_count;
    uint32_t                tx_free[RS_DG_SLOTS];
    unsigned                tx_nfree;
    sv_rs_dest_t            dest[RS_DG_DESTS];
    unsigned                ndest;
    struct sockaddr_storage peer;      /* rconnect's, family 0 if none */
    struct sockaddr_storage self;      /* bound address (headers' default) */
    int                     bound;
};

static socklen_t sv_rs_dg_salen(const struct sockaddr_storage *ss)
{
    return (ss->ss_family == AF_INET6) ? sizeof(struct sockaddr_in6) :
                                         sizeof(struct sockaddr_in);
}

static int sv_rs_dg_same(const struct sockaddr_storage *a,
                         const struct sockaddr_storage *b)
{
    const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
    const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

    if (a->ss_family != b->ss_family) {
        return 0;
    }
    if (a->ss_family == AF_INET) {
        return (a4->sin_port == b4->sin_port) &&
               (a4->sin_addr.s_addr == b4->sin_addr.s_addr);
    }
    return (a6->sin6_port == b6->sin6_port) &&
           !memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr));
}

static sv_rs_dest_t *sv_rs_dg_dest(struct sv_rs_dg *dg,
                                   const struct sockaddr_storage *addr,
                                   int create)
{
    sv_rs_dest_t *d;
    unsigned i;

    for (i = 0; i < dg->ndest; i++) {
        if (sv_rs_dg_same(&dg->dest[i].addr, addr)) {
            return &dg->dest[i];
        }
    }
    if (!create) {
        return NULL;
    }
    if (dg->ndest == RS_DG_DESTS) {
        errno = ENOBUFS;
        return NULL;
    }
    d = &dg->dest[dg->ndest++];
    memset(d, 0, sizeof(*d));
    d->addr = *addr;
    return d;
}

static void sv_rs_dg_dest_set(sv_rs_dest_t *d, struct ibv_ah *ah,
                              uint32_t qpn)
{
    if (d->ah != NULL) {
        ibv_destroy_ah(d->ah);
    }
    d->ah           = ah;
    d->qpn          = qpn;
    d->first_req_ms = 0;
}

/* An AH toward a LID (or, LID 0 as on RoCE, the GID) of our port */
static struct ibv_ah *sv_rs_dg_ah(struct sv_rs_dg *dg, uint16_t lid,
                                  const uint8_t *gid)
{
    struct ibv_ah_attr a;

    memset(&a, 0, sizeof(a));
    a.dlid     = lid;
    a.port_num = dg->port;
    if (lid == 0) {
        a.is_global     = 1;
        a.grh.hop_limit = 64;
        memcpy(a.grh.dgid.raw, gid, 16);
    }
    return ibv_create_ah(dg->qp->pd, &a);
}

static int sv_rs_dg_post_recv(struct sv_rs_dg *dg, uint32_t slot)
{
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;

    sge.addr   = (uintptr_t)(dg->buf + (size_t)slot * dg->slot_size);
    sge.length = dg->slot_size;
    sge.lkey   = dg->mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(dg->qp, &wr, &bad);
}

static int sv_rs_dg_qp_ready(struct sv_rs_dg *dg)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state   = IBV_QPS_INIT;
    a.port_num   = dg->port;
    a.qkey       = RS_DG_QKEY;
    if (ibv_modify_qp(dg->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        return -1;
    }
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(dg->qp, &a, IBV_QP_STATE)) {
        return -1;
    }
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn   = 0;
    return ibv_modify_qp(dg->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The verbs resources, on the device the bound address maps to */
static int sv_rs_dg_res_create(sv_rs_t *rs, const struct sockaddr *local)
{
    struct sv_rs_dg *dg = rs->dg;
    struct sockaddr_in lo = { .sin_family = AF_INET };
    struct ibv_qp_init_attr qa;
    struct ibv_port_attr pa;
    uint32_t i;

    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((sv_cm_addr_device(local, &dg->ctx, &dg->port) != 0) &&
        (sv_cm_addr_device((struct sockaddr *)&lo, &dg->ctx,
                           &dg->port) != 0)) {
        errno = EADDRNOTAVAIL;
        return -1;
    }
    if ((ibv_query_port(dg->ctx, dg->port, &pa) != 0) ||
        (ibv_query_gid(dg->ctx, dg->port, 0, &dg->gid) != 0)) {
        return -1;
    }
    dg->lid       = pa.lid;
    dg->max_msg   = (128u << pa.active_mtu) - sizeof(sv_rs_dg_hdr_t);
    dg->slot_size = RS_DG_GRH + sizeof(sv_rs_dg_hdr_t) + dg->max_msg;
    rs->pd        = sv_cm_default_pd(dg->ctx);
    rs->cc        = ibv_create_comp_channel(dg->ctx);
    if ((rs->pd == NULL) || (rs->cc == NULL)) {
        return -1;
    }
    /* rpoll takes the channel's events without waiting (sv_rs_disarm) */
    fcntl(rs->cc->fd, F_SETFL, fcntl(rs->cc->fd, F_GETFL) | O_NONBLOCK);
    rs->cq = ibv_create_cq(dg->ctx, 2 * RS_DG_SLOTS, rs, rs->cc, 0);
    dg->buf = calloc(2 * RS_DG_SLOTS, dg->slot_size);
    if ((rs->cq == NULL) || (dg->buf == NULL)) {
        errno = ENOMEM;
        return -1;
    }
    dg->mr = ibv_reg_mr(rs->pd, dg->buf, (size_t)2 * RS_DG_SLOTS *
                        dg->slot_size, IBV_ACCESS_LOCAL_WRITE);
    memset(&qa, 0, sizeof(qa));
    qa.send_cq          = rs->cq;
    qa.recv_cq          = rs->cq;
    qa.qp_type          = IBV_QPT_UD;
    qa.cap.max_send_wr  = RS_DG_SLOTS;
    qa.cap.max_recv_wr  = RS_DG_SLOTS;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    dg->qp = (dg->mr != NULL) ? ibv_create_qp(rs->pd, &qa) : NULL;
    if ((dg->qp == NULL) || (sv_rs_dg_qp_ready(dg) != 0)) {
        return -1;
    }
    for (i = 0; i < RS_DG_SLOTS; i++) {
        if (sv_rs_dg_post_recv(dg, i) != 0) {
            return -1;
        }
        dg->tx_free[dg->tx_nfree++] = RS_DG_SLOTS + i;
    }
    dg->bound = 1;
    return 0;
}

void sv_rs_dg_free(sv_rs_t *rs)
{
    struct sv_rs_dg *dg = rs->dg;
    unsigned i;

    for (i = 0; i < dg->ndest; i++) {
        if (dg->dest[i].ah != NULL) {
            ibv_destroy_ah(dg->dest[i].ah);
        }
    }
    if (dg->qp != NULL) {
        ibv_destroy_qp(dg->qp);
    }
    if (dg->mr != NULL) {
        ibv_dereg_mr(dg->mr);
    }
    if (rs->cq != NULL) {
        ibv_destroy_cq(rs->cq);
    }
    if (rs->cc != NULL) {
        ibv_destroy_comp_channel(rs->cc);
    }
    free(dg->buf);
    close(rs->fd);
    free(dg);
}

static const sv_rs_ops_t sv_rs_dg_ops;

/* rsocket(SOCK_DGRAM): the UDP socket, whose fd names it */
sv_rs_t *sv_rs_dg_alloc(int domain, int type)
{
    sv_rs_t *rs = calloc(1, sizeof(*rs));

    if (rs == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    rs->dg = calloc(1, sizeof(*rs->dg));
    if (rs->dg == NULL) {
        free(rs);
        errno = ENOMEM;
        return NULL;
    }
    rs->ops      = &sv_rs_dg_ops;
    rs->domain   = domain;
    rs->nonblock = !!(type & SOCK_NONBLOCK);
    rs->fd       = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          0);
    if (rs->fd < 0) {
        free(rs->dg);
        free(rs);
        return NULL;
    }
    rs->state = RS_INIT;
    return rs;
}

int sv_rs_dg_bind(sv_rs_t *rs, const struct sockaddr *addr, socklen_t len)
{
    struct sockaddr_storage local;
    socklen_t llen = sizeof(local);

    if (rs->dg->bound) {
        errno = EINVAL;
        return -1;
    }
    if ((bind(rs->fd, addr, len) != 0) ||
        (getsockname(rs->fd, (struct sockaddr *)&local, &llen) != 0)) {
        return -1;
    }
    if (sv_rs_dg_res_create(rs, (struct sockaddr *)&local) != 0) {
        return -1;
    }
    rs->dg->self = local;
    rs->state = RS_BOUND;
    return 0;
}

/* An unbound socket that sends is bound to a free port, as UDP does */
static int sv_rs_dg_autobind(sv_rs_t *rs)
{
    struct sockaddr_storage any;

    if (rs->dg->bound) {
        return 0;
    }
    memset(&any, 0, sizeof(any));
    any.ss_family = rs->domain;
    return sv_rs_dg_bind(rs, (struct sockaddr *)&any, sv_rs_dg_salen(&any));
}

static void sv_rs_dg_udp_send(sv_rs_t *rs, uint32_t op,
                              const struct sockaddr_storage *to,
                              const struct sockaddr_storage *seen)
{
    struct sv_rs_dg *dg = rs->dg;
    sv_rs_dg_udp_t m;

    memset(&m, 0, sizeof(m));
    m.magic = htonl(RS_DG_MAGIC);
    m.op    = htonl(op);
    m.qpn   = htonl(dg->qp->qp_num);
    m.lid   = htons(dg->lid);
    memcpy(m.gid, dg->gid.raw, 16);
    if (seen != NULL) {
        m.seen = *seen;
    }
    /* lost like any datagram; the REQ is resent */
    (void)sendto(rs->fd, &m, sizeof(m), MSG_DONTWAIT,
                 (const struct sockaddr *)to, sv_rs_dg_salen(to));
}

/* The UDP socket: REQs answered (and the requester learned), REPs taken */
static void sv_rs_dg_udp_progress(sv_rs_t *rs)
{
    struct sv_rs_dg *dg = rs->dg;
    struct sockaddr_storage from;
    socklen_t flen;
    sv_rs_dg_udp_t m;
    sv_rs_dest_t *d;
    struct ibv_ah *ah;
    ssize_t n;

    for (;;) {
        flen = sizeof(from);
        n    = recvfrom(rs->fd, &m, sizeof(m), MSG_DONTWAIT,
                        (struct sockaddr *)&from, &flen);
        if (n < 0) {
            return;
        }
        if ((n != sizeof(m)) || (ntohl(m.magic) != RS_DG_MAGIC)) {
            continue; /* not ours: dropped */
        }
        d = sv_rs_dg_dest(dg, &from, 1);
        if (d == NULL) {
            continue;
        }
        if (m.seen.ss_family != 0) {
            /* REQ: the address the requester sent to; REP: the requester
             * as the answerer saw it. Either is how the peer names us. */
            d->seen = m.seen;
        }
        if ((d->ah == NULL) || (d->qpn != ntohl(m.qpn))) {
            ah = sv_rs_dg_ah(dg, ntohs(m.lid), m.gid);
            if (ah != NULL) {
                sv_rs_dg_dest_set(d, ah, ntohl(m.qpn));
            }
        }
        if (ntohl(m.op) == RS_DG_REQ) {
            sv_rs_dg_udp_send(rs, RS_DG_REP, &from, &from);
        }
    }
}

static void sv_rs_dg_on_recv(sv_rs_t *rs, const struct ibv_wc *wc)
{
    struct sv_rs_dg *dg = rs->dg;
    uint32_t slot       = (uint32_t)wc->wr_id;
    const sv_rs_dg_hdr_t *h = (const void *)(dg->buf +
                                             (size_t)slot * dg->slot_size +
                                             RS_DG_GRH);
    struct sockaddr_storage from;
    struct sockaddr_in6 *s6 = (void *)&from;
    struct sockaddr_in *s4  = (void *)&from;
    sv_rs_dest_t *d;
    unsigned tail;

    if ((wc->status != IBV_WC_SUCCESS) ||
        (wc->byte_len < RS_DG_GRH + sizeof(*h)) ||
        (ntohl(h->magic) != RS_DG_MAGIC)) {
        sv_rs_dg_post_recv(dg, slot); /* not a datagram of ours */
        return;
    }
    memset(&from, 0, sizeof(from));
    from.ss_family = ntohs(h->family);
    if (from.ss_family == AF_INET6) {
        s6->sin6_port = h->port;
        memcpy(&s6->sin6_addr, h->addr, 16);
    } else {
        from.ss_family = AF_INET;
        s4->sin_port   = h->port;
        memcpy(&s4->sin_addr, h->addr, 4);
    }
    d = sv_rs_dg_dest(dg, &from, 1);
    if ((d != NULL) && (d->ah == NULL)) {
        /* a sender unknown here: answerable through its WC */
        struct ibv_ah *ah = ibv_create_ah_from_wc(
                dg->qp->pd, (struct ibv_wc *)wc,
                (struct ibv_grh *)((char *)h - RS_DG_GRH), dg->port);
        if (ah != NULL) {
            sv_rs_dg_dest_set(d, ah, wc->src_qp);
        }
    }
    tail              = (dg->rx_head + dg->rx_count) % RS_DG_SLOTS;
    dg->rx_slot[tail] = slot;
    dg->rx_len[tail]  = wc->byte_len - RS_DG_GRH - sizeof(*h);
    dg->rx_from[tail] = from;
    dg->rx_count++;
}

/* The UDP socket and the CQ, without blocking */
static void sv_rs_dg_progress(sv_rs_t *rs)
{
    struct sv_rs_dg *dg = rs->dg;
    struct ibv_wc wc[16];
    int n, i;

    sv_rs_dg_udp_progress(rs);
    if (!dg->bound) {
        return;
    }
    while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
        for (i = 0; i < n; i++) {
            if (wc[i].wr_id >= RS_DG_SLOTS) {
                dg->tx_free[dg->tx_nfree++] = (uint32_t)wc[i].wr_id;
            } else {
                sv_rs_dg_on_recv(rs, &wc[i]);
            }
        }
    }
}

static int sv_rs_dg_revents(sv_rs_t *rs, short events)
{
    int rev = 0;

    sv_rs_dg_progress(rs);
    if (rs->dg->rx_count > 0) {
        rev |= POLLIN;
    }
    if (!rs->dg->bound || (rs->dg->tx_nfree > 0)) {
        rev |= POLLOUT;
    }
    return rev & events;
}

int sv_rs_dg_connect(sv_rs_t *rs, const struct sockaddr *addr, socklen_t len)
{
    if ((addr == NULL) || (len < sizeof(struct sockaddr_in)) ||
        (len > sizeof(rs->dg->peer))) {
        errno = EINVAL;
        return -1;
    }
    if (sv_rs_dg_autobind(rs) != 0) {
        return -1;
    }
    memset(&rs->dg->peer, 0, sizeof(rs->dg->peer));
    memcpy(&rs->dg->peer, addr, len);
    rs->state = RS_CONNECTED;
    return 0;
}

const struct sockaddr_storage *sv_rs_dg_peer(sv_rs_t *rs)
{
    return rs->dg->peer.ss_family ? &rs->dg->peer : NULL;
}

/* The destination's QP, resolved by a REQ over UDP; 1 when resolved, 0
 * when given up (the datagram is dropped), -1 with EAGAIN (non-blocking) */
static int sv_rs_dg_resolve(sv_rs_t *rs, sv_rs_dest_t *d, int nonblock)
{
    struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
    long now;

    for (;;) {
        sv_rs_dg_udp_progress(rs);
        if (d->ah != NULL) {
            return 1;
        }
        now = sv_rs_now_ms();
        if (d->first_req_ms == 0) {
            d->first_req_ms = now;
        } else if (now - d->first_req_ms >= RS_DG_RESOLVE_MS) {
            d->first_req_ms = 0; /* the next datagram asks again */
            return 0;
        }
        if ((d->last_req_ms == 0) || (now - d->last_req_ms >= RS_DG_RETRY_MS)) {
            sv_rs_dg_udp_send(rs, RS_DG_REQ, &d->addr, &d->addr);
            d->last_req_ms = now;
        }
        if (nonblock) {
            errno = EAGAIN;
            return -1;
        }
        (void)poll(&pfd, 1, RS_DG_RETRY_MS);
    }
}

static ssize_t sv_rs_dg_sendv(sv_rs_t *rs, const struct iovec *iov,
                              int iovcnt, int flags,
                              const struct sockaddr *to, socklen_t tolen)
{
    int nonblock = rs->nonblock || (flags & MSG_DONTWAIT);
    struct sv_rs_dg *dg = rs->dg;
    struct sockaddr_storage dst;
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    const struct sockaddr_storage *self;
    sv_rs_dg_hdr_t *h;
    sv_rs_dest_t *d;
    size_t len = 0, off;
    uint32_t slot;
    int i, ret;

    if (to == NULL) {
        if (dg->peer.ss_family == 0) {
            errno = EDESTADDRREQ;
            return -1;
        }
        dst = dg->peer;
    } else {
        if ((tolen < sizeof(struct sockaddr_in)) || (tolen > sizeof(dst))) {
            errno = EINVAL;
            return -1;
        }
        memset(&dst, 0, sizeof(dst));
        memcpy(&dst, to, tolen);
    }
    for (i = 0; i < iovcnt; i++) {
        len += iov[i].iov_len;
    }
    if (sv_rs_dg_autobind(rs) != 0) {
        return -1;
    }
    if (len > dg->max_msg) {
        errno = EMSGSIZE;
        return -1;
    }
    d = sv_rs_dg_dest(dg, &dst, 1);
    if (d == NULL) {
        return -1;
    }
    ret = sv_rs_dg_resolve(rs, d, nonblock);
    if (ret <= 0) {
        return (ret == 0) ? (ssize_t)len : -1; /* 0: lost, as UDP's */
    }
    for (;;) {
        sv_rs_dg_progress(rs);
        if (dg->tx_nfree > 0) {
            break;
        }
        if (nonblock) {
            errno = EAGAIN;
            return -1;
        }
        if (sv_rs_wait(rs, POLLOUT) < 0) {
            return -1;
        }
    }
    slot = dg->tx_free[--dg->tx_nfree];
    h    = (void *)(dg->buf + (size_t)slot * dg->slot_size);
    memset(h, 0, sizeof(*h));
    h->magic  = htonl(RS_DG_MAGIC);
    self   = d->seen.ss_family ? &d->seen : &dg->self;
    h->family = htons(self->ss_family);
    if (self->ss_family == AF_INET6) {
        h->port = ((const struct sockaddr_in6 *)self)->sin6_port;
        memcpy(h->addr, &((const struct sockaddr_in6 *)self)->sin6_addr, 16);
    } else {
        h->port = ((const struct sockaddr_in *)self)->sin_port;
        memcpy(h->addr, &((const struct sockaddr_in *)self)->sin_addr, 4);
    }
    for (i = 0, off = 0; i < iovcnt; i++) {
        memcpy((char *)(h + 1) + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    sge.addr   = (uintptr_t)h;
    sge.length = sizeof(*h) + len;
    sge.lkey   = dg->mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id             = slot;
    wr.sg_list           = &sge;
    wr.num_sge           = 1;
    wr.opcode            = IBV_WR_SEND;
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = d->ah;
    wr.wr.ud.remote_qpn  = d->qpn;
    wr.wr.ud.remote_qkey = RS_DG_QKEY;
    if (ibv_post_send(dg->qp, &wr, &bad) != 0) {
        dg->tx_free[dg->tx_nfree++] = slot;
        errno = EIO;
        return -1;
    }
    return len;
}

static ssize_t sv_rs_dg_recvv(sv_rs_t *rs, const struct iovec *iov,
                              int iovcnt, int flags, struct sockaddr *from,
                              socklen_t *fromlen)
{
    struct sv_rs_dg *dg = rs->dg;
    size_t done = 0, n;
    const char *data;
    uint32_t slot;
    int i;

    for (;;) {
        sv_rs_dg_progress(rs);
        if (dg->rx_count > 0) {
            break;
        }
        if (rs->nonblock || (flags & MSG_DONTWAIT)) {
            errno = EAGAIN;
            return -1;
        }
        if (sv_rs_wait(rs, POLLIN) < 0) {
            return -1;
        }
    }
    slot = dg->rx_slot[dg->rx_head];
    data = dg->buf + (size_t)slot * dg->slot_size + RS_DG_GRH +
           sizeof(sv_rs_dg_hdr_t);
    /* one datagram; what the buffers cannot hold is lost (UDP's) */
    for (i = 0; (i < iovcnt) && (done < dg->rx_len[dg->rx_head]); i++) {
        n = dg->rx_len[dg->rx_head] - done;
        if (n > iov[i].iov_len) {
            n = iov[i].iov_len;
        }
        memcpy(iov[i].iov_base, data + done, n);
        done += n;
    }
    if ((from != NULL) && (fromlen != NULL)) {
        socklen_t alen = sv_rs_dg_salen(&dg->rx_from[dg->rx_head]);

        memcpy(from, &dg->rx_from[dg->rx_head],
               (*fromlen < alen) ? *fromlen : alen);
        *fromlen = alen;
    }
    if (!(flags & MSG_PEEK)) {
        dg->rx_head = (dg->rx_head + 1) % RS_DG_SLOTS;
        dg->rx_count--;
        sv_rs_dg_post_recv(dg, slot);
    }
    return done;
}

static const sv_rs_ops_t sv_rs_dg_ops = {
    .revents = sv_rs_dg_revents,
    .recvv   = sv_rs_dg_recvv,
    .sendv   = sv_rs_dg_sendv,
};
