#!/bin/sh
# cli.sh: end-to-end checks of the kvsim command line: exit codes, messages,
# outputs, no half-written files. Usage: KVSIM=build/kvsim sh tests/cli.sh
KVSIM=${KVSIM:-build/kvsim}
PROG=$KVSIM
PROG_NAME=kvsim
. "$(dirname "$0")/expect.sh"
# The policies as kvsim lists them (its rows run up to the first blank line), so that a
# new policy needs no edit here.
POLICIES=$("$KVSIM" list policies | awk 'NF == 0 { exit } { print $1 }')
KNOWN_POLICIES=$(echo $POLICIES | sed 's/ /, /g')
N_POLICIES=$(echo "$POLICIES" | grep -c .)

# --help everywhere
expect 0 "usage: kvsim COMMAND" --help
for c in run compare validate list; do
	expect 0 "usage: kvsim $c" "$c" --help
done
expect 2 "usage: kvsim COMMAND"
expect 2 'unknown command "frobnicate"' frobnicate
expect 0 "kvsim 0." version

# list
expect 0 "session_affinity" list policies
expect 0 "H100-SXM" list gpus
expect 0 "Mixtral-8x7B" list models
expect 0 "ib-ndr" list links
expect 0 "DGX-H100         H100-SXM       8     8 ib-ndr     pcie5" list servers
expect 0 "chat" list workloads
expect 2 'unknown list "fruit"' list fruit

# validate: good and bad scenarios, each bad one names its path or line
printf '{}' >"$T/empty_obj.json"
expect 0 "valid" validate "$T/empty_obj.json"
expect 0 "valid" validate workloads/scenarios/default.json
grep -q "rate schedule" "$T/out" && bad "validate printed a rate schedule for a workload without one" || ok
expect 0 "rate schedule: diurnal, x0.2 to x1 over a period of 86400 s, peaking at 50400 s (mean x0.6)" validate workloads/scenarios/diurnal.json
printf '{"cluster": {"nodes": -3}}' >"$T/neg.json"
expect 2 "$T/neg.json: cluster.nodes: expected an integer in [1, 1000000], got -3" validate "$T/neg.json"
printf '{"router": {"policy": "magic"}}' >"$T/pol.json"
expect 2 "router.policy: unknown policy \"magic\" (known: $KNOWN_POLICIES)" validate "$T/pol.json"
printf '{"workload": {"kind": "chat", "turns": {"dist": "geometric", "mean": 0.5}}}' >"$T/wl.json"
expect 2 "workload.turns.mean: expected a number in [1," validate "$T/wl.json"
printf '{"workload": {"kind": "chat", "sesions_per_s": 3}}' >"$T/wk.json"
expect 2 "workload.sesions_per_s: unknown key" validate "$T/wk.json"
printf '{\n "seed": 1,\n "cluster": {\n' >"$T/trunc.json"
expect 2 "$T/trunc.json:4:" validate "$T/trunc.json"
: >"$T/empty.json"
expect 2 "empty file" validate "$T/empty.json"
expect 2 "No such file" validate "$T/missing.json"
expect 2 "is a directory" validate "$T"
expect 2 "Llama-3-70B needs 131.5 GiB of weights" validate "$T/empty_obj.json" --set cluster.model=Llama-3-70B
expect 0 "tp 4" validate "$T/empty_obj.json" --set cluster.model=Llama-3-70B --set cluster.tp=4
# 16 TP 8 replicas take 16 servers, each replica with eight GPUs' links
expect 0 "layout: 16 DGX-H100 servers of 8 GPUs, at most 1 replica (tp 8) per server; per replica 8 x nvlink4 = 3600 GB/s, 8 x ib-ndr = 400 GB/s; per server 8 x pcie5 = 512 GB/s" validate "$T/empty_obj.json" --set cluster.model=Llama-3-70B --set cluster.tp=8 --set cluster.nodes=16
expect 0 "layout: 1 DGX-H100 server of 8 GPUs, at most 8 replicas (tp 1) per server; per replica 1 x nvlink4 = 450 GB/s, 1 x ib-ndr = 50 GB/s" validate "$T/empty_obj.json"
expect 0 "1 x eth-200g = 25 GB/s; per server 1 x pcie4 = 32 GB/s" validate "$T/empty_obj.json" --set cluster.gpu=L40S
expect 2 "cluster.nodes_per_server: 2 replicas of tp 8 need 16 GPUs" validate "$T/empty_obj.json" --set cluster.model=Llama-3-70B --set cluster.tp=8 --set cluster.nodes_per_server=2
expect 2 "--set nodes: expected PATH=VALUE" validate "$T/empty_obj.json" --set nodes
expect 2 '--seed: expected an integer in [0, 2^53], got "-4"' run --seed -4
expect 2 "unknown option --fast" run --fast

# a failed run leaves no output files behind
expect 2 "cluster.nodes" run "$T/neg.json" --out "$T/neg_out"
[ ! -e "$T/neg_out" ] && ok || bad "a rejected scenario created $T/neg_out"

# run: a small scenario end to end
cat >"$T/small.json" <<'JSON'
{"name": "small", "duration_s": 60,
 "cluster": {"nodes": 2},
 "workload": {"kind": "chat", "sessions_per_s": 2, "max_sessions": 60}}
JSON
expect 0 "prefix hit ratio" run "$T/small.json" --out "$T/run1"
for f in summary.json requests.csv; do
	[ -s "$T/run1/$f" ] && ok || bad "run did not write $f"
done
ls "$T/run1" | grep -q tmp && bad "temporary files left in $T/run1" || ok
lines=$(wc -l <"$T/run1/requests.csv")
arrived=$(grep -o '"arrived":[^,]*' "$T/run1/summary.json" | tr -dc '0-9')
[ "$lines" -eq $((arrived + 1)) ] && ok || bad "requests.csv has $lines lines for $arrived requests"
grep -q '"seed":	1' "$T/run1/summary.json" && grep -q '"kvsim_version"' "$T/run1/summary.json" && ok ||
	bad "summary.json lacks seed or kvsim_version"
# bench_serving.json: vLLM's --save-result keys, the summary's figures in ms
grep -q 'TTFT median (ms)' "$T/out" && grep -q 'ITL p99 (ms)' "$T/out" && grep -q 'total tokens/s' "$T/out" &&
	ok || bad "run's table lacks the ms latency rows or total tokens/s"
for k in completed duration total_input_tokens total_output_tokens request_throughput \
	output_throughput total_token_throughput mean_ttft_ms median_ttft_ms p99_ttft_ms \
	mean_tpot_ms p99_tpot_ms mean_itl_ms median_itl_ms p99_itl_ms mean_e2el_ms p99_e2el_ms; do
	grep -q "^	\"$k\":	" "$T/run1/bench_serving.json" && ok || bad "bench_serving.json lacks $k"
done
completed=$(grep -o '"completed":[^,]*' "$T/run1/summary.json" | head -1 | tr -dc '0-9')
grep -q "^	\"completed\":	$completed,\$" "$T/run1/bench_serving.json" && ok || bad "bench_serving.json's completed is not the summary's $completed"
p99=$(sed -n '/"ttft_s"/,/}/s/.*"p99":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$T/run1/summary.json")
ms=$(sed -n 's/.*"p99_ttft_ms":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$T/run1/bench_serving.json")
awk -v s="$p99" -v m="$ms" 'BEGIN { d = s * 1000 - m; exit !(d < 1e-9 && d > -1e-9 && m > 0) }' && ok ||
	bad "bench_serving.json p99_ttft_ms $ms is not 1000 x summary's $p99"
# determinism: byte-identical requests.csv, summary equal but for perf
"$KVSIM" run "$T/small.json" --out "$T/run2" --quiet
cmp -s "$T/run1/requests.csv" "$T/run2/requests.csv" && ok || bad "requests.csv differs between identical runs"
cmp -s "$T/run1/bench_serving.json" "$T/run2/bench_serving.json" && ok || bad "bench_serving.json differs between identical runs"
sed '/"perf"/,$d' "$T/run1/summary.json" >"$T/s1"
sed '/"perf"/,$d' "$T/run2/summary.json" >"$T/s2"
cmp -s "$T/s1" "$T/s2" && ok || bad "summary.json differs between identical runs"
# huge pages (base/hugepages.h): kvsim restarts itself once with
# glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES; the results are the same
# without (KVSIM_HUGEPAGES=0); a value the user set stands; not under valgrind
hp() { env "$1" "$KVSIM" version 2>&1 | grep -qF -- "$2" && ok || bad "$1 kvsim version lacks '$2'"; }
hp KVSIM_HUGEPAGES=0 "huge pages: off (KVSIM_HUGEPAGES=0)"
hp GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "huge pages: glibc.malloc.hugetlb=0,"
case $KVSIM in
*valgrind*) hp KVSIM_HUGEPAGES=1 "huge pages: off (under valgrind)" ;;
*)
	hp KVSIM_HUGEPAGES=1 "huge pages: glibc.malloc.hugetlb=1,"
	hp GLIBC_TUNABLES=glibc.malloc.tcache_count=0 "huge pages: glibc.malloc.hugetlb=1,"
	;;
esac
# the restarted process has the tunable and is still named kvsim (an exec of
# /proc/self/exe named it "exe" in ps and perf): caught while it waits to
# read its scenario from a FIFO
case $KVSIM in
*valgrind*) ;;
*)
	mkfifo "$T/scn.fifo"
	"$KVSIM" run "$T/scn.fifo" --out "$T/run_fifo" --quiet &
	pid=$!
	i=0
	while [ $i -lt 100 ] && ! tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
		grep -q "^GLIBC_TUNABLES=.*glibc.malloc.hugetlb=1"; do
		sleep 0.05
		i=$((i + 1))
	done
	[ $i -lt 100 ] && ok || bad "the restarted kvsim lacks glibc.malloc.hugetlb=1"
	[ "$(ps -o comm= -p "$pid")" = kvsim ] && ok ||
		bad "the restarted kvsim is named '$(ps -o comm= -p "$pid")', not kvsim"
	cat "$T/small.json" >"$T/scn.fifo"
	wait "$pid" && cmp -s "$T/run1/requests.csv" "$T/run_fifo/requests.csv" && ok ||
		bad "kvsim run of a scenario read from a FIFO differs"
	;;
esac
KVSIM_HUGEPAGES=0 "$KVSIM" run "$T/small.json" --out "$T/run_nohp" --quiet
sed '/"perf"/,$d' "$T/run_nohp/summary.json" >"$T/s3"
cmp -s "$T/run1/requests.csv" "$T/run_nohp/requests.csv" && cmp -s "$T/s1" "$T/s3" && ok ||
	bad "results differ with KVSIM_HUGEPAGES=0"
"$KVSIM" run "$T/small.json" --out "$T/run3" --quiet --seed 9
cmp -s "$T/run1/requests.csv" "$T/run3/requests.csv" && bad "--seed did not change the run" || ok

# preemptive migration: with watermark_action "migrate" a node past the KV
# watermark moves idle sessions' KV to nodes with room; summary.json counts
# the moves as migration.by_reason.watermark (none with "close")
cat >"$T/hot.json" <<'JSON'
{"name": "hot", "duration_s": 300,
 "cluster": {"nodes": 4, "nodes_per_server": 4, "engine": {"gpu_memory_utilization": 0.3}},
 "router": {"policy": "prefix_affinity", "params": {}},
 "workload": {"kind": "chat", "sessions_per_s": 1, "max_sessions": 100000,
  "system_prompts": {"count": 4, "zipf_s": 2.0}}}
