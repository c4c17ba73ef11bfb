/* catalog: parse and merge the GPU, model and link tables. */
#include "model/catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "base/embedded.h"

/* A GPU's "power" ({"idle_w", "memory_weight"}), either field over what
 * the GPU has; the idle power at most its TDP. */
static int parse_gpu_power(const cJSON *e, const char *path, struct cat_gpu *g, char *err,
			   size_t errlen)
{
	static const char *const keys[] = {"idle_w", "memory_weight", NULL};
	const cJSON *pw = cJSON_GetObjectItemCaseSensitive(e, "power");
	char p[200];
	snprintf(p, sizeof p, "%s.power", path);
	if (pw && (cfg_expect_object(pw, p, err, errlen) ||
		   cfg_check_keys(pw, p, keys, err, errlen) ||
		   cfg_number(pw, p, "memory_weight", 0, 1, &g->memory_weight, err, errlen)))
		return -1;
	int own = cJSON_GetObjectItemCaseSensitive(pw, "idle_w") != NULL;
	if (own) {
		if (cfg_number(pw, p, "idle_w", 0, 1e5, &g->idle_w, err, errlen))
			return -1;
		g->has_idle_w = 1;
	}
	if (catalog_gpu_idle_w(g) <= g->tdp_w)
		return 0;
	if (own)
		snprintf(err, errlen, "%s.idle_w: expected at most the GPU's tdp_w (%g), got %g", p,
			 g->tdp_w, g->idle_w);
	else
		snprintf(err, errlen, "%s.tdp_w: expected at least the GPU's idle power (%g W, "
				      "power.idle_w), got %g",
			 path, catalog_gpu_idle_w(g), g->tdp_w);
	return -1;
}

/* A GPU's "attention" ({backend: {"prefill": {...}, "decode": {...},
 * "profile"}}), "iteration_overhead" ({"base_ms", "per_seq_ms"}) and "fp8"
 * ({"mfu", "mbu"}): the calibrated attention, engine overhead and FP8
 * efficiencies. */
