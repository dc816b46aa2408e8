# Shared helpers for the softverbs test and benchmark scripts (sourced after
# lib.sh). They point programs at the replacement libraries, isolate the
# softverbs registry per run, and run client/server pairs under timeout with
# every child reaped on exit.

SVT_DEV=${SVT_DEVICE:-softverbs0}
SVT_PIDS=""
SVT_TMP=""

svt_cleanup() {
    for pid in $SVT_PIDS; do
        kill "$pid" 2>/dev/null
    done
    for pid in $SVT_PIDS; do
        wait "$pid" 2>/dev/null
    done
    SVT_PIDS=""
    [ -n "$SVT_TMP" ] && rm -rf "$SVT_TMP"
    [ -n "$SVT_KEEP_SHM" ] || svt_shm_remove
}

# Environment for programs that must run over softverbs; skips if it is not
# built. SVT_REGISTRY names this run's private registry.
svt_env_setup() {
    : "${SOFTVERBS_LIBDIR:=${QPX_BUILDDIR:-.}/src/softverbs/.libs}"
    if [ ! -e "$SOFTVERBS_LIBDIR/libibverbs.so.1" ]; then
        qpx_skip_all "softverbs not built: no $SOFTVERBS_LIBDIR/libibverbs.so.1"
    fi
    LD_LIBRARY_PATH=$SOFTVERBS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH SOFTVERBS_LIBDIR
    # a private registry file for this run (removed on exit)
    SOFTVERBS_SHM=/dev/shm/svt-$$-$(date +%s)
    SVT_REGISTRY=$SOFTVERBS_SHM
    export SOFTVERBS_SHM
    SVT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/svt.XXXXXX")
    trap svt_cleanup EXIT
    trap 'exit 1' INT TERM
    # the softverbs tools (softverbs-stat, setup) live next to the libraries
    for d in "$SOFTVERBS_LIBDIR/.." "$SOFTVERBS_LIBDIR"; do
        [ -d "$d" ] && PATH=$PATH:$d
    done
    export PATH
}

svt_shm_remove() {
    [ -n "$SVT_REGISTRY" ] && rm -f "$SVT_REGISTRY" "$SVT_REGISTRY".* 2>/dev/null
    return 0
}

# The device must be listed by the replacement library
svt_need_device() {
    if ! timeout 10 ibv_devices 2>/dev/null | grep -qw "$SVT_DEV"; then
        qpx_skip_all "device $SVT_DEV not listed by ibv_devices over $SOFTVERBS_LIBDIR"
    fi
}

# UCX skips a device without /dev/infiniband/<ibv_device.dev_name>: sets
# SVT_DEVNODE, or prints why it is missing and returns 1
svt_devnode_ok() {
    SVT_DEVNODE=$("${QPX_TESTDIR:-.}/softverbs_conformance" --dev-node 2>/dev/null)
    if [ -z "$SVT_DEVNODE" ]; then
        echo "SKIP: cannot tell the device node of $SVT_DEV"
        return 1
    fi
    if [ ! -e "$SVT_DEVNODE" ]; then
        echo "SKIP: UCX cases: $SVT_DEVNODE missing, UCX ignores $SVT_DEV (as root: softverbs-setup, or mkdir -p /dev/infiniband && ln -sf /dev/null $SVT_DEVNODE)"
        return 1
    fi
    return 0
}

# Extra options for RoCE link layers (SOFTVERBS_LINK_LAYER=ethernet): a GRH
# is needed, from the GID a careful user names, as UCX and qpx choose it:
# the first RoCE v2 GID of an IPv4 address, else the first RoCE v2, else 0
svt_link_opts() {
    SVT_PP_GID=""
    SVT_PT_GID=""
    out=$(timeout 10 ibv_devinfo -v -d "$SVT_DEV" 2>/dev/null)
    echo "$out" | grep -q 'link_layer:.*Ethernet' || return 0
    SVT_GID_INDEX=$(svt_roce_gid "$out" '::ffff:[0-9.]*, RoCE v2')
    [ -n "$SVT_GID_INDEX" ] || SVT_GID_INDEX=$(svt_roce_gid "$out" 'RoCE v2')
    SVT_GID_INDEX=${SVT_GID_INDEX:-0}
    SVT_PP_GID="-g $SVT_GID_INDEX"
    SVT_PT_GID="-x $SVT_GID_INDEX"
}

