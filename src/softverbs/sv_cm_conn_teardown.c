/*
 * softverbs librdmacm: the end of a connection (the exchange is described
 * in sv_cm_conn.c). rdma_disconnect moves the QP to ERR and sends the DREQ;
 * the peer gets DISCONNECTED, and answers DREP when its user calls
 * rdma_disconnect or destroys the id, as the kernel's CM does (cma.c's
 * rdma_disconnect: ib_send_cm_dreq fails in DREQ_RCVD, ib_send_cm_drep
 * goes; cm_destroy_id sends it in DREQ_RCVD); the DREP gives the
 * initiator its DISCONNECTED, or the DREQ times out (cm_dreq_handler's
 * peer never answering: IB_CM_DREQ_ERROR, DISCONNECTED all the same). A peer
 * whose socket closes (its process exited or died) ends the handshake or
 * the connection as its lost MADs would. The IB CM's timewait follows a
 * connection's end, and a destroyed id tells its peer what the kernel's
 * cm_destroy_id sends.
 */
#include "sv_cm_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t sv_cm_timewait_run(uint64_t now_ns);

/* cm_enter_timewait: the IB CM's timewait of the connection begins; it
 * lasts cm_convert_to_ms(av.timeout): the active side's av.timeout is the
 * ACK timeout of its path with the target's ACK delay (cm_rep_handler),
 * the passive side's its path's life time + 1 (cm_init_av_by_path) */
static uint64_t sv_cm_timewait_ns(struct sv_cm_id *id)
{
    int t = (id->listen != NULL) ? id->path.packet_life_time + 1 :
            sv_cm_ack_timeout(sv_cm_ack_delay(id), id->path.packet_life_time);

    return 1000000ull << ((t > 8) ? t - 8 : 0);
}

static void sv_cm_timewait_enter(struct sv_cm_id *id)
{
    if (sv_cm_is_ud(id) ||
        ((id->tw != SV_CM_TW_NONE) && (id->tw != SV_CM_TW_DREQ_RCVD))) {
        return;
    }
    id->tw          = SV_CM_TW_WAIT;
    id->tw_deadline = sv_cm_now_ns() + sv_cm_timewait_ns(id);
    sv_cm_timer_arm(id->tw_deadline, sv_cm_timewait_run);
}

/* cm_timewait_handler, cma_ib_handler: the id still exists (a destroyed
 * one is not in the CM thread's list) and is disconnected */
static void sv_cm_timewait_exit(struct sv_cm_id *id)
{
    id->tw = SV_CM_TW_DONE;
    if (id->state == SV_CM_DISCONNECTED) {
        sv_cm_event_conn(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
    }
}

/* A child whose peer left before its REQ: nobody knows it, it goes */
static void sv_cm_child_drop(struct sv_cm_id *id)
{
    sv_cm_close_sock(id);
    rdma_destroy_id(&id->id);
}

/* The peer's socket closed (its process exited or died) */
void sv_cm_handle_gone(struct sv_cm_id *id)
{
    enum sv_cm_state st = id->state;

    sv_cm_close_sock(id);
    /* UD has no connection: a SIDR peer that goes away changes nothing
     * here (the kernel's CM neither moves the QP nor reports it), but for
     * a request still unanswered and a child whose REQ never came */
    if (sv_cm_is_ud(id) && (st != SV_CM_CONNECT) &&
        !((id->listen != NULL) && (st == SV_CM_IDLE))) {
        return;
    }
    switch (st) {
    case SV_CM_CONNECT:
        id->state = SV_CM_ROUTE_RESOLVED;
        /* The kernel's CM rejects the REQ of an id destroyed in REQ_RCVD
         * (cm_destroy_id: IB_CM_REJ_CONSUMER_DEFINED), which is what a
         * listener's death does to a request it holds; the REQ of a UD id
         * (SIDR) has no reject and times out */
        if (id->id.qp_type == IBV_QPT_UD) {
            sv_cm_event_conn(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL,
                             0);
        } else {
            sv_cm_event_conn(id, RDMA_CM_EVENT_REJECTED,
                             SV_CM_REJ_CONSUMER_DEFINED, NULL, 0);
        }
        break;
    case SV_CM_REQ_RCVD:
    case SV_CM_REP_SENT:
        id->state = SV_CM_DISCONNECTED;
        sv_cm_event_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL,
                         0);
        break;
    case SV_CM_CONNECTED:
    case SV_CM_REP_RCVD:
        /* a peer that dies sends its DREQ (cm_destroy_id) */
        sv_cm_qp_to_err(id);
        id->state = SV_CM_DISCONNECTED;
        id->tw    = SV_CM_TW_DREQ_RCVD;
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        break;
    case SV_CM_DISCONNECTED:
        if (id->disc_pending) {
            /* our DREQ's answer will not come: the peer is gone */
            id->disc_pending = 0;
            sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
            sv_cm_timewait_enter(id);
        }
        break;
    default:
        if (id->listen != NULL) {
            sv_cm_child_drop(id); /* before its REQ */
        }
        break;
    }
}

