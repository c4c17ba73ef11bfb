/* check_metric_table: one row of the metric table reaches every output. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "results/diff.h"
#include "results/metric_table.h"
#include "results/metrics.h"
#include "results/verdict.h"
#include "results/writer.h"
#include "config/config.h"
#include "sim/request.h"
#include "sim/sim.h"
#include "experiments/sweep.h"
#include "tests/helpers.h"
#include "tests/suites.h"

#define DIR "/tmp/kvsim_check_metric_table"

/* The built-in table plus one row: the router's decision time, a figure
 * of struct met_summary that no output has today. */
static struct res_metric rows[256];

static struct res_metrics with_extra_row(void)
{
	const struct res_metrics *b = res_metrics_builtin();
	ck_assert_uint_lt(b->n, sizeof rows / sizeof *rows);
	memcpy(rows, b->row, b->n * sizeof *rows);
	rows[b->n] = (struct res_metric){.name = "routing ms",
					 .path = "router.route_ns",
					 .better = RES_BETTER_LOWER,
					 .kind = RES_KIND_F64,
					 .offset = offsetof(struct met_summary, route_ns),
					 .decimals = 2,
					 .unit = 1e6,
					 .csv = "route_ns",
					 .use = RES_M_TABLE | RES_M_CSV | RES_M_DIFF | RES_M_SWEEP};
	return (struct res_metrics){rows, b->n + 1};
}

static void summary_of(struct met_summary *s)
{
	memset(s, 0, sizeof *s);
	snprintf(s->policy, sizeof s->policy, "rr");
	s->arrived = 7;
	s->route_ns = 123456789;
}

/* What f printed (f from open_memstream); caller frees. */
static char *printed(void (*print)(FILE *, const struct res_metrics *, const struct met_summary *),
		     const struct res_metrics *t, const struct met_summary *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	print(f, t, s);
	fclose(f);
	return text;
}

static void text_table(FILE *f, const struct res_metrics *t, const struct met_summary *s)
{
	res_print_table(f, t, s, 1, RES_STYLE_TEXT);
}
static void md_table(FILE *f, const struct res_metrics *t, const struct met_summary *s)
{
	res_print_table(f, t, s, 1, RES_STYLE_MD);
}
static void html_table(FILE *f, const struct res_metrics *t, const struct met_summary *s)
{
	res_print_table(f, t, s, 1, RES_STYLE_HTML);
}
static void diff_list(FILE *f, const struct res_metrics *t, const struct met_summary *s)
{
	(void)s;
	res_diff_list_with(f, t);
}

/* before + line == after, or (at != NULL) before with line inserted ahead
 * of its suffix at. */
static void assert_one_more_line(const char *before, const char *after, const char *at,
				 const char *line)
{
	char expect[16384];
	size_t head = at ? (size_t)(strstr(before, at) - before) : strlen(before);
	ck_assert_uint_lt(head + strlen(line) + strlen(before + head), sizeof expect);
	snprintf(expect, sizeof expect, "%.*s%s%s", (int)head, before, line, before + head);
	ck_assert_str_eq(after, expect);
}

START_TEST(one_row_reaches_every_output)
{
	struct res_metrics t = with_extra_row();
	struct met_summary s;
	summary_of(&s);
	char line[256];

	/* The comparison table: one more line, its label and 123456789 / 1e9 to
	 * two places; text, Markdown and HTML. */
	char *a = printed(text_table, NULL, &s), *b = printed(text_table, &t, &s);
	snprintf(line, sizeof line, "%-20s %17s\n", "routing ms", "123.46");
	assert_one_more_line(a, b, NULL, line);
	ck_assert_ptr_nonnull(strstr(a, "requests arrived                     7\n"));
	free(a);
	free(b);
	a = printed(md_table, NULL, &s);
	b = printed(md_table, &t, &s);
	assert_one_more_line(a, b, NULL, "| routing ms | 123.46 |\n");
	free(a);
	free(b);
	a = printed(html_table, NULL, &s);
	b = printed(html_table, &t, &s);
	assert_one_more_line(a, b, "</table>\n", "<tr><td>routing ms</td><td>123.46</td></tr>\n");
	free(a);
	free(b);

	/* comparison.csv: one more column. */
	char err[512];
	mkdir(DIR, 0777);
	ck_assert_int_eq(res_write_comparison_csv_with(DIR "/a.csv", NULL, &s, 1, err, sizeof err),
			 0);
	ck_assert_int_eq(res_write_comparison_csv_with(DIR "/b.csv", &t, &s, 1, err, sizeof err),
			 0);
	a = th_slurp(DIR "/a.csv");
	b = th_slurp(DIR "/b.csv");
	ck_assert_str_eq(a, "policy,arrived,completed,shed,failed,ttft_mean_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,"
			    "tpot_p99_s,e2e_p99_s,queue_p99_s,prefix_hit_ratio,recompute_ratio,"
			    "recompute_gpu_s,migrations,migrated_bytes,preemptions,requests_per_s,"
			    "output_tokens_per_s,slo_attainment,goodput_rps,gpu_hours,cost_usd,"
			    "j_per_output_token,energy_kwh,load_max_over_mean,"
			    "load_jain,tokens_input,tokens_cached,tokens_reloaded,tokens_migrated,"
			    "tokens_recomputed,tokens_fresh,tokens_preempt_recomputed\n"
			    "rr,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n");
	ck_assert_str_eq(b, "policy,arrived,completed,shed,failed,ttft_mean_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,"
			    "tpot_p99_s,e2e_p99_s,queue_p99_s,prefix_hit_ratio,recompute_ratio,"
			    "recompute_gpu_s,migrations,migrated_bytes,preemptions,requests_per_s,"
			    "output_tokens_per_s,slo_attainment,goodput_rps,gpu_hours,cost_usd,"
			    "j_per_output_token,energy_kwh,load_max_over_mean,"
			    "load_jain,tokens_input,tokens_cached,tokens_reloaded,tokens_migrated,"
			    "tokens_recomputed,tokens_fresh,tokens_preempt_recomputed,"
			    "route_ns\n"
			    "rr,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
			    "123456789\n");
	free(a);
	free(b);

	/* summary.json: the new object "router" at the end, the rest as before. */
	cJSON *ja = res_summary_json_with(&s, NULL), *jb = res_summary_json_with(&s, &t);
	a = cJSON_PrintUnformatted(ja);
	b = cJSON_PrintUnformatted(jb);
	char expect[16384];
	ck_assert_uint_lt(strlen(a) + 64, sizeof expect);
	snprintf(expect, sizeof expect, "%.*s,\"router\":{\"route_ns\":123456789}}",
		 (int)strlen(a) - 1, a);
	ck_assert_str_eq(b, expect);
	free(a);
	free(b);
	cJSON_Delete(ja);
	cJSON_Delete(jb);

	/* diff --list: the new path, before the rows placed last (perf.events). */
	a = printed(diff_list, NULL, &s);
	b = printed(diff_list, &t, &s);
	snprintf(line, sizeof line, "%-32s lower is better\n", "router.route_ns");
	assert_one_more_line(a, b, "perf.events", line);
	free(a);
	free(b);
}
END_TEST

/* What res_diff_with printed comparing base with new_ by t's rows, with
 * the counts; expects success. Caller frees. */
static char *diffed(const cJSON *base, const cJSON *new_, const struct diff_opts *o,
		    const struct res_metrics *t, struct diff_counts *c)
{
	char err[256] = "", *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(res_diff_with(base, new_, o, t, f, c, err, sizeof err) == 0, "%s", err);
	fclose(f);
	return text;
}

/* Diffing base (route_ns 100) with new_ by t prints the header line and
 * the new row's line, and counts as given. */
static void assert_diffed(const cJSON *base, const cJSON *new_, const struct diff_opts *o,
			  const struct res_metrics *t, double now, const char *change,
			  const char *status, size_t compared, size_t regressions,
			  size_t improvements)
{
	struct diff_counts c;
	char *text = diffed(base, new_, o, t, &c), expect[1024];
	snprintf(expect, sizeof expect,
		 "%-18s %-32s %14s %14s %9s  %s\n%-18s %-32s %14.6g %14.6g %9s  %s\n", "policy",
		 "metric", "base", "new", "change", "status", "rr", "router.route_ns", 100.0, now,
		 change, status);
	ck_assert_str_eq(text, expect);
	ck_assert_uint_eq(c.compared, compared);
	ck_assert_uint_eq(c.regressions, regressions);
	ck_assert_uint_eq(c.improvements, improvements);
	free(text);
}

static cJSON *summary_with_route_ns(int route_ns)
{
	char text[256];
	snprintf(text, sizeof text,
		 "{\"policy\": \"rr\", \"requests\": {\"completed\": 10},"
		 " \"router\": {\"route_ns\": %d}}",
		 route_ns);
	cJSON *j = cJSON_Parse(text);
	ck_assert_ptr_nonnull(j);
	return j;
}

