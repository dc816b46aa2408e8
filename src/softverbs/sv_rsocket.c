/*
 * softverbs rsockets: what every socket kind shares (man rsocket(7)): the
 * table that maps a socket number to its socket, rpoll and rselect over
 * rsockets and ordinary fds, the blocking wait of one socket, and the
 * data calls (rrecv, rsend and their relatives), which hand the work to
 * the socket's kind through its sv_rs_ops_t. rpoll first makes progress
 * on every rsocket and returns at once when one is ready (as rdma-core's
 * rpoll, which polls before it blocks); otherwise it arms the CQs and
 * waits in poll(2) on the ordinary fds, each rsocket's CM channel fd and
 * its completion channel fd, then checks again. The lowest of the
 * rsocket files: it calls none of the others.
 */
#include "sv_cm.h"
#include "sv_rsocket.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

static pthread_mutex_t sv_rs_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_rs_t **sv_rs_table;
static int sv_rs_table_len;

sv_rs_t *sv_rs_get(int fd)
{
    sv_rs_t *rs = NULL;

    pthread_mutex_lock(&sv_rs_lock);
    if ((fd >= 0) && (fd < sv_rs_table_len)) {
        rs = sv_rs_table[fd];
    }
    pthread_mutex_unlock(&sv_rs_lock);
    if (rs == NULL) {
        errno = EBADF;
    }
    return rs;
}

int sv_rs_table_set(int fd, sv_rs_t *rs)
{
    sv_rs_t **t;
    int len;

    pthread_mutex_lock(&sv_rs_lock);
    if (fd >= sv_rs_table_len) {
        len = (fd + 64) * 2;
        t   = realloc(sv_rs_table, len * sizeof(*t));
        if (t == NULL) {
            pthread_mutex_unlock(&sv_rs_lock);
            errno = ENOMEM;
            return -1;
        }
        memset(t + sv_rs_table_len, 0, (len - sv_rs_table_len) * sizeof(*t));
        sv_rs_table     = t;
        sv_rs_table_len = len;
    }
    sv_rs_table[fd] = rs;
    pthread_mutex_unlock(&sv_rs_lock);
    return 0;
}

/* readiness of every entry; ordinary fds through poll(2) with timeout 0 */
static int sv_rs_poll_check(struct pollfd *fds, nfds_t nfds)
{
    int ready = 0;
    nfds_t i;

    for (i = 0; i < nfds; i++) {
        sv_rs_t *rs = (fds[i].fd >= 0) ? sv_rs_get(fds[i].fd) : NULL;

        if (rs != NULL) {
            fds[i].revents = rs->ops->revents(rs, fds[i].events);
        } else if (fds[i].fd < 0) {
            fds[i].revents = 0;
        } else {
            struct pollfd p = { .fd = fds[i].fd, .events = fds[i].events };

            fds[i].revents = (poll(&p, 1, 0) > 0) ? p.revents : 0;
        }
        ready += (fds[i].revents != 0);
    }
    return ready;
}

/* ask for a completion event; a completion that came meanwhile counts */
static void sv_rs_arm(sv_rs_t *rs)
{
    if ((rs->cq != NULL) && !rs->armed) {
        ibv_req_notify_cq(rs->cq, 0);
        rs->armed = 1;
    }
}

static void sv_rs_disarm(sv_rs_t *rs)
{
    struct ibv_cq *cq;
    void *ctx;

    if ((rs->cc != NULL) && (ibv_get_cq_event(rs->cc, &cq, &ctx) == 0)) {
        ibv_ack_cq_events(cq, 1);
        rs->armed = 0;
    }
}

SV_CM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    long deadline = (timeout > 0) ? sv_rs_now_ms() + timeout : 0;
    struct pollfd *pfd;
    nfds_t i, n;
    int ret, wait;

    if ((fds == NULL) && (nfds > 0)) {
        errno = EFAULT;
        return -1;
    }
    pfd = calloc(2 * nfds + 1, sizeof(*pfd));
    if (pfd == NULL) {
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        ret = sv_rs_poll_check(fds, nfds);
        if ((ret != 0) || (timeout == 0)) {
            break;
        }
        for (i = 0, n = 0; i < nfds; i++) {
            sv_rs_t *rs = (fds[i].fd >= 0) ? sv_rs_get(fds[i].fd) : NULL;

            if (rs == NULL) {
                pfd[n++] = fds[i];
                continue;
            }
            pfd[n].fd       = rs->fd;
            pfd[n++].events = POLLIN;
            if (rs->cc != NULL) {
                sv_rs_arm(rs);
                pfd[n].fd       = rs->cc->fd;
                pfd[n++].events = POLLIN;
            }
        }
        /* a completion between the check and the arming */
        ret = sv_rs_poll_check(fds, nfds);
        if (ret != 0) {
            break;
        }
        wait = (timeout < 0) ? -1 : (int)(deadline - sv_rs_now_ms());
        if ((timeout > 0) && (wait <= 0)) {
            break;
        }
        /* bounded: the CM's events are polled too, at least every 100ms */
        if ((wait < 0) || (wait > 100)) {
            wait = 100;
        }
        if ((poll(pfd, n, wait) < 0) && (errno == EINTR)) {
            ret = -1;
            break;
        }
        for (i = 0; i < nfds; i++) {
            sv_rs_t *rs = (fds[i].fd >= 0) ? sv_rs_get(fds[i].fd) : NULL;

            if ((rs != NULL) && rs->armed) {
                sv_rs_disarm(rs);
            }
        }
    }
    free(pfd);
    return ret;
}

