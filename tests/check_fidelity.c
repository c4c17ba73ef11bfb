/* check_fidelity: the profile reader, interpolation, calibration and a fast
 * subset of VALIDATION.md's targets. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/attention.h"
#include "model/calibrate.h"
#include "model/catalog.h"
#include "config/config.h"
#include "model/cost.h"
#include "model/profile.h"
#include "model/published.h"
#include "tests/helpers.h"
#include "tests/suites.h"

#define PROFILES "data/profiles/vidur"

/* tests/data/mlp_small.csv: synthetic Vidur-format rows (Llama-2-7B's
 * shape): linear operators summing to 0.2, 0.25, 0.4, 0.8 ms at 1, 64, 128,
 * 256 tokens (TP 1; 128 measured twice, the second at 0.6), five other
 * operators at 0.01 ms each, emb 0.002 ms. */
START_TEST(profile_reader_and_interpolation)
{
	struct profile p;
	char err[1024];
	ck_assert_msg(prof_read(&p, "tests/data/mlp_small.csv", err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(p.n_embd, 4096);
	ck_assert_int_eq(p.n_expanded_embd, 11008);
	ck_assert_int_eq(p.gated, 1);
	ck_assert_int_eq(p.n_series, 2);
	const struct prof_series *s = prof_series_for(&p, 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(s->n, 4); /* the repeat is merged */
	ck_assert_ptr_null(prof_series_for(&p, 4));
	/* Exact at profiled points; the repeat averaged: (0.4 + 0.6) / 2. */
	ck_assert_double_eq_tol(prof_interp(s, PROF_LINEAR, 1), 0.2e-3, 1e-12);
	ck_assert_double_eq_tol(prof_interp(s, PROF_LINEAR, 64), 0.25e-3, 1e-12);
	ck_assert_double_eq_tol(prof_interp(s, PROF_LINEAR, 128), 0.5e-3, 1e-12);
	ck_assert_double_eq_tol(prof_interp(s, PROF_LAYER, 256), 0.85e-3, 1e-12);
	ck_assert_double_eq_tol(prof_interp(s, PROF_EMB, 64), 0.002e-3, 1e-12);
	/* Linear in between: 192 tokens is halfway from 0.5 to 0.8. */
	ck_assert_double_eq_tol(prof_interp(s, PROF_LINEAR, 192), 0.65e-3, 1e-12);
	/* Past the top, proportional to tokens; below the bottom, flat. */
	ck_assert_double_eq_tol(prof_interp(s, PROF_LINEAR, 512), 1.6e-3, 1e-12);
	ck_assert_double_eq_tol(prof_interp(prof_series_for(&p, 2), PROF_LINEAR, 0.5), 0.12e-3,
				1e-12);
	/* One layer's linear weights: QKV 4096 x 3 x 4096, output 4096^2,
	 * gate+up 2 x 4096 x 11008, down 11008 x 4096. */
	ck_assert_double_eq(prof_linear_params(&p, 1),
			    4096.0 * 3 * 4096 + 4096.0 * 4096 + 3 * 4096.0 * 11008);
	prof_free(&p);

	/* Bad input names FILE:LINE. */
	FILE *f = fopen("/tmp/kvsim_bad_mlp.csv", "w");
	char *good = th_slurp("tests/data/mlp_small.csv");
	char *nl = strchr(good, '\n');
	fwrite(good, 1, (size_t)(nl - good + 1), f);
	fputs("1,2,3\n", f);
	fclose(f);
	free(good);
	ck_assert_int_eq(prof_read(&p, "/tmp/kvsim_bad_mlp.csv", err, sizeof err), -1);
	ck_assert_msg(strstr(err, "/tmp/kvsim_bad_mlp.csv:2: 3 fields") != NULL, "%s", err);
	ck_assert_int_eq(prof_read(&p, "/nonexistent/mlp.csv", err, sizeof err), -1);
}
END_TEST

/* The catalog's roofline and all-reduce values are what `kvsim calibrate`
 * fits from the data (deterministic), to the printed precision. */
START_TEST(calibration_reproduces_the_catalog)
{
	struct catalog cat;
	char err[1024];
	ck_assert_int_eq(catalog_load_builtin(&cat, err, sizeof err), 0);
	const char *gpus[] = {"A100-80G", "H100-SXM"};
	for (int k = 0; k < 2; k++) {
		const struct cat_gpu *g = catalog_gpu(&cat, gpus[k]);
		struct cal_point *pts;
		size_t n;
		char **names;
		int n_names;
		ck_assert_msg(cal_load_gpu(PROFILES, g->profile, &pts, &n, &names, &n_names, err,
					   sizeof err) == 0,
			      "%s", err);
		struct roof_params rp;
		ck_assert_int_eq(cal_fit(pts, n, g->bf16_flops, g->hbm_bytes_per_s, &rp, err, sizeof err),
				 0);
		ck_assert_double_eq_tol(rp.mfu, g->mfu, 6e-5);
		ck_assert_double_eq_tol(rp.mbu, g->mbu, 6e-5);
		ck_assert_double_eq_tol(rp.knee, g->knee, 6e-5);
		ck_assert_double_eq_tol(rp.op_overhead_s * 1e6, g->op_overhead_us, 6e-4);
		/* Targets: overall MAPE per model and TP within 10% (TP 1, 2) and
		 * 15% (TP 4, 8). */
		for (int m = 0; m < n_names; m++) {
			for (int tp = 1; tp <= 8; tp *= 2) {
				struct cal_errors e;
				cal_errors_of(&rp, g->bf16_flops, g->hbm_bytes_per_s, pts, n, m, tp, &e);
				ck_assert_int_gt(e.n, 0);
				ck_assert_msg(e.mape <= (tp <= 2 ? 0.10 : 0.15), "%s tp %d: MAPE %.3f",
					      names[m], tp, e.mape);
			}
			free(names[m]);
		}
		free(names);
		free(pts);
		for (int tp = 2; tp <= 8; tp *= 2) {
			char csv[256];
			snprintf(csv, sizeof csv, PROFILES "/network/%s_dgx/all_reduce.csv", g->profile);
			double a, b, mape;
			int rows;
			ck_assert_int_eq(cal_collective(csv, tp, 1048576, &a, &b, &mape, &rows, err,
							sizeof err),
					 0);
			ck_assert_double_eq_tol(a * 1e6, g->ar_alpha_s[tp] * 1e6, 6e-4);
			ck_assert_double_eq_tol(b, g->ar_beta_s_per_byte[tp], g->ar_beta_s_per_byte[tp] * 1e-4);
			ck_assert_double_le(mape, 0.15);
		}
	}
	catalog_free(&cat);
}
END_TEST

/* tests/data/attention_small.csv: synthetic rows (Llama-3-8B's shape,
 * times in ms). TP 1 decode lines: KV 1000 (batch 1: 0.010, 3: 0.030),
 * KV 3000 (1: 0.020, 2: 0.040, 4: 0.060); prefill lines: chunk 100 (KV 0:
 * 0.05, 1000: 0.15), chunk 200 (KV 0: 0.10 and 0.12, averaged; 1000: 0.30);
 * TP 2: one decode row (batch 2 over 1000: 0.008). */
START_TEST(attention_table_interpolates_by_hand)
{
	struct attn_rows a;
	struct attn_table t;
	char err[1024];
	ck_assert_msg(attn_rows_read(&a, "tests/data/attention_small.csv", err, sizeof err) == 0, "%s",
		      err);
	ck_assert_uint_eq(a.n, 11);
	ck_assert_int_eq(a.q_heads, 32);
	ck_assert_int_eq(a.kv_heads, 8);
	ck_assert_int_eq(a.backend, ATTN_FLASHINFER);
	ck_assert_int_eq(attn_table_build(&t, &a, 0, (size_t)-1), 0);
	ck_assert_int_eq(t.tp, 1);
	ck_assert_uint_eq(t.n_dec, 2);
	ck_assert_uint_eq(t.n_pre, 2);
	double d;
	/* decode: exact at a point; along a line, linear in batch */
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 1, 1000, NULL), 0.010e-3, 1e-15);
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 2, 1000, NULL), 0.020e-3, 1e-15);
	/* between KV lines, linear in kv: halfway from 0.010 to 0.020; the
	 * derivative in kv is 0.010 ms over 2,000 tokens */
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 1, 2000, &d), 0.015e-3, 1e-15);
	ck_assert_double_eq_tol(d, 0.010e-3 / 2000, 1e-18);
	/* batch 4 lies past the KV-1000 line (1-3): its chord (0.010 per
	 * request) extended gives 0.040; KV 3000 measured 0.060 there */
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 4, 2000, NULL), 0.050e-3, 1e-15);
	/* past the longest line, the two longest extended: 0.020 + 0.005 per
	 * 1,000 tokens; below the shortest, held flat */
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 1, 5000, NULL), 0.030e-3, 1e-15);
	ck_assert_double_eq_tol(attn_table_decode_s(&t, 1, 500, NULL), 0.010e-3, 1e-15);
	/* within: only where measured lines surround the query */
	ck_assert(isnan(attn_table_decode_within(&t, 4, 2000, NULL)));
	ck_assert_double_eq_tol(attn_table_decode_within(&t, 2, 2000, NULL), 0.030e-3, 1e-15);
	/* prefill: the repeat averaged (0.11); along a line linear in kv;
	 * between chunk lines linear in the work chunk x (kv + chunk / 2):
	 * 150 x 75 = 11,250 lies 6,250 / 15,000 of the way from 100 x 50 to
	 * 200 x 100, so 0.05 + 0.06 x 5 / 12 = 0.075 */
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 200, 0), 0.11e-3, 1e-15);
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 100, 500), 0.10e-3, 1e-15);
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 150, 0), 0.075e-3, 1e-15);
	/* past the largest chunk, the two largest extended in the work:
	 * 0.11 + (400 x 200 - 20,000) x 0.06 / 15,000 = 0.35; past a line's
	 * KV range, its chord extended: 0.05 + 2,000 x 0.1 / 1,000 */
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 400, 0), 0.35e-3, 1e-15);
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 100, 2000), 0.25e-3, 1e-15);
	attn_table_free(&t);
	/* one row left out (chunk 100 at KV 1000): that line holds one point */
	size_t skip = 6;
	ck_assert_double_eq(a.r[skip].chunk, 100);
	ck_assert_int_eq(attn_table_build(&t, &a, 0, skip), 0);
	ck_assert_double_eq_tol(attn_table_prefill_s(&t, 100, 1000), 0.05e-3, 1e-15);
	attn_table_free(&t);
	/* the TP 2 rows: decode only */
	ck_assert_int_eq(attn_table_build(&t, &a, 2, (size_t)-1), 0);
	ck_assert_double_eq_tol(attn_table_decode_within(&t, 2, 1000, NULL), 0.008e-3, 1e-15);
	ck_assert(isnan(attn_table_prefill_within(&t, 100, 0)));
	attn_table_free(&t);
	ck_assert_int_eq(attn_table_build(&t, &a, 4, (size_t)-1), -1);
	attn_rows_free(&a);

	/* Bad input names FILE:LINE and what was expected. */
	char *good = th_slurp("tests/data/attention_small.csv");
	char *nl = strchr(good, '\n');
	static const struct {
		const char *row, *msg;
	} bad[] = {
	    {",0.01,1,0,1000,Maybe,1,32,8,4096,AttentionBackend.FLASHINFER\n",
	     ":2: is_prefill: expected True or False, got \"Maybe\""},
	    {",x,1,0,1000,False,1,32,8,4096,AttentionBackend.FLASHINFER\n",
	     ":2: time_stats.attn_decode.median: expected a number >= 0, got \"x\""},
	    {",0.01,1,0,1000,False,1,32,8,4096,AttentionBackend.XFORMERS\n",
	     ":2: attention_backend: expected AttentionBackend.FLASHINFER or"},
	    {",0.01,0,0,1000,False,1,32,8,4096,AttentionBackend.FLASHINFER\n",
	     ":2: expected a time above 0"},
	    {"1,2\n", ":2: 2 fields, expected 11"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		FILE *f = fopen("/tmp/kvsim_check_bad_attention.csv", "w");
		fwrite(good, 1, (size_t)(nl - good + 1), f);
		fputs(bad[i].row, f);
		fclose(f);
		ck_assert_int_eq(attn_rows_read(&a, "/tmp/kvsim_check_bad_attention.csv", err, sizeof err),
				 -1);
		ck_assert_msg(strstr(err, bad[i].msg) != NULL, "%s", err);
	}
	/* a second model in the same file */
	FILE *f = fopen("/tmp/kvsim_check_bad_attention.csv", "w");
	fputs(good, f);
	fputs(",0.01,1,0,1000,False,1,32,32,4096,AttentionBackend.FLASHINFER\n", f);
	fclose(f);
	ck_assert_int_eq(attn_rows_read(&a, "/tmp/kvsim_check_bad_attention.csv", err, sizeof err), -1);
	ck_assert_msg(strstr(err, ":13: expected one model and backend per file") != NULL, "%s", err);
	f = fopen("/tmp/kvsim_check_bad_attention.csv", "w");
	fputs("batch_size,kv_cache_size\n1,2\n", f);
	fclose(f);
	ck_assert_int_eq(attn_rows_read(&a, "/tmp/kvsim_check_bad_attention.csv", err, sizeof err), -1);
	ck_assert_msg(strstr(err, ":1: no column \"time_stats.attn_prefill.median\"") != NULL, "%s",
		      err);
	free(good);
}
END_TEST

