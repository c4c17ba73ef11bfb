/* benchmarks: the load of two benchmark clients as they generate it: inference-perf
 * (its config.yaml: data shared_prefix, random, synthetic; load constant, poisson, in
 * stages) and `vllm bench serve`'s random dataset. Sources and rules: docs/workloads.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>

#include "config/cfg.h"
#include "config/yaml.h"
#include "sim/request.h"
#include "workloads/common.h"
#include "workloads/registry.h"

/* Stream ids of this file's draws (rng_stream), apart from common.h's. */
enum { BM_STREAM_ARRIVALS = 1, BM_STREAM_LENGTHS = 2 };

/* The most requests one stage (or one vllm_bench run) may hold scheduled. */
#define BM_MAX_REQUESTS ((int64_t)1 << 26)

/* Content ids: each a mix of the seed, a kind tag and a number, top bit clear. */
static uint64_t bm_id(uint64_t seed, uint64_t tag, uint64_t n)
{
	return rng_mix64(rng_mix64(seed ^ (tag << 56)) ^ n) & ~(1ULL << 63);
}

/* Hashes segs into r and fills the fields every request of this file sets. */
static int bm_fill(struct request *r, const struct wl_env *env, struct wl_seg *segs, uint32_t n,
		   uint32_t prompt, uint32_t out, uint32_t shared_tokens)
{
	r->prompt_tokens = prompt;
	r->output_tokens = out;
	r->n_shared = shared_tokens / env->block_tokens;
	return wl_hash_blocks(r, segs, n, env->block_tokens) == 0 ? 1 : -1;
}

/* Keeps prompt + output within the context: the output first (at most the
 * context less one), then the prompt's own part, then its shared part. */
static void bm_clip(uint32_t maxc, uint32_t *shared, uint32_t *own, uint32_t *out)
{
	if (*out >= maxc)
		*out = maxc - 1;
	uint32_t room = maxc - *out;
	if (*shared + *own > room) {
		if (*shared >= room) {
			*shared = room - 1;
			*own = 1;
		} else {
			*own = room - *shared;
		}
	}
}

/* ---------------------------------------------------------------------- */
/* inference-perf */

/* inference-perf's Distribution (config/common.py): min 10, max 1024, mean
 * 512, std_dev 200, type normal; drawn, clipped to [min, max] and rounded
 * (utils/numeric/distribution). A plain integer v is {mean v, min v, max v,
 * std_dev 0}. */
enum ip_dist_type { IP_NORMAL, IP_UNIFORM, IP_LOGNORMAL, IP_FIXED };
struct ip_dist {
	enum ip_dist_type type;
	double min, max, mean, sd;
	int64_t total_count; /* 0: not given */
};

static int ip_dist_parse(const cJSON *parent, const char *path, const char *key, double dflt,
			 int need_count, struct ip_dist *d, char *err, size_t errlen)
{
	static const char *const keys[] = {"min",  "max",      "mean", "std_dev", "total_count",
					   "type", "variance", "skew", NULL};
	static const char *const types[] = {"normal", "uniform", "lognormal", "fixed", NULL};
	char p[2304];
	cfg_join(p, sizeof p, path, key);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);
	*d = (struct ip_dist){IP_NORMAL, dflt, dflt, dflt, 0, 0};
	if (!v || cJSON_IsNull(v)) {
		if (need_count) {
			snprintf(err, errlen, "%s: required (a distribution with total_count)", p);
			return -1;
		}
		return 0;
	}
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble < 1 || v->valuedouble != floor(v->valuedouble) ||
		    v->valuedouble > 1e7) {
			snprintf(err, errlen, "%s: expected a whole number of tokens in [1, 1e7], got %g",
				 p, v->valuedouble);
			return -1;
		}
		d->min = d->max = d->mean = v->valuedouble;
		return 0;
	}
	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen, "%s: expected a number or a distribution object, got %s", p,
			 cfg_type_name(v));
		return -1;
	}
	int type = 0;
	double var = -1, skew = 0;
	*d = (struct ip_dist){IP_NORMAL, 10, 1024, 512, 200, 0};
	if (cfg_check_keys(v, p, keys, err, errlen) ||
	    cfg_enum(v, p, "type", types, &type, err, errlen) ||
	    cfg_number(v, p, "min", 0, 1e7, &d->min, err, errlen) ||
	    cfg_number(v, p, "max", 0, 1e7, &d->max, err, errlen) ||
	    cfg_number(v, p, "mean", 0, 1e7, &d->mean, err, errlen) ||
	    cfg_number(v, p, "std_dev", 0, 1e7, &d->sd, err, errlen) ||
	    cfg_number(v, p, "variance", 0, 1e14, &var, err, errlen) ||
	    cfg_number(v, p, "skew", -1e3, 1e3, &skew, err, errlen) ||
	    cfg_int(v, p, "total_count", 1, BM_MAX_REQUESTS, &d->total_count, err, errlen))
		return -1;
	d->type = (enum ip_dist_type)type;
	if (var >= 0)
		d->sd = sqrt(var);
	if (d->min > d->max) {
		snprintf(err, errlen, "%s: min (%g) cannot be greater than max (%g)", p, d->min,
			 d->max);
		return -1;
	}
	if (need_count && !d->total_count) {
		snprintf(err, errlen, "%s.total_count: required for this data type", p);
		return -1;
	}
	return 0;
}

