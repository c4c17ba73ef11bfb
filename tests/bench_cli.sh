#!/bin/sh
# bench_cli.sh: the benchmark program's command line (options, errors, the
# --repeat summary), on one-second runs. Usage: BENCH=build/bench sh tests/bench_cli.sh
BENCH=${BENCH:-build/bench}
PROG=$BENCH
PROG_NAME=bench
. "$(dirname "$0")/expect.sh"

expect 0 "usage: bench" --help
expect 0 "KVSIM_HUGEPAGES=0" --help
expect 0 "--repeat N" --help
expect 2 'unknown case "x"' --case x
expect 2 'unknown case "zz"' --case a,zz
expect 2 'unknown case ""' --case a,
expect 2 'expected an integer 1-100' --repeat 0
expect 2 'expected an integer 1-100' --repeat 101
expect 2 'expected an integer 1-100' --repeat 2x
expect 2 'expected seconds > 0' --wall-limit 0
expect 2 'expected seconds > 0' --wall-limit abc
expect 2 'expected MiB 0-65536' --prefault -1
expect 2 'expected MiB 0-65536' --prefault 65537
expect 2 'expected MiB 0-65536' --prefault 1g
expect 0 "--prefault MIB" --help
expect 0 "d2 ds64 d3 e pd as m" --help

# The pooled case: its header names the pools, and it alone prints the
# SLO attainment, the TTFT's parts and the KV hand-overs (some made, each
# a positive time on the link, even in a 0.3 s run).
expect 0 "(pd) chat 1M, 16 prefill + 48 decode nodes, kv_cost: 16 x H100-SXM prefill + 48 x H100-SXM decode, Llama-3-8B" \
	--case pd --wall-limit 0.3 --prefault 0
grep -q "^  SLO attainment  *[01]\.[0-9][0-9][0-9] (TTFT p99 2 s, TPOT p99 0.1 s)$" "$T/out" && ok ||
	bad "(pd) does not print its SLO attainment"
grep -q "^  TTFT split (ms)  *[0-9.]* / [0-9.]* / [0-9.]* / [0-9.]* (queue, prefill, KV transfer, decode side)$" \
	"$T/out" && ok || bad "(pd) does not print its TTFT split"
grep -q "^  KV hand-overs  *[1-9][0-9]* ([0-9.]* GB, [0-9.]*[1-9][0-9.]* ms each on the link)$" "$T/out" && ok ||
	bad "(pd) does not print its KV hand-overs"
"$BENCH" --case a --wall-limit 0.2 --prefault 0 >"$T/out" 2>&1
grep -q "^(a) chat 1M, 64 nodes, session_affinity: 64 x H100-SXM, Llama-3-8B$" "$T/out" && ok ||
	bad "(a)'s header does not name its one cluster"
grep -q "KV hand-overs\|TTFT split" "$T/out" && bad "(a), without pools, prints hand-over figures" || ok
expect 2 'unknown option or missing value "--case"' --case
expect 2 'unknown option or missing value "--fast"' --fast

# Two short runs of (a): each prints its block, then the summary, whose
# median lies between its min and max, and the runs' own figures are those
# the summary spans.
expect 0 "(a) over 2 runs:" --case a --repeat 2 --wall-limit 0.5
[ "$(grep -c "STOPPED after the 0.5 s wall-clock limit" "$T/out")" -eq 2 ] && ok ||
	bad "two runs of (a) were not both reported"
runs=$(sed -n 's/^  requests\/wall-s *\([0-9][0-9]*\)$/\1/p' "$T/out" | sort -n | tr '\n' ' ')
sum=$(sed -n 's/^  requests\/wall-s *median \([0-9]*\) (min \([0-9]*\), max \([0-9]*\))$/\1 \2 \3/p' "$T/out")
echo "$runs|$sum" | awk -F'|' '{
	split($1, r, " "); split($2, s, " ");
	med = (r[1] + r[2]) / 2;
	exit !(s[2] == r[1] && s[3] == r[2] && s[1] >= med - 0.5 && s[1] <= med + 0.5 && r[1] > 0) }' &&
	ok || bad "summary '$sum' does not span the runs '$runs'"
