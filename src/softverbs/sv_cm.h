/*
 * softverbs librdmacm: the RDMA connection manager between the processes of
 * one host. What the kernel's CM does with MADs on a fabric (REQ, REP, RTU,
 * REJ, DREQ, DREP) goes here as messages over abstract unix stream
 * sockets: a listening id owns a socket named after the address and port
 * it listens on, a connecting id connects to it. One thread per process
 * (started with the first socket) reads the messages and makes the events,
 * as the kernel's CM does apart from the application: an event channel's
 * fd is readable exactly while events wait on it (sv_cm_chan.c). One
 * recursive lock covers all of the CM's state; every entry point that
 * touches an id takes it (librdmacm is thread-safe: rping's event thread
 * takes events while its main thread disconnects and destroys the id).
 *
 * Address mapping, as IPoIB gives it on a fabric: every IP address of the
 * host (loopback included) reaches the port SOFTVERBS_CM_PORT names
 * (default softverbs0:1); see sv_cm_addr.c.
 */
#ifndef SV_CM_H
#define SV_CM_H

#include "sv_log.h"

#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/un.h>

#define SV_CM_EXPORT __attribute__((visibility("default")))

/* Private data a message carries at most, per rdma_conn_param (IBA CM
 * REQ/REP/REJ private data less the 36-byte CMA header for REQ; see
 * sv_cm_conn.c and sv_cm_conn.h for each limit) */
#define SV_CM_PRIV_MAX 256

enum sv_cm_state {
    SV_CM_IDLE,
    SV_CM_ADDR_BOUND,
    SV_CM_ADDR_RESOLVED,
    SV_CM_ROUTE_RESOLVED,
    SV_CM_LISTEN,
    SV_CM_CONNECT,       /* REQ sent, waiting for REP */
    SV_CM_REQ_RCVD,      /* passive: CONNECT_REQUEST given */
    SV_CM_REP_SENT,      /* passive: accepted, waiting for RTU */
    SV_CM_REP_RCVD,      /* active without QP: CONNECT_RESPONSE given */
    SV_CM_CONNECTED,
    SV_CM_DISCONNECTED,
};

/* The connection's timewait (sv_cm_conn_teardown.c): the IB CM enters it
 * when our DREQ is answered, or when we answer the peer's (rdma_disconnect
 * after its DREQ), and reports TIMEWAIT_EXIT when it ends */
enum sv_cm_tw {
    SV_CM_TW_NONE,
    SV_CM_TW_DREQ_RCVD,  /* DISCONNECTED by the peer: our DREP is due */
    SV_CM_TW_WAIT,       /* in timewait until tw_deadline */
    SV_CM_TW_DONE,
};

/* The packet life time of the path an id resolves (the path record's
 * PacketLifeTime, an exponent of 4.096 us) */
#define SV_CM_PACKET_LIFE_TIME 14

struct sv_cm_channel;
struct sv_cm_mcast;

/* A queued event (the application gets &ev.event) */
struct sv_cm_event {
    struct rdma_cm_event event;
    struct sv_cm_event   *next;
    uint8_t              priv[SV_CM_PRIV_MAX];
};

struct sv_cm_id;

/* What the CM's thread calls when an id's socket is readable (given with
 * sv_cm_channel_watch), and what its timer runs (given with
 * sv_cm_timer_arm: the next deadline, 0 for none) */
typedef void (*sv_cm_input_t)(struct sv_cm_id *id);
typedef uint64_t (*sv_cm_timer_cb_t)(uint64_t now_ns);

