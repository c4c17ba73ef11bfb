/* catalog: GPU, model and link figures, built in and overridable. */
#ifndef KVSIM_CATALOG_H
#define KVSIM_CATALOG_H

#include <stddef.h>

#include "sim/attention.h"

struct cJSON;

#define CAT_NAME_LEN 48

struct cat_gpu {
	char name[CAT_NAME_LEN];
	double bf16_flops, fp8_flops; /* dense peaks, FLOP/s; fp8 0 = unsupported */
	double hbm_bytes, hbm_bytes_per_s;
	double tdp_w;
	double price_per_hour; /* USD per GPU-hour, for planning (0: unknown) */
	char link[CAT_NAME_LEN]; /* scale-up link between GPUs of a server */
	char profile[CAT_NAME_LEN]; /* Vidur profile folder (compute/<profile>/...), or "" */
	/* The calibrated roofline (kvsim calibrate); mfu 0 = not calibrated. */
	double mfu, mbu, knee, op_overhead_us;
	/* Calibrated intra-server all-reduce by group size (index tp <= 8):
	 * alpha + beta * bytes; beta 0 = none (the link model is used). */
	double ar_alpha_s[9], ar_beta_s_per_byte[9];
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

struct cat_model {
	char name[CAT_NAME_LEN];
	int layers, hidden, q_heads, kv_heads, head_dim;
	double params, active_params; /* total and per-token active (MoE) */
	int kv_dtype_bytes;
	double kv_bytes_per_token; /* derived unless given (MLA) */
	int max_context;           /* tokens */
	char profile[96];          /* Vidur profile "<org>/<model>", or "" */
};

struct cat_link {
	char name[CAT_NAME_LEN];
	double bytes_per_s; /* per direction */
	double latency_s;
};

struct catalog {
	struct cat_gpu *gpus;
	struct cat_model *models;
	struct cat_link *links;
	size_t n_gpus, n_models, n_links;
};

/* Loads the built-in catalogs. Returns 0, or -1 with err filled. Caller
 * frees with catalog_free. */
int catalog_load_builtin(struct catalog *cat, char *err, size_t errlen);
/* Merges {"gpus": {...}, "models": {...}, "links": {...}} into cat: a known
 * name has the given fields overridden, a new name is added (all fields
 * required). path prefixes error messages. */
int catalog_merge(struct catalog *cat, const struct cJSON *obj, const char *path, char *err,
		  size_t errlen);
void catalog_free(struct catalog *cat);

const struct cat_gpu *catalog_gpu(const struct catalog *cat, const char *name);
const struct cat_model *catalog_model(const struct catalog *cat, const char *name);
const struct cat_link *catalog_link(const struct catalog *cat, const char *name);
/* Writes "a, b, c" (the names of one table: "gpus", "models", "links"). */
void catalog_names(const struct catalog *cat, const char *table, char *out, size_t outlen);

#endif
