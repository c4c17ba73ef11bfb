#!/bin/sh
# bad_inputs.sh: the bad-input catalogue. Every case must exit 2 with one
# message that names the file (and line) or the JSON path and says what was
# expected, and must leave no output file behind.
# Usage: KVSIM=build/kvsim sh tests/bad_inputs.sh
KVSIM=${KVSIM:-build/kvsim}
# The policies as kvsim lists them (its rows run up to the first blank line), so that a
# new policy needs no edit here.
POLICIES=$("$KVSIM" list policies | awk 'NF == 0 { exit } { print $1 }')
KNOWN_POLICIES=$(echo $POLICIES | sed 's/ /, /g')
N_POLICIES=$(echo "$POLICIES" | grep -c .)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
n=0

# bad NAME FRAGMENT ARGS...: runs kvsim ARGS with --out $T/out_NAME appended
# for run; expects exit 2, the fragment in stderr, and nothing written.
bad() {
	name=$1
	frag=$2
	shift 2
	n=$((n + 1))
	out="$T/out_$name"
	"$KVSIM" "$@" >"$T/stdout" 2>"$T/stderr"
	rc=$?
	lines=$(wc -l <"$T/stderr")
	if [ $rc -ne 2 ]; then
		fail=$((fail + 1))
		echo "FAIL $name: exit $rc, expected 2: $(head -c 300 "$T/stderr")"
	elif ! grep -qF -- "$frag" "$T/stderr"; then
		fail=$((fail + 1))
		echo "FAIL $name: message lacks '$frag': $(head -c 300 "$T/stderr")"
	elif [ "$lines" -ne 1 ]; then
		fail=$((fail + 1))
		echo "FAIL $name: $lines lines on stderr, expected one message"
	elif [ -e "$out" ] && [ -n "$(find "$out" -type f)" ]; then
		fail=$((fail + 1))
		echo "FAIL $name: files left in $out: $(find "$out" -type f | head -3)"
	else
		pass=$((pass + 1))
	fi
}

# scen NAME JSON FRAGMENT: a scenario file with that content, run.
scen() {
	printf '%s' "$2" >"$T/$1.json"
	bad "$1" "$T/$1.json: $3" run "$T/$1.json" --out "$T/out_$1" --quiet
}

# syntax NAME JSON LINE:COL: a scenario that is not JSON; FILE:LINE:COL.
syntax() {
	printf '%s' "$2" >"$T/$1.json"
	bad "$1" "$T/$1.json:$3: invalid JSON; expected a JSON object" run "$T/$1.json" --out "$T/out_$1" --quiet
}

