/* writer: JSON and table renderings of run summaries; atomic file writes. */
#include "results/writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metric_table.h"
#include "results/metrics.h"
#include "results/noise.h"
#include "base/afile.h"

/* A row of the client's view in a run without it: not written. */
static int row_absent(const struct res_metric *m, const struct met_summary *s)
{
	return (m->use & RES_M_IF_CLIENT) && !s->client;
}

/* Adds to o the figure of the row whose path is key (a top-level key). */
static void add_figure(cJSON *o, const struct res_metrics *t, const char *key,
		       const struct met_summary *s)
{
	for (const struct res_metric *m = t->row; m < t->row + t->n; m++)
		if (!strcmp(m->path, key)) {
			cJSON_AddNumberToObject(o, key, res_metric_value(m, s));
			return;
		}
}

/* Adds object key to o with the figure of every row under it ("key.name"),
 * in table order; returns the object. */
static cJSON *add_object(cJSON *o, const struct res_metrics *t, const char *key,
			 const struct met_summary *s)
{
	cJSON *obj = cJSON_AddObjectToObject(o, key);
	size_t klen = strlen(key);
	for (const struct res_metric *m = t->row; m < t->row + t->n; m++)
		if (!strncmp(m->path, key, klen) && m->path[klen] == '.' && !row_absent(m, s))
			cJSON_AddNumberToObject(obj, m->path + klen + 1, res_metric_value(m, s));
	return obj;
}

/* Adds the rows that the layout has not placed (a top-level key or object
 * it does not name) at the end, in table order. */
static void add_unplaced(cJSON *o, const struct res_metrics *t, const struct met_summary *s)
{
	for (const struct res_metric *m = t->row; m < t->row + t->n; m++) {
		if ((m->use & RES_M_ARRAY_LEN) || m->scope != RES_SCOPE_RUN || row_absent(m, s) ||
		    res_json_at(o, m->path))
			continue;
		const char *dot = strchr(m->path, '.');
		if (!dot) {
			cJSON_AddNumberToObject(o, m->path, res_metric_value(m, s));
			continue;
		}
		char key[128];
		snprintf(key, sizeof key, "%.*s", (int)(dot - m->path), m->path);
		cJSON *obj = cJSON_GetObjectItemCaseSensitive(o, key);
		if (!obj)
			obj = cJSON_AddObjectToObject(o, key);
		cJSON_AddNumberToObject(obj, dot + 1, res_metric_value(m, s));
	}
}

/* Adds the object of every statistics group (RES_STATS), in table order. */
static void add_stat_objects(cJSON *o, const struct res_metrics *t, const struct met_summary *s)
{
	for (const struct res_metric *m = t->row; m < t->row + t->n; m++)
		if (m->stat && !row_absent(m, s))
			add_object(o, t, m->stat->key, s);
}

/* Adds the array of scope's elements (pools[], nodes[]): each an object of
 * the rows of that scope, in table order, names as strings. */
static void add_scope_array(cJSON *o, const struct res_metrics *t, enum res_scope scope,
			    const struct met_summary *s)
{
	const char *key = res_scope_key(scope);
	size_t klen = strlen(key);
	cJSON *arr = cJSON_AddArrayToObject(o, key);
	for (size_t i = 0; arr && i < res_scope_count(scope, s); i++) {
		cJSON *e = cJSON_CreateObject();
		for (const struct res_metric *m = t->row; e && m < t->row + t->n; m++) {
			if (m->scope != scope)
				continue;
			const char *text = res_metric_text_at(m, s, i);
			if (text)
				cJSON_AddStringToObject(e, m->path + klen + 1, text);
			else
				cJSON_AddNumberToObject(e, m->path + klen + 1, res_metric_value_at(m, s, i));
		}
		cJSON_AddItemToArray(arr, e);
	}
}

/* The router's mechanisms the column ran with (docs/policies.md): the
 * column's family, product and KV path, then each mechanism key. */
static void add_mechanisms(cJSON *o, const struct met_summary *s)
{
	cJSON *me = cJSON_AddObjectToObject(o, "mechanisms");
	if (!me)
		return;
	cJSON_AddStringToObject(me, "family", mech_family_name(s->family));
	if (s->product)
		cJSON_AddStringToObject(me, "product", s->product);
	cJSON_AddStringToObject(me, "kv_transfer", mech_path_name(s->kv_transfer));
	mech_json(&s->mech, me);
}

static void add_stage_stats(cJSON *o, const char *key, const struct met_stats *st)
{
	cJSON *x = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(x, "mean", st->mean);
	cJSON_AddNumberToObject(x, "p50", st->p50);
	cJSON_AddNumberToObject(x, "p90", st->p90);
	cJSON_AddNumberToObject(x, "p99", st->p99);
	cJSON_AddNumberToObject(x, "max", st->max);
	cJSON_AddNumberToObject(x, "count", (double)st->n);
}

