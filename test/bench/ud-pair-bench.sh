#!/bin/sh
# qpx_ud A/B of one setting: paired ucx_perftest runs, alternating A and B,
# median of each. Prints, never asserts.
#
# Usage: ud-pair-bench.sh BUILDDIR TEST DATA PAIRS "ENV_A" "ENV_B"
#   e.g. ud-pair-bench.sh build am_bw short 7 UCX_QPX_UD_SRQ=n UCX_QPX_UD_SRQ=y
# UD_BENCH_TL_A / UD_BENCH_TL_B (qpx_ud) set the transport of each side:
#   UD_BENCH_TL_B=ud_verbs ud-pair-bench.sh build am_bw short 15 "" ""
# TEST am_bw prints msg/s (overall); am_lat prints the median latency (usec).
B=$1; T=$2; D=$3; P=$4; A=$5; BB=$6
MOD=$B/src/.libs/libuct_qpx.so
SVLIB=$B/src/softverbs/.libs
N=${UD_BENCH_ITERS:-100000}
port=$((15000 + $$ % 1000))
run() { env LD_LIBRARY_PATH="$SVLIB" LD_PRELOAD="$MOD" "$@"; }
one() { # ENV TL -> value
    port=$((port + 1))
    run env $1 timeout 120 ucx_perftest -d softverbs0:1 -x "$2" -t "$T" \
        -D "$D" -s 8 -n "$N" -p $port >/dev/null 2>&1 &
    spid=$!
    sleep 1
    run env $1 timeout 120 ucx_perftest -d softverbs0:1 -x "$2" -t "$T" \
        -D "$D" -s 8 -n "$N" -p $port 127.0.0.1 2>/dev/null |
        awk -v t="$T" '/^Final:/ { if (t == "am_lat") print $3; else print $8 }'
    wait $spid 2>/dev/null
}
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
ra=""; rb=""
i=0
while [ $i -lt "$P" ]; do
    a=$(one "$A" "${UD_BENCH_TL_A:-qpx_ud}")
    b=$(one "$BB" "${UD_BENCH_TL_B:-qpx_ud}")
    echo "pair $i: A=$a B=$b   (load $(cut -d' ' -f1 /proc/loadavg))"
    ra="$ra ${a:-nan}"; rb="$rb ${b:-nan}"
    i=$((i + 1))
done
echo "$T $D median over $P pairs: A ($A) $(echo $ra | tr ' ' '\n' | grep -v nan | med)," \
     "B ($BB) $(echo $rb | tr ' ' '\n' | grep -v nan | med)"
