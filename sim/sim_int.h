/* sim_int: the core's private header: struct sim, sessions, health, event kinds. */
#ifndef KVSIM_SIM_INT_H
#define KVSIM_SIM_INT_H

/* The core's files by layer (each a prefix):
 *   sim.c      the event loop and its handler table, request and session
 *              pools, set-up, tear-down, sim_run, sim_validate (sim_)
 *   router.c   arrival -> route -> retry -> dispatch -> migrate/reload ->
 *              finish (router_)
 *   views.c    the routers' per-replica views of the nodes, the KV
 *              watermark, the callbacks policies call (views_)
 *   ledger.c   the computed-before record (ledger_)
 *   links.c    ports, flows, tier write-downs, offload, swap (links_)
 *   thermal.c  the thermal model and slow-downs (thermal_)
 *   faults.c   the fault schedule: crashes, slow-downs, links, cooling (faults_)
 *   audit.c    --audit's invariant checks (audit_)
 *   runlog.c   timeseries, trace events, the progress line (runlog_) */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>

#include "policies/policy.h"
#include "results/metrics.h"
#include "sim/afile.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/ctree.h"
#include "sim/evq.h"
#include "sim/flow.h"
#include "sim/hmap.h"
#include "sim/hset.h"
#include "sim/loadheap.h"
#include "sim/node.h"
#include "sim/prefix_index.h"
#include "sim/request.h"
#include "sim/sim.h"

struct wl_ops;

/* Event kinds: the index of each one's handler in sim.c's table
 * (sim_ev_handlers), and what its event carries (struct event). A new
 * mechanism adds a kind here and its handler to the table. */
enum ev_kind {
	EV_ARRIVAL,  /* a request arrives: ptr the request; tag 1 from the source, 0 a follow-up */
	EV_STEP,     /* a node's step ends: node (the node's timer) */
	EV_SAMPLE,   /* timeseries rows are due */
	EV_DISPATCH, /* the routing decision's latency has passed: the dispatch
		      * record, ptr the request, node the decision's node, tag its
		      * enum migration_mode */
	EV_FLOW,     /* a flow's last byte left: id the flow (stale when superseded) */
	EV_DELIVER,  /* a flow's data arrived: tag its enum flow_kind, node the node
		      * it went to (a server, for write-downs), ptr its request or NULL */
	EV_REPORT,   /* nodes send their load reports */
	EV_FAULT,    /* a fault starts or ends: id its index in the scenario's
		      * faults, tag FAULT_START or FAULT_END */
	EV_KINDS
};
enum { FAULT_START, FAULT_END };
/* What a flow is for. */
enum flow_kind { FLOW_MIGRATE, FLOW_RELOAD, FLOW_SWAP_OUT, FLOW_WRITE_DOWN };
enum { STREAM_ROUTING = 101 };

/* What the simulator remembers of a live session: where it last ran (the
 * source of a migration) and how far its private blocks were ever computed.
 *
 * "Computed before" (DESIGN 6) needs a record of blocks ever computed. Blocks
 * other sessions can name (n_shared, e.g. system prompts, trace blocks) go in
 * the cluster-wide set `ever`. A session's private blocks can only be named
 * by its own turns, and a block's KV exists only after its whole prefix's
 * does, so one frontier per session records them exactly: blocks [0, len)
 * of the chain ending in hash `frontier_hash`. A turn whose chain still holds
 * that hash at len - 1 extends it; one whose history was truncated (a new
 * chain) starts a new frontier. O(1) memory per live session, nothing to
 * forget when it ends. */
enum { SESSION_NODES = 4 };

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
	 * own (wl_ops.private_own). n_nodes -1: more than SESSION_NODES. */
	int32_t nodes[SESSION_NODES];
	int32_t n_nodes;
	uint32_t frontier_len;
	uint64_t frontier_hash;
	struct session_rec *free_next;
};

