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
    set -- valgrind --trace-children=yes --error-exitcode=99 --leak-check=no \
        -q "$prog" "$@"
else
    set -- "$prog" "$@"
fi
# 5 minutes is far above the suite's normal run time; per-case bounds apply
timeout -k 5 ${SVT_CONFORMANCE_TIMEOUT:-300} "$@"
rc=$?
[ $rc -eq 124 ] && echo "FAIL: conformance suite timed out"
exit $rc
