/* check_trace: trace readers, replay, trace stats, gen -> replay round trip. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "config/config.h"
#include "sim/request.h"
#include "base/rng.h"
#include "sim/sim.h"
#include "workloads/common.h"
#include "workloads/trace.h"
#include "workloads/tracestats.h"
#include "workloads/workload.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static const char *write_tmp(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "/tmp/kvsim_check_%s", name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

START_TEST(mooncake_reader_exact)
{
	const char *p = write_tmp("mc.jsonl",
				  "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, "
				  "\"hash_ids\": [7, 8]}\n"
				  "\n"
				  "{\"timestamp\": 1250, \"input_length\": 512, \"output_length\": 9, "
				  "\"hash_ids\": [7]}\n");
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	char err[512];
	ck_assert_int_eq(trace_open(&tr, p, TRACE_MOONCAKE, 0, err, sizeof err), 0);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 0);
	ck_assert_uint_eq(rec.input, 600);
	ck_assert_uint_eq(rec.output, 5);
	ck_assert_uint_eq(rec.n_ids, 2);
	ck_assert_uint_eq(rec.ids[1], 8);
	ck_assert_uint_eq(rec.block_tokens, 512);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 250000000); /* 250 ms later */
	ck_assert_uint_eq(rec.line, 3);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 0);
	trace_close(&tr);
	trace_rec_free(&rec);
}
END_TEST

/* Reads every line of a one-line Mooncake trace: 1 with rec filled, or -1
 * with the error in err. */
static int read_one(const char *line, struct trace_rec *rec, char *err, size_t errlen)
{
	const char *p = write_tmp("mc_one.jsonl", line);
	struct trace_reader tr;
	ck_assert_int_eq(trace_open(&tr, p, TRACE_MOONCAKE, 0, err, errlen), 0);
	int got = trace_next(&tr, rec, err, errlen);
	trace_close(&tr);
	return got;
}

/* Mooncake lines in the published key order take a fast path; others go
 * through cJSON. Each line in the fast path's shape (and many near it)
 * against the same fields in another order, which only the general path
 * reads: the same record, or the same error. */
START_TEST(mooncake_fast_path_agrees_with_the_general_one)
{
	static const char *const lines[][2] = {
	    {"{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [7, 8]}",
	     "{\"hash_ids\": [7, 8], \"output_length\": 5, \"input_length\": 600, \"timestamp\": 1000}"},
	    {"\t{\"timestamp\":0,\"input_length\":512,\"output_length\":1,\"hash_ids\":[0]} \t",
	     "{\"input_length\":512,\"timestamp\":0,\"output_length\":1,\"hash_ids\":[0]}"},
	    {"(the largest counts, below)", NULL},
	    /* near the shape: each must give the general path's answer */
	    {"{\"timestamp\": 01, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3]}",
	     "{\"input_length\": 5, \"timestamp\": 01, \"output_length\": 1, \"hash_ids\": [3]}"},
	    {"{\"timestamp\": 9999999999999, \"input_length\": 5, \"output_length\": 1, "
	     "\"hash_ids\": [3]}",
	     "{\"input_length\": 5, \"timestamp\": 9999999999999, \"output_length\": 1, "
	     "\"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1.5, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3]}",
	     "{\"input_length\": 5, \"timestamp\": 1.5, \"output_length\": 1, \"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1000000000000000, \"input_length\": 5, \"output_length\": 1, "
	     "\"hash_ids\": [3]}",
	     "{\"input_length\": 5, \"timestamp\": 1000000000000000, \"output_length\": 1, "
	     "\"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}",
	     "{\"input_length\": 0, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": []}"},
	    {"{\"timestamp\": 1, \"input_length\": 100000001, \"output_length\": 1, \"hash_ids\": [3]}",
	     "{\"input_length\": 100000001, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 0, \"hash_ids\": [3]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 0, \"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [3]}",
	     "{\"input_length\": 600, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3, 4]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3, 4]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [-3]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [-3]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3,]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3,]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3]} x",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3]} x"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3]",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3]"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [3], "
	     "\"extra\": 2}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": [3], "
	     "\"extra\": 2}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": "
	     "[9000000000000001]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": "
	     "[9000000000000001]}"},
	    {"{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": "
	     "[999999999999999]}",
	     "{\"input_length\": 5, \"timestamp\": 1, \"output_length\": 1, \"hash_ids\": "
	     "[999999999999999]}"},
	};
	/* the largest counts: 195,313 ids */
	size_t big = 195313 * 17 + 256;
	char *ids = malloc(big), *fast = malloc(big + 256), *slow = malloc(big + 256);
	ck_assert_ptr_nonnull(ids);
	ck_assert_ptr_nonnull(fast);
	ck_assert_ptr_nonnull(slow);
	size_t k = 0;
	for (uint32_t i = 0; i < 195313; i++)
		k += (size_t)sprintf(ids + k, "%s%u", i ? ", " : "", i * 7919u);
	struct trace_rec a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	for (size_t t = 0; t < sizeof lines / sizeof lines[0]; t++) {
		if (lines[t][1]) {
			snprintf(fast, big + 256, "%s\n", lines[t][0]);
			snprintf(slow, big + 256, "%s\n", lines[t][1]);
		} else {
			snprintf(fast, big + 256,
				 "{\"timestamp\": 999999999999, \"input_length\": 100000000, "
				 "\"output_length\": 100000000, \"hash_ids\": [%s]}\n",
				 ids);
			snprintf(slow, big + 256,
				 "{\"hash_ids\": [%s], \"timestamp\": 999999999999, "
				 "\"input_length\": 100000000, \"output_length\": 100000000}\n",
				 ids);
		}
		char ea[1024] = "", eb[1024] = "";
		int ga = read_one(fast, &a, ea, sizeof ea), gb = read_one(slow, &b, eb, sizeof eb);
		ck_assert_msg(ga == gb, "line %zu: %d against %d (%s / %s)", t, ga, gb, ea, eb);
		ck_assert_msg(t >= 3 || ga == 1, "line %zu: %s", t, ea);
		if (ga != 1) {
			ck_assert_str_eq(ea, eb);
			continue;
		}
		ck_assert_msg(a.arrival_ns == b.arrival_ns, "line %zu: arrival %lld against %lld", t,
			      (long long)a.arrival_ns, (long long)b.arrival_ns);
		ck_assert_uint_eq(a.input, b.input);
		ck_assert_uint_eq(a.output, b.output);
		ck_assert_uint_eq(a.block_tokens, b.block_tokens);
		ck_assert_uint_eq(a.shared_blocks, b.shared_blocks);
		ck_assert_uint_eq(a.n_ids, b.n_ids);
		ck_assert(memcmp(a.ids, b.ids, a.n_ids * sizeof *a.ids) == 0);
	}
	free(ids);
	free(fast);
	free(slow);
	trace_rec_free(&a);
	trace_rec_free(&b);
}
END_TEST

START_TEST(azure_reader_exact)
{
	const char *p = write_tmp("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
					    "2023-11-16 23:59:59.5000000,374,44\n"
					    "2023-11-17 00:00:01.2500001,396,109\n");
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	char err[512];
	ck_assert_int_eq(trace_open(&tr, p, TRACE_AZURE, 0, err, sizeof err), 0);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 0);
	ck_assert_uint_eq(rec.input, 374);
	ck_assert_uint_eq(rec.output, 44);
	ck_assert_uint_eq(rec.n_ids, 0);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 1750000100); /* across midnight */
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 0);
	trace_close(&tr);
	trace_rec_free(&rec);
}
END_TEST

