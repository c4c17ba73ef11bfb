/* report: gnuplot figures and Markdown/HTML reports of a comparison. */
#include "results/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "results/scale_fig.h"
#include "results/attribution.h"
#include "results/gnuplot.h"
#include "results/latency_fig.h"
#include "results/verdict.h"
#include "results/writer.h"
#include "base/afile.h"
#include "config/cfg.h"
#include "config/config.h"
#include "base/embedded.h"

/* plot/ttft_split.gp, plot/pools.gp and plot/scaling.gp, compiled in by
 * the Makefile's EMBED list like the scripts base/embedded.h declares. */
extern const char kv_plot_ttft_split[];
extern const char kv_plot_pools[];
extern const char kv_plot_scaling[];
extern const char kv_plot_cluster[];

/* Scans the CSV file path: its header must name every column of cols (n of
 * them), and each of their cells be empty or a number. *rows gets the data
 * rows, *positive those with a number > 0 in one of cols. 0, or 2 with err
 * naming the file (and line) when it is missing or damaged. O(file). */
static int csv_scan(const char *path, const char *const *cols, int n, long *rows, long *positive,
		    char *err, size_t errlen)
{
	enum { MAX_COLS = 8, MAX_FIELDS = 64 };
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s (expected a 'kvsim compare' output folder)", path,
			 strerror(errno));
		return 2;
	}
	char *line = NULL, *field[MAX_FIELDS];
	size_t cap = 0;
	int at[MAX_COLS], rc = 2;
	long lineno = 1;
	*rows = *positive = 0;
	if (getline(&line, &cap, f) < 0) {
		snprintf(err, errlen, "%s: empty (expected a CSV header)", path);
		goto out;
	}
	for (int pass = 0;; pass++) {
		line[strcspn(line, "\r\n")] = 0;
		int nf = 0;
		for (char *p = line; nf < MAX_FIELDS; p++) {
			field[nf++] = p;
			p = strchr(p, ',');
			if (!p)
				break;
			*p = 0;
		}
		if (pass == 0) {
			for (int c = 0; c < n; c++) {
				at[c] = -1;
				for (int k = 0; k < nf && at[c] < 0; k++)
					if (!strcmp(field[k], cols[c]))
						at[c] = k;
				if (at[c] < 0) {
					snprintf(err, errlen, "%s:1: no column \"%s\" in the header",
						 path, cols[c]);
					goto out;
				}
			}
		} else {
			int any = 0;
			for (int c = 0; c < n; c++) {
				char *end;
				if (at[c] >= nf) {
					snprintf(err, errlen, "%s:%ld: expected a \"%s\" field (column "
							      "%d), found %d fields",
						 path, lineno, cols[c], at[c] + 1, nf);
					goto out;
				}
				const char *v = field[at[c]];
				if (!*v)
					continue;
				double x = strtod(v, &end);
				if (*end || end == v) {
					snprintf(err, errlen, "%s:%ld: %s: expected a number, got "
							      "\"%.40s\"",
						 path, lineno, cols[c], v);
					goto out;
				}
				any |= x > 0;
			}
			(*rows)++;
			*positive += any;
		}
		if (getline(&line, &cap, f) < 0)
			break;
		lineno++;
	}
	rc = 0;
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = 3;
	}
out:
	free(line);
	fclose(f);
	return rc;
}

static int figure(struct report_figs *figs, const char *dir, const char *name,
		  const char *caption, const char *script, const char *const *vars, char *err,
		  size_t errlen)
{
	/* the PNG and the SVG drawn at once, by two gnuplots */
	static const char *const fmts[] = {"png", "svg"};
	char out[2][4400], err2[512];
	struct gp_job jobs[2];
	int started = 0, rc = 0;
	for (int i = 0; i < 2 && !rc; i++) {
		snprintf(out[i], sizeof out[i], "%s/plots/%s.%s", dir, name, fmts[i]);
		rc = gnuplot_start(&jobs[i], script, vars, out[i], fmts[i], err, errlen);
		started += !rc;
	}
	for (int i = 0; i < started; i++) {
		int r = gnuplot_finish(&jobs[i], rc ? err2 : err, rc ? sizeof err2 : errlen);
		rc = rc ? rc : r;
	}
	if (rc)
		return rc;
	if (figs->n < REPORT_MAX_FIGS) {
		snprintf(figs->name[figs->n], sizeof figs->name[0], "%s", name);
		snprintf(figs->caption[figs->n], sizeof figs->caption[0], "%s", caption);
		figs->fold[figs->n] = (unsigned char)figs->folding;
		figs->n++;
	}
	return 0;
}

