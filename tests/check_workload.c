/* check_workload: distributions, the chat prefix property, streaming. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "sim/request.h"
#include "base/rng.h"
#include "workloads/common.h"
#include "workloads/schedule.h"
#include "workloads/workload.h"
#include "tests/suites.h"

static void check_mean(const char *json, double expect)
{
	cJSON *o = cJSON_Parse(json);
	struct dist d = {0};
	char err[256] = "";
	ck_assert_msg(cfg_dist(o, "x", "d", 0, &d, err, sizeof err) == 0, "%s", err);
	gsl_rng *r = rng_stream(7, 1);
	double sum = 0;
	for (int i = 0; i < 100000; i++)
		sum += dist_sample(&d, r);
	ck_assert_msg(fabs(sum / 100000 / expect - 1) < 0.02, "%s: mean %g, expected %g", json,
		      sum / 100000, expect);
	ck_assert_double_eq_tol(dist_mean(&d), expect, 1e-9 * expect);
	gsl_rng_free(r);
	dist_free(&d);
	cJSON_Delete(o);
}

START_TEST(distribution_means)
{
	check_mean("{\"d\": {\"dist\": \"constant\", \"value\": 3}}", 3);
	check_mean("{\"d\": {\"dist\": \"uniform\", \"min\": 200, \"max\": 2000}}", 1100);
	check_mean("{\"d\": {\"dist\": \"exponential\", \"mean\": 20}}", 20);
	check_mean("{\"d\": {\"dist\": \"lognormal\", \"median\": 120, \"sigma\": 0.8}}",
		   120 * exp(0.32));
	check_mean("{\"d\": {\"dist\": \"gamma\", \"mean\": 5, \"cv\": 2}}", 5);
	check_mean("{\"d\": {\"dist\": \"geometric\", \"mean\": 4}}", 4);
	/* zipf n=3 s=1: P = (6/11, 3/11, 2/11), mean rank 18/11. */
	check_mean("{\"d\": {\"dist\": \"zipf\", \"n\": 3, \"s\": 1}}", 18.0 / 11);
}
END_TEST

/* Found by fuzzing: an integer uniform range wider than the generator's
 * (2^32) made GSL abort the process. */
START_TEST(wide_uniform_ranges_sample)
{
	struct dist d;
	ck_assert_int_eq(dist_make(&d, DIST_UNIFORM, 0, 1e12), 0);
	gsl_rng *r = rng_stream(1, 1);
	double sum = 0;
	for (int i = 0; i < 10000; i++) {
		double x = dist_sample(&d, r);
		ck_assert(x >= 0 && x <= 1e12 && floor(x) == x);
		sum += x;
	}
	ck_assert_double_lt(fabs(sum / 10000 / 5e11 - 1), 0.03);
	gsl_rng_free(r);
	dist_free(&d);
}
END_TEST

START_TEST(bad_distributions_name_the_path)
{
	cJSON *o = cJSON_Parse("{\"d\": {\"dist\": \"lognormal\", \"median\": 100}}");
	struct dist d = {0};
	char err[256] = "";
	ck_assert_int_eq(cfg_dist(o, "workload", "d", 1, &d, err, sizeof err), -1);
	ck_assert_str_eq(err, "workload.d.sigma: missing (a lognormal distribution needs it)");
	cJSON_Delete(o);
	o = cJSON_Parse("{\"d\": {\"dist\": \"uniform\", \"min\": 5, \"max\": 2}}");
	ck_assert_int_eq(cfg_dist(o, "w", "d", 1, &d, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "w.d.max: expected max >= min") != NULL, "%s", err);
	cJSON_Delete(o);
}
END_TEST

static void *make_wl(const char *json, uint32_t max_context, const struct wl_ops **ops)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	struct wl_env env = {16, max_context, 5, NULL, 1.0, NULL};
	char err[512] = "";
	void *st = wl_create(o, &env, ops, err, sizeof err);
	cJSON_Delete(o);
	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

START_TEST(chat_turn_extends_previous_prompt_and_answer)
{
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"chat\", \"turns\": {\"dist\": \"constant\", \"value\": 5}}",
			   1000000, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ck_assert_int_eq(ops->next(st, &a), 1);
	ck_assert_uint_eq(a.turn, 1);
	for (uint32_t turn = 2; turn <= 5; turn++) {
		int64_t done_at = a.arrival_ns + 1000000000;
		ck_assert_int_eq(ops->follow_up(st, &a, 1, done_at, &b), 1);
		ck_assert_uint_eq(b.turn, turn);
		ck_assert_uint_eq(b.session, a.session);
		ck_assert_int_ge(b.arrival_ns, done_at);
		/* prompt_k = prompt_{k-1} + answer_{k-1} + new message */
		ck_assert_uint_gt(b.prompt_tokens, a.prompt_tokens + a.output_tokens);
		/* Every full block of the previous prompt + answer is a prefix. */
		uint32_t prev_full = (a.prompt_tokens + a.output_tokens) / 16;
		ck_assert_uint_eq(a.n_hashes, prev_full);
		ck_assert_uint_ge(b.n_hashes, prev_full);
		for (uint32_t i = 0; i < prev_full; i++)
			ck_assert_uint_eq(a.hashes[i], b.hashes[i]);
		/* And the next block differs from what turn k-1 could have held. */
		struct request t = a;
		a = b;
		b = t;
	}
	ck_assert_int_eq(a.last_turn, 1);
	ck_assert_int_eq(ops->follow_up(st, &a, 1, a.arrival_ns + 1, &b), 0);
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
}
END_TEST

START_TEST(chat_sessions_share_system_prompts_not_history)
{
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"chat\", \"system_prompts\": {\"count\": 1, \"tokens\": "
			   "{\"dist\": \"constant\", \"value\": 320}}}",
			   1000000, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ops->next(st, &a);
	ops->next(st, &b);
	ck_assert_uint_ne(a.session, b.session);
	ck_assert_uint_eq(a.n_shared, 20);
	for (uint32_t i = 0; i < 20; i++)
		ck_assert_uint_eq(a.hashes[i], b.hashes[i]);
	ck_assert_uint_ne(a.hashes[20], b.hashes[20]);
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
}
END_TEST

