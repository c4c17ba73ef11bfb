/* links: ports, flows, tier write-downs, preemptive offload and swap. */
#include "sim/links.h"

#include <math.h>
#include <stdlib.h>

#include "sim/pool.h"
#include "sim/sim_int.h"
#include "sim/views.h"

/* Reschedules the end events of flows whose rates changed. */
void links_flows_changed(struct sim *s)
{
	if (s->lk.changed_cap < s->lk.net.n_active) {
		uint32_t cap = s->lk.net.cap_f;
		uint32_t *c = realloc(s->lk.changed, cap * sizeof *c);
		if (!c) {
			sim_fail(s, "out of memory");
			return;
		}
		s->lk.changed = c;
		s->lk.changed_cap = cap;
	}
	uint32_t n = flow_update(&s->lk.net, s->now, s->lk.changed);
	for (uint32_t k = 0; k < n; k++) {
		struct flow *f = &s->lk.net.f[s->lk.changed[k]];
		int64_t end = flow_end_ns(&s->lk.net, s->lk.changed[k], s->now);
		f->ev_seq = end == INT64_MAX ? 0
					     : evq_push(&s->q, end, EV_FLOW, (int32_t)s->lk.changed[k], NULL);
	}
}

int links_start_flow(struct sim *s, enum flow_kind kind, struct request *r, int32_t target,
		     const uint32_t *ports, uint32_t n_ports, double bytes, double latency_s)
{
	uint32_t id = flow_add(&s->lk.net, s->now, ports, n_ports, bytes,
			       (int64_t)llround(latency_s * 1e9));
	if (id == UINT32_MAX) {
		sim_fail(s, "out of memory");
		return -1;
	}
	struct flow *f = &s->lk.net.f[id];
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
	return latency_s + bytes / flow_estimate_rate(&s->lk.net, ports, n);
}

/* HBM evicted a cached block: write it down to the server's DRAM (or NVMe)
 * tier. The copy is batched per server and sent after the event. */
static void mark_dirty(struct sim *s, uint32_t k)
{
	if (!s->lk.is_dirty[k]) {
		s->lk.is_dirty[k] = 1;
		s->lk.dirty[s->lk.n_dirty++] = k;
	}
}

void links_on_hbm_evict(void *ctx, uint64_t hash)
{
	struct evict_ctx *e = ctx;
	struct sim *s = e->s;
	/* A block the tier already holds (same hash: same content) is only
	 * marked recently used, not written again. */
	struct pidx *tier = s->lk.has_dram ? &s->lk.dram : &s->lk.nvme;
	int had = pidx_has(tier, e->server, hash);
	if (pidx_insert(tier, e->server, &hash, 1))
		sim_fail(s, "out of memory");
	if (had)
		return;
	if (s->lk.has_dram)
		s->lk.wd_host[e->server] += s->block_bytes;
	else
		s->lk.wd_nvme[e->server] += s->block_bytes;
	s->lk.offload_out += s->block_bytes;
	mark_dirty(s, e->server);
}

/* DRAM is full: its least recently written block moves on to NVMe. */
void links_on_dram_evict(void *ctx, uint32_t server, uint64_t hash)
{
	struct sim *s = ctx;
	if (!s->lk.has_nvme)
		return;
	if (pidx_insert(&s->lk.nvme, server, &hash, 1))
		sim_fail(s, "out of memory");
	s->lk.wd_nvme[server] += s->block_bytes;
	mark_dirty(s, server);
}

/* Server k's pool's configuration (a server holds one pool's GPUs). */
static const struct cluster_cfg *links_server_cl(const struct sim *s, uint32_t k)
{
	int p = 0;
	while (p + 1 < s->sc->n_pools && (int)k >= s->sc->pools[p + 1].first_server)
		p++;
	return &s->sc->pools[p].cl;
}

void links_flush_write_downs(struct sim *s)
{
	for (uint32_t j = 0; j < s->lk.n_dirty; j++) {
		uint32_t k = s->lk.dirty[j];
		s->lk.is_dirty[k] = 0;
		if (s->lk.wd_host[k] > 0) {
			uint32_t p = links_port_host(s, k);
			links_start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, &p, 1, s->lk.wd_host[k],
				   links_server_cl(s, k)->host->latency_s);
		}
		if (s->lk.wd_nvme[k] > 0) {
			uint32_t p[2] = {links_port_nvme(s, k), links_port_host(s, k)};
			links_start_flow(s, FLOW_WRITE_DOWN, NULL, (int32_t)k, p, 2, s->lk.wd_nvme[k],
				   links_server_cl(s, k)->nvme->latency_s);
		}
		s->lk.wd_host[k] = s->lk.wd_nvme[k] = 0;
	}
	s->lk.n_dirty = 0;
}

