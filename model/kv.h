/* kv: one node's paged KV cache: a tree of cached block runs with LRU eviction. */
#ifndef KVSIM_KV_H
#define KVSIM_KV_H

#include <stdint.h>

#include "base/hmap.h"

#define KV_NONE UINT32_MAX

/* Cached blocks form a prefix tree whose nodes are runs: consecutive blocks
 * of one hash chain (block i's hash names blocks 0..i). A run's first hash
 * keys it in `first`; since hashes chain, a request matches a whole run by
 * comparing one hash, and a partial run by binary search. A request holds
 * (locks) every run on its path from the root, plus its own uncached
 * blocks (the block being filled, or all of them without prefix caching).
 *
 * Eviction is vLLM's: unreferenced cached blocks go least recently released
 * first, a finished request's tail first. A run's lock always covers all of
 * its blocks (a partial use splits it), so all blocks of a run share their
 * release time, and an ancestor is released no earlier than its descendants;
 * evicting tail blocks of the least recently released unlocked leaf run is
 * therefore the same order, at O(1) per block instead of a hash-map delete.
 *
 * One departure from vLLM: when a request fills a block whose hash is
 * already cached at the same place (two requests computing the same prefix
 * at once), it adopts the cached block and frees its copy (SGLang's radix
 * cache does the same) instead of keeping an uncached duplicate.
 *
 * Invariant: n_free + n_cached + n_used == n_blocks, where n_cached counts
 * blocks of unlocked runs and n_used those of locked runs plus requests' own. */
struct kv_run {
	uint64_t *hashes;      /* len chain hashes (capacity cap) */
	uint32_t len, cap;
	uint32_t depth;        /* chain index of the first block */
	uint32_t parent;       /* run id, or KV_NONE at the root */
	uint32_t n_children;
	uint32_t lock;         /* requests whose path includes this run */
	uint64_t release_seq;  /* when lock last fell to 0 (0 while alive = never locked) */
	uint32_t next_free;    /* slot free list; KV_NONE when alive */
	uint8_t alive;
	/* The tail of one running request that holds it alone (lock 1, no
	 * children) and may hold back commits of its private blocks after
	 * it (see the node's deferred commits): a lookup that reaches its
	 * end, or a commit that would adopt all of it, says so instead of
	 * going on (kv_match.open, kv_pool.open_hit). */
	uint8_t open;
};

struct kv_evictable {
	uint64_t seq;
	uint32_t run;
};

/* Where a prefix lookup ended: blocks matched, how many of them are in
 * unlocked runs (their blocks would stop being evictable), and the run the
 * match ends in with how many of its blocks it uses. */
struct kv_match {
	uint32_t blocks, unlocked;
	uint32_t run, run_used;
	/* 1: the match ended at the end of an open run with hashes left to
	 * match: blocks held back after it might match them too. */
	uint32_t open;
};

/* Hash arrays of deleted runs, by capacity class (8 << c hashes and three
 * quarter steps to 16 << c: class 4 c + s holds (8 << c) (4 + s) / 4),
 * linked through their first word: a run that needs room takes one of its class
 * before asking malloc, so pools hold arrays for what is cached at once,
 * not for every run slot's largest past run. A class keeps at most an
 * eighth of its arrays in use (plus 16) spare; the rest go back to malloc,
 * so the lists follow a workload whose runs grow (sessions' histories). */
struct kv_spares {
	uint64_t *list[4 * 27];
	uint32_t n_spare[4 * 27], in_use[4 * 27];
	size_t bytes; /* arrays from malloc held: in runs and on the lists */
};

/* Frees the arrays on s's lists. */
void kv_spares_free(struct kv_spares *s);

struct kv_pool {
	uint32_t n_blocks;
	uint32_t n_free, n_cached, n_used;
	struct kv_run *runs;
	uint32_t n_runs, free_run, n_alive;
	struct hmap first; /* hash of a run's first block -> run id */
	/* Unlocked leaf runs, least seq first: a ring in seq order for runs
	 * released (nearly all), a min-heap for those that became leaves
	 * later (see kv.c). Entries go stale when a run is locked again or
	 * gains a child; they are dropped when they surface, and both are
	 * compacted when stale ones outnumber the live runs, so their size
	 * follows what is cached, not how many requests ran. */
	struct kv_evictable *ring;
	uint32_t ring_head, ring_n, ring_cap; /* ring_cap a power of two */
	struct kv_evictable *heap;
	uint32_t heap_n, heap_cap;
	uint64_t seq;
	uint64_t evictions;
	/* Set when memory for the index ran out: the pool stays usable but
	 * its owner must stop (kvsim reports "out of memory", exit 3). */
	int oom;
	/* Set when a commit stopped short of adopting all of an open run:
	 * its owner's held-back blocks must be committed first, then the
	 * rest of the commit made again. */
	int open_hit;
	/* Where the pool's runs take hash arrays and leave them when deleted:
	 * lists its cluster's pools share (set after kv_init; the sharer
	 * frees them with kv_spares_free), or, left NULL, lists of its own,
	 * allocated at the first need (spares_own) and freed by kv_free. */
	struct kv_spares *spares;
	int spares_own;
	/* Called with each evicted block's hash (KV tiers write it down); may
	 * be NULL. Set after kv_init. */
	void (*on_evict)(void *ctx, uint64_t hash);
	void *evict_ctx;
};