int res_read_policies(const char *dir, char names[][48], size_t max, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/comparison.csv", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s (expected a 'kvsim compare' output folder)", path,
			 strerror(errno));
		return -1;
	}
	char line[4096];
	int n = 0;
	if (!fgets(line, sizeof line, f) || strncmp(line, "policy,", 7)) {
		fclose(f);
		snprintf(err, errlen, "%s: expected a header starting with \"policy,\"", path);
		return -1;
	}
	while (fgets(line, sizeof line, f) && (size_t)n < max) {
		char *comma = strchr(line, ',');
		if (!comma || comma == line || comma - line >= 48)
			continue;
		*comma = 0;
		memcpy(names[n], line, (size_t)(comma - line) + 1);
		n++;
	}
	fclose(f);
	if (n == 0)
		snprintf(err, errlen, "%s: no policies", path);
	return n ? n : -1;
}

int res_plot_latency_load(const char *dir, const char *x, const char *series, long rows,
			  char *err, size_t errlen)
{
	char dat[4200];
	snprintf(dat, sizeof dat, "%s/plots/latency_load.dat", dir);
	const char *vars[] = {"csv",	  dat,	  "x",	      x,
			      "nodata",	  rows ? "" : "no point of the sweep finished",
			      "policies", series, "slo_ttft", "0", "slo_tpot", "0", NULL};
	struct report_figs figs = {0};
	return figure(&figs, dir, "latency_load",
		      "Tail latency against load, a series per combination of the other varied "
		      "values (each point the median over the seeds): TTFT p99 (filled dots, left "
		      "axis) and TPOT p99 (dotted, open squares, right axis). Where a curve turns "
		      "upward the series saturates; a curve that turns further right carries more "
		      "load.",
		      kv_plot_latency_load, vars, err, errlen);
}

int res_plot_capacity(const char *dir, const char *x, const char *policies, double slo_ttft_s,
		      double slo_tpot_s, struct report_figs *figs, char *err, size_t errlen)
{
	char dat[4200], st[32], sp[32];
	snprintf(dat, sizeof dat, "%s/plots/latency_load.dat", dir);
	snprintf(st, sizeof st, "%.9g", slo_ttft_s);
	snprintf(sp, sizeof sp, "%.9g", slo_tpot_s);
	const char *vars[] = {"csv",      dat, "x",        x,  "nodata", "",
			      "policies", policies, "slo_ttft", st, "slo_tpot", sp, NULL};
	return figure(figs, dir, "latency_load",
		      "Tail latency against offered load, a series per policy: TTFT p99 (filled "
		      "dots, left axis) and TPOT p99 (dotted, open squares, right axis), the SLOs "
		      "as horizontal lines; a circle marks each policy's capacity, the highest "
		      "load that meets the SLOs while steady.",
		      kv_plot_latency_load, vars, err, errlen);
}

/* What each policy's files hold, scanned before anything is drawn: damaged
 * input stops the figures before the first is written. */
struct plot_data {
	long ttft, tpot; /* requests with a TTFT, a TPOT > 0 */
	long samples;    /* timeseries rows */
};

/* The policies' requests.csv and timeseries.csv into d[0..n). 0, 2 or 3. */
static int scan_policies(const char *dir, const char *const *policies, size_t n,
			 struct plot_data *d, char *err, size_t errlen)
{
	static const char *const ttft[] = {"ttft_s"}, *const tpot[] = {"tpot_s"};
	static const char *const ts_cols[] = {"kv_util", "queued", "node", "time_s"};
	char path[4200];
	long rows, unused;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof path, "%s/%s/requests.csv", dir, policies[i]);
		rc = csv_scan(path, ttft, 1, &rows, &d[i].ttft, err, errlen);
		if (!rc)
			rc = csv_scan(path, tpot, 1, &rows, &d[i].tpot, err, errlen);
		snprintf(path, sizeof path, "%s/%s/timeseries.csv", dir, policies[i]);
		if (!rc)
			rc = csv_scan(path, ts_cols, 4, &d[i].samples, &unused, err, errlen);
	}
	return rc;
}

/* The tail of metric over the policies: those with a value > 0 drawn, each
 * with its p99 marked and the SLO as a line, the others named in the title;
 * a note alone when none has one. The points go to plots/<metric>_cdf.dat
 * first (res_write_ccdf). 0, 2 or 3. */
