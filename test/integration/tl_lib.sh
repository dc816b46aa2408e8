# The per-transport test library (sourced after lib.sh): the ucx_perftest
# matrix (tl-perftest.sh) and the data-integrity runs (tl_integrity) take
# the transport from QPX_TL and the device from QPX_DEV (default
# softverbs0:1), so that a qpx transport joins them with one line, e.g.
#   QPX_TL=qpx_ud . "$QPX_SRCDIR/test/integration/tl-perftest.sh"

# tl_setup DEFAULT_TL: QPX_TL (or DEFAULT_TL), softverbs first in the
# library path, a temporary directory TL_TMP
tl_setup() {
    QPX_TL=${QPX_TL:-$1}
    QPX_TL_ENV=$(echo "$QPX_TL" | tr a-z A-Z)  # UCX_<this>_* variables
    QPX_DEV=${QPX_DEV:-softverbs0:1}
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
    TL_TMP=$(mktemp -d)
    trap 'rm -rf "$TL_TMP"' EXIT
}

# tl_pair NAME ARGS...: ucx_perftest server and client with ARGS; passes
# when both exit 0 and the client printed its final line
tl_pair() {
    name=$1; shift
    port=$(qpx_free_port)
    LD_PRELOAD=$QPX_MODULE timeout 120 ucx_perftest -p "$port" "$@" \
        >"$TL_TMP/srv.log" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    LD_PRELOAD=$QPX_MODULE timeout 120 ucx_perftest -p "$port" "$@" 127.0.0.1 \
        >"$TL_TMP/cli.log" 2>&1
    crc=$?
    wait $spid
    src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "^Final:" "$TL_TMP/cli.log"; then
        qpx_run_pass "$name: $(grep '^Final:' "$TL_TMP/cli.log" | awk '{print $4 " us, " $7 " MB/s, " $9 " msg/s"}')"
    else
        qpx_fail "$name (client exit $crc, server exit $src)"
        for f in "$TL_TMP/cli.log" "$TL_TMP/srv.log"; do echo "---- $f"; tail -n 8 "$f"; done
    fi
}

# The capability line of ucx_info -d for the transport, e.g. "put_zcopy"
tl_has_cap() {
    LD_PRELOAD=$QPX_MODULE ucx_info -d -t "$QPX_TL" 2>/dev/null |
        grep -A40 "Transport: $QPX_TL" | grep -q "$1"
}

# tl_integrity NAME [ENV...]: the two-process UCT data-integrity program
# (qpx_uct_integrity: every operation the transport advertises, each size
# class, payload checked) over QPX_TL with the environment ENV; a
# descriptor that UCX's pool cleanup finds not returned fails it too;
# TL_INTEGRITY_ARGS: more options of the program (-D: the target's device)
tl_integrity() {
    name=$1; shift
    prog="$QPX_TESTDIR/qpx_uct_integrity"
    [ -x "$prog" ] || qpx_skip_all "$prog not built"
    # shellcheck disable=SC2086 # TL_INTEGRITY_ARGS: more options, words
    env "$@" LD_PRELOAD="$QPX_MODULE" timeout 300 "$prog" -x "$QPX_TL" \
        -d "$QPX_DEV" ${TL_INTEGRITY_ARGS:-} >"$TL_TMP/out" 2>&1
    ret=$?
    if [ $ret -eq 77 ]; then
        cat "$TL_TMP/out"; qpx_skip_all "$QPX_TL not available"
    fi
    summary=$(tail -1 "$TL_TMP/out")
    leaks=$(grep -c "was not returned to mpool" "$TL_TMP/out")
    if [ $ret -eq 0 ] && [ "$leaks" -eq 0 ]; then
        qpx_pass "$name: $summary"
        return 0
    fi
    if [ $ret -eq 0 ]; then
        grep -m 5 "was not returned to mpool" "$TL_TMP/out"
        qpx_fail "$name: $leaks objects not returned to their pool at close"
        return 1
    fi
    # Both processes (initiator and forked target) write to this file;
    # print all of it so that a failure explains itself
    case $ret in
    124) why="timed out after 300 s" ;;
    1)   why="a check failed" ;;
    *)   why="exit $ret" ;;
    esac
    echo "---- output of both sides ($name, env: $*)"
    tail -200 "$TL_TMP/out"
    echo "----"
    qpx_fail "$name: $why: $(grep -c '^FAIL' "$TL_TMP/out") FAIL lines, last line: $summary"
}

