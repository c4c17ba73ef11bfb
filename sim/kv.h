/* kv: one node's paged KV cache with prefix caching and LRU eviction. */
#ifndef KVSIM_KV_H
#define KVSIM_KV_H

#include <stdint.h>

#include "sim/hmap.h"

#define KV_NONE UINT32_MAX

/* Block states: free (no hash, unreferenced), cached (hashed, unreferenced,
 * on the LRU list), used (referenced by >= 1 request, hashed or not).
 * Invariant: n_free + n_lru + n_used == n_blocks. A hashed block is in map
 * under its hash; at most one block per hash (a duplicate computed later
 * stays unhashed, as in vLLM). */
struct kv_block {
	uint64_t hash; /* 0 = not cached */
	uint32_t ref;
	uint32_t lru_prev, lru_next; /* index n_blocks is the list head */
};

/* One record per block, so touching a block costs one cache miss. */
struct kv_pool {
	uint32_t n_blocks;
	struct kv_block *blk; /* n_blocks + 1 (the LRU head) */
	uint32_t *free_stack;
	uint32_t n_free, n_lru, n_used;
	uint64_t evictions;
	struct hmap map; /* hash -> block */
};

/* Returns 0, or -1 when memory runs out. Caller frees with kv_free. */
int kv_init(struct kv_pool *p, uint32_t n_blocks);
void kv_free(struct kv_pool *p);
/* Blocks that an allocation can obtain: free ones plus evictable cached ones. */
static inline uint32_t kv_available(const struct kv_pool *p)
{
	return p->n_free + p->n_lru;
}
/* Takes a block (referenced once, unhashed): a free one if any, else evicts
 * the least recently used cached block. KV_NONE when none is available. O(1). */
uint32_t kv_alloc(struct kv_pool *p);
/* Adds a reference (a prefix hit); takes a cached block off the LRU list. */
void kv_ref(struct kv_pool *p, uint32_t b);
/* Drops a reference; an unreferenced hashed block becomes the most recently
 * used cached block, an unhashed one becomes free. */
void kv_release(struct kv_pool *p, uint32_t b);
/* Gives block b the hash h if no block holds h yet; returns 1 if it did. */
int kv_register(struct kv_pool *p, uint32_t b, uint64_t h);
/* The block holding hash h, or KV_NONE. */
static inline uint32_t kv_lookup(const struct kv_pool *p, uint64_t h)
{
	const uint64_t *v = hmap_get(&p->map, h);
	return v ? (uint32_t)*v : KV_NONE;
}
/* Longest prefix of hashes[0..n) present; *in_lru (if not NULL) gets how
 * many of those blocks are unreferenced (so on the LRU list), and ids (if
 * not NULL, room for n) the blocks matched. O(match); probes are prefetched
 * a few blocks ahead, since a long prompt's lookups are cache misses. */
uint32_t kv_match(const struct kv_pool *p, const uint64_t *hashes, uint32_t n, uint32_t *in_lru,
		  uint32_t *ids);
/* Hints that block b will be touched soon. */
static inline void kv_prefetch(const struct kv_pool *p, uint32_t b)
{
	__builtin_prefetch(&p->blk[b], 1);
}
/* Inserts an unreferenced cached block for h (a migrated or reloaded block)
 * as most recently used; returns 1 if inserted, 0 if h was already cached,
 * -1 if no block could be had. */
int kv_insert_cached(struct kv_pool *p, uint64_t h);

#endif
