#!/bin/sh
# Four hosts on this machine (contrib/cluster-one-host.sh: network
# namespaces on a bridge, a hostname and a softverbs HCA each, one shared
# registry) and jobs across them:
#  - mpirun over the hosts (its rsh agent): each rank on its own host;
#  - MPI_Alltoall, 8 ranks on 4 hosts, over UCX_TLS=qpx and qpx_rc,qpx_ud,
#    every byte checked, qpx's job log saying "8 processes on 4 hosts";
#  - the same job launched by Slurm (srun -N 4 -n 8 --mpi=pmix, one slurmd
#    per host) over qpx;
#  - the alltoall again over a slow, lossy wire between the hosts
#    (SOFTVERBS_WIRE_DELAY, SOFTVERBS_WIRE_LOSS), resends counted;
#  - MPI_Finalize holds every rank until the last one entered it, under
#    mpirun and srun (the launcher's fence, which pml ucx relies on before
#    it destroys its endpoints);
#  - OpenSHMEM on 8 PEs over the 4 hosts (qpx, qpx_rc,qpx_ud);
#  - RoCE between the hosts: each host's GID table carries its address,
#    MPI_Alltoall over qpx and qpx_rc,qpx_ud with the RoCE v2 GID chosen,
#    perftest's ib_write_bw -x 3 (RoCE v2) between two hosts;
#  - librdmacm between hosts: UCP's client/server flow from h1 to other
#    hosts through qpx's CM and UCX's rdmacm CM (message intact, lane
#    qpx_rc), two hosts listening on one port, an address no host has
#    (an error at once), rping -V between two hosts;
#  - host h2's port taken down mid-job: the job ends with an error naming
#    the QP and the down port, no hang;
#  - stop leaves no namespace, bridge, directory or registry behind.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
[ "$(id -u)" = 0 ] || qpx_skip_all "not root (namespaces)"
for p in ip nsenter unshare mpirun mpicc; do
    command -v $p >/dev/null || qpx_skip_all "$p not installed"
done
cl="sh $QPX_SRCDIR/contrib/cluster-one-host.sh"
dir=/tmp/qpx-cluster-test
$cl stop "$dir" >/dev/null 2>&1
trap '$cl stop "$dir" >/dev/null 2>&1; rm -rf "$TL_TMP"' EXIT
prog=$TL_TMP/qpx_mpi_alltoall
mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" ||
    qpx_skip_all "cannot build qpx_mpi_alltoall.c"
fin=$TL_TMP/qpx_mpi_finalize_order
mpicc -O2 -o "$fin" "$QPX_SRCDIR/test/integration/qpx_mpi_finalize_order.c" ||
    qpx_skip_all "cannot build qpx_mpi_finalize_order.c"

if ! $cl start 4 "$dir" >"$TL_TMP/start" 2>&1; then
    cat "$TL_TMP/start"
    qpx_fail "cluster-one-host.sh start 4"
    qpx_finish
fi
qpx_pass "cluster-one-host.sh start 4: $(tail -n 1 "$TL_TMP/start" | sed 's/^cluster-one-host: //')"
eval "$($cl env "$dir")"
unset SOFTVERBS_NUM_DEVICES SOFTVERBS_NUM_PORTS
# the hosts' network, 10.77.0. by default: h<i> is $NETP$((10 + i))
NETP=$(echo "$QPX_CLUSTER_MPIRUN" |
       sed -n 's/.*oob_tcp_if_include \([0-9.]*\.\)0\/24.*/\1/p')
[ -n "$NETP" ] || NETP=10.77.0.
# the rsh agent, rank files and softverbs' per-host slot all take the
# program from this directory (the same path on every host)

# the ranks' output only: Open MPI's rsh launcher may warn on stderr that
# setpgid failed in the parent (EACCES: the child had already exec'd, a
# race it tolerates), which is not a rank's hostname
out=$(timeout 60 mpirun --allow-run-as-root --oversubscribe $QPX_CLUSTER_MPIRUN \
      -np 4 --map-by node hostname 2>"$TL_TMP/hostname.err" | sort |
      tr '\n' ' ')
if [ "$out" = "h1 h2 h3 h4 " ]; then
    qpx_pass "mpirun over the hosts: one rank on each of h1 h2 h3 h4"
else
    qpx_fail "mpirun over the hosts: $out $(tr '\n' ' ' <"$TL_TMP/hostname.err")"
fi

