#!/bin/sh
# The hybrid qpx with qpx_ud as its cold path (UCX_QPX_COLD_TL=ud: what a
# device without DC gets), under UCP (tl-ucp.sh, UCX_TLS=qpx alone):
# endpoints promoted after 8 operations; RMA and atomics emulated by UCP
# over active messages (the cold path has none); sleep mode through qpx_ud's
# event notification.
UCX_QPX_COLD_TL=ud UCX_QPX_PROMOTE_THRESH=8 UCX_QPX_UD_EVENTS=y
export UCX_QPX_COLD_TL UCX_QPX_PROMOTE_THRESH UCX_QPX_UD_EVENTS
QPX_TL=qpx QPX_UCP_TLS=qpx . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
