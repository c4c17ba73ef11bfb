/* loadheap: indexed min-heap of nodes by (outstanding, id). */
#include "policies/loadheap.h"

#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"

#define NIL UINT32_MAX

static uint64_t key_of(const struct loadheap *h, uint32_t node)
{
	return (uint64_t)h->v[node].outstanding << 32 | node;
}

static void place(struct loadheap *h, uint32_t i, uint64_t key)
{
	h->heap[i] = key;
	h->pos[(uint32_t)key] = i;
}

static void up(struct loadheap *h, uint32_t i, uint64_t key)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (key >= h->heap[p])
			break;
		place(h, i, h->heap[p]);
		i = p;
	}
	place(h, i, key);
}

static void down(struct loadheap *h, uint32_t i, uint64_t key)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->heap[c + 1] < h->heap[c])
			c++;
		if (h->heap[c] >= key)
			break;
		place(h, i, h->heap[c]);
		i = c;
	}
	place(h, i, key);
}

int lh_init(struct loadheap *h, const struct pol_node_view *v, uint32_t n_nodes)
{
	memset(h, 0, sizeof *h);
	h->v = v;
	h->heap = malloc(n_nodes * sizeof *h->heap);
	h->pos = malloc(n_nodes * sizeof *h->pos);
	if (!h->heap || !h->pos) {
		lh_free(h);
		return -1;
	}
	h->cap = n_nodes;
	for (uint32_t i = 0; i < n_nodes; i++)
		h->pos[i] = NIL;
	for (uint32_t i = 0; i < n_nodes; i++)
		if (v[i].up)
			lh_insert(h, i);
	return 0;
}

void lh_free(struct loadheap *h)
{
	free(h->heap);
	free(h->pos);
	memset(h, 0, sizeof *h);
}

void lh_fix(struct loadheap *h, uint32_t node)
{
	uint32_t i = h->pos[node];
	if (i == NIL)
		return;
	uint64_t key = key_of(h, node);
	if (key > h->heap[i])
		down(h, i, key);
	else
		up(h, i, key);
}

void lh_remove(struct loadheap *h, uint32_t node)
{
	uint32_t i = h->pos[node];
	if (i == NIL)
		return;
	h->pos[node] = NIL;
	uint64_t last = h->heap[--h->n];
	if (i == h->n)
		return;
	/* the last key goes where node was: it sifts one way or the other */
	if (last > h->heap[i])
		down(h, i, last);
	else
		up(h, i, last);
}

void lh_insert(struct loadheap *h, uint32_t node)
{
	if (h->pos[node] != NIL || h->n == h->cap)
		return;
	h->n++;
	up(h, h->n - 1, key_of(h, node));
}
