/* check_cost: the roofline and fixed models against hand-computed values. */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "config/config.h"
#include "model/cost.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static void model_for(const char *json, struct cost_model *cm, struct scenario *s)
{
	th_scenario(json, NULL, s);
	cost_init(cm, &s->cluster, s->weight_bytes);
}

/* Round attention and overhead figures for H100 (catalog overrides). */
#define ROUND_H100                                                                             \
	"\"catalog\": {\"gpus\": {\"H100-SXM\": {\"iteration_overhead\": {\"base_ms\": 2, "         \
	"\"per_seq_ms\": 0}, \"attention\": {\"flashinfer\": {\"prefill\": {\"fixed_us\": 10, "       \
	"\"efficiency\": 0.5, \"causal\": 0.5, \"rows_half\": 1000, \"context_half\": 1000}, "       \
	"\"decode\": {\"fixed_us\": 5, \"per_head_us\": 0.01, \"bandwidth\": 0.8}}}}}}"
/* docs/design.md's plain roofline (the calibrated terms switched off) with them,
 * under vllm-0.6's engine terms (every kernel launched, the CPU in series). */
static const char *plain = "{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}, \"cost_model\": {\"mfu\": 0.7, \"mbu\": 0.8, \"knee\": 0, "
			   "\"op_overhead_us\": 0}}, " ROUND_H100 "}";

/* ROUND_H100's attention of one layer, by hand: Llama-3-8B on one H100
 * (32 q heads, 8 KV heads of 128, 4,096 KV bytes per token and layer). */
static double round_prefill(double n, double c)
{
	double flops = 4.0 * 32 * 128 * (n * c + 0.5 * n * n);
	double eff = 0.5 * (n * 32) / (n * 32 + 1000) * (c + n) / (c + n + 1000);
	return 10e-6 + flops / (989e12 * eff);
}
static double round_decode(double d, double sum_k)
{
	return 5e-6 + 0.01e-6 * d * 8 + sum_k * 4096 / (3.35e12 * 0.8);
}

START_TEST(llama3_8b_decode_on_h100_is_memory_bound)
{
	struct scenario s;
	struct cost_model cm;
	model_for(plain, &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 1000);
	/* Weights 8.03e9 params * 2 B over 0.8 * 3.35 TB/s, 32 layers of
	 * decode attention (5 us + 0.08 us for 8 KV heads + 1,000 tokens x
	 * 4,096 B over 0.8 * 3.35 TB/s), plus the 2 ms overhead. FLOPs
	 * (1.6e10) over 0.7 * 989 TFLOP/s take 23 us: memory bound. */
	double attn = 32 * (5e-6 + 0.08e-6 + 1000 * 4096 / (0.8 * 3.35e12));
	double expect = 8.03e9 * 2 / (0.8 * 3.35e12) + attn + 0.002;
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.attention_s, attn, 1e-15);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), expect, 1e-12);
	ck_assert_int_eq(cost_iteration_ns(&cm, &b), (int64_t)llround(expect * 1e9));
	ck_assert_double_eq_tol(expect, 0.008204005, 1e-9);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(llama3_8b_prefill_is_compute_bound)
{
	struct scenario s;
	struct cost_model cm;
	model_for(plain, &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 2048, 0);
	/* Linear layers 2 * 8.03e9 * 2048 FLOPs; attention 4 * 32 heads * 128
	 * * (0 + 0.5 * 2048^2) FLOPs per layer at 0.5 x 65,536 / 66,536 x
	 * 2,048 / 3,048 of the peak, plus 10 us. */
	double lin = 2 * 8.03e9 * 2048 / (0.7 * 989e12);
	double flops = 4.0 * 32 * 128 * (0.5 * 2048.0 * 2048);
	double eff = 0.5 * 65536 / 66536 * 2048 / 3048;
	double attn = 32 * (10e-6 + flops / (989e12 * eff));
	ck_assert_double_eq_tol(attn, 32 * round_prefill(2048, 0), 1e-15);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), lin + attn + 0.002, 1e-12);
	/* The same chunk after 1,000 cached tokens attends over more. */
	cost_batch_clear(&b);
	cost_add_prefill(&b, 2048, 1000);
	attn = 32 * round_prefill(2048, 1000);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), lin + attn + 0.002, 1e-12);
	/* The marginal (recompute) cost drops the overhead. */
	ck_assert_double_eq_tol(cost_prefill_s(&cm, 2048, 1000), lin + attn, 1e-12);
	cfg_scenario_free(&s);
}
END_TEST

