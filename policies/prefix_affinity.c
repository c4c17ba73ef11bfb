/* prefix_affinity: "semantic" affinity on a hash of the prompt's first K tokens. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "policies/sticky.h"
#include "config/cfg.h"
#include "sim/request.h"
#include "base/rng.h"

struct pa {
	struct sticky map;
	uint32_t key_blocks; /* K / block_tokens, at least 1 */
	uint32_t block_tokens;
	/* Sessions whose KV the router moved off their key's node ahead of
	 * a turn (on_move): session -> node + 1. They follow their KV, not
	 * their key (moving the key would take the whole group, and the hot
	 * spot, along), until they end. */
	struct hmap moved;
};

static void *pa_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const extra[] = {"prefix_tokens", NULL};
	struct pa *s = malloc(sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	int64_t k = 256;
	if (sticky_init(&s->map, params, path, extra, env, err, errlen)) {
		free(s);
		return NULL;
	}
	if (cfg_int(params, path, "prefix_tokens", 1, 100000000, &k, err, errlen)) {
		sticky_free(&s->map);
		free(s);
		return NULL;
	}
	hmap_init(&s->moved);
	s->block_tokens = env->block_tokens;
	s->key_blocks = (uint32_t)((uint64_t)k / env->block_tokens);
	if (s->key_blocks == 0)
		s->key_blocks = 1;
	return s;
}

/* The block hash at K tokens names the first K tokens (hashes chain). A
 * prompt shorter than K is keyed by all its full blocks; one shorter than a
 * block by its session (nothing shareable to follow). */
static uint64_t key_of(const struct pa *s, const struct request *r)
{
	uint32_t full = r->prompt_tokens / s->block_tokens;
	if (full > r->n_hashes)
		full = r->n_hashes;
	uint32_t k = full < s->key_blocks ? full : s->key_blocks;
	if (k == 0)
		return rng_mix64(r->session) | 1;
	return r->hashes[k - 1];
}

static void pa_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct pa *s = st;
	const uint64_t *mv = s->moved.count ? hmap_get(&s->moved, r->session) : NULL;
	int32_t own = mv ? (int32_t)(*mv - 1) : -1;
	if (own >= 0 && (uint32_t)own < v->n_nodes && v->nodes[own].up &&
	    v->nodes[own].outstanding < s->map.threshold) {
		/* the sticky rule's stay, on the node its KV moved to */
		d->action = POL_ROUTE;
		d->node = own;
		d->kv = MIG_DEFAULT;
		d->reason = NULL;
		d->store_reads = 1;
		d->store_writes = 0;
	} else {
		sticky_route(&s->map, v, key_of(s, r), d);
	}
	uint32_t full = pol_prompt_blocks(r, s->block_tokens);
	d->hashed_tokens = (full < s->key_blocks ? full : s->key_blocks) * s->block_tokens;
}

static void pa_dispatch(void *st, const struct request *r, int32_t node)
{
	struct pa *s = st;
	uint64_t *mv = s->moved.count ? hmap_get(&s->moved, r->session) : NULL;
	if (mv)
		*mv = (uint64_t)node + 1; /* a moved session stays where it runs */
	else
		sticky_set(&s->map, key_of(s, r), node);
}

static void pa_move(void *st, const struct request *next_turn, int32_t node)
{
	struct pa *s = st;
	hmap_put(&s->moved, next_turn->session, (uint64_t)node + 1); /* out of memory: not recorded */
}

static void pa_complete(void *st, const struct request *r, int32_t node, int session_done)
{
	struct pa *s = st;
	(void)node;
	if (session_done && s->moved.count)
		hmap_del(&s->moved, r->session);
}

static void pa_destroy(void *st)
{
	struct pa *s = st;
	sticky_free(&s->map);
	hmap_free(&s->moved);
	free(s);
}

const struct pol_ops pol_prefix_affinity = {
    .name = "prefix_affinity",
    .description = "stateful: affinity on a hash of the first prefix_tokens tokens (shared "
		   "system prompts, RAG documents), same threshold/fallback as session_affinity",
    .family = POL_SEED,
    .create = pa_create,
    .route = pa_route,
    .on_dispatch = pa_dispatch,
    .on_complete = pa_complete,
    .destroy = pa_destroy,
    .on_move = pa_move,
};
