/*
 * softverbs librdmacm: identifiers, addresses and listening (see sv_cm.h).
 * A bound id holds its port host-wide as the kernel's CM does, wildcard
 * and specific addresses of one port overlapping (sv_cm_port.c); port 0
 * takes a free port. A listener owns the abstract socket named after its
 * address, which connecting ids dial. resolve_addr and resolve_route
 * answer at once (one host: every address is one hop away), with the
 * events on the channel.
 */
#include "sv_cm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Every live id of the process, for the CM thread (with the CM's lock) */
static struct sv_cm_id *sv_cm_all;
static uint64_t sv_cm_serial;

/*
 * Ephemeral ports and starting PSNs. The kernel's CM picks them at random
 * per id; a library must not draw them from the application's random()
 * sequence (it would change what the application draws, and every process
 * that never seeds it would pick the same first port). A generator of the
 * process (xorshift64*), seeded from the pid and the clock, again after a
 * fork. Called under the CM lock.
 */
uint32_t sv_cm_rand(void)
{
    static uint64_t state;
    static pid_t    owner;
    struct timespec ts;

    if ((state == 0) || (owner != getpid())) {
        owner = getpid();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = ((uint64_t)owner << 32) ^ (uint64_t)ts.tv_nsec ^
                ((uint64_t)ts.tv_sec << 20) ^ 0x9e3779b97f4a7c15ull;
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (uint32_t)((state * 0x2545f4914f6cdd1dull) >> 32);
}

struct sv_cm_id *sv_cm_id_find(uint64_t serial)
{
    struct sv_cm_id *id;

    for (id = sv_cm_all; id != NULL; id = id->all_next) {
        if (id->serial == serial) {
            return id;
        }
    }
    return NULL;
}

uint64_t sv_cm_timewait_run(uint64_t now_ns)
{
    struct sv_cm_id *id, *next;
    uint64_t first = 0;

    for (id = sv_cm_all; id != NULL; id = next) {
        next = id->all_next;
        if (id->disc_pending) {
            if (id->dreq_deadline <= now_ns) {
                sv_cm_dreq_timeout(id);
            } else if ((first == 0) || (id->dreq_deadline < first)) {
                first = id->dreq_deadline;
            }
        }
        if (id->tw != SV_CM_TW_WAIT) {
            continue;
        }
        if (id->tw_deadline <= now_ns) {
            sv_cm_timewait_exit(id);
        } else if ((first == 0) || (id->tw_deadline < first)) {
            first = id->tw_deadline;
        }
    }
    return first;
}

int sv_cm_id_held(void)
{
    struct sv_cm_id *id;

    for (id = sv_cm_all; id != NULL; id = id->all_next) {
        if ((id->sock >= 0) || (id->port_fd >= 0)) {
            return 1;
        }
    }
    return 0;
}

/* In a forked child (sv_cm_chan.c, sv_cm_fork_child; the only thread, no
 * lock needed): the ids inherited are the parent's. The child's copies of
 * their sockets and port locks are closed (the parent's stay open, its
 * connections and ports untouched), and the ids are no longer the
 * process's: the child's thread and timer never find them, nor make
 * events on their channels (whose eventfds the parent shares). Their
 * memory stays, so that a child that destroys one does not fault; their
 * channels' locks are made anew, as a thread of the parent may have held
 * one at the fork. */
void sv_cm_id_fork_child(void)
{
    struct sv_cm_id *id;

    for (id = sv_cm_all; id != NULL; id = id->all_next) {
        if (id->sock >= 0) {
            close(id->sock);
            id->sock = -1;
        }
        sv_cm_port_release(id); /* the child's description of the file */
        pthread_mutex_init(&id->chan->lock, NULL);
    }
    sv_cm_all = NULL;
}

static void sv_cm_id_link(struct sv_cm_id *id)
{
    id->serial   = ++sv_cm_serial & 0xffffffffu; /* 32 bits: see watch */
    id->all_next = sv_cm_all;
    sv_cm_all    = id;
    pthread_mutex_lock(&id->chan->lock);
    id->next       = id->chan->ids;
    id->chan->ids  = id;
    pthread_mutex_unlock(&id->chan->lock);
}

static void sv_cm_id_unlink(struct sv_cm_id *id)
{
    struct sv_cm_id **pp;

    for (pp = &sv_cm_all; *pp != NULL; pp = &(*pp)->all_next) {
        if (*pp == id) {
            *pp = id->all_next;
            break;
        }
    }

    pthread_mutex_lock(&id->chan->lock);
    for (pp = &id->chan->ids; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == id) {
            *pp = id->next;
            break;
        }
    }
    pthread_mutex_unlock(&id->chan->lock);
}

