/* check_config: defaults, validation messages with JSON paths, --set. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "config/config.h"
#include "results/metric_table.h"
#include "sim/sim.h"
#include "tests/helpers.h"
#include "tests/suites.h"

/* {} takes the documented defaults; the embedded default scenario is a
 * deployment of its own (one DGX H100, Llama-3.1-8B, a DRAM tier, a loaded
 * chat) that leaves the router's mechanisms to each policy. */
START_TEST(empty_object_and_embedded_default)
{
	struct scenario a, b;
	th_scenario("{}", NULL, &a);
	cJSON *root;
	char err[512];
	ck_assert_int_eq(cfg_read_json(NULL, &root, err, sizeof err), 0);
	ck_assert_int_eq(cfg_scenario_load(&b, root, NULL, err, sizeof err), 0);
	cJSON_Delete(root);
	ck_assert_str_eq(a.name, "default");
	ck_assert_str_eq(b.name, "chat-dgx-h100");
	ck_assert_int_eq(a.cluster.nodes, b.cluster.nodes);
	ck_assert_str_eq(a.cluster.gpu->name, "H100-SXM");
	ck_assert_str_eq(a.cluster.model->name, "Llama-3-8B");
	ck_assert_str_eq(b.cluster.model->name, "Llama-3.1-8B");
	ck_assert_str_eq(a.router.policy, b.router.policy);
	/* vLLM 0.15's API-server default on a GPU of at least 70 GiB, not an A100 */
	ck_assert_int_eq(a.cluster.engine.max_num_seqs, 1024);
	ck_assert_int_eq(b.cluster.engine.max_num_batched_tokens, 8192);
	ck_assert_double_eq(a.duration_s, b.duration_s);
	ck_assert_double_eq(a.cluster.cost.mfu, b.cluster.cost.mfu);
	ck_assert_str_eq(a.cluster.inter_server->name, "ib-ndr");
	ck_assert_double_eq(a.cluster.tiers.dram_bytes, 0);
	ck_assert_double_eq(b.cluster.tiers.dram_bytes, 1536.0 * 1073741824.0);
	ck_assert_int_eq(a.cluster.kv_transfer, KVX_NIXL);
	ck_assert_int_eq(b.cluster.kv_transfer, KVX_NIXL);
	/* no mechanism set under router: each column takes its family's */
	const struct mech_set *ms[] = {&a.router.mech_all, &b.router.mech_all, &b.router.mech_own};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_lt(ms[i]->migration, 0);
		ck_assert_int_lt(ms[i]->watermark_action, 0);
		ck_assert_int_lt(ms[i]->offload, 0);
		ck_assert_int_lt(ms[i]->shed, 0);
		ck_assert_int_lt(ms[i]->health, 0);
	}
	/* The default's workload block spells out the generator's keys. */
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

/* A key given twice anywhere in a tree is an error naming its path, in
 * small objects (a pass over pairs) and large ones (sorted keys). */
