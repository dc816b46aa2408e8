#!/bin/sh
# 16 qpx_dc endpoints flooding one interface whose shared receive queue is
# small (qpx_uct_flood: every message once, in order per endpoint, no
# endpoint failed). qpx_dc has no credit window: its DCIs retry a
# receiver-not-ready without limit (RNR_RETRY_COUNT=7, the default), so a
# flood slows the senders down and kills no DCI; with 2 DCIs the endpoints
# also wait for one. A small queue grows under the flood (the SRQ limit
# event), up to RX_QUEUE_MAX.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc

P=$QPX_TL_ENV

tl_flood "16 eps, SRQ 64, RNR retries" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us
tl_flood "16 eps, 2 DCIs, SRQ 32, RNR retries" UCX_${P}_RX_QUEUE_LEN=32 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us UCX_${P}_NUM_DCI=2

# The receive queue follows the load: from 32 buffers, the SRQ limit event
# of the flood grows it (RX_QUEUE_MAX auto: up to 128), every message still
# once and in order; with RX_QUEUE_MAX=32 it stays at 32
# grow_case NAME MAX WANT (grows, to at most MAX or 128 for auto; or stays)
grow_case() {
    tl_flood "$1" UCX_${P}_RX_QUEUE_LEN=32 UCX_${P}_RX_QUEUE_MAX=$2 \
        UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us UCX_LOG_LEVEL=debug
    grep -q "^PASS: every message" "$TL_TMP/out" || return
    grows=$(grep -c "below its limit" "$TL_TMP/out")
    top=$(grep -o "below its limit: [0-9]*" "$TL_TMP/out" | awk '{print $4}' |
          sort -n | tail -n 1)
    lim=128
    [ "$2" = auto ] || lim=$2
    if [ "$3" = grows ] && [ "$grows" -gt 0 ] && [ "${top:-0}" -gt 32 ] &&
       [ "${top:-0}" -le "$lim" ]; then
        qpx_pass "$1: the queue grew $grows times, to $top buffers"
    elif [ "$3" = stays ] && [ "$grows" -eq 0 ]; then
        qpx_pass "$1: the queue stayed at 32"
    else
        qpx_fail "$1: $grows growths, to ${top:-none} (want: $3)"
    fi
}
grow_case "16 eps, SRQ 32 growing to 128 under the flood" auto grows
grow_case "16 eps, SRQ 32 that may not grow" 32 stays
# A maximum that is no power of two: the CQ asked for 100 entries has 127,
# the SRQ asked for 100 is granted softverbs' ring of 128; it grows to no
# more than the 100 asked (once it grew to 128, one more than its CQ holds)
grow_case "16 eps, SRQ 32 growing to at most 100" 100 grows
qpx_finish
