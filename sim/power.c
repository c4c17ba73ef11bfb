/* power: each node's draw now and its energy so far (docs/model.md, Energy). */
#include "sim/power.h"

#include "sim/sim_int.h"

static const struct cluster_cfg *cluster_of(const struct sim *s, uint32_t i)
{
	return &s->sc->pools[s->pool_of[i]].cl;
}

double power_now_w(const struct sim *s, uint32_t i)
{
	const struct cat_gpu *g = cluster_of(s, i)->gpu;
	const struct node *n = &s->nodes[i];
	if (s->sl.nstate[i] == NS_OFF)
		return 0;
	if (!n->busy)
		return catalog_gpu_idle_w(g);
	/* the iteration in progress: the first whose end node_sync has not
	 * applied (the step's last one once its end is due) */
	uint32_t j = n->span_ended < n->span_len ? n->span_ended : n->span_len - 1;
	return power_busy_w(g, node_iteration_work_ns(n, j), node_iteration_ns(n, j));
}

double power_energy_j(const struct sim *s, uint32_t i)
{
	const struct cluster_cfg *cl = cluster_of(s, i);
	double idle = catalog_gpu_idle_w(cl->gpu);
	double held_s = (double)sim_held_ns(s, i) * 1e-9;
	double util_s = s->nodes[i].util_ns * 1e-9;
	return cl->tp * (idle * held_s + (cl->gpu->tdp_w - idle) * util_s);
}
