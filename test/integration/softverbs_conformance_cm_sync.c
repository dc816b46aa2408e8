/*
 * softverbs conformance: librdmacm's synchronous endpoint API
 * (rdma_getaddrinfo + rdma_create_ep, rdma_get_request, rdma_connect and
 * rdma_accept without an event channel, the rdma_verbs.h helpers), as
 * rdmacm-utils' rdma_server/rdma_client and rdma_xserver/rdma_xclient use
 * it, with the data each message carries checked:
 *
 * - cm/sync_ep_event_private_data: a synchronous id keeps the event its
 *   call waited for in id->event (rdma_connect(3) and rdma_get_request(3);
 *   rdma-core's ucma_complete): the new id of rdma_get_request holds the
 *   CONNECT_REQUEST with the client's private data, the client's id after
 *   rdma_connect the ESTABLISHED event with the server's. Then SENDs of
 *   three sizes through rdma_post_send/rdma_get_recv_comp.
 * - cm/xrc_ep_srq: RDMA_PS_IB with the XRC QP types (rdma_xserver -c x):
 *   the listener's request gets an XRC_RECV QP, rdma_create_srq on it makes
 *   an XRC SRQ in the CM's XRC domain with its completions on the id's
 *   receive CQ; the SRQ number goes to the client in the accept's private
 *   data and the client's XRC_SEND QP sends to it. The receive CQ outlives
 *   the QP while the SRQ stands (its completions need it) and goes with it.
 *
 * and what rdma_destroy_id does to an id's events not yet got:
 *
 * - cm/destroy_id_drops_events: they leave the channel with the id, and a
 *   listener's connection requests not yet got with their new ids, whose
 *   clients are rejected (the kernel's ucma_cleanup_events). softverbs
 *   left them queued: rdma_get_cm_event handed out an event whose id was
 *   freed (UCX's gtest test_uct_sockaddr.destroy_client_before_accept
 *   crashed in qpx's connection manager, reading the id's context).
 */
#include "softverbs_conformance_cm.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVT_CMS_MSGS 3
#define SVT_CMS_SLOT 4096

static const size_t svt_cms_sizes[SVT_CMS_MSGS] = {1, 100, SVT_CMS_SLOT};

/* rdma_getaddrinfo for the server (passive, a free port) or the client
 * (127.0.0.1:port) */
static struct rdma_addrinfo *svt_cms_addrinfo(int passive, uint16_t port,
                                              enum rdma_port_space ps,
                                              enum ibv_qp_type type)
{
    struct rdma_addrinfo hints, *res = NULL;
    char service[16];
    int ret;

    memset(&hints, 0, sizeof(hints));
    hints.ai_flags      = passive ? RAI_PASSIVE : 0;
    hints.ai_port_space = ps;
    hints.ai_qp_type    = type;
    snprintf(service, sizeof(service), "%u", port);
    ret = rdma_getaddrinfo(passive ? NULL : "127.0.0.1", service, &hints,
                           &res);
    SVT_CHECK((ret == 0) && (res != NULL), "rdma_getaddrinfo: %d errno %d",
              ret, errno);
    return res;
}

/* The server's listening endpoint on a free port, told to rank 0 */
static struct rdma_cm_id *svt_cms_listen(svt_proc_t *p,
                                         enum rdma_port_space ps,
                                         enum ibv_qp_type type)
{
    struct rdma_addrinfo *res = svt_cms_addrinfo(1, 0, ps, type);
    struct ibv_qp_init_attr a;
    struct rdma_cm_id *listen;

    memset(&a, 0, sizeof(a));
    a.cap.max_send_wr  = a.cap.max_recv_wr  = SVT_CMS_MSGS;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    SVT_OK(rdma_create_ep(&listen, res, NULL, &a));
    rdma_freeaddrinfo(res);
    SVT_CHECK(listen->qp == NULL, "a passive endpoint has a QP");
    SVT_OK(rdma_listen(listen, 1));
    svt_xchg_u64(p, 0, ntohs(rdma_get_src_port(listen)));
    return listen;
}

