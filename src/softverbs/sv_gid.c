/*
 * softverbs ports: link layer (InfiniBand or Ethernet/RoCE), GID tables
 * and the GID checks of the wire.
 *
 * An InfiniBand port has one GID (index 0: the link-local prefix and the
 * port GUID) and a LID; packets are routed by LID.
 *
 * A RoCE port (SOFTVERBS_LINK_LAYER=ethernet) has no LID (0) and is bound
 * to a network device (SOFTVERBS_NETDEV, else the first interface that is
 * up, not loopback, with an IPv4 address; else lo). Its GID table is what
 * the kernel's roce_gid_mgmt (drivers/infiniband/core/roce_gid_mgmt.c)
 * fills for a port whose device supports RoCE v1 and v2, as mlx5 and rxe
 * do: for every address a pair of entries, one per GID type, the default
 * pair first:
 *
 *   0  RoCE v1 (sysfs "IB/RoCE v1")  fe80::<port GUID>   the default GID
 *   1  RoCE v2 ("RoCE v2")           fe80::<port GUID>
 *   2  RoCE v1                       ::ffff:<IPv4 address> of the netdev
 *   3  RoCE v2                       ::ffff:<IPv4 address>
 *   ...                              then global IPv6 addresses, likewise
 *
 * and the rest of the table (SV_GID_TBL_LEN entries) is empty: ENODATA
 * from ibv_query_gid_ex, a zero GID from ibv_query_gid (rdma-core's
 * __ibv_query_gid keeps that behaviour for empty entries). The addresses
 * are read in each process (getifaddrs) when the registry is opened, and
 * published in the registry for the devices the process's host owns
 * (sv_gid_publish): every process, on any host of the registry (the
 * network namespaces of contrib/cluster-one-host.sh), then sees a port's
 * table as its own host fills it, and a packet to another host's address
 * GID finds it there. A device nobody published reads the process's own
 * addresses.
 *
 * On the wire (sv_gid_route): a RoCE packet always carries a GRH (IBA
 * spec annex A16/A17: the LRH is replaced by the Ethernet/IP headers); it
 * reaches a QP only on a RoCE port, only when its destination GID is one
 * of that port's GIDs of the sender's GID type (a RoCE v2 packet is UDP/IP,
 * a RoCE v1 one an Ethernet frame of ethertype 0x8915: a port does not
 * take one as the other), and for RoCE v2 only within one address family.
 * Anything else is lost, as on a fabric: RC and DC requesters run out of
 * retries (IBV_WC_RETRY_EXC_ERR), UD datagrams vanish. Multicast is not
 * offered on RoCE ports (a multicast GID is lost).
 */
#include "sv.h"
#include "sv_hash.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* One port number of every device (devices differ by their GUIDs only) */
struct sv_gid_port {
    uint8_t       link_layer;          /* IBV_LINK_LAYER_* */
    char          netdev[IF_NAMESIZE]; /* RoCE: the bound network device */
    uint32_t      ifindex;
    uint32_t      mtu;                 /* of the netdev, bytes */
    int           naddr;
    union ibv_gid addr[SV_GID_MAX_ADDR]; /* as GIDs: IPv4-mapped first */
};

static struct sv_gid_port sv_gid_ports[SV_MAX_PORTS];

static struct sv_gid_port *sv_gid_port(uint8_t port)
{
    return &sv_gid_ports[port - 1];
}

int sv_port_is_eth(uint8_t port)
{
    return sv_port_valid(port) &&
           (sv_gid_port(port)->link_layer == IBV_LINK_LAYER_ETHERNET);
}

/* Value number i (0-based) of a comma-separated list: a list of one value
 * applies to every port. Returns 0, or -1 when the list has neither one
 * value nor one per port or a value is too long */
static int sv_gid_env_item(const char *s, int i, int nports, char *buf,
                           size_t len)
{
    const char *p = s, *end;
    int n = 1, k;

    for (end = s; *end != '\0'; end++) {
        n += (*end == ',');
    }
    if ((n != 1) && (n != nports)) {
        return -1;
    }
    for (k = 0; k < ((n == 1) ? 0 : i); k++) {
        p = strchr(p, ',') + 1;
    }
    end = strchr(p, ',');
    if (end == NULL) {
        end = p + strlen(p);
    }
    if ((size_t)(end - p) >= len) {
        return -1;
    }
    memcpy(buf, p, end - p);
    buf[end - p] = '\0';
    return 0;
}

