#!/bin/sh
# What an endpoint says about its peer, on every qpx transport
# (qpx_uct_ep_peer.c): uct_ep_check with a completion, as UCX 1.22 calls it
# (UCX's gtest test_uct_ep_check_async), and, built against UCX 1.19 or
# later, uct_ep_is_connected (test_uct_ep.is_connected; contrib/
# ucx-versions.sh runs it there). Against Debian's 1.13 only the checks
# are compiled.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
tl_prog_each "$QPX_TESTDIR/qpx_uct_ep_peer" qpx_rc qpx_ud qpx_dc qpx
qpx_finish
