# latency_load.gp: tail latency against offered load, from a sweep table.
# usage: gnuplot -e "csv='out/sweep/sweep.csv'; x='workload.sessions_per_s'; fmt='png';
#        out='latency_load.png'" plot/common.gp plot/latency_load.gp
# Column xcol (default 1) is the load and x names it; the CSV also needs
# ttft_p99_s and tpot_p99_s columns (kvsim sweep writes them).
# compare --rates sets policies (their names, blank-separated) and slo_ttft,
# slo_tpot (0: none): csv then holds one block per policy (blocks apart by
# two blank lines) of rate,ttft_p99_s,tpot_p99_s,ttft at the capacity (NaN
# elsewhere); a series per policy, the SLO lines, each capacity circled.
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
if (!exists("policies")) policies = ""
if (!exists("slo_ttft")) slo_ttft = "0"
if (!exists("slo_tpot")) slo_tpot = "0"
st = slo_ttft + 0
sp = slo_tpot + 0
if (policies ne "" && st > 0) set arrow 1 from graph 0, first st to graph 1, first st nohead dt 2 lw 2 lc rgb "#d62728"
if (policies ne "" && sp > 0) set arrow 2 from graph 0, second sp to graph 1, second sp nohead dt 3 lw 2 lc rgb "#7f7f7f"
if (nodata ne "") {
    eval no_data_figure
}
if (nodata eq "" && policies ne "") {
    set key top left
    set label 1 "TTFT SLO (dashed), TPOT SLO (dotted)" at graph 0.02, graph 0.95 left
    plot for [i=1:words(policies)] csv index (i - 1) using 1:2 with linespoints lw 2 pt 7 lc i title word(policies, i)." TTFT p99" noenhanced, \
         for [i=1:words(policies)] csv index (i - 1) using 1:3 axes x1y2 with linespoints dt 2 lw 1 pt 5 lc i title word(policies, i)." TPOT p99" noenhanced, \
         for [i=1:words(policies)] csv index (i - 1) using 1:4 with points pt 6 ps 3 lw 2 lc i notitle
}
if (nodata eq "" && policies eq "") {
    plot csv using xc:(column("ttft_p99_s")) with linespoints lw 2 pt 7 title "TTFT p99", \
         '' using xc:(column("tpot_p99_s")) axes x1y2 with linespoints lw 2 pt 5 title "TPOT p99"
}
