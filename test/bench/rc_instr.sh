#!/bin/sh
# Instructions per operation (callgrind, exact) of qpx_rc beside rc_verbs:
# qpx_uct_instr collects each phase separately, so polling an empty queue
# while waiting for the peer is not counted. Prints a table, never asserts.
#   sh test/bench/rc_instr.sh [builddir]
#   Env: BENCH_TLS, BENCH_DEV, BENCH_BURST (sends per round, 128), BENCH_ROUNDS (64)
B=$(cd "${1:-build}" && pwd)
PROG="$B/test/bench/qpx_uct_instr"
MOD="$B/src/.libs/libuct_qpx.so"
DEV=${BENCH_DEV:-softverbs0:1}
TLS=${BENCH_TLS:-"qpx_rc rc_verbs"}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -x "$PROG" ] || make -C "$B/test/bench" qpx_uct_instr >/dev/null
export LD_LIBRARY_PATH="$B/src/softverbs/.libs"

for tl in $TLS; do
    mkdir -p "$TMP/$tl"
    LD_PRELOAD=$MOD timeout 600 valgrind --tool=callgrind --collect-atstart=no \
        --compress-strings=no \
        --callgrind-out-file="$TMP/$tl/cg.%p" "$PROG" -x "$tl" -d "$DEV" \
        -b "${BENCH_BURST:-128}" -r "${BENCH_ROUNDS:-64}" >"$TMP/$tl/log" 2>&1
done

# Operations of a phase (TL PHASE), from the program's log
phase_ops() {
    grep "^$2 " "$TMP/$1/log" | awk '{print $(NF-3)}' | head -1
}

# The callgrind dumps of a phase (TL PHASE): desc "Trigger: Client Request: X"
phase_dumps() {
    grep -l "Client Request: $2\$" "$TMP/$1"/cg.* 2>/dev/null
}

# phase name -> Ir / ops, from the dumps
printf '%-26s' "instructions per op"; for tl in $TLS; do printf '%12s' "$tl"; done; echo
for phase in "put_short" "am_short" "am receive (progress)" \
             "sender progress per am" "empty progress (sender)" \
             "empty progress (recv)"; do
    printf '%-26s' "$phase"
    for tl in $TLS; do
        ops=$(phase_ops "$tl" "$phase")
        ir=$(phase_dumps "$tl" "$phase" |
             while read -r f; do sed -n 's/^summary: *//p' "$f"; done |
             awk '{s+=$1} END{if (NR) print s}')
        if [ -n "$ir" ] && [ -n "$ops" ]; then
            printf '%12s' "$(echo "$ir $ops" | awk '{printf "%.0f", $1/$2}')"
        else
            printf '%12s' "n/a"
        fi
    done
    echo
done

# Sends refused for want of room (UCS_ERR_NO_RESOURCE): each refused call
# is in its phase's count (the progress that made room is not); many of
# them make the phase read high, and the counts compare only where both
# columns are near 0 (a smaller BENCH_BURST)
printf '%-26s' "refused calls (am_short)"
for tl in $TLS; do
    printf '%12s' "$(sed -n 's/^am_short refused *\([0-9]*\) .*/\1/p' "$TMP/$tl/log")"
done
echo; echo

# The same counts split by whose code ran them: the transport's own library
# (libuct_qpx; libuct_ib for UCX's transports), the rest of UCX, softverbs,
# and the rest (libc, the test program). The comparison that matters is the
# first column of qpx against the first column of UCX's transport.
SPLIT="$(dirname "$0")/cg_split.awk"
echo
printf '%-26s' "split: own/ucx/sv/other"; for tl in $TLS; do printf ' %25s' "$tl"; done; echo
for phase in "put_short" "am_short" "am receive (progress)" \
             "sender progress per am" "empty progress (sender)"; do
    printf '%-26s' "$phase"
    for tl in $TLS; do
        ops=$(phase_ops "$tl" "$phase")
        files=$(phase_dumps "$tl" "$phase")
        if [ -n "$files" ] && [ -n "$ops" ]; then
            # shellcheck disable=SC2086
            printf ' %25s' "$(awk -f "$SPLIT" $files |
                awk -v n="$ops" '{printf "%.0f/%.0f/%.0f/%.0f", $1/n, $2/n, $3/n, $4/n}')"
        else
            printf ' %25s' "n/a"
        fi
    done
    echo
done
