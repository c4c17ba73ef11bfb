/* report: figures (gnuplot) and the report.md / report.html of a comparison. */
#ifndef KVSIM_REPORT_H
#define KVSIM_REPORT_H

#include <stddef.h>

struct met_summary;

#define REPORT_MAX_FIGS 160

struct report_figs {
	size_t n;
	char name[REPORT_MAX_FIGS][96];    /* file name without extension, in DIR/plots/ */
	char caption[REPORT_MAX_FIGS][160];
};

/* Draws every figure of a `kvsim compare` folder into DIR/plots/ as PNG and
 * SVG: TTFT and TPOT CDFs, prompt-token sources, migration/shed counts, and
 * per policy KV utilisation and queue length over time. Runs gnuplot with
 * the scripts built into kvsim (those of plot/). Returns 0, or -1 with err. */
int res_plot(const char *dir, const char *const *policies, size_t n, struct report_figs *figs,
	     char *err, size_t errlen);
/* Draws DIR/plots/latency_load.{png,svg} from DIR/sweep.csv, the load in
 * column xcol (1-based) named x. */
int res_plot_latency_load(const char *dir, int xcol, const char *x, char *err, size_t errlen);
/* Reads the policy names from DIR/comparison.csv. Returns the count, or -1. */
int res_read_policies(const char *dir, char names[][48], size_t max, char *err, size_t errlen);
/* Writes DIR/report.md and a self-contained DIR/report.html (figures
 * embedded) with the scenario, the comparison table and the figures. */
int res_report(const char *dir, const char *scenario_json, const struct met_summary *s, size_t n,
	       const struct report_figs *figs, char *err, size_t errlen);

#endif
