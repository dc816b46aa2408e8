#!/bin/sh
# Latency and message rate against message size, qpx's transports beside
# UCX's own on the same softverbs device, through UCP (ucx_perftest
# tag_lat and tag_bw, so every size is sent the way UCP sends it: eager,
# then rendezvous). Prints a table, never asserts; writes the data for
# plot.sh.
#   sh test/bench/size-sweep.sh [builddir] [datafile]
# Env: BENCH_N (iterations per point, default 20000), BENCH_SIZES (default
# "8 64 512 4096 32768 262144 1048576"), BENCH_SETS (UCX_TLS values, label
# first: default "qpx_rc=qpx_rc,qpx_ud rc_verbs=rc_verbs,ud_verbs
# qpx_ud=qpx_ud ud_verbs=ud_verbs qpx_dc=qpx_dc").
B=$(cd "${1:-build}" && pwd)
OUT=${2:-/dev/null}
N=${BENCH_N:-20000}
SIZES=${BENCH_SIZES:-"8 64 512 4096 32768 262144 1048576"}
SETS=${BENCH_SETS:-"qpx_rc=qpx_rc,qpx_ud rc_verbs=rc_verbs,ud_verbs qpx_ud=qpx_ud ud_verbs=ud_verbs qpx_dc=qpx_dc"}
SV="$B/src/softverbs/.libs"
MOD="$B/src/.libs/libuct_qpx.so"
[ -f "$MOD" ] || { echo "size-sweep: $MOD not built" >&2; exit 1; }
[ -e /dev/infiniband/uverbs0 ] || { mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }
export LD_LIBRARY_PATH="$SV" UCX_NET_DEVICES=softverbs0:1 UCX_WARN_UNUSED_ENV_VARS=n
export SOFTVERBS_SHM=/dev/shm/softverbs-sweep-$$
trap 'rm -f "$SOFTVERBS_SHM"' EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitport() { i=0; while [ $i -lt 100 ] && ! ss -ltn | grep -q ":$1 "; do sleep 0.1; i=$((i+1)); done; }

# final TLS TEST SIZE -> the client's Final line
final() {
    p=$(port)
    UCX_TLS=$1 LD_PRELOAD=$MOD timeout 300 ucx_perftest -p $p -t $2 -s $3 \
        -n $N -w 100 >/dev/null 2>&1 &
    s=$!
    waitport $p
    UCX_TLS=$1 LD_PRELOAD=$MOD timeout 300 ucx_perftest -p $p -t $2 -s $3 \
        -n $N -w 100 127.0.0.1 2>/dev/null | grep '^Final:'
    wait $s
}

: >"$OUT"
echo "# label size latency_us msg_per_s" >>"$OUT"
printf '%-10s %9s %14s %14s\n' "transport" "bytes" "latency us" "msg/s"
for set in $SETS; do
    label=${set%%=*}
    tls=${set#*=}
    for size in $SIZES; do
        echo "size-sweep: $label $size bytes" >&2
        # Final: <iters> <typical lat> <avg lat> <overall lat> <avg bw> <overall bw> <avg rate> <overall rate>
        lat=$(final "$tls" tag_lat "$size" | awk '{print $3}')
        rate=$(final "$tls" tag_bw "$size" | awk '{print $8}')
        printf '%-10s %9s %14s %14s\n' "$label" "$size" "${lat:-failed}" "${rate:-failed}"
        [ -n "$lat" ] && [ -n "$rate" ] && echo "$label $size $lat $rate" >>"$OUT"
    done
    echo >>"$OUT"; echo >>"$OUT"   # a gnuplot data block per transport
done
