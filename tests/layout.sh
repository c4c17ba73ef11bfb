#!/bin/sh
# layout.sh: the structure rules of the source tree (docs/layout.md), checked.
# - no circle in the module include graph (a module is a .c/.h pair: a.c or
#   a.h including b.h is an arrow a -> b);
# - no source file outside tests/ and sim/tools/ over 1,000 lines;
# - main() lives in cli/main.c, at most 300 lines, and nowhere in the library;
# - README.md at most 450 lines, BENCHMARKS.md at most 250.
# Prints one line per broken rule and "layout: N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "layout: $*"; fail=$((fail + 1)); }

src=$(find cli sim policies workloads results -name '*.[ch]' 2>/dev/null | sort)

# 1. module include graph: print every circle (Tarjan's SCCs of size > 1).
cycles=$(for f in $src; do
	m=${f%.*}
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" |
		while read -r inc; do [ "$inc" != "$m" ] && echo "$m $inc"; done
done | sort -u | awk '
	{ n = ++deg[$1]; adj[$1, n] = $2; nodes[$1]; nodes[$2] }
	function visit(v,   i, w) {
		idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
		for (i = 1; i <= deg[v]; i++) {
			w = adj[v, i]
			if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
			else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
		}
		if (low[v] == idx[v]) {
			comp = ""; k = 0
			do { w = stack[sp--]; on[w] = 0; comp = comp " " w; k++ } while (w != v)
			if (k > 1) print "include circle:" comp
		}
	}
	END { for (v in nodes) if (!(v in idx)) visit(v) }')
if [ -n "$cycles" ]; then bad "$cycles"; else ok; fi

# 2. file sizes
big=0
for f in $src; do
	n=$(wc -l <"$f")
	case $f in sim/tools/*) continue ;; esac
	if [ "$n" -gt 1000 ]; then bad "$f: $n lines (at most 1,000)"; big=1; fi
done
[ $big = 0 ] && ok

# 3. main() in cli/main.c only, at most 300 lines
if [ ! -f cli/main.c ]; then
	bad "cli/main.c: missing"
else
	n=$(wc -l <cli/main.c)
	if [ "$n" -gt 300 ]; then bad "cli/main.c: $n lines (at most 300)"; else ok; fi
fi
others=$(grep -l '^int main(' $(echo "$src" | grep -v '^cli/main.c$' | grep -v '^sim/tools/') 2>/dev/null)
if [ -n "$others" ]; then bad "main() outside cli/main.c: $others"; else ok; fi

# 4. documents
for d in README.md:450 BENCHMARKS.md:250; do
	f=${d%:*}
	max=${d#*:}
	n=$(wc -l <"$f")
	if [ "$n" -gt "$max" ]; then bad "$f: $n lines (at most $max)"; else ok; fi
done

echo "layout: $pass passed, $fail failed"
[ $fail = 0 ]