/* A batch mixing two prefill chunks and three decodes: the chunks' sums
 * (rows, sum n c, sum n^2, mean context) and the decodes' total KV. */
START_TEST(attention_term_of_a_mixed_batch)
{
	struct scenario s;
	struct cost_model cm;
	model_for(plain, &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 512, 1536);
	cost_add_prefill(&b, 256, 0);
	cost_add_decode(&b, 1000);
	cost_add_decode(&b, 2000);
	cost_add_decode(&b, 3000);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	/* rows 768, sum n c = 512 x 1536, sum n^2 = 512^2 + 256^2, mean context
	 * (2048 + 256) / 2 = 1152 */
	double rows = 768, nc = 512.0 * 1536, nsq = 512.0 * 512 + 256.0 * 256, ctx = 1152;
	double flops = 4.0 * 32 * 128 * (nc + 0.5 * nsq);
	double eff = 0.5 * (rows * 32) / (rows * 32 + 1000) * ctx / (ctx + 1000);
	double pre = 10e-6 + flops / (989e12 * eff);
	ck_assert_double_eq_tol(p.attention_s, 32 * (pre + round_decode(3, 6000)), 1e-15);
	/* one prefill alone is round_prefill; the decodes alone round_decode */
	cost_batch_clear(&b);
	cost_add_prefill(&b, 512, 1536);
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.attention_s, 32 * round_prefill(512, 1536), 1e-15);
	/* the engine overhead: base plus per request in the batch */
	cfg_scenario_free(&s);
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}, \"cost_model\": {\"overhead_ms\": 1, \"overhead_per_seq_ms\": 0.25}}}",
		  &cm, &s);
	cost_batch_clear(&b);
	cost_add_prefill(&b, 100, 0);
	cost_add_decode(&b, 10);
	cost_add_decode(&b, 10);
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.overhead_s, 1e-3 + 3 * 0.25e-3, 1e-15);
	cfg_scenario_free(&s);
	/* the GPU's catalog line by default: 1.2355 ms + 0.03599 ms a request */
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}}}", &cm, &s);
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.overhead_s, 1.2355e-3 + 3 * 0.03599e-3, 1e-15);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(tensor_parallel_adds_all_reduces)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}, \"model\": \"Llama-3-70B\", \"tp\": 4, \"nodes_per_server\": 2, "
		  "\"cost_model\": {\"mfu\": 0.7, \"mbu\": 0.8, \"knee\": 0, \"op_overhead_us\": 0}}, "
		  ROUND_H100 "}",
		  &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 500);
	double mem = 70.6e9 * 2 / (4 * 0.8 * 3.35e12);
	/* Attention per GPU: 2 of the 8 KV heads, 1,024 B per token and
	 * layer, 80 layers. */
	double attn = 80 * (5e-6 + 0.01e-6 * 2 + 500 * 1024 / (3.35e12 * 0.8));
	/* Two all-reduces per layer of hidden * 2 B per token, by H100's
	 * calibrated 4-GPU line: 30.613 us + 4.144 us per MiB. */
	double comm = 2 * 80 * (30.613e-6 + 4.144e-6 * 16384.0 / 1048576);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), mem + attn + comm + 0.002, 1e-12);
	cfg_scenario_free(&s);
	/* A GPU without a calibrated line (B200): a ring over its NVLink,
	 * 2 * 80 * (latency + 2 * 3/4 * 16384 B / bandwidth). */
	model_for("{\"cluster\": {\"gpu\": \"B200\", \"model\": \"Llama-3-70B\", \"tp\": 4}}", &cm, &s);
	cost_batch_clear(&b);
	cost_add_decode(&b, 500);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	const struct cat_link *l = s.cluster.intra_server;
	ck_assert_double_eq_tol(p.comm_s, 2 * 80 * (l->latency_s + 1.5 * 16384.0 / l->bytes_per_s),
				1e-15);
	cfg_scenario_free(&s);
}
END_TEST

