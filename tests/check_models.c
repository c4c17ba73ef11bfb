/* check_models: Hugging Face config import, mixture-of-experts weight
 * reads, MLA and GPU memory in the binary units the GPUs report, against
 * hand-computed values. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/catalog.h"
#include "config/config.h"
#include "model/cost.h"
#include "config/hfconfig.h"
#include "tests/helpers.h"
#include "tests/suites.h"

#define HF "tests/data/hf/"

static struct cat_model load(const char *path)
{
	struct cat_model m;
	char err[1024] = "";
	ck_assert_msg(hf_model_load(path, &m, err, sizeof err) == 0, "%s: %s", path, err);
	return m;
}

/* Llama-3-8B: embeddings 2 x 128,256 x 4,096 = 1,050,673,152; a layer's
 * attention 2 x 4,096^2 + 2 x 4,096 x 1,024 = 41,943,040, MLP 3 x 4,096 x
 * 14,336 = 176,160,768, norms 8,192: 218,112,000 x 32 = 6,979,584,000;
 * final norm 4,096. Total 8,030,261,248 (the model card's 8.03B). */
START_TEST(llama3_8b_parameters)
{
	struct cat_model m = load(HF "Meta-Llama-3-8B/config.json");
	ck_assert_str_eq(m.name, "Meta-Llama-3-8B");
	ck_assert_double_eq(m.params, 8030261248.0);
	ck_assert_double_eq(m.active_params, m.params);
	ck_assert_int_eq(m.layers, 32);
	ck_assert_int_eq(m.q_heads, 32);
	ck_assert_int_eq(m.kv_heads, 8);
	ck_assert_int_eq(m.head_dim, 128);
	ck_assert_int_eq(m.max_context, 8192);
	ck_assert_int_eq(m.experts, 0);
	/* 2 x 32 layers x 8 heads x 128 x 2 bytes */
	ck_assert_double_eq(m.kv_bytes_per_token, 131072.0);
}
END_TEST

/* Mixtral-8x7B: an expert 3 x 4,096 x 14,336 = 176,160,768; a layer's
 * attention 41,943,040, 8 experts 1,409,286,144, router 4,096 x 8 =
 * 32,768, norms 8,192: 1,451,270,144 x 32 = 46,440,644,608; embeddings 2 x
 * 32,000 x 4,096 = 262,144,000; final norm 4,096: 46,702,792,704 (46.7B).
 * Active: 6 experts fewer per layer, 46,702,792,704 - 32 x 6 x
 * 176,160,768 = 12,879,925,248 (12.9B). */
START_TEST(mixtral_parameters)
{
	struct cat_model m = load(HF "Mixtral-8x7B-v0.1/config.json");
	ck_assert_double_eq(m.params, 46702792704.0);
	ck_assert_double_eq(m.active_params, 12879925248.0);
	ck_assert_int_eq(m.experts, 8);
	ck_assert_int_eq(m.experts_per_token, 2);
	ck_assert_int_eq(m.moe_layers, 32);
	ck_assert_double_eq(m.expert_params, 176160768.0);
	ck_assert_int_eq(m.max_context, 32768);
}
END_TEST

/* DeepSeek-V3: MLA per layer q_a 7,168 x 1,536 + norm 1,536 + q_b 1,536
 * x 128 x 192, kv_a 7,168 x 576 + norm 512 + kv_b 512 x 128 x 256, o 128 x
 * 128 x 7,168: 187,107,328; norms 14,336. 3 dense layers (MLP 3 x 7,168 x
 * 18,432 = 396,361,728): 583,483,392 each; 58 MoE layers: 256 experts of 3
 * x 7,168 x 2,048 = 44,040,192, one shared, router 256 x 7,168 and its
 * 256 biases: 11,507,286,272 each. Embeddings 2 x 129,280 x 7,168 =
 * 1,853,358,080, final norm 7,168. Total 671,026,419,200 (671B); active
 * 248 experts fewer per MoE layer: 37,552,297,472 (37B published: +1.5%,
 * the input embedding being a lookup counted here). */