START_TEST(duplicate_keys_are_errors)
{
	static const char *const cases[][2] = {
	    {"{\"cluster\": {\"nodes\": 2, \"nodes\": 3}}", "cluster.nodes: duplicate key"},
	    {"{\"faults\": [{}, {\"at_s\": 1, \"kind\": \"crash\", \"at_s\": 2}]}",
	     "faults[1].at_s: duplicate key"},
	    {"{\"a\": {\"k0\": 0, \"k1\": 1, \"k2\": 2, \"k3\": 3, \"k4\": 4, \"k5\": 5, \"k6\": 6, "
	     "\"k7\": 7, \"k8\": 8, \"k9\": 9, \"k10\": 10, \"k11\": 11, \"k12\": 12, \"k13\": 13, "
	     "\"k14\": 14, \"k15\": 15, \"k16\": 16, \"k7\": 17}}",
	     "a.k7: duplicate key"}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char err[512] = "";
		cJSON *j = cJSON_Parse(cases[i][0]);
		ck_assert_ptr_nonnull(j);
		ck_assert_int_eq(cfg_check_unique_keys(j, "", err, sizeof err), -1);
		ck_assert_msg(strstr(err, cases[i][1]) == err, "%s", err);
		cJSON_Delete(j);
	}
	cJSON *j = cJSON_Parse("{\"a\": {\"k0\": 0, \"k1\": 1, \"k2\": 2, \"k3\": 3, \"k4\": 4, "
			       "\"k5\": 5, \"k6\": 6, \"k7\": 7, \"k8\": 8, \"k9\": 9, \"k10\": 10, "
			       "\"k11\": 11, \"k12\": 12, \"k13\": 13, \"k14\": 14, \"k15\": 15, "
			       "\"k16\": 16}, \"b\": [{\"k0\": 1}, {\"k0\": 2}]}");
	char err[512] = "";
	ck_assert_int_eq(cfg_check_unique_keys(j, "", err, sizeof err), 0);
	ck_assert_int_eq(cfg_apply_set(j, "b={\"x\": 1, \"y\": {\"x\": 2, \"x\": 3}}", err, sizeof err),
			 -1);
	ck_assert_str_eq(err, "--set b={\"x\": 1, \"y\": {\"x\": 2, \"x\": 3}}: b.y.x: duplicate key "
			      "(given more than once; expected once)");
	cJSON_Delete(j);
	const char *path = "/tmp/kvsim_check_dup.json";
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"seed\": 1,\n \"seed\": 2}", f);
	fclose(f);
	cJSON *root = NULL;
	ck_assert_int_eq(cfg_read_json(path, &root, err, sizeof err), -1);
	ck_assert_str_eq(err, "/tmp/kvsim_check_dup.json: seed: duplicate key (given more than "
			      "once; expected once)");
	ck_assert_ptr_null(root);
	remove(path);
}
END_TEST

/* router.params is router.policy_params.<router.policy>: the entry's keys
 * win, the others stay; a policy with only an entry takes it. Keys a
 * model does not read are errors. */
START_TEST(policy_params_apply_and_unread_keys_fail)
{
	struct scenario s;
	const char *both =
	    "{\"router\": {\"params\": {\"threshold\": 10, \"when_full\": \"least_loaded\"},"
	    " \"policy_params\": {\"session_affinity\": {\"threshold\": 3}, \"kv_cost\": {}}}}";
	th_scenario(both, NULL, &s);
	char *p = cJSON_PrintUnformatted(s.router.params);
	ck_assert_str_eq(p, "{\"when_full\":\"least_loaded\",\"threshold\":3}");
	ck_assert_str_eq(s.router.params_path, "router.params");
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(s.router.policy_params, "kv_cost"));
	free(p);
	cfg_scenario_free(&s);
	th_scenario("{\"router\": {\"policy\": \"kv_cost\", \"policy_params\": {\"kv_cost\": "
		    "{\"candidates\": 2}}}}",
		    NULL, &s);
	p = cJSON_PrintUnformatted(s.router.params);
	ck_assert_str_eq(p, "{\"candidates\":2}");
	ck_assert_str_eq(s.router.params_path, "router.policy_params.kv_cost");
	free(p);
	cfg_scenario_free(&s);
	expect_error("{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, "
		     "\"mfu\": 0.5}}}",
		     "cluster.cost_model.mfu: not read by the fixed cost model (it reads base_ms, "
		     "per_token_ms)");
	expect_error("{\"cluster\": {\"cost_model\": {\"per_token_ms\": 1}}}",
		     "cluster.cost_model.per_token_ms: not read by the roofline cost model");
	/* workloads are read when the simulator is built */
	static const char *const wl[][2] = {
	    {"{\"workload\": {\"kind\": \"rag\", \"cv\": 2}}",
	     "workload.cv: takes \"arrival\": \"gamma\" (Poisson arrivals have cv 1)"},
	    {"{\"workload\": {\"kind\": \"mix\", \"parts\": [{\"workload\": {\"kind\": \"open\", "
	     "\"arrival\": \"poisson\", \"cv\": 1}}]}}",
	     "workload.parts[0].workload.cv: takes \"arrival\": \"gamma\""},
	    {"{\"workload\": {\"kind\": \"open\", \"arrival\": \"gamma\", \"cv\": 2}}", NULL}};
	for (size_t i = 0; i < sizeof wl / sizeof *wl; i++) {
		char err[512] = "";
		th_scenario(wl[i][0], NULL, &s);
		int rc = sim_validate(&s, err, sizeof err);
		cfg_scenario_free(&s);
		if (!wl[i][1]) {
			ck_assert_msg(rc == 0, "%s", err);
			continue;
		}
		ck_assert_int_ne(rc, 0);
		ck_assert_msg(strstr(err, wl[i][1]) == err, "%s", err);
	}
}
END_TEST