/* The calibrated roofline: (C^k + M^k)^(1/k) + 9 kernels per layer, the
 * catalog's attention fit and engine overhead. */
START_TEST(calibrated_roofline_is_a_smooth_max_plus_kernels)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}, \"gpu\": \"A100-80G\"}}", &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 128, 0);
	double C = 2 * 8.03e9 * 128 / (312e12 * 0.7431), M = 8.03e9 * 2 / (2.039e12 * 0.8490);
	double k = 1.4403;
	/* A100's FlashInfer fit: 128 rows x 32 heads, context 128 */
	double flops = 4.0 * 32 * 128 * (0.3987 * 128 * 128);
	double eff = 0.4906 * 4096 / (4096 + 1563.4) * 128 / (128 + 1057.7);
	double attn = 32 * (11.494e-6 + flops / (312e12 * eff));
	double expect = pow(pow(C, k) + pow(M, k), 1 / k) + 32 * 9 * 6.208e-6 + attn + 1.2355e-3 +
			0.03599e-3;
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.compute_s, C, 1e-15);
	ck_assert_double_eq_tol(p.memory_s, M, 1e-15);
	ck_assert_double_eq_tol(p.kernels_s, 32 * 9 * 6.208e-6, 1e-15);
	ck_assert_double_eq_tol(p.attention_s, attn, 1e-15);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), expect, 1e-12);
	/* The smooth max lies between max(C, M) and C + M. */
	ck_assert_double_gt(p.combined_s, fmax(C, M));
	ck_assert_double_lt(p.combined_s, C + M);
	/* A recompute's marginal cost leaves the fixed costs out. */
	ck_assert_double_eq_tol(cost_prefill_s(&cm, 128, 0), p.combined_s + attn, 1e-15);
	cfg_scenario_free(&s);
	/* FP8 on H100: the calibrated FP8 efficiencies (of 1,979 TFLOP/s and
	 * 3.35 TB/s), attention at the 16-bit peak */
	model_for("{\"cluster\": {\"dtype\": \"fp8\"}}", &cm, &s);
	ck_assert_double_eq_tol(cm.flops_per_s, 1979e12 * 0.4853, 1);
	ck_assert_double_eq_tol(cm.bytes_per_s, 3.35e12 * 0.6931, 1);
	ck_assert_double_eq(cm.shape.peak_flops, 989e12);
	cfg_scenario_free(&s);
}
END_TEST

/* cluster.engine.version pins the engine's terms (docs/model.md, "The engine
 * as it runs"), by hand for Llama-3-8B on one H100 (32 layers, 6.202 us per
 * kernel, the CPU line 1.2355 ms + 0.03599 ms a request) and Llama-3-70B on
 * four (80 layers, hidden 8192). */
