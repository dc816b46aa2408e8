/*
 * qpx hybrid: its two sub-interfaces. The cold path's (qpx_dc, or qpx_ud)
 * and the hot path's (qpx_rc) are opened through UCT's public API on the
 * hybrid's device port, with their active messages handed to the handlers
 * UCP set on the hybrid; the RC one is opened at the hybrid's open only to
 * read its attributes (or to stay, where the UD cold path receives from its
 * SRQ) and for good at the first promotion. One epoll set watches both
 * event fds.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <uct/qpx/base/qpx_component.h>
#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/base/qpx_iface.h>

#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>


#ifdef HAVE_MLX5DV
extern uct_tl_t qpx_dc_tl;
#endif


/* A message of one of the sub-interfaces for the handler UCP set on the
 * hybrid (arg: the hybrid's entry, read at each message so that a handler
 * set at any time is the one called) */
static ucs_status_t qpx_hybrid_am_trampoline(void *arg, void *data,
                                             size_t length, unsigned flags)
{
    uct_am_handler_t *handler = arg;

    return handler->cb(handler->arg, data, length, flags);
}


/* A message of id for the handler the cold path's interface has for it:
 * UCP's, or the control messages' */
static ucs_status_t qpx_hybrid_rx_deliver(qpx_hybrid_iface_t *iface,
                                          uint8_t id, void *data,
                                          size_t length, unsigned flags)
{
    uct_am_handler_t *handler;

    if (id == QPX_HYBRID_AM_ID_CTL) {
        return iface->open_args.ctl_handler(iface, data, length, flags);
    }
    handler = &iface->super.am[id];
    return handler->cb(handler->arg, data, length, flags);
}


/* A message on RC while a connection holds: kept if it came on that
 * connection's QP (the RC interface says which endpoint it came from).
 * 1: kept */
static UCS_F_NOINLINE int qpx_hybrid_rx_hold_msg(qpx_hybrid_iface_t *iface,
                                                 uint8_t id, const void *data,
                                                 size_t length)
{
    qpx_ep_t *src = (iface->rc_core != NULL) ? iface->rc_core->rx.src : NULL;
    qpx_hybrid_conn_t *conn;
    qpx_hybrid_held_t *held;
    int kind;

    if (src == NULL) {
        return 0;
    }
    conn = qpx_hybrid_owner_get(iface, &src->super.super, &kind);
    if (conn == NULL) {
        return 0;
    }
    if (kind == QPX_HYBRID_OWNER_DROP) {
        /* A retired QP drained after its connection dropped what it held
         * (qpx_hybrid_retire): this one would come before them */
        iface->stats.dropped++;
        return 1;
    }
    if ((kind != QPX_HYBRID_OWNER_CONN) || !conn->rx_hold) {
        return 0;
    }
    held = malloc(sizeof(*held) + length);
    if (held == NULL) {
        /* Handed over now: it may come before the peer's last ones on the
         * cold path */
        ucs_error("qpx iface %p: no memory to hold a message of %zu bytes "
                  "of connection 0x%x until SWITCHED", iface, length,
                  conn->id);
        return 0;
    }
    held->id     = id;
    held->length = length;
    memcpy(held->data, data, length);
    ucs_list_add_tail(&conn->rx_held, &held->list);
    iface->stats.held++;
    return 1;
}


/* A message of the RC interface (arg: qpx_hybrid_rc_am_t) */
static ucs_status_t qpx_hybrid_rc_am_trampoline(void *arg, void *data,
                                                size_t length, unsigned flags)
{
    qpx_hybrid_rc_am_t *am    = arg;
    qpx_hybrid_iface_t *iface = am->iface;

    if (ucs_unlikely(iface->rx_holds != 0) &&
        qpx_hybrid_rx_hold_msg(iface, am->id, data, length)) {
        return UCS_OK;
    }
    return qpx_hybrid_rx_deliver(iface, am->id, data, length, flags);
}


void qpx_hybrid_rx_holds_add(qpx_hybrid_iface_t *iface)
{
    ucs_assert(iface->rc_core != NULL);
    ++iface->rx_holds;
    iface->rc_core->rx.src_want |= QPX_IFACE_RX_SRC_USER;
}