START_TEST(chat_truncates_at_the_context_limit)
{
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"chat\", \"turns\": {\"dist\": \"constant\", \"value\": "
			   "50}, \"user_tokens\": {\"dist\": \"constant\", \"value\": 300}, "
			   "\"output_tokens\": {\"dist\": \"constant\", \"value\": 200}, "
			   "\"system_prompts\": {\"count\": 1, \"tokens\": {\"dist\": "
			   "\"constant\", \"value\": 1000}}}",
			   4096, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	ops->next(st, &a);
	int cut_seen = 0;
	for (int k = 0; k < 20; k++) {
		ck_assert_int_eq(ops->follow_up(st, &a, 1, a.arrival_ns, &b), 1);
		ck_assert_uint_le(b.prompt_tokens + b.output_tokens, 4096);
		/* Turn t holds 1000 + 500 t tokens (prompt and answer) until
		 * that passes 4096 at turn 7; from then on the oldest turn
		 * goes (500 tokens), leaving 4000: prompts of 3800. */
		uint32_t turn = (uint32_t)k + 2, whole = 1000 + 500 * turn - 200;
		ck_assert_uint_eq(b.prompt_tokens, whole < 3800 ? whole : 3800);
		ck_assert_uint_eq(b.n_shared, 1000 / 16);
		/* The system prompt stays as the shared head. */
		for (uint32_t i = 0; i < 62; i++)
			ck_assert_uint_eq(a.hashes[i], b.hashes[i]);
		if (b.prompt_tokens < a.prompt_tokens + a.output_tokens)
			cut_seen = 1;
		struct request t = a;
		a = b;
		b = t;
	}
	ck_assert(cut_seen);
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
}
END_TEST

/* The block hash of wl_hash_blocks's comment, token by token: a piece
 * ends at its segment's end or its block's. */
static uint32_t reference_hashes(const struct wl_seg *segs, uint32_t n, uint32_t B, uint64_t *out)
{
	uint64_t prev = WL_HASH_ORIGIN, acc = 0;
	uint32_t fill = 0, b = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t piece = 0;
		for (uint32_t off = 0; off < segs[i].len; off++) {
			fill++;
			if (fill < B && off + 1 < segs[i].len)
				continue;
			acc = rng_mix64(acc ^ rng_mix64(segs[i].id) ^ ((uint64_t)piece << 32) ^
					(off + 1 - piece));
			piece = off + 1;
			if (fill == B) {
				uint64_t h = rng_mix64(prev ^ rng_mix64(acc));
				out[b++] = h ? h : 1;
				prev = h;
				acc = 0;
				fill = 0;
			}
		}
	}
	return b;
}

/* wl_hash_blocks gives the reference's hashes: segments shorter than a
 * block, ending on a block boundary, spanning many blocks; block sizes 1
 * (every token a block) to 64. */
START_TEST(block_hashes_follow_the_definition)
{
	static const struct wl_seg segs[8] = {{11, 200}, {12, 37}, {13, 250}, {14, 16},
					      {15, 5},   {16, 333}, {17, 11}, {18, 64}};
	static uint64_t want[916];
	for (uint32_t B = 1; B <= 64; B *= 4) {
		struct request c;
		memset(&c, 0, sizeof c);
		ck_assert_int_eq(wl_hash_blocks(&c, segs, 8, B), 0);
		uint32_t n = reference_hashes(segs, 8, B, want);
		ck_assert_uint_eq(n, 916 / B);
		ck_assert_uint_eq(c.n_hashes, n);
		for (uint32_t i = 0; i < n; i++)
			ck_assert_uint_eq(c.hashes[i], want[i]);
		free(c.hashes);
	}
}
END_TEST

/* Resuming a hash chain gives exactly the hashes of hashing from scratch,
 * whatever block boundary the previous sequence ended on. */
START_TEST(resumed_hash_chains_equal_fresh_ones)
{
	struct wl_seg segs[6] = {{11, 200}, {12, 37}, {13, 250}, {14, 16}, {15, 5}, {16, 333}};
	for (uint32_t k = 1; k <= 5; k++) {
		struct request a, b, c;
		memset(&a, 0, sizeof a);
		memset(&b, 0, sizeof b);
		memset(&c, 0, sizeof c);
		struct wl_hash_state st = {0, 0, 0, 0};
		ck_assert_int_eq(wl_hash_blocks_resume(&a, segs, k, 16, &st, NULL), 0);
		ck_assert_uint_eq(st.blocks, a.n_hashes);
		ck_assert_int_eq(wl_hash_blocks_resume(&b, segs, 6, 16, &st, a.hashes), 0);
		ck_assert_int_eq(wl_hash_blocks(&c, segs, 6, 16), 0);
		ck_assert_uint_eq(b.n_hashes, c.n_hashes);
		for (uint32_t i = 0; i < c.n_hashes; i++)
			ck_assert_uint_eq(b.hashes[i], c.hashes[i]);
		/* In place: a's own chain continued in a's buffer (prefix is
		 * a.hashes; it grows past its capacity, so realloc moves it). */
		st = (struct wl_hash_state){0, 0, 0, 0};
		ck_assert_int_eq(wl_hash_blocks_resume(&a, segs, k, 16, &st, NULL), 0);
		ck_assert_int_eq(wl_hash_blocks_resume(&a, segs, 6, 16, &st, a.hashes), 0);
		ck_assert_uint_eq(a.n_hashes, c.n_hashes);
		for (uint32_t i = 0; i < c.n_hashes; i++)
			ck_assert_uint_eq(a.hashes[i], c.hashes[i]);
		free(a.hashes);
		free(b.hashes);
		free(c.hashes);
	}
}
END_TEST

/* Hashing in two halves, many requests at once, gives wl_hash_blocks's
 * hashes, with and without vector instructions: requests of 0 to ~100
 * blocks (so lanes end and take the next at every offset), segments from
 * 1 token to many blocks (whole-block runs of every length mod 8 start at
 * every offset), block sizes 1, 16 and 64, and batches of 0 to 40. */
