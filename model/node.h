/* node: one model replica's engine: continuous batching over a paged KV cache. */
#ifndef KVSIM_NODE_H
#define KVSIM_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "model/cost.h"
#include "model/kv.h"
#include "sim/request.h"

struct engine_cfg;

/* What the engine tells its owner. All are called outside the engine's own
 * data-structure updates, so they may enqueue to any node. */
struct node_hooks {
	void *ctx;
	/* A request finished (all output tokens emitted). */
	void (*on_done)(void *ctx, struct request *r, int64_t now_ns);
	/* Blocks [from, to) of r were computed (their KV now exists on this
	 * node), in order. */
	void (*on_blocks_computed)(void *ctx, struct request *r, uint32_t from, uint32_t to);
	/* How many of r's blocks idx, idx + 1, ... (before end) some node has
	 * computed before, counted up to the first that none has. */
	uint32_t (*computed_before)(void *ctx, const struct request *r, uint32_t idx, uint32_t end);
	/* How many of r's blocks idx, idx + 1, ... (before end) no node has
	 * computed before, counted up to the first that one has. */
	uint32_t (*computed_never)(void *ctx, const struct request *r, uint32_t idx, uint32_t end);
	/* r was preempted in swap mode: it is out of the node (not in any
	 * queue, no blocks held, num_computed kept at what it had computed);
	 * the owner writes its KV down and brings it back later. */
	void (*on_swap_out)(void *ctx, struct request *r, int64_t now_ns);
	/* count output tokens each came gap_ns after its request's previous
	 * one (inter-token latency); NULL: not wanted. Called per iteration
	 * for the tokens of a shared gap, and per request otherwise. */
	void (*on_gaps)(void *ctx, int64_t gap_ns, uint64_t count);
};

struct batch_entry {
	struct request *r;
	uint32_t n;  /* tokens computed for r in this iteration */
	uint32_t c0; /* r->num_computed when the step began */
};

