/* published: TensorRT-LLM's batch-1 first-token latencies, kvsim's
 * predictions of them and the FP8 efficiencies fitted on some. */
#include "model/published.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "config/config.h"
#include "model/cost.h"

/* GPT-J 6B (EleutherAI/gpt-j-6b config.json: n_layer 28, n_embd 4096,
 * n_head 16, so head_dim 256, n_positions 2048; 6,053,381,344 parameters
 * per its model card), a model the catalog does not carry. */
const char pub_gptj_json[] = "{\"layers\": 28, \"hidden\": 4096, \"q_heads\": 16, \"kv_heads\": 16, "
			   "\"head_dim\": 256, \"params\": 6.053381344e9, \"max_context\": 2048}";

/* NVIDIA, TensorRT-LLM docs/source/performance.md, "Low Latency" (v0.5
 * data): FP16 on A100, FP8 on H100 (engines built with --enable_fp8
 * --fp8_kv_cache, per the same page). LLaMA 7B and 70B have Llama-2-7B's
 * and Llama-2-70B's shapes. The FP8 efficiencies are fitted on three
 * FP8 rows: LLaMA 7B at 128 and 2,048 tokens and 70B at 128 (where
 * weight reads, fixed costs and all-reduces weigh most); LLaMA 70B at
 * 2,048 tokens (compute-bound, TP 4) and GPT-J 6B (another model, from
 * the same table) are held out. */
const struct pub_ttft pub_ttft_rows[] = {
    {"A100-80G", "Llama-2-7B", "bf16", 1, 128, 16, 0, NULL},
    {"A100-80G", "Llama-2-7B", "bf16", 1, 2048, 133, 0, NULL},
    {"A100-80G", "Llama-2-70B", "bf16", 4, 128, 47, 0, NULL},
    {"A100-80G", "Llama-2-70B", "bf16", 4, 2048, 377, 0, NULL},
    {"H100-SXM", "Llama-2-7B", "fp8", 1, 128, 7, 1, NULL},
    {"H100-SXM", "Llama-2-7B", "fp8", 1, 2048, 36, 1, NULL},
    {"H100-SXM", "Llama-2-70B", "fp8", 4, 128, 26, 1, NULL},
    {"H100-SXM", "Llama-2-70B", "fp8", 4, 2048, 109, 0, NULL},
    {"H100-SXM", "GPT-J-6B", "fp8", 1, 128, 7, 0, pub_gptj_json},
    {"H100-SXM", "GPT-J-6B", "fp8", 1, 2048, 29, 0, pub_gptj_json},
};
const size_t pub_ttft_n = sizeof pub_ttft_rows / sizeof *pub_ttft_rows;

/* Row r's replica and its cost model; the caller frees s. */
static int row_model(const struct pub_ttft *r, struct scenario *s, struct cost_model *cm,
		     char *err, size_t errlen)
{
	cJSON *root = NULL;
	if (cfg_read_json(NULL, &root, err, errlen))
		return -1;
	char sets[7][128];
	snprintf(sets[0], sizeof sets[0], "cluster.gpu=\"%s\"", r->gpu);
	snprintf(sets[1], sizeof sets[1], "cluster.model=\"%s\"", r->model);
	snprintf(sets[2], sizeof sets[2], "cluster.dtype=\"%s\"", r->dtype);
	snprintf(sets[3], sizeof sets[3], "cluster.tp=%d", r->tp);
	/* the whole of HBM for KV: a batch of one never runs short */
	snprintf(sets[4], sizeof sets[4], "cluster.engine.gpu_memory_utilization=1");
	snprintf(sets[5], sizeof sets[5], "cluster.engine.activation_reserve_gib=0");
	/* TensorRT-LLM v0.5 is not vLLM 0.15: its rows keep the engine terms
	 * the FP8 efficiencies were fitted under (every kernel launched, the
	 * CPU's time in series) */
	snprintf(sets[6], sizeof sets[6], "cluster.engine.version=\"vllm-0.6\"");
	int rc = 0;
	for (int i = 0; i < 7 && !rc; i++)
		rc = cfg_apply_set(root, sets[i], err, errlen);
	if (!rc && r->model_json) {
		char set[512];
		snprintf(set, sizeof set, "catalog.models.%s=%s", r->model, r->model_json);
		rc = cfg_apply_set(root, set, err, errlen);
	}
	if (!rc)
		rc = cfg_scenario_load(s, root, NULL, err, errlen);
	cJSON_Delete(root);
	if (rc)
		return -1;
	cost_init(cm, &s->cluster, s->weight_bytes);
	return 0;
}

