/*
 * softverbs librdmacm: event channels and events (see sv_cm.h), and the
 * CM's lock. The kernel's rdma_cm fd is readable when its file's event
 * list is not empty and only then (ucma_poll), whatever arrives on the
 * fabric meanwhile; programs rely on it (rping polls the fd, then blocks
 * in rdma_get_cm_event). So the messages of all ids are read by one thread
 * of the CM (sv_cm_thread.c), which makes the events, and a channel's fd
 * is an epoll fd over an eventfd that is readable while the channel's
 * queue holds events. The lowest of the CM's files but the ports'
 * (sv_cm_port.c): it calls none above it.
 */
#include "sv_cm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* The CM's lock, recursive (entry points call each other: rdma_create_ep
 * resolves and creates the QP, a child dropped is destroyed); the depth a
 * thread holds is kept so that a synchronous wait can release it all */
static pthread_mutex_t sv_cm_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static __thread int sv_cm_depth;

void sv_cm_lock(void)
{
    pthread_mutex_lock(&sv_cm_mutex);
    ++sv_cm_depth;
}

void sv_cm_unlock(void)
{
    --sv_cm_depth;
    pthread_mutex_unlock(&sv_cm_mutex);
}

int sv_cm_unlock_all(void)
{
    int depth = sv_cm_depth;

    while (sv_cm_depth > 0) {
        sv_cm_unlock();
    }
    return depth;
}

void sv_cm_relock(int depth)
{
    while (depth-- > 0) {
        sv_cm_lock();
    }
}

struct sv_cm_channel *sv_cm_channel_new(void)
{
    struct sv_cm_channel *c = calloc(1, sizeof(*c));
    struct epoll_event ev;

    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
    c->evfd  = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((c->ch.fd < 0) || (c->evfd < 0)) {
        goto err;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.ptr = NULL; /* the eventfd */
    if (epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, c->evfd, &ev) < 0) {
        goto err;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;

err:
    if (c->ch.fd >= 0) {
        close(c->ch.fd);
    }
    if (c->evfd >= 0) {
        close(c->evfd);
    }
    free(c);
    return NULL;
}

void sv_cm_channel_free(struct sv_cm_channel *c)
{
    struct sv_cm_event *ev;

    while ((ev = c->head) != NULL) {
        c->head = ev->next;
        free(ev);
    }
    close(c->ch.fd);
    close(c->evfd);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

SV_CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
    struct sv_cm_channel *c = sv_cm_channel_new();

    return c ? &c->ch : NULL;
}

/* Destroyed channels: kept (their fds closed, their queue freed) so that a
 * thread that calls rdma_get_cm_event on one finds it marked and blocks,
 * as its read(2) of the kernel's rdma_cm fd would block or fail; rping's
 * event thread loops into rdma_get_cm_event while its main thread
 * destroys the channel and exits. A list, so that they stay reachable */
static pthread_mutex_t sv_cm_grave_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_cm_channel *sv_cm_grave;

/* man rdma_destroy_event_channel: all ids of the channel must be
 * destroyed first (EBUSY otherwise, as rdma-core leaves it to the user;
 * freeing it under live ids would leave them dangling) */
SV_CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
    struct sv_cm_channel *c = (struct sv_cm_channel *)ch;
    struct sv_cm_event *ev;

    sv_cm_lock();
    if (c->ids != NULL) {
        sv_cm_unlock();
        return; /* ids still use it: kept, as freeing would corrupt them */
    }
    sv_cm_unlock();
    __atomic_store_n(&c->destroyed, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&c->lock);
    while ((ev = c->head) != NULL) {
        c->head = ev->next;
        free(ev);
    }
    c->tail = NULL;
    pthread_mutex_unlock(&c->lock);
    close(c->ch.fd);
    close(c->evfd);
    pthread_mutex_lock(&sv_cm_grave_lock);
    c->grave_next = sv_cm_grave;
    sv_cm_grave   = c;
    pthread_mutex_unlock(&sv_cm_grave_lock);
}

