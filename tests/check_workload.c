/* check_workload: distributions, the chat prefix property, streaming. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/cfg.h"
#include "sim/request.h"
#include "sim/rng.h"
#include "workloads/common.h"
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
	struct wl_env env = {16, max_context, 5, NULL, 1.0};
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
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
