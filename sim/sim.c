/* sim: the event loop, the router's mechanisms and session bookkeeping. */
#define _GNU_SOURCE
#include "sim/sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "results/fmt.h"
#include "results/metrics.h"
#include "results/writer.h"
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
#include "sim/rng.h"
#include "workloads/trace.h"
#include "workloads/workload.h"

#include "version.h" /* generated: build/version.h */

const char *kvsim_version(void)
{
	return KVSIM_VERSION;
}

enum {
	EV_ARRIVAL,
	EV_STEP,
	EV_SAMPLE,
	EV_DISPATCH, /* the routing decision's latency has passed */
	EV_FLOW,     /* a flow's last byte left (node = flow id) */
	EV_DELIVER,  /* a flow's data arrived (node = kind | target << 3) */
	EV_REPORT,   /* nodes send their load reports */
	EV_FAULT,    /* node = fault index * 2 + (0 start, 1 end) */
};
/* What a flow is for. */
enum { FLOW_MIGRATE, FLOW_RELOAD, FLOW_SWAP_OUT, FLOW_WRITE_DOWN };
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

struct sim {
	const struct request *routing; /* the request the policy is routing, or NULL */
	const struct request *pf_arrival; /* the next arrival, prefetched (prefetch_arrival) */
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
	uint32_t *epoch; /* per node: crashes so far */
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
	struct ever_ep *eps;
	uint32_t n_eps, eps_cap;
	int epochs;         /* per epoch (wl_ops.epochs, and not opts->keep_epochs) */
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
	FILE *ts;               /* timeseries.csv (temporary name), or NULL */
	FILE *te;               /* trace events (temporary name), or NULL */
	uint64_t te_count;      /* events written; capped at TE_MAX */
	int64_t sample_ns;      /* its interval */
	int error; /* 3 after an internal failure */
	char *err;
	size_t errlen;
};

#define TE_MAX 2000000
/* With opts->time_routing, the arrivals and dispatches timed: one in this many. */
#define TIME_EVERY 16

/* One trace event; ph "X" (complete, with dur) or "i" (instant). Times in
 * microseconds, as the format wants. args is a JSON object's inside. */
static void trace_event(struct sim *s, const char *name, char ph, int pid, int tid, int64_t t_ns,
			int64_t dur_ns, const char *args)
{
	if (!s->te || s->te_count >= TE_MAX)
		return;
	fprintf(s->te, "%s{\"name\":\"%s\",\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f",
		s->te_count++ ? ",\n" : "", name, ph, pid, tid, (double)t_ns * 1e-3);
	if (ph == 'X')
		fprintf(s->te, ",\"dur\":%.3f", (double)dur_ns * 1e-3);
	else
		fputs(",\"s\":\"t\"", s->te);
	fprintf(s->te, ",\"args\":{%s}}", args);
}

/* The iterations of node i's step that is ending now. */
static void trace_step(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	uint32_t prefills = 0;
	for (uint32_t k = 0; k < n->n_batch; k++)
		prefills += node_entry_prefills(&n->batch[k]);
	int64_t start = n->step_start_ns;
	node_span_used(n);
	for (uint32_t j = 0; j < n->span_len; j++) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"requests\":%u,\"prefills\":%u,\"kv_blocks_used\":%u,\"span\":%u",
			 n->n_batch, j == 0 ? prefills : 0, n->span_used[j], n->span_len);
		trace_event(s, j == 0 && prefills ? "prefill+decode" : "decode", 'X', 1, (int)i, start,
			    n->span_end[j] - start, args);
		start = n->span_end[j];
	}
}

static void fail_with(struct sim *s, int code, const char *what)
{
	if (!s->error) {
		snprintf(s->err, s->errlen, "%s", what);
		s->error = code;
	}
}

static void fail(struct sim *s, const char *what)
{
	fail_with(s, 3, what);
}

/* The computed-before tree of one epoch, and its requests in the system. */
struct ever_ep {
	struct ctree tree;
	uint32_t epoch;
	uint64_t live;
};

/* Epoch e's entry (newest first: the likely one), or UINT32_MAX. */
static uint32_t ep_find(const struct sim *s, uint32_t e)
{
	for (uint32_t i = s->n_eps; i-- > 0;)
		if (s->eps[i].epoch == e)
			return i;
	return UINT32_MAX;
}

/* The tree of r's epoch (there is one while r is in the system), or the
 * only tree when epochs are not in use. */
static struct ctree *ever_tree(struct sim *s, const struct request *r)
{
	return &s->eps[s->epochs ? ep_find(s, r->epoch) : 0].tree;
}

static void ep_forget(struct sim *s, uint32_t i)
{
	s->ever_blocks -= s->eps[i].tree.count;
	ctree_free(&s->eps[i].tree);
	memmove(&s->eps[i], &s->eps[i + 1], (s->n_eps - i - 1) * sizeof *s->eps);
	s->n_eps--;
	s->eps_forgotten++;
}

/* r enters the system, from the source (from_source) or as a follow-up. */
static void ep_arrive(struct sim *s, const struct request *r, int from_source)
{
	if (!s->epochs)
		return;
	uint32_t e = r->epoch;
	if (from_source && e != s->src_epoch) {
		if (e < s->src_epoch) {
			fail(s, "internal error: the workload's epochs went back");
			return;
		}
		s->src_epoch = e;
		/* no more of the earlier ones will come from the source */
		for (uint32_t i = s->n_eps; i-- > 0;)
			if (s->eps[i].live == 0 && s->eps[i].epoch < e)
				ep_forget(s, i);
	}
	uint32_t i = ep_find(s, e);
	if (i != UINT32_MAX) {
		s->eps[i].live++;
		return;
	}
	if (s->n_eps == s->eps_cap) {
		uint32_t cap = 2 * s->eps_cap;
		struct ever_ep *ne = realloc(s->eps, cap * sizeof *ne);
		if (!ne) {
			fail(s, "out of memory");
			return;
		}
		s->eps = ne;
		s->eps_cap = cap;
	}
	struct ever_ep *ep = &s->eps[s->n_eps++];
	ctree_init(&ep->tree);
	ep->epoch = e;
	ep->live = 1;
}

/* r has left the system: its epoch is forgotten if r was its last
 * request and the source has moved past it. */
static void ep_leave(struct sim *s, const struct request *r)
{
	if (!s->epochs)
		return;
	uint32_t i = ep_find(s, r->epoch);
	if (i != UINT32_MAX && --s->eps[i].live == 0 && r->epoch < s->src_epoch)
		ep_forget(s, i);
}

/* The workload returned -1: bad input (exit 2) or no memory (3). */
static void workload_failed(struct sim *s)
{
	const char *why = s->wl->error ? s->wl->error(s->wl_st) : NULL;
	if (why)
		fail_with(s, 2, why);
	else
		fail(s, "out of memory in the workload");
}

/* The engine's per-iteration fields are request.h's first 64 bytes: one
 * cache line, with requests 64-byte aligned. */
_Static_assert(offsetof(struct request, session_rec) + sizeof(void *) <= 64,
	       "struct request: the engine's fields outgrew one cache line");

static struct request *req_get(struct sim *s)
{
	struct request *r = s->free_reqs;
	if (r) {
		s->free_reqs = r->pool_next;
	} else {
		void *p = NULL;
		if (posix_memalign(&p, 64, sizeof *r) != 0) {
			fail(s, "out of memory");
			return NULL;
		}
		r = p;
		r->hashes = NULL;
		r->hashes_cap = 0;
	}
	/* Keep the hash buffer, clear the rest. */
	uint64_t *h = r->hashes;
	uint32_t hc = r->hashes_cap;
	memset(r, 0, sizeof *r);
	r->hashes = h;
	r->hashes_cap = hc;
	r->kv_tail = KV_NONE;
	r->open_from = REQ_TAIL_SHUT;
	r->kv_hint = KV_NONE;
	r->ever_run = CTREE_NONE;
	r->node = -1;
	r->sched_ns = -1;
	return r;
}

static void req_put(struct sim *s, struct request *r)
{
	r->pool_next = s->free_reqs;
	s->free_reqs = r;
}

static struct session_rec *session_get(struct sim *s, uint64_t id)
{
	uint64_t *v = hmap_get(&s->sessions, id);
	if (v)
		return (struct session_rec *)(uintptr_t)*v;
	struct session_rec *rec = s->free_sessions;
	if (rec) {
		s->free_sessions = rec->free_next;
	} else {
		rec = calloc(1, sizeof *rec);
		if (!rec) {
			fail(s, "out of memory");
			return NULL;
		}
	}
	rec->id = id;
	rec->live = 0;
	rec->last_node = -1;
	rec->hint_node = -1;
	rec->n_nodes = 0;
	rec->frontier_len = 0;
	rec->frontier_hash = 0;
	if (hmap_put(&s->sessions, id, (uint64_t)(uintptr_t)rec) < 0) {
		fail(s, "out of memory");
		return NULL;
	}
	return rec;
}

static void session_end(struct sim *s, struct session_rec *rec)
{
	hmap_del(&s->sessions, rec->id);
	rec->id = 0; /* a request still carrying it finds it ended */
	rec->free_next = s->free_sessions;
	s->free_sessions = rec;
}

/* --- health: the thermal model and slow-downs ---------------------------- */

static double power_frac(const struct thermal_cfg *t, const struct health *h)
{
	if (!h->busy)
		return t->idle_power_frac;
	return h->throttled ? t->throttle_factor : 1.0;
}

/* First-order thermal model per node: the GPUs' temperature moves towards
 * ambient + c_per_w * P with time constant tau, P = TDP x (idle fraction,
 * or 1 while an iteration runs, throttle_factor while it runs throttled:
 * lower clocks, lower power). Exact between busy/idle changes, which is
 * when thermal_advance is called. */
static double thermal_temp_now(const struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	const struct thermal_cfg *t = &s->sc->cluster.thermal;
	double dt = (double)(s->now - h->t_ns) * 1e-9;
	double steady = h->ambient_c + t->c_per_w * s->sc->cluster.gpu->tdp_w * power_frac(t, h);
	return steady + (h->temp_c - steady) * exp(-dt / t->tau_s);
}

/* Brings node i's temperature to now; crossing throttle_c starts
 * throttling (compute at throttle_factor), falling below resume_c ends it.
 * Sampling reads thermal_temp_now instead, so that it changes nothing. */
static void thermal_advance(struct sim *s, uint32_t i)
{
	struct health *h = &s->hl[i];
	const struct thermal_cfg *t = &s->sc->cluster.thermal;
	if (s->now <= h->t_ns)
		return;
	if (h->throttled)
		h->throttled_s += (double)(s->now - h->t_ns) * 1e-9;
	if (t->enabled) {
		h->temp_c = thermal_temp_now(s, i);
		if (!h->throttled && h->temp_c >= t->throttle_c)
			h->throttled = 1;
		else if (h->throttled && h->temp_c < t->resume_c)
			h->throttled = 0;
	}
	h->t_ns = s->now;
}

static void apply_speed(struct sim *s, uint32_t i)
{
	const struct health *h = &s->hl[i];
	double speed = h->slow * (h->throttled ? s->sc->cluster.thermal.throttle_factor : 1.0);
	s->nodes[i].time_scale = speed == 1.0 ? 1.0 : 1.0 / speed;
}

/* --- views ---------------------------------------------------------------- */

/* Node i's view, with `used` blocks in use (what node_sync would leave). */
static void refresh_view_used(struct sim *s, uint32_t i, uint32_t used)
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
		v->closed = (double)used > s->sc->router.kv_watermark * n->kv.n_blocks;
		v->temperature_c = h->temp_c;
		v->throttled = h->throttled;
		v->routed_since = 0;
	}
}

static void refresh_view(struct sim *s, uint32_t i)
{
	refresh_view_used(s, i, s->nodes[i].kv.n_used);
}

static void set_up(struct sim *s, uint32_t i, int up)
{
	for (uint32_t k = 0; k < s->n_replicas; k++) {
		struct pol_node_view *v = &s->views[k][i];
		if (v->up && !up)
			s->total_out[k] -= v->outstanding;
		else if (!v->up && up)
			s->total_out[k] += v->outstanding;
		v->up = up;
		if (up)
			lh_insert(&s->lheap[k], i);
		else
			lh_remove(&s->lheap[k], i);
	}
	s->n_up += up ? 1 : -1;
}

static void count_dispatch(struct sim *s, const struct request *r, uint32_t node)
{
	struct pol_node_view *v = &s->views[r->replica][node];
	v->outstanding++;
	v->routed_since++;
	if (v->up)
		s->total_out[r->replica]++;
	lh_fix(&s->lheap[r->replica], node);
}

