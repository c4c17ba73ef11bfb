/* kv_cost: NVIDIA Dynamo's KV-aware router cost. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"
#include "base/hmap.h"
#include "sim/request.h"

#define KC_MAX_CANDIDATES 256

struct kc {
	gsl_rng *rng;
	uint32_t block_tokens, n_nodes;
	double overlap_weight, temperature;
	/* Overlap credit per tier (load "router"): a prompt block cached in
	 * the node's HBM, its server's DRAM or its NVMe counts this much
	 * against its prefill. */
	double device_credit, host_credit, disk_credit;
	int engine_load; /* load "engine": the older form on the engine's KV report */
	double *cost; /* scratch, per node */
	/* candidates > 0: the nodes scored per request are that many drawn
	 * uniformly among those up, plus the session's last node (`last`:
	 * session -> node + 1, forgotten when the session ends). */
	uint32_t candidates;
	uint32_t *cand; /* scratch: the drawn nodes */
	struct hmap last;
};

/* Defaults are Dynamo's (docs/router, configuration reference of the
 * frontend's router flags): --router-prefill-load-scale (the weight of
 * the prefill term, --kv-overlap-score-weight in the older cost form) 1.0,
 * --router-kv-overlap-score-credit 1.0, --router-host-cache-hit-weight
 * 0.75, --router-disk-cache-hit-weight 0.25, --router-temperature 0. */
static void *kc_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"overlap_weight", "temperature", "candidates",
					   "load",           "device_credit", "host_credit",
					   "disk_credit",    NULL};
	static const char *const loads[] = {"router", "engine", NULL};
	double w = 1.0, t = 0.0, dev = 1.0, host = 0.75, disk = 0.25;
	int64_t k = 0;
	int load = 0;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_number(params, path, "overlap_weight", 0, 1e9, &w, err, errlen) ||
	    cfg_number(params, path, "temperature", 0, 1e9, &t, err, errlen) ||
	    cfg_int(params, path, "candidates", 0, KC_MAX_CANDIDATES, &k, err, errlen) ||
	    cfg_enum(params, path, "load", loads, &load, err, errlen) ||
	    cfg_number(params, path, "device_credit", 0, 1e9, &dev, err, errlen) ||
	    cfg_number(params, path, "host_credit", 0, 1, &host, err, errlen) ||
	    cfg_number(params, path, "disk_credit", 0, 1, &disk, err, errlen))
		return NULL;
	struct kc *s = calloc(1, sizeof *s);
	if (s) {
		s->cost = malloc(env->n_nodes * sizeof *s->cost);
		s->cand = malloc((KC_MAX_CANDIDATES + 1) * sizeof *s->cand);
	}
	if (!s || !s->cost || !s->cand) {
		if (s) {
			free(s->cost);
			free(s->cand);
		}
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rng = env->rng;
	s->block_tokens = env->block_tokens;
	s->n_nodes = env->n_nodes;
	s->overlap_weight = w;
	s->temperature = t;
	s->device_credit = dev;
	s->host_credit = host;
	s->disk_credit = disk;
	s->engine_load = load == 1;
	s->candidates = (uint32_t)k;
	hmap_init(&s->last);
	return s;
}

/* candidates > 0: the session's last node (if up), then min(candidates,
 * up) distinct nodes drawn uniformly among those up (Floyd's sampling, in
 * draw order), the session's node not twice. Fills s->cand; returns how
 * many. O(candidates^2), plus O(nodes) while some node is down. */
static uint32_t draw_candidates(struct kc *s, const struct pol_view *v, const struct request *r,
				int lazy)
{
	uint32_t m = 0, up = v->n_up, k = s->candidates < up ? s->candidates : up;
	const uint64_t *last = hmap_get(&s->last, r->session);
	int32_t own = last && v->nodes[*last - 1].up ? (int32_t)(*last - 1) : -1;
	if (own >= 0)
		s->cand[m++] = (uint32_t)own;
	uint32_t *rank = s->cand + m, n = 0;
	for (uint32_t j = up - k; j < up; j++) {
		uint32_t t = (uint32_t)gsl_rng_uniform_int(s->rng, j + 1), x = 0;
		while (x < n && rank[x] != t)
			x++;
		rank[n] = x < n ? j : t;
		n++;
	}
	for (uint32_t x = 0; x < n; x++) {
		uint32_t node = up == v->n_nodes ? rank[x] : (uint32_t)pol_kth_up(v, rank[x]);
		if ((int32_t)node != own)
			s->cand[m++] = node;
	}
	/* with a floor the loop brings up to date only the candidates it
	 * cannot rule out on it (kc_route); the router's own load needs no
	 * bringing up to date, only the lookups' prefetches */
	if ((lazy || !s->engine_load) && v->prefetch_kv)
		v->prefetch_kv(v->ctx, s->cand, m);
	else if (!lazy && v->sync_kv)
		v->sync_kv(v->ctx, s->cand, m);
	return m;
}

/* A minimum draw in scan order: c joins the minima so far (a reservoir
 * draw among them, ties uniform) or starts them. */
