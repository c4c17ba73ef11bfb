/* sticky: affinity map with a load threshold and least-loaded fallback. */
#include "policies/sticky.h"

#include <stdio.h>
#include <string.h>

#include "policies/policy.h"
#include "config/cfg.h"

int sticky_init(struct sticky *s, const struct cJSON *params, const char *path,
		const char *const *extra, const struct pol_env *env, char *err, size_t errlen)
{
	static const char *const modes[] = {"shed", "least_loaded", NULL};
	const char *keys[16] = {"threshold", "when_full", "max_keys"};
	size_t nk = 3;
	for (; extra && *extra && nk < 15; extra++)
		keys[nk++] = *extra;
	keys[nk] = NULL;
	memset(s, 0, sizeof *s);
	/* A node is saturated when it holds as many requests as its engine
	 * batches (max_num_seqs, vLLM's default 256): past that, new work
	 * waits. The seed article's 10 is a toy cluster's figure. */
	int64_t thr = env && env->max_num_seqs ? env->max_num_seqs : 256, max_keys = 1 << 20;
	int mode = 1; /* least_loaded */
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_int(params, path, "threshold", 1, 1000000000, &thr, err, errlen) ||
	    cfg_enum(params, path, "when_full", modes, &mode, err, errlen) ||
	    cfg_int(params, path, "max_keys", 1, (int64_t)1 << 40, &max_keys, err, errlen))
		return -1;
	s->threshold = (uint32_t)thr;
	s->shed_when_full = mode == 0;
	s->max_keys = (size_t)max_keys;
	hmap_init(&s->cur);
	hmap_init(&s->prev);
	return 0;
}

void sticky_free(struct sticky *s)
{
	hmap_free(&s->cur);
	hmap_free(&s->prev);
}

static int32_t lookup(const struct sticky *s, uint64_t key)
{
	const uint64_t *v = hmap_get(&s->cur, key);
	if (!v)
		v = hmap_get(&s->prev, key);
	return v ? (int32_t)(*v - 1) : -1;
}

void sticky_route(struct sticky *s, const struct pol_view *v, uint64_t key, struct pol_decision *d)
{
	int32_t home = lookup(s, key);
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->store_reads = 1; /* the lookup; a move or a new key also writes */
	d->store_writes = 0;
	if (home >= 0 && (uint32_t)home < v->n_nodes && v->nodes[home].up &&
	    v->nodes[home].outstanding < s->threshold) {
		d->action = POL_ROUTE;
		d->node = home;
		return;
	}
	int32_t best = -1, any = -1;
	if (v->least_outstanding) {
		/* The least-loaded node is both candidates at once. */
		any = v->least_outstanding(v->lctx);
		if (any >= 0 && v->nodes[any].outstanding < s->threshold)
			best = any;
	}
	for (uint32_t i = 0; !v->least_outstanding && i < v->n_nodes; i++) {
		const struct pol_node_view *nv = &v->nodes[i];
		if (!nv->up)
			continue;
		if (any < 0 || nv->outstanding < v->nodes[any].outstanding)
			any = (int32_t)i;
		if (nv->outstanding < s->threshold &&
		    (best < 0 || nv->outstanding < v->nodes[best].outstanding))
			best = (int32_t)i;
	}
	if (best < 0 && !s->shed_when_full)
		best = any;
	if (best < 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = any < 0 ? "no_node_up" : "capacity"; /* any: the least loaded up */
		return;
	}
	d->action = POL_ROUTE;
	d->node = best;
	d->store_writes = 1;
	if (home >= 0 && (uint32_t)home < v->n_nodes && v->nodes[home].up)
		d->reason = "threshold"; /* moved off its node, which is over it */
}

void sticky_prefetch(const struct sticky *s, uint64_t key)
{
	hmap_prefetch(&s->cur, key);
	if (s->prev.count) /* empty until the map first holds max_keys */
		hmap_prefetch(&s->prev, key);
}

void sticky_set(struct sticky *s, uint64_t key, int32_t node)
{
	/* A key is in one generation at most (it leaves prev as it enters
	 * cur; prev gets keys only by the swap, which empties cur). So a key
	 * in cur needs no look at prev: the common case, one probe. */
	uint64_t *v = hmap_get(&s->cur, key);
	if (v) {
		*v = (uint64_t)node + 1;
		return;
	}
	hmap_del(&s->prev, key);
	if (s->cur.count >= s->max_keys) {
		struct hmap t = s->prev;
		s->prev = s->cur;
		s->cur = t;
		hmap_clear(&s->cur);
	}
	hmap_put(&s->cur, key, (uint64_t)node + 1);
}

void sticky_forget(struct sticky *s, uint64_t key)
{
	hmap_del(&s->cur, key);
	hmap_del(&s->prev, key);
}
