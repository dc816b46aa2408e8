#!/bin/bash
#
# ucx-gtest.sh: UCX's own gtest suite, built from the unmodified UCX release
# source, run against qpx over softverbs.
#
#   bash contrib/ucx-gtest.sh [build|run|cached|failover] [VERSION] [FILTER]
#
# VERSION is one of the releases with a patch in contrib/ucx-gtest/:
#   1.13.1 (the default) Debian 12's installed UCX, the one qpx's main build
#          (build/) is for; qpx enters the gtest process by LD_PRELOAD.
#   1.19.1 qpx built against that release by `bash contrib/ucx-versions.sh
#          1.19.1` (in $QPX_BUILDDIR/ucx-1.19.1); by LD_PRELOAD.
#   1.22.0 likewise (`bash contrib/ucx-versions.sh 1.22.0`); qpx is loaded
#          by UCX itself from UCX_PLUGIN_PATH (as libuct_qpx.so.0), no
#          preload.
#
# build  extracts ../shared/ucx/ucx-VERSION.tar.gz, applies
#        contrib/ucx-gtest/ucx-VERSION-qpx.patch (it only adds qpx's
#        transports to the generic instantiation lists of
#        test/gtest/uct/uct_test.h; the tests are UCX's) and builds the
#        libraries and test/gtest. 1.13.1 is configured like Debian's libucx0
#        and checked against it (the ENABLE_* values of `ucx_info -b`, which
#        decide UCX's internal struct layouts that qpx declares). 1.19.1 and
#        1.22.0 are configured like contrib/ucx-build.sh's library build,
#        whose tree qpx for them is compiled against (the same ENABLE_*
#        values; no GPU, knem, xpmem, ugni or fuse3 parts), with gtest; the
#        installed UCX is no reference for them, so the ucx_info -b check is
#        skipped and `run` compares the configuration with that tree's
#        instead. The result is cached in $QPX_UCX_CACHE/VERSION/<key>
#        (default /var/cache/qpx-ucx), the key made of the hashes of the
#        tarball, the patch and the configure flags, so that later runs skip
#        the build (40 minutes or more on two cores).
# cached exits 0 when the build is in the cache (run would not build), 1
#        when not.
# run    (the default; builds first when there is no cached build) runs the
#        generic UCT tests (the suites instantiated outside test/gtest/uct/ib/)
#        for qpx_rc, qpx_ud, qpx_dc, qpx and, for comparison, UCX's rc_verbs
#        and ud_verbs, all on $QPX_DEV (softverbs0:1); and UCX's connection
#        manager suites (test_uct_sockaddr*) for qpx's manager (cm:qpx) and
#        UCX's tcp and rdmacm ones (cm:tcp, cm:rdmacm), on every usable
#        network interface (each release's patch names qpx in UCT_TEST_CMS). With
#        QPX_GTEST_TLS naming ucp:qpx_rc, ucp:qpx or ucp:qpx_dc (and ucp:rc,
#        ucp:ud for UCX's own), UCP's tag, AM, RMA, atomic, stream, wireup
#        and peer-failure suites in the instantiations the patch adds
#        to UCP_INSTANTIATE_TEST_CASE (UCX_TLS qpx_rc,qpx_ud,self / qpx,self /
#        qpx_dc,qpx_ud:aux,self) (every release's patch). The gtest binary uses
#        the source-built libucs/libuct/libucp (the release qpx is built for:
#        qpx checks it at run time), softverbs first on LD_LIBRARY_PATH, and
#        qpx as said above. It is SKIPped (77) before any build when that qpx
#        or softverbs is not built. One gtest process per test suite and
#        transport; a test that crashes or hangs (no result within
#        $QPX_GTEST_TIMEOUT seconds, default 300) is a failure and the rest of
#        its suite continues in a new process.
#        FILTER (a shell pattern) keeps the test cases whose full name, e.g.
#        qpx_rc/test_uct_pending.pending_op/0, matches it.
# failover (a release with UCP_ERR_HANDLING_MODE_FAILOVER, 1.22.0) builds
#        test/integration/qpx_ucp_failover.c against that UCX and runs it on
#        two softverbs devices, taking a port down midway, for each UCX_TLS
#        of QPX_FAILOVER_TLS (default "qpx_rc,qpx_ud qpx_dc,qpx_ud:aux qpx"),
#        in UCP's FAILOVER mode and in its PEER mode as the control.
#
# Prints a line per test case (PASS/FAIL/SKIP), a table per transport and,
# last, "N passed, N failed" for the qpx transports' cases. Exit 0 when
# every qpx case that ran passed, 1 otherwise, 77 when it cannot run (no
# UCX source or patch, qpx or softverbs not built).
#
# Environment: QPX_BUILDDIR (qpx build, default build/ in the project
# root), QPX_MODULE (default $QPX_BUILDDIR/src/.libs/libuct_qpx.so for
# 1.13.1, $QPX_BUILDDIR/ucx-VERSION/src/.libs/libuct_qpx.so otherwise),
# SOFTVERBS_LIBDIR, QPX_UCX_SRCDIR (directory of the tarballs, default
# ../shared/ucx from the project root), QPX_UCX_CACHE, QPX_GTEST_TLS
# (transports to run), QPX_DEV, QPX_GTEST_TIMEOUT, QPX_GTEST_LOGDIR (full
# gtest logs; default a new directory in /tmp, kept).
#
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

