#!/bin/sh
# A pending request added with UCT_CB_FLAG_ASYNC by an active message
# handler that qpx_ud's async progress called runs without the user's
# progress (qpx_uct_async_pending.c; UCX's gtest
# uct_p2p_am_test.am_async_response), every answer checked in order. Only
# qpx_ud offers asynchronous callbacks (UCT_IFACE_FLAG_CB_ASYNC).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_ud
prog=$QPX_TESTDIR/qpx_uct_async_pending
[ -x "$prog" ] || qpx_skip_all "$prog not built"
qpx_has_tl qpx_ud || qpx_skip_all "no qpx_ud"
for round in 1 2 3; do
    LD_PRELOAD=$QPX_MODULE timeout 120 "$prog" -x qpx_ud -d "$QPX_DEV" \
        >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: round $round: /"
    qpx_check "round $round: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
