#!/bin/sh
# qpx reads its settings only under UCX_QPX_*: a qpx-wide UCX_QPX_<NAME> for
# what its transports share, overridden per transport by UCX_QPX_RC_<NAME> /
# UCX_QPX_UD_<NAME>. UCX's bare names of other components (UCX_SEG_SIZE is
# UCP's own knob, UCX_TX_QUEUE_LEN the IB transports') must not change qpx.
# UCT's common interface options (FAILURE, MAX_NUM_EPS, ALLOC) keep their
# UCT names, as in every UCX transport, so that uct_config_modify() takes
# them (qpx_uct_config): UCT's generic UCX_FAILURE is then their default,
# which UCX_QPX_FAILURE and UCX_QPX_<TL>_FAILURE override. Checked on the
# values UCX's parser reports (ucx_info -c) and on what an opened interface
# reports (ucx_info -d: am_bcopy follows SEG_SIZE).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v ucx_info >/dev/null || qpx_skip_all "ucx_info missing"
export UCX_NET_DEVICES=softverbs0:1

# cfg VAR [ENV...]: value of UCX_QPX_... VAR in ucx_info -c under ENV
cfg() {
    var=$1; shift
    env "$@" LD_PRELOAD="$QPX_MODULE" ucx_info -c 2>/dev/null |
        sed -n "s/^$var=//p"
}

# expect NAME VAR WANT [ENV...]
expect() {
    name=$1 var=$2 want=$3; shift 3
    got=$(cfg "$var" "$@")
    if [ "$got" = "$want" ]; then
        qpx_pass "$name: $var=$got"
    else
        qpx_fail "$name: $var is '$got', expected '$want'"
    fi
}

[ -n "$(cfg UCX_QPX_RC_SEG_SIZE)" ] ||
    qpx_skip_all "ucx_info -c does not list qpx's settings"

expect "default" UCX_QPX_RC_SEG_SIZE 8K
expect "UCP's UCX_SEG_SIZE leaves qpx_rc alone" UCX_QPX_RC_SEG_SIZE 8K \
    UCX_SEG_SIZE=4k
expect "UCX_TX_QUEUE_LEN leaves qpx_rc alone" UCX_QPX_RC_TX_QUEUE_LEN 256 \
    UCX_TX_QUEUE_LEN=32
expect "UCX_TX_QUEUE_LEN leaves qpx_ud alone" UCX_QPX_UD_TX_QUEUE_LEN 256 \
    UCX_TX_QUEUE_LEN=32
expect "UCT's generic UCX_FAILURE is qpx_rc's default" UCX_QPX_RC_FAILURE \
    ERROR UCX_FAILURE=error
expect "UCX_QPX_FAILURE overrides UCX_FAILURE" UCX_QPX_UD_FAILURE FATAL \
    UCX_FAILURE=error UCX_QPX_FAILURE=fatal
expect "UCX_QPX_SEG_SIZE sets qpx_rc" UCX_QPX_RC_SEG_SIZE 4K \
    UCX_QPX_SEG_SIZE=4k
expect "UCX_QPX_RC_SEG_SIZE overrides UCX_QPX_SEG_SIZE" UCX_QPX_RC_SEG_SIZE 2K \
    UCX_QPX_SEG_SIZE=4k UCX_QPX_RC_SEG_SIZE=2k
expect "UCX_QPX_FAILURE sets qpx_rc" UCX_QPX_RC_FAILURE ERROR \
    UCX_QPX_FAILURE=error
expect "UCX_QPX_FAILURE sets qpx_ud" UCX_QPX_UD_FAILURE ERROR \
    UCX_QPX_FAILURE=error
expect "UCX_QPX_UD_FAILURE overrides UCX_QPX_FAILURE" UCX_QPX_UD_FAILURE WARN \
    UCX_QPX_FAILURE=error UCX_QPX_UD_FAILURE=warn