syntax malformed '{"seed": 1,,}' 1:13
syntax truncated '{"seed": 1,
 "cluster": {"nodes": 4' 2:24
scen top_array '[1, 2, 3]' "expected a JSON object at the top level"
scen wrong_type '{"cluster": {"nodes": "eight"}}' 'cluster.nodes: expected an integer in [1, 1000000], got a string'
scen bool_type '{"cluster": {"engine": {"prefix_caching": "yes"}}}' 'cluster.engine.prefix_caching: expected true or false, got a string'
scen unknown_top '{"clustr": {}}' 'clustr: unknown key (expected one of: name, seed, duration_s, cluster'
scen unknown_nested '{"router": {"polcy": "x"}}' 'router.polcy: unknown key (expected one of: policy, params'
scen nodes_zero '{"cluster": {"nodes": 0}}' 'cluster.nodes: expected an integer in [1, 1000000], got 0'
scen nodes_negative '{"cluster": {"nodes": -4}}' 'cluster.nodes: expected an integer in [1, 1000000], got -4'
scen nodes_fraction '{"cluster": {"nodes": 2.5}}' 'cluster.nodes: expected an integer in [1, 1000000], got 2.5'
scen tp_heads '{"cluster": {"tp": 3}}' "cluster.tp: expected a divisor of Llama-3-8B's 32 attention heads, got 3"
scen mfu '{"cluster": {"cost_model": {"mfu": 1.5}}}' 'cluster.cost_model.mfu: expected a number in [0.001, 1], got 1.5'
scen bandwidth_zero '{"catalog": {"links": {"slow": {"bytes_per_s": 0, "latency_us": 1}}}}' 'catalog.links.slow.bytes_per_s: expected a number in [1000, 1e+15], got 0'
scen bandwidth_negative '{"catalog": {"links": {"nvlink4": {"bytes_per_s": -5}}}}' 'catalog.links.nvlink4.bytes_per_s: expected a number in [1000, 1e+15], got -5'
scen block_zero '{"cluster": {"engine": {"kv_block_tokens": 0}}}' 'cluster.engine.kv_block_tokens: expected an integer in [1, 4096], got 0'
scen mem_util '{"cluster": {"engine": {"gpu_memory_utilization": 1.2}}}' 'cluster.engine.gpu_memory_utilization: expected a number in [0.01, 1], got 1.2'
scen probability '{"workload": {"kind": "rag", "follow_up_prob": 1.5}}' 'workload.follow_up_prob: expected a number in [0, 0.99], got 1.5'
scen rate_negative '{"workload": {"kind": "chat", "sessions_per_s": -2}}' 'workload.sessions_per_s: expected a number in [1e-09, 1e+09], got -2'
scen duration_zero '{"duration_s": 0}' 'duration_s: expected a number in [1e-06, 1e+09], got 0'
scen huge_number '{"cluster": {"nodes": 1e400}}' 'cluster.nodes: expected an integer in [1, 1000000], got inf'
scen huge_integer '{"cluster": {"nodes": 1e12}}' 'cluster.nodes: expected an integer in [1, 1000000], got 1e+12'
scen unknown_gpu '{"cluster": {"gpu": "H900"}}' 'cluster.gpu: unknown GPU "H900" (known: A100-80G, H100-SXM, H200, B200, L40S)'
scen unknown_model '{"cluster": {"model": "GPT-9"}}' 'cluster.model: unknown model "GPT-9" (known: Llama-3-8B, Llama-3-70B, Llama-3.1-8B'
scen unknown_policy '{"router": {"policy": "magic"}}' "router.policy: unknown policy \"magic\" (known: $KNOWN_POLICIES)"
scen unknown_link '{"cluster": {"links": {"inter_server": "ib-xyz"}}}' 'cluster.links.inter_server: unknown link "ib-xyz" (known: nvlink3, nvlink4'
scen unknown_workload '{"workload": {"kind": "batch"}}' 'workload.kind: unknown workload "batch" (known: open, chat, rag, agent, mix, trace, inference_perf, vllm_bench)'
scen unknown_dist '{"workload": {"turns": {"dist": "poisson", "mean": 3}}}' 'workload.turns.dist: expected one of constant, uniform, exponential, lognormal, gamma, geometric, zipf, got "poisson"'
scen dist_param '{"workload": {"user_tokens": {"dist": "lognormal", "median": 100}}}' 'workload.user_tokens.sigma: missing (a lognormal distribution needs it)'
scen dist_order '{"workload": {"user_tokens": {"dist": "uniform", "min": 50, "max": 10}}}' 'workload.user_tokens.max: expected max >= min (50), got 10'
scen too_big '{"cluster": {"model": "Llama-3-70B"}}' 'cluster: Llama-3-70B needs 131.5 GiB of weights (bf16); 1 x H100-SXM has 79.6 GiB'
scen fp8_a100 '{"cluster": {"gpu": "A100-80G", "dtype": "fp8"}}' 'cluster.dtype: A100-80G has no FP8 tensor cores; expected "bf16"'
scen swap_without_dram '{"cluster": {"engine": {"preemption": "swap"}}}' 'cluster.engine.preemption: "swap" moves preempted requests'"'"' KV to CPU DRAM; set cluster.tiers.dram_gib_per_server above 0'
scen fault_node_range '{"faults": [{"kind": "crash", "node": 99, "at_s": 5}]}' 'faults[0].node: expected an integer in [0, 7], got 99'
scen fault_not_array '{"faults": {"kind": "crash"}}' 'faults: expected an array of fault objects'
scen fault_no_kind '{"faults": [{"node": 1, "at_s": 5}]}' 'faults[0].kind: missing (expected crash, slow, link or cooling)'
scen cooling_without_thermal '{"faults": [{"kind": "cooling", "server": 0, "at_s": 5, "duration_s": 10}]}' 'faults[0]: a cooling fault acts through the thermal model; set cluster.thermal.enabled to true'
scen layout_overfull '{"cluster": {"model": "Llama-3-70B", "tp": 8, "nodes": 16, "nodes_per_server": 8}}' 'cluster.nodes_per_server: 8 replicas of tp 8 need 64 GPUs and a DGX-H100 server has 8; expected at most 1, got 8'
scen layout_tp_spans '{"cluster": {"model": "Llama-3-70B", "tp": 16}}' "cluster.tp: a replica's GPUs share one server's NVLink domain and a DGX-H100 server has 8 GPUs; expected at most 8, got 16"
scen unknown_server '{"cluster": {"server": "DGX-Z"}}' 'cluster.server: unknown server "DGX-Z" (known: DGX-A100, DGX-H100, DGX-H200, DGX-B200, PCIe-2-8-5-200, generic-8gpu)'
scen server_gpu '{"cluster": {"gpu": "L40S", "server": "DGX-H100"}}' 'cluster.server: a DGX-H100 server holds H100-SXM GPUs, not L40S; expected a server of L40S (leave cluster.server out for its default)'
scen server_link '{"catalog": {"servers": {"x": {"gpus": 4, "nics": 4, "nic": "ib-ndr", "host": "pcie9"}}}}' 'catalog.servers.x.host: unknown link "pcie9" (known: nvlink3'
scen server_fields '{"catalog": {"servers": {"x": {"gpus": 4}}}}' 'catalog.servers.x.nics: missing (a new server needs gpus, nics, nic and host)'
scen server_gpus '{"catalog": {"servers": {"DGX-H100": {"gpus": 0}}}}' 'catalog.servers.DGX-H100.gpus: expected an integer in [1, 4096], got 0'
scen fault_server_range '{"cluster": {"model": "Llama-3-70B", "tp": 8, "nodes": 16}, "faults": [{"kind": "link", "server": 16, "at_s": 1, "duration_s": 1, "factor": 0.5}]}' 'faults[0].server: expected an integer in [0, 15], got 16'
scen bad_store '{"router": {"store": "memcached"}}' 'router.store: expected one of local, redis, etcd'
scen candidates_range '{"router": {"policy": "kv_cost", "params": {"candidates": 1000}}}' 'router.params.candidates: expected an integer in [0, 256], got 1000'
# Hugging Face config.json as cluster.model: a missing field and an unknown
# architecture name the file and the key; a relative path starts at the
# scenario's folder.
HF=$PWD/tests/data/hf
scen hf_missing_field "{\"cluster\": {\"model\": \"$HF/bad/no-heads.json\"}}" "cluster.model: $HF/bad/no-heads.json: num_attention_heads: missing (a llama config.json gives it)"
scen hf_unknown_arch "{\"cluster\": {\"model\": \"$HF/bad/gpt2.json\"}}" "cluster.model: $HF/bad/gpt2.json: model_type: unknown architecture \"gpt2\" (known: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3)"
mkdir -p "$T/hf"
cp "$HF/bad/no-heads.json" "$T/hf/config.json"
scen hf_relative '{"cluster": {"model": "hf/config.json"}}' "cluster.model: $T/hf/config.json: num_attention_heads: missing"
scen hf_absent '{"cluster": {"model": "absent/config.json"}}' "cluster.model: $T/absent/config.json: No such file or directory"
printf '{"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000, "max_position_embeddings": 32768, "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 9}' >"$T/hf/k9.json"
scen hf_range '{"cluster": {"model": "hf/k9.json"}}' "cluster.model: $T/hf/k9.json: num_experts_per_tok: expected a whole number in [1, 8], got 9"
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}' >"$T/hf/untyped.json"
scen hf_no_type '{"cluster": {"model": "hf/untyped.json"}}' "cluster.model: $T/hf/untyped.json: model_type: missing; expected one of: llama, mistral"
bad hf_cost "kvsim cost: cluster.model: $HF/bad/gpt2.json: model_type: unknown architecture \"gpt2\"" cost --gpu H100-SXM --model "$HF/bad/gpt2.json" --prefill 1
scen hf_tp_kv '{"cluster": {"model": "Qwen2.5-7B", "tp": 14}}' "cluster.tp: expected a divisor or a multiple of Qwen2.5-7B's 4 KV heads, got 14"
scen idle_power_frac '{"cluster": {"thermal": {"enabled": true, "idle_power_frac": 0.2}}}' 'cluster.thermal.idle_power_frac: the idle power is the GPU'"'"'s catalog figure'
scen idle_over_tdp '{"catalog": {"gpus": {"H100-SXM": {"power": {"idle_w": 800}}}}}' 'catalog.gpus.H100-SXM.power.idle_w: expected at most the GPU'"'"'s tdp_w (700), got 800'
scen tdp_under_idle '{"catalog": {"gpus": {"H100-SXM": {"tdp_w": 100}}}}' 'catalog.gpus.H100-SXM.tdp_w: expected at least the GPU'"'"'s idle power (115 W, power.idle_w), got 100'
scen power_key '{"catalog": {"gpus": {"H100-SXM": {"power": {"idle": 90}}}}}' 'catalog.gpus.H100-SXM.power.idle: unknown key (expected one of: idle_w, memory_weight)'
scen memory_weight '{"catalog": {"gpus": {"H100-SXM": {"power": {"memory_weight": 1.5}}}}}' 'catalog.gpus.H100-SXM.power.memory_weight: expected a number in [0, 1], got 1.5'
scen gpu_mib_and_bytes '{"catalog": {"gpus": {"H100-SXM": {"hbm_mib": 81559, "hbm_bytes": 85e9}}}}' 'catalog.gpus.H100-SXM.hbm_bytes: give hbm_mib or hbm_bytes, not both'
scen moe_missing '{"catalog": {"models": {"Mixtral-8x7B": {"moe": {"experts": 8}}}}}' 'catalog.models.Mixtral-8x7B.moe.experts_per_token: missing (a mixture of experts needs it)'
deep=$(awk 'BEGIN { for (i = 0; i < 3000; i++) printf "["; for (i = 0; i < 3000; i++) printf "]" }')
syntax deep_nesting "{\"x\": $deep}" 1:1006