JSON
wm_moves() { sed -n '/"by_reason"/,/}/s/.*"watermark":[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$1/summary.json"; }
expect 0 "" run "$T/hot.json" --set router.watermark_action=migrate --out "$T/wm_mig" --quiet
grep -q '"watermark_action":	"migrate"' "$T/wm_mig/summary.json" && [ "$(wm_moves "$T/wm_mig")" -gt 0 ] && ok ||
	bad "watermark_action=migrate: migration.by_reason.watermark is '$(wm_moves "$T/wm_mig")'"
expect 0 "" run "$T/hot.json" --set router.watermark_action=close --out "$T/wm_close" --quiet
[ "$(wm_moves "$T/wm_close")" = 0 ] && ok ||
	bad "watermark_action=close: migration.by_reason.watermark is '$(wm_moves "$T/wm_close")'"

# compare: every policy present, same arrivals for all (a horizon long enough
# for every session to finish, so the closed loop cuts no turn)
sed 's/"duration_s": 60/"duration_s": 3000/' "$T/small.json" >"$T/long.json"
expect 0 "round_robin" compare "$T/long.json" --policies round_robin,session_affinity,prefix_affinity --out "$T/cmp"
for p in round_robin session_affinity prefix_affinity; do
	[ -s "$T/cmp/$p/summary.json" ] && ok || bad "compare did not write $p/summary.json"
done
[ -s "$T/cmp/comparison.json" ] && ok || bad "compare did not write comparison.json"
n=$(grep -o '"arrived":[^,]*' "$T/cmp/comparison.json" | sort -u | wc -l)
[ "$n" -eq 1 ] && ok || bad "policies saw different arrival counts"
expect 2 'unknown policy "nope"' compare "$T/small.json" --policies round_robin,nope
expect 2 "--policies a,b,c" compare "$T/small.json"
# a policy named twice is refused before anything runs
expect 2 '--policies: "round_robin" given twice' compare "$T/small.json" --policies round_robin,round_robin --out "$T/twice"
[ ! -e "$T/twice" ] && ok || bad "compare with a policy named twice created $T/twice"
# router.policy_params.P applies to P's column, the scenario's own policy's too:
# the same requests as router.params with the same value
expect 0 "" run "$T/small.json" --set router.params.threshold=1 --out "$T/prec_run" --quiet
expect 0 "" compare "$T/small.json" --policies session_affinity,round_robin --set router.policy_params.session_affinity.threshold=1 --out "$T/prec_cmp" --quiet
cmp -s "$T/prec_run/requests.csv" "$T/prec_cmp/session_affinity/requests.csv" && ok || bad "compare ignored router.policy_params of the scenario's own policy"
expect 0 "" run "$T/small.json" --set router.params.threshold=1 --set router.policy_params.session_affinity.threshold=1 --out "$T/prec_both" --quiet
cmp -s "$T/prec_run/requests.csv" "$T/prec_both/requests.csv" && ok || bad "router.params and router.policy_params together differ"

# every shipped scenario validates, runs and compares (trace paths resolve
# against the scenario's folder, wherever kvsim is started)
for f in workloads/scenarios/*.json; do
	name=$(basename "$f" .json)
	expect 0 "" compare "$f" --policies round_robin,session_affinity --out "$T/sc_$name" --quiet --audit
	[ -s "$T/sc_$name/comparison.json" ] && ok || bad "compare $f wrote no comparison.json"
done
(cd /tmp && "$OLDPWD/$KVSIM" validate "$OLDPWD/workloads/scenarios/mooncake-synthetic.json" >/dev/null) && ok ||
	bad "a scenario's trace path did not resolve from another directory"

# trace stats and gen
expect 0 "12031" trace stats data/traces/mooncake/conversation_trace.jsonl
expect 0 '"lru_hit_ratio"' trace stats data/traces/mooncake/synthetic_trace.jsonl --json --cache-blocks 100,1000
grep -q '"1000":' "$T/out" && grep -q '"per_request_tokens":' "$T/out" && ok || bad "trace stats --json lacks keys"
expect 0 "19366" trace stats data/traces/azure-2023/AzureLLMInferenceTrace_conv.csv
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]}\n{"timestamp": 2, "input_length": 10, "output_length": 1, "hash_ids": [3]}\n' >"$T/bad.jsonl"
expect 2 "$T/bad.jsonl:2: \"hash_ids\" has 2 ids" trace stats "$T/bad.jsonl"
expect 0 "skipped 1 malformed lines; the first: $T/bad.jsonl:2:" trace stats "$T/bad.jsonl" --skip-bad
: >"$T/empty.jsonl"
expect 2 "cannot tell the trace format" trace stats "$T/empty.jsonl"
expect 2 "no requests in the trace" trace stats "$T/empty.jsonl" --format mooncake
head -c 3000 /dev/urandom >"$T/garbage.bin" 2>/dev/null || printf '\001\002\000\377' >"$T/garbage.bin"
"$KVSIM" trace stats "$T/garbage.bin" --format kvsim >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "binary garbage did not exit 2"
expect 2 "unknown subcommand" trace frob
expect 0 "usage: kvsim trace" trace --help
printf '{"workload": {"kind": "trace", "format": "mooncake", "path": "bad.jsonl"}}' >"$T/badtrace.json"
expect 2 "bad.jsonl:2:" run "$T/badtrace.json" --out "$T/badrun"
[ ! -e "$T/badrun/summary.json" ] && ! ls "$T/badrun" 2>/dev/null | grep -q . && ok || bad "a failed replay left files"
printf '{"workload": {"kind": "trace", "format": "mooncake", "path": "missing.jsonl"}}' >"$T/misstrace.json"
expect 2 "workload.path: $T/missing.jsonl: No such file" validate "$T/misstrace.json"
expect 0 "wrote" trace gen "$T/small.json" --out "$T/gen.jsonl"
printf '{"name": "small", "duration_s": 60, "cluster": {"nodes": 2}, "workload": {"kind": "trace", "format": "kvsim", "path": "gen.jsonl"}}' >"$T/replay.json"
"$KVSIM" run "$T/replay.json" --out "$T/replayed" --quiet
cmp -s "$T/run1/requests.csv" "$T/replayed/requests.csv" && ok || bad "trace gen -> replay differs from the generator's run"

# trace import: a chat log -> a kvsim trace that trace stats reads alike -> a run
expect 0 "sessions                         4" trace import tests/data/chat_log.csv -o "$T/chat.jsonl"
grep -q "requests                         9" "$T/out" && grep -q "distinct blocks                151 (of 16 tokens)" "$T/out" &&
	grep -q "shared prefix                68.5% of prompt blocks (152 of 222)" "$T/out" && ok || bad "trace import's summary: $(cat "$T/out")"
grep -q "tests/data/chat_log.csv: columns not read: model" "$T/err" && ok || bad "trace import did not note the column it left"
expect 0 "ideal prefix reuse           68.5% of blocks" trace stats "$T/chat.jsonl"
grep -q "requests                         9" "$T/out" && grep -q "distinct blocks                151 (of 16 tokens)" "$T/out" && ok ||
	bad "trace stats disagrees with trace import: $(cat "$T/out")"
cp tests/data/chat_log.csv "$T/chat_copy.csv"
expect 0 "" trace import "$T/chat_copy.csv" --quiet
cmp -s "$T/chat.jsonl" "$T/chat_copy.jsonl" && [ ! -s "$T/out" ] && ok || bad "trace import's default output or --quiet"
printf '{"name": "chat-log", "duration_s": 600, "cluster": {"nodes": 2}, "router": {"policy": "session_affinity"}, "workload": {"kind": "trace", "format": "kvsim", "path": "chat.jsonl"}}' >"$T/chatlog.json"
expect 0 "" run "$T/chatlog.json" --out "$T/chatrun" --quiet
[ "$(grep -c . "$T/chatrun/requests.csv")" -eq 10 ] && ! grep -q warning "$T/err" && ! grep -q '"warnings"' "$T/chatrun/summary.json" && ok ||
	bad "the imported trace's run: $(grep -c . "$T/chatrun/requests.csv") lines in requests.csv; stderr: $(cat "$T/err")"
# 64-token blocks: 52 whole prompt blocks, 36 of them the previous turn's, 37 ids
expect 0 "shared prefix                69.2% of prompt blocks (36 of 52)" trace import tests/data/chat_log.csv -o "$T/chat64.jsonl" --block-tokens 64
grep -q "distinct blocks                 37 (of 64 tokens)" "$T/out" && ok || bad "trace import --block-tokens 64: $(cat "$T/out")"
H=timestamp_s,session_id,turn,prompt_tokens,output_tokens
for c in "missing:timestamp_s,session_id,turn,prompt_tokens|0,a,1,10:1: missing column \"output_tokens\"" \
	"nan:$H|0,a,1,10,5|x,a,2,20,5:3: timestamp_s \"x\": expected a number of seconds" \
	"neg:$H|0,a,1,10,-5:2: output_tokens \"-5\": expected a count of tokens, got a negative number" \
	"dup:$H|0,a,1,10,5|1,a,1,30,5:3: session \"a\" turn 1 appears twice (line 2 too)" \
	"back:$H|5,a,1,10,5|4,a,2,30,5:3: session \"a\" turn 2 at 4 s comes before its turn 1 (line 2) at 5 s"; do
	name=${c%%:*}
	rest=${c#*:}
	printf '%s\n' "${rest%%:*}" | tr '|' '\n' >"$T/imp_$name.csv"
	expect 2 "$T/imp_$name.csv:${rest#*:}" trace import "$T/imp_$name.csv" -o "$T/imp_$name.jsonl"
	! ls "$T" | grep -q "^imp_$name.jsonl" && ok || bad "trace import of a bad log ($name) left a file"
done
expect 2 '--block-tokens: expected tokens per block, 1 to 4096, got "0"' trace import --block-tokens 0 tests/data/chat_log.csv
expect 2 "give a CSV file" trace import

# a session-keyed policy on a trace of one-request sessions says it routes as its fallback
expect 0 "kvsim: warning: router.policy session_affinity keys on the session, but every session of this trace had one request" \
	run workloads/scenarios/mooncake-conversation.json --policy session_affinity --set workload.max_requests=200 --out "$T/mcsa" --quiet
grep -q '"warnings":.*as least_loaded would' "$T/mcsa/summary.json" && ok || bad "summary.json lacks the session warning"
expect 0 "" run workloads/scenarios/mooncake-conversation.json --set workload.max_requests=200 --out "$T/mcpa" --quiet
! grep -q warning "$T/err" && ! grep -q '"warnings"' "$T/mcpa/summary.json" && ok || bad "prefix_affinity on Mooncake warned: $(cat "$T/err")"

# diff on hand-made summaries: directions, tolerance, a missing metric, exit codes
cat >"$T/base.json" <<'JSON'
{"policy": "p", "requests": {"completed": 100, "shed": 0}, "ttft_s": {"p99": 2.0}, "prefix_hit_ratio": 0.5,
 "perf": {"wall_s": 1.0}}
JSON
cat >"$T/better.json" <<'JSON'
{"policy": "p", "requests": {"completed": 100, "shed": 0}, "ttft_s": {"p99": 1.0}, "prefix_hit_ratio": 0.6,
 "perf": {"wall_s": 9.0}}
JSON
cat >"$T/worse.json" <<'JSON'
{"policy": "p", "requests": {"completed": 100, "shed": 0}, "ttft_s": {"p99": 2.2}, "prefix_hit_ratio": 0.5,
 "perf": {"wall_s": 1.0}}
JSON
cat >"$T/lower_hit.json" <<'JSON'
{"policy": "p", "requests": {"completed": 100, "shed": 0}, "ttft_s": {"p99": 2.0}, "prefix_hit_ratio": 0.45}
JSON
cat >"$T/missing.json" <<'JSON'
{"policy": "p", "requests": {"completed": 100, "shed": 0}, "prefix_hit_ratio": 0.5}
JSON
expect 0 "2 improvements" diff "$T/base.json" "$T/better.json"       # lower TTFT, higher hit: better; perf ignored
expect 1 "ttft_s.p99" diff "$T/base.json" "$T/worse.json"             # +10% TTFT > 5%
grep -q "REGRESSION" "$T/out" && ok || bad "diff did not mark the regression"
expect 0 "worse, within tolerance" diff "$T/base.json" "$T/worse.json" --tolerance 15
expect 1 "prefix_hit_ratio" diff "$T/base.json" "$T/lower_hit.json"   # lower hit ratio is worse
expect 1 "REGRESSION (missing)" diff "$T/base.json" "$T/missing.json"
expect 1 "perf.wall_s" diff "$T/base.json" "$T/better.json" --metrics perf.wall_s
expect 0 "0 regressions" diff "$T/base.json" "$T/base.json" --tolerance 0
expect 2 'unknown metric "ttft"' diff "$T/base.json" "$T/worse.json" --metrics ttft
expect 2 "not valid JSON" diff "$T/base.json" "$T/trunc.json"
expect 2 "expected two summary.json objects" diff "$T/base.json" "$T/cmp/comparison.json"
expect 0 "0 regressions" diff "$T/cmp/comparison.json" "$T/cmp/comparison.json" --tolerance 0
head -c 200 "$T/cmp/comparison.csv" | grep -q "^policy,arrived,completed" && ok || bad "compare wrote no comparison.csv"
[ -s "$T/run1/timeseries.csv" ] && head -1 "$T/run1/timeseries.csv" | grep -q "^time_s,node,kv_util,running,queued" && ok ||
	bad "run wrote no timeseries.csv"

# kvsim cost and calibrate
expect 0 "iteration" cost --gpu A100-80G --model Llama-2-7B --prefill 128
expect 0 '"bound":"compute"' cost --gpu H100-SXM --model Llama-3-8B --prefill 4096 --json
expect 0 "memory-bound" cost --gpu H100-SXM --model Llama-3-8B --decode-batch 8 --context 1000
# one GPU's power: a long compute-bound prefill near TDP, a decode of one far below it
expect 0 "power: 663.1 W per GPU while it runs (utilisation 0.937; idle 115 W, TDP 700 W)" cost --gpu H100-SXM --model Llama-3-8B --prefill 4096
expect 0 '"utilisation":0.293133,"power_w":286.483,' cost --gpu H100-SXM --model Llama-3-8B --decode-batch 1 --context 1000 --json
expect 0 "communication" cost --gpu A100-80G --model Llama-2-70B --tp 4 --prefill 512
expect 0 "profile cost model" cost --gpu A100-80G --model Llama-3-8B --prefill 300 --cost-model profile
expect 2 "give --gpu and --model" cost --prefill 10
expect 2 "nothing to run" cost --gpu A100-80G --model Llama-2-7B
expect 2 'cluster.gpu: unknown GPU "X1"' cost --gpu X1 --model Llama-2-7B --prefill 1
expect 2 "--decode-batch needs --context" cost --gpu A100-80G --model Llama-2-7B --decode-batch 4
expect 2 "needs Vidur profiles" cost --gpu L40S --model Llama-2-7B --prefill 8 --cost-model profile
# a Hugging Face config.json as the model: parameters counted from it, the
# KV cache at the scenario defaults (81,559 MiB x 0.9 - weights - 1 GiB)
expect 0 '"kv_bytes_per_token":131072,"params":8030261248,"active_params":8030261248,"kv_capacity_tokens":456496}' cost --gpu H100-SXM --model tests/data/hf/Meta-Llama-3-8B/config.json --prefill 1 --json
expect 0 '"model":"DeepSeek-V3","tp":8,' cost --gpu H200 --model tests/data/hf/DeepSeek-V3/config.json --tp 8 --dtype fp8 --decode-batch 1 --context 100 --json
expect 0 '"kv_bytes_per_token":70272,"params":671026419200,"active_params":37552297472,' cost --gpu H200 --model tests/data/hf/DeepSeek-V3/config.json --tp 8 --dtype fp8 --decode-batch 1 --context 100 --json
expect 0 "46.7 B parameters, 12.88 B active" cost --gpu H100-SXM --model tests/data/hf/Mixtral-8x7B-v0.1/config.json --tp 2 --decode-batch 1 --context 100
printf '{"cluster": {"model": "../tests/data/hf/Qwen3-8B/config.json", "nodes": 1}}' >"$T/qwen_rel.json"
mkdir -p "$T/sub" && cp "$T/qwen_rel.json" "$T/sub/"
expect 2 "cluster.model: $T/sub/../tests/data/hf/Qwen3-8B/config.json: No such file" validate "$T/sub/qwen_rel.json"
printf '{"cluster": {"model": "%s/tests/data/hf/Qwen3-8B/config.json", "nodes": 1}}' "$PWD" >"$T/qwen_abs.json"
expect 0 "valid" validate "$T/qwen_abs.json"
mkdir -p "$T/sub/Qwen3-8B" && cp tests/data/hf/Qwen3-8B/config.json "$T/sub/Qwen3-8B/"
printf '{"cluster": {"model": "Qwen3-8B/config.json", "nodes": 1}}' >"$T/sub/qwen_here.json"
expect 0 "valid" validate "$T/sub/qwen_here.json"
expect 2 "no such folder" calibrate --profiles /nonexistent
expect 0 '"a100":{"mfu":0.7431' calibrate --json --gpu a100
expect 0 '"flash_attention":{"prefill":{"fixed_us":1.041' calibrate --json --gpu a100
expect 0 '"iteration_overhead":{"base_ms":1.2355,"per_seq_ms":0.03599}' calibrate --json
expect 0 '"attention_s":0.00' cost --gpu A100-80G --model Llama-2-7B --prefill 512 --json
expect 0 "attention-bound" cost --gpu H100-SXM --model Llama-3-8B --decode-batch 64 --context 4000
expect 0 "usage: kvsim cost" cost --help
expect 0 "usage: kvsim calibrate" calibrate --help

# every policy at once; the thermal model fills the timeseries' temperature
printf '{"duration_s": 30, "cluster": {"nodes": 4, "thermal": {"enabled": true}}, "workload": {"kind": "chat", "sessions_per_s": 2}}' >"$T/small.json"
expect 0 "$(echo "$POLICIES" | tail -n 1)" compare "$T/small.json" --policies all --out "$T/all"
[ "$(ls "$T/all" | grep -vc '^comparison')" -eq "$N_POLICIES" ] && ok ||
	bad "compare --policies all did not run the $N_POLICIES policies"
awk -F, 'NR > 1 && $6 == "" { e++ } END { exit e > 0 }' "$T/all/kv_cost/timeseries.csv" && ok ||
	bad "thermal run wrote an empty temperature column"
expect 2 'unknown policy "al"' compare "$T/small.json" --policies al --out "$T/al"

# figures and report: every figure in PNG and SVG, non-empty; the report
# names every figure and embeds each one
expect 0 "wrote 11 figures" plot "$T/cmp"
for fig in ttft_cdf tpot_cdf cluster tokens counts kv_util_round_robin queue_session_affinity; do
	for ext in png svg; do
		[ -s "$T/cmp/plots/$fig.$ext" ] && ok || bad "kvsim plot did not draw $fig.$ext"
	done
done
expect 0 "report:" compare "$T/small.json" --policies round_robin,session_affinity --out "$T/rep" --report
figs=$(grep -c '^!\[' "$T/rep/report.md")
[ "$figs" -eq 9 ] && ok || bad "report.md names $figs figures, expected 9"
for fig in $(sed -n 's/^!\[\([^]]*\)\].*/\1/p' "$T/rep/report.md"); do
	[ -s "$T/rep/plots/$fig.png" ] && grep -q "id=\"$fig\"" "$T/rep/report.html" && ok ||
		bad "report figure $fig missing"
done
# Small figures go in as inline SVG with gnuplot's mouse script defined once;
# every figure has a caption that says what to look for.
n=$(grep -o '<figure id="[^"]*"><svg' "$T/rep/report.html" | wc -l)
[ "$n" -eq 9 ] && ok || bad "report.html inlines $n SVG figures, expected 9"
[ "$(grep -c 'gnuplot_svg = function' "$T/rep/report.html")" -eq 1 ] && ok ||
	bad "report.html defines gnuplot's mouse script other than once"
n=$(grep -o '<figcaption>[^<]*\. [A-Z][^<]*</figcaption>' "$T/rep/report.html" | wc -l)
[ "$n" -eq 9 ] && ok || bad "report.html has $n figures with a two-sentence caption, expected 9"
[ "$(grep -c '^!\[.*\](plots/.*\.png)$' "$T/rep/report.md")" -eq 9 ] &&
	[ "$(grep -A2 '^!\[' "$T/rep/report.md" | grep -c '\. [A-Z].*(SVG: ')" -eq 9 ] && ok ||
	bad "report.md lacks a PNG and a caption per figure"
grep -q "<table>" "$T/rep/report.html" && grep -q "| prefix hit ratio |" "$T/rep/report.md" && ok ||
	bad "the report lacks the comparison table"
# The report answers first: verdict, then the table, the figures, the mechanisms, and the
# scenario last (in HTML folded in <details>); no outside references.
at() { grep -n -m1 -- "$1" "$2" | cut -d: -f1; }
[ "$(at '^## Verdict' "$T/rep/report.md")" -lt "$(at '^| |' "$T/rep/report.md")" ] &&
	[ "$(at '^| |' "$T/rep/report.md")" -lt "$(at '^!\[' "$T/rep/report.md")" ] &&
	[ "$(at '^!\[' "$T/rep/report.md")" -lt "$(at '^## Policies' "$T/rep/report.md")" ] &&
	[ "$(at '^## Policies' "$T/rep/report.md")" -lt "$(at '^## Scenario' "$T/rep/report.md")" ] &&
	[ "$(sed -n '/^## Scenario/,$p' "$T/rep/report.md" | grep -c '^```')" -eq 2 ] && ok ||
	bad "report.md is not in the order verdict, table, figures, policies, scenario"
[ "$(at 'ul class="verdict"' "$T/rep/report.html")" -lt "$(at '<table>' "$T/rep/report.html")" ] &&
	[ "$(at '<table>' "$T/rep/report.html")" -lt "$(at '<figure' "$T/rep/report.html")" ] &&
	[ "$(at '<figure' "$T/rep/report.html")" -lt "$(at 'id="policies"' "$T/rep/report.html")" ] &&
	[ "$(at 'id="policies"' "$T/rep/report.html")" -lt "$(at '<details id="scenario"><summary>Scenario</summary>' "$T/rep/report.html")" ] &&
	sed -n '/<details id="scenario">/,/<\/details>/p' "$T/rep/report.html" | grep -q '^	"duration_s":	30,$' &&
	[ "$(grep -c '"duration_s"' "$T/rep/report.html")" -eq 1 ] && ok ||
	bad "report.html is not in the order verdict, table, figures, policies, scenario in <details>"
# Self-contained: nothing loaded from the network. The only URLs left are the
# SVG and XLink namespace names, identifiers that are never fetched.
grep -qiE '(src|href)="https?:' "$T/rep/report.html" && bad "report.html loads a resource over http(s)" || ok
sed -E 's#(xmlns(:xlink)?=|createElementNS\(|setAttributeNS\()["'"'"']http://www\.w3\.org/(2000/svg|1999/xlink)["'"'"']##g' \
	"$T/rep/report.html" "$T/rep/report.md" | grep -qi 'https\?:' && bad "the report refers outside itself" || ok
# The verdict: one line per headline figure (TTFT p99 first) that names the best columns
# and says whether their change against --baseline's column is material, or that there is
# no material difference; a column that sheds is flagged with its count, share and reason;
# report.md and report.html say the same; comparison.json's verdict holds the same.
expect 0 "report:" compare "$T/small.json" --policies round_robin,session_affinity,kv_cost --baseline kv_cost \
	--set router.policy_params.session_affinity.when_full=shed --set router.policy_params.session_affinity.threshold=1 \
	--out "$T/rep_shed" --report
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$1 == "session_affinity" { s = $c["shed"]; printf "- session_affinity shed %d requests (%.1f%% of those arrived): capacity %d\n", s, 100 * s / $c["arrived"], s }' \
	"$T/rep_shed/comparison.csv" >"$T/verdict.want" &&
	grep -E '^- session_affinity shed' "$T/rep_shed/report.md" >"$T/verdict.got" &&
	cmp -s "$T/verdict.want" "$T/verdict.got" && grep -q '^Best column per headline figure, against the baseline `kv_cost`:$' "$T/rep_shed/report.md" &&
	grep -qE '^- TTFT p99: (no material difference|.*(, material|: no material difference from it|no data))' "$T/rep_shed/report.md" &&
	[ "$(grep -c '"material"' "$T/rep_shed/comparison.json")" -eq 8 ] &&
	! grep -q '^- session_affinity shed 0 ' "$T/verdict.got" && ! grep -q '^- \(round_robin\|kv_cost\) shed' "$T/rep_shed/report.md" && ok ||
	bad "the verdict does not match the table: want $(cat "$T/verdict.want"), got $(cat "$T/verdict.got"); $(grep '^- TTFT' "$T/rep_shed/report.md")"
sed -n 's/^- //p' "$T/rep_shed/report.md" | sed -n '1,/shed/p' >"$T/verdict.md"
sed -n 's/^<li>\(.*\)<\/li>$/\1/p' "$T/rep_shed/report.html" | sed -n '1,/shed/p' >"$T/verdict.html"
cmp -s "$T/verdict.md" "$T/verdict.html" && [ "$(wc -l <"$T/verdict.md")" -eq 9 ] && ok ||
	bad "report.md's and report.html's verdicts differ: $(diff "$T/verdict.md" "$T/verdict.html")"
# Attribution: a column whose mechanisms differ from the baseline's runs again under the
# baseline's, and those figures are those of a plain run with the baseline's mechanisms
# forced by --set router.policy_params.<policy>.<key>.
expect 0 "attribution:" compare "$T/small.json" --policies round_robin,session_affinity --attribute \
	--no-perf --out "$T/attr"
grep -q '"attribution"' "$T/attr/comparison.json" && grep -q '"baseline_mechanisms"' "$T/attr/comparison.json" &&
	grep -q '"routing"' "$T/attr/comparison.json" && [ -s "$T/attr/attribution/session_affinity/summary.json" ] &&
	[ ! -e "$T/attr/attribution/round_robin" ] && ok || bad "compare --attribute wrote no attribution"
mk() { sed -n "/\"mechanisms\"/,/^\t}/s/^\t*\"$1\":\t\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$T/attr/round_robin/summary.json" | head -n 1; }
P=router.policy_params.session_affinity
expect 0 "" compare "$T/small.json" --policies session_affinity --no-perf --out "$T/forced" \
	--set "$P.migration=$(mk migration)" --set "$P.watermark_action=$(mk watermark_action)" \
	--set "$P.offload=$(mk offload)" --set "$P.shed=$(mk shed)" \
	--set "$P.shed_wait_slo_multiple=$(mk shed_wait_slo_multiple)" \
	--set "$P.load_report_interval_ms=$(mk load_report_interval_ms)" \
	--set "$P.health.enabled=$(mk enabled)" --set "$P.health.max_temperature_c=$(mk max_temperature_c)" \
	--set "$P.health.throttled=$(mk throttled)" --set "$P.health.max_kv_util=$(mk max_kv_util)"
sed '/"perf":/,/}/d' "$T/attr/attribution/session_affinity/summary.json" >"$T/attr_sa.json"
sed '/"perf":/,/}/d' "$T/forced/session_affinity/summary.json" >"$T/forced_sa.json"
cmp -s "$T/attr_sa.json" "$T/forced_sa.json" && ok ||
	bad "the attributed run differs from the run with the mechanisms forced: $(diff "$T/attr_sa.json" "$T/forced_sa.json" | head -n 20)"
grep -q '^| | round_robin | session_affinity | kv_cost (baseline) |$' "$T/rep_shed/report.md" &&
	grep -q '<td><strong>[0-9.]*</strong></td>' "$T/rep_shed/report.html" && ok ||
	bad "the report's table does not mark the baseline and best figures"
expect 2 "comparison.csv" plot "$T"
gnuplot -e "csv='tests/data/sweep.csv'; x='workload.sessions_per_s'; fmt='png'; out='$T/load.png'" plot/common.gp plot/latency_load.gp &&
	gnuplot -e "csv='tests/data/sweep.csv'; x='workload.sessions_per_s'; fmt='svg'; out='$T/load.svg'" plot/common.gp plot/latency_load.gp &&
	[ -s "$T/load.png" ] && [ -s "$T/load.svg" ] && ok || bad "latency_load.gp failed on the fixture"

# trace events: a Chrome trace with the three kinds of event, nothing half-written
expect 0 "" run "$T/small.json" --out "$T/te" --trace-events "$T/te.json" --quiet --set cluster.nodes_per_server=1 --policy round_robin --set router.migration=auto
head -c 40 "$T/te.json" | grep -q '"traceEvents"' && grep -q '"name":"route"' "$T/te.json" &&
	grep -q '"name":"decode"' "$T/te.json" && grep -q '"name":"kv transfer"' "$T/te.json" &&
	tail -c 80 "$T/te.json" | grep -q '"truncated":false}}' && ok || bad "trace events incomplete"
expect 2 "belongs to 'kvsim run'" compare "$T/small.json" --policies round_robin --trace-events "$T/x.json"

# sweep: -j 1 and -j 2 agree; emitted jobs run by GNU parallel merge to the
# same table; a partial merge names what is missing; a failing point is
# reported while the others finish
V="--vary workload.sessions_per_s=1,3 --vary cluster.nodes=1,2"
expect 0 "" sweep "$T/small.json" $V -j 1 --out "$T/sw1" --quiet
expect 0 "wrote" sweep "$T/small.json" $V -j 2 --out "$T/sw2"
cmp -s "$T/sw1/sweep.csv" "$T/sw2/sweep.csv" && ok || bad "sweep -j 1 and -j 2 differ"
[ "$(wc -l <"$T/sw1/sweep.csv")" -eq 5 ] && head -1 "$T/sw1/sweep.csv" | grep -q "^workload.sessions_per_s,cluster.nodes,point,seed," && ok ||
	bad "sweep.csv is not one row per point"
[ -s "$T/sw1/plots/latency_load.png" ] && [ -s "$T/sw1/plots/latency_load.svg" ] && ok || bad "no latency_load plot for a rate sweep"
expect 0 "wrote 4 jobs" sweep "$T/small.json" $V --out "$T/sw3" --emit-jobs "$T/jobs.txt" --emit-slurm "$T/job.slurm"
head -n 2 "$T/jobs.txt" | parallel --will-cite --jobs 2
expect 2 "point 2 (workload.sessions_per_s=3;cluster.nodes=1) missing" sweep --merge "$T/sw3"
SLURM_ARRAY_TASK_ID=2 bash "$T/job.slurm" && ok || bad "the Slurm array script failed"
tail -n 1 "$T/jobs.txt" | parallel --will-cite --jobs 2
expect 0 "wrote" sweep --merge "$T/sw3"
cmp -s "$T/sw1/sweep.csv" "$T/sw3/sweep.csv" && ok || bad "GNU parallel + merge differs from the -j run"
expect 2 "point 0 (cluster.nodes=0): " sweep "$T/small.json" --vary cluster.nodes=0,2 --out "$T/sw4" --quiet
[ "$(wc -l <"$T/sw4/sweep.csv")" -eq 2 ] && [ -s "$T/sw4/points/p000000/error.txt" ] && ok || bad "a failing point stopped the sweep"
expect 2 "--vary" sweep "$T/small.json"
# a varied value with trailing text is the string it reads as: a failed
# point with the file's message, never a run of its leading number
expect 2 'point 1 (cluster.nodes=4x): cluster.nodes: expected an integer in [1, 1000000], got a string' sweep "$T/small.json" --vary cluster.nodes=2,4x --out "$T/sw5" --quiet
[ "$(wc -l <"$T/sw5/sweep.csv")" -eq 2 ] && ! grep -q '^4x,' "$T/sw5/sweep.csv" && ok || bad "--vary cluster.nodes=4x ran as 4 nodes"

# plan: a fixed-cost single-server queue per node at 350 req/s of 10 ms each
# needs ceil(350 * 0.01) = 4 nodes (3 are overloaded); the answer meets the SLO
# and one node fewer does not, both re-run here
cat >"$T/md1.json" <<'JSON'
{"duration_s": 200, "cluster": {"nodes": 1, "engine": {"max_num_seqs": 1, "prefix_caching": false},
 "cost_model": {"kind": "fixed", "base_ms": 2, "per_token_ms": 0.08}},
 "router": {"policy": "random", "params": {}, "max_queue_per_node": 100000000},
 "workload": {"kind": "open", "rate_per_s": 350, "max_requests": 70000,
 "input_tokens": {"dist": "constant", "value": 100}, "output_tokens": {"dist": "constant", "value": 1}}}
JSON
expect 0 "smallest cluster 4" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --out "$T/plan"
grep -q '"nodes":	4' "$T/plan/plan.json" && ok || bad "plan.json lacks the answer"
p99() { sed -n '/"ttft_s"/,/}/s/.*"p99":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$1"; }
"$KVSIM" run "$T/md1.json" --set cluster.nodes=4 --out "$T/n4" --quiet
"$KVSIM" run "$T/md1.json" --set cluster.nodes=3 --out "$T/n3" --quiet
awk -v a="$(p99 "$T/n4/summary.json")" -v b="$(p99 "$T/n3/summary.json")" 'BEGIN { exit !(a <= 1 && b > 1) }' && ok ||
	bad "plan's answer does not meet the SLO or one node fewer does"
# the answer names its binding SLO: the failing probe next to it, 3 nodes, whose own run
# has TTFT p99 over 1 s (the value printed) and is not steady (named beside it)
grep -q "^H100-SXM: bound by TTFT p99 $(awk -v v="$(p99 "$T/n3/summary.json")" 'BEGIN { printf "%.4g", v }') s > 1 s at cluster.nodes=3 (also not steady)$" "$T/out" &&
	! grep -q '"steady":[[:space:]]*true' "$T/n3/summary.json" && ok ||
	bad "plan did not name TTFT p99 at 3 nodes as the binding SLO: $(grep 'bound by' "$T/out")"
grep -q '"slo":	"ttft_p99"' "$T/plan/plan.json" && grep -q '"at":	"cluster.nodes=3"' "$T/plan/plan.json" &&
	grep -q '"also":	\["steady"\]' "$T/plan/plan.json" && ok || bad "plan.json lacks the binding SLO"
expect 0 "H100-SXM: no SLO bound within the range (--min 5 reached)" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --min 5 --out "$T/plan_min"
grep -q '"slo":	null' "$T/plan_min/plan.json" && ok || bad "plan.json names a binding SLO where none failed"
expect 1 "no node count in [1, 2] meets the SLOs" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --max 2 --out "$T/plan2"
expect 0 "rank" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --gpus H100-SXM,L40S --out "$T/plan3"
expect 0 "highest rate" plan "$T/md1.json" --slo ttft_p99=1 --search rate --set cluster.nodes=4 --out "$T/plan4"
expect 2 "--search nodes or --search rate" plan "$T/md1.json" --slo ttft_p99=1
expect 2 "unknown GPU" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --gpus H900
# plan --policies: one search per policy, on the same requests, ranked policy x GPU. Chat on
# two H100s for 5 minutes, TTFT p99 <= 0.5 s and TPOT p99 <= 30 ms: sticky sessions reuse
# each session's cached history where round robin recomputes it, so they sustain the higher
# rate and rank first; each policy's answer is its own --policy plan's; -j 2 prints and
# writes what -j 1 does
CHAT="workloads/scenarios/chat.json --set duration_s=300 --set cluster.nodes=2 --set workload.max_sessions=100000 --slo ttft_p99=0.5 --slo tpot_p99=0.03 --search rate"
expect 0 "policy x GPU, ranked by output tokens per dollar" plan $CHAT --policies round_robin,session_affinity -j 2 --out "$T/pol"
cp "$T/out" "$T/pol.out"
awk '$1 ~ /^[0-9]+$/ && $3 == "H100-SXM" { r[$2] = $1; v[$2] = $4 }
	END { exit !(r["session_affinity"] == 1 && r["round_robin"] == 2 && v["session_affinity"] > v["round_robin"]) }' "$T/pol.out" && ok ||
	bad "plan --policies did not rank session_affinity over round_robin on chat: $(cat "$T/pol.out")"
for pol in round_robin session_affinity; do
	"$KVSIM" plan $CHAT --policy $pol --out "$T/pol_$pol" >"$T/pol_$pol.out" 2>&1
	want=$(sed -n 's/^H100-SXM: highest rate \([0-9.]*\) .*/\1/p' "$T/pol_$pol.out")
	[ -n "$want" ] && grep -q "^$pol, H100-SXM: highest rate $want " "$T/pol.out" && ok ||
		bad "plan --policies' answer for $pol differs from plan --policy $pol's ($want)"
done
grep -q "^round_robin, H100-SXM: bound by " "$T/pol.out" && grep -q "^session_affinity, H100-SXM: bound by " "$T/pol.out" &&
	[ "$(grep -c '"policy":	"session_affinity"' "$T/pol/plan.json")" -gt 2 ] &&
	grep -q '"ranking":' "$T/pol/plan.json" && ok || bad "plan --policies lacks a binding SLO per answer or plan.json's ranking"
"$KVSIM" plan $CHAT --policies round_robin,session_affinity --out "$T/pol" >"$T/pol1.out" 2>&1
cp "$T/pol/plan.json" "$T/pol1.json"
"$KVSIM" plan $CHAT --policies round_robin,session_affinity -j 2 --out "$T/pol" >/dev/null 2>&1
cmp -s "$T/pol.out" "$T/pol1.out" && cmp -s "$T/pol/plan.json" "$T/pol1.json" && ok || bad "plan --policies -j 2 differs from -j 1"
expect 2 '--policies: unknown policy "magic"' plan "$T/md1.json" --slo ttft_p99=1 --search nodes --policies random,magic
expect 2 '--policies: "random" given twice' plan "$T/md1.json" --slo ttft_p99=1 --search nodes --policies random,random
expect 2 "give --policy P or --policies a,b,c, not both" plan "$T/md1.json" --slo ttft_p99=1 --search nodes --policies random --policy random
expect 2 "--policies goes with --search nodes, rate or pd_ratio" plan "$T/md1.json" --slo ttft_p99=1 --search autoscale --policies random
# plan --search autoscale: the static row is the node search's answer (4, above; the
# scenario's own autoscaler set to none for it); each autoscaler runs once over the whole
# run, starting from the scenario's nodes clamped to its bounds. #2 holds 6 nodes all
# run and meets the SLO at 1.5 times static's cost; #1 holds at most 2 (half the load
# waits) and misses: ranked static, #2, then #1 marked
AS1='{"kind":"hpa","metric":"queue_per_node","target":4,"max_nodes":2,"tick_s":5,"startup_s":10,"startup_jitter_s":0}'
AS2='{"kind":"hpa","metric":"queue_per_node","target":1000,"min_nodes":6,"max_nodes":6}'
expect 0 "static: smallest cluster 4" plan "$T/md1.json" --slo ttft_p99=1 --search autoscale \
	--autoscaler "$AS1" --autoscaler "$AS2" --out "$T/day"
static_n=$(sed -n 's/^[[:space:]]*"nodes":[[:space:]]*\([0-9]*\),*$/\1/p' "$T/plan/plan.json" | head -n 1)
rows=$(awk '/^rank fleet/ { t = 1; next } /^wrote / { t = 0 } t { printf "%s %s %s|", $1, $2, $3 }' "$T/out")
[ "$rows" = "1 static $static_n|2 #2 hpa|- #1 hpa|" ] && grep -q '^- *#1 hpa .*misses the SLOs$' "$T/out" && ok ||
	bad "plan --search autoscale ranked '$rows' (static $static_n from --search nodes)"
# each autoscaled row is its own run's summary: #1's GPU-hours are kvsim run's
"$KVSIM" run "$T/md1.json" --set "cluster.autoscaler=$AS1" --set slo.ttft_p99_s=1 --out "$T/day_as1" --quiet
want=$(sed -n 's/^	"gpu_hours":	\(.*\),$/\1/p' "$T/day_as1/summary.json")
got=$(awk '/"fleet":	"#1 hpa/ { f = 1 } f && /"gpu_hours":/ { sub(/.*"gpu_hours":[[:space:]]*/, ""); sub(/,$/, ""); print; exit }' "$T/day/plan.json")
[ -n "$want" ] && [ "$want" = "$got" ] && awk -v g="$got" 'BEGIN { exit !(g > 0) }' && ok ||
	bad "plan's GPU-hours of #1 ($got) differ from its run's summary ($want)"
grep -q '"search":	"autoscale"' "$T/day/plan.json" && grep -q '"rank_by":	"cost"' "$T/day/plan.json" && ok ||
	bad "plan.json of --search autoscale lacks its search and ranking"
# without --autoscaler: the scenario's own (static still 4: set to none for the search),
# else the default HPA, max_nodes twice the static answer
expect 0 "1    static 4 " plan "$T/md1.json" --slo ttft_p99=1 --search autoscale --rank gpu_hours \
	--set "cluster.autoscaler=$AS2" --set cluster.nodes=6 --out "$T/day2"
grep -q "ranked by GPU-hours" "$T/out" && grep -q "^2    scenario hpa queue_per_node 1000 " "$T/out" && ok ||
	bad "plan --search autoscale did not run the scenario's own autoscaler: $(cat "$T/out")"
expect 0 "default hpa queue_per_node 4" plan "$T/md1.json" --slo ttft_p99=1 --search autoscale --rank energy --out "$T/day3"
grep -q '"max_nodes":	8' "$T/day3/plan.json" && grep -q "ranked by energy (kWh)" "$T/out" && ok ||
	bad "the default autoscaler's max_nodes is not twice the static answer"
expect 1 "misses the SLOs" plan "$T/md1.json" --slo ttft_p99=1 --search autoscale --max 2 --autoscaler "$AS1" --out "$T/day4"

# GNU options (cli/common.c): --opt=VALUE and --opt VALUE alike, short
# aliases, options before or after the scenario, "--" ends the options,
# values that begin with '-', repeated options accumulate
"$KVSIM" run "$T/small.json" --out="$T/eq1" --seed=2 --policy=round_robin --quiet
"$KVSIM" run --quiet --seed 2 --policy round_robin --out "$T/eq2" "$T/small.json"
"$KVSIM" run -q -p round_robin -o "$T/eq3" -s seed=2 "$T/small.json" >"$T/eq3.out"
cmp -s "$T/eq1/requests.csv" "$T/eq2/requests.csv" && cmp -s "$T/eq1/requests.csv" "$T/eq3/requests.csv" && ok ||
	bad "--opt=value, --opt value and short aliases ran differently"
[ ! -s "$T/eq3.out" ] && ok || bad "-q printed something"
grep -q '"policy":	"round_robin"' "$T/eq3/summary.json" && ok || bad "-p did not choose the policy"
expect 0 "3 x H100-SXM" validate --set=cluster.nodes=3 "$T/empty_obj.json"
expect 0 "(tp 4) serving Llama-3-70B" validate "$T/empty_obj.json" -s cluster.model=Llama-3-70B --set=cluster.tp=4
expect 0 "policy kv_cost" validate "$T/empty_obj.json" -pkv_cost
expect 2 "cluster.nodes: expected an integer in [1, 1000000], got -2" validate "$T/empty_obj.json" --set cluster.nodes=-2
expect 2 "cluster.nodes: expected an integer in [1, 1000000], got -3" validate "$T/empty_obj.json" --set=cluster.nodes=-3
expect 2 "cluster.nodes: expected an integer in [1, 1000000], got -4" validate "$T/empty_obj.json" -s cluster.nodes=-4
expect 2 '--seed: expected an integer in [0, 2^53], got "-5"' run --seed=-5
cp "$T/empty_obj.json" "$T/-dash.json"
(cd "$T" && "$OLDPWD/$KVSIM" validate -- -dash.json >/dev/null) && ok || bad "-- did not end the options"
expect 2 "more than one scenario given" validate -- "$T/empty_obj.json" --quiet
expect 0 "worse, within tolerance" diff --tolerance=15 "$T/base.json" "$T/worse.json"
expect 0 "iteration" cost --gpu=A100-80G --model=Llama-2-7B --prefill=128
expect 2 '--prefill: expected a whole number >= 0, got "x"' cost --gpu=A100-80G --model=Llama-2-7B --prefill=x
expect 0 '"100":' trace stats --format=mooncake --json --cache-blocks=100 "$T/bad.jsonl" --skip-bad
expect 0 "" trace gen -o "$T/gen2.jsonl" -q --seed=1 "$T/long.json"
[ -s "$T/gen2.jsonl" ] && [ ! -s "$T/out" ] && ok || bad "trace gen -o -q wrote no trace or printed something"
expect 0 "" compare "$T/small.json" -p round_robin,least_loaded -q -o "$T/cmp_short" --no-perf
[ -s "$T/cmp_short/least_loaded/summary.json" ] && ok || bad "compare -p -o wrote nothing"
expect 0 "" sweep "$T/small.json" --vary=cluster.nodes=1,2 -j2 -o "$T/sw_eq" -q
[ "$(wc -l <"$T/sw_eq/sweep.csv")" -eq 3 ] && ok || bad "sweep --vary= -j2 did not run 2 points"
# unknown options, missing values, misplaced options: exit 2 and a message
expect 2 "kvsim run: unknown option --bogus" run --bogus
expect 2 "kvsim run: unknown option -Z" run -Z
expect 2 "kvsim compare: unknown option --bogus" compare --bogus=1 -p all
expect 2 "kvsim trace stats: unknown option --frob" trace stats --frob "$T/bad.jsonl"
expect 2 "kvsim sweep: unknown option --frob" sweep --frob
expect 2 "kvsim run: --out needs a value" run --out
expect 2 "kvsim run: -o needs a value" run -o
expect 2 "kvsim run: --quiet takes no value" run --quiet=yes
expect 2 "ambiguous option --p (--policies, --plot)" compare --p x
expect 2 "--policies belongs to 'kvsim compare'" run --policies all
expect 2 "kvsim list: expected what to list: policies|mechanisms|gpus|models|links|servers|workloads" list
grep -q "Try 'kvsim list --help'" "$T/err" && ok || bad "a usage error does not point at --help"

# usage errors, exactly: exit 2, nothing on stdout, and on stderr
# "kvsim CMD: MESSAGE" and the line that points at --help.
# usage CMD 'MESSAGE' ARGS...
usage() {
	ucmd=$1
	umsg=$2
	shift 2
	expect 2 "" "$@"
	printf 'kvsim %s: %s\nTry '\''kvsim %s --help'\''.\n' "$ucmd" "$umsg" "$ucmd" >"$T/want"
	cmp -s "$T/want" "$T/err" && [ ! -s "$T/out" ] && ok ||
		bad "kvsim $*: stderr '$(cat "$T/err")' and stdout '$(head -c 300 "$T/out")'; expected '$(cat "$T/want")' and nothing"
}
# lists: an empty one is an error, never "nothing to do"; blanks around
# items are dropped in every list option; too many items or too long a
# value is an error, never cut
usage plan "--gpus: expected a comma-separated list of GPU names" plan --slo=ttft_p99=2 --search=nodes --gpus=
usage plan "--gpus: expected a comma-separated list of GPU names" plan --slo=ttft_p99=2 --search=nodes --gpus=,
usage plan "--gpus: expected a comma-separated list of GPU names" plan --slo=ttft_p99=2 --search=nodes --gpus ' , '
usage plan "--gpus: too many GPU names (at most 32)" plan --slo=ttft_p99=2 --search=nodes --gpus "$(printf 'H100-SXM,%.0s' $(seq 33))"
expect 0 "L40S: smallest cluster 1 " plan "$T/small.json" --slo ttft_p99=100 --search nodes --max 2 --gpus ' H100-SXM , L40S' --out "$T/plan_sp"
grep -q '"gpu":	"L40S"' "$T/plan_sp/plan.json" && grep -q '"gpu":	"H100-SXM"' "$T/plan_sp/plan.json" && ok ||
	bad "plan --gpus ' H100-SXM , L40S' did not search both"
usage plan "--rate-key: too long (at most 200 characters)" plan --slo ttft_p99=1 --search rate --rate-key "workload.$(printf 'x%.0s' $(seq 200))"
usage plan '--rate-key: expected a scenario key such as workload.rate_per_s, got an empty value' plan --slo ttft_p99=1 --search rate --rate-key=
usage plan '--slo: expected ttft_p99=SECONDS or tpot_p99=SECONDS, a number of seconds > 0 with no unit (e.g. ttft_p99=1.0), got "ttft_p99="' plan --slo ttft_p99= --search nodes
usage plan "--autoscaler #2: expected a JSON object such as '{\"kind\": \"hpa\", \"metric\": \"queue_per_node\", \"target\": 4, \"max_nodes\": 8}', got \"{kind\"" \
	plan --slo ttft_p99=1 --search autoscale --autoscaler "$AS1" --autoscaler '{kind'
# pool names are escaped for each output: a newline never splits a row, '|'
# never adds a Markdown column, '<script>' never lands as markup
printf '{"duration_s": 5, "cluster": {"pools": [{"name": "a|b\\nc <script>x</script>", "nodes": 1}, {"name": "**z**", "nodes": 1}]}}' >"$T/pn.json"
"$KVSIM" compare "$T/pn.json" --policies round_robin --out "$T/pn" --report --no-perf >"$T/pn.txt" 2>/dev/null
grep -qF '  round_robin a|b\nc <script>x</script> mixed' "$T/pn.txt" && [ "$(grep -c '^  round_robin ' "$T/pn.txt")" -eq 3 ] && ok ||
	bad "a pool name with a newline split the text table: $(grep -A1 'a|b' "$T/pn.txt")"
grep -qF '| round_robin | a\|b\nc &lt;script&gt;x&lt;/script&gt; | mixed |' "$T/pn/report.md" &&
	grep -qF '| round_robin | \*\*z\*\* | mixed |' "$T/pn/report.md" && ! grep '^|' "$T/pn/report.md" | grep -q '<script>x' && ok ||
	bad "report.md holds a pool name unescaped: $(grep -n 'script\|z\*' "$T/pn/report.md" | head -3)"
# a figure with no sample is n/a in every table, null in JSON, "no data" in
# the verdict; diff and sweep --merge take it
printf '{"duration_s": 5, "cluster": {"nodes": 1}, "faults": [{"kind": "crash", "node": 0, "at_s": 0}]}' >"$T/nd.json"
expect 0 "TTFT p99 (ms)                      n/a               n/a" compare "$T/nd.json" --policies round_robin,least_loaded --out "$T/nd" --report --no-perf
grep -q '"p99":	null' "$T/nd/round_robin/summary.json" && grep -q '^round_robin,12,0,12,0,n/a,n/a,' "$T/nd/comparison.csv" &&
	grep -qF -- '- TTFT p99: no data' "$T/nd/report.md" && ! grep -q 'TTFT p99: all' "$T/nd/report.md" && ok ||
	bad "no samples were not n/a, null and no data: $(grep -n 'TTFT p99' "$T/nd/report.md" | head -2)"
expect 0 "" diff "$T/nd/round_robin/summary.json" "$T/nd/least_loaded/summary.json"
expect 1 "REGRESSION (no data)" diff "$T/cmp_short/round_robin/summary.json" "$T/nd/round_robin/summary.json"
expect 0 "" sweep "$T/nd.json" --vary seed=1,2 --out "$T/nd_sw" --quiet
grep -q '^1,0,[0-9]*,[0-9]*,0,[0-9]*,0,n/a,n/a,' "$T/nd_sw/sweep.csv" && ok || bad "sweep.csv lacks n/a: $(sed -n 2p "$T/nd_sw/sweep.csv")"
# an unpriced GPU has no cost: n/a and null, never $0
printf '{"gpus": {"X1": {"bf16_flops": 1e15, "hbm_bytes": 100e9, "hbm_bytes_per_s": 4e12, "tdp_w": 800, "link": "nvlink4"}}}' >"$T/cat_x1.json"
expect 0 "cost (USD)                         n/a" run "$T/small.json" --catalog "$T/cat_x1.json" --set cluster.gpu=X1 --out "$T/x1"
grep -q '"cost_usd":	null' "$T/x1/summary.json" && ok || bad "an unpriced GPU's cost is not null: $(grep cost_usd "$T/x1/summary.json")"
# -q silences every table format
"$KVSIM" compare "$T/small.json" -p round_robin,least_loaded -q --format md -o "$T/q_md" --no-perf >"$T/q_md.out" 2>&1
[ ! -s "$T/q_md.out" ] && ok || bad "compare -q --format md printed: $(head -c 200 "$T/q_md.out")"
# command-line values as strict as the same values in a file
usage plan '--slo: expected ttft_p99=SECONDS or tpot_p99=SECONDS, a number of seconds > 0 with no unit (e.g. ttft_p99=1.0), got "ttft_p99=1000ms"' plan --slo ttft_p99=1000ms --search nodes
usage plan "--autoscaler #1: expected a JSON object such as '{\"kind\": \"hpa\", \"metric\": \"queue_per_node\", \"target\": 4, \"max_nodes\": 8}', got \"{\"kind\":\"planner\",\"max_nodes\":4}x\"" plan --slo ttft_p99=1 --search autoscale --autoscaler '{"kind":"planner","max_nodes":4}x'
usage plan '--autoscaler #1: cluster.autoscaler.max_nodes: duplicate key (given more than once; expected once)' plan --slo ttft_p99=1 --search autoscale --autoscaler '{"kind":"planner","max_nodes":4,"max_nodes":5}'
usage plan '--rank: expected cost, energy or gpu_hours, got "dollars"' plan --slo ttft_p99=1 --search autoscale --rank dollars
usage diff "--metrics: expected a comma-separated list of metric names" diff --metrics= "$T/base.json" "$T/worse.json"
usage diff "--metrics: expected a comma-separated list of metric names" diff --metrics=, "$T/base.json" "$T/worse.json"
usage diff "--metrics: the list is too long (at most 4095 characters)" diff --metrics="$(printf 'ttft_s.p99,%.0s' $(seq 400))" "$T/base.json" "$T/worse.json"
expect 1 "2 metrics compared: 1 regressions" diff --metrics ' ttft_s.p99 , prefix_hit_ratio ' "$T/base.json" "$T/worse.json"
usage compare "--policies: expected a comma-separated list of policy names" compare "$T/small.json" --policies=,
usage compare "--policies: the list is too long (at most 1023 characters)" compare "$T/small.json" --policies="$(printf 'round_robin,%.0s' $(seq 100))"
expect 0 "" compare "$T/small.json" --policies ' round_robin , least_loaded ' --out "$T/cmp_sp" --quiet
[ -s "$T/cmp_sp/least_loaded/summary.json" ] && ok || bad "compare --policies with blanks did not run least_loaded"

# compare's table: plain when piped (no escapes, 17-wide columns), the best
# figure of each row bold on a terminal unless NO_COLOR is set; --baseline
# adds each figure's change; --format md|csv|json
cat >"$T/win.json" <<'JSON'
{"name": "small", "duration_s": 60,
 "cluster": {"nodes": 2},
 "workload": {"kind": "chat", "sessions_per_s": 2, "max_sessions": 60}}
JSON
"$KVSIM" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --no-perf >"$T/win.txt" 2>/dev/null
esc=$(printf '\033')
! grep -q "$esc" "$T/win.txt" && ok || bad "compare wrote escapes into a pipe"
grep -qxF "$(printf '%-20s %17s %17s' 'TTFT p99 (ms)' 66.14 62.37)" "$T/win.txt" && ok || bad "compare's piped table changed: $(grep 'TTFT p99' "$T/win.txt")"
"$KVSIM" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --no-perf --format text >"$T/win_text.txt" 2>/dev/null
# (the wall-clock row differs between any two runs)
grep -v '^wall s ' "$T/win.txt" >"$T/win_a.txt"
grep -v '^wall s ' "$T/win_text.txt" >"$T/win_b.txt"
cmp -s "$T/win_a.txt" "$T/win_b.txt" && ok || bad "compare --format text differs from the default"
if command -v script >/dev/null 2>&1; then
	NO_COLOR= script -qc "$KVSIM compare $T/win.json -p round_robin,session_affinity -o $T/win_tty --no-perf 2>/dev/null" /dev/null >"$T/tty.txt"
	# higher is better: 0.769 beats 0.685 beyond noise; TTFT p99 62.37 ms
	# against 66.14 is within one seed's noise (5 ms + 10%): no mark; a row
	# where all tie has no mark
	grep -qF "0.685             ${esc}[1m0.769${esc}[0m" "$T/tty.txt" && ok || bad "compare on a terminal did not mark 0.769 bold: $(grep 'prefix hit' "$T/tty.txt" | od -c | head -3)"
	grep -q "^TTFT p99 (ms)  *66.14  *62.37.\$" "$T/tty.txt" && ok || bad "compare on a terminal marked a difference within noise: $(grep 'TTFT p99' "$T/tty.txt" | od -c | head -3)"
	grep -q "^  shed  *0  *0.\$" "$T/tty.txt" && ok || bad "compare on a terminal marked a row where all tie: $(grep '  shed' "$T/tty.txt" | od -c | head -3)"
	NO_COLOR=1 script -qc "$KVSIM compare $T/win.json -p round_robin,session_affinity -o $T/win_tty --no-perf 2>/dev/null" /dev/null >"$T/nocolor.txt"
	grep -q "TTFT p99" "$T/nocolor.txt" && ! grep -q "$esc" "$T/nocolor.txt" && ok || bad "compare with NO_COLOR=1 on a terminal wrote escapes"
fi
# TTFT p99 (62.37 - 66.14) / 66.14 = -5.7%; TPOT p99 (7.26 - 7.27) / 7.27 = -0.1%; rows
# that say no direction (arrived) show no change
expect 0 "TTFT p99 (ms)                               66.14                62.37 (-5.7%)" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --baseline round_robin
grep -qxF 'TPOT p99 (ms)                                7.27                 7.26 (-0.1%)' "$T/out" && ok || bad "compare --baseline: $(grep 'TPOT p99' "$T/out")"
grep -qxF 'requests arrived                              121                          121' "$T/out" && ok || bad "compare --baseline: $(grep 'arrived' "$T/out")"
grep -qF 'round_robin (baseline)' "$T/out" && ok || bad "compare --baseline did not name the baseline column"
expect 0 "66.14 (+6.0%)" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --baseline session_affinity
expect 0 "| prefix hit ratio | 0.685 | **0.769** |" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --format md
grep -qxF '| TTFT p99 (ms) | 66.14 | 62.37 |' "$T/out" && ok || bad "compare --format md marked a difference within noise: $(grep 'TTFT p99' "$T/out")"
grep -qxF '| | round_robin | session_affinity |' "$T/out" && grep -qxF '| shed | 0 | 0 |' "$T/out" && ok || bad "compare --format md: $(head -c 300 "$T/out")"
expect 0 "" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --format csv
cmp -s "$T/out" "$T/win/comparison.csv" && ok || bad "compare --format csv differs from comparison.csv"
expect 0 "" compare "$T/win.json" -p round_robin,session_affinity -o "$T/win" --format json --no-perf
cmp -s "$T/out" "$T/win/comparison.json" && ok || bad "compare --format json differs from comparison.json"
usage compare '--format: expected text, md, csv or json, got "xml"' compare "$T/win.json" -p round_robin --format xml
usage compare '--baseline: "least_loaded" is not one of the compared policies (round_robin, session_affinity)' compare "$T/win.json" -p round_robin,session_affinity --baseline least_loaded -o "$T/nobase"
[ ! -e "$T/nobase" ] && ok || bad "compare with a bad --baseline created $T/nobase"
usage compare '--baseline: "nope" is not one of the compared policies (round_robin)' compare "$T/win.json" -p round_robin --baseline nope
expect 2 "--baseline belongs to 'kvsim compare'" run "$T/small.json" --baseline round_robin
usage "trace stats" "--cache-blocks: expected a comma-separated list of block counts" trace stats --cache-blocks= "$T/bad.jsonl"
usage "trace stats" '--cache-blocks: expected block counts, e.g. 1000,10000, got "1x"' trace stats --cache-blocks=10,1x "$T/bad.jsonl"
usage "trace stats" "--cache-blocks: too many block counts (at most 32)" trace stats --cache-blocks="$(seq -s, 33)" "$T/bad.jsonl"
expect 0 '"100":' trace stats --format=mooncake --json --cache-blocks=' 100 , 200' "$T/bad.jsonl" --skip-bad
# numbers: strtod and strtol must take all of the value, and no blank
usage diff '--tolerance: expected a percentage in [0, 1e6], got an empty value' diff --tolerance= "$T/base.json" "$T/worse.json"
for v in x -1 inf nan ' 5' 5%; do
	usage diff "--tolerance: expected a percentage in [0, 1e6], got \"$v\"" diff --tolerance="$v" "$T/base.json" "$T/worse.json"
done
usage run '--seed: expected an integer in [0, 2^53], got an empty value' run --seed=
usage run '--seed: expected an integer in [0, 2^53], got " 3"' run --seed ' 3'
usage run '--seed: expected an integer in [0, 2^53], got "9007199254740993"' run --seed 9007199254740993
usage sweep '--jobs: expected 1 to 1024 workers, got " 2"' sweep "$T/small.json" --vary cluster.nodes=1 -j ' 2'
usage sweep '--jobs: expected 1 to 1024 workers, got "+2"' sweep "$T/small.json" --vary cluster.nodes=1 --jobs=+2
usage cost '--tp: expected a whole number >= 1, got " 2"' cost --gpu H100-SXM --model Llama-3-8B --prefill 1 --tp ' 2'
usage cost '--prefill: expected a whole number >= 0, got an empty value' cost --gpu H100-SXM --model Llama-3-8B --prefill=
usage run "too many --set options (at most 256)" run $(for i in $(seq 257); do printf -- '-s seed=%d ' "$i"; done)
# files and folders: an empty name is an error that says which was expected
usage run "--out: expected a folder, got an empty value" run --out=
usage run "--out: expected a folder, got an empty value" run -o ''
usage run "--trace-events: expected a file, got an empty value" run --trace-events=
usage run "--catalog: expected a file, got an empty value" run --catalog=
usage "trace gen" "--out: expected a file, got an empty value" trace gen --out=
usage sweep "--emit-jobs: expected a file, got an empty value" sweep "$T/small.json" --vary cluster.nodes=1 --emit-jobs=
usage sweep "--emit-slurm: expected a file, got an empty value" sweep "$T/small.json" --vary cluster.nodes=1 --emit-slurm=
usage sweep "--merge: expected a folder, got an empty value" sweep --merge=
usage cost "--profiles: expected a folder, got an empty value" cost --gpu A100-80G --model Llama-3-8B --prefill 8 --profiles=
# a --profiles path with a quote is a path, not broken JSON
expect 2 "$T/a\"b/compute/a100/" cost --gpu A100-80G --model Llama-3-8B --prefill 8 --cost-model profile --profiles "$T/a\"b"
# --help takes no value; an option with no name is unknown as written
usage run "--help takes no value" run --help=x
usage "trace stats" "--help takes no value" trace stats --help=
usage version "--help takes no value" version --help=x
usage run "unknown option --=x" run --=x
# extra and missing arguments are named; list names its topics
usage help "unexpected argument x" help trace stats x
usage help "unexpected argument x" help run x
usage help 'no command "trace x"' help trace x
usage list "unexpected argument b" list a b
usage list "expected what to list: policies|mechanisms|gpus|models|links|servers|workloads" list
usage list 'unknown list "bogus" (expected policies|mechanisms|gpus|models|links|servers|workloads)' list bogus
usage version "unexpected argument x" version x
usage plot "expected DIR, a 'kvsim compare' output folder" plot
for c in help version; do
	"$KVSIM" $c --help >"$T/h"
	[ "$(grep -c . "$T/h")" -ge 5 ] && ok || bad "kvsim $c --help has no description"
done
"$KVSIM" --help | grep -q -- "-q, -j N)" && ok || bad "kvsim --help leaves -j out of the short aliases"

# kvsim --help lists every command of the table; each has --help, whose
# lines fit 80 columns; the completion script offers the same options
cmds="run compare validate list sweep plan plot diff trace cost calibrate version completion help"
"$KVSIM" --help >"$T/help"
for c in $cmds; do
	grep -q "^  $c " "$T/help" && ok || bad "kvsim --help does not list $c"
	expect 0 "usage: kvsim $c" "$c" --help
	awk -v c="$c" 'length > 80 { print "FAIL: kvsim " c " --help: line over 80 columns: " $0; exit 1 }' "$T/out" && ok || fail=$((fail + 1))
done
[ "$(grep -c '^  [a-z]' "$T/help")" -eq 16 ] && ok || bad "kvsim --help lists $(grep -c '^  [a-z]' "$T/help") commands, expected 16"
for c in "trace stats" "trace gen" "trace import"; do
	expect 0 "usage: kvsim $c" $c --help
	expect 0 "usage: kvsim $c" help $c
done
expect 2 'no command "nope"' help nope
expect 0 "usage: kvsim sweep" sweep -h

# bash completion from the same tables
"$KVSIM" completion bash >"$T/kvsim.bash" && ok || bad "kvsim completion bash failed"
# compopt works only while bash completes: a stand-in records "nospace"
complete_() {
	bash -c 'compopt() { [ "$2" = nospace ] && ns=" (nospace)"; }; . "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kvsim; echo "${COMPREPLY[*]}$ns"' _ "$T/kvsim.bash" "$@"
}
check_completion() {
	want=$1
	shift
	got=$(complete_ "$@")
	[ "$got" = "$want" ] && ok || bad "completion of '$*' gave '$got', expected '$want'"
}
check_completion "run" kvsim ru
check_completion "--out" kvsim run --ou
check_completion "--policies --plot" kvsim compare --p
check_completion "round_robin" kvsim run --policy round_r
check_completion "round_robin,session_affinity" kvsim compare -p round_robin,sess
check_completion "stats" kvsim trace st
check_completion "mooncake" kvsim trace stats --format moon
check_completion "gpus" kvsim list gp
check_completion "mechanisms" kvsim list mec
check_completion "H100-SXM" kvsim cost --gpu H1
check_completion "rate" kvsim plan --search = ra   # bash splits --search=ra at =
check_completion "" kvsim run --seed ""
mkdir -p "$T/blank"
: >"$T/blank/a b.json"
check_completion "ttft_p99= (nospace)" kvsim plan --slo tt
check_completion "ttft_p99= tpot_p99= (nospace)" kvsim plan --slo ""
check_completion "stats gen import" kvsim help trace ""
check_completion "" kvsim help run ""
check_completion "" kvsim help trace stats ""
check_completion "" kvsim list policies ""
check_completion "" kvsim version ""
check_completion "a100 h100" kvsim calibrate --gpu ""
check_completion "--out" kvsim run --ou
check_completion "" kvsim run -- --ou
check_completion "" kvsim run "$T/small.json" ""
check_completion "" kvsim trace stats "$T/bad.jsonl" ""
check_completion "--tolerance" kvsim diff a b --tol
check_completion "" kvsim diff a b ""
check_completion "round_robin" kvsim run --policy = round_r
# an option's value is not a positional, with or without '='
check_completion "" kvsim diff --tolerance = 5 a b ""
check_completion "" kvsim diff --tolerance 5 a b ""
check_completion "$T/blank/a b.json" kvsim diff --tolerance 5 a "$T/blank/a"
check_completion "$T/blank/a b.json" kvsim diff --tolerance = 5 a "$T/blank/a"
# a file name with a blank is one reply, not two
got=$(bash -c '. "$1"; COMP_WORDS=(kvsim run "$2"); COMP_CWORD=2; _kvsim; printf "%s|" "${COMPREPLY[@]}"' _ "$T/kvsim.bash" "$T/blank/a")
[ "$got" = "$T/blank/a b.json|" ] && ok || bad "completion split a file name with a blank: '$got'"
# after '--' the words are positionals: 'diff -- a' has one, so one more file
got=$(bash -c '. "$1"; COMP_WORDS=(kvsim diff -- "$2" "$3"); COMP_CWORD=4; _kvsim; printf "%s|" "${COMPREPLY[@]}"' _ "$T/kvsim.bash" x "$T/blank/a")
[ "$got" = "$T/blank/a b.json|" ] && ok || bad "completion after -- offered '$got'"
for c in run compare validate list sweep plan plot diff "trace stats" "trace gen" "trace import" cost calibrate version completion help; do
	"$KVSIM" $c --help >"$T/h" 2>&1
	opts=$(sed -n "/^	\"$c\")/,/;;\$/s/^		opts=\"\([^\"]*\)\"/\1/p" "$T/kvsim.bash")
	case $opts in *--help*) ok ;; *) bad "the completion script has no options for $c" ;; esac
	for o in $opts; do
		grep -qe "$o\\b" "$T/h" && ok || bad "completion offers $o, which kvsim $c --help lacks"
	done
