#!/bin/sh
# qpx_ud: the user's sends and progress against the async timer (every
# 0.5 ms here), both ways of excluding it: the fence (membarrier,
# UCX_QPX_UD_ASYNC_FENCE=y) and the async context's lock (the default). The
# program checks every message and answer (sequence, length, payload) and
# the counts; this script also asks that the timers really ran beside the
# user's calls and, with the fence, that calls found a timer working (and
# took the lock then) at least once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

race() { # FENCE(y|n) -> output of a 3 s run
    ud_run env UCX_QPX_UD_ASYNC_IDLE=1ms UCX_QPX_UD_WINDOW=32 \
        UCX_QPX_UD_PRINT_STATS=y UCX_QPX_UD_ASYNC_FENCE="$1" timeout 120 \
        "$UD_TEST" async-race 3 2>&1
}

stat_min() { # NAME OUTPUT -> the smallest value of NAME= over the ifaces
    echo "$2" | sed -n "s/.* $1=\([0-9]*\).*/\1/p" | sort -n | head -1
}

for fence in y n; do
    out=$(race $fence); rc=$?
    [ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
    echo "$out" | grep -E "async-race|error" | sed 's/^/  /'
    echo "$out" | sed -n 's/.*\(async_runs=.*\)/  stats: \1/p'
    qpx_check "ASYNC_FENCE=$fence: every message and answer arrived intact" \
        [ $rc -eq 0 ]
    runs=$(stat_min async_runs "$out")
    met=$(echo "$out" | sed -n 's/.* async_blocked=\([0-9]*\).*/\1/p' |
          sort -n | tail -1)
    mode=$(echo "$out" | sed -n 's/.* async_fence=\([0-9]\).*/\1/p' |
           sort -u | tr -d '\n')
    qpx_check "ASYNC_FENCE=$fence: both timers worked beside the user (async_runs $runs)" \
        [ "${runs:-0}" -gt 0 ]
    # What the timers deferred reached the user's progress by its attention
    # word, never by the tick's check of every list
    missed=$(echo "$out" | sed -n 's/.* attention_missed=\([0-9]*\).*/\1/p' |
             sort -n | tail -1)
    qpx_check "ASYNC_FENCE=$fence: no deferred work waited for the tick (attention_missed=$missed)" \
        [ "${missed:-x}" = 0 ]
    if [ $fence = y ]; then
        # both conditions inside the check (an && after it was not checked)
        fenced=0
        [ "$mode" = 1 ] && [ "${met:-0}" -gt 0 ] && fenced=1
        qpx_check "ASYNC_FENCE=y: the fence is used (async_fence=$mode), calls took the lock while a timer worked ($met times)" \
            [ $fenced = 1 ]
    else
        qpx_check "ASYNC_FENCE=n: the lock is used (async_fence=$mode)" \
            [ "$mode" = 0 ]
    fi
done

qpx_finish
