#!/bin/sh
# The documents' example outputs against what kvsim prints: checks them (exit 1 with
# a diff when they drift), or with --write rewrites them (make docs).
#
# An example is a fenced block whose line before is
#   <!-- example: ARGS -->
# where ARGS are kvsim's arguments, run from the repository root (run, compare and
# sweep get --out in a scratch folder unless ARGS name one). What varies between
# builds and runs is normalised: the version's +gCOMMIT suffix is dropped, the
# "wall s" row and the "wrote ..." lines are left out, and trailing blank lines.
set -eu
KVSIM=${KVSIM:-build/kvsim}
mode="check"
case "${1:-}" in
--write) mode="write"; shift ;;
--check) shift ;;
-*) echo "usage: tests/docs.sh [--check|--write] [FILE.md...]" >&2; exit 2 ;;
esac
[ $# -gt 0 ] || set -- README.md docs/*.md
case "$KVSIM" in /*) ;; *) KVSIM=$PWD/$KVSIM ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

for f in "$@"; do
	[ -f "$f" ] || continue
	sed -n 's/^<!-- example: \(.*\) -->$/\1/p' "$f" >"$tmp/cmds"
	[ -s "$tmp/cmds" ] || continue
	n=0
	while IFS= read -r args; do
		n=$((n + 1))
		extra=
		case "$args" in
		run* | compare* | sweep*)
			case " $args " in *" --out "* | *" --out="*) ;; *) extra="--out $tmp/out.$n" ;; esac ;;
		esac
		set -f
		# shellcheck disable=SC2086
		if ! "$KVSIM" $args $extra >"$tmp/raw.$n" 2>"$tmp/err.$n" </dev/null; then
			set +f
			echo "docs: $f: 'kvsim $args' failed:" >&2
			cat "$tmp/err.$n" >&2
			exit 1
		fi
		set +f
		sed -e 's/\(kvsim [0-9][0-9.]*\)+g[0-9a-f]*/\1/' \
		    -e '/^wall s /d' -e '/^wrote /d' "$tmp/raw.$n" |
			awk '{ l[NR] = $0 } END { n = NR; while (n > 0 && l[n] == "") n--; for (i = 1; i <= n; i++) print l[i] }' \
			>"$tmp/ex.$n"
	done <"$tmp/cmds"

	# Splice each output between its block's fences.
	if ! awk -v dir="$tmp" -v file="$f" '
		skip { if ($0 ~ /^```/) { print; skip = 0 } ; next }
		want {
			if ($0 !~ /^```/) { printf "%s:%d: an example marker must be followed by a fence\n", file, NR > "/dev/stderr"; bad = 1; exit 1 }
			print; want = 0; skip = 1
			ex = dir "/ex." n
			while ((getline line < ex) > 0) print line
			close(ex)
			next
		}
		/^<!-- example: .* -->$/ { n++; want = 1 }
		{ print }
		END { if (bad) exit 1; if (skip || want) { printf "%s: an example block is not closed\n", file > "/dev/stderr"; exit 1 } }
	' "$f" >"$tmp/new"; then
		exit 1
	fi

	if ! cmp -s "$f" "$tmp/new"; then
		if [ "$mode" = write ]; then
			cp "$tmp/new" "$f"
			echo "docs: $f: examples rewritten"
		else
			echo "docs: $f: examples differ from what $KVSIM prints (make docs rewrites them):" >&2
			diff -u "$f" "$tmp/new" | sed 's/^/  /' >&2 || true
			status=1
		fi
	else
		echo "docs: $f: $n example(s) up to date"
	fi
done

# The routing rules' table (docs/policies.md, "The order of the rules") names
# sim/rules.c's rules_list, in its order.
code=$(sed -n '/^const struct route_rule rules_list\[\] = {/,/^};/s/^[[:space:]]*{"\([a-z_]*\)".*/\1/p' sim/rules.c | tr '\n' ' ')
doc=$(sed -n '/^### The order of the rules/,/^## /s/^| `\([a-z_]*\)` |.*/\1/p' docs/policies.md | tr '\n' ' ')
if [ -z "$code" ] || [ "$code" != "$doc" ]; then
	echo "docs: docs/policies.md: the rules' table ($doc) is not sim/rules.c's rules_list ($code)" >&2
	status=1
else
	echo "docs: docs/policies.md: the routing rules' order matches sim/rules.c"
fi
exit $status
