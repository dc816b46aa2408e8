#!/bin/sh
# Open MPI jobs over the hybrid qpx transport alone (UCX_TLS=qpx,self),
# oversubscribed (the machine may have 2 cores), every result checked:
# - MPI_Alltoall on 8 ranks, 1 MiB blocks, with a pool of 4 RC QPs per rank
#   for 7 peers: endpoints promoted, refused and demoted all along; with
#   5% of requests lost, where a promotion's first RC messages come before
#   the SWITCHED that follows the last DC ones and must be held until it
#   (at least one held); and 64 KiB blocks with qpx_ud as the cold path;
# - MPI_Alltoall on 16 ranks, 256 KiB blocks, pool of 4;
# - one-sided on 8 and 16 ranks (qpx_mpi_osc: MPI_Put to and MPI_Get from
#   every rank, MPI_Accumulate, MPI_Fetch_and_op under a lock, all values
#   checked), pool of 4;
# - a halo exchange (qpx_mpi_halo: 2K ring neighbours hot, an all-to-all of
#   small values every tenth iteration cold) on 8 and 16 ranks;
# and the statistics each rank prints at exit must show promotions;
# - QP, CQ and memory registration limits the job survives on the cold
#   path (rc_verbs shown beside), and a DC cold path no rank can open.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
qpx_has_tl qpx || qpx_skip_all "no qpx transport (no DC)"
a2a_prog=$QPX_TESTDIR/qpx_mpi_alltoall
halo_prog=$QPX_TESTDIR/qpx_mpi_halo
osc_prog=$QPX_TESTDIR/qpx_mpi_osc
mpicc -O2 -Wall -o "$a2a_prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" &&
mpicc -O2 -Wall -o "$halo_prog" "$QPX_SRCDIR/test/integration/qpx_mpi_halo.c" &&
mpicc -O2 -Wall -o "$osc_prog" "$QPX_SRCDIR/test/integration/qpx_mpi_osc.c" ||
    qpx_skip_all "cannot build the MPI programs with mpicc"

# job NAME NP EXPECT PROG ARGS... -- ENV...: passes when the program's
# line EXPECT comes and some rank promoted an endpoint
job() {
    name=$1 np=$2 expect=$3 prog=$4; shift 4
    args=""
    while [ "$1" != "--" ]; do args="$args $1"; shift; done
    shift
    start=$(date +%s)
    out=$(ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 \
          UCX_QPX_PRINT_STATS=y "$@" \
          timeout 300 mpirun $QPX_MPIRUN_ARGS -np "$np" "$prog" $args 2>&1)
    rc=$?
    secs=$(($(date +%s) - start))
    prom=$(echo "$out" | grep -o "promotions=[0-9]*" | cut -d= -f2 |
           awk '{s += $1} END {print s + 0}')
    dem=$(echo "$out" | grep -o "demotions=[0-9]*" | cut -d= -f2 |
          awk '{s += $1} END {print s + 0}')
    held=$(echo "$out" | grep -o "held=[0-9]*" | cut -d= -f2 |
           awk '{s += $1} END {print s + 0}')
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^$expect" && [ "$prom" -gt 0 ] &&
       [ "$held" -ge "${JOB_MIN_HELD:-0}" ]; then
        qpx_pass "$name: $(echo "$out" | grep "^$expect"), $prom promotions and $dem demotions over all ranks, $held messages held on RC until SWITCHED ($secs s)"
    else
        qpx_fail "$name (exit $rc after $secs s, $prom promotions, $held held, at least ${JOB_MIN_HELD:-0} wanted; 124: stalled)"
        echo "$out" | grep -v "^softverbs" | tail -n 10
    fi
}

job "alltoall, 8 ranks, pool of 4" 8 "ALLTOALL OK" "$a2a_prog" 30 1048576 -- \
    UCX_QPX_PROMOTE_THRESH=4 UCX_QPX_PROMOTE_WINDOW=1s UCX_QPX_RC_POOL_SIZE=4
