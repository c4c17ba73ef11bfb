/* check_config: defaults, validation messages with JSON paths, --set. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/config.h"
#include "tests/helpers.h"
#include "tests/suites.h"

START_TEST(empty_object_equals_embedded_default)
{
	struct scenario a, b;
	th_scenario("{}", NULL, &a);
	cJSON *root;
	char err[512];
	ck_assert_int_eq(cfg_read_json(NULL, &root, err, sizeof err), 0);
	ck_assert_int_eq(cfg_scenario_load(&b, root, NULL, err, sizeof err), 0);
	cJSON_Delete(root);
	ck_assert_str_eq(b.name, "chat-8xH100");
	ck_assert_int_eq(a.cluster.nodes, b.cluster.nodes);
	ck_assert_int_eq(a.kv_blocks_per_node, b.kv_blocks_per_node);
	ck_assert_str_eq(a.cluster.gpu->name, "H100-SXM");
	ck_assert_str_eq(b.cluster.model->name, "Llama-3-8B");
	ck_assert_str_eq(a.router.policy, b.router.policy);
	ck_assert_int_eq(a.cluster.engine.max_num_seqs, 256);
	ck_assert_int_eq(b.cluster.engine.max_num_batched_tokens, 8192);
	ck_assert_double_eq(a.duration_s, b.duration_s);
	ck_assert_double_eq(a.cluster.cost.mfu, b.cluster.cost.mfu);
	ck_assert_str_eq(a.cluster.inter_server->name, "ib-ndr");
	/* The default's workload block spells out the generator's defaults. */
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(b.workload, "system_prompts"));
	cfg_scenario_free(&a);
	cfg_scenario_free(&b);
}
END_TEST

static void expect_error(const char *json, const char *fragment)
{
	struct scenario s;
	char err[1024] = "";
	ck_assert_int_eq(th_scenario_err(json, &s, err, sizeof err), -1);
	ck_assert_msg(strstr(err, fragment) != NULL, "error \"%s\" lacks \"%s\"", err, fragment);
}

START_TEST(errors_name_the_json_path)
{
	expect_error("{\"cluster\": {\"nodes\": 0}}", "cluster.nodes: expected an integer in [1,");
	expect_error("{\"cluster\": {\"nodse\": 4}}", "cluster.nodse: unknown key");
	expect_error("{\"cluster\": {\"engine\": {\"max_num_seqs\": \"many\"}}}",
		     "cluster.engine.max_num_seqs: expected an integer");
	expect_error("{\"cluster\": {\"gpu\": \"H900\"}}", "cluster.gpu: unknown GPU \"H900\" (known: "
							   "A100-80G, H100-SXM, H200, B200, L40S)");
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\"}}",
		     "Llama-3-70B needs 141.2 GB of weights (bf16); 1 x H100-SXM has 80.0 GB");
	expect_error("{\"cluster\": {\"model\": \"Llama-3-8B\", \"tp\": 3}}",
		     "cluster.tp: expected a divisor of Llama-3-8B's 32 attention heads, got 3");
	expect_error("{\"cluster\": {\"cost_model\": {\"mfu\": 1.5}}}",
		     "cluster.cost_model.mfu: expected a number in [0.001, 1], got 1.5");
	expect_error("{\"cluster\": {\"gpu\": \"A100-80G\", \"dtype\": \"fp8\"}}",
		     "A100-80G has no FP8 tensor cores");
	expect_error("{\"router\": {\"migration\": \"teleport\"}}",
		     "router.migration: expected one of auto, transfer, recompute");
	expect_error("{\"cluster\": {\"engine\": {\"preemption\": \"swap\"}}}",
		     "set cluster.tiers.dram_gib_per_server above 0");
	expect_error("{\"faults\": [{\"kind\": \"crash\", \"node\": 8, \"at_s\": 1}]}",
		     "faults[0].node: expected an integer in [0, 7]");
	expect_error("{\"faults\": [{\"kind\": \"slow\", \"node\": 1, \"at_s\": 1}]}",
		     "faults[0].duration_s: missing");
	expect_error("{\"faults\": [{\"kind\": \"melt\", \"node\": 1, \"at_s\": 1}]}",
		     "faults[0].kind: expected one of crash, slow, link, cooling");
	expect_error("{\"faults\": [{\"kind\": \"cooling\", \"server\": 0, \"at_s\": 1, "
		     "\"duration_s\": 5}]}",
		     "set cluster.thermal.enabled to true");
	expect_error("{\"faults\": [{\"kind\": \"link\", \"node\": 0, \"at_s\": 1}]}",
		     "faults[0].node: unknown key");
	expect_error("{\"router\": {\"store\": \"zookeeper\"}}",
		     "router.store: expected one of local, redis, etcd");
	expect_error("{\"cluster\": {\"thermal\": {\"throttle_c\": 80, \"resume_c\": 90}}}",
		     "cluster.thermal.resume_c: expected at most throttle_c");
	expect_error("{\"catalog\": {\"links\": {\"mylink\": {\"bytes_per_s\": 0, \"latency_us\": 1}}}}",
		     "catalog.links.mylink.bytes_per_s: expected a number in");
	expect_error("[1, 2]", "expected an object");
}
END_TEST

START_TEST(set_overrides_and_catalog_additions)
{
	static const char *const sets[] = {"cluster.nodes=3", "router.params.threshold=4",
					   "name=renamed", "cluster.gpu=MyGPU", NULL};
	struct scenario s;
	th_scenario("{\"catalog\": {\"gpus\": {\"MyGPU\": {\"bf16_flops\": 1e15, \"hbm_bytes\": "
		    "100e9, \"hbm_bytes_per_s\": 4e12, \"tdp_w\": 800, \"link\": \"nvlink4\"}}}}",
		    sets, &s);
	ck_assert_int_eq(s.cluster.nodes, 3);
	ck_assert_str_eq(s.name, "renamed");
	ck_assert_str_eq(s.cluster.gpu->name, "MyGPU");
	ck_assert_double_eq(s.cluster.gpu->fp8_flops, 0);
	cJSON *thr = cJSON_GetObjectItem(s.router.params, "threshold");
	ck_assert_int_eq(thr->valueint, 4);
	cfg_scenario_free(&s);
	/* Overriding one field of a built-in entry keeps the others. */
	th_scenario("{\"catalog\": {\"gpus\": {\"H100-SXM\": {\"hbm_bytes\": 96e9}}}}", NULL, &s);
	ck_assert_double_eq(s.cluster.gpu->hbm_bytes, 96e9);
	ck_assert_double_eq(s.cluster.gpu->hbm_bytes_per_s, 3.35e12);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(syntax_errors_give_line_and_column)
{
	const char *path = "/tmp/kvsim_check_config_bad.json";
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\n  \"seed\": 1,\n  \"cluster\": {\"nodes\": 4,}\n}\n", f);
	fclose(f);
	cJSON *root = NULL;
	char err[512] = "";
	ck_assert_int_eq(cfg_read_json(path, &root, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "kvsim_check_config_bad.json:3:") != NULL, "%s", err);
	ck_assert_int_eq(cfg_read_json("/nonexistent/x.json", &root, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "/nonexistent/x.json: No such file") != NULL, "%s", err);
	ck_assert_int_eq(cfg_read_json("/tmp", &root, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "is a directory") != NULL, "%s", err);
	remove(path);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, empty_object_equals_embedded_default);
	tcase_add_test(tc, errors_name_the_json_path);
	tcase_add_test(tc, set_overrides_and_catalog_additions);
	tcase_add_test(tc, syntax_errors_give_line_and_column);
	suite_add_tcase(s, tc);
	return s;
}