/* Diff compares the new row by default, lower being better. */
START_TEST(one_row_is_diffed)
{
	struct res_metrics t = with_extra_row();
	cJSON *base = summary_with_route_ns(100), *worse = summary_with_route_ns(150),
	      *better = summary_with_route_ns(50);
	struct diff_opts o = {.tolerance_pct = 5.0};
	struct diff_counts c;

	/* The built-in table does not know it: only completed is compared. */
	char *text = diffed(base, worse, &o, NULL, &c);
	ck_assert_str_eq(text, "policy             metric                                     base  "
			       "          new    change  status\n");
	ck_assert_uint_eq(c.compared, 1);
	ck_assert_uint_eq(c.regressions, 0);
	free(text);

	assert_diffed(base, worse, &o, &t, 150, "+50.00%", "REGRESSION", 2, 1, 0);
	assert_diffed(base, better, &o, &t, 50, "-50.00%", "better", 2, 0, 1);

	/* Named with --metrics: unknown to the built-in table, known to t. */
	o.metrics = "router.route_ns";
	char err[256];
	size_t len;
	FILE *f = open_memstream(&text, &len);
	ck_assert_int_eq(res_diff_with(base, worse, &o, NULL, f, &c, err, sizeof err), -1);
	fclose(f);
	free(text);
	ck_assert_str_eq(err, "--metrics: unknown metric \"router.route_ns\" "
			      "('kvsim diff --list' shows them)");
	assert_diffed(base, worse, &o, &t, 150, "+50.00%", "REGRESSION", 1, 1, 0);
	cJSON_Delete(base);
	cJSON_Delete(worse);
	cJSON_Delete(better);
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* sweep.csv gets the new column, ahead of slo_attainment (placed last). */
START_TEST(one_row_is_a_sweep_column)
{
	struct res_metrics t = with_extra_row();
	char err[512];
	mkdir(DIR, 0777);
	mkdir(DIR "/sweep", 0777);
	mkdir(DIR "/sweep/points", 0777);
	mkdir(DIR "/sweep/points/p000000", 0777);
	write_file(DIR "/sweep/sweep.spec.json",
		   "{\"vary\": [{\"path\": \"x\", \"values\": [\"1\"]}], \"points\": [{\"point\": 0,"
		   " \"dir\": \"points/p000000\", \"values\": \"x=1\", \"seed\": 5}]}");
	/* Every figure a sweep row takes is there (merge holds a point to that). */
	write_file(DIR "/sweep/points/p000000/summary.json",
		   "{\"policy\": \"rr\", \"seed\": 5, \"requests\": {\"arrived\": 7, \"completed\": 0,"
		   " \"shed\": 0, \"failed\": 0}, \"ttft_s\": {\"p50\": 0, \"p99\": 0}, \"tpot_s\":"
		   " {\"p50\": 0, \"p99\": 0}, \"e2e_s\": {\"p99\": 0}, \"prefix_hit_ratio\": 0,"
		   " \"recompute_ratio\": 0, \"migration\": {\"count\": 0}, \"throughput\":"
		   " {\"requests_per_s\": 0, \"output_tokens_per_s\": 0}, \"router\":"
		   " {\"route_ns\": 123456789}, \"slo\": {\"attainment\": 0.5, \"goodput_rps\": 0},"
		   " \"gpu_hours\": 2, \"cost_usd\": 6, \"energy\": {\"j_per_output_token\": 0.25,"
		   " \"kwh\": 1.5}}");
	long missing, failed;
	ck_assert_int_eq(swp_merge_with(DIR "/sweep", NULL, stderr, &missing, &failed, err,
					sizeof err),
			 0);
	char *csv = th_slurp(DIR "/sweep/sweep.csv");
	ck_assert_str_eq(csv, "x,point,seed,arrived,completed,shed,failed,ttft_p50_s,ttft_p99_s,"
			      "tpot_p50_s,tpot_p99_s,e2e_p99_s,prefix_hit_ratio,recompute_ratio,"
			      "migrations,requests_per_s,output_tokens_per_s,goodput_rps,"
			      "gpu_hours,cost_usd,j_per_output_token,energy_kwh,slo_attainment\n"
			      "1,0,5,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2,6,0.25,1.5,0.5\n");
	free(csv);
	ck_assert_int_eq(swp_merge_with(DIR "/sweep", &t, stderr, &missing, &failed, err,
					sizeof err),
			 0);
	ck_assert_int_eq(missing, 0);
	ck_assert_int_eq(failed, 0);
	csv = th_slurp(DIR "/sweep/sweep.csv");
	ck_assert_str_eq(csv, "x,point,seed,arrived,completed,shed,failed,ttft_p50_s,ttft_p99_s,"
			      "tpot_p50_s,tpot_p99_s,e2e_p99_s,prefix_hit_ratio,recompute_ratio,"
			      "migrations,requests_per_s,output_tokens_per_s,goodput_rps,"
			      "gpu_hours,cost_usd,j_per_output_token,energy_kwh,"
			      "route_ns,slo_attainment\n"
			      "1,0,5,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2,6,0.25,1.5,123456789,0.5\n");
	free(csv);
}
END_TEST

/* Numbers in summary.json outside the nodes array, the reason counts, the
 * mechanisms and the engine (settings, not figures). */
static size_t count_figures(const cJSON *o)
{
	size_t n = 0;
	for (const cJSON *c = o->child; c; c = c->next) {
		if (cJSON_IsNumber(c) || cJSON_IsNull(c))
			n++;
		else if (cJSON_IsObject(c) && !strstr(c->string, "_reasons") &&
			 strcmp(c->string, "by_reason") && strcmp(c->string, "mechanisms") &&
			 strcmp(c->string, "engine"))
			n += count_figures(c);
	}
	return n;
}

/* a and b have the same keys in the same order, objects within objects
 * alike (what a run's numbers are aside; the reason counts and the nodes
 * array aside). */
static void assert_same_keys(const cJSON *a, const cJSON *b)
{
	const cJSON *x = a->child, *y = b->child;
	for (; x && y; x = x->next, y = y->next) {
		if (!strcmp(x->string, "perf") && !a->string)
			x = x->next; /* baselines leave it out */
		if (!x)
			break;
		ck_assert_str_eq(x->string, y->string);
		if (!(cJSON_IsBool(x) && cJSON_IsBool(y))) /* true and false are two types */
			ck_assert_int_eq(x->type & 0xff, y->type & 0xff);
		if (cJSON_IsObject(x) && !strstr(x->string, "_reasons"))
			assert_same_keys(x, y);
	}
	if (x && !strcmp(x->string, "perf") && !a->string)
		x = x->next;
	ck_assert_msg(!x && !y, "%s: more keys in one", a->string ? a->string : "summary");
}

/* Every row's path is in a real summary.json, holding the row's figure, and
 * every figure of summary.json is a row. The summary that the committed
 * baselines hold (written by the kvsim of their day) has the same keys, so a
 * misspelt path, which the writer would follow, still fails. */
START_TEST(every_path_resolves_in_a_run)
{
	struct scenario sc;
	const char *sets[] = {"duration_s=60", "cluster.nodes=3", NULL};
	th_scenario("{}", sets, &sc);
	struct sim_opts o = {.out_dir = DIR "/run"};
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&sc, &o, &m, err, sizeof err);
	cfg_scenario_free(&sc);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_gt(m.completed, 0);
	cJSON *j = NULL;
	ck_assert_int_eq(cfg_read_json(DIR "/run/summary.json", &j, err, sizeof err), 0);
	char *ref_text = th_slurp("results/baselines/default.json");
	cJSON *doc = cJSON_Parse(ref_text);
	free(ref_text);
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(doc, "columns"); /* comparison.json */
	ck_assert(cJSON_IsArray(ref) && cJSON_IsObject(ref->child));
	assert_same_keys(j, ref->child);
	const struct res_metrics *t = res_metrics_builtin();
	size_t figures = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct res_metric *r = &t->row[i];
		if (r->scope != RES_SCOPE_RUN)
			continue; /* pools[] and nodes[]: pool_and_node_rows_match_the_run */
		if (r->use & RES_M_ARRAY_LEN) {
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, r->path);
			ck_assert_msg(cJSON_IsArray(a), "%s", r->path);
			ck_assert_int_eq(cJSON_GetArraySize(a), 3);
			ck_assert(res_metric_value(r, &m) == 3);
			continue;
		}
		if (r->use & RES_M_IF_CLIENT)
			continue; /* a run without a client block has none */
		ck_assert_msg(!strncmp(r->path, "perf.", 5) || res_json_item_at(ref->child, r->path),
			      "%s: not in the baseline", r->path);
		const cJSON *v = res_json_item_at(j, r->path);
		ck_assert_msg(cJSON_IsNumber(v) || cJSON_IsNull(v),
			      "%s: not a number (or null) of summary.json", r->path);
		if (cJSON_IsNull(v)) { /* a figure with no sample */
			ck_assert_msg(isnan(res_metric_value(r, &m)), "%s", r->path);
			figures++;
			continue;
		}
		/* The row's figure as cJSON prints it (15 digits where they
		 * come back close enough). */
		cJSON *num = cJSON_CreateNumber(res_metric_value(r, &m));
		char *text = cJSON_PrintUnformatted(num);
		ck_assert_msg(v->valuedouble == strtod(text, NULL), "%s", r->path);
		free(text);
		cJSON_Delete(num);
		figures++;
	}
	ck_assert_uint_eq(figures, count_figures(j));
	/* perf, which baselines leave out: the names docs/design.md gives. */
	const cJSON *perf = cJSON_GetObjectItemCaseSensitive(j, "perf");
	const char *perf_keys[] = {"events", "wall_s", "requests_per_wall_s", "peak_rss_bytes"};
	ck_assert_int_eq(cJSON_GetArraySize(perf), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_str_eq(cJSON_GetArrayItem(perf, i)->string, perf_keys[i]);
	/* A misspelt path does not resolve; nor does an object. */
	ck_assert_ptr_null(res_json_at(j, "ttft_s.p999"));
	ck_assert_ptr_null(res_json_at(j, "ttft_s"));
	const struct res_metric *p99 = res_metric_find(NULL, RES_LIST_TABLE, "ttft_s.p99");
	ck_assert_ptr_nonnull(p99);
	char cell[64], expect[64];
	res_metric_cell(p99, &m, cell, sizeof cell);
	snprintf(expect, sizeof expect, "%.2f", m.ttft.p99 * 1e3); /* shown in ms */
	ck_assert_str_eq(cell, expect);
	cJSON_Delete(doc);
	cJSON_Delete(j);
	met_summary_free(&m);
}
END_TEST