/* Preemptive offload: while a node's KV (in use plus cached) is above
 * router.kv_watermark, its least recently used cached blocks (cold
 * sessions' KV) go down to the tiers, so that admissions find free blocks
 * instead of evicting on the critical path. */
void links_offload_cold(struct sim *s, uint32_t i)
{
	struct kv_pool *kv = &s->nodes[i].kv;
	if (!s->lk.has_dram && !s->lk.has_nvme)
		return;
	double mark = views_watermark_blocks(s, kv->n_blocks);
	double held = (double)kv->n_used + kv->n_cached;
	if (!views_above_watermark(s, held, kv->n_blocks) || s->sc->router.kv_watermark >= 1)
		return;
	node_sync(&s->nodes[i], s->now);
	uint32_t excess = (uint32_t)ceil((double)kv->n_used + kv->n_cached - mark);
	kv_evict(kv, excess);
}

/* Of two links, the one with the longer latency (pools of different
 * GPUs may have different NICs or host paths; a copy waits for the
 * slower end). */
static const struct cat_link *slower(const struct cat_link *x, const struct cat_link *y)
{
	return y->latency_s > x->latency_s ? y : x;
}

const struct cat_link *links_between(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports)
{
	int same = s->nodes[a].server == s->nodes[b].server;
	ports[0] = same ? links_port_nvlink(a) : links_port_nic(a);
	ports[1] = same ? links_port_nvlink(b) : links_port_nic(b);
	/* a server holds one pool's GPUs */
	return same ? links_cl(s, a)->intra_server
		    : slower(links_cl(s, a)->inter_server, links_cl(s, b)->inter_server);
}

/* The ports a KV transfer from node a to node b crosses, and its latency,
 * on the cluster's path (cluster.kv_transfer): GPU to GPU over NVLink or
 * the NICs (nixl), or staged through host memory (lmcache): a's server's
 * PCIe, the NICs when the servers differ, b's server's PCIe. */
const struct cat_link *links_kv_path(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports,
				     uint32_t *n, double *latency_s)
{
	const struct cat_link *link = links_between(s, a, b, ports);
	*n = 2;
	*latency_s = link->latency_s;
	if (s->sc->cluster.kv_transfer != KVX_LMCACHE)
		return link;
	uint32_t sa = (uint32_t)s->nodes[a].server, sb = (uint32_t)s->nodes[b].server;
	const struct cat_link *host = links_cl(s, a)->host;
	*n = 0;
	ports[(*n)++] = links_port_host(s, sa);
	*latency_s = host->latency_s + links_cl(s, b)->host->latency_s;
	if (sa != sb) {
		ports[(*n)++] = links_port_nic(a);
		ports[(*n)++] = links_port_nic(b);
		ports[(*n)++] = links_port_host(s, sb);
		*latency_s += link->latency_s;
		return link;
	}
	return host;
}

/* A flow's last byte has left: it frees its ports; its data arrives after
 * the link latency. */
/* A flow-end event superseded by a later one for its flow (a new rate):
 * skipped, not delivered. (A node's step end is a timer of the event queue:
 * a span cut short or a crash replaces or clears it in place.) */
int links_ev_flow_stale(const struct sim *s, const struct event *ev)
{
	return ev->seq != s->lk.net.f[ev->id].ev_seq;
}

void links_ev_flow(struct sim *s, const struct event *ev)
{
	uint32_t id = ev->id;
	struct flow *f = &s->lk.net.f[id];
	f->ev_seq = 0;
	uint16_t kind = (uint16_t)f->kind;
	int32_t target = f->a;
	void *ptr = f->ptr;
	int64_t lat = f->latency_ns;
	flow_remove(&s->lk.net, id);
	links_flows_changed(s);
	if (!evq_push_tag(&s->q, s->now + lat, EV_DELIVER, kind, target, ptr))
		sim_fail(s, "out of memory");
}

