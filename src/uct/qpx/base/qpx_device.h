/*
 * qpx device: a verbs device context and what qpx reads from it once, at md
 * open: device limits and, for every port, its attributes, address and the
 * bandwidth and latency estimates the transports report to UCX.
 */
#ifndef QPX_DEVICE_H_
#define QPX_DEVICE_H_

#include <ucs/ucx_compat.h>
#include <infiniband/verbs.h>
#include <errno.h>
#include <string.h>


#define QPX_DEVICE_MAX_PORTS 4
#define QPX_DEVICE_MAX_GIDS  256 /* of a port's table, looked at */
/* Fabric and HCA latency of a small message, seconds: a typical figure for
 * one switch hop, InfiniBand and Ethernet (RoCE); transports add their own
 * software overhead (qpx_port_t latency) */
#define QPX_DEVICE_LATENCY_IB  600e-9
#define QPX_DEVICE_LATENCY_ETH 900e-9


/* One port of the device */
typedef struct qpx_device_port {
    struct ibv_port_attr attr;
    union ibv_gid        gid;       /* our GID: at gid_index */
    uint8_t              gid_index; /* RoCE: qpx_device_gid_select's; IB: 0 */
    int                  is_eth;    /* RoCE: link layer Ethernet */
    double               bandwidth; /* bytes/second, from width and speed */
    double               latency;   /* seconds, one-way estimate */
    int                  down;      /* IBV_EVENT_PORT_ERR seen and no
                                       PORT_ACTIVE since: set by the
                                       async thread, read when a QP fails
                                       (qpx_ep_report_failure) */
} qpx_device_port_t;


typedef struct qpx_device {
    struct ibv_context      *ctx;
    struct ibv_device_attr  attr;
    char                    name[UCT_DEVICE_NAME_MAX];
    uint8_t                 first_port;
    uint8_t                 num_ports;
    qpx_device_port_t       ports[QPX_DEVICE_MAX_PORTS];
    int                     events_fd;  /* async fd watched, -1: none */
} qpx_device_t;


/*
 * Device address: how a peer reaches a port (LID on IB, GID on RoCE), as
 * qpx uses it (unpacked). On the wire (uct_iface_get_device_address) it is
 * packed in the format of UCX's IB transports (uct_ib_address_t of UCX
 * 1.13: a flags byte, then the LID or the GID and optional fields): UCP's
 * client/server flow hands every transport of a device the address UCX's
 * rdmacm connection manager packed for it, so qpx must read that format.
 */
typedef struct qpx_device_addr {
    uint8_t  flags;         /* QPX_DEVICE_ADDR_FLAG_* */
    uint16_t lid;
    uint8_t  gid[16];       /* valid with QPX_DEVICE_ADDR_FLAG_GID */
} UCS_S_PACKED qpx_device_addr_t;

enum {
    QPX_DEVICE_ADDR_FLAG_GID = UCS_BIT(0),
    QPX_DEVICE_ADDR_FLAG_ETH = UCS_BIT(1)
};

/*
 * Was the UD packet whose 40-byte GRH area is grh sent from gid? The area
 * holds an IPv6-format GRH (InfiniBand, RoCE v1, RoCE v2 over IPv6: IP
 * version 6 in its first nibble, the source GID at bytes 8..23), or, for
 * RoCE v2 over IPv4, zeros and then the IPv4 header in its last 20 bytes
 * (version 4 at byte 20, the source address at bytes 32..35): mlx5 and rxe
 * write it so, and rdma-core's ibv_init_ah_from_wc tells the two apart the
 * same way. An IPv4 sender's GID is IPv4-mapped (::ffff:a.b.c.d).
 */
static inline int qpx_device_grh_src_is(const void *grh, const uint8_t *gid)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff};
    const uint8_t *b = (const uint8_t*)grh;

    if ((b[0] >> 4) == 6) {
        return !memcmp(b + 8, gid, 16);
    }
    return ((b[20] >> 4) == 4) && !memcmp(gid, v4_mapped, sizeof(v4_mapped)) &&
           !memcmp(b + 32, gid + 12, 4);
}

/* Largest packed device address (flags, GID, and the optional fields) */
#define QPX_DEVICE_ADDR_PACKED_MAX 40


/* Open ibdev and read it. gid_index: the GID RoCE ports use (their
 * address and the source of every packet), QPX_DEVICE_GID_AUTO to pick the
 * best (qpx_device_gid_select) */
#define QPX_DEVICE_GID_AUTO UCS_ULUNITS_AUTO
ucs_status_t qpx_device_open(qpx_device_t *dev, struct ibv_device *ibdev,
                             unsigned long gid_index);

