#!/bin/sh
# The shared two-process UCT data-integrity test (qpx_uct_integrity, run by
# tl_integrity) over qpx_ud: every operation qpx_ud advertises (am
# short/bcopy/zcopy, flush, cancel, pending), without loss, under 5% drop
# and reordering. (Its -k peer-failure mode drives get_zcopy, which qpx_ud
# does not offer; ud-peer-failure.sh covers peer failure for qpx_ud.)
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_ud
P=$QPX_TL_ENV

tl_integrity "defaults"
tl_integrity "5% drop + 5% reorder" SOFTVERBS_UD_DROP=0.05 SOFTVERBS_UD_REORDER=0.05
tl_integrity "small window and queues" UCX_${P}_WINDOW=8 UCX_${P}_TX_QUEUE_LEN=8 \
    UCX_${P}_RX_QUEUE_LEN=64 SOFTVERBS_UD_DROP=0.02
# Caps above what the device gives: a device that refuses them (fail) and
# one that grants its limit instead (clamp); the interface must open within
# the limits and move the same data
# Every send from a descriptor, none inline: the descriptors of sends still
# on the device when the interface closes come back (qpx_ud_iface_tx_drain)
tl_integrity "no inline sends" UCX_${P}_TX_MAX_INLINE=0
# The smallest send CQ: 2, of which 1 is kept for a flushed send queue
tl_integrity "send CQ of 2" UCX_${P}_TX_CQ_LEN=2
tl_integrity "caps above the device, policy fail" SOFTVERBS_CAP_POLICY=fail \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
tl_integrity "caps above the device, policy clamp" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
qpx_finish
