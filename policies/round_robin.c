/* round_robin: each request to the next node in turn. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "config/cfg.h"

struct rr {
	uint32_t next;
};

static void *rr_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {NULL};
	(void)env;
	if (cfg_check_keys(params, path, keys, err, errlen))
		return NULL;
	struct rr *s = calloc(1, sizeof *s);
	if (!s)
		snprintf(err, errlen, "out of memory");
	return s;
}

static void rr_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	struct rr *s = st;
	(void)r;
	d->action = POL_ROUTE;
	d->kv = MIG_DEFAULT;
	d->reason = NULL;
	for (uint32_t tries = 0; tries < v->n_nodes; tries++) {
		uint32_t i = s->next++ % v->n_nodes;
		if (v->nodes[i].up) {
			d->node = (int32_t)i;
			return;
		}
	}
	d->action = POL_SHED;
	d->node = -1;
	d->reason = "no_node_up";
}

const struct pol_ops pol_round_robin = {
    .name = "round_robin",
    .description = "stateless: each request to the next node in turn",
    .family = POL_BASELINE,
    .create = rr_create,
    .route = rr_route,
    .destroy = free,
};
