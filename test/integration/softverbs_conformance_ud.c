/*
 * softverbs conformance: UD (GRH, qkey, multicast, AH from WC) and shared
 * receive queues (several QPs on one SRQ, the SRQ limit event).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#define SVT_MLID 0xc123
static const union ibv_gid svt_mgid = {
    .raw = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53, 0x56, 0x54, 0x01}
};

static void svt_ud_send(svt_ep_t *ep, struct ibv_ah *ah, uint32_t qpn,
                        uint32_t qkey, size_t off, size_t len, int with_imm,
                        uint64_t wr_id)
{
    struct ibv_sge sge = {(uintptr_t)ep->buf + off, (uint32_t)len, ep->mr->lkey};
    struct ibv_send_wr wr, *bad;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id             = wr_id;
    wr.sg_list           = &sge;
    wr.num_sge           = len ? 1 : 0;
    wr.opcode            = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr.imm_data          = htonl(0xa0a0a0a0u + (uint32_t)wr_id);
    wr.send_flags        = IBV_SEND_SIGNALED;
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = qpn;
    wr.wr.ud.remote_qkey = qkey;
    SVT_OK(ibv_post_send(ep->qp, &wr, &bad));
    svt_expect_wc(ep->cq, IBV_WC_SUCCESS, IBV_WC_SEND, wr_id, NULL);
}

static size_t svt_mtu_bytes(enum ibv_mtu mtu)
{
    return 128u << mtu;
}

/* A UD receive: 40 bytes of GRH space first, byte_len includes it, src_qp
 * is the sender's QPN; sizes 0, 100 and the path MTU; with immediate */
static void svt_case_ud_grh(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    size_t sizes[3], i, slot = 8192;
    uint32_t peer_qpn;

    svt_dev_open(&dev);
    sizes[0] = 0;
    sizes[1] = 100;
    sizes[2] = svt_mtu_bytes(dev.port.active_mtu);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    o.buf_size = 3 * slot;
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    peer_qpn = ep.remote.qpn;
    if (p->rank == 1) {
        memset(ep.buf, 0xcc, ep.size);
        for (i = 0; i < 3; ++i) {
            svt_post_recv(&ep, i * slot, SVT_GRH_LEN + sizes[i], i);
        }
        svt_sync(p, 0);
        for (i = 0; i < 3; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, i, &wc);
            SVT_CHECK(wc.byte_len == SVT_GRH_LEN + sizes[i], "size %zu: "
                      "byte_len %u, expected %zu (40-byte GRH + payload)",
                      sizes[i], wc.byte_len, SVT_GRH_LEN + sizes[i]);
            SVT_CHECK(wc.src_qp == peer_qpn, "src_qp 0x%x, expected 0x%x",
                      wc.src_qp, peer_qpn);
            SVT_CHECK(wc.qp_num == ep.qp->qp_num, "qp_num 0x%x", wc.qp_num);
            SVT_CHECK((dev.port.link_layer != IBV_LINK_LAYER_INFINIBAND) ||
                      (wc.slid == ep.remote.lid), "slid 0x%x, expected 0x%x",
                      wc.slid, ep.remote.lid);
            SVT_CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == (i == 1),
                      "size %zu: wc_flags 0x%x", sizes[i], wc.wc_flags);
            if (i == 1) {
                SVT_CHECK(ntohl(wc.imm_data) == 0xa0a0a0a1u, "imm 0x%x",
                          ntohl(wc.imm_data));
            }
            svt_pattern_check(ep.buf + i * slot + SVT_GRH_LEN, sizes[i],
                              (uint32_t)i, "UD payload after the GRH");
        }
    } else {
        for (i = 0; i < 3; ++i) {
            svt_fill(ep.buf + i * slot, sizes[i], (uint32_t)i);
        }
        svt_sync(p, 1);
        for (i = 0; i < 3; ++i) {
            svt_ud_send(&ep, ep.ah, peer_qpn, SVT_QKEY, i * slot, sizes[i],
                        i == 1, i);
        }
    }
    svt_sync(p, !p->rank);
}

/* A datagram with the wrong qkey is dropped silently */
static void svt_case_ud_qkey(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        svt_post_recv(&ep, 0, 256, 1);
        svt_sync(p, 0);
        svt_expect_no_wc(ep.cq, 200);
        svt_sync(p, 0);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
        SVT_CHECK(wc.byte_len == SVT_GRH_LEN + 16, "byte_len %u", wc.byte_len);
        svt_pattern_check(ep.buf + SVT_GRH_LEN, 16, 3, "payload");
    } else {
        svt_fill(ep.buf, 16, 4);
        svt_fill(ep.buf + 64, 16, 3);
        svt_sync(p, 1);
        svt_ud_send(&ep, ep.ah, ep.remote.qpn, SVT_QKEY + 1, 0, 16, 0, 1);
        svt_sync(p, 1);
        svt_ud_send(&ep, ep.ah, ep.remote.qpn, SVT_QKEY, 64, 16, 0, 2);
    }
    svt_sync(p, !p->rank);
}

