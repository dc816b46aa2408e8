#!/bin/sh
# One-sided operations to a peer that never calls progress go on without
# being refused, and move the right data (qpx_uct_quiet_peer.c, the pattern
# of UCX's gtest uct_fence_test): add, fence, fetch-add and flush, 1000
# times, on every qpx transport that connects to an interface; on the
# hybrid this crosses its promotion threshold, and the promotion request is
# never answered.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
tl_prog_each "$QPX_TESTDIR/qpx_uct_quiet_peer" qpx_dc qpx
qpx_finish