/* A benchmark's stages (docs/outputs.md, "Stages"): per stage its window,
 * its requests and their latency and throughput, as a benchmark client
 * reports each stage. Throughput is over the stage's span: from its
 * timer's start to its last request's end. */
static void add_stages(cJSON *o, const struct met_summary *s)
{
	if (!s->n_stages)
		return;
	cJSON *a = cJSON_AddArrayToObject(o, "stages");
	for (size_t k = 0; a && k < s->n_stages; k++) {
		const struct met_stage *st = &s->stages[k];
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(a, e)) {
			cJSON_Delete(e);
			return;
		}
		cJSON_AddNumberToObject(e, "stage", (double)k);
		cJSON_AddNumberToObject(e, "rate", st->rate);
		cJSON_AddNumberToObject(e, "duration_s", st->duration_s);
		cJSON_AddNumberToObject(e, "start_s", st->start_s);
		cJSON_AddNumberToObject(e, "end_s", st->end_s);
		cJSON_AddNumberToObject(e, "last_finish_s", st->last_finish_s);
		cJSON *rq = cJSON_AddObjectToObject(e, "requests");
		cJSON_AddNumberToObject(rq, "sent", (double)st->sent);
		cJSON_AddNumberToObject(rq, "ended", (double)st->arrived);
		cJSON_AddNumberToObject(rq, "completed", (double)st->completed);
		cJSON_AddNumberToObject(rq, "shed", (double)st->shed);
		cJSON_AddNumberToObject(rq, "failed", (double)st->failed);
		add_stage_stats(e, "ttft_s", &st->ttft);
		add_stage_stats(e, "tpot_s", &st->tpot);
		add_stage_stats(e, "e2e_s", &st->e2e);
		if (s->client) {
			add_stage_stats(e, "ttft_client_s", &st->ttft_client);
			add_stage_stats(e, "itl_client_s", &st->itl_client);
		}
		double span = st->last_finish_s - st->start_s;
		cJSON *tp = cJSON_AddObjectToObject(e, "throughput");
		cJSON_AddNumberToObject(tp, "requests_per_s", span > 0 ? st->completed / span : 0);
		cJSON_AddNumberToObject(tp, "input_tokens_per_s",
					span > 0 ? st->input_tokens / span : 0);
		cJSON_AddNumberToObject(tp, "output_tokens_per_s",
					span > 0 ? st->output_tokens / span : 0);
	}
}

/* summary.json "engine": the engine's version and the settings it ran with. */
static void add_engine(cJSON *o, const struct met_summary *s)
{
	const struct res_engine *e = &s->engine;
	cJSON *en = e->version ? cJSON_AddObjectToObject(o, "engine") : NULL;
	if (!en)
		return;
	cJSON_AddStringToObject(en, "version", e->version);
	cJSON_AddNumberToObject(en, "max_num_seqs", e->max_num_seqs);
	cJSON_AddNumberToObject(en, "max_num_batched_tokens", e->max_num_batched_tokens);
	cJSON_AddNumberToObject(en, "cuda_graph_max_tokens", e->cuda_graph_max_tokens);
	cJSON_AddBoolToObject(en, "custom_allreduce", e->custom_allreduce);
	cJSON_AddBoolToObject(en, "async_scheduling", e->async_scheduling);
	cJSON_AddNumberToObject(en, "step_ms", e->step_ms);
	cJSON_AddNumberToObject(en, "overhead_ms", e->overhead_ms);
	cJSON_AddNumberToObject(en, "overhead_per_seq_ms", e->overhead_per_seq_ms);
	cJSON_AddNumberToObject(en, "op_overhead_us", e->op_overhead_us);
}

cJSON *res_summary_json(const struct met_summary *s)
{
	return res_summary_json_with(s, NULL);
}

/* The layout (which top-level key goes where) is written here; every figure
 * but the reason counts comes from the metric table, the pools and nodes
 * arrays' too. */