START_TEST(deepseek_v3_parameters_and_mla)
{
	struct cat_model m = load(HF "DeepSeek-V3/config.json");
	ck_assert_double_eq(m.params, 671026419200.0);
	ck_assert_double_eq(m.active_params, 37552297472.0);
	ck_assert_int_eq(m.moe_layers, 58);
	ck_assert_int_eq(m.experts, 256);
	ck_assert_int_eq(m.experts_per_token, 8);
	ck_assert_double_eq(m.expert_params, 44040192.0);
	/* one latent of 512 + 64 values per layer: 61 x 576 x 2 bytes */
	ck_assert_int_eq(m.kv_lora_rank, 512);
	ck_assert_double_eq(m.kv_bytes_per_token, 70272.0);
	/* (128 + 64 + 128) / 2: 4 x 128 x 160 = 2 x 128 x (192 + 128) */
	ck_assert_int_eq(m.head_dim, 160);
	ck_assert_int_eq(m.max_context, 163840);
}
END_TEST

/* Qwen: biases on q, k, v (Qwen2), q and k norms (Qwen3), head_dim not
 * hidden / heads (Qwen3-32B: 128 with 5,120 / 64 = 80), and Qwen3-MoE.
 * Qwen2.5-7B: layer 2 x 3,584^2 + 2 x 3,584 x 512 + biases 4,608 = 29,364,736,
 * MLP 3 x 3,584 x 18,944 = 203,685,888, norms 7,168: 233,057,792 x 28 =
 * 6,525,618,176; embeddings 2 x 152,064 x 3,584 = 1,089,994,752; + 3,584:
 * 7,615,616,512 (7.61B). Qwen3-32B: layer 5,120 x 8,192 x 2 + 2 x 5,120 x
 * 1,024 + 256 = 94,372,096, MLP 393,216,000, norms 10,240: 487,598,336 x 64
 * = 31,206,293,504; embeddings 1,555,824,640; + 5,120: 32,762,123,264
 * (32.8B). Qwen3-30B-A3B: layer 2 x 2,048 x 4,096 + 2 x 2,048 x 512 + 256 =
 * 18,874,624, 128 experts of 3 x 2,048 x 768 = 4,718,592, router 262,144,
 * norms 4,096: 623,120,640 x 48 = 29,909,790,720; embeddings 622,329,856; +
 * 2,048: 30,532,122,624 (30.5B); active 120 experts fewer per layer:
 * 3,353,032,704 (3.3B). */
START_TEST(qwen_parameters)
{
	struct cat_model q25 = load(HF "Qwen2.5-7B-Instruct/config.json");
	ck_assert_double_eq(q25.params, 7615616512.0);
	ck_assert_double_eq(q25.kv_bytes_per_token, 2.0 * 28 * 4 * 128 * 2);
	struct cat_model q32 = load(HF "Qwen3-32B/config.json");
	ck_assert_double_eq(q32.params, 32762123264.0);
	ck_assert_int_eq(q32.head_dim, 128);
	ck_assert_int_eq(q32.max_context, 40960);
	struct cat_model a3b = load(HF "Qwen3-30B-A3B/config.json");
	ck_assert_double_eq(a3b.params, 30532122624.0);
	ck_assert_double_eq(a3b.active_params, 3353032704.0);
	ck_assert_int_eq(a3b.moe_layers, 48);
}
END_TEST

/* DeepSeek's dense first layers, Qwen-MoE's mlp_only_layers and sparse
 * step decide which layers hold experts; tied embeddings count once. */
