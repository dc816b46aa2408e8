#!/bin/sh
# UCP active messages with a user header over every qpx transport, each
# size class (short, bcopy, one zcopy fragment, several, rendezvous),
# payload and header checked by the receiving process (qpx_ucp_am.c,
# built here against the installed UCP). The fragmented eager sizes need
# an AM zcopy of more than 2 iovs: qpx_ud offered 2, and UCP 1.13 aborted
# (`Assertion max_iov > 1' in ucp_am_send_nbx) at 8192 bytes.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_ud
gcc -O1 -o "$TL_TMP/am" "$QPX_SRCDIR/test/integration/qpx_ucp_am.c" \
    -lucp -lucs 2>"$TL_TMP/gcc.out" ||
    qpx_skip_all "qpx_ucp_am: $(head -n 1 "$TL_TMP/gcc.out")"
export UCX_NET_DEVICES="$QPX_DEV" UCX_WARN_UNUSED_ENV_VARS=n

# am_case MODE TLS [VAR=VALUE...]: MODE "" or quiet (qpx_ucp_am.c)
am_case() {
    mode=$1 tls=$2; shift 2
    # shellcheck disable=SC2086 # no word for an empty mode
    env "$@" UCX_TLS="$tls,self" LD_PRELOAD="$QPX_MODULE" timeout 120 \
        "$TL_TMP/am" 10 $mode >"$TL_TMP/out" 2>&1
    ret=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$TL_TMP/out")
    what="UCP AM with a user header over $tls${mode:+ ($mode receiver)}${*:+ $*}"
    if [ $ret -eq 0 ] && [ -n "$summary" ] &&
       [ "${summary#* passed, }" = "0 failed" ]; then
        qpx_pass "$what: $summary"
    else
        tail -n 15 "$TL_TMP/out"
        qpx_fail "$what (exit $ret): ${summary:-no summary}"
    fi
}

am_case "" qpx_ud
am_case "" qpx_rc,qpx_ud
am_case "" qpx_dc
am_case "" qpx
am_case "" qpx UCX_QPX_COLD_TL=ud
am_case "" qpx_ud SOFTVERBS_UD_DROP=0.02 SOFTVERBS_UD_REORDER=0.02
# No qpx_ud: UCP wires up over qpx_dc, which must then call UCP's wireup
# handler from the async thread (UCX 1.13 takes no transport without
# UCT_IFACE_FLAG_CB_ASYNC for that: "no auxiliary transport" before)
am_case "" qpx_rc,qpx_dc
# The receiver does not progress while the sender's endpoint wires up:
# its transports' async progress must answer (qpx_ud's, or qpx_dc's)
am_case quiet qpx_rc,qpx_dc
am_case quiet qpx_rc,qpx_ud
am_case quiet qpx_rc,qpx_dc UCX_QPX_DC_TX_POLICY=rand UCX_QPX_DC_NUM_DCI=1
qpx_finish
