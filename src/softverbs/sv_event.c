/*
 * softverbs event sockets: completion channels and async fds are abstract
 * unix datagram sockets named after the registry, so that any process can
 * wake them. Abstract names belong to a network namespace: where the
 * processes of one registry live in several (the hosts of
 * contrib/cluster-one-host.sh), SOFTVERBS_SOCKET_DIR names a directory
 * they share, and the sockets are files there (left behind when their
 * owner goes, until the directory is removed; a name still bound, or a
 * stale file, is skipped as in the abstract case). Here too: the spill of
 * events a full socket refused, and the reading of a context's async events
 * (ibv_get_async_event, ibv_ack_async_event).
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

static int sv_ev_sendto(int fd, char tag, uint32_t id,
                        const struct sv_ev_msg *msg)
{
    struct sockaddr_un sun;
    socklen_t len = sv_ev_addr(&sun, tag, id);

    return sendto(fd, msg, sizeof(*msg), MSG_DONTWAIT,
                  (struct sockaddr *)&sun, len) < 0 ? -1 : 0;
}

/* Under the spill's lock: the first entry for (tag, id), or -1 */
static int sv_ev_spill_find(const struct sv_ev_spill *sp, char tag,
                            uint32_t id)
{
    uint32_t i;

    for (i = 0; i < sp->count; i++) {
        if ((sp->ent[i].tag == (uint32_t)tag) && (sp->ent[i].id == id)) {
            return (int)i;
        }
    }
    return -1;
}

/* Under the spill's lock */
static void sv_ev_spill_remove(struct sv_ev_spill *sp, uint32_t i)
{
    memmove(&sp->ent[i], &sp->ent[i + 1],
            (sp->count - i - 1) * sizeof(sp->ent[0]));
    /* release: pairs with the lock-free look of sv_ev_refill */
    __atomic_store_n(&sp->count, sp->count - 1, __ATOMIC_RELEASE);
}

static void sv_ev_spill_add(char tag, uint32_t id, const struct sv_ev_msg *msg)
{
    struct sv_ev_spill *sp = &sv_g.shm->ev_spill;
    struct sv_ev_spill_ent *e;
    uint32_t lost = 0;

    sv_shm_mutex_lock(&sp->lock);
    if (sp->count == SV_EV_SPILL_LEN) {
        /* the oldest goes: it belongs to a reader that stopped reading */
        lost = ++sp->lost;
        sv_ev_spill_remove(sp, 0);
    }
    e      = &sp->ent[sp->count];
    e->tag = (uint32_t)tag;
    e->id  = id;
    e->msg = *msg;
    __atomic_store_n(&sp->count, sp->count + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sp->lock);
    if (lost != 0) {
        sv_warn("%u events lost: the event spill (%u) is full of events "
                "nobody reads", lost, SV_EV_SPILL_LEN);
    }
}

/*
 * The event to the socket (tag, id). A socket that is not bound (its owner
 * is gone) is nobody to tell. EAGAIN means either that the receiver holds
 * max_dgram_qlen + 1 unread datagrams or that our sender socket's send
 * buffer is full of datagrams that other receivers have not read (Linux
 * charges them to the sender until they are read): a fresh socket tells
 * which. A full receiver gets the event through the spill, then a kick,
 * which lands if the receiver read meanwhile; if it does not land the
 * receiver is still full, and refills from the spill at each read.
 */
void sv_ev_send(char tag, uint32_t id, const struct sv_ev_msg *msg)
{
    struct sv_ev_msg kick;
    int fd = sv_ev_sender();

    if ((fd < 0) || (sv_ev_sendto(fd, tag, id, msg) == 0) ||
        (errno != EAGAIN)) {
        return;
    }
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        sv_error("socket() failed: %m");
        return;
    }
    if ((sv_ev_sendto(fd, tag, id, msg) < 0) && (errno == EAGAIN)) {
        sv_ev_spill_add(tag, id, msg);
        memset(&kick, 0, sizeof(kick));
        kick.kind = SV_EV_KICK;
        sv_ev_sendto(fd, tag, id, &kick);
    }
    close(fd);
}

/*
 * The reader of (tag, id) has read one datagram: the oldest event the
 * socket refused, if any, goes back into it, so that the socket stays
 * readable while events wait and they are read in order
 */
void sv_ev_refill(char tag, uint32_t id)
{
    struct sv_ev_spill *sp = &sv_g.shm->ev_spill;
    struct sv_ev_msg msg;
    int i;

    /* acquire: a count seen pairs with the entry written before it; an
     * entry added after this look comes with a kick or to a full socket,
     * whose next read looks again */
    if (__atomic_load_n(&sp->count, __ATOMIC_ACQUIRE) == 0) {
        return;
    }
    sv_shm_mutex_lock(&sp->lock);
    i = sv_ev_spill_find(sp, tag, id);
    if (i < 0) {
        pthread_mutex_unlock(&sp->lock);
        return;
    }
    msg = sp->ent[i].msg;
    sv_ev_spill_remove(sp, (uint32_t)i);
    pthread_mutex_unlock(&sp->lock);
    sv_ev_send(tag, id, &msg);
}

