/* prefix_index: per-node LRU records of routed prompt blocks, one hash map. */
#include "base/prefix_index.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

int pidx_init(struct pidx *p, uint32_t n_nodes, size_t cap_blocks)
{
	memset(p, 0, sizeof *p);
	p->n_nodes = n_nodes;
	p->cap_blocks = cap_blocks;
	p->free_e = NIL;
	hmap_init(&p->by_hash);
	hmap_init(&p->by_pair);
	p->head = malloc(n_nodes * sizeof *p->head);
	p->tail = malloc(n_nodes * sizeof *p->tail);
	p->size = calloc(n_nodes, sizeof *p->size);
	p->match = calloc(n_nodes, sizeof *p->match);
	p->touched = malloc(n_nodes * sizeof *p->touched);
	if (!p->head || !p->tail || !p->size || !p->match || !p->touched) {
		pidx_free(p);
		return -1;
	}
	for (uint32_t i = 0; i < n_nodes; i++)
		p->head[i] = p->tail[i] = NIL;
	return 0;
}

void pidx_free(struct pidx *p)
{
	hmap_free(&p->by_hash);
	hmap_free(&p->by_pair);
	free(p->e);
	free(p->head);
	free(p->tail);
	free(p->size);
	free(p->match);
	free(p->touched);
	memset(p, 0, sizeof *p);
}

static uint32_t chain_head(const struct pidx *p, uint64_t h)
{
	const uint64_t *v = hmap_get(&p->by_hash, h);
	return v ? (uint32_t)(*v - 1) : NIL;
}

/* The pair map's key: nonzero, different for the nodes of one hash. */
static uint64_t pair_key(uint64_t h, uint32_t node)
{
	uint64_t k = h ^ ((uint64_t)(node + 1) * 0xD6E8FEB86659FD93ULL);
	return k ? k : 1;
}

/* Node's entry for hash h, or NIL. O(1) expected. */
static uint32_t find(const struct pidx *p, uint64_t h, uint32_t node)
{
	if (!p->pair_clash) {
		const uint64_t *v = hmap_get(&p->by_pair, pair_key(h, node));
		if (!v)
			return NIL;
		uint32_t k = (uint32_t)(*v - 1);
		if (p->e[k].hash == h && p->e[k].node == node)
			return k;
	}
	uint32_t k = chain_head(p, h);
	while (k != NIL && p->e[k].node != node)
		k = p->e[k].hnext;
	return k;
}

/* The reference match: walks the prompt once, advancing every node whose
 * record holds each block after all earlier ones. O(matched blocks x
 * nodes holding them). */
static uint32_t match_walk(struct pidx *p, const uint64_t *hashes, uint32_t n)
{
	uint32_t best = 0;
	for (uint32_t i = 0; i < n; i++) {
		int advanced = 0;
		for (uint32_t k = chain_head(p, hashes[i]); k != NIL; k = p->e[k].hnext) {
			uint32_t node = p->e[k].node;
			/* A node's match grows only along an unbroken prefix. */
			if (p->match[node] != i)
				continue;
			if (i == 0)
				p->touched[p->n_touched++] = node;
			p->match[node] = i + 1;
			advanced = 1;
		}
		if (!advanced)
			break;
		best = i + 1;
	}
	return best;
}

void pidx_match_done(struct pidx *p)
{
	for (uint32_t k = 0; k < p->n_touched; k++)
		p->match[p->touched[k]] = 0;
	p->n_touched = 0;
}

static void lru_unlink(struct pidx *p, uint32_t k)
{
	struct pidx_entry *e = &p->e[k];
	if (e->prev != NIL)
		p->e[e->prev].next = e->next;
	else
		p->head[e->node] = e->next;
	if (e->next != NIL)
		p->e[e->next].prev = e->prev;
	else
		p->tail[e->node] = e->prev;
}

static void lru_push_front(struct pidx *p, uint32_t k)
{
	struct pidx_entry *e = &p->e[k];
	e->prev = NIL;
	e->next = p->head[e->node];
	if (e->next != NIL)
		p->e[e->next].prev = k;
	else
		p->tail[e->node] = k;
	p->head[e->node] = k;
}

/* Removes the node's least recently routed block. */
static void evict_one(struct pidx *p, uint32_t node)
{
	uint32_t k = p->tail[node];
	struct pidx_entry *e = &p->e[k];
	lru_unlink(p, k);
	uint64_t h = e->hash;
	if (e->hprev == NIL) {
		if (e->hnext == NIL)
			hmap_del(&p->by_hash, h);
		else
			hmap_put(&p->by_hash, h, (uint64_t)e->hnext + 1); /* overwrite: no alloc */
	} else {
		p->e[e->hprev].hnext = e->hnext;
	}
	if (e->hnext != NIL)
		p->e[e->hnext].hprev = e->hprev;
	uint64_t *v = hmap_get(&p->by_pair, pair_key(h, node));
	if (v && *v == (uint64_t)k + 1)
		hmap_del(&p->by_pair, pair_key(h, node));
	e->hnext = p->free_e;
	p->free_e = k;
	p->size[node]--;
	if (p->on_evict)
		p->on_evict(p->evict_ctx, node, h);
}

int pidx_has(const struct pidx *p, uint32_t node, uint64_t hash)
{
	return find(p, hash, node) != NIL;
}

static uint32_t new_entry(struct pidx *p)
{
	if (p->free_e != NIL) {
		uint32_t k = p->free_e;
		p->free_e = p->e[k].hnext;
		return k;
	}
	if (p->n_e == p->cap_e) {
		uint32_t cap = p->cap_e ? p->cap_e * 2 : 1024;
		struct pidx_entry *e = realloc(p->e, cap * sizeof *e);
		if (!e)
			return NIL;
		p->e = e;
		p->cap_e = cap;
	}
	return p->n_e++;
}