/* Multicast: ranks 1 and 2 attach, rank 0 sends to the group; after rank 2
 * detaches only rank 1 receives */
static void svt_case_ud_mcast(svt_proc_t *p)
{
    struct ibv_ah_attr aha;
    struct ibv_ah *ah;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    svt_addr_t group;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_create(&dev, &o, &ep);
    memset(&group, 0, sizeof(group));
    group.lid = SVT_MLID;
    memcpy(group.gid, svt_mgid.raw, 16);
    svt_qp_to_init(ep.qp, &dev, 0);
    svt_qp_to_rtr(ep.qp, &dev, &group, &o);
    svt_qp_to_rts(ep.qp, &o);
    if (p->rank == 0) {
        svt_ah_attr_init(&dev, &group, &aha);
        aha.is_global = 1;
        aha.grh.dgid  = svt_mgid;
        aha.grh.hop_limit = 1;
        SVT_NN(ah, ibv_create_ah(dev.pd, &aha));
        svt_fill(ep.buf, 32, 11);
        svt_fill(ep.buf + 64, 32, 12);
        svt_barrier(p); /* members attached */
        svt_ud_send(&ep, ah, 0xffffff, SVT_QKEY, 0, 32, 0, 1);
        svt_barrier(p); /* members received; rank 2 detached */
        svt_ud_send(&ep, ah, 0xffffff, SVT_QKEY, 64, 32, 0, 2);
        svt_barrier(p);
        SVT_OK(ibv_destroy_ah(ah));
    } else {
        SVT_OK(ibv_attach_mcast(ep.qp, &svt_mgid, SVT_MLID));
        svt_post_recv(&ep, 0, SVT_GRH_LEN + 64, 1);
        svt_post_recv(&ep, 1024, SVT_GRH_LEN + 64, 2);
        svt_barrier(p);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
        SVT_CHECK(wc.byte_len == SVT_GRH_LEN + 32, "byte_len %u", wc.byte_len);
        svt_pattern_check(ep.buf + SVT_GRH_LEN, 32, 11, "first group message");
        if (p->rank == 2) {
            SVT_OK(ibv_detach_mcast(ep.qp, &svt_mgid, SVT_MLID));
        }
        svt_barrier(p);
        if (p->rank == 1) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 2, &wc);
            svt_pattern_check(ep.buf + 1024 + SVT_GRH_LEN, 32, 12,
                              "second group message");
            SVT_OK(ibv_detach_mcast(ep.qp, &svt_mgid, SVT_MLID));
        } else {
            svt_expect_no_wc(ep.cq, 200);
        }
        svt_barrier(p);
    }
    svt_ep_destroy(&ep);
}

/* The receiver answers with an AH built by ibv_create_ah_from_wc */
static void svt_case_ud_ah_from_wc(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    struct ibv_ah *ah;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    svt_post_recv(&ep, 0, SVT_GRH_LEN + 64, 1);
    svt_sync(p, !p->rank);
    if (p->rank == 1) {
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
        SVT_NN(ah, ibv_create_ah_from_wc(dev.pd, &wc,
                                         (struct ibv_grh *)ep.buf,
                                         dev.port_num));
        svt_fill(ep.buf + 1024, 48, 21);
        svt_ud_send(&ep, ah, wc.src_qp, SVT_QKEY, 1024, 48, 0, 2);
        SVT_OK(ibv_destroy_ah(ah));
    } else {
        svt_fill(ep.buf + 1024, 8, 20);
        svt_ud_send(&ep, ep.ah, ep.remote.qpn, SVT_QKEY, 1024, 8, 0, 2);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
        SVT_CHECK(wc.byte_len == SVT_GRH_LEN + 48, "reply byte_len %u",
                  wc.byte_len);
        svt_pattern_check(ep.buf + SVT_GRH_LEN, 48, 21, "reply payload");
    }
    svt_sync(p, !p->rank);
}

/* Several RC QPs on one SRQ (and one CQ) at the target */
#define SVT_SRQ_QPS 3
#define SVT_SRQ_MSG 2