START_TEST(engine_versions_pin_their_terms)
{
	struct scenario s;
	struct cost_model cm;
	struct cost_batch dec, mixed, big;
	struct cost_parts p;
	cost_batch_clear(&dec);
	cost_add_decode(&dec, 100);
	cost_add_decode(&dec, 100);
	cost_batch_clear(&mixed);
	cost_add_prefill(&mixed, 100, 0);
	cost_add_decode(&mixed, 100);
	cost_batch_clear(&big);
	cost_add_prefill(&big, 600, 0); /* above the 512-token graphs */
	double cpu2 = 1.2355e-3 + 2 * 0.03599e-3;
	/* vllm-0.15 (the default): a decode-only batch replays a full graph (no
	 * launch), a mixed one launches its 32 attention kernels, one above
	 * the largest graph all 9 x 32; each step adds step_ms 1.6; the CPU
	 * (1.31 ms) hides under the GPU's step */
	model_for("{}", &cm, &s);
	ck_assert_int_eq(s.cluster.engine.version, ENGINE_VLLM_0_15);
	ck_assert_int_eq(cm.graph_max_tokens, 512); /* min(2 x 1024, 512) */
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq_tol(p.kernels_s, 1.6e-3, 1e-15);
	ck_assert_double_eq(p.overhead_s, 0);
	ck_assert_double_eq_tol(p.total_s, p.combined_s + p.attention_s + 1.6e-3, 1e-15);
	cost_parts(&cm, &mixed, &p);
	ck_assert_double_eq_tol(p.kernels_s, 32 * 6.202e-6 + 1.6e-3, 1e-15);
	cost_parts(&cm, &big, &p);
	ck_assert_double_eq_tol(p.kernels_s, 32 * 9 * 6.202e-6 + 1.6e-3, 1e-15);
	cfg_scenario_free(&s);
	/* a CPU slower than the GPU: the step lasts the CPU's time */
	model_for("{\"cluster\": {\"cost_model\": {\"overhead_ms\": 100}}}", &cm, &s);
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq_tol(p.total_s, 0.1 + 2 * 0.03599e-3, 1e-12);
	cfg_scenario_free(&s);
	/* vllm-0.6: every kernel launched, the CPU in series, no step term */
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}}}", &cm, &s);
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq_tol(p.kernels_s, 32 * 9 * 6.202e-6, 1e-15);
	ck_assert_double_eq_tol(p.overhead_s, cpu2, 1e-15);
	ck_assert_double_eq_tol(p.total_s, p.combined_s + p.attention_s + p.kernels_s + cpu2, 1e-15);
	cfg_scenario_free(&s);
	/* vidur: no launch, CPU or step cost */
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vidur\"}}}", &cm, &s);
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq(p.kernels_s, 0);
	ck_assert_double_eq(p.overhead_s, 0);
	ck_assert_double_eq_tol(p.total_s, p.combined_s + p.attention_s, 1e-15);
	cfg_scenario_free(&s);
	/* TP 4 within NVLink: two decodes' activations (2 x 8192 x 2 B = 32 KiB)
	 * take the custom all-reduce (8.68 us + 34.98 us/MiB), below NCCL's
	 * line (30.613 us + 4.144 us/MiB); vllm-0.6 keeps NCCL's */
	model_for("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 4}}", &cm, &s);
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq_tol(p.comm_s, 2 * 80 * (8.68e-6 + 34.98e-6 / 32), 1e-12);
	cfg_scenario_free(&s);
	model_for("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 4, \"engine\": "
		  "{\"version\": \"vllm-0.6\"}}}",
		  &cm, &s);
	cost_parts(&cm, &dec, &p);
	ck_assert_double_eq_tol(p.comm_s, 2 * 80 * (30.613e-6 + 4.144e-6 / 32), 1e-12);
	cfg_scenario_free(&s);
}
END_TEST

/* vLLM 0.15's batch defaults by GPU class (vllm/engine/arg_utils.py):
 * 1024 and 8192 on an H100, 256 and 2048 on an A100; the older presets
 * keep 256 and 8192; explicit keys win. */
START_TEST(engine_version_sets_batch_defaults)
{
	static const struct {
		const char *json;
		int seqs, tokens;
	} cases[] = {
	    {"{}", 1024, 8192},
	    {"{\"cluster\": {\"gpu\": \"A100-80G\"}}", 256, 2048},
	    {"{\"cluster\": {\"gpu\": \"L40S\"}}", 256, 2048},
	    {"{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}}}", 256, 8192},
	    {"{\"cluster\": {\"engine\": {\"version\": \"vidur\"}}}", 256, 8192},
	    {"{\"cluster\": {\"engine\": {\"max_num_seqs\": 128, \"max_num_batched_tokens\": "
	     "2048}}}",
	     128, 2048},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct scenario s;
		th_scenario(cases[i].json, NULL, &s);
		ck_assert_int_eq(s.cluster.engine.max_num_seqs, cases[i].seqs);
		ck_assert_int_eq(s.cluster.engine.max_num_batched_tokens, cases[i].tokens);
		cfg_scenario_free(&s);
	}
}
END_TEST

