#!/bin/sh
# A port taken down and up while programs run (`softverbs-stat port
# <dev>:<port> down|up`), as a link that drops:
#  - ibv_asyncwatch (ibverbs-utils) sees IBV_EVENT_PORT_ERR then
#    IBV_EVENT_PORT_ACTIVE on that port, ibv_devinfo PORT_DOWN then
#    PORT_ACTIVE; bad arguments are refused with an exit status
#  - an ib_write_bw pair whose port goes down mid-run: the client fails
#    with "retry exceeded" (status 12) at once, no hang; a pair started
#    after the port is back runs
#  - rdma_cm on a down port: ucmatose's address resolution fails with
#    ENETUNREACH (-101) at once
#  - qpx: a UCP tag_bw pair over qpx_rc whose port goes down: both sides
#    end with an error that names the QP and says the port is down, within
#    the retry time; an MPI job over two devices (UCP multi-rail) whose
#    second port goes down mid-job: Open MPI's pml ucx (no UCP peer error
#    handling) aborts with that error, no hang; a job started while that
#    port is down runs on the other device, every byte checked
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
export SOFTVERBS_SHM=/dev/shm/qpx-port-$$
trap 'pkill -9 -f "$TL_TMP/" 2>/dev/null; rm -rf "$TL_TMP" "$SOFTVERBS_SHM"' EXIT
stat=$SOFTVERBS_LIBDIR/../softverbs-stat
[ -x "$stat" ] || stat=$(command -v softverbs-stat)
[ -x "$stat" ] || qpx_skip_all "softverbs-stat not built"
D=${QPX_DEV%:*}

# --- events and state ------------------------------------------------------------
if command -v ibv_asyncwatch >/dev/null; then
    timeout 20 stdbuf -oL ibv_asyncwatch -d "$D" >"$TL_TMP/aw" 2>&1 &
    awpid=$!
    qpx_wait_output "$TL_TMP/aw" "async event FD" "$awpid"
    "$stat" port "$D:1" down >/dev/null
    down=$(timeout 10 ibv_devinfo -d "$D" | grep -c 'state:.*PORT_DOWN')
    "$stat" port "$D:1" down >/dev/null   # again: no second event
    "$stat" port "$D:1" up >/dev/null
    up=$(timeout 10 ibv_devinfo -d "$D" | grep -c 'state:.*PORT_ACTIVE')
    sleep 0.5
    kill "$awpid" 2>/dev/null; wait "$awpid" 2>/dev/null
    ev=$(grep 'event_type' "$TL_TMP/aw" | tr -s ' ' | tr '\n' ';')
    if [ "$ev" = " event_type IBV_EVENT_PORT_ERR (10), port 1; event_type IBV_EVENT_PORT_ACTIVE (9), port 1;" ] &&
       [ "$down" = 1 ] && [ "$up" = 1 ]; then
        qpx_pass "ibv_asyncwatch: PORT_ERR then PORT_ACTIVE on port 1, one each; ibv_devinfo PORT_DOWN then PORT_ACTIVE"
    else
        qpx_fail "port events ($ev) and states (down $down, up $up)"
    fi
else
    echo "SKIP: port events (ibv_asyncwatch not installed)"
