/*
 * softverbs event sockets (sv_event.c). Included by sv.h before the
 * registry header, which holds the spill (struct sv_ev_spill).
 */
#ifndef SV_EVENT_H
#define SV_EVENT_H

/* ---------------------------------------------------------------------
 * Events (sv_event.c): completion channels and async fds are unix
 * datagram sockets (abstract, or files in SOFTVERBS_SOCKET_DIR), so that
 * any process can wake them.
 * ------------------------------------------------------------------- */
enum sv_ev_kind {
    SV_EV_COMP = 1,
    SV_EV_CQ,
    SV_EV_QP,
    SV_EV_SRQ,
    SV_EV_PORT,
    SV_EV_KICK                    /* a wake-up: the event is in the spill */
};

struct sv_ev_msg {
    uint32_t kind;
    uint32_t type;                /* enum ibv_event_type */
    uint32_t index;               /* registry index */
    uint32_t pad;
    uint64_t cookie;              /* owner's object pointer */
};

/*
 * Linux queues at most net.unix.max_dgram_qlen + 1 (11 by default) unread
 * datagrams on a socket, where the kernel's uverbs queues events without
 * bound. An event a full socket refuses goes to the registry's spill, and
 * its reader moves it back into the socket as it reads (sv_ev_refill).
 */
#define SV_EV_SPILL_LEN 1024

struct sv_ev_spill_ent {
    uint32_t tag;                 /* 'a' or 'c' */
    uint32_t id;
    struct sv_ev_msg msg;
};

struct sv_ev_spill {
    pthread_mutex_t lock;         /* robust, process-shared */
    uint32_t count;               /* entries, oldest first */
    uint32_t lost;                /* dropped: the spill was full */
    struct sv_ev_spill_ent ent[SV_EV_SPILL_LEN];
};

int  sv_ev_open(char tag, uint32_t *id);
void sv_ev_close(char tag, uint32_t id);
void sv_ev_refill(char tag, uint32_t id);
void sv_ev_send(char tag, uint32_t id, const struct sv_ev_msg *msg);
void sv_ev_async(uint32_t ctx_id, enum sv_ev_kind kind,
                 enum ibv_event_type type, uint32_t index, uint64_t cookie);

#endif
