/*
 * Unit tests of the qpx component and memory domain, with the verbs calls
 * they make wrapped (-Wl,--wrap) so that every failure can be injected.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_component.h>
#include <uct/qpx/base/qpx_md.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* A fake device: the wrapped calls hand out these addresses, never touch them */
static struct ibv_device  *fake_devices[2] = {(struct ibv_device*)0x1000, NULL};
static struct ibv_context fake_ctx;
static struct ibv_pd      fake_pd;
static struct ibv_mr      fake_mr;
static int                num_devices;
static int                fail_open_errno;
static int                fail_reg_errno;
static int                fail_pd;
static int                fail_dereg;
static int                mr_live;
static int                ctx_live;
static int                pd_live;
static unsigned           runtime_major, runtime_minor;
static int                runtime_version_fails;
static int                runtime_has_stats;
static int                component_registrations;
static int                cm_registrations;
static int                last_reg_access;
/* Asynchronous events: the fake context's async fd is the read end of a
 * pipe; a byte written to it makes the events queued below "arrive" */
static int                event_pipe[2] = {-1, -1};
static struct ibv_async_event event_queue[8];
static int                event_count, event_next;
static int                events_got, events_acked; /* async thread */
static struct ibv_cq      fake_cq = {.cqe = 255};
static struct ibv_qp      fake_qp = {.qp_num = 0x1234};


struct ibv_device **__wrap_ibv_get_device_list(int *num)
{
    *num = num_devices;
    return fake_devices;
}

void __wrap_ibv_free_device_list(struct ibv_device **list)
{
    assert_ptr_equal(list, fake_devices);
}

int __wrap_ibv_get_async_event(struct ibv_context *ctx,
                               struct ibv_async_event *event)
{
    char buf[16];

    assert_ptr_equal(ctx, &fake_ctx);
    if (event_next == event_count) {
        /* nothing more: empty the fd as the real library's read does */
        while (read(ctx->async_fd, buf, sizeof(buf)) > 0) {
        }
        errno = EAGAIN;
        return -1;
    }
    *event = event_queue[event_next++];
    __atomic_add_fetch(&events_got, 1, __ATOMIC_RELEASE);
    return 0;
}

void __wrap_ibv_ack_async_event(struct ibv_async_event *event)
{
    __atomic_add_fetch(&events_acked, 1, __ATOMIC_RELEASE);
}

const char *__wrap_ibv_get_device_name(struct ibv_device *device)
{
    assert_ptr_equal(device, fake_devices[0]);
    return "fake0";
}

struct ibv_context *__wrap_ibv_open_device(struct ibv_device *device)
{
    if (fail_open_errno) {
        errno = fail_open_errno;
        return NULL;
    }
    ++ctx_live;
    return &fake_ctx;
}

int __wrap_ibv_close_device(struct ibv_context *ctx)
{
    assert_ptr_equal(ctx, &fake_ctx);
    --ctx_live;
    return 0;
}

int __wrap_ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->phys_port_cnt = 1;
    attr->max_mr_size   = 1ul << 40;
    return 0;
}

/* A RoCE port (port_eth): its GID table, as a ConnectX port with one IPv4
 * address has it: the link-local pair, the IPv4-mapped pair, an empty entry */
static int                  port_eth;
static struct ibv_gid_entry roce_gids[6];
static int                  roce_num_gids;

static void roce_gid(int index, uint32_t type, const char *prefix_hex)
{
    struct ibv_gid_entry *e = &roce_gids[index];
    unsigned byte;
    int i;

    memset(e, 0, sizeof(*e));
    for (i = 0; (i < 16) && (sscanf(prefix_hex + 2 * i, "%2x", &byte) == 1);
         ++i) {
        e->gid.raw[i] = byte;
    }
    e->gid_index = index;
    e->gid_type  = type;
    e->port_num  = 1;
}

static void roce_table_init(void)
{
    /* fe80::1, ::ffff:10.0.0.1, each as RoCE v1 and v2; index 4 empty */
    roce_gid(0, IBV_GID_TYPE_ROCE_V1, "fe800000000000000000000000000001");
    roce_gid(1, IBV_GID_TYPE_ROCE_V2, "fe800000000000000000000000000001");
    roce_gid(2, IBV_GID_TYPE_ROCE_V1, "00000000000000000000ffff0a000001");
    roce_gid(3, IBV_GID_TYPE_ROCE_V2, "00000000000000000000ffff0a000001");
    memset(&roce_gids[4], 0, sizeof(roce_gids[4]));
    roce_gid(5, IBV_GID_TYPE_ROCE_V2, "20010db8000000000000000000000001");
    roce_num_gids = 6;
}

