/*
 * qpx endpoint core, shared by every qpx transport: what every endpoint
 * has (its interface, its queue of pending requests) and the pending queue
 * itself, run by base with the transport's answers (qpx_iface_ops_t).
 *
 * A transport's endpoint starts with a qpx_ep_t and is initialized with
 * UCS_CLASS_CALL_SUPER_INIT(qpx_ep_t, iface) (or UCS_CLASS_INIT for one it
 * allocates itself, cleaned up with UCS_CLASS_CLEANUP_CALL). Its
 * uct_iface_ops take qpx_ep_pending_add and qpx_ep_pending_purge as they
 * are; its progress calls qpx_iface_pending_progress(); when a resource
 * that qpx_iface_ops_t.ep_tx_state reported as QPX_EP_TX_WAIT returns, it
 * calls qpx_ep_pending_schedule().
 *
 * Order: a request queued on an endpoint goes before any new operation on
 * it. A send path that must keep that order checks
 * qpx_ep_pending_is_clear(): true when nothing is queued, or when the
 * operation comes from the endpoint's own pending request being dispatched
 * (UCP calls uct_ep_flush and sends from its pending callbacks).
 */
#ifndef QPX_EP_H_
#define QPX_EP_H_

#include "qpx_iface.h"


struct qpx_ep {
    uct_base_ep_t       super;
    ucs_arbiter_group_t arb_group;  /* pending requests, in order */
    ucs_list_link_t     resched;    /* in iface->pending.resched */
    int                 on_resched;
};


UCS_CLASS_DECLARE(qpx_ep_t, qpx_iface_t*);


/* What base keeps in a pending request's priv: its place in the endpoint's
 * queue, and the flags it was added with (UCT_CB_FLAG_ASYNC: the user lets
 * it run from the async thread, qpx_iface_t.pending.async_only) */
typedef struct qpx_pending_priv {
    ucs_arbiter_elem_t elem;    /* first: the request from its element */
    unsigned           flags;
} qpx_pending_priv_t;

#define qpx_pending_priv(_req) ((qpx_pending_priv_t*)(_req)->priv)


/*
 * An operation to finish when the request it was posted with completes:
 * queued, in request order, on whatever the transport counts requests on
 * (an RC endpoint, a DCI), and finished by qpx_ops_complete() with the
 * status of the completion that covers its sequence number.
 */
typedef struct qpx_op qpx_op_t;
typedef void (*qpx_op_cb_t)(qpx_op_t *op, ucs_status_t status);

struct qpx_op {
    ucs_list_link_t  list;
    uint64_t         sn;        /* of its request */
    qpx_op_cb_t      cb;
    uct_completion_t *comp;
    uint32_t         ep_id;     /* its endpoint, where several share a queue */
    uint8_t          canceled;  /* finish with UCS_ERR_CANCELED whatever the
                                   completion says */
    int8_t           status;    /* of a completion kept for later
                                   (qpx_rdma_ops_complete) */
    union {
        struct {
            uct_unpack_callback_t unpack_cb;
            void                  *arg;
            size_t                length;
        } get;
        uint64_t *result;
    };
};


/* A send buffer from the interface's tx_mp, with the operation it serves */
typedef struct qpx_tx_desc {
    qpx_desc_t super;
    qpx_op_t   op;
} qpx_tx_desc_t;

#define qpx_tx_desc_data(_desc) ((void*)((_desc) + 1))


/* Callbacks of operations on a qpx_tx_desc_t (qpx_iface_ep.c): give the
 * buffer back; and complete op->comp; unpack a get_bcopy; copy an atomic's
 * old value to op->result */
void qpx_op_release(qpx_op_t *op, ucs_status_t status);
void qpx_op_comp_release(qpx_op_t *op, ucs_status_t status);
void qpx_op_get_bcopy(qpx_op_t *op, ucs_status_t status);
void qpx_op_atomic_fetch(qpx_op_t *op, ucs_status_t status);

/*
 * The endpoint of op is destroyed before op completes: its user completion
 * runs now, with UCS_ERR_CANCELED (UCT: uct_ep_destroy completes what is
 * outstanding; nothing of the endpoint's is called after it), and what is
 * left (the buffer the device may still read) is released when the device
 * completes the request, as canceled (no unpack, no result written).
 */
