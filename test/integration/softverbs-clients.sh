#!/bin/sh
#
# Unmodified Debian RDMA programs over softverbs: ibverbs-utils and perftest
# (UCX's transports: softverbs-ucx.sh). Every server/client pair runs on
# 127.0.0.1 under timeout; a case passes when both exit 0 and the client
# printed its results. SVT_CLIENTS=PATTERN runs only matching cases.
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/softverbs-lib.sh"

for prog in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_lat ss; do
    command -v $prog >/dev/null || qpx_skip_all "$prog not installed"
done
svt_env_setup
svt_need_device
svt_link_opts
D=$SVT_DEV

want() { [ -z "$SVT_CLIENTS" ] || echo "$1" | grep -Eq "$SVT_CLIENTS"; }

# --- symbol sets -------------------------------------------------------------
# A program linked against the real library binds name@version; one the
# replacement does not define fails to load. Every symbol@version the system's
# rdma-core library defines must be defined by the replacement, except for
# libibverbs: IBVERBS_PRIVATE_* (the provider interface, which only rdma-core's
# own providers link against) and the hidden IBVERBS_1.0/1.1 compat versions
# (the pre-1.1 ABI with its own structure layouts), not implemented.
svt_symbols() {
    objdump -T "$1" | awk '/ D[FO] / && !/\*UND\*/ {print $(NF-1), $NF}' | sort -u
}
if want symbols; then
    ldconfig=$(PATH=$PATH:/sbin:/usr/sbin command -v ldconfig)
    if ! command -v objdump >/dev/null || [ -z "$ldconfig" ]; then
        echo "SKIP: symbol sets (objdump or ldconfig not installed)"
    else
        for lib in libmlx5 libefa libibverbs; do
            sys=$("$ldconfig" -p | sed -n "s/^[[:space:]]*$lib\.so\.1 (.*) => //p" |
                  head -n 1)
            if [ -z "$sys" ]; then
                echo "SKIP: $lib symbol set (no system $lib.so.1)"
                continue
            fi
            skip='^$' but=
            if [ $lib = libibverbs ]; then
                skip='^IBVERBS_PRIVATE_|^\(IBVERBS_1\.[01]\) '
                but=" (but IBVERBS_PRIVATE_*, compat IBVERBS_1.0/1.1)"
            fi
            svt_symbols "$sys" | grep -Ev "$skip" >"$SVT_TMP/$lib.sys"
            svt_symbols "$SOFTVERBS_LIBDIR/$lib.so.1" >"$SVT_TMP/$lib.sv"
            missing=$(comm -23 "$SVT_TMP/$lib.sys" "$SVT_TMP/$lib.sv")
            if [ -s "$SVT_TMP/$lib.sys" ] && [ -z "$missing" ]; then
                qpx_pass "$lib.so.1 defines every symbol@version of $sys$but"
            else
                qpx_fail "$lib.so.1 lacks $(echo "$missing" | grep -c .) symbol@version of $sys"
                echo "$missing" | head -n 20 | sed 's/^/  | /'
            fi
        done
    fi
fi

# --- ibverbs-utils ---------------------------------------------------------
if want ibv_devices; then
    out=$(timeout 10 ibv_devices 2>&1); rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -Eq "^[[:space:]]*$D[[:space:]]+[0-9a-f]{16}"; then
        qpx_pass "ibv_devices lists $D with a GUID"
    else
        qpx_fail "ibv_devices (exit $rc, $D with a 16-digit GUID not listed)"
        echo "$out" | sed 's/^/  | /'
    fi
fi
if want ibv_devices; then
    # Malformed SOFTVERBS_* values: named on stderr, the default kept (a
    # limit of 0 or a silently ignored policy would mislead a test)
    for e in SOFTVERBS_MAX_QP=abc SOFTVERBS_UD_DROP=2 SOFTVERBS_CAP_POLICY=nope \
             SOFTVERBS_SHM_MB=-5 SOFTVERBS_RC_READ_REORDER=x \
             SOFTVERBS_RESP_DELAY=2s; do
        out=$(env "$e" timeout 10 ibv_devices 2>&1); rc=$?
        if [ $rc -eq 0 ] && echo "$out" | grep -q "^softverbs: ${e%%=*}='${e#*=}' is not" &&
           echo "$out" | grep -Eq "^[[:space:]]*$D[[:space:]]"; then
            qpx_pass "malformed $e reported, default kept"
        else
            qpx_fail "malformed $e (exit $rc): $(echo "$out" | head -2)"
        fi
    done
