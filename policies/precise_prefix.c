/* precise_prefix: the longest real cache hit under a load bound (an oracle). */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"
#include "sim/request.h"

struct pp {
	double load_factor;
	uint32_t block_tokens;
};

static void *pp_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"load_factor", NULL};
	double c = 1.25;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_number(params, path, "load_factor", 1, 1e9, &c, err, errlen))
		return NULL;
	struct pp *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->load_factor = c;
	s->block_tokens = env->block_tokens;
	return s;
}

/* Whether node i with hit blocks cached beats the pick so far: more
 * blocks, then fewer outstanding, then the lower id (a total order, so
 * the winner does not depend on the order nodes are asked in). */
static int beats(const struct pol_view *v, uint32_t i, uint32_t hit, int32_t pick, uint32_t best)
{
	if (pick < 0 || hit != best)
		return pick < 0 || hit > best;
	uint32_t a = v->nodes[i].outstanding, b = v->nodes[pick].outstanding;
	return a < b || (a == b && (int32_t)i < pick);
}

/* Among the nodes up whose outstanding requests stay within the bounded
 * load ceil(load_factor * mean) with this one, the node holding the most
 * of the prompt's blocks in HBM right now (the exact cluster-wide index);
 * ties to the fewest outstanding, then the lowest id. The least-loaded
 * node always qualifies, so nothing is shed while a node is up.
 *
 * The nodes the session ran on are asked first: elsewhere at most the
 * prompt's shared blocks can be cached (pol_view.private_nodes), so once
 * the session's node has more, the others are passed over unasked. */
static void pp_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	const struct pp *s = st;
	uint32_t cap = pol_bounded_cap(v, s->load_factor);
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	d->hashed_tokens = r->prompt_tokens;
	int32_t pick = -1;
	uint32_t best = 0;
	struct pol_cached_bound cb;
	pol_cached_bound_init(&cb, v, r, pol_prompt_blocks(r, s->block_tokens));
	for (uint32_t k = 0; k < cb.n_own + v->n_nodes; k++) {
		/* first the session's nodes, then every node not among them */
		uint32_t i = k < cb.n_own ? (uint32_t)cb.own[k] : k - cb.n_own;
		int listed = k < cb.n_own || pol_cached_bound_lists(&cb, i);
		if (k >= cb.n_own && listed)
			continue; /* asked already */
		const struct pol_node_view *nv = &v->nodes[i];
		if (!nv->up || nv->outstanding >= cap)
			continue;
		uint32_t most_here = listed || !cb.known ? cb.most : cb.elsewhere;
		if (pick >= 0 && !beats(v, i, most_here, pick, best))
			continue; /* cannot win even with all it could hold */
		uint32_t hit = most_here && v->cached_prefix ? v->cached_prefix(v->ctx, i, r) : 0;
		if (beats(v, i, hit, pick, best)) {
			pick = (int32_t)i;
			best = hit;
		}
	}
	if (pick < 0) {
		d->action = POL_SHED;
		d->reason = "no_node_up";
	}
	d->node = pick;
}

const struct pol_ops pol_precise_prefix = {
    .name = "precise_prefix",
    .description = "oracle: the longest prefix really cached in HBM (exact cluster-wide "
		   "index) among nodes under load_factor x mean load",
    .family = POL_PRODUCT,
    /* llm-d's endpoint picker refreshes each pod's metrics every 50 ms
     * (DefaultRefreshMetricsInterval) */
    .report_interval_ms = 50,
    .product = "llm-d (precise prefix-cache scorer)",
    .create = pp_create,
    .route = pp_route,
    .destroy = free,
    .looks_up_cache = pol_always,
    /* No KV utilisation read: cached_prefix brings each node it asks up
     * to date itself. */
};
