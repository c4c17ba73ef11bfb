/* common: arrivals, block hashing of token segments, system-prompt pools. */
#include "workloads/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>

#include "config/cfg.h"
#include "sim/request.h"
#include "workloads/workload.h"

int wl_arrivals_parse(struct wl_arrivals *a, const cJSON *obj, const char *path,
		      const char *rate_key, double default_rate, const struct wl_env *env,
		      char *err, size_t errlen)
{
	static const char *const kinds[] = {"poisson", "gamma", NULL};
	int kind = 0;
	a->rate_per_s = default_rate;
	a->cv = 1.0;
	a->t_ns = 0;
	memset(&a->sched, 0, sizeof a->sched);
	if (cfg_number(obj, path, rate_key, 1e-9, 1e9, &a->rate_per_s, err, errlen) ||
	    cfg_enum(obj, path, "arrival", kinds, &kind, err, errlen) ||
	    cfg_number(obj, path, "cv", 1e-3, 1e3, &a->cv, err, errlen))
		return -1;
	a->gamma = kind == 1;
	if (!a->gamma && cJSON_GetObjectItemCaseSensitive(obj, "cv")) {
		char p[256];
		snprintf(err, errlen, "%s: takes \"arrival\": \"gamma\" (Poisson arrivals have cv 1)",
			 cfg_join(p, sizeof p, path, "cv"));
		return -1;
	}
	return wl_schedule_parse(&a->sched, obj, path, env->schedule, err, errlen);
}

void wl_arrivals_free(struct wl_arrivals *a)
{
	wl_schedule_free(&a->sched);
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
	a->t_ns = cfg_time_add(a->t_ns, cfg_time_ns_clamp(gap, 1e9));
	return wl_schedule_map(&a->sched, a->t_ns);
}

int wl_hash_simd_off;

/* out[k] = mix(mix(base ^ (off + k B) << 32)) for k < count: what the
 * whole blocks of a segment from token off on mix with their parents. */
static void whole_blocks_scalar(uint64_t *out, uint64_t base, uint32_t off, uint32_t B,
				uint32_t count)
{
	for (uint32_t k = 0; k < count; k++, off += B)
		out[k] = rng_mix64(rng_mix64(base ^ ((uint64_t)off << 32)));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The same, eight blocks at a time (AVX-512 has 64-bit multiplies).
 * (x << 32) keeps x's low 32 bits, so 64-bit lanes give what the 32-bit
 * offsets give. */
__attribute__((target("avx512f,avx512dq"))) static void
whole_blocks_avx512(uint64_t *out, uint64_t base, uint32_t off, uint32_t B, uint32_t count)
{
	const __m512i golden = _mm512_set1_epi64((long long)0x9E3779B97F4A7C15ULL);
	const __m512i m1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ULL);
	const __m512i m2 = _mm512_set1_epi64((long long)0x94D049BB133111EBULL);
	const __m512i vbase = _mm512_set1_epi64((long long)base);
	const __m512i step = _mm512_set1_epi64(8LL * B);
	__m512i o = _mm512_add_epi64(_mm512_set1_epi64(off),
				     _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
							_mm512_set1_epi64(B)));
	uint32_t k = 0;
	for (; k + 8 <= count; k += 8) {
		__m512i x = _mm512_xor_si512(vbase, _mm512_slli_epi64(o, 32));
		for (int round = 0; round < 2; round++) { /* rng_mix64, twice */
			x = _mm512_add_epi64(x, golden);
			x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)), m1);
			x = _mm512_mullo_epi64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)), m2);
			x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
		}
		_mm512_storeu_si512(out + k, x);
		o = _mm512_add_epi64(o, step);
	}
	/* Clean upper halves before any SSE code runs (libm's pow is
	 * slowed down several times by dirty ones; GCC leaves them so on
	 * a tail call). */
	_mm256_zeroupper();
	whole_blocks_scalar(out + k, base, off + k * B, B, count - k);
}

