/* fits: `kvsim calibrate`: the catalog's fits to measured operator profiles and published figures, printed. */
#include "experiments/fits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/calibrate.h"
#include "model/catalog.h"
#include "model/published.h"

/* Exit codes, as the command line's (docs/design.md, section 7). */
enum { EXIT_OK = 0, EXIT_BAD = 2, EXIT_INTERNAL = 3 };

/* The fit's error by model and tensor-parallel degree. */
static void print_fit_errors(const struct cat_gpu *gp, const struct roof_params *rp,
			     const struct cal_point *pts, size_t n, char **names, int n_names)
{
	printf("  %-40s %4s %8s %8s %12s\n", "model", "tp", "MAPE", "worst", "64-256 tok");
	for (int m = 0; m < n_names; m++) {
		for (int tp = 1; tp <= 8; tp *= 2) {
			struct cal_errors e;
			cal_errors_of(rp, gp->bf16_flops, gp->hbm_bytes_per_s, pts, n, m, tp, &e);
			if (e.n)
				printf("  %-40s %4d %7.1f%% %7.1f%% %11.1f%%\n", names[m], tp,
				       100 * e.mape, 100 * e.worst, 100 * e.band[1]);
		}
	}
}

/* Fits the roofline to one profile folder's linear operators; an exit code
 * (reported). */
