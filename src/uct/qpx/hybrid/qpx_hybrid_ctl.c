/*
 * qpx hybrid: control messages (the handshake of qpx_hybrid.h) on the
 * wire: packing and sending them on a cold-path endpoint, posting them on
 * a DC endpoint of their own to be sent now or when a send slot frees, and
 * receiving them in the AM handler, kept for the next progress.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_hybrid.h"

#include <string.h>


typedef struct qpx_hybrid_ctl_pack_arg {
    qpx_hybrid_iface_t *iface;
    uint8_t            type;
    uint32_t           src_id;
    uint32_t           dst_id;
    uint32_t           serial;
    uint32_t           aux;
    uct_ep_h           rc_ep;
} qpx_hybrid_ctl_pack_arg_t;


const char *qpx_hybrid_ctl_names[] = {
    [QPX_HYBRID_CTL_PROMOTE_REQ]  = "PROMOTE_REQ",
    [QPX_HYBRID_CTL_PROMOTE_REP]  = "PROMOTE_REP",
    [QPX_HYBRID_CTL_PROMOTE_NACK] = "PROMOTE_NACK",
    [QPX_HYBRID_CTL_DEMOTE_REQ]   = "DEMOTE_REQ",
    [QPX_HYBRID_CTL_DEMOTE_ACK]   = "DEMOTE_ACK",
    [QPX_HYBRID_CTL_RELEASE]      = "RELEASE",
    [QPX_HYBRID_CTL_JOIN_REQ]     = "JOIN_REQ",
    [QPX_HYBRID_CTL_JOIN_ACK]     = "JOIN_ACK",
    [QPX_HYBRID_CTL_JOIN_NACK]    = "JOIN_NACK",
    [QPX_HYBRID_CTL_DEMOTE_CANCEL] = "DEMOTE_CANCEL",
    [QPX_HYBRID_CTL_TRANSFER]     = "TRANSFER",
    [QPX_HYBRID_CTL_SWITCHED]     = "SWITCHED"
};


static size_t qpx_hybrid_ctl_pack(void *dest, void *arg)
{
    qpx_hybrid_ctl_pack_arg_t *pack = arg;
    qpx_hybrid_iface_t *iface       = pack->iface;
    qpx_hybrid_ctl_hdr_t *hdr       = dest;
    uint8_t *p                      = (uint8_t*)(hdr + 1);

    hdr->type           = pack->type;
    hdr->dev_addr_len   = iface->addr.dev_len;
    hdr->iface_addr_len = iface->addr.iface_len;
    hdr->ep_addr_len    = (pack->rc_ep != NULL) ? iface->addr.rc_ep_len : 0;
    hdr->src_id         = pack->src_id;
    hdr->dst_id         = pack->dst_id;
    hdr->serial         = pack->serial;
    hdr->aux            = pack->aux;
    memcpy(p, iface->addr.dev, iface->addr.dev_len);
    p += iface->addr.dev_len;
    memcpy(p, iface->addr.iface, iface->addr.iface_len);
    p += iface->addr.iface_len;
    if ((pack->rc_ep != NULL) &&
        (uct_ep_get_address(pack->rc_ep, (uct_ep_addr_t*)p) == UCS_OK)) {
        p += iface->addr.rc_ep_len;
    } else {
        hdr->ep_addr_len = 0;
    }
    return UCS_PTR_BYTE_DIFF(dest, p);
}


ucs_status_t qpx_hybrid_ctl_send(qpx_hybrid_iface_t *iface, uct_ep_h via,
                                 uint8_t type, uint32_t src_id,
                                 uint32_t dst_id, uint32_t serial,
                                 uint32_t aux, uct_ep_h rc_ep)
{
    qpx_hybrid_ctl_pack_arg_t arg = {iface, type, src_id, dst_id, serial,
                                     aux, rc_ep};
    ssize_t len;

    len = uct_ep_am_bcopy(via, QPX_HYBRID_AM_ID_CTL, qpx_hybrid_ctl_pack,
                          &arg, 0);
    if (len < 0) {
        if (len != UCS_ERR_NO_RESOURCE) {
            ucs_debug("qpx iface %p: %s to 0x%x failed: %s", iface,
                      qpx_hybrid_ctl_names[type], dst_id,
                      ucs_status_string((ucs_status_t)len));
        }
        return (ucs_status_t)len;
    }
    ucs_trace("qpx iface %p: %s 0x%x -> 0x%x sent", iface,
              qpx_hybrid_ctl_names[type], src_id, dst_id);
    return UCS_OK;
}


/* A cold-path endpoint to the peer interface at dev_addr/iface_addr, for
 * a control message of type (named if it cannot be had) */
