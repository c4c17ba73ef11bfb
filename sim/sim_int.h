/* sim_int: the core's private header: struct sim, sessions, health, event kinds. */
#ifndef KVSIM_SIM_INT_H
#define KVSIM_SIM_INT_H

/* The core's files by layer, each with its header and prefix. A file calls
 * only the layers above it in this list (tests/layout.sh checks that the
 * files' includes and calls form no circle):
 *   sim_int.h  struct sim and the records every layer shares (this file)
 *   pool.c     request and session records, reused (pool_)
 *   about.c    the build's version (kvsim_version)
 *   thermal.c  the thermal model and slow-downs (thermal_)
 *   power.c    what nodes' GPUs draw: power now, energy so far (power_)
 *   runlog.c   timeseries, trace events, the progress line (runlog_)
 *   audit.c    --audit's invariant checks (audit_)
 *   ledger.c   the computed-before record (ledger_)
 *   views.c    the routers' per-replica views of the nodes, the KV
 *              watermark, the callbacks policies call (views_)
 *   links.c    ports, flows, tier write-downs, offload (links_)
 *   engine.c   putting work on nodes: queues and kicks, pinned KV, swap
 *              and reloads from the host tiers (engine_)
 *   premig.c   preemptive migration: idle sessions' KV leaves a node past
 *              the KV watermark for nodes with room (premig_)
 *   pd.c       disaggregated prefill/decode: the decode node's choice,
 *              its reserved KV, the hand-over flow, fail-over (pd_)
 *   select.c   node-selection helpers for the routing rules (select_)
 *   rules.c    the router's mechanisms as an ordered list of rules: keep,
 *              redirect or reject the policy's node (rules_)
 *   router.c   arrival -> route -> retry -> dispatch -> migration ->
 *              transfer done -> finish (router_)
 *   autoscale.c  autoscalers: nodes requested, started, drained and
 *              released (autoscale_)
 *   faults.c   the fault schedule: crashes, slow-downs, links, cooling (faults_)
 *   sim.c      the event loop and its handler table, set-up, tear-down,
 *              sim_run, sim_validate (sim_) */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>

#include "policies/policy.h"
#include "results/metrics.h"
#include "base/afile.h"
#include "config/config.h"
#include "model/cost.h"
#include "base/ctree.h"
#include "base/evq.h"
#include "base/flow.h"
#include "base/hmap.h"
#include "base/hset.h"
#include "policies/loadheap.h"
#include "model/node.h"
#include "sim/opts.h"
#include "base/prefix_index.h"
#include "sim/request.h"
#include "workloads/workload.h"

/* Event kinds: the index of each one's handler in struct sim's table
 * (ev_kinds), and what its event carries (struct event). The core's own
 * kinds are fixed; a layer with a timed mechanism of its own (samples,
 * load reports, faults, the watermark check, autoscalers) registers its
 * kind in its _init (sim_add_event_kind) and keeps the number. */
enum ev_kind {
	EV_ARRIVAL,  /* a request arrives: ptr the request; tag 1 from the source, 0 a follow-up */
	EV_STEP,     /* a node's step ends: node (the node's timer) */
	EV_DISPATCH, /* the routing decision's latency has passed: the dispatch
		      * record, ptr the request, node the decision's node, tag its
		      * enum migration_mode */
	EV_FLOW,     /* a flow's last byte left: id the flow (stale when superseded) */
	EV_DELIVER,  /* a flow's data arrived: tag its enum flow_kind, node the node
		      * it went to (a server, for write-downs; the move's slot in
		      * premig.c, for FLOW_PREMIG), ptr its request or NULL */
	EV_CORE_KINDS,
	EV_KINDS_MAX = 16
};
/* What an event kind's events may change, for --audit's checks after
 * them: a registered kind says so when it registers. */
enum {
	EVK_READS_ONLY = 1, /* changes no node's work (a sample, a load report) */
	EVK_SLOTS = 2,      /* may change node slots (crashes, autoscalers) */
};
enum { FAULT_START, FAULT_END };
/* A node slot's state under autoscaling (autoscale.c): not held; held and
 * loading its model (serves nothing); serving; held and finishing its
 * requests, taking no new ones. A static pool's nodes are NS_UP. */
