/* router: arrival -> route -> retry -> dispatch -> migration or reload -> finish. */
#include "sim/router.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "sim/engine.h"
#include "sim/ledger.h"
#include "sim/links.h"
#include "sim/pd.h"
#include "sim/pool.h"
#include "sim/premig.h"
#include "sim/rules.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"
#include "sim/views.h"
#include "workloads/workload.h"

void router_workload_failed(struct sim *s)
{
	const char *why = s->wl->error ? s->wl->error(s->wl_st) : NULL;
	if (why)
		sim_fail_with(s, 2, why);
	else
		sim_fail(s, "out of memory in the workload");
}

static void schedule_arrival(struct sim *s, struct request *r, int from_source)
{
	ledger_arrive(s, r, from_source);
	s->rt.pending_arrivals++;
	if (!evq_push_tag(&s->q, r->arrival_ns, EV_ARRIVAL, (uint16_t)from_source, -1, r))
		sim_fail(s, "out of memory");
}

/* Pulls the source's next open-loop arrival, unless past the horizon. */
void router_pull_source(struct sim *s)
{
	struct request *r = pool_req_get(s);
	if (!r)
		return;
	int got = s->wl->next(s->wl_st, r);
	if (got < 0)
		router_workload_failed(s);
	if (got == 1 && r->arrival_ns <= s->end_arrivals_ns)
		schedule_arrival(s, r, 1);
	else
		pool_req_put(s, r);
}

static double recompute_cost_s(const struct sim *s, const struct request *r)
{
	uint32_t n = r->recomputed + r->preempt_recomputed;
	if (n == 0)
		return 0;
	/* on the pool that prefilled it (pool 0's model if none did) */
	int32_t at = r->prefill_node >= 0 ? r->prefill_node : r->node;
	const struct cost_model *c = at >= 0 ? s->nodes[at].cost : &s->costs[0];
	return c->tp * cost_prefill_s(c, n, r->cached + r->migrated + r->reloaded);
}

static void *pol_state(const struct sim *s, const struct request *r)
{
	/* one state: r->replica is not read (from the arrival prefetch, its
	 * line may still be on its way) */
	if (s->rt.n_pol_st == 1)
		return s->rt.pol_sts[0];
	return s->rt.pol_sts[r->replica < s->rt.n_pol_st ? r->replica : 0];
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
		sim_fail(s, "out of memory");
	if (r->state == REQ_DONE)
		pd_record(s, r);
	if (s->opts->on_request)
		s->opts->on_request(s->opts->ctx, r);
	int completed = r->state == REQ_DONE, session_done = 1;
	struct request *next_turn = NULL;
	if (s->wl->follow_up) {
		struct request *next = pool_req_get(s);
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
			router_workload_failed(s);
		s->rt.follow_ups += got == 1;
		if (got == 1 && next->arrival_ns <= s->end_arrivals_ns) {
			if (next->session == r->session)
				next->session_rec = r->session_rec;
			schedule_arrival(s, next, 0);
			session_done = 0;
			next_turn = next;
		} else {
			pool_req_put(s, next);
		}
	}
	if (s->rt.pol->on_complete)
		s->rt.pol->on_complete(pol_state(s, r), r,
				    completed && r->prefill_node < 0 ? r->node
				    : completed			  ? r->prefill_node
								  : -1,
				    session_done);
	if (s->pd.pol && s->pd.pol->on_complete)
		s->pd.pol->on_complete(s->pd.pol_st, r, completed && r->prefill_node >= 0 ? r->node : -1,
				     session_done);
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
		pool_session_end(s, rec);
	else if (rec && rec->live == 0 && next_turn && next_turn->session_rec == rec)
		premig_idle(s, rec, next_turn); /* between turns: its KV may move ahead */
	ledger_leave(s, r);
	pool_req_put(s, r);
}

static void reject(struct sim *s, struct request *r, enum req_state st, const char *reason)
{
	r->state = st;
	r->reason = reason;
	finish(s, r);
}

static void route(struct sim *s, struct request *r);

/* r's node failed (or was down when r got there): route it again from
 * scratch, up to router.max_retries times; its KV is lost, so what it had
 * computed counts as recomputed when it runs again. */
