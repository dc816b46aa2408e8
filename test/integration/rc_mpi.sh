#!/bin/sh
# Open MPI over qpx_rc (tl-mpi.sh), with UCX's ud_verbs for wireup
QPX_TL=qpx_rc . "$QPX_SRCDIR/test/integration/tl-mpi.sh"