expect "UCX_QPX_UD_FAILURE leaves qpx_rc alone" UCX_QPX_RC_FAILURE ERROR \
    UCX_QPX_FAILURE=error UCX_QPX_UD_FAILURE=warn
# UCT's configuration API: uct_config_modify() with UCT's names
if [ -x "$QPX_TESTDIR/qpx_uct_config" ]; then
    tls="qpx_rc qpx_ud"
    qpx_has_tl qpx_dc >/dev/null && tls="$tls qpx_dc"
    qpx_has_tl qpx >/dev/null && tls="$tls qpx"
    LD_PRELOAD=$QPX_MODULE "$QPX_TESTDIR/qpx_uct_config" $tls \
        >"$TL_TMP/api.out" 2>&1
    arc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/api.out"
    qpx_check "uct_config_modify on $tls: $(tail -n 1 "$TL_TMP/api.out")" \
        [ $arc -eq 0 ]
fi
# qpx_ud reads the interface core's options too, with its own defaults
expect "qpx_ud's TX_MODERATION default" UCX_QPX_UD_TX_MODERATION 64
expect "qpx_rc's TX_MODERATION default" UCX_QPX_RC_TX_MODERATION 32
expect "qpx_ud's TX_MAX_BUFS default" UCX_QPX_UD_TX_MAX_BUFS 65536
expect "UCX_QPX_TX_QUEUE_LEN sets qpx_ud" UCX_QPX_UD_TX_QUEUE_LEN 128 \
    UCX_QPX_TX_QUEUE_LEN=128
expect "UCX_QPX_UD_RX_QUEUE_LEN overrides UCX_QPX_RX_QUEUE_LEN" \
    UCX_QPX_UD_RX_QUEUE_LEN 64 UCX_QPX_RX_QUEUE_LEN=128 UCX_QPX_UD_RX_QUEUE_LEN=64
expect "UCX_QPX_UD_RX_QUEUE_LEN leaves qpx_rc alone" UCX_QPX_RC_RX_QUEUE_LEN 1024 \
    UCX_QPX_UD_RX_QUEUE_LEN=64

