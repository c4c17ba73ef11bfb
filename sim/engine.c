/* engine: putting work on nodes: queues and kicks, pinned KV, swap and reloads from the host tiers. */
#include "sim/engine.h"

#include <math.h>
#include <stdlib.h>

#include "sim/links.h"
#include "sim/pool.h"
#include "sim/power.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"
#include "sim/views.h"

void engine_kick(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (!n->busy) {
		thermal_advance(s, i);
		thermal_apply_speed(s, i);
		if (node_start_step(n, s->now) > 0) {
			sim_schedule_step(s, i);
			views_prefill_step(s, i);
			/* the thermal model's input: with it a step is one iteration */
			if (s->sc->cluster.thermal.enabled) {
				const struct cat_gpu *g = s->sc->pools[s->pool_of[i]].cl.gpu;
				s->hl[i].busy_w =
				    power_busy_w(g, n->work0_ns, node_iteration_ns(n, 0));
			}
		}
		s->hl[i].busy = n->busy;
	}
	if ((s->lk.has_dram || s->lk.has_nvme) && s->rt.mech.watermark_action == WM_OFFLOAD)
		links_offload_cold(s, i);
	if (s->vw.report_ns == 0)
		views_refresh(s, i);
	if (s->eng.swq_head[i] && !s->eng.in_swap_in)
		engine_try_swap_in(s, i);
}

/* Enqueues r on node i (at the head for a swapped-in request); an arrival
 * cuts a decode span short, which moves the node's step-end event earlier. */
void engine_enqueue(struct sim *s, uint32_t i, struct request *r)
{
	struct node *n = &s->nodes[i];
	int front = r->swapped;
	r->swapped = 0;
	if (front ? node_enqueue_front(n, r, s->now) : node_enqueue(n, r, s->now))
		sim_schedule_step(s, i); /* replaces the later step end */
	engine_kick(s, i);
}

/* Node i's KV changes from outside: a decode span in progress ends after
 * its current iteration, so the rest is planned with the change. */
void engine_cut_span(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (node_cut_span(n, s->now))
		sim_schedule_step(s, i); /* replaces the later step end */
}

/* Pins the prefix m of node i for r while its transfer runs, so that the
 * blocks it arrives after are still there. */
void engine_pin(struct sim *s, struct request *r, uint32_t i, const struct kv_match *m)
{
	engine_cut_span(s, i); /* no change to the pool: the node is synced already */
	r->kv_tail = kv_acquire(&s->nodes[i].kv, m);
	r->pin_crashes = s->flt.crashes[i];
}

/* Releases the pin; 0, or -1 if the node crashed since (the pin is gone
 * with its cache). */
int engine_unpin(struct sim *s, struct request *r, uint32_t i)
{
	if (r->pin_crashes != s->flt.crashes[i]) {
		r->kv_tail = KV_NONE;
		return -1;
	}
	if (r->kv_tail != KV_NONE) {
		engine_cut_span(s, i);
		kv_release(&s->nodes[i].kv, r->kv_tail, 0);
	}
	r->kv_tail = KV_NONE;
	return 0;
}

/* Prefix blocks that dst's HBM lacks but its server's DRAM or NVMe tier
 * holds are reloaded before prefill when that is quicker than computing
 * them (columns that offload), and a swapped-out request's blocks come
 * back from DRAM. Returns 1 if reload transfers were started. */