struct sv_cm_id *sv_cm_id_alloc(struct sv_cm_channel *chan, void *context,
                                enum rdma_port_space ps,
                                enum ibv_qp_type qp_type)
{
    struct sv_cm_id *id = calloc(1, sizeof(*id));

    if (id == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    id->chan            = chan;
    id->sock            = -1;
    id->port_fd         = -1;
    id->state           = SV_CM_IDLE;
    id->id.channel      = &chan->ch;
    id->id.context      = context;
    id->id.ps           = ps;
    id->id.qp_type      = qp_type;
    id->id.route.path_rec  = &id->path;
    id->psn             = sv_cm_rand() & 0xffffff;
    sv_cm_id_link(id);
    return id;
}

/* man rdma_create_id: RDMA_PS_TCP (RC), RDMA_PS_UDP (UD), RDMA_PS_IPOIB
 * (UD) and RDMA_PS_IB (the QP type decides); a NULL channel makes a
 * synchronous id */
static int sv_cm_api_create_id(struct rdma_event_channel *channel,
                               struct rdma_cm_id **id_p, void *context,
                               enum rdma_port_space ps)
{
    struct sv_cm_channel *chan = (struct sv_cm_channel *)channel;
    enum ibv_qp_type type;
    struct sv_cm_id *id;
    int sync = 0;

    switch (ps) {
    case RDMA_PS_TCP:
    case RDMA_PS_IB:
        type = IBV_QPT_RC;
        break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
        type = IBV_QPT_UD;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (id_p == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (chan == NULL) {
        chan = sv_cm_channel_new();
        if (chan == NULL) {
            return -1;
        }
        sync = 1;
    }
    id = sv_cm_id_alloc(chan, context, ps, type);
    if (id == NULL) {
        if (sync) {
            sv_cm_channel_free(chan);
        }
        return -1;
    }
    id->sync = sync;
    if (sync) {
        id->id.channel = NULL;
    }
    *id_p = &id->id;
    return 0;
}

SV_CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
                                struct rdma_cm_id **id_p, void *context,
                                enum rdma_port_space ps)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_id(channel, id_p, context, ps);
    sv_cm_unlock();
    return ret;
}

void sv_cm_qp_destroy_all(struct sv_cm_id *id);

/* man rdma_destroy_id: the QP must be destroyed first by the user
 * (rdma_destroy_qp); a connection still up is disconnected, the peer told */
static int sv_cm_api_destroy_id(struct rdma_cm_id *cm_id)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_event *ev, *next;
    struct sv_cm_channel *chan;

    if (id == NULL) {
        errno = EINVAL;
        return -1;
    }
    chan = id->chan;
    if ((id->state == SV_CM_LISTEN) && (id->listen_pid == getpid())) {
        sv_cm_sock_unlink(id); /* a file in SOFTVERBS_SOCKET_DIR */
    }
    sv_cm_conn_close(id);
    sv_cm_port_release(id);
    free(id->ep_qp_attr);
    sv_cm_mcast_detach_all(id);
    sv_cm_id_unlink(id);
    /* Its events not yet got go with it (else rdma_get_cm_event handed out
     * an event whose id is freed), and a listener's requests not yet got
     * with their new ids, which reject their clients */
    for (ev = sv_cm_channel_take_all(id); ev != NULL; ev = next) {
        next = ev->next;
        if (ev->event.id != cm_id) {
            sv_cm_api_destroy_id(ev->event.id);
        }
        free(ev);
    }
    if (cm_id->event != NULL) {
        /* a synchronous id's last event (sv_cm_sync_result) */
        rdma_ack_cm_event(cm_id->event);
        cm_id->event = NULL;
    }
    if (id->sync) {
        sv_cm_channel_free(chan);
    }
    /* The id's events are to be acknowledged first (librdmacm waits for
     * them in rdma_destroy_id); one acknowledged later still finds the id */
    __atomic_store_n(&id->dead, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&id->events_out, __ATOMIC_SEQ_CST) <= 0) {
        sv_cm_id_release(id);
    }
    return 0;
}

