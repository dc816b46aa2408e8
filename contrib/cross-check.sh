#!/bin/bash
#
# cross-check.sh arm64: build qpx and softverbs for another CPU with
# Debian's cross compiler and that architecture's packages (multiarch), and
# run what was built under qemu-user:
#   - the cmocka unit tests (test/unit), each program's cases counted;
#   - softverbs-smoke (softverbs' own checks, with a forked peer);
#   - two pairs of processes over softverbs that check the data they move:
#     qpx_uct_integrity over qpx_rc and over qpx_ud (initiator and forked
#     target, the qpx module and softverbs' libraries of the cross build).
# Installs what it needs when missing (as root: the foreign architecture,
# apt-get update, the cross compiler, qemu-user, the -dev packages). Builds
# out of tree in $QPX_BUILDDIR/cross-arm64 (default build/cross-arm64 under
# this checkout), configured with --enable-werror.
# Ends with "N passed, N failed"; exits 0 when all passed, 77 (with a
# "SKIP: reason" line) only when the cross tools cannot be installed.
#
set -uo pipefail

QPX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${1:-}
case $target in
arm64)
    triplet=aarch64-linux-gnu
    qemu=qemu-aarch64
    ;;
*)
    echo "usage: $0 arm64" >&2
    exit 2
    ;;
esac
builddir=${QPX_BUILDDIR:-$QPX_TOP/build}/cross-$target
say() { echo "==> $*"; }
skip() { echo "SKIP: $*"; echo "0 passed, 0 failed"; exit 77; }
t_start=$SECONDS

# ---- what configure needs for the target (see configure.ac): UCX,
# libibverbs (with libmlx5's mlx5dv.h), librdmacm, cmocka; libc6:$target
# comes with them and gives qemu the target's loader and libc. The
# target's C library headers and start files (crt1.o) are only a
# recommendation of gcc-$triplet, which --no-install-recommends leaves
# out: named here (a fresh machine failed "C compiler cannot create
# executables" without them)
host_pkgs="gcc-$triplet qemu-user"
target_pkgs="libc6-dev:$target libucx-dev:$target libibverbs-dev:$target librdmacm-dev:$target libcmocka-dev:$target"
missing=()
for pkg in $host_pkgs $target_pkgs; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
        missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] ||
        skip "not root: cannot install ${missing[*]} (sudo apt-get install them)"
    say "packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    dpkg --print-foreign-architectures | grep -qx "$target" ||
        dpkg --add-architecture "$target" || skip "dpkg --add-architecture $target failed"
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 ||
        skip "apt-get update failed (no network?): cannot install ${missing[*]}"
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        "${missing[@]}" >"${TMPDIR:-/tmp}/cross-check-apt.$$" 2>&1 || {
        tail -5 "${TMPDIR:-/tmp}/cross-check-apt.$$"
        rm -f "${TMPDIR:-/tmp}/cross-check-apt.$$"
        skip "apt-get install ${missing[*]} failed"
    }
    rm -f "${TMPDIR:-/tmp}/cross-check-apt.$$"
else
    say "packages: all present"
fi

pass=0; fail=0
row() { # row RESULT NAME PASSED FAILED [NOTE]
    printf '  %-5s %-44s %4d passed, %3d failed%s\n' "$1" "$2" "$3" "$4" "${5:+ ($5)}"
    pass=$((pass + $3)); fail=$((fail + $4))
}
finish() {
    say "cross-check $target: $((SECONDS - t_start)) s"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
    exit $?
}

# ---- build
cd "$QPX_TOP" || exit 1
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
    say "build: autogen.sh"
    ./autogen.sh >/dev/null 2>&1 || { row FAIL "autogen.sh" 0 1; finish; }
fi
mkdir -p "$builddir" && cd "$builddir" || exit 1
# pkg-config reads the target's .pc files only (Debian 12 has no
# $triplet-pkg-config); mpicc/oshcc would be the build machine's, so none
export PKG_CONFIG=pkg-config
export PKG_CONFIG_LIBDIR=/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig
if [ ! -f Makefile ] || [ "$QPX_TOP/configure" -nt Makefile ]; then
    say "build: configure --host=$triplet --enable-werror in $builddir"
    "$QPX_TOP/configure" --host="$triplet" --enable-werror \
        ac_cv_path_MPICC= ac_cv_path_OSHCC= >configure.out 2>&1 ||
        { tail -30 configure.out; row FAIL "configure --host=$triplet" 0 1; finish; }
