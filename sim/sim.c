/* sim: the event loop and its handler table, the pools, set-up, tear-down, sim_run. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/writer.h"
#include "base/about.h"
#include "base/afile.h"
#include "sim/audit.h"
#include "sim/autoscale.h"
#include "sim/engine.h"
#include "sim/faults.h"
#include "base/interrupt.h"
#include "sim/ledger.h"
#include "sim/links.h"
#include "sim/pd.h"
#include "sim/pool.h"
#include "sim/power.h"
#include "sim/premig.h"
#include "base/rng.h"
#include "sim/router.h"
#include "sim/rules.h"
#include "sim/runlog.h"
#include "sim/sim.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"
#include "sim/views.h"
#include "workloads/workload.h"

/* --- request and session pools ------------------------------------------------ */

/* The engine's per-iteration fields are request.h's first 64 bytes: one
 * cache line, with requests 64-byte aligned. */
_Static_assert(offsetof(struct request, session_rec) + sizeof(void *) <= 64,
	       "struct request: the engine's fields outgrew one cache line");

/* --- set-up and tear-down: each layer's _init and _free, in order ---------- */

/* The core's own event kinds (sim_int.h, enum ev_kind); the layers with
 * timed mechanisms of their own register theirs in their _init. */
static void ev_step(struct sim *s, const struct event *ev);
static int core_kinds(struct sim *s)
{
	static const struct sim_ev_kind core[EV_CORE_KINDS] = {
		[EV_ARRIVAL] = {router_ev_arrival, NULL, 0},
		[EV_STEP] = {ev_step, NULL, 0},
		[EV_DISPATCH] = {router_ev_dispatch, NULL, 0},
		[EV_FLOW] = {links_ev_flow, links_ev_flow_stale, 0},
		[EV_DELIVER] = {router_ev_deliver, NULL, 0},
	};
	for (int k = 0; k < EV_CORE_KINDS; k++)
		if (sim_add_event_kind(s, core[k].handle, core[k].stale, core[k].flags) != k)
			return -1;
	return 0;
}

/* The workload's source. 0, or 2 with err. */
static int workload_init(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	struct wl_env wenv = {(uint32_t)sc->cluster.engine.kv_block_tokens,
			      (uint32_t)sc->cluster.model->max_context, sc->seed, sc->base_dir, 1.0,
			      NULL};
	s->wl_st = wl_create(sc->workload, &wenv, &s->wl, err, errlen);
	return s->wl_st ? 0 : 2;
}

static void workload_free(struct sim *s)
{
	if (s->wl_st)
		s->wl->destroy(s->wl_st);
	s->wl_st = NULL;
}

/* What a scenario needs before any node exists: the policies (router,
 * decode) and the workload. 0, or 2 with err naming the JSON path (3: out
 * of memory). */
static int build_modules(struct sim *s, char *err, size_t errlen)
{
	int rc = router_init(s, err, errlen);
	if (!rc)
		rc = pd_init(s, err, errlen);
	if (!rc)
		rc = workload_init(s, err, errlen);
	return rc;
}

static int has_slow_fault(const struct scenario *sc, uint32_t i)
{
	for (int f = 0; f < sc->n_faults; f++)
		if (sc->faults[f].kind == FAULT_SLOW && (uint32_t)sc->faults[f].target == i)
			return 1;
	return 0;
}

/* Each pool's cost model, and each node's pool, role and speed: the
 * fastest pool's prefill time over its pool's, for a 4,096-token prompt
 * (the roofline's compute-bound side, where GPUs differ most; a single
 * pool's is exactly 1). 0, or -1 when memory runs out. */
