/*
 * The RC family's data path, written once: put, get, active messages and
 * atomics of qpx_rc and qpx_dc, over a small table of post operations each
 * transport gives (qpx_rdma_post_ops_t): where a request of an endpoint
 * goes and whether there is room for it, how a work request is posted
 * there, and whose completion finishes an operation.
 *
 * The table is a static const of static inline functions, and every
 * operation here is UCS_F_ALWAYS_INLINE: instantiated by
 * QPX_RDMA_EP_OPS_DEFINE in the transport's own file, each operation
 * compiles to the transport's code with direct calls (the compiler reads
 * the functions out of the constant table), with no indirect call, lock or
 * allocation added to the fast path.
 */
#ifndef QPX_RDMA_OPS_INL_
#define QPX_RDMA_OPS_INL_

#include "qpx_rdma.h"

#include <uct/qpx/base/qpx_ep.h>
#include <uct/qpx/base/qpx_param.h>

#include <string.h>


/* What a transport of the family gives its operations */
typedef struct qpx_rdma_post_ops {
    /* Room for one more request of tl_ep now, nothing of it queued before
     * (is_am: and a flow-control credit); *tx_p: the send queue it goes on
     * (the transport's own handle). Else UCS_ERR_NO_RESOURCE, or the
     * endpoint's failure. */
    ucs_status_t           (*tx_begin)(uct_ep_h tl_ep, int is_am,
                                       void **tx_p);
    /* Post wr on tx as tl_ep's next request */
    ucs_status_t           (*post)(uct_ep_h tl_ep, void *tx,
                                   const qpx_rdma_wr_t *wr);
    /* Run cb (with comp) when the request just posted on tx completes */
    void                   (*add_op)(uct_ep_h tl_ep, void *tx, qpx_op_t *op,
                                     qpx_op_cb_t cb, uct_completion_t *comp);
    /* Post a signalled zero-length RDMA write as tl_ep's next request, in
     * the send slot kept for it (flush, ep_check); *tx_p: the queue it went
     * on. UCS_ERR_NO_RESOURCE when there is no room now. */
    ucs_status_t           (*post_nop)(uct_ep_h tl_ep, void **tx_p);
} qpx_rdma_post_ops_t;


/* The interface of an endpoint of the family */
static UCS_F_ALWAYS_INLINE qpx_rdma_iface_t *qpx_rdma_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, qpx_rdma_iface_t);
}


/* Room for a request of tl_ep and a send buffer for it */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_tx_begin_desc(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                          int is_am, void **tx_p, qpx_tx_desc_t **desc_p)
{
    ucs_status_t status = ops->tx_begin(tl_ep, is_am, tx_p);

    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* A refused buffer solicits the unsignalled requests' completions
     * (qpx_iface_ops_t.tx_solicit): every buffer may be held by them */
    *desc_p = qpx_iface_tx_desc_get(&qpx_rdma_ep_iface(tl_ep)->super);
    return (*desc_p == NULL) ? UCS_ERR_NO_RESOURCE : UCS_OK;
}


/* Post wr, taking desc back if the post fails */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_post_desc(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                      void *tx, const qpx_rdma_wr_t *wr, qpx_tx_desc_t *desc)
{
    ucs_status_t status = ops->post(tl_ep, tx, wr);

    if (ucs_unlikely((status != UCS_OK) && (desc != NULL))) {
        ucs_mpool_put(desc);
    }
    return status;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_put_short(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                      const void *buffer, unsigned length,
                      uint64_t remote_addr, uct_rkey_t rkey)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    struct ibv_sge sge;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    if (ucs_unlikely(length > caps->max_put_short)) {
        return qpx_param_length_error("put_short", length,
                                      caps->max_put_short);
    }
    status = ops->tx_begin(tl_ep, 0, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* Inline: copied by the post, no registered source */
    sge.addr   = (uintptr_t)buffer;
    sge.length = length;
    sge.lkey   = 0;
    qpx_rdma_wr_init(&wr, IBV_WR_RDMA_WRITE, IBV_SEND_INLINE, 0, &sge, 1,
                     remote_addr, rkey);
    return ops->post(tl_ep, tx, &wr);
}


static UCS_F_ALWAYS_INLINE ssize_t
qpx_rdma_ep_put_bcopy(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                      uct_pack_callback_t pack_cb, void *arg,
                      uint64_t remote_addr, uct_rkey_t rkey)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    qpx_tx_desc_t *desc;
    struct ibv_sge sge;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    size_t length;
    void *tx;

    status = qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 0, &tx, &desc);
    if (status != UCS_OK) {
        return status;
    }

    length = pack_cb(qpx_tx_desc_data(desc), arg);
    if (ucs_unlikely(length > caps->max_bcopy)) {
        ucs_mpool_put(desc);
        return qpx_param_length_error("put_bcopy", length, caps->max_bcopy);
    }
    sge.addr   = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length = length;
    sge.lkey   = desc->super.lkey;
    qpx_rdma_wr_init(&wr, IBV_WR_RDMA_WRITE, 0, 0, &sge, 1, remote_addr,
                     rkey);
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    ops->add_op(tl_ep, tx, &desc->op, qpx_op_release, NULL);
    return length;
}


