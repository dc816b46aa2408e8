/*
 * qpx interface core: CQs, SRQ, receive and send buffers, QP pool.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_iface.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <string.h>


/* Buffers start on a cache line */
#define QPX_IFACE_DESC_ALIGN 64


ucs_config_field_t qpx_iface_config_table[] = {
    /* Named "QPX_", not "": UCX's parser reads a sub-table without a name
     * under the bare UCX_<NAME> (UCX_SEG_SIZE is UCP's own knob). Named, it
     * is read as UCX_QPX_<NAME>, then UCX_QPX_<TL>_<NAME> overrides it. */
    {"QPX_", "", NULL, ucs_offsetof(qpx_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Size of a receive buffer and of a bcopy send buffer, including the "
     "transport header. Active messages up to this size are accepted.",
     ucs_offsetof(qpx_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"TX_QUEUE_LEN", "256",
     "Send work requests per QP (the device may grant fewer).",
     ucs_offsetof(qpx_iface_config_t, tx.queue_len), UCS_CONFIG_TYPE_UINT},

    {"TX_CQ_LEN", "4096",
     "Entries of the interface's send completion queue.",
     ucs_offsetof(qpx_iface_config_t, tx.cq_len), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_INLINE", "128",
     "Inline data requested per send; the granted size (read back from the "
     "QP) bounds the short operations.",
     ucs_offsetof(qpx_iface_config_t, tx.max_inline), UCS_CONFIG_TYPE_MEMUNITS},

    {"TX_MODERATION", "32",
     "Request a send completion every N sends (operations that need a "
     "completion are always signalled).",
     ucs_offsetof(qpx_iface_config_t, tx.moderation), UCS_CONFIG_TYPE_UINT},

    {"TX_MAX_BUFS", "-1",
     "Maximal number of send bounce buffers (-1: unlimited).",
     ucs_offsetof(qpx_iface_config_t, tx.mp.max_bufs), UCS_CONFIG_TYPE_INT},

    {"TX_BUFS_GROW", "128",
     "Send bounce buffers allocated at a time.",
     ucs_offsetof(qpx_iface_config_t, tx.mp.bufs_grow), UCS_CONFIG_TYPE_UINT},

    {"RX_QUEUE_LEN", "1024",
     "Receive buffers posted to the interface's shared receive queue.",
     ucs_offsetof(qpx_iface_config_t, rx.queue_len), UCS_CONFIG_TYPE_UINT},

    {"RX_QUEUE_MAX", "auto",
     "Receive buffers the shared receive queue may grow to when the device "
     "reports it running low (the SRQ limit event: a burst the progress "
     "falls behind); auto: 4 times RX_QUEUE_LEN. At most RX_QUEUE_LEN: it "
     "does not grow.",
     ucs_offsetof(qpx_iface_config_t, rx.queue_max), UCS_CONFIG_TYPE_ULUNITS},

    {"RX_MAX_BATCH", "16",
     "Receive buffers reposted at a time.",
     ucs_offsetof(qpx_iface_config_t, rx.max_batch), UCS_CONFIG_TYPE_UINT},

    {"RX_MAX_BUFS", "-1",
     "Maximal number of receive buffers (-1: unlimited).",
     ucs_offsetof(qpx_iface_config_t, rx.mp.max_bufs), UCS_CONFIG_TYPE_INT},

    {"RX_BUFS_GROW", "256",
     "Receive buffers allocated at a time.",
     ucs_offsetof(qpx_iface_config_t, rx.mp.bufs_grow), UCS_CONFIG_TYPE_UINT},

    {"QP_POOL_SIZE", "16",
     "QPs kept in RESET for reuse by new endpoints.",
     ucs_offsetof(qpx_iface_config_t, qp_pool_size), UCS_CONFIG_TYPE_UINT},

    {NULL}
};


static void qpx_iface_desc_init(uct_iface_h tl_iface, void *obj,
                                uct_mem_h memh)
{
    qpx_desc_t *desc = obj;
    qpx_mem_t *mem   = memh;

    desc->lkey  = mem->mr->lkey;
    desc->flags = 0;
}


static void qpx_iface_release_desc(uct_recv_desc_t *self, void *user_desc)
{
    qpx_iface_t *iface = ucs_container_of(self, qpx_iface_t, release_desc);
    qpx_desc_t *desc   = UCS_PTR_BYTE_OFFSET(user_desc,
                                   -(ptrdiff_t)iface->config.rx_headroom_offset);

    /* The SRQ slot of a kept buffer was refilled when it was kept */
    qpx_iface_rx_desc_put(iface, desc);
}


/* What the device last ran out of in this thread (qpx_iface_exhausted_what) */
static __thread const char *qpx_iface_exhausted_res = NULL;


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

    qpx_iface_exhausted_res = "memory registration";
    mp->data->quota         = 0;
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


/* mp (initialized by UCX) grows through qpx_iface_mp_grow */
static void qpx_iface_mp_wrap(qpx_iface_t *iface, ucs_mpool_t *mp,
                              ucs_mpool_ops_t *ops,
                              ucs_status_t (*grow)(ucs_mpool_t*, size_t*,
                                                   void**))
{
    iface->mp_chunk_alloc = mp->data->ops->chunk_alloc;
    *ops                  = *mp->data->ops;
    ops->chunk_alloc      = grow;
    mp->data->ops         = ops;
}


/* Fill receive WR n of the batch for desc */
static UCS_F_ALWAYS_INLINE void
qpx_iface_rx_wr_set(qpx_iface_t *iface, unsigned n, qpx_desc_t *desc)
{
    /* sg_list, num_sge, length and the chain were set at init */
    iface->rx.sges[n].addr = (uintptr_t)desc + iface->config.rx_hdr_offset;
    iface->rx.sges[n].lkey = desc->lkey;
    iface->rx.wrs[n].wr_id = (uintptr_t)desc;
}


/* The SRQ offered to the next interface constructed by this thread */
static __thread qpx_iface_t *qpx_iface_rx_share_hint = NULL;

/* How the next interface constructed by this thread logs a QP the device
 * has no room for */
static __thread ucs_log_level_t qpx_iface_exhausted_hint =
        UCS_LOG_LEVEL_ERROR;


/* Set for the next interface this thread constructs (attr_only) */
static __thread int qpx_iface_attr_only_hint = 0;


void qpx_iface_attr_only_next(int attr_only)
{
    qpx_iface_attr_only_hint = attr_only;
}


void qpx_iface_exhausted_next(ucs_log_level_t level)
{
    qpx_iface_exhausted_hint = level;
}


const char *qpx_iface_exhausted_what(void)
{
    const char *what = qpx_iface_exhausted_res;

    qpx_iface_exhausted_res = NULL;
    return what;
}


void qpx_iface_exhausted_set(const char *what)
{
    qpx_iface_exhausted_res = what;
}


/* The level a failed creation of what is logged at: self's exhausted_level
 * where the device had no room or memory for it (ENOMEM, EAGAIN), which is
 * then remembered; error otherwise. errno is left as it is, for %m. */
static ucs_log_level_t qpx_iface_failure_level(const qpx_iface_t *self,
                                               const char *what)
{
    if ((errno != ENOMEM) && (errno != EAGAIN)) {
        return UCS_LOG_LEVEL_ERROR;
    }
    qpx_iface_exhausted_res = what;
    return self->exhausted_level;
}


void qpx_iface_rx_share_next(qpx_iface_t *owner)
{
    qpx_iface_rx_share_hint = owner;
}


int qpx_iface_rx_share_layout(qpx_iface_t *self, const qpx_iface_t *owner)
{
    size_t hdr_offset, payload_offset, priv_end;
    unsigned i;

    /* The same port, buffers at least self's SEG_SIZE, and from owner's
     * landing point back: self's header, the user's headroom and the
     * release pointer before it, then self's private bytes after its
     * qpx_desc_t */
    if ((owner == NULL) || (owner->srq == NULL) || (owner->md != self->md) ||
        (owner->port_num != self->port_num) ||
        (owner->config.seg_size < self->config.seg_size)) {
        return 0;
    }

    hdr_offset     = owner->config.rx_hdr_offset;
    payload_offset = hdr_offset + self->config.rx_hdr_len;
    priv_end       = sizeof(qpx_desc_t) + self->config.rx_priv_len;
    if ((hdr_offset < priv_end) ||
        (payload_offset < priv_end + sizeof(void*) +
                          self->config.rx_headroom)) {
        return 0;
    }

    self->config.rx_hdr_offset      = hdr_offset;
    self->config.rx_payload_offset  = payload_offset;
    self->config.rx_headroom_offset = payload_offset -
                                      self->config.rx_headroom;
    /* Every buffer in the SRQ of one length: any QP may take any */
    for (i = 0; i < self->rx.batch; ++i) {
        self->rx.sges[i].length = owner->config.seg_size;
    }
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


/* Post up to batch buffers: the recycled ones, then fresh ones */
static unsigned qpx_iface_rx_post_batch(qpx_iface_t *iface, unsigned count)
{
    struct ibv_recv_wr *wrs = iface->rx.wrs, *bad_wr;
    unsigned i, n, recycled;
    qpx_desc_t *desc;
    int ret;

    recycled = ucs_min(count, iface->rx.num_recycled);
    for (n = 0; n < recycled; ++n) {
        qpx_iface_rx_wr_set(iface, n, iface->rx.recycled[n]);
    }
    for (; n < count; ++n) {
        desc = qpx_iface_rx_desc_get(iface);
        if (desc == NULL) {
            break;
        }
        qpx_iface_rx_wr_set(iface, n, desc);
    }

    /* Recycled buffers beyond count (none in practice) go back to rx_mp */
    for (i = recycled; i < iface->rx.num_recycled; ++i) {
        qpx_iface_rx_desc_put(iface, iface->rx.recycled[i]);
    }
    iface->rx.num_recycled = 0;

    if (n == 0) {
        return 0;
    }

    wrs[n - 1].next = NULL;
    ret = (iface->srq != NULL) ? ibv_post_srq_recv(iface->srq, wrs, &bad_wr) :
                                 ibv_post_recv(iface->rx.qp, wrs, &bad_wr);
    wrs[n - 1].next = (n < iface->rx.batch) ? &wrs[n] : NULL;
    if (ret != 0) {
        /* The queue had room for count: the device or the QP failed */
        if (iface->srq != NULL) {
            ucs_error("ibv_post_srq_recv(srq %p, %u WRs) failed: %s",
                      iface->srq, n, strerror(ret));
        } else {
            ucs_error("ibv_post_recv(qp 0x%x, %u WRs) failed: %s",
                      iface->rx.qp->qp_num, n, strerror(ret));
        }
        for (i = bad_wr - wrs; i < n; ++i) {
            qpx_iface_rx_desc_put(iface, (void*)(uintptr_t)wrs[i].wr_id);
        }
        n = bad_wr - wrs;
    }

    iface->rx.available -= n;
    return n;
}


unsigned qpx_iface_rx_post(qpx_iface_t *iface, unsigned count)
{
    unsigned total = 0, chunk, n;

    if (ucs_unlikely((iface->srq == NULL) && (iface->rx.qp == NULL))) {
        return 0; /* no receive queue yet: qpx_iface_qp_get() makes it */
    }

    if (ucs_likely(count <= iface->rx.batch)) {
        return (count == 0) ? 0 : qpx_iface_rx_post_batch(iface, count);
    }

    do {
        chunk  = ucs_min(count - total, iface->rx.batch);
        n      = qpx_iface_rx_post_batch(iface, chunk);
        total += n;
    } while ((n == chunk) && (total < count));

    return total;
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


ucs_status_t qpx_iface_rx_fill(qpx_iface_t *iface, const char *tl_name)
{
    if ((iface->rx.available > 0) &&
        (qpx_iface_rx_post(iface, iface->rx.available) == 0)) {
        ucs_log(iface->exhausted_level, "%s: failed to post receive buffers",
                tl_name);
        return UCS_ERR_NO_MEMORY;
    }
    qpx_iface_rx_limit_arm(iface);
    return UCS_OK;
}


void qpx_iface_rx_limit_reached(qpx_iface_t *iface)
{
    /* Seen by the next progress; a worker asleep on the event fd wakes */
    iface->rx.low = 1;
    qpx_iface_event_signal(iface);
}


void qpx_iface_rx_grow(qpx_iface_t *iface)
{
    unsigned more = ucs_min(iface->rx.queue_len,
                            iface->rx.queue_max - iface->rx.queue_len);

    iface->rx.low        = 0;
    iface->rx.queue_len += more;
    iface->rx.available += more;
    ++iface->rx.grows;
    ucs_debug("%s:%d: srq %p below its limit: %u receive buffers posted from "
              "now (at most %u)", iface->md->dev.name, iface->port_num,
              iface->srq, iface->rx.queue_len, iface->rx.queue_max);
    /* All that is owed now, not at the next batch: the queue is short */
    if (iface->rx.available > 0) {
        (void)qpx_iface_rx_post(iface, iface->rx.available);
    }
    qpx_iface_rx_limit_arm(iface);
}


/* The receive queue holds len buffers: refill in batches of at most a
 * quarter of it, so that a short queue is refilled before it runs dry */
static void qpx_iface_rx_queue_set(qpx_iface_t *iface, unsigned len)
{
    iface->rx.queue_len = ucs_min(iface->rx.queue_len, len);
    iface->rx.available = iface->rx.queue_len;
    iface->rx.batch     = ucs_max(1, ucs_min(iface->rx.batch,
                                             iface->rx.queue_len / 4));
}


ucs_status_t qpx_iface_qp_get(qpx_iface_t *iface, struct ibv_qp **qp_p)
{
    struct ibv_qp_init_attr attr;
    struct ibv_qp *qp;
    ucs_status_t status;

    qp = qpx_qp_pool_get(&iface->qp_pool);
    if (qp != NULL) {
        iface->qp_pool.reused++;
        *qp_p = qp;
        return UCS_OK;
    }

    attr                   = iface->qp_init_attr;
    qpx_qp_exhausted_level = iface->exhausted_level;
    status = iface->qp_create(iface->md->pd, &iface->md->dev, &attr, &qp);
    qpx_qp_exhausted_level = UCS_LOG_LEVEL_ERROR;
    if (status != UCS_OK) {
        if (status == UCS_ERR_NO_MEMORY) {
            qpx_iface_exhausted_res = "QP";
        }
        return status;
    }
    iface->qp_pool.created++;

    if (!iface->qp_caps_granted) {
        /* Every later QP asks for exactly what the first one got */
        iface->qp_init_attr.cap     = attr.cap;
        iface->qp_caps_granted      = 1;
        iface->config.max_inline    = attr.cap.max_inline_data;
        iface->config.max_send_sge  = attr.cap.max_send_sge;
        iface->config.tx_queue_len  = ucs_min(attr.cap.max_send_wr,
                                              iface->config.tx_queue_len);
        if (iface->srq == NULL) {
            /* Its receive queue is the interface's (ibv_create_qp(3): the
             * granted max_recv_wr may be larger than asked) */
            iface->rx.qp = qp;
            qpx_iface_rx_queue_set(iface, attr.cap.max_recv_wr);
        }
    }

    *qp_p = qp;
    return UCS_OK;
}


unsigned qpx_iface_qp_prefill(qpx_iface_t *iface, unsigned count)
{
    struct ibv_qp_init_attr attr;
    ucs_status_t status;
    struct ibv_qp *qp;
    unsigned n;

    /* The first QP fixes the granted caps: it is created on demand */
    if (!iface->qp_caps_granted) {
        return 0;
    }
    for (n = 0; (n < count) &&
                (iface->qp_pool.count < iface->qp_pool.size); ++n) {
        /* Ahead of need: a QP the device has no room for is no error */
        attr                   = iface->qp_init_attr;
        qpx_qp_exhausted_level = UCS_LOG_LEVEL_DEBUG;
        status = iface->qp_create(iface->md->pd, &iface->md->dev, &attr, &qp);
        qpx_qp_exhausted_level = UCS_LOG_LEVEL_ERROR;
        if (status != UCS_OK) {
            ucs_debug("qpx iface %p: %u of %u QPs created ahead", iface, n,
                      count);
            break;
        }
        iface->qp_pool.created++;
        (void)qpx_qp_pool_add(&iface->qp_pool, qp);
    }
    return n;
}


void qpx_iface_qp_put(qpx_iface_t *iface, struct ibv_qp *qp)
{
    qpx_qp_pool_put(&iface->qp_pool, qp);
}


ucs_status_t qpx_iface_qp_map_add(qpx_iface_t *iface, uint32_t qp_num,
                                  void *obj)
{
    khiter_t it;
    int ret;

    it = kh_put(qpx_qp_map, &iface->qp_map, qp_num, &ret);
    if (ret == -1) {
        ucs_error("failed to map qp 0x%x", qp_num);
        return UCS_ERR_NO_MEMORY;
    }

    kh_value(&iface->qp_map, it) = obj;
    return UCS_OK;
}


void qpx_iface_qp_map_del(qpx_iface_t *iface, uint32_t qp_num)
{
    khiter_t it = kh_get(qpx_qp_map, &iface->qp_map, qp_num);

    if (it != kh_end(&iface->qp_map)) {
        kh_del(qpx_qp_map, &iface->qp_map, it);
    }
}


void qpx_iface_query(qpx_iface_t *iface, uct_iface_attr_t *iface_attr)
{
    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->device_addr_len = qpx_device_addr_size(iface->port);
    iface_attr->iface_addr_len  = 0;
    iface_attr->max_num_eps     = iface->super.config.max_num_eps;
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = iface->port->bandwidth;
    iface_attr->latency         = ucs_linear_func_make(iface->port->latency,
                                                       0);
    iface_attr->overhead        = 75e-9;
    iface_attr->priority        = 0;
}


void qpx_iface_query_rdma(qpx_iface_t *iface, const qpx_iface_rdma_caps_t *caps,
                          uct_iface_attr_t *iface_attr)
{
    size_t am_max = iface->config.seg_size - caps->am_hdr_len;

    iface_attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT |
                             UCT_IFACE_FLAG_PUT_BCOPY |
                             UCT_IFACE_FLAG_PUT_ZCOPY |
                             UCT_IFACE_FLAG_GET_BCOPY |
                             UCT_IFACE_FLAG_GET_ZCOPY |
                             UCT_IFACE_FLAG_AM_SHORT |
                             UCT_IFACE_FLAG_AM_BCOPY |
                             UCT_IFACE_FLAG_AM_ZCOPY |
                             UCT_IFACE_FLAG_PENDING |
                             UCT_IFACE_FLAG_CB_SYNC |
                             UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                             UCT_IFACE_FLAG_EP_CHECK;
    if (caps->events) {
        iface_attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                      UCT_IFACE_FLAG_EVENT_RECV |
                                      UCT_IFACE_FLAG_EVENT_FD;
    }

    iface_attr->cap.put.max_short       = caps->max_put_short;
    iface_attr->cap.put.max_bcopy       = caps->max_bcopy;
    iface_attr->cap.put.min_zcopy       = 0;
    iface_attr->cap.put.max_zcopy       = caps->max_zcopy;
    iface_attr->cap.put.opt_zcopy_align = 1;
    iface_attr->cap.put.align_mtu       = 1;
    iface_attr->cap.put.max_iov         = caps->max_iov;

    iface_attr->cap.get.max_bcopy       = caps->max_bcopy;
    iface_attr->cap.get.min_zcopy       = 0;
    iface_attr->cap.get.max_zcopy       = caps->max_zcopy;
    iface_attr->cap.get.opt_zcopy_align = 1;
    iface_attr->cap.get.align_mtu       = 1;
    iface_attr->cap.get.max_iov         = caps->max_iov;

    iface_attr->cap.am.max_short        = caps->max_am_short;
    iface_attr->cap.am.max_bcopy        = am_max;
    iface_attr->cap.am.min_zcopy        = 0;
    iface_attr->cap.am.max_zcopy        = am_max;
    iface_attr->cap.am.opt_zcopy_align  = 1;
    iface_attr->cap.am.align_mtu        = 1;
    iface_attr->cap.am.max_hdr          = ucs_min(am_max, 128);
    iface_attr->cap.am.max_iov          = caps->max_iov;

    if (caps->atomics) {
        iface_attr->cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        iface_attr->cap.atomic64.op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD);
        iface_attr->cap.atomic64.fop_flags = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                                             UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }
}


ucs_status_t qpx_iface_get_device_address(uct_iface_h tl_iface,
                                          uct_device_addr_t *addr)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);

    qpx_device_addr_pack(iface->port, addr);
    return UCS_OK;
}


int qpx_iface_is_reachable(const uct_iface_h tl_iface,
                           const uct_device_addr_t *dev_addr,
                           const uct_iface_addr_t *iface_addr)
{
    qpx_iface_t *iface = ucs_derived_of(tl_iface, qpx_iface_t);
    qpx_device_addr_t addr;

    if (dev_addr == NULL) {
        return 0;
    }
    qpx_device_addr_unpack(dev_addr, &addr);
    return qpx_device_addr_is_reachable(iface->port, &addr);
}


ucs_status_t qpx_iface_query_devices(uct_md_h uct_md,
                                     uct_tl_device_resource_t **tl_devices_p,
                                     unsigned *num_tl_devices_p)
{
    qpx_md_t *md = ucs_derived_of(uct_md, qpx_md_t);

    return qpx_device_query_tl_resources(&md->dev, tl_devices_p,
                                         num_tl_devices_p);
}


static void qpx_iface_rx_wrs_cleanup(qpx_iface_t *self)
{
    free(self->rx.sges);
    free(self->rx.wrs);
    free(self->rx.recycled);
}


/* One batch of receive WRs with the fields that never change, chained */
static ucs_status_t qpx_iface_rx_wrs_init(qpx_iface_t *self)
{
    unsigned i;

    self->rx.num_recycled = 0;
    self->rx.recycled     = calloc(self->rx.batch, sizeof(*self->rx.recycled));
    self->rx.wrs          = calloc(self->rx.batch, sizeof(*self->rx.wrs));
    self->rx.sges         = calloc(self->rx.batch, sizeof(*self->rx.sges));
    if ((self->rx.recycled == NULL) || (self->rx.wrs == NULL) ||
        (self->rx.sges == NULL)) {
        ucs_error("failed to allocate %u receive WRs", self->rx.batch);
        qpx_iface_rx_wrs_cleanup(self);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < self->rx.batch; ++i) {
        self->rx.sges[i].length = self->config.seg_size;
        self->rx.wrs[i].sg_list = &self->rx.sges[i];
        self->rx.wrs[i].num_sge = 1;
        self->rx.wrs[i].next    = (i + 1 < self->rx.batch) ?
                                  &self->rx.wrs[i + 1] : NULL;
    }
    return UCS_OK;
}


static ucs_status_t qpx_iface_create_queues(qpx_iface_t *self,
                                            const qpx_iface_config_t *config,
                                            int use_srq)
{
    const qpx_device_t *dev = &self->md->dev;
    struct ibv_srq_init_attr srq_attr;
    size_t queue_max, posted_max;
    ucs_status_t status = UCS_ERR_IO_ERROR;
    ucs_log_level_t level;
    qpx_iface_t *owner;
    int cq_len, flags;

    /* Event notification (uct_iface_event_fd_get/arm): one channel for
     * both CQs; non-blocking, so that pre-arm can drain it */
    self->comp_channel = ibv_create_comp_channel(dev->ctx);
    if (self->comp_channel == NULL) {
        ucs_error("ibv_create_comp_channel(%s) failed: %m", dev->name);
        return UCS_ERR_IO_ERROR;
    }
    flags = fcntl(self->comp_channel->fd, F_GETFL);
    if ((flags < 0) ||
        (fcntl(self->comp_channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)) {
        ucs_error("fcntl(completion channel fd %d, O_NONBLOCK) failed: %m",
                  self->comp_channel->fd);
        goto err_destroy_channel;
    }

    if (qpx_iface_event_init(self) != UCS_OK) {
        goto err_destroy_channel;
    }

    cq_len        = self->attr_only ? 1 :
                    ucs_min(config->tx.cq_len, (unsigned)dev->attr.max_cqe);
    self->send_cq = ibv_create_cq(dev->ctx, cq_len, NULL, self->comp_channel,
                                  0);
    if (self->send_cq == NULL) {
        level = qpx_iface_failure_level(self, "CQ");
        ucs_log(level, "ibv_create_cq(%s, %d) failed: %m", dev->name, cq_len);
        status = (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
        goto err_event_cleanup;
    }
    /* Keep room for the error completions of one flushed send queue */
    self->tx.cq_available = self->send_cq->cqe - 1;
    self->tx.cq_size      = self->tx.cq_available;

    /* The SRQ of the interface offered to this one, where their receive
     * buffers agree */
    owner                   = qpx_iface_rx_share_hint;
    qpx_iface_rx_share_hint = NULL;
    if (!use_srq || !qpx_iface_rx_share_layout(self, owner)) {
        if (use_srq && (owner != NULL)) {
            ucs_debug("qpx iface %p: a receive buffer layout or port of its "
                      "own (seg %zu hdr %zu+%zu headroom %zu against seg "
                      "%zu landing at %zu): an SRQ of its own", self,
                      self->config.seg_size, self->config.rx_hdr_offset,
                      self->config.rx_hdr_len, self->config.rx_headroom,
                      owner->config.seg_size, owner->config.rx_hdr_offset);
        }
        owner = NULL;
    }

    /* A completion per receive: the CQ holds every buffer the receive queue
     * may have posted (all of a shared SRQ's, which its owner may grow) */
    queue_max = (config->rx.queue_max == UCS_ULUNITS_AUTO) ?
                4 * (size_t)config->rx.queue_len : config->rx.queue_max;
    queue_max = ucs_max(queue_max, config->rx.queue_len);
    if (owner != NULL) {
        posted_max = ucs_max(owner->rx.queue_max, config->rx.queue_len);
    } else {
        posted_max = use_srq ? queue_max : config->rx.queue_len;
    }
    cq_len        = self->attr_only ? 1 :
                    ucs_min(posted_max, (unsigned)dev->attr.max_cqe);
    self->recv_cq = ibv_create_cq(dev->ctx, cq_len, NULL, self->comp_channel,
                                  0);
    if (self->recv_cq == NULL) {
        level = qpx_iface_failure_level(self, "CQ");
        ucs_log(level, "ibv_create_cq(%s, %d) failed: %m", dev->name, cq_len);
        status = (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
        goto err_destroy_send_cq;
    }
    self->rx.queue_len = ucs_min(config->rx.queue_len,
                                 (unsigned)self->recv_cq->cqe);
    self->rx.queue_max = self->rx.queue_len;

    if (!use_srq) {
        /* The first QP's receive queue, sized when it is created */
        self->srq = NULL;
        qpx_iface_rx_queue_set(self, dev->attr.max_qp_wr);
        return UCS_OK;
    }

    if (owner != NULL) {
        /* The owner's SRQ: it filled it; what this interface's QPs consume
         * it refills (qpx_iface_rx_fill posts nothing) */
        self->srq      = owner->srq;
        self->rx_owner = owner;
        qpx_iface_rx_queue_set(self, owner->rx.queue_len);
        self->rx.available = 0;
        ucs_debug("qpx iface %p shares srq %p of iface %p", self, self->srq,
                  owner);
        return UCS_OK;
    }

    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.attr.max_wr  = ucs_min(ucs_min(queue_max,
                                            (unsigned)self->recv_cq->cqe),
                                    (unsigned)dev->attr.max_srq_wr);
    srq_attr.attr.max_sge = 1;
    /* The device's SRQ events name the interface (qpx_device_event.c) */
    srq_attr.srq_context  = self;
    self->srq = ibv_create_srq(self->md->pd, &srq_attr);
    if (self->srq == NULL) {
        level = qpx_iface_failure_level(self, "SRQ");
        ucs_log(level, "ibv_create_srq(%s, %u) failed: %m", dev->name,
                srq_attr.attr.max_wr);
        status = (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
        goto err_destroy_recv_cq;
    }

    /* srq_attr.attr.max_wr now holds what the device granted: the queue
     * starts at RX_QUEUE_LEN and may grow to it */
    self->rx.queue_max = srq_attr.attr.max_wr;
    qpx_iface_rx_queue_set(self, srq_attr.attr.max_wr);
    return UCS_OK;

err_destroy_recv_cq:
    ibv_destroy_cq(self->recv_cq);
err_destroy_send_cq:
    ibv_destroy_cq(self->send_cq);
err_event_cleanup:
    qpx_iface_event_cleanup(self);
err_destroy_channel:
    ibv_destroy_comp_channel(self->comp_channel);
    return status;
}


UCS_CLASS_INIT_FUNC(qpx_iface_t, uct_iface_ops_t *ops,
                    uct_iface_internal_ops_t *internal_ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const qpx_iface_config_t *config,
                    const qpx_iface_init_attr_t *init_attr)
{
    uct_iface_mpool_config_t mp_config;
    ucs_status_t status;
    size_t rx_headroom, seg_size;
    void *desc;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, ops, internal_ops, md, worker,
                              params, &config->super);

    self->md  = ucs_derived_of(md, qpx_md_t);
    self->ops = init_attr->ops;
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("qpx interfaces open only in device mode");
        return UCS_ERR_UNSUPPORTED;
    }

    status = qpx_device_parse_port(&self->md->dev, params->mode.device.dev_name,
                                   &self->port_num);
    if (status != UCS_OK) {
        return status;
    }

    /* Its CQs and QPs report through the device's async events */
    status = qpx_device_events_start(&self->md->dev);
    if (status != UCS_OK) {
        return status;
    }

    seg_size = (init_attr->seg_size != 0) ? init_attr->seg_size :
                                            config->seg_size;
    if ((seg_size <= init_attr->rx_hdr_len) ||
        (config->tx.queue_len == 0) || (config->rx.queue_len == 0)) {
        ucs_error("invalid qpx configuration: seg_size %zu queue lengths "
                  "tx %u rx %u", seg_size, config->tx.queue_len,
                  config->rx.queue_len);
        return UCS_ERR_INVALID_PARAM;
    }

    rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                  params->rx_headroom : 0;

    self->port                      = qpx_device_port(&self->md->dev,
                                                      self->port_num);
    self->config.seg_size           = seg_size;
    self->config.rx_headroom        = rx_headroom;
    /* Aligned for the user's headroom and the release pointer before it */
    self->config.rx_payload_offset  = ucs_align_up(sizeof(qpx_desc_t) +
                                                   init_attr->rx_priv_len +
                                                   ucs_max(init_attr->rx_hdr_len,
                                                           sizeof(void*) +
                                                           rx_headroom), 8);
    self->config.rx_hdr_offset      = self->config.rx_payload_offset -
                                      init_attr->rx_hdr_len;
    self->config.rx_hdr_len         = init_attr->rx_hdr_len;
    self->config.rx_priv_len        = init_attr->rx_priv_len;
    self->config.rx_headroom_offset = self->config.rx_payload_offset -
                                      rx_headroom;
    self->config.tx_priv_len        = init_attr->tx_priv_len;
    self->config.tx_queue_len       = config->tx.queue_len;
    self->config.tx_moderation      = ucs_max(1, ucs_min(config->tx.moderation,
                                                config->tx.queue_len / 2));
    self->config.max_inline         = config->tx.max_inline;
    self->config.max_send_sge       = init_attr->max_send_sge;
    self->config.access_flags       = init_attr->access_flags;
    self->release_desc.cb           = qpx_iface_release_desc;
    self->rx.batch                  = ucs_max(1, config->rx.max_batch);
    self->qp_caps_granted           = 0;
    self->exhausted_level        = qpx_iface_exhausted_hint;
    qpx_iface_exhausted_hint     = UCS_LOG_LEVEL_ERROR;
    self->attr_only              = qpx_iface_attr_only_hint;
    qpx_iface_attr_only_hint     = 0;
    self->rx.qp                     = NULL;
    self->rx.low                    = 0;
    self->rx.grows                  = 0;
    self->rx_owner                  = NULL;
    self->rx_mp_locked              = 0;

    status = ucs_spinlock_init(&self->rx_mp_lock, 0);
    if (status != UCS_OK) {
        return status;
    }

    status = qpx_iface_rx_wrs_init(self);
    if (status != UCS_OK) {
        goto err_destroy_lock;
    }

    ucs_arbiter_init(&self->arbiter);
    self->pending.ep          = NULL;
    self->backlog.rx_count    = 0;
    self->backlog.tx_count    = 0;
    self->keepalive.interval  = 0;
    self->keepalive.timer.fd  = -1;
    self->keepalive.timer.id  = -1;
    self->keepalive.due       = 0;
    ucs_list_head_init(&self->pending.resched);
    kh_init_inplace(qpx_qp_map, &self->qp_map);

    status = qpx_iface_create_queues(self, config, init_attr->use_srq);
    if (status != UCS_OK) {
        goto err_destroy_map;
    }

    memset(&self->qp_init_attr, 0, sizeof(self->qp_init_attr));
    self->qp_init_attr.qp_type          = init_attr->qp_type;
    self->qp_init_attr.send_cq          = self->send_cq;
    self->qp_init_attr.recv_cq          = self->recv_cq;
    self->qp_init_attr.srq              = init_attr->use_srq ? self->srq : NULL;
    self->qp_init_attr.sq_sig_all       = 0;
    self->qp_init_attr.cap.max_send_wr  = config->tx.queue_len;
    self->qp_init_attr.cap.max_send_sge = init_attr->max_send_sge;
    self->qp_init_attr.cap.max_inline_data = config->tx.max_inline;
    if (!init_attr->use_srq) {
        self->qp_init_attr.cap.max_recv_wr  = self->rx.queue_len;
        self->qp_init_attr.cap.max_recv_sge = 1;
    }

    self->qp_create = (init_attr->qp_create != NULL) ? init_attr->qp_create :
                      qpx_qp_create;
    status = qpx_qp_pool_init(&self->qp_pool, config->qp_pool_size);
    if (status != UCS_OK) {
        goto err_destroy_queues;
    }

    /* A chunk holds at least the whole receive queue: the first fill is one
     * registration, not one per RX_BUFS_GROW buffers */
    mp_config           = config->rx.mp;
    mp_config.bufs_grow = ucs_min(ucs_max(mp_config.bufs_grow,
                                          self->rx.queue_len),
                                  mp_config.max_bufs); /* -1: UINT_MAX */
    status = uct_iface_mpool_init(&self->super, &self->rx_mp,
                                  self->config.rx_hdr_offset +
                                  self->config.seg_size, 0,
                                  QPX_IFACE_DESC_ALIGN, &mp_config,
                                  mp_config.bufs_grow,
                                  qpx_iface_desc_init, "qpx_rx_desc");
    if (status != UCS_OK) {
        goto err_pool_cleanup;
    }
    qpx_iface_mp_wrap(self, &self->rx_mp, &self->rx_mp_ops,
                      qpx_iface_rx_mp_grow);

    /* ucs_mpool refuses a chunk larger than its maximum */
    mp_config           = config->tx.mp;
    mp_config.bufs_grow = ucs_min(mp_config.bufs_grow, mp_config.max_bufs);
    status = uct_iface_mpool_init(&self->super, &self->tx_mp,
                                  init_attr->tx_priv_len +
                                  self->config.seg_size, 0,
                                  QPX_IFACE_DESC_ALIGN, &mp_config,
                                  mp_config.bufs_grow,
                                  qpx_iface_desc_init, "qpx_tx_desc");
    if (status != UCS_OK) {
        goto err_rx_mp_cleanup;
    }
    qpx_iface_mp_wrap(self, &self->tx_mp, &self->tx_mp_ops,
                      qpx_iface_tx_mp_grow);

    /* The first chunk of send buffers now: an interface whose memory cannot
     * be registered (the device's MR limit) fails to open with that error,
     * instead of refusing every send later with no end (UCP retries a
     * UCS_ERR_NO_RESOURCE for ever) */
    if (!self->attr_only) {
        desc = ucs_mpool_get(&self->tx_mp);
        if (desc == NULL) {
            ucs_log(self->exhausted_level, "qpx iface %s:%d: no send buffer "
                    "could be allocated and registered", self->md->dev.name,
                    self->port_num);
            status = UCS_ERR_NO_MEMORY;
            goto err_tx_mp_cleanup;
        }
        ucs_mpool_put(desc);
    }

    ucs_debug("qpx iface %p %s:%d seg %zu rx hdr %zu payload %zu headroom "
              "%zu srq %u", self, self->md->dev.name, self->port_num,
              self->config.seg_size, self->config.rx_hdr_offset,
              self->config.rx_payload_offset, rx_headroom, self->rx.queue_len);
    return UCS_OK;

err_tx_mp_cleanup:
    ucs_mpool_cleanup(&self->tx_mp, 1);
err_rx_mp_cleanup:
    ucs_mpool_cleanup(&self->rx_mp, 1);
err_pool_cleanup:
    qpx_qp_pool_cleanup(&self->qp_pool);
err_destroy_queues:
    if ((self->srq != NULL) && (self->rx_owner == NULL)) {
        ibv_destroy_srq(self->srq);
    }
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    qpx_iface_event_cleanup(self);
    ibv_destroy_comp_channel(self->comp_channel);
err_destroy_map:
    kh_destroy_inplace(qpx_qp_map, &self->qp_map);
    ucs_arbiter_cleanup(&self->arbiter);
    qpx_iface_rx_wrs_cleanup(self);
err_destroy_lock:
    ucs_spinlock_destroy(&self->rx_mp_lock);
    return status;
}


UCS_CLASS_CLEANUP_FUNC(qpx_iface_t)
{
    int ret;

    qpx_iface_keepalive_stop(self);
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    qpx_qp_pool_cleanup(&self->qp_pool);

    if ((self->srq != NULL) && (self->rx_owner == NULL)) {
        ret = ibv_destroy_srq(self->srq);
        if (ret != 0) {
            ucs_warn("ibv_destroy_srq() failed: %s", strerror(ret));
        }
    }
    qpx_iface_ack_events(self); /* destroying a CQ waits for its acks */
    ibv_destroy_cq(self->recv_cq);
    ibv_destroy_cq(self->send_cq);
    qpx_iface_event_cleanup(self);
    ibv_destroy_comp_channel(self->comp_channel);
    ucs_spinlock_destroy(&self->rx_mp_lock);

    /* Receive buffers posted to the destroyed SRQ are not returned to the
     * pool: leak-check quietly */
    ucs_mpool_cleanup(&self->rx_mp, 0);
    qpx_iface_rx_wrs_cleanup(self);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    kh_destroy_inplace(qpx_qp_map, &self->qp_map);
    ucs_arbiter_cleanup(&self->arbiter);
}


UCS_CLASS_DEFINE(qpx_iface_t, uct_base_iface_t);
