/*
 * softverbs conformance: the extended verbs as real programs call them
 * (ibv_query_device_ex, ibv_create_qp_ex, ibv_create_srq_ex). Every
 * capability the device reports must be honoured, every other one must be
 * 0 with its flag clear and its verb refused. All cases run in one process.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

static int svt_all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < len; ++i) {
        if (b[i]) {
            return 0;
        }
    }
    return 1;
}

#define SVT_ZERO(_field) \
    SVT_CHECK(svt_all_zero(&ax._field, sizeof(ax._field)), \
              #_field " is not 0, but softverbs does not provide it")

/* ibv_query_device_ex: the same device as ibv_query_device, the port count
 * in phys_port_cnt_ex (arg: the SOFTVERBS_NUM_PORTS of the case), on-demand
 * paging, a clock and device memory (used by the feat/odp, feat/timestamps
 * and feat/dm cases), and every other optional capability absent, with the
 * verbs behind it refused */
static void svt_case_device_attr_ex(svt_proc_t *p)
{
    struct ibv_cq_init_attr_ex ca;
    struct ibv_device_attr_ex ax;
    struct ibv_xrcd_init_attr xa;
    struct ibv_xrcd *xrcd;
    struct ibv_cq_ex *cqx;
    svt_dev_t dev;

    svt_dev_open(&dev);
    memset(&ax, 0xa5, sizeof(ax)); /* every field must be written */
    SVT_OK(ibv_query_device_ex(dev.ctx, NULL, &ax));
    SVT_CHECK(!memcmp(&ax.orig_attr, &dev.attr, sizeof(dev.attr)),
              "orig_attr differs from ibv_query_device");
    SVT_CHECK(dev.attr.phys_port_cnt == p->arg, "phys_port_cnt %u, "
              "SOFTVERBS_NUM_PORTS=%ld", dev.attr.phys_port_cnt, p->arg);
    SVT_CHECK(ax.phys_port_cnt_ex == dev.attr.phys_port_cnt,
              "phys_port_cnt_ex %u, phys_port_cnt %u", ax.phys_port_cnt_ex,
              dev.attr.phys_port_cnt);
    SVT_CHECK(ax.device_cap_flags_ex == (uint64_t)dev.attr.device_cap_flags,
              "device_cap_flags_ex 0x%llx, device_cap_flags 0x%x",
              (unsigned long long)ax.device_cap_flags_ex,
              dev.attr.device_cap_flags);
    SVT_CHECK(!(dev.attr.device_cap_flags &
                (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
                 IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_RAW_MULTI |
                 IBV_DEVICE_UD_IP_CSUM | IBV_DEVICE_MANAGED_FLOW_STEERING)),
              "device_cap_flags 0x%x claims type 2A memory windows, "
              "memory management, raw or flow steering",
              dev.attr.device_cap_flags);
    /* XRC (the xrc/ cases use it), with ODP as the other transports */
    SVT_CHECK(dev.attr.device_cap_flags & IBV_DEVICE_XRC,
              "no IBV_DEVICE_XRC: 0x%x", dev.attr.device_cap_flags);
    SVT_CHECK((ax.xrc_odp_caps & (IBV_ODP_SUPPORT_SEND |
                                  IBV_ODP_SUPPORT_SRQ_RECV)) ==
              (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV),
              "xrc_odp_caps 0x%x", ax.xrc_odp_caps);
    /* memory windows, type 1 and 2B, as rxe (the mw/ cases use them) */
    SVT_CHECK((dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
              (dev.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
              (dev.attr.max_mw > 0), "memory windows: device_cap_flags 0x%x, "
              "max_mw %d", dev.attr.device_cap_flags, dev.attr.max_mw);
    SVT_CHECK(dev.attr.max_raw_ipv6_qp == 0 && dev.attr.max_raw_ethy_qp == 0,
              "raw QPs %d/%d", dev.attr.max_raw_ipv6_qp,
              dev.attr.max_raw_ethy_qp);
    SVT_ZERO(comp_mask);
    SVT_CHECK(ax.odp_caps.general_caps & IBV_ODP_SUPPORT, "no ODP");
    SVT_CHECK(ax.completion_timestamp_mask && ax.hca_core_clock,
              "no completion timestamps");
    SVT_ZERO(tso_caps);
    SVT_ZERO(rss_caps);
    SVT_ZERO(max_wq_type_rq);
    SVT_ZERO(packet_pacing_caps);
    SVT_ZERO(raw_packet_caps);
    SVT_ZERO(tm_caps);
    SVT_ZERO(cq_mod_caps);
    SVT_CHECK(ax.max_dm_size > 0, "no device memory");
    SVT_ZERO(pci_atomic_caps);

    /* fields of a CQ softverbs has no value for are refused, the standard
     * fields and timestamps work */
    memset(&ca, 0, sizeof(ca));
    ca.cqe      = 16;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_FLOW_TAG;
    errno       = 0;
    cqx         = ibv_create_cq_ex(dev.ctx, &ca);
    SVT_CHECK(cqx == NULL && errno == EOPNOTSUPP, "CQ with flow tags: %s "
              "(errno %d)", cqx ? "created" : "refused", errno);
    ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
    SVT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));

    /* an XRC domain of its own (fd -1) */
    memset(&xa, 0, sizeof(xa));
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd        = -1;
    xa.oflags    = O_CREAT;
    SVT_NN(xrcd, ibv_open_xrcd(dev.ctx, &xa));
    SVT_OK(ibv_close_xrcd(xrcd));
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * ibv_create_qp_ex
 * ------------------------------------------------------------------- */

/* The send operations a device of mlx5's class takes per QP type (rdma-core
 * providers/mlx5/qp.c, MLX5_SUPPORTED_SEND_OPS_FLAGS_*, restricted to those
 * softverbs executes) */
static uint64_t svt_ex_ops(enum ibv_qp_type type)
{
    uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

    if (type != IBV_QPT_UD) {
        ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
    }
    if (type == IBV_QPT_RC) {
        ops |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    }
    return ops;
}

static void svt_ex_init(struct ibv_qp_init_attr_ex *init, svt_dev_t *dev,
                        struct ibv_cq *cq, enum ibv_qp_type type)
{
    memset(init, 0, sizeof(*init));
    init->qp_type          = type;
    init->send_cq          = cq;
    init->recv_cq          = cq;
    init->cap.max_send_wr  = 16;
    init->cap.max_recv_wr  = 16;
    init->cap.max_send_sge = 2;
    init->cap.max_recv_sge = 2;
    init->comp_mask        = IBV_QP_INIT_ATTR_PD;
    init->pd               = dev->pd;
}

/* An endpoint whose QP comes from ibv_create_qp_ex with init (its CQ is
 * filled in) */
static void svt_ex_ep(svt_dev_t *dev, enum ibv_qp_type type,
                      struct ibv_qp_init_attr_ex *init, svt_ep_t *ep)
{
    svt_ep_opts_t o;

    svt_ep_opts_init(&o, type);
    o.buf_size = 8192;
    svt_ep_create(dev, &o, ep);
    SVT_OK(ibv_destroy_qp(ep->qp));
    init->send_cq = init->recv_cq = ep->cq;
    SVT_NN(ep->qp, ibv_create_qp_ex(dev->ctx, init));
    SVT_CHECK(ep->qp->qp_type == type, "qp_type %d, asked %d",
              ep->qp->qp_type, type);
}

/* Receive one message of len bytes (seed) at offset 4096 of b */
static void svt_ex_expect_recv(svt_ep_t *b, enum ibv_qp_type type,
                               size_t len, uint32_t seed, int with_imm,
                               uint64_t wr_id)
{
    size_t grh = (type == IBV_QPT_UD) ? SVT_GRH_LEN : 0;
    struct ibv_wc wc;

    svt_expect_wc(b->cq, IBV_WC_SUCCESS,
                  (with_imm == 2) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                  wr_id, &wc);
    SVT_CHECK(wc.byte_len == len + grh, "byte_len %u, expected %zu",
              wc.byte_len, len + grh);
    SVT_CHECK(!with_imm || ((wc.wc_flags & IBV_WC_WITH_IMM) &&
                            (ntohl(wc.imm_data) == 0x1234 + seed)),
              "immediate data missing or wrong (flags 0x%x)", wc.wc_flags);
    if (with_imm != 2) {
        svt_pattern_check(b->buf + 4096 + grh, len, seed, "received payload");
    }
}

/* Common attribute sets of ibv_create_qp_ex (arg: the QP type): each one
 * gives a QP that moves data, through ibv_post_send and, when
 * send_ops_flags were given, through ibv_wr_* */
static void svt_case_create_qp_ex(svt_proc_t *p)
{
    enum ibv_qp_type type = (enum ibv_qp_type)p->arg;
    static const struct {
        uint32_t mask;
        int      ops; /* send_ops_flags: 0 none, 1 SEND only, 2 all */
    } sets[] = {
        {IBV_QP_INIT_ATTR_PD, 0},
        {IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, 0},
        {IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 1},
        {IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 2},
        {IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
         IBV_QP_INIT_ATTR_CREATE_FLAGS, 2},
    };
    struct ibv_qp_init_attr_ex init;
    svt_addr_t aa, ba;
    struct ibv_qp_ex *qpx;
    svt_ep_t a, b;
    svt_dev_t dev;
    uint32_t seed;
    uint64_t v;
    size_t i;

    svt_dev_open(&dev);
    for (i = 0; i < sizeof(sets) / sizeof(sets[0]); ++i) {
        seed = 10 * (uint32_t)i;
        svt_ex_init(&init, &dev, NULL, type);
        init.comp_mask      = sets[i].mask;
        init.create_flags   = 0;
        init.send_ops_flags = (sets[i].ops == 2) ? svt_ex_ops(type) :
                              (sets[i].ops == 1) ? IBV_QP_EX_WITH_SEND : 0;
        svt_ex_ep(&dev, type, &init, &a);
        svt_ex_ep(&dev, type, &init, &b);
        svt_ep_addr(&a, &aa);
        svt_ep_addr(&b, &ba);
        svt_ep_connect(&a, &ba);
        svt_ep_connect(&b, &aa);

        /* ibv_post_send works on every extended QP */
        svt_fill(a.buf, 256, seed);
        svt_post_recv(&b, 4096, 2048, 1);
        SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 256, 0, 0, 0,
                             IBV_SEND_SIGNALED, 2));
        svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 2, NULL);
        svt_ex_expect_recv(&b, type, 256, seed, 0, 1);
        if (type != IBV_QPT_UD) {
            svt_fill(a.buf + 512, 300, seed + 1);
            SVT_OK(svt_post_send(&a, IBV_WR_RDMA_WRITE, 512, 300,
                                 svt_raddr(&a, 512), a.remote.rkey, 0,
                                 IBV_SEND_SIGNALED, 3));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 3, NULL);
            svt_pattern_check(b.buf + 512, 300, seed + 1, "RDMA write");
        }

        /* ibv_qp_to_qp_ex: only a QP created with send_ops_flags has the
         * ibv_wr_* API (libibverbs returns NULL otherwise, mlx5 sets
         * VERBS_QP_EX only for IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) */
        errno = 0;
        qpx   = ibv_qp_to_qp_ex(a.qp);
        if (sets[i].ops == 0) {
            SVT_CHECK(qpx == NULL, "ibv_qp_to_qp_ex of a QP created "
                      "without send_ops_flags returned the wr_* API");
        } else {
            SVT_CHECK(qpx != NULL, "ibv_qp_to_qp_ex failed (errno %d)",
                      errno);
            svt_fill(a.buf + 1024, 200, seed + 2);
            svt_post_recv(&b, 4096, 2048, 4);
            ibv_wr_start(qpx);
            qpx->wr_id    = 5;
            qpx->wr_flags = IBV_SEND_SIGNALED;
            if (sets[i].ops == 2) {
                ibv_wr_send_imm(qpx, htonl(0x1234 + seed + 2));
            } else {
                ibv_wr_send(qpx);
            }
            ibv_wr_set_sge(qpx, a.mr->lkey, (uintptr_t)a.buf + 1024, 200);
            if (type == IBV_QPT_UD) {
                ibv_wr_set_ud_addr(qpx, a.ah, a.remote.qpn, SVT_QKEY);
            }
            SVT_OK(ibv_wr_complete(qpx));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 5, NULL);
            svt_ex_expect_recv(&b, type, 200, seed + 2, sets[i].ops == 2, 4);
        }
        if ((sets[i].ops == 2) && (type != IBV_QPT_UD)) {
            svt_fill(a.buf + 2048, 100, seed + 3);
            svt_post_recv(&b, 4096, 2048, 6);
            ibv_wr_start(qpx);
            qpx->wr_id    = 7;
            qpx->wr_flags = IBV_SEND_SIGNALED;
            ibv_wr_rdma_write_imm(qpx, a.remote.rkey, svt_raddr(&a, 2048),
                                  htonl(0x1234 + seed + 3));
            ibv_wr_set_sge(qpx, a.mr->lkey, (uintptr_t)a.buf + 2048, 100);
            SVT_OK(ibv_wr_complete(qpx));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 7, NULL);
            svt_ex_expect_recv(&b, type, 100, seed + 3, 2, 6);
            svt_pattern_check(b.buf + 2048, 100, seed + 3,
                              "wr_rdma_write_imm");
        }
        if ((sets[i].ops == 2) && (type == IBV_QPT_RC)) {
            svt_fill(b.buf + 3000, 64, seed + 4);
            memset(b.buf + 3072, 0, 8);
            ibv_wr_start(qpx);
            qpx->wr_id    = 8;
            qpx->wr_flags = IBV_SEND_SIGNALED;
            ibv_wr_rdma_read(qpx, a.remote.rkey, svt_raddr(&a, 3000));
            ibv_wr_set_sge(qpx, a.mr->lkey, (uintptr_t)a.buf + 3000, 64);
            qpx->wr_id    = 9;
            ibv_wr_atomic_fetch_add(qpx, a.remote.rkey, svt_raddr(&a, 3072),
                                    7);
            ibv_wr_set_sge(qpx, a.mr->lkey, (uintptr_t)a.buf + 3200, 8);
            qpx->wr_id    = 10;
            ibv_wr_atomic_cmp_swp(qpx, a.remote.rkey, svt_raddr(&a, 3072),
                                  7, 99);
            ibv_wr_set_sge(qpx, a.mr->lkey, (uintptr_t)a.buf + 3208, 8);
            SVT_OK(ibv_wr_complete(qpx));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8, NULL);
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 9, NULL);
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 10, NULL);
            svt_pattern_check(a.buf + 3000, 64, seed + 4, "wr_rdma_read");
            memcpy(&v, b.buf + 3072, 8);
            SVT_CHECK(v == 99, "remote word %llu after fetch_add 7 and "
                      "cmp_swp 7->99", (unsigned long long)v);
        }
        svt_ep_destroy(&a);
        svt_ep_destroy(&b);
    }
    svt_dev_close(&dev);
}

