/* kv_cost: NVIDIA Dynamo's KV-aware router cost. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "sim/cfg.h"
#include "sim/request.h"

struct kc {
	gsl_rng *rng;
	uint32_t block_tokens, n_nodes;
	double overlap_weight, temperature;
	double *cost; /* scratch, per node */
};

static void *kc_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"overlap_weight", "temperature", NULL};
	double w = 1.0, t = 0.0;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_number(params, path, "overlap_weight", 0, 1e9, &w, err, errlen) ||
	    cfg_number(params, path, "temperature", 0, 1e9, &t, err, errlen))
		return NULL;
	struct kc *s = calloc(1, sizeof *s);
	if (s)
		s->cost = malloc(env->n_nodes * sizeof *s->cost);
	if (!s || !s->cost) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rng = env->rng;
	s->block_tokens = env->block_tokens;
	s->n_nodes = env->n_nodes;
	s->overlap_weight = w;
	s->temperature = t;
	return s;
}

/* cost(node) = overlap_weight * prefill blocks still to compute there
 *            + KV blocks its active requests hold,
 * where prefill blocks = prompt_tokens / B - blocks of the prompt cached on
 * the node (the exact index, as Dynamo's KV events give it). temperature 0:
 * the minimum, ties drawn uniformly; else a draw with probability
 * proportional to exp(-(cost - min) / (max - min) / temperature). */
static void kc_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct kc *s = st;
	d->kv = POL_KV_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	d->hashed_tokens = r->prompt_tokens;
	double need = (double)r->prompt_tokens / s->block_tokens, lo = INFINITY, hi = -INFINITY;
	uint32_t n_lo = 0, most = v->cached_prefix ? pol_prompt_blocks(r, s->block_tokens) : 0;
	int32_t pick = -1;
	int prune = s->temperature == 0;
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		if (!v->nodes[i].up)
			continue;
		/* The cost with the whole prompt cached bounds the node's cost from
		 * below (floating-point operations are monotone). At temperature 0
		 * a node whose bound exceeds the minimum so far can neither be the
		 * minimum nor tie it, so it draws nothing and its index lookup is
		 * skipped: the picks and draws are those of the full scan. */
		double c = s->overlap_weight * (need - most) + v->nodes[i].kv_used_blocks;
		if (prune && c > lo)
			continue;
		uint32_t hit = most ? v->cached_prefix(v->ctx, i, r) : 0;
		if (hit != most)
			c = s->overlap_weight * (need - hit) + v->nodes[i].kv_used_blocks;
		s->cost[i] = c;
		if (c > hi)
			hi = c;
		if (c < lo) {
			lo = c;
			n_lo = 0;
		}
		/* Reservoir draw among the minima. */
		if (c == lo && (++n_lo == 1 || gsl_rng_uniform_int(s->rng, n_lo) == 0))
			pick = (int32_t)i;
	}
	if (pick < 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = "no_node_up";
		return;
	}
	if (s->temperature > 0 && hi > lo) {
		double sum = 0;
		for (uint32_t i = 0; i < v->n_nodes; i++)
			if (v->nodes[i].up)
				sum += exp(-(s->cost[i] - lo) / (hi - lo) / s->temperature);
		double u = gsl_rng_uniform(s->rng) * sum;
		for (uint32_t i = 0; i < v->n_nodes; i++) {
			if (!v->nodes[i].up)
				continue;
			pick = (int32_t)i;
			u -= exp(-(s->cost[i] - lo) / (hi - lo) / s->temperature);
			if (u < 0)
				break;
		}
	}
	d->node = pick;
}

static void kc_destroy(void *st)
{
	struct kc *s = st;
	free(s->cost);
	free(s);
}

const struct pol_ops pol_kv_cost = {
    .name = "kv_cost",
    .description = "stateless (Dynamo KV router): min of overlap_weight x prefill blocks to "
		   "compute + active KV blocks, from the exact cache index; optional softmax",
    .create = kc_create,
    .route = kc_route,
    .destroy = kc_destroy,
    .reads_kv_util = pol_reads_kv_always,
};