START_TEST(fixed_model_is_base_plus_per_token)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, "
		  "\"per_token_ms\": 0.08}}}",
		  &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 100, 0);
	cost_add_decode(&b, 4000);
	cost_add_decode(&b, 10);
	/* 102 tokens in the batch: 2 ms + 102 * 0.08 ms. */
	ck_assert_int_eq(cost_iteration_ns(&cm, &b), 10160000);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(kv_capacity_follows_memory_budget)
{
	struct scenario s;
	th_scenario("{}", NULL, &s);
	/* H100 memory as nvidia-smi reports it, 81,559 MiB, * 0.9 - 16.06e9
	 * weights - 1 GiB reserve, over 16 * 131,072 B: 28,531 blocks, 456,496
	 * tokens. */
	double kv = 81559 * 1048576.0 * 0.9 - 8.03e9 * 2 - 1073741824.0;
	ck_assert_int_eq(s.kv_blocks_per_node, (int64_t)floor(kv / (16 * 131072.0)));
	ck_assert_int_eq(s.kv_blocks_per_node, 28531);
	cfg_scenario_free(&s);
}
END_TEST

/* Iteration times are whole nanoseconds: the nearest, halves up, never 0
 * (a zero-length iteration would stall the clock). */
START_TEST(iteration_ns_is_the_nearest_whole_ns_and_at_least_one)
{
	static const struct {
		const char *base_ms;
		int64_t ns;
	} cases[] = {
	    {"1e-9", 1},        {"1e-7", 1},      {"6e-7", 1},       {"1.6e-6", 2},
	    {"7.2e-6", 7},      {"1.5e-6", 2},    {"2.5e-6", 3},     {"0.0125", 12500}, {"1234.5678", 1234567800},
	    {"1000000", 1000000000000},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char json[256];
		snprintf(json, sizeof json,
			 "{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": %s, "
			 "\"per_token_ms\": 0}}}",
			 cases[i].base_ms);
		struct scenario s;
		struct cost_model cm;
		model_for(json, &cm, &s);
		struct cost_batch b;
		cost_batch_clear(&b);
		cost_add_decode(&b, 100);
		ck_assert_msg(cost_iteration_ns(&cm, &b) == cases[i].ns, "base_ms %s: %lld, expected %lld",
			      cases[i].base_ms, (long long)cost_iteration_ns(&cm, &b),
			      (long long)cases[i].ns);
		cfg_scenario_free(&s);
	}
}
END_TEST

/* A batch of n decodes over 1-30,000 tokens each, drawn from state's bits. */
static void random_decodes(struct cost_batch *b, uint32_t n, uint64_t state)
{
	cost_batch_clear(b);
	for (uint32_t i = 0; i < n; i++)
		cost_add_decode(b, 1 + (double)((state >> (i % 40)) % 30000));
}

/* cost_span_ns gives each iteration of a decode span exactly what
 * cost_iteration_ns gives it, for the calibrated smooth max (H100, A100),
 * the plain max, tensor parallelism, a steep knee, the fixed model, the
 * measured-layers model and a knee under 1 (not convex: evaluated one by
 * one), over spans of every length and offset that a node asks for, in
 * chunks that share the span's grid, with and without the slope at
 * iteration 0, with the spacing cost_span_grid picks, 16, and others; and
 * the convex models need far fewer evaluations than iterations. */
