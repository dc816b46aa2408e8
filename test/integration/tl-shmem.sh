#!/bin/sh
# OpenSHMEM, $QPX_NPES PEs (default 2), spml ucx over $QPX_TL
# (UCX_TLS=$QPX_UCP_TLS, default $QPX_TL,ud_verbs,self; run by rc_shmem.sh,
# dc-shmem.sh): puts, gets and atomics give the right answers on every PE,
# RMA lanes on $QPX_TL.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v oshcc >/dev/null && command -v oshrun >/dev/null ||
    qpx_skip_all "OpenSHMEM (oshcc, oshrun) not installed"
oshcc -o "$TL_TMP/qpx_shmem_test" "$QPX_SRCDIR/test/integration/qpx_shmem_test.c" ||
    qpx_skip_all "oshcc failed"

NPES=${QPX_NPES:-2}
LD_PRELOAD=$QPX_MODULE UCX_TLS="${QPX_UCP_TLS:-$QPX_TL,ud_verbs,self}" \
UCX_NET_DEVICES="$QPX_DEV" \
UCX_LOG_LEVEL=info timeout "${QPX_SHMEM_TIMEOUT:-300}" oshrun --allow-run-as-root --oversubscribe -np $NPES \
    --mca spml ucx --mca osc ucx --mca pml ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any "$TL_TMP/qpx_shmem_test" >"$TL_TMP/out" 2>&1
ret=$?
if [ $ret -eq 0 ] && [ "$(grep -c '^PE [0-9]*: OK' "$TL_TMP/out")" -eq "$NPES" ]; then
    qpx_pass "OpenSHMEM put, get, atomics on $NPES PEs"
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
