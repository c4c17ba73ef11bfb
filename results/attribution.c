/* attribution: each column's change against the baseline column, split into routing and mechanisms. */
#include "results/attribution.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/mech.h"
#include "results/metric_table.h"
#include "results/summary.h"
#include "results/verdict.h"

cJSON *res_mechanism_keys(const struct met_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	if (o)
		mech_json(&s->mech, o);
	return o;
}

int res_same_mechanisms(const struct met_summary *a, const struct met_summary *b)
{
	cJSON *x = res_mechanism_keys(a), *y = res_mechanism_keys(b);
	int same = x && y && cJSON_Compare(x, y, 1);
	cJSON_Delete(x);
	cJSON_Delete(y);
	return same;
}

int res_attributed(const struct met_summary *attr, size_t n)
{
	for (size_t j = 0; attr && j < n; j++)
		if (attr[j].policy[0])
			return 1;
	return 0;
}

/* The change of v against base as a fraction of |base|; NaN without one. */
static double frac(double v, double base)
{
	if (v == base)
		return 0;
	return isnan(v) || isnan(base) || base == 0 ? NAN : (v - base) / fabs(base);
}

/* "-93%" (whole percent from 10% on), "n/a" for NaN. */
static void pct(double x, char *buf, size_t len)
{
	if (isnan(x))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, fabs(x) >= 0.0995 ? "%+.0f%%" : "%+.1f%%", x * 100);
}


/* The row's label without its unit: "TTFT p99". */
static void label_of(const char *name, char *out, size_t len)
{
	while (*name == ' ')
		name++;
	const char *open = strrchr(name, '(');
	if (open && open > name + 1 && open[-1] == ' ')
		snprintf(out, len, "%.*s", (int)(open - 1 - name), name);
	else
		snprintf(out, len, "%s", name);
}

/* The three fractions of row m for column j. */
static void split_of(const struct res_metric *m, const struct met_summary *s,
		     const struct met_summary *attr, size_t j, int b, double *change,
		     double *routing, double *mechanisms)
{
	double base = res_metric_value(m, &s[b]), v = res_metric_value(m, &s[j]),
	       a = res_metric_value(m, &attr[j]);
	*change = frac(v, base);
	*routing = frac(a, base);
	*mechanisms = isnan(*change) || isnan(*routing) ? NAN : *change - *routing;
}

/* Column j's change against the baseline and its routing and mechanisms
 * parts as percentages ("-98%"), into 24-byte buffers. */
static void split_text(const struct res_metric *m, const struct met_summary *s,
		       const struct met_summary *attr, size_t j, int baseline, char *pc, char *pr,
		       char *pk)
{
	double c, r, k;
	split_of(m, s, attr, j, baseline, &c, &r, &k);
	pct(c, pc, 24);
	pct(r, pr, 24);
	pct(k, pk, 24);
}

void res_print_attribution(FILE *f, const struct met_summary *s, const struct met_summary *attr,
			   size_t n, int baseline, enum res_style style)
{
	if (!res_attributed(attr, n))
		return;
	const char *bp = s[baseline].policy;
	if (style == RES_STYLE_HTML)
		fprintf(f, "<p>Each column's change against <code>%s</code>, split: routing (the "
			   "policy run under %s's mechanisms) + mechanisms (the rest), in percent "
			   "of %s's figure.</p>\n<table>\n<tr><th></th>",
			bp, bp, bp);
	else if (style == RES_STYLE_MD)
		fprintf(f, "\nEach column's change against `%s`, split: routing (the policy run "
			   "under %s's mechanisms) + mechanisms (the rest), in percent of %s's "
			   "figure.\n\n| |",
			bp, bp, bp);
	else
		fprintf(f, "\nattribution: each column's change against %s = routing (the policy "
			   "under %s's mechanisms) + mechanisms (the rest)\n%-20s",
			bp, bp, "");
	for (size_t j = 0; j < n; j++)
		if (attr[j].policy[0])
			fprintf(f, style == RES_STYLE_HTML ? "<th>%s</th>"
				   : style == RES_STYLE_MD ? " %s |"
							   : " %28s",
				s[j].policy);
	if (style == RES_STYLE_MD) {
		fputs("\n|---|", f);
		for (size_t j = 0; j < n; j++)
			if (attr[j].policy[0])
				fputs("---:|", f);
	}
	fputs(style == RES_STYLE_HTML ? "</tr>\n" : "\n", f);
	const char *path;
	for (size_t h = 0; (path = res_verdict_headline(h)); h++) {
		const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, path);
		if (!m)
			continue;
		char label[64];
		label_of(m->name, label, sizeof label);
		fprintf(f, style == RES_STYLE_HTML ? "<tr><td>%s</td>"
			   : style == RES_STYLE_MD ? "| %s |"
						   : "%-20s",
			label);
		for (size_t j = 0; j < n; j++) {
			if (!attr[j].policy[0])
				continue;
			char pc[24], pr[24], pk[24], cell[96];
			split_text(m, s, attr, j, baseline, pc, pr, pk);
			snprintf(cell, sizeof cell, "%s = %s + %s", pc, pr, pk);
			fprintf(f, style == RES_STYLE_HTML ? "<td>%s</td>"
				   : style == RES_STYLE_MD ? " %s |"
							   : " %28s",
				cell);
		}
		fputs(style == RES_STYLE_HTML ? "</tr>\n" : "\n", f);
	}
	if (style == RES_STYLE_HTML)
		fputs("</table>\n", f);
}

