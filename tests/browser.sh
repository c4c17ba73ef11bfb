#!/bin/sh
# report.html in a real browser: a small `kvsim compare --report` (2 nodes, 20 s, every
# policy) rendered by headless Chromium to a screenshot and to a DOM dump. Checks that
# the page renders and is not blank, that the verdict and the comparison table come before
# the scenario, that every image and SVG has a size, and that the console shows nothing.
# A copy of the page with a probe script says how the browser laid it out: at 1280 px the
# page is no wider than the window, the comparison table (wider, with 11 columns) scrolls
# in its own box with its first column held in view, and the per-node figures are folded
# in one closed <details> after the cluster's timeline.
#
# Without chromium the test fails (CI installs it: make deps), unless KVSIM_SKIP_BROWSER=1.
# KEEP=DIR keeps the screenshot and the DOM in DIR to look at.
set -eu
KVSIM=${KVSIM:-build/kvsim}
CHROMIUM=${CHROMIUM:-chromium}
case "$KVSIM" in /*) ;; *) KVSIM=$PWD/$KVSIM ;; esac

if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
	if [ "${KVSIM_SKIP_BROWSER:-0}" = 1 ]; then
		echo "browser: $CHROMIUM not found; skipped (KVSIM_SKIP_BROWSER=1)"
		exit 0
	fi
	echo "browser: $CHROMIUM not found: install it (make deps, as root) or set KVSIM_SKIP_BROWSER=1" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-browser.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
bad() { echo "browser: FAIL: $*" >&2; fails=$((fails + 1)); }

"$KVSIM" compare --set cluster.nodes=2 --set duration_s=20 \
	--policies all --out "$tmp/c" --report >"$tmp/compare.log" 2>&1 || {
	cat "$tmp/compare.log" >&2
	echo "browser: kvsim compare --report failed" >&2
	exit 1
}

# Headless Chromium, no sandbox (CI runs as root), no GPU; 2 s of virtual time lets
# scripts and images settle before the capture. Its console goes to stderr as
# "...:CONSOLE:LINE] "message", source: URL (LINE)".
# (1280 px is the width the issue asks the report to read well at; 60 s is far above
# the second it takes here, a bound against a hung browser.)
chrome() {
	timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--window-size=1280,2000 --virtual-time-budget=2000 --enable-logging=stderr --v=0 "$@"
}
page="file://$tmp/c/report.html"
chrome --screenshot="$tmp/shot.png" "$page" >/dev/null 2>"$tmp/shot.err" ||
	{ cat "$tmp/shot.err" >&2; bad "chromium --screenshot failed"; }
chrome --dump-dom "$page" >"$tmp/dom.html" 2>"$tmp/dom.err" ||
	{ cat "$tmp/dom.err" >&2; bad "chromium --dump-dom failed"; }
# The probe: after load, the layout's figures in <pre id="probe">, as name=value words.
# The table box is scrolled to its end first: a sticky first column then still starts
# where the box does.
cat >"$tmp/probe.js" <<'JS'
<script>
window.addEventListener("load", function () {
  var d = document.documentElement, w = document.querySelector("div.wide");
  var td = w ? w.querySelector("td") : null, det = document.getElementById("per-node");
  var cl = document.getElementById("cluster"), r = [];
  var sum = det ? det.querySelector("summary") : null;
  r.push("page=" + d.scrollWidth + "/" + window.innerWidth);
  if (w && td) {
    w.scrollLeft = w.scrollWidth;
    r.push("box=" + w.scrollWidth + "/" + w.clientWidth);
    r.push("stuck=" + Math.round(td.getBoundingClientRect().left - w.getBoundingClientRect().left));
  }
  r.push("fold=" + (det ? (det.open ? "open" : "closed") : "none"));
  r.push("folded=" + (det ? det.querySelectorAll("figure").length : 0));
  r.push("hidden=" + (det && sum ? Math.round(det.getBoundingClientRect().height -
      sum.getBoundingClientRect().height) : -1));
  r.push("before=" + (cl && det && (cl.compareDocumentPosition(det) & 4) ? 1 : 0));
  var p = document.createElement("pre");
  p.id = "probe";
  p.textContent = r.join(" ");
  document.body.appendChild(p);
});
</script>
JS
sed "s#</body></html>#$(tr -d '\n' <"$tmp/probe.js" | sed 's/[#&\\]/\\&/g')</body></html>#" \
	"$tmp/c/report.html" >"$tmp/c/probe.html"
chrome --dump-dom "file://$tmp/c/probe.html" >"$tmp/probe.html" 2>"$tmp/probe.err" ||
	{ cat "$tmp/probe.err" >&2; bad "chromium --dump-dom of the probe failed"; }
printf '<!DOCTYPE html><html><body></body></html>\n' >"$tmp/blank.html"
chrome --screenshot="$tmp/blank.png" "file://$tmp/blank.html" >/dev/null 2>&1 ||
	bad "chromium failed on an empty page"

# Rendered and not blank: a PNG of 1280 x 2000, and at least 4 times the size of the same
# browser's screenshot of an empty page (a flat colour compresses to ~12 KB; the report's
# text, table and figures to ~230 KB, measured with Debian 12's chromium).
png_dims() { head -c 24 "$1" | od -An -tu1 | tr -s ' \n' ' ' |
	awk '{ if ($2 != 80 || $3 != 78 || $4 != 71) print "not-png"; else print ($17 * 16777216 + $18 * 65536 + $19 * 256 + $20) "x" ($21 * 16777216 + $22 * 65536 + $23 * 256 + $24) }'; }
if [ -s "$tmp/shot.png" ]; then
	dims=$(png_dims "$tmp/shot.png")
	[ "$dims" = 1280x2000 ] || bad "screenshot is $dims, expected a 1280x2000 PNG"
	size=$(wc -c <"$tmp/shot.png")
	blank=$(wc -c <"$tmp/blank.png" 2>/dev/null || echo 0)
	[ "$blank" -gt 0 ] && [ "$size" -ge $((4 * blank)) ] ||
		bad "screenshot is $size bytes, an empty page's $blank: the page looks blank"
else
	bad "no screenshot"
fi

# The DOM, as the browser built it: the verdict and the table before the scenario,
# which is folded in <details>.
at() { grep -bo "$1" "$tmp/dom.html" | head -n 1 | cut -d: -f1; }
v=$(at 'id="verdict"'); t=$(at '<table'); s=$(at '<details id="scenario"')
if [ -z "$v" ] || [ -z "$t" ] || [ -z "$s" ]; then
	bad "the DOM lacks the verdict (${v:-none}), the table (${t:-none}) or the scenario (${s:-none})"
else
	[ "$v" -lt "$t" ] && [ "$t" -lt "$s" ] ||
		bad "the DOM's order is verdict@$v, table@$t, scenario@$s; expected verdict, table, scenario"
fi
tr -d "\n" <"$tmp/dom.html" | grep -q '<ul class="verdict"> *<li>' || bad "the verdict has no lines"

# The layout, as the probe measured it.
probe=$(sed -n 's/.*<pre id="probe">\([^<]*\)<\/pre>.*/\1/p' "$tmp/probe.html")
val() { printf '%s\n' "$probe" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
if [ -z "$probe" ]; then
	bad "the probe script reported nothing"
else
	page=$(val page)
	[ "${page%/*}" -le "${page#*/}" ] || bad "the page is ${page%/*} px wide in a ${page#*/} px window: it scrolls sideways"
	box=$(val box)
	[ -n "$box" ] && [ "${box%/*}" -gt "${box#*/}" ] ||
		bad "the comparison table's box (${box:-none}, content/visible px) does not scroll: 11 columns should overflow it"
	[ "$(val stuck)" = 0 ] || bad "scrolled to its end, the table's first column is $(val stuck) px right of its box (not sticky)"
	[ "$(val fold)" = closed ] && [ "$(val folded)" -ge 22 ] && [ "$(val hidden)" -ge 0 ] && [ "$(val hidden)" -lt 100 ] && [ "$(val before)" = 1 ] ||
		bad "per-node figures: $probe; expected a closed <details id=\"per-node\"> of >= 22 figures (2 per policy), under 100 px beyond its summary line (its margins), after the cluster figure"
fi

# Every image has a size: a data: URI that decodes to a PNG of non-zero width and height,
# or width and height attributes. Every SVG has width and height, or a viewBox.
tr '>' '\n' <"$tmp/dom.html" | grep -o '<img[^>]*' >"$tmp/imgs" || :
tr '>' '\n' <"$tmp/dom.html" | grep -o '<svg[^>]*' >"$tmp/svgs" || :
nimg=0
while IFS= read -r img; do
	nimg=$((nimg + 1))
	src=$(printf '%s\n' "$img" | sed -n 's/.* src="\([^"]*\)".*/\1/p')
	case "$src" in
	data:image/png\;base64,?*)
		printf '%s' "${src#data:image/png;base64,}" | head -c 32 | base64 -d >"$tmp/head.png" 2>/dev/null || :
		dims=$(png_dims "$tmp/head.png")
		case "$dims" in 0x* | *x0 | not-png) bad "image $nimg: its data: URI is not a PNG with a size ($dims)" ;; esac ;;
	data:?*) ;;
	"") bad "image $nimg has no src" ;;
	*)
		printf '%s\n' "$img" | grep -q ' width="[1-9]' && printf '%s\n' "$img" | grep -q ' height="[1-9]' ||
			bad "image $nimg ($src) has no width and height" ;;
	esac
