/* verdict: the answer a report opens with, written from the comparison table. */
#ifndef KVSIM_VERDICT_H
#define KVSIM_VERDICT_H

#include <stddef.h>
#include <stdio.h>

#include "results/writer.h"

struct met_summary;

/* The verdict over the columns s[0..n): per headline row of the built-in
 * metric table (TTFT p99, TPOT p99, recompute GPU-s, migrated GB, SLO
 * attainment, goodput) that some column has a figure for, the best
 * column(s) (res_best_columns; all tied named) with the figure as the table
 * shows it and its change against column baseline (0..n-1); then each
 * column that shed or failed requests, with how many, the share of those
 * that arrived and the reasons; or one line saying none did. style MD: a
 * Markdown list; HTML: a <ul class="verdict">; TEXT: one line each. */
void res_print_verdict(FILE *f, const struct met_summary *s, size_t n, int baseline,
		       enum res_style style);

#endif