/* Attributes ibv_create_qp_ex must refuse, with the errno of rdma-core's
 * providers (see sv_create_qp_ex) */
static void svt_case_create_qp_ex_refused(svt_proc_t *p)
{
    static const struct {
        const char       *what;
        enum ibv_qp_type type;
        uint32_t         mask;       /* added to IBV_QP_INIT_ATTR_PD */
        uint32_t         create_flags;
        uint64_t         ops;
        int              no_pd;
        int              err;
    } bad[] = {
        {"comp_mask bit 7 (unknown)", IBV_QPT_RC, 1u << 7, 0, 0, 0, EINVAL},
        {"comp_mask bit 31 (unknown)", IBV_QPT_UD, 1u << 31, 0, 0, 0, EINVAL},
        {"no IBV_QP_INIT_ATTR_PD", IBV_QPT_RC, IBV_QP_INIT_ATTR_CREATE_FLAGS,
         0, 0, 1, EINVAL},
        {"IBV_QP_INIT_ATTR_XRCD on RC", IBV_QPT_RC, IBV_QP_INIT_ATTR_XRCD, 0,
         0, 0, EINVAL},
        {"IBV_QP_INIT_ATTR_IND_TABLE", IBV_QPT_UD, IBV_QP_INIT_ATTR_IND_TABLE,
         0, 0, 0, EOPNOTSUPP},
        {"IBV_QP_INIT_ATTR_RX_HASH", IBV_QPT_UD, IBV_QP_INIT_ATTR_RX_HASH, 0,
         0, 0, EOPNOTSUPP},
        {"IBV_QP_INIT_ATTR_MAX_TSO_HEADER on RC", IBV_QPT_RC,
         IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0, 0, 0, EINVAL},
        {"create flag SOURCE_QPN on UD", IBV_QPT_UD,
         IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_CREATE_SOURCE_QPN, 0, 0,
         EOPNOTSUPP},
        {"create flag SOURCE_QPN on RC", IBV_QPT_RC,
         IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_CREATE_SOURCE_QPN, 0, 0,
         EINVAL},
        {"create flag BLOCK_SELF_MCAST_LB", IBV_QPT_UD,
         IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, 0,
         0, EOPNOTSUPP},
        {"UD with RDMA_WRITE", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, 0, EOPNOTSUPP},
        {"UC with RDMA_READ", IBV_QPT_UC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_RDMA_READ, 0, EOPNOTSUPP},
        {"UC with ATOMIC_FETCH_AND_ADD", IBV_QPT_UC,
         IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, 0, EOPNOTSUPP},
        {"UD with LOCAL_INV", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV, 0, EOPNOTSUPP},
        {"UD with BIND_MW", IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW, 0, EOPNOTSUPP},
        {"RC with TSO", IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
         IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO, 0, EOPNOTSUPP},
    };
    struct ibv_qp_init_attr_ex init;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        svt_ex_init(&init, &dev, cq, bad[i].type);
        init.comp_mask     |= bad[i].mask;
        if (bad[i].no_pd) {
            init.comp_mask &= ~IBV_QP_INIT_ATTR_PD;
        }
        init.create_flags   = bad[i].create_flags;
        init.send_ops_flags = bad[i].ops;
        errno = 0;
        qp    = ibv_create_qp_ex(dev.ctx, &init);
        if (qp != NULL) {
            SVT_OK(ibv_destroy_qp(qp));
        }
        SVT_CHECK((qp == NULL) && (errno == bad[i].err), "%s: %s, errno %d "
                  "(expected %d)", bad[i].what, qp ? "created" : "refused",
                  errno, bad[i].err);
    }
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/* ---------------------------------------------------------------------
 * ibv_create_srq_ex
 * ------------------------------------------------------------------- */