static uint32_t ip_dist_draw(const struct ip_dist *d, gsl_rng *r)
{
	double x;
	switch (d->type) {
	case IP_FIXED:
		x = floor(d->mean);
		return x < 1 ? 1 : (uint32_t)x;
	case IP_UNIFORM:
		x = d->min + (d->max - d->min) * gsl_rng_uniform(r);
		break;
	case IP_LOGNORMAL: {
		/* shifted so that min maps to 0, mean and std_dev matched */
		double m = d->mean - d->min > 0 ? d->mean - d->min : 1;
		double s2 = log(1 + (d->sd / m) * (d->sd / m));
		x = gsl_ran_lognormal(r, log(m) - s2 / 2, sqrt(s2)) + d->min;
		break;
	}
	default:
		x = d->mean + (d->sd > 0 ? gsl_ran_gaussian(r, d->sd) : 0);
	}
	x = round(fmin(fmax(x, d->min), d->max));
	return x < 1 ? 1 : (uint32_t)x;
}

enum ip_data { IP_SHARED_PREFIX, IP_RANDOM, IP_SYNTHETIC };
enum ip_load { IP_CONSTANT, IP_POISSON };

struct ip_stage {
	double rate, duration;
};

struct ip_wl {
	struct wl_env env;
	enum ip_data data;
	enum ip_load load;
	int fixed_gaps; /* kvsim's "constant_gaps": "fixed" */
	double interval_s;
	/* the prompts: n of them, request k of a stage carries prompt k mod n */
	uint32_t n, per_group;
	uint32_t *shared_len; /* shared_prefix: per group; else unused */
	uint32_t *own_len, *out_len;
	struct ip_stage *stages;
	uint32_t n_stages;
	/* where the stream is */
	uint32_t stage;
	int64_t k, stage_n; /* next request of the stage, and its count */
	int64_t *times;     /* the stage's arrivals (ns) */
	int64_t stage_start_ns, made;
	struct wl_stage_info *info; /* n_stages: windows of arrivals, for results */
	gsl_rng *r_arr;
};

static void ip_destroy(void *st)
{
	struct ip_wl *w = st;
	if (!w)
		return;
	free(w->shared_len);
	free(w->own_len);
	free(w->out_len);
	free(w->stages);
	free(w->times);
	free(w->info);
	if (w->r_arr)
		gsl_rng_free(w->r_arr);
	free(w);
}