/* The client's endpoint, its QP made, not connected yet */
static struct rdma_cm_id *svt_cms_client(svt_proc_t *p,
                                         enum rdma_port_space ps,
                                         enum ibv_qp_type type)
{
    uint16_t port = (uint16_t)svt_xchg_u64(p, 1, 0);
    struct rdma_addrinfo *res = svt_cms_addrinfo(0, port, ps, type);
    struct ibv_qp_init_attr a;
    struct rdma_cm_id *id;

    memset(&a, 0, sizeof(a));
    a.cap.max_send_wr  = a.cap.max_recv_wr  = SVT_CMS_MSGS;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.sq_sig_all       = 1;
    SVT_OK(rdma_create_ep(&id, res, NULL, &a));
    rdma_freeaddrinfo(res);
    SVT_CHECK((id->qp != NULL) && (id->qp->qp_type == type),
              "rdma_create_ep: QP %p of type %d, %d asked", (void *)id->qp,
              id->qp ? (int)id->qp->qp_type : -1, type);
    return id;
}

/* The event a synchronous id keeps: type and private data */
static void svt_cms_check_event(struct rdma_cm_id *id,
                                enum rdma_cm_event_type type,
                                const uint8_t *priv, uint8_t len,
                                const char *what)
{
    const struct rdma_cm_event *ev = id->event;

    SVT_CHECK(ev != NULL, "%s: id->event is NULL", what);
    SVT_CHECK((ev->event == type) && (ev->status == 0),
              "%s: id->event is %s status %d, %s expected", what,
              rdma_event_str(ev->event), ev->status, rdma_event_str(type));
    SVT_CHECK((ev->param.conn.private_data != NULL) &&
              (ev->param.conn.private_data_len >= len) &&
              (memcmp(ev->param.conn.private_data, priv, len) == 0),
              "%s: private data of %u bytes is not the peer's %u", what,
              ev->param.conn.private_data_len, len);
}

/* Rank 1 takes SVT_CMS_MSGS SENDs into the slots of buf (through the id's
 * SRQ if it has one: rdma_post_recv picks it), rank 0 sends them; each
 * payload and length checked. srqn: the XRC SRQ rank 0 sends to, or 0 */
static void svt_cms_sends(svt_proc_t *p, struct rdma_cm_id *id, uint8_t *buf,
                          struct ibv_mr *mr, uint32_t srqn)
{
    struct ibv_send_wr wr, *bad;
    struct ibv_sge sge;
    struct ibv_wc wc;
    uint64_t i;

    if (p->rank == 1) {
        for (i = 0; i < SVT_CMS_MSGS; ++i) {
            SVT_CHECK(rdma_get_recv_comp(id, &wc) == 1,
                      "rdma_get_recv_comp %llu: errno %d",
                      (unsigned long long)i, errno);
            SVT_CHECK((wc.status == IBV_WC_SUCCESS) &&
                      (wc.opcode == IBV_WC_RECV) && (wc.wr_id == i) &&
                      (wc.byte_len == svt_cms_sizes[i]),
                      "recv %llu: status %d opcode %d wr_id %llu byte_len %u",
                      (unsigned long long)i, wc.status, wc.opcode,
                      (unsigned long long)wc.wr_id, wc.byte_len);
            svt_pattern_check(buf + i * SVT_CMS_SLOT, svt_cms_sizes[i],
                              70 + i, "SEND payload");
        }
        return;
    }
    for (i = 0; i < SVT_CMS_MSGS; ++i) {
        svt_fill(buf + i * SVT_CMS_SLOT, svt_cms_sizes[i], 70 + i);
        memset(&wr, 0, sizeof(wr));
        sge.addr    = (uintptr_t)(buf + i * SVT_CMS_SLOT);
        sge.length  = svt_cms_sizes[i];
        sge.lkey    = mr->lkey;
        wr.wr_id    = i;
        wr.sg_list  = &sge;
        wr.num_sge  = 1;
        wr.opcode   = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.qp_type.xrc.remote_srqn = srqn;
        SVT_OK(ibv_post_send(id->qp, &wr, &bad));
        SVT_CHECK(rdma_get_send_comp(id, &wc) == 1,
                  "rdma_get_send_comp %llu: errno %d",
                  (unsigned long long)i, errno);
        SVT_CHECK((wc.status == IBV_WC_SUCCESS) && (wc.wr_id == i),
                  "send %llu: status %d wr_id %llu", (unsigned long long)i,
                  wc.status, (unsigned long long)wc.wr_id);
    }
}

