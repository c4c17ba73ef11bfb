/* request: one LLM request as it moves from workload to router to engine. */
#ifndef KVSIM_REQUEST_H
#define KVSIM_REQUEST_H

#include <stdint.h>

enum pd_phase { PD_NONE, PD_PREFILL, PD_DECODE };

enum req_state {
	REQ_NEW,      /* arrived, not yet routed */
	REQ_TRANSFER, /* routed; its KV is in flight to the node */
	REQ_WAITING,  /* in a node's waiting queue */
	REQ_RUNNING,  /* admitted: prefilling or decoding */
	REQ_DONE,
	REQ_SHED,
	REQ_FAILED,
};

/* Token identity: a prompt (followed by its output) is a chain of
 * kv_block_tokens-token blocks; hashes[i] names block i and its whole prefix,
 * so two requests share their first k blocks iff hashes agree up to k. Only
 * full blocks have hashes. */
#define REQ_TAIL_SHUT UINT32_MAX
#define REQ_TAIL_OPEN (UINT32_MAX - 1)

struct request {
	/* What the engine reads and writes every iteration, and per block,
	 * first: these 64 bytes are one cache line where the simulator
	 * allocates requests (64-byte aligned). W: set by the workload; S: by
	 * the simulator and the engine. */
	uint32_t num_tokens;   /* S: tokens known: prompt + generated */
	uint32_t num_computed; /* S: tokens whose KV is in the node's cache */
	uint32_t generated;    /* S: output tokens emitted */
	uint32_t high_water;   /* S: most tokens ever computed (preemption accounting) */
	uint64_t *hashes; /* W: full blocks of prompt + output; owned, reused */
	uint32_t output_tokens; /* W */
	enum req_state state;   /* S */
	/* S: KV held on its node: the cached runs from kv_tail to the root
	 * cover its first n_blocks - n_own blocks; n_own more are its own (the
	 * block being filled; all of them without prefix caching). */
	uint32_t kv_tail;
	uint32_t n_blocks, n_own;
	uint32_t n_hashes; /* W */
	uint32_t n_shared; /* W: leading blocks whose content other sessions can name */
	void *session_rec; /* S: the simulator's session record (private blocks move its frontier) */
	/* S: REQ_TAIL_SHUT, or its tail run is open (kv_run.open: its own,
	 * alone, nothing under it) and its private blocks filled from block
	 * open_from on are held back, not yet committed to the cache nor
	 * recorded as computed (REQ_TAIL_OPEN: none yet). See the node's
	 * deferred commits. */
	uint32_t open_from;

	/* S: blocks [lo, hi) were found computed before (somewhere) at its
	 * first admission: recording them again as computed changes nothing. */
	uint32_t before_lo, before_hi;
	uint32_t ever_next; /* S: 1 + the last shared block it recorded as computed */

	/* S: where block ever_next - 1 is in the simulator's tree of shared
	 * blocks computed before (run CTREE_NONE: not known) */
	uint32_t ever_run, ever_off;

	/* Set by the workload. */
	uint32_t hashes_cap;
	void *wl_session; /* the workload's own record of the session, or NULL */
	uint64_t id; /* set by the simulator, in arrival order from 1 */
	uint64_t session; /* nonzero; equal for the turns of one conversation */
	uint32_t turn;    /* 1-based */
	int last_turn;    /* 1: no follow-up will come for this session */
	int64_t arrival_ns;
	uint32_t prompt_tokens;
	uint32_t epoch;   /* a namespace of content (wl_ops.epochs); 0 if unused */

