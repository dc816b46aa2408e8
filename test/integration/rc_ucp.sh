#!/bin/sh
# UCP over qpx_rc (tl-ucp.sh), with UCX's ud_verbs for wireup
QPX_TL=qpx_rc . "$QPX_SRCDIR/test/integration/tl-ucp.sh"
