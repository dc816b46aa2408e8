#!/bin/sh
# qpx_ud beside UCX's ud_verbs over softverbs: am latency, am bandwidth and
# message rate (8 B), at 0% and 1% UD loss; QP count and memory per
# interface at 1, 64 and 4096 endpoints. Prints, never asserts.
#
# Usage: ud-bench.sh [BUILDDIR]   (default: the build tree of this script)
B=${1:-${QPX_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}}
MOD=$B/src/.libs/libuct_qpx.so
SVLIB=$B/src/softverbs/.libs
UDT=$B/test/integration/ud_uct_test
N=${UD_BENCH_ITERS:-100000}
export SOFTVERBS_STAT=$SVLIB/softverbs-stat
[ -f "$MOD" ] && [ -f "$SVLIB/libibverbs.so.1" ] || {
    echo "build first: $MOD and softverbs are needed"; exit 1; }

run() { env LD_LIBRARY_PATH="$SVLIB" LD_PRELOAD="$MOD" "$@"; }
port=14500
# perf TL LOSS TEST DATA: prints "lat_us bw_MBs rate" from the Final line
perf() {
    port=$((port + 1))
    run env SOFTVERBS_UD_DROP=$2 timeout 300 ucx_perftest -d softverbs0:1 \
        -x "$1" -t "$3" -D "$4" -s 8 -n "$N" -p $port >/dev/null 2>&1 &
    spid=$!
    sleep 1
    run env SOFTVERBS_UD_DROP=$2 timeout 300 ucx_perftest -d softverbs0:1 \
        -x "$1" -t "$3" -D "$4" -s 8 -n "$N" -p $port 127.0.0.1 2>/dev/null |
        awk '/^Final:/ { printf "%10.2f %10.2f %12.0f", $3, $6, $8 }'
    wait $spid 2>/dev/null
}

echo "# qpx_ud vs ud_verbs over softverbs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $N iterations, 8-byte messages; latency: median one-way usec (am_lat);"
echo "# bandwidth MB/s and message rate msg/s: am_bw overall"
printf "%-9s %-5s %-6s %10s %10s %12s\n" transport loss data lat_us bw_MBs msg_per_s
for loss in 0 0.01; do
    for tl in qpx_ud ud_verbs; do
        for d in short bcopy; do
            lat=$(perf $tl $loss am_lat $d | awk '{print $1}')
            bw=$(perf $tl $loss am_bw $d)
            printf "%-9s %-5s %-6s %10s %10s %12s\n" $tl $loss $d "${lat:--}" \
                "$(echo "$bw" | awk '{print $2}')" "$(echo "$bw" | awk '{print $3}')"
        done
    done
done

echo
echo "# footprint of one interface with E endpoints (to 16 ifaces in 4 processes)"
printf "%-9s %6s %6s %12s %10s\n" transport eps qps rss_kB B_per_ep
for tl in qpx_ud ud_verbs; do
    for e in 1 64 4096; do
        per=$(( (e + 15) / 16 ))
        procs=4; ifs=4
        [ $e -lt 16 ] && { procs=1; ifs=1; per=$e; }
        out=$(run env UD_TEST_TL=$tl timeout 600 "$UDT" many-eps $procs $ifs $per 2>&1)
        line=$(echo "$out" | grep "many-eps: children")
        qps=$(echo "$line" | sed -n 's/.*with [0-9]* eps.*//; s/.*, \([0-9-]*\) with.*/\1/p')
        qps=$(echo "$line" | sed -n 's/.*before eps, \([0-9-]*\) with.*/\1/p')
        rss=$(echo "$line" | sed -n 's/.*VmRSS +\([0-9-]*\) kB.*/\1/p')
        bpe=$(echo "$line" | sed -n 's/.*kB (\([0-9]*\) B\/ep).*/\1/p')
        neps=$(echo "$line" | sed -n 's/.*received [0-9]* of \([0-9]*\);.*/\1/p')
        printf "%-9s %6s %6s %12s %10s\n" $tl "${neps:-$e}" "${qps:--}" "${rss:--}" "${bpe:--}"
    done
done
