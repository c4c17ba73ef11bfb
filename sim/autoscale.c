/* autoscale: the pools' autoscalers (Kubernetes HPA, a Dynamo-like planner):
 * nodes requested, started after their start-up, drained and released. */
#include "sim/autoscale.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/cost.h"
#include "sim/engine.h"
#include "sim/router.h"
#include "base/rng.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"
#include "sim/views.h"

/* A recommendation of the HPA's, kept over its stabilisation window. */
struct as_rec {
	int64_t t;
	int32_t n;
};

/* One autoscaled pool's state. */
struct as_pool {
	int pool;
	const struct autoscaler_cfg *c;
	uint32_t first, slots;
	int64_t tick_ns;
	/* the window since the last tick: arrivals then, and per node (by
	 * slot) its busy time and the time it was marked (a tick, or its
	 * start-up's end) */
	uint64_t arrived_mark, completed_mark, in_mark, out_mark;
	double ttft_sum_mark, tpot_sum_mark;
	uint64_t ttft_n_mark, tpot_n_mark;
	int64_t *busy_mark, *mark_ns;
	/* hpa: recommendations in the stabilisation window, oldest first */
	struct as_rec *recs;
	uint32_t n_recs, cap_recs;
	/* planner: the load seen per tick (moving_average's ring), holt's
	 * level and trend, the request shape and corrections last seen */
	double *hist;
	uint32_t n_hist;
	double level, trend;
	int holt_started;
	double isl, osl;
	double corr_prefill, corr_decode;
};

struct autoscale {
	struct as_pool *p;
	int n;
	uint64_t draws; /* start-up jitters drawn */
	/* the nodes draining, in no order (s->sl.n_draining of them) */
	uint32_t *draining;
	int ev; /* the autoscalers' event kind */
};

static struct as_pool *pool_of_node(struct sim *s, uint32_t i)
{
	for (int k = 0; k < s->as->n; k++)
		if (s->as->p[k].pool == s->pool_of[i])
			return &s->as->p[k];
	return NULL;
}

/* (the thermal model is brought to now first: a slot off draws nothing) */
static void hold(struct sim *s, uint32_t i)
{
	thermal_advance(s, i);
	s->sl.held_from[i] = s->now;
	if (++s->sl.n_held > s->sl.n_held_max)
		s->sl.n_held_max = s->sl.n_held;
}

static void unhold(struct sim *s, uint32_t i)
{
	thermal_advance(s, i);
	/* its GPUs cool, drawing nothing: no longer throttled (they throttle
	 * again, once held, if still too hot) */
	s->hl[i].throttled = 0;
	s->hl[i].busy = 0;
	s->sl.held_ns[i] += s->now - s->sl.held_from[i];
	s->sl.held_from[i] = -1;
	s->sl.n_held--;
}

static void trace(struct sim *s, const char *what, uint32_t i)
{
	if (!s->log.te)
		return;
	char args[64];
	snprintf(args, sizeof args, "\"node\":%u", i);
	runlog_trace_event(s, what, 'i', 0, 0, s->now, 0, args);
}