/* RDMA write or read from iov, completing comp (if any) when done */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_rdma_zcopy(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                       const char *name, enum ibv_wr_opcode opcode,
                       const uct_iov_t *iov, size_t iovcnt,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    struct ibv_sge sge[caps->max_iov + 1];
    qpx_tx_desc_t *desc = NULL;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    status = qpx_param_check_iov(name, iov, iovcnt, caps->max_iov, 0,
                                 caps->max_zcopy);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    /* A buffer only to carry the completion */
    status = (comp != NULL) ?
             qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 0, &tx, &desc) :
             ops->tx_begin(tl_ep, 0, &tx);
    if (status != UCS_OK) {
        return status;
    }

    qpx_rdma_wr_init(&wr, opcode, 0, comp != NULL, sge,
                     qpx_iov_to_sge(sge, iov, iovcnt), remote_addr, rkey);
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    if (desc != NULL) {
        ops->add_op(tl_ep, tx, &desc->op, qpx_op_comp_release, comp);
    }
    return UCS_INPROGRESS;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_get_bcopy(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                      uct_unpack_callback_t unpack_cb, void *arg,
                      size_t length, uint64_t remote_addr, uct_rkey_t rkey,
                      uct_completion_t *comp)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    qpx_tx_desc_t *desc;
    struct ibv_sge sge;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    if (ucs_unlikely(length > caps->max_bcopy)) {
        return qpx_param_length_error("get_bcopy", length, caps->max_bcopy);
    }
    status = qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 0, &tx, &desc);
    if (status != UCS_OK) {
        return status;
    }

    sge.addr   = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length = length;
    sge.lkey   = desc->super.lkey;
    qpx_rdma_wr_init(&wr, IBV_WR_RDMA_READ, 0, 1, &sge, 1, remote_addr,
                     rkey);
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    ops->add_op(tl_ep, tx, &desc->op, qpx_op_get_bcopy, comp);
    desc->op.get.unpack_cb = unpack_cb;
    desc->op.get.arg       = arg;
    desc->op.get.length    = length;
    return UCS_INPROGRESS;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_am_short(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                     uint8_t id, uint64_t header, const void *payload,
                     unsigned length)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    qpx_rdma_am_short_hdr_t hdr;
    struct ibv_sge sge[2];
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    if (ucs_unlikely(sizeof(header) + length > caps->max_am_short)) {
        return qpx_param_length_error("am_short", sizeof(header) + length,
                                      caps->max_am_short);
    }
    status = ops->tx_begin(tl_ep, 1, &tx);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* Inline: hdr is copied by the post and may go out of scope after */
    hdr.rdma.am_id = id;
    hdr.am_hdr     = header;
    sge[0].addr    = (uintptr_t)&hdr;
    sge[0].length  = sizeof(hdr);
    sge[0].lkey    = 0;
    sge[1].addr    = (uintptr_t)payload;
    sge[1].length  = length;
    sge[1].lkey    = 0;
    /* two SGEs even for no payload (an empty one copies nothing): a
     * constant count lets the direct path's inline copy unroll, and the
     * header's copy be a constant 9-byte move rather than a call */
    qpx_rdma_wr_init(&wr, IBV_WR_SEND, IBV_SEND_INLINE, 0, sge, 2, 0, 0);
    return ops->post(tl_ep, tx, &wr);
}