static int latency_cdf(struct report_figs *figs, const char *dir, const char *const *policies,
		       size_t n, const struct plot_data *d, int tpot, const char *none, char *err,
		       size_t errlen)
{
	char drawn[4096] = "", empty[4096] = "", data[4400], p99s[4096] = "", slo_text[32];
	const char *metric = tpot ? "tpot_s" : "ttft_s";
	double *p99 = malloc((n ? n : 1) * sizeof *p99), slo = 0;
	size_t nd = 0;
	int rc = p99 ? 0 : 3;
	if (rc)
		snprintf(err, errlen, "out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		int has = tpot ? d[i].tpot : d[i].ttft;
		char *list = has ? drawn : empty;
		size_t len = strlen(list);
		snprintf(list + len, sizeof drawn - len, "%s%s", len ? " " : "", policies[i]);
		double q, s;
		rc = res_latency_marks(dir, policies[i], metric, &q, &s, err, errlen);
		if (!rc && i == 0)
			slo = s;
		if (!rc && has) {
			p99[nd++] = q;
			len = strlen(p99s);
			snprintf(p99s + len, sizeof p99s - len, "%s%.9g", len ? " " : "", q);
		}
	}
	snprintf(data, sizeof data, "%s/plots/%s_cdf.dat", dir, tpot ? "tpot" : "ttft");
	snprintf(slo_text, sizeof slo_text, "%.9g", slo);
	if (!rc)
		rc = res_write_ccdf(dir, drawn, metric, p99, data, err, errlen);
	free(p99);
	if (rc)
		return rc;
	const char *vars[] = {"data",	data,	"policies", drawn, "metric", metric, "p99s", p99s,
			      "slo",	slo_text, "empty",  empty, "nodata", drawn[0] ? "" : none,
			      NULL};
	return figure(figs, dir, tpot ? "tpot_cdf" : "ttft_cdf",
		      tpot ? "Time per output token: the share of requests at least as slow as x, "
			     "per policy, on log scales, a dot at each policy's p99 and the SLO "
			     "as a dashed line. A curve further left decodes faster; one that "
			     "stays high on the right is decode slowed by crowded batches or "
			     "preemptions."
			   : "Time to first token: the share of requests at least as slow as x, "
			     "per policy, on log scales, a dot at each policy's p99 and the SLO "
			     "as a dashed line. A curve further left is faster; one that stays "
			     "high on the right is requests queueing behind prefill, often "
			     "history recomputed after a cache miss.",
		      kv_plot_latency_cdf, vars, err, errlen);
}

/* The cluster over time, a line per policy: TTFT p99 and output tokens
 * per second per bucket (res_write_cluster into plots/cluster.dat). 0, 2
 * or 3. */
static int cluster_figure(struct report_figs *figs, const char *dir,
			  const char *const *policies, size_t n, const struct plot_data *d,
			  char *err, size_t errlen)
{
	char data[4400], list[4096] = "", width_text[32], slo_text[32];
	double width = 60, p99, slo = 0;
	long firsts = 0;
	snprintf(data, sizeof data, "%s/plots/cluster.dat", dir);
	int rc = res_write_cluster(dir, policies, n, data, &width, err, errlen);
	if (!rc && n)
		rc = res_latency_marks(dir, policies[0], "ttft_s", &p99, &slo, err, errlen);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list);
		snprintf(list + len, sizeof list - len, "%s%s", len ? " " : "", policies[i]);
		firsts += d[i].ttft;
	}
	if (rc)
		return rc;
	snprintf(width_text, sizeof width_text, "%.9g", width);
	snprintf(slo_text, sizeof slo_text, "%.9g", slo);
	const char *vars[] = {"data",	data,	  "policies", list,
			      "width",	width_text, "slo",	  slo_text,
			      "nodata", firsts ? "" : "no request got a first token (all shed or failed)",
			      NULL};
	return figure(figs, dir, "cluster",
		      "The cluster over time, a line per policy: the TTFT p99 of the requests "
		      "whose first token came in each bucket (top, log scale, the SLO dashed) "
		      "and the output tokens per second completed in it (bottom), as a "
		      "dashboard would record them. A p99 that climbs while throughput stays "
		      "flat is a queue building up; the per-node figures below say where.",
		      kv_plot_cluster, vars, err, errlen);
}

/* Whether the header of the CSV file path (which csv_scan has read) names
 * column col. */
static int csv_has_column(const char *path, const char *col)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, len = strlen(col);
	int has = 0;
	if (f && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\r\n")] = 0;
		for (const char *p = line; p && !has; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
			has = !strncmp(p, col, len) && (p[len] == ',' || !p[len]);
	}
	free(line);
	if (f)
		fclose(f);
	return has;
}

/* A pool's label in pools.dat's header: "name: role on GPU x tp", with
 * the characters a comma-separated header cannot hold replaced. Returns
 * its length. */
static size_t pool_label(FILE *f, const char *name, const char *role, const char *gpu, int tp)
{
	char text[192];
	snprintf(text, sizeof text, "%s: %s on %s x %d", name, role, gpu, tp);
	for (char *c = text; *c; c++)
		if (*c == ',' || *c == '"' || *c == '\n' || *c == '\r')
			*c = *c == ',' ? ';' : *c == '"' ? '\'' : ' ';
	fprintf(f, ",%s", text);
	return strlen(text);
}