cJSON *res_summary_json_with(const struct met_summary *s, const struct res_metrics *t)
{
	t = res_metrics_or_builtin(t);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "scenario", s->scenario);
	cJSON_AddStringToObject(o, "policy", s->policy);
	add_mechanisms(o, s);
	add_engine(o, s);
	add_figure(o, t, "seed", s);
	cJSON_AddStringToObject(o, "kvsim_version", s->version);
	add_figure(o, t, "sim_time_s", s);
	cJSON *rq = add_object(o, t, "requests", s);
	cJSON *reasons = cJSON_AddObjectToObject(rq, "shed_reasons");
	for (size_t i = 0; i < s->shed_why.n; i++)
		cJSON_AddNumberToObject(reasons, s->shed_why.reason[i], (double)s->shed_why.count[i]);
	reasons = cJSON_AddObjectToObject(rq, "failed_reasons");
	for (size_t i = 0; i < s->failed_why.n; i++)
		cJSON_AddNumberToObject(reasons, s->failed_why.reason[i],
					(double)s->failed_why.count[i]);
	add_stat_objects(o, t, s);
	cJSON_AddStringToObject(o, "percentiles",
				s->percentiles_exact ? "exact" : "histogram (0.1% bins) past 2,097,152 samples");
	add_object(o, t, "ttft_split", s);
	add_object(o, t, "tokens", s);
	add_figure(o, t, "prefix_hit_ratio", s);
	add_figure(o, t, "recompute_ratio", s);
	add_figure(o, t, "recompute_gpu_s", s);
	cJSON *mig = add_object(o, t, "migration", s);
	cJSON *why = mig ? cJSON_AddObjectToObject(mig, "by_reason") : NULL;
	for (int k = 0; why && k < MR_N; k++)
		cJSON_AddNumberToObject(why, mech_reason_name((enum mig_reason)k),
					(double)s->migration_by_reason[k]);
	add_object(o, t, "offload", s);
	add_object(o, t, "pd_transfer", s);
	add_figure(o, t, "preemptions", s);
	add_object(o, t, "throughput", s);
	add_object(o, t, "slo", s);
	cJSON_AddBoolToObject(o, "steady", !s->steadiness.unsteady);
	cJSON_AddStringToObject(o, "steady_reason", s->steadiness.reason);
	add_object(o, t, "steadiness", s);
	add_object(o, t, "energy", s);
	add_figure(o, t, "gpu_hours", s);
	add_figure(o, t, "cost_usd", s);
	add_figure(o, t, "cost_per_output_token_usd", s);
	add_figure(o, t, "gpu_hours_per_output_token", s);
	add_object(o, t, "scaling", s);
	add_scope_array(o, t, RES_SCOPE_POOL, s);
	add_scope_array(o, t, RES_SCOPE_NODE, s);
	add_object(o, t, "load_imbalance", s);
	add_object(o, t, "perf", s);
	add_unplaced(o, t, s);
	add_stages(o, s);
	if (s->warning[0]) {
		cJSON *w = cJSON_AddArrayToObject(o, "warnings");
		cJSON_AddItemToArray(w, cJSON_CreateString(s->warning));
	}
	return o;
}

/* A figure in milliseconds, null when there is none (NaN). */
static void add_ms(cJSON *o, const char *key, double seconds)
{
	if (isnan(seconds))
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, seconds * 1e3);
}

cJSON *res_bench_serving_json(const struct met_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	/* what vLLM's client sees when the scenario has a client block */
	const struct met_stats *ttft = s->client ? &s->stat[MET_TTFT_CLIENT] : &s->ttft,
			       *e2e = s->client ? &s->stat[MET_E2E_CLIENT] : &s->e2e;
	cJSON_AddStringToObject(o, "backend", "kvsim");
	cJSON_AddStringToObject(o, "kvsim_version", s->version);
	cJSON_AddStringToObject(o, "scenario", s->scenario);
	cJSON_AddStringToObject(o, "policy", s->policy);
	cJSON_AddNumberToObject(o, "seed", (double)s->seed);
	cJSON_AddStringToObject(o, "view", s->client ? "client" : "engine");
	cJSON_AddNumberToObject(o, "num_prompts", (double)s->arrived);
	cJSON_AddNumberToObject(o, "duration", s->sim_time_s);
	cJSON_AddNumberToObject(o, "completed", (double)s->completed);
	cJSON_AddNumberToObject(o, "failed", (double)(s->failed + s->shed));
	cJSON_AddNumberToObject(o, "total_input_tokens", (double)s->tokens.input);
	cJSON_AddNumberToObject(o, "total_output_tokens", (double)s->tokens.output);
	cJSON_AddNumberToObject(o, "request_throughput", s->requests_per_s);
	cJSON_AddNumberToObject(o, "request_goodput", s->goodput_rps);
	cJSON_AddNumberToObject(o, "output_throughput", s->output_tokens_per_s);
	cJSON_AddNumberToObject(o, "total_token_throughput", s->total_tokens_per_s);
	const struct {
		const char *name;
		const struct met_stats *st;
	} group[] = {{"ttft", ttft}, {"tpot", &s->tpot}, {"itl", &s->stat[MET_ITL]}, {"e2el", e2e}};
	for (size_t g = 0; g < sizeof group / sizeof group[0]; g++) {
		const struct met_stats *st = group[g].st;
		const double v[] = {st->mean, st->p50, st->p90, st->p99};
		static const char *const what[] = {"mean", "median", "p90", "p99"};
		for (size_t k = 0; k < 4; k++) {
			char key[32];
			snprintf(key, sizeof key, "%s_%s_ms", what[k], group[g].name);
			add_ms(o, key, st->n ? v[k] : NAN);
		}
	}
	return o;
}

int res_write_atomic(const char *path, const char *text, char *err, size_t errlen)
{
	struct afile_set set = {0};
	if (afile_set_write(&set, path, text, err, errlen)) {
		afile_set_discard(&set);
		return -1;
	}
	return afile_set_commit(&set, err, errlen);
}

