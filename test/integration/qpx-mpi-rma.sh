#!/bin/sh
# Open MPI one-sided over every qpx transport: MPI_Put / MPI_Get of 8 B to
# 4 MiB, each closed by MPI_Win_fence (UCP flushes its endpoints), every byte
# checked. qpx_ud with a 32-packet window puts the flush behind a full
# window: it used to wait forever there (the flush request sat in the
# endpoint's pending queue and was refused because that queue was not
# empty - it held the flush itself).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
prog=$QPX_TESTDIR/qpx_mpi_rma
mpicc -O2 -Wall -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_rma.c" ||
    qpx_skip_all "cannot build qpx_mpi_rma.c with mpicc"

rma() { # NAME TLS [ENV...]
    name=$1 tls=$2; shift 2
    out=$(ud_run env UCX_TLS="$tls" UCX_NET_DEVICES=softverbs0:1 "$@" \
          timeout 120 mpirun $QPX_MPIRUN_ARGS -np 2 "$prog" 2>&1)
    rc=$?
    line=$(echo "$out" | grep "^rma:")
    if [ $rc -eq 0 ] && echo "$line" | grep -q "24 checks, 0 errors"; then
        qpx_pass "$name: $line"
    else
        qpx_fail "$name (exit $rc${line:+, $line})"
        echo "$out" | tail -n 8
    fi
}

rma "qpx_ud,self" qpx_ud,self
rma "qpx_ud,self, 32-packet window" qpx_ud,self UCX_QPX_UD_WINDOW=32
rma "qpx_ud, 32-packet window, 1% loss" qpx_ud,self UCX_QPX_UD_WINDOW=32 \
    SOFTVERBS_UD_DROP=0.01
rma "qpx_rc,qpx_ud,self" qpx_rc,qpx_ud,self
rma "qpx_rc,qpx_ud,self, 8-entry send queue" qpx_rc,qpx_ud,self \
    UCX_QPX_RC_TX_QUEUE_LEN=8
if qpx_has_tl qpx_dc; then
    rma "qpx_dc,self" qpx_dc,self
    rma "qpx_dc,self, one DCI, 8-entry send queue, sticky" qpx_dc,self \
        UCX_QPX_DC_NUM_DCI=1 UCX_QPX_DC_TX_QUEUE_LEN=8 \
        UCX_QPX_DC_TX_POLICY=sticky
fi
if qpx_has_tl qpx; then
    rma "qpx,self (the hybrid, promoted at the first operation)" qpx,self \
        UCX_QPX_PROMOTE_THRESH=1
    rma "qpx,self (promoted after 8, 8-entry send queues)" qpx,self \
        UCX_QPX_PROMOTE_THRESH=8 UCX_QPX_RC_TX_QUEUE_LEN=8 \
        UCX_QPX_DC_TX_QUEUE_LEN=8
fi
qpx_finish
