/* node: scheduler, prefix-cached KV allocation and preemption of one replica. */
#include "model/node.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sim/request.h"

static void commit_held(struct node *n, struct request *r);

void node_release_blocks(struct node *n, struct request *r)
{
	commit_held(n, r);
	kv_release(&n->kv, r->kv_tail, r->n_own);
	r->kv_tail = KV_NONE;
	r->n_blocks = r->n_own = 0;
}

int __attribute__((noinline)) node_grow_blocks(struct node *n, struct request *r, uint32_t want)
{
	if (kv_take(&n->kv, want - r->n_blocks))
		return -1;
	r->n_own += want - r->n_blocks;
	r->n_blocks = want;
	return 0;
}

/* A prefill of `want` tokens after `computed` that may open the span after
 * its iteration (see fold_ok): it ends r's prompt and commits only blocks
 * past r's shared ones. */
static inline int prefill_folds(const struct node *n, const struct request *r, uint32_t computed,
				uint32_t want)
{
	return computed + want == r->num_tokens && node_full_blocks(n, computed) >= r->n_shared;
}


/* An iteration's cost-model time t on this node (a slow fault scales it). */
static int64_t scaled_ns(const struct node *n, int64_t t)
{
	if (n->time_scale != 1.0)
		t = (int64_t)llround((double)t * n->time_scale);
	return t > 0 ? t : 1;
}

/* Preempts r: recompute mode frees its blocks (the full ones stay cached)
 * and puts it back at the head of the queue to compute again; swap mode
 * hands it to the owner, which writes its KV to DRAM and returns it. */
static void preempt(struct node *n, struct request *r)
{
	node_release_blocks(n, r);
	r->preemptions++;
	n->preemptions++;
	req_episode_end(r);
	r->num_computed = 0;
	if (n->swap && n->hooks.on_swap_out) {
		r->state = REQ_TRANSFER;
		n->swapped[n->n_swapped++] = r;
		return;
	}
	r->state = REQ_WAITING;
	node_wait_push_front(n, r);
}

/* The prompt split of docs/design.md, section 6, fixed at the request's first admission:
 * blocks [0, hit) came from this node's cache (migrated if a transfer brought
 * them), the rest is computed here: recomputed if any node computed that
 * block before, fresh otherwise. The partial last block has no hash and is
 * fresh. A full hit still computes the last prompt token (cache capped). */
static void account_prompt(struct node *n, struct request *r, uint32_t hit_tokens)
{
	uint32_t B = n->block_tokens, P = r->prompt_tokens;
	uint32_t hit = hit_tokens < P ? hit_tokens : P;
	uint32_t hit_blocks = (hit + B - 1) / B;
	uint32_t mig_blocks = 0, rel_blocks = 0;
	for (uint32_t b = r->mig_lo; b < r->mig_hi && b < hit_blocks; b++)
		mig_blocks++;
	for (uint32_t b = r->rel_lo; b < r->rel_hi && b < hit_blocks; b++)
		rel_blocks++;
	uint32_t mig = mig_blocks * B, rel = rel_blocks * B;
	if (mig > hit)
		mig = hit;
	if (rel > hit - mig)
		rel = hit - mig;
	r->migrated = mig;
	r->reloaded = rel;
	r->cached = hit - mig - rel;
	r->recomputed = r->fresh = 0;
	uint32_t lo = UINT32_MAX, hi = 0;
	int unbroken = 1;
	/* Full blocks computed before anywhere are recomputed, in runs; the
	 * rest (and a partial last block) are fresh. */
	uint32_t full = P / B < r->n_hashes ? P / B : r->n_hashes;
	for (uint32_t t = hit; t < P;) {
		uint32_t b = t / B;
		uint32_t run = b < full ? n->hooks.computed_before(n->hooks.ctx, r, b, full) : 0;
		if (run > 0) {
			r->recomputed += (b + run) * B - t;
			if (unbroken) {
				lo = lo == UINT32_MAX ? b : lo;
				hi = b + run;
			}
			t = (b + run) * B;
		} else {
			uint32_t nb = b < full ? n->hooks.computed_never(n->hooks.ctx, r, b, full) : 1;
			uint32_t end = (b + nb) * B < P ? (b + nb) * B : P;
			r->fresh += end - t;
			unbroken = 0;
			t = end;
		}
	}
	r->before_lo = lo == UINT32_MAX ? 0 : lo;
	r->before_hi = hi;
	r->accounted = 1;
}


/* r's tail run becomes its session's hint: its index key as noted,
 * noted again if a split has moved the run's start since (a split keeps
 * the upper part under the id). */
static inline void hint_from_tail(const struct node *n, struct request *r)
{
	if (n->kv.runs[r->kv_tail].depth != r->kv_tail_depth)
		node_note_tail_key(n, r);
	r->kv_hint_key = r->kv_tail_key;
	r->kv_hint_depth = r->kv_tail_depth;
}