START_TEST(errors_name_the_json_path)
{
	expect_error("{\"cluster\": {\"nodes\": 0}}", "cluster.nodes: expected an integer in [1,");
	expect_error("{\"cluster\": {\"nodse\": 4}}", "cluster.nodse: unknown key");
	expect_error("{\"cluster\": {\"engine\": {\"max_num_seqs\": \"many\"}}}",
		     "cluster.engine.max_num_seqs: expected an integer");
	expect_error("{\"cluster\": {\"gpu\": \"H900\"}}", "cluster.gpu: unknown GPU \"H900\" (known: "
							   "A100-80G, H100-SXM, H200, B200, L40S)");
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\"}}",
		     "Llama-3-70B needs 131.5 GiB of weights (bf16); 1 x H100-SXM has 79.6 GiB");
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

/* A --set value is JSON only when all of it is: "10m", "500ms" and "4x"
 * are strings (which the scenario then rejects with the message a file's
 * "10m" gets), never the number at their start. */
START_TEST(set_values_are_all_json_or_a_string)
{
	static const char *const cases[][3] = {
	    {"duration_s=10m", "duration_s", "{\"duration_s\": \"10m\"}"},
	    {"slo.ttft_p99_s=500ms", "slo.ttft_p99_s", "{\"slo\": {\"ttft_p99_s\": \"500ms\"}}"},
	    {"cluster.nodes=4x", "cluster.nodes", "{\"cluster\": {\"nodes\": \"4x\"}}"},
	    {"cluster.nodes=[2]]", "cluster.nodes", "{\"cluster\": {\"nodes\": \"[2]]\"}}"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char err[1024] = "", file_err[1024] = "";
		cJSON *root = cJSON_CreateObject();
		ck_assert_int_eq(cfg_apply_set(root, cases[i][0], err, sizeof err), 0);
		const cJSON *v = res_json_item_at(root, cases[i][1]);
		ck_assert_msg(cJSON_IsString(v), "%s: not read as a string", cases[i][0]);
		ck_assert_str_eq(v->valuestring, strchr(cases[i][0], '=') + 1);
		struct scenario s;
		char *text = cJSON_PrintUnformatted(root);
		ck_assert_int_eq(th_scenario_err(text, &s, err, sizeof err), -1);
		ck_assert_int_eq(th_scenario_err(cases[i][2], &s, file_err, sizeof file_err), -1);
		ck_assert_str_eq(err, file_err);
		free(text);
		cJSON_Delete(root);
	}
	/* whitespace around a whole JSON value is still JSON */
	cJSON *root = cJSON_CreateObject();
	char err[256];
	ck_assert_int_eq(cfg_apply_set(root, "seed= 7 ", err, sizeof err), 0);
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(root, "seed")));
	cJSON_Delete(root);
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

/* Integers hold exactly in a JSON number (a double) up to 2^53: a bound
 * past it is narrowed, so the range an error gives is one that parses. */
START_TEST(int_ranges_are_what_a_double_holds)
{
	cJSON *o = cJSON_Parse("{\"top\": 9223372036854775807, \"edge\": 9007199254740992}");
	int64_t v = 5;
	char err[256] = "";
	ck_assert_int_eq(cfg_int(o, "w", "top", 1, INT64_MAX, &v, err, sizeof err), -1);
	ck_assert_str_eq(err, "w.top: expected an integer in [1, 9007199254740992], got 9.22337e+18");
	ck_assert_int_eq(v, 5);
	ck_assert_int_eq(cfg_int(o, "w", "edge", 1, INT64_MAX, &v, err, sizeof err), 0);
	ck_assert_int_eq(v, (int64_t)1 << 53);
	cJSON_Delete(o);
}
END_TEST

/* What a scenario names is echoed into JSON outputs: every string and key
 * must be UTF-8 (RFC 3629), or loading fails naming the path. */
