# latency_cdf.gp: CDF of a per-request latency, one line per policy, log x.
# usage: gnuplot -e "dir='out/run'; policies='round_robin session_affinity';
#        metric='ttft_s'; fmt='png'; out='ttft_cdf.png'" plot/common.gp plot/latency_cdf.gp
# Reads DIR/<policy>/requests.csv (kvsim compare); metric is ttft_s, tpot_s or e2e_s.
if (!exists("metric")) metric = "ttft_s"
label = metric eq "ttft_s" ? "time to first token" : metric eq "tpot_s" ? "time per output token" : "end-to-end latency"
# policies: those with a value to draw; `empty` (optional) names the others.
if (!exists("empty")) empty = ""
set title sprintf("%s, CDF over completed requests%s", label, empty eq "" ? "" : " (no data: ".empty.")")
if (nodata ne "") {
    eval no_data_figure
} else {
    # Counts first: stats obeys the axis ranges set below.
    np = words(policies)
    array n[np]
    do for [i=1:np] {
        stats sprintf("%s/%s/requests.csv", dir, word(policies, i)) using (column(metric)) nooutput
        n[i] = STATS_records
    }
    set xlabel sprintf("%s (s, log scale)", label)
    set ylabel "fraction of requests"
    set logscale x
    set autoscale xfix
    set yrange [0:1]
    plot for [i=1:np] sprintf("%s/%s/requests.csv", dir, word(policies, i)) \
         using (column(metric)):(1.0 / n[i]) smooth cumulative lw 2 title word(policies, i)
}