done

# plan --search rate varies the workload's own rate key (wl_ops.rate_key)
grep -q '"search":	"workload.rate_per_s"' "$T/plan4/plan.json" && ok || bad "plan searched not workload.rate_per_s"
expect 0 "searching workload.sessions_per_s" plan "$T/small.json" --slo=ttft_p99=100 --search=rate --max=4 --out="$T/plan5"
expect 2 "a mix workload has no rate key; give --rate-key PATH" plan workloads/scenarios/mix.json --slo ttft_p99=1 --search rate

# --- rB: special files and links, whole result sets, interrupts, stdout, bounded outputs
# An output that is a symbolic link is written at its target (the link stays);
# a device or a FIFO is written in place, never replaced.
ln -s gen_target.jsonl "$T/gen_link"
expect 0 "" trace gen "$T/small.json" --out "$T/gen_link" --quiet
[ -L "$T/gen_link" ] && [ -s "$T/gen_target.jsonl" ] && ok ||
	bad "trace gen replaced the symbolic link instead of writing its target"
ln -s "$T/te_target.json" "$T/te_link"
expect 0 "" run "$T/small.json" --out "$T/linked" --trace-events "$T/te_link" --quiet
[ -L "$T/te_link" ] && [ -s "$T/te_target.json" ] && ok || bad "--trace-events replaced a symbolic link"
mkdir -p "$T/linked2"
ln -s ../summary_target.json "$T/linked2/summary.json"
expect 0 "" run "$T/small.json" --out "$T/linked2" --quiet
[ -L "$T/linked2/summary.json" ] && grep -q '"arrived"' "$T/summary_target.json" && ok ||
	bad "run replaced a symbolic link summary.json instead of writing its target"
