# latency_load.gp: tail latency against offered load, from a sweep table.
# usage: gnuplot -e "csv='out/sweep/sweep.csv'; x='workload.sessions_per_s'; fmt='png';
#        out='latency_load.png'" plot/common.gp plot/latency_load.gp
# Column xcol (default 1) is the load and x names it; the CSV also needs
# ttft_p99_s and tpot_p99_s columns (kvsim sweep writes them).
if (!exists("x")) x = "load"
if (!exists("xcol")) xcol = "1"
xc = int(xcol)
set title "tail latency against load"
set xlabel x noenhanced
set ylabel "TTFT p99 (s)"
set y2label "TPOT p99 (s)"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
if (nodata ne "") {
    eval no_data_figure
} else {
    plot csv using xc:(column("ttft_p99_s")) with linespoints lw 2 pt 7 title "TTFT p99", \
         '' using xc:(column("tpot_p99_s")) axes x1y2 with linespoints lw 2 pt 5 title "TPOT p99"
}
