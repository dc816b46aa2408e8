#!/bin/sh
# qpx_rc's direct path (src/uct/qpx/base/qpx_mlx5.*): on an mlx5 device
# (softverbs with SOFTVERBS_MLX5=1) qpx_rc writes WQEs into its QPs' send
# queues, reads CQEs and posts SRQ WQEs itself, with no verbs call per
# operation; the rest of the suite runs qpx_rc on the verbs path (softverbs
# without the setting), so both are checked. Here: the path each setting
# takes (UCX_QPX_RC_DIRECT auto, off; on refused where it cannot be:
# qpx_dc, a device without mlx5); every UCT operation and size with data
# checked, under the configurations of rc_integrity.sh (tiny queues, the
# smallest send queue and CQ, the largest inline sends the device grants,
# writes passing reads) and with requests lost on the wire; ucx_perftest
# pairs; Open MPI alltoall on 8 ranks over qpx_rc,qpx_ud, data checked.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
P=$QPX_TL_ENV
export SOFTVERBS_SHM="$TL_TMP/shm"

# The path taken, from qpx's debug log of the interface's opening
path_of() { # ENV... -> "direct", "verbs" or "none"
    out=$(env "$@" UCX_LOG_LEVEL=debug LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -d 2>&1)
    if echo "$out" | grep -q "qpx_rc iface .*: direct path"; then
        echo direct
    elif echo "$out" | grep -q "qpx_rc iface .*: verbs path"; then
        echo verbs
    else
        echo none
    fi
}
check_path() { # WANT ENV...
    want=$1; shift
    got=$(path_of "$@")
    if [ "$got" = "$want" ]; then
        qpx_pass "qpx_rc path with $*: $got"
    else
        qpx_fail "qpx_rc path with $*: $got, expected $want"
    fi
}
check_path verbs SOFTVERBS_MLX5=0
check_path verbs SOFTVERBS_MLX5=0 UCX_${P}_DIRECT=auto
check_path direct SOFTVERBS_MLX5=1
check_path verbs SOFTVERBS_MLX5=1 UCX_${P}_DIRECT=off
out=$(env SOFTVERBS_MLX5=0 UCX_${P}_DIRECT=on LD_PRELOAD="$QPX_MODULE" \
      timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "DIRECT=on, but softverbs0 has no mlx5 queues" &&
   echo "$out" | grep -A 6 "Transport: qpx_rc$" |
       grep -q "failed to open interface"; then
    qpx_pass "DIRECT=on on a verbs-only device: refused with a message"
else
    qpx_fail "DIRECT=on on a verbs-only device: $(echo "$out" | grep -E 'DIRECT|qpx_rc' | head -n 2)"
fi
out=$(SOFTVERBS_MLX5=1 UCX_QPX_DC_DIRECT=on LD_PRELOAD="$QPX_MODULE" \
      timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "qpx_dc: DIRECT=on: the transport has no direct path yet"; then
    qpx_pass "qpx_dc DIRECT=on: refused with a message"
else
    qpx_fail "qpx_dc DIRECT=on: no message"
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

for t in "put_lat" "put_bw" "am_lat" "am_bw -D bcopy" "am_bw -D zcopy -s 4096" \
         "get -D zcopy -s 4096" "fadd" "cswap"; do
    # shellcheck disable=SC2086
    tl_pair "direct qpx_rc $t" -d "$QPX_DEV" -x qpx_rc -t $t -n 2000
done

if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
    prog=$TL_TMP/qpx_mpi_alltoall
    if mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c"; then
        out=$(env UCX_TLS=qpx_rc,qpx_ud UCX_NET_DEVICES="$QPX_DEV" \
              LD_PRELOAD="$QPX_MODULE" timeout 240 mpirun $QPX_MPIRUN_ARGS \
              -x SOFTVERBS_MLX5 -x SOFTVERBS_SHM -np 8 "$prog" 20 1048576 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK 20 x 1048576 on 8 ranks"; then
            qpx_pass "direct: Open MPI alltoall over qpx_rc,qpx_ud, 8 ranks, 20 x 1 MiB, data checked"
        else
            qpx_fail "direct: Open MPI alltoall over qpx_rc,qpx_ud (exit $rc; 124: stalled)"
            echo "$out" | grep -v "^softverbs" | tail -n 8
        fi
    else
        qpx_fail "cannot build qpx_mpi_alltoall.c"
    fi
fi
qpx_finish
