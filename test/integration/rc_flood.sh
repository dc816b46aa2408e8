#!/bin/sh
# 16 endpoints flooding one interface whose shared receive queue is small,
# with RNR retries disabled (a receiver-not-ready fails the endpoint): the
# credit windows must keep every message from arriving without a buffer.
# Each endpoint's window is FC_WND_SIZE; the windows of all endpoints plus
# one repost batch must fit in the receive queue (16 x 3 + 8 <= 64). Then
# the same flood with the default window and RNR retries, which recover.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc

P=$QPX_TL_ENV

tl_flood "16 eps, SRQ 64, window 3, no RNR retry" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_FC_WND_SIZE=3 UCX_${P}_RNR_RETRY_COUNT=0
tl_flood "16 eps, SRQ 64, default window, RNR retries" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us
qpx_finish
