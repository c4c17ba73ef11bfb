/* prompt_index: per-node records of routed prompts: a KV pool each for the
 * order of forgetting, maps of hash -> nodes for matching. */
#include "policies/prompt_index.h"

#include <stdlib.h>
#include <string.h>

static void forget(void *ctx, uint64_t h);

int prompt_index_init(struct prompt_index *p, uint32_t n_nodes, size_t cap_blocks)
{
	memset(p, 0, sizeof *p);
	p->n_nodes = n_nodes;
	p->n_groups = (n_nodes + 63) / 64;
	p->cap_blocks = cap_blocks;
	hmap_init(&p->count);
	size_t n = n_nodes ? n_nodes : 1, g = p->n_groups ? p->n_groups : 1;
	p->nodes = calloc(n, sizeof *p->nodes);
	p->holders = calloc(g, sizeof *p->holders);
	p->size = calloc(n, sizeof *p->size);
	p->match = calloc(n, sizeof *p->match);
	p->touched = malloc(n * sizeof *p->touched);
	if (!p->nodes || !p->holders || !p->size || !p->match || !p->touched) {
		prompt_index_free(p);
		return -1;
	}
	for (uint32_t k = 0; k < p->n_groups; k++)
		hmap_init(&p->holders[k]);
	/* (a pool counts blocks in 32 bits: a record that large would not
	 * fit in memory anyway) */
	uint32_t cap = cap_blocks < UINT32_MAX ? (uint32_t)cap_blocks : UINT32_MAX - 1;
	for (uint32_t i = 0; i < n_nodes; i++) {
		struct prompt_node *pn = &p->nodes[i];
		kv_init(&pn->kv, cap);
		pn->kv.spares = &p->spares;
		pn->kv.on_evict = forget;
		pn->kv.evict_ctx = pn;
		pn->owner = p;
		pn->node = i;
	}
	return 0;
}

void prompt_index_free(struct prompt_index *p)
{
	if (p->nodes)
		for (uint32_t i = 0; i < p->n_nodes; i++)
			kv_free(&p->nodes[i].kv);
	kv_spares_free(&p->spares);
	if (p->holders)
		for (uint32_t k = 0; k < p->n_groups; k++)
			hmap_free(&p->holders[k]);
	hmap_free(&p->count);
	free(p->nodes);
	free(p->holders);
	free(p->size);
	free(p->match);
	free(p->touched);
	free(p->gone);
	memset(p, 0, sizeof *p);
}

/* The nodes of group g holding h, a bit each. */
static uint64_t holders(const struct prompt_index *p, uint32_t g, uint64_t h)
{
	const uint64_t *v = hmap_get(&p->holders[g], h);
	return v ? *v : 0;
}

/* The map whose keys are the blocks some node holds: the one group's, or
 * the counts. */
static const struct hmap *any_map(const struct prompt_index *p)
{
	return p->n_groups == 1 ? &p->holders[0] : &p->count;
}

static int held_by_any(const struct prompt_index *p, uint64_t h)
{
	return hmap_get(any_map(p), h) != NULL;
}

int prompt_index_has(const struct prompt_index *p, uint32_t node, uint64_t hash)
{
	return node < p->n_nodes && (holders(p, node / 64, hash) >> (node % 64) & 1);
}

/* Node now holds h (which it did not): 0, or -1 (no memory; unchanged). */
static int note_held(struct prompt_index *p, uint32_t node, uint64_t h)
{
	struct hmap *m = &p->holders[node / 64];
	uint64_t bit = (uint64_t)1 << (node % 64);
	uint64_t *v = hmap_get(m, h);
	if (v)
		*v |= bit;
	else if (hmap_put(m, h, bit) < 0)
		return -1;
	if (p->n_groups > 1) {
		uint64_t *c = hmap_get(&p->count, h);
		if (c) {
			++*c;
		} else if (hmap_put(&p->count, h, 1) < 0) {
			v = hmap_get(m, h);
			if ((*v &= ~bit) == 0)
				hmap_del(m, h);
			return -1;
		}
	}
	return 0;
}

/* Node no longer holds h. */
static void drop_held(struct prompt_index *p, uint32_t node, uint64_t h)
{
	struct hmap *m = &p->holders[node / 64];
	uint64_t bit = (uint64_t)1 << (node % 64);
	uint64_t *v = hmap_get(m, h);
	if (!v || !(*v & bit))
		return; /* never noted: an insert ran out of memory */
	if ((*v &= ~bit) == 0)
		hmap_del(m, h);
	if (p->n_groups > 1) {
		uint64_t *c = hmap_get(&p->count, h);
		if (c && --*c == 0)
			hmap_del(&p->count, h);
	}
}

