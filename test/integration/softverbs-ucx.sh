#!/bin/sh
#
# UCX 1.13.1's own verbs transports over softverbs: ucx_perftest UCT tests
# with rc_verbs and ud_verbs, UCP tag tests with UCX_TLS=rc_verbs,ud_verbs.
# Server and client on 127.0.0.1 under timeout; a case passes when both
# exit 0 and the client printed its results. SVT_CLIENTS=PATTERN filters.
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/softverbs-lib.sh"

for prog in ucx_perftest ss; do
    command -v $prog >/dev/null || qpx_skip_all "$prog not installed"
done
svt_env_setup
svt_need_device
svt_devnode_ok || exit 77
D=$SVT_DEV
# UCX_TLS below names only verbs transports, so UCP cannot fall back to shm/tcp
export UCX_WARN_UNUSED_ENV_VARS=n

want() { [ -z "$SVT_CLIENTS" ] || echo "$1" | grep -Eq "$SVT_CLIENTS"; }

# --- UCX 1.13 transports -------------------------------------------------------
# the client's summary row: "Final: <iterations> <numbers...>"
UCX_OK='^Final:[[:space:]]+[0-9]+[[:space:]]+[0-9.]+'
# ucx_pair KEY NAME SECS CMD: CMD as server, and as client of 127.0.0.1, on
# a free port; KEY is what SVT_CLIENTS selects
ucx_pair() {
    want "$1" || return 0
    port=$(qpx_free_port)
    SVT_LISTEN_PORT=$port svt_run_pair "$2" "$3" "$UCX_OK" \
        "$4 -n 2000 -w 100 -p $port" "$4 -n 2000 -w 100 -p $port 127.0.0.1"
}
uct() {
    ucx_pair "ucx_perftest $1 $2" "ucx_perftest -x $1 -t $2" 30 \
        "ucx_perftest -d $D:1 -x $1 -t $2 $3"
}
uct rc_verbs am_lat
uct rc_verbs put_lat
uct rc_verbs put_bw "-s 65536 -D zcopy"
uct rc_verbs get "-s 65536 -D zcopy"
uct rc_verbs add_lat
uct rc_verbs fadd
uct rc_verbs cswap
uct rc_verbs am_bw "-s 4096 -D bcopy"
uct ud_verbs am_lat
uct ud_verbs am_bw "-s 1024 -D bcopy"
ucp() {
    ucx_pair "ucx_perftest UCP $1 $2" "ucx_perftest UCP $1 UCX_TLS=$2" 30 \
        "env UCX_TLS=$2 UCX_NET_DEVICES=$D:1 ucx_perftest -t $1 $3"
}
ucp tag_lat rc_verbs,ud_verbs
ucp tag_bw rc_verbs,ud_verbs "-s 1048576"
ucp tag_lat ud_verbs
ucp ucp_put_lat rc_verbs,ud_verbs

# UCX's UD reliability over a lossy and reordering fabric (softverbs knobs)
lossy() {
    ucx_pair "ucx_perftest lossy $1" "ucx_perftest -x ud_verbs -t $1 with $2" \
        60 "env $2 ucx_perftest -d $D:1 -x ud_verbs -t $1 $3"
}
lossy am_bw "SOFTVERBS_UD_DROP=0.01 SOFTVERBS_UD_REORDER=0.01" "-s 1024 -D bcopy"
lossy am_lat "SOFTVERBS_UD_REORDER=0.05"

svt_check_released "no objects left after the UCX processes exited"

qpx_finish
