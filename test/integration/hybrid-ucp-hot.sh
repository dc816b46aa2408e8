#!/bin/sh
# UCP over the hybrid qpx transport alone (tl-ucp.sh), every endpoint
# promoted to an RC QP at its first operation
QPX_UCP_SLEEP=n UCX_QPX_PROMOTE_THRESH=1
export QPX_UCP_SLEEP UCX_QPX_PROMOTE_THRESH
QPX_TL=qpx QPX_UCP_TLS=qpx . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
