/* session_affinity: sticky session -> node map with a load threshold. */
#include <stdio.h>
#include <stdlib.h>

#include "policies/policy.h"
#include "policies/registry.h"
#include "policies/sticky.h"
#include "sim/request.h"

static void *sa_create(const struct cJSON *params, const char *path, const struct pol_env *env,
		       char *err, size_t errlen)
{
	struct sticky *s = malloc(sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sticky_init(s, params, path, NULL, env, err, errlen)) {
		free(s);
		return NULL;
	}
	return s;
}

static void sa_route(void *st, const struct pol_view *v, const struct request *r,
		     struct pol_decision *d)
{
	sticky_route(st, v, r->session, d);
}

static void sa_dispatch(void *st, const struct request *r, int32_t node)
{
	sticky_set(st, r->session, node);
}

static void sa_move(void *st, const struct request *next_turn, int32_t node)
{
	sticky_set(st, next_turn->session, node);
}

static void sa_complete(void *st, const struct request *r, int32_t node, int session_done)
{
	(void)node;
	if (session_done)
		sticky_forget(st, r->session);
}

static void sa_prefetch(const void *st, const struct request *r)
{
	sticky_prefetch(st, r->session);
}

static void sa_destroy(void *st)
{
	sticky_free(st);
	free(st);
}

const struct pol_ops pol_session_affinity = {
    .name = "session_affinity",
    .description = "stateful: a session stays on its node while load < threshold (the "
		   "engine's max_num_seqs), else moves to the least-loaded node under it; none "
		   "under -> the least-loaded (when_full \"shed\": shed)",
    .family = POL_SEED,
    .create = sa_create,
    .route = sa_route,
    .on_dispatch = sa_dispatch,
    .on_complete = sa_complete,
    .destroy = sa_destroy,
    .prefetch = sa_prefetch,
    .on_move = sa_move,
};
