# Exclusive instructions of callgrind dumps by whose code ran them: the
# transport's own library (libuct_qpx, or UCX's libuct_ib for its own
# transports), the rest of UCX (libucs, libuct, libucp), softverbs (the
# verbs libraries), and everything else (libc, the test program, ld.so).
# Usage: awk -f cg_split.awk DUMPS...   prints: own ucx softverbs other
function cls(name) {
    if (name ~ /libuct_qpx\.so|\/libuct_ib\.so/) return "own"
    if (name ~ /softverbs|libibverbs|libmlx5|libefa/) return "sv"
    if (name ~ /libuc[stp]\.so|libuct\.so/) return "ucx"
    return "other"
}
FNR == 1 { cur = "other"; skip = 0 }
# rc_instr.sh runs callgrind with --compress-strings=no: every ob= line
# names its object
/^ob=/ { name = $0; sub(/^ob=/, "", name); cur = cls(name); next }
/^calls=/ { skip = 1; next }
/^[0-9+*-]/ {
    if (skip) { skip = 0; next }
    sum[cur] += $2; next
}
END { printf "%d %d %d %d\n", sum["own"], sum["ucx"], sum["sv"], sum["other"] }
