#!/bin/sh
# RoCE: softverbs ports with an Ethernet link layer (SOFTVERBS_LINK_LAYER=
# ethernet), bound to lo (SOFTVERBS_NETDEV=lo, so that the GID table is the
# same on every machine: the default pair, then 127.0.0.1 and ::1, each as
# RoCE v1 and v2), and the programs that use them:
#  - what a user sees: ibv_devinfo -v (link layer, LID 0, the typed GID
#    table), softverbs' sysfs tree (gid_attrs/types, ndevs), the active MTU
#    following the netdev's; a malformed or per-port SOFTVERBS_LINK_LAYER
#  - others' programs with the GID a user names: ibv_rc_pingpong -c (data
#    checked by the tool), ibv_ud_pingpong, ib_write_bw -x, ib_send_lat -c UD
#    -x, ib_write_lat -c DC -x; how they fail as on a fabric: without a GRH
#    (the QP refuses an AV without one), across GID types (RoCE v1 to v2:
#    the requester's retries run out), across address families
#  - qpx: each transport picks the RoCE v2 GID of an IPv4 address by itself
#    (debug log), UCX_QPX_GID_INDEX picks another, one naming no GID is
#    refused; the data-integrity program on qpx_rc, qpx_ud, qpx_dc and the
#    hybrid (every operation and size class, payload checked), qpx_rc and
#    qpx_ud over IPv6 and qpx_ud over RoCE v1 too; MPI_Alltoall
#    over qpx and over UCX's rc_verbs/ud_verbs (every byte checked); UCP's
#    client/server example through qpx's CM (message checked)
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
trap 'pkill -9 -f "$TL_TMP/" 2>/dev/null; rm -rf "$TL_TMP"' EXIT
command -v ibv_devinfo >/dev/null || qpx_skip_all "ibverbs-utils not installed"
# a registry of this script's own (its ports differ from other tests')
export SOFTVERBS_SHM=/dev/shm/qpx-roce-$$
trap 'pkill -9 -f "$TL_TMP/" 2>/dev/null; rm -rf "$TL_TMP" "$SOFTVERBS_SHM"' EXIT
export SOFTVERBS_LINK_LAYER=ethernet SOFTVERBS_NETDEV=lo
D=${QPX_DEV%:*}

# --- what a user sees --------------------------------------------------------
info=$(timeout 10 ibv_devinfo -v -d "$D" 2>&1)
gid_line() { echo "$info" | grep -E "GID\[ *$1\]:"; }
if echo "$info" | grep -q 'link_layer:[[:space:]]*Ethernet' &&
   echo "$info" | grep -q 'port_lid:[[:space:]]*0$' &&
   gid_line 0 | grep -q 'fe80:.*RoCE v1$' && gid_line 1 | grep -q 'fe80:.*RoCE v2$' &&
   gid_line 2 | grep -q 'ffff:7f00:0001, RoCE v1$' &&
   gid_line 3 | grep -q '::ffff:127.0.0.1, RoCE v2$' &&
   gid_line 5 | grep -q '::1, RoCE v2$' && [ -z "$(gid_line 6)" ]; then
    qpx_pass "ibv_devinfo -v: Ethernet, LID 0, GIDs 0-5 typed (default pair, 127.0.0.1, ::1)"
else
    qpx_fail "ibv_devinfo -v on a RoCE port"
    echo "$info" | grep -E 'link_layer|lid|GID' | sed 's/^/  | /'
fi
# lo's MTU is 65536: 4096; an MTU of 1500 (less RoCE's headers) gives 1024
if echo "$info" | grep -q 'active_mtu:[[:space:]]*4096'; then
    qpx_pass "active MTU follows the netdev (lo: 4096)"
else
    qpx_fail "active MTU on lo: $(echo "$info" | grep active_mtu)"
