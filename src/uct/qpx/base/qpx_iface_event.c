/*
 * qpx interface events and timers: the event fd (an epoll over the CQs'
 * completion channel and an eventfd the interface signals itself), arming
 * with the completions that arrived before it kept in a backlog, and the
 * keepalive timer that makes progress probe idle endpoints.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface_progress.h"
#include "qpx_iface.inl"
#include "qpx_async.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>


ucs_status_t qpx_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);

    *fd_p = iface->event.epfd;
    return UCS_OK;
}


/* Consume the channel's pending events; returns how many, -1 on error */
int qpx_iface_ack_events(qpx_iface_t *iface)
{
    unsigned send_events = 0, recv_events = 0;
    struct ibv_cq *cq;
    void *cq_context;

    while (ibv_get_cq_event(iface->comp_channel, &cq, &cq_context) == 0) {
        if (cq == iface->send_cq) {
            ++send_events;
        } else if (cq == iface->recv_cq) {
            ++recv_events;
        }
    }
    if ((errno != EAGAIN) && (errno != EWOULDBLOCK)) {
        ucs_error("ibv_get_cq_event(fd %d) failed: %m",
                  iface->comp_channel->fd);
        return -1;
    }

    if (send_events > 0) {
        ibv_ack_cq_events(iface->send_cq, send_events);
    }
    if (recv_events > 0) {
        ibv_ack_cq_events(iface->recv_cq, recv_events);
    }
    /* a direct CQ's next arm carries the next sequence number */
    iface->direct.cq[QPX_MLX5_CQ_TX].sn += send_events;
    iface->direct.cq[QPX_MLX5_CQ_RX].sn += recv_events;
    return send_events + recv_events;
}


void qpx_iface_event_signal(qpx_iface_t *iface)
{
    uint64_t one = 1;

    if (write(iface->event.signal_fd, &one, sizeof(one)) != sizeof(one)) {
        /* EAGAIN: the counter is already non-zero, the fd readable */
        ucs_trace("eventfd %d write: %m", iface->event.signal_fd);
    }
}