/* fork (sv_cm_thread.c): the destroyed channels' lock is held across it,
 * after the CM lock; in the child, both are made anew (the recursive CM
 * lock remembers the parent's thread as its owner), and the depth the
 * forking thread held before sv_cm_thread.c's prepare handler is returned,
 * to be taken again */
void sv_cm_chan_fork_lock(void)
{
    pthread_mutex_lock(&sv_cm_grave_lock);
}

void sv_cm_chan_fork_unlock(void)
{
    pthread_mutex_unlock(&sv_cm_grave_lock);
}

int sv_cm_chan_fork_child(void)
{
    pthread_mutexattr_t attr;
    int depth = sv_cm_depth - 1; /* the forking thread's, before prepare */

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&sv_cm_mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    sv_cm_depth = 0;
    pthread_mutex_init(&sv_cm_grave_lock, NULL);
    return depth;
}

struct sv_cm_event *sv_cm_event_new(struct sv_cm_id *id,
                                    enum rdma_cm_event_type type, int status)
{
    struct sv_cm_event *ev = calloc(1, sizeof(*ev));

    if (ev != NULL) {
        ev->event.id     = &id->id;
        ev->event.event  = type;
        ev->event.status = status;
    }
    return ev;
}

/* The channel's fd is readable while events wait and only then, as the
 * kernel's rdma_cm fd is (ucma_poll: EPOLLIN when the file's event list is
 * not empty): the eventfd's count is raised here and cleared when the
 * queue empties, both under the queue's lock */
void sv_cm_event_queue(struct sv_cm_event *ev)
{
    struct sv_cm_channel *c = sv_cm_id(ev->event.id)->chan;
    uint64_t one = 1;

    ev->next = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->tail != NULL) {
        c->tail->next = ev;
    } else {
        c->head = ev;
    }
    c->tail = ev;
    if (write(c->evfd, &one, sizeof(one)) != sizeof(one)) {
        /* EAGAIN: the count is at its maximum, still readable */
    }
    pthread_mutex_unlock(&c->lock);
}

/* The queue is empty: the fd stops being readable (with c->lock held) */
static void sv_cm_channel_clear(struct sv_cm_channel *c)
{
    uint64_t count;

    if (read(c->evfd, &count, sizeof(count)) < 0) {
        /* EAGAIN: nothing was signalled */
    }
}

/* The first queued event (of id, when id is set) */
static struct sv_cm_event *sv_cm_channel_pop(struct sv_cm_channel *c,
                                             struct sv_cm_id *id)
{
    struct sv_cm_event *ev, *prev = NULL;

    pthread_mutex_lock(&c->lock);
    for (ev = c->head; ev != NULL; prev = ev, ev = ev->next) {
        if ((id == NULL) || (ev->event.id == &id->id) ||
            (ev->event.listen_id == &id->id)) {
            break;
        }
    }
    if (ev != NULL) {
        if (prev != NULL) {
            prev->next = ev->next;
        } else {
            c->head = ev->next;
        }
        if (c->tail == ev) {
            c->tail = prev;
        }
    }
    if ((ev != NULL) && (c->head == NULL)) {
        sv_cm_channel_clear(c);
    }
    pthread_mutex_unlock(&c->lock);
    return ev;
}

/* A destroyed channel's waiter: see rdma_destroy_event_channel */
static void sv_cm_channel_block(void)
{
    for (;;) {
        pause();
    }
}

/* The next event; blocking unless the application made the fd O_NONBLOCK
 * (UCX does): then EAGAIN when none waits. Only the channel's lock is
 * taken: a thread taking events does not wait for one that holds the CM's
 * lock to connect or destroy */
SV_CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch,
                                   struct rdma_cm_event **event)
{
    struct sv_cm_channel *c = (struct sv_cm_channel *)ch;
    struct sv_cm_event *ev;
    struct epoll_event e;
    int flags;