/* Returns 0, or -1 when memory runs out. Caller frees with kv_free. */
int kv_init(struct kv_pool *p, uint32_t n_blocks);
void kv_free(struct kv_pool *p);
/* Blocks that a request can obtain: free ones plus evictable cached ones. */
static inline uint32_t kv_available(const struct kv_pool *p)
{
	return p->n_free + p->n_cached;
}
/* The longest cached prefix of hashes[0..n). Changes nothing. O(runs on the
 * path) lookups, plus O(log run length) where the match ends inside a run. */
void kv_lookup_prefix(const struct kv_pool *p, const uint64_t *hashes, uint32_t n,
		      struct kv_match *m);
/* 1 when evicting the next e blocks, in eviction order, leaves the blocks
 * of match m (a lookup's, made since the pool last changed) cached: the
 * first victim, an unlocked leaf run, holds at least e blocks, and it is
 * not the run m ends in or keeps the part of it m uses. (A leaf is on no
 * other run's path.) 0 when that does not hold or cannot be told at once
 * (the heap's first entry is stale). Changes nothing. O(1). */
int kv_evict_spares(const struct kv_pool *p, uint32_t e, const struct kv_match *m);
/* Prefetch hints for a prefix lookup of hashes[0..n) that will likely
 * reach run id (a session's run from its turn before): kv_prefetch_run_lines
 * starts the misses of the run's fields; kv_prefetch_run, once those are in
 * cache, reads them and starts the misses of the run's index slot (key: its
 * first hash, which the caller noted when the run began at key_depth, so
 * that no prompt hash is read first; the prompt's hash at the run's depth
 * if a split has moved its start since), its last hash and the prompt's
 * hash compared with it. A stale id or key (a run since evicted or reused)
 * costs a wasted prefetch, nothing else. */
static inline __attribute__((always_inline)) void kv_prefetch_run_lines(const struct kv_pool *p,
									 uint32_t id)
{
	if (id < p->n_runs) {
		__builtin_prefetch(&p->runs[id]);
		__builtin_prefetch((const char *)&p->runs[id] + sizeof p->runs[id] - 1);
	}
}
static inline __attribute__((always_inline)) void
kv_prefetch_run(const struct kv_pool *p, uint32_t id, uint64_t key, uint32_t key_depth,
		const uint64_t *hashes, uint32_t n)
{
	if (id >= p->n_runs)
		return;
	const struct kv_run *r = &p->runs[id];
	if (!r->alive || r->len == 0 || r->depth >= n)
		return;
	hmap_prefetch(&p->first, r->depth == key_depth ? key : hashes[r->depth]);
	__builtin_prefetch(r->hashes + r->len - 1);
	if (r->depth + r->len <= n)
		__builtin_prefetch(hashes + r->depth + r->len - 1);
}
/* Prefetch hints for a prefix lookup of hashes[0..n) with no run to hint:
 * the run its first probe finds, in two stages after that probe's slot
 * (hmap_prefetch of hashes[0]): stage 0 reads the home slot and starts
 * the misses of the run's fields; stage 1, once those are in cache, its
 * last hash, the prompt's hash compared with it, and the probe for the
 * run's child. Reads only the home slot: a run stored further along the
 * probe run, or none, is not prefetched. */
static inline __attribute__((always_inline)) void
kv_prefetch_first(const struct kv_pool *p, const uint64_t *hashes, uint32_t n, int stage)
{
	if (n == 0 || !p->first.cap)
		return;
	const struct hmap_slot *sl = &p->first.slots[hash_home(hashes[0], p->first.cap)];
	if (sl->key != hashes[0] || sl->val >= p->n_runs)
		return;
	uint32_t id = (uint32_t)sl->val;
	if (stage == 0) {
		kv_prefetch_run_lines(p, id);
		return;
	}
	const struct kv_run *r = &p->runs[id];
	if (!r->alive || r->len == 0 || r->depth != 0)
		return;
	uint32_t lim = r->len < n ? r->len : n;
	__builtin_prefetch(r->hashes + lim - 1);
	__builtin_prefetch(hashes + lim - 1);
	if (r->len < n && r->n_children)
		hmap_prefetch(&p->first, hashes[r->len]);
}
/* Locks the matched prefix for a request (splitting a partly used run);
 * returns the request's tail run, KV_NONE for an empty match. m must come
 * from kv_lookup_prefix with no change to the pool since. */