/* What each output needs of a row is there, and no path is named twice; a
 * pool or node row's path is under its array and no output list takes it;
 * the statistics groups have slots of their own, TTFT, TPOT, E2E and queue
 * those read by name. */
START_TEST(rows_are_complete)
{
	const struct res_metrics *t = res_metrics_builtin();
	size_t groups = 0, it = 0;
	while (res_stat_next_all(NULL, &it))
		groups++;
	/* six rows per group, and the rest: a new group changes only the first */
	ck_assert_uint_eq(t->n - 6 * groups, 90);
	for (size_t i = 0; i < t->n; i++) {
		const struct res_metric *r = &t->row[i];
		ck_assert_msg(r->name && r->path && r->unit > 0, "row %zu", i);
		if (r->scope != RES_SCOPE_RUN) {
			const char *key = res_scope_key(r->scope);
			ck_assert_msg(!strncmp(r->path, key, strlen(key)) && r->path[strlen(key)] == '.',
				      "%s", r->path);
			ck_assert_msg(r->use == 0 && !r->stat, "%s", r->path);
		}
		if (r->use & (RES_M_CSV | RES_M_SWEEP))
			ck_assert_msg(r->csv != NULL, "%s", r->path);
		if (r->use & (RES_M_DIFF | RES_M_DIFF_NAMED))
			ck_assert_msg(r->better != RES_BETTER_NONE, "%s", r->path);
		for (size_t k = 0; k < i; k++)
			ck_assert_str_ne(t->row[k].path, r->path);
	}
	size_t n = 0;
	it = 0;
	while (res_metric_next(NULL, RES_LIST_TABLE, &it))
		n++;
	ck_assert_uint_eq(n, 65); /* 8 of the client's view */
	it = n = 0;
	while (res_metric_next(NULL, RES_LIST_DIFF, &it))
		n++;
	ck_assert_uint_eq(n, 38);
	it = n = 0;
	while (res_metric_next(NULL, RES_LIST_DIFF_ALL, &it))
		n++;
	ck_assert_uint_eq(n, 42);
	/* the groups */
	static const char *const named[] = {[MET_TTFT] = "ttft_s", [MET_TPOT] = "tpot_s",
					    [MET_E2E] = "e2e_s", [MET_QUEUE] = "queue_s"};
	unsigned used = 0;
	it = n = 0;
	for (const struct res_stat *g; (g = res_stat_next_all(NULL, &it)); n++) {
		const struct res_metric *mean = &t->row[it - 1];
		char path[64];
		snprintf(path, sizeof path, "%s.mean", g->key);
		ck_assert_str_eq(mean->path, path);
		ck_assert_uint_lt(g->slot, MET_STAT_MAX);
		ck_assert_msg(!(used & 1u << g->slot), "%s: slot %u taken", g->key, g->slot);
		used |= 1u << g->slot;
		if (g->slot < sizeof named / sizeof *named)
			ck_assert_str_eq(g->key, named[g->slot]);
		/* a span of two request times; the gaps' group is fed by the
		 * engine instead */
		if (g->per_token == RES_GAPS_KIND)
			ck_assert_uint_eq(g->from + g->to, 0);
		else
			ck_assert_uint_ne(g->from, g->to);
	}
	ck_assert_uint_eq(n, groups);
	ck_assert_uint_ge(n, 4);
	ck_assert_uint_le(n, MET_STAT_MAX);
}
END_TEST


/* Three columns over five rows: a tie at the table's precision, a tie for
 * best among two of three, a row with no direction, a row where all tie,
 * and a column without a value. */
#define MARK_ROW(name_, path_, better_, kind_, field, dec)                                         \
	{.name = name_, .path = path_, .better = better_, .kind = kind_,                           \
	 .offset = offsetof(struct met_summary, field), .decimals = dec, .unit = 1,                \
	 .use = RES_M_TABLE}
static const struct res_metric mark_rows[] = {
    MARK_ROW("arrived", "requests.arrived", RES_BETTER_NONE, RES_KIND_U64, arrived, 0),
    MARK_ROW("ttft p99", "ttft_s.p99", RES_BETTER_LOWER, RES_KIND_F64, ttft.p99, 3),
    MARK_ROW("done", "requests.completed", RES_BETTER_HIGHER, RES_KIND_U64, completed, 0),
    MARK_ROW("shed", "requests.shed", RES_BETTER_LOWER, RES_KIND_U64, shed, 0),
    MARK_ROW("hit", "prefix_hit_ratio", RES_BETTER_HIGHER, RES_KIND_F64, prefix_hit_ratio, 3),
};

static void mark_columns(struct met_summary s[3])
{
	const char *names[] = {"a", "b", "c"};
	const double ttft[] = {0.050, 0.0502, 0.070}, hit[] = {NAN, 0.5, 0.4};
	const uint64_t done[] = {10, 12, 12};
	for (int j = 0; j < 3; j++) {
		memset(&s[j], 0, sizeof s[j]);
		snprintf(s[j].policy, sizeof s[j].policy, "%s", names[j]);
		s[j].arrived = 10;
		s[j].ttft.p99 = ttft[j];
		s[j].completed = done[j];
		s[j].prefix_hit_ratio = hit[j];
	}
}

START_TEST(best_columns_marks_ties_and_skips_no_direction)
{
	struct met_summary s[3];
	mark_columns(s);
	unsigned char best[3];
	/* arrived says no direction */
	ck_assert_uint_eq(res_best_columns(&mark_rows[0], s, 3, best), 0);
	ck_assert(!best[0] && !best[1] && !best[2]);
	/* 0.050 and 0.0502 both print 0.050: a tie for best, both marked */
	ck_assert_uint_eq(res_best_columns(&mark_rows[1], s, 3, best), 2);
	ck_assert(best[0] && best[1] && !best[2]);
	/* higher is better: 12 and 12 beat 10 */
	ck_assert_uint_eq(res_best_columns(&mark_rows[2], s, 3, best), 2);
	ck_assert(!best[0] && best[1] && best[2]);
	/* all 0: nothing beaten, no mark */
	ck_assert_uint_eq(res_best_columns(&mark_rows[3], s, 3, best), 0);
	ck_assert(!best[0] && !best[1] && !best[2]);
	/* NaN is no value: 0.5 beats 0.4 */
	ck_assert_uint_eq(res_best_columns(&mark_rows[4], s, 3, best), 1);
	ck_assert(!best[0] && best[1] && !best[2]);
	/* one value among no values: nothing beaten */
	s[1].prefix_hit_ratio = NAN;
	ck_assert_uint_eq(res_best_columns(&mark_rows[4], s, 3, best), 0);
	ck_assert(!best[0] && !best[1] && !best[2]);
	/* one column: never marked */
	ck_assert_uint_eq(res_best_columns(&mark_rows[1], s, 1, best), 0);
	/* within one seed's noise of the best is best too (completed: 3%):
	 * 2,559 ties 2,560, 2,400 does not; all within noise: no mark */
	s[0].completed = 2560;
	s[1].completed = 2559;
	s[2].completed = 2400;
	ck_assert_uint_eq(res_best_columns(&mark_rows[2], s, 3, best), 2);
	ck_assert(best[0] && best[1] && !best[2]);
	s[2].completed = 2500;
	ck_assert_uint_eq(res_best_columns(&mark_rows[2], s, 3, best), 0);
}
END_TEST

/* A row shown in other units than it is kept (ms for seconds, GB for
 * bytes) is compared with its noise floor in its own units: TTFT p99
 * 66.14 ms against 62.37 ms is within 5 ms + 10% (a tie: no mark), and
 * 5.00 GB migrated against 1.00 GB is beyond 0.1 GB + 5% (1.00 is best);
 * read back as shown (66.14 against 62.37 "seconds", 5 against 1 "bytes")
 * the first was marked and the second tied. */