void qpx_op_orphan(qpx_op_t *op);


/* op, of request sn of endpoint ep_id, to run with cb (and comp); the
 * caller queues it */
static UCS_F_ALWAYS_INLINE void qpx_op_init(qpx_op_t *op, uint64_t sn,
                                            qpx_op_cb_t cb,
                                            uct_completion_t *comp,
                                            uint32_t ep_id)
{
    ucs_assert(cb != NULL);
    op->cb       = cb;
    op->comp     = comp;
    op->sn       = sn;
    op->ep_id    = ep_id;
    op->canceled = 0;
}


/* Queue op on ops (posted with request sn), to run with cb */
static UCS_F_ALWAYS_INLINE void qpx_op_add(ucs_list_link_t *ops,
                                           qpx_op_t *op, uint64_t sn,
                                           qpx_op_cb_t cb,
                                           uct_completion_t *comp,
                                           uint32_t ep_id)
{
    /* Completions come in posting order: ops are queued by rising sn */
    ucs_assert(ucs_list_is_empty(ops) ||
               (ucs_list_tail(ops, qpx_op_t, list)->sn <= sn));
    qpx_op_init(op, sn, cb, comp, ep_id);
    ucs_list_add_tail(ops, &op->list);
}


/* Move every operation of ops to dst, a list of its own, and leave ops
 * empty: what a failed or destroyed sender finishes apart from what is
 * posted on it next */
static UCS_F_ALWAYS_INLINE void qpx_ops_take(ucs_list_link_t *dst,
                                             ucs_list_link_t *ops)
{
    ucs_list_head_init(dst);
    ucs_list_splice_tail(dst, ops);
    ucs_list_head_init(ops);
}


/* Finish the operations of ops up to sn with status */
static UCS_F_ALWAYS_INLINE void qpx_ops_complete(ucs_list_link_t *ops,
                                                 uint64_t sn,
                                                 ucs_status_t status)
{
    qpx_op_t *op;

    while (!ucs_list_is_empty(ops)) {
        op = ucs_list_head(ops, qpx_op_t, list);
        if (op->sn > sn) {
            break;
        }
        ucs_list_del(&op->list);
        op->cb(op, op->canceled ? UCS_ERR_CANCELED : status);
    }
}



/* SGEs from a UCT iov; returns the number of non-empty entries */
static UCS_F_ALWAYS_INLINE size_t qpx_iov_to_sge(struct ibv_sge *sge,
                                                 const uct_iov_t *iov,
                                                 size_t iovcnt)
{
    size_t i, n = 0;

    for (i = 0; i < iovcnt; ++i) {
        if (iov[i].length * iov[i].count == 0) {
            continue;
        }
        sge[n].addr   = (uintptr_t)iov[i].buffer;
        sge[n].length = iov[i].length * iov[i].count;
        sge[n].lkey   = (iov[i].memh == UCT_MEM_HANDLE_NULL) ? 0 :
                        ((qpx_mem_t*)iov[i].memh)->mr->lkey;
        ++n;
    }
    return n;
}


/* The status an endpoint fails with after a send completion error: its
 * peer did not answer (retries exceeded: UCS_ERR_ENDPOINT_TIMEOUT), or
 * answered with an error (UCS_ERR_CONNECTION_RESET) */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_wc_failure_status(enum ibv_wc_status wc_status)
{
    return ((wc_status == IBV_WC_RETRY_EXC_ERR) ||
            (wc_status == IBV_WC_RNR_RETRY_EXC_ERR)) ?
           UCS_ERR_ENDPOINT_TIMEOUT : UCS_ERR_CONNECTION_RESET;
}


/* uct_iface_ops of the 32-bit atomics, which no qpx transport offers */
ucs_status_t qpx_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                  uint32_t value, uint64_t remote_addr,
                                  uct_rkey_t rkey);
ucs_status_t qpx_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                   uint32_t value, uint32_t *result,
                                   uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp);
ucs_status_t qpx_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                   uint32_t swap, uint64_t remote_addr,
                                   uct_rkey_t rkey, uint32_t *result,
                                   uct_completion_t *comp);


