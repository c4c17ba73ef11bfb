/* latency_fig: the data of the latency tail figures and of the cluster's timeline. */
#include "results/latency_fig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_statistics_double.h>

#include "config/cfg.h"

/* Columns of a CSV file, row after row: v[row * ncol + c]. */
struct table {
	double *v;
	size_t rows, cap, ncol;
};

/* One field of column name as a number: empty is NaN, and the column
 * "status" is 1 for "completed", 0 otherwise. 0, or -1 when not a number. */
static int cell(const char *name, const char *text, double *x)
{
	char *end;
	if (!strcmp(name, "status")) {
		*x = !strcmp(text, "completed");
		return 0;
	}
	if (!*text) {
		*x = NAN;
		return 0;
	}
	*x = strtod(text, &end);
	return *end || end == text ? -1 : 0;
}

/* The header's index of each of names[0..n) into at. 0, or 2 with err. */
static int find_columns(const char *path, char *line, const char *const *names, int n, int *at,
			char *err, size_t errlen)
{
	for (int c = 0; c < n; c++) {
		at[c] = -1;
		int k = 0;
		for (const char *p = line; p && at[c] < 0; k++) {
			size_t len = strcspn(p, ",");
			if (len == strlen(names[c]) && !strncmp(p, names[c], len))
				at[c] = k;
			p = p[len] ? p + len + 1 : NULL;
		}
		if (at[c] < 0) {
			snprintf(err, errlen, "%s:1: no column \"%s\" in the header", path, names[c]);
			return 2;
		}
	}
	return 0;
}

/* Reads columns names[0..n) (at most 8) of the CSV file path into t.
 * 0, 2 (missing or damaged: err names the file and line) or 3. */
static int read_table(const char *path, const char *const *names, int n, struct table *t,
		      char *err, size_t errlen)
{
	enum { MAX_FIELDS = 64 };
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s (expected a 'kvsim compare' output folder)", path,
			 strerror(errno));
		return 2;
	}
	char *line = NULL, *field[MAX_FIELDS];
	size_t cap = 0;
	int at[8], rc = 2;
	long lineno = 1;
	*t = (struct table){.ncol = (size_t)n};
	if (getline(&line, &cap, f) < 0) {
		snprintf(err, errlen, "%s: empty (expected a CSV header)", path);
		goto out;
	}
	line[strcspn(line, "\r\n")] = 0;
	if (find_columns(path, line, names, n, at, err, errlen))
		goto out;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		line[strcspn(line, "\r\n")] = 0;
		int nf = 0;
		for (char *p = line; nf < MAX_FIELDS; p++) {
			field[nf++] = p;
			if (!(p = strchr(p, ',')))
				break;
			*p = 0;
		}
		if (t->rows == t->cap) {
			size_t c2 = t->cap ? 2 * t->cap : 4096;
			double *v = realloc(t->v, c2 * (size_t)n * sizeof *v);
			if (!v) {
				snprintf(err, errlen, "out of memory");
				rc = 3;
				goto out;
			}
			t->v = v;
			t->cap = c2;
		}
		for (int c = 0; c < n; c++) {
			double *x = &t->v[t->rows * (size_t)n + (size_t)c];
			if (at[c] >= nf || cell(names[c], field[at[c]], x)) {
				snprintf(err, errlen, "%s:%ld: %s: expected a number, got \"%.40s\"",
					 path, lineno, names[c], at[c] < nf ? field[at[c]] : "");
				goto out;
			}
		}
		t->rows++;
	}
	rc = 0;
out:
	free(line);
	fclose(f);
	if (rc) {
		free(t->v);
		t->v = NULL;
	}
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The CCDF rows of the n sorted values v into f (RES_CCDF_POINTS). 0 or 3. */
static int ccdf_rows(FILE *f, const double *v, size_t n)
{
	char *keep = calloc(n + 1, 1);
	if (!keep)
		return 3;
	size_t half = RES_CCDF_POINTS / 2;
	if (n <= RES_CCDF_POINTS) {
		memset(keep, 1, n + 1);
	} else {
		for (size_t j = 1; j <= half; j++)
			keep[(j * n + half - 1) / half] = 1;
		/* m, the requests at or above rank k, from 1 to n on a log scale */
		for (size_t j = 0; j < half; j++) {
			size_t m = (size_t)llround(pow((double)n, (double)j / (double)(half - 1)));
			keep[n - (m < 1 ? 1 : m > n ? n : m) + 1] = 1;
		}
	}
	for (size_t k = 1; k <= n; k++)
		if (keep[k])
			fprintf(f, "%.9g,%.9g\n", v[k - 1], (double)(n - k + 1) / (double)n);
	free(keep);
	return 0;
}