static int sv_gid_link_layer(const char *name, uint8_t *ll)
{
    if (!strcmp(name, "infiniband") || !strcmp(name, "ib")) {
        *ll = IBV_LINK_LAYER_INFINIBAND;
    } else if (!strcmp(name, "ethernet") || !strcmp(name, "eth") ||
               !strcmp(name, "roce")) {
        *ll = IBV_LINK_LAYER_ETHERNET;
    } else {
        return -1;
    }
    return 0;
}

/* The netdev a RoCE port binds to when none is named: the first that is
 * up, not loopback, with an IPv4 address; else lo */
static void sv_gid_default_netdev(struct ifaddrs *ifa, char *buf, size_t len)
{
    for (; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr != NULL) && (ifa->ifa_addr->sa_family == AF_INET) &&
            (ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK)) {
            snprintf(buf, len, "%s", ifa->ifa_name);
            return;
        }
    }
    snprintf(buf, len, "lo");
}

static uint32_t sv_gid_netdev_mtu(const char *name)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint32_t mtu = 1500;

    if (fd < 0) {
        return mtu;
    }
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0) {
        mtu = (uint32_t)ifr.ifr_mtu;
    }
    close(fd);
    return mtu;
}

/* The netdev's addresses as GIDs, IPv4 (mapped, ::ffff:a.b.c.d) before
 * global IPv6; IPv6 link-local addresses are the default GID's business */