static double prefill_ms(const struct cost_model *cm, int tokens)
{
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, tokens, 0);
	return cost_iteration_s(cm, &b) * 1e3;
}

int pub_ttft_ms(const struct pub_ttft *r, double *ms, char *err, size_t errlen)
{
	struct scenario s;
	struct cost_model cm;
	if (row_model(r, &s, &cm, err, errlen))
		return -1;
	*ms = prefill_ms(&cm, r->tokens);
	cfg_scenario_free(&s);
	return 0;
}

/* The fit rows' cost models, and their FP8 peak and bandwidth per replica. */
struct fp8_rows {
	const struct pub_ttft *row[8];
	struct cost_model cm[8];
	double peak[8], bw[8];
	size_t n;
};

/* Relative errors of the fit rows at (mfu, mbu) into e. */
static void fp8_errors(struct fp8_rows *f, double mfu, double mbu, double *e)
{
	for (size_t i = 0; i < f->n; i++) {
		f->cm[i].flops_per_s = f->peak[i] * mfu;
		f->cm[i].bytes_per_s = f->bw[i] * mbu;
		e[i] = prefill_ms(&f->cm[i], f->row[i]->tokens) / f->row[i]->ms - 1;
	}
}

/* x = (logit mfu, logit mbu): both kept in (0, 1). */
static double sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

static int fp8_residuals(const gsl_vector *x, void *ctx, gsl_vector *fv)
{
	double e[8];
	fp8_errors(ctx, sigmoid(gsl_vector_get(x, 0)), sigmoid(gsl_vector_get(x, 1)), e);
	for (size_t i = 0; i < fv->size; i++)
		gsl_vector_set(fv, i, e[i]);
	return GSL_SUCCESS;
}

int pub_fit_fp8(const char *gpu, double *mfu, double *mbu, double *rms, char *err, size_t errlen)
{
	struct fp8_rows *f = calloc(1, sizeof *f);
	struct scenario s[8];
	int rc = -1;
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < pub_ttft_n && f->n < 8; i++) {
		const struct pub_ttft *r = &pub_ttft_rows[i];
		if (!r->fit || strcmp(r->gpu, gpu) || strcmp(r->dtype, "fp8"))
			continue;
		if (row_model(r, &s[f->n], &f->cm[f->n], err, errlen))
			goto done;
		const struct cat_gpu *g = s[f->n].cluster.gpu;
		f->row[f->n] = r;
		f->peak[f->n] = r->tp * g->fp8_flops;
		f->bw[f->n] = r->tp * g->hbm_bytes_per_s;
		f->n++;
	}
	if (f->n < 2) {
		snprintf(err, errlen, "%s: %zu published FP8 rows to fit; two efficiencies need two",
			 gpu, f->n);
		goto done;
	}
	/* the grid: the loss need not be convex in (mfu, mbu) */
	double best = INFINITY, bu = 0, bb = 0, e[8];
	for (int i = 1; i <= 20; i++)
		for (int j = 1; j <= 20; j++) {
			fp8_errors(f, i / 20.0, j / 20.0, e);
			double sum = 0;
			for (size_t k = 0; k < f->n; k++)
				sum += e[k] * e[k];
			if (sum < best)
				best = sum, bu = i / 20.0, bb = j / 20.0;
		}
	/* refined within the open interval (a grid point at 1 stays there) */
	gsl_multifit_nlinear_fdf fdf;
	memset(&fdf, 0, sizeof fdf);
	fdf.f = fp8_residuals;
	fdf.n = f->n;
	fdf.p = 2;
	fdf.params = f;
	gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
	    gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, f->n, 2);
	gsl_vector *x = gsl_vector_alloc(2);
	if (w && x && bu < 1 && bb < 1) {
		gsl_vector_set(x, 0, log(bu / (1 - bu)));
		gsl_vector_set(x, 1, log(bb / (1 - bb)));
		gsl_multifit_nlinear_init(x, &fdf, w);
		int info;
		int st = gsl_multifit_nlinear_driver(200, 1e-12, 1e-12, 1e-12, NULL, NULL, &info, w);
		double chisq;
		gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w),
			      &chisq);
		if ((st == GSL_SUCCESS || st == GSL_EMAXITER) && chisq < best) {
			best = chisq;
			bu = sigmoid(gsl_vector_get(gsl_multifit_nlinear_position(w), 0));
			bb = sigmoid(gsl_vector_get(gsl_multifit_nlinear_position(w), 1));
		}
	}
	if (w)
		gsl_multifit_nlinear_free(w);
	gsl_vector_free(x);
	*mfu = bu;
	*mbu = bb;
	*rms = sqrt(best / (double)f->n);
	rc = 0;