if [ "$(id -u)" = 0 ]; then # a device of our own: never put the system's at risk
	mknod "$T/null" c 1 3 && dev=$T/null
else
	dev=/dev/null
fi
expect 0 "" trace gen "$T/small.json" --out "$dev" --quiet
[ -c "$dev" ] && ok || bad "trace gen --out $dev replaced the device"
expect 0 "" run "$T/small.json" --out "$T/devrun" --trace-events "$dev" --quiet
[ -c "$dev" ] && ok || bad "--trace-events $dev replaced the device"
mkfifo "$T/fifo"
timeout 20 cat "$T/fifo" >"$T/fifo.out" &
expect 0 "" trace gen "$T/small.json" --out "$T/fifo" --quiet
wait
[ -p "$T/fifo" ] && [ -s "$T/fifo.out" ] && ok || bad "trace gen replaced a FIFO instead of writing into it"
mkdir -p "$T/adir"
expect 3 "$T/adir: Is a directory" trace gen "$T/small.json" --out "$T/adir"
ls "$T" | grep -q 'tmp\.' && bad "temporaries left in $T" || ok

# A result set appears whole or not at all: a write that fails (a file-size
# limit; SIGXFSZ is ignored so the write reports EFBIG) leaves the folder as
# it was, with the reason.
"$KVSIM" run "$T/small.json" --out "$T/whole" --quiet
cp -r "$T/whole" "$T/whole.before"
(ulimit -f 10 && exec "$KVSIM" run "$T/small.json" --seed 7 --out "$T/whole" --quiet) 2>"$T/whole.err"
rc=$?
[ $rc = 3 ] && grep -q "File too large" "$T/whole.err" && ok ||
	bad "a run over the file-size limit: exit $rc, $(cat "$T/whole.err")"
