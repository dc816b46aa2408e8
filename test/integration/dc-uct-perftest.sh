#!/bin/sh
# The ucx_perftest matrix (tl-perftest.sh) over qpx_dc
QPX_TL=qpx_dc . "$QPX_SRCDIR/test/integration/tl-perftest.sh"