    if ((c == NULL) || (event == NULL)) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        if (__atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE)) {
            sv_cm_channel_block();
        }
        ev = sv_cm_channel_pop(c, NULL);
        if (ev != NULL) {
            __atomic_add_fetch(&sv_cm_id(ev->event.id)->events_out, 1,
                               __ATOMIC_SEQ_CST);
            *event = &ev->event;
            return 0;
        }
        flags = fcntl(c->ch.fd, F_GETFL);
        if (flags < 0) {
            if (!__atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE)) {
                return -1; /* EBADF: the application closed the fd */
            }
            continue; /* destroyed meanwhile: blocks above */
        }
        if (flags & O_NONBLOCK) {
            errno = EAGAIN;
            return -1;
        }
        if ((epoll_wait(c->ch.fd, &e, 1, -1) < 0) && (errno != EINTR) &&
            !__atomic_load_n(&c->destroyed, __ATOMIC_ACQUIRE)) {
            return -1;
        }
    }
}

SV_CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    struct sv_cm_event *ev = (struct sv_cm_event *)event;
    struct sv_cm_id *id;

    if (event == NULL) {
        errno = EINVAL;
        return -1;
    }
    id = sv_cm_id(event->id);
    if ((__atomic_sub_fetch(&id->events_out, 1, __ATOMIC_SEQ_CST) <= 0) &&
        __atomic_load_n(&id->dead, __ATOMIC_SEQ_CST)) {
        sv_cm_id_release(id); /* destroyed before this ack */
    }
    free(ev);
    return 0;
}

int sv_cm_sync_wait(struct sv_cm_id *id, struct rdma_cm_event **event)
{
    struct sv_cm_channel *c = id->chan;
    struct sv_cm_event *ev;
    struct epoll_event e;
    int depth;

    for (;;) {
        ev = sv_cm_channel_pop(c, id);
        if (ev != NULL) {
            /* counted on the id it is of (a listener's request is its
             * child's), as rdma_ack_cm_event uncounts it */
            __atomic_add_fetch(&sv_cm_id(ev->event.id)->events_out, 1,
                               __ATOMIC_SEQ_CST);
            *event = &ev->event;
            return 0;
        }
        /* the CM thread needs the lock to make the event */
        depth = sv_cm_unlock_all();
        if ((epoll_wait(c->ch.fd, &e, 1, 100) < 0) && (errno != EINTR)) {
            sv_cm_relock(depth);
            return -1;
        }
        sv_cm_relock(depth);
    }
}

/* A synchronous id's call waits for its event, which stays in id->event
 * (its private data, e.g. the REP's of rdma_connect) until the next such
 * call or rdma_destroy_id acknowledges it (rdma-core's ucma_complete) */
int sv_cm_sync_result(struct sv_cm_id *id, enum rdma_cm_event_type expect)
{
    struct rdma_cm_event *ev;
    int type, status;

    if (id->id.event != NULL) {
        rdma_ack_cm_event(id->id.event);
        id->id.event = NULL;
    }
    if (sv_cm_sync_wait(id, &ev) != 0) {
        return -1;
    }
    type         = ev->event;
    status       = ev->status;
    id->id.event = ev;
    if ((type == (int)expect) && (status == 0)) {
        return 0;
    }
    errno = (status < 0) ? -status :
            (type == RDMA_CM_EVENT_REJECTED) ? ECONNREFUSED : EIO;
    return -1;
}

void sv_cm_channel_drop(struct sv_cm_channel *c, struct sv_cm_id *id)
{
    struct sv_cm_event **pp, *ev;

    pthread_mutex_lock(&c->lock);
    for (pp = &c->head; (ev = *pp) != NULL;) {
        if (ev->event.id == &id->id) {
            *pp = ev->next;
            free(ev);
        } else {
            pp = &ev->next;
        }
    }
    for (c->tail = NULL, ev = c->head; ev != NULL; ev = ev->next) {
        c->tail = ev;
    }
    if (c->head == NULL) {
        sv_cm_channel_clear(c);
    }
    pthread_mutex_unlock(&c->lock);
}

