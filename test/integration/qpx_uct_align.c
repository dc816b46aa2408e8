/*
 * The AM alignment of uct_iface_open (am_alignment, am_align_offset), one
 * process, two interfaces of one transport on one worker:
 *   qpx_uct_align -x TL -d DEV
 * An alignment that is not a power of two (0, 3, 24) and an offset without
 * an alignment are refused with UCS_ERR_INVALID_PARAM. For alignments 1
 * to 4096 with offsets 0 and 5 (where smaller), a receiver opened with
 * them gets every AM whose data it is handed in the interface's own buffer
 * (UCT_CB_PARAM_FLAG_DESC) at an address where data + offset is aligned,
 * and the bytes intact (am_bcopy and am_zcopy of 1 to max bytes).
 * Prints "N passed, N failed"; exit 0 when none failed, 77 when TL is not
 * there.
 */
#include "qpx_uct_open.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN_AM_ID 7

typedef struct {
    size_t   align, offset;
    uint8_t  seed;
    size_t   expected;
    int      received, misaligned, corrupt, desc;
} align_rx_t;

static uct_worker_h worker;

static ucs_status_t align_am_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    align_rx_t *rx = arg;
    const uint8_t *p = data;
    size_t i;

    ++rx->received;
    if (flags & UCT_CB_PARAM_FLAG_DESC) {
        ++rx->desc;
        rx->misaligned += (((uintptr_t)data + rx->offset) % rx->align) != 0;
    }
    rx->corrupt += (length != rx->expected);
    for (i = 0; (i < length) && (i < rx->expected); ++i) {
        rx->corrupt += (p[i] != (uint8_t)(rx->seed + i));
        if (p[i] != (uint8_t)(rx->seed + i)) {
            break;
        }
    }
    return UCS_OK;
}

typedef struct {
    const uint8_t *src;
    size_t        len;
} align_pack_t;

static size_t align_pack(void *dest, void *arg)
{
    align_pack_t *pa = arg;

    memcpy(dest, pa->src, pa->len);
    return pa->len;
}

/* tl on dev of md with the alignment fields of field_mask; its status */
static ucs_status_t align_iface_open(uct_md_h md, const char *tl,
                                     const char *dev, uint64_t field_mask,
                                     size_t align, size_t offset,
                                     uct_iface_h *iface_p)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, tl, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE | field_mask;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl;
    params.mode.device.dev_name = dev;
    params.am_alignment         = align;
    params.am_align_offset      = offset;
    status = uct_iface_open(md, worker, &params, config, iface_p);
    uct_config_release(config);
    if (status == UCS_OK) {
        uct_iface_progress_enable(*iface_p, UCT_PROGRESS_SEND |
                                            UCT_PROGRESS_RECV);
    }
    return status;
}

/* Send one AM of len bytes (zcopy from the registered buf), wait for it */
static int align_send(uct_ep_h ep, align_rx_t *rx, int zcopy, uint8_t *buf,
                      uct_mem_h memh, size_t len)
{
    align_pack_t pa = {buf, len};
    uct_iov_t iov = {buf, len, memh, 0, 1};
    ucs_status_t status;
    int i, before = rx->received;
    ssize_t ret;

    for (i = 0; i < (int)len; ++i) {
        buf[i] = (uint8_t)(rx->seed + i);
    }
    rx->expected = len;
    do {
        if (zcopy) {
            status = uct_ep_am_zcopy(ep, ALIGN_AM_ID, NULL, 0, &iov, 1, 0,
                                     NULL);
        } else {
            ret    = uct_ep_am_bcopy(ep, ALIGN_AM_ID, align_pack, &pa, 0);
            status = (ret < 0) ? (ucs_status_t)ret : UCS_OK;
        }
        uct_worker_progress(worker);
    } while (status == UCS_ERR_NO_RESOURCE);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        return -1;
    }
    for (i = 0; (i < 2000000) && (rx->received == before); ++i) {
        uct_worker_progress(worker);
    }
    return (rx->received == before + 1) ? 0 : -1;
}