START_TEST(strings_must_be_utf8)
{
	static const struct {
		const char *json, *fragment;
	} bad[] = {
	    {"{\"name\": \"a\xff\"}", "name: invalid UTF-8 (byte 0xff at offset 1 of the string)"},
	    /* an overlong form, a surrogate, past U+10FFFF, cut short */
	    {"{\"name\": \"\xc0\xaf\"}", "name: invalid UTF-8 (byte 0xc0 at offset 0"},
	    {"{\"name\": \"\xed\xa0\x80\"}", "name: invalid UTF-8 (byte 0xed at offset 0"},
	    {"{\"name\": \"\xf4\x90\x80\x80\"}", "name: invalid UTF-8 (byte 0xf4"},
	    {"{\"name\": \"ab\xe2\x82\"}", "name: invalid UTF-8 (byte 0xe2 at offset 2"},
	    {"{\"faults\": [{\"kind\": \"x\xfe\"}]}", "faults[0].kind: invalid UTF-8"},
	    {"{\"router\": {\"params\": {\"k\x80\": 1}}}", "router.params: a key has invalid UTF-8"},
	};
	char err[512];
	struct scenario sc;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = 0;
		ck_assert_int_eq(th_scenario_err(bad[i].json, &sc, err, sizeof err), -1);
		ck_assert_msg(strstr(err, bad[i].fragment) != NULL, "case %zu: %s", i, err);
	}
	/* two-, three- and four-byte characters are names like any other */
	ck_assert_int_eq(th_scenario_err("{\"name\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"}",
					 &sc, err, sizeof err),
			 0);
	ck_assert_str_eq(sc.name, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
	cfg_scenario_free(&sc);
}
END_TEST

/* A file past CFG_SLURP_MAX (a sparse one: no disk used) is refused before
 * it is read; a device without end is read to one byte past it. */
START_TEST(slurp_has_a_limit)
{
	const char *p = "/tmp/kvsim_check_huge.json";
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, (long)CFG_SLURP_MAX, SEEK_SET), 0);
	fputc('}', f);
	fclose(f);
	char err[512] = "";
	ck_assert_ptr_null(cfg_slurp(p, NULL, err, sizeof err));
	ck_assert_str_eq(err, "/tmp/kvsim_check_huge.json: larger than 64 MiB, the most kvsim reads "
			      "of one file");
	remove(p);
	ck_assert_ptr_null(cfg_slurp("/dev/zero", NULL, err, sizeof err));
	ck_assert_str_eq(err, "/dev/zero: larger than 64 MiB, the most kvsim reads of one file");
	size_t len = 1;
	char *empty = cfg_slurp("/dev/null", &len, err, sizeof err);
	ck_assert_ptr_nonnull(empty);
	ck_assert_uint_eq(len, 0);
	free(empty);
}
END_TEST

/* Seconds to the ns clock: in range exactly as llround, past it an error
 * (input) or the clock's end (derived times), sums saturating. */
START_TEST(times_convert_within_the_clock)
{
	int64_t ns = 7;
	ck_assert_int_eq(cfg_time_ns(2.5, 1e9, &ns), 0);
	ck_assert_int_eq(ns, 2500000000LL);
	ck_assert_int_eq(cfg_time_ns(4e9, 1e9, &ns), 0);
	ck_assert_int_eq(ns, CFG_TIME_MAX_NS);
	ns = 7;
	ck_assert_int_eq(cfg_time_ns(4.0000001e9, 1e9, &ns), -1);
	ck_assert_int_eq(cfg_time_ns(1e300, 1e9, &ns), -1);
	ck_assert_int_eq(cfg_time_ns(-1e-9, 1e9, &ns), -1);
	ck_assert_int_eq(cfg_time_ns(NAN, 1e9, &ns), -1);
	ck_assert_int_eq(ns, 7);
	ck_assert_int_eq(cfg_time_ns_clamp(1e300, 1e9), CFG_TIME_MAX_NS);
	ck_assert_int_eq(cfg_time_ns_clamp(-3, 1e9), 0);
	ck_assert_int_eq(cfg_time_ns_clamp(1.5, 1e6), 1500000);
	ck_assert_int_eq(cfg_time_add(CFG_TIME_MAX_NS - 1, 5), CFG_TIME_MAX_NS);
	ck_assert_int_eq(cfg_time_add(3, 4), 7);
}
END_TEST