action=${1:-run}
version=${2:-1.13.1}
filter=${3:-}
case $action in
build|run|cached|failover) ;;
-h|--help) sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 0 ;;
*) echo "usage: $0 [build|run|cached|failover] [VERSION] [FILTER]" >&2; exit 2 ;;
esac

QPX_BUILDDIR=${QPX_BUILDDIR:-$top/build}
# The installed release (Debian 12's libucx0), which qpx's main build is for
installed_version=1.13.1
if [ "$version" = "$installed_version" ]; then
    QPX_MODULE=${QPX_MODULE:-$QPX_BUILDDIR/src/.libs/libuct_qpx.so}
else
    # built by contrib/ucx-versions.sh against contrib/ucx-build.sh's tree
    QPX_MODULE=${QPX_MODULE:-$QPX_BUILDDIR/ucx-$version/src/.libs/libuct_qpx.so}
fi
# How qpx enters the gtest process, as contrib/qpxrun does it: UCX 1.22 and
# later scan the directories of UCX_PLUGIN_PATH for libuct_<name>.so.0;
# before 1.22 only a preload brings an out-of-tree component in
case $version in
1.[0-9].*|1.1[0-9].*|1.2[01].*) qpx_load=preload ;;
*) qpx_load=plugin ;;
esac
SOFTVERBS_LIBDIR=${SOFTVERBS_LIBDIR:-$QPX_BUILDDIR/src/softverbs/.libs}
srcdir=${QPX_UCX_SRCDIR:-$top/../shared/ucx}
tarball=$srcdir/ucx-$version.tar.gz
patchfile=$here/ucx-gtest/ucx-$version-qpx.patch
cache=${QPX_UCX_CACHE:-/var/cache/qpx-ucx}
QPX_DEV=${QPX_DEV:-softverbs0:1}
# cm:NAME is the connection manager of the component NAME, run in UCX's CM
# suites (test_uct_sockaddr*, in uct/ib/ but not the ib classes': they
# take any component with UCT_COMPONENT_FLAG_CM) on every usable network
# interface; qpx's beside UCX's tcp and rdmacm (rdmacm has no case on
# softverbs: UCX's tests take it only on a netdev with an IB device)
# ucp:SET is UCP's suites (test_ucp_*) of the classes UCP_CLASSES, in
# their instantiation SET of the patch: ucp:qpx_rc (UCX_TLS
# qpx_rc,qpx_ud,self), ucp:qpx (qpx,self) and ucp:qpx_dc
# (qpx_dc,qpx_ud:aux,self); ucp:rc (rc_v) and ucp:ud (ud_v) are UCX's own
# for comparison. Not in the default list: they are many (see
# QPX_GTEST_UCP_SUITES); `run` with QPX_GTEST_TLS="ucp:qpx_rc ..." or
# contrib/ucx-gtest-ucp.sh runs them
QPX_TLS="qpx_rc qpx_ud qpx_dc qpx cm:qpx ucp:qpx_rc ucp:qpx ucp:qpx_dc"
TLS=${QPX_GTEST_TLS:-"qpx_rc qpx_ud qpx_dc qpx cm:qpx rc_verbs ud_verbs cm:tcp cm:rdmacm"}
# the UCP classes of the issue: tag, AM, RMA, atomic, stream, wireup and
# peer failure (an extended-regex of suite names)
UCP_SUITES=${QPX_GTEST_UCP_SUITES:-'test_ucp_(tag|am|rma|atomic|stream|wireup|peer_failure)[a-z0-9_]*'}
# and of those, the suites or single cases (an extended regex of SUITE or
# SUITE.CASE) left out, e.g. 'test_ucp_tag_xfer|test_ucp_am_nbx_dts' (900
# cases a set, 5 minutes a set on two quiet cores, far longer under load);
# the run names what it left out
UCP_EXCLUDE=${QPX_GTEST_UCP_EXCLUDE:-}
TEST_TIMEOUT=${QPX_GTEST_TIMEOUT:-300}

# Debian 12's libucx0 1.13.1 build (`ucx_info -b`: UCX_CONFIGURE_FLAGS):
# --enable-mt --with-verbs --disable-logging --enable-devel-headers
# --enable-cma, assertions and parameter checks on (the defaults), no stats,
# no debug data (the defaults). Its --disable-backtrace-detail is no option
# of 1.13 (ignored there). Examples, MPI tests, Java and Go bindings are left
# out (gtest needs none of them). C++ (the tests) without -Werror: GCC 12
# warns use-after-free in test/gtest/ucm/malloc_hook.cc, which compares freed
# pointers on purpose; the C libraries keep -Werror. Given to make, since
# UCX 1.13's configure drops a CXXFLAGS given to it (compiler.m4 restores
# CXXFLAGS from CFLAGS after its flag checks; 1.19 and 1.22 keep it, and
# take it from make all the same).
UCX_CONFIGURE_FLAGS="--enable-mt --with-verbs --disable-logging
    --enable-devel-headers --enable-cma --enable-assertions
    --enable-params-check --disable-stats --disable-debug-data
    --without-java --without-go --without-mpi
    --disable-doxygen-doc --enable-gtest"
