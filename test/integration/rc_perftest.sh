#!/bin/sh
# ucx_perftest UCT tests over every operation the transport advertises,
# sizes 1 B .. 4 MiB, two processes over softverbs.
. "$QPX_SRCDIR/test/integration/lib.sh"
. "$QPX_SRCDIR/test/integration/rc_lib.sh"
rc_setup

LD_PRELOAD=$QPX_MODULE ucx_info -d >"$RC_TMP/info" 2>&1
grep -q "Transport: $RC_TL" "$RC_TMP/info" || qpx_skip_all "$RC_TL not listed by ucx_info -d"
caps=$(awk "/Transport: $RC_TL/{f=1} f&&/^#\$/{n++} f&&n<4" "$RC_TMP/info")


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
                rc_pair "$t -D $m -s $s" -d "$RC_DEV" -x "$RC_TL" -t "$t" -D "$m" -s "$s" -n $n -w 5
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
        rc_pair "$t" -d "$RC_DEV" -x "$RC_TL" -t "$t" -n 2000 -w 10
    else
        echo "SKIP: $t not offered"
    fi
done

qpx_finish