int autoscale_init(struct sim *s)
{
	const struct scenario *sc = s->sc;
	int n = 0;
	for (int p = 0; p < sc->n_pools; p++)
		n += sc->pools[p].as.kind != AS_NONE;
	if (!n)
		return 0;
	struct autoscale *as = calloc(1, sizeof *as);
	if (!as)
		return -1;
	s->as = as;
	as->ev = sim_add_event_kind(s, autoscale_ev, autoscale_ev_stale, EVK_SLOTS);
	if (as->ev < 0 || sim_add_chore(s, 10, &s->sl.n_draining, autoscale_after_event))
		return -1;
	as->p = calloc((size_t)n, sizeof *as->p);
	s->sl.ready_at = calloc(s->n_nodes, sizeof *s->sl.ready_at);
	as->draining = malloc(s->n_nodes * sizeof *as->draining);
	if (!as->p || !s->sl.ready_at || !as->draining)
		return -1;
	for (int p = 0; p < sc->n_pools; p++) {
		const struct pool_cfg *pc = &sc->pools[p];
		if (pc->as.kind == AS_NONE)
			continue;
		struct as_pool *ap = &as->p[as->n++];
		ap->pool = p;
		ap->c = &pc->as;
		ap->first = (uint32_t)pc->first_node;
		ap->slots = (uint32_t)pc->cl.nodes;
		ap->tick_ns = (int64_t)llround(pc->as.tick_s * 1e9);
		ap->busy_mark = calloc(ap->slots, sizeof *ap->busy_mark);
		ap->mark_ns = calloc(ap->slots, sizeof *ap->mark_ns);
		ap->hist = calloc((size_t)pc->as.window, sizeof *ap->hist);
		if (!ap->busy_mark || !ap->mark_ns || !ap->hist)
			return -1;
		ap->corr_prefill = ap->corr_decode = 1;
		/* the slots past the starting nodes are off */
		for (uint32_t k = (uint32_t)pc->nodes0; k < ap->slots; k++) {
			uint32_t i = ap->first + k;
			if (s->alive[i])
				views_set_up(s, i, 0);
			views_refresh(s, i);
			s->sl.nstate[i] = NS_OFF;
			s->sl.held_from[i] = -1;
			s->sl.n_held--;
			/* an idle slot's GPUs sit at the inlet's temperature */
			if (sc->cluster.thermal.enabled)
				s->hl[i].temp_c = s->hl[i].ambient_c;
		}
		if (!evq_push_tag(&s->q, ap->tick_ns, s->as->ev, AS_EV_TICK, as->n - 1, NULL))
			return -1;
	}
	s->sl.n_held_max = s->sl.n_held;
	return 0;
}

void autoscale_free(struct sim *s)
{
	if (!s->as)
		return;
	for (int k = 0; k < s->as->n; k++) {
		free(s->as->p[k].busy_mark);
		free(s->as->p[k].mark_ns);
		free(s->as->p[k].recs);
		free(s->as->p[k].hist);
	}
	free(s->as->p);
	free(s->as->draining);
	free(s->as);
	free(s->sl.ready_at);
	s->as = NULL;
}

/* Node i starts serving: into the routers' views (unless a crash of it is
 * in force: it comes up when that ends), its window marked from now. */
static void ready(struct sim *s, uint32_t i)
{
	struct as_pool *ap = pool_of_node(s, i);
	s->sl.nstate[i] = NS_UP;
	ap->busy_mark[i - ap->first] = s->nodes[i].busy_ns;
	ap->mark_ns[i - ap->first] = s->now;
	trace(s, "node_ready", i);
	if (sim_crash_in_force(s, i))
		return;
	views_set_up(s, i, 1);
	views_refresh(s, i);
	engine_kick(s, i);
}

/* Node i's GPUs go back: its cache is emptied as by a crash (it holds no
 * request by now; pins and transfers to it break), and it is off. */
static void release(struct sim *s, uint32_t i)
{
	if (s->sl.nstate[i] == NS_DRAINING) {
		router_empty_node(s, i);
		struct autoscale *as = s->as;
		for (uint32_t k = 0; k < s->sl.n_draining; k++)
			if (as->draining[k] == i) {
				as->draining[k] = as->draining[--s->sl.n_draining];
				break;
			}
	}
	unhold(s, i);
	s->sl.nstate[i] = NS_OFF;
	s->sl.scale_down++;
	trace(s, "node_released", i);
}

void autoscale_check_drained(struct sim *s, uint32_t i)
{
	if (sim_drained(s, i))
		release(s, i);
}

void autoscale_after_event(struct sim *s)
{
	for (uint32_t k = 0; k < s->sl.n_draining && !s->error;) {
		uint32_t i = s->as->draining[k];
		if (sim_drained(s, i))
			release(s, i); /* moves the last one here */
		else
			k++;
	}
}

