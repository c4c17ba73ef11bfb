/* views: the routers' views of the nodes, the KV watermark, the policies' callbacks. */
#include "sim/views.h"

#include <math.h>
#include <stdlib.h>

#include "sim/audit.h"
#include "base/prefix_index.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "workloads/workload.h"

void views_set_up(struct sim *s, uint32_t i, int up)
{
	s->alive[i] = (uint8_t)(up != 0);
	/* the routers' policy routes to prefill and mixed pools: a node of
	 * a decode pool is never up in its view (pd.c routes to it) */
	if (!s->routable[i])
		return;
	for (uint32_t k = 0; k < s->vw.n_replicas; k++) {
		struct pol_node_view *v = &s->vw.views[k][i];
		if (v->up && !up)
			s->vw.total_out[k] -= v->outstanding;
		else if (!v->up && up)
			s->vw.total_out[k] += v->outstanding;
		v->up = up;
		if (up)
			lh_insert(&s->vw.lheap[k], i);
		else
			lh_remove(&s->vw.lheap[k], i);
	}
	s->vw.n_up += up ? 1 : -1;
}

int views_init(struct sim *s)
{
	uint32_t N = s->n_nodes;
	s->vw.n_replicas = (uint32_t)s->sc->router.replicas;
	s->vw.report_ns = (int64_t)llround(s->rt.mech.report_s * 1e9);
	s->vw.ev_report = sim_add_event_kind(s, views_ev_report, NULL, EVK_READS_ONLY);
	s->vw.views = calloc(s->vw.n_replicas, sizeof *s->vw.views);
	s->vw.total_out = calloc(s->vw.n_replicas, sizeof *s->vw.total_out);
	s->vw.lheap = calloc(s->vw.n_replicas, sizeof *s->vw.lheap);
	s->vw.pf_group = malloc(N * sizeof *s->vw.pf_group);
	s->vw.pf_unmarked = calloc(N, sizeof *s->vw.pf_unmarked);
	s->vw.hit_blocks = calloc(N, sizeof *s->vw.hit_blocks);
	s->vw.hit_stamp = calloc(N, sizeof *s->vw.hit_stamp);
	if (s->vw.ev_report < 0 || !s->vw.views || !s->vw.total_out || !s->vw.lheap ||
	    !s->vw.pf_group || !s->vw.pf_unmarked || !s->vw.hit_blocks || !s->vw.hit_stamp)
		return -1;
	for (uint32_t k = 0; k < s->vw.n_replicas; k++)
		if (!(s->vw.views[k] = calloc(N, sizeof **s->vw.views)))
			return -1;
	s->vw.view = s->vw.views[0];
	/* serials from 1: a request's rt_mark 0 means "no first token due" */
	for (uint32_t i = 0; i < N; i++)
		s->vw.pf_group[i] = 1;
	s->vw.route_stamp = 1;
	for (uint32_t i = 0; i < N; i++) {
		/* the routers' policy routes to prefill and mixed pools (a
		 * decode pool's nodes are reached through pd.c) */
		int routable = s->routable[i];
		s->vw.n_up += (uint32_t)routable;
		for (uint32_t k = 0; k < s->vw.n_replicas; k++) {
			s->vw.views[k][i].server = s->nodes[i].server;
			s->vw.views[k][i].up = routable;
			s->vw.views[k][i].kv_blocks = s->nodes[i].kv.n_blocks;
			s->vw.views[k][i].speed = s->speed[i];
		}
		views_refresh(s, i);
	}
	for (uint32_t k = 0; k < s->vw.n_replicas; k++)
		if (lh_init(&s->vw.lheap[k], s->vw.views[k], N))
			return -1;
	return 0;
}

int views_start(struct sim *s)
{
	if (s->vw.report_ns > 0 && !evq_push(&s->q, s->vw.report_ns, s->vw.ev_report, -1, NULL))
		return -1;
	return 0;
}

