/* views: the routers' views of the nodes, the KV watermark, the policies' callbacks. */
#include "sim/views.h"

#include "sim/audit.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "workloads/workload.h"

void views_set_up(struct sim *s, uint32_t i, int up)
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

void views_count_dispatch(struct sim *s, const struct request *r, uint32_t node)
{
	struct pol_node_view *v = &s->views[r->replica][node];
	v->outstanding++;
	v->routed_since++;
	if (v->up)
		s->total_out[r->replica]++;
	lh_fix(&s->lheap[r->replica], node);
}

void views_count_done(struct sim *s, const struct request *r, uint32_t node)
{
	struct pol_node_view *v = &s->views[r->replica][node];
	v->outstanding--;
	if (v->up)
		s->total_out[r->replica]--;
	lh_fix(&s->lheap[r->replica], node);
}

/* Whether node i is above the KV watermark (closed to new sessions): as
 * of the last load report, or exactly now with exact views. */
int views_closed(struct sim *s, const struct pol_node_view *v, uint32_t i)
{
	if (s->report_ns > 0)
		return v[i].closed;
	struct node *n = &s->nodes[i];
	node_sync(n, s->now);
	return views_above_watermark(s, (double)n->kv.n_used, n->kv.n_blocks);
}

/* The up node with the fewest waiting requests under limit (open to new
 * sessions when need_open), or -1. */
int32_t views_least_queued(struct sim *s, const struct pol_node_view *v, uint32_t limit,
			   int need_open)
{
	int32_t best = -1;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if (!v[i].up || s->nodes[i].n_waiting >= limit || (need_open && views_closed(s, v, i)))
			continue;
		if (best < 0 || s->nodes[i].n_waiting < s->nodes[best].n_waiting)
			best = (int32_t)i;
	}
	return best;
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

/* Node i's KV figures in the views as of now: counted where its span
 * allows (node_kv_used), else by applying the span. */
static void sync_view(struct sim *s, uint32_t i)
{
	uint32_t used;
	if (s->lazy_views && node_kv_used(&s->nodes[i], s->now, &used)) {
		s->kv_counted += used != s->nodes[i].kv.n_used;
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
	if (s->report_ns != 0)
		return;
	double t0 = s->timing ? runlog_wall_now() : 0;
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
		s->sync_ns += (runlog_wall_now() - t0) * 1e9;
}

/* pol_view.sync_kv: the policy names all the nodes it will read at once,
 * so that their cache misses overlap (prefetch_kv) before any sync waits
 * on one. */
static void sync_kv(void *ctx, const uint32_t *nodes, uint32_t m)
{
	struct sim *s = ctx;
	if (s->report_ns != 0)
		return;
	prefetch_kv(ctx, nodes, m);
	double t0 = s->timing ? runlog_wall_now() : 0;
	for (uint32_t x = 0; x < m; x++)
		sync_view(s, nodes[x]);
	s->kv_synced += m;
	if (s->timing)
		s->sync_ns += (runlog_wall_now() - t0) * 1e9;
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
	double t0 = s->timing ? runlog_wall_now() : 0;
	for (uint32_t i = 0; i < s->n_nodes; i++)
		sync_view(s, i);
	s->kv_synced += s->n_nodes;
	if (s->timing)
		s->sync_ns += (runlog_wall_now() - t0) * 1e9;
}

void views_for_policy(struct sim *s, const struct request *r, struct pol_view *v)
{
	*v = (struct pol_view){
		.n_nodes = s->n_nodes,
		.nodes = s->views[r->replica],
		.now_ns = s->now,
		.n_up = s->n_up,
		.total_outstanding = s->total_out[r->replica],
		.cached_prefix = cached_prefix,
		.ctx = s,
		.least_outstanding = least_outstanding,
		.lctx = &s->lheap[r->replica],
		.sync_kv = sync_kv,
		.private_nodes = s->opts->no_private_nodes ? NULL : views_private_nodes,
		.kv_used_floor = s->report_ns == 0 && !s->opts->no_kv_floor ? kv_used_floor : NULL,
		.prefetch_kv = prefetch_kv,
	};
}

/* Every node reports its load; the routers' views take it. */
void views_ev_report(struct sim *s, const struct event *ev)
{
	(void)ev;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		node_sync(&s->nodes[i], s->now);
		views_refresh(s, i);
	}
	if (!evq_push(&s->q, s->now + s->report_ns, EV_REPORT, -1, NULL))
		sim_fail(s, "out of memory");
}
