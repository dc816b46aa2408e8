/*
 * qpx_ud against bad input from the network: a raw UD QP of the test sends
 * crafted packets to a qpx_ud endpoint connected (CONNECT_TO_EP) to that
 * raw QP. Exactly one well-formed AM may be delivered; the rest is dropped
 * and counted (checked by ud-garbage.sh from UCX_QPX_UD_PRINT_STATS).
 */
#include "ud_uct_test.h"

#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    uint32_t dest_id, src_id;
    uint16_t psn, ack_psn;
    uint8_t  type, flags, am_id, reserved;
} __attribute__((packed)) raw_hdr_t;

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd      *pd;
    struct ibv_cq      *cq;
    struct ibv_qp      *qp;
    struct ibv_mr      *mr;
    struct ibv_ah      *ah;
    uint8_t            buf[8192];
    uint32_t           dest_qpn;
} raw_qp_t;

static int raw_open(raw_qp_t *r, const char *dev_name, uint16_t dlid,
                    uint32_t dest_qpn)
{
    struct ibv_device **devs = ibv_get_device_list(NULL);
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    struct ibv_ah_attr ah;
    int i;

    memset(r, 0, sizeof(*r));
    for (i = 0; devs && devs[i]; ++i) {
        if (!strncmp(ibv_get_device_name(devs[i]), dev_name,
                     strcspn(dev_name, ":"))) {
            r->ctx = ibv_open_device(devs[i]);
        }
    }
    if (r->ctx == NULL) {
        return 0;
    }
    r->pd = ibv_alloc_pd(r->ctx);
    r->cq = ibv_create_cq(r->ctx, 64, NULL, NULL, 0);
    r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf), IBV_ACCESS_LOCAL_WRITE);
    memset(&init, 0, sizeof(init));
    init.send_cq = init.recv_cq = r->cq;
    init.qp_type = IBV_QPT_UD;
    init.cap.max_send_wr = init.cap.max_recv_wr = 32;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    r->qp = ibv_create_qp(r->pd, &init);
    if (!r->pd || !r->cq || !r->mr || !r->qp) {
        return 0;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT; attr.port_num = 1; attr.qkey = 0x1ee7a331;
    if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_QKEY)) {
        return 0;
    }
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE)) {
        return 0;
    }
    attr.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(r->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        return 0;
    }
    memset(&ah, 0, sizeof(ah));
    ah.dlid = dlid; ah.port_num = 1;
    r->ah = ibv_create_ah(r->pd, &ah);
    r->dest_qpn = dest_qpn;
    ibv_free_device_list(devs);
    return r->ah != NULL;
}

/* Receive one packet at buf+4096 (GRH first); returns its length after it */
static int raw_recv(raw_qp_t *r, double timeout)
{
    struct ibv_sge sge = {(uintptr_t)(r->buf + 4096), 4096, r->mr->lkey};
    struct ibv_recv_wr wr = {0}, *bad;
    struct ibv_wc wc;
    double deadline = now_sec() + timeout;

    wr.sg_list = &sge; wr.num_sge = 1; wr.wr_id = 1;
    ibv_post_recv(r->qp, &wr, &bad);
    while (now_sec() < deadline) {
        uct_worker_progress(worker);
        if ((ibv_poll_cq(r->cq, 1, &wc) == 1) && (wc.wr_id == 1)) {
            return wc.byte_len - 40;
        }
    }
    return -1;
}

static void raw_send(raw_qp_t *r, const void *data, size_t len, uint32_t qkey)
{
    struct ibv_sge sge = {(uintptr_t)r->buf, (uint32_t)len, r->mr->lkey};
    struct ibv_send_wr wr = {0}, *bad;
    struct ibv_wc wc;
    int i;

    memcpy(r->buf, data, len);
    wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED; wr.wr_id = 2;
    wr.wr.ud.ah = r->ah; wr.wr.ud.remote_qpn = r->dest_qpn;
    wr.wr.ud.remote_qkey = qkey;
    double deadline;

    ibv_post_send(r->qp, &wr, &bad);
    /* Until the device has sent it (r->buf is written again by the next
     * call): soon on the verbs path, after the engine thread's turn on an
     * mlx5 device (SOFTVERBS_MLX5=1), whose queues it follows */
    deadline = now_sec() + 5.0;
    while (ibv_poll_cq(r->cq, 1, &wc) != 1) {
        uct_worker_progress(worker);
        if (now_sec() > deadline) {
            printf("raw send: no completion in 5 s\n");
            break;
        }
    }
    for (i = 0; i < 1000; ++i) {
        uct_worker_progress(worker);
    }
}

/* Progress for sec seconds: what the device has delivered is handled */
static void raw_drain(double sec)
{
    double end = now_sec() + sec;

    while (now_sec() < end) {
        uct_worker_progress(worker);
    }
}