int __wrap_ibv_query_port(struct ibv_context *ctx, uint8_t port,
                          struct ibv_port_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->state        = IBV_PORT_ACTIVE;
    attr->lid          = port_eth ? 0 : 7;
    attr->link_layer   = port_eth ? IBV_LINK_LAYER_ETHERNET :
                                    IBV_LINK_LAYER_INFINIBAND;
    attr->active_mtu   = IBV_MTU_4096;
    attr->active_width = 2;  /* 4x */
    attr->active_speed = 32; /* EDR */
    attr->gid_tbl_len  = port_eth ? roce_num_gids : 1;
    return 0;
}

int __wrap__ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port,
                             uint32_t index, struct ibv_gid_entry *entry,
                             uint32_t flags, size_t entry_size)
{
    static const uint8_t zero[16];

    if ((index >= (uint32_t)roce_num_gids) ||
        !memcmp(roce_gids[index].gid.raw, zero, sizeof(zero))) {
        return ENODATA; /* rdma-core: an unpopulated entry */
    }
    memcpy(entry, &roce_gids[index], entry_size);
    return 0;
}

int __wrap_ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
                         union ibv_gid *gid)
{
    memset(gid, 0xab, sizeof(*gid));
    return 0;
}

struct ibv_pd *__wrap_ibv_alloc_pd(struct ibv_context *ctx)
{
    if (fail_pd) {
        errno = ENOMEM;
        return NULL;
    }
    ++pd_live;
    return &fake_pd;
}

int __wrap_ibv_dealloc_pd(struct ibv_pd *pd)
{
    --pd_live;
    return 0;
}

struct ibv_mr *__wrap_ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
                                       size_t length, uint64_t iova,
                                       unsigned int access)
{
    last_reg_access = access;
    if (fail_reg_errno) {
        errno = fail_reg_errno;
        return NULL;
    }
    fake_mr.addr   = addr;
    fake_mr.length = length;
    fake_mr.lkey   = 0x1234;
    fake_mr.rkey   = 0xbeef;
    ++mr_live;
    return &fake_mr;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
    if (fail_dereg) {
        return EBUSY;
    }
    --mr_live;
    return 0;
}

ucs_status_t __wrap_qpx_ucx_runtime_version(unsigned *major, unsigned *minor,
                                            unsigned *patch)
{
    if (runtime_version_fails) {
        return UCS_ERR_NO_ELEM;
    }
    *major = runtime_major;
    *minor = runtime_minor;
    *patch = 0;
    return UCS_OK;
}

int __wrap_qpx_ucx_has_statistics(void)
{
    return runtime_has_stats;
}

void __wrap_uct_component_register(uct_component_t *component)
{
    if (component != &qpx_component) {
        /* the connection manager's own component: named as the memory
         * domains' one, a manager and no memory domain */
        assert_true(component->flags & UCT_COMPONENT_FLAG_CM);
        assert_string_equal(component->name, QPX_COMPONENT_NAME);
        ++cm_registrations;
        return;
    }
    assert_false(component->flags & UCT_COMPONENT_FLAG_CM);
    ++component_registrations;
}

void __wrap_uct_tl_register(uct_component_t *component, uct_tl_t *tl)
{
    assert_ptr_equal(component, &qpx_component);
}


static int test_setup(void **state)
{
    num_devices     = 1;
    fail_open_errno = 0;
    fail_reg_errno  = 0;
    fail_pd         = 0;
    fail_dereg      = 0;
    mr_live = ctx_live = pd_live = 0;
    if (event_pipe[0] < 0) {
        assert_int_equal(pipe(event_pipe), 0);
    }
    fake_ctx.async_fd = event_pipe[0];
    event_count = event_next = events_got = events_acked = 0;
    return 0;
}

static uct_md_h open_md(void)
{
    qpx_md_config_t config = {.reg_overhead = 1e-6, .reg_growth = 1e-9};
    uct_md_h md            = NULL;

    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_OK);
    assert_non_null(md);
    return md;
}


static void test_query_resources_no_device(void **state)
{
    uct_md_resource_desc_t *resources = (void*)0x1;
    unsigned num                      = 99;

    num_devices = 0;
    assert_int_equal(qpx_md_query_resources(&qpx_component, &resources, &num),
                     UCS_OK);
    assert_int_equal(num, 0);
    free(resources);
}