static int topology_init(struct sim *s)
{
	const struct scenario *sc = s->sc;
	uint32_t N = s->n_nodes;
	s->costs = calloc((size_t)sc->n_pools, sizeof *s->costs);
	s->pool_of = calloc(N, sizeof *s->pool_of);
	s->alive = calloc(N, 1);
	s->can_decode = calloc(N, 1);
	s->routable = calloc(N, 1);
	s->speed = calloc(N, sizeof *s->speed);
	s->hl = calloc(N, sizeof *s->hl);
	s->sl.nstate = calloc(N, 1);
	s->sl.held_from = calloc(N, sizeof *s->sl.held_from);
	s->sl.held_ns = calloc(N, sizeof *s->sl.held_ns);
	if (!s->costs || !s->pool_of || !s->alive || !s->can_decode || !s->routable || !s->speed ||
	    !s->hl || !s->sl.nstate || !s->sl.held_from || !s->sl.held_ns)
		return -1;
	for (int p = 0; p < sc->n_pools; p++)
		cost_init(&s->costs[p], &sc->pools[p].cl, sc->pools[p].weight_bytes);
	double fastest = INFINITY;
	for (int p = 0; p < sc->n_pools; p++) {
		double t = cost_prefill_s(&s->costs[p], 4096, 0);
		if (t < fastest)
			fastest = t;
	}
	for (int p = 0; p < sc->n_pools; p++) {
		const struct pool_cfg *pc = &sc->pools[p];
		double sp = sc->n_pools > 1 ? fastest / cost_prefill_s(&s->costs[p], 4096, 0) : 1.0;
		if (sp != 1.0)
			s->mixed_speeds = 1;
		for (int k = 0; k < pc->cl.nodes; k++) {
			uint32_t i = (uint32_t)(pc->first_node + k);
			s->pool_of[i] = (uint16_t)p;
			s->can_decode[i] = pc->role != POOL_PREFILL;
			s->routable[i] = pc->role != POOL_DECODE;
			s->speed[i] = sp;
		}
	}
	const struct cluster_cfg *cl = &sc->cluster;
	s->block_bytes = cl->model->kv_bytes_per_token * cl->engine.kv_block_tokens;
	return 0;
}

/* The nodes (engine, KV cache, health, slot), all up and held. 0, or -1
 * with err when memory runs out. */
/* node_hooks.on_gaps: the engine's inter-token gaps, to the metrics */
static void sim_on_gaps(void *ctx, int64_t gap_ns, uint64_t count)
{
	struct sim *s = ctx;
	if (met_gaps_add(&s->met, gap_ns, count))
		sim_fail(s, "out of memory");
}

static int nodes_init(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	uint32_t N = s->n_nodes;
	/* 64-byte aligned: a node's first line holds what observers of every
	 * node read (struct node) */
	void *na = NULL;
	if (posix_memalign(&na, 64, N * sizeof *s->nodes) != 0 || evq_timers(&s->q, N, EV_STEP)) {
		free(na);
		snprintf(err, errlen, "out of memory for %u nodes", N);
		return -1;
	}
	memset(na, 0, N * sizeof *s->nodes);
	s->nodes = na;
	struct node_hooks hooks = {
		.ctx = s,
		.on_done = router_on_done,
		.on_blocks_computed = ledger_on_blocks_computed,
		.computed_before = ledger_computed_before,
		.computed_never = ledger_computed_never,
		.on_swap_out = engine_on_swap_out,
		.on_gaps = sim_on_gaps,
	};
	const struct thermal_cfg *th = &sc->cluster.thermal;
	for (uint32_t i = 0; i < N; i++) {
		const struct pool_cfg *pc = &sc->pools[s->pool_of[i]];
		const struct cluster_cfg *pcl = &pc->cl;
		int server = pc->first_server + (int)((i - (uint32_t)pc->first_node) /
						      (uint32_t)pcl->nodes_per_server);
		if (node_init(&s->nodes[i], (int)i, server, (uint32_t)pc->kv_blocks_per_node,
			      &pcl->engine, &s->costs[s->pool_of[i]], &hooks)) {
			snprintf(err, errlen, "out of memory for node %u's KV cache", i);
			s->n_nodes = i + 1;
			return -1;
		}
		s->nodes[i].kv.spares = &s->kv_spares;
		/* Decode spans apply a span's KV growth and its time at its end;
		 * thermal throttling and slow-downs act per iteration, so with
		 * them a node steps one iteration per event (links_init: so do
		 * the tiers). */
		if (th->enabled || has_slow_fault(sc, i))
			s->nodes[i].max_span = 1;
		s->alive[i] = 1;
		s->sl.nstate[i] = NS_UP;
		s->sl.held_from[i] = 0;
		struct health *h = &s->hl[i];
		h->ambient_c = th->ambient_c;
		h->temp_c =
		    th->enabled ? th->ambient_c + th->c_per_w * catalog_gpu_idle_w(pcl->gpu) : 0;
		h->slow = 1.0;
	}
	s->sl.n_held = s->sl.n_held_max = N;
	return 0;
}

