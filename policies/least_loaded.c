/* least_loaded: the node with the smallest load metric. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/cfg.h"

enum ll_metric { LL_OUTSTANDING, LL_QUEUED_TOKENS, LL_KV_UTIL };

struct ll {
	enum ll_metric metric;
};

static void *ll_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"metric", NULL};
	static const char *const metrics[] = {"outstanding", "queued_tokens", "kv_util", NULL};
	int m = LL_OUTSTANDING;
	(void)env;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_enum(params, path, "metric", metrics, &m, err, errlen))
		return NULL;
	struct ll *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->metric = (enum ll_metric)m;
	return s;
}

static double load_of(const struct ll *s, const struct pol_node_view *n)
{
	switch (s->metric) {
	case LL_QUEUED_TOKENS:
		return (double)n->queued_tokens;
	case LL_KV_UTIL:
		return n->kv_util;
	default:
		return n->outstanding;
	}
}

static void ll_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct ll *s = st;
	(void)r;
	int32_t best = -1;
	double best_load = 0;
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		if (!v->nodes[i].up)
			continue;
		double l = load_of(s, &v->nodes[i]);
		if (best < 0 || l < best_load) {
			best = (int32_t)i;
			best_load = l;
		}
	}
	d->kv = POL_KV_DEFAULT;
	d->reason = best < 0 ? "no_node_up" : NULL;
	d->action = best < 0 ? POL_SHED : POL_ROUTE;
	d->node = best;
}

static int ll_reads_kv_util(const void *st)
{
	return ((const struct ll *)st)->metric == LL_KV_UTIL;
}

const struct pol_ops pol_least_loaded = {
    .name = "least_loaded",
    .description = "stateless: the node with the least outstanding requests (or queued "
		   "tokens, or KV utilisation); ties to the lowest id",
    .create = ll_create,
    .route = ll_route,
    .destroy = free,
    .reads_kv_util = ll_reads_kv_util,
};
