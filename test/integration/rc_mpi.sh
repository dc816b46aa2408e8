#!/bin/sh
# Open MPI, 2 ranks, pml ucx + osc ucx over $RC_TL (UCX_TLS=$RC_TL,ud_verbs,
# self): ping-pong, MPI_Put/MPI_Get, MPI_Accumulate, MPI_Fetch_and_op give
# the right answers, and UCX's lane report shows $RC_TL in use.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/rc_lib.sh"
rc_setup
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
    qpx_skip_all "Open MPI (mpicc, mpirun) not installed"

mpicc -O2 -o "$RC_TMP/rc_mpi_test" "$QPX_SRCDIR/test/integration/rc_mpi_test.c" ||
    qpx_skip_all "mpicc failed"

LD_PRELOAD=$QPX_MODULE UCX_TLS="$RC_TL,ud_verbs,self" UCX_NET_DEVICES="$RC_DEV" \
UCX_LOG_LEVEL=info timeout 300 mpirun --allow-run-as-root -np 2 \
    --mca pml ucx --mca osc ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any --mca btl ^openib,uct \
    "$RC_TMP/rc_mpi_test" >"$RC_TMP/out" 2>&1
ret=$?
if [ $ret -eq 0 ] && grep -q "^MPI OK" "$RC_TMP/out"; then
    qpx_pass "MPI ping-pong, put, get, accumulate, fetch_and_op"
else
    tail -20 "$RC_TMP/out"
    qpx_fail "MPI program (exit $ret)"
fi
if grep -q "ep_cfg.*($RC_TL/" "$RC_TMP/out"; then
    qpx_pass "MPI traffic on $RC_TL: $(grep -o 'ep_cfg\[[0-9]*\]: .*' "$RC_TMP/out" | grep "$RC_TL" | sort -u | head -3 | tr '\n' ' ')"
else
    grep ep_cfg "$RC_TMP/out" | head
    qpx_fail "no UCP lane on $RC_TL"
fi
qpx_finish
