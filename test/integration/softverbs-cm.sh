#!/bin/sh
# softverbs' librdmacm under unmodified Debian programs: rdmacm-utils
# (rping with its payload validated, ucmatose with several connections and
# a bound address, rdma_server/rdma_client on the synchronous API,
# rdma_xserver/rdma_xclient in XRC and RC modes), perftest
# with -R (its connections made through rdma_cm), a connection to a port
# nobody listens on (REJECTED, reason 8, as on a fabric), and UCX 1.13's own
# rdmacm connection manager (the ucp_client_server example of libucx-dev,
# over rc_verbs, the message it receives checked); a process forked after
# it used the CM (softverbs_cm_fork, its messages checked).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/softverbs-lib.sh"
svt_env_setup
svt_need_device
[ -e "$SOFTVERBS_LIBDIR/librdmacm.so.1" ] || qpx_skip_all "softverbs librdmacm not built"
for prog in rping ucmatose rdma_server rdma_client; do
    command -v $prog >/dev/null || qpx_skip_all "$prog missing (rdmacm-utils)"
done
D=$SVT_DEV
PORT=$(( 20000 + $$ % 10000 ))
next_port() { PORT=$((PORT + 1)); }

# rping -V validates every ping buffer (a mismatch fails the program); the
# client prints each one (-v): COUNT lines of data, exit 0 on both sides
rping_case() { # size count
    next_port
    name="rping -V -S $1 -C $2"
    timeout 60 rping -s -a 127.0.0.1 -p $PORT -S $1 -C $2 -V \
        >"$SVT_TMP/rping.srv" 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    svt_wait_cm_listen $PORT
    timeout 60 rping -c -a 127.0.0.1 -p $PORT -S $1 -C $2 -V -v \
        >"$SVT_TMP/rping.cli" 2>&1
    crc=$?
    wait $spid
    src=$?
    n=$(grep -c "^ping data: rdma-ping-" "$SVT_TMP/rping.cli")
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$n" -eq "$2" ]; then
        qpx_pass "$name: $n pings validated"
    else
        qpx_fail "$name: client exit $crc, server exit $src, $n pings of $2"
        tail -n 5 "$SVT_TMP/rping.cli" "$SVT_TMP/rping.srv" | sed 's/^/  | /'
    fi
}
rping_case 64 100
rping_case 4096 50
rping_case 65000 20   # rping refuses 65536, the top of the range it prints

