#!/bin/sh
# OpenSHMEM over qpx_dc alone (tl-shmem.sh), 8 PEs with one DCI and one
# send buffer each: 7 PEs' atomics (UCP's, over active messages) meet at
# PE 0. Endpoints that asked for the DCI while others waited queued behind
# them; with the DCI already free and nothing outstanding, no completion
# came to wake them until the next keepalive round (2 s), again and again:
# the program took 3.4 minutes, where it takes seconds. 60 s is the bound
# (beside another test on 2 cores).
UCX_QPX_DC_NUM_DCI=1 UCX_QPX_DC_TX_MAX_BUFS=1
export UCX_QPX_DC_NUM_DCI UCX_QPX_DC_TX_MAX_BUFS
QPX_SHMEM_TIMEOUT=60 QPX_TL=qpx_dc QPX_NPES=8 QPX_UCP_TLS=qpx_dc,self \
    . "$QPX_SRCDIR/test/integration/tl-shmem.sh"
