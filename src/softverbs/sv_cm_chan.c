/*
 * softverbs librdmacm: event channels and events (see sv_cm.h). An event
 * channel's fd is an epoll fd over the sockets of its ids and an eventfd
 * that is made readable while events are queued, so that an application
 * that polls the fd (UCX makes it non-blocking and polls it) is woken both
 * by a peer's message and by an event made without one (ADDR_RESOLVED).
 */
#include "sv_cm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

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

/* man rdma_destroy_event_channel: all ids of the channel must be
 * destroyed first (EBUSY otherwise, as rdma-core leaves it to the user;
 * freeing it under live ids would leave them dangling) */
SV_CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
    struct sv_cm_channel *c = (struct sv_cm_channel *)ch;

    if (c->ids != NULL) {
        return; /* ids still use it: kept, as freeing would corrupt them */
    }
    sv_cm_channel_free(c);
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
    pthread_mutex_unlock(&c->lock);
    /* the channel's fd reads as ready while events wait */
    if (write(c->evfd, &one, sizeof(one)) != sizeof(one)) {
        /* EAGAIN: the counter is at its maximum, still readable */
    }
}

void sv_cm_channel_watch(struct sv_cm_id *id, int fd)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.ptr = id;
    epoll_ctl(id->chan->ch.fd, EPOLL_CTL_ADD, fd, &ev);
}

void sv_cm_channel_unwatch(struct sv_cm_id *id, int fd)
{
    epoll_ctl(id->chan->ch.fd, EPOLL_CTL_DEL, fd, NULL);
}

/* Read what arrived on the channel's sockets, waiting up to timeout_ms
 * (-1: until something arrives); 0 when something was read or is queued */
static int sv_cm_channel_progress(struct sv_cm_channel *c, int timeout_ms)
{
    struct epoll_event evs[16];
    struct sv_cm_id *id;
    uint64_t count;
    int n, i;

    n = epoll_wait(c->ch.fd, evs, 16, timeout_ms);
    if (n < 0) {
        return (errno == EINTR) ? 0 : -1;
    }
    for (i = 0; i < n; i++) {
        id = evs[i].data.ptr;
        if (id == NULL) {
            if (read(c->evfd, &count, sizeof(count)) < 0) {
                /* EAGAIN: already drained */
            }
        } else if (id->state == SV_CM_LISTEN) {
            sv_cm_listen_input(id);
        } else {
            sv_cm_conn_input(id);
        }
    }
    return 0;
}

/* The first queued event (of id, when id is set) */
static struct sv_cm_event *sv_cm_channel_pop(struct sv_cm_channel *c,
                                             struct sv_cm_id *id)
{
    struct sv_cm_event *ev, *prev = NULL;
    uint64_t one = 1;

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
    pthread_mutex_unlock(&c->lock);
    if ((ev != NULL) && (c->head != NULL)) {
        /* more wait: keep the fd readable */
        if (write(c->evfd, &one, sizeof(one)) != sizeof(one)) {
        }
    }
    return ev;
}

SV_CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch,
                                   struct rdma_cm_event **event)
{
    struct sv_cm_channel *c = (struct sv_cm_channel *)ch;
    struct sv_cm_event *ev;
    int nonblock;

    if ((c == NULL) || (event == NULL)) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        ev = sv_cm_channel_pop(c, NULL);
        if (ev != NULL) {
            sv_cm_id(ev->event.id)->events_out++;
            *event = &ev->event;
            return 0;
        }
        /* the application may have made the fd non-blocking (fcntl) */
        nonblock = !!(fcntl(c->ch.fd, F_GETFL) & O_NONBLOCK);
        if (sv_cm_channel_progress(c, nonblock ? 0 : -1) < 0) {
            return -1;
        }
        if (nonblock && (c->head == NULL)) {
            errno = EAGAIN;
            return -1;
        }
    }
}

SV_CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    struct sv_cm_event *ev = (struct sv_cm_event *)event;

    if (event == NULL) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_id(event->id)->events_out--;
    free(ev);
    return 0;
}

int sv_cm_sync_wait(struct sv_cm_id *id, struct rdma_cm_event **event)
{
    struct sv_cm_event *ev;

    for (;;) {
        ev = sv_cm_channel_pop(id->chan, id);
        if (ev != NULL) {
            id->events_out++;
            *event = &ev->event;
            return 0;
        }
        if (sv_cm_channel_progress(id->chan, 100) < 0) {
            return -1;
        }
    }
}

int sv_cm_sync_result(struct sv_cm_id *id, enum rdma_cm_event_type expect)
{
    struct rdma_cm_event *ev;
    int type, status;

    if (sv_cm_sync_wait(id, &ev) != 0) {
        return -1;
    }
    type   = ev->event;
    status = ev->status;
    rdma_ack_cm_event(ev);
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

/* man rdma_migrate_id: the id and its future events move to another
 * channel; its socket is watched there */
SV_CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *cm_id,
                                 struct rdma_event_channel *channel)
{
    struct sv_cm_id *id = sv_cm_id(cm_id), **pp;
    struct sv_cm_channel *to = (struct sv_cm_channel *)channel;

    if (to == NULL) {
        errno = EINVAL; /* softverbs: no synchronous migration */
        return -1;
    }
    if (id->sock >= 0) {
        sv_cm_channel_unwatch(id, id->sock);
    }
    for (pp = &id->chan->ids; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == id) {
            *pp = id->next;
            break;
        }
    }
    id->chan   = to;
    id->sync   = 0;
    id->next   = to->ids;
    to->ids    = id;
    cm_id->channel = channel;
    if (id->sock >= 0) {
        sv_cm_channel_watch(id, id->sock);
    }
    return 0;
}
