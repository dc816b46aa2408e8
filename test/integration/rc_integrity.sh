#!/bin/sh
# Data integrity of every operation of $RC_TL (default qpx_rc) through the
# UCT API, two processes, under several configurations: defaults; tiny
# queues with RNR retries disabled (credit flow control must prevent every
# RNR); caps above the device limits with both softverbs cap policies.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/rc_lib.sh"
rc_setup

prog="$QPX_TESTDIR/qpx_uct_integrity"
[ -x "$prog" ] || qpx_skip_all "$prog not built"
P=$(echo "$RC_TL" | tr a-z A-Z)

run() { # name env...
    name=$1; shift
    env "$@" LD_PRELOAD="$QPX_MODULE" timeout 300 "$prog" -x "$RC_TL" -d "$RC_DEV" \
        >"$RC_TMP/out" 2>&1
    ret=$?
    if [ $ret -eq 77 ]; then
        cat "$RC_TMP/out"; qpx_skip_all "$RC_TL not available"
    fi
    summary=$(tail -1 "$RC_TMP/out")
    if [ $ret -eq 0 ]; then
        qpx_pass "$name: $summary"
    else
        # Both processes (initiator and forked target) write to this file;
        # print all of it so that a failure explains itself
        case $ret in
        124) why="timed out after 300 s" ;;
        1)   why="a check failed" ;;
        *)   why="exit $ret" ;;
        esac
        echo "---- output of both sides ($name, env: $*)"
        tail -200 "$RC_TMP/out"
        echo "----"
        qpx_fail "$name: $why: $(grep -c '^FAIL' "$RC_TMP/out") FAIL lines, last line: $summary"
    fi
}

run "defaults"
run "tiny queues, no RNR retry" UCX_${P}_RX_QUEUE_LEN=64 UCX_${P}_RX_MAX_BATCH=8 \
    UCX_${P}_TX_QUEUE_LEN=16 UCX_${P}_RNR_RETRY_COUNT=0 UCX_${P}_TX_MODERATION=4
run "caps above the device, policy fail" SOFTVERBS_CAP_POLICY=fail \
    UCX_${P}_TX_MAX_INLINE=1000000 UCX_${P}_TX_QUEUE_LEN=10000000
run "caps above the device, policy clamp" SOFTVERBS_CAP_POLICY=clamp \
    UCX_${P}_TX_MAX_INLINE=1000000 UCX_${P}_TX_QUEUE_LEN=10000000
# A device that lets writes pass earlier reads (IB ordering rules): the
# fence cases must still read the old value, the unfenced one the new
run "writes pass unfenced reads" SOFTVERBS_RC_READ_REORDER=1
qpx_finish