: >"$T/empty.json"
bad empty "$T/empty.json: empty file; expected a JSON object" run "$T/empty.json" --out "$T/out_empty"
bad missing "$T/nope.json: No such file or directory" run "$T/nope.json" --out "$T/out_missing"
mkdir -p "$T/adir"
bad directory "$T/adir: is a directory, expected a file" run "$T/adir" --out "$T/out_directory"
head -c 2048 /dev/urandom >"$T/garbage.json"
printf '\001\000\377' >>"$T/garbage.json"
bad garbage "$T/garbage.json" run "$T/garbage.json" --out "$T/out_garbage"
if [ "$(id -u)" != 0 ]; then
	printf '{}' >"$T/locked.json"
	chmod 000 "$T/locked.json"
	bad unreadable "$T/locked.json: Permission denied" run "$T/locked.json" --out "$T/out_unreadable"
else
	echo "skip unreadable: root reads every file"
fi
printf '{}' >"$T/ok.json"
bad set_path "--set cluster.nodes.x=1: nodes is not an object" run "$T/ok.json" --set cluster.nodes=2 --set cluster.nodes.x=1 --out "$T/out_set_path"

# traces: FILE:LINE and what is wrong
trace() {
	printf "$2" >"$T/$1.trace"
	printf '{"workload": {"kind": "trace", "format": "%s", "path": "%s.trace"}}' "$3" "$1" >"$T/$1.json"
	bad "$1" "$T/$1.trace:$4" run "$T/$1.json" --out "$T/out_$1" --quiet
}
ok='{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
trace backwards "$ok"'{"timestamp": 4, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n' mooncake '2: arrival goes backwards'
trace malformed_line "$ok"'{"timestamp": 9, "input_length": 10, \n' mooncake '2: not a JSON object (truncated line?)'
trace missing_field "$ok"'{"timestamp": 9, "output_length": 1, "hash_ids": [1]}\n' mooncake '2: missing field "input_length"'
trace negative_length '{"timestamp": 0, "input_length": -10, "output_length": 1, "hash_ids": [1]}\n' mooncake '1: "input_length": expected an integer in [1, 100000000], got -10'
trace hash_count '{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1]}\n' mooncake '1: "hash_ids" has 1 ids; input_length 2000 needs ceil(2000 / 512) = 4'
trace azure_header 'TIME,IN,OUT\n' azure '1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens'
trace azure_time 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-40 10:00:00,5,5\n' azure '2: TIMESTAMP "2023-13-40 10:00:00": expected YYYY-MM-DD HH:MM:SS.fraction'
# found by fuzzing: a year far from now overflowed the nanosecond clock
trace azure_year 'TIMESTAMP,ContextTokens,GeneratedTokens\n-999-11-16 18:17:03.9,4808,10\n' azure '2: TIMESTAMP "-999-11-16 18:17:03.9": expected YYYY-MM-DD HH:MM:SS.fraction (years 1900 to 2200)'
trace kvsim_blocks '{"session": 1, "turn": 1, "arrival_s": 0, "prompt_tokens": 40, "output_tokens": 8, "block_tokens": 16, "blocks": ["1"]}\n' kvsim '1: "blocks" has 1 hashes; prompt_tokens + output_tokens = 48 needs floor(48 / 16) = 3'
printf '{"workload": {"kind": "trace", "format": "mooncake", "path": "absent.trace"}}' >"$T/absent.json"
bad trace_missing "$T/absent.json: workload.path: $T/absent.trace: No such file or directory" run "$T/absent.json" --out "$T/out_trace_missing"
: >"$T/empty.trace"
bad trace_empty "$T/empty.trace: no requests in the trace (empty file?)" trace stats "$T/empty.trace" --format mooncake

# --- rD: diff that would check nothing or trust a corrupted figure; damaged figure input; sweep specs and --vary
printf '[]' >"$T/rD_empty_arr.json"
bad rD_diff_empty_base "$T/rD_empty_arr.json: none of the metrics compared is in it" diff "$T/rD_empty_arr.json" "$T/rD_empty_arr.json"
printf '{"policy": "rr", "requests": {}}' >"$T/rD_hollow.json"
bad rD_diff_hollow_base "$T/rD_hollow.json: none of the metrics compared is in it" diff "$T/rD_hollow.json" "$T/rD_hollow.json"
printf '{"duration_s": 5, "cluster": {"nodes": 1}}' >"$T/rD_small.json"
"$KVSIM" compare "$T/rD_small.json" --policies round_robin,least_loaded --out "$T/rD_cmp" --quiet >/dev/null 2>&1
sed 's/"p99":[[:space:]]*[0-9.e-]*/"p99":-1/' "$T/rD_cmp/round_robin/summary.json" >"$T/rD_neg.json"
bad rD_diff_negative "$T/rD_neg.json: ttft_s.p99 (policy round_robin): expected a finite number >= 0, got -1" diff "$T/rD_cmp/round_robin/summary.json" "$T/rD_neg.json"
sed 's/"p50":[[:space:]]*[0-9.e-]*/"p50":1e999/' "$T/rD_cmp/round_robin/summary.json" >"$T/rD_inf.json"
bad rD_diff_infinite "$T/rD_inf.json: ttft_s.p50 (policy round_robin): expected a finite number >= 0" diff "$T/rD_inf.json" "$T/rD_cmp/round_robin/summary.json"
sed 's/"completed":[[:space:]]*[0-9]*/"completed":"many"/' "$T/rD_cmp/round_robin/summary.json" >"$T/rD_str.json"
bad rD_diff_string "$T/rD_str.json: requests.completed (policy round_robin): expected a finite number >= 0, got \"many\"" diff "$T/rD_cmp/round_robin/summary.json" "$T/rD_str.json"
# kvsim plot on a damaged folder: exit 2 naming the file and line, no figure
awk -F, 'BEGIN { OFS = "," } NR == 2 { $10 = "zz" } { print }' "$T/rD_cmp/round_robin/requests.csv" >"$T/rD_req.csv"
mv "$T/rD_req.csv" "$T/rD_cmp/round_robin/requests.csv"
bad rD_plot_damaged_cell "$T/rD_cmp/round_robin/requests.csv:2: ttft_s: expected a number, got \"zz\"" plot "$T/rD_cmp"
[ ! -e "$T/rD_cmp/plots" ] || { fail=$((fail + 1)); echo "FAIL rD_plot_damaged_cell: figures drawn from a damaged folder"; }
: >"$T/rD_cmp/least_loaded/timeseries.csv"
sed -i 's/,zz,/,0.5,/' "$T/rD_cmp/round_robin/requests.csv"
bad rD_plot_empty_file "$T/rD_cmp/least_loaded/timeseries.csv: empty (expected a CSV header)" plot "$T/rD_cmp"
sed -i '1s/tokens_fresh/tokens_frsh/' "$T/rD_cmp/comparison.csv"
bad rD_plot_no_column "$T/rD_cmp/comparison.csv:1: no column \"tokens_fresh\" in the header" plot "$T/rD_cmp"
# --vary values: split only at top-level commas; an empty one is an error
bad rD_vary_empty "--vary cluster.nodes=1,,2: an empty value" sweep "$T/rD_small.json" --vary cluster.nodes=1,,2 --out "$T/out_rD_vary_empty"
bad rD_vary_open_string "--vary name=\"a,b: a string is not closed" sweep "$T/rD_small.json" --vary 'name="a,b' --out "$T/out_rD_vary_open_string"
# a damaged sweep.spec.json: exit 2 naming the JSON path, nothing merged
printf '{"vary": [{"path": "x", "values": ["1"]}], "points": [{"point": 0, "dir": "points/p000001", "values": "x=1", "seed": 1}]}' >"$T/rD_spec.json"
mkdir -p "$T/rD_spec" && cp "$T/rD_spec.json" "$T/rD_spec/sweep.spec.json"
bad rD_spec_point "$T/rD_spec/sweep.spec.json: points[0]: expected {\"point\": 0, \"dir\": \"points/p000000\"" sweep --merge "$T/rD_spec"
[ ! -e "$T/rD_spec/sweep.csv" ] || { fail=$((fail + 1)); echo "FAIL rD_spec_point: sweep.csv written"; }
printf '{"vary": [{"path": "x"}], "points": []}' >"$T/rD_spec/sweep.spec.json"
bad rD_spec_axis "$T/rD_spec/sweep.spec.json: vary[0]: expected {\"path\": a key, \"values\": a list of 1 or more strings}" sweep --merge "$T/rD_spec"

