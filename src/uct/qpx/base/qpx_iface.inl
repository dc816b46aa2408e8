/*
 * qpx base: the fast path of an interface's buffers, included by
 * qpx_iface.h: receive buffers from the (possibly shared) pool, their
 * recycling and hand-over to AM handlers, send buffers, and the CQ poll
 * every transport's progress calls. No malloc, lock (but the shared
 * pool's, when qpx_iface_rx_pool_lock asked for it) or system call.
 */
#ifndef QPX_IFACE_INL_
#define QPX_IFACE_INL_

#include "qpx_mlx5.inl"


/* The pool iface's receive buffers come from: its owner's when shared */
static UCS_F_ALWAYS_INLINE qpx_iface_t *qpx_iface_rx_pool(qpx_iface_t *iface)
{
    return (iface->rx_owner != NULL) ? iface->rx_owner : iface;
}

/* A fresh receive buffer, or NULL */
static UCS_F_ALWAYS_INLINE qpx_desc_t *qpx_iface_rx_desc_get(qpx_iface_t *iface)
{
    qpx_iface_t *pool = qpx_iface_rx_pool(iface);
    qpx_desc_t *desc;

    if (ucs_likely(!pool->rx_mp_locked)) {
        return ucs_mpool_get(&pool->rx_mp);
    }
    ucs_spin_lock(&pool->rx_mp_lock);
    desc = ucs_mpool_get(&pool->rx_mp);
    ucs_spin_unlock(&pool->rx_mp_lock);
    return desc;
}

/* Give a receive buffer back to its pool (not to the receive queue). A
 * receive queue left short by an empty pool is refilled by the next
 * progress: nothing else would (no completion comes to a queue with no
 * buffer), and the job would hang on a peer that waits for it. */
static UCS_F_ALWAYS_INLINE void qpx_iface_rx_desc_put(qpx_iface_t *iface,
                                                      void *desc)
{
    qpx_iface_t *pool = qpx_iface_rx_pool(iface);

    if (ucs_likely(!pool->rx_mp_locked)) {
        ucs_mpool_put(desc);
    } else {
        ucs_spin_lock(&pool->rx_mp_lock);
        ucs_mpool_put(desc);
        ucs_spin_unlock(&pool->rx_mp_lock);
    }
    if (ucs_unlikely(iface->rx.starved)) {
        iface->rx.low = 1;
    }
    if (ucs_unlikely(pool->rx.starved)) {
        pool->rx.low = 1;
    }
}

/* The chain of recycled buffers empty (base-internal) */
static UCS_F_ALWAYS_INLINE void qpx_iface_rx_recycled_reset(qpx_iface_t *iface)
{
    iface->rx.recycled      = NULL;
    iface->rx.recycled_tail = &iface->rx.recycled;
    iface->rx.num_recycled  = 0;
}

/* The receive queue's empty slots refilled when a batch is due: recycled
 * buffers first, then fresh ones */
static UCS_F_ALWAYS_INLINE void qpx_iface_rx_post_due(qpx_iface_t *iface)
{
    if (iface->rx.available >= iface->rx.batch) {
        qpx_iface_rx_post(iface, iface->rx.available);
    }
}

/* The buffer of a receive completion whose payload was not kept goes back
 * as it is: its WR joins the recycled chain and its slot is counted, but
 * not posted yet. A loop over polled completions posts what is due after
 * the loop (qpx_iface_rx_post_due); a buffer taken from the pool only
 * replaces a kept one, so that a pool that runs dry is found at the kept
 * buffer that drains it (qpx_iface_rx_kept) */
static UCS_F_ALWAYS_INLINE void
qpx_iface_rx_recycle(qpx_iface_t *iface, qpx_desc_t *desc)
{
    struct ibv_recv_wr *wr = &ucs_derived_of(desc, qpx_rx_desc_t)->wr;

    *iface->rx.recycled_tail = wr;
    iface->rx.recycled_tail  = &wr->next;
    ++iface->rx.num_recycled;
    ++iface->rx.available;
}

/* A receive buffer was kept (by an AM handler, or by the transport): its
 * slot is refilled with a fresh buffer when a batch is due, now. Posting
 * at once, not after the loop, finds an empty pool before more buffers
 * are handed out to keep: the handlers then copy (rx.am_flags), and a
 * burst cannot leave the queue with none posted while they hold them all */
static UCS_F_ALWAYS_INLINE void qpx_iface_rx_kept(qpx_iface_t *iface)
{
    ++iface->rx.available;
    qpx_iface_rx_post_due(iface);
}

/* The desc to hand an AM handler for a receive buffer, with its release
 * callback set (for UCT_CB_PARAM_FLAG_DESC / UCS_INPROGRESS) */
static UCS_F_ALWAYS_INLINE void *
qpx_iface_rx_user_desc(qpx_iface_t *iface, qpx_desc_t *desc)
{
    void *user_desc = UCS_PTR_BYTE_OFFSET(desc,
                                          iface->config.rx_headroom_offset);

    uct_recv_desc(user_desc) = &iface->release_desc;
    return user_desc;
}

/*
 * The flags of an AM handed to its handler: the buffer may be kept
 * (UCT_CB_PARAM_FLAG_DESC) unless the pool could not refill the receive
 * queue (rx.starved). Then the handler copies what it keeps (UCP does), and
 * the buffer goes back at once: kept buffers (UCP keeps unexpected messages,
 * all fragments of one) could otherwise hold every buffer while the
 * fragments they wait for find none, and the job would hang.
 */