static int fit_roofline(const char *dir, const struct cat_gpu *gp, int json, int *first)
{
	struct cal_point *pts;
	size_t n;
	char **names, err[2048];
	int n_names, rc = EXIT_OK;
	if (cal_load_gpu(dir, gp->profile, &pts, &n, &names, &n_names, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return EXIT_BAD;
	}
	struct roof_params rp;
	if (cal_fit(pts, n, gp->bf16_flops, gp->hbm_bytes_per_s, &rp, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s: %s\n", gp->profile, err);
		rc = EXIT_INTERNAL;
	} else if (json) {
		printf("%s\"%s\":{\"mfu\":%.4f,\"mbu\":%.4f,\"knee\":%.4f,\"op_overhead_us\":%.3f}",
		       *first ? "" : ",", gp->profile, rp.mfu, rp.mbu, rp.knee,
		       rp.op_overhead_s * 1e6);
		*first = 0;
	} else {
		printf("%s (%s: %.4g FLOP/s bf16, %.4g B/s): %zu points from %d models\n",
		       gp->profile, gp->name, gp->bf16_flops, gp->hbm_bytes_per_s, n, n_names);
		printf("  \"roofline\": {\"mfu\": %.4f, \"mbu\": %.4f, \"knee\": %.4f, "
		       "\"op_overhead_us\": %.3f}\n",
		       rp.mfu, rp.mbu, rp.knee, rp.op_overhead_s * 1e6);
		print_fit_errors(gp, &rp, pts, n, names, n_names);
	}
	for (int m = 0; m < n_names; m++)
		free(names[m]);
	free(names);
	free(pts);
	return rc;
}

/* Intra-server all-reduce: a line per group size, unless fit_rc says the
 * roofline fit failed; an exit code (reported). */
static int fit_allreduce(const char *dir, const struct cat_gpu *gp, int json, int fit_rc)
{
	char csv[4096], err[2048];
	snprintf(csv, sizeof csv, "%s/network/%s_dgx/all_reduce.csv", dir, gp->profile);
	if (json)
		printf(",\"%s_allreduce\":{", gp->profile);
	else
		printf("  \"allreduce\" (from %s, tp: [latency_us, us_per_MiB]):\n", csv);
	int rc = fit_rc;
	for (int tp = 2, k = 0; tp <= 8 && !rc; tp *= 2, k++) {
		double a, b, mape;
		int rows;
		if (cal_collective(csv, tp, 1048576, &a, &b, &mape, &rows, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s\n", err);
			rc = EXIT_BAD;
			break;
		}
		if (json)
			printf("%s\"%d\":[%.3f,%.3f]", k ? "," : "", tp, a * 1e6, b * 1e6 * 1048576);
		else
			printf("    \"%d\": [%.3f, %.3f]   MAPE %.1f%% over %d messages >= 1 MiB\n", tp,
			       a * 1e6, b * 1e6 * 1048576, 100 * mape, rows);
	}
	if (json)
		printf("}");
	return rc;
}

/* Attention per backend, on the attention tables of the GPU's profile
 * folder (none: nothing printed); an exit code (reported). */
static int fit_attention(const char *dir, const struct cat_gpu *gp, int json)
{
	struct cal_attn_set set;
	char err[2048];
	if (cal_attn_load_gpu(dir, gp->profile, &set, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return EXIT_BAD;
	}
	int rc = EXIT_OK, k = 0;
	if (json && set.n)
		printf(",\"%s_attention\":{", gp->profile);
	for (int b = 0; b < ATTN_BACKENDS && !rc; b++) {
		int have = 0;
		for (int i = 0; i < set.n; i++)
			have |= set.files[i].backend == (enum attn_backend)b;
		if (!have)
			continue;
		struct attn_fit f;
		if (cal_attn_fit(&set, (enum attn_backend)b, gp->bf16_flops, gp->hbm_bytes_per_s, &f, err,
				 sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s attention (%s): %s\n", gp->profile,
				attn_backend_names[b], err);
			rc = EXIT_INTERNAL;
			break;
		}
		if (json) {
			printf("%s\"%s\":{\"prefill\":{\"fixed_us\":%.3f,\"efficiency\":%.4f,"
			       "\"causal\":%.4f,\"rows_half\":%.1f,\"context_half\":%.1f},\"decode\":{"
			       "\"fixed_us\":%.3f,\"per_head_us\":%.5f,\"bandwidth\":%.4f},\"profile\":\"%s\"}",
			       k++ ? "," : "", attn_backend_names[b], f.pre_fixed_s * 1e6, f.efficiency,
			       f.causal, f.rows_half, f.context_half, f.dec_fixed_s * 1e6,
			       f.per_head_s * 1e6, f.bandwidth, f.profile);
			continue;
		}
		printf("  \"attention\" %s:\n    \"prefill\": {\"fixed_us\": %.3f, \"efficiency\": %.4f, "
		       "\"causal\": %.4f, \"rows_half\": %.1f, \"context_half\": %.1f}\n    \"decode\": "
		       "{\"fixed_us\": %.3f, \"per_head_us\": %.5f, \"bandwidth\": %.4f}\n",
		       attn_backend_names[b], f.pre_fixed_s * 1e6, f.efficiency, f.causal, f.rows_half,
		       f.context_half, f.dec_fixed_s * 1e6, f.per_head_s * 1e6, f.bandwidth);
		printf("    %-32s %4s %8s %8s %6s\n", "table", "tp", "kind", "MAPE", "worst");
		for (int i = 0; i < set.n; i++) {
			if (set.files[i].backend != (enum attn_backend)b)
				continue;
			for (int tp = 1; tp <= 8; tp++)
				for (int pre = 1; pre >= 0; pre--) {
					struct cal_attn_err e;
					cal_attn_errors(&f, &set.files[i], pre, tp, gp->bf16_flops,
							gp->hbm_bytes_per_s, &e);
					if (e.n)
						printf("    %-32s %4d %8s %7.1f%% %7.1f%%\n", set.names[i], tp,
						       pre ? "prefill" : "decode", 100 * e.mape, 100 * e.worst);
				}
		}
	}
	if (json && set.n)
		printf("}");
	cal_attn_set_free(&set);
	return rc;
}

/* The engine overhead line (Vidur's CPU medians, copied in
 * model/published.c) and the FP8 efficiencies of each GPU with published
 * FP8 rows; an exit code (reported). */
static int fit_published(const struct catalog *cat, int json)
{
	double base, per;
	pub_fit_overhead(&base, &per);
	if (json)
		printf(",\"iteration_overhead\":{\"base_ms\":%.4f,\"per_seq_ms\":%.5f}", base, per);
	else
		printf("engine overhead (Vidur's CPU medians, vLLM on A100; model/published.c):\n"
		       "  \"iteration_overhead\": {\"base_ms\": %.4f, \"per_seq_ms\": %.5f}\n",
		       base, per);
	for (size_t g = 0; g < cat->n_gpus; g++) {
		const char *name = cat->gpus[g].name;
		int rows = 0;
		for (size_t i = 0; i < pub_ttft_n; i++)
			rows += pub_ttft_rows[i].fit && !strcmp(pub_ttft_rows[i].gpu, name);
		if (!rows)
			continue;
		double mfu, mbu, rms;
		char err[2048];
		if (pub_fit_fp8(name, &mfu, &mbu, &rms, err, sizeof err)) {
			fprintf(stderr, "kvsim calibrate: %s\n", err);
			return EXIT_INTERNAL;
		}
		if (json)
			printf(",\"%s_fp8\":{\"mfu\":%.4f,\"mbu\":%.4f}", name, mfu, mbu);
		else
			printf("%s FP8 (TensorRT-LLM's published first-token latencies, %d rows fitted):\n"
			       "  \"fp8\": {\"mfu\": %.4f, \"mbu\": %.4f}   RMS error %.1f%%\n",
			       name, rows, mfu, mbu, 100 * rms);
	}
	return EXIT_OK;
}

int fits_report(const char *dir, const char *only, int json)
{
	struct catalog cat;
	char err[2048];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim calibrate: %s\n", err);
		return EXIT_INTERNAL;
	}
	int rc = EXIT_OK, first = 1, fitted = 0;
	if (json)
		printf("{");
	for (size_t g = 0; g < cat.n_gpus && !rc; g++) {
		const struct cat_gpu *gp = &cat.gpus[g];
		if (!gp->profile[0] || (only && strcmp(only, gp->profile)))
			continue;
		/* One fit per profile folder: the first GPU naming it. */
		int seen = 0;
		for (size_t h = 0; h < g; h++)
			seen |= !strcmp(cat.gpus[h].profile, gp->profile);
		if (seen)
			continue;
		rc = fit_roofline(dir, gp, json, &first);
		if (rc == EXIT_BAD)
			break;
		rc = fit_allreduce(dir, gp, json, rc);
		if (!rc)
			rc = fit_attention(dir, gp, json);
		fitted++;
	}
	if (!rc && fitted && !only)
		rc = fit_published(&cat, json);
	if (json)
		printf("}\n");
	if (!rc && fitted == 0) {
		fprintf(stderr, "kvsim calibrate: no GPU in the catalog names a profile%s%s\n",
			only ? " called " : "", only ? only : "");
		rc = EXIT_BAD;
	}
	catalog_free(&cat);
	return rc;
}