static void expect_bad(enum trace_format fmt, const char *text, const char *fragment)
{
	const char *p = write_tmp("bad.txt", text);
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	char err[512] = "";
	ck_assert_int_eq(trace_open(&tr, p, fmt, 0, err, sizeof err), 0);
	int got;
	while ((got = trace_next(&tr, &rec, err, sizeof err)) == 1)
		;
	ck_assert_int_eq(got, -1);
	ck_assert_msg(strstr(err, fragment) != NULL, "error \"%s\" lacks \"%s\"", err, fragment);
	trace_close(&tr);
	/* With skip_bad the same file reads to the end, counting the line. */
	ck_assert_int_eq(trace_open(&tr, p, fmt, 1, err, sizeof err), 0);
	while ((got = trace_next(&tr, &rec, err, sizeof err)) == 1)
		;
	ck_assert_int_eq(got, 0);
	ck_assert_uint_eq(tr.skipped, 1);
	trace_close(&tr);
	trace_rec_free(&rec);
}

START_TEST(bad_lines_name_file_and_line)
{
	const char *ok = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
			 "\"hash_ids\": [1]}\n";
	char buf[1024];
	snprintf(buf, sizeof buf, "%s{\"timestamp\": 5, \"input_length\": 10,\n", ok);
	expect_bad(TRACE_MOONCAKE, buf, "kvsim_check_bad.txt:2: not a JSON object");
	snprintf(buf, sizeof buf,
		 "%s{\"timestamp\": 5, \"output_length\": 3, \"hash_ids\": [1]}\n", ok);
	expect_bad(TRACE_MOONCAKE, buf, ":2: missing field \"input_length\"");
	snprintf(buf, sizeof buf,
		 "%s{\"timestamp\": 5, \"input_length\": -10, \"output_length\": 3, \"hash_ids\": [1]}\n",
		 ok);
	expect_bad(TRACE_MOONCAKE, buf, ":2: \"input_length\": expected an integer in [1,");
	snprintf(buf, sizeof buf,
		 "%s{\"timestamp\": 5, \"input_length\": 1000, \"output_length\": 3, \"hash_ids\": [1]}\n",
		 ok);
	expect_bad(TRACE_MOONCAKE, buf, ":2: \"hash_ids\" has 1 ids; input_length 1000 needs "
					"ceil(1000 / 512) = 2");
	snprintf(buf, sizeof buf, "{\"timestamp\": 9, \"input_length\": 10, \"output_length\": 1, "
				  "\"hash_ids\": [1]}\n%s",
		 ok);
	expect_bad(TRACE_MOONCAKE, buf, ":2: arrival goes backwards");
	expect_bad(TRACE_AZURE,
		   "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,374,44\nxx,1\n",
		   ":3: expected 3 comma-separated fields");
	expect_bad(TRACE_AZURE,
		   "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,-374,44\n",
		   ":2: ContextTokens: expected an integer in [1,");
	expect_bad(TRACE_KVSIM,
		   "{\"session\": 1, \"turn\": 1, \"arrival_s\": 0, \"prompt_tokens\": 20, "
		   "\"output_tokens\": 4, \"block_tokens\": 16, \"blocks\": [\"zz\"]}\n",
		   ":1: \"blocks\"[0]: expected a nonzero hash");
}
END_TEST

START_TEST(empty_trace_is_a_clear_error)
{
	const char *p = write_tmp("empty.jsonl", "");
	struct trace_stats st;
	char err[512] = "";
	ck_assert_int_eq(tstats_run(p, TRACE_MOONCAKE, 0, NULL, 0, &st, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "no requests in the trace") != NULL, "%s", err);
}
END_TEST

/* Table 2 of the Mooncake paper (FAST'25): 12,031 requests, mean input
 * 12,035 and output 343 tokens. */
START_TEST(mooncake_conversation_matches_the_paper)
{
	const char *p = "data/traces/mooncake/conversation_trace.jsonl";
	uint64_t caches[2] = {1000, 100000000};
	struct trace_stats st;
	char err[512] = "";
	ck_assert_msg(tstats_run(p, TRACE_MOONCAKE, 0, caches, 2, &st, err, sizeof err) == 0, "%s",
		      err);
	ck_assert_uint_eq(st.requests, 12031);
	ck_assert_int_eq((int)lround(st.input.mean), 12035);
	ck_assert_int_eq((int)lround(st.output.mean), 343);
	ck_assert_uint_eq(st.block_tokens, 512);
	/* An LRU larger than the trace is the unbounded cache. */
	ck_assert_double_eq_tol(st.lru_hit[1], st.ideal_blocks, 1e-12);
	ck_assert_double_lt(st.lru_hit[0], st.ideal_blocks);
	ck_assert_double_gt(st.ideal_tokens, 0.3);
	ck_assert_double_lt(st.ideal_tokens, 0.45);
}
END_TEST

START_TEST(stats_by_hand)
{
	/* Blocks: A B | A B C | D | A B (LRU of 2 blocks). Unbounded: hits 0, 2,
	 * 0, 2 of 2 + 3 + 1 + 2 = 8 blocks. LRU(2): after r1 {A,B}; r2 hits A B
	 * then holds {B,C}... A is gone: r4 hits 0. */
	const char *p = write_tmp("hand.jsonl",
				  "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
				  "{\"timestamp\": 1, \"input_length\": 1100, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n"
				  "{\"timestamp\": 2, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [4]}\n"
				  "{\"timestamp\": 3, \"input_length\": 1024, \"output_length\": 1, \"hash_ids\": [1, 2]}\n");
	uint64_t caches[1] = {2};
	struct trace_stats st;
	char err[512] = "";
	ck_assert_int_eq(tstats_run(p, TRACE_MOONCAKE, 0, caches, 1, &st, err, sizeof err), 0);
	ck_assert_uint_eq(st.requests, 4);
	ck_assert_uint_eq(st.distinct_blocks, 4);
	ck_assert_uint_eq(st.total_blocks, 8);
	ck_assert_double_eq_tol(st.ideal_blocks, 4.0 / 8, 1e-12);
	ck_assert_double_eq_tol(st.ideal_tokens, 2048.0 / (1024 + 1100 + 512 + 1024), 1e-12);
	ck_assert_double_eq_tol(st.ideal_per_request, (0 + 1024.0 / 1100 + 0 + 1) / 4, 1e-12);
	ck_assert_double_eq_tol(st.lru_hit[0], 2.0 / 8, 1e-12);
	ck_assert_double_eq_tol(st.duration_s, 0.003, 1e-12);
}
END_TEST


static void run_to(const char *json, const char *dir)
{
	struct scenario s;
	th_scenario(json, NULL, &s);
	struct sim_opts o = {.out_dir = dir, .audit = 1};
	struct met_summary m;
	char err[1024] = "";
	ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s", err);
	met_summary_free(&m);
	cfg_scenario_free(&s);
}

/* Writing a generator's requests as kvsim JSONL and replaying them gives
 * the generator's run, request by request (closed-loop sessions too). */
