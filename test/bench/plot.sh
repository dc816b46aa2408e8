#!/bin/sh
# Plots of size-sweep.sh's data: latency and message rate against message
# size, one line per transport, as SVG and PNG (gnuplot).
#   sh test/bench/plot.sh DATAFILE OUTDIR
# Writes OUTDIR/latency.{svg,png} and OUTDIR/rate.{svg,png}.
data=$1
out=$2
command -v gnuplot >/dev/null || { echo "plot: gnuplot not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -s "$data" ] || { echo "plot: no data in '$data'" >&2; exit 1; }
mkdir -p "$out"
# transports in the order of their data blocks
labels=$(awk '!/^#/ && NF { if (!($1 in seen)) { seen[$1] = 1; printf "%s ", $1 } }' "$data")
n=$(echo $labels | wc -w)

for fmt in svg png; do
    case $fmt in
    svg) term="svg size 800,500 dynamic background rgb 'white'" ;;
    png) term="pngcairo size 800,500" ;;
    esac
    gnuplot <<GP || exit 1
set terminal $term
set termoption noenhanced
set datafile commentschars "#"
set logscale x 2
set format x "%.0s%c"
set logscale y 10
set grid
set key top left
set xlabel "message size (bytes)"
labels = "$labels"
set output "$out/latency.$fmt"
set title "UCP tag_lat, typical latency (softverbs, one host)"
set ylabel "latency (us)"
plot for [i=0:$n-1] "$data" index i using 2:3 with linespoints title word(labels, i+1)
set output "$out/rate.$fmt"
set title "UCP tag_bw, message rate (softverbs, one host)"
set ylabel "messages per second"
set key top right
plot for [i=0:$n-1] "$data" index i using 2:4 with linespoints title word(labels, i+1)
GP
done
echo "plot: $out/latency.svg $out/latency.png $out/rate.svg $out/rate.png"