static int ip_read_data(struct ip_wl *w, const cJSON *data, const char *f, gsl_rng *rl, char *err,
			size_t errlen)
{
	static const char *const dkeys[] = {"type",
					    "path",
					    "corpus_file_path",
					    "input_distribution",
					    "output_distribution",
					    "shared_prefix",
					    "multimodal",
					    "trace",
					    "otel_trace_replay",
					    "weka_trace_replay",
					    "conversation_replay",
					    "visionarena",
					    NULL};
	static const char *const types[] = {"shared_prefix", "random", "synthetic", NULL};
	static const char *const spkeys[] = {"num_groups",
					     "num_unique_system_prompts",
					     "num_prompts_per_group",
					     "num_users_per_system_prompt",
					     "system_prompt_len",
					     "question_len",
					     "output_len",
					     "seed",
					     "question_distribution",
					     "output_distribution",
					     "enable_multi_turn_chat",
					     "multimodal",
					     NULL};
	char p[2112], sp[2176];
	snprintf(p, sizeof p, "%s: data", f);
	if (!cJSON_IsObject(data)) {
		snprintf(err, errlen, "%s: required (an object with type shared_prefix, random or "
				      "synthetic)", p);
		return -1;
	}
	int type = 0;
	if (cfg_check_keys(data, p, dkeys, err, errlen) ||
	    cfg_enum(data, p, "type", types, &type, err, errlen))
		return -1;
	w->data = (enum ip_data)type;
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(data, "trace");
	if (tr && !cJSON_IsNull(tr)) {
		snprintf(err, errlen, "%s.trace: trace files are not read (use workload kind trace)",
			 p);
		return -1;
	}
	if (w->data != IP_SHARED_PREFIX) {
		struct ip_dist in, out;
		if (ip_dist_parse(data, p, "input_distribution", 0, 1, &in, err, errlen) ||
		    ip_dist_parse(data, p, "output_distribution", 0, 1, &out, err, errlen))
			return -1;
		/* get_request_count: the shorter of the two lists */
		int64_t n = in.total_count < out.total_count ? in.total_count : out.total_count;
		w->n = (uint32_t)n;
		w->own_len = malloc(n * sizeof *w->own_len);
		w->out_len = malloc(n * sizeof *w->out_len);
		if (!w->own_len || !w->out_len)
			goto oom;
		for (int64_t i = 0; i < n; i++)
			w->own_len[i] = ip_dist_draw(&in, rl);
		for (int64_t i = 0; i < n; i++)
			w->out_len[i] = ip_dist_draw(&out, rl);
		return 0;
	}
	cfg_join(sp, sizeof sp, p, "shared_prefix");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(data, "shared_prefix");
	if (!cJSON_IsObject(s)) {
		snprintf(err, errlen, "%s: required for type shared_prefix (an object)", sp);
		return -1;
	}
	int64_t groups = 10, per = 10;
	int multi = 0;
	const char *gk = cJSON_GetObjectItemCaseSensitive(s, "num_unique_system_prompts")
				 ? "num_unique_system_prompts"
				 : "num_groups";
	const char *pk = cJSON_GetObjectItemCaseSensitive(s, "num_users_per_system_prompt")
				 ? "num_users_per_system_prompt"
				 : "num_prompts_per_group";
	struct ip_dist sys, q, o;
	if (cfg_check_keys(s, sp, spkeys, err, errlen) ||
	    cfg_int(s, sp, gk, 1, 1 << 20, &groups, err, errlen) ||
	    cfg_int(s, sp, pk, 1, 1 << 20, &per, err, errlen) ||
	    cfg_bool(s, sp, "enable_multi_turn_chat", &multi, err, errlen) ||
	    ip_dist_parse(s, sp, "system_prompt_len", 100, 0, &sys, err, errlen) ||
	    ip_dist_parse(s, sp, "question_len", 50, 0, &q, err, errlen) ||
	    ip_dist_parse(s, sp, "output_len", 50, 0, &o, err, errlen))
		return -1;
	if (multi) {
		snprintf(err, errlen, "%s.enable_multi_turn_chat: not supported", sp);
		return -1;
	}
	if (groups * per > (1 << 24)) {
		snprintf(err, errlen, "%s: num_groups x num_prompts_per_group over 2^24", sp);
		return -1;
	}
	/* legacy question_distribution / output_distribution stand in for a
	 * plain question_len / output_len */
	const cJSON *qd = cJSON_GetObjectItemCaseSensitive(s, "question_distribution");
	const cJSON *od = cJSON_GetObjectItemCaseSensitive(s, "output_distribution");
	if ((qd && !cJSON_IsNull(qd) &&
	     ip_dist_parse(s, sp, "question_distribution", 50, 0, &q, err, errlen)) ||
	    (od && !cJSON_IsNull(od) &&
	     ip_dist_parse(s, sp, "output_distribution", 50, 0, &o, err, errlen)))
		return -1;
	w->per_group = (uint32_t)per;
	w->n = (uint32_t)(groups * per);
	w->shared_len = malloc(groups * sizeof *w->shared_len);
	w->own_len = malloc(w->n * sizeof *w->own_len);
	w->out_len = malloc(w->n * sizeof *w->out_len);
	if (!w->shared_len || !w->own_len || !w->out_len)
		goto oom;
	/* the draw order of shared_prefix_datagen.py: the system prompts, then
	 * per group its questions and its outputs */
	for (int64_t g = 0; g < groups; g++)
		w->shared_len[g] = ip_dist_draw(&sys, rl);
	for (int64_t g = 0; g < groups; g++) {
		for (int64_t i = 0; i < per; i++)
			w->own_len[g * per + i] = ip_dist_draw(&q, rl);
		for (int64_t i = 0; i < per; i++)
			w->out_len[g * per + i] = ip_dist_draw(&o, rl);
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int ip_read_load(struct ip_wl *w, const cJSON *load, const char *f, char *err, size_t errlen)
{
	static const char *const lkeys[] = {"type",
					    "interval",
					    "stages",
					    "sweep",
					    "num_workers",
					    "worker_max_concurrency",
					    "worker_max_tcp_connections",
					    "trace",
					    "circuit_breakers",
					    "request_timeout",
					    "lora_traffic_split",
					    "base_seed",
					    NULL};
	static const char *const skeys[] = {"rate", "duration", "num_requests", "concurrency_level",
					    NULL};
	static const char *const types[] = {"constant", "poisson", NULL};
	char p[2112];
	snprintf(p, sizeof p, "%s: load", f);
	if (!cJSON_IsObject(load)) {
		snprintf(err, errlen, "%s: required (an object with type and stages)", p);
		return -1;
	}
	int type = 0;
	w->interval_s = 1.0;
	if (cfg_check_keys(load, p, lkeys, err, errlen) ||
	    cfg_enum(load, p, "type", types, &type, err, errlen) ||
	    cfg_number(load, p, "interval", 0, 1e6, &w->interval_s, err, errlen))
		return -1;
	w->load = (enum ip_load)type;
	const cJSON *sw = cJSON_GetObjectItemCaseSensitive(load, "sweep");
	if (sw && !cJSON_IsNull(sw)) {
		snprintf(err, errlen, "%s.sweep: not supported (it probes the server's saturation; "
				      "list the stages instead)", p);
		return -1;
	}
	const cJSON *stages = cJSON_GetObjectItemCaseSensitive(load, "stages");
	int n = cJSON_GetArraySize(stages);
	if (!cJSON_IsArray(stages) || n < 1 || n > 4096) {
		snprintf(err, errlen, "%s.stages: expected a list of 1 to 4096 stages", p);
		return -1;
	}
	w->stages = calloc(n, sizeof *w->stages);
	w->info = calloc(n, sizeof *w->info);
	if (!w->stages || !w->info) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->n_stages = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		char sp[2176];
		snprintf(sp, sizeof sp, "%s.stages[%d]", p, i);
		const cJSON *s = cJSON_GetArrayItem(stages, i);
		int64_t dur = 0;
		if (cfg_expect_object(s, sp, err, errlen) || cfg_check_keys(s, sp, skeys, err, errlen))
			return -1;
		if (!cJSON_GetObjectItemCaseSensitive(s, "rate") ||
		    !cJSON_GetObjectItemCaseSensitive(s, "duration")) {
			snprintf(err, errlen, "%s: rate and duration are required", sp);
			return -1;
		}
		const cJSON *nr = cJSON_GetObjectItemCaseSensitive(s, "num_requests");
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(s, "concurrency_level");
		if ((nr && !cJSON_IsNull(nr)) || (cl && !cJSON_IsNull(cl))) {
			snprintf(err, errlen, "%s: num_requests and concurrency_level are not set for "
					      "constant/poisson load", sp);
			return -1;
		}
		if (cfg_number(s, sp, "rate", 1e-9, 1e7, &w->stages[i].rate, err, errlen) ||
		    cfg_int(s, sp, "duration", 1, 1 << 30, &dur, err, errlen))
			return -1;
		w->stages[i].duration = (double)dur;
		if (w->stages[i].rate * dur > (double)BM_MAX_REQUESTS) {
			snprintf(err, errlen, "%s: rate x duration over %lld requests", sp,
				 (long long)BM_MAX_REQUESTS);
			return -1;
		}
	}
	return 0;
}

/* Schedules stage w->stage: int(rate x duration) arrivals (load_generator.py
 * run_stage), from stage_start_ns. constant (ConstantLoadTimer): the gaps
 * are exponential draws scaled to sum to the duration, so the last comes at
 * its end; "fixed": every 1/rate. poisson (PoissonLoadTimer): second by
 * second, a Poisson(rate) count c of arrivals spread over the second as a
 * constant timer of c in 1 s would, an empty second skipped. */
static int ip_schedule(struct ip_wl *w)
{
	const struct ip_stage *s = &w->stages[w->stage];
	int64_t n = (int64_t)(s->rate * s->duration);
	free(w->times);
	w->times = n ? malloc(n * sizeof *w->times) : NULL;
	if (n && !w->times)
		return -1;
	w->stage_n = n;
	w->k = 0;
	double t = 0;
	if (w->load == IP_CONSTANT && w->fixed_gaps) {
		for (int64_t i = 0; i < n; i++)
			w->times[i] = w->stage_start_ns + (int64_t)llround((i + 1) / s->rate * 1e9);
	} else if (w->load == IP_CONSTANT) {
		/* two passes: the gaps, then their scaled running sum */
		double *g = malloc((n ? n : 1) * sizeof *g), sum = 0;
		if (!g)
			return -1;
		for (int64_t i = 0; i < n; i++)
			sum += g[i] = gsl_ran_exponential(w->r_arr, 1 / s->rate);
		for (int64_t i = 0; i < n; i++) {
			t += g[i] * (s->duration / sum);
			w->times[i] = w->stage_start_ns + (int64_t)llround(t * 1e9);
		}
		free(g);
	} else {
		int64_t i = 0;
		double g[64];
		while (i < n) {
			unsigned c = gsl_ran_poisson(w->r_arr, s->rate);
			if (!c) {
				t += 1;
				continue;
			}
			double sum = 0, u = t;
			/* a second's arrivals, in chunks of up to 64 gaps drawn at once */
			double *gg = c <= 64 ? g : malloc(c * sizeof *gg);
			if (!gg)
				return -1;
			for (unsigned j = 0; j < c; j++)
				sum += gg[j] = gsl_ran_exponential(w->r_arr, 1.0 / c);
			for (unsigned j = 0; j < c && i < n; j++, i++) {
				u += gg[j] / sum;
				w->times[i] = w->stage_start_ns + (int64_t)llround(u * 1e9);
			}
			if (gg != g)
				free(gg);
			t += 1;
		}
	}
	w->info[w->stage].start_ns = w->stage_start_ns;
	w->info[w->stage].end_ns = n ? w->times[n - 1] : w->stage_start_ns;
	w->info[w->stage].rate = s->rate;
	w->info[w->stage].duration_s = s->duration;
	w->info[w->stage].requests = (uint64_t)n;
	return 0;
}

static void *ip_create(const struct cJSON *json, const char *path, const struct wl_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"kind", "config", "constant_gaps", NULL};
	static const char *const gaps[] = {"inference_perf", "fixed", NULL};
	struct ip_wl *w = calloc(1, sizeof *w);
	char file[1024], full[2048];
	cJSON *y = NULL;
	gsl_rng *rl = NULL;
	int fixed = 0;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->env = *env;
	w->env.schedule = NULL;
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    cfg_string(json, path, "config", file, sizeof file, err, errlen) ||
	    cfg_enum(json, path, "constant_gaps", gaps, &fixed, err, errlen))
		goto fail;
	w->fixed_gaps = fixed;
	if (!cJSON_GetObjectItemCaseSensitive(json, "config")) {
		snprintf(err, errlen, "%s.config: required (inference-perf's config.yaml)", path);
		goto fail;
	}
	if (file[0] != '/' && env->base_dir && env->base_dir[0])
		snprintf(full, sizeof full, "%s/%s", env->base_dir, file);
	else
		snprintf(full, sizeof full, "%s", file);
	y = cfg_yaml_read(full, err, errlen);
	if (!y)
		goto fail;
	if (!cJSON_IsObject(y)) {
		snprintf(err, errlen, "%s:1: expected a mapping (inference-perf's config)", full);
		goto fail;
	}
	rl = rng_stream(env->seed, WL_STREAM_LENGTHS);
	w->r_arr = rng_stream(env->seed, WL_STREAM_ARRIVALS);
	if (!rl || !w->r_arr) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (ip_read_data(w, cJSON_GetObjectItemCaseSensitive(y, "data"), full, rl, err, errlen) ||
	    ip_read_load(w, cJSON_GetObjectItemCaseSensitive(y, "load"), full, err, errlen))
		goto fail;
	w->stage_start_ns = 1000000000LL; /* run_stage's first arrival comes 1 s on */
	if (ip_schedule(w)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	gsl_rng_free(rl);
	cJSON_Delete(y);
	return w;
fail:
	if (rl)
		gsl_rng_free(rl);
	cJSON_Delete(y);
	ip_destroy(w);
	return NULL;
}