# --- rC: settings that would be silently ignored, and one reason for no node up
scen dup_key '{"cluster": {"nodes": 2, "nodes": 3}}' 'cluster.nodes: duplicate key (given more than once; expected once)'
scen dup_key_array '{"faults": [{"kind": "crash", "node": 1, "at_s": 1, "at_s": 2}]}' 'faults[0].at_s: duplicate key'
printf '{"gpus": {"H100-SXM": {"tdp_w": 700, "tdp_w": 600}}}' >"$T/dup_cat.json"
bad dup_key_catalog "$T/dup_cat.json: gpus.H100-SXM.tdp_w: duplicate key" run "$T/ok.json" --catalog "$T/dup_cat.json" --out "$T/out_dup_key_catalog" --quiet
bad dup_key_set '--set router.params={"threshold":1,"threshold":2}: router.params.threshold: duplicate key' run "$T/ok.json" --set 'router.params={"threshold":1,"threshold":2}' --out "$T/out_dup_key_set" --quiet
scen policy_params_name '{"router": {"policy_params": {"kv_cst": {}}}}' 'router.policy_params.kv_cst: unknown policy "kv_cst" (known: round_robin,'
scen policy_params_key '{"router": {"policy_params": {"kv_cost": {"bogus": 0}}}}' 'router.policy_params.kv_cost.bogus: unknown key (expected one of: overlap_weight, temperature, candidates, load, device_credit, host_credit, disk_credit)'
scen kv_cost_load '{"router": {"policy": "kv_cost", "params": {"load": "queue"}}}' 'router.params.load: expected one of router, engine'
scen kv_cost_host_credit '{"router": {"policy": "kv_cost", "params": {"host_credit": 2}}}' 'router.params.host_credit: expected a number in [0, 1]'
scen ws_active_weight '{"router": {"policy": "weighted_scorer", "params": {"active_weight": -1}}}' 'router.params.active_weight: expected a number in [0,'
scen policy_params_own '{"router": {"policy": "kv_cost", "policy_params": {"kv_cost": {"candidates": -1}}}}' 'router.policy_params.kv_cost.candidates: expected an integer in [0,'
printf '{"router": {"params": {"bogus": 0}}}' >"$T/moved.json"
bad policy_moved_params 'router.policy_params.session_affinity.bogus: unknown key (expected one of: threshold, when_full, max_keys)' run "$T/moved.json" --policy kv_cost --out "$T/out_policy_moved_params" --quiet
# router.params set on the command line for another policy than --policy's: refused
bad policy_set_params '--set router.params.candidates=4: router.params are the params of router.policy (session_affinity), and --policy runs kv_cost; set router.policy_params.kv_cost.candidates=4 instead' run "$T/ok.json" --policy kv_cost --set router.params.candidates=4 --out "$T/out_policy_set_params" --quiet
scen no_keys_policy '{"router": {"policy": "round_robin", "params": {"x": 1}}}' 'router.params.x: unknown key (router.params takes no keys)'
scen cv_poisson '{"workload": {"kind": "open", "cv": 2}}' 'workload.cv: takes "arrival": "gamma" (Poisson arrivals have cv 1)'
scen attention_backend '{"cluster": {"cost_model": {"attention": "xformers"}}}' 'cluster.cost_model.attention: expected one of flashinfer, flash_attention, got "xformers"'
scen attention_fit '{"catalog": {"gpus": {"H100-SXM": {"attention": {"flashinfer": {"prefill": {"efficiency": 2}}}}}}}' 'catalog.gpus.H100-SXM.attention.flashinfer.prefill.efficiency: expected a number in [0.001, 1], got 2'
scen attention_new '{"catalog": {"gpus": {"X": {"bf16_flops": 1e15, "hbm_bytes": 1e11, "hbm_bytes_per_s": 1e12, "tdp_w": 500, "link": "pcie5", "attention": {"flashinfer": {"decode": {"bandwidth": 0.8}}}}}}}' 'catalog.gpus.X.attention.flashinfer: a new backend needs prefill.efficiency, prefill.causal and decode.bandwidth'
scen overhead_new '{"catalog": {"gpus": {"X": {"bf16_flops": 1e15, "hbm_bytes": 1e11, "hbm_bytes_per_s": 1e12, "tdp_w": 500, "link": "pcie5", "iteration_overhead": {"base_ms": 1}}}}}' 'catalog.gpus.X.iteration_overhead: expected base_ms and per_seq_ms'
scen fp8_range '{"catalog": {"gpus": {"H100-SXM": {"fp8": {"mbu": 3}}}}}' 'catalog.gpus.H100-SXM.fp8.mbu: expected a number in [0.001, 1], got 3'
scen per_seq_fixed '{"cluster": {"cost_model": {"kind": "fixed", "base_ms": 2, "overhead_per_seq_ms": 0.5}}}' 'cluster.cost_model.overhead_per_seq_ms: not read by the fixed cost model'
scen mfu_fixed '{"cluster": {"cost_model": {"kind": "fixed", "base_ms": 2, "mfu": 0.5}}}' 'cluster.cost_model.mfu: not read by the fixed cost model (it reads base_ms, per_token_ms)'
scen base_roofline '{"cluster": {"cost_model": {"base_ms": 2}}}' 'cluster.cost_model.base_ms: not read by the roofline cost model'
bad policy_option 'kvsim: --policy: unknown policy "nonsense" (known: round_robin,' run "$T/ok.json" --policy nonsense --out "$T/out_policy_option" --quiet

