#!/bin/sh
#
# softverbs benchmark: perftest over softverbs beside this machine's limits,
# measured in the same run. Prints a table; never asserts (exit 0 unless it
# could not run at all).
#
#   softverbs-bench.sh [BUILDDIR]     (default: the build tree of this script,
#                                      or $QPX_BUILDDIR)
#
# Rows: one-way latency (typical/avg usec) of ib_write_lat and ib_send_lat
# (8 bytes) against a raw shared-memory ping-pong between two processes;
# 1 MiB ib_write_bw average bandwidth against memcpy of 1 MiB. Targets:
# latency within 2x of the ping-pong, bandwidth within 2x of memcpy. A
# second table gives the same two measurements done with process_vm_writev
# (the copy mechanism available without shared memory) for reference.
#
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../integration/lib.sh"
. "$here/../integration/softverbs-lib.sh"

if [ -n "$1" ]; then
    QPX_BUILDDIR=$(cd "$1" && pwd)
elif [ -z "$QPX_BUILDDIR" ]; then
    if [ -x ./softverbs_shm_pingpong ]; then
        QPX_BUILDDIR=$(cd ../.. && pwd)
    else
        QPX_BUILDDIR=$(cd "$here/../.." && pwd)/build
    fi
fi
bench=$QPX_BUILDDIR/test/bench
QPX_TESTDIR=$QPX_BUILDDIR/test/integration
export QPX_BUILDDIR QPX_TESTDIR
SOFTVERBS_LIBDIR=${SOFTVERBS_LIBDIR:-$QPX_BUILDDIR/src/softverbs/.libs}
for prog in "$bench/softverbs_shm_pingpong" "$bench/softverbs_memcpy_bw"; do
    [ -x "$prog" ] || { echo "$prog not built (make check builds it)"; exit 1; }
done
svt_env_setup
svt_need_device
svt_link_opts
D=$SVT_DEV
ITERS=${SVT_BENCH_ITERS:-20000}

# perftest client output -> the first results row's columns $2 $3 ...
perftest_row() {
    port=$(qpx_free_port)
    timeout 60 "$@" -d "$D" -i 1 $SVT_PT_GID -p "$port" -F >/dev/null 2>&1 &
    spid=$!
    SVT_PIDS="$SVT_PIDS $spid"
    qpx_wait_port "$port"
    timeout 60 "$@" -d "$D" -i 1 $SVT_PT_GID -p "$port" -F 127.0.0.1 2>&1 |
        grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+' | head -n 1
    wait "$spid"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# raw limits (no verbs involved)
set -- $(LD_LIBRARY_PATH= "$bench/softverbs_shm_pingpong" 200000 8)
raw_typ=${1:-0}; raw_avg=${2:-0}
raw_bw=$(LD_LIBRARY_PATH= "$bench/softverbs_memcpy_bw" 1048576 1)
# the same through process_vm_writev (what a user-space device has)
set -- $(LD_LIBRARY_PATH= "$bench/softverbs_shm_pingpong" 100000 8 pvw)
pvw_typ=${1:-0}; pvw_avg=${2:-0}
pvw_bw=$(LD_LIBRARY_PATH= "$bench/softverbs_memcpy_bw" 1048576 1 pvw)

# softverbs through perftest; ib_*_lat columns: bytes iters min max typical avg
set -- $(perftest_row ib_write_lat -s 8 -n "$ITERS")
wl_typ=${5:-0}; wl_avg=${6:-0}
set -- $(perftest_row ib_send_lat -s 8 -n "$ITERS")
sl_typ=${5:-0}; sl_avg=${6:-0}
# ib_write_bw columns: bytes iters peak average msgrate
set -- $(perftest_row ib_write_bw -s 1048576 -n 2000)
wb_avg=${4:-0}

echo "softverbs benchmark on $(uname -n), $(nproc) cpus, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%FT%TZ)"
fmt='%-32s %10s %10s %10s %10s %8s %8s\n'
printf "$fmt" "" "softverbs" "" "limit" "" "ratio" ""
printf "$fmt" "metric" "typical" "avg" "typical" "avg" "typical" "avg"
printf "$fmt" "ib_write_lat 8 B one-way [usec]" "$wl_typ" "$wl_avg" "$raw_typ" "$raw_avg" \
    "$(ratio "$wl_typ" "$raw_typ")x" "$(ratio "$wl_avg" "$raw_avg")x"
printf "$fmt" "ib_send_lat 8 B one-way [usec]" "$sl_typ" "$sl_avg" "$raw_typ" "$raw_avg" \
    "$(ratio "$sl_typ" "$raw_typ")x" "$(ratio "$sl_avg" "$raw_avg")x"
printf "$fmt" "ib_write_bw 1 MiB [MiB/s]" "-" "$wb_avg" "-" "$raw_bw" "-" \
    "$(ratio "$raw_bw" "$wb_avg")x"
echo "limits: raw shared-memory ping-pong between two processes (latency),"
echo "        memcpy of 1 MiB in one process (bandwidth)"
echo "ratio:  softverbs/limit for latency, limit/softverbs for bandwidth; target <= 2x"
echo
echo "reference: the same ping-pong and copy done with process_vm_writev into"
echo "the other process (no shared memory), the mechanism softverbs writes with"
printf "$fmt" "" "pvw" "" "" "" "softverbs/pvw" ""
printf "$fmt" "metric" "typical" "avg" "" "" "typical" "avg"
printf "$fmt" "ping-pong 8 B one-way [usec]" "$pvw_typ" "$pvw_avg" "" "" \
    "$(ratio "$wl_typ" "$pvw_typ")x" "$(ratio "$wl_avg" "$pvw_avg")x"
printf "$fmt" "copy 1 MiB [MiB/s]" "-" "$pvw_bw" "" "" "-" \
    "$(ratio "$pvw_bw" "$wb_avg")x"
exit 0
