#!/bin/sh
# The hybrid qpx transport beside qpx_rc and qpx_dc on the same softverbs
# device (ucx_perftest UCT, rc_bench.sh's rows): once with every endpoint
# promoted to RC at its first operation (the hot path), once with no RC
# pool (the cold path). Prints tables, never asserts.
#   sh test/bench/hybrid-bench.sh [builddir]     (default: ./build)
# Env: BENCH_N, BENCH_REPS as rc_bench.sh.
B=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)

echo "== hot: qpx with UCX_QPX_PROMOTE_THRESH=1, beside qpx_rc and qpx_dc"
UCX_QPX_PROMOTE_THRESH=1 BENCH_TLS="qpx qpx_rc qpx_dc" BENCH_INSTR=0 \
    sh "$HERE/rc_bench.sh" "$B"
echo
echo "== cold: qpx with UCX_QPX_RC_POOL_SIZE=0 (DC only), beside qpx_dc"
UCX_QPX_RC_POOL_SIZE=0 BENCH_TLS="qpx qpx_dc" BENCH_INSTR=0 \
    sh "$HERE/rc_bench.sh" "$B"

echo
echo "== footprint of the sending interface (endpoints over 16 peer interfaces, each used once)"
PROG="$B/test/bench/qpx_peers_bench"
[ -x "$PROG" ] || { echo "build $PROG first (make -C $B/test/bench check)"; exit 1; }
fp() { # ENV... -- ARGS...
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs LD_LIBRARY_PATH="$B/src/softverbs/.libs" \
        LD_PRELOAD="$B/src/.libs/libuct_qpx.so" timeout 300 "$PROG" "$@" \
        2>/dev/null | tail -n 1
}
for e in 1 64 1024 4096; do
    fp -- -x qpx_dc -m footprint -e $e
    fp -- -x qpx -m footprint -e $e
    echo "promoted at the first operation, pool of 64: $(fp UCX_QPX_PROMOTE_THRESH=1 \
        UCX_QPX_RC_POOL_SIZE=64 -- -x qpx -m footprint -e $e)"
done