void views_free(struct sim *s)
{
	for (uint32_t k = 0; s->vw.views && k < s->vw.n_replicas; k++)
		free(s->vw.views[k]);
	free(s->vw.views);
	free(s->vw.total_out);
	for (uint32_t k = 0; s->vw.lheap && k < s->vw.n_replicas; k++)
		lh_free(&s->vw.lheap[k]);
	free(s->vw.lheap);
	free(s->vw.pf_group);
	free(s->vw.pf_unmarked);
	free(s->vw.hit_blocks);
	free(s->vw.hit_stamp);
}

/* What r adds to node's figures: its prompt blocks, and its prompt less
 * the blocks its router found cached there while routing it (Dynamo's
 * add_request: isl - overlap x block size; the overlap the router knows
 * is its cache index's answer for this node, 0 where the policy did not
 * ask), the router's count of what it sent and of prompt tokens since
 * the last report. */
static inline void count_dispatch(struct sim *s, struct request *r, uint32_t node,
				  uint32_t prefill)
{
	struct pol_node_view *v = &s->vw.views[r->replica][node];
	const struct node *n0 = &s->nodes[0]; /* every node has the engine's block size */
	r->rt_prefill = prefill;
	r->rt_blocks = node_full_blocks(n0, r->prompt_tokens);
	r->rt_mark = 0;
	v->outstanding++;
	v->routed_since++;
	v->routed_tokens_since += r->prompt_tokens;
	v->prefill_tokens += r->rt_prefill;
	v->active_blocks += r->rt_blocks;
	s->vw.pf_unmarked[node]++;
	if (v->up)
		s->vw.total_out[r->replica]++;
	lh_fix(&s->vw.lheap[r->replica], node);
}

void views_count_dispatch(struct sim *s, struct request *r, uint32_t node)
{
	uint32_t hit = s->vw.hit_stamp[node] == s->vw.route_stamp ? s->vw.hit_blocks[node] : 0;
	uint64_t cached = (uint64_t)hit * s->nodes[0].block_tokens;
	count_dispatch(s, r, node,
		       cached >= r->prompt_tokens ? 0 : r->prompt_tokens - (uint32_t)cached);
}

/* A disaggregated request sent to its decode node: its prompt blocks, and
 * one token to prefill there (its last, whose output is its first). */
void views_count_dispatch_decode(struct sim *s, struct request *r, uint32_t node)
{
	count_dispatch(s, r, node, 1);
}

/* r leaves node's figures: its prefill tokens unless its first token has
 * come (its group folded, see views_prefill_step), its blocks. */
void views_count_done(struct sim *s, struct request *r, uint32_t node)
{
	struct pol_node_view *v = &s->vw.views[r->replica][node];
	v->outstanding--;
	if (r->rt_mark == 0) {
		v->prefill_tokens -= r->rt_prefill;
		s->vw.pf_unmarked[node]--;
	} else if (r->rt_mark == s->vw.pf_group[node]) {
		v->prefill_tokens -= r->rt_prefill;
		v->prefill_done_tokens -= r->rt_prefill;
	}
	v->active_blocks -= r->rt_blocks;
	r->rt_prefill = r->rt_blocks = r->rt_mark = 0;
	if (v->up)
		s->vw.total_out[r->replica]--;
	lh_fix(&s->vw.lheap[r->replica], node);
}

/* Node i's step has started; its last step has ended, so the group due
 * at that step's first iteration's end has had its first tokens: fold it
 * (its tokens leave prefill_tokens) and open the next. Then the requests
 * of this step whose prompt its first iteration completes (a prefill
 * chunk reaching num_tokens before any output; a folded prefill's too:
 * plan_span moves its batch entry's c0, not num_computed) join the new
 * group, due at span_end[0]. pol_prefill_tokens leaves a group out from
 * its due time on, so the figure is exact at every instant without an
 * event per first token. */