static void count_done(struct sim *s, const struct request *r, uint32_t node)
{
	struct pol_node_view *v = &s->views[r->replica][node];
	v->outstanding--;
	if (v->up)
		s->total_out[r->replica]--;
	lh_fix(&s->lheap[r->replica], node);
}

/* --- node stepping -------------------------------------------------------- */

/* A flow-end event superseded by a later one for its flow (a new rate):
 * skipped, not delivered. (A node's step end is a timer of the event queue:
 * a span cut short or a crash replaces or clears it in place.) */
static int stale(const struct sim *s, const struct event *ev)
{
	if (ev->kind == EV_FLOW)
		return ev->seq != s->net.f[ev->node].ev_seq;
	return 0;
}

/* Sets node i's step-end timer (replacing the one it had, if any). */
static void schedule_step(struct sim *s, uint32_t i)
{
	evq_timer_set(&s->q, i, s->nodes[i].step_end_ns);
}

static void offload_cold(struct sim *s, uint32_t i);
static void try_swap_in(struct sim *s, uint32_t i);

static void kick(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (!n->busy) {
		thermal_advance(s, i);
		apply_speed(s, i);
		if (node_start_step(n, s->now) > 0)
			schedule_step(s, i);
		s->hl[i].busy = n->busy;
	}
	offload_cold(s, i);
	if (s->report_ns == 0)
		refresh_view(s, i);
	if (s->swq_head[i] && !s->in_swap_in)
		try_swap_in(s, i);
}

/* Enqueues r on node i (at the head for a swapped-in request); an arrival
 * cuts a decode span short, which moves the node's step-end event earlier. */
static void enqueue(struct sim *s, uint32_t i, struct request *r)
{
	struct node *n = &s->nodes[i];
	int front = r->swapped;
	r->swapped = 0;
	if (front ? node_enqueue_front(n, r, s->now) : node_enqueue(n, r, s->now))
		schedule_step(s, i); /* replaces the later step end */
	kick(s, i);
}

static void schedule_arrival(struct sim *s, struct request *r, int from_source)
{
	ep_arrive(s, r, from_source);
	s->pending_arrivals++;
	if (!evq_push(&s->q, r->arrival_ns, EV_ARRIVAL, from_source, r))
		fail(s, "out of memory");
}

/* Pulls the source's next open-loop arrival, unless past the horizon. */
static void pull_source(struct sim *s)
{
	struct request *r = req_get(s);
	if (!r)
		return;
	int got = s->wl->next(s->wl_st, r);
	if (got < 0)
		workload_failed(s);
	if (got == 1 && r->arrival_ns <= s->end_arrivals_ns)
		schedule_arrival(s, r, 1);
	else
		req_put(s, r);
}

static double recompute_cost_s(const struct sim *s, const struct request *r)
{
	uint32_t n = r->recomputed + r->preempt_recomputed;
	if (n == 0)
		return 0;
	return s->cost.tp * cost_prefill_s(&s->cost, n, r->cached + r->migrated + r->reloaded);
}

static void *pol_state(const struct sim *s, const struct request *r)
{
	/* one state: r->replica is not read (from the arrival prefetch, its
	 * line may still be on its way) */
	if (s->n_pol_st == 1)
		return s->pol_sts[0];
	return s->pol_sts[r->replica < s->n_pol_st ? r->replica : 0];
}

/* A request has ended: record it, let the policy and the workload know, and
 * schedule the session's next turn, if any. */
static void finish(struct sim *s, struct request *r)
{
	/* the workload's record of the session, which its follow-up reads
	 * first: cold since the turn began; its miss overlaps the metrics */
	if (r->wl_session)
		__builtin_prefetch(r->wl_session);
	if (met_record(&s->met, r, recompute_cost_s(s, r)))
		fail(s, "out of memory");
	if (s->opts->on_request)
		s->opts->on_request(s->opts->ctx, r);
	int completed = r->state == REQ_DONE, session_done = 1;
	if (s->wl->follow_up) {
		struct request *next = req_get(s);
		if (!next)
			return;
		/* The next turn continues r's hash chain in r's buffer: its
		 * history is not copied (the copy's cache misses were a fifth
		 * of a chat run's). r keeps next's spare buffer, no hashes. */
		uint64_t *spare = next->hashes;
		uint32_t spare_cap = next->hashes_cap;
		next->hashes = r->hashes;
		next->hashes_cap = r->hashes_cap;
		int got = s->wl->follow_up(s->wl_st, r, completed, s->now, next);
		r->hashes = spare;
		r->hashes_cap = spare_cap;
		r->n_hashes = 0;
		if (got < 0)
			workload_failed(s);
		if (got == 1 && next->arrival_ns <= s->end_arrivals_ns) {
			if (next->session == r->session)
				next->session_rec = r->session_rec;
			schedule_arrival(s, next, 0);
			session_done = 0;
		} else {
			req_put(s, next);
		}
	}
	if (s->pol->on_complete)
		s->pol->on_complete(pol_state(s, r), r, completed ? r->node : -1, session_done);
	/* A session ends with its last request: a trace may give one session
	 * two requests at once, and the other still uses the record. */
	struct session_rec *rec = r->session_rec;
	if (rec && completed && rec->id == r->session) {
		rec->hint_node = r->node;
		rec->hint_run = r->kv_hint;
		rec->hint_key = r->kv_hint_key;
		rec->hint_depth = r->kv_hint_depth;
	}
	if (rec && --rec->live == 0 && session_done)
		session_end(s, rec);
	ep_leave(s, r);
	req_put(s, r);
}

static void reject(struct sim *s, struct request *r, enum req_state st, const char *reason)
{
	r->state = st;
	r->reason = reason;
	finish(s, r);
}

/* --- links: flows, ports, tiers --------------------------------------------- */

/* Ports: node i has its NVLink port (2i) and its NIC (2i + 1); server k
 * has its PCIe path to host DRAM (2N + 2k) and its NVMe device (+1). */
static uint32_t port_nvlink(const struct sim *s, uint32_t i) { (void)s; return 2 * i; }
static uint32_t port_nic(const struct sim *s, uint32_t i) { (void)s; return 2 * i + 1; }
static uint32_t port_host(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k; }
static uint32_t port_nvme(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k + 1; }

/* Reschedules the end events of flows whose rates changed. */
static void flows_changed(struct sim *s)
{
	if (s->changed_cap < s->net.n_active) {
		uint32_t cap = s->net.cap_f;
		uint32_t *c = realloc(s->changed, cap * sizeof *c);
		if (!c) {
			fail(s, "out of memory");
			return;
		}
		s->changed = c;
		s->changed_cap = cap;
	}
	uint32_t n = flow_update(&s->net, s->now, s->changed);
	for (uint32_t k = 0; k < n; k++) {
		struct flow *f = &s->net.f[s->changed[k]];
		int64_t end = flow_end_ns(&s->net, s->changed[k], s->now);
		f->ev_seq = end == INT64_MAX ? 0
					     : evq_push(&s->q, end, EV_FLOW, (int32_t)s->changed[k], NULL);
	}
}

static int start_flow(struct sim *s, int kind, struct request *r, int32_t target,
		      const uint32_t *ports, uint32_t n_ports, double bytes, double latency_s)
{
	uint32_t id = flow_add(&s->net, s->now, ports, n_ports, bytes,
			       (int64_t)llround(latency_s * 1e9));
	if (id == UINT32_MAX) {
		fail(s, "out of memory");
		return -1;
	}
	struct flow *f = &s->net.f[id];
	f->kind = kind;
	f->ptr = r;
	f->a = target;
	if (r)
		r->pending++;
	flows_changed(s);
	return 0;
}

/* The time a transfer over these ports would take if it started now. */
static double estimate_s(const struct sim *s, const uint32_t *ports, uint32_t n, double bytes,
			 double latency_s)
{
	return latency_s + bytes / flow_estimate_rate(&s->net, ports, n);
}

/* HBM evicted a cached block: write it down to the server's DRAM (or NVMe)
 * tier. The copy is batched per server and sent after the event. */
static void mark_dirty(struct sim *s, uint32_t k)
{
	if (!s->is_dirty[k]) {
		s->is_dirty[k] = 1;
		s->dirty[s->n_dirty++] = k;
	}
}

static void on_hbm_evict(void *ctx, uint64_t hash)
{
	struct evict_ctx *e = ctx;
	struct sim *s = e->s;
	/* A block the tier already holds (same hash: same content) is only
	 * marked recently used, not written again. */
	struct pidx *tier = s->has_dram ? &s->dram : &s->nvme;
	int had = pidx_has(tier, e->server, hash);
	if (pidx_insert(tier, e->server, &hash, 1))
		fail(s, "out of memory");
	if (had)
		return;
	if (s->has_dram)
		s->wd_host[e->server] += s->block_bytes;
	else
		s->wd_nvme[e->server] += s->block_bytes;
	s->offload_out += s->block_bytes;
	mark_dirty(s, e->server);
}

/* DRAM is full: its least recently written block moves on to NVMe. */
static void on_dram_evict(void *ctx, uint32_t server, uint64_t hash)
{
	struct sim *s = ctx;
	if (!s->has_nvme)
		return;
	if (pidx_insert(&s->nvme, server, &hash, 1))
		fail(s, "out of memory");
	s->wd_nvme[server] += s->block_bytes;
	mark_dirty(s, server);
}

static void flush_write_downs(struct sim *s)
{
	for (uint32_t j = 0; j < s->n_dirty; j++) {
		uint32_t k = s->dirty[j];
		s->is_dirty[k] = 0;
		if (s->wd_host[k] > 0) {
			uint32_t p = port_host(s, k);
			start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, &p, 1, s->wd_host[k],
				   s->sc->cluster.host->latency_s);
		}
		if (s->wd_nvme[k] > 0) {
			uint32_t p[2] = {port_nvme(s, k), port_host(s, k)};
			start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, p, 2, s->wd_nvme[k],
				   s->sc->cluster.nvme->latency_s);
		}
		s->wd_host[k] = s->wd_nvme[k] = 0;
	}
	s->n_dirty = 0;
}

/* Preemptive offload: while a node's KV (in use plus cached) is above
 * router.kv_watermark, its least recently used cached blocks (cold
 * sessions' KV) go down to the tiers, so that admissions find free blocks
 * instead of evicting on the critical path. */
static void offload_cold(struct sim *s, uint32_t i)
{
	struct kv_pool *kv = &s->nodes[i].kv;
	if (!s->has_dram && !s->has_nvme)
		return;
	double mark = s->sc->router.kv_watermark * kv->n_blocks;
	double held = (double)kv->n_used + kv->n_cached;
	if (held <= mark || s->sc->router.kv_watermark >= 1)
		return;
	node_sync(&s->nodes[i], s->now);
	uint32_t excess = (uint32_t)ceil((double)kv->n_used + kv->n_cached - mark);
	kv_evict(kv, excess);
}

/* --- routing and state movement ---------------------------------------------- */

static void route(struct sim *s, struct request *r);

/* r's node failed (or was down when r got there): route it again from
 * scratch, up to router.max_retries times; its KV is lost, so what it had
 * computed counts as recomputed when it runs again. */
static void retry(struct sim *s, struct request *r)
{
	if (r->node >= 0)
		count_done(s, r, (uint32_t)r->node);
	r->retries++;
	s->retries++;
	if (r->retries > (uint32_t)s->sc->router.max_retries) {
		reject(s, r, REQ_FAILED, "node_failure");
		return;
	}
	req_episode_end(r);
	r->state = REQ_NEW;
	r->node = -1;
	r->num_tokens = r->prompt_tokens;
	r->num_computed = r->generated = r->high_water = 0;
	r->kv_tail = KV_NONE;
	r->n_blocks = r->n_own = 0;
	r->mig_lo = r->mig_hi = r->rel_lo = r->rel_hi = 0;
	r->accounted = 0;
	r->swapped = 0;
	r->sched_ns = -1;
	r->first_token_ns = 0;
	route(s, r);
}

static const struct cat_link *link_between(const struct sim *s, uint32_t a, uint32_t b,
					   uint32_t *ports)
{
	int same = s->nodes[a].server == s->nodes[b].server;
	ports[0] = same ? port_nvlink(s, a) : port_nic(s, a);
	ports[1] = same ? port_nvlink(s, b) : port_nic(s, b);
	return same ? s->sc->cluster.intra_server : s->sc->cluster.inter_server;
}

/* Node i's KV changes from outside: a decode span in progress ends after
 * its current iteration, so the rest is planned with the change. */
static void cut_span(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (node_cut_span(n, s->now))
		schedule_step(s, i); /* replaces the later step end */
}

/* Pins the prefix m of node i for r while its transfer runs, so that the
 * blocks it arrives after are still there. */
