/*
 * qpx_ud interface services: what the endpoints call of their interface,
 * below both the endpoints and the interface's progress (which calls the
 * endpoints): the peers' address handles, the clock, a failed post's
 * accounting, DISC packets and their repeats, and completions and
 * receives that async progress defers to the user's thread (with the
 * blocking of the async context that an endpoint's operation takes).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ud.inl"

#include <ucs/qpx_hash.h>

#include <uct/qpx/base/qpx_async.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>


khint32_t qpx_ud_peer_key_hash(qpx_ud_peer_key_t key)
{
    return qpx_hash_fnv1a(&key, sizeof(key));
}

int qpx_ud_peer_key_equal(qpx_ud_peer_key_t a, qpx_ud_peer_key_t b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

double qpx_ud_time_per_sec;

void qpx_ud_time_init(void)
{
    /* Every interface sets the same value: no ordering needed */
    if (qpx_ud_time_per_sec == 0) {
#if defined(__x86_64__)
        qpx_ud_time_per_sec = ucs_get_cpu_clocks_per_sec();
#else
        qpx_ud_time_per_sec = 1e9;
#endif
    }
}

uint64_t qpx_ud_time_ns_monotonic(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}


ucs_status_t qpx_ud_iface_peer_get(qpx_ud_iface_t *iface,
                                   const qpx_device_addr_t *dev_addr,
                                   const qpx_ud_iface_addr_t *iface_addr,
                                   qpx_ud_peer_t **peer_p)
{
    struct ibv_ah_attr ah_attr;
    qpx_ud_peer_key_t key;
    qpx_ud_peer_t *peer;
    khiter_t iter;
    int ret;

    qpx_ud_peer_key_init(&key, dev_addr, iface_addr);

    iter = kh_get(qpx_ud_peers, &iface->peers, key);
    if (iter != kh_end(&iface->peers)) {
        *peer_p = kh_val(&iface->peers, iter);
        return UCS_OK;
    }

    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        ucs_error("qpx_ud: failed to allocate a peer");
        return UCS_ERR_NO_MEMORY;
    }

    qpx_device_ah_attr(&key.dev_addr, iface->super.port_num,
                       iface->super.port->gid_index, &ah_attr);
    peer->ah = ibv_create_ah(iface->super.md->pd, &ah_attr);
    if (peer->ah == NULL) {
        ucs_error("qpx_ud: ibv_create_ah(lid %u) failed: %m",
                  key.dev_addr.lid);
        goto err_free;
    }
    if (iface->super.direct.enabled &&
        (qpx_mlx5_ah_av(peer->ah, &peer->av) != UCS_OK)) {
        goto err_destroy_ah;
    }

    iter = kh_put(qpx_ud_peers, &iface->peers, key, &ret);
    if (ret < 0) {
        ucs_error("qpx_ud: failed to add a peer to the hash");
        goto err_destroy_ah;
    }

    peer->key = key;
    ucs_list_head_init(&peer->eps);
    kh_val(&iface->peers, iter) = peer;
    *peer_p = peer;
    return UCS_OK;

err_destroy_ah:
    ibv_destroy_ah(peer->ah);
err_free:
    free(peer);
    return UCS_ERR_IO_ERROR;
}

void qpx_ud_iface_peers_cleanup(qpx_ud_iface_t *iface)
{
    qpx_ud_peer_t *peer;

    kh_foreach_value(&iface->peers, peer, {
        ibv_destroy_ah(peer->ah);
        free(peer);
    });
    kh_destroy_inplace(qpx_ud_peers, &iface->peers);
}

void qpx_ud_iface_send_completed(qpx_ud_iface_t *iface,
                                 qpx_ud_send_desc_t *desc)
{
    if ((--desc->posted == 0) && desc->released) {
        qpx_ud_iface_desc_put(iface, desc);
    }
}

void qpx_ud_iface_post_failed(qpx_ud_iface_t *iface, struct ibv_send_wr *wr,
                              int ret)
{
    qpx_ud_send_desc_t *desc;

    /* The send queue was checked: the device failed (or, from the async
     * timer, a process is exiting with the interface open). Not sent: a
     * reliable packet stays in its window and is resent, and its endpoint
     * fails by timeout if the device does not come back */
    ucs_log(iface->async.in_async ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
            "qpx_ud: qp 0x%x %s failed: %s", iface->qp->qp_num,
            iface->super.direct.enabled ? "WQE post" : "ibv_post_send()",
            strerror(ret));

    /* What qpx_ud_iface_wr_inline or _signaled counted */
    if (!(wr->send_flags & IBV_SEND_SIGNALED)) {
        --iface->tx.unsignaled;
        return;
    }

    --iface->tx.signaled;
    if (wr->wr_id <= QPX_UD_TX_MODERATION_MAX) {
        iface->tx.unsignaled = wr->wr_id - 1; /* inline: wr_id is the slots */
        return;
    }
    desc                 = (qpx_ud_send_desc_t*)(uintptr_t)wr->wr_id;
    iface->tx.unsignaled = desc->sq_slots - 1;
    --desc->posted;
}

