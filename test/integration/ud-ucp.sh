#!/bin/sh
# UCP over qpx_ud alone (tl-ucp.sh): it connects to interfaces for wireup
# and carries every lane itself (RMA and atomics emulated by UCP over
# active messages); the sleep-mode cases need its event notification
QPX_TL=qpx_ud QPX_UCP_TLS=qpx_ud . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
