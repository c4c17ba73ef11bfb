/* loadheap: the node with the fewest outstanding requests, in O(1). */
#ifndef KVSIM_POLICIES_LOADHEAP_H
#define KVSIM_POLICIES_LOADHEAP_H

#include <stdint.h>

struct pol_node_view;

/* An indexed binary min-heap of the nodes that are up, ordered by
 * (outstanding, id) as read from a router's view: the top is what a scan
 * for the least-loaded node (ties to the lowest id) would find. The owner
 * calls lh_fix after changing a node's outstanding count, lh_remove /
 * lh_insert when it goes down / comes back. O(log nodes) each. */
struct loadheap {
	const struct pol_node_view *v;
	/* The heap holds keys (outstanding << 32 | node), so that ordering by
	 * key is ordering by (outstanding, id) and a sift reads only the heap's
	 * own array (8 KiB at 1,024 nodes), not the views' cache lines. */
	uint64_t *heap;
	uint32_t *pos; /* pos[node] = index in heap, or UINT32_MAX */
	uint32_t n, cap;
};

int lh_init(struct loadheap *h, const struct pol_node_view *v, uint32_t n_nodes);
void lh_free(struct loadheap *h);
void lh_fix(struct loadheap *h, uint32_t node);
void lh_remove(struct loadheap *h, uint32_t node);
void lh_insert(struct loadheap *h, uint32_t node);
/* The least-loaded node up, or -1. */
static inline int32_t lh_min(const struct loadheap *h)
{
	return h->n ? (int32_t)(uint32_t)h->heap[0] : -1;
}

#endif
