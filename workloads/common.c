/* common: arrivals, block hashing of token segments, system-prompt pools. */
#include "workloads/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>

#include "sim/cfg.h"
#include "sim/request.h"

int wl_arrivals_parse(struct wl_arrivals *a, const cJSON *obj, const char *path,
		      const char *rate_key, double default_rate, char *err, size_t errlen)
{
	static const char *const kinds[] = {"poisson", "gamma", NULL};
	int kind = 0;
	a->rate_per_s = default_rate;
	a->cv = 1.0;
	a->t_ns = 0;
	if (cfg_number(obj, path, rate_key, 1e-9, 1e9, &a->rate_per_s, err, errlen) ||
	    cfg_enum(obj, path, "arrival", kinds, &kind, err, errlen) ||
	    cfg_number(obj, path, "cv", 1e-3, 1e3, &a->cv, err, errlen))
		return -1;
	a->gamma = kind == 1;
	return 0;
}

int64_t wl_arrivals_next(struct wl_arrivals *a, gsl_rng *r)
{
	double mean = 1.0 / a->rate_per_s, gap;
	if (a->gamma) {
		double shape = 1.0 / (a->cv * a->cv);
		gap = gsl_ran_gamma(r, shape, mean / shape);
	} else {
		gap = gsl_ran_exponential(r, mean);
	}
	a->t_ns += (int64_t)llround(gap * 1e9);
	return a->t_ns;
}

int wl_hash_blocks_resume(struct request *r, const struct wl_seg *segs, uint32_t n,
			  uint32_t block_tokens, struct wl_hash_state *st, const uint64_t *prefix)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		total += segs[i].len;
	uint32_t blocks = (uint32_t)(total / block_tokens);
	/* prefix may be r's own buffer (the history continued in place):
	 * realloc then carries it along, and there is nothing to copy */
	int in_place = prefix && prefix == r->hashes;
	if (blocks > r->hashes_cap) {
		uint32_t cap = r->hashes_cap ? r->hashes_cap : 64;
		while (cap < blocks)
			cap *= 2;
		uint64_t *nh = realloc(r->hashes, cap * sizeof *nh);
		if (!nh)
			return -1;
		r->hashes = nh;
		r->hashes_cap = cap;
	}
	uint32_t b = st->blocks <= blocks ? st->blocks : 0;
	uint64_t prev = b ? st->prev : WL_HASH_ORIGIN, acc = 0;
	uint32_t fill = 0, i0 = b ? st->seg : 0, off0 = b ? st->off : 0;
	if (b && prefix && !in_place)
		memcpy(r->hashes, prefix, b * sizeof *r->hashes);
	struct wl_hash_state end = {i0, off0, b, prev};
	for (uint32_t i = i0; i < n && b < blocks; i++) {
		uint64_t sid = rng_mix64(segs[i].id);
		uint32_t off = i == i0 ? off0 : 0;
		while (off < segs[i].len && b < blocks) {
			if (fill == 0 && segs[i].len - off >= block_tokens) {
				/* Whole blocks inside the segment: the steps below for
				 * a block that starts empty and fills at once. */
				uint32_t last = b + (segs[i].len - off) / block_tokens;
				if (last > blocks)
					last = blocks;
				uint64_t base = sid ^ block_tokens;
				for (; b < last; off += block_tokens) {
					uint64_t a = rng_mix64(base ^ ((uint64_t)off << 32));
					uint64_t h = rng_mix64(prev ^ rng_mix64(a));
					r->hashes[b++] = h ? h : 1;
					prev = h;
				}
				end = (struct wl_hash_state){i, off, b, prev};
				continue;
			}
			uint32_t take = segs[i].len - off;
			if (take > block_tokens - fill)
				take = block_tokens - fill;
			acc = rng_mix64(acc ^ sid ^ ((uint64_t)off << 32) ^ take);
			off += take;
			fill += take;
			if (fill == block_tokens) {
				uint64_t h = rng_mix64(prev ^ rng_mix64(acc));
				r->hashes[b++] = h ? h : 1; /* 0 means "no hash" */
				prev = h;
				acc = 0;
				fill = 0;
				end = (struct wl_hash_state){i, off, b, prev};
			}
		}
	}
	r->n_hashes = blocks;
	*st = end;
	return 0;
}

