/*
 * softverbs rsockets: the data path (man rsocket(7)). A message is a
 * SEND_WITH_IMM of at most RS_SLOT_SIZE bytes into one of the peer's
 * posted receive buffers; the sender spends one credit per data message
 * and the receiver returns a credit when the application has read a
 * buffer empty, in the immediate of its next message or, when half the
 * credits are owed, in a zero-length credit message (RS_CTRL_SLOTS extra
 * receives take those and FIN, so they never need a credit). Reads and
 * writes may be partial, as on a TCP socket; a blocking call waits in
 * rpoll; a non-blocking one gives EAGAIN (rdma-core does the same).
 */
#include "sv_cm.h"
#include "sv_rsocket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <stdio.h>

int sv_rs_res_create(sv_rs_t *rs, struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr attr;
    unsigned i;

    rs->pd     = ibv_alloc_pd(id->verbs);
    rs->cc     = (rs->pd != NULL) ? ibv_create_comp_channel(id->verbs) : NULL;
    rs->cq     = (rs->cc != NULL) ?
                 ibv_create_cq(id->verbs, RS_SQ_DEPTH + RS_RX_SLOTS, rs,
                               rs->cc, 0) : NULL;
    rs->rx_buf = malloc((size_t)RS_SLOT_SIZE * RS_RX_SLOTS);
    rs->tx_buf = malloc((size_t)RS_SLOT_SIZE * RS_DATA_SLOTS);
    if ((rs->cq == NULL) || (rs->rx_buf == NULL) || (rs->tx_buf == NULL)) {
        goto err;
    }
    fcntl(rs->cc->fd, F_SETFL, fcntl(rs->cc->fd, F_GETFL) | O_NONBLOCK);
    rs->rx_mr = ibv_reg_mr(rs->pd, rs->rx_buf,
                           (size_t)RS_SLOT_SIZE * RS_RX_SLOTS,
                           IBV_ACCESS_LOCAL_WRITE);
    rs->tx_mr = ibv_reg_mr(rs->pd, rs->tx_buf,
                           (size_t)RS_SLOT_SIZE * RS_DATA_SLOTS, 0);
    if ((rs->rx_mr == NULL) || (rs->tx_mr == NULL)) {
        goto err;
    }
    memset(&attr, 0, sizeof(attr));
    attr.send_cq          = rs->cq;
    attr.recv_cq          = rs->cq;
    attr.qp_type          = IBV_QPT_RC;
    attr.cap.max_send_wr  = RS_SQ_DEPTH;
    attr.cap.max_recv_wr  = RS_RX_SLOTS;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id, rs->pd, &attr)) {
        goto err;
    }
    for (i = 0; i < RS_RX_SLOTS; i++) {
        struct ibv_sge sge = {
            .addr   = (uintptr_t)(rs->rx_buf + (size_t)i * RS_SLOT_SIZE),
            .length = RS_SLOT_SIZE,
            .lkey   = rs->rx_mr->lkey };
        struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
        struct ibv_recv_wr *bad;

        if (ibv_post_recv(id->qp, &wr, &bad)) {
            goto err;
        }
    }
    return 0;

err:
    if (errno == 0) {
        errno = ENOMEM;
    }
    sv_rs_res_destroy(rs);
    return -1;
}

void sv_rs_res_destroy(sv_rs_t *rs)
{
    int err = errno;


    if ((rs->id != NULL) && (rs->id->qp != NULL)) {
        rdma_destroy_qp(rs->id);
    }
    if (rs->rx_mr != NULL) {
        ibv_dereg_mr(rs->rx_mr);
    }
    if (rs->tx_mr != NULL) {
        ibv_dereg_mr(rs->tx_mr);
    }
    if (rs->cq != NULL) {
        ibv_destroy_cq(rs->cq);
    }
    if (rs->cc != NULL) {
        ibv_destroy_comp_channel(rs->cc);
    }
    if (rs->pd != NULL) {
        ibv_dealloc_pd(rs->pd);
    }
    free(rs->rx_buf);
    free(rs->tx_buf);
    rs->rx_mr = rs->tx_mr = NULL;
    rs->cq    = NULL;
    rs->cc    = NULL;
    rs->pd    = NULL;
    rs->rx_buf = rs->tx_buf = NULL;
    errno = err;
}

