#!/bin/sh
# OpenSHMEM, 2 PEs, spml ucx over $RC_TL (UCX_TLS=$RC_TL,ud_verbs,self):
# puts, gets and atomics give the right answers, RMA lanes on $RC_TL.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/rc_lib.sh"
rc_setup
command -v oshcc >/dev/null && command -v oshrun >/dev/null ||
    qpx_skip_all "OpenSHMEM (oshcc, oshrun) not installed"
oshcc -o "$RC_TMP/rc_shmem_test" "$QPX_SRCDIR/test/integration/rc_shmem_test.c" ||
    qpx_skip_all "oshcc failed"

LD_PRELOAD=$QPX_MODULE UCX_TLS="$RC_TL,ud_verbs,self" UCX_NET_DEVICES="$RC_DEV" \
UCX_LOG_LEVEL=info timeout 300 oshrun --allow-run-as-root -np 2 \
    --mca spml ucx --mca osc ucx --mca pml ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any "$RC_TMP/rc_shmem_test" >"$RC_TMP/out" 2>&1
ret=$?
if [ $ret -eq 0 ] && [ "$(grep -c '^PE [01]: OK' "$RC_TMP/out")" -eq 2 ]; then
    qpx_pass "OpenSHMEM put, get, atomics"
else
    tail -20 "$RC_TMP/out"
    qpx_fail "OpenSHMEM program (exit $ret)"
fi
if grep -q "ep_cfg.*rma($RC_TL/" "$RC_TMP/out"; then
    qpx_pass "OpenSHMEM RMA lane on $RC_TL"
else
    qpx_fail "no OpenSHMEM RMA lane on $RC_TL"
fi
qpx_finish