START_TEST(gen_then_replay_is_the_same_run)
{
	static const char *const workloads[] = {
	    "{\"kind\": \"chat\", \"sessions_per_s\": 3, \"max_sessions\": 300}",
	    "{\"kind\": \"rag\", \"rate_per_s\": 4, \"max_requests\": 400}",
	    "{\"kind\": \"mix\", \"parts\": [{\"workload\": {\"kind\": \"agent\", \"max_chains\": 50}},"
	    " {\"weight\": 2, \"workload\": {\"kind\": \"open\", \"max_requests\": 300}}]}"};
	for (int i = 0; i < 3; i++) {
		char json[1024], replay[1024];
		snprintf(json, sizeof json,
			 "{\"duration_s\": 200, \"cluster\": {\"nodes\": 3, \"model\": \"Llama-3.1-8B\"}, "
			 "\"workload\": %s}",
			 workloads[i]);
		run_to(json, "/tmp/kvsim_check_gen_a");
		struct scenario s;
		th_scenario(json, NULL, &s);
		uint64_t n = 0;
		char err[1024] = "";
		ck_assert_msg(wl_trace_gen(&s, "/tmp/kvsim_check_gen.jsonl", &n, err, sizeof err) == 0,
			      "%s", err);
		cfg_scenario_free(&s);
		ck_assert_uint_gt(n, 100);
		snprintf(replay, sizeof replay,
			 "{\"duration_s\": 200, \"cluster\": {\"nodes\": 3, \"model\": \"Llama-3.1-8B\"}, "
			 "\"workload\": {\"kind\": \"trace\", \"format\": \"kvsim\", "
			 "\"path\": \"/tmp/kvsim_check_gen.jsonl\"}}");
		run_to(replay, "/tmp/kvsim_check_gen_b");
		char *a = th_slurp("/tmp/kvsim_check_gen_a/requests.csv");
		char *b = th_slurp("/tmp/kvsim_check_gen_b/requests.csv");
		ck_assert_msg(strcmp(a, b) == 0, "workload %d: replay differs", i);
		free(a);
		free(b);
	}
}
END_TEST

/* Two Mooncake requests that share their first 512-token block share its
 * 32 pages of 16 tokens, and nothing after. */
START_TEST(mooncake_blocks_map_onto_pages)
{
	const char *p = write_tmp("mc2.jsonl",
				  "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 6]}\n"
				  "{\"timestamp\": 0, \"input_length\": 700, \"output_length\": 2, \"hash_ids\": [5, 9]}\n");
	char json[512];
	snprintf(json, sizeof json, "{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": \"%s\"}",
		 p);
	cJSON *o = cJSON_Parse(json);
	struct wl_env env = {16, 100000, 1, NULL, 1.0, NULL};
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = wl_create(o, &env, &ops, err, sizeof err);
	cJSON_Delete(o);
	ck_assert_msg(st != NULL, "%s", err);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ck_assert_int_eq(ops->next(st, &a), 1);
	ck_assert_int_eq(ops->next(st, &b), 1);
	ck_assert_int_eq(ops->next(st, &b), 0);
	ck_assert_uint_eq(a.n_hashes, (1024 + 2) / 16);
	ck_assert_uint_eq(b.prompt_tokens, 700);
	ck_assert_uint_eq(a.n_shared, 64);
	for (uint32_t i = 0; i < 32; i++)
		ck_assert_uint_eq(a.hashes[i], b.hashes[i]);
	ck_assert_uint_ne(a.hashes[32], b.hashes[32]);
	ck_assert_uint_ne(a.session, b.session);
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
}
END_TEST

/* repeat: the trace again after its last arrival (+1 s), with its own
 * content: the second pass shares no block with the first, but within a
 * pass the shared prefix stays shared. */
START_TEST(repeat_replays_time_shifted_copies)
{
	const char *p = write_tmp("mc3.jsonl",
				  "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 6]}\n"
				  "{\"timestamp\": 2500, \"input_length\": 1024, \"output_length\": 2, \"hash_ids\": [5, 9]}\n");
	char json[512];
	snprintf(json, sizeof json,
		 "{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": \"%s\", \"repeat\": 3}", p);
	cJSON *o = cJSON_Parse(json);
	struct wl_env env = {16, 100000, 1, NULL, 1.0, NULL};
	const struct wl_ops *ops;
	char err[512] = "";
	void *st = wl_create(o, &env, &ops, err, sizeof err);
	cJSON_Delete(o);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r[7];
	memset(r, 0, sizeof r);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(ops->next(st, &r[i]), 1);
	ck_assert_int_eq(ops->next(st, &r[6]), 0);
	/* Arrivals: 0, 2.5 s; then 3.5, 6 s; then 7, 9.5 s. */
	int64_t at[6] = {0, 2500000000LL, 3500000000LL, 6000000000LL, 7000000000LL, 9500000000LL};
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(r[i].arrival_ns, at[i]);
	ck_assert_uint_eq(r[2].hashes[0], r[3].hashes[0]); /* shared within a pass */
	ck_assert_uint_ne(r[0].hashes[0], r[2].hashes[0]); /* not across passes */
	ck_assert_uint_ne(r[2].hashes[0], r[4].hashes[0]);
	for (int i = 0; i < 7; i++)
		free(r[i].hashes);
	ops->destroy(st);
}
END_TEST

/* Segment ids of trace content (replay.c's, restated). */
static uint64_t trace_seg_id(uint64_t kind, uint64_t x)
{
	return rng_mix64(rng_mix64(kind * 0x7472616365ULL) ^ x) & ~(1ULL << 63);
}

