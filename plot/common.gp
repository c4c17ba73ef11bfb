# common.gp: terminal and style shared by every kvsim figure. Expects `fmt`
# ("png" or "svg") and `out` (the output file), set with gnuplot -e.
if (!exists("fmt")) fmt = "png"
# SVG with gnuplot's own mouse script embedded (`mouse standalone`): hover
# shows coordinates, a click on a key entry hides or shows that series; no
# file outside the SVG is loaded. `figname` prefixes the element ids.
if (!exists("figname")) figname = "fig"
if (fmt eq "svg") {
    set terminal svg size 960,600 dynamic noenhanced font "sans,12" background rgb "white" mouse standalone name figname
} else {
    set terminal pngcairo size 960,600 noenhanced font "sans,11" background rgb "white"
}
set output out
set datafile separator comma
set datafile columnheaders
set grid lc rgb "#dddddd"
set key outside right top box opaque
set border lc rgb "#444444"
# A figure with nothing to draw (every request shed, no second token, no
# samples) says so rather than failing: kvsim sets `nodata` to the reason
# and the script runs `eval no_data_figure` in place of its plot.
if (!exists("nodata")) nodata = ""
no_data_figure = "unset logscale; unset y2tics; unset y2label; set xrange [0:1]; set yrange [0:1]; unset xtics; unset ytics; unset key; set label 99 nodata at graph 0.5, 0.5 center; plot NaN notitle"
