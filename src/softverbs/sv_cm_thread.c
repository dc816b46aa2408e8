/*
 * softverbs librdmacm: the process's ids and the CM's thread (see
 * sv_cm.h). The thread reads the messages of every id's socket and hands
 * each to the input handler its watcher gave (sv_cm_conn_setup.c's), and
 * runs the timer's work (sv_cm_conn_teardown.c's timewaits); the fork
 * handlers keep the CM whole across fork(). Below it: the channels and the
 * CM's lock (sv_cm_chan.c), the ports (sv_cm_port.c).
 */
#include "sv_cm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

/* Every live id of the process, for the CM thread (with the CM's lock) */
static struct sv_cm_id *sv_cm_all;
static uint64_t sv_cm_serial;

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

static int sv_cm_id_held(void)
{
    struct sv_cm_id *id;

    for (id = sv_cm_all; id != NULL; id = id->all_next) {
        if ((id->sock >= 0) || (id->port_fd >= 0)) {
            return 1;
        }
    }
    return 0;
}

/* In a forked child (sv_cm_fork_child below; the only thread, no
 * lock needed): the ids inherited are the parent's. The child's copies of
 * their sockets and port locks are closed (the parent's stay open, its
 * connections and ports untouched), and the ids are no longer the
 * process's: the child's thread and timer never find them, nor make
 * events on their channels (whose eventfds the parent shares). Their
 * memory stays, so that a child that destroys one does not fault; their
 * channels' locks are made anew, as a thread of the parent may have held
 * one at the fork. */
static void sv_cm_id_fork_child(void)
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

void sv_cm_id_unlink(struct sv_cm_id *id)
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

/* The first of the process's live ids (CM lock); the next is all_next */
struct sv_cm_id *sv_cm_ids_first(void)
{
    return sv_cm_all;
}

/* The CM's thread: one epoll set over the sockets of every id of the
 * process, each named by the id's serial and the socket (an id destroyed
 * meanwhile is not found, a new id at the same address is not mistaken for
 * it, nor a new socket of the id for its old one), and a timer for the
 * ends of timewait (the kernel's CM runs delayed work for them) */
static void sv_cm_thread_start(void);
static int sv_cm_thread_tried;  /* started (or failed) here (CM lock) */
static int sv_cm_epfd = -1;
static int sv_cm_tfd  = -1;
static uint64_t sv_cm_timer_at; /* armed for, 0: disarmed (CM lock) */
static sv_cm_timer_cb_t sv_cm_timer_cb; /* what it runs (CM lock) */
#define SV_CM_TIMER_TAG UINT64_MAX /* serials have 32 bits: no id's tag */

uint64_t sv_cm_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* With the CM lock */
void sv_cm_timer_arm(uint64_t at_ns, sv_cm_timer_cb_t cb)
{
    struct itimerspec its;

    sv_cm_timer_cb = cb;
    sv_cm_thread_start();
    if ((sv_cm_tfd < 0) || ((sv_cm_timer_at != 0) &&
                            (sv_cm_timer_at <= at_ns))) {
        return;
    }
    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec  = (time_t)(at_ns / 1000000000ull);
    its.it_value.tv_nsec = (long)(at_ns % 1000000000ull);
    if (timerfd_settime(sv_cm_tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) {
        sv_cm_timer_at = at_ns;
    }
}

/* The timer fired: its work (the timewaits that ended), then the next */
static void sv_cm_timer_fired(void)
{
    uint64_t count, next;

    if (read(sv_cm_tfd, &count, sizeof(count)) < 0) {
        /* EAGAIN: re-armed meanwhile */
    }
    sv_cm_timer_at = 0;
    next = (sv_cm_timer_cb != NULL) ? sv_cm_timer_cb(sv_cm_now_ns()) : 0;
    if (next != 0) {
        sv_cm_timer_arm(next, sv_cm_timer_cb);
    }
}

static void *sv_cm_thread_main(void *arg)
{
    struct epoll_event evs[16];
    struct sv_cm_id *id;
    int n, i;

    (void)arg;
    for (;;) {
        n = epoll_wait(sv_cm_epfd, evs, 16, -1);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            sv_warn("CM thread: epoll_wait: %m");
            return NULL;
        }
        sv_cm_lock();
        for (i = 0; i < n; i++) {
            if (evs[i].data.u64 == SV_CM_TIMER_TAG) {
                sv_cm_timer_fired();
                continue;
            }
            /* An id destroyed, or whose socket an entry point closed (an
             * accepted SIDR) or replaced (a connect after a reject), since
             * epoll_wait returned: nothing to read there */
            id = sv_cm_id_find(evs[i].data.u64 >> 32);
            if ((id != NULL) && (id->input != NULL) &&
                (id->sock == (int)(uint32_t)evs[i].data.u64)) {
                id->input(id);
            }
        }
        sv_cm_unlock();
    }
}