# Other releases: the flags of contrib/ucx-build.sh (the library build whose
# tree qpx for them is compiled against: the same ENABLE_* values as above),
# with gtest. Its --without-* leave out the GPU (a CUDA toolkit in
# /usr/local/cuda would otherwise be used, slow to build and not tested
# here), knem, xpmem, ugni and fuse3 parts; 1.13.1 keeps the flags above,
# so that the key of its cached build stays the same.
if [ "$version" != "$installed_version" ]; then
    . "$here/ucx-flags.sh"
    UCX_CONFIGURE_FLAGS="$QPX_UCX_RELEASE_FLAGS --enable-gtest --disable-examples"
fi
UCX_CXXFLAGS="-g -O2 -Wno-error"

if [ ! -r "$tarball" ]; then
    echo "SKIP: UCX $version source $tarball absent"
    exit 77
fi
if [ ! -r "$patchfile" ]; then
    echo "SKIP: no qpx gtest patch for UCX $version ($patchfile)"
    exit 77
fi

hash16() { sha256sum | cut -c1-16; }
key="$(hash16 <"$tarball")-$(hash16 <"$patchfile")-$(echo $UCX_CONFIGURE_FLAGS CXXFLAGS=$UCX_CXXFLAGS | hash16)"
dir=$cache/$version/$key
ucxsrc=$dir/src
ucxbuild=$dir/build
gtest=$ucxbuild/test/gtest/gtest

# "NAME=VALUE" of the #define lines of a config.h (or of `ucx_info -b`)
config_defines() {
    awk '$1 == "#define" { v = $3; for (i = 4; i <= NF; i++) v = v " " $i; print $2 "=" v }' | sort
}

# compare_config REF_NAME REF OURS DIFF_FILE: the configuration values that
# decide UCX's internal layouts and inline code (ENABLE_*, ...) must be the
# same in REF (the defines of the UCX qpx is built for) and OURS (the
# source build's); a HAVE_* that differs (a library one build machine did
# not have) is only shown (and kept in DIFF_FILE)
compare_config() {
    local refname=$1 ref=$2 ours=$3 out=$4 bad=0 name
    while read -r name; do
        case $name in
        ENABLE_*|UCS_MAX_LOG_LEVEL|UCT_UD_EP_DEBUG_HOOKS|HAVE_PROFILING|NVALGRIND|HAVE_TL_*)
            echo "ucx-gtest: config differs from the $refname: $name:" \
                 "$refname '$(echo "$ref" | grep "^$name=" | cut -d= -f2-)'," \
                 "source build '$(echo "$ours" | grep "^$name=" | cut -d= -f2-)'" >&2
            bad=1 ;;
        esac
    done < <(comm -3 <(echo "$ref") <(echo "$ours") | sed 's/^\t//' | cut -d= -f1 | sort -u)
    comm -3 <(echo "$ref" | grep '^HAVE_') <(echo "$ours" | grep '^HAVE_') |
        sed "s/^\t/  source build: /; /^  source/!s/^/  $refname: /" >"$out"
    if [ -s "$out" ]; then
        echo "ucx-gtest: HAVE_* values that differ from the $refname (not layout-relevant):"
        sed 's/^/  /' "$out"
    fi
    return $bad
}

# At configure time: 1.13.1 against the installed UCX (ucx_info -b). Another
# release has no installed counterpart (the installed ucx_info is 1.13.1's);
# it is compared at run time with the tree qpx for it is built against.
check_config() {
    local sys
    if [ "$version" != "$installed_version" ]; then
        echo "ucx-gtest: UCX $version: comparison with the installed UCX (ucx_info -b) skipped:" \
             "it is $installed_version; qpx for $version is built against contrib/ucx-build.sh's" \
             "tree of $version, which 'run' compares with"
        return 0
    fi
    sys=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD ucx_info -b 2>/dev/null | config_defines)
    if [ -z "$sys" ]; then
        echo "ucx-gtest: ucx_info -b printed nothing; cannot compare with the installed UCX" >&2
        return 1
    fi
    compare_config "installed UCX" "$sys" "$(config_defines <"$ucxbuild/config.h")" \
        "$ucxbuild/config-diff.txt"
}

