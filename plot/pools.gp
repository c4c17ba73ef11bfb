# pools.gp: each pool's busy ratio and mean KV cache use, per policy.
# usage: gnuplot -e "data='out/run/plots/pools.dat'; npools='2'; keychars='36'; fmt='png';
#        out='pools.png'" plot/common.gp plot/pools.gp
# data: a header naming each pool twice, then per policy "policy,busy ratio of pools
# 1..npools,mean KV use of pools 1..npools", as kvsim plot writes it from the pools of
# DIR/<policy>/summary.json; keychars: the longest pool label's length.
np = int(npools)
# the policies, counted before the ranges are set (stats obeys them)
stats data using 0 nooutput
ncat = STATS_records
if (!exists("keychars")) keychars = "36"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set xtics noenhanced
set yrange [0:1.05]
# Both panels end where the key (in the first only) begins: the right
# margin is as wide as the longest label (at most 9 px a character at these
# fonts, and the sample), so the key never covers the bars and the two
# panels stay aligned.
right = 1 - (int(keychars) * 9.0 + 90) / 960
if (right < 0.45) right = 0.45
set lmargin at screen 0.08
set rmargin at screen right
set key outside right top Left reverse
eval bar_labels
set multiplot layout 2,1 title "pools: busy ratio and mean KV cache use, per policy"
set ylabel "busy ratio"
plot for [k=1:np] data using (column(1 + k)):xtic(1) title columnheader(1 + k) lc k
unset key
set ylabel "mean KV cache use"
set xlabel "routing policy"
plot for [k=1:np] data using (column(1 + np + k)):xtic(1) notitle lc k
unset multiplot