static void pin(struct sim *s, struct request *r, uint32_t i, const struct kv_match *m)
{
	cut_span(s, i); /* no change to the pool: the node is synced already */
	r->kv_tail = kv_acquire(&s->nodes[i].kv, m);
	r->pin_epoch = s->epoch[i];
}

/* Releases the pin; 0, or -1 if the node crashed since (the pin is gone
 * with its cache). */
static int unpin(struct sim *s, struct request *r, uint32_t i)
{
	if (r->pin_epoch != s->epoch[i]) {
		r->kv_tail = KV_NONE;
		return -1;
	}
	if (r->kv_tail != KV_NONE) {
		cut_span(s, i);
		kv_release(&s->nodes[i].kv, r->kv_tail, 0);
	}
	r->kv_tail = KV_NONE;
	return 0;
}

/* Decides whether to bring the session's KV from the node it last ran on.
 * Returns 1 if a transfer was started (the request waits for it). */
static int maybe_migrate(struct sim *s, struct request *r, uint32_t dst, enum pol_kv kv)
{
	struct session_rec *rec = r->session_rec;
	const struct scenario *sc = s->sc;
	if (!rec || rec->last_node < 0 || (uint32_t)rec->last_node == dst ||
	    !sc->cluster.engine.prefix_caching || !s->views[0][rec->last_node].up)
		return 0;
	uint32_t B = (uint32_t)sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->prompt_tokens / B;
	if (full > r->n_hashes)
		full = r->n_hashes;
	uint32_t src_i = (uint32_t)rec->last_node;
	struct node *src = &s->nodes[src_i], *dn = &s->nodes[dst];
	struct kv_match m_dst, m_src;
	/* the two nodes' syncs and lookups are independent: their misses
	 * are started together (the nodes' fields; then the first probes,
	 * and the run where the session's turn before ended on src) */
	node_prefetch_sync(dn, s->now, 0);
	node_prefetch_sync(src, s->now, 0);
	if (full) {
		hmap_prefetch(&dn->kv.first, r->hashes[0]);
		hmap_prefetch(&src->kv.first, r->hashes[0]);
	}
	if (rec->hint_node == (int32_t)src_i)
		kv_prefetch_run_lines(&src->kv, rec->hint_run);
	node_sync(dn, s->now);
	/* then, each once the lines before are in, what the lookups read
	 * next: on dn the run its first probe finds and what matching it
	 * reads, on src the hinted run's slot and last hash */
	if (full)
		kv_prefetch_first(&dn->kv, r->hashes, full, 0);
	node_sync(src, s->now);
	if (rec->hint_node == (int32_t)src_i)
		kv_prefetch_run(&src->kv, rec->hint_run, rec->hint_key, rec->hint_depth, r->hashes,
				full);
	if (full)
		kv_prefetch_first(&dn->kv, r->hashes, full, 1);
	node_lookup(dn, r->hashes, full, &m_dst);
	node_lookup(src, r->hashes, full, &m_src);
	uint32_t have = m_dst.blocks, there = m_src.blocks;
	if (there <= have)
		return 0;
	double tokens = (double)(there - have) * B;
	double bytes = tokens * s->block_bytes / B;
	uint32_t ports[2];
	const struct cat_link *link = link_between(s, src_i, dst, ports);
	double t_xfer = estimate_s(s, ports, 2, bytes, link->latency_s);
	double t_recompute = cost_prefill_s(&s->cost, tokens, (double)have * B);
	enum migration_mode mode = kv == POL_KV_TRANSFER	    ? MIG_TRANSFER
				   : kv == POL_KV_RECOMPUTE ? MIG_RECOMPUTE
							     : sc->router.migration;
	if (mode == MIG_RECOMPUTE || (mode == MIG_AUTO && t_xfer >= t_recompute))
		return 0;
	r->mig_lo = have;
	r->mig_hi = there;
	r->state = REQ_TRANSFER;
	r->node = (int32_t)dst;
	r->xfer_start_ns = s->now;
	pin(s, r, dst, &m_dst);
	s->migrations++;
	s->migration_bytes += bytes;
	if (s->te) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"from\":%d,\"to\":%u,\"bytes\":%.0f,\"link\":\"%s\"",
			 (unsigned long long)r->id, rec->last_node, dst, bytes, link->name);
		int64_t t_ns = (int64_t)llround(t_xfer * 1e9);
		trace_event(s, "kv transfer", 'X', 2, (int)dst, s->now, t_ns > 0 ? t_ns : 1, args);
	}
	start_flow(s, FLOW_MIGRATE, r, (int32_t)dst, ports, 2, bytes, link->latency_s);
	return 1;
}

/* Prefix blocks that dst's HBM lacks but its server's DRAM or NVMe tier
 * holds are reloaded before prefill when that is quicker than computing
 * them. Returns 1 if reload transfers were started. */
static int maybe_reload(struct sim *s, struct request *r, uint32_t dst)
{
	if ((!s->has_dram && !s->has_nvme) || !s->sc->cluster.engine.prefix_caching)
		return 0;
	uint32_t B = (uint32_t)s->sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->swapped ? r->high_water / B : r->prompt_tokens / B;
	if (full > r->n_hashes)
		full = r->n_hashes;
	struct node *n = &s->nodes[dst];
	struct kv_match m;
	node_sync(n, s->now);
	node_lookup(n, r->hashes, full, &m);
	uint32_t server = (uint32_t)n->server, j = m.blocks, from_dram = 0, from_nvme = 0;
	for (; j < full; j++) {
		if (s->has_dram && pidx_has(&s->dram, server, r->hashes[j]))
			from_dram++;
		else if (s->has_nvme && pidx_has(&s->nvme, server, r->hashes[j]))
			from_nvme++;
		else
			break;
	}
	if (j == m.blocks)
		return 0;
	uint32_t host = port_host(s, server), nv[2] = {port_nvme(s, server), host};
	double t = 0;
	if (from_dram)
		t = estimate_s(s, &host, 1, from_dram * s->block_bytes, s->sc->cluster.host->latency_s);
	if (from_nvme) {
		double t2 = estimate_s(s, nv, 2, from_nvme * s->block_bytes,
				       s->sc->cluster.nvme->latency_s);
		t = t2 > t ? t2 : t;
	}
	if (!r->swapped && t >= cost_prefill_s(&s->cost, (double)(j - m.blocks) * B,
					       (double)m.blocks * B))
		return 0;
	r->rel_lo = m.blocks;
	r->rel_hi = j;
	r->state = REQ_TRANSFER;
	r->node = (int32_t)dst;
	pin(s, r, dst, &m);
	if (from_dram)
		start_flow(s, FLOW_RELOAD, r, (int32_t)dst, &host, 1, from_dram * s->block_bytes,
			   s->sc->cluster.host->latency_s);
	if (from_nvme)
		start_flow(s, FLOW_RELOAD, r, (int32_t)dst, nv, 2, from_nvme * s->block_bytes,
			   s->sc->cluster.nvme->latency_s);
	s->offload_in += (double)(j - m.blocks) * s->block_bytes;
	return 1;
}

/* r is at its node (after the routing latency): bring its KV, or queue it. */
static void arrive_at_node(struct sim *s, struct request *r, uint32_t dst, enum pol_kv kv)
{
	if (!s->views[0][dst].up) {
		retry(s, r);
		return;
	}
	int moving = maybe_migrate(s, r, dst, kv);
	if (!moving)
		moving = maybe_reload(s, r, dst);
	struct session_rec *rec = r->session_rec;
	rec->last_node = (int32_t)dst;
	if (rec->n_nodes >= 0) {
		int32_t k = 0;
		while (k < rec->n_nodes && rec->nodes[k] != (int32_t)dst)
			k++;
		if (k == rec->n_nodes && k < SESSION_NODES)
			rec->nodes[rec->n_nodes++] = (int32_t)dst;
		else if (k == rec->n_nodes)
			rec->n_nodes = -1; /* too many to list: any node */
	}
	if (!moving) {
		if (rec->hint_node == (int32_t)dst)
			node_hint_admission(&s->nodes[dst], r, rec->hint_run, rec->hint_key,
					    rec->hint_depth);
		enqueue(s, dst, r);
	}
}

/* Whether node i is above the KV watermark (closed to new sessions): as
 * of the last load report, or exactly now with exact views. */
static int closed(struct sim *s, const struct pol_node_view *v, uint32_t i)
{
	if (s->report_ns > 0)
		return v[i].closed;
	struct node *n = &s->nodes[i];
	node_sync(n, s->now);
	return (double)n->kv.n_used > s->sc->router.kv_watermark * n->kv.n_blocks;
}

/* The up node with the fewest waiting requests under limit (open to new
 * sessions when need_open), or -1. */
static int32_t least_queued(struct sim *s, const struct pol_node_view *v, uint32_t limit,
			    int need_open)
{
	int32_t best = -1;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if (!v[i].up || s->nodes[i].n_waiting >= limit || (need_open && closed(s, v, i)))
			continue;
		if (best < 0 || s->nodes[i].n_waiting < s->nodes[best].n_waiting)
			best = (int32_t)i;
	}
	return best;
}

/* pol_view.private_nodes: where r's session ran, when its private blocks
 * are its own. */
static int private_nodes(void *ctx, const struct request *r, const int32_t **nodes)
{
	const struct sim *s = ctx;
	const struct session_rec *rec = r->session_rec;
	if (!s->wl->private_own || !rec || rec->id != r->session)
		return -1;
	*nodes = rec->nodes;
	return rec->n_nodes;
}

static void audit_fail(struct sim *s, const char *fmt, ...);

/* --audit: a prefix past n_shared is cached only where the session ran. */
static void audit_private(struct sim *s, uint32_t node, const struct request *r, uint32_t hit)
{
	const int32_t *nodes;
	int n = private_nodes(s, r, &nodes);
	if (n < 0 || hit <= r->n_shared)
		return;
	for (int k = 0; k < n; k++)
		if (nodes[k] == (int32_t)node)
			return;
	audit_fail(s, "request %llu finds %u blocks cached on node %u, past its %u shared ones, "
		      "but its session never ran there",
		   (unsigned long long)r->id, hit, node, r->n_shared);
}

/* The exact index: r's prompt blocks in node's HBM now. */
static uint32_t cached_prefix(void *ctx, uint32_t node, const struct request *r)
{
	struct sim *s = ctx;
	struct node *n = &s->nodes[node];
	if (!n->prefix_caching)
		return 0;
	s->kv_lookups++;
	uint32_t full = node_full_blocks(n, r->prompt_tokens);
	if (full > r->n_hashes)
		full = r->n_hashes;
	struct kv_match m;
	uint32_t evicts = 0;
	int settled = s->lazy_views ? node_cache_settled(n, s->now, &evicts) : 0;
	if (settled != 0) {
		/* Where the part of the span not applied would evict, it can
		 * only evict unlocked runs (nothing is released inside a span):
		 * a match through locked runs alone stands, and so does one
		 * whose blocks the evictions, taken in order, do not reach. */
		node_lookup(n, r->hashes, full, &m);
		int spared = settled < 0 && m.unlocked > 0 && kv_evict_spares(&n->kv, evicts, &m);
		if (settled == 1 || m.unlocked == 0 || spared) {
			s->kv_unapplied += s->now >= n->sync_due_ns;
			s->kv_locked += settled < 0 && !spared;
			s->kv_spared += spared;
			if (s->opts->audit)
				audit_private(s, node, r, m.blocks);
			return m.blocks;
		}
		s->kv_evicting++;
	}
	node_sync(n, s->now);
	node_lookup(n, r->hashes, full, &m);
	if (s->opts->audit)
		audit_private(s, node, r, m.blocks);
	return m.blocks;
}

static double wall_now(void);

/* Node i's KV figures in the views as of now: counted where its span
 * allows (node_kv_used), else by applying the span. */
static void sync_view(struct sim *s, uint32_t i)
{
	uint32_t used;
	if (s->lazy_views && node_kv_used(&s->nodes[i], s->now, &used)) {
		s->kv_counted += used != s->nodes[i].kv.n_used;
		refresh_view_used(s, i, used);
		return;
	}
	node_sync(&s->nodes[i], s->now);
	refresh_view(s, i);
}

/* The nodes' KV figures in the views, brought up to now (exact reports
 * only). At 1,024 nodes a node's state is out of cache when a policy
 * samples it, so the misses of all of them are started first: the nodes'
 * fields, then what a sync reads through them and the first probe of the
 * routed request's cache lookup there. */
