#!/bin/sh
# 16 qpx_dc endpoints flooding one interface whose shared receive queue is
# small (qpx_uct_flood: every message once, in order per endpoint, no
# endpoint failed). qpx_dc has no credit window: its DCIs retry a
# receiver-not-ready without limit (RNR_RETRY_COUNT=7, the default), so a
# flood slows the senders down and kills no DCI; with 2 DCIs the endpoints
# also wait for one.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc

P=$QPX_TL_ENV

tl_flood "16 eps, SRQ 64, RNR retries" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us
tl_flood "16 eps, 2 DCIs, SRQ 32, RNR retries" UCX_${P}_RX_QUEUE_LEN=32 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us UCX_${P}_NUM_DCI=2
qpx_finish
