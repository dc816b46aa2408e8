/*
 * The RC family's receive loop, written once: each receive completion of
 * the shared SRQ is an active message behind a qpx_rdma_hdr_t, delivered
 * by base (qpx_iface_rx_am). A transport that counts what each peer's QP
 * delivered (qpx_rc's credit flow control) gives hooks called per run of
 * messages from one QP; qpx_dc gives none. Inlined into the transport's
 * progress, with the hooks a static const table of inline functions (as
 * qpx_rdma_ops.inl's post operations), so no indirect call remains.
 */
#ifndef QPX_RDMA_RX_INL_
#define QPX_RDMA_RX_INL_

#include "qpx_rdma.h"


/* What a transport does around a run of receives from one QP */
typedef struct qpx_rdma_rx_ops {
    /* Before the run's handlers run: the state the run needs (qpx_rc: the
     * endpoint of qp_num, whose credits it returns), or NULL */
    void *(*run_begin)(qpx_rdma_iface_t *iface, uint32_t qp_num);
    /* After them: count messages of the run were consumed; run is what
     * run_begin gave (a handler may have destroyed what it names) */
    void  (*run_end)(qpx_rdma_iface_t *iface, void *run, unsigned count);
} qpx_rdma_rx_ops_t;


/* Handle n receive completions; ops NULL: no per-run hooks */
static UCS_F_ALWAYS_INLINE unsigned
qpx_rdma_iface_rx_process(qpx_rdma_iface_t *iface,
                          const qpx_rdma_rx_ops_t *ops,
                          const struct ibv_wc *wc, int n)
{
    unsigned run_count  = 0;
    uint32_t run_qp_num = 0;
    void *run           = NULL;
    qpx_desc_t *desc;
    int i;

    for (i = 0; i < n; ++i) {
        desc = (qpx_desc_t*)(uintptr_t)wc[i].wr_id;
        if (ucs_unlikely((wc[i].status != IBV_WC_SUCCESS) ||
                         (wc[i].byte_len < sizeof(qpx_rdma_hdr_t)))) {
            if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                ucs_debug("receive on qp 0x%x dropped: %s, %u bytes",
                          wc[i].qp_num, ibv_wc_status_str(wc[i].status),
                          wc[i].byte_len);
            }
            qpx_iface_rx_recycle(&iface->super, desc);
            continue;
        }

        if ((ops != NULL) &&
            ucs_unlikely((wc[i].qp_num != run_qp_num) || (run_count == 0))) {
            /* The buffers consumed so far are reposted when a batch is due
             * before the run's credits go back: the peers may send as many
             * as the credits say, and without RNR retries a message that
             * finds the SRQ empty fails its endpoint (RX_QUEUE_LEN >= eps x
             * FC_WND_SIZE + RX_MAX_BATCH holds, docs/configuration.md) */
            qpx_iface_rx_post_due(&iface->super);
            ops->run_end(iface, run, run_count);
            run_qp_num = wc[i].qp_num;
            run_count  = 0;
            run        = ops->run_begin(iface, run_qp_num);
        }
        run_count += (ops != NULL);
        qpx_iface_rx_am(&iface->super, desc, sizeof(qpx_rdma_hdr_t),
                        wc[i].byte_len);
    }

    qpx_iface_rx_post_due(&iface->super);
    if (ops != NULL) {
        ops->run_end(iface, run, run_count);
    }
    return n;
}


/* qpx_iface_wc_cb_t of the receive loop without per-run hooks */
static UCS_F_ALWAYS_INLINE unsigned
qpx_rdma_iface_rx_wc(qpx_iface_t *iface, struct ibv_wc *wc, int n)
{
    return qpx_rdma_iface_rx_process(ucs_derived_of(iface, qpx_rdma_iface_t),
                                     NULL, wc, n);
}


/* A progress round of a transport of the family: base's over its two CQs
 * (qpx_iface_progress_cqs), the send CQ polled while anything is
 * outstanding there (qpx_rdma_iface_tx_is_idle). rx, tx and keepalive are
 * the transport's, constants, so that inlining makes their calls direct;
 * direct too: a transport with a direct path has a progress function for
 * each path (qpx_rdma_tl_t's direct_progress), and neither tests it. */
static UCS_F_ALWAYS_INLINE unsigned
qpx_rdma_iface_progress(qpx_rdma_iface_t *iface, int direct,
                        qpx_iface_wc_cb_t rx, qpx_iface_wc_cb_t tx,
                        void (*keepalive)(qpx_iface_t *iface))
{
    return qpx_iface_progress_cqs(&iface->super, direct,
                                  qpx_rdma_iface_tx_is_idle(iface), rx, tx,
                                  keepalive);
}


/* A progress round of a direct interface: an empty one (qpx_iface_
 * progress_is_empty) runs the pending queue only, in the caller's small
 * frame; any other is round(iface), the transport's progress out of line
 * (qpx_rdma_iface_progress on the direct path) */
static UCS_F_ALWAYS_INLINE unsigned
qpx_rdma_iface_progress_direct(qpx_rdma_iface_t *iface,
                               unsigned (*round)(qpx_rdma_iface_t *iface))
{
    if (ucs_likely(qpx_iface_progress_is_empty(
                   &iface->super, qpx_rdma_iface_tx_is_idle(iface)))) {
        qpx_iface_pending_progress(&iface->super);
        return 0;
    }
    return round(iface);
}

#endif