struct sv_cm_id {
    struct rdma_cm_id    id;          /* first: handed to the application */
    struct sv_cm_channel *chan;
    int                  sync;        /* created without a channel */
    enum sv_cm_state     state;
    int                  sock;        /* listening or connection socket */
    sv_cm_input_t        input;       /* reads what arrived on sock */
    struct sv_cm_id      *listen;     /* passive: the listener it came from */
    struct sv_cm_id      *next;       /* in chan->ids */
    int                  backlog;
    pid_t                listen_pid;  /* whose listener file it is */
    /* the port it holds (sv_cm_port.c): its description of the registry
     * file and the bytes locked there, 0 when none */
    int                  port_fd;
    off_t                lk_port, lk_class, lk_addr;
    uint8_t              reuseaddr;   /* RDMA_OPTION_ID_REUSEADDR */
    uint8_t              afonly;      /* RDMA_OPTION_ID_AFONLY ... */
    uint8_t              afonly_set;  /* ... if set, else the default */
    uint8_t              ack_timeout; /* RDMA_OPTION_ID_ACK_TIMEOUT ... */
    uint8_t              ack_timeout_set; /* ... if set, else 14 */
    int                  own_cqs;     /* send/recv CQs created by the CM */
    /* a passive endpoint (rdma_create_ep): the QP each request gets */
    struct ibv_qp_init_attr *ep_qp_attr;
    struct ibv_pd        *ep_pd;
    struct ibv_sa_path_rec path;
    /* the peer, from its REQ or REP */
    uint32_t             peer_qpn;
    uint32_t             peer_psn;
    uint16_t             peer_lid;
    union ibv_gid        peer_gid;
    uint8_t              peer_resp_res;
    uint8_t              peer_init_depth;
    uint8_t              peer_rnr_retry;
    uint8_t              peer_retry;
    uint32_t             psn;
    /* the RDMA read/atomic resources of the connection, librdmacm's
     * id_priv->responder_resources/initiator_depth and the kernel CM's
     * cm_id_priv ones (sv_cm_conn_setup.c, sv_cm_resources): the QP's
     * max_dest_rd_atomic at RTR and max_rd_atomic at RTS */
    uint8_t              resp_res;
    uint8_t              init_depth;
    struct rdma_conn_param conn;      /* ours, from connect or accept */
    uint8_t              rx[512];     /* partial message being read */
    uint32_t             rx_len;
    int                  events_out;  /* events given and not acked */
    int                  disc_pending; /* our DREQ went, no answer yet */
    uint64_t             dreq_deadline; /* and its DREP times out then */
    int                  drep_owed;   /* the peer's DREQ came, unanswered */
    enum sv_cm_tw        tw;
    uint64_t             tw_deadline; /* CLOCK_MONOTONIC ns */
    struct sv_cm_mcast   *mcast;       /* groups joined (sv_cm_mcast.c) */
    uint64_t             serial;      /* names it to the CM thread */
    int                  dead;        /* destroyed, events still out */
    int                  freed;       /* claimed by the one who frees it */
    struct sv_cm_id      *all_next;   /* in the process's list of ids */
};

struct sv_cm_channel {
    struct rdma_event_channel ch;     /* ch.fd: an epoll fd over evfd */
    int                  evfd;        /* readable while events are queued */
    pthread_mutex_t      lock;        /* the queue and evfd's count */
    struct sv_cm_event   *head, *tail;
    struct sv_cm_id      *ids;
    int                  destroyed;   /* rdma_destroy_event_channel done */
    struct sv_cm_channel *grave_next; /* destroyed channels (sv_cm_chan.c) */
};

static inline struct sv_cm_id *sv_cm_id(struct rdma_cm_id *id)
{
    return (struct sv_cm_id *)id;
}

/* The CM's files call one way, from the ground up (layers.sh):
 * sv_cm_port.c < sv_cm_chan.c < sv_cm_thread.c < sv_cm_mcast.c <
 * sv_cm_conn.c < sv_cm_qp.c < sv_cm_conn_teardown.c < sv_cm_id.c <
 * sv_cm_conn_setup.c; sv_cm_addr.c and sv_cm_hosts.c below them all */

/* The CM's lock (sv_cm_chan.c): recursive; sv_cm_unlock_all releases it
 * for a wait and returns the depth to give to sv_cm_relock */
void sv_cm_lock(void);
void sv_cm_unlock(void);
int  sv_cm_unlock_all(void);
void sv_cm_relock(int depth);

/* Free a destroyed id once its last event is acknowledged: destroy and
 * the last ack may both get here, one frees */
static inline void sv_cm_id_release(struct sv_cm_id *id)
{
    if (__atomic_exchange_n(&id->freed, 1, __ATOMIC_SEQ_CST) == 0) {
        free(id);
    }
}

