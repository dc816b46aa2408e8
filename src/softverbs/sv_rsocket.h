/*
 * softverbs rsockets: librdmacm's socket-like API (man rsocket(7)) over
 * softverbs RC QPs (stream sockets; datagram sockets over UD are
 * sv_rsocket_dgram.c's). Only softverbs talks to softverbs, so the wire protocol
 * is simpler than rdma-core's (which RDMA-writes with immediate into the
 * peer's target buffer): two-sided SEND_WITH_IMM into RS_RX_SLOTS posted
 * receive buffers, flow-controlled by credits (one per data slot), the
 * immediate carrying credits returned and the FIN / IOMAP flags. riowrite
 * is a one-sided RDMA WRITE into a buffer the peer announced by riomap.
 *
 * An rsocket is named by its CM event channel's fd, as in rdma-core, so
 * the number is a real, unique fd; rpoll waits on that fd (CM events) and
 * on the completion channel's fd (data, credits).
 */
#ifndef SV_RSOCKET_H_
#define SV_RSOCKET_H_

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/uio.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "sv_cm.h"

#define RS_SLOT_SIZE   32768u  /* bytes of one message */
#define RS_DATA_SLOTS  32      /* credits: data messages in flight */
#define RS_CTRL_SLOTS  4       /* extra receives for credit/FIN messages */
#define RS_RX_SLOTS    (RS_DATA_SLOTS + RS_CTRL_SLOTS)
#define RS_SQ_DEPTH    (RS_DATA_SLOTS + RS_CTRL_SLOTS + 4)

/* immediate data: flags and returned credits */
#define RS_IMM_FIN     0x80000000u
#define RS_IMM_IOMAP   0x40000000u /* payload: an sv_rs_iomap_msg_t */
#define RS_IMM_CREDITS 0x0000ffffu

#define RS_MAX_IOMAPS  16
#define RS_WRID_CTRL   0xffffffffu /* send wr_id of a zero-length message */

/* a riomap'ed buffer: ours (mr set) or the peer's (rkey, addr) */
typedef struct sv_rs_iomap {
    uint64_t       offset;
    uint64_t       addr;
    uint64_t       len;
    uint32_t       rkey;
    uint32_t       valid;
    struct ibv_mr  *mr;
} sv_rs_iomap_t;

/* the announcement of a riomap to the peer */
typedef struct sv_rs_iomap_msg {
    uint64_t offset;
    uint64_t addr;
    uint64_t len;
    uint32_t rkey;
    uint32_t pad;
} sv_rs_iomap_msg_t;

/* per-rsocket state machine (one function per transition,
 * sv_rsocket_conn.c) */
typedef enum {
    RS_INIT,        /* rsocket(): id created */
    RS_BOUND,       /* rbind() */
    RS_LISTENING,   /* rlisten() */
    RS_RESOLVING,   /* rconnect(): address/route resolution under way */
    RS_CONNECTING,  /* connect request sent, waiting for ESTABLISHED */
    RS_CONNECTED,   /* data may flow */
    RS_ERROR,       /* connect failed or connection broken (rs->err) */
} sv_rs_state_t;

struct sv_rs;

/* What differs between the socket kinds (stream over RC: sv_rsocket_conn.c and
 * sv_rsocket_io.c; datagram over UD: sv_rsocket_dgram.c), set when a
 * socket is made, so that the calls every kind shares (sv_rsocket.c)
 * name no kind. Each makes progress first and never blocks except where
 * the socket is blocking (recvv, sendv wait in sv_rs_wait). */
typedef struct sv_rs_ops {
    /* readiness for rpoll: POLLIN, POLLOUT, POLLERR, POLLHUP of events */
    int     (*revents)(struct sv_rs *rs, short events);
    /* from/fromlen (may be NULL): the sender; to (may be NULL): the
     * destination, else the connected peer. -1 with errno on failure */
    ssize_t (*recvv)(struct sv_rs *rs, const struct iovec *iov, int iovcnt,
                     int flags, struct sockaddr *from, socklen_t *fromlen);
    ssize_t (*sendv)(struct sv_rs *rs, const struct iovec *iov, int iovcnt,
                     int flags, const struct sockaddr *to, socklen_t tolen);
} sv_rs_ops_t;

