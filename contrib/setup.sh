#!/bin/bash
#
# Set up a fresh Debian 12 machine for qpx: install the packages it needs
# (as root; idempotent), build it, and prepare the softverbs device nodes.
# Sourced or run by demo.sh and test.sh. Environment:
#   QPX_BUILDDIR   build directory (default: <top>/build)
#   QPX_CONFIGURE_FLAGS  extra configure flags (CI adds --enable-werror)
#
set -euo pipefail

QPX_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QPX_BUILDDIR=${QPX_BUILDDIR:-$QPX_TOP/build}
export QPX_TOP QPX_BUILDDIR

QPX_PACKAGES="build-essential autoconf automake libtool pkg-config python3 git iproute2
    libucx-dev ucx-utils libibverbs-dev ibverbs-providers ibverbs-utils perftest rdmacm-utils
    librdmacm-dev libcmocka-dev openmpi-bin libopenmpi-dev valgrind groff-base
    slurmctld slurmd slurm-client munge debhelper dpkg-dev fakeroot chrpath lintian gnuplot-nox
    libfabric-bin gdb"

qpx_say() { echo "==> $*"; }

qpx_install_packages() {
    local missing=() pkg
    for pkg in $QPX_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
            missing+=("$pkg")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        qpx_say "packages: all present"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "qpx setup: missing Debian packages: ${missing[*]}" >&2
        echo "qpx setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
        return 1
    fi
    qpx_say "packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

qpx_build() {
    local flags="${QPX_CONFIGURE_FLAGS:-}"
    if [ "${CI:-}" = true ]; then
        flags="$flags --enable-werror"
    fi
    cd "$QPX_TOP"
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        qpx_say "build: autogen.sh"
        ./autogen.sh >/dev/null 2>&1 || { ./autogen.sh; return 1; }
    fi
    mkdir -p "$QPX_BUILDDIR"
    cd "$QPX_BUILDDIR"
    if [ ! -f Makefile ] || [ "$QPX_TOP/configure" -nt Makefile ]; then
        qpx_say "build: configure $flags"
        # shellcheck disable=SC2086
        "$QPX_TOP/configure" $flags >configure.out 2>&1 || { cat configure.out; return 1; }
        grep -A12 '^qpx .* configured' configure.out || true
    fi
    qpx_say "build: make -j$(nproc)"
    make -j"$(nproc)" >make.out 2>&1 || { tail -50 make.out; return 1; }
    cd "$QPX_TOP"
}

# UCX skips verbs devices whose /dev/infiniband node is missing: softverbs
# devices need one each (a link to /dev/null serves). Needs root.
qpx_softverbs_nodes() {
    local setup="$QPX_BUILDDIR/src/softverbs/softverbs-setup"
    if [ -x "$setup" ]; then
        "$setup" && return 0
    fi
    local n=${SOFTVERBS_NUM_DEVICES:-1} i
    if [ "$(id -u)" -ne 0 ]; then
        [ -e /dev/infiniband/uverbs0 ] || \
            echo "qpx setup: /dev/infiniband/uverbs0 missing; run this as root once" >&2
        return 0
    fi
    mkdir -p /dev/infiniband
    for ((i = 0; i < n; i++)); do
        [ -e /dev/infiniband/uverbs$i ] || ln -sf /dev/null /dev/infiniband/uverbs$i
    done
}

qpx_setup() {
    qpx_install_packages
    qpx_build
    qpx_softverbs_nodes
    qpx_say "setup done: build in $QPX_BUILDDIR"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    qpx_setup
fi
