# common.gp: terminal and style shared by every kvsim figure. Expects `fmt`
# ("png" or "svg") and `out` (the output file), set with gnuplot -e.
if (!exists("fmt")) fmt = "png"
if (fmt eq "svg") {
    set terminal svg size 960,600 dynamic noenhanced font "sans,12" background rgb "white"
} else {
    set terminal pngcairo size 960,600 noenhanced font "sans,11" background rgb "white"
}
set output out
set datafile separator comma
set datafile columnheaders
set grid lc rgb "#dddddd"
set key outside right top box opaque
set border lc rgb "#444444"