/* Opens path's temporary sibling tmp for writing. */
static FILE *open_tmp(const char *out, char *tmp, size_t len, char *err, size_t errlen)
{
	snprintf(tmp, len, "%s.tmp", out);
	FILE *f = fopen(tmp, "w");
	if (!f)
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
	return f;
}

/* Closes f and puts tmp in place as out when rc is 0, else removes it. */
static int close_tmp(FILE *f, const char *tmp, const char *out, int rc, char *err, size_t errlen)
{
	if (fclose(f) && !rc) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		rc = 3;
	}
	if (!rc && rename(tmp, out)) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		rc = 3;
	}
	if (rc)
		unlink(tmp);
	return rc;
}

int res_write_ccdf(const char *dir, const char *drawn, const char *metric, const double *p99,
		   const char *out, char *err, size_t errlen)
{
	char tmp[4420], path[4200], list[4096];
	err[0] = 0;
	FILE *f = open_tmp(out, tmp, sizeof tmp, err, errlen);
	if (!f)
		return 3;
	fprintf(f, "# %s: value, fraction of requests at or above it; one block per policy, "
		   "then each policy's p99\n",
		metric);
	snprintf(list, sizeof list, "%s", drawn);
	int rc = 0, blocks = 0;
	const char *col[] = {metric};
	for (char *save = NULL, *p = strtok_r(list, " ", &save); p && !rc;
	     p = strtok_r(NULL, " ", &save)) {
		struct table t;
		snprintf(path, sizeof path, "%s/%s/requests.csv", dir, p);
		rc = read_table(path, col, 1, &t, err, errlen);
		if (rc)
			break;
		size_t n = 0;
		for (size_t r = 0; r < t.rows; r++)
			if (t.v[r] > 0)
				t.v[n++] = t.v[r];
		qsort(t.v, n, sizeof *t.v, cmp_double);
		fprintf(f, "%s# %s\nvalue_s,fraction_at_or_above\n", blocks++ ? "\n\n" : "", p);
		rc = ccdf_rows(f, t.v, n);
		free(t.v);
	}
	if (!rc) {
		fputs("\n\n# p99 per policy\np99_s,fraction_at_or_above\n", f);
		for (int i = 0; i < blocks; i++)
			fprintf(f, "%.9g,0.01\n", p99[i]);
	}
	if (rc == 3 && !*err)
		snprintf(err, errlen, "out of memory");
	return close_tmp(f, tmp, out, rc, err, errlen);
}

int res_latency_marks(const char *dir, const char *policy, const char *metric, double *p99,
		      double *slo, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s/summary.json", dir, policy);
	char *text = cfg_slurp(path, NULL, err, errlen);
	if (!text)
		return 2;
	cJSON *j = cJSON_Parse(text);
	free(text);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, metric);
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(m, "p99");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(j, "slo"),
	    strcmp(metric, "tpot_s") ? "ttft_p99_s" : "tpot_p99_s");
	int rc = 0;
	if (!cJSON_IsObject(j) || !(cJSON_IsNumber(q) || cJSON_IsNull(q))) {
		snprintf(err, errlen, "%s: %s.p99: expected a number or null (a kvsim summary)",
			 path, metric);
		rc = 2;
	}
	*p99 = cJSON_IsNumber(q) ? q->valuedouble : NAN;
	*slo = cJSON_IsNumber(s) && s->valuedouble > 0 ? s->valuedouble : 0;
	cJSON_Delete(j);
	return rc;
}

/* requests.csv's columns the timeline reads, in this order. */
static const char *const timeline_cols[] = {"status", "arrival_s", "ttft_s", "e2e_s",
					    "output_tokens"};
enum { C_DONE, C_ARRIVAL, C_TTFT, C_E2E, C_OUT, C_N };

/* When row r of t ended: its end, else its first token, else its arrival. */
static double row_end(const struct table *t, size_t r)
{
	const double *x = &t->v[r * C_N];
	return x[C_DONE] > 0 && !isnan(x[C_E2E])  ? x[C_ARRIVAL] + x[C_E2E]
	       : !isnan(x[C_TTFT]) ? x[C_ARRIVAL] + x[C_TTFT]
				   : x[C_ARRIVAL];
}

/* A first token: its bucket and the TTFT. */
struct first {
	size_t bucket;
	double ttft;
};