static void qpx_ud_iface_disc_post(qpx_ud_iface_t *iface,
                                   const qpx_ud_disc_t *disc)
{
    qpx_ud_send_desc_t *desc;
    qpx_ud_hdr_t *hdr, ctl;

    if (iface->tx.available == 0) {
        return; /* a repeat may go */
    }

    hdr = qpx_ud_iface_ctl_hdr(iface, &ctl, &desc);
    if (hdr == NULL) {
        return; /* a repeat may go */
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->dest_id = disc->dest_id;
    hdr->src_id  = disc->src_id;
    hdr->type    = QPX_UD_PKT_DISC;
    qpx_ud_iface_post_ctl_hdr(iface, disc->peer, hdr, desc);
}

/* Tell the peer an ep is gone: now, and again on the next ticks */
void qpx_ud_iface_disc_send(qpx_ud_iface_t *iface, qpx_ud_peer_t *peer,
                            uint32_t dest_id, uint32_t src_id)
{
    qpx_ud_disc_t *disc = malloc(sizeof(*disc));

    if (disc == NULL) {
        ucs_debug("qpx_ud: no memory to repeat a DISC");
        return; /* the peer keeps its ep until its iface closes */
    }

    disc->peer    = peer;
    disc->dest_id = dest_id;
    disc->src_id  = src_id;
    disc->left    = QPX_UD_DISC_REPEAT;
    qpx_ud_iface_disc_post(iface, disc);
    ucs_list_add_tail(&iface->discs, &disc->list);
}

void qpx_ud_iface_discs_timer(qpx_ud_iface_t *iface)
{
    qpx_ud_disc_t *disc, *tmp;

    ucs_list_for_each_safe(disc, tmp, &iface->discs, list) {
        qpx_ud_iface_disc_post(iface, disc);
        if (--disc->left == 0) {
            ucs_list_del(&disc->list);
            free(disc);
        }
    }
}

void qpx_ud_iface_discs_cleanup(qpx_ud_iface_t *iface)
{
    qpx_ud_disc_t *disc, *tmp;

    ucs_list_for_each_safe(disc, tmp, &iface->discs, list) {
        free(disc);
    }
    ucs_list_head_init(&iface->discs);
}


void qpx_ud_iface_async_enter(qpx_ud_iface_t *iface)
{
    if (iface->async.on) {
        qpx_async_block(iface->async.ctx);
    }
}

void qpx_ud_iface_async_leave(qpx_ud_iface_t *iface)
{
    if (iface->async.on) {
        qpx_async_unblock(iface->async.ctx);
    }
}

void qpx_ud_iface_comp(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep,
                       uct_completion_t *comp, ucs_status_t status)
{
    unsigned capacity;
    void *comps;

    if (!iface->async.in_async) {
        qpx_invoke_completion(comp, status);
        return;
    }

    if (iface->async.comp_count == iface->async.comp_capacity) {
        capacity = ucs_max(16, iface->async.comp_capacity * 2);
        comps    = realloc(iface->async.comps,
                           capacity * sizeof(*iface->async.comps));
        if (comps == NULL) {
            /* Better late from this thread than never */
            ucs_error("qpx_ud: failed to defer a completion");
            qpx_invoke_completion(comp, status);
            return;
        }
        iface->async.comps         = comps;
        iface->async.comp_capacity = capacity;
    }
    iface->async.comps[iface->async.comp_count].comp   = comp;
    iface->async.comps[iface->async.comp_count].status = status;
    iface->async.comps[iface->async.comp_count].ep     = ep;
    ++iface->async.comp_count;
    iface->super.attention = 1; /* the context is ours: a plain store */
}

int qpx_ud_iface_async_defer_rx(qpx_ud_iface_t *iface,
                                qpx_ud_recv_desc_t *rdesc, size_t length)
{
    ++iface->async.rx_count;
    rdesc->super.super.flags = length;
    rdesc->next              = NULL;
    *iface->async.rx_tail    = rdesc;
    iface->async.rx_tail     = &rdesc->next;
    iface->super.attention = 1; /* the context is ours: a plain store */
    return 1;
}

void qpx_ud_iface_async_comps_run_ep(qpx_ud_iface_t *iface, qpx_ud_ep_t *ep)
{
    uct_completion_t *comp;
    unsigned i;

    /* Called with the timer excluded (the destroy's wrapper blocks it).
     * Each is cleared before its call; the list is read again after each:
     * a callback may progress (a nested dispatch empties it) */
    ucs_assert(!iface->async.in_async);
    for (i = iface->async.comp_head; i < iface->async.comp_count; ++i) {
        comp = iface->async.comps[i].comp;
        if ((comp != NULL) && (iface->async.comps[i].ep == ep)) {
            iface->async.comps[i].comp = NULL;
            qpx_invoke_completion(comp, iface->async.comps[i].status);
        }
    }
}

/* Run what the timer deferred, oldest first */
void qpx_ud_iface_async_dispatch(qpx_ud_iface_t *iface)
{
    qpx_ud_recv_desc_t *rdesc;
    uct_completion_t *comp;
    unsigned i;

    while ((rdesc = iface->async.rx_head) != NULL) {
        iface->async.rx_head = rdesc->next;
        if (!qpx_ud_iface_rx_deliver(iface, rdesc,
                                     qpx_ud_iface_rx_hdr(iface, rdesc),
                                     rdesc->super.super.flags)) {
            qpx_iface_rx_desc_put(&iface->super, rdesc);
        }
    }
    iface->async.rx_tail  = &iface->async.rx_head;
    iface->async.rx_count = 0;

    /* One at a time from the head, each cleared before its call: a
     * callback may progress again (a nested dispatch goes on from the same
     * head) or destroy an endpoint (whose entries its destroy runs and
     * clears); nothing is added meanwhile, the timer is blocked */
    while (iface->async.comp_head < iface->async.comp_count) {
        i    = iface->async.comp_head++;
        comp = iface->async.comps[i].comp;
        if (comp != NULL) {
            iface->async.comps[i].comp = NULL;
            qpx_invoke_completion(comp, iface->async.comps[i].status);
        }
    }
    iface->async.comp_head  = 0;
    iface->async.comp_count = 0;
}
