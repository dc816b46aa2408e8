/*
 * qpx device: open, query ports, estimates and addresses.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Lanes of an IBTA active_width code (ibv_port_attr.active_width) */
static unsigned qpx_device_width_lanes(uint8_t active_width)
{
    switch (active_width) {
    case 1:  return 1;
    case 2:  return 4;
    case 4:  return 8;
    case 8:  return 12;
    case 16: return 2;
    default: return 0;
    }
}


/*
 * Data rate of one lane, bits/second after line encoding, for an IBTA
 * active_speed code: 8b/10b up to QDR, 64b/66b from FDR10 on.
 */
static double qpx_device_lane_rate(uint8_t active_speed)
{
    switch (active_speed) {
    case 1:   return 2.5e9 * 8 / 10;         /* SDR */
    case 2:   return 5.0e9 * 8 / 10;         /* DDR */
    case 4:   return 10.0e9 * 8 / 10;        /* QDR */
    case 8:   return 10.3125e9 * 64 / 66;    /* FDR10 */
    case 16:  return 14.0625e9 * 64 / 66;    /* FDR */
    case 32:  return 25.78125e9 * 64 / 66;   /* EDR */
    case 64:  return 53.125e9 * 64 / 66;     /* HDR */
    case 128: return 106.25e9 * 64 / 66;     /* NDR */
    default:  return 0;
    }
}


size_t qpx_device_mtu_bytes(enum ibv_mtu mtu)
{
    return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? (128ul << mtu) : 0;
}


static void qpx_device_port_estimate(qpx_device_port_t *port)
{
    struct ibv_port_attr *attr = &port->attr;
    size_t mtu                 = qpx_device_mtu_bytes(attr->active_mtu);
    double wire_bw;

    wire_bw = qpx_device_width_lanes(attr->active_width) *
              qpx_device_lane_rate(attr->active_speed) / 8;
    /* Transport headers per MTU-sized packet: LRH+BTH+ICRC+VCRC (26 bytes),
     * and GRH on RoCE (40) */
    if (mtu > 0) {
        wire_bw *= (double)mtu / (mtu + 26 + (port->is_eth ? 40 : 0));
    }

    port->bandwidth = wire_bw;
    port->latency   = port->is_eth ? QPX_DEVICE_LATENCY_ETH :
                                     QPX_DEVICE_LATENCY_IB;
}


/* How good a GID is to send from (qpx_device_gid_select): -1 unpopulated */
static int qpx_device_gid_rank(const struct ibv_gid_entry *e)
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff};
    static const uint8_t zero[16];
    const uint8_t *raw = e->gid.raw;
    int rank;

    if (!memcmp(raw, zero, sizeof(zero))) {
        return -1;
    }
    rank = (e->gid_type == IBV_GID_TYPE_ROCE_V2) ? 4 : 0;
    if (!memcmp(raw, v4_prefix, sizeof(v4_prefix))) {
        rank += 2;                              /* ::ffff:a.b.c.d */
    } else if (!((raw[0] == 0xfe) && ((raw[1] & 0xc0) == 0x80))) {
        rank += 1;                              /* global IPv6 */
    }                                           /* fe80::/10: link-local */
    return rank;
}


int qpx_device_gid_select(const struct ibv_gid_entry *entries, int count)
{
    int i, rank, best = -1, best_rank = -1;

    for (i = 0; i < count; ++i) {
        rank = qpx_device_gid_rank(&entries[i]);
        if (rank > best_rank) {
            best      = i;
            best_rank = rank;
        }
    }
    return best;
}


/* A GID table entry (an unpopulated one is an error, ENODATA as rdma-core
 * says); its type where the provider says, RoCE v1 where it cannot (a
 * provider without ibv_query_gid_ex) */
static int qpx_device_gid_entry(struct ibv_context *ctx, uint8_t port_num,
                                int index, struct ibv_gid_entry *entry)
{
    int ret;

    memset(entry, 0, sizeof(*entry));
    ret = ibv_query_gid_ex(ctx, port_num, index, entry, 0);
    if ((ret != EOPNOTSUPP) && (ret != ENOSYS)) {
        return ret;
    }
    entry->gid_index = index;
    entry->port_num  = port_num;
    entry->gid_type  = IBV_GID_TYPE_ROCE_V1;
    return ibv_query_gid(ctx, port_num, index, &entry->gid);
}


