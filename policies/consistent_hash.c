/* consistent_hash: a hash ring with virtual nodes and bounded loads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"
#include "sim/request.h"
#include "base/rng.h"

struct ring_point {
	uint64_t pos;
	uint32_t node;
};

struct ch {
	struct ring_point *ring;
	uint32_t n_points, n_nodes, block_tokens;
	uint32_t key_blocks; /* 0: key on the session */
	double load_factor;  /* c; 0: unbounded */
};

static int cmp_point(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* A virtual node's position depends only on (node, replica), so adding a
 * node adds its points and moves no other: only keys that now fall just
 * before one of the new points change owner (~1/N of them). */
static uint64_t point_pos(uint32_t node, uint32_t v)
{
	return rng_mix64(((uint64_t)node << 32 | v) ^ 0x6a09e667f3bcc909ULL);
}

static void *ch_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"vnodes", "load_factor", "key", "prefix_tokens", NULL};
	static const char *const key_kinds[] = {"session", "prefix", NULL};
	int64_t vnodes = 100, ktok = 256;
	double c = 1.25;
	int kind = 0;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_int(params, path, "vnodes", 1, 10000, &vnodes, err, errlen) ||
	    cfg_number(params, path, "load_factor", 0, 1e9, &c, err, errlen) ||
	    cfg_enum(params, path, "key", key_kinds, &kind, err, errlen) ||
	    cfg_int(params, path, "prefix_tokens", 1, 100000000, &ktok, err, errlen))
		return NULL;
	if (c != 0 && c < 1) {
		snprintf(err, errlen, "%s.load_factor: expected 0 (unbounded) or at least 1, got %g",
			 path, c);
		return NULL;
	}
	struct ch *s = calloc(1, sizeof *s);
	if (s)
		s->ring = malloc((size_t)env->n_nodes * (size_t)vnodes * sizeof *s->ring);
	if (!s || !s->ring) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->n_nodes = env->n_nodes;
	s->n_points = env->n_nodes * (uint32_t)vnodes;
	s->block_tokens = env->block_tokens;
	s->load_factor = c;
	if (kind == 1) {
		s->key_blocks = (uint32_t)((uint64_t)ktok / env->block_tokens);
		if (s->key_blocks == 0)
			s->key_blocks = 1;
	}
	uint32_t k = 0;
	for (uint32_t n = 0; n < env->n_nodes; n++)
		for (uint32_t v = 0; v < (uint32_t)vnodes; v++)
			s->ring[k++] = (struct ring_point){point_pos(n, v), n};
	qsort(s->ring, s->n_points, sizeof *s->ring, cmp_point);
	return s;
}

static uint64_t key_of(const struct ch *s, const struct request *r, uint32_t *hashed)
{
	*hashed = 0;
	if (s->key_blocks) {
		uint32_t full = pol_prompt_blocks(r, s->block_tokens);
		uint32_t k = full < s->key_blocks ? full : s->key_blocks;
		if (k > 0) {
			*hashed = k * s->block_tokens;
			return r->hashes[k - 1];
		}
	}
	return rng_mix64(r->session);
}

/* The first ring point at or after pos (wrapping). */
static uint32_t ring_find(const struct ch *s, uint64_t pos)
{
	uint32_t lo = 0, hi = s->n_points;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->ring[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == s->n_points ? 0 : lo;
}

/* The key's owner is the node of the first point clockwise from the key;
 * with bounded loads, walk on past nodes that are down or whose
 * outstanding requests would exceed ceil(c * mean) with this one. */
static void ch_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	const struct ch *s = st;
	uint32_t hashed;
	uint64_t key = key_of(s, r, &hashed);
	uint32_t cap = s->load_factor > 0 ? pol_bounded_cap(v, s->load_factor) : UINT32_MAX;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->hashed_tokens = hashed;
	uint32_t at = ring_find(s, key);
	for (uint32_t k = 0; k < s->n_points; k++) {
		uint32_t node = s->ring[(at + k) % s->n_points].node;
		if (node < v->n_nodes && v->nodes[node].up && v->nodes[node].outstanding < cap) {
			d->action = POL_ROUTE;
			d->node = (int32_t)node;
			return;
		}
	}
	d->action = POL_SHED;
	d->node = -1;
	d->reason = "no_node_up";
}

static void ch_destroy(void *st)
{
	struct ch *s = st;
	free(s->ring);
	free(s);
}

const struct pol_ops pol_consistent_hash = {
    .name = "consistent_hash",
    .description = "stateless: hash ring (vnodes per node) on the session or prefix key, "
		   "bounded loads: walk past nodes above load_factor x mean",
    .family = POL_PRODUCT,
    .product = "HAProxy (hash-balance-factor)",
    .create = ch_create,
    .route = ch_route,
    .destroy = ch_destroy,
};
