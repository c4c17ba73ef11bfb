#!/bin/sh
# layout.sh: the structure rules of the source tree (README, "Layout"), checked.
# - no circle in the module graph of includes and calls (below);
# - no source file outside tests/ and experiments/tools/ over 1,000 lines;
# - main() lives in cli/main.c, at most 300 lines, and nowhere in the library;
# - README.md at most 450 lines, BENCHMARKS.md at most 250;
# - no source folder (of the list below) holds over 25 .c files;
# - cli/ includes at most 4 distinct headers from outside cli/, results/,
#   workloads/ and experiments/ (the library's interface is sim/sim.h);
# - no library function over 150 lines (the library: every folder below but
#   experiments/tools/; cli/main.c's main() is the one exception);
# - struct sim (sim/sim_int.h) has at most 50 members;
# - base/ includes nothing from the other folders.
# Prints one line per broken rule and "layout: N passed, N failed".
cd "$(dirname "$0")/.." || exit 2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "layout: $*"; fail=$((fail + 1)); }

folders="cli base model config sim experiments policies workloads results"
src=$(find $folders -name '*.[ch]' 2>/dev/null | sort)

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

# 5. no folder over 25 .c files (its own, not its subfolders')
crowded=0
for d in $folders experiments/tools; do
	n=$(find "$d" -maxdepth 1 -name '*.c' | wc -l)
	if [ "$n" -gt 25 ]; then bad "$d/: $n .c files (at most 25)"; crowded=1; fi
done
[ $crowded = 0 ] && ok

# 6. cli/ sees the library through few headers: at most 4 distinct ones
# from outside cli/, results/, workloads/ and experiments/
outside=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
	$(echo "$src" | grep '^cli/') | grep '/' |
	grep -v -e '^cli/' -e '^results/' -e '^workloads/' -e '^experiments/' | sort -u)
n=$(echo "$outside" | grep -c .)
if [ "$n" -gt 4 ]; then bad "cli/ includes $n headers from other floors (at most 4):" $outside; else ok; fi

# 7. no library function over 150 lines: from its signature's first line (an
# identifier at column 0 with a parenthesis) to its closing brace at column 0
long=$(awk '
	FNR == 1 { sig = 0; start = 0 }
	/^[A-Za-z_]/ && /\(/ && !/;[[:space:]]*$/ && !/^(typedef|enum|union)/ &&
	    match($0, /[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(/) {
		sig = FNR; name = substr($0, RSTART, RLENGTH); sub(/[[:space:]]*\($/, "", name)
	}
	/^\{/ && sig { start = sig; fn = name }
	/^\}/ && start {
		n = FNR - start + 1
		if (n > 150 && !(FILENAME == "cli/main.c" && fn == "main"))
			printf "%s:%d: %s(): %d lines (at most 150)\n", FILENAME, start, fn, n
		start = sig = 0
	}' $(echo "$src" | grep '\.c$' | grep -v '^experiments/tools/'))
if [ -n "$long" ]; then bad "$long"; else ok; fi

# 8. struct sim at most 50 members: declarations at its top level (a nested
# struct or union is one), a declaration of several names counting each
members=$(awk '
	/^struct sim \{/ { in_s = 1; depth = 1; next }
	in_s {
		line = $0
		if (cmt) { if (!sub(/.*\*\//, "", line)) next; cmt = 0 }
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
		if (sub(/\/\*.*/, "", line)) cmt = 1
		sub(/\/\/.*/, "", line)
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (c == "{") depth++
			else if (c == "}") { if (--depth == 0) { print n + 0; exit } }
			else if (c == "(" || c == "[") par++
			else if (c == ")" || c == "]") par--
			else if ((c == ";" || (c == "," && par == 0)) && depth == 1) n++
		}
	}' sim/sim_int.h)
if [ -z "$members" ]; then
	bad "sim/sim_int.h: no struct sim found"
elif [ "$members" -gt 50 ]; then
	bad "sim/sim_int.h: struct sim has $members members (at most 50)"
else
	ok
fi

# 9. base/ is the ground floor: it includes nothing from the other folders
up=$(for f in $(echo "$src" | grep '^base/'); do
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\/[^"]*\)".*/\1/p' "$f" |
		grep -v '^base/' | sed "s|^|$f: |"
done)
if [ -n "$up" ]; then bad "base/ includes from other folders:" $up; else ok; fi

echo "layout: $pass passed, $fail failed"
[ $fail = 0 ]
