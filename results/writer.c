/* writer: JSON and table renderings of run summaries; atomic file writes. */
#include "results/writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"

static void add_stats(cJSON *o, const char *key, const struct met_stats *st)
{
	cJSON *s = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(s, "mean", st->mean);
	cJSON_AddNumberToObject(s, "p50", st->p50);
	cJSON_AddNumberToObject(s, "p90", st->p90);
	cJSON_AddNumberToObject(s, "p99", st->p99);
	cJSON_AddNumberToObject(s, "max", st->max);
	cJSON_AddNumberToObject(s, "count", (double)st->n);
}

cJSON *res_summary_json(const struct met_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "scenario", s->scenario);
	cJSON_AddStringToObject(o, "policy", s->policy);
	cJSON_AddNumberToObject(o, "seed", (double)s->seed);
	cJSON_AddStringToObject(o, "kvsim_version", s->version);
	cJSON_AddNumberToObject(o, "sim_time_s", s->sim_time_s);
	cJSON *rq = cJSON_AddObjectToObject(o, "requests");
	cJSON_AddNumberToObject(rq, "arrived", (double)s->arrived);
	cJSON_AddNumberToObject(rq, "completed", (double)s->completed);
	cJSON_AddNumberToObject(rq, "shed", (double)s->shed);
	cJSON_AddNumberToObject(rq, "failed", (double)s->failed);
	cJSON *reasons = cJSON_AddObjectToObject(rq, "shed_reasons");
	for (size_t i = 0; i < s->shed_why.n; i++)
		cJSON_AddNumberToObject(reasons, s->shed_why.reason[i], (double)s->shed_why.count[i]);
	reasons = cJSON_AddObjectToObject(rq, "failed_reasons");
	for (size_t i = 0; i < s->failed_why.n; i++)
		cJSON_AddNumberToObject(reasons, s->failed_why.reason[i],
					(double)s->failed_why.count[i]);
	add_stats(o, "ttft_s", &s->ttft);
	add_stats(o, "tpot_s", &s->tpot);
	add_stats(o, "e2e_s", &s->e2e);
	add_stats(o, "queue_s", &s->queue);
	cJSON_AddStringToObject(o, "percentiles",
				s->percentiles_exact ? "exact" : "histogram (0.1% bins) past 2,097,152 samples");
	cJSON *t = cJSON_AddObjectToObject(o, "tokens");
	cJSON_AddNumberToObject(t, "input", (double)s->tokens.input);
	cJSON_AddNumberToObject(t, "output", (double)s->tokens.output);
	cJSON_AddNumberToObject(t, "cached", (double)s->tokens.cached);
	cJSON_AddNumberToObject(t, "reloaded", (double)s->tokens.reloaded);
	cJSON_AddNumberToObject(t, "migrated", (double)s->tokens.migrated);
	cJSON_AddNumberToObject(t, "recomputed", (double)s->tokens.recomputed);
	cJSON_AddNumberToObject(t, "fresh", (double)s->tokens.fresh);
	cJSON_AddNumberToObject(t, "preempt_recomputed", (double)s->tokens.preempt_recomputed);
	cJSON_AddNumberToObject(o, "prefix_hit_ratio", s->prefix_hit_ratio);
	cJSON_AddNumberToObject(o, "recompute_ratio", s->recompute_ratio);
	cJSON_AddNumberToObject(o, "recompute_gpu_s", s->recompute_gpu_s);
	cJSON *mg = cJSON_AddObjectToObject(o, "migration");
	cJSON_AddNumberToObject(mg, "count", (double)s->migration_count);
	cJSON_AddNumberToObject(mg, "bytes", s->migration_bytes);
	cJSON_AddNumberToObject(mg, "seconds", s->migration_s);
	cJSON *of = cJSON_AddObjectToObject(o, "offload");
	cJSON_AddNumberToObject(of, "bytes_out", s->offload_bytes_out);
	cJSON_AddNumberToObject(of, "bytes_in", s->offload_bytes_in);
	cJSON_AddNumberToObject(o, "preemptions", (double)s->preemptions);
	cJSON *th = cJSON_AddObjectToObject(o, "throughput");
	cJSON_AddNumberToObject(th, "requests_per_s", s->requests_per_s);
	cJSON_AddNumberToObject(th, "output_tokens_per_s", s->output_tokens_per_s);
	cJSON *slo = cJSON_AddObjectToObject(o, "slo");
	cJSON_AddNumberToObject(slo, "ttft_p99_s", s->slo_ttft_s);
	cJSON_AddNumberToObject(slo, "tpot_p99_s", s->slo_tpot_s);
	cJSON_AddNumberToObject(slo, "attainment", s->slo_attainment);
	cJSON_AddNumberToObject(slo, "goodput_rps", s->goodput_rps);
	cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");
	for (size_t i = 0; i < s->n_nodes; i++) {
		const struct met_node *n = &s->nodes[i];
		cJSON *no = cJSON_CreateObject();
		cJSON_AddNumberToObject(no, "id", n->id);
		cJSON_AddNumberToObject(no, "busy_ratio", n->busy_ratio);
		cJSON_AddNumberToObject(no, "mean_kv_util", n->mean_kv_util);
		cJSON_AddNumberToObject(no, "peak_kv_util", n->peak_kv_util);
		cJSON_AddNumberToObject(no, "requests", (double)n->requests);
		cJSON_AddNumberToObject(no, "throttled_s", n->throttled_s);
		cJSON_AddItemToArray(nodes, no);
	}
	cJSON *li = cJSON_AddObjectToObject(o, "load_imbalance");
	cJSON_AddNumberToObject(li, "max_over_mean", s->imbalance_max_over_mean);
	cJSON_AddNumberToObject(li, "jain", s->imbalance_jain);
	cJSON *pf = cJSON_AddObjectToObject(o, "perf");
	cJSON_AddNumberToObject(pf, "events", (double)s->events);
	cJSON_AddNumberToObject(pf, "wall_s", s->wall_s);
	cJSON_AddNumberToObject(pf, "requests_per_wall_s", s->requests_per_wall_s);
	cJSON_AddNumberToObject(pf, "peak_rss_bytes", (double)s->peak_rss_bytes);
	return o;
}

