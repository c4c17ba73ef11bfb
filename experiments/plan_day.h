/* plan_day: `kvsim plan --search autoscale`: the smallest static fleet against autoscalers over the scenario's whole run. */
#ifndef KVSIM_PLAN_DAY_H
#define KVSIM_PLAN_DAY_H

#include <stddef.h>

struct cJSON;
struct fleet;
struct plan;
struct scenario;

/* An --autoscaler value, read as strictly as cluster.autoscaler in a
 * file: 0 when it is one JSON object with no text after it; -1 when it is
 * not; -2 when a key comes twice (err says which). */
int plan_day_check_autoscaler(const char *v, char *err, size_t errlen);
/* --rank: p->rank set to v when it names a ranking (cost, energy or
 * gpu_hours): 0, or -1 when it names none (nothing reported). */
int plan_day_rank(struct plan *p, const char *v);
/* The options that go with --search autoscale, and those that go only
 * with it: 0, or -1 after reporting. */
int plan_day_check(struct plan *p);
/* The day's plan on fleet fl (the scenario's own GPUs): the smallest
 * static fleet (plan_least on p->node_path, every autoscaler of the pool
 * searched set to "none"), then one run per autoscaler, the table ranked
 * by --rank; each row's JSON appended to answers. Returns 1 when some
 * row meets the SLOs, 0 when none does, -1 on error (reported). */
int plan_day(struct plan *p, const struct scenario *base, const struct fleet *fl,
	     struct cJSON *answers);

#endif
