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

prog="$QPX_TESTDIR/qpx_uct_flood"
[ -x "$prog" ] || qpx_skip_all "$prog not built"
P=$QPX_TL_ENV

run() { # name env...
    name=$1; shift
    env "$@" LD_PRELOAD="$QPX_MODULE" timeout 200 "$prog" -x "$QPX_TL" \
        -d "$QPX_DEV" -e 16 -n 20000 >"$TL_TMP/out" 2>&1
    ret=$?
    [ $ret -eq 77 ] && { cat "$TL_TMP/out"; qpx_skip_all "$QPX_TL not available"; }
    if [ $ret -eq 0 ]; then
        qpx_pass "$name: $(grep "endpoints x" "$TL_TMP/out")"
    else
        echo "---- output ($name, env: $*, exit $ret)"; tail -40 "$TL_TMP/out"
        qpx_fail "$name (exit $ret)"
    fi
}

run "16 eps, SRQ 64, window 3, no RNR retry" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_FC_WND_SIZE=3 UCX_${P}_RNR_RETRY_COUNT=0
run "16 eps, SRQ 64, default window, RNR retries" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_RNR_TIMEOUT=10us
qpx_finish