/* The string item key of o, or NULL. */
static const char *json_string(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* One policy's pools from its summary.json (path) into dat: with header
 * (the first policy) the header line and in *label its longest label's
 * length, else the row "policy,busy ratios,mean KV uses". *np: the pools
 * of the first policy, which every other must have as many of. 0, or 2
 * with err naming the file and key. */
static int pool_row(const char *path, const char *policy, int header, size_t *np,
		    size_t *label, FILE *dat, char *err, size_t errlen)
{
	cJSON *root = NULL;
	if (cfg_read_json(path, &root, err, errlen))
		return 2;
	int rc = 2;
	const cJSON *pools = cJSON_GetObjectItemCaseSensitive(root, "pools");
	/* a summary written before pools were: one pool, nothing to draw */
	size_t k = pools ? (size_t)cJSON_GetArraySize(pools) : 0;
	if (pools && !cJSON_IsArray(pools)) {
		snprintf(err, errlen, "%s: pools: expected an array", path);
		goto out;
	}
	if (header)
		*np = k;
	else if (k != *np) {
		snprintf(err, errlen, "%s: pools: %zu pools, expected %zu as in the first policy's",
			 path, k, *np);
		goto out;
	}
	static const char *const strings[] = {"name", "role", "gpu"},
				 *const numbers[] = {"tp", "busy_ratio", "mean_kv_util"};
	for (size_t i = 0; i < k; i++) {
		const cJSON *p = cJSON_GetArrayItem(pools, (int)i);
		for (int c = 0; c < 3; c++)
			if (!json_string(p, strings[c])) {
				snprintf(err, errlen, "%s: pools[%zu].%s: expected a string", path, i,
					 strings[c]);
				goto out;
			}
		for (int c = 0; c < 3; c++)
			if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, numbers[c]))) {
				snprintf(err, errlen, "%s: pools[%zu].%s: expected a number", path, i,
					 numbers[c]);
				goto out;
			}
	}
	fputs(header ? "policy" : policy, dat);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < k; i++) {
			const cJSON *p = cJSON_GetArrayItem(pools, (int)i);
			if (header) {
				size_t len = pool_label(
				    dat, json_string(p, "name"), json_string(p, "role"),
				    json_string(p, "gpu"),
				    cJSON_GetObjectItemCaseSensitive(p, "tp")->valueint);
				*label = len > *label ? len : *label;
			} else
				fprintf(dat, ",%.9g",
					cJSON_GetObjectItemCaseSensitive(
					    p, pass ? "mean_kv_util" : "busy_ratio")
					    ->valuedouble);
		}
	fputc('\n', dat);
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* pools.dat's text from the policies' summary.json files (caller frees),
 * the pools per policy in *np and the longest pool label's length in
 * *label; 0, 2 (a summary missing or damaged) or 3 (out of memory). */
static int pools_data(const char *dir, const char *const *policies, size_t n, char **text,
		      size_t *np, size_t *label, char *err, size_t errlen)
{
	size_t len = 0;
	*text = NULL;
	*np = *label = 0;
	FILE *dat = open_memstream(text, &len);
	if (!dat) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	char path[4200];
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof path, "%s/%s/summary.json", dir, policies[i]);
		if (i == 0)
			rc = pool_row(path, NULL, 1, np, label, dat, err, errlen);
		if (!rc)
			rc = pool_row(path, policies[i], 0, np, label, dat, err, errlen);
	}
	if (fclose(dat) && !rc) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
	}
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