static UCS_F_ALWAYS_INLINE ssize_t
qpx_rdma_ep_am_bcopy(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                     uint8_t id, uct_pack_callback_t pack_cb, void *arg)
{
    qpx_iface_t *iface = &qpx_rdma_ep_iface(tl_ep)->super;
    size_t max_length  = iface->config.seg_size - sizeof(qpx_rdma_hdr_t);
    qpx_rdma_hdr_t *hdr;
    qpx_tx_desc_t *desc;
    struct ibv_sge sge;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    size_t length;
    void *tx;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return qpx_param_am_id_error(id, UCT_AM_ID_MAX);
    }
    status = qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 1, &tx, &desc);
    if (status != UCS_OK) {
        return status;
    }

    hdr        = qpx_tx_desc_data(desc);
    hdr->am_id = id;
    length     = pack_cb(hdr + 1, arg);
    if (ucs_unlikely(length > max_length)) {
        ucs_mpool_put(desc);
        return qpx_param_length_error("am_bcopy", length, max_length);
    }
    sge.addr   = (uintptr_t)hdr;
    sge.length = sizeof(*hdr) + length;
    sge.lkey   = desc->super.lkey;
    /* Small ones inline: the device need not read the buffer back */
    qpx_rdma_wr_init(&wr, IBV_WR_SEND,
                     (sge.length <= iface->config.max_inline) ?
                     IBV_SEND_INLINE : 0, 0, &sge, 1, 0, 0);
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    ops->add_op(tl_ep, tx, &desc->op, qpx_op_release, NULL);
    return length;
}


static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_am_zcopy(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                     uint8_t id, const void *header, unsigned header_length,
                     const uct_iov_t *iov, size_t iovcnt,
                     uct_completion_t *comp)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    struct ibv_sge sge[caps->max_iov + 1];
    qpx_rdma_hdr_t *hdr;
    qpx_tx_desc_t *desc;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    status = qpx_param_check_am_zcopy(id, header_length, iov, iovcnt,
                                      caps->max_iov,
                                      qpx_rdma_ep_iface(tl_ep)->super.config.
                                      seg_size - sizeof(*hdr));
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    status = qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 1, &tx, &desc);
    if (status != UCS_OK) {
        return status;
    }

    hdr        = qpx_tx_desc_data(desc);
    hdr->am_id = id;
    memcpy(hdr + 1, header, header_length);
    sge[0].addr   = (uintptr_t)hdr;
    sge[0].length = sizeof(*hdr) + header_length;
    sge[0].lkey   = desc->super.lkey;
    qpx_rdma_wr_init(&wr, IBV_WR_SEND, 0, comp != NULL, sge,
                     1 + qpx_iov_to_sge(&sge[1], iov, iovcnt), 0, 0);
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    ops->add_op(tl_ep, tx, &desc->op,
                (comp != NULL) ? qpx_op_comp_release : qpx_op_release, comp);
    return UCS_INPROGRESS;
}


