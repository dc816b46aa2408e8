/*
 * softverbs librdmacm: the connection protocol's messages, shared by the
 * files of its phases: sv_cm_conn.c (the messages, their dispatch),
 * sv_cm_conn_setup.c (establishment) and sv_cm_conn_teardown.c (the end of
 * a connection). The exchange itself is described in sv_cm_conn.c.
 */
#ifndef SV_CM_CONN_H
#define SV_CM_CONN_H

#include "sv_cm.h"

#include <sys/socket.h>

/* private data a message carries for the user: the IBA CM MAD's field
 * (REQ and SIDR REQ less the 36-byte CMA header); see sv_cm_conn.c */
#define SV_CM_REQ_PRIV   56
#define SV_CM_REP_PRIV   196
#define SV_CM_REJ_PRIV   148
#define SV_CM_SIDR_REQ_PRIV 180
#define SV_CM_SIDR_REP_PRIV 136
#define SV_CM_REJ_INVALID_SERVICE_ID 8   /* IBA table 112, reject reasons */
#define SV_CM_REJ_TIMEOUT            1
#define SV_CM_REJ_CONSUMER_DEFINED   28
/* the device's max_qp_rd_atom, should its query fail (sv_dev.c) */
#define SV_CM_RD_ATOM_DEFAULT 16
#define SV_CM_SIDR_UNSUPPORTED       1   /* IBA table 124, SIDR REP status */
#define SV_CM_SIDR_REJECT            2
#define SV_CM_UDP_QKEY 0x01234567        /* RDMA_UDP_QKEY of rdma-core */

enum sv_cm_msg_type {
    SV_CM_MSG_REQ = 1,
    SV_CM_MSG_REP,
    SV_CM_MSG_RTU,
    SV_CM_MSG_REJ,
    SV_CM_MSG_DREQ,
    SV_CM_MSG_DREP,
    SV_CM_MSG_SIDR_REQ,
    SV_CM_MSG_SIDR_REP,
};

/* One CM message; always sent and read whole */
struct sv_cm_msg {
    uint32_t type;
    uint32_t qpn;
    uint32_t psn;
    int32_t  reason;                   /* REJ, SIDR REP status */
    uint32_t qkey;                     /* SIDR REP */
    uint16_t lid;
    uint8_t  resp_res;
    uint8_t  init_depth;
    uint8_t  retry;
    uint8_t  rnr_retry;
    uint8_t  priv_len;
    uint8_t  pad;
    union ibv_gid gid;
    struct sockaddr_storage src;
    struct sockaddr_storage dst;
    uint8_t  priv[SV_CM_PRIV_MAX];
};

/* messages (sv_cm_conn.c) */
int  sv_cm_send(struct sv_cm_id *id, struct sv_cm_msg *m);
void sv_cm_msg_init(struct sv_cm_id *id, struct sv_cm_msg *m,
                    enum sv_cm_msg_type type, const void *priv, uint8_t len);
void sv_cm_close_sock(struct sv_cm_id *id);
/* An event of id with the private data of m (the whole field len) */
void sv_cm_event_conn(struct sv_cm_id *id, enum rdma_cm_event_type t,
                      int status, const struct sv_cm_msg *m,
                      uint8_t field_len);
int  sv_cm_is_ud(const struct sv_cm_id *id);
/* The IB CM's ACK timeout of a packet life time and a CA's ACK delay, and
 * the ACK delay of id's device */
int  sv_cm_ack_timeout(int ack_delay, int life_time);
int  sv_cm_ack_delay(struct sv_cm_id *id);

/* establishment: REQ, REP, RTU, REJ, SIDR (sv_cm_conn_setup.c) */
void sv_cm_handle_req(struct sv_cm_id *id, const struct sv_cm_msg *m);
void sv_cm_handle_sidr_req(struct sv_cm_id *id, const struct sv_cm_msg *m);
void sv_cm_handle_sidr_rep(struct sv_cm_id *id, const struct sv_cm_msg *m);
void sv_cm_handle_rep(struct sv_cm_id *id, const struct sv_cm_msg *m);
void sv_cm_handle_rtu(struct sv_cm_id *id);
void sv_cm_handle_rej(struct sv_cm_id *id, const struct sv_cm_msg *m);

/* the end of a connection: DREQ, DREP, the peer gone
 * (sv_cm_conn_teardown.c) */
void sv_cm_handle_dreq(struct sv_cm_id *id);
void sv_cm_handle_drep(struct sv_cm_id *id);
void sv_cm_handle_gone(struct sv_cm_id *id);

#endif
