#!/bin/sh
# qpx_ud endpoint reclaim: 10k endpoints created, used and destroyed to one
# interface; the endpoints the receiving interface made for them are freed
# on the DISC packet (repeated on 3 ticks), so its ep count and the process
# memory stay bounded, with 5% loss too.
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
qpx_finish
