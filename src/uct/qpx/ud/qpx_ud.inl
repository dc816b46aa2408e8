/*
 * qpx_ud fast path: send checks, descriptor setup, posting.
 * No allocation beyond the send mpool, no locks, no system calls.
 */
#ifndef QPX_UD_INL_
#define QPX_UD_INL_

#include "qpx_ud_iface.h"

#include <uct/qpx/base/qpx_mlx5.inl>

#include <stdlib.h>
#include <string.h>


static UCS_F_ALWAYS_INLINE qpx_ud_iface_t *
qpx_ud_ep_iface(qpx_ud_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.super.iface, qpx_ud_iface_t);
}

/*
 * How a hot call (a send, progress) with async progress on keeps the timer
 * out: the worker's async context blocked, whatever its mode
 * (QPX_UD_GUARD_BLOCK), or known to be in spinlock mode, UCP's (the
 * recursive spinlock taken with no test of the mode), or the interface's
 * fence entered (QPX_UD_GUARD_FENCE, UCX_QPX_UD_ASYNC_FENCE=y). The guard
 * is a constant where these are inlined, so each wrapper compiles to one
 * of the three; the interface installs the one that fits its context.
 */
typedef enum {
    QPX_UD_GUARD_BLOCK,
    QPX_UD_GUARD_SPIN,
    QPX_UD_GUARD_FENCE
} qpx_ud_guard_t;

/* Enter a hot call (async: iface->async.ctx, read once by the caller, so
 * that it stays in a register across the call); give the return value to
 * qpx_ud_iface_hot_leave */
static UCS_F_ALWAYS_INLINE int
qpx_ud_iface_hot_enter(qpx_ud_iface_t *iface, ucs_async_context_t *async,
                       qpx_ud_guard_t guard)
{
    if (guard == QPX_UD_GUARD_FENCE) {
        return qpx_async_fence_enter(&iface->async.fence, async);
    } else if (guard == QPX_UD_GUARD_SPIN) {
        ucs_recursive_spin_lock(&async->thread.spinlock);
    } else {
        qpx_async_block(async);
    }
    return 1;
}

static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_hot_leave(qpx_ud_iface_t *iface, ucs_async_context_t *async,
                       qpx_ud_guard_t guard, int blocked)
{
    if (guard == QPX_UD_GUARD_FENCE) {
        qpx_async_fence_leave(&iface->async.fence, async, blocked);
    } else if (guard == QPX_UD_GUARD_SPIN) {
        ucs_recursive_spin_unlock(&async->thread.spinlock);
    } else {
        qpx_async_unblock(async);
    }
}

/* No send slot or no descriptor, whatever the endpoint */
static UCS_F_ALWAYS_INLINE int
qpx_ud_iface_tx_exhausted(qpx_ud_iface_t *iface)
{
    return (iface->tx.available == 0) || qpx_iface_tx_no_desc(&iface->super);
}

/* qpx_ud_rel_tx_can_send: room in the endpoint's congestion window */
static UCS_F_ALWAYS_INLINE int
qpx_ud_ep_tx_can_send(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    return qpx_ud_rel_tx_can_send(&ep->tx);
}

/* Room in ep's window and a send slot, nobody waiting before us. A buffer is
 * not tested here: the caller's get fails at once when there is none (the
 * pool's quota is 0 once it is full or refused growth, qpx_iface_mp_grow) */
static UCS_F_ALWAYS_INLINE int
qpx_ud_ep_tx_room(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    return qpx_ud_ep_tx_can_send(iface, ep) && (iface->tx.available != 0) &&
           qpx_ep_pending_is_clear_all(&iface->super, &ep->super);
}

/* Whether a new reliable packet may be sent on ep now */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_ud_ep_tx_check(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    /* One test for the usual case: connected, and none of the states that
     * refuse or delay a send */
    if (ucs_unlikely((ep->flags & (QPX_UD_EP_FLAG_CONNECTED |
                                   QPX_UD_EP_FLAG_FAILED |
                                   QPX_UD_EP_FLAG_CANCELED |
                                   QPX_UD_EP_FLAG_CONN_OWED)) !=
                     QPX_UD_EP_FLAG_CONNECTED)) {
        if (ep->flags & QPX_UD_EP_FLAG_FAILED) {
            return UCS_ERR_ENDPOINT_TIMEOUT;
        } else if (ep->flags & QPX_UD_EP_FLAG_CANCELED) {
            return UCS_ERR_CANCELED;
        }
        /* not connected yet, or our CONN goes first */
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_unlikely(!qpx_ud_ep_tx_room(iface, ep))) {
        return UCS_ERR_NO_RESOURCE;
    }

    return UCS_OK;
}