/* text to path: into set, or at once when set is NULL. */
static int write_text(struct afile_set *set, const char *path, const char *text, char *err,
		      size_t errlen)
{
	return set ? afile_set_write(set, path, text, err, errlen)
		   : res_write_atomic(path, text, err, errlen);
}

int res_write_json_in(struct afile_set *set, const char *path, const cJSON *json, char *err,
		      size_t errlen)
{
	char *text = cJSON_Print(json);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	size_t n = strlen(text);
	char *withnl = malloc(n + 2);
	if (!withnl) {
		free(text);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	memcpy(withnl, text, n);
	withnl[n] = '\n';
	withnl[n + 1] = 0;
	free(text);
	int rc = write_text(set, path, withnl, err, errlen);
	free(withnl);
	return rc;
}

int res_write_json(const char *path, const cJSON *json, char *err, size_t errlen)
{
	return res_write_json_in(NULL, path, json, err, errlen);
}

int res_mkdirs(const char *dir, char *err, size_t errlen)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	for (char *p = buf + 1;; p++) {
		char c = *p;
		if (c != '/' && c != 0)
			continue;
		*p = 0;
		struct stat st;
		if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", buf, strerror(errno));
			return -1;
		}
		if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s: exists and is not a directory", buf);
			return -1;
		}
		*p = c;
		if (c == 0)
			break;
	}
	return 0;
}

double res_shown_value(const struct res_metric *m, const struct met_summary *s)
{
	char cell[64];
	if (isnan(res_metric_value(m, s)))
		return NAN;
	res_metric_cell(m, s, cell, sizeof cell);
	/* back in the figure's own unit (seconds, bytes), which the noise
	 * floors are in */
	return strtod(cell, NULL) * (m->unit > 0 ? m->unit : 1);
}

size_t res_best_columns(const struct res_metric *m, const struct met_summary *s, size_t n,
			unsigned char *best)
{
	memset(best, 0, n);
	if (m->better == RES_BETTER_NONE)
		return 0;
	int higher = m->better == RES_BETTER_HIGHER;
	double top = NAN;
	size_t with_value = 0, marked = 0;
	int latency = res_metric_is_latency(m);
	if (m->use & RES_M_NO_BEST) /* a total per run, or the simulator's own speed */
		return 0;
	for (size_t j = 0; j < n; j++) {
		double v = res_shown_value(m, &s[j]);
		if (isnan(v) || (latency && s[j].steadiness.unsteady))
			continue;
		with_value++;
		if (isnan(top) || (higher ? v > top : v < top))
			top = v;
	}
	/* the best figure and every one within one seed's noise of it
	 * (results/noise.h): 2,559 beside 2,560 completed is a tie */
	struct res_spread t = {top, top, top};
	for (size_t j = 0; j < n; j++) {
		double v = res_shown_value(m, &s[j]);
		struct res_spread x = {v, v, v};
		if (!isnan(v) && !(latency && s[j].steadiness.unsteady) &&
		    (v == top || !res_material(m, &t, &x))) {
			best[j] = 1;
			marked++;
		}
	}
	if (marked == with_value) { /* nothing beaten: all tie, or one value or none */
		memset(best, 0, n);
		return 0;
	}
	return marked;
}

void res_delta_pct(double v, double base, char *buf, size_t len)
{
	if (v == base) {
		snprintf(buf, len, "0%%");
		return;
	}
	if (isnan(v) || isnan(base) || base == 0) {
		snprintf(buf, len, "n/a");
		return;
	}
	double pct = (v - base) / fabs(base) * 100;
	snprintf(buf, len, fabs(pct) >= 9.95 ? "%+.0f%%" : "%+.1f%%", pct);
}

/* " (+12%)": res_delta_pct in parentheses. */
static void delta_text(double v, double base, char *buf, size_t len)
{
	char pct[24];
	res_delta_pct(v, base, pct, sizeof pct);
	snprintf(buf, len, " (%s)", pct);
}

/* Text columns: wide enough for a figure, or a figure and its change. */
enum { TEXT_COL = 17, TEXT_COL_DELTA = 28 };

static void print_header(FILE *f, const struct met_summary *s, size_t n, enum res_style style,
			 int baseline)
{
	int w = baseline >= 0 ? TEXT_COL_DELTA : TEXT_COL;
	if (style == RES_STYLE_TEXT)
		fprintf(f, "%-20s", "");
	else if (style == RES_STYLE_MD)
		fputs("| |", f);
	else
		fputs("<table>\n<tr><th></th>", f);
	for (size_t j = 0; j < n; j++) {
		char name[96];
		snprintf(name, sizeof name, "%s%s%s", s[j].policy,
			 s[j].steadiness.unsteady ? "*" : "", (int)j == baseline ? " (baseline)" : "");
		if (style == RES_STYLE_TEXT)
			fprintf(f, " %*s", w, name);
		else if (style == RES_STYLE_MD)
			fprintf(f, " %s |", name);
		else
			fprintf(f, "<th>%s</th>", name);
	}
	if (style == RES_STYLE_TEXT) {
		fputc('\n', f);
	} else if (style == RES_STYLE_MD) {
		fputs("\n|---|", f);
		for (size_t j = 0; j < n; j++)
			fputs("---:|", f);
		fputc('\n', f);
	} else {
		fputs("</tr>\n", f);
	}
}