/* The iface's event fd: epoll over the channel and the signal eventfd */
ucs_status_t qpx_iface_event_init(qpx_iface_t *self)
{
    struct epoll_event ev;

    self->event.signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (self->event.signal_fd < 0) {
        ucs_error("eventfd() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    self->event.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (self->event.epfd < 0) {
        ucs_error("epoll_create1() failed: %m");
        goto err_close_signal;
    }

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    if ((epoll_ctl(self->event.epfd, EPOLL_CTL_ADD, self->comp_channel->fd,
                   &ev) < 0) ||
        (epoll_ctl(self->event.epfd, EPOLL_CTL_ADD, self->event.signal_fd,
                   &ev) < 0)) {
        ucs_error("epoll_ctl(%d, ADD) failed: %m", self->event.epfd);
        goto err_close_epfd;
    }
    return UCS_OK;

err_close_epfd:
    close(self->event.epfd);
err_close_signal:
    close(self->event.signal_fd);
    return UCS_ERR_IO_ERROR;
}


void qpx_iface_event_cleanup(qpx_iface_t *self)
{
    close(self->event.epfd);
    close(self->event.signal_fd);
}


ucs_status_t qpx_iface_pre_arm(qpx_iface_t *iface)
{
    int events = qpx_iface_ack_events(iface);
    uint64_t count;

    if (events < 0) {
        return UCS_ERR_IO_ERROR;
    }
    if (read(iface->event.signal_fd, &count, sizeof(count)) ==
        sizeof(count)) {
        ++events;
    }
    return (events > 0) ? UCS_ERR_BUSY : UCS_OK;
}


ucs_status_t qpx_iface_arm_cq(qpx_iface_t *iface, struct ibv_cq *cq,
                              int solicited_only)
{
    int ret;

    if (iface->direct.enabled) {
        /* through the doorbell record: libmlx5's arming would use its own
         * consumer index, which the direct path does not move */
        qpx_mlx5_cq_arm(&iface->direct.cq[(cq == iface->send_cq) ?
                                          QPX_MLX5_CQ_TX : QPX_MLX5_CQ_RX],
                        solicited_only);
        return UCS_OK;
    }
    ret = ibv_req_notify_cq(cq, solicited_only);

    if (ret != 0) {
        ucs_error("ibv_req_notify_cq(%s cq, solicited_only %d) failed: %s",
                  (cq == iface->send_cq) ? "send" : "recv", solicited_only,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/*
 * Arm the event fd for the next send completion and active message. Both
 * CQs are armed whatever events asks for: pending requests advance on send
 * completions even when the user waits only for receives (a spurious
 * wakeup is allowed, a missed one hangs).
 *
 * Work that no completion event will announce makes the fd readable at once
 * (qpx_iface_event_signal) instead of returning UCS_ERR_BUSY: completions
 * that arrived before arming (softverbs raises events only for later ones;
 * they are moved to iface->backlog, which the transport's progress handles
 * first), a due keepalive round, and pending requests that can be
 * dispatched or wait for credits (credits may arrive by RDMA write,
 * without a completion). UCP's check of a deactivated interface
 * (ucp_worker_iface_check_events) may go to sleep right after a BUSY.
 *
 * Events that were pending are only acknowledged: they announced
 * completions that the user's progress has polled since (the CQ is polled
 * after arming, below, for any that has not), and signalling for them made
 * every arm after an event a spurious wakeup (UCX's gtest test_uct_event:
 * 99,999 of 100,000).
 */
ucs_status_t qpx_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);
    ucs_status_t status;

    status = qpx_iface_pre_arm(iface);
    if ((status != UCS_OK) && (status != UCS_ERR_BUSY)) {
        return status;
    }

    /* Only active messages consume receives: each one is an event */
    status = qpx_iface_arm_cq(iface, iface->send_cq, 0);
    if (status != UCS_OK) {
        return status;
    }
    status = qpx_iface_arm_cq(iface, iface->recv_cq, 0);
    if (status != UCS_OK) {
        return status;
    }

    if (iface->backlog.tx_count == 0) {
        iface->backlog.tx_count = qpx_iface_poll_cq(iface, QPX_IFACE_CQ_TX,
                                                    QPX_IFACE_BACKLOG,
                                                    iface->backlog.tx);
    }
    if (iface->backlog.rx_count == 0) {
        iface->backlog.rx_count = qpx_iface_poll_cq(iface, QPX_IFACE_CQ_RX,
                                                    QPX_IFACE_BACKLOG,
                                                    iface->backlog.rx);
    }

    if (iface->backlog.rx_count | iface->backlog.tx_count) {
        iface->attention = 1;
    }
    if ((iface->backlog.rx_count | iface->backlog.tx_count) ||
        iface->keepalive.due || iface->rx.low ||
        qpx_iface_pending_is_due(iface)) {
        qpx_iface_event_signal(iface);
    }
    return UCS_OK;
}


/* The keepalive timer (UCX's async thread, without the context: a flag and
 * a write to an eventfd): progress runs the round. The event fd wakes a
 * worker that sleeps in ucp_worker_wait. */
static void qpx_iface_keepalive_timer(int id, ucs_event_set_types_t events,
                                      void *arg)
{
    qpx_iface_t *iface = arg;

    (void)id;
    (void)events;
    iface->keepalive.due = 1;
    qpx_iface_event_signal(iface);
}


/* The async thread found the timerfd readable: read it (its wait is level
 * triggered and would return at once again), then run the timer's work */
static void qpx_iface_timer_handler(int fd, ucs_event_set_types_t events,
                                    void *arg)
{
    qpx_iface_timer_t *timer = arg;
    uint64_t expirations;

    if (read(fd, &expirations, sizeof(expirations)) !=
        sizeof(expirations)) {
        return; /* EAGAIN: another wakeup read it */
    }
    timer->cb(fd, events, timer->arg);
}


ucs_status_t qpx_iface_timer_start(qpx_iface_t *iface, double interval,
                                   ucs_async_event_cb_t cb, void *arg,
                                   qpx_iface_timer_t *timer)
{
    ucs_async_context_t *async = iface->super.worker->async;
    struct itimerspec spec;
    ucs_status_t status;
    int fd;

    timer->fd = -1;
    timer->id = -1;
    if (!qpx_async_mode_is_thread(async->mode)) {
        /* The poll and signal modes have no thread to spin: UCX's timer,
         * whose callback runs with the context blocked */
        status = ucs_async_add_timer(async->mode,
                                     (ucs_time_t)(interval *
                                                  ucs_get_cpu_clocks_per_sec()),
                                     cb, arg, async, &timer->id);
        if (status != UCS_OK) {
            ucs_error("%s:%d: failed to add an async timer (every %.3f ms): "
                      "%s", iface->md->dev.name, iface->port_num,
                      interval * 1e3, ucs_status_string(status));
            timer->id = -1;
        }
        return status;
    }

    fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) {
        ucs_error("%s:%d: timerfd_create() failed: %m", iface->md->dev.name,
                  iface->port_num);
        return UCS_ERR_IO_ERROR;
    }

    spec.it_interval.tv_sec  = (time_t)interval;
    spec.it_interval.tv_nsec = (long)((interval - (time_t)interval) * 1e9);
    if ((spec.it_interval.tv_sec == 0) && (spec.it_interval.tv_nsec == 0)) {
        spec.it_interval.tv_nsec = 1; /* 0 would disarm it */
    }
    spec.it_value = spec.it_interval;
    if (timerfd_settime(fd, 0, &spec, NULL) < 0) {
        ucs_error("%s:%d: timerfd_settime(every %.3f ms) failed: %m",
                  iface->md->dev.name, iface->port_num, interval * 1e3);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    timer->cb  = cb;
    timer->arg = arg;
    /* Without the context: dispatched unblocked (see qpx_iface.h) */
    status = ucs_async_set_event_handler(async->mode, fd, UCS_EVENT_SET_EVREAD,
                                         qpx_iface_timer_handler, timer, NULL);
    if (status != UCS_OK) {
        ucs_error("%s:%d: failed to watch a timer (every %.3f ms): %s",
                  iface->md->dev.name, iface->port_num, interval * 1e3,
                  ucs_status_string(status));
        goto err_close;
    }

    timer->fd = fd;
    return UCS_OK;

err_close:
    close(fd);
    return status;
}


void qpx_iface_timer_stop(qpx_iface_timer_t *timer)
{
    if (timer->id >= 0) {
        ucs_async_remove_handler(timer->id, 1);
        timer->id = -1;
    }
    if (timer->fd >= 0) {
        /* sync: the callback is not running when this returns, so the
         * caller must not hold what the callback takes */
        ucs_async_remove_handler(timer->fd, 1);
        close(timer->fd);
        timer->fd = -1;
    }
}


ucs_status_t qpx_iface_keepalive_start(qpx_iface_t *iface, double interval)
{
    iface->keepalive.due      = 0;
    iface->keepalive.timer.fd = -1;
    iface->keepalive.timer.id = -1;
    iface->keepalive.interval = (ucs_time_t)(interval *
                                             ucs_get_cpu_clocks_per_sec());
    if ((iface->keepalive.interval == 0) ||
        (iface->super.worker->async == NULL)) {
        return UCS_OK;
    }

    return qpx_iface_timer_start(iface, interval, qpx_iface_keepalive_timer,
                                 iface, &iface->keepalive.timer);
}


void qpx_iface_keepalive_stop(qpx_iface_t *iface)
{
    qpx_iface_timer_stop(&iface->keepalive.timer);
}


unsigned qpx_iface_backlog_progress(qpx_iface_t *iface, qpx_iface_wc_cb_t rx,
                                    qpx_iface_wc_cb_t tx)
{
    unsigned count = 0, n;

    /* Reset before handling: a handler may arm the interface again */
    n                       = iface->backlog.rx_count;
    iface->backlog.rx_count = 0;
    if (n > 0) {
        count += rx(iface, iface->backlog.rx, n);
    }

    n                       = iface->backlog.tx_count;
    iface->backlog.tx_count = 0;
    if (n > 0) {
        count += tx(iface, iface->backlog.tx, n);
    }
    return count;
}
