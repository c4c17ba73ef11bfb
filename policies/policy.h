/* policy: the routing-policy interface and the registry of policies. */
#ifndef KVSIM_POLICY_H
#define KVSIM_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "config/mech.h"
#include "config/migration.h"

struct cJSON;
struct request;

/* The contract, both ways.
 * A policy may call: the callbacks of the pol_view it is given, during
 * that route call only, and the helpers below. It sees nodes only through
 * the view (never engine internals) and draws randomness only from
 * pol_env.rng.
 * A policy promises: route decides from its own state, the view, r and
 * that rng alone (same inputs, same decision: runs are reproducible); it
 * keeps no pointer to the view or r after returning; its hooks change
 * only its own state (prefetch changes nothing); a routed decision names
 * a node in [0, n_nodes) that is up (else the router sheds r as
 * "policy"), a shed one gives a static reason. */

/* What a policy may see of one node: the router's figures, never engine
 * internals. The router's own record comes first (with up): the fields a
 * scan over the nodes reads most. */
struct pol_node_view {
	/* The router's own record, always current for this router replica:
	 * what it sent, counted when it sent it and uncounted as the node
	 * answers (first token, completion, failure), as Dynamo's router and
	 * llm-d's active-request scorer keep it. */
	uint32_t outstanding;   /* routed here by this router and not yet finished */
	uint32_t routed_since;  /* routed here since the last load report */
	int up;                  /* 0 while crashed */
	int server;
	/* Prompt blocks (full blocks of their prompts, a per-request sum: a
	 * block two of them share counts twice) of the requests routed here
	 * and not finished. */
	uint64_t active_blocks;
	/* Prompt tokens still to prefill of the requests routed here whose
	 * first token has not come: each counts its prompt less the blocks
	 * the router found cached on this node when it routed it (0 where it
	 * did not look). Of these, prefill_done_tokens belong to requests
	 * whose prefill ends with the node's iteration in progress, at
	 * prefill_done_ns: read through pol_prefill_tokens, which leaves them
	 * out from that time on. */
	uint64_t prefill_tokens;
	uint64_t prefill_done_tokens;
	int64_t prefill_done_ns;
	uint64_t routed_tokens_since; /* prompt tokens routed here since the last load report */
	/* The node's load report: exact when router.load_report_interval_ms is
	 * 0, else as of the last report. */
	uint32_t queued;        /* waiting for admission */
	uint32_t running;       /* admitted (prefill or decode) */
	uint64_t queued_tokens; /* prompt tokens still to prefill in the queue */
	double kv_util;         /* referenced KV blocks / all blocks */
	uint32_t kv_used_blocks; /* referenced KV blocks (active requests' KV) */
	uint32_t kv_blocks;      /* the node's KV capacity in blocks */
	double temperature_c;    /* 0 without the thermal model */
	int throttled;           /* 1 while thermal throttling slows it */
	int closed;              /* above router.kv_watermark: no new sessions */
	/* The node's speed: its pool's prefill throughput (the cost model's)
	 * over the fastest pool's; 1 in a cluster of one GPU type. Load
	 * metrics divide by it (pol_metric_of), so that a node twice as fast
	 * takes twice the load; 0 reads as 1 (pol_speed). */
	double speed;
};

static inline double pol_speed(const struct pol_node_view *n)
{
	return n->speed > 0 ? n->speed : 1.0;
}