int res_plot(const char *dir, const char *const *policies, size_t n, struct report_figs *figs,
	     char *err, size_t errlen)
{
	char plots[4200], csv[4200];
	snprintf(plots, sizeof plots, "%s/plots", dir);
	snprintf(csv, sizeof csv, "%s/comparison.csv", dir);
	static const char *const tokens_cols[] = {"tokens_input",      "tokens_cached",
						  "tokens_reloaded",   "tokens_migrated",
						  "tokens_recomputed", "tokens_fresh"};
	static const char *const counts_cols[] = {"migrations", "shed", "failed", "preemptions"};
	/* comparison.csv has the TTFT split of a disaggregated cluster */
	static const char *const split_cols[] = {"ttft_queue_s", "ttft_prefill_s",
						 "ttft_transfer_s", "ttft_decode_queue_s"};
	long rows, with_tokens, counted, with_split = 0;
	struct plot_data *d = calloc(n ? n : 1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	char *pools = NULL, pools_dat[4300], npools[24], keychars[24];
	size_t np = 0, label = 0;
	int rc = csv_scan(csv, tokens_cols, 6, &rows, &with_tokens, err, errlen);
	if (!rc)
		rc = csv_scan(csv, counts_cols, 4, &rows, &counted, err, errlen);
	int split = !rc && csv_has_column(csv, split_cols[0]);
	if (split)
		rc = csv_scan(csv, split_cols, 4, &rows, &with_split, err, errlen);
	if (!rc)
		rc = scan_policies(dir, policies, n, d, err, errlen);
	if (!rc)
		rc = pools_data(dir, policies, n, &pools, &np, &label, err, errlen);
	if (!rc && res_mkdirs(plots, err, errlen))
		rc = 3;
	snprintf(pools_dat, sizeof pools_dat, "%s/pools.dat", plots);
	snprintf(npools, sizeof npools, "%zu", np);
	snprintf(keychars, sizeof keychars, "%zu", label);
	if (!rc && np > 1 && res_write_atomic(pools_dat, pools, err, errlen))
		rc = 3;
	free(pools);
	if (rc) {
		free(d);
		return rc;
	}
	figs->n = 0;
	figs->folding = 0;
	const char *tokens_vars[] = {"csv", csv, "nodata",
				     with_tokens ? "" : "no prompt tokens: no request was served",
				     NULL};
	const char *counts_vars[] = {"csv", csv, "nodata",
				     counted ? "" : "no migrations, shed or failed requests, preemptions",
				     NULL};
	if ((rc = latency_cdf(figs, dir, policies, n, d, 0,
			      "no request got a first token (all shed or failed)", err, errlen)) ||
	    (rc = latency_cdf(figs, dir, policies, n, d, 1,
			      "no request got a second token: no time per output token", err,
			      errlen)) ||
	    (rc = cluster_figure(figs, dir, policies, n, d, err, errlen)) ||
	    (rc = figure(figs, dir, "tokens",
			 "Where prompt tokens came from: cached, reloaded, migrated, recomputed, "
			 "fresh. The larger the cached, reloaded and migrated shares, the less "
			 "prefill a policy paid; recomputed is history computed a second time.",
			 kv_plot_tokens, tokens_vars, err, errlen)) ||
	    (rc = figure(figs, dir, "counts",
			 "KV migrations, shed and failed requests, preemptions. Shed and failed "
			 "bars are requests lost; preemptions mean KV memory ran short; "
			 "migrations buy cache hits with network time.", kv_plot_counts,
			 counts_vars, err, errlen))) {
		free(d);
		return rc;
	}
	const char *split_vars[] = {"csv", csv, "nodata",
				    with_split ? "" : "no request got a first token (all shed or failed)",
				    NULL};
	const char *pools_vars[] = {"data", pools_dat, "npools", npools, "keychars", keychars, NULL};
	if ((split &&
	     (rc = figure(figs, dir, "ttft_split",
			  "Mean time to first token per policy, stacked by part: queue before "
			  "prefill, prefill, KV transfer, and the decode queue (waiting for room "
			  "on the decode node, its queue, its first step). A tall prefill queue "
			  "asks for prefill nodes, a tall decode queue for decode room; a tall "
			  "transfer is the network.",
			  kv_plot_ttft_split, split_vars, err, errlen))) ||
	    (np > 1 &&
	     (rc = figure(figs, dir, "pools",
			  "Busy ratio (top) and mean KV cache use (bottom) of each pool, per "
			  "policy. A pool busy near 1 while another idles is the bottleneck (move "
			  "GPUs to it); KV use near 1 means preemptions, or in a decode pool "
			  "hand-overs waiting for room.",
			  kv_plot_pools, pools_vars, err, errlen)))) {
		free(d);
		return rc;
	}
	figs->folding = 1;
	for (size_t i = 0; i < n && !rc; i++) {
		char ts[4200], name[96], cap[320];
		snprintf(ts, sizeof ts, "%s/%s/timeseries.csv", dir, policies[i]);
		const char *none = d[i].samples ? "" : "no samples";
		const char *kv[] = {"ts", ts, "what", "kv_util", "name", policies[i], "nodata", none,
				    NULL};
		const char *q[] = {"ts", ts, "what", "queued", "name", policies[i], "nodata", none,
				   NULL};
		snprintf(name, sizeof name, "kv_util_%s", policies[i]);
		snprintf(cap, sizeof cap,
			 "KV cache utilisation per node over time, %s. Lines close together "
			 "are a balanced cluster; one node near 1 while others idle is a hot spot.",
			 policies[i]);
		rc = figure(figs, dir, name, cap, kv_plot_node_timeline, kv, err, errlen);
		snprintf(name, sizeof name, "queue_%s", policies[i]);
		snprintf(cap, sizeof cap,
			 "Queued requests per node over time, %s. A queue that keeps growing "
			 "is an overloaded node; lines at 0 mean requests start at once.",
			 policies[i]);
		if (!rc)
			rc = figure(figs, dir, name, cap, kv_plot_node_timeline, q, err, errlen);
		/* autoscaled, with timeseries.csv's nodes_up: nodes against load */
		char dat[4400];
		snprintf(dat, sizeof dat, "%s/plots/scaling_%s.dat", dir, policies[i]);
		int scaled = rc ? 0 : res_scale_data(dir, policies[i], dat, err, errlen);
		if (scaled > 1)
			rc = scaled;
		if (scaled == 1) {
			const char *sv[] = {"data", dat, "name", policies[i], NULL};
			snprintf(name, sizeof name, "scaling_%s", policies[i]);
			snprintf(cap, sizeof cap,
				 "Nodes serving (left axis) against the load (right axis: arrivals "
				 "per second, requests running and queued), %s. Steps that follow "
				 "the arrivals a start-up late are the autoscaler at work; a queue "
				 "while nodes start is the ramp's TTFT cost.",
				 policies[i]);
			rc = figure(figs, dir, name, cap, kv_plot_scaling, sv, err, errlen);
		}
	}
	figs->folding = 0;
	free(d);
	return rc;
}

static void base64(FILE *out, const unsigned char *p, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		fputc(tab[v >> 18 & 63], out);
		fputc(tab[v >> 12 & 63], out);
		fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', out);
		fputc(i + 2 < n ? tab[v & 63] : '=', out);
	}
}

