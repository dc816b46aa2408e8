/*
 * What the connection manager's endpoints and listener share, below both
 * and below the manager's event dispatch (qpx_cm.c): the header of the
 * private data and its checks, the log of malformed data a peer sent, an
 * id's device name and its peer's device address, the remote data handed
 * to the user, and the devices' CQs the connection QPs use.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_cm.h"

#include <uct/qpx/base/qpx_device.h>
#include <uct/qpx/base/qpx_log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


size_t qpx_cm_max_conn_priv(void)
{
    return QPX_CM_PRIV_DATA_LEN - sizeof(qpx_cm_priv_hdr_t);
}


/* length is within qpx_cm_max_conn_priv(), which the length bits hold */
void qpx_cm_priv_pack(qpx_cm_priv_hdr_t *hdr, unsigned kind, size_t length)
{
    hdr->kind_len = (kind << QPX_CM_PRIV_KIND_SHIFT) | length;
    hdr->check    = ucs_crc16(&hdr->kind_len, 1 + length);
}


int qpx_cm_priv_is_valid(const qpx_cm_priv_hdr_t *hdr, size_t len)
{
    return (hdr != NULL) && (len >= sizeof(*hdr)) &&
           (qpx_cm_priv_kind(hdr) == QPX_CM_PRIV_CONNECT) &&
           (qpx_cm_priv_length(hdr) <= len - sizeof(*hdr)) &&
           (hdr->check == ucs_crc16(&hdr->kind_len,
                                    1 + qpx_cm_priv_length(hdr)));
}


void qpx_cm_malformed_log(qpx_cm_t *cm, const char *what,
                          const char *peer_str, size_t len)
{
    ucs_log_level_t level = qpx_log_sampled_level(&cm->malformed,
                                                  cm->super.config.failure_level);

    ucs_log(level, "qpx cm: malformed connection %s from %s (%zu bytes of "
            "private data, not a whole qpx header and its data): rejected, "
            "%lu malformed so far", what, peer_str, len, cm->malformed);
}


void qpx_cm_id_dev_name(struct rdma_cm_id *id, char *dev_name)
{
    snprintf(dev_name, UCT_DEVICE_NAME_MAX, "%s:%u",
             ibv_get_device_name(id->verbs->device), id->port_num);
}


ucs_status_t qpx_cm_id_peer_dev_addr(qpx_cm_t *cm, struct rdma_cm_id *id,
                                     void *addr, size_t *addr_len_p)
{
    struct ibv_port_attr port_attr;
    struct ibv_qp_attr qp_attr;
    qpx_device_addr_t peer;
    int mask;

    /* The path rdma_cm resolved to the peer is the address vector a QP
     * would be given at RTR */
    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state = IBV_QPS_RTR;
    if (rdma_init_qp_attr(id, &qp_attr, &mask)) {
        ucs_log(cm->super.config.failure_level,
                "qpx cm: rdma_init_qp_attr(id %p, RTR) failed: %m", id);
        return UCS_ERR_CONNECTION_RESET;
    }

    if (ibv_query_port(id->verbs, id->port_num, &port_attr)) {
        ucs_error("qpx cm: ibv_query_port(%s:%u) failed: %m",
                  ibv_get_device_name(id->verbs->device), id->port_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&peer, 0, sizeof(peer));
    peer.lid = qp_attr.ah_attr.dlid;
    if (port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        peer.flags = QPX_DEVICE_ADDR_FLAG_GID | QPX_DEVICE_ADDR_FLAG_ETH;
        memcpy(peer.gid, qp_attr.ah_attr.grh.dgid.raw, sizeof(peer.gid));
    }

    *addr_len_p = qpx_device_addr_pack_addr(&peer, addr);
    return UCS_OK;
}


void qpx_cm_remote_data_set(uct_cm_remote_data_t *remote_data,
                            const void *dev_addr, size_t dev_addr_len,
                            const qpx_cm_priv_hdr_t *hdr)
{
    remote_data->field_mask            =
            UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR |
            UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH |
            UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA |
            UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH;
    remote_data->dev_addr              = (const uct_device_addr_t*)dev_addr;
    remote_data->dev_addr_length       = dev_addr_len;
    remote_data->conn_priv_data        = hdr + 1;
    remote_data->conn_priv_data_length = qpx_cm_priv_length(hdr);
}


ucs_status_t qpx_cm_dev_get(qpx_cm_t *cm, struct ibv_context *verbs,
                            qpx_cm_dev_t **dev_p)
{
    qpx_cm_dev_t *dev;

    ucs_list_for_each(dev, &cm->devs, list) {
        if (dev->verbs == verbs) {
            *dev_p = dev;
            return UCS_OK;
        }
    }

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        ucs_error("qpx cm: no memory for a device context");
        return UCS_ERR_NO_MEMORY;
    }

    /* Nothing is posted on the connection QPs: a CQ of the smallest size */
    dev->cq = ibv_create_cq(verbs, 1, NULL, NULL, 0);
    if (dev->cq == NULL) {
        ucs_error("qpx cm: ibv_create_cq(%s) failed: %m",
                  ibv_get_device_name(verbs->device));
        free(dev);
        return UCS_ERR_IO_ERROR;
    }

    dev->verbs = verbs;
    ucs_list_add_tail(&cm->devs, &dev->list);
    *dev_p = dev;
    return UCS_OK;
}


void qpx_cm_devs_release(qpx_cm_t *cm)
{
    qpx_cm_dev_t *dev, *tmp;

    ucs_list_for_each_safe(dev, tmp, &cm->devs, list) {
        if (dev->num_qps != 0) {
            ucs_warn("qpx cm: %u connection QPs of %s were not destroyed",
                     dev->num_qps, ibv_get_device_name(dev->verbs->device));
        }
        if (ibv_destroy_cq(dev->cq)) {
            ucs_warn("qpx cm: ibv_destroy_cq failed: %m");
        }
        ucs_list_del(&dev->list);
        free(dev);
    }
}
