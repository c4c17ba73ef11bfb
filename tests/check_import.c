/* check_import: `kvsim trace import` (chat log CSV -> kvsim trace) and the one-request-sessions warning. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "config/config.h"
#include "results/metrics.h"
#include "sim/sim.h"
#include "workloads/trace.h"
#include "workloads/traceimport.h"
#include "workloads/tracestats.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static const char *write_csv(const char *name, const char *text)
{
	static char path[256];
	snprintf(path, sizeof path, "/tmp/kvsim_check_import_%s", name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* One record read back, checked against what it must be. */
static void expect_rec(struct trace_reader *tr, struct trace_rec *rec, uint64_t session,
		       uint32_t turn, int last, int64_t arrival_ns, int64_t after_ns, uint32_t in,
		       uint32_t out, const uint64_t *ids, uint32_t n)
{
	char err[512];
	ck_assert_int_eq(trace_next(tr, rec, err, sizeof err), 1);
	ck_assert_uint_eq(rec->session, session);
	ck_assert_uint_eq(rec->turn, turn);
	ck_assert_int_eq(rec->last_turn, last);
	ck_assert_int_eq(rec->arrival_ns, arrival_ns);
	ck_assert_int_eq(rec->after_ns, after_ns);
	ck_assert_uint_eq(rec->input, in);
	ck_assert_uint_eq(rec->output, out);
	ck_assert_uint_eq(rec->block_tokens, 16);
	ck_assert_uint_eq(rec->shared_blocks, 0);
	ck_assert_uint_eq(rec->n_ids, n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_msg(rec->ids[i] == ids[i], "session %llu turn %u block %u: id %llu, expected %llu",
			      (unsigned long long)session, turn, i, (unsigned long long)rec->ids[i],
			      (unsigned long long)ids[i]);
}

/* 16-token blocks. Rows out of order, columns in another order, an extra
 * column. u1 starts first (1.5 s) so it is session 1; u2 (5 s) session 2.
 * u1 turn 1: 100 + 20 = 120 tokens, floor(120 / 16) = 7 blocks, ids 1-7.
 * u1 turn 2: prompt 150 >= 120, so it starts with all 7; 150 + 30 = 180
 * tokens, 11 blocks: 1-7 then fresh 8-11. u2 turn 1: 40 + 10 = 50 tokens,
 * 3 blocks, 12-14. u2 turn 2: prompt 70 (4 whole blocks) holds turn 1's 3;
 * 75 tokens, 4 blocks: 12-14, 15. after_s: 3.0 - 1.5 and 9.0 - 5.0. */
START_TEST(turns_share_their_history_block_by_block)
{
	const char *in = write_csv("chat.csv", "session_id,turn,timestamp_s,prompt_tokens,output_tokens,"
					       "model\n"
					       "u2,1,5.0,40,10,m\n"
					       "u1,2,3.0,150,30,m\n"
					       "\n"
					       "u1,1,1.5,100,20,m\n"
					       "u2,2,9.0,70,5,m\n");
	const char *out = "/tmp/kvsim_check_import_chat.jsonl";
	struct timport_result r;
	char err[1024] = "";
	ck_assert_msg(timport_run(in, out, 0, &r, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(r.block_tokens, 16); /* 0: the cluster's default */
	ck_assert_uint_eq(r.sessions, 2);
	ck_assert_uint_eq(r.requests, 4);
	ck_assert_uint_eq(r.max_turns, 2);
	ck_assert_uint_eq(r.blocks, 7 + 11 + 3 + 4);
	ck_assert_uint_eq(r.fresh_blocks, 15);
	ck_assert_uint_eq(r.prompt_blocks, 6 + 9 + 2 + 4); /* floor(prompt / 16) */
	ck_assert_uint_eq(r.shared_blocks, 7 + 3);
	ck_assert_uint_eq(r.gaps, 0);
	ck_assert_uint_eq(r.shrunk, 0);
	ck_assert_str_eq(r.extra_columns, "model");
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	ck_assert_int_eq(trace_open(&tr, out, TRACE_KVSIM, 0, err, sizeof err), 0);
	const uint64_t a1[] = {1, 2, 3, 4, 5, 6, 7}, a2[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	const uint64_t b1[] = {12, 13, 14}, b2[] = {12, 13, 14, 15};
	expect_rec(&tr, &rec, 1, 1, 0, 0, 0, 100, 20, a1, 7);
	expect_rec(&tr, &rec, 1, 2, 1, -1, 1500000000, 150, 30, a2, 11);
	expect_rec(&tr, &rec, 2, 1, 0, 3500000000, 0, 40, 10, b1, 3);
	expect_rec(&tr, &rec, 2, 2, 1, -1, 4000000000, 70, 5, b2, 4);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 0);
	trace_close(&tr);
	trace_rec_free(&rec);

	/* trace stats agrees: the answers' blocks are cached too, so a turn
	 * hits all it shares (10 of the 21 prompt blocks), and the distinct
	 * blocks are the 15 ids (prompt blocks alone would give 6 + 3 + 2 + 2
	 * = 13 and a hit of 6 + 2 = 8). */
	struct trace_stats st;
	ck_assert_msg(tstats_run(out, TRACE_KVSIM, 0, NULL, 0, &st, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(st.requests, 4);
	ck_assert_uint_eq(st.distinct_blocks, 15);
	ck_assert_uint_eq(st.total_blocks, 21);
	ck_assert_double_eq_tol(st.ideal_blocks, 10.0 / 21.0, 1e-12);

	/* Replayed, all four complete; session_affinity meets sessions of two
	 * requests, so no warning. */
	char set[512];
	snprintf(set, sizeof set, "workload={\"kind\": \"trace\", \"format\": \"kvsim\", \"path\": \"%s\"}",
		 out);
	const char *sets[] = {"duration_s=600", "cluster.nodes=2", "router.policy=\"session_affinity\"",
			      set, NULL};
	struct scenario sc;
	th_scenario("{}", sets, &sc);
	struct sim_opts o = {.audit = 1};
	struct met_summary m;
	ck_assert_msg(sim_run(&sc, &o, &m, err, sizeof err) == 0, "%s", err);
	cfg_scenario_free(&sc);
	ck_assert_uint_eq(m.completed, 4);
	ck_assert_str_eq(m.warning, "");
	met_summary_free(&m);
}
END_TEST

/* Turn 3 follows turn 1 (a gap) with a prompt of 50 tokens, less than turn
 * 1's 100 + 60: only its 3 whole prompt blocks (floor(50 / 16)) are turn
 * 1's (ids 1-3 of 1-10); 50 + 14 = 64 tokens, 4 blocks: 1, 2, 3, 13. Turns
 * counted from 0 (t's 0 and 1) are no gap; t's turn 0 (32 + 8 = 40 tokens)
 * has 2 blocks, 11 and 12, both whole in turn 1's prompt of 40 (41 tokens:
 * 2 blocks, both shared). */
START_TEST(shrunk_history_shares_only_whole_prompt_blocks)
{
	const char *in = write_csv("shrunk.csv", "timestamp_s,session_id,turn,prompt_tokens,output_tokens\n"
						 "0,s,1,100,60\n"
						 "0,t,0,32,8\n"
						 "1,t,1,40,1\n"
						 "7,s,3,50,14\n");
	const char *out = "/tmp/kvsim_check_import_shrunk.jsonl";
	struct timport_result r;
	char err[1024] = "";
	ck_assert_msg(timport_run(in, out, 16, &r, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(r.gaps, 1);
	ck_assert_uint_eq(r.gap_line, 5);
	ck_assert_uint_eq(r.shrunk, 1);
	ck_assert_uint_eq(r.shrunk_line, 5);
	ck_assert_str_eq(r.extra_columns, "");
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	ck_assert_int_eq(trace_open(&tr, out, TRACE_KVSIM, 0, err, sizeof err), 0);
	const uint64_t s1[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, s2[] = {1, 2, 3, 13};
	const uint64_t t1[] = {11, 12}, t2[] = {11, 12};
	/* equal times: session 1 (s, line 2) before session 2 (t, line 3) */
	expect_rec(&tr, &rec, 1, 1, 0, 0, 0, 100, 60, s1, 10);
	expect_rec(&tr, &rec, 2, 1, 0, 0, 0, 32, 8, t1, 2);
	expect_rec(&tr, &rec, 2, 2, 1, -1, 1000000000, 40, 1, t2, 2);
	expect_rec(&tr, &rec, 1, 2, 1, -1, 7000000000, 50, 14, s2, 4);
	ck_assert_int_eq(trace_next(&tr, &rec, err, sizeof err), 0);
	trace_close(&tr);
	trace_rec_free(&rec);
}
END_TEST

/* Each bad log: the message, FILE:LINE first, and no output file. */
START_TEST(bad_logs_name_file_and_line)
{
	static const struct {
		const char *csv, *err;
	} cases[] = {
	    {"timestamp_s,session_id,turn,prompt_tokens\n0,a,1,10\n",
	     ":1: missing column \"output_tokens\" (the header must name timestamp_s, session_id, "
	     "turn, prompt_tokens and output_tokens, in any order)"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1,10,5\nnoon,a,2,20,5\n",
	     ":3: timestamp_s \"noon\": expected a number of seconds"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1,-5,5\n",
	     ":2: prompt_tokens \"-5\": expected a count of tokens, got a negative number (1 to 1e8)"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1,10,0\n",
	     ":2: output_tokens \"0\": expected at least 1 (1 to 1e8)"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1.5,10,5\n",
	     ":2: turn \"1.5\": expected an integer (0 to 1e9)"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1,10,5\n0,b,1,10,5\n"
	     "2,a,1,30,5\n",
	     ":4: session \"a\" turn 1 appears twice (line 2 too)"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n5,a,1,10,5\n4,a,2,30,5\n",
	     ":3: session \"a\" turn 2 at 4 s comes before its turn 1 (line 2) at 5 s"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,a,1\n",
	     ":2: 3 fields; the header has 5 columns"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n0,,1,10,5\n",
	     ":2: session_id is empty"},
	    {"timestamp_s,session_id,turn,turn,prompt_tokens,output_tokens\n",
	     ":1: column \"turn\" appears twice in the header"},
	    {"timestamp_s,session_id,turn,prompt_tokens,output_tokens\n\n",
	     ": no rows after the header (empty file?)"},
	};
	const char *out = "/tmp/kvsim_check_import_bad.jsonl";
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *in = write_csv("bad.csv", cases[i].csv);
		unlink(out);
		struct timport_result r;
		char err[1024] = "", want[1024];
		ck_assert_int_eq(timport_run(in, out, 16, &r, err, sizeof err), -1);
		snprintf(want, sizeof want, "%s%s", in, cases[i].err);
		ck_assert_str_eq(err, want);
		ck_assert_msg(access(out, F_OK) != 0, "case %zu wrote %s", i, out);
	}
}
END_TEST

/* A Mooncake trace makes every request its own session: session_affinity
 * and consistent_hash (key session) say so in the summary and in
 * summary.json's warnings; prefix_affinity and consistent_hash keyed on
 * the prefix do not, and their summary.json has no warnings key. */
START_TEST(session_keyed_policies_warn_on_one_request_sessions)
{
	const char *trace =
	    write_csv("mc.jsonl", "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 5, "
				  "\"hash_ids\": [7, 8]}\n"
				  "{\"timestamp\": 250, \"input_length\": 512, \"output_length\": 9, "
				  "\"hash_ids\": [7]}\n");
	static const struct {
		const char *policy, *params, *says;
	} cases[] = {
	    {"session_affinity", "{}", "so it routed as least_loaded would"},
	    {"consistent_hash", "{}", "so it routed by a hash of each request's own session"},
	    {"consistent_hash", "{\"key\": \"prefix\"}", NULL},
	    {"prefix_affinity", "{}", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char wl[512], pol[64], par[128];
		snprintf(wl, sizeof wl, "workload={\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": "
					"\"%s\"}",
			 trace);
		snprintf(pol, sizeof pol, "router.policy=\"%s\"", cases[i].policy);
		snprintf(par, sizeof par, "router.params=%s", cases[i].params);
		const char *sets[] = {"duration_s=60", "cluster.nodes=2", pol, par, wl, NULL};
		struct scenario sc;
		th_scenario("{}", sets, &sc);
		struct sim_opts o = {.out_dir = "/tmp/kvsim_check_import_warn"};
		struct met_summary m;
		char err[1024] = "";
		ck_assert_msg(sim_run(&sc, &o, &m, err, sizeof err) == 0, "%s", err);
		cfg_scenario_free(&sc);
		ck_assert_uint_eq(m.completed, 2);
		cJSON *j = NULL;
		ck_assert_int_eq(cfg_read_json("/tmp/kvsim_check_import_warn/summary.json", &j, err,
					       sizeof err),
				 0);
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "warnings");
		if (cases[i].says) {
			ck_assert_msg(strstr(m.warning, cases[i].says), "%s: %s", cases[i].policy,
				      m.warning);
			ck_assert(strstr(m.warning, "every session of this trace had one request"));
			ck_assert(cJSON_IsArray(w) && cJSON_GetArraySize(w) == 1);
			ck_assert_str_eq(cJSON_GetArrayItem(w, 0)->valuestring, m.warning);
		} else {
			ck_assert_str_eq(m.warning, "");
			ck_assert_ptr_null(w);
		}
		cJSON_Delete(j);
		met_summary_free(&m);
	}
}
END_TEST

Suite *import_suite(void)
{
	Suite *s = suite_create("import");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, turns_share_their_history_block_by_block);
	tcase_add_test(tc, shrunk_history_shares_only_whole_prompt_blocks);
	tcase_add_test(tc, bad_logs_name_file_and_line);
	tcase_add_test(tc, session_keyed_policies_warn_on_one_request_sessions);
	suite_add_tcase(s, tc);
	return s;
}