/* Deferred commits. A decode fills one block of each request every
 * block_tokens iterations; committing it (its hash appended to the
 * request's tail run, the block recorded as computed in the session's
 * frontier) reads the run, the request's hash and the session's record,
 * each a cache miss once a cluster's state outgrows the caches, and each
 * again at the next block. So a request whose tail run is its own (lock 1,
 * no children: the run is marked open) holds back the private blocks it
 * fills and commits them together when something could tell the
 * difference:
 * - its release (it ends, or is preempted): commit_held;
 * - a lookup that reaches an open run's end with hashes left to match,
 *   or a commit that would adopt all of one (the pool says so, and the
 *   node commits what all its requests hold back, then asks again):
 *   node_lookup (the owner's lookups, and an install's, go through it),
 *   node_commit_blocks;
 * - a crash, and a session with two requests at once (one would read the
 *   frontier the other moves; the owner then turns deferral off):
 *   node_commit_held.
 * Nothing else reads what a commit changes: the blocks move from the
 * request's own to a run it alone holds (blocks in use unchanged), which
 * eviction does not touch, and only their own session can name private
 * blocks. Results are those of committing each block when filled. */

/* kv_commit_blocks of r's blocks [next, full); a commit stopped at an open
 * run commits what the node's requests hold back, then goes on. */
void node_commit_blocks(struct node *n, struct request *r, uint32_t next, uint32_t full)
{
	uint32_t tail = r->kv_tail;
	for (;;) {
		uint32_t done =
		    kv_commit_blocks(&n->kv, &r->kv_tail, next, full, r->hashes, r->n_hashes);
		r->n_own -= done;
		next += done;
		if (!n->kv.open_hit || next >= full)
			break;
		n->kv.open_hit = 0;
		n->held_commits++;
		node_commit_held(n);
	}
	n->kv.open_hit = 0;
	if (r->kv_tail != tail)
		node_note_tail_key(n, r);
}

/* After r committed up to block full: its tail run is opened when r holds
 * it alone with nothing under it and it ends past r's shared blocks (no
 * other session can name its end). */
static inline void open_tail(struct node *n, struct request *r, uint32_t full)
{
	if (!n->defer_commits || r->kv_tail == KV_NONE || full <= r->n_shared)
		return;
	struct kv_run *t = &n->kv.runs[r->kv_tail];
	if (t->lock != 1 || t->n_children != 0 || t->depth + t->len != full)
		return;
	t->open = 1;
	r->open_from = REQ_TAIL_OPEN;
	n->n_open++;
}

/* Commits the blocks r holds back and shuts its tail run. */
static void commit_held(struct node *n, struct request *r)
{
	uint32_t from = r->open_from;
	if (from == REQ_TAIL_SHUT)
		return;
	r->open_from = REQ_TAIL_SHUT;
	n->kv.runs[r->kv_tail].open = 0;
	n->n_open--;
	if (from == REQ_TAIL_OPEN)
		return;
	uint32_t full = node_full_blocks(n, r->num_computed);
	if (full > r->n_hashes)
		full = r->n_hashes;
	uint32_t next = r->n_blocks - r->n_own;
	if (next < full) {
		n->held_blocks += full - next;
		node_commit_blocks(n, r, next, full);
	}
	if (from < full)
		n->hooks.on_blocks_computed(n->hooks.ctx, r, from, full);
}

void node_commit_held(struct node *n)
{
	for (uint32_t i = 0; n->n_open && i < n->n_running; i++)
		commit_held(n, n->running[i]);
}

void node_lookup(struct node *n, const uint64_t *hashes, uint32_t k, struct kv_match *m)
{
	kv_lookup_prefix(&n->kv, hashes, k, m);
	if (m->open) {
		n->held_lookups++;
		node_commit_held(n);
		kv_lookup_prefix(&n->kv, hashes, k, m);
	}
}

/* r computed tokens [old, r->num_computed): preemption accounting, and the
 * blocks this filled enter the cache, or are held back (deferred commits). */
static void __attribute__((noinline)) computed_blocks(struct node *n, struct request *r,
							uint32_t old)
{
	if (old < r->high_water) {
		uint32_t top = r->num_computed < r->high_water ? r->num_computed : r->high_water;
		r->preempt_recomputed += top - old;
	}
	if (r->num_computed > r->high_water)
		r->high_water = r->num_computed;
	uint32_t full = node_full_blocks(n, r->num_computed);
	if (full > r->n_hashes)
		full = r->n_hashes;
	uint32_t from = node_full_blocks(n, old);
	/* A block enters the cache when full, if the request's cached path
	 * reaches it (blocks before a hit's recomputed last token are cached
	 * already): block n_blocks - n_own is the next, and each commit moves
	 * that on by one. */
	uint32_t next = r->n_blocks - r->n_own;
	if (r->open_from != REQ_TAIL_SHUT) {
		/* held back: committing the whole range later is committing
		 * each part now (the same blocks in order; hooks take ranges) */
		if (r->open_from == REQ_TAIL_OPEN && from < full)
			r->open_from = from;
		return;
	}
	if (n->prefix_caching && next >= from && next < full) {
		node_commit_blocks(n, r, next, full);
		open_tail(n, r, full);
	}
	if (from < full)
		n->hooks.on_blocks_computed(n->hooks.ctx, r, from, full);
}

