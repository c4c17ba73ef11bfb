/* check_sweep: sweep points, their order and their seeds. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metric_table.h"
#include "experiments/capacity.h"
#include "experiments/plan_pools.h"
#include "experiments/plan_rank.h"
#include "experiments/sweep.h"
#include "tests/helpers.h"
#include "tests/suites.h"

#define DIR "/tmp/kvsim_check_sweep"

START_TEST(points_and_seeds)
{
	struct swp a, b;
	char err[256], ca[512], cb[512];
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ck_assert_int_eq(swp_add_axis(&a, "cluster.nodes=2,4,8", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&a, "workload.sessions_per_s=1,2", err, sizeof err), 0);
	ck_assert_int_eq(a.n_points, 6);
	/* The last axis changes fastest. */
	swp_point_canon(&a, 0, ca, sizeof ca);
	ck_assert_str_eq(ca, "cluster.nodes=2;workload.sessions_per_s=1");
	swp_point_canon(&a, 3, ca, sizeof ca);
	ck_assert_str_eq(ca, "cluster.nodes=4;workload.sessions_per_s=2");
	/* Every point runs on the scenario's seed (common random numbers)... */
	a.seed = 7;
	ck_assert_int_eq(swp_add_axis(&b, "cluster.nodes=4", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&b, "workload.sessions_per_s=2", err, sizeof err), 0);
	swp_point_canon(&b, 0, cb, sizeof cb);
	ck_assert_str_eq(ca, cb);
	for (long i = 0; i < a.n_points; i++)
		ck_assert_uint_eq(swp_point_seed(&a, i), 7);
	/* ...unless the sweep varies the seed: then each point runs its own. */
	struct swp c;
	memset(&c, 0, sizeof c);
	c.seed = 7;
	ck_assert_int_eq(swp_add_axis(&c, "x=0,1", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&c, "seed=3,5,11", err, sizeof err), 0);
	static const uint64_t want[] = {3, 5, 11, 3, 5, 11};
	for (long i = 0; i < c.n_points; i++)
		ck_assert_uint_eq(swp_point_seed(&c, i), want[i]);
	ck_assert_int_eq(swp_add_axis(&c, "x=5", err, sizeof err), -1); /* varied twice */
	ck_assert_int_eq(swp_add_axis(&c, "nothing", err, sizeof err), -1);
	swp_free(&a);
	swp_free(&b);
	swp_free(&c);
}
END_TEST

/* A JSON value given to --vary is one value: only top-level commas split. */
START_TEST(values_split_at_top_level_commas)
{
	struct swp a;
	char err[256];
	memset(&a, 0, sizeof a);
	ck_assert_int_eq(swp_add_axis(&a, "x=[1,2],[3,4]", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&a, "y={\"a\":1,\"b\":[2,3]}, \"c,]d\\\",e\" ,7", err,
				       sizeof err),
			 0);
	ck_assert_int_eq(a.ax[0].n, 2);
	ck_assert_str_eq(a.ax[0].values[0], "[1,2]");
	ck_assert_str_eq(a.ax[0].values[1], "[3,4]");
	ck_assert_int_eq(a.ax[1].n, 3);
	ck_assert_str_eq(a.ax[1].values[0], "{\"a\":1,\"b\":[2,3]}");
	ck_assert_str_eq(a.ax[1].values[1], "\"c,]d\\\",e\"");
	ck_assert_str_eq(a.ax[1].values[2], "7");
	ck_assert_int_eq(a.n_points, 6);
	ck_assert_int_eq(swp_add_axis(&a, "z=1,,2", err, sizeof err), -1);
	ck_assert_str_eq(err, "--vary z=1,,2: an empty value (expected PATH=v1,v2,...)");
	ck_assert_int_eq(swp_add_axis(&a, "z=1,", err, sizeof err), -1);
	ck_assert_int_eq(swp_add_axis(&a, "z=\"a,b", err, sizeof err), -1);
	ck_assert_str_eq(err, "--vary z=\"a,b: a string is not closed (expected PATH=v1,v2,...)");
	ck_assert_int_eq(a.n_axes, 2);
	swp_free(&a);
}
END_TEST

