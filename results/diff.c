/* diff: direction-aware regression check between two kvsim results. */
#include "results/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metric_table.h"
#include "config/cfg.h"

void res_diff_list_with(FILE *out, const struct res_metrics *t)
{
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(t, RES_LIST_DIFF_ALL, &it));)
		fprintf(out, "%-32s %s is better%s\n", m->path,
			m->better == RES_BETTER_HIGHER ? "higher" : "lower",
			m->use & RES_M_DIFF_NAMED ? " (only when named)" : "");
}

void res_diff_list(FILE *out)
{
	res_diff_list_with(out, NULL);
}

/* The figure at m's path in o (of the file named who): 0 when absent, 1
 * with *v when a finite number >= 0 (every metric is a count, ratio, rate
 * or time), 2 when null (no sample, no price: "n/a"), else -1 with err: a
 * corrupted figure must not count as better. */
static int metric_value(const cJSON *o, const struct res_metric *m, const char *who,
			const char *label, double *v, char *err, size_t errlen)
{
	const cJSON *it = res_json_item_at(o, m->path);
	if (!it)
		return 0;
	if (cJSON_IsNull(it))
		return 2;
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0) {
		char *text = cJSON_PrintUnformatted(it);
		snprintf(err, errlen, "%s: %s (policy %s): expected a finite number >= 0, got %.40s",
			 who, m->path, label, text ? text : "?");
		free(text);
		return -1;
	}
	*v = it->valuedouble;
	return 1;
}

/* Compares m in b and n; 0, or -1 with err on a corrupted figure. */
static int compare_one(const char *label, const cJSON *b, const cJSON *n,
		       const struct res_metric *m, const struct diff_opts *o, FILE *out,
		       struct diff_counts *c, char *err, size_t errlen)
{
	double base = 0, now = 0;
	int has_b = metric_value(b, m, o->base_name ? o->base_name : "base", label, &base, err, errlen);
	if (has_b <= 0)
		return has_b; /* not in the baseline: nothing to hold it to */
	int has_n = metric_value(n, m, o->new_name ? o->new_name : "new", label, &now, err, errlen);
	if (has_n < 0)
		return -1;
	c->compared++;
	if (!has_n) {
		c->missing++;
		c->regressions++;
		fprintf(out, "%-18s %-32s %14.6g %14s %9s  REGRESSION (missing)\n", label, m->path,
			base, "-", "");
		return 0;
	}
	if (has_b == 2 || has_n == 2) {
		/* n/a on both sides is the same; a figure that became n/a is
		 * lost, as a missing one is; one that was n/a is no regression */
		if (has_b == 2 && has_n == 2)
			return 0;
		if (has_n == 2)
			c->regressions++;
		char bt[24], nt[24];
		snprintf(bt, sizeof bt, has_b == 2 ? "n/a" : "%.6g", base);
		snprintf(nt, sizeof nt, has_n == 2 ? "n/a" : "%.6g", now);
		fprintf(out, "%-18s %-32s %14s %14s %9s  %s\n", label, m->path, bt, nt, "n/a",
			has_n == 2 ? "REGRESSION (no data)" : "was n/a");
		return 0;
	}
	double tol = o->tolerance_pct, delta = now - base;
	int worse = m->better == RES_BETTER_HIGHER ? delta < 0 : delta > 0;
	double rel = base != 0 ? fabs(delta) / fabs(base) * 100 : (delta != 0 ? INFINITY : 0);
	const char *status = "same";
	if (delta != 0) {
		if (worse && rel > tol) {
			status = "REGRESSION";
			c->regressions++;
		} else if (worse) {
			status = "worse, within tolerance";
		} else {
			status = "better";
			c->improvements++;
		}
	}
	char change[32];
	if (base != 0)
		snprintf(change, sizeof change, "%+.2f%%", delta / fabs(base) * 100);
	else
		snprintf(change, sizeof change, "%s", delta == 0 ? "+0.00%" : "n/a");
	if (delta != 0)
		fprintf(out, "%-18s %-32s %14.6g %14.6g %9s  %s\n", label, m->path, base, now, change,
			status);
	return 0;
}

