/* random: each request to a node drawn uniformly. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"

struct rnd {
	gsl_rng *rng;
};

static void *rnd_create(const struct cJSON *params, const char *path, const struct pol_env *env,
			char *err, size_t errlen)
{
	static const char *const keys[] = {NULL};
	if (cfg_check_keys(params, path, keys, err, errlen))
		return NULL;
	struct rnd *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rng = env->rng;
	return s;
}

static void rnd_route(void *st, const struct pol_view *v, const struct request *r,
		      struct pol_decision *d)
{
	struct rnd *s = st;
	(void)r;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	d->action = POL_ROUTE;
	uint32_t up = 0;
	for (uint32_t i = 0; i < v->n_nodes; i++)
		up += v->nodes[i].up != 0;
	if (up == v->n_nodes) {
		d->node = (int32_t)gsl_rng_uniform_int(s->rng, v->n_nodes);
		return;
	}
	if (up == 0) {
		d->action = POL_SHED;
		d->node = -1;
		d->reason = "no_node_up";
		return;
	}
	uint32_t k = (uint32_t)gsl_rng_uniform_int(s->rng, up);
	for (uint32_t i = 0; i < v->n_nodes; i++)
		if (v->nodes[i].up && k-- == 0)
			d->node = (int32_t)i;
}

const struct pol_ops pol_random = {
    .name = "random",
    .description = "stateless: each request to a node drawn uniformly at random",
    .family = POL_BASELINE,
    .create = rnd_create,
    .route = rnd_route,
    .destroy = free,
};
