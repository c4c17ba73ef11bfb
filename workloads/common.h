/* common: pieces the generators share: arrivals, prompt hashing, system prompts. */
#ifndef KVSIM_WL_COMMON_H
#define KVSIM_WL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "base/rng.h"
#include "workloads/schedule.h"

struct cJSON;
struct request;
struct wl_env;

/* Poisson (exponential gaps) or Gamma-renewal (gaps with a coefficient of
 * variation cv) arrivals at rate per second, drawn in operational time
 * t_ns and mapped to real time through the rate schedule (schedule.h).
 * Time is kept in integer ns. */
struct wl_arrivals {
	double rate_per_s;
	int gamma;
	double cv;
	int64_t t_ns;
	struct wl_schedule sched;
};
/* Reads rate_key, "arrival", "cv" and "rate_schedule" from obj (without
 * rate_schedule, env->schedule's when there is one). Free with
 * wl_arrivals_free (also after a failure). */
int wl_arrivals_parse(struct wl_arrivals *a, const struct cJSON *obj, const char *path,
		      const char *rate_key, double default_rate, const struct wl_env *env,
		      char *err, size_t errlen);
/* Advances to and returns the next arrival time (real time). */
int64_t wl_arrivals_next(struct wl_arrivals *a, gsl_rng *r);
void wl_arrivals_free(struct wl_arrivals *a);

/* A run of tokens with one identity: token i of segment id is (id, i). */
struct wl_seg {
	uint64_t id;
	uint32_t len;
};
/* Hashes the full blocks of the token sequence segs[0..n) into r->hashes
 * (growing it); block i's hash names blocks 0..i (a chain), so equal
 * prefixes give equal hashes whatever the segments around them. A block's
 * pieces (a segment's tokens inside it: id, first offset, length) mix into
 * acc = mix(acc ^ mix(id) ^ offset << 32 ^ length) from acc = 0, and a full
 * block's hash is mix(prev ^ mix(acc)), prev being its parent's
 * (WL_HASH_ORIGIN for the first) and 0 written as 1. Returns 0, or -1 when
 * memory runs out. O(blocks + segments). */
#define WL_HASH_ORIGIN 0x6b7673696d000000ULL
int wl_hash_blocks(struct request *r, const struct wl_seg *segs, uint32_t n, uint32_t block_tokens);

/* Where a chain of block hashes stopped: after `blocks` full blocks, which
 * end `off` tokens into segment `seg`, the last having hash `prev`. A
 * zeroed state is the start. */
struct wl_hash_state {
	uint32_t seg, off, blocks;
	uint64_t prev;
};

/* wl_hash_blocks, resuming from *st: the segments before st->seg and the
 * first st->off tokens of it must be what they were, and the first
 * st->blocks hashes are copied from prefix (the request hashed then), or
 * kept where they are when prefix is r->hashes itself. *st
 * gets the state after the last full block. The hashes are identical to
 * wl_hash_blocks's; only the work is less (a follow-up turn hashes its new
 * tokens, not its whole history). */
int wl_hash_blocks_resume(struct request *r, const struct wl_seg *segs, uint32_t n,
			  uint32_t block_tokens, struct wl_hash_state *st, const uint64_t *prefix);
/* The same, told the segments' total length (tokens): a caller that keeps
 * it spares a pass over segments it does not otherwise read. */
int wl_hash_blocks_resume_n(struct request *r, const struct wl_seg *segs, uint32_t n,
			    uint64_t tokens, uint32_t block_tokens, struct wl_hash_state *st,
			    const uint64_t *prefix);

/* wl_hash_blocks in two halves, for hashing many requests at once: the
 * first writes into r->hashes what each block's hash mixes with its
 * parent's (the part that needs no chain); the second turns rs[0..k)'s
 * into their hashes, walking several chains side by side (a chain is a
 * serial dependency; independent ones overlap). The hashes are
 * wl_hash_blocks's. */
int wl_hash_unchained(struct request *r, const struct wl_seg *segs, uint32_t n,
		      uint32_t block_tokens);
void wl_hash_chain(struct request *const *rs, uint32_t k);

/* Grows the array *a of capacity *cap (doubling from 64) to hold want
 * values, keeping its contents. Returns 0, or -1 when memory runs out (the
 * array unchanged). */
int wl_reserve_u64(uint64_t **a, uint32_t *cap, uint32_t want);

/* Moves a request a workload prepared ahead (src) into dst: the
 * workload-set fields are copied, and the two swap hash buffers (dst gets
 * src's hashes; src keeps dst's old buffer for a later request). */
void wl_take(struct request *dst, struct request *src);

/* Tests: when set, wl_hash_unchained uses no vector instructions (the
 * hashes are the same either way). */
extern int wl_hash_simd_off;

/* Tests: when set, conversation workloads hash each session's head from
 * scratch instead of starting after its cached full blocks (the hashes are
 * the same either way). */
extern int wl_head_hashes_off;

/* A pool of shared texts (system prompts, RAG documents, tool definitions)
 * with Zipf popularity: item k's length is drawn once; its tokens are the
 * same for every request that names it. */
struct wl_pool {
	uint32_t count;
	struct zipf pop;
	uint32_t *tokens; /* length of each */
	uint64_t salt;
};
/* Reads obj.key = {count, zipf_s, tokens} (absent: default_count items of
 * default_len); lengths come from stream stream_id of the seed. */
int wl_pool_parse(struct wl_pool *sp, const struct cJSON *obj, const char *path, const char *key,
		  uint32_t default_count, const struct dist *default_len, uint64_t seed,
		  uint64_t stream_id, char *err, size_t errlen);
void wl_pool_free(struct wl_pool *sp);
/* Item k as a segment. */
void wl_pool_item(const struct wl_pool *sp, uint32_t k, struct wl_seg *seg);
/* Draws an item by popularity; fills seg (len 0 when the pool is empty). */
void wl_pool_draw(const struct wl_pool *sp, gsl_rng *r, struct wl_seg *seg);
/* The default length of system prompts: uniform 200..2000 tokens. */
int wl_pool_sysprompts(struct wl_pool *sp, const struct cJSON *obj, const char *path,
		       uint32_t default_count, uint64_t seed, char *err, size_t errlen);

/* Stream ids for rng_stream, one per component. */
enum {
	WL_STREAM_ARRIVALS = 1,
	WL_STREAM_LENGTHS = 2,
	WL_STREAM_SYSPROMPTS = 3,
	WL_STREAM_DOCUMENTS = 4,
	WL_STREAM_TOOLS = 5,
};

#endif
