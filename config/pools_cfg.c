/* pools_cfg: the scenario's cluster as pools: cluster.pools (or one pool of
 * the cluster's keys), each pool's cluster read by cluster_cfg.c, the
 * keys of the whole cluster kept out of pools, nodes and servers numbered
 * pool by pool. */
#include "config/pools_cfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "config/cluster_cfg.h"
#include "config/scale_cfg.h"

static const cJSON *sub(const cJSON *obj, const char *key)
{
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* Keys of the whole cluster, errors inside a pool: one model, one KV
 * block size and hashing that KV handed between pools agrees on, one set
 * of tiers, one thermal model, one transfer path. */
static const char *const cluster_wide[] = {"model", "tiers", "thermal", "kv_transfer", NULL};
static const char *const cluster_wide_engine[] = {"kv_block_tokens", "prefix_caching", NULL};

/* Whether err is about a key of the whole cluster (read the same for
 * every pool), which needs no "(for cluster.pools[i])". */
static int err_is_cluster_wide(const char *err)
{
	static const char *const paths[] = {"cluster.model",
					    "cluster.tiers",
					    "cluster.thermal",
					    "cluster.kv_transfer",
					    "cluster.engine.kv_block_tokens",
					    "cluster.engine.prefix_caching",
					    NULL};
	for (int i = 0; paths[i]; i++) {
		size_t n = strlen(paths[i]);
		if (!strncmp(err, paths[i], n) && strchr(".: ", err[n]))
			return 1;
	}
	return 0;
}

/* An error pool i met in a key it inherits from the cluster names the
 * cluster's key, and the pool after it: "cluster.tp (for cluster.pools[1]):
 * ...". */
static void err_for_pool(char *err, size_t errlen, int i)
{
	char pre[64];
	int n = snprintf(pre, sizeof pre, "cluster.pools[%d]", i);
	if (strncmp(err, "cluster", 7) || !strncmp(err, pre, (size_t)n) || err_is_cluster_wide(err))
		return;
	char *colon = strchr(err, ':');
	if (!colon)
		return;
	char rest[4096];
	snprintf(rest, sizeof rest, "%s", colon);
	snprintf(colon, errlen - (size_t)(colon - err), " (for %s)%s", pre, rest);
}

/* A default every pool overrides is never read: name it rather than
 * ignore it. Top-level keys, and each field of links, engine and
 * cost_model. */
static int unused_defaults(const cJSON *c, const cJSON *pools, char *err, size_t errlen)
{
	static const char *const keys[] = {"gpu", "tp", "dtype", "nodes_per_server", "server",
					   NULL};
	static const char *const objs[] = {"links", "engine", "cost_model", NULL};
	for (int k = 0; keys[k]; k++) {
		if (!sub(c, keys[k]))
			continue;
		int all = 1;
		for (const cJSON *p = pools->child; p && all; p = p->next)
			all = sub(p, keys[k]) != NULL;
		if (all) {
			snprintf(err, errlen,
				 "cluster.%s: every pool in cluster.pools sets its own, so this "
				 "default is never read; remove it",
				 keys[k]);
			return -1;
		}
	}
	for (int k = 0; objs[k]; k++)
		for (const cJSON *f = sub(c, objs[k]) ? sub(c, objs[k])->child : NULL; f;
		     f = f->next) {
			if (f->string[0] == '_')
				continue;
			int all = 1;
			for (const cJSON *p = pools->child; p && all; p = p->next)
				all = sub(sub(p, objs[k]), f->string) != NULL;
			if (all) {
				snprintf(err, errlen,
					 "cluster.%s.%s: every pool in cluster.pools sets its own, "
					 "so this default is never read; remove it",
					 objs[k], f->string);
				return -1;
			}
		}
	return 0;
}

/* The structure of cluster.pools (each pool's object, name, role and
 * nodes), before any pool's cluster is read. */
static int load_pool_heads(const cJSON *c, const cJSON *pools, struct pool_cfg **out, int *n_out,
			   int *disaggregated, char *err, size_t errlen)
{
	static const char *const pool_keys[] = {"name", "role", "nodes", "gpu", "tp", "dtype",
						"nodes_per_server", "server", "links", "engine",
						"cost_model", "autoscaler", NULL};
	static const char *const roles[] = {"mixed", "prefill", "decode", NULL};
	if (!cJSON_IsArray(pools) || !pools->child) {
		snprintf(err, errlen, "cluster.pools: expected a non-empty array of pool objects "
				      "(leave it out for one pool of cluster.nodes nodes)");
		return -1;
	}
	if (sub(c, "nodes")) {
		snprintf(err, errlen, "cluster.nodes: with cluster.pools each pool sets its nodes "
				      "(cluster.pools[i].nodes); remove cluster.nodes");
		return -1;
	}
	int n = cJSON_GetArraySize(pools);
	struct pool_cfg *ps = calloc((size_t)n, sizeof *ps);
	if (!ps) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = ps;
	*n_out = n;
	int i = 0;
	for (const cJSON *p = pools->child; p; p = p->next, i++) {
		struct pool_cfg *pl = &ps[i];
		char path[64], kp[128];
		snprintf(path, sizeof path, "cluster.pools[%d]", i);
		if (cfg_expect_object(p, path, err, errlen))
			return -1;
		for (int k = 0; cluster_wide[k]; k++)
			if (sub(p, cluster_wide[k])) {
				snprintf(err, errlen,
					 "%s.%s: a key of the whole cluster, not of one pool; set it "
					 "at cluster level (cluster.%s)",
					 path, cluster_wide[k], cluster_wide[k]);
				return -1;
			}
		const cJSON *e = sub(p, "engine");
		for (int k = 0; cluster_wide_engine[k]; k++)
			if (sub(e, cluster_wide_engine[k])) {
				snprintf(err, errlen,
					 "%s.engine.%s: a key of the whole cluster, not of one pool "
					 "(KV handed between pools must agree on it); set it at "
					 "cluster level (cluster.engine.%s)",
					 path, cluster_wide_engine[k], cluster_wide_engine[k]);
				return -1;
			}
		if (cfg_check_keys(p, path, pool_keys, err, errlen))
			return -1;
		if (!sub(p, "nodes")) {
			snprintf(err, errlen, "%s.nodes: missing (each pool sets its node count)",
				 path);
			return -1;
		}
		int role = POOL_MIXED;
		snprintf(pl->name, sizeof pl->name, "pool%d", i);
		if (cfg_string(p, path, "name", pl->name, sizeof pl->name, err, errlen) ||
		    cfg_enum(p, path, "role", roles, &role, err, errlen))
			return -1;
		pl->role = (enum pool_role)role;
		for (int j = 0; j < i; j++)
			if (!strcmp(ps[j].name, pl->name)) {
				snprintf(err, errlen,
					 "%s: \"%s\" is also the name of cluster.pools[%d]; expected "
					 "unique pool names",
					 cfg_join(kp, sizeof kp, path, "name"), pl->name, j);
				return -1;
			}
	}
	int has[3] = {0, 0, 0};
	for (i = 0; i < n; i++)
		has[ps[i].role] = 1;
	if (has[POOL_PREFILL] && !has[POOL_DECODE]) {
		snprintf(err, errlen, "cluster.pools: a prefill pool needs a decode pool to send "
				      "its KV to (set a pool's role to \"decode\")");
		return -1;
	}
	if (has[POOL_DECODE] && !has[POOL_PREFILL]) {
		snprintf(err, errlen, "cluster.pools: a decode pool needs a prefill pool to take "
				      "its KV from (set a pool's role to \"prefill\")");
		return -1;
	}
	*disaggregated = has[POOL_PREFILL];
	return 0;
}

int cfg_pools_load(struct catalog *cat, const char *base_dir, const cJSON *c,
		   struct pool_cfg **pools, int *n_pools, int *disaggregated, char *err,
		   size_t errlen)
{
	static const char *const keys[] = {"nodes", "gpu",   "model",      "tp",   "dtype",
					   "nodes_per_server", "server", "links", "engine",
					   "cost_model", "tiers", "thermal",
					   "kv_transfer", "pools", "autoscaler", NULL};
	if (cfg_check_keys(c, "cluster", keys, err, errlen))
		return -1;
	const cJSON *list = sub(c, "pools");
	const struct cat_model *model = NULL;
	struct pool_cfg *ps;
	if (!list) {
		if (!(ps = calloc(1, sizeof *ps))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		*pools = ps;
		*n_pools = 1;
		*disaggregated = 0;
		snprintf(ps[0].name, sizeof ps[0].name, "cluster");
		if (cfg_cluster_load(cat, base_dir, c, NULL, NULL, &model, &ps[0], err, errlen))
			return -1;
	} else {
		/* the cluster's own sub-objects are checked once, not per pool */
		if (cfg_cluster_check_defaults(c, err, errlen))
			return -1;
		if (load_pool_heads(c, list, pools, n_pools, disaggregated, err, errlen))
			return -1;
		ps = *pools;
		int i = 0;
		for (const cJSON *p = list->child; p; p = p->next, i++) {
			char path[128];
			snprintf(path, sizeof path, "cluster.pools[%d]", i);
			if (cfg_cluster_load(cat, base_dir, c, p, path, &model, &ps[i], err,
					     errlen)) {
				err_for_pool(err, errlen, i);
				return -1;
			}
		}
		if (unused_defaults(c, list, err, errlen))
			return -1;
		if (*disaggregated && ps[0].cl.kv_transfer == KVX_NONE) {
			snprintf(err, errlen,
				 "cluster.kv_transfer: a prefill pool sends each request's KV to a "
				 "decode pool, and \"none\" leaves no path; expected nixl or lmcache");
			return -1;
		}
	}
	/* an autoscaled pool has max_nodes slots, its nodes held from the start */
	const cJSON *p = list ? list->child : NULL;
	for (int i = 0; i < *n_pools; i++, p = p ? p->next : NULL) {
		struct pool_cfg *pl = &ps[i];
		char path[128];
		const cJSON *own = sub(p, "autoscaler");
		snprintf(path, sizeof path, own ? "cluster.pools[%d].autoscaler" : "cluster.autoscaler",
			 i);
		pl->nodes0 = pl->cl.nodes;
		if (cfg_autoscaler_load(own ? own : sub(c, "autoscaler"), path, pl->cl.nodes, &pl->as,
					err, errlen)) {
			if (list)
				err_for_pool(err, errlen, i);
			return -1;
		}
		/* Every slot is allocated when the run starts (about 16 KB, a
		 * timeseries column and a summary entry each), so max_nodes is
		 * held to what one Kubernetes cluster can hold: 5,000 nodes
		 * (kubernetes.io/docs/setup/best-practices/cluster-large), here
		 * servers of the pool's GPUs, each holding gpus / tp replicas. */
		if (pl->as.kind != AS_NONE && pl->cl.server) {
			int64_t per = pl->cl.server->gpus / pl->cl.tp;
			int64_t most = 5000 * (per > 0 ? per : 1);
			if (pl->as.max_nodes > most) {
				snprintf(err, errlen,
					 "%s.max_nodes: expected at most %lld (a Kubernetes cluster's "
					 "5,000 nodes, here %s servers of %d GPUs at tp %d: %lld "
					 "replicas each), got %d",
					 path, (long long)most, pl->cl.server->name, pl->cl.server->gpus,
					 pl->cl.tp, (long long)(per > 0 ? per : 1), pl->as.max_nodes);
				if (list)
					err_for_pool(err, errlen, i);
				return -1;
			}
		}
		if (pl->as.kind != AS_NONE)
			pl->cl.nodes = pl->as.max_nodes;
	}
	int64_t nodes = 0, servers = 0;
	for (int i = 0; i < *n_pools; i++) {
		struct pool_cfg *pl = &ps[i];
		pl->first_node = (int)nodes;
		pl->first_server = (int)servers;
		int nps = pl->cl.nodes_per_server;
		pl->n_servers = (pl->cl.nodes + nps - 1) / nps;
		nodes += pl->cl.nodes;
		servers += pl->n_servers;
		if (nodes > 1000000) {
			snprintf(err, errlen, "cluster.pools: more than 1000000 nodes in all; expected "
					      "at most 1000000");
			return -1;
		}
	}
	return 0;
}