/* The GID port port_num sends from (port->gid, port->gid_index): index 0 on
 * InfiniBand (LIDs route there), the best of the table or gid_index on RoCE */
static ucs_status_t qpx_device_port_gid(qpx_device_t *dev, uint8_t port_num,
                                        qpx_device_port_t *port,
                                        unsigned long gid_index)
{
    struct ibv_gid_entry entries[QPX_DEVICE_MAX_GIDS];
    int i, count, best;

    if (port->attr.gid_tbl_len <= 0) {
        return UCS_OK;
    }
    if (!port->is_eth) {
        if (ibv_query_gid(dev->ctx, port_num, 0, &port->gid) != 0) {
            ucs_debug("ibv_query_gid(%s:%d) failed: %m", dev->name,
                      port_num);
        }
        return UCS_OK;
    }

    count = ucs_min(port->attr.gid_tbl_len, QPX_DEVICE_MAX_GIDS);
    if (gid_index != QPX_DEVICE_GID_AUTO) {
        if ((gid_index >= (unsigned long)count) ||
            (qpx_device_gid_entry(dev->ctx, port_num, gid_index,
                                  &entries[0]) != 0) ||
            (qpx_device_gid_rank(&entries[0]) < 0)) {
            ucs_error("%s:%d: UCX_QPX_GID_INDEX=%lu names no populated GID "
                      "(the port's table has %d entries)", dev->name,
                      port_num, gid_index, port->attr.gid_tbl_len);
            return UCS_ERR_INVALID_PARAM;
        }
        best = 0;
    } else {
        for (i = 0; i < count; ++i) {
            if (qpx_device_gid_entry(dev->ctx, port_num, i,
                                     &entries[i]) != 0) {
                memset(&entries[i], 0, sizeof(entries[i])); /* unpopulated */
            }
        }
        best = qpx_device_gid_select(entries, count);
        if (best < 0) {
            ucs_debug("%s:%d: no populated GID", dev->name, port_num);
            return UCS_OK;
        }
    }

    port->gid       = entries[best].gid;
    port->gid_index = entries[best].gid_index;
    ucs_debug("%s:%d RoCE: GID index %u (%s, %s)", dev->name, port_num,
              port->gid_index,
              (entries[best].gid_type == IBV_GID_TYPE_ROCE_V2) ?
              "RoCE v2" : "RoCE v1",
              (gid_index == QPX_DEVICE_GID_AUTO) ? "chosen" :
              "UCX_QPX_GID_INDEX");
    return UCS_OK;
}


ucs_status_t qpx_device_open(qpx_device_t *dev, struct ibv_device *ibdev,
                             unsigned long gid_index)
{
    const char *name = ibv_get_device_name(ibdev);
    ucs_status_t status = UCS_ERR_IO_ERROR;
    qpx_device_port_t *port;
    uint8_t port_num;
    int ret;

    memset(dev, 0, sizeof(*dev));
    ucs_strncpy_zero(dev->name, name, sizeof(dev->name));
    dev->events_fd = -1;

    dev->ctx = ibv_open_device(ibdev);
    if (dev->ctx == NULL) {
        ucs_error("ibv_open_device(%s) failed: %m", name);
        return UCS_ERR_IO_ERROR;
    }

    ret = ibv_query_device(dev->ctx, &dev->attr);
    if (ret != 0) {
        ucs_error("ibv_query_device(%s) failed: %s", name, strerror(ret));
        goto err_close;
    }

    dev->first_port = 1;
    dev->num_ports  = ucs_min(dev->attr.phys_port_cnt, QPX_DEVICE_MAX_PORTS);
    for (port_num = 1; port_num <= dev->num_ports; ++port_num) {
        port = &dev->ports[port_num - 1];
        ret  = ibv_query_port(dev->ctx, port_num, &port->attr);
        if (ret != 0) {
            ucs_error("ibv_query_port(%s:%d) failed: %s", name, port_num,
                      strerror(ret));
            goto err_close;
        }

        port->is_eth = (port->attr.link_layer == IBV_LINK_LAYER_ETHERNET);
        status = qpx_device_port_gid(dev, port_num, port, gid_index);
        if (status != UCS_OK) {
            goto err_close;
        }

        qpx_device_port_estimate(port);
        ucs_debug("%s:%d state %d lid %d mtu %zu bw %.0f MB/s", name, port_num,
                  port->attr.state, port->attr.lid,
                  qpx_device_mtu_bytes(port->attr.active_mtu),
                  port->bandwidth / 1e6);
    }

    return UCS_OK;

err_close:
    ibv_close_device(dev->ctx);
    dev->ctx = NULL;
    return status;
}


