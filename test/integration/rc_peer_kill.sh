#!/bin/sh
# Peer killed mid-traffic (and a bad rkey on the surviving endpoint): with TIMEOUT=100ms (IBTA code 15: 134 ms) and
# RETRY_COUNT=3 the survivor's error handler must fire within
# (3 + 1) * 134 ms plus scheduling slack (1.5 s), every outstanding
# operation completes with an error, and another endpoint of the same
# interface keeps moving correct data.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/rc_lib.sh"
rc_setup

prog="$QPX_TESTDIR/qpx_uct_integrity"
[ -x "$prog" ] || qpx_skip_all "$prog not built"
P=$(echo "$RC_TL" | tr a-z A-Z)

env UCX_${P}_TIMEOUT=100ms UCX_${P}_RETRY_COUNT=3 LD_PRELOAD="$QPX_MODULE" \
    timeout 120 "$prog" -x "$RC_TL" -d "$RC_DEV" -k 1.5 >"$RC_TMP/out" 2>&1
ret=$?
[ $ret -eq 77 ] && qpx_skip_all "$RC_TL not available"
grep -E "^(PASS|FAIL): (error|[0-9]+ of)" "$RC_TMP/out"
if [ $ret -eq 0 ]; then
    qpx_pass "peer kill: $(tail -1 "$RC_TMP/out")"
else
    grep "^FAIL" "$RC_TMP/out"
    qpx_fail "peer kill: $(tail -1 "$RC_TMP/out") (exit $ret)"
fi
qpx_finish
