#!/bin/sh
# regress.sh: re-runs every scenario in workloads/scenarios/ under the
# every policy and diffs the result against results/baselines/ with zero
# tolerance (simulated figures are deterministic). Exit 1 on any regression.
# Usage: sh tests/regress.sh [--rebaseline]   (KVSIM=build/kvsim by default)
KVSIM=${KVSIM:-build/kvsim}
POLICIES=${POLICIES:-all}
OUT=${OUT:-out/regress}
mode=${1:-check}
status=0
checked=0
for f in workloads/scenarios/*.json; do
	name=$(basename "$f" .json)
	if ! "$KVSIM" compare "$f" --policies "$POLICIES" --out "$OUT/$name" --quiet --no-perf; then
		echo "regress: $name: the run failed"
		status=2
		continue
	fi
	if [ "$mode" = "--rebaseline" ]; then
		mkdir -p results/baselines
		cp "$OUT/$name/comparison.json" "results/baselines/$name.json"
		echo "regress: $name: baseline rewritten"
		continue
	fi
	base="results/baselines/$name.json"
	if [ ! -f "$base" ]; then
		echo "regress: $name: no baseline $base ('make rebaseline' writes it)"
		status=1
		continue
	fi
	"$KVSIM" diff "$base" "$OUT/$name/comparison.json" --tolerance 0 >"$OUT/$name/diff.txt"
	rc=$?
	checked=$((checked + 1))
	if [ $rc -eq 0 ]; then
		echo "regress: $name: $(tail -n 1 "$OUT/$name/diff.txt")"
	else
		echo "regress: $name: REGRESSION"
		cat "$OUT/$name/diff.txt"
		[ $status -eq 0 ] && status=1
		[ $rc -eq 2 ] && status=2
	fi
done
[ "$mode" = "--rebaseline" ] || echo "regress: $checked scenarios checked, exit $status"
exit $status
