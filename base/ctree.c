/* ctree: a prefix-closed set of hash chains, stored as runs of the chains. */
#include "base/ctree.h"

#include <stdlib.h>
#include <string.h>

void ctree_init(struct ctree *t)
{
	memset(t, 0, sizeof *t);
	hmap_init(&t->first);
}

void ctree_free(struct ctree *t)
{
	for (uint32_t i = 0; i < t->n_runs; i++)
		free(t->runs[i].h);
	free(t->runs);
	hmap_free(&t->first);
	memset(t, 0, sizeof *t);
}

uint32_t ctree_prefix(const struct ctree *t, const uint64_t *h, uint32_t n, struct ctree_pos *end)
{
	uint32_t i = 0;
	end->run = CTREE_NONE;
	end->off = 0;
	while (i < n) {
		const uint64_t *v = hmap_get(&t->first, h[i]);
		if (!v)
			break;
		uint32_t id = (uint32_t)*v;
		const struct ctree_run *r = &t->runs[id];
		uint32_t lim = r->len < n - i ? r->len : n - i;
		uint32_t m = chain_match(h + i, r->h, lim);
		end->run = id;
		end->off = m - 1;
		i += m;
		if (m == r->len)
			break; /* the run's last block: no run starts after it */
	}
	return i;
}

/* Room for want blocks: the run's capacity doubled until it fits, or
 * exactly `expect` when that is more (what the caller expects the run to
 * reach: a new run gets one allocation, no copies and no slack; a run
 * that grows again still doubles). */
static int run_reserve(struct ctree_run *r, uint32_t want, uint32_t expect)
{
	uint32_t cap = r->cap ? 2 * r->cap : 16;
	while (cap < want)
		cap *= 2;
	if (expect > cap)
		cap = expect;
	uint64_t *nh = realloc(r->h, cap * sizeof *nh);
	if (!nh)
		return -1;
	r->h = nh;
	r->cap = cap;
	return 0;
}

/* ctree_add, with room made in a new run for `expect` blocks */
static int add_one(struct ctree *t, struct ctree_pos *at, uint64_t h, uint32_t expect)
{
	struct ctree_run *r = at->run != CTREE_NONE ? &t->runs[at->run] : NULL;
	if (r && at->off + 1 == r->len) {
		/* The parent ends its run, so no run starts with h (a run starts
		 * only after a block that had a successor already): append. */
		if (r->len == r->cap && run_reserve(r, r->len + 1, 0))
			return -1;
		r->h[r->len++] = h;
		at->off++;
		t->count++;
		return 1;
	}
	if (r && r->h[at->off + 1] == h) {
		at->off++;
		return 0;
	}
	const uint64_t *v = hmap_get(&t->first, h);
	if (v) {
		at->run = (uint32_t)*v;
		at->off = 0;
		return 0;
	}
	/* A branch (or a chain's first block): a new run. */
	if (t->n_runs == t->runs_cap) {
		uint32_t cap = t->runs_cap ? 2 * t->runs_cap : 64;
		struct ctree_run *nr = realloc(t->runs, cap * sizeof *nr);
		if (!nr)
			return -1;
		t->runs = nr;
		t->runs_cap = cap;
	}
	struct ctree_run *s = &t->runs[t->n_runs];
	memset(s, 0, sizeof *s);
	if (run_reserve(s, 1, expect))
		return -1;
	if (hmap_put(&t->first, h, t->n_runs) < 0) {
		free(s->h);
		return -1;
	}
	s->h[0] = h;
	s->len = 1;
	at->run = t->n_runs++;
	at->off = 0;
	t->count++;
	return 1;
}

int ctree_add(struct ctree *t, struct ctree_pos *at, uint64_t h)
{
	return add_one(t, at, h, 0);
}

int ctree_add_chain(struct ctree *t, struct ctree_pos *at, const uint64_t *h, uint32_t n,
		    uint32_t expect)
{
	int added = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct ctree_run *r = at->run != CTREE_NONE ? &t->runs[at->run] : NULL;
		uint32_t rest = expect > k ? expect - k : 0; /* blocks expected from h[k] on */
		if (r && at->off + 1 == r->len) {
			/* ctree_add would append each of the rest */
			if (r->len + (n - k) > r->cap &&
			    run_reserve(r, r->len + (n - k), r->len + rest))
				return -1;
			memcpy(r->h + r->len, h + k, (n - k) * sizeof *h);
			r->len += n - k;
			at->off = r->len - 1;
			t->count += n - k;
			return added + (int)(n - k);
		}
		int rc = add_one(t, at, h[k], rest);
		if (rc < 0)
			return -1;
		added += rc;
	}
	return added;
}

int ctree_each(const struct ctree *t, int (*fn)(void *ctx, uint64_t h), void *ctx)
{
	for (uint32_t i = 0; i < t->n_runs; i++)
		for (uint32_t k = 0; k < t->runs[i].len; k++) {
			int rc = fn(ctx, t->runs[i].h[k]);
			if (rc)
				return rc;
		}
	return 0;
}