static void prefetch_kv(void *ctx, const uint32_t *nodes, uint32_t m)
{
	struct sim *s = ctx;
	if (s->report_ns != 0)
		return;
	double t0 = s->timing ? wall_now() : 0;
	const struct request *r = s->routing;
	/* the node where the session's turn before ended: its lookup there
	 * likely reaches that turn's tail run (node_hint_admission) */
	const struct session_rec *rec = r ? r->session_rec : NULL;
	int32_t hint = rec && rec->id == r->session ? rec->hint_node : -1;
	if (hint >= 0 && !s->nodes[hint].prefix_caching)
		hint = -1;
	for (uint32_t x = 0; x < m; x++) {
		const struct node *n = &s->nodes[nodes[x]];
		node_prefetch_sync(n, s->now, 0);
		if ((int32_t)nodes[x] == hint)
			kv_prefetch_run_lines(&n->kv, rec->hint_run);
	}
	for (uint32_t x = 0; x < m; x++) {
		const struct node *n = &s->nodes[nodes[x]];
		node_prefetch_sync(n, s->now, 1);
		if (r && r->n_hashes && n->prefix_caching) /* cached_prefix's first probe */
			hmap_prefetch(&n->kv.first, r->hashes[0]);
		if ((int32_t)nodes[x] == hint)
			kv_prefetch_run(&n->kv, rec->hint_run, rec->hint_key, rec->hint_depth, r->hashes,
					r->n_hashes);
	}
	/* the other nodes' lookups: the run the first probe finds, then
	 * what matching it reads (each stage waits on the lines the one
	 * before fetched, overlapped across the nodes: for one node alone,
	 * as a full scan asks, they would only come before the lookup's
	 * own, or for a lookup its floor then skips) */
	for (int stage = 0; m > 1 && r && r->n_hashes && stage < 2; stage++)
		for (uint32_t x = 0; x < m; x++) {
			const struct node *n = &s->nodes[nodes[x]];
			if ((int32_t)nodes[x] != hint && n->prefix_caching)
				kv_prefetch_first(&n->kv, r->hashes, r->n_hashes, stage);
		}
	if (s->timing)
		s->sync_ns += (wall_now() - t0) * 1e9;
}

static void sync_kv(void *ctx, const uint32_t *nodes, uint32_t m)
{
	struct sim *s = ctx;
	if (s->report_ns != 0)
		return;
	prefetch_kv(ctx, nodes, m);
	double t0 = s->timing ? wall_now() : 0;
	for (uint32_t x = 0; x < m; x++)
		sync_view(s, nodes[x]);
	s->kv_synced += m;
	if (s->timing)
		s->sync_ns += (wall_now() - t0) * 1e9;
}

/* pol_view.kv_used_floor (exact reports): the blocks in use as last
 * applied, which sync_view can only raise (inside a decode span nothing
 * is released; the span's takes are what it adds). */
static uint32_t kv_used_floor(void *ctx, uint32_t node)
{
	const struct sim *s = ctx;
	return s->nodes[node].kv.n_used;
}

static int32_t least_outstanding(const void *lctx)
{
	return lh_min(lctx);
}


/* The router's mechanisms around the policy's choice, then dispatch. */
static void route(struct sim *s, struct request *r)
{
	struct pol_node_view *view = s->views[r->replica];
	if (s->pol_reads_kv_util == POL_READS_KV_ALL && s->report_ns == 0) {
		/* KV use grows inside decode spans; bring every node up to now,
		 * or count what that would leave where the span allows it (the
		 * policy reads only the counts; a node whose cache it looks up
		 * is brought up to date then, in cached_prefix, unless that
		 * would change nothing the lookup sees). */
		double t0 = s->timing ? wall_now() : 0;
		for (uint32_t i = 0; i < s->n_nodes; i++)
			sync_view(s, i);
		s->kv_synced += s->n_nodes;
		if (s->timing)
			s->sync_ns += (wall_now() - t0) * 1e9;
	}
	struct pol_view v = {s->n_nodes, view,		    s->now,
			     s->n_up,	  s->total_out[r->replica], cached_prefix,
			     s,		  least_outstanding,	    &s->lheap[r->replica],
			     sync_kv,	  s->opts->no_private_nodes ? NULL : private_nodes,
			     s->report_ns == 0 && !s->opts->no_kv_floor ? kv_used_floor : NULL,
			     prefetch_kv};
	struct pol_decision d = {POL_SHED, -1, POL_KV_DEFAULT, "no_decision", 0, 0, 0};
	s->routing = r;
	s->pol->route(pol_state(s, r), &v, r, &d);
	s->routing = NULL;
	if (s->te) {
		char args[200];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"session\":%llu,\"turn\":%u,\"node\":%d,\"decision\":\"%s\"",
			 (unsigned long long)r->id, (unsigned long long)r->session, r->turn, d.node,
			 d.action == POL_SHED ? (d.reason ? d.reason : "shed") : "route");
		trace_event(s, "route", 'i', 0, 0, s->now, 0, args);
	}
	if (d.action == POL_SHED || d.node < 0 || (uint32_t)d.node >= s->n_nodes ||
	    !view[d.node].up) {
		reject(s, r, REQ_SHED, d.action == POL_SHED && d.reason ? d.reason : "policy");
		return;
	}
	uint32_t dst = (uint32_t)d.node;
	const struct session_rec *rec = r->session_rec;
	int new_session = r->turn <= 1 && rec->last_node < 0;
	/* A node above the KV watermark takes no new sessions. */
	if (new_session && closed(s, view, dst)) {
		int32_t alt = least_queued(s, view, UINT32_MAX, 1);
		if (alt < 0) {
			reject(s, r, REQ_SHED, "kv_watermark");
			return;
		}
		dst = (uint32_t)alt;
	}
	/* Bounded queues: past its node's bound a request goes to the node with
	 * the shortest queue under the bound; new sessions meet a lower bound,
	 * so under overload they are shed before continuing sessions. */
	uint32_t bound = (uint32_t)s->sc->router.max_queue_per_node;
	if (new_session)
		bound = (uint32_t)floor(s->sc->router.new_session_queue_frac * bound);
	if (s->nodes[dst].n_waiting >= bound) {
		int32_t alt = least_queued(s, view, bound, new_session);
		if (alt < 0) {
			reject(s, r, REQ_SHED, new_session ? "overload_new_session" : "queue_full");
			return;
		}
		dst = (uint32_t)alt;
	}
	r->node = (int32_t)dst;
	if ((uint64_t)r->prompt_tokens + r->output_tokens > (uint64_t)s->sc->cluster.model->max_context) {
		reject(s, r, REQ_FAILED, "exceeds_context");
		return;
	}
	struct node *n = &s->nodes[dst];
	if (node_blocks_for(n, (uint64_t)r->prompt_tokens + r->output_tokens) > n->kv.n_blocks) {
		reject(s, r, REQ_FAILED, "exceeds_kv_capacity");
		return;
	}
	r->num_tokens = r->prompt_tokens;
	if (s->pol->on_dispatch)
		s->pol->on_dispatch(pol_state(s, r), r, (int32_t)dst);
	count_dispatch(s, r, dst);
	/* The decision's own latency: hashing the prompt, the affinity store. */
	const struct router_cfg *rc = &s->sc->router;
	double lat = d.hashed_tokens * rc->hash_s_per_token + d.store_reads * rc->store_read_s +
		     d.store_writes * rc->store_write_s;
	int64_t lat_ns = (int64_t)llround(lat * 1e9);
	if (lat_ns > 0) {
		r->state = REQ_TRANSFER;
		r->mig_lo = (uint32_t)d.kv; /* carried to the dispatch */
		if (!evq_push(&s->q, s->now + lat_ns, EV_DISPATCH, (int32_t)dst, r))
			fail(s, "out of memory");
		return;
	}
	if (s->timing) {
		double t0 = wall_now();
		arrive_at_node(s, r, dst, d.kv);
		s->arrive_ns += (wall_now() - t0) * 1e9;
		return;
	}
	arrive_at_node(s, r, dst, d.kv);
}

/* The lines of r's block hashes that its admission lookup and its first
 * commit read, as most requests go (written when the request was filled,
 * the turn before's end): the first probe's, either side of the shared
 * head's end (the first run's last hash and the next probe), and the
 * prompt's last PF_TAIL_BLOCKS blocks (where a follow-up's cached prefix
 * ends, and the new blocks it commits). A miss in the middle of a long
 * history is skipped: a lookup that matches a run whole reads its last
 * hash only. Prefetches only. */
enum { PF_TAIL_BLOCKS = 32 };
static void prefetch_prompt_hashes(const struct sim *s, const struct request *r)
{
	/* (every node has the engine's block size) */
	uint32_t n = node_full_blocks(&s->nodes[0], r->prompt_tokens);
	if (n > r->n_hashes)
		n = r->n_hashes;
	if (n == 0)
		return;
	const uint64_t *h = r->hashes;
	__builtin_prefetch(h);
	if (r->n_shared > 0 && r->n_shared < n) {
		__builtin_prefetch(h + r->n_shared - 1);
		__builtin_prefetch(h + r->n_shared);
	}
	for (uint32_t b = n > PF_TAIL_BLOCKS ? n - PF_TAIL_BLOCKS : 0; b < n; b += 8)
		__builtin_prefetch(h + b);
	__builtin_prefetch(h + n - 1);
}

/* The next arrival's request and session record are cold when it pops
 * (the request was filled when its turn before ended, seconds of
 * simulated time and thousands of events ago). While an arrival is the
 * heap's earliest event, each event before it starts the misses: first
 * the request's lines, at the next event the session record it names
 * (read from the line fetched meanwhile), the policy's state for it
 * (pol_ops.prefetch) and the lines of its block hashes its admission
 * reads (prefetch_prompt_hashes). Prefetches only. */
static void prefetch_arrival(struct sim *s)
{
	const struct event *nx = evq_heap_top(&s->q);
	if (!nx || nx->kind != EV_ARRIVAL || !nx->ptr)
		return;
	const struct request *r = nx->ptr;
	if (r != s->pf_arrival) {
		/* all its lines: the arrival reads or writes each (its id and
		 * session, arrival time and node, replica and queue times, the
		 * prompt's split, the queue links) */
		for (size_t b = 0; b < sizeof *r; b += 64)
			__builtin_prefetch((const char *)r + b, 1);
		__builtin_prefetch((const char *)r + sizeof *r - 1, 1);
		s->pf_arrival = r;
		s->pf_second = NULL;
	} else if (r != s->pf_second) {
		/* once: the line fetched meanwhile names the session */
		s->pf_second = r;
		if (r->session_rec)
			__builtin_prefetch(r->session_rec, 1);
		else /* a first turn: session_get inserts it */
			hmap_prefetch(&s->sessions, r->session);
		if (s->pol->prefetch)
			s->pol->prefetch(pol_state(s, r), r);
		prefetch_prompt_hashes(s, r);
	}
}

static void on_arrival(struct sim *s, struct request *r, int from_source)
{
	r->id = ++s->next_id;
	s->met.arrived++;
	s->pending_arrivals--;
	if (from_source)
		pull_source(s);
	/* a later turn carries its session's record from the turn before
	 * (finish), unless the session ended meanwhile */
	const struct session_rec *had = r->session_rec;
	if (!had || had->id != r->session)
		r->session_rec = session_get(s, r->session);
	struct session_rec *rec = r->session_rec;
	if (!rec)
		return;
	if (++rec->live > 1 && s->fold) {
		/* the same reason for prefills' spans: one request's prefill
		 * would move the frontier while the other reads it. From here
		 * on none opens a span, and those that did are applied now
		 * (what a folded prefill committed is then in the frontier). */
		s->fold = 0;
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			s->nodes[i].fold_ok = 0;
			node_sync(&s->nodes[i], s->now);
		}
	}
	if (rec->live > 1 && s->defer) {
		/* the same reason for held-back commits: they are committed
		 * now (as if each block when filled), and none from here on */
		s->defer = 0;
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			s->nodes[i].defer_commits = 0;
			node_commit_held(&s->nodes[i]);
		}
	}
	if (rec->live > 1 && s->lazy_views) {
		/* Two requests of one session at once: one may read the
		 * session's frontier while the other's decode span, counted
		 * but not applied, would have moved it. From here on every
		 * node read is brought up to date first (sync_view,
		 * cached_prefix), this arrival's routing included. */
		s->lazy_views = 0;
		for (uint32_t i = 0; i < s->n_nodes; i++)
			s->nodes[i].lazy_kv = 0;
	}
	r->replica = (uint32_t)(s->replica_next++ % s->n_replicas);
	if (s->opts->time_routing && s->routed++ % TIME_EVERY == 0) {
		s->timing = 1;
		double t0 = wall_now();
		route(s, r);
		s->route_ns += (wall_now() - t0) * 1e9;
		s->timed_routes++;
		s->timing = 0;
		return;
	}
	route(s, r);
}

