#!/bin/sh
# qpx_ud scale: one interface with >= 4096 endpoints to 16 interfaces in 4
# processes, a single UD QP (softverbs-stat), every ep flushed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"
[ -x "$SOFTVERBS_STAT" ] || qpx_skip_all "softverbs-stat not built"

out=$(ud_run timeout 600 "$UD_TEST" many-eps 4 4 256 2>&1); rc=$?
echo "$out" | grep -E "many-eps|footprint" | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "4096 eps from one iface: all delivered, 1 QP" [ $rc -eq 0 ]
qpx_finish
