#!/bin/sh
# The ucx_perftest matrix (tl-perftest.sh) over qpx_rc
QPX_TL=qpx_rc . "$QPX_SRCDIR/test/integration/tl-perftest.sh"
