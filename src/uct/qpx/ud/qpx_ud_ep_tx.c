/*
 * qpx_ud endpoint operations: active messages, flush, keepalive (its
 * pending queue is base's, qpx_ep.c).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <uct/qpx/base/qpx_async.h>
#include <uct/qpx/base/qpx_param.h>

#include <string.h>


/* Room to send on ep, and a descriptor with the header of an active message
 * id; *desc_p is set only on UCS_OK. Every case, each tested. */
static UCS_F_NOINLINE ucs_status_t
qpx_ud_ep_am_desc_get_slow(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep, uint8_t id,
                           qpx_ud_send_desc_t **desc_p)
{
    qpx_ud_send_desc_t *desc;
    ucs_status_t status;

    status = qpx_ud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = qpx_ud_ep_desc_get(iface, ep);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_ud_ep_hdr_init(ep, qpx_ud_send_desc_hdr(desc), QPX_UD_PKT_AM, id);
    *desc_p = desc;
    return UCS_OK;
}

/* The same; inline for the usual case (a connected endpoint whose packets
 * carry an ack and no NAK, room to send), else the function above */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_ud_ep_am_desc_get(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep, uint8_t id,
                      qpx_ud_send_desc_t **desc_p)
{
    qpx_ud_send_desc_t *desc;

    if (ucs_unlikely(((ep->flags & (QPX_UD_EP_FLAG_CONNECTED |
                                    QPX_UD_EP_FLAG_FAILED |
                                    QPX_UD_EP_FLAG_CANCELED |
                                    QPX_UD_EP_FLAG_CONN_OWED |
                                    QPX_UD_EP_FLAG_NAK |
                                    QPX_UD_EP_FLAG_RX_STARTED)) !=
                      (QPX_UD_EP_FLAG_CONNECTED |
                       QPX_UD_EP_FLAG_RX_STARTED)) ||
                     !qpx_ud_ep_tx_room(iface, ep))) {
        return qpx_ud_ep_am_desc_get_slow(iface, ep, id, desc_p);
    }

    desc = qpx_ud_ep_desc_get(iface, ep);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_ud_ep_hdr_init_common(ep, qpx_ud_send_desc_hdr(desc), QPX_UD_PKT_AM,
                              id, 1);
    *desc_p = desc;
    return UCS_OK;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_ud_ep_am_short_inline(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep, uint8_t id,
                          uint64_t header, const void *payload,
                          unsigned length)
{
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr;
    ucs_status_t status;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (ucs_unlikely(sizeof(header) + length > iface->tx.max_short)) {
        return qpx_param_length_error("am_short", sizeof(header) + length,
                                      iface->tx.max_short);
    }
    status = qpx_ud_ep_am_desc_get(iface, ep, id, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    hdr = qpx_ud_send_desc_hdr(desc);
    *(uint64_t*)(hdr + 1) = header;
    memcpy((uint64_t*)(hdr + 1) + 1, payload, length);
    qpx_ud_ep_send_copied(iface, ep, desc,
                          sizeof(*hdr) + sizeof(header) + length);
    return UCS_OK;
}

ucs_status_t qpx_ud_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                const void *payload, unsigned length)
{
    qpx_ud_ep_t *ep = ucs_derived_of(tl_ep, qpx_ud_ep_t);

    return qpx_ud_ep_am_short_inline(qpx_ud_ep_iface(ep), ep, id, header,
                                     payload, length);
}

/* With async progress: the send guarded against the timer, whose progress
 * shares the endpoint's state, in one function (qpx_ud_iface_hot_enter) */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_ud_ep_am_short_guarded(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                           const void *payload, unsigned length,
                           qpx_ud_guard_t guard)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);
    ucs_async_context_t *async = iface->async.ctx;
    ucs_status_t status;
    int blocked;

    blocked = qpx_ud_iface_hot_enter(iface, async, guard);
    status  = qpx_ud_ep_am_short_inline(iface, ep, id, header, payload,
                                        length);
    qpx_ud_iface_hot_leave(iface, async, guard, blocked);
    return status;
}

