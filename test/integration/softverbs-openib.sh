#!/bin/sh
#
# Open MPI 4.1's openib BTL over softverbs: the 2-rank qpx_mpi_test
# (ping-pong of 1 B to 4 MiB with the data checked, MPI_Put, MPI_Get,
# MPI_Accumulate, MPI_Fetch_and_op on a window, "MPI OK" only when every
# result is right) with pml ob1 and --mca btl openib,self: no shared-memory
# BTL, so all traffic between the ranks crosses softverbs, and the BML's
# report must show openib chosen for the peer. What openib needs
# (docs/softverbs.md, Open MPI's openib BTL): <sysfs>/class/infiniband,
# which softverbs' sysfs tree gives (without it openib's init "returned
# failure" without a word), and, Open MPI's own policy since 4.0 for
# InfiniBand HCAs whatever the device, --mca btl_openib_allow_ib 1 (without
# it: "There was an error initializing an OpenFabrics device").
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/softverbs-lib.sh"

for prog in mpicc mpirun ompi_info; do
    command -v $prog >/dev/null ||
        qpx_skip_all "$prog not installed (openmpi-bin, libopenmpi-dev)"
done
ompi_info 2>/dev/null | grep -q "MCA btl: openib" ||
    qpx_skip_all "Open MPI has no openib BTL component"
svt_env_setup
svt_need_device

src=${QPX_SRCDIR:-$here/../..}/test/integration/qpx_mpi_test.c
[ -e "$src" ] || src=$here/qpx_mpi_test.c
mpicc -O2 -o "$SVT_TMP/qpx_mpi_test" "$src" ||
    qpx_skip_all "mpicc failed on $src"

# openib_run NAME MCA-ARGS...: the program over openib,self; passes when it
# exits 0, prints "MPI OK" and the BML chose openib for the other rank
openib_run() {
    name=$1; shift
    out=$SVT_TMP/openib.out
    # a hang prints both ranks' stacks (one was softverbs' arming: an armed
    # CQ that held a CQE sent no event, and udcm arms without polling
    # again; docs/softverbs.md, Events)
    qpx_run_watched $((120 * ${QPX_TIMEOUT_SCALE:-3})) qpx_mpi_test \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x LD_LIBRARY_PATH -x SOFTVERBS_SHM \
        --mca pml ob1 --mca btl openib,self --mca btl_base_verbose 100 \
        "$@" "$SVT_TMP/qpx_mpi_test" >"$out" 2>&1
    rc=$?
    nb=$(grep -c "Using openib btl for send to" "$out")
    if [ $rc -eq 0 ] && grep -q "^MPI OK" "$out" && [ "$nb" -eq 2 ]; then
        qpx_pass "$name: MPI OK (ping-pong 1 B..4 MiB, put, get, accumulate, fetch_and_op checked), openib chosen by both ranks"
    else
        qpx_fail "$name: exit $rc, openib chosen by $nb of 2 ranks"
        grep -v "components_\|mca: base: close" "$out" |
            sed '/^==== /,$d' | tail -n 25 | sed 's/^/  | /'
        sed -n '/^==== /,$p' "$out" | sed 's/^/  | /'
    fi
}
# (Debian's openib has one connection manager on InfiniBand, its own
# out-of-band udcm over UD QPs: btl_openib_cpc_include lists no rdmacm)
openib_run "Open MPI openib,self (pml ob1)" --mca btl_openib_allow_ib 1

svt_check_released "no objects left after the MPI processes exited"

qpx_finish