	/* Set by the simulator and the engine. */
	int32_t node;
	/* S: a run of its node's cache that its admission's prefix lookup
	 * will likely reach (its session's tail there when the turn before
	 * ended), for prefetching only; KV_NONE if not known. Once it has
	 * ended: its own tail run when it released it. */
	uint32_t kv_hint;
	/* S: the first hash of kv_hint's run (its key in the node's index)
	 * when the run began at depth kv_hint_depth, carried with the hint so
	 * that the index probe's prefetch needs no read of the prompt's hash
	 * (a split since, which moves the run's start, makes it read it);
	 * meaningful while kv_hint is set. */
	uint64_t kv_hint_key;
	uint32_t kv_hint_depth;
	/* S: the first hash and depth of kv_tail's run, noted when kv_tail
	 * changes (the line it is read from is in cache then); a hint's
	 * source. */
	uint64_t kv_tail_key;
	uint32_t kv_tail_depth;
	uint32_t mig_lo, mig_hi; /* blocks [lo, hi) arrived by migration */
	uint32_t rel_lo, rel_hi; /* blocks [lo, hi) reloaded from a DRAM/NVMe tier */
	uint32_t pending;        /* transfers it waits for */
	uint32_t retries;        /* re-routings after its node failed */
	uint32_t replica;        /* the router replica that routed it */
	/* S: what it adds to its node's figures in its router's record
	 * (views.c): prompt tokens to prefill (until its first token) and
	 * prompt blocks (until it finishes); rt_mark: 0 until its first token
	 * is due, then the node's prefill group (sim.pf_group) it is due in. */
	uint32_t rt_prefill, rt_blocks, rt_mark;
	uint16_t swapped;        /* 1 while swapped out (returns to its node's front) */
	uint16_t mig_why;        /* enum mig_reason: why its KV would move (routing) */
	int64_t xfer_start_ns;   /* when its migration began */
	uint32_t pin_crashes;      /* its node's crash count when kv_tail pinned a prefix */
	int accounted;           /* the prompt split below is final */
	int64_t enqueue_ns, sched_ns, first_token_ns, finish_ns;
	/* asynchronous scheduling (vllm-0.15): no step starting at or before
	 * this time takes the request from the queue (node_enqueue); 0: any */
	int64_t admit_after_ns;
	/* when its last output token so far was made (0: none yet): the
	 * start of its next inter-token gap (node_finish_step) */
	int64_t last_token_ns;
	/* Disjoint split of prompt_tokens (docs/design.md, section 6), plus preemption recompute. */
	uint32_t cached, reloaded, migrated, recomputed, fresh;
	uint32_t preempt_recomputed, preemptions;
	/* For --audit, preemption recompute counted per admission: it computes
	 * from ep_start up to ep_end (its preemption or end), recomputing
	 * [ep_start, min(ep_end, ep_hw)) below the high water ep_hw it was
	 * admitted with; ep_recomputed sums the admissions that ended. */
	uint32_t ep_start, ep_hw, ep_recomputed;
	int ep_open;
	/* S: disaggregated prefill/decode (pd.c). pd: PD_NONE, or PD_PREFILL
	 * while it prefills on a prefill node (output_tokens is 1 there; the
	 * request's own is in pd_output), PD_DECODE from its hand-over on.
	 * prefill_node: where it prefilled (-1: not disaggregated). Times:
	 * its prefill's admission and end on the prefill node, its KV flow's
	 * start and its arrival on the decode node (0: not yet). The prefill
	 * node's blocks stay held (kv_tail, n_own as the engine left them in
	 * pd_src_tail, pd_src_own) until the KV has left. */
	uint8_t pd;
	uint8_t pd_local;   /* kept whole on a decode node by min_prefill_tokens */
	int32_t prefill_node;
	uint32_t pd_output;
	uint32_t pd_src_tail, pd_src_own, pd_src_crashes;
	uint32_t pd_blocks; /* blocks sent (those the decode node lacked) */
	int64_t pd_sched_ns, pd_done_ns, pd_xfer_ns, pd_arrive_ns;
	int64_t pd_wait_ns; /* when its present wait for a decode node began */
	const char *reason; /* static string: why shed or failed */
	struct request *qnext, *qprev; /* waiting-queue links */
	struct request *pool_next;     /* free-list link */
};

/* Preemption recompute of r's admission in progress, if any, so far (see
 * ep_start above). */
static inline uint32_t req_episode_recomputed(const struct request *r)
{
	if (!r->ep_open || r->ep_start >= r->ep_hw)
		return 0;
	uint32_t top = r->num_computed < r->ep_hw ? r->num_computed : r->ep_hw;
	return top > r->ep_start ? top - r->ep_start : 0;
}
/* Ends r's admission (preempted, finished, or its node failed). */
static inline void req_episode_end(struct request *r)
{
	r->ep_recomputed += req_episode_recomputed(r);
	r->ep_open = 0;
}

#endif
