#!/bin/sh
# The hybrid qpx against the endpoint count: QPs, registered memory,
# resident memory (the growth from the interface's open, and the whole
# process's) and endpoints set up (created and used once) per second
# on one sending interface, its endpoints spread over 16 peer interfaces
# (qpx_peers_bench -m footprint), for qpx_dc, qpx with its defaults (a
# single use promotes nothing), qpx promoting every endpoint at its first
# operation with a pool of 64 RC QPs, and, for comparison, UCX's rc_verbs
# and qpx_rc (an RC QP per endpoint: each endpoint connected to an endpoint
# of its own in one peer process). Prints a table, the memory of each
# configuration at the largest count against rc_verbs', and, with an
# output directory and gnuplot, plots memory and QPs against endpoints.
# Never asserts.
#   sh test/bench/hybrid-scale.sh [builddir [outdir]]
B=$(cd "${1:-build}" && pwd)
OUT=${2:-}
PROG="$B/test/bench/qpx_peers_bench"
[ -x "$PROG" ] || { echo "build $PROG first (make -C $B/test/bench check)"; exit 1; }
[ -e /dev/infiniband/uverbs0 ] || { mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }
DATA=$(mktemp)
trap 'rm -f "$DATA"' EXIT

fp() { # ENV... -- ARGS...
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs LD_LIBRARY_PATH="$B/src/softverbs/.libs" \
        LD_PRELOAD="$B/src/.libs/libuct_qpx.so" timeout 300 "$PROG" "$@" \
        2>/dev/null | tail -n 1
}

printf '%-16s %8s %6s %14s %14s %12s %12s\n' "config" "eps" "QPs" "registered MiB" "resident MiB" "process MiB" "eps/s"
for cfg in qpx_dc qpx qpx-promoted rc_verbs qpx_rc; do
    echo "# $cfg" >>"$DATA"
    for e in 1 64 1024 4096; do
        case $cfg in
        qpx-promoted) line=$(fp UCX_QPX_PROMOTE_THRESH=1 UCX_QPX_RC_POOL_SIZE=64 \
                                -- -x qpx -m footprint -e $e) ;;
        *)            line=$(fp -- -x $cfg -m footprint -e $e) ;;
        esac
        qps=$(echo "$line" | sed -n 's/.*eps: \([0-9]*\) QPs.*/\1/p')
        reg=$(echo "$line" | sed -n 's/.*MRs, \([0-9.]*\) MiB registered.*/\1/p')
        res=$(echo "$line" | sed -n 's/.*+\([0-9]*\) kB resident.*/\1/p')
        all=$(echo "$line" | sed -n 's/.*(\([0-9]*\) kB in all).*/\1/p')
        rate=$(echo "$line" | sed -n 's/.*in all), \([0-9]*\) eps\/s.*/\1/p')
        res_mib=$(awk -v k="${res:-0}" 'BEGIN { printf "%.1f", k / 1024 }')
        all_mib=$(awk -v k="${all:-0}" 'BEGIN { printf "%.1f", k / 1024 }')
        printf '%-16s %8s %6s %14s %14s %12s %12s\n' "$cfg" "$e" "${qps:-?}" \
            "${reg:-?}" "$res_mib" "$all_mib" "${rate:-?}"
        echo "$cfg $e ${qps:-0} ${reg:-0} $res_mib ${rate:-0}" >>"$DATA"
    done
    printf '\n\n' >>"$DATA"
done

# Memory at the largest count against rc_verbs'
awk '/^# / { next } NF == 6 { res[$1 " " $2] = $5; n = $2 > n ? $2 : n }
     END { base = res["rc_verbs " n]; if (base <= 0) exit
           printf "\nresident memory at %d endpoints against rc_verbs (%.1f MiB):\n", n, base
           split("qpx_dc qpx qpx-promoted qpx_rc", c, " ")
           for (i = 1; i <= 4; ++i) if ((c[i] " " n) in res)
               printf "  %-14s %6.1f MiB  %5.1f%%\n", c[i], res[c[i] " " n],
                      100 * res[c[i] " " n] / base }' "$DATA"

[ -n "$OUT" ] || exit 0
command -v gnuplot >/dev/null || { echo "(no gnuplot: no plots)"; exit 0; }
mkdir -p "$OUT"
gnuplot <<GP
set terminal svg size 800,500 dynamic background rgb 'white'
set termoption noenhanced
set datafile commentschars "#"
set logscale x 2
set grid
set key top left
set xlabel "endpoints on one interface"
labels = "qpx_dc qpx qpx-promoted(pool-64) rc_verbs qpx_rc"
set output "$OUT/hybrid-memory.svg"
set title "Resident memory of the sending process (softverbs, one host)"
set ylabel "MiB added by the endpoints and their interface"
set logscale y 2
plot for [i=0:4] "$DATA" index i using 2:5 with linespoints title word(labels, i+1)
set output "$OUT/hybrid-qps.svg"
set title "QPs of the sending process (softverbs, one host)"
set ylabel "QPs"
plot for [i=0:4] "$DATA" index i using 2:3 with linespoints title word(labels, i+1)
GP
echo "plots: $OUT/hybrid-memory.svg $OUT/hybrid-qps.svg"
