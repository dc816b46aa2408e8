/*
 * qpx interface core, receive side: the receive WR batch, posting and
 * refilling the SRQ (or the first QP's receive queue), its growth on the
 * limit event, sharing one SRQ and buffer pool between interfaces, and the
 * registered pools' growth when the device runs out of registrations.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/*
 * A chunk for rx_mp or tx_mp from UCX's allocator. Where the device has no
 * memory registration (or memory) left, the pool keeps the buffers it has:
 * its quota drops to 0, so that later gets find it empty without asking
 * the device again (libucs logs the failed chunk once), and the sends or
 * receives it serves wait for buffers to come back. Said once per pool, at
 * warning level; the first chunk's failure is the interface's open's.
 */
static ucs_status_t qpx_iface_mp_grow(qpx_iface_t *iface, ucs_mpool_t *mp,
                                      size_t *size_p, void **chunk_p)
{
    ucs_status_t status;

    qpx_md_reg_exhausted_level = UCS_LOG_LEVEL_DEBUG;
    status = iface->mp_chunk_alloc(mp, size_p, chunk_p);
    qpx_md_reg_exhausted_level = UCS_LOG_LEVEL_ERROR;
    if (status != UCS_ERR_NO_MEMORY) {
        return status;
    }

    qpx_iface_exhausted_set(iface, "memory registration");
    mp->data->quota = 0;
    ucs_log((mp->data->chunks == NULL) ? UCS_LOG_LEVEL_DEBUG :
            UCS_LOG_LEVEL_WARN, "qpx iface %p %s:%d: no memory registration "
            "of %zu bytes left for %s: it keeps the buffers it has", iface,
            iface->md->dev.name, iface->port_num, *size_p,
            ucs_mpool_name(mp));
    return status;
}


static ucs_status_t qpx_iface_rx_mp_grow(ucs_mpool_t *mp, size_t *size_p,
                                         void **chunk_p)
{
    return qpx_iface_mp_grow(ucs_container_of(mp, qpx_iface_t, rx_mp), mp,
                             size_p, chunk_p);
}


static ucs_status_t qpx_iface_tx_mp_grow(ucs_mpool_t *mp, size_t *size_p,
                                         void **chunk_p)
{
    return qpx_iface_mp_grow(ucs_container_of(mp, qpx_iface_t, tx_mp), mp,
                             size_p, chunk_p);
}


void qpx_iface_mp_wrap(qpx_iface_t *iface, ucs_mpool_t *mp)
{
    ucs_mpool_ops_t *ops = (mp == &iface->rx_mp) ? &iface->rx_mp_ops :
                                                   &iface->tx_mp_ops;

    iface->mp_chunk_alloc = mp->data->ops->chunk_alloc;
    *ops                  = *mp->data->ops;
    ops->chunk_alloc      = (mp == &iface->rx_mp) ? qpx_iface_rx_mp_grow :
                                                    qpx_iface_tx_mp_grow;
    mp->data->ops         = ops;
}


/* The receive WR of a buffer rx_mp made (its lkey set): the WR and SGE at
 * the buffer's start point at where the receive lands, and never change */
void qpx_iface_rx_desc_wr_init(qpx_iface_t *iface, qpx_desc_t *desc)
{
    qpx_rx_desc_t *rdesc = ucs_derived_of(desc, qpx_rx_desc_t);

    rdesc->sge.addr    = (uintptr_t)desc + iface->config.rx_hdr_offset;
    rdesc->sge.length  = iface->config.seg_size;
    rdesc->sge.lkey    = desc->lkey;
    rdesc->wr.wr_id    = (uintptr_t)desc;
    rdesc->wr.next     = NULL;
    rdesc->wr.sg_list  = &rdesc->sge;
    rdesc->wr.num_sge  = 1;
}


int qpx_iface_rx_share_layout(qpx_iface_t *self, const qpx_iface_t *owner)
{
    size_t hdr_offset, payload_offset, priv_end;

    /* The same port, buffers at least self's SEG_SIZE, and from owner's
     * landing point back: self's header, the user's headroom and the
     * release pointer before it, then self's private bytes after its
     * qpx_rx_desc_t. The buffers' WRs are owner's: its landing point, its
     * SEG_SIZE (every buffer in the SRQ of one length: any QP may take
     * any) */
    if ((owner == NULL) || (owner->srq == NULL) || (owner->md != self->md) ||
        (owner->port_num != self->port_num) ||
        (owner->config.seg_size < self->config.seg_size)) {
        return 0;
    }

    hdr_offset     = owner->config.rx_hdr_offset;
    payload_offset = hdr_offset + self->config.rx_hdr_len;
    priv_end       = sizeof(qpx_rx_desc_t) + self->config.rx_priv_len;
    if ((hdr_offset < priv_end) ||
        (payload_offset < priv_end + sizeof(void*) +
                          self->config.rx_headroom)) {
        return 0;
    }

    self->config.rx_hdr_offset      = hdr_offset;
    self->config.rx_payload_offset  = payload_offset;
    self->config.rx_headroom_offset = payload_offset -
                                      self->config.rx_headroom;
    return 1;
}


