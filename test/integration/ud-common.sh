# Shared setup of the qpx_ud integration tests (sourced after lib.sh)
[ -f "$QPX_MODULE" ] || qpx_skip_all "qpx module not built: $QPX_MODULE"
[ -f "$SOFTVERBS_LIBDIR/libibverbs.so.1" ] || qpx_skip_all "softverbs not built"
[ -e /dev/infiniband/uverbs0 ] || qpx_skip_all "no /dev/infiniband/uverbs0 (run softverbs-setup)"
UD_TEST=${QPX_TESTDIR:-.}/ud_uct_test
SOFTVERBS_STAT=${QPX_BUILDDIR}/src/softverbs/softverbs-stat
export SOFTVERBS_STAT
# The softverbs-stat wrapper script needs the libtool environment: prefer .libs
[ -x "${QPX_BUILDDIR}/src/softverbs/.libs/softverbs-stat" ] &&
    SOFTVERBS_STAT=${QPX_BUILDDIR}/src/softverbs/.libs/softverbs-stat
ud_run() {
    env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" "$@"
}