static void html_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else
			fputc(*s, f);
	}
}

/* The largest SVG inlined in report.html, gnuplot's mouse script aside;
 * a larger figure goes in as its PNG. Chosen so that `make run`'s report (16
 * figures) stays under 1.5 MB: the latency tails (<= RES_CCDF_POINTS points
 * per policy: ~140 KB for all 11 policies) and the per-node timelines (<= ~600
 * samples per node) fit under it. */
#define SVG_INLINE_MAX (192 * 1024)

/* Writes DIR/plots/NAME.svg into the page as inline SVG: the XML prologue
 * dropped, gnuplot's mouse script (the first <script>) kept in the first
 * figure only and emptied in the others (the page defines it once; each
 * SVG's settings stay its second <script>, where the script reads them).
 * Returns 1 when written, 0 when the figure is too large or not gnuplot's
 * (nothing written), -1 on a read error. */
static int embed_svg(FILE *f, const char *dir, const char *name, int *lib, char *err,
		     size_t errlen)
{
	char path[4400], inner[512];
	snprintf(path, sizeof path, "%s/plots/%s.svg", dir, name);
	size_t len = 0;
	char *data = cfg_slurp(path, &len, inner, sizeof inner);
	if (!data) {
		snprintf(err, errlen, "%s", inner);
		return -1;
	}
	char *svg = strstr(data, "<svg");
	char *js = svg ? strstr(svg, "<script") : NULL;
	char *js_end = js ? strstr(js, "</script>") : NULL;
	int ok = 0;
	if (js_end) {
		js_end += strlen("</script>");
		char keep = *js_end;
		*js_end = 0;
		int is_lib = strstr(js, "gnuplot_svg = function") != NULL;
		*js_end = keep;
		size_t body = len - (size_t)(svg - data) - (is_lib ? (size_t)(js_end - js) : 0);
		if (is_lib && body <= SVG_INLINE_MAX) {
			fwrite(svg, 1, (size_t)(js - svg), f);
			if (*lib)
				fputs("<script type=\"text/javascript\"></script>", f);
			else
				fwrite(js, 1, (size_t)(js_end - js), f);
			*lib = 1;
			fputs(js_end, f);
			ok = 1;
		}
	}
	free(data);
	return ok;
}

/* Figure i of figs into the page: its SVG inline (embed_svg), else its
 * PNG as a data: URI, with its caption. 0, or -1 with err. */
static int html_figure(FILE *f, const char *dir, const struct report_figs *figs, size_t i,
		       int *lib, char *err, size_t errlen)
{
	fprintf(f, "<figure id=\"%s\">", figs->name[i]);
	int svg = embed_svg(f, dir, figs->name[i], lib, err, errlen);
	if (svg < 0)
		return -1;
	if (!svg) {
		char png[4400], inner[512];
		size_t len = 0;
		snprintf(png, sizeof png, "%s/plots/%s.png", dir, figs->name[i]);
		char *data = cfg_slurp(png, &len, inner, sizeof inner);
		if (!data) {
			snprintf(err, errlen, "%s", inner);
			return -1;
		}
		fprintf(f, "<img alt=\"%s\" src=\"data:image/png;base64,", figs->name[i]);
		base64(f, (const unsigned char *)data, len);
		fputs("\">", f);
		free(data);
	}
	fputs("<figcaption>", f);
	html_escaped(f, figs->caption[i]);
	fputs("</figcaption></figure>\n", f);
	return 0;
}

