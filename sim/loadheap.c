/* loadheap: indexed min-heap of nodes by (outstanding, id). */
#include "sim/loadheap.h"

#include <stdlib.h>
#include <string.h>

#include "policies/policy.h"

#define NIL UINT32_MAX

static int less(const struct loadheap *h, uint32_t a, uint32_t b)
{
	uint32_t x = h->v[a].outstanding, y = h->v[b].outstanding;
	return x < y || (x == y && a < b);
}

static void place(struct loadheap *h, uint32_t i, uint32_t node)
{
	h->heap[i] = node;
	h->pos[node] = i;
}

static void up(struct loadheap *h, uint32_t i)
{
	uint32_t node = h->heap[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!less(h, node, h->heap[p]))
			break;
		place(h, i, h->heap[p]);
		i = p;
	}
	place(h, i, node);
}

static void down(struct loadheap *h, uint32_t i)
{
	uint32_t node = h->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && less(h, h->heap[c + 1], h->heap[c]))
			c++;
		if (!less(h, h->heap[c], node))
			break;
		place(h, i, h->heap[c]);
		i = c;
	}
	place(h, i, node);
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
	up(h, i);
	down(h, h->pos[node]);
}

void lh_remove(struct loadheap *h, uint32_t node)
{
	uint32_t i = h->pos[node];
	if (i == NIL)
		return;
	h->pos[node] = NIL;
	uint32_t last = h->heap[--h->n];
	if (i == h->n)
		return;
	place(h, i, last);
	up(h, i);
	down(h, h->pos[last]);
}

void lh_insert(struct loadheap *h, uint32_t node)
{
	if (h->pos[node] != NIL || h->n == h->cap)
		return;
	place(h, h->n, node);
	h->n++;
	up(h, h->n - 1);
}