grep -q "^  of which node sync median 0 (min 0, max 0)$" "$T/out" && ok ||
	bad "session_affinity's node sync is not 0 in the summary"
# the summary's RSS spans the runs' peak RSS (rounded to whole MiB)
rss=$(sed -n 's/^  peak RSS *\([0-9.]*\) MiB$/\1/p' "$T/out" | sort -n | tr '\n' ' ')
rsum=$(sed -n 's/^  peak RSS MiB *median \([0-9]*\) (min \([0-9]*\), max \([0-9]*\))$/\1 \2 \3/p' "$T/out")
echo "$rss|$rsum" | awk -F'|' '{
	split($1, r, " "); split($2, s, " ");
	exit !(r[1] > 0 && s[2] >= r[1] - 0.5 && s[2] <= r[1] + 0.5 && s[3] >= r[2] - 0.5 &&
	       s[3] <= r[2] + 0.5 && s[1] >= s[2] && s[1] <= s[3]) }' &&
	ok || bad "summary RSS '$rsum' does not span the runs' '$rss'"
grep -q "^  ns/event  *median [0-9][0-9]* (min [0-9][0-9]*, max [0-9][0-9]*)$" "$T/out" && ok ||
	bad "no ns/event in the summary"
# each run's kernel time, and the summary's with two decimals
[ "$(grep -c "^  kernel time  *[0-9]*\.[0-9][0-9][0-9] s$" "$T/out")" -eq 2 ] && ok ||
	bad "the runs do not both report their kernel time"
d2='[0-9]*\.[0-9][0-9]'
grep -q "^  kernel time s  *median $d2 (min $d2, max $d2)\$" "$T/out" && ok ||
	bad "no kernel time in the summary"
# each run's memory latency probe, over 16 MiB and the 1024 touched, and
# the summary's (positive whole ns)
[ "$(grep -c "^  memory latency  *[1-9][0-9]* / [1-9][0-9]* ns (a random load, over 16 / 1024 MiB)$" \
	"$T/out")" -eq 2 ] && ok || bad "the runs do not both report their memory latency"
grep -q "^  latency ns 16 MiB  *median [1-9][0-9]* (min [1-9][0-9]*, max [1-9][0-9]*)$" "$T/out" &&
	grep -q "^  latency ns 1024 MiB median [1-9][0-9]* (min [1-9][0-9]*, max [1-9][0-9]*)$" "$T/out" &&
	ok || bad "no memory latency in the summary"
# the header says how much memory was touched before each run
grep -q "^memory: 1024 MiB touched and released before each run (--prefault 0: not)$" "$T/out" &&
	ok || bad "the header does not say what --prefault touched"
"$BENCH" --case a --wall-limit 0.2 --prefault 0 >"$T/out" 2>&1
grep -q "^memory: not touched before the runs (--prefault 0)$" "$T/out" && ok ||
	bad "--prefault 0 is not said in the header"
grep -q "^  memory latency    not measured (--prefault 0)$" "$T/out" && ok ||
	bad "--prefault 0 still reports a memory latency"
# a region smaller than the probe's near one: both over it
"$BENCH" --case a --wall-limit 0.2 --prefault 4 >"$T/out" 2>&1
grep -q "^  memory latency  *[1-9][0-9]* / [1-9][0-9]* ns (a random load, over 4 / 4 MiB)$" \
	"$T/out" && ok || bad "--prefault 4 does not probe over 4 MiB"
# the header says what the heap got: huge pages unless turned off
grep -q "^kvsim .* benchmark (one core per case; huge pages: glibc.malloc.hugetlb=1, THP " "$T/out" &&
	ok || bad "the header does not say the heap is in huge pages"
KVSIM_HUGEPAGES=0 "$BENCH" --case a --wall-limit 0.2 >"$T/out" 2>&1
grep -q "huge pages: off (KVSIM_HUGEPAGES=0)" "$T/out" && ok ||
	bad "KVSIM_HUGEPAGES=0 did not turn huge pages off"

echo "bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