/* A basic SRQ from ibv_create_srq_ex, with the comp_mask sets programs
 * pass, works like one from ibv_create_srq: RC and UD QPs receive through
 * it */
static void svt_case_create_srq_ex(svt_proc_t *p)
{
    static const uint32_t masks[] = {
        IBV_SRQ_INIT_ATTR_PD,
        IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE,
        IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ,
        IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ,
    };
    static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UD};
    struct ibv_srq_init_attr_ex sa;
    struct ibv_srq_attr qa;
    struct ibv_recv_wr rwr, *bad;
    struct ibv_sge sge;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    struct ibv_wc wc;
    svt_ep_opts_t o;
    svt_addr_t aa, ba;
    svt_ep_t a, b;
    svt_dev_t dev;
    size_t i, t, grh;
    uint32_t seed;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 64, NULL, NULL, 0));
    for (i = 0; i < sizeof(masks) / sizeof(masks[0]); ++i) {
        for (t = 0; t < sizeof(types) / sizeof(types[0]); ++t) {
            seed = 100 + 10 * (uint32_t)i + (uint32_t)t;
            memset(&sa, 0, sizeof(sa));
            sa.srq_context  = &sa;
            sa.attr.max_wr  = 8;
            sa.attr.max_sge = 1;
            sa.comp_mask    = masks[i];
            sa.srq_type     = IBV_SRQT_BASIC;
            sa.pd           = dev.pd;
            sa.cq           = cq;
            SVT_NN(srq, ibv_create_srq_ex(dev.ctx, &sa));
            SVT_CHECK(srq->srq_context == &sa && srq->pd == dev.pd &&
                      srq->context == dev.ctx, "SRQ fields not set");
            SVT_CHECK(sa.attr.max_wr >= 8 && sa.attr.max_sge >= 1,
                      "granted max_wr %u max_sge %u", sa.attr.max_wr,
                      sa.attr.max_sge);
            SVT_OK(ibv_query_srq(srq, &qa));
            SVT_CHECK(qa.max_wr >= 8, "ibv_query_srq max_wr %u", qa.max_wr);

            svt_ep_opts_init(&o, types[t]);
            o.buf_size = 8192;
            svt_ep_create(&dev, &o, &a);
            o.srq = srq;
            svt_ep_create(&dev, &o, &b);
            svt_ep_addr(&a, &aa);
            svt_ep_addr(&b, &ba);
            svt_ep_connect(&a, &ba);
            svt_ep_connect(&b, &aa);

            grh = (types[t] == IBV_QPT_UD) ? SVT_GRH_LEN : 0;
            sge.addr   = (uintptr_t)b.buf + 4096;
            sge.length = 2048;
            sge.lkey   = b.mr->lkey;
            memset(&rwr, 0, sizeof(rwr));
            rwr.wr_id   = 11;
            rwr.sg_list = &sge;
            rwr.num_sge = 1;
            SVT_OK(ibv_post_srq_recv(srq, &rwr, &bad));
            svt_fill(a.buf, 333, seed);
            SVT_OK(svt_post_send(&a, IBV_WR_SEND, 0, 333, 0, 0, 0,
                                 IBV_SEND_SIGNALED, 12));
            svt_expect_wc(a.cq, IBV_WC_SUCCESS, IBV_WC_SEND, 12, NULL);
            svt_expect_wc(b.cq, IBV_WC_SUCCESS, IBV_WC_RECV, 11, &wc);
            SVT_CHECK(wc.qp_num == b.qp->qp_num && wc.byte_len == 333 + grh,
                      "SRQ receive: qp_num 0x%x byte_len %u", wc.qp_num,
                      wc.byte_len);
            svt_pattern_check(b.buf + 4096 + grh, 333, seed, "SRQ payload");
            svt_ep_destroy(&a);
            svt_ep_destroy(&b);
            SVT_OK(ibv_destroy_srq(srq));
        }
    }
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/* SRQ types and attributes ibv_create_srq_ex refuses: XRC without a
 * domain, tag matching, which the device lacks (see sv_create_srq_ex for
 * the rules; valid XRC SRQs: the xrc/ cases) */
