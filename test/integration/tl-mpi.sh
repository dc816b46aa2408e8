#!/bin/sh
# Open MPI, 2 ranks, pml ucx + osc ucx over $QPX_TL (UCX_TLS=$QPX_UCP_TLS,
# default $QPX_TL,ud_verbs,self; run by rc_mpi.sh, dc-mpi.sh): ping-pong,
# MPI_Put/MPI_Get, MPI_Accumulate, MPI_Fetch_and_op give the right
# answers, and UCX's lane report shows $QPX_TL in use.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    qpx_skip_all "Open MPI (mpicc, mpirun) not installed"

mpicc -O2 -o "$TL_TMP/qpx_mpi_test" "$QPX_SRCDIR/test/integration/qpx_mpi_test.c" ||
    qpx_skip_all "mpicc failed"

LD_PRELOAD=$QPX_MODULE UCX_TLS="${QPX_UCP_TLS:-$QPX_TL,ud_verbs,self}" \
UCX_NET_DEVICES="$QPX_DEV" \
UCX_LOG_LEVEL=info timeout 300 mpirun --allow-run-as-root -np 2 \
    --mca pml ucx --mca osc ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any --mca btl ^openib,uct \
    "$TL_TMP/qpx_mpi_test" >"$TL_TMP/out" 2>&1
ret=$?
if [ $ret -eq 0 ] && grep -q "^MPI OK" "$TL_TMP/out"; then
    qpx_pass "MPI ping-pong, put, get, accumulate, fetch_and_op"
else
    tail -20 "$TL_TMP/out"
    qpx_fail "MPI program (exit $ret)"
fi
if grep -q "ep_cfg.*($QPX_TL/" "$TL_TMP/out"; then
    qpx_pass "MPI traffic on $QPX_TL: $(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/out" | grep "$QPX_TL" | sort -u | head -3 | tr '\n' ' ')"
else
    grep ep_cfg "$TL_TMP/out" | head
    qpx_fail "no UCP lane on $QPX_TL"
fi
qpx_finish
