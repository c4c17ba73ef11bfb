/* select: the router's node-selection helpers, for the routing rules. */
#include "sim/select.h"

#include "model/cost.h"
#include "sim/sim_int.h"
#include "sim/views.h"

int32_t select_least_outstanding_healthy(const struct sim *s, const struct pol_node_view *v)
{
	int32_t best = -1;
	for (uint32_t i = 0; i < s->n_nodes; i++)
		if (v[i].up && !views_unhealthy(s, v, i) &&
		    (best < 0 || v[i].outstanding < v[best].outstanding))
			best = (int32_t)i;
	return best;
}

/* The up node with the fewest waiting requests under limit (open to new
 * sessions when need_open), or -1. */
static int32_t least_queued_any(struct sim *s, const struct pol_node_view *v, uint32_t limit,
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

int32_t select_least_queued(struct sim *s, const struct pol_node_view *v, uint32_t limit,
			    int need_open)
{
	if (s->rt.mech.health) {
		int32_t best = -1;
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			if (!v[i].up || views_unhealthy(s, v, i) || s->nodes[i].n_waiting >= limit ||
			    (need_open && views_closed(s, v, i)))
				continue;
			if (best < 0 || s->nodes[i].n_waiting < s->nodes[best].n_waiting)
				best = (int32_t)i;
		}
		if (best >= 0)
			return best;
	}
	return least_queued_any(s, v, limit, need_open);
}

double select_predicted_ttft_s(const struct sim *s, uint32_t i, const struct request *r)
{
	const struct met_tokens *t = &s->met.tokens;
	double miss = t->input ? 1.0 - (double)t->cached / (double)t->input : 1.0;
	double ahead = ((double)s->nodes[i].waiting_tokens + r->prompt_tokens) * miss;
	return ahead > 0 ? cost_prefill_s(s->nodes[i].cost, ahead, 0) : 0;
}

int32_t select_least_predicted(struct sim *s, const struct pol_node_view *v, int need_open)
{
	int32_t best = -1, any = -1;
	uint64_t best_q = 0, any_q = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if (!v[i].up || (need_open && views_closed(s, v, i)))
			continue;
		uint64_t q = s->nodes[i].waiting_tokens;
		if (any < 0 || q < any_q) {
			any = (int32_t)i;
			any_q = q;
		}
		if (s->rt.mech.health && views_unhealthy(s, v, i))
			continue;
		if (best < 0 || q < best_q) {
			best = (int32_t)i;
			best_q = q;
		}
	}
	return best >= 0 ? best : any;
}
