/* prefix_index: per-owner LRU sets of block hashes (KV tiers; the model of routers' records). */
#ifndef KVSIM_PREFIX_INDEX_H
#define KVSIM_PREFIX_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"

/* Owners are servers (a KV tier's contents, blocks inserted one at a time)
 * or nodes (records of routed prompts, the model that the routers'
 * prompt_index is tested against).
 *
 * A node's record of routed prompts is capped at cap_blocks blocks and
 * forgets least recently routed blocks first (a prompt's tail before its
 * head, so a record stays a set of prefixes). Each insert touches every
 * block of the prompt in an LRU list: O(prompt blocks), where
 * prompt_index's costs O(runs + blocks recorded or forgotten).
 *
 * One map from block hash to the chain of (hash, node) entries, and one
 * from (hash, node) to its entry. A record of prompts is prefix-closed after
 * every insert (a block's parent is touched after it, so it is more recent
 * and forgotten later), so a node holding block i holds blocks 0..i. */
struct pidx_entry {
	uint64_t hash;
	uint32_t node;
	uint32_t hnext, hprev; /* entries with this hash, or UINT32_MAX */
	uint32_t prev, next;   /* the node's LRU list (head = most recent) */
};

struct pidx {
	uint32_t n_nodes;
	size_t cap_blocks;
	struct hmap by_hash; /* hash -> first entry + 1 */
	struct hmap by_pair; /* pair_key(hash, node) -> entry + 1 */
	int pair_clash;      /* two pairs met on one key: use the chains */
	struct pidx_entry *e;
	uint32_t n_e, cap_e, free_e;
	uint32_t *head, *tail; /* per node */
	uint32_t *size;        /* per node: blocks recorded */
	uint32_t *match;       /* per node: scratch for pidx_match_walk */
	uint32_t *touched;     /* nodes whose match is nonzero */
	uint32_t n_touched;
	/* Called for each block forgotten to make room (may be NULL). */
	void (*on_evict)(void *ctx, uint32_t node, uint64_t hash);
	void *evict_ctx;
};

int pidx_init(struct pidx *p, uint32_t n_nodes, size_t cap_blocks);
void pidx_free(struct pidx *p);
/* Matches hashes[0..n) against every node's record by walking the prompt
 * block by block for every node holding each block (no closure assumed):
 * afterwards p->match[i] is node i's longest recorded prefix (in blocks),
 * nonzero only for the p->n_touched nodes in p->touched. Returns the
 * longest match. The reference for prompt_index's matches in tests. */
uint32_t pidx_match_walk(struct pidx *p, const uint64_t *hashes, uint32_t n);
/* Clears the scratch left by pidx_match_walk. */
void pidx_match_done(struct pidx *p);
/* Records hashes[0..n) as routed to node now. Returns 0 or -1 (no memory). */
int pidx_insert(struct pidx *p, uint32_t node, const uint64_t *hashes, uint32_t n);
/* 1 if node's record holds hash. O(1) expected. */
int pidx_has(const struct pidx *p, uint32_t node, uint64_t hash);

#endif
