#!/bin/sh
#
# The softverbs conformance suite (softverbs_conformance, C) against the
# replacement libraries. Arguments are case name globs (default: all);
# SVT_VALGRIND=1 runs it under valgrind (all ranks).
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/softverbs-lib.sh"

prog=${QPX_TESTDIR:-.}/softverbs_conformance
[ -x "$prog" ] || qpx_skip_all "$prog not built"
svt_env_setup
svt_need_device

if [ -n "$SVT_VALGRIND" ]; then
    SVT_TIMEOUT_SCALE=${SVT_TIMEOUT_SCALE:-10}
    export SVT_TIMEOUT_SCALE
    set -- valgrind --trace-children=yes --error-exitcode=99 --leak-check=no \
        -q "$prog" "$@"
else
    set -- "$prog" "$@"
fi
# far above the suite's normal run time (~10 s); per-case bounds apply too
limit=300
[ -n "$SVT_VALGRIND" ] && limit=3000
timeout -k 5 "${SVT_CONFORMANCE_TIMEOUT:-$limit}" "$@"
rc=$?
[ $rc -eq 124 ] && echo "FAIL: conformance suite timed out"
exit $rc
