#!/bin/sh
# The ucx_perftest matrix (tl-perftest.sh) over the hybrid qpx transport,
# every endpoint promoted to RC at its first operation
UCX_QPX_PROMOTE_THRESH=1
export UCX_QPX_PROMOTE_THRESH
QPX_TL=qpx . "$QPX_SRCDIR/test/integration/tl-perftest.sh"