static void on_dispatch(struct sim *s, struct request *r, uint32_t dst)
{
	enum pol_kv kv = (enum pol_kv)r->mig_lo;
	r->mig_lo = 0;
	r->state = REQ_NEW;
	if (s->opts->time_routing && s->dispatches++ % TIME_EVERY == 0) {
		double t0 = wall_now();
		arrive_at_node(s, r, dst, kv);
		s->dispatch_ns += (wall_now() - t0) * 1e9;
		s->timed_dispatches++;
		return;
	}
	arrive_at_node(s, r, dst, kv);
}

/* Caches the arrived blocks [lo, *hi) of r; blocks that found no room (or
 * whose prefix went meanwhile) will be computed, so *hi shrinks to what
 * was installed. */
static void install_arrived(struct node *n, const struct request *r, uint32_t lo, uint32_t *hi)
{
	if (*hi <= lo)
		return;
	/* an install whose prefix ends at an open run would meet blocks
	 * held back: they are committed first (kv_install's own lookup then
	 * ends where this one did, and nothing after it is cached) */
	struct kv_match m;
	node_lookup(n, r->hashes, *hi, &m);
	uint32_t upto = kv_install(&n->kv, r->hashes, lo, *hi);
	if (upto < *hi)
		*hi = upto > lo ? upto : lo;
}

/* A transfer r waited for has arrived at dst. */
static void on_transfer_done(struct sim *s, struct request *r, uint32_t dst)
{
	if (--r->pending > 0)
		return;
	struct node *n = &s->nodes[dst];
	node_sync(n, s->now);
	if (unpin(s, r, dst) || !s->views[0][dst].up) {
		retry(s, r);
		return;
	}
	if (r->mig_hi > r->mig_lo)
		s->migration_s += (double)(s->now - r->xfer_start_ns) * 1e-9;
	install_arrived(n, r, r->mig_lo, &r->mig_hi);
	install_arrived(n, r, r->rel_lo, &r->rel_hi);
	if (r->swapped) {
		r->rel_lo = r->rel_hi = 0; /* a swap-in is no prompt reload */
		s->swapping_in[dst]--;
		n->hold_admissions = s->swq_head[dst] != NULL || s->swapping_in[dst] > 0;
	}
	enqueue(s, dst, r);
}

/* Swap mode: a preempted request's computed blocks go to DRAM, then come
 * back (what HBM no longer holds) and it resumes at its queue's head. */
static void hook_swap_out(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	uint32_t B = (uint32_t)s->sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->high_water / B, server = (uint32_t)s->nodes[r->node].server;
	if (full > r->n_hashes)
		full = r->n_hashes;
	r->swapped = 1;
	r->pin_epoch = s->epoch[r->node];
	if (full == 0) {
		enqueue(s, (uint32_t)r->node, r);
		return;
	}
	if (pidx_insert(&s->dram, server, r->hashes, full))
		fail(s, "out of memory");
	double bytes = full * s->block_bytes;
	s->offload_out += bytes;
	uint32_t p = port_host(s, server);
	start_flow(s, FLOW_SWAP_OUT, r, r->node, &p, 1, bytes, s->sc->cluster.host->latency_s);
}

/* Swapped-out requests wait, in order, until their node has room for
 * their KV (meanwhile it admits nothing new: vLLM gives the swapped queue
 * priority); then what HBM lost is reloaded and they resume first. */
static void on_swap_out_done(struct sim *s, struct request *r, uint32_t node)
{
	if (--r->pending > 0)
		return;
	if (!s->views[0][node].up || r->pin_epoch != s->epoch[node]) {
		retry(s, r);
		return;
	}
	r->qnext = NULL;
	if (s->swq_tail[node])
		s->swq_tail[node]->qnext = r;
	else
		s->swq_head[node] = r;
	s->swq_tail[node] = r;
	s->nodes[node].hold_admissions = 1;
	try_swap_in(s, node);
}

static void try_swap_in(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	s->in_swap_in = 1;
	node_sync(n, s->now);
	while (s->swq_head[i] && !s->error) {
		struct request *r = s->swq_head[i];
		if (node_blocks_for(n, (uint64_t)r->high_water + 1) > kv_available(&n->kv))
			break;
		s->swq_head[i] = r->qnext;
		if (!s->swq_head[i])
			s->swq_tail[i] = NULL;
		r->qnext = NULL;
		/* The room it was given stays held while its blocks come back. */
		if (maybe_reload(s, r, i)) {
			s->swapping_in[i]++;
		} else {
			n->hold_admissions = s->swq_head[i] != NULL || s->swapping_in[i] > 0;
			enqueue(s, i, r);
		}
	}
	n->hold_admissions = s->swq_head[i] != NULL || s->swapping_in[i] > 0;
	s->in_swap_in = 0;
}

/* A flow's last byte has left: it frees its ports; its data arrives after
 * the link latency. */
static void on_flow(struct sim *s, uint32_t id)
{
	struct flow *f = &s->net.f[id];
	f->ev_seq = 0;
	int32_t code = (int32_t)((uint32_t)f->a << 3 | (uint32_t)f->kind);
	void *ptr = f->ptr;
	int64_t lat = f->latency_ns;
	flow_remove(&s->net, id);
	flows_changed(s);
	if (!evq_push(&s->q, s->now + lat, EV_DELIVER, code, ptr))
		fail(s, "out of memory");
}

static void on_deliver(struct sim *s, int32_t code, struct request *r)
{
	uint32_t target = (uint32_t)code >> 3;
	switch (code & 7) {
	case FLOW_MIGRATE:
	case FLOW_RELOAD:
		on_transfer_done(s, r, target);
		break;
	case FLOW_SWAP_OUT:
		on_swap_out_done(s, r, target);
		break;
	default: /* write-downs: the bytes are in the tier */
		break;
	}
}

/* --- faults -------------------------------------------------------------------- */

static void crash(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (!s->views[0][i].up)
		return;
	node_sync(n, s->now);
	evq_timer_cancel(&s->q, i); /* its step end, if any */
	thermal_advance(s, i);
	s->hl[i].busy = 0;
	/* Queues may exceed their bound by requests that were in transfer
	 * when it was checked: size the scratch by what is there. */
	size_t need = (size_t)n->n_waiting + n->n_running + 1;
	if (need > s->evac_cap) {
		struct request **e = realloc(s->evac, need * sizeof *e);
		if (!e) {
			fail(s, "out of memory");
			return;
		}
		s->evac = e;
		s->evac_cap = need;
	}
	uint32_t k = node_evacuate(n, s->evac);
	s->epoch[i]++;
	s->swapping_in[i] = 0;
	set_up(s, i, 0);
	refresh_view(s, i);
	for (uint32_t j = 0; j < k && !s->error; j++)
		retry(s, s->evac[j]);
	while (s->swq_head[i] && !s->error) {
		struct request *r = s->swq_head[i];
		s->swq_head[i] = r->qnext;
		r->qnext = NULL;
		retry(s, r);
	}
	s->swq_tail[i] = NULL;
}

static void scale_server_ports(struct sim *s, uint32_t server, double factor)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if ((uint32_t)s->nodes[i].server != server)
			continue;
		flow_scale(&s->net, port_nvlink(s, i), factor);
		flow_scale(&s->net, port_nic(s, i), factor);
	}
	flow_scale(&s->net, port_host(s, server), factor);
	flow_scale(&s->net, port_nvme(s, server), factor);
	flows_changed(s);
}

static void on_fault(struct sim *s, int32_t code)
{
	const struct fault_cfg *f = &s->sc->faults[code / 2];
	int end = code & 1;
	uint32_t t = (uint32_t)f->target;
	if (s->te) {
		static const char *const names[] = {"crash", "slow", "link", "cooling"};
		char args[120];
		snprintf(args, sizeof args, "\"target\":%u,\"phase\":\"%s\"", t, end ? "end" : "start");
		trace_event(s, names[f->kind], 'i', 0, 0, s->now, 0, args);
	}
	switch (f->kind) {
	case FAULT_CRASH:
		if (end) {
			if (!s->views[0][t].up) {
				set_up(s, t, 1);
				refresh_view(s, t);
			}
		} else {
			crash(s, t);
		}
		break;
	case FAULT_SLOW:
		thermal_advance(s, t);
		s->hl[t].slow = end ? 1.0 : f->factor;
		break;
	case FAULT_LINK:
		scale_server_ports(s, t, end ? 1.0 : f->factor);
		break;
	case FAULT_COOLING:
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			if ((uint32_t)s->nodes[i].server != t)
				continue;
			thermal_advance(s, i);
			s->hl[i].ambient_c = end ? s->sc->cluster.thermal.ambient_c : f->ambient_c;
		}
		break;
	}
}

/* node hooks */
static void hook_done(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	count_done(s, r, (uint32_t)r->node);
	finish(s, r);
}

static int private_before(const struct session_rec *rec, const struct request *r, uint32_t idx)
{
	uint32_t len = rec->frontier_len;
	return idx < len && len <= r->n_hashes && r->hashes[len - 1] == rec->frontier_hash;
}

static void audit_fail(struct sim *s, const char *fmt, ...);

static int hook_before(void *ctx, const struct request *r, uint32_t idx)
{
	struct sim *s = ctx;
	if (idx >= r->n_shared)
		return private_before(r->session_rec, r, idx);
	if (!s->ever_closed)
		return hset_has(&s->ever, r->hashes[idx]);
	/* The same request, the same set (its epoch's; it only grows: the
	 * same count is the same contents), inside the searched range: the
	 * cached answer. */
	const struct ctree *t = ever_tree(s, r);
	if (s->bs_req != r || s->bs_id != r->id || s->bs_count != t->count || idx < s->bs_lo ||
	    idx >= s->bs_hi) {
		uint32_t hi = r->n_shared < r->n_hashes ? r->n_shared : r->n_hashes;
		struct ctree_pos end;
		uint32_t p = ctree_prefix(t, r->hashes, hi, &end);
		s->bs_req = r;
		s->bs_id = r->id;
		s->bs_count = t->count;
		s->bs_lo = idx;
		s->bs_hi = hi;
		s->bs_first_not = idx > p ? idx : p; /* the first block from idx not in it */
	}
	int before = idx < s->bs_first_not;
	if (s->opts->audit && before != hset_has(&s->ever, r->hashes[idx]))
		audit_fail(s, "computed-before search disagrees with the set at block %u of request %llu",
			   idx, (unsigned long long)r->id);
	return before;
}

/* computed_before: blocks idx.. of r computed before, up to end. Shared
 * blocks from one search while the set is prefix-closed (one by one
 * after); private ones at once: the session's frontier covers a prefix of
 * them. --audit checks the count block by block. */
static uint32_t hook_before_run(void *ctx, const struct request *r, uint32_t idx, uint32_t end)
{
	struct sim *s = ctx;
	uint32_t k = idx, lim = end < r->n_shared ? end : r->n_shared;
	if (s->ever_closed) {
		/* one search answers the whole shared part: blocks before its
		 * first block not in the set are in it, the rest are not */
		if (k < lim && hook_before(ctx, r, k))
			k = s->bs_first_not < lim ? s->bs_first_not : lim;
	} else {
		while (k < lim && hook_before(ctx, r, k))
			k++;
	}
	if (k < end && k >= r->n_shared && private_before(r->session_rec, r, k)) {
		const struct session_rec *rec = r->session_rec;
		k = rec->frontier_len < end ? rec->frontier_len : end;
	}
	if (s->opts->audit) {
		for (uint32_t b = idx; b < k; b++)
			if (!hook_before(ctx, r, b))
				audit_fail(s, "block %u of request %llu counted computed before, but is not",
					   b, (unsigned long long)r->id);
		if (k < end && hook_before(ctx, r, k))
			audit_fail(s, "block %u of request %llu computed before, but not counted", k,
				   (unsigned long long)r->id);
	}
	return k - idx;
}

/* Blocks idx.. of r that no node computed before, up to end: shared ones
 * from one search while the set is prefix-closed (one by one after); a
 * private block behind no frontier has every later one behind none either
 * (private_before's chain test does not depend on the block, and the
 * frontier is a prefix). --audit checks the count block by block. */
static uint32_t hook_never_run(void *ctx, const struct request *r, uint32_t idx, uint32_t end)
{
	struct sim *s = ctx;
	uint32_t k = idx, lim = end < r->n_shared ? end : r->n_shared;
	if (s->ever_closed) {
		if (k < lim && !hook_before(ctx, r, k))
			k = lim; /* at or past the search's first block not in the set */
	} else {
		while (k < lim && !hook_before(ctx, r, k))
			k++;
	}
	if (k < end && k >= r->n_shared && !private_before(r->session_rec, r, k))
		k = end;
	if (s->opts->audit) {
		for (uint32_t b = idx; b < k; b++)
			if (hook_before(ctx, r, b))
				audit_fail(s, "block %u of request %llu counted never computed, but was",
					   b, (unsigned long long)r->id);
		if (k < end && !hook_before(ctx, r, k))
			audit_fail(s, "block %u of request %llu never computed, but not counted", k,
				   (unsigned long long)r->id);
	}
	return k - idx;
}

