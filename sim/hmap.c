/* hmap: open-addressing uint64 -> uint64 map with backward-shift deletion. */
#include "sim/hmap.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct hmap *m, uint64_t key)
{
	/* Fibonacci hashing: sequential ids and well-mixed hashes both spread. */
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & (m->cap - 1);
}

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof *m);
}

void hmap_free(struct hmap *m)
{
	free(m->keys);
	free(m->vals);
	hmap_init(m);
}

uint64_t *hmap_get(const struct hmap *m, uint64_t key)
{
	if (m->cap == 0)
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (m->keys[i] == 0)
			return NULL;
	}
}

static int grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = calloc(ncap, sizeof *nk);
	uint64_t *nv = malloc(ncap * sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -1;
	}
	struct hmap old = *m;
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.keys[i] == 0)
			continue;
		size_t j = slot_of(m, old.keys[i]);
		while (m->keys[j] != 0)
			j = (j + 1) & (m->cap - 1);
		m->keys[j] = old.keys[i];
		m->vals[j] = old.vals[i];
	}
	free(old.keys);
	free(old.vals);
	return 0;
}

int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
		return -1;
	size_t i = slot_of(m, key);
	while (m->keys[i] != 0) {
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->count++;
	return 1;
}

int hmap_del(struct hmap *m, uint64_t key)
{
	if (m->cap == 0)
		return 0;
	size_t mask = m->cap - 1, i = slot_of(m, key);
	while (m->keys[i] != key) {
		if (m->keys[i] == 0)
			return 0;
		i = (i + 1) & mask;
	}
	/* Backward shift: pull later members of the probe run into the hole
	 * unless their home slot lies cyclically in (hole, j]. */
	size_t hole = i;
	for (size_t j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->keys[j]);
		int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (stays)
			continue;
		m->keys[hole] = m->keys[j];
		m->vals[hole] = m->vals[j];
		hole = j;
	}
	m->keys[hole] = 0;
	m->count--;
	return 1;
}

void hmap_clear(struct hmap *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof *m->keys);
	m->count = 0;
}