/* A summary.json for a point of the given seed, every sweep figure 1. */
static void write_summary(const char *path, double seed)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "seed", seed);
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(NULL, RES_LIST_SWEEP, &it));) {
		char key[128], *dot;
		cJSON *at = o;
		snprintf(key, sizeof key, "%s", m->path);
		char *k = key;
		while ((dot = strchr(k, '.'))) {
			*dot = 0;
			cJSON *next = cJSON_GetObjectItemCaseSensitive(at, k);
			at = next ? next : cJSON_AddObjectToObject(at, k);
			k = dot + 1;
		}
		cJSON_AddNumberToObject(at, k, 1);
	}
	char *text = cJSON_Print(o);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	free(text);
	cJSON_Delete(o);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Merges DIR; returns the failed count, checks none is missing. */
static long merged(void)
{
	long missing = -1, failed = -1;
	char err[512];
	FILE *devnull = fopen("/dev/null", "w");
	ck_assert_int_eq(swp_merge(DIR, devnull, &missing, &failed, err, sizeof err), 0);
	fclose(devnull);
	ck_assert_int_eq(missing, 0);
	return failed;
}

/* merge holds each point to the spec: a summary of another sweep (its seed,
 * its point.json) or without the figures a row needs is a failed point, not
 * a row; values with commas or quotes are CSV-quoted; a varied seed is a
 * column of its own. */
START_TEST(merge_takes_only_whole_points_of_this_sweep)
{
	struct swp s;
	char err[512], canon[256], path[256];
	memset(&s, 0, sizeof s);
	s.seed = 42;
	ck_assert_int_eq(swp_add_axis(&s, "name=\"a,b\",\"c\"", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&s, "seed=1", err, sizeof err), 0);
	ck_assert_int_eq(system("rm -rf " DIR), 0);
	ck_assert_int_eq(swp_write_spec(&s, DIR, err, sizeof err), 0);
	mkdir(DIR "/points", 0777);
	mkdir(DIR "/points/p000000", 0777);
	mkdir(DIR "/points/p000001", 0777);
	swp_point_canon(&s, 0, canon, sizeof canon);
	double seed0 = (double)swp_point_seed(&s, 0);
	write_summary(DIR "/points/p000000/summary.json", seed0);
	swp_point_canon(&s, 1, canon, sizeof canon);
	double seed1 = (double)swp_point_seed(&s, 1);
	write_text(DIR "/points/p000001/summary.json", "{\"arrived\": \"x\"}");
	ck_assert_int_eq(merged(), 1);
	char *csv = th_slurp(DIR "/sweep.csv"), head[64];
	snprintf(head, sizeof head, "name,vary.seed,point,seed,arrived,");
	ck_assert_msg(!strncmp(csv, head, strlen(head)), "%s", csv);
	snprintf(head, sizeof head, "\n\"\"\"a,b\"\"\",1,0,%.0f,1,", seed0);
	ck_assert_msg(strstr(csv, head) != NULL, "%s", csv);
	ck_assert_ptr_null(strstr(csv, "\n\"\"\"c\"\"\","));
	free(csv);

	/* Whole, and of this point: a row. */
	write_summary(DIR "/points/p000001/summary.json", seed1);
	ck_assert_int_eq(merged(), 0);
	/* A summary with a figure missing, or not a number, is hollow. */
	snprintf(path, sizeof path, "%s", DIR "/points/p000001/summary.json");
	write_text(path, "{\"seed\": 1, \"requests\": {\"arrived\": \"x\"}}");
	ck_assert_int_eq(merged(), 1);
	write_summary(path, seed1);
	/* point.json of other values: a result of another sweep. */
	write_text(DIR "/points/p000001/point.json",
		   "{\"point\": 1, \"values\": \"name=\\\"d\\\";seed=1\", \"seed\": 7}");
	ck_assert_int_eq(merged(), 1);
	unlink(DIR "/points/p000001/point.json");
	ck_assert_int_eq(merged(), 0);
	swp_free(&s);
	/* What the runs leave: their point.json. */
	write_text(DIR "/points/p000000/point.json",
		   "{\"point\": 0, \"values\": \"name=\\\"a,b\\\";seed=1\", \"seed\": 1}");
	write_text(DIR "/points/p000001/point.json",
		   "{\"point\": 1, \"values\": \"name=\\\"c\\\";seed=1\", \"seed\": 1}");
	ck_assert_int_eq(merged(), 0);

	/* The same folder re-emitted with other values: the old results are
	 * other points' (their point.json says so), not the new points'. */
	memset(&s, 0, sizeof s);
	s.seed = 42;
	ck_assert_int_eq(swp_add_axis(&s, "name=\"e\",\"f\"", err, sizeof err), 0);
	ck_assert_int_eq(swp_add_axis(&s, "seed=1", err, sizeof err), 0);
	ck_assert_int_eq(swp_write_spec(&s, DIR, err, sizeof err), 0);
	ck_assert_int_eq(merged(), 2);
	swp_free(&s);
}
END_TEST