static UCS_F_ALWAYS_INLINE qpx_iface_t *qpx_ep_iface(qpx_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, qpx_iface_t);
}

/* Nothing is queued ahead of a new operation on ep */
static UCS_F_ALWAYS_INLINE int qpx_ep_pending_is_clear(qpx_iface_t *iface,
                                                       qpx_ep_t *ep)
{
    return ucs_arbiter_group_is_empty(&ep->arb_group) ||
           (iface->pending.ep == ep);
}

/*
 * Nothing is queued ahead of a new operation on ep, neither its own nor
 * other endpoints' requests that wait for the interface's resources (the
 * groups scheduled in the arbiter): a send of ep may not take the buffer
 * or slot that came back before them. Without it, an MPI lock's spinners,
 * whose requests find the interface's one send buffer back at the moment
 * their AM arrives, answered first every time, and the holder's queued
 * request waited behind them.
 */
static UCS_F_ALWAYS_INLINE int qpx_ep_pending_is_clear_all(qpx_iface_t *iface,
                                                           qpx_ep_t *ep)
{
    return (ucs_arbiter_group_is_empty(&ep->arb_group) &&
            ucs_arbiter_is_empty(&iface->arbiter)) ||
           (iface->pending.ep == ep);
}

/* ep's requests may run again (its resource came back) */
static UCS_F_ALWAYS_INLINE void qpx_ep_pending_schedule(qpx_iface_t *iface,
                                                        qpx_ep_t *ep)
{
    ucs_arbiter_group_schedule(&iface->arbiter, &ep->arb_group);
}

/* uct_ep_pending_add: UCS_ERR_BUSY when the endpoint could send now (and
 * nothing is queued on it), else the request is queued */
ucs_status_t qpx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                unsigned flags);

/* uct_ep_pending_purge: every queued request is removed and given to cb */
void qpx_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                          void *arg);

/* Schedule again the endpoints whose refused requests nothing announces */
void qpx_iface_pending_resched(qpx_iface_t *iface);

ucs_arbiter_cb_result_t qpx_iface_pending_dispatch_cb(ucs_arbiter_t *arbiter,
                                                      ucs_arbiter_group_t *group,
                                                      ucs_arbiter_elem_t *elem,
                                                      void *arg);

/* Run pending requests while the transport says they can go, for a
 * progress that knows that no endpoint waits to be rescheduled (it read
 * iface->attention) */
static UCS_F_ALWAYS_INLINE void qpx_iface_pending_dispatch(qpx_iface_t *iface)
{
    ucs_arbiter_dispatch(&iface->arbiter, 1, qpx_iface_pending_dispatch_cb,
                         iface);
}

/* From the transport's progress: run pending requests while the transport
 * says they can go */
static UCS_F_ALWAYS_INLINE void qpx_iface_pending_progress(qpx_iface_t *iface)
{
    if (ucs_unlikely(!ucs_list_is_empty(&iface->pending.resched))) {
        qpx_iface_pending_resched(iface);
    }
    qpx_iface_pending_dispatch(iface);
}

/*
 * Tell the user that ep failed with status, describing it with the printf
 * format. As UCX's own transports do: the failure is logged at the
 * interface's failure level (UCX_QPX_<TL>_FAILURE) when the error handler
 * took it, and at the fatal level when it did not (UCP without peer error
 * handling returns the error: nobody can act on it, so UCX's error handling
 * -- UCX_HANDLE_ERRORS -- ends the process with that message instead of
 * leaving it waiting forever for the peer). Without an error handler (a UCT
 * user that asked for none) the failure is logged as an error and the
 * endpoint stays failed. Returns what the handler returned; the handler may
 * have destroyed ep.
 */
ucs_status_t qpx_ep_report_failure(qpx_ep_t *ep, ucs_status_t status,
                                   const char *fmt, ...) UCS_F_PRINTF(3, 4);

/* Whether progress has pending work that no completion event announces
 * (before arming: the interface must not sleep on it) */
static UCS_F_ALWAYS_INLINE int qpx_iface_pending_is_due(qpx_iface_t *iface)
{
    return !ucs_arbiter_is_empty(&iface->arbiter) ||
           !ucs_list_is_empty(&iface->pending.resched);
}

#endif