/* The CM's random numbers (ports, PSNs), not the application's (under the
 * CM lock; sv_cm_port.c) */
uint32_t sv_cm_rand(void);

/* events (sv_cm_chan.c) */
struct sv_cm_channel *sv_cm_channel_new(void);
void sv_cm_channel_free(struct sv_cm_channel *c);
struct sv_cm_event *sv_cm_event_new(struct sv_cm_id *id,
                                    enum rdma_cm_event_type type, int status);
void sv_cm_event_queue(struct sv_cm_event *ev);
/* id's events not yet got (rdma_migrate_id); with its connection
 * requests' too (rdma_destroy_id) */
struct sv_cm_event *sv_cm_channel_take_events(struct sv_cm_id *id);
struct sv_cm_event *sv_cm_channel_take_all(struct sv_cm_id *id);
/* A synchronous id: wait on its private channel until an event for it
 * arrives (with the CM's lock held, released while waiting); the event is
 * returned (to be acked) */
int  sv_cm_sync_wait(struct sv_cm_id *id, struct rdma_cm_event **ev);
/* A synchronous call's result: the next event of id, acked; 0 when it is
 * expect with status 0, else -1 with errno from the event */
int  sv_cm_sync_result(struct sv_cm_id *id, enum rdma_cm_event_type expect);
/* Drop id's queued events (it is being destroyed) */
void sv_cm_channel_drop(struct sv_cm_channel *c, struct sv_cm_id *id);
/* fork (sv_cm_thread.c's handlers): the destroyed channels' lock; in the
 * child the CM lock and it made anew, the depth to take again returned */
void sv_cm_chan_fork_lock(void);
void sv_cm_chan_fork_unlock(void);
int  sv_cm_chan_fork_child(void);

/* the process's ids and the CM's thread (sv_cm_thread.c) */
struct sv_cm_id *sv_cm_id_alloc(struct sv_cm_channel *chan, void *context,
                                enum rdma_port_space ps,
                                enum ibv_qp_type qp_type);
/* Off the process's list and its channel's (rdma_destroy_id) */
void sv_cm_id_unlink(struct sv_cm_id *id);
/* The live id of a serial, NULL when it was destroyed */
struct sv_cm_id *sv_cm_id_find(uint64_t serial);
/* The first live id (with the CM lock); the next is all_next */
struct sv_cm_id *sv_cm_ids_first(void);
/* The thread reads fd (id's socket) with input */
void sv_cm_channel_watch(struct sv_cm_id *id, int fd, sv_cm_input_t input);
void sv_cm_channel_unwatch(struct sv_cm_id *id, int fd);
/* Wake the CM thread at at_ns (CLOCK_MONOTONIC) if it would sleep longer:
 * it then runs cb (with the CM lock) */
void sv_cm_timer_arm(uint64_t at_ns, sv_cm_timer_cb_t cb);
uint64_t sv_cm_now_ns(void);
/* fork: the devices' lock held across it (sv_cm_addr.c); in the child,
 * that lock made anew */
void sv_cm_devs_lock(void);
void sv_cm_devs_unlock(void);
void sv_cm_devs_fork_child(void);

/* A destroyed id's connection: the peer is told, the socket closed; the
 * id itself (sv_cm_conn_teardown.c, rdma_destroy_id) */
void sv_cm_conn_close(struct sv_cm_id *id);

/* A socket address's length, port and IP (IPv4, IPv6; AF_IB for the
 * length) */
static inline socklen_t sv_cm_addr_len(const struct sockaddr *sa)
{
    return (sa->sa_family == AF_INET6) ? sizeof(struct sockaddr_in6) :
           (sa->sa_family == AF_INET) ? sizeof(struct sockaddr_in) :
           (sa->sa_family == AF_IB) ? sizeof(struct sockaddr_ib) : 0;
}

static inline uint16_t sv_cm_addr_port(const struct sockaddr *sa)
{
    return ntohs((sa->sa_family == AF_INET6) ?
                 ((const struct sockaddr_in6 *)sa)->sin6_port :
                 ((const struct sockaddr_in *)sa)->sin_port);
}