/* The socket (tag, id) is closed: its spilled events go */
void sv_ev_close(char tag, uint32_t id)
{
    struct sv_ev_spill *sp = &sv_g.shm->ev_spill;
    int i;

    if (__atomic_load_n(&sp->count, __ATOMIC_ACQUIRE) == 0) {
        return;
    }
    sv_shm_mutex_lock(&sp->lock);
    while ((i = sv_ev_spill_find(sp, tag, id)) >= 0) {
        sv_ev_spill_remove(sp, (uint32_t)i);
    }
    pthread_mutex_unlock(&sp->lock);
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


/* ---------------------------------------------------------------------
 * Async events of a context (its async_fd)
 * ------------------------------------------------------------------- */
/* The object an async event names, if it still exists: 1 and *obj (NULL
 * for a port), or 0 for a stale or foreign message */
static int sv_ev_object(const struct sv_ev_msg *m, void **obj)
{
    uint64_t cookie;
    uint32_t in_use;

    switch (m->kind) {
    case SV_EV_CQ:
        if (m->index >= SV_CQ_TBL) {
            return 0;
        }
        in_use = sv_g.shm->cqs[m->index].in_use;
        cookie = sv_g.shm->cqs[m->index].cookie;
        break;
    case SV_EV_QP:
        if (m->index >= SV_QP_TBL) {
            return 0;
        }
        in_use = sv_g.shm->qps[m->index].in_use;
        cookie = sv_g.shm->qps[m->index].cookie;
        break;
    case SV_EV_SRQ:
        if (m->index >= SV_SRQ_TBL) {
            return 0;
        }
        in_use = sv_g.shm->srqs[m->index].in_use;
        cookie = sv_g.shm->srqs[m->index].cookie;
        break;
    case SV_EV_PORT:
        *obj = NULL;
        return 1;
    default:
        return 0; /* a kick, or a kind this library does not send */
    }
    if (!in_use || (cookie != m->cookie)) {
        return 0;
    }
    *obj = (void *)(uintptr_t)m->cookie;
    return 1;
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context,
                                  struct ibv_async_event *event)
{
    struct sv_ev_msg msg;
    void *obj;
    ssize_t n;

    for (;;) {
        n = recv(context->async_fd, &msg, sizeof(msg), 0);
        if (n < 0) {
            return -1;
        }
        /* a kick (SV_EV_KICK) is dropped below, after the refill that
         * put its event in the socket */
        sv_ev_refill('a', sv_ctx(context)->ctx_id);
        if ((n != sizeof(msg)) || !sv_ev_object(&msg, &obj)) {
            continue; /* not from softverbs, or its object is gone */
        }
        memset(event, 0, sizeof(*event));
        event->event_type = msg.type;
        /* counted per object: its destroy waits for the acknowledgement */
        switch (msg.kind) {
        case SV_EV_CQ:
            event->element.cq = obj;
            pthread_mutex_lock(&event->element.cq->mutex);
            sv_cq(event->element.cq)->async_events_reported++;
            pthread_mutex_unlock(&event->element.cq->mutex);
            break;
        case SV_EV_QP:
            event->element.qp = obj;
            pthread_mutex_lock(&event->element.qp->mutex);
            sv_qp(event->element.qp)->events_reported++;
            pthread_mutex_unlock(&event->element.qp->mutex);
            break;
        case SV_EV_SRQ:
            event->element.srq = obj;
            pthread_mutex_lock(&event->element.srq->mutex);
            sv_srq(event->element.srq)->events_reported++;
            pthread_mutex_unlock(&event->element.srq->mutex);
            break;
        case SV_EV_PORT:
            /* a port of this context's device only (sv_port.c sends to
             * every context of the host) */
            if (msg.cookie != (uint64_t)sv_ctx(context)->dev->index) {
                continue;
            }
            event->element.port_num = (int)msg.index;
            break;
        }
        return 0;
    }
}

/* man ibv_get_async_event: every event must be acknowledged; destroying
 * its object waits until it is (the counts libibverbs keeps in the public
 * part of the object, events_completed) */
SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    pthread_mutex_t *mutex;
    pthread_cond_t *cond;
    uint32_t *completed;

    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        mutex     = &event->element.cq->mutex;
        cond      = &event->element.cq->cond;
        completed = &event->element.cq->async_events_completed;
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        mutex     = &event->element.qp->mutex;
        cond      = &event->element.qp->cond;
        completed = &event->element.qp->events_completed;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        mutex     = &event->element.srq->mutex;
        cond      = &event->element.srq->cond;
        completed = &event->element.srq->events_completed;
        break;
    default:
        return; /* port and device events have no object */
    }
    pthread_mutex_lock(mutex);
    ++*completed;
    pthread_cond_broadcast(cond);
    pthread_mutex_unlock(mutex);
}