/* One cell: the figure, bold when best, then its change. */
static void print_cell(FILE *f, enum res_style style, int width, const char *cell, int best,
		       const char *delta)
{
	static const char *const on[] = {"\033[1m", "**", "<strong>"},
				 *const off[] = {"\033[0m", "**", "</strong>"};
	if (style == RES_STYLE_TEXT)
		fprintf(f, " %*s", width - (int)(strlen(cell) + strlen(delta)), "");
	else if (style == RES_STYLE_MD)
		fputc(' ', f);
	else
		fputs("<td>", f);
	fprintf(f, "%s%s%s%s", best ? on[style] : "", cell, best ? off[style] : "", delta);
	fputs(style == RES_STYLE_TEXT ? "" : style == RES_STYLE_MD ? " |" : "</td>", f);
}

/* Under the table, one line per column that did not reach a steady state
 * (its header carries a "*"). */
static void print_unsteady(FILE *f, const struct met_summary *s, size_t n, enum res_style style)
{
	for (size_t j = 0; j < n; j++) {
		if (!s[j].steadiness.unsteady)
			continue;
		const char *r = s[j].steadiness.reason;
		if (style == RES_STYLE_HTML)
			fprintf(f, "<p class=\"unsteady\">* %s: not steady, %s; its latencies grow with "
				   "the horizon and are never named best</p>\n",
				s[j].policy, r);
		else
			fprintf(f, "%s* %s: not steady, %s; its latencies grow with the horizon and are "
				   "never named best\n",
				style == RES_STYLE_MD ? "\n" : "", s[j].policy, r);
	}
}

/* A transposed table's widths: the text's target line length, and the
 * most figure columns in one Markdown block. */
enum { WIDE_LINE = 100, WIDE_MD_COLS = 8 };

/* A row's label split for a column head: "TTFT p99 (ms)" -> "TTFT p99"
 * and "(ms)" (none without a trailing unit). */
static void head_lines(const char *name, char *top, size_t tlen, char *unit, size_t ulen)
{
	while (*name == ' ')
		name++;
	const char *open = strrchr(name, '(');
	size_t len = strlen(name);
	if (open && open > name && open[-1] == ' ' && name[len - 1] == ')') {
		snprintf(top, tlen, "%.*s", (int)(open - 1 - name), name);
		snprintf(unit, ulen, "%s", open);
	} else {
		snprintf(top, tlen, "%s", name);
		unit[0] = 0;
	}
}

/* Policies as rows, figures as columns, in blocks that fit WIDE_LINE
 * characters (text) or WIDE_MD_COLS columns (Markdown): the layout for
 * more columns than a terminal holds side by side. */
