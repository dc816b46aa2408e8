#!/bin/sh
# softverbs' mlx5 personality (SOFTVERBS_MLX5=1, sv_mlx5_*.c): UCX's own
# rc_mlx5, ud_mlx5 and dc_mlx5, unmodified, write WQEs into softverbs' send
# queues, ring its doorbell records and poll its CQEs, and softverbs'
# engine thread plays the HCA. Checked here: UCX opens the device as an
# mlx5 MD and lists the three (and none without the setting);
# ucx_perftest's UCT pairs of every operation each offers on a DV device
# run to their end; the UCT data-integrity test (every operation and size
# class, payloads checked) passes over each, on an InfiniBand port and on
# a RoCE port; Open MPI alltoall on 8 ranks
# moves checked data over rc_mlx5,ud_mlx5 and over dc_mlx5 alone.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup rc_mlx5
export SOFTVERBS_SHM="$TL_TMP/shm"

# The personality is opt-in: without it the device is a verbs device
out=$(timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "Transport: rc_verbs" &&
   ! echo "$out" | grep -q "Transport: rc_mlx5"; then
    qpx_pass "without SOFTVERBS_MLX5: rc_verbs, no rc_mlx5"
else
    qpx_fail "without SOFTVERBS_MLX5: $(echo "$out" | grep Transport | tr -s ' ' | tr '\n' ';')"
fi
export SOFTVERBS_MLX5=1
out=$(UCX_LOG_LEVEL=debug timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "Transport: rc_mlx5" &&
   echo "$out" | grep -q "Transport: ud_mlx5" &&
   echo "$out" | grep -q "Transport: dc_mlx5" &&
   echo "$out" | grep -q "md open by 'uct_ib_mlx5_md_ops' is successful" &&
   echo "$out" | grep -q "vendor_id 0x15b3 device_id 4119" &&
   ! echo "$out" | grep -q "UCX  ERROR"; then
    qpx_pass "SOFTVERBS_MLX5=1: an mlx5 MD (ConnectX-5 PCI identity), rc_mlx5, ud_mlx5, dc_mlx5 listed"
else
    qpx_fail "SOFTVERBS_MLX5=1: not all of rc_mlx5, ud_mlx5, dc_mlx5"
    echo "$out" | grep -E "Transport|UCX  ERROR" | tail -n 10
    echo "$out" | grep -iE "mlx5|sysfs|vendor" | tail -n 10
fi
out=$(SOFTVERBS_MLX5=yes timeout 60 ucx_info -d 2>&1)
if echo "$out" | grep -q "SOFTVERBS_MLX5"; then
    qpx_pass "SOFTVERBS_MLX5=yes is refused with a message"
else
    qpx_fail "SOFTVERBS_MLX5=yes: no message"
fi

# ucx_perftest pairs (the tool checks no data: each is a run)
for t in "put_lat" "put_bw" "put_bw -D bcopy" "put_bw -D zcopy -s 4096" \
         "am_lat" "am_bw" "am_bw -D bcopy" "am_bw -D zcopy -s 4096" \
         "am_lat -D bcopy -s 4000" "get -D bcopy" "get -D zcopy -s 4096" \
         "add_lat" "fadd" "cswap"; do
    # shellcheck disable=SC2086
    tl_pair "rc_mlx5 $t" -d "$QPX_DEV" -x rc_mlx5 -t $t -n 2000
done
for t in "am_lat" "am_bw" "am_bw -D bcopy" "am_bw -D zcopy -s 2048"; do
    # shellcheck disable=SC2086
    tl_pair "ud_mlx5 $t" -d "$QPX_DEV" -x ud_mlx5 -t $t -n 2000
done
for t in "put_lat" "put_bw -D zcopy -s 4096" "am_lat" "am_bw -D bcopy" \
         "get -D zcopy -s 4096" "fadd" "cswap"; do
    # shellcheck disable=SC2086
    tl_pair "dc_mlx5 $t" -d "$QPX_DEV" -x dc_mlx5 -t $t -n 2000
done

# Every UCT operation and size, data checked (-P: UCX's own transport), on
# an InfiniBand port and on a RoCE port (address vectors with a GRH, LID 0;
# UCX picks the GID)
integrity() { # TL LINK_LAYER
    out=$(SOFTVERBS_LINK_LAYER=$2 LD_PRELOAD="$QPX_MODULE" timeout 300 \
          "$QPX_TESTDIR/qpx_uct_integrity" -P -x $1 -d "$QPX_DEV" 2>&1)
    rc=$?
    summary=$(echo "$out" | tail -n 1)
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^[1-9][0-9]* passed, 0 failed"; then
        qpx_pass "qpx_uct_integrity over $1 ($2): $summary"
    else
        qpx_fail "qpx_uct_integrity over $1 ($2, exit $rc): $summary"
        echo "$out" | grep -E "^FAIL|rror|Assert" | head -n 10
    fi
}
for tl in rc_mlx5 ud_mlx5 dc_mlx5; do
    integrity $tl infiniband
    integrity $tl ethernet
done

# UCP over the mlx5 transports alone: Open MPI alltoall on 8 ranks (8
# engines on the machine's cores), every byte checked
a2a() { # TLS
    qpx_mpi_a2a "Open MPI alltoall over $1" "$prog" 20 65536 \
        UCX_TLS="$1" UCX_NET_DEVICES="$QPX_DEV"
}
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
    prog=$TL_TMP/qpx_mpi_alltoall
    if mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c"; then
        a2a rc_mlx5,ud_mlx5
        a2a dc_mlx5
    else
        qpx_fail "cannot build qpx_mpi_alltoall.c"
    fi
fi
qpx_finish
