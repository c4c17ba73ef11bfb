/* report: gnuplot figures and Markdown/HTML reports of a comparison. */
#include "results/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/metrics.h"
#include "results/writer.h"
#include "sim/cfg.h"
#include "sim/config.h"
#include "sim/embedded.h"

/* A gnuplot single-quoted string: a quote is written twice. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* Runs gnuplot on common.gp + script with the variables in vars (pairs of
 * name, value; values quoted as strings), writing out. */
static int gnuplot(const char *script, const char *const *vars, const char *out, const char *fmt,
		   char *err, size_t errlen)
{
	FILE *g = popen("gnuplot 2>&1", "w");
	if (!g) {
		snprintf(err, errlen, "cannot run gnuplot: %s (make deps installs it)",
			 strerror(errno));
		return -1;
	}
	for (; vars && vars[0]; vars += 2) {
		fprintf(g, "%s = ", vars[0]);
		put_quoted(g, vars[1]);
		fputc('\n', g);
	}
	fputs("fmt = ", g);
	put_quoted(g, fmt);
	fputs("\nout = ", g);
	put_quoted(g, out);
	fputc('\n', g);
	fputs(kv_plot_common, g);
	fputs(script, g);
	fputs("\nunset output\n", g);
	int st = pclose(g);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen, "gnuplot failed drawing %s%s", out,
			 WIFEXITED(st) && WEXITSTATUS(st) == 127 ? " (gnuplot not found; make deps "
								    "installs it)"
								  : "");
		return -1;
	}
	return 0;
}

static int figure(struct report_figs *figs, const char *dir, const char *name,
		  const char *caption, const char *script, const char *const *vars, char *err,
		  size_t errlen)
{
	static const char *const fmts[] = {"png", "svg"};
	for (int i = 0; i < 2; i++) {
		char out[4400];
		snprintf(out, sizeof out, "%s/plots/%s.%s", dir, name, fmts[i]);
		if (gnuplot(script, vars, out, fmts[i], err, errlen))
			return -1;
	}
	if (figs->n < REPORT_MAX_FIGS) {
		snprintf(figs->name[figs->n], sizeof figs->name[0], "%s", name);
		snprintf(figs->caption[figs->n], sizeof figs->caption[0], "%s", caption);
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

int res_plot_latency_load(const char *dir, int xcol, const char *x, char *err, size_t errlen)
{
	char plots[4200], csv[4200], col[16];
	snprintf(plots, sizeof plots, "%s/plots", dir);
	snprintf(csv, sizeof csv, "%s/sweep.csv", dir);
	snprintf(col, sizeof col, "%d", xcol);
	if (res_mkdirs(plots, err, errlen))
		return -1;
	const char *vars[] = {"csv", csv, "x", x, "xcol", col, NULL};
	struct report_figs figs = {0};
	return figure(&figs, dir, "latency_load", "Tail latency against load.",
		      kv_plot_latency_load, vars, err, errlen);
}

int res_plot(const char *dir, const char *const *policies, size_t n, struct report_figs *figs,
	     char *err, size_t errlen)
{
	char plots[4200], csv[4200], list[4096] = "";
	snprintf(plots, sizeof plots, "%s/plots", dir);
	if (res_mkdirs(plots, err, errlen))
		return -1;
	snprintf(csv, sizeof csv, "%s/comparison.csv", dir);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list);
		snprintf(list + len, sizeof list - len, "%s%s", i ? " " : "", policies[i]);
	}
	figs->n = 0;
	const char *cdf_ttft[] = {"dir", dir, "policies", list, "metric", "ttft_s", NULL};
	const char *cdf_tpot[] = {"dir", dir, "policies", list, "metric", "tpot_s", NULL};
	const char *by_csv[] = {"csv", csv, NULL};
	if (figure(figs, dir, "ttft_cdf", "Time to first token, CDF per policy (log scale).",
		   kv_plot_latency_cdf, cdf_ttft, err, errlen) ||
	    figure(figs, dir, "tpot_cdf", "Time per output token, CDF per policy (log scale).",
		   kv_plot_latency_cdf, cdf_tpot, err, errlen) ||
	    figure(figs, dir, "tokens",
		   "Where prompt tokens came from: cached, reloaded, migrated, recomputed, fresh.",
		   kv_plot_tokens, by_csv, err, errlen) ||
	    figure(figs, dir, "counts", "KV migrations, shed and failed requests, preemptions.",
		   kv_plot_counts, by_csv, err, errlen))
		return -1;
	for (size_t i = 0; i < n; i++) {
		char ts[4200], name[96], cap[160];
		snprintf(ts, sizeof ts, "%s/%s/timeseries.csv", dir, policies[i]);
		const char *kv[] = {"ts", ts, "what", "kv_util", "name", policies[i], NULL};
		const char *q[] = {"ts", ts, "what", "queued", "name", policies[i], NULL};
		snprintf(name, sizeof name, "kv_util_%s", policies[i]);
		snprintf(cap, sizeof cap, "KV cache utilisation per node over time, %s.", policies[i]);
		if (figure(figs, dir, name, cap, kv_plot_node_timeline, kv, err, errlen))
			return -1;
		snprintf(name, sizeof name, "queue_%s", policies[i]);
		snprintf(cap, sizeof cap, "Queued requests per node over time, %s.", policies[i]);
		if (figure(figs, dir, name, cap, kv_plot_node_timeline, q, err, errlen))
			return -1;
	}
	return 0;
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

/* Writes through a temporary name, as every kvsim output. */
static FILE *open_tmp(const char *final, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	snprintf(tmp, tmplen, "%s.tmp.%ld", final, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
	return f;
}

static int close_tmp(FILE *f, const char *tmp, const char *final, char *err, size_t errlen)
{
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, final) != 0) {
		unlink(tmp);
		snprintf(err, errlen, "%s: write failed", final);
		return -1;
	}
	return 0;
}