/* A Mooncake workload over `path` with max_requests max (0: none). */
static void *mooncake_wl(const char *path, int max, const struct wl_ops **ops)
{
	char json[512];
	snprintf(json, sizeof json, "{\"kind\": \"trace\", \"format\": \"mooncake\", "
				    "\"path\": \"%s\"%s",
		 path, max ? ", \"max_requests\": " : "}");
	if (max)
		snprintf(json + strlen(json), sizeof json - strlen(json), "%d}", max);
	cJSON *o = cJSON_Parse(json);
	struct wl_env env = {16, 100000, 1, NULL, 1.0, NULL};
	char err[512] = "";
	void *st = wl_create(o, &env, ops, err, sizeof err);
	cJSON_Delete(o);
	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

/* Mooncake requests are read and hashed in batches: each is still the
 * request of its own line (number n: session n, the answer's tokens named
 * by n), at every batch boundary, under max_requests that ends a batch
 * early, and before an error further on, which comes only after every
 * good line before it, and not at all past max_requests. */
START_TEST(mooncake_requests_read_in_batches_are_each_their_line)
{
	enum { LINES = 133, BAD = 70 }; /* more than two batches of 64 */
	char *text = malloc(LINES * 200), *bad = malloc(LINES * 200);
	size_t len = 0, blen = 0;
	uint32_t in[LINES], out[LINES];
	for (uint32_t i = 0; i < LINES; i++) {
		in[i] = 1 + (i * 337) % 1500;
		out[i] = 1 + i % 37;
		char line[200];
		int k = snprintf(line, sizeof line,
				 "{\"timestamp\": %u, \"input_length\": %u, \"output_length\": %u, "
				 "\"hash_ids\": [5",
				 10 * i, in[i], out[i]);
		for (uint32_t j = 1; j < (in[i] + 511) / 512; j++)
			k += snprintf(line + k, sizeof line - (size_t)k, ", %u", 100 * i + j);
		snprintf(line + k, sizeof line - (size_t)k, "]}\n");
		len += (size_t)sprintf(text + len, "%s", line);
		blen += (size_t)sprintf(bad + blen, "%s", i + 1 == BAD ? "{\"timestamp\": 1}\n" : line);
	}
	const char *p = write_tmp("mc_batches.jsonl", text);
	const struct wl_ops *ops;
	void *st = mooncake_wl(p, 0, &ops);
	static struct request all[LINES];
	struct request one, end;
	memset(all, 0, sizeof all);
	memset(&one, 0, sizeof one);
	memset(&end, 0, sizeof end);
	for (uint32_t i = 0; i < LINES; i++) {
		ck_assert_int_eq(ops->next(st, &all[i]), 1);
		struct wl_seg segs[4];
		uint32_t n = (in[i] + 511) / 512;
		for (uint32_t j = 0; j < n; j++) {
			segs[j].id = trace_seg_id(1, j ? 100 * i + j : 5);
			segs[j].len = in[i] - 512 * j < 512 ? in[i] - 512 * j : 512;
		}
		segs[n++] = (struct wl_seg){trace_seg_id(3, i + 1), out[i]};
		ck_assert_int_eq(wl_hash_blocks(&one, segs, n, 16), 0);
		ck_assert_uint_eq(all[i].session, i + 1);
		ck_assert_uint_eq(all[i].turn, 1);
		ck_assert_int_eq(all[i].last_turn, 1);
		ck_assert_int_eq(all[i].arrival_ns, 10000000LL * i);
		ck_assert_uint_eq(all[i].prompt_tokens, in[i]);
		ck_assert_uint_eq(all[i].output_tokens, out[i]);
		ck_assert_uint_eq(all[i].n_shared, in[i] / 16);
		ck_assert_uint_eq(all[i].n_hashes, one.n_hashes);
		for (uint32_t b = 0; b < one.n_hashes; b++)
			ck_assert_uint_eq(all[i].hashes[b], one.hashes[b]);
	}
	ck_assert_int_eq(ops->next(st, &end), 0);
	ck_assert_int_eq(ops->next(st, &end), 0);
	ops->destroy(st);
	static const int maxes[] = {1, 63, 64, 65, 128, 129, 133, 140};
	for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++) {
		st = mooncake_wl(p, maxes[m], &ops);
		uint32_t want = maxes[m] < LINES ? (uint32_t)maxes[m] : LINES;
		for (uint32_t i = 0; i < want; i++) {
			ck_assert_int_eq(ops->next(st, &one), 1);
			ck_assert_uint_eq(one.session, all[i].session);
			ck_assert_uint_eq(one.n_hashes, all[i].n_hashes);
			for (uint32_t b = 0; b < one.n_hashes; b++)
				ck_assert_uint_eq(one.hashes[b], all[i].hashes[b]);
		}
		ck_assert_int_eq(ops->next(st, &end), 0);
		ops->destroy(st);
	}
	p = write_tmp("mc_batches_bad.jsonl", bad);
	for (int max = 0; max <= BAD - 1; max += BAD - 1) {
		st = mooncake_wl(p, max, &ops);
		for (uint32_t i = 0; i < BAD - 1; i++) {
			ck_assert_int_eq(ops->next(st, &one), 1);
			ck_assert_uint_eq(one.session, all[i].session);
			ck_assert_uint_eq(one.n_hashes, all[i].n_hashes);
			if (one.n_hashes)
				ck_assert_uint_eq(one.hashes[one.n_hashes - 1],
						  all[i].hashes[one.n_hashes - 1]);
		}
		if (max) {
			ck_assert_int_eq(ops->next(st, &end), 0);
		} else {
			ck_assert_int_eq(ops->next(st, &end), -1);
			ck_assert_ptr_nonnull(strstr(ops->error(st), "mc_batches_bad.jsonl:70: "));
		}
		ops->destroy(st);
	}
	for (uint32_t i = 0; i < LINES; i++)
		free(all[i].hashes);
	free(one.hashes);
	free(end.hashes);
	free(text);
	free(bad);
}
END_TEST

static uint32_t c_recomputed;

static void on_c(void *ctx, const struct request *r)
{
	(void)ctx;
	if (r->session == 4)
		c_recomputed = r->recomputed;
}

/* "Computed before" answered by a binary search only while every recorded
 * shared block's parent is recorded too. A trace that marks the same
 * blocks private in one request (A) and shared in another (B, which finds
 * them cached on A's node) breaks that: B records h3 without h1 and h2.
 * C, on the other node, must then find h0 and h3 computed before and h1,
 * h2, h4 not: 2 blocks recomputed, as the set says block by block (a
 * search that still trusted the order would stop at h1 and say 1). */
START_TEST(computed_before_survives_inconsistent_sharing)
{
	const char *trace = write_tmp(
	    "sharing.jsonl",
	    "{\"session\": 1, \"turn\": 1, \"arrival_s\": 0, \"last_turn\": true, \"prompt_tokens\": 50, "
	    "\"output_tokens\": 2, \"block_tokens\": 16, \"shared_blocks\": 1, \"blocks\": "
	    "[\"00000000000000a0\", \"00000000000000a1\", \"00000000000000a2\"]}\n"
	    "{\"session\": 2, \"turn\": 1, \"arrival_s\": 1, \"last_turn\": true, \"prompt_tokens\": 20, "
	    "\"output_tokens\": 2, \"block_tokens\": 16, \"shared_blocks\": 1, \"blocks\": "
	    "[\"00000000000000f0\"]}\n"
	    "{\"session\": 3, \"turn\": 1, \"arrival_s\": 2, \"last_turn\": true, \"prompt_tokens\": 66, "
	    "\"output_tokens\": 2, \"block_tokens\": 16, \"shared_blocks\": 4, \"blocks\": "
	    "[\"00000000000000a0\", \"00000000000000a1\", \"00000000000000a2\", \"00000000000000a3\"]}\n"
	    "{\"session\": 4, \"turn\": 1, \"arrival_s\": 3, \"last_turn\": true, \"prompt_tokens\": 82, "
	    "\"output_tokens\": 2, \"block_tokens\": 16, \"shared_blocks\": 5, \"blocks\": "
	    "[\"00000000000000a0\", \"00000000000000a1\", \"00000000000000a2\", \"00000000000000a3\", "
	    "\"00000000000000a4\"]}\n");
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"duration_s\": 100, \"cluster\": {\"nodes\": 2}, \"router\": {\"policy\": "
		 "\"round_robin\", \"params\": {}}, \"workload\": {\"kind\": \"trace\", \"format\": "
		 "\"kvsim\", \"path\": \"%s\"}}",
		 trace);
	for (int audit = 0; audit < 2; audit++) {
		struct scenario s;
		th_scenario(json, NULL, &s);
		struct sim_opts o = {.on_request = on_c, .audit = audit};
		struct met_summary m;
		char err[1024] = "";
		c_recomputed = 999;
		ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(m.completed, 4);
		ck_assert_uint_eq(c_recomputed, 32);
		met_summary_free(&m);
		cfg_scenario_free(&s);
	}
}
END_TEST

static char *dup_trace_text;

static void ov_collect(void *ctx, const struct request *r)
{
	uint64_t *d = ctx;
	*d = (*d ^ r->id) * 0x100000001b3ULL;
	*d = (*d ^ (uint64_t)r->finish_ns) * 0x100000001b3ULL;
	*d = (*d ^ (uint64_t)r->node) * 0x100000001b3ULL;
	*d = (*d ^ ((uint64_t)r->recomputed << 32 | r->fresh)) * 0x100000001b3ULL;
}

/* Two requests of one session at once (a trace may say so): kv_cost's
 * views inside decode spans are counted from the spans' plans until then,
 * and applied from then on; the results equal applying them throughout. */
