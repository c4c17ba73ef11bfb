/* plan_rank: kvsim plan's searches in worker processes, the binding SLO as text and JSON, the ranking of the answers. */
#ifndef KVSIM_PLAN_RANK_H
#define KVSIM_PLAN_RANK_H

#include <stdio.h>

#include "experiments/plan_pools.h"

struct cJSON;

/* b as text: "TPOT p99 0.0312 s > 0.03 s at cluster.nodes=14 (also
 * TTFT p99)", or "no SLO bound within the range (--max 64 reached)". */
void plan_bind_text(const struct plan_bind *b, char *buf, size_t len);
/* b as plan.json's "binding": {slo, value, limit, at, also}, or {slo:
 * null, note}. Caller frees as any cJSON tree. */
struct cJSON *plan_bind_json(const struct plan_bind *b);

/* One search, task i of plan_run_tasks: what it prints on stdout is
 * shown after every task before it; its result goes to out (read back
 * by the caller). CLI_OK, or a CLI_* code after reporting. */
typedef int (*plan_task_fn)(void *ctx, int i, FILE *out);
/* Runs tasks 0..n-1 in up to jobs worker processes (jobs <= 1: here, in
 * order), each task's stdout printed in task order, so the output is the
 * same whatever jobs; out[i] (n tmpfiles, made here, rewound) holds task
 * i's result. CLI_OK, or the first failure's code; the caller closes
 * out's files. */
int plan_run_tasks(int n, int jobs, plan_task_fn fn, void *ctx, FILE **out);

/* The answers res[0..n) in rank order into order: those that meet the
 * SLOs before those that do not; then cheapest per hour first (a node
 * search, pd_ratio without --gpus-total), most output tokens per dollar
 * first (rate), most requests within the SLOs per dollar first (pd_ratio
 * of --gpus-total); ties to the higher goodput, then the order given. */
void plan_rank_order(const struct plan *p, const struct answer *res, int n, int *order);
/* The ranking of res[0..n) (plan_rank_order) as plan.json's "ranking":
 * per answer its rank (null when it misses the SLOs), policy (with
 * --policies), fleet, layout, answer, cost per hour, USD per million
 * output tokens, goodput and binding; with print, also as a table on
 * stdout. Caller frees as any cJSON tree. */
struct cJSON *plan_ranking(const struct plan *p, const struct answer *res, int n, int print);

/* pd_ratio: whether the split pays against the colocated layout. With
 * --gpus-total, on the same GPUs, by goodput; without, by cost per hour
 * (then by goodput when equal). Adds "pd_pays" (true, false, or null
 * when neither meets the SLOs) and "pd_gain" (the split's goodput or
 * saving as a fraction of the colocated layout's) to a; one line to out
 * (NULL: none). */
void plan_pd_verdict(const struct plan *p, const struct answer *split,
		     const struct answer *coloc, struct cJSON *a, FILE *out);

#endif