ucs_status_t qpx_hybrid_ctl_ep_create(qpx_hybrid_iface_t *iface,
                                      const void *dev_addr,
                                      const void *iface_addr, uint8_t type,
                                      uct_ep_h *ep_p)
{
    uct_ep_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = iface->cold;
    params.dev_addr   = dev_addr;
    params.iface_addr = iface_addr;
    status = uct_ep_create(&params, ep_p);
    if (status != UCS_OK) {
        ucs_error("qpx iface %p: no %s endpoint for a %s: %s", iface,
                  iface->cold_tl, qpx_hybrid_ctl_names[type],
                  ucs_status_string(status));
    }
    return status;
}


void qpx_hybrid_ctl_post(qpx_hybrid_iface_t *iface, const void *dev_addr,
                         const void *iface_addr, uint8_t type,
                         uint32_t src_id, uint32_t dst_id, uint32_t serial)
{
    qpx_hybrid_ctl_out_t *out;
    ucs_status_t status;
    uct_ep_h ep;

    if (qpx_hybrid_ctl_ep_create(iface, dev_addr, iface_addr, type,
                                 &ep) != UCS_OK) {
        return;
    }

    status = qpx_hybrid_ctl_send(iface, ep, type, src_id, dst_id, serial, 0,
                                 NULL);
    if (status != UCS_ERR_NO_RESOURCE) {
        qpx_hybrid_retire(iface, ep, 0, 0);
        return;
    }

    out = malloc(sizeof(*out));
    if (out == NULL) {
        ucs_error("qpx iface %p: no memory to keep a %s to 0x%x", iface,
                  qpx_hybrid_ctl_names[type], dst_id);
        uct_ep_destroy(ep);
        return;
    }
    out->ep     = ep;
    out->type   = type;
    out->src_id = src_id;
    out->dst_id = dst_id;
    out->serial = serial;
    ucs_list_add_tail(&iface->ctl_out, &out->list);
}


unsigned qpx_hybrid_iface_ctl_out_progress(qpx_hybrid_iface_t *iface)
{
    qpx_hybrid_ctl_out_t *out, *tmp;
    unsigned count = 0;

    ucs_list_for_each_safe(out, tmp, &iface->ctl_out, list) {
        if (qpx_hybrid_ctl_send(iface, out->ep, out->type, out->src_id,
                                out->dst_id, out->serial, 0, NULL) ==
            UCS_ERR_NO_RESOURCE) {
            continue;
        }
        ucs_list_del(&out->list);
        qpx_hybrid_retire(iface, out->ep, 0, 0);
        free(out);
        ++count;
    }
    return count;
}


/* A control message, in an AM handler: kept for the next progress, in the
 * order it came (after every message of its path before it) */
ucs_status_t qpx_hybrid_ctl_handler(void *arg, void *data, size_t length,
                                    unsigned flags)
{
    qpx_hybrid_iface_t *iface       = arg;
    const qpx_hybrid_ctl_hdr_t *hdr = data;
    qpx_hybrid_ctl_msg_t *msg;
    ucs_log_level_t level;

    if ((length < sizeof(*hdr)) || (hdr->type == 0) ||
        (hdr->type >= QPX_HYBRID_CTL_LAST) ||
        (length < sizeof(*hdr) + hdr->dev_addr_len + hdr->iface_addr_len +
                  hdr->ep_addr_len) ||
        (hdr->dev_addr_len > QPX_HYBRID_ADDR_MAX) ||
        (hdr->iface_addr_len > QPX_HYBRID_ADDR_MAX)) {
        /* counted once: ucs_log reads its level more than once */
        level = qpx_log_sampled_level(&iface->stats.malformed,
                                      UCS_LOG_LEVEL_WARN);
        ucs_log(level, "qpx iface %p: malformed control message of %zu "
                "bytes dropped, %lu so far", iface, length,
                iface->stats.malformed);
        return UCS_OK;
    }

    msg = malloc(sizeof(*msg) + length);
    if (msg == NULL) {
        ucs_error("qpx iface %p: no memory for a %s: dropped", iface,
                  qpx_hybrid_ctl_names[hdr->type]);
        return UCS_OK;
    }
    msg->length = length;
    memcpy(&msg->hdr, data, length);
    ucs_list_add_tail(&iface->ctl_msgs, &msg->list);
    return UCS_OK;
}
