# latency_cdf.gp: the tail of a per-request latency, one line per policy: the
# share of requests at least as slow as x (the complementary CDF), log x and y.
# usage: gnuplot -e "data='out/run/plots/ttft_cdf.dat'; policies='round_robin session_affinity';
#        p99s='0.08 0.05'; slo='2'; metric='ttft_s'; nodata=''; fmt='png'; out='ttft_cdf.png'"
#        plot/common.gp plot/latency_cdf.gp
# data: one block per policy (in the order of `policies`), rows "value_s,fraction at or
# above", then a block of each policy's p99 ("p99_s,0.01"), as kvsim compare --report
# writes it from DIR/<policy>/requests.csv and summary.json; p99s: the same p99s,
# blank-separated, for the key; slo: the scenario's SLO on this metric's p99 (0: none);
# metric is ttft_s or tpot_s.
if (!exists("metric")) metric = "ttft_s"
label = metric eq "ttft_s" ? "time to first token" : metric eq "tpot_s" ? "time per output token" : "end-to-end latency"
# policies: those with a value to draw; `empty` (optional) names the others.
if (!exists("empty")) empty = ""
if (!exists("slo")) slo = "0"
if (!exists("p99s")) p99s = ""
set title sprintf("%s: share of completed requests at least this slow%s", label, empty eq "" ? "" : " (no data: ".empty.")")
if (nodata ne "") {
    eval no_data_figure
} else {
    np = words(policies)
    stats data using 1 nooutput
    xlo = STATS_min
    xhi = STATS_max
    stats data using 2 nooutput
    # down to the smallest share drawn (1/n), at most to 1e-4 (1 request in 10,000)
    ylo = 10.0 ** floor(log10(STATS_min) + 1e-9)
    ylo = ylo < 1e-4 ? 1e-4 : ylo
    s = slo + 0
    # the SLO line on the axis unless it is over 20 times the slowest request:
    # then a note says where it is, and the data keep the width
    slo_on = s > 0 && s <= 20 * xhi
    if (slo_on) { xhi = s > xhi ? s : xhi; xlo = s < xlo ? s : xlo }
    tlo = xlo / 1.15
    thi = xhi * 1.15
    # the plot is about 480 px wide, beside the key
    tpx = 480
    tsize = 45
    eval duration_xtics
    set logscale xy
    set xrange [tlo:thi]
    set yrange [ylo:1.2]
    set ytics ("100%%" 1, "10%% (p90)" 0.1, "1%% (p99)" 0.01, "0.1%%" 0.001, "0.01%%" 1e-4)
    set mytics 10
    set xlabel sprintf("%s (log scale)", label)
    set ylabel "share of requests at or above x (log scale)"
    if (slo_on) {
        set arrow 1 from s, graph 0 to s, graph 1 nohead lw 2 dt (6, 4) lc rgb "#b00020" front
        set label 1 sprintf("SLO: p99 under %s", dur_label(s)) at s, graph 0.96 right offset -0.6, 0 tc rgb "#b00020" front
    }
    if (s > 0 && !slo_on) {
        set label 1 sprintf("SLO: p99 under %s (off the axis, far right) ", dur_label(s)) at graph 0.99, graph 0.96 right tc rgb "#b00020" front
    }
    set key title "policy (p99)"
    plot for [i=1:np] data index (i - 1) using 1:2 with fsteps lt i \
             title sprintf("%s (%s)", word(policies, i), dur_short(real(word(p99s, i)))), \
         for [i=1:np] data index np every ::(i - 1)::(i - 1) using 1:2 with points lt i pt 7 ps 1.4 notitle
}