/* A uniform draw in [-1, 1) for the next start-up's jitter: a hash of the
 * seed and the draw's number, so that jitters do not disturb any other
 * stream and a run repeats. */
static double jitter_draw(struct sim *s)
{
	uint64_t x = rng_mix64(s->sc->seed ^ 0x5ca1ab1e00000000ULL ^ s->as->draws++);
	return (double)(x >> 11) * 0x1.0p-52 - 1.0;
}

/* Requests k more nodes of ap: the lowest-numbered slots that are off.
 * Each is held (costs GPU time) from now and serves after its start-up. */
static void scale_up(struct sim *s, struct as_pool *ap, int k)
{
	const struct autoscaler_cfg *c = ap->c;
	for (uint32_t j = 0; j < ap->slots && k > 0; j++) {
		uint32_t i = ap->first + j;
		/* a slot whose crash is in force would never serve */
		if (s->sl.nstate[i] != NS_OFF || sim_crash_in_force(s, i))
			continue;
		k--;
		hold(s, i);
		s->sl.nstate[i] = NS_STARTING;
		s->sl.scale_up++;
		double st = c->startup_s + c->startup_jitter_s * jitter_draw(s);
		s->sl.ready_at[i] = s->now + (int64_t)llround(st * 1e9);
		trace(s, "node_requested", i);
		if (s->sl.ready_at[i] <= s->now) {
			ready(s, i);
			continue;
		}
		if (!evq_push_tag(&s->q, s->sl.ready_at[i], s->as->ev, AS_EV_READY, (int32_t)i, NULL)) {
			sim_fail(s, "out of memory");
			return;
		}
	}
}

/* Node a of ap is a better one to remove than node b: one not ready
 * (starting, or crashed) before one serving, then the newest (held
 * latest; ties: the higher number), as a Kubernetes ReplicaSet picks the
 * pods to delete. */
static int removes_before(const struct sim *s, uint32_t a, uint32_t b)
{
	int sa = !s->alive[a], sb = !s->alive[b]; /* starting, or crashed */
	if (sa != sb)
		return sa;
	if (s->sl.held_from[a] != s->sl.held_from[b])
		return s->sl.held_from[a] > s->sl.held_from[b];
	return a > b;
}

/* Removes k nodes of ap: a starting one is released at once; a serving
 * one drains (takes no new work, finishes what it holds) and is released
 * when empty. */
static void scale_down(struct sim *s, struct as_pool *ap, int k)
{
	while (k-- > 0) {
		int32_t pick = -1;
		for (uint32_t j = 0; j < ap->slots; j++) {
			uint32_t i = ap->first + j;
			if (s->sl.nstate[i] != NS_STARTING && s->sl.nstate[i] != NS_UP)
				continue;
			if (pick < 0 || removes_before(s, i, (uint32_t)pick))
				pick = (int32_t)i;
		}
		if (pick < 0)
			return;
		uint32_t i = (uint32_t)pick;
		if (s->sl.nstate[i] == NS_STARTING) {
			release(s, i);
			continue;
		}
		s->sl.nstate[i] = NS_DRAINING;
		s->as->draining[s->sl.n_draining++] = i;
		trace(s, "node_draining", i);
		if (s->alive[i]) {
			views_set_up(s, i, 0);
			views_refresh(s, i);
		}
		autoscale_check_drained(s, i);
	}
}

/* The HPA's metric summed over the nodes serving (their number in *ready):
 * waiting requests, KV used over capacity, the busy share of the window,
 * or the cluster's arrivals per second over the window. */
