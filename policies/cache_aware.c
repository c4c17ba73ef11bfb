/* cache_aware: SGLang's cache-aware router rule. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/prompt_index.h"
#include "policies/registry.h"
#include "config/cfg.h"
#include "sim/request.h"

struct ca {
	struct prompt_index idx;
	uint32_t block_tokens;
	double abs_threshold, rel_threshold, cache_threshold;
};

static void *ca_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"abs_threshold", "rel_threshold", "cache_threshold",
					   "max_tree_blocks", NULL};
	double abs_t = 32, rel_t = 1.1, cache_t = 0.5;
	int64_t cap = 32768;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_number(params, path, "abs_threshold", 0, 1e12, &abs_t, err, errlen) ||
	    cfg_number(params, path, "rel_threshold", 1, 1e12, &rel_t, err, errlen) ||
	    cfg_number(params, path, "cache_threshold", 0, 1, &cache_t, err, errlen) ||
	    cfg_int(params, path, "max_tree_blocks", 0, (int64_t)1 << 32, &cap, err, errlen))
		return NULL;
	struct ca *s = calloc(1, sizeof *s);
	if (!s || prompt_index_init(&s->idx, env->n_nodes, (size_t)cap)) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->block_tokens = env->block_tokens;
	s->abs_threshold = abs_t;
	s->rel_threshold = rel_t;
	s->cache_threshold = cache_t;
	return s;
}

/* Load is the router's count of outstanding requests per node (SGLang's
 * running-request counter). Ties go to the lowest id throughout. */
static void ca_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct ca *s = st;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	d->hashed_tokens = r->prompt_tokens;
	int32_t lo = -1, hi = -1;
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		if (!v->nodes[i].up)
			continue;
		if (lo < 0 || v->nodes[i].outstanding < v->nodes[lo].outstanding)
			lo = (int32_t)i;
		if (hi < 0 || v->nodes[i].outstanding > v->nodes[hi].outstanding)
			hi = (int32_t)i;
	}
	if (lo < 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = "no_node_up";
		return;
	}
	double mx = v->nodes[hi].outstanding, mn = v->nodes[lo].outstanding;
	if (mx - mn > s->abs_threshold && mx > s->rel_threshold * mn) {
		d->node = lo; /* imbalanced: shortest queue */
		return;
	}
	uint32_t n = pol_prompt_blocks(r, s->block_tokens);
	uint32_t best = prompt_index_match_longest(&s->idx, r->hashes, n);
	double rate = r->prompt_tokens ? (double)best * s->block_tokens / r->prompt_tokens : 0;
	int32_t pick = -1;
	if (best > 0 && rate > s->cache_threshold) {
		/* The longest match; among equals, the least loaded. */
		for (uint32_t k = 0; k < s->idx.n_touched; k++) {
			uint32_t i = s->idx.touched[k];
			if (s->idx.match[i] != best || !v->nodes[i].up)
				continue;
			if (pick < 0 || v->nodes[i].outstanding < v->nodes[pick].outstanding ||
			    (v->nodes[i].outstanding == v->nodes[pick].outstanding &&
			     i < (uint32_t)pick))
				pick = (int32_t)i;
		}
	}
	prompt_index_match_done(&s->idx);
	if (pick < 0) {
		/* Low match: the node whose tree is smallest. */
		for (uint32_t i = 0; i < v->n_nodes; i++)
			if (v->nodes[i].up && (pick < 0 || s->idx.size[i] < s->idx.size[pick]))
				pick = (int32_t)i;
	}
	d->node = pick;
}

static void ca_dispatch(void *st, const struct request *r, int32_t node)
{
	struct ca *s = st;
	/* Out of memory leaves the record shorter: it is approximate anyway. */
	(void)prompt_index_insert(&s->idx, (uint32_t)node, r->hashes,
				  pol_prompt_blocks(r, s->block_tokens));
}

static void ca_destroy(void *st)
{
	struct ca *s = st;
	prompt_index_free(&s->idx);
	free(s);
}

const struct pol_ops pol_cache_aware = {
    .name = "cache_aware",
    .description = "stateful (SGLang router): shortest queue when imbalanced, else the longest "
		   "match in per-node trees of routed prompts if > cache_threshold, else the "
		   "smallest tree",
    .family = POL_PRODUCT,
    .product = "SGLang router",
    .create = ca_create,
    .route = ca_route,
    .on_dispatch = ca_dispatch,
    .destroy = ca_destroy,
};