/*
 * QPX_UD_EP_FLAG_RX_SLOW again from the states it stands for, after a
 * change that may end them. The changes that begin them set the flag where
 * they happen (an endpoint created, a packet kept ahead of a gap, a probe
 * sent), so that the fast receive path, which tests only the flags, never
 * takes a packet one of them concerns.
 */
static UCS_F_ALWAYS_INLINE void qpx_ud_ep_rx_slow_update(qpx_ud_ep_t *ep)
{
    if (!ep->rx.initialized || (ep->rx.ooo_count > 0) || ep->tx.probed) {
        ep->flags |= QPX_UD_EP_FLAG_RX_SLOW;
    } else {
        ep->flags &= ~QPX_UD_EP_FLAG_RX_SLOW;
    }
}

/* Have ep send a control packet (flag: ack, NAK, ack request) from the
 * interface's progress */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_ctl_schedule(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep, uint32_t flag)
{
    ep->flags |= flag;
    if (!(ep->flags & QPX_UD_EP_FLAG_ON_CTL)) {
        ep->flags             |= QPX_UD_EP_FLAG_ON_CTL;
        iface->super.attention = 1;
        ucs_list_add_tail(&iface->ctl_eps, &ep->ctl_list);
    }
}

static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_activate(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    if (!(ep->flags & QPX_UD_EP_FLAG_ON_ACTIVE)) {
        ep->flags |= QPX_UD_EP_FLAG_ON_ACTIVE;
        ucs_list_add_tail(&iface->active_eps, &ep->active_list);
    }
}

/* Fill the header of a reliable packet, piggybacking our ack. acking 1 (a
 * constant where inlined): the caller knows that ep has an ack to carry
 * (QPX_UD_EP_FLAG_RX_STARTED) and no NAK */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_hdr_init_common(qpx_ud_ep_t *ep, qpx_ud_hdr_t *hdr, uint8_t type,
                          uint8_t am_id, int acking)
{
    hdr->dest_id  = ep->dest_id;
    hdr->src_id   = ep->id;
    hdr->type     = type;
    hdr->am_id    = am_id;
    hdr->reserved = 0;
    if (acking || ep->rx.initialized) {
        hdr->flags   = QPX_UD_PKT_FLAG_ACK;
        if (!acking && ucs_unlikely(ep->flags & QPX_UD_EP_FLAG_NAK)) {
            hdr->flags |= QPX_UD_PKT_FLAG_NAK |
                          ((ep->rx.ooo != NULL) ? QPX_UD_PKT_FLAG_OOO : 0);
        }
        hdr->ack_psn = qpx_ud_rel_rx_ack_psn(&ep->rx);
        qpx_ud_rel_rx_acked(&ep->rx);
        ep->flags   &= ~(QPX_UD_EP_FLAG_ACK_NOW | QPX_UD_EP_FLAG_NAK);
    } else {
        hdr->flags   = 0;
        hdr->ack_psn = 0;
    }
}

static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_hdr_init(qpx_ud_ep_t *ep, qpx_ud_hdr_t *hdr, uint8_t type,
                   uint8_t am_id)
{
    qpx_ud_ep_hdr_init_common(ep, hdr, type, am_id, 0);
}

/* The constant fields of the send WRs (iface->tx.wr, wr_inl), at open */
static inline void qpx_ud_iface_tx_wrs_init(qpx_ud_iface_t *iface)
{
    memset(&iface->tx.wr, 0, sizeof(iface->tx.wr));
    iface->tx.wr.opcode            = IBV_WR_SEND;
    iface->tx.wr.sg_list           = iface->tx.sge;
    iface->tx.wr.wr.ud.remote_qkey = QPX_UD_QKEY;
    iface->tx.wr_inl               = iface->tx.wr;
    iface->tx.wr_inl.sg_list       = &iface->tx.sge_inl;
    iface->tx.wr_inl.num_sge       = 1;
    iface->tx.wr_inl.send_flags    = IBV_SEND_INLINE;
    iface->tx.wr_inl.wr_id         = 0;
    iface->tx.sge_inl.lkey         = 0; /* not read for inline data */
}

