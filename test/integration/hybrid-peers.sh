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
fail_env="UCX_QPX_DC_TIMEOUT=125ms UCX_QPX_DC_RETRY_COUNT=3
          UCX_QPX_RC_TIMEOUT=100ms UCX_QPX_RC_RETRY_COUNT=3"
tl_peers "failures (on DC)" $fail_env -- -m fail
tl_peers "failures (promoted at the first operation)" $fail_env \
    UCX_QPX_PROMOTE_THRESH=1 -- -m fail
tl_peers "peers killed in a switch" $fail_env UCX_QPX_PROMOTE_THRESH=1 \
    UCX_QPX_RC_POOL_SIZE=1 UCX_QPX_SWITCH_TIMEOUT=2s -- -m switch

# Peers on different cold paths (UCX_QPX_COLD_TL=dc on one, ud on the
# other): qpx_dc's and qpx_ud's addresses are both 3-byte queue numbers,
# and the pair took each other for reachable and hung until killed (a UD
# QPN used as a DCT number). The interface address now says which path it
# is: UCP finds the peer unreachable and both sides fail at once.
port=$(qpx_free_port)
out=$TL_TMP/mixed
env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
    UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 UCX_QPX_COLD_TL=dc \
    timeout 60 ucx_perftest -t tag_bw -s 8 -n 1000 -p "$port" \
    >"$out.srv" 2>&1 &
spid=$!
qpx_wait_port "$port"
start=$(date +%s)
env LD_LIBRARY_PATH="$SOFTVERBS_LIBDIR" LD_PRELOAD="$QPX_MODULE" \
    UCX_TLS=qpx UCX_NET_DEVICES=softverbs0:1 UCX_QPX_COLD_TL=ud \
    timeout 60 ucx_perftest -t tag_bw -s 8 -n 1000 -p "$port" 127.0.0.1 \
    >"$out.cli" 2>&1
crc=$?
wait $spid
src=$?
secs=$(($(date +%s) - start))
if [ $crc -ne 0 ] && [ $crc -ne 124 ] && [ $src -ne 124 ] &&
   grep -q "Destination is unreachable" "$out.cli"; then
    qpx_pass "a DC cold path and a UD one: unreachable, client exit $crc and server $src after $secs s"
else
    qpx_fail "a DC cold path and a UD one: client exit $crc, server $src after $secs s (124: hung)"
    tail -n 3 "$out.cli" "$out.srv"
fi
qpx_finish