void links_scale_server(struct sim *s, uint32_t server, double factor)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if ((uint32_t)s->nodes[i].server != server)
			continue;
		flow_scale(&s->lk.net, links_port_nvlink(i), factor);
		flow_scale(&s->lk.net, links_port_nic(i), factor);
	}
	flow_scale(&s->lk.net, links_port_host(s, server), factor);
	flow_scale(&s->lk.net, links_port_nvme(s, server), factor);
	links_flows_changed(s);
}

int links_init(struct sim *s)
{
	const struct scenario *sc = s->sc;
	const struct cluster_cfg *cl = &sc->cluster;
	uint32_t N = s->n_nodes;
	const struct pool_cfg *lastp = &sc->pools[sc->n_pools - 1];
	s->lk.n_servers = (uint32_t)(lastp->first_server + lastp->n_servers);
	uint32_t S = s->lk.n_servers;
	s->lk.ectx = calloc(N, sizeof *s->lk.ectx);
	s->lk.wd_host = calloc(S, sizeof *s->lk.wd_host);
	s->lk.wd_nvme = calloc(S, sizeof *s->lk.wd_nvme);
	s->lk.dirty = calloc(S, sizeof *s->lk.dirty);
	s->lk.is_dirty = calloc(S, 1);
	if (!s->lk.ectx || !s->lk.wd_host || !s->lk.wd_nvme || !s->lk.dirty || !s->lk.is_dirty ||
	    flow_init(&s->lk.net, 2 * N + 2 * S))
		return -1;
	uint64_t dram_blocks = (uint64_t)(cl->tiers.dram_bytes / s->block_bytes);
	uint64_t nvme_blocks = (uint64_t)(cl->tiers.nvme_bytes / s->block_bytes);
	/* the servers' tiers hold KV when the column's engines offload to
	 * them; swap preemption (vLLM's CPU swap space) uses DRAM for the
	 * preempted requests' KV alone otherwise */
	s->lk.has_dram = dram_blocks > 0 && s->rt.mech.offload;
	s->lk.swap_dram = dram_blocks > 0 && cl->engine.preempt_swap;
	s->lk.has_nvme = nvme_blocks > 0 && s->rt.mech.offload;
	if (pidx_init(&s->lk.dram, S, dram_blocks) || pidx_init(&s->lk.nvme, S, nvme_blocks))
		return -1;
	s->lk.dram.on_evict = links_on_dram_evict;
	s->lk.dram.evict_ctx = s;
	for (uint32_t i = 0; i < N; i++) {
		const struct cluster_cfg *pcl = links_cl(s, i);
		s->lk.ectx[i] = (struct evict_ctx){s, (uint32_t)s->nodes[i].server};
		/* the tiers act per iteration: a node steps one iteration per
		 * event (decode spans apply KV growth at their end) */
		if (s->lk.has_dram || s->lk.has_nvme || s->lk.swap_dram)
			s->nodes[i].max_span = 1;
		if (s->lk.has_dram || s->lk.has_nvme) {
			s->nodes[i].kv.on_evict = links_on_hbm_evict;
			s->nodes[i].kv.evict_ctx = &s->lk.ectx[i];
		}
		flow_set_capacity(&s->lk.net, links_port_nvlink(i), pcl->nvlink_bytes_per_s);
		flow_set_capacity(&s->lk.net, links_port_nic(i), pcl->nic_bytes_per_s);
	}
	for (int p = 0; p < sc->n_pools; p++) {
		const struct pool_cfg *pc = &sc->pools[p];
		for (int k = 0; k < pc->n_servers; k++) {
			uint32_t sv = (uint32_t)(pc->first_server + k);
			flow_set_capacity(&s->lk.net, links_port_host(s, sv), pc->cl.host_bytes_per_s);
			flow_set_capacity(&s->lk.net, links_port_nvme(s, sv), pc->cl.nvme->bytes_per_s);
		}
	}
	return sim_add_chore(s, 30, &s->lk.n_dirty, links_flush_write_downs);
}

void links_free(struct sim *s)
{
	/* requests still referenced by flows (only after an error) */
	for (uint32_t k = 0; k < s->lk.net.n_active; k++) {
		struct request *r = s->lk.net.f[s->lk.net.active[k]].ptr;
		if (r && r->pending != UINT32_MAX) {
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	}
	flow_free(&s->lk.net);
	pidx_free(&s->lk.dram);
	pidx_free(&s->lk.nvme);
	free(s->lk.wd_host);
	free(s->lk.wd_nvme);
	free(s->lk.dirty);
	free(s->lk.is_dirty);
	free(s->lk.ectx);
	free(s->lk.changed);
}
