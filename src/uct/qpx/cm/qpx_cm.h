/*
 * qpx's connection manager: UCP's client/server mode (ucp_listener, and
 * ucp_ep_create with a socket address) connects qpx endpoints by IP address
 * through librdmacm.
 *
 * The CM carries UCP's private data (its transport addresses) in the
 * REQ/REP of an rdma_cm connection; the endpoints' traffic then goes over
 * the QPs of the transports UCP created from those addresses. Each
 * connection also owns one QP of the CM:
 * - on the server, an RC QP from rdma_create_qp(3) with librdmacm's
 *   default PD, which the CM moves through its states itself (RTR at
 *   rdma_accept, RTS at ESTABLISHED, ERR at disconnect);
 * - on the client, a UD QP from ibv_create_qp on the id's PD, which only
 *   lends its number to the REQ. An id with a QP answers the server's REP
 *   at once (librdmacm sends the RTU itself), which would tell the server
 *   the client is ready before UCP has connected the client's transport
 *   endpoints; without one, the client sends the RTU from
 *   uct_cm_client_ep_conn_notify, once it is.
 * Neither QP carries data: UCP 1.13 creates its transport endpoints with
 * uct_ep_create on its interfaces, before the connection exists, so a
 * transport cannot be handed the QP that rdma_cm connected. A QP number is
 * still needed per connection: the IB CM refuses a REQ whose QPN it already
 * knows from another connection (stale connection).
 */
#ifndef QPX_CM_H_
#define QPX_CM_H_

#include <ucs/ucx_compat.h>
#include <ucs/algorithm/crc.h>

#include <rdma/rdma_cma.h>


typedef struct qpx_cm_config {
    uct_cm_config_t super;
    double          timeout;    /* address and route resolution, s */
} qpx_cm_config_t;


/* A device the CM made connections on: one CQ for all their QPs (nothing
 * is posted on them; one CQ instead of librdmacm's two per id, with their
 * completion channels, keeps a server of many clients within its fds) */
typedef struct qpx_cm_dev {
    ucs_list_link_t    list;
    struct ibv_context *verbs;
    struct ibv_cq      *cq;
    unsigned           num_qps;
} qpx_cm_dev_t;


typedef struct qpx_cm {
    uct_cm_t                  super;
    struct rdma_event_channel *channel;
    ucs_async_context_t       *async;   /* the worker's */
    ucs_list_link_t           devs;     /* qpx_cm_dev_t */
    int                       timeout_ms;
    unsigned long             malformed; /* requests and responses not a
                                            qpx CM's whole, intact data */
} qpx_cm_t;


typedef struct qpx_cm_listener {
    uct_listener_t                          super;
    struct rdma_cm_id                       *id;
    uct_cm_listener_conn_request_callback_t conn_request_cb;
    void                                    *user_data;
} qpx_cm_listener_t;


enum {
    QPX_CM_EP_CLIENT          = UCS_BIT(0),
    QPX_CM_EP_SERVER          = UCS_BIT(1),
    QPX_CM_EP_RESOLVED        = UCS_BIT(2), /* resolve_cb was called */
    QPX_CM_EP_CONNECTED       = UCS_BIT(3), /* connect_cb/notify_cb called */
    QPX_CM_EP_DISCONNECTING   = UCS_BIT(4), /* uct_ep_disconnect was called */
    QPX_CM_EP_GOT_DISCONNECT  = UCS_BIT(5), /* DISCONNECTED arrived */
    QPX_CM_EP_FAILED          = UCS_BIT(6)
};


typedef struct qpx_cm_ep {
    uct_cm_base_ep_t  super;
    struct rdma_cm_id *id;
    qpx_cm_dev_t      *dev;     /* the device of its QP; NULL: no QP */
    struct ibv_qp     *qp;      /* client: its own UD QP; server: id->qp */
    uint16_t          flags;
    ucs_status_t      status;   /* of its failure */
} qpx_cm_ep_t;


/*
 * The private data of a REQ or REP: this header, then UCP's data. A reject
 * by the listener says REJECTED in it; a reject by the IB CM itself (no
 * listener) carries none. What arrives is taken for a qpx CM's only when it
 * is whole and intact: a kind that is not 0 (the IB CM pads a REQ with
 * zeros to its 56 bytes, rdma_connect(3): the data may arrive longer than
 * sent), a length within what arrived, and a CRC-16 (ucs_crc16) over the
 * kind, the length and that many bytes of UCP's data. A request from
 * another program, a header that claims more than was sent, and one over
 * bytes that are not the ones it was made for are rejected before UCP
 * sees them: UCP takes what it is given for a packed address, and a wrong
 * one aborts it (an assertion in its address unpacking). Three bytes, so
 * that UCP's address of a qpx_rc endpoint (50 bytes with UCX 1.13) fits.
 */
enum {
    QPX_CM_PRIV_CONNECT = 1, /* UCP's data follows */
    QPX_CM_PRIV_REJECT  = 2  /* the listener's user rejected it */
};