# a2a NAME TLS [LAUNCH...]: the alltoall on 8 ranks, 2 per host
a2a() {
    name=$1 tls=$2; shift 2
    out=$(UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE UCX_LOG_LEVEL=debug \
          OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
          OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
          timeout 200 "$@" "$prog" 20 262144 2>&1)
    rc=$?
    hosts=$(echo "$out" | grep -c 'qpx job: .* 8 processes on 4 hosts, 2 here')
    if [ $rc -eq 0 ] && echo "$out" | grep -q '^ALLTOALL OK 20 x 262144 on 8 ranks' &&
       [ "$hosts" = 8 ]; then
        qpx_pass "$name over UCX_TLS=$tls: 8 ranks on 4 hosts (job log of all 8), 20 x 256 KiB, data checked"
    else
        qpx_fail "$name over UCX_TLS=$tls (exit $rc, $hosts of 8 job logs)"
        # the first failure a rank saw, then how the job ended
        echo "$out" | grep -v DEBUG | grep -m 8 -E 'ERROR|DIAG|WARN|rror'
        echo "$out" | grep -v DEBUG | tail -n 6
    fi
}
# fin_order NAME [LAUNCH...]: rank 0 enters MPI_Finalize 2 s after the
# others over UCX_TLS=qpx; no rank may leave it before rank 0 entered
fin_order() {
    name=$1; shift
    out=$(UCX_TLS=qpx LD_PRELOAD=$QPX_MODULE UCX_LOG_LEVEL=warn \
          OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
          OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
          timeout 120 "$@" "$fin" 2000 2>&1)
    rc=$?
    res=$(echo "$out" | awk '/^FINALIZE rank/ {
              n++; if ($3 == 0) e0 = $7; if (first == "" || $9 < first) first = $9
              if ($9 > last) last = $9 }
          END { if (n == 8) printf "%d %.3f %.3f\n", (first >= e0), first - e0, last - e0
                else print "0 - -" }')
    set -- $res
    if [ $rc -eq 0 ] && [ "$1" = 1 ]; then
        qpx_pass "$name: MPI_Finalize held all 8 ranks until rank 0 entered (first left $2 s, last $3 s after)"
    else
        qpx_fail "$name: a rank left MPI_Finalize before rank 0 entered it (exit $rc; first left $2 s after rank 0 entered, last $3 s)"
        echo "$out" | grep -v DEBUG | tail -n 10
    fi
}
MPIRUN="mpirun --allow-run-as-root --oversubscribe $QPX_CLUSTER_MPIRUN -x LD_PRELOAD
        -x LD_LIBRARY_PATH -x UCX_TLS -x UCX_LOG_LEVEL -x OMPI_MCA_pml -x OMPI_MCA_osc
        -x OMPI_MCA_btl -x OMPI_MCA_pml_ucx_tls -x OMPI_MCA_pml_ucx_devices
        -np 8 --map-by node"
# shellcheck disable=SC2086
a2a "mpirun MPI_Alltoall" qpx $MPIRUN
# shellcheck disable=SC2086
a2a "mpirun MPI_Alltoall" qpx_rc,qpx_ud $MPIRUN
# shellcheck disable=SC2086
fin_order "mpirun" $MPIRUN

# wire TLS: the alltoall with the wire between the hosts slowed and lossy
# (SOFTVERBS_WIRE_DELAY, _LOSS: 100 us each way, 0.5% of the requests
# lost; two ranks of one host talk within their port, untouched), RC and
# DC resending after 5 ms: every byte checked, and the resends counted
# (softverbs' "no response" lines for RC and DC, qpx_ud's tx_resent)
wire() {
    tls=$1
    # shellcheck disable=SC2086
    out=$(UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE UCX_LOG_LEVEL=warn \
          SOFTVERBS_WIRE_DELAY=100us SOFTVERBS_WIRE_LOSS=0.005 SOFTVERBS_DEBUG=1 \
          UCX_QPX_RC_TIMEOUT=5ms UCX_QPX_DC_TIMEOUT=5ms UCX_QPX_UD_PRINT_STATS=y \
          OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
          OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
          timeout 240 $MPIRUN -x SOFTVERBS_WIRE_DELAY -x SOFTVERBS_WIRE_LOSS \
          -x SOFTVERBS_DEBUG -x UCX_QPX_RC_TIMEOUT -x UCX_QPX_DC_TIMEOUT \
          -x UCX_QPX_UD_PRINT_STATS "$prog" 20 262144 2>&1)
    rc=$?
    rc_n=$(echo "$out" | grep -c 'no response to wr_id')
    ud_n=$(echo "$out" | sed -n 's/.* tx_resent=\([0-9]*\).*/\1/p' |
           awk '{ s += $1 } END { print s + 0 }')
    if [ $rc -eq 0 ] && echo "$out" | grep -q '^ALLTOALL OK 20 x 262144 on 8 ranks' &&
       [ $((rc_n + ud_n)) -gt 0 ]; then
        qpx_pass "MPI_Alltoall over UCX_TLS=$tls, hosts 100 us apart, 0.5% lost: 8 ranks on 4 hosts, data checked ($rc_n RC/DC and $ud_n UD resends)"
    else
        qpx_fail "MPI_Alltoall over UCX_TLS=$tls, hosts 100 us apart, 0.5% lost: exit $rc, $rc_n RC/DC and $ud_n UD resends"
        echo "$out" | grep -v 'no response to wr_id' | grep -m 8 -E 'ERROR|DIAG|WARN|rror'
        echo "$out" | grep -v 'no response to wr_id' | tail -n 6
    fi
}
wire qpx
wire qpx_rc,qpx_ud

