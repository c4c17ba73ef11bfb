/* kv: block pool, hash index, LRU list of unreferenced cached blocks. */
#include "sim/kv.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int kv_init(struct kv_pool *p, uint32_t n)
{
	memset(p, 0, sizeof *p);
	p->n_blocks = n;
	p->blk = calloc((size_t)n + 1, sizeof *p->blk);
	p->free_stack = malloc((size_t)n * sizeof *p->free_stack);
	hmap_init(&p->map);
	if (!p->blk || !p->free_stack) {
		kv_free(p);
		return -1;
	}
	p->blk[n].lru_prev = p->blk[n].lru_next = n;
	/* Hand out low block ids first (stack top = block 0). */
	for (uint32_t i = 0; i < n; i++)
		p->free_stack[i] = n - 1 - i;
	p->n_free = n;
	return 0;
}

void kv_free(struct kv_pool *p)
{
	free(p->blk);
	free(p->free_stack);
	hmap_free(&p->map);
	memset(p, 0, sizeof *p);
}

static void lru_unlink(struct kv_pool *p, uint32_t b)
{
	struct kv_block *k = &p->blk[b];
	p->blk[k->lru_prev].lru_next = k->lru_next;
	p->blk[k->lru_next].lru_prev = k->lru_prev;
	p->n_lru--;
}

static void lru_push_tail(struct kv_pool *p, uint32_t b)
{
	uint32_t head = p->n_blocks, tail = p->blk[head].lru_prev;
	p->blk[b].lru_prev = tail;
	p->blk[b].lru_next = head;
	p->blk[tail].lru_next = b;
	p->blk[head].lru_prev = b;
	p->n_lru++;
}

uint32_t kv_alloc(struct kv_pool *p)
{
	uint32_t b;
	if (p->n_free) {
		b = p->free_stack[--p->n_free];
	} else if (p->n_lru) {
		b = p->blk[p->n_blocks].lru_next; /* least recently used */
		lru_unlink(p, b);
		hmap_del(&p->map, p->blk[b].hash);
		p->blk[b].hash = 0;
		p->evictions++;
	} else {
		return KV_NONE;
	}
	assert(p->blk[b].ref == 0);
	p->blk[b].ref = 1;
	p->n_used++;
	return b;
}

void kv_ref(struct kv_pool *p, uint32_t b)
{
	if (p->blk[b].ref++ == 0) {
		lru_unlink(p, b);
		p->n_used++;
	}
}

void kv_release(struct kv_pool *p, uint32_t b)
{
	assert(p->blk[b].ref > 0);
	if (--p->blk[b].ref > 0)
		return;
	p->n_used--;
	if (p->blk[b].hash)
		lru_push_tail(p, b);
	else
		p->free_stack[p->n_free++] = b;
}

int kv_register(struct kv_pool *p, uint32_t b, uint64_t h)
{
	if (p->blk[b].hash || hmap_get(&p->map, h))
		return 0;
	if (hmap_put(&p->map, h, b) < 0)
		return 0; /* out of memory: the block simply stays uncached */
	p->blk[b].hash = h;
	return 1;
}

uint32_t kv_match(const struct kv_pool *p, const uint64_t *hashes, uint32_t n, uint32_t *in_lru,
		  uint32_t *ids)
{
	/* A two-stage software pipeline: the hash slot of block i + 2A is
	 * prefetched, the slot of block i + A is read and its block record
	 * prefetched, block i is checked with both in cache. */
	enum { A = 6 };
	uint32_t i, lru = 0;
	for (i = 0; i < n && i < 2 * A; i++)
		hmap_prefetch(&p->map, hashes[i]);
	for (i = 0; i < n && i < A; i++) {
		uint32_t b = kv_lookup(p, hashes[i]);
		if (b != KV_NONE)
			kv_prefetch(p, b);
	}
	for (i = 0; i < n; i++) {
		if (i + 2 * A < n)
			hmap_prefetch(&p->map, hashes[i + 2 * A]);
		if (i + A < n) {
			uint32_t ahead = kv_lookup(p, hashes[i + A]);
			if (ahead != KV_NONE)
				kv_prefetch(p, ahead);
		}
		uint32_t b = kv_lookup(p, hashes[i]);
		if (b == KV_NONE)
			break;
		if (ids)
			ids[i] = b;
		lru += p->blk[b].ref == 0;
	}
	if (in_lru)
		*in_lru = lru;
	return i;
}

int kv_insert_cached(struct kv_pool *p, uint64_t h)
{
	if (hmap_get(&p->map, h))
		return 0;
	uint32_t b = kv_alloc(p);
	if (b == KV_NONE)
		return -1;
	kv_register(p, b, h);
	kv_release(p, b);
	return 1;
}