/* rselect: rpoll over the fds of the sets */
SV_CM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
                         fd_set *exceptfds, struct timeval *timeout)
{
    struct pollfd *fds;
    int i, n = 0, ret, to;

    if ((nfds < 0) || (nfds > FD_SETSIZE)) {
        errno = EINVAL;
        return -1;
    }
    fds = calloc(nfds + 1, sizeof(*fds));
    if (fds == NULL) {
        errno = ENOMEM;
        return -1;
    }
    for (i = 0; i < nfds; i++) {
        short ev = 0;

        ev |= (readfds && FD_ISSET(i, readfds)) ? POLLIN : 0;
        ev |= (writefds && FD_ISSET(i, writefds)) ? POLLOUT : 0;
        ev |= (exceptfds && FD_ISSET(i, exceptfds)) ? POLLPRI : 0;
        if (ev) {
            fds[n].fd       = i;
            fds[n++].events = ev;
        }
    }
    to  = (timeout == NULL) ? -1 :
          (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
    ret = rpoll(fds, n, to);
    if (ret >= 0) {
        ret = 0;
        if (readfds) {
            FD_ZERO(readfds);
        }
        if (writefds) {
            FD_ZERO(writefds);
        }
        if (exceptfds) {
            FD_ZERO(exceptfds);
        }
        for (i = 0; i < n; i++) {
            if (readfds && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                FD_SET(fds[i].fd, readfds);
                ret++;
            }
            if (writefds && (fds[i].revents & (POLLOUT | POLLERR))) {
                FD_SET(fds[i].fd, writefds);
                ret++;
            }
            if (exceptfds && (fds[i].revents & POLLPRI)) {
                FD_SET(fds[i].fd, exceptfds);
                ret++;
            }
        }
    }
    free(fds);
    return ret;
}

/* A blocking call's wait for one socket: rpoll, which makes the progress
 * of the socket's kind */
int sv_rs_wait(sv_rs_t *rs, short events)
{
    struct pollfd pfd = { .fd = rs->fd, .events = events };

    return rpoll(&pfd, 1, -1);
}

/* The data calls (rsocket(7)): the socket's kind does the work
 * (sv_rs_ops_t) */
static ssize_t sv_rs_recvv_on(sv_rs_t *rs, const struct iovec *iov,
                              int iovcnt, int flags, struct sockaddr *from,
                              socklen_t *fromlen)
{
    if ((iovcnt < 0) || ((iov == NULL) && (iovcnt > 0))) {
        errno = EINVAL;
        return -1;
    }
    return rs->ops->recvv(rs, iov, iovcnt, flags, from, fromlen);
}

static ssize_t sv_rs_recvv(int socket, const struct iovec *iov, int iovcnt,
                           int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    return sv_rs_recvv_on(rs, iov, iovcnt, flags, from, fromlen);
}

static ssize_t sv_rs_sendv(int socket, const struct iovec *iov, int iovcnt,
                           int flags, const struct sockaddr *to,
                           socklen_t tolen)
{
    sv_rs_t *rs = sv_rs_get(socket);

    if (rs == NULL) {
        return -1;
    }
    if ((iovcnt < 0) || ((iov == NULL) && (iovcnt > 0))) {
        errno = EINVAL;
        return -1;
    }
    return rs->ops->sendv(rs, iov, iovcnt, flags, to, tolen);
}

SV_CM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
                               struct sockaddr *src_addr, socklen_t *addrlen)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    if ((buf == NULL) && (len > 0)) {
        errno = EFAULT;
        return -1;
    }
    return sv_rs_recvv(socket, &iov, 1, flags, src_addr, addrlen);
}

SV_CM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
    return rrecvfrom(socket, buf, len, flags, NULL, NULL);
}

/* A datagram's sender is filled in as recvmsg(2) fills it on UDP; a
 * stream's is not, as on TCP (msg_namelen 0). rdma-core's rrecvmsg never
 * fills msg_name and leaves msg_namelen as it was; its rrecvfrom fills the
 * stream's peer, and so does ours. */
SV_CM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
    sv_rs_t *rs;

    if (msg == NULL) {
        errno = EFAULT;
        return -1;
    }
    rs = sv_rs_get(socket);
    if (rs == NULL) {
        return -1;
    }
    msg->msg_controllen = 0;
    msg->msg_flags      = 0;
    if (rs->dg == NULL) {
        msg->msg_namelen = 0;
        return sv_rs_recvv_on(rs, msg->msg_iov, msg->msg_iovlen, flags,
                              NULL, NULL);
    }
    return sv_rs_recvv_on(rs, msg->msg_iov, msg->msg_iovlen, flags,
                          msg->msg_name, &msg->msg_namelen);
}

SV_CM_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
    return rrecv(socket, buf, count, 0);
}

SV_CM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
    return sv_rs_recvv(socket, iov, iovcnt, 0, NULL, NULL);
}

/* A datagram socket sends to dest_addr, else to its connected peer; a
 * connected stream socket ignores the address (as TCP does) */
SV_CM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len,
                             int flags, const struct sockaddr *dest_addr,
                             socklen_t addrlen)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    if ((buf == NULL) && (len > 0)) {
        errno = EFAULT;
        return -1;
    }
    return sv_rs_sendv(socket, &iov, 1, flags, dest_addr, addrlen);
}

SV_CM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
    return rsendto(socket, buf, len, flags, NULL, 0);
}

SV_CM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg,
                              int flags)
{
    if (msg == NULL) {
        errno = EFAULT;
        return -1;
    }
    return sv_rs_sendv(socket, msg->msg_iov, msg->msg_iovlen, flags,
                       msg->msg_name, msg->msg_namelen);
}

SV_CM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
    return rsend(socket, buf, count, 0);
}

SV_CM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov,
                             int iovcnt)
{
    return sv_rs_sendv(socket, iov, iovcnt, 0, NULL, 0);
}