void sv_cm_id_release(struct sv_cm_id *id)
{
    /* destroy and the last ack may both get here: one frees */
    if (__atomic_exchange_n(&id->freed, 1, __ATOMIC_SEQ_CST) == 0) {
        free(id);
    }
}

SV_CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_destroy_id(cm_id);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sockaddr_storage sa;
    socklen_t len;

    if ((id == NULL) || (addr == NULL) || (id->state != SV_CM_IDLE) ||
        ((len = sv_cm_addr_len(addr)) == 0) || (addr->sa_family == AF_IB)) {
        errno = EINVAL;
        return -1;
    }
    memcpy(&sa, addr, len);
    /* the address must be one of the host's: it names a port */
    if (sv_cm_addr_device((struct sockaddr *)&sa, &cm_id->verbs,
                          &cm_id->port_num) != 0) {
        errno = EADDRNOTAVAIL;
        return -1;
    }
    /* the device's default PD, as rdma-core sets it once an id has a
     * device (UCX creates its own QPs on id->pd) */
    cm_id->pd = sv_cm_default_pd(cm_id->verbs);
    /* the kernel's cma_get_port: EADDRINUSE or EADDRNOTAVAIL when
     * another id's address overlaps, port 0 an ephemeral port */
    if (sv_cm_port_bind(id, (struct sockaddr *)&sa) != 0) {
        return -1;
    }
    memcpy(&cm_id->route.addr.src_addr, &sa, len);
    id->state = SV_CM_ADDR_BOUND;
    return 0;
}

SV_CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_bind_addr(cm_id, addr);
    sv_cm_unlock();
    return ret;
}

