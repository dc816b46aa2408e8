#!/bin/sh
# The Debian packages, as a user gets them: built from a clean copy of the
# source (dpkg-buildpackage -us -uc -b), installed with apt-get, used from
# the installed files only (qpxrun --soft ucx_info -d lists the qpx
# transports; a ucx_perftest pair over qpx_ud), then purged: nothing of
# theirs is left (dpkg -L paths gone) and the system's libibverbs is the
# same file before and after.
. "$QPX_SRCDIR/test/integration/lib.sh"
for p in dpkg-buildpackage dh fakeroot apt-get git; do
    command -v $p >/dev/null || qpx_skip_all "$p not installed"
done
[ "$(id -u)" = 0 ] || qpx_skip_all "installing packages needs root"
git -C "$QPX_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 ||
    qpx_skip_all "$QPX_SRCDIR is not a git checkout (the packages build from a clean copy)"
if dpkg-query -W -f='${Status}' qpx softverbs 2>/dev/null | grep -q installed; then
    qpx_skip_all "qpx or softverbs packages already installed here: not touching them"
fi

tmp=$(mktemp -d)
trap 'apt-get purge -y -qq qpx qpx-dev softverbs >/dev/null 2>&1; rm -rf "$tmp"' EXIT
sysverbs=$(readlink -f /usr/lib/*/libibverbs.so.1 2>/dev/null | head -n 1)
before=$(md5sum "$sysverbs" 2>/dev/null)

# A clean copy of what is committed (uncommitted changes are not packaged)
git clone -q "$QPX_SRCDIR" "$tmp/src"
if (cd "$tmp/src" && dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1); then
    qpx_pass "dpkg-buildpackage: $(cd "$tmp" && ls ./*.deb | sed 's|^\./||' | tr '\n' ' ')"
else
    qpx_fail "dpkg-buildpackage failed"; tail -n 15 "$tmp/build.log"
    qpx_finish
fi

if command -v lintian >/dev/null; then
    errs=$(cd "$tmp" && lintian ./*.changes 2>/dev/null | grep '^E:')
    if [ -z "$errs" ]; then
        qpx_pass "lintian: no errors ($(cd "$tmp" && lintian ./*.changes 2>/dev/null | grep -c '^W:') warnings)"
    else
        qpx_fail "lintian errors:"; echo "$errs" | head -n 10
    fi
else
    echo "SKIP: lintian not installed"
fi

if (cd "$tmp" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        ./qpx_*.deb ./softverbs_*.deb ./qpx-dev_*.deb >"$tmp/install.log" 2>&1); then
    qpx_pass "apt-get install of the three packages"
else
    qpx_fail "apt-get install"; tail -n 10 "$tmp/install.log"
    qpx_finish
fi
files=$(dpkg -L qpx softverbs qpx-dev | sort -u)

# From the installed files only: no build tree on any path
export SOFTVERBS_SHM=$tmp/registry
unset QPX_MODULE SOFTVERBS_LIBDIR LD_PRELOAD
[ -e /dev/infiniband/uverbs0 ] || softverbs-setup >/dev/null 2>&1
out=$(qpxrun --soft ucx_info -d 2>&1)
if echo "$out" | grep -q "Transport: qpx_rc" &&
   echo "$out" | grep -q "Transport: qpx_ud"; then
    qpx_pass "installed qpxrun --soft ucx_info -d lists $(echo "$out" | grep -o 'Transport: qpx_[a-z]*' | sed 's/Transport: //' | tr '\n' ' ')"
else
    qpx_fail "installed qpxrun --soft ucx_info -d"; echo "$out" | tail -n 5
fi
port=$(qpx_free_port)
qpxrun --soft --quiet ucx_perftest -d softverbs0:1 -x qpx_ud -t am_lat -n 1000 \
    -p "$port" >"$tmp/srv.log" 2>&1 &
spid=$!
sleep 1
qpxrun --soft --quiet ucx_perftest -d softverbs0:1 -x qpx_ud -t am_lat -n 1000 \
    -p "$port" 127.0.0.1 >"$tmp/cli.log" 2>&1
crc=$?
wait $spid
if [ $crc -eq 0 ] && grep -q '^Final:' "$tmp/cli.log"; then
    qpx_run_pass "installed: ucx_perftest am_lat over qpx_ud: $(grep '^Final:' "$tmp/cli.log" | awk '{print $4 " us"}')"
else
    qpx_fail "installed: ucx_perftest pair (client exit $crc)"; tail -n 5 "$tmp/cli.log"
fi
# The data moved through the installed transports: the integrity program
# of this build (every operation and size class, payload checked) with the
# installed component and softverbs
prog=${QPX_TESTDIR:-.}/qpx_uct_integrity
if [ -x "$prog" ]; then
    for tl in qpx_rc qpx_ud; do
        qpxrun --soft --quiet "$prog" -x $tl -d softverbs0:1 >"$tmp/int.log" 2>&1
        if [ $? -eq 0 ]; then
            qpx_pass "installed $tl: $(tail -n 1 "$tmp/int.log")"
        else
            qpx_fail "installed $tl: integrity program: $(tail -n 1 "$tmp/int.log")"
        fi
    done
else
    echo "SKIP: $prog not built: no data check through the installed files"
fi
out=$(softverbs-stat -q 2>&1)
case "$out" in
total*) qpx_pass "installed softverbs-stat: $out" ;;
*)      qpx_fail "installed softverbs-stat: $out" ;;
esac

# Removed: nothing of theirs left, the system's libibverbs as it was
apt-get purge -y -qq qpx qpx-dev softverbs >"$tmp/purge.log" 2>&1
left=""
for f in $files; do
    [ -f "$f" ] && left="$left $f"
done
if [ -z "$left" ]; then
    qpx_pass "apt-get purge leaves none of the $(echo "$files" | wc -l) paths' files"
else
    qpx_fail "left after purge:$left"
fi
after=$(md5sum "$sysverbs" 2>/dev/null)
if [ -n "$before" ] && [ "$before" = "$after" ]; then
    qpx_pass "system libibverbs untouched ($sysverbs)"
else
    qpx_fail "system libibverbs changed: '$before' -> '$after'"
fi
qpx_finish
