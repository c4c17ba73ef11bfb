# tokens.gp: where each policy's prompt tokens came from, stacked shares.
# usage: gnuplot -e "csv='out/run/comparison.csv'; fmt='png'; out='tokens.png'" plot/common.gp plot/tokens.gp
# the policies, counted before the ranges are set (stats obeys them)
ncat = 0
if (nodata eq "") { stats csv using 0 nooutput; ncat = STATS_records }
set title "prompt tokens by source (share of all prompt tokens)"
set ylabel "share of prompt tokens"
set xlabel "routing policy"
set yrange [0:1.05]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.6
set xtics noenhanced
share(c) = column("tokens_input") > 0 ? column(c) / column("tokens_input") : 0
if (nodata ne "") {
    eval no_data_figure
} else {
    eval bar_labels
    plot csv using (share("tokens_cached")):xtic(1) title "cached (HBM hit)" lc rgb "#2a9d8f", \
         '' using (share("tokens_reloaded")) title "reloaded (DRAM/NVMe)" lc rgb "#8ab17d", \
         '' using (share("tokens_migrated")) title "migrated (other GPU)" lc rgb "#e9c46a", \
         '' using (share("tokens_recomputed")) title "recomputed" lc rgb "#e76f51", \
         '' using (share("tokens_fresh")) title "fresh (first time)" lc rgb "#577590"
}