int res_write_atomic(const char *path, const char *text, char *err, size_t errlen)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	size_t len = strlen(text);
	int bad = fwrite(text, 1, len, f) != len;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int res_write_json(const char *path, const cJSON *json, char *err, size_t errlen)
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
	int rc = res_write_atomic(path, withnl, err, errlen);
	free(withnl);
	return rc;
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

/* One table row: a label and one formatted cell per summary. */
typedef void (*cell_fn)(char *buf, size_t len, const struct met_summary *s);

#define CELL(fname, fmt, expr)                                                                     \
	static void fname(char *b, size_t l, const struct met_summary *s)                          \
	{                                                                                          \
		snprintf(b, l, fmt, expr);                                                         \
	}
CELL(c_nodes, "%zu", s->n_nodes)
CELL(c_arrived, "%llu", (unsigned long long)s->arrived)
CELL(c_completed, "%llu", (unsigned long long)s->completed)
CELL(c_shed, "%llu", (unsigned long long)s->shed)
CELL(c_failed, "%llu", (unsigned long long)s->failed)
CELL(c_ttft50, "%.3f", s->ttft.p50)
CELL(c_ttft99, "%.3f", s->ttft.p99)
CELL(c_tpot50, "%.4f", s->tpot.p50)
CELL(c_tpot99, "%.4f", s->tpot.p99)
CELL(c_e2e99, "%.2f", s->e2e.p99)
CELL(c_queue99, "%.3f", s->queue.p99)
CELL(c_hit, "%.3f", s->prefix_hit_ratio)
CELL(c_recomp, "%.3f", s->recompute_ratio)
CELL(c_recomp_s, "%.1f", s->recompute_gpu_s)
CELL(c_migc, "%llu", (unsigned long long)s->migration_count)
CELL(c_migb, "%.2f", s->migration_bytes / 1e9)
CELL(c_preempt, "%llu", (unsigned long long)s->preemptions)
CELL(c_rps, "%.2f", s->requests_per_s)
CELL(c_tps, "%.0f", s->output_tokens_per_s)
CELL(c_att, "%.3f", s->slo_attainment)
CELL(c_good, "%.2f", s->goodput_rps)
CELL(c_imb, "%.2f", s->imbalance_max_over_mean)
CELL(c_jain, "%.3f", s->imbalance_jain)
CELL(c_sim, "%.1f", s->sim_time_s)
CELL(c_wall, "%.2f", s->wall_s)
#undef CELL

static const struct {
	const char *label;
	cell_fn fn;
} rows[] = {
    {"requests arrived", c_arrived},
    {"  completed", c_completed},
    {"  shed", c_shed},
    {"  failed", c_failed},
    {"TTFT p50 (s)", c_ttft50},
    {"TTFT p99 (s)", c_ttft99},
    {"TPOT p50 (s)", c_tpot50},
    {"TPOT p99 (s)", c_tpot99},
    {"E2E p99 (s)", c_e2e99},
    {"queue p99 (s)", c_queue99},
    {"prefix hit ratio", c_hit},
    {"recompute ratio", c_recomp},
    {"recompute GPU-s", c_recomp_s},
    {"migrations", c_migc},
    {"migrated GB", c_migb},
    {"preemptions", c_preempt},
    {"throughput (req/s)", c_rps},
    {"output tokens/s", c_tps},
    {"SLO attainment", c_att},
    {"goodput (req/s)", c_good},
    {"load max/mean", c_imb},
    {"load Jain index", c_jain},
    {"nodes", c_nodes},
    {"simulated s", c_sim},
    {"wall s", c_wall},
};

