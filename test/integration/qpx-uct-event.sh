#!/bin/sh
# Receive events on every qpx transport that offers them (qpx_uct_event.c,
# the case of UCX's gtest test_uct_event): armed with nothing to do, the
# event fd stays quiet (spurious below 1%), a message makes it readable
# (none missed), every message arrives. qpx_ud with UCX_QPX_UD_EVENTS=y.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
tl_prog_each "$QPX_TESTDIR/qpx_uct_event" UCX_QPX_UD_EVENTS=y -- -n 5000 --- qpx_rc qpx_ud qpx_dc qpx
qpx_finish
