#!/bin/sh
# qpx_ud through unmodified UCX clients over softverbs: ucx_perftest UCT
# active-message tests (short, bcopy, zcopy) and UCP tests with
# UCX_TLS=qpx_ud alone (tag, stream, am), also under 1% UD loss.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"
command -v ucx_perftest >/dev/null || qpx_skip_all "ucx_perftest not installed"

# perftest NAME ENV... -- ARGS...: server and client on a free port
perftest() {
    name=$1; shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    port=$(qpx_free_port)
    ud_run env $envs timeout 120 ucx_perftest "$@" -p "$port" \
        >"$QPX_TESTDIR/ud-perftest-server.log" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    out=$(ud_run env $envs timeout 120 ucx_perftest "$@" -p "$port" 127.0.0.1 2>&1)
    crc=$?
    wait $spid; src=$?
    final=$(echo "$out" | grep '^Final:')
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -n "$final" ]; then
        qpx_run_pass "$name: $final"
    else
        echo "$out" | grep -v "^[|+]" | tail -40 | sed 's/^/  /'
        qpx_fail "$name (client $crc, server $src)"
    fi
}

# Latency runs are correctness checks here, not benchmarks (ud-bench.sh
# measures): few enough iterations that a loaded machine still finishes.
UCT="-d softverbs0:1 -x qpx_ud -n 5000"
perftest "uct am_lat short"       -- $UCT -t am_lat -D short
perftest "uct am_lat bcopy"       -- $UCT -t am_lat -D bcopy -s 1024
perftest "uct am_lat zcopy"       -- $UCT -t am_lat -D zcopy -s 2048
perftest "uct am_bw short"        -- $UCT -t am_bw -D short
perftest "uct am_bw bcopy"        -- $UCT -t am_bw -D bcopy -s 4000
perftest "uct am_bw zcopy"        -- $UCT -t am_bw -D zcopy -s 4000
perftest "uct am_bw bcopy 1% loss" SOFTVERBS_UD_DROP=0.01 -- $UCT -t am_bw -D bcopy -s 1024

perftest "ucp tag_lat"            UCX_TLS=qpx_ud -- -t tag_lat -n 5000
perftest "ucp tag_bw 1MB"         UCX_TLS=qpx_ud -- -t tag_bw -s 1000000 -n 200
perftest "ucp stream_lat"         UCX_TLS=qpx_ud -- -t stream_lat -n 5000
perftest "ucp stream_bw 64KB"     UCX_TLS=qpx_ud -- -t stream_bw -s 65536 -n 2000
perftest "ucp am_lat"             UCX_TLS=qpx_ud -- -t ucp_am_lat -n 5000
perftest "ucp am_bw"              UCX_TLS=qpx_ud -- -t ucp_am_bw -n 20000
perftest "ucp tag_bw 64KB 1% loss" UCX_TLS=qpx_ud SOFTVERBS_UD_DROP=0.01 -- -t tag_bw -s 65536 -n 2000

# qpx_rc connects to endpoints: UCP needs an auxiliary CONNECT_TO_IFACE
# transport for its wireup messages, which qpx_ud provides
perftest "ucp tag_lat qpx_rc, wireup over qpx_ud" UCX_TLS=qpx_rc,qpx_ud -- -t tag_lat -n 5000
qpx_finish