void qpx_iface_rx_pool_lock(qpx_iface_t *iface)
{
    qpx_iface_t *pool = qpx_iface_rx_pool(iface);

    if ((iface->rx_owner == NULL) || pool->rx_mp_locked) {
        return; /* not shared: the async context serializes its users */
    }
    pool->rx_mp_locked = 1;
    ucs_debug("qpx iface %p: receive buffer pool of iface %p locked (used "
              "from the async thread)", iface, pool);
}


/* The buffer of a receive WR */
static UCS_F_ALWAYS_INLINE qpx_desc_t *
qpx_iface_rx_wr_desc(const struct ibv_recv_wr *wr)
{
    return (qpx_desc_t*)(uintptr_t)wr->wr_id;
}


/* Post n buffers chained by their WRs from head (tail: the last one's
 * link); returns how many the device took */
static unsigned qpx_iface_rx_post_chain(qpx_iface_t *iface,
                                        struct ibv_recv_wr *head,
                                        struct ibv_recv_wr **tail, unsigned n)
{
    struct ibv_recv_wr *wr, *bad_wr, *next;
    int ret;

    if (n == 0) {
        return 0;
    }

    *tail = NULL;
    if (iface->direct.enabled) {
        /* the queue has room for them (rx.available counts it): one left
         * out is a defect, logged, its buffer put back */
        (void)qpx_mlx5_rxq_post(iface->direct.rx, head, &bad_wr);
        ret = (bad_wr != NULL) ? ENOMEM : 0;
    } else if (iface->srq != NULL) {
        ret = ibv_post_srq_recv(iface->srq, head, &bad_wr);
    } else {
        ret = ibv_post_recv(iface->rx.qp, head, &bad_wr);
    }
    if (ret != 0) {
        /* The queue had room for them: the device or the QP failed */
        if (iface->direct.enabled) {
            ucs_error("%s: the receive queue had no free WQE for some of "
                      "%u receive buffers", iface->config.tl_name, n);
        } else if (iface->srq != NULL) {
            ucs_error("ibv_post_srq_recv(srq %p, %u WRs) failed: %s",
                      iface->srq, n, strerror(ret));
        } else {
            ucs_error("ibv_post_recv(qp 0x%x, %u WRs) failed: %s",
                      iface->rx.qp->qp_num, n, strerror(ret));
        }
        for (n = 0, wr = head; wr != bad_wr; wr = wr->next) {
            ++n;
        }
        for (; wr != NULL; wr = next) {
            next = wr->next;
            qpx_iface_rx_desc_put(iface, qpx_iface_rx_wr_desc(wr));
        }
    }

    iface->rx.available -= n;
    return n;
}


/*
 * Post up to count buffers, one chain of their own WRs however long (the
 * batch says how often to post, not how much): the recycled ones (as they
 * are), then fresh ones from rx_mp, each linked by its WR. Only the links
 * are written; the buffers' WRs were filled when rx_mp made them.
 */
unsigned qpx_iface_rx_post(qpx_iface_t *iface, unsigned count)
{
    struct ibv_recv_wr *head, **tail, *wr;
    unsigned i, n;
    qpx_desc_t *desc;

    if (ucs_unlikely((iface->srq == NULL) && (iface->rx.qp == NULL))) {
        return 0; /* no receive queue yet: qpx_iface_qp_get() makes it */
    }

    n    = iface->rx.num_recycled;
    tail = iface->rx.recycled_tail;
    if (ucs_unlikely(n > count)) {
        /* More recycled than asked for: the first count of them; the rest
         * stay chained for the next post */
        head = iface->rx.recycled;
        tail = &head;
        for (i = 0; i < count; ++i) {
            tail = &(*tail)->next;
        }
        iface->rx.recycled      = *tail;
        iface->rx.num_recycled -= count;
        return qpx_iface_rx_post_chain(iface, head, tail, count);
    }

    for (; n < count; ++n) {
        desc = qpx_iface_rx_desc_get(iface);
        if (desc == NULL) {
            /* the next buffer put back makes progress post again */
            iface->rx.starved  = 1;
            iface->rx.am_flags = 0; /* handlers copy: none kept */
            break;
        }
        wr    = &ucs_derived_of(desc, qpx_rx_desc_t)->wr;
        *tail = wr;
        tail  = &wr->next;
    }

    head = iface->rx.recycled;
    qpx_iface_rx_recycled_reset(iface);
    return qpx_iface_rx_post_chain(iface, head, tail, n);
}


/* Ask the device for the SRQ limit event at a quarter of the buffers
 * posted (ibv_modify_srq(3): it fires once, when fewer remain, and is then
 * disarmed). A device without it leaves the queue at its size. */
