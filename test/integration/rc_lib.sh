# Helpers for the qpx_rc integration tests (sourced after lib.sh).
#
# RC_TL (default qpx_rc) and RC_DEV (default softverbs0:1) select the
# transport and device, so that other qpx transports reuse the tests.

rc_setup() {
    RC_TL=${RC_TL:-qpx_rc}
    RC_DEV=${RC_DEV:-softverbs0:1}
    [ -f "$QPX_MODULE" ] || qpx_skip_all "module $QPX_MODULE not built"
    [ -f "$SOFTVERBS_LIBDIR/libibverbs.so.1" ] ||
        qpx_skip_all "softverbs not built in $SOFTVERBS_LIBDIR"
    command -v ucx_perftest >/dev/null || qpx_skip_all "ucx_perftest missing"
    # UCX skips a verbs device without its /dev/infiniband node
    if [ ! -e /dev/infiniband/uverbs0 ]; then
        { mkdir -p /dev/infiniband && ln -sf /dev/null /dev/infiniband/uverbs0; } \
            2>/dev/null || qpx_skip_all "cannot create /dev/infiniband/uverbs0"
    fi
    export LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    RC_TMP=$(mktemp -d)
    trap 'rm -rf "$RC_TMP"' EXIT
}

# Wait until something listens on TCP port $1 (up to 10 s)
rc_wait_port() {
    i=0
    while [ $i -lt 100 ]; do
        ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# rc_pair NAME ARGS...: ucx_perftest server and client with ARGS; passes
# when both exit 0 and the client printed its final line
rc_pair() {
    name=$1; shift
    port=$(qpx_free_port)
    LD_PRELOAD=$QPX_MODULE timeout 120 ucx_perftest -p "$port" "$@" \
        >"$RC_TMP/srv.log" 2>&1 &
    spid=$!
    rc_wait_port "$port"
    LD_PRELOAD=$QPX_MODULE timeout 120 ucx_perftest -p "$port" "$@" 127.0.0.1 \
        >"$RC_TMP/cli.log" 2>&1
    crc=$?
    wait $spid
    src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "^Final:" "$RC_TMP/cli.log"; then
        qpx_run_pass "$name: $(grep '^Final:' "$RC_TMP/cli.log" | awk '{print $4 " us, " $7 " MB/s, " $9 " msg/s"}')"
    else
        qpx_fail "$name (client exit $crc, server exit $src)"
        for f in "$RC_TMP/cli.log" "$RC_TMP/srv.log"; do echo "---- $f"; tail -n 8 "$f"; done
    fi
}

# The capability line of ucx_info -d for the transport, e.g. "put_zcopy"
rc_has_cap() {
    LD_PRELOAD=$QPX_MODULE ucx_info -d -t "$RC_TL" 2>/dev/null |
        grep -A40 "Transport: $RC_TL" | grep -q "$1"
}