struct pol_view {
	uint32_t n_nodes;
	const struct pol_node_view *nodes;
	int64_t now_ns;
	uint32_t n_up; /* nodes with up set */
	uint64_t total_outstanding; /* sum of outstanding over the nodes up */
	/* Full blocks of r's prompt cached in node's HBM right now: the exact
	 * cluster-wide index (what KV events give a router). NULL when the
	 * caller offers none (policies then treat every node as 0). */
	uint32_t (*cached_prefix)(void *ctx, uint32_t node, const struct request *r);
	void *ctx;
	/* The node up with the fewest outstanding requests (ties: lowest id),
	 * kept in a heap by the simulator; -1 if none is up. NULL: scan. */
	int32_t (*least_outstanding)(const void *lctx);
	const void *lctx;
	/* Brings the KV figures (kv_util, kv_used_blocks, closed) of these
	 * nodes in nodes[] up to now when load reports are exact (a no-op
	 * when they are periodic). Policies whose reads_kv_util says
	 * POL_READS_KV_SOME call it with the nodes whose KV figures they read
	 * before reading them; NULL: nothing to do. */
	void (*sync_kv)(void *ctx, const uint32_t *nodes, uint32_t n);
	/* The nodes that may hold r's private blocks (those past r->n_shared,
	 * which only r's session names): where its session's requests ran.
	 * On any other node r's cached prefix is at most n_shared blocks.
	 * Returns how many (in *nodes), or -1 when that is not known (any
	 * node may hold them). NULL: not known. */
	int (*private_nodes)(void *ctx, const struct request *r, const int32_t **nodes);
	/* With sync_kv: a lower bound on what node's kv_used_blocks will be
	 * once sync_kv has brought it up to date, read without bringing it
	 * up to date (a node ruled out on it needs no sync); NULL: no bound.
	 * prefetch_kv: a hint that sync_kv or cached_prefix will read these
	 * nodes soon; it changes nothing. */
	uint32_t (*kv_used_floor)(void *ctx, uint32_t node);
	void (*prefetch_kv)(void *ctx, const uint32_t *nodes, uint32_t n);
	/* Of r's full prompt blocks from block `from` on (those past what
	 * node's HBM holds, from cached_prefix), how many follow on in the
	 * DRAM tier (*host) and then in the NVMe tier (*disk) of node's
	 * server, block by block as a reload would take them: each block from
	 * DRAM if it is there, else from NVMe, up to the first in neither.
	 * NULL when the servers have no tiers. O(blocks counted). */
	void (*cached_tiers)(void *ctx, uint32_t node, const struct request *r, uint32_t from,
			     uint32_t *host, uint32_t *disk);
};

/* Node i's prefill_tokens as of v->now_ns (see pol_node_view). */
static inline uint64_t pol_prefill_tokens(const struct pol_view *v, uint32_t i)
{
	const struct pol_node_view *n = &v->nodes[i];
	return n->prefill_tokens - (v->now_ns >= n->prefill_done_ns ? n->prefill_done_tokens : 0);
}

enum pol_action { POL_ROUTE, POL_SHED };

struct pol_decision {
	enum pol_action action;
	int32_t node;       /* POL_ROUTE: the node */
	/* What to do with the session's KV when another node holds more of
	 * it: MIG_DEFAULT (router.migration decides), or a mode of its own. */
	enum migration_mode kv;
	const char *reason; /* POL_SHED: a static string, e.g. "capacity" */
	/* What the decision cost the router (added to the request's TTFT):
	 * prompt tokens hashed, and reads/writes of the affinity store. */
	uint32_t hashed_tokens;
	uint32_t store_reads, store_writes;
};

struct pol_env {
	uint32_t n_nodes;
	uint32_t block_tokens;
	gsl_rng *rng; /* the routing stream; owned by the simulator */
	/* The engine's batch limit (cluster.engine.max_num_seqs): what a node
	 * runs at once, the scale of load thresholds; 0: not known (256). */
	uint32_t max_num_seqs;
};

/* A policy fills in the hooks it needs; NULL hooks do nothing. */
struct pol_ops {
	const char *name;
	const char *description; /* one line, for `kvsim list policies` */
	/* The deployment it stands for, which sets the defaults of the
	 * router's mechanisms (config/mech.h), and the product (NULL for a
	 * baseline): "SGLang router", "NVIDIA Dynamo", "llm-d", ... */
	enum pol_family family;
	const char *product;
	/* How often its product's router learns the engines' load (ms): the
	 * default of router.load_report_interval_ms for this column; 0, every
	 * iteration (exact). */
	double report_interval_ms;
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
	 * r's session will come again, so per-session state can go. r's block
	 * hashes are gone by then (n_hashes 0: its buffer went to the next turn). */
	void (*on_complete)(void *st, const struct request *r, int32_t node, int session_done);
	void (*destroy)(void *st);
	/* Whether route reads the KV figures (kv_util, kv_used_blocks, closed):
	 * 0 (or NULL hook) no; POL_READS_KV_ALL: of every node, which the router
	 * then brings up to date before each routing (a pass over all nodes);
	 * POL_READS_KV_SOME: of a few nodes, each brought up to date by the
	 * policy's own call of v->sync_kv. cached_prefix needs neither. */
	int (*reads_kv_util)(const void *st);
	/* 1 if route calls v->cached_prefix (NULL hook: no). */
	int (*looks_up_cache)(const void *st);
	/* Optional: a hint that r will be routed soon (an event or more
	 * before it arrives); r's fields may be read. It must change no state
	 * and no result: prefetches only. */
	void (*prefetch)(const void *st, const struct request *r);
	/* Optional: the router moved the KV of next_turn's session to node
	 * ahead of the turn (watermark_action "migrate": its node passed the
	 * KV watermark while the session was between turns); next_turn, not
	 * yet arrived, is its next request (its fields may be read). A policy
	 * that keeps a session (or prefix) -> node record points it there. */
	void (*on_move)(void *st, const struct request *next_turn, int32_t node);
};

