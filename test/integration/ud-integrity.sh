#!/bin/sh
# qpx_ud data integrity over a lossy, reordering softverbs UD: every message
# once, in order, intact, both directions, > 2 PSN wrap-arounds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"
N=${QPX_UD_INTEGRITY_MSGS:-140000}

# Each run is bounded: a message that never arrives fails the check instead
# of hanging the suite
out=$(ud_run env UCX_QPX_UD_PRINT_STATS=y timeout 300 "$UD_TEST" integrity 20000 \
      2>&1); rc=$?
echo "$out" | grep -E "integrity:|stats" | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "no loss: 20000 messages each way" [ $rc -eq 0 ]

out=$(ud_run env SOFTVERBS_UD_DROP=0.05 SOFTVERBS_UD_REORDER=0.05 \
      UCX_QPX_UD_PRINT_STATS=y UCX_QPX_UD_RTO=2ms timeout 600 \
      "$UD_TEST" integrity "$N" 2>&1); rc=$?
echo "$out" | grep -E "integrity:|stats|got seq|corrupt" | head -20 | sed 's/^/  /'
qpx_check "5% drop + 5% reorder: $N messages each way" [ $rc -eq 0 ]
resent=$(echo "$out" | sed -n 's/.*tx_resent=\([0-9]*\).*/\1/p' | head -1)
qpx_check "retransmissions happened (tx_resent=$resent)" [ "${resent:-0}" -gt 0 ]
ahead=$(echo "$out" | sed -n 's/.*rx_ahead=\([0-9]*\).*/\1/p' | head -1)
qpx_check "gaps were seen and repaired (rx_ahead=$ahead)" [ "${ahead:-0}" -gt 0 ]
# Acks, NAKs and resends are the rare work progress finds by its attention
# word: the tick's check of every list found none that it missed
missed=$(echo "$out" | sed -n 's/.* attention_missed=\([0-9]*\).*/\1/p' |
         sort -n | tail -1)
qpx_check "no rare work waited for the tick (attention_missed=$missed)" \
    [ "${missed:-x}" = 0 ]

out=$(ud_run env UD_TEST_CONNECT=ep SOFTVERBS_UD_DROP=0.05 \
      SOFTVERBS_UD_REORDER=0.05 timeout 300 "$UD_TEST" integrity 30000 2>&1); rc=$?
echo "$out" | grep -E "integrity:|got seq|corrupt|failed" | head -5 | sed 's/^/  /'
qpx_check "CONNECT_TO_EP, 5% drop + 5% reorder: 30000 messages each way" [ $rc -eq 0 ]

out=$(ud_run env UCX_QPX_UD_SRQ=y SOFTVERBS_UD_DROP=0.05 \
      SOFTVERBS_UD_REORDER=0.05 timeout 300 "$UD_TEST" integrity 30000 2>&1); rc=$?
echo "$out" | grep -E "integrity:|got seq|corrupt|failed" | head -5 | sed 's/^/  /'
qpx_check "UCX_QPX_UD_SRQ=y, 5% drop + 5% reorder: 30000 messages each way" [ $rc -eq 0 ]

# The send queue at its smallest (every send signaled, sends refused while
# both slots are in use) and at the largest completion moderation; segments
# below the MTU (every size up to the smaller max_bcopy) and the smallest
# receive queue (refilled one buffer at a time)
for cfg in "UCX_QPX_UD_TX_QUEUE_LEN=2" "UCX_QPX_UD_TX_MODERATION=64" \
           "UCX_QPX_UD_SEG_SIZE=512" "UCX_QPX_UD_RX_QUEUE_LEN=2"; do
    out=$(ud_run env $cfg SOFTVERBS_UD_DROP=0.02 timeout 300 \
          "$UD_TEST" integrity 20000 2>&1); rc=$?
    echo "$out" | grep -E "integrity:|got seq|corrupt|failed" | head -5 |
        sed 's/^/  /'
    qpx_check "$cfg, 2% drop: 20000 messages each way" [ $rc -eq 0 ]
done
qpx_finish