# svt_roce_gid DEVINFO PATTERN: the index of the first GID line of
# `ibv_devinfo -v` (port 1) matching PATTERN
svt_roce_gid() {
    echo "$1" | sed -n 's/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*\(.*\)/\1 \2/p' |
        grep -E "$2" | head -1 | cut -d' ' -f1
}

# svt_cm_tag: the <registry> part of a softverbs CM socket name, for
# SOFTVERBS_SHM (FNV-1a of its path, as sv_cm_sock_name computes it)
svt_cm_tag() {
    python3 -c 'import sys
t = 2166136261
for c in sys.argv[1].encode():
    t = ((t ^ c) * 16777619) & 0xffffffff
print("%08x" % t)' "${SOFTVERBS_SHM:-/dev/shm/softverbs}"
}

# svt_wait_cm_listen PORT: until a softverbs rdma_cm id of this registry
# listens on PORT (any address, any port space). softverbs' CM listens on
# an abstract Unix socket named "@softverbs-cm-<registry>-<ps>-<addr>-<port>",
# listed in /proc/net/unix with the listening flag (0x10000) once listen(2)
# returned: a client that dials earlier is rejected ("invalid service ID",
# 8), as on a fabric. The registry part matters: a test running beside
# this one, with a registry of its own, may listen on the same port. Up to
# 60 s: beside an MPI test on 2 cores a server can take seconds to start.
# svt_rc_pingpong_once VAR=VALUE DEV_SRV DEV_CLI: one ibv_rc_pingpong
# pair of 5 iterations with VAR=VALUE in both (30 s each at most); the
# client's exit status in SVT_PP_RC, its output in $SVT_TMP/pp.cli. For
# settings that lose every request: the client must fail, not hang.
svt_rc_pingpong_once() {
    pp_port=$(qpx_free_port)
    timeout 30 env "$1" ibv_rc_pingpong -d "$2" -g 0 -n 5 -p "$pp_port" \
        >"$SVT_TMP/pp.srv" 2>&1 &
    pp_spid=$!
    qpx_wait_port "$pp_port"
    timeout 30 env "$1" ibv_rc_pingpong -d "$3" -g 0 -n 5 -p "$pp_port" \
        127.0.0.1 >"$SVT_TMP/pp.cli" 2>&1
    SVT_PP_RC=$?
    kill "$pp_spid" 2>/dev/null; wait "$pp_spid" 2>/dev/null
    return 0
}

svt_wait_cm_listen() {
    tag=$(svt_cm_tag)
    i=0
    while [ $i -lt 1200 ]; do
        awk -v p="$1" -v t="$tag" '$4 == "00010000" &&
                       $8 ~ ("^@softverbs-cm-" t "-.*-" p "$") \
                       { f = 1 } END { exit !f }' /proc/net/unix && return 0
        sleep 0.05
        i=$((i + 1))
    done
    echo "  (nothing listened on rdma_cm port $1 within 60 s)"
    return 1
}

