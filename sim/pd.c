/* pd: disaggregated prefill/decode: the decode node's choice, its reserved KV, the hand-over flow, fail-over. */
#include "sim/pd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/engine.h"
#include "sim/links.h"
#include "sim/pool.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "sim/views.h"

/* The path a request takes through pools (docs/model.md, "Disaggregated
 * prefill and decode"): the router's policy picks a node of a prefill or
 * mixed pool. On a mixed node (or, below router.disagg.min_prefill_tokens,
 * on a decode-capable node) it runs whole, as in a cluster without pools.
 * On a prefill node it runs with one output token (as llm-d's and vLLM's
 * proxies send it: max_tokens 1); its blocks stay held there. The decode
 * policy then picks a decode-capable node, which reserves room for the
 * prompt's KV (its own cached prefix locked, blocks for the rest), or
 * queues it until it has room (vLLM's connectors allocate before they
 * pull); the prefill node sends the blocks the decode node lacks as a flow
 * over the links; on arrival the decode node computes the prompt's last
 * token, which gives the user's first token (the proxies stream the decode
 * side's output), and decodes the rest. */

int pd_init(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	uint32_t N = s->n_nodes;
	s->pd.own = calloc(N, sizeof *s->pd.own);
	if (!s->pd.own) {
		snprintf(err, errlen, "out of memory for %u nodes", N);
		return 3;
	}
	if (!sc->disaggregated)
		return 0;
	s->pd.wait_head = calloc(N, sizeof *s->pd.wait_head);
	s->pd.wait_tail = calloc(N, sizeof *s->pd.wait_tail);
	if (!s->pd.wait_head || !s->pd.wait_tail) {
		snprintf(err, errlen, "out of memory for %u nodes", N);
		return 3;
	}
	if (sc->cluster.kv_transfer == KVX_NONE) {
		snprintf(err, errlen, "cluster.kv_transfer: a prefill pool sends its KV to a decode "
				      "pool; expected \"nixl\" or \"lmcache\", got \"none\"");
		return 2;
	}
	s->pd.pol = pol_find_at(sc->router.decode_policy, "router.decode_policy", err, errlen);
	if (!s->pd.pol)
		return 2;
	struct pol_env penv = {(uint32_t)sc->cluster.nodes,
			       (uint32_t)sc->cluster.engine.kv_block_tokens, s->rt.r_route,
			       (uint32_t)sc->cluster.engine.max_num_seqs};
	s->pd.pol_st = s->pd.pol->create(sc->router.decode_params, sc->router.decode_params_path, &penv,
				     err, errlen);
	if (!s->pd.pol_st)
		return 2;
	s->pd.pol_reads_kv = s->pd.pol->reads_kv_util ? s->pd.pol->reads_kv_util(s->pd.pol_st) : 0;
	return 0;
}

void pd_free(struct sim *s)
{
	/* hand-overs still waiting for room (only after an error) */
	for (uint32_t i = 0; s->pd.wait_head && i < s->n_nodes; i++)
		for (struct request *r = s->pd.wait_head[i], *next; r; r = next) {
			next = r->qnext;
			r->pending = UINT32_MAX;
			pool_req_put(s, r);
		}
	free(s->pd.wait_head);
	free(s->pd.wait_tail);
	free(s->pd.own);
	s->pd.wait_head = s->pd.wait_tail = NULL;
	s->pd.own = NULL;
	if (s->pd.pol_st)
		s->pd.pol->destroy(s->pd.pol_st);
	s->pd.pol_st = NULL;
	free(s->pd.fail);
	s->pd.fail = NULL;
}

static const struct pool_cfg *pool_of(const struct sim *s, uint32_t i)
{
	return &s->sc->pools[s->pool_of[i]];
}

/* Whether decode-capable node i can hold r whole. */
static int fits(const struct sim *s, uint32_t i, const struct request *r)
{
	uint32_t out = r->pd == PD_PREFILL ? r->pd_output : r->output_tokens;
	return node_blocks_for(&s->nodes[i], (uint64_t)r->prompt_tokens + out) <=
	       s->nodes[i].kv.n_blocks;
}

/* The decode node for r: the decode policy's choice among the
 * decode-capable nodes up, or, when it names none that can hold r, the
 * one of them with the fewest blocks over capacity that can; -1 if none
 * can. */
