#!/bin/sh
# The hybrid qpx with many peers and failing ones (qpx_dc_peers -x qpx):
# one interface reaches 4096 endpoints over 16 interfaces of 4 processes,
# every endpoint asking for RC at its first operation, with a pool of 64
# RC QPs: the hub's RC QPs never exceed the pool (its QPs: DCIs + DCT +
# at most pool + 1), its RC QPs and DCT share one SRQ (two with
# UCX_QPX_SHARED_SRQ=n), every put and fetch-add checked. A wrong DC key, a
# destroyed DCT and a killed peer each fail their endpoint through the
# error handler, and the healthy peer goes on being served, on DC and with
# promotion at the first operation (the healthy peer is a passive target:
# it never answers a promotion, which is given up after SWITCH_TIMEOUT).
# With peers that answer promotions and a pool of one RC QP: a peer killed
# before its promotion's request reaches it, and a peer killed while it
# holds the RC QP (the next promotion demotes it, and the demotion meets
# the dead peer) each fail their endpoint only, and the healthy peer is
# served after each.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx

tl_peers "4096 eps, pool 64" UCX_QPX_RC_POOL_SIZE=64 UCX_QPX_PROMOTE_THRESH=1 \
    -- -m many -p 4 -i 4 -e 4096
tl_peers "1024 eps, pool 16, an SRQ per sub-interface" UCX_QPX_RC_POOL_SIZE=16 \
    UCX_QPX_PROMOTE_THRESH=1 UCX_QPX_SHARED_SRQ=n -- -m many -p 2 -i 2 -e 1024
fail_env="UCX_QPX_DC_TIMEOUT=500ms UCX_QPX_DC_RETRY_COUNT=3
          UCX_QPX_RC_TIMEOUT=100ms UCX_QPX_RC_RETRY_COUNT=3"
tl_peers "failures (on DC)" $fail_env -- -m fail
tl_peers "failures (promoted at the first operation)" $fail_env \
    UCX_QPX_PROMOTE_THRESH=1 -- -m fail
tl_peers "peers killed in a switch" $fail_env UCX_QPX_PROMOTE_THRESH=1 \
    UCX_QPX_RC_POOL_SIZE=1 UCX_QPX_SWITCH_TIMEOUT=2s -- -m switch
qpx_finish