# 5% of RC and DC requests lost (sent again after 2 ms): a SWITCHED lost
# on DC lets the promotion's first RC messages come before it, and the
# peer must hold them (the statistics' held), as RC overtaking DC on
# hardware would; with every value checked
JOB_MIN_HELD=1 job "alltoall, 8 ranks, promoted at once, 5% of requests lost" 8 \
    "ALLTOALL OK" "$a2a_prog" 30 65536 -- \
    UCX_QPX_PROMOTE_THRESH=1 UCX_QPX_RC_POOL_SIZE=4 SOFTVERBS_RC_DROP=0.05 \
    UCX_QPX_DC_TIMEOUT=2ms UCX_QPX_RC_TIMEOUT=2ms UCX_QPX_SWITCH_TIMEOUT=1s
job "alltoall, 8 ranks, UD cold path, pool of 4" 8 "ALLTOALL OK" "$a2a_prog" 20 65536 -- \
    UCX_QPX_COLD_TL=ud UCX_QPX_PROMOTE_THRESH=4 UCX_QPX_PROMOTE_WINDOW=1s \
    UCX_QPX_RC_POOL_SIZE=4
job "alltoall, 16 ranks, pool of 4" 16 "ALLTOALL OK" "$a2a_prog" 10 262144 -- \
    UCX_QPX_PROMOTE_THRESH=4 UCX_QPX_PROMOTE_WINDOW=1s UCX_QPX_RC_POOL_SIZE=4
job "one-sided, 8 ranks, pool of 4" 8 "OSC OK" "$osc_prog" 5 -- \
    UCX_QPX_PROMOTE_THRESH=8 UCX_QPX_RC_POOL_SIZE=4
job "one-sided, 16 ranks, pool of 4" 16 "OSC OK" "$osc_prog" 5 -- \
    UCX_QPX_PROMOTE_THRESH=8 UCX_QPX_RC_POOL_SIZE=4
# (a window of 1 s: with the default 10 ms, 16 ranks on 2 cores beside
# another test may take longer than that for 16 iterations, and nothing
# is promoted)
job "halo, 8 ranks, 4 neighbours" 8 "HALO OK" "$halo_prog" 200 65536 2 -- \
    UCX_QPX_PROMOTE_THRESH=16 UCX_QPX_PROMOTE_WINDOW=1s
job "halo, 16 ranks, 4 neighbours, pool of 8" 16 "HALO OK" "$halo_prog" 100 16384 2 -- \
    UCX_QPX_PROMOTE_THRESH=16 UCX_QPX_PROMOTE_WINDOW=1s UCX_QPX_RC_POOL_SIZE=8

# One QP pair for both directions: halo neighbours talk both ways, and the
# endpoint that gets hot second joins the pair the first one promoted on
# (joins=) instead of a pair of its own; each rank then holds about one RC
# QP per neighbour (max_rc_in_use), not two. Data checked by the program.
out=$(ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 UCX_QPX_PRINT_STATS=y \
      UCX_QPX_PROMOTE_THRESH=16 UCX_QPX_PROMOTE_WINDOW=1s \
      timeout 300 mpirun $QPX_MPIRUN_ARGS -np 8 "$halo_prog" 200 65536 2 2>&1)