static int32_t pick(struct sim *s, const struct request *r)
{
	if (s->pd.pol_reads_kv == POL_READS_KV_ALL && s->vw.report_ns == 0)
		views_sync_all(s);
	struct pol_view v;
	views_for_decode(s, r, &v);
	struct pol_decision d = {POL_SHED, -1, MIG_DEFAULT, "no_decision", 0, 0, 0};
	s->rt.routing = r;
	s->pd.pol->route(s->pd.pol_st, &v, r, &d);
	s->rt.routing = NULL;
	views_end_decode(s, r);
	if (d.action == POL_ROUTE && d.node >= 0 && (uint32_t)d.node < s->n_nodes &&
	    s->alive[d.node] && s->can_decode[d.node] && fits(s, (uint32_t)d.node, r))
		return d.node;
	/* the fewest blocks over capacity (least_loaded's kv_blocks) */
	const struct pol_node_view *nv = s->vw.views[r->replica];
	int32_t best = -1;
	double best_load = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if (!s->alive[i] || !s->can_decode[i] || !fits(s, i, r))
			continue;
		double load = (double)nv[i].active_blocks / (double)nv[i].kv_blocks;
		if (best < 0 || load < best_load) {
			best = (int32_t)i;
			best_load = load;
		}
	}
	return best;
}

/* Whether a node of some decode-capable pool could hold r whole. */
static int decode_can_hold(const struct sim *s, const struct request *r, uint32_t dst)
{
	uint64_t need = node_blocks_for(&s->nodes[dst], (uint64_t)r->prompt_tokens + r->output_tokens);
	for (int p = 0; p < s->sc->n_pools; p++)
		if (s->sc->pools[p].role != POOL_PREFILL &&
		    need <= (uint64_t)s->sc->pools[p].kv_blocks_per_node)
			return 1;
	return 0;
}

int32_t pd_route(struct sim *s, struct request *r, uint32_t dst)
{
	if (pool_of(s, dst)->role != POOL_PREFILL)
		return (int32_t)dst;
	/* one that no decode node could take fails now, not after a prefill
	 * whose hand-over finds no room anywhere (and again on each retry) */
	if (!decode_can_hold(s, r, dst))
		return -1;
	int min = s->sc->router.min_prefill_tokens;
	if (min > 0) {
		/* llm-d's P/D threshold, Dynamo's conditional disaggregation:
		 * the prompt left to compute on the decode node that would
		 * take it; under the threshold it prefills there itself */
		uint32_t uncached = r->prompt_tokens;
		int32_t d = -1;
		if (uncached >= (uint32_t)min) {
			d = pick(s, r);
			if (d >= 0) {
				struct node *n = &s->nodes[d];
				node_sync(n, s->now);
				struct kv_match m;
				node_lookup_tokens(n, r, r->prompt_tokens, &m);
				uncached -= m.blocks * n->block_tokens;
			}
		} else {
			d = pick(s, r);
		}
		if (d >= 0 && uncached < (uint32_t)min) {
			r->pd_local = 1;
			return d;
		}
	}
	r->pd = PD_PREFILL;
	r->pd_output = r->output_tokens;
	r->output_tokens = 1;
	return (int32_t)dst;
}

/* Lets go of the blocks r's prefill node held for it (if the node has
 * not crashed since: then they went with its cache). */
static void release_src(struct sim *s, struct request *r)
{
	if (r->pd_src_tail == KV_NONE && r->pd_src_own == 0)
		return;
	uint32_t p = (uint32_t)r->prefill_node;
	if (s->flt.crashes[p] == r->pd_src_crashes) {
		node_sync(&s->nodes[p], s->now);
		engine_cut_span(s, p);
		s->pd.own[p] -= r->pd_src_own;
		node_release_held(&s->nodes[p], r);
		engine_kick(s, p); /* the room may let its queue's head in */
	}
	r->pd_src_tail = KV_NONE;
	r->pd_src_own = 0;
}

/* Room for r is reserved on d (node_reserve, hit blocks found there):
 * the prefill node sends the rest. */
