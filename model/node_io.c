/* node_io: a node's set-up and tear-down, and KV that enters or leaves it
 * from outside its steps: a disaggregated request's reserved and held KV,
 * swapped-in requests, a crash's evacuation. */
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "model/node.h"

int node_init(struct node *n, int id, int server, uint32_t kv_blocks, const struct engine_cfg *ec,
	      const struct cost_model *cost, const struct node_hooks *hooks)
{
	memset(n, 0, sizeof *n);
	n->sync_due_ns = INT64_MAX;
	n->id = id;
	n->server = server;
	n->cost = cost;
	n->hooks = *hooks;
	n->block_tokens = (uint32_t)ec->kv_block_tokens;
	n->max_seqs = (uint32_t)ec->max_num_seqs;
	n->max_batched = (uint32_t)ec->max_num_batched_tokens;
	n->block_shift = 0;
	if ((n->block_tokens & (n->block_tokens - 1)) == 0)
		while ((1u << n->block_shift) < n->block_tokens)
			n->block_shift++;
	n->prefix_caching = ec->prefix_caching;
	n->time_scale = 1.0;
	n->swap = ec->preempt_swap;
	n->running_cap = n->max_seqs;
	n->max_span = (uint32_t)ec->max_span_iterations;
	n->running = malloc(n->running_cap * sizeof *n->running);
	n->batch = malloc(n->running_cap * sizeof *n->batch);
	n->done = malloc(n->running_cap * sizeof *n->done);
	n->swapped = malloc(n->running_cap * sizeof *n->swapped);
	n->span_end = malloc(n->max_span * sizeof *n->span_end);
	n->span_used = malloc(n->max_span * sizeof *n->span_used);
	n->span_grid.grid =
	    malloc((n->max_span / COST_SPAN_GRID_MIN + 3) * sizeof *n->span_grid.grid);
	if (n->block_shift)
		n->span_res = malloc((n->block_tokens + 1) * sizeof *n->span_res);
	if (!n->running || !n->batch || !n->done || !n->swapped || !n->span_end || !n->span_used ||
	    !n->span_grid.grid || (n->block_shift && !n->span_res) ||
	    kv_init(&n->kv, kv_blocks)) {
		node_free(n);
		return -1;
	}
	return 0;
}

void node_free(struct node *n)
{
	kv_free(&n->kv);
	free(n->running);
	free(n->batch);
	free(n->done);
	free(n->swapped);
	n->swapped = NULL;
	free(n->span_end);
	free(n->span_used);
	free(n->span_grid.grid);
	free(n->span_res);
	n->span_res = NULL;
	n->span_end = NULL;
	n->span_used = NULL;
	n->span_grid.grid = NULL;
	n->running = NULL;
	n->batch = NULL;
	n->done = NULL;
}

int node_reserve(struct node *n, struct request *r, uint32_t *hit_blocks)
{
	uint32_t B = n->block_tokens, P = r->prompt_tokens;
	struct kv_match m;
	node_lookup_tokens(n, r, P, &m);
	uint32_t total = node_blocks_for(n, P);
	if (total < m.blocks)
		total = m.blocks;
	if (total - m.blocks > kv_available(&n->kv) - m.unlocked)
		return -1;
	r->kv_tail = kv_acquire(&n->kv, &m);
	if (r->kv_tail != KV_NONE)
		node_note_tail_key(n, r);
	r->n_blocks = m.blocks;
	r->n_own = 0;
	if (node_grow_to(n, r, P))
		n->kv.oom = 1; /* room was checked above */
	/* nothing computed here yet: the hit's tokens are its KV so far */
	r->num_computed = m.blocks * B < P ? m.blocks * B : P - 1;
	*hit_blocks = m.blocks;
	return 0;
}

int node_admit_reserved(struct node *n, struct request *r, int64_t now_ns)
{
	uint32_t P = r->prompt_tokens;
	/* the prompt's KV is here, all but its last token, which it computes
	 * to give its first output token (vLLM's decode side does the same) */
	r->num_tokens = P;
	r->num_computed = P - 1;
	r->high_water = P - 1;
	r->generated = 0;
	uint32_t full = node_full_blocks(n, P - 1);
	if (full > r->n_hashes)
		full = r->n_hashes;
	uint32_t next = r->n_blocks - r->n_own;
	if (n->prefix_caching && next < full)
		node_commit_blocks(n, r, next, full);
	r->state = REQ_WAITING;
	r->node = n->id;
	/* it needs a batch slot only: node_start_step lets it past a queue
	 * head that waits for memory (node.n_held) */
	node_wait_push_back(n, r);
	return node_cut_span(n, now_ns);
}

void node_unreserve(struct node *n, struct request *r)
{
	node_release_blocks(n, r);
	r->num_computed = 0;
}

void node_release_held(struct node *n, struct request *r)
{
	kv_release(&n->kv, r->pd_src_tail, r->pd_src_own);
	r->pd_src_tail = KV_NONE;
	r->pd_src_own = 0;
}

int node_enqueue_front(struct node *n, struct request *r, int64_t now_ns)
{
	r->state = REQ_WAITING;
	r->node = n->id;
	node_wait_push_front(n, r);
	return node_cut_span(n, now_ns);
}

uint32_t node_evacuate(struct node *n, struct request **out)
{
	/* The iterations of a decode span that ended before (node_sync
	 * applied them) count as any step's; the one in progress is lost. */
	if (n->busy && n->span_ended > 0)
		node_step_stats(n, n->span_ended - 1);
	node_commit_held(n); /* what they computed was computed (the frontiers) */
	uint32_t k = 0;
	while (n->wait_head) {
		struct request *r = n->wait_head;
		node_wait_pop_front(n);
		out[k++] = r;
	}
	for (uint32_t i = 0; i < n->n_running; i++) {
		struct request *r = n->running[i];
		r->kv_tail = KV_NONE;
		r->n_blocks = r->n_own = 0;
		out[k++] = r;
	}
	n->n_running = 0;
	n->n_batch = 0;
	n->busy = 0;
	n->span_len = n->span_eval = 0;
	n->sync_due_ns = INT64_MAX;
	n->n_swapped = 0;
	n->hold_admissions = 0;
	uint32_t blocks = n->kv.n_blocks;
	void (*cb)(void *, uint64_t) = n->kv.on_evict;
	void *ctx = n->kv.evict_ctx;
	struct kv_spares *shared = n->kv.spares_own ? NULL : n->kv.spares;
	kv_free(&n->kv);
	if (kv_init(&n->kv, blocks))
		n->kv.oom = 1;
	n->kv.on_evict = cb;
	n->kv.evict_ctx = ctx;
	n->kv.spares = shared;
	return k;
}
