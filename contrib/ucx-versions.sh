#!/bin/bash
#
# ucx-versions.sh: qpx built against, loaded into and run by UCX releases
# other than the installed one (Debian's 1.13.1, which every other test
# uses), from the unmodified sources in ../shared/ucx/.
#
#   bash contrib/ucx-versions.sh [VERSION...]     (default: 1.19.1 1.22.0)
#
# For each VERSION:
#  - its libraries: contrib/ucx-build.sh (cached outside the clone); a
#    release whose source is absent is SKIPped with the reason;
#  - qpx built against its tree (configure --with-ucx-src, PKG_CONFIG_PATH
#    at its installation) in $QPX_BUILDDIR/ucx-VERSION, with -Werror;
#  - loading: `qpxrun --soft ucx_info -d` of that release lists qpx_rc,
#    qpx_ud, qpx_dc and qpx on softverbs (1.22: through UCX_PLUGIN_PATH, no
#    preload; 1.19: by LD_PRELOAD); the installed UCX refuses this build,
#    and this release refuses the installed UCX's qpx, each with one clear
#    message and no qpx transport;
#  - UCP active messages with every size class, data checked
#    (qpx_ucp_am.c, built against the release's headers), over qpx_rc +
#    qpx_ud, qpx_ud, qpx_dc and qpx;
#  - uct_ep_is_connected and uct_ep_check with a completion on every qpx
#    transport (qpx_uct_ep_peer.c, built against the release's headers);
#  - a UCP client/server pair through qpx's connection manager (the
#    release's own ucp_client_server example; the server's message checked);
#  - a ucx_perftest pair of the release over qpx_rc (a run: no data check);
#  - on softverbs' mlx5 personality, the release's rc_mlx5, ud_mlx5 and
#    dc_mlx5 listed, and every UCT operation and size, data checked, over
#    them and over qpx_rc, qpx_ud and qpx_dc (qpx_uct_integrity.c);
#  - a 4-rank Open MPI alltoall (Debian's Open MPI 4.1, its pml ucx on the
#    release's libraries) over qpx, every element checked.
#  - qpx built against the release's installed headers alone (no source
#    tree: src/ucs/compat/ declares UCX's internals), with -Werror, in
#    $QPX_BUILDDIR/ucx-VERSION-public: ucx_info -d lists the four
#    transports, and UCP AM passes over qpx_rc + qpx_ud and qpx.
# Prints each part's time, a line per case, and "N passed, N failed".
# Exit 0 when every case passed, 1 otherwise, 77 when no release could be
# tried.
#
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
QPX_BUILDDIR=${QPX_BUILDDIR:-$top/build}
export SOFTVERBS_LIBDIR=${SOFTVERBS_LIBDIR:-$QPX_BUILDDIR/src/softverbs/.libs}
QPX_DEV=${QPX_DEV:-softverbs0:1}
versions=${*:-1.19.1 1.22.0}
installed=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD ucx_info -v 2>/dev/null |
            sed -n 's/^# \(Library \)\{0,1\}[Vv]ersion:\{0,1\} \([0-9.]*\).*/\2/p' | head -n 1)

. "$top/test/integration/lib.sh"
tried=0
tmp=$(mktemp -d /tmp/qpx-ucx-versions.XXXXXX)
trap 'pkill -9 -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT

say() { echo "==> $*"; }
elapsed() { echo "($(($(date +%s) - $1)) s)"; }

if [ ! -f "$SOFTVERBS_LIBDIR/libibverbs.so.1" ]; then
    echo "SKIP: softverbs not built in $SOFTVERBS_LIBDIR"
    exit 77
fi

# build_qpx VERSION: qpx against the release ($prefix, $src, $bld) in $qb
build_qpx() {
    local t0 flags
    t0=$(date +%s)
    qb=$QPX_BUILDDIR/ucx-$1
    mkdir -p "$qb"
    flags="--enable-werror --with-ucx-src=$src --with-ucx-build=$bld"
    if [ ! -f "$qb/Makefile" ] || [ "$(cat "$qb/.qpx-flags" 2>/dev/null)" != "$flags" ]; then
        # shellcheck disable=SC2086
        (cd "$qb" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
             "$top/configure" $flags) >"$qb/configure.out" 2>&1 ||
            { tail -5 "$qb/configure.out"; return 1; }
        echo "$flags" >"$qb/.qpx-flags"
    fi
    (cd "$qb" && make -j2 -C src libuct_qpx.la all-local && make -C contrib) \
        >"$qb/make.out" 2>&1 || { grep -E 'error|warning' "$qb/make.out" | head; return 1; }
    say "qpx built against UCX $1 in $qb $(elapsed "$t0")"
}