static void print_transposed(FILE *f, const struct res_metrics *t, const struct met_summary *s,
			     size_t n, enum res_style style, int baseline, int mark)
{
	const struct res_metric *rows[256];
	size_t nr = 0, it = 0;
	for (const struct res_metric *m; nr < 256 && (m = res_metric_next(t, RES_LIST_TABLE, &it));)
		if (res_metric_shown(m, s, n))
			rows[nr++] = m;
	int namew = 6;
	for (size_t j = 0; j < n; j++) {
		int w = (int)strlen(s[j].policy) + (s[j].steadiness.unsteady ? 1 : 0) +
			((int)j == baseline ? 11 : 0);
		namew = w > namew ? w : namew;
	}
	unsigned char best[256];
	char cell[64], delta[32], top[64], unit[32];
	for (size_t from = 0; from < nr;) {
		/* the block: as many columns as fit */
		int width[WIDE_LINE], used = namew;
		size_t to = from;
		while (to < nr && to - from < (style == RES_STYLE_MD ? WIDE_MD_COLS : WIDE_LINE / 8)) {
			head_lines(rows[to]->name, top, sizeof top, unit, sizeof unit);
			int w = (int)(strlen(top) > strlen(unit) ? strlen(top) : strlen(unit));
			for (size_t j = 0; j < n; j++) {
				res_metric_cell(rows[to], &s[j], cell, sizeof cell);
				delta[0] = 0;
				if (baseline >= 0 && (int)j != baseline && rows[to]->better != RES_BETTER_NONE)
					delta_text(res_shown_value(rows[to], &s[j]),
						   res_shown_value(rows[to], &s[baseline]), delta, sizeof delta);
				int c = (int)(strlen(cell) + strlen(delta));
				w = c > w ? c : w;
			}
			if (style == RES_STYLE_TEXT && to > from && used + 2 + w > WIDE_LINE)
				break;
			width[to - from] = w;
			used += 2 + w;
			to++;
		}
		if (from)
			fputc('\n', f);
		/* the heads: label, then unit (text, when the block has one);
		 * one line (Markdown) */
		int lines = 1;
		for (size_t k = from; style == RES_STYLE_TEXT && k < to; k++) {
			head_lines(rows[k]->name, top, sizeof top, unit, sizeof unit);
			lines = *unit ? 2 : lines;
		}
		for (int line = 0; line < lines; line++) {
			if (style == RES_STYLE_TEXT)
				fprintf(f, "%-*s", namew, line ? "" : "policy");
			else
				fputs("| policy |", f);
			for (size_t k = from; k < to; k++) {
				head_lines(rows[k]->name, top, sizeof top, unit, sizeof unit);
				if (style == RES_STYLE_TEXT)
					fprintf(f, "  %*s", width[k - from], line ? unit : top);
				else
					fprintf(f, " %s%s%s |", top, *unit ? " " : "", unit);
			}
			fputc('\n', f);
		}
		if (style == RES_STYLE_MD) {
			fputs("|---|", f);
			for (size_t k = from; k < to; k++)
				fputs("---:|", f);
			fputc('\n', f);
		}
		for (size_t j = 0; j < n; j++) {
			char name[96];
			snprintf(name, sizeof name, "%s%s%s", s[j].policy,
				 s[j].steadiness.unsteady ? "*" : "",
				 (int)j == baseline ? " (baseline)" : "");
			if (style == RES_STYLE_TEXT)
				fprintf(f, "%-*s", namew, name);
			else
				fprintf(f, "| %s |", name);
			for (size_t k = from; k < to; k++) {
				const struct res_metric *m = rows[k];
				int is_best = 0;
				if (mark && n <= sizeof best) {
					res_best_columns(m, s, n, best);
					is_best = best[j];
				}
				res_metric_cell(m, &s[j], cell, sizeof cell);
				delta[0] = 0;
				if (baseline >= 0 && (int)j != baseline && m->better != RES_BETTER_NONE)
					delta_text(res_shown_value(m, &s[j]), res_shown_value(m, &s[baseline]),
						   delta, sizeof delta);
				if (style == RES_STYLE_TEXT)
					fputc(' ', f);
				print_cell(f, style, width[k - from], cell, is_best, delta);
			}
			fputc('\n', f);
		}
		from = to;
	}
}

void res_print_table(FILE *f, const struct res_metrics *t, const struct met_summary *s, size_t n,
		     enum res_style style)
{
	res_print_table_with(f, t, s, n, style, NULL);
}

void res_print_table_with(FILE *f, const struct res_metrics *t, const struct met_summary *s,
			  size_t n, enum res_style style, const struct res_table_opts *opts)
{
	struct res_table_opts plain = {.mark_best = 0, .baseline = -1};
	if (!opts)
		opts = &plain;
	int baseline = opts->baseline >= 0 && (size_t)opts->baseline < n ? opts->baseline : -1;
	int width = baseline >= 0 ? TEXT_COL_DELTA : TEXT_COL;
	/* best: NULL when not marking (or out of memory: no marks) */
	unsigned char best_small[64], *best = NULL;
	if (opts->mark_best)
		best = n <= sizeof best_small ? best_small : malloc(n);
	char cell[64], delta[32];
	if (n > RES_WIDE_COLUMNS && style != RES_STYLE_HTML) {
		print_transposed(f, t, s, n, style, baseline, best != NULL);
		print_unsteady(f, s, n, style);
		if (best != best_small)
			free(best);
		return;
	}
	print_header(f, s, n, style, baseline);
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(t, RES_LIST_TABLE, &it));) {
		if (!res_metric_shown(m, s, n))
			continue;
		const char *label = m->name;
		if (style == RES_STYLE_TEXT) {
			fprintf(f, "%-20s", label);
		} else if (style == RES_STYLE_MD) {
			while (*label == ' ')
				label++;
			fprintf(f, "| %s |", label);
		} else {
			fprintf(f, "<tr><td>%s</td>", label);
		}
		if (best)
			res_best_columns(m, s, n, best);
		double base = baseline >= 0 ? res_shown_value(m, &s[baseline]) : 0;
		for (size_t j = 0; j < n; j++) {
			res_metric_cell(m, &s[j], cell, sizeof cell);
			delta[0] = 0;
			if (baseline >= 0 && (int)j != baseline && m->better != RES_BETTER_NONE)
				delta_text(res_shown_value(m, &s[j]), base, delta, sizeof delta);
			print_cell(f, style, width, cell, best && best[j], delta);
		}
		fputs(style == RES_STYLE_HTML ? "</tr>\n" : "\n", f);
	}
	if (style == RES_STYLE_HTML)
		fputs("</table>\n", f);
	print_unsteady(f, s, n, style);
	if (best != best_small)
		free(best);
}

