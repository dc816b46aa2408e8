#!/bin/sh
# Open MPI MPI_Alltoall on 8 ranks (oversubscribed: the machine may have 2
# cores), 1 MiB blocks, every byte of every iteration checked, without the
# self transport (each rank also reaches itself over qpx). Long enough that
# a completion or message lost now and then stalls it: 300 iterations over
# qpx_rc,qpx_ud used to stall about one run in three, because softverbs
# dropped a receive completion from a CQ that had room (a producer compared
# a stale tail with a newer head); the lost message hung the collective.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
prog=$QPX_TESTDIR/qpx_mpi_alltoall
mpicc -O2 -Wall -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" ||
    qpx_skip_all "cannot build qpx_mpi_alltoall.c with mpicc"

a2a_np=8   # ranks of the next a2a runs
a2a() { # TLS ITERATIONS BLOCK [ENV...]
    tls=$1 iters=$2 block=$3; shift 3
    start=$(date +%s)
    out=$(ud_run env UCX_TLS="$tls" UCX_NET_DEVICES=softverbs0:1 "$@" \
          timeout 240 mpirun $QPX_MPIRUN_ARGS -np $a2a_np \
          "$prog" "$iters" "$block" 2>&1)
    rc=$?
    secs=$(($(date +%s) - start))
    if [ $rc -eq 0 ] &&
       echo "$out" | grep -q "^ALLTOALL OK $iters x $block on $a2a_np ranks"; then
        qpx_pass "$tls: $iters x MPI_Alltoall of $block B on $a2a_np ranks${*:+ ($*)}, data checked ($secs s)"
    else
        qpx_fail "$tls: $iters x MPI_Alltoall of $block B on $a2a_np ranks${*:+ ($*)} (exit $rc after $secs s; 124: stalled)"
        echo "$out" | grep -v "^softverbs" | tail -n 8
    fi
}

a2a qpx_rc,qpx_ud 300 1048576
a2a qpx_ud 30 1048576
# qpx_ud's sends and progress excluding its async timer by the fence
# (UCX_QPX_UD_ASYNC_FENCE, off by default) under UCP: wireup, AMs, acks
a2a qpx_ud 30 1048576 UCX_QPX_UD_ASYNC_FENCE=y
a2a qpx_rc,qpx_ud 50 1048576 UCX_QPX_UD_ASYNC_FENCE=y
# qpx_dc alone: 8 ranks, 8 peers each (itself included), 8 DCIs per rank;
# and 2 DCIs, so that endpoints wait for one (pending) under dcs_quota
if qpx_has_tl qpx_dc; then
    a2a qpx_dc 100 1048576
    a2a qpx_dc 50 65536 UCX_QPX_DC_NUM_DCI=2 UCX_QPX_DC_TX_POLICY=dcs_quota \
        UCX_QPX_DC_QUOTA=4
    # RC lanes wired up over qpx_dc (its async progress: with UCX 1.13,
    # UCP takes no other transport for wireup), 8 ranks connecting to 8
    a2a qpx_rc,qpx_dc 50 1048576
fi
# A receive buffer pool no larger than its queue (16 buffers each): UCP
# keeps unexpected messages' buffers (every fragment of one), and kept
# buffers took them all while the fragments they waited for found none. All
# three transports hung (qpx_ud's peers timed out after 30 s). The pool
# that cannot refill the queue now hands AMs over without the buffer (UCP
# copies), the next buffer back refills it, and qpx_ud keeps no packet
# ahead of a gap meanwhile.
a2a qpx_ud 20 65536 UCX_QPX_RX_QUEUE_LEN=16 UCX_QPX_RX_MAX_BUFS=16
a2a qpx_rc,qpx_ud 20 65536 UCX_QPX_RX_QUEUE_LEN=16 UCX_QPX_RX_MAX_BUFS=16
if qpx_has_tl qpx_dc; then
    a2a qpx_dc 20 65536 UCX_QPX_RX_QUEUE_LEN=16 UCX_QPX_RX_MAX_BUFS=16
fi
# One send buffer per interface: every buffer was held by requests the
# QP or DCI did not signal (one in TX_MODERATION is), so no completion
# brought one back, and the refused request was told to retry at once
# (pending_add said BUSY): both hung, on 2 ranks already. Now an empty pool
# queues the request and asks for those completions (a signalled
# zero-length write), also while queued requests wait for a buffer.
a2a_np=2
a2a qpx_rc,qpx_ud,self 20 65536 UCX_QPX_RC_TX_MAX_BUFS=1
a2a_np=8
a2a qpx_rc,qpx_ud,self 20 65536 UCX_QPX_RC_TX_MAX_BUFS=1
if qpx_has_tl qpx_dc; then
    a2a qpx_dc,self 20 65536 UCX_QPX_DC_TX_MAX_BUFS=1
fi
# One send buffer for qpx_ud too: its connection request, which found none
# (the other endpoints' packets in flight held it), failed the endpoint's
# creation ("no send descriptor for a connection request") and the job.
# The request now waits for a buffer, and the endpoint's sends wait for it.
a2a qpx_rc,qpx_ud,self 20 65536 UCX_QPX_TX_MAX_BUFS=1
a2a qpx_ud,self 20 65536 UCX_QPX_UD_TX_MAX_BUFS=1
# A QP that takes no header inline: control packets get buffers of their
# own; from the four send buffers they found none (all held by packets
# waiting for acks) and every peer timed out after 30 s
a2a qpx_ud,self 20 65536 UCX_QPX_UD_TX_MAX_INLINE=0 UCX_QPX_UD_TX_MAX_BUFS=4
# Registrations: 64 memory regions on the whole host for 8 ranks. Each
# qpx_rc endpoint used to register its control words on its own (16 MRs a
# rank, 128 in all: the job failed); they now share one registration per
# 256 endpoints and the receive queue is one registration (5 a rank, as
# UCX's rc_verbs,ud_verbs). Eager messages only: UCP's own registrations of
# user buffers (rendezvous) are not qpx's to save. The limit counts every
# process of the registry: the job gets a registry of its own, so that tests
# running beside it (make -j2 check) do not spend its regions.
a2a_shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-a2a-$$
a2a qpx_rc,qpx_ud 200 64 SOFTVERBS_MAX_MR=64 SOFTVERBS_SHM="$a2a_shm"
rm -f "$a2a_shm"
qpx_finish
