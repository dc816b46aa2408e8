/*
 * softverbs librdmacm: the hosts of one registry, and the names of the
 * sockets that stand for listeners.
 *
 * On a fabric, rdma_resolve_addr reaches any host whose IP address routes
 * through an RDMA port (IPoIB, or the RoCE netdev), and the IB CM's REQ
 * travels to the port the path names. Here the processes of one registry
 * may live in several network namespaces, the hosts of
 * contrib/cluster-one-host.sh; they then share SOFTVERBS_SOCKET_DIR, and:
 *
 *  - a host is its network namespace (the inode of /proc/self/ns/net);
 *  - every process that opens the CM's devices publishes its host's
 *    addresses there: one file per address, naming the host and the LID
 *    and GID of the port the CM maps addresses to (sv_cm_addr.c). An
 *    address of another host is reachable when its file is there, as a
 *    route through IPoIB is: rdma_resolve_addr finds it, and
 *    rdma_resolve_route takes the path's destination LID and GID from it;
 *  - the socket of a listener is a file there, named after (port space,
 *    host, address or "any", port), so that the same address (127.0.0.1)
 *    or port of two hosts are two listeners, as on two machines; a
 *    connection tries the exact address, then the host's wildcard;
 *  - the ports bound ids hold are per host too: their locks are taken on
 *    a file per host there (sv_cm_port.c), not on the registry file.
 *
 * Without SOFTVERBS_SOCKET_DIR the names are abstract sockets, which
 * belong to the network namespace: one host, and addresses of other hosts
 * are not reachable (ADDR_ERROR, -EHOSTUNREACH).
 */
#include "sv_cm.h"
#include "sv_hash.h"

#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>


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

/* The longest directory a socket name fits under (sv_env.c checks
 * SOFTVERBS_SOCKET_DIR against the same room for libibverbs) */
#define SV_CM_HOSTS_DIR_MAX 80

const char *sv_cm_sock_dir(void)
{
    const char *dir = getenv("SOFTVERBS_SOCKET_DIR");
    struct stat st;

    /* the rule of libibverbs (sv_env.c, which names a malformed value at
     * init): an existing directory, short enough for a socket name */
    if ((dir == NULL) || (dir[0] == '\0') ||
        (strlen(dir) >= SV_CM_HOSTS_DIR_MAX) || (stat(dir, &st) != 0) ||
        !S_ISDIR(st.st_mode)) {
        return NULL;
    }
    return dir;
}

uint32_t sv_cm_hosts_tag(void)
{
    const char *path = getenv("SOFTVERBS_SHM");

    return sv_fnv1a_str(path ? path : "/dev/shm/softverbs");
}

uint64_t sv_cm_host_key(void)
{
    struct stat st;

    /* a process does not change its network namespace under librdmacm */
    return (stat("/proc/self/ns/net", &st) == 0) ? (uint64_t)st.st_ino : 0;
}

static int sv_cm_hosts_ip_str(const struct sockaddr *sa, char *buf,
                              size_t len)
{
    const void *ip = (sa->sa_family == AF_INET6) ?
        (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr :
        (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

    return (inet_ntop(sa->sa_family, ip, buf, len) == NULL) ? -1 : 0;
}

static int sv_cm_hosts_file(char *path, size_t len, const char *dir,
                            const struct sockaddr *sa)
{
    char ip[INET6_ADDRSTRLEN];

    if (sv_cm_hosts_ip_str(sa, ip, sizeof(ip)) != 0) {
        return -1;
    }
    snprintf(path, len, "%s/softverbs-%08x-addr-%s", dir, sv_cm_hosts_tag(),
             ip);
    return 0;
}

/* Whether an address is one a host of the fabric publishes: not loopback
 * and not IPv6 link-local (every host has those of its own) */
static int sv_cm_hosts_routable(const struct sockaddr *sa)
{
    const struct in6_addr *a6;

    if (sa->sa_family == AF_INET) {
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >>
                24) != 127;
    }
    if (sa->sa_family == AF_INET6) {
        a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return !IN6_IS_ADDR_LOOPBACK(a6) && !IN6_IS_ADDR_LINKLOCAL(a6) &&
               !IN6_IS_ADDR_V4MAPPED(a6);
    }
    return 0;
}

void sv_cm_hosts_publish(struct ibv_context *ctx, uint8_t port)
{
    const char *dir = sv_cm_sock_dir();
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    struct ibv_port_attr pa;
    struct ifaddrs *ifs, *ifa;
    union ibv_gid gid;
    FILE *f;
    int i;

    if ((dir == NULL) || (ctx == NULL) ||
        (ibv_query_port(ctx, port, &pa) != 0) ||
        (ibv_query_gid(ctx, port, 0, &gid) != 0) || (getifaddrs(&ifs) != 0)) {
        return;
    }
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || !sv_cm_hosts_routable(ifa->ifa_addr) ||
            (sv_cm_hosts_file(path, sizeof(path), dir, ifa->ifa_addr) != 0)) {
            continue;
        }
        /* written aside and renamed: a reader sees a whole file */
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
        f = fopen(tmp, "w");
        if (f == NULL) {
            continue;
        }
        fprintf(f, "%llu %u ", (unsigned long long)sv_cm_host_key(),
                (unsigned)pa.lid);
        for (i = 0; i < 16; i++) {
            fprintf(f, "%02x", gid.raw[i]);
        }
        fputc('\n', f);
        if ((fclose(f) != 0) || (rename(tmp, path) != 0)) {
            unlink(tmp);
        }
    }
    freeifaddrs(ifs);
}