START_TEST(batched_hashes_equal_single_ones)
{
	uint64_t x = 7;
	for (int simd_off = 0; simd_off <= 1; simd_off++)
		for (uint32_t B = 1; B <= 64; B *= 4)
			for (uint32_t kk = 0; kk <= 16; kk++) {
				/* 0 to 13 requests, then 17, 24 and 40 (lanes that
				 * end take the next one many times over) */
				uint32_t k = kk <= 13 ? kk : kk == 14 ? 17 : kk == 15 ? 24 : 40;
				wl_hash_simd_off = simd_off;
				struct request r[40], one;
				struct request *rs[40];
				struct wl_seg segs[40][6];
				uint32_t n[40];
				memset(r, 0, sizeof r);
				memset(&one, 0, sizeof one);
				for (uint32_t i = 0; i < k; i++) {
					n[i] = 1 + (uint32_t)((x = rng_mix64(x)) % 6);
					for (uint32_t j = 0; j < n[i]; j++) {
						x = rng_mix64(x);
						segs[i][j].id = x >> 8;
						segs[i][j].len = (uint32_t)(x % 7 == 0 ? x % 3
										       : x % (20 * B));
					}
					ck_assert_int_eq(wl_hash_unchained(&r[i], segs[i], n[i], B), 0);
					rs[i] = &r[i];
				}
				wl_hash_chain(rs, k);
				for (uint32_t i = 0; i < k; i++) {
					ck_assert_int_eq(wl_hash_blocks(&one, segs[i], n[i], B), 0);
					ck_assert_uint_eq(r[i].n_hashes, one.n_hashes);
					for (uint32_t b = 0; b < one.n_hashes; b++)
						ck_assert_uint_eq(r[i].hashes[b], one.hashes[b]);
					free(r[i].hashes);
				}
				free(one.hashes);
			}
	wl_hash_simd_off = 0;
}
END_TEST

static uint64_t inverse_mod_2_64(uint64_t m)
{
	uint64_t v = m; /* right to 3 bits for odd m; each step doubles them */
	for (int i = 0; i < 5; i++)
		v *= 2 - m * v;
	return v;
}

/* The x with rng_mix64(x) == y. */
static uint64_t unmix64(uint64_t y)
{
	y ^= (y >> 31) ^ (y >> 62);
	y *= inverse_mod_2_64(0x94D049BB133111EBULL);
	y ^= (y >> 27) ^ (y >> 54);
	y *= inverse_mod_2_64(0xBF58476D1CE4E5B9ULL);
	y ^= (y >> 30) ^ (y >> 60);
	return y - 0x9E3779B97F4A7C15ULL;
}

/* A block whose hash comes out 0 is written as 1 ("no hash" is 0), and
 * its child still chains from 0: in every lane, in lanes that took the
 * next request, and in the lanes left at the end of a batch (with and
 * without vector instructions, should the chains ever use them). */
START_TEST(chained_zero_hashes_are_written_as_one)
{
	enum { N = 21 };
	ck_assert_uint_eq(rng_mix64(unmix64(12345)), 12345);
	for (int simd_off = 0; simd_off <= 1; simd_off++) {
		wl_hash_simd_off = simd_off;
		struct request r[N];
		struct request *rs[N];
		uint64_t want[N][8];
		memset(r, 0, sizeof r);
		for (uint32_t i = 0; i < N; i++) {
			r[i].n_hashes = r[i].hashes_cap = 3 + i % 5;
			r[i].hashes = malloc(r[i].n_hashes * sizeof *r[i].hashes);
			for (uint32_t b = 0; b < r[i].n_hashes; b++)
				r[i].hashes[b] = 1000 * i + b;
			/* block i % 3 of request i hashes to 0 */
			uint64_t prev = WL_HASH_ORIGIN;
			for (uint32_t b = 0; b < i % 3; b++)
				prev = rng_mix64(prev ^ r[i].hashes[b]);
			r[i].hashes[i % 3] = unmix64(0) ^ prev;
			rs[i] = &r[i];
			prev = WL_HASH_ORIGIN;
			for (uint32_t b = 0; b < r[i].n_hashes; b++) {
				prev = rng_mix64(prev ^ r[i].hashes[b]);
				want[i][b] = b == i % 3 ? 1 : prev;
				ck_assert_uint_eq(prev == 0, b == i % 3);
			}
		}
		wl_hash_chain(rs, N);
		for (uint32_t i = 0; i < N; i++) {
			for (uint32_t b = 0; b < r[i].n_hashes; b++)
				ck_assert_uint_eq(r[i].hashes[b], want[i][b]);
			free(r[i].hashes);
		}
	}
	wl_hash_simd_off = 0;
}
END_TEST

/* Sessions start their hash chain after their head's cached full blocks;
 * the hashes are those of hashing every prompt from scratch: chat with
 * heads shorter than a block, of whole blocks and cut to fit the context,
 * rag (documents after the head) and agent. Digest of every request's
 * hashes, first turns and follow-ups. lend: each follow-up gets the ended
 * turn's buffer, as the simulator lends it, and every other one finds its
 * session by id (the request's pointer to it cleared). */
static uint64_t hash_digest(const char *json, uint32_t max_context, int off, int lend,
			    uint64_t *n_hashes)
{
	const struct wl_ops *ops;
	wl_head_hashes_off = off;
	void *st = make_wl(json, max_context, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	uint64_t d = 0;
	*n_hashes = 0;
	for (int k = 0; k < 200 && ops->next(st, &a) == 1; k++) {
		for (int turn = 0; turn < 6; turn++) {
			for (uint32_t i = 0; i < a.n_hashes; i++)
				d = rng_mix64(d ^ a.hashes[i]);
			*n_hashes += a.n_hashes;
			uint64_t *spare = b.hashes;
			uint32_t spare_cap = b.hashes_cap;
			if (lend) {
				b.hashes = a.hashes;
				b.hashes_cap = a.hashes_cap;
				if (turn % 2)
					a.wl_session = NULL; /* found by id instead */
			}
			int got = ops->follow_up(st, &a, 1, a.arrival_ns, &b);
			if (lend) {
				a.hashes = spare;
				a.hashes_cap = spare_cap;
			}
			if (got != 1)
				break;
			struct request t = a;
			a = b;
			b = t;
		}
	}
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
	wl_head_hashes_off = 0;
	return d;
}

START_TEST(head_hashes_equal_fresh_ones)
{
	static const struct {
		const char *json;
		uint32_t ctx;
	} cases[] = {
	    {"{\"kind\": \"chat\", \"system_prompts\": {\"count\": 5, \"tokens\": {\"dist\": "
	     "\"uniform\", \"min\": 3, \"max\": 90}}}",
	     8192},
	    {"{\"kind\": \"chat\", \"system_prompts\": {\"count\": 2, \"tokens\": {\"dist\": "
	     "\"constant\", \"value\": 64}}}",
	     8192},
	    {"{\"kind\": \"chat\", \"turns\": {\"dist\": \"constant\", \"value\": 6}, "
	     "\"user_tokens\": {\"dist\": \"constant\", \"value\": 300}}",
	     1500},
	    {"{\"kind\": \"rag\", \"follow_up_prob\": 0.8}", 32768},
	    {"{\"kind\": \"agent\"}", 32768},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		uint64_t n_on, n_off;
		uint64_t on = hash_digest(cases[c].json, cases[c].ctx, 0, 0, &n_on);
		uint64_t off = hash_digest(cases[c].json, cases[c].ctx, 1, 0, &n_off);
		ck_assert_uint_gt(n_on, 1000);
		ck_assert_uint_eq(n_on, n_off);
		ck_assert_msg(on == off, "case %zu: hashes differ", c);
		/* and with each turn's buffer lent to the next */
		uint64_t n_lent, lent = hash_digest(cases[c].json, cases[c].ctx, 0, 1, &n_lent);
		ck_assert_uint_eq(n_lent, n_on);
		ck_assert_msg(lent == on, "case %zu: lent buffers change the hashes", c);
	}
}
END_TEST

START_TEST(open_arrivals_and_lengths)
{
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"open\", \"rate_per_s\": 50, \"max_requests\": 100000, "
			   "\"input_tokens\": {\"dist\": \"constant\", \"value\": 100}, "
			   "\"output_tokens\": {\"dist\": \"constant\", \"value\": 7}}",
			   8192, &ops);
	struct request r;
	memset(&r, 0, sizeof r);
	int64_t prev = 0, n = 0;
	while (ops->next(st, &r) == 1) {
		ck_assert_int_ge(r.arrival_ns, prev);
		ck_assert_uint_eq(r.prompt_tokens, 100);
		ck_assert_uint_eq(r.output_tokens, 7);
		ck_assert_uint_eq(r.n_hashes, 6); /* 107 tokens: 6 full blocks */
		prev = r.arrival_ns;
		n++;
	}
	ck_assert_int_eq(n, 100000);
	double rate = (double)n / (prev * 1e-9);
	ck_assert_msg(fabs(rate / 50 - 1) < 0.02, "rate %g", rate);
	free(r.hashes);
	ops->destroy(st);
}
END_TEST

