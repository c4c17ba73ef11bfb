/* prompt_index: routers' records of the prompts routed to each node. */
#ifndef KVSIM_PROMPT_INDEX_H
#define KVSIM_PROMPT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"
#include "model/kv.h"

/* What SGLang's cache-aware router and llm-d's approximate prefix scorer
 * keep: which prompt blocks were routed to which node, not what the node
 * really caches. Each node's record holds at most cap_blocks blocks and
 * forgets the least recently routed first (a prompt's tail before its
 * head). The same records as prefix_index's LRU lists (the tests hold
 * them to it), made for inserts of whole prompts:
 *
 * - Each node's order of recency is a KV pool of cap_blocks blocks: a
 *   prompt is recorded as a request that comes and goes at once (lookup,
 *   lock, take, commit, release). Blocks already recorded are refreshed a
 *   run at a time, and the pool's eviction order (least recently released
 *   leaf run, its tail first) is the LRU list's.
 * - Which nodes hold a block is one map per group of 64 nodes, from the
 *   block's hash to a bit per node, written only when a node records or
 *   forgets the block; with more than one group, a second map counts the
 *   nodes holding it.
 *
 * Every insert is a prompt (hashes chained from block 0), so a record is a
 * tree of prefixes: a node holding block i holds blocks 0..i, and "which
 * nodes hold block i" shrinks along a prompt. A match is then a binary
 * search over the prompt. */
struct prompt_node {
	struct kv_pool kv;
	struct prompt_index *owner;
	uint32_t node;
};

struct prompt_index {
	uint32_t n_nodes, n_groups;
	size_t cap_blocks;
	struct prompt_node *nodes;
	struct kv_spares spares; /* the pools' spare hash arrays */
	struct hmap *holders;    /* per group: hash -> bit per node of the group */
	struct hmap count;       /* more than one group: hash -> nodes holding it */
	/* An insert ran out of memory: records may have lost their closure,
	 * so matches walk the prompt block by block. */
	int broken;
	/* Blocks a pool forgot during an insert, noted as they go and
	 * dropped from the maps after (their misses started ahead). */
	uint64_t *gone;
	uint32_t n_gone, cap_gone;
	uint32_t *size;    /* per node: blocks recorded */
	uint32_t *match;   /* per node: scratch for prompt_index_match */
	uint32_t *touched; /* nodes whose match is nonzero */
	uint32_t n_touched;
};

/* Returns 0 or -1 (no memory). p must stay where it is (its pools point
 * back at it). cap_blocks 0: nothing is ever recorded. */
int prompt_index_init(struct prompt_index *p, uint32_t n_nodes, size_t cap_blocks);
void prompt_index_free(struct prompt_index *p);
/* Matches hashes[0..n) against every node's record: afterwards p->match[i]
 * is node i's longest recorded prefix (in blocks), nonzero only for the
 * p->n_touched nodes in p->touched. Returns the longest match. O(log n)
 * lookups per distinct match length. */
uint32_t prompt_index_match(struct prompt_index *p, const uint64_t *hashes, uint32_t n);
/* The longest match only: afterwards the p->n_touched nodes in p->touched
 * are those with that match (p->match[i] set for them). Returns it. */
uint32_t prompt_index_match_longest(struct prompt_index *p, const uint64_t *hashes, uint32_t n);
/* Clears the scratch left by the matches. */
void prompt_index_match_done(struct prompt_index *p);
/* Records the prompt hashes[0..n) (block i's hash names blocks 0..i) as
 * routed to node now; a prompt longer than the record keeps its first
 * cap_blocks blocks. O(runs on its path in the node's record + blocks
 * recorded or forgotten). Returns 0 or -1 (no memory: the record may be
 * shorter). */
int prompt_index_insert(struct prompt_index *p, uint32_t node, const uint64_t *hashes, uint32_t n);
/* 1 if node's record holds hash. O(1) expected. */
int prompt_index_has(const struct prompt_index *p, uint32_t node, uint64_t hash);

#endif
