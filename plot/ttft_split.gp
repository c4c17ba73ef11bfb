# ttft_split.gp: each policy's mean time to first token, stacked by its parts.
# usage: gnuplot -e "csv='out/run/comparison.csv'; fmt='png'; out='ttft_split.png'" plot/common.gp plot/ttft_split.gp
# csv: comparison.csv of a disaggregated cluster, whose ttft_queue_s, ttft_prefill_s,
# ttft_transfer_s and ttft_decode_queue_s columns (means over completed requests) add up
# to ttft_mean_s.
# the policies, counted before the ranges are set (stats obeys them)
ncat = 0
if (nodata eq "") { stats csv using 0 nooutput; ncat = STATS_records }
set title "mean time to first token, by part (disaggregated prefill and decode)"
set ylabel "seconds (mean over completed requests)"
set xlabel "routing policy"
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.6
set xtics noenhanced
if (nodata ne "") {
    eval no_data_figure
} else {
    eval bar_labels
    plot csv using (column("ttft_queue_s")):xtic(1) title "prefill queue" lc rgb "#577590", \
         '' using (column("ttft_prefill_s")) title "prefill" lc rgb "#2a9d8f", \
         '' using (column("ttft_transfer_s")) title "KV transfer" lc rgb "#e9c46a", \
         '' using (column("ttft_decode_queue_s")) title "decode queue" lc rgb "#e76f51"
}