int engine_maybe_reload(struct sim *s, struct request *r, uint32_t dst)
{
	int dram = s->lk.has_dram || (r->swapped && s->lk.swap_dram);
	if ((!dram && !s->lk.has_nvme) || !s->sc->cluster.engine.prefix_caching)
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
		if (dram && pidx_has(&s->lk.dram, server, r->hashes[j]))
			from_dram++;
		else if (s->lk.has_nvme && pidx_has(&s->lk.nvme, server, r->hashes[j]))
			from_nvme++;
		else
			break;
	}
	if (j == m.blocks)
		return 0;
	uint32_t host = links_port_host(s, server), nv[2] = {links_port_nvme(s, server), host};
	double t = 0;
	if (from_dram)
		t = links_estimate_s(s, &host, 1, from_dram * s->block_bytes, links_cl(s, dst)->host->latency_s);
	if (from_nvme) {
		double t2 = links_estimate_s(s, nv, 2, from_nvme * s->block_bytes,
				       links_cl(s, dst)->nvme->latency_s);
		t = t2 > t ? t2 : t;
	}
	if (!r->swapped && t >= cost_prefill_s(s->nodes[dst].cost, (double)(j - m.blocks) * B,
					       (double)m.blocks * B))
		return 0;
	r->rel_lo = m.blocks;
	r->rel_hi = j;
	r->state = REQ_TRANSFER;
	r->node = (int32_t)dst;
	engine_pin(s, r, dst, &m);
	if (from_dram)
		links_start_flow(s, FLOW_RELOAD, r, (int32_t)dst, &host, 1, from_dram * s->block_bytes,
			   links_cl(s, dst)->host->latency_s);
	if (from_nvme)
		links_start_flow(s, FLOW_RELOAD, r, (int32_t)dst, nv, 2, from_nvme * s->block_bytes,
			   links_cl(s, dst)->nvme->latency_s);
	s->lk.offload_in += (double)(j - m.blocks) * s->block_bytes;
	return 1;
}

/* Swap mode: a preempted request's computed blocks go to DRAM, then come
 * back (what HBM no longer holds) and it resumes at its queue's head. */
void engine_on_swap_out(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	uint32_t B = (uint32_t)s->sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->high_water / B, server = (uint32_t)s->nodes[r->node].server;
	if (full > r->n_hashes)
		full = r->n_hashes;
	r->swapped = 1;
	r->pin_crashes = s->flt.crashes[r->node];
	if (full == 0) {
		engine_enqueue(s, (uint32_t)r->node, r);
		return;
	}
	if (pidx_insert(&s->lk.dram, server, r->hashes, full))
		sim_fail(s, "out of memory");
	double bytes = full * s->block_bytes;
	s->lk.offload_out += bytes;
	uint32_t p = links_port_host(s, server);
	links_start_flow(s, FLOW_SWAP_OUT, r, r->node, &p, 1, bytes,
			 links_cl(s, (uint32_t)r->node)->host->latency_s);
}

void engine_try_swap_in(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	s->eng.in_swap_in = 1;
	node_sync(n, s->now);
	while (s->eng.swq_head[i] && !s->error) {
		struct request *r = s->eng.swq_head[i];
		if (node_blocks_for(n, (uint64_t)r->high_water + 1) > kv_available(&n->kv))
			break;
		s->eng.swq_head[i] = r->qnext;
		if (!s->eng.swq_head[i])
			s->eng.swq_tail[i] = NULL;
		r->qnext = NULL;
		/* The room it was given stays held while its blocks come back. */
		if (engine_maybe_reload(s, r, i)) {
			s->eng.swapping_in[i]++;
		} else {
			n->hold_admissions = s->eng.swq_head[i] != NULL || s->eng.swapping_in[i] > 0;
			engine_enqueue(s, i, r);
		}
	}
	n->hold_admissions = s->eng.swq_head[i] != NULL || s->eng.swapping_in[i] > 0;
	s->eng.in_swap_in = 0;
}

int engine_init(struct sim *s)
{
	uint32_t N = s->n_nodes;
	s->eng.swq_head = calloc(N, sizeof *s->eng.swq_head);
	s->eng.swq_tail = calloc(N, sizeof *s->eng.swq_tail);
	s->eng.swapping_in = calloc(N, sizeof *s->eng.swapping_in);
	return s->eng.swq_head && s->eng.swq_tail && s->eng.swapping_in ? 0 : -1;
}

void engine_free(struct sim *s)
{
	/* requests swapped out and waiting (only after an error) */
	for (uint32_t i = 0; s->eng.swq_head && i < s->n_nodes; i++)
		for (struct request *r = s->eng.swq_head[i], *next; r; r = next) {
			next = r->qnext;
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	free(s->eng.swq_head);
	free(s->eng.swq_tail);
	free(s->eng.swapping_in);
	s->eng.swq_head = s->eng.swq_tail = NULL;
	s->eng.swapping_in = NULL;
}