/* (session, arrival) of the first turns in a run's requests.csv, sorted by
 * session, one "session,arrival_s" line each; caller frees. */
static char *first_turns(const char *csv_path)
{
	char *csv = th_slurp(csv_path);
	size_t cap = strlen(csv) + 1, n = 0, used = 0;
	struct row {
		unsigned long long session;
		char arrival[32];
	} *rows = calloc(cap / 8 + 1, sizeof *rows);
	ck_assert_ptr_nonnull(rows);
	for (char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		unsigned long long id, session;
		unsigned turn, node;
		char status[32], rest[32];
		/* id,session,turn,node,status,reason,arrival_s,... (reason empty) */
		if (sscanf(line + 1, "%llu,%llu,%u,%u,%31[^,],,%31[^,]", &id, &session, &turn, &node,
			   status, rest) == 6 &&
		    turn == 1) {
			rows[n].session = session;
			snprintf(rows[n].arrival, sizeof rows[n].arrival, "%s", rest);
			n++;
		}
	}
	for (size_t i = 1; i < n; i++) /* insertion sort: a few hundred rows */
		for (size_t j = i; j > 0 && rows[j - 1].session > rows[j].session; j--) {
			struct row t = rows[j];
			rows[j] = rows[j - 1];
			rows[j - 1] = t;
		}
	char *out = calloc(n * 56 + 1, 1);
	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < n; i++)
		used += (size_t)sprintf(out + used, "%llu,%s\n", rows[i].session, rows[i].arrival);
	ck_assert_uint_gt(n, 20);
	free(rows);
	free(csv);
	return out;
}

static double summary_number(const char *path, const char *a, const char *b)
{
	char *text = th_slurp(path);
	cJSON *o = cJSON_Parse(text);
	ck_assert_ptr_nonnull(o);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
	ck_assert(cJSON_IsNumber(v));
	double x = v->valuedouble;
	cJSON_Delete(o);
	free(text);
	return x;
}

/* A sweep over the GPU at light load runs every point on the scenario's
 * seed: the same sessions arrive at the same instants on both GPUs, and
 * the faster H200 is no worse than the H100 (with a seed per point, the
 * H200 drew other sessions and looked worse). */
START_TEST(points_share_the_scenario_seed)
{
	const char *scen = DIR "_gpu.json";
	ck_assert_int_eq(system("rm -rf " DIR "_gpu && mkdir -p " DIR "_gpu"), 0);
	write_text(scen, "{\"name\": \"gpu\", \"seed\": 5, \"duration_s\": 60,"
			 " \"cluster\": {\"nodes\": 2, \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\"},"
			 " \"router\": {\"policy\": \"least_loaded\"},"
			 " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 1000,"
			 " \"think_time_s\": {\"dist\": \"exponential\", \"mean\": 5}}}");
	struct swp s;
	char err[1024];
	memset(&s, 0, sizeof s);
	s.scenario = scen;
	s.seed = 5;
	ck_assert_int_eq(swp_add_axis(&s, "cluster.gpu=H100-SXM,H200", err, sizeof err), 0);
	ck_assert_int_eq(swp_write_spec(&s, DIR "_gpu", err, sizeof err), 0);
	for (long i = 0; i < s.n_points; i++)
		ck_assert_msg(swp_run_point(&s, i, DIR "_gpu", NULL, 0, err, sizeof err) == 0, "%s", err);
	char *h100 = first_turns(DIR "_gpu/points/p000000/requests.csv");
	char *h200 = first_turns(DIR "_gpu/points/p000001/requests.csv");
	ck_assert_str_eq(h100, h200);
	free(h100);
	free(h200);
	const char *sum0 = DIR "_gpu/points/p000000/summary.json";
	const char *sum1 = DIR "_gpu/points/p000001/summary.json";
	ck_assert(summary_number(sum1, "ttft_s", "p99") <= summary_number(sum0, "ttft_s", "p99"));
	ck_assert(summary_number(sum1, "tpot_s", "p99") <= summary_number(sum0, "tpot_s", "p99"));
	swp_free(&s);
}
END_TEST

/* Capacity: the highest load that meets, with every lower load meeting
 * too; a run that is not steady, loses over 0.1% or breaks an SLO fails. */