struct gen_means {
	double sessions, requests, turns, output, user_later, think_s, first_prompt;
};

/* Draws sessions (all their turns, as trace gen does) until n requests. */
static void gen_means(const char *json, int n_requests, struct gen_means *g)
{
	const struct wl_ops *ops;
	void *st = make_wl(json, 100000000, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	memset(g, 0, sizeof *g);
	double later = 0;
	while (g->requests < n_requests && ops->next(st, &a) == 1) {
		g->sessions++;
		g->requests++;
		g->output += a.output_tokens;
		g->first_prompt += a.prompt_tokens;
		struct request *cur = &a, *nxt = &b;
		while (ops->follow_up && ops->follow_up(st, cur, 1, 0, nxt) == 1) {
			g->requests++;
			later++;
			g->output += nxt->output_tokens;
			g->user_later += nxt->prompt_tokens - cur->prompt_tokens - cur->output_tokens;
			g->think_s += (double)nxt->arrival_ns * 1e-9;
			struct request *t = cur;
			cur = nxt;
			nxt = t;
		}
	}
	g->turns = g->requests / g->sessions;
	g->output /= g->requests;
	g->first_prompt /= g->sessions;
	if (later > 0) {
		g->user_later /= later;
		g->think_s /= later;
	}
	free(a.hashes);
	free(b.hashes);
	ops->destroy(st);
}

#define NEAR(x, want) ck_assert_msg(fabs((x) / (want) - 1) < 0.02, #x " = %g, expected %g", (x), (want))

START_TEST(generator_means_match_their_distributions)
{
	struct gen_means g;
	gen_means("{\"kind\": \"chat\", \"max_sessions\": 1000000}", 100000, &g);
	ck_assert_double_ge(g.requests, 100000);
	NEAR(g.turns, 4.0);                    /* geometric, mean 4 */
	NEAR(g.output, 250 * exp(0.18));       /* lognormal 250, 0.6 */
	NEAR(g.user_later, 120 * exp(0.32));   /* lognormal 120, 0.8 */
	NEAR(g.think_s, 20.0);                 /* exponential, mean 20 */
	gen_means("{\"kind\": \"rag\", \"max_requests\": 1000000, \"follow_up_prob\": 0.5}", 100000,
		  &g);
	NEAR(g.turns, 2.0);                    /* 1 + geometric follow-ups: 1 / (1 - p) */
	NEAR(g.output, 200 * exp(0.18));
	NEAR(g.user_later, 60 * exp(0.125));   /* questions */
	NEAR(g.think_s, 15.0);
	gen_means("{\"kind\": \"agent\", \"max_chains\": 1000000}", 100000, &g);
	NEAR(g.turns, 6.0);                    /* steps: geometric, mean 6 */
	NEAR(g.output, 60 * exp(0.125));
	NEAR(g.user_later, 300 * exp(0.32));   /* tool results */
	NEAR(g.think_s, 1.0);                  /* tool latency */
	gen_means("{\"kind\": \"open\", \"max_requests\": 100000}", 100000, &g);
	NEAR(g.first_prompt, 512 * exp(0.32));
	NEAR(g.output, 128 * exp(0.18));
}
END_TEST

START_TEST(zipf_popularity_ranks)
{
	struct wl_pool pool;
	struct dist len;
	char err[256];
	dist_make(&len, DIST_CONSTANT, 100, 0);
	ck_assert_int_eq(wl_pool_parse(&pool, NULL, "w", "documents", 100, &len, 3,
				       WL_STREAM_DOCUMENTS, err, sizeof err),
			 0);
	uint64_t ids[100];
	for (uint32_t k = 0; k < 100; k++) {
		struct wl_seg seg;
		wl_pool_item(&pool, k, &seg);
		ids[k] = seg.id;
	}
	int count[100] = {0};
	gsl_rng *r = rng_stream(9, 9);
	for (int i = 0; i < 200000; i++) {
		struct wl_seg seg;
		wl_pool_draw(&pool, r, &seg);
		for (uint32_t k = 0; k < 100; k++)
			if (seg.id == ids[k]) {
				count[k]++;
				break;
			}
	}
	/* P(rank k) = (1/k) / H_100, H_100 = 5.18738; ranks in order at the top. */
	double h = 0;
	for (int k = 1; k <= 100; k++)
		h += 1.0 / k;
	NEAR(count[0] / 200000.0, 1 / h);
	NEAR(count[1] / 200000.0, 0.5 / h);
	NEAR((double)count[0] / count[3], 4.0);
	for (int k = 0; k < 5; k++)
		ck_assert_int_gt(count[k], count[k + 1]);
	gsl_rng_free(r);
	wl_pool_free(&pool);
}
END_TEST

/* Bursty session arrivals: Gamma-renewal gaps with the configured rate and
 * coefficient of variation. */
START_TEST(chat_gamma_arrivals_have_rate_and_cv)
{
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"chat\", \"sessions_per_s\": 5, \"arrival\": \"gamma\", "
			   "\"cv\": 1.5, \"max_sessions\": 100000}",
			   100000000, &ops);
	struct request r;
	memset(&r, 0, sizeof r);
	double sum = 0, sumsq = 0, n = 0;
	int64_t prev = 0;
	while (ops->next(st, &r) == 1) {
		double gap = (double)(r.arrival_ns - prev) * 1e-9;
		prev = r.arrival_ns;
		sum += gap;
		sumsq += gap * gap;
		n++;
	}
	double mean = sum / n, sd = sqrt(sumsq / n - mean * mean);
	ck_assert_double_eq(n, 100000);
	NEAR(mean, 0.2);
	NEAR(sd / mean, 1.5);
	free(r.hashes);
	ops->destroy(st);
}
END_TEST

