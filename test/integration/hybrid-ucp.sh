#!/bin/sh
# UCP over the hybrid qpx transport alone (tl-ucp.sh): it connects to
# interfaces, so UCP needs no other transport for wireup; with the defaults
# (a short run's endpoints mostly stay on DC), in polling and in sleep mode
# (event notification through both sub-interfaces).
QPX_TL=qpx QPX_UCP_TLS=qpx . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
