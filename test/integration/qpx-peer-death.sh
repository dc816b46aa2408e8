#!/bin/sh
# A peer killed mid-traffic, at the UCP level: ucx_perftest pairs over
# UCX_TLS=qpx_rc,qpx_ud, qpx_ud, qpx_dc and qpx (the hybrid, on DC and
# promoted to RC, and promoted from a UD cold path), tag_bw 64 KiB and
# ucp_put_bw (qpx_ud also with one send buffer),
# the client or the server killed with SIGKILL after 2 s of traffic.
#
# - UCP's default error mode (no error handler): the survivor must say
#   which QP or peer failed and exit non-zero (UCX aborts the process when
#   the handler refuses the failure), within the transport's timeout plus
#   one keepalive interval and slack.
# - UCP_ERR_HANDLING_MODE_PEER (ucx_perftest -e): the survivor's error
#   handler must be called within the same bound (ucx_perftest itself
#   keeps running afterwards, with UCX's transports as with qpx: the test
#   stops it once the handler has spoken).
# - ucp_put_bw with the client killed leaves a passive target: its
#   ucx_perftest counts its iterations without a UCP call (with
#   -n 1000000000 that takes about 10 s here, and three times as long
#   beside another test), then progresses until the last put arrives. RC
#   has nothing in flight there to fail; qpx_ud probes the idle endpoint
#   (on its async thread while the process makes no call) and fails it
#   after its timeout, which the process learns at its first progress.
#   The case runs 10^8 iterations, so that the survivor is progressing
#   by the time the failure is due, and tests qpx_ud in default mode.
# - A pair that ends normally with the same short timeouts: both exit 0
#   with no failure reported (keepalive raises no false alarm).
#
# Timeouts are shortened so the suite stays fast; one qpx_rc case runs at
# the default settings (2 s keepalive, 1 s x 8 retries).
. "$(dirname "$0")/lib.sh"
command -v ucx_perftest >/dev/null || qpx_skip_all "ucx_perftest not installed"
[ -f "$QPX_MODULE" ] || qpx_skip_all "$QPX_MODULE not built"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# UCX_HANDLE_ERRORS=none: the abort ends the process at once instead of
# spending half a minute on UCX's backtrace
SHORT="UCX_HANDLE_ERRORS=none UCX_QPX_RC_TIMEOUT=100ms UCX_QPX_RC_RETRY_COUNT=3
       UCX_QPX_RC_KEEPALIVE_INTERVAL=500ms UCX_QPX_UD_TIMEOUT=3s
       UCX_QPX_DC_TIMEOUT=100ms UCX_QPX_DC_RETRY_COUNT=3
       UCX_QPX_DC_KEEPALIVE_INTERVAL=500ms
       UCX_QPX_UD_KEEPALIVE_INTERVAL=500ms UCX_WARN_UNUSED_ENV_VARS=n"

# perf ARGS... &: exec so that $! is ucx_perftest itself, the process the
# test kills (a function run with & is a subshell of its own)
perf() {
    exec env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
        UCX_TLS="$tls" $envs ucx_perftest "$@"
}

# kill_case TLS VICTIM(cli|srv) MODE(default|peer) BOUND_S ITERS TEST ENVS...
# (ITERS: ucx_perftest's -n, far more than the pair sends before the kill)
kill_case() {
    local tls=$1 victim=$2 mode=$3 bound=$4 iters=$5 test=$6
    shift 6
    envs="$*"
    name="$tls $test, $victim killed, $mode mode"
    eflag=""
    [ "$mode" = peer ] && eflag="-e"
    port=$(qpx_free_port)
    perf $eflag -t "$test" -s 65536 -n "$iters" -p "$port" >"$TMP/srv" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    perf $eflag -t "$test" -s 65536 -n "$iters" -p "$port" 127.0.0.1 \
        >"$TMP/cli" 2>&1 &
    cpid=$!
    sleep 2
    if [ "$victim" = cli ]; then
        vpid=$cpid survivor=$spid log="$TMP/srv"
    else
        vpid=$spid survivor=$cpid log="$TMP/cli"
    fi
    if ! qpx_alive $vpid || ! qpx_alive $survivor; then
        kill -9 $cpid $spid 2>/dev/null; wait $cpid $spid 2>/dev/null
        sed 's/^/  /' "$TMP/srv" "$TMP/cli" | grep -v "^  [|+]" | tail -20
        qpx_fail "$name: the pair did not start"
        return
    fi
    kill -9 $vpid
    start=$(date +%s%N)
    # tenths of a second until the survivor reports (peer mode) or exits
    # (default mode), bounded
    limit=$((bound * 10))
    t=0
    while [ $t -lt $limit ]; do
        if [ "$mode" = peer ]; then
            grep -aq "error handler called" "$log" && break
        else
            qpx_alive $survivor || break
        fi
        sleep 0.1
        t=$((t + 1))
    done
    ms=$((($(date +%s%N) - start) / 1000000))
    hung=0
    if qpx_alive $survivor; then
        hung=1
        kill -9 $survivor
    fi
    wait $survivor 2>/dev/null
    src=$?
    wait $vpid 2>/dev/null
    msg=$(grep -aE "failed|error handler called|timeout" "$log" | head -1 |
          sed 's/^.*UCX  *[A-Z]* *//; s/^.*qpx_iface.c:[0-9]* *//')
    if [ "$mode" = peer ]; then
        if grep -aq "error handler called" "$log"; then
            qpx_pass "$name: handler called after $ms ms (bound ${bound}s): $msg"
        else
            qpx_fail "$name: no error handler call within ${bound}s"
        fi
    elif [ $hung -eq 1 ]; then
        qpx_fail "$name: survivor still running after ${bound}s${msg:+ ($msg)}"
    elif [ $src -eq 0 ] || [ -z "$msg" ]; then
        grep -av "^[|+ ]" "$log" | tail -10 | sed 's/^/  /'
        qpx_fail "$name: survivor exit $src, message '$msg'"
    else
        qpx_pass "$name: exit $src after $ms ms (bound ${bound}s): $msg"
    fi
}