/* --- rate schedules (workloads/schedule.c) --- */

#define SEC 1000000000LL
#define PI 3.14159265358979323846

/* The schedule of `{"rate_schedule": ...}` text. */
static void sched_of(const char *json, struct wl_schedule *s)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	char err[512] = "";
	ck_assert_msg(wl_schedule_parse(s, o, "workload", NULL, err, sizeof err) == 0, "%s", err);
	cJSON_Delete(o);
}

static void sched_bad(const char *json, const char *want)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	struct wl_schedule s;
	char err[512] = "";
	ck_assert_int_eq(wl_schedule_parse(&s, o, "workload", NULL, err, sizeof err), -1);
	ck_assert_str_eq(err, want);
	cJSON_Delete(o);
}

/* Lambda(t) = integral of scale, inverted by hand: a step from x1 to x3 at
 * 100 s gives Lambda = t to 100 s, then 100 + 3 (t - 100); a ramp from x1
 * to x3 over [100, 200) s gives Lambda = 100 + y + y^2 / 100 (y = t - 100
 * s), so Lambda = 175 s at y = 50 s exactly (the root of y^2 + 100 y -
 * 7500); a pause (x0) keeps Lambda flat, and the arrival due when it starts
 * comes as it ends. */
START_TEST(schedule_steps_and_ramps_invert_exactly)
{
	struct wl_schedule s;
	sched_of("{\"rate_schedule\": [{\"at_s\": 100, \"scale\": 3}]}", &s);
	ck_assert_int_eq(wl_schedule_map(&s, 50 * SEC), 50 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 100 * SEC), 100 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 130 * SEC), 110 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 130 * SEC + 1), 110 * SEC); /* 1/3 ns, rounded */
	ck_assert_int_eq(wl_schedule_map(&s, 130 * SEC + 2), 110 * SEC + 1);
	ck_assert_double_eq(wl_schedule_lambda(&s, 110e9), 130e9);
	ck_assert_double_eq(wl_schedule_scale(&s, 99.999), 1);
	ck_assert_double_eq(wl_schedule_scale(&s, 100), 3);
	wl_schedule_free(&s);

	sched_of("{\"rate_schedule\": [{\"at_s\": 100, \"scale\": 3, \"ramp_s\": 100}]}", &s);
	ck_assert_int_eq(wl_schedule_map(&s, 100 * SEC), 100 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 175 * SEC), 150 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 300 * SEC), 200 * SEC); /* mean x2 over 100 s */
	ck_assert_int_eq(wl_schedule_map(&s, 330 * SEC), 210 * SEC);
	ck_assert_double_eq(wl_schedule_scale(&s, 150), 2);
	ck_assert_double_eq(wl_schedule_lambda(&s, 150e9), 175e9);
	wl_schedule_free(&s);

	/* x0 over [10, 20) s, then x2 */
	sched_of("{\"rate_schedule\": [{\"at_s\": 10, \"scale\": 0}, {\"at_s\": 20, \"scale\": 2}]}",
		 &s);
	ck_assert_int_eq(wl_schedule_map(&s, 9 * SEC), 9 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 10 * SEC), 20 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 12 * SEC), 21 * SEC);
	wl_schedule_free(&s);

	/* x2, a ramp down to x0 over [10, 20) s, x0 to 30 s, then x1:
	 * Lambda(10) = 20, Lambda(20) = 30; on the ramp 2y - y^2 / 10 = d,
	 * y = 10 - sqrt(100 - 10 d), so d = 5 s gives y = 10 - sqrt(50). */
	sched_of("{\"rate_schedule\": [{\"at_s\": 0, \"scale\": 2}, {\"at_s\": 10, \"scale\": 0, "
		 "\"ramp_s\": 10}, {\"at_s\": 30, \"scale\": 1}]}",
		 &s);
	ck_assert_int_eq(wl_schedule_map(&s, 20 * SEC), 10 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 25 * SEC), llround((20 - sqrt(50)) * 1e9));
	ck_assert_int_eq(wl_schedule_map(&s, 30 * SEC), 30 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 31 * SEC), 31 * SEC);
	wl_schedule_free(&s);

	/* Ending at x0: past Lambda's last value nothing arrives. */
	sched_of("{\"rate_schedule\": [{\"at_s\": 5, \"scale\": 0}]}", &s);
	ck_assert_int_eq(wl_schedule_map(&s, 4 * SEC), 4 * SEC);
	ck_assert_int_eq(wl_schedule_map(&s, 6 * SEC), CFG_TIME_MAX_NS);
	wl_schedule_free(&s);
}
END_TEST

/* The diurnal Lambda (c = (max + min) / 2, a = (max - min) / 2, w = 2 pi /
 * period): c t + (a / w) (sin(w (t - peak)) + sin(w peak)). The inverse of
 * u (whole ns) is within 1 ns of the exact one, t* = T + (u - Lambda(T)) /
 * scale(T) for a point T whose Lambda is known by hand (u is Lambda(T)
 * rounded, so t* is within a few ns of T and the correction is exact to
 * far below a ns). */
static void diurnal_at(struct wl_schedule *s, double T, double lam_T, double scale_T)
{
	int64_t u = llround(lam_T * 1e9);
	double want = T * 1e9 + ((double)u - lam_T * 1e9) / scale_T;
	int64_t got = wl_schedule_map(s, u);
	ck_assert_msg(fabs((double)got - want) <= 1, "t = %g s: got %lld ns, want %.3f", T,
		      (long long)got, want);
	ck_assert_double_eq_tol(wl_schedule_scale(s, T), scale_T, 1e-12);
	ck_assert_double_eq_tol(wl_schedule_lambda(s, T * 1e9), lam_T * 1e9, 0.5);
}

