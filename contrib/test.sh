#!/bin/bash
#
# Set everything up and run all tests: cmocka unit tests and integration
# tests (softverbs conformance and clients, qpx transports over softverbs).
# Ends with one line "N passed, N failed, N skipped"; exits non-zero if any
# test failed.
#
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
qpx_setup || { echo "0 passed, 1 failed"; exit 1; }

cd "$QPX_BUILDDIR"
qpx_say "tests: make check"
make -k check >check.out 2>&1
check_rc=$?

pass=0; fail=0; skip=0
for log in $(find test -name test-suite.log | sort); do
    dir=$(dirname "$log")
    p=$(grep -E '^# PASS:' "$log" | awk '{print $3}')
    f=$(grep -E '^# (FAIL|ERROR|XPASS):' "$log" | awk '{s += $3} END {print s + 0}')
    s=$(grep -E '^# SKIP:' "$log" | awk '{print $3}')
    pass=$((pass + ${p:-0})); fail=$((fail + f)); skip=$((skip + ${s:-0}))
    printf '  %-20s %3d passed, %3d failed, %3d skipped\n' "$dir" "${p:-0}" "$f" "${s:-0}"
done
# Per-test results, and the logs of what did not pass
for trs in $(find test -name '*.trs' | sort); do
    res=$(sed -n 's/^:test-result: //p' "$trs")
    printf '  %-6s %s\n' "$res" "${trs%.trs}"
    case "$res" in
    FAIL|ERROR|XPASS) echo "---- ${trs%.trs}.log"; tail -40 "${trs%.trs}.log" ;;
    SKIP) grep -h '^SKIP' "${trs%.trs}.log" | head -3 | sed 's/^/         /' ;;
    esac
done
if [ "$check_rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
    # make check failed before any test could report (e.g. a build error)
    tail -30 check.out
    fail=1
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