/* cluster.pools: nodes and servers numbered pool by pool in list order; a
 * pool takes the cluster's keys where it gives none, engine field by field;
 * each pool's KV blocks are cfg_kv_blocks of its own GPU (Llama-3-8B: 2 MiB
 * blocks of 16 tokens, 16.06 GB of weights, 0.9 of the memory less 1 GiB
 * per GPU: H100 81,559 MiB -> 28531, L40S 46,068 MiB -> 12560, two A100s
 * of 81,920 MiB -> 65045). */
START_TEST(pools_number_inherit_and_size)
{
	struct scenario s;
	/* %d: the server of a link fault */
	const char *fmt =
	    "{\"cluster\": {\"gpu\": \"H100-SXM\", \"engine\": {\"max_num_seqs\": 128, "
	    "\"max_num_batched_tokens\": 4096}, \"kv_transfer\": {\"layerwise\": true},"
	    " \"pools\": [{\"name\": \"pre\", \"role\": \"prefill\", \"nodes\": 10, "
	    "\"nodes_per_server\": 4},"
	    " {\"name\": \"dec\", \"role\": \"decode\", \"nodes\": 5, \"gpu\": \"L40S\", "
	    "\"engine\": {\"max_num_seqs\": 64}},"
	    " {\"nodes\": 2, \"gpu\": \"A100-80G\", \"tp\": 2, \"nodes_per_server\": 1}]},"
	    " \"router\": {\"disagg\": {\"min_prefill_tokens\": 256}},"
	    " \"faults\": [{\"kind\": \"link\", \"server\": %d, \"at_s\": 1, \"duration_s\": 1, "
	    "\"factor\": 0.5}]}";
	char json[2048];
	snprintf(json, sizeof json, fmt, 5);
	th_scenario(json, NULL, &s);
	ck_assert_int_eq(s.n_pools, 3);
	ck_assert_int_eq(s.disaggregated, 1);
	static const struct {
		const char *name, *gpu;
		enum pool_role role;
		int first_node, first_server, n_servers, nodes, nps, tp, seqs;
		int64_t blocks;
	} want[] = {{"pre", "H100-SXM", POOL_PREFILL, 0, 0, 3, 10, 4, 1, 128, 28531},
		    {"dec", "L40S", POOL_DECODE, 10, 3, 1, 5, 8, 1, 64, 12560},
		    {"pool2", "A100-80G", POOL_MIXED, 15, 4, 2, 2, 1, 2, 128, 65045}};
	for (int i = 0; i < 3; i++) {
		const struct pool_cfg *p = &s.pools[i];
		ck_assert_str_eq(p->name, want[i].name);
		ck_assert_int_eq(p->role, want[i].role);
		ck_assert_str_eq(p->cl.gpu->name, want[i].gpu);
		ck_assert_int_eq(p->first_node, want[i].first_node);
		ck_assert_int_eq(p->first_server, want[i].first_server);
		ck_assert_int_eq(p->n_servers, want[i].n_servers);
		ck_assert_int_eq(p->cl.nodes, want[i].nodes);
		ck_assert_int_eq(p->cl.nodes_per_server, want[i].nps);
		ck_assert_int_eq(p->cl.tp, want[i].tp);
		ck_assert_int_eq(p->cl.engine.max_num_seqs, want[i].seqs);
		ck_assert_int_eq(p->cl.engine.max_num_batched_tokens, 4096);
		ck_assert_int_eq(p->cl.engine.kv_block_tokens, 16);
		ck_assert_int_eq(p->kv_blocks_per_node, want[i].blocks);
		ck_assert_double_eq(p->weight_bytes, 16.06e9);
		ck_assert_str_eq(p->cl.model->name, "Llama-3-8B");
		ck_assert_int_eq(p->cl.kv_transfer, KVX_NIXL);
		ck_assert_int_eq(p->cl.kv_layerwise, 1);
		double blocks_check =
		    (double)cfg_kv_blocks(&p->cl, p->cl.engine.gpu_memory_utilization,
					  p->cl.engine.activation_reserve_gib, NULL, NULL);
		ck_assert_double_eq(blocks_check, (double)want[i].blocks);
	}
	/* each pool's servers are its own: L40S servers default to theirs */
	ck_assert_str_eq(s.pools[0].cl.server->name, "DGX-H100");
	ck_assert_str_eq(s.pools[1].cl.server->name, "PCIe-2-8-5-200");
	ck_assert_str_eq(s.pools[2].cl.server->name, "DGX-A100");
	/* the whole cluster: pool 0's keys, all the nodes */
	ck_assert_int_eq(s.cluster.nodes, 17);
	ck_assert_str_eq(s.cluster.gpu->name, "H100-SXM");
	ck_assert_int_eq(s.cluster.nodes_per_server, 4);
	ck_assert_int_eq(s.kv_blocks_per_node, 28531);
	ck_assert_int_eq(s.cluster.kv_layerwise, 1);
	ck_assert_int_eq(s.router.min_prefill_tokens, 256);
	ck_assert_str_eq(s.router.decode_policy, "least_loaded");
	char *dp = cJSON_PrintUnformatted(s.router.decode_params);
	ck_assert_str_eq(dp, "{\"metric\":\"kv_blocks\"}");
	free(dp);
	ck_assert_str_eq(s.router.decode_params_path, "router.decode_policy");
	ck_assert_int_eq(s.faults[0].target, 5);
	cfg_scenario_free(&s);
	/* servers are counted over the pools: 3 + 1 + 2 */
	snprintf(json, sizeof json, fmt, 6);
	expect_error(json, "faults[0].server: expected an integer in [0, 5], got 6");
}
END_TEST

