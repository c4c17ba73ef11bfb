# cluster.gp: the cluster over time, one line per policy: TTFT p99 (top, log
# scale, the SLO dashed) and output tokens per second (bottom), per bucket.
# usage: gnuplot -e "data='out/run/plots/cluster.dat'; policies='round_robin kv_cost';
#        width='60'; slo='2'; nodata=''; fmt='png'; out='cluster.png'" plot/common.gp plot/cluster.gp
# data: one block per policy (in the order of `policies`), each with the header
# start_s,ttft_p99_s,requests_per_s,output_tokens_per_s and a row per bucket of
# `width` seconds, as kvsim compare --report writes it from DIR/<policy>/requests.csv.
if (!exists("width")) width = "60"
if (!exists("slo")) slo = "0"
w = width + 0
s = slo + 0
# minutes on the x axis for buckets of a minute, seconds under
unit = w >= 60 ? 60.0 : 1.0
bucket = w >= 60 ? sprintf("%g min", w / 60) : sprintf("%g s", w)
if (nodata ne "") {
    set title "the cluster over time"
    eval no_data_figure
} else {
    np = words(policies)
    stats data using 2 nooutput
    tlo = STATS_min
    thi = STATS_max
    if (s > 0 && s <= 20 * thi) { thi = s > thi ? s : thi; tlo = s < tlo ? s : tlo }
    tlo = tlo / 1.15
    thi = thi * 1.15
    set lmargin at screen 0.1
    set rmargin at screen 0.76
    set multiplot layout 2,1 title sprintf("the cluster over time, per %s: TTFT p99 and output tokens per second", bucket)
    set tmargin at screen 0.9
    set bmargin at screen 0.53
    set logscale y
    set yrange [tlo:thi]
    # the top panel is 0.37 x 600 = 222 px high
    tpx = 222
    tsize = 16
    eval duration_ytics
    set ylabel "TTFT p99 (log scale)"
    set format x ""
    set key outside right top title "policy"
    if (s > 0 && s <= 20 * STATS_max) {
        set arrow 1 from graph 0, first s to graph 1, first s nohead lw 2 dt (6, 4) lc rgb "#b00020" front
        set label 1 sprintf(" SLO: TTFT p99 under %s", dur_label(s)) at graph 0, first s left offset 0.5, -0.8 tc rgb "#b00020" front
    }
    if (s > 0 && s > 20 * STATS_max) {
        set label 1 sprintf("SLO: TTFT p99 under %s (far above the axis)", dur_label(s)) at graph 1, graph 1 right offset 0, 0.7 tc rgb "#b00020" front
    }
    plot for [i=1:np] data index (i - 1) using (column("start_s") / unit):(column("ttft_p99_s")) \
         with linespoints pt 7 ps 0.6 lt i title word(policies, i)
    unset arrow 1
    unset label 1
    unset logscale y
    unset key
    set tmargin at screen 0.5
    set bmargin at screen 0.1
    set format x "%g"
    set ytics auto
    set mytics default
    set yrange [0:*]
    set ylabel "output tokens / s"
    set xlabel unit == 60 ? "simulated time (min), at the start of each bucket" : "simulated time (s), at the start of each bucket"
    plot for [i=1:np] data index (i - 1) using (column("start_s") / unit):(column("output_tokens_per_s")) \
         with linespoints pt 7 ps 0.6 lt i notitle
    unset multiplot
}