# --- rA: times past the ns clock, integers past 2^53, empty and skipped traces, orphan turns, huge or non-UTF-8 scenarios
# tracex NAME FORMAT TRACE EXTRA FRAGMENT: a trace workload (EXTRA: more workload keys) run
tracex() {
	printf "$3" >"$T/$1.trace"
	printf '{"workload": {"kind": "trace", "format": "%s", "path": "%s.trace"%s}}' "$2" "$1" "$4" >"$T/$1.json"
	bad "$1" "$5" run "$T/$1.json" --out "$T/out_$1" --quiet
}
mc='"input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
kv='"prompt_tokens": 16, "output_tokens": 16, "block_tokens": 16, "blocks": ["1", "2"]}\n'
tracex epoch_us mooncake '{"timestamp": 1733140000000000, '"$mc" '' "$T/epoch_us.trace:1: \"timestamp\": 1733140000000000 ms is out of range"
tracex ts_huge mooncake '{"timestamp": 0, '"$mc"'{"timestamp": 1e300, '"$mc" '' "$T/ts_huge.trace:2: \"timestamp\": 1e+300 ms is out of range"
tracex kv_arrival kvsim '{"session": 1, "turn": 1, "arrival_s": 1e300, '"$kv" '' "$T/kv_arrival.trace:1: \"arrival_s\": 1e+300 s is out of range"
tracex kv_after kvsim '{"session": 1, "turn": 1, "arrival_s": 0, '"$kv"'{"session": 1, "turn": 2, "after_s": 1e300, '"$kv" '' "$T/kv_after.trace:2: \"after_s\": 1e+300 s is out of range"
tracex azure_span azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n1900-01-01 00:00:00,5,5\n2199-01-01 00:00:00,5,5\n' '' "$T/azure_span.trace:3: arrival 9435571200 s after the trace's first is out of range"
tracex max_requests mooncake '{"timestamp": 0, '"$mc" ', "max_requests": 9223372036854775807' 'workload.max_requests: expected an integer in [1, 9007199254740992], got 9.22337e+18'
tracex empty_run mooncake '' '' "$T/empty_run.trace: no requests in the trace (empty file?)"
tracex header_only azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n' '' "$T/header_only.trace: no requests in the trace (empty file?)"
tracex all_skipped mooncake 'garbage\nmore garbage\n' ', "skip_bad": true' "$T/all_skipped.trace: no requests in the trace: all 2 lines were skipped; the first: $T/all_skipped.trace:1: not a JSON object"
tracex orphan_turn kvsim '{"session": 1, "turn": 1, "arrival_s": 0, "last_turn": true, '"$kv"'{"session": 2, "turn": 2, "after_s": 1, '"$kv" '' "$T/orphan_turn.trace:2: session 2 turn 2: no open turn 1 of the session before it"
tracex after_last kvsim '{"session": 1, "turn": 1, "arrival_s": 0, "last_turn": true, '"$kv"'{"session": 1, "turn": 2, "after_s": 1, '"$kv" '' "$T/after_last.trace:2: session 1 turn 2: no open turn 1"
tracex turn_gap kvsim '{"session": 1, "turn": 1, "arrival_s": 0, '"$kv"'{"session": 1, "turn": 3, "after_s": 1, '"$kv" '' "$T/turn_gap.trace:2: session 1 turn 3: expected turn 2 next"
printf '{"session": 4, "turn": 2, "after_s": 1, '"$kv" >"$T/kv_orphan2.trace"
bad stats_orphan "$T/kv_orphan2.trace:1: session 4 turn 2: no open turn 1" trace stats "$T/kv_orphan2.trace" --format kvsim
bad dev_zero "/dev/zero: larger than 64 MiB, the most kvsim reads of one file" run /dev/zero --out "$T/out_dev_zero"
truncate -s 65M "$T/huge.json"
bad huge_file "$T/huge.json: larger than 64 MiB" run "$T/huge.json" --out "$T/out_huge_file"
scen name_utf8 "$(printf '{"name": "a\377b"}')" 'name: invalid UTF-8 (byte 0xff at offset 1 of the string)'
scen key_utf8 "$(printf '{"router": {"policy_params": {"x\300\257": {}}}}')" 'router.policy_params: a key has invalid UTF-8 (byte 0xc0 at offset 1)'
scen surrogate_utf8 "$(printf '{"faults": [], "workload": {"kind": "chat"}, "name": "\355\240\200"}')" 'name: invalid UTF-8 (byte 0xed at offset 0'
bad set_utf8 "name: invalid UTF-8" run "$T/ok.json" --set "name=$(printf 'x\377')" --out "$T/out_set_utf8"

# router mechanisms: each key checked where it is set, for every column and for one
scen wm_action '{"router": {"watermark_action": "evict"}}' 'router.watermark_action: expected one of none, close, offload, migrate, got "evict"'
scen shed_rule '{"router": {"shed": "sometimes"}}' 'router.shed: expected one of none, predicted_wait, got "sometimes"'
scen health_kv '{"router": {"health": {"max_kv_util": 2}}}' 'router.health.max_kv_util: expected a number in [0.01, 1], got 2'
scen health_key '{"router": {"health": {"max_temp": 70}}}' 'router.health.max_temp: unknown key'
scen health_type '{"router": {"health": true}}' 'router.health: expected an object'
scen pp_offload '{"router": {"policy_params": {"round_robin": {"offload": "yes"}}}}' 'router.policy_params.round_robin.offload: expected true or false'
scen kv_path '{"cluster": {"kv_transfer": "rdma"}}' 'cluster.kv_transfer: expected one of none, nixl, lmcache, got "rdma"'
scen no_path '{"cluster": {"kv_transfer": "none"}, "router": {"migration": "transfer"}}' 'router.migration: "transfer" needs a KV transfer path, and cluster.kv_transfer is "none"'

