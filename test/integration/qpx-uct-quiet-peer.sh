#!/bin/sh
# One-sided operations to a peer that never calls progress go on without
# being refused, and move the right data (qpx_uct_quiet_peer.c, the pattern
# of UCX's gtest uct_fence_test): add, fence, fetch-add and flush, 1000
# times, on every qpx transport that connects to an interface; on the
# hybrid this crosses its promotion threshold, and the promotion request is
# never answered.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
prog=$QPX_TESTDIR/qpx_uct_quiet_peer
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_dc qpx; do
    qpx_has_tl "$tl" || continue
    LD_PRELOAD=$QPX_MODULE timeout 120 "$prog" -x "$tl" -d "$QPX_DEV" \
        >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
    qpx_check "$tl: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
