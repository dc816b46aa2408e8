#!/bin/sh
# Interleaved ucx_perftest rounds of several configurations: each round runs
# every configuration once, in the order given, so that the machine's drift
# (load, the host's scheduling) falls on all of them alike. Prints each
# round, then per configuration the median and, round by round, its ratio
# to the LAST configuration (the median of those ratios, and in how many
# rounds it was ahead). Prints, never asserts.
#
# Usage: am-rotation.sh BUILDDIR ROUNDS ITERS CONFIG...
#   CONFIG: TL[@SVLIBDIR][:VAR=VALUE,VAR=VALUE] (the softverbs library
#   directory, and the environment of both processes)
#   e.g. am-rotation.sh build 40 300000 qpx_ud \
#            qpx_ud:UCX_QPX_UD_ACK_THRESH=32 ud_verbs
#        am-rotation.sh build 30 300000 qpx_ud@/tmp/old-softverbs qpx_ud
# AM_ROT_TEST (am_bw) and AM_ROT_SIZE (8) choose the test: am_bw prints
# msg/s (overall), am_lat the latency (usec; for it, lower is better).
# A UCP test (tag_bw, tag_lat, ucp_*, stream_*) runs over UCX_TLS=TL,self
# on the same device, as users run it:
#   AM_ROT_TEST=tag_bw am-rotation.sh build 16 500000 qpx_ud ud_verbs
# AM_ROT_WIRE (a SOFTVERBS_WIRE_DELAY value, e.g. 50us): the server is
# another host (SOFTVERBS_FIRST_DEVICE=1: its softverbs0 is slot 1) and
# every request between the two crosses a wire that far (docs/softverbs.md,
# The wire between ports):
#   AM_ROT_WIRE=50us AM_ROT_TEST=am_lat am-rotation.sh build 10 2000 qpx_ud ud_verbs
# AM_ROT_SVLIB: the default softverbs library directory (BUILDDIR's). Each
# library directory gets a registry of its own (SOFTVERBS_SHM), as two
# builds may differ in its layout.
B=$1; R=$2; N=$3
shift 3
T=${AM_ROT_TEST:-am_bw}
S=${AM_ROT_SIZE:-8}
MOD=$B/src/.libs/libuct_qpx.so
SVLIB=${AM_ROT_SVLIB:-$B/src/softverbs/.libs}
port=$((19000 + $$ % 1000))
out=$(mktemp)

one() { # TL LIBDIR ENV... -> value
    tl=$1; lib=$2; shift 2
    port=$((port + 1))
    shm=${SOFTVERBS_SHM:-/dev/shm/softverbs}-rot-$(echo "$lib" | cksum | cut -d' ' -f1)
    case $T in
    tag_*|ucp_*|stream_*)
        # UCP: the transport through UCX_TLS (-x, -d and -D are UCT's)
        set -- UCX_TLS="$tl,self" UCX_NET_DEVICES=softverbs0:1 "$@"
        args="-t $T -s $S -n $N -p $port" ;;
    *)
        args="-d softverbs0:1 -x $tl -t $T -D short -s $S -n $N -p $port" ;;
    esac
    if [ -n "${AM_ROT_WIRE:-}" ]; then
        set -- SOFTVERBS_WIRE_DELAY="$AM_ROT_WIRE" "$@"
        srv_slot=SOFTVERBS_FIRST_DEVICE=1
    else
        srv_slot=QPX_AM_ROT=1 # nothing: the server on this host's slot
    fi
    # shellcheck disable=SC2086 # one word per argument
    env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$MOD" SOFTVERBS_SHM="$shm" "$@" \
        "$srv_slot" timeout 120 ucx_perftest $args >/dev/null 2>&1 &
    spid=$!
    sleep 0.6
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$lib" LD_PRELOAD="$MOD" SOFTVERBS_SHM="$shm" "$@" \
        timeout 120 ucx_perftest $args 127.0.0.1 2>/dev/null |
        awk -v t="$T" '/^Final:/ { if (t ~ /lat/) print $3; else print $8 }'
    wait $spid 2>/dev/null
    rm -f "$shm"
}

i=0
while [ "$i" -lt "$R" ]; do
    line=""
    for c in "$@"; do
        tl=${c%%:*}
        envs=""
        [ "$tl" != "$c" ] && envs=$(echo "${c#*:}" | tr ',' ' ')
        lib=$SVLIB
        case $tl in *@*) lib=${tl#*@}; tl=${tl%%@*} ;; esac
        # shellcheck disable=SC2086 # one word per variable
        v=$(one "$tl" "$lib" $envs)
        line="$line ${v:-nan}"
    done
    echo "round $i:$line   (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "$line" >>"$out"
    i=$((i + 1))
done

for last in "$@"; do :; done
echo "$T -s $S -n $N, $R rounds${AM_ROT_WIRE:+, the server another host ${AM_ROT_WIRE} away}; ratios to the last configuration ($last)"
awk -v names="$*" '
    { for (c = 1; c <= NF; c++) v[NR, c] = $c; nc = NF; nr = NR }
    function med(a, n,   i, j, t) {
        for (i = 1; i <= n; i++)
            for (j = i + 1; j <= n; j++)
                if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[int((n + 1) / 2)]
    }
    END {
        split(names, name, " ")
        for (c = 1; c <= nc; c++) {
            n = 0; k = 0; delete a; delete r
            for (i = 1; i <= nr; i++) {
                if ((v[i, c] == "nan") || (v[i, nc] == "nan")) continue
                a[++n] = v[i, c]; r[n] = v[i, c] / v[i, nc]
                if (r[n] > 1) k++
            }
            if (n == 0) { printf "%-50s no result\n", name[c]; continue }
            printf "%-50s median %12.3f  ratio %.3f  above in %d of %d\n",
                   name[c], med(a, n), med(r, n), k, n
        }
    }' "$out"
rm -f "$out"