/* Without cluster.pools the cluster is one mixed pool named "cluster":
 * the same keys, blocks and layout as scenario.cluster. */
START_TEST(no_pools_is_one_mixed_pool)
{
	struct scenario s;
	th_scenario("{}", NULL, &s);
	ck_assert_int_eq(s.n_pools, 1);
	ck_assert_int_eq(s.disaggregated, 0);
	const struct pool_cfg *p = &s.pools[0];
	ck_assert_str_eq(p->name, "cluster");
	ck_assert_int_eq(p->role, POOL_MIXED);
	ck_assert_int_eq(p->first_node, 0);
	ck_assert_int_eq(p->first_server, 0);
	ck_assert_int_eq(p->n_servers, 1);
	ck_assert_int_eq(p->cl.nodes, 8);
	ck_assert_int_eq(s.cluster.nodes, 8);
	ck_assert_int_eq(p->kv_blocks_per_node, 28531);
	ck_assert_int_eq(s.kv_blocks_per_node, 28531);
	ck_assert_double_eq(s.weight_bytes, p->weight_bytes);
	ck_assert_ptr_eq(p->cl.gpu, s.cluster.gpu);
	ck_assert_ptr_eq(p->cl.server, s.cluster.server);
	ck_assert_double_eq(p->cl.cost.mfu, s.cluster.cost.mfu);
	ck_assert_int_eq(s.cluster.kv_transfer, KVX_NIXL);
	ck_assert_int_eq(s.cluster.kv_layerwise, 0);
	ck_assert_int_eq(s.router.min_prefill_tokens, 0);
	cfg_scenario_free(&s);
	/* 20 replicas of tp 8: one per server, 20 servers */
	th_scenario("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 8, \"nodes\": 20}}", NULL,
		    &s);
	ck_assert_int_eq(s.pools[0].n_servers, 20);
	ck_assert_int_eq(s.pools[0].cl.nodes, 20);
	ck_assert_int_eq(s.pools[0].kv_blocks_per_node, s.kv_blocks_per_node);
	cfg_scenario_free(&s);
}
END_TEST

/* cluster.kv_transfer: a path's name or {"path", "layerwise"}. */
START_TEST(kv_transfer_string_or_object)
{
	static const struct {
		const char *json;
		enum kv_path path;
		int layerwise;
	} ok[] = {{"\"none\"", KVX_NONE, 0},
		  {"\"lmcache\"", KVX_LMCACHE, 0},
		  {"{}", KVX_NIXL, 0},
		  {"{\"path\": \"lmcache\"}", KVX_LMCACHE, 0},
		  {"{\"layerwise\": true}", KVX_NIXL, 1},
		  {"{\"path\": \"none\", \"layerwise\": false}", KVX_NONE, 0}};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		char json[256];
		struct scenario s;
		snprintf(json, sizeof json, "{\"cluster\": {\"kv_transfer\": %s}}", ok[i].json);
		th_scenario(json, NULL, &s);
		ck_assert_int_eq(s.cluster.kv_transfer, ok[i].path);
		ck_assert_int_eq(s.cluster.kv_layerwise, ok[i].layerwise);
		ck_assert_int_eq(s.pools[0].cl.kv_transfer, ok[i].path);
		cfg_scenario_free(&s);
	}
	expect_error("{\"cluster\": {\"kv_transfer\": {\"path\": \"rdma\"}}}",
		     "cluster.kv_transfer.path: expected one of none, nixl, lmcache, got \"rdma\"");
	expect_error("{\"cluster\": {\"kv_transfer\": {\"layer\": true}}}",
		     "cluster.kv_transfer.layer: unknown key (expected one of: path, layerwise)");
	expect_error("{\"cluster\": {\"kv_transfer\": 3}}",
		     "cluster.kv_transfer: expected one of none, nixl, lmcache, got a number");
}
END_TEST

