/*
 * The logged errors of UCT's parameter contract (qpx_param.h): out of the
 * fast paths, which test and call them only on a caller's error.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_param.h"


ucs_status_t qpx_param_am_id_error(unsigned id, unsigned num_ids)
{
    ucs_error("Invalid active message id %u (valid range: 0..%u)", id,
              num_ids - 1);
    return UCS_ERR_INVALID_PARAM;
}


ucs_status_t qpx_param_length_error(const char *op, size_t length,
                                    size_t max)
{
    ucs_error("Invalid %s length: %zu (expected: <= %zu)", op, length, max);
    return UCS_ERR_INVALID_PARAM;
}


ucs_status_t qpx_param_iovcnt_error(const char *op, size_t iovcnt,
                                    size_t max)
{
    ucs_error("Invalid %s iov count: %zu (expected: <= %zu)", op, iovcnt,
              max);
    return UCS_ERR_INVALID_PARAM;
}


ucs_status_t qpx_param_am_alignment(const uct_iface_params_t *params,
                                    size_t seg_size, size_t dfl_align,
                                    size_t *align_p, size_t *offset_p)
{
    size_t align, offset;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT)) {
        if (params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) {
            ucs_error("AM alignment offset %zu has no effect without an "
                      "alignment", params->am_align_offset);
            return UCS_ERR_INVALID_PARAM;
        }
        *align_p  = dfl_align;
        *offset_p = 0;
        return UCS_OK;
    }

    align = params->am_alignment;
    if ((align == 0) || ((align & (align - 1)) != 0)) {
        ucs_error("AM alignment %zu is not a power of 2", align);
        return UCS_ERR_INVALID_PARAM;
    }

    offset = (params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) ?
             params->am_align_offset : 0;
    if (offset >= seg_size) {
        ucs_diag("AM alignment offset %zu ignored: it must be less than the "
                 "segment size %zu", offset, seg_size);
        offset = 0;
    }

    *align_p  = align;
    *offset_p = offset;
    return UCS_OK;
}
