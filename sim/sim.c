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

/* --- node stepping ----------------------------------------------------------- */

static void teardown(struct sim *s)
{
	/* After an error, requests may still sit in nodes: hand them back. */
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
	for (uint32_t i = 0; s->swq_head && i < s->n_nodes; i++)
		for (struct request *r = s->swq_head[i], *next; r; r = next) {
			next = r->qnext;
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	for (uint32_t i = 0; s->pdw_head && i < s->n_nodes; i++)
		for (struct request *r = s->pdw_head[i], *next; r; r = next) {
			next = r->qnext;
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	free(s->pdw_head);
	free(s->pdw_tail);
	free(s->routable);
	free(s->pd_own);
	free(s->pool_of);
	free(s->alive);
	free(s->nstate);
	free(s->held_from);
	free(s->held_ns);
	free(s->can_decode);
	free(s->speed);
	free(s->costs);
	pd_free(s);
	free(s->swq_head);
	free(s->swq_tail);
	free(s->crashes);
	free(s->fault_head);
	free(s->fault_next);
	free(s->swapping_in);
	premig_free(s);
	autoscale_free(s);
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++)
		node_free(&s->nodes[i]);
	kv_spares_free(&s->kv_spares);
	free(s->nodes);
	for (uint32_t k = 0; s->views && k < s->n_replicas; k++)
		free(s->views[k]);
	free(s->views);
	views_free(s);
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
			pool_req_put(s, r);
		}
	}
	for (uint32_t k = 0; k < s->net.n_active; k++) {
		struct request *r = s->net.f[s->net.active[k]].ptr;
		if (r && r->pending != UINT32_MAX) {
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
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
	ledger_free(s);
	evq_free(&s->q);
	met_free(&s->met);
}

/* Builds policy and workload; 0, or 2 with err naming the JSON path. */
static int build_modules(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	s->pol = pol_find_at(sc->router.policy, "router.policy", err, errlen);
	if (!s->pol)
		return 2;
	if (mech_resolve(s->pol->family, s->pol->report_interval_ms, &sc->router.mech_all,
			 &sc->router.mech_own, sc->router.params_path,
			 sc->cluster.kv_transfer, sc->cluster.thermal.resume_c, &s->mech, err, errlen))
		return 2;
	s->r_route = rng_stream(sc->seed, STREAM_ROUTING);
	if (!s->r_route) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	struct pol_env penv = {(uint32_t)sc->cluster.nodes, (uint32_t)sc->cluster.engine.kv_block_tokens,
			       s->r_route, (uint32_t)sc->cluster.engine.max_num_seqs};
	/* Router replicas with a local store each keep their own state; a
	 * shared store (redis, etcd) means one map for all. */
	s->n_replicas = (uint32_t)sc->router.replicas;
	s->n_pol_st = sc->router.store == STORE_LOCAL ? s->n_replicas : 1;
	s->pol_sts = calloc(s->n_pol_st, sizeof *s->pol_sts);
	if (!s->pol_sts) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	if (pol_check_params(sc->router.policy_params, &penv, err, errlen))
		return 2;
	for (uint32_t k = 0; k < s->n_pol_st; k++) {
		s->pol_sts[k] = s->pol->create(sc->router.params, sc->router.params_path, &penv, err,
					       errlen);
		if (!s->pol_sts[k])
			return 2;
	}
	s->pol_reads_kv_util = s->pol->reads_kv_util ? s->pol->reads_kv_util(s->pol_sts[0]) : 0;
	int rc = pd_init(s, err, errlen);
	if (rc)
		return rc;
	struct wl_env wenv = {(uint32_t)sc->cluster.engine.kv_block_tokens,
			      (uint32_t)sc->cluster.model->max_context, sc->seed, sc->base_dir, 1.0,
			      NULL};
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
	const struct pool_cfg *lastp = &sc->pools[sc->n_pools - 1];
	s->n_servers = (uint32_t)(lastp->first_server + lastp->n_servers);
	s->pool_of = calloc(N, sizeof *s->pool_of);
	s->alive = calloc(N, 1);
	s->nstate = calloc(N, 1);
	s->held_from = calloc(N, sizeof *s->held_from);
	s->held_ns = calloc(N, sizeof *s->held_ns);
	s->can_decode = calloc(N, 1);
	s->routable = calloc(N, 1);
	s->speed = calloc(N, sizeof *s->speed);
	s->pd_own = calloc(N, sizeof *s->pd_own);
	if (sc->disaggregated) {
		s->pdw_head = calloc(N, sizeof *s->pdw_head);
		s->pdw_tail = calloc(N, sizeof *s->pdw_tail);
		if (!s->pdw_head || !s->pdw_tail)
			goto oom;
	}
	if (!s->pool_of || !s->alive || !s->nstate || !s->held_from || !s->held_ns ||
	    !s->can_decode || !s->routable || !s->speed || !s->pd_own)
		goto oom;
	/* A node's speed: the fastest pool's prefill time over its pool's,
	 * for a 4,096-token prompt (the roofline's compute-bound side, where
	 * GPUs differ most; a single pool's is exactly 1). */
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
	s->crashes = calloc(N, sizeof *s->crashes);
	s->swapping_in = calloc(N, sizeof *s->swapping_in);
	s->wd_host = calloc(s->n_servers, sizeof *s->wd_host);
	s->wd_nvme = calloc(s->n_servers, sizeof *s->wd_nvme);
	s->dirty = calloc(s->n_servers, sizeof *s->dirty);
	s->is_dirty = calloc(s->n_servers, 1);
	if (!s->nodes || !s->views || !s->total_out || !s->lheap || !s->hl || !s->ectx ||
	    !s->swq_head || !s->swq_tail || !s->crashes || !s->swapping_in ||
	    !s->wd_host || !s->wd_nvme || !s->dirty || !s->is_dirty ||
	    flow_init(&s->net, 2 * N + 2 * s->n_servers) || evq_timers(&s->q, N, EV_STEP))
		goto oom;
	for (uint32_t k = 0; k < s->n_replicas; k++)
		if (!(s->views[k] = calloc(N, sizeof **s->views)))
			goto oom;
	if (views_init(s))
		goto oom;
	s->view = s->views[0];
	s->report_ns = (int64_t)llround(s->mech.report_s * 1e9);
	s->block_bytes = cl->model->kv_bytes_per_token * cl->engine.kv_block_tokens;
	uint64_t dram_blocks = (uint64_t)(cl->tiers.dram_bytes / s->block_bytes);
	uint64_t nvme_blocks = (uint64_t)(cl->tiers.nvme_bytes / s->block_bytes);
	/* the servers' tiers hold KV when the column's engines offload to
	 * them; swap preemption (vLLM's CPU swap space) uses DRAM for the
	 * preempted requests' KV alone otherwise */
	s->has_dram = dram_blocks > 0 && s->mech.offload;
	s->swap_dram = dram_blocks > 0 && cl->engine.preempt_swap;
	s->has_nvme = nvme_blocks > 0 && s->mech.offload;
	if (pidx_init(&s->dram, s->n_servers, dram_blocks) ||
	    pidx_init(&s->nvme, s->n_servers, nvme_blocks))
		goto oom;
	s->dram.on_evict = links_on_dram_evict;
	s->dram.evict_ctx = s;
	struct node_hooks hooks = {
		.ctx = s,
		.on_done = router_on_done,
		.on_blocks_computed = ledger_on_blocks_computed,
		.computed_before = ledger_computed_before,
		.computed_never = ledger_computed_never,
		.on_swap_out = engine_on_swap_out,
	};
	const struct thermal_cfg *th = &cl->thermal;
	uint32_t n_up = 0;
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
		s->ectx[i] = (struct evict_ctx){s, (uint32_t)server};
		/* Decode spans apply a span's KV growth and its time at its end;
		 * watermark offload, thermal throttling and slow-downs act per
		 * iteration, so with them a node steps one iteration per event. */
		if (s->has_dram || s->has_nvme || s->swap_dram || th->enabled || has_slow_fault(sc, i))
			s->nodes[i].max_span = 1;
		if (s->has_dram || s->has_nvme) {
			s->nodes[i].kv.on_evict = links_on_hbm_evict;
			s->nodes[i].kv.evict_ctx = &s->ectx[i];
		}
		/* the routers' policy routes to prefill and mixed pools (a
		 * decode pool's nodes are reached through pd.c) */
		int routable = pc->role != POOL_DECODE;
		s->alive[i] = 1;
		s->nstate[i] = NS_UP;
		s->held_from[i] = 0;
		n_up += (uint32_t)routable;
		for (uint32_t k = 0; k < s->n_replicas; k++) {
			s->views[k][i].server = server;
			s->views[k][i].up = routable;
			s->views[k][i].kv_blocks = s->nodes[i].kv.n_blocks;
			s->views[k][i].speed = s->speed[i];
		}
		struct health *h = &s->hl[i];
		h->ambient_c = th->ambient_c;
		h->temp_c =
		    th->enabled ? th->ambient_c + th->c_per_w * catalog_gpu_idle_w(pcl->gpu) : 0;
		h->slow = 1.0;
		flow_set_capacity(&s->net, links_port_nvlink(i), pcl->nvlink_bytes_per_s);
		flow_set_capacity(&s->net, links_port_nic(i), pcl->nic_bytes_per_s);
		views_refresh(s, i);
	}
	s->n_up = n_up;
	s->n_held = s->n_held_max = N;
	for (uint32_t k = 0; k < s->n_replicas; k++)
		if (lh_init(&s->lheap[k], s->views[k], N))
			goto oom;
	for (int p = 0; p < sc->n_pools; p++) {
		const struct pool_cfg *pc = &sc->pools[p];
		for (int k = 0; k < pc->n_servers; k++) {
			uint32_t sv = (uint32_t)(pc->first_server + k);
			flow_set_capacity(&s->net, links_port_host(s, sv), pc->cl.host_bytes_per_s);
			flow_set_capacity(&s->net, links_port_nvme(s, sv), pc->cl.nvme->bytes_per_s);
		}
	}
	if (faults_schedule(s) || premig_init(s) || autoscale_init(s))
		goto oom;
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
		/* periodic load reports read every node's KV use: counted
		 * where a span allows, without giving up spans for it */
		s->nodes[i].lazy_kv = s->lazy_views	       ? 1
				      : s->report_ns > 0 && !s->opts->eager_kv_views ? 2
										       : 0;
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
/* The handler of each event kind, and when a popped event of it is
 * stale (superseded by a later one: skipped, not delivered). The loop
 * knows no kind: a new mechanism adds a kind (sim_int.h) and a row. */
struct sim_ev_kind {
	void (*handle)(struct sim *s, const struct event *ev);
	int (*stale)(const struct sim *s, const struct event *ev); /* NULL: never */
};

/* A node's step has ended (its timer): the rest of a decode span goes on,
 * or the step's results are applied and the next step starts. */
static void ev_step(struct sim *s, const struct event *ev)
{
	uint32_t i = (uint32_t)ev->node;
	if (node_span_continues(&s->nodes[i], s->now)) {
		if (evq_repush(&s->q, ev, s->nodes[i].step_end_ns))
			sim_fail(s, "out of memory");
	} else {
		if (s->te)
			runlog_trace_step(s, i);
		node_finish_step(&s->nodes[i], s->now);
		engine_kick(s, i);
		if (s->pdw_head && s->pdw_head[i])
			pd_try_waiting(s, i);
	}
	if (s->nodes[i].kv.oom)
		sim_fail(s, "out of memory (KV cache index)");
}

static const struct sim_ev_kind sim_ev_kinds[EV_KINDS] = {
	[EV_ARRIVAL] = {router_ev_arrival, NULL},
	[EV_STEP] = {ev_step, NULL},
	[EV_SAMPLE] = {runlog_ev_sample, NULL},
	[EV_DISPATCH] = {router_ev_dispatch, NULL},
	[EV_FLOW] = {links_ev_flow, links_ev_flow_stale},
	[EV_DELIVER] = {router_ev_deliver, NULL},
	[EV_REPORT] = {views_ev_report, NULL},
	[EV_FAULT] = {faults_ev_fault, NULL},
	[EV_WATERMARK] = {premig_ev_tick, NULL},
	[EV_SCALE] = {autoscale_ev, autoscale_ev_stale},
};

/* The summary of a run that ended (its figures, per node, the router's
 * counters). 0, or -1 when memory runs out. */
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
	/* the timed sums scaled up to every arrival and dispatch */
	double fr = s->timed_routes ? (double)s->routed / (double)s->timed_routes : 0;
	double fd = s->timed_dispatches ? (double)s->dispatches / (double)s->timed_dispatches : 0;
	out->route_ns = (s->route_ns - s->arrive_ns) * fr;
	out->arrive_ns = s->route_ns * fr + s->dispatch_ns * fd;
	out->routed = s->routed;
	out->kv_views_counted = s->kv_counted;
	out->kv_views_synced = s->kv_synced;
	out->kv_lookups_unapplied = s->kv_unapplied;
	out->kv_lookups_evicting = s->kv_evicting;
	out->kv_lookups_locked = s->kv_locked;
	out->kv_lookups_spared = s->kv_spared;
	out->kv_lookups = s->kv_lookups;
	out->ever_epochs_forgotten = s->eps_forgotten;
	out->ever_blocks_peak = s->ever_peak;
	out->sync_ns = s->sync_ns * fr;
	out->migration_count = s->migrations;
	for (int k = 0; k < MR_N; k++)
		out->migration_by_reason[k] = s->mig_why[k];
	out->mech = s->mech;
	out->family = s->pol->family;
	out->product = s->pol->product;
	out->kv_transfer = s->sc->cluster.kv_transfer;
	out->migration_bytes = s->migration_bytes;
	out->migration_s = s->migration_s;
	out->offload_bytes_out = s->offload_out;
	out->offload_bytes_in = s->offload_in;
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
	out->imbalance_max_over_mean = mean > 0 ? mx / mean : 0;
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
	out->scale_up = s->scale_up;
	out->scale_down = s->scale_down;
	out->nodes_max = s->n_held_max;
	out->energy_j_per_out = out->tokens.output ? out->energy_j / (double)out->tokens.output : 0;
	out->energy_kwh = out->energy_j / 3.6e6;
	out->pd = (struct met_pd){s->pd.count, s->pd.failovers, s->pd.local,
				  s->pd.bytes,  s->pd.seconds,	 s->pd.wait_s};
	for (int k = 0; k < 4; k++)
		out->ttft_split_s[k] = s->met.completed ? s->ttft_split[k] / (double)s->met.completed : 0;
	out->imbalance_jain = sumsq > 0 ? sum * sum / (s->n_nodes * sumsq) : 1;
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
		       afile_set_add(set, &s->ts_file, err, errlen)))
		return -1;
	if (s->te_file.f && afile_set_add(set, &s->te_file, err, errlen))
		return -1;
	if (!s->opts->out_dir)
		return 0;
	cJSON *j = res_summary_json(out);
	snprintf(path, sizeof path, "%s/summary.json", s->opts->out_dir);
	int rc = !j ? -1 : res_write_json_in(set, path, j, err, errlen);
	if (!j)
		snprintf(err, errlen, "%s: out of memory", path);
	cJSON_Delete(j);
	return rc;
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
	if (ledger_init(&s)) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	hmap_init(&s.sessions);
	double started = runlog_wall_now();
	struct afile csv = {0};
	struct afile_set own = {0}, *set = s.opts->result_set ? s.opts->result_set : &own;
	char path[4200];
	struct stat st;
	/* A folder this run makes goes again if the run fails. */
	int made_dir = s.opts->out_dir && stat(s.opts->out_dir, &st) != 0;
	int rc = intr_caught() ? intr_interrupted(err, errlen) : build_modules(&s, err, errlen);
	if (rc)
		goto done;
	s.per_epoch = s.wl->epochs && !s.opts->keep_epochs;
	if (s.opts->out_dir) {
		snprintf(path, sizeof path, "%s/requests.csv", s.opts->out_dir);
		if (res_mkdirs(s.opts->out_dir, err, errlen) || afile_open(&csv, path, err, errlen)) {
			rc = 3;
			goto done;
		}
		met_csv_header(csv.f);
	}
	met_init(&s.met, sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, csv.f);
	s.costs = calloc((size_t)sc->n_pools, sizeof *s.costs);
	if (!s.costs) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
		goto done;
	}
	for (int p = 0; p < sc->n_pools; p++)
		cost_init(&s.costs[p], &sc->pools[p].cl, sc->pools[p].weight_bytes);
	s.n_nodes = (uint32_t)sc->cluster.nodes;
	if (init_cluster(&s, err, errlen)) {
		rc = 3;
		goto done;
	}
	s.end_arrivals_ns = (int64_t)llround(sc->duration_s * 1e9);
	if (s.opts->trace_events && runlog_trace_open(&s, err, errlen)) {
		rc = 3;
		goto done;
	}
	router_pull_source(&s);
	if (s.opts->out_dir) {
		snprintf(path, sizeof path, "%s/timeseries.csv", s.opts->out_dir);
		if (runlog_timeseries_open(&s, path, err, errlen)) {
			rc = 3;
			goto done;
		}
	}

	int show = s.opts->progress && isatty(2), truncated = 0;
	double last_draw = started;
	struct event ev;
	while (!s.error && !intr_caught() && evq_pop(&s.q, &ev)) {
		const struct sim_ev_kind *k = &sim_ev_kinds[ev.kind];
		if (k->stale && k->stale(&s, &ev)) {
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
		router_prefetch_arrival(&s);
		k->handle(&s, &ev);
		if (s.n_draining)
			autoscale_after_event(&s);
		if (s.sample_paused)
			runlog_sample_resume(&s);
		if (s.n_dirty)
			links_flush_write_downs(&s);
		if (s.opts->audit && !s.error)
			audit_event(&s, &ev);
		if (s.opts->wall_limit_s > 0 && (s.q.popped & 0xfff) == 0 &&
		    runlog_wall_now() - started > s.opts->wall_limit_s) {
			truncated = 1;
			break;
		}
		if (show && (s.q.popped & 0xffff) == 0 && runlog_wall_now() - last_draw > 0.5) {
			runlog_progress(&s, started);
			last_draw = runlog_wall_now();
		}
	}
	if (show) {
		runlog_progress(&s, started);
		fputc('\n', stderr);
	}
	if (s.error) {
		rc = s.error;
		goto done;
	}
	if (intr_caught()) {
		rc = intr_interrupted(err, errlen);
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
	if (s.opts->audit && !truncated && views_audit_drained(&s)) {
		rc = s.error;
		goto done;
	}
	if (summarize(&s, truncated, started, out)) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
		goto done;
	}
	if (s.te)
		runlog_trace_end(&s);
	s.ts = NULL;
	if (sim_write_results(&s, &csv, out, set, err, errlen) ||
	    (set == &own && afile_set_commit(&own, err, errlen)))
		rc = 3;
done:
	afile_discard(&csv);
	afile_discard(&s.ts_file);
	afile_discard(&s.te_file);
	afile_set_discard(&own);
	if (rc && made_dir)
		rmdir(s.opts->out_dir);
	teardown(&s);
	if (rc)
		met_summary_free(out);
	return rc;
}