struct node {
	/* What an observer of every node reads per request (node_sync's early
	 * return, the router's view of queue and KV use) comes first: one
	 * cache line, as nodes are 64-byte aligned (the simulator allocates
	 * them so). */
	/* node_sync has nothing to do before this time (the next internal
	 * iteration end of a decode span not yet applied; INT64_MAX when
	 * there is none), so observers of many nodes skip the span's arrays. */
	_Alignas(64) int64_t sync_due_ns;
	uint32_t n_waiting;
	uint32_t n_running;
	uint32_t n_held; /* waiting hand-overs whose KV is here (node_reserve) */
	uint64_t waiting_tokens; /* tokens still to prefill over the waiting queue */
	struct kv_pool kv;       /* its counters first */
	int id, server;
	/* What node_kv_used reads when it counted already and no iteration
	 * ended since (observers of every node ask it per request): one cache
	 * line. busy: an iteration is in progress. */
	_Alignas(64) int busy;
	/* Set by the owner when it reads nodes' KV use inside decode spans
	 * without applying them (node_kv_used): 1 per request (a span that
	 * could not be counted is not opened by a fold), 2 now and then (it
	 * is, and applied when read); span_lazy_ok: this span's plan allows
	 * counting (see plan_span). */
	int lazy_kv, span_lazy_ok;
	/* node_kv_used's last count: lazy_used blocks until lazy_due_ns, for
	 * the step that started at lazy_step_ns, applied to span_started
	 * lazy_from with lazy_base blocks in use then */
	uint32_t lazy_from, lazy_base, lazy_used;
	int64_t lazy_step_ns, lazy_due_ns;
	int64_t step_start_ns; /* the step in progress began (see span_end below) */
	/* The decode span (see below): its iterations, how many are started
	 * and ended as far as the requests know */
	uint32_t span_len, span_started, span_ended;
	uint32_t lazy_ended; /* the iteration it counted up to (node_sync walks on from it) */
	const struct cost_model *cost;
	struct node_hooks hooks;
	uint32_t block_tokens, max_seqs, max_batched;
	uint32_t block_shift; /* log2(block_tokens) when a power of two, else 0 */
	int prefix_caching;
	/* Set by the owner while no session has two requests at once: a
	 * request whose tail run is its own (open) holds back the commits of
	 * the private blocks it fills (request.open_from), and commits them
	 * together when anything could tell the difference (node.c, deferred
	 * commits). n_open: running requests with an open tail run. */
	int defer_commits;
	uint32_t n_open;
	/* blocks committed after being held back; lookups and commits that
	 * met an open run and had them committed first */
	uint64_t held_blocks, held_lookups, held_commits;
	/* Iteration time multiplier: 1, or more while slowed down (a straggler
	 * fault, thermal throttling); read when an iteration is planned. */
	double time_scale;
	/* Preemption "swap": a preempted request leaves the node through
	 * hooks.on_swap_out instead of waiting to be recomputed. */
	int swap;
	struct request **swapped; /* preempted in swap mode during a step start */
	int hold_admissions; /* set by the owner while swapped requests wait to return */
	/* Set by the owner when an iteration whose prefills all end their
	 * prompts may open a decode span (its first iteration; see plan_span):
	 * only when nothing outside the node reads what that iteration's end
	 * changes before node_sync: its prefills commit only blocks past their
	 * shared ones (node_start_step checks), which no other session can
	 * name, and no session has two requests at once (one would read the
	 * session's "computed before" frontier the other moves). */
	int fold_ok;
	/* With block_tokens B a power of two, for a span with span_lazy_ok:
	 * span_res[x] = the batch's requests with c0 mod B >= x (x <= B), so
	 * node_kv_used counts the blocks a span takes in O(1), not per request
	 * (NULL otherwise: it counts them one request at a time). */
	uint32_t *span_res;
	uint32_t n_swapped;
	/* waiting queue (FIFO; preempted requests go back to the front) */
	struct request *wait_head, *wait_tail; /* n_waiting, waiting_tokens above */
	/* running requests in admission order; the last is preempted first */
	struct request **running; /* n_running above */
	uint32_t running_cap;
	struct batch_entry *batch;
	uint32_t n_batch;
	/* A step is one iteration, or a decode span: when every scheduled
	 * request is decoding and no waiting request could be admitted before
	 * it ends (see plan_span), up to max_span iterations of
	 * the same batch run as one event. Iteration j ends at span_end[j] and
	 * holds span_used[j] blocks (span_used[0] at the start; the rest only
	 * when node_span_used fills them, for a trace); allocations of the
	 * first span_started iterations and the ends of the first span_ended
	 * are applied to the requests so far (node_sync applies more; an
	 * arrival cuts the span at the iteration in progress). Results are
	 * those of one event per iteration; only the event count differs.
	 * (span_len, span_started and span_ended are above, with what
	 * node_kv_used reads.) */
	uint32_t max_span;
	int64_t prev_step_end_ns; /* the last step's last iteration ended (0: none yet) */
	int64_t step_end_ns;
	/* Ends of the first span_eval iterations are known (the rest are
	 * computed when needed); the step event is at step_end_ns, the last
	 * known end, which is the span's end once span_eval == span_len. */
	uint32_t span_eval;
	/* 1 when iteration 0 is a folded prefill iteration: span_cb, span_x0
	 * and span_grid then describe the decodes from iteration 1 on */
	uint32_t span_off;
	struct cost_batch span_cb; /* the span's first iteration */
	struct cost_x span_x0;     /* its unrounded ns, slope and curvature */
	/* The power model's work (cost_work_ns) of the step's iteration 0,
	 * and in a decode span cost_work_base_ns of span_cb
	 * (node_iteration_work_ns). */
	double work0_ns, span_work_base_ns;
	/* The span's cost_span_ns evaluations; their grid has room for
	 * max_span / COST_SPAN_GRID_MIN + 3 values. */
	struct cost_span span_grid;
	int64_t *span_end;
	uint32_t *span_used;
	int span_used_ok; /* span_used is filled up to span_len */
	struct request **done; /* finished in the last iteration */
	uint32_t n_done;
	/* statistics */
	int64_t busy_ns;
	double kv_used_block_ns; /* integral of used blocks over busy time */
	/* integral of the iterations' utilisation over busy time (ns): each
	 * iteration's min(work, time), the power model's dynamic part */
	double util_ns;
	uint32_t peak_used;
	uint64_t iterations, preemptions, completed;
	/* admissions with a prefetch hint (node_hint_admission), those whose
	 * lookup ended in the hinted run, and of those the ones whose run
	 * still began where the hint's key was noted, and of these the ones
	 * whose key was that run's */
	uint64_t hints, hints_right, hint_keys_current, hint_keys_right;
};

/* node_kv_used's fast path reads one line of the node (besides the first) */
_Static_assert(offsetof(struct node, lazy_ended) + sizeof(uint32_t) - offsetof(struct node, busy) <=
		       64,
	       "struct node: node_kv_used's fields outgrew one cache line");