static void nodes_free(struct sim *s)
{
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++)
		node_free(&s->nodes[i]);
	kv_spares_free(&s->kv_spares);
	free(s->nodes);
	free(s->routable);
	free(s->pool_of);
	free(s->alive);
	free(s->sl.nstate);
	free(s->sl.held_from);
	free(s->sl.held_ns);
	free(s->can_decode);
	free(s->speed);
	free(s->costs);
	free(s->hl);
}

/* How the engines and views save work: decided once every layer is set
 * up (they read the policy, the load reports and the options). */
static void modes_init(struct sim *s)
{
	int looks_up = s->rt.pol->looks_up_cache && s->rt.pol->looks_up_cache(s->rt.pol_sts[0]);
	s->vw.lazy_views = (s->rt.pol_reads_kv_util || looks_up) && !s->opts->eager_kv_views;
	/* Prefill iterations open decode spans (node.fold_ok) unless a test
	 * asks otherwise, or iterations are traced (one slice per step). */
	s->fold = !s->opts->no_fold && !s->opts->trace_events;
	/* Requests hold back their private blocks' commits (node.c,
	 * deferred commits) unless a test asks otherwise. */
	s->defer = !s->opts->eager_commits;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		/* periodic load reports read every node's KV use: counted
		 * where a span allows, without giving up spans for it */
		s->nodes[i].lazy_kv = s->vw.lazy_views	       ? 1
				      : s->vw.report_ns > 0 && !s->opts->eager_kv_views ? 2
										       : 0;
		s->nodes[i].fold_ok = s->fold && !s->nodes[i].swap;
		s->nodes[i].defer_commits = s->defer && s->nodes[i].prefix_caching;
	}
}

/* Set-up once the policies and workload are built: each layer's _init,
 * in an order where each reads only what the ones before it made; the
 * first events are scheduled in this order too (faults, autoscalers, load
 * reports). 0, or -1 with err when memory runs out. */
static int init_cluster(struct sim *s, char *err, size_t errlen)
{
	if (ledger_init(s) || runlog_init(s) || topology_init(s))
		goto oom;
	if (nodes_init(s, err, errlen))
		return -1;
	if (links_init(s) || views_init(s) || engine_init(s) || faults_init(s) || premig_init(s) ||
	    autoscale_init(s) || views_start(s))
		goto oom;
	modes_init(s);
	rules_init(s);
	return 0;
oom:
	snprintf(err, errlen, "out of memory for %u nodes", s->n_nodes);
	return -1;
}

/* Requests still referenced by events (only after an error); one request
 * may be named twice, so each is handed back once. */
static void events_free(struct sim *s)
{
	struct event ev;
	while (evq_pop(&s->q, &ev)) {
		struct request *r = ev.ptr;
		if (r && r->pending != UINT32_MAX) {
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	}
	evq_free(&s->q);
}

/* Tear-down: after an error, requests may still sit in nodes, queues,
 * events and flows; each layer hands back what it holds, then frees. */
static void teardown(struct sim *s)
{
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		for (struct request *r = n->wait_head, *next; r; r = next) {
			next = r->qnext;
			pool_req_put(s, r);
		}
		for (uint32_t k = 0; n->running && k < n->n_running; k++)
			pool_req_put(s, n->running[k]);
		n->wait_head = NULL;
		n->n_running = 0;
	}
	engine_free(s);
	pd_free(s);
	premig_free(s);
	autoscale_free(s);
	views_free(s);
	router_free(s);
	workload_free(s);
	events_free(s);
	links_free(s);
	nodes_free(s);
	faults_free(s);
	pool_free(s);
	ledger_free(s);
	met_free(&s->met);
}

int sim_validate(const struct scenario *sc, char *err, size_t errlen)
{
	struct sim s;
	memset(&s, 0, sizeof s);
	s.sc = sc;
	s.n_nodes = (uint32_t)sc->cluster.nodes;
	evq_init(&s.q);
	pool_init(&s);
	int rc = build_modules(&s, err, errlen);
	teardown(&s);
	return rc;
}

/* Every arrived request has ended and none is to come: what is left in
 * the queue (samples, load reports, write-downs, fault ends) does not
 * extend the run. */