START_TEST(overlapping_sessions_stop_counted_kv_views)
{
	size_t cap = 1 << 16, len = 0;
	dup_trace_text = malloc(cap);
	ck_assert_ptr_nonnull(dup_trace_text);
	for (int i = 0; i < 40; i++) {
		/* request 25 is session 7 again (request 6) while that one
		 * decodes, its prompt request 6's prompt and answer so far:
		 * what it counts computed before depends on how far request
		 * 6's blocks were recorded */
		int again = i == 25, session = again ? 7 : i + 1, blocks = again ? 15 : 16;
		len += (size_t)snprintf(dup_trace_text + len, cap - len,
					"{\"session\": %d, \"turn\": 1, \"arrival_s\": %.2f, "
					"\"last_turn\": true, \"prompt_tokens\": %d, \"output_tokens\": "
					"%d, \"block_tokens\": 16, \"shared_blocks\": 0, \"blocks\": [",
					session, 0.05 * i, again ? 200 : 70, again ? 50 : 200);
		for (int j = 0; j < blocks; j++)
			len += (size_t)snprintf(dup_trace_text + len, cap - len, "%s\"%016x\"",
						j ? ", " : "", 0x1000 * ((again ? 6 : i) + 1) + j + 1);
		len += (size_t)snprintf(dup_trace_text + len, cap - len, "]}\n");
	}
	const char *trace = write_tmp("overlap.jsonl", dup_trace_text);
	free(dup_trace_text);
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"duration_s\": 100, \"cluster\": {\"nodes\": 4}, \"router\": {\"policy\": "
		 "\"kv_cost\", \"params\": {\"load\": \"engine\"}}, \"workload\": {\"kind\": "
		 "\"trace\", \"format\": \"kvsim\", \"path\": \"%s\"}}",
		 trace);
	uint64_t digest[2], counted[2];
	for (int eager = 0; eager < 2; eager++) {
		struct scenario s;
		th_scenario(json, NULL, &s);
		digest[eager] = 0xcbf29ce484222325ULL;
		struct sim_opts o = {.on_request = ov_collect, .ctx = &digest[eager],
				     .eager_kv_views = eager};
		struct met_summary m;
		char err[1024] = "";
		ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(m.completed, 40);
		counted[eager] = m.kv_views_counted;
		met_summary_free(&m);
		cfg_scenario_free(&s);
	}
	ck_assert_uint_gt(counted[0], 0);
	ck_assert_uint_eq(counted[1], 0);
	ck_assert_uint_eq(digest[0], digest[1]);
}
END_TEST

/* Blocks one session holds back (node.c, deferred commits) met by other
 * sessions naming the same blocks as private (a trace may claim so), on
 * one node. B, with A's 10-block prompt and five more blocks, arrives with
 * A and is admitted after A's prefill: its lookup ends at the end of A's
 * open run (A holds nothing back yet; the run is shut, the lookup made
 * again). C, a second later, has A's prompt and the first ten blocks of
 * its answer while A decodes: its lookup ends at A's next open run, with
 * blocks held back after it (committed first; C then matches 17 blocks),
 * and C's commit of its last three meets the open run A has begun since
 * with two of them (A's are committed first, then C adopts them). Two
 * lookups and one commit wait for held-back blocks; against committing
 * each block when filled, the same requests, all audited. */
START_TEST(held_back_commits_meet_shared_private_blocks)
{
	char text[4096];
	size_t len = 0;
	static const struct {
		int session;
		double at;
		int prompt, output, blocks, from;
	} rq[] = {{1, 0.0, 160, 200, 22, 0}, {2, 0.0, 240, 50, 18, 0}, {3, 1.0, 320, 40, 22, 0}};
	for (int i = 0; i < 3; i++) {
		len += (size_t)snprintf(text + len, sizeof text - len,
					"{\"session\": %d, \"turn\": 1, \"arrival_s\": %.2f, "
					"\"last_turn\": true, \"prompt_tokens\": %d, \"output_tokens\": "
					"%d, \"block_tokens\": 16, \"shared_blocks\": 0, \"blocks\": [",
					rq[i].session, rq[i].at, rq[i].prompt, rq[i].output);
		for (int j = 0; j < rq[i].blocks; j++) {
			/* B's blocks past A's prompt, and C's past A's first
			 * twenty, are their own */
			int own = (i == 1 && j >= 10) || (i == 2 && j >= 20);
			len += (size_t)snprintf(text + len, sizeof text - len, "%s\"%016x\"",
						j ? ", " : "", (own ? 0x10000 * (i + 1) : 0x1000) + j + 1);
		}
		len += (size_t)snprintf(text + len, sizeof text - len, "]}\n");
	}
	const char *trace = write_tmp("held.jsonl", text);
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"duration_s\": 100, \"cluster\": {\"nodes\": 1, \"engine\": {\"version\": \"vllm-0.6\"}}, \"router\": {\"policy\": "
		 "\"round_robin\", \"params\": {}}, \"workload\": {\"kind\": \"trace\", "
		 "\"format\": \"kvsim\", \"path\": \"%s\"}}",
		 trace);
	uint64_t digest[2], lookups[2], commits[2];
	for (int eager = 0; eager < 2; eager++) {
		struct scenario s;
		th_scenario(json, NULL, &s);
		digest[eager] = 0xcbf29ce484222325ULL;
		struct sim_opts o = {.on_request = ov_collect, .ctx = &digest[eager], .audit = 1,
				     .eager_commits = eager};
		struct met_summary m;
		char err[1024] = "";
		ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(m.completed, 3);
		lookups[eager] = m.kv_lookups_held;
		commits[eager] = m.kv_commits_held;
		met_summary_free(&m);
		cfg_scenario_free(&s);
	}
	ck_assert_uint_eq(commits[0], 1);
	ck_assert_uint_eq(lookups[0], 2);
	ck_assert_uint_eq(commits[1] + lookups[1], 0);
	ck_assert_uint_eq(digest[0], digest[1]);
}
END_TEST

static struct request fold_b;

static void fold_collect(void *ctx, const struct request *r)
{
	(void)ctx;
	if (r->prompt_tokens == 200)
		fold_b = *r;
}

/* A session's second request arrives while its first one's prefill has
 * ended inside a decode span that opened with it (node.fold_ok) and that
 * nothing has applied yet. A (160-token prompt, 10 blocks, 200 output
 * tokens) runs alone on node 0 from t = 0, its prefill over in ~15 ms; B,
 * the same session at t = 50 ms, goes to node 1 (round robin) with A's 10
 * prompt blocks first: all computed before (A computed them), so 160
 * tokens recomputed and 40 fresh. Without prefix caching nothing else
 * (a migration decision) looks at node 0 first: A's span must be applied
 * when the second request of its session arrives (the session's frontier
 * moves at A's commits). The same with prefills never folded, and under
 * --audit. */
START_TEST(a_second_request_of_a_session_sees_a_folded_prefill)
{
	char text[2048];
	size_t len = 0;
	for (int k = 0; k < 2; k++) {
		int blocks = k ? 13 : 22;
		len += (size_t)snprintf(text + len, sizeof text - len,
					"{\"session\": 1, \"turn\": 1, \"arrival_s\": %s, "
					"\"last_turn\": true, \"prompt_tokens\": %d, "
					"\"output_tokens\": %d, \"block_tokens\": 16, "
					"\"shared_blocks\": 0, \"blocks\": [",
					k ? "0.05" : "0", k ? 200 : 160, k ? 10 : 200);
		for (int j = 0; j < blocks; j++)
			len += (size_t)snprintf(text + len, sizeof text - len, "%s\"%x\"",
						j ? ", " : "", k && j >= 10 ? 0x2000 + j : 0x1000 + j + 1);
		len += (size_t)snprintf(text + len, sizeof text - len, "]}\n");
	}
	const char *trace = write_tmp("fold.jsonl", text);
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"duration_s\": 100, \"cluster\": {\"nodes\": 2, \"engine\": {\"prefix_caching\": "
		 "false}}, \"router\": {\"policy\": "
		 "\"round_robin\", \"params\": {}}, \"workload\": "
		 "{\"kind\": \"trace\", \"format\": \"kvsim\", \"path\": \"%s\"}}",
		 trace);
	uint64_t events[3];
	for (int way = 0; way < 3; way++) {
		struct scenario s;
		th_scenario(json, NULL, &s);
		struct sim_opts o = {.on_request = fold_collect, .no_fold = way == 1,
				     .audit = way == 2};
		struct met_summary m;
		char err[1024] = "";
		memset(&fold_b, 0, sizeof fold_b);
		ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(m.completed, 2);
		ck_assert_int_eq(fold_b.node, 1);
		ck_assert_uint_eq(fold_b.recomputed, 160);
		ck_assert_uint_eq(fold_b.fresh, 40);
		events[way] = m.events;
		met_summary_free(&m);
		cfg_scenario_free(&s);
	}
	ck_assert_uint_lt(events[0], events[1]); /* A's prefill did open its span */
}
END_TEST

