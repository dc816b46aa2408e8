/*
 * Unit tests of base's endpoint table (qpx_ep_table.h): ids with
 * generations, stale ids, slot reuse, growth, and growth failures that must
 * leave the table as it was (realloc wrapped to fail on demand).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <uct/qpx/base/qpx_ep_table.h>


/* realloc calls left before one fails (-1: never) */
static int realloc_fail_in = -1;

void *__real_realloc(void *ptr, size_t size);

void *__wrap_realloc(void *ptr, size_t size)
{
    if ((realloc_fail_in >= 0) && (realloc_fail_in-- == 0)) {
        return NULL;
    }
    return __real_realloc(ptr, size);
}


static void test_add_lookup_remove(void **state)
{
    qpx_ep_table_t table;
    uint32_t id[3], stale;
    int objs[3];
    unsigned i;

    (void)state;
    qpx_ep_table_init(&table);
    assert_null(qpx_ep_table_lookup(&table, 0));
    assert_null(qpx_ep_table_lookup(&table, QPX_EP_ID_NULL));

    for (i = 0; i < 3; ++i) {
        assert_int_equal(qpx_ep_table_add(&table, &objs[i], &id[i]), UCS_OK);
        assert_int_not_equal(id[i], QPX_EP_ID_NULL);
    }
    assert_int_equal(table.count, 3);
    for (i = 0; i < 3; ++i) {
        assert_ptr_equal(qpx_ep_table_lookup(&table, id[i]), &objs[i]);
    }

    /* The freed slot's old id finds nothing, before and after reuse */
    stale = id[1];
    qpx_ep_table_remove(&table, id[1]);
    assert_null(qpx_ep_table_lookup(&table, stale));
    assert_int_equal(table.count, 2);
    assert_int_equal(qpx_ep_table_add(&table, &objs[1], &id[1]), UCS_OK);
    assert_int_equal(id[1] & QPX_EP_ID_IDX_MASK, stale & QPX_EP_ID_IDX_MASK);
    assert_int_not_equal(id[1], stale);
    assert_null(qpx_ep_table_lookup(&table, stale));
    assert_ptr_equal(qpx_ep_table_lookup(&table, id[1]), &objs[1]);

    /* An index beyond the table (also one that the table's size maps onto
     * a slot in use), or a never-used generation */
    assert_null(qpx_ep_table_lookup(&table, QPX_EP_ID_IDX_MASK));
    assert_null(qpx_ep_table_lookup(&table, id[0] + table.capacity));
    assert_null(qpx_ep_table_lookup(&table,
                                    id[0] + (5u << QPX_EP_ID_IDX_BITS)));
    qpx_ep_table_cleanup(&table);
}


/* A slot's generation wraps after 2^12 reuses; ids still differ from the
 * previous one */
static void test_generation_wrap(void **state)
{
    qpx_ep_table_t table;
    uint32_t id, prev;
    unsigned i;
    int obj;

    (void)state;
    qpx_ep_table_init(&table);
    assert_int_equal(qpx_ep_table_add(&table, &obj, &prev), UCS_OK);
    for (i = 0; i < (QPX_EP_ID_GEN_MASK + 1) * 2; ++i) {
        qpx_ep_table_remove(&table, prev);
        assert_int_equal(qpx_ep_table_add(&table, &obj, &id), UCS_OK);
        assert_int_not_equal(id, prev);
        assert_null(qpx_ep_table_lookup(&table, prev));
        assert_ptr_equal(qpx_ep_table_lookup(&table, id), &obj);
        prev = id;
    }
    qpx_ep_table_cleanup(&table);
}


/* Many endpoints: the table grows, every id stays valid and distinct */
static void test_grow(void **state)
{
    const unsigned n = 10000;
    qpx_ep_table_t table;
    uint32_t *ids;
    unsigned i;

    (void)state;
    ids = calloc(n, sizeof(*ids));
    assert_non_null(ids);
    qpx_ep_table_init(&table);
    for (i = 0; i < n; ++i) {
        assert_int_equal(qpx_ep_table_add(&table, &ids[i], &ids[i]), UCS_OK);
    }
    assert_true(table.capacity >= n);
    for (i = 0; i < n; ++i) {
        assert_ptr_equal(qpx_ep_table_lookup(&table, ids[i]), &ids[i]);
    }
    for (i = 0; i < n; i += 2) {
        qpx_ep_table_remove(&table, ids[i]);
    }
    for (i = 0; i < n; ++i) {
        if (i % 2) {
            assert_ptr_equal(qpx_ep_table_lookup(&table, ids[i]), &ids[i]);
        } else {
            assert_null(qpx_ep_table_lookup(&table, ids[i]));
        }
    }
    assert_int_equal(table.count, n / 2);
    qpx_ep_table_cleanup(&table);
    free(ids);
}


/* Growth fails at its allocation (the slot array): an error, and the table
 * keeps working with what it had; the allocation after it succeeds */
static void test_grow_failure(void **state)
{
    qpx_ep_table_t table;
    uint32_t id, first;
    int obj;
    unsigned i, cap;

    (void)state;
    qpx_ep_table_init(&table);
    assert_int_equal(qpx_ep_table_add(&table, &obj, &first), UCS_OK);
    cap = table.capacity;
    for (i = 1; i < cap; ++i) {
        assert_int_equal(qpx_ep_table_add(&table, &obj, &id), UCS_OK);
    }

    realloc_fail_in = 0;
    assert_int_equal(qpx_ep_table_add(&table, &obj, &id),
                     UCS_ERR_NO_MEMORY);
    assert_int_equal(realloc_fail_in, -1); /* it was the one that failed */
    realloc_fail_in = -1;
    assert_int_equal(table.capacity, cap);
    assert_int_equal(table.count, cap);
    assert_ptr_equal(qpx_ep_table_lookup(&table, first), &obj);

    /* A freed slot is still given out, and growth works again */
    qpx_ep_table_remove(&table, first);
    assert_int_equal(qpx_ep_table_add(&table, &obj, &id), UCS_OK);
    assert_int_equal(qpx_ep_table_add(&table, &obj, &id), UCS_OK);
    assert_true(table.capacity > cap);
    assert_ptr_equal(qpx_ep_table_lookup(&table, id), &obj);
    qpx_ep_table_cleanup(&table);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_lookup_remove),
        cmocka_unit_test(test_generation_wrap),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_grow_failure)
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