START_TEST(moe_layer_placement_and_tied_embeddings)
{
	FILE *f = fopen("/tmp/kvsim_check_hf_qmoe.json", "w");
	ck_assert_ptr_nonnull(f);
	/* 4 layers, step 2: layers 1 and 3 would hold experts; 3 is listed
	 * MLP-only, so one MoE layer. Tied embeddings. */
	fputs("{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 4, "
	      "\"hidden_size\": 64, "
	      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": "
	      "16, "
	      "\"vocab_size\": 100, \"max_position_embeddings\": 1024, "
	      "\"intermediate_size\": 32, "
	      "\"moe_intermediate_size\": 8, \"num_experts\": 4, "
	      "\"num_experts_per_tok\": 2, "
	      "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [3], "
	      "\"tie_word_embeddings\": true}",
	      f);
	fclose(f);
	struct cat_model m = load("/tmp/kvsim_check_hf_qmoe.json");
	ck_assert_str_eq(m.name, "kvsim_check_hf_qmoe");
	ck_assert_int_eq(m.moe_layers, 1);
	/* attention 64 x 64 + 2 x 64 x 32 + 64 x 64 + q/k norms 32 = 12,320,
	 * norms 128; dense MLP 3 x 64 x 32 = 6,144; MoE 4 x 3 x 64 x 8 =
	 * 6,144 + router 256; embeddings 100 x 64 once + final norm 64. */
	double layer = 12320 + 128;
	double expect = 4 * layer + 3 * 6144.0 + 6144 + 256 + 6400 + 64;
	ck_assert_double_eq(m.params, expect);
	ck_assert_double_eq(m.active_params, expect - 2 * 3 * 64 * 8);
	remove("/tmp/kvsim_check_hf_qmoe.json");
}
END_TEST

static void expect_error(const char *json, const char *fragment)
{
	FILE *f = fopen("/tmp/kvsim_check_hf_bad.json", "w");
	ck_assert_ptr_nonnull(f);
	fputs(json, f);
	fclose(f);
	struct cat_model m;
	char err[1024] = "";
	ck_assert_int_eq(hf_model_load("/tmp/kvsim_check_hf_bad.json", &m, err, sizeof err), -1);
	ck_assert_msg(strstr(err, fragment) != NULL, "error \"%s\" lacks \"%s\"", err, fragment);
	ck_assert_msg(strncmp(err, "/tmp/kvsim_check_hf_bad.json:", 29) == 0, "no file in \"%s\"",
		      err);
	remove("/tmp/kvsim_check_hf_bad.json");
}

START_TEST(bad_configs_name_file_and_key)
{
	expect_error("{\"model_type\": \"gpt2\", \"n_layer\": 12}",
		     "model_type: unknown architecture \"gpt2\" (known: llama, mistral");
	expect_error("{\"hidden_size\": 4096}", "model_type: missing; expected one of: llama");
	expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
		     "\"hidden_size\": 64, "
		     "\"num_attention_heads\": 4, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64}",
		     "intermediate_size: missing (a llama config.json gives it)");
	expect_error("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, "
		     "\"hidden_size\": 64, "
		     "\"num_attention_heads\": 4, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64, "
		     "\"kv_lora_rank\": 16}",
		     "qk_rope_head_dim: missing (a deepseek_v3 config.json gives it)");
	expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2.5}",
		     "num_hidden_layers: expected a whole number in [1, 10000], got 2.5");
	expect_error("{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, "
		     "\"hidden_size\": 64, "
		     "\"num_attention_heads\": 4, \"num_key_value_heads\": 3, "
		     "\"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64}",
		     "num_key_value_heads: expected a divisor of num_attention_heads "
		     "(4), got 3");
	expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
		     "\"hidden_size\": 64, "
		     "\"num_attention_heads\": 4, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64, "
		     "\"intermediate_size\": 8, \"tie_word_embeddings\": \"yes\"}",
		     "tie_word_embeddings: expected true or false, got \"yes\"");
	expect_error("{\"model_type\": \"llama\",\n \"num_hidden_layers\": }",
		     ":2:23: invalid JSON");
}
END_TEST

