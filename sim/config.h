/* config: the scenario file, parsed and validated into plain structs. */
#ifndef KVSIM_CONFIG_H
#define KVSIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "sim/catalog.h"
#include "sim/mech.h"
#include "sim/migration.h"

struct cJSON;

enum cost_kind { COST_ROOFLINE, COST_FIXED, COST_PROFILE };

/* cluster.engine defaults: vLLM's gpu_memory_utilization default (0.9), and
 * a reserve per GPU for the activations of a forward pass (a round figure
 * chosen, not measured: vLLM finds it by a profiling run). */
#define CFG_GPU_MEMORY_UTILIZATION 0.9
#define CFG_ACTIVATION_RESERVE_GIB 1.0
enum dtype_kind { DTYPE_BF16, DTYPE_FP8 };

struct engine_cfg {
	int kv_block_tokens;
	double gpu_memory_utilization;
	int max_num_seqs;
	int max_num_batched_tokens;
	int prefix_caching;
	double activation_reserve_gib; /* per GPU, held back from the KV cache */
	int max_span_iterations;       /* simulator speed: decode span length (1 = off) */
	int preempt_swap;              /* preemption "swap": to the DRAM tier, not recompute */
};

struct tier_cfg {
	double dram_bytes, nvme_bytes; /* per server; 0 = no such tier */
};

struct thermal_cfg {
	int enabled;
	double ambient_c;       /* inlet air */
	double tau_s;           /* first-order time constant */
	double c_per_w;         /* steady-state rise per watt of GPU power */
	double idle_power_frac; /* idle power / TDP */
	double throttle_c;      /* throttling starts at this temperature */
	double resume_c;        /* and stops below this one */
	double throttle_factor; /* compute speed while throttled (0.5 = half) */
};

enum fault_kind { FAULT_CRASH, FAULT_SLOW, FAULT_LINK, FAULT_COOLING };

struct fault_cfg {
	enum fault_kind kind;
	int target;        /* node (crash, slow) or server (link, cooling) */
	double at_s;
	double duration_s; /* crash: recover_after_s; < 0: stays down */
	double factor;     /* slow, link */
	double ambient_c;  /* cooling */
};

struct cost_cfg {
	enum cost_kind kind;
	double mfu, mbu, overhead_ms; /* roofline; overhead_ms: the engine's CPU time per iteration */
	double overhead_per_seq_ms;   /* and per request in the batch */
	int attn_backend;             /* enum attn_backend */
	struct attn_fit attn;         /* the GPU's fit for attn_backend, or the plain roofline's */
	struct attn_table *attn_table; /* profile: measured attention (owned), or NULL */
	struct attn_table *attn_table_tp; /* and at the replica's TP degree (owned), or NULL */
	struct attn_fit attn_table_fit;     /* the fit of the table's backend */
	struct attn_shape attn_table_shape; /* the shape the table was measured at */
	double knee, op_overhead_us;  /* calibrated roofline (knee 0: plain max) */
	char profiles[1024];          /* profile: the Vidur data folder */
	struct profile *profile;      /* profile: the model's mlp.csv, loaded */
	double base_ms, per_token_ms; /* fixed */
};

struct cluster_cfg {
	int nodes, tp;
	int nodes_per_server; /* replicas per server; server k holds nodes k*nps.. */
	enum dtype_kind dtype;
	const struct cat_gpu *gpu;       /* points into scenario.cat */
	const struct cat_model *model;   /* points into scenario.cat */
	const struct cat_server *server; /* points into scenario.cat */
	/* per GPU (one port, one path); a replica owns tp of each */
	const struct cat_link *intra_server, *inter_server, *host, *nvme;
	/* A replica's striped ports, bytes/s per direction: tp NVLinks, its
	 * GPUs' share of the server's NIC ports; a server's host path (tp
	 * PCIe paths, shared by its replicas). */
	double nvlink_bytes_per_s, nic_bytes_per_s, host_bytes_per_s;
	struct engine_cfg engine;
	struct cost_cfg cost;
	struct tier_cfg tiers;
	struct thermal_cfg thermal;
	enum kv_path kv_transfer; /* cluster.kv_transfer (or its "path") */
	int kv_layerwise;         /* cluster.kv_transfer.layerwise: a disaggregated request's
				   * KV streams layer by layer while its prefill runs */
};

/* cluster.pools: what each pool of nodes does. */
enum pool_role { POOL_MIXED, POOL_PREFILL, POOL_DECODE };

/* One pool of identical replicas. Nodes are numbered pool by pool in list
 * order, and so are servers (a server holds one pool's GPUs). */
struct pool_cfg {
	char name[32];
	enum pool_role role;
	int first_node, first_server, n_servers;
	/* This pool's cluster: the cluster's keys with the pool's over them
	 * (cl.nodes is the pool's node count). Keys that are the whole
	 * cluster's (model, kv_block_tokens, prefix_caching, tiers, thermal,
	 * kv_transfer) are equal in every pool. */
	struct cluster_cfg cl;
	int64_t kv_blocks_per_node;
	double weight_bytes; /* per replica */
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
	 * simulator resolves them over the policy's defaults (sim/mech.h). */
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
/* The KV cache blocks of one replica of cl when gpu_memory_utilization of
 * each GPU's memory, less activation_reserve_gib per GPU and the weights,
 * holds KV (every copy a tensor-parallel group keeps counted); 0 when
 * nothing is left. *weight_bytes (the replica's weights) and *kv_bytes
 * (the bytes left for KV, possibly negative) when not NULL. */
int64_t cfg_kv_blocks(const struct cluster_cfg *cl, double gpu_memory_utilization,
		      double activation_reserve_gib, double *weight_bytes, double *kv_bytes);

#endif