/* --audit: the frontier hook_blocks left after private blocks [from, to)
 * is the one that moving it block by block from `was` gives. */
static void audit_frontier(struct sim *s, const struct request *r, struct session_rec was,
			   uint32_t from, uint32_t to)
{
	for (uint32_t b = from; b < to; b++)
		if (!private_before(&was, r, b)) {
			was.frontier_len = b + 1;
			was.frontier_hash = r->hashes[b];
		}
	const struct session_rec *now = r->session_rec;
	if (now->frontier_len != was.frontier_len || now->frontier_hash != was.frontier_hash)
		audit_fail(s, "session frontier %u after blocks [%u, %u) of request %llu, block by "
			      "block %u",
			   now->frontier_len, from, to, (unsigned long long)r->id, was.frontier_len);
}

static int ever_flat_add(void *ctx, uint64_t h)
{
	return hset_add(ctx, h) < 0;
}

/* While the set is a tree: records shared blocks idx..end-1 of r; block
 * idx's parent is where r recorded its last block, or is found along r's
 * chain. Returns 1 when done; 0 when the parent is not recorded: the set
 * then moves to the flat one, for good, and the caller adds the blocks
 * there. */
static int ever_tree_add(struct sim *s, struct request *r, uint32_t idx, uint32_t end)
{
	struct ctree *t = ever_tree(s, r);
	struct ctree_pos at = {r->ever_run, r->ever_off};
	if (idx == 0) {
		at.run = CTREE_NONE;
	} else if (r->ever_next != idx || r->ever_run == CTREE_NONE) {
		if (ctree_prefix(t, r->hashes, idx, &at) < idx) {
			/* its parent is not recorded: not a tree any more (every
			 * epoch's blocks go to the flat set, kept from then on) */
			s->ever_closed = 0;
			for (uint32_t i = 0; i < s->n_eps; i++) {
				if (!s->opts->audit &&
				    ctree_each(&s->eps[i].tree, ever_flat_add, &s->ever))
					fail(s, "out of memory");
				ctree_free(&s->eps[i].tree);
			}
			s->epochs = 0;
			s->n_eps = 1;
			s->ever_blocks = 0;
			return 0;
		}
	}
	/* the request's shared blocks from idx on are expected to follow */
	int added = ctree_add_chain(t, &at, r->hashes + idx, end - idx, r->n_shared - idx);
	if (added < 0)
		fail(s, "out of memory");
	else if ((s->ever_blocks += (size_t)added) > s->ever_peak)
		s->ever_peak = s->ever_blocks;
	for (uint32_t b = idx; s->opts->audit && b < end; b++)
		if (hset_add(&s->ever, r->hashes[b]) < 0)
			fail(s, "out of memory");
	r->ever_run = at.run;
	r->ever_off = at.off;
	r->ever_next = end;
	return 1;
}

static void hook_blocks(void *ctx, struct request *r, uint32_t from, uint32_t to)
{
	struct sim *s = ctx;
	uint32_t idx = from;
	for (; idx < to && idx < r->n_shared; idx++) {
		if (idx >= r->before_lo && idx < r->before_hi) {
			/* in the set since its admission at least: the whole
			 * rest of that range, at once */
			uint32_t stop = r->before_hi < to ? r->before_hi : to;
			if (stop > r->n_shared)
				stop = r->n_shared;
			idx = stop - 1;
			r->ever_next = stop;
			r->ever_run = CTREE_NONE; /* its place in the tree not looked up */
			continue;
		}
		if (s->ever_closed) {
			/* up to the range's end or the before range, at once */
			uint32_t end = to < r->n_shared ? to : r->n_shared;
			if (idx < r->before_lo && r->before_lo < end)
				end = r->before_lo;
			if (ever_tree_add(s, r, idx, end)) {
				idx = end - 1;
				continue;
			}
		}
		if (hset_add(&s->ever, r->hashes[idx]) < 0)
			fail(s, "out of memory");
		r->ever_next = idx + 1;
	}
	if (idx == to)
		return;
	/* Private blocks: block by block, the frontier would move to each
	 * block not behind it, and once it moves it moves with every later
	 * one; so it ends at the last block unless that one is behind it. */
	struct session_rec *rec = r->session_rec;
	if (s->opts->audit) {
		struct session_rec was = *rec;
		if (!private_before(rec, r, to - 1)) {
			rec->frontier_len = to;
			rec->frontier_hash = r->hashes[to - 1];
		}
		audit_frontier(s, r, was, idx, to);
	} else if (!private_before(rec, r, to - 1)) {
		rec->frontier_len = to;
		rec->frontier_hash = r->hashes[to - 1];
	}
}

/* One timeseries row per node. Nodes inside a decode span are brought up
 * to now first (exact, so sampling never changes results). */
static void sample(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		node_sync(n, s->now);
		/* "%.6f,%u,%.6f,%u,%u,%.3f,%d\n" (temperature empty without the
		 * thermal model), formatted exactly without printf */
		char line[2048], *p = fmt_put_fixed(line, (double)s->now * 1e-9, 6);
		*p++ = ',';
		p += fmt_u64(p, i);
		*p++ = ',';
		p = fmt_put_fixed(p, (double)n->kv.n_used / (double)n->kv.n_blocks, 6);
		*p++ = ',';
		p += fmt_u64(p, n->n_running);
		*p++ = ',';
		p += fmt_u64(p, n->n_waiting);
		*p++ = ',';
		if (s->sc->cluster.thermal.enabled)
			p = fmt_put_fixed(p, thermal_temp_now(s, i), 3);
		*p++ = ',';
		p += fmt_i64(p, s->hl[i].throttled);
		*p++ = '\n';
		fwrite(line, 1, (size_t)(p - line), s->ts);
	}
	/* Keep sampling until the run is over. */
	if (!evq_push(&s->q, s->now + s->sample_ns, EV_SAMPLE, -1, NULL))
		fail(s, "out of memory");
}

static void audit_fail(struct sim *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void audit_fail(struct sim *s, const char *fmt, ...)
{
	char what[600], msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof msg, "audit: at t=%.9f s: %s", (double)s->now * 1e-9, what);
	fail_with(s, 3, msg);
}

static int audit_request(struct sim *s, const struct request *r)
{
	if (r->accounted && (uint64_t)r->cached + r->reloaded + r->migrated + r->recomputed +
				    r->fresh != r->prompt_tokens) {
		audit_fail(s, "request %llu: prompt split %u+%u+%u+%u+%u != %u tokens",
			   (unsigned long long)r->id, r->cached, r->reloaded, r->migrated,
			   r->recomputed, r->fresh, r->prompt_tokens);
		return -1;
	}
	if (r->preempt_recomputed != r->ep_recomputed + req_episode_recomputed(r)) {
		audit_fail(s, "request %llu: %u tokens counted recomputed after preemption, but its "
			      "admissions recomputed %u below their high water",
			   (unsigned long long)r->id, r->preempt_recomputed,
			   r->ep_recomputed + req_episode_recomputed(r));
		return -1;
	}
	if (r->num_computed > r->num_tokens || r->generated > r->output_tokens ||
	    r->num_tokens != r->prompt_tokens + r->generated) {
		audit_fail(s, "request %llu: computed %u, known %u, generated %u of %u (prompt %u)",
			   (unsigned long long)r->id, r->num_computed, r->num_tokens, r->generated,
			   r->output_tokens, r->prompt_tokens);
		return -1;
	}
	return 0;
}

/* A node's invariants: its KV tree and counters; blocks in use equal the
 * locked cached blocks plus the running requests' own; each request where
 * its state says. O(runs + requests on the node). */
static void audit_node(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	uint64_t locked = 0, own = 0;
	uint32_t open = 0;
	const char *why = NULL;
	if (kv_audit(&n->kv, &locked, &why)) {
		audit_fail(s, "node %u: KV cache: %s", i, why);
		return;
	}
	uint32_t waiting = 0;
	for (const struct request *r = n->wait_head; r; r = r->qnext) {
		waiting++;
		if (r->state != REQ_WAITING || r->node != (int32_t)i || r->n_blocks != 0) {
			audit_fail(s, "node %u: waiting request %llu has state %d, node %d, %u blocks", i,
				   (unsigned long long)r->id, r->state, r->node, r->n_blocks);
			return;
		}
		if (audit_request(s, r))
			return;
	}
	if (waiting != n->n_waiting) {
		audit_fail(s, "node %u: %u requests in the waiting queue, counted %u", i, waiting,
			   n->n_waiting);
		return;
	}
	if (n->n_running > n->max_seqs) {
		audit_fail(s, "node %u: %u running > max_num_seqs %u", i, n->n_running, n->max_seqs);
		return;
	}
	for (uint32_t k = 0; k < n->n_running; k++) {
		const struct request *r = n->running[k];
		if (r->state != REQ_RUNNING || r->node != (int32_t)i || r->n_own > r->n_blocks) {
			audit_fail(s, "node %u: running request %llu has state %d, node %d", i,
				   (unsigned long long)r->id, r->state, r->node);
			return;
		}
		if (audit_request(s, r))
			return;
		own += r->n_own;
		if (r->open_from != REQ_TAIL_SHUT) {
			open++;
			if (r->kv_tail == KV_NONE || !n->kv.runs[r->kv_tail].open) {
				audit_fail(s, "node %u: running request %llu holds blocks back, but "
					      "its tail run is not open",
					   i, (unsigned long long)r->id);
				return;
			}
		}
	}
	if (open != n->n_open) {
		audit_fail(s, "node %u: %u running requests with open tail runs, counted %u", i,
			   open, n->n_open);
		return;
	}
	if (locked + own != n->kv.n_used) {
		audit_fail(s, "node %u: %llu blocks in use, but locked cached blocks (%llu) + running "
			      "requests' own blocks (%llu) = %llu",
			   i, (unsigned long long)n->kv.n_used, (unsigned long long)locked,
			   (unsigned long long)own, (unsigned long long)(locked + own));
		return;
	}
	if (n->kv.n_used > n->kv.n_blocks)
		audit_fail(s, "node %u: %u blocks in use > capacity %u", i, n->kv.n_used,
			   n->kv.n_blocks);
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(const struct sim *s, double started)
{
	double wall = wall_now() - started;
	uint64_t done = s->met.completed + s->met.shed + s->met.failed;
	fprintf(stderr,
		"\r  simulated %9.1f s | %10llu arrived | %10llu done | %8.0f req/s | %6.1f s wall",
		(double)s->now * 1e-9, (unsigned long long)s->met.arrived, (unsigned long long)done,
		wall > 0 ? (double)done / wall : 0.0, wall);
	fflush(stderr);
}

static void teardown(struct sim *s)
{
	/* After an error, requests may still sit in nodes: hand them back. */
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		for (struct request *r = n->wait_head, *next; r; r = next) {
			next = r->qnext;
			req_put(s, r);
		}
		for (uint32_t k = 0; n->running && k < n->n_running; k++)
			req_put(s, n->running[k]);
		n->wait_head = NULL;
		n->n_running = 0;
	}
	for (uint32_t i = 0; s->swq_head && i < s->n_nodes; i++)
		for (struct request *r = s->swq_head[i], *next; r; r = next) {
			next = r->qnext;
			r->pending = UINT32_MAX;
			req_put(s, r);
		}
	free(s->swq_head);
	free(s->swq_tail);
	free(s->epoch);
	free(s->swapping_in);
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++)
		node_free(&s->nodes[i]);
	kv_spares_free(&s->kv_spares);
	free(s->nodes);
	for (uint32_t k = 0; s->views && k < s->n_replicas; k++)
		free(s->views[k]);
	free(s->views);
	free(s->total_out);
	for (uint32_t k = 0; s->lheap && k < s->n_replicas; k++)
		lh_free(&s->lheap[k]);
	free(s->lheap);
	for (uint32_t k = 0; s->pol_sts && k < s->n_pol_st; k++)
		if (s->pol_sts[k])
			s->pol->destroy(s->pol_sts[k]);
	free(s->pol_sts);
	if (s->wl_st)
		s->wl->destroy(s->wl_st);
	if (s->r_route)
		gsl_rng_free(s->r_route);
	/* Requests still referenced by events or flows (only after an error);
	 * one request may be named twice, so each is handed back once. */
	struct event ev;
	while (evq_pop(&s->q, &ev)) {
		struct request *r = ev.ptr;
		if (r && r->pending != UINT32_MAX) {
			r->pending = UINT32_MAX;
			req_put(s, r);
		}
	}
	for (uint32_t k = 0; k < s->net.n_active; k++) {
		struct request *r = s->net.f[s->net.active[k]].ptr;
		if (r && r->pending != UINT32_MAX) {
			r->pending = UINT32_MAX;
			req_put(s, r);
		}
	}
	flow_free(&s->net);
	pidx_free(&s->dram);
	pidx_free(&s->nvme);
	free(s->wd_host);
	free(s->wd_nvme);
	free(s->dirty);
	free(s->is_dirty);
	free(s->ectx);
	free(s->changed);
	free(s->hl);
	free(s->evac);
	while (s->free_reqs) {
		struct request *r = s->free_reqs;
		s->free_reqs = r->pool_next;
		free(r->hashes);
		free(r);
	}
	for (size_t i = 0; i < s->sessions.cap; i++) {
		if (s->sessions.slots[i].key) {
			free((struct session_rec *)(uintptr_t)s->sessions.slots[i].val);
		}
	}
	while (s->free_sessions) {
		struct session_rec *rec = s->free_sessions;
		s->free_sessions = rec->free_next;
		free(rec);
	}
	hmap_free(&s->sessions);
	hset_free(&s->ever);
	for (uint32_t i = 0; i < s->n_eps; i++)
		ctree_free(&s->eps[i].tree);
	free(s->eps);
	evq_free(&s->q);
	met_free(&s->met);
}