fi
if want ibv_devinfo; then
    out=$(timeout 10 ibv_devinfo -v -d "$D" 2>&1); rc=$?
    missing=""
    for key in "hca_id:[[:space:]]+$D" "state:[[:space:]]+PORT_ACTIVE" \
               "max_qp:[[:space:]]+[1-9]" "active_mtu:" "GID\[ *0\]:" \
               "link_layer:"; do
        echo "$out" | grep -Eq "$key" || missing="$missing '$key'"
    done
    if [ $rc -eq 0 ] && [ -z "$missing" ]; then
        qpx_pass "ibv_devinfo -v"
    else
        qpx_fail "ibv_devinfo -v (exit $rc, missing:$missing)"
        echo "$out" | head -n 20 | sed 's/^/  | /'
    fi
fi
if want ibv_devinfo; then
    # An unknown device: ibv_devinfo prints "IB device 'X' wasn't found" and
    # returns -1 from main, exit status 255 (rdma-core v44
    # libibverbs/examples/devinfo.c; exit 1 is only for an -i below 1 or a
    # device that fails to open). A port beyond phys_port_cnt: "Invalid
    # port requested for device", exit 4 (same file, print_hca_cap).
    out=$(timeout 10 ibv_devinfo -d nosuchdev 2>&1); rc=$?
    if [ $rc -eq 255 ] && echo "$out" | grep -q "^IB device 'nosuchdev' wasn't found$"; then
        qpx_pass "ibv_devinfo -d nosuchdev: exit 255, not found"
    else
        qpx_fail "ibv_devinfo -d nosuchdev (exit $rc, expected 255 and \"IB device 'nosuchdev' wasn't found\")"
        echo "$out" | head -n 5 | sed 's/^/  | /'
    fi
    out=$(timeout 10 ibv_devinfo -d "$D" -i 9 2>&1); rc=$?
    if [ $rc -eq 4 ] && echo "$out" | grep -q "^Invalid port requested for device$"; then
        qpx_pass "ibv_devinfo -i 9: exit 4, invalid port"
    else
        qpx_fail "ibv_devinfo -d $D -i 9 (exit $rc, expected 4 and \"Invalid port requested for device\")"
        echo "$out" | head -n 5 | sed 's/^/  | /'
    fi
fi

# name, pattern, program + options (the client adds 127.0.0.1)
pingpong() {
    want "$1" || return 0
    port=$(qpx_free_port)
    SVT_LISTEN_PORT=$port svt_run_pair "$1" 20 "$2" \
        "$3 -d $D -i 1 $SVT_PP_GID -p $port" "$3 -d $D -i 1 $SVT_PP_GID -p $port 127.0.0.1"
}
PP_OK='[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter'
pingpong ibv_rc_pingpong "$PP_OK" "ibv_rc_pingpong -n 500 -s 4096"
pingpong ibv_uc_pingpong "$PP_OK" "ibv_uc_pingpong -n 500 -s 4096"
pingpong ibv_ud_pingpong "$PP_OK" "ibv_ud_pingpong -n 500 -s 512"
pingpong "ibv_srq_pingpong -q 4" "$PP_OK" "ibv_srq_pingpong -n 500 -s 4096 -q 4"
# Features the device reports (ibv_query_device_ex) and the tools check
# before using them: on-demand paging (-o; implicit -O; prefetch -P with
# ibv_advise_mr), completion timestamps (-t, with the ibv_wr_* API -N),
# device memory (-j). -c: the server checks the received buffer and prints
# "invalid data in page N" otherwise (rdma-core libibverbs/examples).
SVT_REJECT='invalid data|Couldn.t prefetch'
PP_TS='Average receive completion clock cycles = [0-9.]+'
pingpong "ibv_rc_pingpong -o" "$PP_OK" "ibv_rc_pingpong -n 200 -c -o"
pingpong "ibv_rc_pingpong -O" "$PP_OK" "ibv_rc_pingpong -n 200 -c -O"
pingpong "ibv_rc_pingpong -o -P" "$PP_OK" "ibv_rc_pingpong -n 200 -c -o -P"
pingpong "ibv_rc_pingpong -t" "$PP_TS" "ibv_rc_pingpong -n 200 -c -t"
pingpong "ibv_rc_pingpong -N -t" "$PP_TS" "ibv_rc_pingpong -n 200 -c -N -t"
pingpong "ibv_rc_pingpong -j" "$PP_OK" "ibv_rc_pingpong -n 200 -c -j"
pingpong "ibv_srq_pingpong -o" "$PP_OK" "ibv_srq_pingpong -n 200 -q 4 -c -o"
SVT_REJECT=