/* A 64-bit fetch-add or compare-swap whose old value lands in a bounce
 * buffer; result NULL: nobody waits for it */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_rdma_ep_atomic(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep,
                   enum ibv_wr_opcode opcode, uint64_t compare_add,
                   uint64_t swap, uint64_t remote_addr, uct_rkey_t rkey,
                   uint64_t *result, uct_completion_t *comp)
{
    const qpx_rdma_caps_t *caps = &qpx_rdma_ep_iface(tl_ep)->caps;
    qpx_tx_desc_t *desc;
    struct ibv_sge sge;
    qpx_rdma_wr_t wr;
    ucs_status_t status;
    void *tx;

    if (ucs_unlikely(!caps->atomics || ((remote_addr % 8) != 0))) {
        return caps->atomics ? UCS_ERR_INVALID_PARAM : UCS_ERR_UNSUPPORTED;
    }
    status = qpx_rdma_ep_tx_begin_desc(ops, tl_ep, 0, &tx, &desc);
    if (status != UCS_OK) {
        return status;
    }

    sge.addr        = (uintptr_t)qpx_tx_desc_data(desc);
    sge.length      = sizeof(uint64_t);
    sge.lkey        = desc->super.lkey;
    qpx_rdma_wr_init(&wr, opcode, 0, result != NULL, &sge, 1, remote_addr,
                     rkey);
    wr.compare_add  = compare_add;
    wr.swap         = swap;
    status = qpx_rdma_ep_post_desc(ops, tl_ep, tx, &wr, desc);
    if (status != UCS_OK) {
        return status;
    }

    if (result == NULL) {
        ops->add_op(tl_ep, tx, &desc->op, qpx_op_release, NULL);
        return UCS_OK;
    }
    ops->add_op(tl_ep, tx, &desc->op, qpx_op_atomic_fetch, comp);
    desc->op.result = result;
    return UCS_INPROGRESS;
}


/*
 * The end of a flush or an ep_check, once the transport has found that
 * tl_ep has requests to wait for or must be probed (qpx_rdma.h,
 * qpx_rdma_ep_probe_t): see there. The buffer of comp's operation is taken
 * before the no-op is posted, so that a refusal leaves nothing posted.
 */