/* router.decode_policy's params: its policy_params entry without the
 * router's mechanism keys; least_loaded measures KV utilisation unless
 * the entry names a metric. */
START_TEST(decode_policy_params)
{
	struct scenario s;
	th_scenario("{\"router\": {\"policy_params\": {\"least_loaded\": {\"metric\": "
		    "\"outstanding\", \"migration\": \"recompute\"}}}}",
		    NULL, &s);
	char *p = cJSON_PrintUnformatted(s.router.decode_params);
	ck_assert_str_eq(p, "{\"metric\":\"outstanding\"}");
	ck_assert_str_eq(s.router.decode_params_path, "router.policy_params.least_loaded");
	free(p);
	cfg_scenario_free(&s);
	th_scenario("{\"router\": {\"policy_params\": {\"least_loaded\": {\"shed\": \"none\"}}}}",
		    NULL, &s);
	p = cJSON_PrintUnformatted(s.router.decode_params);
	ck_assert_str_eq(p, "{\"metric\":\"kv_blocks\"}");
	ck_assert_str_eq(s.router.decode_params_path, "router.policy_params.least_loaded");
	free(p);
	cfg_scenario_free(&s);
	th_scenario("{\"router\": {\"decode_policy\": \"kv_cost\", \"policy_params\": {\"kv_cost\": "
		    "{\"candidates\": 2, \"offload\": true}}}}",
		    NULL, &s);
	p = cJSON_PrintUnformatted(s.router.decode_params);
	ck_assert_str_eq(p, "{\"candidates\":2}");
	ck_assert_str_eq(s.router.decode_policy, "kv_cost");
	free(p);
	cfg_scenario_free(&s);
	th_scenario("{\"router\": {\"decode_policy\": \"round_robin\"}}", NULL, &s);
	ck_assert_ptr_null(s.router.decode_params);
	ck_assert_str_eq(s.router.decode_params_path, "router.decode_policy");
	cfg_scenario_free(&s);
	expect_error("{\"router\": {\"disagg\": {\"min_prefill_tokens\": -1}}}",
		     "router.disagg.min_prefill_tokens: expected an integer in [0, 100000000], got -1");
}
END_TEST

/* Errors in a pool name its path; an error in a key a pool inherits names
 * the cluster's key and the pool it was read for. */
