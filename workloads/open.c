/* open: independent requests arriving as a Poisson or Gamma process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "sim/request.h"
#include "workloads/common.h"
#include "workloads/registry.h"

struct open_wl {
	struct wl_env env;
	struct wl_arrivals arr;
	int64_t max_requests, made;
	struct dist input, output;
	struct wl_pool sys;
	gsl_rng *r_arr, *r_len;
};

static void open_destroy(void *st)
{
	struct open_wl *w = st;
	if (!w)
		return;
	dist_free(&w->input);
	dist_free(&w->output);
	wl_pool_free(&w->sys);
	wl_arrivals_free(&w->arr);
	if (w->r_arr)
		gsl_rng_free(w->r_arr);
	if (w->r_len)
		gsl_rng_free(w->r_len);
	free(w);
}

static void *open_create(const struct cJSON *json, const char *path, const struct wl_env *env,
			 char *err, size_t errlen)
{
	static const char *const keys[] = {"kind",         "rate_per_s",    "arrival",
					   "cv",           "max_requests",  "input_tokens",
					   "output_tokens", "system_prompts", "rate_schedule", NULL};
	struct open_wl *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->env = *env;
	w->env.schedule = NULL; /* copied by wl_schedule_parse; not kept */
	w->max_requests = 10000;
	dist_make(&w->input, DIST_LOGNORMAL, 512, 0.8);
	dist_make(&w->output, DIST_LOGNORMAL, 128, 0.6);
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    wl_arrivals_parse(&w->arr, json, path, wl_open.rate_key, wl_open.rate_default, env,
			      err, errlen) ||
	    cfg_int(json, path, "max_requests", 1, (int64_t)1 << 40, &w->max_requests, err,
		    errlen) ||
	    cfg_dist(json, path, "input_tokens", 1, &w->input, err, errlen) ||
	    cfg_dist(json, path, "output_tokens", 1, &w->output, err, errlen) ||
	    wl_pool_sysprompts(&w->sys, json, path, 0, env->seed, err, errlen))
		goto fail;
	if (env->rate_scale > 0)
		w->arr.rate_per_s *= env->rate_scale;
	w->r_arr = rng_stream(env->seed, WL_STREAM_ARRIVALS);
	w->r_len = rng_stream(env->seed, WL_STREAM_LENGTHS);
	if (!w->r_arr || !w->r_len) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return w;
fail:
	open_destroy(w);
	return NULL;
}

static int open_next(void *st, struct request *r)
{
	struct open_wl *w = st;
	if (w->made >= w->max_requests)
		return 0;
	w->made++;
	struct wl_seg segs[2];
	wl_pool_draw(&w->sys, w->r_len, &segs[0]);
	uint32_t in = dist_sample_tokens(&w->input, w->r_len);
	uint32_t out = dist_sample_tokens(&w->output, w->r_len);
	/* Keep prompt + output within the context: the output first, then the
	 * request's own text, then the shared prefix. */
	uint32_t maxc = w->env.max_context;
	if (out >= maxc)
		out = maxc - 1;
	if (segs[0].len + in + out > maxc)
		in = maxc - out > segs[0].len ? maxc - out - segs[0].len : 1;
	if (segs[0].len + in + out > maxc)
		segs[0].len = maxc - out - in;
	segs[1].id = rng_mix64((uint64_t)w->made * 2 + 1) & ~(1ULL << 63);
	segs[1].len = in;
	r->session = (uint64_t)w->made;
	r->turn = 1;
	r->last_turn = 1;
	r->arrival_ns = wl_arrivals_next(&w->arr, w->r_arr);
	r->prompt_tokens = segs[0].len + in;
	r->output_tokens = out;
	segs[1].len = in + out; /* the output continues the request's own tokens */
	r->n_shared = segs[0].len / w->env.block_tokens;
	return wl_hash_blocks(r, segs, 2, w->env.block_tokens) == 0 ? 1 : -1;
}

const struct wl_ops wl_open = {
    .name = "open",
    .description = "independent requests, Poisson or Gamma arrivals, lengths from "
		   "distributions, optional shared system prompts",
    .create = open_create,
    .next = open_next,
    .destroy = open_destroy,
    .private_own = 1,
    .rate_key = "rate_per_s",
    .rate_default = 10,
};