static void svt_cms_post_recvs(struct rdma_cm_id *id, uint8_t *buf,
                               struct ibv_mr *mr)
{
    uint64_t i;

    for (i = 0; i < SVT_CMS_MSGS; ++i) {
        SVT_OK(rdma_post_recv(id, (void *)(uintptr_t)i,
                              buf + i * SVT_CMS_SLOT, SVT_CMS_SLOT, mr));
    }
}

static void svt_case_cm_sync_event(svt_proc_t *p)
{
    static const uint8_t req_priv[8] = {'R', 'E', 'Q', 1, 2, 3, 4, 5};
    static const uint8_t rep_priv[8] = {'R', 'E', 'P', 9, 8, 7, 6, 5};
    uint8_t *buf = calloc(SVT_CMS_MSGS, SVT_CMS_SLOT);
    struct rdma_conn_param param;
    struct rdma_cm_id *listen = NULL, *id;
    struct ibv_mr *mr;

    SVT_CHECK(buf != NULL, "calloc");
    memset(&param, 0, sizeof(param));
    if (p->rank == 1) {
        listen = svt_cms_listen(p, RDMA_PS_TCP, IBV_QPT_RC);
        SVT_OK(rdma_get_request(listen, &id));
        SVT_CHECK((id->qp != NULL) && (id->qp->qp_type == IBV_QPT_RC),
                  "rdma_get_request: no RC QP made from the listener's "
                  "attributes");
        svt_cms_check_event(id, RDMA_CM_EVENT_CONNECT_REQUEST, req_priv,
                            sizeof(req_priv), "after rdma_get_request");
        SVT_NN(mr, rdma_reg_msgs(id, buf, SVT_CMS_MSGS * SVT_CMS_SLOT));
        svt_cms_post_recvs(id, buf, mr);
        param.private_data     = rep_priv;
        param.private_data_len = sizeof(rep_priv);
        SVT_OK(rdma_accept(id, &param));
    } else {
        id = svt_cms_client(p, RDMA_PS_TCP, IBV_QPT_RC);
        SVT_NN(mr, rdma_reg_msgs(id, buf, SVT_CMS_MSGS * SVT_CMS_SLOT));
        param.private_data     = req_priv;
        param.private_data_len = sizeof(req_priv);
        SVT_OK(rdma_connect(id, &param));
        svt_cms_check_event(id, RDMA_CM_EVENT_ESTABLISHED, rep_priv,
                            sizeof(rep_priv), "after rdma_connect");
    }
    svt_cms_sends(p, id, buf, mr, 0);
    svt_sync(p, !p->rank);
    rdma_disconnect(id);
    SVT_OK(rdma_dereg_mr(mr));
    rdma_destroy_ep(id);
    if (listen != NULL) {
        rdma_destroy_ep(listen);
    }
    free(buf);
}