static void sv_gid_port_addrs(struct sv_gid_port *gp, struct ifaddrs *list)
{
    struct ifaddrs *ifa;
    int pass;

    gp->naddr = 0;
    for (pass = 0; pass < 2; pass++) {
        for (ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
            union ibv_gid *g = &gp->addr[gp->naddr];

            if ((ifa->ifa_addr == NULL) || strcmp(ifa->ifa_name, gp->netdev) ||
                (gp->naddr >= SV_GID_MAX_ADDR)) {
                continue;
            }
            if ((pass == 0) && (ifa->ifa_addr->sa_family == AF_INET)) {
                memset(g, 0, sizeof(*g));
                g->raw[10] = 0xff;
                g->raw[11] = 0xff;
                memcpy(&g->raw[12],
                       &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, 4);
                gp->naddr++;
            } else if ((pass == 1) && (ifa->ifa_addr->sa_family == AF_INET6)) {
                const struct in6_addr *a6 =
                    &((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
                if (!IN6_IS_ADDR_LINKLOCAL(a6)) {
                    memcpy(g->raw, a6, sizeof(g->raw));
                    gp->naddr++;
                }
            }
        }
    }
}

/*
 * SOFTVERBS_LINK_LAYER and SOFTVERBS_NETDEV, read when the registry is
 * first opened (sv_devices_init). A malformed value is named and the
 * default used: InfiniBand; the automatic netdev.
 */
void sv_gid_init(int nports)
{
    const char *ll  = getenv(SOFTVERBS_ENV_LINK_LAYER);
    const char *nd  = getenv(SOFTVERBS_ENV_NETDEV);
    struct ifaddrs *list = NULL;
    char item[IF_NAMESIZE];
    int p, eth = 0;

    for (p = 0; p < nports; p++) {
        struct sv_gid_port *gp = &sv_gid_ports[p];

        memset(gp, 0, sizeof(*gp));
        gp->link_layer = IBV_LINK_LAYER_INFINIBAND;
        if ((ll != NULL) &&
            ((sv_gid_env_item(ll, p, nports, item, sizeof(item)) != 0) ||
             (sv_gid_link_layer(item, &gp->link_layer) != 0))) {
            sv_env_bad(SOFTVERBS_ENV_LINK_LAYER, ll,
                       "'infiniband' or 'ethernet', one value or one per port",
                       "infiniband");
            ll = NULL;
            p  = -1; /* again, every port InfiniBand */
            continue;
        }
        eth |= (gp->link_layer == IBV_LINK_LAYER_ETHERNET);
    }
    if (!eth) {
        return;
    }
    if (getifaddrs(&list) != 0) {
        sv_warn("getifaddrs: %s; RoCE ports have only their default GIDs",
                strerror(errno));
        list = NULL;
    }
    for (p = 0; p < nports; p++) {
        struct sv_gid_port *gp = &sv_gid_ports[p];

        if (gp->link_layer != IBV_LINK_LAYER_ETHERNET) {
            continue;
        }
        if ((nd != NULL) &&
            ((sv_gid_env_item(nd, p, nports, item, sizeof(item)) != 0) ||
             (if_nametoindex(item) == 0))) {
            sv_env_bad(SOFTVERBS_ENV_NETDEV, nd,
                       "a network device of this host, one or one per port",
                       "the first one up with an IPv4 address");
            nd = NULL;
        }
        if (nd != NULL) {
            snprintf(gp->netdev, sizeof(gp->netdev), "%s", item);
        } else {
            sv_gid_default_netdev(list, gp->netdev, sizeof(gp->netdev));
        }
        gp->ifindex = if_nametoindex(gp->netdev);
        gp->mtu     = sv_gid_netdev_mtu(gp->netdev);
        sv_gid_port_addrs(gp, list);
    }
    if (list != NULL) {
        freeifaddrs(list);
    }
}

/* A tag of the ports' link layers and GIDs: the sysfs tree differs with
 * them (sv_sysfs_root) */
uint32_t sv_gid_tag(int nports)
{
    uint32_t h = SV_FNV1A_INIT;
    int p;

    /* the host's first device slot: its devices' GUIDs differ */
    h = sv_fnv1a(h, &sv_g.first_dev, sizeof(sv_g.first_dev));
    for (p = 0; p < nports; p++) {
        const struct sv_gid_port *gp = &sv_gid_ports[p];
        h = sv_fnv1a(h, &gp->link_layer, sizeof(gp->link_layer));
        h = sv_fnv1a(h, gp->addr, gp->naddr * sizeof(gp->addr[0]));
        h = sv_fnv1a(h, gp->netdev, strlen(gp->netdev));
    }
    return h;
}

/* Port GUID: the node GUID for port 1, then one more bit pattern per port,
 * so that every port has a GID of its own: IB's GID 0 and RoCE's default
 * GIDs */
void sv_device_gid(int index, uint8_t port, union ibv_gid *gid)
{
    gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
    gid->global.interface_id  = htobe64(sv_device_guid(index) ^
                                        ((uint64_t)(port - 1) << 40));
}

int sv_gid_tbl_len(uint8_t port)
{
    return sv_port_is_eth(port) ? SV_GID_TBL_LEN : 1;
}

/* Entry index of the port's GID table: 0, EINVAL (no such index) or
 * ENODATA (empty). type: IBV_GID_TYPE_IB, _ROCE_V1 or _ROCE_V2 */
/* The addresses of this process's host into the registry, for each RoCE
 * port of the devices it owns (its host's slots, SOFTVERBS_FIRST_DEVICE);
 * runs when the registry is attached, after sv_gid_init */
void sv_gid_publish(void)
{
    struct sv_shm_port_addrs *pa;
    const struct sv_gid_port *gp;
    int d, p;

    for (d = sv_g.first_dev; d < sv_g.first_dev + sv_g.num_devs; d++) {
        for (p = 1; p <= sv_g.num_ports; p++) {
            gp = sv_gid_port(p);
            pa = &sv_g.shm->port_addrs[d][p - 1];
            if ((gp->link_layer != IBV_LINK_LAYER_ETHERNET) ||
                ((pa->seq != 0) && (pa->naddr == (uint32_t)gp->naddr) &&
                 !memcmp(pa->addr, gp->addr, sizeof(pa->addr)))) {
                continue; /* already as this host sees it */
            }
            sv_shm_lock();
            /* readers retry while seq is odd or changed: the odd value is
             * visible before the entries change, the even one after */
            __atomic_store_n(&pa->seq, pa->seq | 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_RELEASE);
            pa->naddr = gp->naddr;
            memcpy(pa->addr, gp->addr, sizeof(pa->addr));
            __atomic_store_n(&pa->seq, pa->seq + 1, __ATOMIC_RELEASE);
            sv_shm_unlock();
        }
    }
}

/* Address entry i of a RoCE port of device dev: as its host published it,
 * else as this process sees its own addresses */
static int sv_gid_addr(int dev, uint8_t port, unsigned i, union ibv_gid *gid)
{
    const struct sv_shm_port_addrs *pa = &sv_g.shm->port_addrs[dev][port - 1];
    const struct sv_gid_port *gp       = sv_gid_port(port);
    uint32_t seq, naddr;

    do {
        seq = __atomic_load_n(&pa->seq, __ATOMIC_ACQUIRE);
        if (seq == 0) {
            if (i >= (unsigned)gp->naddr) {
                return ENODATA;
            }
            *gid = gp->addr[i];
            return 0;
        }
        naddr = pa->naddr;
        if (i < naddr) {
            *gid = pa->addr[i];
        }
        /* the entries read before seq is read again (seqlock reader) */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((seq & 1) || (seq != __atomic_load_n(&pa->seq, __ATOMIC_RELAXED)));
    return (i < naddr) ? 0 : ENODATA;
}

int sv_gid_entry(int dev, uint8_t port, unsigned index, union ibv_gid *gid,
                 int *type)
{
    const struct sv_gid_port *gp;

    if (!sv_port_valid(port) || (index >= (unsigned)sv_gid_tbl_len(port))) {
        return EINVAL;
    }
    gp = sv_gid_port(port);
    if (gp->link_layer != IBV_LINK_LAYER_ETHERNET) {
        sv_device_gid(dev, port, gid);
        *type = IBV_GID_TYPE_IB;
        return 0;
    }
    *type = (index & 1) ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    if (index < 2) {
        sv_device_gid(dev, port, gid);
        return 0;
    }
    return sv_gid_addr(dev, port, (index - 2) / 2, gid);
}

uint32_t sv_gid_ifindex(uint8_t port)
{
    return sv_port_is_eth(port) ? sv_gid_port(port)->ifindex : 0;
}

const char *sv_gid_netdev(uint8_t port)
{
    return sv_port_is_eth(port) ? sv_gid_port(port)->netdev : "";
}

/* The active MTU of a RoCE port follows its netdev's, less the largest
 * RoCE headers, as rxe_set_mtu (eth_mtu_int_to_enum: the MTU less
 * RXE_MAX_HDR_LENGTH, 80 bytes, rounded down to an IB MTU) */
enum ibv_mtu sv_gid_active_mtu(uint8_t port)
{
    uint32_t mtu;

    if (!sv_port_is_eth(port)) {
        return IBV_MTU_4096;
    }
    mtu = (sv_gid_port(port)->mtu > 80) ? sv_gid_port(port)->mtu - 80 : 0;
    return (mtu >= 4096) ? IBV_MTU_4096 : (mtu >= 2048) ? IBV_MTU_2048 :
           (mtu >= 1024) ? IBV_MTU_1024 : (mtu >= 512) ? IBV_MTU_512 :
           IBV_MTU_256;
}

/* A source GID index an AV may name: any on IB (softverbs' IB ports have
 * index 0 only), a populated one on RoCE */
int sv_gid_sgid_valid(uint8_t port, unsigned index)
{
    union ibv_gid gid;
    int type;

    return sv_gid_entry(0, port, index, &gid, &type) == 0;
}

static int sv_gid_is_v4(const union ibv_gid *gid)
{
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0xff, 0xff};

    return !memcmp(gid->raw, v4_prefix, sizeof(v4_prefix));
}

/*
 * Can a packet of the requester QP sq, sent from its port's GID sgid_index
 * to dgid (has_grh: the AV is global), reach the QP dq? Only where either
 * port is RoCE (InfiniBand ports route by LID, sv_resp_check_qp). The
 * source GID type of the sender is found in its own table.
 */
int sv_gid_route(const struct sv_shm_qp *sq, unsigned sgid_index, int has_grh,
                 const union ibv_gid *dgid, const struct sv_shm_qp *dq)
{
    union ibv_gid sgid, g;
    int stype, type;
    unsigned i;

    if (!sv_port_is_eth(sq->port) || !sv_port_is_eth(dq->port) || !has_grh ||
        (sv_gid_entry(sq->dev, sq->port, sgid_index, &sgid, &stype) != 0)) {
        return 0; /* an IB frame on Ethernet or the reverse: lost */
    }
    if ((sq->type == IBV_QPT_RC) || (sq->type == IBV_QPT_UC)) {
        /* a connected responder takes packets of its own path only: from
         * the GID its AV names, to the GID it sends from, of its type
         * (rxe_recv.c check_addr drops others) */
        if (!dq->av_is_global ||
            memcmp(dq->av_dgid, sgid.raw, sizeof(sgid.raw)) ||
            (sv_gid_entry(dq->dev, dq->port, dq->av_sgid_index, &g,
                          &type) != 0) ||
            (type != stype) || memcmp(&g, dgid, sizeof(g))) {
            return 0;
        }
    }
    for (i = 0; i < (unsigned)sv_gid_tbl_len(dq->port); i++) {
        if ((sv_gid_entry(dq->dev, dq->port, i, &g, &type) == 0) &&
            (type == stype) && !memcmp(&g, dgid, sizeof(g))) {
            /* RoCE v2 is routed by IP: IPv4 to IPv4, IPv6 to IPv6 */
            return (stype != IBV_GID_TYPE_ROCE_V2) ||
                   (sv_gid_is_v4(&sgid) == sv_gid_is_v4(dgid));
        }
    }
    return 0;
}

/*
 * The 40 bytes ahead of a UD receive on a RoCE port: the GRH for RoCE v1
 * and v2 over IPv6; for RoCE v2 over IPv4 the IPv4 header in the last 20
 * bytes and zeros before, as mlx5 and rxe place it (rdma-core's
 * ibv_init_ah_from_wc tells the two apart by the header's version)
 */
void sv_gid_build_roce_grh(const struct sv_shm_qp *sq, unsigned sgid_index,
                           const union ibv_gid *dgid, uint32_t paylen,
                           struct ibv_grh *grh)
{
    union ibv_gid sgid;
    uint8_t *b = (uint8_t *)grh;
    uint32_t sum = 0;
    int type, i;

    memset(grh, 0, sizeof(*grh));
    if (sv_gid_entry(sq->dev, sq->port, sgid_index, &sgid, &type) != 0) {
        return;
    }
    if ((type == IBV_GID_TYPE_ROCE_V2) && sv_gid_is_v4(&sgid)) {
        uint16_t tot = htobe16((uint16_t)(20 + 8 + paylen));
        b[20] = 0x45;                     /* version 4, IHL 5 */
        memcpy(&b[22], &tot, 2);          /* total length */
        b[28] = 64;                       /* TTL */
        b[29] = 17;                       /* UDP */
        memcpy(&b[32], &sgid.raw[12], 4); /* source address */
        memcpy(&b[36], &dgid->raw[12], 4);
        for (i = 20; i < 40; i += 2) {
            sum += ((uint32_t)b[i] << 8) | b[i + 1];
        }
        while (sum >> 16) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        b[30] = (uint8_t)(~sum >> 8);
        b[31] = (uint8_t)~sum;
        return;
    }
    grh->version_tclass_flow = htobe32(6u << 28);
    grh->paylen    = htobe16((uint16_t)paylen);
    grh->next_hdr  = (type == IBV_GID_TYPE_ROCE_V2) ? 17 : 0x1b;
    grh->hop_limit = 0xff;
    grh->sgid      = sgid;
    grh->dgid      = *dgid;
}

/* The source GID of a received RoCE UD packet (sv_gid_build_roce_grh's
 * header) and its type: for ibv_init_ah_from_wc */
int sv_gid_parse_roce_grh(const struct ibv_grh *grh, union ibv_gid *sgid,
                          union ibv_gid *dgid, int *type)
{
    const uint8_t *b = (const uint8_t *)grh;

    if (b[20] == 0x45) {
        memset(sgid, 0, sizeof(*sgid));
        memset(dgid, 0, sizeof(*dgid));
        sgid->raw[10] = sgid->raw[11] = 0xff;
        dgid->raw[10] = dgid->raw[11] = 0xff;
        memcpy(&sgid->raw[12], &b[32], 4);
        memcpy(&dgid->raw[12], &b[36], 4);
        *type = IBV_GID_TYPE_ROCE_V2;
        return 0;
    }
    if ((be32toh(grh->version_tclass_flow) >> 28) != 6) {
        return EINVAL;
    }
    *sgid = grh->sgid;
    *dgid = grh->dgid;
    *type = (grh->next_hdr == 17) ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    return 0;
}

/* The index of gid of the given type in the port's table, or -1 */
int sv_gid_find(int dev, uint8_t port, const union ibv_gid *gid, int type)
{
    union ibv_gid g;
    int i, t;

    for (i = 0; i < sv_gid_tbl_len(port); i++) {
        if ((sv_gid_entry(dev, port, i, &g, &t) == 0) && (t == type) &&
            !memcmp(&g, gid, sizeof(g))) {
            return i;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------------
 * The GID queries of libibverbs
 * ------------------------------------------------------------------- */
SV_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
                            union ibv_gid *gid)
{
    int type, ret;

    ret = (index < 0) ? EINVAL :
          sv_gid_entry(sv_ctx(ctx)->dev->index, port, (unsigned)index, gid,
                       &type);
    if (ret == ENODATA) {
        /* an empty entry reads as the zero GID (rdma-core's
         * __ibv_query_gid, for the sysfs behaviour it replaced) */
        memset(gid, 0, sizeof(*gid));
        return 0;
    }
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    return 0;
}

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port,
                                uint32_t index, struct ibv_gid_entry *entry,
                                uint32_t flags, size_t entry_size)
{
    struct ibv_gid_entry e;
    int type, ret;

    if ((port > 255) || flags) {
        return EINVAL;
    }
    memset(&e, 0, sizeof(e));
    ret = sv_gid_entry(sv_ctx(ctx)->dev->index, (uint8_t)port, index, &e.gid,
                       &type);
    if (ret != 0) {
        return ret; /* EINVAL, or ENODATA for an empty entry */
    }
    e.gid_index    = index;
    e.port_num     = port;
    e.gid_type     = (uint32_t)type;
    e.ndev_ifindex = sv_gid_ifindex((uint8_t)port);
    memcpy(entry, &e, (entry_size < sizeof(e)) ? entry_size : sizeof(e));
    return 0;
}

/* Every populated entry of every port, as rdma-core's query_gid_table
 * gives them; -EINVAL when max_entries cannot hold them */
SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx,
                                       struct ibv_gid_entry *entries,
                                       size_t max_entries, uint32_t flags,
                                       size_t entry_size)
{
    size_t n = 0;
    int port, i, ret;

    if (flags) {
        return -EINVAL;
    }
    for (port = 1; port <= sv_g.num_ports; ++port) {
        for (i = 0; i < sv_gid_tbl_len((uint8_t)port); i++) {
            struct ibv_gid_entry e;

            ret = _ibv_query_gid_ex(ctx, port, i, &e, 0, sizeof(e));
            if (ret == ENODATA) {
                continue;
            } else if (ret != 0) {
                return -ret;
            }
            if (n >= max_entries) {
                return -EINVAL;
            }
            memcpy((char *)entries + n * entry_size, &e,
                   (entry_size < sizeof(e)) ? entry_size : sizeof(e));
            n++;
        }
    }
    return (ssize_t)n;
}

/* IBVERBS_PRIVATE_34: enum ibv_gid_type_sysfs (0 IB/RoCE v1, 1 RoCE v2) */
SV_EXPORT int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port,
                                 unsigned int index, int *type)
{
    union ibv_gid gid;
    int t, ret;

    ret = sv_gid_entry(sv_ctx(ctx)->dev->index, port, index, &gid, &t);
    if (ret == EINVAL) {
        errno = EINVAL;
        return -1;
    }
    *type = (ret == 0) && (t == IBV_GID_TYPE_ROCE_V2) ? 1 : 0;
    return 0;
}