int sv_cm_hosts_find(const struct sockaddr *sa, uint64_t *key, uint16_t *lid,
                     union ibv_gid *gid)
{
    const char *dir = sv_cm_sock_dir();
    unsigned long long k;
    char path[PATH_MAX], hex[33];
    unsigned l, b;
    FILE *f;
    int i, n;

    if (sv_cm_addr_local(sa)) {
        *key = sv_cm_host_key();
        return 1;
    }
    if ((dir == NULL) || !sv_cm_hosts_routable(sa) ||
        (sv_cm_hosts_file(path, sizeof(path), dir, sa) != 0) ||
        ((f = fopen(path, "r")) == NULL)) {
        return -1;
    }
    n = fscanf(f, "%llu %u %32s", &k, &l, hex);
    fclose(f);
    if ((n != 3) || (strlen(hex) != 32) || (l > 0xffff)) {
        return -1;
    }
    for (i = 0; i < 16; i++) {
        if (sscanf(&hex[2 * i], "%2x", &b) != 1) {
            return -1;
        }
        gid->raw[i] = (uint8_t)b;
    }
    *key = k;
    *lid = (uint16_t)l;
    return 0;
}

/*
 * The socket that stands for (port space, address, port), or the wildcard
 * listener of the address's host: abstract
 * "softverbs-cm-<registry hash>-<ps>-<address|any>-<port>" without a
 * socket directory, else a file there named after a hash of the same and
 * the host (a name short enough for sun_path with an IPv6 address). 0 when
 * the address's host is not known.
 */
socklen_t sv_cm_sock_name(struct sockaddr_un *un, enum rdma_port_space ps,
                          const struct sockaddr *sa, int wildcard)
{
    const char *dir = sv_cm_sock_dir();
    char host[INET6_ADDRSTRLEN] = "any", what[128];
    uint64_t key = 0;
    union ibv_gid gid;
    uint16_t lid;
    int n;

    if (!wildcard && !sv_cm_addr_is_any(sa) &&
        (sv_cm_hosts_ip_str(sa, host, sizeof(host)) != 0)) {
        return 0;
    }
    memset(un, 0, sizeof(*un));
    un->sun_family = AF_UNIX;
    if (dir == NULL) {
        n = snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1,
                     "softverbs-cm-%08x-%d-%s-%u", sv_cm_hosts_tag(), (int)ps,
                     host, sv_cm_addr_port(sa));
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    }
    if (sv_cm_hosts_find(sa, &key, &lid, &gid) < 0) {
        return 0;
    }
    snprintf(what, sizeof(what), "%d-%llu-%s-%u", (int)ps,
             (unsigned long long)key, host, sv_cm_addr_port(sa));
    n = snprintf(un->sun_path, sizeof(un->sun_path),
                 "%s/softverbs-%08x-cm-%08x", dir, sv_cm_hosts_tag(),
                 sv_fnv1a_str(what));
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* A listener's file left by a process that died (nobody accepts on it)
 * is removed, so that the name can be bound again; one still served
 * stays (the caller's bind then fails with EADDRINUSE) */
int sv_cm_sock_reclaim(const struct sockaddr_un *un, socklen_t len)
{
    int fd, ret;

    if (un->sun_path[0] == '\0') {
        return -1; /* abstract: the kernel frees it with its socket */
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    ret = connect(fd, (const struct sockaddr *)un, len);
    if ((ret != 0) && (errno == ECONNREFUSED)) {
        ret = unlink(un->sun_path);
    } else {
        ret = -1;
    }
    close(fd);
    return ret;
}

/* The listener's file, when its socket is one (rdma_destroy_id of the
 * process that listened: a forked child's copy of the id leaves it) */
void sv_cm_sock_unlink(struct sv_cm_id *id)
{
    struct sockaddr_un un;

    if ((sv_cm_sock_name(&un, id->id.ps, &id->id.route.addr.src_addr, 0) !=
         0) && (un.sun_path[0] != '\0')) {
        unlink(un.sun_path);
    }
}

/* The address of this host a route to dst leaves from: what connect(2) of
 * a datagram socket picks, sending nothing */
int sv_cm_addr_route_src(const struct sockaddr *dst, struct sockaddr *src)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd, ret = -1;

    fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if ((connect(fd, dst, sv_cm_addr_len(dst)) == 0) &&
        (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) &&
        (ss.ss_family == dst->sa_family)) {
        memcpy(src, &ss, sv_cm_addr_len((struct sockaddr *)&ss));
        ret = 0;
    }
    close(fd);
    return ret;
}