void res_print_attribution_verdict(FILE *f, const struct met_summary *s,
				   const struct met_summary *attr, size_t n, int baseline,
				   enum res_style style)
{
	for (size_t j = 0; res_attributed(attr, n) && j < n; j++) {
		if (!attr[j].policy[0])
			continue;
		char line[2048];
		size_t len = 0, parts = 0;
		len += (size_t)snprintf(line, sizeof line, "%s against %s, where the gains come from:",
					s[j].policy, s[baseline].policy);
		const char *path;
		for (size_t h = 0; (path = res_verdict_headline(h)) && len < sizeof line - 200; h++) {
			const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, path);
			if (!m)
				continue;
			double v = res_metric_value(m, &s[j]), b = res_metric_value(m, &s[baseline]);
			struct res_spread a = {v, v, v}, z = {b, b, b};
			int better = m->better == RES_BETTER_HIGHER ? v > b : v < b;
			if (!better || !res_material(m, &a, &z))
				continue;
			char pc[24], pr[24], pk[24], label[64];
			split_text(m, s, attr, j, baseline, pc, pr, pk);
			label_of(m->name, label, sizeof label);
			len += (size_t)snprintf(line + len, sizeof line - len,
						"%s %s %s, routing %s and mechanisms %s", parts ? ";" : "",
						label, pc, pr, pk);
			parts++;
		}
		if (!parts)
			len += (size_t)snprintf(line + len, sizeof line - len, " no material gain");
		/* a change against a baseline that drifts grows with the horizon,
		 * and its split with it */
		if (s[baseline].steadiness.unsteady && len < sizeof line)
			snprintf(line + len, sizeof line - len,
				 " (%s is not steady: these shares depend on the horizon; "
				 "compare capacities instead)",
				 s[baseline].policy);
		if (style == RES_STYLE_HTML)
			fprintf(f, "<li>%s</li>\n", line);
		else
			fprintf(f, "%s%s\n", style == RES_STYLE_MD ? "- " : "", line);
	}
}

cJSON *res_attribution_json(const struct met_summary *s, const struct met_summary *attr,
			    size_t n, int baseline)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t j = 0; o && j < n; j++) {
		if (!attr[j].policy[0])
			continue;
		cJSON *col = cJSON_AddObjectToObject(o, s[j].policy);
		cJSON *sum = res_summary_json(&attr[j]);
		if (!col || !sum) {
			cJSON_Delete(sum);
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(sum, "perf");
		cJSON_AddItemToObject(col, "baseline_mechanisms", sum);
		cJSON *split = cJSON_AddObjectToObject(col, "split");
		const char *path;
		for (size_t h = 0; split && (path = res_verdict_headline(h)); h++) {
			const struct res_metric *m = res_metric_find(NULL, RES_LIST_TABLE, path);
			cJSON *row = m ? cJSON_AddObjectToObject(split, path) : NULL;
			if (!row)
				continue;
			double x[3];
			split_of(m, s, attr, j, baseline, &x[0], &x[1], &x[2]);
			static const char *const key[] = {"change", "routing", "mechanisms"};
			for (int k = 0; k < 3; k++)
				if (isnan(x[k]))
					cJSON_AddNullToObject(row, key[k]);
				else
					cJSON_AddNumberToObject(row, key[k], x[k]);
		}
	}
	return o;
}
