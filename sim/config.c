/* config: scenario JSON -> validated struct scenario. */
#include "sim/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "sim/cfg.h"
#include "sim/embedded.h"
#include "sim/hfconfig.h"
#include "sim/profile.h"

int cfg_read_json(const char *file, cJSON **out, char *err, size_t errlen)
{
	char *text = NULL;
	const char *src = kv_embedded_default_scenario;
	const char *label = "(embedded default scenario)";
	size_t len = strlen(src);
	if (file) {
		text = cfg_slurp(file, &len, err, errlen);
		if (!text)
			return -1;
		src = text;
		label = file;
	}
	if (strlen(src) != len) {
		snprintf(err, errlen, "%s: contains a NUL byte; expected a JSON text", label);
		free(text);
		return -1;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(src, &end, 1);
	if (!root) {
		const char *at = end ? end : cJSON_GetErrorPtr();
		int line = 1, col = 1;
		for (const char *p = src; at && p < at && *p; p++) {
			if (*p == '\n')
				line++, col = 1;
			else
				col++;
		}
		if (len == 0 || strspn(src, " \t\r\n") == len)
			snprintf(err, errlen, "%s: empty file; expected a JSON object", label);
		else
			snprintf(err, errlen, "%s:%d:%d: invalid JSON; expected a JSON object", label,
				 line, col);
		free(text);
		return -1;
	}
	free(text);
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s: expected a JSON object at the top level", label);
		cJSON_Delete(root);
		return -1;
	}
	char inner[768];
	if (cfg_check_unique_keys(root, "", inner, sizeof inner)) {
		snprintf(err, errlen, "%s: %s", label, inner);
		cJSON_Delete(root);
		return -1;
	}
	*out = root;
	return 0;
}

/* Splits a --set path step "name" or "name[i][j]..." at its first '[':
 * *idx gets where the indexes start (NULL: none). -1 when the brackets
 * are not whole numbers in [..]. */
static int set_step(char *tok, char **idx)
{
	char *b = strchr(tok, '[');
	*idx = b;
	if (!b)
		return 0;
	if (b == tok)
		return -1;
	for (char *p = b; *p;) {
		if (*p != '[' || !(p[1] >= '0' && p[1] <= '9'))
			return -1;
		p += 2;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p != ']')
			return -1;
		p++;
	}
	return 0;
}

/* The next index of a step at *idx ("[3]..."), *idx moved past it. */
static long set_index(char **idx)
{
	char *end;
	long i = strtol(*idx + 1, &end, 10);
	*idx = end + 1;
	return i;
}

int cfg_apply_set(cJSON *root, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment) {
		snprintf(err, errlen, "--set %s: expected PATH=VALUE, e.g. cluster.nodes=16",
			 assignment);
		return -1;
	}
	char path[256];
	size_t plen = (size_t)(eq - assignment);
	if (plen >= sizeof path) {
		snprintf(err, errlen, "--set: path too long");
		return -1;
	}
	memcpy(path, assignment, plen);
	path[plen] = 0;
	cJSON *val = cJSON_Parse(eq + 1);
	if (!val)
		val = cJSON_CreateString(eq + 1);
	if (!val) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char inner[768];
	if (cfg_check_unique_keys(val, path, inner, sizeof inner)) {
		snprintf(err, errlen, "--set %s: %s", assignment, inner);
		cJSON_Delete(val);
		return -1;
	}
	/* where: the path walked so far, for messages ("cluster.pools[1]") */
	char where[256] = "";
	cJSON *obj = root;
	char *save = NULL, *tok = strtok_r(path, ".", &save);
	while (tok) {
		char *next = strtok_r(NULL, ".", &save), *idx;
		if (set_step(tok, &idx)) {
			snprintf(err, errlen, "--set %s: %s: expected a key, or a key and list "
					      "indexes such as pools[0]", assignment, tok);
			cJSON_Delete(val);
			return -1;
		}
		if (idx)
			*idx = 0; /* tok is the key; the indexes follow it */
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof where - wl, "%s%s", wl ? "." : "", tok);
		if (!next && !idx) {
			if (cJSON_GetObjectItemCaseSensitive(obj, tok))
				cJSON_ReplaceItemInObjectCaseSensitive(obj, tok, val);
			else
				cJSON_AddItemToObject(obj, tok, val);
			return 0;
		}
		cJSON *child = cJSON_GetObjectItemCaseSensitive(obj, tok);
		if (idx) {
			/* A list is indexed, never made: an index names an item
			 * that exists. */
			*idx = '[';
			while (*idx) {
				long i = set_index(&idx);
				int n = cJSON_IsArray(child) ? cJSON_GetArraySize(child) : 0;
				if (!cJSON_IsArray(child) || i >= n) {
					if (!cJSON_IsArray(child))
						snprintf(err, errlen, "--set %s: %s: %s", assignment, where,
							 child ? "not a list" : "missing (an index names an item "
										"of a list that exists)");
					else
						snprintf(err, errlen, "--set %s: %s[%ld]: no such item (the list "
								      "has %d)", assignment, where, i, n);
					cJSON_Delete(val);
					return -1;
				}
				wl = strlen(where);
				snprintf(where + wl, sizeof where - wl, "[%ld]", i);
				if (!next && !*idx) {
					cJSON_ReplaceItemInArray(child, (int)i, val);
					return 0;
				}
				child = cJSON_GetArrayItem(child, (int)i);
			}
		} else if (!child) {
			child = cJSON_AddObjectToObject(obj, tok);
		}
		if (!cJSON_IsObject(child)) {
			const char *step = strrchr(where, '.'); /* this step: "nodes", "pools[1]" */
			snprintf(err, errlen, "--set %s: %s is not an object", assignment,
				 step ? step + 1 : where);
			cJSON_Delete(val);
			return -1;
		}
		obj = child;
		tok = next;
	}
	cJSON_Delete(val);
	snprintf(err, errlen, "--set %s: empty path", assignment);
	return -1;
}

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
    "max_span_iterations", NULL};
