/*
 * softverbs rsockets: the socket calls, connection management and options
 * (man rsocket(7)), the top of the rsocket files (the socket table and the
 * data calls are sv_rsocket.c's). Each rsocket has its own CM event
 * channel and id; the state machine (sv_rs_state_t) moves through one function per transition:
 * rsocket -> INIT, rbind -> BOUND, rlisten -> LISTENING, rconnect ->
 * RESOLVING -> CONNECTING -> CONNECTED, raccept gives CONNECTED sockets,
 * failures -> ERROR with the errno kept for SO_ERROR. As in rdma-core,
 * calls return -1 with errno set; an fd that is no rsocket gives EBADF.
 * Using an rsocket in a child after fork() is not supported (rdma-core
 * has that only as rspreload's optional fork support).
 */
#include "sv_cm.h"
#include "sv_rsocket.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const sv_rs_ops_t sv_rs_stream_ops;

/* a socket with its own event channel, named by the channel's fd */
static sv_rs_t *sv_rs_alloc(int domain, struct rdma_cm_id *id)
{
    sv_rs_t *rs = calloc(1, sizeof(*rs));

    if (rs == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    rs->ops    = &sv_rs_stream_ops;
    rs->domain = domain;
    rs->state  = RS_INIT;
    rs->ch     = rdma_create_event_channel();
    if (rs->ch == NULL) {
        goto err_free;
    }
    if (id == NULL) {
        if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP)) {
            goto err_ch;
        }
    } else {
        if (rdma_migrate_id(id, rs->ch)) {
            goto err_ch;
        }
        rs->id      = id;
        id->context = rs;
    }
    rs->fd = rs->ch->fd;
    if (sv_rs_table_set(rs->fd, rs)) {
        goto err_id;
    }
    return rs;

err_id:
    if (id == NULL) {
        rdma_destroy_id(rs->id);
    }
err_ch:
    rdma_destroy_event_channel(rs->ch);
err_free:
    free(rs);
    return NULL;
}

static void sv_rs_free(sv_rs_t *rs)
{
    sv_rs_table_set(rs->fd, NULL);
    if (rs->dg != NULL) {
        sv_rs_dg_free(rs);
        free(rs);
        return;
    }
    sv_rs_res_destroy(rs);
    if (rs->id != NULL) {
        rdma_destroy_id(rs->id);
    }
    rdma_destroy_event_channel(rs->ch);
    free(rs);
}

/* -> ERROR: keep the errno for SO_ERROR and the caller */
static int sv_rs_to_error(sv_rs_t *rs, int err)
{
    rs->state = RS_ERROR;
    rs->err   = err;
    errno     = err;
    return -1;
}

/* RESOLVING: ADDR_RESOLVED -> resolve the route */
static int sv_rs_on_addr_resolved(sv_rs_t *rs)
{
    if (rdma_resolve_route(rs->id, 2000)) {
        return sv_rs_to_error(rs, errno);
    }
    return 0;
}

/* RESOLVING -> CONNECTING: ROUTE_RESOLVED, QP created, request sent */
static int sv_rs_on_route_resolved(sv_rs_t *rs)
{
    struct rdma_conn_param param;

    if (sv_rs_res_create(rs, rs->id)) {
        return sv_rs_to_error(rs, errno);
    }
    memset(&param, 0, sizeof(param));
    param.responder_resources = 1;
    param.initiator_depth     = 1;
    param.retry_count         = 7;
    param.rnr_retry_count     = 7;
    if (rdma_connect(rs->id, &param)) {
        return sv_rs_to_error(rs, errno);
    }
    rs->state = RS_CONNECTING;
    return 0;
}

/* CONNECTING -> CONNECTED */
static int sv_rs_on_established(sv_rs_t *rs)
{
    rs->state      = RS_CONNECTED;
    rs->tx_credits = RS_DATA_SLOTS;
    return 0;
}