/* r->num_computed moved up from old: most moves (a decode token) fill no
 * block and recompute nothing, and are settled here. */
static inline void computed_upto(struct node *n, struct request *r, uint32_t old)
{
	if (old >= r->high_water &&
	    node_full_blocks(n, r->num_computed) == node_full_blocks(n, old)) {
		r->high_water = r->num_computed;
		return;
	}
	computed_blocks(n, r, old);
}

/* Applies a decode span's block allocations up to iteration `started` and
 * its iteration ends up to `ended` (both counts from the span's start). */
/* Inter-token gaps (hooks.on_gaps) of the tokens made at iteration j of
 * the step: r's previous token came at r->last_token_ns; requests whose
 * previous token came at the node's last step's end share one gap, counted
 * in *same and reported once (gaps_flush). */
static inline void gap_first(struct node *n, const struct request *r, int64_t at_ns,
			     uint64_t *same)
{
	if (!r->generated || !n->hooks.on_gaps)
		return;
	if (r->last_token_ns == n->prev_step_end_ns)
		(*same)++;
	else
		n->hooks.on_gaps(n->hooks.ctx, at_ns - r->last_token_ns, 1);
}

static inline void gaps_flush(struct node *n, int64_t at_ns, uint64_t same)
{
	if (same)
		n->hooks.on_gaps(n->hooks.ctx, at_ns - n->prev_step_end_ns, same);
}

/* The gaps of iterations [from, to) of a span, j >= 1: every request of
 * the batch makes a token at each, one iteration after its last. */
static void gaps_inner(struct node *n, uint32_t from, uint32_t to)
{
	if (!n->hooks.on_gaps || !n->n_batch)
		return;
	for (uint32_t j = from ? from : 1; j < to; j++)
		n->hooks.on_gaps(n->hooks.ctx, n->span_end[j] - n->span_end[j - 1], n->n_batch);
}

static void span_apply(struct node *n, uint32_t started, uint32_t ended)
{
	uint32_t add = ended - n->span_ended;
	uint64_t same = 0;
	int first = add && n->span_ended == 0; /* iteration 0's tokens are applied */
	/* each request's line is out of cache at 1,024 nodes: start them all */
	for (uint32_t i = 0; i < n->n_batch; i++)
		__builtin_prefetch(n->batch[i].r, 1);
	for (uint32_t i = 0; i < n->n_batch; i++) {
		struct request *r = n->batch[i].r;
		if (node_grow_to(n, r, n->batch[i].c0 + started)) {
			n->kv.oom = 1; /* room was checked when the span was planned */
			return;
		}
		if (add) {
			/* after `ended` iterations a request has computed c0 +
			 * ended tokens: a decode one per iteration, a folded
			 * prefill (c0 its last prompt position) its chunk in the
			 * first, which also gives its first token */
			uint32_t old = r->num_computed;
			r->num_computed = n->batch[i].c0 + ended;
			if (first)
				gap_first(n, r, n->span_end[0], &same);
			if (r->generated == 0)
				r->first_token_ns = n->span_end[0];
			r->last_token_ns = n->span_end[ended - 1];
			r->generated += add;
			r->num_tokens += add;
			computed_upto(n, r, old);
		}
	}
	if (add && n->hooks.on_gaps) {
		if (first)
			gaps_flush(n, n->span_end[0], same);
		gaps_inner(n, n->span_ended, ended);
	}
	n->span_started = started;
	n->span_ended = ended;
}

static void span_eval_to(struct node *n, uint32_t upto);

/* When node_sync next has work: the end of the span's first iteration
 * whose end is not applied yet, if that is not the span's last. */
static void set_sync_due(struct node *n)
{
	n->sync_due_ns = n->busy && n->span_ended + 1 < n->span_len ? n->span_end[n->span_ended]
								       : INT64_MAX;
}

/* The span's last iteration (counted from its start) whose end is at or
 * before now_ns, not past the span's second last: walked on from where the
 * span was applied, or from where node_kv_used last counted it in this
 * span (time only moves on, so that is not past now_ns's). */
uint32_t node_span_ended_by(const struct node *n, int64_t now_ns)
{
	uint32_t ended = n->span_ended;
	if (n->lazy_step_ns == n->step_start_ns && n->lazy_ended > ended)
		ended = n->lazy_ended;
	while (ended + 1 < n->span_len && n->span_end[ended] <= now_ns)
		ended++;
	return ended;
}

void node_sync(struct node *n, int64_t now_ns)
{
	if (now_ns < n->sync_due_ns)
		return;
	if (!n->busy || n->span_len <= 1) {
		set_sync_due(n);
		return;
	}
	node_span_eval_past(n, now_ns);
	/* Internal boundaries at or before now have passed (a boundary at the
	 * same time as the caller's event counts as first); the span's last
	 * end is its own event's. */
	uint32_t ended = node_span_ended_by(n, now_ns);
	if (ended != n->span_ended || ended + 1 != n->span_started)
		span_apply(n, ended + 1, ended);
	set_sync_due(n);
}

