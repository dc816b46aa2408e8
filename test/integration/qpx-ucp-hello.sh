#!/bin/sh
# libucx-dev's ucp_hello_world over qpx transports, built as shipped: the
# worker addresses go over a TCP socket, the message over UCP wireup.
#  - its three progress modes (busy polling, ucp_worker_wait, event fd):
#    the client prints the server's message intact, both exit 0;
#  - its failure emulations with UCP_ERR_HANDLING_MODE_PEER, where one
#    side kills itself (SIGKILL) and the other must be told by its
#    endpoint's error handler and exit instead of hanging: "send" (the
#    server dies before sending), "recv" (the client dies before its
#    receive), "keepalive" (the client dies after the exchange). The
#    survivor then closes its endpoint with UCP_EP_CLOSE_FLAG_FORCE and
#    destroys its worker at once. These run with short qpx timeouts (as
#    qpx-peer-death.sh), and one with the defaults.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_ud
ex=/usr/share/doc/libucx-dev/examples
[ -f "$ex/ucp_hello_world.c" ] || qpx_skip_all "$ex/ucp_hello_world.c missing"
gcc -O1 -I"$ex" -o "$TL_TMP/hello" "$ex/ucp_hello_world.c" -lucp -lucs \
    2>"$TL_TMP/gcc.out" || qpx_skip_all "ucp_hello_world: $(head -n 1 "$TL_TMP/gcc.out")"
# the wait and event-fd modes need qpx_ud's event notification, which is
# on by default (UCX_QPX_UD_EVENTS), as ud_verbs'
export UCX_NET_DEVICES=$QPX_DEV UCX_WARN_UNUSED_ENV_VARS=n
SHORT="UCX_QPX_RC_TIMEOUT=100ms UCX_QPX_RC_RETRY_COUNT=3
       UCX_QPX_RC_KEEPALIVE_INTERVAL=500ms UCX_QPX_UD_TIMEOUT=3s
       UCX_QPX_UD_KEEPALIVE_INTERVAL=500ms UCX_QPX_DC_TIMEOUT=100ms
       UCX_QPX_DC_RETRY_COUNT=3 UCX_QPX_DC_KEEPALIVE_INTERVAL=500ms"

# hw TLS ARGS...: server and client; sets crc, src (exit codes), secs
hw() {
    tls=$1; shift
    port=$(qpx_free_port)
    t0=$(date +%s)
    UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE timeout 90 "$TL_TMP/hello" -p "$port" "$@" \
        >"$TL_TMP/srv.log" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE timeout 90 "$TL_TMP/hello" -p "$port" \
        -n 127.0.0.1 "$@" >"$TL_TMP/cli.log" 2>&1
    crc=$?
    wait $spid
    src=$?
    secs=$(($(date +%s) - t0))
}

show() {
    for f in "$TL_TMP/cli.log" "$TL_TMP/srv.log"; do
        echo "---- $f"; grep -v '^$' "$f" | tail -n 6
    done
}

tls_list="qpx_ud qpx_rc,qpx_ud"
qpx_has_tl qpx_dc && tls_list="$tls_list qpx_dc"
qpx_has_tl qpx && tls_list="$tls_list qpx"
for tls in $tls_list; do
    for mode in b w f; do
        hw "$tls" -$mode
        if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
           grep -q '^ABCDEFGHIJKLMNO$' "$TL_TMP/cli.log" &&
           grep -q 'UCP TEST SUCCESS' "$TL_TMP/cli.log"; then
            qpx_pass "UCX_TLS=$tls -$mode: message intact"
        else
            qpx_fail "UCX_TLS=$tls -$mode: client exit $crc, server exit $src"; show
        fi
    done

    # The server dies before sending: the client's receive fails
    export $SHORT
    hw "$tls" -e send
    if [ $src -eq 137 ] && [ $crc -ne 0 ] && [ $crc -ne 124 ] &&
       grep -q 'failure handler called' "$TL_TMP/cli.log"; then
        qpx_pass "UCX_TLS=$tls -e send: the client is told in ${secs} s ($(grep -o 'failure handler called with status .*' "$TL_TMP/cli.log" | head -n 1))"
    else
        qpx_fail "UCX_TLS=$tls -e send: client exit $crc (124: hung), server exit $src"; show
    fi

    # The client dies before (recv) or after (keepalive) the exchange: the
    # server's send or flush fails, it closes and exits (255 when its send
    # was the one to fail, a race with the dying client's acknowledgement)
    for e in recv keepalive; do
        hw "$tls" -e $e
        if [ $crc -eq 137 ] && { [ $src -eq 0 ] || [ $src -eq 255 ]; } &&
           grep -q 'failure handler called' "$TL_TMP/srv.log"; then
            qpx_pass "UCX_TLS=$tls -e $e: the server is told in ${secs} s ($(grep -o 'failure handler called with status .*' "$TL_TMP/srv.log" | head -n 1))"
        else
            qpx_fail "UCX_TLS=$tls -e $e: server exit $src (124: hung), client exit $crc"; show
        fi
    done
    unset $(echo "$SHORT" | sed 's/=[^ ]*//g')
done

# The defaults (UD's 30 s peer timeout)
hw qpx_ud -e keepalive
if [ $crc -eq 137 ] && [ $src -eq 0 ] &&
   grep -q 'failure handler called' "$TL_TMP/srv.log"; then
    qpx_pass "UCX_TLS=qpx_ud -e keepalive, default timeouts: the server is told in ${secs} s"
else
    qpx_fail "UCX_TLS=qpx_ud -e keepalive, default timeouts: server exit $src, client exit $crc"; show
fi
qpx_finish
