#!/bin/sh
# OpenSHMEM, 2 PEs, spml ucx over $QPX_TL (UCX_TLS=$QPX_TL,ud_verbs,self):
# puts, gets and atomics give the right answers, RMA lanes on $QPX_TL.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v oshcc >/dev/null && command -v oshrun >/dev/null ||
    qpx_skip_all "OpenSHMEM (oshcc, oshrun) not installed"
oshcc -o "$TL_TMP/rc_shmem_test" "$QPX_SRCDIR/test/integration/rc_shmem_test.c" ||
    qpx_skip_all "oshcc failed"

LD_PRELOAD=$QPX_MODULE UCX_TLS="$QPX_TL,ud_verbs,self" UCX_NET_DEVICES="$QPX_DEV" \
UCX_LOG_LEVEL=info timeout 300 oshrun --allow-run-as-root -np 2 \
    --mca spml ucx --mca osc ucx --mca pml ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any "$TL_TMP/rc_shmem_test" >"$TL_TMP/out" 2>&1
ret=$?
if [ $ret -eq 0 ] && [ "$(grep -c '^PE [01]: OK' "$TL_TMP/out")" -eq 2 ]; then
    qpx_pass "OpenSHMEM put, get, atomics"
else
    tail -20 "$TL_TMP/out"
    qpx_fail "OpenSHMEM program (exit $ret)"
fi
if grep -q "ep_cfg.*rma($QPX_TL/" "$TL_TMP/out"; then
    qpx_pass "OpenSHMEM RMA lane on $QPX_TL"
else
    qpx_fail "no OpenSHMEM RMA lane on $QPX_TL"
fi
qpx_finish