/* Builds policy and workload; 0, or 2 with err naming the JSON path. */
static int build_modules(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	s->pol = pol_find(sc->router.policy);
	if (!s->pol) {
		char names[512];
		pol_names(names, sizeof names);
		snprintf(err, errlen, "router.policy: unknown policy \"%s\" (known: %s)",
			 sc->router.policy, names);
		return 2;
	}
	s->r_route = rng_stream(sc->seed, STREAM_ROUTING);
	if (!s->r_route) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	struct pol_env penv = {(uint32_t)sc->cluster.nodes, (uint32_t)sc->cluster.engine.kv_block_tokens,
			       s->r_route};
	/* Router replicas with a local store each keep their own state; a
	 * shared store (redis, etcd) means one map for all. */
	s->n_replicas = (uint32_t)sc->router.replicas;
	s->n_pol_st = sc->router.store == STORE_LOCAL ? s->n_replicas : 1;
	s->pol_sts = calloc(s->n_pol_st, sizeof *s->pol_sts);
	if (!s->pol_sts) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	for (uint32_t k = 0; k < s->n_pol_st; k++) {
		s->pol_sts[k] = s->pol->create(sc->router.params, "router.params", &penv, err, errlen);
		if (!s->pol_sts[k])
			return 2;
	}
	s->pol_reads_kv_util = s->pol->reads_kv_util ? s->pol->reads_kv_util(s->pol_sts[0]) : 0;
	struct wl_env wenv = {(uint32_t)sc->cluster.engine.kv_block_tokens,
			      (uint32_t)sc->cluster.model->max_context, sc->seed, sc->base_dir, 1.0};
	s->wl_st = wl_create(sc->workload, &wenv, &s->wl, err, errlen);
	return s->wl_st ? 0 : 2;
}

int sim_validate(const struct scenario *sc, char *err, size_t errlen)
{
	struct sim s;
	memset(&s, 0, sizeof s);
	s.sc = sc;
	evq_init(&s.q);
	int rc = build_modules(&s, err, errlen);
	teardown(&s);
	return rc;
}

static int has_slow_fault(const struct scenario *sc, uint32_t i)
{
	for (int f = 0; f < sc->n_faults; f++)
		if (sc->faults[f].kind == FAULT_SLOW && (uint32_t)sc->faults[f].target == i)
			return 1;
	return 0;
}

/* Nodes, views, links, tiers, health and the fault schedule. 0, or -1
 * with err (out of memory). */
static int init_cluster(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	const struct cluster_cfg *cl = &sc->cluster;
	uint32_t N = s->n_nodes;
	s->n_servers = (N + (uint32_t)cl->nodes_per_server - 1) / (uint32_t)cl->nodes_per_server;
	/* 64-byte aligned: a node's first line holds what observers of every
	 * node read (struct node) */
	void *na = NULL;
	if (posix_memalign(&na, 64, N * sizeof *s->nodes) == 0) {
		memset(na, 0, N * sizeof *s->nodes);
		s->nodes = na;
	}
	s->views = calloc(s->n_replicas, sizeof *s->views);
	s->total_out = calloc(s->n_replicas, sizeof *s->total_out);
	s->lheap = calloc(s->n_replicas, sizeof *s->lheap);
	s->hl = calloc(N, sizeof *s->hl);
	s->ectx = calloc(N, sizeof *s->ectx);
	s->swq_head = calloc(N, sizeof *s->swq_head);
	s->swq_tail = calloc(N, sizeof *s->swq_tail);
	s->epoch = calloc(N, sizeof *s->epoch);
	s->swapping_in = calloc(N, sizeof *s->swapping_in);
	s->wd_host = calloc(s->n_servers, sizeof *s->wd_host);
	s->wd_nvme = calloc(s->n_servers, sizeof *s->wd_nvme);
	s->dirty = calloc(s->n_servers, sizeof *s->dirty);
	s->is_dirty = calloc(s->n_servers, 1);
	if (!s->nodes || !s->views || !s->total_out || !s->lheap || !s->hl || !s->ectx ||
	    !s->swq_head || !s->swq_tail || !s->epoch || !s->swapping_in ||
	    !s->wd_host || !s->wd_nvme || !s->dirty || !s->is_dirty ||
	    flow_init(&s->net, 2 * N + 2 * s->n_servers) || evq_timers(&s->q, N, EV_STEP))
		goto oom;
	for (uint32_t k = 0; k < s->n_replicas; k++)
		if (!(s->views[k] = calloc(N, sizeof **s->views)))
			goto oom;
	s->view = s->views[0];
	s->report_ns = (int64_t)llround(sc->router.load_report_interval_s * 1e9);
	s->block_bytes = cl->model->kv_bytes_per_token * cl->engine.kv_block_tokens;
	uint64_t dram_blocks = (uint64_t)(cl->tiers.dram_bytes / s->block_bytes);
	uint64_t nvme_blocks = (uint64_t)(cl->tiers.nvme_bytes / s->block_bytes);
	s->has_dram = dram_blocks > 0;
	s->has_nvme = nvme_blocks > 0;
	if (pidx_init(&s->dram, s->n_servers, dram_blocks) ||
	    pidx_init(&s->nvme, s->n_servers, nvme_blocks))
		goto oom;
	s->dram.on_evict = on_dram_evict;
	s->dram.evict_ctx = s;
	struct node_hooks hooks = {s,		   hook_done,	   hook_blocks, hook_before_run,
				   hook_never_run, hook_swap_out};
	const struct thermal_cfg *th = &cl->thermal;
	for (uint32_t i = 0; i < N; i++) {
		int server = (int)(i / (uint32_t)cl->nodes_per_server);
		if (node_init(&s->nodes[i], (int)i, server, (uint32_t)sc->kv_blocks_per_node,
			      &cl->engine, &s->cost, &hooks)) {
			snprintf(err, errlen, "out of memory for node %u's KV cache", i);
			s->n_nodes = i + 1;
			return -1;
		}
		s->nodes[i].kv.spares = &s->kv_spares;
		s->ectx[i] = (struct evict_ctx){s, (uint32_t)server};
		/* Decode spans apply a span's KV growth and its time at its end;
		 * watermark offload, thermal throttling and slow-downs act per
		 * iteration, so with them a node steps one iteration per event. */
		if (s->has_dram || s->has_nvme || th->enabled || has_slow_fault(sc, i))
			s->nodes[i].max_span = 1;
		if (s->has_dram || s->has_nvme) {
			s->nodes[i].kv.on_evict = on_hbm_evict;
			s->nodes[i].kv.evict_ctx = &s->ectx[i];
		}
		for (uint32_t k = 0; k < s->n_replicas; k++) {
			s->views[k][i].server = server;
			s->views[k][i].up = 1;
			s->views[k][i].kv_blocks = s->nodes[i].kv.n_blocks;
		}
		struct health *h = &s->hl[i];
		h->ambient_c = th->ambient_c;
		h->temp_c = th->enabled ? th->ambient_c + th->c_per_w * cl->gpu->tdp_w * th->idle_power_frac
					: 0;
		h->slow = 1.0;
		flow_set_capacity(&s->net, port_nvlink(s, i), cl->intra_server->bytes_per_s);
		flow_set_capacity(&s->net, port_nic(s, i), cl->inter_server->bytes_per_s);
		refresh_view(s, i);
	}
	s->n_up = N;
	for (uint32_t k = 0; k < s->n_replicas; k++)
		if (lh_init(&s->lheap[k], s->views[k], N))
			goto oom;
	for (uint32_t k = 0; k < s->n_servers; k++) {
		flow_set_capacity(&s->net, port_host(s, k), cl->host->bytes_per_s);
		flow_set_capacity(&s->net, port_nvme(s, k), cl->nvme->bytes_per_s);
	}
	for (int f = 0; f < sc->n_faults; f++) {
		const struct fault_cfg *fc = &sc->faults[f];
		int64_t at = (int64_t)llround(fc->at_s * 1e9);
		if (!evq_push(&s->q, at, EV_FAULT, 2 * f, NULL))
			goto oom;
		if (fc->duration_s >= 0 &&
		    !evq_push(&s->q, at + (int64_t)llround(fc->duration_s * 1e9), EV_FAULT, 2 * f + 1,
			      NULL))
			goto oom;
	}
	if (s->report_ns > 0 && !evq_push(&s->q, s->report_ns, EV_REPORT, -1, NULL))
		goto oom;
	int looks_up = s->pol->looks_up_cache && s->pol->looks_up_cache(s->pol_sts[0]);
	s->lazy_views = (s->pol_reads_kv_util || looks_up) && !s->opts->eager_kv_views;
	/* Prefill iterations open decode spans (node.fold_ok) unless a test
	 * asks otherwise, or iterations are traced (one slice per step). */
	s->fold = !s->opts->no_fold && !s->opts->trace_events;
	/* Requests hold back their private blocks' commits (node.c,
	 * deferred commits) unless a test asks otherwise. */
	s->defer = !s->opts->eager_commits;
	for (uint32_t i = 0; i < N; i++) {
		s->nodes[i].lazy_kv = s->lazy_views;
		s->nodes[i].fold_ok = s->fold && !s->nodes[i].swap;
		s->nodes[i].defer_commits = s->defer && s->nodes[i].prefix_caching;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory for %u nodes", N);
	return -1;
}

/* Every arrived request has ended and none is to come: what is left in
 * the queue (samples, load reports, write-downs, fault ends) does not
 * extend the run. */
static int run_over(const struct sim *s)
{
	return s->pending_arrivals == 0 &&
	       s->met.arrived == s->met.completed + s->met.shed + s->met.failed;
}

/* Every node reports its load; the routers' views take it. */
static void on_report(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		node_sync(&s->nodes[i], s->now);
		refresh_view(s, i);
	}
	if (!evq_push(&s->q, s->now + s->report_ns, EV_REPORT, -1, NULL))
		fail(s, "out of memory");
}