SV_CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        [RDMA_CM_EVENT_ADDR_RESOLVED]    = "RDMA_CM_EVENT_ADDR_RESOLVED",
        [RDMA_CM_EVENT_ADDR_ERROR]       = "RDMA_CM_EVENT_ADDR_ERROR",
        [RDMA_CM_EVENT_ROUTE_RESOLVED]   = "RDMA_CM_EVENT_ROUTE_RESOLVED",
        [RDMA_CM_EVENT_ROUTE_ERROR]      = "RDMA_CM_EVENT_ROUTE_ERROR",
        [RDMA_CM_EVENT_CONNECT_REQUEST]  = "RDMA_CM_EVENT_CONNECT_REQUEST",
        [RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
        [RDMA_CM_EVENT_CONNECT_ERROR]    = "RDMA_CM_EVENT_CONNECT_ERROR",
        [RDMA_CM_EVENT_UNREACHABLE]      = "RDMA_CM_EVENT_UNREACHABLE",
        [RDMA_CM_EVENT_REJECTED]         = "RDMA_CM_EVENT_REJECTED",
        [RDMA_CM_EVENT_ESTABLISHED]      = "RDMA_CM_EVENT_ESTABLISHED",
        [RDMA_CM_EVENT_DISCONNECTED]     = "RDMA_CM_EVENT_DISCONNECTED",
        [RDMA_CM_EVENT_DEVICE_REMOVAL]   = "RDMA_CM_EVENT_DEVICE_REMOVAL",
        [RDMA_CM_EVENT_MULTICAST_JOIN]   = "RDMA_CM_EVENT_MULTICAST_JOIN",
        [RDMA_CM_EVENT_MULTICAST_ERROR]  = "RDMA_CM_EVENT_MULTICAST_ERROR",
        [RDMA_CM_EVENT_ADDR_CHANGE]      = "RDMA_CM_EVENT_ADDR_CHANGE",
        [RDMA_CM_EVENT_TIMEWAIT_EXIT]    = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };

    if (((unsigned)event < sizeof(names) / sizeof(names[0])) &&
        (names[event] != NULL)) {
        return names[event];
    }
    return "UNKNOWN EVENT";
}

/* Take the events of id not yet got from its channel: its own (a
 * connection request's new id: not the request), and with requests also
 * those a listener has not handed out. Migrate takes the first (the
 * kernel's ucma_move_events: a listener's requests stay with it), destroy
 * both (ucma_cleanup_events) */
static struct sv_cm_event *sv_cm_channel_take(struct sv_cm_id *id,
                                              int with_requests)
{
    struct sv_cm_channel *c = id->chan;
    struct sv_cm_event *taken = NULL, **tail = &taken, **pp, *ev;

    pthread_mutex_lock(&c->lock);
    c->tail = NULL;
    for (pp = &c->head; (ev = *pp) != NULL;) {
        if (((ev->event.id == &id->id) && (ev->event.listen_id == NULL)) ||
            (with_requests && ((ev->event.id == &id->id) ||
                               (ev->event.listen_id == &id->id)))) {
            *pp   = ev->next;
            *tail = ev;
            tail  = &ev->next;
        } else {
            c->tail = ev;
            pp      = &ev->next;
        }
    }
    *tail = NULL;
    if (c->head == NULL) {
        c->tail = NULL;
        sv_cm_channel_clear(c);
    }
    pthread_mutex_unlock(&c->lock);
    return taken;
}

struct sv_cm_event *sv_cm_channel_take_events(struct sv_cm_id *id)
{
    return sv_cm_channel_take(id, 0);
}

/* rdma_destroy_id: the events of id not yet got, and its connection
 * requests not yet got, leave the channel (the kernel's
 * ucma_cleanup_events): no rdma_get_cm_event returns an event of a
 * destroyed id, whose memory is freed. Returned to the caller, which
 * destroys the requests' new ids (the kernel rejects them) and frees all */
struct sv_cm_event *sv_cm_channel_take_all(struct sv_cm_id *id)
{
    return sv_cm_channel_take(id, 1);
}
