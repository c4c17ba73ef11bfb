/* policy: the routing-policy interface and the registry of policies. */
#ifndef KVSIM_POLICY_H
#define KVSIM_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

struct cJSON;
struct request;

/* What a policy may see of one node: the router's figures, never engine
 * internals. */
struct pol_node_view {
	uint32_t outstanding;   /* routed here and not yet finished */
	uint32_t queued;        /* waiting for admission */
	uint32_t running;       /* admitted (prefill or decode) */
	uint64_t queued_tokens; /* prompt tokens still to prefill in the queue */
	double kv_util;         /* referenced KV blocks / all blocks */
	int server;
	int up;
};

struct pol_view {
	uint32_t n_nodes;
	const struct pol_node_view *nodes;
	int64_t now_ns;
};

enum pol_action { POL_ROUTE, POL_SHED };
/* What to do with the session's KV when another node holds more of it. */
enum pol_kv {
	POL_KV_DEFAULT,   /* the scenario's router.migration mode */
	POL_KV_TRANSFER,  /* move the blocks over the link */
	POL_KV_RECOMPUTE, /* prefill them again */
};

struct pol_decision {
	enum pol_action action;
	int32_t node;       /* POL_ROUTE: the node */
	enum pol_kv kv;
	const char *reason; /* POL_SHED: a static string, e.g. "capacity" */
};

struct pol_env {
	uint32_t n_nodes;
	uint32_t block_tokens;
	gsl_rng *rng; /* the routing stream; owned by the simulator */
};

/* A policy fills in the hooks it needs; NULL hooks do nothing. */
struct pol_ops {
	const char *name;
	const char *description; /* one line, for `kvsim list policies` */
	/* Reads params (router.params, may be NULL; errors name path) and returns
	 * the policy's state, or NULL with err filled. Freed by destroy. */
	void *(*create)(const struct cJSON *params, const char *path, const struct pol_env *env,
			char *err, size_t errlen);
	/* Decides where r goes. Must not keep pointers to v or r. */
	void (*route)(void *st, const struct pol_view *v, const struct request *r,
		      struct pol_decision *d);
	/* r was sent to node (after any router-level check passed). */
	void (*on_dispatch)(void *st, const struct request *r, int32_t node);
	/* r finished on node, or was shed (node -1). session_done: no turn of
	 * r's session will come again, so per-session state can go. */
	void (*on_complete)(void *st, const struct request *r, int32_t node, int session_done);
	void (*destroy)(void *st);
	/* 1 if route reads kv_util, which then must be exact at every routing
	 * (it costs a pass over all nodes). NULL: it does not. */
	int (*reads_kv_util)(const void *st);
};

/* The registry: NULL if no policy has that name. */
const struct pol_ops *pol_find(const char *name);
/* All policies, in registry order; *n gets the count. */
const struct pol_ops *const *pol_all(size_t *n);
/* "a, b, c": the registered names. */
void pol_names(char *out, size_t outlen);

#endif
