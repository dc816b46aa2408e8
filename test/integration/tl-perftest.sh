#!/bin/sh
# The ucx_perftest matrix of one transport (QPX_TL): UCT tests over every
# operation it advertises (put, get, am; short, bcopy, zcopy; atomics),
# sizes 1 B .. 4 MiB up to its limits, two processes over softverbs. These
# are runs: ucx_perftest checks no payload (the integrity programs do).
# Each transport runs it from a script of one line (rc_perftest.sh).
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/tl_lib.sh"
[ -n "$QPX_TL" ] || qpx_skip_all "QPX_TL (the transport) not set"
tl_setup "$QPX_TL"

LD_PRELOAD=$QPX_MODULE ucx_info -d >"$TL_TMP/info" 2>&1
grep -q "Transport: $QPX_TL" "$TL_TMP/info" || qpx_skip_all "$QPX_TL not listed by ucx_info -d"
caps=$(awk "/Transport: $QPX_TL/{f=1} f&&/^#\$/{n++} f&&n<4" "$TL_TMP/info")


ALL="1 8 64 119 128 1024 4096 8191 8192 65536 1048576 4194304"
for cls in put:put_lat:put_bw get:get: am:am_lat:am_bw; do
    op=${cls%%:*}
    for m in short bcopy zcopy; do
        key="${op}_$m"
        echo "$caps" | grep -q " $key:" || { echo "SKIP: $key not offered"; continue; }
        LIMIT=$(echo "$caps" | awk -v k="$key:" '$1=="#" && $2==k {print $4}' | tr -d ,)
        case "$LIMIT" in *K) LIMIT=$(( ${LIMIT%K} * 1024 ));; *G) LIMIT=$(( ${LIMIT%G} * 1073741824 ));; *M) LIMIT=$(( ${LIMIT%M} * 1048576 ));; esac
        [ "$LIMIT" -gt 4194304 ] && LIMIT=4194304
        SIZES="$ALL"
        [ "$op" = am ] && SIZES="8 64 119 1024 4096 8191"
        tests=$(echo "$cls" | cut -d: -f2-)
        for t in $(echo "$tests" | tr ':' ' '); do
            [ "$op" = get ] && t=get
            for s in $SIZES; do
                [ "$s" -le "$LIMIT" ] || continue
                n=1000; [ "$s" -ge 65536 ] && n=100; [ "$s" -ge 1048576 ] && n=10
                tl_pair "$t -D $m -s $s" -d "$QPX_DEV" -x "$QPX_TL" -t "$t" -D "$m" -s "$s" -n $n -w 5
            done
            [ "$op" = get ] && break
        done
    done
done

for t in add_lat add_mr fadd swap cswap; do
    case $t in
        add_*) k=atomic_add;; fadd) k=atomic_fadd;; swap) k=atomic_swap;; cswap) k=atomic_cswap;;
    esac
    if echo "$caps" | grep -q " $k:"; then
        tl_pair "$t" -d "$QPX_DEV" -x "$QPX_TL" -t "$t" -n 2000 -w 10
    else
        echo "SKIP: $t not offered"
    fi
done

qpx_finish
