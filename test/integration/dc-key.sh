#!/bin/sh
# qpx_dc's DC access key (UCX_QPX_DC_KEY, default auto: derived from the
# job the launcher names). Processes of one job talk, data checked with a
# derived key; a process of another job cannot write into this one's DC
# target: its requests are refused by the target (its endpoint fails with
# an error, nothing is delivered); a key both sides set explicitly joins
# two jobs; a malformed key is refused when the interface opens.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
qpx_has_tl qpx_dc || qpx_skip_all "qpx_dc not built (no libmlx5)"

tl_integrity "one job (SLURM_JOB_ID=4242): a derived key, every operation checked" \
    SLURM_JOB_ID=4242

# key_pair SERVER-ENV CLIENT-ENV: a ucx_perftest put_bw pair over qpx_dc
# with each side's environment; crc and src their exit codes
key_pair() {
    port=$(qpx_free_port)
    env $1 LD_PRELOAD="$QPX_MODULE" timeout 60 ucx_perftest -x qpx_dc \
        -d "$QPX_DEV" -t put_bw -n 2000 -p "$port" >"$TL_TMP/srv.log" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    env $2 LD_PRELOAD="$QPX_MODULE" timeout 60 ucx_perftest -x qpx_dc \
        -d "$QPX_DEV" -t put_bw -n 2000 -p "$port" 127.0.0.1 \
        >"$TL_TMP/cli.log" 2>&1
    crc=$?
    # the server of a refused client waits for it in vain
    sleep 1; kill "$spid" 2>/dev/null
    wait "$spid"
    src=$?
}

key_pair "SLURM_JOB_ID=7" "SLURM_JOB_ID=7"
qpx_check "same job: the pair runs (client $crc, server $src)" \
    [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^Final:' "$TL_TMP/cli.log"

key_pair "SLURM_JOB_ID=7" "SLURM_JOB_ID=8 UCX_QPX_DC_TIMEOUT=125ms"
if [ $crc -ne 0 ] && [ $crc -ne 124 ] &&
   grep -q "qpx_dc: ep to dct .* failed" "$TL_TMP/cli.log"; then
    qpx_pass "another job: refused by the target, the client fails with: $(grep -o 'failed: dci .*' "$TL_TMP/cli.log" | head -n 1)"
else
    qpx_fail "another job: client exit $crc (an error expected)"
    tail -n 5 "$TL_TMP/cli.log"
fi

key_pair "SLURM_JOB_ID=7 UCX_QPX_DC_KEY=0x5eed" \
         "SLURM_JOB_ID=8 UCX_QPX_DC_KEY=24301"
qpx_check "two jobs, one key set by both (0x5eed = 24301): the pair runs (client $crc)" \
    [ $crc -eq 0 ] && [ $src -eq 0 ]

for bad in 0x12zz -5 "" x1 18446744073709551616; do
    UCX_QPX_DC_KEY=$bad LD_PRELOAD="$QPX_MODULE" timeout 60 ucx_info -d \
        >"$TL_TMP/bad.log" 2>&1
    qpx_check "UCX_QPX_DC_KEY='$bad' refused: $(grep -o 'Invalid value for KEY' "$TL_TMP/bad.log" | head -n 1)" \
        grep -q "Invalid value for KEY: '$bad'" "$TL_TMP/bad.log"
done
qpx_finish
