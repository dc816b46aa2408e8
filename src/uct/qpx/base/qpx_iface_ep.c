/*
 * What an interface does over its endpoints, for every transport: flush
 * them all with one completion scheme, and report one that failed.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ep.h"

#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>


/* The completion every endpoint flush of one interface flush counts down;
 * it calls the user's, unless the interface flush was given up */
typedef struct qpx_iface_flush_req {
    uct_completion_t super;
    uct_completion_t *comp;  /* the user's; NULL: given up, call nobody */
} qpx_iface_flush_req_t;


static void qpx_iface_flush_req_done(uct_completion_t *self)
{
    qpx_iface_flush_req_t *req = ucs_container_of(self, qpx_iface_flush_req_t,
                                                  super);

    if (req->comp != NULL) {
        qpx_invoke_completion(req->comp, self->status);
    }
    free(req);
}


ucs_status_t qpx_iface_flush_eps(qpx_iface_t *iface, unsigned flags,
                                 uct_completion_t *comp, ucs_list_link_t *eps,
                                 size_t link_offset,
                                 uct_ep_flush_func_t ep_flush)
{
    qpx_iface_flush_req_t *req = NULL;
    ucs_list_link_t *link, *next;
    unsigned in_progress;
    ucs_status_t status;
    uct_ep_h ep;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* Each endpoint's outstanding operations complete with
         * UCS_ERR_CANCELED before its flush returns: nothing is left for
         * comp to wait for (UCS_OK: it is not called) */
        for (link = eps->next; link != eps; link = next) {
            next = link->next; /* the flush may unlink the endpoint */
            ep   = UCS_PTR_BYTE_OFFSET(link, -(ptrdiff_t)link_offset);
            (void)ep_flush(ep, flags, NULL);
        }
        return UCS_OK;
    }

    /* Requests still queued are not issued operations, which are all a
     * flush covers (uct_iface_flush(3) returns only UCS_OK or
     * UCS_INPROGRESS: UCP's worker flush fails on anything else). Like
     * UCX's own transports, a caller without a completion is told
     * UCS_INPROGRESS while any are queued, so that it asks again after
     * they have gone out */
    in_progress = ucs_arbiter_is_empty(&iface->arbiter) ? 0 : 1;

    if (comp != NULL) {
        req = malloc(sizeof(*req));
        if (req == NULL) {
            ucs_error("failed to allocate an interface flush request");
            return UCS_ERR_NO_MEMORY;
        }
        req->super.func   = qpx_iface_flush_req_done;
        req->super.count  = 1; /* held by this call until the loop ends */
        req->super.status = UCS_OK;
        req->comp         = comp;
    }

    for (link = eps->next; link != eps; link = next) {
        next = link->next;
        ep   = UCS_PTR_BYTE_OFFSET(link, -(ptrdiff_t)link_offset);
        if (req != NULL) {
            ++req->super.count; /* the endpoint's flush may count it down */
        }
        status = ep_flush(ep, flags, (req != NULL) ? &req->super : NULL);
        if (status == UCS_INPROGRESS) {
            ++in_progress;
            continue;
        }
        if (req != NULL) {
            --req->super.count; /* done now: it will not */
        }
        if ((status == UCS_OK) || (status == UCS_ERR_CANCELED) ||
            (status == UCS_ERR_ENDPOINT_TIMEOUT)) {
            /* nothing outstanding, or nothing that will ever complete
             * (a failed endpoint's operations completed with its error) */
            continue;
        }
        if ((status == UCS_ERR_NO_RESOURCE) && (req == NULL)) {
            /* No room for the flush now: the caller asks again */
            ++in_progress;
            continue;
        }
        goto err_give_up;
    }

    if (req == NULL) {
        return (in_progress > 0) ? UCS_INPROGRESS : UCS_OK;
    }

    /* Drop this call's hold; if the endpoint flushes already completed
     * (or none was under way), the result is returned instead of calling
     * comp */
    if (--req->super.count > 0) {
        return UCS_INPROGRESS;
    }
    status = req->super.status;
    free(req);
    return status;

err_give_up:
    /* The flushes already under way complete into req, which then calls
     * nobody: the caller, told status, asks again */
    if (req != NULL) {
        req->comp = NULL;
        if (--req->super.count == 0) {
            free(req);
        }
    }
    return status;
}


ucs_status_t qpx_ep_report_failure(qpx_ep_t *ep, ucs_status_t status,
                                   const char *fmt, ...)
{
    qpx_iface_t *qiface     = qpx_ep_iface(ep);
    uct_base_iface_t *iface = &qiface->super;
    ucs_log_level_t level;
    char what[320];
    size_t len;
    va_list ap;

    /* Described before the handler runs: it may destroy ep */
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* relaxed: a hint the async thread set (qpx_device_event_port) */
    if (__atomic_load_n(&qiface->port->down, __ATOMIC_RELAXED)) {
        len = strlen(what);
        snprintf(what + len, sizeof(what) - len, " (port %s:%d is down)",
                 qiface->md->dev.name, qiface->port_num);
    }

    if (iface->err_handler == NULL) {
        ucs_error("%s (no error handler): %s", what,
                  ucs_status_string(status));
        return status;
    }

    status = iface->err_handler(iface->err_handler_arg, &ep->super.super,
                                status);
    level  = (status == UCS_OK) ? iface->config.failure_level :
                                  UCS_LOG_LEVEL_FATAL;
    ucs_log(level, "%s%s", what,
            (status == UCS_OK) ? "" : " (the error handler did not take it)");
    return status;
}


void qpx_op_release(qpx_op_t *op, ucs_status_t status)
{
    ucs_mpool_put(ucs_container_of(op, qpx_tx_desc_t, op));
}


void qpx_op_comp_release(qpx_op_t *op, ucs_status_t status)
{
    if (op->comp != NULL) { /* NULL: completed already (qpx_op_orphan) */
        qpx_invoke_completion(op->comp, status);
    }
    ucs_mpool_put(ucs_container_of(op, qpx_tx_desc_t, op));
}


void qpx_op_orphan(qpx_op_t *op)
{
    op->canceled = 1;
    if (op->comp != NULL) {
        qpx_invoke_completion(op->comp, UCS_ERR_CANCELED);
        op->comp = NULL;
    }
}


void qpx_op_get_bcopy(qpx_op_t *op, ucs_status_t status)
{
    qpx_tx_desc_t *desc = ucs_container_of(op, qpx_tx_desc_t, op);

    if (status == UCS_OK) {
        op->get.unpack_cb(op->get.arg, qpx_tx_desc_data(desc),
                          op->get.length);
    }
    if (op->comp != NULL) {
        qpx_invoke_completion(op->comp, status);
    }
    ucs_mpool_put(desc);
}


void qpx_op_atomic_fetch(qpx_op_t *op, ucs_status_t status)
{
    qpx_tx_desc_t *desc = ucs_container_of(op, qpx_tx_desc_t, op);

    if (status == UCS_OK) {
        /* verbs returns the original remote value in host order */
        memcpy(op->result, qpx_tx_desc_data(desc), sizeof(uint64_t));
    }
    if (op->comp != NULL) {
        qpx_invoke_completion(op->comp, status);
    }
    ucs_mpool_put(desc);
}


ucs_status_t qpx_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                  uint32_t value, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    return UCS_ERR_UNSUPPORTED;
}


ucs_status_t qpx_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                   uint32_t value, uint32_t *result,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}


ucs_status_t qpx_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                   uint32_t swap, uint64_t remote_addr,
                                   uct_rkey_t rkey, uint32_t *result,
                                   uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}
