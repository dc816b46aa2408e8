#!/bin/sh
# Interleaved pairs of one UCP ucx_perftest run under two settings on the
# same softverbs device: each round runs A, then B, so that a machine's
# drift hits both alike. Prints each round and the range and median of
# each column; never asserts.
#   sh test/bench/ucp-pairs.sh BUILDDIR ROUNDS "A settings" "B settings"
# A setting list is VAR=VALUE words (UCX_TLS among them), e.g.
#   sh test/bench/ucp-pairs.sh build 10 "UCX_TLS=qpx" \
#       "UCX_TLS=qpx UCX_QPX_RC_OPEN_EAGER=y"
# LD_PRELOAD=OTHER/src/.libs/libuct_qpx.so among them runs another build's
# qpx (two builds on BUILDDIR's softverbs device).
# Env: PAIRS_TEST (tag_bw), PAIRS_SIZE (8), PAIRS_N (20000); the column
# is the Final line's overall message rate (msg/s), or for a *_lat test
# its typical latency (us).
B=$(cd "${1:?builddir}" && pwd)
ROUNDS=${2:?rounds}
A=${3:?A settings}
BB=${4:?B settings}
TEST=${PAIRS_TEST:-tag_bw}
SIZE=${PAIRS_SIZE:-8}
N=${PAIRS_N:-20000}
SV="$B/src/softverbs/.libs"
MOD="$B/src/.libs/libuct_qpx.so"
[ -f "$MOD" ] || { echo "ucp-pairs: $MOD not built" >&2; exit 1; }
[ -e /dev/infiniband/uverbs0 ] || {
    mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }
export LD_LIBRARY_PATH="$SV" UCX_NET_DEVICES=softverbs0:1 UCX_WARN_UNUSED_ENV_VARS=n
export SOFTVERBS_SHM=/dev/shm/softverbs-pairs-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$SOFTVERBS_SHM"' EXIT
case $TEST in
*_lat) col=3 ;;  # typical latency
*)     col=8 ;;  # overall message rate
esac

port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
waitport() {
    i=0
    while [ $i -lt 100 ] && ! ss -ltn | grep -q ":$1 "; do
        sleep 0.1; i=$((i + 1))
    done
}

# one SETTINGS: the client's figure, or "failed"
one() {
    p=$(port)
    # shellcheck disable=SC2086 # the settings are words
    env LD_PRELOAD="$MOD" $1 timeout 300 ucx_perftest -p "$p" -t "$TEST" \
        -s "$SIZE" -n "$N" -w 100 >/dev/null 2>&1 &
    s=$!
    waitport "$p"
    # shellcheck disable=SC2086
    v=$(env LD_PRELOAD="$MOD" $1 timeout 300 ucx_perftest -p "$p" -t "$TEST" \
        -s "$SIZE" -n "$N" -w 100 127.0.0.1 2>/dev/null |
        awk -v c=$col '/^Final:/ { print $c }')
    wait $s
    echo "${v:-failed}"
}

echo "A: $A"
echo "B: $BB"
echo "$TEST -s $SIZE -n $N, $ROUNDS rounds (A then B)"
printf '%-6s %14s %14s\n' round A B
r=1
while [ $r -le "$ROUNDS" ]; do
    a=$(one "$A")
    b=$(one "$BB")
    printf '%-6s %14s %14s\n' "$r" "$a" "$b"
    echo "$a" >>"$TMP/a"
    echo "$b" >>"$TMP/b"
    r=$((r + 1))
done

# FILE -> "min to max, median M (K of N runs)"
summary() {
    grep -v failed "$1" | sort -g | awk -v all="$(wc -l <"$1")" '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "no run finished"; exit }
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%s to %s, median %.0f (%d of %d runs finished)\n",
                   v[1], v[NR], m, NR, all
        }'
}
echo "A: $(summary "$TMP/a")"
echo "B: $(summary "$TMP/b")"