diff -r "$T/whole.before" "$T/whole" >/dev/null && ok || bad "a failed run changed the result set in $T/whole"
(ulimit -f 10 && exec "$KVSIM" run "$T/small.json" --out "$T/fresh" --quiet) 2>/dev/null
[ ! -e "$T/fresh" ] && ok || bad "a failed run left $(ls "$T/fresh") in a fresh folder"
(ulimit -f 10 && exec "$KVSIM" compare "$T/small.json" --policies round_robin,least_loaded --out "$T/cmpfail" --quiet) 2>"$T/cmp.err"
rc=$?
[ $rc = 3 ] && grep -q "File too large" "$T/cmp.err" && [ ! -e "$T/cmpfail" ] && ok ||
	bad "a failed compare: exit $rc, left: $(find "$T/cmpfail" 2>/dev/null | head -5)"

# Interrupts: SIGINT or SIGTERM stops a run with exit 128 + the signal, one
# line, and no temporaries; a sweep's workers go down with it.
cat >"$T/long.json" <<'JSON'
{"name": "long", "duration_s": 100000, "cluster": {"nodes": 2},
 "workload": {"kind": "chat", "sessions_per_s": 20, "max_sessions": 100000000}}
JSON
# until a file named FRAGMENT exists under DIR (at most 20 s)
wait_for() {
	i=0
	while [ $i -lt 200 ] && ! find "$1" -name "$2" 2>/dev/null | grep -q .; do
		sleep 0.1
		i=$((i + 1))
	done
}
for sig in INT TERM; do
	# a script's background job starts with SIGINT ignored, and kvsim keeps
	# an ignored signal ignored: give it the default
	env --default-signal=INT "$KVSIM" run "$T/long.json" --out "$T/intr$sig" --quiet 2>"$T/intr.err" &
	pid=$!
	wait_for "$T/intr$sig" '*.tmp.*'
	kill -$sig $pid
	wait $pid
	rc=$?
	want=130
	[ $sig = TERM ] && want=143
	[ $rc = $want ] && [ "$(cat "$T/intr.err")" = "kvsim: interrupted by SIG$sig" ] && ok ||
		bad "SIG$sig: exit $rc (expected $want), stderr: $(cat "$T/intr.err")"
	[ ! -e "$T/intr$sig" ] && ok || bad "SIG$sig left $(ls "$T/intr$sig")"
