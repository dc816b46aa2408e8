#!/bin/sh
# UCP over the hybrid qpx transport alone (tl-ucp.sh), every endpoint
# promoted to an RC QP at its first operation, in polling and in sleep mode
UCX_QPX_PROMOTE_THRESH=1
export UCX_QPX_PROMOTE_THRESH
QPX_TL=qpx QPX_UCP_TLS=qpx . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
