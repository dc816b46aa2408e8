#!/bin/sh
# qpx_dc with many peers and failing ones (qpx_dc_peers): one interface
# reaches 4096 endpoints over 16 interfaces of 4 processes with its QPs
# staying NUM_DCI + 1, every put and fetch-add checked; a wrong DC key, a
# destroyed DCT and a killed peer each fail their endpoint through the
# error handler, with nothing written, and the interface goes on serving a
# healthy peer.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_dc
prog=$QPX_TESTDIR/qpx_dc_peers
[ -x "$prog" ] || qpx_skip_all "$prog not built"

# peers NAME ENV... -- ARGS...: the program's own checks, each one a case
peers() {
    name=$1; shift
    envs=""
    while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
    shift
    env $envs LD_PRELOAD="$QPX_MODULE" timeout 300 "$prog" -d "$QPX_DEV" "$@" \
        >"$TL_TMP/out" 2>&1
    ret=$?
    grep -E "^(PASS|FAIL)" "$TL_TMP/out" | sed "s/^\(PASS\|FAIL\): /\1: $name: /" |
    while read -r line; do echo "$line"; done
    QPX_PASS=$((QPX_PASS + $(grep -c "^PASS" "$TL_TMP/out")))
    QPX_FAIL=$((QPX_FAIL + $(grep -c "^FAIL" "$TL_TMP/out")))
    if [ $ret -ne 0 ] && ! grep -q "^FAIL" "$TL_TMP/out"; then
        qpx_fail "$name: exit $ret"
        tail -n 8 "$TL_TMP/out"
    fi
}

peers "4096 eps (dcs)" -- -m many -p 4 -i 4 -e 4096
peers "1024 eps (sticky, 2 DCIs)" UCX_QPX_DC_TX_POLICY=sticky \
    UCX_QPX_DC_NUM_DCI=2 -- -m many -p 2 -i 2 -e 1024
peers "1024 eps (rand)" UCX_QPX_DC_TX_POLICY=rand -- -m many -p 2 -i 2 -e 1024
peers "1024 eps (spread)" UCX_QPX_DC_TX_POLICY=spread -- -m many -p 2 -i 2 -e 1024
peers "failures" UCX_QPX_DC_TIMEOUT=500ms UCX_QPX_DC_RETRY_COUNT=3 -- -m fail
peers "failures (spread)" UCX_QPX_DC_TIMEOUT=500ms UCX_QPX_DC_RETRY_COUNT=3 \
    UCX_QPX_DC_TX_POLICY=spread -- -m fail
qpx_finish