static double hpa_usage(struct sim *s, struct as_pool *ap, uint32_t *ready)
{
	double sum = 0;
	*ready = 0;
	for (uint32_t j = 0; j < ap->slots; j++) {
		uint32_t i = ap->first + j;
		if (s->sl.nstate[i] != NS_UP || !s->alive[i])
			continue;
		(*ready)++;
		struct node *n = &s->nodes[i];
		switch (ap->c->metric) {
		case ASM_QUEUE:
			sum += n->n_waiting;
			break;
		case ASM_KV:
			node_sync(n, s->now);
			sum += (double)n->kv.n_used / n->kv.n_blocks;
			break;
		case ASM_BUSY: {
			int64_t span = s->now - ap->mark_ns[j];
			sum += span > 0 ? (double)(n->busy_ns - ap->busy_mark[j]) / (double)span : 0;
			break;
		}
		case ASM_RPS:
			break;
		}
	}
	if (ap->c->metric == ASM_RPS && *ready)
		sum = (double)(s->met.arrived - ap->arrived_mark) / ap->c->tick_s;
	return sum;
}

/* A decision kept to the pool's bounds, then, going down, to the highest
 * recommendation of the stabilisation window (Kubernetes' scale-down
 * stabilisation; the window's recommendations are the bounded decisions
 * before it). */
static int stabilise(struct sim *s, struct as_pool *ap, int desired, int cur)
{
	const struct autoscaler_cfg *c = ap->c;
	if (desired < c->min_nodes)
		desired = c->min_nodes;
	if (desired > c->max_nodes)
		desired = c->max_nodes;
	int64_t win = (int64_t)llround(c->stabilization_s * 1e9);
	uint32_t k = 0;
	while (k < ap->n_recs && ap->recs[k].t < s->now - win)
		k++;
	for (uint32_t j = k; j < ap->n_recs; j++)
		ap->recs[j - k] = ap->recs[j];
	ap->n_recs -= k;
	if (ap->n_recs == ap->cap_recs) {
		uint32_t cap = ap->cap_recs ? 2 * ap->cap_recs : 16;
		struct as_rec *r = realloc(ap->recs, cap * sizeof *r);
		if (!r) {
			sim_fail(s, "out of memory");
			return cur;
		}
		ap->recs = r;
		ap->cap_recs = cap;
	}
	ap->recs[ap->n_recs++] = (struct as_rec){s->now, desired};
	if (desired < cur) {
		int hi = desired;
		for (uint32_t j = 0; j < ap->n_recs; j++)
			if (ap->recs[j].n > hi)
				hi = ap->recs[j].n;
		desired = hi < cur ? hi : cur;
	}
	return desired;
}

/* Kubernetes' HPA (its replica calculator): the usage ratio is the metric
 * summed over the nodes serving, over target x their number; within the
 * tolerance of 1 nothing changes; else desired = ceil(ratio x serving).
 * Nodes not ready (starting, crashed) are set aside, except when scaling
 * up: then they count at 0, and if that turns the ratio back within the
 * tolerance or below 1, nothing changes. Without a node serving there is
 * no metric, and nothing changes. */
static int hpa_desired(struct sim *s, struct as_pool *ap, int cur)
{
	const struct autoscaler_cfg *c = ap->c;
	uint32_t ready;
	double usage = hpa_usage(s, ap, &ready);
	int desired = cur;
	if (ready > 0) {
		double ratio = usage / (c->target * ready);
		uint32_t unready = (uint32_t)cur > ready ? (uint32_t)cur - ready : 0;
		if (fabs(ratio - 1) <= c->tolerance) {
			desired = cur;
		} else if (ratio > 1 && unready > 0) {
			double all = usage / (c->target * (ready + unready));
			if (all < 1 || fabs(all - 1) <= c->tolerance)
				desired = cur;
			else
				desired = (int)ceil(all * (ready + unready) - 1e-9);
		} else {
			desired = (int)ceil(ratio * ready - 1e-9);
		}
	}
	return stabilise(s, ap, desired, cur);
}

/* The cost model's time of one iteration of b decodes attending over ctx
 * tokens each, and of one prefill of isl tokens (seconds). */