int res_report(const char *dir, const char *scenario_json, const struct met_summary *s, size_t n,
	       const struct report_figs *figs, char *err, size_t errlen)
{
	char md[4200], html[4200], tmp[4300];
	snprintf(md, sizeof md, "%s/report.md", dir);
	snprintf(html, sizeof html, "%s/report.html", dir);
	FILE *f = open_tmp(md, tmp, sizeof tmp, err, errlen);
	if (!f)
		return -1;
	fprintf(f, "# kvsim report: %s\n\n", s[0].scenario);
	fprintf(f, "kvsim %s, seed %llu, %zu policies, %zu nodes. Files: `comparison.json`, "
		   "`comparison.csv`, `<policy>/{summary.json,requests.csv,timeseries.csv}`.\n\n",
		s[0].version, (unsigned long long)s[0].seed, n, s[0].n_nodes);
	fputs("## Scenario\n\n```json\n", f);
	fputs(scenario_json, f);
	fputs("\n```\n\n## Comparison\n\n", f);
	res_print_comparison_md(f, s, n);
	fputs("\n## Figures\n\n", f);
	for (size_t i = 0; i < figs->n; i++)
		fprintf(f, "![%s](plots/%s.png)\n\n%s (SVG: `plots/%s.svg`)\n\n", figs->name[i],
			figs->name[i], figs->caption[i], figs->name[i]);
	if (close_tmp(f, tmp, md, err, errlen))
		return -1;

	f = open_tmp(html, tmp, sizeof tmp, err, errlen);
	if (!f)
		return -1;
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kvsim report: ");
	html_escaped(f, s[0].scenario);
	fputs("</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;"
	      "color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:"
	      "3px 8px;text-align:right}td:first-child{text-align:left}pre{background:#f5f5f5;"
	      "padding:1em;overflow:auto}img{max-width:100%}</style></head><body>\n",
	      f);
	fputs("<h1>kvsim report: ", f);
	html_escaped(f, s[0].scenario);
	fprintf(f, "</h1>\n<p>kvsim %s, seed %llu, %zu policies, %zu nodes.</p>\n", s[0].version,
		(unsigned long long)s[0].seed, n, s[0].n_nodes);
	fputs("<h2>Scenario</h2>\n<pre>", f);
	html_escaped(f, scenario_json);
	fputs("</pre>\n<h2>Comparison</h2>\n", f);
	res_print_comparison_html(f, s, n);
	fputs("<h2>Figures</h2>\n", f);
	for (size_t i = 0; i < figs->n; i++) {
		char png[4400];
		snprintf(png, sizeof png, "%s/plots/%s.png", dir, figs->name[i]);
		size_t len = 0;
		char inner[512];
		char *data = cfg_slurp(png, &len, inner, sizeof inner);
		if (!data) {
			fclose(f);
			unlink(tmp);
			snprintf(err, errlen, "%s", inner);
			return -1;
		}
		fprintf(f, "<figure id=\"%s\"><img alt=\"%s\" src=\"data:image/png;base64,",
			figs->name[i], figs->name[i]);
		base64(f, (const unsigned char *)data, len);
		fputs("\"><figcaption>", f);
		html_escaped(f, figs->caption[i]);
		fputs("</figcaption></figure>\n", f);
		free(data);
	}
	fputs("</body></html>\n", f);
	return close_tmp(f, tmp, html, err, errlen);
}