enum node_scale { NS_OFF, NS_STARTING, NS_UP, NS_DRAINING };
/* What a flow is for. */
enum flow_kind {
	FLOW_MIGRATE, FLOW_RELOAD, FLOW_SWAP_OUT, FLOW_WRITE_DOWN,
	FLOW_PREMIG, /* an idle session's KV moving ahead of its next turn: its
		      * EV_DELIVER's node is the move's slot (premig.c), not a node */
	FLOW_PD      /* a disaggregated request's KV, prefill node to decode node */
};
enum { STREAM_ROUTING = 101 };
/* The most routing rules a column runs (rules.c's list fits). */
enum { RULES_MAX = 16 };
struct route_rule;

/* What the simulator remembers of a live session: where it last ran (the
 * source of a migration) and how far its private blocks were ever computed.
 *
 * "Computed before" (docs/design.md, section 6) needs a record of blocks ever computed. Blocks
 * other sessions can name (n_shared, e.g. system prompts, trace blocks) go in
 * the cluster-wide set `ever`. A session's private blocks can only be named
 * by its own turns, and a block's KV exists only after its whole prefix's
 * does, so one frontier per session records them exactly: blocks [0, len)
 * of the chain ending in hash `frontier_hash`. A turn whose chain still holds
 * that hash at len - 1 extends it; one whose history was truncated (a new
 * chain) starts a new frontier. O(1) memory per live session, nothing to
 * forget when it ends. */
enum { SESSION_NODES = 8 };

struct session_rec {
	uint64_t id;
	uint32_t live; /* its requests between arrival and end */
	int32_t last_node;
	/* Its last ended turn's node and tail run there (prefetch hints for
	 * its next admission there); hint_node -1 if none. */
	int32_t hint_node;
	uint32_t hint_run;
	uint64_t hint_key; /* hint_run's first hash at hint_depth (request.kv_hint_key) */
	uint32_t hint_depth;
	/* Where its requests ran (arrive_at_node), first come first: the only
	 * nodes that can hold its private blocks when the workload's are its
	 * own (wl_ops.private_own). n_nodes -1: more than SESSION_NODES (8:
	 * a disaggregated session adds a prefill and a decode node a turn). */
	int32_t nodes[SESSION_NODES];
	int32_t n_nodes;
	uint32_t frontier_len;
	uint64_t frontier_hash;
	/* Between turns (live 0, its next turn pending): the pending turn,
	 * and a stamp unique to this idle spell (0: not idle since reuse),
	 * with which preemptive migration (premig.c) tells its records of
	 * idle sessions from stale ones. */
	struct request *idle_req;
	uint64_t idle_seq;
	struct session_rec *free_next;
};

/* Node i may now hold blocks of rec's session past its shared ones: it
 * joins the session's list of nodes (or the list overflows: any node). */
static inline void session_add_node(struct session_rec *rec, int32_t i)
{
	if (rec->n_nodes < 0)
		return;
	int32_t k = 0;
	while (k < rec->n_nodes && rec->nodes[k] != i)
		k++;
	if (k == rec->n_nodes && k < SESSION_NODES)
		rec->nodes[rec->n_nodes++] = i;
	else if (k == rec->n_nodes)
		rec->n_nodes = -1; /* too many to list: any node */
}

/* A node's health: temperature (thermal model), faults. */
struct health {
	double temp_c, ambient_c;
	int busy;          /* busy since t_ns (the thermal model's input) */
	double busy_w;     /* the step's power per GPU while busy (power_busy_w) */
	int throttled;
	int64_t t_ns;      /* temperature is as of this time */
	double slow;       /* straggler factor: compute speed x slow */
	double throttled_s;
};

/* The ctx of a node's KV eviction callback. */
struct evict_ctx {
	struct sim *s;
	uint32_t server;
};

/* Disaggregated prefill/decode (pd.c): what the run counts. */
struct pd_stats {
	uint64_t count;     /* hand-overs delivered */
	uint64_t failovers; /* hand-overs whose decode node failed before the KV was placed */
	uint64_t local;     /* requests kept on a decode-capable node by min_prefill_tokens */
	double bytes, seconds; /* sent; flow start to delivery, summed */
	double wait_s;      /* waiting for room on the decode node, summed */
};

/* Each layer's state. A layer's own file reads and writes it; the layers
 * named beside a field also read it. Layers whose state no other file
 * reads keep it opaque (the ledger, preemptive migration, the
 * autoscalers): a pointer made by their _init and freed by their _free. */
struct ledger;
struct premig;
struct autoscale;

