/* verdict: the answer a report opens with, written from the comparison table. */
#include "results/verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metric_table.h"
#include "results/metrics.h"

/* The rows the verdict speaks of, by summary.json path: the latencies users
 * feel, the work and traffic the policies differ by (docs/outputs.md). */
static const char *const headline[] = {"ttft_s.p99",	  "tpot_s.p99",	    "recompute_gpu_s",
				       "migration.bytes", "slo.attainment", "slo.goodput_rps"};

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

/* One headline row ("no data" when no column has a figure for it). */
static int verdict_row(struct line *l, const struct res_metric *m, const struct met_summary *s,
		       size_t n, int baseline, unsigned char *pick)
{
	char label[64], unit[16], fig[96];
	label_unit(m->name, label, sizeof label, unit, sizeof unit);
	size_t named = res_best_columns(m, s, n, pick);
	if (!named) /* nothing beaten: every column with a figure ties (or one has one) */
		for (size_t j = 0; j < n; j++)
			named += pick[j] = !isnan(res_shown_value(m, &s[j]));
	if (!named) { /* no column has a sample (or a price) */
		put(l, "%s: no data", label);
		return 1;
	}
	size_t first = 0;
	while (!pick[first])
		first++;
	put(l, "%s: ", label);
	if (named == n && n > 1) {
		put(l, "all %zu columns tie", n);
	} else {
		for (size_t j = first, k = 0; j < n; j++) {
			if (!pick[j])
				continue;
			k++;
			put(l, "%s%s", k == 1 ? "" : k == named ? " and " : ", ", s[j].policy);
		}
		if (named > 1)
			put(l, " tie");
	}
	figure_text(m, &s[first], unit, fig, sizeof fig);
	put(l, "%s%s", named > 1 ? " at " : " ", fig);
	if (n < 2)
		return 1;
	if (pick[baseline]) {
		put(l, "%s", named > 1 ? ", the baseline among them" : " (the baseline)");
		return 1;
	}
	char pct[24];
	res_delta_pct(res_shown_value(m, &s[first]), res_shown_value(m, &s[baseline]), pct,
		      sizeof pct);
	figure_text(m, &s[baseline], unit, fig, sizeof fig);
	put(l, ", %s against %s (%s)", pct, s[baseline].policy, fig);
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
	if (baseline < 0 || (size_t)baseline >= n)
		baseline = 0;
	unsigned char pick_small[64], *pick = n <= sizeof pick_small ? pick_small : malloc(n);
	if (style == RES_STYLE_HTML)
		fputs("<ul class=\"verdict\">\n", f);
	for (size_t h = 0; pick && h < sizeof headline / sizeof *headline; h++) {
		const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, headline[h]);
		struct line l = {.len = 0};
		if (m && verdict_row(&l, m, s, n, baseline, pick))
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
	if (pick != pick_small)
		free(pick);
}