static int parse_gpu_timing(const cJSON *e, const char *path, struct cat_gpu *g, char *err,
			    size_t errlen)
{
	static const char *const fit_keys[] = {"prefill", "decode", "profile", NULL};
	static const char *const pre_keys[] = {"fixed_us", "efficiency", "causal", "rows_half",
					       "context_half", NULL};
	static const char *const dec_keys[] = {"fixed_us", "per_head_us", "bandwidth", NULL};
	static const char *const ov_keys[] = {"base_ms", "per_seq_ms", NULL};
	static const char *const fp8_keys[] = {"mfu", "mbu", NULL};
	char p[200], q[240];
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "attention");
	snprintf(p, sizeof p, "%s.attention", path);
	if (cfg_expect_object(at, p, err, errlen) ||
	    cfg_check_keys(at, p, attn_backend_names, err, errlen))
		return -1;
	for (int b = 0; at && b < ATTN_BACKENDS; b++) {
		const cJSON *fe = cJSON_GetObjectItemCaseSensitive(at, attn_backend_names[b]);
		if (!fe)
			continue;
		struct attn_fit *f = &g->attn[b];
		cfg_join(p, sizeof p, path, "attention");
		cfg_join(q, sizeof q, p, attn_backend_names[b]);
		const cJSON *pre = cJSON_GetObjectItemCaseSensitive(fe, "prefill");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(fe, "decode");
		if (cfg_expect_object(fe, q, err, errlen) ||
		    cfg_check_keys(fe, q, fit_keys, err, errlen))
			return -1;
		/* a backend the GPU has is overridden field by field; a new one
		 * needs at least its efficiencies */
		double pf_us = f->pre_fixed_s * 1e6, df_us = f->dec_fixed_s * 1e6;
		double ph_us = f->per_head_s * 1e6;
		if (!g->has_attn[b])
			memset(f, 0, sizeof *f), pf_us = df_us = ph_us = 0;
		cfg_join(p, sizeof p, q, "prefill");
		if (cfg_expect_object(pre, p, err, errlen) ||
		    cfg_check_keys(pre, p, pre_keys, err, errlen) ||
		    cfg_number(pre, p, "fixed_us", 0, 1e6, &pf_us, err, errlen) ||
		    cfg_number(pre, p, "efficiency", 1e-3, 1, &f->efficiency, err, errlen) ||
		    cfg_number(pre, p, "causal", 0.01, 1, &f->causal, err, errlen) ||
		    cfg_number(pre, p, "rows_half", 0, 1e9, &f->rows_half, err, errlen) ||
		    cfg_number(pre, p, "context_half", 0, 1e9, &f->context_half, err, errlen))
			return -1;
		cfg_join(p, sizeof p, q, "decode");
		if (cfg_expect_object(dec, p, err, errlen) ||
		    cfg_check_keys(dec, p, dec_keys, err, errlen) ||
		    cfg_number(dec, p, "fixed_us", 0, 1e6, &df_us, err, errlen) ||
		    cfg_number(dec, p, "per_head_us", 0, 1e6, &ph_us, err, errlen) ||
		    cfg_number(dec, p, "bandwidth", 1e-3, 1, &f->bandwidth, err, errlen) ||
		    cfg_string(fe, q, "profile", f->profile, sizeof f->profile, err, errlen))
			return -1;
		if (f->efficiency <= 0 || f->causal <= 0 || f->bandwidth <= 0) {
			snprintf(err, errlen, "%s: a new backend needs prefill.efficiency, "
					      "prefill.causal and decode.bandwidth",
				 q);
			return -1;
		}
		f->pre_fixed_s = pf_us * 1e-6;
		f->dec_fixed_s = df_us * 1e-6;
		f->per_head_s = ph_us * 1e-6;
		g->has_attn[b] = 1;
	}
	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(e, "iteration_overhead");
	snprintf(p, sizeof p, "%s.iteration_overhead", path);
	if (ov) {
		if (cfg_expect_object(ov, p, err, errlen) || cfg_check_keys(ov, p, ov_keys, err, errlen))
			return -1;
		if (!g->has_overhead && (!cJSON_GetObjectItemCaseSensitive(ov, "base_ms") ||
					 !cJSON_GetObjectItemCaseSensitive(ov, "per_seq_ms"))) {
			snprintf(err, errlen, "%s: expected base_ms and per_seq_ms", p);
			return -1;
		}
		if (cfg_number(ov, p, "base_ms", 0, 1e6, &g->overhead_base_ms, err, errlen) ||
		    cfg_number(ov, p, "per_seq_ms", 0, 1e6, &g->overhead_per_seq_ms, err, errlen))
			return -1;
		g->has_overhead = 1;
	}
	const cJSON *f8 = cJSON_GetObjectItemCaseSensitive(e, "fp8");
	snprintf(p, sizeof p, "%s.fp8", path);
	if (!f8)
		return 0;
	if (cfg_expect_object(f8, p, err, errlen) || cfg_check_keys(f8, p, fp8_keys, err, errlen))
		return -1;
	if (g->fp8_mfu <= 0 && (!cJSON_GetObjectItemCaseSensitive(f8, "mfu") ||
				!cJSON_GetObjectItemCaseSensitive(f8, "mbu"))) {
		snprintf(err, errlen, "%s: expected mfu and mbu", p);
		return -1;
	}
	return cfg_number(f8, p, "mfu", 1e-3, 1, &g->fp8_mfu, err, errlen) ||
			       cfg_number(f8, p, "mbu", 1e-3, 1, &g->fp8_mbu, err, errlen)
		       ? -1
		       : 0;
}

/* The all-reduce lines of e's key (allreduce, custom_allreduce): per group
 * size 2-8, [latency_us, us_per_MiB], into alpha (s) and beta (s/byte). */
