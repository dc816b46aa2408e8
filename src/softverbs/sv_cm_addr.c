/*
 * softverbs librdmacm: addresses. On a fabric, IPoIB gives each HCA port an
 * IP address, and the CM resolves an IP address to the port. Here every IP
 * address of the host (any interface, loopback included, IPv4 and IPv6)
 * maps to one softverbs port: SOFTVERBS_CM_PORT=<device>:<port> (default
 * the first device, port 1; a malformed or unknown value is named on
 * stderr and the default used). An address that is neither the host's nor
 * one another host of the registry published (sv_cm_hosts.c) cannot be
 * reached (ADDR_ERROR). The CM's device contexts and default protection
 * domains (one each per device, as rdma-core's cma_dev) live here too.
 */
#include "sv_cm.h"
#include "sv_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <rdma/rdma_cma.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SV_CM_MAX_DEVS 8

static pthread_mutex_t sv_cm_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context *sv_cm_ctxs[SV_CM_MAX_DEVS];
static struct ibv_pd *sv_cm_pds[SV_CM_MAX_DEVS];
static struct ibv_xrcd *sv_cm_xrcds[SV_CM_MAX_DEVS];
static int sv_cm_num_devs = -1;
static int sv_cm_map_dev;
static uint8_t sv_cm_map_port = 1;