# A port nobody listens on: the REQ is rejected (invalid service ID, 8)
next_port
out=$(timeout 20 rping -c -a 127.0.0.1 -p $PORT -C 1 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "RDMA_CM_EVENT_REJECTED, error 8"; then
    qpx_pass "rping to a port nobody listens on: REJECTED, error 8 (exit $rc)"
else
    qpx_fail "rping to a port nobody listens on (exit $rc): $(echo "$out" | tail -n 2)"
fi

# A malformed SOFTVERBS_CM_PORT is named on stderr and the default used
next_port
out=$(SOFTVERBS_CM_PORT=nodev:x timeout 20 rping -c -a 127.0.0.1 -p $PORT -C 1 2>&1)
if echo "$out" | grep -q "SOFTVERBS_CM_PORT='nodev:x' is not <device>:<port>" &&
   echo "$out" | grep -q "RDMA_CM_EVENT_REJECTED, error 8"; then
    qpx_pass "malformed SOFTVERBS_CM_PORT reported, default port used"
else
    qpx_fail "malformed SOFTVERBS_CM_PORT: $(echo "$out" | head -n 2)"
fi

# ucmatose: 4 RC connections of 100 messages, then with the address bound
next_port
SVT_CM_PORT=$PORT svt_run_pair "ucmatose -c 4 -C 100" 30 "^return status 0" \
    "ucmatose -p $PORT -c 4 -C 100" \
    "ucmatose -s 127.0.0.1 -p $PORT -c 4 -C 100"
next_port
SVT_CM_PORT=$PORT svt_run_pair "ucmatose -b 127.0.0.1 -c 2 -C 50" 30 "^return status 0" \
    "ucmatose -b 127.0.0.1 -p $PORT -c 2 -C 50" \
    "ucmatose -s 127.0.0.1 -b 127.0.0.1 -p $PORT -c 2 -C 50"

# UD: the SIDR exchange (udaddy listens on its fixed port 7174; -p is its
# port space), and a SIDR request nobody answers: UNREACHABLE, status 1
# ("unsupported"), as a fabric's CM answers it
SVT_CM_PORT=7174 svt_run_pair "udaddy (UD, SIDR)" 30 "^return status 0" "udaddy" \
    "udaddy -s 127.0.0.1"
out=$(timeout 20 udaddy -s 127.0.0.1 2>&1)
if echo "$out" | grep -q "RDMA_CM_EVENT_UNREACHABLE, error: 1"; then
    qpx_pass "udaddy with nobody listening: UNREACHABLE, status 1"
else
    qpx_fail "udaddy with nobody listening: $(echo "$out" | tail -n 2)"
fi

# UD multicast: a receiver joins 224.1.1.1, a sender joins it send-only and
# sends 10 datagrams; the receiver gets all 10 (mckey counts them). The
# sender starts once the receiver has joined: a datagram sent to a group
# before a member joined reaches nobody, as on a fabric
SVT_READY="^mckey: joined" svt_run_pair "mckey (UD multicast)" 30 \
    "^return status 0" "stdbuf -oL mckey -m 224.1.1.1 -C 10" \
    "mckey -m 224.1.1.1 -s -C 10"

# the synchronous API (rdma_create_ep, rdma_get_request, rdma_verbs.h)
next_port
SVT_CM_PORT=$PORT svt_run_pair "rdma_server/rdma_client" 30 "rdma_client: end 0" \
    "rdma_server -p $PORT" "rdma_client -s 127.0.0.1 -p $PORT"

# XRC through the CM (RDMA_PS_IB): rdma_xserver -c x gets an XRC_RECV QP
# for the request and makes an XRC SRQ on it, whose number its accept
# carries; rdma_xclient -c x reads it from the REP (id->event) and sends to
# it from its XRC_SEND QP (the conformance case cm/xrc_ep_srq checks the
# data); and the same programs' RC mode
if command -v rdma_xserver >/dev/null && command -v rdma_xclient >/dev/null; then
    for mode in x r; do
        next_port
        SVT_CM_PORT=$PORT svt_run_pair "rdma_xserver/rdma_xclient -c $mode" 30 \
            "rdma_xclient: end 0" "rdma_xserver -c $mode -p $PORT" \
            "rdma_xclient -c $mode -s 127.0.0.1 -p $PORT"
    done
fi

# perftest with its connections through rdma_cm
PT_LAT='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+\.[0-9]+'
for t in "ib_write_lat -s 64 -n 1000" "ib_write_bw -s 65536 -n 500" \
         "ib_send_lat -s 64 -n 1000" "ib_send_bw -s 65536 -n 500" \
         "ib_read_bw -s 65536 -n 500" "ib_send_lat -c UD -s 64 -n 1000"; do
    next_port
    # perftest 4.5-0.17 listens twice with -R (its own exchange, then the
    # QPs); a client that dials between the two is rejected (reason 8, as
    # on a fabric) and retries with the CM ids it has just freed, which
    # crashes it (perftest's defect, fixed upstream in 3d9d8d0, 2025)
    SVT_RETRY="RDMA_CM_EVENT_REJECTED; error: 8" \
    SVT_CM_PORT=$PORT svt_run_pair "perftest $t -R" 30 "$PT_LAT" \
        "$t -d $D -R -p $PORT -F" "$t -d $D -R -p $PORT -F 127.0.0.1"
done

# UCX's rdmacm connection manager (UCP client/server) over rc_verbs
ex=/usr/share/doc/libucx-dev/examples
if [ -f "$ex/ucp_client_server.c" ] && command -v gcc >/dev/null &&
   gcc -O1 -I"$ex" -o "$SVT_TMP/ucp_client_server" "$ex/ucp_client_server.c" \
       -lucp -lucs 2>"$SVT_TMP/gcc.out" && svt_devnode_ok; then
    next_port
    export UCX_TLS=rc_verbs UCX_SOCKADDR_TLS_PRIORITY=rdmacm \
           UCX_NET_DEVICES=$D:1 UCX_WARN_UNUSED_ENV_VARS=n
    timeout 30 "$SVT_TMP/ucp_client_server" -p $PORT >"$SVT_TMP/ucs.srv" 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    svt_wait_cm_listen $PORT
    timeout 30 "$SVT_TMP/ucp_client_server" -a 127.0.0.1 -p $PORT \
        >"$SVT_TMP/ucs.cli" 2>&1
    crc=$?
    kill $spid 2>/dev/null
    if [ $crc -eq 0 ] && grep -q "^ABCDEFGHIJKLMNO\.$" "$SVT_TMP/ucs.cli"; then
        qpx_pass "UCX rdmacm CM: ucp_client_server over rc_verbs, message received intact"
    else
        qpx_fail "UCX rdmacm CM: ucp_client_server (client exit $crc)"
        tail -n 8 "$SVT_TMP/ucs.cli" | sed 's/^/  | /'
    fi
    unset UCX_TLS UCX_SOCKADDR_TLS_PRIORITY UCX_NET_DEVICES
else
    echo "SKIP: UCX rdmacm CM case: ucp_client_server example not built ($(head -n 1 "$SVT_TMP/gcc.out" 2>/dev/null))"
fi

# A process forked after it used the CM (issue 37): the child's own
# channels and ids connect, listen and move data as any process's (real
# librdmacm has no thread, the kernel makes every process's events); the
# parent's listener destroyed right after the fork frees its port at once
fork_prog=$QPX_TESTDIR/softverbs_cm_fork
if [ -x "$fork_prog" ]; then
    for c in child-connects child-listens child-sync grandchild parent-relisten; do
        next_port
        out=$(timeout 60 "$fork_prog" $c $PORT 2>&1); rc=$?
        next_port # child-listens takes PORT + 1
        if [ $rc -eq 0 ] && echo "$out" | grep -q "^PASS: $c: "; then
            qpx_pass "CM after fork, $(echo "$out" | sed -n "s/^PASS: //p")"
        else
            qpx_fail "CM after fork, $c (exit $rc)"
            echo "$out" | tail -n 5 | sed 's/^/  | /'
        fi
    done
else
    echo "SKIP: CM after fork: $fork_prog not built"
fi

svt_check_released "no objects left after the CM programs exited"
qpx_finish
