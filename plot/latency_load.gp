# latency_load.gp: tail latency against offered load, a series per policy
# (compare --rates) or per combination of a sweep's other varied values.
# usage: gnuplot -e "csv='out/run/plots/latency_load.dat'; x='workload.sessions_per_s';
#        policies='round_robin session_affinity'; slo_ttft='2'; slo_tpot='0.1';
#        nodata=''; fmt='png'; out='latency_load.png'" plot/common.gp plot/latency_load.gp
# csv holds one block per series (blocks apart by two blank lines, each with a
# header line) of rate,ttft_p99_s,tpot_p99_s,ttft at the capacity (NaN
# elsewhere); policies names the series, blank-separated; slo_ttft, slo_tpot
# (0: none) are drawn as lines. TTFT p99 is on a log axis: from an idle
# cluster's tens of milliseconds to an overloaded one's tens of seconds.
if (!exists("x")) x = "load"
if (!exists("policies")) policies = "series"
if (!exists("slo_ttft")) slo_ttft = "0"
if (!exists("slo_tpot")) slo_tpot = "0"
st = slo_ttft + 0
sp = slo_tpot + 0
set title "tail latency against load"
set xlabel x noenhanced
set ylabel "TTFT p99 (s), log scale"
set y2label "TPOT p99 (s)"
set ytics nomirror
set y2tics
set logscale y
set y2range [0:*]
set key below
set bmargin 8
if (nodata ne "") {
    eval no_data_figure
}
# the SLOs as series of their own, so that the axes' ranges take them in
slos = ""
if (st > 0) slos = slos . sprintf(", %.9g with lines dt 2 lw 2 lc rgb '#d62728' title 'TTFT SLO'", st)
if (sp > 0) slos = slos . sprintf(", %.9g axes x1y2 with lines dt 3 lw 2 lc rgb '#7f7f7f' title 'TPOT SLO'", sp)
cmd = "plot for [i=1:words(policies)] csv index (i - 1) using 1:2 with linespoints lt i pt 7 title word(policies, i).' TTFT p99' noenhanced, " . \
      "for [i=1:words(policies)] csv index (i - 1) using 1:3 axes x1y2 with linespoints lc i dt 3 lw 1 pt 4 title word(policies, i).' TPOT p99' noenhanced, " . \
      "for [i=1:words(policies)] csv index (i - 1) using 1:4 with points pt 6 ps 3 lw 2 lc i notitle" . slos
if (nodata eq "") {
    # the TPOT axis up to 8% above the highest of the TPOTs and the SLO, so
    # that an SLO at the top is not hidden in the border
    stats csv using 3 nooutput
    top = STATS_max > sp ? STATS_max : sp
    set y2range [0:top * 1.08]
    eval cmd
}