# What the opened interface uses: am_bcopy is SEG_SIZE - 1
bcopy() {
    env "$@" LD_PRELOAD="$QPX_MODULE" ucx_info -d -t qpx_rc 2>/dev/null |
        sed -n 's/.*am_bcopy: <= \([0-9]*\).*/\1/p' | head -n 1
}
for c in "8191 A=1" "8191 UCX_SEG_SIZE=4k" "4095 UCX_QPX_SEG_SIZE=4k" \
         "2047 UCX_QPX_SEG_SIZE=4k UCX_QPX_RC_SEG_SIZE=2k"; do
    want=${c%% *} envs=${c#* }
    # shellcheck disable=SC2086
    got=$(bcopy $envs)
    if [ "$got" = "$want" ]; then
        qpx_pass "qpx_rc interface under $envs: am_bcopy $got"
    else
        qpx_fail "qpx_rc interface under $envs: am_bcopy '$got', expected $want"
    fi
done

# qpx_ud: a segment holds GRH (40) + header (16) + payload, at most GRH + MTU
# (softverbs: 4096)
for c in "4080 A=1" "968 UCX_QPX_SEG_SIZE=1k" "4080 UCX_SEG_SIZE=1k" \
         "456 UCX_QPX_UD_SEG_SIZE=512"; do
    want=${c%% *} envs=${c#* }
    # shellcheck disable=SC2086
    got=$(env $envs LD_PRELOAD="$QPX_MODULE" ucx_info -d -t qpx_ud 2>/dev/null |
          sed -n 's/.*am_bcopy: <= \([0-9]*\).*/\1/p' | head -n 1)
    if [ "$got" = "$want" ]; then
        qpx_pass "qpx_ud interface under $envs: am_bcopy $got"
    else
        qpx_fail "qpx_ud interface under $envs: am_bcopy '$got', expected $want"
    fi
done

# refused TL VAR VALUE MESSAGE: the interface of TL under
# UCX_<TL>_<VAR>=VALUE is refused, and ucx_info's output says MESSAGE
refused() {
    tlu=$(echo "$1" | tr 'a-z' 'A-Z')
    got=$(env "UCX_${tlu}_$2=$3" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -d -t "$1" 2>&1)
    if echo "$got" | grep -q "$4"; then
        qpx_pass "$1 refuses $2=$3 with a message"
    else
        qpx_fail "$1 under $2=$3: no refusal message"
    fi
}
refused qpx_ud SEG_SIZE 100 "SEG_SIZE 100 is below 256"

# A negative number is refused by the parser, as "abc" is, for every kind
# of unsigned value: libucs' sscanf wrapped it (RX_QUEUE_LEN=-5 asked for
# 4294967291 buffers, RC_POOL_SIZE=-3 made the pool unbounded) and the
# interface opened without a word. "inf" and "auto" still parse.
refused qpx_ud RX_QUEUE_LEN -5 "Invalid value for RX_QUEUE_LEN: '-5'"
refused qpx_rc SEG_SIZE -1 "Invalid value for SEG_SIZE: '-1'"
refused qpx_ud RTO -1ms "Invalid value for RTO: '-1ms'"
refused qpx_ud BACKOFF -2 "Invalid value for BACKOFF: '-2'"
refused qpx RC_POOL_SIZE " -3" "Invalid value for RC_POOL_SIZE: ' -3'"
# The RC family's settings, one table in qpx_rc's and qpx_dc's
if qpx_has_tl qpx_dc >/dev/null; then
    refused qpx_dc PATH_MTU 300 "Invalid value for PATH_MTU: '300'"
    expect "qpx_dc has the RC family's PATH_MTU" UCX_QPX_DC_PATH_MTU 1024 \
        UCX_QPX_DC_PATH_MTU=1024
fi
# Buffer pools too small to work: none to send with (libucs' own message
# said only "Invalid memory pool parameter(s)"), fewer receive buffers than
# the receive queue holds (a job hung on the queue it could not fill)
refused qpx_rc TX_MAX_BUFS 0 "qpx_rc: TX_MAX_BUFS 0 must be -1"
refused qpx_ud RX_MAX_BUFS 1 "qpx_ud: RX_MAX_BUFS 1 must be -1 (unlimited) or at least RX_QUEUE_LEN (1024)"
refused qpx_dc RX_MAX_BUFS -5 "qpx_dc: RX_MAX_BUFS -5 must be -1"
expect "RC_POOL_SIZE=inf parses" UCX_QPX_RC_POOL_SIZE inf \
    UCX_QPX_RC_POOL_SIZE=inf
expect "TX_QUEUE_LEN=inf parses" UCX_QPX_UD_TX_QUEUE_LEN inf \
    UCX_QPX_UD_TX_QUEUE_LEN=inf

# A send queue no larger than the slots a QP keeps for flush and flow
# control (qpx_rc 2, qpx_dc 1) is refused with a message: before, the
# interface opened and every send waited for a slot forever (a UCP or MPI
# job hung). The smallest accepted ones move data (rc_integrity.sh,
# dc-uct-integrity.sh).
for c in "qpx_rc 2 3" "qpx_dc 1 2"; do
    set -- $c
    refused "$1" TX_QUEUE_LEN "$2" "$1: TX_QUEUE_LEN $2 must be above $2"
    tlu=$(echo "$1" | tr 'a-z' 'A-Z')
    got=$(env "UCX_${tlu}_TX_QUEUE_LEN=$3" LD_PRELOAD="$QPX_MODULE" \
          timeout 60 ucx_info -d -t "$1" 2>&1)
    if echo "$got" | grep -q "Transport: $1" &&
       ! echo "$got" | grep -q "must be above"; then
        qpx_pass "$1 opens with TX_QUEUE_LEN=$3"
    else
        qpx_fail "$1 under TX_QUEUE_LEN=$3: no interface"
    fi
done

# A send CQ of one entry, kept for a flushed send queue's errors, is
# refused with a message (base's check, every transport): before, every
# send waited forever. A TX_CQ_LEN of 2 is no longer lowered to 1 (the
# power-of-two rounding) and moves data (the integrity tests).
for tl in qpx_rc qpx_ud qpx_dc; do
    refused "$tl" TX_CQ_LEN 1 "$tl: TX_CQ_LEN 1 must be at least 2"
done

# Inline size above the device's (softverbs: 512 bytes): a device that
# refuses it gets the largest size it takes, not a power-of-two fraction of
# the request (halving 1000000 stops at 488). What a QP then has is what the
# device writes back, as qpx reads it: softverbs, as libmlx5, rounds 512 up
# to the room of its send WQE, 572 bytes for an RC QP (docs/softverbs.md)
for policy in fail clamp; do
    got=$(env SOFTVERBS_CAP_POLICY=$policy UCX_QPX_RC_TX_MAX_INLINE=1000000 \
              LD_PRELOAD="$QPX_MODULE" ucx_info -d -t qpx_rc 2>/dev/null |
          sed -n 's/.*put_short: <= \([0-9]*\).*/\1/p' | head -n 1)
    if [ "$got" = 572 ]; then
        qpx_pass "qpx_rc, TX_MAX_INLINE=1000000, cap policy $policy: put_short $got"
    else
        qpx_fail "qpx_rc, TX_MAX_INLINE=1000000, cap policy $policy: put_short '$got', expected 572 (512, the device limit, as its WQE takes it)"
    fi
done

# UCP leaves RC at scale, as with UCX's rc_verbs,ud_verbs: qpx_rc reports a
# latency that grows with the number of peers and at most MAX_NUM_EPS (256)
lane0() { # NUM_EPS ENV...
    n=$1; shift
    env "$@" UCX_TLS=qpx_rc,qpx_ud LD_PRELOAD="$QPX_MODULE" \
        ucx_info -e -u t -n "$n" 2>/dev/null |
        sed -n 's/.*lane\[0\]: *[0-9]*:\(qpx_[a-z]*\)\/.*/\1/p' | head -n 1
}
for c in "16 qpx_rc A=1" "4096 qpx_ud A=1" "16 qpx_ud UCX_QPX_RC_MAX_NUM_EPS=8" \
         "300 qpx_ud A=1" "200 qpx_rc A=1"; do
    n=${c%% *} rest=${c#* }
    want=${rest%% *} envs=${rest#* }
    # shellcheck disable=SC2086
    got=$(lane0 "$n" $envs)
    if [ "$got" = "$want" ]; then
        qpx_pass "UCP over qpx_rc,qpx_ud for $n peers ($envs): $got"
    else
        qpx_fail "UCP over qpx_rc,qpx_ud for $n peers ($envs): '$got', expected $want"
    fi
done

# Every UCX_QPX_* variable is explained where users look: ucx_info -c -f
# prints a description and the syntax (unit) above each, and its value
# (the default, when not set)
LD_PRELOAD="$QPX_MODULE" ucx_info -c -f 2>/dev/null >"$TL_TMP/cfg"
bad=$(awk '
    /^#/ { if ($0 ~ /^# syntax:/) syn = 1; else if ($0 ~ /^# *[^ #]/) desc = 1; next }
    /^UCX_QPX_/ { n++; if (!desc || !syn) { split($0, a, "="); printf "%s ", a[1] } }
    { desc = 0; syn = 0 }
    END { if (n == 0) print "none-listed" }' "$TL_TMP/cfg")
count=$(grep -c '^UCX_QPX_' "$TL_TMP/cfg")
if [ -z "$bad" ]; then
    qpx_pass "ucx_info -c -f: all $count UCX_QPX_* variables have a description and a syntax line"
else
    qpx_fail "ucx_info -c -f: without description or syntax: $bad"
fi

qpx_finish
