#!/bin/sh
# Threads over qpx, as users run them:
# - Open MPI with MPI_THREAD_MULTIPLE, 2 ranks x 2 threads exchanging
#   1 B..1 MiB messages at the same time, every byte checked;
# - ucx_perftest -T 2 -M multi (a UCP worker shared by 2 threads), put_bw
#   and tag_bw: every iteration of both threads must complete (ucx_perftest
#   does not check data; the MPI case does).
# Both used to hang (a completion dropped by softverbs under contention).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
   mpicc -O2 -Wall -pthread -o "$TMP/mt" \
       "$QPX_SRCDIR/test/integration/qpx_mpi_threads.c"; then
    for tls in qpx_rc,qpx_ud qpx_ud; do
        out=$(ud_run env UCX_TLS="$tls" UCX_NET_DEVICES=softverbs0:1 \
              timeout 200 mpirun $QPX_MPIRUN_ARGS -np 2 "$TMP/mt" 2 30 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && echo "$out" | grep -q "^THREADS OK 2 x 30"; then
            qpx_pass "$tls: MPI_THREAD_MULTIPLE, 2 ranks x 2 threads, 30 rounds of 8 sizes, data checked"
        else
            qpx_fail "$tls: MPI_THREAD_MULTIPLE 2 x 2 (exit $rc; 124: hung)"
            echo "$out" | tail -n 8
        fi
    done
else
    echo "SKIP: MPI cases: mpicc/mpirun missing or the program does not build"
fi

command -v ucx_perftest >/dev/null || qpx_skip_all "ucx_perftest not installed"
for tls in qpx_ud qpx_rc,qpx_ud; do
    for test in ucp_put_bw tag_bw; do
        port=$(qpx_free_port)
        ud_run env UCX_TLS="$tls" timeout 120 ucx_perftest -T 2 -M multi \
            -t $test -s 65536 -n 5000 -p "$port" >"$TMP/srv" 2>&1 &
        spid=$!
        sleep 1
        ud_run env UCX_TLS="$tls" timeout 120 ucx_perftest -T 2 -M multi \
            -t $test -s 65536 -n 5000 -p "$port" 127.0.0.1 >"$TMP/cli" 2>&1
        crc=$?
        wait $spid
        src=$?
        if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
           grep -aqE "^Final: +5000 " "$TMP/cli"; then
            qpx_run_pass "$tls: ucx_perftest -T 2 -M multi $test: 5000 iterations completed"
        else
            qpx_fail "$tls: ucx_perftest -T 2 -M multi $test (client $crc, server $src; 124: hung)"
            grep -av "^[|+]" "$TMP/cli" | tail -5
        fi
    done
done
qpx_finish
