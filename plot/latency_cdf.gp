# latency_cdf.gp: CDF of a per-request latency, one line per policy, log x.
# usage: gnuplot -e "data='out/run/plots/ttft_cdf.dat'; policies='round_robin session_affinity';
#        metric='ttft_s'; nodata=''; fmt='png'; out='ttft_cdf.png'" plot/common.gp plot/latency_cdf.gp
# data: one block per policy (in the order of `policies`), rows "value,fraction", as
# kvsim compare --report writes it from DIR/<policy>/requests.csv; metric is ttft_s or tpot_s.
if (!exists("metric")) metric = "ttft_s"
label = metric eq "ttft_s" ? "time to first token" : metric eq "tpot_s" ? "time per output token" : "end-to-end latency"
# policies: those with a value to draw; `empty` (optional) names the others.
if (!exists("empty")) empty = ""
set title sprintf("%s, CDF over completed requests%s", label, empty eq "" ? "" : " (no data: ".empty.")")
if (nodata ne "") {
    eval no_data_figure
} else {
    np = words(policies)
    set xlabel sprintf("%s (s, log scale)", label)
    set ylabel "fraction of requests"
    set logscale x
    set autoscale xfix
    set yrange [0:1]
    plot for [i=1:np] data index (i - 1) using 1:2 with steps lw 2 title word(policies, i)
}
