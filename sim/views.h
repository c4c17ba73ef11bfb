/* views: the routers' per-replica views of the nodes and the callbacks policies call. */
#ifndef KVSIM_VIEWS_H
#define KVSIM_VIEWS_H

#include <stdint.h>

#include "sim/sim_int.h"

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
	for (uint32_t k = 0; k < s->vw.n_replicas; k++) {
		struct pol_node_view *v = &s->vw.views[k][i];
		v->queued = n->n_waiting;
		v->running = n->n_running;
		v->queued_tokens = n->waiting_tokens;
		v->kv_used_blocks = used;
		v->kv_util = (double)used / (double)n->kv.n_blocks;
		v->closed = views_above_watermark(s, (double)used, n->kv.n_blocks);
		v->temperature_c = h->temp_c;
		v->throttled = h->throttled;
		v->routed_since = 0;
		v->routed_tokens_since = 0;
	}
}

static inline void views_refresh(struct sim *s, uint32_t i)
{
	views_refresh_used(s, i, s->nodes[i].kv.n_used);
}

/* The health filter (router.health): node i too hot, throttled, or with
 * too much KV in use, as of view v (a replica's, its last report). */
static inline int views_unhealthy(const struct sim *s, const struct pol_node_view *v, uint32_t i)
{
	const struct mech *m = &s->rt.mech;
	return v[i].temperature_c > m->health_max_temp_c || (m->health_throttled && v[i].throttled) ||
	       v[i].kv_util > m->health_max_kv_util;
}

/* The routers' views and own records (s->vw), each node's view as the
 * nodes start, the load-heaps; registers the load report's event kind.
 * After the nodes; 0, or -1 when memory runs out (views_free frees what
 * was made). views_start schedules the first load report. */
int views_init(struct sim *s);
int views_start(struct sim *s);
void views_free(struct sim *s);
/* Node i goes up or down in every replica's view. */
void views_set_up(struct sim *s, uint32_t i, int up);
/* The router's own record: r was sent to node, or left it (finished, or
 * failed there). Each dispatch is undone by one views_count_done. */
void views_count_dispatch(struct sim *s, struct request *r, uint32_t node);
void views_count_done(struct sim *s, struct request *r, uint32_t node);
void views_count_dispatch_decode(struct sim *s, struct request *r, uint32_t node);
/* Node i has started a step (node_start_step): the requests whose first
 * token its first iteration gives are due then (Dynamo's router hears of
 * a first token and marks that request's prefill complete). O(batch)
 * while some request routed to i has no first token due, else O(1). */
void views_prefill_step(struct sim *s, uint32_t i);
/* With --audit, after the drain: every router's record is back at zero.
 * 0, or -1 (the run failed, naming the node and figure). */
int views_audit_drained(struct sim *s);
/* Whether node i is above the KV watermark (closed to new sessions). */
int views_closed(struct sim *s, const struct pol_node_view *v, uint32_t i);
/* Every node's KV figures brought up to now (for POL_READS_KV_ALL). */
void views_sync_all(struct sim *s);
/* The view a policy routes r with: the replica's figures and callbacks. */
void views_for_policy(struct sim *s, const struct request *r, struct pol_view *v);
/* The decode policy's view (pd.c): the routers' record, up on the
 * decode-capable nodes alive, scanned, not heaped, until views_end_decode
 * (no other view is read in between). */
void views_for_decode(struct sim *s, const struct request *r, struct pol_view *v);
void views_end_decode(struct sim *s, const struct request *r);
/* pol_view.private_nodes */
int views_private_nodes(void *ctx, const struct request *r, const int32_t **nodes);
void views_ev_report(struct sim *s, const struct event *ev);

#endif
