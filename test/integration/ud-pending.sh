#!/bin/sh
# qpx_ud pending: a request queued on an endpoint with nothing in flight
# runs once the interface's send descriptors, all held by eps to a silent
# peer, come back; pending_add never says BUSY while a send would fail.
# Without async progress: the silent peer (progress disabled) must stay silent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

for qlen in 256 1024; do
    out=$(ud_run env UCX_QPX_UD_ASYNC_PROGRESS=n UCX_QPX_UD_TX_MAX_BUFS=256 UCX_QPX_UD_WINDOW=16 \
          UCX_QPX_UD_TX_QUEUE_LEN=$qlen timeout 120 "$UD_TEST" pending-stall 2>&1)
    rc=$?
    echo "$out" | grep -E "pending-stall|pending_add" | sed 's/^/  /'
    [ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
    qpx_check "descriptors exhausted by other eps, TX_QUEUE_LEN=$qlen: queued requests run" [ $rc -eq 0 ]
done
qpx_finish
