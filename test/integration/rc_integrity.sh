#!/bin/sh
# Data integrity of every operation of qpx_rc through the UCT API, two
# processes, under several configurations: defaults; tiny queues with RNR
# retries disabled (credit flow control must prevent every RNR); caps above
# the device limits with both softverbs cap policies; a device that lets
# writes pass earlier reads.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
P=$QPX_TL_ENV

tl_integrity "defaults"
tl_integrity "tiny queues, no RNR retry" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_TX_QUEUE_LEN=16 \
    UCX_${P}_RNR_RETRY_COUNT=0 UCX_${P}_TX_MODERATION=4
# The smallest send queue: 3, of which 2 are kept for flush and credits
# (2 is refused, qpx-config.sh)
tl_integrity "send queue of 3" UCX_${P}_TX_QUEUE_LEN=3
# The smallest send CQ: 2, of which 1 is kept for a flushed send queue
tl_integrity "send CQ of 2" UCX_${P}_TX_CQ_LEN=2
tl_integrity "caps above the device, policy fail" SOFTVERBS_CAP_POLICY=fail \
    UCX_${P}_TX_MAX_INLINE=1000000 UCX_${P}_TX_QUEUE_LEN=10000000
tl_integrity "caps above the device, policy clamp" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_MAX_INLINE=1000000 UCX_${P}_TX_QUEUE_LEN=10000000
# A device that lets writes pass earlier reads (IB ordering rules): the
# fence cases must still read the old value, the unfenced one the new
tl_integrity "writes pass unfenced reads" SOFTVERBS_RC_READ_REORDER=1
qpx_finish
