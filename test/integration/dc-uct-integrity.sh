#!/bin/sh
# The shared two-process UCT data-integrity test (qpx_uct_integrity, run by
# tl_integrity) over qpx_dc: every operation qpx_dc advertises (put, get,
# am: short/bcopy/zcopy; 64-bit atomics; flush, cancel, pending), each size
# class, payload checked, under each DCI policy, with one DCI and tiny
# queues (requests wait for the DCI and its send slots), with caps above
# what the device gives, and on a device out of QPs.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
P=$QPX_TL_ENV

tl_integrity "defaults (dcs_quota)"
for policy in dcs rand sticky spread; do
    tl_integrity "policy $policy" UCX_${P}_TX_POLICY=$policy
done
tl_integrity "one DCI, queues of 8" UCX_${P}_NUM_DCI=1 \
    UCX_${P}_TX_QUEUE_LEN=8 UCX_${P}_RX_QUEUE_LEN=64
tl_integrity "one DCI, dcs_quota 2, queues of 8" UCX_${P}_NUM_DCI=1 \
    UCX_${P}_TX_POLICY=dcs_quota UCX_${P}_QUOTA=2 UCX_${P}_TX_QUEUE_LEN=8
# The smallest send queue: 2, of which 1 is kept for flush and ep_check (1
# is refused, qpx-config.sh)
tl_integrity "one DCI, send queue of 2, send CQ of 2" UCX_${P}_NUM_DCI=1 \
    UCX_${P}_TX_QUEUE_LEN=2 UCX_${P}_TX_CQ_LEN=2
# The RC family's PATH_MTU (shared with qpx_rc): DCIs and DCT at 256
# bytes, every size class of every operation across many packets
tl_integrity "path MTU 256" UCX_${P}_PATH_MTU=256
tl_integrity "caps above the device, policy fail" SOFTVERBS_CAP_POLICY=fail \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
tl_integrity "caps above the device, policy clamp" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_QUEUE_LEN=100000 UCX_${P}_RX_QUEUE_LEN=100000
# A device out of QPs (a registry of its own with room for 12): the
# interface that opens first takes its 8 DCIs and its DCT, the other finds
# room for 3 DCIs and none for its DCT; rather than fail, its last DCI
# gives way to the DCT, and both run every check with fewer DCIs than
# asked (whichever order they open in, each keeps at least one and says
# how many it has)
if tl_integrity "device out of QPs: DCIs give way to the DCT" \
       SOFTVERBS_SHM="$TL_TMP/shm-qp12" SOFTVERBS_MAX_QP=12; then
    if grep -q "has [0-9] of 8 DCIs" "$TL_TMP/out"; then
        qpx_pass "device out of QPs: $(grep -o 'has [0-9] of 8 DCIs' "$TL_TMP/out" | head -n 1)"
    else
        qpx_fail "device out of QPs: no interface said it had fewer DCIs"
    fi
fi
rm -f "$TL_TMP/shm-qp12"
qpx_finish
