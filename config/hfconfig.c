/* hfconfig: Hugging Face config.json files read into catalog models, with
 * parameters counted from the architecture as transformers builds it. */
#include "config/hfconfig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/catalog.h"
#include "config/cfg.h"

enum hf_family {
	HF_LLAMA,
	HF_MISTRAL,
	HF_MIXTRAL,
	HF_QWEN2,
	HF_QWEN2_MOE,
	HF_QWEN3,
	HF_QWEN3_MOE,
	HF_DEEPSEEK_V2,
	HF_DEEPSEEK_V3
};
static const char *const hf_types[] = {"llama",       "mistral", "mixtral",   "qwen2",
				       "qwen2_moe",   "qwen3",   "qwen3_moe", "deepseek_v2",
				       "deepseek_v3", NULL};

int hf_is_config_path(const char *model)
{
	size_t n = strlen(model);
	return n > 5 && !strcmp(model + n - 5, ".json");
}

/* What one config.json read needs for its messages. */
struct hf_reader {
	const cJSON *root;
	const char *file, *type;
	char *err;
	size_t errlen;
};

/* A JSON value in a message: numbers and short strings as written, else
 * the type. */
static void describe(const cJSON *v, char *out, size_t len)
{
	if (cJSON_IsNumber(v))
		snprintf(out, len, "%.17g", v->valuedouble);
	else if (cJSON_IsString(v))
		snprintf(out, len, "\"%.40s\"", v->valuestring);
	else
		snprintf(out, len, "%s",
			 cJSON_IsBool(v)     ? "a boolean"
			 : cJSON_IsArray(v)  ? "an array"
			 : cJSON_IsObject(v) ? "an object"
					     : "null");
}

/* The whole number at key into *out; absent or null gives def, or is an
 * error when required. */
static int hf_int(const struct hf_reader *r, const char *key, int required, int64_t def, int64_t lo,
		  int64_t hi, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, key);
	if (!v || cJSON_IsNull(v)) {
		if (required) {
			snprintf(r->err, r->errlen, "%s: %s: missing (a %s config.json gives it)",
				 r->file, key, r->type);
			return -1;
		}
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
		char got[64];
		describe(v, got, sizeof got);
		snprintf(r->err, r->errlen,
			 "%s: %s: expected a whole number in [%lld, %lld], got %s", r->file, key,
			 (long long)lo, (long long)hi, got);
		return -1;
	}
	*out = (int64_t)v->valuedouble;
	return 0;
}