START_TEST(best_columns_compare_in_the_rows_own_units)
{
	static const struct res_metric unit_rows[] = {
	    {.name = "TTFT p99 (ms)", .path = "ttft_s.p99", .better = RES_BETTER_LOWER,
	     .kind = RES_KIND_F64, .offset = offsetof(struct met_summary, ttft.p99), .decimals = 2,
	     .unit = 1e-3, .use = RES_M_TABLE},
	    {.name = "migrated GB", .path = "migration.bytes", .better = RES_BETTER_LOWER,
	     .kind = RES_KIND_F64, .offset = offsetof(struct met_summary, migration_bytes),
	     .decimals = 2, .unit = 1e9, .use = RES_M_TABLE},
	};
	struct met_summary s[2];
	memset(s, 0, sizeof s);
	s[0].ttft.p99 = 0.06614;
	s[1].ttft.p99 = 0.06237;
	s[0].migration_bytes = 5e9;
	s[1].migration_bytes = 1e9;
	unsigned char best[2];
	ck_assert_double_eq_tol(res_shown_value(&unit_rows[0], &s[0]), 0.06614, 1e-12);
	ck_assert_uint_eq(res_best_columns(&unit_rows[0], s, 2, best), 0);
	ck_assert_uint_eq(res_best_columns(&unit_rows[1], s, 2, best), 1);
	ck_assert(!best[0] && best[1]);
}
END_TEST

/* Past six columns the text and Markdown tables turn: a row per policy,
 * the figures as columns (arrived, ttft p99, done, shed, hit: one block
 * of 100 characters), every cell the figure the plain table prints. */
START_TEST(wide_tables_are_transposed)
{
	const struct res_metrics t = {mark_rows, sizeof mark_rows / sizeof *mark_rows};
	struct met_summary s[7];
	memset(s, 0, sizeof s);
	for (int j = 0; j < 7; j++) {
		snprintf(s[j].policy, sizeof s[j].policy, "p%d", j);
		s[j].arrived = 100 + (uint64_t)j;
		s[j].ttft.p99 = 0.001 * (j + 1);
		s[j].prefix_hit_ratio = 0.5;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	res_print_table_with(f, &t, s, 7, RES_STYLE_TEXT, NULL);
	fclose(f);
	ck_assert_str_eq(text, "policy  arrived  ttft p99  done  shed    hit\n"
			       "p0          100     0.001     0     0  0.500\n"
			       "p1          101     0.002     0     0  0.500\n"
			       "p2          102     0.003     0     0  0.500\n"
			       "p3          103     0.004     0     0  0.500\n"
			       "p4          104     0.005     0     0  0.500\n"
			       "p5          105     0.006     0     0  0.500\n"
			       "p6          106     0.007     0     0  0.500\n");
	free(text);
	f = open_memstream(&text, &len);
	res_print_table_with(f, &t, s, 7, RES_STYLE_MD, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "| policy | arrived | ttft p99 | done | shed | hit |\n"
					   "|---|---:|---:|---:|---:|---:|\n| p0 | 100 | 0.001 | 0 |"));
	free(text);
	/* six columns: the plain table, a column per policy */
	f = open_memstream(&text, &len);
	res_print_table_with(f, &t, s, 6, RES_STYLE_TEXT, NULL);
	fclose(f);
	ck_assert_ptr_null(strstr(text, "policy"));
	ck_assert_ptr_nonnull(strstr(text, "\narrived "));
	free(text);
}
END_TEST

static char *marked_table(const struct met_summary *s, enum res_style style,
			  const struct res_table_opts *opts)
{
	const struct res_metrics t = {mark_rows, sizeof mark_rows / sizeof *mark_rows};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	res_print_table_with(f, &t, s, 3, style, opts);
	fclose(f);
	return text;
}

START_TEST(table_marks_best_and_prints_deltas)
{
	struct met_summary s[3];
	mark_columns(s);
	const struct res_table_opts opts = {.mark_best = 1, .baseline = 0};
	/* Deltas against a: (0.070 - 0.050) / 0.050 = +40%, (12 - 10) / 10 =
	 * +20%; a's hit ratio is no number, so b's and c's change is n/a. */
	char *md = marked_table(s, RES_STYLE_MD, &opts);
	ck_assert_str_eq(md, "| | a (baseline) | b | c |\n"
			     "|---|---:|---:|---:|\n"
			     "| arrived | 10 | 10 | 10 |\n"
			     "| ttft p99 | **0.050** | **0.050** (0%) | 0.070 (+40%) |\n"
			     "| done | 10 | **12** (+20%) | **12** (+20%) |\n"
			     "| shed | 0 | 0 (0%) | 0 (0%) |\n"
			     "| hit | n/a | **0.500** (n/a) | 0.400 (n/a) |\n");
	free(md);
	/* Text in a terminal's style: the figure alone in bold, the columns
	 * 28 wide with deltas, padded as if the escapes took no room. */
	char *text = marked_table(s, RES_STYLE_TEXT, &opts);
	char line[256];
	snprintf(line, sizeof line, "%-20s %23s\033[1m0.050\033[0m %18s\033[1m0.050\033[0m (0%%) %16s%s\n",
		 "ttft p99", "", "", "", "0.070 (+40%)");
	ck_assert_ptr_nonnull(strstr(text, line));
	snprintf(line, sizeof line, "%-20s %28s %28s %28s\n", "", "a (baseline)", "b", "c");
	ck_assert_int_eq(strncmp(text, line, strlen(line)), 0);
	free(text);
	/* Without marks or baseline: the plain table, byte for byte. */
	const struct res_metrics t = {mark_rows, sizeof mark_rows / sizeof *mark_rows};
	char *plain = NULL, *none = marked_table(s, RES_STYLE_TEXT, NULL);
	size_t len = 0;
	FILE *f = open_memstream(&plain, &len);
	res_print_table(f, &t, s, 3, RES_STYLE_TEXT);
	fclose(f);
	ck_assert_str_eq(none, plain);
	snprintf(line, sizeof line, "%-20s %17s %17s %17s\n", "ttft p99", "0.050", "0.050", "0.070");
	ck_assert_ptr_nonnull(strstr(plain, line));
	free(plain);
	free(none);
}
END_TEST

/* A disaggregated cluster's summary, by hand: 2 prefill nodes (H100-SXM)
 * and 1 decode node (A100-80G); mean TTFT 0.425 s = 0.020 queue + 0.100
 * prefill + 0.055 transfer + 0.250 decode queue; 4 hand-overs of 3.5 GB
 * in all taking 0.01 s (0.0025 s each), one failover, two kept on the
 * decode node. */
static struct met_pool pd_pools[2];
static struct met_node pd_nodes[3];

static void pd_summary_of(struct met_summary *s)
{
	summary_of(s);
	s->disaggregated = 1;
	s->ttft.mean = 0.425;
	s->ttft_split_s[0] = 0.020;
	s->ttft_split_s[1] = 0.100;
	s->ttft_split_s[2] = 0.055;
	s->ttft_split_s[3] = 0.250;
	s->pd = (struct met_pd){.count = 4, .failovers = 1, .local = 2, .bytes = 3.5e9,
				.seconds = 0.01, .wait_s = 0.5};
	pd_pools[0] = (struct met_pool){"prefill", "prefill", "H100-SXM", 1, 2, 0.5, 0.125, 6, 2, 0, 0};
	pd_pools[1] = (struct met_pool){"decode", "decode", "A100-80G", 2, 1, 0.75, 0.625, 4, 1, 0, 0};
	for (int i = 0; i < 3; i++)
		pd_nodes[i] = (struct met_node){.id = i, .pool = i / 2, .requests = (uint64_t)i};
	s->pools = pd_pools;
	s->n_pools = 2;
	s->nodes = pd_nodes;
	s->n_nodes = 3;
}

/* The rows of the prefill-to-decode path: in the table and comparison.csv
 * only when a column is disaggregated, with the figures computed above;
 * the mean hand-over time is seconds / count. */