/* router.c: the request's path, the policy and the router's counters. */
struct router_state {
	const struct request *routing; /* the request the policy is routing, or NULL (views, pd) */
	const struct request *pf_arrival; /* the next arrival, prefetched (router_prefetch_arrival) */
	const struct request *pf_second;  /* ... and its session's lines */
	const struct pol_ops *pol;
	struct mech mech; /* the router's mechanisms for this policy */
	void **pol_sts; /* n_pol_st states: one per replica with a local store */
	uint32_t n_pol_st;
	int pol_reads_kv_util;
	uint64_t replica_next;
	gsl_rng *r_route;
	uint64_t next_id, migrations, retries;
	uint64_t follow_ups; /* later turns the workload gave (wl_ops.follow_up) */
	uint64_t mig_why[MR_N]; /* migrations by enum mig_reason */
	uint64_t pending_arrivals; /* arrival events in the queue */
	/* With opts->time_routing, one arrival (and one delayed dispatch) in
	 * TIME_EVERY is timed: reading the clock around every one would cost
	 * more than some decisions do. Sums over the timed ones: */
	int timing;                /* the arrival or dispatch in progress is timed */
	double route_ns;           /* the whole arrival */
	double arrive_ns;          /* of which the node's part (arrive_at_node) */
	double dispatch_ns;        /* the node's part after a routing latency */
	double sync_ns;            /* of route_ns: nodes brought up to date */
	uint64_t routed, timed_routes, dispatches, timed_dispatches;
	double migration_bytes, migration_s;
	struct request **evac; /* scratch for a crash */
	size_t evac_cap;
	/* the routing rules this column runs, in order (rules.c) */
	const struct route_rule *rules[RULES_MAX];
	uint32_t n_rules;
};

/* views.c: the routers' per-replica views of the nodes. */
struct views_state {
	struct pol_node_view *view; /* replica 0's view; views[k] for replica k */
	struct pol_node_view **views;
	uint64_t *total_out;        /* per replica: outstanding over nodes up */
	struct loadheap *lheap;     /* per replica: nodes up by outstanding */
	/* The routers' own record. pf_group: per node, the serial of the
	 * prefill group its iteration in progress ends (the requests whose
	 * first token it gives); pf_unmarked: per node, requests routed there
	 * whose first token is not yet due. hit_blocks[i]: the blocks of the
	 * request being routed found cached on node i, valid where
	 * hit_stamp[i] == route_stamp (one stamp per routing). */
	uint32_t *pf_group, *pf_unmarked, *hit_blocks;
	uint64_t *hit_stamp, route_stamp;
	uint32_t n_replicas, n_up;
	/* For policies that read KV figures or look caches up: nodes' KV use
	 * inside decode spans is counted from the span's plan where it allows,
	 * not applied (node_kv_used), and lookups skip applying it where that
	 * changes nothing (node_cache_settled), until a session has two
	 * requests at once. */
	int lazy_views;
	uint64_t kv_counted; /* views whose KV use differed from the node's applied state */
	uint64_t kv_synced;  /* views brought up to date for the policy */
	uint64_t kv_unapplied; /* cache lookups answered before a span's part was applied */
	uint64_t kv_evicting;  /* ... not, because that part evicts */
	uint64_t kv_locked;    /* ... answered though it evicts: the match is all locked runs */
	uint64_t kv_spared;    /* ... or its evictions take a run off the match's path */
	uint64_t kv_lookups;   /* cached_prefix calls */
	int64_t report_ns; /* load report interval; 0 = exact views */
	int ev_report;     /* the load reports' event kind */
};

/* links.c: ports, flows and the servers' tiers. */
struct links_state {
	struct flownet net;
	uint32_t n_servers;
	int has_dram, has_nvme;
	/* DRAM holds swapped-out requests' KV (swap preemption), whether or not
	 * the column offloads (has_dram) */
	int swap_dram;
	struct pidx dram, nvme;   /* owners: servers */
	double *wd_host, *wd_nvme; /* per server: write-down bytes not yet sent */
	uint32_t *dirty, n_dirty;
	uint8_t *is_dirty;
	struct evict_ctx *ectx;
	uint32_t *changed; /* scratch for flow_update */
	uint32_t changed_cap;
	double offload_out, offload_in;
};

/* engine.c: requests swapped out and coming back. */
struct engine_state {
	struct request **swq_head, **swq_tail; /* per node: swapped out, waiting for room */
	uint32_t *swapping_in; /* per node: swap-in reloads in flight */
	int in_swap_in;
};

/* faults.c: faults in force, so that overlapping ones compose: per (kind,
 * target), at fault_head[kind * n_nodes + target], a list of the faults
 * started and not ended, linked through fault_next (-1 ends). */
struct faults_state {
	int32_t *fault_head, *fault_next;
	uint32_t *crashes; /* per node: crashes so far (a pin holds while it stays) */
	int ev_fault;      /* the faults' event kind */
};