START_TEST(span_times_equal_one_evaluation_per_iteration)
{
	const char *models[] = {
	    "{}",
	    "{\"cluster\": {\"gpu\": \"A100-80G\"}}",
	    "{\"cluster\": {\"cost_model\": {\"mfu\": 0.7, \"mbu\": 0.8, \"knee\": 0, "
	    "\"op_overhead_us\": 0}}}",
	    "{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 4}}",
	    "{\"cluster\": {\"cost_model\": {\"knee\": 6}}}",
	    "{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, "
	    "\"per_token_ms\": 0.08}}}",
	    "{\"cluster\": {\"gpu\": \"A100-80G\", \"model\": \"Llama-2-7B\", "
	    "\"cost_model\": {\"kind\": \"profile\"}}}",
	    "{\"cluster\": {\"cost_model\": {\"knee\": 0.5}}}",
	};
	int64_t got[300];
	uint64_t state = 12345;
	for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
		struct scenario s;
		struct cost_model cm;
		model_for(models[mi], &cm, &s);
		uint64_t iters = 0, evals = 0;
		for (int trial = 0; trial < 400; trial++) {
			state = state * 6364136223846793005ULL + 1442695040888963407ULL;
			uint32_t batch = 1 + (uint32_t)(state >> 33) % 256;
			uint32_t from = 1 + (uint32_t)(state >> 20) % 40;
			uint32_t n = (uint32_t)(state >> 45) % 260;
			struct cost_batch b0;
			random_decodes(&b0, batch, state);
			/* Every other span knows iteration 0's x already; the span is
			 * asked for in one to three chunks sharing its grid. */
			double grid[300 / COST_SPAN_GRID_MIN + 3];
			struct cost_span sp = {grid, 0, 16, NAN};
			if (trial % 2) {
				struct cost_x x;
				ck_assert_int_eq(cost_iteration_ns_x(&cm, &b0, &x),
						 cost_iteration_ns(&cm, &b0));
				grid[0] = x.x;
				sp.n_grid = 1;
				if (trial % 4 == 1) { /* half of them know the slope too */
					sp.slope0 = x.slope;
					sp.G = cost_span_grid(&x);
				}
			}
			/* any spacing gives the same times (only the evaluations'
			 * count changes: these are not counted) */
			int odd = trial % 10 == 4;
			if (odd)
				sp.G = COST_SPAN_GRID_MIN + (uint32_t)(state >> 27) % 200;
			uint32_t cut1 = from + (n ? (uint32_t)(state >> 7) % (n + 1) : 0);
			uint32_t cut2 = cut1 + (from + n > cut1 ? (uint32_t)(state >> 13) % (from + n - cut1 + 1) : 0);
			if (trial % 3 == 0)
				cut1 = cut2 = from + n;
			uint32_t e = cost_span_ns(&cm, &b0, from, cut1, &sp, got);
			e += cost_span_ns(&cm, &b0, cut1, cut2, &sp, got + (cut1 - from));
			e += cost_span_ns(&cm, &b0, cut2, from + n, &sp, got + (cut2 - from));
			ck_assert_uint_le(sp.n_grid, (from + n) / sp.G + 3);
			if (!odd) {
				evals += e;
				iters += n;
			}
			for (uint32_t j = from; j < from + n; j++) {
				struct cost_batch b = b0;
				b.attn_pairs = b0.attn_pairs + j * (double)b0.decodes;
				b.kv_tokens = b0.kv_tokens + j * (double)b0.decodes;
				ck_assert_msg(got[j - from] == cost_iteration_ns(&cm, &b),
					      "model %zu, batch %u, iteration %u: %lld != %lld", mi,
					      batch, j, (long long)got[j - from],
					      (long long)cost_iteration_ns(&cm, &b));
			}
		}
		/* the last two are evaluated one by one: measured attention
		 * (piecewise linear) and a knee under 1 are not convex */
		if (mi + 2 < sizeof models / sizeof *models)
			ck_assert_msg(evals * 3 < iters, "model %zu: %llu evaluations for %llu", mi,
				      (unsigned long long)evals, (unsigned long long)iters);
		else
			ck_assert_uint_eq(evals, iters);
		cfg_scenario_free(&s);
	}
}
END_TEST

/* x at iteration j of a decode span of b0 (j may be fractional). */
static double span_ns_at(const struct cost_model *cm, const struct cost_batch *b0, double j)
{
	struct cost_batch b = *b0;
	b.attn_pairs += j * b0->decodes;
	b.kv_tokens += j * b0->decodes;
	return cost_iteration_s(cm, &b) * 1e9;
}

/* cost_iteration_ns_x's slope and curvature: by hand for the plain
 * roofline (KV bytes of one token per decode and layer over the decode
 * bandwidth; a straight line) and the fixed model (none); by central
 * differences for the calibrated models and the profile model (its slope:
 * measured attention bends between measured lines, so no curvature is
 * claimed there); and a tangent of the calibrated models: no iteration
 * lies below it. */
