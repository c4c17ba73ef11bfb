/* node: one model replica's engine: continuous batching over a paged KV cache. */
#ifndef KVSIM_NODE_H
#define KVSIM_NODE_H

#include <stdint.h>

#include "sim/cost.h"
#include "sim/kv.h"

struct request;
struct engine_cfg;

/* What the engine tells its owner. All are called outside the engine's own
 * data-structure updates, so they may enqueue to any node. */
struct node_hooks {
	void *ctx;
	/* A request finished (all output tokens emitted). */
	void (*on_done)(void *ctx, struct request *r, int64_t now_ns);
	/* Block idx of r was computed (its KV now exists on this node). */
	void (*on_block_computed)(void *ctx, struct request *r, uint32_t idx);
	/* 1 if some node has computed block idx of r before. */
	int (*computed_before)(void *ctx, const struct request *r, uint32_t idx);
};

struct batch_entry {
	struct request *r;
	uint32_t n; /* tokens computed for r in this iteration */
};

struct node {
	int id, server;
	struct kv_pool kv;
	const struct cost_model *cost;
	struct node_hooks hooks;
	uint32_t block_tokens, max_seqs, max_batched;
	int prefix_caching;
	/* waiting queue (FIFO; preempted requests go back to the front) */
	struct request *wait_head, *wait_tail;
	uint32_t n_waiting;
	uint64_t waiting_tokens; /* tokens still to prefill over the waiting queue */
	/* running requests in admission order; the last is preempted first */
	struct request **running;
	uint32_t n_running, running_cap;
	struct batch_entry *batch;
	uint32_t n_batch;
	int busy; /* an iteration is in progress */
	struct request **done; /* finished in the last iteration */
	uint32_t n_done;
	/* statistics */
	int64_t busy_ns;
	double kv_used_block_ns; /* integral of used blocks over busy time */
	uint32_t peak_used;
	uint64_t iterations, preemptions, completed;
};

/* Returns 0, or -1 when memory runs out. Caller frees with node_free. */
int node_init(struct node *n, int id, int server, uint32_t kv_blocks, const struct engine_cfg *ec,
	      const struct cost_model *cost, const struct node_hooks *hooks);
void node_free(struct node *n);
/* Appends r to the waiting queue (state REQ_WAITING). */
void node_enqueue(struct node *n, struct request *r, int64_t now_ns);
/* Forms the next iteration's batch (vLLM v1 scheduling: running requests
 * first, then admissions from the waiting queue, preempting the newest
 * running request when KV runs out). Returns the iteration's duration in ns,
 * or 0 when there is nothing to run (the node is then idle). O(batch). */
int64_t node_start_step(struct node *n, int64_t now_ns);
/* Applies the iteration that ends at now: tokens computed and emitted,
 * blocks cached, requests finished (on_done is called for each). O(batch). */
void node_finish_step(struct node *n, int64_t now_ns);
/* Blocks a request of this many tokens needs at most (prompt + output). */
static inline uint32_t node_blocks_for(const struct node *n, uint64_t tokens)
{
	return (uint32_t)((tokens + n->block_tokens - 1) / n->block_tokens);
}

#endif