# OpenSHMEM across the hosts (spml ucx): puts, gets and atomics of each PE
# to the next, every value checked by the PEs (qpx_shmem_test.c)
if command -v oshcc >/dev/null && command -v oshrun >/dev/null &&
   oshcc -o "$TL_TMP/qpx_shmem_test" "$QPX_SRCDIR/test/integration/qpx_shmem_test.c" 2>/dev/null; then
    for tls in qpx qpx_rc,qpx_ud; do
        # shellcheck disable=SC2086
        out=$(UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE UCX_LOG_LEVEL=debug \
              OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
              OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
              timeout 200 $(echo "$MPIRUN" | sed 's/^mpirun/oshrun/') \
              --mca spml ucx "$TL_TMP/qpx_shmem_test" 2>&1)
        rc=$?
        pes=$(echo "$out" | grep -c '^PE [0-9]*: OK')
        hosts=$(echo "$out" | grep -c 'qpx job: .* 8 processes on 4 hosts, 2 here')
        if [ $rc -eq 0 ] && [ "$pes" = 8 ] && [ "$hosts" = 8 ]; then
            qpx_pass "OpenSHMEM on 8 PEs over 4 hosts, UCX_TLS=$tls: put, get, atomics checked by all 8 (job log of all 8)"
        else
            qpx_fail "OpenSHMEM on 8 PEs over 4 hosts, UCX_TLS=$tls: exit $rc, $pes PEs OK, $hosts job logs"
            echo "$out" | grep -v DEBUG | grep -m 6 -E 'ERROR|rror|PE '
        fi
    done
else
    echo "SKIP: OpenSHMEM across hosts (oshcc/oshrun missing or failing)"
fi

if PATH=$PATH:/usr/sbin command -v slurmd >/dev/null && command -v srun >/dev/null; then
    if timeout 120 $cl slurm "$dir" </dev/null >"$TL_TMP/slurm" 2>&1; then
        eval "$($cl env "$dir")"
        a2a "srun -N 4 -n 8 --mpi=pmix MPI_Alltoall" qpx srun -N 4 -n 8 --mpi=pmix
        fin_order "srun -N 4 -n 8 --mpi=pmix" srun -N 4 -n 8 --mpi=pmix
    else
        qpx_fail "cluster-one-host.sh slurm"; tail -n 5 "$TL_TMP/slurm"
    fi
else
    echo "SKIP: Slurm case (slurmd/srun not installed)"
fi

# pair_run NAME SERVER-HOST SERVER-CMD CLIENT-HOST CLIENT-CMD: the server
# in the background, the client tried again until the server listens (up
# to 20 s); output in $TL_TMP/NAME.srv and .cli, the server's exit in src
pair_run() {
    $cl on "$2" "$3" >"$TL_TMP/$1.srv" 2>&1 &
    ppid=$!
    i=0
    while [ $i -lt 40 ]; do
        $cl on "$4" "$5" >"$TL_TMP/$1.cli" 2>&1 && break
        sleep 0.5; i=$((i + 1))
    done
    wait $ppid; src=$?
}

# RoCE between the hosts: every process of a job on an Ethernet port
# (SOFTVERBS_LINK_LAYER=ethernet); each host's GID table carries its own
# address, published in the registry for the other hosts' packets
gids=$($cl on h2 "SOFTVERBS_LINK_LAYER=ethernet ibv_devinfo -v -d softverbs0" 2>&1 |
       grep -E 'link_layer|GID\[  3\]')