/* The catalog's attention fits, engine overhead and FP8 efficiencies are
 * what `kvsim calibrate` fits (deterministic), to the printed precision,
 * and meet VALIDATION.md's targets: attention MAPE within 20% for every
 * table, kind and TP degree. */
START_TEST(timing_calibration_reproduces_the_catalog)
{
	struct catalog cat;
	char err[1024];
	ck_assert_int_eq(catalog_load_builtin(&cat, err, sizeof err), 0);
	const struct cat_gpu *g = catalog_gpu(&cat, "A100-80G");
	struct cal_attn_set set;
	ck_assert_msg(cal_attn_load_gpu(PROFILES, g->profile, &set, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(set.n, 2);
	for (int b = 0; b < ATTN_BACKENDS; b++) {
		struct attn_fit f;
		const struct attn_fit *c = &g->attn[b];
		ck_assert_msg(cal_attn_fit(&set, (enum attn_backend)b, g->bf16_flops, g->hbm_bytes_per_s,
					   &f, err, sizeof err) == 0,
			      "%s", err);
		ck_assert(g->has_attn[b]);
		ck_assert_double_eq_tol(f.pre_fixed_s * 1e6, c->pre_fixed_s * 1e6, 6e-4);
		ck_assert_double_eq_tol(f.efficiency, c->efficiency, 6e-5);
		ck_assert_double_eq_tol(f.causal, c->causal, 6e-5);
		ck_assert_double_eq_tol(f.rows_half, c->rows_half, 0.06);
		ck_assert_double_eq_tol(f.context_half, c->context_half, 0.06);
		ck_assert_double_eq_tol(f.dec_fixed_s * 1e6, c->dec_fixed_s * 1e6, 6e-4);
		ck_assert_double_eq_tol(f.per_head_s * 1e6, c->per_head_s * 1e6, 6e-6);
		ck_assert_double_eq_tol(f.bandwidth, c->bandwidth, 6e-5);
		ck_assert_str_eq(f.profile, c->profile);
		for (int i = 0; i < set.n; i++) {
			if (set.files[i].backend != (enum attn_backend)b)
				continue;
			for (int tp = 1; tp <= 8; tp++)
				for (int pre = 0; pre < 2; pre++) {
					struct cal_attn_err e;
					cal_attn_errors(c, &set.files[i], pre, tp, g->bf16_flops,
							g->hbm_bytes_per_s, &e);
					ck_assert_msg(e.n == 0 || e.mape <= 0.20, "%s tp %d %s: %.3f",
						      set.names[i], tp, pre ? "prefill" : "decode", e.mape);
				}
		}
	}
	cal_attn_set_free(&set);
	double base, per;
	pub_fit_overhead(&base, &per);
	ck_assert(g->has_overhead);
	ck_assert_double_eq_tol(base, g->overhead_base_ms, 6e-5);
	ck_assert_double_eq_tol(per, g->overhead_per_seq_ms, 6e-6);
	const struct cat_gpu *h = catalog_gpu(&cat, "H100-SXM");
	double mfu, mbu, rms;
	ck_assert_msg(pub_fit_fp8(h->name, &mfu, &mbu, &rms, err, sizeof err) == 0, "%s", err);
	ck_assert_double_eq_tol(mfu, h->fp8_mfu, 6e-5);
	ck_assert_double_eq_tol(mbu, h->fp8_mbu, 6e-5);
	catalog_free(&cat);
	/* every published FP8 row, fitted or held out, within 15% */
	for (size_t i = 0; i < pub_ttft_n; i++) {
		double ms;
		ck_assert_int_eq(pub_ttft_ms(&pub_ttft_rows[i], &ms, err, sizeof err), 0);
		ck_assert_msg(fabs(ms / pub_ttft_rows[i].ms - 1) <= 0.15, "%s %s %d: %.2f ms vs %.0f",
			      pub_ttft_rows[i].gpu, pub_ttft_rows[i].model, pub_ttft_rows[i].tokens, ms,
			      pub_ttft_rows[i].ms);
	}
}
END_TEST

static double ttft_ms(const char *gpu, const char *model, const char *dtype, int tp, int tokens)
{
	char g[80], m[80], d[80], t[80];
	snprintf(g, sizeof g, "cluster.gpu=%s", gpu);
	snprintf(m, sizeof m, "cluster.model=%s", model);
	snprintf(d, sizeof d, "cluster.dtype=%s", dtype);
	snprintf(t, sizeof t, "cluster.tp=%d", tp);
	const char *sets[] = {g, m, d, t, "cluster.engine.activation_reserve_gib=0",
			      "cluster.engine.gpu_memory_utilization=1", NULL};
	struct scenario s;
	th_scenario("{}", sets, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, tokens, 0);
	double ms = cost_iteration_s(&cm, &b) * 1e3;
	cfg_scenario_free(&s);
	return ms;
}

/* VALIDATION.md's table (b), FP16 rows: within 15% of TensorRT-LLM. */
START_TEST(batch1_ttft_matches_tensorrt_llm)
{
	ck_assert_double_le(fabs(ttft_ms("A100-80G", "Llama-2-7B", "bf16", 1, 128) / 16 - 1), 0.15);
	ck_assert_double_le(fabs(ttft_ms("A100-80G", "Llama-2-7B", "bf16", 1, 2048) / 133 - 1), 0.15);
	ck_assert_double_le(fabs(ttft_ms("A100-80G", "Llama-2-70B", "bf16", 4, 128) / 47 - 1), 0.15);
	ck_assert_double_le(fabs(ttft_ms("A100-80G", "Llama-2-70B", "bf16", 4, 2048) / 377 - 1),
			    0.15);
}
END_TEST

/* The profile cost model: layers x measured layer time + emb, plus
 * layers x the measured attention (Llama-2-7b's own table on A100), plus
 * the engine's overhead. */
START_TEST(profile_cost_model_uses_the_measurements)
{
	const char *sets[] = {"cluster.gpu=A100-80G", "cluster.model=Llama-2-7B",
			      "cluster.cost_model.kind=profile", "cluster.engine.version=vllm-0.6",
			      NULL};
	struct scenario s;
	th_scenario("{}", sets, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	ck_assert_ptr_nonnull(cm.prof);
	ck_assert_ptr_nonnull(cm.attn_table);
	ck_assert_ptr_null(cm.attn_table_tp); /* TP 1 is the table's own */
	ck_assert_int_eq(cm.table_scaled, 0);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 128, 0);
	cost_add_decode(&b, 1000);
	cost_add_decode(&b, 3000);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	double layer = prof_interp(cm.prof, PROF_LAYER, 130), emb = prof_interp(cm.prof, PROF_EMB, 130);
	ck_assert_double_eq_tol(p.combined_s, 32 * layer + emb, 1e-15);
	/* two decodes at their mean context (Vidur's aggregation) */
	double attn = attn_table_prefill_s(cm.attn_table, 128, 0) +
		      attn_table_decode_s(cm.attn_table, 2, 2000, NULL);
	ck_assert_double_eq_tol(p.attention_s, 32 * attn, 1e-15);
	ck_assert_double_eq_tol(p.overhead_s, 1.2355e-3 + 3 * 0.03599e-3, 1e-15);
	ck_assert_double_eq_tol(p.total_s, p.combined_s + p.attention_s + p.overhead_s, 1e-15);
	cfg_scenario_free(&s);
	/* At TP 2 the file's TP 2 rows where they surround the batch (a decode
	 * measured at batch 2 over 1,664 tokens: 0.026 ms), else the TP 1
	 * table scaled by the fit's ratio of the two shapes. */
	const char *tp2[] = {"cluster.gpu=A100-80G", "cluster.model=Llama-2-7B", "cluster.tp=2",
			     "cluster.cost_model.kind=profile", NULL};
	th_scenario("{}", tp2, &s);
	cost_init(&cm, &s.cluster, s.weight_bytes);
	ck_assert_ptr_nonnull(cm.attn_table_tp);
	ck_assert_int_eq(cm.table_scaled, 1);
	cost_batch_clear(&b);
	cost_add_decode(&b, 1664);
	cost_add_decode(&b, 1664);
	cost_parts(&cm, &b, &p);
	ck_assert_double_eq_tol(p.attention_s, 32 * 0.026e-3, 1e-12);
	cost_batch_clear(&b);
	cost_add_prefill(&b, 512, 0);
	cost_parts(&cm, &b, &p);
	struct attn_shape one = cm.table_shape;
	double f2 = attn_fit_prefill_s(&cm.table_fit, &cm.shape, 512, 0, 512.0 * 512, 512);
	double f1 = attn_fit_prefill_s(&cm.table_fit, &one, 512, 0, 512.0 * 512, 512);
	ck_assert_double_eq_tol(p.attention_s,
				32 * attn_table_prefill_s(cm.attn_table, 512, 0) * f2 / f1, 1e-15);
	ck_assert_double_lt(f2, f1); /* half the heads per GPU: faster */
	cfg_scenario_free(&s);
	/* A model without attention rows of its own (Llama-3-70B): the table
	 * its backend's fit was made from (Llama-3-8B, FlashInfer), scaled to
	 * its heads per GPU; on H100 (no attention rows) the fit itself. */
	const char *l70[] = {"cluster.gpu=A100-80G", "cluster.model=Llama-3-70B", "cluster.tp=4",
			     "cluster.cost_model.kind=profile", NULL};
	th_scenario("{}", l70, &s);
	cost_init(&cm, &s.cluster, s.weight_bytes);
	ck_assert_ptr_nonnull(cm.attn_table);
	ck_assert_ptr_null(cm.attn_table_tp);
	ck_assert_int_eq(cm.table_scaled, 1);
	ck_assert_double_eq(cm.table_shape.q_heads, 32);
	ck_assert_double_eq(cm.shape.q_heads, 16);
	cfg_scenario_free(&s);
	const char *h100[] = {"cluster.gpu=H100-SXM", "cluster.model=Llama-2-7B",
			      "cluster.cost_model.kind=profile", NULL};
	th_scenario("{}", h100, &s);
	cost_init(&cm, &s.cluster, s.weight_bytes);
	ck_assert_ptr_null(cm.attn_table);
	cfg_scenario_free(&s);
	/* A model without profiles is refused with a message. */
	const char *no[] = {"cluster.model=Qwen2.5-7B", "cluster.cost_model.kind=profile", NULL};
	char err[1024];
	cJSON *root = NULL;
	ck_assert_int_eq(cfg_read_json(NULL, &root, err, sizeof err), 0);
	for (int i = 0; no[i]; i++)
		ck_assert_int_eq(cfg_apply_set(root, no[i], err, sizeof err), 0);
	ck_assert_int_eq(cfg_scenario_load(&s, root, NULL, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "needs Vidur profiles of Qwen2.5-7B") != NULL, "%s", err);
	cJSON_Delete(root);
}
END_TEST

Suite *fidelity_suite(void)
{
	Suite *s = suite_create("fidelity");
	TCase *tc = tcase_create("fidelity");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, profile_reader_and_interpolation);
	tcase_add_test(tc, calibration_reproduces_the_catalog);
	tcase_add_test(tc, batch1_ttft_matches_tensorrt_llm);
	tcase_add_test(tc, profile_cost_model_uses_the_measurements);
	tcase_add_test(tc, attention_table_interpolates_by_hand);
	tcase_add_test(tc, timing_calibration_reproduces_the_catalog);
	suite_add_tcase(s, tc);
	return s;
}
