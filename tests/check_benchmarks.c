/* check_benchmarks: inference-perf's and vllm bench's load, worked out by hand; the YAML reader. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config/yaml.h"
#include "results/metrics.h"
#include "sim/request.h"
#include "workloads/workload.h"
#include "tests/suites.h"

static char tmpdir[64];

static void ensure_tmp(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/kvsim-bm-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	}
}

/* Writes yaml to tmpdir/name. */
static void put_file(const char *name, const char *yaml)
{
	char p[128];
	ensure_tmp();
	snprintf(p, sizeof p, "%s/%s", tmpdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(yaml, f);
	fclose(f);
}

static void *make(const char *json, const struct wl_ops **ops, char *err, size_t errlen)
{
	ensure_tmp();
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	struct wl_env env = {16, 4096, 3, tmpdir, 1.0, NULL};
	void *st = wl_create(o, &env, ops, err, errlen);
	cJSON_Delete(o);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	tmpdir[0] = 0;
	return st;
}

/* 2 groups x 3 prompts: 32-token system prompts (two blocks), 20-token
 * questions, 7 output tokens; stage 0 4 req/s for 2 s, stage 1 2 req/s for
 * 3 s, 0.5 s between. */
static const char *const sp_yaml = "api:\n  type: completion\n  streaming: true\n"
				   "data:\n  type: shared_prefix\n  shared_prefix:\n"
				   "    num_groups: 2\n    num_prompts_per_group: 3\n"
				   "    system_prompt_len: 32\n    question_len: 20\n"
				   "    output_len: 7\n"
				   "load:\n  type: constant\n  interval: 0.5\n  stages:\n"
				   "  - rate: 4.0\n    duration: 2\n  - rate: 2\n    duration: 3\n"
				   "server:\n  ignore_eos: true\n";

START_TEST(shared_prefix_cycles_prompts_in_stages)
{
	put_file("sp.yaml", sp_yaml);
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = make("{\"kind\": \"inference_perf\", \"config\": \"sp.yaml\", "
			"\"constant_gaps\": \"fixed\"}",
			&ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r[14];
	memset(r, 0, sizeof r);
	for (int i = 0; i < 14; i++)
		ck_assert_int_eq(ops->next(st, &r[i]), 1);
	struct request extra = {0};
	ck_assert_int_eq(ops->next(st, &extra), 0);
	for (int i = 0; i < 14; i++) {
		/* stage 0: 1 s lead, then every 1/4 s: 1.25 .. 3.0; stage 1
		 * begins 0.5 s + 1 s after 3.0: 5.0 .. 7.5 every 1/2 s */
		int64_t want = i < 8 ? 1000000000LL + (i + 1) * 250000000LL
				     : 4500000000LL + (i - 7) * 500000000LL;
		ck_assert_int_eq(r[i].arrival_ns, want);
		ck_assert_uint_eq(r[i].prompt_tokens, 52);
		ck_assert_uint_eq(r[i].output_tokens, 7);
		ck_assert_uint_eq(r[i].n_shared, 3); /* the whole prompt repeats */
		ck_assert_uint_eq(r[i].n_hashes, (52 + 7) / 16);
	}
	/* request k of a stage carries prompt k mod 6 (group (k mod 6) / 3) */
	for (int i = 0; i < 14; i++)
		for (int j = 0; j < 14; j++) {
			int pi = (i < 8 ? i : i - 8) % 6, pj = (j < 8 ? j : j - 8) % 6;
			int same_prompt = pi == pj, same_group = pi / 3 == pj / 3;
			ck_assert_int_eq(r[i].hashes[0] == r[j].hashes[0], same_group);
			ck_assert_int_eq(r[i].hashes[1] == r[j].hashes[1], same_group);
			ck_assert_int_eq(r[i].hashes[2] == r[j].hashes[2], same_prompt);
		}
	const struct wl_stage_info *si;
	ck_assert_uint_eq(ops->stages(st, &si), 2);
	ck_assert_int_eq(si[0].start_ns, 1000000000LL);
	ck_assert_int_eq(si[0].end_ns, 3000000000LL);
	ck_assert_uint_eq(si[0].requests, 8);
	ck_assert_int_eq(si[1].start_ns, 4500000000LL);
	ck_assert_int_eq(si[1].end_ns, 7500000000LL);
	ck_assert_uint_eq(si[1].requests, 6);
	ck_assert_double_eq(si[1].rate, 2);
	for (int i = 0; i < 14; i++)
		free(r[i].hashes);
	free(extra.hashes);
	ops->destroy(st);
}
END_TEST

/* inference-perf's constant timer: int(rate x duration) exponential gaps
 * scaled to the duration, so the last arrival is at the stage's end and the
 * gaps' coefficient of variation is near 1. */
START_TEST(constant_timer_scales_exponential_gaps)
{
	put_file("c.yaml", "data:\n  type: random\n  input_distribution:\n    min: 5\n"
			   "    max: 15\n    mean: 10\n    std_dev: 100\n    total_count: 50\n"
			   "  output_distribution: {type: fixed, mean: 3, total_count: 40}\n"
			   "load:\n  type: constant\n  stages: [{rate: 20, duration: 1000}]\n");
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = make("{\"kind\": \"inference_perf\", \"config\": \"c.yaml\"}", &ops, err,
			sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r = {0};
	int64_t prev = 1000000000LL, n = 0;
	double s = 0, s2 = 0;
	int lo = 0, hi = 0;
	while (ops->next(st, &r) == 1) {
		double g = (r.arrival_ns - prev) / 1e9;
		ck_assert(g >= 0);
		s += g;
		s2 += g * g;
		prev = r.arrival_ns;
		/* lengths: normal clipped to [5, 15]; sd 100 puts most at an end */
		ck_assert(r.prompt_tokens >= 5 && r.prompt_tokens <= 15);
		lo += r.prompt_tokens == 5;
		hi += r.prompt_tokens == 15;
		ck_assert_uint_eq(r.output_tokens, 3);
		ck_assert_uint_eq(r.n_shared, 0); /* random prompts share nothing */
		n++;
	}
	ck_assert_int_eq(n, 20000);
	ck_assert(llabs(prev - 1001000000000LL) <= 1);
	double mean = s / n, cv = sqrt(s2 / n - mean * mean) / mean;
	ck_assert_double_eq_tol(mean, 0.05, 1e-9);
	ck_assert_msg(fabs(cv - 1) < 0.05, "cv %g", cv);
	ck_assert(lo > 5000 && hi > 5000);
	free(r.hashes);
	ops->destroy(st);
}
END_TEST

/* inference-perf's poisson timer: second by second a Poisson(3) count,
 * spread over the second so that its last arrival is on the second; the
 * stage stops at int(rate x duration) = 1200. A second is empty with
 * probability e^-3, so about 400 (1 - e^-3) = 380 arrivals are on whole
 * seconds. synthetic prompts all start with the same text. */
START_TEST(poisson_timer_by_seconds)
{
	put_file("p.yaml", "data:\n  type: synthetic\n  input_distribution:\n"
			   "    {type: uniform, min: 40, max: 80, total_count: 7}\n"
			   "  output_distribution: {type: fixed, mean: 5, total_count: 9}\n"
			   "load:\n  type: poisson\n  stages: [{rate: 3, duration: 400}]\n");
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = make("{\"kind\": \"inference_perf\", \"config\": \"p.yaml\"}", &ops, err,
			sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r = {0};
	int64_t n = 0, whole = 0, prev = 0;
	uint64_t first_block = 0;
	while (ops->next(st, &r) == 1) {
		ck_assert(r.arrival_ns >= prev);
		prev = r.arrival_ns;
		whole += r.arrival_ns % 1000000000LL == 0;
		ck_assert(r.prompt_tokens >= 40 && r.prompt_tokens <= 80);
		ck_assert_uint_eq(r.n_shared, r.prompt_tokens / 16);
		if (!n)
			first_block = r.hashes[0];
		ck_assert(r.hashes[0] == first_block); /* the same text's start */
		n++;
	}
	ck_assert_int_eq(n, 1200);
	ck_assert_msg(whole > 330 && whole < 430, "%lld arrivals on whole seconds", (long long)whole);
	free(r.hashes);
	ops->destroy(st);
}
END_TEST

/* vllm bench's random dataset: input lengths integer-uniform in
 * [floor(99 x 0.5), ceil(99 x 1.5)] = [49, 149] plus the BOS the server adds,
 * outputs in [20, 60]; gamma gaps with burstiness b have cv 1/sqrt(b) and are
 * scaled so that the last arrival is at num_prompts / rate. */
static void check_vllm(double burstiness, double want_cv)
{
	char json[512];
	snprintf(json, sizeof json,
		 "{\"kind\": \"vllm_bench\", \"num_prompts\": 20000, \"random_input_len\": 100, "
		 "\"random_output_len\": 40, \"random_range_ratio\": 0.5, \"request_rate\": 10, "
		 "\"burstiness\": %g}",
		 burstiness);
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = make(json, &ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r = {0};
	int64_t prev = 0, n = 0;
	double s = 0, s2 = 0, in = 0, out = 0;
	uint32_t in_lo = 1000, in_hi = 0, out_lo = 1000, out_hi = 0;
	while (ops->next(st, &r) == 1) {
		double g = (r.arrival_ns - prev) / 1e9;
		s += g;
		s2 += g * g;
		prev = r.arrival_ns;
		in += r.prompt_tokens;
		out += r.output_tokens;
		in_lo = r.prompt_tokens < in_lo ? r.prompt_tokens : in_lo;
		in_hi = r.prompt_tokens > in_hi ? r.prompt_tokens : in_hi;
		out_lo = r.output_tokens < out_lo ? r.output_tokens : out_lo;
		out_hi = r.output_tokens > out_hi ? r.output_tokens : out_hi;
		n++;
	}
	ck_assert_int_eq(n, 20000);
	ck_assert(llabs(prev - 2000000000000LL) <= 1);
	ck_assert_uint_eq(in_lo, 50);
	ck_assert_uint_eq(in_hi, 150);
	ck_assert_uint_eq(out_lo, 20);
	ck_assert_uint_eq(out_hi, 60);
	ck_assert_msg(fabs(in / n - 100) < 1, "mean input %g", in / n);
	ck_assert_msg(fabs(out / n - 40) < 0.5, "mean output %g", out / n);
	double mean = s / n, cv = sqrt(s2 / n - mean * mean) / mean;
	ck_assert_msg(fabs(cv / want_cv - 1) < 0.06, "burstiness %g: cv %g, want %g", burstiness,
		      cv, want_cv);
	free(r.hashes);
	ops->destroy(st);
}

START_TEST(vllm_random_lengths_and_burstiness)
{
	check_vllm(1, 1);
	check_vllm(0.25, 2);
	check_vllm(4, 0.5);
}
END_TEST

/* max_concurrency: the first max_concurrency requests open a slot each; the
 * next goes out when one ends (then, or when due if later), in order. */
START_TEST(vllm_max_concurrency_slots)
{
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = make("{\"kind\": \"vllm_bench\", \"num_prompts\": 5, \"max_concurrency\": 2, "
			"\"random_input_len\": 33, \"random_output_len\": 4, "
			"\"request_rate\": \"inf\"}",
			&ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request a = {0}, b = {0}, c = {0}, x = {0};
	ck_assert_int_eq(ops->next(st, &a), 1);
	ck_assert_int_eq(ops->next(st, &b), 1);
	ck_assert_int_eq(ops->next(st, &x), 0);
	ck_assert_int_eq(a.arrival_ns, 0);
	ck_assert_int_eq(b.arrival_ns, 0);
	ck_assert_uint_eq(a.prompt_tokens, 33);
	ck_assert_uint_eq(a.output_tokens, 4);
	ck_assert_int_eq(ops->follow_up(st, &b, 1, 7000, &c), 1);
	ck_assert_int_eq(c.arrival_ns, 7000);
	ck_assert_uint_eq(c.session, b.session);
	ck_assert_int_eq(ops->follow_up(st, &a, 1, 9000, &x), 1);
	ck_assert_int_eq(ops->follow_up(st, &c, 1, 9500, &x), 1);
	ck_assert_int_eq(ops->follow_up(st, &x, 1, 9900, &x), 0); /* all 5 sent */
	free(a.hashes);
	free(b.hashes);
	free(c.hashes);
	free(x.hashes);
	ops->destroy(st);
}
END_TEST

START_TEST(yaml_values_and_errors)
{
	char err[256] = "";
	const char *ok = "a: 1\nb: [x, 'y', \"2\", 2.5, null, ~, true]\nc:\n  d: .inf\n";
	cJSON *y = cfg_yaml_parse(ok, strlen(ok), "ok.yaml", err, sizeof err);
	ck_assert_msg(y != NULL, "%s", err);
	ck_assert_double_eq(cJSON_GetObjectItem(y, "a")->valuedouble, 1);
	cJSON *b = cJSON_GetObjectItem(y, "b");
	ck_assert_str_eq(cJSON_GetArrayItem(b, 0)->valuestring, "x");
	ck_assert_str_eq(cJSON_GetArrayItem(b, 2)->valuestring, "2"); /* quoted: a string */
	ck_assert_double_eq(cJSON_GetArrayItem(b, 3)->valuedouble, 2.5);
	ck_assert(cJSON_IsNull(cJSON_GetArrayItem(b, 4)) && cJSON_IsNull(cJSON_GetArrayItem(b, 5)));
	ck_assert(cJSON_IsTrue(cJSON_GetArrayItem(b, 6)));
	ck_assert(isinf(cJSON_GetObjectItem(cJSON_GetObjectItem(y, "c"), "d")->valuedouble));
	cJSON_Delete(y);
	static const struct {
		const char *text, *frag;
	} bad[] = {
	    {"a: 1\nb: [1, 2\nc: 3\n", "bad.yaml:3:"},
	    {"a: 1\na: 2\n", "bad.yaml:2: duplicate key \"a\""},
	    {"a: &x 1\nb: *x\n", "bad.yaml:2: aliases"},
	    {"a: 1\n---\nb: 2\n", "bad.yaml:2: only one YAML document"},
	    {"", "bad.yaml:1: empty YAML document"},
	    {"a:\n\tb: 1\n", "bad.yaml:2:"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = 0;
		y = cfg_yaml_parse(bad[i].text, strlen(bad[i].text), "bad.yaml", err, sizeof err);
		ck_assert_msg(y == NULL, "case %zu parsed", i);
		ck_assert_msg(strstr(err, bad[i].frag) != NULL, "case %zu: '%s' lacks '%s'", i, err,
			      bad[i].frag);
	}
}
END_TEST

/* The measured runs' configs (tests/data) read as inference-perf reads them. */
START_TEST(measured_configs_read)
{
	char err[512] = "";
	cJSON *o = cJSON_Parse("{\"kind\": \"inference_perf\", "
			       "\"config\": \"inference-perf-codegen.yaml\"}");
	struct wl_env env = {16, 4096, 1, "tests/data", 1.0, NULL};
	const struct wl_ops *ops;
	void *st = wl_create(o, &env, &ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r = {0};
	uint64_t n = 0;
	while (ops->next(st, &r) == 1) {
		ck_assert_uint_eq(r.prompt_tokens, 100 + 466);
		ck_assert_uint_eq(r.output_tokens, 247);
		n++;
	}
	ck_assert_uint_eq(n, 5 * 600 + 10 * 600);
	const struct wl_stage_info *si;
	ck_assert_uint_eq(ops->stages(st, &si), 2);
	ck_assert_uint_eq(si[0].requests, 3000);
	ck_assert_int_eq(si[0].end_ns, 601000000000LL);
	ck_assert_int_eq(si[1].start_ns, 603000000000LL);
	free(r.hashes);
	ops->destroy(st);
	cJSON_Delete(o);
}
END_TEST

/* Figures per stage: a request counts in the stage whose window holds its
 * arrival; throughput is over the stage's timer start to its last end. */
START_TEST(stage_figures)
{
	struct wl_stage_info win[2] = {{1000000000LL, 2000000000LL, 2, 1, 2},
				       {4000000000LL, 5000000000LL, 1, 1, 1}};
	struct metrics m;
	met_init(&m, 1, 1, NULL);
	ck_assert_int_eq(met_set_stages(&m, win, 2), 0);
	/* arrival, first token, finish (s); output tokens */
	static const double q[3][4] = {{1.5, 1.6, 2.6, 11}, {2.0, 2.2, 3.2, 11}, {5.0, 5.5, 6.5, 3}};
	for (int i = 0; i < 3; i++) {
		struct request r = {0};
		r.state = REQ_DONE;
		r.arrival_ns = (int64_t)(q[i][0] * 1e9);
		r.first_token_ns = (int64_t)(q[i][1] * 1e9);
		r.finish_ns = (int64_t)(q[i][2] * 1e9);
		r.enqueue_ns = r.sched_ns = r.arrival_ns;
		r.prompt_tokens = 100;
		r.output_tokens = (uint32_t)q[i][3];
		ck_assert_int_eq(met_record(&m, &r, 0), 0);
	}
	struct met_summary sum = {0};
	met_summarize(&m, 7, &sum);
	ck_assert_uint_eq(sum.n_stages, 2);
	ck_assert_uint_eq(sum.stages[0].completed, 2);
	ck_assert_uint_eq(sum.stages[1].completed, 1);
	ck_assert_double_eq_tol(sum.stages[0].ttft.mean, 0.15, 1e-9);  /* (0.1 + 0.2) / 2 */
	ck_assert_double_eq_tol(sum.stages[0].tpot.mean, 0.1, 1e-9);   /* 1 s / 10 tokens */
	ck_assert_double_eq_tol(sum.stages[1].tpot.mean, 0.5, 1e-9);   /* 1 s / 2 tokens */
	ck_assert_double_eq_tol(sum.stages[0].last_finish_s, 3.2, 1e-9);
	ck_assert_uint_eq(sum.stages[0].output_tokens, 22);
	ck_assert_uint_eq(sum.stages[0].sent, 2);
	met_summary_free(&sum);
	met_free(&m);
}
END_TEST

/* The client's view: TTFT plus the API server (1 ms), tokenising 100
 * tokens at 10 us and the first chunk (0.5 ms); ITL the decode span over
 * the 10 later tokens' 20 messages. A run without it has no such column. */
START_TEST(client_view_by_hand)
{
	struct metrics m;
	char buf[1024] = "";
	FILE *f = fmemopen(buf, sizeof buf, "w");
	ck_assert_ptr_nonnull(f);
	met_csv_header_opts(f, NULL, 1);
	met_init(&m, 1, 1, f);
	const struct met_client c = {1, 1e-3, 10e-6, 0.5e-3, 2};
	met_set_client(&m, &c);
	struct request r = {0};
	r.state = REQ_DONE;
	r.arrival_ns = r.enqueue_ns = r.sched_ns = 0;
	r.first_token_ns = 100000000;
	r.finish_ns = 1100000000;
	r.prompt_tokens = 100;
	r.output_tokens = 11;
	r.prefill_node = -1;
	ck_assert_int_eq(met_record(&m, &r, 0), 0);
	struct met_summary sum = {0};
	met_summarize(&m, 2, &sum);
	ck_assert_int_eq(sum.client, 1);
	ck_assert_double_eq_tol(sum.stat[MET_TTFT_CLIENT].mean, 0.1025, 1e-12);
	ck_assert_double_eq_tol(sum.stat[MET_ITL_CLIENT].mean, 0.05, 1e-12);
	ck_assert_double_eq_tol(sum.stat[MET_TTFT].mean, 0.1, 1e-12); /* the engine's stays */
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "queue_s,ttft_client_s,itl_client_s,e2e_client_s,cached"));
	ck_assert_ptr_nonnull(strstr(buf, ",0.102500000,0.050000000,"));
	met_summary_free(&sum);
	met_free(&m);
	/* without a client block: neither the columns nor the figures */
	memset(buf, 0, sizeof buf);
	f = fmemopen(buf, sizeof buf, "w");
	met_csv_header_opts(f, NULL, 0);
	fclose(f);
	ck_assert_ptr_null(strstr(buf, "client"));
	met_init(&m, 1, 1, NULL);
	ck_assert_int_eq(met_record(&m, &r, 0), 0);
	ck_assert_uint_eq(m.sample[MET_TTFT_CLIENT].count, 0);
	met_free(&m);
}
END_TEST

Suite *benchmarks_suite(void)
{
	Suite *s = suite_create("benchmarks");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, shared_prefix_cycles_prompts_in_stages);
	tcase_add_test(tc, constant_timer_scales_exponential_gaps);
	tcase_add_test(tc, poisson_timer_by_seconds);
	tcase_add_test(tc, vllm_random_lengths_and_burstiness);
	tcase_add_test(tc, vllm_max_concurrency_slots);
	tcase_add_test(tc, yaml_values_and_errors);
	tcase_add_test(tc, measured_configs_read);
	tcase_add_test(tc, stage_figures);
	tcase_add_test(tc, client_view_by_hand);
	suite_add_tcase(s, tc);
	return s;
}
