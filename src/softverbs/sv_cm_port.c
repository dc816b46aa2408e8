/*
 * softverbs librdmacm: the ports bound ids hold, host-wide
 * (rdma_bind_addr(3), rdma_listen(3), RDMA_OPTION_ID_REUSEADDR and
 * RDMA_OPTION_ID_AFONLY of rdma_set_option(3)).
 *
 * The kernel's CM keeps one list of owners per (port space, port), whatever
 * their addresses and families (drivers/infiniband/core/cma.c: struct
 * rdma_bind_list, cma_ps_find), and cma_check_port admits a new owner
 * unless an owner overlaps it:
 *   - two ids that both set RDMA_OPTION_ID_REUSEADDR never conflict;
 *   - two ids of different families that are both "af-only" never do
 *     (rdma_bind_addr: an AF_INET id always is; an AF_INET6 id as the
 *     sysctl net.ipv6.bindv6only says; RDMA_OPTION_ID_AFONLY sets it);
 *   - if either address is a wildcard: EADDRNOTAVAIL;
 *   - the same address: EADDRINUSE; two other addresses coexist.
 * rdma_listen checks a reusable id again as if it were not reusable and
 * clears its flag (a listener is unique on its address); port 0 takes a
 * random port of 32768..60999 that nobody overlaps (cma_alloc_any_port).
 *
 * The owners are kept as open file description locks (fcntl(2)
 * F_OFD_SETLK) on the registry file (SOFTVERBS_SHM), far beyond its end,
 * where nothing is ever read or written: a bound id opens the file (its
 * own open file description, so that the ids of one process see each other
 * as those of two processes do) and read-locks one byte that names its
 * class at (port space, port) -- family, wildcard or specific, reusable,
 * af-only -- and, for a specific address, one byte that names the
 * address. A binder asks with F_OFD_GETLK (a write lock, which any read
 * lock blocks) whether another description holds a class or an address it
 * overlaps; a byte per port locked for writing around the test and the
 * taking (F_OFD_SETLKW) makes them one step for all processes. The
 * kernel drops the locks when the id closes the file (rdma_destroy_id) or
 * its process dies, so nothing is left behind and nothing is created.
 * IPv4 addresses name their byte exactly; an IPv6 address by a 32-bit
 * hash (two addresses of the host that collide would be refused as one).
 */
#include "sv_cm.h"
#include "sv_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

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

/* Byte offsets: each (port space, port) has a region of 2^36 bytes, at
 * 2^62 and up: its lock byte at 0, the 16 classes at 16..31, the specific
 * addresses (family, reusable, 32-bit key) from 2^34 */
#define SV_CM_LK_BASE   (1ll << 62)
#define SV_CM_LK_SHIFT  36
#define SV_CM_LK_CLASS  16
#define SV_CM_LK_ADDR   (1ll << 34)
#define SV_CM_EPHEMERAL_LOW  32768  /* net.ipv4.ip_local_port_range */
#define SV_CM_EPHEMERAL_HIGH 60999

/* What a bound id is, for the overlap rules */
struct sv_cm_owner {
    int      fam6;      /* AF_INET6 */
    int      wild;      /* the wildcard address */
    int      reuse;
    int      afonly;
    uint32_t key;       /* the address (IPv4) or its hash (IPv6) */
};

static int sv_cm_ps_index(enum rdma_port_space ps)
{
    switch (ps) {
    case RDMA_PS_TCP:   return 0;
    case RDMA_PS_UDP:   return 1;
    case RDMA_PS_IPOIB: return 2;
    default:            return 3; /* RDMA_PS_IB */
    }
}

static off_t sv_cm_lk_port(const struct sv_cm_id *id, uint16_t port)
{
    return SV_CM_LK_BASE +
           ((((off_t)sv_cm_ps_index(id->id.ps) << 16) | port) <<
            SV_CM_LK_SHIFT);
}

static off_t sv_cm_lk_class(off_t base, int fam6, int wild, int reuse,
                            int afonly)
{
    return base + SV_CM_LK_CLASS +
           ((fam6 << 3) | (wild << 2) | (reuse << 1) | afonly);
}

static off_t sv_cm_lk_addr(off_t base, int fam6, int reuse, uint32_t key)
{
    return base + SV_CM_LK_ADDR + ((off_t)fam6 << 33) +
           ((off_t)reuse << 32) + key;
}