/* Open every device once (under sv_cm_dev_lock) and read the mapping */
static void sv_cm_devs_open(void)
{
    struct ibv_device **list;
    const char *env = getenv("SOFTVERBS_CM_PORT");
    char name[64];
    int n = 0, i, port;

    if (sv_cm_num_devs >= 0) {
        return;
    }
    sv_cm_num_devs = 0;
    list = ibv_get_device_list(&n);
    for (i = 0; (list != NULL) && (i < n) && (i < SV_CM_MAX_DEVS); i++) {
        sv_cm_ctxs[i] = ibv_open_device(list[i]);
        if (sv_cm_ctxs[i] != NULL) {
            sv_cm_num_devs++;
        }
    }
    if (env != NULL) {
        if ((sscanf(env, "%63[^:]:%d", name, &port) != 2) ||
            (port < 1) || (port > 255)) {
            sv_warn("SOFTVERBS_CM_PORT='%s' is not "
                    "<device>:<port>; using the first device, port 1",
                    env);
        } else {
            for (i = 0; i < sv_cm_num_devs; i++) {
                if (!strcmp(ibv_get_device_name(list[i]), name)) {
                    sv_cm_map_dev  = i;
                    sv_cm_map_port = port;
                    break;
                }
            }
            if (i == sv_cm_num_devs) {
                sv_warn("SOFTVERBS_CM_PORT='%s': no such "
                        "device; using the first device, port 1", env);
            }
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    if (sv_cm_num_devs > 0) {
        /* the other hosts of the registry reach ours by these
         * (sv_cm_hosts.c) */
        sv_cm_hosts_publish(sv_cm_ctxs[sv_cm_map_dev], sv_cm_map_port);
    }
}

void sv_cm_devs_lock(void)
{
    pthread_mutex_lock(&sv_cm_dev_lock);
}

void sv_cm_devs_unlock(void)
{
    pthread_mutex_unlock(&sv_cm_dev_lock);
}

/* The devices stay open in a forked child, as librdmacm's cma_dev list
 * (and its contexts and PDs) does */
void sv_cm_devs_fork_child(void)
{
    pthread_mutex_init(&sv_cm_dev_lock, NULL);
}

int sv_cm_addr_device(const struct sockaddr *sa, struct ibv_context **ctx,
                      uint8_t *port)
{
    pthread_mutex_lock(&sv_cm_dev_lock);
    sv_cm_devs_open();
    pthread_mutex_unlock(&sv_cm_dev_lock);
    if (!sv_cm_addr_local(sa) || (sv_cm_num_devs == 0)) {
        return -1;
    }
    *ctx  = sv_cm_ctxs[sv_cm_map_dev];
    *port = sv_cm_map_port;
    return 0;
}

/* The port a destination is reached through: an address of this host, or
 * one another host of the registry published (sv_cm_hosts.c), as a route
 * through IPoIB reaches a host of the fabric */
int sv_cm_addr_route(const struct sockaddr *sa, struct ibv_context **ctx,
                     uint8_t *port)
{
    union ibv_gid gid;
    uint64_t key;
    uint16_t lid;

    if (sv_cm_addr_device(sa, ctx, port) == 0) {
        return 0;
    }
    if ((sv_cm_num_devs <= 0) || (sv_cm_hosts_find(sa, &key, &lid, &gid) != 0)) {
        return -1;
    }
    *ctx  = sv_cm_ctxs[sv_cm_map_dev];
    *port = sv_cm_map_port;
    return 0;
}

/* The slot of an open device of the CM, or -1 (sv_cm_dev_lock held) */
static int sv_cm_dev_slot(struct ibv_context *ctx)
{
    int i;

    for (i = 0; i < sv_cm_num_devs; i++) {
        if (sv_cm_ctxs[i] == ctx) {
            return i;
        }
    }
    return -1;
}

/* rdma-core's cma_dev PD: one per device, allocated on first use */
struct ibv_pd *sv_cm_default_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = NULL;
    int i;

    pthread_mutex_lock(&sv_cm_dev_lock);
    i = sv_cm_dev_slot(ctx);
    if (i >= 0) {
        if (sv_cm_pds[i] == NULL) {
            sv_cm_pds[i] = ibv_alloc_pd(ctx);
        }
        pd = sv_cm_pds[i];
    }
    pthread_mutex_unlock(&sv_cm_dev_lock);
    return pd;
}

/* rdma-core's ucma_get_xrcd: the XRC domain of the device's XRC_RECV QPs
 * and XRC SRQs made by the CM without one of the application's, opened on
 * first use as a domain of this process only (no file: fd -1, O_CREAT) */
struct ibv_xrcd *sv_cm_default_xrcd(struct ibv_context *ctx)
{
    struct ibv_xrcd_init_attr attr;
    struct ibv_xrcd *xrcd = NULL;
    int i;

    memset(&attr, 0, sizeof(attr));
    attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    attr.fd        = -1;
    attr.oflags    = O_CREAT;
    pthread_mutex_lock(&sv_cm_dev_lock);
    i = sv_cm_dev_slot(ctx);
    if (i < 0) {
        errno = ENODEV;
    } else {
        if (sv_cm_xrcds[i] == NULL) {
            sv_cm_xrcds[i] = ibv_open_xrcd(ctx, &attr);
        }
        xrcd = sv_cm_xrcds[i];
    }
    pthread_mutex_unlock(&sv_cm_dev_lock);
    return xrcd;
}

SV_CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
    struct ibv_context **list;
    int i;

    pthread_mutex_lock(&sv_cm_dev_lock);
    sv_cm_devs_open();
    pthread_mutex_unlock(&sv_cm_dev_lock);
    list = calloc(sv_cm_num_devs + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < sv_cm_num_devs; i++) {
        list[i] = sv_cm_ctxs[i];
    }
    if (num_devices != NULL) {
        *num_devices = sv_cm_num_devs;
    }
    return list;
}

SV_CM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
    free(list);
}

/* getaddrinfo(3) hints for an rdma_getaddrinfo call, as librdmacm's
 * ucma_convert_to_ai makes them (rdma-core 44 librdmacm/addrinfo.c): the
 * passive and numeric flags, the family (not AF_IB), the socket type of
 * the QP type (RC/UC/XRC a stream, UD datagrams) and the protocol of the
 * port space (TCP, UDP for RDMA_PS_UDP/_IPOIB, RDMA_PS_IB as the socket
 * type says). */
