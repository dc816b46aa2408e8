#!/bin/sh
# Open MPI over the hybrid qpx transport alone (tl-mpi.sh), endpoints
# promoted after 8 operations
UCX_QPX_PROMOTE_THRESH=8
export UCX_QPX_PROMOTE_THRESH
QPX_TL=qpx QPX_UCP_TLS=qpx,self . "$QPX_SRCDIR/test/integration/tl-mpi.sh"
