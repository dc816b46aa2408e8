#!/bin/sh
# Pending requests keep their place against what completion callbacks send
# (qpx_uct_pending_order.c, the case of UCX's gtest
# test_uct_pending.send_ooo_with_comp), on every qpx transport with small
# send queues: the request queued first is received first, and a request
# freed by its own callback is not touched after.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
prog=$QPX_TESTDIR/qpx_uct_pending_order
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    qpx_has_tl "$tl" || continue
    # 8 send slots, and no flow-control window beyond them
    env UCX_QPX_TX_QUEUE_LEN=8 UCX_QPX_UD_WINDOW=8 UCX_QPX_DC_NUM_DCI=1 \
        LD_PRELOAD=$QPX_MODULE timeout 120 "$prog" -x "$tl" -d "$QPX_DEV" \
        >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
    qpx_check "$tl: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