# XRC (sv_xrc.c): the device reports it (XRC in ibv_devinfo -v's
# device_cap_flags); ibv_xsrq_pingpong opens /tmp/xrc_domain in both
# processes (one shared domain), sends from XRC_SEND QPs to the peer's
# XRC SRQ through its XRC_RECV QP and prints "success" when every message
# completed without error (it checks no data: the xrc/ conformance cases
# do). -c 2: a server with two clients, each through its own target QP.
if want xrc; then
    out=$(timeout 10 ibv_devinfo -v -d "$D" 2>&1)
    if echo "$out" | grep -q "device_cap_flags" && echo "$out" | grep -qw XRC; then
        qpx_pass "xrc: ibv_devinfo -v reports the XRC capability"
    else
        qpx_fail "xrc: ibv_devinfo -v reports no XRC (or no device_cap_flags)"
    fi
fi
XS_OK='^success$'
pingpong "xrc ibv_xsrq_pingpong" "$XS_OK" "ibv_xsrq_pingpong -n 50 -s 4096"
pingpong "xrc ibv_xsrq_pingpong -e" "$XS_OK" "ibv_xsrq_pingpong -n 50 -s 1024 -e"
if want "xrc ibv_xsrq_pingpong -c 2"; then
    port=$(qpx_free_port)
    out=$SVT_TMP/xsrq2
    # shellcheck disable=SC2086
    timeout -k 2 60 ibv_xsrq_pingpong -d $D -i 1 $SVT_PP_GID -p $port -c 2 -n 20 >"$out.srv" 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    qpx_wait_port "$port"
    # shellcheck disable=SC2086
    timeout -k 2 60 ibv_xsrq_pingpong -d $D -i 1 $SVT_PP_GID -p $port -n 20 127.0.0.1 >"$out.c1" 2>&1 &
    c1=$!
    # shellcheck disable=SC2086
    timeout -k 2 60 ibv_xsrq_pingpong -d $D -i 1 $SVT_PP_GID -p $port -n 20 127.0.0.1 >"$out.c2" 2>&1
    c2rc=$?
    wait "$c1"; c1rc=$?
    wait "$spid"; src=$?
    SVT_PIDS=$(echo "$SVT_PIDS" | sed "s/ $spid\b//")
    if [ $src -eq 0 ] && [ $c1rc -eq 0 ] && [ $c2rc -eq 0 ] &&
       grep -q '^success$' "$out.srv" && grep -q '^success$' "$out.c1" &&
       grep -q '^success$' "$out.c2"; then
        qpx_pass "xrc ibv_xsrq_pingpong -c 2: a server and two clients"
    else
        qpx_fail "xrc ibv_xsrq_pingpong -c 2 (server exit $src, clients $c1rc/$c2rc)"
        sed 's/^/  | /' "$out.srv" "$out.c1" "$out.c2" | tail -n 15
    fi
fi
# A server (-c 2, waiting for its second client) and its first client
# killed with SIGKILL while they hold the domain, an XRC SRQ and connected
# targets: their objects are the registry's to reclaim, and the next pair
# over the same domain file must work
if want "xrc ibv_xsrq_pingpong after killed ones"; then
    port=$(qpx_free_port)
    out=$SVT_TMP/xsrqk
    : >"$out.c1"
    # shellcheck disable=SC2086
    ibv_xsrq_pingpong -d $D -i 1 $SVT_PP_GID -p $port -c 2 -n 20 >"$out.srv" 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    qpx_wait_port "$port"
    # shellcheck disable=SC2086
    ibv_xsrq_pingpong -d $D -i 1 $SVT_PP_GID -p $port -n 20 127.0.0.1 >"$out.c1" 2>&1 &
    c1=$!
    SVT_PIDS="$SVT_PIDS $c1"
    # connected: the client's two QPs in RTS (its stdout is a buffered file)
    i=0
    until softverbs-stat -p "$c1" 2>/dev/null | grep -q " rts=2 "; do
        if [ $i -ge 400 ] || ! qpx_alive "$c1"; then
            qpx_fail "xrc ibv_xsrq_pingpong to kill: the client did not connect"
            break
        fi
        sleep 0.05
        i=$((i + 1))
    done
    kill -KILL "$spid" "$c1" 2>/dev/null
    wait "$spid" "$c1" 2>/dev/null
    SVT_PIDS=$(echo "$SVT_PIDS" | sed "s/ $spid\b//; s/ $c1\b//")