static void send(struct sim *s, struct request *r, uint32_t d, uint32_t hit)
{
	uint32_t p = (uint32_t)r->prefill_node;
	struct node *dn = &s->nodes[d];
	r->pin_crashes = s->flt.crashes[d];
	s->pd.own[d] += r->n_own;
	engine_cut_span(s, d); /* the reservation changed its KV from outside */
	r->pd_xfer_ns = s->now;
	s->pd.stats.wait_s += (double)(s->now - r->pd_wait_ns) * 1e-9;
	/* the session's blocks will be on d: its next turn's migration rule
	 * and the policies' private-node bounds look there */
	struct session_rec *rec = r->session_rec;
	if (rec) {
		rec->last_node = (int32_t)d;
		session_add_node(rec, (int32_t)d);
	}
	/* whole blocks, as paged KV moves (a partial last block too) */
	uint32_t blocks = node_blocks_for(dn, r->prompt_tokens);
	blocks = blocks > hit ? blocks - hit : 0;
	r->pd_blocks = blocks;
	double bytes = blocks * s->block_bytes;
	s->pd.stats.bytes += bytes;
	if (blocks == 0) {
		/* the decode node had it all cached: nothing crosses a link */
		r->pending++;
		if (!evq_push_tag(&s->q, s->now, EV_DELIVER, FLOW_PD, (int32_t)d, r))
			sim_fail(s, "out of memory");
		return;
	}
	uint32_t ports[4], n_ports;
	double latency_s;
	const struct cat_link *link = links_kv_path(s, p, d, ports, &n_ports, &latency_s);
	double flow_bytes = bytes;
	/* only when the decode node's room was there as the prefill ended
	 * (its first send): a hand-over that waited, or fails over, had
	 * nowhere to stream to */
	if (s->sc->cluster.kv_layerwise && s->now == r->pd_done_ns) {
		/* Streamed layer by layer while the prefill ran: what the
		 * links could carry at today's rate during it has left; the
		 * last layer's share leaves after it in any case. */
		double rate = bytes / links_estimate_s(s, ports, n_ports, bytes, 0);
		double ran_s = (double)(r->pd_done_ns - r->pd_sched_ns) * 1e-9;
		double last = bytes / (double)s->sc->cluster.model->layers;
		flow_bytes = bytes - rate * ran_s;
		if (flow_bytes < last)
			flow_bytes = last;
	}
	if (s->log.te) {
		char args[200];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"from\":%u,\"to\":%u,\"bytes\":%.0f,\"link\":\"%s\"",
			 (unsigned long long)r->id, p, d, flow_bytes, link->name);
		int64_t t_ns = (int64_t)llround(
		    links_estimate_s(s, ports, n_ports, flow_bytes, latency_s) * 1e9);
		runlog_trace_event(s, "pd transfer", 'X', 2, (int)d, s->now, t_ns > 0 ? t_ns : 1,
				   args);
	}
	links_start_flow(s, FLOW_PD, r, (int32_t)d, ports, n_ports, flow_bytes, latency_s);
}

/* Queues r for room on d, behind those already waiting there. */
static void wait_for_room(struct sim *s, struct request *r, uint32_t d)
{
	r->qnext = NULL;
	if (s->pd.wait_tail[d])
		s->pd.wait_tail[d]->qnext = r;
	else
		s->pd.wait_head[d] = r;
	s->pd.wait_tail[d] = r;
}

/* Picks r's decode node and reserves room there (or waits for it).
 * 0, or -1: no decode node can take it (its held KV is let go). */
static int place(struct sim *s, struct request *r)
{
	int32_t d = pick(s, r);
	if (d < 0) {
		release_src(s, r);
		return -1;
	}
	r->node = d;
	r->state = REQ_TRANSFER;
	views_count_dispatch_decode(s, r, (uint32_t)d);
	if (s->pd.pol->on_dispatch)
		s->pd.pol->on_dispatch(s->pd.pol_st, r, d);
	struct node *dn = &s->nodes[d];
	uint32_t hit;
	node_sync(dn, s->now);
	if (!s->pd.wait_head[d] && node_reserve(dn, r, &hit) == 0)
		send(s, r, (uint32_t)d, hit);
	else
		wait_for_room(s, r, (uint32_t)d);
	return 0;
}

int pd_handoff(struct sim *s, struct request *r)
{
	uint32_t p = (uint32_t)r->node;
	r->prefill_node = (int32_t)p;
	r->pd_src_crashes = s->flt.crashes[p];
	s->pd.own[p] += r->pd_src_own;
	r->pd_sched_ns = r->sched_ns;
	r->pd_done_ns = r->pd_wait_ns = s->now;
	r->output_tokens = r->pd_output;
	r->pd = PD_DECODE;
	r->generated = 0;
	r->first_token_ns = 0;
	r->finish_ns = 0;
	r->num_tokens = r->prompt_tokens;
	r->num_computed = 0;
	r->node = -1;
	return place(s, r);
}