int node_enqueue(struct node *n, struct request *r, int64_t now_ns)
{
	r->state = REQ_WAITING;
	r->node = n->id;
	r->enqueue_ns = now_ns;
	r->admit_after_ns = 0;
	node_wait_push_back(n, r);
	if (!n->cost->async_cpu || !n->busy)
		return node_cut_span(n, now_ns); /* it joins after the iteration in progress */
	/* vLLM's asynchronous scheduling forms each step while the one before
	 * it runs (the scheduler runs one step ahead: vllm-project/vllm pull
	 * request 19970): the iteration after the one in progress is formed
	 * already, so the newcomer joins the one after that. */
	if (n->span_len > 1)
		node_sync(n, now_ns);
	uint32_t cur = n->span_started ? n->span_started - 1 : 0;
	r->admit_after_ns = n->span_end[cur];
	uint32_t keep = n->span_started + 1;
	if (keep >= n->span_len)
		return 0;
	span_eval_to(n, keep);
	n->span_len = keep;
	if (n->span_eval > n->span_len)
		n->span_eval = n->span_len;
	n->step_end_ns = n->span_end[n->span_len - 1];
	return 1;
}

int node_cut_span(struct node *n, int64_t now_ns)
{
	if (!n->busy || n->span_len <= 1)
		return 0;
	node_sync(n, now_ns);
	if (n->span_len == n->span_started)
		return 0;
	n->span_len = n->span_started;
	if (n->span_eval > n->span_len)
		n->span_eval = n->span_len;
	n->step_end_ns = n->span_end[n->span_len - 1];
	return 1;
}

/* Iteration ends of a decode span are computed as far as they are needed:
 * the first SPAN_FIRST_CHUNK at planning, then doubling each time the step
 * event reaches the end of what is known or an observer looks past it. An
 * arrival cuts most spans early, so the iterations after the cut are never
 * evaluated; the ends themselves are those of evaluating the whole span. */
#define SPAN_FIRST_CHUNK 16

static void span_eval_to(struct node *n, uint32_t upto)
{
	if (upto > n->span_len)
		upto = n->span_len;
	if (upto <= n->span_eval)
		return;
	/* durations into span_end[j], then their running sum */
	int64_t *end = n->span_end;
	cost_span_ns(n->cost, &n->span_cb, n->span_eval - n->span_off, upto - n->span_off,
		     &n->span_grid, end + n->span_eval);
	if (n->time_scale == 1.0) { /* scaled_ns is the identity: durations are >= 1 */
		int64_t t = end[n->span_eval - 1];
		for (uint32_t j = n->span_eval; j < upto; j++)
			end[j] = t += end[j];
	} else {
		for (uint32_t j = n->span_eval; j < upto; j++)
			end[j] = end[j - 1] + scaled_ns(n, end[j]);
	}
	n->span_eval = upto;
	n->step_end_ns = n->span_end[n->span_eval - 1];
}

/* Evaluates the span past now (or to its end). */
void node_span_eval_past(struct node *n, int64_t now_ns)
{
	while (n->span_eval < n->span_len && n->span_end[n->span_eval - 1] <= now_ns)
		span_eval_to(n, 2 * n->span_eval);
}

int node_span_continues(struct node *n, int64_t now_ns)
{
	if (!n->busy)
		return 0;
	node_span_eval_past(n, now_ns);
	return n->step_end_ns != now_ns;
}

/* How long a decode span of the current batch can be: no request may
 * finish before its last iteration, and its block allocations must fit
 * without preemption. The batch is all decodes, or (fold) its prefills all
 * end their prompts in this iteration, so that every request decodes from
 * the next one on: the span's first iteration is then this mixed one, and
 * each prefill's c0 becomes its last prompt position (c0 + n - 1), so that
 * after j iterations every request has computed c0 + j tokens and holds
 * the blocks for c0 + j + 1 (j >= 1), like a decode. Fills span_end (as far
 * as its first chunk). */
