#!/bin/sh
# UCP's client/server flow over qpx transports: libucx-dev's
# ucp_client_server example connects through UCX's rdmacm connection
# manager (softverbs' librdmacm), which hands each transport the peer's
# device address in uct_ib's format; the qpx transports read it and carry
# the data lanes. Checked per transport set and API (tag, am, stream): the
# client exits 0, prints the server's message intact, and UCX's lane report
# names the qpx transport. A client with nobody listening fails at once
# (an error, not a hang).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
[ -f "$SOFTVERBS_LIBDIR/librdmacm.so.1" ] ||
    qpx_skip_all "softverbs' librdmacm not built"
ex=/usr/share/doc/libucx-dev/examples
[ -f "$ex/ucp_client_server.c" ] || qpx_skip_all "$ex/ucp_client_server.c missing"
gcc -O1 -I"$ex" -o "$TL_TMP/ucs" "$ex/ucp_client_server.c" -lucp -lucs \
    2>"$TL_TMP/gcc.out" || qpx_skip_all "ucp_client_server: $(head -n 1 "$TL_TMP/gcc.out")"

export UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_NET_DEVICES=$QPX_DEV \
       UCX_WARN_UNUSED_ENV_VARS=n UCX_LOG_LEVEL=info

# cs_case TLS API EXPECTED-TL
cs_case() {
    port=$(qpx_free_port)
    UCX_TLS=$1 LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" -c "$2" \
        -p "$port" >"$TL_TMP/srv.log" 2>&1 &
    spid=$!
    tl_wait_port "$port"
    UCX_TLS=$1 LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" -c "$2" \
        -a 127.0.0.1 -p "$port" >"$TL_TMP/cli.log" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    # the last lane report is the endpoint's final configuration
    lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/cli.log" | tail -n 1)
    if [ $crc -ne 0 ]; then
        qpx_fail "UCX_TLS=$1 $2: client exit $crc"
    elif ! grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log"; then
        qpx_fail "UCX_TLS=$1 $2: the server's message did not arrive intact"
    elif ! echo "$lanes" | grep -q "($3/"; then
        qpx_fail "UCX_TLS=$1 $2: no lane on $3 ($lanes)"
    else
        qpx_pass "UCX_TLS=$1 $2: message intact, $lanes"
        return
    fi
    for f in "$TL_TMP/cli.log" "$TL_TMP/srv.log"; do
        echo "---- $f"; grep -v INFO "$f" | tail -n 8
    done
}

sets="qpx_rc:qpx_rc qpx_ud:qpx_ud qpx_rc,qpx_ud:qpx_rc"
qpx_has_tl qpx_dc && sets="$sets qpx_dc:qpx_dc qpx_rc,qpx_dc:qpx_rc"
for s in $sets; do
    for api in tag am stream; do
        cs_case "${s%%:*}" "$api" "${s#*:}"
    done
done

# Nobody listens: the client's connection is refused and it says so
port=$(qpx_free_port)
UCX_TLS=qpx_rc LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" \
    -a 127.0.0.1 -p "$port" >"$TL_TMP/cli.log" 2>&1
crc=$?
if [ $crc -ne 0 ] && [ $crc -ne 124 ] &&
   grep -q 'Connection reset by remote peer\|Destination is unreachable\|Connection refused' "$TL_TMP/cli.log"; then
    qpx_pass "no listener: the client fails with $(grep -o 'status -[0-9]* ([^)]*)' "$TL_TMP/cli.log" | head -n 1) (exit $crc)"
else
    qpx_fail "no listener: client exit $crc"; grep -v INFO "$TL_TMP/cli.log" | tail -n 5
fi
qpx_finish