void qpx_device_close(qpx_device_t *dev)
{
    if (dev->ctx != NULL) {
        /* the md stopped the events: their handler reads ctx */
        ucs_assert(dev->events_fd < 0);
        ibv_close_device(dev->ctx);
        dev->ctx = NULL;
    }
}


qpx_device_port_t *qpx_device_port(qpx_device_t *dev, uint8_t port_num)
{
    if ((port_num < dev->first_port) || (port_num > dev->num_ports)) {
        return NULL;
    }

    return &dev->ports[port_num - dev->first_port];
}


static int qpx_device_port_is_usable(const qpx_device_port_t *port)
{
    return (port->attr.state == IBV_PORT_ACTIVE) &&
           (port->attr.link_layer != IBV_LINK_LAYER_UNSPECIFIED ||
            port->attr.lid != 0);
}


ucs_status_t qpx_device_parse_port(qpx_device_t *dev, const char *dev_name,
                                   uint8_t *port_num_p)
{
    size_t len       = strlen(dev->name);
    const char *sep  = dev_name + len;
    char *end;
    unsigned long port_num;
    qpx_device_port_t *port;

    if (strncmp(dev_name, dev->name, len) || (*sep != ':')) {
        ucs_error("device '%s' is not a port of %s", dev_name, dev->name);
        return UCS_ERR_NO_DEVICE;
    }

    port_num = strtoul(sep + 1, &end, 10);
    port     = (port_num <= UINT8_MAX) ? qpx_device_port(dev, port_num) : NULL;
    if ((*end != '\0') || (port == NULL)) {
        ucs_error("%s has no port '%s'", dev->name, sep + 1);
        return UCS_ERR_NO_DEVICE;
    }

    if (!qpx_device_port_is_usable(port)) {
        ucs_error("%s:%lu is not active (state %d)", dev->name, port_num,
                  port->attr.state);
        return UCS_ERR_UNREACHABLE;
    }

    *port_num_p = port_num;
    return UCS_OK;
}


ucs_status_t qpx_device_query_tl_resources(qpx_device_t *dev,
                                           uct_tl_device_resource_t **tl_devices_p,
                                           unsigned *num_tl_devices_p)
{
    uct_tl_device_resource_t *resources;
    unsigned num_resources = 0;
    uint8_t port_num;

    /* libuct releases the array with ucs_free(), i.e. free() */
    resources = calloc(dev->num_ports, sizeof(*resources));
    if (resources == NULL) {
        ucs_error("failed to allocate %u tl device resources", dev->num_ports);
        return UCS_ERR_NO_MEMORY;
    }

    for (port_num = dev->first_port; port_num <= dev->num_ports; ++port_num) {
        if (!qpx_device_port_is_usable(qpx_device_port(dev, port_num))) {
            continue;
        }

        /* dev->name has room for the port suffix: UCT_DEVICE_NAME_MAX is
         * also the size of the md name it came from */
        ucs_snprintf_zero(resources[num_resources].name,
                          sizeof(resources[num_resources].name), "%.*s:%d",
                          (int)sizeof(dev->name) - 5, dev->name, port_num);
        resources[num_resources].type       = UCT_DEVICE_TYPE_NET;
        resources[num_resources].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++num_resources;
    }

    *tl_devices_p     = resources;
    *num_tl_devices_p = num_resources;
    return UCS_OK;
}


/* The flags of UCX 1.13's uct_ib_address_t (src/uct/ib/base/ib_device.h,
 * enum uct_ib_address_flags), the wire format of a device address */
enum {
    QPX_IB_ADDR_GID_INDEX      = UCS_BIT(0),
    QPX_IB_ADDR_PATH_MTU       = UCS_BIT(1),
    QPX_IB_ADDR_PKEY           = UCS_BIT(2),
    QPX_IB_ADDR_LINK_LAYER_ETH = UCS_BIT(3),
    QPX_IB_ADDR_ROCE_IPV6      = UCS_BIT(4), /* with ETH */
    QPX_IB_ADDR_SUBNET16       = UCS_BIT(4), /* without ETH */
    QPX_IB_ADDR_SUBNET64       = UCS_BIT(5),
    QPX_IB_ADDR_IF_ID          = UCS_BIT(6)
};