static int parse_ar_lines(const cJSON *e, const char *path, const char *key, double *alpha,
			  double *beta, char *err, size_t errlen)
{
	const cJSON *ar = cJSON_GetObjectItemCaseSensitive(e, key);
	if (!ar)
		return 0;
	char rp[160];
	snprintf(rp, sizeof rp, "%s.%s", path, key);
	if (cfg_expect_object(ar, rp, err, errlen))
		return -1;
	for (const cJSON *c = ar->child; c; c = c->next) {
		if (c->string[0] == '_')
			continue;
		int tp = atoi(c->string);
		if (tp < 2 || tp > 8 || !cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(c, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(c, 1)) ||
		    cJSON_GetArrayItem(c, 1)->valuedouble <= 0) {
			snprintf(err, errlen, "%s.%s: expected a group size 2-8 with [latency_us, "
					      "us_per_MiB > 0]",
				 rp, c->string);
			return -1;
		}
		alpha[tp] = cJSON_GetArrayItem(c, 0)->valuedouble * 1e-6;
		beta[tp] = cJSON_GetArrayItem(c, 1)->valuedouble * 1e-6 / 1048576.0;
	}
	return 0;
}

static int parse_gpu(const cJSON *e, const char *path, struct cat_gpu *g, int is_new, char *err,
		     size_t errlen)
{
	static const char *const keys[] = {"bf16_flops", "fp8_flops", "hbm_mib",  "hbm_bytes_per_s",
					   "tdp_w",      "link",      "price_per_hour", "profile",
					   "roofline",   "allreduce", "custom_allreduce", "hbm_bytes", "attention",
					   "iteration_overhead", "fp8", "power", NULL};
	static const char *const roof_keys[] = {"mfu", "mbu", "knee", "op_overhead_us", NULL};
	if (cfg_check_keys(e, path, keys, err, errlen))
		return -1;
	const cJSON *roof = cJSON_GetObjectItemCaseSensitive(e, "roofline");
	char rp[160];
	snprintf(rp, sizeof rp, "%s.roofline", path);
	if (roof && (cfg_expect_object(roof, rp, err, errlen) ||
		     cfg_check_keys(roof, rp, roof_keys, err, errlen) ||
		     cfg_number(roof, rp, "mfu", 1e-3, 1, &g->mfu, err, errlen) ||
		     cfg_number(roof, rp, "mbu", 1e-3, 1, &g->mbu, err, errlen) ||
		     cfg_number(roof, rp, "knee", 0, 64, &g->knee, err, errlen) ||
		     cfg_number(roof, rp, "op_overhead_us", 0, 1e6, &g->op_overhead_us, err, errlen)))
		return -1;
	if (cfg_string(e, path, "profile", g->profile, sizeof g->profile, err, errlen) ||
	    parse_gpu_timing(e, path, g, err, errlen))
		return -1;
	if (parse_ar_lines(e, path, "allreduce", g->ar_alpha_s, g->ar_beta_s_per_byte, err,
			   errlen) ||
	    parse_ar_lines(e, path, "custom_allreduce", g->car_alpha_s, g->car_beta_s_per_byte, err,
			   errlen))
		return -1;
	/* Memory: hbm_mib, what nvidia-smi reports (memory.total, MiB), or
	 * hbm_bytes; one of them. */
	int has_mib = cJSON_GetObjectItemCaseSensitive(e, "hbm_mib") != NULL;
	int has_bytes = cJSON_GetObjectItemCaseSensitive(e, "hbm_bytes") != NULL;
	if (has_mib && has_bytes) {
		snprintf(err, errlen, "%s.hbm_bytes: give hbm_mib or hbm_bytes, not both", path);
		return -1;
	}
	if (is_new) {
		for (int i = 0; keys[i]; i++) {
			if (strcmp(keys[i], "fp8_flops") && strcmp(keys[i], "price_per_hour") &&
			    strcmp(keys[i], "profile") && strcmp(keys[i], "roofline") &&
			    strcmp(keys[i], "allreduce") && strcmp(keys[i], "custom_allreduce") &&
			    strcmp(keys[i], "hbm_bytes") &&
			    (strcmp(keys[i], "hbm_mib") || !has_bytes) &&
			    strcmp(keys[i], "attention") && strcmp(keys[i], "iteration_overhead") &&
			    strcmp(keys[i], "fp8") && strcmp(keys[i], "power") &&
			    !cJSON_GetObjectItemCaseSensitive(e, keys[i])) {
				snprintf(err, errlen, "%s.%s: missing (a new GPU needs every field)", path,
					 keys[i]);
				return -1;
			}
		}
	}
	if (is_new) {
		g->memory_weight = CAT_MEMORY_WEIGHT;
		g->price_per_hour = NAN; /* unpriced: its cost is n/a, never $0 */
	}
	double mib = g->hbm_bytes / 1048576.0;
	if (cfg_number(e, path, "hbm_mib", 1, 1e9, &mib, err, errlen))
		return -1;
	g->hbm_bytes = mib * 1048576.0;
	return cfg_number(e, path, "bf16_flops", 1e9, 1e18, &g->bf16_flops, err, errlen) ||
			       cfg_number(e, path, "fp8_flops", 0, 1e18, &g->fp8_flops, err, errlen) ||
			       cfg_number(e, path, "hbm_bytes", 1e6, 1e15, &g->hbm_bytes, err, errlen) ||
			       cfg_number(e, path, "hbm_bytes_per_s", 1e6, 1e15, &g->hbm_bytes_per_s, err,
					  errlen) ||
			       cfg_number(e, path, "tdp_w", 1, 1e5, &g->tdp_w, err, errlen) ||
			       cfg_number(e, path, "price_per_hour", 0, 1e6, &g->price_per_hour, err,
					  errlen) ||
			       cfg_string(e, path, "link", g->link, sizeof g->link, err, errlen) ||
			       parse_gpu_power(e, path, g, err, errlen)
		       ? -1
		       : 0;
}

