#!/bin/sh
# The wire between ports (SOFTVERBS_WIRE_DELAY, SOFTVERBS_WIRE_LOSS): a
# request that leaves its port for another (here: another of three HCAs,
# as another host of cluster-one-host.sh would be) arrives one delay after
# its post, and may be lost; within one port it is neither. Delays are
# checked as lower bounds (a request is never early); a pair on one port,
# or on a pair of HCAs the rules leave at 0, must stay below one delay
# (tens of milliseconds, where it takes microseconds: a bound that load
# does not reach, and a round trip over the wire cannot meet).
#  - malformed values are named and nothing is applied;
#  - others' programs across HCAs: ibv_rc_pingpong -c and ibv_ud_pingpong
#    -c (round trips of two delays, buffers checked); perftest by the
#    pair's rule: ib_write_lat one delay, ib_read_lat and ib_atomic_lat a
#    round trip (the answer crosses back), ib_write_bw and ib_read_bw
#    pipelined (a window of requests in flight, not one at a time);
#  - every request on the wire lost: RC fails with retry exceeded across
#    HCAs, and runs within one HCA;
#  - qpx: every UCT operation over qpx_rc, qpx_dc and qpx_ud between two
#    HCAs with its data checked, 100 us away with 2% lost (verbs path,
#    and for qpx_rc/qpx_dc the mlx5 direct path).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
. "$QPX_SRCDIR/test/integration/softverbs-lib.sh"
tl_setup qpx_rc
svt_env_setup
trap 'svt_cleanup; rm -rf "$TL_TMP"' EXIT
command -v ibv_rc_pingpong >/dev/null || qpx_skip_all "ibverbs-utils not installed"
SOFTVERBS_NUM_DEVICES=3
export SOFTVERBS_NUM_DEVICES

# --- malformed values ---------------------------------------------------------
for v in "SOFTVERBS_WIRE_DELAY=20" "SOFTVERBS_WIRE_DELAY=1ms,1-1=2ms" \
         "SOFTVERBS_WIRE_DELAY=0,0-9=1ms" "SOFTVERBS_WIRE_DELAY=11s" \
         "SOFTVERBS_WIRE_LOSS=1.5" "SOFTVERBS_WIRE_LOSS=0.1,0-1"; do
    out=$(env "$v" ibv_devices 2>&1)
    if echo "$out" | grep -q "^softverbs: ${v%%=*}='${v#*=}' is not .*; using none" &&
       echo "$out" | grep -q softverbs2; then
        qpx_pass "$v: refused with a message, devices listed"
    else
        qpx_fail "$v: $(echo "$out" | head -n 2 | tr '\n' ' ')"
    fi
done

# usec NAME FILE: the usec/iter a pingpong client printed (0: none)
usec() {
    sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' "$2" | tail -n 1 | cut -d. -f1 |
        grep . || echo 0
}

# pingpong PROG DEV_SRV DEV_CLI DELAY_US MIN_US MAX_US: PROG across the
# pair, 10 iterations, each a round trip, SOFTVERBS_WIRE_DELAY=DELAY_US
# (the default), its usec/iter within [MIN_US, MAX_US)
pingpong() {
    prog=$1 ds=$2 dc=$3 d=$4 lo=$5 hi=$6
    port=$(qpx_free_port)
    check=-c
    SVT_REJECT='[Ff]ail|[Ee]rror|[Mm]ismatch' SVT_LISTEN_PORT=$port svt_run_pair \
        "$prog $check from $dc to $ds, ${d} us default delay" 60 'iters in' \
        "env SOFTVERBS_WIRE_DELAY=${d}us $prog -d $ds -g 0 -n 10 $check -p $port" \
        "env SOFTVERBS_WIRE_DELAY=${d}us $prog -d $dc -g 0 -n 10 $check -p $port 127.0.0.1"
    u=$(usec x "$SVT_OUT_CLI")
    qpx_check "$prog from $dc to $ds: $u us per round trip, in [$lo, $hi) us" \
        sh -c "[ $u -ge $lo ] && [ $u -lt $hi ]"
}
pingpong ibv_rc_pingpong softverbs0 softverbs1 25000 50000 100000000
pingpong ibv_rc_pingpong softverbs0 softverbs0 25000 1 25000
pingpong ibv_ud_pingpong softverbs2 softverbs0 25000 50000 100000000
pingpong ibv_ud_pingpong softverbs1 softverbs1 25000 1 25000