done
# trace gen stops between sessions too, and leaves no file
mkdir -p "$T/gintr"
env --default-signal=INT "$KVSIM" trace gen "$T/long.json" --out "$T/gintr/g.jsonl" --quiet 2>"$T/intr.err" &
pid=$!
wait_for "$T/gintr" '*.tmp.*'
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && [ "$(cat "$T/intr.err")" = "kvsim: interrupted by SIGINT" ] && [ -z "$(ls "$T/gintr")" ] && ok ||
	bad "trace gen after SIGINT: exit $rc, stderr: $(cat "$T/intr.err"), left: $(ls "$T/gintr")"
"$KVSIM" sweep "$T/long.json" --vary cluster.nodes=1,2 -j 2 --out "$T/swintr" --quiet 2>"$T/intr.err" &
pid=$!
wait_for "$T/swintr/points" '*.tmp.*'
kill -TERM $pid
wait $pid
rc=$?
sleep 0.5
[ $rc = 143 ] && ok || bad "sweep after SIGTERM: exit $rc, $(cat "$T/intr.err")"
pgrep -f "$T/swintr" >/dev/null && bad "sweep workers outlived their parent" || ok
find "$T/swintr" -name '*.tmp.*' | grep -q . && bad "a killed sweep left temporaries" || ok
pkill -f "$T/swintr" 2>/dev/null # the old code's orphans

# Output lost on stdout is exit 3 with the reason.
"$KVSIM" trace gen "$T/small.json" --out "$T/small.jsonl" --quiet
for args in "run $T/small.json --out $T/full" "list policies" "version" "cost --gpu H100-SXM --model Llama-3-8B --prefill 4096 --json" \
	"trace stats $T/small.jsonl --format kvsim"; do
	# shellcheck disable=SC2086
	"$KVSIM" $args >/dev/full 2>"$T/full.err"
	rc=$?
	[ $rc = 3 ] && [ "$(cat "$T/full.err")" = "kvsim: write error on standard output: No space left on device" ] &&
		ok || bad "kvsim $args >/dev/full: exit $rc, $(cat "$T/full.err")"
done

# Outputs grow with the work done, not the horizon: one request in 10^9 s.
cat >"$T/sparse.json" <<'JSON'
{"name": "sparse", "duration_s": 1e9, "cluster": {"nodes": 1},
 "workload": {"kind": "chat", "sessions_per_s": 1e-9, "max_sessions": 1,
              "turns": {"dist": "constant", "value": 1}}}
JSON
timeout 60 "$KVSIM" run "$T/sparse.json" --out "$T/sparse" --quiet
rc=$?
rows=$(wc -l <"$T/sparse/timeseries.csv" 2>/dev/null)
[ $rc = 0 ] && [ "${rows:-0}" -gt 1000 ] && [ "$rows" -lt 5000 ] && ok ||
	bad "a sparse run: exit $rc, ${rows:-no} timeseries rows"

# --- rD: figures of results with nothing to draw; sweep points held to their spec
# A policy that completed nothing (its only node crashes at once), and
# outputs of one token (no TPOT): the figures say "no data" and the run
# succeeds; gnuplot's own words never reach stdout.
printf '{"duration_s": 5, "cluster": {"nodes": 1}, "faults": [{"kind": "crash", "node": 0, "at_s": 0.001}]}' >"$T/rD_crash.json"
expect 0 "figures:" compare "$T/rD_crash.json" --policies round_robin,least_loaded --out "$T/rD_crash" --plot --report
[ -s "$T/rD_crash/plots/ttft_cdf.png" ] && [ -s "$T/rD_crash/report.html" ] && ok || bad "no TTFT figure when nothing completed"
printf '{"duration_s": 5, "cluster": {"nodes": 1}, "workload": {"kind": "open", "rate_per_s": 3, "output_tokens": {"dist": "constant", "value": 1}}}' >"$T/rD_one.json"
expect 0 "figures:" compare "$T/rD_one.json" --policies round_robin,least_loaded --out "$T/rD_one" --plot
[ -s "$T/rD_one/plots/tpot_cdf.svg" ] && grep -q "no request got a second token" "$T/rD_one/plots/tpot_cdf.svg" && ok || bad "no 'no data' TPOT figure for one-token outputs"
[ -z "$(find "$T/rD_one" "$T/rD_crash" -name '*.tmp.*')" ] && ok || bad "temporary figure files left"
"$KVSIM" plot "$T/rD_one" >"$T/rD_plot.out" 2>&1 && [ "$(cat "$T/rD_plot.out")" = "wrote 9 figures (PNG and SVG) to $T/rD_one/plots/" ] && ok ||
	bad "kvsim plot printed more than its line: $(head -c 300 "$T/rD_plot.out")"
# sweep --merge: a summary of another sweep (the folder re-emitted with other
# values) or a hollow one is a failed point, never a row.
expect 0 "" sweep "$T/small.json" --vary cluster.nodes=1,2 --out "$T/rD_sw" --quiet
expect 0 "wrote 2 jobs" sweep "$T/small.json" --vary cluster.nodes=3,4 --out "$T/rD_sw" --emit-jobs "$T/rD_sw/jobs.txt"
expect 2 "point 0 (cluster.nodes=3) failed: $T/rD_sw/points/p000000/point.json: values \"cluster.nodes=1\"" sweep --merge "$T/rD_sw"
[ "$(wc -l <"$T/rD_sw/sweep.csv")" -eq 1 ] && ok || bad "merge took stale results as rows"
sh "$T/rD_sw/jobs.txt" && ok || bad "the emitted jobs failed"
expect 0 "wrote" sweep --merge "$T/rD_sw"
printf '{"arrived": "x"}' >"$T/rD_sw/points/p000001/summary.json"
expect 2 "point 1 (cluster.nodes=4) failed: $T/rD_sw/points/p000001/summary.json: seed: expected a number" sweep --merge "$T/rD_sw"
[ "$(wc -l <"$T/rD_sw/sweep.csv")" -eq 2 ] && ok || bad "merge made a row of a hollow summary"
# --vary splits at top-level commas only; sweep.csv quotes as RFC 4180; a
# varied seed is a column of its own.
expect 0 "" sweep "$T/small.json" --vary 'faults=[],[{"kind":"crash","node":0,"at_s":1}]' --vary seed=1,2 --out "$T/rD_sw2" --quiet
head -1 "$T/rD_sw2/sweep.csv" | grep -q '^faults,vary.seed,point,seed,arrived,' && ok || bad "sweep.csv header: $(head -1 "$T/rD_sw2/sweep.csv")"
grep -q '^"\[{""kind"":""crash"",""node"":0,""at_s"":1}\]",2,3,' "$T/rD_sw2/sweep.csv" && [ "$(wc -l <"$T/rD_sw2/sweep.csv")" -eq 5 ] && ok ||
	bad "a JSON value with commas was split or not quoted: $(cat "$T/rD_sw2/sweep.csv")"

# --- rA: a skip_bad replay says what it skipped (stderr) and counts it (summary.json)
printf '{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}\nnot json\n' >"$T/skip.trace"
printf '{"duration_s": 10, "workload": {"kind": "trace", "format": "mooncake", "path": "skip.trace", "skip_bad": true}}' >"$T/skip.json"
expect 0 "kvsim: skipped 1 bad trace lines (skip_bad); the first: $T/skip.trace:2: not a JSON object" run "$T/skip.json" --out "$T/skip_out" --quiet
grep -q '"skipped_lines":	1' "$T/skip_out/summary.json" && ok || bad "summary.json lacks requests.skipped_lines 1"

# The default scenario tells the seed's story, whatever the seed: session
# affinity (with its mechanisms) against plain round robin, TTFT p99 at most
# 0.6x and recompute GPU-s at most 0.25x, nothing shed beyond 0.1%.
for seed in 1 2; do
	"$KVSIM" compare --policies round_robin,session_affinity --set seed=$seed --out "$T/story$seed" --quiet >/dev/null 2>&1 &&
		awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			{ p[$1] = $c["ttft_p99_s"]; g[$1] = $c["recompute_gpu_s"]; sh[$1] = $c["shed"]; a[$1] = $c["arrived"] }
			END { ok = p["session_affinity"] <= 0.6 * p["round_robin"] &&
				   g["session_affinity"] <= 0.25 * g["round_robin"] &&
				   sh["session_affinity"] <= 0.001 * a["session_affinity"] &&
				   sh["round_robin"] <= 0.001 * a["round_robin"]
			      printf "rr p99 %s sa p99 %s rr gpu-s %s sa gpu-s %s\n", p["round_robin"], p["session_affinity"], g["round_robin"], g["session_affinity"]
			      exit !ok }' "$T/story$seed/comparison.csv" >"$T/story.out" && ok ||
		bad "seed $seed: the default scenario does not show the seed's point: $(cat "$T/story.out")"
done
# Each column's mechanisms: printed under the table and in summary.json; a
# router key sets every column's, a policy_params key one column's.
expect 0 "  round_robin       kv recompute, watermark none, offload off, shed none, load reports exact, health off; kv path nixl; engine vllm-0.15 (baseline)" compare --policies round_robin,session_affinity --set duration_s=20 --out "$T/mech"
grep -q '"family":	"seed"' "$T/mech/session_affinity/summary.json" && grep -q '"watermark_action":	"migrate"' "$T/mech/session_affinity/summary.json" && ok ||
	bad "summary.json lacks the seed's mechanisms"
"$KVSIM" compare --policies round_robin,least_loaded --set duration_s=20 --set cluster.kv_transfer=lmcache \
	--set router.policy_params.round_robin.offload=true --set router.migration=auto --out "$T/mech2" >"$T/mech2.out" 2>&1 &&
	grep -q "  round_robin       kv auto, watermark none, offload on, shed none, load reports exact, health off; kv path lmcache; engine vllm-0.15 (baseline)" "$T/mech2.out" &&
	grep -q "  least_loaded      kv auto, watermark none, offload off, shed none, load reports exact, health off; kv path lmcache; engine vllm-0.15 (baseline)" "$T/mech2.out" && ok ||
	bad "router.migration and policy_params mechanisms not applied as documented: $(tail -4 "$T/mech2.out")"
grep -q '"by_reason":	{' "$T/mech/session_affinity/summary.json" && ok || bad "summary.json lacks migration.by_reason"

# Direction: where shared contexts (300 documents of ~3,000 tokens, 0.9M tokens) exceed one
# node's cache (~0.46M tokens), every KV-aware router beats random and least loaded by a
# clear margin: at most 0.75x their recompute, at least 1.15x their prefix hit ratio, at
# most 0.85x their TTFT p50.
"$KVSIM" compare workloads/scenarios/rag.json --policies random,least_loaded,prefix_affinity,cache_aware,kv_cost,weighted_scorer,precise_prefix \
	--set 'workload.documents={"count": 300, "zipf_s": 0.8, "tokens": {"dist": "lognormal", "median": 3000, "sigma": 0.3}}' \
	--set workload.docs_per_request=2 --out "$T/direction" --quiet >/dev/null 2>&1 &&
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ g[$1] = $c["recompute_gpu_s"]; h[$1] = $c["prefix_hit_ratio"]; p[$1] = $c["ttft_p50_s"] }
		END { bg = g["random"] < g["least_loaded"] ? g["random"] : g["least_loaded"]
		      bh = h["random"] > h["least_loaded"] ? h["random"] : h["least_loaded"]
		      bp = p["random"] < p["least_loaded"] ? p["random"] : p["least_loaded"]
		      split("prefix_affinity cache_aware kv_cost weighted_scorer precise_prefix", k, " ")
		      for (i = 1; i <= 5; i++)
			if (!(g[k[i]] <= 0.75 * bg && h[k[i]] >= 1.15 * bh && p[k[i]] <= 0.85 * bp)) {
				printf "%s: recompute %s, hit %s, TTFT p50 %s against %s, %s, %s\n", k[i], g[k[i]], h[k[i]], p[k[i]], bg, bh, bp
				exit 1
			} }' "$T/direction/comparison.csv" >"$T/direction.out" && ok ||
	bad "a KV-aware router does not beat the stateless ones where shared contexts exceed a node's cache: $(cat "$T/direction.out")"

# A queue bound of 1 with admission control still admits new sessions to an empty queue;
# a mechanism's object set for one column merges with router.params' field by field.
expect 0 "" run "$T/small.json" --set router.max_queue_per_node=1 --out "$T/q1" --quiet
grep -q '"completed":	0,' "$T/q1/summary.json" && bad "a queue bound of 1 shed every new session" || ok
expect 0 "" run "$T/small.json" --set 'router.params.health={"max_kv_util":0.5}' --set 'router.policy_params.session_affinity.health={"max_temperature_c":70}' --out "$T/hmerge" --quiet
grep -q '"max_temperature_c":	70' "$T/hmerge/summary.json" && grep -q '"max_kv_util":	0.5' "$T/hmerge/summary.json" && ok ||
	bad "router.params.health and policy_params.<policy>.health did not merge field by field"

