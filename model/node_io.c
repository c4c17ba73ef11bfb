/* node_io: KV that enters or leaves a node from outside its steps: a
 * disaggregated request's reserved and held KV, swapped-in requests, a
 * crash's evacuation. */
#include <stdlib.h>

#include "model/node.h"

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