static int ip_next(void *st, struct request *r)
{
	struct ip_wl *w = st;
	while (w->k >= w->stage_n) {
		if (w->stage + 1 >= w->n_stages)
			return 0;
		/* the next stage: interval after the last one's last arrival,
		 * and its own 1 s lead (its requests' drain is not waited for) */
		int64_t last = w->stage_n ? w->times[w->stage_n - 1] : w->stage_start_ns;
		w->stage++;
		w->stage_start_ns = last + (int64_t)llround((w->interval_s + 1) * 1e9);
		if (ip_schedule(w))
			return -1;
	}
	int64_t k = w->k++;
	uint32_t p = (uint32_t)(k % w->n); /* get_data restarts at 0 each stage */
	uint64_t seed = w->env.seed, req = (uint64_t)++w->made;
	uint32_t shared = 0, own = w->own_len[p], out = w->out_len[p];
	struct wl_seg segs[3];
	uint32_t ns = 0;
	if (w->data == IP_SHARED_PREFIX)
		shared = w->shared_len[p / w->per_group];
	bm_clip(w->env.max_context, &shared, &own, &out);
	if (w->data == IP_SHARED_PREFIX) {
		segs[ns++] = (struct wl_seg){bm_id(seed, 1, p / w->per_group), shared};
		segs[ns++] = (struct wl_seg){bm_id(seed, 2, p), own};
	} else if (w->data == IP_SYNTHETIC) {
		/* every prompt is the start of one text (the sonnet) */
		segs[ns++] = (struct wl_seg){bm_id(seed, 3, 0), own};
	} else {
		segs[ns++] = (struct wl_seg){bm_id(seed, 4, req), own};
	}
	segs[ns++] = (struct wl_seg){bm_id(seed, 5, req), out};
	r->session = req;
	r->turn = 1;
	r->last_turn = 1;
	r->arrival_ns = w->times[k];
	/* a prompt is sent again every n requests: all of it is shared,
	 * but a random prompt, which no other request names */
	return bm_fill(r, &w->env, segs, ns, shared + own, out,
		       w->data == IP_RANDOM ? 0 : shared + own);
}

