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
# The series palette, one linetype per series (lt k, or lc k): 8 colours of
# the Okabe-Ito colour-blind-safe set (Okabe and Ito, "Color Universal
# Design", 2008), its yellow swapped for Tol's olive (yellow does not show on
# white), times 3 dash types: series 1-8 solid, 9-16 dashed, 17-24
# dash-dotted, 24 distinct series; the 25th comes back to the first. Every
# figure with a line per policy draws series k with lt k.
array palette[8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999933"]
do for [k=1:24] {
    c = palette[(k - 1) % 8 + 1]
    if (k <= 8) { set linetype k lc rgb c lw 2 dt 1 pt 7 }
    if (k > 8 && k <= 16) { set linetype k lc rgb c lw 2 dt (9, 5) pt 5 }
    if (k > 16) { set linetype k lc rgb c lw 2 dt (9, 4, 2, 4) pt 9 }
}
set linetype cycle 24
# a key sample long enough to show the dashes
set key samplen 4
# A bar figure's category labels (xtic(1)) turn 35 degrees when there are
# more than 4 categories, so that long policy names never overlap (at 960 px
# and 11 px type, five 15-character names side by side already touch).
# Usage: `ncat = <categories>; eval bar_labels`.
bar_labels = "if (ncat > 4) { set xtics rotate by 35 right } else { set xtics norotate }"
# Log-axis ticks for a duration axis in seconds, each labelled with its unit
# ("20 ms" under a second, "2 s" from one on): per decade 1-2-3-5-7, 1-2-5,
# 1-3 or 1, the densest whose closest labels stay apart, given the axis's
# length in pixels (tpx) and a label's size along it (tsize: about 45 px
# wide, 16 px high at 11 px type). Their closest ticks are log10(7/5) =
# 0.15, log10(2) = 0.3, log10(3) = 0.48 or 1 decade apart, which must leave
# 1.3 labels' room. Usage: `tlo = <low>; thi = <high>; tpx = ...;
# tsize = ...; eval duration_xtics` (or duration_ytics).
dur_label(v) = v < 0.9995 ? sprintf("%g ms", v * 1000) : sprintf("%g s", v)
# three significant digits, for keys
dur_short(v) = v < 0.9995 ? sprintf("%.3g ms", v * 1000) : sprintf("%.3g s", v)
dur_room(lo, hi) = tpx / log10(hi / lo) / tsize
dur_mants(lo, hi) = dur_room(lo, hi) * 0.146 >= 1.3 ? "1 2 3 5 7" : dur_room(lo, hi) * 0.301 >= 1.3 ? "1 2 5" : dur_room(lo, hi) * 0.477 >= 1.3 ? "1 3" : "1"
tpx = 800
tsize = 45
duration_tics_body = "do for [e = floor(log10(tlo)) : ceil(log10(thi))] { do for [m in dur_mants(tlo, thi)] { v = (m + 0) * 10.0 ** e; if (v >= tlo * 0.999 && v <= thi * 1.001) { TICS_CMD } } }"
duration_xtics = "set xtics (); set mxtics 10; " . duration_tics_body
duration_xtics = duration_xtics[1:strstrt(duration_xtics, "TICS_CMD") - 1] . "set xtics add (dur_label(v) v)" . duration_xtics[strstrt(duration_xtics, "TICS_CMD") + 8:]
duration_ytics = "set ytics (); set mytics 10; " . duration_tics_body
duration_ytics = duration_ytics[1:strstrt(duration_ytics, "TICS_CMD") - 1] . "set ytics add (dur_label(v) v)" . duration_ytics[strstrt(duration_ytics, "TICS_CMD") + 8:]
