/* least_loaded: the node with the smallest load metric. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"

static void ll_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	const struct pol_metric_st *s = st;
	(void)r;
	int32_t best = -1;
	double best_load = 0;
	if (s->metric == POL_M_OUTSTANDING && v->least_outstanding) {
		best = v->least_outstanding(v->lctx); /* the same node a scan finds */
		d->kv = MIG_DEFAULT;
		d->reason = best < 0 ? "no_node_up" : NULL;
		d->action = best < 0 ? POL_SHED : POL_ROUTE;
		d->node = best;
		return;
	}
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		if (!v->nodes[i].up)
			continue;
		double l = pol_metric_of(s->metric, &v->nodes[i]);
		if (best < 0 || l < best_load) {
			best = (int32_t)i;
			best_load = l;
		}
	}
	d->kv = MIG_DEFAULT;
	d->reason = best < 0 ? "no_node_up" : NULL;
	d->action = best < 0 ? POL_SHED : POL_ROUTE;
	d->node = best;
}

const struct pol_ops pol_least_loaded = {
    .name = "least_loaded",
    .description = "stateless: the node with the least outstanding requests (or queued "
		   "tokens, or KV utilisation); ties to the lowest id",
    .family = POL_BASELINE,
    .create = pol_metric_create,
    .route = ll_route,
    .destroy = free,
    .reads_kv_util = pol_metric_reads_kv,
};