START_TEST(span_slope_is_the_iteration_times_derivative)
{
	struct scenario s;
	struct cost_model cm;
	struct cost_batch b;
	struct cost_x x;
	model_for(plain, &cm, &s);
	cost_batch_clear(&b);
	for (int i = 0; i < 3; i++)
		cost_add_decode(&b, 1000);
	cost_iteration_ns_x(&cm, &b, &x);
	ck_assert_double_eq_tol(x.slope, 131072.0 * 3 / (0.8 * 3.35e12) * 1e9, 1e-12);
	ck_assert(x.curv == 0);
	ck_assert_uint_eq(cost_span_grid(&x), COST_SPAN_GRID_MAX);
	cfg_scenario_free(&s);

	model_for("{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, "
		  "\"per_token_ms\": 0.08}}}", &cm, &s);
	cost_iteration_ns_x(&cm, &b, &x);
	ck_assert(x.slope == 0 && x.curv == 0);
	cfg_scenario_free(&s);

	const char *models[] = {"{}", "{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 4}}",
				"{\"cluster\": {\"gpu\": \"A100-80G\", \"model\": \"Llama-2-7B\", "
				"\"cost_model\": {\"kind\": \"profile\"}}}"};
	for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
		model_for(models[mi], &cm, &s);
		/* 64 decodes over 500 tokens; 256 over 60,000 (long contexts) */
		const uint32_t batch[] = {64, 256}, tokens[] = {500, 60000};
		for (int c = 0; c < 2; c++) {
			cost_batch_clear(&b);
			for (uint32_t i = 0; i < batch[c]; i++)
				cost_add_decode(&b, tokens[c]);
			cost_iteration_ns_x(&cm, &b, &x);
			double h = 1e-2, fd = (span_ns_at(&cm, &b, h) - span_ns_at(&cm, &b, -h)) / (2 * h);
			ck_assert_msg(x.slope > 0 && fabs(x.slope - fd) <= 1e-6 * x.slope,
				      "model %zu case %d: %.9g != %.9g", mi, c, x.slope, fd);
			if (mi == 2)
				continue;
			double H = 64, fd2 = (span_ns_at(&cm, &b, H) - 2 * x.x + span_ns_at(&cm, &b, -H)) / (H * H);
			ck_assert_msg(fabs(x.curv - fd2) <= 1e-2 * fabs(fd2) + 1e-9,
				      "model %zu case %d: curvature %.9g != %.9g", mi, c, x.curv, fd2);
			for (uint32_t j = 1; j <= 64; j++)
				ck_assert(span_ns_at(&cm, &b, j) >= x.x + x.slope * j - 1e-12 * x.x);
		}
		cfg_scenario_free(&s);
	}
}
END_TEST

/* A span cut inside its first grid interval (the usual case: an arrival
 * cuts it) costs one evaluation when the slope at its start is known, two
 * otherwise (plus those of iterations near a rounding boundary, fewer
 * with the tangent, which lies closer to the chord), and the same
 * iteration times either way. */
START_TEST(span_slope_saves_the_second_evaluation)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{\"cluster\": {\"engine\": {\"version\": \"vllm-0.6\"}}}", &cm, &s);
	uint64_t state = 777, with = 0, without = 0;
	const int trials = 300;
	for (int trial = 0; trial < trials; trial++) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		struct cost_batch b0;
		random_decodes(&b0, 1 + (uint32_t)(state >> 33) % 200, state);
		double grid[4];
		int64_t a[COST_SPAN_GRID_MIN], c[COST_SPAN_GRID_MIN];
		struct cost_x x;
		cost_iteration_ns_x(&cm, &b0, &x);
		struct cost_span sp = {grid, 1, COST_SPAN_GRID_MIN, x.slope};
		uint32_t to = 4 + (uint32_t)(state >> 50) % (COST_SPAN_GRID_MIN - 3);
		grid[0] = x.x;
		with += cost_span_ns(&cm, &b0, 1, to, &sp, a);
		sp = (struct cost_span){grid, 1, COST_SPAN_GRID_MIN, NAN};
		without += cost_span_ns(&cm, &b0, 1, to, &sp, c);
		for (uint32_t j = 1; j < to; j++) {
			struct cost_batch b = b0;
			b.attn_pairs += j * (double)b0.decodes;
			b.kv_tokens += j * (double)b0.decodes;
			ck_assert_int_eq(a[j - 1], cost_iteration_ns(&cm, &b));
			ck_assert_int_eq(c[j - 1], a[j - 1]);
		}
	}
	/* (and some near a rounding boundary: these batches are random, many
	 * near the knee, where x bends most) */
	ck_assert_uint_ge(without, 2 * (uint64_t)trials);
	/* (about half: a boundary evaluation either way is noise) */
	ck_assert_msg(with * 2 <= without + 2 && with * 3 <= 4 * (uint64_t)trials,
		      "%llu evaluations for %d spans (%llu without the slope)",
		      (unsigned long long)with, trials, (unsigned long long)without);
	cfg_scenario_free(&s);
}
END_TEST

