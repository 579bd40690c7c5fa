# Draws the two pictures of a load/compare run. load/compare calls:
#
#   gnuplot -e 'dir="load/results/TS"; term="pngcairo"; flood_servers="tarry nginx node";
#               timeout_s=3; which="open_connections"' load/plot.gp
#
# which: "open_connections", "throughput" or "all" (default).
#
# Inputs, all in dir:
#   flood_<server>.csv   idle_flood --csv output: t_ms,open_connections every 10 ms, t from the
#                        first connect of the flood
#   throughput.dat       whitespace table: header "scenario <server>...", one row per scenario,
#                        req/s medians, "?" where a server has no result
# Outputs, in dir: open_connections.png, throughput.png.
#
# Re-run by hand on an old results directory with the same command.

if (!exists("dir")) dir = "."
if (!exists("term")) term = "pngcairo"
if (!exists("flood_servers")) flood_servers = "tarry nginx node"
if (!exists("timeout_s")) timeout_s = 3
if (!exists("title_note")) title_note = ""
if (!exists("which")) which = "all"

if (term eq "pngcairo") {
    set terminal pngcairo size 1200,700 noenhanced font "sans,11"
} else {
    set terminal png size 1200,700
}

# Colours per server, the same in both pictures.
color(name) = name eq "tarry" ? "#1f77b4" : \
              name eq "nginx" ? "#2ca02c" : \
              name eq "node" ? "#d62728" : \
              name eq "tarry-no-timeouts" ? "#7fb8e0" : "#555555"

# ---------------------------------------------------------------------------------------------
# 1. Open connections during the idle flood

if (which eq "all" || which eq "open_connections") {
set output dir."/open_connections.png"
set datafile separator ","
set title "Idle flood: open connections over time (keep-alive timeout ".sprintf("%g", timeout_s)." s)".title_note
set xlabel "seconds since the first connect of the flood"
set ylabel "open connections"
set grid
set key top right box opaque
set yrange [0:*]
set xrange [0:*]
set offsets 0, 0, graph 0.06, 0
set format y "%.0f"
# Nothing may close before timeout_s after its own request; the first connection's deadline:
set arrow 1 from timeout_s, graph 0 to timeout_s, graph 1 nohead dashtype 2 linecolor rgb "#888888"
set label 1 sprintf("first connection's deadline: %g s ", timeout_s) at timeout_s, graph 0.5 right textcolor rgb "#666666"
plot for [i=1:words(flood_servers)] dir."/flood_".word(flood_servers, i).".csv" \
     every ::1 using ($1/1000.0):2 with lines linewidth 2 \
     linecolor rgb color(word(flood_servers, i)) title word(flood_servers, i)
unset arrow 1
unset label 1
unset output
}

# ---------------------------------------------------------------------------------------------
# 2. Throughput: one panel per scenario, one bar per server, each panel with its own scale (a
#    pipelined figure would flatten the others on a shared axis); the value is printed on each bar.

if (which eq "all" || which eq "throughput") {
set output dir."/throughput.png"
reset
if (term eq "pngcairo") {
    set terminal pngcairo size 1200,600 noenhanced font "sans,11"
} else {
    set terminal png size 1200,600
}
set output dir."/throughput.png"
set datafile separator whitespace
set datafile missing "?"
set datafile columnheaders
# The header row names the columns: "scenario tarry nginx ...".
header = system("head -n1 '".dir."/throughput.dat'")
ncols = words(header) - 1
nrows = int(system("tail -n +2 '".dir."/throughput.dat' | grep -c ."))
scenario(r) = system(sprintf("awk 'NR == %d { print $1 }' '%s/throughput.dat'", r + 2, dir))
label_v(v) = v >= 1e6 ? sprintf("%.2fM", v / 1e6) : v >= 1e5 ? sprintf("%.0fk", v / 1e3) : sprintf("%.1fk", v / 1e3)
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.7
set grid ytics
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.1, 0
set xrange [*:*]
unset key
tic_name(name) = name eq "tarry-no-timeouts" ? "tarry\n--no-timeouts" : name
set xtics () nomirror font ",10"
do for [i=2:ncols+1] { set xtics add (tic_name(word(header, i)) i - 2) }
set format y "%.0f"
set ytics nomirror
set bmargin 4
set multiplot layout 1, nrows title "Throughput, median req/s (server on one core, wrk on the other, loopback)"
do for [r=0:nrows-1] {
    set title scenario(r)
    set ylabel (r == 0 ? "thousand requests per second" : "")
    plot for [i=2:ncols+1] dir."/throughput.dat" every ::r::r using (i - 2):(column(i) / 1000.0) \
             with boxes linecolor rgb color(word(header, i)), \
         for [i=2:ncols+1] dir."/throughput.dat" every ::r::r \
             using (i - 2):(valid(i) ? column(i) / 1000.0 : 0):(valid(i) ? label_v(column(i)) : "no result") \
             with labels offset 0, 0.8 font ",10"
}
unset multiplot
unset output
}
