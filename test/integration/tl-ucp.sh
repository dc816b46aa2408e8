#!/bin/sh
# UCP over one qpx transport QPX_TL (run by rc_ucp.sh, dc-ucp.sh):
# UCX_TLS=$QPX_UCP_TLS (default: QPX_TL,ud_verbs, UCX's UD carrying wireup
# for a connect-to-ep transport); ucx_perftest UCP tests, and UCX's lane
# report shows QPX_TL carrying the tag, RMA, AM and stream lanes. With
# -E sleep, ucx_perftest waits in ucp_worker_wait (event fd +
# ucp_worker_arm): UCP uses only transports with event notification, so
# QPX_TL must carry the lanes there too, and a lost event would hang the
# test (timeout: failure).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
export UCX_TLS="${QPX_UCP_TLS:-$QPX_TL,ud_verbs}"
export UCX_NET_DEVICES="$QPX_DEV"

for t in "tag_lat" "tag_bw -s 1048576" "ucp_put_lat" "ucp_put_bw -s 4194304" \
         "ucp_get -s 65536" "ucp_am_lat" "ucp_am_bw -s 100000" "stream_lat" \
         "stream_bw -s 65536" "ucp_add" "ucp_fadd" "ucp_cswap"; do
    tl_pair "UCP $t" -t $t -n 2000 -w 10
done

# Lane report: which transport carries each lane
lanes() { # test expected-lane
    UCX_LOG_LEVEL=info tl_pair "UCP $1 lanes" -t "$1" -n 100 -w 1
    if grep -q "ep_cfg.*$2($QPX_TL/" "$TL_TMP/cli.log"; then
        qpx_pass "$1: $2 lane on $QPX_TL ($(grep -o 'ep_cfg\[[0-9]*\]: .*' "$TL_TMP/cli.log" | head -1))"
    else
        qpx_fail "$1: no $2 lane on $QPX_TL"; grep "ep_cfg" "$TL_TMP/cli.log"
    fi
}
# Event-driven progress (uct_iface_event_fd_get / uct_iface_event_arm,
# UCX_<TL>_EVENTS=y, the default). Not here: ucp_put_lat, whose target
# waits for an RDMA write, which raises no event (rc_verbs hangs the same
# way). stream_bw hung in half of the runs before event_arm stopped
# returning BUSY for work it found (UCP's check of an idle interface sleeps
# after a BUSY).
P=$QPX_TL_ENV
if [ "${QPX_UCP_SLEEP:-y}" = n ]; then
    # Not counted: the transport offers no event notification (UCP would
    # not put it on a lane in sleep mode)
    echo "(no sleep-mode cases: $QPX_TL has no event notification)"
else
export UCX_${P}_EVENTS=y
for t in "tag_lat" "tag_bw -s 1048576" "ucp_am_lat" "ucp_am_bw -s 100000" \
         "stream_lat -s 8000" "stream_bw -s 65536" "stream_bw -s 8000"; do
    tl_pair "UCP $t, sleep mode" -t $t -E sleep -n 2000 -w 10
done
UCX_LOG_LEVEL=info tl_pair "UCP tag_lat sleep mode lanes" -t tag_lat -E sleep -n 100 -w 1
if grep -q "ep_cfg.*tag($QPX_TL/" "$TL_TMP/cli.log"; then
    qpx_pass "sleep mode: tag lane on $QPX_TL"
else
    qpx_fail "sleep mode: no tag lane on $QPX_TL (no event support?)"; grep "ep_cfg" "$TL_TMP/cli.log"
fi
unset UCX_${P}_EVENTS
fi

lanes tag_lat tag
if tl_has_cap put_zcopy; then
    lanes ucp_put_lat rma
    lanes ucp_get rma
else
    # UCP emulates RMA over active messages: no rma lane to find
    echo "(no rma lane cases: $QPX_TL has no RDMA; ucp_put/ucp_get ran above)"
fi
lanes ucp_am_lat am
lanes stream_lat stream
qpx_finish