START_TEST(pd_rows_only_when_disaggregated)
{
	struct met_summary plain, pd;
	summary_of(&plain);
	pd_summary_of(&pd);
	/* the same figures on a cluster without a prefill pool: no row of them */
	struct met_summary quiet = pd;
	quiet.disaggregated = 0;
	char *a = printed(text_table, NULL, &plain), *b = printed(text_table, NULL, &quiet);
	ck_assert_ptr_null(strstr(a, "prefill queue"));
	ck_assert_ptr_null(strstr(b, "hand-over"));
	ck_assert_ptr_null(strstr(b, "prefill queue"));
	free(a);
	free(b);

	/* Text: the TTFT mean and its parts ahead of TTFT p50, the hand-overs
	 * after migrated GB. */
	char expect[2048];
	snprintf(expect, sizeof expect,
		 "%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n",
		 "  failed", "0", "TTFT mean (ms)", "425.00", "  prefill queue (ms)", "20.00",
		 "  prefill (ms)", "100.00", "  KV transfer (ms)", "55.00", "  decode queue (ms)",
		 "250.00");
	snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%-20s %17s\n",
		 "TTFT median (ms)", "0.00");
	a = printed(text_table, NULL, &pd);
	ck_assert_msg(strstr(a, expect) != NULL, "%s", a);
	snprintf(expect, sizeof expect,
		 "%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s %17s\n%-20s "
		 "%17s\n",
		 "migrated GB", "0.00", "KV hand-overs", "4", "  hand-over GB", "3.50",
		 "  mean hand-over s", "0.0025", "  failovers", "1", "  kept on decode", "2",
		 "preemptions", "0");
	ck_assert_msg(strstr(a, expect) != NULL, "%s", a);
	free(a);
	a = printed(md_table, NULL, &pd);
	ck_assert_ptr_nonnull(strstr(a, "| TTFT mean (ms) | 425.00 |\n| prefill queue (ms) | 20.00 |\n"
					"| prefill (ms) | 100.00 |\n| KV transfer (ms) | 55.00 |\n"
					"| decode queue (ms) | 250.00 |\n| TTFT median (ms) |"));
	ck_assert_ptr_nonnull(strstr(a, "| KV hand-overs | 4 |\n| hand-over GB | 3.50 |\n"
					"| mean hand-over s | 0.0025 |\n| failovers | 1 |\n"
					"| kept on decode | 2 |\n"));
	free(a);
	a = printed(html_table, NULL, &pd);
	ck_assert_ptr_nonnull(strstr(a, "<tr><td>  mean hand-over s</td><td>0.0025</td></tr>\n"));
	free(a);

	/* comparison.csv: the columns in table order, fractions as %.9g */
	char err[512];
	mkdir(DIR, 0777);
	ck_assert_int_eq(res_write_comparison_csv_with(DIR "/pd.csv", NULL, &pd, 1, err, sizeof err),
			 0);
	a = th_slurp(DIR "/pd.csv");
	ck_assert_str_eq(a, "policy,arrived,completed,shed,failed,ttft_mean_s,ttft_queue_s,"
			    "ttft_prefill_s,ttft_transfer_s,ttft_decode_queue_s,ttft_p50_s,"
			    "ttft_p99_s,tpot_p50_s,tpot_p99_s,e2e_p99_s,queue_p99_s,prefix_hit_ratio,"
			    "recompute_ratio,recompute_gpu_s,migrations,migrated_bytes,pd_transfers,"
			    "pd_transfer_bytes,pd_transfer_mean_s,pd_failovers,pd_local,preemptions,"
			    "requests_per_s,output_tokens_per_s,slo_attainment,goodput_rps,"
			    "gpu_hours,cost_usd,j_per_output_token,energy_kwh,"
			    "load_max_over_mean,load_jain,tokens_input,tokens_cached,tokens_reloaded,"
			    "tokens_migrated,tokens_recomputed,tokens_fresh,tokens_preempt_recomputed\n"
			    "rr,7,0,0,0,0.425,0.02,0.1,0.055,0.25,0,0,0,0,0,0,0,0,0,0,0,4,3.5e+09,"
			    "0.0025,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n");
	free(a);
	/* a column that is not disaggregated beside one that is: its figures */
	struct met_summary two[2] = {pd, quiet};
	snprintf(two[1].policy, sizeof two[1].policy, "ll");
	ck_assert_int_eq(res_write_comparison_csv_with(DIR "/pd2.csv", NULL, two, 2, err, sizeof err),
			 0);
	a = th_slurp(DIR "/pd2.csv");
	ck_assert_ptr_nonnull(strstr(a, "\nll,7,0,0,0,0.425,0.02,0.1,0.055,0.25,"));
	free(a);
}
END_TEST

/* summary.json: ttft_split, pd_transfer and pools in every summary (zeros
 * and one pool "cluster" without pools), and each node's pool. */
START_TEST(pd_keys_in_summary_json)
{
	struct met_summary pd;
	pd_summary_of(&pd);
	cJSON *j = res_summary_json(&pd);
	char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "ttft_split"));
	ck_assert_str_eq(text, "{\"queue_s\":0.02,\"prefill_s\":0.1,\"transfer_s\":0.055,"
			       "\"decode_queue_s\":0.25}");
	free(text);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "pd_transfer"));
	ck_assert_str_eq(text, "{\"count\":4,\"bytes\":3500000000,\"seconds\":0.01,"
			       "\"mean_s\":0.0025,\"failovers\":1,\"local\":2,\"wait_s\":0.5}");
	free(text);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "pools"));
	ck_assert_str_eq(text, "[{\"name\":\"prefill\",\"role\":\"prefill\",\"gpu\":\"H100-SXM\","
			       "\"tp\":1,\"nodes\":2,\"busy_ratio\":0.5,\"mean_kv_util\":0.125,"
			       "\"requests\":6,\"nodes_mean\":2,\"gpu_hours\":0,\"energy_j\":0},"
			       "{\"name\":\"decode\",\"role\":\"decode\","
			       "\"gpu\":\"A100-80G\",\"tp\":2,\"nodes\":1,\"busy_ratio\":0.75,"
			       "\"mean_kv_util\":0.625,\"requests\":4,\"nodes_mean\":1,"
			       "\"gpu_hours\":0,\"energy_j\":0}]");
	free(text);
	text = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "nodes"), 2));
	ck_assert_str_eq(text, "{\"id\":2,\"pool\":1,\"busy_ratio\":0,\"mean_kv_util\":0,"
			       "\"peak_kv_util\":0,\"requests\":2,\"throttled_s\":0,\"held_s\":0,"
			       "\"energy_j\":0}");
	free(text);
	/* where they sit among the top-level keys */
	char keys[1024] = "";
	for (const cJSON *c = j->child; c; c = c->next)
		snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s ", c->string);
	/* the statistics groups' objects (ttft_s tpot_s e2e_s queue_s ...) after
	 * requests */
	char want[1024] = "scenario policy mechanisms seed kvsim_version sim_time_s requests ";
	size_t it = 0;
	for (const struct res_stat *g; (g = res_stat_next(NULL, &it));)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s ", g->key);
	ck_assert_ptr_nonnull(strstr(want, " requests ttft_s tpot_s itl_s e2e_s queue_s "));
	snprintf(want + strlen(want), sizeof want - strlen(want), "%s",
		 "percentiles ttft_split tokens prefix_hit_ratio recompute_ratio recompute_gpu_s "
		 "migration offload pd_transfer preemptions throughput slo steady steady_reason "
		 "steadiness energy gpu_hours cost_usd cost_per_output_token_usd "
		 "gpu_hours_per_output_token scaling pools nodes load_imbalance perf ");
	ck_assert_str_eq(keys, want);
	cJSON_Delete(j);

	/* a run without pools: the same keys, zeros, one pool "cluster" */
	struct scenario sc;
	const char *sets[] = {"duration_s=20", "cluster.nodes=2", NULL};
	th_scenario("{}", sets, &sc);
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&sc, NULL, &m, err, sizeof err);
	cfg_scenario_free(&sc);
	ck_assert_msg(rc == 0, "%s", err);
	j = res_summary_json(&m);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "pd_transfer"));
	ck_assert_str_eq(text, "{\"count\":0,\"bytes\":0,\"seconds\":0,\"mean_s\":null,"
			       "\"failovers\":0,\"local\":0,\"wait_s\":0}");
	free(text);
	const cJSON *split = cJSON_GetObjectItemCaseSensitive(j, "ttft_split");
	ck_assert(cJSON_GetObjectItemCaseSensitive(split, "transfer_s")->valuedouble == 0);
	ck_assert(cJSON_GetObjectItemCaseSensitive(split, "decode_queue_s")->valuedouble == 0);
	/* queue and prefill add up to the mean TTFT */
	ck_assert_double_eq_tol(m.ttft_split_s[0] + m.ttft_split_s[1], m.ttft.mean, 1e-12);
	ck_assert_double_gt(m.ttft_split_s[1], 0);
	const cJSON *pools = cJSON_GetObjectItemCaseSensitive(j, "pools");
	ck_assert_int_eq(cJSON_GetArraySize(pools), 1);
	const cJSON *p0 = cJSON_GetArrayItem(pools, 0);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p0, "name")->valuestring, "cluster");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p0, "role")->valuestring, "mixed");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p0, "gpu")->valuestring, "H100-SXM");
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(p0, "nodes")->valueint, 2);
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(p0, "busy_ratio")->valuedouble,
			    (m.nodes[0].busy_ratio + m.nodes[1].busy_ratio) / 2);
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(p0, "requests")->valuedouble,
			    (double)m.completed);
	cJSON_Delete(j);
	/* one pool: no pool table under the comparison */
	text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	res_print_pools(f, &m, 1, RES_STYLE_TEXT);
	fclose(f);
	ck_assert_str_eq(text, "");
	free(text);
	met_summary_free(&m);
}
END_TEST

static char *pools_printed(const struct met_summary *s, size_t n, enum res_style style)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	res_print_pools(f, s, n, style);
	fclose(f);
	return text;
}

/* The pool table under the comparison: one line per column and pool, the
 * widths following the longest name; in Markdown a '|' escaped, in HTML
 * '<' and '&'. */