/* A boolean at key (absent or null: def). */
static int hf_bool(const struct hf_reader *r, const char *key, int def, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, key);
	*out = def;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v)) {
		char got[64];
		describe(v, got, sizeof got);
		snprintf(r->err, r->errlen, "%s: %s: expected true or false, got %s", r->file, key,
			 got);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

/* The shapes read from one config.json. */
struct hf_shape {
	int64_t layers, hidden, heads, kv_heads, head_dim, vocab, inter, max_pos;
	int tied, attn_bias, mlp_bias;
	/* mixture of experts (experts 0: dense) */
	int64_t experts, per_token, expert_inter, shared_experts, shared_inter;
	int64_t first_dense, freq; /* DeepSeek: first_k_dense_replace, moe_layer_freq */
	int64_t sparse_step;       /* Qwen MoE: decoder_sparse_step */
	const cJSON *mlp_only;     /* Qwen MoE: mlp_only_layers (array or NULL) */
	/* multi-head latent attention (kv_lora 0: none) */
	int64_t q_lora, kv_lora, nope, rope, v_dim;
};

/* Whether layer i holds routed experts. */
static int is_moe_layer(enum hf_family f, const struct hf_shape *h, int64_t i)
{
	if (h->experts == 0)
		return 0;
	if (f == HF_DEEPSEEK_V2 || f == HF_DEEPSEEK_V3)
		return i >= h->first_dense && i % h->freq == 0;
	if (f == HF_QWEN2_MOE || f == HF_QWEN3_MOE) {
		for (const cJSON *c = h->mlp_only ? h->mlp_only->child : NULL; c; c = c->next)
			if (cJSON_IsNumber(c) && c->valuedouble == (double)i)
				return 0;
		return (i + 1) % h->sparse_step == 0;
	}
	return 1; /* Mixtral: every layer */
}

/* The keys of each family into h; 0, or -1 with the message. */
static int read_shape(const struct hf_reader *r, enum hf_family f, struct hf_shape *h)
{
	int deepseek = f == HF_DEEPSEEK_V2 || f == HF_DEEPSEEK_V3;
	int qwen_moe = f == HF_QWEN2_MOE || f == HF_QWEN3_MOE;
	memset(h, 0, sizeof *h);
	if (hf_int(r, "num_hidden_layers", 1, 0, 1, 10000, &h->layers) ||
	    hf_int(r, "hidden_size", 1, 0, 1, 1000000, &h->hidden) ||
	    hf_int(r, "num_attention_heads", 1, 0, 1, 100000, &h->heads) ||
	    hf_int(r, "num_key_value_heads", 0, h->heads, 1, h->heads, &h->kv_heads) ||
	    /* Qwen3Config's head_dim defaults to 128, the others' to hidden / heads
	     */
	    hf_int(r, "head_dim", 0,
		   f == HF_QWEN3 || f == HF_QWEN3_MOE ? 128 : h->hidden / h->heads, 1, 100000,
		   &h->head_dim) ||
	    hf_int(r, "vocab_size", 1, 0, 1, 100000000, &h->vocab) ||
	    hf_int(r, "max_position_embeddings", 1, 0, 16, 100000000, &h->max_pos) ||
	    /* every family's config class defaults tie_word_embeddings to false */
	    hf_bool(r, "tie_word_embeddings", 0, &h->tied))
		return -1;
	/* Derived where it is derived: hidden / heads rounds down as
	 * transformers' does, and a head of no width is no model. */
	if (h->head_dim < 1) {
		snprintf(r->err, r->errlen,
			 "%s: head_dim: missing, and hidden_size / num_attention_heads (%lld / %lld) "
			 "rounds down to 0; expected hidden_size >= num_attention_heads, or a head_dim",
			 r->file, (long long)h->hidden, (long long)h->heads);
		return -1;
	}
	if (h->heads % h->kv_heads) {
		snprintf(r->err, r->errlen,
			 "%s: num_key_value_heads: expected a divisor of "
			 "num_attention_heads (%lld), "
			 "got %lld",
			 r->file, (long long)h->heads, (long long)h->kv_heads);
		return -1;
	}
	/* Biases: Qwen2's q, k and v projections always have them; Llama's
	 * and Qwen3's four projections when attention_bias says so; Llama's
	 * MLP when mlp_bias does. Mistral, Mixtral and DeepSeek have none. */
	if ((f == HF_LLAMA || f == HF_QWEN3 || f == HF_QWEN3_MOE) &&
	    hf_bool(r, "attention_bias", 0, &h->attn_bias))
		return -1;
	if (f == HF_LLAMA && hf_bool(r, "mlp_bias", 0, &h->mlp_bias))
		return -1;
	h->freq = h->sparse_step = 1;
	if (f == HF_MIXTRAL) {
		if (hf_int(r, "num_local_experts", 1, 0, 1, 100000, &h->experts) ||
		    hf_int(r, "num_experts_per_tok", 1, 0, 1, h->experts, &h->per_token) ||
		    hf_int(r, "intermediate_size", 1, 0, 1, 10000000, &h->expert_inter))
			return -1;
	} else if (qwen_moe) {
		if (hf_int(r, "num_experts", 1, 0, 1, 100000, &h->experts) ||
		    hf_int(r, "num_experts_per_tok", 1, 0, 1, h->experts, &h->per_token) ||
		    hf_int(r, "moe_intermediate_size", 1, 0, 1, 10000000, &h->expert_inter) ||
		    hf_int(r, "decoder_sparse_step", 0, 1, 1, h->layers, &h->sparse_step))
			return -1;
		if (f == HF_QWEN2_MOE && hf_int(r, "shared_expert_intermediate_size", 1, 0, 0,
						10000000, &h->shared_inter))
			return -1;
		const cJSON *mo = cJSON_GetObjectItemCaseSensitive(r->root, "mlp_only_layers");
		if (mo && !cJSON_IsNull(mo) && !cJSON_IsArray(mo)) {
			snprintf(r->err, r->errlen,
				 "%s: mlp_only_layers: expected an array of layer "
				 "indices",
				 r->file);
			return -1;
		}
		h->mlp_only = mo && cJSON_IsArray(mo) ? mo : NULL;
		int k = 0;
		for (const cJSON *c = h->mlp_only ? h->mlp_only->child : NULL; c; c = c->next, k++) {
			if (!cJSON_IsNumber(c) || c->valuedouble != floor(c->valuedouble) ||
			    c->valuedouble < 0 || c->valuedouble >= (double)h->layers) {
				char got[64];
				describe(c, got, sizeof got);
				snprintf(r->err, r->errlen,
					 "%s: mlp_only_layers[%d]: expected a layer index in [0, %lld], "
					 "got %s",
					 r->file, k, (long long)h->layers - 1, got);
				return -1;
			}
		}
	} else if (deepseek) {
		if (hf_int(r, "kv_lora_rank", 1, 0, 1, 1000000, &h->kv_lora) ||
		    hf_int(r, "qk_rope_head_dim", 1, 0, 0, 100000, &h->rope) ||
		    hf_int(r, "qk_nope_head_dim", 1, 0, 0, 100000, &h->nope) ||
		    hf_int(r, "v_head_dim", 1, 0, 1, 100000, &h->v_dim) ||
		    hf_int(r, "q_lora_rank", 0, 0, 0, 1000000, &h->q_lora) ||
		    hf_int(r, "n_routed_experts", 0, 0, 0, 100000, &h->experts))
			return -1;
		if (h->experts > 0 &&
		    (hf_int(r, "num_experts_per_tok", 1, 0, 1, h->experts, &h->per_token) ||
		     hf_int(r, "moe_intermediate_size", 1, 0, 1, 10000000, &h->expert_inter) ||
		     hf_int(r, "n_shared_experts", 0, 0, 0, 1000, &h->shared_experts) ||
		     hf_int(r, "first_k_dense_replace", 0, 0, 0, h->layers, &h->first_dense) ||
		     hf_int(r, "moe_layer_freq", 0, 1, 1, h->layers, &h->freq)))
			return -1;
		h->shared_inter = h->shared_experts * h->expert_inter;
	}
	if (deepseek && h->nope + h->rope < 1) {
		snprintf(r->err, r->errlen,
			 "%s: qk_nope_head_dim + qk_rope_head_dim: expected at least 1 (the width "
			 "of a query-key head), got 0",
			 r->file);
		return -1;
	}
	/* The dense MLP's width, where some layer has one. */
	for (int64_t i = 0; i < h->layers; i++) {
		if (f != HF_MIXTRAL && !is_moe_layer(f, h, i))
			return hf_int(r, "intermediate_size", 1, 0, 1, 10000000, &h->inter);
	}
	return 0;
}

/* Parameters of one layer's attention (projections, biases, their norms). */
static double attention_params(enum hf_family f, const struct hf_shape *h)
{
	double H = (double)h->hidden, nh = (double)h->heads;
	if (h->kv_lora > 0) {
		/* MLA: q through a low-rank bottleneck (with its norm) or
		 * directly; kv_a to the latent plus the rope key, its norm;
		 * kv_b up to every head's key (no-rope part) and value. */
		double qk = (double)(h->nope + h->rope);
		double q =
		    h->q_lora > 0 ? H * h->q_lora + h->q_lora + h->q_lora * nh * qk : H * nh * qk;
		double kv = H * (h->kv_lora + h->rope) + h->kv_lora +
			    h->kv_lora * nh * (double)(h->nope + h->v_dim);
		return q + kv + nh * h->v_dim * H;
	}
	double q = nh * h->head_dim, kv = (double)h->kv_heads * h->head_dim;
	double p = H * q + 2 * H * kv + q * H;
	if (f == HF_QWEN2 || f == HF_QWEN2_MOE)
		p += q + 2 * kv; /* q, k, v biases */
	if (h->attn_bias)
		p += q + 2 * kv + H;
	if (f == HF_QWEN3 || f == HF_QWEN3_MOE)
		p += 2.0 * h->head_dim; /* q_norm, k_norm */
	return p;
}

/* The file's name for the catalog: its folder for ".../NAME/config.json",
 * else the file name less ".json". */
static void model_name(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base) - 5; /* less ".json" */
	if (!strcmp(base, "config.json") && base != path) {
		const char *end = base - 1, *start = end;
		while (start > path && start[-1] != '/')
			start--;
		if (end > start) {
			base = start;
			n = (size_t)(end - start);
		}
	}
	if (n >= len)
		n = len - 1;
	memcpy(out, base, n);
	out[n] = 0;
}

