#!/bin/sh
# Open MPI 2 ranks with pml ucx over UCX_TLS=qpx_ud only (no loss and 1% loss).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"
command -v mpirun >/dev/null || qpx_skip_all "mpirun not installed"
command -v mpicc >/dev/null || qpx_skip_all "mpicc not installed"
prog=$QPX_TESTDIR/ud_mpi
mpicc -O2 -Wall -o "$prog" "$QPX_SRCDIR/test/integration/ud_mpi.c" ||
    qpx_skip_all "cannot build ud_mpi.c with mpicc"

mpi() {
    ud_run env UCX_TLS=qpx_ud UCX_QPX_UD_PRINT_STATS=y "$@" timeout 300 \
        mpirun $QPX_MPIRUN_ARGS -np 2 "$prog" 2>&1
}
out=$(mpi); rc=$?
echo "$out" | grep -E "rank|qpx_ud stats" | sed 's/^/  /'
used=$(echo "$out" | grep -c "qpx_ud stats")
qpx_check "2 ranks over qpx_ud" [ $rc -eq 0 ]
qpx_check "both ranks used qpx_ud interfaces ($used)" [ "$used" -ge 2 ]

out=$(mpi SOFTVERBS_UD_DROP=0.01); rc=$?
echo "$out" | grep -E "rank" | sed 's/^/  /'
qpx_check "2 ranks over qpx_ud with 1% UD loss" [ $rc -eq 0 ]
qpx_finish
