#!/bin/sh
# qpx_ud peer failure: a peer killed mid-traffic fails its ep within
# UCX_QPX_UD_TIMEOUT; the interface keeps serving other eps.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s timeout 120 "$UD_TEST" peer-failure 2 2>&1); rc=$?
echo "$out" | grep -E "peer-failure|error handler" | head -5 | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "error handler within the timeout, other ep unaffected" [ $rc -eq 0 ]

out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s timeout 120 "$UD_TEST" peer-failure 2 no-handler 2>&1); rc=$?
echo "$out" | grep -E "peer-failure|considered failed" | head -5 | sed 's/^/  /'
qpx_check "no error handler: ep fails within the timeout, others unaffected" [ $rc -eq 0 ]
qpx_check "no error handler: the failure is logged as an error" \
    sh -c 'echo "$1" | grep -q "ERROR qpx_ud: endpoint .* peer considered failed (no error handler)"' _ "$out"
out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s timeout 120 "$UD_TEST" peer-failure 2 ep-check 2>&1); rc=$?
echo "$out" | grep -E "peer-failure" | head -5 | sed 's/^/  /'
qpx_check "idle ep: uct_ep_check finds the dead peer within the timeout" [ $rc -eq 0 ]
qpx_finish