static void sv_cm_gai_hints(struct addrinfo *ai,
                            const struct rdma_addrinfo *hints)
{
    memset(ai, 0, sizeof(*ai));
    ai->ai_flags = ((hints->ai_flags & RAI_PASSIVE) ? AI_PASSIVE : 0) |
                   ((hints->ai_flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
    if (hints->ai_family != AF_IB) {
        ai->ai_family = hints->ai_family;
    }
    switch (hints->ai_qp_type) {
    case IBV_QPT_RC:
    case IBV_QPT_UC:
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
        ai->ai_socktype = SOCK_STREAM;
        break;
    case IBV_QPT_UD:
        ai->ai_socktype = SOCK_DGRAM;
        break;
    default:
        break;
    }
    switch (hints->ai_port_space) {
    case RDMA_PS_TCP:
        ai->ai_protocol = IPPROTO_TCP;
        break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
        ai->ai_protocol = IPPROTO_UDP;
        break;
    case RDMA_PS_IB:
        ai->ai_protocol = (ai->ai_socktype == SOCK_STREAM) ? IPPROTO_TCP :
                          (ai->ai_socktype == SOCK_DGRAM) ? IPPROTO_UDP : 0;
        break;
    default:
        break;
    }
}

static int sv_cm_gai_copy(struct sockaddr **dst, socklen_t *dst_len,
                          const struct sockaddr *src, socklen_t len)
{
    *dst = malloc(len);
    if (*dst == NULL) {
        return ENOMEM;
    }
    memcpy(*dst, src, len);
    *dst_len = len;
    return 0;
}

/*
 * rdma_getaddrinfo, as rdma-core 44's (librdmacm/addrinfo.c,
 * rdma_getaddrinfo, ucma_getaddrinfo, ucma_convert_to_rai):
 *
 *   no node, no service, no hints        -> EINVAL
 *   a node or a service (RESOLVE)        -> getaddrinfo(3), and ONE result
 *       made of its first answer: the hints' QP type, else RC for a
 *       stream and UD for datagrams; the hints' port space, else TCP or
 *       UDP from the protocol (a multicast group with RDMA_PS_UDP comes
 *       back UD, as mckey needs); the address as the source with
 *       RAI_PASSIVE, else as the destination
 *   neither (FROM_HINTS)                 -> the hints' flags, family, QP
 *       type, port space and destination address: nothing is looked up.
 *       libfabric's verbs provider asks so for the source address it
 *       already holds (vrb_get_rdmacm_rai: node and service NULL,
 *       ai_src_addr set, RAI_PASSIVE): ofi_rxm's fi_domain and
 *       fi_pingpong's server took this path, which softverbs answered
 *       with getaddrinfo(NULL, NULL) = EAI_NONAME, ENODEV
 *   then, either way                     -> the hints' source address
 *       when the result has none
 *
 * A getaddrinfo(3) failure returns its EAI_ code with errno ENODEV (or
 * getaddrinfo's own errno for EAI_SYSTEM); librdmacm leaves errno as
 * getaddrinfo left it. ibacm's AF_IB path records (ucma_ib_resolve) are
 * never added: no ibacm here.
 */
enum sv_cm_gai_mode {
    SV_CM_GAI_RESOLVE,
    SV_CM_GAI_FROM_HINTS,
};

SV_CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
                                  const struct rdma_addrinfo *hints,
                                  struct rdma_addrinfo **res)
{
    static const struct rdma_addrinfo nohints;
    enum sv_cm_gai_mode mode;
    struct addrinfo ai_hints, *ai = NULL;
    struct rdma_addrinfo *r;
    int ret = 0;

    if ((node == NULL) && (service == NULL) && (hints == NULL)) {
        errno = EINVAL;
        return -1;
    }
    mode = ((node != NULL) || (service != NULL)) ? SV_CM_GAI_RESOLVE :
           SV_CM_GAI_FROM_HINTS;
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        errno = ENOMEM;
        return -1;
    }
    switch (mode) {
    case SV_CM_GAI_RESOLVE:
        if (hints != NULL) {
            sv_cm_gai_hints(&ai_hints, hints);
        }
        ret = getaddrinfo(node, service, hints ? &ai_hints : NULL, &ai);
        if (ret != 0) {
            errno = (ret == EAI_SYSTEM) ? errno : ENODEV;
            free(r);
            return ret;
        }
        if (hints == NULL) {
            hints = &nohints;
        }
        r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type :
                        (ai->ai_socktype == SOCK_STREAM) ? IBV_QPT_RC :
                        (ai->ai_socktype == SOCK_DGRAM) ? IBV_QPT_UD : 0;
        r->ai_port_space = hints->ai_port_space ? hints->ai_port_space :
                           (ai->ai_protocol == IPPROTO_TCP) ? RDMA_PS_TCP :
                           (ai->ai_protocol == IPPROTO_UDP) ? RDMA_PS_UDP : 0;
        r->ai_family = ai->ai_family;
        if (ai->ai_flags & AI_PASSIVE) {
            r->ai_flags = RAI_PASSIVE;
            ret = sv_cm_gai_copy(&r->ai_src_addr, &r->ai_src_len,
                                 ai->ai_addr, ai->ai_addrlen);
        } else {
            ret = sv_cm_gai_copy(&r->ai_dst_addr, &r->ai_dst_len,
                                 ai->ai_addr, ai->ai_addrlen);
        }
        freeaddrinfo(ai);
        break;
    case SV_CM_GAI_FROM_HINTS:
        r->ai_flags      = hints->ai_flags;
        r->ai_family     = hints->ai_family;
        r->ai_qp_type    = hints->ai_qp_type;
        r->ai_port_space = hints->ai_port_space;
        if (hints->ai_dst_len) {
            ret = sv_cm_gai_copy(&r->ai_dst_addr, &r->ai_dst_len,
                                 hints->ai_dst_addr, hints->ai_dst_len);
        }
        break;
    }
    if ((ret == 0) && !r->ai_src_len && hints->ai_src_len) {
        ret = sv_cm_gai_copy(&r->ai_src_addr, &r->ai_src_len,
                             hints->ai_src_addr, hints->ai_src_len);
    }
    if (ret != 0) {
        rdma_freeaddrinfo(r);
        errno = ret;
        return -1;
    }
    *res = r;
    return 0;
}

