/* links: ports, flows, tier write-downs, preemptive offload and swap. */
#include <math.h>
#include <stdlib.h>

#include "sim/sim_int.h"

/* Reschedules the end events of flows whose rates changed. */
void links_flows_changed(struct sim *s)
{
	if (s->changed_cap < s->net.n_active) {
		uint32_t cap = s->net.cap_f;
		uint32_t *c = realloc(s->changed, cap * sizeof *c);
		if (!c) {
			sim_fail(s, "out of memory");
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

int links_start_flow(struct sim *s, enum flow_kind kind, struct request *r, int32_t target,
		     const uint32_t *ports, uint32_t n_ports, double bytes, double latency_s)
{
	uint32_t id = flow_add(&s->net, s->now, ports, n_ports, bytes,
			       (int64_t)llround(latency_s * 1e9));
	if (id == UINT32_MAX) {
		sim_fail(s, "out of memory");
		return -1;
	}
	struct flow *f = &s->net.f[id];
	f->kind = kind;
	f->ptr = r;
	f->a = target;
	if (r)
		r->pending++;
	links_flows_changed(s);
	return 0;
}

/* The time a transfer over these ports would take if it started now. */
double links_estimate_s(const struct sim *s, const uint32_t *ports, uint32_t n, double bytes,
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

void links_on_hbm_evict(void *ctx, uint64_t hash)
{
	struct evict_ctx *e = ctx;
	struct sim *s = e->s;
	/* A block the tier already holds (same hash: same content) is only
	 * marked recently used, not written again. */
	struct pidx *tier = s->has_dram ? &s->dram : &s->nvme;
	int had = pidx_has(tier, e->server, hash);
	if (pidx_insert(tier, e->server, &hash, 1))
		sim_fail(s, "out of memory");
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
void links_on_dram_evict(void *ctx, uint32_t server, uint64_t hash)
{
	struct sim *s = ctx;
	if (!s->has_nvme)
		return;
	if (pidx_insert(&s->nvme, server, &hash, 1))
		sim_fail(s, "out of memory");
	s->wd_nvme[server] += s->block_bytes;
	mark_dirty(s, server);
}

void links_flush_write_downs(struct sim *s)
{
	for (uint32_t j = 0; j < s->n_dirty; j++) {
		uint32_t k = s->dirty[j];
		s->is_dirty[k] = 0;
		if (s->wd_host[k] > 0) {
			uint32_t p = links_port_host(s, k);
			links_start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, &p, 1, s->wd_host[k],
				   s->sc->cluster.host->latency_s);
		}
		if (s->wd_nvme[k] > 0) {
			uint32_t p[2] = {links_port_nvme(s, k), links_port_host(s, k)};
			links_start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, p, 2, s->wd_nvme[k],
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
void links_offload_cold(struct sim *s, uint32_t i)
{
	struct kv_pool *kv = &s->nodes[i].kv;
	if (!s->has_dram && !s->has_nvme)
		return;
	double mark = views_watermark_blocks(s, kv->n_blocks);
	double held = (double)kv->n_used + kv->n_cached;
	if (!views_above_watermark(s, held, kv->n_blocks) || s->sc->router.kv_watermark >= 1)
		return;
	node_sync(&s->nodes[i], s->now);
	uint32_t excess = (uint32_t)ceil((double)kv->n_used + kv->n_cached - mark);
	kv_evict(kv, excess);
}

const struct cat_link *links_between(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports)
{
	int same = s->nodes[a].server == s->nodes[b].server;
	ports[0] = same ? links_port_nvlink(a) : links_port_nic(a);
	ports[1] = same ? links_port_nvlink(b) : links_port_nic(b);
	return same ? s->sc->cluster.intra_server : s->sc->cluster.inter_server;
}

/* Swap mode: a preempted request's computed blocks go to DRAM, then come
 * back (what HBM no longer holds) and it resumes at its queue's head. */
void links_on_swap_out(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	uint32_t B = (uint32_t)s->sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->high_water / B, server = (uint32_t)s->nodes[r->node].server;
	if (full > r->n_hashes)
		full = r->n_hashes;
	r->swapped = 1;
	r->pin_crashes = s->crashes[r->node];
	if (full == 0) {
		sim_enqueue(s, (uint32_t)r->node, r);
		return;
	}
	if (pidx_insert(&s->dram, server, r->hashes, full))
		sim_fail(s, "out of memory");
	double bytes = full * s->block_bytes;
	s->offload_out += bytes;
	uint32_t p = links_port_host(s, server);
	links_start_flow(s, FLOW_SWAP_OUT, r, r->node, &p, 1, bytes, s->sc->cluster.host->latency_s);
}

/* Swapped-out requests wait, in order, until their node has room for
 * their KV (meanwhile it admits nothing new: vLLM gives the swapped queue
 * priority); then what HBM lost is reloaded and they resume first. */
static void on_swap_out_done(struct sim *s, struct request *r, uint32_t node)
{
	if (--r->pending > 0)
		return;
	if (!s->views[0][node].up || r->pin_crashes != s->crashes[node]) {
		router_retry(s, r);
		return;
	}
	r->qnext = NULL;
	if (s->swq_tail[node])
		s->swq_tail[node]->qnext = r;
	else
		s->swq_head[node] = r;
	s->swq_tail[node] = r;
	s->nodes[node].hold_admissions = 1;
	links_try_swap_in(s, node);
}

void links_try_swap_in(struct sim *s, uint32_t i)
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
		if (router_maybe_reload(s, r, i)) {
			s->swapping_in[i]++;
		} else {
			n->hold_admissions = s->swq_head[i] != NULL || s->swapping_in[i] > 0;
			sim_enqueue(s, i, r);
		}
	}
	n->hold_admissions = s->swq_head[i] != NULL || s->swapping_in[i] > 0;
	s->in_swap_in = 0;
}

/* A flow's last byte has left: it frees its ports; its data arrives after
 * the link latency. */
/* A flow-end event superseded by a later one for its flow (a new rate):
 * skipped, not delivered. (A node's step end is a timer of the event queue:
 * a span cut short or a crash replaces or clears it in place.) */
int links_ev_flow_stale(const struct sim *s, const struct event *ev)
{
	return ev->seq != s->net.f[ev->id].ev_seq;
}

void links_ev_flow(struct sim *s, const struct event *ev)
{
	uint32_t id = ev->id;
	struct flow *f = &s->net.f[id];
	f->ev_seq = 0;
	uint16_t kind = (uint16_t)f->kind;
	int32_t target = f->a;
	void *ptr = f->ptr;
	int64_t lat = f->latency_ns;
	flow_remove(&s->net, id);
	links_flows_changed(s);
	if (!evq_push_tag(&s->q, s->now + lat, EV_DELIVER, kind, target, ptr))
		sim_fail(s, "out of memory");
}

void links_ev_deliver(struct sim *s, const struct event *ev)
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
	default: /* write-downs: the bytes are in the tier */
		break;
	}
}

void links_scale_server(struct sim *s, uint32_t server, double factor)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if ((uint32_t)s->nodes[i].server != server)
			continue;
		flow_scale(&s->net, links_port_nvlink(i), factor);
		flow_scale(&s->net, links_port_nic(i), factor);
	}
	flow_scale(&s->net, links_port_host(s, server), factor);
	flow_scale(&s->net, links_port_nvme(s, server), factor);
	links_flows_changed(s);
}
