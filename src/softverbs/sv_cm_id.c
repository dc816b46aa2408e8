/*
 * softverbs librdmacm: identifiers and addresses (see sv_cm.h): create,
 * bind, resolve, options, and rdma_create_ep over them (listening is
 * sv_cm_conn_setup.c's, destroying sv_cm_conn_teardown.c's). A bound id
 * holds its port host-wide as the kernel's CM does, wildcard and specific
 * addresses of one port overlapping (sv_cm_port.c); port 0 takes a free
 * port. resolve_addr and resolve_route answer at once (one host: every
 * address is one hop away), with the events on the channel.
 */
#include "sv_cm.h"

#include <rdma/rdma_verbs.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

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

/* man rdma_create_ep: a synchronous id for res, bound (RAI_PASSIVE) or
 * resolved to its destination, with a QP when qp_init_attr is given */
static int sv_cm_api_create_ep(struct rdma_cm_id **id_p,
                               struct rdma_addrinfo *res, struct ibv_pd *pd,
                               struct ibv_qp_init_attr *qp_init_attr)
{
    struct rdma_cm_id *cm_id;
    int ret;

    if ((id_p == NULL) || (res == NULL)) {
        errno = EINVAL;
        return -1;
    }
    if (rdma_create_id(NULL, &cm_id, NULL, res->ai_port_space) != 0) {
        return -1;
    }
    if ((res->ai_port_space == RDMA_PS_IB) && (res->ai_qp_type != 0)) {
        /* an RDMA_PS_IB id takes the address's QP type (rdma-core's
         * rdma_create_id2), XRC included */
        cm_id->qp_type = res->ai_qp_type;
    }
    if (res->ai_flags & RAI_PASSIVE) {
        ret = rdma_bind_addr(cm_id, res->ai_src_addr);
    } else {
        ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr,
                                2000);
        if (ret == 0) {
            ret = rdma_resolve_route(cm_id, 2000);
        }
    }
    if ((ret == 0) && (qp_init_attr != NULL)) {
        /* the QP type is the address's (rdma-core's rdma_create_ep) */
        qp_init_attr->qp_type = res->ai_qp_type;
        if (res->ai_flags & RAI_PASSIVE) {
            /* a listener: each request it gets has its QP made with these
             * attributes (rdma_get_request) */
            sv_cm_id(cm_id)->ep_qp_attr = malloc(sizeof(*qp_init_attr));
            if (sv_cm_id(cm_id)->ep_qp_attr == NULL) {
                errno = ENOMEM;
                ret   = -1;
            } else {
                *sv_cm_id(cm_id)->ep_qp_attr = *qp_init_attr;
                sv_cm_id(cm_id)->ep_pd       = pd;
            }
        } else {
            ret = rdma_create_qp(cm_id, pd, qp_init_attr);
        }
    }
    if (ret != 0) {
        rdma_destroy_id(cm_id);
        return -1;
    }
    *id_p = cm_id;
    return 0;
}

SV_CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id_p,
                                struct rdma_addrinfo *res, struct ibv_pd *pd,
                                struct ibv_qp_init_attr *qp_init_attr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_create_ep(id_p, res, pd, qp_init_attr);
    sv_cm_unlock();
    return ret;
}

static void sv_cm_api_destroy_ep(struct rdma_cm_id *cm_id)
{
    if (cm_id == NULL) {
        return;
    }
    rdma_destroy_qp(cm_id);
    rdma_destroy_srq(cm_id);
    rdma_destroy_id(cm_id);
}

SV_CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *cm_id)
{
    sv_cm_lock();
    sv_cm_api_destroy_ep(cm_id);
    sv_cm_unlock();
}