static void svt_case_cm_xrc_ep(svt_proc_t *p)
{
    uint8_t *buf = calloc(SVT_CMS_MSGS, SVT_CMS_SLOT);
    struct ibv_srq_init_attr sa;
    struct rdma_conn_param param;
    struct rdma_cm_id *listen = NULL, *id;
    uint32_t srqn = 0, srqn_be;
    struct ibv_mr *mr;

    SVT_CHECK(buf != NULL, "calloc");
    memset(&param, 0, sizeof(param));
    if (p->rank == 1) {
        listen = svt_cms_listen(p, RDMA_PS_IB, IBV_QPT_XRC_RECV);
        SVT_OK(rdma_get_request(listen, &id));
        SVT_CHECK((id->qp != NULL) && (id->qp->qp_type == IBV_QPT_XRC_RECV),
                  "rdma_get_request: QP %p type %d, XRC_RECV expected",
                  (void *)id->qp, id->qp ? (int)id->qp->qp_type : -1);
        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr  = SVT_CMS_MSGS;
        sa.attr.max_sge = 1;
        SVT_OK(rdma_create_srq(id, NULL, &sa));
        SVT_CHECK((id->srq != NULL) && (id->recv_cq != NULL),
                  "rdma_create_srq: srq %p recv_cq %p", (void *)id->srq,
                  (void *)id->recv_cq);
        /* an XRC SRQ has a number (a basic SRQ's is EINVAL) */
        SVT_OK(ibv_get_srq_num(id->srq, &srqn));
        SVT_NN(mr, rdma_reg_msgs(id, buf, SVT_CMS_MSGS * SVT_CMS_SLOT));
        svt_cms_post_recvs(id, buf, mr);
        srqn_be                = htonl(srqn);
        param.private_data     = &srqn_be;
        param.private_data_len = sizeof(srqn_be);
        SVT_OK(rdma_accept(id, &param));
    } else {
        id = svt_cms_client(p, RDMA_PS_IB, IBV_QPT_XRC_SEND);
        SVT_NN(mr, rdma_reg_msgs(id, buf, SVT_CMS_MSGS * SVT_CMS_SLOT));
        SVT_OK(rdma_connect(id, NULL));
        SVT_CHECK((id->event != NULL) &&
                  (id->event->param.conn.private_data != NULL),
                  "rdma_connect: no event with the accept's private data");
        memcpy(&srqn_be, id->event->param.conn.private_data, sizeof(srqn_be));
        srqn = ntohl(srqn_be);
    }
    svt_cms_sends(p, id, buf, mr, srqn);
    svt_sync(p, !p->rank);
    rdma_disconnect(id);
    SVT_OK(rdma_dereg_mr(mr));
    if (p->rank == 1) {
        /* the SRQ's receive CQ stays with it after the QP goes */
        rdma_destroy_qp(id);
        SVT_CHECK(id->recv_cq != NULL,
                  "rdma_destroy_qp took the receive CQ of the XRC SRQ");
        rdma_destroy_srq(id);
        SVT_CHECK(id->recv_cq == NULL,
                  "rdma_destroy_srq left the CM's receive CQ");
    }
    rdma_destroy_ep(id);
    if (listen != NULL) {
        rdma_destroy_ep(listen);
    }
    free(buf);
}

static void svt_case_cm_destroy_drops(svt_proc_t *p)
{
    struct rdma_event_channel *ch = svt_cm_channel(), *cch = svt_cm_channel();
    struct rdma_cm_id *id, *listen, *client;
    struct rdma_conn_param cp;
    struct sockaddr_in dst;

    (void)p;
    /* an id's ADDR_RESOLVED, queued and not got */
    SVT_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
    svt_cm_loopback(&dst, 7483);
    SVT_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
    SVT_CHECK(svt_wait_fd(ch->fd, 2000) > 0, "no ADDR_RESOLVED in 2 s");
    SVT_OK(rdma_destroy_id(id));
    svt_cm_expect_none(ch, 200);

    /* a listener's CONNECT_REQUEST, queued and not got */
    listen = svt_cm_bound_id(ch, RDMA_PS_TCP, 7484);
    SVT_OK(rdma_listen(listen, 4));
    client = svt_cm_resolved_id(cch, RDMA_PS_TCP, 7484);
    memset(&cp, 0, sizeof(cp)); /* no QP: a param (ucma_valid_param) */
    SVT_OK(rdma_connect(client, &cp));
    SVT_CHECK(svt_wait_fd(ch->fd, 2000) > 0, "no CONNECT_REQUEST in 2 s");
    SVT_OK(rdma_destroy_id(listen));
    svt_cm_expect_none(ch, 200);
    /* the request's new id went with it: the client is told */
    svt_cm_expect(cch, RDMA_CM_EVENT_REJECTED, SVT_CM_REJ_CONSUMER, NULL);
    SVT_OK(rdma_destroy_id(client));
    rdma_destroy_event_channel(cch);
    rdma_destroy_event_channel(ch);
}

const svt_case_t svt_cases_cm_sync[] = {
    {"cm/sync_ep_event_private_data", svt_case_cm_sync_event, 2},
    {"cm/xrc_ep_srq", svt_case_cm_xrc_ep, 2},
    {"cm/destroy_id_drops_events", svt_case_cm_destroy_drops, 1},
    {NULL}
};