/*
 * The WR of an inline send of length bytes at data (the device copies them
 * at the post: the lkey is not read), with its completion accounting, done
 * before the post so that the flags are not looked at again after it; a
 * failed post undoes it (qpx_ud_iface_post_failed). Once in moderation it
 * asks for a completion, whose wr_id says how many slots it returns: then
 * iface->tx.wr, else wr_inl, whose flags and wr_id never change.
 */
static UCS_F_ALWAYS_INLINE struct ibv_send_wr *
qpx_ud_iface_wr_inline(qpx_ud_iface_t *iface, const void *data,
                       unsigned length)
{
    unsigned slots = iface->tx.unsignaled + 1;
    struct ibv_send_wr *wr;

    if (ucs_likely(slots < iface->tx.moderation)) {
        iface->tx.sge_inl.addr   = (uintptr_t)data;
        iface->tx.sge_inl.length = length;
        iface->tx.unsignaled     = slots;
        return &iface->tx.wr_inl;
    }

    wr                       = &iface->tx.wr;
    iface->tx.sge[0].addr    = (uintptr_t)data;
    iface->tx.sge[0].length  = length;
    wr->num_sge              = 1;
    wr->send_flags           = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wr->wr_id                = slots;
    iface->tx.unsignaled     = 0;
    ++iface->tx.signaled;
    return wr;
}

/* ... and of a send from desc, which the device reads after the post
 * (iface->tx.wr, its SGEs filled in by the caller): its completion returns
 * the descriptor and the slots sent since the last */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_wr_signaled(qpx_ud_iface_t *iface, struct ibv_send_wr *wr,
                         qpx_ud_send_desc_t *desc)
{
    wr->send_flags       = IBV_SEND_SIGNALED;
    wr->wr_id            = (uintptr_t)desc;
    desc->sq_slots       = iface->tx.unsignaled + 1;
    iface->tx.unsignaled = 0;
    ++iface->tx.signaled;
    ++desc->posted;
}

/* Post wr (one of the interface's, filled in and counted by
 * qpx_ud_iface_wr_inline or _signaled) to peer, and take its send slot. A
 * failed post takes none and has the accounting undone: nothing is lost, a
 * reliable packet stays in its window and a control one is repeated */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_post_wr(qpx_ud_iface_t *iface, struct ibv_send_wr *wr,
                     qpx_ud_peer_t *peer)
{
    struct ibv_send_wr *bad_wr;
    int ret;

    wr->wr.ud.ah         = peer->ah;
    wr->wr.ud.remote_qpn = peer->key.qpn;

    if (iface->super.direct.enabled) {
        /* the WQE written here, with peer's address vector (the remote
         * QPN and Q_Key from wr) */
        ret    = qpx_mlx5_post_ud_inline(&iface->txwq, wr, peer->av);
        bad_wr = wr;
    } else {
        ret = ibv_post_send(iface->qp, wr, &bad_wr);
    }
    if (ucs_unlikely(ret != 0)) {
        /* bad_wr is wr (the only one): named by the device, wr need not
         * live across the call */
        qpx_ud_iface_post_failed(iface, bad_wr, ret);
        return;
    }
    --iface->tx.available;
}

/* Post one packet of length bytes (desc->length, given by the caller that
 * has it in a register) from a send descriptor; may_have_iov 0 (a constant
 * where inlined) when the caller knows it has no user iovs: the payload was
 * copied behind the header */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_post_desc_common(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                              qpx_ud_send_desc_t *desc, unsigned length,
                              int may_have_iov)
{
    struct ibv_send_wr *wr;
    struct ibv_sge *sge;
    unsigned i;

    if ((!may_have_iov || (desc->iovcnt == 0)) &&
        (length <= iface->super.config.max_inline)) {
        /* The descriptor is free to go once posted */
        wr = qpx_ud_iface_wr_inline(iface, qpx_ud_send_desc_hdr(desc),
                                    length);
    } else {
        wr            = &iface->tx.wr;
        sge           = iface->tx.sge;
        sge[0].addr   = (uintptr_t)qpx_ud_send_desc_hdr(desc);
        sge[0].length = length;
        sge[0].lkey   = desc->super.lkey;
        wr->num_sge   = 1;
        if (may_have_iov) {
            for (i = 0; i < desc->iovcnt; ++i) {
                sge[1 + i] = desc->iov[i];
            }
            wr->num_sge += desc->iovcnt;
        }
        qpx_ud_iface_wr_signaled(iface, wr, desc);
    }

    /* A failed post is not counted in desc->posted either: the packet
     * stays in its window and is resent */
    qpx_ud_iface_post_wr(iface, wr, peer);
}