static void qpx_iface_rx_limit_arm(qpx_iface_t *iface)
{
    struct ibv_srq_attr attr;
    int ret;

    if ((iface->srq == NULL) || (iface->rx_owner != NULL) ||
        (iface->rx.queue_len >= iface->rx.queue_max)) {
        return;
    }

    memset(&attr, 0, sizeof(attr));
    attr.srq_limit = ucs_max(1, iface->rx.queue_len / 4);
    ret            = ibv_modify_srq(iface->srq, &attr, IBV_SRQ_LIMIT);
    if (ret != 0) {
        ucs_debug("%s:%d: ibv_modify_srq(IBV_SRQ_LIMIT %u) failed: %s; the "
                  "receive queue stays at %u", iface->md->dev.name,
                  iface->port_num, attr.srq_limit, strerror(ret),
                  iface->rx.queue_len);
        iface->rx.queue_max = iface->rx.queue_len;
    }
}


ucs_status_t qpx_iface_rx_fill(qpx_iface_t *iface)
{
    if ((iface->rx.available > 0) &&
        (qpx_iface_rx_post(iface, iface->rx.available) == 0)) {
        ucs_log(iface->exhausted_level, "%s: failed to post receive buffers",
                iface->config.tl_name);
        return UCS_ERR_NO_MEMORY;
    }
    qpx_iface_rx_limit_arm(iface);
    return UCS_OK;
}


void qpx_iface_rx_limit_reached(qpx_device_srq_handler_t *handler)
{
    qpx_iface_t *iface = ucs_container_of(handler, qpx_iface_t, srq_handler);

    /* Seen by the next progress; a worker asleep on the event fd wakes.
     * limit_hit first: progress clears low before it reads limit_hit, so
     * an event it does not see leaves low set. That needs a full fence on
     * both sides (this store/store pair against progress' store/load pair,
     * qpx_iface_rx_tend): volatile orders only the compiler, and not even
     * x86 keeps a store before a later load of the other thread's word
     * (store buffer), while Arm and POWER reorder the two stores here too.
     * The async thread takes this path once per SRQ limit event: the
     * fence costs nothing that counts. */
    __atomic_store_n(&iface->rx.limit_hit, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&iface->rx.low, 1, __ATOMIC_RELAXED);
    qpx_iface_event_signal(iface);
}


static void qpx_iface_rx_grow(qpx_iface_t *iface)
{
    unsigned more = ucs_min(iface->rx.queue_len,
                            iface->rx.queue_max - iface->rx.queue_len);

    iface->rx.queue_len += more;
    iface->rx.available += more;
    ++iface->rx.grows;
    ucs_debug("%s:%d: srq %p below its limit: %u receive buffers posted from "
              "now (at most %u)", iface->md->dev.name, iface->port_num,
              iface->srq, iface->rx.queue_len, iface->rx.queue_max);
}


void qpx_iface_rx_tend(qpx_iface_t *iface)
{
    int grow;

    __atomic_store_n(&iface->rx.low, 0, __ATOMIC_RELAXED);
    /* Full fence: low is cleared before limit_hit is read, on any CPU (a
     * store then a load of another word is the one pair x86 reorders as
     * well); pairs with the fence in qpx_iface_rx_limit_reached, so an
     * event this read misses has left low set again. Progress comes here
     * only when low was set, not on every call. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    grow = __atomic_load_n(&iface->rx.limit_hit, __ATOMIC_RELAXED);
    if (grow) {
        /* no new event before the limit is armed again below */
        __atomic_store_n(&iface->rx.limit_hit, 0, __ATOMIC_RELAXED);
        qpx_iface_rx_grow(iface);
    }
    if (iface->rx.starved) {
        ucs_trace("%s:%d: a receive buffer came back: %u owed to the receive "
                  "queue", iface->md->dev.name, iface->port_num,
                  iface->rx.available);
        iface->rx.starved  = 0; /* set again if the pool is still short */
        iface->rx.am_flags = UCT_CB_PARAM_FLAG_DESC;
    }
    /* All that is owed now, not at the next batch: the queue is short */
    if (iface->rx.available > 0) {
        (void)qpx_iface_rx_post(iface, iface->rx.available);
    }
    if (grow) {
        qpx_iface_rx_limit_arm(iface);
    }
}


/* The receive queue holds len buffers: refill in batches of at most a
 * quarter of it, so that a short queue is refilled before it runs dry */
void qpx_iface_rx_queue_set(qpx_iface_t *iface, unsigned len)
{
    iface->rx.queue_len = ucs_min(iface->rx.queue_len, len);
    iface->rx.available = iface->rx.queue_len;
    iface->rx.batch     = ucs_max(1, ucs_min(iface->rx.batch,
                                             iface->rx.queue_len / 4));
}