/*
 * The GID a RoCE port sends from, among its table's populated entries: a
 * RoCE v2 GID before a v1 one (v2 is routed; fabrics are built for it),
 * then an IPv4-mapped address before a global IPv6 one before a link-local
 * one, then the lowest index. Returns the index, or -1 when no entry is
 * populated.
 */
int qpx_device_gid_select(const struct ibv_gid_entry *entries, int count);

/* Close the device; its events are stopped before (by the md, which
 * stands above both files: qpx_device_events_stop) */
void qpx_device_close(qpx_device_t *dev);

/* Watch the device's asynchronous events (CQ overrun, QP and port errors)
 * on UCX's async thread: each is logged and acknowledged at once
 * (qpx_device_event.c). Started by the first interface, not at md open:
 * that starts UCX's async thread, which a process that forks after opening
 * the md but before making interfaces would not have in the child (its
 * timers would never fire). Idempotent; stopped by the md before it closes
 * the device (a stop of events never started does nothing). */
ucs_status_t qpx_device_events_start(qpx_device_t *dev);

void qpx_device_events_stop(qpx_device_t *dev);

/* Port by number (1-based), or NULL if the device has no such port */
qpx_device_port_t *qpx_device_port(qpx_device_t *dev, uint8_t port_num);

/* Parse "<dev>:<port>" and check it names an active port of dev */
ucs_status_t qpx_device_parse_port(qpx_device_t *dev, const char *dev_name,
                                   uint8_t *port_num_p);

/* One resource "<dev>:<port>" per active port, for tl query_devices */
ucs_status_t qpx_device_query_tl_resources(qpx_device_t *dev,
                                           uct_tl_device_resource_t **tl_devices_p,
                                           unsigned *num_tl_devices_p);

/* The address of this port, unpacked */
void qpx_device_addr_get(const qpx_device_port_t *port,
                         qpx_device_addr_t *addr);

/* The address of this port, packed (qpx_device_addr_size bytes) */
void qpx_device_addr_pack(const qpx_device_port_t *port, void *packed);

/* Pack an unpacked address (a peer's, as a connection manager learnt it);
 * returns the bytes written, at most QPX_DEVICE_ADDR_PACKED_MAX */
size_t qpx_device_addr_pack_addr(const qpx_device_addr_t *addr,
                                 void *packed);

/* A packed device address (ours, or UCX's IB format from another packer)
 * unpacked: the LID or the GID; the optional fields are not needed */
void qpx_device_addr_unpack(const void *packed, qpx_device_addr_t *addr);

/* The bytes of a packed device address qpx_device_addr_unpack reads (its
 * first byte says how many) */
size_t qpx_device_addr_unpack_len(const void *packed);

/* Bytes of a packed device address of this port */
size_t qpx_device_addr_size(const qpx_device_port_t *port);

/* Is the device address reachable from this port (same fabric) */
int qpx_device_addr_is_reachable(const qpx_device_port_t *port,
                                 const qpx_device_addr_t *addr);

/* Does an address vector (as qpx_device_ah_attr made it, read back from
 * a QP) lead to the port of addr */
int qpx_device_addr_is_ah_peer(const qpx_device_addr_t *addr,
                               const struct ibv_ah_attr *ah_attr);

/* Fill the address vector to reach a peer from port_num */
void qpx_device_ah_attr(const qpx_device_addr_t *addr, uint8_t port_num,
                        uint8_t sgid_index,
                        struct ibv_ah_attr *ah_attr);

/* What the srq_context of an SRQ that qpx creates points to: its owner's
 * answer to the SRQ limit event, which the device's event handler calls
 * on UCX's async thread, before it acknowledges the event (so the owner
 * is still there: ibv_destroy_srq waits for that ack). The owner embeds it
 * and finds itself with ucs_container_of: the device calls no code above
 * it. */
typedef struct qpx_device_srq_handler {
    void (*limit_reached)(struct qpx_device_srq_handler *handler);
} qpx_device_srq_handler_t;

/* Path MTU in bytes */
size_t qpx_device_mtu_bytes(enum ibv_mtu mtu);

/* Whether a verbs call that failed with err (its errno) found the device
 * out of room or memory for what it creates (ENOMEM, or EAGAIN as rdma-core
 * providers say of a full QP, CQ, SRQ or MR table): something a user may
 * go on without, unlike a fault */
static inline int qpx_device_err_exhausted(int err)
{
    return (err == ENOMEM) || (err == EAGAIN);
}

/* The status of a verbs call that failed with err (its errno) */
static inline ucs_status_t qpx_device_err_status(int err)
{
    return (err == ENOMEM)     ? UCS_ERR_NO_MEMORY :
           (err == EOPNOTSUPP) ? UCS_ERR_UNSUPPORTED : UCS_ERR_IO_ERROR;
}

#endif