static void plan_span(struct node *n, const struct cost_batch *cb0, int fold,
		      const struct request *head, uint32_t head_known)
{
	uint32_t k = n->max_span;
	for (uint32_t i = 0; i < n->n_batch; i++) {
		const struct request *r = n->batch[i].r;
		uint32_t left = r->output_tokens - r->generated;
		if (left < k)
			k = left;
	}
	/* A queue head that waits for memory (head_known of its blocks
	 * hashed) waits all span long: nothing is released inside a span, a
	 * block taken only lowers what is free, and one evicted from the head's
	 * cached prefix costs it as much as it frees. Only a block the span
	 * commits into the head's prompt (the same hash at the same place)
	 * could let it in earlier: then no span. */
	for (uint32_t i = 0; head && k > 1 && i < n->n_batch; i++) {
		const struct request *r = n->batch[i].r;
		uint32_t c0 = n->batch[i].c0, n0 = n->batch[i].n;
		uint32_t hi = node_full_blocks(n, (uint64_t)c0 + n0 - 1 + k);
		if (hi > r->n_hashes)
			hi = r->n_hashes;
		if (hi > head_known)
			hi = head_known;
		for (uint32_t b = node_full_blocks(n, c0); b < hi; b++)
			if (r->hashes[b] == head->hashes[b])
				return;
	}
	while (k > 1) {
		uint64_t need = 0;
		for (uint32_t i = 0; i < n->n_batch; i++) {
			uint64_t c = (uint64_t)n->batch[i].c0 + n->batch[i].n - 1;
			need += node_blocks_for(n, c + k) - node_blocks_for(n, c + 1);
		}
		if (need <= kv_available(&n->kv))
			break;
		k /= 2;
	}
	if (k <= 1)
		return;
	/* The span's KV use can be counted without applying it (node_kv_used)
	 * when applying it late changes nothing another node could see
	 * meanwhile, or the count: no tier hears its evictions, it commits
	 * no block other sessions can name (those enter the cluster-wide
	 * "computed before" set), and each request appends its blocks to a
	 * cached run it holds alone with nothing under it (no adoption of a
	 * block cached meanwhile, which would free one). A prefill that would
	 * keep an all-decode span from being counted (its tail run not its
	 * own yet) is not folded where the owner counts per request (lazy_kv
	 * 1): the next iteration's span, once it has committed, can be. */
	int lazy = n->lazy_kv && !n->kv.on_evict, lazy_fold = lazy;
	for (uint32_t i = 0; lazy && i < n->n_batch; i++) {
		const struct batch_entry *e = &n->batch[i];
		const struct request *r = e->r;
		int ok = node_full_blocks(n, e->c0) >= r->n_shared &&
			 (!n->prefix_caching || r->open_from != REQ_TAIL_SHUT ||
			  (r->kv_tail != KV_NONE && n->kv.runs[r->kv_tail].lock == 1 &&
			   n->kv.runs[r->kv_tail].n_children == 0));
		if (fold && node_entry_prefills(e))
			lazy_fold &= ok;
		else
			lazy &= ok;
	}
	if (lazy && !lazy_fold && n->lazy_kv == 1)
		return;
	if (fold)
		for (uint32_t i = 0; i < n->n_batch; i++)
			n->batch[i].c0 += n->batch[i].n - 1;
	n->span_lazy_ok = lazy && lazy_fold;
	if (lazy && n->span_res) {
		uint32_t B = n->block_tokens, *g = n->span_res;
		memset(g, 0, (B + 1) * sizeof *g);
		for (uint32_t i = 0; i < n->n_batch; i++)
			g[n->batch[i].c0 & (B - 1)]++;
		for (uint32_t x = B; x-- > 0;)
			g[x] += g[x + 1];
	}
	n->span_cb = *cb0;
	if (fold) {
		/* the decodes from the second iteration on: iteration j >= 1 is
		 * the span's cost batch grown by j - 1 decodes' worth */
		cost_batch_clear(&n->span_cb);
		for (uint32_t i = 0; i < n->n_batch; i++)
			cost_add_decode(&n->span_cb, (double)n->batch[i].c0 + 2);
		(void)cost_iteration_ns_x(n->cost, &n->span_cb, &n->span_x0);
	}
	n->span_work_base_ns = cost_work_base_ns(n->cost, &n->span_cb);
	n->span_off = fold ? 1 : 0;
	n->span_grid.grid[0] = n->span_x0.x; /* iteration span_off's */
	n->span_grid.n_grid = 1;
	n->span_grid.slope0 = n->span_x0.slope;
	n->span_grid.G = cost_span_grid(&n->span_x0);
	n->span_len = k;
	span_eval_to(n, k < SPAN_FIRST_CHUNK ? k : SPAN_FIRST_CHUNK);
}

/* Hands requests preempted in swap mode to the owner, once the step's
 * state is consistent. */
static void swap_out(struct node *n, int64_t now_ns)
{
	/* A hook may start the node's next step at once (a request with no
	 * full block to write back is queued again straight away), which
	 * swaps out again: each leaves the list before its hook runs. */
	while (n->n_swapped) {
		struct request *r = n->swapped[0];
		n->n_swapped--;
		memmove(n->swapped, n->swapped + 1, n->n_swapped * sizeof *n->swapped);
		n->hooks.on_swap_out(n->hooks.ctx, r, now_ns);
	}
}

/* Admits waiting r, whose KV came with it (node_reserve, taken off the
 * queue): it computes its last prompt token, whose output is its first
 * token. */
static void admit_held(struct node *n, struct request *r, struct cost_batch *cb,
		       uint32_t *budget, int *fold)
{
	uint32_t want = r->num_tokens - r->num_computed;
	if (want > *budget)
		want = *budget;
	r->ep_start = r->num_computed;
	r->ep_hw = r->high_water;
	r->ep_open = 1;
	r->state = REQ_RUNNING;
	n->running[n->n_running++] = r;
	n->batch[n->n_batch++] = (struct batch_entry){r, want, r->num_computed};
	cost_add_prefill(cb, want, r->num_computed);
	if (!prefill_folds(n, r, r->num_computed, want))
		*fold = 0;
	*budget -= want;
}

