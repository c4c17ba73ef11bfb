# scaling.gp: nodes serving and the load over time, for a run whose pools autoscaled.
# usage: gnuplot -e "data='out/run/plots/scaling_hpa.dat'; name='hpa'; fmt='png';
#        out='scaling.png'" plot/common.gp plot/scaling.gp
# data: time_s,nodes_up,running,queued,arrivals_per_s, one row per sample time, as kvsim
# plot writes it from DIR/<policy>/timeseries.csv (nodes_up summed over pools; running
# and queued over nodes) and requests.csv (arrivals since the sample before).
if (!exists("name")) name = ""
set title sprintf("nodes serving and load over time%s", name eq "" ? "" : " (".name.")")
set xlabel "simulated time (s)"
set ylabel "nodes serving"
set y2label "requests per second / requests"
set ytics nomirror
set y2tics
set autoscale xfix
set yrange [0:*]
set y2range [0:*]
stats data using (column("nodes_up")) nooutput
if (STATS_max <= 16) set ytics 1
set yrange [0:STATS_max + 1]
set key outside right top
plot data using (column("time_s")):(column("nodes_up")) with steps lw 3 lc rgb "#1f4e9c" title "nodes serving", \
     data using (column("time_s")):(column("arrivals_per_s")) axes x1y2 with lines lw 1.2 lc rgb "#e08a1e" title "arrivals / s", \
     data using (column("time_s")):(column("running")) axes x1y2 with lines lw 1.2 lc rgb "#2a9d5c" title "running", \
     data using (column("time_s")):(column("queued")) axes x1y2 with lines lw 1.2 dt 2 lc rgb "#c0392b" title "queued"
