#!/bin/sh
# qpx_ud against bad input from the network: short, truncated, unknown type,
# unknown/stale endpoint ids, wrong source, PSNs duplicate/ahead/out of any
# window, wrong Q_Key, a connection request that claims another sender, a
# packet for an endpoint from a QP that is not its peer, and two floods of
# 100 connection requests from one QP each, the second's with the ACK flag
# set (32 half-open endpoints per QP at most either way). Only the
# one well-formed AM may be delivered; every other packet is dropped and
# counted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ud-common.sh"

out=$(ud_run env UCX_QPX_UD_PRINT_STATS=y timeout 60 "$UD_TEST" garbage 2>&1); rc=$?
echo "$out" | sed 's/^/  /'
[ $rc -eq 77 ] && qpx_skip_all "no qpx_ud resource"
qpx_check "exactly the well-formed AM delivered" [ $rc -eq 0 ]
stat() { echo "$out" | sed -n "s/.*qpx_ud stats:.* $1=\([0-9]*\).*/\1/p" | head -1; }
qpx_check "short and truncated counted (rx_short=$(stat rx_short))" [ "$(stat rx_short)" = 2 ]
qpx_check "unknown type counted (rx_bad_type=$(stat rx_bad_type))" [ "$(stat rx_bad_type)" = 1 ]
qpx_check "unknown and stale-generation ids counted (rx_unknown_ep=$(stat rx_unknown_ep))" [ "$(stat rx_unknown_ep)" = 2 ]
qpx_check "wrong source and out-of-window PSN counted (rx_stale=$(stat rx_stale))" [ "$(stat rx_stale)" = 2 ]
qpx_check "duplicate counted (rx_dup=$(stat rx_dup))" [ "$(stat rx_dup)" = 1 ]
qpx_check "gaps counted (rx_ahead=$(stat rx_ahead))" [ "$(stat rx_ahead)" = 2 ]
qpx_check "forged CONN and packet from a non-peer QP counted (rx_spoofed=$(stat rx_spoofed))" [ "$(stat rx_spoofed)" = 2 ]
qpx_check "two floods (one with ACK flags) beyond 32 half-open endpoints each refused (rx_conn_refused=$(stat rx_conn_refused))" [ "$(stat rx_conn_refused)" = 136 ]
qpx_finish
