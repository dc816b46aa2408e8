#!/bin/bash
#
# Set everything up and run the main job over the qpx transports on the
# softverbs device (or on RDMA hardware when present): ucx_perftest between
# two processes over qpx_rc, UCP over qpx_rc with qpx_ud for connection
# setup, and a 2-rank Open MPI program (pml ucx, osc ucx) checking its
# results.
#
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
qpx_setup

export QPX_MODULE="$QPX_BUILDDIR/src/.libs/libuct_qpx.so"
export SOFTVERBS_LIBDIR="$QPX_BUILDDIR/src/softverbs/.libs"
qpxrun="$QPX_BUILDDIR/contrib/qpxrun"

qpx_say "ucx_info -d over qpx (component qpx, its memory domains and transports)"
info=$("$qpxrun" ucx_info -d)
echo "$info" | awk '/Memory domain:/ {show = 0} /Memory domain: softverbs|Component: qpx/ {show = 1} show' | \
    grep -E 'Memory domain|Component|Transport|Device|bandwidth|latency|put_|get_|am_|atomic|connection|device address|iface address|ep address' || true

dev=$(echo "$info" | awk '/Transport: qpx_rc/ {getline; print $3; exit}')
if [ -z "$dev" ]; then
    qpx_say "no qpx transport yet: the component and its memory domains are shown above"
    exit 0
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
for test in put_lat am_lat put_bw; do
    qpx_say "ucx_perftest -x qpx_rc -d $dev -t $test (two processes)"
    "$qpxrun" --quiet ucx_perftest -x qpx_rc -d "$dev" -t "$test" -p "$port" -n 20000 >/dev/null 2>&1 &
    server=$!
    sleep 1
    timeout 120 "$qpxrun" --quiet ucx_perftest -x qpx_rc -d "$dev" -t "$test" -p "$port" -n 20000 127.0.0.1
    wait "$server"
done

qpx_say "UCP tag ping-pong, UCX_TLS=qpx_rc,qpx_ud (qpx_ud carries wireup)"
UCX_TLS=qpx_rc,qpx_ud "$qpxrun" --quiet ucx_perftest -t tag_lat -p "$port" -n 20000 >/dev/null 2>&1 &
server=$!
sleep 1
UCX_TLS=qpx_rc,qpx_ud timeout 120 "$qpxrun" --quiet ucx_perftest -t tag_lat -p "$port" -n 20000 127.0.0.1
wait "$server"

if command -v mpicc >/dev/null; then
    qpx_say "Open MPI, 2 ranks, pml ucx + osc ucx over UCX_TLS=qpx_rc,qpx_ud: ping-pong, put, get, accumulate"
    tmp=$(mktemp -d)
    mpicc -O2 -o "$tmp/mpi_demo" "$QPX_TOP/test/integration/qpx_mpi_test.c"
    eval "$("$qpxrun" --env)"
    UCX_TLS=qpx_rc,qpx_ud,self timeout 300 mpirun --allow-run-as-root -np 2 \
        -x LD_PRELOAD -x LD_LIBRARY_PATH -x UCX_TLS \
        --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl ^openib,uct "$tmp/mpi_demo"
    rm -rf "$tmp"
fi