static int sv_cm_lk(int fd, int cmd, short type, off_t off)
{
    struct flock fl;
    int ret;

    memset(&fl, 0, sizeof(fl)); /* l_pid 0, as F_OFD_* want it */
    fl.l_type   = type;
    fl.l_whence = SEEK_SET;
    fl.l_start  = off;
    fl.l_len    = 1;
    do {
        ret = fcntl(fd, cmd, &fl);
    } while ((ret < 0) && (errno == EINTR));
    if ((ret == 0) && (cmd == F_OFD_GETLK)) {
        return fl.l_type != F_UNLCK; /* another description holds it */
    }
    return ret;
}

/* An AF_INET6 id is af-only as net.ipv6.bindv6only says (0 by default) */
static int sv_cm_bindv6only(void)
{
    char c = '0';
    int fd = open("/proc/sys/net/ipv6/bindv6only", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (read(fd, &c, 1) != 1) {
            c = '0';
        }
        close(fd);
    }
    return c == '1';
}

static void sv_cm_owner_of(const struct sv_cm_id *id,
                           const struct sockaddr *sa, struct sv_cm_owner *o)
{
    memset(o, 0, sizeof(*o));
    o->fam6  = (sa->sa_family == AF_INET6);
    o->wild  = sv_cm_addr_is_any(sa);
    o->reuse = id->reuseaddr;
    o->afonly = id->afonly_set ? id->afonly :
                o->fam6 ? sv_cm_bindv6only() : 1;
    if (o->wild) {
        return;
    }
    if (!o->fam6) {
        o->key = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return;
    }
    o->key = sv_fnv1a(SV_FNV1A_INIT,
                      ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr,
                      16);
}

/* cma_check_port: 0, or the errno of the first owner that n overlaps
 * (wildcards first); fd is n's own description, whose locks do not count.
 * With the port's lock byte held */
static int sv_cm_port_check(int fd, off_t base, const struct sv_cm_owner *n)
{
    int cls, f, w, r, a;

    for (cls = 0; cls < 16; cls++) {
        f = cls >> 3;
        w = (cls >> 2) & 1;
        r = (cls >> 1) & 1;
        a = cls & 1;
        if ((n->reuse && r) || (n->afonly && a && (f != n->fam6)) ||
            (!n->wild && !w)) {
            continue; /* reusable both, af-only both, or two specifics */
        }
        if (sv_cm_lk(fd, F_OFD_GETLK, F_WRLCK,
                     sv_cm_lk_class(base, f, w, r, a)) != 0) {
            return EADDRNOTAVAIL;
        }
    }
    for (r = 0; !n->wild && (r < 2); r++) {
        if (!(n->reuse && r) &&
            (sv_cm_lk(fd, F_OFD_GETLK, F_WRLCK,
                      sv_cm_lk_addr(base, n->fam6, r, n->key)) != 0)) {
            return EADDRINUSE;
        }
    }
    return 0;
}

/* Drop what id holds and hold what its address and flags now say */
static void sv_cm_port_take(struct sv_cm_id *id, off_t base,
                            const struct sv_cm_owner *o)
{
    if (id->lk_class != 0) {
        sv_cm_lk(id->port_fd, F_OFD_SETLK, F_UNLCK, id->lk_class);
    }
    if (id->lk_addr != 0) {
        sv_cm_lk(id->port_fd, F_OFD_SETLK, F_UNLCK, id->lk_addr);
    }
    id->lk_port  = base;
    id->lk_class = sv_cm_lk_class(base, o->fam6, o->wild, o->reuse,
                                  o->afonly);
    id->lk_addr  = o->wild ? 0 : sv_cm_lk_addr(base, o->fam6, o->reuse,
                                                o->key);
    sv_cm_lk(id->port_fd, F_OFD_SETLK, F_RDLCK, id->lk_class);
    if (id->lk_addr != 0) {
        sv_cm_lk(id->port_fd, F_OFD_SETLK, F_RDLCK, id->lk_addr);
    }
}

/* The file whose locks are the ports: the registry, host-wide; with
 * SOFTVERBS_SOCKET_DIR a file per host there (sv_cm_hosts.c), so that two
 * hosts of one registry each have every port */
