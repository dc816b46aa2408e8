/*
 * Declarations of UCX's connection-manager base classes (src/uct/base/
 * uct_cm.h), which libuct exports and does not install, for UCX 1.13, 1.19
 * and 1.22: one layout in the three, save the endpoint attributes' tokens
 * 1.22 appended.
 *
 * Include only through a src/ucs/compat/ucx-<version>.h, after its
 * uct_base_iface_t and uct_base_ep_t.
 */
#ifndef QPX_UCX_COMPAT_CM_H_
#define QPX_UCX_COMPAT_CM_H_


/* ------------------------------------------------------------------------
 * uct: connection managers (src/uct/base/uct_cm.h, uct/api/v2/uct_v2.h).
 * libuct exports the base classes (uct_cm_t, uct_cm_base_ep_t,
 * uct_listener_t, with their sizes in the class objects: 1304, 48, 8) and
 * the helpers that run the user's callbacks.
 */
struct uct_cm_config {
    int failure;    /* ucs_log_level_t: how peer errors are logged */
    int reuse_addr; /* bind a listener with SO_REUSEADDR semantics */
};

typedef struct uct_cm_ops {
    void         (*close)(uct_cm_h cm);
    ucs_status_t (*cm_query)(uct_cm_h cm, uct_cm_attr_t *cm_attr);
    ucs_status_t (*listener_create)(uct_cm_h cm, const struct sockaddr *saddr,
                                    socklen_t socklen,
                                    const uct_listener_params_t *params,
                                    uct_listener_h *listener_p);
    ucs_status_t (*listener_reject)(uct_listener_h listener,
                                    uct_conn_request_h conn_request);
    ucs_status_t (*listener_query)(uct_listener_h listener,
                                   uct_listener_attr_t *listener_attr);
    void         (*listener_destroy)(uct_listener_h listener);
    ucs_status_t (*ep_create)(const uct_ep_params_t *params, uct_ep_h *ep_p);
} uct_cm_ops_t;

struct uct_cm {
    uct_cm_ops_t     *ops;
    uct_component_h  component;
    uct_base_iface_t iface;     /* the iface ops carry the CM ep's ops */
    struct {
        ucs_log_level_t failure_level;
        int             reuse_addr;
    } config;
};

typedef struct uct_cm_base_ep {
    uct_base_ep_t                       super;
    void                                *user_data;
    uct_ep_disconnect_cb_t              disconnect_cb;
    uct_cm_ep_priv_data_pack_callback_t priv_pack_cb;
    uct_cm_ep_resolve_callback_t        resolve_cb;
    union {
        struct {
            uct_cm_ep_client_connect_callback_t     connect_cb;
        } client;
        struct {
            uct_cm_ep_server_conn_notify_callback_t notify_cb;
        } server;
    };
} uct_cm_base_ep_t;

/* 1.22 appended the tokens (fields and mask bits) */
enum {
    UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR  = UCS_BIT(0),
    UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR = UCS_BIT(1)
#if QPX_UCX_AT_LEAST(1, 22)
    ,
    UCT_EP_ATTR_FIELD_TX_TOKEN        = UCS_BIT(2),
    UCT_EP_ATTR_FIELD_RX_TOKEN        = UCS_BIT(3)
#endif
};

struct uct_ep_attr {
    uint64_t                field_mask;
    struct sockaddr_storage local_address;
    struct sockaddr_storage remote_address;
#if QPX_UCX_AT_LEAST(1, 22)
    void                    *tx_token;
    void                    *rx_token;
#endif
};

extern ucs_config_field_t uct_cm_config_table[];

UCS_CLASS_DECLARE(uct_cm_t, uct_cm_ops_t*, uct_iface_ops_t*,
                  uct_iface_internal_ops_t*, uct_worker_h, uct_component_h,
                  const uct_cm_config_t*);
UCS_CLASS_DECLARE(uct_cm_base_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE(uct_listener_t, uct_cm_h);

ucs_status_t uct_listener_backlog_adjust(const uct_listener_params_t *params,
                                         int max_value, int *backlog);
ucs_status_t uct_cm_ep_pack_cb(uct_cm_base_ep_t *cep, void *arg,
                               const uct_cm_ep_priv_data_pack_args_t *pack_args,
                               void *priv_data, size_t priv_data_max,
                               size_t *priv_data_ret);
ucs_status_t uct_cm_ep_resolve_cb(uct_cm_base_ep_t *cep,
                                  const uct_cm_ep_resolve_args_t *args);
void uct_cm_ep_disconnect_cb(uct_cm_base_ep_t *cep);
void uct_cm_ep_client_connect_cb(uct_cm_base_ep_t *cep,
                                 uct_cm_remote_data_t *remote_data,
                                 ucs_status_t status);
void uct_cm_ep_server_conn_notify_cb(uct_cm_base_ep_t *cep,
                                     ucs_status_t status);

#endif