static int sv_rs_post_send(sv_rs_t *rs, uint64_t wr_id, void *addr,
                           uint32_t len, uint32_t imm)
{
    struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
                           .lkey = rs->tx_mr->lkey };
    struct ibv_send_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id      = wr_id;
    wr.sg_list    = &sge;
    wr.num_sge    = (len > 0) ? 1 : 0;
    wr.opcode     = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data   = htonl(imm | rs->credits_owed);
    if (ibv_post_send(rs->id->qp, &wr, &bad)) {
        errno = ECONNRESET;
        return -1;
    }
    rs->credits_owed = 0;
    rs->tx_inflight++;
    return 0;
}

static int sv_rs_repost(sv_rs_t *rs, uint32_t slot)
{
    struct ibv_sge sge = {
        .addr   = (uintptr_t)(rs->rx_buf + (size_t)slot * RS_SLOT_SIZE),
        .length = RS_SLOT_SIZE,
        .lkey   = rs->rx_mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
    struct ibv_recv_wr *bad;

    return ibv_post_recv(rs->id->qp, &wr, &bad);
}

static void sv_rs_on_iomap(sv_rs_t *rs, const char *msg, uint32_t len);

static void sv_rs_on_recv(sv_rs_t *rs, struct ibv_wc *wc)
{
    uint32_t imm  = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
    uint32_t slot = (uint32_t)wc->wr_id;
    unsigned tail;

    rs->tx_credits += imm & RS_IMM_CREDITS;
    if (imm & RS_IMM_IOMAP) {
        sv_rs_on_iomap(rs, rs->rx_buf + (size_t)slot * RS_SLOT_SIZE,
                       wc->byte_len);
        sv_rs_repost(rs, slot);
        rs->credits_owed++;
    } else if (wc->byte_len > 0) {
        tail              = (rs->rx_head + rs->rx_count) % RS_RX_SLOTS;
        rs->rx_slot[tail] = slot;
        rs->rx_len[tail]  = wc->byte_len;
        rs->rx_count++;
    } else {
        sv_rs_repost(rs, slot);
    }
    if (imm & RS_IMM_FIN) {
        rs->fin_rcvd = 1;
    }
}


/* the peer's riomap: a target for our riowrite (same offset: replaced) */
static void sv_rs_on_iomap(sv_rs_t *rs, const char *msg, uint32_t len)
{
    sv_rs_iomap_msg_t m;
    int i, free_i = -1;

    if (len < sizeof(m)) {
        return;
    }
    memcpy(&m, msg, sizeof(m));
    for (i = 0; i < RS_MAX_IOMAPS; i++) {
        if (rs->riomap[i].valid && (rs->riomap[i].offset == m.offset)) {
            free_i = i;
            break;
        }
        if (!rs->riomap[i].valid && (free_i < 0)) {
            free_i = i;
        }
    }
    if (free_i >= 0) {
        rs->riomap[free_i].offset = m.offset;
        rs->riomap[free_i].addr   = m.addr;
        rs->riomap[free_i].len    = m.len;
        rs->riomap[free_i].rkey   = m.rkey;
        rs->riomap[free_i].valid  = 1;
    }
}

/* half the credits owed: a credit message (it needs no credit itself) */
static void sv_rs_return_credits(sv_rs_t *rs)
{
    if ((rs->credits_owed >= RS_DATA_SLOTS / 2) && !rs->disc &&
        (rs->tx_inflight < RS_SQ_DEPTH) && (rs->id->qp != NULL)) {
        sv_rs_post_send(rs, RS_WRID_CTRL, NULL, 0, 0);
    }
}

/* reap completions; a failed one breaks the connection (ECONNRESET) */
int sv_rs_cq_progress(sv_rs_t *rs)
{
    struct ibv_wc wc[16];
    int n, i;

    if (rs->cq == NULL) {
        return 0;
    }
    while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
        for (i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                if (wc[i].status != IBV_WC_WR_FLUSH_ERR || !rs->disc) {
                    rs->disc = 1;
                }
                if (!(wc[i].opcode & IBV_WC_RECV)) {
                    rs->tx_inflight--;
                }
                if (rs->state == RS_CONNECTED && !rs->fin_rcvd) {
                    rs->err = ECONNRESET;
                }
                continue;
            }
            if (wc[i].opcode & IBV_WC_RECV) {
                sv_rs_on_recv(rs, &wc[i]);
            } else {
                rs->tx_inflight--;
                if (wc[i].wr_id != RS_WRID_CTRL) {
                    rs->tx_data_inflight--;
                }
            }
        }
    }
    sv_rs_return_credits(rs);
    return 0;
}

