# counts.gp: migrations, shed and failed requests and preemptions per policy.
# usage: gnuplot -e "csv='out/run/comparison.csv'; fmt='png'; out='counts.png'" plot/common.gp plot/counts.gp
# the policies, counted before the ranges are set (stats obeys them)
ncat = 0
if (nodata eq "") { stats csv using 0 nooutput; ncat = STATS_records }
set title "KV migrations, shed and failed requests, preemptions (zero: no bar)"
set ylabel "count (log scale)"
set xlabel "routing policy"
set logscale y
set yrange [0.8:*]
set xrange [-0.6:*]
set style fill solid 0.85 border rgb "#333333"
set xtics noenhanced
nz(c) = column(c) > 0 ? column(c) : 1e-9
w = 0.18
if (nodata ne "") {
    eval no_data_figure
} else {
    eval bar_labels
    plot csv using ($0 - 1.5 * w):(nz("migrations")):(w):xtic(1) with boxes title "migrations" lc rgb "#e9c46a", \
         '' using ($0 - 0.5 * w):(nz("shed")):(w) with boxes title "shed" lc rgb "#e76f51", \
         '' using ($0 + 0.5 * w):(nz("failed")):(w) with boxes title "failed" lc rgb "#9b2226", \
         '' using ($0 + 1.5 * w):(nz("preemptions")):(w) with boxes title "preemptions" lc rgb "#577590"
}
