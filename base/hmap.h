/* hmap: open-addressing map from nonzero uint64 keys to uint64 values. */
#ifndef KVSIM_HMAP_H
#define KVSIM_HMAP_H

#include <stddef.h>
#include <stdint.h>

/* Linear probing, power-of-two table kept at most half full, deletion by
 * backward shift (no tombstones), so lookups stay O(1) expected however many
 * keys come and go. Key 0 marks an empty slot and must never be inserted. */
struct hmap_slot {
	uint64_t key; /* 0 = empty */
	uint64_t val;
};

/* Keys and values share a slot, so a probe touches one cache line. */
struct hmap {
	struct hmap_slot *slots;
	size_t cap;   /* slots, a power of two (0 before the first insert) */
	size_t count; /* keys present */
};

/* The home slot of key in a table of cap slots (a power of two), by
 * Fibonacci hashing: sequential ids and well-mixed hashes both spread.
 * Shared with hset. */
static inline size_t hash_home(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

void hmap_init(struct hmap *m);
void hmap_free(struct hmap *m);
/* Hints that key will be looked up soon (starts the cache miss early).
 * Always inlined: GCC 12 may find a small function that only prefetches
 * "pure" and delete its calls, prefetches and all. */
static inline __attribute__((always_inline)) void hmap_prefetch(const struct hmap *m, uint64_t key)
{
	if (m->cap)
		__builtin_prefetch(&m->slots[hash_home(key, m->cap)]);
}
/* Returns a pointer to the value of key, or NULL. O(1) expected. */
uint64_t *hmap_get(const struct hmap *m, uint64_t key);
/* Inserts or overwrites. Returns 1 if the key was new, 0 if overwritten,
 * -1 when memory runs out (the map is unchanged). */
int hmap_put(struct hmap *m, uint64_t key, uint64_t val);
/* Removes key; returns 1 if it was present. */
int hmap_del(struct hmap *m, uint64_t key);
/* Empties the map, keeping its memory. O(cap). */
void hmap_clear(struct hmap *m);

#endif
