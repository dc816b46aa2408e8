#!/bin/sh
# uct_ep_destroy completes the endpoint's outstanding operations, and none
# of their completions runs after it (qpx_uct_destroy_comp.c, the case of
# UCX's gtest test_uct_ep.destroy_entity_after_send), on every qpx
# transport, with the send queues full of zero-copy active messages.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
prog=$QPX_TESTDIR/qpx_uct_destroy_comp
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    qpx_has_tl "$tl" || continue
    LD_PRELOAD=$QPX_MODULE timeout 120 "$prog" -x "$tl" -d "$QPX_DEV" \
        >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
    qpx_check "$tl: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