static void svt_case_create_srq_ex_refused(svt_proc_t *p)
{
    const uint32_t pt = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
    const struct {
        const char        *what;
        uint32_t          mask;
        enum ibv_srq_type type;
        int               err;
    } bad[] = {
        {"XRC SRQ of a NULL domain", pt | IBV_SRQ_INIT_ATTR_XRCD |
         IBV_SRQ_INIT_ATTR_CQ, IBV_SRQT_XRC, EINVAL},
        {"XRC SRQ without XRCD and CQ", pt, IBV_SRQT_XRC, EINVAL},
        {"tag-matching SRQ", pt | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
         IBV_SRQT_TM, EOPNOTSUPP},
        {"tag-matching SRQ without TM", pt | IBV_SRQ_INIT_ATTR_CQ,
         IBV_SRQT_TM, EINVAL},
        {"srq_type 7", pt, (enum ibv_srq_type)7, EINVAL},
        {"comp_mask IBV_SRQ_INIT_ATTR_RESERVED", pt |
         IBV_SRQ_INIT_ATTR_RESERVED, IBV_SRQT_BASIC, EOPNOTSUPP},
        {"no IBV_SRQ_INIT_ATTR_PD", IBV_SRQ_INIT_ATTR_TYPE |
         IBV_SRQ_INIT_ATTR_CQ, IBV_SRQT_BASIC, EINVAL},
    };
    struct ibv_srq_init_attr_ex sa;
    struct ibv_srq *srq;
    struct ibv_cq *cq;
    svt_dev_t dev;
    size_t i;

    svt_dev_open(&dev);
    SVT_NN(cq, ibv_create_cq(dev.ctx, 16, NULL, NULL, 0));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr         = 8;
        sa.attr.max_sge        = 1;
        sa.comp_mask           = bad[i].mask;
        sa.srq_type            = bad[i].type;
        sa.pd                  = dev.pd;
        sa.cq                  = cq;
        sa.xrcd                = NULL; /* no domain */
        sa.tm_cap.max_num_tags = 16;
        sa.tm_cap.max_ops      = 16;
        errno = 0;
        srq   = ibv_create_srq_ex(dev.ctx, &sa);
        if (srq != NULL) {
            SVT_OK(ibv_destroy_srq(srq));
        }
        SVT_CHECK((srq == NULL) && (errno == bad[i].err), "%s: %s, errno %d "
                  "(expected %d)", bad[i].what, srq ? "created" : "refused",
                  errno, bad[i].err);
    }
    SVT_OK(ibv_destroy_cq(cq));
    svt_dev_close(&dev);
}