int test_garbage(const test_resource_t *res)
{
    struct { raw_hdr_t h; uint64_t data; } pkt;
    struct { uint8_t qpn[3]; uint32_t ep_id; } __attribute__((packed)) epa, fake;
    test_iface_t b;
    uct_ep_h ep;
    uct_ep_params_t params;
    raw_qp_t r;
    raw_hdr_t conn;
    uint16_t lid;
    uint32_t qpn, my_id = 77;
    int len, ok;

    if (!iface_open(res, &b)) {
        return 1;
    }
    uct_iface_set_am_handler(b.iface, AM_ID + 1, count_handler, &b, 0);
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = b.iface;
    if (uct_ep_create(&params, &ep) != UCS_OK) {
        return 1;
    }
    uct_ep_get_address(ep, (uct_ep_addr_t*)&epa);
    memcpy(&lid, b.dev_addr + 1, 2);
    qpn = epa.qpn[0] | (epa.qpn[1] << 8) | (epa.qpn[2] << 16);
    if (!raw_open(&r, res->dev_name, lid, qpn)) {
        fprintf(stderr, "raw UD QP setup failed\n");
        return 1;
    }

    /* Connect the ep to the raw QP: it sends its CONN packet there */
    fake.qpn[0] = r.qp->qp_num; fake.qpn[1] = r.qp->qp_num >> 8;
    fake.qpn[2] = r.qp->qp_num >> 16; fake.ep_id = my_id;
    if (uct_ep_connect_to_ep(ep, (uct_device_addr_t*)b.dev_addr,
                             (uct_ep_addr_t*)&fake) != UCS_OK) {
        return 1;
    }
    len = raw_recv(&r, 5);
    memcpy(&conn, r.buf + 4096 + 40, sizeof(conn)); /* after the GRH */
    printf("garbage: CONN from ep: %d bytes, type %u dest %u src 0x%x\n",
           len, conn.type, conn.dest_id, conn.src_id);
    if ((len < (int)sizeof(conn)) || (conn.dest_id != my_id)) {
        return 1;
    }

    memset(&pkt, 0, sizeof(pkt));
    pkt.h.dest_id = conn.src_id;
    pkt.h.src_id  = my_id;
    pkt.h.am_id   = AM_ID + 1;

    raw_send(&r, &pkt, 7, 0x1ee7a331);                 /* short */
    pkt.h.type = 1; pkt.h.psn = 1000;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* AM before CONN */
    pkt.h.type = 99;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* bad type */
    pkt.h.type = 1; pkt.h.dest_id = conn.src_id ^ (1u << 20);
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* stale generation */
    pkt.h.dest_id = 0xabcde;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* unknown ep */
    pkt.h.dest_id = conn.src_id; pkt.h.src_id = my_id + 1;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* wrong source */
    pkt.h.src_id = my_id; pkt.h.type = 2; pkt.h.psn = 999;
    raw_send(&r, &pkt, sizeof(pkt.h), 0x1ee7a331);     /* our CONN */
    pkt.h.type = 1; pkt.h.psn = 1000;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* the one good AM */
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* duplicate */
    pkt.h.psn = 1005;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* gap */
    pkt.h.psn = 1000 + 30000;
    raw_send(&r, &pkt, sizeof(pkt), 0x1ee7a331);       /* out of any window */
    pkt.h.psn = 1001;
    raw_send(&r, &pkt, sizeof(pkt.h) - 1, 0x1ee7a331); /* truncated */
    raw_send(&r, &pkt, sizeof(pkt), 0x12345678);       /* wrong qkey */

    /* Spoofing: a CONN that claims another interface than the QP it comes
     * from; an AM for the connected ep from a QP that is not its peer */
    {
        struct {
            raw_hdr_t h;
            uint32_t  conn_sn;
            uint8_t   qpn[3];
            uint8_t   dev_flags;
            uint16_t  lid;
            uint8_t   gid[16];
        } __attribute__((packed)) creq;
        uint32_t claim = r.qp->qp_num ^ 0x5;
        raw_qp_t r2;
        int n;

        memset(&creq, 0, sizeof(creq));
        creq.h.dest_id = 0xffffffffu; /* a request */
        creq.h.src_id  = 500;
        creq.h.type    = 2;
        creq.h.psn     = 7;
        creq.conn_sn   = 1;
        creq.qpn[0] = claim; creq.qpn[1] = claim >> 8; creq.qpn[2] = claim >> 16;
        creq.lid       = lid;
        raw_send(&r, &creq, sizeof(creq), 0x1ee7a331);  /* forged source */

        if (!raw_open(&r2, res->dev_name, lid, qpn)) {
            return 1;
        }
        pkt.h.dest_id = conn.src_id; pkt.h.src_id = my_id;
        pkt.h.type = 1; pkt.h.psn = 1001;
        raw_send(&r2, &pkt, sizeof(pkt), 0x1ee7a331);   /* not the peer */

        /* A flood of real requests from one QP: at most 32 half-open
         * endpoints, the other 68 refused */
        claim = r.qp->qp_num;
        creq.qpn[0] = claim; creq.qpn[1] = claim >> 8; creq.qpn[2] = claim >> 16;
        for (n = 0; n < 100; ++n) {
            creq.conn_sn  = 1000 + n;
            creq.h.src_id = 1000 + n;
            raw_send(&r, &creq, sizeof(creq), 0x1ee7a331);
        }

        /* The same flood from a second QP, each request with the ACK flag
         * set: an ack that covers nothing the victim sent opens nothing,
         * so again at most 32 half-open endpoints, 68 refused */
        claim = r2.qp->qp_num;
        creq.qpn[0] = claim; creq.qpn[1] = claim >> 8; creq.qpn[2] = claim >> 16;
        creq.h.flags   = 1; /* QPX_UD_PKT_FLAG_ACK */
        creq.h.ack_psn = 0x1234;
        for (n = 0; n < 100; ++n) {
            creq.conn_sn  = 2000 + n;
            creq.h.src_id = 2000 + n;
            raw_send(&r2, &creq, sizeof(creq), 0x1ee7a331);
        }
    }

    raw_drain(0.2);
    printf("garbage: AMs delivered %lu (expected 1)\n",
           (unsigned long)b.rx_count);
    ok = (b.rx_count == 1);
    uct_ep_destroy(ep);
    uct_iface_close(b.iface);
    return ok ? 0 : 1;
}