START_TEST(capacity_is_the_last_load_that_meets)
{
	struct cap_point p[4] = {
	    {.rate = 1, .ttft_p99_s = 0.1, .tpot_p99_s = 0.01, .completed = 1, .steady = 1},
	    {.rate = 2, .ttft_p99_s = 0.2, .tpot_p99_s = -1, .completed = 1, .steady = 1},
	    {.rate = 4, .ttft_p99_s = 0.4, .tpot_p99_s = 0.02, .completed = 1, .steady = 1},
	    {.rate = 8, .ttft_p99_s = 0.3, .tpot_p99_s = 0.02, .completed = 1, .steady = 1},
	};
	ck_assert_int_eq(cap_capacity(p, 4, 0.5, 0.05), 3);
	p[2].steady = 0; /* a failure ends the capacity, whatever follows */
	ck_assert_int_eq(cap_capacity(p, 4, 0.5, 0.05), 1);
	ck_assert(p[0].meets && p[1].meets && !p[2].meets && p[3].meets);
	p[2].steady = 1;
	p[2].lost_frac = 0.002;
	ck_assert_int_eq(cap_capacity(p, 4, 0.5, 0.05), 1);
	p[2].lost_frac = 0;
	ck_assert_int_eq(cap_capacity(p, 4, 0.35, 0), 1); /* TTFT 0.4 > 0.35 */
	ck_assert_int_eq(cap_capacity(p, 4, 0.05, 0), -1);
	double x[] = {3, 1, 2, 10}, lo, med, hi;
	cap_spread(x, 4, &lo, &med, &hi);
	ck_assert(lo == 1 && med == 2.5 && hi == 10);
	cap_spread(x, 3, &lo, &med, &hi);
	ck_assert(lo == 1 && med == 2 && hi == 3);
}
END_TEST

/* A probe's figures for the binding tests: one seed, its test's parts
 * from plan_fails. */
static struct fig probe_fig(const struct plan *p, double completed, double ttft, double tpot,
			    double lost, double arrived, int steady)
{
	struct fig f = {.ttft = ttft, .ttft_hi = ttft, .tpot = tpot, .tpot_hi = tpot, .lost = lost};
	f.share = f.share_hi = lost / arrived;
	f.unsteady = !steady;
	f.fails = plan_fails(p, completed, ttft, tpot, completed, lost, arrived, steady);
	f.pass = !f.fails;
	return f;
}

/* The binding SLO: of the parts of the probe's test that failed, the one
 * furthest past its limit (value / limit), TTFT before TPOT before the
 * shed share on a tie; no completed request first; steadiness only when
 * nothing else failed. */
START_TEST(binding_is_the_part_furthest_past_its_limit)
{
	struct plan p = {.slo_ttft = 1, .slo_tpot = 0.25};
	struct plan_bind b;
	/* TTFT only */
	struct fig f = probe_fig(&p, 100, 1.5, 0.1, 0, 1000, 1);
	ck_assert_int_eq(f.fails, PLAN_FAIL_TTFT);
	ck_assert_int_eq(plan_binding(&p, &f, &b), 1);
	ck_assert_str_eq(b.slo, "ttft_p99");
	ck_assert(b.value == 1.5 && b.limit == 1 && b.ratio == 1.5 && b.also == 0);
	/* both: TPOT 0.375 / 0.25 = 1.5 > TTFT 1.2 / 1 */
	f = probe_fig(&p, 100, 1.2, 0.375, 0, 1000, 1);
	ck_assert_int_eq(f.fails, PLAN_FAIL_TTFT | PLAN_FAIL_TPOT);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "tpot_p99");
	ck_assert_int_eq(b.also, PLAN_FAIL_TTFT);
	/* a tie (1.5 and 1.5): TTFT, the first in order */
	f = probe_fig(&p, 100, 1.5, 0.375, 0, 1000, 1);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "ttft_p99");
	/* 5 of 1,000 shed: 0.005 / 0.001 = 5 beats both latencies */
	f = probe_fig(&p, 995, 1.5, 0.375, 5, 1000, 0);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "shed_or_failed");
	ck_assert(b.value == 0.005 && b.limit == PLAN_MAX_LOST);
	ck_assert_int_eq(b.also, PLAN_FAIL_TTFT | PLAN_FAIL_TPOT | PLAN_FAIL_UNSTEADY);
	/* 1 in 1,000 is within the limit, 2 are not */
	ck_assert_int_eq(probe_fig(&p, 999, 0.5, 0.1, 1, 1000, 1).fails, 0);
	ck_assert_int_eq(probe_fig(&p, 998, 0.5, 0.1, 2, 1000, 1).fails, PLAN_FAIL_LOST);
	/* not steady alone binds; beside a latency it is among the others */
	f = probe_fig(&p, 100, 0.5, 0.1, 0, 1000, 0);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "steady");
	f = probe_fig(&p, 100, 0.5, 0.3, 0, 1000, 0);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "tpot_p99");
	ck_assert_int_eq(b.also, PLAN_FAIL_UNSTEADY);
	/* no completed request binds first, whatever else failed */
	f = probe_fig(&p, 0, 9, 9, 500, 1000, 0);
	plan_binding(&p, &f, &b);
	ck_assert_str_eq(b.slo, "completed");
	/* --search autoscale asks no steadiness; a TPOT of no request is no
	 * failure; a passing probe binds nothing */
	p.day = 1;
	ck_assert_int_eq(probe_fig(&p, 100, 0.5, 0.1, 0, 1000, 0).fails, 0);
	p.day = 0;
	ck_assert_int_eq(plan_fails(&p, 100, 0.5, 0.9, 0, 0, 1000, 1), 0);
	f = probe_fig(&p, 100, 0.5, 0.1, 0, 1000, 1);
	ck_assert_int_eq(plan_binding(&p, &f, &b), 0);
	ck_assert_ptr_null(b.slo);
}
END_TEST