/* A node's pool forgot block h: noted, to be dropped with the others the
 * insert forgets (drop_gone), or at once when the list cannot grow. */
static void forget(void *ctx, uint64_t h)
{
	struct prompt_node *pn = ctx;
	struct prompt_index *p = pn->owner;
	if (p->n_gone == p->cap_gone) {
		uint32_t cap = p->cap_gone ? 2 * p->cap_gone : 256;
		uint64_t *g = cap > p->cap_gone ? realloc(p->gone, cap * sizeof *g) : NULL;
		if (!g) {
			drop_held(p, pn->node, h);
			return;
		}
		p->gone = g;
		p->cap_gone = cap;
	}
	p->gone[p->n_gone++] = h;
}

/* Starts the misses of key's slot in m and of the line after it: a drop
 * shifts the slots after a deleted one back and a new key's probe runs to
 * the first empty slot (linear probing), and at half load a probe run
 * often reaches into the next line. */
static inline __attribute__((always_inline)) void prefetch_run(const struct hmap *m, uint64_t key)
{
	if (m->cap) {
		size_t home = hash_home(key, m->cap);
		__builtin_prefetch(&m->slots[home]);
		__builtin_prefetch(&m->slots[(home + 4) & (m->cap - 1)]);
	}
}

/* Drops what node's pool forgot from the maps: each a miss or two into a
 * large map, independent, so started ahead. */
static void drop_gone(struct prompt_index *p, uint32_t node)
{
	enum { AHEAD = 16 };
	struct hmap *m = &p->holders[node / 64];
	for (uint32_t i = 0; i < p->n_gone && i < AHEAD; i++)
		prefetch_run(m, p->gone[i]);
	for (uint32_t i = 0; i < p->n_gone; i++) {
		if (i + AHEAD < p->n_gone)
			prefetch_run(m, p->gone[i + AHEAD]);
		drop_held(p, node, p->gone[i]);
	}
	p->n_gone = 0;
}

/* Node i's match is m. */
static void set_match(struct prompt_index *p, uint32_t i, uint32_t m)
{
	p->match[i] = m;
	p->touched[p->n_touched++] = i;
}

/* Without closure (after running out of memory): each node's longest
 * prefix held block by block, a group's nodes walked together. */
static uint32_t match_walk(struct prompt_index *p, const uint64_t *hashes, uint32_t n)
{
	uint32_t best = 0;
	for (uint32_t g = 0; g < p->n_groups; g++) {
		uint64_t alive = n ? holders(p, g, hashes[0]) : 0;
		uint32_t i = 1;
		for (; alive && i < n; i++) {
			uint64_t still = alive & holders(p, g, hashes[i]);
			for (uint64_t gone = alive & ~still; gone; gone &= gone - 1)
				set_match(p, g * 64 + (uint32_t)__builtin_ctzll(gone), i);
			if (alive != still && best < i)
				best = i;
			alive = still;
		}
		for (; alive; alive &= alive - 1) {
			set_match(p, g * 64 + (uint32_t)__builtin_ctzll(alive), i);
			best = i;
		}
	}
	return best;
}

/* The nodes of group g in s all hold blocks 0..lo-1 and none holds block
 * hi (or hi = n): their matches, by halving [lo, hi] and splitting s
 * by who holds the middle block. */
static void match_group(struct prompt_index *p, uint32_t g, const uint64_t *hashes, uint32_t lo,
			uint32_t hi, uint64_t s)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		uint64_t in = s & holders(p, g, hashes[mid - 1]);
		if (in && in != s)
			match_group(p, g, hashes, lo, mid - 1, s & ~in);
		if (in) {
			s = in;
			lo = mid;
		} else {
			hi = mid - 1;
		}
	}
	for (; s; s &= s - 1)
		set_match(p, g * 64 + (uint32_t)__builtin_ctzll(s), lo);
}

