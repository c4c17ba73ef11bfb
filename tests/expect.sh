# expect.sh: the command-line test harness that cli.sh and bench_cli.sh
# source. Set PROG (the binary) and PROG_NAME (its name in messages) first.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE 'FRAGMENT' ARGS...: runs PROG, checks its exit code and that its
# stderr or stdout holds the fragment (none to check when empty).
expect() {
	code=$1
	frag=$2
	shift 2
	"$PROG" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -ne "$code" ]; then
		bad "$PROG_NAME $*: exit $rc, expected $code; stderr: $(head -c 300 "$T/err")"
		return
	fi
	if [ -n "$frag" ] && ! grep -qF -- "$frag" "$T/err" "$T/out"; then
		bad "$PROG_NAME $*: output lacks '$frag'; got: $(head -c 300 "$T/err")"
		return
	fi
	ok
}