do_build() {
    if [ -f "$dir/.complete" ] && [ -x "$gtest" ]; then
        echo "ucx-gtest: UCX $version with gtest: cached build $dir"
        return 0
    fi
    mkdir -p "$cache/$version" || { echo "ucx-gtest: cannot create $cache/$version" >&2; return 1; }
    exec 9>"$cache/$version/.lock"
    flock 9
    if [ -f "$dir/.complete" ] && [ -x "$gtest" ]; then
        echo "ucx-gtest: UCX $version with gtest: cached build $dir (built meanwhile)"
        exec 9>&-
        return 0
    fi
    local t0=$SECONDS
    if [ -f "$dir/.configured" ]; then
        # an interrupted or failed make: the same sources and configuration
        echo "ucx-gtest: resuming the build of UCX $version in $dir"
    else
        echo "ucx-gtest: building UCX $version with gtest in $dir (40 minutes or more on two cores)"
        configure_ucx || return 1
    fi
    echo "ucx-gtest: make (log: $dir/make.log)"
    # -k: with --enable-gtest, UCX 1.22.0's ucx_perftest_daemon (a tool
    # gtest does not use) fails to link (libucxperf's C++ objects want
    # libstdc++'s __gxx_personality_v0); the libraries and gtest are what
    # must build, and the next step fails when they do not
    (cd "$ucxbuild" && nice -n 10 make -k -j2 CXXFLAGS="$UCX_CXXFLAGS") >>"$dir/make.log" 2>&1 ||
        echo "ucx-gtest: make -k of UCX $version had errors (see $dir/make.log): building test/gtest"
    # test/gtest is in the top-level SUBDIRS with --enable-gtest; make sure
    (cd "$ucxbuild" && nice -n 10 make -j2 CXXFLAGS="$UCX_CXXFLAGS" -C test/gtest) >>"$dir/make.log" 2>&1 ||
        { grep -E 'error|Error' "$dir/make.log" | tail -20; return 1; }
    [ -x "$gtest" ] || { echo "ucx-gtest: no $gtest after make" >&2; return 1; }
    # The generic UCT test suites: those instantiated outside uct/ib/. The
    # pattern takes every instantiation macro, also those of later releases
    # (UCT_INSTANTIATE_MM_TEST_CASE, _IB_AND_GGA_, _RC_DC_GGA_, _SRD_, ...);
    # of them only UCT_INSTANTIATE_TEST_CASE, _NO_SELF_ and _NO_GPU_ include
    # qpx's transports (the patch)
    (cd "$ucxsrc/test/gtest/uct" &&
     grep -ho -E '_?UCT_INSTANTIATE_[A-Z_]*TEST_CASE\( *[A-Za-z0-9_]+' \
         $(find . -name '*.cc' -o -name '*.h' | grep -v '^\./ib/' | grep -v '^\./uct_test\.h$') |
     sed 's/.*( *//' | grep -v '^_' | sort -u) >"$dir/generic-suites"
    echo "$((SECONDS - t0))" >>"$dir/build-seconds"
    touch "$dir/.complete"
    echo "ucx-gtest: built in $((SECONDS - t0)) s ($(wc -l <"$dir/generic-suites") generic UCT suites)"
    exec 9>&-
}

# Extract, patch, autogen, configure, and check the configuration
configure_ucx() {
    local t0=$SECONDS
    rm -rf "$dir"
    mkdir -p "$ucxsrc" "$ucxbuild"
    tar xzf "$tarball" -C "$ucxsrc" --strip-components=1 || return 1
    (cd "$ucxsrc" && patch -p1 --forward <"$patchfile") || return 1
    cp "$patchfile" "$dir/"
    { echo "$UCX_CONFIGURE_FLAGS" | tr -s ' \n' '\n\n'; echo "make CXXFLAGS=$UCX_CXXFLAGS"; } \
        >"$dir/configure-flags"
    (cd "$ucxsrc" && ./autogen.sh) >"$dir/autogen.log" 2>&1 ||
        { tail -20 "$dir/autogen.log"; return 1; }
    # shellcheck disable=SC2086
    (cd "$ucxbuild" && "$ucxsrc/configure" --prefix="$dir/install" \
        $UCX_CONFIGURE_FLAGS) >"$dir/configure.log" 2>&1 ||
        { tail -30 "$dir/configure.log"; return 1; }
    check_config || { echo "ucx-gtest: the source build would not match the installed UCX" >&2; return 1; }
    echo "ucx-gtest: configured in $((SECONDS - t0)) s"
    echo "$((SECONDS - t0))" >"$dir/build-seconds"
    touch "$dir/.configured"
}

# ---- what `run` needs, checked before a build (which takes long) -----------
if [ "$action" = run ] || [ "$action" = failover ]; then
    if [ ! -f "$QPX_MODULE" ]; then
        if [ "$version" = "$installed_version" ]; then
            echo "SKIP: qpx module $QPX_MODULE not built"
        else
            echo "SKIP: no qpx built against UCX $version ($QPX_MODULE absent);" \
                 "build it with: bash contrib/ucx-versions.sh $version"
        fi
        exit 77
    fi
    [ -f "$SOFTVERBS_LIBDIR/libibverbs.so.1" ] ||
        { echo "SKIP: softverbs not built in $SOFTVERBS_LIBDIR"; exit 77; }
    # qpx's build says which UCX it is for, and (built against a UCX tree)
    # that tree's config.h
    qpx_config=$(dirname "$QPX_MODULE")/../../config.h
    qpx_for=$(awk '$2 ~ /^QPX_UCX_BUILD_(MAJOR|MINOR|PATCH)$/ { print $3 }' "$qpx_config" 2>/dev/null | paste -sd.)
    if [ -n "$qpx_for" ] && [ "$qpx_for" != "$version" ]; then
        echo "ucx-gtest: $QPX_MODULE is built for UCX $qpx_for, not $version" \
             "(set QPX_MODULE to a qpx for $version, or unset it)"
        exit 1
    fi
    qpx_ucx_config=$(sed -n 's/^#define QPX_UCX_BUILD_CONFIG_H "\(.*\)"$/\1/p' "$qpx_config" 2>/dev/null)
fi