void views_prefill_step(struct sim *s, uint32_t i)
{
	for (uint32_t k = 0; k < s->vw.n_replicas; k++) {
		struct pol_node_view *v = &s->vw.views[k][i];
		v->prefill_tokens -= v->prefill_done_tokens;
		v->prefill_done_tokens = 0;
	}
	if (++s->vw.pf_group[i] == 0)
		s->vw.pf_group[i] = 1;
	const struct node *n = &s->nodes[i];
	/* an all-decode span completes no prompt */
	if (s->vw.pf_unmarked[i] == 0 || (n->span_len > 1 && n->span_off == 0))
		return;
	int64_t due = n->span_end[0];
	for (uint32_t j = 0; j < n->n_batch; j++) {
		const struct batch_entry *e = &n->batch[j];
		struct request *r = e->r;
		if (r->rt_mark || r->generated || r->num_computed + e->n != r->num_tokens)
			continue;
		r->rt_mark = s->vw.pf_group[i];
		struct pol_node_view *v = &s->vw.views[r->replica][i];
		v->prefill_done_tokens += r->rt_prefill;
		v->prefill_done_ns = due;
		if (--s->vw.pf_unmarked[i] == 0)
			break;
	}
}

int views_audit_drained(struct sim *s)
{
	for (uint32_t k = 0; k < s->vw.n_replicas; k++)
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			const struct pol_node_view *v = &s->vw.views[k][i];
			if (v->outstanding || v->active_blocks || v->prefill_tokens ||
			    v->prefill_done_tokens || s->vw.pf_unmarked[i]) {
				audit_fail(s,
					   "after the drain router %u still counts on node %u %u "
					   "requests, %llu blocks, %llu prefill tokens (%llu due), "
					   "%u without a first token due",
					   k, i, v->outstanding, (unsigned long long)v->active_blocks,
					   (unsigned long long)v->prefill_tokens,
					   (unsigned long long)v->prefill_done_tokens, s->vw.pf_unmarked[i]);
				return -1;
			}
		}
	return 0;
}

/* Whether node i is above the KV watermark (closed to new sessions): as
 * of the last load report, or exactly now with exact views. */
int views_closed(struct sim *s, const struct pol_node_view *v, uint32_t i)
{
	if (s->vw.report_ns > 0)
		return v[i].closed;
	struct node *n = &s->nodes[i];
	node_sync(n, s->now);
	return views_above_watermark(s, (double)n->kv.n_used, n->kv.n_blocks);
}

/* pol_view.private_nodes: where r's session ran, when its private blocks
 * are its own. */
int views_private_nodes(void *ctx, const struct request *r, const int32_t **nodes)
{
	return session_nodes(ctx, r, nodes);
}

/* pol_view.cached_prefix, the exact index: r's prompt blocks in node's
 * HBM now. Lazy views (policies that look caches up, while no session
 * has two requests at once): a node inside a decode span answers without
 * applying the span where that changes nothing the lookup sees
 * (node_cache_settled), which spares most syncs; --audit and the
 * eager_kv_views switch check that the answers do not differ. */
/* The router's overlap for the request it is routing, which its record
 * of r's prefill on the node it picks subtracts (views_count_dispatch). */
static inline uint32_t note_hit(struct sim *s, uint32_t node, const struct request *r,
				uint32_t blocks)
{
	if (r == s->rt.routing) {
		s->vw.hit_blocks[node] = blocks;
		s->vw.hit_stamp[node] = s->vw.route_stamp;
	}
	return blocks;
}

