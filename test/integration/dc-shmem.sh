#!/bin/sh
# OpenSHMEM over qpx_dc alone (tl-shmem.sh), 4 PEs
QPX_TL=qpx_dc QPX_NPES=4 QPX_UCP_TLS=qpx_dc,self \
    . "$QPX_SRCDIR/test/integration/tl-shmem.sh"
