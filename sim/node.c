/* node: scheduler, prefix-cached KV allocation and preemption of one replica. */
#include "sim/node.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim/config.h"
#include "sim/request.h"

int node_init(struct node *n, int id, int server, uint32_t kv_blocks, const struct engine_cfg *ec,
	      const struct cost_model *cost, const struct node_hooks *hooks)
{
	memset(n, 0, sizeof *n);
	n->id = id;
	n->server = server;
	n->cost = cost;
	n->hooks = *hooks;
	n->block_tokens = (uint32_t)ec->kv_block_tokens;
	n->max_seqs = (uint32_t)ec->max_num_seqs;
	n->max_batched = (uint32_t)ec->max_num_batched_tokens;
	n->prefix_caching = ec->prefix_caching;
	n->running_cap = n->max_seqs;
	n->running = malloc(n->running_cap * sizeof *n->running);
	n->batch = malloc(n->running_cap * sizeof *n->batch);
	n->done = malloc(n->running_cap * sizeof *n->done);
	if (!n->running || !n->batch || !n->done || kv_init(&n->kv, kv_blocks)) {
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
	n->running = NULL;
	n->batch = NULL;
	n->done = NULL;
}

static void wait_push_back(struct node *n, struct request *r)
{
	r->qnext = NULL;
	r->qprev = n->wait_tail;
	if (n->wait_tail)
		n->wait_tail->qnext = r;
	else
		n->wait_head = r;
	n->wait_tail = r;
	n->n_waiting++;
	n->waiting_tokens += r->num_tokens - r->num_computed;
}

static void wait_push_front(struct node *n, struct request *r)
{
	r->qprev = NULL;
	r->qnext = n->wait_head;
	if (n->wait_head)
		n->wait_head->qprev = r;
	else
		n->wait_tail = r;
	n->wait_head = r;
	n->n_waiting++;
	n->waiting_tokens += r->num_tokens - r->num_computed;
}

static void wait_pop_front(struct node *n)
{
	struct request *r = n->wait_head;
	n->wait_head = r->qnext;
	if (n->wait_head)
		n->wait_head->qprev = NULL;
	else
		n->wait_tail = NULL;
	n->n_waiting--;
	n->waiting_tokens -= r->num_tokens - r->num_computed;
	r->qnext = r->qprev = NULL;
}

void node_enqueue(struct node *n, struct request *r, int64_t now_ns)
{
	r->state = REQ_WAITING;
	r->node = n->id;
	r->enqueue_ns = now_ns;
	wait_push_back(n, r);
}

static void release_blocks(struct node *n, struct request *r)
{
	/* Reverse order: a sequence's tail becomes least recently used first,
	 * so eviction eats prefixes from the end and shared heads live longest. */
	for (uint32_t i = r->n_blocks; i-- > 0;) {
		if (i >= 8)
			kv_prefetch(&n->kv, r->blocks[i - 8]);
		kv_release(&n->kv, r->blocks[i]);
	}
	r->n_blocks = 0;
}

static int reserve_blocks(struct request *r, uint32_t want)
{
	if (want <= r->blocks_cap)
		return 0;
	uint32_t cap = r->blocks_cap ? r->blocks_cap : 16;
	while (cap < want)
		cap *= 2;
	uint32_t *nb = realloc(r->blocks, cap * sizeof *nb);
	if (!nb)
		return -1;
	r->blocks = nb;
	r->blocks_cap = cap;
	return 0;
}

/* Allocates blocks so that r holds ceil(tokens / B); 0 or -1 (no block). */
static int grow_to(struct node *n, struct request *r, uint32_t tokens)
{
	uint32_t want = node_blocks_for(n, tokens);
	if (want <= r->n_blocks)
		return 0;
	if (want - r->n_blocks > kv_available(&n->kv) || reserve_blocks(r, want))
		return -1;
	while (r->n_blocks < want)
		r->blocks[r->n_blocks++] = kv_alloc(&n->kv);
	return 0;
}

static void preempt(struct node *n, struct request *r)
{
	release_blocks(n, r);
	r->num_computed = 0;
	r->state = REQ_WAITING;
	r->preemptions++;
	n->preemptions++;
	wait_push_front(n, r);
}

/* The prompt split of DESIGN 6, fixed at the request's first admission:
 * blocks [0, hit) came from this node's cache (migrated if a transfer brought
 * them), the rest is computed here: recomputed if any node computed that
 * block before, fresh otherwise. The partial last block has no hash and is
 * fresh. A full hit still computes the last prompt token (cache capped). */
static void account_prompt(struct node *n, struct request *r, uint32_t hit_tokens)
{
	uint32_t B = n->block_tokens, P = r->prompt_tokens;
	uint32_t hit = hit_tokens < P ? hit_tokens : P;
	uint32_t hit_blocks = (hit + B - 1) / B;
	uint32_t mig_blocks = 0;
	for (uint32_t b = r->mig_lo; b < r->mig_hi && b < hit_blocks; b++)
		mig_blocks++;
	uint32_t mig = mig_blocks * B;
	if (mig > hit)
		mig = hit;
	r->migrated = mig;
	r->cached = hit - mig;
	r->recomputed = r->fresh = r->reloaded = 0;
	for (uint32_t t = hit; t < P;) {
		uint32_t b = t / B, end = (b + 1) * B;
		if (end > P)
			end = P;
		int full = (b + 1) * B <= P && b < r->n_hashes;
		if (full && n->hooks.computed_before(n->hooks.ctx, r, b))
			r->recomputed += end - t;
		else
			r->fresh += end - t;
		t = end;
	}
	r->accounted = 1;
}

int64_t node_start_step(struct node *n, int64_t now_ns)
{
	struct cost_batch cb;
	uint32_t budget = n->max_batched, B = n->block_tokens;
	int preempted = 0;
	cost_batch_clear(&cb);
	n->n_batch = 0;

	for (uint32_t i = 0; i < n->n_running && budget > 0; i++) {
		struct request *r = n->running[i];
		uint32_t want = r->num_tokens - r->num_computed;
		if (want > budget)
			want = budget;
		while (grow_to(n, r, r->num_computed + want) != 0) {
			struct request *victim = n->running[--n->n_running];
			preempt(n, victim);
			preempted = 1;
			if (victim == r)
				break;
		}
		if (i >= n->n_running) /* r preempted itself */
			break;
		n->batch[n->n_batch++] = (struct batch_entry){r, want};
		if (want == 1 && r->generated > 0 && r->num_computed + 1 == r->num_tokens)
			cost_add_decode(&cb, r->num_computed + want);
		else
			cost_add_prefill(&cb, want, r->num_computed);
		budget -= want;
	}

	while (!preempted && n->wait_head && n->n_running < n->max_seqs && budget > 0) {
		struct request *r = n->wait_head;
		uint32_t known = r->num_tokens / B, in_lru = 0, hit = 0;
		if (known > r->n_hashes)
			known = r->n_hashes;
		if (reserve_blocks(r, node_blocks_for(n, (uint64_t)r->prompt_tokens + r->output_tokens)))
			break; /* out of memory: try again next iteration */
		if (n->prefix_caching)
			hit = kv_match(&n->kv, r->hashes, known, &in_lru, r->blocks);
		uint32_t computed = hit * B;
		if (computed >= r->num_tokens)
			computed = r->num_tokens - 1; /* the last token is always computed */
		uint32_t want = r->num_tokens - computed;
		if (want > budget)
			want = budget;
		uint32_t total = node_blocks_for(n, (uint64_t)computed + want);
		if (total < hit)
			total = hit;
		if (total - hit > kv_available(&n->kv) - in_lru)
			break; /* FIFO: the head waits for memory, nobody overtakes it */
		wait_pop_front(n);
		for (uint32_t b = 0; b < hit; b++)
			kv_ref(&n->kv, r->blocks[b]);
		r->n_blocks = hit;
		int ok = grow_to(n, r, computed + want);
		assert(ok == 0);
		(void)ok;
		if (!r->accounted)
			account_prompt(n, r, computed);
		if (r->sched_ns < 0)
			r->sched_ns = now_ns;
		r->num_computed = computed;
		r->state = REQ_RUNNING;
		n->running[n->n_running++] = r;
		n->batch[n->n_batch++] = (struct batch_entry){r, want};
		cost_add_prefill(&cb, want, computed);
		budget -= want;
	}

	if (n->n_batch == 0) {
		n->busy = 0;
		return 0;
	}
	int64_t dur = cost_iteration_ns(n->cost, &cb);
	n->busy = 1;
	n->busy_ns += dur;
	n->iterations++;
	n->kv_used_block_ns += (double)n->kv.n_used * (double)dur;
	if (n->kv.n_used > n->peak_used)
		n->peak_used = n->kv.n_used;
	return dur;
}

void node_finish_step(struct node *n, int64_t now_ns)
{
	uint32_t B = n->block_tokens;
	n->n_done = 0;
	for (uint32_t i = 0; i < n->n_batch; i++) {
		struct request *r = n->batch[i].r;
		uint32_t old = r->num_computed;
		r->num_computed += n->batch[i].n;
		if (old < r->high_water) {
			uint32_t top = r->num_computed < r->high_water ? r->num_computed : r->high_water;
			r->preempt_recomputed += top - old;
		}
		if (r->num_computed > r->high_water)
			r->high_water = r->num_computed;
		uint32_t full = r->num_computed / B;
		if (full > r->n_hashes)
			full = r->n_hashes;
		for (uint32_t b = old / B; b < full; b++) {
			if (n->prefix_caching)
				kv_register(&n->kv, r->blocks[b], r->hashes[b]);
			n->hooks.on_block_computed(n->hooks.ctx, r, b);
		}
		if (r->num_computed < r->num_tokens)
			continue; /* a prefill chunk that did not reach the end */
		r->generated++;
		r->num_tokens++;
		if (r->generated == 1)
			r->first_token_ns = now_ns;
		if (r->generated >= r->output_tokens) {
			r->state = REQ_DONE;
			r->finish_ns = now_ns;
			release_blocks(n, r);
			n->done[n->n_done++] = r;
		}
	}
	if (n->n_done) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < n->n_running; i++)
			if (n->running[i]->state != REQ_DONE)
				n->running[k++] = n->running[i];
		n->n_running = k;
		n->completed += n->n_done;
	}
	n->n_batch = 0;
	n->busy = 0;
	for (uint32_t i = 0; i < n->n_done; i++)
		n->hooks.on_done(n->hooks.ctx, n->done[i], now_ns);
}
