#!/bin/sh
# qpx_ud connection race of ucx_perftest: one side connects its ep and
# flushes its interface in a loop while the peer connects 0.2 s later and
# then calls progress only once a millisecond. A flush loop that sent one
# ACK_REQ per call used to fill the peer's receive queue, so that the
# retransmitted connection request never found a buffer: a hang.
# Also: an interface flush with CANCEL while the peer does not progress.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

out=$(ud_run env UCX_QPX_UD_PRINT_STATS=y timeout 120 "$UD_TEST" late-connect 2>&1)
rc=$?
echo "$out" | grep -E "late-connect|qpx_ud stats" | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "late peer: the flush loop completes" [ $rc -eq 0 ]

# The parent closes its interface last: its statistics come last. One
# ACK_REQ per hold-off (2.5 ms by default) in 0.2 s is under 100; the
# unlimited loop sent hundreds of thousands.
reqs=$(echo "$out" | grep "qpx_ud stats" | tail -1 |
       sed -n 's/.*tx_ack_reqs=\([0-9]*\).*/\1/p')
echo "  flushing side sent ${reqs:-?} ACK_REQ packets"
qpx_check "the flush loop sends a bounded number of ACK_REQs" \
    [ "${reqs:-1000000}" -lt 1000 ]

# The late peer's CONN acks nothing of ours (it dropped our CONN: its ep had
# no peer yet): ours goes again when it comes, not at the next timeout,
# which backoff has put up to 160 ms later by then
resends=$(echo "$out" | grep "qpx_ud stats" | tail -1 |
          sed -n 's/.*tx_conn_resends=\([0-9]*\).*/\1/p')
qpx_check "the CONN the late peer dropped is resent at its own CONN" \
    [ "${resends:-0}" -ge 1 ]

# Without async progress the peer stays silent while the zcopy sends wait
out=$(ud_run env UCX_QPX_UD_ASYNC_PROGRESS=n timeout 120 "$UD_TEST" flush-cancel 2>&1)
rc=$?
echo "$out" | grep -E "flush-cancel" | sed 's/^/  /'
qpx_check "iface flush(CANCEL): every send in flight completes canceled, then sends are refused" \
    [ $rc -eq 0 ]
qpx_finish
