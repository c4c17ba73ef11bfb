/* report: figures (gnuplot) and the report.md / report.html of a comparison. */
#ifndef KVSIM_REPORT_H
#define KVSIM_REPORT_H

#include <stddef.h>

struct res_verdict_in;

struct met_summary;

#define REPORT_MAX_FIGS 160

struct report_figs {
	size_t n;
	char name[REPORT_MAX_FIGS][96];    /* file name without extension, in DIR/plots/ */
	char caption[REPORT_MAX_FIGS][512]; /* what the figure shows and what to look for */
	/* 1: a figure of one policy's nodes (or scaling) over time, folded in
	 * the report under one section after the others */
	unsigned char fold[REPORT_MAX_FIGS];
	int folding; /* the fold of the figures drawn next */
};

/* Draws every figure of a `kvsim compare` folder into DIR/plots/ as PNG and
 * SVG: TTFT and TPOT tails (the share of requests at least as slow, each
 * p99 marked, the SLO as a line), the cluster's TTFT p99 and throughput
 * over time, prompt-token sources, migration/shed counts, the
 * mean TTFT split of a disaggregated cluster (comparison.csv has its
 * columns), each pool's busy ratio and KV use when the policies'
 * summary.json files name more than one pool, and per policy KV
 * utilisation and queue length over time (folded: figs->fold). Runs gnuplot with
 * the scripts built into kvsim (those of plot/). A figure with nothing to
 * draw (no request completed, none got a second token, no samples) is
 * drawn with a note saying so. Each file appears whole or not at all, and
 * gnuplot's own output never reaches stdout. Returns 0; 2 with err naming
 * the file (and line) when the folder's CSV or summary.json files are
 * missing or damaged;
 * 3 with err when drawing or writing failed. */
int res_plot(const char *dir, const char *const *policies, size_t n, struct report_figs *figs,
	     char *err, size_t errlen);
/* A sweep's DIR/plots/latency_load.{png,svg} from DIR/plots/latency_load.dat
 * (swp_latency_load_data: a block per series, named in series, blank-
 * separated; rows in all), the load named x; a note when no point
 * finished. 0, or 3 with err. */
int res_plot_latency_load(const char *dir, const char *x, const char *series, long rows,
			  char *err, size_t errlen);
/* compare --rates' figure, DIR/plots/latency_load.{png,svg} (the load x), from
 * DIR/plots/latency_load.dat (one block per policy, in the order of the
 * blank-separated names in policies, each with a header line: rate,
 * ttft_p99_s, tpot_p99_s, and the TTFT at the policy's capacity or NaN),
 * with the SLO lines (0: none). 0,
 * or 3 with err. */
int res_plot_capacity(const char *dir, const char *x, const char *policies, double slo_ttft_s,
		      double slo_tpot_s, struct report_figs *figs, char *err, size_t errlen);
/* Reads the policy names from DIR/comparison.csv. Returns the count, or -1. */
int res_read_policies(const char *dir, char names[][48], size_t max, char *err, size_t errlen);
/* Writes DIR/report.md and a self-contained DIR/report.html (figures
 * embedded), in this order: the verdict (res_print_verdict against column
 * baseline; out of range: the first), the comparison table with each row's
 * best figure marked and the changes against the baseline, the pools
 * (res_print_pools; with more than one), the figures,
 * the mechanisms each column ran with, and the scenario (scenario_json as
 * given; in HTML folded in <details>). attr (NULL: none): each column's
 * run under the baseline's mechanisms (results/attribution.h); the verdict
 * then says where the gains come from and the table is followed by the
 * split. in (NULL: one seed, no capacity): the seeds' spread and the
 * capacity sentence the verdict uses (res_print_verdict_in). Both appear or
 * neither. */
int res_report(const char *dir, const char *scenario_json, const struct met_summary *s,
	       const struct met_summary *attr, size_t n, int baseline,
	       const struct report_figs *figs, const struct res_verdict_in *in, char *err,
	       size_t errlen);

#endif
