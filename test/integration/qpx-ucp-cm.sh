#!/bin/sh
# UCP's client/server flow over qpx transports: libucx-dev's
# ucp_client_server example connects through a connection manager over
# softverbs' librdmacm: UCX's own (rdmacm), which hands each transport the
# peer's device address in uct_ib's format, and qpx's (qpx), each alone in
# UCX_SOCKADDR_TLS_PRIORITY so that a pass says that CM connected. Checked
# per CM, transport set and API (tag, am, stream): the client exits 0,
# prints the server's message intact, and UCX's lane report names the qpx
# transport. A client with nobody listening fails at once (an error, not a
# hang). Over qpx's CM also: one server serves clients one after another;
# a client killed mid-traffic is reported to the server, and a server
# killed mid-traffic to the client, within seconds; server and client in
# processes forked after they used librdmacm connect; a connection whose QP
# the device cannot give fails at once with an error; a request that is
# not a qpx CM's is rejected.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
# No server or client of this script outlives it: one left spinning in
# UCP's progress loop would starve the tests that run after it
trap 'pkill -9 -f "$TL_TMP/ucs" 2>/dev/null; rm -rf "$TL_TMP"' EXIT
[ -f "$SOFTVERBS_LIBDIR/librdmacm.so.1" ] ||
    qpx_skip_all "softverbs' librdmacm not built"
ex=/usr/share/doc/libucx-dev/examples
[ -f "$ex/ucp_client_server.c" ] || qpx_skip_all "$ex/ucp_client_server.c missing"
gcc -O1 -I"$ex" -o "$TL_TMP/ucs" "$ex/ucp_client_server.c" -lucp -lucs \
    2>"$TL_TMP/gcc.out" || qpx_skip_all "ucp_client_server: $(head -n 1 "$TL_TMP/gcc.out")"

export UCX_NET_DEVICES=$QPX_DEV UCX_WARN_UNUSED_ENV_VARS=n UCX_LOG_LEVEL=info

# cs_wait_listen LOG: until the server says it listens (softverbs' CM
# opens no TCP port that ss could show), then port= the port it took: the
# servers listen on port 0 (a free one their CM picks), so that a port a
# closing server still holds is never tried again. Up to 60 s: beside a
# 16-rank MPI test on 2 cores a server took over 10 s to listen, and its
# client, given no port, dialled port 0 ("invalid service ID")
cs_wait_listen() {
    qpx_wait_output "$1" 'server is listening on IP .* port [0-9]+' "$spid"
    port=$(sed -n 's/.*server is listening on IP .* port \([0-9][0-9]*\).*/\1/p' \
           "$1" | head -n 1)
    if [ -z "$port" ]; then
        echo "  (no port from the server; its output:)"
        tail -n 5 "$1" | sed 's/^/  | /'
    fi
}

cs_prog=$TL_TMP/ucs # the server's program

# cs_server SECONDS ENV... -- ARGS...: the example's server in the
# background (spid), with ENV and ARGS, its output in srv.log, once it
# listens (port); SECONDS "-": no timeout(1) in between, so that a kill
# reaches the program itself
cs_server() {
    t=$1; shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    # Emptied here: the background job's redirection truncates it only
    # once the job runs, and a wait that reads it first finds the last
    # server's "listening" line (a port of a server since killed, or, read
    # once truncated, none: the client then dials port 0)
    : >"$TL_TMP/srv.log"
    if [ "$t" = - ]; then
        env $envs LD_PRELOAD="$QPX_MODULE" stdbuf -oL "$cs_prog" "$@" \
            -p 0 >"$TL_TMP/srv.log" 2>&1 &
    else
        env $envs LD_PRELOAD="$QPX_MODULE" timeout "$t" stdbuf -oL \
            "$cs_prog" "$@" -p 0 >"$TL_TMP/srv.log" 2>&1 &
    fi
    spid=$!
    cs_wait_listen "$TL_TMP/srv.log"
}