rc=$?
sum() { echo "$out" | grep -o " $1=[0-9]*" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'; }
joins=$(sum joins)
most=$(echo "$out" | grep -o " max_rc_in_use=[0-9]*" | cut -d= -f2 | sort -n | tail -n 1)
if [ $rc -eq 0 ] && echo "$out" | grep -q "^HALO OK" && [ "$joins" -gt 0 ]; then
    qpx_pass "halo, 8 ranks, both directions on one pair: $joins joins, $(sum promotions) promotions, at most ${most:-?} RC QPs a rank for 4 neighbours"
else
    qpx_fail "halo, both directions on one pair (exit $rc, $joins joins)"
    echo "$out" | grep -v "^softverbs" | tail -n 10
fi
# One SRQ and one receive buffer pool per rank with the UD cold path: the
# RC QPs and the UD QP receive from the RC interface's SRQ and buffers.
# Against UCX_QPX_SHARED_SRQ=n with qpx_ud on an SRQ of its own
# (UCX_QPX_UD_SRQ=y): two SRQs and the UD pool's registration more. Read
# from softverbs' registry while the job runs (the most seen per rank); the
# all-to-all checks every byte.
srq_job() { # ENV... -> prints "exit SRQS0 SRQS1 MR_BYTES0 MR_BYTES1"
    log=$(mktemp)
    ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 \
        UCX_QPX_COLD_TL=ud UCX_QPX_PROMOTE_THRESH=1 "$@" \
        timeout 120 mpirun $QPX_MPIRUN_ARGS -np 2 "$a2a_prog" 1000 262144 \
        >"$log" 2>&1 &
    job_pid=$!
    seen=""
    while kill -0 $job_pid 2>/dev/null; do
        for p in $(pgrep -f "^$a2a_prog 1000 262144"); do
            seen="$seen $(env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" \
                "$SOFTVERBS_STAT" -p "$p" 2>/dev/null |
                sed -n 's/^proc pid=\([0-9]*\) .* srq=\([0-9]*\) mr=[0-9]* mr_bytes=\([0-9]*\).*/\1:\2:\3/p')"
        done
        sleep 0.1
    done
    wait $job_pid
    rc=$?
    grep -q "^ALLTOALL OK" "$log" || rc=99
    [ $rc -ne 0 ] && grep -v "^softverbs" "$log" | tail -n 5 >&2
    rm -f "$log"
    echo "$rc $(echo "$seen" | tr ' ' '\n' | grep : | awk -F: '
        $2 > srq[$1] {srq[$1] = $2} $3 > mr[$1] {mr[$1] = $3}
        END {n = 0; for (p in srq) {s = s srq[p] " "; m = m mr[p] " "; n++}
             while (n++ < 2) {s = s "0 "; m = m "0 "}; print s m}')"
}
if [ -x "$SOFTVERBS_STAT" ]; then
    set -- $(srq_job)
    sh_rc=$1 sh_srq="$2 $3" sh_mr=$(( ($4 + $5) / 2 ))
    set -- $(srq_job UCX_QPX_SHARED_SRQ=n UCX_QPX_UD_SRQ=y)
    own_rc=$1 own_srq="$2 $3" own_mr=$(( ($4 + $5) / 2 ))
    qpx_check "UD cold path, shared: all-to-all checked, SRQs per rank $sh_srq, registered $((sh_mr / 1024)) KiB per rank" \
        [ "$sh_rc" -eq 0 -a "$sh_srq" = "1 1" ]
    qpx_check "UD cold path, UCX_QPX_SHARED_SRQ=n: all-to-all checked, SRQs per rank $own_srq, registered $((own_mr / 1024)) KiB per rank, more than shared" \
        [ "$own_rc" -eq 0 -a "$own_srq" = "2 2" -a "$own_mr" -gt "$sh_mr" ]
else
    qpx_fail "softverbs-stat not built: SRQs per rank not checked"
fi

# The RC interface opens first for that: with room for 3 QPs in a registry
# of its own, the second rank's UD QP does not fit beside its RC one. It
# opens the cold path alone (and goes without RC, with a warning): the job
# completes, no error about qpx_ud.
lim_shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-hybrid-udlim-$$
rm -f "$lim_shm"
out=$(ud_run env SOFTVERBS_SHM=$lim_shm SOFTVERBS_MAX_QP=3 UCX_TLS=qpx,self \
      UCX_NET_DEVICES=softverbs0:1 UCX_QPX_COLD_TL=ud timeout 120 \
      mpirun $QPX_MPIRUN_ARGS -np 2 "$a2a_prog" 20 65536 2>&1)
rc=$?
rm -f "$lim_shm"
ud_errors=$(echo "$out" | grep "UCX  ERROR" | grep -c "qpx_ud\|cold path")
if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK" && [ "$ud_errors" -eq 0 ]; then
    qpx_pass "UD cold path, 3 QPs for 2 ranks: all-to-all checked, $(echo "$out" | grep -c "UCX  WARN") warnings ($(echo "$out" | grep -m1 "UCX  WARN" | sed 's/.*UCX  WARN  //'))"
else
    qpx_fail "UD cold path, 3 QPs for 2 ranks: exit $rc, $ud_errors errors about the cold path"
    echo "$out" | grep -v "^softverbs" | tail -n 10
fi

# Degrade instead of fail: a registry of its own with 48 QPs for 8 ranks,
# the QPs each rank's qpx interface opens with (4 DCIs, a DCT, qpx_rc's
# first QP), none left for promotions. The job completes, every byte
# checked, with one warning per rank and no error; UCX's rc_verbs,ud_verbs
# under the same limit is shown beside it (not counted).
lim_shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-hybrid-lim-$$
lim_env="SOFTVERBS_SHM=$lim_shm SOFTVERBS_MAX_QP=48 UCX_QPX_DC_NUM_DCI=4"
rm -f "$lim_shm"
out=$(ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 $lim_env \
      UCX_QPX_PROMOTE_THRESH=4 timeout 300 mpirun $QPX_MPIRUN_ARGS -np 8 \
      "$a2a_prog" 20 65536 2>&1)
