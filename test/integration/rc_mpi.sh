#!/bin/sh
. "$QPX_SRCDIR/test/integration/lib.sh"
qpx_skip_all "not written yet"