void res_print_mechanisms(FILE *f, const struct met_summary *s, size_t n, enum res_style style)
{
	if (style == RES_STYLE_TEXT)
		fputs("\nmechanisms (router.<key> for every column, "
		      "router.policy_params.<policy>.<key> for one):\n",
		      f);
	else if (style == RES_STYLE_MD)
		fputs("\nMechanisms each column ran with (docs/policies.md):\n\n", f);
	else
		fputs("<p>Mechanisms each column ran with:</p>\n<ul>\n", f);
	for (size_t j = 0; j < n; j++) {
		char line[320], what[96];
		mech_describe(&s[j].mech, line, sizeof line);
		snprintf(what, sizeof what, "%s%s%s", mech_family_name(s[j].family),
			 s[j].product ? ", " : "", s[j].product ? s[j].product : "");
		const char *eng = s[j].engine.version ? s[j].engine.version : "-";
		if (style == RES_STYLE_TEXT)
			fprintf(f, "  %-17s %s; kv path %s; engine %s (%s)\n", s[j].policy, line,
				mech_path_name(s[j].kv_transfer), eng, what);
		else if (style == RES_STYLE_MD)
			fprintf(f, "- `%s` (%s): %s; kv path %s; engine %s\n", s[j].policy, what, line,
				mech_path_name(s[j].kv_transfer), eng);
		else
			fprintf(f, "<li><code>%s</code> (%s): %s; kv path %s; engine %s</li>\n", s[j].policy,
				what, line, mech_path_name(s[j].kv_transfer), eng);
	}
	if (style == RES_STYLE_HTML)
		fputs("</ul>\n", f);
}

/* Text the user named (a pool, a GPU) as one cell of style: a control
 * character as "\n", "\t", "\r" or "\xNN" in every style, so a row never
 * splits; Markdown's table and inline marks ('|', '\\', '`', '*', '[',
 * ']') escaped by a backslash and '<', '>', '&' as entities in Markdown
 * and HTML, so no name adds a column, formats text or lands as markup.
 * Written into buf (cut to fit); returns buf. */