static UCS_F_ALWAYS_INLINE ssize_t
qpx_ud_ep_am_bcopy_inline(qpx_ud_ep_t *ep, uint8_t id,
                          uct_pack_callback_t pack_cb, void *arg)
{
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr;
    ucs_status_t status;
    size_t length;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    status = qpx_ud_ep_am_desc_get(iface, ep, id, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    hdr    = qpx_ud_send_desc_hdr(desc);
    length = pack_cb(hdr + 1, arg);
    if (ucs_unlikely(length > iface->tx.max_payload)) {
        /* Not sent: the ack its header took goes on its own */
        qpx_ud_iface_desc_put(iface, desc);
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
        return qpx_param_length_error("am_bcopy", length,
                                      iface->tx.max_payload);
    }
    qpx_ud_ep_send_copied(iface, ep, desc, sizeof(*hdr) + length);
    return length;
}

ssize_t qpx_ud_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           unsigned flags)
{
    (void)flags;
    return qpx_ud_ep_am_bcopy_inline(ucs_derived_of(tl_ep, qpx_ud_ep_t), id,
                                     pack_cb, arg);
}

static UCS_F_ALWAYS_INLINE ssize_t
qpx_ud_ep_am_bcopy_guarded(uct_ep_h tl_ep, uint8_t id,
                           uct_pack_callback_t pack_cb, void *arg,
                           qpx_ud_guard_t guard)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);
    ucs_async_context_t *async = iface->async.ctx;
    ssize_t ret;
    int blocked;

    blocked = qpx_ud_iface_hot_enter(iface, async, guard);
    ret     = qpx_ud_ep_am_bcopy_inline(ep, id, pack_cb, arg);
    qpx_ud_iface_hot_leave(iface, async, guard, blocked);
    return ret;
}

/* qpx_ud_ep_am_short_blocked ... qpx_ud_ep_am_bcopy_fenced
 * (QPX_UD_GUARDED_OPS_DECLARE) */
#define QPX_UD_EP_GUARDED_DEFINE(_sfx, _guard) \
    ucs_status_t qpx_ud_ep_am_short_##_sfx(uct_ep_h tl_ep, uint8_t id, \
                                           uint64_t header, \
                                           const void *payload, \
                                           unsigned length) \
    { \
        return qpx_ud_ep_am_short_guarded(tl_ep, id, header, payload, \
                                          length, _guard); \
    } \
    \
    ssize_t qpx_ud_ep_am_bcopy_##_sfx(uct_ep_h tl_ep, uint8_t id, \
                                      uct_pack_callback_t pack_cb, void *arg, \
                                      unsigned flags) \
    { \
        (void)flags; \
        return qpx_ud_ep_am_bcopy_guarded(tl_ep, id, pack_cb, arg, _guard); \
    }

QPX_UD_EP_GUARDED_DEFINE(blocked, QPX_UD_GUARD_BLOCK)
QPX_UD_EP_GUARDED_DEFINE(spinlocked, QPX_UD_GUARD_SPIN)
QPX_UD_EP_GUARDED_DEFINE(fenced, QPX_UD_GUARD_FENCE)

ucs_status_t qpx_ud_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                unsigned header_length, const uct_iov_t *iov,
                                size_t iovcnt, unsigned flags,
                                uct_completion_t *comp)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr;
    ucs_status_t status;
    qpx_mem_t *mem;
    size_t i, length;
    int copy;

    status = qpx_param_check_am_zcopy(id, header_length, iov, iovcnt,
                                      QPX_UD_MAX_IOV, iface->tx.max_payload);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = qpx_ud_ep_am_desc_get(iface, ep, id, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    hdr = qpx_ud_send_desc_hdr(desc);
    memcpy(hdr + 1, header, header_length);
    desc->length = sizeof(*hdr) + header_length;

    /* Unregistered buffers (or more than the QP's SGEs) travel in the
     * descriptor */
    copy = (iovcnt > iface->tx.sge_iov);
    for (i = 0; i < iovcnt; ++i) {
        copy |= (iov[i].memh == UCT_MEM_HANDLE_NULL);
    }

    for (i = 0; i < iovcnt; ++i) {
        length = iov[i].length * iov[i].count;
        if (length == 0) {
            continue;
        } else if (copy) {
            memcpy((char*)hdr + desc->length, iov[i].buffer, length);
            desc->length += length;
        } else {
            mem                            = iov[i].memh;
            desc->iov[desc->iovcnt].addr   = (uintptr_t)iov[i].buffer;
            desc->iov[desc->iovcnt].length = length;
            desc->iov[desc->iovcnt].lkey   = mem->mr->lkey;
            ++desc->iovcnt;
        }
    }

    desc->comp = comp;
    if (comp != NULL) {
        /* Someone waits for this ack: do not let the peer delay it */
        hdr->flags |= QPX_UD_PKT_FLAG_ACK_REQ;
    }
    qpx_ud_ep_send_desc(iface, ep, desc);
    (void)flags;
    return UCS_INPROGRESS;
}