static int run_over(const struct sim *s)
{
	return s->rt.pending_arrivals == 0 &&
	       s->met.arrived == s->met.completed + s->met.shed + s->met.failed;
}
/* A node's step has ended (its timer): the rest of a decode span goes on,
 * or the step's results are applied and the next step starts. */
static void ev_step(struct sim *s, const struct event *ev)
{
	uint32_t i = (uint32_t)ev->node;
	if (node_span_continues(&s->nodes[i], s->now)) {
		if (evq_repush(&s->q, ev, s->nodes[i].step_end_ns))
			sim_fail(s, "out of memory");
	} else {
		if (s->log.te)
			runlog_trace_step(s, i);
		node_finish_step(&s->nodes[i], s->now);
		engine_kick(s, i);
		if (s->pd.wait_head && s->pd.wait_head[i])
			pd_try_waiting(s, i);
	}
	if (s->nodes[i].kv.oom)
		sim_fail(s, "out of memory (KV cache index)");
}


/* The summary of a run that ended (its figures, per node, the router's
 * counters). 0, or -1 when memory runs out. */
/* The effective settings the engine version gave (summary.json "engine"). */
static struct res_engine engine_of(const struct cluster_cfg *cl)
{
	const struct cost_cfg *co = &cl->cost;
	return (struct res_engine){.version = engine_version_names[cl->engine.version],
				   .max_num_seqs = cl->engine.max_num_seqs,
				   .max_num_batched_tokens = cl->engine.max_num_batched_tokens,
				   .cuda_graph_max_tokens = co->graph_max_tokens,
				   .custom_allreduce = co->custom_ar,
				   .async_scheduling = co->async_cpu,
				   .step_ms = co->step_ms,
				   .overhead_ms = co->overhead_ms,
				   .overhead_per_seq_ms = co->overhead_per_seq_ms,
				   .op_overhead_us = co->op_overhead_us};
}

/* A policy that keys on the session, on a trace whose sessions each had one
 * request, routes as its fallback does: summary.warning says so. */
static void session_warning(const struct sim *s, struct met_summary *out)
{
	const struct scenario *sc = s->sc;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(sc->workload, "kind");
	if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "trace") || s->rt.follow_ups ||
	    !out->arrived)
		return;
	const char *how = pol_session_fallback(sc->router.policy, sc->router.params);
	if (!how)
		return;
	snprintf(out->warning, sizeof out->warning,
		 "router.policy %s keys on the session, but every session of this trace had one "
		 "request (Mooncake and Azure traces make each request its own session), so it "
		 "routed %s; prefix_affinity keys on the prompt's blocks instead, and `kvsim trace "
		 "import` makes a kvsim trace with sessions from a chat log",
		 sc->router.policy, how);
}