if echo "$gids" | grep -q 'Ethernet' &&
   echo "$gids" | grep -q "GID\[  3\]:.*::ffff:${NETP}12, RoCE v2"; then
    qpx_pass "RoCE: h2's port is Ethernet, GID[3] ::ffff:${NETP}12 RoCE v2 (its own address)"
else
    qpx_fail "RoCE: h2's GID table: $(echo "$gids" | tr '\n' ' ')"
fi
for tls in qpx qpx_rc,qpx_ud; do
    # shellcheck disable=SC2086
    out=$(SOFTVERBS_LINK_LAYER=ethernet UCX_TLS=$tls LD_PRELOAD=$QPX_MODULE \
          UCX_LOG_LEVEL=debug OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_btl=self \
          OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
          timeout 200 $MPIRUN -x SOFTVERBS_LINK_LAYER "$prog" 20 262144 2>&1)
    rc=$?
    # each rank's qpx chose the RoCE v2 GID of its own host's address
    v2=$(echo "$out" | grep -c 'softverbs0:1 RoCE: GID index 3 (RoCE v2, chosen)')
    if [ $rc -eq 0 ] && echo "$out" | grep -q '^ALLTOALL OK 20 x 262144 on 8 ranks' &&
       [ "$v2" -ge 8 ]; then
        qpx_pass "RoCE: MPI_Alltoall over UCX_TLS=$tls, 8 ranks on 4 hosts, 20 x 256 KiB, data checked, RoCE v2 GID index 3 chosen ($v2 logs)"
    else
        qpx_fail "RoCE: MPI_Alltoall over UCX_TLS=$tls: exit $rc, $v2 RoCE v2 GID choices"
        echo "$out" | grep -v DEBUG | grep -m 6 -E 'ERROR|rror|DIAG'
    fi
done
if command -v ib_write_bw >/dev/null; then
    pair_run bw h3 "SOFTVERBS_LINK_LAYER=ethernet timeout 60 ib_write_bw -d softverbs0 -x 3 -s 65536 -n 200 -F" \
        h1 "SOFTVERBS_LINK_LAYER=ethernet timeout 60 ib_write_bw -d softverbs0 -x 3 -s 65536 -n 200 -F ${NETP}13"
    brc=$src
    bw=$(awk '$1 == 65536 && NF >= 4 {print $4}' "$TL_TMP/bw.cli" | tail -n 1)
    if [ $brc -eq 0 ] && [ -n "$bw" ]; then
        qpx_pass "RoCE: perftest ib_write_bw -x 3 (RoCE v2) from h1 to h3: 200 x 64 KiB, $bw MB/s (a run: perftest checks no data)"
    else
        qpx_fail "RoCE: ib_write_bw -x 3 from h1 to h3: server exit $brc"
        tail -n 4 "$TL_TMP/bw.cli" "$TL_TMP/bw.srv"
    fi
fi