ucs_status_t qpx_ud_ep_flush(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_ud_ep_t *ep       = ucs_derived_of(tl_ep, qpx_ud_ep_t);
    qpx_ud_iface_t *iface = qpx_ud_ep_iface(ep);
    qpx_ud_flush_req_t *req;

    if (ep->flags & QPX_UD_EP_FLAG_FAILED) {
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* Unacknowledged packets complete with UCS_ERR_CANCELED now; the
         * endpoint then refuses sends, as uct_ep_flush(3) says: the peer
         * may miss what was canceled, and later packets would wait behind
         * that gap forever */
        qpx_ud_ep_cancel(iface, ep);
        ep->flags |= QPX_UD_EP_FLAG_CANCELED;
        return UCS_OK;
    }

    /* Requests queued before this flush must go first. Not when the flush
     * is itself the pending request being dispatched (UCP queues its flush
     * and calls uct_ep_flush again from the pending callback): whatever was
     * queued before it has left, and refusing would deschedule the group
     * with nothing in flight to reschedule it. */
    if (!qpx_ep_pending_is_clear(&iface->super, &ep->super)) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (qpx_ud_rel_tx_is_idle(&ep->tx)) {
        return UCS_OK;
    }

    if (comp != NULL) {
        req = malloc(sizeof(*req));
        if (req == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        req->psn  = ep->tx.next_psn - 1;
        req->comp = comp;
        ucs_list_add_tail(&ep->flushes, &req->list);
    }

    /* Ask the peer to acknowledge everything now rather than later */
    qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_REQ);
    return UCS_INPROGRESS;
}

/* A reliable probe: no ack within the timeout fails the endpoint */
static ucs_status_t qpx_ud_ep_probe(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_send_desc_t *desc;
    ucs_status_t status;

    if (!qpx_ud_rel_tx_is_idle(&ep->tx)) {
        return UCS_OK; /* packets in flight: the peer timeout watches them */
    }

    status = qpx_ud_ep_tx_check(iface, ep);
    if (status != UCS_OK) {
        return status;
    }

    desc = qpx_ud_ep_desc_get(iface, ep);
    if (desc == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }

    qpx_ud_ep_hdr_init(ep, qpx_ud_send_desc_hdr(desc), QPX_UD_PKT_NOP, 0);
    qpx_ud_ep_send_copied(iface, ep, desc, sizeof(qpx_ud_hdr_t));
    return UCS_OK;
}

ucs_status_t qpx_ud_ep_check(uct_ep_h tl_ep, unsigned flags,
                             uct_completion_t *comp)
{
    qpx_ud_ep_t *ep = ucs_derived_of(tl_ep, qpx_ud_ep_t);

    (void)flags;
    (void)comp;
    return qpx_ud_ep_probe(qpx_ud_ep_iface(ep), ep);
}

void qpx_ud_ep_keepalive(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    /* Probed: user endpoints, connected, that sent nothing for a whole
     * interval; not ones whose peer closed its side (its endpoint lingers
     * for what we still send, then goes: no probe of it is owed). An endpoint with packets in flight is already
     * watched by the peer timeout; one that cannot send now (pending
     * requests, no descriptor) is tried again next round. */
    if (((ep->flags & (QPX_UD_EP_FLAG_USER | QPX_UD_EP_FLAG_CONNECTED |
                       QPX_UD_EP_FLAG_FAILED | QPX_UD_EP_FLAG_PEER_GONE)) ==
         (QPX_UD_EP_FLAG_USER | QPX_UD_EP_FLAG_CONNECTED)) &&
        (ep->tx.next_psn == ep->keepalive_psn)) {
        (void)qpx_ud_ep_probe(iface, ep);
    }
    ep->keepalive_psn = ep->tx.next_psn;
}
