#!/bin/sh
# The shared two-process UCT data-integrity test (qpx_uct_integrity, from
# the qpx_rc tests) run over qpx_ud: every operation qpx_ud advertises (am
# short/bcopy/zcopy, flush, cancel, pending), without loss, under 5% drop and
# reordering. (Its -k peer-failure mode drives get_zcopy, which qpx_ud does
# not offer; ud-peer-failure.sh covers peer failure for qpx_ud.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"
prog=$QPX_TESTDIR/qpx_uct_integrity
[ -x "$prog" ] || qpx_skip_all "$prog not built"

run() { # name args -- env...
    name=$1; shift
    args=$1; shift
    out=$(ud_run env "$@" timeout 300 "$prog" -x qpx_ud -d softverbs0:1 $args 2>&1)
    ret=$?
    [ $ret -eq 77 ] && { echo "$out" | tail -3; qpx_skip_all "qpx_ud not available"; }
    if [ $ret -eq 0 ]; then
        qpx_pass "$name: $(echo "$out" | tail -1)"
    else
        echo "$out" | grep -E "^FAIL|ERROR" | head -10 | sed 's/^/  /'
        qpx_fail "$name: $(echo "$out" | tail -1) (exit $ret)"
    fi
}

run "defaults" ""
run "5% drop + 5% reorder" "" SOFTVERBS_UD_DROP=0.05 SOFTVERBS_UD_REORDER=0.05
run "small window and queues" "" UCX_QPX_UD_WINDOW=8 UCX_QPX_UD_TX_QUEUE_LEN=8 \
    UCX_QPX_UD_RX_QUEUE_LEN=64 SOFTVERBS_UD_DROP=0.02
# Caps above what the device gives: a device that refuses them (fail) and
# one that grants its limit instead (clamp); the interface must open within
# the limits and move the same data
run "caps above the device, policy fail" "" SOFTVERBS_CAP_POLICY=fail \
    UCX_QPX_UD_TX_QUEUE_LEN=100000 UCX_QPX_UD_RX_QUEUE_LEN=100000
run "caps above the device, policy clamp" "" SOFTVERBS_CAP_POLICY=clamp \
    UCX_QPX_UD_TX_QUEUE_LEN=100000 UCX_QPX_UD_RX_QUEUE_LEN=100000
qpx_finish
