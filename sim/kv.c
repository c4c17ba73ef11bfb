/* kv: block pool, hash index, LRU list of unreferenced cached blocks. */
#include "sim/kv.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int kv_init(struct kv_pool *p, uint32_t n)
{
	memset(p, 0, sizeof *p);
	p->n_blocks = n;
	p->ref = calloc(n, sizeof *p->ref);
	p->hash = calloc(n, sizeof *p->hash);
	p->lru_prev = malloc((n + 1) * sizeof *p->lru_prev);
	p->lru_next = malloc((n + 1) * sizeof *p->lru_next);
	p->free_stack = malloc(n * sizeof *p->free_stack);
	hmap_init(&p->map);
	if (!p->ref || !p->hash || !p->lru_prev || !p->lru_next || !p->free_stack) {
		kv_free(p);
		return -1;
	}
	p->lru_prev[n] = p->lru_next[n] = n;
	/* Hand out low block ids first (stack top = block 0). */
	for (uint32_t i = 0; i < n; i++)
		p->free_stack[i] = n - 1 - i;
	p->n_free = n;
	return 0;
}

void kv_free(struct kv_pool *p)
{
	free(p->ref);
	free(p->hash);
	free(p->lru_prev);
	free(p->lru_next);
	free(p->free_stack);
	hmap_free(&p->map);
	memset(p, 0, sizeof *p);
}

static void lru_unlink(struct kv_pool *p, uint32_t b)
{
	p->lru_next[p->lru_prev[b]] = p->lru_next[b];
	p->lru_prev[p->lru_next[b]] = p->lru_prev[b];
	p->n_lru--;
}

static void lru_push_tail(struct kv_pool *p, uint32_t b)
{
	uint32_t head = p->n_blocks, tail = p->lru_prev[head];
	p->lru_prev[b] = tail;
	p->lru_next[b] = head;
	p->lru_next[tail] = b;
	p->lru_prev[head] = b;
	p->n_lru++;
}

uint32_t kv_alloc(struct kv_pool *p)
{
	uint32_t b;
	if (p->n_free) {
		b = p->free_stack[--p->n_free];
	} else if (p->n_lru) {
		b = p->lru_next[p->n_blocks]; /* least recently used */
		lru_unlink(p, b);
		hmap_del(&p->map, p->hash[b]);
		p->hash[b] = 0;
		p->evictions++;
	} else {
		return KV_NONE;
	}
	assert(p->ref[b] == 0);
	p->ref[b] = 1;
	p->n_used++;
	return b;
}

void kv_ref(struct kv_pool *p, uint32_t b)
{
	if (p->ref[b]++ == 0) {
		lru_unlink(p, b);
		p->n_used++;
	}
}

void kv_release(struct kv_pool *p, uint32_t b)
{
	assert(p->ref[b] > 0);
	if (--p->ref[b] > 0)
		return;
	p->n_used--;
	if (p->hash[b])
		lru_push_tail(p, b);
	else
		p->free_stack[p->n_free++] = b;
}

int kv_register(struct kv_pool *p, uint32_t b, uint64_t h)
{
	if (p->hash[b] || hmap_get(&p->map, h))
		return 0;
	if (hmap_put(&p->map, h, b) < 0)
		return 0; /* out of memory: the block simply stays uncached */
	p->hash[b] = h;
	return 1;
}

uint32_t kv_match(const struct kv_pool *p, const uint64_t *hashes, uint32_t n, uint32_t *in_lru)
{
	uint32_t i, lru = 0;
	for (i = 0; i < n; i++) {
		uint32_t b = kv_lookup(p, hashes[i]);
		if (b == KV_NONE)
			break;
		lru += p->ref[b] == 0;
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
