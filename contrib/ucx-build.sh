#!/bin/bash
#
# ucx-build.sh: build a UCX release's libraries from the unmodified source in
# ../shared/ucx/, cached outside the clone, for building and testing qpx
# against UCX releases other than the installed one.
#
#   bash contrib/ucx-build.sh VERSION      (e.g. 1.19.1, 1.22.0)
#
# Extracts ucx-VERSION.tar.gz, configures it (assertions and parameter
# checks on, as Debian's libucx0; no GPU, Java, Go or MPI parts, which qpx's
# tests do not use and which take most of the build time), builds and
# installs it into $QPX_UCX_CACHE/VERSION/lib-<key>/install (default cache
# /var/cache/qpx-ucx; the key hashes the tarball and the flags). A finished
# build is reused. The last line of the output is
#
#   UCX_PREFIX=<install dir> UCX_SRC=<source tree> UCX_BUILD=<build tree>
#
# which contrib/ucx-versions.sh reads. Exit 0 when built (or cached), 77 when
# the source tarball is absent, 1 when the build fails.
#
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
version=${1:-}
[ -n "$version" ] || { echo "usage: $0 VERSION" >&2; exit 2; }
srcdir=${QPX_UCX_SRCDIR:-$top/../shared/ucx}
tarball=$srcdir/ucx-$version.tar.gz
cache=${QPX_UCX_CACHE:-/var/cache/qpx-ucx}

if [ ! -r "$tarball" ]; then
    echo "SKIP: UCX $version source $tarball absent"
    exit 77
fi

. "$here/ucx-flags.sh"
UCX_CONFIGURE_FLAGS="$QPX_UCX_RELEASE_FLAGS --disable-gtest --disable-examples"

hash16() { sha256sum | cut -c1-16; }
key="$(hash16 <"$tarball")-$(echo $UCX_CONFIGURE_FLAGS | hash16)"
dir=$cache/$version/lib-$key
result() { echo "UCX_PREFIX=$dir/install UCX_SRC=$dir/src UCX_BUILD=$dir/build"; }

if [ -f "$dir/.complete" ]; then
    echo "ucx-build: UCX $version: cached build $dir"
    result
    exit 0
fi
mkdir -p "$cache/$version" || { echo "ucx-build: cannot create $cache/$version" >&2; exit 1; }
exec 9>"$cache/$version/.lock-lib"
flock 9
if [ -f "$dir/.complete" ]; then
    echo "ucx-build: UCX $version: cached build $dir (built meanwhile)"
    result
    exit 0
fi

t0=$SECONDS
echo "ucx-build: building UCX $version in $dir (about 10 minutes on two cores)"
rm -rf "$dir"
mkdir -p "$dir/src" "$dir/build"
tar xzf "$tarball" -C "$dir/src" --strip-components=1 || exit 1
(cd "$dir/src" && ./autogen.sh) >"$dir/autogen.log" 2>&1 ||
    { tail -20 "$dir/autogen.log"; exit 1; }
# shellcheck disable=SC2086
(cd "$dir/build" && "$dir/src/configure" --prefix="$dir/install" \
    $UCX_CONFIGURE_FLAGS) >"$dir/configure.log" 2>&1 ||
    { tail -30 "$dir/configure.log"; exit 1; }
echo "ucx-build: configured in $((SECONDS - t0)) s; make (log $dir/make.log)"
(cd "$dir/build" && nice -n 10 make -j2 && make install) >"$dir/make.log" 2>&1 ||
    { grep -E 'error|Error' "$dir/make.log" | tail -20; exit 1; }
echo "$((SECONDS - t0))" >"$dir/build-seconds"
touch "$dir/.complete"
echo "ucx-build: UCX $version built in $((SECONDS - t0)) s"
result
