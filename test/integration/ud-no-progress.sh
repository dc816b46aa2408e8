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

# A peer that holds the worker's async context and progresses the worker
# but not this interface (UCP's progress of an interface it deactivated,
# the hybrid's rarely polled cold path): the timer's work must reach it
# through the worker's progress
out=$(ud_run env UCX_QPX_UD_TIMEOUT=2s timeout 120 \
      "$UD_TEST" no-progress 4 held 2>&1); rc=$?
echo "$out" | grep -E "no-progress:" | sed 's/^/  /'
qpx_check "peer holding the async context for 4 s, its iface unprogressed: ep alive, all delivered" [ $rc -eq 0 ]

# The async timer's thread sleeps while the user progresses. UCX 1.13's
# own timers made it spin (zero-timeout waits for the last sub-millisecond
# of every 5 ms period): 11% of a core beside each busy process. CPU ticks
# of the client's "async" thread over 2 s of am_bw, against 200 elapsed.
async_ticks() { # PID -> utime+stime of its thread named async
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = async ] &&
            awk '{ print $14 + $15 }' "$t/stat" && return
    done
    echo -1
}
if command -v ucx_perftest >/dev/null; then
    port=$(qpx_free_port)
    ud_run timeout 60 ucx_perftest -d softverbs0:1 -x qpx_ud -t am_bw -s 8 \
        -n 400000000 -p "$port" >/dev/null 2>&1 &
    sleep 1
    ud_run timeout 60 ucx_perftest -d softverbs0:1 -x qpx_ud -t am_bw -s 8 \
        -n 400000000 -p "$port" 127.0.0.1 >/dev/null 2>&1 &
    sleep 2
    pid=-1
    for p in $(pgrep -f "ucx_perftest.* -p $port 127.0.0.1"); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = ucx_perftest ] && pid=$p
    done
    t0=$(async_ticks "$pid"); sleep 2; t1=$(async_ticks "$pid")
    pkill -f "ucx_perftest.* -p $port" 2>/dev/null
    wait 2>/dev/null
    echo "  async thread of pid $pid: $t0 -> $t1 ticks over 2 s"
    idle=0
    [ "$t0" -ge 0 ] && [ $((t1 - t0)) -lt 6 ] && idle=1
    qpx_check "async thread idle beside a busy am_bw (< 6 of 200 ticks)" \
        [ $idle -eq 1 ]
else
    qpx_skip "async thread idle beside a busy am_bw: no ucx_perftest"
fi

qpx_finish
