/* attribution: each column's change against the baseline column, split into routing and mechanisms. */
#ifndef KVSIM_ATTRIBUTION_H
#define KVSIM_ATTRIBUTION_H

#include <stddef.h>
#include <stdio.h>

#include "results/writer.h"

struct met_summary;
struct cJSON;

/* The columns s[0..n) against column baseline, and attr[0..n): column
 * j's policy run again under the baseline column's mechanisms (attr[j]
 * with an empty policy name: not attributed, its mechanisms are the
 * baseline's). Per headline figure of the verdict, column j's change
 * (s[j] - s[baseline]) is routing (attr[j] - s[baseline]) plus
 * mechanisms (s[j] - attr[j]). */

/* Whether columns a and b ran with the same mechanisms. */
int res_same_mechanisms(const struct met_summary *a, const struct met_summary *b);
/* s's mechanisms as summary.json's "mechanisms" lists them (the keys of
 * `kvsim list mechanisms`, health's in an object): what forces them at
 * router.policy_params.<policy>. NULL when memory runs out. */
struct cJSON *res_mechanism_keys(const struct met_summary *s);
/* Whether any column is attributed. */
int res_attributed(const struct met_summary *attr, size_t n);
/* The split as a table (one row per headline figure, one column per
 * attributed policy: "-98% (-93% + -5%)", in percent of the baseline's
 * figure), with a line saying how to read it. */
void res_print_attribution(FILE *f, const struct met_summary *s, const struct met_summary *attr,
			   size_t n, int baseline, enum res_style style);
/* The verdict's lines on where each attributed column's material gains
 * come from: "session_affinity against round_robin: TTFT p99 -98%, of it
 * routing -93% and mechanisms -5%; ...". */
void res_print_attribution_verdict(FILE *f, const struct met_summary *s,
				   const struct met_summary *attr, size_t n, int baseline,
				   enum res_style style);
/* comparison.json's "attribution": {policy: {"baseline_mechanisms": the
 * summary of its run under the baseline's mechanisms, "split": {figure:
 * {change, routing, mechanisms}}}} (fractions of the baseline's figure;
 * null where it has none). NULL when memory runs out. */
struct cJSON *res_attribution_json(const struct met_summary *s, const struct met_summary *attr,
				   size_t n, int baseline);

#endif