fi
pingpong "xrc ibv_xsrq_pingpong after killed ones" "$XS_OK" "ibv_xsrq_pingpong -n 50 -s 4096"

# --- perftest ----------------------------------------------------------------
# a results row: "#bytes #iterations <numbers...>"
PT_LAT='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+\.[0-9]+[[:space:]]+[0-9]+\.[0-9]+'
PT_BW='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+\.[0-9]+[[:space:]]+[0-9]+\.[0-9]+[[:space:]]+[0-9]+\.[0-9]+'
perftest() {
    want "$1" || return 0
    port=$(qpx_free_port)
    SVT_LISTEN_PORT=$port svt_run_pair "$1" 30 "$2" \
        "$3 -d $D -i 1 $SVT_PT_GID -p $port -F" "$3 -d $D -i 1 $SVT_PT_GID -p $port -F 127.0.0.1"
}
perftest "ib_write_lat" "$PT_LAT" "ib_write_lat -n 1000 -s 64"
perftest "ib_write_bw"  "$PT_BW"  "ib_write_bw -n 500 -s 65536"
perftest "ib_read_lat"  "$PT_LAT" "ib_read_lat -n 1000 -s 64"
perftest "ib_read_bw"   "$PT_BW"  "ib_read_bw -n 500 -s 65536"
perftest "ib_send_lat"  "$PT_LAT" "ib_send_lat -n 1000 -s 64"
perftest "ib_send_bw"   "$PT_BW"  "ib_send_bw -n 500 -s 65536"
perftest "ib_atomic_lat" "$PT_LAT" "ib_atomic_lat -n 1000"
perftest "ib_atomic_bw" "$PT_BW"  "ib_atomic_bw -n 1000"
perftest "ib_send_lat -c UD" "$PT_LAT" "ib_send_lat -c UD -n 1000 -s 64"
perftest "ib_write_lat -c UC" "$PT_LAT" "ib_write_lat -c UC -n 1000 -s 64"
# mlx5 DC (mlx5dv_create_qp, DCIs and a DCT on an SRQ, ibv_wr_* with
# mlx5dv_wr_set_dc_addr_stream)
perftest "ib_write_lat -c DC" "$PT_LAT" "ib_write_lat -c DC -n 1000 -s 64"
perftest "ib_write_bw -c DC"  "$PT_BW"  "ib_write_bw -c DC -n 500 -s 65536"
perftest "ib_read_lat -c DC"  "$PT_LAT" "ib_read_lat -c DC -n 1000 -s 64"
perftest "ib_read_bw -c DC"   "$PT_BW"  "ib_read_bw -c DC -n 500 -s 65536"
perftest "ib_send_lat -c DC"  "$PT_LAT" "ib_send_lat -c DC -n 1000 -s 64"
perftest "ib_send_bw -c DC"   "$PT_BW"  "ib_send_bw -c DC -n 500 -s 65536"
perftest "ib_atomic_bw -c DC" "$PT_BW"  "ib_atomic_bw -c DC -n 1000"
perftest "ib_atomic_lat -c DC" "$PT_LAT" "ib_atomic_lat -c DC -n 1000"
# XRC: perftest's XRC_SEND/XRC_RECV pairs over a shared XRC domain, its
# SRQ number sent with the connection data (ibv_wr_* with
# ibv_wr_set_xrc_srqn on this device)
perftest "ib_send_bw -c XRC"  "$PT_BW"  "ib_send_bw -c XRC -n 500 -s 65536"
perftest "ib_send_lat -c XRC" "$PT_LAT" "ib_send_lat -c XRC -n 1000 -s 64"
perftest "ib_write_bw -c XRC" "$PT_BW"  "ib_write_bw -c XRC -n 500 -s 65536"
perftest "ib_read_bw -c XRC"  "$PT_BW"  "ib_read_bw -c XRC -n 500 -s 65536"

