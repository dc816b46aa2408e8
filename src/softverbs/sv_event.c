/*
 * softverbs event sockets: completion channels and async fds are abstract
 * unix datagram sockets named after the registry, so that any process can
 * wake them. Abstract names belong to a network namespace: where the
 * processes of one registry live in several (the hosts of
 * contrib/cluster-one-host.sh), SOFTVERBS_SOCKET_DIR names a directory
 * they share, and the sockets are files there (left behind when their
 * owner goes, until the directory is removed; a name still bound, or a
 * stale file, is skipped as in the abstract case).
 */
#include "sv.h"

#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

static socklen_t sv_ev_addr(struct sockaddr_un *sun, char tag, uint32_t id)
{
    int n;

    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    if (sv_g.sock_dir[0] != '\0') {
        n = snprintf(sun->sun_path, sizeof(sun->sun_path),
                     "%s/softverbs-%08x-%c-%u", sv_g.sock_dir, sv_g.shm_tag,
                     tag, id);
        return offsetof(struct sockaddr_un, sun_path) + n + 1;
    }
    /* abstract namespace: sun_path[0] == 0 */
    n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
                 "softverbs-%08x-%c-%u", sv_g.shm_tag, tag, id);
    return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

/* Returns the bound socket, or -1 with errno set */
static int sv_ev_socket(char tag, uint32_t id)
{
    struct sockaddr_un sun;
    socklen_t len = sv_ev_addr(&sun, tag, id);
    int fd, err;

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sv_error("socket() failed: %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sun, len) < 0) {
        err = errno;
        if (err != EADDRINUSE) {
            sv_error("bind(%c-%u) failed: %m", tag, id);
        }
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/*
 * An event socket ('a': context, 'c': completion channel) under a fresh id
 * from the registry's counter. A name still bound by a process of an earlier
 * registry at the same path (removed and formatted again, so the counters
 * restarted) is skipped. Returns the fd and sets *id_p, or -1 with errno.
 */
int sv_ev_open(char tag, uint32_t *id_p)
{
    uint32_t *next = (tag == 'a') ? &sv_g.shm->next_ctx_id :
                     &sv_g.shm->next_ch_id;
    uint32_t id;
    int i, fd = -1;

    for (i = 0; i < 64; i++) {
        sv_shm_lock();
        id = (*next)++;
        sv_shm_unlock();
        fd = sv_ev_socket(tag, id);
        if (fd >= 0) {
            *id_p = id;
            return fd;
        }
        if (errno != EADDRINUSE) {
            return -1;
        }
    }
    sv_error("no free event socket name for '%c'", tag);
    return -1;
}

/* One unbound sender socket per process (sendto is thread-safe); a
 * per-thread socket would leak one fd per thread that ever sent */
static int sv_ev_sender(void)
{
    static int sender = -1;
    int fd, expected = -1;

    /* acquire: a socket published by another thread is fully created */
    fd = __atomic_load_n(&sender, __ATOMIC_ACQUIRE);
    if (fd >= 0) {
        return fd;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        sv_error("socket() failed: %m");
        return -1;
    }
    /* acq_rel: publish ours, or see the one another thread published */
    if (!__atomic_compare_exchange_n(&sender, &expected, fd, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        close(fd);
        return expected;
    }
    return fd;
}

void sv_ev_send(char tag, uint32_t id, const struct sv_ev_msg *msg)
{
    struct sockaddr_un sun;
    socklen_t len = sv_ev_addr(&sun, tag, id);
    int fd = sv_ev_sender();

    if (fd >= 0) {
        sendto(fd, msg, sizeof(*msg), MSG_DONTWAIT, (struct sockaddr *)&sun,
               len);
    }
}

/* An async event for the object (kind, registry index, owner's pointer) to
 * the async fd of the context ctx_id */
void sv_ev_async(uint32_t ctx_id, enum sv_ev_kind kind,
                 enum ibv_event_type type, uint32_t index, uint64_t cookie)
{
    struct sv_ev_msg msg;

    memset(&msg, 0, sizeof(msg));
    msg.kind   = kind;
    msg.type   = type;
    msg.index  = index;
    msg.cookie = cookie;
    sv_ev_send('a', ctx_id, &msg);
}
