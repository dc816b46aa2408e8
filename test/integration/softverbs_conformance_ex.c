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
 * in phys_port_cnt_ex (arg: the SOFTVERBS_NUM_PORTS of the case), and
 * every optional capability absent, with the verbs behind it refused */
static void svt_case_device_attr_ex(svt_proc_t *p)
{
    struct ibv_cq_init_attr_ex ca;
    struct ibv_device_attr_ex ax;
    struct ibv_xrcd_init_attr xa;
    struct ibv_alloc_dm_attr da;
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
                (IBV_DEVICE_XRC | IBV_DEVICE_MEM_WINDOW |
                 IBV_DEVICE_MEM_WINDOW_TYPE_2A |
                 IBV_DEVICE_MEM_WINDOW_TYPE_2B |
                 IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_RAW_MULTI |
                 IBV_DEVICE_UD_IP_CSUM | IBV_DEVICE_MANAGED_FLOW_STEERING)),
              "device_cap_flags 0x%x claims XRC, memory windows, memory "
              "management, raw or flow steering", dev.attr.device_cap_flags);
    SVT_CHECK(dev.attr.max_mw == 0, "max_mw %d without memory windows",
              dev.attr.max_mw);
    SVT_CHECK(dev.attr.max_raw_ipv6_qp == 0 && dev.attr.max_raw_ethy_qp == 0,
              "raw QPs %d/%d", dev.attr.max_raw_ipv6_qp,
              dev.attr.max_raw_ethy_qp);
    SVT_ZERO(comp_mask);
    SVT_ZERO(odp_caps);
    SVT_ZERO(xrc_odp_caps);
    SVT_ZERO(completion_timestamp_mask);
    SVT_ZERO(hca_core_clock);
    SVT_ZERO(tso_caps);
    SVT_ZERO(rss_caps);
    SVT_ZERO(max_wq_type_rq);
    SVT_ZERO(packet_pacing_caps);
    SVT_ZERO(raw_packet_caps);
    SVT_ZERO(tm_caps);
    SVT_ZERO(cq_mod_caps);
    SVT_ZERO(max_dm_size);
    SVT_ZERO(pci_atomic_caps);

    /* no clock: a CQ with completion timestamps is refused, the
     * standard fields work */
    memset(&ca, 0, sizeof(ca));
    ca.cqe      = 16;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    errno       = 0;
    cqx         = ibv_create_cq_ex(dev.ctx, &ca);
    SVT_CHECK(cqx == NULL && errno == EOPNOTSUPP, "CQ with completion "
              "timestamps: %s (errno %d)", cqx ? "created" : "refused", errno);
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    SVT_NN(cqx, ibv_create_cq_ex(dev.ctx, &ca));
    SVT_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)));

    /* no XRC domain, no device memory */
    memset(&xa, 0, sizeof(xa));
    xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xa.fd        = -1;
    xa.oflags    = O_CREAT;
    errno        = 0;
    SVT_CHECK(ibv_open_xrcd(dev.ctx, &xa) == NULL && errno == EOPNOTSUPP,
              "ibv_open_xrcd without XRC: errno %d", errno);
    memset(&da, 0, sizeof(da));
    da.length = 4096;
    errno     = 0;
    SVT_CHECK(ibv_alloc_dm(dev.ctx, &da) == NULL && errno == EOPNOTSUPP,
              "ibv_alloc_dm with max_dm_size 0: errno %d", errno);
    svt_dev_close(&dev);
}

const svt_case_t svt_cases_ex[] = {
    {"ex/device_attr_ex", svt_case_device_attr_ex, 1, 1},
    {"ex/device_attr_ex_3ports", svt_case_device_attr_ex, 1, 3, 0,
     "SOFTVERBS_NUM_PORTS=3"},
    {NULL}
};