static int summarize(struct sim *s, int truncated, double started, struct met_summary *out)
{
	const struct scenario *sc = s->sc;
	double sim_s = (double)s->now * 1e-9;
	met_summarize(&s->met, sim_s, out);
	snprintf(out->scenario, sizeof out->scenario, "%s", sc->name);
	snprintf(out->policy, sizeof out->policy, "%s", sc->router.policy);
	snprintf(out->version, sizeof out->version, "%s", kvsim_version());
	out->seed = sc->seed;
	out->truncated = truncated;
	if (s->wl->skipped)
		out->skipped_lines = s->wl->skipped(s->wl_st, out->skipped_first, sizeof out->skipped_first);
	session_warning(s, out);
	/* the timed sums scaled up to every arrival and dispatch */
	double fr = s->rt.timed_routes ? (double)s->rt.routed / (double)s->rt.timed_routes : 0;
	double fd = s->rt.timed_dispatches ? (double)s->rt.dispatches / (double)s->rt.timed_dispatches : 0;
	out->route_ns = (s->rt.route_ns - s->rt.arrive_ns) * fr;
	out->arrive_ns = s->rt.route_ns * fr + s->rt.dispatch_ns * fd;
	out->routed = s->rt.routed;
	out->kv_views_counted = s->vw.kv_counted;
	out->kv_views_synced = s->vw.kv_synced;
	out->kv_lookups_unapplied = s->vw.kv_unapplied;
	out->kv_lookups_evicting = s->vw.kv_evicting;
	out->kv_lookups_locked = s->vw.kv_locked;
	out->kv_lookups_spared = s->vw.kv_spared;
	out->kv_lookups = s->vw.kv_lookups;
	ledger_stats(s, &out->ever_epochs_forgotten, &out->ever_blocks_peak);
	out->sync_ns = s->rt.sync_ns * fr;
	out->migration_count = s->rt.migrations;
	for (int k = 0; k < MR_N; k++)
		out->migration_by_reason[k] = s->rt.mig_why[k];
	out->mech = s->rt.mech;
	out->family = s->rt.pol->family;
	out->product = s->rt.pol->product;
	out->kv_transfer = s->sc->cluster.kv_transfer;
	out->engine = engine_of(&s->sc->cluster);
	out->migration_bytes = s->rt.migration_bytes;
	out->migration_s = s->rt.migration_s;
	out->offload_bytes_out = s->lk.offload_out;
	out->offload_bytes_in = s->lk.offload_in;
	out->nodes = calloc(s->n_nodes, sizeof *out->nodes);
	if (!out->nodes)
		return -1;
	out->n_nodes = s->n_nodes;
	double sum = 0, sumsq = 0, mx = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		const struct node *n = &s->nodes[i];
		struct met_node *mn = &out->nodes[i];
		mn->id = (int)i;
		mn->pool = s->pool_of[i];
		/* over the time it was held (the run's, unless autoscaled) */
		int64_t held = sim_held_ns(s, i);
		if (held == s->now) {
			mn->busy_ratio = sim_s > 0 ? (double)n->busy_ns * 1e-9 / sim_s : 0;
			mn->mean_kv_util =
			    s->now > 0 ? n->kv_used_block_ns / (double)s->now / n->kv.n_blocks : 0;
		} else {
			mn->busy_ratio = held > 0 ? (double)n->busy_ns / (double)held : 0;
			mn->mean_kv_util =
			    held > 0 ? n->kv_used_block_ns / (double)held / n->kv.n_blocks : 0;
		}
		mn->peak_kv_util = (double)n->peak_used / n->kv.n_blocks;
		mn->requests = n->completed;
		out->admission_hints += n->hints;
		out->admission_hints_right += n->hints_right;
		out->admission_hint_keys_current += n->hint_keys_current;
		out->admission_hint_keys_right += n->hint_keys_right;
		out->kv_blocks_held += n->held_blocks;
		out->kv_lookups_held += n->held_lookups;
		out->kv_commits_held += n->held_commits;
		thermal_advance(s, i);
		mn->throttled_s = s->hl[i].throttled_s;
		mn->held_s = (double)held * 1e-9;
		mn->energy_j = power_energy_j(s, i);
		out->energy_j += mn->energy_j;
		const struct cluster_cfg *pcl = &sc->pools[s->pool_of[i]].cl;
		double gpu_h = mn->held_s * pcl->tp / 3600.0;
		out->gpu_hours += gpu_h;
		out->cost_usd += gpu_h * pcl->gpu->price_per_hour;
		out->nodes_mean += sim_s > 0 ? mn->held_s / sim_s : 0;
		double x = (double)n->completed;
		sum += x;
		sumsq += x * x;
		if (x > mx)
			mx = x;
	}
	double mean = sum / s->n_nodes;
	/* figures of nothing served have no sample: n/a, null in JSON */
	out->imbalance_max_over_mean = mean > 0 ? mx / mean : NAN;
	out->pools = calloc((size_t)sc->n_pools, sizeof *out->pools);
	if (!out->pools)
		return -1;
	out->n_pools = (size_t)sc->n_pools;
	static const char *const roles[] = {"mixed", "prefill", "decode"};
	for (int p = 0; p < sc->n_pools; p++) {
		const struct pool_cfg *pc = &sc->pools[p];
		struct met_pool *mp = &out->pools[p];
		snprintf(mp->name, sizeof mp->name, "%s", pc->name);
		mp->role = roles[pc->role];
		snprintf(mp->gpu, sizeof mp->gpu, "%s", pc->cl.gpu->name);
		mp->tp = pc->cl.tp;
		mp->nodes = pc->nodes0;
		double held_s = 0;
		for (int k = 0; k < pc->cl.nodes; k++) {
			const struct met_node *mn = &out->nodes[pc->first_node + k];
			if (pc->as.kind == AS_NONE) {
				mp->busy_ratio += mn->busy_ratio / pc->cl.nodes;
				mp->mean_kv_util += mn->mean_kv_util / pc->cl.nodes;
			} else {
				/* weighted by the time each node was held */
				mp->busy_ratio += mn->busy_ratio * mn->held_s;
				mp->mean_kv_util += mn->mean_kv_util * mn->held_s;
			}
			held_s += mn->held_s;
			mp->gpu_hours += mn->held_s * pc->cl.tp / 3600.0;
			mp->energy_j += mn->energy_j;
			mp->requests += mn->requests;
		}
		if (pc->as.kind != AS_NONE && held_s > 0) {
			mp->busy_ratio /= held_s;
			mp->mean_kv_util /= held_s;
		}
		mp->nodes_mean = sim_s > 0 ? held_s / sim_s : 0;
		out->autoscaled |= pc->as.kind != AS_NONE;
	}
	out->disaggregated = sc->disaggregated;
	out->scale_up = s->sl.scale_up;
	out->scale_down = s->sl.scale_down;
	out->nodes_max = s->sl.n_held_max;
	out->energy_j_per_out = out->tokens.output ? out->energy_j / (double)out->tokens.output : NAN;
	out->energy_kwh = out->energy_j / 3.6e6;
	out->pd = (struct met_pd){s->pd.stats.count, s->pd.stats.failovers, s->pd.stats.local,
				  s->pd.stats.bytes,  s->pd.stats.seconds,	 s->pd.stats.wait_s};
	for (int k = 0; k < 4; k++)
		out->ttft_split_s[k] = s->met.completed ? s->pd.ttft_split[k] / (double)s->met.completed : NAN;
	out->imbalance_jain = sumsq > 0 ? sum * sum / (s->n_nodes * sumsq) : NAN;
	out->events = s->q.popped;
	out->wall_s = runlog_wall_now() - started;
	out->requests_per_wall_s = out->wall_s > 0 ? (double)out->arrived / out->wall_s : 0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	out->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;

	return 0;
}


