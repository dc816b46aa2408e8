#!/bin/sh
# OpenSHMEM over the hybrid qpx transport alone (tl-shmem.sh), 8 PEs,
# endpoints promoted after 8 operations from a pool of 2 RC QPs per PE
# (promotions refused and demotions on the way)
UCX_QPX_PROMOTE_THRESH=8 UCX_QPX_RC_POOL_SIZE=2
export UCX_QPX_PROMOTE_THRESH UCX_QPX_RC_POOL_SIZE
QPX_TL=qpx QPX_NPES=8 QPX_UCP_TLS=qpx,self \
    . "$QPX_SRCDIR/test/integration/tl-shmem.sh"