/* a zero-length message: credits, FIN */
int sv_rs_send_ctrl(sv_rs_t *rs, uint32_t imm)
{
    sv_rs_cq_progress(rs);
    if (rs->tx_inflight >= RS_SQ_DEPTH) {
        errno = EAGAIN;
        return -1;
    }
    if (sv_rs_post_send(rs, RS_WRID_CTRL, NULL, 0, imm)) {
        return -1;
    }
    if (imm & RS_IMM_FIN) {
        rs->fin_sent = 1;
    }
    return 0;
}

int sv_rs_can_send(sv_rs_t *rs)
{
    return (rs->tx_credits > 0) && (rs->tx_data_inflight < RS_DATA_SLOTS) &&
           (rs->tx_inflight < RS_SQ_DEPTH - RS_CTRL_SLOTS);
}

void sv_rs_drain_sends(sv_rs_t *rs, int timeout_ms)
{
    int i;

    for (i = 0; (i < timeout_ms) && (rs->tx_inflight > 0) && !rs->disc; i++) {
        sv_rs_cq_progress(rs);
        if (rs->tx_inflight > 0) {
            usleep(1000);
        }
    }
}

/* copy out of the received buffers; returns bytes or -1 with EAGAIN */
static ssize_t sv_rs_recv_iov(sv_rs_t *rs, const struct iovec *iov,
                              int iovcnt, int flags)
{
    int peek = !!(flags & MSG_PEEK);
    unsigned head = rs->rx_head, count = rs->rx_count, off = rs->rx_off;
    size_t done = 0, n;
    int i;

    for (i = 0; (i < iovcnt) && count; i++) {
        size_t ioff = 0;

        while ((ioff < iov[i].iov_len) && count) {
            uint32_t slot = rs->rx_slot[head];
            n = rs->rx_len[head] - off;
            if (n > iov[i].iov_len - ioff) {
                n = iov[i].iov_len - ioff;
            }
            memcpy((char *)iov[i].iov_base + ioff,
                   rs->rx_buf + (size_t)slot * RS_SLOT_SIZE + off, n);
            ioff += n;
            done += n;
            off  += n;
            if (off == rs->rx_len[head]) {
                if (!peek) {
                    sv_rs_repost(rs, slot);
                    rs->credits_owed++;
                }
                head = (head + 1) % RS_RX_SLOTS;
                count--;
                off  = 0;
            }
        }
    }
    if (!peek) {
        rs->rx_head  = head;
        rs->rx_count = count;
        rs->rx_off   = off;
        sv_rs_return_credits(rs);
    }
    return done;
}

/* One read: what is there, else (blocking) what comes next */
static ssize_t sv_rs_stream_recv_once(sv_rs_t *rs, const struct iovec *iov,
                                      int iovcnt, int flags)
{
    size_t want = 0;
    ssize_t n;
    int i;

    for (i = 0; i < iovcnt; i++) {
        want += iov[i].iov_len;
    }
    for (;;) {
        if (rs->rd_shut) {
            return 0;
        }
        sv_rs_cq_progress(rs);
        n = sv_rs_recv_iov(rs, iov, iovcnt, flags);
        if (n > 0) {
            return n;
        }
        if ((want == 0) || rs->fin_rcvd || rs->disc) {
            if (rs->disc && !rs->fin_rcvd && rs->err) {
                errno = rs->err; /* broken, not shut down */
                return -1;
            }
            return 0; /* orderly shutdown */
        }
        if (rs->nonblock || (flags & MSG_DONTWAIT)) {
            errno = EAGAIN;
            return -1;
        }
        if (sv_rs_wait(rs, POLLIN) < 0) {
            return -1;
        }
    }
}

