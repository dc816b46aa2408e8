#!/bin/sh
# The benchmark report tooling (contrib/bench-report.sh) in its quick mode:
# it writes report.md with the tables, the sweep data for every transport
# and size asked for, and the plots as SVG and PNG naming each transport.
# The numbers are not judged (benchmarks never assert); that the report is
# complete and readable is.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v gnuplot >/dev/null || qpx_skip_all "gnuplot not installed"
# test/bench's programs are built after the integration tests run
make -s -C "$QPX_BUILDDIR/test/bench" cm_connect_bench >"$TL_TMP/make.log" 2>&1 ||
    qpx_skip_all "cm_connect_bench does not build: $(tail -n 1 "$TL_TMP/make.log")"
out=$TL_TMP/report
BENCH_QUICK=1 BENCH_N=300 BENCH_SIZES="8 8192" BENCH_CONNS=1 \
BENCH_SETS="qpx_rc=qpx_rc,qpx_ud rc_verbs=rc_verbs,ud_verbs" \
    sh "$QPX_SRCDIR/contrib/bench-report.sh" "$out" "$QPX_BUILDDIR" \
    2>"$TL_TMP/progress" >/dev/null
steps=$(grep -c '^bench-report: \[[0-9]/[0-9]\]' "$TL_TMP/progress")
if [ -s "$out/report.md" ] && [ "$steps" -eq 3 ]; then
    qpx_pass "report.md written, $steps progress lines"
else
    qpx_fail "report: $(tail -n 3 "$TL_TMP/progress")"
fi
rows=0
for l in qpx_rc rc_verbs; do
    for s in 8 8192; do
        grep -q "^$l $s [0-9.]* [0-9.]*$" "$out/sweep.dat" && rows=$((rows + 1))
    done
done
if [ $rows -eq 4 ]; then
    qpx_pass "sweep data: 2 transports x 2 sizes, latency and rate each"
else
    qpx_fail "sweep data: $rows of 4 rows"; cat "$out/sweep.dat" "$out/sweep.log"
fi
for p in latency rate; do
    if grep -q '<svg' "$out/$p.svg" && grep -q 'qpx_rc' "$out/$p.svg" &&
       grep -q 'rc_verbs' "$out/$p.svg" &&
       [ "$(head -c 4 "$out/$p.png" | od -An -c | tr -d ' ')" = '211PNG' ]; then
        qpx_pass "$p plot: SVG naming both transports, PNG"
    else
        qpx_fail "$p plot missing or incomplete"; cat "$out/sweep.log"
    fi
done
if grep -q '^rdmacm ' "$out/report.md" && grep -q 'latency.svg' "$out/report.md"; then
    qpx_pass "report.md holds the sweep and connection tables and links the plots"
else
    qpx_fail "report.md incomplete"
fi
qpx_finish