static UCS_F_ALWAYS_INLINE unsigned qpx_iface_rx_am_flags(qpx_iface_t *iface)
{
    return iface->rx.am_flags;
}

/* The AM id of a receive buffer: the first byte of the transport's
 * header */
static UCS_F_ALWAYS_INLINE uint8_t qpx_iface_rx_am_id(qpx_iface_t *iface,
                                                      qpx_desc_t *desc)
{
    return *(uint8_t*)UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_hdr_offset) &
           (UCT_AM_ID_MAX - 1);
}

/*
 * Hand the active message in a receive buffer (byte_len bytes received,
 * starting with the transport's header of hdr_len bytes, whose first byte is
 * the AM id) to its handler, and recycle the buffer unless the handler kept
 * it, or count it kept. The caller posts what is due after its loop
 * (qpx_iface_rx_post_due).
 */
static UCS_F_ALWAYS_INLINE void qpx_iface_rx_am(qpx_iface_t *iface,
                                                qpx_desc_t *desc,
                                                size_t hdr_len,
                                                uint32_t byte_len)
{
    void *hdr = UCS_PTR_BYTE_OFFSET(desc, iface->config.rx_hdr_offset);
    uint8_t am_id;
    ucs_status_t status;

    /* The release pointer may overlap the header: read the id first */
    am_id = qpx_iface_rx_am_id(iface, desc);
    (void)qpx_iface_rx_user_desc(iface, desc);
    status = qpx_iface_invoke_am(&iface->super, am_id,
                                 UCS_PTR_BYTE_OFFSET(hdr, hdr_len),
                                 byte_len - hdr_len,
                                 qpx_iface_rx_am_flags(iface));
    if (ucs_likely(status != UCS_INPROGRESS)) {
        qpx_iface_rx_recycle(iface, desc);
    } else {
        qpx_iface_rx_kept(iface); /* a fresh buffer replaces it */
    }
}

/* A send buffer from tx_mp, or NULL (the pool at its limit, see
 * qpx_iface_tx_no_desc; the transport's tx_solicit is asked for buffers) */
static UCS_F_ALWAYS_INLINE void *qpx_iface_tx_desc_get(qpx_iface_t *iface)
{
    void *desc = ucs_mpool_get(&iface->tx_mp);

    if (ucs_unlikely(desc == NULL)) {
        iface->tx.desc_limit = 1;
        if (iface->ops->tx_solicit != NULL) {
            iface->ops->tx_solicit(iface);
        }
    }
    return desc;
}

/* No send buffer can be had until one is put back: the free list is empty
 * and the pool has been refused growth. An empty free list alone is not
 * enough: the next get may grow the pool. */
static UCS_F_ALWAYS_INLINE int qpx_iface_tx_no_desc(qpx_iface_t *iface)
{
    return ucs_unlikely(iface->tx.desc_limit) &&
           ucs_mpool_is_empty(&iface->tx_mp);
}

/*
 * qpx_iface_ops_t.tx_exhausted of a transport whose send buffers come back
 * only with a signalled completion (qpx_rc, qpx_dc): send CQ entries and
 * send buffers are the interface-wide resources. A request refused for
 * want of a buffer is then queued, not told to try again (UCP would call it
 * again at once, for ever, with no progress between to bring a buffer
 * back). While the pool is empty, ops->tx_solicit asks the requests
 * holding its buffers to complete, here too: the last buffer may have gone
 * to an unsignalled request after the last refusal asked, and queued
 * requests are not tried (so not refused) until a buffer is back.
 */
static inline int qpx_iface_tx_exhausted_signaled(qpx_iface_t *iface)
{
    if (iface->tx.cq_available <= 0) {
        return 1;
    }
    if (qpx_iface_tx_no_desc(iface)) {
        iface->ops->tx_solicit(iface);
        return 1;
    }
    return 0;
}

/* Poll up to max completions of iface's send (QPX_IFACE_CQ_TX) or receive
 * (QPX_IFACE_CQ_RX) CQ into wc; 0 on error (logged). which and direct are
 * constants of the caller: direct, chosen at the interface's start, says
 * iface's path: its mlx5 CQEs (an empty CQ costs a test of one entry, no
 * call), or ibv_poll_cq. */
static UCS_F_ALWAYS_INLINE int qpx_iface_poll_cq_path(qpx_iface_t *iface,
                                                      int which, int max,
                                                      struct ibv_wc *wc,
                                                      int direct)
{
    struct ibv_cq *cq = (which == QPX_IFACE_CQ_TX) ? iface->send_cq :
                                                     iface->recv_cq;
    qpx_mlx5_cq_t *dcq;
    int n;

    ucs_assert(!direct == !iface->direct.enabled);
    if (direct) {
        dcq = &iface->direct.cq[which];
        return qpx_mlx5_cq_ready(dcq) ? qpx_mlx5_poll(iface, dcq, max, wc) : 0;
    }
    n = ibv_poll_cq(cq, max, wc);
    if (ucs_unlikely(n < 0)) {
        ucs_error("ibv_poll_cq(cq %p) failed: %d (%s)", cq, n, strerror(-n));
        return 0;
    }
    return n;
}

/* qpx_iface_poll_cq_path for a caller that does not know iface's path */
static UCS_F_ALWAYS_INLINE int qpx_iface_poll_cq(qpx_iface_t *iface,
                                                 int which, int max,
                                                 struct ibv_wc *wc)
{
    if (ucs_unlikely(iface->direct.enabled)) {
        return qpx_iface_poll_cq_path(iface, which, max, wc, 1);
    }
    return qpx_iface_poll_cq_path(iface, which, max, wc, 0);
}

#endif