# cached: exit 0 when the build is there (run would not build), 1 if not
if [ "$action" = cached ]; then
    [ -f "$dir/.complete" ] && [ -x "$gtest" ] && exit 0
    exit 1
fi

do_build || { echo "ucx-gtest: build of UCX $version failed"; exit 1; }
[ "$action" = build ] && exit 0

# ---- run ---------------------------------------------------------------------
# UCX skips a verbs device without its /dev/infiniband node
if [ ! -e /dev/infiniband/uverbs0 ]; then
    { mkdir -p /dev/infiniband && ln -sf /dev/null /dev/infiniband/uverbs0; } 2>/dev/null ||
        { echo "SKIP: /dev/infiniband/uverbs0 missing (softverbs-setup makes it)"; exit 77; }
fi

logdir=${QPX_GTEST_LOGDIR:-$(mktemp -d /tmp/qpx-ucx-gtest.XXXXXX)}
mkdir -p "$logdir/lib"

# A release other than the installed one: its configuration must be that of
# the tree qpx is compiled against (contrib/ucx-build.sh's), whose struct
# layouts qpx uses
if [ "$version" != "$installed_version" ]; then
    if [ -n "$qpx_ucx_config" ] && [ -r "$qpx_ucx_config" ]; then
        compare_config "UCX tree qpx is built against" "$(config_defines <"$qpx_ucx_config")" \
            "$(config_defines <"$ucxbuild/config.h")" "$logdir/config-diff.txt" ||
            { echo "ucx-gtest: the gtest build of UCX $version does not match $qpx_ucx_config," \
                   "the UCX tree qpx is built against"; exit 1; }
        echo "ucx-gtest: the gtest build's layout-relevant configuration equals that of" \
             "$qpx_ucx_config (the UCX tree qpx is built against)"
    else
        echo "ucx-gtest: note: cannot compare the configuration with the UCX tree qpx is built" \
             "against (no QPX_UCX_BUILD_CONFIG_H in $qpx_config, or its file is gone)"
    fi
fi

# A copy of qpx and softverbs as they are now: the whole run uses one build
# even if the project's build directory is rebuilt meanwhile. For a preload
# lib/libuct_qpx.so; for UCX_PLUGIN_PATH a directory of its own holding qpx
# alone, as libuct_qpx.so.0 (UCX 1.22 loads libuct_<name><ext> from it, ext
# that of its libucs: .so.0)
if [ "$qpx_load" = plugin ]; then
    mkdir -p "$logdir/plugin"
    qpx_copy=$logdir/plugin/libuct_qpx.so.0
else
    qpx_copy=$logdir/lib/libuct_qpx.so
fi
cp -L "$QPX_MODULE" "$qpx_copy" || exit 1
for f in "$SOFTVERBS_LIBDIR"/lib*.so.[0-9]; do
    cp -L "$f" "$logdir/lib/" || exit 1
done
echo "ucx-gtest: qpx $QPX_MODULE ($(stat -c %y "$QPX_MODULE" | cut -d. -f1)," \
     "checkout $(git -C "$top" rev-parse --short HEAD 2>/dev/null)$(git -C "$top" status --porcelain -- src 2>/dev/null | grep -q . && echo ', src modified'))"
echo "ucx-gtest: softverbs $SOFTVERBS_LIBDIR; both copied to $logdir"
QPX_MODULE=$qpx_copy
SOFTVERBS_LIBDIR=$logdir/lib

b=$ucxbuild
# softverbs first, then the source-built UCX (libuct_ib_mlx5 is a library of
# its own from 1.19 on); qpx preloaded, or (1.22) found by UCX in
# UCX_PLUGIN_PATH with no preload at all. Given to the UCX programs only
# (not to timeout, grep, ...)
ucx_libpath="$SOFTVERBS_LIBDIR:$b/src/ucs/.libs:$b/src/ucs/vfs/sock/.libs:$b/src/uct/.libs:$b/src/uct/ib/.libs:$b/src/uct/ib/mlx5/.libs:$b/src/ucm/.libs:$b/src/ucp/.libs:$b/src/tools/perf/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$qpx_load" = plugin ]; then
    ucx_env=(env -u LD_PRELOAD "LD_LIBRARY_PATH=$ucx_libpath"
             "UCX_PLUGIN_PATH=$(dirname "$QPX_MODULE")")
    qpx_how="from UCX_PLUGIN_PATH=$(dirname "$QPX_MODULE") (no preload)"
else
    ucx_env=(env -u UCX_PLUGIN_PATH "LD_LIBRARY_PATH=$ucx_libpath"
             "LD_PRELOAD=$QPX_MODULE")
    qpx_how="by LD_PRELOAD=$QPX_MODULE"
fi
# the source build's modules (libuct_ib, ...), never Debian's
export UCX_MODULE_DIR=$b/modules
export SOFTVERBS_SHM=/dev/shm/softverbs-gtest-$$
export UCX_NET_DEVICES=$QPX_DEV
export UCX_HANDLE_ERRORS=bt UCX_LOG_LEVEL=warn UCX_LOG_PRINT_ENABLE=y
export UCX_WARN_UNUSED_ENV_VARS=n
# glibc fills every allocation with 0xfe and every freed block with 0x01: a
# field left as malloc gave it, or a use after free, behaves the same way
# in every run, not only when the heap happens to hold the wrong bytes (the
# hybrid's rx_holds, 0xffffffff in one CI run of UCX 1.22's
# test_ucp_atomic64 and 0 in the others). QPX_GTEST_MALLOC_PERTURB=0: off
export MALLOC_PERTURB_=${QPX_GTEST_MALLOC_PERTURB:-1}
unset UCX_TLS