static void test_query_resources_one_device(void **state)
{
    uct_md_resource_desc_t *resources = NULL;
    unsigned num                      = 0;

    assert_int_equal(qpx_md_query_resources(&qpx_component, &resources, &num),
                     UCS_OK);
    assert_int_equal(num, 1);
    assert_string_equal(resources[0].md_name, "fake0");
    free(resources);
}

static void test_md_open_unknown_device(void **state)
{
    qpx_md_config_t config = {};
    uct_md_h md            = (void*)0x1;

    assert_int_equal(qpx_md_open(&qpx_component, "nosuch0", &config.super, &md),
                     UCS_ERR_NO_DEVICE);
    assert_ptr_equal(md, (void*)0x1); /* output untouched on failure */
}

static void test_md_open_device_fails(void **state)
{
    qpx_md_config_t config = {};
    uct_md_h md            = (void*)0x1;

    fail_open_errno = ENODEV;
    assert_int_not_equal(qpx_md_open(&qpx_component, "fake0", &config.super,
                                     &md), UCS_OK);
    assert_ptr_equal(md, (void*)0x1);
    assert_int_equal(ctx_live, 0);
}

static void test_md_open_pd_fails(void **state)
{
    qpx_md_config_t config = {};
    uct_md_h md            = (void*)0x1;

    fail_pd = 1;
    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_ERR_NO_MEMORY);
    assert_ptr_equal(md, (void*)0x1);
    assert_int_equal(ctx_live, 0); /* the device was closed again */
}

