#!/bin/sh
#
# The benchmark report: runs the benchmark set over softverbs and writes
# its tables and plots into one directory.
#   contrib/bench-report.sh OUTDIR [BUILDDIR]
# Writes OUTDIR/report.md (tables, plots linked), OUTDIR/*.txt (each
# benchmark's output), OUTDIR/sweep.dat, OUTDIR/latency.{svg,png},
# OUTDIR/rate.{svg,png}. A progress line per step on stderr. Benchmarks
# print numbers, they never assert. BENCH_QUICK=1: few iterations and
# sizes (checks the tooling, not the numbers). Other BENCH_* variables
# go to the scripts (see test/bench/*.sh).
#
set -u
out=${1:?usage: contrib/bench-report.sh OUTDIR [BUILDDIR]}
top=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "${2:-$top/build}" && pwd)
bench=$top/test/bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${BENCH_QUICK:-0}" = 1 ]; then
    export BENCH_N=${BENCH_N:-500} BENCH_SIZES=${BENCH_SIZES:-"8 4096 65536"}
    export BENCH_CONNS=${BENCH_CONNS:-"1 10"}
fi
steps=3
step=0
progress() { step=$((step + 1)); echo "bench-report: [$step/$steps] $*" >&2; }

progress "latency and rate against size (size-sweep.sh)"
sh "$bench/size-sweep.sh" "$b" "$out/sweep.dat" >"$out/sweep.txt" 2>"$out/sweep.log"
sh "$bench/plot.sh" "$out/sweep.dat" "$out" >>"$out/sweep.log" 2>&1 ||
    echo "bench-report: no plots (see $out/sweep.log)" >&2

progress "connection setup (cm-bench.sh)"
sh "$bench/cm-bench.sh" "$b" >"$out/cm.txt" 2>&1

progress "report.md"
{
    echo "# qpx benchmark report"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) CPUs, softverbs;"
    echo "qpx $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?')."
    echo "Numbers from one run each: they move by tens of percent between runs."
    echo
    echo "## Latency and message rate against message size"
    echo
    echo "![latency](latency.svg)"
    echo
    echo "![message rate](rate.svg)"
    echo
    echo '```'
    cat "$out/sweep.txt"
    echo '```'
    echo
    echo "## Connection setup"
    echo
    echo '```'
    cat "$out/cm.txt"
    echo '```'
} >"$out/report.md"
echo "bench-report: done: $out/report.md" >&2
