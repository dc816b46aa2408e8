#!/bin/sh
# qpx_dc with many tl_peers and failing ones (qpx_dc_peers): one interface
# reaches 4096 endpoints over 16 interfaces of 4 processes with its QPs
# staying NUM_DCI + 1, every put and fetch-add checked; a wrong DC key, a
# destroyed DCT and a killed peer each fail their endpoint through the
# error handler, with nothing written, and the interface goes on serving a
# healthy peer.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
tl_peers "4096 eps (dcs)" -- -m many -p 4 -i 4 -e 4096
tl_peers "1024 eps (sticky, 2 DCIs)" UCX_QPX_DC_TX_POLICY=sticky \
    UCX_QPX_DC_NUM_DCI=2 -- -m many -p 2 -i 2 -e 1024
tl_peers "1024 eps (rand)" UCX_QPX_DC_TX_POLICY=rand -- -m many -p 2 -i 2 -e 1024
tl_peers "1024 eps (spread)" UCX_QPX_DC_TX_POLICY=spread -- -m many -p 2 -i 2 -e 1024
tl_peers "failures" UCX_QPX_DC_TIMEOUT=125ms UCX_QPX_DC_RETRY_COUNT=3 -- -m fail
tl_peers "failures (spread)" UCX_QPX_DC_TIMEOUT=125ms UCX_QPX_DC_RETRY_COUNT=3 \
    UCX_QPX_DC_TX_POLICY=spread -- -m fail
qpx_finish
