/* hmap: open-addressing uint64 -> uint64 map with backward-shift deletion. */
#include "base/hmap.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct hmap *m, uint64_t key)
{
	return hash_home(key, m->cap);
}

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof *m);
}

void hmap_free(struct hmap *m)
{
	free(m->slots);
	hmap_init(m);
}

uint64_t *hmap_get(const struct hmap *m, uint64_t key)
{
	if (m->cap == 0)
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key)
			return &m->slots[i].val;
		if (m->slots[i].key == 0)
			return NULL;
	}
}

static int grow(struct hmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	struct hmap_slot *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	struct hmap old = *m;
	m->slots = ns;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i].key == 0)
			continue;
		size_t j = slot_of(m, old.slots[i].key);
		while (m->slots[j].key != 0)
			j = (j + 1) & (m->cap - 1);
		m->slots[j] = old.slots[i];
	}
	free(old.slots);
	return 0;
}

int hmap_put(struct hmap *m, uint64_t key, uint64_t val)
{
	if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
		return -1;
	size_t i = slot_of(m, key);
	while (m->slots[i].key != 0) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->count++;
	return 1;
}

int hmap_del(struct hmap *m, uint64_t key)
{
	if (m->cap == 0)
		return 0;
	size_t mask = m->cap - 1, i = slot_of(m, key);
	while (m->slots[i].key != key) {
		if (m->slots[i].key == 0)
			return 0;
		i = (i + 1) & mask;
	}
	/* Backward shift: pull later members of the probe run into the hole
	 * unless their home slot lies cyclically in (hole, j]. */
	size_t hole = i;
	for (size_t j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->slots[j].key);
		int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (stays)
			continue;
		m->slots[hole] = m->slots[j];
		hole = j;
	}
	m->slots[hole].key = 0;
	m->count--;
	return 1;
}

void hmap_clear(struct hmap *m)
{
	if (m->cap)
		memset(m->slots, 0, m->cap * sizeof *m->slots);
	m->count = 0;
}