/* A catalog model's "moe" object: {"experts", "experts_per_token",
 * "expert_intermediate", "dense_layers"}; routed experts are gated MLPs
 * (gate, up and down projections: 3 x hidden x expert_intermediate
 * parameters each). */
static int parse_moe(const cJSON *o, const char *path, struct cat_model *m, char *err, size_t errlen)
{
	static const char *const keys[] = {"experts", "experts_per_token", "expert_intermediate",
					   "dense_layers", NULL};
	char p[256];
	cfg_join(p, sizeof p, path, "moe");
	if (cfg_expect_object(o, p, err, errlen) || cfg_check_keys(o, p, keys, err, errlen))
		return -1;
	for (int i = 0; i < 3; i++) {
		if (!cJSON_GetObjectItemCaseSensitive(o, keys[i])) {
			snprintf(err, errlen, "%s.%s: missing (a mixture of experts needs it)", p,
				 keys[i]);
			return -1;
		}
	}
	int64_t e = 0, k = 0, inter = 0, dense = 0;
	if (cfg_int(o, p, "experts", 1, 100000, &e, err, errlen) ||
	    cfg_int(o, p, "experts_per_token", 1, e, &k, err, errlen) ||
	    cfg_int(o, p, "expert_intermediate", 1, 10000000, &inter, err, errlen) ||
	    cfg_int(o, p, "dense_layers", 0, m->layers - 1, &dense, err, errlen))
		return -1;
	m->experts = (int)e;
	m->experts_per_token = (int)k;
	m->moe_layers = m->layers - (int)dense;
	m->expert_params = 3.0 * m->hidden * (double)inter;
	return 0;
}

/* A catalog model's "mla" object: {"kv_lora_rank", "qk_rope_head_dim"}. */
static int parse_mla(const cJSON *o, const char *path, struct cat_model *m, char *err, size_t errlen)
{
	static const char *const keys[] = {"kv_lora_rank", "qk_rope_head_dim", NULL};
	char p[256];
	cfg_join(p, sizeof p, path, "mla");
	if (cfg_expect_object(o, p, err, errlen) || cfg_check_keys(o, p, keys, err, errlen))
		return -1;
	for (int i = 0; keys[i]; i++) {
		if (!cJSON_GetObjectItemCaseSensitive(o, keys[i])) {
			snprintf(err, errlen, "%s.%s: missing (multi-head latent attention needs it)", p,
				 keys[i]);
			return -1;
		}
	}
	int64_t r = 0, rope = 0;
	if (cfg_int(o, p, "kv_lora_rank", 1, 1000000, &r, err, errlen) ||
	    cfg_int(o, p, "qk_rope_head_dim", 0, 1000000, &rope, err, errlen))
		return -1;
	m->kv_lora_rank = (int)r;
	m->qk_rope_head_dim = (int)rope;
	return 0;
}

