/* cluster_cfg: one pool's cluster (GPU, model, servers and links, engine,
 * cost model, tiers, thermal, memory), its keys read over the cluster's. */
#include "config/cluster_cfg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "config/hfconfig.h"
#include "model/profile.h"

static const cJSON *sub(const cJSON *obj, const char *key)
{
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* The keys of cluster.links, cluster.engine and cluster.cost_model (and a
 * pool's). */
static const char *const cl_link_keys[] = {"intra_server", "inter_server", "host", "nvme", NULL};
static const char *const cl_engine_keys[] = {
    "kv_block_tokens", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
    "prefix_caching",  "preemption",             "activation_reserve_gib",
    "max_span_iterations", "version", NULL};

const char *const engine_version_names[] = {"vllm-0.15", "vllm-0.6", "vidur", NULL};
static const char *const cl_cost_keys[] = {"kind",    "mfu",	   "mbu",
					"overhead_ms", "base_ms", "per_token_ms",
					"knee",    "op_overhead_us", "profiles",
					"overhead_per_seq_ms", "attention", "step_ms", NULL};

/* Where a pool reads a key: its own object in cluster.pools when that
 * gives the key, else the cluster's, which holds every pool's defaults.
 * Without pools own is NULL and every key is the cluster's, read at
 * "cluster". Sub-objects (links, engine, cost_model) merge field by field
 * the same way (src_sub). */
struct src {
	const cJSON *own, *def;
	char own_path[128], def_path[128];
};

/* The object that gives key (own's when it has it, else def, which may
 * lack it too) and its path. */
static const cJSON *src_at(const struct src *x, const char *key, const char **path)
{
	if (x->own && cJSON_GetObjectItemCaseSensitive(x->own, key)) {
		*path = x->own_path;
		return x->own;
	}
	*path = x->def_path;
	return x->def;
}

/* The JSON path key is read at: "cluster.pools[1].tp" or "cluster.tp". */
static const char *src_key(const struct src *x, const char *key, char *buf, size_t len)
{
	const char *path;
	src_at(x, key, &path);
	return cfg_join(buf, len, path, key);
}

static void src_sub(const struct src *x, const char *key, struct src *out)
{
	out->own = sub(x->own, key);
	out->def = sub(x->def, key);
	cfg_join(out->own_path, sizeof out->own_path, x->own_path, key);
	cfg_join(out->def_path, sizeof out->def_path, x->def_path, key);
}

static int src_check_keys(const struct src *x, const char *const *allowed, char *err,
			  size_t errlen)
{
	return cfg_check_keys(x->own, x->own_path, allowed, err, errlen) ||
	       cfg_check_keys(x->def, x->def_path, allowed, err, errlen);
}

static int src_int(const struct src *x, const char *key, int64_t lo, int64_t hi, int64_t *out,
		   char *err, size_t errlen)
{
	const char *p;
	const cJSON *o = src_at(x, key, &p);
	return cfg_int(o, p, key, lo, hi, out, err, errlen);
}

static int src_number(const struct src *x, const char *key, double lo, double hi, double *out,
		      char *err, size_t errlen)
{
	const char *p;
	const cJSON *o = src_at(x, key, &p);
	return cfg_number(o, p, key, lo, hi, out, err, errlen);
}

static int src_bool(const struct src *x, const char *key, int *out, char *err, size_t errlen)
{
	const char *p;
	const cJSON *o = src_at(x, key, &p);
	return cfg_bool(o, p, key, out, err, errlen);
}

static int src_string(const struct src *x, const char *key, char *out, size_t outlen, char *err,
		      size_t errlen)
{
	const char *p;
	const cJSON *o = src_at(x, key, &p);
	return cfg_string(o, p, key, out, outlen, err, errlen);
}

static int src_enum(const struct src *x, const char *key, const char *const *choices, int *out,
		    char *err, size_t errlen)
{
	const char *p;
	const cJSON *o = src_at(x, key, &p);
	return cfg_enum(o, p, key, choices, out, err, errlen);
}

static int pick_link(const struct catalog *cat, const struct src *links, const char *key,
		     const char *def, const struct cat_link **out, char *err, size_t errlen)
{
	char name[CAT_NAME_LEN];
	snprintf(name, sizeof name, "%s", def);
	if (src_string(links, key, name, sizeof name, err, errlen))
		return -1;
	*out = catalog_link(cat, name);
	if (!*out) {
		char names[1024], p[256];
		catalog_names(cat, "links", names, sizeof names);
		snprintf(err, errlen, "%s: unknown link \"%s\" (known: %s)",
			 src_key(links, key, p, sizeof p), name, names);
		return -1;
	}
	return 0;
}

/* Fails on a cost_model key (of the pool's or, where the pool gives no
 * such key, the cluster's) that the model of kind (the index in roofline,
 * fixed, profile) does not read: it would be silently ignored. */
static int cost_keys_used(const struct src *cm, int kind, const char *kind_name, char *err,
			  size_t errlen)
{
	static const char *const used[3][10] = {
	    {"kind", "mfu", "mbu", "knee", "op_overhead_us", "overhead_ms", "overhead_per_seq_ms",
	     "attention", "step_ms", NULL},
	    {"kind", "base_ms", "per_token_ms", NULL},
	    {"kind", "profiles", "overhead_ms", "overhead_per_seq_ms", "attention", "mfu", "mbu",
	     "step_ms", NULL}};
	const cJSON *objs[2] = {cm->own, cm->def};
	const char *paths[2] = {cm->own_path, cm->def_path};
	for (int o = 0; o < 2; o++)
		for (const cJSON *c = objs[o] ? objs[o]->child : NULL; c; c = c->next) {
			int ok = c->string[0] == '_' ||
				 (o == 1 && cm->own &&
				  cJSON_GetObjectItemCaseSensitive(cm->own, c->string));
			for (int k = 0; used[kind][k] && !ok; k++)
				ok = !strcmp(used[kind][k], c->string);
			if (ok)
				continue;
			char list[128] = "";
			for (int k = 1; used[kind][k]; k++)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
					 k > 1 ? ", " : "", used[kind][k]);
			snprintf(err, errlen, "%s.%s: not read by the %s cost model (it reads %s)",
				 paths[o], c->string, kind_name, list);
			return -1;
		}
	return 0;
}

/* Where a profile cost model's files are named, for messages about them:
 * the cost_model that gives profiles, else the one that gives its kind. */
static const char *profiles_path(const struct src *cm)
{
	const char *p;
	src_at(cm, sub(cm->own, "profiles") || sub(cm->def, "profiles") ? "profiles" : "kind", &p);
	return p;
}

/* cost_model.kind "profile": the model's Vidur mlp.csv for this GPU, read
 * at load so that a missing or bad file fails validation. x is the pool's
 * (or cluster's) keys, cm its cost_model. */
static int cost_profile_load(struct cluster_cfg *cl, const struct src *x, const struct src *cm,
			     char *err, size_t errlen)
{
	char kp[256];
	const char *cmp = profiles_path(cm);
	if (!cl->gpu->profile[0] || !cl->model->profile[0]) {
		snprintf(err, errlen, "%s: \"profile\" needs Vidur profiles of %s "
				      "on %s; the catalog names none (kvsim list gpus|models show which "
				      "have them)",
			 src_key(cm, "kind", kp, sizeof kp), cl->model->name, cl->gpu->name);
		return -1;
	}
	if (cl->dtype != DTYPE_BF16) {
		char dp[256];
		snprintf(err, errlen, "%s: the profiles are FP16; \"profile\" needs %s bf16",
			 src_key(cm, "kind", kp, sizeof kp), src_key(x, "dtype", dp, sizeof dp));
		return -1;
	}
	char path[2400];
	snprintf(path, sizeof path, "%s/compute/%s/%s/mlp.csv", cl->cost.profiles, cl->gpu->profile,
		 cl->model->profile);
	struct profile *p = calloc(1, sizeof *p);
	char inner[1024];
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (prof_read(p, path, inner, sizeof inner)) {
		snprintf(err, errlen, "%s: %s", cmp, inner);
		free(p);
		return -1;
	}
	if (!prof_series_for(p, cl->tp)) {
		snprintf(err, errlen, "%s: %s has no tensor-parallel degree %d", cmp, path, cl->tp);
		prof_free(p);
		free(p);
		return -1;
	}
	cl->cost.profile = p;
	return 0;
}

/* The servers and links of cluster or pool cl (tp and gpu already read):
 * the server type, replicas per server (by default as many as its GPUs
 * hold: gpus / tp), and the links, each named per GPU (one NVLink, one NIC
 * port, one PCIe path) and owned tp times by a replica of tp GPUs. A
 * layout that does not fit its servers is refused: a replica never spans
 * servers, and a server's replicas never need more GPUs than it has. */
static int load_layout(struct catalog *cat, const struct src *x, struct cluster_cfg *cl, char *err,
		       size_t errlen)
{
	char name[CAT_NAME_LEN] = "", sp[256], kp[256];
	if (src_string(x, "server", name, sizeof name, err, errlen))
		return -1;
	src_key(x, "server", sp, sizeof sp);
	const struct cat_server *sv = name[0] ? catalog_server(cat, name)
					      : catalog_server_for(cat, cl->gpu->name);
	if (!sv) {
		char names[1024];
		catalog_names(cat, "servers", names, sizeof names);
		if (name[0])
			snprintf(err, errlen, "%s: unknown server \"%s\" (known: %s)", sp, name,
				 names);
		else
			snprintf(err, errlen, "%s: no server type names %s and the catalog "
					      "has no %s; expected one of: %s",
				 sp, cl->gpu->name, CAT_DEFAULT_SERVER, names);
		return -1;
	}
	if (sv->gpu[0] && strcmp(sv->gpu, cl->gpu->name)) {
		snprintf(err, errlen, "%s: a %s server holds %s GPUs, not %s; expected a "
				      "server of %s (leave %s out for its default)",
			 sp, sv->name, sv->gpu, cl->gpu->name, cl->gpu->name, sp);
		return -1;
	}
	cl->server = sv;
	if (cl->tp > sv->gpus) {
		snprintf(err, errlen, "%s: a replica's GPUs share one server's NVLink domain "
				      "and a %s server has %d GPUs; expected at most %d, got %d",
			 src_key(x, "tp", kp, sizeof kp), sv->name, sv->gpus, sv->gpus, cl->tp);
		return -1;
	}
	int fit = sv->gpus / cl->tp;
	int64_t v = fit;
	if (src_int(x, "nodes_per_server", 1, 1024, &v, err, errlen))
		return -1;
	if (v > fit) {
		snprintf(err, errlen, "%s: %lld replicas of tp %d need %lld GPUs "
				      "and a %s server has %d; expected at most %d, got %lld",
			 src_key(x, "nodes_per_server", kp, sizeof kp), (long long)v, cl->tp,
			 (long long)v * cl->tp, sv->name, sv->gpus, fit, (long long)v);
		return -1;
	}
	cl->nodes_per_server = (int)v;
	struct src links;
	src_sub(x, "links", &links);
	if (src_check_keys(&links, cl_link_keys, err, errlen) ||
	    pick_link(cat, &links, "intra_server", cl->gpu->link, &cl->intra_server, err,
		      errlen) ||
	    pick_link(cat, &links, "inter_server", sv->nic, &cl->inter_server, err, errlen) ||
	    pick_link(cat, &links, "host", sv->host, &cl->host, err, errlen) ||
	    pick_link(cat, &links, "nvme", "nvme-gen5", &cl->nvme, err, errlen))
		return -1;
	/* A TP replica's KV is split by heads over its GPUs, so a transfer
	 * moves each GPU's share over that GPU's own links at once (striped).
	 * Every node of a pool has the same tp, so the tp stripes of a
	 * transfer always get equal shares: a port of tp x the per-GPU rate
	 * shares bandwidth exactly as tp ports would (docs/model.md). NICs:
	 * the server's ports spread evenly over its GPUs. The host path of a
	 * server is the tp PCIe paths of one replica's GPUs, shared by the
	 * server's replicas. */
	cl->nvlink_bytes_per_s = cl->tp * cl->intra_server->bytes_per_s;
	cl->nic_bytes_per_s = (double)cl->tp * sv->nics / sv->gpus * cl->inter_server->bytes_per_s;
	cl->host_bytes_per_s = cl->tp * cl->host->bytes_per_s;
	return 0;
}

/* cluster.model as a path to a Hugging Face config.json: read (relative
 * to base_dir, the scenario's folder, as workload paths are) and added to
 * the scenario's catalog cat. */
static int load_hf_model(struct catalog *cat, const char *base_dir, const char *model,
			 const struct cat_model **out, char *err, size_t errlen)
{
	/* base_dir (scenario.base_dir) and model each fit in 4096 bytes */
	char path[4096 + 4096], inner[1024];
	if (model[0] == '/' || !base_dir[0])
		snprintf(path, sizeof path, "%s", model);
	else
		snprintf(path, sizeof path, "%s/%s", base_dir, model);
	struct cat_model m;
	if (hf_model_load(path, &m, inner, sizeof inner)) {
		snprintf(err, errlen, "cluster.model: %s", inner);
		return -1;
	}
	if (!(*out = catalog_add_model(cat, &m))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* cost_model.kind "profile": measured attention times, the model's own on
 * this GPU, else those the GPU's fit for the selected backend was made
 * from (scaled to the model's shape by the fit); neither: the fit alone. */
static int cost_attn_load(struct cluster_cfg *cl, const struct src *cm, char *err, size_t errlen)
{
	struct cost_cfg *co = &cl->cost;
	const struct cat_gpu *g = cl->gpu;
	const char *cmp = profiles_path(cm);
	const char *folders[2] = {cl->model->profile,
				  g->has_attn[co->attn_backend] ? g->attn[co->attn_backend].profile
								: ""};
	for (int i = 0; i < 2; i++) {
		if (!folders[i][0])
			continue;
		struct attn_table *t = calloc(1, sizeof *t);
		struct attn_rows rows;
		char inner[1024] = "out of memory";
		int rc = t ? attn_table_load(t, &rows, co->profiles, g->profile, folders[i], inner,
					     sizeof inner)
			   : -1;
		if (rc <= 0) {
			free(t);
			if (rc == 0)
				continue;
			snprintf(err, errlen, "%s: %s", cmp, inner);
			return -1;
		}
		attn_rows_shape(&rows, t->tp, g->bf16_flops, g->hbm_bytes_per_s,
				&co->attn_table_shape);
		/* the rows at the replica's own TP degree, where the file has some */
		struct attn_table *own = NULL;
		if (cl->tp != t->tp && !strcmp(folders[i], cl->model->profile) &&
		    (own = calloc(1, sizeof *own)) &&
		    attn_table_build(own, &rows, cl->tp, (size_t)-1)) {
			free(own);
			own = NULL;
		}
		co->attn_table_tp = own;
		if (g->has_attn[rows.backend])
			co->attn_table_fit = g->attn[rows.backend];
		else
			attn_fit_plain(&co->attn_table_fit, co->mfu, co->mbu);
		attn_rows_free(&rows);
		co->attn_table = t;
		return 0;
	}
	return 0;
}

int64_t cfg_kv_blocks(const struct cluster_cfg *cl, double gpu_memory_utilization,
		      double activation_reserve_gib, double *weight_bytes, double *kv_bytes)
{
	const struct cat_model *m = cl->model;
	double wbytes = m->params * (cl->dtype == DTYPE_FP8 ? 1.0 : 2.0);
	double usable = cl->tp * cl->gpu->hbm_bytes * gpu_memory_utilization;
	double reserve = cl->tp * activation_reserve_gib * 1073741824.0;
	double kv = usable - wbytes - reserve;
	double block_bytes = catalog_kv_bytes_per_token_tp(m, cl->tp) * cl->engine.kv_block_tokens;
	if (weight_bytes)
		*weight_bytes = wbytes;
	if (kv_bytes)
		*kv_bytes = kv;
	return kv > 0 ? (int64_t)floor(kv / block_bytes) : 0;
}

/* cluster.kv_transfer: a path name, or {"path", "layerwise"}. */
static int load_kv_transfer(const cJSON *c, struct cluster_cfg *cl, char *err, size_t errlen)
{
	/* The KV path between nodes: NIXL (NVIDIA's transfer library, which
	 * Dynamo and llm-d ship) moves GPU memory to GPU memory over NVLink
	 * and RDMA; LMCache stages it through host memory. */
	static const char *const paths[] = {"none", "nixl", "lmcache", NULL};
	static const char *const keys[] = {"path", "layerwise", NULL};
	const cJSON *kt = sub(c, "kv_transfer");
	int path = KVX_NIXL;
	/* layerwise false: vLLM's NIXL connector sends a request's KV once its
	 * prefill is done, and LMCache's use_layerwise defaults to false */
	int layerwise = 0;
	if (!cJSON_IsObject(kt)) {
		if (cfg_enum(c, "cluster", "kv_transfer", paths, &path, err, errlen))
			return -1;
	} else if (cfg_check_keys(kt, "cluster.kv_transfer", keys, err, errlen) ||
		   cfg_enum(kt, "cluster.kv_transfer", "path", paths, &path, err, errlen) ||
		   cfg_bool(kt, "cluster.kv_transfer", "layerwise", &layerwise, err, errlen)) {
		return -1;
	}
	if (layerwise && path == KVX_NONE) {
		snprintf(err, errlen,
			 "cluster.kv_transfer.layerwise: streams KV between nodes, and "
			 "cluster.kv_transfer.path is \"none\"; expected a path (nixl or lmcache) "
			 "or layerwise false");
		return -1;
	}
	cl->kv_transfer = (enum kv_path)path;
	cl->kv_layerwise = layerwise;
	return 0;
}

/* The replica: nodes, tp, GPU, model (*model: the cluster's, read here
 * the first time) and dtype, and whether tp splits the model's heads. */
static int load_replica(struct catalog *cat, const char *base_dir, const struct src *x,
			const struct cat_model **model, struct cluster_cfg *cl, char *err,
			size_t errlen)
{
	static const char *const dtypes[] = {"bf16", "fp8", NULL};
	const cJSON *c = x->def;
	int64_t v;
	char gpu[CAT_NAME_LEN] = "H100-SXM", mname[4096] = "Llama-3-8B", kp[256];
	int dt = DTYPE_BF16;
	v = 8;
	if (src_int(x, "nodes", 1, 1000000, &v, err, errlen))
		return -1;
	cl->nodes = (int)v;
	v = 1;
	if (src_int(x, "tp", 1, 64, &v, err, errlen))
		return -1;
	cl->tp = (int)v;
	if (src_string(x, "gpu", gpu, sizeof gpu, err, errlen) ||
	    (!*model && cfg_string(c, "cluster", "model", mname, sizeof mname, err, errlen)) ||
	    src_enum(x, "dtype", dtypes, &dt, err, errlen))
		return -1;
	cl->dtype = (enum dtype_kind)dt;
	cl->gpu = catalog_gpu(cat, gpu);
	if (!*model && (hf_is_config_path(mname) ? load_hf_model(cat, base_dir, mname, model, err, errlen)
						 : (*model = catalog_model(cat, mname), 0)))
		return -1;
	cl->model = *model;
	if (!cl->gpu || !cl->model) {
		char names[1024];
		int is_gpu = !cl->gpu;
		catalog_names(cat, is_gpu ? "gpus" : "models", names, sizeof names);
		if (is_gpu)
			snprintf(err, errlen, "%s: unknown GPU \"%s\" (known: %s)",
				 src_key(x, "gpu", kp, sizeof kp), gpu, names);
		else
			snprintf(err, errlen, "cluster.model: unknown model \"%s\" (known: %s)",
				 mname, names);
		return -1;
	}
	if (cl->dtype == DTYPE_FP8 && cl->gpu->fp8_flops <= 0) {
		snprintf(err, errlen, "%s: %s has no FP8 tensor cores; expected \"bf16\"",
			 src_key(x, "dtype", kp, sizeof kp), cl->gpu->name);
		return -1;
	}
	src_key(x, "tp", kp, sizeof kp);
	if (cl->model->q_heads % cl->tp) {
		snprintf(err, errlen, "%s: expected a divisor of %s's %d attention heads, got %d",
			 kp, cl->model->name, cl->model->q_heads, cl->tp);
		return -1;
	}
	/* KV heads split evenly over the GPUs, or each one copied to a whole
	 * number of them (vLLM's QKVParallelLinear); an MLA latent is copied
	 * to every GPU. */
	int kvh = cl->model->kv_heads;
	if (!cl->model->kv_lora_rank && (kvh >= cl->tp ? kvh % cl->tp : cl->tp % kvh)) {
		snprintf(err, errlen,
			 "%s: expected a divisor or a multiple of %s's %d KV heads, got %d", kp,
			 cl->model->name, kvh, cl->tp);
		return -1;
	}

	return 0;
}

/* The engine (vLLM's scheduler and memory settings); e gets its source,
 * for later messages about its keys. */
static int load_engine(const struct src *x, struct cluster_cfg *cl, struct src *e, char *err,
		       size_t errlen)
{
	static const char *const preempt_modes[] = {"recompute", "swap", NULL};
	int64_t v;
	src_sub(x, "engine", e);
	struct engine_cfg *en = &cl->engine;
	int preempt = 0;
	en->gpu_memory_utilization = CFG_GPU_MEMORY_UTILIZATION;
	en->prefix_caching = 1;
	en->activation_reserve_gib = CFG_ACTIVATION_RESERVE_GIB;
	if (src_check_keys(e, cl_engine_keys, err, errlen))
		return -1;
	int version = ENGINE_VLLM_0_15;
	if (src_enum(e, "version", engine_version_names, &version, err, errlen))
		return -1;
	en->version = (enum engine_version)version;
	/* vLLM 0.15's batch defaults for its API server by GPU class
	 * (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults): 1024
	 * sequences and 8192 tokens on GPUs of at least 70 GiB other than the
	 * A100, 256 and 2048 elsewhere. The older presets keep kvsim's former
	 * defaults (256, 8192). */
	int big = cl->gpu->hbm_bytes >= 70.0 * 1073741824.0 && !strstr(cl->gpu->name, "A100");
	int64_t seqs_def = 256, tokens_def = 8192;
	if (en->version == ENGINE_VLLM_0_15) {
		seqs_def = big ? 1024 : 256;
		tokens_def = big ? 8192 : 2048;
	}
	v = CFG_KV_BLOCK_TOKENS;
	if (src_int(e, "kv_block_tokens", 1, 4096, &v, err, errlen))
		return -1;
	en->kv_block_tokens = (int)v;
	v = seqs_def;
	if (src_int(e, "max_num_seqs", 1, 65536, &v, err, errlen))
		return -1;
	en->max_num_seqs = (int)v;
	v = tokens_def;
	if (src_int(e, "max_num_batched_tokens", 1, 10000000, &v, err, errlen))
		return -1;
	en->max_num_batched_tokens = (int)v;
	v = 256;
	if (src_int(e, "max_span_iterations", 1, 65536, &v, err, errlen))
		return -1;
	en->max_span_iterations = (int)v;
	if (src_number(e, "gpu_memory_utilization", 0.01, 1.0, &en->gpu_memory_utilization, err,
		       errlen) ||
	    src_number(e, "activation_reserve_gib", 0, 1e6, &en->activation_reserve_gib, err,
		       errlen) ||
	    src_bool(e, "prefix_caching", &en->prefix_caching, err, errlen) ||
	    src_enum(e, "preemption", preempt_modes, &preempt, err, errlen))
		return -1;

	en->preempt_swap = preempt == 1;
	return 0;
}

/* The engine version's execution modes (docs/model.md, "The engine as it
 * runs"), over the GPU's calibrated terms:
 * - vllm-0.15: CUDA graphs captured for batches of up to min(2 x
 *   max_num_seqs, 512) tokens (vllm/config/compilation.py, the default
 *   cudagraph_capture_sizes), FULL_AND_PIECEWISE (decode-only batches a full
 *   graph, others piecewise with the attention launched eagerly, one kernel
 *   per layer); custom all-reduce within NVLink; asynchronous scheduling
 *   (the CPU's step overlaps the GPU's).
 * - vllm-0.6: every kernel launched, NCCL all-reduces, the CPU's time in
 *   series: the figures kvsim's calibration gave before the presets.
 * - vidur: Vidur's engine: no launch, CPU or per-sequence cost at all. */
static void engine_preset(const struct cluster_cfg *cl, struct cost_cfg *co)
{
	co->graph_max_tokens = co->graph_full_decode = co->graph_eager_kernels = 0;
	co->custom_ar = co->async_cpu = 0;
	co->step_ms = 0;
	switch (cl->engine.version) {
	case ENGINE_VLLM_0_15: {
		int cap = 2 * cl->engine.max_num_seqs;
		co->graph_max_tokens = cap < 512 ? cap : 512;
		co->graph_full_decode = 1;
		co->graph_eager_kernels = 1;
		co->custom_ar = 1;
		co->async_cpu = 1;
		co->step_ms = CFG_VLLM_0_15_STEP_MS;
		break;
	}
	case ENGINE_VIDUR:
		co->op_overhead_us = 0;
		co->overhead_ms = co->overhead_per_seq_ms = 0;
		break;
	default:
		break;
	}
}

/* The cost model: the GPU's calibrated terms as defaults, the kind's keys
 * checked, a profile's tables loaded. */
static int load_cost(const struct src *x, struct cluster_cfg *cl, char *err, size_t errlen)
{
	static const char *const cost_kinds[] = {"roofline", "fixed", "profile", NULL};
	struct src cm;
	src_sub(x, "cost_model", &cm);
	struct cost_cfg *co = &cl->cost;
	int kind = COST_ROOFLINE;
	/* The GPU's calibrated roofline when it has one, else docs/design.md's
	 * defaults with a plain max. */
	const struct cat_gpu *gp = cl->gpu;
	co->mfu = gp->mfu > 0 ? gp->mfu : 0.7;
	co->mbu = gp->mfu > 0 ? gp->mbu : 0.8;
	co->knee = gp->mfu > 0 ? gp->knee : 0;
	co->op_overhead_us = gp->mfu > 0 ? gp->op_overhead_us : 0;
	/* FP8 GEMMs: the GPU's calibrated FP8 efficiencies where it has them */
	double mfu16 = co->mfu, mbu16 = co->mbu;
	if (cl->dtype == DTYPE_FP8 && gp->fp8_mfu > 0) {
		co->mfu = gp->fp8_mfu;
		co->mbu = gp->fp8_mbu;
	}
	snprintf(co->profiles, sizeof co->profiles, "data/profiles/vidur");
	/* The engine's CPU time per iteration: the GPU's entry (catalog), or
	 * none for a GPU added without one. */
	co->overhead_ms = gp->has_overhead ? gp->overhead_base_ms : 0;
	co->overhead_per_seq_ms = gp->has_overhead ? gp->overhead_per_seq_ms : 0;
	engine_preset(cl, co);
	int backend = ATTN_FLASHINFER;
	co->base_ms = 5.0;
	co->per_token_ms = 0.0;
	if (src_check_keys(&cm, cl_cost_keys, err, errlen) ||
	    src_enum(&cm, "kind", cost_kinds, &kind, err, errlen) ||
	    src_number(&cm, "mfu", 1e-3, 1, &co->mfu, err, errlen) ||
	    src_number(&cm, "mbu", 1e-3, 1, &co->mbu, err, errlen) ||
	    src_number(&cm, "overhead_ms", 0, 1e6, &co->overhead_ms, err, errlen) ||
	    src_number(&cm, "overhead_per_seq_ms", 0, 1e6, &co->overhead_per_seq_ms, err, errlen) ||
	    src_enum(&cm, "attention", attn_backend_names, &backend, err, errlen) ||
	    src_number(&cm, "base_ms", 0, 1e6, &co->base_ms, err, errlen) ||
	    src_number(&cm, "per_token_ms", 0, 1e6, &co->per_token_ms, err, errlen) ||
	    src_number(&cm, "knee", 0, 64, &co->knee, err, errlen) ||
	    src_number(&cm, "op_overhead_us", 0, 1e6, &co->op_overhead_us, err, errlen) ||
	    src_number(&cm, "step_ms", 0, 1e6, &co->step_ms, err, errlen) ||
	    src_string(&cm, "profiles", co->profiles, sizeof co->profiles, err, errlen))
		return -1;
	co->kind = (enum cost_kind)kind;
	co->attn_backend = backend;
	/* The attention fit of that backend on this GPU, else the plain
	 * roofline at the 16-bit efficiency */
	if (gp->has_attn[backend])
		co->attn = gp->attn[backend];
	else
		attn_fit_plain(&co->attn, cl->dtype == DTYPE_FP8 ? mfu16 : co->mfu,
			       cl->dtype == DTYPE_FP8 ? mbu16 : co->mbu);
	if (cost_keys_used(&cm, kind, cost_kinds[kind], err, errlen))
		return -1;
	if (co->kind == COST_PROFILE &&
	    (cost_profile_load(cl, x, &cm, err, errlen) || cost_attn_load(cl, &cm, err, errlen)))
		return -1;
	if (co->kind == COST_FIXED && co->base_ms + co->per_token_ms <= 0) {
		const char *cmp;
		src_at(&cm, "kind", &cmp);
		snprintf(err, errlen,
			 "%s: a fixed cost model needs base_ms or per_token_ms above 0", cmp);
		return -1;
	}

	return 0;
}

/* The cluster-wide host side: kv_transfer, tiers (swap needs DRAM: e is
 * the engine's source, which chose it) and thermal. */
static int load_host(const cJSON *c, const struct src *e, struct cluster_cfg *cl, char *err,
		     size_t errlen)
{
	char kp[256];
	static const char *const tier_keys[] = {"dram_gib_per_server", "nvme_gib_per_server", NULL};
	static const char *const thermal_keys[] = {"enabled",	  "ambient_c",	"tau_s",
						   "c_per_w",	  "throttle_c",
						   "resume_c",	  "throttle_factor", NULL};
	if (load_kv_transfer(c, cl, err, errlen))
		return -1;
	const cJSON *tiers = sub(c, "tiers"), *th = sub(c, "thermal");
	double dram = 0, nvme = 0;
	if (cfg_check_keys(tiers, "cluster.tiers", tier_keys, err, errlen) ||
	    cfg_number(tiers, "cluster.tiers", "dram_gib_per_server", 0, 1e9, &dram, err, errlen) ||
	    cfg_number(tiers, "cluster.tiers", "nvme_gib_per_server", 0, 1e9, &nvme, err, errlen) ||
	    cfg_check_keys(th, "cluster.thermal", thermal_keys, err, errlen))
		return -1;
	cl->tiers.dram_bytes = dram * 1073741824.0;
	cl->tiers.nvme_bytes = nvme * 1073741824.0;
	if (cl->engine.preempt_swap && dram <= 0) {
		snprintf(err, errlen,
			 "%s: \"swap\" moves preempted requests' KV to CPU DRAM; set "
			 "cluster.tiers.dram_gib_per_server above 0",
			 src_key(e, "preemption", kp, sizeof kp));
		return -1;
	}
	struct thermal_cfg *t = &cl->thermal;
	*t = (struct thermal_cfg){0, 25, 60, 0.07, 85, 80, 0.6};
	if (cfg_bool(th, "cluster.thermal", "enabled", &t->enabled, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "ambient_c", -50, 200, &t->ambient_c, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "tau_s", 1e-3, 1e6, &t->tau_s, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "c_per_w", 0, 10, &t->c_per_w, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "throttle_c", -50, 500, &t->throttle_c, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "resume_c", -50, 500, &t->resume_c, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "throttle_factor", 0.01, 1, &t->throttle_factor, err,
		       errlen))
		return -1;
	if (t->resume_c > t->throttle_c) {
		snprintf(err, errlen, "cluster.thermal.resume_c: expected at most throttle_c (%g), "
				      "got %g",
			 t->throttle_c, t->resume_c);
		return -1;
	}

	return 0;
}

/* Memory: the KV blocks per node, which must be at least one. */
static int load_memory(const char *where, struct pool_cfg *pl, char *err, size_t errlen)
{
	const struct cluster_cfg *cl = &pl->cl;
	const struct engine_cfg *en = &cl->engine;
	/* Memory: weights are split over tp GPUs; what is left of each GPU's
	 * usable share after weights and the activation reserve holds KV. */
	const struct cat_model *m = cl->model;
	double kv_bytes;
	pl->kv_blocks_per_node = cfg_kv_blocks(cl, en->gpu_memory_utilization,
					       en->activation_reserve_gib, &pl->weight_bytes,
					       &kv_bytes);
	if (pl->kv_blocks_per_node < 1) {
		const double gib = 1073741824.0;
		double usable = cl->tp * cl->gpu->hbm_bytes * en->gpu_memory_utilization;
		snprintf(err, errlen,
			 "%s: %s needs %.1f GiB of weights (%s); %d x %s has %.1f GiB, %.1f GiB "
			 "usable at gpu_memory_utilization %g with a %.1f GiB activation reserve per "
			 "GPU, leaving %s for KV cache; raise %s.tp or pick a larger GPU",
			 where, m->name, pl->weight_bytes / gib,
			 cl->dtype == DTYPE_FP8 ? "fp8" : "bf16", cl->tp, cl->gpu->name,
			 cl->tp * cl->gpu->hbm_bytes / gib, usable / gib,
			 en->gpu_memory_utilization, en->activation_reserve_gib,
			 kv_bytes > 0 ? "less than one block" : "no room", where);
		return -1;
	}
	if (pl->kv_blocks_per_node > 2000000000) {
		snprintf(err, errlen, "%s: %lld KV blocks per node is too many; raise "
				      "cluster.engine.kv_block_tokens",
			 where, (long long)pl->kv_blocks_per_node);
		return -1;
	}
	return 0;
}

/* One pool's cluster (or, without pools, the cluster's) into cl: the keys
 * x gives, checked as a whole cluster's always were; what is the whole
 * cluster's (model, engine.kv_block_tokens and prefix_caching, tiers,
 * thermal, kv_transfer) is only ever in x->def. *model is the cluster's
 * model, read here the first time (NULL on entry). where names the pool
 * ("cluster" without pools) in messages about it as a whole. */
static int load_pool(struct catalog *cat, const char *base_dir, const struct src *x,
		     const char *where, const struct cat_model **model, struct pool_cfg *pl,
		     char *err, size_t errlen)
{
	struct cluster_cfg *cl = &pl->cl;
	struct src e;
	if (load_replica(cat, base_dir, x, model, cl, err, errlen) ||
	    load_layout(cat, x, cl, err, errlen) || load_engine(x, cl, &e, err, errlen) ||
	    load_cost(x, cl, err, errlen) || load_host(x->def, &e, cl, err, errlen))
		return -1;
	return load_memory(where, pl, err, errlen);
}

int cfg_cluster_load(struct catalog *cat, const char *base_dir, const cJSON *c, const cJSON *own,
		     const char *own_path, const struct cat_model **model, struct pool_cfg *pl,
		     char *err, size_t errlen)
{
	struct src x = {own, c, "", "cluster"};
	if (own)
		snprintf(x.own_path, sizeof x.own_path, "%s", own_path);
	return load_pool(cat, base_dir, &x, own ? x.own_path : "cluster", model, pl, err, errlen);
}

int cfg_cluster_check_defaults(const cJSON *c, char *err, size_t errlen)
{
	if (cfg_check_keys(sub(c, "links"), "cluster.links", cl_link_keys, err, errlen) ||
	    cfg_check_keys(sub(c, "engine"), "cluster.engine", cl_engine_keys, err, errlen) ||
	    cfg_check_keys(sub(c, "cost_model"), "cluster.cost_model", cl_cost_keys, err, errlen))
		return -1;
	return 0;
}

void cfg_cost_free(struct cost_cfg *co)
{
	if (co->profile) {
		prof_free(co->profile);
		free(co->profile);
		co->profile = NULL;
	}
	struct attn_table **tabs[2] = {&co->attn_table, &co->attn_table_tp};
	for (int i = 0; i < 2; i++)
		if (*tabs[i]) {
			attn_table_free(*tabs[i]);
			free(*tabs[i]);
			*tabs[i] = NULL;
		}
}