cleanup() { rm -f "$SOFTVERBS_SHM" "$SOFTVERBS_SHM".* 2>/dev/null; }
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "ucx-gtest: UCX $version gtest $gtest, device $QPX_DEV"
if [ -n "$UCP_EXCLUDE" ]; then
    echo "ucx-gtest: not run, of UCP's suites (QPX_GTEST_UCP_EXCLUDE): $UCP_EXCLUDE"
fi
echo "ucx-gtest: qpx loaded $qpx_how"
echo "ucx-gtest: per-test timeout ${TEST_TIMEOUT} s, logs in $logdir"

# The source-built UCX must be the one the gtest binary runs with. ucx_info
# -v prints "# Version X" (1.13) or "# Library version: X" and "# Library
# path: <libucs>" (1.19, 1.22)
ucx_info=$b/src/tools/info/.libs/ucx_info
[ -x "$ucx_info" ] || ucx_info=$b/src/tools/info/ucx_info
info=$("${ucx_env[@]}" "$ucx_info" -v 2>&1)
ver=$(sed -n 's/^# \(Library \)\{0,1\}[Vv]ersion:\{0,1\} \([0-9][0-9.]*\).*/\2/p' <<<"$info" | head -n 1)
if [ "$ver" != "$version" ]; then
    echo "ucx-gtest: the source-built ucx_info says '$(head -n 1 <<<"$info")', not $version"
    exit 1
fi
libucs=$(sed -n 's/^# Library path: //p' <<<"$info" | head -n 1)
if [ -n "$libucs" ] && [ "${libucs#"$b"/}" = "$libucs" ]; then
    echo "ucx-gtest: the source-built ucx_info loaded $libucs, not the gtest build's libucs in $b"
    exit 1
fi

# failover: UCP's failover over a port that really goes down
# (test/integration/qpx_ucp_failover.c, built here against this UCX) on
# softverbs0:1 and softverbs1:1, the first (AM and RMA lanes) taken down
# midway, for each UCX_TLS of QPX_FAILOVER_TLS (default "qpx_rc,qpx_ud
# qpx_dc,qpx_ud:aux qpx"): under UCP_ERR_HANDLING_MODE_FAILOVER every operation after it goes
# on, data checked, and under the PEER mode (the control) the endpoint
# fails. RC requests on the dead port fail after 4 tries of 20 ms, so that
# a run takes seconds
if [ "$action" = failover ]; then
    fo=$logdir/qpx_ucp_failover
    if ! cc -O1 -g -Wall -Werror -o "$fo" "$top/test/integration/qpx_ucp_failover.c" \
            -I"$ucxsrc/src" -I"$b/src" -L"$b/src/ucp/.libs" -L"$b/src/ucs/.libs" \
            -lucp -lucs -ldl >"$logdir/failover-build.log" 2>&1; then
        echo "FAIL: qpx_ucp_failover does not build against UCX $version ($logdir/failover-build.log:)"
        head -5 "$logdir/failover-build.log" | sed 's/^/    | /'
        echo "0 passed, 1 failed"
        exit 1
    fi
    fo_pass=0; fo_fail=0
    for tls in ${QPX_FAILOVER_TLS:-qpx_rc,qpx_ud qpx_dc,qpx_ud:aux qpx}; do
        for mode in failover peer; do
            out=$logdir/failover-$tls-$mode.log
            echo "== UCX_TLS=$tls, $mode mode, softverbs0:1 taken down midway"
            "${ucx_env[@]}" SOFTVERBS_NUM_DEVICES=2 UCX_NET_DEVICES=softverbs0:1,softverbs1:1 \
                UCX_TLS="$tls" UCX_QPX_RC_TIMEOUT=20ms UCX_QPX_RC_RETRY_COUNT=3 \
                timeout -k 10 120 "$fo" 20 200 "$mode" >"$out" 2>&1
            rc=$?
            grep -E '^(PASS|FAIL):' "$out" | sed 's/^/  /'
            p=$(grep -c '^PASS:' "$out"); f=$(grep -c '^FAIL:' "$out")
            if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
                echo "  FAIL: exit status $rc ($out:)"
                grep -v '^#' "$out" | tail -5 | sed 's/^/    | /'
                f=1
            fi
            fo_pass=$((fo_pass + p)); fo_fail=$((fo_fail + f))
        done
    done
    echo "$fo_pass passed, $fo_fail failed"
    [ "$fo_fail" -eq 0 ] && exit 0
    exit 1
fi

