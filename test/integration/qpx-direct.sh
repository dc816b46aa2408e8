#!/bin/sh
# The direct path of qpx_rc, qpx_dc and qpx_ud (src/uct/qpx/base/qpx_mlx5.*):
# on an mlx5 device (softverbs with SOFTVERBS_MLX5=1) they write WQEs into
# their QPs' (DCIs') send queues, read CQEs and post receive WQEs
# themselves, with no verbs call per operation; the rest of the suite runs
# them on the verbs path (softverbs without the setting), so both are
# checked. Here: the path each setting takes (UCX_QPX_<TL>_DIRECT auto,
# off; on refused where it cannot be: a device without mlx5, the hybrid's
# RC sub-interface beside a verbs DC one); every UCT operation and size
# with data checked, under the configurations of rc_integrity.sh,
# dc-uct-integrity.sh and ud-uct-integrity.sh (tiny queues, the smallest
# send queue and CQ, the largest inline sends the device grants, writes
# passing reads, DCI policies, one DCI, UD packets dropped and reordered,
# qpx_ud's SRQ) and with requests lost on the wire; peers killed
# mid-traffic, a DCI failed by a wrong DC key and recovered, forged UD
# packets, the hybrid's promotions under floods and timeouts (the verbs
# path's scripts, run whole); ucx_perftest pairs; Open MPI alltoall on 8
# ranks over qpx_rc,qpx_ud, qpx_dc and the hybrid qpx, data checked.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
P=$QPX_TL_ENV
export SOFTVERBS_SHM="$TL_TMP/shm"

# The path taken, from qpx's debug log of the interface's opening
path_of() { # TL ENV... -> "direct", "verbs" or "none"
    tl=$1; shift
    out=$(env "$@" UCX_LOG_LEVEL=debug LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -d 2>&1)
    if echo "$out" | grep -q "$tl iface .*: direct path"; then
        echo direct
    elif echo "$out" | grep -q "$tl iface .*: verbs path"; then
        echo verbs
    else
        echo none
    fi
}
check_path() { # TL WANT ENV...
    tl=$1; want=$2; shift 2
    got=$(path_of "$tl" "$@")
    if [ "$got" = "$want" ]; then
        qpx_pass "$tl path with $*: $got"
    else
        qpx_fail "$tl path with $*: $got, expected $want"
    fi
}
for tl in qpx_rc qpx_dc qpx_ud; do
    T=$(echo "$tl" | tr a-z A-Z)
    check_path $tl verbs SOFTVERBS_MLX5=0
    check_path $tl verbs SOFTVERBS_MLX5=0 UCX_${T}_DIRECT=auto
    check_path $tl direct SOFTVERBS_MLX5=1
    check_path $tl verbs SOFTVERBS_MLX5=1 UCX_${T}_DIRECT=off
