/*
 * softverbs librdmacm: multicast for UD ids (rdma_join_multicast(3)). An IP
 * multicast address maps to a multicast GID as IPoIB maps it (RFC 4391:
 * ff12:401b:<P_Key>::<IPv4 group>, or the IPv6 group's low 80 bits) and to
 * a multicast LID of softverbs (0xc000 and up) derived from the GID; the
 * join attaches the id's QP (ibv_attach_mcast), as rdma-core does when the
 * join completes, and gives MULTICAST_JOIN with the address handle
 * attributes of the group, QP number 0xffffff and the CM's Q_Key.
 * rdma_leave_multicast detaches it.
 */
#include "sv_cm.h"
#include "sv_hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#define SV_CM_MC_QKEY 0x01234567

struct sv_cm_mcast {
    struct sockaddr_storage addr;
    union ibv_gid          mgid;
    uint16_t               mlid;
    int                    attached;
    struct sv_cm_mcast     *next;
};

static int sv_cm_mc_gid(const struct sockaddr *sa, union ibv_gid *mgid,
                        uint16_t *mlid)
{
    uint32_t h;

    memset(mgid, 0, sizeof(*mgid));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;

        if (!IN_MULTICAST(ntohl(in->sin_addr.s_addr))) {
            return -1;
        }
        mgid->raw[0] = 0xff;
        mgid->raw[1] = 0x12;
        mgid->raw[2] = 0x40;
        mgid->raw[3] = 0x1b;
        mgid->raw[4] = 0xff;
        mgid->raw[5] = 0xff;
        memcpy(&mgid->raw[12], &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;

        if (!IN6_IS_ADDR_MULTICAST(&in6->sin6_addr)) {
            return -1;
        }
        mgid->raw[0] = 0xff;
        mgid->raw[1] = 0x12;
        mgid->raw[2] = 0x60;
        mgid->raw[3] = 0x1b;
        mgid->raw[4] = 0xff;
        mgid->raw[5] = 0xff;
        memcpy(&mgid->raw[6], &in6->sin6_addr.s6_addr[6], 10);
    } else {
        return -1;
    }
    h     = sv_fnv1a(SV_FNV1A_INIT, mgid->raw, sizeof(mgid->raw));
    *mlid = 0xc000 + (h % 0x3ffe); /* never the permissive 0xffff */
    return 0;
}

int sv_cm_addr_is_mcast(const struct sockaddr *sa)
{
    union ibv_gid g;
    uint16_t l;

    return sv_cm_mc_gid(sa, &g, &l) == 0;
}

static int sv_cm_api_join_multicast_ex(struct rdma_cm_id *cm_id,
                                       struct rdma_cm_join_mc_attr_ex *attr,
                                       void *context)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_mcast *mc;
    struct sv_cm_event *ev;
    struct rdma_ud_param *ud;
    socklen_t len;

    if ((id == NULL) || (attr == NULL) || (cm_id->verbs == NULL) ||
        !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
        (attr->addr == NULL) || (cm_id->qp_type != IBV_QPT_UD) ||
        ((len = sv_cm_addr_len(attr->addr)) == 0)) {
        errno = EINVAL;
        return -1;
    }
    mc = calloc(1, sizeof(*mc));
    if (mc == NULL) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(&mc->addr, attr->addr, len);
    if (sv_cm_mc_gid(attr->addr, &mc->mgid, &mc->mlid) != 0) {
        free(mc);
        errno = EINVAL; /* not a multicast address */
        return -1;
    }
    if ((cm_id->qp != NULL) &&
        (ibv_attach_mcast(cm_id->qp, &mc->mgid, mc->mlid) != 0)) {
        free(mc);
        errno = ENOMEM;
        return -1;
    }
    mc->attached = (cm_id->qp != NULL);
    ev = sv_cm_event_new(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
    if (ev == NULL) {
        if (mc->attached) {
            ibv_detach_mcast(cm_id->qp, &mc->mgid, mc->mlid);
        }
        free(mc);
        errno = ENOMEM;
        return -1;
    }
    mc->next      = id->mcast;
    id->mcast     = mc;
    ud            = &ev->event.param.ud;
    ud->private_data       = context; /* rdma-core: the join's context */
    ud->ah_attr.dlid       = mc->mlid;
    ud->ah_attr.port_num   = cm_id->port_num;
    ud->ah_attr.is_global  = 1;
    ud->ah_attr.grh.dgid   = mc->mgid;
    ud->ah_attr.grh.hop_limit = 1;
    ud->qp_num             = 0xffffff;
    ud->qkey               = SV_CM_MC_QKEY;
    sv_cm_event_queue(ev);
    return id->sync ? sv_cm_sync_result(id, RDMA_CM_EVENT_MULTICAST_JOIN) : 0;
}

SV_CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *cm_id,
                                        struct rdma_cm_join_mc_attr_ex *attr,
                                        void *context)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_join_multicast_ex(cm_id, attr, context);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_join_multicast(struct rdma_cm_id *cm_id,
                                    struct sockaddr *addr, void *context)
{
    struct rdma_cm_join_mc_attr_ex attr;

    memset(&attr, 0, sizeof(attr));
    attr.comp_mask  = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
                      RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
    attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
    attr.addr       = addr;
    return rdma_join_multicast_ex(cm_id, &attr, context);
}

SV_CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *cm_id,
                                     struct sockaddr *addr, void *context)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_join_multicast(cm_id, addr, context);
    sv_cm_unlock();
    return ret;
}

static int sv_cm_api_leave_multicast(struct rdma_cm_id *cm_id,
                                     struct sockaddr *addr)
{
    struct sv_cm_id *id = sv_cm_id(cm_id);
    struct sv_cm_mcast **pp, *mc;
    socklen_t len;

    if ((id == NULL) || (addr == NULL) ||
        ((len = sv_cm_addr_len(addr)) == 0)) {
        errno = EINVAL;
        return -1;
    }
    for (pp = (struct sv_cm_mcast **)&id->mcast; (mc = *pp) != NULL;
         pp = &mc->next) {
        if (!memcmp(&mc->addr, addr, len)) {
            *pp = mc->next;
            if (mc->attached && (cm_id->qp != NULL)) {
                ibv_detach_mcast(cm_id->qp, &mc->mgid, mc->mlid);
            }
            free(mc);
            return 0;
        }
    }
    errno = EADDRNOTAVAIL; /* not joined */
    return -1;
}

SV_CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *cm_id,
                                      struct sockaddr *addr)
{
    int ret;

    sv_cm_lock();
    ret = sv_cm_api_leave_multicast(cm_id, addr);
    sv_cm_unlock();
    return ret;
}

/* The id's QP is going: every group it joined lets it go */
void sv_cm_mcast_detach_all(struct sv_cm_id *id)
{
    struct sv_cm_mcast *mc;

    while ((mc = id->mcast) != NULL) {
        id->mcast = mc->next;
        if (mc->attached && (id->id.qp != NULL)) {
            ibv_detach_mcast(id->id.qp, &mc->mgid, mc->mlid);
        }
        free(mc);
    }
}
