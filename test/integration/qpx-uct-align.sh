#!/bin/sh
# The AM alignment of uct_iface_open (am_alignment, am_align_offset) on
# every qpx transport (qpx_uct_align.c): invalid alignments and an offset
# without an alignment refused; for alignments 1 to 4096, with and without
# an offset, every AM the receiver is handed in its own buffer lands with
# data + offset aligned, its bytes intact.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
tl_prog_each "$QPX_TESTDIR/qpx_uct_align" qpx_rc qpx_ud qpx_dc qpx
qpx_finish