enum { POL_READS_KV_ALL = 1, POL_READS_KV_SOME = 2 };

/* Helpers shared by the policies. */
/* A looks_up_cache hook for policies that always do. */
int pol_always(const void *st);
/* The k-th node that is up (in id order, from 0), or -1 when k >= up.
 * O(nodes): for when some node is down. */
int32_t pol_kth_up(const struct pol_view *v, uint32_t k);
/* Full prompt blocks of r that have hashes. */
uint32_t pol_prompt_blocks(const struct request *r, uint32_t block_tokens);
/* The most of r's prompt each node can have cached, without asking: all
 * of it (most: pol_prompt_blocks) on the nodes v->private_nodes lists, at
 * most r's shared blocks elsewhere; all of it everywhere when the view
 * does not know. */
struct pol_cached_bound {
	const int32_t *own; /* the listed nodes */
	uint32_t n_own;     /* how many */
	int known;          /* 0: every node may hold all of it */
	uint32_t most, elsewhere;
};
void pol_cached_bound_init(struct pol_cached_bound *b, const struct pol_view *v,
			   const struct request *r, uint32_t most);
/* Whether node is among b's own nodes (pol_cached_bound_of's test). */
static inline int pol_cached_bound_lists(const struct pol_cached_bound *b, uint32_t node)
{
	for (uint32_t k = 0; k < b->n_own; k++)
		if (b->own[k] == (int32_t)node)
			return 1;
	return 0;
}
static inline uint32_t pol_cached_bound_of(const struct pol_cached_bound *b, uint32_t node)
{
	return !b->known || pol_cached_bound_lists(b, node) ? b->most : b->elsewhere;
}
/* Bounded-load capacity (consistent hashing with bounded loads): the most
 * outstanding requests a node may hold after taking one more, given c. */
uint32_t pol_bounded_cap(const struct pol_view *v, double c);
/* The load metrics least_loaded and power_of_two compare. */
/* kv_blocks: the prompt blocks of the requests the router sent the node
 * and has not seen finish (its own record, always current, as Dynamo's
 * router counts active blocks) over the node's KV capacity in blocks. */
enum pol_metric { POL_M_OUTSTANDING, POL_M_QUEUED_TOKENS, POL_M_KV_UTIL, POL_M_KV_BLOCKS };
/* Reads params.metric ("outstanding" default, "queued_tokens", "kv_util"). */
int pol_metric_param(const struct cJSON *params, const char *path, enum pol_metric *m, char *err,
		     size_t errlen);
/* queued_tokens: what the last report said, plus the prompt tokens the
 * router has sent the node since (all of each prompt: a router that only
 * balances load does not look caches up). */
static inline double pol_metric_of(enum pol_metric m, const struct pol_node_view *n)
{
	switch (m) {
	case POL_M_QUEUED_TOKENS:
		return (double)(n->queued_tokens + n->routed_tokens_since) / pol_speed(n);
	case POL_M_KV_UTIL:
		return n->kv_util;
	case POL_M_KV_BLOCKS:
		return (double)n->active_blocks / (double)n->kv_blocks;
	default:
		return n->outstanding / pol_speed(n);
	}
}
/* A policy's state that only holds a metric. */
struct pol_metric_st {
	enum pol_metric metric;
	gsl_rng *rng;
};
int pol_metric_reads_kv(const void *st);
/* create for policies whose only parameter is metric (a pol_metric_st). */
void *pol_metric_create(const struct cJSON *params, const char *path, const struct pol_env *env,
			char *err, size_t errlen);

/* The registry: NULL if no policy has that name. */
const struct pol_ops *pol_find(const char *name);
/* pol_find, or NULL with err: "PATH: unknown policy ... (known: ...)". */
const struct pol_ops *pol_find_at(const char *name, const char *path, char *err, size_t errlen);
/* All policies, in registry order; *n gets the count. */
const struct pol_ops *const *pol_all(size_t *n);
/* "a, b, c": the registered names. */
void pol_names(char *out, size_t outlen);
/* How policy name with its params routes when every session has one
 * request, if it keys on the session (session_affinity; consistent_hash
 * with key "session"): a phrase ("as least_loaded would"); else NULL. */
const char *pol_session_fallback(const char *name, const struct cJSON *params);
/* Checks each entry of router.policy_params (may be NULL): it names a
 * policy, which accepts it (created and destroyed). 0, or -1 with err
 * naming the path. */
int pol_check_params(const struct cJSON *policy_params, const struct pol_env *env, char *err,
		     size_t errlen);

#endif
