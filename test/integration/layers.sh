#!/bin/sh
#
# The layering of the code, read from the objects the build made (which
# file calls which: test/integration/layers.py):
#  - qpx: calls go down, base/ <- rdma/ (the RC family) <- rc/ dc/ ud/ cm/
#    <- hybrid/, and no transport calls another of its rank (rc/ and dc/
#    share through rdma/, never each other); inside every folder (base/,
#    rdma/, rc/, dc/, ud/, cm/ and hybrid/), no circle;
#  - softverbs' libibverbs: no two files call each other, directly or
#    around a circle, and each file calls only those listed before it in
#    docs/softverbs.md's table of files (its layers, from the ground up);
#  - softverbs' librdmacm (the CM and rsockets): no circle, and each file
#    calls only those below it in the order of sv_cm.h and sv_rsocket.h.
# Each case prints the calls that break it.
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

build=${QPX_BUILDDIR:-$here/../..}
command -v nm >/dev/null 2>&1 || qpx_skip_all "nm not installed (binutils)"
command -v python3 >/dev/null 2>&1 || qpx_skip_all "python3 not installed"

src=${QPX_SRCDIR:-$here/../..}
# the objects of today's sources only: an incremental build keeps those of
# removed files (OBJ.o of DIR/.libs is DIR/OBJ.c's)
live_objs() {
    while read -r o; do
        d=${o%/.libs/*}; d=$src/${d#"$build"/}
        [ -f "$d/$(basename "${o%.o}").c" ] && echo "$o"
    done
}
qpx_objs=$(find "$build/src/uct/qpx" -path '*/.libs/*.o' | sort | live_objs)
sv_objs=$(find "$build/src/softverbs/.libs" -name 'sv_*.o' | sort | live_objs)
# librdmacm's objects carry libtool's prefix (librdmacm_la-sv_cm_id.o)
cm_objs=$(find "$build/src/softverbs/.libs" -name 'librdmacm_la-sv_*.o' |
          sort | sed 's|/librdmacm_la-|/|' | live_objs |
          sed 's|/\(sv_[^/]*\)$|/librdmacm_la-\1|')
# librdmacm's files from the ground up (sv_cm.h, sv_rsocket.h), those of
# one rank joined by +
cm_order=sv_cm_stub+sv_cm_hosts,sv_cm_addr,sv_cm_port,sv_cm_chan,sv_cm_thread
cm_order=$cm_order,sv_cm_mcast,sv_cm_conn,sv_cm_qp,sv_cm_conn_teardown
cm_order=$cm_order,sv_cm_id,sv_cm_conn_setup
cm_order=$cm_order,sv_rsocket,sv_rsocket_dgram+sv_rsocket_io,sv_rsocket_conn
[ -n "$qpx_objs" ] || qpx_skip_all "no qpx objects under $build/src/uct/qpx"
[ -n "$sv_objs" ] || qpx_skip_all "no softverbs objects under $build/src/softverbs"

# shellcheck disable=SC2086 # the object lists are split on purpose
qpx_check "qpx: calls go down (base, rdma, rc dc ud cm, hybrid)" \
    python3 "$here/layers.py" down base=0 rdma=1 rc=2 dc=2 ud=2 cm=2 \
    hybrid=3 $qpx_objs
for dir in base rdma rc dc ud cm hybrid; do
    objs=$(echo "$qpx_objs" | grep "/$dir/")
    if [ -z "$objs" ]; then
        echo "SKIP: qpx $dir: no objects (not built)"
        continue
    fi
    # shellcheck disable=SC2086
    qpx_check "qpx $dir: no circle of calls between its files" \
        python3 "$here/layers.py" cycles $objs
done
# shellcheck disable=SC2086
qpx_check "softverbs libibverbs: no circle of calls between its files" \
    python3 "$here/layers.py" cycles $sv_objs
# shellcheck disable=SC2086
qpx_check "softverbs libibverbs: files call only those before them in docs/softverbs.md" \
    python3 "$here/layers.py" order "$src/docs/softverbs.md" $sv_objs
if [ -n "$cm_objs" ]; then
    # shellcheck disable=SC2086
    qpx_check "softverbs librdmacm: no circle of calls between its files" \
        python3 "$here/layers.py" cycles $cm_objs
    # shellcheck disable=SC2086
    qpx_check "softverbs librdmacm: files call only those below them (sv_cm.h, sv_rsocket.h)" \
        python3 "$here/layers.py" files "$cm_order" $cm_objs
else
    echo "SKIP: softverbs librdmacm: no objects (not built)"
fi
qpx_finish