struct kc_min {
	double lo, hi;
	uint32_t n_lo;
	int32_t pick;
};

/* c: node i's cost over its speed (pol_speed: at most 1, so a bound on a
 * cost before the division is still one after it, and the scans' pruning
 * holds). */
static inline void kc_offer(struct kc *s, struct kc_min *m, uint32_t i, double c)
{
	s->cost[i] = c;
	if (c > m->hi)
		m->hi = c;
	if (c < m->lo) {
		m->lo = c;
		m->n_lo = 0;
	}
	if (c == m->lo && (++m->n_lo == 1 || gsl_rng_uniform_int(s->rng, m->n_lo) == 0))
		m->pick = (int32_t)i;
}

/* load "engine", Dynamo's older form:
 * cost(node) = overlap_weight * prefill blocks still to compute there
 *            + KV blocks its active requests hold (the engine's report),
 * where prefill blocks = prompt_tokens / B - blocks of the prompt cached on
 * the node (the exact index, as Dynamo's KV events give it). It leaves out
 * what was routed but not yet admitted, and the request itself: under
 * load it sends run after run to one node (see docs/policies.md). */
static void kc_scan_engine(struct kc *s, const struct pol_view *v, const struct request *r,
			   const uint32_t *list, uint32_t n, int floor_ok, struct kc_min *mn)
{
	double need = (double)r->prompt_tokens / s->block_tokens;
	uint32_t most = v->cached_prefix ? pol_prompt_blocks(r, s->block_tokens) : 0;
	int prune = s->temperature == 0;
	/* At temperature 0 the policy brings up to date the nodes it reads
	 * (POL_READS_KV_SOME): with a floor under each node's KV use, one by
	 * one where the floor does not rule the node out; without, the
	 * candidates at once, or every node one by one. */
	int each = prune && v->sync_kv && (s->candidates == 0 || floor_ok);
	struct pol_cached_bound cb; /* the most each node can have cached */
	pol_cached_bound_init(&cb, v, r, most);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = list ? list[j] : j;
		if (!v->nodes[i].up)
			continue;
		uint32_t cap = pol_cached_bound_of(&cb, i);
		/* The cost with that much cached bounds the node's cost from
		 * below (floating-point operations are monotone). At temperature 0
		 * a node whose bound exceeds the minimum so far can neither be the
		 * minimum nor tie it, so it draws nothing and its index lookup is
		 * skipped: the picks and draws are those of the full scan. The
		 * same with the floor under its KV use in place of the use: it
		 * is not even brought up to date. */
		double base = s->overlap_weight * (need - cap);
		if (floor_ok && base + v->kv_used_floor(v->ctx, i) > mn->lo)
			continue;
		if (each)
			v->sync_kv(v->ctx, &i, 1);
		double c = base + v->nodes[i].kv_used_blocks;
		if (prune && c > mn->lo)
			continue;
		uint32_t hit = cap ? v->cached_prefix(v->ctx, i, r) : 0;
		if (hit != cap)
			c = s->overlap_weight * (need - hit) + v->nodes[i].kv_used_blocks;
		kc_offer(s, mn, i, c / pol_speed(&v->nodes[i]));
	}
}

/* load "router", Dynamo's current form, on the router's own record:
 *   adjusted prefill = max(active prefill + prompt blocks - credit, 0)
 *   cost = overlap_weight * adjusted prefill + active blocks + prompt blocks
 * in blocks of B tokens: active prefill = the node's prompt tokens still
 * to prefill (pol_prefill_tokens) / B, prompt blocks = prompt_tokens / B,
 * active blocks = the node's active_blocks, the request's own full blocks
 * added as Dynamo adds its projected blocks (the same on every node);
 * credit = device_credit x blocks cached in the node's HBM (the exact
 * index) + host_credit x the blocks after them in its server's DRAM +
 * disk_credit x those after them in its NVMe (where the servers have
 * tiers). Lookups skipped as in kc_scan_engine: the credit with every
 * block a node can hold bounds its cost from below. */
static void kc_scan_router(struct kc *s, const struct pol_view *v, const struct request *r,
			   const uint32_t *list, uint32_t n, struct kc_min *mn)
{
	double B = s->block_tokens, need = (double)r->prompt_tokens / B;
	double incoming = (double)(r->prompt_tokens / s->block_tokens);
	uint32_t blocks = pol_prompt_blocks(r, s->block_tokens);
	uint32_t most = v->cached_prefix ? blocks : 0;
	double tw = s->host_credit > s->disk_credit ? s->host_credit : s->disk_credit;
	int tiers = v->cached_tiers && tw > 0;
	int prune = s->temperature == 0;
	struct pol_cached_bound cb;
	pol_cached_bound_init(&cb, v, r, most);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = list ? list[j] : j;
		const struct pol_node_view *nv = &v->nodes[i];
		if (!nv->up)
			continue;
		uint32_t cap = pol_cached_bound_of(&cb, i);
		double pre = (double)pol_prefill_tokens(v, i) / B + need;
		double load = (double)nv->active_blocks + incoming;
		if (prune) {
			/* the most credit: cap blocks in HBM, the rest of the
			 * prompt in the better of the lower tiers */
			double most_credit = s->device_credit * cap;
			if (tiers)
				most_credit = s->device_credit >= tw
						      ? most_credit + tw * (blocks - cap)
						      : tw * blocks;
			double x = pre - most_credit;
			if (s->overlap_weight * (x > 0 ? x : 0) + load > mn->lo)
				continue;
		}
		uint32_t hit = cap ? v->cached_prefix(v->ctx, i, r) : 0, host = 0, disk = 0;
		if (tiers && hit < blocks)
			v->cached_tiers(v->ctx, i, r, hit, &host, &disk);
		double x = pre - (s->device_credit * hit + s->host_credit * host +
				  s->disk_credit * disk);
		kc_offer(s, mn, i, (s->overlap_weight * (x > 0 ? x : 0) + load) / pol_speed(nv));
	}
}

