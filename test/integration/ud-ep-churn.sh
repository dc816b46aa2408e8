#!/bin/sh
# qpx_ud endpoint reclaim: 10k endpoints created, used and destroyed to one
# interface; the endpoints the receiving interface made for them are freed
# on the DISC packet (repeated on 3 ticks), so its ep count and the process
# memory stay bounded, with 5% loss too. An endpoint its user destroys
# while the peer still sends lingers: the peer's sends are acknowledged and
# its flush completes, and the DISCs of both sides free it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

out=$(ud_run env UCX_QPX_UD_PRINT_STATS=y timeout 300 "$UD_TEST" ep-churn 10000 2>&1); rc=$?
echo "$out" | grep -E "ep-churn|qpx_ud stats" | sed 's/^/  /'
[ $rc -ne 0 ] && echo "$out" | tail -40 | sed 's/^/  exit '"$rc"': /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "10k eps created/destroyed: all delivered, VmRSS growth < 64 B/ep" [ $rc -eq 0 ]
left=$(echo "$out" | sed -n 's/.* eps=\([0-9]*\).*/\1/p' | sort -n | tail -1)
echo "  eps left on the interfaces at close: ${left:-?}"
qpx_check "receiving iface: at most 1 ep left at close" [ "${left:-99999}" -le 1 ]

# 5% UD loss: the DISC is repeated, a few lost ones at most
out=$(ud_run env SOFTVERBS_UD_DROP=0.05 UCX_QPX_UD_PRINT_STATS=y timeout 300 \
      "$UD_TEST" ep-churn 5000 2>&1); rc=$?
echo "$out" | grep -E "ep-churn|qpx_ud stats" | sed 's/^/  /'
[ $rc -ne 0 ] && echo "$out" | tail -40 | sed 's/^/  exit '"$rc"': /'
left=$(echo "$out" | sed -n 's/.* eps=\([0-9]*\).*/\1/p' | sort -n | tail -1)
echo "  eps left on the interfaces at close: ${left:-?}"
qpx_check "5% loss, 5k eps: all delivered, at most 3 eps left" \
    [ $rc -eq 0 -a "${left:-99999}" -le 3 ]
# One side closes while the other sends (MPI_Finalize's race): with a 2 s
# peer timeout, a closed side that dropped the packets fails the sender
for drop in 0 0.05; do
    out=$(ud_run env SOFTVERBS_UD_DROP=$drop UCX_QPX_UD_TIMEOUT=2s \
          UCX_QPX_UD_PRINT_STATS=y timeout 60 "$UD_TEST" close-race 2>&1); rc=$?
    echo "$out" | grep -E "close-race|qpx_ud stats" | sed 's/^/  /'
    [ $rc -ne 0 ] && echo "$out" | tail -20 | sed 's/^/  exit '"$rc"': /'
    left=$(echo "$out" | sed -n 's/.* eps=\([0-9]*\).*/\1/p' | sort -n | tail -1)
    qpx_check "loss $drop: sends after the peer closed its ep delivered, flush completes, ${left:-?} eps left at close" \
        [ $rc -eq 0 -a "${left:-99999}" -eq 0 ]
done
qpx_finish