START_TEST(diurnal_inverse_within_a_ns)
{
	struct wl_schedule s;
	/* scale = 1 + cos(2 pi t / 100): Lambda = t + (50 / pi) sin(2 pi t / 100) */
	sched_of("{\"rate_schedule\": {\"kind\": \"diurnal\", \"period_s\": 100, \"min_scale\": 0, "
		 "\"max_scale\": 2, \"peak_at_s\": 0}}",
		 &s);
	ck_assert_double_eq(wl_schedule_scale(&s, 0), 2);
	diurnal_at(&s, 25, 25 + 50 / PI, 1);
	diurnal_at(&s, 40, 40 + 50 / PI * sin(0.8 * PI), 1 + cos(0.8 * PI));
	diurnal_at(&s, 75, 75 - 50 / PI, 1);
	diurnal_at(&s, 125, 125 + 50 / PI, 1);
	/* At a zero of the multiplier (the trough, 50 s) Lambda is flat to
	 * the third order: Lambda(50 s + e) - 50 s = (2 pi / 100 s)^2 e^3 / 6,
	 * under a ns of u for e up to 11 ms. The root is then as close as
	 * double arithmetic tells (Lambda's rounding, 1e-5 ns at 50 s, is
	 * Lambda's change over 0.25 ms). */
	int64_t t = wl_schedule_map(&s, 150 * SEC);
	ck_assert_msg(llabs(t - 150 * SEC) < 1000000, "%lld", (long long)t);
	wl_schedule_free(&s);

	/* A day: x0.2 to x1, peak at 14:00 (50400 s); w 50400 = 7 pi / 6.
	 * Lambda = 0.6 t + (17280 / pi) (sin(w (t - 50400)) - 1/2). */
	sched_of("{\"rate_schedule\": {\"kind\": \"diurnal\", \"min_scale\": 0.2, \"max_scale\": 1, "
		 "\"peak_at_s\": 50400}}",
		 &s);
	ck_assert_double_eq(s.period_s, 86400); /* the default */
	diurnal_at(&s, 50400, 30240 - 8640 / PI, 1);            /* the first peak */
	diurnal_at(&s, 93600, 56160 - 8640 / PI, 0.2);           /* the next trough */
	diurnal_at(&s, 223200, 133920 - 8640 / PI, 1);          /* the third peak */
	diurnal_at(&s, 223200 + 21600, 146880 + 8640 / PI, 0.6); /* 6 h after it */
	wl_schedule_free(&s);
}
END_TEST

START_TEST(schedule_errors_name_the_path)
{
	sched_bad("{\"rate_schedule\": 2}",
		  "workload.rate_schedule: expected an array of steps [{\"at_s\", \"scale\", "
		  "\"ramp_s\"?}] or {\"kind\": \"diurnal\", \"period_s\", \"min_scale\", "
		  "\"max_scale\", \"peak_at_s\"}, got a number");
	sched_bad("{\"rate_schedule\": []}",
		  "workload.rate_schedule: expected a non-empty array of steps [{\"at_s\", "
		  "\"scale\", \"ramp_s\"?}], got an empty array");
	sched_bad("{\"rate_schedule\": [{\"at_s\": 10, \"scale\": 1}, {\"at_s\": 20, \"scale\": 2}, "
		  "{\"at_s\": 15, \"scale\": 1}]}",
		  "workload.rate_schedule[2].at_s: expected more than the previous step's at_s "
		  "(20), got 15");
	sched_bad("{\"rate_schedule\": [{\"at_s\": 10, \"scale\": 1, \"ramp_s\": 20}, {\"at_s\": 20, "
		  "\"scale\": 2}]}",
		  "workload.rate_schedule[1].at_s: expected at least 30 (the previous step's at_s "
		  "+ ramp_s, where its ramp ends), got 20");
	sched_bad("{\"rate_schedule\": [{\"at_s\": 10, \"scale\": -1}]}",
		  "workload.rate_schedule[0].scale: expected a number in [0, 1e+06], got -1");
	sched_bad("{\"rate_schedule\": [{\"scale\": 1}]}",
		  "workload.rate_schedule[0].at_s: missing (a step needs it)");
	sched_bad("{\"rate_schedule\": [{\"at_s\": 1, \"scale\": 1, \"ramp\": 1}]}",
		  "workload.rate_schedule[0].ramp: unknown key (expected one of: at_s, scale, "
		  "ramp_s)");
	sched_bad("{\"rate_schedule\": {\"kind\": \"weekly\"}}",
		  "workload.rate_schedule.kind: expected one of diurnal, got \"weekly\"");
	sched_bad("{\"rate_schedule\": {\"kind\": \"diurnal\", \"min_scale\": 0.5, \"max_scale\": "
		  "0.2, \"peak_at_s\": 0}}",
		  "workload.rate_schedule.max_scale: expected max_scale >= min_scale (0.5), got "
		  "0.2");
	sched_bad("{\"rate_schedule\": {\"kind\": \"diurnal\", \"min_scale\": 0, \"max_scale\": 0, "
		  "\"peak_at_s\": 0}}",
		  "workload.rate_schedule.max_scale: expected a number > 0 (at 0 nothing ever "
		  "arrives), got 0");
	sched_bad("{\"rate_schedule\": {\"kind\": \"diurnal\", \"period_s\": 0, \"min_scale\": 0, "
		  "\"max_scale\": 1, \"peak_at_s\": 0}}",
		  "workload.rate_schedule.period_s: expected a number in [1e-06, 4e+09], got 0");
	sched_bad("{\"rate_schedule\": {\"kind\": \"diurnal\", \"max_scale\": 1, \"peak_at_s\": 0}}",
		  "workload.rate_schedule.min_scale: missing (a diurnal schedule needs it)");
}
END_TEST

/* The arrivals under a schedule are the constant-rate ones (same draws,
 * same lengths) moved by the time change: x1 to 100 s, then x3, so
 * u past 100 s arrives at 100 + (u - 100) / 3 s; and the counts per
 * interval are the Poisson ones, 10/s then 30/s, within 4 sigma. */
