#!/bin/sh
# UCP over the hybrid qpx transport alone (tl-ucp.sh): it connects to
# interfaces, so UCP needs no other transport for wireup. Run twice: with
# the defaults (endpoints stay on DC for short runs) and with every endpoint
# promoted to RC at its first operation (UCX_QPX_PROMOTE_THRESH=1). No
# sleep-mode cases: qpx has no event notification yet.
QPX_UCP_SLEEP=n
export QPX_UCP_SLEEP
QPX_TL=qpx QPX_UCP_TLS=qpx . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