static struct request tie_b;
static uint64_t tie_digest;

static void tie_collect(void *ctx, const struct request *r)
{
	(void)ctx;
	if (r->session == 2)
		tie_b = *r;
	tie_digest = (tie_digest ^ r->id) * 0x100000001b3ULL;
	tie_digest = (tie_digest ^ (uint64_t)r->first_token_ns) * 0x100000001b3ULL;
	tie_digest = (tie_digest ^ (uint64_t)r->finish_ns) * 0x100000001b3ULL;
}

/* Runs json with one span setting, audited, recording through tie_collect. */
static void tie_run(const char *json, const char *span_set, struct met_summary *m)
{
	const char *sets[] = {span_set, NULL};
	struct scenario sc;
	th_scenario(json, sets, &sc);
	struct sim_opts o = {.on_request = tie_collect, .audit = 1};
	char err[1024] = "";
	int rc = sim_run(&sc, &o, m, err, sizeof err);
	cfg_scenario_free(&sc);
	ck_assert_msg(rc == 0, "%s", err);
}

/* Events at the same nanosecond: a node's step end comes before any other
 * event of that time, and step ends in node order, whether a step is one
 * iteration or a decode span's (an arrival inside a span counts the
 * iteration that ends as it arrives as ended). Before, events of a time
 * went in the order they were scheduled, which differs between the two,
 * and so did results.
 *
 * With the fixed cost model at 10 ms an iteration: A (16 + 3 tokens) runs
 * 0-10 ms (its prefill), 10-20 and 20-30; B arrives at 20 ms, as A's
 * second iteration ends, so it waits for A's third: prefill 30-40 ms,
 * TTFT 20 ms, 10 ms queued, in one event per iteration and in spans.
 * Then 300 requests in threes at 50 ms ticks on 4 nodes (so that steps,
 * span ends and arrivals coincide all the time): the same results either
 * way. */
START_TEST(simultaneous_step_ends_and_arrivals_order_alike)
{
	char *text = malloc(1 << 20);
	ck_assert_ptr_nonnull(text);
	size_t len = 0, cap = 1 << 20;
	len += (size_t)snprintf(text + len, cap - len,
				"{\"session\": 1, \"turn\": 1, \"arrival_s\": 0, \"last_turn\": true, "
				"\"prompt_tokens\": 16, \"output_tokens\": 3, \"block_tokens\": 16, "
				"\"shared_blocks\": 0, \"blocks\": [\"a1\"]}\n"
				"{\"session\": 2, \"turn\": 1, \"arrival_s\": 0.02, \"last_turn\": true, "
				"\"prompt_tokens\": 16, \"output_tokens\": 3, \"block_tokens\": 16, "
				"\"shared_blocks\": 0, \"blocks\": [\"b1\"]}\n");
	const char *one = write_tmp("tie_one.jsonl", text);
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"duration_s\": 100, \"cluster\": {\"nodes\": 1, \"cost_model\": {\"kind\": "
		 "\"fixed\", \"base_ms\": 10, \"per_token_ms\": 0}}, \"workload\": {\"kind\": "
		 "\"trace\", \"format\": \"kvsim\", \"path\": \"%s\"}}",
		 one);
	static const char *const spans[2] = {"cluster.engine.max_span_iterations=1",
					     "cluster.engine.max_span_iterations=256"};
	for (int k = 0; k < 2; k++) {
		struct met_summary m;
		memset(&tie_b, 0, sizeof tie_b);
		tie_run(json, spans[k], &m);
		ck_assert_uint_eq(m.completed, 2);
		ck_assert_int_eq(tie_b.first_token_ns - tie_b.arrival_ns, 20000000);
		ck_assert_int_eq(tie_b.sched_ns - tie_b.arrival_ns, 10000000);
		met_summary_free(&m);
	}
	/* many coincidences */
	len = 0;
	uint64_t x = 12345;
	static const int prompts[] = {48, 64, 100, 160, 200}, outs[] = {5, 9, 17, 30, 41};
	for (int i = 0; i < 300; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		int p = prompts[(x >> 33) % 5], out = outs[(x >> 45) % 5], nb = (p + out) / 16;
		len += (size_t)snprintf(text + len, cap - len,
					"{\"session\": %d, \"turn\": 1, \"arrival_s\": %.2f, "
					"\"last_turn\": true, \"prompt_tokens\": %d, \"output_tokens\": "
					"%d, \"block_tokens\": 16, \"shared_blocks\": 0, \"blocks\": [",
					i + 1, (i / 3) * 0.05, p, out);
		for (int j = 0; j < nb; j++)
			len += (size_t)snprintf(text + len, cap - len, "%s\"%x\"", j ? ", " : "",
						0x100000 * (i + 1) + j);
		len += (size_t)snprintf(text + len, cap - len, "]}\n");
	}
	const char *many = write_tmp("tie_many.jsonl", text);
	free(text);
	snprintf(json, sizeof json,
		 "{\"duration_s\": 1000, \"cluster\": {\"nodes\": 4, \"cost_model\": {\"kind\": "
		 "\"fixed\", \"base_ms\": 10, \"per_token_ms\": 0}}, \"router\": {\"policy\": "
		 "\"round_robin\", \"params\": {}}, \"workload\": {\"kind\": \"trace\", "
		 "\"format\": \"kvsim\", \"path\": \"%s\"}}",
		 many);
	uint64_t digest[2];
	for (int k = 0; k < 2; k++) {
		struct met_summary m;
		tie_digest = 0xcbf29ce484222325ULL;
		tie_run(json, spans[k], &m);
		ck_assert_uint_eq(m.completed, 300);
		digest[k] = tie_digest;
		met_summary_free(&m);
	}
	ck_assert_uint_eq(digest[0], digest[1]);
}
END_TEST

/* A trace replayed three times: each pass's computed-before blocks are
 * forgotten once the next pass has begun and the pass's last request has
 * ended, with the same results (and --audit's check of every answer
 * against the flat set of every block) as keeping them all. Mooncake:
 * each pass ends before the next begins. kvsim sessions whose later turns
 * come after the next pass began (their prompts repeat their earlier
 * turns, all shared blocks, recomputed where the turn runs elsewhere):
 * a pass is kept while its sessions go on. */
