/* node_stats: the KV a node's decode span holds by a time, counted without
 * applying the span (what observers of many nodes read between its events). */
#include "model/node.h"

int node_kv_used(struct node *n, int64_t now_ns, uint32_t *used)
{
	if (now_ns < n->sync_due_ns) {
		*used = n->kv.n_used;
		return 1;
	}
	if (!n->busy || n->span_len <= 1 || !n->span_lazy_ok)
		return 0;
	if (now_ns < n->lazy_due_ns && n->lazy_step_ns == n->step_start_ns &&
	    n->lazy_from == n->span_started && n->lazy_base == n->kv.n_used) {
		*used = n->lazy_used; /* no iteration ended since the last count */
		return 1;
	}
	node_span_eval_past(n, now_ns);
	uint32_t ended = node_span_ended_by(n, now_ns);
	/* span_apply(n, ended + 1, ended) would take, for each request, the
	 * blocks from c0 + span_started tokens to c0 + ended + 1; its commits
	 * move blocks from own to cached runs the request holds (no change
	 * in use), and the plan ruled out adoptions (which free blocks) */
	uint64_t u = n->kv.n_used;
	uint32_t from = n->span_started, to = ended + 1;
	if (to > from && n->span_res) {
		/* With c0 = q B + rho and t + B - 1 = a B + beta, the request
		 * holds q + a + [rho >= B - beta] blocks for t tokens: summed
		 * over the batch, N a + span_res[B - beta]. */
		uint32_t B = n->block_tokens, s = n->block_shift;
		uint64_t at = ((uint64_t)to + B - 1) >> s, af = ((uint64_t)from + B - 1) >> s;
		uint32_t bt = (to + B - 1) & (B - 1), bf = (from + B - 1) & (B - 1);
		u += (uint64_t)n->n_batch * (at - af) + n->span_res[B - bt] - n->span_res[B - bf];
	}
	for (uint32_t i = 0; to > from && !n->span_res && i < n->n_batch; i++) {
		uint64_t c0 = n->batch[i].c0;
		u += node_blocks_for(n, c0 + to) - node_blocks_for(n, c0 + from);
	}
	*used = (uint32_t)u;
	n->lazy_step_ns = n->step_start_ns;
	n->lazy_due_ns = ended + 1 < n->span_len ? n->span_end[ended] : INT64_MAX;
	n->lazy_from = n->span_started;
	n->lazy_ended = ended;
	n->lazy_base = n->kv.n_used;
	n->lazy_used = *used;
	return 1;
}

int node_cache_settled(struct node *n, int64_t now_ns, uint32_t *evicts)
{
	uint32_t used;
	if (!node_kv_used(n, now_ns, &used))
		return 0;
	uint32_t take = used - n->kv.n_used;
	if (take <= n->kv.n_free)
		return 1;
	*evicts = take - n->kv.n_free;
	return -1;
}
