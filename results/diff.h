/* diff: metric-by-metric comparison of two runs, knowing which way is better. */
#ifndef KVSIM_DIFF_H
#define KVSIM_DIFF_H

#include <stddef.h>
#include <stdio.h>

struct cJSON;
struct res_metrics;

struct diff_opts {
	double tolerance_pct; /* a metric worse by more than this is a regression */
	/* comma-separated metric paths (blanks around each ignored; at least
	 * one), or NULL for the default set */
	const char *metrics;
	/* the files' names for messages, or NULL for "base" and "new" */
	const char *base_name, *new_name;
};

struct diff_counts {
	size_t compared, regressions, improvements, missing;
};

/* Compares two summary.json objects, or two comparison.json arrays (entries
 * matched by "policy"). Prints a table to out. A metric (or policy) in base
 * but not in new counts as a regression: the contract shrank. Returns 0, or
 * -1 with err on input that is not a kvsim summary, a compared figure that
 * is not a finite number >= 0 (err names the file and path), or a base that
 * holds none of the metrics compared (a check of nothing must not pass). perf.* figures are only
 * compared when named in metrics. */
int res_diff(const struct cJSON *base, const struct cJSON *new_, const struct diff_opts *o,
	     FILE *out, struct diff_counts *c, char *err, size_t errlen);
/* res_diff over the RES_M_DIFF rows of t (RES_M_DIFF_NAMED too when named;
 * NULL: the built-in metric table). */
int res_diff_with(const struct cJSON *base, const struct cJSON *new_, const struct diff_opts *o,
		  const struct res_metrics *t, FILE *out, struct diff_counts *c, char *err,
		  size_t errlen);
/* Reads file, a kvsim summary.json or comparison.json, into *out: 0, or
 * -1 with err (the file unreadable, or not JSON). Caller frees with
 * cJSON_Delete. */
int res_diff_read(const char *file, struct cJSON **out, char *err, size_t errlen);
/* The metric paths diff knows, one line each with its better direction. */
void res_diff_list(FILE *out);
/* res_diff_list over the rows of t (NULL: the built-in metric table). */
void res_diff_list_with(FILE *out, const struct res_metrics *t);

#endif
