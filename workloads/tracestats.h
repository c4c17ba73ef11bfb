/* tracestats: what a trace holds and how much of it a cache could reuse. */
#ifndef KVSIM_TRACESTATS_H
#define KVSIM_TRACESTATS_H

#include <stddef.h>
#include <stdint.h>

#include "workloads/trace.h"

#define TSTATS_MAX_CACHES 32

struct tstats_dist {
	double mean, p50, p99, max;
};

/* Reuse is counted as a prefix cache sees it: a request's hit is the run of
 * leading prompt blocks present before it looks (a block after a miss is
 * not reusable), and every one of its blocks is then inserted or touched
 * (a kvsim trace's: prompt + answer, as the next turn of a conversation
 * finds them). */
struct trace_stats {
	enum trace_format format;
	uint32_t block_tokens; /* of the trace's block ids (Azure: 512, all unique) */
	uint64_t requests, skipped;
	double duration_s, arrival_rate_per_s;
	struct tstats_dist input, output;
	uint64_t distinct_blocks; /* every block inserted (kvsim: answers' too) */
	uint64_t total_blocks;    /* prompt blocks looked up, summed over requests */
	/* unbounded cache: hit blocks / blocks, hit tokens / prompt tokens, and
	 * the mean over requests of each one's hit-token share */
	double ideal_blocks, ideal_tokens, ideal_per_request;
	size_t n_caches;
	uint64_t cache_blocks[TSTATS_MAX_CACHES];
	double lru_hit[TSTATS_MAX_CACHES]; /* hit blocks / blocks, LRU of that many blocks */
};

/* Reads the whole trace once (streamed; memory grows with distinct blocks
 * and, for the percentiles, 8 bytes per request). Returns 0, or -1 with err
 * ("FILE:LINE: ..." for bad input). */
int tstats_run(const char *path, enum trace_format format, int skip_bad, const uint64_t *caches,
	       size_t n_caches, struct trace_stats *out, char *err, size_t errlen);
/* Guesses a trace's format from its first line: -1 if it cannot. */
int tstats_detect_format(const char *path);

#endif