/* Wait up to 5 s for the async thread to have acknowledged n events */
static int wait_acked(int n)
{
    struct timespec ts = {0, 1000000};
    int i;

    for (i = 0; i < 5000; ++i) {
        if (__atomic_load_n(&events_acked, __ATOMIC_ACQUIRE) >= n) {
            return 1;
        }
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* Events the device reports are read on the async thread and each one is
 * acknowledged (ibv_destroy_* would wait forever for an unacknowledged
 * one); after md close nothing is read any more */
static void test_md_async_events(void **state)
{
    uct_md_h md;

    event_queue[0].event_type     = IBV_EVENT_CQ_ERR;
    event_queue[0].element.cq     = &fake_cq;
    event_queue[1].event_type     = IBV_EVENT_QP_FATAL;
    event_queue[1].element.qp     = &fake_qp;
    event_queue[2].event_type     = IBV_EVENT_PORT_ERR;
    event_queue[2].element.port_num = 1;
    event_queue[3].event_type     = IBV_EVENT_QP_LAST_WQE_REACHED;
    event_queue[3].element.qp     = &fake_qp;
    event_count                   = 4;

    md = open_md();
    /* the first interface starts it (as does a second call: idempotent) */
    assert_int_equal(qpx_device_events_start(&ucs_derived_of(md, qpx_md_t)->dev),
                     UCS_OK);
    assert_int_equal(qpx_device_events_start(&ucs_derived_of(md, qpx_md_t)->dev),
                     UCS_OK);
    assert_int_equal(write(event_pipe[1], "e", 1), 1);
    assert_true(wait_acked(4));
    assert_int_equal(__atomic_load_n(&events_got, __ATOMIC_ACQUIRE), 4);
    md->ops->close(md);

    /* closed: a new event is not read */
    event_queue[4].event_type     = IBV_EVENT_COMM_EST;
    event_queue[4].element.qp     = &fake_qp;
    event_count                   = 5;
    assert_int_equal(write(event_pipe[1], "e", 1), 1);
    usleep(100000);
    assert_int_equal(__atomic_load_n(&events_got, __ATOMIC_ACQUIRE), 4);
    {
        char buf[16];
        struct pollfd pfd = {.fd = event_pipe[0], .events = POLLIN};

        /* drain for the next test */
        while ((poll(&pfd, 1, 0) == 1) &&
               (read(event_pipe[0], buf, sizeof(buf)) > 0)) {
        }
    }
    assert_int_equal(ctx_live, 0);
}

/* An async fd qpx cannot watch: the interface that would start watching
 * it gets a clear error, the md stays usable and closes cleanly */
static void test_md_async_fd_bad(void **state)
{
    uct_md_h md;

    fake_ctx.async_fd = -1;
    md = open_md();
    assert_int_equal(qpx_device_events_start(&ucs_derived_of(md, qpx_md_t)->dev),
                     UCS_ERR_IO_ERROR);
    md->ops->close(md);
    assert_int_equal(ctx_live, 0);
}

static void test_md_query(void **state)
{
    uct_md_h md = open_md();
    uct_md_attr_t attr;

    assert_int_equal(md->ops->query(md, &attr), UCS_OK);
    assert_true(attr.cap.flags & UCT_MD_FLAG_REG);
    assert_true(attr.cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    assert_true(attr.cap.access_mem_types & UCS_BIT(UCS_MEMORY_TYPE_HOST));
    assert_int_equal(attr.cap.max_reg, 1ul << 40);
    /* no allocation, no limit (UCX's IB MD; UCX's gtest trims its sizes
     * by it) */
    assert_false(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    assert_true(attr.cap.max_alloc == SIZE_MAX);
    assert_int_equal(attr.rkey_packed_size, sizeof(uint32_t));
    assert_string_equal(attr.component_name, "qpx");
    assert_true(attr.reg_cost.c == 1e-6);

    md->ops->close(md);
    assert_int_equal(ctx_live, 0);
    assert_int_equal(pd_live, 0);
}

static void test_mem_reg_enomem(void **state)
{
    uct_md_h md     = open_md();
    uct_mem_h memh  = (void*)0x1;
    char buf[64];

    fail_reg_errno = ENOMEM;
    assert_int_equal(md->ops->mem_reg(md, buf, sizeof(buf), 0, &memh),
                     UCS_ERR_NO_MEMORY);
    assert_ptr_equal(memh, (void*)0x1);

    fail_reg_errno = EFAULT;
    assert_int_equal(md->ops->mem_reg(md, buf, sizeof(buf),
                                      UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh),
                     UCS_ERR_IO_ERROR);
    assert_ptr_equal(memh, (void*)0x1);
    md->ops->close(md);
}

static void test_mem_reg_rkey_roundtrip(void **state)
{
    uct_md_h md                      = open_md();
    uct_md_mkey_pack_params_t pparam = {0};
    uct_md_mem_dereg_params_t dparam;
    uct_mem_h memh;
    uint8_t packed[sizeof(qpx_packed_rkey_t)];
    uct_rkey_t rkey;
    void *handle;
    char buf[64];

    assert_int_equal(md->ops->mem_reg(md, buf, sizeof(buf), 0, &memh), UCS_OK);
    assert_int_equal(mr_live, 1);
    assert_true(last_reg_access & IBV_ACCESS_REMOTE_WRITE);
    assert_true(last_reg_access & IBV_ACCESS_REMOTE_READ);
    assert_true(last_reg_access & IBV_ACCESS_REMOTE_ATOMIC);

    assert_int_equal(md->ops->mkey_pack(md, memh, &pparam, packed), UCS_OK);
    assert_int_equal(qpx_md_rkey_unpack(&qpx_component, packed, &rkey, &handle),
                     UCS_OK);
    assert_int_equal(rkey, 0xbeef);

    /* a failing dereg keeps the handle valid, a later one releases it */
    dparam.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH;
    dparam.memh       = memh;
    fail_dereg        = 1;
    assert_int_equal(md->ops->mem_dereg(md, &dparam), UCS_ERR_IO_ERROR);
    fail_dereg        = 0;
    assert_int_equal(md->ops->mem_dereg(md, &dparam), UCS_OK);
    assert_int_equal(mr_live, 0);
    md->ops->close(md);
}

static int inv_comp_calls;
static int inv_comp_mr_live;

static void inv_comp_func(uct_completion_t *comp)
{
    ++inv_comp_calls;
    inv_comp_mr_live = mr_live; /* what was still registered at completion */
}

/* UCT_MD_MEM_DEREG_FLAG_INVALIDATE: advertised (UCP asks it of an RMA lane
 * that is not point to point, under peer failure handling), refused
 * without a completion, and its completion comes once the MR is gone, and
 * only then */
static void test_mem_dereg_invalidate(void **state)
{
    uct_md_h md                  = open_md();
    uct_completion_t comp        = {.func = inv_comp_func, .count = 1,
                                    .status = UCS_OK};
    uct_md_mem_dereg_params_t dparam;
    uct_md_attr_t attr;
    uct_mem_h memh;
    char buf[64];

    assert_int_equal(md->ops->query(md, &attr), UCS_OK);
    assert_true(attr.cap.flags & UCT_MD_FLAG_INVALIDATE);

    inv_comp_calls = 0;
    assert_int_equal(md->ops->mem_reg(md, buf, sizeof(buf), 0, &memh), UCS_OK);
    assert_int_equal(mr_live, 1);

    dparam.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                        UCT_MD_MEM_DEREG_FIELD_FLAGS;
    dparam.memh       = memh;
    dparam.flags      = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    assert_int_equal(md->ops->mem_dereg(md, &dparam), UCS_ERR_INVALID_PARAM);
    assert_int_equal(mr_live, 1);

    /* a failing deregistration invalidates nothing: no completion */
    dparam.field_mask |= UCT_MD_MEM_DEREG_FIELD_COMPLETION;
    dparam.comp        = &comp;
    fail_dereg         = 1;
    assert_int_equal(md->ops->mem_dereg(md, &dparam), UCS_ERR_IO_ERROR);
    assert_int_equal(inv_comp_calls, 0);
    fail_dereg         = 0;

    inv_comp_mr_live = -1;
    assert_int_equal(md->ops->mem_dereg(md, &dparam), UCS_OK);
    assert_int_equal(inv_comp_calls, 1);
    assert_int_equal(inv_comp_mr_live, 0);
    assert_int_equal(comp.count, 0);
    assert_int_equal(comp.status, UCS_OK);
    assert_int_equal(mr_live, 0);
    md->ops->close(md);
}

static void test_access_flags(void **state)
{
    int access = qpx_md_access_flags(UCT_MD_MEM_ACCESS_REMOTE_GET);

    assert_true(access & IBV_ACCESS_LOCAL_WRITE);
    assert_true(access & IBV_ACCESS_REMOTE_READ);
    assert_false(access & IBV_ACCESS_REMOTE_WRITE);
    assert_false(access & IBV_ACCESS_REMOTE_ATOMIC);
}

static void test_device_parse_port(void **state)
{
    qpx_md_t *md = ucs_derived_of(open_md(), qpx_md_t);
    uint8_t port = 0;

    assert_int_equal(qpx_device_parse_port(&md->dev, "fake0:1", &port), UCS_OK);
    assert_int_equal(port, 1);
    port = 0;
    assert_int_equal(qpx_device_parse_port(&md->dev, "fake0:2", &port),
                     UCS_ERR_NO_DEVICE);
    assert_int_equal(qpx_device_parse_port(&md->dev, "fake0:x", &port),
                     UCS_ERR_NO_DEVICE);
    assert_int_equal(qpx_device_parse_port(&md->dev, "other0:1", &port),
                     UCS_ERR_NO_DEVICE);
    assert_int_equal(port, 0);
    /* 4x EDR: 4 lanes * 25.78125 Gb/s * 64/66, less headers */
    assert_true(md->dev.ports[0].bandwidth > 11e9);
    assert_true(md->dev.ports[0].bandwidth < 12.5e9);
    md->super.ops->close(&md->super);
}

/* The GID a RoCE port sends from: v2 before v1, IPv4-mapped before global
 * IPv6 before link-local, populated only, lowest index on a tie */
static void test_gid_select(void **state)
{
    roce_table_init();
    assert_int_equal(qpx_device_gid_select(roce_gids, 6), 3);
    /* without the IPv4 v2 entry: the global IPv6 v2 one beats IPv4 v1 */
    memset(&roce_gids[3], 0, sizeof(roce_gids[3]));
    assert_int_equal(qpx_device_gid_select(roce_gids, 6), 5);
    /* only RoCE v1: its IPv4-mapped entry */
    roce_gids[1].gid_type = IBV_GID_TYPE_ROCE_V1;
    assert_int_equal(qpx_device_gid_select(roce_gids, 3), 2);
    roce_gids[1].gid_type = IBV_GID_TYPE_ROCE_V2;
    /* link-local only: the v2 one */
    assert_int_equal(qpx_device_gid_select(roce_gids, 2), 1);
    /* a tie: the lower index */
    roce_gids[1].gid_type = IBV_GID_TYPE_ROCE_V1;
    assert_int_equal(qpx_device_gid_select(roce_gids, 2), 0);
    /* nothing populated */
    memset(roce_gids, 0, sizeof(roce_gids));
    assert_int_equal(qpx_device_gid_select(roce_gids, 6), -1);
}

/* A RoCE port's memory domain: the GID chosen, or UCX_QPX_GID_INDEX's; an
 * index naming no populated GID refuses the md; the address handles and
 * QPs name it as their source */
static void test_md_open_roce_gid(void **state)
{
    qpx_md_config_t config = {.reg_overhead = 1e-6, .reg_growth = 1e-9};
    qpx_device_addr_t addr;
    struct ibv_ah_attr ah;
    uct_md_h md = NULL;
    qpx_md_t *qmd;

    port_eth = 1;
    roce_table_init();
    config.gid_index = QPX_DEVICE_GID_AUTO;
    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_OK);
    qmd = ucs_derived_of(md, qpx_md_t);
    assert_true(qmd->dev.ports[0].is_eth);
    assert_int_equal(qmd->dev.ports[0].gid_index, 3);
    assert_memory_equal(qmd->dev.ports[0].gid.raw, roce_gids[3].gid.raw, 16);
    qpx_device_addr_get(&qmd->dev.ports[0], &addr);
    assert_memory_equal(addr.gid, roce_gids[3].gid.raw, 16);
    qpx_device_ah_attr(&addr, 1, qmd->dev.ports[0].gid_index, &ah);
    assert_int_equal(ah.is_global, 1);
    assert_int_equal(ah.grh.sgid_index, 3);
    md->ops->close(md);

    config.gid_index = 1;
    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_OK);
    assert_int_equal(ucs_derived_of(md, qpx_md_t)->dev.ports[0].gid_index, 1);
    md->ops->close(md);

    config.gid_index = 4; /* empty */
    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_ERR_INVALID_PARAM);
    config.gid_index = 9; /* beyond the table */
    assert_int_equal(qpx_md_open(&qpx_component, "fake0", &config.super, &md),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(ctx_live, 0);
    port_eth = 0;
}

static void test_version_mismatch(void **state)
{
    runtime_version_fails   = 0;
    runtime_major           = 1;
    runtime_minor           = QPX_UCX_BUILD_MINOR + 3;
    component_registrations = 0;
    assert_int_equal(qpx_component_register(), UCS_ERR_UNSUPPORTED);
    assert_int_equal(component_registrations, 0);

    runtime_version_fails = 1;
    assert_int_equal(qpx_component_register(), UCS_ERR_UNSUPPORTED);
    assert_int_equal(component_registrations, 0);
}

/* The same release built with statistics: its layouts differ, refused */
static void test_version_stats_build(void **state)
{
    runtime_version_fails   = 0;
    runtime_major           = QPX_UCX_BUILD_MAJOR;
    runtime_minor           = QPX_UCX_BUILD_MINOR;
    runtime_has_stats       = 1;
    component_registrations = 0;
    assert_int_equal(qpx_component_register(), UCS_ERR_UNSUPPORTED);
    assert_int_equal(component_registrations, 0);
    runtime_has_stats = 0;
}

static void test_version_match_registers_once(void **state)
{
    runtime_version_fails   = 0;
    runtime_major           = QPX_UCX_BUILD_MAJOR;
    runtime_minor           = QPX_UCX_BUILD_MINOR;
    component_registrations = 0;
    cm_registrations        = 0;
    assert_int_equal(qpx_component_register(), UCS_OK);
    assert_int_equal(qpx_component_register(), UCS_OK);
    assert_int_equal(component_registrations, 1);
    assert_int_equal(cm_registrations, (qpx_component_cm.open != NULL));
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_query_resources_no_device, test_setup),
        cmocka_unit_test_setup(test_version_stats_build, test_setup),
        cmocka_unit_test_setup(test_query_resources_one_device, test_setup),
        cmocka_unit_test_setup(test_md_open_unknown_device, test_setup),
        cmocka_unit_test_setup(test_md_open_device_fails, test_setup),
        cmocka_unit_test_setup(test_md_open_pd_fails, test_setup),
        cmocka_unit_test_setup(test_md_async_events, test_setup),
        cmocka_unit_test_setup(test_md_async_fd_bad, test_setup),
        cmocka_unit_test_setup(test_md_query, test_setup),
        cmocka_unit_test_setup(test_mem_reg_enomem, test_setup),
        cmocka_unit_test_setup(test_mem_reg_rkey_roundtrip, test_setup),
        cmocka_unit_test_setup(test_mem_dereg_invalidate, test_setup),
        cmocka_unit_test_setup(test_access_flags, test_setup),
        cmocka_unit_test_setup(test_device_parse_port, test_setup),
        cmocka_unit_test_setup(test_gid_select, test_setup),
        cmocka_unit_test_setup(test_md_open_roce_gid, test_setup),
        cmocka_unit_test_setup(test_version_mismatch, test_setup),
        /* last: registration is once per process */
        cmocka_unit_test_setup(test_version_match_registers_once, test_setup),
    };

    return cmocka_run_group_tests_name("qpx md and component", tests, NULL,
                                       NULL);
}
