#!/bin/sh
# The AM alignment of uct_iface_open (am_alignment, am_align_offset) on
# every qpx transport (qpx_uct_align.c): invalid alignments and an offset
# without an alignment refused; for alignments 1 to 4096, with and without
# an offset, every AM the receiver is handed in its own buffer lands with
# data + offset aligned, its bytes intact.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
prog=$QPX_TESTDIR/qpx_uct_align
[ -x "$prog" ] || qpx_skip_all "$prog not built"
for tl in qpx_rc qpx_ud qpx_dc qpx; do
    qpx_has_tl "$tl" || continue
    LD_PRELOAD=$QPX_MODULE timeout 120 "$prog" -x "$tl" -d "$QPX_DEV" \
        >"$TL_TMP/out" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL)' "$TL_TMP/out" | sed "s/^\([A-Z]*\): /\1: $tl: /"
    summary=$(tail -n 1 "$TL_TMP/out")
    qpx_check "$tl: $summary (exit $rc)" [ $rc -eq 0 ]
done
qpx_finish