# run_env: the environment of the release's programs: softverbs first, then
# its libraries
run_env() {
    env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR:$prefix/lib" UCX_NET_DEVICES="$QPX_DEV" \
        UCX_WARN_UNUSED_ENV_VARS=n "$@"
}

# qpx_tls_missing OUT: the qpx transports that ucx_info -d's output OUT
# lacks, each after a space (empty: all four listed)
qpx_tls_missing() {
    local tl missing=""
    for tl in qpx_rc qpx_ud qpx_dc qpx; do
        grep -q "Transport: $tl\$" <<<"$1" || missing="$missing $tl"
    done
    echo "$missing"
}

# am_case LABEL BUILDDIR PROG TLS: PROG (qpx_ucp_am built for the release)
# over UCX_TLS=TLS,self with the qpx module of BUILDDIR: every size class,
# data checked, and every check passed
am_case() {
    local label=$1 b=$2 prog=$3 tls=$4 ret summary
    QPX_MODULE="$b/src/.libs/libuct_qpx.so" run_env "$b/contrib/qpxrun" --soft --quiet \
        env UCX_TLS="$tls,self" timeout 120 "$prog" 10 >"$tmp/am.out" 2>&1
    ret=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/am.out")
    if [ $ret -eq 0 ] && [ -n "$summary" ] && [ "${summary#* passed, }" = "0 failed" ]; then
        qpx_pass "$label: UCP AM, every size class, data checked, over $tls: $summary"
    else
        qpx_fail "$label: UCP AM over $tls (exit $ret): ${summary:-no summary}"
        grep -v 'netlink\|sock.c' "$tmp/am.out" | tail -n 8
    fi
}

check_load() {
    local v=$1 out env_lines missing
    env_lines=$(QPX_MODULE="$qb/src/.libs/libuct_qpx.so" "$qb/contrib/qpxrun" --soft --env)
    out=$(QPX_MODULE="$qb/src/.libs/libuct_qpx.so" run_env \
          "$qb/contrib/qpxrun" --soft --quiet "$prefix/bin/ucx_info" -d 2>&1)
    missing=$(qpx_tls_missing "$out")
    if [ -n "$missing" ]; then
        qpx_fail "UCX $v: ucx_info -d lacks$missing"
        grep -i 'qpx\|error' <<<"$out" | head -5
        return
    fi
    # UCX's own IB transports probe the same softverbs devices: an error
    # they log (UCX 1.19+ asked the kernel's RDMA netlink about each device
    # softverbs gave an index) lands in every process of a job
    if grep -q "UCX  ERROR" <<<"$out"; then
        qpx_fail "UCX $v: ucx_info -d over softverbs logs errors: $(grep -m1 'UCX  ERROR' <<<"$out")"
    else
        qpx_pass "UCX $v: ucx_info -d over softverbs logs no error"
    fi
    case $v in
    1.1[0-9].*|1.2[01].*)
        if grep -q "LD_PRELOAD=.*libuct_qpx.so" <<<"$env_lines"; then
            qpx_pass "UCX $v: qpxrun preloads qpx (no plugin directories before 1.22); ucx_info -d lists qpx_rc, qpx_ud, qpx_dc, qpx"
        else
            qpx_fail "UCX $v: qpxrun does not preload qpx: $env_lines"
        fi ;;
    *)
        if grep -q "UCX_PLUGIN_PATH=" <<<"$env_lines" &&
           ! grep -q "LD_PRELOAD" <<<"$env_lines"; then
            qpx_pass "UCX $v: loaded from UCX_PLUGIN_PATH alone (no LD_PRELOAD); ucx_info -d lists qpx_rc, qpx_ud, qpx_dc, qpx"
        else
            qpx_fail "UCX $v: qpxrun did not use UCX_PLUGIN_PATH: $env_lines"
        fi ;;
    esac

    # A build for one release refuses another, saying so once
    if [ -n "$installed" ]; then
        out=$(env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" \
              LD_PRELOAD="$qb/src/.libs/libuct_qpx.so" ucx_info -d 2>&1)
        if grep -q "qpx: built for UCX $v but this process loaded UCX $installed" <<<"$out" &&
           ! grep -q "Transport: qpx" <<<"$out" &&
           [ "$(grep -c '^qpx: ' <<<"$out")" -eq 1 ]; then
            qpx_pass "UCX $v's qpx in the installed UCX $installed: refused, one message"
        else
            qpx_fail "UCX $v's qpx in the installed UCX $installed was not refused cleanly"
            grep -i qpx <<<"$out" | head -3
        fi
    fi
    if [ -f "$QPX_BUILDDIR/src/.libs/libuct_qpx.so" ]; then
        out=$(run_env LD_PRELOAD="$QPX_BUILDDIR/src/.libs/libuct_qpx.so" \
              "$prefix/bin/ucx_info" -d 2>&1)
        if grep -q "qpx: built for UCX $installed but this process loaded UCX $v" <<<"$out" &&
           ! grep -q "Transport: qpx" <<<"$out"; then
            qpx_pass "the installed UCX's qpx in UCX $v: refused, one message"
        else
            qpx_fail "the installed UCX's qpx in UCX $v was not refused cleanly"
            grep -i qpx <<<"$out" | head -3
        fi
    fi
}