/* Reads path as one JSON object; FILE:LINE:COLUMN on a syntax error. */
static cJSON *read_json(const char *path, char *err, size_t errlen)
{
	size_t len = 0;
	char *text = cfg_slurp(path, &len, err, errlen);
	if (!text)
		return NULL;
	const char *end = NULL;
	cJSON *root = strlen(text) == len ? cJSON_ParseWithOpts(text, &end, 1) : NULL;
	if (!root) {
		int line = 1, col = 1;
		for (const char *p = text; end && p < end && *p; p++) {
			if (*p == '\n')
				line++, col = 1;
			else
				col++;
		}
		snprintf(err, errlen, "%s:%d:%d: invalid JSON; expected a Hugging Face config.json",
			 path, line, col);
	} else if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s: expected a JSON object (a Hugging Face config.json)",
			 path);
		cJSON_Delete(root);
		root = NULL;
	} else {
		/* transformers takes a key's last value, cJSON its first: a key
		 * given twice is refused, as in a scenario. */
		char inner[512];
		if (cfg_check_unique_keys(root, "", inner, sizeof inner)) {
			snprintf(err, errlen, "%s: %s", path, inner);
			cJSON_Delete(root);
			root = NULL;
		}
	}
	free(text);
	return root;
}

int hf_model_load(const char *path, struct cat_model *m, char *err, size_t errlen)
{
	cJSON *root = read_json(path, err, errlen);
	if (!root)
		return -1;
	int rc = -1;
	struct hf_reader r = {root, path, "", err, errlen};
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
	char known[256] = "";
	for (int i = 0; hf_types[i]; i++)
		snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
			 hf_types[i]);
	int f = -1;
	for (int i = 0; mt && cJSON_IsString(mt) && hf_types[i]; i++)
		if (!strcmp(mt->valuestring, hf_types[i]))
			f = i;
	if (f < 0 && !mt) {
		snprintf(err, errlen, "%s: model_type: missing; expected one of: %s", path, known);
		goto out;
	}
	if (f < 0) {
		char got[64];
		describe(mt, got, sizeof got);
		snprintf(err, errlen, "%s: model_type: unknown architecture %s (known: %s)", path,
			 got, known);
		goto out;
	}
	r.type = hf_types[f];
	struct hf_shape h;
	if (read_shape(&r, (enum hf_family)f, &h))
		goto out;

	double H = (double)h.hidden;
	double expert = 3.0 * H * (double)h.expert_inter; /* gate, up, down */
	double dense_mlp = 3.0 * H * (double)h.inter + (h.mlp_bias ? 2.0 * h.inter + H : 0);
	double per_layer = attention_params((enum hf_family)f, &h) + 2 * H; /* + 2 norms */
	double params = (double)h.vocab * H * (h.tied ? 1 : 2) + H;         /* + final norm */
	int64_t moe_layers = 0;
	for (int64_t i = 0; i < h.layers; i++) {
		params += per_layer;
		if (!is_moe_layer((enum hf_family)f, &h, i)) {
			params += dense_mlp;
			continue;
		}
		moe_layers++;
		/* routed experts, the router, and shared experts (Qwen2-MoE's
		 * behind a one-output gate; DeepSeek-V3's router has a bias
		 * per expert for its load balancing) */
		params += (double)h.experts * expert + (double)h.experts * H;
		params += 3.0 * H * (double)h.shared_inter;
		if (f == HF_QWEN2_MOE)
			params += H;
		if (f == HF_DEEPSEEK_V3)
			params += (double)h.experts;
	}

	memset(m, 0, sizeof *m);
	model_name(path, m->name, sizeof m->name);
	m->layers = (int)h.layers;
	m->hidden = (int)h.hidden;
	m->q_heads = (int)h.heads;
	m->kv_heads = (int)h.kv_heads;
	/* MLA: the head width whose 4 x heads x head_dim attention FLOPs per
	 * token pair are 2 x heads x (qk + v), its QK^T and PV products */
	m->head_dim = h.kv_lora > 0 ? (int)((h.nope + h.rope + h.v_dim) / 2) : (int)h.head_dim;
	m->params = params;
	m->experts = (int)h.experts;
	m->experts_per_token = (int)h.per_token;
	m->moe_layers = (int)moe_layers;
	m->expert_params = h.experts > 0 ? expert : 0;
	m->active_params =
	    params - (double)moe_layers * (h.experts - h.per_token) * m->expert_params;
	m->kv_dtype_bytes = 2;
	m->kv_lora_rank = (int)h.kv_lora;
	m->qk_rope_head_dim = (int)h.rope;
	m->kv_bytes_per_token = h.kv_lora > 0 ? (double)h.layers * (h.kv_lora + h.rope) * 2.0
					      : 2.0 * h.layers * h.kv_heads * h.head_dim * 2.0;
	m->max_context = (int)h.max_pos;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
