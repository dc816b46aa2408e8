/*
 * What the standalone UCP test programs share (qpx_ucp_am.c,
 * qpx_ucp_failover.c): built by their scripts against the UCX they test,
 * so only UCP's public API, inline.
 */
#ifndef QPX_UCP_UTIL_H_
#define QPX_UCP_UTIL_H_

#include <ucp/api/ucp.h>

/* Progress worker until req (a ucp_*_nbx result) completes; its status,
 * the request freed */
static inline ucs_status_t qpx_ucp_wait(ucp_worker_h worker, void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    do {
        ucp_worker_progress(worker);
        status = ucp_request_check_status(req);
    } while (status == UCS_INPROGRESS);
    ucp_request_free(req);
    return status;
}

#endif
