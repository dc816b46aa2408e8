#!/bin/sh
# qpx_ud async progress: a peer that calls no UCT function for longer than
# the peer timeout (a long compute phase) still acknowledges from the async
# thread, so the sender's ep stays alive and every message arrives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s UCX_QPX_UD_PRINT_STATS=y timeout 120 \
      "$UD_TEST" no-progress 4 2>&1); rc=$?
echo "$out" | grep -E "no-progress|qpx_ud stats" | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "peer without progress for 4 s, timeout 2 s: ep alive, all delivered" [ $rc -eq 0 ]

# The same without async progress: the test must see the failure
out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s UCX_QPX_UD_ASYNC_PROGRESS=n timeout 120 \
      "$UD_TEST" no-progress 4 2>&1); rc=$?
echo "$out" | grep -E "no-progress:" | sed 's/^/  /'
qpx_check "UCX_QPX_UD_ASYNC_PROGRESS=n: the sender declares the peer dead" [ $rc -eq 1 ]

qpx_finish