/* Returns 0, or -1 when memory runs out. Caller frees with node_free. */
int node_init(struct node *n, int id, int server, uint32_t kv_blocks, const struct engine_cfg *ec,
	      const struct cost_model *cost, const struct node_hooks *hooks);
/* Iterations a decode span may cover (1: one event per iteration). */

/* Evaluates the decode span's iteration ends past now_ns (or to its end). */
void node_span_eval_past(struct node *n, int64_t now_ns);
/* The span's last iteration (counted from its start) whose end is at or
 * before now_ns, not past its second last (its ends evaluated past now). */
uint32_t node_span_ended_by(const struct node *n, int64_t now_ns);

void node_free(struct node *n);
/* Appends r to the waiting queue (state REQ_WAITING). Returns 1 when this
 * cut a decode span short, so the step now ends earlier, at step_end_ns. */
int node_enqueue(struct node *n, struct request *r, int64_t now_ns);
/* Ends a decode span after the iteration in progress (its KV changes from
 * outside, which the span's plan did not foresee). Returns 1 if the step
 * now ends earlier, at step_end_ns. */
int node_cut_span(struct node *n, int64_t now_ns);
/* Before node_enqueue: r's admission lookup here will likely reach run
 * `run` (its session's tail when its turn before ended here), whose index
 * key (first hash) was `key` when it began at `depth`: kept in r->kv_hint
 * and beside it, and the run's fields are fetched ahead. Prefetching only. */
static inline void node_hint_admission(const struct node *n, struct request *r, uint32_t run,
				       uint64_t key, uint32_t depth)
{
	if (!n->prefix_caching)
		return;
	r->kv_hint = run;
	r->kv_hint_key = key;
	r->kv_hint_depth = depth;
	kv_prefetch_run_lines(&n->kv, run);
}
/* Disaggregated decode. node_reserve: takes on n the room r's prompt KV
 * needs (its cached prefix here locked, own blocks for the rest) before
 * the prefill node sends it; *hit_blocks: the prompt's full blocks found
 * cached (the rest is sent). -1 (nothing taken) when there is no room. Call
 * node_sync first. node_admit_reserved: the KV has arrived; its full
 * blocks enter the cache and r joins the waiting queue holding its blocks
 * (admitted past requests that wait for memory: it needs a batch slot);
 * returns as node_enqueue. node_unreserve: gives a reservation back.
 * node_release_held: the prefill node lets go of the KV a finished
 * PD_PREFILL request kept (request.pd_src_tail). */
int node_reserve(struct node *n, struct request *r, uint32_t *hit_blocks);
int node_admit_reserved(struct node *n, struct request *r, int64_t now_ns);
void node_unreserve(struct node *n, struct request *r);
void node_release_held(struct node *n, struct request *r);
/* As node_enqueue, at the head of the queue (a swapped-in request). */
int node_enqueue_front(struct node *n, struct request *r, int64_t now_ns);
/* Takes every request off the node (a crash): waiting ones in queue order,
 * then running ones, into out (room for n_waiting + n_running); the KV
 * cache is emptied and the node is idle. Returns how many. Call node_sync
 * first: the iterations of a decode span ended by then count in the node's
 * statistics (busy time, KV integral), the one in progress does not. */
uint32_t node_evacuate(struct node *n, struct request **out);
/* Commits every block its requests hold back (node.defer_commits) and
 * shuts their tail runs: the cache and the "computed before" records are
 * then what committing each block when filled would have left. Called
 * when a lookup reaches the end of an open run (node_lookup), before a
 * crash, and when a session gets two requests at once. O(running)
 * when a request holds an open run, else O(1). */
void node_commit_held(struct node *n);
/* kv_lookup_prefix in n's cache, with what its requests hold back
 * committed first when the match reaches the end of an open run. */
void node_lookup(struct node *n, const uint64_t *hashes, uint32_t k, struct kv_match *m);
/* Brings a decode span's requests and KV cache up to time now (what one
 * event per iteration would have done by then). Call before reading or
 * changing the node's KV cache from outside. O(batch). */
void node_sync(struct node *n, int64_t now_ns);
/* The blocks in use node_sync(n, now_ns) would leave, into *used, without
 * applying anything: 1 when nothing is due or the span's plan allows it (a
 * span's blocks taken are then counted from its requests' starting points);
 * 0 when only node_sync can tell. O(1) with block_tokens a power of two,
 * else O(batch), plus a step per iteration ended since the last count;
 * touches no request. */