#define QPX_CM_PRIV_KIND_SHIFT 6
#define QPX_CM_PRIV_LENGTH_MASK UCS_MASK(QPX_CM_PRIV_KIND_SHIFT)

typedef struct qpx_cm_priv_hdr {
    uint16_t check;     /* ucs_crc16 of what follows it */
    uint8_t  kind_len;  /* QPX_CM_PRIV_* << QPX_CM_PRIV_KIND_SHIFT | bytes
                           of UCP's data that follow */
} UCS_S_PACKED qpx_cm_priv_hdr_t;

static inline unsigned qpx_cm_priv_kind(const qpx_cm_priv_hdr_t *hdr)
{
    return hdr->kind_len >> QPX_CM_PRIV_KIND_SHIFT;
}

static inline size_t qpx_cm_priv_length(const qpx_cm_priv_hdr_t *hdr)
{
    return hdr->kind_len & QPX_CM_PRIV_LENGTH_MASK;
}

/* Fill hdr (the buffer UCP's length bytes follow, already there) */
void qpx_cm_priv_pack(qpx_cm_priv_hdr_t *hdr, unsigned kind, size_t length);

/* Whether len bytes at hdr are a whole, intact qpx CM's connection data */
int qpx_cm_priv_is_valid(const qpx_cm_priv_hdr_t *hdr, size_t len);

/* rdma_cm's private data in a REQ on RDMA_PS_TCP: the IB CM's 92 bytes
 * less librdmacm's 36-byte IP header (rdma_connect(3)); the REP allows
 * more, but UCP asks one limit for both */
#define QPX_CM_PRIV_DATA_LEN 56


extern ucs_config_field_t qpx_cm_config_table[];

ucs_status_t qpx_cm_open(uct_component_h component, uct_worker_h worker,
                         const uct_cm_config_t *config, uct_cm_h *cm_p);

/* What the endpoints and the listener share (qpx_cm_common.c) */

/* Largest private data a user can send */
size_t qpx_cm_max_conn_priv(void);

/* Count malformed private data (what, from peer_str, len bytes) and log
 * it: the first few at the CM's failure level, then at every power of two
 * of the count (a peer sends as many as it likes), the rest at debug */
void qpx_cm_malformed_log(qpx_cm_t *cm, const char *what,
                          const char *peer_str, size_t len);

/* "<device>:<port>" of the id */
void qpx_cm_id_dev_name(struct rdma_cm_id *id, char *dev_name);

/* The packed qpx device address of the id's peer (the format every qpx
 * transport reads); *addr_len_p bytes of addr */
ucs_status_t qpx_cm_id_peer_dev_addr(qpx_cm_t *cm, struct rdma_cm_id *id,
                                     void *addr, size_t *addr_len_p);

/* What the peer sent (its header checked by the caller) and its device
 * address, as UCT hands them to the user */
void qpx_cm_remote_data_set(uct_cm_remote_data_t *remote_data,
                            const void *dev_addr, size_t dev_addr_len,
                            const qpx_cm_priv_hdr_t *hdr);

/* The CQ the connection QPs on verbs use */
ucs_status_t qpx_cm_dev_get(qpx_cm_t *cm, struct ibv_context *verbs,
                            qpx_cm_dev_t **dev_p);

/* Destroy the devices' CQs (the manager's close) */
void qpx_cm_devs_release(qpx_cm_t *cm);

/* Events of the endpoints (qpx_cm_ep.c), called on UCX's async thread */
void qpx_cm_ep_handle_event(qpx_cm_ep_t *cep, struct rdma_cm_event *event);

/* Connection requests (qpx_cm_listener.c): the listener owns the event
 * until the server endpoint or a reject acknowledges it */
void qpx_cm_listener_handle_request(qpx_cm_t *cm,
                                    struct rdma_cm_event *event);

ucs_status_t qpx_cm_listener_create(uct_cm_h cm, const struct sockaddr *saddr,
                                    socklen_t socklen,
                                    const uct_listener_params_t *params,
                                    uct_listener_h *listener_p);
void qpx_cm_listener_destroy(uct_listener_h listener);
ucs_status_t qpx_cm_listener_query(uct_listener_h listener,
                                   uct_listener_attr_t *attr);
ucs_status_t qpx_cm_listener_reject(uct_listener_h listener,
                                    uct_conn_request_h conn_request);

ucs_status_t qpx_cm_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void qpx_cm_ep_destroy(uct_ep_h ep);
ucs_status_t qpx_cm_ep_connect(uct_ep_h ep,
                               const uct_ep_connect_params_t *params);
ucs_status_t qpx_cm_ep_disconnect(uct_ep_h ep, unsigned flags);
ucs_status_t qpx_cm_ep_conn_notify(uct_ep_h ep);
ucs_status_t qpx_cm_ep_query(uct_ep_h ep, uct_ep_attr_t *attr);


static inline qpx_cm_t *qpx_cm_ep_cm(qpx_cm_ep_t *cep)
{
    return ucs_container_of(cep->super.super.super.iface, qpx_cm_t,
                            super.iface);
}

#endif