# svt_run_pair NAME SECONDS PATTERN "SERVER CMD" "CLIENT CMD"
# The commands are split on blanks (use `env VAR=x prog ...` for variables).
# Runs the server in the background and the client against it, both under
# timeout. Passes when both exit 0 and the client's output matches the
# extended regex PATTERN; prints both outputs' tails otherwise. Waits for the
# server to listen on TCP port $SVT_LISTEN_PORT, on rdma_cm port
# $SVT_CM_PORT, or to print /$SVT_READY/ (run it under stdbuf -oL): one of
# them must be set, since a client that dials first fails. The programs
# are others'
# benchmarks and examples that check no payload: a pass is a run
# (qpx_run_pass); the conformance program checks data itself.
svt_run_pair() {
    name=$1; secs=$2; pattern=$3; srv_cmd=$4; cli_cmd=$5
    if [ -z "$SVT_LISTEN_PORT$SVT_CM_PORT$SVT_READY" ]; then
        qpx_fail "$name: svt_run_pair called with no way to wait for the server"
        return 1
    fi
    # The budgets are for an idle 2-core machine; two spinning processes
    # that share a loaded core meet only at scheduler ticks, so scale them
    # (QPX_TIMEOUT_SCALE, default 3): a hang still fails, just later.
    secs=$((secs * ${QPX_TIMEOUT_SCALE:-3}))
    srv_file=$SVT_TMP/$(echo "$name" | tr ' /' '__').srv
    cli_file=${srv_file%.srv}.cli
    # emptied first: a background job's redirection truncates the file only
    # once the job runs, and the wait below may read it before that
    : >"$srv_file"
    # shellcheck disable=SC2086
    timeout -k 2 "$secs" $srv_cmd >"$srv_file" 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    if [ -n "$SVT_LISTEN_PORT" ]; then
        qpx_wait_port "$SVT_LISTEN_PORT"
    elif [ -n "$SVT_CM_PORT" ]; then
        svt_wait_cm_listen "$SVT_CM_PORT"
    elif [ -n "$SVT_READY" ]; then
        qpx_wait_output "$srv_file" "$SVT_READY" "$spid"
    fi
    # shellcheck disable=SC2086
    timeout -k 2 "$secs" $cli_cmd >"$cli_file" 2>&1
    crc=$?
    if [ $crc -ne 0 ]; then
        # the server may wait forever for a client that is gone
        sleep 1
        kill "$spid" 2>/dev/null
    fi
    wait "$spid"
    src=$?
    SVT_PIDS=$(echo "$SVT_PIDS" | sed "s/ $spid\b//")
    SVT_OUT_SRV=$srv_file
    SVT_OUT_CLI=$cli_file
    why=""
    [ $crc -eq 124 ] && why="client timed out after ${secs}s; "
    [ $src -eq 124 ] && why="${why}server timed out after ${secs}s; "
    [ $crc -ne 0 ] && why="${why}client exit $crc; "
    [ $src -ne 0 ] && why="${why}server exit $src; "
    if [ -z "$why" ] && ! grep -Eq "$pattern" "$cli_file"; then
        why="client output lacks /$pattern/; "
    fi
    # SVT_RETRY: a failure of the client's own, matched in its output (a
    # known defect of the program, not of the device): the pair runs once
    # more, and says so
    if [ -n "$why" ] && [ -n "$SVT_RETRY" ] && [ -z "$SVT_RETRIED" ] &&
       grep -Eq "$SVT_RETRY" "$cli_file"; then
        echo "  ($name: ${why}the client's known failure /$SVT_RETRY/: run once more)"
        SVT_RETRIED=1
        svt_run_pair "$@"
        rc=$?
        SVT_RETRIED=""
        return $rc
    fi
    # SVT_REJECT: a pattern neither side may print (a tool's data check)
    if [ -z "$why" ] && [ -n "$SVT_REJECT" ] &&
       grep -Eq "$SVT_REJECT" "$srv_file" "$cli_file"; then
        why="output shows /$SVT_REJECT/; "
    fi
    if [ -z "$why" ] && [ -n "$SVT_REJECT" ]; then
        # the tool checked the data it received (and printed nothing of
        # SVT_REJECT)
        qpx_pass "$name (the tool's own data check)"
        return 0
    fi
    if [ -z "$why" ]; then
        qpx_run_pass "$name"
        return 0
    fi
    qpx_fail "$name (${why%; })"
    echo "  --- server: $srv_cmd"
    sed 's/^/  | /' "$srv_file" | tail -n 15
    echo "  --- client: $cli_cmd"
    sed 's/^/  | /' "$cli_file" | tail -n 15
    return 1
}

# svt_check_released NAME: once every client has exited (or been killed),
# softverbs-stat must show no live object on the host within 3 s
svt_check_released() {
    if ! command -v softverbs-stat >/dev/null; then
        qpx_fail "$1 (softverbs-stat not found next to $SOFTVERBS_LIBDIR)"
        return 1
    fi
    i=0
    while [ $i -lt 30 ]; do
        st=$(timeout 10 softverbs-stat 2>&1 | grep '^total')
        if echo "$st" | grep -Eq ' qp=0 .* cq=0 srq=0 mr=0 '; then
            qpx_pass "$1"
            return 0
        fi
        sleep 0.1
        i=$((i + 1))
    done
    qpx_fail "$1 (softverbs-stat after 3 s: ${st:-no output})"
    return 1
}