static size_t ip_stages(void *st, const struct wl_stage_info **out)
{
	struct ip_wl *w = st;
	/* a stage's window is filled when it is scheduled (its first
	 * arrival is due); the ones the run did not reach stay zero */
	*out = w->info;
	return w->n_stages;
}

const struct wl_ops wl_inference_perf = {
    .name = "inference_perf",
    .description = "inference-perf's config.yaml as it runs: shared_prefix, random or synthetic "
		   "data; constant or poisson load in stages",
    .create = ip_create,
    .next = ip_next,
    .destroy = ip_destroy,
    .stages = ip_stages,
    .private_own = 1,
};

/* ---------------------------------------------------------------------- */
/* vllm bench serve, random dataset */

struct vb_wl {
	struct wl_env env;
	int64_t n, made, max_conc;
	uint32_t prefix_len;
	uint32_t *in_len, *out_len;
	int64_t *times;
	struct wl_stage_info info;
};

static void vb_destroy(void *st)
{
	struct vb_wl *w = st;
	if (!w)
		return;
	free(w->in_len);
	free(w->out_len);
	free(w->times);
	free(w);
}

/* A number, or "inf" (a JSON number cannot be infinite). */
static int vb_number_inf(const cJSON *obj, const char *path, const char *key, double lo,
			 double *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsString(v) && !strcmp(v->valuestring, "inf")) {
		*out = INFINITY;
		return 0;
	}
	if (cfg_number(obj, path, key, lo, 1e9, out, err, errlen)) {
		size_t l = strlen(err);
		snprintf(err + l, errlen - l, " (or \"inf\")");
		return -1;
	}
	return 0;
}

