/*
 * softverbs event sockets (sv_event.c). Included at the end of sv.h.
 */
#ifndef SV_EVENT_H
#define SV_EVENT_H

/* ---------------------------------------------------------------------
 * Events (sv_event.c): completion channels and async fds are unix
 * datagram sockets (abstract, or files in SOFTVERBS_SOCKET_DIR), so that
 * any process can wake them.
 * ------------------------------------------------------------------- */
enum sv_ev_kind { SV_EV_COMP = 1, SV_EV_CQ, SV_EV_QP, SV_EV_SRQ, SV_EV_PORT };

struct sv_ev_msg {
    uint32_t kind;
    uint32_t type;                /* enum ibv_event_type */
    uint32_t index;               /* registry index */
    uint32_t pad;
    uint64_t cookie;              /* owner's object pointer */
};

int  sv_ev_open(char tag, uint32_t *id);
void sv_ev_send(char tag, uint32_t id, const struct sv_ev_msg *msg);
void sv_ev_async(uint32_t ctx_id, enum sv_ev_kind kind,
                 enum ibv_event_type type, uint32_t index, uint64_t cookie);

#endif