static double decode_iter_s(const struct cost_model *cm, uint32_t b, double ctx)
{
	struct cost_batch cb;
	cost_batch_clear(&cb);
	for (uint32_t j = 0; j < b; j++)
		cost_add_decode(&cb, ctx);
	return cost_iteration_s(cm, &cb);
}

static double prefill_s(const struct cost_model *cm, double isl)
{
	struct cost_batch cb;
	cost_batch_clear(&cb);
	cost_add_prefill(&cb, isl > 1 ? isl : 1, 0);
	return cost_iteration_s(cm, &cb);
}

/* Dynamo's planner, in its spirit: the load of the next interval predicted
 * from those seen (constant, moving average or Holt's linear trend, which
 * looks as far ahead as a new node's start-up), over one node's capacity
 * at the SLO from the cost model (a decode batch as large as the TPOT SLO
 * allows, the prefills it must fit between), each term scaled by the
 * ratio of the latency observed to the latency the cost model expects
 * (Dynamo's correction factors). */
static int planner_desired(struct sim *s, struct as_pool *ap, int cur)
{
	const struct autoscaler_cfg *c = ap->c;
	const struct pool_cfg *pc = &s->sc->pools[ap->pool];
	const struct cost_model *cm = &s->costs[ap->pool];
	struct metrics *m = &s->met;
	double lambda = (double)(m->arrived - ap->arrived_mark) / c->tick_s;
	uint64_t done = m->completed - ap->completed_mark;
	if (done > 0) {
		ap->isl = (double)(m->tokens.input - ap->in_mark) / (double)done;
		ap->osl = (double)(m->tokens.output - ap->out_mark) / (double)done;
	}
	/* predict */
	double pred = lambda;
	if (c->predictor == ASP_MOVING_AVERAGE) {
		ap->hist[ap->n_hist++ % (uint32_t)c->window] = lambda;
		uint32_t n = ap->n_hist < (uint32_t)c->window ? ap->n_hist : (uint32_t)c->window;
		pred = 0;
		for (uint32_t j = 0; j < n; j++)
			pred += ap->hist[j] / n;
	} else if (c->predictor == ASP_HOLT) {
		if (!ap->holt_started) {
			ap->level = lambda;
			ap->trend = 0;
			ap->holt_started = 1;
		} else {
			double prev = ap->level;
			ap->level = c->alpha * lambda + (1 - c->alpha) * (ap->level + ap->trend);
			ap->trend = c->beta * (ap->level - prev) + (1 - c->beta) * ap->trend;
		}
		pred = ap->level + ap->trend * (1 + c->startup_s / c->tick_s);
		if (pred < 0)
			pred = 0;
	}
	if (ap->osl <= 0) /* no request has ended yet: nothing to size by */
		return cur;
	/* corrections: observed over expected */
	double ctx = ap->isl + ap->osl / 2;
	double t_pf = prefill_s(cm, ap->isl);
	uint64_t nt = m->ttft.count - ap->ttft_n_mark;
	if (nt > 0) {
		double ttft = (m->ttft.sum - ap->ttft_sum_mark) / (double)nt;
		ap->corr_prefill = fmin(fmax(ttft / t_pf, 0.25), 4.0);
	}
	uint32_t running = 0, serving = 0;
	for (uint32_t j = 0; j < ap->slots; j++) {
		uint32_t i = ap->first + j;
		if (s->sl.nstate[i] == NS_UP && s->alive[i]) {
			running += s->nodes[i].n_running;
			serving++;
		}
	}
	uint64_t np = m->tpot.count - ap->tpot_n_mark;
	if (np > 0 && serving > 0 && running > 0) {
		double tpot = (m->tpot.sum - ap->tpot_sum_mark) / (double)np;
		double expect = decode_iter_s(cm, (running + serving - 1) / serving, ctx);
		ap->corr_decode = fmin(fmax(tpot / expect, 0.25), 4.0);
	}
	/* the largest decode batch the TPOT SLO allows (the engine's limit
	 * and the KV cache's too) */
	uint32_t bmax = (uint32_t)pc->cl.engine.max_num_seqs;
	double blocks_each = ceil((ap->isl + ap->osl) / pc->cl.engine.kv_block_tokens);
	if (blocks_each > 0 && (double)pc->kv_blocks_per_node / blocks_each < bmax)
		bmax = (uint32_t)((double)pc->kv_blocks_per_node / blocks_each);
	if (bmax < 1)
		bmax = 1;
	double slo = s->sc->slo_tpot_p99_s;
	uint32_t b = bmax;
	while (b > 1 && slo > 0 && ap->corr_decode * decode_iter_s(cm, b, ctx) > slo)
		b--;
	double t_it = ap->corr_decode * decode_iter_s(cm, b, ctx);
	double tpf = ap->corr_prefill * t_pf;
	double rate = b / t_it; /* decode tokens per second of decode time */
	double mu = pc->role == POOL_PREFILL  ? 1.0 / tpf
		    : pc->role == POOL_DECODE ? rate / ap->osl
					      : rate / (ap->osl + tpf * rate);
	int desired = (int)ceil(pred / (mu * (1 - c->headroom)) - 1e-9);
	return stabilise(s, ap, desired, cur);
}

