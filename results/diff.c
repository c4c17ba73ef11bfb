/* diff: direction-aware regression check between two kvsim results. */
#include "results/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

struct metric {
	const char *path;
	int higher_is_better;
	int perf;
};

static const struct metric known[] = {
    {"requests.completed", 1, 0},       {"requests.shed", 0, 0},
    {"requests.failed", 0, 0},          {"ttft_s.mean", 0, 0},
    {"ttft_s.p50", 0, 0},               {"ttft_s.p90", 0, 0},
    {"ttft_s.p99", 0, 0},               {"tpot_s.mean", 0, 0},
    {"tpot_s.p50", 0, 0},               {"tpot_s.p99", 0, 0},
    {"e2e_s.p50", 0, 0},                {"e2e_s.p99", 0, 0},
    {"queue_s.p99", 0, 0},              {"prefix_hit_ratio", 1, 0},
    {"recompute_ratio", 0, 0},          {"recompute_gpu_s", 0, 0},
    {"migration.count", 0, 0},          {"migration.bytes", 0, 0},
    {"preemptions", 0, 0},              {"throughput.requests_per_s", 1, 0},
    {"throughput.output_tokens_per_s", 1, 0}, {"slo.attainment", 1, 0},
    {"slo.goodput_rps", 1, 0},          {"load_imbalance.max_over_mean", 0, 0},
    {"load_imbalance.jain", 1, 0},      {"perf.wall_s", 0, 1},
    {"perf.requests_per_wall_s", 1, 1}, {"perf.peak_rss_bytes", 0, 1},
    {"perf.events", 0, 1},
};

void res_diff_list(FILE *out)
{
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		fprintf(out, "%-32s %s is better%s\n", known[i].path,
			known[i].higher_is_better ? "higher" : "lower",
			known[i].perf ? " (only when named)" : "");
}

static const struct metric *find_metric(const char *path)
{
	for (size_t i = 0; i < sizeof known / sizeof *known; i++)
		if (!strcmp(known[i].path, path))
			return &known[i];
	return NULL;
}

/* The number at a dotted path, or NULL. */
static const cJSON *at(const cJSON *o, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	char *save = NULL;
	for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, t) : NULL;
	return o && cJSON_IsNumber(o) ? o : NULL;
}

static void compare_one(const char *label, const cJSON *b, const cJSON *n, const struct metric *m,
			double tol, FILE *out, struct diff_counts *c)
{
	const cJSON *bv = at(b, m->path), *nv = at(n, m->path);
	if (!bv)
		return; /* not in the baseline: nothing to hold it to */
	c->compared++;
	if (!nv) {
		c->missing++;
		c->regressions++;
		fprintf(out, "%-18s %-32s %14.6g %14s %9s  REGRESSION (missing)\n", label, m->path,
			bv->valuedouble, "-", "");
		return;
	}
	double base = bv->valuedouble, now = nv->valuedouble, delta = now - base;
	int worse = m->higher_is_better ? delta < 0 : delta > 0;
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
}

static int compare_summaries(const char *label, const cJSON *b, const cJSON *n,
			     const struct diff_opts *o, FILE *out, struct diff_counts *c, char *err,
			     size_t errlen)
{
	if (!o->metrics) {
		for (size_t i = 0; i < sizeof known / sizeof *known; i++)
			if (!known[i].perf)
				compare_one(label, b, n, &known[i], o->tolerance_pct, out, c);
		return 0;
	}
	char list[1024];
	snprintf(list, sizeof list, "%s", o->metrics);
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const struct metric *m = find_metric(t);
		if (!m) {
			snprintf(err, errlen, "--metrics: unknown metric \"%s\" ('kvsim diff --list' "
					      "shows them)", t);
			return -1;
		}
		compare_one(label, b, n, m, o->tolerance_pct, out, c);
	}
	return 0;
}

static int is_summary(const cJSON *o)
{
	return cJSON_IsObject(o) && cJSON_GetObjectItemCaseSensitive(o, "policy") &&
	       cJSON_GetObjectItemCaseSensitive(o, "requests");
}

int res_diff(const cJSON *base, const cJSON *new_, const struct diff_opts *o, FILE *out,
	     struct diff_counts *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	fprintf(out, "%-18s %-32s %14s %14s %9s  %s\n", "policy", "metric", "base", "new", "change",
		"status");
	if (is_summary(base) && is_summary(new_)) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(base, "policy");
		return compare_summaries(cJSON_IsString(p) ? p->valuestring : "-", base, new_, o, out,
					 c, err, errlen);
	}
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
		if (compare_summaries(bp->valuestring, b, match, o, out, c, err, errlen))
			return -1;
	}
	return 0;
}
