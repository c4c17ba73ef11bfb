/* check_cost: the roofline and fixed models against hand-computed values. */
#include <check.h>
#include <math.h>

#include "sim/config.h"
#include "sim/cost.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static void model_for(const char *json, struct cost_model *cm, struct scenario *s)
{
	th_scenario(json, NULL, s);
	cost_init(cm, &s->cluster, s->weight_bytes);
}

START_TEST(llama3_8b_decode_on_h100_is_memory_bound)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{}", &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 1000);
	/* Weights 8.03e9 params * 2 B plus 131,072 B/token * 1,000 tokens of KV
	 * over 0.8 * 3.35 TB/s, plus the 2 ms overhead. FLOPs (1.66e10) over
	 * 0.7 * 989 TFLOP/s take 24 us: memory bound. */
	double expect = (8.03e9 * 2 + 131072.0 * 1000) / (0.8 * 3.35e12) + 0.002;
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), expect, 1e-12);
	ck_assert_int_eq(cost_iteration_ns(&cm, &b), (int64_t)llround(expect * 1e9));
	ck_assert_double_eq_tol(expect, 0.008041445, 1e-9);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(llama3_8b_prefill_is_compute_bound)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{}", &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 2048, 0);
	/* 2 * 8.03e9 * 2048 + 4 * 32 layers * 32 heads * 128 * (2048 * 1024). */
	double flops = 2 * 8.03e9 * 2048 + 4.0 * 32 * 32 * 128 * (2048.0 * 1024);
	double expect = flops / (0.7 * 989e12) + 0.002;
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), expect, 1e-12);
	/* The same chunk after 1,000 cached tokens attends over more. */
	cost_batch_clear(&b);
	cost_add_prefill(&b, 2048, 1000);
	flops = 2 * 8.03e9 * 2048 + 4.0 * 32 * 32 * 128 * (2048.0 * (1000 + 1024));
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), flops / (0.7 * 989e12) + 0.002, 1e-12);
	/* The marginal (recompute) cost drops the overhead. */
	ck_assert_double_eq_tol(cost_prefill_s(&cm, 2048, 1000), flops / (0.7 * 989e12), 1e-12);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(tensor_parallel_adds_all_reduces)
{
	struct scenario s;
	struct cost_model cm;
	model_for("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 4, \"nodes_per_server\": 2}}",
		  &cm, &s);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 500);
	double mem = (70.6e9 * 2 + 327680.0 * 500) / (4 * 0.8 * 3.35e12);
	/* Two ring all-reduces per layer of hidden * 2 B per token over NVLink 4
	 * (450 GB/s, 2 us): 2 * 80 * (2e-6 + 2 * 3/4 * 16384 / 450e9). */
	double comm = 2 * 80 * (2e-6 + 1.5 * 16384.0 / 450e9);
	ck_assert_double_eq_tol(cost_iteration_s(&cm, &b), mem + comm + 0.002, 1e-12);
	cfg_scenario_free(&s);
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
	/* 80e9 * 0.9 - 16.06e9 weights - 1 GiB reserve, over 16 * 131,072 B. */
	double kv = 80e9 * 0.9 - 8.03e9 * 2 - 1073741824.0;
	ck_assert_int_eq(s.kv_blocks_per_node, (int64_t)floor(kv / (16 * 131072.0)));
	ck_assert_int_eq(s.kv_blocks_per_node, 26162);
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
	tcase_add_test(tc, fixed_model_is_base_plus_per_token);
	tcase_add_test(tc, kv_capacity_follows_memory_budget);
	suite_add_tcase(s, tc);
	return s;
}
