/*
 * softverbs rsockets: rpoll/rselect over rsockets and ordinary fds, and
 * the iomap calls (man rsocket(7)). rpoll first makes progress on every
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
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

long sv_rs_now_ms(void)
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

/* riomap (rsocket(7)): buf becomes a target for the peer's riowrite at
 * the returned offset (-1: chosen here; an offset in use is replaced, as
 * riostream maps offset 0 for every test). The buffer is registered for
 * remote writes and announced to the peer in an IOMAP message, which
 * reaches it before anything sent afterwards. Connected sockets only. */
SV_CM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot,
                          int flags, off_t offset)
{
    sv_rs_t *rs = sv_rs_get(socket);
    sv_rs_iomap_msg_t m;
    char *slot;
    int i, free_i = -1;

    if (rs == NULL) {
        return -1;
    }
    if ((buf == NULL) || (len == 0) || !(prot & PROT_WRITE)) {
        errno = EINVAL;
        return -1;
    }
    if (rs->dg != NULL) {
        errno = EOPNOTSUPP; /* a stream's (rsocket(7)) */
        return -1;
    }
    if (rs->state != RS_CONNECTED) {
        errno = ENOTCONN;
        return -1;
    }
    if (offset == -1) {
        offset = 0;
        for (i = 0; i < RS_MAX_IOMAPS; i++) {
            if (rs->iomap[i].mr && (rs->iomap[i].offset + rs->iomap[i].len >
                                    (uint64_t)offset)) {
                offset = rs->iomap[i].offset + rs->iomap[i].len;
            }
        }
    }
    for (i = 0; i < RS_MAX_IOMAPS; i++) {
        if (rs->iomap[i].mr && (rs->iomap[i].offset == (uint64_t)offset)) {
            ibv_dereg_mr(rs->iomap[i].mr);
            rs->iomap[i].mr = NULL;
        }
        if ((rs->iomap[i].mr == NULL) && (free_i < 0)) {
            free_i = i;
        }
    }
    if (free_i < 0) {
        errno = ENOMEM;
        return -1;
    }
    while (!sv_rs_can_send(rs)) {
        if (rs->disc || rs->fin_sent) {
            errno = EPIPE;
            return -1;
        }
        sv_rs_wait(rs, POLLOUT);
    }
    rs->iomap[free_i].mr = ibv_reg_mr(rs->pd, buf, len,
                                      IBV_ACCESS_LOCAL_WRITE |
                                      IBV_ACCESS_REMOTE_WRITE);
    if (rs->iomap[free_i].mr == NULL) {
        return -1;
    }
    rs->iomap[free_i].offset = offset;
    rs->iomap[free_i].addr   = (uintptr_t)buf;
    rs->iomap[free_i].len    = len;
    memset(&m, 0, sizeof(m));
    m.offset = offset;
    m.addr   = (uintptr_t)buf;
    m.len    = len;
    m.rkey   = rs->iomap[free_i].mr->rkey;
    slot     = rs->tx_buf + (size_t)rs->tx_next * RS_SLOT_SIZE;
    memcpy(slot, &m, sizeof(m));
    if (sv_rs_post_send(rs, rs->tx_next, slot, sizeof(m), RS_IMM_IOMAP)) {
        return -1;
    }
    rs->tx_credits--;
    rs->tx_data_inflight++;
    rs->tx_next = (rs->tx_next + 1) % RS_DATA_SLOTS;
    return offset;
}

/* riounmap: the buffer is no target any more (the peer is not told; a
 * riowrite of it then fails as a remote access error) */
SV_CM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
    sv_rs_t *rs = sv_rs_get(socket);
    int i;

    if (rs == NULL) {
        return -1;
    }
    for (i = 0; i < RS_MAX_IOMAPS; i++) {
        if (rs->iomap[i].mr && (rs->iomap[i].addr == (uintptr_t)buf)) {
            ibv_dereg_mr(rs->iomap[i].mr);
            rs->iomap[i].mr = NULL;
            return 0;
        }
    }
    errno = EINVAL;
    return -1;
}

/* riowrite: RDMA WRITEs (copied through our send buffers) into the peer's
 * riomap'ed buffer at offset; ordered with the stream, so what is sent
 * afterwards finds the data placed. Blocks like rsend (or EAGAIN). */
SV_CM_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
                             off_t offset, int flags)
{
    sv_rs_t *rs = sv_rs_get(socket);
    sv_rs_iomap_t *map = NULL;
    size_t done = 0;
    int i;

    if (rs == NULL) {
        return (size_t)-1;
    }
    if (rs->dg != NULL) {
        errno = EOPNOTSUPP;
        return (size_t)-1;
    }
    if (rs->state != RS_CONNECTED) {
        errno = ENOTCONN;
        return (size_t)-1;
    }
    sv_rs_cq_progress(rs);
    for (i = 0; i < RS_MAX_IOMAPS; i++) {
        if (rs->riomap[i].valid && ((uint64_t)offset >= rs->riomap[i].offset) &&
            ((uint64_t)offset + count <= rs->riomap[i].offset +
                                         rs->riomap[i].len)) {
            map = &rs->riomap[i];
            break;
        }
    }
    if (map == NULL) {
        errno = EINVAL;
        return (size_t)-1;
    }
    while (done < count) {
        size_t n = (count - done < RS_SLOT_SIZE) ? count - done : RS_SLOT_SIZE;
        struct ibv_send_wr wr, *bad;
        struct ibv_sge sge;
        char *slot;

        sv_rs_cq_progress(rs);
        if (rs->disc || rs->fin_sent) {
            errno = EPIPE;
            return done ? done : (size_t)-1;
        }
        if ((rs->tx_data_inflight >= RS_DATA_SLOTS) ||
            (rs->tx_inflight >= RS_SQ_DEPTH - RS_CTRL_SLOTS)) {
            if (rs->nonblock || (flags & MSG_DONTWAIT)) {
                if (done) {
                    return done;
                }
                errno = EAGAIN;
                return (size_t)-1;
            }
            sv_rs_wait(rs, POLLOUT);
            continue;
        }
        slot = rs->tx_buf + (size_t)rs->tx_next * RS_SLOT_SIZE;
        memcpy(slot, (const char *)buf + done, n);
        sge.addr   = (uintptr_t)slot;
        sge.length = n;
        sge.lkey   = rs->tx_mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id               = rs->tx_next;
        wr.sg_list             = &sge;
        wr.num_sge             = 1;
        wr.opcode              = IBV_WR_RDMA_WRITE;
        wr.send_flags          = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = map->addr + (offset + done - map->offset);
        wr.wr.rdma.rkey        = map->rkey;
        if (ibv_post_send(rs->id->qp, &wr, &bad)) {
            errno = ECONNRESET;
            return done ? done : (size_t)-1;
        }
        rs->tx_inflight++;
        rs->tx_data_inflight++;
        rs->tx_next = (rs->tx_next + 1) % RS_DATA_SLOTS;
        done += n;
    }
    return done;
}