/* The minimum cost over every node up, or over the candidates (see
 * draw_candidates). temperature 0: the minimum, ties drawn uniformly (a
 * reservoir draw in scan order); else a draw with probability
 * proportional to exp(-(cost - min) / (max - min) / temperature). */
static void kc_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct kc *s = st;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	d->hashed_tokens = r->prompt_tokens;
	const uint32_t *list = NULL;
	uint32_t n = v->n_nodes;
	int floor_ok = s->engine_load && s->temperature == 0 && v->kv_used_floor && v->sync_kv;
	if (s->candidates > 0) {
		n = draw_candidates(s, v, r, floor_ok);
		list = s->cand;
	}
	struct kc_min mn = {INFINITY, -INFINITY, 0, -1};
	if (s->engine_load)
		kc_scan_engine(s, v, r, list, n, floor_ok, &mn);
	else
		kc_scan_router(s, v, r, list, n, &mn);
	int32_t pick = mn.pick;
	double lo = mn.lo, hi = mn.hi;
	if (pick < 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = "no_node_up";
		return;
	}
	if (s->temperature > 0 && hi > lo) {
		double sum = 0;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t i = list ? list[j] : j;
			if (v->nodes[i].up)
				sum += exp(-(s->cost[i] - lo) / (hi - lo) / s->temperature);
		}
		double u = gsl_rng_uniform(s->rng) * sum;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t i = list ? list[j] : j;
			if (!v->nodes[i].up)
				continue;
			pick = (int32_t)i;
			u -= exp(-(s->cost[i] - lo) / (hi - lo) / s->temperature);
			if (u < 0)
				break;
		}
	}
	d->node = pick;
}

static void kc_dispatch(void *st, const struct request *r, int32_t node)
{
	struct kc *s = st;
	if (s->candidates > 0)
		hmap_put(&s->last, r->session, (uint64_t)node + 1); /* out of memory: no record */
}

/* The session's KV moved ahead of its next turn: its last node is there. */
static void kc_move(void *st, const struct request *next_turn, int32_t node)
{
	struct kc *s = st;
	if (s->candidates > 0)
		hmap_put(&s->last, next_turn->session, (uint64_t)node + 1); /* out of memory: no record */
}

/* draw_candidates's first miss: the session's last node's slot */
static void kc_prefetch(const void *st, const struct request *r)
{
	const struct kc *s = st;
	if (s->candidates > 0)
		hmap_prefetch(&s->last, r->session);
}

static void kc_complete(void *st, const struct request *r, int32_t node, int session_done)
{
	struct kc *s = st;
	(void)node;
	if (session_done)
		hmap_del(&s->last, r->session);
}

/* Load "router" reads no engine figure. Load "engine": the candidates'
 * KV figures, or every node's: at temperature 0 each brought up to date
 * by the policy where its floor does not rule it out; for the softmax,
 * all of them before each routing. */
static int kc_reads_kv(const void *st)
{
	const struct kc *s = st;
	if (!s->engine_load)
		return 0;
	return s->candidates > 0 || s->temperature == 0 ? POL_READS_KV_SOME : POL_READS_KV_ALL;
}

static void kc_destroy(void *st)
{
	struct kc *s = st;
	hmap_free(&s->last);
	free(s->cost);
	free(s->cand);
	free(s);
}

const struct pol_ops pol_kv_cost = {
    .name = "kv_cost",
    .description = "Dynamo's KV router: min of overlap_weight x max(active prefill + prompt "
		   "- cached blocks per tier, 0) + active blocks, on the router's own count "
		   "and the exact cache index, over every node or `candidates` sampled ones "
		   "plus the session's last; optional softmax",
    .family = POL_PRODUCT,
    /* Dynamo's workers publish ForwardPassMetrics every forward pass:
     * report_interval_ms 0 (exact at iteration granularity) */
    .product = "NVIDIA Dynamo",
    .create = kc_create,
    .route = kc_route,
    .on_dispatch = kc_dispatch,
    .on_complete = kc_complete,
    .destroy = kc_destroy,
    .reads_kv_util = kc_reads_kv,
    .looks_up_cache = pol_always,
    .prefetch = kc_prefetch,
    .on_move = kc_move,
};
