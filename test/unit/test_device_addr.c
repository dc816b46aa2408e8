/*
 * Unit tests of base's device address (qpx_device.h): qpx packs a port's
 * address in the format of UCX's IB transports (a flags byte, then the LID
 * on InfiniBand or the GID on RoCE), and reads that format from any packer,
 * including UCX's rdmacm connection manager, whose addresses carry
 * optional fields after the LID or GID.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_device.h>


static void port_init(qpx_device_port_t *port, int is_eth)
{
    unsigned i;

    memset(port, 0, sizeof(*port));
    port->is_eth   = is_eth;
    port->attr.lid = 0x1234;
    for (i = 0; i < sizeof(port->gid.raw); ++i) {
        port->gid.raw[i] = (uint8_t)(0xa0 + i);
    }
}

static void test_ib_roundtrip(void **state)
{
    uint8_t packed[QPX_DEVICE_ADDR_PACKED_MAX];
    qpx_device_port_t port;
    qpx_device_addr_t addr;

    (void)state;
    port_init(&port, 0);
    assert_int_equal(qpx_device_addr_size(&port), 3);
    memset(packed, 0xee, sizeof(packed));
    qpx_device_addr_pack(&port, packed);
    assert_int_equal(packed[0], 0);               /* IB, no optional field */
    assert_int_equal(packed[3], 0xee);            /* nothing beyond the size */
    qpx_device_addr_unpack(packed, &addr);
    assert_int_equal(addr.lid, 0x1234);
    assert_int_equal(addr.flags, 0);
    assert_true(qpx_device_addr_is_reachable(&port, &addr));
}

static void test_eth_roundtrip(void **state)
{
    uint8_t packed[QPX_DEVICE_ADDR_PACKED_MAX];
    qpx_device_port_t port, ib_port;
    qpx_device_addr_t addr;

    (void)state;
    port_init(&port, 1);
    port_init(&ib_port, 0);
    assert_int_equal(qpx_device_addr_size(&port), 17);
    memset(packed, 0xee, sizeof(packed));
    qpx_device_addr_pack(&port, packed);
    assert_int_equal(packed[0], UCS_BIT(3));      /* link layer Ethernet */
    assert_memory_equal(packed + 1, port.gid.raw, 16);
    assert_int_equal(packed[17], 0xee);
    qpx_device_addr_unpack(packed, &addr);
    assert_true(addr.flags & QPX_DEVICE_ADDR_FLAG_ETH);
    assert_true(addr.flags & QPX_DEVICE_ADDR_FLAG_GID);
    assert_memory_equal(addr.gid, port.gid.raw, 16);
    assert_true(qpx_device_addr_is_reachable(&port, &addr));
    /* a RoCE address is not reachable from an InfiniBand port */
    assert_false(qpx_device_addr_is_reachable(&ib_port, &addr));
}

/* As UCX's packer writes them: optional fields after the LID or GID are
 * skipped, the LID or GID is what is read */
static void test_ucx_format_optional_fields(void **state)
{
    /* IB: flags PATH_MTU|PKEY|IF_ID (bits 1, 2, 6), LID 0x0042 */
    const uint8_t ib[] = {0x46, 0x42, 0x00, 1, 2, 3, 4, 5, 6, 7, 8,
                          0x04, 0xff, 0xff};
    /* RoCE v2 IPv4 (the version above bit 4), GID index 3 */
    uint8_t eth[1 + 16 + 1];
    qpx_device_port_t ib_port, eth_port;
    qpx_device_addr_t addr;
    unsigned i;

    (void)state;
    port_init(&ib_port, 0);
    port_init(&eth_port, 1);
    qpx_device_addr_unpack(ib, &addr);
    assert_int_equal(addr.lid, 0x42);
    assert_false(addr.flags & QPX_DEVICE_ADDR_FLAG_ETH);
    assert_true(qpx_device_addr_is_reachable(&ib_port, &addr));
    assert_false(qpx_device_addr_is_reachable(&eth_port, &addr));

    eth[0] = UCS_BIT(3) | UCS_BIT(0) | (2 << 5);
    for (i = 0; i < 16; ++i) {
        eth[1 + i] = (uint8_t)i;
    }
    eth[17] = 3;
    qpx_device_addr_unpack(eth, &addr);
    assert_true(addr.flags & QPX_DEVICE_ADDR_FLAG_ETH);
    assert_memory_equal(addr.gid, eth + 1, 16);
    assert_true(qpx_device_addr_is_reachable(&eth_port, &addr));
}

/* LID 0 is no InfiniBand address */
static void test_ib_lid_zero_unreachable(void **state)
{
    const uint8_t ib[] = {0x00, 0x00, 0x00};
    qpx_device_port_t port;
    qpx_device_addr_t addr;

    (void)state;
    port_init(&port, 0);
    qpx_device_addr_unpack(ib, &addr);
    assert_false(qpx_device_addr_is_reachable(&port, &addr));
}

/* The source of a UD packet from its GRH area: an IPv6 GRH's source GID,
 * or for RoCE v2 over IPv4 the IPv4 header's source address in the area's
 * last 20 bytes (as mlx5 and rxe place it), matched to a v4-mapped GID */
static void test_grh_src(void **state)
{
    static const uint8_t v4_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff, 10, 1, 2, 3};
    uint8_t other[16], area[40];
    unsigned i;

    (void)state;
    memcpy(other, v4_gid, sizeof(other));
    other[15] = 4;
    /* IPv6 GRH: version 6, source GID at bytes 8..23 */
    memset(area, 0, sizeof(area));
    area[0] = 0x60;
    memcpy(area + 8, v4_gid, 16);
    assert_true(qpx_device_grh_src_is(area, v4_gid));
    assert_false(qpx_device_grh_src_is(area, other));
    /* IPv4 header in the last 20 bytes: version 4, source at 32..35 */
    memset(area, 0, sizeof(area));
    area[20] = 0x45;
    memcpy(area + 32, v4_gid + 12, 4);
    memcpy(area + 36, other + 12, 4);
    assert_true(qpx_device_grh_src_is(area, v4_gid));
    assert_false(qpx_device_grh_src_is(area, other));
    /* an IPv6 (not v4-mapped) GID never matches an IPv4 header */
    for (i = 0; i < 16; ++i) {
        other[i] = (uint8_t)(0xfd + i);
    }
    memcpy(area + 32, other + 12, 4);
    assert_false(qpx_device_grh_src_is(area, other));
    /* neither form: no match */
    memset(area, 0, sizeof(area));
    assert_false(qpx_device_grh_src_is(area, v4_gid));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ib_roundtrip),
        cmocka_unit_test(test_eth_roundtrip),
        cmocka_unit_test(test_ucx_format_optional_fields),
        cmocka_unit_test(test_ib_lid_zero_unreachable),
        cmocka_unit_test(test_grh_src),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