static void align_case(uct_md_h md, const char *tl, const char *dev,
                       size_t align, size_t offset, uint8_t *buf,
                       uct_mem_h memh)
{
    align_rx_t rx = {align, offset, (uint8_t)(align + offset), 0, 0, 0, 0, 0};
    uct_iface_h recv_iface, send_iface;
    uct_ep_h ep, back;
    uct_iface_attr_t attr;
    size_t len, max;
    int zcopy, lost = 0;

    if ((align_iface_open(md, tl, dev, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                          UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET, align, offset,
                          &recv_iface) != UCS_OK) ||
        (align_iface_open(md, tl, dev, 0, 0, 0, &send_iface) != UCS_OK)) {
        qpx_uct_report(0, "alignment %zu offset %zu: the interfaces open",
                       align, offset);
        return;
    }
    uct_iface_set_am_handler(recv_iface, ALIGN_AM_ID, align_am_cb, &rx, 0);
    uct_iface_query(send_iface, &attr);
    if (qpx_uct_connect_pair(send_iface, recv_iface, &ep, &back)) {
        qpx_uct_report(0, "alignment %zu offset %zu: connect", align, offset);
        goto out;
    }
    for (zcopy = 0; zcopy < 2; ++zcopy) {
        max = zcopy ? attr.cap.am.max_zcopy : attr.cap.am.max_bcopy;
        if (!(attr.cap.flags & (zcopy ? UCT_IFACE_FLAG_AM_ZCOPY :
                                        UCT_IFACE_FLAG_AM_BCOPY))) {
            continue;
        }
        for (len = 1; len <= max; len = (len * 8 > max && len < max) ?
                                        max : len * 8) {
            rx.seed += 3;
            lost += (align_send(ep, &rx, zcopy, buf, memh, len) != 0);
            if (len == max) {
                break;
            }
        }
    }
    qpx_uct_report((lost == 0) && (rx.misaligned == 0) && (rx.corrupt == 0) &&
                   (rx.desc > 0),
                   "alignment %zu offset %zu: %d AMs, %d in the interface's "
                   "buffers, %d misaligned, %d corrupt, %d lost", align,
                   offset, rx.received, rx.desc, rx.misaligned, rx.corrupt,
                   lost);
    uct_ep_destroy(ep);
    if (back != NULL) {
        uct_ep_destroy(back);
    }
out:
    uct_iface_close(send_iface);
    uct_iface_close(recv_iface);
}

int main(int argc, char **argv)
{
    static const struct { size_t align, offset; uint64_t fields; }
    invalid[] = {
        {0, 0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
        {3, 1, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
        {24, 0, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT},
        {0, 11, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET},
        {8, 8, UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET}
    };
    const char *tl = NULL, *dev = "softverbs0:1";
    ucs_async_context_t *async;
    uct_component_h comp;
    uct_iface_h iface;
    uct_mem_h memh;
    ucs_status_t status;
    size_t align, i;
    uct_md_h md;
    void *buf;
    int opt, ret;

    while ((opt = getopt(argc, argv, "x:d:")) != -1) {
        if (opt == 'x') {
            tl = optarg;
        } else if (opt == 'd') {
            dev = optarg;
        }
    }
    if (tl == NULL) {
        fprintf(stderr, "usage: %s -x TL [-d DEV]\n", argv[0]);
        return 2;
    }
    ret = qpx_uct_md_open(tl, dev, &comp, &md);
    if (ret != 0) {
        return ret;
    }
    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                  &async) != UCS_OK) ||
        (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK) ||
        (posix_memalign(&buf, 4096, 1 << 20) != 0) ||
        (uct_md_mem_reg(md, buf, 1 << 20, UCT_MD_MEM_ACCESS_ALL,
                        &memh) != UCS_OK)) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }

    for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); ++i) {
        status = align_iface_open(md, tl, dev, invalid[i].fields,
                                  invalid[i].align, invalid[i].offset, &iface);
        if (status == UCS_OK) {
            uct_iface_close(iface);
        }
        qpx_uct_report(status == UCS_ERR_INVALID_PARAM,
                       "alignment %zu offset %zu (%s only): refused (%s)",
                       invalid[i].align, invalid[i].offset,
                       (invalid[i].fields & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) ?
                       "alignment" : "offset", ucs_status_string(status));
    }

    for (align = 1; align <= 4096; align *= 4) {
        align_case(md, tl, dev, align, 0, buf, memh);
        if (align > 5) {
            align_case(md, tl, dev, align, 5, buf, memh);
        }
    }

    uct_md_mem_dereg(md, memh);
    free(buf);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_md_close(md);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