/* Post one packet from a send descriptor (new or resent) */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_post_desc(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                       qpx_ud_send_desc_t *desc)
{
    qpx_ud_iface_post_desc_common(iface, peer, desc, desc->length, 1);
}

/*
 * Header-only packets (ACK, NAK, ACK_REQ, DISC) go inline from the stack
 * where the QP takes that much inline data, with no send buffer. Acks must
 * not wait for one: with every buffer held by packets that wait for the
 * peers' acks (a low UCX_QPX_TX_MAX_BUFS, many peers), the acks are what
 * frees them, on both sides.
 */
static UCS_F_ALWAYS_INLINE int qpx_ud_iface_hdr_inline(qpx_ud_iface_t *iface)
{
    return sizeof(qpx_ud_hdr_t) <= iface->super.config.max_inline;
}

/* Post a header-only packet inline from hdr (qpx_ud_iface_hdr_inline) */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_post_hdr_inline(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                             qpx_ud_hdr_t *hdr)
{
    /* a lost one is repeated */
    qpx_ud_iface_post_wr(iface, qpx_ud_iface_wr_inline(iface, hdr,
                                                       sizeof(*hdr)),
                         peer);
}

/*
 * Where a header-only packet is written: *stack where the QP takes it
 * inline, else a buffer of tx.ctl_mp (*desc_p), released once sent. NULL
 * without memory for one (the packet is repeated later). Send it with
 * qpx_ud_iface_post_ctl_hdr.
 */
static UCS_F_ALWAYS_INLINE qpx_ud_hdr_t *
qpx_ud_iface_ctl_hdr(qpx_ud_iface_t *iface, qpx_ud_hdr_t *stack,
                     qpx_ud_send_desc_t **desc_p)
{
    qpx_ud_send_desc_t *desc;

    if (qpx_ud_iface_hdr_inline(iface)) {
        *desc_p = NULL;
        return stack;
    }
    desc = ucs_mpool_get(&iface->tx.ctl_mp);
    if (desc == NULL) {
        return NULL;
    }
    desc->ep       = NULL;
    desc->comp     = NULL;
    desc->posted   = 0;
    desc->released = 1;
    desc->iovcnt   = 0;
    desc->length   = sizeof(qpx_ud_hdr_t);
    *desc_p        = desc;
    return qpx_ud_send_desc_hdr(desc);
}

/* Allocate a descriptor for a new reliable packet on ep */
static UCS_F_ALWAYS_INLINE qpx_ud_send_desc_t *
qpx_ud_ep_desc_get(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    qpx_ud_send_desc_t *desc = qpx_iface_tx_desc_get(&iface->super);

    if (ucs_unlikely(desc == NULL)) {
        /* Until a descriptor comes back, sends and pending_add see no
         * resource and pending dispatch waits (qpx_iface_tx_no_desc) */
        return NULL;
    }

    desc->ep       = ep;
    desc->comp     = NULL;
    /* sq_slots too, though set where it is read: with it, the four bytes
     * are one store */
    desc->posted   = 0;
    desc->released = 0;
    desc->iovcnt   = 0;
    desc->sq_slots = 0;
    return desc;
}

/* A send descriptor back to the pool */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_desc_put(qpx_ud_iface_t *iface, qpx_ud_send_desc_t *desc)
{
    /* A descriptor is free again: the pending requests of any endpoint may
     * go on, progress dispatches them (their groups stay scheduled) */
    ucs_mpool_put(desc);
}

/* Send the header-only packet hdr that qpx_ud_iface_ctl_hdr gave (desc:
 * its buffer, or NULL for inline) to peer */
static UCS_F_ALWAYS_INLINE void
qpx_ud_iface_post_ctl_hdr(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                          qpx_ud_hdr_t *hdr, qpx_ud_send_desc_t *desc)
{
    if (desc == NULL) {
        qpx_ud_iface_post_hdr_inline(iface, peer, hdr);
        return;
    }
    qpx_ud_iface_post_desc(iface, peer, desc);
    if (desc->posted == 0) {
        qpx_ud_iface_desc_put(iface, desc); /* the post failed */
    }
}

