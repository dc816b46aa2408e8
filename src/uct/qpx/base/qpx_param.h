/*
 * UCT's parameter contract for the operations of every qpx transport. An
 * active message id outside 0..UCT_AM_ID_MAX-1, a length above what the
 * interface reports in uct_iface_attr_t's cap (max_short, max_bcopy,
 * max_zcopy, max_hdr) or more iov entries than max_iov is the caller's
 * error: nothing is sent and no buffer is overrun; the error is logged
 * with what was wrong, as UCX's own transports log it where they are
 * built with parameter checks (Debian's and UCX's release builds are),
 * and returned as UCS_ERR_INVALID_PARAM. UCX's gtest (test_p2p_err.cc)
 * matches "active message id" and "length" in the log.
 *
 * Usage on a send path (the test inline, the log out of line):
 *   if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
 *       return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
 *   }
 */
#ifndef QPX_PARAM_H_
#define QPX_PARAM_H_

#include <ucs/ucx_compat.h>
#include <uct/api/uct.h>


/* Largest header of an am_zcopy (cap.am.max_hdr, or less where the
 * segment is smaller): it is copied into a send buffer */
#define QPX_AM_MAX_HDR 128


/* Log and return UCS_ERR_INVALID_PARAM: id is not below num_ids
 * (UCT_AM_ID_MAX, or fewer where a transport keeps ids of its own) */
ucs_status_t qpx_param_am_id_error(unsigned id, unsigned num_ids);

/* Log and return UCS_ERR_INVALID_PARAM: op's length is above max */
ucs_status_t qpx_param_length_error(const char *op, size_t length,
                                    size_t max);

/* Log and return UCS_ERR_INVALID_PARAM: op got iovcnt entries, takes max */
ucs_status_t qpx_param_iovcnt_error(const char *op, size_t iovcnt,
                                    size_t max);

/*
 * The alignment of received AM payloads a user asks in uct_iface_open's
 * params (am_alignment, am_align_offset), checked: an alignment that is
 * not a power of two, or an offset without an alignment, is logged and
 * refused (UCS_ERR_INVALID_PARAM); an offset not below seg_size is ignored
 * with a diagnostic, as UCX does. Without either, dfl_align and offset 0.
 * On UCS_OK: the payload plus *offset_p is to be aligned to *align_p.
 */
ucs_status_t qpx_param_am_alignment(const uct_iface_params_t *params,
                                    size_t seg_size, size_t dfl_align,
                                    size_t *align_p, size_t *offset_p);

/* Bytes an iov describes */
static UCS_F_ALWAYS_INLINE size_t qpx_iov_total_length(const uct_iov_t *iov,
                                                       size_t iovcnt)
{
    size_t i, total = 0;

    for (i = 0; i < iovcnt; ++i) {
        total += iov[i].length * iov[i].count;
    }
    return total;
}

/*
 * The checks of a zero-copy operation: its iov (iovcnt up to max_iov, up
 * to max_length bytes in all); UCS_OK or the logged error. header_length
 * counts towards max_length (an active message's header travels in the
 * same message).
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_param_check_iov(const char *op, const uct_iov_t *iov, size_t iovcnt,
                    size_t max_iov, size_t header_length, size_t max_length)
{
    size_t length;

    if (ucs_unlikely(iovcnt > max_iov)) {
        return qpx_param_iovcnt_error(op, iovcnt, max_iov);
    }
    length = header_length + qpx_iov_total_length(iov, iovcnt);
    if (ucs_unlikely(length > max_length)) {
        return qpx_param_length_error(op, length, max_length);
    }
    return UCS_OK;
}

/* The checks of an am_zcopy: its id, its header (at most max_payload and
 * QPX_AM_MAX_HDR), its iov (max_iov entries, max_payload bytes with the
 * header); UCS_OK or the logged error */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_param_check_am_zcopy(uint8_t id, unsigned header_length,
                         const uct_iov_t *iov, size_t iovcnt, size_t max_iov,
                         size_t max_payload)
{
    size_t max_hdr = ucs_min(max_payload, QPX_AM_MAX_HDR);

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (ucs_unlikely(header_length > max_hdr)) {
        return qpx_param_length_error("am_zcopy header", header_length,
                                      max_hdr);
    }
    return qpx_param_check_iov("am_zcopy", iov, iovcnt, max_iov,
                               header_length, max_payload);
}

#endif