static int parse_model(const cJSON *e, const char *path, struct cat_model *m, int is_new, char *err,
		       size_t errlen)
{
	static const char *const keys[] = {"layers",   "hidden",         "q_heads",
					   "kv_heads", "head_dim",       "params",
					   "active_params", "kv_dtype_bytes", "kv_bytes_per_token",
					   "max_context",   "profile", "moe", "mla", NULL};
	if (cfg_check_keys(e, path, keys, err, errlen))
		return -1;
	if (is_new) {
		for (int i = 0; keys[i]; i++) {
			if (strcmp(keys[i], "kv_bytes_per_token") && strcmp(keys[i], "active_params") &&
			    strcmp(keys[i], "kv_dtype_bytes") && strcmp(keys[i], "profile") &&
			    strcmp(keys[i], "moe") && strcmp(keys[i], "mla") &&
			    !cJSON_GetObjectItemCaseSensitive(e, keys[i])) {
				snprintf(err, errlen, "%s.%s: missing (a new model needs it)", path,
					 keys[i]);
				return -1;
			}
		}
		m->kv_dtype_bytes = 2;
	}
	int64_t v;
	double kvpt = -1;
	if (cfg_string(e, path, "profile", m->profile, sizeof m->profile, err, errlen))
		return -1;
#define INTF(field, lo, hi)                                                                        \
	v = m->field;                                                                              \
	if (cfg_int(e, path, #field, lo, hi, &v, err, errlen))                                     \
		return -1;                                                                         \
	m->field = (int)v;
	INTF(layers, 1, 10000)
	INTF(hidden, 1, 1000000)
	INTF(q_heads, 1, 100000)
	INTF(kv_heads, 1, 100000)
	INTF(head_dim, 1, 100000)
	INTF(kv_dtype_bytes, 1, 8)
	INTF(max_context, 16, 100000000)
#undef INTF
	const cJSON *moe = cJSON_GetObjectItemCaseSensitive(e, "moe");
	const cJSON *mla = cJSON_GetObjectItemCaseSensitive(e, "mla");
	if ((moe && parse_moe(moe, path, m, err, errlen)) ||
	    (mla && parse_mla(mla, path, m, err, errlen)))
		return -1;
	if (m->experts > 0 && m->moe_layers > m->layers) {
		snprintf(err, errlen, "%s.layers: expected at least the %d layers of experts, got %d",
			 path, m->moe_layers, m->layers);
		return -1;
	}
	double active = -1;
	int has_params = cJSON_GetObjectItemCaseSensitive(e, "params") != NULL;
	if (cfg_number(e, path, "params", 1e6, 1e14, &m->params, err, errlen) ||
	    cfg_number(e, path, "active_params", 1e6, 1e14, &active, err, errlen) ||
	    cfg_number(e, path, "kv_bytes_per_token", 1, 1e9, &kvpt, err, errlen))
		return -1;
	/* The routed experts a token skips are the parameters it does not use. */
	double skipped = m->experts > 0 ? (double)m->moe_layers *
					      (m->experts - m->experts_per_token) * m->expert_params
					: 0;
	if (m->experts > 0 && m->moe_layers * (double)m->experts * m->expert_params >= m->params) {
		snprintf(err, errlen, "%s.moe: %d layers of %d experts of %.4g parameters exceed params "
				      "(%g)",
			 path, m->moe_layers, m->experts, m->expert_params, m->params);
		return -1;
	}
	if (active > 0)
		m->active_params = active;
	else if (is_new || has_params || moe)
		m->active_params = m->params - skipped;
	if (m->active_params > m->params) {
		snprintf(err, errlen, "%s.active_params: expected at most params (%g), got %g", path,
			 m->params, m->active_params);
		return -1;
	}
	if (m->kv_heads > m->q_heads || m->q_heads % m->kv_heads) {
		snprintf(err, errlen, "%s.kv_heads: expected a divisor of q_heads (%d), got %d", path,
			 m->q_heads, m->kv_heads);
		return -1;
	}
	if (kvpt > 0)
		m->kv_bytes_per_token = kvpt;
	else if (m->kv_lora_rank > 0)
		m->kv_bytes_per_token = (double)m->layers * (m->kv_lora_rank + m->qk_rope_head_dim) *
					m->kv_dtype_bytes;
	else
		m->kv_bytes_per_token =
		    2.0 * m->layers * m->kv_heads * m->head_dim * (double)m->kv_dtype_bytes;
	return 0;
}

static int parse_link(const cJSON *e, const char *path, struct cat_link *l, int is_new, char *err,
		      size_t errlen)
{
	static const char *const keys[] = {"bytes_per_s", "latency_us", NULL};
	if (cfg_check_keys(e, path, keys, err, errlen))
		return -1;
	if (is_new && (!cJSON_GetObjectItemCaseSensitive(e, "bytes_per_s") ||
		       !cJSON_GetObjectItemCaseSensitive(e, "latency_us"))) {
		snprintf(err, errlen, "%s: a new link needs bytes_per_s and latency_us", path);
		return -1;
	}
	double lat_us = l->latency_s * 1e6;
	if (cfg_number(e, path, "bytes_per_s", 1e3, 1e15, &l->bytes_per_s, err, errlen) ||
	    cfg_number(e, path, "latency_us", 0, 1e9, &lat_us, err, errlen))
		return -1;
	l->latency_s = lat_us * 1e-6;
	return 0;
}

/* A server type. Its links are checked against the link table once the
 * whole catalog object is merged (check_server_links). */
static int parse_server(const cJSON *e, const char *path, struct cat_server *v, int is_new,
			char *err, size_t errlen)
{
	static const char *const keys[] = {"gpu", "gpus", "nics", "nic", "host", NULL};
	if (cfg_check_keys(e, path, keys, err, errlen))
		return -1;
	if (is_new) {
		for (int i = 1; keys[i]; i++) {
			if (!cJSON_GetObjectItemCaseSensitive(e, keys[i])) {
				snprintf(err, errlen, "%s.%s: missing (a new server needs gpus, nics, nic "
						      "and host)",
					 path, keys[i]);
				return -1;
			}
		}
	}
	int64_t gpus = v->gpus, nics = v->nics;
	if (cfg_int(e, path, "gpus", 1, 4096, &gpus, err, errlen) ||
	    cfg_int(e, path, "nics", 1, 65536, &nics, err, errlen) ||
	    cfg_string(e, path, "gpu", v->gpu, sizeof v->gpu, err, errlen) ||
	    cfg_string(e, path, "nic", v->nic, sizeof v->nic, err, errlen) ||
	    cfg_string(e, path, "host", v->host, sizeof v->host, err, errlen))
		return -1;
	v->gpus = (int)gpus;
	v->nics = (int)nics;
	return 0;
}

/* Every server's NIC and host links are in the link table. */
static int check_server_links(const struct catalog *cat, const char *path, char *err,
			      size_t errlen)
{
	for (size_t i = 0; i < cat->n_servers; i++) {
		const struct cat_server *v = &cat->servers[i];
		const char *bad = !catalog_link(cat, v->nic) ? "nic"
				  : !catalog_link(cat, v->host) ? "host"
								 : NULL;
		if (!bad)
			continue;
		char names[1024], p[256], q[320];
		catalog_names(cat, "links", names, sizeof names);
		cfg_join(p, sizeof p, path, "servers");
		snprintf(q, sizeof q, "%s.%s", p, v->name);
		snprintf(err, errlen, "%s.%s: unknown link \"%s\" (known: %s)", q, bad,
			 !strcmp(bad, "nic") ? v->nic : v->host, names);
		return -1;
	}
	return 0;
}

/* Generic "name -> entry" merge over one table of fixed-size records. */
static int merge_table(const cJSON *tab, const char *path, void **arr, size_t *n, size_t size,
		       int (*parse)(const cJSON *, const char *, void *, int, char *, size_t),
		       char *err, size_t errlen)
{
	if (!tab)
		return 0;
	if (cfg_expect_object(tab, path, err, errlen))
		return -1;
	for (const cJSON *e = tab->child; e; e = e->next) {
		if (e->string[0] == '_')
			continue;
		char p[256];
		cfg_join(p, sizeof p, path, e->string);
		if (!cJSON_IsObject(e)) {
			snprintf(err, errlen, "%s: expected an object", p);
			return -1;
		}
		if (strlen(e->string) >= CAT_NAME_LEN) {
			snprintf(err, errlen, "%s: name longer than %d characters", p, CAT_NAME_LEN - 1);
			return -1;
		}
		char *base = *arr;
		size_t i;
		for (i = 0; i < *n; i++)
			if (strcmp(base + i * size, e->string) == 0)
				break;
		int is_new = i == *n;
		char *rec = malloc(size);
		if (!rec) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (is_new) {
			memset(rec, 0, size);
			strcpy(rec, e->string);
		} else {
			memcpy(rec, base + i * size, size);
		}
		if (parse(e, p, rec, is_new, err, errlen)) {
			free(rec);
			return -1;
		}
		if (is_new) {
			char *nb = realloc(base, (*n + 1) * size);
			if (!nb) {
				free(rec);
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			*arr = base = nb;
			(*n)++;
		}
		memcpy(base + i * size, rec, size);
		free(rec);
	}
	return 0;
}

static int parse_gpu_v(const cJSON *e, const char *p, void *r, int n, char *err, size_t el)
{
	return parse_gpu(e, p, r, n, err, el);
}
static int parse_model_v(const cJSON *e, const char *p, void *r, int n, char *err, size_t el)
{
	return parse_model(e, p, r, n, err, el);
}
static int parse_link_v(const cJSON *e, const char *p, void *r, int n, char *err, size_t el)
{
	return parse_link(e, p, r, n, err, el);
}
static int parse_server_v(const cJSON *e, const char *p, void *r, int n, char *err, size_t el)
{
	return parse_server(e, p, r, n, err, el);
}

int catalog_merge(struct catalog *cat, const cJSON *obj, const char *path, char *err, size_t errlen)
{
	static const char *const keys[] = {"gpus", "models", "links", "servers", NULL};
	if (cfg_check_keys(obj, path, keys, err, errlen))
		return -1;
	if (!obj)
		return 0;
	char p[256];
	void *g = cat->gpus, *m = cat->models, *l = cat->links, *v = cat->servers;
	int rc = merge_table(cJSON_GetObjectItemCaseSensitive(obj, "gpus"),
			     cfg_join(p, sizeof p, path, "gpus"), &g, &cat->n_gpus,
			     sizeof(struct cat_gpu), parse_gpu_v, err, errlen);
	cat->gpus = g;
	if (rc == 0)
		rc = merge_table(cJSON_GetObjectItemCaseSensitive(obj, "models"),
				 cfg_join(p, sizeof p, path, "models"), &m, &cat->n_models,
				 sizeof(struct cat_model), parse_model_v, err, errlen);
	cat->models = m;
	if (rc == 0)
		rc = merge_table(cJSON_GetObjectItemCaseSensitive(obj, "links"),
				 cfg_join(p, sizeof p, path, "links"), &l, &cat->n_links,
				 sizeof(struct cat_link), parse_link_v, err, errlen);
	cat->links = l;
	if (rc == 0)
		rc = merge_table(cJSON_GetObjectItemCaseSensitive(obj, "servers"),
				 cfg_join(p, sizeof p, path, "servers"), &v, &cat->n_servers,
				 sizeof(struct cat_server), parse_server_v, err, errlen);
	cat->servers = v;
	if (rc == 0)
		rc = check_server_links(cat, path, err, errlen);
	return rc;
}

static int merge_text(struct catalog *cat, const char *text, const char *table, char *err,
		      size_t errlen)
{
	cJSON *tab = cJSON_Parse(text);
	if (!tab) {
		snprintf(err, errlen, "built-in %s catalog is not valid JSON", table);
		return -1;
	}
	cJSON *wrap = cJSON_CreateObject();
	if (!wrap) {
		cJSON_Delete(tab);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cJSON_AddItemToObject(wrap, table, tab);
	char p[64];
	snprintf(p, sizeof p, "model/catalog/%s.json", table);
	int rc = catalog_merge(cat, wrap, "", err, errlen);
	cJSON_Delete(wrap);
	return rc;
}

int catalog_load_builtin(struct catalog *cat, char *err, size_t errlen)
{
	memset(cat, 0, sizeof *cat);
	if (merge_text(cat, kv_embedded_gpus, "gpus", err, errlen) ||
	    merge_text(cat, kv_embedded_models, "models", err, errlen) ||
	    merge_text(cat, kv_embedded_links, "links", err, errlen) ||
	    merge_text(cat, kv_embedded_servers, "servers", err, errlen)) {
		catalog_free(cat);
		return -1;
	}
	return 0;
}

void catalog_free(struct catalog *cat)
{
	free(cat->gpus);
	free(cat->models);
	free(cat->links);
	free(cat->servers);
	memset(cat, 0, sizeof *cat);
}

const struct cat_model *catalog_add_model(struct catalog *cat, const struct cat_model *m)
{
	struct cat_model *nm = realloc(cat->models, (cat->n_models + 1) * sizeof *nm);
	if (!nm)
		return NULL;
	cat->models = nm;
	nm[cat->n_models] = *m;
	return &nm[cat->n_models++];
}

double catalog_kv_bytes_per_token_tp(const struct cat_model *m, int tp)
{
	if (m->kv_lora_rank > 0)
		return m->kv_bytes_per_token * tp;
	int per_gpu = m->kv_heads > tp ? m->kv_heads / tp : 1;
	return m->kv_bytes_per_token * (double)(per_gpu * tp) / m->kv_heads;
}

const struct cat_gpu *catalog_gpu(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_gpus; i++)
		if (!strcmp(cat->gpus[i].name, name))
			return &cat->gpus[i];
	return NULL;
}

const struct cat_model *catalog_model(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_models; i++)
		if (!strcmp(cat->models[i].name, name))
			return &cat->models[i];
	return NULL;
}

const struct cat_link *catalog_link(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_links; i++)
		if (!strcmp(cat->links[i].name, name))
			return &cat->links[i];
	return NULL;
}

const struct cat_server *catalog_server(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->n_servers; i++)
		if (!strcmp(cat->servers[i].name, name))
			return &cat->servers[i];
	return NULL;
}

const struct cat_server *catalog_server_for(const struct catalog *cat, const char *gpu)
{
	for (size_t i = 0; i < cat->n_servers; i++)
		if (!strcmp(cat->servers[i].gpu, gpu))
			return &cat->servers[i];
	return catalog_server(cat, CAT_DEFAULT_SERVER);
}

void catalog_names(const struct catalog *cat, const char *table, char *out, size_t outlen)
{
	size_t n = 0, size = 0;
	const char *base = NULL;
	if (!strcmp(table, "gpus"))
		base = (const char *)cat->gpus, n = cat->n_gpus, size = sizeof(struct cat_gpu);
	else if (!strcmp(table, "models"))
		base = (const char *)cat->models, n = cat->n_models, size = sizeof(struct cat_model);
	else if (!strcmp(table, "servers"))
		base = (const char *)cat->servers, n = cat->n_servers, size = sizeof(struct cat_server);
	else
		base = (const char *)cat->links, n = cat->n_links, size = sizeof(struct cat_link);
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(out);
		snprintf(out + len, outlen - len, "%s%s", i ? ", " : "", base + i * size);
	}
}