declare -A status reason
declare -a cases
# list_cases TL: the cases of TL on QPX_DEV in the generic suites ("NAME");
# for cm:NAME, the cases of NAME's connection manager in the CM suites, on
# any interface
list_cases() {
    local flt rsc cm=""
    case $1 in
    # a manager's resources have no memory domain: named "/IFACE"
    cm:*) cm=${1#cm:}; flt="$cm/test_uct_sockaddr*"; rsc="" ;;
    # UCP's variants are named by what they test, not by a resource
    ucp:*)
        timeout 120 "${ucx_env[@]}" "$gtest" --gtest_list_tests \
            --gtest_filter="${1#ucp:}/test_ucp_*" 2>"$logdir/list-$1.err" |
        awk '/^[^ ]/ { suite = $1; next } /^  / { print suite $1 }' |
        grep -E "^${1#ucp:}/($UCP_SUITES)\\." |
        { if [ -n "$UCP_EXCLUDE" ]; then grep -v -E "^${1#ucp:}/($UCP_EXCLUDE)(\\.|\$)"; else cat; fi; }
        return ;;
    *)    flt="$1/*"; rsc="$1/$QPX_DEV" ;;
    esac
    timeout 120 "${ucx_env[@]}" "$gtest" --gtest_list_tests --gtest_filter="$flt" 2>"$logdir/list-$1.err" |
    awk -v rsc="$rsc" '
        /^[^ ]/ { suite = $1; next }
        /^  / && $2 == "#" && $3 == "GetParam()" {
            # the resource: TL/DEVICE, or TL/DEVICE/VARIANT; /IFACE
            if ($5 == rsc || index($5, rsc "/") == 1) print suite $1 }' |
    while read -r name; do
        s=${name#*/}; s=${s%%.*}
        if [ -n "$cm" ] || grep -qx "$s" "$dir/generic-suites"; then
            echo "$name"
        fi
    done
}

# suite_env SUITE: the settings a suite gives UCX's own transports through
# their names (set_config), given to qpx's under qpx's names. The peer
# failure suites shorten the transport timeouts "where relevant"
# (RC_TIMEOUT?=100us, RC_RETRY_COUNT?=4, UD_TIMEOUT?=3s: names qpx does
# not have, so "?=" leaves qpx at its defaults); qpx_dc's defaults (1 s a
# try, 8 tries: 8 s a dead peer, per DCI) made
# test_uct_peer_failure_multiple's 255 dead peers on 8 DCIs take longer
# than its 300 s flush (it passes in 35 s with about 100 ms a dead peer).
suite_env() {
    case $1 in
    test_uct_peer_failure*|test_ucp_peer_failure*)
        echo UCX_QPX_RC_TIMEOUT=100ms UCX_QPX_RC_RETRY_COUNT=4 \
             UCX_QPX_DC_TIMEOUT=20ms UCX_QPX_DC_RETRY_COUNT=4 \
             UCX_QPX_UD_TIMEOUT=3s ;;
    esac
}

