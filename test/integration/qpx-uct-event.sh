#!/bin/sh
# Receive events on every qpx transport that offers them (qpx_uct_event.c,
# the case of UCX's gtest test_uct_event): armed with nothing to do, the
# event fd stays quiet (spurious below 1%), a message makes it readable
# (none missed), every message arrives. qpx_ud with UCX_QPX_UD_EVENTS=y.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
prog=$QPX_TESTDIR/qpx_uct_event
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    qpx_has_tl "$tl" || continue
    env UCX_QPX_UD_EVENTS=y LD_PRELOAD=$QPX_MODULE timeout 300 "$prog" \
        -x "$tl" -d "$QPX_DEV" -n 5000 >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
    qpx_check "$tl: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