void router_retry(struct sim *s, struct request *r)
{
	if (r->node >= 0)
		views_count_done(s, r, (uint32_t)r->node);
	pd_drop(s, r);
	r->retries++;
	s->rt.retries++;
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

/* Decides whether to bring the session's KV from the node it last ran on.
 * Returns 1 if a transfer was started (the request waits for it). */
static int maybe_migrate(struct sim *s, struct request *r, uint32_t dst, enum migration_mode kv)
{
	struct session_rec *rec = r->session_rec;
	const struct scenario *sc = s->sc;
	/* a draining node still holds its cache (and serves what it has; a
	 * copy taken from it lands even if it is released meanwhile, as one
	 * from a crashed node does) */
	if (!rec || rec->last_node < 0 || (uint32_t)rec->last_node == dst ||
	    !sc->cluster.engine.prefix_caching ||
	    (!s->alive[rec->last_node] && s->sl.nstate[rec->last_node] != NS_DRAINING))
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
	uint32_t ports[4], n_ports;
	double latency_s;
	const struct cat_link *link = links_kv_path(s, src_i, dst, ports, &n_ports, &latency_s);
	double t_xfer = links_estimate_s(s, ports, n_ports, bytes, latency_s);
	double t_recompute = cost_prefill_s(dn->cost, tokens, (double)have * B);
	enum migration_mode mode = kv == MIG_DEFAULT ? s->rt.mech.migration : kv;
	if (sc->cluster.kv_transfer == KVX_NONE || mode == MIG_RECOMPUTE ||
	    (mode == MIG_AUTO && t_xfer >= t_recompute))
		return 0;
	r->mig_lo = have;
	r->mig_hi = there;
	r->state = REQ_TRANSFER;
	r->node = (int32_t)dst;
	r->xfer_start_ns = s->now;
	engine_pin(s, r, dst, &m_dst);
	s->rt.migrations++;
	s->rt.mig_why[r->mig_why < MR_N ? r->mig_why : MR_POLICY]++;
	s->rt.migration_bytes += bytes;
	if (s->log.te) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"from\":%d,\"to\":%u,\"bytes\":%.0f,\"link\":\"%s\"",
			 (unsigned long long)r->id, rec->last_node, dst, bytes, link->name);
		int64_t t_ns = (int64_t)llround(t_xfer * 1e9);
		runlog_trace_event(s, "kv transfer", 'X', 2, (int)dst, s->now, t_ns > 0 ? t_ns : 1, args);
	}
	links_start_flow(s, FLOW_MIGRATE, r, (int32_t)dst, ports, n_ports, bytes, latency_s);
	return 1;
}

/* r is at its node (after the routing latency): bring its KV, or queue it. */
static void arrive_at_node(struct sim *s, struct request *r, uint32_t dst,
			   enum migration_mode kv)
{
	if (!s->alive[dst]) {
		router_retry(s, r);
		return;
	}
	int moving = maybe_migrate(s, r, dst, kv);
	if (!moving)
		moving = engine_maybe_reload(s, r, dst);
	struct session_rec *rec = r->session_rec;
	rec->last_node = (int32_t)dst;
	session_add_node(rec, (int32_t)dst);
	if (!moving) {
		if (rec->hint_node == (int32_t)dst)
			node_hint_admission(&s->nodes[dst], r, rec->hint_run, rec->hint_key,
					    rec->hint_depth);
		engine_enqueue(s, dst, r);
	}
}

