/*
 * Unit tests of the connection manager's private-data header (qpx_cm.h):
 * what qpx_cm_priv_pack writes, qpx_cm_priv_is_valid takes back whole, and
 * anything else (short, lying about its length, another kind, a bit
 * flipped, random bytes) it refuses, before UCP would read it as an
 * address.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <uct/qpx/cm/qpx_cm.h>

#include <stdlib.h>
#include <string.h>


/* A packed request of length bytes of UCP's data in buf */
static size_t pack_request(uint8_t *buf, size_t length)
{
    size_t i;

    for (i = 0; i < length; ++i) {
        buf[sizeof(qpx_cm_priv_hdr_t) + i] = (uint8_t)(i * 7 + 3);
    }
    qpx_cm_priv_pack((qpx_cm_priv_hdr_t*)buf, QPX_CM_PRIV_CONNECT, length);
    return sizeof(qpx_cm_priv_hdr_t) + length;
}

static void test_roundtrip(void **state)
{
    uint8_t buf[QPX_CM_PRIV_DATA_LEN];
    size_t length, len;

    assert_int_equal(qpx_cm_max_conn_priv(),
                     QPX_CM_PRIV_DATA_LEN - sizeof(qpx_cm_priv_hdr_t));
    for (length = 0; length <= qpx_cm_max_conn_priv(); ++length) {
        memset(buf, 0, sizeof(buf));
        len = pack_request(buf, length);
        assert_int_equal(qpx_cm_priv_kind((qpx_cm_priv_hdr_t*)buf),
                         QPX_CM_PRIV_CONNECT);
        assert_int_equal(qpx_cm_priv_length((qpx_cm_priv_hdr_t*)buf), length);
        assert_true(qpx_cm_priv_is_valid((qpx_cm_priv_hdr_t*)buf, len));
        /* librdmacm pads a REQ's private data: the received length is
         * larger than what was packed */
        assert_true(qpx_cm_priv_is_valid((qpx_cm_priv_hdr_t*)buf,
                                         QPX_CM_PRIV_DATA_LEN));
    }
}

static void test_refused(void **state)
{
    uint8_t buf[QPX_CM_PRIV_DATA_LEN];
    qpx_cm_priv_hdr_t *hdr = (qpx_cm_priv_hdr_t*)buf;
    size_t len, bit;

    /* no data, or less than a header; a flipped length bit may make the
     * check cover the bytes after the request: zeroed, not undefined */
    memset(buf, 0, sizeof(buf));
    assert_false(qpx_cm_priv_is_valid(NULL, 0));
    len = pack_request(buf, 20);
    assert_false(qpx_cm_priv_is_valid(hdr, 0));
    assert_false(qpx_cm_priv_is_valid(hdr, sizeof(*hdr) - 1));
    /* a header claiming more than was received */
    assert_false(qpx_cm_priv_is_valid(hdr, len - 1));
    /* every single bit flipped in the header and the data it covers */
    for (bit = 0; bit < len * 8; ++bit) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_false(qpx_cm_priv_is_valid(hdr, QPX_CM_PRIV_DATA_LEN));
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    assert_true(qpx_cm_priv_is_valid(hdr, len));
    /* another kind, with a correct check: a reject is not a request */
    qpx_cm_priv_pack(hdr, QPX_CM_PRIV_REJECT, 20);
    assert_false(qpx_cm_priv_is_valid(hdr, len));
}

/* Random bytes of random lengths: at most a CRC collision's share passes
 * (1 in 65536 of those whose kind and length fit), never a length beyond
 * what arrived */
static void test_random(void **state)
{
    uint8_t buf[QPX_CM_PRIV_DATA_LEN];
    unsigned i, passed = 0;
    size_t len, j;

    srand(12345);
    for (i = 0; i < 100000; ++i) {
        len = (size_t)rand() % (sizeof(buf) + 1);
        for (j = 0; j < len; ++j) {
            buf[j] = (uint8_t)rand();
        }
        if (qpx_cm_priv_is_valid((qpx_cm_priv_hdr_t*)buf, len)) {
            assert_true(sizeof(qpx_cm_priv_hdr_t) +
                        qpx_cm_priv_length((qpx_cm_priv_hdr_t*)buf) <= len);
            ++passed;
        }
    }
    print_message("%u of 100000 random buffers passed the check\n", passed);
    assert_true(passed <= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_random),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