/* What transformers would read otherwise, and what a file derives: a key
 * given twice (transformers takes the last), a head width that rounds down
 * to 0, Qwen MoE dense layers that name no layer. */
START_TEST(hf_duplicates_derived_widths_and_layer_lists)
{
	expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
		     "\"hidden_size\": 128, \"num_attention_heads\": 4, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64, \"intermediate_size\": 8}",
		     "/tmp/kvsim_check_hf_bad.json: hidden_size: duplicate key (given more than "
		     "once; expected once)");
	expect_error("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 16, "
		     "\"num_attention_heads\": 32, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64, \"intermediate_size\": 8}",
		     "head_dim: missing, and hidden_size / num_attention_heads (16 / 32) rounds "
		     "down to 0; expected hidden_size >= num_attention_heads, or a head_dim");
	static const char *const bad_layers[][2] = {
	    {"-1", "got -1"}, {"1000", "got 1000"}, {"\"x\"", "got \"x\""}, {"1.5", "got 1.5"}};
	for (size_t i = 0; i < sizeof bad_layers / sizeof *bad_layers; i++) {
		char json[1024], want[128];
		snprintf(json, sizeof json,
			 "{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 4, "
			 "\"hidden_size\": 64, \"num_attention_heads\": 4, \"vocab_size\": 10, "
			 "\"max_position_embeddings\": 64, \"intermediate_size\": 8, "
			 "\"num_experts\": 4, \"num_experts_per_tok\": 2, "
			 "\"moe_intermediate_size\": 8, \"shared_expert_intermediate_size\": 8, "
			 "\"mlp_only_layers\": [0, %s]}",
			 bad_layers[i][0]);
		snprintf(want, sizeof want, "mlp_only_layers[1]: expected a layer index in [0, 3], %s",
			 bad_layers[i][1]);
		expect_error(json, want);
	}
	expect_error("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, "
		     "\"hidden_size\": 64, \"num_attention_heads\": 4, \"vocab_size\": 10, "
		     "\"max_position_embeddings\": 64, \"intermediate_size\": 8, "
		     "\"kv_lora_rank\": 16, \"qk_rope_head_dim\": 0, \"qk_nope_head_dim\": 0, "
		     "\"v_head_dim\": 1}",
		     "qk_nope_head_dim + qk_rope_head_dim: expected at least 1");
}
END_TEST

/* A relative config.json path starts at the scenario's folder; the model
 * joins the scenario's catalog and drives the memory budget. */
START_TEST(scenario_model_path_is_relative_to_scenario)
{
	cJSON *root = cJSON_Parse("{\"cluster\": {\"model\": \"Meta-Llama-3-8B/config.json\"}}");
	struct scenario s;
	char err[2048] = "";
	ck_assert_msg(cfg_scenario_load_from(&s, root, NULL, HF "scenario.json", err, sizeof err) ==
			  0,
		      "%s", err);
	ck_assert_str_eq(s.cluster.model->name, "Meta-Llama-3-8B");
	ck_assert_double_eq(s.weight_bytes, 8030261248.0 * 2);
	/* 81,559 MiB x 0.9 - 16,060,522,496 - 1 GiB, over 16 x 131,072 B */
	ck_assert_int_eq(s.kv_blocks_per_node, (int64_t)floor((81559 * 1048576.0 * 0.9 -
							       8030261248.0 * 2 - 1073741824.0) /
							      (16 * 131072.0)));
	ck_assert_int_eq(s.kv_blocks_per_node, 28531);
	cfg_scenario_free(&s);
	/* the working directory is not the scenario's folder */
	ck_assert_int_eq(cfg_scenario_load(&s, root, NULL, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "cluster.model: Meta-Llama-3-8B/config.json: ") == err, "%s",
		      err);
	cJSON_Delete(root);
}
END_TEST