/* Answer the peer's DREQ (this side's rdma_disconnect or destroy) */
static void sv_cm_drep_send(struct sv_cm_id *id)
{
    struct sv_cm_msg reply;

    id->drep_owed = 0;
    if (id->sock < 0) {
        return; /* the peer is gone: nobody to answer */
    }
    sv_cm_msg_init(id, &reply, SV_CM_MSG_DREP, NULL, 0);
    sv_cm_send(id, &reply);
    sv_cm_close_sock(id);
}

/* DREQ: the peer disconnects. DISCONNECTED at once; the DREP waits for this
 * side's rdma_disconnect or rdma_destroy_id (the kernel's CM: so that the
 * initiator hears DISCONNECTED only after this side's user did, which
 * UCX's test_uct_sockaddr_stress counts on; answering at once made it
 * fail 7 of 200 under load). The QP goes to ERR with this side's
 * rdma_disconnect, as in rdma-core */
void sv_cm_handle_dreq(struct sv_cm_id *id)
{
    id->drep_owed = 1;
    if (id->disc_pending) {
        /* both sides disconnected at once: their DREQs cross, each user
         * has called rdma_disconnect, and each side answers the other's */
        sv_cm_drep_send(id);
    }
    id->state        = SV_CM_DISCONNECTED;
    id->disc_pending = 0;
    if (id->tw == SV_CM_TW_NONE) {
        id->tw = SV_CM_TW_DREQ_RCVD; /* timewait at rdma_disconnect */
    }
    sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
}

/* Our DREQ's answer did not come in time (the peer's user neither
 * disconnected nor destroyed its id): DISCONNECTED all the same. Called
 * for an id with disc_pending (sv_cm_timewait_run) */
static void sv_cm_dreq_timeout(struct sv_cm_id *id)
{
    id->disc_pending = 0;
    sv_cm_close_sock(id);
    sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
    sv_cm_timewait_enter(id);
}

/* DREP: the answer to our DREQ */
void sv_cm_handle_drep(struct sv_cm_id *id)
{
    sv_cm_close_sock(id);
    if (id->disc_pending) {
        id->disc_pending = 0;
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        sv_cm_timewait_enter(id);
    }
}

/* The CM timer's work (sv_cm_timer_arm): the ids whose timewait ended by
 * now get TIMEWAIT_EXIT, those whose DREQ went unanswered past
 * dreq_deadline DISCONNECTED; the next deadline (0: none) */
static uint64_t sv_cm_timewait_run(uint64_t now_ns)
{
    struct sv_cm_id *id, *next;
    uint64_t first = 0;

    for (id = sv_cm_ids_first(); id != NULL; id = next) {
        next = id->all_next;
        if (id->disc_pending) {
            if (id->dreq_deadline <= now_ns) {
                sv_cm_dreq_timeout(id);
            } else if ((first == 0) || (id->dreq_deadline < first)) {
                first = id->dreq_deadline;
            }
        }
        if (id->tw != SV_CM_TW_WAIT) {
            continue;
        }
        if (id->tw_deadline <= now_ns) {
            sv_cm_timewait_exit(id);
        } else if ((first == 0) || (id->tw_deadline < first)) {
            first = id->tw_deadline;
        }
    }
    return first;
}

/* man rdma_disconnect: the QP goes to ERR, both sides get DISCONNECTED */
static int sv_cm_api_disconnect(struct rdma_cm_id *cm_id)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_msg m;

    if (id == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (id->state == SV_CM_DISCONNECTED) {
        /* the peer disconnected first: answering it (its DREP goes now),
         * which starts the timewait (cm_enter_timewait of ib_send_cm_drep) */
        sv_cm_qp_to_err(id);
        if (id->drep_owed) {
            sv_cm_drep_send(id);
        }
        if (id->tw == SV_CM_TW_DREQ_RCVD) {
            sv_cm_timewait_enter(id);
        }
        return 0;
    }
    if ((id->state != SV_CM_CONNECTED) && (id->state != SV_CM_REP_SENT) &&
        (id->state != SV_CM_REP_RCVD)) {
        errno = EINVAL;
        return -1;
    }
    sv_cm_qp_to_err(id);
    sv_cm_msg_init(id, &m, SV_CM_MSG_DREQ, NULL, 0);
    id->state        = SV_CM_DISCONNECTED;
    id->disc_pending = 1;
    /* cm_send_dreq: the DREQ is resent max_cm_retries (15) times, each
     * after the connection's timeout, before IB_CM_DREQ_ERROR */
    id->dreq_deadline = sv_cm_now_ns() + 15ull * sv_cm_timewait_ns(id);
    sv_cm_timer_arm(id->dreq_deadline, sv_cm_timewait_run);
    if (sv_cm_send(id, &m) != 0) {
        id->disc_pending = 0;
        /* the peer is gone already */
        sv_cm_close_sock(id);
        sv_cm_event_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
        sv_cm_timewait_enter(id);
    }
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_DISCONNECTED) : 0;
}