size_t qpx_device_addr_size(const qpx_device_port_t *port)
{
    /* flags; IB: the LID routes inside the subnet; RoCE: the GID is the
     * address (UCX's IB transports pack the same) */
    return 1 + (port->is_eth ? 16 : sizeof(uint16_t));
}


void qpx_device_addr_get(const qpx_device_port_t *port,
                         qpx_device_addr_t *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->lid = port->attr.lid;
    if (port->is_eth) {
        addr->flags |= QPX_DEVICE_ADDR_FLAG_GID | QPX_DEVICE_ADDR_FLAG_ETH;
        memcpy(addr->gid, port->gid.raw, sizeof(addr->gid));
    }
}


size_t qpx_device_addr_pack_addr(const qpx_device_addr_t *addr,
                                 void *packed)
{
    uint8_t *p = packed;

    if (addr->flags & QPX_DEVICE_ADDR_FLAG_ETH) {
        /* RoCE version "any" (0) in the bits above ETH_LAST, IPv4 */
        p[0] = QPX_IB_ADDR_LINK_LAYER_ETH;
        memcpy(p + 1, addr->gid, sizeof(addr->gid));
        return 1 + sizeof(addr->gid);
    }

    p[0] = 0;
    memcpy(p + 1, &addr->lid, sizeof(addr->lid));
    return 1 + sizeof(addr->lid);
}


void qpx_device_addr_pack(const qpx_device_port_t *port, void *packed)
{
    qpx_device_addr_t addr;

    qpx_device_addr_get(port, &addr);
    qpx_device_addr_pack_addr(&addr, packed);
}


void qpx_device_addr_unpack(const void *packed, qpx_device_addr_t *addr)
{
    const uint8_t *p = packed;
    uint8_t flags    = p[0];

    memset(addr, 0, sizeof(*addr));
    ++p;
    if (flags & QPX_IB_ADDR_LINK_LAYER_ETH) {
        addr->flags |= QPX_DEVICE_ADDR_FLAG_GID | QPX_DEVICE_ADDR_FLAG_ETH;
        memcpy(addr->gid, p, sizeof(addr->gid));
        return;
    }
    memcpy(&addr->lid, p, sizeof(addr->lid));
    /* the rest (interface id, subnet prefix, path MTU, GID index, P_Key)
     * routes nothing inside one subnet: LID addressing */
}


size_t qpx_device_addr_unpack_len(const void *packed)
{
    return 1 + ((*(const uint8_t*)packed & QPX_IB_ADDR_LINK_LAYER_ETH) ?
                16 : sizeof(uint16_t));
}


int qpx_device_addr_is_reachable(const qpx_device_port_t *port,
                                 const qpx_device_addr_t *addr)
{
    int peer_is_eth = !!(addr->flags & QPX_DEVICE_ADDR_FLAG_ETH);

    return (peer_is_eth == port->is_eth) && (peer_is_eth || (addr->lid != 0));
}


void qpx_device_ah_attr(const qpx_device_addr_t *addr, uint8_t port_num,
                        uint8_t sgid_index, struct ibv_ah_attr *ah_attr)
{
    memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->dlid     = addr->lid;
    ah_attr->port_num = port_num;
    if (addr->flags & QPX_DEVICE_ADDR_FLAG_GID) {
        ah_attr->is_global      = 1;
        ah_attr->grh.hop_limit  = 64;
        ah_attr->grh.sgid_index = sgid_index;
        memcpy(ah_attr->grh.dgid.raw, addr->gid, sizeof(addr->gid));
    }
}


int qpx_device_addr_is_ah_peer(const qpx_device_addr_t *addr,
                               const struct ibv_ah_attr *ah_attr)
{
    if (addr->flags & QPX_DEVICE_ADDR_FLAG_GID) {
        return ah_attr->is_global &&
               !memcmp(ah_attr->grh.dgid.raw, addr->gid, sizeof(addr->gid));
    }
    return !ah_attr->is_global && (ah_attr->dlid == addr->lid);
}
