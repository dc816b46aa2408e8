#!/bin/sh
# Multi-port and multi-rail over softverbs HCAs with two ports
# (SOFTVERBS_NUM_PORTS=2): qpx offers one resource per port (softverbs0:1,
# softverbs0:2), UCP spreads tag traffic over both qpx_rc rails, and a job
# restricted to port 2 runs there. Open MPI MPI_Alltoall of 1 MiB blocks,
# every byte checked; UCP's lane report shows which ports carry it.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
prog=$TMP/qpx_mpi_alltoall
mpicc -O2 -Wall -o "$prog" "$QPX_SRCDIR/test/integration/qpx_mpi_alltoall.c" ||
    qpx_skip_all "cannot build qpx_mpi_alltoall.c with mpicc"

export SOFTVERBS_NUM_PORTS=2

out=$(ud_run env LD_PRELOAD="$QPX_MODULE" ucx_info -d 2>&1)
for tl in qpx_rc qpx_ud; do
    n=$(echo "$out" | awk -v tl="$tl" '/Transport:/ {t=$3} /Device:/ && t==tl {print $3}' |
        grep -c '^softverbs0:[12]$')
    if [ "$n" = 2 ]; then
        qpx_pass "$tl offers softverbs0:1 and softverbs0:2"
    else
        qpx_fail "$tl resources on a 2-port HCA: $n of 2"
    fi
done

a2a() { # NAME WANT_LANES TLS [ENV...]
    name=$1 want=$2 tls=$3; shift 3
    out=$(ud_run env UCX_TLS="$tls" UCX_LOG_LEVEL=info "$@" \
          timeout 200 mpirun $QPX_MPIRUN_ARGS -np 4 "$prog" 30 1048576 2>&1)
    rc=$?
    lanes=$(echo "$out" | sed -n 's/.*ep_cfg\[[0-9]*\]: tag(\(.*\))$/\1/p' | sort -u | head -1)
    if [ $rc -eq 0 ] && echo "$out" | grep -q "^ALLTOALL OK 30 x 1048576 on 4 ranks" &&
       [ "$lanes" = "$want" ]; then
        qpx_pass "$name: 30 x MPI_Alltoall of 1 MiB on 4 ranks, data checked, tag lanes ($lanes)"
    else
        qpx_fail "$name (exit $rc, tag lanes '$lanes', expected '$want')"
        echo "$out" | grep -v "UCX  INFO" | tail -n 8
    fi
}

a2a "two rails" "qpx_rc/softverbs0:1 qpx_rc/softverbs0:2" qpx_rc,qpx_ud \
    UCX_MAX_RNDV_RAILS=2
a2a "port 2 only, qpx_rc" "qpx_rc/softverbs0:2" qpx_rc,qpx_ud \
    UCX_NET_DEVICES=softverbs0:2
a2a "port 2 only, qpx_ud" "qpx_ud/softverbs0:2" qpx_ud \
    UCX_NET_DEVICES=softverbs0:2
qpx_finish