/* A send is over (acknowledged, or purged with an error): its operation
 * completes, and its descriptor goes back once the device is done with it */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_desc_complete(qpx_ud_iface_t *iface, qpx_ud_send_desc_t *desc,
                        ucs_status_t status)
{
    uct_completion_t *comp = desc->comp;

    desc->released = 1;
    desc->comp     = NULL;
    if (comp != NULL) {
        qpx_ud_iface_comp(iface, desc->ep, comp, status);
    }
    if (desc->posted == 0) {
        qpx_ud_iface_desc_put(iface, desc);
    }
}

/* An acknowledged send (qpx_ud_rel_tx_ack's callback; arg: the iface):
 * inline, so that the ack loop calls no function per packet */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_acked_cb(qpx_ud_rel_desc_t *rel, void *arg)
{
    qpx_ud_ep_desc_complete(arg, ucs_container_of(rel, qpx_ud_send_desc_t,
                                                  rel), UCS_OK);
}

/* Put a filled descriptor in the window and send it (length,
 * may_have_iov: as for qpx_ud_iface_post_desc_common) */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_send_desc_common(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                           qpx_ud_send_desc_t *desc, unsigned length,
                           int may_have_iov)
{
    qpx_ud_hdr_t *hdr = qpx_ud_send_desc_hdr(desc);
    qpx_ud_psn_t psn;
    unsigned inflight;

    if (ucs_unlikely(qpx_ud_rel_tx_is_idle(&ep->tx))) {
        /* The first packet in flight: its timers start, and the timer walk
         * looks at ep from now on. It does until the window is empty again
         * (qpx_ud_ep_timer), so a busy window is always on active_eps */
        qpx_ud_rel_tx_start(&ep->tx, iface->now);
        qpx_ud_ep_activate(iface, ep);
    }
    psn      = qpx_ud_rel_tx_push(&ep->tx, &desc->rel);
    hdr->psn = psn;
    /* In flight with this one: from the PSN just given, not reloaded */
    inflight = (qpx_ud_psn_t)(psn - ep->tx.acked_psn);
    if (ucs_unlikely((inflight == iface->tx.ack_thresh) ||
                     (inflight >= iface->rel_config.window))) {
        /* Half the window, and the last packet it takes: asked twice per
         * window rather than on every packet past the half, which had the
         * peer answer each one (an ack per packet while it lags) */
        hdr->flags |= QPX_UD_PKT_FLAG_ACK_REQ;
    }
    qpx_ud_iface_post_desc_common(iface, ep->peer, desc, length,
                                  may_have_iov);
}

/* A descriptor with user iovs (am_zcopy) */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_send_desc(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                    qpx_ud_send_desc_t *desc)
{
    qpx_ud_ep_send_desc_common(iface, ep, desc, desc->length, 1);
}

/* A descriptor whose payload is copied behind its header (short, bcopy,
 * probes): length bytes with the header, which desc->length is set to */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_send_copied(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                      qpx_ud_send_desc_t *desc, unsigned length)
{
    desc->length = length;
    qpx_ud_ep_send_desc_common(iface, ep, desc, length, 0);
}


/*
 * Receive buffers are the interface core's (layout in qpx_iface.h): the
 * device writes GRH and header right before config.rx_payload_offset; once
 * they are parsed, the AM handler may put its own descriptor (UCP's rx
 * headroom) in the rx_headroom bytes before the payload, with UCT's release
 * pointer right before that (qpx_iface_rx_user_desc).
 */
static UCS_F_ALWAYS_INLINE qpx_ud_hdr_t *
qpx_ud_iface_rx_hdr(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc)
{
    return (qpx_ud_hdr_t*)UCS_PTR_BYTE_OFFSET(rdesc,
                                  iface->super.config.rx_payload_offset) - 1;
}

/*
 * A header's type and flags bytes as one 16-bit value, so that a test of
 * both is one compare: QPX_UD_HDR_TYPE_FLAGS(type, flags) is the value of
 * those two bytes in memory order.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define QPX_UD_HDR_TYPE_FLAGS(_type, _flags) \
      ((uint16_t)((_type) | ((_flags) << 8)))
#else
#  define QPX_UD_HDR_TYPE_FLAGS(_type, _flags) \
      ((uint16_t)(((_type) << 8) | (_flags)))
#endif

static UCS_F_ALWAYS_INLINE uint16_t
qpx_ud_hdr_type_flags(const qpx_ud_hdr_t *hdr)
{
    uint16_t value;

    UCS_STATIC_ASSERT(ucs_offsetof(qpx_ud_hdr_t, flags) ==
                      ucs_offsetof(qpx_ud_hdr_t, type) + 1);
    memcpy(&value, &hdr->type, sizeof(value));
    return value;
}

/*
 * Does the packet come from the interface it claims (qpn, dev_addr)? As the
 * device reports it, not as the packet says: the source QPN and LID of the
 * work completion, or on a GID-routed address (RoCE) the source GID of the
 * GRH the receive buffer starts with.
 */