# pools: outputs
# A disaggregated cluster (an H100 prefill pool, an A100 decode pool): compare and run print
# the TTFT split and hand-over rows and the pool table; comparison.csv has their columns
# (the split adds up to the mean TTFT; with no faults and no threshold every request is
# handed over once); summary.json their keys; --plot and --report the ttft_split and
# pools figures. Two mixed pools of different GPUs: the pool table and figure, no split.
# Without pools: none of the rows, columns, table or figures, and summary.json's keys
# with zeros and the one pool "cluster".
cat >"$T/po_pd.json" <<'JSON'
{"name": "po-pd", "duration_s": 30,
 "cluster": {"pools": [{"name": "prefill", "role": "prefill", "nodes": 1, "gpu": "H100-SXM"},
                       {"name": "decode", "role": "decode", "nodes": 2, "gpu": "A100-80G"}]},
 "workload": {"kind": "chat", "sessions_per_s": 2, "max_sessions": 40}}
JSON
sed 's/"prefill", "role": "prefill"/"h100", "role": "mixed"/; s/"decode", "role": "decode"/"l40s", "role": "mixed"/; s/A100-80G/L40S/; s/po-pd/po-mixed/' \
	"$T/po_pd.json" >"$T/po_mixed.json"
sed 's/"pools": .*/"nodes": 3},/; /"decode", "role"/d' "$T/po_pd.json" >"$T/po_none.json"
po_pols=round_robin,least_loaded
expect 0 "  prefill queue (ms)" compare "$T/po_pd.json" --policies $po_pols --out "$T/po_pd" --plot --report
for line in "TTFT mean (ms)" "  prefill (ms)" "  KV transfer (ms)" "  decode queue (ms)" "KV hand-overs" \
	"  hand-over GB" "  mean hand-over s" "  failovers" \
	"  policy       pool    role    GPU x tp     nodes busy ratio mean KV use  requests" \
	"  round_robin  prefill prefill H100-SXM x 1     1 " "  least_loaded decode  decode  A100-80G x 1     2 "; do
	grep -qF -- "$line" "$T/out" && ok || bad "pooled compare lacks '$line'"
done
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ d = $c["ttft_queue_s"] + $c["ttft_prefill_s"] + $c["ttft_transfer_s"] + $c["ttft_decode_queue_s"] - $c["ttft_mean_s"]
	  if (d > 1e-6 || d < -1e-6 || $c["pd_transfers"] != $c["completed"] || $c["completed"] == 0 ||
	      $c["pd_failovers"] != 0 || !($c["pd_transfer_bytes"] > 0) || !($c["ttft_transfer_s"] > 0)) exit 1 }' \
	"$T/po_pd/comparison.csv" && ok || bad "pooled comparison.csv: split or hand-over columns wrong: $(cat "$T/po_pd/comparison.csv")"
for key in '"ttft_split":' '"pd_transfer":' '"mean_s":' '"gpu":	"A100-80G"' '"role":	"prefill"' '"pool":	1'; do
	grep -qF -- "$key" "$T/po_pd/round_robin/summary.json" && ok || bad "pooled summary.json lacks $key"
done
for fig in ttft_split pools; do
	[ -s "$T/po_pd/plots/$fig.png" ] && [ -s "$T/po_pd/plots/$fig.svg" ] &&
		grep -q "<figure id=\"$fig\"><svg" "$T/po_pd/report.html" && ok || bad "pooled report lacks the $fig figure"
done
grep -qF "<th>policy</th><th>pool</th><th>role</th>" "$T/po_pd/report.html" &&
	grep -qF "| round_robin | decode | decode | A100-80G x 1 | 2 |" "$T/po_pd/report.md" && ok ||
	bad "pooled report lacks the pool table"
expect 0 "wrote 11 figures" plot "$T/po_pd"
cp "$T/po_pd/least_loaded/summary.json" "$T/po_sum.json"
printf '{"pools": [{"name": "p", "role": "prefill", "gpu": "H100-SXM", "tp": 1, "busy_ratio": "x"}]}' >"$T/po_pd/least_loaded/summary.json"
expect 2 "$T/po_pd/least_loaded/summary.json: pools: 1 pools, expected 2 as in the first policy's" plot "$T/po_pd"
printf '{"pools": [{"name": "p", "role": "prefill", "gpu": "H100-SXM", "tp": 1, "busy_ratio": "x"}, {}]}' >"$T/po_pd/least_loaded/summary.json"
expect 2 "$T/po_pd/least_loaded/summary.json: pools[0].busy_ratio: expected a number" plot "$T/po_pd"
cp "$T/po_sum.json" "$T/po_pd/least_loaded/summary.json"
expect 0 "  decode queue (ms)" run "$T/po_pd.json" --out "$T/po_run"
grep -q "^  session_affinity decode  decode  A100-80G x 1     2 " "$T/out" && ok || bad "kvsim run lacks the pool table"
expect 0 "  round_robin  h100 mixed   H100-SXM x 1     1 " compare "$T/po_mixed.json" --policies $po_pols --out "$T/po_mixed" --plot
grep -qF "prefill queue" "$T/out" || grep -qF "ttft_queue_s" "$T/po_mixed/comparison.csv" && bad "mixed pools print the TTFT split" || ok
[ -s "$T/po_mixed/plots/pools.svg" ] && [ ! -e "$T/po_mixed/plots/ttft_split.svg" ] && ok || bad "mixed pools: expected the pools figure alone"
expect 0 "requests arrived" compare "$T/po_none.json" --policies $po_pols --out "$T/po_none" --plot
for line in "prefill queue" "hand-over" "pools ("; do
	grep -qF -- "$line" "$T/out" && bad "a compare without pools prints '$line'" || ok
done
head -1 "$T/po_none/comparison.csv" | grep -q "ttft_queue_s\|pd_" && bad "comparison.csv without pools has pool columns" || ok
[ ! -e "$T/po_none/plots/ttft_split.png" ] && [ ! -e "$T/po_none/plots/pools.png" ] && ok || bad "figures of pools drawn without pools"
grep -qF '"transfer_s":	0,' "$T/po_none/round_robin/summary.json" && grep -qF '"count":	0,' "$T/po_none/round_robin/summary.json" &&
	grep -qF '"name":	"cluster"' "$T/po_none/round_robin/summary.json" && ok || bad "summary.json without pools lacks the zero split, hand-overs or pool \"cluster\""
# end of pools: outputs

# pools: planning (kvsim plan --search pd_ratio, --pool, --pool-gpus; sweep and --set
# over cluster.pools[i]; validate per pool). A prefill and a decode pool of H100s, 4000-token
# prompts and 200-token answers: one prefill replica is overloaded (TTFT), one decode
# replica is too slow per token (TPOT), so the best split lies inside.
cat >"$T/pd.json" <<'JSON'
{"name": "pd-tiny", "seed": 1, "duration_s": 5,
 "cluster": {"gpu": "H100-SXM", "model": "Llama-3.1-8B", "tp": 1, "kv_transfer": "nixl",
  "pools": [{"name": "prefill", "role": "prefill", "nodes": 1},
            {"name": "decode", "role": "decode", "nodes": 1}]},
 "router": {"policy": "least_loaded", "params": {}},
 "workload": {"kind": "open", "rate_per_s": 20, "max_requests": 100000,
  "input_tokens": {"dist": "constant", "value": 4000},
  "output_tokens": {"dist": "constant", "value": 200}}}
JSON
# jnum FILE OBJECT KEY: the number KEY holds in the first object OBJECT of a summary.json
jnum() { sed -n "/\"$2\":/,/}/s/.*\"$3\":[[:space:]]*\([0-9.e+-]*\).*/\1/p" "$1" | head -n 1; }
# pd_split P D: runs the split as plan does (its SLOs as the scenario's slo); prints
# "P D PASS|fail GOODPUT" by plan's rule (TTFT and TPOT p99 within the SLOs, at most
# 0.1% shed or failed, steady)
pd_split() {
	"$KVSIM" run "$T/pd.json" --set "cluster.pools[0].nodes=$1" --set "cluster.pools[1].nodes=$2" \
		--set slo.ttft_p99_s=0.5 --set slo.tpot_p99_s=0.012 --out "$T/pd_$1_$2" --quiet || return 1
	s="$T/pd_$1_$2/summary.json"
	awk -v p="$1" -v d="$2" -v t="$(jnum "$s" ttft_s p99)" -v o="$(jnum "$s" tpot_s p99)" \
		-v a="$(jnum "$s" requests arrived)" -v c="$(jnum "$s" requests completed)" \
		-v l="$(($(jnum "$s" requests shed) + $(jnum "$s" requests failed)))" -v g="$(jnum "$s" slo goodput_rps)" \
		-v st="$(grep -c '"steady":[[:space:]]*true' "$s")" \
		'BEGIN { print p, d, (c > 0 && t <= 0.5 && o <= 0.012 && l <= 0.001 * a && st > 0) ? "PASS" : "fail", g }'
}
PD="--slo ttft_p99=0.5 --slo tpot_p99=0.012"
# --gpus-total 6: every split 1+5 .. 5+1 runs; the answer is the passing split of the
# highest goodput, as the runs of each split here say
expect 0 "best split" plan "$T/pd.json" --search pd_ratio --gpus-total 6 $PD --out "$T/pd6"
cp "$T/out" "$T/pd6.out"
: >"$T/pd6.runs"
for p in 1 2 3 4 5; do pd_split "$p" $((6 - p)) >>"$T/pd6.runs"; done
want=$(awk '$3 == "PASS" && (!n++ || $4 > g) { g = $4; w = $1 " prefill + " $2 " decode" } END { print w }' "$T/pd6.runs")
[ -n "$want" ] && grep -q "best split $want (6 GPUs" "$T/pd6.out" && ok ||
	bad "plan --gpus-total 6 chose $(grep -o 'best split [0-9]* prefill + [0-9]* decode' "$T/pd6.out"), the runs say $want: $(cat "$T/pd6.runs")"
# both ends fail (the test means something only then), and plan.json holds all five splits
awk '$1 == 1 && $3 == "fail" { a = 1 } $1 == 5 && $3 == "fail" { b = 1 } $3 == "PASS" { n++ } END { exit !(a && b && n >= 2) }' "$T/pd6.runs" && ok ||
	bad "the pd_ratio test scenario no longer has an inside optimum: $(cat "$T/pd6.runs")"
[ "$(grep -c '"prefill":' "$T/pd6/plan.json")" -eq 12 ] && grep -q '"search":	"pd_ratio"' "$T/pd6/plan.json" &&
	grep -q '"gpus_total":	6' "$T/pd6/plan.json" && ok || bad "plan.json lacks the five splits (and five probes, the answer and its ranking row)"
# the binding SLO of a split: the failing split nearest the best, and the part of its test
# that its own run (above) failed, at the value printed
bind=$(sed -n 's/^H100-SXM\/H100-SXM: bound by \(T[TP][FO]T\) p99 \([0-9.e-]*\) s > [0-9.]* s at \([0-9]*\) prefill + \([0-9]*\) decode (6 GPUs).*/\1 \2 \3 \4/p' "$T/pd6.out")
set -- $bind
[ $# -eq 4 ] && grep -q "^$3 $4 fail" "$T/pd6.runs" &&
	[ "$(awk -v v="$(jnum "$T/pd_$3_$4/summary.json" "$(echo "$1" | tr 'A-Z' 'a-z')_s" p99)" 'BEGIN { printf "%.4g", v }')" = "$2" ] && ok ||
	bad "plan --gpus-total 6 named a binding SLO its split's run does not show: $(grep 'bound by' "$T/pd6.out")"
# the colocated layout, a candidate beside the splits: the scenario without pools on the
# same 6 H100s, run here by hand, passes or fails and has the goodput plan's row says, and
# the verdict follows from it and the best split's goodput
cat >"$T/pd_coloc.json" <<'JSON'
{"name": "pd-tiny", "seed": 1, "duration_s": 5,
 "cluster": {"gpu": "H100-SXM", "model": "Llama-3.1-8B", "tp": 1, "kv_transfer": "nixl", "nodes": 6},
 "router": {"policy": "least_loaded", "params": {}},
 "workload": {"kind": "open", "rate_per_s": 20, "max_requests": 100000,
  "input_tokens": {"dist": "constant", "value": 4000},
  "output_tokens": {"dist": "constant", "value": 200}}}
JSON
"$KVSIM" run "$T/pd_coloc.json" --set slo.ttft_p99_s=0.5 --set slo.tpot_p99_s=0.012 --out "$T/pdc" --quiet
s="$T/pdc/summary.json"
cg=$(awk -v g="$(jnum "$s" slo goodput_rps)" 'BEGIN { printf "%.2f", g }')
cpass=$(awk -v t="$(jnum "$s" ttft_s p99)" -v o="$(jnum "$s" tpot_s p99)" -v st="$(grep -c '"steady":[[:space:]]*true' "$s")" \
	-v l="$(($(jnum "$s" requests shed) + $(jnum "$s" requests failed)))" -v a="$(jnum "$s" requests arrived)" \
	'BEGIN { print (t <= 0.5 && o <= 0.012 && l <= 0.001 * a && st > 0) ? "yes" : "no" }')
bg=$(awk -v w="$want" '$1 " prefill + " $2 " decode" == w { print $4 }' "$T/pd6.runs")
if [ "$cpass" = yes ]; then
	verdict=$(awk -v b="$bg" -v c="$cg" 'BEGIN { print (b > c) ? "P/D pays" : "P/D does not pay" }')
	grep -q "^H100-SXM/H100-SXM colocated: meets the SLOs on 6 GPUs (6 nodes, [$]18.00/h, goodput $cg req/s" "$T/pd6.out"
else
	verdict="P/D pays"
	grep -q "^H100-SXM/H100-SXM colocated: 6 GPUs colocated miss the SLOs" "$T/pd6.out"
fi && grep -q "^$verdict: " "$T/pd6.out" && grep -q "^[12] *H100-SXM colocated  *- *- *6 " "$T/pd6.out" &&
	grep -q '"layout":	"colocated"' "$T/pd6/plan.json" && grep -q '"pd_pays":	' "$T/pd6/plan.json" && ok ||
	bad "plan's colocated candidate of 6 GPUs differs from its run (goodput $cg, passes: $cpass) or the verdict is not '$verdict': $(cat "$T/pd6.out")"
# without --gpus-total: the smallest GPU count with a passing split; no split of one GPU
# fewer passes
expect 0 "best split 2 prefill + 2 decode (4 GPUs" plan "$T/pd.json" --search pd_ratio $PD --out "$T/pdn"
{ pd_split 1 2; pd_split 2 1; pd_split 2 2; } >"$T/pdn.runs"
[ "$(awk '{ printf "%s ", $3 }' "$T/pdn.runs")" = "fail fail PASS " ] && ok ||
	bad "4 GPUs is not the smallest count with a passing split: $(cat "$T/pdn.runs")"
expect 1 "no split of 2 GPUs meets the SLOs" plan "$T/pd.json" --search pd_ratio --gpus-total 2 $PD --out "$T/pd2"
# a decode tp of 2: 5 GPUs split as 1 + 2 x 2, 2 + 1 x 2 (3 GPUs used: at most N) and 3 + 1 x 2
expect 0 "" plan "$T/pd.json" --search pd_ratio --gpus-total 5 --set 'cluster.pools[1].tp=2' $PD --out "$T/pdtp"
awk '$1 ~ /^[0-9]+$/ && NF >= 9 { s = s $1 "+" $2 "=" $3 " " } END { exit s != "1+2=5 2+1=4 3+1=5 " }' "$T/out" && ok ||
	bad "the splits of 5 GPUs with decode tp 2 are not 1+2, 2+1, 3+1: $(cat "$T/out")"
# errors: no prefill pool, too few GPUs, options that do not fit the search
expect 2 "--search pd_ratio: the scenario has no cluster.pools" plan "$T/small.json" --search pd_ratio --gpus-total 4 $PD
expect 2 "expected cluster.pools to hold exactly one prefill pool and one decode pool; the scenario's: a (mixed), b (mixed)" plan "$T/pd.json" --search pd_ratio --gpus-total 4 $PD \
	--set 'cluster.pools=[{"name":"a","nodes":1},{"name":"b","nodes":1}]'
expect 2 "--gpus-total 1: fewer than the smallest split, 1 prefill replica (tp 1) + 1 decode replica (tp 1) = 2 GPUs" plan "$T/pd.json" --search pd_ratio --gpus-total 1 $PD
expect 2 "--gpus-total 2: fewer than the smallest split, 1 prefill replica (tp 1) + 1 decode replica (tp 2) = 3 GPUs" plan "$T/pd.json" --search pd_ratio --gpus-total 2 --set 'cluster.pools[1].tp=2' $PD
expect 2 '--gpus-total: expected a whole number of GPUs, 2 or more, got "0"' plan "$T/pd.json" --search pd_ratio --gpus-total 0 $PD
expect 2 "--gpus-total goes with --search pd_ratio" plan "$T/pd.json" --search nodes --gpus-total 4 $PD
expect 2 "--search nodes on a cluster of 2 pools: give --pool NAME" plan "$T/pd.json" --search nodes $PD
expect 2 '--pool: no pool "dec" in cluster.pools (its pools: prefill, decode)' plan "$T/pd.json" --search nodes --pool dec $PD
expect 2 '--pool-gpus: pool "decode" given twice' plan "$T/pd.json" --search pd_ratio --pool-gpus decode=L40S --pool-gpus decode=H200 $PD
expect 2 '--pool-gpus: unknown GPU "H900"' plan "$T/pd.json" --search pd_ratio --pool-gpus decode=H900 $PD
# --pool-gpus: each fleet's smallest decode pool beside 3 prefill H100s, ranked by cost per
# hour = 3 x the H100's price + decode nodes x the decode GPU's (catalog prices), cheapest
# first whatever the order given (TPOT p99 within 20 ms, which an A100 decode pool can meet)
expect 0 "ranked by cost per hour" plan "$T/pd.json" --search nodes --pool decode --max 8 --set 'cluster.pools[0].nodes=3' \
	--pool-gpus decode=B200,H100-SXM,A100-80G,H200 --slo ttft_p99=0.5 --slo tpot_p99=0.02 --out "$T/pdfleet"
"$KVSIM" list gpus >"$T/gpus.txt"
awk 'FNR == NR { price[$1] = $7; next }
	$1 ~ /^[0-9]+$/ && NF == 6 { split($2, g, "/"); n++
		want = 3 * price["H100-SXM"] + $3 * price[g[2]]
		if (g[1] != "H100-SXM" || $4 - want > 0.005 || want - $4 > 0.005 || $4 < last) bad = 1
		last = $4 }
	END { exit bad || n != 4 }' "$T/gpus.txt" "$T/out" && ok ||
	bad "the --pool-gpus ranking is not cheapest first at 3 x H100 + nodes x the decode GPU's price: $(cat "$T/out")"
# --gpus on pools sets every pool's GPU
expect 0 "H200/H200: best split" plan "$T/pd.json" --search pd_ratio --gpus-total 4 --gpus H200 $PD --out "$T/pdh200"
# --set and sweep address a pool by its index; the item must exist
expect 0 "pool decode (decode): nodes 1-2, 2 x L40S (tp 1), 12560 KV blocks of 16 tokens per node" validate "$T/pd.json" \
	--set 'cluster.pools[1].nodes=2' --set 'cluster.pools[1].gpu=L40S'
expect 0 "pool prefill (prefill): node 0, 1 x H100-SXM (tp 1), 28531 KV blocks of 16 tokens per node" validate "$T/pd.json"
expect 0 "2 nodes in 2 pools serving Llama-3.1-8B, policy least_loaded, decode policy least_loaded" validate "$T/pd.json"
expect 2 "--set cluster.pools[2].nodes=1: cluster.pools[2]: no such item (the list has 2)" validate "$T/pd.json" --set 'cluster.pools[2].nodes=1'
expect 2 "pools[x]: expected a key, or a key and list indexes such as pools[0]" validate "$T/pd.json" --set 'cluster.pools[x].nodes=1'
expect 2 "--set cluster.tiers[0]=1: cluster.tiers: missing (an index names an item of a list that exists)" validate "$T/pd.json" --set 'cluster.tiers[0]=1'
expect 0 "" sweep "$T/pd.json" --vary 'cluster.pools[1].nodes=1,2' --vary 'cluster.pools[1].gpu=H100-SXM,L40S' --out "$T/pdsw" --quiet
# L40S decodes slower than H100 (0.86 TB/s against 3.35): at each decode pool size its TPOT
# p99 is the higher, so the pool's GPU was set; two decode H100s beat one
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; h = $1 "," $2; next }
	{ t[$1 "," $2] = $c["tpot_p99_s"]; n++ }
	END { exit !(h == "cluster.pools[1].nodes,cluster.pools[1].gpu" && n == 4 &&
		t["1,L40S"] > t["1,H100-SXM"] && t["2,L40S"] > t["2,H100-SXM"] && t["2,H100-SXM"] < t["1,H100-SXM"]) }' \
	"$T/pdsw/sweep.csv" && ok || bad "a sweep over cluster.pools[1].nodes and .gpu did not vary them: $(cat "$T/pdsw/sweep.csv")"