/*
 * An SRQ is sized as mlx5's (mlx5_ib_create_srq): max_wr + 1 rounded up to
 * a power of two, less the one WQE it keeps, written back and reported by
 * ibv_query_srq; exactly that many receives can be posted, the next fails
 * with ENOMEM. UCX's rc_verbs posts what is written back into an SRQ whose
 * receive CQ it sizes as it asked: one WQE more overran that CQ.
 */
static void svt_case_srq_size_mlx5(svt_proc_t *p)
{
    static const uint32_t asked[] = {1, 2, 3, 100, 1000, 4095, 4096};
    static const uint32_t given[] = {1, 3, 3, 127, 1023, 4095, 8191};
    struct ibv_srq_init_attr sa;
    struct ibv_recv_wr rwr, *bad;
    struct ibv_srq_attr qa;
    struct ibv_sge sge;
    struct ibv_srq *srq;
    svt_dev_t dev;
    uint64_t buf;
    unsigned i, n;
    int ret = 0;

    (void)p;
    svt_dev_open(&dev);
    sge.addr    = (uintptr_t)&buf;
    sge.length  = sizeof(buf);
    sge.lkey    = 0;
    memset(&rwr, 0, sizeof(rwr));
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    for (i = 0; i < sizeof(asked) / sizeof(asked[0]); ++i) {
        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr  = asked[i];
        sa.attr.max_sge = 1;
        SVT_NN(srq, ibv_create_srq(dev.pd, &sa));
        SVT_CHECK(sa.attr.max_wr == given[i], "SRQ of max_wr %u: written "
                  "back %u (mlx5: %u)", asked[i], sa.attr.max_wr, given[i]);
        SVT_OK(ibv_query_srq(srq, &qa));
        SVT_CHECK(qa.max_wr == given[i], "ibv_query_srq: max_wr %u",
                  qa.max_wr);
        for (n = 0; n < given[i]; ++n) {
            ret = ibv_post_srq_recv(srq, &rwr, &bad);
            if (ret != 0) {
                break;
            }
        }
        SVT_CHECK(n == given[i], "SRQ of max_wr %u took %u receives (%d)",
                  given[i], n, ret);
        ret = ibv_post_srq_recv(srq, &rwr, &bad);
        SVT_CHECK(ret == ENOMEM, "receive %u beyond max_wr %u: %d, expected "
                  "ENOMEM", given[i] + 1, given[i], ret);
        SVT_OK(ibv_destroy_srq(srq));
    }
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_ex[] = {
    {"ex/device_attr_ex", svt_case_device_attr_ex, 1, 1},
    {"ex/device_attr_ex_3ports", svt_case_device_attr_ex, 1, 3, 0,
     "SOFTVERBS_NUM_PORTS=3"},
    {"ex/create_qp_ex_rc", svt_case_create_qp_ex, 1, IBV_QPT_RC},
    {"ex/create_qp_ex_uc", svt_case_create_qp_ex, 1, IBV_QPT_UC},
    {"ex/create_qp_ex_ud", svt_case_create_qp_ex, 1, IBV_QPT_UD},
    {"ex/create_qp_ex_refused", svt_case_create_qp_ex_refused, 1},
    {"ex/create_srq_ex", svt_case_create_srq_ex, 1},
    {"ex/create_srq_ex_refused", svt_case_create_srq_ex_refused, 1},
    {"ex/srq_size_mlx5", svt_case_srq_size_mlx5, 1},
    {NULL}
};