/* How many of figs are folded (per policy over time). */
static size_t folded(const struct report_figs *figs)
{
	size_t k = 0;
	for (size_t i = 0; figs && i < figs->n; i++)
		k += figs->fold[i];
	return k;
}

/* The sentence that opens the folded figures. */
static const char *const fold_title =
    "Each policy over time, node by node: KV cache use, queues, nodes serving when autoscaled";

/* The figures into the page: those of the cluster first, then those of
 * each policy's nodes over time folded in one <details id="per-node">.
 * 0, or -1 with err. */
static int html_figures(FILE *f, const char *dir, const struct report_figs *figs, char *err,
			size_t errlen)
{
	int lib = 0;
	for (size_t i = 0; i < figs->n; i++)
		if (!figs->fold[i] && html_figure(f, dir, figs, i, &lib, err, errlen))
			return -1;
	size_t k = folded(figs);
	if (!k)
		return 0;
	fprintf(f, "<details id=\"per-node\"><summary>%s (%zu figures)</summary>\n", fold_title,
		k);
	for (size_t i = 0; i < figs->n; i++)
		if (figs->fold[i] && html_figure(f, dir, figs, i, &lib, err, errlen))
			return -1;
	fputs("</details>\n", f);
	return 0;
}

/* The sentence over the table: what is bold, what the percentages are. */
static const char *const table_key =
    "Each row's best figure, and every figure within noise of it, in bold (rows where "
    "lower or higher is better); in parentheses, each figure's change against the baseline "
    "column";

/* Under the table with several seeds: which seed it shows. */
static const char *seeds_note(const struct res_verdict_in *in)
{
	return in && in->seeds > 1 ? " The table shows the first seed's run; the verdict above, "
				     "each figure's median and range over the seeds (comparison.json: "
				     "each column's seeds)."
				   : "";
}