int node_kv_used(struct node *n, int64_t now_ns, uint32_t *used);
/* 1 when a prefix lookup in n's cache gives what it would after
 * node_sync(n, now_ns), with nothing applied: nothing is due, or the span
 * allows counting (node_kv_used) and the blocks it has taken by now fit in
 * the free ones. Then the part not applied evicts nothing, and the blocks
 * it commits only their own session can name (the plan's condition), whose
 * next request cannot be routed while this one runs (a second live request
 * of a session turns counting off). -1 when counted but the blocks do not
 * fit: applying the span would evict, but only unlocked runs (a lookup
 * matching through locked runs alone is not changed by it either); 0 when
 * it cannot be counted. With -1, *evicts is how many blocks applying it
 * would evict (kv_evict_spares tells whether a match keeps its blocks). */
int node_cache_settled(struct node *n, int64_t now_ns, uint32_t *evicts);
/* For the step event at now: 1 if now is not the step's end but an
 * iteration end inside a decode span (the end of what was computed when the
 * event was scheduled); the span's ends are then computed past now and the
 * caller schedules the event again at step_end_ns, under the same seq. 0
 * when the step really ends now. */
int node_span_continues(struct node *n, int64_t now_ns);
/* Forms the next iteration's batch (vLLM v1 scheduling: running requests
 * first, then admissions from the waiting queue, preempting the newest
 * running request when KV runs out), as a decode span where it can. Returns
 * the ns to the node's step event (at step_end_ns: the step's end, or in a
 * long decode span the last iteration end computed so far), or 0 when there
 * is nothing to run (the node is then idle). O(batch + span length). */
int64_t node_start_step(struct node *n, int64_t now_ns);
/* Fills span_used[j] for the step's iterations j < span_len, once a step
 * (node_finish_step counts them on the fly unless this ran first, or the
 * block size is not a power of two up to 64). O(batch + span length). */
void node_span_used(struct node *n);
/* Applies the iteration that ends at now: tokens computed and emitted,
 * blocks cached, requests finished (on_done is called for each). O(batch). */
void node_finish_step(struct node *n, int64_t now_ns);
/* Starts the cache misses of node_sync(n, now_ns): stage 0, n's own
 * fields; stage 1 (once those are in), the batch and span arrays it reads.
 * A hint only. */
static inline __attribute__((always_inline)) void node_prefetch_sync(const struct node *n,
								      int64_t now_ns, int stage)
{
	if (stage == 0) {
		/* the lines node_kv_used, node_sync's early return and a cache
		 * lookup read (the counters and the index; the span's state;
		 * the engine's settings; the batch; the span's ends), not the
		 * spare lists', the span's cost state or the statistics' */
		static const uint16_t at[] = {offsetof(struct node, sync_due_ns),
					      offsetof(struct node, kv.first),
					      offsetof(struct node, busy),
					      offsetof(struct node, block_tokens),
					      offsetof(struct node, block_shift),
					      offsetof(struct node, batch),
					      offsetof(struct node, span_end)};
		for (uint32_t i = 0; i < sizeof at / sizeof at[0]; i++)
			__builtin_prefetch((const char *)n + at[i]);
		return;
	}
	if (now_ns < n->sync_due_ns || !n->busy || n->span_len <= 1)
		return;
	__builtin_prefetch(&n->span_end[n->span_ended]);
	for (uint32_t i = 0; i < n->n_batch; i += 4)
		__builtin_prefetch(&n->batch[i]);
}
/* Whether a step's batch entry is a prefill (a chunk of a prompt, or of a
 * preempted request's tokens), not a decode: what its first iteration
 * computes before the span's decodes, and how traces label it. */
static inline int node_entry_prefills(const struct batch_entry *e)
{
	return !(e->n == 1 && e->r->generated > 0);
}
/* Full blocks in tokens tokens. The hot loops run this per request per
 * iteration, so the usual power-of-two page size takes a shift. */
static inline uint32_t node_full_blocks(const struct node *n, uint64_t tokens)
{
	return (uint32_t)(n->block_shift ? tokens >> n->block_shift : tokens / n->block_tokens);
}
/* Blocks that hold tokens tokens (the last one possibly partial). */
static inline uint32_t node_blocks_for(const struct node *n, uint64_t tokens)
{
	return node_full_blocks(n, tokens + n->block_tokens - 1);
}