/* The path to the port every host address maps to (one hop) */
static void sv_cm_fill_path(struct sv_cm_id *id)
{
    const struct sockaddr *dst = &id->id.route.addr.dst_addr;
    struct ibv_port_attr pa;
    union ibv_gid gid, dgid;
    uint64_t key;
    uint16_t lid;
    int roce = 0;

    memset(&id->path, 0, sizeof(id->path));
    if (ibv_query_port(id->id.verbs, id->id.port_num, &pa) == 0) {
        id->path.slid = htobe16(pa.lid);
        id->path.dlid = htobe16(pa.lid);
        id->path.mtu  = pa.active_mtu;
        roce          = (pa.link_layer == IBV_LINK_LAYER_ETHERNET);
    }
    sv_cm_gid_index(id, &gid);
    id->path.sgid = gid;
    id->path.dgid = gid;
    /* another host (sv_cm_hosts.c): the path record the SA gives names
     * the destination's port, its LID and GID as the host published them;
     * on RoCE the destination's GID is its address's (RoCE v2) */
    if (sv_cm_hosts_find(dst, &key, &lid, &dgid) == 0) {
        id->path.dlid = htobe16(lid);
        if (!roce) {
            id->path.dgid = dgid;
        } else if (dst->sa_family == AF_INET) {
            memset(&id->path.dgid, 0, sizeof(id->path.dgid));
            id->path.dgid.raw[10] = id->path.dgid.raw[11] = 0xff;
            memcpy(&id->path.dgid.raw[12],
                   &((const struct sockaddr_in *)dst)->sin_addr, 4);
        } else {
            memcpy(id->path.dgid.raw,
                   &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
        }
    }
    id->path.pkey       = htobe16(0xffff);
    id->path.packet_life_time = SV_CM_PACKET_LIFE_TIME;
    id->id.route.num_paths = 1;
}

/* man rdma_resolve_addr: binds to src (or the wildcard) if not bound, and
 * resolves dst to the port it maps to; ADDR_RESOLVED, or ADDR_ERROR with
 * status -EHOSTUNREACH for an address that is neither this host's nor
 * another host's of the registry (the kernel's resolver gives it for an
 * address it has no route to) */
static int sv_cm_api_resolve_addr(struct rdma_cm_id *cm_id,
                                  struct sockaddr *src_addr,
                                  struct sockaddr *dst_addr, int timeout_ms)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sockaddr_storage any;
    struct sv_cm_event *ev;
    struct ibv_context *ctx;
    uint8_t port;
    socklen_t len;
    int local;

    if ((id == NULL) || (dst_addr == NULL) ||
        ((len = sv_cm_addr_len(dst_addr)) == 0) ||
        ((id->state != SV_CM_IDLE) && (id->state != SV_CM_ADDR_BOUND))) {
        errno = EINVAL;
        return -1;
    }
    if (id->state == SV_CM_IDLE) {
        if (src_addr == NULL) {
            memset(&any, 0, sizeof(any));
            any.ss_family = dst_addr->sa_family;
            src_addr      = (struct sockaddr *)&any;
        }
        if (rdma_bind_addr(cm_id, src_addr) != 0) {
            return -1;
        }
    }
    if (sv_cm_addr_is_any(&cm_id->route.addr.src_addr) &&
        !sv_cm_addr_is_mcast(dst_addr) &&
        (cm_id->route.addr.src_addr.sa_family == dst_addr->sa_family) &&
        ((local = sv_cm_addr_local(dst_addr)) ||
         (sv_cm_addr_route_src(dst_addr, (struct sockaddr *)&any) == 0))) {
        /* The kernel resolves a wildcard source to the address the route
         * leaves from (cma_resolve_ib_dev, rdma_resolve_ip): to an
         * address of this host, that address itself; to another host's,
         * the one a datagram socket's connect picks. The peer then sees
         * it (rdma_get_peer_addr), not 0.0.0.0 */
        sv_cm_addr_set_src_ip(&cm_id->route.addr.src_addr,
                              local ? dst_addr :
                              (struct sockaddr *)&any);
        sv_cm_port_update(id); /* it owns that address of its port now */
    }
    memcpy(&cm_id->route.addr.dst_addr, dst_addr, len);
    if (sv_cm_addr_is_mcast(dst_addr)) {
        /* a multicast group is reached from the bound port */
        id->state = SV_CM_ADDR_RESOLVED;
        ev = sv_cm_event_new(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    } else if (sv_cm_addr_route(dst_addr, &ctx, &port) != 0) {
        ev = sv_cm_event_new(id, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
    } else if (!sv_cm_port_active(ctx, port)) {
        /* the port is down (softverbs_set_port_state): no route to the
         * address through it, as over a link that dropped */
        ev = sv_cm_event_new(id, RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH);
    } else {
        id->state = SV_CM_ADDR_RESOLVED;
        ev = sv_cm_event_new(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    }
    if (ev == NULL) {
        errno = ENOMEM;
        return -1;
    }
    sv_cm_event_queue(ev);
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

SV_CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cm_id,
                                   struct sockaddr *src_addr,
                                   struct sockaddr *dst_addr, int timeout_ms)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_resolve_addr(cm_id, src_addr, dst_addr, timeout_ms);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_event *ev;

    if ((id == NULL) || (id->state != SV_CM_ADDR_RESOLVED)) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_fill_path(id);
    id->state = SV_CM_ROUTE_RESOLVED;
    ev = sv_cm_event_new(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    if (ev == NULL) {
        errno = ENOMEM;
        return -1;
    }
    sv_cm_event_queue(ev);
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

SV_CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_resolve_route(cm_id, timeout_ms);
    sv_cm_unlock();
    return ret;
}

/* man rdma_listen: the id must be bound; backlog 0 or less: the default.
 * A reusable id must overlap nobody (the kernel's rdma_listen checks it
 * again without the flag and clears it); the listener owns the socket
 * that connecting ids dial (sv_cm_dial) */
static int sv_cm_api_listen(struct rdma_cm_id *cm_id, int backlog)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sockaddr_un un;
    socklen_t len;
    int fd, err;

    if ((id == NULL) || (id->state != SV_CM_ADDR_BOUND)) {
        errno = EINVAL;
        return -1;
    }
    if (sv_cm_port_listen(id) != 0) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    len = sv_cm_sock_name(&un, cm_id->ps, &cm_id->route.addr.src_addr, 0);
    if ((bind(fd, (struct sockaddr *)&un, len) != 0) &&
        ((errno != EADDRINUSE) || (sv_cm_sock_reclaim(&un, len) != 0) ||
         (bind(fd, (struct sockaddr *)&un, len) != 0))) {
        /* EADDRINUSE: a wildcard listener of the other family, both
         * af-only, on the port (their sockets share the name) */
        err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    if (listen(fd, (backlog > 0) ? backlog : 1024) != 0) {
        /* EADDRINUSE: a wildcard listener of the other family, both
         * af-only, on the port (their sockets share the name) */
        err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    id->sock       = fd;
    id->backlog    = backlog;
    id->listen_pid = getpid();
    id->state      = SV_CM_LISTEN;
    sv_cm_channel_watch(id, id->sock);
    return 0;
}

SV_CM_EXPORT int rdma_listen(struct rdma_cm_id *cm_id, int backlog)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_listen(cm_id, backlog);
    sv_cm_unlock();
    return ret;
}

SV_CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *cm_id)
{
    return htons(sv_cm_addr_port(&cm_id->route.addr.src_addr));
}

SV_CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *cm_id)
{
    return htons(sv_cm_addr_port(&cm_id->route.addr.dst_addr));
}

/* man rdma_set_option. RDMA_OPTION_ID_REUSEADDR and _AFONLY as the
 * kernel's ucma_set_option_id takes them: an int (another length EINVAL);
 * rdma_set_reuseaddr: set on any id but a listener, cleared only on one
 * not bound yet (else EINVAL); rdma_set_afonly: before the id is
 * resolved or listens (else EINVAL). A bound id's port follows the new
 * flags. RDMA_OPTION_ID_ACK_TIMEOUT as ucma_set_option_id and
 * rdma_set_ack_timeout (drivers/infiniband/core/ucma.c, cma.c) take it: a
 * uint8_t (another length EINVAL), on an RC id only (else EINVAL), kept
 * for the id's QP: the local ACK timeout it gets at RTR->RTS and that
 * rdma_init_qp_attr gives (the kernel's rdma_init_qp_attr: timeout_set)
 * in place of the default 14. The others: softverbs has one path and no
 * type of service: accepted and not used */
static int sv_cm_api_set_option(struct rdma_cm_id *cm_id, int level,
                                int optname, void *optval, size_t optlen)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    int on;

    if ((cm_id == NULL) || ((optval == NULL) && (optlen != 0))) {
        errno = EINVAL;
        return -1;
    }
    if ((level == RDMA_OPTION_ID) &&
        (optname == RDMA_OPTION_ID_ACK_TIMEOUT)) {
        if ((optlen != sizeof(uint8_t)) || ((cm_id->qp_type != IBV_QPT_RC) &&
                                          (cm_id->qp_type != IBV_QPT_XRC_SEND))) {
            /* rdma_set_ack_timeout: RC and XRC initiators only */
            errno = EINVAL;
            return -1;
        }
        id->ack_timeout     = *(uint8_t *)optval;
        id->ack_timeout_set = 1;
        return 0;
    }
    if ((level != RDMA_OPTION_ID) ||
        ((optname != RDMA_OPTION_ID_REUSEADDR) &&
         (optname != RDMA_OPTION_ID_AFONLY))) {
        return 0;
    }
    if (optlen != sizeof(int)) {
        errno = EINVAL;
        return -1;
    }
    on = *(int *)optval ? 1 : 0;
    if (optname == RDMA_OPTION_ID_REUSEADDR) {
        if (!((on && (id->state != SV_CM_LISTEN)) ||
              (id->state == SV_CM_IDLE))) {
            errno = EINVAL;
            return -1;
        }
        id->reuseaddr = on;
    } else {
        if ((id->state != SV_CM_IDLE) && (id->state != SV_CM_ADDR_BOUND)) {
            errno = EINVAL;
            return -1;
        }
        id->afonly     = on;
        id->afonly_set = 1;
    }
    sv_cm_port_update(id);
    return 0;
}

SV_CM_EXPORT int rdma_set_option(struct rdma_cm_id *cm_id, int level,
                                 int optname, void *optval, size_t optlen)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_set_option(cm_id, level, optname, optval, optlen);
    sv_cm_unlock();
    return ret;
}

/* man rdma_notify: an asynchronous QP event reached the CM; nothing to
 * do here (the connection is up once established) */
SV_CM_EXPORT int rdma_notify(struct rdma_cm_id *cm_id, enum ibv_event_type ev)
{
    return 0;
}

/* ECE (enhanced connection establishment): not offered */
SV_CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *cm_id,
                                    struct ibv_ece *ece)
{
    errno = EOPNOTSUPP;
    return -1;
}

SV_CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *cm_id,
                                     struct ibv_ece *ece)
{
    errno = EOPNOTSUPP;
    return -1;
}