uint32_t kv_acquire(struct kv_pool *p, const struct kv_match *m);
/* Takes n blocks for a request's own use, evicting cached blocks when no
 * free ones are left. Returns 0, or -1 (nothing taken) when fewer than n
 * are available. */
int kv_take(struct kv_pool *p, uint32_t n);
/* Evicts up to n cached (unlocked) blocks, least recently released first,
 * as kv_take would; returns how many went. */
uint32_t kv_evict(struct kv_pool *p, uint32_t n);
/* Frees the cached blocks of the chain hashes[0..n) from where the cache
 * holds it up to, back to block lo at most, while they are in runs that no
 * request holds and nothing else hangs from (the chain's own unlocked
 * tail): KV that moved to another node. Not an eviction (on_evict is not
 * called, evictions not counted). dry: counts them, changes nothing. No
 * run on the chain may be open (the owner commits held-back blocks first).
 * Returns how many blocks go (or would). O(runs on the path). */
uint32_t kv_drop(struct kv_pool *p, const uint64_t *hashes, uint32_t lo, uint32_t n, int dry);
/* A request's block idx, one of its own blocks, is full and has hash h; its
 * path (ending at *tail) covers exactly blocks 0..idx-1. The block becomes
 * cached (appended to the tail run, or a new run) and stays locked by the
 * request, or, if h is already cached there, the request adopts that block
 * and its own copy is freed. *tail is updated. O(1) expected. Returns 0, or
 * -1 (p->oom set; the block stays the request's own) when memory ran out. */
int kv_commit_block(struct kv_pool *p, uint32_t *tail, uint32_t idx, uint64_t h);
/* kv_commit_block of blocks from..to-1 in turn (hashes[b] for block b), up
 * to the first that fails; returns how many were committed. A tail run the
 * request holds alone with nothing under it takes the rest at once, and
 * grows, when it must, to hold the whole chain (n_chain blocks: hashes'
 * length), so that a request moves its run's hashes once at most. */
uint32_t kv_commit_blocks_any(struct kv_pool *p, uint32_t *tail, uint32_t from, uint32_t to,
			      const uint64_t *hashes, uint32_t n_chain);
/* kv_commit_blocks_any, with the common case inline: a decode token's
 * block appended to the request's own tail run, which has room. */
static inline uint32_t kv_commit_blocks(struct kv_pool *p, uint32_t *tail, uint32_t from,
					uint32_t to, const uint64_t *hashes, uint32_t n_chain)
{
	if (*tail != KV_NONE) {
		struct kv_run *r = &p->runs[*tail];
		if (r->lock == 1 && r->n_children == 0 && r->len + (to - from) <= r->cap) {
			uint64_t *dst = r->hashes + r->len;
			for (uint32_t b = from; b < to; b++)
				*dst++ = hashes[b];
			r->len += to - from;
			return to - from;
		}
	}
	return kv_commit_blocks_any(p, tail, from, to, hashes, n_chain);
}
/* Releases a request's hold: the runs from tail to the root (tail first, so
 * the tail is evicted first) and its n_own own blocks (freed). */
void kv_release(struct kv_pool *p, uint32_t tail, uint32_t n_own);
/* Caches hashes[lo..hi) (blocks that arrived from elsewhere) after the
 * prefix hashes[0..lo), as the most recently released blocks. No run on
 * the chain may be open (the owner commits held-back blocks first). Returns the
 * index up to which the chain is now cached (hi if all fit; less if the
 * prefix is no longer cached or space ran out). */
uint32_t kv_install(struct kv_pool *p, const uint64_t *hashes, uint32_t lo, uint32_t hi);
/* Checks the invariants (counters, tree links, locks) in O(runs); returns 0
 * or -1 with why (a static string). *locked gets the blocks of locked runs.
 * For tests and audits. */
int kv_audit(const struct kv_pool *p, uint64_t *locked, const char **why);
static inline int kv_check(const struct kv_pool *p)
{
	uint64_t locked;
	const char *why;
	return kv_audit(p, &locked, &why);
}

#endif