# rsockets (sv_rsocket*.c, man rsocket(7)): rdma-core's rstream with its
# test options (default non-blocking, -T b blocking, -T a rpoll, -T v data
# verified), softverbs_rsocket (blocking and non-blocking transfers with
# rpoll, partial reads, shutdown -> 0, ECONNREFUSED, every byte checked)
# and a plain TCP echo program under librspreload (echoed bytes checked,
# up to 3 MB; a connect nobody listens to gives ECONNREFUSED)
RS_OK='^custom +[0-9.]+[kmg]? +[0-9.]+[kmg]? +1 '
rstream_case() { # name test-options
    want "rstream" || return 0
    port=$(qpx_free_port)
    SVT_CM_PORT=$port svt_run_pair "rstream $1" 30 "$RS_OK" \
        "rstream $2 -p $port" "rstream $2 -s 127.0.0.1 -p $port"
}
rstream_case "-S 64 -C 1000"          "-S 64 -C 1000"
rstream_case "-S 65536 -C 200"        "-S 65536 -C 200"
rstream_case "-T b -S 1000000 -C 20"  "-T b -S 1000000 -C 20"
rstream_case "-T a -S 4096 -C 500"    "-T a -S 4096 -C 500"
rstream_case "-T n -S 33000 -C 100"   "-T n -S 33000 -C 100"
# -T v: rstream checks the bytes it receives and fails otherwise
SVT_REJECT='verif|mismatch|differ'
rstream_case "-T v -S 100000 -C 50"   "-T v -S 100000 -C 50"
if want "rstream"; then
    port=$(qpx_free_port)
    SVT_CM_PORT=$port svt_run_pair "rstream -T v (all built-in sizes)" 60 "^1m_bw " \
        "rstream -T v -p $port" "rstream -T v -s 127.0.0.1 -p $port"
fi
# riostream: riowrite is an RDMA WRITE into the peer's riomap'ed buffer;
# -T v checks the bytes that landed there
rio_case() { # name test-options
    want "riostream" || return 0
    port=$(qpx_free_port)
    SVT_CM_PORT=$port svt_run_pair "riostream $1" 30 "$RS_OK" \
        "riostream $2 -p $port" "riostream $2 -s 127.0.0.1 -p $port"
}
rio_case "-T v -S 65536 -C 100"     "-T v -S 65536 -C 100"
rio_case "-T v -T b -S 1000000 -C 20" "-T v -T b -S 1000000 -C 20"
rio_case "-T v -T a -S 4096 -C 500" "-T v -T a -S 4096 -C 500"
if want "riostream"; then
    port=$(qpx_free_port)
    SVT_CM_PORT=$port svt_run_pair "riostream -T v (all built-in sizes)" 60 "^1m_bw " \
        "riostream -T v -p $port" "riostream -T v -s 127.0.0.1 -p $port"
fi
SVT_REJECT=
# rs_prog PROG OK-LINE WHAT: one of our rsocket programs (it checks every
# byte itself and prints OK-LINE when all passed), on a free port
rs_prog() {
    want "rsocket" || return 0
    prog=$QPX_TESTDIR/$1
    if [ ! -x "$prog" ]; then
        qpx_fail "$1 not built"
        return 0
    fi
    port=$(qpx_free_port)
    out=$(timeout 90 "$prog" "$port" 2>&1); rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^$2"; then
        qpx_pass "$1: $3"
    else
        qpx_fail "$1 (exit $rc)"
        echo "$out" | tail -n 5 | sed 's/^/  | /'
    fi
}
rs_prog softverbs_rsocket "rsocket ok" \
    "blocking and rpoll'ed non-blocking transfers, partial reads, shutdown, ECONNREFUSED, bytes checked"
# datagram rsockets (sv_rsocket_dgram.c, UD): softverbs_rsocket_dgram
# (echoed datagrams of 1 B to the largest the port's MTU allows, 500 round trips, every byte and the
# senders' addresses checked; non-blocking with rpoll, MSG_PEEK, rconnect,
# EMSGSIZE, EADDRINUSE, a datagram to nobody) and rdma-core's udpong, whose
# client prints its line only once the server answered its control
# messages (its server never exits: it is stopped after the client). The
# server binds 127.0.0.1 (-b): without it, getaddrinfo gives udpong ::1
# first, where an IPv4 client does not reach it, as with kernel sockets.
rs_prog softverbs_rsocket_dgram "rsocket dgram ok" \
    "datagrams echoed, blocking and rpoll'ed, MSG_PEEK, rconnect, errnos, bytes and addresses checked"
