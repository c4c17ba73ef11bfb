/* prefix_index: per-node LRU records of routed prompt blocks, one hash map. */
#include "sim/prefix_index.h"

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

uint32_t pidx_match(struct pidx *p, const uint64_t *hashes, uint32_t n)
{
	uint32_t best = 0;
	p->n_touched = 0;
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
	lru_unlink(p, k);
	uint64_t h = p->e[k].hash;
	uint32_t first = chain_head(p, h);
	if (first == k) {
		if (p->e[k].hnext == NIL)
			hmap_del(&p->by_hash, h);
		else
			hmap_put(&p->by_hash, h, (uint64_t)p->e[k].hnext + 1); /* overwrite: no alloc */
	} else {
		uint32_t j = first;
		while (p->e[j].hnext != k)
			j = p->e[j].hnext;
		p->e[j].hnext = p->e[k].hnext;
	}
	p->e[k].hnext = p->free_e;
	p->free_e = k;
	p->size[node]--;
	if (p->on_evict)
		p->on_evict(p->evict_ctx, node, h);
}

int pidx_has(const struct pidx *p, uint32_t node, uint64_t hash)
{
	for (uint32_t k = chain_head(p, hash); k != NIL; k = p->e[k].hnext)
		if (p->e[k].node == node)
			return 1;
	return 0;
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

int pidx_insert(struct pidx *p, uint32_t node, const uint64_t *hashes, uint32_t n)
{
	if (p->cap_blocks == 0)
		return 0;
	/* Tail first, so the head ends most recent and is forgotten last. */
	for (uint32_t i = n; i-- > 0;) {
		uint64_t h = hashes[i];
		uint32_t first = chain_head(p, h), k = first;
		while (k != NIL && p->e[k].node != node)
			k = p->e[k].hnext;
		if (k != NIL) {
			lru_unlink(p, k);
			lru_push_front(p, k);
			continue;
		}
		if (p->size[node] >= p->cap_blocks)
			evict_one(p, node);
		first = chain_head(p, h); /* eviction may have changed it */
		k = new_entry(p);
		if (k == NIL)
			return -1;
		p->e[k] = (struct pidx_entry){h, node, first, NIL, NIL};
		if (hmap_put(&p->by_hash, h, (uint64_t)k + 1) < 0) {
			p->e[k].hnext = p->free_e;
			p->free_e = k;
			return -1;
		}
		lru_push_front(p, k);
		p->size[node]++;
	}
	return 0;
}
