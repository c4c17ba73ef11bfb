/* weighted_scorer: llm-d's inference scheduler: a weighted sum of scorers. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/prompt_index.h"
#include "policies/registry.h"
#include "config/cfg.h"
#include "sim/request.h"

struct ws {
	struct prompt_index idx; /* the approximate index, when prefix is "approx" */
	gsl_rng *rng;
	uint32_t block_tokens;
	int exact;
	double w_prefix, w_kv, w_queue, w_active;
};

static void *ws_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"prefix_weight", "kv_weight", "queue_weight",
					   "active_weight", "prefix",    "max_tree_blocks", NULL};
	static const char *const kinds[] = {"approx", "exact", NULL};
	/* prefix 2 against load 1: llm-d-inference-scheduler's sample
	 * configuration (prefix-cache-scorer 2, load-aware-scorer 1), the load
	 * weight given to each of the free-KV and queue scorers; active 1
	 * (chosen: as much as the queue, so that between two load reports the
	 * router's own count of what it sent steers as much as the report;
	 * llm-d's active-request-scorer, which its inference-scheduling guide
	 * does not enable) */
	double wp = 2, wk = 1, wq = 1, wa = 1;
	int64_t cap = 32768;
	int kind = 0;
	if (cfg_check_keys(params, path, keys, err, errlen) ||
	    cfg_number(params, path, "prefix_weight", 0, 1e9, &wp, err, errlen) ||
	    cfg_number(params, path, "kv_weight", 0, 1e9, &wk, err, errlen) ||
	    cfg_number(params, path, "queue_weight", 0, 1e9, &wq, err, errlen) ||
	    cfg_number(params, path, "active_weight", 0, 1e9, &wa, err, errlen) ||
	    cfg_enum(params, path, "prefix", kinds, &kind, err, errlen) ||
	    cfg_int(params, path, "max_tree_blocks", 0, (int64_t)1 << 32, &cap, err, errlen))
		return NULL;
	struct ws *s = calloc(1, sizeof *s);
	if (!s || prompt_index_init(&s->idx, env->n_nodes, kind ? 0 : (size_t)cap)) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rng = env->rng;
	s->block_tokens = env->block_tokens;
	s->exact = kind;
	s->w_prefix = wp;
	s->w_kv = wk;
	s->w_queue = wq;
	s->w_active = wa;
	return s;
}

/* score = prefix_weight * matched blocks / prompt blocks
 *       + kv_weight * (1 - kv_util)
 *       + queue_weight * (max_q - q) / (max_q - min_q)   (1 when all equal)
 *       + active_weight * (max_a - a) / max_a             (1 when a or max_a is 0)
 * with q the node's waiting requests (its last report, llm-d's
 * queue-scorer) and a the requests the router sent it and has not seen
 * finish (llm-d's active-request-scorer, counted at dispatch). The
 * highest score wins; ties are drawn uniformly (llm-d's max-score picker).
 * The prefix match comes from the router's own record of routed prompts
 * ("approx", llm-d's default) or the exact cache index ("exact"). */
static void ws_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct ws *s = st;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	d->hashed_tokens = r->prompt_tokens;
	uint32_t n = pol_prompt_blocks(r, s->block_tokens);
	if (!s->exact && n > 0)
		prompt_index_match(&s->idx, r->hashes, n);
	/* queue and active counts over the node's speed (pol_speed: 1 with
	 * one GPU type, where they are llm-d's scorers as they are) */
	double qmin = 0, qmax = 0, amax = 0;
	int any = 0;
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		const struct pol_node_view *nv = &v->nodes[i];
		if (!nv->up)
			continue;
		double q = nv->queued / pol_speed(nv), a = nv->outstanding / pol_speed(nv);
		if (!any || q < qmin)
			qmin = q;
		if (!any || q > qmax)
			qmax = q;
		if (a > amax)
			amax = a;
		any = 1;
	}
	int32_t pick = -1;
	double best = 0;
	uint32_t n_best = 0;
	for (uint32_t i = 0; i < v->n_nodes; i++) {
		const struct pol_node_view *nv = &v->nodes[i];
		if (!nv->up)
			continue;
		uint32_t hit = s->exact ? (v->cached_prefix ? v->cached_prefix(v->ctx, i, r) : 0)
					: s->idx.match[i];
		double q = nv->queued / pol_speed(nv), a = nv->outstanding / pol_speed(nv);
		double sc = s->w_prefix * (n ? (double)hit / n : 0) + s->w_kv * (1 - nv->kv_util) +
			    s->w_queue * (qmax > qmin ? (qmax - q) / (qmax - qmin) : 1) +
			    s->w_active * (amax > 0 ? (amax - a) / amax : 1);
		if (pick < 0 || sc > best) {
			pick = (int32_t)i;
			best = sc;
			n_best = 1;
		} else if (sc == best && gsl_rng_uniform_int(s->rng, ++n_best) == 0) {
			pick = (int32_t)i;
		}
	}
	if (!s->exact)
		prompt_index_match_done(&s->idx);
	if (pick < 0) {
		d->action = POL_SHED;
		d->reason = "no_node_up";
	}
	d->node = pick;
}

static void ws_dispatch(void *st, const struct request *r, int32_t node)
{
	struct ws *s = st;
	if (!s->exact) /* out of memory leaves the record shorter */
		(void)prompt_index_insert(&s->idx, (uint32_t)node, r->hashes,
					  pol_prompt_blocks(r, s->block_tokens));
}

static int ws_reads_kv(const void *st)
{
	const struct ws *s = st;
	return s->w_kv > 0 || s->exact;
}

static int ws_exact(const void *st)
{
	return ((const struct ws *)st)->exact;
}

static void ws_destroy(void *st)
{
	struct ws *s = st;
	prompt_index_free(&s->idx);
	free(s);
}

const struct pol_ops pol_weighted_scorer = {
    .name = "weighted_scorer",
    .description = "stateful (llm-d scheduler): highest weighted sum of prefix-match (2), "
		   "free-KV (1), queue (1) and active-request (1) scorers",
    .family = POL_PRODUCT,
    /* llm-d's endpoint picker refreshes each pod's metrics every 50 ms
     * (DefaultRefreshMetricsInterval) */
    .report_interval_ms = 50,
    .product = "llm-d",
    .create = ws_create,
    .route = ws_route,
    .on_dispatch = ws_dispatch,
    .destroy = ws_destroy,
    .reads_kv_util = ws_reads_kv,
    .looks_up_cache = ws_exact,
};