done
out=$(env SOFTVERBS_MLX5=0 UCX_${P}_DIRECT=on LD_PRELOAD="$QPX_MODULE" \
      timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "DIRECT=on, but on softverbs0 the device has no mlx5 queues" &&
   echo "$out" | grep -A 6 "Transport: qpx_rc$" |
       grep -q "failed to open interface"; then
    qpx_pass "DIRECT=on on a verbs-only device: refused with a message"
else
    qpx_fail "DIRECT=on on a verbs-only device: $(echo "$out" | grep -E 'DIRECT|qpx_rc' | head -n 2)"
fi
# The hybrid's sub-interfaces: the RC one receives from the cold path's SRQ,
# direct where that one is; DIRECT=on for it is refused with the reason
# when the SRQ's owner is on verbs
out=$(SOFTVERBS_MLX5=1 UCX_LOG_LEVEL=debug LD_PRELOAD="$QPX_MODULE" \
      timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "qpx_rc iface .*: direct path (mlx5 queues, a shared SRQ)"; then
    qpx_pass "the hybrid's qpx_rc on the cold path's SRQ: direct"
else
    qpx_fail "the hybrid's qpx_rc on the cold path's SRQ: not direct"
fi
out=$(SOFTVERBS_MLX5=1 UCX_QPX_DC_DIRECT=off UCX_QPX_RC_DIRECT=on \
      LD_PRELOAD="$QPX_MODULE" timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "qpx_rc: DIRECT=on, but on softverbs0 the interface whose SRQ it shares is on the verbs path"; then
    qpx_pass "the hybrid's qpx_rc with DIRECT=on beside a verbs qpx_dc: refused with the reason"
else
    qpx_fail "the hybrid's qpx_rc with DIRECT=on beside a verbs qpx_dc: no reason given"
fi

export SOFTVERBS_MLX5=1
tl_integrity "direct: defaults"
tl_integrity "direct: tiny queues, no RNR retry" UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_RX_MAX_BATCH=8 UCX_${P}_TX_QUEUE_LEN=16 \
    UCX_${P}_RNR_RETRY_COUNT=0 UCX_${P}_TX_MODERATION=4
tl_integrity "direct: send queue of 3" UCX_${P}_TX_QUEUE_LEN=3
tl_integrity "direct: send CQ of 2" UCX_${P}_TX_CQ_LEN=2
tl_integrity "direct: the largest inline sends" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_MAX_INLINE=1000000 UCX_${P}_TX_QUEUE_LEN=10000000
tl_integrity "direct: writes pass unfenced reads" SOFTVERBS_RC_READ_REORDER=1
tl_integrity "direct: 2% of requests lost, 2 ms ACK timeout" \
    SOFTVERBS_RC_DROP=0.02 UCX_${P}_TIMEOUT=2ms UCX_${P}_RETRY_COUNT=7
tl_integrity "direct: on a RoCE port (GRH, LID 0)" SOFTVERBS_LINK_LAYER=ethernet

# qpx_dc: each DCI's WQEs carry the target's address vector and key
QPX_TL=qpx_dc
P=QPX_DC
tl_integrity "direct qpx_dc: defaults (dcs_quota)"
for policy in dcs rand sticky spread; do
    tl_integrity "direct qpx_dc: policy $policy" UCX_${P}_TX_POLICY=$policy
done
tl_integrity "direct qpx_dc: one DCI, send queue of 2, send CQ of 2" \
    UCX_${P}_NUM_DCI=1 UCX_${P}_TX_QUEUE_LEN=2 UCX_${P}_TX_CQ_LEN=2
tl_integrity "direct qpx_dc: one DCI, queues of 8, no async progress" \
    UCX_${P}_NUM_DCI=1 UCX_${P}_TX_QUEUE_LEN=8 UCX_${P}_RX_QUEUE_LEN=64 \
    UCX_${P}_ASYNC_PROGRESS=off
tl_integrity "direct qpx_dc: the largest inline sends" \
    SOFTVERBS_CAP_POLICY=clamp UCX_${P}_TX_MAX_INLINE=1000000
tl_integrity "direct qpx_dc: path MTU 256" UCX_${P}_PATH_MTU=256
tl_integrity "direct qpx_dc: on a RoCE port (GRH, LID 0)" \
    SOFTVERBS_LINK_LAYER=ethernet
# A script of the verbs path run whole on the direct path (TL SCRIPT)
run_whole() {
    out=$(QPX_TL=$1 sh "$QPX_SRCDIR/test/integration/$2" 2>&1)
    summary=$(echo "$out" | grep -E "^[0-9]+ passed, [0-9]+ failed" | tail -n 1)
    if echo "$summary" | grep -q " 0 failed" &&
       ! echo "$summary" | grep -q "^0 passed"; then
        qpx_pass "direct $1: $2: $summary"
    else
        echo "$out" | grep -E "^FAIL" | head -n 10
        qpx_fail "direct $1: $2: ${summary:-no summary}"
    fi
}
# Peers killed mid-traffic (their DCIs fail and come back through RESET,
# the CQEs of their last life dropped) and a wrong DC key
run_whole qpx_dc dc-peers.sh
run_whole qpx_dc dc-key.sh

# qpx_ud: each WQE carries the peer's address vector, QP number and Q_Key;
# receives go to the QP's own receive queue, in order (or to its SRQ)
QPX_TL=qpx_ud
P=QPX_UD
tl_integrity "direct qpx_ud: defaults"
tl_integrity "direct qpx_ud: 5% drop + 5% reorder" SOFTVERBS_UD_DROP=0.05 \
    SOFTVERBS_UD_REORDER=0.05
tl_integrity "direct qpx_ud: small window and queues" UCX_${P}_WINDOW=8 \
    UCX_${P}_TX_QUEUE_LEN=8 UCX_${P}_RX_QUEUE_LEN=64 SOFTVERBS_UD_DROP=0.02
tl_integrity "direct qpx_ud: no inline sends" UCX_${P}_TX_MAX_INLINE=0
tl_integrity "direct qpx_ud: the largest inline sends" \
    SOFTVERBS_CAP_POLICY=clamp UCX_${P}_TX_MAX_INLINE=1000000
tl_integrity "direct qpx_ud: send CQ of 2" UCX_${P}_TX_CQ_LEN=2
tl_integrity "direct qpx_ud: an SRQ" UCX_${P}_SRQ=y
tl_integrity "direct qpx_ud: no async progress" UCX_${P}_ASYNC_PROGRESS=n
tl_integrity "direct qpx_ud: on a RoCE port (GRH, LID 0)" \
    SOFTVERBS_LINK_LAYER=ethernet
# Peers that die or restart, and forged, truncated and spoofed packets
run_whole qpx_ud ud-peer-failure.sh
run_whole qpx_ud ud-garbage.sh

# The hybrid, its sub-interfaces direct (the RC one on the cold path's
# SRQ): every operation, promotions and demotions under floods and small
# pools (hybrid-uct.sh whole), and promotions that time out (2 ms), which
# reset RC QPs that hold SRQ WQEs: those complete late or never, so the
# SRQ is posted from its list of free WQEs, not as a ring (1 flood in 4
# misdelivered messages when it was a ring), and a reset QP's unread
# receives are flushed (qpx_mlx5_qp_clean)
run_whole qpx hybrid-uct.sh
QPX_TL=qpx
for i in 1 2 3 4 5 6; do
    tl_flood "direct qpx: flood, pool of 1, switches time out after 2 ms ($i)" \
        UCX_QPX_PROMOTE_THRESH=1 UCX_QPX_RC_POOL_SIZE=1 \
        UCX_QPX_SWITCH_TIMEOUT=2ms
done
QPX_TL=qpx_rc
P=QPX_RC

for tl in qpx_rc qpx_dc; do
    for t in "put_lat" "put_bw" "am_lat" "am_bw -D bcopy" \
             "am_bw -D zcopy -s 4096" "get -D zcopy -s 4096" "fadd" "cswap"; do
        # shellcheck disable=SC2086
        tl_pair "direct $tl $t" -d "$QPX_DEV" -x $tl -t $t -n 2000
    done
done
for t in "am_lat" "am_bw -D short" "am_bw -D bcopy -s 2048" \
         "am_bw -D zcopy -s 4000"; do
    # shellcheck disable=SC2086
    tl_pair "direct qpx_ud $t" -d "$QPX_DEV" -x qpx_ud -t $t -n 2000
done

if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
    prog=$TL_TMP/qpx_mpi_alltoall
    if mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c"; then
        for tls in qpx_rc,qpx_ud qpx_dc qpx; do
            qpx_mpi_a2a "direct: Open MPI alltoall over $tls" "$prog" 20 \
                1048576 UCX_TLS=$tls UCX_NET_DEVICES="$QPX_DEV" \
                LD_PRELOAD="$QPX_MODULE"
        done
    else
        qpx_fail "cannot build qpx_mpi_alltoall.c"
    fi
fi
qpx_finish