uint32_t prompt_index_match(struct prompt_index *p, const uint64_t *hashes, uint32_t n)
{
	p->n_touched = 0;
	if (p->broken)
		return match_walk(p, hashes, n);
	if (n == 0)
		return 0;
	uint32_t best = 0;
	for (uint32_t g = 0; g < p->n_groups; g++) {
		uint64_t s = holders(p, g, hashes[0]);
		if (!s)
			continue;
		uint32_t from = p->n_touched;
		match_group(p, g, hashes, 1, n, s);
		for (uint32_t k = from; k < p->n_touched; k++)
			if (p->match[p->touched[k]] > best)
				best = p->match[p->touched[k]];
	}
	return best;
}

uint32_t prompt_index_match_longest(struct prompt_index *p, const uint64_t *hashes, uint32_t n)
{
	p->n_touched = 0;
	if (p->broken) {
		uint32_t best = match_walk(p, hashes, n), k = 0;
		for (uint32_t t = 0; t < p->n_touched; t++) {
			uint32_t i = p->touched[t];
			if (p->match[i] == best)
				p->touched[k++] = i;
			else
				p->match[i] = 0;
		}
		p->n_touched = k;
		return best;
	}
	if (n == 0 || !held_by_any(p, hashes[0]))
		return 0;
	/* "some node holds block i" falls from true to false once along the
	 * prompt; lo - 1 is held, best <= hi */
	const struct hmap *any = any_map(p);
	uint32_t lo = 1, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		/* each probe is a miss that decides the next: the next's two
		 * possible slots are started with this one */
		if (mid < hi)
			hmap_prefetch(any, hashes[mid + (hi - mid + 1) / 2 - 1]);
		if (lo < mid - 1)
			hmap_prefetch(any, hashes[lo + (mid - 1 - lo + 1) / 2 - 1]);
		if (held_by_any(p, hashes[mid - 1]))
			lo = mid;
		else
			hi = mid - 1;
	}
	for (uint32_t g = 0; g < p->n_groups; g++)
		for (uint64_t s = holders(p, g, hashes[lo - 1]); s; s &= s - 1)
			set_match(p, g * 64 + (uint32_t)__builtin_ctzll(s), lo);
	return lo;
}

void prompt_index_match_done(struct prompt_index *p)
{
	for (uint32_t k = 0; k < p->n_touched; k++)
		p->match[p->touched[k]] = 0;
	p->n_touched = 0;
}

/* The node's pool records the prompt as a request that comes and goes at
 * once. Its lookup finds the recorded prefix, which is locked while the
 * rest makes room: the least recently routed blocks go first, as in an
 * LRU list, where the prefix, were it the oldest, would go and come back
 * (the same record in the end). Then the new blocks are committed and the
 * whole path released, the most recent, its tail first. A prompt longer
 * than the record keeps its first cap blocks, as an LRU list does. */
int prompt_index_insert(struct prompt_index *p, uint32_t node, const uint64_t *hashes, uint32_t n)
{
	if (p->cap_blocks == 0)
		return 0;
	struct kv_pool *kv = &p->nodes[node].kv;
	if (n > kv->n_blocks)
		n = kv->n_blocks;
	kv->oom = 0; /* (here: whether this insert ran out of memory) */
	struct kv_match m;
	kv_lookup_prefix(kv, hashes, n, &m);
	uint32_t tail = kv_acquire(kv, &m), want = n - m.blocks, done = 0;
	/* a split failed (the whole run is locked), or room could not be
	 * made: nothing recorded (what was forgotten meanwhile still goes) */
	int failed = kv->oom || (want && kv_take(kv, want) != 0);
	drop_gone(p, node);
	if (failed) {
		if (tail != KV_NONE)
			kv_release(kv, tail, 0);
		p->broken = 1;
		return -1;
	}
	if (want) {
		/* each new block's note is a miss into a large map; they are
		 * independent, so started ahead */
		enum { AHEAD = 16 };
		struct hmap *hm = &p->holders[node / 64];
		for (uint32_t i = m.blocks; i < n && i < m.blocks + AHEAD; i++)
			prefetch_run(hm, hashes[i]);
		done = kv_commit_blocks_any(kv, &tail, m.blocks, n, hashes, n);
		for (uint32_t i = m.blocks; i < m.blocks + done; i++) {
			if (i + AHEAD < m.blocks + done)
				prefetch_run(hm, hashes[i + AHEAD]);
			if (note_held(p, node, hashes[i])) {
				p->broken = 1;
				break;
			}
		}
	}
	kv_release(kv, tail, want - done);
	p->size[node] = kv->n_cached;
	if (kv->oom || done < want) {
		p->broken = 1;
		return -1;
	}
	return 0;
}
