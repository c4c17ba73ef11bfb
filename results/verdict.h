/* verdict: the answer a report opens with, written from the comparison table. */
#ifndef KVSIM_VERDICT_H
#define KVSIM_VERDICT_H

#include <stddef.h>
#include <stdio.h>

#include "results/noise.h"
#include "results/writer.h"

struct met_summary;
struct res_metric;
struct cJSON;


/* One headline figure's verdict over columns whose figures are sp[0..n)
 * (s: their summaries, for steadiness): best[j] is set for every column
 * whose figure no other column beats beyond noise (latencies: among the
 * steady columns only); top the column with the best median; material
 * whether the best column(s) beat the baseline beyond noise, or (on a
 * latency) are merely ahead of a baseline that is not steady. Returns how
 * many are named best (0: no figure). */
size_t res_verdict_row(const struct res_metric *m, const struct met_summary *s,
		       const struct res_spread *sp, size_t n, int baseline, unsigned char *best,
		       size_t *top, int *material);

/* The summary.json path of the verdict's i-th headline figure; NULL past
 * the last. */
const char *res_verdict_headline(size_t i);

/* The verdict over the columns s[0..n) (one seed each): per headline row
 * of the built-in metric table (TTFT p99, TPOT p99, recompute GPU-s,
 * migrated GB, SLO attainment, goodput, cost per million output tokens, J
 * per output token) that some column has a figure for, the best column(s)
 * with the figure as the table shows it, its change against column
 * baseline (0..n-1) and whether that is material, or "no material
 * difference"; the columns that did not reach a steady state; then each
 * column that shed or failed requests, with how many, the share of those
 * that arrived and the reasons; or one line saying none did. style MD: a
 * Markdown list; HTML: a <ul class="verdict">; TEXT: one line each. */
void res_print_verdict(FILE *f, const struct met_summary *s, size_t n, int baseline,
		       enum res_style style);
/* What a verdict knows beyond one seed's columns: each column's spread over
 * its seeds (spread NULL: one seed each; seeds: how many), and capacity, a
 * sentence printed first (NULL: none). */
typedef int (*res_spread_fn)(const void *ctx, const struct res_metric *m, size_t j,
			     struct res_spread *out);
struct res_verdict_in {
	res_spread_fn spread;
	const void *ctx;
	int seeds;
	const char *capacity;
};
/* res_print_verdict with the seeds' spread: figures are medians with their
 * range and materiality is judged on the ranges, as in comparison.json. */
void res_print_verdict_in(FILE *f, const struct met_summary *s, size_t n, int baseline,
			  enum res_style style, const struct res_verdict_in *in);
/* The same as comparison.json's "verdict": a list of {figure, best
 * (every tied column), change (the best figure's against the baseline, a
 * fraction; null without a figure), material}. NULL when memory runs out. */
struct cJSON *res_verdict_json(const struct met_summary *s, size_t n, int baseline);
/* The same with each column's spread of a figure over its seeds from
 * spread (column j of s; 0: out filled, else one seed, min = median = max
 * = its figure); spread NULL: one seed each. */
struct cJSON *res_verdict_json_spread(const struct met_summary *s, size_t n, int baseline,
				      res_spread_fn spread, const void *ctx);

#endif
