#!/bin/sh
# Pending requests keep their place against what completion callbacks send
# (qpx_uct_pending_order.c, the case of UCX's gtest
# test_uct_pending.send_ooo_with_comp), on every qpx transport with small
# send queues: the request queued first is received first, and a request
# freed by its own callback is not touched after.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
# 8 send slots, and no flow-control window beyond them
tl_prog_each "$QPX_TESTDIR/qpx_uct_pending_order" UCX_QPX_TX_QUEUE_LEN=8 UCX_QPX_UD_WINDOW=8 UCX_QPX_DC_NUM_DCI=1 -- qpx_rc qpx_ud qpx_dc qpx
qpx_finish