/* The run's files, written and flushed, into the set; summary.json last. */
static int sim_write_results(struct sim *s, struct afile *csv, const struct met_summary *out,
			     struct afile_set *set, char *err, size_t errlen)
{
	char path[4200];
	if (csv->f && (afile_set_add(set, csv, err, errlen) ||
		       afile_set_add(set, &s->log.ts_file, err, errlen)))
		return -1;
	if (s->log.te_file.f && afile_set_add(set, &s->log.te_file, err, errlen))
		return -1;
	if (!s->opts->out_dir)
		return 0;
	cJSON *j = res_bench_serving_json(out);
	snprintf(path, sizeof path, "%s/bench_serving.json", s->opts->out_dir);
	int brc = !j ? -1 : res_write_json_in(set, path, j, err, errlen);
	if (!j)
		snprintf(err, errlen, "%s: out of memory", path);
	cJSON_Delete(j);
	if (brc)
		return -1;
	j = res_summary_json(out);
	snprintf(path, sizeof path, "%s/summary.json", s->opts->out_dir);
	int rc = !j ? -1 : res_write_json_in(set, path, j, err, errlen);
	if (!j)
		snprintf(err, errlen, "%s: out of memory", path);
	cJSON_Delete(j);
	return rc;
}

/* The event loop: each event to its kind's handler, then the chores the
 * layers registered. Returns 1 when the wall-clock limit cut the run
 * short, else 0 (s->error or an interrupt may have ended it). */
static int sim_loop(struct sim *s, double started)
{
	int show = s->opts->progress && isatty(2);
	double last_draw = started;
	struct event ev;
	while (!s->error && !intr_caught() && evq_pop(&s->q, &ev)) {
		const struct sim_ev_kind *k = &s->ev_kinds[ev.kind];
		if (k->stale && k->stale(s, &ev)) {
			s->q.popped--;
			continue;
		}
		if (run_over(s))
			break;
		if (s->opts->audit && ev.time_ns < s->now) {
			audit_fail(s, "the clock went back to %.9f s", (double)ev.time_ns * 1e-9);
			break;
		}
		s->now = ev.time_ns;
		router_prefetch_arrival(s);
		k->handle(s, &ev);
		for (uint32_t c = 0; c < s->n_chores; c++)
			if (*s->chores[c].due)
				s->chores[c].run(s);
		if (s->opts->audit && !s->error)
			audit_event(s, &ev);
		if (s->opts->wall_limit_s > 0 && (s->q.popped & 0xfff) == 0 &&
		    runlog_wall_now() - started > s->opts->wall_limit_s)
			return 1;
		if (show && (s->q.popped & 0xffff) == 0 && runlog_wall_now() - last_draw > 0.5) {
			runlog_progress(s, started);
			last_draw = runlog_wall_now();
		}
	}
	if (show) {
		runlog_progress(s, started);
		fputc('\n', stderr);
	}
	return 0;
}

