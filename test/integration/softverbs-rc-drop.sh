#!/bin/sh
# Requests of connected QPs lost on the wire (SOFTVERBS_RC_DROP): the
# requester gets no response and sends them again after the ACK timeout,
# as an HCA does on a lossy fabric; with every request lost it gives up
# with retry exceeded. SOFTVERBS_DEBUG=1 makes softverbs say each resend
# ("no response"), so that every case shows losses happened:
#  - ibv_rc_pingpong -c (others' program, which checks the buffers it
#    receives), 5% of the requests lost;
#  - the same with every request lost: the client fails with "transport
#    retry counter exceeded", no hang;
#  - qpx: every UCT operation over qpx_rc and qpx_dc with its data checked
#    (qpx_uct_integrity), 2% lost and a 2 ms ACK timeout;
#  - Open MPI alltoall, 8 ranks, over qpx_rc,qpx_ud and qpx_dc, every
#    element checked, 1% lost.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
. "$QPX_SRCDIR/test/integration/softverbs-lib.sh"
tl_setup qpx_rc
svt_env_setup
trap 'svt_cleanup; rm -rf "$TL_TMP"' EXIT
D=${QPX_DEV%:*}
command -v ibv_rc_pingpong >/dev/null || qpx_skip_all "ibverbs-utils not installed"

# losses FILE...: how many resends softverbs reported in FILE...
losses() {
    cat "$@" 2>/dev/null | grep -c 'no response to wr_id'
}

# --- others' program ----------------------------------------------------------
port=$(qpx_free_port)
SVT_REJECT='[Ff]ail|[Ee]rror|[Mm]ismatch' SVT_LISTEN_PORT=$port svt_run_pair \
    "ibv_rc_pingpong -c, 5% of requests lost" 60 'iters in' \
    "env SOFTVERBS_RC_DROP=0.05 SOFTVERBS_DEBUG=1 ibv_rc_pingpong -d $D -g 0 -n 200 -c -p $port" \
    "env SOFTVERBS_RC_DROP=0.05 SOFTVERBS_DEBUG=1 ibv_rc_pingpong -d $D -g 0 -n 200 -c -p $port 127.0.0.1"
n=$(losses "$SVT_OUT_SRV" "$SVT_OUT_CLI")
qpx_check "ibv_rc_pingpong: requests were lost and sent again ($n)" [ "$n" -gt 0 ]

svt_rc_pingpong_once SOFTVERBS_RC_DROP=1 "$D" "$D"
qpx_check "every request lost: ibv_rc_pingpong fails with retry exceeded (exit $SVT_PP_RC)" \
    sh -c "[ $SVT_PP_RC -ne 0 ] && [ $SVT_PP_RC -ne 124 ] &&
           grep -q 'retry counter exceeded' '$SVT_TMP/pp.cli'"

# --- qpx, UCT: every operation's data ------------------------------------------
for tl in qpx_rc qpx_dc; do
    qpx_has_tl $tl || { qpx_fail "no $tl"; continue; }
    P=$(echo "$tl" | tr a-z A-Z)
    QPX_TL=$tl
    if tl_integrity "$tl, 2% of requests lost" SOFTVERBS_RC_DROP=0.02 \
           SOFTVERBS_DEBUG=1 UCX_${P}_TIMEOUT=2ms; then
        n=$(losses "$TL_TMP/out")
        qpx_check "$tl: requests were lost and sent again ($n)" [ "$n" -gt 0 ]
    fi
done

# --- Open MPI: 8 ranks, every element checked -----------------------------------
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
   mpicc -O2 -o "$TL_TMP/a2a" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" \
       2>"$TL_TMP/mpicc.out"; then
    for tls in qpx_rc,qpx_ud qpx_dc; do
        # shellcheck disable=SC2086 # the arguments are words
        env LD_PRELOAD="$QPX_MODULE" UCX_TLS="$tls" UCX_NET_DEVICES="$QPX_DEV" \
            UCX_QPX_RC_TIMEOUT=5ms UCX_QPX_DC_TIMEOUT=5ms \
            SOFTVERBS_RC_DROP=0.01 SOFTVERBS_DEBUG=1 \
            timeout 240 mpirun $QPX_MPIRUN_ARGS -np 8 "$TL_TMP/a2a" 20 65536 \
            >"$TL_TMP/mpi" 2>&1
        rc=$?
        n=$(losses "$TL_TMP/mpi")
        if [ $rc -eq 0 ] && grep -q '^ALLTOALL OK 20 x 65536 on 8 ranks' "$TL_TMP/mpi" &&
           [ "$n" -gt 0 ]; then
            qpx_pass "MPI alltoall over $tls, 1% of requests lost ($n resent): data checked"
        else
            grep -v 'no response to wr_id' "$TL_TMP/mpi" | tail -n 8
            qpx_fail "MPI alltoall over $tls, 1% of requests lost (exit $rc, $n resent)"
        fi
    done
else
    qpx_fail "Open MPI: cannot build qpx_mpi_alltoall.c ($(head -n 1 "$TL_TMP/mpicc.out" 2>/dev/null))"
fi
qpx_finish