/* one CM event for this socket, if one is waiting (never blocks) */
static int sv_rs_cm_progress(sv_rs_t *rs)
{
    struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    enum rdma_cm_event_type type;
    int status;

    if ((rs->state == RS_LISTENING) || (poll(&pfd, 1, 0) <= 0) ||
        rdma_get_cm_event(rs->ch, &ev)) {
        return 0;
    }
    type   = ev->event;
    status = ev->status;
    rdma_ack_cm_event(ev);
    switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        return sv_rs_on_addr_resolved(rs);
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        return sv_rs_on_route_resolved(rs);
    case RDMA_CM_EVENT_ESTABLISHED:
        return sv_rs_on_established(rs);
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        /* rsocket(7): nobody listening is a refused connection */
        return sv_rs_to_error(rs, ECONNREFUSED);
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
        return sv_rs_to_error(rs, (status < 0) ? -status : EHOSTUNREACH);
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        rs->disc = 1;
        return 0;
    default:
        return 0;
    }
}

/* The stream kind's readiness for rpoll, after progress (never blocks) */
static int sv_rs_stream_revents(sv_rs_t *rs, short events)
{
    struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };
    int rev = 0;

    switch (rs->state) {
    case RS_LISTENING:
        return (poll(&pfd, 1, 0) > 0) ? (events & POLLIN) : 0;
    case RS_RESOLVING:
    case RS_CONNECTING:
        sv_rs_cm_progress(rs);
        if (rs->state == RS_CONNECTED) {
            return events & POLLOUT;
        }
        return (rs->state == RS_ERROR) ? (POLLOUT | POLLERR) & events : 0;
    case RS_CONNECTED:
        sv_rs_cm_progress(rs);
        sv_rs_cq_progress(rs);
        if (rs->rx_count || rs->fin_rcvd || rs->disc || rs->rd_shut) {
            rev |= POLLIN;
        }
        if (sv_rs_can_send(rs) || rs->disc || rs->fin_sent) {
            rev |= POLLOUT;
        }
        if (rs->disc && !rs->rx_count) {
            rev |= POLLHUP;
        }
        return rev & (events | POLLHUP | POLLERR);
    case RS_ERROR:
        return POLLERR | POLLHUP;
    default:
        return 0;
    }
}

/* A stream socket: its data moves in sv_rsocket_io.c, its connection here */
static const sv_rs_ops_t sv_rs_stream_ops = {
    .revents = sv_rs_stream_revents,
    .recvv   = sv_rs_stream_recvv,
    .sendv   = sv_rs_stream_sendv,
};

SV_CM_EXPORT int rsocket(int domain, int type, int protocol)
{
    sv_rs_t *rs;

    if ((domain != AF_INET) && (domain != AF_INET6) && (domain != AF_IB)) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    if ((type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_DGRAM) {
        if (domain == AF_IB) {
            errno = EAFNOSUPPORT;
            return -1;
        }
        /* datagram rsockets over UD (sv_rsocket_dgram.c) */
        rs = sv_rs_dg_alloc(domain, type);
        if ((rs != NULL) && (sv_rs_table_set(rs->fd, rs) != 0)) {
            sv_rs_dg_free(rs);
            free(rs);
            rs = NULL;
        }
        return (rs != NULL) ? rs->fd : -1;
    }
    if ((type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM) {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    rs = sv_rs_alloc(domain, NULL);
    if (rs == NULL) {
        return -1;
    }
    rs->nonblock = !!(type & SOCK_NONBLOCK);
    return rs->fd;
}

SV_CM_EXPORT int rbind(int socket, const struct sockaddr *addr,
                       socklen_t addrlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((addr == NULL) || (addrlen < sizeof(struct sockaddr_in)) ||
        (rs->state != RS_INIT)) {
        errno = EINVAL;
        return -1;
    }
    if (rs->dg != NULL) {
        return sv_rs_dg_bind(rs, addr, addrlen);
    }
    if (rdma_bind_addr(rs->id, (struct sockaddr *)addr)) {
        return -1;
    }
    rs->state = RS_BOUND;
    return 0;
}

SV_CM_EXPORT int rlisten(int socket, int backlog)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if (rs->dg != NULL) {
        errno = EOPNOTSUPP; /* listen(2) on a datagram socket */
        return -1;
    }
    if (rs->state == RS_LISTENING) {
        return 0;
    }
    if (rs->state != RS_BOUND) {
        errno = EINVAL; /* rdma-core: listen on an unbound rsocket fails */
        return -1;
    }
    if (rdma_listen(rs->id, backlog > 0 ? backlog : 16)) {
        return -1;
    }
    rs->state = RS_LISTENING;
    return 0;
}

/* LISTENING: a connect request becomes a new CONNECTED socket; waits for
 * its ESTABLISHED (the peer is connecting now) */
static int sv_rs_accept_request(sv_rs_t *lrs, struct rdma_cm_id *id)
{
    struct rdma_conn_param param;
    sv_rs_t *rs;

    rs = sv_rs_alloc(lrs->domain, id);
    if (rs == NULL) {
        rdma_reject(id, NULL, 0);
        rdma_destroy_id(id);
        return -1;
    }
    if (sv_rs_res_create(rs, id)) {
        goto err;
    }
    memset(&param, 0, sizeof(param));
    param.responder_resources = 1;
    param.initiator_depth     = 1;
    param.rnr_retry_count     = 7;
    if (rdma_accept(id, &param)) {
        goto err;
    }
    rs->state = RS_CONNECTING;
    while (rs->state == RS_CONNECTING) {
        struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };

        if (poll(&pfd, 1, 5000) <= 0) {
            errno = ECONNABORTED;
            goto err;
        }
        sv_rs_cm_progress(rs);
    }
    if (rs->state != RS_CONNECTED) {
        errno = ECONNABORTED;
        goto err;
    }
    return rs->fd;

err:
    sv_rs_free(rs);
    return -1;
}

SV_CM_EXPORT int raccept(int socket, struct sockaddr *addr,
                         socklen_t *addrlen)
{
    sv_rs_t *lrs = sv_rs_get(socket);
    struct rdma_cm_event *ev;
    struct rdma_cm_id *id;
    int fd;

    if (lrs == NULL) {
        return -1;
    }
    if (lrs->state != RS_LISTENING) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        struct pollfd pfd = { .fd = lrs->fd, .events = POLLIN };

        if (poll(&pfd, 1, lrs->nonblock ? 0 : -1) <= 0) {
            if (lrs->nonblock) {
                errno = EAGAIN;
            }
            return -1;
        }
        if (rdma_get_cm_event(lrs->ch, &ev)) {
            return -1;
        }
        if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            rdma_ack_cm_event(ev);
            continue;
        }
        id = ev->id;
        rdma_ack_cm_event(ev);
        fd = sv_rs_accept_request(lrs, id);
        if (fd < 0) {
            return -1;
        }
        sv_rs_copy_addr(addr, addrlen, rdma_get_peer_addr(id));
        return fd;
    }
}

