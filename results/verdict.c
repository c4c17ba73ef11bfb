/* verdict: the answer a report opens with, written from the comparison table. */
#include "results/verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metric_table.h"
#include "results/metrics.h"

/* The rows the verdict speaks of, by summary.json path: the latencies users
 * feel, the work and traffic the policies differ by (docs/outputs.md). */
static const char *const headline[] = {
    "ttft_s.p99",      "tpot_s.p99",	 "recompute_gpu_s",		"migration.bytes",
    "slo.attainment",  "slo.goodput_rps", "cost_per_output_token_usd", "energy.j_per_output_token"};

const char *res_verdict_headline(size_t i)
{
	return i < sizeof headline / sizeof *headline ? headline[i] : NULL;
}

/* Whether a beats b: better and materially so. */
static int beats(const struct res_metric *m, const struct res_spread *a,
		 const struct res_spread *b)
{
	int higher = m->better == RES_BETTER_HIGHER;
	return (higher ? a->median > b->median : a->median < b->median) && res_material(m, a, b);
}

size_t res_verdict_row(const struct res_metric *m, const struct met_summary *s,
		       const struct res_spread *sp, size_t n, int baseline, unsigned char *best,
		       size_t *top, int *material)
{
	int latency = res_metric_is_latency(m), higher = m->better == RES_BETTER_HIGHER;
	size_t named = 0;
	*material = 0;
	*top = n;
	memset(best, 0, n);
	for (size_t j = 0; j < n; j++) {
		if (isnan(sp[j].median) || (latency && s[j].steadiness.unsteady))
			continue;
		if (*top == n || (higher ? sp[j].median > sp[*top].median
					 : sp[j].median < sp[*top].median))
			*top = j;
	}
	if (*top == n)
		return 0;
	for (size_t j = 0; j < n; j++)
		if (!isnan(sp[j].median) && !(latency && s[j].steadiness.unsteady) &&
		    !beats(m, &sp[*top], &sp[j]))
			named += best[j] = 1;
	if (baseline < 0 || (size_t)baseline >= n || best[baseline])
		return named;
	/* a baseline that is not steady drifts further behind the longer the
	 * run, so on a latency any steady column ahead of it is ahead beyond
	 * noise: the size of the gap is the horizon's, its sign is not */
	const struct res_spread *t = &sp[*top], *b = &sp[baseline];
	*material = beats(m, t, b) ||
		    (latency && s[baseline].steadiness.unsteady && !isnan(b->median) &&
		     (higher ? t->median > b->median : t->median < b->median));
	return named;
}

/* A line being built: text appended with put(). */
struct line {
	char s[1024];
	size_t len;
};

static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(l->s + l->len, sizeof l->s - l->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->len += (size_t)k < sizeof l->s - l->len ? (size_t)k : sizeof l->s - 1 - l->len;
}

static void emit(FILE *f, const struct line *l, enum res_style style)
{
	if (style == RES_STYLE_MD) {
		fprintf(f, "- %s\n", l->s);
		return;
	}
	if (style == RES_STYLE_TEXT) {
		fprintf(f, "%s\n", l->s);
		return;
	}
	fputs("<li>", f);
	for (const char *p = l->s; *p; p++) {
		if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '&')
			fputs("&amp;", f);
		else
			fputc(*p, f);
	}
	fputs("</li>\n", f);
}

/* The row's label and unit from its table name: "TTFT p99 (s)" is "TTFT
 * p99" in s; a name without a trailing "(unit)" has no unit. */
static void label_unit(const char *name, char *label, size_t llen, char *unit, size_t ulen)
{
	while (*name == ' ')
		name++;
	const char *open = strrchr(name, '(');
	size_t len = strlen(name);
	unit[0] = 0;
	if (open && open > name + 1 && open[-1] == ' ' && name[len - 1] == ')') {
		snprintf(label, llen, "%.*s", (int)(open - 1 - name), name);
		snprintf(unit, ulen, "%.*s", (int)(name + len - 1 - open - 1), open + 1);
	} else {
		snprintf(label, llen, "%s", name);
	}
}

/* The figure of row m in column s as the table shows it, with its unit. */
static void figure_text(const struct res_metric *m, const struct met_summary *s, const char *unit,
			char *buf, size_t len)
{
	char cell[64];
	res_metric_cell(m, s, cell, sizeof cell);
	snprintf(buf, len, "%s%s%s", cell, *unit ? " " : "", unit);
}

