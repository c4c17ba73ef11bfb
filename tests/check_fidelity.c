/* check_fidelity: the profile reader, interpolation, calibration and a fast
 * subset of VALIDATION.md's targets. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/calibrate.h"
#include "sim/catalog.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/profile.h"
#include "tests/helpers.h"
#include "tests/suites.h"

#define PROFILES "../shared/profiles/vidur"

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

/* The profile cost model: layers x measured layer time + emb + attention
 * and KV from the roofline + the engine overhead. */
START_TEST(profile_cost_model_uses_the_measurements)
{
	const char *sets[] = {"cluster.gpu=A100-80G", "cluster.model=Llama-2-7B",
			      "cluster.cost_model.kind=profile", NULL};
	struct scenario s;
	th_scenario("{}", sets, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	ck_assert_ptr_nonnull(cm.prof);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 128, 0);
	struct cost_parts p;
	cost_parts(&cm, &b, &p);
	double layer = prof_interp(cm.prof, PROF_LAYER, 128), emb = prof_interp(cm.prof, PROF_EMB, 128);
	double attn = fmax(p.compute_s, p.memory_s); /* bounds the smooth max from below */
	ck_assert_double_ge(p.combined_s, 32 * layer + emb + attn);
	ck_assert_double_le(p.combined_s, 32 * layer + emb + 2 * attn);
	ck_assert_double_eq(p.total_s, p.combined_s + p.overhead_s);
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
	suite_add_tcase(s, tc);
	return s;
}
