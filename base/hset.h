/* hset: open-addressing set of nonzero uint64 keys, 8 bytes a slot. */
#ifndef KVSIM_HSET_H
#define KVSIM_HSET_H

#include <stddef.h>
#include <stdint.h>

/* For sets that only grow and can grow large (every shared block ever
 * computed): keys only, so a slot is half of an hmap's and the table can
 * run fuller (at most 3/4) with linear probing. Key 0 marks an empty slot
 * and must never be added. No deletion. */
struct hset {
	uint64_t *slots;
	size_t cap;   /* slots, a power of two (0 before the first add) */
	size_t count; /* keys present */
};

void hset_init(struct hset *s);
void hset_free(struct hset *s);
/* 1 if key is in the set. O(1) expected. */
int hset_has(const struct hset *s, uint64_t key);
/* Adds key: 1 if it was new, 0 if present, -1 when memory runs out (the
 * set is unchanged). */
int hset_add(struct hset *s, uint64_t key);

#endif