static inline ucs_status_t
qpx_rdma_ep_probe(const qpx_rdma_post_ops_t *ops, uct_ep_h tl_ep, void *tx,
                  int nop, uct_completion_t *comp, ucs_status_t done_status)
{
    qpx_tx_desc_t *desc = NULL;
    ucs_status_t status;

    if (comp != NULL) {
        desc = qpx_iface_tx_desc_get(&qpx_rdma_ep_iface(tl_ep)->super);
        if (desc == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
    }

    if (nop) {
        status = ops->post_nop(tl_ep, &tx);
        if (status != UCS_OK) {
            if (desc != NULL) {
                ucs_mpool_put(desc);
            }
            return status;
        }
    }

    if (desc == NULL) {
        return done_status;
    }
    /* the queue's last request is signalled: its completion runs comp */
    ucs_assert(tx != NULL);
    ops->add_op(tl_ep, tx, &desc->op, qpx_op_comp_release, comp);
    return UCS_INPROGRESS;
}


/*
 * The post operations of a transport _tl of the family, a static const
 * qpx_rdma_post_ops_t of the transport's _tl##_post_tx_begin,
 * _tl##_post_wr, _tl##_post_add_op and _tl##_post_nop, and over it the
 * uct_iface_ops_t functions _tl##_ep_put_short ... _tl##_ep_atomic_cswap64,
 * each the operation above, and _tl##_ep_probe. Declared by
 * QPX_RDMA_EP_OPS_DECLARE (qpx_rdma.h).
 */
#define QPX_RDMA_EP_OPS_DEFINE(_tl) \
    static const qpx_rdma_post_ops_t _tl##_post_ops = { \
        .tx_begin = _tl##_post_tx_begin, \
        .post     = _tl##_post_wr, \
        .add_op   = _tl##_post_add_op, \
        .post_nop = _tl##_post_nop \
    }; \
    \
    ucs_status_t _tl##_ep_probe(uct_ep_h tl_ep, void *tx, int nop, \
                                uct_completion_t *comp, \
                                ucs_status_t done_status) \
    { \
        return qpx_rdma_ep_probe(&_tl##_post_ops, tl_ep, tx, nop, comp, \
                                 done_status); \
    } \
    \
    ucs_status_t _tl##_ep_put_short(uct_ep_h tl_ep, const void *buffer, \
                                    unsigned length, uint64_t remote_addr, \
                                    uct_rkey_t rkey) \
    { \
        return qpx_rdma_ep_put_short(&_tl##_post_ops, tl_ep, buffer, length, \
                                     remote_addr, rkey); \
    } \
    \
    ssize_t _tl##_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, \
                               void *arg, uint64_t remote_addr, \
                               uct_rkey_t rkey) \
    { \
        return qpx_rdma_ep_put_bcopy(&_tl##_post_ops, tl_ep, pack_cb, arg, remote_addr, \
                                     rkey); \
    } \
    \
    ucs_status_t _tl##_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, \
                                    size_t iovcnt, uint64_t remote_addr, \
                                    uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return qpx_rdma_ep_rdma_zcopy(&_tl##_post_ops, tl_ep, "put_zcopy", \
                                      IBV_WR_RDMA_WRITE, iov, iovcnt, \
                                      remote_addr, rkey, comp); \
    } \
    \
    ucs_status_t _tl##_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, \
                                    size_t iovcnt, uint64_t remote_addr, \
                                    uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return qpx_rdma_ep_rdma_zcopy(&_tl##_post_ops, tl_ep, "get_zcopy", \
                                      IBV_WR_RDMA_READ, iov, iovcnt, \
                                      remote_addr, rkey, comp); \
    } \
    \
    ucs_status_t _tl##_ep_get_bcopy(uct_ep_h tl_ep, \
                                    uct_unpack_callback_t unpack_cb, \
                                    void *arg, size_t length, \
                                    uint64_t remote_addr, uct_rkey_t rkey, \
                                    uct_completion_t *comp) \
    { \
        return qpx_rdma_ep_get_bcopy(&_tl##_post_ops, tl_ep, unpack_cb, arg, length, \
                                     remote_addr, rkey, comp); \
    } \
    \
    ucs_status_t _tl##_ep_am_short(uct_ep_h tl_ep, uint8_t id, \
                                   uint64_t header, const void *payload, \
                                   unsigned length) \
    { \
        return qpx_rdma_ep_am_short(&_tl##_post_ops, tl_ep, id, header, payload, \
                                    length); \
    } \
    \
    ssize_t _tl##_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, \
                              uct_pack_callback_t pack_cb, void *arg, \
                              unsigned flags) \
    { \
        return qpx_rdma_ep_am_bcopy(&_tl##_post_ops, tl_ep, id, pack_cb, arg); \
    } \
    \
    ucs_status_t _tl##_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, \
                                   const void *header, \
                                   unsigned header_length, \
                                   const uct_iov_t *iov, size_t iovcnt, \
                                   unsigned flags, uct_completion_t *comp) \
    { \
        return qpx_rdma_ep_am_zcopy(&_tl##_post_ops, tl_ep, id, header, header_length, \
                                    iov, iovcnt, comp); \
    } \
    \
    ucs_status_t _tl##_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode, \
                                        uint64_t value, uint64_t remote_addr, \
                                        uct_rkey_t rkey) \
    { \
        if (opcode != UCT_ATOMIC_OP_ADD) { \
            return UCS_ERR_UNSUPPORTED; \
        } \
        return qpx_rdma_ep_atomic(&_tl##_post_ops, tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, \
                                  value, 0, remote_addr, rkey, NULL, NULL); \
    } \
    \
    ucs_status_t _tl##_ep_atomic64_fetch(uct_ep_h tl_ep, \
                                         uct_atomic_op_t opcode, \
                                         uint64_t value, uint64_t *result, \
                                         uint64_t remote_addr, \
                                         uct_rkey_t rkey, \
                                         uct_completion_t *comp) \
    { \
        if ((opcode != UCT_ATOMIC_OP_ADD) || (result == NULL)) { \
            return UCS_ERR_UNSUPPORTED; \
        } \
        return qpx_rdma_ep_atomic(&_tl##_post_ops, tl_ep, IBV_WR_ATOMIC_FETCH_AND_ADD, \
                                  value, 0, remote_addr, rkey, result, comp); \
    } \
    \
    ucs_status_t _tl##_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare, \
                                         uint64_t swap, uint64_t remote_addr, \
                                         uct_rkey_t rkey, uint64_t *result, \
                                         uct_completion_t *comp) \
    { \
        if (result == NULL) { \
            return UCS_ERR_INVALID_PARAM; \
        } \
        return qpx_rdma_ep_atomic(&_tl##_post_ops, tl_ep, IBV_WR_ATOMIC_CMP_AND_SWP, \
                                  compare, swap, remote_addr, rkey, result, \
                                  comp); \
    }

#endif