# normal_case TLS TEST: a pair that finishes, with the short settings
normal_case() {
    tls=$1 test=$2
    envs="$SHORT"
    port=$(qpx_free_port)
    perf -t "$test" -s 65536 -n 20000 -p "$port" >"$TMP/srv" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    perf -t "$test" -s 65536 -n 20000 -p "$port" 127.0.0.1 >"$TMP/cli" 2>&1 &
    wait $!
    crc=$?
    wait $spid
    src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
       ! grep -aqE "failed|error handler|timeout" "$TMP/cli" "$TMP/srv"; then
        qpx_pass "$tls $test ends normally: no failure reported"
    else
        grep -ahE "failed|error|timeout" "$TMP/cli" "$TMP/srv" | head -5 | sed 's/^/  /'
        qpx_fail "$tls $test ends normally: client $crc, server $src"
    fi
}

# qpx_rc: 100 ms x (3 + 1) tries after at most 0.5 s idle; UD: 3 s
for tls in qpx_rc,qpx_ud qpx_ud qpx_dc; do
    case $tls in
        qpx_rc*) bound=8 ;;
        qpx_dc)  bound=8 ;;
        *)       bound=15 ;;
    esac
    for mode in default peer; do
        for victim in cli srv; do
            for test in tag_bw ucp_put_bw; do
                n=1000000000
                if [ $test = ucp_put_bw ] && [ $victim = cli ]; then
                    # The survivor is the passive target of one-sided
                    # puts (above): RC has nothing in flight to fail
                    # and UCP calls no handler there; qpx_ud tells in
                    # default mode
                    [ $tls = qpx_ud ] && [ $mode = default ] || continue
                    n=100000000
                fi
                kill_case $tls $victim $mode $bound $n $test $SHORT
            done
        done
    done
    normal_case $tls tag_bw
done

# The hybrid qpx alone: on DC (a short job stays below the promotion
# threshold) and promoted to RC at the first operation; the survivor's
# failure comes through whichever path the endpoint was on
for thresh in 64 1; do
    for mode in default peer; do
        for victim in cli srv; do
            kill_case qpx $victim $mode 8 1000000000 tag_bw $SHORT \
                UCX_QPX_PROMOTE_THRESH=$thresh
        done
    done
done
normal_case qpx tag_bw

# The hybrid on the UD cold path, promoted at the first operation: its RC
# QPs and UD QP receive from one SRQ and buffer pool
for mode in default peer; do
    for victim in cli srv; do
        kill_case qpx $victim $mode 15 1000000000 tag_bw $SHORT \
            UCX_QPX_COLD_TL=ud UCX_QPX_PROMOTE_THRESH=1
    done
done

# One send buffer: acks go without one and a connection request waits for
# one, so the failure is still the peer's timeout, not a stall
for victim in cli srv; do
    kill_case qpx_ud $victim peer 15 1000000000 tag_bw $SHORT \
        UCX_QPX_UD_TX_MAX_BUFS=1
done

# Defaults: keepalive every 2 s, 8 tries of ~1 s (UCX's fatal handling
# left out so the process ends once the failure is decided)
kill_case qpx_rc,qpx_ud srv default 25 1000000000 tag_bw \
    UCX_HANDLE_ERRORS=none
qpx_finish