/* A column's figure for one seed as a spread. */
static struct res_spread one_seed(const struct res_metric *m, const struct met_summary *s)
{
	double v = res_metric_value(m, s);
	return (struct res_spread){v, v, v};
}

/* The columns picked, "a, b and c", into l. */
static void put_names(struct line *l, const struct met_summary *s, size_t n,
		      const unsigned char *pick)
{
	size_t named = 0, k = 0;
	for (size_t j = 0; j < n; j++)
		named += pick[j];
	for (size_t j = 0; j < n; j++)
		if (pick[j]) {
			k++;
			put(l, "%s%s", k == 1 ? "" : k == named ? " and " : ", ", s[j].policy);
		}
}

/* One headline row ("no data" when no column has a figure for it). */
/* Column j's figure of row m over its seeds: "0.052 s", or with several,
 * "0.052 s (median of 3 seeds, 0.048-0.053)". */
static void spread_text(const struct res_metric *m, const struct met_summary *s,
			const struct res_spread *sp, int seeds, const char *unit, char *buf,
			size_t len)
{
	if (seeds < 2 || !(sp->min < sp->max)) {
		figure_text(m, s, unit, buf, len);
		return;
	}
	double u = m->unit > 0 ? m->unit : 1;
	snprintf(buf, len, "%.*f%s%s (median of %d seeds, %.*f-%.*f)", m->decimals, sp->median / u,
		 *unit ? " " : "", unit, seeds, m->decimals, sp->min / u, m->decimals, sp->max / u);
}

static int verdict_line(struct line *l, const struct res_metric *m, const struct met_summary *s,
			size_t n, int baseline, unsigned char *pick, struct res_spread *sp,
			const struct res_verdict_in *in)
{
	char label[64], unit[16], fig[128];
	label_unit(m->name, label, sizeof label, unit, sizeof unit);
	for (size_t j = 0; j < n; j++)
		if (!in || !in->spread || in->spread(in->ctx, m, j, &sp[j]))
			sp[j] = one_seed(m, &s[j]);
	int seeds = in ? in->seeds : 1;
	size_t top;
	int material;
	size_t named = res_verdict_row(m, s, sp, n, baseline, pick, &top, &material);
	if (!named) { /* no column has a sample (or a price), or none is steady */
		put(l, "%s: no data", label);
		if (res_metric_is_latency(m))
			for (size_t j = 0; j < n; j++)
				if (s[j].steadiness.unsteady) {
					put(l, " from a steady column");
					break;
				}
		return 1;
	}
	put(l, "%s: ", label);
	spread_text(m, &s[top], &sp[top], seeds, unit, fig, sizeof fig);
	if (n > 1 && pick[baseline] && named == n) {
		put(l, "no material difference (all %zu columns within noise of %s)", n, fig);
	} else {
		put_names(l, s, n, pick);
		if (named > 1)
			put(l, " tie");
		put(l, "%s%s", named > 1 ? " within noise of " : " ", fig);
		if (n > 1 && pick[baseline]) {
			put(l, "%s: no material difference from it",
			    named > 1 ? ", the baseline among them" : " (the baseline)");
		} else if (n > 1) {
			char pct[24];
			if (seeds > 1)
				res_delta_pct(sp[top].median, sp[baseline].median, pct, sizeof pct);
			else
				res_delta_pct(res_shown_value(m, &s[top]),
					      res_shown_value(m, &s[baseline]), pct, sizeof pct);
			spread_text(m, &s[baseline], &sp[baseline], seeds, unit, fig, sizeof fig);
			put(l, ", %s against %s (%s)%s", pct, s[baseline].policy, fig,
			    material ? ", material" : ", within noise");
			if (res_metric_is_latency(m) && s[baseline].steadiness.unsteady)
				put(l, " (a gap that grows with the horizon)");
		}
	}
	if (res_metric_is_latency(m)) {
		unsigned char *u = pick; /* reused: the unsteady columns */
		size_t k = 0;
		for (size_t j = 0; j < n; j++)
			k += u[j] = (unsigned char)(s[j].steadiness.unsteady != 0);
		if (k) {
			put(l, "; not steady, so not compared: ");
			put_names(l, s, n, u);
		}
	}
	return 1;
}