static inline void sv_cm_addr_set_port(struct sockaddr *sa, uint16_t port)
{
    if (sa->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
    } else {
        ((struct sockaddr_in *)sa)->sin_port = htons(port);
    }
}

/* Whether sa is the wildcard address of its family */
static inline int sv_cm_addr_is_any(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6) {
        return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
                       &in6addr_any, sizeof(struct in6_addr));
    }
    return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
           htonl(INADDR_ANY);
}

/* Put the IP address of ip (same family) into src, keeping its port */
static inline void sv_cm_addr_set_src_ip(struct sockaddr *src,
                                         const struct sockaddr *ip)
{
    if (src->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *)src)->sin6_addr =
                ((const struct sockaddr_in6 *)ip)->sin6_addr;
    } else {
        ((struct sockaddr_in *)src)->sin_addr =
                ((const struct sockaddr_in *)ip)->sin_addr;
    }
}

/* addresses and devices (sv_cm_addr.c) */
uint8_t sv_cm_gid_index(struct sv_cm_id *id, union ibv_gid *gid);
void sv_cm_ah_global(struct sv_cm_id *id, struct ibv_ah_attr *ah,
                     const union ibv_gid *dgid);
int  sv_cm_port_active(struct ibv_context *ctx, uint8_t port);
int  sv_cm_addr_device(const struct sockaddr *sa, struct ibv_context **ctx,
                       uint8_t *port);
struct ibv_pd *sv_cm_default_pd(struct ibv_context *ctx);
struct ibv_xrcd *sv_cm_default_xrcd(struct ibv_context *ctx);
int  sv_cm_addr_route(const struct sockaddr *sa, struct ibv_context **ctx,
                      uint8_t *port);

/* the hosts of one registry and the listeners' socket names
 * (sv_cm_hosts.c): SOFTVERBS_SOCKET_DIR or NULL; this host (its network
 * namespace); publish this host's addresses with the LID and GID of the
 * CM's port; find an address's host (1: this one; 0: another, with its
 * LID and GID; -1: unknown); the socket name of (port space, address,
 * port), 0 when its host is unknown; remove a dead listener's file */
const char *sv_cm_sock_dir(void);
/* the registry's tag (SOFTVERBS_SHM hashed), as softverbs' socket and
 * file names carry it */
uint32_t sv_cm_hosts_tag(void);
uint64_t sv_cm_host_key(void);
/* Whether sa is an address of this host (the wildcard counts) */
int  sv_cm_addr_local(const struct sockaddr *sa);
void sv_cm_hosts_publish(struct ibv_context *ctx, uint8_t port);
int  sv_cm_hosts_find(const struct sockaddr *sa, uint64_t *key,
                      uint16_t *lid, union ibv_gid *gid);
socklen_t sv_cm_sock_name(struct sockaddr_un *un, enum rdma_port_space ps,
                          const struct sockaddr *sa, int wildcard);
int  sv_cm_sock_reclaim(const struct sockaddr_un *un, socklen_t len);
void sv_cm_sock_unlink(struct sv_cm_id *id);
/* the address of this host a route to dst leaves from */
int  sv_cm_addr_route_src(const struct sockaddr *dst, struct sockaddr *src);

/* ports held by bound ids, host-wide (sv_cm_port.c): bind sa (port 0:
 * an ephemeral port, written into sa), -1 with errno EADDRINUSE or
 * EADDRNOTAVAIL when another id overlaps; update after the id's address or
 * flags changed; the check of rdma_listen; release (rdma_destroy_id) */
int  sv_cm_port_bind(struct sv_cm_id *id, struct sockaddr *sa);
void sv_cm_port_update(struct sv_cm_id *id);
int  sv_cm_port_listen(struct sv_cm_id *id);
void sv_cm_port_release(struct sv_cm_id *id);

/* multicast (sv_cm_mcast.c) */
int  sv_cm_addr_is_mcast(const struct sockaddr *sa);
void sv_cm_mcast_detach_all(struct sv_cm_id *id);

/* QPs (sv_cm_qp.c) */
int  sv_cm_qp_to_rtr_rts(struct sv_cm_id *id);
void sv_cm_qp_to_err(struct sv_cm_id *id);

#endif