rc=$?
errors=$(echo "$out" | grep -c "UCX  ERROR")
warns=$(echo "$out" | grep -c "UCX  WARN")
if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK" && [ "$errors" -eq 0 ] &&
   [ "$warns" -le 8 ]; then
    qpx_pass "QP limit 48 for 8 ranks: all-to-all over qpx completes on DC, data checked, $warns warnings ($(echo "$out" | grep -m1 "UCX  WARN" | sed 's/.*UCX  WARN  //'))"
else
    qpx_fail "QP limit 48 for 8 ranks over qpx: exit $rc, $errors errors, $warns warnings"
    echo "$out" | grep -v "^softverbs" | tail -n 10
fi
rm -f "$lim_shm"
out=$(ud_run env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=softverbs0:1 \
      $lim_env UCX_WARN_UNUSED_ENV_VARS=n timeout 300 mpirun $QPX_MPIRUN_ARGS \
      -np 8 "$a2a_prog" 20 65536 2>&1)
echo "(rc_verbs,ud_verbs under the same limit, not counted: exit $?, $(echo "$out" | grep -m1 "UCX  ERROR" | sed 's/.*UCX  ERROR //'))"
rm -f "$lim_shm"

# The same on a device of 20 QPs with qpx_dc's DCIs as they default: each
# rank takes no more than half its share (20 / 8 local processes) for DC,
# 1 DCI and its DCT. Before that cap, the first ranks took 8 DCIs each and
# a later one failed: "no qpx_dc interface for the cold path".
lim_shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-hybrid-lim20-$$
rm -f "$lim_shm"
out=$(ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 \
      SOFTVERBS_SHM=$lim_shm SOFTVERBS_MAX_QP=20 UCX_QPX_PROMOTE_THRESH=4 \
      timeout 300 mpirun $QPX_MPIRUN_ARGS -np 8 "$a2a_prog" 20 65536 2>&1)
rc=$?
rm -f "$lim_shm"
errors=$(echo "$out" | grep -c "UCX  ERROR")
warns=$(echo "$out" | grep -c "UCX  WARN")
if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK" && [ "$errors" -eq 0 ] &&
   [ "$warns" -le 8 ]; then
    qpx_pass "QP limit 20 for 8 ranks, DCIs by default: all-to-all over qpx completes, data checked, $warns warnings"
else
    qpx_fail "QP limit 20 for 8 ranks, DCIs by default: exit $rc, $errors errors, $warns warnings"
    echo "$out" | grep -v "^softverbs" | grep "UCX  ERROR\|UCX  WARN" | sort | uniq -c | sort -rn | head -n 10
fi

# A DC cold path no rank can open (SOFTVERBS_DC=0: the device refuses DC
# QPs, as an mlx5 whose firmware has no DC; UCX_QPX_DC_TX_MAX_INLINE=0 did
# it until softverbs sized inline room as libmlx5 does, which gives a DCI
# asking for none 124 bytes): with UCX_QPX_COLD_TL=auto each rank falls
# back to qpx_ud, with one warning and no error, and the job completes; it
# failed at MPI_Init ("no qpx_dc interface for the cold path").
job "alltoall, 8 ranks, DC refused: qpx_ud cold path" 8 "ALLTOALL OK" \
    "$a2a_prog" 20 65536 -- SOFTVERBS_DC=0 \
    UCX_QPX_PROMOTE_THRESH=4 UCX_QPX_PROMOTE_WINDOW=1s
fell=$(echo "$out" | grep -c "no qpx_dc interface for the cold path.*qpx_ud instead")
errors=$(echo "$out" | grep -c "UCX  ERROR")
if [ "$fell" -eq 8 ] && [ "$errors" -eq 0 ]; then
    qpx_pass "DC refused: each of 8 ranks said it fell back to qpx_ud, no error"
else
    qpx_fail "DC refused: $fell of 8 ranks said they fell back, $errors errors"
fi