qpxrun_v() {
    QPX_MODULE="$qb/src/.libs/libuct_qpx.so" run_env "$qb/contrib/qpxrun" --soft --quiet "$@"
}

check_ucp_am() {
    local v=$1 tls
    gcc -O1 -I"$prefix/include" -o "$tmp/am-$v" "$top/test/integration/qpx_ucp_am.c" \
        -L"$prefix/lib" -lucp -lucs 2>"$tmp/gcc.out" ||
        { qpx_fail "UCX $v: qpx_ucp_am does not build: $(head -n 1 "$tmp/gcc.out")"; return; }
    # qpx_rc,qpx_dc: no qpx_ud for wireup. UCP 1.19 and later take a
    # transport without async callbacks as auxiliary when none has them,
    # and qpx_dc's async progress is off there (UCX_QPX_DC_ASYNC_PROGRESS
    # auto); UCP 1.13 takes only one with them, which qpx_dc is there
    # (qpx-ucp-am.sh checks it, docs/configuration.md)
    for tls in qpx_rc,qpx_ud qpx_rc,qpx_dc qpx_ud qpx_dc qpx; do
        am_case "UCX $v" "$qb" "$tmp/am-$v" "$tls"
    done
}

check_uct_ep_peer() {
    local v=$1 tl summary ret it=$top/test/integration
    # uct_ep_is_connected is declared in uct_v2.h, which UCX does not install
    gcc -O1 -I"$prefix/include" -I"$src/src" -o "$tmp/peer-$v" "$it/qpx_uct_ep_peer.c" \
        "$it/qpx_uct_open.c" -L"$prefix/lib" -luct -lucs 2>"$tmp/gcc.out" ||
        { qpx_fail "UCX $v: qpx_uct_ep_peer does not build: $(head -n 1 "$tmp/gcc.out")"; return; }
    for tl in qpx_rc qpx_ud qpx_dc qpx; do
        qpxrun_v timeout 120 "$tmp/peer-$v" -x "$tl" -d "$QPX_DEV" >"$tmp/peer.out" 2>&1
        ret=$?
        summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/peer.out")
        if [ $ret -eq 0 ] && [ -n "$summary" ] && [ "${summary#* passed, }" = "0 failed" ] &&
           grep -q 'is connected to R' "$tmp/peer.out"; then
            qpx_pass "UCX $v: uct_ep_is_connected and uct_ep_check with a completion over $tl: $summary"
        else
            qpx_fail "UCX $v: uct_ep_is_connected/uct_ep_check over $tl (exit $ret): ${summary:-no summary}"
            grep -E '^FAIL' "$tmp/peer.out" | head -n 8
        fi
    done
}