START_TEST(pool_table_per_column_and_pool)
{
	struct met_summary s[2];
	pd_summary_of(&s[0]);
	s[1] = s[0];
	snprintf(s[1].policy, sizeof s[1].policy, "session_affinity");
	char *text = pools_printed(s, 2, RES_STYLE_TEXT);
	ck_assert_str_eq(
	    text,
	    "\npools (busy ratio and mean KV use: means over the pool's nodes; requests: those "
	    "its nodes ran, a request handed from prefill to decode in both pools):\n"
	    "  policy           pool    role    GPU x tp     nodes busy ratio mean KV use  requests\n"
	    "  rr               prefill prefill H100-SXM x 1     2      0.500       0.125         6\n"
	    "  rr               decode  decode  A100-80G x 2     1      0.750       0.625         4\n"
	    "  session_affinity prefill prefill H100-SXM x 1     2      0.500       0.125         6\n"
	    "  session_affinity decode  decode  A100-80G x 2     1      0.750       0.625         4\n");
	free(text);
	snprintf(pd_pools[1].name, sizeof pd_pools[1].name, "d|<&>");
	text = pools_printed(s, 1, RES_STYLE_MD);
	ck_assert_str_eq(text, "\nPools (busy ratio and mean KV use: means over the pool's nodes; "
			       "requests: those its nodes ran, a request handed from prefill to "
			       "decode in both pools):\n\n"
			       "| policy | pool | role | GPU x tp | nodes | busy ratio | mean KV use | "
			       "requests |\n|---|---|---|---|---:|---:|---:|---:|\n"
			       "| rr | prefill | prefill | H100-SXM x 1 | 2 | 0.500 | 0.125 | 6 |\n"
			       "| rr | d\\|&lt;&amp;&gt; | decode | A100-80G x 2 | 1 | 0.750 | 0.625 | 4 |\n");
	free(text);
	text = pools_printed(s, 1, RES_STYLE_HTML);
	ck_assert_ptr_nonnull(strstr(text, "<table>\n<tr><th>policy</th><th>pool</th><th>role</th>"
					   "<th>GPU x tp</th><th>nodes</th><th>busy ratio</th>"
					   "<th>mean KV use</th><th>requests</th></tr>\n"));
	ck_assert_ptr_nonnull(strstr(text, "<tr><td>rr</td><td>d|&lt;&amp;&gt;</td><td>decode</td>"
					   "<td>A100-80G x 2</td><td>1</td><td>0.750</td>"
					   "<td>0.625</td><td>4</td></tr>\n</table>\n"));
	free(text);
	/* a newline never splits a row; Markdown's marks never format */
	snprintf(pd_pools[1].name, sizeof pd_pools[1].name, "d\nx*`[");
	text = pools_printed(s, 1, RES_STYLE_TEXT);
	ck_assert_ptr_nonnull(strstr(text, "  rr     d\\nx*`[ decode  A100-80G x 2"));
	free(text);
	text = pools_printed(s, 1, RES_STYLE_MD);
	ck_assert_ptr_nonnull(strstr(text, "| rr | d\\nx\\*\\`\\[ | decode |"));
	free(text);
	/* printed between the comparison table and the mechanisms */
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	res_print_comparison_with(f, s, 2, RES_STYLE_TEXT, NULL);
	fclose(f);
	char *table = strstr(text, "KV hand-overs"), *pools = strstr(text, "\npools ("),
	     *mech = strstr(text, "\nmechanisms (");
	ck_assert(table && pools && mech && table < pools && pools < mech);
	free(text);
}
END_TEST

/* The verdict knows noise: one seed's figures differ materially only past
 * the figure's noise floor, several seeds' only where their ranges are
 * apart; a column that is not steady is never best on a latency; the
 * simulator's speed and per-run totals are never best. */
START_TEST(verdict_material_only_beyond_noise)
{
	const struct res_metric *ttft = res_metric_find(NULL, RES_LIST_TABLE, "ttft_s.p99");
	ck_assert_ptr_nonnull(ttft);
	/* one seed: 10% and 5 ms of the baseline's figure */
	struct res_spread a = {0.100, 0.100, 0.100}, b = {0.114, 0.114, 0.114};
	ck_assert_int_eq(res_material(ttft, &a, &b), 0); /* 0.014 < 0.005 + 0.0114 */
	b = (struct res_spread){0.120, 0.120, 0.120};
	ck_assert_int_eq(res_material(ttft, &a, &b), 1);
	/* seeds: ranges that overlap are not material, however far the medians */
	a = (struct res_spread){0.090, 0.100, 0.125};
	ck_assert_int_eq(res_material(ttft, &a, &b), 0);
	a = (struct res_spread){0.090, 0.100, 0.119};
	ck_assert_int_eq(res_material(ttft, &a, &b), 1);

	struct met_summary s[3];
	memset(s, 0, sizeof s);
	struct res_spread sp[3] = {{3.2, 3.2, 3.2}, {0.30, 0.30, 0.30}, {0.31, 0.31, 0.31}};
	unsigned char best[3];
	size_t top;
	int material;
	ck_assert_uint_eq(res_verdict_row(ttft, s, sp, 3, 0, best, &top, &material), 2);
	ck_assert(!best[0] && best[1] && best[2] && top == 1 && material);
	s[1].steadiness.unsteady = 1; /* its tail grows with the horizon */
	ck_assert_uint_eq(res_verdict_row(ttft, s, sp, 3, 0, best, &top, &material), 1);
	ck_assert(!best[0] && !best[1] && best[2] && top == 2 && material);
	/* all within noise of the baseline: named best, not material */
	s[1].steadiness.unsteady = 0;
	sp[0] = (struct res_spread){0.32, 0.32, 0.32};
	ck_assert_uint_eq(res_verdict_row(ttft, s, sp, 3, 0, best, &top, &material), 3);
	ck_assert_int_eq(material, 0);
	/* a baseline that is not steady: column 2, steady and ahead by less
	 * than the floor (0.31 against 0.32), is best alone and ahead beyond
	 * noise (the gap grows with the horizon); level with it, it is not */
	s[0].steadiness.unsteady = 1;
	ck_assert_uint_eq(res_verdict_row(ttft, s, sp, 3, 0, best, &top, &material), 2);
	ck_assert(!best[0] && best[1] && best[2] && top == 1 && material);
	sp[1] = sp[2] = sp[0];
	ck_assert_uint_eq(res_verdict_row(ttft, s, sp, 3, 0, best, &top, &material), 2);
	ck_assert_int_eq(material, 0);
	/* a count of work is not a latency: the floor stands */
	const struct res_metric *rec = res_metric_find(NULL, RES_LIST_TABLE, "recompute_gpu_s");
	struct res_spread w[2] = {{100, 100, 100}, {98, 98, 98}};
	ck_assert_uint_eq(res_verdict_row(rec, s, w, 2, 0, best, &top, &material), 2);
	ck_assert_int_eq(material, 0);
	s[0].steadiness.unsteady = 0;

	s[0].wall_s = 1;
	s[1].wall_s = 2;
	s[0].cost_usd = 1;
	s[1].cost_usd = 2;
	ck_assert_uint_eq(res_best_columns(res_metric_find(NULL, RES_LIST_TABLE, "perf.wall_s"), s, 2, best), 0);
	ck_assert_uint_eq(res_best_columns(res_metric_find(NULL, RES_LIST_TABLE, "cost_usd"), s, 2, best), 0);
}
END_TEST

/* A figure with no sample (or no price) is "n/a" in every table, null in
 * summary.json, and "no data" in the verdict. */
START_TEST(no_sample_is_na_everywhere)
{
	struct met_summary s[2];
	memset(s, 0, sizeof s);
	for (int j = 0; j < 2; j++) {
		snprintf(s[j].policy, sizeof s[j].policy, j ? "b" : "a");
		s[j].ttft.p99 = s[j].tpot.p99 = NAN;
		s[j].cost_usd = NAN;
		s[j].arrived = s[j].shed = 3;
	}
	const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, "ttft_s.p99");
	char cell[64];
	res_metric_cell(m, &s[0], cell, sizeof cell);
	ck_assert_str_eq(cell, "n/a");
	res_metric_csv_cell(m, &s[0], cell, sizeof cell);
	ck_assert_str_eq(cell, "n/a");
	m = res_metric_find(NULL, RES_LIST_TABLE, "cost_usd");
	res_metric_cell(m, &s[1], cell, sizeof cell);
	ck_assert_str_eq(cell, "n/a");
	cJSON *j = res_summary_json(&s[0]);
	char *text = cJSON_Print(j);
	cJSON_Delete(j);
	j = cJSON_Parse(text); /* summary.json as written */
	ck_assert(cJSON_IsNull(res_json_item_at(j, "ttft_s.p99")));
	ck_assert(cJSON_IsNull(res_json_item_at(j, "cost_usd")));
	ck_assert_ptr_null(strstr(text, "nan"));
	free(text);
	cJSON_Delete(j);
	static const enum res_style styles[] = {RES_STYLE_TEXT, RES_STYLE_MD, RES_STYLE_HTML};
	for (size_t k = 0; k < 3; k++) {
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		res_print_verdict(f, s, 2, 0, styles[k]);
		fclose(f);
		ck_assert_msg(strstr(text, "TTFT p99: no data") && strstr(text, "TPOT p99: no data") &&
				  !strstr(text, "TTFT p99: all"),
			      "%s", text);
		free(text);
		f = open_memstream(&text, &len);
		res_print_table(f, NULL, s, 2, styles[k]);
		fclose(f);
		ck_assert_ptr_nonnull(strstr(text, "n/a"));
		ck_assert_ptr_null(strstr(text, "nan"));
		free(text);
	}
}
END_TEST