int pd_delivered(struct sim *s, struct request *r, uint32_t d)
{
	r->pending--;
	uint32_t p = (uint32_t)r->prefill_node;
	int src_ok = s->flt.crashes[p] == r->pd_src_crashes;
	int dst_ok = s->flt.crashes[d] == r->pin_crashes;
	struct node *dn = &s->nodes[d];
	if (dst_ok) {
		s->pd.own[d] -= r->n_own;
	} else { /* the reservation went with the decode node's cache */
		r->kv_tail = KV_NONE;
		r->n_blocks = r->n_own = 0;
	}
	if (!src_ok) {
		/* the prefill node failed while sending: the KV did not all
		 * leave; the request starts again */
		if (dst_ok) {
			node_sync(dn, s->now);
			engine_cut_span(s, d);
			node_unreserve(dn, r);
			engine_kick(s, d);
			/* the room may let those waiting for it go (an idle
			 * node has no step end to do it) */
			if (s->pd.wait_head[d])
				pd_try_waiting(s, d);
		}
		r->pd_src_tail = KV_NONE;
		r->pd_src_own = 0;
		return -1;
	}
	if (!dst_ok) {
		/* the decode node failed: the prefill node still holds the KV
		 * and sends it to another */
		s->pd.stats.failovers++;
		views_count_done(s, r, d);
		r->node = -1;
		r->pd_wait_ns = s->now;
		if (s->log.te) {
			char args[120];
			snprintf(args, sizeof args,
				 "\"request\":%llu,\"from\":%u,\"to\":%u,\"reason\":\"decode_node_failure\"",
				 (unsigned long long)r->id, p, d);
			runlog_trace_event(s, "pd failover", 'i', 0, 0, s->now, 0, args);
		}
		return place(s, r);
	}
	release_src(s, r);
	s->pd.stats.count++;
	s->pd.stats.seconds += (double)(s->now - r->pd_xfer_ns) * 1e-9;
	r->pd_arrive_ns = s->now;
	node_sync(dn, s->now);
	if (node_admit_reserved(dn, r, s->now))
		sim_schedule_step(s, d); /* replaces the later step end */
	engine_kick(s, d);
	return 0;
}

void pd_try_waiting(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	node_sync(n, s->now);
	while (s->pd.wait_head[i] && !s->error) {
		struct request *r = s->pd.wait_head[i];
		uint32_t hit;
		if (node_reserve(n, r, &hit))
			break;
		s->pd.wait_head[i] = r->qnext;
		if (!s->pd.wait_head[i])
			s->pd.wait_tail[i] = NULL;
		r->qnext = NULL;
		send(s, r, i, hit);
	}
}

uint32_t pd_node_down(struct sim *s, uint32_t i)
{
	uint32_t n_fail = 0;
	s->pd.own[i] = 0;
	struct request *r = s->pd.wait_head[i];
	s->pd.wait_head[i] = s->pd.wait_tail[i] = NULL;
	while (r && !s->error) {
		struct request *next = r->qnext;
		r->qnext = NULL;
		views_count_done(s, r, i);
		r->node = -1;
		s->pd.stats.wait_s += (double)(s->now - r->pd_wait_ns) * 1e-9; /* its wait so far */
		r->pd_wait_ns = s->now;
		if (place(s, r) == 0) {
			s->pd.stats.failovers++;
		} else {
			if (n_fail == s->pd.fail_cap) {
				uint32_t cap = s->pd.fail_cap ? 2 * s->pd.fail_cap : 8;
				struct request **f = realloc(s->pd.fail, cap * sizeof *f);
				if (!f) {
					sim_fail(s, "out of memory");
					break;
				}
				s->pd.fail = f;
				s->pd.fail_cap = cap;
			}
			s->pd.fail[n_fail++] = r;
		}
		r = next;
	}
	return n_fail;
}

void pd_drop(struct sim *s, struct request *r)
{
	release_src(s, r);
	if (r->pd == PD_PREFILL)
		r->output_tokens = r->pd_output;
	if (r->pd != PD_NONE)
		r->kv_hint = KV_NONE; /* its prefill node's run: no hint elsewhere */
	r->pd = PD_NONE;
	r->pd_local = 0;
	r->prefill_node = -1;
	r->pd_sched_ns = r->pd_done_ns = r->pd_xfer_ns = r->pd_arrive_ns = 0;
	r->pd_blocks = 0;
}

void pd_record(struct sim *s, const struct request *r)
{
	double arrive = (double)r->arrival_ns, first = (double)r->first_token_ns;
	double q, pf, tx = 0, qd = 0;
	if (r->prefill_node >= 0 && r->pd_arrive_ns) {
		q = (double)r->pd_sched_ns - arrive;
		pf = (double)(r->pd_done_ns - r->pd_sched_ns);
		tx = (double)(r->pd_arrive_ns - r->pd_xfer_ns);
		qd = first - arrive - q - pf - tx;
	} else {
		q = (double)r->sched_ns - arrive;
		pf = first - (double)r->sched_ns;
	}
	s->pd.stats.local += r->pd_local;
	s->pd.ttft_split[0] += q * 1e-9;
	s->pd.ttft_split[1] += pf * 1e-9;
	s->pd.ttft_split[2] += tx * 1e-9;
	s->pd.ttft_split[3] += qd * 1e-9;
}
