#!/bin/sh
# A pending request added with UCT_CB_FLAG_ASYNC by an active message
# handler that the transport's async progress called runs without the
# user's progress (qpx_uct_async_pending.c; UCX's gtest
# uct_p2p_am_test.am_async_response), every answer checked in order: over
# qpx_ud, and over qpx_dc with its async progress on
# (UCX_QPX_DC_ASYNC_PROGRESS=on; auto turns it on with UCX 1.13). qpx_rc
# offers no asynchronous callbacks (UCT_IFACE_FLAG_CB_ASYNC).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_ud
prog=$QPX_TESTDIR/qpx_uct_async_pending
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_ud qpx_dc; do
    qpx_has_tl $tl || { qpx_fail "no $tl"; continue; }
    for round in 1 2 3; do
        UCX_QPX_DC_ASYNC_PROGRESS=on LD_PRELOAD=$QPX_MODULE timeout 120 \
            "$prog" -x $tl -d "$QPX_DEV" >"$TL_TMP/out" 2>&1
        rc=$?
        grep -E '^(PASS|FAIL)' "$TL_TMP/out" |
            sed "s/^\([A-Z]*\): /\1: $tl round $round: /"
        qpx_check "$tl round $round: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
    done
done
qpx_finish
