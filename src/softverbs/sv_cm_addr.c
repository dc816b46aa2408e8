/*
 * softverbs librdmacm: addresses. On a fabric, IPoIB gives each HCA port an
 * IP address, and the CM resolves an IP address to the port. Here every IP
 * address of the host (any interface, loopback included, IPv4 and IPv6)
 * maps to one softverbs port: SOFTVERBS_CM_PORT=<device>:<port> (default
 * the first device, port 1; a malformed or unknown value is named on
 * stderr and the default used). An address that is not the host's cannot
 * be reached (ADDR_ERROR). The CM's device contexts and default protection
 * domains (one each per device, as rdma-core's cma_dev) live here too.
 */
#include "sv_cm.h"
#include "sv_hash.h"

#include <errno.h>
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
            fprintf(stderr, "softverbs: SOFTVERBS_CM_PORT='%s' is not "
                    "<device>:<port>; using the first device, port 1\n",
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
                fprintf(stderr, "softverbs: SOFTVERBS_CM_PORT='%s': no such "
                        "device; using the first device, port 1\n", env);
            }
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
}

socklen_t sv_cm_addr_len(const struct sockaddr *sa)
{
    return (sa->sa_family == AF_INET6) ? sizeof(struct sockaddr_in6) :
           (sa->sa_family == AF_INET) ? sizeof(struct sockaddr_in) :
           (sa->sa_family == AF_IB) ? sizeof(struct sockaddr_ib) : 0;
}

uint16_t sv_cm_addr_port(const struct sockaddr *sa)
{
    return ntohs((sa->sa_family == AF_INET6) ?
                 ((const struct sockaddr_in6 *)sa)->sin6_port :
                 ((const struct sockaddr_in *)sa)->sin_port);
}

void sv_cm_addr_set_port(struct sockaddr *sa, uint16_t port)
{
    if (sa->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
    } else {
        ((struct sockaddr_in *)sa)->sin_port = htons(port);
    }
}

int sv_cm_addr_is_any(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET6) {
        return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
                       &in6addr_any, sizeof(struct in6_addr));
    }
    return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
           htonl(INADDR_ANY);
}

void sv_cm_addr_set_src_ip(struct sockaddr *src, const struct sockaddr *ip)
{
    if (src->sa_family == AF_INET6) {
        ((struct sockaddr_in6 *)src)->sin6_addr =
                ((const struct sockaddr_in6 *)ip)->sin6_addr;
    } else {
        ((struct sockaddr_in *)src)->sin_addr =
                ((const struct sockaddr_in *)ip)->sin_addr;
    }
}

/* Whether sa is an address of this host (the wildcard counts) */
int sv_cm_addr_local(const struct sockaddr *sa)
{
    struct ifaddrs *ifs, *ifa;
    int found = 0;

    if ((sa->sa_family != AF_INET) && (sa->sa_family != AF_INET6)) {
        return 0;
    }
    if (sv_cm_addr_is_any(sa)) {
        return 1;
    }
    if ((sa->sa_family == AF_INET) &&
        ((ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) ==
         127)) {
        return 1; /* 127.0.0.0/8: loopback */
    }
    if (getifaddrs(&ifs) != 0) {
        return 0;
    }
    for (ifa = ifs; (ifa != NULL) && !found; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) ||
            (ifa->ifa_addr->sa_family != sa->sa_family)) {
            continue;
        }
        if (sa->sa_family == AF_INET) {
            found = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr ==
                    ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
        } else {
            found = !memcmp(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr,
                            &((const struct sockaddr_in6 *)sa)->sin6_addr,
                            sizeof(struct in6_addr));
        }
    }
    freeifaddrs(ifs);
    return found;
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

/* rdma-core's cma_dev PD: one per device, allocated on first use */
struct ibv_pd *sv_cm_default_pd(struct ibv_context *ctx)
{
    struct ibv_pd *pd = NULL;
    int i;

    pthread_mutex_lock(&sv_cm_dev_lock);
    for (i = 0; i < sv_cm_num_devs; i++) {
        if (sv_cm_ctxs[i] == ctx) {
            if (sv_cm_pds[i] == NULL) {
                sv_cm_pds[i] = ibv_alloc_pd(ctx);
            }
            pd = sv_cm_pds[i];
            break;
        }
    }
    pthread_mutex_unlock(&sv_cm_dev_lock);
    return pd;
}

/*
 * The abstract unix socket that stands for (port space, address, port):
 * "softverbs-cm-<registry path hash>-<ps>-<address>-<port>", the address
 * written "any" for a wildcard listener. Every address of the host is the
 * same port here, so a connection to any of them tries the exact address,
 * then the wildcard listener.
 */