static void svt_case_srq_shared(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 64, .max_sge = 1}};
    svt_dev_t dev;
    svt_ep_t ep[SVT_SRQ_QPS];
    svt_ep_opts_t o;
    struct ibv_wc wc;
    int q, m, i, seen[SVT_SRQ_QPS] = {0};
    uint32_t msg[2];

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 1) {
        SVT_NN(o.srq, ibv_create_srq(dev.pd, &sa));
        SVT_NN(o.cq, ibv_create_cq(dev.ctx, 64, NULL, NULL, 0));
    }
    for (q = 0; q < SVT_SRQ_QPS; ++q) {
        svt_ep_pair(p, !p->rank, &dev, &o, &ep[q]);
    }
    if (p->rank == 1) {
        for (i = 0; i < SVT_SRQ_QPS * SVT_SRQ_MSG; ++i) {
            svt_post_recv(&ep[0], i * 64, 64, i);
        }
        svt_sync(p, 0);
        for (i = 0; i < SVT_SRQ_QPS * SVT_SRQ_MSG; ++i) {
            svt_wait_wc(o.cq, &wc, SVT_WC_TIMEOUT_MS);
            SVT_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
                      "status %s opcode %d", ibv_wc_status_str(wc.status),
                      wc.opcode);
            memcpy(msg, ep[0].buf + wc.wr_id * 64, sizeof(msg));
            SVT_CHECK(msg[0] < SVT_SRQ_QPS, "message names QP %u", msg[0]);
            SVT_CHECK(wc.qp_num == ep[msg[0]].qp->qp_num, "message sent on "
                      "QP %u completed with qp_num 0x%x, expected 0x%x",
                      msg[0], wc.qp_num, ep[msg[0]].qp->qp_num);
            SVT_CHECK(msg[1] == (uint32_t)seen[msg[0]], "QP %u: message %u "
                      "arrived as number %d", msg[0], msg[1], seen[msg[0]]);
            ++seen[msg[0]];
        }
    } else {
        svt_sync(p, 1);
        for (m = 0; m < SVT_SRQ_MSG; ++m) {
            for (q = 0; q < SVT_SRQ_QPS; ++q) {
                msg[0] = q;
                msg[1] = m;
                memcpy(ep[q].buf, msg, sizeof(msg));
                SVT_OK(svt_post_send(&ep[q], IBV_WR_SEND, 0, sizeof(msg), 0, 0,
                                     0, IBV_SEND_SIGNALED, m));
                svt_expect_wc(ep[q].cq, IBV_WC_SUCCESS, IBV_WC_SEND, m, NULL);
            }
        }
    }
    svt_sync(p, !p->rank);
}

/* srq_limit armed at 5 with 10 receives posted: no event while 6 remain,
 * SRQ_LIMIT_REACHED when 4 remain, and the limit is disarmed (0) after */
static void svt_case_srq_limit(svt_proc_t *p)
{
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_srq_attr attr;
    struct ibv_async_event ev;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    if (p->rank == 1) {
        SVT_NN(o.srq, ibv_create_srq(dev.pd, &sa));
    }
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        for (i = 0; i < 10; ++i) {
            svt_post_recv(&ep, i * 64, 64, i);
        }
        attr.srq_limit = 5;
        SVT_OK(ibv_modify_srq(o.srq, &attr, IBV_SRQ_LIMIT));
        SVT_OK(ibv_query_srq(o.srq, &attr));
        SVT_CHECK(attr.srq_limit == 5, "srq_limit %u after arming",
                  attr.srq_limit);
        svt_sync(p, 0);
        svt_sync(p, 0); /* 4 sent */
        for (i = 0; i < 4; ++i) {
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, i, &wc);
        }
        SVT_CHECK(!svt_wait_fd(dev.ctx->async_fd, 50), "async event with 6 "
                  "receives left above srq_limit 5");
        svt_sync(p, 0);
        svt_sync(p, 0); /* 2 more sent */
        svt_wait_async(dev.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 3000, &ev);
        SVT_CHECK(ev.element.srq == o.srq, "event names srq %p, expected %p",
                  (void *)ev.element.srq, (void *)o.srq);
        SVT_OK(ibv_query_srq(o.srq, &attr));
        SVT_CHECK(attr.srq_limit == 0, "srq_limit %u after the event, "
                  "expected 0 (disarmed)", attr.srq_limit);
    } else {
        svt_sync(p, 1);
        for (i = 0; i < 6; ++i) {
            if (i == 4) {
                svt_sync(p, 1);
                svt_sync(p, 1);
            }
            SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 8, 0, 0, 0,
                                 IBV_SEND_SIGNALED, i));
            svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_SEND, i, NULL);
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/* SOFTVERBS_UD_DROP=1: every datagram is lost (the sender still completes) */
static void svt_case_ud_drop_all(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    int i;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        svt_post_recv(&ep, 0, 256, 1);
        svt_sync(p, 0);
        svt_sync(p, 0);
        svt_expect_no_wc(ep.cq, 200);
    } else {
        svt_sync(p, 1);
        for (i = 0; i < 10; ++i) {
            svt_ud_send(&ep, ep.ah, ep.remote.qpn, SVT_QKEY, 0, 16, 0, i);
        }
        svt_sync(p, 1);
    }
    svt_sync(p, !p->rank);
}

