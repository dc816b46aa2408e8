#!/bin/sh
# uct_ep_destroy completes the endpoint's outstanding operations, and none
# of their completions runs after it (qpx_uct_destroy_comp.c, the case of
# UCX's gtest test_uct_ep.destroy_entity_after_send), on every qpx
# transport, with the send queues full of zero-copy active messages.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
tl_prog_each "$QPX_TESTDIR/qpx_uct_destroy_comp" qpx_rc qpx_ud qpx_dc qpx
qpx_finish