/* --audit's checks once the run has drained: every request ended once,
 * and the routers' records emptied. 0, or the error code. */
static int audit_end(struct sim *s)
{
	if (s->met.arrived != s->met.completed + s->met.shed + s->met.failed)
		audit_fail(s, "after the drain %llu arrived != %llu completed + %llu shed + %llu failed",
			   (unsigned long long)s->met.arrived, (unsigned long long)s->met.completed,
			   (unsigned long long)s->met.shed, (unsigned long long)s->met.failed);
	else
		views_audit_drained(s);
	return s->error;
}

/* Everything up to the first event: the policies and workload, the
 * requests.csv file, the metrics, the layers, the trace, the first
 * arrivals and the timeseries. 0, or the exit code with err. */
static int sim_setup(struct sim *s, struct afile *csv, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	char path[4200];
	int rc = intr_caught() ? intr_interrupted(err, errlen) : build_modules(s, err, errlen);
	if (rc)
		return rc;
	if (s->opts->out_dir) {
		snprintf(path, sizeof path, "%s/requests.csv", s->opts->out_dir);
		if (res_mkdirs(s->opts->out_dir, err, errlen) || afile_open(csv, path, err, errlen))
			return 3;
		met_csv_header_opts(csv->f, NULL, sc->client.on);
	}
	met_init(&s->met, sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, csv->f);
	const struct met_client mc = {sc->client.on, sc->client.api_server_ms * 1e-3,
				      sc->client.tokenize_us_per_token * 1e-6,
				      sc->client.first_chunk_ms * 1e-3, sc->client.messages_per_token};
	met_set_client(&s->met, &mc);
	if (s->wl->stages) {
		const struct wl_stage_info *win;
		size_t n = s->wl->stages(s->wl_st, &win);
		if (met_set_stages(&s->met, win, n)) {
			snprintf(err, errlen, "out of memory");
			return 3;
		}
	}
	if (init_cluster(s, err, errlen))
		return 3;
	s->end_arrivals_ns = (int64_t)llround(sc->duration_s * 1e9);
	if (s->opts->trace_events && runlog_trace_open(s, err, errlen))
		return 3;
	router_pull_source(s);
	if (s->opts->out_dir) {
		snprintf(path, sizeof path, "%s/timeseries.csv", s->opts->out_dir);
		if (runlog_timeseries_open(s, path, err, errlen))
			return 3;
	}
	return 0;
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
	s.n_nodes = (uint32_t)sc->cluster.nodes;
	evq_init(&s.q);
	pool_init(&s);
	double started = runlog_wall_now();
	struct afile csv = {0};
	struct afile_set own = {0}, *set = s.opts->result_set ? s.opts->result_set : &own;
	struct stat st;
	/* A folder this run makes goes again if the run fails. */
	int made_dir = s.opts->out_dir && stat(s.opts->out_dir, &st) != 0;
	int truncated = 0;
	int rc = core_kinds(&s) ? (snprintf(err, errlen, "out of memory"), 3)
				: sim_setup(&s, &csv, err, errlen);
	if (!rc) {
		truncated = sim_loop(&s, started);
		rc = s.error             ? s.error
		     : intr_caught()     ? intr_interrupted(err, errlen)
		     : s.opts->audit && !truncated ? audit_end(&s)
						    : 0;
	}
	if (!rc && summarize(&s, truncated, started, out)) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
	}
	if (!rc) {
		if (s.log.te)
			runlog_trace_end(&s);
		s.log.ts = NULL;
		if (sim_write_results(&s, &csv, out, set, err, errlen) ||
		    (set == &own && afile_set_commit(&own, err, errlen)))
			rc = 3;
	}
	afile_discard(&csv);
	runlog_discard(&s);
	afile_set_discard(&own);
	if (rc && made_dir)
		rmdir(s.opts->out_dir);
	teardown(&s);
	if (rc)
		met_summary_free(out);
	return rc;
}
