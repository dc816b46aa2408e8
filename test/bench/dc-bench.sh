#!/bin/sh
# qpx_dc beside qpx_rc and qpx_ud on the same softverbs device. Prints
# tables, never asserts.
#   sh test/bench/dc-bench.sh [builddir]     (default: ./build)
# Env: BENCH_N (latency/rate iterations, default 100000), BENCH_MSGS
# (many-peer messages, default 200000), BENCH_PEERS (default "1 64"),
# BENCH_POLICIES (default "dcs dcs_quota rand sticky spread"), BENCH_REPS.
B=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SV="$B/src/softverbs/.libs"
MOD="$B/src/.libs/libuct_qpx.so"
PROG="$B/test/bench/qpx_peers_bench"
MSGS=${BENCH_MSGS:-200000}
PEERS=${BENCH_PEERS:-"1 64"}
POLICIES=${BENCH_POLICIES:-"dcs dcs_quota rand sticky spread"}
[ -x "$PROG" ] || { echo "build $PROG first (make -C $B/test/bench check)"; exit 1; }
[ -e /dev/infiniband/uverbs0 ] || { mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }

echo "== latency and bandwidth, ucx_perftest UCT (median of BENCH_REPS)"
BENCH_TLS="qpx_dc qpx_rc qpx_ud" BENCH_INSTR=0 sh "$HERE/rc_bench.sh" "$B"

run() { # ENV... -- ARGS...
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs LD_LIBRARY_PATH="$SV" LD_PRELOAD="$MOD" timeout 300 "$PROG" "$@" 2>/dev/null |
        tail -n 1
}

REPS=${BENCH_REPS:-3}
median() { sort -g | awk '{v[NR]=$1} END{if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# rate ENV... -- ARGS...: "msg/s switches/msg", medians of REPS runs
rate() {
    : >"$TMP_R"; : >"$TMP_S"
    r=0
    while [ $r -lt $REPS ]; do
        line=$(run "$@")
        echo "$line" | sed -n 's/.*: \([0-9]*\) msg\/s.*/\1/p' >>"$TMP_R"
        echo "$line" | sed -n 's/.*msg\/s, \([0-9.]*\) DCI.*/\1/p' >>"$TMP_S"
        r=$((r + 1))
    done
    echo "$(median <"$TMP_R") $(median <"$TMP_S")"
}
TMP_R=$(mktemp); TMP_S=$(mktemp)
trap 'rm -f "$TMP_R" "$TMP_S"' EXIT

echo
echo "== many peers: 8-byte messages round-robin over one endpoint per peer (median of $REPS)"
printf '%-20s %-9s %8s %14s %16s\n' "transport" "op" "peers" "msg/s" "switches/msg"
for op in am put; do
    for p in $PEERS; do
        for pol in $POLICIES; do
            set -- $(rate UCX_QPX_DC_TX_POLICY=$pol -- -x qpx_dc -m rate -p $p -n $MSGS -o $op)
            printf '%-20s %-9s %8s %14s %16s\n' "qpx_dc $pol" "$op" "$p" "$1" "$2"
        done
        if [ "$op" = am ]; then
            set -- $(rate -- -x qpx_ud -m rate -p $p -n $MSGS -o am)
            printf '%-20s %-9s %8s %14s %16s\n' "qpx_ud" "$op" "$p" "$1" "-"
        fi
    done
done

echo
echo "== footprint of the sending interface (endpoints over 16 peer interfaces)"
for tl in qpx_dc qpx_ud; do
    for e in 1 64 4096; do
        run -- -x $tl -m footprint -e $e
    done
done