/* pd.c: disaggregated prefill/decode. The decode policy, its state and
 * the view it routes with (the routers' record, up only on decode-capable
 * nodes while it routes); per node, hand-overs waiting for room on it. */
struct pd_state {
	const struct pol_ops *pol;
	void *pol_st;
	int pol_reads_kv;
	struct request **wait_head, **wait_tail;
	uint64_t *own; /* per node: blocks held by hand-overs outside its queues */
	struct request **fail; /* scratch: hand-overs a crash left without a decode node */
	uint32_t fail_cap;
	struct pd_stats stats;
	/* TTFT split over completed requests (seconds, summed): queue before
	 * prefill, prefill, transfer, queue before decode */
	double ttft_split[4];
};

/* autoscale.c: per node, its slot's state (enum node_scale; NS_UP in a
 * pool without an autoscaler), and the time its GPUs were held
 * (allocated: starting, up or draining): held_ns before held_from, and
 * since held_from while held (-1: not held). */
struct slots_state {
	uint8_t *nstate;
	int64_t *held_from, *held_ns;
	uint32_t n_held, n_held_max; /* nodes held now, and the most at once */
	uint32_t n_draining;         /* nodes draining now */
	uint64_t scale_up, scale_down; /* nodes requested and released by autoscalers */
	int64_t *ready_at;    /* per node: when its start-up ends */
};

/* pool.c: request and session records, reused. */
struct pool_state {
	struct hmap sessions; /* session id -> struct session_rec * */
	struct session_rec *free_sessions;
	struct request *free_reqs;
};

/* runlog.c: timeseries.csv, trace events, the progress line. */
struct runlog_state {
	struct afile ts_file, te_file; /* timeseries.csv, trace events */
	FILE *ts;               /* ts_file's stream while open, or NULL */
	FILE *te;               /* te_file's stream while open, or NULL (every layer
				 * that traces tests it) */
	uint64_t te_count;      /* events written; capped at TE_MAX */
	int64_t sample_ns;      /* its interval */
	uint32_t idle_samples;  /* samples in a row that found no request in the system */
	uint32_t sample_paused; /* sampling waits for work (runlog_sample_resume) */
	int ev_sample;          /* the samples' event kind */
};

/* A chore run after every event while *due is not 0 (sim_add_chore). */
struct sim_chore {
	int order;
	const uint32_t *due;
	void (*run)(struct sim *s);
};
enum { SIM_CHORES = 8 };

/* An event kind's handler, and when a popped event of it is stale
 * (superseded by a later one: skipped, not delivered); NULL: never. */
struct sim_ev_kind {
	void (*handle)(struct sim *s, const struct event *ev);
	int (*stale)(const struct sim *s, const struct event *ev);
	unsigned flags; /* EVK_* */
};

/* One run's whole state: what every layer shares (the scenario, the
 * clock, the event queue, the nodes and their health, the workload, the
 * metrics), and each layer's own. */
struct sim {
	const struct scenario *sc;
	const struct sim_opts *opts;
	struct evq q;
	int64_t now, end_arrivals_ns;
	struct cost_model *costs; /* per pool (scenario.pools) */
	uint16_t *pool_of;        /* per node: its pool */
	uint8_t *alive;           /* per node: takes new work (up, not crashed, not draining) */
	uint8_t *can_decode;      /* per node: in a decode or mixed pool */
	uint8_t *routable;        /* per node: in a prefill or mixed pool (the routers' policy's) */
	/* Per node: its routing load is divided by this (its pool's prefill
	 * throughput over the fastest pool's; 1 in a one-pool cluster) */
	double *speed;
	int mixed_speeds;         /* some speed is not 1 */
	struct node *nodes;
	uint32_t n_nodes;
	struct kv_spares kv_spares; /* the nodes' KV pools share their spare arrays */
	struct health *hl;
	double block_bytes;       /* one KV block's bytes */
	/* Prefill iterations may open decode spans (node.fold_ok): until a
	 * session has two requests at once. */
	int fold;
	/* Requests may hold back their private blocks' commits
	 * (node.defer_commits): until a session has two requests at once. */
	int defer;
	const struct wl_ops *wl;
	void *wl_st;
	struct metrics met;
	/* the layers */
	struct router_state rt;
	struct views_state vw;
	struct links_state lk;
	struct engine_state eng;
	struct faults_state flt;
	struct pd_state pd;
	struct slots_state sl;
	struct pool_state pool;
	struct runlog_state log;
	struct ledger *led;   /* ledger.c */
	struct premig *pm;    /* preemptive migration's state, or NULL when off */
	struct autoscale *as; /* the pools' autoscalers, or NULL when none */
	/* registered by the layers' _init */
	struct sim_ev_kind ev_kinds[EV_KINDS_MAX];
	uint32_t n_ev_kinds;
	struct sim_chore chores[SIM_CHORES];
	uint32_t n_chores;
	int error; /* 3 after an internal failure */
	char *err;
	size_t errlen;
};

