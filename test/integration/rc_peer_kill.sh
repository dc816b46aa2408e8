#!/bin/sh
# Peer killed mid-traffic (and a bad rkey on the surviving endpoint): with TIMEOUT=100ms (IBTA code 15: 134 ms) and
# RETRY_COUNT=3 the survivor's error handler must fire within
# (3 + 1) * 134 ms plus scheduling slack (1.5 s), every outstanding
# operation completes with an error, and another endpoint of the same
# interface keeps moving correct data.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc

prog="$QPX_TESTDIR/qpx_uct_integrity"
[ -x "$prog" ] || qpx_skip_all "$prog not built"
P=$QPX_TL_ENV

env UCX_${P}_TIMEOUT=100ms UCX_${P}_RETRY_COUNT=3 LD_PRELOAD="$QPX_MODULE" \
    timeout 120 "$prog" -x "$QPX_TL" -d "$QPX_DEV" -k 1.5 >"$TL_TMP/out" 2>&1
ret=$?
[ $ret -eq 77 ] && qpx_skip_all "$QPX_TL not available"
grep -E "^(PASS|FAIL): (error|[0-9]+ of)" "$TL_TMP/out"
if [ $ret -eq 0 ]; then
    qpx_pass "peer kill: $(tail -1 "$TL_TMP/out")"
else
    grep "^FAIL" "$TL_TMP/out"
    qpx_fail "peer kill: $(tail -1 "$TL_TMP/out") (exit $ret)"
fi
qpx_finish
