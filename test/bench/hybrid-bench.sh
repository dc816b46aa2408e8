#!/bin/sh
# The hybrid qpx transport beside qpx_rc, qpx_dc and UCX's rc_verbs and
# ud_verbs on the same softverbs device (ucx_perftest UCT, rc_bench.sh's
# rows): once with every endpoint promoted to RC at its first operation
# (the hot path), once with no RC pool (the cold path); the footprint of
# one interface at 1 to 4096 endpoints; a halo exchange under Open MPI at 8
# and 16 ranks. Prints tables, never asserts.
#   sh test/bench/hybrid-bench.sh [builddir]     (default: ./build)
# Env: BENCH_N, BENCH_REPS as rc_bench.sh.
B=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)

echo "== hot: qpx with UCX_QPX_PROMOTE_THRESH=1, beside qpx_rc, qpx_dc and UCX's rc_verbs and ud_verbs"
UCX_QPX_PROMOTE_THRESH=1 BENCH_TLS="qpx qpx_rc qpx_dc rc_verbs ud_verbs" BENCH_INSTR=0 \
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

echo
echo "== halo exchange (qpx_mpi_halo: 4 ring neighbours, 16 KiB, an all-to-all every 10th iteration), Open MPI, oversubscribed"
HALO="$B/test/integration/qpx_mpi_halo"
mpicc -O2 -o "$HALO" "$HERE/../integration/qpx_mpi_halo.c" 2>/dev/null ||
    { echo "(mpicc failed: no halo rows)"; exit 0; }
MPIRUN="mpirun --allow-run-as-root --oversubscribe --mca pml ucx --mca osc ucx
        --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self"
printf '%-28s %8s %22s\n' "UCX_TLS" "ranks" "us per iteration"
for np in 8 16; do
    for tls in "qpx,self" "qpx_rc,qpx_ud,self" "qpx_dc,self" "rc_verbs,ud_verbs,self"; do
        t=$(env LD_LIBRARY_PATH="$B/src/softverbs/.libs" \
                LD_PRELOAD="$B/src/.libs/libuct_qpx.so" UCX_TLS=$tls \
                UCX_NET_DEVICES=softverbs0:1 timeout 300 $MPIRUN -np $np \
                "$HALO" 500 16384 2 2>/dev/null |
            sed -n 's/^HALO OK.*, \([0-9.]*\) us per iteration/\1/p')
        printf '%-28s %8s %22s\n' "$tls" "$np" "${t:-failed}"
    done
done