START_TEST(step_in_rate_shows_in_arrivals)
{
	const struct wl_ops *ops;
	void *plain = make_wl("{\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 100000}",
			      100000, &ops);
	void *st = make_wl("{\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 100000, "
			   "\"rate_schedule\": [{\"at_s\": 100, \"scale\": 3}]}",
			   100000, &ops);
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	int64_t n[2] = {0, 0};
	for (;;) {
		ck_assert_int_eq(ops->next(plain, &a), 1);
		ck_assert_int_eq(ops->next(st, &b), 1);
		int64_t u = a.arrival_ns;
		int64_t want = u < 100 * SEC ? u : 100 * SEC + llround((double)(u - 100 * SEC) / 3);
		ck_assert_int_eq(b.arrival_ns, want);
		ck_assert_uint_eq(b.prompt_tokens, a.prompt_tokens);
		ck_assert_uint_eq(b.output_tokens, a.output_tokens);
		if (b.arrival_ns >= 200 * SEC)
			break;
		n[b.arrival_ns >= 100 * SEC]++;
	}
	ck_assert_msg(fabs((double)n[0] - 1000) < 4 * sqrt(1000), "%lld in [0, 100) s",
		      (long long)n[0]);
	ck_assert_msg(fabs((double)n[1] - 3000) < 4 * sqrt(3000), "%lld in [100, 200) s",
		      (long long)n[1]);
	free(a.hashes);
	free(b.hashes);
	ops->destroy(plain);
	ops->destroy(st);
}
END_TEST

/* A diurnal chat day: the same seed gives the same arrivals, another seed
 * others; and a follow-up turn is not time-changed: it comes its think
 * time after the answer, as without a schedule. */
START_TEST(scheduled_arrivals_reproduce_by_seed)
{
	const char *json = "{\"kind\": \"chat\", \"sessions_per_s\": 2, \"max_sessions\": 2000, "
			   "\"rate_schedule\": {\"kind\": \"diurnal\", \"period_s\": 600, "
			   "\"min_scale\": 0.1, \"max_scale\": 1, \"peak_at_s\": 300}}";
	const struct wl_ops *ops;
	void *x = make_wl(json, 1000000, &ops), *y = make_wl(json, 1000000, &ops);
	cJSON *o = cJSON_Parse(json);
	struct wl_env env = {16, 1000000, 6, NULL, 1.0, NULL}; /* another seed */
	char err[512] = "";
	void *z = wl_create(o, &env, &ops, err, sizeof err);
	ck_assert_msg(z != NULL, "%s", err);
	cJSON_Delete(o);
	struct request a, b, c;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	int differ = 0;
	int64_t prev = 0;
	for (int i = 0; i < 2000; i++) {
		ck_assert_int_eq(ops->next(x, &a), 1);
		ck_assert_int_eq(ops->next(y, &b), 1);
		ck_assert_int_eq(ops->next(z, &c), 1);
		ck_assert_int_eq(a.arrival_ns, b.arrival_ns);
		ck_assert_uint_eq(a.prompt_tokens, b.prompt_tokens);
		ck_assert_int_ge(a.arrival_ns, prev);
		prev = a.arrival_ns;
		differ += a.arrival_ns != c.arrival_ns;
	}
	ck_assert_int_gt(differ, 1990);
	ck_assert_int_eq(ops->next(x, &a), 0);
	ops->destroy(x);
	ops->destroy(y);
	ops->destroy(z);

	/* The first session with a second turn, with and without the
	 * schedule, its first turn answered at 1000 s. */
	x = make_wl(json, 1000000, &ops);
	y = make_wl("{\"kind\": \"chat\", \"sessions_per_s\": 2, \"max_sessions\": 2000}",
		    1000000, &ops);
	int checked = 0;
	for (int i = 0; i < 50 && !checked; i++) {
		ck_assert_int_eq(ops->next(x, &a), 1);
		ck_assert_int_eq(ops->next(y, &b), 1);
		ck_assert_uint_eq(a.session, b.session);
		if (a.last_turn)
			continue;
		ck_assert_int_ne(a.arrival_ns, b.arrival_ns);
		struct request fa, fb;
		memset(&fa, 0, sizeof fa);
		memset(&fb, 0, sizeof fb);
		ck_assert_int_eq(ops->follow_up(x, &a, 1, 1000 * SEC, &fa), 1);
		ck_assert_int_eq(ops->follow_up(y, &b, 1, 1000 * SEC, &fb), 1);
		ck_assert_int_gt(fa.arrival_ns, 1000 * SEC);
		ck_assert_int_eq(fa.arrival_ns, fb.arrival_ns);
		ck_assert_uint_eq(fa.prompt_tokens, fb.prompt_tokens);
		free(fa.hashes);
		free(fb.hashes);
		checked = 1;
	}
	ck_assert(checked);
	free(a.hashes);
	free(b.hashes);
	free(c.hashes);
	ops->destroy(x);
	ops->destroy(y);
}
END_TEST

/* A mix: a part's own rate_schedule, the mix's for the others. Part 0
 * doubles at 50 s, part 1 follows the mix's pause from 50 s on. */
START_TEST(mix_parts_follow_their_schedules)
{
	const char *json =
	    "{\"kind\": \"mix\", \"rate_schedule\": [{\"at_s\": 50, \"scale\": 0}], \"parts\": ["
	    "{\"workload\": {\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 100000, "
	    "\"rate_schedule\": [{\"at_s\": 50, \"scale\": 2}]}},"
	    "{\"workload\": {\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 100000}}]}";
	const struct wl_ops *ops;
	void *st = make_wl(json, 100000, &ops);
	struct request r;
	memset(&r, 0, sizeof r);
	int64_t n[2][2] = {{0, 0}, {0, 0}}; /* [part][before, after 50 s] */
	while (ops->next(st, &r) == 1 && r.arrival_ns < 100 * SEC)
		n[(r.session - 1) % 2][r.arrival_ns >= 50 * SEC]++;
	ck_assert_msg(fabs((double)n[0][0] - 500) < 4 * sqrt(500), "%lld", (long long)n[0][0]);
	ck_assert_msg(fabs((double)n[1][0] - 500) < 4 * sqrt(500), "%lld", (long long)n[1][0]);
	ck_assert_msg(fabs((double)n[0][1] - 1000) < 4 * sqrt(1000), "%lld", (long long)n[0][1]);
	ck_assert_int_eq(n[1][1], 0);
	free(r.hashes);
	ops->destroy(st);
	cJSON *o = cJSON_Parse(json);
	char lines[1024];
	wl_schedule_lines(o, lines, sizeof lines);
	ck_assert_str_eq(lines, "rate schedule of workload.parts[0]: x1 from 0 s, x2 from 50 s\n"
				"rate schedule of workload.parts[1]: x1 from 0 s, x0 from 50 s\n");
	cJSON_Delete(o);
}
END_TEST