static uint32_t cached_prefix(void *ctx, uint32_t node, const struct request *r)
{
	struct sim *s = ctx;
	struct node *n = &s->nodes[node];
	if (!n->prefix_caching)
		return 0;
	s->vw.kv_lookups++;
	uint32_t full = node_full_blocks(n, r->prompt_tokens);
	if (full > r->n_hashes)
		full = r->n_hashes;
	struct kv_match m;
	uint32_t evicts = 0;
	int settled = s->vw.lazy_views ? node_cache_settled(n, s->now, &evicts) : 0;
	if (settled != 0) {
		/* Where the part of the span not applied would evict, it can
		 * only evict unlocked runs (nothing is released inside a span):
		 * a match through locked runs alone stands, and so does one
		 * whose blocks the evictions, taken in order, do not reach. */
		node_lookup(n, r->hashes, full, &m);
		int spared = settled < 0 && m.unlocked > 0 && kv_evict_spares(&n->kv, evicts, &m);
		if (settled == 1 || m.unlocked == 0 || spared) {
			s->vw.kv_unapplied += s->now >= n->sync_due_ns;
			s->vw.kv_locked += settled < 0 && !spared;
			s->vw.kv_spared += spared;
			if (s->opts->audit)
				audit_private(s, node, r, m.blocks);
			return note_hit(s, node, r, m.blocks);
		}
		s->vw.kv_evicting++;
	}
	node_sync(n, s->now);
	node_lookup(n, r->hashes, full, &m);
	if (s->opts->audit)
		audit_private(s, node, r, m.blocks);
	return note_hit(s, node, r, m.blocks);
}

/* pol_view.cached_tiers: the reload's walk (engine_maybe_reload) over
 * node's server's DRAM and NVMe indexes, counted, not moved. */
static void cached_tiers(void *ctx, uint32_t node, const struct request *r, uint32_t from,
			 uint32_t *host, uint32_t *disk)
{
	struct sim *s = ctx;
	const struct node *n = &s->nodes[node];
	uint32_t full = node_full_blocks(n, r->prompt_tokens), server = (uint32_t)n->server;
	if (full > r->n_hashes)
		full = r->n_hashes;
	*host = *disk = 0;
	for (uint32_t j = from; j < full; j++) {
		if (s->lk.has_dram && pidx_has(&s->lk.dram, server, r->hashes[j]))
			(*host)++;
		else if (s->lk.has_nvme && pidx_has(&s->lk.nvme, server, r->hashes[j]))
			(*disk)++;
		else
			break;
	}
}

/* Node i's KV figures in the views as of now: counted where its span
 * allows (node_kv_used), else by applying the span. */
static void sync_view(struct sim *s, uint32_t i)
{
	uint32_t used;
	if (s->vw.lazy_views && node_kv_used(&s->nodes[i], s->now, &used)) {
		s->vw.kv_counted += used != s->nodes[i].kv.n_used;
		views_refresh_used(s, i, used);
		return;
	}
	node_sync(&s->nodes[i], s->now);
	views_refresh(s, i);
}

/* The nodes' KV figures in the views, brought up to now (exact reports
 * only). At 1,024 nodes a node's state is out of cache when a policy
 * samples it, so the misses of all of them are started first: the nodes'
 * fields, then what a sync reads through them and the first probe of the
 * routed request's cache lookup there. */
static void prefetch_kv(void *ctx, const uint32_t *nodes, uint32_t m)
{
	struct sim *s = ctx;
	if (s->vw.report_ns != 0)
		return;
	double t0 = s->rt.timing ? runlog_wall_now() : 0;
	const struct request *r = s->rt.routing;
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
	if (s->rt.timing)
		s->rt.sync_ns += (runlog_wall_now() - t0) * 1e9;
}

/* pol_view.sync_kv: the policy names all the nodes it will read at once,
 * so that their cache misses overlap (prefetch_kv) before any sync waits
 * on one. */
static void sync_kv(void *ctx, const uint32_t *nodes, uint32_t m)
{
	struct sim *s = ctx;
	if (s->vw.report_ns != 0)
		return;
	prefetch_kv(ctx, nodes, m);
	double t0 = s->rt.timing ? runlog_wall_now() : 0;
	for (uint32_t x = 0; x < m; x++)
		sync_view(s, nodes[x]);
	s->vw.kv_synced += m;
	if (s->rt.timing)
		s->rt.sync_ns += (runlog_wall_now() - t0) * 1e9;
}

/* pol_view.kv_used_floor (exact reports): the blocks in use as last
 * applied, which sync_view can only raise (inside a decode span nothing
 * is released; the span's takes are what it adds). */
static uint32_t kv_used_floor(void *ctx, uint32_t node)
{
	const struct sim *s = ctx;
	return s->nodes[node].kv.n_used;
}