static void *vb_create(const struct cJSON *json, const char *path, const struct wl_env *env,
		       char *err, size_t errlen)
{
	static const char *const keys[] = {"kind",
					   "dataset_name",
					   "num_prompts",
					   "random_input_len",
					   "random_output_len",
					   "random_range_ratio",
					   "random_prefix_len",
					   "num_special_tokens",
					   "request_rate",
					   "burstiness",
					   "max_concurrency",
					   NULL};
	static const char *const datasets[] = {"random", NULL};
	struct vb_wl *w = calloc(1, sizeof *w);
	gsl_rng *ra = NULL, *rl = NULL;
	double *sums = NULL;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->env = *env;
	w->env.schedule = NULL;
	int ds = 0;
	int64_t in = 1024, out = 128, prefix = 0, special = 1;
	double ratio = 0, rate = INFINITY, burst = 1;
	w->n = 1000;
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    cfg_enum(json, path, "dataset_name", datasets, &ds, err, errlen) ||
	    cfg_int(json, path, "num_prompts", 1, BM_MAX_REQUESTS, &w->n, err, errlen) ||
	    cfg_int(json, path, "random_input_len", 1, 1 << 24, &in, err, errlen) ||
	    cfg_int(json, path, "random_output_len", 1, 1 << 24, &out, err, errlen) ||
	    cfg_number(json, path, "random_range_ratio", 0, 0.999999, &ratio, err, errlen) ||
	    cfg_int(json, path, "random_prefix_len", 0, 1 << 24, &prefix, err, errlen) ||
	    cfg_int(json, path, "num_special_tokens", 0, 64, &special, err, errlen) ||
	    vb_number_inf(json, path, "request_rate", 1e-9, &rate, err, errlen) ||
	    vb_number_inf(json, path, "burstiness", 1e-6, &burst, err, errlen) ||
	    cfg_int(json, path, "max_concurrency", 1, 1 << 24, &w->max_conc, err, errlen))
		goto fail;
	if (env->rate_scale > 0 && isfinite(rate))
		rate *= env->rate_scale;
	/* RandomDataset.get_sampling_params: integer-uniform lengths in
	 * [floor(L (1 - r)), ceil(L (1 + r))], the input's L less the special
	 * tokens the tokenizer adds (the server adds them back), the output's
	 * low end at least 1 */
	int64_t real_in = in - special > 0 ? in - special : 0;
	int64_t in_lo = (int64_t)floor(real_in * (1 - ratio)), in_hi = (int64_t)ceil(real_in * (1 + ratio));
	int64_t out_lo = (int64_t)floor(out * (1 - ratio)), out_hi = (int64_t)ceil(out * (1 + ratio));
	if (out_lo < 1)
		out_lo = 1;
	if (prefix + in_lo < 1) {
		snprintf(err, errlen, "%s.random_input_len: too small: with %lld special tokens and "
				      "random_range_ratio %g a prompt could have no token", path,
			 (long long)special, ratio);
		goto fail;
	}
	w->prefix_len = (uint32_t)prefix;
	w->in_len = malloc(w->n * sizeof *w->in_len);
	w->out_len = malloc(w->n * sizeof *w->out_len);
	w->times = malloc(w->n * sizeof *w->times);
	sums = malloc(w->n * sizeof *sums);
	ra = rng_stream(env->seed, WL_STREAM_ARRIVALS);
	rl = rng_stream(env->seed, WL_STREAM_LENGTHS);
	if (!w->in_len || !w->out_len || !w->times || !sums || !ra || !rl) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (int64_t i = 0; i < w->n; i++)
		w->in_len[i] = (uint32_t)(in_lo + (int64_t)gsl_rng_uniform_int(rl, in_hi - in_lo + 1) +
					  special);
	for (int64_t i = 0; i < w->n; i++)
		w->out_len[i] = (uint32_t)(out_lo + (int64_t)gsl_rng_uniform_int(rl, out_hi - out_lo + 1));
	/* serve.py get_request: gaps Gamma(shape burstiness, scale
	 * 1/(rate burstiness)) (exponential at 1), 1/rate when burstiness is
	 * inf, none at rate inf; their running sum scaled so that the last
	 * arrival is at num_prompts / rate */
	double t = 0;
	for (int64_t i = 0; i < w->n; i++) {
		double g = !isfinite(rate) ? 0
			   : !isfinite(burst) ? 1 / rate
					      : gsl_ran_gamma(ra, burst, 1 / (rate * burst));
		sums[i] = t += g;
	}
	double scale = t > 0 ? (w->n / rate) / t : 0;
	for (int64_t i = 0; i < w->n; i++)
		w->times[i] = (int64_t)llround(sums[i] * scale * 1e9);
	w->info = (struct wl_stage_info){0, w->times[w->n - 1], rate, 0, (uint64_t)w->n};
	gsl_rng_free(ra);
	gsl_rng_free(rl);
	free(sums);
	return w;