void qpx_hybrid_rx_holds_remove(qpx_hybrid_iface_t *iface)
{
    ucs_assert(iface->rx_holds > 0);
    if ((--iface->rx_holds == 0) && (iface->rc_core != NULL)) {
        iface->rc_core->rx.src_want &= ~QPX_IFACE_RX_SRC_USER;
    }
}


void qpx_hybrid_conn_rx_hold(qpx_hybrid_iface_t *iface,
                             qpx_hybrid_conn_t *conn)
{
    ucs_assert(!conn->rx_hold);
    conn->rx_hold = 1;
    qpx_hybrid_rx_holds_add(iface);
}


void qpx_hybrid_conn_rx_release(qpx_hybrid_iface_t *iface,
                                qpx_hybrid_conn_t *conn, int deliver)
{
    qpx_hybrid_held_t *held;
    unsigned count = 0;

    if (!conn->rx_hold) {
        return;
    }
    conn->rx_hold = 0;
    qpx_hybrid_rx_holds_remove(iface);
    /* No progress runs in a handler: nothing joins the list meanwhile */
    while (!ucs_list_is_empty(&conn->rx_held)) {
        held = ucs_list_extract_head(&conn->rx_held, qpx_hybrid_held_t,
                                     list);
        if (deliver) {
            (void)qpx_hybrid_rx_deliver(iface, held->id, held->data,
                                        held->length, 0);
        } else {
            iface->stats.dropped++;
        }
        free(held);
        ++count;
    }
    ucs_debug("qpx iface %p: connection 0x%x: %u messages held on RC %s",
              iface, conn->id, count, deliver ? "handed over" : "dropped");
}


/* The handlers of a sub-interface's AM ids: the hybrid's, through a
 * trampoline (the RC interface's may hold a message) */
void qpx_hybrid_iface_set_sub_am(qpx_hybrid_iface_t *iface, qpx_iface_t *sub,
                                 int is_rc)
{
    uct_base_iface_t *base = &sub->super;
    unsigned id;

    for (id = 0; id < UCT_AM_ID_MAX; ++id) {
        base->am[id].flags = 0; /* sync */
        if (is_rc) {
            iface->rc_am[id].iface = iface;
            iface->rc_am[id].id    = id;
            base->am[id].cb        = qpx_hybrid_rc_am_trampoline;
            base->am[id].arg       = &iface->rc_am[id];
        } else if (id == QPX_HYBRID_AM_ID_CTL) {
            base->am[id].cb  = iface->open_args.ctl_handler;
            base->am[id].arg = iface;
        } else {
            base->am[id].cb  = qpx_hybrid_am_trampoline;
            base->am[id].arg = &iface->super.am[id];
        }
    }
}


/*
 * The DC initiators of the cold path, unless UCX_QPX_DC_NUM_DCI says: from
 * the job size the launcher gives (N processes: N/8 within 8..16). Not
 * fewer than qpx_dc's default: with 4, Open MPI one-sided on 16 ranks
 * (2 cores) took 130 s where 8 took 2.4 s, endpoints queueing for a DCI
 * held by requests to descheduled ranks.
 */
static void qpx_hybrid_dc_config_auto(uct_iface_config_t *config)
{
    qpx_job_info_t job;
    char value[16];
    unsigned num_dci;

    qpx_job_info_get(&job);
    if ((job.ntasks == 0) || (getenv("UCX_QPX_DC_NUM_DCI") != NULL)) {
        return;
    }
    num_dci = ucs_min(16, ucs_max(8, (job.ntasks + 7) / 8));
    snprintf(value, sizeof(value), "%u", num_dci);
    if (uct_config_modify(config, "NUM_DCI", value) == UCS_OK) {
        ucs_debug("qpx: %u DCIs (job: %s, %u processes)", num_dci,
                  job.launcher, job.ntasks);
    }
}


/* Set name (as in the transport's table: the shared qpx options, in its
 * "QPX_" sub-table, as QPX_<NAME>) to value in config; a failure is
 * logged, and the interface opens with the value it had */
static void qpx_hybrid_config_set(uct_iface_config_t *config,
                                  const char *name, const char *value)
{
    ucs_status_t status = uct_config_modify(config, name, value);

    if (status != UCS_OK) {
        ucs_debug("qpx: setting %s=%s for a sub-interface failed: %s", name,
                  value, ucs_status_string(status));
    }
}