START_TEST(pool_errors_name_the_pool)
{
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 2, \"pools\": "
		     "[{\"nodes\": 1}, {\"nodes\": 1, \"gpu\": \"L40S\"}]}}",
		     "cluster.pools[1]: Llama-3-70B needs 131.5 GiB of weights (bf16); 2 x L40S has "
		     "90.0 GiB, 81.0 GiB usable at gpu_memory_utilization 0.9 with a 1.0 GiB "
		     "activation reserve per GPU, leaving no room for KV cache; raise "
		     "cluster.pools[1].tp or pick a larger GPU");
	expect_error("{\"cluster\": {\"server\": \"DGX-H100\", \"pools\": [{\"nodes\": 1}, "
		     "{\"nodes\": 1, \"gpu\": \"L40S\"}]}}",
		     "cluster.server (for cluster.pools[1]): a DGX-H100 server holds H100-SXM GPUs, "
		     "not L40S");
	expect_error("{\"cluster\": {\"cost_model\": {\"mfu\": 0.5}, \"pools\": [{\"nodes\": 1}, "
		     "{\"nodes\": 1, \"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2}}]}}",
		     "cluster.cost_model.mfu (for cluster.pools[1]): not read by the fixed cost model");
	expect_error("{\"cluster\": {\"pools\": [{\"nodes\": 1, \"tp\": 3}]}}",
		     "cluster.pools[0].tp: expected a divisor of Llama-3-8B's 32 attention heads");
	expect_error("{\"cluster\": {\"pools\": [{\"nodes\": 1, \"engine\": {\"max_num_seqs\": 0}}]}}",
		     "cluster.pools[0].engine.max_num_seqs: expected an integer in [1, 65536], got 0");
	expect_error("{\"cluster\": {\"pools\": [{\"nodes\": 1, \"engine\": {\"prefix_caching\": "
		     "false}}]}}",
		     "cluster.pools[0].engine.prefix_caching: a key of the whole cluster, not of one "
		     "pool (KV handed between pools must agree on it); set it at cluster level "
		     "(cluster.engine.prefix_caching)");
	expect_error("{\"cluster\": {\"pools\": []}}", "cluster.pools: expected a non-empty array");
	expect_error("{\"cluster\": {\"pools\": [{\"name\": \"a\"}]}}",
		     "cluster.pools[0].nodes: missing (each pool sets its node count)");
	expect_error("{\"cluster\": {\"pools\": [{\"nodes\": 1, \"name\": "
		     "\"a-name-that-is-much-too-long-for-a-pool\"}]}}",
		     "cluster.pools[0].name: expected a non-empty string of at most 31 characters");
	expect_error("{\"cluster\": {\"pools\": [{\"nodes\": 1, \"role\": \"decode\"}, "
		     "{\"nodes\": 1}]}}",
		     "cluster.pools: a decode pool needs a prefill pool to take its KV from");
	expect_error("{\"cluster\": {\"kv_transfer\": \"none\", \"pools\": [{\"nodes\": 1, "
		     "\"role\": \"prefill\"}, {\"nodes\": 1, \"role\": \"decode\"}]}}",
		     "cluster.kv_transfer: a prefill pool sends each request's KV to a decode pool, "
		     "and \"none\" leaves no path");
	/* a default every pool overrides is never read */
	expect_error("{\"cluster\": {\"gpu\": \"H200\", \"pools\": [{\"nodes\": 1, \"gpu\": "
		     "\"L40S\"}, {\"nodes\": 1, \"gpu\": \"H100-SXM\"}]}}",
		     "cluster.gpu: every pool in cluster.pools sets its own, so this default is "
		     "never read; remove it");
	expect_error("{\"cluster\": {\"engine\": {\"max_num_seqs\": 8}, \"pools\": [{\"nodes\": 1, "
		     "\"engine\": {\"max_num_seqs\": 4}}]}}",
		     "cluster.engine.max_num_seqs: every pool in cluster.pools sets its own");
	expect_error("{\"cluster\": {\"engine\": {\"bogus\": 1}, \"pools\": [{\"nodes\": 1}]}}",
		     "cluster.engine.bogus: unknown key (expected one of: kv_block_tokens");
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* slurp_has_a_limit reads 64 MiB, slow under ASan on a busy machine */
	tcase_add_test(tc, empty_object_and_embedded_default);
	tcase_add_test(tc, duplicate_keys_are_errors);
	tcase_add_test(tc, policy_params_apply_and_unread_keys_fail);
	tcase_add_test(tc, errors_name_the_json_path);
	tcase_add_test(tc, set_overrides_and_catalog_additions);
	tcase_add_test(tc, set_values_are_all_json_or_a_string);
	tcase_add_test(tc, syntax_errors_give_line_and_column);
	tcase_add_test(tc, int_ranges_are_what_a_double_holds);
	tcase_add_test(tc, strings_must_be_utf8);
	tcase_add_test(tc, slurp_has_a_limit);
	tcase_add_test(tc, times_convert_within_the_clock);
	tcase_add_test(tc, pools_number_inherit_and_size);
	tcase_add_test(tc, no_pools_is_one_mixed_pool);
	tcase_add_test(tc, kv_transfer_string_or_object);
	tcase_add_test(tc, decode_policy_params);
	tcase_add_test(tc, pool_errors_name_the_pool);
	suite_add_tcase(s, tc);
	return s;
}