/* Adds entry k (hash h, node) at the head of h's chain and to the pair
 * map; 0 or -1 (no memory; nothing changed). */
static int link_entry(struct pidx *p, uint32_t k, uint64_t h, uint32_t node)
{
	uint32_t first = chain_head(p, h);
	if (hmap_put(&p->by_hash, h, (uint64_t)k + 1) < 0)
		return -1;
	uint64_t key = pair_key(h, node);
	const uint64_t *v = hmap_get(&p->by_pair, key);
	if (v) {
		p->pair_clash = 1; /* another pair has this key: chains from now on */
	} else if (hmap_put(&p->by_pair, key, (uint64_t)k + 1) < 0) {
		if (first == NIL)
			hmap_del(&p->by_hash, h);
		else
			hmap_put(&p->by_hash, h, (uint64_t)first + 1);
		return -1;
	}
	p->e[k] = (struct pidx_entry){h, node, first, NIL, NIL, NIL};
	if (first != NIL)
		p->e[first].hprev = k;
	return 0;
}

/* How far ahead pidx_insert starts the cache misses of a block's lookup:
 * its pair map slot PF_SLOT blocks ahead, the entry that slot names (or,
 * for a block likely new, its hash chain's slot) PF_ENTRY blocks ahead (by
 * then the slot is in cache), the chain's first entry PF_CHAIN ahead. */
enum { PF_SLOT = 16, PF_ENTRY = 8, PF_CHAIN = 4 };

/* Prefetches the entry of (h, node), or, when its home slot does not hold
 * it (most likely new), the hash chain slot an insert will write. A hint
 * only: reads the home slot and nothing else. */
static inline __attribute__((always_inline)) void prefetch_entry(const struct pidx *p, uint64_t h,
								  uint32_t node)
{
	if (!p->by_pair.cap)
		return;
	uint64_t key = pair_key(h, node);
	const struct hmap_slot *sl = &p->by_pair.slots[hash_home(key, p->by_pair.cap)];
	if (sl->key == key && sl->val - 1 < p->n_e)
		__builtin_prefetch(&p->e[sl->val - 1]);
	else
		hmap_prefetch(&p->by_hash, h); /* likely new: link_entry's chain head */
}

/* For a block whose pair slot showed no entry (likely new): prefetches the
 * first entry of its hash's chain, which link_entry will link to. */
static inline __attribute__((always_inline)) void prefetch_chain(const struct pidx *p, uint64_t h,
								  uint32_t node)
{
	if (!p->by_pair.cap || !p->by_hash.cap)
		return;
	uint64_t key = pair_key(h, node);
	if (p->by_pair.slots[hash_home(key, p->by_pair.cap)].key == key)
		return;
	const struct hmap_slot *sl = &p->by_hash.slots[hash_home(h, p->by_hash.cap)];
	if (sl->key == h && sl->val - 1 < p->n_e)
		__builtin_prefetch(&p->e[sl->val - 1]);
}

/* Before evicting node's tail: starts the misses of the next evictions
 * (the victim after this one: its hash map slots, its hash chain
 * neighbours, and the entry after it). */
static inline __attribute__((always_inline)) void prefetch_victims(const struct pidx *p,
								    uint32_t node)
{
	uint32_t v = p->tail[node];
	uint32_t w = v != NIL ? p->e[v].prev : NIL;
	if (w == NIL)
		return;
	const struct pidx_entry *we = &p->e[w];
	hmap_prefetch(&p->by_hash, we->hash);
	hmap_prefetch(&p->by_pair, pair_key(we->hash, node));
	if (we->prev != NIL)
		__builtin_prefetch(&p->e[we->prev]);
	if (we->hprev != NIL)
		__builtin_prefetch(&p->e[we->hprev]);
	if (we->hnext != NIL)
		__builtin_prefetch(&p->e[we->hnext]);
}

int pidx_insert(struct pidx *p, uint32_t node, const uint64_t *hashes, uint32_t n)
{
	if (p->cap_blocks == 0)
		return 0;
	/* Tail first, so the head ends most recent and is forgotten last.
	 * Each block's lookup is a cache miss into tables of millions of
	 * entries; they are independent, so they are started ahead. */
	for (uint32_t i = n < PF_SLOT ? n : PF_SLOT; i-- > 0;)
		hmap_prefetch(&p->by_pair, pair_key(hashes[n - 1 - i], node));
	for (uint32_t i = n; i-- > 0;) {
		if (i >= PF_SLOT)
			hmap_prefetch(&p->by_pair, pair_key(hashes[i - PF_SLOT], node));
		if (i >= PF_ENTRY)
			prefetch_entry(p, hashes[i - PF_ENTRY], node);
		if (i >= PF_CHAIN)
			prefetch_chain(p, hashes[i - PF_CHAIN], node);
		uint64_t h = hashes[i];
		uint32_t k = find(p, h, node);
		if (k != NIL) {
			lru_unlink(p, k);
			lru_push_front(p, k);
			continue;
		}
		if (p->size[node] >= p->cap_blocks) {
			prefetch_victims(p, node);
			evict_one(p, node);
		}
		k = new_entry(p);
		if (k == NIL || link_entry(p, k, h, node)) {
			if (k != NIL) {
				p->e[k].hnext = p->free_e;
				p->free_e = k;
			}
			return -1;
		}
		lru_push_front(p, k);
		p->size[node]++;
	}
	return 0;
}

uint32_t pidx_match_walk(struct pidx *p, const uint64_t *hashes, uint32_t n)
{
	p->n_touched = 0;
	return match_walk(p, hashes, n);
}