/* The batch a step is forming (node_start_step's state, shared by the
 * helpers below, which it calls once each: the compiler inlines them). */
struct step_form {
	struct cost_batch cb;
	uint32_t budget; /* tokens the batch may still take */
	int preempted, all_decode;
	/* every prefill in the batch ends its prompt in this iteration and
	 * commits only blocks past its shared ones (see fold_ok) */
	int fold;
	const struct request *waits; /* the queue head, kept out by memory */
	uint32_t waits_known;
};

/* The running requests first, each its next tokens; a request that finds
 * no memory preempts from the back (itself last). */
static inline void step_running(struct node *n, struct step_form *f)
{
	for (uint32_t i = 0; i < n->n_running && f->budget > 0; i++) {
		if (i + 4 < n->n_running)
			__builtin_prefetch(n->running[i + 4], 1);
		struct request *r = n->running[i];
		uint32_t want = r->num_tokens - r->num_computed;
		if (want > f->budget)
			want = f->budget;
		while (node_grow_to(n, r, r->num_computed + want) != 0) {
			struct request *victim = n->running[--n->n_running];
			preempt(n, victim);
			f->preempted = 1;
			if (victim == r)
				break;
		}
		if (i >= n->n_running) /* r preempted itself */
			break;
		n->batch[n->n_batch++] = (struct batch_entry){r, want, r->num_computed};
		if (want == 1 && r->generated > 0 && r->num_computed + 1 == r->num_tokens) {
			cost_add_decode(&f->cb, r->num_computed + want);
		} else {
			cost_add_prefill(&f->cb, want, r->num_computed);
			f->all_decode = 0;
			if (!prefill_folds(n, r, r->num_computed, want))
				f->fold = 0;
		}
		f->budget -= want;
	}
}

/* Counts whether r's routing hint named the run its lookup found m. */
static inline void step_count_hint(struct node *n, const struct request *r,
				   const struct kv_match *m)
{
	n->hints++;
	n->hints_right += m->run == r->kv_hint;
	/* the key carried for the index probe's prefetch, where the run
	 * still begins as it did (the hash read here is the lookup's probe:
	 * in cache) */
	if (m->run == r->kv_hint && n->kv.runs[m->run].depth == r->kv_hint_depth) {
		n->hint_keys_current++;
		n->hint_keys_right += r->kv_hint_key == r->hashes[r->kv_hint_depth];
	}
}

/* Admits the queue head while it fits, in order: its cached prefix
 * acquired, its first tokens in the batch. A head kept out by memory is
 * f->waits (FIFO: nobody overtakes it). */
static inline void step_admit_queue(struct node *n, struct step_form *f, int64_t now_ns)
{
	uint32_t B = n->block_tokens;
	while (!f->preempted && !n->hold_admissions && n->wait_head &&
	       n->n_running < n->max_seqs && f->budget > 0) {
		struct request *r = n->wait_head;
		/* formed while the step before ran, this step has not seen it
		 * (node_enqueue), unless nothing else would run: an engine with
		 * no step in flight schedules at once */
		if (r->admit_after_ns >= now_ns && (n->n_running > 0 || n->n_batch > 0))
			break;
		if (r->n_blocks) {
			node_wait_pop_front(n);
			admit_held(n, r, &f->cb, &f->budget, &f->fold);
			f->all_decode = 0;
			continue;
		}
		struct kv_match m;
		uint32_t known = node_lookup_tokens(n, r, r->num_tokens, &m);
		if (r->kv_hint != KV_NONE)
			step_count_hint(n, r, &m);
		uint32_t hit = m.blocks, computed = hit * B;
		if (computed >= r->num_tokens)
			computed = r->num_tokens - 1; /* the last token is always computed */
		uint32_t want = r->num_tokens - computed;
		if (want > f->budget)
			want = f->budget;
		uint32_t total = node_blocks_for(n, (uint64_t)computed + want);
		if (total < hit)
			total = hit;
		if (total - hit > kv_available(&n->kv) - m.unlocked) {
			f->waits = r; /* FIFO: the head waits for memory, nobody overtakes it */
			f->waits_known = known;
			break;
		}
		node_wait_pop_front(n);
		r->kv_tail = kv_acquire(&n->kv, &m);
		if (r->kv_tail != KV_NONE)
			node_note_tail_key(n, r);
		r->n_blocks = hit;
		r->n_own = 0;
		if (node_grow_to(n, r, computed + want))
			n->kv.oom = 1; /* room was checked above: only after an OOM */
		if (!r->accounted)
			account_prompt(n, r, computed);
		if (r->sched_ns < 0)
			r->sched_ns = now_ns;
		r->num_computed = computed;
		r->ep_start = computed;
		r->ep_hw = r->high_water;
		r->ep_open = 1;
		r->state = REQ_RUNNING;
		n->running[n->n_running++] = r;
		n->batch[n->n_batch++] = (struct batch_entry){r, want, computed};
		cost_add_prefill(&f->cb, want, computed);
		f->all_decode = 0;
		if (!prefill_folds(n, r, computed, want))
			f->fold = 0;
		f->budget -= want;
	}
}

