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

for c in "qpx_ud" "qpx_rc,qpx_ud" "qpx_dc" "qpx" "qpx UCX_QPX_COLD_TL=ud" \
         "qpx_ud SOFTVERBS_UD_DROP=0.02 SOFTVERBS_UD_REORDER=0.02"; do
    tls=${c%% *}; envs=""
    [ "$tls" != "$c" ] && envs=${c#* }
    # shellcheck disable=SC2086 # one word per variable
    env $envs UCX_TLS="$tls,self" LD_PRELOAD="$QPX_MODULE" timeout 120 \
        "$TL_TMP/am" 10 >"$TL_TMP/out" 2>&1
    ret=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$TL_TMP/out")
    if [ $ret -eq 0 ] && [ -n "$summary" ] &&
       [ "${summary#* passed, }" = "0 failed" ]; then
        qpx_pass "UCP AM with a user header over $c: $summary"
    else
        tail -n 15 "$TL_TMP/out"
        qpx_fail "UCP AM with a user header over $c (exit $ret): ${summary:-no summary}"
    fi
done
qpx_finish