/* GPU memory is what nvidia-smi reports, in MiB. */
START_TEST(gpu_memory_in_binary_units)
{
	struct scenario s;
	th_scenario("{}", NULL, &s);
	const struct {
		const char *gpu;
		double mib;
	} want[] = {{"A100-80G", 81920},
		    {"H100-SXM", 81559},
		    {"H200", 143771},
		    {"B200", 183359},
		    {"L40S", 46068}};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		ck_assert_double_eq(catalog_gpu(&s.cat, want[i].gpu)->hbm_bytes,
				    want[i].mib * 1048576);
	/* an A100 80GB is exactly 80 GiB */
	ck_assert_double_eq(catalog_gpu(&s.cat, "A100-80G")->hbm_bytes, 80 * 1073741824.0);
	cfg_scenario_free(&s);
	/* hbm_bytes still sets a GPU's memory directly */
	th_scenario("{\"catalog\": {\"gpus\": {\"H100-SXM\": {\"hbm_bytes\": 96e9}}}}", NULL, &s);
	ck_assert_double_eq(s.cluster.gpu->hbm_bytes, 96e9);
	cfg_scenario_free(&s);
}
END_TEST

/* Mixtral on 2 H100s (catalog: 46.7e9 params, 12.9e9 active): an expert
 * in all 32 layers is 32 x 176,160,768 x 2 B = 11,274,289,152 B; the dense
 * part 93.4e9 - 8 x that = 3,205,686,784 B. One token touches 2 experts:
 * 25,754,265,088 B read; two tokens 8 (1 - (3/4)^2) = 3.5; a 4,096-token
 * prefill all 8 (to 1e-500). */
START_TEST(moe_reads_the_experts_a_batch_touches)
{
	struct scenario s;
	const char *sets[] = {"cluster.model=\"Mixtral-8x7B\"", "cluster.tp=2", NULL};
	th_scenario("{}", sets, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	double expert = 32 * 176160768.0 * 2, dense = 93.4e9 - 8 * expert;
	ck_assert_double_eq_tol(cost_weight_read_bytes(&cm, 1), dense + 2 * expert, 1e-3);
	ck_assert_double_eq_tol(cost_weight_read_bytes(&cm, 1), 25754265088.0, 1e-3);
	ck_assert_double_eq_tol(cost_weight_read_bytes(&cm, 2), dense + 3.5 * expert, 1e-3);
	ck_assert_double_eq_tol(cost_weight_read_bytes(&cm, 4096), 93.4e9, 1e-3);
	/* the linear layers' memory term of one decode (its KV read is the
	 * attention term's): 25,754,265,088 B over 2 x 3.35e12 x mbu 1 */
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 1000);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.memory_s, 25754265088.0 / (2 * 3.35e12), 1e-15);
	/* a dense model reads all of its weights at any batch */
	struct scenario d;
	th_scenario("{}", NULL, &d);
	struct cost_model dm;
	cost_init(&dm, &d.cluster, d.weight_bytes);
	ck_assert_double_eq(cost_weight_read_bytes(&dm, 1), 8.03e9 * 2);
	cfg_scenario_free(&d);
	cfg_scenario_free(&s);
}
END_TEST

/* The catalog's moe block: active parameters default to params less the
 * experts a token skips; experts larger than the model are an error. */