fi
for a in "port $D:2 down|1|no such port" "port softverbs9:1 down|1|no such device" \
         "port $D:1 sideways|2|usage" "port $D down|2|is not"; do
    args=${a%%|*}; rest=${a#*|}; want=${rest%%|*}; msg=${rest#*|}
    # shellcheck disable=SC2086
    out=$("$stat" $args 2>&1); rc=$?
    if [ $rc -eq "$want" ] && echo "$out" | grep -q "$msg"; then
        qpx_pass "softverbs-stat $args: exit $rc, \"$msg\""
    else
        qpx_fail "softverbs-stat $args: exit $rc ($out)"
    fi
done

# --- others' programs ------------------------------------------------------------
if command -v ib_write_bw >/dev/null; then
    port=$(qpx_free_port)
    # -D 40: a run of 40 s (line-buffered, so that its header shows when
    # it starts)
    timeout 60 stdbuf -oL ib_write_bw -d "$D" -F -D 40 -s 65536 -p "$port" \
        >"$TL_TMP/bw.srv" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    timeout 60 stdbuf -oL ib_write_bw -d "$D" -F -D 40 -s 65536 -p "$port" 127.0.0.1 \
        >"$TL_TMP/bw.cli" 2>&1 &
    cpid=$!
    qpx_wait_output "$TL_TMP/bw.cli" '#bytes' "$cpid"
    sleep 0.5
    "$stat" port "$D:1" down >/dev/null
    t0=$(date +%s)
    wait "$cpid"; crc=$?
    t=$(( $(date +%s) - t0 ))
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    "$stat" port "$D:1" up >/dev/null
    if [ $crc -ne 0 ] && [ $crc -ne 124 ] && grep -q 'Failed status 12' "$TL_TMP/bw.cli"; then
        qpx_pass "ib_write_bw with its port taken down: retry exceeded (status 12) after $t s, exit $crc"
    else
        qpx_fail "ib_write_bw with its port taken down: exit $crc after $t s"
        tail -n 4 "$TL_TMP/bw.cli"
    fi
    port=$(qpx_free_port)
    timeout 60 ib_write_bw -d "$D" -F -n 300 -p "$port" >"$TL_TMP/bw.srv" 2>&1 &
    spid=$!
    qpx_wait_port "$port"
    timeout 60 ib_write_bw -d "$D" -F -n 300 -p "$port" 127.0.0.1 >"$TL_TMP/bw.cli" 2>&1
    crc=$?
    wait "$spid"; src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
        qpx_run_pass "ib_write_bw after the port came back"
    else
        qpx_fail "ib_write_bw after the port came back (exit $crc/$src)"
    fi
fi
if command -v ucmatose >/dev/null && [ -f "$SOFTVERBS_LIBDIR/librdmacm.so.1" ]; then
    "$stat" port "$D:1" down >/dev/null
    out=$(timeout 20 ucmatose -s 127.0.0.1 2>&1); rc=$?
    "$stat" port "$D:1" up >/dev/null
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
       echo "$out" | grep -q 'RDMA_CM_EVENT_ADDR_ERROR, error: -101'; then
        qpx_pass "ucmatose on a down port: ADDR_ERROR, ENETUNREACH (-101), exit $rc"
    else
        qpx_fail "ucmatose on a down port (exit $rc)"; echo "$out" | tail -n 3
    fi
fi

# --- qpx -----------------------------------------------------------------------
# ucx_perftest tag_bw over qpx_rc, 1 MiB messages, its port taken down
port=$(qpx_free_port)
UCX_TLS=qpx_rc,qpx_ud UCX_NET_DEVICES=$QPX_DEV LD_PRELOAD=$QPX_MODULE timeout 120 \
    ucx_perftest -p "$port" -t tag_bw -s 1048576 -n 1000000 >"$TL_TMP/pt.srv" 2>&1 &
spid=$!
qpx_wait_port "$port"
UCX_TLS=qpx_rc,qpx_ud UCX_NET_DEVICES=$QPX_DEV LD_PRELOAD=$QPX_MODULE timeout 120 \
    ucx_perftest -p "$port" -t tag_bw -s 1048576 -n 1000000 127.0.0.1 >"$TL_TMP/pt.cli" 2>&1 &
cpid=$!
qpx_wait_output "$TL_TMP/pt.cli" 'overhead' "$cpid"
"$stat" port "$D:1" down >/dev/null
t0=$(date +%s)
wait "$cpid"; crc=$?
t=$(( $(date +%s) - t0 ))
sleep 1; kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
"$stat" port "$D:1" up >/dev/null
if [ $crc -ne 0 ] && [ $crc -ne 124 ] &&
   grep -q "qpx_rc: qp 0x[0-9a-f]* failed: transport retry counter exceeded (port $D:1 is down)" \
        "$TL_TMP/pt.cli" "$TL_TMP/pt.srv"; then
    qpx_pass "ucx_perftest over qpx_rc, port taken down: fails in $t s, the error names the QP and the down port"
else
    qpx_fail "ucx_perftest over qpx_rc, port taken down: client exit $crc after $t s"
    grep -v INFO "$TL_TMP/pt.cli" | tail -n 5
fi

prog=$TL_TMP/qpx_mpi_alltoall
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
   mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" 2>/dev/null; then
    export SOFTVERBS_NUM_DEVICES=2
    [ -e /dev/infiniband/uverbs1 ] || ln -sf /dev/null /dev/infiniband/uverbs1 2>/dev/null
    mpi() { # ITERS: the job in the background (mpid), its output in mpi.out
        UCX_TLS=qpx_rc,qpx_ud UCX_MAX_EAGER_RAILS=2 UCX_MAX_RNDV_RAILS=2 \
            LD_PRELOAD=$QPX_MODULE timeout 200 mpirun $QPX_MPIRUN_ARGS \
            -x LD_PRELOAD -x UCX_TLS -x UCX_MAX_EAGER_RAILS -x UCX_MAX_RNDV_RAILS \
            -np 2 "$prog" "$1" 1048576 >"$TL_TMP/mpi.out" 2>&1 &
        mpid=$!
    }
    # long enough to be mid-job when the port goes: the job prints only at
    # its end; its ranks start and connect within seconds
    mpi 100000
    sleep 8
    "$stat" port softverbs1:1 down >/dev/null
    t0=$(date +%s)
    wait "$mpid"; rc=$?
    t=$(( $(date +%s) - t0 ))
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
       grep -q "failed: transport retry counter exceeded (port softverbs1:1 is down)" "$TL_TMP/mpi.out"; then
        qpx_pass "MPI over two rails, the second port down mid-job: aborted in $t s with an error naming the QP and the down port"
    else
        qpx_fail "MPI over two rails, second port down mid-job: exit $rc after $t s"
        grep -v INFO "$TL_TMP/mpi.out" | grep -v '^\[vm' | tail -n 6
    fi
    mpi 50
    wait "$mpid"; rc=$?
    "$stat" port softverbs1:1 up >/dev/null
    if [ $rc -eq 0 ] && grep -q '^ALLTOALL OK 50 x 1048576 on 2 ranks' "$TL_TMP/mpi.out"; then
        qpx_pass "MPI started while softverbs1:1 is down: runs on softverbs0, 50 x 1 MiB alltoall, data checked"
    else
        qpx_fail "MPI started while softverbs1:1 is down (exit $rc)"
        grep -v INFO "$TL_TMP/mpi.out" | tail -n 6
    fi
else
    echo "SKIP: MPI cases (no mpicc/mpirun)"
fi
qpx_finish
