/* common: small helpers the policies share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "config/cfg.h"
#include "sim/request.h"

int32_t pol_kth_up(const struct pol_view *v, uint32_t k)
{
	for (uint32_t i = 0; i < v->n_nodes; i++)
		if (v->nodes[i].up && k-- == 0)
			return (int32_t)i;
	return -1;
}

uint32_t pol_prompt_blocks(const struct request *r, uint32_t block_tokens)
{
	uint32_t full = r->prompt_tokens / block_tokens;
	return full < r->n_hashes ? full : r->n_hashes;
}

void pol_cached_bound_init(struct pol_cached_bound *b, const struct pol_view *v,
			   const struct request *r, uint32_t most)
{
	int n = most && v->cached_prefix && v->private_nodes ? v->private_nodes(v->ctx, r, &b->own)
							      : -1;
	b->known = n >= 0;
	b->n_own = n > 0 ? (uint32_t)n : 0;
	b->most = most;
	b->elsewhere = b->known && r->n_shared < most ? r->n_shared : most;
}

/* Mirrokni et al.'s bounded loads: with the new request counted, no node
 * may exceed ceil(c * mean). */
uint32_t pol_bounded_cap(const struct pol_view *v, double c)
{
	if (v->n_up == 0)
		return 0;
	return (uint32_t)ceil(c * (double)(v->total_outstanding + 1) / (double)v->n_up - 1e-9);
}

int pol_metric_param(const struct cJSON *params, const char *path, enum pol_metric *m, char *err,
		     size_t errlen)
{
	static const char *const metrics[] = {"outstanding", "queued_tokens", "kv_util",
					      "kv_blocks", NULL};
	int k = POL_M_OUTSTANDING;
	if (cfg_enum(params, path, "metric", metrics, &k, err, errlen))
		return -1;
	*m = (enum pol_metric)k;
	return 0;
}

int pol_always(const void *st)
{
	(void)st;
	return 1;
}

int pol_metric_reads_kv(const void *st)
{
	return ((const struct pol_metric_st *)st)->metric == POL_M_KV_UTIL;
}

void *pol_metric_create(const struct cJSON *params, const char *path, const struct pol_env *env,
			char *err, size_t errlen)
{
	static const char *const keys[] = {"metric", NULL};
	enum pol_metric m;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    pol_metric_param(params, path, &m, err, errlen))
		return NULL;
	struct pol_metric_st *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->metric = m;
	s->rng = env->rng;
	return s;
}

