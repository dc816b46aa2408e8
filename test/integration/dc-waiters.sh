#!/bin/sh
# qpx_dc's line of endpoints waiting for a DCI (qpx_dc_waiters, one DCI):
# a probe that finds no DCI and queues nothing waits in no line, so the
# next endpoint takes the DCI once it is back; an endpoint whose request is
# queued gets it before another's direct send, and before the owner's
# next sends when the owner keeps sending. Every put checked.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
prog=$QPX_TESTDIR/qpx_dc_waiters
[ -x "$prog" ] || qpx_skip_all "$prog not built"
env UCX_QPX_DC_NUM_DCI=1 UCX_QPX_DC_TX_POLICY=dcs LD_PRELOAD="$QPX_MODULE" \
    timeout 120 "$prog" "$QPX_DEV" >"$TL_TMP/out" 2>&1
ret=$?
[ $ret -eq 77 ] && qpx_skip_all "$(cat "$TL_TMP/out")"
grep -E "^(PASS|FAIL)" "$TL_TMP/out"
QPX_PASS=$((QPX_PASS + $(grep -c "^PASS" "$TL_TMP/out")))
QPX_FAIL=$((QPX_FAIL + $(grep -c "^FAIL" "$TL_TMP/out")))
if [ $ret -ne 0 ] && ! grep -q "^FAIL" "$TL_TMP/out"; then
    qpx_fail "qpx_dc_waiters: exit $ret"
    tail -n 8 "$TL_TMP/out"
fi
qpx_finish
