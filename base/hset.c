/* hset: open-addressing uint64 set, linear probing, load at most 3/4. */
#include "base/hset.h"

#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

static size_t slot_of(const struct hset *s, uint64_t key)
{
	return hash_home(key, s->cap);
}

void hset_init(struct hset *s)
{
	memset(s, 0, sizeof *s);
}

void hset_free(struct hset *s)
{
	free(s->slots);
	memset(s, 0, sizeof *s);
}

int hset_has(const struct hset *s, uint64_t key)
{
	if (s->cap == 0)
		return 0;
	for (size_t i = slot_of(s, key);; i = (i + 1) & (s->cap - 1)) {
		if (s->slots[i] == key)
			return 1;
		if (s->slots[i] == 0)
			return 0;
	}
}

static int grow(struct hset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	uint64_t *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	struct hset old = *s;
	s->slots = ns;
	s->cap = ncap;
	for (size_t i = 0; i < old.cap; i++) {
		if (old.slots[i] == 0)
			continue;
		size_t j = slot_of(s, old.slots[i]);
		while (s->slots[j] != 0)
			j = (j + 1) & (s->cap - 1);
		s->slots[j] = old.slots[i];
	}
	free(old.slots);
	return 0;
}

int hset_add(struct hset *s, uint64_t key)
{
	if ((s->count + 1) * 4 > s->cap * 3 && grow(s) != 0)
		return -1;
	size_t i = slot_of(s, key);
	while (s->slots[i] != 0) {
		if (s->slots[i] == key)
			return 0;
		i = (i + 1) & (s->cap - 1);
	}
	s->slots[i] = key;
	s->count++;
	return 1;
}