/* "shed 12 requests (0.1%): capacity 12" into l; what is the verb. */
static void lost_line(struct line *l, const struct met_summary *s, const char *what,
		      uint64_t count, const struct met_reasons *why)
{
	double pct = s->arrived ? 100.0 * (double)count / (double)s->arrived : 0;
	put(l, "%s %s %llu request%s (%s%.1f%% of those arrived)", s->policy, what,
	    (unsigned long long)count, count == 1 ? "" : "s", pct < 0.05 ? "<" : "",
	    pct < 0.05 ? 0.1 : pct);
	for (size_t i = 0; i < why->n; i++)
		put(l, "%s%s %llu", i ? ", " : ": ", why->reason[i],
		    (unsigned long long)why->count[i]);
}

void res_print_verdict(FILE *f, const struct met_summary *s, size_t n, int baseline,
		       enum res_style style)
{
	res_print_verdict_in(f, s, n, baseline, style, NULL);
}

void res_print_verdict_in(FILE *f, const struct met_summary *s, size_t n, int baseline,
			  enum res_style style, const struct res_verdict_in *in)
{
	if (baseline < 0 || (size_t)baseline >= n)
		baseline = 0;
	unsigned char *pick = malloc(n);
	struct res_spread *sp = malloc(n * sizeof *sp);
	if (style == RES_STYLE_HTML)
		fputs("<ul class=\"verdict\">\n", f);
	if (in && in->capacity) {
		struct line l = {.len = 0};
		put(&l, "%s", in->capacity);
		emit(f, &l, style);
	}
	for (size_t h = 0; pick && sp && h < sizeof headline / sizeof *headline; h++) {
		const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, headline[h]);
		struct line l = {.len = 0};
		if (m && verdict_line(&l, m, s, n, baseline, pick, sp, in))
			emit(f, &l, style);
	}
	int lost = 0;
	for (size_t j = 0; j < n; j++) {
		struct line l = {.len = 0};
		if (s[j].shed) {
			lost_line(&l, &s[j], "shed", s[j].shed, &s[j].shed_why);
			emit(f, &l, style);
			l.len = 0;
			lost = 1;
		}
		if (s[j].failed) {
			lost_line(&l, &s[j], "failed", s[j].failed, &s[j].failed_why);
			emit(f, &l, style);
			lost = 1;
		}
	}
	if (!lost) {
		struct line l = {.len = 0};
		put(&l, "No column shed or failed a request.");
		emit(f, &l, style);
	}
	if (style == RES_STYLE_HTML)
		fputs("</ul>\n", f);
	free(pick);
	free(sp);
}

cJSON *res_verdict_json(const struct met_summary *s, size_t n, int baseline)
{
	return res_verdict_json_spread(s, n, baseline, NULL, NULL);
}

cJSON *res_verdict_json_spread(const struct met_summary *s, size_t n, int baseline,
			       res_spread_fn spread, const void *ctx)
{
	if (baseline < 0 || (size_t)baseline >= n)
		baseline = 0;
	cJSON *a = cJSON_CreateArray();
	unsigned char *pick = malloc(n ? n : 1);
	struct res_spread *sp = malloc((n ? n : 1) * sizeof *sp);
	if (!a || !pick || !sp) {
		cJSON_Delete(a);
		free(pick);
		free(sp);
		return NULL;
	}
	for (size_t h = 0; h < sizeof headline / sizeof *headline; h++) {
		const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, headline[h]);
		if (!m)
			continue;
		for (size_t j = 0; j < n; j++)
			if (!spread || spread(ctx, m, j, &sp[j]))
				sp[j] = one_seed(m, &s[j]);
		size_t top;
		int material;
		size_t named = res_verdict_row(m, s, sp, n, baseline, pick, &top, &material);
		cJSON *o = cJSON_CreateObject(), *best = cJSON_CreateArray();
		if (!o || !best) {
			cJSON_Delete(o);
			cJSON_Delete(best);
			break;
		}
		cJSON_AddItemToArray(a, o);
		cJSON_AddStringToObject(o, "figure", m->path);
		for (size_t j = 0; j < n && named; j++)
			if (pick[j])
				cJSON_AddItemToArray(best, cJSON_CreateString(s[j].policy));
		cJSON_AddItemToObject(o, "best", best);
		double v = named ? sp[top].median : NAN, b = sp[baseline].median;
		if (named && b != 0 && !isnan(b))
			cJSON_AddNumberToObject(o, "change", (v - b) / fabs(b));
		else if (named && v == b)
			cJSON_AddNumberToObject(o, "change", 0);
		else
			cJSON_AddNullToObject(o, "change");
		cJSON_AddBoolToObject(o, "material", material);
	}
	free(pick);
	free(sp);
	return a;
}
