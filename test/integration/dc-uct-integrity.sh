#!/bin/sh
# The shared two-process UCT data-integrity test (qpx_uct_integrity, run by
# tl_integrity) over qpx_dc: every operation qpx_dc advertises (put, get,
# am: short/bcopy/zcopy; 64-bit atomics; flush, cancel, pending), each size
# class, payload checked, under each DCI policy, with one DCI and tiny
# queues (requests wait for the DCI and its send slots), and with caps
# above what the device gives.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
P=$QPX_TL_ENV

tl_integrity "defaults (dcs)"
for policy in dcs_quota rand sticky spread; do
    tl_integrity "policy $policy" UCX_${P}_TX_POLICY=$policy
done
tl_integrity "one DCI, queues of 8" UCX_${P}_NUM_DCI=1 \
    UCX_${P}_TX_QUEUE_LEN=8 UCX_${P}_RX_QUEUE_LEN=64
tl_integrity "one DCI, dcs_quota 2, queues of 8" UCX_${P}_NUM_DCI=1 \
    UCX_${P}_TX_POLICY=dcs_quota UCX_${P}_QUOTA=2 UCX_${P}_TX_QUEUE_LEN=8
tl_integrity "caps above the device, policy fail" SOFTVERBS_CAP_POLICY=fail \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
tl_integrity "caps above the device, policy clamp" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
qpx_finish