# pools: planning (end)

# the figure of nodes and load: drawn for an autoscaled run from timeseries.csv's
# nodes_up, its data the nodes serving per sample time (one pool: any row's) and
# running summed over nodes; skipped (no error) for a timeseries without the column
HPA='{"kind":"hpa","metric":"queue_per_node","target":2,"max_nodes":6,"tick_s":5,"startup_s":10,"startup_jitter_s":0}'
expect 0 "figures:" compare workloads/scenarios/chat.json --policies least_loaded --set duration_s=60 \
	--set cluster.nodes=2 --set "cluster.autoscaler=$HPA" --out "$T/scl" --plot --report
[ -s "$T/scl/plots/scaling_least_loaded.png" ] && [ -s "$T/scl/plots/scaling_least_loaded.svg" ] &&
	grep -q "<td>scale-ups</td>" "$T/scl/report.html" &&
	grep -q "<td>GPU-hours</td>" "$T/scl/report.html" && grep -q "<td>cost (USD)</td>" "$T/scl/report.html" &&
	grep -q "<td>energy (kWh)</td>" "$T/scl/report.html" && grep -q "<td>J per output token</td>" "$T/scl/report.html" && ok ||
	bad "an autoscaled report lacks the scaling figure or the scaling and cost rows"
ts="$T/scl/least_loaded/timeseries.csv"
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ r[$1] += $c["running"]; u[$1] = $c["nodes_up"]; if (!($1 in o)) { o[$1] = ++n; t[n] = $1 } }
	END { for (i = 1; i <= n; i++) printf "%.6f,%d,%d|", t[i], u[t[i]], r[t[i]] }' "$ts")
got=$(awk -F, 'NR > 1 { printf "%s,%s,%s|", $1, $2, $3 }' "$T/scl/plots/scaling_least_loaded.dat")
[ -n "$want" ] && [ "$want" = "$got" ] && ok || bad "the scaling figure's data: $(echo "$got" | head -c 200), expected $(echo "$want" | head -c 200)"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "nodes_up") k = i } { $k = ""; print }' "$ts" |
	sed 's/,,/,/' >"$ts.new" && mv "$ts.new" "$ts"
rm -f "$T/scl/plots/scaling_least_loaded.png"
expect 0 "wrote" plot "$T/scl"
[ ! -e "$T/scl/plots/scaling_least_loaded.png" ] && ok || bad "a timeseries without nodes_up drew the scaling figure"

# compare --seeds, --rates, -j: common random numbers across loads and seeds.
# Short think times: the closed loop's sessions settle within the first
# minute of five, so the loads that meet the SLOs are steady (capacity counts
# only steady ones) and the loads past them have time to show it.
cat >"$T/cap.json" <<'JSON'
{"name": "cap", "seed": 1, "duration_s": 300,
 "cluster": {"nodes": 2, "gpu": "H100-SXM", "model": "Llama-3-8B"},
 "router": {"policy": "round_robin"},
 "workload": {"kind": "chat", "sessions_per_s": 2, "max_sessions": 100000,
   "think_time_s": {"dist": "exponential", "mean": 1}},
 "slo": {"ttft_p99_s": 0.5, "tpot_p99_s": 0.05}}
JSON
cap_args="$T/cap.json --policies round_robin,least_loaded,session_affinity --seeds 2 --rates 2,6,10,14 --no-perf"
"$KVSIM" compare $cap_args -j 1 --out "$T/cap1" >"$T/cap1.out" 2>/dev/null &&
	"$KVSIM" compare $cap_args -j 3 --out "$T/cap3" >"$T/cap3.out" 2>/dev/null && ok || bad "compare --seeds --rates failed"
# -j N gives what -j 1 gives, byte for byte (summary.json's perf block aside).
[ "$(sed -e "s|$T/cap3|$T/cap1|g" -e '/^wall s /d' "$T/cap3.out")" = "$(sed '/^wall s /d' "$T/cap1.out")" ] && ok ||
	bad "compare -j 3 printed another table than -j 1"
diff -r -x summary.json "$T/cap1" "$T/cap3" >/dev/null && ok || bad "compare -j 3 wrote other files than -j 1"
for f in $(cd "$T/cap1" && find . -name summary.json); do
	sed '/"perf":/,$d' "$T/cap1/$f" >"$T/s1" && sed '/"perf":/,$d' "$T/cap3/$f" >"$T/s3" && cmp -s "$T/s1" "$T/s3" || bad "-j 3: $f differs"
done
[ -s "$T/cap1/round_robin/rate-6/seed-2/requests.csv" ] && [ -s "$T/cap1/session_affinity/seed-2/summary.json" ] && ok ||
	bad "compare --seeds --rates: a cell's folder is missing"
grep -q "(.*-.*)" "$T/cap1.out" && grep -q "^capacity: the highest workload.sessions_per_s" "$T/cap1.out" && ok ||
	bad "compare --seeds --rates printed no ranges or no capacity: $(head -c 300 "$T/cap1.out")"
# Capacity is monotone where it must be: least_loaded carries at least round
# robin's load, session affinity at least least_loaded's.
cap() { sed -n "/\"capacity\":/,/}/s/.*\"$1\":[[:space:]]*\([0-9.]*\).*/\1/p" "$T/cap1/capacity.json"; }
rr=$(cap round_robin) ll=$(cap least_loaded) sa=$(cap session_affinity)
[ -n "$rr" ] && [ -n "$ll" ] && [ -n "$sa" ] && awk -v a="$rr" -v b="$ll" -v c="$sa" 'BEGIN { exit !(a <= b && b <= c && a < c) }' &&
	ok || bad "capacity not monotone: round_robin $rr, least_loaded $ll, session_affinity $sa"
grep -q '"seeds":' "$T/cap1/comparison.json" && grep -q '"median":' "$T/cap1/comparison.json" &&
	grep -q '"curve":' "$T/cap1/comparison.json" && ok || bad "comparison.json lacks seeds or capacity"
# One seed: what compare writes without --seeds, byte for byte.
"$KVSIM" compare "$T/cap.json" --policies round_robin,least_loaded --no-perf --out "$T/cap_plain" >"$T/cp.out" 2>/dev/null &&
	"$KVSIM" compare "$T/cap.json" --policies round_robin,least_loaded --no-perf --seeds 1 --out "$T/cap_one" >"$T/co.out" 2>/dev/null &&
	cmp -s "$T/cap_plain/comparison.json" "$T/cap_one/comparison.json" &&
	cmp -s "$T/cap_plain/comparison.csv" "$T/cap_one/comparison.csv" &&
	[ "$(sed -e "s|$T/cap_one|X|g" -e '/^wall s /d' "$T/co.out")" = "$(sed -e "s|$T/cap_plain|X|g" -e '/^wall s /d' "$T/cp.out")" ] && ok ||
	bad "compare --seeds 1 differs from compare"
expect 2 "--seeds: expected N (1-64), a-b or a,b,c" compare "$T/cap.json" --policies round_robin --seeds 0
expect 2 "--seeds: expected" compare "$T/cap.json" --policies round_robin --seeds 1,1
expect 2 "--rates: expected increasing loads" compare "$T/cap.json" --policies round_robin --rates 4,2
expect 2 "--jobs: expected 1 to 1024 workers" compare "$T/cap.json" --policies round_robin -j 0
expect 0 "" sweep "$T/cap.json" --vary workload.sessions_per_s=2,4 --seeds 2 --out "$T/cap_sw" --quiet
[ "$(cut -d, -f1-4 "$T/cap_sw/sweep.csv" | tr '\n' ' ')" = "workload.sessions_per_s,vary.seed,point,seed 2,1,0,1 2,2,1,2 4,1,2,1 4,2,3,2 " ] && ok ||
	bad "sweep --seeds: $(cut -d, -f1-4 "$T/cap_sw/sweep.csv" | tr '\n' ' ')"
expect 2 'has no rate key of its own' compare workloads/scenarios/mix.json --policies round_robin --rates 1,2 --out "$T/cap_mix"
# The scenario's own load (2) is a point of the curve from the columns' own
# runs, not run again: its figures are the column's.
[ ! -e "$T/cap1/round_robin/rate-2" ] && grep -q '"rates":[[:space:]]*\[2, 6, 10, 14\]' "$T/cap1/capacity.json" && ok ||
	bad "compare --rates ran the scenario's own load again: $(grep rates "$T/cap1/capacity.json")"
python3 - "$T/cap1" <<'PY' && ok || bad "the curve's point at the scenario's load is not the column's run"
import json, sys
d = sys.argv[1]
cap = json.load(open(d + "/capacity.json"))
cols = {c["policy"]: c for c in json.load(open(d + "/comparison.json"))["columns"]}
for p, curve in cap["curves"].items():
    pt = [x for x in curve if x["rate"] == 2][0]
    med = cols[p]["seeds"]["figures"]["ttft_s.p99"]["median"]
    assert abs(pt["ttft_p99_s"] - med) < 1e-12, (p, pt, med)
PY
# The verdict opens with capacity (comparison.json and the printed verdict),
# its figures medians over the seeds.
python3 - "$T/cap1/comparison.json" <<'PY' && ok || bad "comparison.json's verdict does not open with capacity"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v[0]["figure"] == "capacity" and v[0]["best"] and isinstance(v[0]["material"], bool), v[0]
PY
grep -q "^verdict, against round_robin:" "$T/cap1.out" && grep -q "^Capacity, the highest workload.sessions_per_s meeting the SLOs while steady (tried 2 to 14, medians over the seeds)" "$T/cap1.out" &&
	grep -q "^TTFT p99: .*(median of 2 seeds, " "$T/cap1.out" && ok || bad "the printed verdict lacks capacity or the seeds' medians: $(grep -A3 '^verdict' "$T/cap1.out")"
grep -q "^TTFT p99 (ms) at  *2  *6  *10  *14  capacity$" "$T/cap1.out" && ok || bad "no capacity table: $(grep -A2 '^capacity:' "$T/cap1.out")"
# --report with seeds: the report's verdict is the seeds' too.
"$KVSIM" compare "$T/cap.json" --policies round_robin,session_affinity --seeds 2 --report --out "$T/cap_rep" >/dev/null 2>&1 &&
	grep -q "^- TTFT p99: .*(median of 2 seeds, " "$T/cap_rep/report.md" && grep -q "median of 2 seeds" "$T/cap_rep/report.html" && ok ||
	bad "report.md's verdict ignores the seeds: $(grep '^- TTFT' "$T/cap_rep/report.md")"
# sweep prints its table (a row per point, seeds folded) and draws a series
# per policy against the varied rate.
"$KVSIM" sweep "$T/cap.json" --vary workload.sessions_per_s=2,8 --vary router.policy=round_robin,session_affinity \
	--seeds 2 --out "$T/cap_sw2" >"$T/sw2.out" 2>/dev/null && ok || bad "sweep with a policy axis failed"
[ "$(grep -c '^workload.sessions_per_s=[28];router.policy=[a-z_]*  .*(.*-.*) .* of 2$' "$T/sw2.out")" = 4 ] && ok ||
	bad "sweep's table: $(cat "$T/sw2.out")"
[ "$(grep -c '^rate,ttft_p99_s' "$T/cap_sw2/plots/latency_load.dat")" = 2 ] && [ -s "$T/cap_sw2/plots/latency_load.png" ] && ok ||
	bad "sweep's latency_load: not a series per policy: $(cat "$T/cap_sw2/plots/latency_load.dat")"
# plan --seeds: a probe passes only at every seed; plan.json holds the seeds
# and each probe's range. --search rate probes --max itself (it stopped at
# the last doubling under it).
expect 0 "highest rate" plan "$T/cap.json" --slo ttft_p99=0.5 --search rate --min 2 --max 6 --seeds 2 --out "$T/cap_plan"
python3 - "$T/cap_plan/plan.json" <<'PY' && ok || bad "plan --seeds: $(head -c 400 "$T/cap_plan/plan.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["seeds"] == [1, 2], j.get("seeds")
values = [p["value"] for p in j["probes"]]
assert 6 in values, values  # --max probed
for p in j["probes"]:
    lo, hi = p["range"]["ttft_p99_s"]
    assert lo <= p["ttft_p99_s"] <= hi and "steady" in p, p
PY

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