# --- a rule per pair: perftest ------------------------------------------------
# lat PROG DEV_SRV DEV_CLI MIN_US MAX_US: perftest's PROG, 100 iterations,
# rule 0-2 = 20 ms over a default of 0; t_typical in [MIN_US, MAX_US). A
# write or send is one way per leg; a read or atomic waits for its answer
# to come back over the wire: a round trip
lat() {
    port=$(qpx_free_port)
    SVT_READY=' ' SVT_LISTEN_PORT=$port svt_run_pair \
        "$1 from $3 to $2, rule 0-2=20ms" 60 't_typical' \
        "env SOFTVERBS_WIRE_DELAY=0,0-2=20ms $1 -d $2 -n 100 -p $port" \
        "env SOFTVERBS_WIRE_DELAY=0,0-2=20ms $1 -d $3 -n 100 -p $port 127.0.0.1"
    t=$(awk '/t_typical/ { getline; print int($5) }' "$SVT_OUT_CLI")
    qpx_check "$1 from $3 to $2: t_typical ${t:-none} us, in [$4, $5)" \
        sh -c "[ ${t:-0} -ge $4 ] && [ ${t:-0} -lt $5 ]"
}

# bw PROG: perftest's PROG, 1000 messages of 64 KiB to an HCA 20 ms away
# (rule 0-2), 128 in flight (perftest's tx depth): a window per round
# trip, a few hundred milliseconds; sent one at a time (each waiting for
# the last one's answer) they would take 1000 round trips, 40 s. It must
# end within 10 s, and its bandwidth be reported
bw() {
    port=$(qpx_free_port)
    start=$(date +%s)
    SVT_READY=' ' SVT_LISTEN_PORT=$port svt_run_pair \
        "$1 from softverbs0 to softverbs2, rule 0-2=20ms" 60 'BW average' \
        "env SOFTVERBS_WIRE_DELAY=0,0-2=20ms $1 -d softverbs2 -n 1000 -p $port" \
        "env SOFTVERBS_WIRE_DELAY=0,0-2=20ms $1 -d softverbs0 -n 1000 -p $port 127.0.0.1"
    s=$(($(date +%s) - start))
    qpx_check "$1 to an HCA 20 ms away: 1000 messages pipelined, in $s s (< 10)" \
        [ "$s" -lt 10 ]
}

if command -v ib_write_lat >/dev/null; then
    lat ib_write_lat softverbs2 softverbs0 20000 40000
    lat ib_write_lat softverbs1 softverbs0 0 20000
    lat ib_read_lat softverbs2 softverbs0 40000 100000000
    lat ib_atomic_lat softverbs2 softverbs0 40000 100000000
    lat ib_read_lat softverbs1 softverbs0 0 20000
    bw ib_write_bw
    bw ib_read_bw
else
    qpx_fail "perftest not installed (ib_write_lat)"
fi

# --- every request on the wire lost ---------------------------------------------
svt_rc_pingpong_once SOFTVERBS_WIRE_LOSS=1 softverbs0 softverbs1
qpx_check "all lost across HCAs: ibv_rc_pingpong fails with retry exceeded (exit $SVT_PP_RC)" \
    sh -c "[ $SVT_PP_RC -ne 0 ] && [ $SVT_PP_RC -ne 124 ] &&
           grep -q 'retry counter exceeded' '$SVT_TMP/pp.cli'"
svt_rc_pingpong_once SOFTVERBS_WIRE_LOSS=1 softverbs1 softverbs1
qpx_check "all lost across HCAs: within one HCA ibv_rc_pingpong runs (exit $SVT_PP_RC)" \
    sh -c "[ $SVT_PP_RC -eq 0 ] && grep -q 'iters in' '$SVT_TMP/pp.cli'"

# --- qpx: every operation's data, across HCAs -----------------------------------
QPX_DEV=softverbs0:1
for mode in verbs direct; do
    for tl in qpx_rc qpx_dc qpx_ud; do
        [ $mode = direct ] && [ $tl = qpx_ud ] && continue
        qpx_has_tl $tl || { qpx_fail "no $tl"; continue; }
        P=$(echo "$tl" | tr a-z A-Z)
        QPX_TL=$tl
        mlx5=0; [ $mode = direct ] && mlx5=1
        # qpx_ud's TIMEOUT is the peer's; RC and DC resend after 2 ms
        tmo=UCX_${P}_TIMEOUT=2ms; [ $tl = qpx_ud ] && tmo=UCX_QPX_UD_PRINT_STATS=y
        start=$(date +%s)
        if TL_INTEGRITY_ARGS="-D softverbs1:1" tl_integrity \
               "$tl ($mode) from softverbs0 to softverbs1, 100 us away, 2% lost" \
               SOFTVERBS_MLX5=$mlx5 SOFTVERBS_WIRE_DELAY=100us \
               SOFTVERBS_WIRE_LOSS=0.02 SOFTVERBS_DEBUG=1 "$tmo"; then
            if [ $tl = qpx_ud ]; then
                n=$(sed -n 's/.* tx_resent=\([0-9]*\).*/\1/p' "$TL_TMP/out" |
                    awk '{ s += $1 } END { print s + 0 }')
            else
                n=$(grep -c 'no response to wr_id' "$TL_TMP/out")
            fi
            qpx_check "$tl ($mode): requests were lost on the wire and sent again ($n, $(($(date +%s) - start)) s)" \
                [ "$n" -gt 0 ]
        fi
    done
done
qpx_finish