static int sv_cm_port_open(struct sv_cm_id *id)
{
    const char *path = getenv("SOFTVERBS_SHM");
    const char *dir  = sv_cm_sock_dir();
    char host_path[PATH_MAX];

    if (id->port_fd >= 0) {
        return 0;
    }
    path = path ? path : "/dev/shm/softverbs";
    if (dir == NULL) {
        id->port_fd = open(path, O_RDWR | O_CLOEXEC);
    } else {
        snprintf(host_path, sizeof(host_path),
                 "%s/softverbs-%08x-ports-%llu", dir, sv_cm_hosts_tag(),
                 (unsigned long long)sv_cm_host_key());
        id->port_fd = open(host_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    }
    return (id->port_fd < 0) ? -1 : 0;
}

/* Check and take sa's port for id (the port's lock held meanwhile) */
static int sv_cm_port_try(struct sv_cm_id *id, const struct sockaddr *sa,
                          int ephemeral)
{
    off_t base = sv_cm_lk_port(id, sv_cm_addr_port(sa));
    struct sv_cm_owner o;
    int err;

    sv_cm_owner_of(id, sa, &o);
    if (sv_cm_lk(id->port_fd, F_OFD_SETLKW, F_WRLCK, base) != 0) {
        return errno;
    }
    /* an ephemeral port is one nobody overlaps, reusable or not */
    o.reuse = ephemeral ? 0 : o.reuse;
    err     = sv_cm_port_check(id->port_fd, base, &o);
    o.reuse = id->reuseaddr;
    if (err == 0) {
        sv_cm_port_take(id, base, &o);
    }
    sv_cm_lk(id->port_fd, F_OFD_SETLK, F_UNLCK, base);
    return err;
}

int sv_cm_port_bind(struct sv_cm_id *id, struct sockaddr *sa)
{
    int tries, err;

    if (sv_cm_port_open(id) != 0) {
        return -1;
    }
    if (sv_cm_addr_port(sa) != 0) {
        err = sv_cm_port_try(id, sa, 0);
    } else {
        err = EADDRNOTAVAIL; /* every port tried overlapped */
        for (tries = 0; (tries < 1000) && (err == EADDRNOTAVAIL ||
                                            err == EADDRINUSE); tries++) {
            sv_cm_addr_set_port(sa, SV_CM_EPHEMERAL_LOW +
                                (sv_cm_rand() % (SV_CM_EPHEMERAL_HIGH -
                                                 SV_CM_EPHEMERAL_LOW + 1)));
            err = sv_cm_port_try(id, sa, 1);
        }
        if (err != 0) {
            sv_cm_addr_set_port(sa, 0);
        }
    }
    if (err != 0) {
        sv_cm_port_release(id);
        errno = err;
        return -1;
    }
    return 0;
}

/* The id's address or flags changed (a wildcard source resolved, an
 * option set): what it holds follows, with no check, as the kernel's
 * owner list reads them when the next binder comes */
void sv_cm_port_update(struct sv_cm_id *id)
{
    const struct sockaddr *sa = &id->id.route.addr.src_addr;
    struct sv_cm_owner o;

    if (id->lk_class == 0) {
        return;
    }
    sv_cm_owner_of(id, sa, &o);
    if (sv_cm_lk(id->port_fd, F_OFD_SETLKW, F_WRLCK, id->lk_port) == 0) {
        sv_cm_port_take(id, id->lk_port, &o);
        sv_cm_lk(id->port_fd, F_OFD_SETLK, F_UNLCK, id->lk_port);
    }
}

/* rdma_listen: a reusable id must overlap nobody, reusable or not, and
 * stops being reusable (the kernel's rdma_listen) */
int sv_cm_port_listen(struct sv_cm_id *id)
{
    const struct sockaddr *sa = &id->id.route.addr.src_addr;
    struct sv_cm_owner o;
    int err;

    if (!id->reuseaddr || (id->lk_class == 0)) {
        return 0;
    }
    sv_cm_owner_of(id, sa, &o);
    o.reuse = 0;
    if (sv_cm_lk(id->port_fd, F_OFD_SETLKW, F_WRLCK, id->lk_port) != 0) {
        return -1;
    }
    err = sv_cm_port_check(id->port_fd, id->lk_port, &o);
    if (err == 0) {
        id->reuseaddr = 0;
        sv_cm_port_take(id, id->lk_port, &o);
    }
    sv_cm_lk(id->port_fd, F_OFD_SETLK, F_UNLCK, id->lk_port);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

void sv_cm_port_release(struct sv_cm_id *id)
{
    if (id->port_fd >= 0) {
        close(id->port_fd); /* its locks go with it */
    }
    id->port_fd  = -1;
    id->lk_port  = 0;
    id->lk_class = 0;
    id->lk_addr  = 0;
}
