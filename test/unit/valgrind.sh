#!/bin/bash
#
# Every unit test program again under valgrind: memory errors or leaks in
# the objects they exercise fail this test. Programs come from UNIT_PROGRAMS.
#
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; exit 77; }
pass=0; fail=0
for prog in $UNIT_PROGRAMS; do
    [ "$prog" = valgrind.sh ] && continue
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            "./$prog" >"$prog.vg.out" 2>&1; then
        echo "PASS: $prog under valgrind"; pass=$((pass + 1))
    else
        echo "FAIL: $prog under valgrind"; fail=$((fail + 1))
        grep -E '==[0-9]+==|FAILED|ERROR' "$prog.vg.out" | head -30
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