/* The built-in table's row at path. */
static const struct res_metric *builtin_row(const char *path)
{
	const struct res_metrics *t = res_metrics_builtin();
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->row[i].path, path))
			return &t->row[i];
	ck_abort_msg("%s: no row", path);
	return NULL;
}

/* A number of summary.json holds x as the writer printed it. */
static void assert_json_number(const cJSON *item, double x, const char *what, size_t i)
{
	ck_assert_msg(cJSON_IsNumber(item), "%s[%zu]: not a number", what, i);
	cJSON *num = cJSON_CreateNumber(x);
	char *text = cJSON_PrintUnformatted(num);
	ck_assert_msg(item->valuedouble == strtod(text, NULL), "%s[%zu]: %.17g, the run %s", what,
		      i, item->valuedouble, text);
	free(text);
	cJSON_Delete(num);
}

/* A run of a prefill pool of 1 node and a decode pool of 2 into DIR/dir:
 * its summary in m, its summary.json in *j. */
static void run_two_pools(const char *dir, struct met_summary *m, cJSON **j)
{
	struct scenario sc;
	const char *sets[] = {"duration_s=30",
			      "cluster.pools=[{\"name\": \"p\", \"role\": \"prefill\", \"nodes\": 1},"
			      " {\"name\": \"d\", \"role\": \"decode\", \"nodes\": 2, \"tp\": 2}]",
			      NULL};
	th_scenario("{}", sets, &sc);
	struct sim_opts o = {.out_dir = dir};
	char err[1024] = "", path[256];
	int rc = sim_run(&sc, &o, m, err, sizeof err);
	cfg_scenario_free(&sc);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_gt(m->completed, 10);
	snprintf(path, sizeof path, "%s/summary.json", dir);
	ck_assert_int_eq(cfg_read_json(path, j, err, sizeof err), 0);
}

/* Each element of summary.json's pools[] and nodes[] has the keys of the
 * rows of that scope, in table order and no others, holding what the run
 * computed: the table's figure, and the struct's field of that name. */
START_TEST(pool_and_node_rows_match_the_run)
{
	struct met_summary m;
	cJSON *j = NULL;
	run_two_pools(DIR "/pools", &m, &j);
	ck_assert_uint_eq(m.n_pools, 2);
	ck_assert_uint_eq(m.n_nodes, 3);
	const struct res_metrics *t = res_metrics_builtin();
	const enum res_scope scopes[] = {RES_SCOPE_POOL, RES_SCOPE_NODE};
	for (int k = 0; k < 2; k++) {
		const char *key = res_scope_key(scopes[k]);
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, key);
		ck_assert_int_eq(cJSON_GetArraySize(arr), (int)res_scope_count(scopes[k], &m));
		size_t i = 0, n_rows = 0;
		for (const cJSON *e = arr->child; e; e = e->next, i++) {
			const cJSON *item = e->child;
			n_rows = 0;
			for (const struct res_metric *r = t->row; r < t->row + t->n; r++) {
				if (r->scope != scopes[k])
					continue;
				n_rows++;
				ck_assert_msg(item != NULL, "%s: not in %s[%zu]", r->path, key, i);
				ck_assert_str_eq(item->string, r->path + strlen(key) + 1);
				const char *text = res_metric_text_at(r, &m, i);
				if (text)
					ck_assert_str_eq(item->valuestring, text);
				else
					assert_json_number(item, res_metric_value_at(r, &m, i), r->path, i);
				item = item->next;
			}
			ck_assert_msg(item == NULL, "%s[%zu].%s: no row", key, i, item ? item->string : "");
		}
		ck_assert_uint_eq(n_rows, k == 0 ? 11 : 9);
	}
	/* the rows read the fields they name */
	const cJSON *pools = cJSON_GetObjectItemCaseSensitive(j, "pools");
	for (size_t i = 0; i < m.n_pools; i++) {
		const cJSON *e = cJSON_GetArrayItem(pools, (int)i);
		const struct met_pool *p = &m.pools[i];
		const struct {
			const char *key;
			double v;
		} want[] = {{"tp", p->tp},
			    {"nodes", p->nodes},
			    {"busy_ratio", p->busy_ratio},
			    {"mean_kv_util", p->mean_kv_util},
			    {"requests", (double)p->requests},
			    {"nodes_mean", p->nodes_mean},
			    {"gpu_hours", p->gpu_hours},
			    {"energy_j", p->energy_j}};
		for (size_t w = 0; w < sizeof want / sizeof *want; w++)
			assert_json_number(cJSON_GetObjectItemCaseSensitive(e, want[w].key), want[w].v,
					   want[w].key, i);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring, p->name);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "role")->valuestring, p->role);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "gpu")->valuestring, p->gpu);
	}
	ck_assert_str_eq(m.pools[1].role, "decode");
	ck_assert_int_eq(m.pools[1].tp, 2);
	ck_assert_uint_gt(m.pools[1].requests, 0);
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j, "nodes");
	for (size_t i = 0; i < m.n_nodes; i++) {
		const cJSON *e = cJSON_GetArrayItem(nodes, (int)i);
		const struct met_node *n = &m.nodes[i];
		const struct {
			const char *key;
			double v;
		} want[] = {{"id", n->id},
			    {"pool", n->pool},
			    {"busy_ratio", n->busy_ratio},
			    {"mean_kv_util", n->mean_kv_util},
			    {"peak_kv_util", n->peak_kv_util},
			    {"requests", (double)n->requests},
			    {"throttled_s", n->throttled_s},
			    {"held_s", n->held_s},
			    {"energy_j", n->energy_j}};
		for (size_t w = 0; w < sizeof want / sizeof *want; w++)
			assert_json_number(cJSON_GetObjectItemCaseSensitive(e, want[w].key), want[w].v,
					   want[w].key, i);
	}
	ck_assert_int_eq(m.nodes[2].pool, 1);
	ck_assert_double_gt(m.nodes[2].busy_ratio, 0);
	cJSON_Delete(j);
	met_summary_free(&m);
}
END_TEST

/* The figures of requests.csv's column k (header cell names[k]); empty
 * cells left out. Caller frees *v. */
static size_t csv_column(const char *text, const char *name, double **v)
{
	size_t cap = 1024, n = 0;
	*v = malloc(cap * sizeof **v);
	ck_assert_ptr_nonnull(*v);
	/* the column's index in the header */
	const char *eol = strchr(text, '\n');
	int col = -1, c = 0;
	for (const char *p = text; p < eol; c++) {
		const char *end = strpbrk(p, ",\n");
		if ((size_t)(end - p) == strlen(name) && !strncmp(p, name, strlen(name)))
			col = c;
		p = end + 1;
	}
	ck_assert_msg(col >= 0, "%s: no such column", name);
	for (const char *line = eol + 1; *line; line = strchr(line, '\n') + 1) {
		const char *p = line;
		for (int k = 0; k < col; k++)
			p = strchr(p, ',') + 1;
		if (*p != ',') {
			if (n == cap)
				ck_assert_ptr_nonnull(*v = realloc(*v, (cap *= 2) * sizeof **v));
			(*v)[n++] = strtod(p, NULL);
		}
	}
	return n;
}

/* The inter-token gaps (itl_s, no column of its own): one per output token
 * after each completed request's first, so as many as requests.csv's
 * output tokens less one per request, and, each request's gaps adding up
 * to its decode time, a mean that is the decode times' sum over that
 * count (TPOT x (output - 1) summed: exact to the 1e-9 s the file
 * prints, per request). Every request of this run completes. */
static void gaps_match_requests_csv(const char *csv, const cJSON *j)
{
	double *out, *tpot;
	size_t n = csv_column(csv, "output_tokens", &out), nt = csv_column(csv, "tpot_s", &tpot);
	double count = 0, sum = 0;
	for (size_t i = 0, k = 0; i < n; i++) {
		count += out[i] - 1;
		if (out[i] >= 2 && k < nt)
			sum += tpot[k++] * (out[i] - 1);
	}
	const cJSON *rq = cJSON_GetObjectItemCaseSensitive(j, "requests");
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(rq, "completed")->valuedouble, (double)n);
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "itl_s");
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "count")->valuedouble, count);
	double mean = cJSON_GetObjectItemCaseSensitive(o, "mean")->valuedouble;
	ck_assert_double_eq_tol(mean, sum / count, 1e-9);
	/* the percentiles lie within the gaps, in order */
	double p50 = cJSON_GetObjectItemCaseSensitive(o, "p50")->valuedouble,
	       p99 = cJSON_GetObjectItemCaseSensitive(o, "p99")->valuedouble,
	       max = cJSON_GetObjectItemCaseSensitive(o, "max")->valuedouble;
	ck_assert(p50 > 0 && p50 <= p99 && p99 <= max);
	free(out);
	free(tpot);
}