/* One autoscaler's tick: its decision, bounded by max_step (or the HPA's
 * default policies: up by at most max(4, current) a tick), applied; the
 * window restarts. */
static void tick(struct sim *s, struct as_pool *ap)
{
	const struct autoscaler_cfg *c = ap->c;
	int cur = 0;
	for (uint32_t j = 0; j < ap->slots; j++) {
		uint8_t st = s->sl.nstate[ap->first + j];
		cur += st == NS_STARTING || st == NS_UP;
	}
	int desired = c->kind == AS_HPA ? hpa_desired(s, ap, cur) : planner_desired(s, ap, cur);
	int up = c->max_step ? c->max_step : (cur > 4 ? cur : 4);
	if (desired > cur + up)
		desired = cur + up;
	if (c->max_step && desired < cur - c->max_step)
		desired = cur - c->max_step;
	if (desired > cur)
		scale_up(s, ap, desired - cur);
	else if (desired < cur)
		scale_down(s, ap, cur - desired);
	/* the next window */
	struct metrics *m = &s->met;
	ap->arrived_mark = m->arrived;
	ap->completed_mark = m->completed;
	ap->in_mark = m->tokens.input;
	ap->out_mark = m->tokens.output;
	ap->ttft_sum_mark = m->ttft.sum;
	ap->ttft_n_mark = m->ttft.count;
	ap->tpot_sum_mark = m->tpot.sum;
	ap->tpot_n_mark = m->tpot.count;
	for (uint32_t j = 0; j < ap->slots; j++) {
		ap->busy_mark[j] = s->nodes[ap->first + j].busy_ns;
		ap->mark_ns[j] = s->now;
	}
}

void autoscale_ev(struct sim *s, const struct event *ev)
{
	if (ev->tag == AS_EV_READY) {
		ready(s, (uint32_t)ev->node);
		return;
	}
	struct as_pool *ap = &s->as->p[ev->id];
	tick(s, ap);
	if (!evq_push_tag(&s->q, s->now + ap->tick_ns, s->as->ev, AS_EV_TICK, (int32_t)ev->id, NULL))
		sim_fail(s, "out of memory");
}

/* A start-up's end is stale when its slot was released meanwhile (and
 * perhaps requested again, with another end). */
int autoscale_ev_stale(const struct sim *s, const struct event *ev)
{
	return ev->tag == AS_EV_READY &&
	       (s->sl.nstate[ev->node] != NS_STARTING || s->sl.ready_at[ev->node] != ev->time_ns);
}
