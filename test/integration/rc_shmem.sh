#!/bin/sh
# OpenSHMEM over qpx_rc (tl-shmem.sh), 2 PEs, with UCX's ud_verbs for wireup
QPX_TL=qpx_rc . "$QPX_SRCDIR/test/integration/tl-shmem.sh"
