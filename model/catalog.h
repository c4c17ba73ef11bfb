/* catalog: GPU, model and link figures, built in and overridable. */
#ifndef KVSIM_CATALOG_H
#define KVSIM_CATALOG_H

#include <stddef.h>

#include "model/attention.h"

struct cJSON;

#define CAT_NAME_LEN 48

struct cat_gpu {
	char name[CAT_NAME_LEN];
	double bf16_flops, fp8_flops; /* dense peaks, FLOP/s; fp8 0 = unsupported */
	double hbm_bytes;       /* memory as the GPU reports it (nvidia-smi's total) */
	double hbm_bytes_per_s;
	double tdp_w;
	double price_per_hour; /* USD per GPU-hour, for planning (NAN: not given, no cost) */
	/* Power (catalog "power"): the GPU's draw while it holds a loaded model
	 * and runs nothing (W; has_idle_w 0: not given, CAT_IDLE_TDP_FRAC x
	 * tdp_w), and the weight of memory traffic against compute in its
	 * dynamic power (docs/model.md, Energy). */
	double idle_w, memory_weight;
	int has_idle_w;
	char link[CAT_NAME_LEN]; /* scale-up link between GPUs of a server */
	char profile[CAT_NAME_LEN]; /* Vidur profile folder (compute/<profile>/...), or "" */
	/* The calibrated roofline (kvsim calibrate); mfu 0 = not calibrated. */
	double mfu, mbu, knee, op_overhead_us;
	/* Calibrated intra-server all-reduce by group size (index tp <= 8):
	 * alpha + beta * bytes; beta 0 = none (the link model is used). */
	double ar_alpha_s[9], ar_beta_s_per_byte[9];
	/* vLLM's custom all-reduce within an NVLink domain (catalog
	 * "custom_allreduce"), the same form; beta 0 = none (NCCL's line). */
	double car_alpha_s[9], car_beta_s_per_byte[9];
	/* Calibrated attention per backend (kvsim calibrate); has_attn 0 = none. */
	struct attn_fit attn[ATTN_BACKENDS];
	int has_attn[ATTN_BACKENDS];
	/* The engine's CPU time per iteration, base + per request in the batch
	 * (ms); has_overhead 0 = not given. */
	double overhead_base_ms, overhead_per_seq_ms;
	int has_overhead;
	/* Calibrated FP8 efficiencies of the linear layers (of fp8_flops and of
	 * the HBM bandwidth); 0 = none. */
	double fp8_mfu, fp8_mbu;
};

/* A GPU added without "power": idle at this fraction of its TDP (the
 * thermal model's idle fraction before the catalog had idle powers; the
 * built-in GPUs' measured ones are 0.16-0.24), and the built-in GPUs'
 * memory weight. Our choices, stated in docs/model.md. */
#define CAT_IDLE_TDP_FRAC 0.2
#define CAT_MEMORY_WEIGHT 0.4

/* g's idle power (W): its "power".idle_w, or CAT_IDLE_TDP_FRAC x tdp_w. */
static inline double catalog_gpu_idle_w(const struct cat_gpu *g)
{
	return g->has_idle_w ? g->idle_w : CAT_IDLE_TDP_FRAC * g->tdp_w;
}

struct cat_model {
	char name[CAT_NAME_LEN];
	int layers, hidden, q_heads, kv_heads, head_dim;
	double params, active_params; /* total and per-token active (MoE) */
	int kv_dtype_bytes;
	double kv_bytes_per_token; /* one copy of a token's KV, all layers */
	int max_context;           /* tokens */
	char profile[96];          /* Vidur profile "<org>/<model>", or "" */
	/* Mixture of experts (experts 0: dense): each of moe_layers layers
	 * sends a token to experts_per_token of its experts routed experts,
	 * expert_params parameters each. Everything else (attention, shared
	 * experts, dense layers, embeddings) every token uses. */
	int experts, experts_per_token, moe_layers;
	double expert_params;
	/* Multi-head latent attention (kv_lora_rank 0: none): the cache holds
	 * one latent of kv_lora_rank + qk_rope_head_dim values per token and
	 * layer, shared by all heads. */
	int kv_lora_rank, qk_rope_head_dim;
};

struct cat_link {
	char name[CAT_NAME_LEN];
	double bytes_per_s; /* per direction */
	double latency_s;
};

/* A server type: the GPUs that share one server (its NVLink domain, its
 * host DRAM and NVMe tiers) and the scale-out and host links each GPU has. */
struct cat_server {
	char name[CAT_NAME_LEN];
	char gpu[CAT_NAME_LEN]; /* the GPU it is the default server of, or "" */
	int gpus;               /* GPUs per server */
	int nics;               /* scale-out (compute fabric) NIC ports per server */
	char nic[CAT_NAME_LEN];  /* the link of one NIC port */
	char host[CAT_NAME_LEN]; /* one GPU's PCIe path to host DRAM */
};

struct catalog {
	struct cat_gpu *gpus;
	struct cat_model *models;
	struct cat_link *links;
	struct cat_server *servers;
	size_t n_gpus, n_models, n_links, n_servers;
};

/* Loads the built-in catalogs. Returns 0, or -1 with err filled. Caller
 * frees with catalog_free. */
int catalog_load_builtin(struct catalog *cat, char *err, size_t errlen);
/* Merges {"gpus": {...}, "models": {...}, "links": {...}, "servers": {...}} into cat: a known
 * name has the given fields overridden, a new name is added (all fields
 * required). path prefixes error messages. */
int catalog_merge(struct catalog *cat, const struct cJSON *obj, const char *path, char *err,
		  size_t errlen);
void catalog_free(struct catalog *cat);
/* Adds m (its name included) to the models; a name already there keeps
 * its entry, and lookups by name find that one. Returns the new entry
 * (valid until the next change of the models), or NULL when out of memory. */
const struct cat_model *catalog_add_model(struct catalog *cat, const struct cat_model *m);
/* KV bytes a token takes on a replica of tp GPUs, all copies counted: a
 * GPU keeps at least one KV head, so with fewer KV heads than GPUs heads
 * are copied, and an MLA latent (one "head") is kept whole on every GPU
 * (vLLM ModelConfig.get_num_kv_heads). */
double catalog_kv_bytes_per_token_tp(const struct cat_model *m, int tp);

const struct cat_gpu *catalog_gpu(const struct catalog *cat, const char *name);
const struct cat_model *catalog_model(const struct catalog *cat, const char *name);
const struct cat_link *catalog_link(const struct catalog *cat, const char *name);
const struct cat_server *catalog_server(const struct catalog *cat, const char *name);
/* The server type a GPU runs in when the scenario names none: the first
 * that names the GPU, else CAT_DEFAULT_SERVER; NULL if neither exists. */
#define CAT_DEFAULT_SERVER "generic-8gpu"
const struct cat_server *catalog_server_for(const struct catalog *cat, const char *gpu);
/* Writes "a, b, c" (the names of one table: "gpus", "models", "links",
 * "servers"). */
void catalog_names(const struct catalog *cat, const char *table, char *out, size_t outlen);

#endif