int wl_hash_blocks(struct request *r, const struct wl_seg *segs, uint32_t n, uint32_t block_tokens)
{
	struct wl_hash_state st = {0, 0, 0, 0};
	return wl_hash_blocks_resume(r, segs, n, block_tokens, &st, NULL);
}

int wl_pool_parse(struct wl_pool *sp, const cJSON *obj, const char *path, const char *key,
		  uint32_t default_count, const struct dist *default_len, uint64_t seed,
		  uint64_t stream_id, char *err, size_t errlen)
{
	static const char *const keys[] = {"count", "zipf_s", "tokens", NULL};
	char p[256];
	const cJSON *o = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	cfg_join(p, sizeof p, path, key);
	sp->count = 0;
	sp->tokens = NULL;
	sp->pop.cdf = NULL;
	/* System prompts keep the salt they always had (results stay put). */
	sp->salt = stream_id == WL_STREAM_SYSPROMPTS ? rng_mix64(seed ^ 0x535953ULL)
						     : rng_mix64(rng_mix64(seed) ^ stream_id);
	int64_t count = default_count;
	double s = 1.0;
	struct dist len;
	if (dist_copy(&len, default_len)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (cfg_check_keys(o, p, keys, err, errlen) ||
	    cfg_int(o, p, "count", 0, 10000000, &count, err, errlen) ||
	    cfg_number(o, p, "zipf_s", 0, 100, &s, err, errlen) ||
	    cfg_dist(o, p, "tokens", 1, &len, err, errlen)) {
		dist_free(&len);
		return -1;
	}
	sp->count = (uint32_t)count;
	if (sp->count == 0) {
		dist_free(&len);
		return 0;
	}
	gsl_rng *r = rng_stream(seed, stream_id);
	sp->tokens = malloc(sp->count * sizeof *sp->tokens);
	if (!r || !sp->tokens || zipf_make(&sp->pop, sp->count, s)) {
		if (r)
			gsl_rng_free(r);
		dist_free(&len);
		wl_pool_free(sp);
		snprintf(err, errlen, "%s: out of memory", p);
		return -1;
	}
	for (uint32_t i = 0; i < sp->count; i++)
		sp->tokens[i] = dist_sample_tokens(&len, r);
	gsl_rng_free(r);
	dist_free(&len);
	return 0;
}

int wl_pool_sysprompts(struct wl_pool *sp, const cJSON *obj, const char *path,
		       uint32_t default_count, uint64_t seed, char *err, size_t errlen)
{
	struct dist len;
	dist_make(&len, DIST_UNIFORM, 200, 2000);
	return wl_pool_parse(sp, obj, path, "system_prompts", default_count, &len, seed,
			     WL_STREAM_SYSPROMPTS, err, errlen);
}

void wl_pool_free(struct wl_pool *sp)
{
	free(sp->tokens);
	sp->tokens = NULL;
	zipf_free(&sp->pop);
	sp->count = 0;
}

void wl_pool_item(const struct wl_pool *sp, uint32_t k, struct wl_seg *seg)
{
	/* Shared content ids live apart from session content ids (top bit). */
	seg->id = rng_mix64(sp->salt ^ ((uint64_t)k << 1)) | (1ULL << 63);
	seg->len = sp->tokens[k];
}

void wl_pool_draw(const struct wl_pool *sp, gsl_rng *r, struct wl_seg *seg)
{
	if (sp->count == 0) {
		seg->id = 0;
		seg->len = 0;
		return;
	}
	wl_pool_item(sp, zipf_draw(&sp->pop, r), seg);
}