fail:
	free(sums);
	if (ra)
		gsl_rng_free(ra);
	if (rl)
		gsl_rng_free(rl);
	vb_destroy(w);
	return NULL;
}

static int vb_make(struct vb_wl *w, int64_t i, struct request *r)
{
	uint32_t shared = w->prefix_len, own = w->in_len[i], out = w->out_len[i];
	bm_clip(w->env.max_context, &shared, &own, &out);
	struct wl_seg segs[3] = {{bm_id(w->env.seed, 6, 0), shared},
				 {bm_id(w->env.seed, 7, (uint64_t)i), own},
				 {bm_id(w->env.seed, 8, (uint64_t)i), out}};
	r->arrival_ns = w->times[i];
	return bm_fill(r, &w->env, segs, 3, shared + own, out, shared);
}

static int vb_next(void *st, struct request *r)
{
	struct vb_wl *w = st;
	/* with max_concurrency, the first max_concurrency requests open one
	 * slot each; a slot's next request is its follow-up */
	if (w->made >= w->n || (w->max_conc && w->made >= w->max_conc))
		return 0;
	int64_t i = w->made++;
	r->session = (uint64_t)i + 1;
	r->turn = 1;
	r->last_turn = !w->max_conc || i + w->max_conc >= w->n;
	return vb_make(w, i, r);
}

/* max_concurrency (serve.py's semaphore): request i goes out when it is due
 * and a slot is free, in order; a slot frees when its request ends. */
static int vb_follow_up(void *st, const struct request *r, int completed, int64_t now_ns,
			struct request *out)
{
	struct vb_wl *w = st;
	(void)completed;
	if (!w->max_conc || w->made >= w->n)
		return 0;
	int64_t i = w->made++;
	out->session = r->session;
	out->turn = r->turn + 1;
	out->last_turn = i + w->max_conc >= w->n;
	out->epoch = r->epoch;
	int rc = vb_make(w, i, out);
	if (out->arrival_ns < now_ns)
		out->arrival_ns = now_ns;
	return rc;
}

static size_t vb_stages(void *st, const struct wl_stage_info **out)
{
	struct vb_wl *w = st;
	*out = &w->info;
	return 1;
}

const struct wl_ops wl_vllm_bench = {
    .name = "vllm_bench",
    .description = "`vllm bench serve`'s random dataset: uniform lengths around the means, "
		   "gamma arrivals (burstiness), optional max_concurrency",
    .create = vb_create,
    .next = vb_next,
    .follow_up = vb_follow_up,
    .destroy = vb_destroy,
    .stages = vb_stages,
    .private_own = 1,
};