START_TEST(catalog_moe_and_mla_entries)
{
	struct scenario s;
	th_scenario("{\"catalog\": {\"models\": {\"M\": {\"layers\": 4, \"hidden\": "
		    "1000, \"q_heads\": 8, "
		    "\"kv_heads\": 8, \"head_dim\": 125, \"params\": 1e9, "
		    "\"max_context\": 4096, "
		    "\"moe\": {\"experts\": 16, \"experts_per_token\": 4, "
		    "\"expert_intermediate\": "
		    "2000, \"dense_layers\": 1}, \"mla\": {\"kv_lora_rank\": 256, "
		    "\"qk_rope_head_dim\": 32}}}}, \"cluster\": {\"model\": \"M\", "
		    "\"tp\": 4}}",
		    NULL, &s);
	const struct cat_model *m = s.cluster.model;
	/* an expert 3 x 1,000 x 2,000 = 6e6; 3 MoE layers x 12 skipped */
	ck_assert_int_eq(m->moe_layers, 3);
	ck_assert_double_eq(m->active_params, 1e9 - 3 * 12 * 6e6);
	/* 4 layers x (256 + 32) x 2 B; each of the 4 GPUs keeps the latent */
	ck_assert_double_eq(m->kv_bytes_per_token, 2304.0);
	ck_assert_double_eq(catalog_kv_bytes_per_token_tp(m, 4), 4 * 2304.0);
	cfg_scenario_free(&s);
	char err[1024];
	ck_assert_int_eq(th_scenario_err("{\"catalog\": {\"models\": {\"Mixtral-8x7B\": {\"moe\": "
					 "{\"experts\": 80, \"experts_per_token\": 2, "
					 "\"expert_intermediate\": 14336}}}}}",
					 &s, err, sizeof err),
			 -1);
	ck_assert_msg(strstr(err, "catalog.models.Mixtral-8x7B.moe: 32 layers of 80 experts") !=
			  NULL,
		      "%s", err);
}
END_TEST

/* A tensor-parallel group keeps every GPU's KV copy: Llama-3-70B's 8 KV
 * heads on 16 GPUs are each kept twice; DeepSeek-V3's latent on each of 8
 * H200s. */
START_TEST(kv_copies_under_tensor_parallelism)
{
	struct scenario s;
	th_scenario("{}", NULL, &s);
	const struct cat_model *l70 = catalog_model(&s.cat, "Llama-3-70B");
	ck_assert_double_eq(catalog_kv_bytes_per_token_tp(l70, 8), 327680.0);
	ck_assert_double_eq(catalog_kv_bytes_per_token_tp(l70, 16), 2 * 327680.0);
	cfg_scenario_free(&s);
	const char *sets[] = {"cluster.model=\"DeepSeek-V3\"", "cluster.gpu=\"H200\"",
			      "cluster.tp=8", "cluster.dtype=\"fp8\"", NULL};
	th_scenario("{}", sets, &s);
	/* 8 x 143,771 MiB x 0.9 - 671e9 B - 8 GiB, over 16 tokens x 8 copies x
	 * 70,272 B */
	double kv = 8 * 143771 * 1048576.0 * 0.9 - 671e9 - 8 * 1073741824.0;
	ck_assert_int_eq(s.kv_blocks_per_node, (int64_t)floor(kv / (16 * 8 * 70272.0)));
	ck_assert_int_eq(s.kv_blocks_per_node, 45119);
	cfg_scenario_free(&s);
}
END_TEST

Suite *models_suite(void)
{
	Suite *s = suite_create("models");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, llama3_8b_parameters);
	tcase_add_test(tc, mixtral_parameters);
	tcase_add_test(tc, deepseek_v3_parameters_and_mla);
	tcase_add_test(tc, qwen_parameters);
	tcase_add_test(tc, moe_layer_placement_and_tied_embeddings);
	tcase_add_test(tc, bad_configs_name_file_and_key);
	tcase_add_test(tc, hf_duplicates_derived_widths_and_layer_lists);
	tcase_add_test(tc, scenario_model_path_is_relative_to_scenario);
	tcase_add_test(tc, gpu_memory_in_binary_units);
	tcase_add_test(tc, moe_reads_the_experts_a_batch_touches);
	tcase_add_test(tc, catalog_moe_and_mla_entries);
	tcase_add_test(tc, kv_copies_under_tensor_parallelism);
	suite_add_tcase(s, tc);
	return s;
}
