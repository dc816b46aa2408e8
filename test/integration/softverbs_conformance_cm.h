/*
 * softverbs conformance: librdmacm (softverbs' replacement librdmacm.so.1,
 * src/softverbs/sv_cm_*.c), shared helpers of softverbs_conformance_cm.c
 * (ids, binding, QPs, the event channel) and softverbs_conformance_cm_conn.c
 * (connections: private data, reject, disconnect, data). The rules are the
 * manual pages' (rdma_create_qp(3), rdma_connect(3), rdma_reject(3),
 * rdma_disconnect(3), rdma_get_cm_event(3), rdma_create_event_channel(3))
 * and, where they leave a choice, what docs/softverbs.md documents.
 *
 * Every address is 127.0.0.1 (softverbs maps every host address to
 * SOFTVERBS_CM_PORT, by default softverbs0:1). A listener binds port 0 and
 * sends the port it got to its peer over the suite's socketpair, so cases
 * never collide (each case has a registry, hence a CM namespace, of its
 * own anyway). Every event wait is bounded: the channel fd is made
 * non-blocking and polled until a deadline.
 */
#ifndef SOFTVERBS_CONFORMANCE_CM_H
#define SOFTVERBS_CONFORMANCE_CM_H

#include "softverbs_conformance.h"

#include <rdma/rdma_cma.h>
#include <softverbs/softverbs.h>

#define SVT_CM_EV_MS      5000  /* bound for one CM event */
#define SVT_CM_REQ_PRIV   56    /* rdma_connect(3), RDMA_PS_TCP */
#define SVT_CM_REP_PRIV   196   /* IBA CM REP private data */
#define SVT_CM_REJ_PRIV   148   /* IBA CM REJ private data */
#define SVT_CM_REJ_CONSUMER     28  /* IBA reject reason: consumer defined */
#define SVT_CM_REJ_INVALID_SID  8   /* IBA reject reason: no such service */
#define SVT_CM_UDP_QKEY   0x01234567u

/* One rank's side of a connection */
typedef struct svt_cm {
    struct rdma_event_channel *ch;
    struct rdma_cm_id         *listen;  /* passive side */
    struct rdma_cm_id         *id;      /* the connection */
    uint16_t                  port;     /* the listener's, host order */
    enum ibv_qp_state         created_state; /* QP state after create */
    uint8_t                   priv[256]; /* the peer's private data */
    uint8_t                   priv_len;
} svt_cm_t;

/* An event channel whose fd is non-blocking */
struct rdma_event_channel *svt_cm_channel(void);
/* The next event within ms, or NULL on timeout (to be acked) */
struct rdma_cm_event *svt_cm_next(struct rdma_event_channel *ch, int ms);
/* The next event must be `type` with `status` (acked, NULL) or is
 * returned (out != NULL; the caller acks) */
void svt_cm_expect(struct rdma_event_channel *ch,
                   enum rdma_cm_event_type type, int status,
                   struct rdma_cm_event **out);
/* No event within ms */
void svt_cm_expect_none(struct rdma_event_channel *ch, int ms);
void svt_cm_loopback(struct sockaddr_in *sin, uint16_t port);
/* An id bound to 127.0.0.1:port (0: any free port) */
struct rdma_cm_id *svt_cm_bound_id(struct rdma_event_channel *ch,
                                   enum rdma_port_space ps, uint16_t port);
/* An id whose route to 127.0.0.1:port is resolved */
struct rdma_cm_id *svt_cm_resolved_id(struct rdma_event_channel *ch,
                                      enum rdma_port_space ps,
                                      uint16_t port);
/* Creation attributes with NULL CQs (the CM makes them) */
void svt_cm_qp_attr(struct ibv_qp_init_attr *a, enum ibv_qp_type type);
/* softverbs_get_stats of this process */
void svt_cm_stats(struct softverbs_stats *st);

/* A connection between rank 1 (passive, listens) and rank 0 (active),
 * each with a QP of svt_cm_qp_attr; the private data are sent with
 * rdma_connect and rdma_accept and what arrived is kept in cm->priv */
void svt_cm_pair(svt_proc_t *p, svt_cm_t *cm, const void *conn_priv,
                 uint8_t conn_len, const void *acc_priv, uint8_t acc_len);
/* Rank 1: listen on a free port and send it to rank 0; rank 0: get it */
void svt_cm_listen_xchg(svt_proc_t *p, svt_cm_t *cm);
/* Rank 1: the next CONNECT_REQUEST (its private data kept in cm) */
void svt_cm_wait_request(svt_cm_t *cm);
/* Both ranks: tear down (QP, ids, channel) */
void svt_cm_close(svt_cm_t *cm);
/* Wait for a completion of cq through its completion channel */
void svt_cm_wait_comp(struct ibv_cq *cq, struct ibv_comp_channel *chan,
                      struct ibv_wc *wc, int ms);

#endif