scen pp_no_path '{"cluster": {"kv_transfer": "none"}, "router": {"policy_params": {"session_affinity": {"migration": "transfer"}}}}' 'router.policy_params.session_affinity.migration: "transfer" needs a KV transfer path, and cluster.kv_transfer is "none"'
scen wm_offload_off '{"router": {"policy": "round_robin", "watermark_action": "offload"}}' 'router.watermark_action: "offload" writes blocks down to the tiers, which this column does not use; set offload: true too'

# cluster.pools: each pool's errors name its path; what the whole cluster shares is set there
scen pool_prefill_alone '{"cluster": {"pools": [{"nodes": 2, "role": "prefill"}, {"nodes": 2}]}}' 'cluster.pools: a prefill pool needs a decode pool to send its KV to'
scen pool_same_name '{"cluster": {"pools": [{"name": "a", "nodes": 1}, {"name": "a", "nodes": 1}]}}' 'cluster.pools[1].name: "a" is also the name of cluster.pools[0]; expected unique pool names'
scen pool_model '{"cluster": {"pools": [{"nodes": 1}, {"nodes": 1, "model": "Llama-3-70B"}]}}' 'cluster.pools[1].model: a key of the whole cluster, not of one pool; set it at cluster level (cluster.model)'
scen pool_block_tokens '{"cluster": {"pools": [{"nodes": 1, "engine": {"kv_block_tokens": 32}}]}}' 'cluster.pools[0].engine.kv_block_tokens: a key of the whole cluster, not of one pool (KV handed between pools must agree on it); set it at cluster level (cluster.engine.kv_block_tokens)'
scen pool_and_nodes '{"cluster": {"nodes": 4, "pools": [{"nodes": 1}]}}' 'cluster.nodes: with cluster.pools each pool sets its nodes (cluster.pools[i].nodes); remove cluster.nodes'
scen pool_role '{"cluster": {"pools": [{"nodes": 1, "role": "both"}]}}' 'cluster.pools[0].role: expected one of mixed, prefill, decode, got "both"'
scen pool_too_small '{"cluster": {"model": "Llama-3-70B", "tp": 2, "pools": [{"nodes": 1}, {"nodes": 1, "gpu": "L40S"}]}}' 'cluster.pools[1]: Llama-3-70B needs 131.5 GiB of weights (bf16); 2 x L40S has 90.0 GiB, 81.0 GiB usable at gpu_memory_utilization 0.9 with a 1.0 GiB activation reserve per GPU, leaving no room for KV cache; raise cluster.pools[1].tp or pick a larger GPU'
scen pool_inherited '{"cluster": {"server": "DGX-H100", "pools": [{"nodes": 1}, {"nodes": 1, "gpu": "L40S"}]}}' 'cluster.server (for cluster.pools[1]): a DGX-H100 server holds H100-SXM GPUs, not L40S'
scen pool_unknown_key '{"cluster": {"pools": [{"nodes": 1, "gpus": 2}]}}' 'cluster.pools[0].gpus: unknown key (expected one of: name, role, nodes, gpu, tp, dtype, nodes_per_server, server, links, engine, cost_model, autoscaler)'
scen as_kind '{"cluster": {"autoscaler": {"kind": "keda"}}}' 'cluster.autoscaler.kind: expected one of none, hpa, planner, got "keda"'
scen as_no_kind '{"cluster": {"autoscaler": {"metric": "busy"}}}' 'cluster.autoscaler.kind: missing (expected "hpa", "planner" or "none")'
scen as_no_metric '{"cluster": {"autoscaler": {"kind": "hpa", "target": 1, "max_nodes": 8}}}' 'cluster.autoscaler.metric: missing (expected "queue_per_node", "kv_util", "busy" or "rps_per_node")'
scen as_no_target '{"cluster": {"autoscaler": {"kind": "hpa", "metric": "busy", "max_nodes": 8}}}' 'cluster.autoscaler.target: missing (the metric'"'"'s value per node to hold)'
scen as_fraction '{"cluster": {"autoscaler": {"kind": "hpa", "metric": "kv_util", "target": 80, "max_nodes": 8}}}' 'cluster.autoscaler.target: kv_util is a fraction; expected a target in (0, 1], got 80'
scen as_no_max '{"cluster": {"autoscaler": {"kind": "planner"}}}' 'cluster.autoscaler.max_nodes: missing (the most nodes the pool may hold)'
scen as_range '{"cluster": {"nodes": 8, "autoscaler": {"kind": "planner", "max_nodes": 4}}}' 'cluster.autoscaler: the pool starts with 8 nodes; expected min_nodes <= nodes <= max_nodes (1..4)'
scen as_pool_range '{"cluster": {"autoscaler": {"kind": "planner", "max_nodes": 2}, "pools": [{"nodes": 1}, {"nodes": 3}]}}' 'cluster.autoscaler (for cluster.pools[1]): the pool starts with 3 nodes; expected min_nodes <= nodes <= max_nodes (1..2)'
scen as_min '{"cluster": {"autoscaler": {"kind": "planner", "min_nodes": 5, "max_nodes": 4}}}' 'cluster.autoscaler.min_nodes: expected at most max_nodes (4), got 5'
scen as_jitter '{"cluster": {"nodes": 2, "autoscaler": {"kind": "planner", "max_nodes": 4, "startup_s": 10, "startup_jitter_s": 20}}}' 'cluster.autoscaler.startup_jitter_s: expected at most startup_s (10), got 20'
scen as_hpa_key '{"cluster": {"autoscaler": {"kind": "hpa", "metric": "busy", "target": 0.5, "max_nodes": 4, "predictor": "holt"}}}' 'cluster.autoscaler.predictor: unknown key (expected one of: kind, metric, target, tolerance, tick_s, stabilization_s, startup_s, startup_jitter_s, min_nodes, max_nodes, max_step)'
scen as_pool_key '{"cluster": {"pools": [{"nodes": 1, "autoscaler": {"kind": "planner", "max_nodes": 2, "tick": 5}}]}}' 'cluster.pools[0].autoscaler.tick: unknown key (expected one of: kind, predictor, window, alpha, beta, headroom, tick_s, stabilization_s, startup_s, startup_jitter_s, min_nodes, max_nodes, max_step)'
scen pool_empty '{"cluster": {"pools": []}}' 'cluster.pools: expected a non-empty array of pool objects'
scen layerwise_none '{"cluster": {"kv_transfer": {"path": "none", "layerwise": true}}}' 'cluster.kv_transfer.layerwise: streams KV between nodes, and cluster.kv_transfer.path is "none"; expected a path (nixl or lmcache) or layerwise false'
scen disagg_key '{"router": {"disagg": {"threshold": 100}}}' 'router.disagg.threshold: unknown key (expected one of: min_prefill_tokens)'