done:
	for (size_t i = 0; i < f->n; i++)
		cfg_scenario_free(&s[i]);
	free(f);
	return rc;
}

/* Vidur's CPU-overhead medians (ms; rounded to 0.1 us), columns
 * SCHEDULE_MEDIAN, PREPARE_INPUTS_E2E_MEDIAN and SAMPLER_E2E_MEDIAN:
 * the work on an engine step's critical path. Left out: PROCESS_MODEL_
 * OUTPUTS (detokenization, asynchronous since vLLM 0.6: "vLLM v0.6.0: 2.7x
 * Throughput Improvement and 5x Latency Reduction", vLLM blog, 2024-09-05)
 * and RAY_COMM_TIME (Ray workers; vLLM's single-node engines use
 * multiprocessing). The line is fitted on the TP 1 rows; TP 2 and 4 are
 * held out. */
const struct pub_cpu pub_cpu_rows[] = {
    {"meta-llama/Llama-2-7b-hf", 1, 8, 0.1651, 0.2932, 0.8878, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 16, 0.2783, 0.4391, 0.9446, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 24, 0.3817, 0.5363, 0.9560, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 32, 0.5798, 0.6710, 1.1264, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 40, 0.6169, 0.7922, 1.0757, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 48, 0.7416, 0.9148, 1.1630, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 56, 0.8395, 1.0398, 1.2473, 1},
    {"meta-llama/Llama-2-7b-hf", 1, 64, 0.9522, 1.1630, 1.3703, 1},
    {"codellama/CodeLlama-34b-Instruct-hf", 1, 8, 0.1540, 0.5247, 0.9259, 1},
    {"codellama/CodeLlama-34b-Instruct-hf", 1, 16, 0.2750, 0.9503, 0.9812, 1},
    {"codellama/CodeLlama-34b-Instruct-hf", 1, 24, 0.3810, 1.3113, 1.0587, 1},
    {"codellama/CodeLlama-34b-Instruct-hf", 1, 32, 0.5041, 1.7006, 1.1152, 1},
    {"meta-llama/Llama-2-7b-hf", 2, 8, 0.1785, 0.3810, 1.1560, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 16, 0.3107, 0.4863, 1.2105, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 24, 0.4471, 0.6132, 1.3113, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 32, 0.5112, 0.7040, 1.2853, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 40, 0.7254, 0.8428, 1.6603, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 48, 0.8967, 0.9831, 1.7950, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 56, 1.0233, 1.0909, 1.6972, 0},
    {"meta-llama/Llama-2-7b-hf", 2, 64, 1.1468, 1.2324, 1.7736, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 8, 0.1832, 0.3749, 1.1653, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 16, 0.3151, 0.4912, 1.2674, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 24, 0.4435, 0.5916, 1.3324, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 32, 0.5684, 0.7312, 1.3868, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 40, 0.7269, 0.8825, 1.6736, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 48, 0.9277, 1.0274, 2.0198, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 56, 1.0757, 1.1400, 1.8946, 0},
    {"meta-llama/Llama-2-7b-hf", 4, 64, 1.2251, 1.2956, 1.9601, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 8, 0.1746, 0.6873, 1.1422, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 16, 0.2997, 1.0844, 1.2080, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 24, 0.4070, 1.5174, 1.2982, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 32, 0.5081, 1.9175, 1.2905, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 40, 0.6984, 2.3420, 1.6112, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 48, 1.0439, 2.8835, 1.9060, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 56, 1.1653, 3.2576, 1.7878, 0},
    {"codellama/CodeLlama-34b-Instruct-hf", 2, 64, 1.1889, 3.6877, 1.8645, 0},
};
const size_t pub_cpu_n = sizeof pub_cpu_rows / sizeof *pub_cpu_rows;

void pub_fit_overhead(double *base_ms, double *per_seq_ms)
{
	double x[sizeof pub_cpu_rows / sizeof *pub_cpu_rows], y[sizeof x / sizeof *x],
	    w[sizeof x / sizeof *x];
	size_t n = 0;
	for (size_t i = 0; i < pub_cpu_n; i++) {
		const struct pub_cpu *r = &pub_cpu_rows[i];
		if (!r->fit)
			continue;
		x[n] = r->batch;
		y[n] = r->schedule_ms + r->prepare_ms + r->sample_ms;
		w[n] = 1.0 / (y[n] * y[n]);
		n++;
	}
	double c0, c1, cov00, cov01, cov11, chisq;
	gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
	*base_ms = c0;
	*per_seq_ms = c1;
}
