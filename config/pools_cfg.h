/* pools_cfg: the scenario's cluster as pools, numbered into nodes and servers. */
#ifndef KVSIM_POOLS_CFG_H
#define KVSIM_POOLS_CFG_H

#include <stddef.h>

struct cJSON;
struct catalog;
struct pool_cfg;

/* The scenario's "cluster" object c (NULL: every default) into *pools and
 * *n_pools: one pool of cluster.nodes nodes (named "cluster", mixed)
 * without cluster.pools, else one per entry of cluster.pools, each read as
 * a whole cluster of its own keys over c's (cfg_cluster_load, with cat
 * and base_dir). Nodes and servers are numbered pool by pool in list
 * order; *disaggregated tells whether a prefill pool exists. *pools
 * (owned) is set as soon as it is allocated, so that the caller frees it
 * on failure as on success: cfg_cost_free of each pool's cl.cost, then
 * free. */
int cfg_pools_load(struct catalog *cat, const char *base_dir, const struct cJSON *c,
		   struct pool_cfg **pools, int *n_pools, int *disaggregated, char *err,
		   size_t errlen);

#endif
