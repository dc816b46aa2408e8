#!/bin/sh
# A receiver that keeps every active message (its handler returns
# UCS_INPROGRESS) exhausts its receive buffers: the sender gets
# UCS_ERR_NO_RESOURCE, every message sent arrives once, in order and
# intact, and once the buffers are given back the sender sends again
# (qpx_uct_rx_exhaust.c), on every qpx transport: UCX's gtest
# uct_p2p_am_misc.no_rx_buffs, which sets the receive limits through UCX's
# IB option names and so skips for qpx, with qpx's own names and the
# gtest's values.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
tl_prog_each "$QPX_TESTDIR/qpx_uct_rx_exhaust" \
    UCX_QPX_RX_MAX_BUFS=1024 UCX_QPX_RX_QUEUE_LEN=256 -- \
    qpx_rc qpx_ud qpx_dc qpx
qpx_finish