fi
# the tree libibverbs' ibv_get_sysfs_path() names (made at its first call)
tree=$(python3 -c 'import ctypes
l = ctypes.CDLL("libibverbs.so.1")
l.ibv_get_sysfs_path.restype = ctypes.c_char_p
print(l.ibv_get_sysfs_path().decode())' 2>/dev/null)
if [ -n "$tree" ] &&
   [ "$(cat "$tree/class/infiniband/$D/ports/1/link_layer")" = Ethernet ] &&
   [ "$(cat "$tree/class/infiniband/$D/ports/1/gid_attrs/types/2")" = "IB/RoCE v1" ] &&
   [ "$(cat "$tree/class/infiniband/$D/ports/1/gid_attrs/ndevs/3")" = lo ]; then
    qpx_pass "sysfs: link_layer Ethernet, gid_attrs/types and ndevs as the kernel writes them"
else
    qpx_fail "sysfs tree of a RoCE port (${tree:-not found})"
fi
out=$(SOFTVERBS_LINK_LAYER=fddi timeout 10 ibv_devinfo -d "$D" 2>&1)
if echo "$out" | grep -q "SOFTVERBS_LINK_LAYER='fddi' is not" &&
   echo "$out" | grep -q 'link_layer:[[:space:]]*InfiniBand'; then
    qpx_pass "malformed SOFTVERBS_LINK_LAYER named, InfiniBand kept"
else
    qpx_fail "malformed SOFTVERBS_LINK_LAYER"; echo "$out" | head -n 3
fi
out=$(SOFTVERBS_NUM_PORTS=2 SOFTVERBS_LINK_LAYER=infiniband,ethernet \
      timeout 10 ibv_devinfo -d "$D" 2>&1)
if [ "$(echo "$out" | grep link_layer | awk '{print $2}' | tr '\n' ' ')" = "InfiniBand Ethernet " ]; then
    qpx_pass "SOFTVERBS_LINK_LAYER=infiniband,ethernet: port 1 InfiniBand, port 2 Ethernet"
else
    qpx_fail "per-port link layers: $(echo "$out" | grep link_layer | tr -s ' \t' ' ')"
fi

# --- others' programs ----------------------------------------------------------
# pair NAME PATTERN SERVER-ARGS -- CLIENT-ARGS: PROG ARGS on both sides, the
# client at 127.0.0.1; passes when both exit 0 and the client printed PATTERN
pair() {
    name=$1 pattern=$2; shift 2
    srv=""; while [ "$1" != "--" ]; do srv="$srv $1"; shift; done; shift
    port=$(qpx_free_port)
    # shellcheck disable=SC2086
    timeout 60 $srv -p "$port" >"$TL_TMP/p.srv" 2>&1 &
    ppid_=$!
    qpx_wait_port "$port"
    timeout 60 "$@" -p "$port" 127.0.0.1 >"$TL_TMP/p.cli" 2>&1
    crc=$?
    [ $crc -ne 0 ] && { sleep 1; kill "$ppid_" 2>/dev/null; }
    wait "$ppid_"; src=$?
}
pass_pair() {
    pair "$@"
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -Eq "$2" "$TL_TMP/p.cli"; then
        qpx_run_pass "$1"
    else
        qpx_fail "$1 (client exit $crc, server exit $src)"
        tail -n 4 "$TL_TMP/p.cli" "$TL_TMP/p.srv"
    fi
}
PP='[0-9]+ iters in [0-9.]+ seconds'
ROW='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9]+\.[0-9]+'
if command -v ibv_rc_pingpong >/dev/null; then
    # -c: the server checks every buffer it receives ("invalid data" else)
    pair "ibv_rc_pingpong -c -g 3 (RoCE v2, IPv4)" "$PP" \
        ibv_rc_pingpong -d "$D" -g 3 -n 200 -c -- ibv_rc_pingpong -d "$D" -g 3 -n 200 -c
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -Eq "$PP" "$TL_TMP/p.cli" &&
       ! grep -q 'invalid data' "$TL_TMP/p.srv" "$TL_TMP/p.cli"; then
        qpx_pass "ibv_rc_pingpong -c -g 3 (RoCE v2, IPv4): 200 round trips, buffers checked by the tool"
    else
        qpx_fail "ibv_rc_pingpong -c -g 3 (client exit $crc, server exit $src)"
        tail -n 4 "$TL_TMP/p.cli" "$TL_TMP/p.srv"
    fi
    pass_pair "ibv_rc_pingpong -g 5 (RoCE v2, IPv6)" "$PP" \
        ibv_rc_pingpong -d "$D" -g 5 -n 200 -- ibv_rc_pingpong -d "$D" -g 5 -n 200
    pass_pair "ibv_ud_pingpong -g 3" "$PP" \
        ibv_ud_pingpong -d "$D" -g 3 -n 200 -s 512 -- ibv_ud_pingpong -d "$D" -g 3 -n 200 -s 512
    # As on a fabric: a RoCE AV needs a GRH (ibv_modify_qp EINVAL)
    pair "no GRH" "" ibv_rc_pingpong -d "$D" -n 10 -- ibv_rc_pingpong -d "$D" -n 10
    # (the side that connects first says so; the other loses its socket)
    if [ $crc -ne 0 ] && grep -q 'Failed to modify QP to RTR' "$TL_TMP/p.cli" "$TL_TMP/p.srv"; then
        qpx_pass "RoCE without a GID: the QP refuses the AV (Failed to modify QP to RTR)"
    else
        qpx_fail "RoCE without a GID (client exit $crc)"; tail -n 3 "$TL_TMP/p.cli" "$TL_TMP/p.srv"
    fi
    # RoCE v1 to RoCE v2 of the same address, IPv4 to IPv6: nothing arrives,
    # the requester's retries run out
    for g in "2 3 RoCE v1 to RoCE v2" "3 5 IPv4 to IPv6"; do
        set -- $g
        pair "mismatch" "" ibv_rc_pingpong -d "$D" -g "$1" -n 10 -- \
            ibv_rc_pingpong -d "$D" -g "$2" -n 10
        shift 2
        if [ $crc -ne 0 ] && grep -q 'transport retry counter exceeded' "$TL_TMP/p.cli"; then
            qpx_pass "$*: lost, the client's retries run out (retry counter exceeded)"
        else
            qpx_fail "$*: client exit $crc"; tail -n 3 "$TL_TMP/p.cli"
        fi
    done
fi
if command -v ib_write_bw >/dev/null; then
    pass_pair "ib_write_bw -x 3" "$ROW" ib_write_bw -d "$D" -x 3 -F -n 300 -- \
        ib_write_bw -d "$D" -x 3 -F -n 300
    pass_pair "ib_send_lat -c UD -x 3" "$ROW" ib_send_lat -d "$D" -c UD -x 3 -F -n 300 -- \
        ib_send_lat -d "$D" -c UD -x 3 -F -n 300
    pass_pair "ib_write_lat -c DC -x 3" "$ROW" ib_write_lat -d "$D" -c DC -x 3 -F -n 300 -- \
        ib_write_lat -d "$D" -c DC -x 3 -F -n 300
fi

# --- qpx -----------------------------------------------------------------------
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    out=$(UCX_LOG_LEVEL=debug LD_PRELOAD=$QPX_MODULE timeout 30 ucx_info -d -t "$tl" 2>&1)
    if echo "$out" | grep -q "$D:1 RoCE: GID index 3 (RoCE v2, chosen)" &&
       echo "$out" | grep -q "Transport: $tl"; then
        qpx_pass "$tl: RoCE v2 GID of 127.0.0.1 (index 3) chosen by itself"
    else
        qpx_fail "$tl: GID choice: $(echo "$out" | grep -o 'RoCE: GID index.*' | head -n 1)"
    fi
done
out=$(UCX_QPX_GID_INDEX=5 UCX_LOG_LEVEL=debug LD_PRELOAD=$QPX_MODULE \
      timeout 30 ucx_info -d -t qpx_rc 2>&1)
if echo "$out" | grep -q "RoCE: GID index 5 (RoCE v2, UCX_QPX_GID_INDEX)"; then
    qpx_pass "UCX_QPX_GID_INDEX=5 taken"
else
    qpx_fail "UCX_QPX_GID_INDEX=5: $(echo "$out" | grep -o 'RoCE: GID index.*' | head -n 1)"
fi
out=$(UCX_QPX_GID_INDEX=9 LD_PRELOAD=$QPX_MODULE timeout 30 ucx_info -d -t qpx_rc 2>&1)
if echo "$out" | grep -q "UCX_QPX_GID_INDEX=9 names no populated GID" &&
   ! echo "$out" | grep -q "Transport: qpx_rc"; then
    qpx_pass "UCX_QPX_GID_INDEX=9 (empty entry): refused with an error, no qpx_rc device"
else
    qpx_fail "UCX_QPX_GID_INDEX=9: $(echo "$out" | grep -i 'gid' | head -n 2)"
fi
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    QPX_TL=$tl tl_integrity "RoCE v2: $tl"
done
QPX_TL=qpx_rc tl_integrity "RoCE v2 over IPv6 (UCX_QPX_GID_INDEX=5): qpx_rc" \
    UCX_QPX_GID_INDEX=5
# qpx_ud checks each datagram's source in its GRH area: an IPv4 header for
# RoCE v2 over IPv4 (above), an IPv6 GRH for RoCE v2 over IPv6 and RoCE v1
QPX_TL=qpx_ud tl_integrity "RoCE v2 over IPv6 (UCX_QPX_GID_INDEX=5): qpx_ud" \
    UCX_QPX_GID_INDEX=5
QPX_TL=qpx_ud tl_integrity "RoCE v1 (UCX_QPX_GID_INDEX=2): qpx_ud" \
    UCX_QPX_GID_INDEX=2

# MPI_Alltoall, every byte checked
prog=$TL_TMP/qpx_mpi_alltoall
if command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
   mpicc -O2 -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" 2>/dev/null; then
    for tls in qpx qpx_rc,qpx_ud rc_verbs,ud_verbs; do
        out=$(UCX_TLS=$tls,self,sm LD_PRELOAD=$QPX_MODULE timeout 200 \
              mpirun $QPX_MPIRUN_ARGS -x LD_PRELOAD -x UCX_TLS -np 4 "$prog" 20 65536 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK 20 x 65536 on 4 ranks"; then
            qpx_pass "MPI_Alltoall over UCX_TLS=$tls on RoCE: 20 x 64 KiB on 4 ranks, data checked"
        else
            qpx_fail "MPI_Alltoall over UCX_TLS=$tls on RoCE (exit $rc)"
            echo "$out" | tail -n 6
        fi
    done
else
    echo "SKIP: MPI cases (no mpicc/mpirun)"
fi

# UCP's client/server example through qpx's CM (softverbs' librdmacm)
ex=/usr/share/doc/libucx-dev/examples
if [ -f "$ex/ucp_client_server.c" ] && [ -f "$SOFTVERBS_LIBDIR/librdmacm.so.1" ] &&
   gcc -O1 -I"$ex" -o "$TL_TMP/ucs" "$ex/ucp_client_server.c" -lucp -lucs 2>/dev/null; then
    for tls in qpx_rc qpx; do
        : >"$TL_TMP/srv.log"
        UCX_TLS=$tls UCX_SOCKADDR_TLS_PRIORITY=qpx UCX_NET_DEVICES=$QPX_DEV \
            LD_PRELOAD=$QPX_MODULE timeout 90 stdbuf -oL "$TL_TMP/ucs" -c tag -p 0 \
            >"$TL_TMP/srv.log" 2>&1 &
        spid=$!
        qpx_wait_output "$TL_TMP/srv.log" 'server is listening on IP .* port [0-9]+' "$spid"
        port=$(sed -n 's/.*server is listening on IP .* port \([0-9][0-9]*\).*/\1/p' \
               "$TL_TMP/srv.log" | head -n 1)
        UCX_TLS=$tls UCX_SOCKADDR_TLS_PRIORITY=qpx UCX_NET_DEVICES=$QPX_DEV \
            LD_PRELOAD=$QPX_MODULE timeout 60 "$TL_TMP/ucs" -c tag -a 127.0.0.1 \
            -p "${port:-1}" >"$TL_TMP/cli.log" 2>&1
        crc=$?
        kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
        if [ $crc -eq 0 ] && grep -q '^ABCDEFGHIJKLMNO\.$' "$TL_TMP/cli.log"; then
            qpx_pass "UCP client/server through qpx's CM over $tls on RoCE: message intact"
        else
            qpx_fail "UCP client/server through qpx's CM over $tls on RoCE (client exit $crc)"
            tail -n 5 "$TL_TMP/cli.log" "$TL_TMP/srv.log"
        fi
    done
else
    echo "SKIP: CM cases (ucp_client_server or softverbs' librdmacm missing)"
fi
qpx_finish
