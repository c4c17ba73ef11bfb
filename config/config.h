/* config: the scenario file, parsed and validated into plain structs (the
 * cluster's: cluster_cfg.h). */
#ifndef KVSIM_CONFIG_H
#define KVSIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "model/catalog.h"
#include "config/cluster_cfg.h"
#include "config/mech.h"
#include "config/migration.h"

struct cJSON;

enum fault_kind { FAULT_CRASH, FAULT_SLOW, FAULT_LINK, FAULT_COOLING };

struct fault_cfg {
	enum fault_kind kind;
	int target;        /* node (crash, slow) or server (link, cooling) */
	double at_s;
	double duration_s; /* crash: recover_after_s; < 0: stays down */
	double factor;     /* slow, link */
	double ambient_c;  /* cooling */
};

enum store_kind { STORE_LOCAL, STORE_REDIS, STORE_ETCD };

struct router_cfg {
	char policy[48];
	/* The policy's params (owned), or NULL: router.params with the keys of
	 * router.policy_params.<policy> over them. */
	struct cJSON *params;
	char params_path[80]; /* where params come from, for messages */
	struct cJSON *policy_params; /* router.policy_params (owned), or NULL */
	/* The mechanisms as set for every column (router.<key>) and for the
	 * policy in use (router.policy_params.<policy>, router.params); the
	 * simulator resolves them over the policy's defaults (config/mech.h). */
	struct mech_set mech_all, mech_own;
	int max_queue_per_node;
	double new_session_queue_frac; /* new sessions are shed at this share of the bound */
	double kv_watermark;           /* 1: off */
	enum store_kind store;
	double store_read_s, store_write_s;
	double hash_s_per_token;
	int replicas;
	int max_retries;
	/* Disaggregated pools: the decode node's policy (router.decode_policy)
	 * and its params (router.policy_params.<decode_policy> without the
	 * mechanism keys; owned, or NULL), and llm-d's P/D threshold
	 * (router.disagg.min_prefill_tokens; 0: every request whose prefill
	 * node is in a prefill pool is disaggregated). */
	char decode_policy[48];
	struct cJSON *decode_params;
	char decode_params_path[96];
	int min_prefill_tokens;
};

struct scenario {
	char name[64];
	uint64_t seed;
	double duration_s;
	struct catalog cat; /* built-ins plus --catalog and the scenario's own "catalog" */
	/* The whole cluster: pool 0's configuration with nodes the total.
	 * Per-pool keys (gpu, tp, engine limits, cost model, layout) are read
	 * from pools[]; cluster-wide ones (model, kv_block_tokens,
	 * prefix_caching, tiers, thermal, kv_transfer) from here. */
	struct cluster_cfg cluster;
	struct pool_cfg *pools; /* n_pools >= 1 (owned) */
	int n_pools;
	int disaggregated; /* a prefill pool (and so a decode pool) exists */
	struct router_cfg router;
	struct cJSON *workload; /* the workload object (owned); read by workloads/ */
	double slo_ttft_p99_s, slo_tpot_p99_s;
	/* The client's view (docs/model.md): what a benchmark client adds to
	 * the engine's times; on: the scenario has a client block. */
	struct client_cfg {
		int on;
		double api_server_ms, tokenize_us_per_token, first_chunk_ms;
		double messages_per_token;
	} client;
	double timeseries_interval_s;
	struct fault_cfg *faults;
	int n_faults;
	char base_dir[4096]; /* the scenario file's folder: workload paths start here */
	/* derived: pool 0's */
	int64_t kv_blocks_per_node;
	double weight_bytes; /* per replica */
};

/* Reads and parses a scenario file; file NULL means the embedded default.
 * On a syntax error err names FILE:LINE:COLUMN. Caller frees with cJSON_Delete. */
int cfg_read_json(const char *file, struct cJSON **out, char *err, size_t errlen);
/* Applies one --set PATH=VALUE to the tree: VALUE is parsed as JSON when it
 * is valid JSON, else taken as a string; missing objects on PATH are made. */
int cfg_apply_set(struct cJSON *root, const char *assignment, char *err, size_t errlen);
/* Validates the tree and fills s. catalog_file (or NULL) is merged over the
 * built-in catalogs before the scenario's own "catalog" key. Errors name the
 * JSON path. On success the caller frees with cfg_scenario_free. Relative
 * paths in the tree (a config.json as cluster.model) start at the working
 * directory. */
int cfg_scenario_load(struct scenario *s, const struct cJSON *root, const char *catalog_file,
		      char *err, size_t errlen);
/* cfg_scenario_load of the tree read from the file source (NULL: the
 * embedded default), whose folder relative paths start at, as with
 * cfg_scenario_set_source. */
int cfg_scenario_load_from(struct scenario *s, const struct cJSON *root, const char *catalog_file,
			   const char *source, char *err, size_t errlen);
void cfg_scenario_free(struct scenario *s);
/* Records the scenario's file (NULL: embedded) so that relative paths in it
 * resolve against its folder. */
void cfg_scenario_set_source(struct scenario *s, const char *file);

#endif