START_TEST(repeat_passes_forget_their_computed_blocks)
{
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	for (int i = 0; i < 30; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"{\"timestamp\": %d, \"input_length\": 1500, \"output_length\": 20, "
					"\"hash_ids\": [1, %d, %d]}\n",
					200 * i, 2 + i % 3, 10 + i % 7);
	char mc[256];
	snprintf(mc, sizeof mc, "%s", write_tmp("passes.jsonl", text));
	len = 0;
	for (int sess = 1; sess <= 8; sess++) {
		for (int t = 1; t <= 3; t++) {
			/* turn t: a prompt of 4t blocks (the turn before's prompt
			 * and answer, and three more), a one-block answer */
			len += (size_t)snprintf(text + len, cap - len, "{\"session\": %d, \"turn\": %d, ",
						sess, t);
			if (t == 1)
				len += (size_t)snprintf(text + len, cap - len, "\"arrival_s\": %.1f",
							0.2 * sess);
			else
				len += (size_t)snprintf(text + len, cap - len, "\"after_s\": 3");
			len += (size_t)snprintf(text + len, cap - len,
						", \"last_turn\": %s, \"prompt_tokens\": %d, "
						"\"output_tokens\": 16, \"block_tokens\": 16, "
						"\"shared_blocks\": %d, \"blocks\": [",
						t == 3 ? "true" : "false", 64 * t, 4 * t);
			for (int j = 0; j < 4 * t + 1; j++)
				len += (size_t)snprintf(text + len, cap - len, "%s\"%016x\"",
							j ? ", " : "", 0x1000 * sess + j + 1);
			len += (size_t)snprintf(text + len, cap - len, "]}\n");
		}
	}
	char kv[256];
	snprintf(kv, sizeof kv, "%s", write_tmp("passes_kvsim.jsonl", text));
	free(text);
	const char *paths[2] = {mc, kv}, *formats[2] = {"mooncake", "kvsim"};
	for (int f = 0; f < 2; f++) {
		char json[1024];
		snprintf(json, sizeof json,
			 "{\"duration_s\": 1000, \"cluster\": {\"nodes\": 3}, \"router\": {\"policy\": "
			 "\"round_robin\", \"params\": {}, \"migration\": \"recompute\"}, "
			 "\"workload\": {\"kind\": \"trace\", "
			 "\"format\": \"%s\", \"path\": \"%s\", \"repeat\": 3}}",
			 formats[f], paths[f]);
		/* forgetting, keeping, and forgetting under --audit (whose flat
		 * set keeps every block: a pass forgotten too early would move
		 * the record there, where the answers come out right) */
		uint64_t digest[3], forgotten[3], peak[3], done[3];
		for (int way = 0; way < 3; way++) {
			struct scenario s;
			th_scenario(json, NULL, &s);
			digest[way] = 0xcbf29ce484222325ULL;
			struct sim_opts o = {.on_request = ov_collect, .ctx = &digest[way],
					     .keep_epochs = way == 1, .audit = way == 2};
			struct met_summary m;
			char err[1024] = "";
			ck_assert_msg(sim_run(&s, &o, &m, err, sizeof err) == 0, "%s: %s", formats[f],
				      err);
			forgotten[way] = m.ever_epochs_forgotten;
			peak[way] = m.ever_blocks_peak;
			done[way] = m.completed;
			met_summary_free(&m);
			cfg_scenario_free(&s);
		}
		ck_assert_uint_eq(done[0], f ? 72 : 90);
		for (int way = 0; way < 3; way += 2) {
			ck_assert_uint_eq(done[way], done[1]);
			ck_assert_msg(digest[way] == digest[1],
				      "%s: forgetting passes changed the results (way %d)", formats[f],
				      way);
			ck_assert_uint_eq(forgotten[way], 2);
			ck_assert_uint_eq(peak[way], peak[0]);
		}
		ck_assert_uint_eq(forgotten[1], 0);
		/* the passes are alike and share nothing: at most one pass
		 * held at once (Mooncake), two (kvsim: a pass's sessions go on
		 * into the next), against all three kept */
		ck_assert_msg(peak[0] > 0 && peak[0] * 3 == peak[1] * (f ? 2 : 1),
			      "%s: %llu blocks held, %llu kept", formats[f],
			      (unsigned long long)peak[0], (unsigned long long)peak[1]);
	}
}
END_TEST

/* A trace workload over json (a workload object); NULL with err when create fails. */
static void *trace_wl(const char *json, const struct wl_ops **ops, char *err, size_t errlen)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	struct wl_env env = {16, 100000, 1, NULL, 1.0, NULL};
	void *st = wl_create(o, &env, ops, err, errlen);
	cJSON_Delete(o);
	return st;
}

/* Times the ns clock cannot hold: read from a trace, an error naming the
 * line; derived from valid input (time_scale, think times), later than any
 * horizon, never negative. Azure dates before 1970 are times like others. */