void res_print_comparison(FILE *f, const struct met_summary *s, size_t n)
{
	char cell[64];
	fprintf(f, "%-20s", "");
	for (size_t j = 0; j < n; j++)
		fprintf(f, " %17s", s[j].policy);
	fputc('\n', f);
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		fprintf(f, "%-20s", rows[i].label);
		for (size_t j = 0; j < n; j++) {
			rows[i].fn(cell, sizeof cell, &s[j]);
			fprintf(f, " %17s", cell);
		}
		fputc('\n', f);
	}
}

void res_print_comparison_md(FILE *f, const struct met_summary *s, size_t n)
{
	char cell[64];
	fputs("| |", f);
	for (size_t j = 0; j < n; j++)
		fprintf(f, " %s |", s[j].policy);
	fputs("\n|---|", f);
	for (size_t j = 0; j < n; j++)
		fputs("---:|", f);
	fputc('\n', f);
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		const char *label = rows[i].label;
		while (*label == ' ')
			label++;
		fprintf(f, "| %s |", label);
		for (size_t j = 0; j < n; j++) {
			rows[i].fn(cell, sizeof cell, &s[j]);
			fprintf(f, " %s |", cell);
		}
		fputc('\n', f);
	}
}

void res_print_comparison_html(FILE *f, const struct met_summary *s, size_t n)
{
	char cell[64];
	fputs("<table>\n<tr><th></th>", f);
	for (size_t j = 0; j < n; j++)
		fprintf(f, "<th>%s</th>", s[j].policy);
	fputs("</tr>\n", f);
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		fprintf(f, "<tr><td>%s</td>", rows[i].label);
		for (size_t j = 0; j < n; j++) {
			rows[i].fn(cell, sizeof cell, &s[j]);
			fprintf(f, "<td>%s</td>", cell);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

void res_print_summary(FILE *f, const struct met_summary *s)
{
	fprintf(f, "scenario %s, policy %s, seed %llu, kvsim %s\n", s->scenario, s->policy,
		(unsigned long long)s->seed, s->version);
	res_print_comparison(f, s, 1);
}

int res_write_comparison_csv(const char *path, const struct met_summary *s, size_t n, char *err,
			     size_t errlen)
{
	size_t cap = 1024 + n * 1024, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	len += (size_t)snprintf(buf + len, cap - len,
				"policy,arrived,completed,shed,failed,ttft_p50_s,ttft_p99_s,tpot_p50_s,"
				"tpot_p99_s,e2e_p99_s,queue_p99_s,prefix_hit_ratio,recompute_ratio,"
				"recompute_gpu_s,migrations,migrated_bytes,preemptions,requests_per_s,"
				"output_tokens_per_s,slo_attainment,goodput_rps,load_max_over_mean,"
				"load_jain,tokens_input,tokens_cached,tokens_reloaded,tokens_migrated,"
				"tokens_recomputed,tokens_fresh,tokens_preempt_recomputed\n");
	for (size_t i = 0; i < n; i++) {
		const struct met_summary *m = &s[i];
		const struct met_tokens *t = &m->tokens;
		len += (size_t)snprintf(
		    buf + len, cap - len,
		    "%s,%llu,%llu,%llu,%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%llu,%.9g,%llu,"
		    "%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
		    m->policy, (unsigned long long)m->arrived, (unsigned long long)m->completed,
		    (unsigned long long)m->shed, (unsigned long long)m->failed, m->ttft.p50,
		    m->ttft.p99, m->tpot.p50, m->tpot.p99, m->e2e.p99, m->queue.p99,
		    m->prefix_hit_ratio, m->recompute_ratio, m->recompute_gpu_s,
		    (unsigned long long)m->migration_count, m->migration_bytes,
		    (unsigned long long)m->preemptions, m->requests_per_s, m->output_tokens_per_s,
		    m->slo_attainment, m->goodput_rps, m->imbalance_max_over_mean, m->imbalance_jain,
		    (unsigned long long)t->input, (unsigned long long)t->cached,
		    (unsigned long long)t->reloaded, (unsigned long long)t->migrated,
		    (unsigned long long)t->recomputed, (unsigned long long)t->fresh,
		    (unsigned long long)t->preempt_recomputed);
	}
	int rc = res_write_atomic(path, buf, err, errlen);
	free(buf);
	return rc;
}