/* node_lookup of the full blocks (those with hashes) of r's first `tokens`
 * tokens, into *m (nothing cached without prefix caching); returns how
 * many blocks it looked for. */
static inline uint32_t node_lookup_tokens(struct node *n, const struct request *r,
					  uint64_t tokens, struct kv_match *m)
{
	uint32_t known = node_full_blocks(n, tokens);
	if (known > r->n_hashes)
		known = r->n_hashes;
	*m = (struct kv_match){0, 0, KV_NONE, 0, 0};
	if (n->prefix_caching)
		node_lookup(n, r->hashes, known, m);
	return known;
}

/* The engine's own part, shared by node.c and node_io.c (no one else calls these). */
/* The waiting queue (FIFO; preempted requests go back to the front). */
static inline void node_wait_push_back(struct node *n, struct request *r)
{
	r->qnext = NULL;
	r->qprev = n->wait_tail;
	if (n->wait_tail)
		n->wait_tail->qnext = r;
	else
		n->wait_head = r;
	n->wait_tail = r;
	n->n_waiting++;
	n->n_held += r->n_blocks != 0;
	n->waiting_tokens += r->num_tokens - r->num_computed;
}

static inline void node_wait_push_front(struct node *n, struct request *r)
{
	r->qprev = NULL;
	r->qnext = n->wait_head;
	if (n->wait_head)
		n->wait_head->qprev = r;
	else
		n->wait_tail = r;
	n->wait_head = r;
	n->n_waiting++;
	n->n_held += r->n_blocks != 0;
	n->waiting_tokens += r->num_tokens - r->num_computed;
}

/* Takes r (waiting on n) out of the queue. */
static inline void node_wait_remove(struct node *n, struct request *r)
{
	if (r->qprev)
		r->qprev->qnext = r->qnext;
	else
		n->wait_head = r->qnext;
	if (r->qnext)
		r->qnext->qprev = r->qprev;
	else
		n->wait_tail = r->qprev;
	n->n_waiting--;
	n->n_held -= r->n_blocks != 0;
	n->waiting_tokens -= r->num_tokens - r->num_computed;
	r->qnext = r->qprev = NULL;
}

static inline void node_wait_pop_front(struct node *n)
{
	node_wait_remove(n, n->wait_head);
}

/* Lets r's blocks go (its full ones stay cached). */
void node_release_blocks(struct node *n, struct request *r);
/* Takes own blocks so that r holds want; 0 or -1 (no room). */
int node_grow_blocks(struct node *n, struct request *r, uint32_t want);
/* kv_commit_blocks of r's blocks [next, full), committing blocks held back first when met. */
void node_commit_blocks(struct node *n, struct request *r, uint32_t next, uint32_t full);
/* Statistics of the step's iterations 0..last (ended). */
void node_step_stats(struct node *n, uint32_t last);

/* The power model's work (cost_work_ns) of iteration j of the step in
 * progress: iteration 0's own, then the decode span's (span_cb grown by
 * j - span_off iterations): exactly what that iteration's own batch
 * gives, so that spans change no energy figure. */
static inline double node_iteration_work_ns(const struct node *n, uint32_t j)
{
	if (j < n->span_off || n->span_len <= 1)
		return n->work0_ns;
	return cost_work_at_ns(n->cost, &n->span_cb, n->span_work_base_ns,
			       (double)(j - n->span_off));
}
/* Iteration j's time (ns) of the step in progress (its end computed). */
static inline int64_t node_iteration_ns(const struct node *n, uint32_t j)
{
	return n->span_end[j] - (j ? n->span_end[j - 1] : n->step_start_ns);
}

/* Takes own blocks so that r holds ceil(tokens / B); 0 or -1 (no room).
 * Most calls (a decode token inside its block) take none: inline. */
static inline int node_grow_to(struct node *n, struct request *r, uint32_t tokens)
{
	uint32_t want = node_blocks_for(n, tokens);
	return want <= r->n_blocks ? 0 : node_grow_blocks(n, r, want);
}

/* r's tail run changed: its first hash, the run's key in the index, is
 * noted with its depth for the hint its session's next turn will carry
 * (the request's hash at the run's depth was just read: the lookup probed
 * with it, or the commit started the run there). */
static inline void node_note_tail_key(const struct node *n, struct request *r)
{
	r->kv_tail_depth = n->kv.runs[r->kv_tail].depth;
	r->kv_tail_key = r->hashes[r->kv_tail_depth];
}

#endif