/* The binding of a search is its failing probe nearest the answer: the
 * largest failing count (bind_dir -1), the smallest failing rate (+1);
 * and reads as one line. */
START_TEST(binding_of_a_search_and_its_text)
{
	struct plan p = {.slo_ttft = 1, .slo_tpot = 0.02, .bind_dir = -1};
	struct fig t = probe_fig(&p, 100, 3, 0.01, 0, 1000, 1), s = probe_fig(&p, 100, 0.5, 0.1, 0, 1000, 1);
	struct fig ok = probe_fig(&p, 100, 0.5, 0.01, 0, 1000, 1);
	plan_bind_note(&p, &t, 2, "cluster.nodes=2");
	plan_bind_note(&p, &s, 3, "cluster.nodes=3");
	plan_bind_note(&p, &t, 1, "cluster.nodes=1");
	plan_bind_note(&p, &ok, 4, "cluster.nodes=4");
	ck_assert_str_eq(p.bind.slo, "tpot_p99");
	ck_assert_str_eq(p.bind.at, "cluster.nodes=3");
	char buf[200];
	plan_bind_text(&p.bind, buf, sizeof buf);
	ck_assert_str_eq(buf, "TPOT p99 0.1 s > 0.02 s at cluster.nodes=3");
	memset(&p.bind, 0, sizeof p.bind);
	p.bind_dir = 1;
	plan_bind_note(&p, &s, 8, "rate=8");
	plan_bind_note(&p, &t, 6, "rate=6");
	plan_bind_note(&p, &s, 7, "rate=7");
	ck_assert_str_eq(p.bind.at, "rate=6");
	ck_assert_str_eq(p.bind.slo, "ttft_p99");
	struct fig both = probe_fig(&p, 100, 3, 0.1, 50, 1000, 0);
	plan_binding(&p, &both, &p.bind);
	snprintf(p.bind.at, sizeof p.bind.at, "rate=6");
	plan_bind_text(&p.bind, buf, sizeof buf);
	ck_assert_str_eq(buf, "shed+failed 5% > 0.1% of requests at rate=6 (also TTFT p99, TPOT p99, "
			      "not steady)");
	memset(&p.bind, 0, sizeof p.bind);
	snprintf(p.bind.none, sizeof p.bind.none, "--max 64 reached");
	plan_bind_text(&p.bind, buf, sizeof buf);
	ck_assert_str_eq(buf, "no SLO bound within the range (--max 64 reached)");
}
END_TEST

Suite *sweep_suite(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, points_and_seeds);
	tcase_add_test(tc, values_split_at_top_level_commas);
	tcase_add_test(tc, merge_takes_only_whole_points_of_this_sweep);
	tcase_add_test(tc, points_share_the_scenario_seed);
	tcase_add_test(tc, capacity_is_the_last_load_that_meets);
	tcase_add_test(tc, binding_is_the_part_furthest_past_its_limit);
	tcase_add_test(tc, binding_of_a_search_and_its_text);
	suite_add_tcase(s, tc);
	return s;
}