# workload.rate_schedule and a trace's window: each key named by its path
scen sched_type '{"workload": {"kind": "chat", "rate_schedule": 5}}' 'workload.rate_schedule: expected an array of steps [{"at_s", "scale", "ramp_s"?}] or {"kind": "diurnal", "period_s", "min_scale", "max_scale", "peak_at_s"}, got a number'
scen sched_empty '{"workload": {"kind": "open", "rate_schedule": []}}' 'workload.rate_schedule: expected a non-empty array of steps'
scen sched_order '{"workload": {"kind": "chat", "rate_schedule": [{"at_s": 100, "scale": 2}, {"at_s": 50, "scale": 1}]}}' "workload.rate_schedule[1].at_s: expected more than the previous step's at_s (100), got 50"
scen sched_ramp '{"workload": {"kind": "rag", "rate_schedule": [{"at_s": 0, "scale": 2, "ramp_s": 60}, {"at_s": 30, "scale": 1}]}}' "workload.rate_schedule[1].at_s: expected at least 60 (the previous step's at_s + ramp_s, where its ramp ends), got 30"
scen sched_scale '{"workload": {"kind": "agent", "rate_schedule": [{"at_s": 10, "scale": -1}]}}' 'workload.rate_schedule[0].scale: expected a number in [0, 1e+06], got -1'
scen sched_missing '{"workload": {"kind": "chat", "rate_schedule": [{"at_s": 10}]}}' 'workload.rate_schedule[0].scale: missing (a step needs it)'
scen sched_key '{"workload": {"kind": "chat", "rate_schedule": [{"at": 10, "scale": 1}]}}' 'workload.rate_schedule[0].at: unknown key (expected one of: at_s, scale, ramp_s)'
scen diurnal_kind '{"workload": {"kind": "chat", "rate_schedule": {"kind": "weekly"}}}' 'workload.rate_schedule.kind: expected one of diurnal, got "weekly"'
scen diurnal_range '{"workload": {"kind": "chat", "rate_schedule": {"kind": "diurnal", "min_scale": 1, "max_scale": 0.5, "peak_at_s": 0}}}' 'workload.rate_schedule.max_scale: expected max_scale >= min_scale (1), got 0.5'
scen diurnal_zero '{"workload": {"kind": "chat", "rate_schedule": {"kind": "diurnal", "min_scale": 0, "max_scale": 0, "peak_at_s": 0}}}' 'workload.rate_schedule.max_scale: expected a number > 0 (at 0 nothing ever arrives), got 0'
scen diurnal_period '{"workload": {"kind": "chat", "rate_schedule": {"kind": "diurnal", "period_s": 0, "min_scale": 0, "max_scale": 1, "peak_at_s": 0}}}' 'workload.rate_schedule.period_s: expected a number in [1e-06, 4e+09], got 0'
scen diurnal_min '{"workload": {"kind": "chat", "rate_schedule": {"kind": "diurnal", "min_scale": -0.5, "max_scale": 1, "peak_at_s": 0}}}' 'workload.rate_schedule.min_scale: expected a number in [0, 1e+06], got -0.5'
scen diurnal_peak '{"workload": {"kind": "chat", "rate_schedule": {"kind": "diurnal", "min_scale": 0.5, "max_scale": 1}}}' 'workload.rate_schedule.peak_at_s: missing (a diurnal schedule needs it)'
scen mix_sched '{"workload": {"kind": "mix", "parts": [{"workload": {"kind": "open", "rate_schedule": [{"at_s": -1, "scale": 1}]}}]}}' 'workload.parts[0].workload.rate_schedule[0].at_s: expected a number in [0, 4e+09], got -1'
scen mix_top_sched '{"workload": {"kind": "mix", "rate_schedule": [{"at_s": 5, "scale": 1, "ramp_s": -2}], "parts": [{"workload": {"kind": "open"}}]}}' 'workload.rate_schedule[0].ramp_s: expected a number in [0, 4e+09], got -2'
tracex window_order mooncake '{"timestamp": 0, '"$mc" ', "start_s": 10, "end_s": 5' 'workload.end_s: expected more than start_s (10), got 5'
tracex window_start mooncake '{"timestamp": 0, '"$mc" ', "start_s": -1' 'workload.start_s: expected a number in [0, 4e+09], got -1'
tracex window_empty mooncake '{"timestamp": 0, '"$mc"'{"timestamp": 2000, '"$mc" ', "start_s": 5' "$T/window_empty.trace: no request arrives in the window [5 s, its end) that workload.start_s and end_s cut from the trace (times from the trace's first arrival)"
tracex trace_sched kvsim '{"session": 1, "turn": 1, "arrival_s": 0, '"$kv" ', "rate_schedule": {"kind": "diurnal", "min_scale": 1, "max_scale": 2}' 'workload.rate_schedule.peak_at_s: missing (a diurnal schedule needs it)'

# plan --search autoscale: each --autoscaler is checked as cluster.autoscaler would be,
# named by its position, before any run; the options that go only with it
P="plan workloads/scenarios/chat.json --slo ttft_p99=1"
PL='{"kind":"planner","max_nodes":4}'
bad day_as_kind '--autoscaler #2: cluster.autoscaler.kind: missing (expected "hpa", "planner" or "none")' $P --search autoscale --autoscaler "$PL" --autoscaler '{}' --out "$T/out_day_as_kind"
bad day_as_none '--autoscaler #1: kind "none" is the static fleet, which the search finds' $P --search autoscale --autoscaler '{"kind":"none"}' --out "$T/out_day_as_none"
bad day_as_max '--autoscaler #2: cluster.autoscaler.max_nodes: missing (the most nodes the pool may hold)' $P --search autoscale --autoscaler "$PL" --autoscaler '{"kind":"hpa","metric":"queue_per_node","target":4}' --out "$T/out_day_as_max"
bad day_as_busy '--autoscaler #1: cluster.autoscaler.target: busy is a fraction; expected a target in (0, 1], got 4' $P --search autoscale --autoscaler '{"kind":"hpa","metric":"busy","target":4,"max_nodes":4}' --out "$T/out_day_as_busy"
bad day_as_minmax '--autoscaler #1: cluster.autoscaler.min_nodes: expected at most max_nodes (4), got 5' $P --search autoscale --autoscaler '{"kind":"planner","max_nodes":4,"min_nodes":5}' --out "$T/out_day_as_minmax"
bad day_as_search 'kvsim plan: --autoscaler goes with --search autoscale' $P --search nodes --autoscaler "$PL" --out "$T/out_day_as_search"
bad day_rank_search 'kvsim plan: --rank goes with --search autoscale' $P --search rate --rank cost --out "$T/out_day_rank_search"
bad day_gpus "kvsim plan: --search autoscale plans the scenario's own GPUs and rate; --gpus does not go with it" $P --search autoscale --gpus H200 --out "$T/out_day_gpus"

