#!/bin/sh
# layout.sh: the structure rules of the source tree (README, "Layout"), checked.
# - no circle in the module graph of includes and calls (below);
# - no source file outside tests/ and experiments/tools/ over 1,000 lines;
# - main() lives in cli/main.c, at most 300 lines, and nowhere in the library;
# - README.md at most 450 lines, BENCHMARKS.md at most 250.
# Prints one line per broken rule and "layout: N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "layout: $*"; fail=$((fail + 1)); }

src=$(find cli base model config sim experiments policies workloads results -name '*.[ch]' 2>/dev/null | sort)

# 1. the module graph has no circle. A module is a .c/.h pair (a header
# without a .c is a module of its own); a -> b when a includes b's header or
# names a function that b defines (non-static in b.c, static inline in b.h).
# Comments (the preprocessor strips them) and string literals do not count.
facts() {
	for f in $src; do
		case $f in experiments/tools/*) continue ;; esac
		kind=c
		case $f in *.h) kind=h ;; esac
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" |
			sed "s|^|${f%.*} I |"
		${CC:-cc} -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
			sed -e 's/"\([^"\\]\|\\.\)*"/""/g' |
			awk -v m="${f%.*}" -v kind=$kind '
			/^[A-Za-z_]/ && !/;[[:space:]]*$/ && !/^#/ &&
			    ((kind == "c" && !/^static/) || (kind == "h" && /^static inline/)) &&
			    match($0, /[A-Za-z_][A-Za-z0-9_]*\(/) {
				print m, "D", substr($0, RSTART, RLENGTH - 1)
			}
			# a header names what its inline bodies use, not what it declares
			!/^#/ && (kind == "c" || depth > 0) {
				n = split($0, w, /[^A-Za-z0-9_]+/)
				for (i = 1; i <= n; i++) if (w[i] ~ /^[a-z_][a-z0-9_]*$/) print m, "W", w[i]
			}
			!/^#/ { depth += gsub(/{/, "{") - gsub(/}/, "}") }'
	done | sort -u
}
cycles=$(facts | awk '
	$2 == "I" { inc[$1, $3] = 1; mods[$1]; next }
	$2 == "D" { if (!($3 in def)) def[$3] = $1; mods[$1]; next }
	$2 == "W" { nw++; wm[nw] = $1; ww[nw] = $3; mods[$1] }
	END {
		for (k in inc) { split(k, p, SUBSEP); if (p[1] != p[2] && (p[2] in mods)) edge[p[1], p[2]] = 1 }
		for (i = 1; i <= nw; i++) { d = def[ww[i]]; if (d != "" && d != wm[i]) edge[wm[i], d] = 1 }
		for (k in edge) { split(k, p, SUBSEP); adj[p[1], ++deg[p[1]]] = p[2] }
		for (v in mods) if (!(v in idx)) visit(v)
	}
	function visit(v,   i, w, comp, k) {
		idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
		for (i = 1; i <= deg[v]; i++) {
			w = adj[v, i]
			if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
			else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
		}
		if (low[v] == idx[v]) {
			comp = ""; k = 0
			do { w = stack[sp--]; on[w] = 0; comp = comp " " w; k++ } while (w != v)
			if (k > 1) print "circle of includes and calls:" comp
		}
	}')
if [ -n "$cycles" ]; then bad "$cycles"; else ok; fi

# 2. file sizes
big=0
for f in $src; do
	n=$(wc -l <"$f")
	case $f in experiments/tools/*) continue ;; esac
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
others=$(grep -l '^int main(' $(echo "$src" | grep -v '^cli/main.c$' | grep -v '^experiments/tools/') 2>/dev/null)
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