SV_CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
    struct rdma_addrinfo *next;

    for (; res != NULL; res = next) {
        next = res->ai_next;
        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res->ai_src_canonname);
        free(res->ai_dst_canonname);
        free(res->ai_route);
        free(res->ai_connect);
        free(res);
    }
}

/*
 * The GID index a connection of id sends from, with its GID: 0 on
 * InfiniBand (LIDs route). On RoCE the RoCE v2 GID of the id's source
 * address where its port has one (the kernel's rdma_cm takes RoCE v2 by
 * default, cma_default_roce_gid_type, and the GID of the bound address),
 * else the port's default RoCE v2 GID (index 1): every address of the host
 * maps to the CM's port here, loopback included, which a netdev's GID
 * table does not hold.
 */
uint8_t sv_cm_gid_index(struct sv_cm_id *id, union ibv_gid *gid)
{
    const struct sockaddr *sa = &id->id.route.addr.src_addr;
    struct ibv_gid_entry e;
    struct ibv_port_attr pa;
    union ibv_gid want;
    int i;

    memset(gid, 0, sizeof(*gid));
    if ((id->id.verbs == NULL) ||
        (ibv_query_port(id->id.verbs, id->id.port_num, &pa) != 0)) {
        return 0;
    }
    if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
        ibv_query_gid(id->id.verbs, id->id.port_num, 0, gid);
        return 0;
    }
    memset(&want, 0, sizeof(want));
    if (sa->sa_family == AF_INET) {
        want.raw[10] = want.raw[11] = 0xff;
        memcpy(&want.raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        memcpy(want.raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
    for (i = 0; i < pa.gid_tbl_len; i++) {
        if ((ibv_query_gid_ex(id->id.verbs, id->id.port_num, i, &e, 0) == 0) &&
            (e.gid_type == IBV_GID_TYPE_ROCE_V2) &&
            !memcmp(&e.gid, &want, sizeof(want))) {
            *gid = e.gid;
            return (uint8_t)i;
        }
    }
    ibv_query_gid(id->id.verbs, id->id.port_num, 1, gid);
    return 1;
}

/* A peer addressed by GID (no LID: RoCE, or a GID-routed peer): a GRH to
 * dgid from the id's source GID (sv_cm_gid_index) */
void sv_cm_ah_global(struct sv_cm_id *id, struct ibv_ah_attr *ah,
                     const union ibv_gid *dgid)
{
    union ibv_gid gid;

    ah->is_global      = 1;
    ah->grh.dgid       = *dgid;
    ah->grh.hop_limit  = 64;
    ah->grh.sgid_index = sv_cm_gid_index(id, &gid);
}

/* Is the port up (ibv_query_port)? A port taken down resolves nothing */
int sv_cm_port_active(struct ibv_context *ctx, uint8_t port)
{
    struct ibv_port_attr pa;

    return (ibv_query_port(ctx, port, &pa) == 0) &&
           (pa.state == IBV_PORT_ACTIVE);
}
