#!/bin/sh
# qpx's UCT paths under valgrind's memcheck, both processes of each run:
# the data-integrity program (every operation each transport advertises,
# each size class, payload checked) on qpx_rc, qpx_ud, qpx_dc and the
# hybrid promoted at its first operation (its hold of RC messages until
# SWITCHED), and the flood program on the hybrid with a pool of one QP
# (promotions, demotions, transfers); and UCP's active messages with a
# user header, every size class to rendezvous (qpx_ucp_am.c, both
# processes checking what they received), over the hybrid promoted at
# once and over qpx_dc with qpx_ud. A read of memory nothing wrote, a
# write out of bounds, a double free or a definite leak in either process
# fails the case, with valgrind's report. This is how the hybrid's
# rx_holds, left as ucs_class_malloc gave it, is found without waiting
# for the heap to hold 0xffffffff there (UCX 1.22 gtest, CI).
# valgrind-remote.supp: what memcheck cannot see across processes.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
command -v valgrind >/dev/null || qpx_skip_all "valgrind not installed"
tl_setup qpx
VG_SUPP="$QPX_SRCDIR/test/integration/valgrind-remote.supp"

# vg_run NAME PROG ARGS... (env from VG_ENV): PROG and the process it forks
# under memcheck
vg_run() {
    name=$1; shift
    rm -f "$TL_TMP"/vg.*.log
    # shellcheck disable=SC2086 # VG_ENV: words
    env $VG_ENV LD_PRELOAD="$QPX_MODULE" timeout 900 \
        valgrind -q --error-exitcode=99 --track-origins=yes \
        --leak-check=full --errors-for-leak-kinds=definite \
        --num-callers=30 --suppressions="$VG_SUPP" \
        --log-file="$TL_TMP/vg.%p.log" "$@" >"$TL_TMP/out" 2>&1
    rc=$?
    # the logs, without valgrind's notes on what it does not model
    errs=$(cat "$TL_TMP"/vg.*.log 2>/dev/null |
           grep -v -e 'WARNING: valgrind ignores shmget' -e '^==[0-9]*== *$' |
           grep -c '^==[0-9]*==')
    if [ "$rc" -eq 0 ] && [ "$errs" -eq 0 ]; then
        qpx_pass "$name under memcheck: $(tail -n 1 "$TL_TMP/out")"
    else
        qpx_fail "$name under memcheck (exit $rc, $errs lines of valgrind's report)"
        tail -n 5 "$TL_TMP/out"
        cat "$TL_TMP"/vg.*.log | head -80
    fi
}

for tl in qpx_rc qpx_ud qpx_dc; do
    qpx_has_tl "$tl" || continue
    VG_ENV="" vg_run "$tl integrity" "$QPX_TESTDIR/qpx_uct_integrity" \
        -x "$tl" -d "$QPX_DEV"
done
VG_ENV="UCX_QPX_PROMOTE_THRESH=1" vg_run "qpx integrity, promoted at once" \
    "$QPX_TESTDIR/qpx_uct_integrity" -x qpx -d "$QPX_DEV"
VG_ENV="UCX_QPX_PROMOTE_THRESH=1 UCX_QPX_RC_POOL_SIZE=1 UCX_QPX_SWITCH_TIMEOUT=1s" \
    vg_run "qpx flood, 4 endpoints on a pool of 1" \
    "$QPX_TESTDIR/qpx_uct_flood" -x qpx -d "$QPX_DEV" -e 4 -n 2000

if gcc -O1 -g -o "$TL_TMP/am" "$QPX_SRCDIR/test/integration/qpx_ucp_am.c" \
        -lucp -lucs 2>"$TL_TMP/gcc.out"; then
    ucp="UCX_NET_DEVICES=$QPX_DEV UCX_WARN_UNUSED_ENV_VARS=n"
    VG_ENV="$ucp UCX_TLS=qpx,self UCX_QPX_PROMOTE_THRESH=1" \
        vg_run "UCP AM over qpx, promoted at once" "$TL_TMP/am" 10
    VG_ENV="$ucp UCX_TLS=qpx_dc,qpx_ud,self" \
        vg_run "UCP AM over qpx_dc,qpx_ud" "$TL_TMP/am" 10
else
    qpx_fail "qpx_ucp_am.c does not build: $(head -n 1 "$TL_TMP/gcc.out")"
fi
qpx_finish