check_ucp_cm() {
    local v=$1 ex=$src/examples port spid crc
    gcc -O1 -I"$ex" -I"$prefix/include" -o "$tmp/cs-$v" "$ex/ucp_client_server.c" \
        -L"$prefix/lib" -lucp -lucs 2>"$tmp/gcc.out" ||
        { qpx_fail "UCX $v: ucp_client_server does not build: $(head -n 1 "$tmp/gcc.out")"; return; }
    : >"$tmp/srv.log"
    qpxrun_v env UCX_TLS=qpx_rc UCX_SOCKADDR_TLS_PRIORITY=qpx stdbuf -oL \
        timeout 90 "$tmp/cs-$v" -p 0 >"$tmp/srv.log" 2>&1 &
    spid=$!
    qpx_wait_output "$tmp/srv.log" 'server is listening on IP .* port [0-9]+' "$spid"
    port=$(sed -n 's/.*server is listening on IP .* port \([0-9][0-9]*\).*/\1/p' "$tmp/srv.log" | head -n 1)
    if [ -z "$port" ]; then
        kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
        qpx_fail "UCX $v: the ucp_client_server server did not listen through qpx's CM"
        tail -n 5 "$tmp/srv.log"
        return
    fi
    qpxrun_v env UCX_TLS=qpx_rc UCX_SOCKADDR_TLS_PRIORITY=qpx timeout 60 \
        "$tmp/cs-$v" -a 127.0.0.1 -p "$port" >"$tmp/cli.log" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    if [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$tmp/cli.log"; then
        qpx_pass "UCX $v: UCP client/server through qpx's CM over qpx_rc: the server's message arrived intact"
    else
        qpx_fail "UCX $v: UCP client/server through qpx's CM (client exit $crc)"
        grep -v 'INFO\|netlink\|sock.c' "$tmp/cli.log" | tail -n 6
    fi
}

check_perftest() {
    local v=$1 port spid out
    port=$(qpx_free_port)
    qpxrun_v timeout 120 "$prefix/bin/ucx_perftest" -x qpx_rc -d "$QPX_DEV" -t put_bw -D zcopy \
        -s 65536 -p "$port" -n 2000 >/dev/null 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    out=$(qpxrun_v timeout 120 "$prefix/bin/ucx_perftest" -x qpx_rc -d "$QPX_DEV" \
          -t put_bw -D zcopy -s 65536 -p "$port" -n 2000 127.0.0.1 2>&1)
    wait "$spid"
    if grep -qE '^ *Final: +2000 ' <<<"$out"; then
        qpx_run_pass "UCX $v: ucx_perftest put_bw pair over qpx_rc, 64 KiB: $(grep -E '^ *Final:' <<<"$out" | awk '{print $6 " MB/s"}')"
    else
        qpx_fail "UCX $v: ucx_perftest put_bw over qpx_rc"
        tail -n 5 <<<"$out"
    fi
}

# check_public_headers VERSION: qpx built against the release's installed
# (public) headers alone, as a site with UCX packages builds it: no
# --with-ucx-src, the internals declared by src/ucs/compat/; loaded, it
# lists the four transports, and UCP moves data over it
check_public_headers() {
    local v=$1 pb out missing tls
    pb=$QPX_BUILDDIR/ucx-$v-public
    mkdir -p "$pb"
    if [ ! -f "$pb/Makefile" ]; then
        (cd "$pb" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
             "$top/configure" --enable-werror) >"$pb/configure.out" 2>&1 ||
            { qpx_fail "UCX $v: configure against its installed headers: $(tail -n 1 "$pb/configure.out")"; return; }
    fi
    if grep -q "^#define QPX_UCX_INTERNAL_HEADERS" "$pb/config.h" ||
       ! grep -q "UCX: .*src/ucs/compat/ucx-" "$pb/configure.out"; then
        qpx_fail "UCX $v: the build in $pb does not use src/ucs/compat/"
        return
    fi
    if ! (cd "$pb" && make -j2 -C src libuct_qpx.la all-local && make -C contrib) \
            >"$pb/make.out" 2>&1; then
        qpx_fail "UCX $v: qpx does not build against its installed headers alone"
        grep -E 'error|warning' "$pb/make.out" | head
        return
    fi
    qpx_pass "UCX $v: qpx builds with -Werror against its installed headers alone ($(sed -n 's/.*UCX: *//p' "$pb/configure.out"))"
    out=$(QPX_MODULE="$pb/src/.libs/libuct_qpx.so" run_env \
          "$pb/contrib/qpxrun" --soft --quiet "$prefix/bin/ucx_info" -d 2>&1)
    missing=$(qpx_tls_missing "$out")
    if [ -n "$missing" ]; then
        qpx_fail "UCX $v: the installed-headers build: ucx_info -d lacks$missing"
        grep -i 'qpx\|error' <<<"$out" | head -5
        return
    fi
    qpx_pass "UCX $v: the installed-headers build: ucx_info -d lists qpx_rc, qpx_ud, qpx_dc, qpx"
    [ -x "$tmp/am-$v" ] || return
    for tls in qpx_rc,qpx_ud qpx; do
        am_case "UCX $v: the installed-headers build" "$pb" "$tmp/am-$v" "$tls"
    done
}

check_mpi() {
    local v=$1 out rc regs
    command -v mpicc >/dev/null || { echo "SKIP: UCX $v: no mpicc"; return; }
    mpicc -O2 -o "$tmp/a2a" "$top/test/integration/qpx_mpi_alltoall.c" 2>"$tmp/gcc.out" ||
        { qpx_fail "UCX $v: qpx_mpi_alltoall does not build"; return; }
    # UCX_LOG_LEVEL=debug: each rank's qpx says which UCX it registered in
    # (under LD_PRELOAD, mpirun and its daemon's too: at least 4)
    # shellcheck disable=SC2086
    QPX_MODULE="$qb/src/.libs/libuct_qpx.so" run_env UCX_TLS=qpx,self \
        UCX_LOG_LEVEL=debug "$qb/contrib/qpxrun" --soft --quiet \
        timeout 300 mpirun $QPX_MPIRUN_ARGS -x LD_LIBRARY_PATH -x LD_PRELOAD \
        -x UCX_PLUGIN_PATH -x UCX_TLS -x UCX_NET_DEVICES -x UCX_LOG_LEVEL \
        -np 4 "$tmp/a2a" 10 65536 >"$tmp/mpi.out" 2>&1
    rc=$?
    regs=$(grep -c "qpx component registered in UCX $v" "$tmp/mpi.out")
    if [ $rc -eq 0 ] && grep -q '^ALLTOALL OK' "$tmp/mpi.out" && [ "$regs" -ge 4 ]; then
        qpx_pass "UCX $v: Open MPI alltoall, 4 ranks over qpx (qpx registered in UCX $v by $regs processes): $(grep '^ALLTOALL OK' "$tmp/mpi.out")"
    else
        qpx_fail "UCX $v: Open MPI alltoall over qpx (exit $rc, $regs processes registered qpx in UCX $v, 4 ranks expected)"
        grep -v ' DEBUG \| DIAG \|netlink\|sock.c' "$tmp/mpi.out" | tail -n 8
    fi
}

# check_mlx5 VERSION: the release's own rc_mlx5, ud_mlx5 and dc_mlx5 on
# softverbs' mlx5 personality (SOFTVERBS_MLX5=1): listed by ucx_info -d with
# no error, and every UCT operation and size class, data checked
# (qpx_uct_integrity -P), over each; then qpx_rc, qpx_ud and qpx_dc on the
# same device (their direct path). UCX_IB_INDIRECT_ATOMIC=n for UCX's own:
# in 1.19 and 1.22 (not 1.13) an mlx5 memory domain without DEVX (softverbs
# has none, nor has an HCA whose kernel lacks it) packs the region's own
# rkey as its atomic key and still announces an atomic MR id (the process
# id's low byte), so rc_mlx5 and dc_mlx5 send each atomic 8 x id bytes past
# its address, and the checks see the wrong word change (docs/softverbs.md)
check_mlx5() {
    local v=$1 tl out summary ret opt it=$top/test/integration
    local -a ia
    out=$(SOFTVERBS_MLX5=1 qpxrun_v "$prefix/bin/ucx_info" -d 2>&1)
    if grep -q "Transport: rc_mlx5" <<<"$out" && grep -q "Transport: ud_mlx5" <<<"$out" &&
       grep -q "Transport: dc_mlx5" <<<"$out" && ! grep -q "UCX  ERROR" <<<"$out"; then
        qpx_pass "UCX $v, SOFTVERBS_MLX5=1: ucx_info -d lists rc_mlx5, ud_mlx5, dc_mlx5 and logs no error"
    else
        qpx_fail "UCX $v, SOFTVERBS_MLX5=1: ucx_info -d: $(grep -E 'Transport: .*mlx5' <<<"$out" | tr -s ' ' | tr '\n' ';')"
        grep -m3 "UCX  ERROR" <<<"$out"
    fi
    gcc -O1 -I"$prefix/include" -I"$src/src" -o "$tmp/integ-$v" "$it/qpx_uct_integrity.c" \
        "$it/qpx_uct_integrity_ops.c" "$it/qpx_uct_integrity_params.c" "$it/qpx_uct_open.c" \
        -L"$prefix/lib" -luct -lucs 2>"$tmp/gcc.out" ||
        { qpx_fail "UCX $v: qpx_uct_integrity does not build: $(head -n 1 "$tmp/gcc.out")"; return; }
    for tl in rc_mlx5 ud_mlx5 dc_mlx5 qpx_rc qpx_ud qpx_dc; do
        case $tl in
        *_mlx5) opt=-P; ia=(UCX_IB_INDIRECT_ATOMIC=n) ;;
        *)      opt=;   ia=() ;;
        esac
        # shellcheck disable=SC2086
        SOFTVERBS_MLX5=1 qpxrun_v env "${ia[@]}" timeout 300 "$tmp/integ-$v" $opt \
            -x "$tl" -d "$QPX_DEV" >"$tmp/integ.out" 2>&1
        ret=$?
        summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/integ.out" | tail -n 1)
        if [ $ret -eq 0 ] && [[ $summary =~ ^[1-9][0-9]*\ passed,\ 0\ failed ]]; then
            qpx_pass "UCX $v, SOFTVERBS_MLX5=1: every UCT operation and size, data checked, over $tl: $summary"
        else
            qpx_fail "UCX $v, SOFTVERBS_MLX5=1: qpx_uct_integrity over $tl (exit $ret): ${summary:-no summary}"
            grep -E '^FAIL|rror|ssert' "$tmp/integ.out" | head -n 6
        fi
    done
}

