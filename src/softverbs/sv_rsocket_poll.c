/*
 * softverbs rsockets: rpoll/rselect over rsockets and ordinary fds, and
 * the iomap calls (not offered yet, man rsocket(7)). rpoll first makes progress on every
 * rsocket and returns at once when one is ready (as rdma-core's rpoll,
 * which polls before it blocks); otherwise it arms the CQs and waits in
 * poll(2) on the ordinary fds, each rsocket's CM channel fd and its
 * completion channel fd, then checks again.
 */
#include "sv_cm.h"
#include "sv_rsocket.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

static long sv_rs_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* readiness of every entry; ordinary fds through poll(2) with timeout 0 */
static int sv_rs_poll_check(struct pollfd *fds, nfds_t nfds)
{
    int ready = 0;
    nfds_t i;

    for (i = 0; i < nfds; i++) {
        sv_rs_t *rs = (fds[i].fd >= 0) ? sv_rs_get(fds[i].fd) : NULL;

        if (rs != NULL) {
            fds[i].revents = sv_rs_revents(rs, fds[i].events);
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

/* riomap/riowrite (rsocket(7)): the peer's riowrite must land in the
 * mapped buffer without the owner calling into rsockets (riostream spins
 * on the buffer's last byte), i.e. a one-sided RDMA write into memory
 * announced to the peer. Not offered yet: ENOSYS, as before rsockets. */
SV_CM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot,
                          int flags, off_t offset)
{
    if (sv_rs_get(socket) == NULL) {
        return -1;
    }
    errno = ENOSYS;
    return -1;
}

SV_CM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
    if (sv_rs_get(socket) == NULL) {
        return -1;
    }
    errno = ENOSYS;
    return -1;
}

SV_CM_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
                             off_t offset, int flags)
{
    if (sv_rs_get(socket) == NULL) {
        return (size_t)-1;
    }
    errno = ENOSYS;
    return (size_t)-1;
}