socklen_t sv_cm_sock_name(struct sockaddr_un *un, enum rdma_port_space ps,
                          const struct sockaddr *sa, int wildcard)
{
    const char *path = getenv("SOFTVERBS_SHM");
    char host[INET6_ADDRSTRLEN] = "any";
    uint32_t tag = sv_fnv1a_str(path ? path : "/dev/shm/softverbs");
    int n;

    if (!wildcard && !sv_cm_addr_is_any(sa)) {
        inet_ntop(sa->sa_family, (sa->sa_family == AF_INET6) ?
                  (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr :
                  (const void *)&((const struct sockaddr_in *)sa)->sin_addr,
                  host, sizeof(host));
    }
    memset(un, 0, sizeof(*un));
    un->sun_family = AF_UNIX;
    n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
                 "softverbs-cm-%08x-%d-%s-%u", tag, (int)ps, host,
                 sv_cm_addr_port(sa));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
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

/* The QP type of an rdma_getaddrinfo result, as librdmacm derives it
 * (rdma-core librdmacm/addrinfo.c, ucma_convert_to_ai and
 * ucma_convert_to_rai): the hints' if given, else from the socket type
 * getaddrinfo(3) answers for the port space's protocol: UDP (RDMA_PS_UDP,
 * _IPOIB) gives datagrams, a UD QP; TCP or none a stream, RC. A multicast
 * group (mckey's rdma_getaddrinfo with RDMA_PS_UDP) thus comes back UD. */
static enum ibv_qp_type sv_cm_gai_qp_type(const struct rdma_addrinfo *hints)
{
    if (hints == NULL) {
        return IBV_QPT_RC;
    }
    if (hints->ai_qp_type) {
        return hints->ai_qp_type;
    }
    return ((hints->ai_port_space == RDMA_PS_UDP) ||
            (hints->ai_port_space == RDMA_PS_IPOIB)) ? IBV_QPT_UD :
           IBV_QPT_RC;
}

/* man rdma_getaddrinfo: numeric and named hosts through getaddrinfo(3),
 * one rdma_addrinfo per result, RC over RDMA_PS_TCP unless the hints say
 * otherwise; RAI_PASSIVE gives a source address to bind */
SV_CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
                                  const struct rdma_addrinfo *hints,
                                  struct rdma_addrinfo **res)
{
    struct addrinfo ai_hints, *ai = NULL, *a;
    struct rdma_addrinfo *head = NULL, **tail = &head, *r;
    int passive = hints && (hints->ai_flags & RAI_PASSIVE);
    int ret;

    memset(&ai_hints, 0, sizeof(ai_hints));
    ai_hints.ai_family   = hints ? hints->ai_family : AF_UNSPEC;
    ai_hints.ai_socktype = SOCK_STREAM;
    ai_hints.ai_flags    = (passive ? AI_PASSIVE : 0) |
                           ((hints && (hints->ai_flags & RAI_NUMERICHOST)) ?
                            AI_NUMERICHOST : 0);
    if ((ai_hints.ai_family != AF_INET) && (ai_hints.ai_family != AF_INET6)) {
        ai_hints.ai_family = AF_UNSPEC;
    }
    ret = getaddrinfo(node, service, &ai_hints, &ai);
    if (ret != 0) {
        errno = (ret == EAI_SYSTEM) ? errno : ENODEV;
        return ret;
    }
    for (a = ai; a != NULL; a = a->ai_next) {
        r = calloc(1, sizeof(*r));
        if (r == NULL) {
            break;
        }
        r->ai_flags      = hints ? hints->ai_flags : 0;
        r->ai_family     = a->ai_family;
        r->ai_qp_type    = sv_cm_gai_qp_type(hints);
        r->ai_port_space = (hints && hints->ai_port_space) ?
                           hints->ai_port_space :
                           (r->ai_qp_type == IBV_QPT_UD) ? RDMA_PS_UDP :
                           RDMA_PS_TCP;
        if (passive) {
            r->ai_src_len  = a->ai_addrlen;
            r->ai_src_addr = malloc(a->ai_addrlen);
            if (r->ai_src_addr != NULL) {
                memcpy(r->ai_src_addr, a->ai_addr, a->ai_addrlen);
            }
        } else {
            r->ai_dst_len  = a->ai_addrlen;
            r->ai_dst_addr = malloc(a->ai_addrlen);
            if (r->ai_dst_addr != NULL) {
                memcpy(r->ai_dst_addr, a->ai_addr, a->ai_addrlen);
            }
            if (hints && hints->ai_src_addr) {
                r->ai_src_len  = hints->ai_src_len;
                r->ai_src_addr = malloc(hints->ai_src_len);
                if (r->ai_src_addr != NULL) {
                    memcpy(r->ai_src_addr, hints->ai_src_addr,
                           hints->ai_src_len);
                }
            }
        }
        *tail = r;
        tail  = &r->ai_next;
    }
    freeaddrinfo(ai);
    if (head == NULL) {
        errno = ENOMEM;
        return -1;
    }
    *res = head;
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