for v in $versions; do
    t0=$(date +%s)
    say "UCX $v: libraries (contrib/ucx-build.sh)"
    res=$(bash "$here/ucx-build.sh" "$v" 2>&1)
    rc=$?
    echo "$res" | sed 's/^/    /'
    if [ $rc -eq 77 ]; then
        echo "SKIP: UCX $v: $(grep '^SKIP' <<<"$res" | head -n 1)"
        continue
    elif [ $rc -ne 0 ]; then
        qpx_fail "UCX $v: the UCX build failed"
        continue
    fi
    eval "$(tail -n 1 <<<"$res" | sed 's/UCX_PREFIX=/prefix=/; s/UCX_SRC=/src=/; s/UCX_BUILD=/bld=/')"
    tried=$((tried + 1))
    say "UCX $v: ready $(elapsed "$t0")"
    if ! build_qpx "$v"; then
        qpx_fail "UCX $v: qpx does not build against it"
        continue
    fi
    qpx_pass "UCX $v: qpx builds against it with -Werror"
    t0=$(date +%s); check_load "$v";     say "UCX $v: loading $(elapsed "$t0")"
    t0=$(date +%s); check_ucp_am "$v";   say "UCX $v: UCP AM $(elapsed "$t0")"
    t0=$(date +%s); check_uct_ep_peer "$v"; say "UCX $v: UCT endpoint's peer $(elapsed "$t0")"
    t0=$(date +%s); check_ucp_cm "$v";   say "UCX $v: UCP through qpx's CM $(elapsed "$t0")"
    t0=$(date +%s); check_perftest "$v"; say "UCX $v: ucx_perftest $(elapsed "$t0")"
    t0=$(date +%s); check_mlx5 "$v";     say "UCX $v: its mlx5 transports and qpx's direct path $(elapsed "$t0")"
    t0=$(date +%s); check_mpi "$v";      say "UCX $v: Open MPI $(elapsed "$t0")"
    t0=$(date +%s); check_public_headers "$v"; say "UCX $v: built from its installed headers $(elapsed "$t0")"
done

[ $tried -eq 0 ] && { echo "SKIP: no UCX release to try (sources absent)"; exit 77; }
qpx_finish
