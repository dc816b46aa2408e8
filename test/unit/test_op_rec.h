/*
 * Operations of a unit test that record the order in which they finish and
 * the status each finished with (test_rc_failure, test_dc_dci): queue a
 * test_rec_op_t's op with test_rec_op_cb, then test_rec_op_check.
 */
#ifndef TEST_OP_REC_H_
#define TEST_OP_REC_H_

#include <uct/qpx/base/qpx_ep.h>

#define TEST_REC_OPS_MAX 8

typedef struct {
    qpx_op_t op;
    int      index;     /* its place in posting order */
} test_rec_op_t;

static struct {
    int          done;  /* operations finished */
    int          order[TEST_REC_OPS_MAX];
    ucs_status_t status[TEST_REC_OPS_MAX];
} test_op_rec;


static void test_rec_op_cb(qpx_op_t *op, ucs_status_t status)
{
    test_rec_op_t *rop = ucs_container_of(op, test_rec_op_t, op);

    assert_true(test_op_rec.done < TEST_REC_OPS_MAX);
    test_op_rec.order[test_op_rec.done]  = rop->index;
    test_op_rec.status[test_op_rec.done] = status;
    ++test_op_rec.done;
}


/* n operations finished, in posting order, each with status */
static void test_rec_op_check(int n, ucs_status_t status)
{
    int i;

    assert_int_equal(test_op_rec.done, n);
    for (i = 0; i < n; ++i) {
        assert_int_equal(test_op_rec.order[i], i);
        assert_int_equal(test_op_rec.status[i], status);
    }
}

#endif