# limit_job NAME MAX_WARNS MAX_ERRORS ENV...: the all-to-all on 8 ranks
# over qpx in a registry of its own under the limits in ENV completes,
# every byte checked, with at most MAX_WARNS warnings and no error from
# qpx's code; errors UCX's own code logs are counted: its rc_verbs creates
# a CQ and a QP when UCP lists the device's transports, and libucs logs
# every memory pool chunk it could not get (at most MAX_ERRORS of those).
# rc_verbs,ud_verbs under the same limits are shown beside (not counted).
limit_job() {
    name=$1 max_warns=$2 max_errors=$3; shift 3
    lim_shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-hybrid-lim-$$
    rm -f "$lim_shm"
    out=$(ud_run env UCX_TLS=qpx,self UCX_NET_DEVICES=softverbs0:1 \
          SOFTVERBS_SHM=$lim_shm "$@" UCX_QPX_PROMOTE_THRESH=4 timeout 300 \
          mpirun $QPX_MPIRUN_ARGS -np 8 "$a2a_prog" 20 65536 2>&1)
    rc=$?
    rm -f "$lim_shm"
    # the source file each error was logged from
    files=$(echo "$out" | grep "UCX  ERROR" |
            sed 's/.*\] *\([A-Za-z0-9_]*\.[ch]\):.*/\1/')
    qpx_errors=$(echo "$files" | grep -c "^qpx_")
    other=$(echo "$files" | grep -c "^[a-z]")
    other=$((other - qpx_errors))
    warns=$(echo "$out" | grep -c "UCX  WARN")
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK" &&
       [ "$qpx_errors" -eq 0 ] && [ "$other" -le "$max_errors" ] &&
       [ "$warns" -le "$max_warns" ]; then
        qpx_pass "$name: all-to-all over qpx completes, data checked, $warns warnings ($(echo "$out" | grep "UCX  WARN" | sed 's/.*UCX  WARN  //;s/0x[0-9a-f]*/X/;s/of [0-9]* bytes/of N bytes/' | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')), $other errors from UCX's own code$(echo "$files" | grep -v "^qpx_" | grep . | sort | uniq -c | awk '{printf " (%s: %s)", $2, $1}')"
    else
        qpx_fail "$name over qpx: exit $rc, $qpx_errors errors from qpx, $other others, $warns warnings"
        echo "$out" | grep -v "^softverbs" | grep "UCX  ERROR\|UCX  WARN" | sort | uniq -c | sort -rn | head -n 10
    fi
    # (20 s at most: under the MR limit its 8 ranks retry and log errors
    # for half a minute before they abort, which starves the test beside)
    out=$(ud_run env UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=softverbs0:1 \
          SOFTVERBS_SHM=$lim_shm "$@" UCX_WARN_UNUSED_ENV_VARS=n timeout 20 \
          mpirun $QPX_MPIRUN_ARGS -np 8 "$a2a_prog" 20 65536 2>&1)
    rc=$?
    rm -f "$lim_shm"
    echo "(rc_verbs,ud_verbs under the same limit, not counted: exit $rc$([ $rc -eq 124 ] && echo ", stopped after 20 s"), $(echo "$out" | grep -c "UCX  ERROR") errors, $(echo "$out" | grep -c "^ALLTOALL OK") ALLTOALL OK, the first error: $(echo "$out" | grep -m1 "UCX  ERROR" | sed 's/.*UCX  ERROR //'))"
}

# 16 CQs for 8 ranks: the two each rank's cold path needs. The RC interface
# opens at a rank's first promotion, where CQs are left (none here: its
# attributes are read at open from one opened and closed at once; a rank
# whose cold path finds no CQ then tries again).
limit_job "CQ limit 16 for 8 ranks" 8 8 SOFTVERBS_MAX_CQ=16
# The same with UCX_QPX_RC_OPEN_EAGER=y: the RC interfaces open at each
# rank's first endpoint, after every rank's cold path opened with its
# worker (opened with the interface, they took the CQs two ranks' cold
# paths needed, and the job failed); those that find no CQ leave it to
# the first promotion, and the job goes on
limit_job "CQ limit 16 for 8 ranks, RC_OPEN_EAGER=y" 8 8 SOFTVERBS_MAX_CQ=16 \
    UCX_QPX_RC_OPEN_EAGER=y

# 24 memory registrations for 8 ranks: RC endpoints find none for their
# control words, send buffer pools stop growing (a warning each)
limit_job "MR limit 24 for 8 ranks" 24 64 SOFTVERBS_MAX_MR=24
qpx_finish
