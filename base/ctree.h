/* ctree: a prefix-closed set of hash chains, stored as the chains themselves. */
#ifndef KVSIM_CTREE_H
#define KVSIM_CTREE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"

/* Block hashes chain (a block's hash names it and its whole prefix), so a
 * set of blocks in which every block's chain parent is also a member is a
 * tree of chains. This keeps it as runs: arrays of consecutive hashes of
 * one chain, indexed by their first hash. A block added after the last
 * block of a run is appended to that run; one added after a block inside a
 * run (a branch) starts a new run. Runs only grow at their end and never
 * split, so a run's last block has no successor in any other run: lookups
 * along a chain need one index probe per branch taken, and adding a chain's
 * next block at a run's end is a store into memory just written.
 *
 * The same set as an hset of every hash, at about half its memory, with
 * adds that touch no random memory. Membership is only answered along a
 * chain whose prefix is in the tree (ctree_prefix): the set's members
 * must be added parent first (ctree_add checks nothing of this; its
 * caller knows where the parent is). Keys 0 are not allowed. */
#define CTREE_NONE UINT32_MAX

/* How many of a[0..lim) and b[0..lim) agree, given a[0] == b[0]: hashes
 * chain (each names its whole prefix), so the agreeing ones are a prefix,
 * found by one comparison when all agree, else by binary search. Shared
 * by ctree and the KV cache's runs. */
static inline uint32_t chain_match(const uint64_t *a, const uint64_t *b, uint32_t lim)
{
	if (a[lim - 1] == b[lim - 1])
		return lim;
	uint32_t lo = 1, hi = lim - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (a[mid - 1] == b[mid - 1])
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

struct ctree_run {
	uint64_t *h;
	uint32_t len, cap;
};

/* Where a block is: runs[run].h[off]; run CTREE_NONE for "before block 0". */
struct ctree_pos {
	uint32_t run, off;
};

struct ctree {
	struct ctree_run *runs;
	uint32_t n_runs, runs_cap;
	struct hmap first; /* a run's first hash -> run id */
	size_t count;      /* blocks */
};

void ctree_init(struct ctree *t);
void ctree_free(struct ctree *t);
/* The longest prefix of the chain h[0..n) in the tree: its length, and in
 * *end the position of its last block (run CTREE_NONE when 0). O(branches
 * along it), one binary search per run. */
uint32_t ctree_prefix(const struct ctree *t, const uint64_t *h, uint32_t n, struct ctree_pos *end);
/* Adds the block with hash h whose chain parent is at *at (run CTREE_NONE
 * for a chain's block 0) and moves *at to it. Returns 1 if it was new, 0 if
 * it was a member already, -1 when memory runs out (the tree unchanged). */
int ctree_add(struct ctree *t, struct ctree_pos *at, uint64_t h);
/* ctree_add of h[0..n) in turn (each the next one's parent), from *at;
 * once a block ends its run the rest are appended at once. expect: how
 * long the chain from h[0] is expected to grow in all (later calls going
 * on from *at), a hint: a run begun or grown here gets room for all of it
 * at once (0: no hint; runs double). Returns how many were new, or -1 when
 * memory runs out (those before stay added). */
int ctree_add_chain(struct ctree *t, struct ctree_pos *at, const uint64_t *h, uint32_t n,
		    uint32_t expect);
/* Calls fn with every hash in the tree (stops at the first nonzero return,
 * which it returns). */
int ctree_each(const struct ctree *t, int (*fn)(void *ctx, uint64_t h), void *ctx);

#endif