/* Hand-overs behind a head that waits for memory, or while swapped out
 * requests wait to come back first, need a batch slot only, their KV
 * being here: they go ahead. Kept back they would hold memory the others
 * wait for, and a decode node whose queue held only them behind a
 * preempted request (or a request prefilled there) would stop for good
 * (our choice; vLLM's scheduler likewise lets requests pass one whose KV
 * is still on its way). Returns 1 when one was left for want of budget
 * (it may enter next iteration). */
static inline int step_admit_held(struct node *n, struct step_form *f)
{
	struct request *from = !n->n_held || f->preempted ? NULL
			       : f->waits		  ? f->waits->qnext
			       : n->hold_admissions	  ? n->wait_head
							  : NULL;
	for (struct request *r = from, *next; r && n->n_running < n->max_seqs; r = next) {
		next = r->qnext;
		if (!r->n_blocks)
			continue;
		if (f->budget == 0)
			return 1;
		node_wait_remove(n, r);
		admit_held(n, r, &f->cb, &f->budget, &f->fold);
		f->all_decode = 0;
	}
	return 0;
}

/* The step's first iteration timed, and a span of decode iterations
 * planned after it when nothing can change the batch meanwhile. */
static inline void step_begin(struct node *n, struct step_form *f, int held_left, int64_t now_ns)
{
	n->busy = 1;
	n->step_start_ns = now_ns;
	n->span_len = n->span_eval = 1;
	n->span_off = 0;
	n->span_started = 1;
	n->span_ended = 0;
	n->span_end[0] = now_ns + scaled_ns(n, cost_iteration_ns_x(n->cost, &f->cb, &n->span_x0));
	n->work0_ns = cost_work_ns(n->cost, &f->cb);
	n->span_used[0] = n->kv.n_used;
	n->span_used_ok = 0;
	n->step_end_ns = n->span_end[0];
	/* A span needs the queue to stay as it is: empty, or its head kept
	 * out by memory or by the batch being full (a span changes neither). */
	int queue_still =
	    !n->wait_head ||
	    (!n->hold_admissions && (f->waits || n->n_running >= n->max_seqs || f->budget == 0));
	/* Folding a prefill iteration into the span after it also needs the
	 * next iteration's batch to be this one: every running request in it,
	 * and no budget freed by the prefills letting the queue head in. */
	int fold = f->fold && !f->all_decode && n->n_batch == n->n_running &&
		   (!n->wait_head || (!n->hold_admissions && (f->waits || n->n_running >= n->max_seqs)));
	if ((f->all_decode || fold) && !f->preempted && queue_still && !held_left && n->max_span > 1)
		plan_span(n, &f->cb, fold, f->waits, f->waits_known);
}

int64_t node_start_step(struct node *n, int64_t now_ns)
{
	struct step_form f = {.budget = n->max_batched, .all_decode = 1, .fold = n->fold_ok};
	cost_batch_clear(&f.cb);
	n->n_batch = 0;
	/* the queue head's admission lookup ahead: its likely run's cache
	 * misses overlap the batch's forming (prefetches: nothing changes) */
	if (n->wait_head && n->wait_head->kv_hint != KV_NONE && n->prefix_caching)
		kv_prefetch_run(&n->kv, n->wait_head->kv_hint, n->wait_head->kv_hint_key,
				n->wait_head->kv_hint_depth, n->wait_head->hashes,
				n->wait_head->n_hashes);
	step_running(n, &f);
	/* A step that preempted admits nobody (vLLM's scheduler), unless it
	 * preempted every running request: the engine would schedule again
	 * at once, and an idle node here has no step end to try again at (a
	 * decode node whose waiting hand-overs hold the memory would stop). */
	if (f.preempted && n->n_running == 0)
		f.preempted = 0;
	step_admit_queue(n, &f, now_ns);
	int held_left = step_admit_held(n, &f);
	if (n->n_batch == 0) {
		n->busy = 0;
		n->sync_due_ns = INT64_MAX;
		swap_out(n, now_ns);
		return 0;
	}
	step_begin(n, &f, held_left, now_ns);
	set_sync_due(n);
	swap_out(n, now_ns);
	return n->step_end_ns - now_ns;
}

void node_span_used(struct node *n)
{
	if (n->span_used_ok)
		return;
	n->span_used_ok = 1;
	/* a request takes a new block at iteration j when the token it
	 * writes, c0 + j, starts one */
	uint32_t B = n->block_tokens, k = n->span_len;
	for (uint32_t j = 1; j < k; j++)
		n->span_used[j] = 0;
	for (uint32_t i = 0; i < n->n_batch; i++) {
		/* the first j > 0 with c0 + j a multiple of B */
		uint32_t c0 = n->batch[i].c0, j = (node_full_blocks(n, c0) + 1) * B - c0;
		for (; j < k; j += B)
			n->span_used[j]++;
	}
	for (uint32_t j = 1; j < k; j++)
		n->span_used[j] += n->span_used[j - 1];
}

