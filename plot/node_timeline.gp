# node_timeline.gp: a per-node figure over time from timeseries.csv.
# usage: gnuplot -e "ts='out/run/session_affinity/timeseries.csv'; what='kv_util';
#        name='session_affinity'; fmt='png'; out='kv_util.png'" plot/common.gp plot/node_timeline.gp
# what: kv_util (referenced KV blocks / all) or queued (requests waiting) or running.
if (!exists("what")) what = "kv_util"
if (!exists("name")) name = ""
label = what eq "kv_util" ? "KV cache utilisation" : what eq "queued" ? "queued requests" : "running requests"
# Rows come in blocks of one row per node (time, then node), so node k is
# every nodes-th row from row k: lines stay unbroken. stats goes before the
# ranges, which it obeys.
if (nodata ne "") {
    set title sprintf("%s per node over time%s", label, name eq "" ? "" : " (".name.")")
    eval no_data_figure
} else {
    stats ts using (column("node")) nooutput
    nodes = int(STATS_max) + 1
    # At most about 600 samples per node are drawn (every step-th one): more
    # do not show at 960 px wide and only weigh on the PNG and the SVG
    # (chosen for that width; the CSV keeps every sample).
    samples = int(ceil(STATS_records / nodes))
    step = samples > 600 ? int(ceil(samples / 600.0)) : 1
    stats ts using (column(what)) nooutput
    top = STATS_max
    set title sprintf("%s per node over time%s", label, name eq "" ? "" : " (".name.")")
    set xlabel "simulated time (s)"
    set ylabel what eq "kv_util" ? "referenced KV blocks / all blocks" : "requests"
    set yrange [0:*]
    if (what ne "kv_util" && top <= 10) { set ytics 1; set yrange [0:top < 1 ? 1 : top + 1] }
    if (nodes > 12) { unset key; set title sprintf("%s per node over time%s, %d nodes", label, name eq "" ? "" : " (".name.")", nodes) }
    plot for [k=0:nodes-1] ts every nodes*step::k using (column("time_s")):(column(what)) \
         with lines lt k + 1 lw 1.5 title sprintf("node %d", k)
}