/*
 * The hybrid's RC interface (not the probe) sends from a smaller first
 * chunk of bounce buffers than qpx_rc's default, unless the user set
 * UCX_QPX_RC_TX_BUFS_GROW or UCX_QPX_TX_BUFS_GROW: 128 buffers of 8 kB
 * make a chunk just over 1 MiB, which UCX's "thp" allocation rounds up to
 * a 2 MiB huge page (it accepts up to twice the length) and registers
 * whole; 64 make 0.5 MiB, allocated as asked. Its hot peers are a bounded
 * few, and the pool still grows by as many chunks as their sends need.
 */
static void qpx_hybrid_rc_config_auto(uct_iface_config_t *config)
{
    if ((getenv("UCX_QPX_RC_TX_BUFS_GROW") == NULL) &&
        (getenv("UCX_QPX_TX_BUFS_GROW") == NULL)) {
        qpx_hybrid_config_set(config, "QPX_TX_BUFS_GROW", "64");
    }
}


/* What an RC interface opened only to read its attributes is given: the
 * smallest queues and pools, none of which the attributes depend on (they
 * follow SEG_SIZE, TX_MAX_INLINE and the device; qpx_hybrid_iface_rc_open
 * checks that the real one offers the same) */
static const char *qpx_hybrid_rc_probe_config[][2] = {
    {"QPX_TX_QUEUE_LEN", "16"}, {"QPX_TX_CQ_LEN", "16"},
    {"QPX_TX_BUFS_GROW", "16"}, {"QPX_RX_QUEUE_LEN", "16"},
    {"QPX_RX_QUEUE_MAX", "16"}, {"QPX_RX_BUFS_GROW", "16"},
    {"QPX_QP_POOL_SIZE", "0"}
};


/* A sub-interface, opened with hints by its transport's constructor; flags:
 * QPX_HYBRID_SUB_UD_SRQ (qpx_ud receives from an SRQ, to share one),
 * QPX_HYBRID_SUB_PROBE (an RC interface opened only to read its
 * attributes) */