# librdmacm between hosts: each host publishes its addresses in the
# cluster's SOFTVERBS_SOCKET_DIR, and a listener is a file there named
# after its host (softverbs' sv_cm_hosts.c)
ucs=$TL_TMP/ucs
ex=/usr/share/doc/libucx-dev/examples
if gcc -O1 -I"$ex" -o "$ucs" "$ex/ucp_client_server.c" -lucp -lucs 2>/dev/null; then
    # cs_host CM HOST... : a UCP server on each HOST on one port, a client
    # on h1 to each through CM (UCX_SOCKADDR_TLS_PRIORITY) over qpx_rc
    cs_host() {
        cm=$1; shift
        cs_port=$((cs_port + 1)) port=$cs_port
        ok=0 n=0 why=""
        for h in "$@"; do
            : >"$TL_TMP/srv.$h"
            $cl on "$h" "UCX_SOCKADDR_TLS_PRIORITY=$cm UCX_TLS=qpx_rc,qpx_ud \
                LD_PRELOAD=$QPX_MODULE timeout 60 stdbuf -oL $ucs -c tag -p $port" \
                >"$TL_TMP/srv.$h" 2>&1 &
            qpx_wait_output "$TL_TMP/srv.$h" 'server is listening' $!
        done
        for h in "$@"; do
            n=$((n + 1))
            ip=$NETP$((10 + ${h#h}))
            $cl on h1 "UCX_SOCKADDR_TLS_PRIORITY=$cm UCX_TLS=qpx_rc,qpx_ud \
                UCX_LOG_LEVEL=info LD_PRELOAD=$QPX_MODULE timeout 30 \
                $ucs -c tag -a $ip -p $port" >"$TL_TMP/cli.$h" 2>&1
            crc=$?
            lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/cli.$h" | tail -n 1)
            if [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.$h" &&
               echo "$lanes" | grep -q '(qpx_rc/'; then
                ok=$((ok + 1))
            else
                why="$why h1->$h: exit $crc, $lanes;"
                grep -v INFO "$TL_TMP/cli.$h" | tail -n 4
            fi
        done
        pkill -f "$ucs" 2>/dev/null
        if [ $ok = $n ]; then
            qpx_pass "UCP client/server across hosts through the $cm CM: h1 to $* on port $port, message intact, lane qpx_rc"
        else
            qpx_fail "UCP client/server across hosts through the $cm CM:$why"
        fi
    }
    cs_port=$((14000 + $$ % 500))
    cs_host qpx h2
    cs_host rdmacm h3
    # the same port on two hosts: two listeners, each reached
    cs_host qpx h2 h3
    # an address no host has: ADDR_ERROR at once, not a hang
    t0=$(date +%s)
    $cl on h1 "UCX_SOCKADDR_TLS_PRIORITY=qpx UCX_TLS=qpx_rc,qpx_ud \
        LD_PRELOAD=$QPX_MODULE timeout 30 $ucs -c tag -a ${NETP}99 -p 14999" \
        >"$TL_TMP/cli.none" 2>&1
    crc=$? t=$(($(date +%s) - t0))
    if [ $crc -ne 0 ] && [ $crc -ne 124 ] && grep -qi 'unreachable' "$TL_TMP/cli.none"; then
        qpx_pass "UCP client to an address no host has: fails in $t s (Destination is unreachable)"
    else
        qpx_fail "UCP client to an address no host has: exit $crc after $t s"
        tail -n 3 "$TL_TMP/cli.none"
    fi
else
    echo "SKIP: UCP client/server across hosts ($ex/ucp_client_server.c does not build)"
fi
if command -v rping >/dev/null; then
    pair_run rping h4 "timeout 60 rping -s -a ${NETP}14 -p 15001 -S 4096 -C 50 -V" \
        h1 "timeout 30 rping -c -a ${NETP}14 -p 15001 -S 4096 -C 50 -V -v"
    n=$(grep -c "^ping data: rdma-ping-" "$TL_TMP/rping.cli")
    if [ $src -eq 0 ] && [ "$n" = 50 ]; then
        qpx_pass "rping -V from h1 to h4 (rdmacm-utils): 50 pings of 4 KiB validated"
    else
        qpx_fail "rping -V from h1 to h4: server exit $src, $n of 50 pings"
        tail -n 3 "$TL_TMP/rping.cli" "$TL_TMP/rping.srv"
    fi
fi

# h2's port down while the job runs
stat=$SOFTVERBS_LIBDIR/../softverbs-stat
UCX_TLS=qpx_rc,qpx_ud LD_PRELOAD=$QPX_MODULE OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx \
    OMPI_MCA_btl=self OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
    UCX_LOG_LEVEL=warn timeout 200 $MPIRUN "$prog" 100000 262144 >"$TL_TMP/down" 2>&1 &
mpid=$!
sleep 8
$cl on h2 "$stat port softverbs0:1 down" >/dev/null
t0=$(date +%s)
wait "$mpid"; rc=$?
t=$(( $(date +%s) - t0 ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] &&
   grep -q "failed: transport retry counter exceeded (port softverbs0:1 is down)" "$TL_TMP/down"; then
    qpx_pass "h2's port down mid-job: the job ends in $t s with an error naming the QP and the down port"
else
    qpx_fail "h2's port down mid-job: exit $rc after $t s"
    grep -v '^\[h[0-9]:[0-9]*\] \[' "$TL_TMP/down" | tail -n 6
fi

$cl stop "$dir" >/dev/null 2>&1
left=$(ip netns list | grep -c '^qpx-h'; ip link show qpxbr0 2>/dev/null | grep -c qpxbr0)
left=$(echo "$left" | awk '{s += $1} END {print s}')
if [ "$left" = 0 ] && [ ! -e "$dir" ] && [ ! -e "/dev/shm/$(basename "$dir")-registry" ]; then
    qpx_pass "cluster-one-host.sh stop: no namespace, bridge, directory or registry left"
else
    qpx_fail "cluster-one-host.sh stop left $left links/namespaces (or $dir)"
fi
qpx_finish