/* Statistics of the step's iterations 0..last (ended): the used-block
 * integral term by term, in order (a double sum); busy time telescopes;
 * blocks in use only grow along a span, so its last iteration's are its
 * peak. */
void node_step_stats(struct node *n, uint32_t last)
{
	int64_t start = n->step_start_ns;
	double kv = n->kv_used_block_ns;
	uint32_t used = n->span_used[0], B = n->block_tokens;
	/* Utilisation: each iteration's work (node_iteration_work_ns), capped
	 * at its time. */
	double t = (double)(n->span_end[0] - start), w = n->work0_ns;
	double util = n->util_ns + (w < t ? w : t);
	const struct cost_batch *sb = &n->span_cb;
	double base = n->span_work_base_ns, dec = sb->decodes;
	uint32_t off = n->span_off;
	if (!n->span_used_ok && n->block_shift && B <= 64) {
		/* span_used on the fly: iteration j takes one block for each
		 * request with c0 + j a multiple of B, i.e. c0 = -j (mod B) */
		uint32_t starts[64];
		memset(starts, 0, B * sizeof *starts);
		for (uint32_t i = 0; i < n->n_batch; i++)
			starts[n->batch[i].c0 & (B - 1)]++;
		kv += (double)used * t;
		/* iteration j's growth (j - off) x decodes, by exact integer steps */
		double d = -(double)off * dec;
		for (uint32_t j = 1; j <= last; j++) {
			used += starts[(0 - j) & (B - 1)];
			t = (double)(n->span_end[j] - n->span_end[j - 1]);
			kv += (double)used * t;
			d += dec;
			w = cost_work_plus_ns(n->cost, sb, base, d);
			util += w < t ? w : t;
		}
	} else {
		node_span_used(n);
		for (uint32_t j = 0; j <= last; j++) {
			t = (double)(n->span_end[j] - start);
			kv += (double)n->span_used[j] * t;
			start = n->span_end[j];
			if (j > 0) {
				w = cost_work_at_ns(n->cost, sb, base, (double)(j - off));
				util += w < t ? w : t;
			}
		}
		used = n->span_used[last];
	}
	n->kv_used_block_ns = kv;
	n->util_ns = util;
	n->busy_ns += n->span_end[last] - n->step_start_ns;
	if (used > n->peak_used)
		n->peak_used = used;
	n->iterations += last + 1;
}

void node_finish_step(struct node *n, int64_t now_ns)
{
	/* Statistics of the iterations that ran, then the span's inner
	 * iterations, then the last iteration's end like any step's. */
	assert(n->span_eval == n->span_len && now_ns == n->span_end[n->span_len - 1]);
	node_step_stats(n, n->span_len - 1);
	if (n->span_len > 1) {
		span_apply(n, n->span_len, n->span_len - 1);
		for (uint32_t i = 0; i < n->n_batch; i++)
			n->batch[i].n = 1;
	}
	n->n_done = 0;
	/* the last iteration's tokens: after a span's others, one each with
	 * the gap since the iteration before (gaps_inner) */
	uint32_t last = n->span_len - 1;
	uint64_t same = 0;
	if (last)
		gaps_inner(n, last, last + 1);
	for (uint32_t i = 0; i < n->n_batch; i++) {
		if (i + 4 < n->n_batch)
			__builtin_prefetch(n->batch[i + 4].r, 1);
		struct request *r = n->batch[i].r;
		uint32_t old = r->num_computed;
		r->num_computed += n->batch[i].n;
		computed_upto(n, r, old);
		if (r->num_computed < r->num_tokens)
			continue; /* a prefill chunk that did not reach the end */
		if (!last)
			gap_first(n, r, now_ns, &same);
		r->last_token_ns = now_ns;
		r->generated++;
		r->num_tokens++;
		if (r->generated == 1)
			r->first_token_ns = now_ns;
		if (r->generated >= r->output_tokens) {
			r->state = REQ_DONE;
			r->finish_ns = now_ns;
			req_episode_end(r);
			commit_held(n, r);
			r->kv_hint = r->kv_tail; /* where its session's next turn looks */
			if (r->kv_tail != KV_NONE)
				hint_from_tail(n, r);
			if (r->pd == PD_PREFILL) {
				/* its KV stays held until it has left for the
				 * decode node (node_release_held) */
				r->pd_src_tail = r->kv_tail;
				r->pd_src_own = r->n_own;
				r->kv_tail = KV_NONE;
				r->n_blocks = r->n_own = 0;
			} else {
				node_release_blocks(n, r);
			}
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
	if (n->hooks.on_gaps)
		gaps_flush(n, now_ns, same);
	n->prev_step_end_ns = now_ns;
	n->n_batch = 0;
	n->busy = 0;
	n->span_len = n->span_eval = 0;
	n->sync_due_ns = INT64_MAX;
	for (uint32_t i = 0; i < n->n_done; i++)
		n->hooks.on_done(n->hooks.ctx, n->done[i], now_ns);
}
