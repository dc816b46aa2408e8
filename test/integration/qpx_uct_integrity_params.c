/*
 * UCT's parameter contract, part of the UCT data-integrity test
 * (qpx_uct_integrity.c): an active message id out of range, a length
 * above the interface's caps (put and am short, get bcopy, zero-copy
 * totals, an am_zcopy header) and more iov entries than max_iov are
 * refused with UCS_ERR_INVALID_PARAM, without a crash. Nothing of them may
 * reach the target: test_am, which runs after, counts every AM the target
 * received against what it sent.
 *
 * A refusal for want of resources (an endpoint still connecting) is
 * retried, as UCX's gtest does.
 *
 * A bcopy pack callback that writes more than max_bcopy is not tried here:
 * it writes past the send buffer before the transport can see its length
 * (UCX's gtest does it with one byte; that case runs there).
 */
#include "qpx_uct_integrity.h"

#include <stdio.h>
#include <string.h>

#define PARAMS_MAX_IOV 64

static void expect_invalid(ucs_status_t status, const char *what)
{
    char line[160];

    snprintf(line, sizeof(line), "refused: %s (%s)", what,
             ucs_status_string(status));
    (status == UCS_ERR_INVALID_PARAM) ? pass(line) : fail(line);
}

/* n iov entries of one byte each over c->buf */
static size_t params_iov(ctx_t *c, uct_iov_t *iov, size_t n)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        iov[i].buffer = (char*)c->buf + i;
        iov[i].length = 1;
        iov[i].memh   = c->memh;
        iov[i].stride = 0;
        iov[i].count  = 1;
    }
    return n;
}

static void test_params_am(ctx_t *c)
{
    const uct_iface_attr_t *a = &c->attr;
    uct_iov_t iov[PARAMS_MAX_IOV];
    pack_arg_t arg = {c->buf, 8, NULL};
    ucs_status_t status;
    comp_t comp;
    ssize_t ret;

    comp_init(&comp);
    if (a->cap.flags & UCT_IFACE_FLAG_AM_SHORT) {
        status = RETRY(c, uct_ep_am_short(c->ep, UCT_AM_ID_MAX, 0, c->buf, 8));
        expect_invalid(status, "am_short with id UCT_AM_ID_MAX");
        /* max_short counts the 8-byte header */
        status = RETRY(c, uct_ep_am_short(c->ep, AM_ID, 0, c->buf,
                                          a->cap.am.max_short - 8 + 1));
        expect_invalid(status, "am_short one byte above max_short");
    }
    if (a->cap.flags & UCT_IFACE_FLAG_AM_BCOPY) {
        while ((ret = uct_ep_am_bcopy(c->ep, UCT_AM_ID_MAX, pack_cb, &arg,
                                      0)) == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(c->worker);
        }
        expect_invalid((ucs_status_t)ret, "am_bcopy with id UCT_AM_ID_MAX");
    }
    if (!(a->cap.flags & UCT_IFACE_FLAG_AM_ZCOPY)) {
        return;
    }
    status = RETRY(c, uct_ep_am_zcopy(c->ep, UCT_AM_ID_MAX, c->buf, 8, iov,
                                      params_iov(c, iov, 1), 0, &comp.super));
    expect_invalid(status, "am_zcopy with id UCT_AM_ID_MAX");
    status = RETRY(c, uct_ep_am_zcopy(c->ep, AM_ID, c->buf,
                                      a->cap.am.max_hdr + 1, iov,
                                      params_iov(c, iov, 1), 0, &comp.super));
    expect_invalid(status, "am_zcopy header one byte above max_hdr");
    if (a->cap.am.max_iov < PARAMS_MAX_IOV) {
        status = RETRY(c, uct_ep_am_zcopy(c->ep, AM_ID, c->buf, 0, iov,
                                          params_iov(c, iov,
                                                     a->cap.am.max_iov + 1),
                                          0, &comp.super));
        expect_invalid(status, "am_zcopy with max_iov + 1 entries");
    }
    if (a->cap.am.max_zcopy < BUF_SIZE) {
        iov[0].length = a->cap.am.max_zcopy + 1;
        status = RETRY(c, uct_ep_am_zcopy(c->ep, AM_ID, c->buf, 0, iov, 1, 0,
                                          &comp.super));
        expect_invalid(status, "am_zcopy one byte above max_zcopy");
    }
}

static void test_params_rma(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    const uct_iface_attr_t *a = &c->attr;
    uct_iov_t iov[PARAMS_MAX_IOV];
    ucs_status_t status;
    comp_t comp;
    size_t n;

    comp_init(&comp);
    if ((a->cap.flags & UCT_IFACE_FLAG_PUT_SHORT) &&
        (a->cap.put.max_short < BUF_SIZE)) {
        status = RETRY(c, uct_ep_put_short(c->ep, c->buf,
                                           a->cap.put.max_short + 1, raddr,
                                           rkey));
        expect_invalid(status, "put_short one byte above max_short");
    }
    if ((a->cap.flags & UCT_IFACE_FLAG_GET_BCOPY) &&
        (a->cap.get.max_bcopy < BUF_SIZE)) {
        status = RETRY(c, uct_ep_get_bcopy(c->ep, unpack_cb, c->buf,
                                           a->cap.get.max_bcopy + 1, raddr,
                                           rkey, &comp.super));
        expect_invalid(status, "get_bcopy one byte above max_bcopy");
    }
    if (a->cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) {
        if (a->cap.put.max_iov < PARAMS_MAX_IOV) {
            n      = params_iov(c, iov, a->cap.put.max_iov + 1);
            status = RETRY(c, uct_ep_put_zcopy(c->ep, iov, n, raddr, rkey,
                                               &comp.super));
            expect_invalid(status, "put_zcopy with max_iov + 1 entries");
        }
        if (a->cap.put.max_zcopy < BUF_SIZE) {
            params_iov(c, iov, 1);
            iov[0].length = a->cap.put.max_zcopy + 1;
            status = RETRY(c, uct_ep_put_zcopy(c->ep, iov, 1, raddr, rkey,
                                               &comp.super));
            expect_invalid(status, "put_zcopy one byte above max_zcopy");
        }
    }
    if ((a->cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) &&
        (a->cap.get.max_iov < PARAMS_MAX_IOV)) {
        status = RETRY(c, uct_ep_get_zcopy(c->ep, iov,
                                           params_iov(c, iov,
                                                      a->cap.get.max_iov + 1),
                                           raddr, rkey, &comp.super));
        expect_invalid(status, "get_zcopy with max_iov + 1 entries");
    }
}

void test_params(ctx_t *c, uct_rkey_t rkey, uint64_t raddr)
{
    test_params_am(c);
    test_params_rma(c, rkey, raddr);
}