fi
say "build: qpx, softverbs, unit tests, integrity program (make -j2)"
if ! { make -j2 -C src/softverbs && make -j2 -C src &&
       make -j2 -C test/unit check TESTS= &&
       make -j2 -C src/softverbs check TESTS= &&
       make -j2 -C test/integration qpx_uct_integrity; } >make.out 2>&1; then
    grep -E 'error|Error' make.out | head -20; tail -10 make.out
    row FAIL "build for $triplet (--enable-werror)" 0 1
    finish
fi
say "build: done (a build failure counts as one failed)"

# ---- run under qemu-user. No -L: the target's loader and libc are the
# multiarch libc6:$target, found at their usual paths (-L with the cross
# compiler's /usr/$triplet mixed that loader with the multiarch libc, and
# programs hung in their start-up). Environment for the program goes
# through -E so that qemu itself (a program of the build machine) does not
# take the target's LD_PRELOAD and LD_LIBRARY_PATH.
unset QEMU_LD_PREFIX
export SOFTVERBS_SHM=/dev/shm/softverbs-cross-$target-$$
trap 'rm -f "$SOFTVERBS_SHM" "$SOFTVERBS_SHM".*' EXIT
svlib=$builddir/src/softverbs/.libs
module=$builddir/src/.libs/libuct_qpx.so
# UCX skips a verbs device without its /dev/infiniband node
if [ ! -e /dev/infiniband/uverbs0 ]; then
    { mkdir -p /dev/infiniband && ln -sf /dev/null /dev/infiniband/uverbs0; } 2>/dev/null ||
        echo "warning: no /dev/infiniband/uverbs0: the qpx pairs will not find softverbs0"
fi
out=$builddir/cross-check.d
rm -rf "$out"; mkdir -p "$out"

# run NAME TIMEOUT PROGRAM [ARGS...]: under qemu; log in $out/NAME.log
run() {
    local name=$1 limit=$2; shift 2
    timeout -k 5 "$limit" "$qemu" "$@" >"$out/$name.log" 2>&1
}

say "tests: unit tests under $qemu"
unit_progs=$(make -s -C test/unit -f Makefile -f - print-unit <<<'print-unit: ; @echo $(check_PROGRAMS)' 2>/dev/null)
[ -n "$unit_progs" ] || { row FAIL "test/unit: no programs listed" 0 1; finish; }
for prog in $unit_progs; do
    bin=test/unit/$prog
    [ -f "test/unit/.libs/$prog" ] && bin=test/unit/.libs/$prog
    run "$prog" 300 "$bin"; rc=$?
    log=$out/$prog.log
    p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) test\(s\).*/\1/p' "$log" | tail -1)
    f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) test\(s\).*/\1/p' "$log" | tail -1)
    p=${p:-0}; f=${f:-0}
    note=""
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1; note="exit $rc"; [ "$rc" -eq 124 ] && note="timed out"
    fi
    if [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
        row PASS "unit/$prog" "$p" 0
    else
        [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1 && note="no cases counted"
        row FAIL "unit/$prog" "$p" "$f" "$note"
        grep -E '^\[  (ERROR|FAILED|  LINE) ' "$log" | head -10; tail -5 "$log"
    fi
done

say "tests: softverbs under $qemu"
run softverbs-smoke 300 -E LD_LIBRARY_PATH="$svlib" "$svlib/softverbs-smoke"; rc=$?
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/softverbs-smoke.log" | tail -1)
p=$(sed -nE 's/^([0-9]+) passed.*/\1/p' <<<"$line"); p=${p:-0}
f=$(sed -nE 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/p' <<<"$line"); f=${f:-0}
if [ "$rc" -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
    row PASS "softverbs-smoke" "$p" 0
else
    [ "$f" -eq 0 ] && f=1
    row FAIL "softverbs-smoke" "$p" "$f" "exit $rc"
    grep '^FAIL' "$out/softverbs-smoke.log" | head -10; tail -5 "$out/softverbs-smoke.log"
fi

# The pairs: one counted each, with the data checks they made
for tl in qpx_rc qpx_ud; do
    run "pair-$tl" 300 -E LD_PRELOAD="$module" -E LD_LIBRARY_PATH="$svlib" \
        test/integration/qpx_uct_integrity -x "$tl" -d softverbs0:1; rc=$?
    log=$out/pair-$tl.log
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ "$rc" -eq 0 ] && grep -qE '^[1-9][0-9]* passed, 0 failed' <<<"$line"; then
        row PASS "pair: qpx_uct_integrity -x $tl" 1 0 "its checks: $line"
    else
        row FAIL "pair: qpx_uct_integrity -x $tl" 0 1 "exit $rc${line:+, $line}"
        grep '^FAIL' "$log" | head -10; tail -10 "$log"
    fi
done

finish