#define TE_MAX 2000000
/* With opts->time_routing, the arrivals and dispatches timed: one in this many. */
#define TIME_EVERY 16

/* Whether a crash of node i is in force (it stays down while one is). */
static inline int sim_crash_in_force(const struct sim *s, uint32_t i)
{
	return s->flt.fault_head && s->flt.fault_head[(size_t)FAULT_CRASH * s->n_nodes + i] >= 0;
}

/* Whether draining node i holds nothing any more, so is due for release:
 * no request queued, running, swapped out or coming back from swap, no KV
 * held for a hand-over from it or reserved for one to it. */
static inline int sim_drained(const struct sim *s, uint32_t i)
{
	const struct node *n = &s->nodes[i];
	return s->sl.nstate[i] == NS_DRAINING && !n->busy && !n->n_running && !n->n_waiting &&
	       !s->eng.swq_head[i] && !s->pd.own[i] && !s->eng.swapping_in[i] &&
	       !(s->pd.wait_head && s->pd.wait_head[i]);
}

/* Node i's GPUs held so far (ns): allocated, start-up included. */
static inline int64_t sim_held_ns(const struct sim *s, uint32_t i)
{
	return s->sl.held_ns[i] + (s->sl.held_from[i] >= 0 ? s->now - s->sl.held_from[i] : 0);
}

static inline void sim_fail_with(struct sim *s, int code, const char *what)
{
	if (!s->error) {
		snprintf(s->err, s->errlen, "%s", what);
		s->error = code;
	}
}

/* An internal failure (exit 3): out of memory, say. */
static inline void sim_fail(struct sim *s, const char *what)
{
	sim_fail_with(s, 3, what);
}

/* Registers an event kind's handler (stale: NULL, never; flags: EVK_*):
 * its number, or -1 when the table is full. Called by the layers' _init,
 * in a fixed order, so numbers repeat from run to run. */
static inline int sim_add_event_kind(struct sim *s,
				     void (*handle)(struct sim *s, const struct event *ev),
				     int (*stale)(const struct sim *s, const struct event *ev),
				     unsigned flags)
{
	if (s->n_ev_kinds >= EV_KINDS_MAX)
		return -1;
	s->ev_kinds[s->n_ev_kinds] = (struct sim_ev_kind){handle, stale, flags};
	return (int)s->n_ev_kinds++;
}

/* Registers a chore: run(s) after every event while *due is not 0.
 * Chores run by ascending order (the layers' numbers: the autoscalers'
 * releases 10, sampling resumed 20, tier write-downs flushed 30), so a
 * run repeats whichever layer set up first. 0, or -1 when full. */
static inline int sim_add_chore(struct sim *s, int order, const uint32_t *due,
				void (*run)(struct sim *s))
{
	if (s->n_chores >= SIM_CHORES)
		return -1;
	uint32_t k = s->n_chores++;
	while (k > 0 && s->chores[k - 1].order > order) {
		s->chores[k] = s->chores[k - 1];
		k--;
	}
	s->chores[k] = (struct sim_chore){order, due, run};
	return 0;
}

/* Sets node i's step-end timer (replacing the one it had, if any). */
static inline void sim_schedule_step(struct sim *s, uint32_t i)
{
	evq_timer_set(&s->q, i, s->nodes[i].step_end_ns);
}

/* Whether private block idx of r is behind its session's frontier
 * (computed before). */
static inline int session_computed_before(const struct session_rec *rec, const struct request *r,
					  uint32_t idx)
{
	uint32_t len = rec->frontier_len;
	return idx < len && len <= r->n_hashes && r->hashes[len - 1] == rec->frontier_hash;
}

/* The nodes where r's session ran, when its private blocks are its own
 * (wl_ops.private_own): their count, or -1 when they are not known. */
static inline int session_nodes(const struct sim *s, const struct request *r,
				const int32_t **nodes)
{
	const struct session_rec *rec = r->session_rec;
	if (!s->wl->private_own || !rec || rec->id != r->session)
		return -1;
	*nodes = rec->nodes;
	return rec->n_nodes;
}

#endif
