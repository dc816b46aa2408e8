#!/bin/sh
# Open MPI one-sided on 16 oversubscribed ranks over every qpx transport
# (qpx_mpi_osc: MPI_Put to and MPI_Get from every rank, MPI_Accumulate,
# MPI_Fetch_and_op under a lock, every value checked). With more peers than
# DCIs, qpx_dc's endpoints wait for a DCI: its flush used to answer OK for
# an endpoint whose requests still waited (no DCI: nothing in flight), so
# UCP's flush returned before them; osc ucx's MPI_Accumulate then computed
# on a get not yet issued and wrote garbage back (3-4 wrong values a run).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
prog=$QPX_TESTDIR/qpx_mpi_osc
mpicc -O2 -Wall -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_osc.c" ||
    qpx_skip_all "cannot build qpx_mpi_osc.c with mpicc"

osc() { # NAME TLS NP [ENV...]
    name=$1 tls=$2 np=$3; shift 3
    out=$(ud_run env UCX_TLS="$tls" UCX_NET_DEVICES=softverbs0:1 "$@" \
          timeout 300 mpirun $QPX_MPIRUN_ARGS -np "$np" "$prog" 5 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^OSC OK"; then
        qpx_pass "$name: $(echo "$out" | grep "^OSC OK")"
    else
        qpx_fail "$name (exit $rc)"
        echo "$out" | grep -v "^softverbs" | grep -E "OSC|rank [0-9]+ iter|rror" | head -8
    fi
}

osc "qpx_rc,qpx_ud, 16 ranks, 8-entry send queues" qpx_rc,qpx_ud,self 16 \
    UCX_QPX_RC_TX_QUEUE_LEN=8
osc "qpx_ud, 8 ranks" qpx_ud,self 8
# One send buffer per interface: the lock's spinners' AMs (UCP emulates the
# atomics) found the buffer back at the moment they arrived and their
# answers took it every time, before the holder's queued request; 1
# iteration took 137 s. Sends now queue behind other endpoints' requests.
osc "qpx_ud, 8 ranks, 1 send buffer" qpx_ud,self 8 UCX_QPX_UD_TX_MAX_BUFS=1
if qpx_has_tl qpx_dc; then
    osc "qpx_dc, 16 ranks, 8 DCIs (dcs)" qpx_dc,self 16
    osc "qpx_dc, 8 ranks, 4 DCIs (dcs)" qpx_dc,self 8 UCX_QPX_DC_NUM_DCI=4
    # Issue 37: 16 ranks on 4 DCIs under the passive-target lock took over
    # 120 s; 6 s since waiters get freed DCIs first (dcs_quota, the default)
    osc "qpx_dc, 16 ranks, 4 DCIs (dcs_quota)" qpx_dc,self 16 \
        UCX_QPX_DC_NUM_DCI=4
    # Fewer DCIs than busy peers: a DCI whose owner kept posting (UCP's
    # answers to the lock spinners' emulated atomics) never showed idle,
    # its requests unsignalled, and the holder's answer waited for it: 10
    # iterations on 2 DCIs took over 100 s, 4 ranks on 1 DCI 5 s to a hang.
    # On 8 ranks, an endpoint that began to wait had its group scheduled
    # by its pending_add, before those that waited longer: two spinners'
    # answers went at every turn, the holder's never (a hang)
    osc "qpx_dc, 8 ranks, 2 DCIs (dcs)" qpx_dc,self 8 UCX_QPX_DC_NUM_DCI=2
    osc "qpx_dc, 4 ranks, 1 DCI (dcs)" qpx_dc,self 4 UCX_QPX_DC_NUM_DCI=1
    osc "qpx_dc, 8 ranks, 1 DCI (dcs)" qpx_dc,self 8 UCX_QPX_DC_NUM_DCI=1
    # RC lanes wired up over qpx_dc alone (its async progress, UCX 1.13)
    osc "qpx_rc,qpx_dc, 8 ranks" qpx_rc,qpx_dc,self 8
fi
osc "qpx, 16 ranks" qpx,self 16
qpx_finish
