#!/bin/sh
# Open MPI over qpx_dc alone (tl-mpi.sh)
QPX_TL=qpx_dc QPX_UCP_TLS=qpx_dc,self . "$QPX_SRCDIR/test/integration/tl-mpi.sh"