static void whole_blocks(uint64_t *out, uint64_t base, uint32_t off, uint32_t B, uint32_t count)
{
	if (count >= 8 && !wl_hash_simd_off && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512dq"))
		whole_blocks_avx512(out, base, off, B, count);
	else
		whole_blocks_scalar(out, base, off, B, count);
}
#else
static void whole_blocks(uint64_t *out, uint64_t base, uint32_t off, uint32_t B, uint32_t count)
{
	whole_blocks_scalar(out, base, off, B, count);
}
#endif

/* The hashing of wl_hash_blocks_resume. With chain set, out[b] gets block
 * b's hash. Without, it gets mix(acc), the part of the hash that does not
 * depend on the chain (block b's hash is mix(prev ^ out[b])), for
 * wl_hash_chain to finish, and the returned state's prev means nothing.
 * Inlined twice, so that the chained loop stays one loop. */
static inline __attribute__((always_inline)) struct wl_hash_state
hash_core(uint64_t *out, const struct wl_seg *segs, uint32_t n, uint32_t block_tokens,
	  uint32_t blocks, struct wl_hash_state st, int chain)
{
	uint32_t b = st.blocks;
	uint64_t prev = st.prev, acc = 0;
	uint32_t fill = 0;
	struct wl_hash_state end = st;
	for (uint32_t i = st.seg; i < n && b < blocks; i++) {
		uint64_t sid = rng_mix64(segs[i].id);
		uint32_t off = i == st.seg ? st.off : 0;
		while (off < segs[i].len && b < blocks) {
			if (fill == 0 && segs[i].len - off >= block_tokens) {
				/* Whole blocks inside the segment: the steps below for
				 * a block that starts empty and fills at once. */
				uint32_t last = b + (segs[i].len - off) / block_tokens;
				if (last > blocks)
					last = blocks;
				uint64_t base = sid ^ block_tokens;
				if (!chain) {
					whole_blocks(out + b, base, off, block_tokens, last - b);
					off += (last - b) * block_tokens;
					b = last;
				}
				for (; b < last; off += block_tokens) {
					uint64_t c = rng_mix64(rng_mix64(base ^ ((uint64_t)off << 32)));
					uint64_t h = rng_mix64(prev ^ c);
					out[b++] = h ? h : 1;
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
				uint64_t c = rng_mix64(acc);
				if (chain) {
					uint64_t h = rng_mix64(prev ^ c);
					out[b++] = h ? h : 1; /* 0 means "no hash" */
					prev = h;
				} else {
					out[b++] = c;
				}
				acc = 0;
				fill = 0;
				end = (struct wl_hash_state){i, off, b, prev};
			}
		}
	}
	return end;
}

int wl_reserve_u64(uint64_t **a, uint32_t *cap, uint32_t want)
{
	if (want <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 64;
	while (c < want)
		c *= 2;
	uint64_t *na = realloc(*a, c * sizeof *na);
	if (!na)
		return -1;
	*a = na;
	*cap = c;
	return 0;
}

static uint64_t seg_tokens(const struct wl_seg *segs, uint32_t n)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		total += segs[i].len;
	return total;
}

static uint32_t full_blocks(const struct wl_seg *segs, uint32_t n, uint32_t block_tokens)
{
	return (uint32_t)(seg_tokens(segs, n) / block_tokens);
}

int wl_hash_blocks_resume(struct request *r, const struct wl_seg *segs, uint32_t n,
			  uint32_t block_tokens, struct wl_hash_state *st, const uint64_t *prefix)
{
	return wl_hash_blocks_resume_n(r, segs, n, seg_tokens(segs, n), block_tokens, st, prefix);
}

int wl_hash_blocks_resume_n(struct request *r, const struct wl_seg *segs, uint32_t n,
			    uint64_t tokens, uint32_t block_tokens, struct wl_hash_state *st,
			    const uint64_t *prefix)
{
	uint32_t blocks = (uint32_t)(tokens / block_tokens);
	/* prefix may be r's own buffer (the history continued in place):
	 * realloc then carries it along, and there is nothing to copy */
	int in_place = prefix && prefix == r->hashes;
	if (wl_reserve_u64(&r->hashes, &r->hashes_cap, blocks))
		return -1;
	struct wl_hash_state from = {0, 0, 0, WL_HASH_ORIGIN};
	if (st->blocks && st->blocks <= blocks) {
		from = *st;
		if (prefix && !in_place)
			memcpy(r->hashes, prefix, from.blocks * sizeof *r->hashes);
	}
	r->n_hashes = blocks;
	*st = hash_core(r->hashes, segs, n, block_tokens, blocks, from, 1);
	return 0;
}

int wl_hash_blocks(struct request *r, const struct wl_seg *segs, uint32_t n, uint32_t block_tokens)
{
	struct wl_hash_state st = {0, 0, 0, 0};
	return wl_hash_blocks_resume(r, segs, n, block_tokens, &st, NULL);
}

int wl_hash_unchained(struct request *r, const struct wl_seg *segs, uint32_t n,
		      uint32_t block_tokens)
{
	uint32_t blocks = full_blocks(segs, n, block_tokens);
	if (wl_reserve_u64(&r->hashes, &r->hashes_cap, blocks))
		return -1;
	r->n_hashes = blocks;
	hash_core(r->hashes, segs, n, block_tokens, blocks,
		  (struct wl_hash_state){0, 0, 0, WL_HASH_ORIGIN}, 0);
	return 0;
}

void wl_hash_chain(struct request *const *rs, uint32_t k)
{
	/* Each chain is a serial dependency (one mix, ~14 cycles, per block),
	 * so a few are walked side by side: the core overlaps them. A lane
	 * whose request ends takes the next one. */
	enum { LANES = 4 };
	uint64_t *p[LANES], prev[LANES];
	uint32_t left[LANES], active = 0, next = 0;
	for (;;) {
		while (active < LANES && next < k) {
			const struct request *r = rs[next++];
			if (!r->n_hashes)
				continue;
			p[active] = r->hashes;
			left[active] = r->n_hashes;
			prev[active] = WL_HASH_ORIGIN;
			active++;
		}
		if (!active)
			return;
		uint32_t m = left[0];
		for (uint32_t j = 1; j < active; j++)
			if (left[j] < m)
				m = left[j];
		if (active == LANES) {
			/* in registers: four chains, one step each */
			uint64_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
			uint64_t a = prev[0], b = prev[1], c = prev[2], d = prev[3];
			for (uint32_t s = 0; s < m; s++) {
				a = rng_mix64(a ^ p0[s]);
				b = rng_mix64(b ^ p1[s]);
				c = rng_mix64(c ^ p2[s]);
				d = rng_mix64(d ^ p3[s]);
				p0[s] = a ? a : 1;
				p1[s] = b ? b : 1;
				p2[s] = c ? c : 1;
				p3[s] = d ? d : 1;
			}
			prev[0] = a;
			prev[1] = b;
			prev[2] = c;
			prev[3] = d;
		} else {
			for (uint32_t j = 0; j < active; j++) {
				uint64_t *q = p[j], h = prev[j];
				for (uint32_t s = 0; s < m; s++) {
					h = rng_mix64(h ^ q[s]);
					q[s] = h ? h : 1;
				}
				prev[j] = h;
			}
		}
		for (uint32_t j = 0; j < active;) {
			p[j] += m;
			left[j] -= m;
			if (left[j]) {
				j++;
				continue;
			}
			active--; /* the last lane takes this one's place */
			p[j] = p[active];
			left[j] = left[active];
			prev[j] = prev[active];
		}
	}
}

void wl_take(struct request *dst, struct request *src)
{
	uint64_t *h = dst->hashes;
	uint32_t cap = dst->hashes_cap;
	dst->hashes = src->hashes;
	dst->hashes_cap = src->hashes_cap;
	src->hashes = h;
	src->hashes_cap = cap;
	dst->session = src->session;
	dst->turn = src->turn;
	dst->last_turn = src->last_turn;
	dst->arrival_ns = src->arrival_ns;
	dst->prompt_tokens = src->prompt_tokens;
	dst->output_tokens = src->output_tokens;
	dst->n_hashes = src->n_hashes;
	dst->n_shared = src->n_shared;
	dst->wl_session = src->wl_session;
	dst->epoch = src->epoch;
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