static const char *const cl_cost_keys[] = {"kind",    "mfu",	   "mbu",
					"overhead_ms", "base_ms", "per_token_ms",
					"knee",    "op_overhead_us", "profiles",
					"overhead_per_seq_ms", "attention", NULL};

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
	static const char *const used[3][9] = {
	    {"kind", "mfu", "mbu", "knee", "op_overhead_us", "overhead_ms", "overhead_per_seq_ms",
	     "attention", NULL},
	    {"kind", "base_ms", "per_token_ms", NULL},
	    {"kind", "profiles", "overhead_ms", "overhead_per_seq_ms", "attention", "mfu", "mbu",
	     NULL}};
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
static int load_layout(struct scenario *s, const struct src *x, struct cluster_cfg *cl, char *err,
		       size_t errlen)
{
	char name[CAT_NAME_LEN] = "", sp[256], kp[256];
	if (src_string(x, "server", name, sizeof name, err, errlen))
		return -1;
	src_key(x, "server", sp, sizeof sp);
	const struct cat_server *sv = name[0] ? catalog_server(&s->cat, name)
					      : catalog_server_for(&s->cat, cl->gpu->name);
	if (!sv) {
		char names[1024];
		catalog_names(&s->cat, "servers", names, sizeof names);
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
	    pick_link(&s->cat, &links, "intra_server", cl->gpu->link, &cl->intra_server, err,
		      errlen) ||
	    pick_link(&s->cat, &links, "inter_server", sv->nic, &cl->inter_server, err, errlen) ||
	    pick_link(&s->cat, &links, "host", sv->host, &cl->host, err, errlen) ||
	    pick_link(&s->cat, &links, "nvme", "nvme-gen5", &cl->nvme, err, errlen))
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
 * to the scenario's folder, as workload paths are) and added to the
 * scenario's catalog. */
static int load_hf_model(struct scenario *s, const char *model, const struct cat_model **out,
			 char *err, size_t errlen)
{
	char path[sizeof s->base_dir + 4096], inner[1024];
	if (model[0] == '/' || !s->base_dir[0])
		snprintf(path, sizeof path, "%s", model);
	else
		snprintf(path, sizeof path, "%s/%s", s->base_dir, model);
	struct cat_model m;
	if (hf_model_load(path, &m, inner, sizeof inner)) {
		snprintf(err, errlen, "cluster.model: %s", inner);
		return -1;
	}
	if (!(*out = catalog_add_model(&s->cat, &m))) {
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

/* One pool's cluster (or, without pools, the cluster's) into cl: the keys
 * x gives, checked as a whole cluster's always were; what is the whole
 * cluster's (model, engine.kv_block_tokens and prefix_caching, tiers,
 * thermal, kv_transfer) is only ever in x->def. *model is the cluster's
 * model, read here the first time (NULL on entry). where names the pool
 * ("cluster" without pools) in messages about it as a whole. */
static int load_pool(struct scenario *s, const struct src *x, const char *where,
		     const struct cat_model **model, struct pool_cfg *pl, char *err, size_t errlen)
{
	static const char *const dtypes[] = {"bf16", "fp8", NULL};
	static const char *const cost_kinds[] = {"roofline", "fixed", "profile", NULL};
	static const char *const preempt_modes[] = {"recompute", "swap", NULL};
	struct cluster_cfg *cl = &pl->cl;
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
	cl->gpu = catalog_gpu(&s->cat, gpu);
	if (!*model && (hf_is_config_path(mname) ? load_hf_model(s, mname, model, err, errlen)
						 : (*model = catalog_model(&s->cat, mname), 0)))
		return -1;
	cl->model = *model;
	if (!cl->gpu || !cl->model) {
		char names[1024];
		int is_gpu = !cl->gpu;
		catalog_names(&s->cat, is_gpu ? "gpus" : "models", names, sizeof names);
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

	if (load_layout(s, x, cl, err, errlen))
		return -1;

	struct src e;
	src_sub(x, "engine", &e);
	struct engine_cfg *en = &cl->engine;
	int preempt = 0;
	en->gpu_memory_utilization = CFG_GPU_MEMORY_UTILIZATION;
	en->prefix_caching = 1;
	en->activation_reserve_gib = CFG_ACTIVATION_RESERVE_GIB;
	if (src_check_keys(&e, cl_engine_keys, err, errlen))
		return -1;
	v = 16;
	if (src_int(&e, "kv_block_tokens", 1, 4096, &v, err, errlen))
		return -1;
	en->kv_block_tokens = (int)v;
	v = 256;
	if (src_int(&e, "max_num_seqs", 1, 65536, &v, err, errlen))
		return -1;
	en->max_num_seqs = (int)v;
	v = 8192;
	if (src_int(&e, "max_num_batched_tokens", 1, 10000000, &v, err, errlen))
		return -1;
	en->max_num_batched_tokens = (int)v;
	v = 256;
	if (src_int(&e, "max_span_iterations", 1, 65536, &v, err, errlen))
		return -1;
	en->max_span_iterations = (int)v;
	if (src_number(&e, "gpu_memory_utilization", 0.01, 1.0, &en->gpu_memory_utilization, err,
		       errlen) ||
	    src_number(&e, "activation_reserve_gib", 0, 1e6, &en->activation_reserve_gib, err,
		       errlen) ||
	    src_bool(&e, "prefix_caching", &en->prefix_caching, err, errlen) ||
	    src_enum(&e, "preemption", preempt_modes, &preempt, err, errlen))
		return -1;

	struct src cm;
	src_sub(x, "cost_model", &cm);
	struct cost_cfg *co = &cl->cost;
	int kind = COST_ROOFLINE;
	/* The GPU's calibrated roofline when it has one, else DESIGN's
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
	snprintf(co->profiles, sizeof co->profiles, "../shared/profiles/vidur");
	/* The engine's CPU time per iteration: the GPU's entry (catalog), or
	 * none for a GPU added without one. */
	co->overhead_ms = gp->has_overhead ? gp->overhead_base_ms : 0;
	co->overhead_per_seq_ms = gp->has_overhead ? gp->overhead_per_seq_ms : 0;
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

	en->preempt_swap = preempt == 1;
	static const char *const tier_keys[] = {"dram_gib_per_server", "nvme_gib_per_server", NULL};
	static const char *const thermal_keys[] = {"enabled",	  "ambient_c",	"tau_s",
						   "c_per_w",	  "idle_power_frac", "throttle_c",
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
	if (en->preempt_swap && dram <= 0) {
		snprintf(err, errlen,
			 "%s: \"swap\" moves preempted requests' KV to CPU DRAM; set "
			 "cluster.tiers.dram_gib_per_server above 0",
			 src_key(&e, "preemption", kp, sizeof kp));
		return -1;
	}
	struct thermal_cfg *t = &cl->thermal;
	*t = (struct thermal_cfg){0, 25, 60, 0.07, 0.2, 85, 80, 0.6};
	if (cfg_bool(th, "cluster.thermal", "enabled", &t->enabled, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "ambient_c", -50, 200, &t->ambient_c, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "tau_s", 1e-3, 1e6, &t->tau_s, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "c_per_w", 0, 10, &t->c_per_w, err, errlen) ||
	    cfg_number(th, "cluster.thermal", "idle_power_frac", 0, 1, &t->idle_power_frac, err,
		       errlen) ||
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
static int load_pool_heads(struct scenario *s, const cJSON *c, const cJSON *pools, char *err,
			   size_t errlen)
{
	static const char *const pool_keys[] = {"name", "role", "nodes", "gpu", "tp", "dtype",
						"nodes_per_server", "server", "links", "engine",
						"cost_model", NULL};
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
	if (!(s->pools = calloc((size_t)n, sizeof *s->pools))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->n_pools = n;
	int i = 0;
	for (const cJSON *p = pools->child; p; p = p->next, i++) {
		struct pool_cfg *pl = &s->pools[i];
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
			if (!strcmp(s->pools[j].name, pl->name)) {
				snprintf(err, errlen,
					 "%s: \"%s\" is also the name of cluster.pools[%d]; expected "
					 "unique pool names",
					 cfg_join(kp, sizeof kp, path, "name"), pl->name, j);
				return -1;
			}
	}
	int has[3] = {0, 0, 0};
	for (i = 0; i < n; i++)
		has[s->pools[i].role] = 1;
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
	s->disaggregated = has[POOL_PREFILL];
	return 0;
}

/* cluster: one pool of cluster.nodes nodes ("cluster", mixed), or
 * cluster.pools, each read as a whole cluster of its own keys over the
 * cluster's. Nodes and servers are numbered pool by pool; scenario.cluster
 * is pool 0's with the nodes of all. */
static int load_cluster(struct scenario *s, const cJSON *c, char *err, size_t errlen)
{
	static const char *const keys[] = {"nodes", "gpu",   "model",      "tp",   "dtype",
					   "nodes_per_server", "server", "links", "engine",
					   "cost_model", "tiers", "thermal",
					   "kv_transfer", "pools", NULL};
	if (cfg_check_keys(c, "cluster", keys, err, errlen))
		return -1;
	const cJSON *pools = sub(c, "pools");
	const struct cat_model *model = NULL;
	struct src x = {NULL, c, "", "cluster"};
	if (!pools) {
		if (!(s->pools = calloc(1, sizeof *s->pools))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		s->n_pools = 1;
		snprintf(s->pools[0].name, sizeof s->pools[0].name, "cluster");
		if (load_pool(s, &x, "cluster", &model, &s->pools[0], err, errlen))
			return -1;
	} else {
		/* the cluster's own sub-objects are checked once, not per pool */
		if (cfg_check_keys(sub(c, "links"), "cluster.links", cl_link_keys, err, errlen) ||
		    cfg_check_keys(sub(c, "engine"), "cluster.engine", cl_engine_keys, err,
				   errlen) ||
		    cfg_check_keys(sub(c, "cost_model"), "cluster.cost_model", cl_cost_keys, err,
				   errlen))
			return -1;
		if (load_pool_heads(s, c, pools, err, errlen))
			return -1;
		int i = 0;
		for (const cJSON *p = pools->child; p; p = p->next, i++) {
			snprintf(x.own_path, sizeof x.own_path, "cluster.pools[%d]", i);
			x.own = p;
			if (load_pool(s, &x, x.own_path, &model, &s->pools[i], err, errlen)) {
				err_for_pool(err, errlen, i);
				return -1;
			}
		}
		if (unused_defaults(c, pools, err, errlen))
			return -1;
		if (s->disaggregated && s->pools[0].cl.kv_transfer == KVX_NONE) {
			snprintf(err, errlen,
				 "cluster.kv_transfer: a prefill pool sends each request's KV to a "
				 "decode pool, and \"none\" leaves no path; expected nixl or lmcache");
			return -1;
		}
	}
	int64_t nodes = 0, servers = 0;
	for (int i = 0; i < s->n_pools; i++) {
		struct pool_cfg *pl = &s->pools[i];
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
	/* Pool 0's keys stand for the cluster's; its owned cost tables are
	 * shared, not copied (cfg_scenario_free frees them as pool 0's). */
	s->cluster = s->pools[0].cl;
	s->cluster.nodes = (int)nodes;
	s->kv_blocks_per_node = s->pools[0].kv_blocks_per_node;
	s->weight_bytes = s->pools[0].weight_bytes;
	return 0;
}

/* router.policy_params kept (the simulator checks every entry against its
 * policy), and the entry of the policy in use applied: its keys over
 * router.params, so that neither is ignored. 0, or -1 (no memory). */
static int own_policy_params(struct router_cfg *rc, const cJSON *pp, char *err, size_t errlen)
{
	snprintf(rc->params_path, sizeof rc->params_path, "router.params");
	if (!pp)
		return 0;
	rc->policy_params = cJSON_Duplicate(pp, 1);
	if (!rc->policy_params)
		goto oom;
	const cJSON *mine = cJSON_GetObjectItemCaseSensitive(pp, rc->policy);
	if (!mine)
		return 0;
	if (!rc->params) {
		snprintf(rc->params_path, sizeof rc->params_path, "router.policy_params.%s",
			 rc->policy);
		if (!(rc->params = cJSON_CreateObject()))
			goto oom;
	}
	for (const cJSON *c = mine->child; c; c = c->next) {
		cJSON *v = cJSON_Duplicate(c, 1);
		if (!v)
			goto oom;
		/* router.health-like objects merge field by field, as router.<key>
		 * and policy_params do: the policy's entry wins where both give one */
		cJSON *had = cJSON_GetObjectItemCaseSensitive(rc->params, c->string);
		if (mech_is_key(c->string) && cJSON_IsObject(had) && cJSON_IsObject(v)) {
			for (cJSON *f = had->child; f; f = f->next)
				if (!cJSON_GetObjectItemCaseSensitive(v, f->string)) {
					cJSON *fv = cJSON_Duplicate(f, 1);
					if (!fv || !cJSON_AddItemToObject(v, f->string, fv)) {
						cJSON_Delete(fv);
						cJSON_Delete(v);
						goto oom;
					}
				}
		}
		cJSON_DeleteItemFromObjectCaseSensitive(rc->params, c->string);
		if (!cJSON_AddItemToObject(rc->params, c->string, v)) {
			cJSON_Delete(v);
			goto oom;
		}
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* A disaggregated request's decode node: router.decode_policy (default
 * least_loaded, by KV in use: DESIGN's "least-loaded by KV blocks"; KV
 * utilisation, used blocks over capacity, compares pools of different
 * GPUs fairly) with router.policy_params.<decode_policy> (its mechanism
 * keys already stripped) as its params; and router.disagg. The policy's
 * name and params are checked by the simulator, against the registry. */
static int load_decode(struct router_cfg *rc, const cJSON *r, char *err, size_t errlen)
{
	static const char *const disagg_keys[] = {"min_prefill_tokens", NULL};
	snprintf(rc->decode_policy, sizeof rc->decode_policy, "least_loaded");
	if (cfg_string(r, "router", "decode_policy", rc->decode_policy, sizeof rc->decode_policy,
		       err, errlen))
		return -1;
	const cJSON *mine = sub(rc->policy_params, rc->decode_policy);
	snprintf(rc->decode_params_path, sizeof rc->decode_params_path, "router.decode_policy");
	if (mine)
		snprintf(rc->decode_params_path, sizeof rc->decode_params_path,
			 "router.policy_params.%s", rc->decode_policy);
	if (mine && !(rc->decode_params = cJSON_Duplicate(mine, 1)))
		goto oom;
	/* least_loaded measures KV utilisation unless its entry says otherwise */
	if (!strcmp(rc->decode_policy, "least_loaded") && !sub(rc->decode_params, "metric")) {
		if (!rc->decode_params && !(rc->decode_params = cJSON_CreateObject()))
			goto oom;
		if (!cJSON_AddStringToObject(rc->decode_params, "metric", "kv_util"))
			goto oom;
	}
	/* llm-d's P/D threshold (pd-profile-handler's threshold, 0 in its P/D
	 * guide): a request with fewer prompt tokens to prefill is prefilled
	 * where it decodes; 0 disaggregates every request a prefill node is
	 * picked for */
	const cJSON *d = sub(r, "disagg");
	int64_t v = 0;
	if (cfg_check_keys(d, "router.disagg", disagg_keys, err, errlen) ||
	    cfg_int(d, "router.disagg", "min_prefill_tokens", 0, 100000000, &v, err, errlen))
		return -1;
	rc->min_prefill_tokens = (int)v;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int load_router(struct scenario *s, const cJSON *r, char *err, size_t errlen)
{
	static const char *const keys[] = {"policy",     "params",
					   "migration",  "kv_watermark",
					   "max_queue_per_node", "load_report_interval_ms",
					   "store",      "replicas",
					   "max_retries", "policy_params",
					   "new_session_queue_frac", "store_read_ms",
					   "store_write_ms", "hash_ns_per_token",
					   "watermark_action", "offload", "shed",
					   "shed_wait_slo_multiple", "health",
					   "decode_policy", "disagg", NULL};
	struct router_cfg *rc = &s->router;
	if (cfg_check_keys(r, "router", keys, err, errlen))
		return -1;
	snprintf(rc->policy, sizeof rc->policy, "session_affinity");
	int64_t q = 512;
	if (cfg_string(r, "router", "policy", rc->policy, sizeof rc->policy, err, errlen) ||
	    mech_parse((cJSON *)r, "router", 0, &rc->mech_all, err, errlen) ||
	    cfg_int(r, "router", "max_queue_per_node", 1, 100000000, &q, err, errlen))
		return -1;
	rc->max_queue_per_node = (int)q;
	const cJSON *params = sub(r, "params");
	if (cfg_expect_object(params, "router.params", err, errlen))
		return -1;
	if (params) {
		rc->params = cJSON_Duplicate(params, 1);
		if (!rc->params) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	const cJSON *pp = sub(r, "policy_params");
	if (cfg_expect_object(pp, "router.policy_params", err, errlen))
		return -1;
	for (const cJSON *c = pp ? pp->child : NULL; c; c = c->next) {
		char p[256];
		snprintf(p, sizeof p, "router.policy_params.%s", c->string);
		if (cfg_expect_object(c, p, err, errlen))
			return -1;
	}
	if (own_policy_params(rc, pp, err, errlen))
		return -1;
	/* Mechanism keys among a policy's parameters are the router's: each
	 * entry's are checked, the policy in use's kept, and none reaches a
	 * policy. */
	for (cJSON *c = rc->policy_params ? rc->policy_params->child : NULL; c; c = c->next) {
		char p[256];
		struct mech_set unused;
		snprintf(p, sizeof p, "router.policy_params.%s", c->string);
		if (mech_parse(c, p, 1, &unused, err, errlen))
			return -1;
	}
	if (mech_parse(rc->params, rc->params_path, 1, &rc->mech_own, err, errlen) ||
	    load_decode(rc, r, err, errlen))
		return -1;
	static const char *const stores[] = {"local", "redis", "etcd", NULL};
	/* Typical figures: a Redis GET/SET in the same data centre ~0.2 ms;
	 * an etcd linearizable read ~1 ms, a write (raft commit) ~2 ms. */
	static const double store_read_ms[] = {0, 0.2, 1.0}, store_write_ms[] = {0, 0.2, 2.0};
	int store = STORE_LOCAL;
	int64_t replicas = 1, retries = 3;
	double hash_ns = 5;
	rc->kv_watermark = 0.85;
	rc->new_session_queue_frac = 0.75;
	if (cfg_number(r, "router", "kv_watermark", 0.01, 1, &rc->kv_watermark, err, errlen) ||
	    cfg_number(r, "router", "new_session_queue_frac", 0, 1, &rc->new_session_queue_frac,
		       err, errlen) ||
	    cfg_enum(r, "router", "store", stores, &store, err, errlen) ||
	    cfg_int(r, "router", "replicas", 1, 1024, &replicas, err, errlen) ||
	    cfg_int(r, "router", "max_retries", 0, 1000, &retries, err, errlen) ||
	    cfg_number(r, "router", "hash_ns_per_token", 0, 1e9, &hash_ns, err, errlen))
		return -1;
	double rd = store_read_ms[store], wr = store_write_ms[store];
	if (cfg_number(r, "router", "store_read_ms", 0, 1e9, &rd, err, errlen) ||
	    cfg_number(r, "router", "store_write_ms", 0, 1e9, &wr, err, errlen))
		return -1;
	rc->store = (enum store_kind)store;
	rc->store_read_s = rd * 1e-3;
	rc->store_write_s = wr * 1e-3;
	rc->hash_s_per_token = hash_ns * 1e-9;
	rc->replicas = (int)replicas;
	rc->max_retries = (int)retries;
	return 0;
}

/* faults: [{kind, node|server, at_s, ...}], checked against the cluster. */
static int load_faults(struct scenario *s, const cJSON *f, char *err, size_t errlen)
{
	static const char *const kinds[] = {"crash", "slow", "link", "cooling", NULL};
	static const char *const crash_keys[] = {"kind", "node", "at_s", "recover_after_s", NULL};
	static const char *const slow_keys[] = {"kind", "node", "at_s", "duration_s", "factor", NULL};
	static const char *const link_keys[] = {"kind", "server", "at_s", "duration_s", "factor",
						NULL};
	static const char *const cool_keys[] = {"kind", "server", "at_s", "duration_s", "ambient_c",
						NULL};
	static const char *const *const keys[] = {crash_keys, slow_keys, link_keys, cool_keys};
	if (!f)
		return 0;
	if (!cJSON_IsArray(f)) {
		snprintf(err, errlen, "faults: expected an array of fault objects");
		return -1;
	}
	int n = cJSON_GetArraySize(f);
	s->faults = calloc(n > 0 ? (size_t)n : 1, sizeof *s->faults);
	if (!s->faults) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* servers are numbered pool by pool, as nodes are */
	const struct pool_cfg *last = &s->pools[s->n_pools - 1];
	int servers = last->first_server + last->n_servers;
	int k = 0;
	for (const cJSON *e = f->child; e; e = e->next, k++) {
		char p[64];
		snprintf(p, sizeof p, "faults[%d]", k);
		struct fault_cfg *fc = &s->faults[k];
		int kind = -1;
		if (cfg_expect_object(e, p, err, errlen))
			return -1;
		if (!cJSON_GetObjectItemCaseSensitive(e, "kind")) {
			snprintf(err, errlen, "%s.kind: missing (expected crash, slow, link or cooling)", p);
			return -1;
		}
		if (cfg_enum(e, p, "kind", kinds, &kind, err, errlen) ||
		    cfg_check_keys(e, p, keys[kind], err, errlen))
			return -1;
		fc->kind = (enum fault_kind)kind;
		const char *tkey = kind <= FAULT_SLOW ? "node" : "server";
		int64_t hi = kind <= FAULT_SLOW ? s->cluster.nodes - 1 : servers - 1, target = -1;
		if (!cJSON_GetObjectItemCaseSensitive(e, tkey) ||
		    !cJSON_GetObjectItemCaseSensitive(e, "at_s")) {
			snprintf(err, errlen, "%s: a %s fault needs \"%s\" and \"at_s\"", p,
				 kinds[kind], tkey);
			return -1;
		}
		fc->duration_s = -1;
		fc->factor = 1;
		fc->ambient_c = s->cluster.thermal.ambient_c;
		if (cfg_int(e, p, tkey, 0, hi, &target, err, errlen) ||
		    cfg_number(e, p, "at_s", 0, 1e9, &fc->at_s, err, errlen) ||
		    cfg_number(e, p, kind == FAULT_CRASH ? "recover_after_s" : "duration_s", 0, 1e9,
			       &fc->duration_s, err, errlen) ||
		    cfg_number(e, p, "factor", 1e-6, 1, &fc->factor, err, errlen) ||
		    cfg_number(e, p, "ambient_c", -50, 200, &fc->ambient_c, err, errlen))
			return -1;
		fc->target = (int)target;
		if (kind != FAULT_CRASH && fc->duration_s < 0) {
			snprintf(err, errlen, "%s.duration_s: missing (a %s fault needs how long it lasts)",
				 p, kinds[kind]);
			return -1;
		}
		if (kind == FAULT_COOLING && !s->cluster.thermal.enabled) {
			snprintf(err, errlen, "%s: a cooling fault acts through the thermal model; set "
					      "cluster.thermal.enabled to true",
				 p);
			return -1;
		}
	}
	s->n_faults = n;
	return 0;
}

int cfg_scenario_load(struct scenario *s, const cJSON *root, const char *catalog_file, char *err,
		      size_t errlen)
{
	return cfg_scenario_load_from(s, root, catalog_file, NULL, err, errlen);
}

int cfg_scenario_load_from(struct scenario *s, const cJSON *root, const char *catalog_file,
			   const char *source, char *err, size_t errlen)
{
	static const char *const keys[] = {"name",   "seed",   "duration_s", "cluster",
					   "router", "workload", "faults",   "slo",
					   "output", "catalog",  NULL};
	memset(s, 0, sizeof *s);
	cfg_scenario_set_source(s, source);
	if (cfg_check_keys(root, "", keys, err, errlen) || cfg_check_utf8(root, "", err, errlen))
		return -1;
	if (catalog_load_builtin(&s->cat, err, errlen))
		return -1;
	if (catalog_file) {
		cJSON *cj = NULL;
		char inner[768];
		if (cfg_read_json(catalog_file, &cj, err, errlen))
			goto fail;
		int rc = cfg_check_utf8(cj, "", inner, sizeof inner) ||
			 catalog_merge(&s->cat, cj, "", inner, sizeof inner);
		cJSON_Delete(cj);
		if (rc) {
			snprintf(err, errlen, "%s: %s", catalog_file, inner);
			goto fail;
		}
	}
	if (catalog_merge(&s->cat, sub(root, "catalog"), "catalog", err, errlen))
		goto fail;

	snprintf(s->name, sizeof s->name, "default");
	int64_t seed = 1;
	s->duration_s = 600;
	if (cfg_string(root, "", "name", s->name, sizeof s->name, err, errlen) ||
	    cfg_int(root, "", "seed", 0, (int64_t)1 << 53, &seed, err, errlen) ||
	    cfg_number(root, "", "duration_s", 1e-6, 1e9, &s->duration_s, err, errlen))
		goto fail;
	s->seed = (uint64_t)seed;
	if (load_cluster(s, sub(root, "cluster"), err, errlen) ||
	    load_router(s, sub(root, "router"), err, errlen))
		goto fail;

	const cJSON *w = sub(root, "workload");
	if (cfg_expect_object(w, "workload", err, errlen))
		goto fail;
	s->workload = w ? cJSON_Duplicate(w, 1) : cJSON_CreateObject();
	if (!s->workload) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}

	if (load_faults(s, sub(root, "faults"), err, errlen))
		goto fail;
	static const char *const slo_keys[] = {"ttft_p99_s", "tpot_p99_s", NULL};
	static const char *const out_keys[] = {"timeseries_interval_s", NULL};
	const cJSON *slo = sub(root, "slo"), *out = sub(root, "output");
	s->slo_ttft_p99_s = 2.0;
	s->slo_tpot_p99_s = 0.1;
	s->timeseries_interval_s = 1.0;
	if (cfg_check_keys(slo, "slo", slo_keys, err, errlen) ||
	    cfg_number(slo, "slo", "ttft_p99_s", 1e-9, 1e9, &s->slo_ttft_p99_s, err, errlen) ||
	    cfg_number(slo, "slo", "tpot_p99_s", 1e-9, 1e9, &s->slo_tpot_p99_s, err, errlen) ||
	    cfg_check_keys(out, "output", out_keys, err, errlen) ||
	    cfg_number(out, "output", "timeseries_interval_s", 1e-3, 1e9,
		       &s->timeseries_interval_s, err, errlen))
		goto fail;
	return 0;
fail:
	cfg_scenario_free(s);
	return -1;
}

/* The tables a cost model owns. */
static void cost_free(struct cost_cfg *co)
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

void cfg_scenario_free(struct scenario *s)
{
	/* scenario.cluster shares pool 0's tables: each pool's are freed once */
	if (s->pools) {
		for (int i = 0; i < s->n_pools; i++)
			cost_free(&s->pools[i].cl.cost);
		s->cluster.cost.profile = NULL;
		s->cluster.cost.attn_table = s->cluster.cost.attn_table_tp = NULL;
	}
	cost_free(&s->cluster.cost);
	free(s->pools);
	s->pools = NULL;
	s->n_pools = 0;
	catalog_free(&s->cat);
	cJSON_Delete(s->router.params);
	cJSON_Delete(s->router.policy_params);
	cJSON_Delete(s->router.decode_params);
	s->router.policy_params = NULL;
	s->router.decode_params = NULL;
	cJSON_Delete(s->workload);
	free(s->faults);
	s->faults = NULL;
	s->router.params = NULL;
	s->workload = NULL;
}

void cfg_scenario_set_source(struct scenario *s, const char *file)
{
	s->base_dir[0] = 0;
	if (!file)
		return;
	const char *slash = strrchr(file, '/');
	if (!slash)
		snprintf(s->base_dir, sizeof s->base_dir, ".");
	else if (slash == file)
		snprintf(s->base_dir, sizeof s->base_dir, "/");
	else
		snprintf(s->base_dir, sizeof s->base_dir, "%.*s", (int)(slash - file), file);
}
