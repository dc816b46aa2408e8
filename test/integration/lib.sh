# Shared helpers for integration test scripts (sourced).
# Each test prints one line per case and ends with "N passed, N failed";
# it exits 0 when all passed, 1 when any failed, 77 when it could not run.

QPX_PASS=0
QPX_FAIL=0
QPX_RUNS=0

qpx_pass() { QPX_PASS=$((QPX_PASS + 1)); echo "PASS: $*"; }
# qpx_run_pass NAME: a case that passed because a program (a benchmark such
# as ucx_perftest or perftest) ran to its end and printed its result: no
# payload was checked. Counted as passed, labelled as a run; the closing
# line says how many of the passed are runs.
qpx_run_pass() {
    QPX_PASS=$((QPX_PASS + 1)); QPX_RUNS=$((QPX_RUNS + 1))
    echo "PASS (run, no data check): $*"
}
qpx_fail() { QPX_FAIL=$((QPX_FAIL + 1)); echo "FAIL: $*"; }

# qpx_check NAME CMD...: run CMD, pass if it exits 0
qpx_check() {
    name=$1; shift
    if "$@"; then qpx_pass "$name"; else qpx_fail "$name (exit $?)"; fi
}

qpx_skip_all() { echo "SKIP: $*"; exit 77; }

# qpx_has_tl TL: the module offers transport TL over softverbs (qpx_dc is
# built only with libmlx5); says SKIP for the cases it guards when not
qpx_has_tl() {
    if LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
       LD_PRELOAD="$QPX_MODULE" ucx_info -d 2>/dev/null |
       grep -q "Transport: $1\$"; then
        return 0
    fi
    echo "SKIP: the $1 cases: $1 not built (no libmlx5)"
    return 1
}

qpx_finish() {
    runs=""
    [ "$QPX_RUNS" -gt 0 ] && runs=" ($QPX_RUNS of the passed are runs: no data checked)"
    echo "$QPX_PASS passed, $QPX_FAIL failed$runs"
    [ "$QPX_FAIL" -eq 0 ] && [ "$QPX_PASS" -gt 0 ] && exit 0
    exit 1
}

# Open MPI over UCX only: pml ucx and osc ucx, no BTL but self, every UCX
# transport and device allowed (UCX_TLS / UCX_NET_DEVICES of the run
# choose), ranks may outnumber cores: mpirun $QPX_MPIRUN_ARGS -np N PROG
QPX_MPIRUN_ARGS="--allow-run-as-root --oversubscribe --mca pml ucx --mca osc ucx
                 --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self"

# A free TCP port on loopback for client/server tests
qpx_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# qpx_wait_port PORT: until something listens on TCP port PORT, without
# connecting to it (the servers here accept exactly one connection). Up to
# 60 s: beside an MPI test on 2 cores a server can take seconds to start,
# and a client that dials a port nobody listens on yet fails at once
qpx_wait_port() {
    i=0
    while [ $i -lt 600 ]; do
        ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.1
        i=$((i + 1))
    done
    echo "  (nothing listened on TCP port $1 within 60 s)"
    return 1
}

# qpx_alive PID: the process runs (neither gone nor a zombie, which kill -0
# still finds: a child the script has not waited for yet)
qpx_alive() {
    case $(ps -o stat= -p "$1" 2>/dev/null) in
    ""|Z*) return 1 ;;
    esac
    return 0
}

# qpx_wait_output FILE ERE [PID]: until FILE (a server's output, written
# line by line: stdbuf -oL) matches ERE, up to 60 s; with PID, no longer
# than that server runs (qpx_alive).
# The caller empties FILE before it starts the server: `prog >FILE &`
# truncates it only once the background job runs
qpx_wait_output() {
    i=0
    while [ $i -lt 1200 ]; do
        grep -Eqs "$2" "$1" && return 0
        if [ -n "$3" ] && ! qpx_alive "$3"; then
            echo "  (the server exited before it printed /$2/)"
            return 1
        fi
        sleep 0.05
        i=$((i + 1))
    done
    echo "  (the server did not print /$2/ within 60 s)"
    return 1
}

# qpx_dump_stacks PATTERN: the stack of every thread of each process whose
# command line matches PATTERN (gdb where installed, else each thread's
# kernel wait channel), to standard output
qpx_dump_stacks() {
    for p in $(pgrep -f "$1"); do
        [ "$p" = "$$" ] && continue
        echo "---- process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"
        if command -v gdb >/dev/null; then
            timeout 60 gdb -p "$p" -batch -nx -ex "thread apply all bt 25" \
                2>/dev/null | grep -E "^(#|Thread)"
        else
            for t in /proc/"$p"/task/*; do
                echo "  thread ${t##*/} $(cat "$t/comm" 2>/dev/null): waits in $(cat "$t/wchan" 2>/dev/null)"
            done
        fi
    done
}

# qpx_run_watched SECONDS PATTERN CMD...: CMD with a time limit, as
# timeout(1) (TERM, KILL 5 s later, exit 124), but first the stacks of the
# processes matching PATTERN are printed (qpx_dump_stacks), so that a hang
# seen once says where each side waits
qpx_run_watched() {
    secs=$1; pat=$2; shift 2
    wdir=$(mktemp -d)
    "$@" &
    wpid=$!
    (
        sleep "$secs" </dev/null >/dev/null 2>&1
        # the command ended (its sleep was cut short below): not a hang
        [ -e "$wdir/ended" ] && exit 0
        touch "$wdir/fired"
        echo "==== $* still runs after $secs s: stacks of /$pat/"
        qpx_dump_stacks "$pat"
        kill -TERM "$wpid" 2>/dev/null
        sleep 5
        kill -KILL "$wpid" 2>/dev/null
    ) &
    dog=$!
    wait "$wpid"
    rc=$?
    # before the watchdog's sleep is killed: without the mark, the watchdog
    # went on to "fired" before it was killed itself, and a command that
    # had passed returned 124 (6 of 10 softverbs-openib.sh runs beside
    # another test under make -j2: "MPI OK", exit 124, no stacks)
    touch "$wdir/ended"
    pkill -P "$dog" 2>/dev/null
    wait "$dog" 2>/dev/null
    [ -e "$wdir/fired" ] && rc=124
    rm -rf "$wdir"
    return $rc
}

# qpx_mpi_a2a NAME PROG ITERS BYTES [ENV...]: the Open MPI alltoall test
# (qpx_mpi_alltoall.c: every byte checked) on 8 ranks with the environment
# ENV (UCX_TLS=..., LD_PRELOAD=...) and softverbs' settings; passes on its
# OK line, else prints the end of its output
qpx_mpi_a2a() {
    name=$1; prog=$2; iters=$3; bytes=$4; shift 4
    # shellcheck disable=SC2086
    out=$(env "$@" timeout 240 mpirun $QPX_MPIRUN_ARGS -x SOFTVERBS_MLX5 \
          -x SOFTVERBS_SHM -np 8 "$prog" "$iters" "$bytes" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] &&
       echo "$out" | grep -q "^ALLTOALL OK $iters x $bytes on 8 ranks"; then
        qpx_pass "$name: 8 ranks, $iters x $bytes B, data checked"
    else
        qpx_fail "$name (exit $rc; 124: stalled)"
        echo "$out" | grep -v "^softverbs" | tail -n 8
    fi
}