static FILE *open_csv(const char *dir, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	snprintf(tmp, tmplen, "%s/requests.csv.tmp.%ld", dir, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		snprintf(err, errlen, "%s: cannot create", tmp);
	return f;
}

int sim_run(const struct scenario *sc, const struct sim_opts *o, struct met_summary *out,
	    char *err, size_t errlen)
{
	struct sim s;
	static const struct sim_opts none = {0};
	memset(&s, 0, sizeof s);
	memset(out, 0, sizeof *out);
	s.sc = sc;
	s.opts = o ? o : &none;
	s.err = err;
	s.errlen = errlen;
	evq_init(&s.q);
	hset_init(&s.ever);
	s.eps = malloc(4 * sizeof *s.eps);
	if (!s.eps) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	s.eps_cap = 4;
	s.n_eps = 1;
	ctree_init(&s.eps[0].tree);
	s.eps[0].epoch = 0;
	s.eps[0].live = 0;
	s.ever_closed = 1;
	hmap_init(&s.sessions);
	double started = wall_now();
	char csv_tmp[4200] = "", ts_tmp[4200] = "", te_tmp[4200] = "";
	FILE *csv = NULL;
	int rc = build_modules(&s, err, errlen);
	if (rc)
		goto done;
	s.epochs = s.wl->epochs && !s.opts->keep_epochs;
	if (s.opts->out_dir) {
		if (res_mkdirs(s.opts->out_dir, err, errlen) ||
		    !(csv = open_csv(s.opts->out_dir, csv_tmp, sizeof csv_tmp, err, errlen))) {
			rc = 3;
			goto done;
		}
		met_csv_header(csv);
	}
	met_init(&s.met, sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, csv);
	cost_init(&s.cost, &sc->cluster, sc->weight_bytes);
	s.n_nodes = (uint32_t)sc->cluster.nodes;
	if (init_cluster(&s, err, errlen)) {
		rc = 3;
		goto done;
	}
	s.end_arrivals_ns = (int64_t)llround(sc->duration_s * 1e9);
	if (s.opts->trace_events) {
		snprintf(te_tmp, sizeof te_tmp, "%s.tmp.%ld", s.opts->trace_events, (long)getpid());
		s.te = fopen(te_tmp, "w");
		if (!s.te) {
			snprintf(err, errlen, "%s: cannot create", te_tmp);
			te_tmp[0] = 0;
			rc = 3;
			goto done;
		}
		fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", s.te);
		static const char *const tracks[] = {"router", "nodes (iterations)", "KV transfers"};
		for (int k = 0; k < 3; k++) {
			char args[64];
			snprintf(args, sizeof args, "\"name\":\"%s\"", tracks[k]);
			trace_event(&s, "process_name", 'M', k, 0, 0, 0, args);
		}
	}
	pull_source(&s);
	if (s.opts->out_dir) {
		snprintf(ts_tmp, sizeof ts_tmp, "%s/timeseries.csv.tmp.%ld", s.opts->out_dir,
			 (long)getpid());
		s.ts = fopen(ts_tmp, "w");
		if (!s.ts) {
			snprintf(err, errlen, "%s: cannot create", ts_tmp);
			ts_tmp[0] = 0;
			rc = 3;
			goto done;
		}
		fputs("time_s,node,kv_util,running,queued,temperature_c,throttled\n", s.ts);
		s.sample_ns = (int64_t)llround(sc->timeseries_interval_s * 1e9);
		if (s.sample_ns < 1)
			s.sample_ns = 1;
		if (!evq_push(&s.q, s.sample_ns, EV_SAMPLE, -1, NULL))
			fail(&s, "out of memory");
	}

	int show = s.opts->progress && isatty(2), truncated = 0;
	double last_draw = started;
	struct event ev;
	while (!s.error && evq_pop(&s.q, &ev)) {
		if (stale(&s, &ev)) {
			s.q.popped--;
			continue;
		}
		if (run_over(&s))
			break;
		if (s.opts->audit && ev.time_ns < s.now) {
			audit_fail(&s, "the clock went back to %.9f s", (double)ev.time_ns * 1e-9);
			break;
		}
		s.now = ev.time_ns;
		prefetch_arrival(&s);
		switch (ev.kind) {
		case EV_ARRIVAL:
			on_arrival(&s, ev.ptr, ev.node);
			break;
		case EV_STEP:
			if (node_span_continues(&s.nodes[ev.node], s.now)) {
				if (evq_repush(&s.q, &ev, s.nodes[ev.node].step_end_ns))
					fail(&s, "out of memory");
				break;
			}
			if (s.te)
				trace_step(&s, (uint32_t)ev.node);
			node_finish_step(&s.nodes[ev.node], s.now);
			kick(&s, (uint32_t)ev.node);
			break;
		case EV_SAMPLE:
			sample(&s);
			break;
		case EV_DISPATCH:
			on_dispatch(&s, ev.ptr, (uint32_t)ev.node);
			break;
		case EV_FLOW:
			on_flow(&s, (uint32_t)ev.node);
			break;
		case EV_DELIVER:
			on_deliver(&s, ev.node, ev.ptr);
			break;
		case EV_REPORT:
			on_report(&s);
			break;
		case EV_FAULT:
			on_fault(&s, ev.node);
			break;
		}
		if (s.n_dirty)
			flush_write_downs(&s);
		if (ev.kind == EV_STEP && s.nodes[ev.node].kv.oom)
			fail(&s, "out of memory (KV cache index)");
		if (s.opts->audit && !s.error) {
			if (ev.kind == EV_STEP)
				audit_node(&s, (uint32_t)ev.node);
			else if (ev.kind != EV_SAMPLE && ev.kind != EV_REPORT)
				for (uint32_t i = 0; i < s.n_nodes && !s.error; i++)
					if (s.nodes[i].busy || s.nodes[i].n_waiting)
						audit_node(&s, i);
		}
		if (s.opts->wall_limit_s > 0 && (s.q.popped & 0xfff) == 0 &&
		    wall_now() - started > s.opts->wall_limit_s) {
			truncated = 1;
			break;
		}
		if (show && (s.q.popped & 0xffff) == 0 && wall_now() - last_draw > 0.5) {
			progress(&s, started);
			last_draw = wall_now();
		}
	}
	if (show) {
		progress(&s, started);
		fputc('\n', stderr);
	}
	if (s.error) {
		rc = s.error;
		goto done;
	}

	if (s.opts->audit && !truncated &&
	    s.met.arrived != s.met.completed + s.met.shed + s.met.failed) {
		audit_fail(&s, "after the drain %llu arrived != %llu completed + %llu shed + %llu failed",
			   (unsigned long long)s.met.arrived, (unsigned long long)s.met.completed,
			   (unsigned long long)s.met.shed, (unsigned long long)s.met.failed);
		rc = s.error;
		goto done;
	}
	/* The summary. */
	double sim_s = (double)s.now * 1e-9;
	met_summarize(&s.met, sim_s, out);
	snprintf(out->scenario, sizeof out->scenario, "%s", sc->name);
	snprintf(out->policy, sizeof out->policy, "%s", sc->router.policy);
	snprintf(out->version, sizeof out->version, "%s", kvsim_version());
	out->seed = sc->seed;
	out->truncated = truncated;
	/* the timed sums scaled up to every arrival and dispatch */
	double fr = s.timed_routes ? (double)s.routed / (double)s.timed_routes : 0;
	double fd = s.timed_dispatches ? (double)s.dispatches / (double)s.timed_dispatches : 0;
	out->route_ns = (s.route_ns - s.arrive_ns) * fr;
	out->arrive_ns = s.route_ns * fr + s.dispatch_ns * fd;
	out->routed = s.routed;
	out->kv_views_counted = s.kv_counted;
	out->kv_views_synced = s.kv_synced;
	out->kv_lookups_unapplied = s.kv_unapplied;
	out->kv_lookups_evicting = s.kv_evicting;
	out->kv_lookups_locked = s.kv_locked;
	out->kv_lookups_spared = s.kv_spared;
	out->kv_lookups = s.kv_lookups;
	out->ever_epochs_forgotten = s.eps_forgotten;
	out->ever_blocks_peak = s.ever_peak;
	out->sync_ns = s.sync_ns * fr;
	out->migration_count = s.migrations;
	out->migration_bytes = s.migration_bytes;
	out->migration_s = s.migration_s;
	out->offload_bytes_out = s.offload_out;
	out->offload_bytes_in = s.offload_in;
	out->nodes = calloc(s.n_nodes, sizeof *out->nodes);
	if (!out->nodes) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
		goto done;
	}
	out->n_nodes = s.n_nodes;
	double sum = 0, sumsq = 0, mx = 0;
	for (uint32_t i = 0; i < s.n_nodes; i++) {
		const struct node *n = &s.nodes[i];
		struct met_node *mn = &out->nodes[i];
		mn->id = (int)i;
		mn->busy_ratio = sim_s > 0 ? (double)n->busy_ns * 1e-9 / sim_s : 0;
		mn->mean_kv_util = s.now > 0 ? n->kv_used_block_ns / (double)s.now / n->kv.n_blocks : 0;
		mn->peak_kv_util = (double)n->peak_used / n->kv.n_blocks;
		mn->requests = n->completed;
		out->admission_hints += n->hints;
		out->admission_hints_right += n->hints_right;
		out->admission_hint_keys_current += n->hint_keys_current;
		out->admission_hint_keys_right += n->hint_keys_right;
		out->kv_blocks_held += n->held_blocks;
		out->kv_lookups_held += n->held_lookups;
		out->kv_commits_held += n->held_commits;
		thermal_advance(&s, i);
		mn->throttled_s = s.hl[i].throttled_s;
		double x = (double)n->completed;
		sum += x;
		sumsq += x * x;
		if (x > mx)
			mx = x;
	}
	double mean = sum / s.n_nodes;
	out->imbalance_max_over_mean = mean > 0 ? mx / mean : 0;
	out->imbalance_jain = sumsq > 0 ? sum * sum / (s.n_nodes * sumsq) : 1;
	out->events = s.q.popped;
	out->wall_s = wall_now() - started;
	out->requests_per_wall_s = out->wall_s > 0 ? (double)out->arrived / out->wall_s : 0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	out->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;

	if (s.te) {
		fprintf(s.te, "\n],\"otherData\":{\"kvsim_version\":\"%s\",\"events\":%llu,"
			      "\"truncated\":%s}}\n",
			kvsim_version(), (unsigned long long)s.te_count,
			s.te_count >= TE_MAX ? "true" : "false");
		int bad = ferror(s.te);
		bad |= fclose(s.te) != 0;
		s.te = NULL;
		if (bad || rename(te_tmp, s.opts->trace_events) != 0) {
			snprintf(err, errlen, "%s: write failed", s.opts->trace_events);
			rc = 3;
			goto done;
		}
		te_tmp[0] = 0;
	}
	if (csv) {
		int bad = ferror(csv);
		bad |= fclose(csv) != 0;
		csv = NULL;
		char final[4200];
		snprintf(final, sizeof final, "%s/requests.csv", s.opts->out_dir);
		if (bad || rename(csv_tmp, final) != 0) {
			snprintf(err, errlen, "%s: write failed", final);
			rc = 3;
			goto done;
		}
		csv_tmp[0] = 0;
		bad = ferror(s.ts);
		bad |= fclose(s.ts) != 0;
		s.ts = NULL;
		snprintf(final, sizeof final, "%s/timeseries.csv", s.opts->out_dir);
		if (bad || rename(ts_tmp, final) != 0) {
			snprintf(err, errlen, "%s: write failed", final);
			rc = 3;
			goto done;
		}
		ts_tmp[0] = 0;
		cJSON *j = res_summary_json(out);
		snprintf(final, sizeof final, "%s/summary.json", s.opts->out_dir);
		if (!j || res_write_json(final, j, err, errlen))
			rc = 3;
		cJSON_Delete(j);
	}
done:
	if (csv)
		fclose(csv);
	if (s.ts)
		fclose(s.ts);
	if (s.te)
		fclose(s.te);
	if (te_tmp[0])
		unlink(te_tmp);
	if (csv_tmp[0])
		unlink(csv_tmp);
	if (ts_tmp[0])
		unlink(ts_tmp);
	teardown(&s);
	if (rc)
		met_summary_free(out);
	return rc;
}

int sim_trace_gen(const struct scenario *sc, const char *path, uint64_t *written, char *err,
		  size_t errlen)
{
	struct sim s;
	memset(&s, 0, sizeof s);
	s.sc = sc;
	evq_init(&s.q);
	*written = 0;
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = NULL;
	int rc = build_modules(&s, err, errlen);
	if (rc)
		goto done;
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "%s: cannot create", tmp);
		rc = 3;
		goto done;
	}
	uint32_t B = (uint32_t)sc->cluster.engine.kv_block_tokens;
	int64_t end = (int64_t)llround(sc->duration_s * 1e9);
	int got;
	while ((got = s.wl->next(s.wl_st, &a)) == 1 && a.arrival_ns <= end) {
		trace_write_kvsim(f, &a, B, 0);
		(*written)++;
		/* The session's later turns, as if each answer came at time 0:
		 * their arrival is then the think time. */
		struct request *cur = &a, *nxt = &b;
		while (s.wl->follow_up && (got = s.wl->follow_up(s.wl_st, cur, 1, 0, nxt)) == 1) {
			trace_write_kvsim(f, nxt, B, nxt->arrival_ns);
			(*written)++;
			struct request *t = cur;
			cur = nxt;
			nxt = t;
		}
		if (got < 0)
			break;
	}
	if (got < 0) {
		const char *why = s.wl->error ? s.wl->error(s.wl_st) : NULL;
		snprintf(err, errlen, "%s", why ? why : "out of memory in the workload");
		rc = why ? 2 : 3;
		goto done;
	}
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	f = NULL;
	if (bad || rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: write failed", path);
		rc = 3;
	}
done:
	if (f)
		fclose(f);
	if (rc)
		unlink(tmp);
	free(a.hashes);
	free(b.hashes);
	teardown(&s);
	return rc;
}