SV_CM_EXPORT int rdma_disconnect(struct rdma_cm_id *cm_id)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_disconnect(cm_id);
    sv_cm_unlock();
    return ret;
}

/*
 * rdma_destroy_id: the peer is told what the kernel's cm_destroy_id sends
 * for the IB CM state. A connection not established yet is rejected (REJ:
 * "timeout" from an active side still waiting for the REP, as for
 * IB_CM_REQ_SENT; "consumer defined" once a REQ or a REP was received or a
 * REP sent), and the peer's id gets REJECTED; an established one is
 * disconnected (DREQ), and the peer's id gets DISCONNECTED. A DREQ for a
 * request not yet accepted gave its listener's user a DISCONNECTED for an
 * id it never accepted, which UCX's rdmacm took for one of its endpoints.
 */
void sv_cm_conn_close(struct sv_cm_id *id)
{
    struct sv_cm_msg m;

    if ((id->sock >= 0) && id->drep_owed) {
        /* cm_destroy_id in DREQ_RCVD: the DREP the user never sent */
        sv_cm_drep_send(id);
    } else if ((id->sock >= 0) && (id->state != SV_CM_LISTEN) &&
               (id->state != SV_CM_DISCONNECTED)) {
        switch (sv_cm_is_ud(id) ? SV_CM_CONNECTED : id->state) {
        case SV_CM_CONNECT:
            sv_cm_msg_init(id, &m, SV_CM_MSG_REJ, NULL, 0);
            m.reason = SV_CM_REJ_TIMEOUT;
            break;
        case SV_CM_REQ_RCVD:
        case SV_CM_REP_SENT:
        case SV_CM_REP_RCVD:
            sv_cm_msg_init(id, &m, SV_CM_MSG_REJ, NULL, 0);
            m.reason = SV_CM_REJ_CONSUMER_DEFINED;
            break;
        default:
            sv_cm_msg_init(id, &m, SV_CM_MSG_DREQ, NULL, 0);
            break;
        }
        sv_cm_send(id, &m);
    }
    sv_cm_close_sock(id);
    sv_cm_channel_drop(id->chan, id);
}

/* man rdma_destroy_id: the QP must be destroyed first by the user
 * (rdma_destroy_qp); a connection still up is disconnected, the peer told */
static int sv_cm_api_destroy_id(struct rdma_cm_id *cm_id)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_event *ev, *next;
    struct sv_cm_channel *chan;

    if (id == NULL) {
        errno = EINVAL;
        return -1;
    }
    chan = id->chan;
    if ((id->state == SV_CM_LISTEN) && (id->listen_pid == getpid())) {
        sv_cm_sock_unlink(id); /* a file in SOFTVERBS_SOCKET_DIR */
    }
    sv_cm_conn_close(id);
    sv_cm_port_release(id);
    free(id->ep_qp_attr);
    sv_cm_mcast_detach_all(id);
    sv_cm_id_unlink(id);
    /* Its events not yet got go with it (else rdma_get_cm_event handed out
     * an event whose id is freed), and a listener's requests not yet got
     * with their new ids, which reject their clients */
    for (ev = sv_cm_channel_take_all(id); ev != NULL; ev = next) {
        next = ev->next;
        if (ev->event.id != cm_id) {
            sv_cm_api_destroy_id(ev->event.id);
        }
        free(ev);
    }
    if (cm_id->event != NULL) {
        /* a synchronous id's last event (sv_cm_sync_result) */
        rdma_ack_cm_event(cm_id->event);
        cm_id->event = NULL;
    }
    if (id->sync) {
        sv_cm_channel_free(chan);
    }
    /* The id's events are to be acknowledged first (librdmacm waits for
     * them in rdma_destroy_id); one acknowledged later still finds the id */
    __atomic_store_n(&id->dead, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&id->events_out, __ATOMIC_SEQ_CST) <= 0) {
        sv_cm_id_release(id);
    }
    return 0;
}

SV_CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_destroy_id(cm_id);
    sv_cm_unlock();
    return ret;
}

