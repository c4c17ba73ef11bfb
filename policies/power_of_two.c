/* power_of_two: two nodes drawn at random, the less loaded one. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"

/* Mitzenmacher's two choices: draw a, then b != a, both uniform over the
 * nodes that are up; the lower metric wins, a on a tie. */
static void p2_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	const struct pol_metric_st *s = st;
	(void)r;
	uint32_t up = v->n_up;
	int all_up = up == v->n_nodes;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	if (up == 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = "no_node_up";
		return;
	}
	uint32_t ka = (uint32_t)gsl_rng_uniform_int(s->rng, up), kb = ka;
	if (up > 1) {
		kb = (uint32_t)gsl_rng_uniform_int(s->rng, up - 1);
		kb += kb >= ka;
	}
	int32_t a = all_up ? (int32_t)ka : pol_kth_up(v, ka), b = all_up ? (int32_t)kb : pol_kth_up(v, kb);
	if (s->metric == POL_M_KV_UTIL && v->sync_kv) {
		const uint32_t two[2] = {(uint32_t)a, (uint32_t)b};
		v->sync_kv(v->ctx, two, 2);
	}
	d->node = pol_metric_of(s->metric, &v->nodes[b]) < pol_metric_of(s->metric, &v->nodes[a]) ? b
												       : a;
}

/* Only the two candidates' KV figures are read. */
static int p2_reads_kv(const void *st)
{
	return pol_metric_reads_kv(st) ? POL_READS_KV_SOME : 0;
}

const struct pol_ops pol_power_of_two = {
    .name = "power_of_two",
    .description = "stateless: two distinct nodes drawn at random, the one with fewer "
		   "outstanding requests (or metric); O(1) per request",
    .family = POL_BASELINE,
    .create = pol_metric_create,
    .route = p2_route,
    .destroy = free,
    .reads_kv_util = p2_reads_kv,
};