static UCS_F_ALWAYS_INLINE int
qpx_ud_ep_rx_src_is(const struct ibv_wc *wc, const qpx_ud_hdr_t *hdr,
                    uint32_t qpn, const qpx_device_addr_t *dev_addr)
{
    if (wc->src_qp != qpn) {
        return 0;
    }
    if (dev_addr->flags & QPX_DEVICE_ADDR_FLAG_GID) {
        return (wc->wc_flags & IBV_WC_GRH) &&
               qpx_device_grh_src_is((const char*)hdr - QPX_UD_GRH_LEN,
                                     dev_addr->gid);
    }
    return wc->slid == dev_addr->lid;
}

/* Hand an AM to its handler; returns 1 when the handler kept the buffer.
 * may_be_async 0 (a constant where inlined): the caller is the user's
 * progress, never the async timer's (iface->async.in_async is 0) */
static UCS_F_ALWAYS_INLINE int
qpx_ud_iface_rx_deliver_common(qpx_ud_iface_t *iface,
                               qpx_ud_recv_desc_t *rdesc, qpx_ud_hdr_t *hdr,
                               size_t length, int may_be_async)
{
    /* Within the handler table whatever the peer wrote (a sender checks
     * the id, qpx_param.h; a forged one reaches a handler as a forged
     * valid one would, as in base's qpx_iface_rx_am) */
    uint8_t am_id = hdr->am_id & (UCT_AM_ID_MAX - 1);
    ucs_status_t status;

    if (may_be_async && ucs_unlikely(iface->async.in_async) &&
        !(iface->super.super.am[am_id].flags & UCT_CB_FLAG_ASYNC)) {
        /* A sync handler runs only from the user's progress: keep it */
        return qpx_ud_iface_async_defer_rx(iface, rdesc, length);
    }

    status = qpx_iface_invoke_am(&iface->super.super, am_id, hdr + 1,
                                 length - sizeof(*hdr),
                                 qpx_iface_rx_am_flags(&iface->super));
    if (status != UCS_INPROGRESS) {
        return 0;
    }

    (void)qpx_iface_rx_user_desc(&iface->super, &rdesc->super.super);
    return 1;
}

static UCS_F_ALWAYS_INLINE int
qpx_ud_iface_rx_deliver(qpx_ud_iface_t *iface, qpx_ud_recv_desc_t *rdesc,
                        qpx_ud_hdr_t *hdr, size_t length)
{
    return qpx_ud_iface_rx_deliver_common(iface, rdesc, hdr, length, 1);
}


/*
 * After a reliable packet was delivered in order (pkt_flags: its header's):
 * what was kept behind it follows, then the acknowledgement is sent now
 * (asked for, or ACK_THRESH owed), once nothing more arrives, or by the
 * tick. Shared by the fast receive path (may_have_ooo 0: it takes only
 * packets of endpoints that keep none, and an AM handler may not progress)
 * and qpx_ud_ep_rx.
 */
static UCS_F_ALWAYS_INLINE void
qpx_ud_ep_rx_delivered(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                       uint8_t pkt_flags, int may_have_ooo)
{
    unsigned unacked;

    if (may_have_ooo && ucs_unlikely(ep->rx.ooo_count > 0)) {
        qpx_ud_ep_rx_pull(iface, ep);
    }

    /* The tick acks what waited a whole tick (qpx_ud_ep_timer): nothing to
     * note per packet */
    unacked = qpx_ud_rel_rx_unacked(&ep->rx);
    if ((pkt_flags & QPX_UD_PKT_FLAG_ACK_REQ) ||
        (unacked >= iface->rx.ack_thresh)) {
        qpx_ud_ep_ctl_schedule(iface, ep, QPX_UD_EP_FLAG_ACK_NOW);
    } else {
        qpx_ud_ep_activate(iface, ep); /* the tick's delayed ack */
    }
}

#endif