START_TEST(times_past_the_clock)
{
	const char *mc = "\"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n";
	const char *kv = "\"prompt_tokens\": 16, \"output_tokens\": 16, \"block_tokens\": 16, "
			 "\"blocks\": [\"1\", \"2\"]}\n";
	char buf[1024];
	snprintf(buf, sizeof buf, "{\"timestamp\": 1733140000000000, %s", mc);
	expect_bad(TRACE_MOONCAKE, buf, ":1: \"timestamp\": 1733140000000000 ms is out of range");
	snprintf(buf, sizeof buf, "{\"timestamp\": 0, %s{\"timestamp\": 1e300, %s", mc, mc);
	expect_bad(TRACE_MOONCAKE, buf, ":2: \"timestamp\": 1e+300 ms is out of range");
	snprintf(buf, sizeof buf, "{\"session\": 1, \"turn\": 1, \"arrival_s\": 1e300, %s", kv);
	expect_bad(TRACE_KVSIM, buf, ":1: \"arrival_s\": 1e+300 s is out of range");
	snprintf(buf, sizeof buf,
		 "{\"session\": 1, \"turn\": 1, \"arrival_s\": 0, %s"
		 "{\"session\": 1, \"turn\": 2, \"after_s\": 1e300, %s",
		 kv, kv);
	expect_bad(TRACE_KVSIM, buf, ":2: \"after_s\": 1e+300 s is out of range");
	expect_bad(TRACE_AZURE,
		   "TIMESTAMP,ContextTokens,GeneratedTokens\n1900-01-01 00:00:00,5,5\n"
		   "2199-01-01 00:00:00,5,5\n",
		   ":3: arrival 9435571200 s after the trace's first is out of range");

	const char *p = write_tmp("az1969.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
						"1969-12-31 23:59:59,5,5\n"
						"1970-01-01 00:00:01,6,5\n");
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	char err[512] = "";
	ck_assert_int_eq(trace_open(&tr, p, TRACE_AZURE, 0, err, sizeof err), 0);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 0);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 1);
	ck_assert_int_eq(rec.arrival_ns, 2000000000LL);
	trace_close(&tr);
	trace_rec_free(&rec);

	/* time_scale at its maximum: 10 s becomes 1e10 s, past any horizon */
	p = write_tmp("scaled.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
				      "\"hash_ids\": [1]}\n{\"timestamp\": 10000, \"input_length\": 10, "
				      "\"output_length\": 1, \"hash_ids\": [1]}\n");
	snprintf(buf, sizeof buf,
		 "{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": \"%s\", \"time_scale\": 1e9}",
		 p);
	const struct wl_ops *ops;
	void *st = trace_wl(buf, &ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r[2];
	memset(r, 0, sizeof r);
	ck_assert_int_eq(ops->next(st, &r[0]), 1);
	ck_assert_int_eq(ops->next(st, &r[1]), 1);
	ck_assert_int_eq(r[0].arrival_ns, 0);
	ck_assert_int_ge(r[1].arrival_ns, 1000000000000000000LL); /* > 1e9 s, duration_s's limit */
	ops->destroy(st);

	/* a think time of 1e15 s: the next turn comes after any horizon */
	st = trace_wl("{\"kind\": \"chat\", \"turns\": {\"dist\": \"constant\", \"value\": 3}, "
		      "\"think_time_s\": {\"dist\": \"constant\", \"value\": 1e15}}",
		      &ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	ck_assert_int_eq(ops->next(st, &r[0]), 1);
	ck_assert_int_eq(ops->follow_up(st, &r[0], 1, 5000000000LL, &r[1]), 1);
	ck_assert_int_ge(r[1].arrival_ns, 1000000000000000000LL);
	ops->destroy(st);
	free(r[0].hashes);
	free(r[1].hashes);
}
END_TEST

/* A kvsim later turn must follow its session's turn before it: one
 * without it, past the session's last turn or out of order is an error
 * (with skip_bad: a skipped line) in the reader, replay and stats alike. */
START_TEST(orphan_turns_are_errors)
{
	const char *kv = "\"prompt_tokens\": 16, \"output_tokens\": 16, \"block_tokens\": 16, "
			 "\"blocks\": [\"1\", \"2\"]}\n";
	char buf[1024];
	snprintf(buf, sizeof buf, "{\"session\": 4, \"turn\": 2, \"after_s\": 1, %s", kv);
	expect_bad(TRACE_KVSIM, buf, ":1: session 4 turn 2: no open turn 1 of the session");
	snprintf(buf, sizeof buf,
		 "{\"session\": 4, \"turn\": 1, \"arrival_s\": 0, \"last_turn\": true, %s"
		 "{\"session\": 4, \"turn\": 2, \"after_s\": 1, %s",
		 kv, kv);
	expect_bad(TRACE_KVSIM, buf, ":2: session 4 turn 2: no open turn 1");
	snprintf(buf, sizeof buf,
		 "{\"session\": 4, \"turn\": 1, \"arrival_s\": 0, %s"
		 "{\"session\": 4, \"turn\": 3, \"after_s\": 1, %s",
		 kv, kv);
	expect_bad(TRACE_KVSIM, buf, ":2: session 4 turn 3: expected turn 2 next");
	/* in order, two sessions interleaved, reads */
	snprintf(buf, sizeof buf,
		 "{\"session\": 4, \"turn\": 1, \"arrival_s\": 0, %s"
		 "{\"session\": 5, \"turn\": 1, \"arrival_s\": 1, %s"
		 "{\"session\": 4, \"turn\": 2, \"after_s\": 1, \"last_turn\": true, %s"
		 "{\"session\": 5, \"turn\": 2, \"after_s\": 1, %s",
		 kv, kv, kv, kv);
	const char *p = write_tmp("turns.jsonl", buf);
	struct trace_stats ts;
	char err[512] = "";
	ck_assert_msg(tstats_run(p, TRACE_KVSIM, 0, NULL, 0, &ts, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(ts.requests, 4);
}
END_TEST

/* An empty trace, a header alone, or one whose every line was skipped is
 * an error when replayed, as in `trace stats`. */
START_TEST(empty_replays_are_errors)
{
	static const struct {
		const char *format, *text, *extra, *fragment;
	} cases[] = {
	    {"mooncake", "", "", "no requests in the trace (empty file?)"},
	    {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n", "",
	     "no requests in the trace (empty file?)"},
	    {"mooncake", "junk\n\njunk\n", ", \"skip_bad\": true",
	     "no requests in the trace: all 2 lines were skipped; the first: "
	     "/tmp/kvsim_check_empty.txt:1: not a JSON object"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *p = write_tmp("empty.txt", cases[i].text);
		char json[512], err[1024] = "";
		snprintf(json, sizeof json, "{\"kind\": \"trace\", \"format\": \"%s\", \"path\": \"%s\"%s}",
			 cases[i].format, p, cases[i].extra);
		const struct wl_ops *ops;
		void *st = trace_wl(json, &ops, err, sizeof err);
		ck_assert_msg(st != NULL, "%s", err);
		struct request r;
		memset(&r, 0, sizeof r);
		ck_assert_int_eq(ops->next(st, &r), -1);
		const char *why = ops->error(st);
		ck_assert_ptr_nonnull(why);
		ck_assert_msg(strstr(why, cases[i].fragment) != NULL, "case %zu: %s", i, why);
		ops->destroy(st);
		free(r.hashes);
	}
	/* max_requests at its largest replays the trace */
	const char *p = write_tmp("one.jsonl", "{\"timestamp\": 0, \"input_length\": 10, "
					       "\"output_length\": 1, \"hash_ids\": [1]}\n");
	char json[512], err[512] = "";
	snprintf(json, sizeof json,
		 "{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": \"%s\", "
		 "\"max_requests\": 9007199254740992}",
		 p);
	const struct wl_ops *ops;
	void *st = trace_wl(json, &ops, err, sizeof err);
	ck_assert_msg(st != NULL, "%s", err);
	struct request r;
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(ops->next(st, &r), 1);
	ck_assert_int_eq(ops->next(st, &r), 0);
	ops->destroy(st);
	free(r.hashes);
}
END_TEST

/* skip_bad: the lines skipped, over every repeat pass, and the first one's
 * error reach the run's summary and summary.json. */
START_TEST(skipped_lines_reach_the_summary)
{
	const char *p = write_tmp("skips.jsonl",
				  "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
				  "\"hash_ids\": [1]}\nnot json\n{\"timestamp\": 100, \"input_length\": 10, "
				  "\"output_length\": 1, \"hash_ids\": [1]}\n");
	char set[512];
	snprintf(set, sizeof set,
		 "workload={\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": \"%s\", "
		 "\"skip_bad\": true, \"repeat\": 3}",
		 p);
	const char *sets[] = {"duration_s=60", "cluster.nodes=2", set, NULL};
	struct scenario sc;
	th_scenario("{}", sets, &sc);
	struct sim_opts o = {.out_dir = "/tmp/kvsim_check_skips"};
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&sc, &o, &m, err, sizeof err);
	cfg_scenario_free(&sc);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(m.arrived, 6);
	ck_assert_uint_eq(m.skipped_lines, 3);
	ck_assert_str_eq(m.skipped_first,
			 "/tmp/kvsim_check_skips.jsonl:2: not a JSON object (truncated line?)");
	cJSON *j = NULL;
	ck_assert_int_eq(cfg_read_json("/tmp/kvsim_check_skips/summary.json", &j, err, sizeof err), 0);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(j, "requests"), "skipped_lines");
	ck_assert(cJSON_IsNumber(n) && n->valuedouble == 3);
	cJSON_Delete(j);
	met_summary_free(&m);
}
END_TEST

Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mooncake_reader_exact);
	tcase_add_test(tc, mooncake_fast_path_agrees_with_the_general_one);
	tcase_add_test(tc, azure_reader_exact);
	tcase_add_test(tc, bad_lines_name_file_and_line);
	tcase_add_test(tc, empty_trace_is_a_clear_error);
	tcase_add_test(tc, mooncake_conversation_matches_the_paper);
	tcase_add_test(tc, stats_by_hand);
	tcase_add_test(tc, gen_then_replay_is_the_same_run);
	tcase_add_test(tc, mooncake_blocks_map_onto_pages);
	tcase_add_test(tc, repeat_replays_time_shifted_copies);
	tcase_add_test(tc, mooncake_requests_read_in_batches_are_each_their_line);
	tcase_add_test(tc, computed_before_survives_inconsistent_sharing);
	tcase_add_test(tc, overlapping_sessions_stop_counted_kv_views);
	tcase_add_test(tc, held_back_commits_meet_shared_private_blocks);
	tcase_add_test(tc, a_second_request_of_a_session_sees_a_folded_prefill);
	tcase_add_test(tc, simultaneous_step_ends_and_arrivals_order_alike);
	tcase_add_test(tc, repeat_passes_forget_their_computed_blocks);
	tcase_add_test(tc, times_past_the_clock);
	tcase_add_test(tc, orphan_turns_are_errors);
	tcase_add_test(tc, empty_replays_are_errors);
	tcase_add_test(tc, skipped_lines_reach_the_summary);
	suite_add_tcase(s, tc);
	return s;
}