/* INIT/BOUND -> RESOLVING; blocking sockets wait for CONNECTED or ERROR,
 * non-blocking ones return EINPROGRESS (then rpoll POLLOUT, SO_ERROR) */
SV_CM_EXPORT int rconnect(int socket, const struct sockaddr *addr,
                          socklen_t addrlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if (rs->dg != NULL) {
        /* the default destination, as connect(2) on UDP */
        return sv_rs_dg_connect(rs, addr, addrlen);
    }
    switch (rs->state) {
    case RS_INIT:
    case RS_BOUND:
        if ((addr == NULL) || (addrlen < sizeof(struct sockaddr_in))) {
            errno = EINVAL;
            return -1;
        }
        if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, 2000)) {
            return sv_rs_to_error(rs, errno);
        }
        rs->state = RS_RESOLVING;
        break;
    case RS_RESOLVING:
    case RS_CONNECTING:
        errno = EALREADY;
        return -1;
    case RS_CONNECTED:
        errno = EISCONN;
        return -1;
    default:
        errno = rs->err ? rs->err : EINVAL;
        return -1;
    }
    if (rs->nonblock) {
        errno = EINPROGRESS;
        return -1;
    }
    while ((rs->state == RS_RESOLVING) || (rs->state == RS_CONNECTING)) {
        struct pollfd pfd = { .fd = rs->fd, .events = POLLIN };

        poll(&pfd, 1, -1);
        sv_rs_cm_progress(rs);
    }
    if (rs->state != RS_CONNECTED) {
        errno = rs->err;
        rs->err = 0;
        return -1;
    }
    return 0;
}

/* SHUT_WR sends FIN (the peer's rrecv gives 0 once the data before it is
 * read); SHUT_RD makes our rrecv give 0 */