static ucs_status_t
qpx_hybrid_iface_open_sub(qpx_hybrid_iface_t *self, uct_md_h md,
                          uct_worker_h worker, const uct_iface_params_t *params,
                          const char *tl_name, unsigned flags,
                          const qpx_iface_hints_t *hints,
                          uct_iface_config_t **config_p, uct_iface_h *iface_p,
                          qpx_iface_t **core_p)
{
    uct_iface_params_t sub_params;
    uct_iface_config_t *config;
    ucs_status_t status;
    unsigned i;

    status = uct_md_iface_config_read(md, tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        ucs_error("qpx: reading the %s configuration failed: %s", tl_name,
                  ucs_status_string(status));
        return status;
    }

    if (!strcmp(tl_name, "qpx_dc")) {
        qpx_hybrid_dc_config_auto(config);
    } else if ((flags & QPX_HYBRID_SUB_UD_SRQ) && !strcmp(tl_name, "qpx_ud")) {
        /* not set: its own receive queue */
        qpx_hybrid_config_set(config, "SRQ", "y");
    } else if (flags & QPX_HYBRID_SUB_PROBE) {
        for (i = 0; i < ucs_static_array_size(qpx_hybrid_rc_probe_config);
             ++i) {
            qpx_hybrid_config_set(config, qpx_hybrid_rc_probe_config[i][0],
                                  qpx_hybrid_rc_probe_config[i][1]);
        }
    } else if (!strcmp(tl_name, "qpx_rc")) {
        qpx_hybrid_rc_config_auto(config);
    }

    memset(&sub_params, 0, sizeof(sub_params));
    sub_params.field_mask            = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                       UCT_IFACE_PARAM_FIELD_DEVICE |
                                       UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                       UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                       UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                       UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    sub_params.open_mode             = UCT_IFACE_OPEN_MODE_DEVICE;
    sub_params.mode.device.tl_name   = tl_name;
    sub_params.mode.device.dev_name  = params->mode.device.dev_name;
    sub_params.rx_headroom           =
            (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
            params->rx_headroom : 0;
    sub_params.err_handler           = self->open_args.ep_failed;
    sub_params.err_handler_arg       = self;
    sub_params.err_handler_flags     = 0;
    if (params->field_mask & UCT_IFACE_PARAM_FIELD_CPU_MASK) {
        sub_params.field_mask |= UCT_IFACE_PARAM_FIELD_CPU_MASK;
        sub_params.cpu_mask    = params->cpu_mask;
    }
    /* The user's AM alignment: the payloads a sub-interface receives are
     * the hybrid's */
    sub_params.field_mask |= params->field_mask &
                             (UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                              UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    sub_params.am_alignment    = params->am_alignment;
    sub_params.am_align_offset = params->am_align_offset;

    status = qpx_iface_open_core(md, worker, &sub_params, config, hints,
                                 iface_p, core_p);
    if (status != UCS_OK) {
        uct_config_release(config);
        return status;
    }

    qpx_hybrid_iface_set_sub_am(self, *core_p, !strcmp(tl_name, "qpx_rc"));
    *config_p = config;
    return UCS_OK;
}


/* The hybrid's epoll set watches sub's event fd too */
static ucs_status_t qpx_hybrid_iface_epoll_add(qpx_hybrid_iface_t *iface,
                                               uct_iface_h sub)
{
    struct epoll_event ev;
    int fd;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    if ((uct_iface_event_fd_get(sub, &fd) != UCS_OK) ||
        (epoll_ctl(iface->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)) {
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}


/* The RC interface closed, if it is open */
void qpx_hybrid_iface_rc_close(qpx_hybrid_iface_t *iface)
{
    if (iface->rc != NULL) {
        uct_iface_close(iface->rc);
        uct_config_release(iface->rc_config);
        iface->rc      = NULL;
        iface->rc_core = NULL;
    }
}


static ucs_status_t qpx_hybrid_iface_rc_open_sub(qpx_hybrid_iface_t *iface,
                                                 int probe);


/* The hot path's interface, receiving from open_args.owner's SRQ where there
 * is one. What the device has no room or memory for is logged at debug
 * level: the caller says in one warning what ran out and what it does
 * (sub_exhausted, which the interface writes). Where the hybrid has events, its epoll set
 * watches the new interface too. */
ucs_status_t qpx_hybrid_iface_rc_open(qpx_hybrid_iface_t *iface)
{
    return qpx_hybrid_iface_rc_open_sub(iface, 0);
}


/* probe: opened only to read its attributes (qpx_iface_hints_t attr_only:
 * CQs of one entry, no send buffer) with the smallest queues
 * (qpx_hybrid_rc_probe_config); on the cold path's SRQ like the real one,
 * since an SRQ of its own would take a registration for its buffers, one
 * that a process whose cold path is still opening may need */
static ucs_status_t qpx_hybrid_iface_rc_open_sub(qpx_hybrid_iface_t *iface,
                                                 int probe)
{
    uct_iface_attr_t attr;
    qpx_iface_hints_t hints;
    ucs_status_t status;

    hints.rx_owner        = iface->open_args.owner;
    hints.exhausted_level = UCS_LOG_LEVEL_DEBUG;
    hints.attr_only       = probe;
    hints.exhausted_what  = &iface->sub_exhausted;
    status = qpx_hybrid_iface_open_sub(iface, iface->open_args.md,
                                       iface->open_args.worker,
                                       &iface->open_args.params, "qpx_rc",
                                       probe ? QPX_HYBRID_SUB_PROBE : 0,
                                       &hints, &iface->rc_config, &iface->rc,
                                       &iface->rc_core);
    if (status != UCS_OK) {
        iface->rc      = NULL;
        iface->rc_core = NULL;
        return status;
    }

    /* UCP was told what the one opened at the hybrid's open offered */
    if (!probe && iface->rc_avail &&
        ((uct_iface_query(iface->rc, &attr) != UCS_OK) ||
         memcmp(&attr.cap, &iface->rc_attr.cap, sizeof(attr.cap)) ||
         (attr.ep_addr_len != iface->rc_attr.ep_addr_len))) {
        ucs_error("qpx iface %p: the RC interface offers other capabilities "
                  "than the one its attributes were read from: no endpoint "
                  "is promoted", iface);
        iface->rc_avail = 0;
        status          = UCS_ERR_UNSUPPORTED;
        goto err_close;
    }

    if (!probe && (iface->epfd >= 0)) {
        status = qpx_hybrid_iface_epoll_add(iface, iface->rc);
        if (status != UCS_OK) {
            ucs_error("qpx iface %p: the RC interface's event fd cannot be "
                      "watched: %m", iface);
            goto err_close;
        }
    }

    ucs_debug("qpx iface %p: RC interface %p opened (%s)", iface, iface->rc,
              probe ? "to read its attributes" :
              (iface->rc_core->rx_owner != NULL) ?
              "its QPs receive from the cold path's SRQ" : "an SRQ of its own");
    return UCS_OK;

err_close:
    qpx_hybrid_iface_rc_close(iface);
    return status;
}


/* The RC interface at the hybrid's open (already open, or opened now): its
 * attributes, and the interface itself where it must stay (keep: the cold
 * path receives from its SRQ). Without it every endpoint stays on the cold
 * path. */
void qpx_hybrid_iface_rc_probe(qpx_hybrid_iface_t *self, int keep)
{
    const char *what;
    ucs_status_t status;

    self->sub_exhausted = NULL;
    status = (self->rc != NULL) ? UCS_OK :
             qpx_hybrid_iface_rc_open_sub(self, !keep);
    if (status == UCS_OK) {
        status = uct_iface_query(self->rc, &self->rc_attr);
        if ((status == UCS_OK) && !keep) {
            qpx_hybrid_iface_rc_close(self);
        }
    }
    if (status != UCS_OK) {
        what = self->sub_exhausted;
        ucs_warn("qpx: %s: no RC interface (%s%s%s): every endpoint stays on "
                 "%s", self->open_args.dev_name, (what != NULL) ? "no " : "",
                 (what != NULL) ? what : ucs_status_string(status),
                 (what != NULL) ? " left on the device" : "", self->cold_tl);
        qpx_hybrid_iface_rc_close(self);
        self->stats.rc_failures++;
        return;
    }

    self->rc_avail       = 1;
    self->addr.rc_ep_len = self->rc_attr.ep_addr_len;
    if (self->config.pool_size == 0) {
        ucs_debug("qpx: RC_POOL_SIZE=0: every endpoint stays on %s",
                  self->cold_tl);
    }
}


/*
 * The cold path's interface, receiving from the RC interface's SRQ where
 * that is open already. Where the device has no CQ, QP or SRQ left, it is
 * tried again up to tries times, QPX_HYBRID_COLD_WAIT_US apart: another
 * process's hybrid may hold the device's last ones for the moment its RC
 * interface is opened and closed (qpx_hybrid_iface_rc_probe). Only the
 * last failure is logged as an error, and none beside the RC interface
 * (the caller then closes that and tries again).
 */
ucs_status_t qpx_hybrid_iface_open_cold(qpx_hybrid_iface_t *self,
                                        unsigned tries)
{
    qpx_iface_t *owner = self->rc_core;
    qpx_iface_hints_t hints;
    const char *what;
    ucs_status_t status;
    unsigned attempt;

    for (attempt = 1; ; ++attempt) {
        hints.rx_owner        = owner;
        hints.exhausted_level = ((attempt < tries) || (owner != NULL) ||
                                 self->cold_fallback) ?
                                UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR;
        hints.attr_only       = 0;
        hints.exhausted_what  = &self->sub_exhausted;
        self->sub_exhausted   = NULL;
        status = qpx_hybrid_iface_open_sub(self, self->open_args.md,
                                           self->open_args.worker,
                                           &self->open_args.params,
                                           self->cold_tl,
                                           (owner != NULL) ?
                                           QPX_HYBRID_SUB_UD_SRQ : 0,
                                           &hints, &self->cold_config,
                                           &self->cold, &self->cold_core);
        what = self->sub_exhausted;
        if ((status == UCS_OK) || (what == NULL) || (attempt >= tries)) {
            return status;
        }
        ucs_debug("qpx: %s: no %s left on the device for %s (attempt %u of "
                  "%u): trying again", self->open_args.dev_name, what,
                  self->cold_tl, attempt, tries);
        usleep(QPX_HYBRID_COLD_WAIT_US);
    }
}


/* Both sub-interfaces, the one that receives into the other's buffers
 * first (the owner of a shared SRQ outlives its sharer) */
void qpx_hybrid_iface_close_subs(qpx_hybrid_iface_t *self)
{
    int cold_first = (self->rc != NULL) &&
                     (self->cold_core->rx_owner != NULL);

    if (cold_first) {
        uct_iface_close(self->cold);
        uct_config_release(self->cold_config);
    }
    qpx_hybrid_iface_rc_close(self);
    if (!cold_first) {
        uct_iface_close(self->cold);
        uct_config_release(self->cold_config);
    }
}


/*
 * Events: when both sub-interfaces offer them, one epoll fd over their
 * event fds is the hybrid's (readable when either is), and arming arms
 * both. UCP puts the hybrid on its lanes in wakeup mode only then. An RC
 * interface opened later joins the set (qpx_hybrid_iface_rc_open).
 */
void qpx_hybrid_iface_event_init(qpx_hybrid_iface_t *self,
                                 const uct_iface_attr_t *cold_attr)
{
    const uint64_t need = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                          UCT_IFACE_FLAG_EVENT_RECV |
                          UCT_IFACE_FLAG_EVENT_FD;
    uct_iface_h subs[2] = {self->cold, self->rc};
    uint64_t flags;
    int i;

    flags = cold_attr->cap.event_flags;
    if (self->rc_avail) {
        flags &= self->rc_attr.cap.event_flags;
    }
    if ((flags & need) != need) {
        ucs_debug("qpx iface %p: no event notification (sub-interfaces "
                  "offer 0x%lx)", self, flags);
        return;
    }

    self->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (self->epfd < 0) {
        ucs_warn("qpx iface %p: epoll_create1() failed: %m: no event "
                 "notification", self);
        return;
    }
    for (i = 0; i < 2; ++i) {
        if (subs[i] == NULL) {
            continue;
        }
        if (qpx_hybrid_iface_epoll_add(self, subs[i]) != UCS_OK) {
            ucs_warn("qpx iface %p: the event fd of sub-interface %d cannot "
                     "be watched (%m): no event notification", self, i);
            close(self->epfd);
            self->epfd = -1;
            return;
        }
    }
    self->event_flags = flags & (need | UCT_IFACE_FLAG_EVENT_RECV_SIG);
}


ucs_status_t qpx_hybrid_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);

    if (iface->epfd < 0) {
        return UCS_ERR_UNSUPPORTED;
    }
    *fd_p = iface->epfd;
    return UCS_OK;
}


/* Busy while the hybrid has work of its own (a switch waits for its
 * timeout, answers or requests wait for a slot): no event announces it */
ucs_status_t qpx_hybrid_iface_event_arm(uct_iface_h tl_iface,
                                        unsigned events)
{
    qpx_hybrid_iface_t *iface = ucs_derived_of(tl_iface, qpx_hybrid_iface_t);
    ucs_status_t status;

    if (!ucs_list_is_empty(&iface->ctl_msgs) ||
        !ucs_list_is_empty(&iface->work_eps) ||
        !ucs_list_is_empty(&iface->work_conns) ||
        !ucs_list_is_empty(&iface->ctl_out) ||
        !ucs_list_is_empty(&iface->retired) ||
        !ucs_list_is_empty(&iface->pending_eps)) {
        return UCS_ERR_BUSY;
    }
    status = uct_iface_event_arm(iface->cold, events);
    if ((status != UCS_OK) || (iface->rc == NULL)) {
        return status;
    }
    return uct_iface_event_arm(iface->rc, events);
}


/* The cold path's transport: qpx_dc if asked, or with auto where the
 * device offers it (qpx_dc lists it), else qpx_ud */
const char *qpx_hybrid_cold_tl_choose(uct_md_h md, int cold_tl)
{
#ifdef HAVE_MLX5DV
    uct_tl_device_resource_t *devs;
    unsigned num_devs;
    int has_dc;

    if (cold_tl == QPX_HYBRID_COLD_DC) {
        return "qpx_dc";
    }
    if (cold_tl == QPX_HYBRID_COLD_AUTO) {
        devs     = NULL;
        num_devs = 0;
        has_dc   = (qpx_dc_tl.query_devices(md, &devs, &num_devs) == UCS_OK) &&
                   (num_devs > 0);
        free(devs); /* base's list (calloc) */
        if (has_dc) {
            return "qpx_dc";
        }
    }
#else
    if (cold_tl == QPX_HYBRID_COLD_DC) {
        ucs_debug("qpx: built without mlx5 direct verbs: qpx_ud is the cold "
                  "path");
    }
#endif
    return "qpx_ud";
}