/* The policy's choice, the router's rules around it, then dispatch. */
static void route(struct sim *s, struct request *r)
{
	struct pol_node_view *view = s->vw.views[r->replica];
	if (s->rt.pol_reads_kv_util == POL_READS_KV_ALL && s->vw.report_ns == 0)
		views_sync_all(s);
	struct pol_view v;
	views_for_policy(s, r, &v);
	struct pol_decision d = {POL_SHED, -1, MIG_DEFAULT, "no_decision", 0, 0, 0};
	s->rt.routing = r;
	s->rt.pol->route(pol_state(s, r), &v, r, &d);
	s->rt.routing = NULL;
	if (s->log.te) {
		char args[200];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"session\":%llu,\"turn\":%u,\"node\":%d,\"decision\":\"%s\"",
			 (unsigned long long)r->id, (unsigned long long)r->session, r->turn, d.node,
			 d.action == POL_SHED ? (d.reason ? d.reason : "shed") : "route");
		runlog_trace_event(s, "route", 'i', 0, 0, s->now, 0, args);
	}
	if (d.action == POL_SHED || d.node < 0 || (uint32_t)d.node >= s->n_nodes ||
	    !view[d.node].up) {
		reject(s, r, REQ_SHED, d.action == POL_SHED && d.reason ? d.reason : "policy");
		return;
	}
	/* Then the column's mechanisms, rule by rule (rules.c). */
	const struct session_rec *rec = r->session_rec;
	struct route_ctx c = {
	    .r = r,
	    .view = view,
	    .dst = (uint32_t)d.node,
	    .new_session = r->turn <= 1 && rec->last_node < 0,
	    .why = d.reason && !strcmp(d.reason, "threshold") ? MR_THRESHOLD : MR_POLICY,
	};
	if (rules_apply(s, &c) == RULE_REJECT) {
		reject(s, r, c.state, c.reason);
		return;
	}
	uint32_t dst = c.dst;
	r->mig_why = (uint8_t)c.why;
	r->node = (int32_t)dst;
	r->num_tokens = r->prompt_tokens;
	if (s->rt.pol->on_dispatch)
		s->rt.pol->on_dispatch(pol_state(s, r), r, (int32_t)dst);
	views_count_dispatch(s, r, dst);
	/* The decision's own latency: hashing the prompt, the affinity store. */
	const struct router_cfg *rc = &s->sc->router;
	double lat = d.hashed_tokens * rc->hash_s_per_token + d.store_reads * rc->store_read_s +
		     d.store_writes * rc->store_write_s;
	int64_t lat_ns = (int64_t)llround(lat * 1e9);
	if (lat_ns > 0) {
		r->state = REQ_TRANSFER;
		if (!evq_push_tag(&s->q, s->now + lat_ns, EV_DISPATCH, (uint16_t)d.kv, (int32_t)dst, r))
			sim_fail(s, "out of memory");
		return;
	}
	if (s->rt.timing) {
		double t0 = runlog_wall_now();
		arrive_at_node(s, r, dst, d.kv);
		s->rt.arrive_ns += (runlog_wall_now() - t0) * 1e9;
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
 * reads (prefetch_prompt_hashes). Prefetches only; router_prefetch_arrival
 * (sim_int.h) calls it for each event while a stage is left. */
void router_prefetch_request(struct sim *s, const struct request *r)
{
	if (r != s->rt.pf_arrival) {
		/* all its lines: the arrival reads or writes each (its id and
		 * session, arrival time and node, replica and queue times, the
		 * prompt's split, the queue links) */
		for (size_t b = 0; b < sizeof *r; b += 64)
			__builtin_prefetch((const char *)r + b, 1);
		__builtin_prefetch((const char *)r + sizeof *r - 1, 1);
		s->rt.pf_arrival = r;
		s->rt.pf_second = NULL;
	} else if (r != s->rt.pf_second) {
		/* once: the line fetched meanwhile names the session */
		s->rt.pf_second = r;
		if (r->session_rec)
			__builtin_prefetch(r->session_rec, 1);
		else /* a first turn: pool_session_get inserts it */
			hmap_prefetch(&s->pool.sessions, r->session);
		if (s->rt.pol->prefetch)
			s->rt.pol->prefetch(pol_state(s, r), r);
		prefetch_prompt_hashes(s, r);
	}
}

void router_ev_arrival(struct sim *s, const struct event *ev)
{
	struct request *r = ev->ptr;
	int from_source = ev->tag;
	r->id = ++s->rt.next_id;
	s->met.arrived++;
	s->rt.pending_arrivals--;
	if (from_source)
		router_pull_source(s);
	/* a later turn carries its session's record from the turn before
	 * (finish), unless the session ended meanwhile */
	const struct session_rec *had = r->session_rec;
	if (!had || had->id != r->session)
		r->session_rec = pool_session_get(s, r->session);
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
	if (rec->live > 1 && s->vw.lazy_views) {
		/* Two requests of one session at once: one may read the
		 * session's frontier while the other's decode span, counted
		 * but not applied, would have moved it. From here on every
		 * node read is brought up to date first (sync_view,
		 * cached_prefix), this arrival's routing included. */
		s->vw.lazy_views = 0;
		for (uint32_t i = 0; i < s->n_nodes; i++)
			s->nodes[i].lazy_kv = 0;
	}
	r->replica = (uint32_t)(s->rt.replica_next++ % s->vw.n_replicas);
	if (s->opts->time_routing && s->rt.routed++ % TIME_EVERY == 0) {
		s->rt.timing = 1;
		double t0 = runlog_wall_now();
		route(s, r);
		s->rt.route_ns += (runlog_wall_now() - t0) * 1e9;
		s->rt.timed_routes++;
		s->rt.timing = 0;
		return;
	}
	route(s, r);
}

/* The dispatch record (EV_DISPATCH) carries the policy's decision across
 * its latency: the node, and what to do with KV held elsewhere. */
void router_ev_dispatch(struct sim *s, const struct event *ev)
{
	struct request *r = ev->ptr;
	uint32_t dst = (uint32_t)ev->node;
	enum migration_mode kv = (enum migration_mode)ev->tag;
	r->state = REQ_NEW;
	if (s->opts->time_routing && s->rt.dispatches++ % TIME_EVERY == 0) {
		double t0 = runlog_wall_now();
		arrive_at_node(s, r, dst, kv);
		s->rt.dispatch_ns += (runlog_wall_now() - t0) * 1e9;
		s->rt.timed_dispatches++;
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
void router_transfer_done(struct sim *s, struct request *r, uint32_t dst)
{
	if (--r->pending > 0)
		return;
	struct node *n = &s->nodes[dst];
	node_sync(n, s->now);
	/* a draining node takes back its own swapped-out requests, nothing
	 * new */
	if (engine_unpin(s, r, dst) ||
	    !(s->alive[dst] || (r->swapped && s->sl.nstate[dst] == NS_DRAINING))) {
		router_retry(s, r);
		return;
	}
	if (r->mig_hi > r->mig_lo)
		s->rt.migration_s += (double)(s->now - r->xfer_start_ns) * 1e-9;
	install_arrived(n, r, r->mig_lo, &r->mig_hi);
	install_arrived(n, r, r->rel_lo, &r->rel_hi);
	if (r->swapped) {
		r->rel_lo = r->rel_hi = 0; /* a swap-in is no prompt reload */
		s->eng.swapping_in[dst]--;
		n->hold_admissions = s->eng.swq_head[dst] != NULL || s->eng.swapping_in[dst] > 0;
	}
	engine_enqueue(s, dst, r);
}

void router_on_done(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	views_count_done(s, r, (uint32_t)r->node);
	if (r->pd == PD_PREFILL) {
		/* its prefill is done: on to a decode node */
		if (pd_handoff(s, r))
			router_retry(s, r);
		return;
	}
	finish(s, r);
}

/* Swapped-out requests wait, in order, until their node has room for
 * their KV (meanwhile it admits nothing new: vLLM gives the swapped queue
 * priority); then what HBM lost is reloaded and they resume first. */
static void on_swap_out_done(struct sim *s, struct request *r, uint32_t node)
{
	if (--r->pending > 0)
		return;
	if ((!s->alive[node] && s->sl.nstate[node] != NS_DRAINING) ||
	    r->pin_crashes != s->flt.crashes[node]) {
		router_retry(s, r);
		return;
	}
	r->qnext = NULL;
	if (s->eng.swq_tail[node])
		s->eng.swq_tail[node]->qnext = r;
	else
		s->eng.swq_head[node] = r;
	s->eng.swq_tail[node] = r;
	s->nodes[node].hold_admissions = 1;
	engine_try_swap_in(s, node);
}

void router_ev_deliver(struct sim *s, const struct event *ev)
{
	struct request *r = ev->ptr;
	uint32_t target = (uint32_t)ev->node;
	switch ((enum flow_kind)ev->tag) {
	case FLOW_MIGRATE:
	case FLOW_RELOAD:
		router_transfer_done(s, r, target);
		break;
	case FLOW_SWAP_OUT:
		on_swap_out_done(s, r, target);
		break;
	case FLOW_PREMIG:
		premig_delivered(s, target);
		break;
	case FLOW_PD:
		if (pd_delivered(s, r, target))
			router_retry(s, r);
		break;
	default: /* write-downs: the bytes are in the tier */
		break;
	}
}

void router_empty_node(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	node_sync(n, s->now);
	evq_timer_cancel(&s->q, i); /* its step end, if any */
	thermal_advance(s, i);
	s->hl[i].busy = 0;
	/* Queues may exceed their bound by requests that were in transfer
	 * when it was checked: size the scratch by what is there. */
	size_t need = (size_t)n->n_waiting + n->n_running + 1;
	if (need > s->rt.evac_cap) {
		struct request **e = realloc(s->rt.evac, need * sizeof *e);
		if (!e) {
			sim_fail(s, "out of memory");
			return;
		}
		s->rt.evac = e;
		s->rt.evac_cap = need;
	}
	uint32_t k = node_evacuate(n, s->rt.evac);
	s->flt.crashes[i]++;
	s->eng.swapping_in[i] = 0;
	if (s->alive[i])
		views_set_up(s, i, 0);
	views_refresh(s, i);
	for (uint32_t j = 0; j < k && !s->error; j++)
		router_retry(s, s->rt.evac[j]);
	if (s->pd.wait_head) {
		/* hand-overs waiting for room on it go to another decode node */
		uint32_t nf = pd_node_down(s, i);
		for (uint32_t j = 0; j < nf && !s->error; j++)
			router_retry(s, s->pd.fail[j]);
	} else {
		s->pd.own[i] = 0;
	}
	while (s->eng.swq_head[i] && !s->error) {
		struct request *r = s->eng.swq_head[i];
		s->eng.swq_head[i] = r->qnext;
		r->qnext = NULL;
		router_retry(s, r);
	}
	s->eng.swq_tail[i] = NULL;
}

int router_init(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	s->rt.pol = pol_find_at(sc->router.policy, "router.policy", err, errlen);
	if (!s->rt.pol)
		return 2;
	if (mech_resolve(s->rt.pol->family, s->rt.pol->report_interval_ms, &sc->router.mech_all,
			 &sc->router.mech_own, sc->router.params_path, sc->cluster.kv_transfer,
			 sc->cluster.thermal.resume_c, &s->rt.mech, err, errlen))
		return 2;
	s->rt.r_route = rng_stream(sc->seed, STREAM_ROUTING);
	if (!s->rt.r_route) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	struct pol_env penv = {(uint32_t)sc->cluster.nodes,
			       (uint32_t)sc->cluster.engine.kv_block_tokens, s->rt.r_route,
			       (uint32_t)sc->cluster.engine.max_num_seqs};
	/* Router replicas with a local store each keep their own state; a
	 * shared store (redis, etcd) means one map for all. */
	s->rt.n_pol_st = sc->router.store == STORE_LOCAL ? (uint32_t)sc->router.replicas : 1;
	s->rt.pol_sts = calloc(s->rt.n_pol_st, sizeof *s->rt.pol_sts);
	if (!s->rt.pol_sts) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	if (pol_check_params(sc->router.policy_params, &penv, err, errlen))
		return 2;
	for (uint32_t k = 0; k < s->rt.n_pol_st; k++) {
		s->rt.pol_sts[k] =
		    s->rt.pol->create(sc->router.params, sc->router.params_path, &penv, err, errlen);
		if (!s->rt.pol_sts[k])
			return 2;
	}
	s->rt.pol_reads_kv_util =
	    s->rt.pol->reads_kv_util ? s->rt.pol->reads_kv_util(s->rt.pol_sts[0]) : 0;
	return 0;
}

void router_free(struct sim *s)
{
	for (uint32_t k = 0; s->rt.pol_sts && k < s->rt.n_pol_st; k++)
		if (s->rt.pol_sts[k])
			s->rt.pol->destroy(s->rt.pol_sts[k]);
	free(s->rt.pol_sts);
	s->rt.pol_sts = NULL;
	if (s->rt.r_route)
		gsl_rng_free(s->rt.r_route);
	s->rt.r_route = NULL;
	free(s->rt.evac);
	s->rt.evac = NULL;
}