int res_report(const char *dir, const char *scenario_json, const struct met_summary *s,
	       const struct met_summary *attr, size_t n, int baseline,
	       const struct report_figs *figs, const struct res_verdict_in *in, char *err,
	       size_t errlen)
{
	/* report.md and report.html appear together or not at all (afile). */
	char md[4200], html[4200];
	snprintf(md, sizeof md, "%s/report.md", dir);
	snprintf(html, sizeof html, "%s/report.html", dir);
	if (baseline < 0 || (size_t)baseline >= n)
		baseline = 0;
	const struct res_table_opts topts = {.mark_best = 1, .baseline = n > 1 ? baseline : -1};
	const char *base = s[baseline].policy;
	struct afile a = {0};
	struct afile_set set = {0};
	int rc = -1;
	if (afile_open(&a, md, err, errlen))
		goto done;
	FILE *f = a.f;
	fprintf(f, "# kvsim report: %s\n\n", s[0].scenario);
	fprintf(f, "kvsim %s, seed %llu, %zu policies, %zu %s. Files: `comparison.json`, "
		   "`comparison.csv`, `<policy>/{summary.json,requests.csv,timeseries.csv}`.\n\n",
		s[0].version, (unsigned long long)s[0].seed, n, s[0].n_nodes,
		s[0].autoscaled ? "node slots (autoscaled)" : "nodes");
	fputs("## Verdict\n\nBest column per headline figure", f);
	fprintf(f, n > 1 ? ", against the baseline `%s`:\n\n" : ":\n\n", base);
	res_print_verdict_in(f, s, n, baseline, RES_STYLE_MD, in);
	res_print_attribution_verdict(f, s, attr, n, baseline, RES_STYLE_MD);
	fputs("\n## Comparison\n\n", f);
	if (n > 1)
		fprintf(f, "%s (`%s`).%s\n\n", table_key, base, seeds_note(in));
	res_print_table_with(f, NULL, s, n, RES_STYLE_MD, &topts);
	res_print_attribution(f, s, attr, n, baseline, RES_STYLE_MD);
	res_print_pools(f, s, n, RES_STYLE_MD);
	fputs("\n## Figures\n\n", f);
	for (int fold = 0; fold < 2; fold++) {
		if (fold && folded(figs))
			fprintf(f, "### %s\n\n", fold_title);
		for (size_t i = 0; figs && i < figs->n; i++)
			if (figs->fold[i] == fold)
				fprintf(f, "![%s](plots/%s.png)\n\n%s (SVG: `plots/%s.svg`)\n\n",
					figs->name[i], figs->name[i], figs->caption[i],
					figs->name[i]);
	}
	fputs("## Policies\n", f);
	res_print_mechanisms(f, s, n, RES_STYLE_MD);
	/* a fence longer than any run of backticks in the scenario (a name
	 * may hold some), so the block ends where it should (CommonMark) */
	int fence = 3, run = 0;
	for (const char *p = scenario_json; *p; p++)
		if ((run = *p == '`' ? run + 1 : 0) >= fence)
			fence = run + 1;
	fputs("\n## Scenario\n\n", f);
	for (int k = 0; k < fence; k++)
		fputc('`', f);
	fputs("json\n", f);
	fputs(scenario_json, f);
	fputc('\n', f);
	for (int k = 0; k < fence; k++)
		fputc('`', f);
	fputc('\n', f);
	if (afile_set_add(&set, &a, err, errlen) || afile_open(&a, html, err, errlen))
		goto done;
	f = a.f;
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kvsim report: ");
	html_escaped(f, s[0].scenario);
	/* A table wider than the page scrolls inside its div.wide, its first
	 * column (the row labels) held in view (sticky, opaque). */
	fputs("</title>\n<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;"
	      "padding:0 1em;color:#222}table{border-collapse:separate;border-spacing:0;"
	      "border-top:1px solid #ccc;border-left:1px solid #ccc}td,th{border-right:1px "
	      "solid #ccc;border-bottom:1px solid #ccc;padding:3px 8px;text-align:right;"
	      "white-space:nowrap}"
	      "td:first-child,th:first-child{text-align:left}div.wide{overflow-x:auto;"
	      "max-width:100%;margin:1em 0}div.wide td:first-child,div.wide th:first-child{"
	      "position:sticky;left:0;background:#fff;z-index:1}div.wide:empty{display:none}pre{background:#f5f5f5;"
	      "padding:1em;overflow:auto;tab-size:2}img,figure svg{max-width:100%;height:auto}"
	      "ul.verdict{font-size:1.1em;line-height:1.5}summary{cursor:pointer;font-weight:"
	      "bold}details#per-node>summary{font-size:1.2em;margin:1em 0}</style></head>"
	      "<body>\n",
	      f);
	fputs("<h1>kvsim report: ", f);
	html_escaped(f, s[0].scenario);
	fprintf(f, "</h1>\n<p>kvsim %s, seed %llu, %zu policies, %zu %s.</p>\n", s[0].version,
		(unsigned long long)s[0].seed, n, s[0].n_nodes,
		s[0].autoscaled ? "node slots (autoscaled)" : "nodes");
	fputs("<h2 id=\"verdict\">Verdict</h2>\n<p>Best column per headline figure", f);
	if (n > 1) {
		fputs(", against the baseline <code>", f);
		html_escaped(f, base);
		fputs("</code>", f);
	}
	fputs(":</p>\n", f);
	res_print_verdict_in(f, s, n, baseline, RES_STYLE_HTML, in);
	if (res_attributed(attr, n)) {
		fputs("<ul class=\"verdict\">\n", f);
		res_print_attribution_verdict(f, s, attr, n, baseline, RES_STYLE_HTML);
		fputs("</ul>\n", f);
	}
	fputs("<h2 id=\"comparison\">Comparison</h2>\n", f);
	if (n > 1) {
		fprintf(f, "<p>%s (<code>", table_key);
		html_escaped(f, base);
		fprintf(f, "</code>).%s</p>\n", seeds_note(in));
	}
	/* each table in a div that scrolls; an empty one is not shown */
	fputs("<div class=\"wide\">", f);
	res_print_table_with(f, NULL, s, n, RES_STYLE_HTML, &topts);
	fputs("</div>\n<div class=\"wide\">", f);
	res_print_attribution(f, s, attr, n, baseline, RES_STYLE_HTML);
	fputs("</div>\n<div class=\"wide\">", f);
	res_print_pools(f, s, n, RES_STYLE_HTML);
	fputs("</div>\n", f);
	fputs("<h2 id=\"figures\">Figures</h2>\n<p>Hover a figure drawn as SVG for its "
	      "coordinates; click a key entry to hide or show that series.</p>\n",
	      f);
	if (figs && html_figures(f, dir, figs, err, errlen))
		goto done;
	fputs("<h2 id=\"policies\">Policies</h2>\n", f);
	res_print_mechanisms(f, s, n, RES_STYLE_HTML);
	fputs("<details id=\"scenario\"><summary>Scenario</summary>\n<pre>", f);
	html_escaped(f, scenario_json);
	fputs("</pre>\n</details>\n</body></html>\n", f);
	if (afile_set_add(&set, &a, err, errlen) || afile_set_commit(&set, err, errlen))
		goto done;
	rc = 0;
done:
	afile_discard(&a);
	afile_set_discard(&set);
	return rc;
}