/* Bind the device's endpoints to another port: its LID and GID */
static void svt_dev_use_port(svt_dev_t *dev, uint8_t port)
{
    dev->port_num = port;
    SVT_OK(ibv_query_port(dev->ctx, port, &dev->port));
    SVT_OK(ibv_query_gid(dev->ctx, port, 0, &dev->gid));
}

/*
 * SOFTVERBS_NUM_PORTS=2: the device reports two ports with their own LID
 * and GID; rank 1's UD QP is bound to port 2 and is reached through port 2's
 * LID only (a datagram to port 1's LID is not delivered to it); the source
 * LID of a completion is the sender's port's.
 */
static void svt_case_ports_two(svt_proc_t *p)
{
    struct ibv_port_attr pa1, pa2, pa3;
    union ibv_gid g1, g2;
    struct ibv_ah_attr aa;
    struct ibv_ah *wrong;
    svt_dev_t dev;
    svt_ep_t ep;
    svt_ep_opts_t o;
    struct ibv_wc wc;

    svt_dev_open(&dev);
    SVT_CHECK(dev.attr.phys_port_cnt == 2, "phys_port_cnt %u",
              dev.attr.phys_port_cnt);
    SVT_OK(ibv_query_port(dev.ctx, 1, &pa1));
    SVT_OK(ibv_query_port(dev.ctx, 2, &pa2));
    SVT_CHECK(ibv_query_port(dev.ctx, 3, &pa3) != 0, "port 3 exists");
    SVT_CHECK((pa1.lid != pa2.lid) && (pa2.state == IBV_PORT_ACTIVE),
              "port LIDs %u %u, port 2 state %d", pa1.lid, pa2.lid, pa2.state);
    SVT_OK(ibv_query_gid(dev.ctx, 1, 0, &g1));
    SVT_OK(ibv_query_gid(dev.ctx, 2, 0, &g2));
    SVT_CHECK(memcmp(&g1, &g2, sizeof(g1)), "ports 1 and 2 share a GID");

    if (p->rank == 1) {
        svt_dev_use_port(&dev, 2);
    }
    svt_ep_opts_init(&o, IBV_QPT_UD);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->rank == 1) {
        SVT_CHECK(ep.remote.lid == pa1.lid, "peer LID %u", ep.remote.lid);
        svt_post_recv(&ep, 0, 256, 1);
        svt_sync(p, 0);
        svt_expect_no_wc(ep.cq, 200); /* sent to port 1's LID: not ours */
        svt_sync(p, 0);
        svt_expect_wc(ep.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 1, &wc);
        SVT_CHECK(wc.slid == pa1.lid, "slid %u, sender's port LID %u",
                  wc.slid, pa1.lid);
        svt_pattern_check(ep.buf + SVT_GRH_LEN, 16, 5, "payload");
    } else {
        SVT_CHECK(ep.remote.lid == pa2.lid, "peer LID %u", ep.remote.lid);
        svt_fill(ep.buf, 16, 5);
        memset(&aa, 0, sizeof(aa));
        aa.dlid     = pa1.lid;
        aa.port_num = 1;
        SVT_NN(wrong, ibv_create_ah(dev.pd, &aa));
        svt_sync(p, 1);
        svt_ud_send(&ep, wrong, ep.remote.qpn, SVT_QKEY, 0, 16, 0, 1);
        svt_sync(p, 1);
        svt_ud_send(&ep, ep.ah, ep.remote.qpn, SVT_QKEY, 0, 16, 0, 2);
        SVT_OK(ibv_destroy_ah(wrong));
    }
    svt_sync(p, !p->rank);
}

const svt_case_t svt_cases_ud[] = {
    {"ports/two_ports_lid_routing", svt_case_ports_two, 2, 0, 0,
     "SOFTVERBS_NUM_PORTS=2"},
    {"ud/drop_knob", svt_case_ud_drop_all, 2, 0, 0, "SOFTVERBS_UD_DROP=1"},
    {"ud/grh_byte_len_src_qp", svt_case_ud_grh, 2},
    {"ud/qkey_mismatch_dropped", svt_case_ud_qkey, 2},
    {"ud/multicast", svt_case_ud_mcast, 3},
    {"ud/ah_from_wc_reply", svt_case_ud_ah_from_wc, 2},
    {"srq/shared_by_qps", svt_case_srq_shared, 2},
    {"srq/limit_event", svt_case_srq_limit, 2},
    {NULL}
};