static int compare_summaries(const char *label, const cJSON *b, const cJSON *n,
			     const struct diff_opts *o, const struct res_metrics *t, FILE *out,
			     struct diff_counts *c, char *err, size_t errlen)
{
	if (!o->metrics) {
		size_t it = 0;
		for (const struct res_metric *m; (m = res_metric_next(t, RES_LIST_DIFF, &it));)
			if (compare_one(label, b, n, m, o, out, c, err, errlen))
				return -1;
		return 0;
	}
	char *list = strdup(o->metrics); /* any length: never cut */
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = 0, named = 0;
	char *save = NULL;
	for (char *name = strtok_r(list, ",", &save); name && !rc;
	     name = strtok_r(NULL, ",", &save)) {
		name += strspn(name, " \t"); /* blanks around a name are not part of it */
		size_t len = strlen(name);
		while (len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
			name[--len] = 0;
		if (!len)
			continue;
		named++;
		const struct res_metric *m = res_metric_find(t, RES_LIST_DIFF_ALL, name);
		if (!m) {
			snprintf(err, errlen, "--metrics: unknown metric \"%s\" ('kvsim diff --list' "
					      "shows them)", name);
			rc = -1;
		} else {
			rc = compare_one(label, b, n, m, o, out, c, err, errlen);
		}
	}
	free(list);
	if (!rc && !named) {
		snprintf(err, errlen, "--metrics: expected a comma-separated list of metric names");
		rc = -1;
	}
	return rc;
}

static int is_summary(const cJSON *o)
{
	return cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "policy") &&
	       cJSON_GetObjectItemCaseSensitive(o, "requests");
}

static int diff_all(const cJSON *base, const cJSON *new_, const struct diff_opts *o,
		    const struct res_metrics *t, FILE *out, struct diff_counts *c, char *err,
		    size_t errlen)
{
	fprintf(out, "%-18s %-32s %14s %14s %9s  %s\n", "policy", "metric", "base", "new", "change",
		"status");
	if (is_summary(base) && is_summary(new_)) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(base, "policy");
		return compare_summaries(cJSON_IsString(p) ? p->valuestring : "-", base, new_, o, t,
					 out, c, err, errlen);
	}
	/* comparison.json: an object whose "columns" are the summaries (an
	 * array alone before it had a verdict) */
	if (cJSON_IsObject(base) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(base, "columns")))
		base = cJSON_GetObjectItemCaseSensitive(base, "columns");
	if (cJSON_IsObject(new_) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(new_, "columns")))
		new_ = cJSON_GetObjectItemCaseSensitive(new_, "columns");
	if (!cJSON_IsArray(base) || !cJSON_IsArray(new_)) {
		snprintf(err, errlen, "expected two summary.json objects or two comparison.json "
				      "arrays");
		return -1;
	}
	for (const cJSON *b = base->child; b; b = b->next) {
		const cJSON *bp = cJSON_GetObjectItemCaseSensitive(b, "policy");
		if (!is_summary(b) || !cJSON_IsString(bp)) {
			snprintf(err, errlen, "base: an entry is not a kvsim summary (no policy)");
			return -1;
		}
		const cJSON *match = NULL;
		for (const cJSON *n = new_->child; n && !match; n = n->next) {
			const cJSON *np = cJSON_GetObjectItemCaseSensitive(n, "policy");
			if (cJSON_IsString(np) && !strcmp(np->valuestring, bp->valuestring))
				match = n;
		}
		if (!match) {
			c->missing++;
			c->regressions++;
			fprintf(out, "%-18s %-32s %14s %14s %9s  REGRESSION (policy missing)\n",
				bp->valuestring, "*", "", "-", "");
			continue;
		}
		if (compare_summaries(bp->valuestring, b, match, o, t, out, c, err, errlen))
			return -1;
	}
	return 0;
}

int res_diff_with(const cJSON *base, const cJSON *new_, const struct diff_opts *o,
		  const struct res_metrics *t, FILE *out, struct diff_counts *c, char *err,
		  size_t errlen)
{
	memset(c, 0, sizeof *c);
	if (diff_all(base, new_, o, t, out, c, err, errlen))
		return -1;
	/* A check that held nothing to account must not pass. */
	if (c->compared == 0 && c->missing == 0) {
		snprintf(err, errlen, "%s: none of the metrics compared is in it (expected a kvsim "
				      "summary.json or comparison.json with results)",
			 o->base_name ? o->base_name : "base");
		return -1;
	}
	return 0;
}

int res_diff(const cJSON *base, const cJSON *new_, const struct diff_opts *o, FILE *out,
	     struct diff_counts *c, char *err, size_t errlen)
{
	return res_diff_with(base, new_, o, NULL, out, c, err, errlen);
}

int res_diff_read(const char *file, cJSON **out, char *err, size_t errlen)
{
	char *text = cfg_slurp(file, NULL, err, errlen);
	if (!text)
		return -1;
	*out = cJSON_ParseWithOpts(text, NULL, 1);
	free(text);
	if (!*out) {
		snprintf(err, errlen, "%s: not valid JSON; expected a kvsim summary.json or "
				      "comparison.json", file);
		return -1;
	}
	return 0;
}