/* The arrival times (s) and output lengths a trace workload gives. */
static int trace_arrivals(const char *json, double *at, uint32_t *out, int max)
{
	const struct wl_ops *ops;
	void *st = make_wl(json, 100000, &ops);
	struct request r;
	memset(&r, 0, sizeof r);
	int n = 0, got;
	while (n < max && (got = ops->next(st, &r)) == 1) {
		at[n] = (double)r.arrival_ns * 1e-9;
		out[n++] = r.output_tokens;
	}
	free(r.hashes);
	ops->destroy(st);
	return n;
}

/* tests/data/window.jsonl: ten requests, 1 s apart from its first arrival
 * (output lengths 1..10). [2.5, 6.5) s keeps the 4th to 7th, their times
 * moved back by 2.5 s; a second pass starts 1 s after the first's last
 * arrival; x2 halves the times. */
START_TEST(trace_window_cuts_and_shifts)
{
	double at[16];
	uint32_t out[16];
	const char *base = "{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": "
			   "\"tests/data/window.jsonl\", \"start_s\": 2.5, \"end_s\": 6.5";
	char json[512];
	snprintf(json, sizeof json, "%s}", base);
	ck_assert_int_eq(trace_arrivals(json, at, out, 16), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_double_eq_tol(at[i], 0.5 + i, 1e-9);
		ck_assert_uint_eq(out[i], 4 + (uint32_t)i);
	}
	snprintf(json, sizeof json, "%s, \"repeat\": 2}", base);
	ck_assert_int_eq(trace_arrivals(json, at, out, 16), 8);
	for (int i = 0; i < 4; i++) {
		ck_assert_double_eq_tol(at[4 + i], 5.0 + i, 1e-9);
		ck_assert_uint_eq(out[4 + i], 4 + (uint32_t)i);
	}
	snprintf(json, sizeof json, "%s, \"rate_schedule\": [{\"at_s\": 0, \"scale\": 2}]}", base);
	ck_assert_int_eq(trace_arrivals(json, at, out, 16), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq_tol(at[i], 0.25 + 0.5 * i, 1e-9);

	/* kvsim: sessions at 1, 3, 5 and 8 s; [2, 6) keeps sessions 2 and
	 * 3 whole (session 2's second turn included) and drops 1 and 4
	 * with their later turns. */
	const struct wl_ops *ops;
	void *st = make_wl("{\"kind\": \"trace\", \"format\": \"kvsim\", \"path\": "
			   "\"tests/data/window_kvsim.jsonl\", \"start_s\": 2, \"end_s\": 6}",
			   100000, &ops);
	struct request a, b, c;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(ops->next(st, &a), 1);
	ck_assert_uint_eq(a.session, 2);
	ck_assert_int_eq(a.arrival_ns, 1 * SEC);
	ck_assert_int_eq(ops->next(st, &b), 1);
	ck_assert_uint_eq(b.session, 3);
	ck_assert_int_eq(b.arrival_ns, 3 * SEC);
	ck_assert_int_eq(ops->follow_up(st, &a, 1, 10 * SEC, &c), 1);
	ck_assert_uint_eq(c.session, 2);
	ck_assert_uint_eq(c.turn, 2);
	ck_assert_int_eq(c.arrival_ns, 12 * SEC); /* its after_s, not time-changed */
	ck_assert_int_eq(ops->next(st, &a), 0);
	free(a.hashes);
	free(b.hashes);
	free(c.hashes);
	ops->destroy(st);

	/* A window with no request in it is an error once the trace is read;
	 * one that ends where it starts, at once. */
	st = make_wl("{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": "
		     "\"tests/data/window.jsonl\", \"start_s\": 20}",
		     100000, &ops);
	memset(&a, 0, sizeof a);
	ck_assert_int_eq(ops->next(st, &a), -1);
	ck_assert_str_eq(ops->error(st),
			 "tests/data/window.jsonl: no request arrives in the window [20 s, its end) "
			 "that workload.start_s and end_s cut from the trace (times from the "
			 "trace's first arrival)");
	free(a.hashes);
	ops->destroy(st);
	cJSON *o = cJSON_Parse("{\"kind\": \"trace\", \"format\": \"mooncake\", \"path\": "
			       "\"tests/data/window.jsonl\", \"start_s\": 5, \"end_s\": 5}");
	struct wl_env env = {16, 100000, 1, NULL, 1.0, NULL};
	char err[512] = "";
	ck_assert_ptr_null(wl_create(o, &env, &ops, err, sizeof err));
	ck_assert_str_eq(err, "workload.end_s: expected more than start_s (5), got 5");
	cJSON_Delete(o);
}
END_TEST

Suite *workload_suite(void)
{
	Suite *s = suite_create("workload");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, distribution_means);
	tcase_add_test(tc, bad_distributions_name_the_path);
	tcase_add_test(tc, wide_uniform_ranges_sample);
	tcase_add_test(tc, chat_turn_extends_previous_prompt_and_answer);
	tcase_add_test(tc, chat_sessions_share_system_prompts_not_history);
	tcase_add_test(tc, chat_truncates_at_the_context_limit);
	tcase_add_test(tc, open_arrivals_and_lengths);
	tcase_add_test(tc, resumed_hash_chains_equal_fresh_ones);
	tcase_add_test(tc, batched_hashes_equal_single_ones);
	tcase_add_test(tc, chained_zero_hashes_are_written_as_one);
	tcase_add_test(tc, block_hashes_follow_the_definition);
	tcase_add_test(tc, head_hashes_equal_fresh_ones);
	tcase_add_test(tc, generator_means_match_their_distributions);
	tcase_add_test(tc, zipf_popularity_ranks);
	tcase_add_test(tc, chat_gamma_arrivals_have_rate_and_cv);
	tcase_add_test(tc, schedule_steps_and_ramps_invert_exactly);
	tcase_add_test(tc, diurnal_inverse_within_a_ns);
	tcase_add_test(tc, schedule_errors_name_the_path);
	tcase_add_test(tc, step_in_rate_shows_in_arrivals);
	tcase_add_test(tc, scheduled_arrivals_reproduce_by_seed);
	tcase_add_test(tc, mix_parts_follow_their_schedules);
	tcase_add_test(tc, trace_window_cuts_and_shifts);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