/* The first socket or timer of the process starts the thread (with the CM
 * lock; once per process: a forked child starts its own, see
 * sv_cm_fork_child) */
static void sv_cm_thread_start(void)
{
    struct epoll_event ev;
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t thread;

    if (sv_cm_thread_tried) {
        return;
    }
    sv_cm_thread_tried = 1;
    sv_cm_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (sv_cm_epfd < 0) {
        sv_warn("CM: epoll_create1: %m");
        return;
    }
    sv_cm_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.u64 = SV_CM_TIMER_TAG;
    if ((sv_cm_tfd < 0) ||
        (epoll_ctl(sv_cm_epfd, EPOLL_CTL_ADD, sv_cm_tfd, &ev) < 0)) {
        sv_warn("CM: no timer (no TIMEWAIT_EXIT "
                "events): %m");
        if (sv_cm_tfd >= 0) {
            close(sv_cm_tfd);
            sv_cm_tfd = -1;
        }
    }
    /* the application's signals go to its own threads */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    errno = pthread_create(&thread, &attr, sv_cm_thread_main, NULL);
    if (errno != 0) {
        sv_warn("CM: no thread: %m");
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void sv_cm_channel_watch(struct sv_cm_id *id, int fd, sv_cm_input_t input)
{
    struct epoll_event ev;

    id->input = input;
    sv_cm_thread_start();
    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.u64 = (id->serial << 32) | (uint32_t)fd;
    epoll_ctl(sv_cm_epfd, EPOLL_CTL_ADD, fd, &ev);
}

void sv_cm_channel_unwatch(struct sv_cm_id *id, int fd)
{
    (void)id;
    epoll_ctl(sv_cm_epfd, EPOLL_CTL_DEL, fd, NULL);
}

/*
 * fork(). librdmacm has no thread of its own: the kernel makes a process's
 * events, on the rdma_cm file each channel opens (rdma-core librdmacm/cma.c:
 * rdma_create_event_channel opens the device, ucma_init only lists the
 * devices, and nothing is done at fork), so a forked child that opens its
 * own channels and ids uses the CM as any process does. Here the CM's
 * work is this process's: its thread, epoll set and timer, and the sockets
 * and port locks of its ids. A child inherits the parent's copies of all
 * of them but not the thread, so its connections never got their events,
 * while the parent's thread, finding the child's sockets in the epoll set
 * they shared, spun on them (issue 37). So, around fork:
 *  - before: the CM's locks are taken (the CM lock, then the devices' and
 *    the destroyed channels'), so that the child's copy of the CM's state
 *    is not halfway through a change by another thread of the parent;
 *  - in the parent: once the child let go of the parent's sockets and
 *    port locks (below; it closes its end of a pipe made before the fork,
 *    when the process has any), the locks are released: a parent that
 *    destroys a listener as soon as fork returns and listens again on its
 *    port found both still held by the child's copies;
 *  - in the child: the locks are new (the recursive CM lock remembers the
 *    parent's thread as its owner); the thread, its epoll set and timer
 *    are the parent's, the child's copies of their fds closed, and the
 *    child's first socket or timer starts its own; the parent's ids are
 *    forgotten (sv_cm_id_fork_child), their sockets and port locks closed
 *    in the child: they stay the parent's, as the kernel's ids stay on the
 *    parent's rdma_cm file, and the parent's rdma_destroy_id frees their
 *    port and their listener's name at once, as the kernel's DESTROY_ID
 *    does, whatever the child does (a listener's socket kept open in the
 *    child would keep its name, and its port stay taken, until the child
 *    exits).
 */
static int sv_cm_fork_pipe[2] = { -1, -1 }; /* across one fork (CM lock) */

static void sv_cm_fork_prepare(void)
{
    sv_cm_lock();
    sv_cm_devs_lock();
    sv_cm_chan_fork_lock();
    if (sv_cm_id_held() && (pipe2(sv_cm_fork_pipe, O_CLOEXEC) != 0)) {
        sv_cm_fork_pipe[0] = sv_cm_fork_pipe[1] = -1; /* no wait, then */
    }
}

static void sv_cm_fork_parent(void)
{
    char byte;

    if (sv_cm_fork_pipe[0] >= 0) {
        /* end of file: the child closed its end, after its copies of the
         * ids' fds (or it died) */
        close(sv_cm_fork_pipe[1]);
        while ((read(sv_cm_fork_pipe[0], &byte, 1) < 0) && (errno == EINTR)) {
        }
        close(sv_cm_fork_pipe[0]);
        sv_cm_fork_pipe[0] = sv_cm_fork_pipe[1] = -1;
    }
    sv_cm_chan_fork_unlock();
    sv_cm_devs_unlock();
    sv_cm_unlock();
}

static void sv_cm_fork_child(void)
{
    int depth = sv_cm_chan_fork_child();

    sv_cm_devs_fork_child();

    if (sv_cm_epfd >= 0) {
        close(sv_cm_epfd);
    }
    if (sv_cm_tfd >= 0) {
        close(sv_cm_tfd);
    }
    sv_cm_epfd         = -1;
    sv_cm_tfd          = -1;
    sv_cm_timer_at     = 0;
    sv_cm_thread_tried = 0;
    sv_cm_id_fork_child();
    if (sv_cm_fork_pipe[0] >= 0) {
        close(sv_cm_fork_pipe[0]);
        close(sv_cm_fork_pipe[1]); /* the parent goes on */
        sv_cm_fork_pipe[0] = sv_cm_fork_pipe[1] = -1;
    }
    sv_cm_relock(depth);
}

/* Once per process image: the handlers are inherited by a forked child */
static void __attribute__((constructor)) sv_cm_fork_register(void)
{
    pthread_atfork(sv_cm_fork_prepare, sv_cm_fork_parent, sv_cm_fork_child);
}

/* man rdma_migrate_id: the id moves to another channel with its events,
 * those already reported on the old one and not yet got included (as the
 * kernel moves them); its socket is watched there. A synchronous id's own
 * channel is destroyed, as librdmacm's rdma_migrate_id does (rdma-core 44
 * librdmacm/cma.c: rdma_destroy_event_channel of the old channel when
 * id_priv->sync): libfabric's verbs provider makes each endpoint's id
 * synchronous (vrb_create_ep) and migrates it to its event queue's
 * channel, and every endpoint left two descriptors behind */
static int sv_cm_api_migrate_id(struct rdma_cm_id *cm_id,
                                struct rdma_event_channel *channel)
{
    struct sv_cm_id *id = sv_cm_id(cm_id), **pp;
    struct sv_cm_channel *to = (struct sv_cm_channel *)channel;
    struct sv_cm_channel *from = id->chan;
    int was_sync = id->sync;
    struct sv_cm_event *ev, *next;

    if (to == NULL) {
        errno = EINVAL; /* softverbs: no synchronous migration */
        return -1;
    }
    if (id->sock >= 0) {
        sv_cm_channel_unwatch(id, id->sock);
    }
    ev = sv_cm_channel_take_events(id);
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
    for (; ev != NULL; ev = next) {
        next = ev->next;
        sv_cm_event_queue(ev);
    }
    if (id->sock >= 0) {
        sv_cm_channel_watch(id, id->sock, id->input);
    }
    if (was_sync && (from != to)) {
        sv_cm_channel_free(from);
    }
    return 0;
}

SV_CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *cm_id,
                                 struct rdma_event_channel *channel)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_migrate_id(cm_id, channel);
    sv_cm_unlock();
    return ret;
}