# cs_case TLS API EXPECTED-TL (UCX_SOCKADDR_TLS_PRIORITY names the CM)
cs_case() {
    cs_server 90 UCX_TLS="$1" -- -c "$2"
    if [ -z "$port" ]; then
        kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
        qpx_fail "$cm: UCX_TLS=$1 $2: the server did not listen"
        tail -n 5 "$TL_TMP/srv.log"
        return
    fi
    UCX_TLS=$1 LD_PRELOAD=$QPX_MODULE timeout 60 "$TL_TMP/ucs" -c "$2" \
        -a 127.0.0.1 -p "$port" >"$TL_TMP/cli.log" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    # the last lane report is the endpoint's final configuration
    lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/cli.log" | tail -n 1)
    if [ $crc -ne 0 ]; then
        qpx_fail "$cm: UCX_TLS=$1 $2: client exit $crc"
    elif ! grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log"; then
        qpx_fail "$cm: UCX_TLS=$1 $2: the server's message did not arrive intact"
    elif ! echo "$lanes" | grep -q "($3/"; then
        qpx_fail "$cm: UCX_TLS=$1 $2: no lane on $3 ($lanes)"
    else
        qpx_pass "$cm: UCX_TLS=$1 $2: message intact, $lanes"
        return
    fi
    for f in "$TL_TMP/cli.log" "$TL_TMP/srv.log"; do
        echo "---- $f"; grep -v INFO "$f" | tail -n 8
    done
}

sets="qpx_rc:qpx_rc qpx_ud:qpx_ud qpx_rc,qpx_ud:qpx_rc"
qpx_has_tl qpx_dc && sets="$sets qpx_dc:qpx_dc qpx_rc,qpx_dc:qpx_rc"
qpx_has_tl qpx && sets="$sets qpx:qpx"
for cm in rdmacm qpx; do
    export UCX_SOCKADDR_TLS_PRIORITY=$cm
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
        qpx_pass "$cm: no listener: the client fails with $(grep -o 'status -[0-9]* ([^)]*)' "$TL_TMP/cli.log" | head -n 1) (exit $crc)"
    else
        qpx_fail "$cm: no listener: client exit $crc"; grep -v INFO "$TL_TMP/cli.log" | tail -n 5
    fi
done

# Over qpx's CM: one server, three clients one after another, 1000
# messages each (tag API), each client's last message checked. Beside a
# 16-rank MPI test on 2 cores a client took over 30 s, and the server was
# stopped after 60 s while the third ran: each client has 60 s, the server
# 200.
#
# Under such load the example meets a race of UCP 1.13's own: its client
# only sends, and closes once its sends are delivered, not consumed; the
# server's UCP takes the disconnect for a failure of an endpoint still in
# use ("Connection reset by remote peer") and what it had not consumed is
# lost with it, so the server waits for a message that never comes and
# the next client for a server that no longer accepts. Over UCX's own
# rc_verbs and rdmacm the same sequence ended with the server's
# segmentation fault (seen 2026-11-26, two busy loops beside it). With
# the stream API (the example's default) the server lost the rest of the
# stream in the first round under that load; with tags, whose unexpected
# messages stay with the worker, in the twelfth. A round that ends so (the
# server logged the reset) is run again, up to three rounds, and said so.
three_clients() {
    cs_server 200 -- -c tag -i 1000
    ok=0
    for c in 1 2 3; do
        LD_PRELOAD=$QPX_MODULE timeout 60 stdbuf -oL "$TL_TMP/ucs" -c tag \
            -i 1000 -a 127.0.0.1 -p "$port" >"$TL_TMP/cli$c.log" 2>&1 &&
            grep -q '^Client: iteration #1000$' "$TL_TMP/cli$c.log" &&
            [ "$(grep -c '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli$c.log")" -eq 2 ] &&
            ok=$((ok + 1))
    done
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
}
export UCX_SOCKADDR_TLS_PRIORITY=qpx UCX_TLS=qpx_rc,qpx_ud
three_clients
again=""
round=1
while [ $ok -ne 3 ] && [ $round -lt 3 ] &&
      grep -q "invoked with status -25 (Connection reset by remote peer)" \
           "$TL_TMP/srv.log"; do
    again="$again; round $round: $ok of 3, a client disconnected before its server closed"
    round=$((round + 1))
    three_clients
done
[ -n "$again" ] && again=" (round $round${again})"
if [ $ok -eq 3 ]; then
    qpx_pass "qpx cm: one server, 3 clients in turn, 1000 messages each, intact$again"
else
    qpx_fail "qpx cm: $ok of 3 clients in turn completed intact$again"
    tail -n 5 "$TL_TMP/srv.log"
    for c in 1 2 3; do
        echo "--- client $c"; tail -n 3 "$TL_TMP/cli$c.log"
    done
fi