# run_suite TL SUITE NAME...: run the cases NAME of one suite, each name's
# result in status[] / reason[]; a crash or a hang fails the running case,
# and the rest go on in a new process
run_suite() {
    local tl=$1 suite=$2; shift 2
    local remaining=("$@") n=0 log pid last t0 killed rc name cur senv
    read -r -a senv <<<"$(suite_env "$suite")"
    while [ ${#remaining[@]} -gt 0 ]; do
        n=$((n + 1))
        log=$logdir/$tl.$suite.$n.log
        local flt
        flt=$(IFS=:; echo "${remaining[*]}")
        timeout -k 10 $((TEST_TIMEOUT * ${#remaining[@]} + 60)) \
            "${ucx_env[@]}" "${senv[@]}" "$gtest" --gtest_color=no --gtest_filter="$flt" >"$log" 2>&1 &
        pid=$!
        last=0; t0=$SECONDS; killed=0
        while kill -0 $pid 2>/dev/null; do
            sleep 1
            cur=$(grep -c '^\[ RUN      \]' "$log")
            if [ "$cur" != "$last" ]; then
                last=$cur; t0=$SECONDS
            elif [ $((SECONDS - t0)) -ge "$TEST_TIMEOUT" ]; then
                killed=1
                # timeout leads a process group of its own, with gtest in it
                kill -TERM -- -$pid 2>/dev/null
                sleep 5
                kill -KILL -- -$pid 2>/dev/null
                break
            fi
        done
        wait $pid
        rc=$?
        kill -KILL -- -$pid 2>/dev/null   # nothing of this run survives it
        # parse: [ RUN ], [ SKIP ] (UCX's own line), [ OK ], [ FAILED ]
        local cur_test="" skip=0
        while IFS= read -r line; do
            case $line in
            "[ RUN      ] "*)
                # UCX's printer adds " <TL/DEVICE>"
                cur_test=${line#\[ RUN      \] }; cur_test=${cur_test%% *}; skip=0 ;;
            "[     SKIP ]"*)
                skip=1; reason[$cur_test]=${line#\[     SKIP \] } ;;
            "[       OK ] "*)
                name=${line#\[       OK \] }; name=${name%% (*}
                if [ $skip = 1 ]; then status[$name]=SKIP; else status[$name]=PASS; fi
                cur_test="" ;;
            "[  SKIPPED ] "*" ms)")
                name=${line#\[  SKIPPED \] }; name=${name%% (*}
                status[$name]=SKIP; cur_test="" ;;
            "[  FAILED  ] "*", where GetParam()"*" ms)")
                name=${line#\[  FAILED  \] }; name=${name%%, where*}
                status[$name]=FAIL; cur_test="" ;;
            esac
        done <"$log"
        if [ -n "$cur_test" ] && [ -z "${status[$cur_test]:-}" ]; then
            status[$cur_test]=FAIL
            if [ $killed = 1 ]; then
                reason[$cur_test]="timeout: no result in ${TEST_TIMEOUT} s"
            elif [ $rc = 124 ] || [ $rc = 137 ]; then
                reason[$cur_test]="timeout (suite limit)"
            else
                local sig
                sig=$(awk -v n="$cur_test" 'index($0, "[ RUN      ] " n " ") == 1 { on = 1 } on' "$log" |
                      grep -m1 -E 'Caught signal|Assertion .* failed|Fatal:|terminate called|Aborted|Segmentation' |
                      sed 's/^\[[^]]*\] *//')
                reason[$cur_test]="crash (exit $rc${sig:+: $sig})"
            fi
        fi
        # what did not start runs again in a new process
        local next=() progressed=0
        for name in "${remaining[@]}"; do
            if [ -n "${status[$name]:-}" ]; then
                progressed=1
            else
                next+=("$name")
            fi
        done
        if [ $progressed = 0 ]; then
            for name in "${next[@]}"; do
                status[$name]=FAIL
                reason[$name]="gtest exited $rc before running it"
            done
            next=()
        fi
        remaining=("${next[@]}")
    done
}

# print_case TL NAME: the case's line, and for a failure what gtest said
print_case() {
    local name=$2 st=${status[$2]} logs
    case $st in
    PASS) echo "PASS: $name" ;;
    SKIP) echo "SKIP: $name ${reason[$name]:-}" ;;
    FAIL)
        echo "FAIL: $name${reason[$name]:+ (${reason[$name]})}"
        # the case's own lines from the last log that ran it
        logs=$(grep -l -F "[ RUN      ] $name " "$logdir/$1".*.log 2>/dev/null | tail -1)
        [ -n "$logs" ] &&
        awk -v n="$name" '
            index($0, "[ RUN      ] " n " ") == 1 { on = 1; next }
            on && (/^\[ RUN      \]/ || /^\[  FAILED  \]/ || /^\[       OK \]/) { exit }
            on { print "    | " $0 }' "$logs" | head -40 ;;
    esac
}

declare -A npass nfail nskip
for tl in $TLS; do
    echo
    echo "=== $tl"
    mapfile -t cases < <(list_cases "$tl")
    if [ -n "$filter" ]; then
        kept=()
        for name in "${cases[@]}"; do
            # shellcheck disable=SC2053
            [[ $name == $filter ]] && kept+=("$name")
        done
        cases=("${kept[@]}")
    fi
    npass[$tl]=0; nfail[$tl]=0; nskip[$tl]=0
    if [ ${#cases[@]} -eq 0 ]; then
        if [ -z "$filter" ] && [[ " $QPX_TLS " == *" $tl "* ]]; then
            # a qpx transport that gtest did not find is a failure
            echo "FAIL: $tl: no test cases on $QPX_DEV (the transport was not found; $logdir/list-$tl.err:)"
            grep -v '^\[     INFO \]' "$logdir/list-$tl.err" | head -5 | sed 's/^/    | /'
            nfail[$tl]=1
        else
            echo "  no test cases for $tl on $QPX_DEV"
        fi
        continue
    fi
    echo "  ${#cases[@]} test cases"
    suites=$(printf '%s\n' "${cases[@]}" | sed 's/\..*//' | awk '!seen[$0]++')
    for s in $suites; do
        mapfile -t group < <(printf '%s\n' "${cases[@]}" | grep -F "$s.")
        run_suite "$tl" "${s#*/}" "${group[@]}"
        for name in "${group[@]}"; do
            print_case "$tl" "$name"
            case ${status[$name]} in
            PASS) npass[$tl]=$((npass[$tl] + 1)) ;;
            SKIP) nskip[$tl]=$((nskip[$tl] + 1)) ;;
            *)    nfail[$tl]=$((nfail[$tl] + 1)) ;;
            esac
        done
    done
done

echo
echo "=== UCX $version gtest on $QPX_DEV: generic UCT tests (TL), CM suites (cm:), UCP classes (ucp:)"
printf '%-12s %7s %7s %7s\n' transport passed failed skipped
tot_pass=0; tot_fail=0
# The totals are those of qpx's transports (UCX's own run beside them for
# reference); a run of UCX's transports alone (e.g. rc_mlx5 on softverbs'
# mlx5 personality) is totalled over them, so that it can pass
sum_tls=""
for tl in $TLS; do
    case " $QPX_TLS " in *" $tl "*) sum_tls="$sum_tls $tl" ;; esac
done
[ -n "$sum_tls" ] || sum_tls=$TLS
for tl in $TLS; do
    printf '%-12s %7d %7d %7d\n' "$tl" "${npass[$tl]}" "${nfail[$tl]}" "${nskip[$tl]}"
    case " $sum_tls " in
    *" $tl "*) tot_pass=$((tot_pass + npass[$tl])); tot_fail=$((tot_fail + nfail[$tl])) ;;
    esac
done
echo "full gtest logs: $logdir"
echo "$tot_pass passed, $tot_fail failed"
[ "$tot_fail" -eq 0 ] && [ "$tot_pass" -gt 0 ] && exit 0
exit 1
