#!/bin/sh
# UCP over qpx_dc alone (tl-ucp.sh): it connects to interfaces, so UCP needs
# no other transport for wireup
QPX_TL=qpx_dc QPX_UCP_TLS=qpx_dc . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
