#!/bin/sh
# Connection setup between two processes on the same softverbs device:
# librdmacm alone, UCP's client/server flow through UCX's rdmacm connection
# manager and through qpx's (ucp-cm/qpx), and UCP's wireup (worker address over a socket), for 1 to 1000
# connections kept open together. Prints a table, never asserts.
#   sh test/bench/cm-bench.sh [builddir]     (default: ./build)
# Env: BENCH_CONNS (default "1 10 100 1000").
B=$(cd "${1:-build}" && pwd)
SV="$B/src/softverbs/.libs"
MOD="$B/src/.libs/libuct_qpx.so"
PROG="$B/test/bench/cm_connect_bench"
CONNS=${BENCH_CONNS:-"1 10 100 1000"}
[ -x "$PROG" ] || { echo "build $PROG first (make -C $B/test/bench check)"; exit 1; }
[ -e /dev/infiniband/uverbs0 ] || { mkdir -p /dev/infiniband; ln -sf /dev/null /dev/infiniband/uverbs0; }
export SOFTVERBS_SHM=/dev/shm/softverbs-cm-bench-$$
trap 'rm -f "$SOFTVERBS_SHM"' EXIT
export LD_LIBRARY_PATH="$SV" UCX_NET_DEVICES=softverbs0:1 \
       UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_WARN_UNUSED_ENV_VARS=n

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# row MODE TLS N [CM]: one run, one table row; CM: the connection manager
# of the ucp-cm mode (UCX_SOCKADDR_TLS_PRIORITY, default rdmacm)
row() {
    port=$(free_port)
    cm=${4:-rdmacm}
    UCX_SOCKADDR_TLS_PRIORITY=$cm UCX_TLS=$2 LD_PRELOAD=$MOD timeout 300 \
        "$PROG" "$1" -s -p "$port" -n "$3" >/dev/null 2>&1 &
    spid=$!
    sleep 0.5
    line=$(UCX_SOCKADDR_TLS_PRIORITY=$cm UCX_TLS=$2 LD_PRELOAD=$MOD \
           timeout 300 "$PROG" "$1" -c 127.0.0.1 -p "$port" -n "$3" 2>/dev/null)
    wait $spid
    [ "$cm" = rdmacm ] || set -- "$1/$cm" "$2" "$3"
    # "MODE: N connections, T ms, R conn/s, median L us, p99 P us"
    set -- "$1" "$2" "$3" $(echo "$line" |
        sed -n 's/.*, \([0-9.]*\) ms, \([0-9]*\) conn\/s, median \([0-9.]*\) us, p99 \([0-9.]*\) us/\1 \2 \3 \4/p')
    printf '%-11s %-18s %6s %10s %9s %12s %12s\n' "$1" "$2" "$3" \
        "${4:-failed}" "${5:--}" "${6:--}" "${7:--}"
}

printf '%-11s %-18s %6s %10s %9s %12s %12s\n' "mode" "UCX_TLS" "conns" \
    "total ms" "conn/s" "median us" "p99 us"
for n in $CONNS; do
    row rdmacm - "$n"
    row ucp-cm rc_verbs "$n"
    row ucp-cm qpx_rc "$n"
    row ucp-cm qpx_rc "$n" qpx
    row ucp-cm qpx "$n" qpx
    row ucp-wireup rc_verbs,ud_verbs "$n"
    row ucp-wireup qpx_rc,qpx_ud "$n"
    row ucp-wireup qpx_dc "$n"
done