# tl_flood NAME [ENV...]: qpx_uct_flood over QPX_TL with the environment ENV:
# 16 endpoints x 20000 active messages into one interface, every message
# once and in order per endpoint, no endpoint failed
tl_flood() {
    name=$1; shift
    prog="$QPX_TESTDIR/qpx_uct_flood"
    [ -x "$prog" ] || qpx_skip_all "$prog not built"
    env "$@" LD_PRELOAD="$QPX_MODULE" timeout 200 "$prog" -x "$QPX_TL" \
        -d "$QPX_DEV" -e 16 -n 20000 >"$TL_TMP/out" 2>&1
    ret=$?
    [ $ret -eq 77 ] && { cat "$TL_TMP/out"; qpx_skip_all "$QPX_TL not available"; }
    if [ $ret -eq 0 ]; then
        qpx_pass "$name: $(grep "endpoints x" "$TL_TMP/out")"
    else
        echo "---- output ($name, env: $*, exit $ret)"; tail -40 "$TL_TMP/out"
        qpx_fail "$name (exit $ret)"
    fi
}

# tl_peers NAME ENV... -- ARGS...: qpx_dc_peers over QPX_TL, the program's
# own checks each one a case
tl_peers() {
    prog=$QPX_TESTDIR/qpx_dc_peers
    [ -x "$prog" ] || qpx_skip_all "$prog not built"
    name=$1; shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs LD_PRELOAD="$QPX_MODULE" timeout 300 "$prog" -x "$QPX_TL" \
        -d "$QPX_DEV" "$@" >"$TL_TMP/out" 2>&1
    ret=$?
    grep -E "^(PASS|FAIL)" "$TL_TMP/out" | sed "s/^\(PASS\|FAIL\): /\1: $name: /" |
    while read -r line; do echo "$line"; done
    QPX_PASS=$((QPX_PASS + $(grep -c "^PASS" "$TL_TMP/out")))
    QPX_FAIL=$((QPX_FAIL + $(grep -c "^FAIL" "$TL_TMP/out")))
    if [ $ret -ne 0 ] && ! grep -q "^FAIL" "$TL_TMP/out"; then
        qpx_fail "$name: exit $ret"
        tail -n 8 "$TL_TMP/out"
    fi
}

# tl_prog_each PROG [VAR=VALUE... --] [ARGS... ---] TL...: the UCT test
# program PROG (one process, "N passed, N failed" last) with
# `-x TL -d $QPX_DEV ARGS` and the variables, preloaded, on each TL that
# softverbs offers; its PASS/FAIL lines shown with TL, one check per TL on
# its exit status (the program's own summary in the check's line)
tl_prog_each() {
    prog=$1; shift
    [ -x "$prog" ] || qpx_skip_all "$prog not built"
    envs=""; args=""
    case " $* " in *" -- "*)
        while [ "$1" != "--" ]; do envs="$envs $1"; shift; done; shift ;;
    esac
    case " $* " in *" --- "*)
        while [ "$1" != "---" ]; do args="$args $1"; shift; done; shift ;;
    esac
    for tl in "$@"; do
        qpx_has_tl "$tl" || continue
        # shellcheck disable=SC2086
        env $envs LD_PRELOAD="$QPX_MODULE" timeout 300 "$prog" -x "$tl" \
            -d "$QPX_DEV" $args >"$TL_TMP/out" 2>&1
        rc=$?
        grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
        qpx_check "$tl: $(tail -n 1 "$TL_TMP/out") (exit $rc)" [ $rc -eq 0 ]
    done
}