udpong_case() { # name client-options
    want "udpong" || return 0
    command -v udpong >/dev/null || { echo "SKIP: udpong missing (rdmacm-utils)"; return 0; }
    port=$(qpx_free_port)
    timeout 120 stdbuf -oL udpong -b 127.0.0.1 -p "$port" >"$SVT_TMP/udpong.srv" 2>&1 &
    upid=$!
    i=0
    while [ $i -lt 300 ] && ! ss -lunH "sport = :$port" 2>/dev/null | grep -q .; do
        sleep 0.1
        i=$((i + 1))
    done
    out=$(timeout $((30 * ${QPX_TIMEOUT_SCALE:-3})) udpong $2 -s 127.0.0.1 -p "$port" 2>&1); rc=$?
    kill "$upid" 2>/dev/null
    wait "$upid" 2>/dev/null
    if [ $rc -eq 0 ] && echo "$out" | grep -Eq '^custom +[0-9.]+[kmg]? +[0-9.]+[kmg]? ' &&
       grep -q "^client login from 127.0.0.1" "$SVT_TMP/udpong.srv"; then
        qpx_run_pass "udpong $1: $(echo "$out" | grep '^custom' | tr -s ' ')"
    else
        qpx_fail "udpong $1 (client exit $rc)"
        echo "$out" | tail -n 3 | sed 's/^/  | /'
        tail -n 3 "$SVT_TMP/udpong.srv" | sed 's/^/  srv| /'
    fi
}
udpong_case "-T e -S 1000 -C 500" "-T e -S 1000 -C 500"
udpong_case "-T a -T e -S 64 -C 500" "-T a -T e -S 64 -C 500"
# (-S at most the port's MTU less 24: 1000 fits RoCE's 1024 too)
udpong_case "-T b -S 1000 -C 2000" "-T b -S 1000 -C 2000"

RSPRELOAD=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
if want "rspreload"; then
    prog=$QPX_TESTDIR/softverbs_rsecho
    if [ -x "$prog" ] && [ -e "$RSPRELOAD" ]; then
        port=$(qpx_free_port)
        SVT_REJECT='differ' SVT_CM_PORT=$port svt_run_pair "rspreload TCP echo" 30 "^echo ok" \
            "env LD_PRELOAD=$RSPRELOAD $prog -s $port" \
            "env LD_PRELOAD=$RSPRELOAD $prog -c $port 1 1000 65536 70000 1048576 3000001"
        port=$(qpx_free_port)
        out=$(LD_PRELOAD=$RSPRELOAD timeout 30 "$prog" -r "$port" 2>&1); rc=$?
        if [ $rc -eq 0 ] && [ "$out" = "refused ok" ]; then
            qpx_pass "rspreload: connect with nobody listening gives ECONNREFUSED"
        else
            qpx_fail "rspreload: connect with nobody listening (exit $rc: $out)"
        fi
    else
        echo "SKIP: rspreload: $prog or $RSPRELOAD missing"
    fi
fi

svt_check_released "no objects left after the clients exited"

# a client and its server killed in the middle of a run: their objects go
if want killed; then
    port=$(qpx_free_port)
    ib_write_bw -d $D -i 1 $SVT_PT_GID -p "$port" -F -n 1000000 -s 65536 >/dev/null 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    qpx_wait_port "$port"
    ib_write_bw -d $D -i 1 $SVT_PT_GID -p "$port" -F -n 1000000 -s 65536 127.0.0.1 >/dev/null 2>&1 &
    cpid=$!
    SVT_PIDS="$SVT_PIDS $cpid"
    sleep 1
    if timeout 10 softverbs-stat | grep -q '^total.* qp=[1-9]'; then
        kill -9 "$cpid" "$spid" 2>/dev/null
        wait "$cpid" "$spid" 2>/dev/null
        svt_check_released "objects of SIGKILLed ib_write_bw processes reclaimed"
    else
        qpx_fail "objects of SIGKILLed ib_write_bw processes reclaimed (no live QP seen while they ran)"
        kill -9 "$cpid" "$spid" 2>/dev/null
    fi
fi

qpx_finish
