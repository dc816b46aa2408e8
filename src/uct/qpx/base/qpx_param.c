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