static int cmp_first(const void *a, const void *b)
{
	const struct first *x = a, *y = b;
	if (x->bucket != y->bucket)
		return (x->bucket > y->bucket) - (x->bucket < y->bucket);
	return (x->ttft > y->ttft) - (x->ttft < y->ttft);
}

/* One policy's block of the timeline into f, buckets of width s. 0 or 3. */
static int timeline_block(FILE *f, const struct table *t, double width)
{
	double end = 0;
	for (size_t r = 0; r < t->rows; r++)
		end = fmax(end, row_end(t, r));
	size_t nb = (size_t)ceil(end / width), nf = 0;
	nb = nb ? nb : 1;
	struct first *fs = malloc((t->rows ? t->rows : 1) * sizeof *fs);
	double *done = calloc(nb, sizeof *done), *tokens = calloc(nb, sizeof *tokens),
	       *v = malloc((t->rows ? t->rows : 1) * sizeof *v);
	int rc = fs && done && tokens && v ? 0 : 3;
	for (size_t r = 0; r < t->rows && !rc; r++) {
		const double *x = &t->v[r * C_N];
		if (!isnan(x[C_TTFT])) {
			size_t b = (size_t)((x[C_ARRIVAL] + x[C_TTFT]) / width);
			fs[nf++] = (struct first){b < nb ? b : nb - 1, x[C_TTFT]};
		}
		if (x[C_DONE] > 0 && !isnan(x[C_E2E])) {
			size_t b = (size_t)((x[C_ARRIVAL] + x[C_E2E]) / width);
			b = b < nb ? b : nb - 1;
			done[b] += 1;
			tokens[b] += isnan(x[C_OUT]) ? 0 : x[C_OUT];
		}
	}
	if (!rc)
		qsort(fs, nf, sizeof *fs, cmp_first);
	for (size_t b = 0, i = 0; b < nb && !rc; b++) {
		size_t k = 0;
		for (; i < nf && fs[i].bucket == b; i++)
			v[k++] = fs[i].ttft;
		/* the last bucket holds the run's end: rates over its part, and
		 * none when under half a bucket (a few seconds' rates are noise) */
		double span = fmin(width, end - (double)b * width);
		span = span > 0 ? span : width;
		if (b > 0 && span < width / 2)
			break;
		fprintf(f, "%.9g,%.9g,%.9g,%.9g\n", (double)b * width,
			k ? gsl_stats_quantile_from_sorted_data(v, 1, k, 0.99) : NAN,
			done[b] / span, tokens[b] / span);
	}
	free(fs);
	free(done);
	free(tokens);
	free(v);
	return rc;
}

int res_write_cluster(const char *dir, const char *const *policies, size_t n, const char *out,
		      double *width_s, char *err, size_t errlen)
{
	char path[4200], tmp[4420];
	double end = 0;
	int rc = 0;
	err[0] = 0;
	/* the longest run's end first: every policy gets the same buckets */
	for (size_t i = 0; i < n && !rc; i++) {
		struct table t;
		snprintf(path, sizeof path, "%s/%s/requests.csv", dir, policies[i]);
		rc = read_table(path, timeline_cols, C_N, &t, err, errlen);
		for (size_t r = 0; !rc && r < t.rows; r++)
			end = fmax(end, row_end(&t, r));
		if (!rc)
			free(t.v);
	}
	if (rc)
		return rc;
	static const double widths[] = {30, 15, 10, 5, 2, 1};
	double width = 60;
	for (size_t k = 0; k < sizeof widths / sizeof *widths; k++)
		if (end < 20 * width)
			width = widths[k];
	*width_s = width;
	FILE *f = open_tmp(out, tmp, sizeof tmp, err, errlen);
	if (!f)
		return 3;
	fprintf(f, "# the cluster per %g s: TTFT p99 of the first tokens in the bucket, requests "
		   "and output tokens completed per second; one block per policy\n",
		width);
	for (size_t i = 0; i < n && !rc; i++) {
		struct table t;
		snprintf(path, sizeof path, "%s/%s/requests.csv", dir, policies[i]);
		rc = read_table(path, timeline_cols, C_N, &t, err, errlen);
		if (rc)
			break;
		fprintf(f, "%s# %s\nstart_s,ttft_p99_s,requests_per_s,output_tokens_per_s\n",
			i ? "\n\n" : "", policies[i]);
		rc = timeline_block(f, &t, width);
		free(t.v);
	}
	if (rc == 3 && !*err)
		snprintf(err, errlen, "out of memory");
	return close_tmp(f, tmp, out, rc, err, errlen);
}