static const char *escape_cell(const char *s, enum res_style style, char *buf, size_t len)
{
	size_t k = 0;
	for (; *s && k + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;
		const char *rep = NULL;
		char tmp[8];
		if (c < 0x20 || c == 0x7f) {
			if (c == '\n' || c == '\t' || c == '\r')
				snprintf(tmp, sizeof tmp, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
			else
				snprintf(tmp, sizeof tmp, "\\x%02x", c);
			rep = tmp;
		} else if (style != RES_STYLE_TEXT && (c == '<' || c == '>' || c == '&')) {
			rep = c == '<' ? "&lt;" : c == '>' ? "&gt;" : "&amp;";
		} else if (style == RES_STYLE_MD && strchr("|\\`*[]", c)) {
			snprintf(tmp, sizeof tmp, "\\%c", c);
			rep = tmp;
		}
		if (rep) {
			size_t r = strlen(rep);
			memcpy(buf + k, rep, r);
			k += r;
		} else {
			buf[k++] = (char)c;
		}
	}
	buf[k] = 0;
	return buf;
}

static void put_cell_text(FILE *f, const char *s, enum res_style style)
{
	char buf[512];
	fputs(escape_cell(s, style, buf, sizeof buf), f);
}

void res_print_pools(FILE *f, const struct met_summary *s, size_t n, enum res_style style)
{
	size_t wpol = strlen("policy"), wpool = strlen("pool"), wgpu = strlen("GPU x tp");
	int several = 0;
	char gpu[96];
	for (size_t j = 0; j < n; j++) {
		several |= s[j].n_pools > 1;
		if (strlen(s[j].policy) > wpol)
			wpol = strlen(s[j].policy);
		for (size_t k = 0; k < s[j].n_pools; k++) {
			const struct met_pool *p = &s[j].pools[k];
			char name[512];
			snprintf(gpu, sizeof gpu, "%s x %d", p->gpu, p->tp);
			escape_cell(p->name, style, name, sizeof name);
			if (strlen(name) > wpool)
				wpool = strlen(name);
			escape_cell(gpu, style, name, sizeof name);
			if (strlen(name) > wgpu)
				wgpu = strlen(name);
		}
	}
	if (!several)
		return;
	static const char *const head[] = {"policy", "pool", "role", "GPU x tp", "nodes",
					   "busy ratio", "mean KV use", "requests"};
	/* what the columns are, in the line over the table */
	static const char *const note =
	    "busy ratio and mean KV use: means over the pool's nodes; requests: those its nodes "
	    "ran, a request handed from prefill to decode in both pools";
	if (style == RES_STYLE_TEXT) {
		fprintf(f, "\npools (%s):\n", note);
		fprintf(f, "  %-*s %-*s %-7s %-*s %5s %10s %11s %9s\n", (int)wpol, head[0],
			(int)wpool, head[1], head[2], (int)wgpu, head[3], head[4], head[5], head[6],
			head[7]);
	} else if (style == RES_STYLE_MD) {
		fprintf(f, "\nPools (%s):\n\n|", note);
		for (size_t c = 0; c < 8; c++)
			fprintf(f, " %s |", head[c]);
		fputs("\n|---|---|---|---|---:|---:|---:|---:|\n", f);
	} else {
		fprintf(f, "<p>Pools (%s):</p>\n<table>\n<tr>", note);
		for (size_t c = 0; c < 8; c++)
			fprintf(f, "<th>%s</th>", head[c]);
		fputs("</tr>\n", f);
	}
	for (size_t j = 0; j < n; j++)
		for (size_t k = 0; k < s[j].n_pools; k++) {
			const struct met_pool *p = &s[j].pools[k];
			char nodes[16], busy[32], kv[32], req[24];
			snprintf(gpu, sizeof gpu, "%s x %d", p->gpu, p->tp);
			snprintf(nodes, sizeof nodes, "%d", p->nodes);
			snprintf(busy, sizeof busy, "%.3f", p->busy_ratio);
			snprintf(kv, sizeof kv, "%.3f", p->mean_kv_util);
			snprintf(req, sizeof req, "%llu", (unsigned long long)p->requests);
			if (style == RES_STYLE_TEXT) {
				char name[512], g[512];
				fprintf(f, "  %-*s %-*s %-7s %-*s %5s %10s %11s %9s\n", (int)wpol,
					s[j].policy, (int)wpool, escape_cell(p->name, style, name, sizeof name),
					p->role, (int)wgpu, escape_cell(gpu, style, g, sizeof g), nodes,
					busy, kv, req);
				continue;
			}
			const char *cells[] = {s[j].policy, p->name, p->role, gpu,
					       nodes,	    busy,    kv,      req};
			fputs(style == RES_STYLE_MD ? "|" : "<tr>", f);
			for (size_t c = 0; c < 8; c++) {
				fputs(style == RES_STYLE_MD ? " " : "<td>", f);
				put_cell_text(f, cells[c], style);
				fputs(style == RES_STYLE_MD ? " |" : "</td>", f);
			}
			fputs(style == RES_STYLE_MD ? "\n" : "</tr>\n", f);
		}
	if (style == RES_STYLE_HTML)
		fputs("</table>\n", f);
}

void res_print_comparison_with(FILE *f, const struct met_summary *s, size_t n,
			       enum res_style style, const struct res_table_opts *opts)
{
	res_print_table_with(f, NULL, s, n, style, opts);
	res_print_pools(f, s, n, style);
	res_print_mechanisms(f, s, n, style);
}

void res_print_comparison(FILE *f, const struct met_summary *s, size_t n)
{
	res_print_comparison_with(f, s, n, RES_STYLE_TEXT, NULL);
}

void res_print_summary(FILE *f, const struct met_summary *s)
{
	fprintf(f, "scenario %s, policy %s, seed %llu, kvsim %s\n", s->scenario, s->policy,
		(unsigned long long)s->seed, s->version);
	res_print_comparison(f, s, 1);
}

/* comparison.csv's text, or NULL when out of memory. Caller frees. */
static char *comparison_csv(const struct res_metrics *t, const struct met_summary *s, size_t n)
{
	t = res_metrics_or_builtin(t);
	/* A cell is at most 24 characters, a column name at most 64. */
	size_t cap = 64 + (n + 1) * (64 + t->n * 66), len = 0;
	char *buf = malloc(cap), cell[64];
	if (!buf)
		return NULL;
	len += (size_t)snprintf(buf + len, cap - len, "policy");
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(t, RES_LIST_CSV, &it));)
		if (res_metric_shown(m, s, n))
			len += (size_t)snprintf(buf + len, cap - len, ",%.64s", m->csv);
	len += (size_t)snprintf(buf + len, cap - len, "\n");
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(buf + len, cap - len, "%.48s", s[i].policy);
		it = 0;
		for (const struct res_metric *m; (m = res_metric_next(t, RES_LIST_CSV, &it));) {
			if (!res_metric_shown(m, s, n))
				continue;
			res_metric_csv_cell(m, &s[i], cell, sizeof cell);
			len += (size_t)snprintf(buf + len, cap - len, ",%s", cell);
		}
		len += (size_t)snprintf(buf + len, cap - len, "\n");
	}
	return buf;
}

int res_write_comparison_csv_in(struct afile_set *set, const char *path,
				const struct res_metrics *t, const struct met_summary *s, size_t n,
				char *err, size_t errlen)
{
	char *buf = comparison_csv(t, s, n);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	int rc = write_text(set, path, buf, err, errlen);
	free(buf);
	return rc;
}

void res_print_comparison_csv(FILE *f, const struct met_summary *s, size_t n)
{
	char *buf = comparison_csv(NULL, s, n);
	if (buf)
		fputs(buf, f);
	free(buf);
}

int res_write_comparison_csv_with(const char *path, const struct res_metrics *t,
				  const struct met_summary *s, size_t n, char *err, size_t errlen)
{
	return res_write_comparison_csv_in(NULL, path, t, s, n, err, errlen);
}

int res_write_comparison_csv(const char *path, const struct met_summary *s, size_t n, char *err,
			     size_t errlen)
{
	return res_write_comparison_csv_with(path, NULL, s, n, err, errlen);
}