/* A node's health: temperature (thermal model), faults. */
struct health {
	double temp_c, ambient_c;
	int busy;          /* busy since t_ns (the thermal model's input) */
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

/* The computed-before tree of one epoch (a content namespace,
 * wl_ops.epochs), and its requests in the system. */
struct ever_epoch {
	struct ctree tree;
	uint32_t epoch;
	uint64_t live;
};

/* One run's whole state, shared by the core's files (each reads and writes
 * its own layer's fields; grouped below by layer). */
struct sim {
	const struct request *routing; /* the request the policy is routing, or NULL */
	const struct request *pf_arrival; /* the next arrival, prefetched (router_prefetch_arrival) */
	const struct request *pf_second;  /* ... and its session's lines */
	const struct scenario *sc;
	const struct sim_opts *opts;
	struct evq q;
	int64_t now, end_arrivals_ns;
	struct cost_model cost;
	struct node *nodes;
	uint32_t n_nodes;
	struct kv_spares kv_spares; /* the nodes' KV pools share their spare arrays */
	struct pol_node_view *view; /* replica 0's view; views[k] for replica k */
	struct pol_node_view **views;
	uint64_t *total_out;        /* per replica: outstanding over nodes up */
	struct loadheap *lheap;     /* per replica: nodes up by outstanding */
	uint32_t n_replicas, n_pol_st, n_up;
	uint64_t replica_next;
	const struct pol_ops *pol;
	void **pol_sts; /* n_pol_st states: one per replica with a local store */
	int pol_reads_kv_util;
	/* For policies that read KV figures or look caches up: nodes' KV use
	 * inside decode spans is counted from the span's plan where it allows,
	 * not applied (node_kv_used), and lookups skip applying it where that
	 * changes nothing (node_cache_settled), until a session has two
	 * requests at once. */
	int lazy_views;
	/* Prefill iterations may open decode spans (node.fold_ok): until a
	 * session has two requests at once. */
	int fold;
	/* Requests may hold back their private blocks' commits
	 * (node.defer_commits): until a session has two requests at once. */
	int defer;
	uint64_t kv_counted; /* views whose KV use differed from the node's applied state */
	uint64_t kv_synced;  /* views brought up to date for the policy */
	uint64_t kv_unapplied; /* cache lookups answered before a span's part was applied */
	uint64_t kv_evicting;  /* ... not, because that part evicts */
	uint64_t kv_locked;    /* ... answered though it evicts: the match is all locked runs */
	uint64_t kv_spared;    /* ... or its evictions take a run off the match's path */
	uint64_t kv_lookups;   /* cached_prefix calls */
	int64_t report_ns; /* load report interval; 0 = exact views */
	/* links and tiers */
	struct flownet net;
	uint32_t n_servers;
	double block_bytes;
	int has_dram, has_nvme;
	struct pidx dram, nvme;   /* owners: servers */
	double *wd_host, *wd_nvme; /* per server: write-down bytes not yet sent */
	uint32_t *dirty, n_dirty;
	uint8_t *is_dirty;
	struct evict_ctx *ectx;
	uint32_t *changed; /* scratch for flow_update */
	uint32_t changed_cap;
	double offload_out, offload_in;
	struct health *hl;
	struct request **evac; /* scratch for a crash */
	size_t evac_cap;
	struct request **swq_head, **swq_tail; /* per node: swapped out, waiting for room */
	uint32_t *crashes; /* per node: crashes so far (a pin holds while it stays) */
	uint32_t *swapping_in; /* per node: swap-in reloads in flight */
	int in_swap_in;
	gsl_rng *r_route;
	const struct wl_ops *wl;
	void *wl_st;
	/* The shared block hashes computed somewhere before. While every
	 * block recorded had its chain parent recorded first (ever_closed),
	 * they are a tree of chains, kept as such (ever_tree: adds are appends,
	 * not random inserts), and "computed before" falls from true to false
	 * once along a prompt, at the end of its longest prefix in the tree
	 * (cached here for the request being admitted). The first block
	 * recorded without its parent moves them into the flat set `ever`,
	 * which --audit also keeps all along, to check the tree's answers.
	 * With wl_ops.epochs, one tree per epoch (eps, oldest first), each
	 * forgotten once a later epoch has come from the source and its own
	 * last request has ended (nothing can ask it again); else one. */
	struct ever_epoch *eps;
	uint32_t n_eps, eps_cap;
	int per_epoch;      /* one tree per epoch (wl_ops.epochs, and not opts->keep_epochs) */
	uint32_t src_epoch; /* the latest epoch the source delivered */
	uint64_t eps_forgotten;
	size_t ever_blocks, ever_peak; /* blocks in the trees, and the most at once */
	struct hset ever;
	int ever_closed;
	const struct request *bs_req;
	uint64_t bs_id;
	size_t bs_count;
	uint32_t bs_lo, bs_hi, bs_first_not;
	struct hmap sessions; /* session id -> struct session_rec * */
	struct session_rec *free_sessions;
	struct request *free_reqs;
	struct metrics met;
	uint64_t next_id, migrations, retries;
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
	struct afile ts_file, te_file; /* timeseries.csv, trace events */
	FILE *ts;               /* ts_file's stream while open, or NULL */
	FILE *te;               /* te_file's stream while open, or NULL */
	uint64_t te_count;      /* events written; capped at TE_MAX */
	int64_t sample_ns;      /* its interval */
	int error; /* 3 after an internal failure */
	char *err;
	size_t errlen;
};

#define TE_MAX 2000000
/* With opts->time_routing, the arrivals and dispatches timed: one in this many. */
#define TIME_EVERY 16


#define TE_MAX 2000000
/* With opts->time_routing, the arrivals and dispatches timed: one in this many. */
#define TIME_EVERY 16

/* --- sim.c ---------------------------------------------------------------- */

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

/* The workload returned -1: bad input (exit 2) or no memory (3). */
void sim_workload_failed(struct sim *s);
/* A cleared request from the pool (NULL after sim_fail); sim_req_put
 * hands it back. */
struct request *sim_req_get(struct sim *s);
void sim_req_put(struct sim *s, struct request *r);
/* The live session's record, made on its first request (NULL after
 * sim_fail); sim_session_end frees it with its last. */
struct session_rec *sim_session_get(struct sim *s, uint64_t id);
void sim_session_end(struct sim *s, struct session_rec *rec);
/* Starts node i's next step if it is idle, and what follows a change in
 * its queue (offload, views, swap-ins). */
void sim_kick(struct sim *s, uint32_t i);
/* Enqueues r on node i (at the head for a swapped-in request). */
void sim_enqueue(struct sim *s, uint32_t i, struct request *r);

/* Sets node i's step-end timer (replacing the one it had, if any). */
static inline void sim_schedule_step(struct sim *s, uint32_t i)
{
	evq_timer_set(&s->q, i, s->nodes[i].step_end_ns);
}

/* --- router.c ------------------------------------------------------------- */

/* Pulls the source's next open-loop arrival, unless past the horizon. */
void router_pull_source(struct sim *s);
void router_ev_arrival(struct sim *s, const struct event *ev);
void router_ev_dispatch(struct sim *s, const struct event *ev);
void router_prefetch_request(struct sim *s, const struct request *r);

/* Before each event: starts the misses of the next arrival while it is
 * the heap's earliest event, in two stages over two events (prefetches
 * only; router_prefetch_request). Inline: most events have nothing to do. */
static inline void router_prefetch_arrival(struct sim *s)
{
	const struct event *nx = evq_heap_top(&s->q);
	if (nx && nx->kind == EV_ARRIVAL && nx->ptr &&
	    (nx->ptr != s->pf_arrival || nx->ptr != s->pf_second))
		router_prefetch_request(s, nx->ptr);
}
/* r's node failed: route it again from scratch, or fail it. */
void router_retry(struct sim *s, struct request *r);
/* Prefix blocks the tiers hold come back before prefill; 1 if started. */
int router_maybe_reload(struct sim *s, struct request *r, uint32_t dst);
/* A transfer r waited for has arrived at dst. */
void router_transfer_done(struct sim *s, struct request *r, uint32_t dst);
/* node_hooks.on_done */
void router_on_done(void *ctx, struct request *r, int64_t now_ns);

/* --- views.c -------------------------------------------------------------- */

/* The KV watermark test, the one place it is written: whether `blocks`
 * of a node's n_blocks are above router.kv_watermark (a node in use
 * above it is closed to new sessions; one holding more than it offloads
 * cold blocks). */
static inline double views_watermark_blocks(const struct sim *s, uint32_t n_blocks)
{
	return s->sc->router.kv_watermark * n_blocks;
}
static inline int views_above_watermark(const struct sim *s, double blocks, uint32_t n_blocks)
{
	return blocks > views_watermark_blocks(s, n_blocks);
}

/* Node i's view in every replica, with `used` blocks in use (what
 * node_sync would leave). Inline: each step's end calls it with exact
 * reports. */
static inline void views_refresh_used(struct sim *s, uint32_t i, uint32_t used)
{
	const struct node *n = &s->nodes[i];
	const struct health *h = &s->hl[i];
	for (uint32_t k = 0; k < s->n_replicas; k++) {
		struct pol_node_view *v = &s->views[k][i];
		v->queued = n->n_waiting;
		v->running = n->n_running;
		v->queued_tokens = n->waiting_tokens;
		v->kv_used_blocks = used;
		v->kv_util = (double)used / (double)n->kv.n_blocks;
		v->closed = views_above_watermark(s, (double)used, n->kv.n_blocks);
		v->temperature_c = h->temp_c;
		v->throttled = h->throttled;
		v->routed_since = 0;
	}
}

static inline void views_refresh(struct sim *s, uint32_t i)
{
	views_refresh_used(s, i, s->nodes[i].kv.n_used);
}

/* Node i goes up or down in every replica's view. */
void views_set_up(struct sim *s, uint32_t i, int up);
/* The router's own record: r was sent to node, or left it. */
void views_count_dispatch(struct sim *s, const struct request *r, uint32_t node);
void views_count_done(struct sim *s, const struct request *r, uint32_t node);
/* Whether node i is above the KV watermark (closed to new sessions). */
int views_closed(struct sim *s, const struct pol_node_view *v, uint32_t i);
/* The up node with the fewest waiting requests under limit (open to new
 * sessions when need_open), or -1. */
int32_t views_least_queued(struct sim *s, const struct pol_node_view *v, uint32_t limit,
			   int need_open);
/* Every node's KV figures brought up to now (for POL_READS_KV_ALL). */
void views_sync_all(struct sim *s);
/* The view a policy routes r with: the replica's figures and callbacks. */
void views_for_policy(struct sim *s, const struct request *r, struct pol_view *v);
/* pol_view.private_nodes */
int views_private_nodes(void *ctx, const struct request *r, const int32_t **nodes);
void views_ev_report(struct sim *s, const struct event *ev);

/* --- ledger.c ------------------------------------------------------------- */

/* One empty tree (epoch 0). 0, or -1 when memory runs out. */
int ledger_init(struct sim *s);
void ledger_free(struct sim *s);
/* r enters the system, from the source (from_source) or as a follow-up;
 * ledger_leave: it has left. */
void ledger_arrive(struct sim *s, const struct request *r, int from_source);
void ledger_leave(struct sim *s, const struct request *r);
/* node_hooks.on_blocks_computed, .computed_before, .computed_never */
void ledger_on_blocks_computed(void *ctx, struct request *r, uint32_t from, uint32_t to);
uint32_t ledger_computed_before(void *ctx, const struct request *r, uint32_t idx, uint32_t end);
uint32_t ledger_computed_never(void *ctx, const struct request *r, uint32_t idx, uint32_t end);

/* Whether private block idx of r is behind its session's frontier
 * (computed before). */
static inline int ledger_private_before(const struct session_rec *rec, const struct request *r,
					uint32_t idx)
{
	uint32_t len = rec->frontier_len;
	return idx < len && len <= r->n_hashes && r->hashes[len - 1] == rec->frontier_hash;
}

/* --- links.c -------------------------------------------------------------- */

/* Ports: node i has its NVLink port (2i) and its NIC (2i + 1); server k
 * has its PCIe path to host DRAM (2N + 2k) and its NVMe device (+1). */
static inline uint32_t links_port_nvlink(uint32_t i) { return 2 * i; }
static inline uint32_t links_port_nic(uint32_t i) { return 2 * i + 1; }
static inline uint32_t links_port_host(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k; }
static inline uint32_t links_port_nvme(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k + 1; }

/* Reschedules the end events of flows whose rates changed. */
void links_flows_changed(struct sim *s);
/* A flow of kind for r (or NULL) to target over ports; 0, or -1. */
int links_start_flow(struct sim *s, enum flow_kind kind, struct request *r, int32_t target,
		     const uint32_t *ports, uint32_t n_ports, double bytes, double latency_s);
/* The time a transfer over these ports would take if it started now. */
double links_estimate_s(const struct sim *s, const uint32_t *ports, uint32_t n, double bytes,
			double latency_s);
/* The link between nodes a and b, and the two ports it uses. */
const struct cat_link *links_between(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports);
/* kv_pool.on_evict (ctx: struct evict_ctx) and pidx.on_evict (ctx: s). */
void links_on_hbm_evict(void *ctx, uint64_t hash);
void links_on_dram_evict(void *ctx, uint32_t server, uint64_t hash);
/* Sends the write-downs batched during the event. */
void links_flush_write_downs(struct sim *s);
/* Preemptive offload of node i's cold blocks above the watermark. */
void links_offload_cold(struct sim *s, uint32_t i);
/* node_hooks.on_swap_out */
void links_on_swap_out(void *ctx, struct request *r, int64_t now_ns);
/* Swapped-out requests of node i come back while it has room. */
void links_try_swap_in(struct sim *s, uint32_t i);
/* Scales the ports of a server's nodes and its own (a link fault). */
void links_scale_server(struct sim *s, uint32_t server, double factor);
int links_ev_flow_stale(const struct sim *s, const struct event *ev);
void links_ev_flow(struct sim *s, const struct event *ev);
void links_ev_deliver(struct sim *s, const struct event *ev);

/* --- thermal.c, faults.c --------------------------------------------------- */

/* Node i's temperature now, changing nothing (for sampling). */
double thermal_temp_now(const struct sim *s, uint32_t i);
void thermal_advance_model(struct sim *s, uint32_t i);

/* Brings node i's temperature and throttling to now (inline: every step
 * start calls it, and without the thermal model or throttling it only
 * moves the clock). */
static inline void thermal_advance(struct sim *s, uint32_t i)
{
	struct health *h = &s->hl[i];
	if (s->now <= h->t_ns)
		return;
	if (h->throttled || s->sc->cluster.thermal.enabled)
		thermal_advance_model(s, i);
	else
		h->t_ns = s->now;
}

/* Node i's compute speed from its straggler factor and throttling. */
static inline void thermal_apply_speed(struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	double speed = h->slow * (h->throttled ? s->sc->cluster.thermal.throttle_factor : 1.0);
	s->nodes[i].time_scale = speed == 1.0 ? 1.0 : 1.0 / speed;
}
/* Schedules every fault's start and end events. 0, or -1 (no memory). */
int faults_schedule(struct sim *s);
void faults_ev_fault(struct sim *s, const struct event *ev);

/* --- audit.c -------------------------------------------------------------- */

/* Stops the run (exit 3) with "audit: at t=...: " and the message. */
void audit_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After an event: the nodes it may have touched. */
void audit_event(struct sim *s, const struct event *ev);
/* A prefix past n_shared is cached only where the session ran. */
void audit_private(struct sim *s, uint32_t node, const struct request *r, uint32_t hit);
/* The frontier left after private blocks [from, to) is the one that
 * moving it block by block from `was` gives. */
void audit_frontier(struct sim *s, const struct request *r, struct session_rec was, uint32_t from,
		    uint32_t to);

/* --- runlog.c ------------------------------------------------------------- */

double runlog_wall_now(void);
/* One trace event (ph "X" with dur, "i" instant, "M" metadata); args is a
 * JSON object's inside. A no-op without a trace file. */
void runlog_trace_event(struct sim *s, const char *name, char ph, int pid, int tid, int64_t t_ns,
			int64_t dur_ns, const char *args);
/* The iterations of node i's step that is ending now. */
void runlog_trace_step(struct sim *s, uint32_t i);
/* Opens opts->trace_events (its header, the tracks' names); closes it
 * (its trailer) and renames it into place. 0, or -1 with err. */
int runlog_trace_open(struct sim *s, char *err, size_t errlen);
int runlog_trace_close(struct sim *s, char *err, size_t errlen);
/* Opens path as timeseries.csv and schedules the first sample. 0, or -1
 * with err. */
int runlog_timeseries_open(struct sim *s, const char *path, char *err, size_t errlen);
void runlog_ev_sample(struct sim *s, const struct event *ev);
/* The progress line on stderr. */
void runlog_progress(const struct sim *s, double started);

#endif