/* pol_view.least_outstanding: the top of the replica's heap. */
static int32_t least_outstanding(const void *lctx)
{
	return lh_min(lctx);
}

void views_sync_all(struct sim *s)
{
	/* KV use grows inside decode spans; bring every node up to now, or
	 * count what that would leave where the span allows it (the policy
	 * reads only the counts; a node whose cache it looks up is brought
	 * up to date then, in cached_prefix, unless that would change
	 * nothing the lookup sees). */
	double t0 = s->rt.timing ? runlog_wall_now() : 0;
	for (uint32_t i = 0; i < s->n_nodes; i++)
		sync_view(s, i);
	s->vw.kv_synced += s->n_nodes;
	if (s->rt.timing)
		s->rt.sync_ns += (runlog_wall_now() - t0) * 1e9;
}

void views_for_policy(struct sim *s, const struct request *r, struct pol_view *v)
{
	s->vw.route_stamp++;
	*v = (struct pol_view){
		.n_nodes = s->n_nodes,
		.nodes = s->vw.views[r->replica],
		.now_ns = s->now,
		.n_up = s->vw.n_up,
		.total_outstanding = s->vw.total_out[r->replica],
		.cached_prefix = cached_prefix,
		.ctx = s,
		/* the heap orders raw counts: with nodes of different speeds
		 * the policies scan (pol_metric_of divides by speed) */
		.least_outstanding = s->mixed_speeds ? NULL : least_outstanding,
		.lctx = s->mixed_speeds ? NULL : &s->vw.lheap[r->replica],
		.sync_kv = sync_kv,
		.private_nodes = s->opts->no_private_nodes ? NULL : views_private_nodes,
		.kv_used_floor = s->vw.report_ns == 0 && !s->opts->no_kv_floor ? kv_used_floor : NULL,
		.prefetch_kv = prefetch_kv,
		.cached_tiers = (s->lk.has_dram || s->lk.has_nvme) && s->sc->cluster.engine.prefix_caching
					? cached_tiers
					: NULL,
	};
}

void views_for_decode(struct sim *s, const struct request *r, struct pol_view *v)
{
	views_for_policy(s, r, v);
	/* the same routing's stamp: a decode choice made while routing r
	 * (min_prefill_tokens) must leave the router policy's lookups for
	 * r's prefill node valid (views_count_dispatch); one made later
	 * writes under a stamp whose routing has been counted already */
	s->vw.route_stamp--;
	/* up turned to the decode side's in place (not a copy of every
	 * node's view per choice); views_end_decode turns it back */
	struct pol_node_view *nv = s->vw.views[r->replica];
	uint32_t up = 0;
	uint64_t out = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		int u = s->alive[i] & s->can_decode[i];
		nv[i].up = u;
		if (u) {
			up++;
			out += nv[i].outstanding;
		}
	}
	v->n_up = up;
	v->total_outstanding = out;
	v->least_outstanding = NULL;
	v->lctx = NULL;
}

void views_end_decode(struct sim *s, const struct request *r)
{
	struct pol_node_view *nv = s->vw.views[r->replica];
	for (uint32_t i = 0; i < s->n_nodes; i++)
		nv[i].up = s->alive[i] & s->routable[i];
}

/* Every node reports its load; the routers' views take it. Inside a
 * decode span its KV use is counted from the span's plan where that is
 * exact (node_kv_used), not applied: a report every 50 ms would otherwise
 * apply every node's spans that often, request by request. */
void views_ev_report(struct sim *s, const struct event *ev)
{
	(void)ev;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		uint32_t used;
		if (s->nodes[i].lazy_kv && node_kv_used(&s->nodes[i], s->now, &used)) {
			s->vw.kv_counted += used != s->nodes[i].kv.n_used;
			views_refresh_used(s, i, used);
			continue;
		}
		node_sync(&s->nodes[i], s->now);
		views_refresh(s, i);
	}
	if (!evq_push(&s->q, s->now + s->vw.report_ns, s->vw.ev_report, -1, NULL))
		sim_fail(s, "out of memory");
}
