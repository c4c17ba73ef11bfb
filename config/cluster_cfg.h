/* cluster_cfg: one pool's cluster (GPU, model, servers and links, engine,
 * cost model, tiers, thermal, memory), its keys read over the cluster's. */
#ifndef KVSIM_CLUSTER_CFG_H
#define KVSIM_CLUSTER_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "model/catalog.h"
#include "config/mech.h"

struct cJSON;

enum cost_kind { COST_ROOFLINE, COST_FIXED, COST_PROFILE };

/* cluster.engine.version: the serving engine whose execution modes the
 * cost model follows (docs/model.md, "The engine as it runs"). */
/* vLLM 0.15's step_ms (docs/model.md, "The engine as it runs"): fitted on the
 * measured Llama-2-7B runs of VALIDATION.md (m), Llama-2-70B held out. */
#ifndef CFG_VLLM_0_15_STEP_MS
#define CFG_VLLM_0_15_STEP_MS 1.6
#endif
enum engine_version { ENGINE_VLLM_0_15, ENGINE_VLLM_0_6, ENGINE_VIDUR, ENGINE_VERSIONS };
/* "vllm-0.15", "vllm-0.6", "vidur", NULL. */
extern const char *const engine_version_names[];

/* cluster.engine defaults: vLLM's gpu_memory_utilization default (0.9), and
 * a reserve per GPU for the activations of a forward pass (a round figure
 * chosen, not measured: vLLM finds it by a profiling run). */
#define CFG_GPU_MEMORY_UTILIZATION 0.9
#define CFG_ACTIVATION_RESERVE_GIB 1.0
/* cluster.engine.kv_block_tokens default: vLLM's KV block size on CUDA
 * (CacheConfig.block_size, 16 tokens). */
#define CFG_KV_BLOCK_TOKENS 16
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
	enum engine_version version;   /* the preset the defaults below and the cost terms follow */
};

struct tier_cfg {
	double dram_bytes, nvme_bytes; /* per server; 0 = no such tier */
};

struct thermal_cfg {
	int enabled;
	double ambient_c;       /* inlet air */
	double tau_s;           /* first-order time constant */
	double c_per_w;         /* steady-state rise per watt of GPU power */
	double throttle_c;      /* throttling starts at this temperature */
	double resume_c;        /* and stops below this one */
	double throttle_factor; /* compute speed while throttled (0.5 = half) */
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
	/* The engine's execution modes (its version's preset): batches of at
	 * most graph_max_tokens tokens replay a CUDA graph (0: none, every
	 * kernel launched); decode-only ones a full graph (graph_full_decode),
	 * others a piecewise one with graph_eager_kernels kernels per layer
	 * launched outside it (the attention); custom_ar: vLLM's custom
	 * all-reduce within NVLink (the GPU's custom_allreduce line); async_cpu:
	 * the CPU's scheduling overlaps the GPU's step (step = max of the two). */
	int graph_max_tokens, graph_full_decode, graph_eager_kernels, custom_ar, async_cpu;
	/* GPU time of every step outside the model's layers that the CPU's
	 * overlap does not hide (sampler, logits, input and output copies, the
	 * graph's launch), ms */
	double step_ms;
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

/* cluster.autoscaler (every pool's default) or cluster.pools[i].autoscaler
 * (config/scale_cfg.c, sim/autoscale.c): how a pool's node count follows
 * its load. */
enum as_kind { AS_NONE, AS_HPA, AS_PLANNER };
enum as_metric { ASM_QUEUE, ASM_KV, ASM_BUSY, ASM_RPS };
enum as_predictor { ASP_CONSTANT, ASP_MOVING_AVERAGE, ASP_HOLT };
struct autoscaler_cfg {
	enum as_kind kind;
	enum as_metric metric;      /* hpa */
	double target, tolerance;   /* hpa: the metric's target per node, and the
				     * ratio band left alone */
	double tick_s, stabilization_s;
	double startup_s, startup_jitter_s;
	int min_nodes, max_nodes, max_step; /* max_step 0: Kubernetes' default policies */
	enum as_predictor predictor; /* planner */
	int window;                  /* planner: moving_average's intervals */
	double alpha, beta;          /* planner: holt's level and trend weights */
	double headroom;             /* planner: capacity kept spare (0.1: size to 90%) */
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
	/* With an autoscaler (as.kind != AS_NONE) the pool has cl.nodes =
	 * as.max_nodes slots, nodes0 of them held and up from the start; else
	 * nodes0 = cl.nodes. */
	int nodes0;
	struct autoscaler_cfg as;
};

/* One pool's cluster into pl->cl, pl->kv_blocks_per_node and
 * pl->weight_bytes: the keys of own (the pool's object in cluster.pools,
 * at own_path) over those of c (the scenario's "cluster" object, which
 * holds every pool's defaults); own NULL: c alone, read as "cluster"
 * (no pools). What is the whole cluster's (model, engine.kv_block_tokens
 * and prefix_caching, tiers, thermal, kv_transfer) is read from c only.
 * *model is the cluster's model, read here the first time (NULL on
 * entry): a catalog name, or a config.json path (relative to base_dir,
 * "" for the working directory) whose model is added to cat. Then, even
 * on failure, pl->cl.cost may own tables: free them with cfg_cost_free. */
int cfg_cluster_load(struct catalog *cat, const char *base_dir, const struct cJSON *c,
		     const struct cJSON *own, const char *own_path, const struct cat_model **model,
		     struct pool_cfg *pl, char *err, size_t errlen);
/* Fails on an unknown key of cluster.links, cluster.engine or
 * cluster.cost_model: with pools, the cluster's own objects are checked
 * once here, and each pool's (over them) by cfg_cluster_load. */
int cfg_cluster_check_defaults(const struct cJSON *c, char *err, size_t errlen);
/* Frees the tables a cost model owns (profile, attention); co stays valid. */
void cfg_cost_free(struct cost_cfg *co);
/* The KV cache blocks of one replica of cl when gpu_memory_utilization of
 * each GPU's memory, less activation_reserve_gib per GPU and the weights,
 * holds KV (every copy a tensor-parallel group keeps counted); 0 when
 * nothing is left. *weight_bytes (the replica's weights) and *kv_bytes
 * (the bytes left for KV, possibly negative) when not NULL. */
int64_t cfg_kv_blocks(const struct cluster_cfg *cl, double gpu_memory_utilization,
		      double activation_reserve_gib, double *weight_bytes, double *kv_bytes);

#endif