# Over qpx's CM, server and client each in a process forked after it used
# librdmacm (qpx_ucp_cm_fork.c: a listener, then fork; the child runs the
# example): UCP and qpx's CM open their own channels and ids in the child,
# as on real librdmacm (issue 37: the child's CM had no thread, and the
# client hung)
ex_fork=$QPX_SRCDIR/test/integration/qpx_ucp_cm_fork.c
if gcc -O1 -I"$ex" -Dmain=ucs_example_main -c -o "$TL_TMP/ucs_main.o" \
       "$ex/ucp_client_server.c" 2>"$TL_TMP/gcc.out" &&
   gcc -O1 -o "$TL_TMP/ucs_fork" "$ex_fork" "$TL_TMP/ucs_main.o" -lucp -lucs \
       -lrdmacm 2>"$TL_TMP/gcc.out"; then
    cs_prog=$TL_TMP/ucs_fork
    cs_server 90 -- -c tag
    cs_prog=$TL_TMP/ucs
    LD_PRELOAD=$QPX_MODULE timeout 60 "$TL_TMP/ucs_fork" -c tag \
        -a 127.0.0.1 -p "${port:-0}" >"$TL_TMP/cli.log" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/cli.log" | tail -n 1)
    if [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log" &&
       echo "$lanes" | grep -q '(qpx_'; then
        qpx_pass "qpx cm: server and client forked after using librdmacm: message intact, $lanes"
    else
        qpx_fail "qpx cm: server and client forked after using librdmacm: client exit $crc"
        for f in "$TL_TMP/cli.log" "$TL_TMP/srv.log"; do
            echo "---- $f"; grep -v INFO "$f" | tail -n 5
        done
    fi
else
    qpx_fail "qpx cm after fork: $ex_fork: $(head -n 1 "$TL_TMP/gcc.out")"
fi

# kill_case WHO: WHO (client or server) is killed mid-traffic; the other
# side's UCP must be told (the example's error callback prints the status)
# within 10 s. The example goes on waiting where the failure does not hit
# the operation it waits for (a receive the dead peer would have matched),
# so it is killed afterwards rather than waited for
kill_case() {
    # no timeout(1) between: the kill must reach the program itself;
    # stdbuf: its progress lines reach the log as they are printed
    cs_server - -- -i 100000000
    LD_PRELOAD=$QPX_MODULE stdbuf -oL "$TL_TMP/ucs" -i 100000000 \
        -a 127.0.0.1 -p "$port" >"$TL_TMP/cli.log" 2>&1 &
    cpid=$!
    # until traffic flows
    n=0
    while [ $n -lt 100 ] && ! grep -q 'iteration #2000$' "$TL_TMP/srv.log"; do
        sleep 0.1; n=$((n + 1))
    done
    if [ "$1" = client ]; then
        victim=$cpid survivor=$spid log=$TL_TMP/srv.log
    else
        victim=$spid survivor=$cpid log=$TL_TMP/cli.log
    fi
    kill -9 "$victim"; wait "$victim" 2>/dev/null
    n=0
    while [ $n -lt 100 ] &&
          ! grep -q 'error handling callback was invoked' "$log"; do
        sleep 0.1; n=$((n + 1))
    done
    kill -9 "$survivor" 2>/dev/null; wait "$survivor" 2>/dev/null
    if grep -q 'error handling callback was invoked with status -25' "$log"; then
        qpx_pass "qpx cm: $1 killed mid-traffic: the other side is told within $((n / 10 + 1)) s ($(grep -o 'status -25 ([^)]*)' "$log" | head -n 1))"
    else
        qpx_fail "qpx cm: $1 killed mid-traffic: the other side was not told within 10 s"
        grep -v '^$\|^---\|ABCDEF\|iteration\|UCX data' "$log" | tail -n 5
    fi
}
kill_case client
kill_case server

# qplimit_case MAX WHERE: a registry of its own with room for MAX QPs: the
# client's (3: its UD QP, after both sides' qpx_ud QPs) or the server's
# connection QP (4) cannot be had; the client must fail at once with an
# error, and the side that ran out must say what. The server's timeout(1)
# only guards against a hang: it counts from the server's start, which
# beside an MPI test on 2 cores can take 10 s and more
qplimit_case() {
    rm -f "$TL_TMP/crc.srv"
    (
        export SOFTVERBS_SHM=/dev/shm/qpx-ucp-cm-$$-$1 SOFTVERBS_MAX_QP=$1 \
               UCX_TLS=qpx_ud
        cs_server 120 --
        LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" -a 127.0.0.1 \
            -p "$port" >"$TL_TMP/cli.log" 2>&1
        echo $? >"$TL_TMP/crc"
        # gone before its client was done: say so
        qpx_alive "$spid" || echo "the server had exited" >"$TL_TMP/crc.srv"
        kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
        rm -f "$SOFTVERBS_SHM"
    )
    crc=$(cat "$TL_TMP/crc")
    if [ "$2" = client ]; then log=$TL_TMP/cli.log; else log=$TL_TMP/srv.log; fi
    if [ "$crc" -ne 0 ] && [ "$crc" -ne 124 ] &&
       grep -q 'error handling callback was invoked with status' "$TL_TMP/cli.log" &&
       grep -q "qpx cm: .*create_qp.* failed" "$log"; then
        qpx_pass "qpx cm: no QP for the $2's connection (SOFTVERBS_MAX_QP=$1): the client fails with $(grep -o 'status -[0-9]* ([^)]*)' "$TL_TMP/cli.log" | head -n 1), the $2 logs it"
    else
        qpx_fail "qpx cm: no QP for the $2's connection: client exit $crc$(cat "$TL_TMP/crc.srv" 2>/dev/null | sed 's/^/, /')"
        grep -v INFO "$TL_TMP/cli.log" "$TL_TMP/srv.log" | tail -n 6
    fi
}
qplimit_case 3 client
qplimit_case 4 server

# A connection request that is not a qpx CM's (rdmacm-utils' rdma_client:
# no private data, which the IB CM pads with zeros) is rejected: the
# client is refused at once, the server says why and serves the next
# client (UCP would read the zeros as an address and abort)
if command -v rdma_client >/dev/null; then
    cs_server 120 UCX_QPX_CM_FAILURE=warn --
    timeout 20 rdma_client -s 127.0.0.1 -p "$port" >"$TL_TMP/rc.log" 2>&1
    rrc=$?
    LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" -a 127.0.0.1 -p "$port" \
        >"$TL_TMP/cli.log" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    if [ $rrc -ne 0 ] && [ $rrc -ne 124 ] &&
       grep -q "malformed connection request" "$TL_TMP/srv.log" &&
       [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log"; then
        qpx_pass "qpx cm: a foreign request (rdma_client) is rejected ($(grep -o 'rdma_connect: .*' "$TL_TMP/rc.log" | head -n 1)), the next client is served"
    else
        qpx_fail "qpx cm: foreign request: rdma_client exit $rrc, next client exit $crc"
        grep -v '^$\|^---\|ABCDEF' "$TL_TMP/srv.log" | tail -n 6
    fi
fi

# Hostile requests (qpx_cm_fuzz.c): 1,000 of random bytes and lengths,
# headers that claim more data than was sent, well-formed headers over
# other bytes, headers of another kind, and clients that vanish after their
# request. Each must be refused (none reaches UCP, which would abort on a
# wrong address), the server counts them and still serves a real client.
fuzz=$QPX_TESTDIR/qpx_cm_fuzz
if [ -x "$fuzz" ]; then
    cs_server 300 UCX_QPX_CM_FAILURE=warn --
    LD_LIBRARY_PATH=$SOFTVERBS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout 200 "$fuzz" 127.0.0.1 "$port" 1000 >"$TL_TMP/fuzz.log" 2>&1
    frc=$?
    sed 's/^/  /' "$TL_TMP/fuzz.log" | tail -n 6
    LD_PRELOAD=$QPX_MODULE timeout 30 "$TL_TMP/ucs" -a 127.0.0.1 -p "$port" \
        >"$TL_TMP/cli.log" 2>&1
    crc=$?
    alive=no; qpx_alive "$spid" && alive=yes
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    counted=$(grep -o '[0-9]* malformed so far' "$TL_TMP/srv.log" | tail -n 1)
    qpx_check "qpx cm: 1000 hostile requests each refused (fuzz exit $frc)" \
        [ $frc -eq 0 ]
    # 800 are refused; the 200 that vanish are counted when their request
    # is read (the sampled log's last line: at the 512th)
    qpx_check "qpx cm: the server counts them (${counted:-none logged})" \
        [ "${counted%% *}" = 512 ]
    if [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log"; then
        qpx_pass "qpx cm: after them a real client is served, message intact (server alive: $alive)"
    else
        qpx_fail "qpx cm: after the hostile requests a real client exits $crc (server alive: $alive)"
        grep -v '^$\|^---\|ABCDEF' "$TL_TMP/srv.log" | tail -n 6
    fi
fi
qpx_finish