SV_CM_EXPORT int rshutdown(int socket, int how)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((how != SHUT_RD) && (how != SHUT_WR) && (how != SHUT_RDWR)) {
        errno = EINVAL;
        return -1;
    }
    if ((rs->state != RS_CONNECTED) || (rs->dg != NULL)) {
        errno = ENOTCONN;
        return -1;
    }
    if (how != SHUT_WR) {
        rs->rd_shut = 1;
    }
    if ((how != SHUT_RD) && !rs->fin_sent) {
        while (sv_rs_send_ctrl(rs, RS_IMM_FIN) && (errno == EAGAIN)) {
            if (sv_rs_wait(rs, POLLOUT) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

SV_CM_EXPORT int rclose(int socket)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((rs->state == RS_CONNECTED) && (rs->dg == NULL)) {
        if (!rs->fin_sent && !rs->disc) {
            sv_rs_send_ctrl(rs, RS_IMM_FIN);
        }
        /* what was sent reaches the peer before the disconnect */
        sv_rs_drain_sends(rs, 2000);
        rdma_disconnect(rs->id);
    }
    sv_rs_free(rs);
    return 0;
}

SV_CM_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
                              socklen_t *addrlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((addr == NULL) || (addrlen == NULL)) {
        errno = EFAULT;
        return -1;
    }
    if (rs->state != RS_CONNECTED) {
        errno = ENOTCONN;
        return -1;
    }
    if (rs->dg != NULL) {
        sv_rs_copy_addr(addr, addrlen,
                        (const struct sockaddr *)sv_rs_dg_peer(rs));
        return 0;
    }
    sv_rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
    return 0;
}

SV_CM_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
                              socklen_t *addrlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    /* rspreload asks for the length alone (NULL address, length 0) */
    if ((addrlen == NULL) || ((addr == NULL) && (*addrlen > 0))) {
        errno = EFAULT;
        return -1;
    }
    if (rs->dg != NULL) {
        return getsockname(rs->fd, addr, addrlen); /* the UDP socket's */
    }
    sv_rs_copy_addr(addr, addrlen, rdma_get_local_addr(rs->id));
    return 0;
}

/* rsocket(7): the socket options programs set are accepted; buffer sizes,
 * inline size, queue sizes and keepalive change nothing here */
SV_CM_EXPORT int rsetsockopt(int socket, int level, int optname,
                             const void *optval, socklen_t optlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((optval == NULL) && (optlen > 0)) {
        errno = EFAULT;
        return -1;
    }
    switch (level) {
    case SOL_SOCKET:
    case IPPROTO_TCP:
    case IPPROTO_IPV6:
    case SOL_RDMA:
        return 0;
    default:
        errno = ENOPROTOOPT;
        return -1;
    }
}

SV_CM_EXPORT int rgetsockopt(int socket, int level, int optname,
                             void *optval, socklen_t *optlen)
{
    sv_rs_t *rs = sv_rs_get(socket);
    int val     = 0;

    if (rs == NULL) {
        return -1;
    }
    if ((optval == NULL) || (optlen == NULL) || (*optlen < sizeof(int))) {
        errno = EINVAL;
        return -1;
    }
    if ((level == SOL_SOCKET) && (optname == SO_ERROR)) {
        if (rs->state == RS_RESOLVING || rs->state == RS_CONNECTING) {
            sv_rs_cm_progress(rs);
        }
        val     = rs->err;
        rs->err = 0;
    } else if ((level == SOL_SOCKET) &&
               ((optname == SO_RCVBUF) || (optname == SO_SNDBUF))) {
        val = RS_SLOT_SIZE * RS_DATA_SLOTS;
    } else if ((level == IPPROTO_TCP) && (optname == TCP_MAXSEG)) {
        val = RS_SLOT_SIZE;
    } else if ((level != SOL_SOCKET) && (level != IPPROTO_TCP) &&
               (level != SOL_RDMA)) {
        errno = ENOPROTOOPT;
        return -1;
    }
    *(int *)optval = val;
    *optlen        = sizeof(int);
    return 0;
}

SV_CM_EXPORT int rfcntl(int socket, int cmd, ...)
{
    sv_rs_t *rs = sv_rs_get(socket);
    va_list ap;
    long arg;

    if (rs == NULL) {
        return -1;
    }
    va_start(ap, cmd);
    arg = va_arg(ap, long);
    va_end(ap);
    switch (cmd) {
    case F_GETFL:
        return O_RDWR | (rs->nonblock ? O_NONBLOCK : 0);
    case F_SETFL:
        rs->nonblock = !!(arg & O_NONBLOCK);
        return 0;
    case F_GETFD:
    case F_SETFD:
        return 0;
    default:
        errno = EINVAL;
        return -1;
    }
}