/* Every statistics group: its column of requests.csv (in table order,
 * after output_tokens) summarised again gives the object summary.json
 * holds: mean, p50, p90, p99 and max (to the 1e-9 s the file prints) and
 * the count, in that order. */
START_TEST(stat_groups_match_requests_csv)
{
	struct met_summary m;
	cJSON *j = NULL;
	run_two_pools(DIR "/stats", &m, &j);
	char *csv = th_slurp(DIR "/stats/requests.csv");
	char header[512] = "output_tokens,";
	size_t it = 0, groups = 0;
	for (const struct res_stat *g; (g = res_stat_next(NULL, &it)); groups++) {
		if (g->per_token == RES_GAPS_KIND) {
			gaps_match_requests_csv(csv, j);
			groups--;
			continue;
		}
		snprintf(header + strlen(header), sizeof header - strlen(header), "%s,", g->key);
		double *v;
		size_t n = csv_column(csv, g->key, &v);
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, g->key);
		ck_assert_msg(cJSON_IsObject(o), "%s", g->key);
		const char *keys[] = {"mean", "p50", "p90", "p99", "max", "count"};
		const cJSON *item = o->child;
		for (size_t k = 0; k < 6; k++, item = item->next)
			ck_assert_str_eq(item->string, keys[k]);
		ck_assert_ptr_null(item);
		ck_assert_uint_gt(n, 0);
		ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "count")->valuedouble,
				    (double)n);
		char path[64];
		snprintf(path, sizeof path, "%s.count", g->key);
		ck_assert_double_eq(res_metric_value(builtin_row(path), &m), (double)n);
		gsl_sort(v, 1, n);
		const double want[] = {gsl_stats_mean(v, 1, n),
				       gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50),
				       gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90),
				       gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99), v[n - 1]};
		for (size_t k = 0; k < 5; k++)
			ck_assert_msg(fabs(cJSON_GetObjectItemCaseSensitive(o, keys[k])->valuedouble -
					   want[k]) <= 1e-9,
				      "%s.%s", g->key, keys[k]);
		free(v);
	}
	ck_assert_uint_ge(groups, 4);
	snprintf(header + strlen(header), sizeof header - strlen(header), "cached,");
	ck_assert_msg(strstr(csv, header) != NULL, "%.200s", csv);
	free(csv);
	cJSON_Delete(j);
	met_summary_free(&m);
}
END_TEST

/* A new per-request statistic is one RES_STATS entry: "probe", from the
 * request's admission to its first token, in the last slot. The collector
 * keeps it, requests.csv gets its column after the built-in groups',
 * summary.json its object after theirs, the table and comparison.csv the
 * rows it is marked for. */
static struct res_metric stat_rows[256];
static const struct res_metric probe_rows[] = {
    RES_STATS("probe", "probe", MET_STAT_MAX - 1, RES_SPAN(sched_ns, first_token_ns), 3,
	      RES_NO_PARTS, RES_M_TABLE, 0, 0, RES_M_TABLE | RES_M_CSV, 0),
};

static struct request done_request(uint64_t id, int64_t sched_ns, int64_t first_ns)
{
	struct request r;
	memset(&r, 0, sizeof r);
	r.id = id;
	r.session = id;
	r.turn = 1;
	r.state = REQ_DONE;
	r.sched_ns = sched_ns;
	r.first_token_ns = first_ns;
	r.finish_ns = first_ns + 1000000000;
	r.prompt_tokens = 100;
	r.output_tokens = 11;
	r.prefill_node = -1;
	return r;
}

START_TEST(one_stat_entry_is_a_metric)
{
	const struct res_metrics *b = res_metrics_builtin();
	size_t extra = sizeof probe_rows / sizeof *probe_rows, groups = 0, it = 0;
	ck_assert_uint_eq(extra, 6);
	memcpy(stat_rows, b->row, b->n * sizeof *stat_rows);
	memcpy(stat_rows + b->n, probe_rows, sizeof probe_rows);
	struct res_metrics t = {stat_rows, b->n + extra};
	for (const struct res_stat *g; (g = res_stat_next(NULL, &it));)
		groups += g->per_token != RES_GAPS_KIND; /* the gaps have no column */
	const unsigned slot = MET_STAT_MAX - 1;

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	met_csv_header_with(f, &t);
	struct metrics mc;
	met_init_with(&mc, &t, 1.0, 0.1, f);
	ck_assert_uint_eq(mc.n_stat, groups + 1);
	struct request r = done_request(1, 100000000, 300000000),
		       q = done_request(2, 50000000, 450000000);
	ck_assert_int_eq(met_record(&mc, &r, 0), 0);
	ck_assert_int_eq(met_record(&mc, &q, 0), 0);
	q.id = 3;
	q.state = REQ_SHED;
	q.reason = "capacity";
	ck_assert_int_eq(met_record(&mc, &q, 0), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, ",output_tokens,ttft_s,tpot_s,e2e_s,queue_s,"));
	ck_assert_ptr_nonnull(strstr(text, ",probe_s,cached,"));
	char cell[64];
	snprintf(cell, sizeof cell, ",%.9f,0,", 0.2); /* then cached */
	ck_assert_msg(strstr(text, cell) != NULL, "%s", text);
	/* a shed request: no figure of any group */
	char shed[128] = "\n3,2,1,0,shed,capacity,0.000000000,100,11,";
	for (size_t k = 0; k <= groups; k++)
		strcat(shed, ",");
	strcat(shed, "0,");
	ck_assert_msg(strstr(text, shed) != NULL, "%s", text);
	free(text);

	struct met_summary s;
	memset(&s, 0, sizeof s);
	met_summarize(&mc, 10, &s);
	snprintf(s.policy, sizeof s.policy, "rr");
	ck_assert_uint_eq(s.stat[slot].n, 2);
	ck_assert_double_eq_tol(s.stat[slot].mean, 0.3, 1e-12);
	ck_assert_double_eq_tol(s.stat[slot].p90, 0.38, 1e-12);
	ck_assert_double_eq_tol(s.stat[slot].max, 0.4, 1e-12);
	ck_assert_uint_eq(s.ttft.n, 2); /* the built-in groups as before */
	met_free(&mc);

	cJSON *j = res_summary_json_with(&s, &t);
	char keys[1024] = "";
	for (const cJSON *c = j->child; c; c = c->next)
		snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s ", c->string);
	ck_assert_ptr_nonnull(strstr(keys, " ttft_s tpot_s itl_s e2e_s queue_s "));
	ck_assert_ptr_nonnull(strstr(keys, " probe_s percentiles "));
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "probe_s");
	ck_assert_int_eq(cJSON_GetArraySize(o), 6);
	ck_assert_double_eq_tol(cJSON_GetObjectItemCaseSensitive(o, "p99")->valuedouble, 0.398, 1e-12);
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "count")->valuedouble, 2);
	cJSON_Delete(j);

	text = printed(text_table, &t, &s);
	char line[128];
	snprintf(line, sizeof line, "%-20s %17s\n", "probe mean (ms)", "300.000");
	ck_assert_msg(strstr(text, line) != NULL, "%s", text);
	snprintf(line, sizeof line, "%-20s %17s\n", "probe p99 (ms)", "398.000");
	ck_assert_msg(strstr(text, line) != NULL, "%s", text);
	ck_assert_ptr_null(strstr(text, "probe p50"));
	free(text);
	char err[256];
	mkdir(DIR, 0777);
	ck_assert_int_eq(res_write_comparison_csv_with(DIR "/stat.csv", &t, &s, 1, err, sizeof err), 0);
	text = th_slurp(DIR "/stat.csv");
	ck_assert_ptr_nonnull(strstr(text, ",tokens_preempt_recomputed,probe_p99_s\nrr,"));
	ck_assert_ptr_nonnull(strstr(text, ",0.398\n"));
	free(text);
}
END_TEST

Suite *metric_table_suite(void)
{
	Suite *s = suite_create("metric_table");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, one_row_reaches_every_output);
	tcase_add_test(tc, one_row_is_diffed);
	tcase_add_test(tc, no_sample_is_na_everywhere);
	tcase_add_test(tc, verdict_material_only_beyond_noise);
	tcase_add_test(tc, one_row_is_a_sweep_column);
	tcase_add_test(tc, every_path_resolves_in_a_run);
	tcase_add_test(tc, rows_are_complete);
	tcase_add_test(tc, best_columns_marks_ties_and_skips_no_direction);
	tcase_add_test(tc, best_columns_compare_in_the_rows_own_units);
	tcase_add_test(tc, wide_tables_are_transposed);
	tcase_add_test(tc, table_marks_best_and_prints_deltas);
	tcase_add_test(tc, pd_rows_only_when_disaggregated);
	tcase_add_test(tc, pd_keys_in_summary_json);
	tcase_add_test(tc, pool_table_per_column_and_pool);
	tcase_add_test(tc, pool_and_node_rows_match_the_run);
	tcase_add_test(tc, stat_groups_match_requests_csv);
	tcase_add_test(tc, one_stat_entry_is_a_metric);
	suite_add_tcase(s, tc);
	return s;
}