typedef struct sv_rs {
    const sv_rs_ops_t          *ops;     /* of its kind */
    int                        fd;       /* channel fd: the rsocket number */
    int                        domain;
    sv_rs_state_t              state;
    int                        nonblock;
    int                        err;      /* SO_ERROR, errno of a failure */
    struct rdma_event_channel  *ch;
    struct rdma_cm_id          *id;
    /* verbs resources, once resolved or accepted */
    struct ibv_pd              *pd;
    struct ibv_comp_channel    *cc;
    struct ibv_cq              *cq;
    struct ibv_mr              *rx_mr;
    struct ibv_mr              *tx_mr;
    char                       *rx_buf;
    char                       *tx_buf;
    int                        armed;    /* CQ notification requested */
    /* receive side: slots holding data, in arrival order */
    uint32_t                   rx_slot[RS_RX_SLOTS];
    uint32_t                   rx_len[RS_RX_SLOTS];
    unsigned                   rx_head, rx_count, rx_off;
    unsigned                   credits_owed;  /* to return to the peer */
    int                        fin_rcvd;      /* peer shut down writing */
    int                        disc;          /* DISCONNECTED event seen */
    int                        rd_shut;
    /* send side */
    unsigned                   tx_credits;
    unsigned                   tx_next;       /* next data slot */
    unsigned                   tx_data_inflight;
    unsigned                   tx_inflight;   /* all signaled sends */
    int                        fin_sent;
    /* riomap: our mapped buffers and the peer's (targets of riowrite) */
    sv_rs_iomap_t              iomap[RS_MAX_IOMAPS];
    sv_rs_iomap_t              riomap[RS_MAX_IOMAPS];
    /* a datagram socket (sv_rsocket_dgram.c): its state; NULL for a
     * stream socket */
    struct sv_rs_dg            *dg;
} sv_rs_t;

/* Monotonic milliseconds */
static inline long sv_rs_now_ms(void)
{
    return (long)(sv_cm_now_ns() / 1000000ull);
}

/* Copy a socket address out as getpeername(2) does: at most *len bytes,
 * *len set to its size (a NULL address with length 0 asks for the size) */
static inline void sv_rs_copy_addr(struct sockaddr *dst, socklen_t *len,
                                   const struct sockaddr *src)
{
    socklen_t n = sv_cm_addr_len(src);

    if (len != NULL) {
        if (dst != NULL) {
            memcpy(dst, src, (*len < n) ? *len : n);
        }
        *len = n;
    }
}

/* The files call one way, from the ground up (test/integration/layers.sh):
 * sv_rsocket.c < sv_rsocket_dgram.c, sv_rsocket_io.c < sv_rsocket_conn.c */

/* sv_rsocket.c: the socket table, rpoll, and the calls every kind
 * shares */
sv_rs_t *sv_rs_get(int fd);
int sv_rs_table_set(int fd, sv_rs_t *rs);
int sv_rs_wait(sv_rs_t *rs, short events);

/* sv_rsocket_io.c: a stream socket's queues and data */
int sv_rs_res_create(sv_rs_t *rs, struct rdma_cm_id *id);
void sv_rs_res_destroy(sv_rs_t *rs);
int sv_rs_cq_progress(sv_rs_t *rs);
int sv_rs_send_ctrl(sv_rs_t *rs, uint32_t imm);
int sv_rs_can_send(sv_rs_t *rs);
void sv_rs_drain_sends(sv_rs_t *rs, int timeout_ms);
ssize_t sv_rs_stream_recvv(sv_rs_t *rs, const struct iovec *iov, int iovcnt,
                           int flags, struct sockaddr *from,
                           socklen_t *fromlen);
ssize_t sv_rs_stream_sendv(sv_rs_t *rs, const struct iovec *iov, int iovcnt,
                           int flags, const struct sockaddr *to,
                           socklen_t tolen);

/* sv_rsocket_dgram.c: datagram sockets over UD */
sv_rs_t *sv_rs_dg_alloc(int domain, int type);
void sv_rs_dg_free(sv_rs_t *rs);
int sv_rs_dg_bind(sv_rs_t *rs, const struct sockaddr *addr, socklen_t len);
int sv_rs_dg_connect(sv_rs_t *rs, const struct sockaddr *addr,
                     socklen_t len);
const struct sockaddr_storage *sv_rs_dg_peer(sv_rs_t *rs);

#endif
