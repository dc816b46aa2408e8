#!/bin/sh
# The ucx_perftest matrix (tl-perftest.sh) over qpx_ud
QPX_TL=qpx_ud . "$QPX_SRCDIR/test/integration/tl-perftest.sh"