/* The stream kind's recvv (sv_rs_ops_t). MSG_WAITALL into one buffer
 * (rrecv's): until it is full, the end of the stream or an error. The
 * sender, when asked, is the connected peer, as rdma-core's rrecvfrom
 * gives it (rgetpeername after a read of some bytes) */
ssize_t sv_rs_stream_recvv(sv_rs_t *rs, const struct iovec *iov, int iovcnt,
                           int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
    struct iovec rest;
    size_t total = 0;
    ssize_t n;

    if (rs->state != RS_CONNECTED) {
        errno = (rs->state == RS_ERROR && rs->err) ? rs->err : ENOTCONN;
        return -1;
    }
    if (!(flags & MSG_WAITALL) || (flags & MSG_PEEK) || (iovcnt != 1)) {
        n = sv_rs_stream_recv_once(rs, iov, iovcnt, flags);
    } else {
        do {
            rest.iov_base = (char *)iov[0].iov_base + total;
            rest.iov_len  = iov[0].iov_len - total;
            n = sv_rs_stream_recv_once(rs, &rest, 1, flags & ~MSG_WAITALL);
            total += (n > 0) ? n : 0;
        } while ((n > 0) && (total < iov[0].iov_len));
        n = (total > 0) ? (ssize_t)total : n;
    }
    if ((n > 0) && (from != NULL) && (fromlen != NULL)) {
        sv_rs_copy_addr(from, fromlen, rdma_get_peer_addr(rs->id));
    }
    return n;
}

/* The stream kind's sendv (sv_rs_ops_t): to is ignored, as a connected
 * TCP socket ignores it. Copies into send buffers, one message per
 * RS_SLOT_SIZE; partial writes as on TCP when non-blocking */
ssize_t sv_rs_stream_sendv(sv_rs_t *rs, const struct iovec *iov, int iovcnt,
                           int flags, const struct sockaddr *to,
                           socklen_t tolen)
{
    size_t total = 0, ioff = 0;
    int i = 0;

    if (rs->state != RS_CONNECTED) {
        errno = (rs->state == RS_ERROR && rs->err) ? rs->err : ENOTCONN;
        return -1;
    }
    while ((i < iovcnt) && (iov[i].iov_len == 0)) {
        i++;
    }
    while (i < iovcnt) {
        char *slot;
        uint32_t len = 0;

        if (rs->fin_sent || rs->disc) {
            if (total) {
                return total;
            }
            errno = EPIPE;
            return -1;
        }
        sv_rs_cq_progress(rs);
        if (!sv_rs_can_send(rs)) {
            if (total > 0 && (rs->nonblock || (flags & MSG_DONTWAIT))) {
                return total;
            }
            if (rs->nonblock || (flags & MSG_DONTWAIT)) {
                errno = EAGAIN;
                return -1;
            }
            if (sv_rs_wait(rs, POLLOUT) < 0) {
                return total ? (ssize_t)total : -1;
            }
            continue;
        }
        slot = rs->tx_buf + (size_t)rs->tx_next * RS_SLOT_SIZE;
        while ((i < iovcnt) && (len < RS_SLOT_SIZE)) {
            size_t n = iov[i].iov_len - ioff;

            if (n > RS_SLOT_SIZE - len) {
                n = RS_SLOT_SIZE - len;
            }
            memcpy(slot + len, (char *)iov[i].iov_base + ioff, n);
            len  += n;
            ioff += n;
            if (ioff == iov[i].iov_len) {
                i++;
                ioff = 0;
            }
        }
        if (sv_rs_post_send(rs, rs->tx_next, slot, len, 0)) {
            return total ? (ssize_t)total : -1;
        }
        rs->tx_credits--;
        rs->tx_data_inflight++;
        rs->tx_next = (rs->tx_next + 1) % RS_DATA_SLOTS;
        total += len;
    }
    return total;
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
