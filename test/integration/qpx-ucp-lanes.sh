#!/bin/sh
# Which lanes UCP gives qpx's transports, against what it gives UCX's own
# (ucx_info -e -u te: an endpoint with peer error handling, whose lanes
# include a keepalive one). UCP puts keepalive on the transport that
# reports the most endpoints in flight (uct_iface_estimate_perf's
# max_inflight_eps); UCX's RC reports its send CQ over its QP length (16),
# its UD transports no limit, so keepalive goes to ud_verbs beside
# rc_verbs. qpx_rc reported no limit, won keepalive and left qpx_ud only
# the auxiliary transport: parked by UCP between connections and woken
# for each, a wireup with UCX_QPX_UD_EVENTS=y took ~1 ms instead of ~0.2
# (docs/performance.md, cm-bench.sh). Each set must give the lanes UCX's
# own equivalent gives.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
tl_setup qpx_rc
command -v ucx_info >/dev/null || qpx_skip_all "ucx_info missing"
export UCX_NET_DEVICES=softverbs0:1

# lanes TLS [PRELOAD]: "TL:USES" per lane, e.g. "qpx_ud:keepalive,wireup"
lanes() {
    env UCX_TLS="$1" ${2:+LD_PRELOAD=$2} ucx_info -e -u te 2>&1 |
        awk '/lane\[[0-9]+\]:/ {
                 tl = $3; sub(/^[0-9]+:/, "", tl); sub(/\/.*/, "", tl)
                 u = ""; for (i = 1; i <= NF; i++) if ($i == "->") break
                 for (i += 2; i <= NF; i++) u = u (u == "" ? "" : ",") $i
                 print tl ":" u }'
}

# the transport of the keepalive lane
keepalive_tl() {
    lanes "$@" | awk -F: '$2 ~ /(^|,)keepalive(,|$)/ { print $1 }'
}

# expect NAME TLS WANT UCX_TLS_OF_UCX UCX_WANT: the keepalive lane of
# qpx's set is on WANT, as UCX's own equivalent's is on UCX_WANT
expect() {
    got=$(keepalive_tl "$2" "$QPX_MODULE")
    ref=$(keepalive_tl "$4")
    if [ -z "$got" ]; then
        qpx_fail "$1: no keepalive lane for UCX_TLS=$2:"
        lanes "$2" "$QPX_MODULE" | sed 's/^/    /'
    elif [ "$got" = "$3" ]; then
        qpx_pass "$1: UCX_TLS=$2 keeps alive on $got (UCX's $4 on ${ref:-?})"
    else
        qpx_fail "$1: UCX_TLS=$2 keeps alive on $got, expected $3 (UCX's $4 on ${ref:-?}); lanes:"
        lanes "$2" "$QPX_MODULE" | sed 's/^/    /'
    fi
    if [ -n "$5" ] && [ "$ref" != "$5" ]; then
        qpx_fail "$1: UCX's UCX_TLS=$4 keeps alive on '${ref}', not $5 (reference changed?)"
    fi
}

expect "rc beside ud" qpx_rc,qpx_ud qpx_ud rc_verbs,ud_verbs ud_verbs
expect "dc beside ud" qpx_dc,qpx_ud qpx_ud rc_verbs,ud_verbs ud_verbs
expect "dc with ud as auxiliary" qpx_dc,qpx_ud:aux qpx_ud rc_verbs,ud_verbs:aux ud_verbs
expect "hybrid alone" qpx qpx ud_verbs ud_verbs

# the data lanes stay where they were: RMA and AM on qpx_rc
l=$(lanes qpx_rc,qpx_ud "$QPX_MODULE" | tr '\n' ' ')
case " $l" in
*" qpx_rc:"*rma_bw*am*) qpx_pass "rc beside ud: RMA and AM lanes on qpx_rc ($l)" ;;
*) qpx_fail "rc beside ud: RMA and AM not on qpx_rc: $l" ;;
esac

qpx_finish