/* cost_span_grid: the widest spacing where the iteration times run
 * straight (every calibrated roofline span: the decodes' attention is
 * linear in their context, the rest constant), narrower as they bend
 * (G^3 x'' <= 4); and over random spans the spacing it picks needs no
 * more evaluations than the narrowest and the widest. */
START_TEST(span_grid_follows_the_curvature)
{
	struct scenario s;
	struct cost_model cm;
	struct cost_batch b;
	struct cost_x x;
	model_for("{}", &cm, &s);
	cost_batch_clear(&b);
	for (int i = 0; i < 64; i++)
		cost_add_decode(&b, 500);
	cost_iteration_ns_x(&cm, &b, &x);
	ck_assert(x.curv == 0);
	ck_assert_uint_eq(cost_span_grid(&x), COST_SPAN_GRID_MAX);
	/* bending: 128^3 x 2e-6 = 4.2 > 4 halves it; 1e-3: 16^3 x 1e-3 =
	 * 4.1 > 4, so 8; a large curvature stops at the narrowest */
	struct cost_x bend = {1e7, 100, 2e-6};
	ck_assert_uint_eq(cost_span_grid(&bend), 64);
	bend.curv = 1e-3;
	ck_assert_uint_eq(cost_span_grid(&bend), 8);
	bend.curv = 1e3;
	ck_assert_uint_eq(cost_span_grid(&bend), COST_SPAN_GRID_MIN);

	uint64_t state = 4242, evals[3] = {0, 0, 0};
	for (int trial = 0; trial < 200; trial++) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		struct cost_batch b0;
		random_decodes(&b0, 1 + (uint32_t)(state >> 33) % 256, state);
		cost_iteration_ns_x(&cm, &b0, &x);
		const uint32_t Gs[3] = {cost_span_grid(&x), COST_SPAN_GRID_MIN, COST_SPAN_GRID_MAX};
		for (int g = 0; g < 3; g++) {
			double grid[512 / COST_SPAN_GRID_MIN + 3] = {x.x};
			int64_t out[512];
			struct cost_span sp = {grid, 1, Gs[g], x.slope};
			evals[g] += cost_span_ns(&cm, &b0, 1, 512, &sp, out);
		}
	}
	ck_assert_msg(evals[0] <= evals[1] && evals[0] <= evals[2], "%llu, %llu, %llu",
		      (unsigned long long)evals[0], (unsigned long long)evals[1],
		      (unsigned long long)evals[2]);
	ck_assert_uint_lt(evals[0], evals[1]);
	cfg_scenario_free(&s);
}
END_TEST

Suite *cost_suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, llama3_8b_decode_on_h100_is_memory_bound);
	tcase_add_test(tc, llama3_8b_prefill_is_compute_bound);
	tcase_add_test(tc, tensor_parallel_adds_all_reduces);
	tcase_add_test(tc, calibrated_roofline_is_a_smooth_max_plus_kernels);
	tcase_add_test(tc, attention_term_of_a_mixed_batch);
	tcase_add_test(tc, engine_versions_pin_their_terms);
	tcase_add_test(tc, engine_version_sets_batch_defaults);
	tcase_add_test(tc, fixed_model_is_base_plus_per_token);
	tcase_add_test(tc, kv_capacity_follows_memory_budget);
	tcase_add_test(tc, iteration_ns_is_the_nearest_whole_ns_and_at_least_one);
	tcase_add_test(tc, span_times_equal_one_evaluation_per_iteration);
	tcase_add_test(tc, span_slope_is_the_iteration_times_derivative);
	tcase_add_test(tc, span_slope_saves_the_second_evaluation);
	tcase_add_test(tc, span_grid_follows_the_curvature);
	suite_add_tcase(s, tc);
	return s;
}
