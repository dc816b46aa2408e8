#!/bin/sh
# qpx_rc beside UCX's rc_verbs on the same softverbs device. Prints tables,
# never asserts.
#   sh test/bench/rc_bench.sh [builddir]     (default: ./build)
# Env: BENCH_N (iterations, default 100000), BENCH_TLS (default
# "qpx_rc rc_verbs"), BENCH_DEV (default softverbs0:1), BENCH_REPS
# (repetitions, default 1: each row runs the transports alternately, rep
# after rep, and prints the median of the reps).
B=$(cd "${1:-build}" && pwd)
SV="$B/src/softverbs/.libs"
MOD="$B/src/.libs/libuct_qpx.so"
N=${BENCH_N:-100000}
DEV=${BENCH_DEV:-softverbs0:1}
TLS=${BENCH_TLS:-"qpx_rc rc_verbs"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -e /dev/infiniband/uverbs0 ] || { mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }
export LD_LIBRARY_PATH="$SV"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { i=0; while [ $i -lt 100 ] && ! ss -ltn | grep -q ":$1 "; do sleep 0.1; i=$((i+1)); done; }

# pair TL[@BUILDDIR] ARGS... -> prints the client's Final line. A build
# directory after @ (e.g. qpx_rc@/path/to/main/build) takes the module and
# softverbs from there, to compare builds run by run.
pair() {
    tl=${1%@*}; b=$B
    case $1 in *@*) b=$(cd "${1#*@}" && pwd) ;; esac
    shift
    p=$(port)
    LD_LIBRARY_PATH="$b/src/softverbs/.libs" LD_PRELOAD="$b/src/.libs/libuct_qpx.so" \
        timeout 300 ucx_perftest -p $p -d "$DEV" -x "$tl" "$@" >/dev/null 2>&1 &
    s=$!
    waitport $p
    LD_LIBRARY_PATH="$b/src/softverbs/.libs" LD_PRELOAD="$b/src/.libs/libuct_qpx.so" \
        timeout 300 ucx_perftest -p $p -d "$DEV" -x "$tl" "$@" 127.0.0.1 2>/dev/null | grep '^Final:'
    wait $s
}

printf '%-28s' "test"; for tl in $TLS; do printf '%22s' "$(echo "$tl" | sed 's|@.*/\([^/]*\)/build[^/]*/*$|@\1|')"; done; echo
REPS=${BENCH_REPS:-1}
median() { sort -g | awk '{v[NR]=$1} END{if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'; }
row() { # label column(3=median lat us, 7=MB/s, 9=msg/s) args...
    label=$1; col=$2; shift 2
    printf '%-28s' "$label"
    r=0
    while [ $r -lt $REPS ]; do
        for tl in $TLS; do
            pair "$tl" "$@" | awk -v c=$col '{print $c}' >>"$TMP/$(echo "$tl" | tr -c 'a-zA-Z0-9_\n' _).row"
        done
        r=$((r + 1))
    done
    for tl in $TLS; do
        f="$TMP/$(echo "$tl" | tr -c 'a-zA-Z0-9_\n' _).row"
        printf '%22s' "$(median <"$f")"
        rm -f "$f"
    done
    echo
}
row "put_lat 8 B median (us)"   3 -t put_lat -D short -s 8 -n $N -w 1000
row "am_lat 8 B median (us)"    3 -t am_lat -D short -s 8 -n $N -w 1000
row "put_bw 8 B short (msg/s)"  9 -t put_bw -D short -s 8 -n $N -w 1000
row "am_bw 8 B short (msg/s)"   9 -t am_bw -D short -s 8 -n $N -w 1000
row "put_bw 1 MiB zcopy (MB/s)" 7 -t put_bw -D zcopy -s 1048576 -n 2000 -w 10

[ "${BENCH_INSTR:-1}" = 0 ] && exit 0

# Instructions per call (callgrind, client side): inclusive of the verbs
# post (softverbs executes the request inside ibv_post_send), and only the
# transport's own code (libuct_qpx / libuct_ib)
echo
printf '%-28s%22s%22s\n' "instructions per call" "inclusive" "transport only"
for spec in "qpx_rc put_short qpx_rc_ep_put_short put_bw" \
            "rc_verbs put_short uct_rc_verbs_ep_put_short put_bw" \
            "qpx_rc am_short qpx_rc_ep_am_short am_bw" \
            "rc_verbs am_short uct_rc_verbs_ep_am_short am_bw"; do
    set -- $spec
    tl=$1; op=$2; fn=$3; t=$4
    p=$(port)
    LD_PRELOAD=$MOD timeout 300 ucx_perftest -p $p -d "$DEV" -x $tl -t $t -D short -s 8 -n 20000 -w 100 >/dev/null 2>&1 &
    s=$!
    waitport $p
    LD_PRELOAD=$MOD timeout 300 valgrind --tool=callgrind --collect-atstart=no \
        --toggle-collect=$fn --callgrind-out-file="$TMP/cg.out" \
        ucx_perftest -p $p -d "$DEV" -x $tl -t $t -D short -s 8 -n 20000 -w 100 127.0.0.1 >/dev/null 2>&1
    wait $s
    # entry count of the function: executions of its first cost line
    # (from the caller's "calls=" record, else the first line's count)
    calls=$(grep -A1 "^cfn=.* $fn\$" "$TMP/cg.out" | sed -n 's/^calls=\([0-9]*\).*/\1/p' | head -1)
    [ -n "$calls" ] ||
        calls=$(awk -v f="$fn" '$0 ~ "^fn=.* "f"$" {getline; print $2; exit}' "$TMP/cg.out")
    total=$(callgrind_annotate "$TMP/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
    own=$(callgrind_annotate "$TMP/cg.out" 2>/dev/null | grep -E "libuct_qpx|libuct_ib" |
          awk '{gsub(",","",$1); s+=$1} END{print s+0}')
    printf '%-28s%22s%22s\n' "$tl $op" \
        "$(echo "$total $calls" | awk '{if ($2>0 && $1>0) printf "%.0f", $1/$2; else print "n/a"}')" \
        "$(echo "$own $calls" | awk '{if ($2>0 && $1>0) printf "%.0f", $1/$2; else print "n/a"}')"
done