done <"$tmp/imgs"
nsvg=0
while IFS= read -r svg; do
	nsvg=$((nsvg + 1))
	printf '%s\n' "$svg" | grep -qi ' viewBox="[^"]' ||
		{ printf '%s\n' "$svg" | grep -q ' width="[^"]' && printf '%s\n' "$svg" | grep -q ' height="[^"]'; } ||
		bad "SVG $nsvg has neither width and height nor a viewBox"
done <"$tmp/svgs"
[ $((nimg + nsvg)) -gt 0 ] || bad "the report shows no figure"

# The console: any message the page logs (Chromium prints them as INFO:CONSOLE whatever
# their level, so console.error, an uncaught exception and a failed load alike) fails.
# The rest of stderr is the browser's own noise in a container (dbus, bluez, vaapi, mojo IPC
# messages between its own processes, the
# GPU process, the sandbox, the ScreenSaver lookup, the launcher script), not the page's.
cat "$tmp/shot.err" "$tmp/dom.err" "$tmp/probe.err" >"$tmp/all.err"
if grep -E 'CONSOLE|Uncaught' "$tmp/all.err" >"$tmp/console"; then
	bad "the console shows:"
	cat "$tmp/console" >&2
fi
noise='dbus|bluez|vaapi|sandbox|idle_linux|gpu|GPU|viz|mojo|/usr/bin/chromium|bytes written to file|^$'
grep -vE "$noise" "$tmp/all.err" | grep -E ':ERROR:' >"$tmp/other" &&
	{ bad "chromium reports errors:"; cat "$tmp/other" >&2; }

if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP" && cp "$tmp/shot.png" "$tmp/dom.html" "$tmp/probe.html" "$KEEP/"
fi
if [ "$fails" -gt 0 ]; then
	echo "browser: $fails failed"
	exit 1
fi
echo "browser: report.html renders (${size} bytes of 1280x2000 PNG), $nimg images and $nsvg SVGs sized, verdict and table before the scenario, table scrolls in its box ($box px) with its first column held, $(val folded) per-node figures folded, console clean"