# --- r3: command-line values as strict as files; derived dimensions; ranges
# --set VALUE is JSON only when all of it is: a unit or trailing text makes it
# the string it reads as, rejected with the message the same string in a file gets
bad set_unit_duration 'duration_s: expected a number in [1e-06, 1e+09], got a string' run "$T/ok.json" --set duration_s=10m --out "$T/out_set_unit_duration" --quiet
bad set_unit_slo 'slo.ttft_p99_s: expected a number in [1e-09, 1e+09], got a string' run "$T/ok.json" --set slo.ttft_p99_s=500ms --out "$T/out_set_unit_slo" --quiet
bad set_trailing_nodes 'cluster.nodes: expected an integer in [1, 1000000], got a string' run "$T/ok.json" --set cluster.nodes=4x --out "$T/out_set_trailing_nodes" --quiet

# Hugging Face config.json: a key twice (transformers takes the last), a head
# width that rounds down to 0, dense-layer lists that name no layer
printf '{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "hidden_size": 8192, "num_attention_heads": 32, "vocab_size": 128256, "max_position_embeddings": 8192, "intermediate_size": 14336}' >"$T/hf/dup.json"
scen hf_dup_key '{"cluster": {"model": "hf/dup.json"}}' "cluster.model: $T/hf/dup.json: hidden_size: duplicate key (given more than once; expected once)"
printf '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 32, "vocab_size": 1000, "max_position_embeddings": 8192, "intermediate_size": 64}' >"$T/hf/narrow.json"
scen hf_head_dim "{\"cluster\": {\"model\": \"hf/narrow.json\"}}" "cluster.model: $T/hf/narrow.json: head_dim: missing, and hidden_size / num_attention_heads (16 / 32) rounds down to 0"
for l in -1 1000 '"x"' 1.5; do
	printf '{"model_type": "qwen2_moe", "num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192, "intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "mlp_only_layers": [%s]}' "$l" >"$T/hf/mlp_only.json"
	scen hf_mlp_only_$n '{"cluster": {"model": "hf/mlp_only.json"}}' "cluster.model: $T/hf/mlp_only.json: mlp_only_layers[0]: expected a layer index in [0, 23], got $l"
done

# autoscaler ranges: every slot is allocated at the start, so max_nodes is held
# to a Kubernetes cluster's 5,000 nodes; Holt's alpha 0 never follows the load
scen as_max_bound '{"cluster": {"nodes": 2, "autoscaler": {"kind": "planner", "max_nodes": 100000}}}' 'cluster.autoscaler.max_nodes: expected at most 40000 (a Kubernetes cluster'"'"'s 5,000 nodes, here DGX-H100 servers of 8 GPUs at tp 1: 8 replicas each), got 100000'
scen as_max_bound_tp '{"cluster": {"model": "Llama-3-70B", "tp": 4, "pools": [{"nodes": 1, "autoscaler": {"kind": "hpa", "metric": "busy", "target": 0.5, "max_nodes": 1000000}}]}}' 'cluster.pools[0].autoscaler.max_nodes: expected at most 10000'
scen as_alpha_zero '{"cluster": {"nodes": 2, "autoscaler": {"kind": "planner", "predictor": "holt", "alpha": 0, "max_nodes": 4}}}' 'cluster.autoscaler.alpha: expected a number in (0, 1] (at 0 the forecast never follows the load), got 0'

# inference-perf's config.yaml: YAML errors name the file and line; bad keys the key
ip_case() { # NAME YAML FRAGMENT
	printf '%s' "$2" >"$T/$1.yaml"
	printf '{"workload": {"kind": "inference_perf", "config": "%s.yaml"}}' "$1" >"$T/$1.json"
	bad "$1" "$T/$1.json: $3" run "$T/$1.json" --out "$T/out_$1"
}
ip_case ip_flow "$(printf 'data:\n  type: shared_prefix\nload: {type: constant, stages: [1, 2\nserver: x\n')" "$T/ip_flow.yaml:4: "
ip_case ip_dup "$(printf 'data:\n  type: random\n  type: shared_prefix\n')" "$T/ip_dup.yaml:3: duplicate key \"type\""
ip_case ip_tab "$(printf 'data:\n\ttype: random\n')" "$T/ip_tab.yaml:2: "
ip_case ip_alias "$(printf 'a: &x 1\nb: *x\n')" "$T/ip_alias.yaml:2: aliases (*name) are not supported"
ip_case ip_kind "$(printf 'data:\n  type: sharegpt\nload:\n  stages: [{rate: 1, duration: 1}]\n')" "$T/ip_kind.yaml: data.type: expected one of shared_prefix, random, synthetic, got \"sharegpt\""
ip_case ip_key "$(printf 'data:\n  type: shared_prefix\n  shared_prefix: {num_groups: 2, prompts: 3}\nload:\n  stages: [{rate: 1, duration: 1}]\n')" "$T/ip_key.yaml: data.shared_prefix.prompts: unknown key"
ip_case ip_count "$(printf 'data:\n  type: random\n  input_distribution: {mean: 100}\n  output_distribution: {mean: 10, total_count: 5}\nload:\n  stages: [{rate: 1, duration: 1}]\n')" "$T/ip_count.yaml: data.input_distribution.total_count: required for this data type"
ip_case ip_stage "$(printf 'data:\n  type: shared_prefix\n  shared_prefix: {}\nload:\n  type: constant\n  stages: [{rate: 0, duration: 10}]\n')" "$T/ip_stage.yaml: load.stages[0].rate: expected a number in [1e-09, 1e+07], got 0"
ip_case ip_load "$(printf 'data:\n  type: shared_prefix\n  shared_prefix: {}\nload:\n  type: concurrent\n  stages: [{num_requests: 10, concurrency_level: 2}]\n')" "$T/ip_load.yaml: load.type: expected one of constant, poisson, got \"concurrent\""
scen ip_noconfig '{"workload": {"kind": "inference_perf"}}' 'workload.config: required (inference-perf'"'"'s config.yaml)'
scen vb_ratio '{"workload": {"kind": "vllm_bench", "random_range_ratio": 1}}' 'workload.random_range_ratio: expected a number in [0, 0.999999], got 1'
scen vb_rate '{"workload": {"kind": "vllm_bench", "request_rate": "fast"}}' 'workload.request_rate: expected a number'
scen client_key '{"client": {"api_ms": 1}}' 'client.api_ms: unknown key'

# an unpriced GPU has no cost: plan will not rank it by cost
printf '{"gpus": {"X1": {"bf16_flops": 1e15, "hbm_bytes": 100e9, "hbm_bytes_per_s": 4e12, "tdp_w": 800, "link": "nvlink4"}}}' >"$T/cat_x1.json"
bad plan_unpriced 'kvsim plan: catalog.gpus.X1.price_per_hour: missing; plan ranks the fleets by cost, so every GPU needs a price (USD per GPU-hour)' plan "$T/ok.json" --catalog "$T/cat_x1.json" --slo ttft_p99=1 --search nodes --gpus H100-SXM,X1 --max 2 --out "$T/out_plan_unpriced"

echo "bad inputs: $pass passed, $fail failed ($n cases)"
[ "$fail" -eq 0 ]
